//! Slot migrations: the plans `redis-cli --cluster rebalance` and `reshard` would
//! execute, a load-aware plan that balances what a key sample says, and what any plan does to
//! every node. Pure: no I/O, no printing; keyplan never executes a migration.
//!
//! The cluster is seen the way redis-cli's cluster manager sees it ([`ClusterView`]): the node
//! it connects to first, then the other nodes in the order of that node's `CLUSTER NODES`
//! reply. That order decides ties in redis-cli's algorithms, so it is kept exactly.

pub mod apply;
pub mod balance;
pub mod emit;
pub mod impact;
pub mod load_aware;
pub mod managed;
pub mod redis_cli;
pub mod scheme_change;
pub mod timing;
pub mod verify;

use crate::slot::SLOT_COUNT;
use crate::topology::nodes::{self, NodeLine};
use crate::topology::{Migration, NO_OWNER, Node, SlotMap, TopologyError, format_ranges};
use impact::{ByteSize, Rate, emptied_early, migration_seconds, over_budget};
use std::fmt;

/// A node as redis-cli's cluster manager sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewNode {
    /// The name keyplan prints: the address when known.
    pub name: String,
    /// The 40-character node id, when known.
    pub id: Option<String>,
    /// `host:port`, when known.
    pub address: Option<String>,
    /// A master (else a replica).
    pub master: bool,
    /// Replicas of this master.
    pub replicas: usize,
    /// Previewed as added by `--add-node` (not yet in the cluster).
    pub added: bool,
}

impl ViewNode {
    /// The node as the topology module describes it.
    pub fn to_node(&self) -> Node {
        Node {
            name: self.name.clone(),
            id: self.id.clone(),
            address: self.address.clone(),
            flags: Vec::new(),
            replicas: self.replicas,
        }
    }
}

/// A cluster in redis-cli's node order, with each slot's owner.
#[derive(Debug, Clone)]
pub struct ClusterView {
    /// Nodes in redis-cli's order (the entry node first).
    pub nodes: Vec<ViewNode>,
    /// Owner of each slot (index into `nodes`), `None` when unserved.
    pub owner: Vec<Option<usize>>,
    /// Slots left open (migrating/importing) by an earlier migration.
    pub open: Vec<Migration>,
    /// Nodes redis-cli leaves out of its view (failed, without address, disconnected).
    pub skipped: Vec<String>,
}

/// Why a migration cannot be planned.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MigrateError {
    /// The topology cannot be read.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// redis-cli's cluster check would fail, so redis-cli would refuse to move anything.
    #[error(
        "{problem}: redis-cli would refuse (\"*** Please fix your cluster problems before {action}\")"
    )]
    ClusterProblem {
        /// What the check finds.
        problem: String,
        /// `rebalancing` or `resharding`.
        action: &'static str,
    },
    /// A weight names no node.
    #[error(
        "the weight of {0}: no node id starts with '{0}' (redis-cli: \"*** No such master node {0}\")"
    )]
    NoSuchNode(String),
    /// A node given as a source or the target names no master.
    #[error(
        "the {} {name}: not a known master (give a full node id, or the address for a topology without ids)",
        input.words()
    )]
    NotAMaster {
        /// Which input named it.
        input: PlanInput,
        /// What was given.
        name: String,
    },
    /// One of the plan's inputs cannot be used.
    #[error("the {}{}: {problem}", input.words(), value.as_deref().map(|v| format!(" {v}")).unwrap_or_default())]
    Input {
        /// Which input.
        input: PlanInput,
        /// Its value, when it has one worth repeating.
        value: Option<String>,
        /// What is wrong.
        problem: Problem,
    },
    /// The plan cannot be made (redis-cli would stop too).
    #[error("{0}")]
    Invalid(String),
}

/// An input of a migration plan, as the user gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanInput {
    /// A node's weight.
    Weight,
    /// A node to add.
    AddNode,
    /// A node to remove.
    RemoveNode,
    /// A source of a reshard.
    From,
    /// The target of a reshard.
    To,
    /// How many slots a reshard moves.
    Slots,
    /// The commands to write for the plan.
    Emit,
    /// The migration's rate.
    MigrateRate,
    /// The bytes each node may hold.
    MaxNodeBytes,
    /// The most skew a load-aware plan may leave on another weight.
    MaxSkew,
}

/// How the user names a plan's inputs (on the command line, its flags): the words a warning
/// uses to point at the input that changes it.
pub type InputNames = fn(PlanInput) -> &'static str;

