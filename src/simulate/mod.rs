//! The simulated pipeline executor: what a batch costs on a topology under each
//! execution strategy, from a pure cost model: commands per node, nodes touched,
//! round trips the client waits for, bytes sent, and a wall-clock estimate.

pub mod batch;
pub mod client;
pub mod exec;
pub mod monitor;
pub mod perf;
pub mod session;
pub mod verdict;

use crate::topology::Topology;
pub use batch::{Batch, BatchKind, Op, parse_batches};
pub use client::{Client, ClientResult, Outcome, simulate_client, simulate_client_stale};
use serde::Serialize;

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

/// The network and server model: the load model's parameters (see [`perf`]), calibrated on a
/// real cluster or the documented defaults, and the load to predict for.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct NetworkModel {
    /// Round trip of one wave (network and both ends' fixed work), in milliseconds.
    pub rtt_ms: f64,
    /// Time per key touched, in microseconds.
    pub per_key_us: f64,
    /// Bandwidth client → nodes, in megabytes per second.
    pub bandwidth_mb_s: f64,
    /// Concurrent clients the throughput and percentiles are predicted for.
    pub concurrency: u32,
    /// A hot distribution of the requests over the nodes, if asked.
    pub hot: Option<perf::Hot>,
    /// Whether the parameters come from a calibration of a real cluster.
    pub calibrated: bool,
    /// With a calibration: the median and 99th percentile round trip of a lone GET it
    /// measured, ms (the model's `rtt_ms` is a fitted coefficient, not this measurement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_round_trip_ms: Option<[f64; 2]>,
    /// The load model's parameters.
    #[serde(skip)]
    pub perf: perf::PerfParams,
}

/// A lone GET's P99 round trip over its median beyond which the calibrating machine was noisy.
pub const NOISY_P99_OVER_P50: f64 = 10.0;

impl NetworkModel {
    /// A sentence when the calibration was measured on a noisy machine (a lone GET's P99 round
    /// trip more than [`NOISY_P99_OVER_P50`] times its median: other work on the machine).
    pub fn noisy_calibration(&self) -> Option<String> {
        let [p50, p99] = self.measured_round_trip_ms?;
        let ratio = p99 / p50;
        (ratio > NOISY_P99_OVER_P50).then(|| {
            format!(
                "the calibration was measured on a noisy machine: a lone GET's P99 round trip was {p99:.3} ms, {ratio:.0}× its median of {p50:.3} ms; its predictions are only as steady as that (calibrate again on a quiet machine)"
            )
        })
    }
}

impl Default for NetworkModel {
    fn default() -> Self {
        NetworkModel::uncalibrated(
            perf::DEFAULT_RTT_MS,
            perf::DEFAULT_KEY_US,
            perf::DEFAULT_BANDWIDTH_MB_S,
        )
    }
}

impl NetworkModel {
    /// The documented default parameters with a wave's round trip of `rtt_ms`, `per_key_us` per
    /// key and the bandwidth given; one client.
    pub fn uncalibrated(rtt_ms: f64, per_key_us: f64, bandwidth_mb_s: f64) -> NetworkModel {
        let mut p = perf::PerfParams::defaults(rtt_ms * 1000.0);
        p.latency.key_us = per_key_us;
        p.latency.kib_us = if bandwidth_mb_s.is_finite() && bandwidth_mb_s > 0.0 {
            1024.0 / bandwidth_mb_s
        } else {
            0.0
        };
        NetworkModel {
            rtt_ms,
            per_key_us,
            bandwidth_mb_s,
            concurrency: 1,
            hot: None,
            calibrated: false,
            measured_round_trip_ms: None,
            perf: p,
        }
    }

    /// A calibrated model; `rtt_ms`, when given, replaces the measured round trip of a wave
    /// (the same client and servers over another network).
    pub fn calibrated(p: perf::PerfParams, rtt_ms: Option<f64>) -> NetworkModel {
        let mut p = p;
        if let Some(r) = rtt_ms {
            p.latency.wave_us = r * 1000.0;
        }
        NetworkModel {
            rtt_ms: p.latency.wave_us / 1000.0,
            per_key_us: p.latency.key_us,
            bandwidth_mb_s: if p.latency.kib_us > 0.0 {
                1024.0 / p.latency.kib_us
            } else {
                f64::INFINITY
            },
            concurrency: 1,
            hot: None,
            calibrated: true,
            measured_round_trip_ms: None,
            perf: p,
        }
    }

