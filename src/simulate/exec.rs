//! The commands each strategy sends, as an execution plan: waves the client waits for one after
//! another, each made of lanes (one pipeline on one connection to one node) sent together.
//!
//! This is the one execution model: `keyplan bench` executes the plan [`exec_plan`] builds,
//! and the simulator's numbers ([`super::simulate`]) are [`cost`] of the plan [`model_plan`]
//! builds, which is the same plan whenever bench can run the batch (and, where it cannot, the
//! same rules with the refusals turned into a best effort: an unsplittable multi-key command
//! split key by key, keys on unserved slots left out and counted).

use super::Strategy;
use super::batch::{Batch, BatchKind, Op};
use crate::slot::hash_tag;
use crate::topology::{Node, Topology};
use std::collections::BTreeMap;

/// One pipeline on one connection to one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// The node (index into the topology's nodes).
    pub node: usize,
    /// The commands, each as its arguments (name first).
    pub commands: Vec<Vec<Vec<u8>>>,
    /// Keys the counted commands address (MULTI/EXEC wrappers excluded).
    pub keys: u64,
    /// Request bytes of the counted commands (RESP).
    pub bytes: u64,
    /// Commands that count (MULTI/EXEC wrappers excluded).
    pub counted: u64,
}

impl Lane {
    fn new(node: usize, commands: Vec<Cmd>) -> Lane {
        let keys = commands.iter().map(|c| c.keys).sum();
        let bytes = commands.iter().map(|c| c.bytes).sum();
        Lane {
            node,
            counted: commands.len() as u64,
            commands: commands.into_iter().filter_map(|c| c.args).collect(),
            keys,
            bytes,
        }
    }

    /// What the lane puts on its node.
    pub fn load(&self) -> LaneLoad {
        LaneLoad {
            node: self.node,
            commands: self.counted,
            keys: self.keys,
            bytes: self.bytes,
        }
    }
}

/// What one lane (one pipeline on one connection) puts on its node: the shape the cost model
/// reads. Strategies' plans and client profiles' waves both come down to waves of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaneLoad {
    /// The node (index into the node list the plan was built on).
    pub node: usize,
    /// Commands that count.
    pub commands: u64,
    /// Keys they address.
    pub keys: u64,
    /// Their request bytes (RESP).
    pub bytes: u64,
}

/// Lanes sent together; the client waits for all of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Wave {
    /// The lanes.
    pub lanes: Vec<Lane>,
}

/// How a batch is executed under a strategy.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExecPlan {
    /// Waves, in order.
    pub waves: Vec<Wave>,
    /// Per node, the commands that count (MULTI/EXEC wrappers excluded).
    pub commands_per_node: BTreeMap<usize, u64>,
}

/// Why a batch cannot be executed for real.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// A multi-key command that does not split into single-key commands (SUNION, scripts, …).
    #[error(
        "{0} does not split into single-key commands; bench runs MGET/MSET/DEL/EXISTS/UNLINK/TOUCH and single-key commands"
    )]
    Unsplittable(String),
    /// A key lands on a slot no node serves.
    #[error("a key lands on slot {0}, which no node serves")]
    Unserved(u16),
    /// A command bench must not run: it could touch what is not under its prefix.
    #[error("{command}: {why}")]
    Refused {
        /// The command.
        command: String,
        /// Why.
        why: &'static str,
    },
}

