//! A move from one way of placing keys to another: a twemproxy pool or a client-side ring to
//! a Redis Cluster, a cluster to a new cluster with more masters, a ring of N servers to one
//! of N+1. Every key of a sample is placed under both, so the report says which keys and bytes
//! change owner (per pair of nodes), what each node holds before and after, and which batches
//! start failing (a twemproxy pool splits a multi-key MGET over its servers; a cluster refuses
//! it with CROSSSLOT) or fan out over more nodes. Pure: no I/O, no printing.

use crate::keys::Record;
use crate::keys::parallel::ChunkSink;
use crate::simulate::NetworkModel;
use crate::simulate::batch::{Batch, BatchId};
use crate::simulate::client::{Client, Outcome, simulate_client};
use crate::simulate::verdict::{ServerOutcome, as_written};
use crate::skew::{Skew, skew};
use crate::slot::key_slot;
use crate::topology::Topology;
use serde::{Serialize, Serializer};

/// What one side of the move is.
#[derive(Debug, Clone, Copy)]
pub struct Side<'t> {
    /// Where keys live.
    pub topology: &'t Topology,
    /// Its nodes are made up (`--masters N`): they are no node of the other side, whatever
    /// their names.
    pub synthetic: bool,
    /// Who executes batches on it.
    pub judge: Judge,
}

/// Who a batch meets on a side: the cluster's servers as the batch is written, or a client
/// library or proxy with its own way of splitting a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    /// The servers of a Redis Cluster, sent each command as written (one node per command):
    /// what a cluster client that does not split batches meets.
    Server,
    /// A client library or proxy profile (twemproxy on a ring).
    Client(Client),
}

impl Judge {
    /// The judge a side gets when none is named: the servers of a cluster; twemproxy on a
    /// ring (the proxy nearly every ring in production sits behind).
    pub fn default_for(t: &Topology) -> Judge {
        match t {
            Topology::Cluster(_) => Judge::Server,
            Topology::Ring(_) => Judge::Client(Client::Twemproxy),
        }
    }

    /// In words, for the report.
    pub fn describe(self) -> String {
        match self {
            Judge::Server => "Redis Cluster servers, each command as written".into(),
            Judge::Client(c) => format!("{} ({})", c.name(), c.models()),
        }
    }
}

/// Keys, bytes and ops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Keys.
    pub keys: u64,
    /// Bytes (0 when the sample has none).
    pub bytes: u64,
    /// Ops (0 when the sample has none).
    pub ops: f64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.keys += other.keys;
        self.bytes += other.bytes;
        self.ops += other.ops;
    }
}

/// A pair's keys while the sample is read: ops in millionths, so that sums do not depend on
/// which worker read which chunk (integer sums are the same in any order).
#[derive(Debug, Clone, Copy, Default)]
struct Cell {
    keys: u64,
    bytes: u64,
    micro_ops: i128,
}

impl Cell {
    fn tally(&self) -> Tally {
        Tally {
            keys: self.keys,
            bytes: self.bytes,
            ops: self.micro_ops as f64 / 1e6,
        }
    }
}

/// Where each key of a sample is before and after: a tally per (old node, new node) pair, the
/// last row and column standing for "no node" (a ring with random distribution, a slot no
/// node serves).
#[derive(Debug, Clone)]
pub struct Placement {
    from_nodes: usize,
    to_nodes: usize,
    cells: Vec<Cell>,
    /// Whether both sides are clusters (a key's slot is hashed once).
    both_clusters: bool,
}

impl Placement {
    /// An empty placement over the nodes of `from` and `to`.
    pub fn new(from: &Topology, to: &Topology) -> Placement {
        let (f, t) = (from.nodes().len(), to.nodes().len());
        Placement {
            from_nodes: f,
            to_nodes: t,
            cells: vec![Cell::default(); (f + 1) * (t + 1)],
            // One slot serves both sides only when both hash keys the Redis way.
            both_clusters: [from, to]
                .iter()
                .all(|t| t.slot_map().is_some_and(|m| !m.custom_hashing())),
        }
    }

