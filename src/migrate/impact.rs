//! What a plan does to every node, from a key sample: slots, ranges, keys, bytes and ops
//! before and after, skew before and after, what moves between each pair of nodes, how long
//! it takes at a given rate, which nodes end over a memory budget, and which batches meet
//! ASK, TRYAGAIN or MOVED while slots move.

use super::{ClusterView, Move, sorted_ranges};
use crate::simulate::NetworkModel;
use crate::simulate::batch::Batch;
use crate::simulate::client::{Client, Outcome, simulate_client_stale};
use crate::skew::{Skew, skew};
use crate::slot::{SLOT_COUNT, key_slot};
use crate::topology::Topology;
use serde::Serialize;

/// Per-slot totals of a key sample.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotWeights {
    /// Keys per slot.
    pub keys: Vec<u64>,
    /// Bytes per slot (0 when the sample has none).
    pub bytes: Vec<u64>,
    /// Ops per slot (0 when the sample has none).
    pub ops: Vec<f64>,
    /// Whether the sample carried bytes.
    pub has_bytes: bool,
    /// Whether the sample carried ops.
    pub has_ops: bool,
    /// Measured load per slot (`CLUSTER SLOT-STATS` of a live cluster), when read.
    pub measured: Option<MeasuredLoad>,
    /// The slot and bytes of each sampled key of [`super::MIGRATE_SLOW_BYTES`] or more, in
    /// order: such a key stands for itself when a sample is scaled to the servers' counts,
    /// not for the keys no one sampled.
    pub huge: Vec<(u16, u64)>,
}

/// What the servers measured per slot (16384 entries each).
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredLoad {
    /// CPU µs.
    pub cpu_usec: Vec<f64>,
    /// Network bytes in and out.
    pub net_bytes: Vec<f64>,
    /// Memory bytes of the slot's keys, where the server counts them (Redis 8.2+).
    pub memory: Option<Vec<f64>>,
    /// Over what time the counters run.
    pub since: String,
}

impl Default for SlotWeights {
    fn default() -> Self {
        SlotWeights {
            keys: vec![0; SLOT_COUNT],
            bytes: vec![0; SLOT_COUNT],
            ops: vec![0.0; SLOT_COUNT],
            has_bytes: false,
            has_ops: false,
            measured: None,
            huge: Vec::new(),
        }
    }
}

impl SlotWeights {
    /// Counts one key.
    pub fn add(&mut self, key: &[u8], bytes: Option<u64>, ops: Option<f64>) {
        let s = key_slot(key) as usize;
        self.keys[s] += 1;
        if let Some(b) = bytes {
            self.bytes[s] += b;
            self.has_bytes = true;
            if b >= super::MIGRATE_SLOW_BYTES {
                self.huge.push((s as u16, b));
            }
        }
        if let Some(o) = ops {
            self.ops[s] += o;
            self.has_ops = true;
        }
    }

    /// Adds another sample's totals.
    pub fn merge(&mut self, o: &SlotWeights) {
        for s in 0..SLOT_COUNT {
            self.keys[s] += o.keys[s];
            self.bytes[s] += o.bytes[s];
            self.ops[s] += o.ops[s];
        }
        self.has_bytes |= o.has_bytes;
        self.has_ops |= o.has_ops;
        self.huge.extend_from_slice(&o.huge);
        self.huge.sort_unstable();
    }