/// Why bench must not run `op`, or `None`: it runs only data commands whose every key it knows
/// (from the server's key specifications) and so can put under its prefix.
pub fn bench_refusal(op: &Op) -> Option<&'static str> {
    if !op.known {
        return Some(
            "not a command of Redis 7.0 to 8.2 or Valkey 8.1 to 9.1 (a module's, or a newer server's), so bench cannot know which of its arguments are keys to put under its prefix",
        );
    }
    let Ok(cmd) = crate::command::table().lookup(&op.args) else {
        return Some("not a command the server knows as written");
    };
    if cmd.is_script() || cmd.in_category("@scripting") {
        return Some("a script can touch any key, not only those under the bench prefix");
    }
    if cmd.has_flag("admin") || cmd.in_category("@admin") || cmd.in_category("@dangerous") {
        return Some("an administrative or dangerous command; bench runs data commands only");
    }
    if cmd.in_category("@pubsub") {
        return Some("a pub/sub command; bench runs data commands only");
    }
    if op.keys.is_empty() && !matches!(cmd.name.as_str(), "ping" | "echo") {
        return Some("it addresses no key, so bench cannot confine it to its prefix");
    }
    if cmd.has_flag("blocking") {
        return Some("a blocking command would wait for its whole timeout on bench's empty keys");
    }
    None
}

fn splits(command: &str) -> bool {
    matches!(
        command,
        "MGET" | "MSET" | "MSETNX" | "DEL" | "EXISTS" | "UNLINK" | "TOUCH"
    )
}

/// The single-key commands of `op` (MGET → GET per key, …), or the op itself when it has at
/// most one key.
/// A command's arguments (name first).
type Args = Vec<Vec<u8>>;

/// One command of a plan: its arguments where bench is to send them (the model's plan keeps
/// only what the cost model reads), its request bytes and the keys it addresses.
struct Cmd {
    args: Option<Args>,
    bytes: u64,
    keys: u64,
}

impl Cmd {
    /// A command of these arguments (`lens`: their lengths), made only in `Strict` mode.
    fn new(
        mode: Mode,
        count: usize,
        lens: impl Iterator<Item = usize>,
        keys: u64,
        args: impl FnOnce() -> Args,
    ) -> Cmd {
        Cmd {
            args: (mode == Mode::Strict).then(args),
            bytes: super::resp_bytes_of(count, lens),
            keys,
        }
    }

    /// `op` sent as it is (its keys moved onto `retag`, when given: see [`Retag`]).
    fn whole(op: &Op, mode: Mode, keys: u64, retag: Retag<'_>) -> Cmd {
        let lens: Box<dyn Iterator<Item = usize>> = match retag.0 {
            None => Box::new(op.args.iter().map(Vec::len)),
            Some(_) => {
                let mut is_key = vec![false; op.args.len()];
                for &i in &op.key_at {
                    if let Some(x) = is_key.get_mut(i) {
                        *x = true;
                    }
                }
                Box::new(op.args.iter().zip(is_key).map(move |(a, key)| match key {
                    true => retag.len(a),
                    false => a.len(),
                }))
            }
        };
        Cmd::new(mode, op.args.len(), lens, keys, || op.args.clone())
    }
}

/// The tag a batch's keys are moved onto, as [`onto_one_tag`] moves them (`{T}` and the key
/// without braces), for the model to cost the moved batch from the lengths alone; `None`:
/// keys as they are.
#[derive(Clone, Copy)]
struct Retag<'t>(Option<&'t [u8]>);

impl Retag<'_> {
    /// The length of `key` once moved.
    fn len(self, key: &[u8]) -> usize {
        match self.0 {
            None => key.len(),
            Some(t) => {
                let braces = key.iter().filter(|&&c| c == b'{' || c == b'}').count();
                t.len() + 2 + key.len() - braces
            }
        }
    }

    /// `key` once moved.
    fn key(self, key: &[u8]) -> std::borrow::Cow<'_, [u8]> {
        match self.0 {
            None => std::borrow::Cow::Borrowed(key),
            Some(t) => {
                let mut out = Vec::with_capacity(t.len() + key.len() + 2);
                out.push(b'{');
                out.extend_from_slice(t);
                out.push(b'}');
                out.extend(key.iter().filter(|&&c| c != b'{' && c != b'}'));
                std::borrow::Cow::Owned(out)
            }
        }
    }
}

/// How strictly a plan is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// What bench can execute: refuses what it cannot.
    Strict,
    /// The simulator's best effort: never refuses.
    Model,
}