    /// Places one key (with its bytes and ops, when the sample has them).
    #[inline]
    pub fn add(
        &mut self,
        from: &Topology,
        to: &Topology,
        key: &[u8],
        bytes: Option<u64>,
        ops: Option<f64>,
    ) {
        let (a, b) = if self.both_clusters {
            let slot = key_slot(key);
            (from.node_of_slot(slot), to.node_of_slot(slot))
        } else {
            (from.node_of(key), to.node_of(key))
        };
        let i = a.unwrap_or(self.from_nodes) * (self.to_nodes + 1) + b.unwrap_or(self.to_nodes);
        let c = &mut self.cells[i];
        c.keys += 1;
        c.bytes += bytes.unwrap_or(0);
        c.micro_ops += (ops.unwrap_or(0.0) * 1e6).round() as i128;
    }

    /// Adds another worker's placement (over the same topologies).
    pub fn merge(&mut self, other: &Placement) {
        for (a, b) in self.cells.iter_mut().zip(&other.cells) {
            a.keys += b.keys;
            a.bytes += b.bytes;
            a.micro_ops += b.micro_ops;
        }
    }

    fn cell(&self, from: Option<usize>, to: Option<usize>) -> &Cell {
        &self.cells
            [from.unwrap_or(self.from_nodes) * (self.to_nodes + 1) + to.unwrap_or(self.to_nodes)]
    }
}

/// One node's load on one side.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeLoad {
    /// The node's name.
    pub node: String,
    /// Its address, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Whether the same node is on the other side too (same address, or same name when
    /// neither has an address).
    pub on_both_sides: bool,
    /// What it holds.
    #[serde(flatten)]
    pub load: Tally,
    /// Its share of the keys placed on this side (0..1).
    pub key_share: f64,
    /// Its nominal share: of the slots, or of the ring.
    pub nominal_share: f64,
}

/// Keys that go from one node to another.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Pair {
    /// The node before (`None`: no node placed them).
    pub from: Option<String>,
    /// The node after.
    pub to: Option<String>,
    /// Whether `from` and `to` are the same node (the keys stay).
    pub stays: bool,
    /// The keys.
    #[serde(flatten)]
    pub load: Tally,
}

/// How a batch's fate changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Served before, refused after.
    StartsFailing,
    /// Served on both, over more nodes after.
    FansOutWider,
    /// Refused on both.
    FailsOnBoth,
    /// Refused before, served after.
    StartsWorking,
    /// Served on both, over fewer nodes after.
    Narrower,
    /// Served on both, over as many nodes.
    Same,
    /// A side's profile does not describe what happens.
    Unknown,
}

impl Change {
    /// Every change, in report order.
    pub const ALL: [Change; 7] = [
        Change::StartsFailing,
        Change::FansOutWider,
        Change::FailsOnBoth,
        Change::StartsWorking,
        Change::Narrower,
        Change::Same,
        Change::Unknown,
    ];

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Change::StartsFailing => "starts-failing",
            Change::FansOutWider => "fans-out-wider",
            Change::FailsOnBoth => "fails-on-both",
            Change::StartsWorking => "starts-working",
            Change::Narrower => "narrower",
            Change::Same => "same",
            Change::Unknown => "unknown",
        }
    }
}

/// What one side does with a batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fate {
    /// Served (`true`), refused (`false`), or not known (`None`: the profile does not model
    /// this kind of batch).
    pub served: Option<bool>,
    /// What happens, in the judge's words: `ok`, `crossslot`, `wrong-server`, `proxy-error`, ….
    pub outcome: &'static str,
    /// The error the application sees, or a note (not atomic, not modelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Distinct nodes its keys are on.
    pub nodes: usize,
}

/// One batch before and after.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BatchChange {
    /// The batch's name.
    pub batch: String,
    /// Its stable identity.
    pub id: BatchId,
    /// How its fate changes.
    pub change: Change,
    /// Before.
    pub before: Fate,
    /// After.
    pub after: Fate,
}

/// What the move does to each node and batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SchemeChange {
    /// Keys placed (every key of the sample).
    pub keys: u64,
    /// Keys that change node (the new node is not the old one).
    pub moved: Tally,
    /// Keys that stay on their node.
    pub stayed: Tally,
    /// Keys no node holds before (a random ring, an unserved slot).
    pub unplaced_before: u64,
    /// Keys no node holds after.
    pub unplaced_after: u64,
    /// Each node before.
    pub before: Vec<NodeLoad>,
    /// Each node after.
    pub after: Vec<NodeLoad>,
    /// Skew (busiest node ÷ mean) of keys, bytes and ops, before and after.
    pub skew: SkewPair,
    /// Every (old node, new node) pair that holds keys, most keys first.
    pub pairs: Vec<Pair>,
}