    /// Takes `exact` (the servers' keys per slot) as the keys, and scales the sample's bytes
    /// and ops to them: a slot's sampled bytes per key times its exact keys, or, for a slot
    /// without sampled keys, its owner's sampled bytes per key (`owner` of each slot).
    pub fn scale_to(&mut self, exact: &[u64], owner: &[Option<usize>]) {
        // A sampled huge key counts once, as itself: the bytes per key that stand for the keys
        // no one sampled are those of the other keys (a 32 MiB key among 500 sampled keys of a
        // node of 1932 made its unsampled slots 67 KiB a key, and a drain of it 77 MiB).
        let mut huge_keys = vec![0u64; SLOT_COUNT];
        let mut huge_bytes = vec![0u64; SLOT_COUNT];
        for &(s, b) in &self.huge {
            huge_keys[usize::from(s)] += 1;
            huge_bytes[usize::from(s)] += b;
        }
        let nodes = owner.iter().flatten().max().map_or(0, |m| m + 1);
        let mut node_keys = vec![0u64; nodes];
        let mut node_bytes = vec![0u64; nodes];
        let mut node_all_keys = vec![0u64; nodes];
        let mut node_ops = vec![0f64; nodes];
        for (s, o) in owner.iter().enumerate().take(SLOT_COUNT) {
            if let Some(i) = *o {
                node_keys[i] += self.keys[s].saturating_sub(huge_keys[s]);
                node_bytes[i] += self.bytes[s].saturating_sub(huge_bytes[s]);
                node_all_keys[i] += self.keys[s];
                node_ops[i] += self.ops[s];
            }
        }
        for (s, o) in owner.iter().enumerate().take(SLOT_COUNT) {
            let e = exact.get(s).copied().unwrap_or(0);
            let (hk, hb) = (huge_keys[s].min(e), huge_bytes[s]);
            let others = self.keys[s].saturating_sub(huge_keys[s]);
            let per_key_bytes = if others > 0 {
                self.bytes[s].saturating_sub(hb) as f64 / others as f64
            } else {
                match *o {
                    Some(i) if node_keys[i] > 0 => node_bytes[i] as f64 / node_keys[i] as f64,
                    _ => 0.0,
                }
            };
            let per_key_ops = if self.keys[s] > 0 {
                self.ops[s] / self.keys[s] as f64
            } else {
                match *o {
                    Some(i) if node_all_keys[i] > 0 => node_ops[i] / node_all_keys[i] as f64,
                    _ => 0.0,
                }
            };
            let huge_kept = if hk > 0 { hb } else { 0 };
            self.bytes[s] = huge_kept + (per_key_bytes * (e - hk) as f64).round() as u64;
            self.ops[s] = per_key_ops * e as f64;
            self.keys[s] = e;
        }
    }

    /// Keys in the sample.
    pub fn total_keys(&self) -> u64 {
        self.keys.iter().sum()
    }
}

/// One node's state before or after a plan.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeState {
    /// Slots served.
    pub slots: usize,
    /// The slots as `[first, last]` ranges.
    pub slot_ranges: Vec<(u16, u16)>,
    /// Sample keys in those slots.
    pub keys: u64,
    /// Sample bytes.
    pub bytes: u64,
    /// Sample ops.
    pub ops: f64,
    /// Share of the sample's keys (0..1).
    pub share: f64,
    /// Share of the sample's bytes.
    pub share_bytes: f64,
    /// Share of the sample's ops.
    pub share_ops: f64,
    /// CPU µs the servers measured in those slots (a live cluster with CLUSTER SLOT-STATS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_usec: Option<f64>,
    /// Network bytes in and out the servers measured in those slots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net_bytes: Option<f64>,
}

/// One master before and after.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeImpact {
    /// Name (the address when known).
    pub name: String,
    /// Node id, when known.
    pub id: Option<String>,
    /// `host:port`, when known.
    pub address: Option<String>,
    /// Added by the preview (`--add-node`).
    pub added: bool,
    /// Serves no slot after the plan (can be removed with `del-node`).
    pub emptied: bool,
    /// Before the plan.
    pub before: NodeState,
    /// After the plan.
    pub after: NodeState,
}

/// What moves between one pair of nodes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MoveImpact {
    /// Source node name.
    pub from: String,
    /// Destination node name.
    pub to: String,
    /// Source node id.
    pub from_id: Option<String>,
    /// Destination node id.
    pub to_id: Option<String>,
    /// Slots moved.
    pub slots: usize,
    /// The slots as `[first, last]` ranges.
    pub slot_ranges: Vec<(u16, u16)>,
    /// Sample keys moved.
    pub keys: u64,
    /// Sample bytes moved.
    pub bytes: u64,
    /// Sample ops moved.
    pub ops: f64,
}