impl PlanInput {
    /// The input in words.
    pub fn words(self) -> &'static str {
        match self {
            PlanInput::Weight => "weight",
            PlanInput::AddNode => "node to add",
            PlanInput::RemoveNode => "node to remove",
            PlanInput::From => "source",
            PlanInput::To => "target",
            PlanInput::Slots => "slot count",
            PlanInput::Emit => "commands to write",
            PlanInput::MigrateRate => "migration rate",
            PlanInput::MaxNodeBytes => "byte budget per node",
            PlanInput::MaxSkew => "skew limit",
        }
    }
}

/// What is wrong with an input of a plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A reshard moves 1 to 16384 slots.
    #[error("redis-cli moves between 1 and 16384 slots")]
    SlotCount,
    /// A source named twice.
    #[error("listed twice (redis-cli would plan its slots twice)")]
    ListedTwice,
    /// A replica to remove.
    #[error("a replica holds no slots; `redis-cli --cluster del-node` removes it directly")]
    Replica,
    /// Not `host:port`.
    #[error("not a host:port address")]
    NotAddress,
    /// A node to add that is there already.
    #[error("that node is already in the cluster")]
    InCluster,
    /// Commands need node ids.
    #[error("needs node ids and addresses, and {0} has none")]
    NoIds(String),
    /// A node id that is not 40 hexadecimal digits: never written into a script.
    #[error(
        "{0}'s id {1} is not a cluster node id (40 hexadecimal digits); check the topology file"
    )]
    BadId(String, String),
    /// An address a script cannot carry.
    #[error("{0}'s address {1} holds a space or a control character")]
    BadAddress(String, String),
    /// Commands need addresses.
    #[error("needs every node's address, and {0} has none")]
    NoAddress(String),
    /// Commands need a node of the cluster to connect to.
    #[error("needs the address of a node of the cluster")]
    NoEntry,
    /// redis-cli's reshard takes a source's lowest slots only.
    #[error(
        "`redis-cli --cluster reshard` always moves a source's lowest-numbered slots, and this plan moves other slots of {0}"
    )]
    NotLowestFirst(String),
    /// A rate in bytes, or a byte budget, without bytes in the sample.
    #[error("needs bytes in the sample")]
    NeedsBytes,
}

/// Slots moving from one node to another, in execution order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// Source node (index into [`ClusterView::nodes`]).
    pub from: usize,
    /// Destination node.
    pub to: usize,
    /// The slots, in the order they move.
    pub slots: Vec<u16>,
}

impl ClusterView {
    /// The view redis-cli has after connecting to the node whose `CLUSTER NODES` reply is
    /// `text`: the `myself` node first, then the others in listing order; nodes flagged `fail`
    /// or `noaddr`, or whose link is `disconnected`, are left out as redis-cli leaves them out.
    pub fn from_cluster_nodes(text: &str) -> Result<ClusterView, MigrateError> {
        let parsed = nodes::parse(text)?;
        let mut order: Vec<&NodeLine> = Vec::with_capacity(parsed.lines.len());
        if let Some(me) = parsed
            .lines
            .iter()
            .find(|l| l.flags.iter().any(|f| f == "myself"))
        {
            order.push(me);
        }
        let mut skipped = Vec::new();
        for l in &parsed.lines {
            if l.flags.iter().any(|f| f == "myself") {
                continue;
            }
            let bad = l.flags.iter().any(|f| f == "fail" || f == "noaddr")
                || l.link_state == "disconnected"
                || l.address.is_none();
            if bad {
                skipped.push(l.name.clone());
                continue;
            }
            order.push(l);
        }
        let mut view_nodes: Vec<ViewNode> = order
            .iter()
            .map(|l| ViewNode {
                name: l.name.clone(),
                id: Some(l.id.clone()),
                address: l.address.clone(),
                master: l.flags.iter().any(|f| f == "master"),
                replicas: 0,
                added: false,
            })
            .collect();
        for l in &order {
            if let Some(m) = &l.master_of
                && let Some(i) = order.iter().position(|x| &x.id == m)
            {
                view_nodes[i].replicas += 1;
            }
        }
        // Owners: parsed.owner indexes parsed.masters; map them to view positions.
        let mut owner = vec![None; SLOT_COUNT];
        for (s, o) in parsed.owner.iter().enumerate() {
            if let Some(o) = o {
                let id = parsed.masters[*o as usize].id.as_deref();
                owner[s] = view_nodes.iter().position(|n| n.id.as_deref() == id);
            }
        }
        Ok(ClusterView {
            nodes: view_nodes,
            owner,
            open: parsed.migrations,
            skipped,
        })
    }