/// Skew before and after, per weight.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct SkewPair {
    /// Keys before.
    pub keys_before: Option<Skew>,
    /// Keys after.
    pub keys_after: Option<Skew>,
    /// Bytes before (with bytes in the sample).
    pub bytes_before: Option<Skew>,
    /// Bytes after.
    pub bytes_after: Option<Skew>,
    /// Ops before (with ops in the sample).
    pub ops_before: Option<Skew>,
    /// Ops after.
    pub ops_after: Option<Skew>,
}

/// For each node of `from`, the node of `to` that is the same server: the same address, or
/// (neither having one) the same name. Made-up nodes (`--masters N`) are no other node.
pub fn same_nodes(from: &Side<'_>, to: &Side<'_>) -> Vec<Option<usize>> {
    let (a, b) = (from.topology.nodes(), to.topology.nodes());
    a.iter()
        .map(|n| {
            if from.synthetic || to.synthetic {
                return None;
            }
            b.iter().position(|m| match (&n.address, &m.address) {
                (Some(x), Some(y)) => x == y,
                (None, None) => n.name == m.name,
                _ => false,
            })
        })
        .collect()
}

/// The report's figures from a placement of the sample.
pub fn summarize(
    from: &Side<'_>,
    to: &Side<'_>,
    placed: &Placement,
    has_bytes: bool,
    has_ops: bool,
) -> SchemeChange {
    let same = same_nodes(from, to);
    let mut back: Vec<bool> = vec![false; placed.to_nodes];
    for j in same.iter().flatten() {
        back[*j] = true;
    }
    let (fnodes, tnodes) = (from.topology.nodes(), to.topology.nodes());
    let mut pairs = Vec::new();
    let (mut moved, mut stayed) = (Tally::default(), Tally::default());
    let mut before = vec![Tally::default(); placed.from_nodes];
    let mut after = vec![Tally::default(); placed.to_nodes];
    let (mut unplaced_before, mut unplaced_after, mut keys) = (0u64, 0u64, 0u64);
    for i in (0..placed.from_nodes).map(Some).chain([None]) {
        for j in (0..placed.to_nodes).map(Some).chain([None]) {
            let cell = *placed.cell(i, j);
            if cell.keys == 0 {
                continue;
            }
            let c = cell.tally();
            keys += c.keys;
            match i {
                Some(i) => before[i].add(&c),
                None => unplaced_before += c.keys,
            }
            match j {
                Some(j) => after[j].add(&c),
                None => unplaced_after += c.keys,
            }
            let stays = matches!((i, j), (Some(i), Some(j)) if same[i] == Some(j));
            match stays {
                true => stayed.add(&c),
                false => moved.add(&c),
            }
            pairs.push(Pair {
                from: i.map(|i| fnodes[i].name.clone()),
                to: j.map(|j| tnodes[j].name.clone()),
                stays,
                load: c,
            });
        }
    }
    pairs.sort_by(|a, b| {
        b.load
            .keys
            .cmp(&a.load.keys)
            .then_with(|| a.from.cmp(&b.from))
            .then_with(|| a.to.cmp(&b.to))
    });
    let loads = |t: &Topology, tallies: &[Tally], both: &dyn Fn(usize) -> bool| {
        let shares = t.nominal_shares();
        let total: u64 = tallies.iter().map(|t| t.keys).sum();
        t.nodes()
            .iter()
            .zip(tallies)
            .enumerate()
            .map(|(i, (n, l))| NodeLoad {
                node: n.name.clone(),
                address: n.address.clone(),
                on_both_sides: both(i),
                load: *l,
                key_share: if total == 0 {
                    0.0
                } else {
                    l.keys as f64 / total as f64
                },
                nominal_share: shares.get(i).copied().unwrap_or(0.0),
            })
            .collect::<Vec<_>>()
    };
    let before = loads(from.topology, &before, &|i| same[i].is_some());
    let after = loads(to.topology, &after, &|j| back[j]);
    let skew_of = |nodes: &[NodeLoad], t: &Topology, w: &dyn Fn(&Tally) -> f64| {
        let names: Vec<String> = nodes.iter().map(|n| n.node.clone()).collect();
        let values: Vec<f64> = nodes.iter().map(|n| w(&n.load)).collect();
        skew(&values, &names, &t.nominal_shares())
    };
    let k = |t: &Tally| t.keys as f64;
    let b = |t: &Tally| t.bytes as f64;
    let o = |t: &Tally| t.ops;
    let skew = SkewPair {
        keys_before: skew_of(&before, from.topology, &k),
        keys_after: skew_of(&after, to.topology, &k),
        bytes_before: has_bytes
            .then(|| skew_of(&before, from.topology, &b))
            .flatten(),
        bytes_after: has_bytes
            .then(|| skew_of(&after, to.topology, &b))
            .flatten(),
        ops_before: has_ops
            .then(|| skew_of(&before, from.topology, &o))
            .flatten(),
        ops_after: has_ops.then(|| skew_of(&after, to.topology, &o)).flatten(),
    };
    SchemeChange {
        keys,
        moved,
        stayed,
        unplaced_before,
        unplaced_after,
        before,
        after,
        skew,
        pairs,
    }
}