/// Where a command goes.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// Any node (a command without a key, or one whose place is not needed).
    Any,
    /// A cluster's slot (a key a Redis Enterprise database's hashing policy refuses has none:
    /// `u16::MAX`, which no node serves).
    Slot(u16),
    /// A ring's server (a ring has no slots), if it has one.
    Server(Option<usize>),
}

/// The place of `key` on `topo`.
fn place_on(topo: &Topology, key: &[u8]) -> Place {
    match topo {
        Topology::Cluster(m) => Place::Slot(m.slot_of(key).unwrap_or(u16::MAX)),
        Topology::Ring(_) => Place::Server(topo.node_of(key)),
    }
}

/// The commands of `op` with the place of their key (worked out only when `places`).
fn per_key(
    op: &Op,
    mode: Mode,
    topo: &Topology,
    places: bool,
    retag: Retag<'_>,
) -> Result<Vec<(Place, Cmd)>, ExecError> {
    let place = |k: &[u8]| match places {
        true => place_on(topo, &retag.key(k)),
        false => Place::Any,
    };
    if op.keys.is_empty() {
        return Ok(vec![(Place::Any, Cmd::whole(op, mode, 0, retag))]);
    }
    if op.keys.len() == 1 && !splits(&op.command) {
        return Ok(vec![(place(&op.keys[0]), Cmd::whole(op, mode, 1, retag))]);
    }
    if !splits(&op.command) && mode == Mode::Strict {
        return Err(ExecError::Unsplittable(op.command.clone()));
    }
    let single = op.single_key_command().as_bytes();
    Ok(op
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let v = op.values.get(i);
            let lens = [single.len(), retag.len(k)]
                .into_iter()
                .chain(v.map(Vec::len));
            let cmd = Cmd::new(mode, 2 + usize::from(v.is_some()), lens, 1, || {
                let mut args = vec![single.to_vec(), k.clone()];
                args.extend(v.cloned());
                args
            });
            (place(k), cmd)
        })
        .collect())
}

/// The batch with every key moved onto the first key's hash tag: `{T}` + the key without
/// braces, T being what Redis hashes for the first key (its tag, or the whole key).
pub fn onto_one_tag(b: &Batch) -> Batch {
    let Some(first) = b.keys().next() else {
        return b.clone();
    };
    let tag = hash_tag(first).to_vec();
    b.map_keys(|k| {
        let mut out = Vec::with_capacity(tag.len() + k.len() + 2);
        out.push(b'{');
        out.extend_from_slice(&tag);
        out.push(b'}');
        out.extend(k.iter().filter(|&&c| c != b'{' && c != b'}'));
        out
    })
}

/// The execution plan of `b` under `strategy` on `topo`, as `keyplan bench` runs it. For
/// `Hashtag`, pass the batch rewritten with [`onto_one_tag`].
pub fn exec_plan(b: &Batch, topo: &Topology, strategy: Strategy) -> Result<ExecPlan, ExecError> {
    build(b, topo, strategy, Mode::Strict, Retag(None)).map(|(p, _)| p)
}

/// The plan the simulator costs: [`exec_plan`]'s, never refused (see the module docs), with
/// each lane's commands counted, not copied (`commands` is empty: the cost model reads the
/// counts, keys and bytes, which are the strict plan's). For `Hashtag`, pass the batch
/// rewritten with [`onto_one_tag`]. Also returns how many commands were left out because their
/// key's slot has no node.
pub fn model_plan(b: &Batch, topo: &Topology, strategy: Strategy) -> (ExecPlan, usize) {
    build(b, topo, strategy, Mode::Model, Retag(None))
        .expect("invariant: the model mode never refuses")
}