    /// The model of a calibration (else the documented defaults: a 0.5 ms round trip,
    /// [`perf::DEFAULT_KEY_US`] a key, 1250 MB/s), with its round trip, time per key or
    /// bandwidth replaced where given.
    pub fn from_parts(
        calibration: Option<perf::PerfParams>,
        rtt_ms: Option<f64>,
        per_key_us: Option<f64>,
        bandwidth_mb_s: Option<f64>,
    ) -> NetworkModel {
        let Some(params) = calibration else {
            return NetworkModel::uncalibrated(
                rtt_ms.unwrap_or(perf::DEFAULT_RTT_MS),
                per_key_us.unwrap_or(perf::DEFAULT_KEY_US),
                bandwidth_mb_s.unwrap_or(perf::DEFAULT_BANDWIDTH_MB_S),
            );
        };
        let mut net = NetworkModel::calibrated(params, rtt_ms);
        if let Some(k) = per_key_us {
            net.perf.latency.key_us = k;
            net.per_key_us = k;
        }
        if let Some(b) = bandwidth_mb_s {
            net.perf.latency.kib_us = 1024.0 / b;
            net.bandwidth_mb_s = b;
        }
        net
    }

    /// The defaults around a round trip measured as `probe_ms` (one PING): the wave's part is
    /// what remains after the default costs of one lane and one command.
    pub fn probed(probe_ms: f64) -> NetworkModel {
        let d = perf::PerfParams::defaults(0.0).latency;
        let wave_ms = (probe_ms - (d.lane_us + d.command_us) / 1000.0).max(0.001);
        NetworkModel::uncalibrated(wave_ms, perf::DEFAULT_KEY_US, perf::DEFAULT_BANDWIDTH_MB_S)
    }

    /// A model where only round trips cost (`rtt_ms` each): no per-lane, per-command or
    /// per-key time, no CPU (for examples and tests whose latencies must be whole round trips).
    pub fn round_trips_only(rtt_ms: f64) -> NetworkModel {
        let mut net = NetworkModel::uncalibrated(rtt_ms, 0.0, f64::INFINITY);
        let zero = perf::Coefs::default();
        net.perf.latency = perf::Coefs {
            wave_us: rtt_ms * 1000.0,
            ..zero
        };
        net.perf.cpu = zero;
        net.perf.node = zero;
        net
    }