/// What `side` does with batch `b`.
pub fn fate(b: &Batch, side: &Side<'_>) -> Fate {
    let t = side.topology;
    let mut nodes: Vec<usize> = b
        .keys()
        .chain(b.script_ran.iter().flatten().map(Vec::as_slice))
        .filter_map(|k| t.node_of(k))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let nodes = nodes.len();
    match side.judge {
        Judge::Server => {
            let v = as_written(b, t);
            Fate {
                served: Some(v.outcome == ServerOutcome::Ok),
                outcome: v.outcome.name(),
                message: v.message,
                nodes,
            }
        }
        Judge::Client(c) => {
            let r = simulate_client(b, t, c, &NetworkModel::default());
            let served = match r.outcome {
                Outcome::Ok | Outcome::NotAtomic => Some(true),
                Outcome::NotModelled => None,
                Outcome::ClientError
                | Outcome::ServerError
                | Outcome::ProxyError
                | Outcome::WrongServer => Some(false),
            };
            Fate {
                served,
                outcome: r.outcome.name(),
                message: r.message,
                nodes,
            }
        }
    }
}

/// How `b` fares before and after.
pub fn batch_change(b: &Batch, from: &Side<'_>, to: &Side<'_>) -> BatchChange {
    let (before, after) = (fate(b, from), fate(b, to));
    let change = match (before.served, after.served) {
        (None, _) | (_, None) => Change::Unknown,
        (Some(true), Some(false)) => Change::StartsFailing,
        (Some(false), Some(false)) => Change::FailsOnBoth,
        (Some(false), Some(true)) => Change::StartsWorking,
        (Some(true), Some(true)) => match after.nodes.cmp(&before.nodes) {
            std::cmp::Ordering::Greater => Change::FansOutWider,
            std::cmp::Ordering::Less => Change::Narrower,
            std::cmp::Ordering::Equal => Change::Same,
        },
    };
    BatchChange {
        batch: b.name.clone(),
        id: b.id.clone(),
        change,
        before,
        after,
    }
}

/// The batches of a run, counted by change; the rows of those that change, in report order
/// (the first `keep` of them: a capture can hold millions).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct BatchChanges {
    /// Batches judged.
    pub judged: u64,
    /// How many of each change (every change named, zeros too).
    pub counts: Vec<(Change, u64)>,
    /// Batches whose fate changes (or is unknown), most serious first, then in input order.
    pub rows: Vec<BatchChange>,
    /// Rows left out past the limit.
    pub rows_left_out: u64,
}