/// Skew of each weight over the masters that serve slots.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SkewSet {
    /// Slot counts.
    pub slots: Option<Skew>,
    /// Keys.
    pub keys: Option<Skew>,
    /// Bytes (when the sample has them).
    pub bytes: Option<Skew>,
    /// Ops (when the sample has them).
    pub ops: Option<Skew>,
    /// CPU the servers measured (a live cluster with CLUSTER SLOT-STATS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Skew>,
}

/// Skew before and after.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SkewChange {
    /// Before the plan.
    pub before: SkewSet,
    /// After the plan.
    pub after: SkewSet,
}

/// The whole effect of a plan.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Impact {
    /// Per (from, to) pair, in execution order.
    pub moves: Vec<MoveImpact>,
    /// Per master, in redis-cli's node order.
    pub nodes: Vec<NodeImpact>,
    /// Skew before and after.
    pub skew: SkewChange,
    /// Slots that move.
    pub slots_moved: usize,
    /// Sample keys that move.
    pub keys_moved: u64,
    /// Sample bytes that move.
    pub bytes_moved: u64,
}

fn state(
    owner: &[Option<usize>],
    node: usize,
    w: &SlotWeights,
    totals: (f64, f64, f64),
) -> NodeState {
    let slots: Vec<u16> = (0..SLOT_COUNT)
        .filter(|&s| owner[s] == Some(node))
        .map(|s| s as u16)
        .collect();
    let keys: u64 = slots.iter().map(|&s| w.keys[s as usize]).sum();
    let bytes: u64 = slots.iter().map(|&s| w.bytes[s as usize]).sum();
    // `+ 0.0`: an empty float sum is -0.0, which would print as "-0".
    let ops: f64 = slots.iter().map(|&s| w.ops[s as usize]).sum::<f64>() + 0.0;
    let share = |v: f64, t: f64| if t > 0.0 { v / t } else { 0.0 };
    let measured = |f: &dyn Fn(&MeasuredLoad) -> &Vec<f64>| {
        w.measured
            .as_ref()
            .map(|m| slots.iter().map(|&s| f(m)[s as usize]).sum::<f64>() + 0.0)
    };
    NodeState {
        cpu_usec: measured(&|m| &m.cpu_usec),
        net_bytes: measured(&|m| &m.net_bytes),
        slots: slots.len(),
        slot_ranges: sorted_ranges(&slots),
        keys,
        bytes,
        ops,
        share: share(keys as f64, totals.0),
        share_bytes: share(bytes as f64, totals.1),
        share_ops: share(ops, totals.2),
    }
}

fn skew_set(states: &[(&str, &NodeState)], w: &SlotWeights) -> SkewSet {
    let serving: Vec<&(&str, &NodeState)> = states.iter().filter(|(_, s)| s.slots > 0).collect();
    let names: Vec<String> = serving.iter().map(|(n, _)| n.to_string()).collect();
    let shares: Vec<f64> = serving
        .iter()
        .map(|(_, s)| s.slots as f64 / SLOT_COUNT as f64)
        .collect();
    let of = |f: &dyn Fn(&NodeState) -> f64| {
        let v: Vec<f64> = serving.iter().map(|(_, s)| f(s)).collect();
        skew(&v, &names, &shares)
    };
    SkewSet {
        slots: of(&|s| s.slots as f64),
        keys: of(&|s| s.keys as f64),
        bytes: if w.has_bytes {
            of(&|s| s.bytes as f64)
        } else {
            None
        },
        ops: if w.has_ops { of(&|s| s.ops) } else { None },
        cpu: if w.measured.is_some() {
            of(&|s| s.cpu_usec.unwrap_or(0.0))
        } else {
            None
        },
    }
}