    /// The view of a slot map from any other source (`--masters N`, keyplan YAML, CLUSTER
    /// SHARDS/SLOTS): every node is a master, in the map's order.
    pub fn from_slot_map(map: &SlotMap) -> ClusterView {
        let nodes = map
            .nodes()
            .iter()
            .map(|n| ViewNode {
                name: n.name.clone(),
                id: n.id.clone(),
                address: n.address.clone(),
                master: true,
                replicas: n.replicas,
                added: false,
            })
            .collect();
        let owner = (0..SLOT_COUNT as u16)
            .map(|s| map.owner_of_slot(s))
            .collect();
        ClusterView {
            nodes,
            owner,
            open: map.migrations().to_vec(),
            skipped: Vec::new(),
        }
    }

    /// Adds an empty master at `address` (as `redis-cli --cluster add-node` would), last.
    pub fn add_node(&mut self, address: &str) -> Result<usize, MigrateError> {
        let valid = address
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
        if !valid {
            return Err(MigrateError::Input {
                input: PlanInput::AddNode,
                value: Some(address.to_string()),
                problem: Problem::NotAddress,
            });
        }
        if self
            .nodes
            .iter()
            .any(|n| n.address.as_deref() == Some(address) || n.name == address)
        {
            return Err(MigrateError::Input {
                input: PlanInput::AddNode,
                value: Some(address.to_string()),
                problem: Problem::InCluster,
            });
        }
        self.nodes.push(ViewNode {
            name: address.to_string(),
            id: None,
            address: Some(address.to_string()),
            master: true,
            replicas: 0,
            added: true,
        });
        Ok(self.nodes.len() - 1)
    }

    /// Slots owned by node `i`, ascending.
    pub fn slots_of(&self, i: usize) -> Vec<u16> {
        (0..SLOT_COUNT)
            .filter(|&s| self.owner[s] == Some(i))
            .map(|s| s as u16)
            .collect()
    }

    /// How many slots node `i` owns.
    pub fn slot_count(&self, i: usize) -> usize {
        self.owner.iter().filter(|&&o| o == Some(i)).count()
    }

