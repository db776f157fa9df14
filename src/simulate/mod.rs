//! The simulated pipeline executor: what a batch costs on a topology under each
//! execution strategy, from a pure cost model: commands per node, nodes touched,
//! round trips the client waits for, bytes sent, and a wall-clock estimate.

pub mod batch;
pub mod client;
pub mod exec;
pub mod monitor;

use crate::slot::key_slot;
use crate::topology::Topology;
pub use batch::{Batch, BatchKind, Op, parse_batches};
pub use client::{Client, ClientResult, Outcome, simulate_client, simulate_client_stale};
use serde::Serialize;
use std::collections::BTreeMap;

/// How a client executes a batch (the four approaches: one command per key, per-node pipelines one after another or concurrently, and one hash tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// One command per key, one after another.
    Serial,
    /// Keys grouped per node; one pipeline per node, nodes one after another.
    Pipeline,
    /// Keys grouped per node; the nodes' pipelines sent concurrently.
    Parallel,
    /// Keys grouped per slot; every slot's pipeline sent concurrently.
    SlotParallel,
    /// The batch's keys rewritten onto one hash tag: one node, one command or pipeline.
    Hashtag,
}

impl Strategy {
    /// All strategies, in the order reports list them.
    pub const ALL: [Strategy; 5] = [
        Strategy::Serial,
        Strategy::Pipeline,
        Strategy::Parallel,
        Strategy::SlotParallel,
        Strategy::Hashtag,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Serial => "serial",
            Strategy::Pipeline => "pipeline",
            Strategy::Parallel => "parallel",
            Strategy::SlotParallel => "slot-parallel",
            Strategy::Hashtag => "hashtag",
        }
    }
}

/// The network and server model.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct NetworkModel {
    /// Round-trip time between client and any node, in milliseconds.
    pub rtt_ms: f64,
    /// Server time per key touched, in microseconds.
    pub per_key_us: f64,
    /// Bandwidth client → nodes, in megabytes per second.
    pub bandwidth_mb_s: f64,
}

impl Default for NetworkModel {
    fn default() -> Self {
        NetworkModel {
            rtt_ms: 0.5,
            per_key_us: 2.0,
            bandwidth_mb_s: 1250.0,
        }
    }
}

/// One node's share of a simulated batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeLoad {
    /// The node.
    pub node: String,
    /// Its address, when known.
    pub address: Option<String>,
    /// Commands it receives.
    pub commands: u64,
    /// Keys those commands touch.
    pub keys: u64,
    /// Request bytes it receives.
    pub bytes: u64,
}

/// The cost of one batch under one strategy.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SimResult {
    /// Batch name.
    pub batch: String,
    /// The batch's stable identity (line, scheme name, command).
    pub batch_id: crate::simulate::batch::BatchId,
    /// Strategy.
    pub strategy: Strategy,
    /// Round trips the client waits for, one after another.
    pub round_trips: u64,
    /// Nodes that receive commands.
    pub nodes_touched: usize,
    /// Commands sent in all.
    pub commands: u64,
    /// Connections used at once.
    pub connections: u64,
    /// Request bytes sent.
    pub bytes: u64,
    /// Wall-clock estimate in milliseconds.
    pub latency_ms: f64,
    /// Per node, in node order (nodes with no commands left out).
    pub nodes: Vec<NodeLoad>,
    /// What goes wrong (e.g. keys no node serves).
    pub errors: Vec<String>,
}

/// RESP request size of a command with these arguments.
pub(crate) fn resp_bytes(args: &[&[u8]]) -> u64 {
    let mut n = format!("*{}\r\n", args.len()).len();
    for a in args {
        n += format!("${}\r\n", a.len()).len() + a.len() + 2;
    }
    n as u64
}

/// One command as a strategy sends it: its name, its keys, its slot and node.
struct Cmd {
    keys: Vec<Vec<u8>>,
    bytes: u64,
    node: Option<usize>,
    slot: u16,
}