/// The effect of `moves` on `view` given the sample's per-slot weights.
pub fn impact(view: &ClusterView, moves: &[Move], w: &SlotWeights) -> Impact {
    let totals = (
        w.keys.iter().sum::<u64>() as f64,
        w.bytes.iter().sum::<u64>() as f64,
        w.ops.iter().sum::<f64>(),
    );
    let after = view.owners_after(moves);
    let masters = view.masters();
    let nodes: Vec<NodeImpact> = masters
        .iter()
        .map(|&i| {
            let n = &view.nodes[i];
            let before = state(&view.owner, i, w, totals);
            let after = state(&after, i, w, totals);
            NodeImpact {
                name: n.name.clone(),
                id: n.id.clone(),
                address: n.address.clone(),
                added: n.added,
                emptied: before.slots > 0 && after.slots == 0,
                before,
                after,
            }
        })
        .collect();
    let move_impacts: Vec<MoveImpact> = moves
        .iter()
        .map(|m| MoveImpact {
            from: view.nodes[m.from].name.clone(),
            to: view.nodes[m.to].name.clone(),
            from_id: view.nodes[m.from].id.clone(),
            to_id: view.nodes[m.to].id.clone(),
            slots: m.slots.len(),
            slot_ranges: sorted_ranges(&m.slots),
            keys: m.slots.iter().map(|&s| w.keys[s as usize]).sum(),
            bytes: m.slots.iter().map(|&s| w.bytes[s as usize]).sum(),
            ops: m.slots.iter().map(|&s| w.ops[s as usize]).sum::<f64>() + 0.0,
        })
        .collect();
    let before_states: Vec<(&str, &NodeState)> =
        nodes.iter().map(|n| (n.name.as_str(), &n.before)).collect();
    let after_states: Vec<(&str, &NodeState)> =
        nodes.iter().map(|n| (n.name.as_str(), &n.after)).collect();
    Impact {
        skew: SkewChange {
            before: skew_set(&before_states, w),
            after: skew_set(&after_states, w),
        },
        slots_moved: move_impacts.iter().map(|m| m.slots).sum(),
        keys_moved: move_impacts.iter().map(|m| m.keys).sum(),
        bytes_moved: move_impacts.iter().map(|m| m.bytes).sum(),
        moves: move_impacts,
        nodes,
    }
}

/// A migration rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Keys per second.
    KeysPerSec(f64),
    /// Bytes per second.
    BytesPerSec(f64),
}

/// Why a size or a rate cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Not a number with a unit.
    #[error("'{0}' is not a size (e.g. 512MB, 2GiB)")]
    NotASize(String),
    /// A unit keyplan does not know.
    #[error("'{text}': unknown unit '{unit}' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")]
    UnknownUnit {
        /// What was given.
        text: String,
        /// Its unit.
        unit: String,
    },
    /// Not keys or bytes per second.
    #[error("'{0}' is not a rate (e.g. 5000keys/s or 20MB/s)")]
    NotARate(String),
    /// A rate of zero or less.
    #[error("'{0}': a rate must be above zero")]
    NotPositive(String),
}

/// Parses a size: `512`, `64KB`, `1.5GiB`, `25GB` (KB/MB/GB/TB powers of 1000, KiB/MiB/GiB/TiB
/// powers of 1024; `B` optional).
pub fn parse_size(s: &str) -> Result<f64, ValueError> {
    parse_byte_size(s).map(|b| b.bytes)
}

/// A size as the user gave it: its bytes, and the unit they wrote it in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ByteSize {
    /// The size in bytes.
    pub bytes: f64,
    /// The unit's name as keyplan writes it (`B`, `KB`, …, `GiB`, `TiB`).
    pub unit: &'static str,
    /// Bytes per unit.
    pub per_unit: f64,
}