    /// Indices of the masters, in view order.
    pub fn masters(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].master)
            .collect()
    }

    /// The masters that own slots (they hold keys of their own).
    pub fn key_holders(&self) -> Vec<crate::topology::Node> {
        self.masters()
            .into_iter()
            .filter(|&i| self.slot_count(i) > 0)
            .map(|i| self.nodes[i].to_node())
            .collect()
    }

    /// Every master with the slots it owns.
    pub fn master_slots(&self) -> Vec<(crate::topology::Node, Vec<u16>)> {
        self.masters()
            .into_iter()
            .map(|i| {
                let slots = (0..crate::slot::SLOT_COUNT as u16)
                    .filter(|&s| self.owner[usize::from(s)] == Some(i))
                    .collect();
                (self.nodes[i].to_node(), slots)
            })
            .collect()
    }

    /// The problems `redis-cli --cluster check` reports (open slots, unserved slots), which make
    /// rebalance and reshard refuse.
    pub fn check(&self, action: &'static str) -> Result<(), MigrateError> {
        if !self.open.is_empty() {
            let mut slots: Vec<u16> = self.open.iter().map(|m| m.slot).collect();
            slots.dedup();
            let list: Vec<String> = slots.iter().map(u16::to_string).collect();
            // A marker without its other side: a CLUSTER NODES file shows only the markers of
            // the node it was captured on, so the other side (and any slot open between two
            // other nodes) is not in it.
            let one_sided: Vec<String> = self
                .open
                .iter()
                .filter(|m| {
                    !self
                        .open
                        .iter()
                        .any(|o| o.slot == m.slot && o.node == m.peer)
                })
                .map(|m| match m.direction {
                    crate::topology::MigrationDirection::Migrating => {
                        format!("slot {} migrating from {} to {}", m.slot, m.node, m.peer)
                    }
                    crate::topology::MigrationDirection::Importing => {
                        format!("slot {} importing into {} from {}", m.slot, m.node, m.peer)
                    }
                })
                .collect();
            let sides = if one_sided.is_empty() {
                String::new()
            } else {
                format!(
                    " ({}: only this side is shown; a CLUSTER NODES file lists only the open slots of the node it was captured on, so preview with --cluster to see every master's)",
                    one_sided.join(", ")
                )
            };
            return Err(MigrateError::ClusterProblem {
                problem: format!(
                    "slots {} are open (migrating/importing){sides}; finish or fix them first (redis-cli --cluster fix)",
                    list.join(",")
                ),
                action,
            });
        }
        let unserved: Vec<(u16, u16)> = ranges(
            (0..SLOT_COUNT)
                .filter(|&s| self.owner[s].is_none())
                .map(|s| s as u16),
        );
        if !unserved.is_empty() {
            return Err(MigrateError::ClusterProblem {
                problem: format!(
                    "not all 16384 slots are covered (unserved: {})",
                    format_ranges(&unserved)
                ),
                action,
            });
        }
        Ok(())
    }

    /// Finds a node by full id (case-insensitive, as `clusterManagerNodeByName`), or, for
    /// nodes without ids, by name or address.
    pub fn node_by_name(&self, name: &str) -> Option<usize> {
        let lc = name.to_ascii_lowercase();
        self.nodes
            .iter()
            .position(|n| n.id.as_deref() == Some(lc.as_str()))
            .or_else(|| {
                self.nodes
                    .iter()
                    .position(|n| n.name == name || n.address.as_deref() == Some(name))
            })
    }

    /// The owners after `moves` are applied in order.
    pub fn owners_after(&self, moves: &[Move]) -> Vec<Option<usize>> {
        let mut owner = self.owner.clone();
        for m in moves {
            for &s in &m.slots {
                owner[s as usize] = Some(m.to);
            }
        }
        owner
    }

    /// A slot map of the masters (in view order) with `owner` as ownership, for the simulator.
    pub fn slot_map(&self, owner: &[Option<usize>]) -> SlotMap {
        let masters = self.masters();
        let mut index = vec![NO_OWNER; self.nodes.len()];
        for (k, &i) in masters.iter().enumerate() {
            index[i] = k as u16;
        }
        let nodes = masters.iter().map(|&i| self.nodes[i].to_node()).collect();
        let owner = owner
            .iter()
            .map(|o| o.map_or(NO_OWNER, |i| index[i]))
            .collect();
        SlotMap {
            nodes,
            owner,
            migrations: Vec::new(),
            enterprise: None,
        }
    }
}

/// One plan and its effect, as reported (JSON: flattened into the report or under `compare`).
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct MigrationPlan {
    /// Which algorithm: `redis-cli rebalance`, `redis-cli reshard`, `load-aware`.
    pub plan: String,
    /// What it balances: `slots`, `keys`, `bytes`, `ops`.
    pub balance_by: String,
    /// Whether anything moves.
    pub needed: bool,
    /// What redis-cli would print instead of moving (e.g. "No rebalancing needed").
    pub message: Option<String>,
    /// The effect on every node.
    #[serde(flatten)]
    pub impact: impact::Impact,
    /// Estimated migration time in seconds (with `--migrate-rate`).
    pub migration_seconds: Option<f64>,
}

/// How many keys of each master a live sample reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerMaster {
    /// Every key.
    All,
    /// Up to this many.
    UpTo(u64),
}

impl fmt::Display for PerMaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerMaster::All => f.write_str("every key"),
            PerMaster::UpTo(n) => write!(f, "up to {n} keys per master"),
        }
    }
}

/// One source of a preview's key sample; JSON and tables show its words.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleSource {
    /// A key dump or snapshot, by name.
    Dump(String),
    /// The servers' exact key counts per slot (`CLUSTER COUNTKEYSINSLOT`).
    ExactCounts,
    /// Bytes from `MEMORY USAGE` of the sampled keys.
    MemoryUsage(PerMaster),
    /// A live sample (with `MEMORY USAGE` of each key when `bytes`).
    Live {
        /// How many keys per master.
        per_master: PerMaster,
        /// With bytes.
        bytes: bool,
    },
    /// CPU and network per slot from `CLUSTER SLOT-STATS`, since when in words.
    SlotStats(String),
}

