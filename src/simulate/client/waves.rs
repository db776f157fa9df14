//! The first phase of a client profile: the waves of commands a client sends for a batch on
//! its own slot map (a multi-key command, a pipeline, or MULTI…EXEC), or its refusal.

use super::split::{
    CROSSSLOT, OpPlan, REDIS_RS_PIPELINE_ILLEGAL, Sub, command_bytes, control, ioredis_refusal,
    place,
};
use super::{Client, Outcome, redirect::redirect};
use crate::simulate::{Batch, BatchKind, Op};
use crate::slot::key_slot;
use crate::topology::Topology;
use std::collections::BTreeMap;

/// What a batch is, for a client.
pub(super) struct Cx<'a> {
    /// The batch.
    pub b: &'a Batch,
    /// The slot map the client holds.
    pub topo: &'a Topology,
    /// The cluster as it really is.
    pub actual: &'a Topology,
    /// The client.
    pub client: Client,
    /// How the client sends each command of the batch on its own.
    pub plans: &'a [OpPlan],
}

/// The waves a client sends (each waited for in turn), the errors the batch meets, and a note.
pub(super) struct Built {
    /// Groups of commands sent together.
    pub waves: Vec<Vec<Sub>>,
    /// Errors the application sees, first first.
    pub errors: Vec<(Outcome, String)>,
    /// Something to say that is not an error.
    pub note: Option<String>,
}

/// The client refuses the batch (or cannot be modelled on it).
pub(super) struct Refused {
    /// How.
    pub outcome: Outcome,
    /// The client's or the model's words.
    pub message: String,
    /// One round trip was made first (a proxy answering itself).
    pub one_trip: bool,
}

impl Refused {
    fn new(outcome: Outcome, message: String) -> Refused {
        Refused {
            outcome,
            message,
            one_trip: false,
        }
    }
}