/// [`model_plan`] of `Hashtag` for `b` moved onto one tag, without the moved copy
/// [`onto_one_tag`] makes: the model reads only the moved keys' lengths (and the first key's
/// slot).
pub fn model_plan_on_one_tag(b: &Batch, topo: &Topology) -> (ExecPlan, usize) {
    let tag = b.keys().next().map(|first| hash_tag(first).to_vec());
    build(
        b,
        topo,
        Strategy::Hashtag,
        Mode::Model,
        Retag(tag.as_deref()),
    )
    .expect("invariant: the model mode never refuses")
}

/// What a plan costs under a network model.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    /// Waves the client waits for.
    pub round_trips: u64,
    /// Connections used at once (the widest wave).
    pub connections: u64,
    /// A lone client's wall-clock time (the load model's latency).
    pub latency_ms: f64,
}

/// The cost of waves of lanes: per wave, the slowest node's time; waves add up. The one cost
/// model of strategies ([`cost`]) and client profiles alike.
pub fn cost_waves(waves: &[Vec<LaneLoad>], net: &super::NetworkModel) -> Cost {
    let latency_ms = if waves.is_empty() {
        0.0
    } else {
        super::perf::demands(waves, 0, &net.perf, None).latency_us / 1000.0
    };
    Cost {
        round_trips: waves.len() as u64,
        connections: waves.iter().map(|w| w.len() as u64).max().unwrap_or(0),
        latency_ms,
    }
}

/// What waves of lanes put on each node, in node order (nodes with no lane left out), named
/// from `nodes`.
pub fn node_loads(waves: &[Vec<LaneLoad>], nodes: &[Node]) -> Vec<super::NodeLoad> {
    let mut load: BTreeMap<usize, super::NodeLoad> = BTreeMap::new();
    for l in waves.iter().flatten() {
        let e = load.entry(l.node).or_insert_with(|| super::NodeLoad {
            node: nodes
                .get(l.node)
                .map(|n| n.name.clone())
                .unwrap_or_default(),
            address: nodes.get(l.node).and_then(|n| n.address.clone()),
            commands: 0,
            keys: 0,
            bytes: 0,
        });
        e.commands += l.commands;
        e.keys += l.keys;
        e.bytes += l.bytes;
    }
    load.into_values().collect()
}

/// How one batch is executed, as the cost model reads it. A strategy's plan carries the
/// commands themselves (bench sends them); a client profile's waves, after its splits and
/// redirects, carry only what each wave puts on each node (bench never runs a profile). Both
/// are costed by the one [`Execution::load`].
#[derive(Debug, Clone, PartialEq)]
pub enum Execution<'p> {
    /// A strategy's plan ([`exec_plan`], [`model_plan`]).
    Commands(&'p ExecPlan),
    /// A client profile's waves: per wave, one lane load per node it sends to.
    ClientWaves(Vec<Vec<LaneLoad>>),
}

impl Execution<'_> {
    /// The waves of lane loads.
    pub fn lane_loads(&self) -> std::borrow::Cow<'_, [Vec<LaneLoad>]> {
        match self {
            Execution::Commands(plan) => std::borrow::Cow::Owned(plan.lane_loads()),
            Execution::ClientWaves(waves) => std::borrow::Cow::Borrowed(waves),
        }
    }

    /// The full figures: [`cost_waves`], [`node_loads`] and the predicted throughput, with
    /// the nodes named from `nodes`.
    pub fn load(&self, nodes: &[Node], net: &super::NetworkModel) -> super::BatchLoad {
        batch_load(&self.lane_loads(), nodes, net)
    }
}

fn batch_load(
    waves: &[Vec<LaneLoad>],
    nodes: &[Node],
    net: &super::NetworkModel,
) -> super::BatchLoad {
    let c = cost_waves(waves, net);
    let d = super::perf::demands(waves, nodes.len(), &net.perf, net.hot);
    let p = super::perf::predict_waves(&d, &net.perf, net.concurrency, waves.len() as f64);
    let nodes = node_loads(waves, nodes);
    super::BatchLoad {
        round_trips: c.round_trips,
        nodes_touched: nodes.len(),
        commands: nodes.iter().map(|n| n.commands).sum(),
        connections: c.connections,
        bytes: nodes.iter().map(|n| n.bytes).sum(),
        latency_ms: c.latency_ms,
        qps: if waves.is_empty() { 0.0 } else { p.qps },
        p50_ms: p.p50_ms,
        p99_ms: p.p99_ms,
        nodes,
    }
}