impl fmt::Display for SampleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleSource::Dump(name) => f.write_str(name),
            SampleSource::ExactCounts => f.write_str("the servers' exact key counts per slot"),
            SampleSource::MemoryUsage(per) => write!(f, "bytes from MEMORY USAGE of {per}"),
            SampleSource::Live { per_master, bytes } => write!(
                f,
                "a live sample of {per_master}{}",
                if *bytes { ", with MEMORY USAGE" } else { "" }
            ),
            SampleSource::SlotStats(since) => {
                write!(f, "CPU and network per slot: CLUSTER SLOT-STATS, {since}")
            }
        }
    }
}

impl serde::Serialize for SampleSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The key sample a preview is computed from.
#[derive(Debug, Clone, Default, serde::Serialize, PartialEq)]
pub struct SampleInfo {
    /// Where the keys came from (files, or a live sample).
    pub source: Vec<SampleSource>,
    /// Keys read.
    pub keys: u64,
    /// Whether bytes were given.
    pub has_bytes: bool,
    /// Whether ops were given.
    pub has_ops: bool,
    /// Factor applied to sample counts for time and budget estimates (`--scale`).
    pub scale: f64,
    /// What snapshot inputs held beyond their keys (their biggest keys per slot).
    #[serde(skip)]
    pub snapshot: Option<Box<crate::rdb::summary::SnapshotSummary>>,
    /// Keys of a live sample (by `MEMORY USAGE`) or a key dump with bytes that reach
    /// [`MIGRATE_SLOW_BYTES`], with their bytes, biggest first (snapshots name theirs in
    /// `snapshot`).
    #[serde(skip)]
    pub big_keys: Vec<(Vec<u8>, u64)>,
}

/// The preview of a migration (`keyplan rebalance --preview`, `keyplan reshard --preview`).
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct MigrationReport {
    /// `rebalance` or `reshard`.
    pub command: &'static str,
    /// Where the topology came from.
    pub topology: String,
    /// Nodes redis-cli would leave out of its view (failed, no address, disconnected).
    pub skipped_nodes: Vec<String>,
    /// The key sample.
    pub sample: SampleInfo,
    /// The plan asked for.
    #[serde(flatten)]
    pub plan: MigrationPlan,
    /// With `--balance-by keys|bytes|ops`: redis-cli's slot-count plan, for comparison.
    pub compare: Option<MigrationPlan>,
    /// Batches touching slots that move, per client profile.
    pub batches: Vec<impact::MotionReport>,
    /// Things to look at before running the plan.
    pub warnings: Vec<Warning>,
    /// The biggest keys in the slots that move, biggest first (snapshot inputs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moving_big_keys: Vec<MovingKey>,
    /// How long the plan takes key by key and with atomic slot migration (when it moves
    /// anything).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_estimate: Option<timing::TimeEstimate>,
}

impl MigrationReport {
    /// Adds the biggest keys of the slots `moves` move (ten, biggest first) and a warning for
    /// each that MIGRATE struggles with; only a snapshot sample knows its keys' sizes.
    pub fn add_moving_big_keys(&mut self, view: &ClusterView, moves: &[Move]) {
        if let Some(s) = &self.sample.snapshot {
            let (big, warnings) = moving_big_keys(view, moves, |slot| s.slot_biggest(slot), 10);
            self.moving_big_keys = big;
            self.warnings.extend(warnings);
        }
        // A live sample (MEMORY USAGE) or a dump with bytes weighed each key: every one past
        // the size MIGRATE struggles with is named, wherever its slot goes.
        for (key, bytes) in &self.sample.big_keys {
            let slot = crate::slot::key_slot(key);
            let Some(m) = moves.iter().find(|m| m.slots.contains(&slot)) else {
                continue;
            };
            let (from, to) = (&view.nodes[m.from].name, &view.nodes[m.to].name);
            let name = crate::keys::display::display_key(key);
            let text = if *bytes >= MIGRATE_FAILS_BYTES {
                format!(
                    "key {name} (slot {slot}, {} in the sample) may pass the 512 MB a node accepts in one RESTORE by default: MIGRATE of slot {slot} fails unless {to} raises proto-max-bulk-len",
                    mib(*bytes)
                )
            } else {
                format!(
                    "key {name} (slot {slot}, {} in the sample) blocks {from} and {to} while MIGRATE serializes, sends and restores it; move slot {slot} off-peak or split the key",
                    mib(*bytes)
                )
            };
            self.warnings.push(Warning {
                what: WarningKind::SampledBigKey {
                    key: crate::keys::display::ByteString(key.clone()),
                    slot,
                    memory: *bytes,
                },
                text,
            });
        }
    }
}