impl ByteSize {
    /// `bytes` in exactly this size's unit (`0.90 GB`).
    pub fn in_unit(&self, bytes: f64) -> String {
        if self.per_unit == 1.0 {
            format!("{} B", bytes.round())
        } else {
            format!("{:.2} {}", bytes / self.per_unit, self.unit)
        }
    }

    /// `bytes` in this size's unit (`5.02 GB`); less than one of that unit in the largest
    /// smaller unit of the same family it makes at least one of (`20.00 MB`).
    pub fn show(&self, bytes: f64) -> String {
        let decimal = !self.unit.contains('i');
        let mut units: Vec<(&str, f64)> = if decimal {
            vec![
                ("B", 1.0),
                ("KB", 1e3),
                ("MB", 1e6),
                ("GB", 1e9),
                ("TB", 1e12),
            ]
        } else {
            vec![
                ("B", 1.0),
                ("KiB", 1024.0),
                ("MiB", 1024f64.powi(2)),
                ("GiB", 1024f64.powi(3)),
                ("TiB", 1024f64.powi(4)),
            ]
        };
        units.retain(|(_, m)| *m <= self.per_unit);
        let (name, m) = units
            .iter()
            .rev()
            .find(|(_, m)| bytes.abs() >= *m || *m == 1.0)
            .copied()
            .unwrap_or(("B", 1.0));
        if m == 1.0 {
            format!("{} B", bytes.round())
        } else {
            format!("{:.2} {name}", bytes / m)
        }
    }
}

/// Parses a size (`25GB`, `800MiB`, `1e9`), keeping the unit it was written in.
pub fn parse_byte_size(s: &str) -> Result<ByteSize, ValueError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| ValueError::NotASize(s.to_string()))?;
    let (unit, per_unit) = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => ("B", 1.0),
        "k" | "kb" => ("KB", 1e3),
        "m" | "mb" => ("MB", 1e6),
        "g" | "gb" => ("GB", 1e9),
        "t" | "tb" => ("TB", 1e12),
        "ki" | "kib" => ("KiB", 1024.0),
        "mi" | "mib" => ("MiB", 1024.0 * 1024.0),
        "gi" | "gib" => ("GiB", 1024.0 * 1024.0 * 1024.0),
        "ti" | "tib" => ("TiB", 1024.0f64.powi(4)),
        other => {
            return Err(ValueError::UnknownUnit {
                text: s.to_string(),
                unit: other.to_string(),
            });
        }
    };
    Ok(ByteSize {
        bytes: v * per_unit,
        unit,
        per_unit,
    })
}

/// Parses a rate: `5000keys/s` (or `5000/s`, `5000`) or a byte rate such as `20MB/s`.
pub fn parse_rate(s: &str) -> Result<Rate, ValueError> {
    let not_a_rate = |_: std::num::ParseFloatError| ValueError::NotARate(s.to_string());
    let t = s.trim();
    let body = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("/sec"))
        .unwrap_or(t);
    let lower = body.to_ascii_lowercase();
    let rate = if let Some(n) = lower
        .strip_suffix("keys")
        .or_else(|| lower.strip_suffix("key"))
    {
        Rate::KeysPerSec(n.trim().parse().map_err(not_a_rate)?)
    } else if lower.chars().all(|c| c.is_ascii_digit() || c == '.') {
        Rate::KeysPerSec(lower.parse().map_err(not_a_rate)?)
    } else {
        Rate::BytesPerSec(parse_size(body).map_err(|_| ValueError::NotARate(s.to_string()))?)
    };
    match rate {
        Rate::KeysPerSec(v) | Rate::BytesPerSec(v) if v > 0.0 && v.is_finite() => Ok(rate),
        _ => Err(ValueError::NotPositive(s.to_string())),
    }
}

