//! The first phase of a client profile: the waves of commands a client sends for a batch on
//! its own slot map (a multi-key command, a pipeline, or MULTI…EXEC), or its refusal.

use super::profile::{Multi, Pipeline, Precheck};
use super::split::{CROSSSLOT, OpPlan, Sub, command_bytes, control, ioredis_refusal, place};
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
    let profile = client.profile();
    let all_whole = |b: &Batch| -> Vec<Sub> {
        b.ops
            .iter()
            .map(|op| whole(op, op.keys.len() as u64))
            .collect()
    };
    match &profile.pipeline {
        Pipeline::Unsupported(m) => {
            return Err(Refused::new(Outcome::ClientError, (*m).into()));
        }
        Pipeline::PerNode {
            readers,
            split_refusal,
        } => {
            if let Some(op) = multi_slot {
                let m = match split_refusal {
                    Some(w) if profile.split.commands.contains(&op.command.as_str()) => {
                        w.say(&op.command)
                    }
                    _ => profile
                        .refusal
                        .map(|w| w.say(&op.command))
                        .unwrap_or_else(|| format!("{}: {CROSSSLOT}", op.command)),
                };
                return Err(Refused::new(Outcome::ClientError, m));
            }
            // Grouped per node; the nodes are read `readers` at a time, so they are waited
            // for in waves of that many.
            let subs = all_whole(b);
            let mut nodes: Vec<usize> = subs.iter().map(|s| s.node).collect();
            nodes.sort_unstable();
            nodes.dedup();
            for chunk in nodes.chunks(*readers) {
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
        Pipeline::EachOneSlot => {
            if let Some(m) = multi_slot.and_then(|op| profile.refusal.map(|w| w.say(&op.command))) {
                return Err(Refused::new(Outcome::ClientError, m));
            }
            waves.push(all_whole(b));
        }
        Pipeline::Checked(check) => {
            if let Some(m) = precheck(*check, b, topo) {
                return Err(Refused::new(Outcome::ClientError, m.into()));
            }
            waves.push(all_whole(b));
        }
        Pipeline::ServerDecides { illegal, refusal } => {
            if let Some(op) = b.ops.iter().find(|o| illegal.contains(&o.command.as_str())) {
                return Err(Refused::new(Outcome::ClientError, refusal.say(&op.command)));
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
        Pipeline::AsAlone => {
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

/// The refusal of a whole-batch check, if the batch fails it.
fn precheck(check: Precheck, b: &Batch, topo: &Topology) -> Option<&'static str> {
    match check {
        Precheck::SlotsAndOneNode => ioredis_refusal(b, topo),
        Precheck::OneSlot(m) => {
            let mut all: Vec<u16> = b.ops.iter().flat_map(&slots_of).collect();
            all.sort_unstable();
            all.dedup();
            (all.len() > 1).then_some(m)
        }
    }
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
    match &client.profile().multi {
        Multi::NotModelled => {
            return Err(Refused::new(
                Outcome::NotModelled,
                format!(
                    "how {} runs a transaction on a cluster is not modelled",
                    client.name()
                ),
            ));
        }
        Multi::ProxyRefuses(m) => {
            // The proxy answers the MULTI itself: one round trip.
            return Err(Refused {
                one_trip: true,
                ..Refused::new(Outcome::ProxyError, (*m).into())
            });
        }
        Multi::Refused(m) => {
            return Err(Refused::new(Outcome::ClientError, (*m).into()));
        }
        Multi::OneNode(Some(check)) if cross => {
            if let Some(m) = precheck(*check, b, topo) {
                return Err(Refused::new(Outcome::ClientError, m.into()));
            }
        }
        Multi::OneNode(_) => {}
        Multi::PerNode => {
            // Each node's commands wrapped in their own MULTI/EXEC, the nodes in parallel.
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
        Multi::PlainPipeline => {
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