/// A big key in a slot that moves.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct MovingKey {
    /// The key and its figures.
    #[serde(flatten)]
    pub key: crate::rdb::summary::BigKey,
    /// The node it leaves.
    pub from: String,
    /// The node it goes to.
    pub to: String,
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// Keys whose MIGRATE fails: the RESTORE payload passes the target's `proto-max-bulk-len`
/// (512 MB by default).
pub const MIGRATE_FAILS_BYTES: u64 = 512 << 20;
/// Keys whose MIGRATE is slow enough to notice: both nodes block while the key is serialized,
/// sent and restored.
pub const MIGRATE_SLOW_BYTES: u64 = 10 << 20;
/// Collections with this many elements are slow to MIGRATE whatever their size.
pub const MIGRATE_SLOW_ELEMENTS: u64 = 100_000;

/// The biggest keys of the slots `moves` move (`top` of them, biggest first), and a warning
/// for each big enough to make MIGRATE slow or fail.
pub fn moving_big_keys(
    view: &ClusterView,
    moves: &[Move],
    biggest: impl Fn(u16) -> Option<crate::rdb::summary::BigKey>,
    top: usize,
) -> (Vec<MovingKey>, Vec<Warning>) {
    let mut all: Vec<MovingKey> = moves
        .iter()
        .flat_map(|m| m.slots.iter().map(move |&s| (m, s)))
        .filter_map(|(m, s)| {
            biggest(s).map(|key| MovingKey {
                key,
                from: view.nodes[m.from].name.clone(),
                to: view.nodes[m.to].name.clone(),
            })
        })
        .collect();
    // Largest first, then by key.
    all.sort_by(|a, b| {
        (std::cmp::Reverse(a.key.memory), &a.key.key.0)
            .cmp(&(std::cmp::Reverse(b.key.memory), &b.key.key.0))
    });
    let mut warnings = Vec::new();
    for k in &all {
        let big = &k.key;
        let elements = big.elements.unwrap_or(0);
        let name = crate::keys::display::display_key(&big.key.0);
        let serialized = big.serialized.unwrap_or(0);
        let text = if serialized >= MIGRATE_FAILS_BYTES {
            format!(
                "key {name} (slot {}, {} in the snapshot) is larger than the 512 MB a node accepts in one RESTORE by default: MIGRATE of slot {} will fail unless {} raises proto-max-bulk-len",
                big.slot,
                mib(serialized),
                big.slot,
                k.to
            )
        } else if big.memory >= MIGRATE_SLOW_BYTES || elements >= MIGRATE_SLOW_ELEMENTS {
            format!(
                "key {name} (slot {}, {} {}, ~{} in memory) blocks {} and {} while MIGRATE serializes, sends and restores it; move slot {} off-peak or split the key",
                big.slot,
                elements,
                if big.kind == "string" {
                    "bytes"
                } else {
                    "elements"
                },
                mib(big.memory),
                k.from,
                k.to,
                big.slot
            )
        } else {
            break;
        };
        warnings.push(Warning {
            what: WarningKind::BigKey {
                key: big.key.clone(),
                slot: big.slot,
                memory: big.memory,
                serialized,
                elements: big.elements,
            },
            text,
        });
    }
    all.truncate(top);
    (all, warnings)
}

/// Something to look at before running a migration plan: its kind and figures, and a sentence.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct Warning {
    /// What kind of warning, with its figures (`kind` names it in JSON).
    #[serde(flatten)]
    pub what: WarningKind,
    /// The warning in words.
    pub text: String,
}