/// The single-key commands a batch becomes when split key by key (MGET → GET, MSET → SET…).
fn split_per_key(b: &Batch, topo: &Topology) -> Vec<Cmd> {
    let mut out = Vec::new();
    for op in &b.ops {
        let single = op.single_key_command();
        for (i, k) in op.keys.iter().enumerate() {
            let mut args: Vec<&[u8]> = vec![single.as_bytes(), k];
            let extra = op.values.get(i).map(|v| v.as_slice());
            if let Some(v) = extra {
                args.push(v);
            }
            out.push(Cmd {
                keys: vec![k.clone()],
                bytes: resp_bytes(&args),
                node: topo.node_of(k),
                slot: key_slot(k),
            });
        }
        if op.keys.is_empty() {
            // A keyless command (e.g. PING inside a pipeline): any node; count it on the first.
            out.push(Cmd {
                keys: Vec::new(),
                bytes: resp_bytes(&[op.command.as_bytes()]),
                node: Some(0).filter(|_| !topo.nodes().is_empty()),
                slot: 0,
            });
        }
    }
    out
}

/// Simulates a batch under a strategy.
pub fn simulate(b: &Batch, topo: &Topology, strategy: Strategy, net: &NetworkModel) -> SimResult {
    let names: Vec<&crate::topology::Node> = topo.nodes().iter().collect();
    let per_key = split_per_key(b, topo);
    let mut errors = Vec::new();
    let unplaced = per_key.iter().filter(|c| c.node.is_none()).count();
    if unplaced > 0 {
        errors.push(format!(
            "{unplaced} key(s) land on slots no node serves (CLUSTERDOWN)"
        ));
    }
    let placed: Vec<&Cmd> = per_key.iter().filter(|c| c.node.is_some()).collect();
    // The commands each strategy sends, grouped by the unit it waits for.
    let mut load: BTreeMap<usize, NodeLoad> = BTreeMap::new();
    let mut add = |node: usize, commands: u64, keys: u64, bytes: u64| {
        let e = load.entry(node).or_insert_with(|| NodeLoad {
            node: names[node].name.clone(),
            address: names[node].address.clone(),
            commands: 0,
            keys: 0,
            bytes: 0,
        });
        e.commands += commands;
        e.keys += keys;
        e.bytes += bytes;
    };
    let us = |keys: u64| keys as f64 * net.per_key_us / 1000.0;
    let wire = |bytes: u64| bytes as f64 / (net.bandwidth_mb_s * 1000.0);
    let (round_trips, connections, latency) = match strategy {
        Strategy::Serial => {
            let mut lat = 0.0;
            for c in &placed {
                add(c.node.unwrap_or(0), 1, c.keys.len() as u64, c.bytes);
                lat += net.rtt_ms + us(c.keys.len() as u64) + wire(c.bytes);
            }
            (placed.len() as u64, 1, lat)
        }
        Strategy::Pipeline | Strategy::Parallel | Strategy::SlotParallel => {
            for c in &placed {
                add(c.node.unwrap_or(0), 1, c.keys.len() as u64, c.bytes);
            }
            let per_node: Vec<f64> = load
                .values()
                .map(|l| net.rtt_ms + us(l.keys) + wire(l.bytes))
                .collect();
            match strategy {
                Strategy::Pipeline => (load.len() as u64, 1, per_node.iter().sum()),
                Strategy::Parallel => (
                    u64::from(!load.is_empty()),
                    load.len() as u64,
                    per_node.iter().cloned().fold(0.0, f64::max),
                ),
                _ => {
                    let slots: std::collections::BTreeSet<u16> =
                        placed.iter().map(|c| c.slot).collect();
                    (
                        u64::from(!load.is_empty()),
                        slots.len() as u64,
                        per_node.iter().cloned().fold(0.0, f64::max),
                    )
                }
            }
        }
        Strategy::Hashtag => {
            // Every key gets the first key's hash tag: one node; a multi-key command stays one
            // command, a pipeline or MULTI stays one round trip.
            let node = placed.first().and_then(|c| c.node);
            let keys: u64 = placed.iter().map(|c| c.keys.len() as u64).sum();
            let (commands, bytes) = match b.kind {
                BatchKind::MultiKey => {
                    let mut args: Vec<&[u8]> = vec![b.ops[0].command.as_bytes()];
                    for op in &b.ops {
                        for (i, k) in op.keys.iter().enumerate() {
                            args.push(k);
                            if let Some(v) = op.values.get(i) {
                                args.push(v);
                            }
                        }
                    }
                    (1, resp_bytes(&args))
                }
                _ => (placed.len() as u64, placed.iter().map(|c| c.bytes).sum()),
            };
            match node {
                Some(n) => {
                    add(n, commands, keys, bytes);
                    (1, 1, net.rtt_ms + us(keys) + wire(bytes))
                }
                None => (0, 0, 0.0),
            }
        }
    };
    let nodes: Vec<NodeLoad> = load.into_values().collect();
    SimResult {
        batch: b.name.clone(),
        batch_id: b.id.clone(),
        strategy,
        round_trips,
        nodes_touched: nodes.len(),
        commands: nodes.iter().map(|n| n.commands).sum(),
        connections,
        bytes: nodes.iter().map(|n| n.bytes).sum(),
        latency_ms: latency,
        nodes,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::SlotMap;

    fn topo() -> Topology {
        Topology::Cluster(SlotMap::from_masters(3).unwrap())
    }

    #[test]
    fn mget_of_keys_on_three_nodes() {
        // hello → 866 (node 0), somekey → 11058 (node 2), foo{bar}{zap} → 5061 (node 0),
        // x → 16287 (node 2), 123456789 → 12739 (node 2), bar → 5061 (node 0), foo → 12182 (2)
        // {user1000}.following → 3443 (node 0); "a" → 15495 (node 2); b → 3300 (node 0).
        let b = &parse_batches("MGET hello somekey x bar a b foo{hash_tag}").unwrap()[0];
        let net = NetworkModel {
            rtt_ms: 1.0,
            per_key_us: 0.0,
            bandwidth_mb_s: f64::INFINITY,
        };
        let t = topo();
        let r = simulate(b, &t, Strategy::Serial, &net);
        assert_eq!((r.round_trips, r.commands, r.connections), (7, 7, 1));
        assert!((r.latency_ms - 7.0).abs() < 1e-9);
        let per_node: Vec<(String, u64)> = r
            .nodes
            .iter()
            .map(|n| (n.node.clone(), n.commands))
            .collect();
        // foo{hash_tag} → 2515 (node 0).
        assert_eq!(
            per_node,
            vec![("master-0".into(), 4), ("master-2".into(), 3)]
        );
        let r = simulate(b, &t, Strategy::Pipeline, &net);
        assert_eq!((r.round_trips, r.commands, r.nodes_touched), (2, 7, 2));
        let r = simulate(b, &t, Strategy::Parallel, &net);
        assert_eq!((r.round_trips, r.connections), (1, 2));
        assert!((r.latency_ms - 1.0).abs() < 1e-9);
        let r = simulate(b, &t, Strategy::SlotParallel, &net);
        assert_eq!((r.round_trips, r.connections), (1, 7));
        let r = simulate(b, &t, Strategy::Hashtag, &net);
        assert_eq!((r.round_trips, r.commands, r.nodes_touched), (1, 1, 1));
        assert_eq!(r.nodes[0].keys, 7);
    }

    #[test]
    fn resp_sizes() {
        assert_eq!(
            resp_bytes(&[b"GET", b"a"]),
            "*2\r\n$3\r\nGET\r\n$1\r\na\r\n".len() as u64
        );
    }
}