/// Seconds to migrate what `impact` moves at `rate`, with sample counts multiplied by
/// `scale`; `None` for a byte rate when the sample has no bytes.
pub fn migration_seconds(impact: &Impact, rate: Rate, scale: f64, has_bytes: bool) -> Option<f64> {
    match rate {
        Rate::KeysPerSec(r) => Some(impact.keys_moved as f64 * scale / r),
        Rate::BytesPerSec(r) if has_bytes => Some(impact.bytes_moved as f64 * scale / r),
        Rate::BytesPerSec(_) => None,
    }
}

/// Nodes whose bytes after the plan (times `scale`) exceed `budget`: `(name, bytes)`.
pub fn over_budget(impact: &Impact, budget: f64, scale: f64) -> Vec<(String, f64)> {
    impact
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.after.bytes as f64 * scale))
        .filter(|(_, b)| *b > budget)
        .collect()
}

/// Masters that lose their last slot before the last move: `(node, move index)`. With
/// `cluster-allow-replica-migration yes` (the default) Redis turns such a master into a replica
/// of the node that took its last slot, and a single redis-cli run then fails its next move with
/// "ERR Please use SETSLOT only with masters" (redis/redis#9223, #11104).
pub fn emptied_early(view: &ClusterView, moves: &[Move]) -> Vec<(usize, usize)> {
    let mut count: Vec<usize> = (0..view.nodes.len()).map(|i| view.slot_count(i)).collect();
    let mut out = Vec::new();
    for (k, m) in moves.iter().enumerate() {
        count[m.from] -= m.slots.len().min(count[m.from]);
        count[m.to] += m.slots.len();
        if count[m.from] == 0 && k + 1 < moves.len() && !out.iter().any(|(n, _)| *n == m.from) {
            out.push((m.from, k));
        }
    }
    out
}

/// How one batch fares with one client while its slots move and after.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MotionReport {
    /// Batch name.
    pub batch: String,
    /// The batch's stable identity (line, scheme name, command).
    pub batch_id: crate::simulate::batch::BatchId,
    /// Client profile.
    pub client: &'static str,
    /// Slots of the batch that the plan moves, as `[first, last]` ranges.
    pub slots_in_motion: Vec<(u16, u16)>,
    /// Outcome on the cluster as it is, with nothing moving (a batch that fails anyway is not
    /// the migration's doing).
    pub baseline: Outcome,
    /// Outcome while those slots are migrating (ASK redirects).
    pub during: Outcome,
    /// ASK redirects met during the move.
    pub ask: u64,
    /// A multi-key command addresses a migrating slot: the server answers TRYAGAIN while the
    /// slot's keys are split between the two nodes.
    pub tryagain: bool,
    /// Outcome after the move with the client's old slot map (MOVED redirects).
    pub after: Outcome,
    /// MOVED redirects met after the move.
    pub moved: u64,
    /// The error the application sees, if any.
    pub message: Option<String>,
}

/// The client profiles a preview runs the batches in motion with unless told: the common
/// Redis Cluster clients of each language (redis-py with both its APIs).
pub const PREVIEW_CLIENTS: [Client; 8] = [
    Client::Jedis,
    Client::Lettuce,
    Client::RedisPy,
    Client::RedisPyNonatomic,
    Client::GoRedis,
    Client::Ioredis,
    Client::NodeRedis,
    Client::RedisRs,
];