/// The kinds of [`Warning`].
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WarningKind {
    /// `reshard`: the target is also a source; redis-cli skips it.
    TargetIsSource {
        /// The node.
        node: String,
    },
    /// `reshard`: fewer slots move than asked.
    FewerSlots {
        /// Slots the plan moves.
        planned: usize,
        /// Slots asked for.
        asked: usize,
    },
    /// A key of a live sample (its `MEMORY USAGE`) or of a dump with bytes big enough to make
    /// MIGRATE slow or fail.
    SampledBigKey {
        /// The key.
        key: crate::keys::display::ByteString,
        /// Its slot.
        slot: u16,
        /// Its `MEMORY USAGE` in bytes.
        memory: u64,
    },
    /// A key big enough to make MIGRATE slow or fail.
    BigKey {
        /// The key.
        key: crate::keys::display::ByteString,
        /// Its slot.
        slot: u16,
        /// Estimated memory.
        memory: u64,
        /// Bytes in the snapshot.
        serialized: u64,
        /// Elements (a string's length).
        elements: Option<u64>,
    },
    /// A master gives its last slot before the plan is over (it may turn into a replica).
    EmptiedEarly {
        /// The node.
        node: String,
        /// The move (from 1) in which it gives its last slot.
        step: usize,
        /// Moves in the plan.
        moves: usize,
    },
    /// A node to remove still serves slots after the plan.
    StillServes {
        /// The node.
        node: String,
    },
    /// A node would hold more bytes than `--max-node-bytes`.
    OverBudget {
        /// The node.
        node: String,
        /// Its bytes after the plan (scaled).
        bytes: f64,
        /// The budget in bytes.
        budget: f64,
    },
    /// A load-aware plan makes a weight it does not balance worse, past `--max-skew`.
    SkewWorse {
        /// keys, bytes or ops.
        weight: String,
        /// Busiest over mean before.
        before: f64,
        /// After.
        after: f64,
        /// The bound.
        max_skew: f64,
    },
    /// A node keeps slots but ends with almost none of the keys.
    NearEmpty {
        /// The node.
        node: String,
        /// Its sample keys after the plan.
        keys: u64,
        /// Its fair share of them.
        fair: f64,
    },
    /// A batch that works on the stable cluster fails while its slots move.
    BatchFails {
        /// The batch.
        batch: String,
        /// The client profile.
        client: String,
        /// The batch's slots that move.
        slots: Vec<(u16, u16)>,
    },
}

impl Warning {
    /// A warning of `what`, said as `text`.
    pub fn new(what: WarningKind, text: String) -> Warning {
        Warning { what, text }
    }
}

/// Ascending slots folded into contiguous ranges.
pub fn ranges(slots: impl IntoIterator<Item = u16>) -> Vec<(u16, u16)> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for s in slots {
        match out.last_mut() {
            Some((_, b)) if *b + 1 == s => *b = s,
            _ => out.push((s, s)),
        }
    }
    out
}

/// Slots as `[first, last]` ranges (sorted first).
pub fn sorted_ranges(slots: &[u16]) -> Vec<(u16, u16)> {
    let mut v = slots.to_vec();
    v.sort_unstable();
    ranges(v)
}

/// Slots as the `0-1364 5461-6826` text redis-cli and `CLUSTER NODES` use (sorted first).
pub fn ranges_text(slots: &[u16]) -> String {
    let mut v = slots.to_vec();
    v.sort_unstable();
    format_ranges(&ranges(v))
}