impl ExecPlan {
    /// The plan as waves of lane loads (what the cost model reads).
    pub fn lane_loads(&self) -> Vec<Vec<LaneLoad>> {
        self.waves
            .iter()
            .map(|w| w.lanes.iter().map(Lane::load).collect())
            .collect()
    }
}

/// The cost of `plan` ([`cost_waves`] of its lanes).
pub fn cost(plan: &ExecPlan, net: &super::NetworkModel) -> Cost {
    cost_waves(&plan.lane_loads(), net)
}

fn build(
    b: &Batch,
    topo: &Topology,
    strategy: Strategy,
    mode: Mode,
    retag: Retag<'_>,
) -> Result<(ExecPlan, usize), ExecError> {
    let mut unplaced = 0;
    let node_of = |place: Place| -> Result<Option<usize>, ExecError> {
        match place {
            Place::Any => Ok(Some(0).filter(|_| !topo.nodes().is_empty())),
            Place::Server(n) => Ok(n),
            Place::Slot(s) => match topo.node_of_slot(s) {
                Some(n) => Ok(Some(n)),
                None if mode == Mode::Model => Ok(None),
                None => Err(ExecError::Unserved(s)),
            },
        }
    };
    if mode == Mode::Strict
        && let Some((op, why)) = b.ops.iter().find_map(|o| bench_refusal(o).map(|w| (o, w)))
    {
        return Err(ExecError::Refused {
            command: op.command.clone(),
            why,
        });
    }
    let mut plan = ExecPlan::default();
    if strategy == Strategy::Hashtag {
        let Some(first) = b.keys().next() else {
            return Ok((plan, 0));
        };
        let Some(node) = node_of(place_on(topo, &retag.key(first)))? else {
            return Ok((plan, b.keys().count()));
        };
        let mut commands: Vec<Cmd> = Vec::new();
        let kind = if b.kind == BatchKind::Script && mode == Mode::Model {
            // The simulator's best effort: the script's keys, one command each, one trip.
            BatchKind::Pipeline
        } else {
            b.kind
        };
        match kind {
            BatchKind::Script => {
                return Err(ExecError::Unsplittable(
                    b.ops.first().map(|o| o.command.clone()).unwrap_or_default(),
                ));
            }
            BatchKind::MultiKey => {
                // One command with every key (they share one slot now).
                commands.extend(
                    b.ops
                        .iter()
                        .map(|o| Cmd::whole(o, mode, o.keys.len() as u64, retag)),
                );
            }
            BatchKind::Pipeline | BatchKind::Multi => {
                // One node takes them all: their slots are not needed.
                for op in &b.ops {
                    commands.extend(
                        per_key(op, mode, topo, false, retag)?
                            .into_iter()
                            .map(|(_, c)| c),
                    );
                }
            }
        }
        plan.commands_per_node.insert(node, commands.len() as u64);
        let mut lane = Lane::new(node, commands);
        if kind == BatchKind::Multi && mode == Mode::Strict {
            // The wrappers are sent (and are not counted).
            lane.commands.insert(0, vec![b"MULTI".to_vec()]);
            lane.commands.push(vec![b"EXEC".to_vec()]);
        }
        plan.waves.push(Wave { lanes: vec![lane] });
        return Ok((plan, 0));
    }
    let mut cmds: Vec<(usize, Place, Cmd)> = Vec::new();
    for op in &b.ops {
        for (place, c) in per_key(op, mode, topo, true, retag)? {
            match node_of(place)? {
                Some(n) => cmds.push((n, place, c)),
                None => unplaced += 1,
            }
        }
    }
    for (n, _, _) in &cmds {
        *plan.commands_per_node.entry(*n).or_default() += 1;
    }
    match strategy {
        Strategy::Serial => {
            for (node, _, c) in cmds {
                plan.waves.push(Wave {
                    lanes: vec![Lane::new(node, vec![c])],
                });
            }
        }
        Strategy::Pipeline | Strategy::Parallel => {
            let mut per_node: BTreeMap<usize, Vec<Cmd>> = BTreeMap::new();
            for (node, _, c) in cmds {
                per_node.entry(node).or_default().push(c);
            }
            let lanes: Vec<Lane> = per_node
                .into_iter()
                .map(|(node, commands)| Lane::new(node, commands))
                .collect();
            if strategy == Strategy::Pipeline {
                plan.waves = lanes.into_iter().map(|l| Wave { lanes: vec![l] }).collect();
            } else if !lanes.is_empty() {
                plan.waves.push(Wave { lanes });
            }
        }
        Strategy::SlotParallel => {
            let mut per_slot: BTreeMap<(usize, u16), Vec<Cmd>> = BTreeMap::new();
            for (node, place, c) in cmds {
                let slot = match place {
                    Place::Slot(s) => s,
                    Place::Any | Place::Server(_) => 0,
                };
                per_slot.entry((node, slot)).or_default().push(c);
            }
            let lanes: Vec<Lane> = per_slot
                .into_iter()
                .map(|((node, _), commands)| Lane::new(node, commands))
                .collect();
            if !lanes.is_empty() {
                plan.waves.push(Wave { lanes });
            }
        }
        Strategy::Hashtag => unreachable!("handled above"),
    }
    Ok((plan, unplaced))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::{NetworkModel, parse_batches, simulate};
    use crate::slot::key_slot;
    use crate::topology::SlotMap;

    /// The simulator's numbers are the cost of the very plan bench executes: for every batch
    /// bench can run and every strategy, the strict plan equals the model plan, and
    /// `simulate` reports its waves, lanes, per-node commands, keys, bytes and cost.
    #[test]
    fn simulate_is_the_cost_of_the_plan_bench_executes() {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let net = NetworkModel::default();
        let text = "MGET hello somekey x bar a b foo{hash_tag}\nPIPELINE GET session:9; ZADD board 1 x; HGET cart:7 items\nMULTI SET {u}a 1; INCR {u}b\nMSET a 1 b 2 c 3\nDEL k1 k2 k3 k4\nPIPELINE PING; GET a\n";
        for b in parse_batches(text).unwrap() {
            for s in Strategy::ALL {
                let input = if s == Strategy::Hashtag {
                    onto_one_tag(&b)
                } else {
                    b.clone()
                };
                let strict = exec_plan(&input, &t, s).unwrap();
                let (model, unplaced) = model_plan(&input, &t, s);
                // The same plan, as the cost model reads it: waves of lanes, each with its
                // node, commands, keys and bytes, and the commands per node.
                assert_eq!(strict.lane_loads(), model.lane_loads(), "{} {s:?}", b.name);
                assert_eq!(
                    strict.commands_per_node, model.commands_per_node,
                    "{} {s:?}",
                    b.name
                );
                assert!(
                    model
                        .waves
                        .iter()
                        .flat_map(|w| &w.lanes)
                        .all(|l| l.commands.is_empty())
                );
                assert_eq!(unplaced, 0);
                let r = simulate(&b, &t, s, &net);
                let c = cost(&strict, &net);
                assert_eq!(r.load.round_trips, c.round_trips, "{} {s:?}", b.name);
                assert_eq!(r.load.connections, c.connections, "{} {s:?}", b.name);
                assert_eq!(r.load.latency_ms, c.latency_ms, "{} {s:?}", b.name);
                let lanes: Vec<&Lane> = strict.waves.iter().flat_map(|w| &w.lanes).collect();
                assert_eq!(r.load.bytes, lanes.iter().map(|l| l.bytes).sum::<u64>());
                let per_node = r.load.commands_per_node();
                let planned: Vec<(String, u64)> = strict
                    .commands_per_node
                    .iter()
                    .map(|(&n, &c)| (t.nodes()[n].name.clone(), c))
                    .collect();
                assert_eq!(planned, per_node, "{} {s:?}", b.name);
                // Every key of the batch is addressed once (keyless commands aside).
                let keys: u64 = r.load.nodes.iter().map(|n| n.keys).sum();
                assert_eq!(keys, b.keys().count() as u64, "{} {s:?}", b.name);
            }
        }
    }

    /// The model's plan of a batch moved onto one tag, worked out from the lengths, is the
    /// plan of the moved copy: the same lanes, keys and bytes, and the same first slot.
    #[test]
    fn the_one_tag_plan_needs_no_copy() {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let text = "MGET hello somekey x bar a b foo{hash_tag}\nMGET {u}a {}b c{d}e{ }}{\nPIPELINE GET session:9; ZADD board 1 {x}; HGET cart:7 items; PING\nMULTI SET {u}a 1; INCR b\nMSET a 1 {b}c 2 d{e} 3\nEVAL s 2 k{1} k2 arg\nSUNION a b{c}\nPIPELINE PING; GET a\nGET \"\"\n";
        for b in parse_batches(text).unwrap() {
            let moved = model_plan(&onto_one_tag(&b), &t, Strategy::Hashtag);
            let direct = model_plan_on_one_tag(&b, &t);
            assert_eq!(moved.0.lane_loads(), direct.0.lane_loads(), "{}", b.name);
            assert_eq!(moved.0.commands_per_node, direct.0.commands_per_node);
            assert_eq!(moved.1, direct.1);
        }
    }

    /// What bench refuses, the simulator still costs: an unsplittable command key by key, and
    /// keys on unserved slots left out and counted.
    #[test]
    fn the_model_never_refuses() {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let b = &parse_batches("SUNION a b c").unwrap()[0];
        assert!(exec_plan(b, &t, Strategy::Pipeline).is_err());
        let (p, unplaced) = model_plan(b, &t, Strategy::Pipeline);
        assert_eq!(p.commands_per_node.values().sum::<u64>(), 3);
        assert_eq!(unplaced, 0);
        let partial = Topology::parse_as(
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-8191\n",
            crate::topology::TopologyFormat::ClusterNodes,
            &crate::topology::TopologyOptions {
                allow_partial: true,
                pool: None,
            },
        )
        .unwrap();
        let b = &parse_batches("MGET hello somekey").unwrap()[0];
        assert!(exec_plan(b, &partial, Strategy::Pipeline).is_err());
        // hello → 866 (served), somekey → 11058 (not served).
        let (p, unplaced) = model_plan(b, &partial, Strategy::Pipeline);
        assert_eq!((p.waves.len(), unplaced), (1, 1));
    }

    #[test]
    fn plans_keep_arguments_and_tags() {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        // The pipeline keeps ZADD's arguments.
        let b = &parse_batches("PIPELINE ZADD board 1 x").unwrap()[0];
        let p = exec_plan(b, &t, Strategy::Pipeline).unwrap();
        assert_eq!(
            p.waves[0].lanes[0].commands[0],
            vec![
                b"ZADD".to_vec(),
                b"board".to_vec(),
                b"1".to_vec(),
                b"x".to_vec()
            ]
        );
        // One tag: every key hashes to the first key's slot.
        let b = &parse_batches("MGET user:1 user:2 {x}y").unwrap()[0];
        let one = onto_one_tag(b);
        let slots: Vec<u16> = one.keys().map(key_slot).collect();
        assert!(slots.iter().all(|&s| s == key_slot(b"user:1")), "{slots:?}");
        assert!(
            exec_plan(
                &parse_batches("SUNION a b").unwrap()[0],
                &t,
                Strategy::Pipeline
            )
            .is_err()
        );
    }
}