/// For each batch touching a slot the plan moves, what each client meets during and after.
pub fn batches_in_motion(
    view: &ClusterView,
    moves: &[Move],
    batches: &[Batch],
    clients: &[Client],
    net: &NetworkModel,
) -> Vec<MotionReport> {
    let mut dest = vec![None; SLOT_COUNT];
    for m in moves {
        for &s in &m.slots {
            dest[s as usize] = Some(m.to);
        }
    }
    let masters = view.masters();
    let before_map = view.slot_map(&view.owner);
    let after_map = Topology::Cluster(view.slot_map(&view.owners_after(moves)));
    let before = Topology::Cluster(before_map.clone());
    let mut out = Vec::new();
    for b in batches {
        let mut slots: Vec<u16> = b
            .keys()
            .map(key_slot)
            .filter(|&s| dest[s as usize].is_some())
            .collect();
        slots.sort_unstable();
        slots.dedup();
        if slots.is_empty() {
            continue;
        }
        let mut during_map = before_map.clone();
        for &s in &slots {
            let to = dest[s as usize].expect("filtered above");
            let k = masters.iter().position(|&i| i == to).expect("a master");
            let _ = during_map.add_migration(s, k);
        }
        let during = Topology::Cluster(during_map);
        let tryagain = b.ops.iter().any(|op| {
            op.keys.len() > 1 && {
                let s0 = key_slot(&op.keys[0]);
                dest[s0 as usize].is_some() && op.keys.iter().all(|k| key_slot(k) == s0)
            }
        });
        for &c in clients {
            let base = simulate_client_stale(b, &before, &before, c, net);
            let d = simulate_client_stale(b, &before, &during, c, net);
            let a = simulate_client_stale(b, &before, &after_map, c, net);
            out.push(MotionReport {
                batch: b.name.clone(),
                batch_id: b.id.clone(),
                client: c.name(),
                slots_in_motion: sorted_ranges(&slots),
                baseline: base.outcome,
                during: d.outcome,
                ask: d.ask,
                tryagain,
                after: a.outcome,
                moved: a.moved,
                message: d.message.or(a.message),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_scales_to_exact_counts() {
        let mut w = SlotWeights::default();
        // Slot 1: 2 sampled keys of 100 bytes; slot 2 sampled nothing (same owner).
        w.add(b"{a}1", Some(100), None);
        w.add(b"{a}2", Some(100), None);
        let s1 = crate::slot::key_slot(b"{a}") as usize;
        let s2 = (s1 + 1) % SLOT_COUNT;
        let mut exact = vec![0u64; SLOT_COUNT];
        exact[s1] = 50;
        exact[s2] = 10;
        let owner: Vec<Option<usize>> = vec![Some(0); SLOT_COUNT];
        w.scale_to(&exact, &owner);
        assert_eq!((w.keys[s1], w.bytes[s1]), (50, 5000));
        // Bytes per key of the owner's sample.
        assert_eq!((w.keys[s2], w.bytes[s2]), (10, 1000));
        assert_eq!(w.total_keys(), 60);
    }

    #[test]
    fn a_sampled_huge_key_stands_for_itself_when_scaled() {
        // One node: 100 sampled keys of 100 bytes in 100 slots and one of 32 MiB in its own
        // slot; the servers count 4 keys in each sampled slot and 1000 more in 1000 others.
        let huge = 32u64 << 20;
        let mut w = SlotWeights::default();
        let mut exact = vec![0u64; SLOT_COUNT];
        let mut used = std::collections::BTreeSet::new();
        let mut i = 0;
        while used.len() < 100 {
            let key = format!("k{i}");
            i += 1;
            let s = crate::slot::key_slot(key.as_bytes());
            if s == crate::slot::key_slot(b"{huge}") || !used.insert(s) {
                continue;
            }
            w.add(key.as_bytes(), Some(100), None);
            exact[usize::from(s)] = 4;
        }
        w.add(b"{huge}", Some(huge), None);
        exact[usize::from(crate::slot::key_slot(b"{huge}"))] = 1;
        let mut extra = 0;
        for (s, e) in exact.iter_mut().enumerate() {
            if *e == 0 && extra < 1000 && s % 7 == 0 {
                *e = 1;
                extra += 1;
            }
        }
        let owner: Vec<Option<usize>> = vec![Some(0); SLOT_COUNT];
        w.scale_to(&exact, &owner);
        // 32 MiB once, and 100 bytes for each of the 400 + 1000 other keys.
        let total: u64 = w.bytes.iter().sum();
        assert_eq!(total, huge + 1400 * 100, "{total}");
        assert_eq!(w.bytes[usize::from(crate::slot::key_slot(b"{huge}"))], huge);
    }

    #[test]
    fn sizes_are_shown_in_the_users_unit() {
        let b = parse_byte_size("5GB").unwrap();
        assert_eq!(b.bytes, 5e9);
        assert_eq!(b.show(5.02e9), "5.02 GB");
        assert_eq!(b.show(0.02e9), "20.00 MB");
        assert_eq!(b.show(512.0), "512 B");
        assert_eq!(parse_byte_size("0.9GB").unwrap().in_unit(0.9e9), "0.90 GB");
        let b = parse_byte_size("800MiB").unwrap();
        assert_eq!(b.show(1024.0 * 1024.0 * 801.5), "801.50 MiB");
        assert_eq!(b.show(1024.0 * 3.0), "3.00 KiB");
        assert!(parse_byte_size("5XB").is_err());
    }
    use crate::migrate::redis_cli::{RebalanceOptions, rebalance};
    use crate::topology::SlotMap;

    #[test]
    fn sizes_and_rates() {
        assert_eq!(parse_size("512").unwrap(), 512.0);
        assert_eq!(parse_size("2GiB").unwrap(), 2.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(parse_size("1.5GB").unwrap(), 1.5e9);
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(parse_rate("5000keys/s").unwrap(), Rate::KeysPerSec(5000.0));
        assert_eq!(parse_rate("800").unwrap(), Rate::KeysPerSec(800.0));
        assert_eq!(parse_rate("20MB/s").unwrap(), Rate::BytesPerSec(20e6));
        assert!(parse_rate("0keys/s").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn impact_counts_what_moves() {
        let mut v = ClusterView::from_slot_map(&SlotMap::from_masters(3).unwrap());
        v.add_node("10.0.0.4:7000").unwrap();
        let plan = rebalance(
            &v,
            &RebalanceOptions {
                use_empty_masters: true,
                threshold: 2.0,
                ..Default::default()
            },
        )
        .unwrap();
        let mut w = SlotWeights::default();
        for i in 0..30000u32 {
            w.add(format!("user:{i}").as_bytes(), Some(100), None);
        }
        let im = impact(&v, &plan.moves, &w);
        assert_eq!(im.nodes.len(), 4);
        assert_eq!(im.nodes[3].before.slots, 0);
        assert_eq!(im.nodes[3].after.slots, 4096);
        assert!(im.nodes[3].added);
        let moved: u64 = im.moves.iter().map(|m| m.keys).sum();
        assert_eq!(moved, im.nodes[3].after.keys);
        assert_eq!(im.bytes_moved, 100 * im.keys_moved);
        let total_after: u64 = im.nodes.iter().map(|n| n.after.keys).sum();
        assert_eq!(total_after, 30000);
        // Before: 3 serving masters; after: 4, more even in slots.
        let sb = im.skew.before.slots.as_ref().unwrap();
        let sa = im.skew.after.slots.as_ref().unwrap();
        assert!(sa.max_over_mean <= sb.max_over_mean + 1e-9);
        assert!(im.skew.before.bytes.is_some() && im.skew.before.ops.is_none());
        let secs = migration_seconds(&im, Rate::KeysPerSec(1000.0), 1.0, true).unwrap();
        assert!((secs - im.keys_moved as f64 / 1000.0).abs() < 1e-9);
        assert!(migration_seconds(&im, Rate::BytesPerSec(1.0), 1.0, false).is_none());
        assert_eq!(over_budget(&im, 0.0, 1.0).len(), 4);
        assert!(over_budget(&im, 1e9, 1.0).is_empty());
        let max = im.nodes.iter().map(|n| n.after.bytes).max().unwrap();
        let over = over_budget(&im, max as f64 - 1.0, 1.0);
        assert!(
            !over.is_empty() && over.iter().all(|(_, b)| *b == max as f64),
            "{over:?}"
        );
        assert_eq!(
            over_budget(&im, (max as f64 - 1.0) * 10.0, 10.0).len(),
            over.len()
        );
    }
}