/// Fills in the time estimate and the warnings that follow from the plan.
pub fn finish_report(
    report: &mut MigrationReport,
    view: &ClusterView,
    moves: &[Move],
    rate: Option<Rate>,
    budget: Option<ByteSize>,
    names: InputNames,
) -> Result<(), MigrateError> {
    for (node, k) in emptied_early(view, moves) {
        report.warnings.push(Warning::new(
            WarningKind::EmptiedEarly {
                node: view.nodes[node].name.clone(),
                step: k + 1,
                moves: moves.len(),
            },
            format!(
                "{} gives its last slot in move {} of {}: with cluster-allow-replica-migration yes (the default) Redis then makes it a replica, and a single redis-cli run stops at the next move with \"ERR Please use SETSLOT only with masters\" (redis/redis#9223); run `CONFIG SET cluster-allow-replica-migration no` on it first, or run the moves one by one ({} redis-cli)",
                view.nodes[node].name,
                k + 1,
                moves.len(),
                names(PlanInput::Emit)
            ),
        ));
    }
    let scale = report.sample.scale;
    let has_bytes = report.sample.has_bytes;
    if let Some(r) = rate {
        let secs = migration_seconds(&report.plan.impact, r, scale, has_bytes);
        if secs.is_none() {
            return Err(MigrateError::Input {
                input: PlanInput::MigrateRate,
                value: None,
                problem: Problem::NeedsBytes,
            });
        }
        report.plan.migration_seconds = secs;
        if let Some(c) = &mut report.compare {
            c.migration_seconds = migration_seconds(&c.impact, r, scale, has_bytes);
        }
    }
    if let Some(b) = budget {
        if !has_bytes {
            return Err(MigrateError::Input {
                input: PlanInput::MaxNodeBytes,
                value: None,
                problem: Problem::NeedsBytes,
            });
        }
        for (name, bytes) in over_budget(&report.plan.impact, b.bytes, scale) {
            let text = format!(
                "{name} would hold {} after the move, {} ({:.1}%) over the {} budget of {} (keep headroom for the migration's copy of a slot's keys; add a node or move fewer slots to it)",
                b.in_unit(bytes),
                b.show(bytes - b.bytes),
                100.0 * (bytes - b.bytes) / b.bytes.max(1.0),
                names(PlanInput::MaxNodeBytes),
                b.in_unit(b.bytes)
            );
            report.warnings.push(Warning::new(
                WarningKind::OverBudget {
                    node: name,
                    bytes,
                    budget: b.bytes,
                },
                text,
            ));
        }
    }
    use crate::simulate::client::Outcome;
    let fine = |o: Outcome| matches!(o, Outcome::Ok | Outcome::NotModelled);
    for m in &report.batches {
        // Only failures the move causes: a batch that fails on the stable cluster is lint's.
        if fine(m.baseline) && (!fine(m.during) || !fine(m.after)) {
            let text = format!(
                "batch {} fails with {} while slots {} move{}",
                m.batch,
                m.client,
                format_ranges(&m.slots_in_motion),
                m.message
                    .as_deref()
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default()
            );
            let what = WarningKind::BatchFails {
                batch: m.batch.clone(),
                client: m.client.to_string(),
                slots: m.slots_in_motion.clone(),
            };
            report.warnings.push(Warning::new(what, text));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Three masters as `redis-cli --cluster create` lays them out, as CLUSTER NODES prints
    /// them (the emit and timing tests share it).
    pub(crate) const THREE_MASTERS: &str = "\
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922
cccccccccccccccccccccccccccccccccccccccc 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383
";

    const NODES: &str = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 connected
824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006 slave 292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 0 1426238317741 6 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460
";

    #[test]
    fn view_puts_myself_first_then_listing_order() {
        let v = ClusterView::from_cluster_nodes(NODES).unwrap();
        let names: Vec<&str> = v.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "127.0.0.1:30001",
                "127.0.0.1:30004",
                "127.0.0.1:30002",
                "127.0.0.1:30003",
                "127.0.0.1:30005",
                "127.0.0.1:30006"
            ]
        );
        assert_eq!(v.masters(), vec![0, 2, 3]);
        assert_eq!(v.slot_count(0), 5461);
        assert_eq!(v.slot_count(2), 5462);
        assert_eq!(v.nodes[0].replicas, 1);
        assert!(v.check("rebalancing").is_ok());
        assert_eq!(
            v.node_by_name("67ED2DB8D677E59EC4A4CEFB06858CF2A1A89FA1"),
            Some(2)
        );
        assert_eq!(v.node_by_name("67ed2db8"), None);
    }

    #[test]
    fn failed_nodes_are_left_out_and_open_slots_refused() {
        let text = NODES.replace(
            "127.0.0.1:30003@31003 master -",
            "127.0.0.1:30003@31003 master,fail -",
        );
        let v = ClusterView::from_cluster_nodes(&text).unwrap();
        assert_eq!(v.skipped, vec!["127.0.0.1:30003".to_string()]);
        let e = v.check("rebalancing").unwrap_err().to_string();
        assert!(
            e.contains("not all 16384 slots are covered (unserved: 10923-16383)"),
            "{e}"
        );
        let text = NODES.replace(
            "connected 0-5460",
            "connected 0-5460 [93->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]",
        );
        let v = ClusterView::from_cluster_nodes(&text).unwrap();
        let e = v.check("resharding").unwrap_err().to_string();
        assert!(
            e.contains("slots 93 are open") && e.contains("before resharding"),
            "{e}"
        );
    }

    #[test]
    fn add_node_checks_the_address() {
        let mut v = ClusterView::from_slot_map(&SlotMap::from_masters(3).unwrap());
        assert_eq!(v.add_node("10.0.0.9:7000").unwrap(), 3);
        assert!(v.add_node("10.0.0.9:7000").is_err());
        assert!(v.add_node("nohost").is_err());
        assert_eq!(v.masters(), vec![0, 1, 2, 3]);
        assert_eq!(v.slot_count(3), 0);
    }

    #[test]
    fn ranges_fold() {
        assert_eq!(ranges_text(&[5, 1, 2, 3, 9]), "1-3 5 9");
    }
}