fn slots_of(op: &Op) -> Vec<u16> {
    let mut s: Vec<u16> = op.keys.iter().map(|k| key_slot(k)).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// The node the client sends `op` to whole: its first key's.
fn first_node(op: &Op, topo: &Topology) -> usize {
    op.keys.first().and_then(|k| topo.node_of(k)).unwrap_or(0)
}

/// `op` sent whole to its first key's node, addressing `keys` keys.
fn whole(op: &Op, keys: u64, topo: &Topology) -> Sub {
    Sub {
        node: first_node(op, topo),
        keys,
        bytes: command_bytes(&op.command, &place(op, topo).iter().collect::<Vec<_>>()),
        slot: match slots_of(op).as_slice() {
            [one] => Some(*one),
            _ => None,
        },
        hops: 0,
    }
}
/// The waves `cx.client` sends for `cx.b`.
pub(super) fn build(cx: &Cx<'_>) -> Result<Built, Refused> {
    let mut out = Built {
        waves: Vec::new(),
        errors: Vec::new(),
        note: None,
    };
    match cx.b.kind {
        BatchKind::MultiKey | BatchKind::Script => multi_key(cx, &mut out)?,
        BatchKind::Pipeline => pipeline(cx, &mut out)?,
        BatchKind::Multi => multi(cx, &mut out)?,
    }
    Ok(out)
}

/// One multi-key command or script: sent whole, split as the client splits, or refused.
fn multi_key(cx: &Cx<'_>, out: &mut Built) -> Result<(), Refused> {
    let Built { waves, errors, .. } = out;
    match cx.plans.first() {
        None => {}
        Some(OpPlan::Reject(m)) => return Err(Refused::new(Outcome::ClientError, m.clone())),
        Some(OpPlan::Send { subs, serial }) => {
            if *serial {
                waves.extend(subs.iter().map(|s| vec![s.clone()]));
            } else {
                waves.push(subs.clone());
            }
        }
        Some(OpPlan::ServerError { sub, message }) => {
            waves.push(vec![sub.clone()]);
            errors.push((Outcome::ServerError, message.clone()));
        }
        Some(OpPlan::Wrong { sub, message }) => {
            waves.push(vec![sub.clone()]);
            errors.push((Outcome::WrongServer, message.clone()));
        }
        Some(OpPlan::Unserved(_)) => {}
    }
    Ok(())
}

/// A pipeline: each client checks, groups and sends it its own way.
fn pipeline(cx: &Cx<'_>, out: &mut Built) -> Result<(), Refused> {
    let Cx {
        b,
        topo,
        client,
        plans,
        ..
    } = *cx;
    let whole = |op: &Op, keys: u64| whole(op, keys, topo);
    let Built { waves, errors, .. } = out;
    let multi_slot: Option<&Op> = b.ops.iter().find(|op| slots_of(op).len() > 1);
    match client {
        Client::Jedis3 => {
            return Err(Refused::new(
                Outcome::ClientError,
                "Jedis 3.x has no cluster pipeline".into(),
            ));
        }
        Client::Jedis | Client::Jedis8 => {
            if let Some(op) = multi_slot {
                let m =
                    if client == Client::Jedis8 && client.splits().contains(&op.command.as_str()) {
                        format!(
                            "UnsupportedOperationException: {} cannot be routed to a \
                             single slot in a ClusterPipeline",
                            op.command
                        )
                    } else {
                        "JedisClusterOperationException: Keys must belong to same \
                         hashslot."
                            .into()
                    };
                return Err(Refused::new(Outcome::ClientError, m));
            }
            // Grouped per node; sync() reads the nodes with 3 worker threads, so the
            // nodes are waited for in waves of 3.
            let subs: Vec<Sub> = b
                .ops
                .iter()
                .map(|op| whole(op, op.keys.len() as u64))
                .collect();
            let mut nodes: Vec<usize> = subs.iter().map(|s| s.node).collect();
            nodes.sort_unstable();
            nodes.dedup();
            for chunk in nodes.chunks(3) {
                waves.push(
                    subs.iter()
                        .filter(|s| chunk.contains(&s.node))
                        .cloned()
                        .collect(),
                );
            }
        }
        // Every command of the pipeline must address one slot (checked before sending),
        // then per node (redis-py) or per command (StackExchange IBatch).
        Client::RedisPy | Client::RedisPyNonatomic | Client::StackExchange => {
            if let Some(m) = multi_slot.and_then(|op| client.rejects(&op.command)) {
                return Err(Refused::new(Outcome::ClientError, m));
            }
            waves.push(
                b.ops
                    .iter()
                    .map(|op| whole(op, op.keys.len() as u64))
                    .collect(),
            );
        }
        Client::Ioredis => {
            if let Some(m) = ioredis_refusal(b, topo) {
                return Err(Refused::new(Outcome::ClientError, m.into()));
            }
            waves.push(
                b.ops
                    .iter()
                    .map(|op| whole(op, op.keys.len() as u64))
                    .collect(),
            );
        }
        Client::RedisRs => {
            if let Some(op) = b
                .ops
                .iter()
                .find(|o| REDIS_RS_PIPELINE_ILLEGAL.contains(&o.command.as_str()))
            {
                return Err(Refused::new(
                    Outcome::ClientError,
                    format!(
                        "This command cannot be safely routed in cluster mode - \
                             Client: Command '{}' can't be executed in a cluster pipeline.",
                        op.command
                    ),
                ));
            }
            let mut wave = Vec::new();
            for op in &b.ops {
                if slots_of(op).len() > 1 {
                    wave.push(whole(op, 0));
                    errors.push((Outcome::ServerError, format!("{}: {CROSSSLOT}", op.command)));
                } else {
                    wave.push(whole(op, op.keys.len() as u64));
                }
            }
            waves.push(wave);
        }
        Client::RedisRsAsync => {
            let all: Vec<u16> = {
                let mut s: Vec<u16> = b.ops.iter().flat_map(&slots_of).collect();
                s.sort_unstable();
                s.dedup();
                s
            };
            if all.len() > 1 {
                return Err(Refused::new(
                    Outcome::ClientError,
                    "CrossSlot: Received crossed slots in pipeline".into(),
                ));
            }
            waves.push(
                b.ops
                    .iter()
                    .map(|op| whole(op, op.keys.len() as u64))
                    .collect(),
            );
        }
        // Each command handled as it would be alone (split where the client splits,
        // else routed by its first key), everything in flight at once.
        Client::Lettuce
        | Client::Redisson
        | Client::GoRedis
        | Client::NodeRedis
        | Client::Twemproxy
        | Client::Envoy => {
            let mut wave = Vec::new();
            for plan in plans {
                match plan {
                    OpPlan::Send { subs, .. } => wave.extend(subs.iter().cloned()),
                    OpPlan::ServerError { sub, message } => {
                        wave.push(sub.clone());
                        errors.push((Outcome::ServerError, message.clone()));
                    }
                    OpPlan::Wrong { sub, message } => {
                        wave.push(sub.clone());
                        errors.push((Outcome::WrongServer, message.clone()));
                    }
                    OpPlan::Reject(m) => {
                        return Err(Refused::new(Outcome::ClientError, m.clone()));
                    }
                    OpPlan::Unserved(_) => {}
                }
            }
            waves.push(wave);
        }
    }
    Ok(())
}

/// MULTI…EXEC: one node's transaction, per-node transactions (Redisson), or a refusal.
fn multi(cx: &Cx<'_>, out: &mut Built) -> Result<(), Refused> {
    let Cx {
        b,
        topo,
        actual,
        client,
        ..
    } = *cx;
    let first_node = |op: &Op| first_node(op, topo);
    let whole = |op: &Op, keys: u64| whole(op, keys, topo);
    let Built {
        waves,
        errors,
        note,
    } = out;
    let mut redisson_multi: Option<Vec<Sub>> = None;
    let mut slots: Vec<u16> = b.ops.iter().flat_map(&slots_of).collect();
    slots.sort_unstable();
    slots.dedup();
    let cross = slots.len() > 1;
    match client {
        Client::Jedis3 | Client::Jedis | Client::Jedis8 | Client::Lettuce => {
            return Err(Refused::new(
                Outcome::NotModelled,
                format!(
                    "how {} runs a transaction on a cluster is not modelled",
                    client.name()
                ),
            ));
        }
        Client::Twemproxy => {
            // The proxy answers the MULTI itself: one round trip.
            return Err(Refused {
                one_trip: true,
                ..Refused::new(
                    Outcome::ProxyError,
                    "twemproxy does not support MULTI".into(),
                )
            });
        }
        Client::RedisRs => {
            return Err(Refused::new(
                Outcome::ClientError,
                "atomic pipelines are not supported in cluster mode (redis-rs sync)".into(),
            ));
        }
        Client::StackExchange if cross => {
            let m = client.rejects("MULTI").unwrap_or_default();
            return Err(Refused::new(Outcome::ClientError, m));
        }
        Client::Redisson => {
            // RBatch in an atomic mode: each node's commands wrapped in their own
            // MULTI/EXEC, the nodes in parallel.
            let mut groups: BTreeMap<usize, Vec<&Op>> = BTreeMap::new();
            for op in b.ops.iter().filter(|o| !o.keys.is_empty()) {
                groups.entry(first_node(op)).or_default().push(op);
            }
            let mut wave = Vec::new();
            let mut failed = false;
            for (&node, ops) in &groups {
                let mut slots: Vec<u16> = ops.iter().flat_map(|o| slots_of(o)).collect();
                slots.sort_unstable();
                slots.dedup();
                let ok = slots.len() == 1;
                failed |= !ok;
                wave.push(control(node, &[b"MULTI"]));
                for op in ops {
                    wave.push(Sub {
                        node,
                        keys: if ok { op.keys.len() as u64 } else { 0 },
                        slot: None,
                        ..whole(op, 0)
                    });
                }
                wave.push(control(node, &[b"EXEC"]));
            }
            if failed {
                errors.push((
                    Outcome::ServerError,
                    format!("{CROSSSLOT} inside a node's MULTI; EXEC answers EXECABORT"),
                ));
            } else if groups.len() > 1 {
                *note = Some(format!(
                    "atomic per node only: {} separate MULTI/EXEC",
                    groups.len()
                ));
            }
            redisson_multi = Some(wave);
        }
        Client::RedisPy | Client::RedisPyNonatomic => {
            // The code that sent MULTI on one server calls `pipeline()`, whose default on a
            // RedisCluster (transaction=None) is a plain pipeline: no MULTI, no error, no
            // atomicity (redis-py 8.1 `ClusterPipeline`, verified by running it). With
            // `pipeline(transaction=True)` cross-slot keys raise CrossSlotTransactionError
            // (when WATCH runs, else at execute()).
            pipeline(cx, out)?;
            let with_true = if !cross {
                "pipeline(transaction=True) would run it as one transaction".to_string()
            } else if b.ops.iter().any(|o| o.command == "WATCH") {
                "pipeline(transaction=True) raises CrossSlotTransactionError: Cannot watch or send commands on different slots".to_string()
            } else {
                "pipeline(transaction=True) raises CrossSlotTransactionError: All keys involved in a cluster transaction must map to the same slot".to_string()
            };
            out.errors.push((
                Outcome::NotAtomic,
                format!(
                    "atomicity lost: RedisCluster.pipeline() (transaction=None, the default) sends these commands without MULTI/EXEC, {}, no error; {with_true}",
                    if cross { "split per node" } else { "on one node" }
                ),
            ));
            return Ok(());
        }
        Client::GoRedis if cross => {
            return Err(Refused::new(
                Outcome::ClientError,
                "ErrCrossSlot: TxPipeline keys span several slots (go-redis v9.11+)".into(),
            ));
        }
        Client::RedisRsAsync if cross => {
            return Err(Refused::new(
                Outcome::ClientError,
                "CrossSlot: Received crossed slots in pipeline".into(),
            ));
        }
        Client::Ioredis if cross => {
            if let Some(m) = ioredis_refusal(b, topo) {
                return Err(Refused::new(Outcome::ClientError, m.into()));
            }
        }
        _ => {}
    }
    if let Some(wave) = redisson_multi {
        waves.push(wave);
        return Ok(());
    }
    // MULTI, the commands, EXEC: one node (the first keyed command's), one round trip.
    let node = b
        .ops
        .iter()
        .find(|o| !o.keys.is_empty())
        .map(first_node)
        .unwrap_or(0);
    let first_slot = b
        .ops
        .iter()
        .find_map(|o| o.keys.first())
        .map(|k| key_slot(k));
    let mut wave = vec![control(node, &[b"MULTI"])];
    let mut failed = false;
    for op in &b.ops {
        let ok = op.keys.iter().all(|k| Some(key_slot(k)) == first_slot);
        failed |= !ok;
        wave.push(Sub {
            node,
            keys: if ok { op.keys.len() as u64 } else { 0 },
            slot: None,
            ..whole(op, 0)
        });
        // A stale map or a slot in migration: the transaction meets a redirect.
        for k in &op.keys {
            let hit = topo
                .node_of(k)
                .and_then(|n| redirect(&topo.nodes()[n], actual, key_slot(k)));
            if hit.is_some() {
                return Err(Refused::new(
                    Outcome::NotModelled,
                    "MULTI meets MOVED/ASK: redirects of transactions are not modelled".into(),
                ));
            }
        }
    }
    wave.push(control(node, &[b"EXEC"]));
    if failed {
        for s in wave.iter_mut() {
            s.keys = 0;
        }
        errors.push((
            Outcome::ServerError,
            format!("{CROSSSLOT} (or MOVED) inside MULTI; EXEC answers EXECABORT"),
        ));
    }
    waves.push(wave);
    Ok(())
}