impl BatchChanges {
    /// Counts and keeps up to `keep` changed rows.
    pub fn collect(changes: impl IntoIterator<Item = BatchChange>, keep: usize) -> BatchChanges {
        let mut counts = [0u64; Change::ALL.len()];
        let mut rows: Vec<BatchChange> = Vec::new();
        let mut judged = 0;
        let mut left_out = 0;
        for c in changes {
            judged += 1;
            let i = Change::ALL.iter().position(|&x| x == c.change).unwrap_or(0);
            counts[i] += 1;
            if c.change == Change::Same {
                continue;
            }
            if rows.len() < keep {
                rows.push(c);
            } else {
                left_out += 1;
            }
        }
        // Stable: input order within a change.
        rows.sort_by_key(|r| r.change);
        BatchChanges {
            judged,
            counts: Change::ALL.iter().copied().zip(counts).collect(),
            rows,
            rows_left_out: left_out,
        }
    }

    /// How many batches start failing.
    pub fn starting_to_fail(&self) -> u64 {
        self.count(Change::StartsFailing)
    }

    /// How many batches have change `c`.
    pub fn count(&self, c: Change) -> u64 {
        self.counts
            .iter()
            .find(|(x, _)| *x == c)
            .map_or(0, |(_, n)| *n)
    }
}

/// One side of the move, as the report names it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SideInfo {
    /// Where it came from, in words.
    pub topology: String,
    /// `cluster` or `ring`.
    pub kind: &'static str,
    /// Its nodes.
    pub nodes: usize,
    /// Who runs batches on it, in words.
    pub batches_meet: String,
}

impl SideInfo {
    /// Describes `side`, which came from `source`.
    pub fn of(side: &Side<'_>, source: String) -> SideInfo {
        SideInfo {
            topology: source,
            kind: match side.topology.slot_map() {
                Some(_) => "cluster",
                None => "ring",
            },
            nodes: side.topology.nodes().len(),
            batches_meet: side.judge.describe(),
        }
    }
}

/// The whole report of `keyplan migrate`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SchemeChangeReport {
    /// Where keys live now.
    pub from: SideInfo,
    /// Where they will live.
    pub to: SideInfo,
    /// The key samples read.
    pub samples: Vec<String>,
    /// Whether the samples gave bytes.
    pub has_bytes: bool,
    /// Whether the samples gave ops.
    pub has_ops: bool,
    /// Keys, bytes and ops per node and pair (with a sample).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<SchemeChange>,
    /// The batches (with batches to judge).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "batches_json"
    )]
    pub batches: Option<BatchChanges>,
}

impl SchemeChangeReport {
    /// Batches that start failing.
    pub fn starting_to_fail(&self) -> u64 {
        self.batches
            .as_ref()
            .map_or(0, BatchChanges::starting_to_fail)
    }
}

/// The batches with their counts as an object (`{"starts-failing": 2, …}`, in report order).
fn batches_json<S: Serializer>(b: &Option<BatchChanges>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Out<'a> {
        judged: u64,
        counts: Counts<'a>,
        rows: &'a [BatchChange],
        rows_left_out: u64,
    }
    struct Counts<'a>(&'a [(Change, u64)]);
    impl Serialize for Counts<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut m = s.serialize_map(Some(self.0.len()))?;
            for (c, n) in self.0 {
                m.serialize_entry(c.name(), n)?;
            }
            m.end()
        }
    }
    match b {
        Some(b) => Out {
            judged: b.judged,
            counts: Counts(&b.counts),
            rows: &b.rows,
            rows_left_out: b.rows_left_out,
        }
        .serialize(s),
        None => s.serialize_none(),
    }
}

/// One worker's placement of a sample's keys under both sides: a sink of the parallel dump
/// reader, merged by [`Placed::merge`].
#[derive(Debug)]
pub struct PlaceSink<'t> {
    from: &'t Topology,
    to: &'t Topology,
    placed: Placement,
    has_bytes: bool,
    has_ops: bool,
}

impl<'t> PlaceSink<'t> {
    /// An empty sink placing keys under `from` and `to`.
    pub fn new(from: &'t Topology, to: &'t Topology) -> PlaceSink<'t> {
        PlaceSink {
            from,
            to,
            placed: Placement::new(from, to),
            has_bytes: false,
            has_ops: false,
        }
    }
}

impl ChunkSink for PlaceSink<'_> {
    fn record(&mut self, rec: &Record<'_>) {
        self.has_bytes |= rec.bytes.is_some();
        self.has_ops |= rec.ops.is_some();
        self.placed
            .add(self.from, self.to, rec.key, rec.bytes, rec.ops);
    }
}