    /// One wave's round trip, ms.
    pub fn wave_ms(&self) -> f64 {
        self.perf.latency.wave_us / 1000.0
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

/// What one execution of a batch costs the client and the nodes: the figures a strategy and a
/// client profile report alike.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BatchLoad {
    /// Round trips the client waits for, one after another.
    pub round_trips: u64,
    /// Nodes that receive commands.
    pub nodes_touched: usize,
    /// Commands the nodes receive.
    pub commands: u64,
    /// Most connections in use at once.
    pub connections: u64,
    /// Request bytes the nodes receive.
    pub bytes: u64,
    /// Wall-clock time of one execution by a lone client, in milliseconds.
    pub latency_ms: f64,
    /// Batches per second the model predicts at the model's concurrency (all clients).
    pub qps: f64,
    /// Predicted median latency at that concurrency, ms.
    pub p50_ms: f64,
    /// Predicted 99th percentile latency at that concurrency, ms.
    pub p99_ms: f64,
    /// Per node, in node order (nodes with no commands left out).
    pub nodes: Vec<NodeLoad>,
}

impl BatchLoad {
    /// Commands per node touched, in node order.
    pub fn commands_per_node(&self) -> Vec<(String, u64)> {
        self.nodes
            .iter()
            .map(|n| (n.node.clone(), n.commands))
            .collect()
    }
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
    /// What running it costs.
    #[serde(flatten)]
    pub load: BatchLoad,
    /// What goes wrong (e.g. keys no node serves).
    pub errors: Vec<String>,
}

/// RESP request size of a command with these arguments.
pub(crate) fn resp_bytes(args: &[&[u8]]) -> u64 {
    resp_bytes_of(args.len(), args.iter().map(|a| a.len()))
}

/// RESP request size of a command of `count` arguments of these lengths: `*N\r\n`, then
/// `$LEN\r\n` and the argument and `\r\n` for each.
pub(crate) fn resp_bytes_of(count: usize, lens: impl Iterator<Item = usize>) -> u64 {
    let digits = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let mut n = 1 + digits(count) + 2;
    for len in lens {
        n += 1 + digits(len) + 2 + len + 2;
    }
    n as u64
}

/// Whether keys are reached through one proxy endpoint (a Redis Enterprise or Cloud
/// database): the client sends every command to the proxy, which sends each shard its part.
pub fn behind_proxy(topo: &Topology) -> bool {
    topo.slot_map().is_some_and(|m| m.enterprise().is_some())
}

/// The strategies of `list` a client can follow on `topo`: behind a proxy, not those that need
/// a connection to each node (`parallel`, `slot-parallel`); the proxy's own fan-out is what
/// `pipeline` costs there.
pub fn offered(topo: &Topology, list: &[Strategy]) -> Vec<Strategy> {
    list.iter()
        .copied()
        .filter(|s| {
            !one_endpoint(topo) || !matches!(s, Strategy::Parallel | Strategy::SlotParallel)
        })
        // A ring hashes `{…}` as one key's only where twemproxy's `hash_tag` is `{}`.
        .filter(|s| match topo {
            Topology::Ring(r) => *s != Strategy::Hashtag || r.hash_tag() == Some(*b"{}"),
            Topology::Cluster(_) => true,
        })
        .collect()
}

/// Whether clients reach `topo` through one endpoint that sends each server its part: a
/// Redis Enterprise database's proxy ([`behind_proxy`]), or twemproxy in front of a ring
/// (which splits MGET, MSET and DEL per server).
pub fn one_endpoint(topo: &Topology) -> bool {
    behind_proxy(topo) || matches!(topo, Topology::Ring(_))
}

/// Simulates a batch under a strategy: the cost of the execution plan `keyplan bench` runs
/// (see [`exec`]), with each node's commands, keys and request bytes. Behind a proxy
/// ([`behind_proxy`]) a pipeline is sent on the client's one connection and the proxy sends
/// every shard its part at once: one round trip for the client, the shards' parts as the
/// per-node plan lays them out.
pub fn simulate(b: &Batch, topo: &Topology, strategy: Strategy, net: &NetworkModel) -> SimResult {
    if one_endpoint(topo) && strategy == Strategy::Pipeline {
        let (plan, unplaced) = exec::model_plan(b, topo, Strategy::Parallel);
        let mut r = costed(b, topo, strategy, &plan, unplaced, net);
        r.load.connections = r.load.connections.min(1);
        return r;
    }
    // Under a Redis Enterprise hashing policy a `{…}` tag may match no rule: the keys are left
    // as they are, and the strategy sends them all to the first key's shard.
    let by_policy = topo.slot_map().is_some_and(|m| m.custom_hashing());
    let (plan, unplaced) = if strategy == Strategy::Hashtag && !by_policy {
        // The plan of the batch moved onto one tag (`exec::onto_one_tag`), from its lengths.
        exec::model_plan_on_one_tag(b, topo)
    } else {
        exec::model_plan(b, topo, strategy)
    };
    costed(b, topo, strategy, &plan, unplaced, net)
}

/// The result of running `plan` (batch `b`'s plan under `strategy`, with `unplaced` commands
/// left out for want of a node): what [`simulate`] reports, and what `keyplan bench` predicts
/// for the plan it executes.
pub fn costed(
    b: &Batch,
    topo: &Topology,
    strategy: Strategy,
    plan: &exec::ExecPlan,
    unplaced: usize,
    net: &NetworkModel,
) -> SimResult {
    let mut errors = Vec::new();
    if unplaced > 0 {
        errors.push(format!(
            "{unplaced} key(s) land on slots no node serves (CLUSTERDOWN)"
        ));
    }
    SimResult {
        batch: b.name.clone(),
        batch_id: b.id.clone(),
        strategy,
        load: exec::Execution::Commands(plan).load(topo.nodes(), net),
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
        let net = NetworkModel::round_trips_only(1.0);
        let t = topo();
        let r = simulate(b, &t, Strategy::Serial, &net);
        assert_eq!(
            (r.load.round_trips, r.load.commands, r.load.connections),
            (7, 7, 1)
        );
        assert!((r.load.latency_ms - 7.0).abs() < 1e-9);
        let per_node = r.load.commands_per_node();
        // foo{hash_tag} → 2515 (node 0).
        assert_eq!(
            per_node,
            vec![("master-0".into(), 4), ("master-2".into(), 3)]
        );
        let r = simulate(b, &t, Strategy::Pipeline, &net);
        assert_eq!(
            (r.load.round_trips, r.load.commands, r.load.nodes_touched),
            (2, 7, 2)
        );
        let r = simulate(b, &t, Strategy::Parallel, &net);
        assert_eq!((r.load.round_trips, r.load.connections), (1, 2));
        assert!((r.load.latency_ms - 1.0).abs() < 1e-9);
        let r = simulate(b, &t, Strategy::SlotParallel, &net);
        assert_eq!((r.load.round_trips, r.load.connections), (1, 7));
        let r = simulate(b, &t, Strategy::Hashtag, &net);
        assert_eq!(
            (r.load.round_trips, r.load.commands, r.load.nodes_touched),
            (1, 1, 1)
        );
        assert_eq!(r.load.nodes[0].keys, 7);
    }

    #[test]
    fn behind_a_proxy_a_pipeline_is_one_round_trip_on_one_connection() {
        use crate::topology::enterprise::{Enterprise, HashingPolicy};
        let b = &parse_batches("MGET hello somekey x bar a b foo{hash_tag}").unwrap()[0];
        let net = NetworkModel::round_trips_only(1.0);
        let t = Topology::Cluster(
            SlotMap::from_masters(3)
                .unwrap()
                .with_enterprise(Enterprise {
                    hashing: HashingPolicy::Redis,
                    active_active: false,
                }),
        );
        assert!(behind_proxy(&t) && !behind_proxy(&topo()));
        assert_eq!(
            offered(&t, &Strategy::ALL),
            [Strategy::Serial, Strategy::Pipeline, Strategy::Hashtag]
        );
        assert_eq!(offered(&topo(), &Strategy::ALL), Strategy::ALL);
        // The proxy sends each shard its part of the MGET at once: one round trip, one
        // connection, the two shards' commands as a cluster's per-node pipelines have them.
        let r = simulate(b, &t, Strategy::Pipeline, &net);
        assert_eq!(
            (r.load.round_trips, r.load.connections, r.load.nodes_touched),
            (1, 1, 2)
        );
        assert!((r.load.latency_ms - 1.0).abs() < 1e-9);
        let cluster = simulate(b, &topo(), Strategy::Parallel, &net);
        assert_eq!(r.load.nodes, cluster.load.nodes);
        // Serial is a command a key, one after another, through the proxy as anywhere.
        let r = simulate(b, &t, Strategy::Serial, &net);
        assert_eq!((r.load.round_trips, r.load.connections), (7, 1));
    }

    #[test]
    fn resp_sizes() {
        assert_eq!(
            resp_bytes(&[b"GET", b"a"]),
            "*2\r\n$3\r\nGET\r\n$1\r\na\r\n".len() as u64
        );
        // Lengths of every number of digits, as the protocol writes them.
        for len in [0usize, 1, 9, 10, 99, 100, 999, 1000, 12_345, 1 << 20] {
            let arg = vec![b'x'; len];
            let args: Vec<&[u8]> = std::iter::repeat_n(arg.as_slice(), len % 13 + 1).collect();
            let mut written = format!("*{}\r\n", args.len()).len();
            for a in &args {
                written += format!("${}\r\n", a.len()).len() + a.len() + 2;
            }
            assert_eq!(resp_bytes(&args), written as u64, "{len}");
        }
    }
}
