//! The multi-key phase of a client profile: whether a client splits a command whose keys span
//! several slots (servers), how (per slot, per run, per server, per key), whether it rejects
//! it first, or lets the server answer CROSSSLOT.

use super::Client;
use crate::simulate::{Batch, Op, resp_bytes};
use crate::slot::key_slot;
use crate::topology::Topology;
use std::collections::BTreeMap;

/// How a split command is cut into sub-commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SplitUnit {
    /// One sub-command per slot (first-appearance order).
    Slot,
    /// One per run of consecutive same-slot keys (Jedis 8: slots A,B,A give 3).
    Runs,
    /// One per backend server (twemproxy fragments).
    Server,
    /// One single-key command per key (Envoy: MGET → GET per key).
    Key,
}

/// One command a node receives.
#[derive(Debug, Clone)]
pub(super) struct Sub {
    pub(super) node: usize,
    pub(super) keys: u64,
    pub(super) bytes: u64,
    /// The one slot it addresses (None: several slots, or a command that fails anyway).
    pub(super) slot: Option<u16>,
    /// Redirects it has followed to get here.
    pub(super) hops: u8,
}

/// A keyless command (MULTI, EXEC, ASKING, CLUSTER SLOTS) sent to `node`.
pub(super) fn control(node: usize, args: &[&[u8]]) -> Sub {
    Sub {
        node,
        keys: 0,
        bytes: resp_bytes(args),
        slot: None,
        hops: 0,
    }
}

/// A key with where it lives.
pub(super) struct Placed<'a> {
    pub(super) key: &'a [u8],
    pub(super) value: Option<&'a [u8]>,
    pub(super) slot: u16,
    pub(super) node: Option<usize>,
}

pub(super) fn place<'a>(op: &'a Op, topo: &Topology) -> Vec<Placed<'a>> {
    op.keys
        .iter()
        .enumerate()
        .map(|(i, k)| Placed {
            key: k,
            value: op.values.get(i).map(|v| v.as_slice()),
            slot: key_slot(k),
            node: topo.node_of(k),
        })
        .collect()
}