/// The keys of the samples, placed under both sides.
#[derive(Debug, Clone)]
pub struct Placed {
    /// The samples read, as the report names them.
    pub samples: Vec<String>,
    /// Every key's old and new node.
    pub placement: Placement,
    /// Whether the samples gave bytes.
    pub has_bytes: bool,
    /// Whether the samples gave ops.
    pub has_ops: bool,
}

impl Placed {
    /// The workers' sinks merged, for the samples named `samples`.
    pub fn merge(
        from: &Topology,
        to: &Topology,
        sinks: &[PlaceSink<'_>],
        samples: Vec<String>,
    ) -> Placed {
        let mut placed = Placed {
            samples,
            placement: Placement::new(from, to),
            has_bytes: false,
            has_ops: false,
        };
        for s in sinks {
            placed.placement.merge(&s.placed);
            placed.has_bytes |= s.has_bytes;
            placed.has_ops |= s.has_ops;
        }
        placed
    }
}

/// The preview of a move: both sides (each with where it came from, in words), the keys of
/// the samples if any were read, the batches if any were judged.
pub fn preview(
    from: (&Side<'_>, String),
    to: (&Side<'_>, String),
    placed: Option<Placed>,
    batches: Option<BatchChanges>,
) -> SchemeChangeReport {
    let change = placed
        .as_ref()
        .map(|p| summarize(from.0, to.0, &p.placement, p.has_bytes, p.has_ops));
    let (samples, has_bytes, has_ops) = match placed {
        Some(p) => (p.samples, p.has_bytes, p.has_ops),
        None => (Vec::new(), false, false),
    };
    SchemeChangeReport {
        from: SideInfo::of(from.0, from.1),
        to: SideInfo::of(to.0, to.1),
        samples,
        has_bytes,
        has_ops,
        change,
        batches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::parse_batches;
    use crate::topology::{SlotMap, TopologyFormat, TopologyOptions};

    fn ring(servers: &[&str]) -> Topology {
        let mut conf = String::from(
            "pool:\n  listen: 127.0.0.1:22121\n  hash: md5\n  distribution: ketama\n  servers:\n",
        );
        for s in servers {
            conf.push_str(&format!("   - {s}:1\n"));
        }
        Topology::parse_as(
            &conf,
            TopologyFormat::Twemproxy,
            &TopologyOptions::default(),
        )
        .unwrap()
    }

    fn side(t: &Topology, synthetic: bool) -> Side<'_> {
        Side {
            topology: t,
            synthetic,
            judge: Judge::default_for(t),
        }
    }

    fn place(from: &Side<'_>, to: &Side<'_>, keys: &[String]) -> SchemeChange {
        let mut p = Placement::new(from.topology, to.topology);
        for k in keys {
            p.add(from.topology, to.topology, k.as_bytes(), Some(10), None);
        }
        summarize(from, to, &p, true, false)
    }

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("user:{i}:profile")).collect()
    }

    #[test]
    fn a_ring_that_grows_moves_only_what_the_new_server_takes() {
        let three = ring(&["10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"]);
        let four = ring(&[
            "10.0.0.1:6379",
            "10.0.0.2:6379",
            "10.0.0.3:6379",
            "10.0.0.4:6379",
        ]);
        let (a, b) = (side(&three, false), side(&four, false));
        let r = place(&a, &b, &keys(20_000));
        assert_eq!(r.keys, 20_000);
        assert_eq!(r.moved.keys + r.stayed.keys, 20_000);
        assert_eq!(r.moved.bytes, r.moved.keys * 10);
        // Consistent hashing: every moved key goes to the new server, none between old ones.
        for p in r.pairs.iter().filter(|p| !p.stays) {
            assert_eq!(p.to.as_deref(), Some("10.0.0.4:6379"), "{p:?}");
        }
        let new = r.after.iter().find(|n| n.node == "10.0.0.4:6379").unwrap();
        assert!(!new.on_both_sides);
        assert_eq!(new.load.keys, r.moved.keys);
        // About a quarter moves.
        let share = r.moved.keys as f64 / 20_000.0;
        assert!((0.15..0.35).contains(&share), "{share}");
        assert!(r.before.iter().all(|n| n.on_both_sides));
    }

    #[test]
    fn a_new_cluster_moves_every_key_and_keeps_the_slot_layout() {
        let three = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let six = Topology::Cluster(SlotMap::from_masters(6).unwrap());
        let r = place(&side(&three, true), &side(&six, true), &keys(6_000));
        assert_eq!(r.moved.keys, 6_000);
        assert_eq!(r.stayed.keys, 0);
        // master-0 of 3 (slots 0-5460) splits into master-0 and master-1 of 6 (0-2730, 2731-5461)
        // apart from slot 5461, which master-1 of 3 held.
        let from0: u64 = r
            .pairs
            .iter()
            .filter(|p| p.from.as_deref() == Some("master-0"))
            .map(|p| p.load.keys)
            .sum();
        assert_eq!(from0, r.before[0].load.keys);
        for p in r
            .pairs
            .iter()
            .filter(|p| p.from.as_deref() == Some("master-0"))
        {
            assert!(
                matches!(p.to.as_deref(), Some("master-0" | "master-1")),
                "{p:?}"
            );
        }
        let per_slot = |slots: std::ops::RangeInclusive<u16>| {
            keys(6_000)
                .iter()
                .filter(|k| slots.contains(&key_slot(k.as_bytes())))
                .count() as u64
        };
        assert_eq!(r.after[0].load.keys, per_slot(0..=2730));
        assert_eq!(r.after[5].load.keys, per_slot(13653..=16383));
    }

    #[test]
    fn the_same_addresses_on_both_sides_are_the_same_nodes() {
        let nodes = "\
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 10.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-8191
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 10.0.0.2:7000@17000 master - 0 0 2 connected 8192-16383
";
        let cluster = Topology::Cluster(SlotMap::from_cluster_nodes(nodes, false).unwrap());
        let pool = ring(&["10.0.0.1:7000", "10.0.0.9:7000"]);
        let (a, b) = (side(&pool, false), side(&cluster, false));
        assert_eq!(same_nodes(&a, &b), vec![Some(0), None]);
        let r = place(&a, &b, &keys(5_000));
        let stays: u64 = r
            .pairs
            .iter()
            .filter(|p| p.stays)
            .map(|p| p.load.keys)
            .sum();
        assert_eq!(stays, r.stayed.keys);
        assert!(r.stayed.keys > 0 && r.moved.keys > 0);
        assert!(r.after[0].on_both_sides && !r.after[1].on_both_sides);
    }

    #[test]
    fn an_mget_twemproxy_splits_starts_failing_on_a_cluster() {
        let pool = ring(&["10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"]);
        let cluster = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let (a, b) = (side(&pool, false), side(&cluster, true));
        let batches = parse_batches(
            "MGET user:1 user:2 user:3 user:4\nMGET {u1}:a {u1}:b\nSUNION s:1 s:2 s:3 s:4 s:5\nMULTI SET a 1; SET b 2\n",
        )
        .unwrap();
        let changes: Vec<BatchChange> = batches.iter().map(|x| batch_change(x, &a, &b)).collect();
        assert_eq!(changes[0].change, Change::StartsFailing);
        assert_eq!(changes[0].after.outcome, "crossslot");
        assert_eq!(changes[0].before.outcome, "ok");
        assert!(changes[0].before.nodes > 1);
        // One slot: served by both, on one node after.
        assert!(matches!(changes[1].change, Change::Same | Change::Narrower));
        assert_eq!(changes[1].after.nodes, 1);
        // twemproxy sends SUNION to its first key's server: wrong when keys are elsewhere.
        assert_eq!(changes[2].before.outcome, "wrong-server");
        assert_eq!(changes[2].change, Change::FailsOnBoth);
        // twemproxy refuses MULTI; the cluster runs it only on one slot.
        assert_eq!(changes[3].before.outcome, "proxy-error");
        let all = BatchChanges::collect(changes, 2);
        assert_eq!(all.judged, 4);
        assert_eq!(all.starting_to_fail(), 1);
        assert_eq!(all.rows.len(), 2);
        assert_eq!(all.rows[0].change, Change::StartsFailing);
        assert!(all.rows_left_out >= 1);
    }
}