/// Keys span several slots (cluster) or several servers (ring).
pub(super) fn spans(keys: &[Placed<'_>], topo: &Topology) -> bool {
    let Some(first) = keys.first() else {
        return false;
    };
    match topo {
        Topology::Cluster(_) => keys.iter().any(|k| k.slot != first.slot),
        Topology::Ring(_) => keys.iter().any(|k| k.node != first.node),
    }
}

pub(super) fn command_bytes(command: &str, keys: &[&Placed<'_>]) -> u64 {
    let mut args: Vec<&[u8]> = vec![command.as_bytes()];
    for k in keys {
        args.push(k.key);
        if let Some(v) = k.value {
            args.push(v);
        }
    }
    resp_bytes(&args)
}

/// What happens to one command.
pub(super) enum OpPlan {
    /// The client refuses it (whole batch fails before sending).
    Reject(String),
    /// Sent as these commands; `serial` when the client waits for each in turn.
    Send { subs: Vec<Sub>, serial: bool },
    /// Sent to one node, which answers with an error.
    ServerError { sub: Sub, message: String },
    /// Sent; some keys go to a server that does not own them.
    Wrong { sub: Sub, message: String },
    /// A key lives on a slot nobody serves.
    Unserved(String),
}

pub(super) const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// How `client` sends one command `op` on its own (not in a pipeline).
pub(super) fn plan_op(client: Client, op: &Op, topo: &Topology) -> OpPlan {
    let keys = place(op, topo);
    if keys.iter().any(|k| k.node.is_none()) {
        return OpPlan::Unserved(format!(
            "{}: a key lands on a slot no node serves (CLUSTERDOWN)",
            op.command
        ));
    }
    let node0 = keys.first().and_then(|k| k.node).unwrap_or(0);
    let all: Vec<&Placed<'_>> = keys.iter().collect();
    let whole = Sub {
        node: node0,
        keys: keys.len() as u64,
        bytes: command_bytes(&op.command, &all),
        slot: keys.first().map(|k| k.slot),
        hops: 0,
    };
    if !spans(&keys, topo) {
        return OpPlan::Send {
            subs: vec![whole],
            serial: false,
        };
    }
    let split = &client.profile().split;
    if split.commands.contains(&op.command.as_str()) {
        let mut groups: Vec<Vec<&Placed<'_>>> = Vec::new();
        match split.unit {
            SplitUnit::Slot | SplitUnit::Server => {
                let mut index: BTreeMap<u64, usize> = BTreeMap::new();
                for k in &keys {
                    let id = match split.unit {
                        SplitUnit::Slot => u64::from(k.slot),
                        _ => k.node.unwrap_or(0) as u64,
                    };
                    let g = *index.entry(id).or_insert_with(|| {
                        groups.push(Vec::new());
                        groups.len() - 1
                    });
                    groups[g].push(k);
                }
            }
            SplitUnit::Runs => {
                for k in &keys {
                    match groups.last_mut() {
                        Some(g) if g[0].slot == k.slot => g.push(k),
                        _ => groups.push(vec![k]),
                    }
                }
            }
            SplitUnit::Key => groups = keys.iter().map(|k| vec![k]).collect(),
        }
        let command = if split.unit == SplitUnit::Key {
            op.single_key_command()
        } else {
            op.command.as_str()
        };
        let subs = groups
            .iter()
            .map(|g| Sub {
                node: g[0].node.unwrap_or(0),
                keys: g.len() as u64,
                bytes: command_bytes(command, g),
                slot: (split.unit != SplitUnit::Server).then_some(g[0].slot),
                hops: 0,
            })
            .collect();
        return OpPlan::Send {
            subs,
            serial: split.serial,
        };
    }
    if let Some(refusal) = client.profile().refusal {
        return OpPlan::Reject(refusal.say(&op.command));
    }
    match topo {
        Topology::Cluster(_) => OpPlan::ServerError {
            sub: Sub {
                keys: 0,
                slot: None,
                ..whole
            },
            message: format!("{}: {CROSSSLOT}", op.command),
        },
        Topology::Ring(_) => OpPlan::Wrong {
            sub: whole,
            message: format!(
                "{}: sent whole to the server of its first key; keys owned by other servers \
                 are read or written there anyway",
                op.command
            ),
        },
    }
}

/// Redis-rs's sync cluster pipeline refuses these commands (redis crate 1.8 `is_illegal_cmd`;
/// multi-word entries there are subcommands of these).
pub(super) const REDIS_RS_PIPELINE_ILLEGAL: &[&str] = &[
    "BGREWRITEAOF",
    "BGSAVE",
    "BITOP",
    "BRPOPLPUSH",
    "CLIENT",
    "CONFIG",
    "DBSIZE",
    "ECHO",
    "FLUSHALL",
    "FLUSHDB",
    "INFO",
    "KEYS",
    "LASTSAVE",
    "MGET",
    "MOVE",
    "MSET",
    "MSETNX",
    "MSETEX",
    "PING",
    "PUBLISH",
    "RANDOMKEY",
    "RENAME",
    "RENAMENX",
    "RPOPLPUSH",
    "SAVE",
    "SCAN",
    "SCRIPT",
    "SDIFF",
    "SDIFFSTORE",
    "SENTINEL",
    "SHUTDOWN",
    "SINTER",
    "SINTERSTORE",
    "SLAVEOF",
    "SLOWLOG",
    "SMOVE",
    "SORT",
    "SUNION",
    "SUNIONSTORE",
    "TIME",
];

/// ioredis checks a pipeline (or MULTI) before sending it: every command's keys in one slot,
/// and every command's first key on one node group.
pub(super) fn ioredis_refusal(b: &Batch, topo: &Topology) -> Option<&'static str> {
    if b.ops
        .iter()
        .any(|o| o.keys.iter().any(|k| key_slot(k) != key_slot(&o.keys[0])))
    {
        return Some("All the keys in a pipeline command should belong to the same slot");
    }
    let mut firsts = b
        .ops
        .iter()
        .filter_map(|o| o.keys.first())
        .map(|k| topo.node_of(k));
    let n0 = firsts.next();
    if firsts.any(|n| Some(n) != n0) {
        return Some("All keys in the pipeline should belong to the same slots allocation group");
    }
    None
}
