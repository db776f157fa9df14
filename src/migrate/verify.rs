//! Verifying a migration: the cluster as it is now, against the state a saved preview
//! (`keyplan rebalance|reshard --preview --format json`) said it would end in. Pure: the
//! preview's text and the facts read from the cluster in, a report out.
//!
//! Checked per slot: its owner is the preview's, it is not left open (migrating/importing),
//! and no other master holds keys of it. Per node: its slots, its keys (against the preview's
//! figure when the preview counted every key), keys it holds in slots it does not own, and
//! keys of a key dump that are not found on the owner of their slot.

use super::PerMaster;
use super::SampleSource;
use crate::keys::display::ByteString;
use crate::slot::SLOT_COUNT;
use crate::topology::{Migration, MigrationDirection};
use serde::Serialize;

/// Missing keys named in a report (the rest are counted).
pub const MISSING_EXAMPLES: usize = 20;

/// A master of the preview, as it should be after the migration.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewNode {
    /// The name the preview prints (the address when known).
    pub name: String,
    /// Node id, when the preview knew it.
    pub id: Option<String>,
    /// `host:port`, when the preview knew it.
    pub address: Option<String>,
    /// Its slots after the plan.
    pub slots: Vec<u16>,
    /// The sample's keys in those slots after the plan.
    pub keys: u64,
}

/// What a saved preview promises.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    /// `rebalance` or `reshard` (`None`: no preview, the cluster's own slot map).
    pub command: Option<String>,
    /// Every master, after the plan.
    pub nodes: Vec<PreviewNode>,
    /// Whether its key figures are every key of the cluster (the servers' exact counts, or a
    /// live sample of every key), so that they can be held against the cluster's.
    pub counts_every_key: bool,
}

/// Why a file is not a preview keyplan can verify against.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PreviewError {
    /// Not JSON at all (a table report, say).
    #[error("not JSON (line {line}, column {column}: {message})")]
    NotJson {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser says.
        message: String,
    },
    /// JSON without keyplan's envelope.
    #[error("no schema_version: not a JSON document keyplan wrote")]
    NoVersion,
    /// A version this keyplan does not read.
    #[error("schema_version {found}: this keyplan reads migration previews of version {reads}")]
    Version {
        /// The file's version.
        found: u64,
        /// The version read.
        reads: u32,
    },
    /// Another command's report (its `command`, when it has one).
    #[error("{}, not a rebalance or reshard preview", match .0 {
        Some(c) => format!("a report of keyplan {c}"),
        None => "a report of another command".to_string(),
    })]
    NotAPreview(Option<String>),
    /// A field missing or malformed.
    #[error("{field}: {problem}")]
    Field {
        /// Where, e.g. `nodes[2].after.slot_ranges`.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

#[derive(serde::Deserialize)]
struct RawNode {
    name: String,
    id: Option<String>,
    address: Option<String>,
    after: RawState,
}

#[derive(serde::Deserialize)]
struct RawState {
    slot_ranges: Vec<(u16, u16)>,
    #[serde(default)]
    keys: u64,
}

/// Reads a preview's JSON (`version` is the migration previews' schema version).
pub fn parse_preview(text: &str, version: u32) -> Result<Preview, PreviewError> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| PreviewError::NotJson {
        line: e.line(),
        column: e.column(),
        message: e
            .to_string()
            .split(" at line ")
            .next()
            .unwrap_or("")
            .to_string(),
    })?;
    let found = doc
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or(PreviewError::NoVersion)?;
    let command = doc.get("command").and_then(serde_json::Value::as_str);
    let command = match command {
        Some(c @ ("rebalance" | "reshard")) => c.to_string(),
        Some(other) => return Err(PreviewError::NotAPreview(Some(other.to_string()))),
        None => return Err(PreviewError::NotAPreview(None)),
    };
    if found != u64::from(version) {
        return Err(PreviewError::Version {
            found,
            reads: version,
        });
    }
    let field = |field: &str, problem: String| PreviewError::Field {
        field: field.to_string(),
        problem,
    };
    let raw_nodes = doc
        .get("nodes")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| field("nodes", "missing, or not a list".into()))?;
    let mut owner: Vec<Option<usize>> = vec![None; SLOT_COUNT];
    let mut nodes = Vec::with_capacity(raw_nodes.len());
    for (i, v) in raw_nodes.iter().enumerate() {
        let raw: RawNode = serde_json::from_value(v.clone())
            .map_err(|e| field(&format!("nodes[{i}]"), e.to_string()))?;
        let mut slots = Vec::new();
        for &(a, b) in &raw.after.slot_ranges {
            if a > b || usize::from(b) >= SLOT_COUNT {
                return Err(field(
                    &format!("nodes[{i}].after.slot_ranges"),
                    format!("[{a}, {b}] is not a range of slots 0-16383"),
                ));
            }
            for s in a..=b {
                if let Some(other) = owner[usize::from(s)] {
                    return Err(field(
                        &format!("nodes[{i}].after.slot_ranges"),
                        format!("slot {s} is given to node {other} too"),
                    ));
                }
                owner[usize::from(s)] = Some(i);
                slots.push(s);
            }
        }
        if raw.id.is_none() && raw.address.is_none() {
            return Err(field(
                &format!("nodes[{i}]"),
                "neither an id nor an address: the node cannot be found in the cluster".into(),
            ));
        }
        nodes.push(PreviewNode {
            name: raw.name,
            id: raw.id,
            address: raw.address,
            slots,
            keys: raw.after.keys,
        });
    }
    let sources: Vec<String> = doc
        .pointer("/sample/source")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let every_key = [
        SampleSource::ExactCounts,
        SampleSource::Live {
            per_master: PerMaster::All,
            bytes: false,
        },
        SampleSource::Live {
            per_master: PerMaster::All,
            bytes: true,
        },
    ]
    .map(|s| s.to_string());
    let counts_every_key = sources.iter().any(|s| every_key.contains(s));
    Ok(Preview {
        command: Some(command),
        nodes,
        counts_every_key,
    })
}

impl Preview {
    /// What a cluster checked without a preview is held to: its own slot map (so that only
    /// open slots, keys left behind and the key dumps' keys can differ).
    pub fn of_cluster(live: &Observed) -> Preview {
        let nodes = live
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| PreviewNode {
                name: n.name.clone(),
                id: n.id.clone(),
                address: n.address.clone(),
                slots: (0..SLOT_COUNT as u16)
                    .filter(|&s| live.owner[usize::from(s)] == Some(i))
                    .collect(),
                keys: 0,
            })
            .collect();
        Preview {
            command: None,
            nodes,
            counts_every_key: false,
        }
    }
}

/// A master of the cluster now.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveNode {
    /// The name keyplan prints (the address when known).
    pub name: String,
    /// Node id, when known.
    pub id: Option<String>,
    /// `host:port`, when known.
    pub address: Option<String>,
}

/// What was read from the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The masters.
    pub nodes: Vec<LiveNode>,
    /// Each slot's owner (index into `nodes`).
    pub owner: Vec<Option<usize>>,
    /// Slots left open (migrating/importing).
    pub open: Vec<Migration>,
    /// Per master (as `nodes`), the keys it holds in each of the 16384 slots, owned or not.
    pub counts: Vec<Vec<u64>>,
}

/// Adds `item` to `list`, which keeps the first [`MISSING_EXAMPLES`] items in `order` (slot,
/// then key): the same examples whatever order the keys were looked up in.
fn keep_first<T>(list: &mut Vec<T>, item: T, order: impl Fn(&T, &T) -> std::cmp::Ordering) {
    use std::cmp::Ordering::Greater;
    if list.len() == MISSING_EXAMPLES && list.last().is_some_and(|l| order(l, &item) != Greater) {
        return;
    }
    let at = list.partition_point(|x| order(x, &item) != Greater);
    list.insert(at, item);
    list.truncate(MISSING_EXAMPLES);
}

/// A key as its slot's owner has it now (`PTTL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    /// Not there.
    Missing,
    /// There, without an expiry.
    Persistent,
    /// There, with an expiry.
    Expiring,
}

/// The keys of key dumps looked up on the owner of their slot, as they are looked up.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyTally {
    /// The dumps' names.
    pub sources: Vec<String>,
    /// Keys looked up.
    pub checked: u64,
    /// Keys not found, per slot (keys the dump gave an expiry are counted in `gone_expiring`).
    pub missing: Vec<u64>,
    /// The first keys not found (by slot, then key), with their slot.
    pub examples: Vec<(Vec<u8>, u16)>,
    /// Keys whose dump says whether they expire (snapshots do).
    pub expiry_known: u64,
    /// Keys the dump gave an expiry that are gone: expired since, most likely.
    pub gone_expiring: u64,
    /// Keys found that expire now and did not in the dump, or the other way round.
    pub expiry_changed: u64,
    /// The first of them (by slot, then key), with their slot and whether the dump gave them
    /// an expiry.
    pub expiry_examples: Vec<(Vec<u8>, u16, bool)>,
}

impl KeyTally {
    /// An empty tally of the keys of `sources`.
    pub fn new(sources: Vec<String>) -> KeyTally {
        KeyTally {
            sources,
            checked: 0,
            missing: vec![0; SLOT_COUNT],
            examples: Vec::new(),
            expiry_known: 0,
            gone_expiring: 0,
            expiry_changed: 0,
            expiry_examples: Vec::new(),
        }
    }

    /// Records one key looked up: `expired` is whether the dump gave it an expiry (`None`:
    /// the dump does not say), `now` how its slot's owner has it.
    pub fn add(&mut self, key: &[u8], slot: u16, expires: Option<bool>, now: KeyState) {
        self.checked += 1;
        self.expiry_known += u64::from(expires.is_some());
        match (expires, now) {
            (Some(true), KeyState::Missing) => self.gone_expiring += 1,
            (_, KeyState::Missing) => {
                self.missing[usize::from(slot)] += 1;
                keep_first(&mut self.examples, (key.to_vec(), slot), |a, b| {
                    (a.1, &a.0).cmp(&(b.1, &b.0))
                });
            }
            (Some(true), KeyState::Persistent) | (Some(false), KeyState::Expiring) => {
                self.expiry_changed += 1;
                let e = (key.to_vec(), slot, expires == Some(true));
                keep_first(&mut self.expiry_examples, e, |a, b| {
                    (a.1, &a.0).cmp(&(b.1, &b.0))
                });
            }
            _ => {}
        }
    }

    /// Keys not found.
    pub fn missing_total(&self) -> u64 {
        self.missing.iter().sum()
    }
}

/// How the values of a source and of the cluster are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueMethod {
    /// `DEBUG DIGEST-VALUE` on both sides: a digest of the value whatever its encoding
    /// (servers with `enable-debug-command` allowing the connection).
    DebugDigestValue,
    /// An MD5 digest of the `DUMP` payload less its trailer (RDB version and checksum): equal
    /// for equal values kept in the same encoding (the same server version and settings); a
    /// set or hash whose payloads differ (a hash table's order) is compared by its sorted
    /// members.
    DumpPayload,
}

impl ValueMethod {
    /// Its words in a report.
    pub fn words(self) -> &'static str {
        match self {
            ValueMethod::DebugDigestValue => "DEBUG DIGEST-VALUE",
            ValueMethod::DumpPayload => "DUMP payload digest, sets and hashes by sorted members",
        }
    }
}

/// A key as one node has it (`TYPE`, `PTTL` and the value's digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRead {
    /// Not there (or the node does not serve its slot).
    Missing,
    /// There.
    Present {
        /// `TYPE`'s answer.
        kind: String,
        /// `PTTL` in milliseconds (`None`: no expiry).
        ttl_ms: Option<u64>,
        /// The value's digest (as [`ValueMethod`] makes it).
        digest: Vec<u8>,
    },
}

/// What differs in one key between the source and the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueDiffKind {
    /// Not on the master that owns its slot.
    Missing,
    /// Another type.
    Type,
    /// The source's expiry is gone.
    TtlLost,
    /// An expiry the source's key has not.
    TtlAdded,
    /// Both expire, further apart than the tolerance.
    TtlOff,
    /// The same type, another value.
    Value,
}

impl ValueDiffKind {
    /// Its words in a table.
    pub fn words(self) -> &'static str {
        match self {
            ValueDiffKind::Missing => "missing",
            ValueDiffKind::Type => "another type",
            ValueDiffKind::TtlLost => "expiry lost",
            ValueDiffKind::TtlAdded => "expiry added",
            ValueDiffKind::TtlOff => "expiry off",
            ValueDiffKind::Value => "another value",
        }
    }
}

/// One key that differs, as kept for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueDiffSeen {
    /// The key.
    pub key: Vec<u8>,
    /// Its slot.
    pub slot: u16,
    /// What differs.
    pub kind: ValueDiffKind,
    /// The source's type and expiry (ms).
    pub source: (String, Option<u64>),
    /// The cluster's (`None`: missing).
    pub target: Option<(String, Option<u64>)>,
}

/// The source's keys compared with the cluster's, as they are compared (one per source node
/// thread; [`ValueTally::merge`] joins them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ValueTally {
    /// Keys read on the source.
    pub checked: u64,
    /// Keys the source listed that were gone when read (deleted or expired meanwhile).
    pub gone_at_source: u64,
    /// Keys missing on the cluster whose source expiry was within the tolerance: expired.
    pub expired: u64,
    /// Keys differing, per kind (in [`ValueDiffKind`] order).
    pub differs: [u64; 6],
    /// Keys with any difference.
    pub keys_differing: u64,
    /// The first differences of each kind (by slot, then key).
    pub examples: Vec<ValueDiffSeen>,
}

fn kind_index(k: ValueDiffKind) -> usize {
    k as usize
}

impl ValueTally {
    /// Records one key of the source: `source` as the source has it, `target` as the master
    /// owning its slot has it; TTLs within `ttl_tolerance_ms` of each other are the same.
    pub fn add(
        &mut self,
        key: &[u8],
        slot: u16,
        source: &KeyRead,
        target: &KeyRead,
        ttl_tolerance_ms: u64,
    ) {
        let KeyRead::Present {
            kind: s_kind,
            ttl_ms: s_ttl,
            digest: s_digest,
        } = source
        else {
            self.gone_at_source += 1;
            return;
        };
        self.checked += 1;
        let mut kinds = Vec::new();
        let target_seen = match target {
            KeyRead::Missing => {
                if s_ttl.is_some_and(|t| t <= ttl_tolerance_ms) {
                    self.expired += 1;
                    return;
                }
                kinds.push(ValueDiffKind::Missing);
                None
            }
            KeyRead::Present {
                kind: t_kind,
                ttl_ms: t_ttl,
                digest: t_digest,
            } => {
                if s_kind != t_kind {
                    kinds.push(ValueDiffKind::Type);
                } else if s_digest != t_digest {
                    kinds.push(ValueDiffKind::Value);
                }
                match (s_ttl, t_ttl) {
                    (Some(_), None) => kinds.push(ValueDiffKind::TtlLost),
                    (None, Some(_)) => kinds.push(ValueDiffKind::TtlAdded),
                    (Some(a), Some(b)) if a.abs_diff(*b) > ttl_tolerance_ms => {
                        kinds.push(ValueDiffKind::TtlOff)
                    }
                    _ => {}
                }
                Some((t_kind.clone(), *t_ttl))
            }
        };
        if kinds.is_empty() {
            return;
        }
        self.keys_differing += 1;
        for kind in kinds {
            self.differs[kind_index(kind)] += 1;
            self.keep(ValueDiffSeen {
                key: key.to_vec(),
                slot,
                kind,
                source: (s_kind.clone(), *s_ttl),
                target: target_seen.clone(),
            });
        }
    }

    /// Keeps `d` if it is among the first [`MISSING_EXAMPLES`] of its kind.
    fn keep(&mut self, d: ValueDiffSeen) {
        let kind = d.kind;
        let mut same: Vec<ValueDiffSeen> = Vec::new();
        self.examples.retain(|e| {
            if e.kind == kind {
                same.push(e.clone());
                false
            } else {
                true
            }
        });
        keep_first(&mut same, d, |a, b| (a.slot, &a.key).cmp(&(b.slot, &b.key)));
        self.examples.extend(same);
        self.examples
            .sort_by(|a, b| (a.kind, a.slot, &a.key).cmp(&(b.kind, b.slot, &b.key)));
    }

    /// Adds another thread's tally.
    pub fn merge(&mut self, other: ValueTally) {
        self.checked += other.checked;
        self.gone_at_source += other.gone_at_source;
        self.expired += other.expired;
        self.keys_differing += other.keys_differing;
        for (a, b) in self.differs.iter_mut().zip(other.differs) {
            *a += b;
        }
        for e in other.examples {
            self.keep(e);
        }
    }

    /// Differences of `kind`.
    pub fn count(&self, kind: ValueDiffKind) -> u64 {
        self.differs[kind_index(kind)]
    }
}

/// A key whose type, expiry or value is not the source's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValueDiff {
    /// The key.
    pub key: ByteString,
    /// Its slot.
    pub slot: u16,
    /// The master owning the slot now, where it was read.
    pub node: Option<String>,
    /// What differs.
    pub differs: ValueDiffKind,
    /// The source's type.
    pub source_type: String,
    /// The source's expiry in milliseconds (`None`: none).
    pub source_ttl_ms: Option<u64>,
    /// The cluster's type (`None`: missing).
    pub target_type: Option<String>,
    /// The cluster's expiry in milliseconds (`None`: none, or missing).
    pub target_ttl_ms: Option<u64>,
}

/// The source's keys compared with the cluster's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValuesCheck {
    /// The source (passwords masked).
    pub sources: Vec<String>,
    /// How values were compared.
    pub method: ValueMethod,
    /// How far apart two expiries may be, in milliseconds.
    pub ttl_tolerance_ms: u64,
    /// Keys of the source read and looked up on the master owning their slot.
    pub checked: u64,
    /// Keys the source listed that were gone when read (deleted or expired meanwhile).
    pub gone_at_source: u64,
    /// Keys missing on the cluster that were about to expire on the source: no difference.
    pub expired: u64,
    /// Keys with any difference.
    pub keys_differing: u64,
    /// Keys not on the master owning their slot.
    pub missing: u64,
    /// Keys of another type.
    pub type_differs: u64,
    /// Keys of the same type with another value.
    pub value_differs: u64,
    /// Keys whose expiry is gone.
    pub ttl_lost: u64,
    /// Keys with an expiry the source's has not.
    pub ttl_added: u64,
    /// Keys whose expiries are further apart than the tolerance.
    pub ttl_off: u64,
    /// The first differences of each kind (up to 20 each), by kind, slot and key.
    pub examples: Vec<ValueDiff>,
}

impl ValuesCheck {
    /// The report's part for `tally`, the keys named by the masters of `live` owning them.
    pub fn new(
        sources: Vec<String>,
        method: ValueMethod,
        ttl_tolerance_ms: u64,
        tally: &ValueTally,
        live: &Observed,
    ) -> ValuesCheck {
        ValuesCheck {
            sources,
            method,
            ttl_tolerance_ms,
            checked: tally.checked,
            gone_at_source: tally.gone_at_source,
            expired: tally.expired,
            keys_differing: tally.keys_differing,
            missing: tally.count(ValueDiffKind::Missing),
            type_differs: tally.count(ValueDiffKind::Type),
            value_differs: tally.count(ValueDiffKind::Value),
            ttl_lost: tally.count(ValueDiffKind::TtlLost),
            ttl_added: tally.count(ValueDiffKind::TtlAdded),
            ttl_off: tally.count(ValueDiffKind::TtlOff),
            examples: tally
                .examples
                .iter()
                .map(|e| ValueDiff {
                    key: ByteString(e.key.clone()),
                    slot: e.slot,
                    node: live.owner[usize::from(e.slot)].map(|l| live.nodes[l].name.clone()),
                    differs: e.kind,
                    source_type: e.source.0.clone(),
                    source_ttl_ms: e.source.1,
                    target_type: e.target.as_ref().map(|t| t.0.clone()),
                    target_ttl_ms: e.target.as_ref().and_then(|t| t.1),
                })
                .collect(),
        }
    }
}

/// How far a node's key count may be from the preview's (writes and expiries while the
/// migration ran) before it counts as a difference.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyTolerance {
    /// Exactly the preview's figure (the default).
    #[default]
    Exact,
    /// Up to this many keys more or fewer.
    Keys(u64),
    /// Up to this percentage of the preview's figure more or fewer.
    Percent(f64),
}

impl KeyTolerance {
    /// Whether `now` is close enough to `expected`.
    pub fn allows(self, expected: u64, now: u64) -> bool {
        let off = expected.abs_diff(now);
        match self {
            KeyTolerance::Exact => off == 0,
            KeyTolerance::Keys(n) => off <= n,
            KeyTolerance::Percent(p) => off as f64 <= expected as f64 * p / 100.0,
        }
    }
}

/// How a node compares with the preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeVerdict {
    /// As previewed.
    Matches,
    /// Its slots or keys are not the preview's.
    Differs,
    /// Emptied by the plan and no longer in the cluster (removed with del-node).
    Removed,
    /// Given slots by the preview, and not in the cluster.
    Missing,
    /// A master the preview does not know, empty.
    NotInPreview,
}

impl NodeVerdict {
    /// Whether the node is as the preview says.
    pub fn ok(self) -> bool {
        matches!(
            self,
            NodeVerdict::Matches | NodeVerdict::Removed | NodeVerdict::NotInPreview
        )
    }

    /// Its words in a table.
    pub fn words(self) -> &'static str {
        match self {
            NodeVerdict::Matches => "matches",
            NodeVerdict::Differs => "DIFFERS",
            NodeVerdict::Removed => "removed, as previewed",
            NodeVerdict::Missing => "MISSING from the cluster",
            NodeVerdict::NotInPreview => "not in the preview (empty)",
        }
    }
}

/// One node, preview against cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeCheck {
    /// Name (the address when known).
    pub name: String,
    /// Node id, when known.
    pub id: Option<String>,
    /// `host:port`, when known.
    pub address: Option<String>,
    /// The verdict.
    pub verdict: NodeVerdict,
    /// Slots the preview gives it.
    pub slots_expected: usize,
    /// Slots it owns now (`None`: not in the cluster).
    pub slots_now: Option<usize>,
    /// Slots the preview gives it that it does not own now.
    pub slots_lacking: usize,
    /// Slots it owns now that the preview gives another node (or none).
    pub slots_extra: usize,
    /// Its slots after the plan, as ranges.
    pub slot_ranges_expected: Vec<(u16, u16)>,
    /// The preview's keys for it (when the preview has a key sample).
    pub keys_expected: Option<u64>,
    /// Keys in the slots it owns now (`None`: not in the cluster).
    pub keys_now: Option<u64>,
    /// Whether `keys_expected` is held against `keys_now` (the preview counted every key).
    pub keys_judged: bool,
    /// Keys it holds in slots it does not own (left behind, or copied there).
    pub stray_keys: u64,
    /// Keys of the key dumps whose slot the preview gives it, not found on the slot's owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_keys: Option<u64>,
}

/// Keys of a slot held by a master that does not own it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stray {
    /// The master holding them.
    pub node: String,
    /// How many.
    pub keys: u64,
}

/// One slot that is not as previewed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlotCheck {
    /// The slot.
    pub slot: u16,
    /// Its owner in the preview (`None`: no node).
    pub expected: Option<String>,
    /// Its owner now (`None`: unserved).
    pub owner: Option<String>,
    /// Open markers, e.g. `127.0.0.1:7000 migrating to 127.0.0.1:7001`.
    pub open: Vec<String>,
    /// Keys of it on masters that do not own it.
    pub stray: Vec<Stray>,
    /// Keys of the key dumps in it not found on its owner.
    pub missing_keys: u64,
}

impl SlotCheck {
    /// Only the owner differs (no open marker, no stray or missing key): such slots are
    /// shown as ranges.
    pub fn owner_only(&self) -> bool {
        self.open.is_empty() && self.stray.is_empty() && self.missing_keys == 0
    }
}

/// A key of the key dumps not found on the owner of its slot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissingKey {
    /// The key.
    pub key: ByteString,
    /// Its slot.
    pub slot: u16,
    /// The master owning the slot now, where it was looked up.
    pub node: Option<String>,
}

/// A key whose expiry is not as the dump had it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpiryChange {
    /// The key.
    pub key: ByteString,
    /// Its slot.
    pub slot: u16,
    /// The master owning the slot now.
    pub node: Option<String>,
    /// Whether the dump gave it an expiry (it has none now), or not (it has one now).
    pub had_expiry: bool,
}

/// The key dumps' check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeysCheck {
    /// The dumps.
    pub sources: Vec<String>,
    /// Keys looked up.
    pub checked: u64,
    /// Keys not found (those the dump gave an expiry are in `gone_expiring`).
    pub missing: u64,
    /// The first of them (up to 20).
    pub examples: Vec<MissingKey>,
    /// Keys whose expiry the dumps know (snapshots): compared with the key's now.
    pub expiry_checked: u64,
    /// Keys the dump gave an expiry that are gone (expired, most likely): no difference.
    pub gone_expiring: u64,
    /// Keys whose expiry is not the dump's (lost, or one set since).
    pub expiry_changed: u64,
    /// The first of them (up to 20).
    pub expiry_examples: Vec<ExpiryChange>,
}

/// `keyplan verify`'s report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    /// The preview file (`None`: checked against the cluster's own slot map).
    pub preview: Option<String>,
    /// The preview's command (`rebalance` or `reshard`).
    pub command: Option<String>,
    /// The cluster (password masked).
    pub cluster: String,
    /// Whether the cluster is as previewed.
    pub matches: bool,
    /// Slots whose owner is not the preview's.
    pub slots_misplaced: usize,
    /// Slots left open.
    pub slots_open: usize,
    /// Keys held by masters that do not own their slot.
    pub stray_keys: u64,
    /// Whether per-node key counts are held against the preview's.
    pub keys_judged: bool,
    /// How far they may be from the preview's.
    pub key_tolerance: KeyTolerance,
    /// Every master, the preview's first (its order), then those it does not know.
    pub nodes: Vec<NodeCheck>,
    /// Every slot not as previewed, in slot order.
    pub slots: Vec<SlotCheck>,
    /// With key dumps: every key looked up on the owner of its slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeysCheck>,
    /// With a source (--source): every key of it compared with the cluster's (type, expiry,
    /// value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<ValuesCheck>,
}

/// Whether a preview node and a live master are the same node: by id where both know it,
/// else by address.
fn same(p: &PreviewNode, l: &LiveNode) -> bool {
    match (&p.id, &l.id) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        _ => p.address.is_some() && p.address == l.address,
    }
}

fn open_text(m: &Migration) -> String {
    match m.direction {
        MigrationDirection::Migrating => format!("{} migrating to {}", m.node, m.peer),
        MigrationDirection::Importing => format!("{} importing from {}", m.node, m.peer),
    }
}

/// Whether any master of the preview is in the cluster: a preview none of whose nodes is
/// there was made for another cluster (its report would be all differences).
pub fn shares_a_node(preview: &Preview, live: &Observed) -> bool {
    preview
        .nodes
        .iter()
        .any(|p| live.nodes.iter().any(|l| same(p, l)))
}

/// Compares the cluster with the preview.
pub fn verify(
    names: (Option<&str>, &str),
    preview: &Preview,
    live: &Observed,
    keys: Option<&KeyTally>,
    values: Option<ValuesCheck>,
    tolerance: KeyTolerance,
) -> VerifyReport {
    // Preview node → live master.
    let found: Vec<Option<usize>> = preview
        .nodes
        .iter()
        .map(|p| live.nodes.iter().position(|l| same(p, l)))
        .collect();
    let mut expected: Vec<Option<usize>> = vec![None; SLOT_COUNT];
    for (i, p) in preview.nodes.iter().enumerate() {
        for &s in &p.slots {
            expected[usize::from(s)] = Some(i);
        }
    }
    let live_name = |l: usize| live.nodes[l].name.clone();
    let mut slots = Vec::new();
    let mut stray_per_live = vec![0u64; live.nodes.len()];
    let mut slots_misplaced = 0;
    for s in 0..SLOT_COUNT {
        let want = expected[s];
        let owner = live.owner[s];
        let misplaced = match want {
            Some(p) => found[p].is_none() || found[p] != owner,
            None => owner.is_some(),
        };
        slots_misplaced += usize::from(misplaced);
        let open: Vec<String> = live
            .open
            .iter()
            .filter(|m| usize::from(m.slot) == s)
            .map(open_text)
            .collect();
        let stray: Vec<Stray> = live
            .counts
            .iter()
            .enumerate()
            .filter(|&(l, c)| Some(l) != owner && c.get(s).copied().unwrap_or(0) > 0)
            .map(|(l, c)| {
                stray_per_live[l] += c[s];
                Stray {
                    node: live_name(l),
                    keys: c[s],
                }
            })
            .collect();
        let missing_keys = keys.map_or(0, |k| k.missing[s]);
        if misplaced || !open.is_empty() || !stray.is_empty() || missing_keys > 0 {
            slots.push(SlotCheck {
                slot: s as u16,
                expected: want.map(|p| preview.nodes[p].name.clone()),
                owner: owner.map(live_name),
                open,
                stray,
                missing_keys,
            });
        }
    }
    let owned_keys = |l: usize| -> u64 {
        (0..SLOT_COUNT)
            .filter(|&s| live.owner[s] == Some(l))
            .map(|s| live.counts.get(l).map_or(0, |c| c[s]))
            .sum()
    };
    let has_sample = preview.nodes.iter().any(|n| n.keys > 0);
    let mut nodes = Vec::new();
    for (i, p) in preview.nodes.iter().enumerate() {
        let l = found[i];
        let lacking = p
            .slots
            .iter()
            .filter(|&&s| l.is_none() || live.owner[usize::from(s)] != l)
            .count();
        let extra = l.map_or(0, |l| {
            (0..SLOT_COUNT)
                .filter(|&s| live.owner[s] == Some(l) && expected[s] != Some(i))
                .count()
        });
        let keys_now = l.map(owned_keys);
        let stray = l.map_or(0, |l| stray_per_live[l]);
        let missing = keys.map(|k| p.slots.iter().map(|&s| k.missing[usize::from(s)]).sum());
        let counts_differ =
            preview.counts_every_key && keys_now.is_some_and(|k| !tolerance.allows(p.keys, k));
        let verdict = match l {
            None if p.slots.is_empty() => NodeVerdict::Removed,
            None => NodeVerdict::Missing,
            Some(_) => {
                if lacking > 0 || extra > 0 || counts_differ || stray > 0 || missing > Some(0) {
                    NodeVerdict::Differs
                } else {
                    NodeVerdict::Matches
                }
            }
        };
        nodes.push(NodeCheck {
            name: p.name.clone(),
            id: p.id.clone(),
            address: p.address.clone(),
            verdict,
            slots_expected: p.slots.len(),
            slots_now: l.map(|l| live.owner.iter().filter(|&&o| o == Some(l)).count()),
            slots_lacking: lacking,
            slots_extra: extra,
            slot_ranges_expected: super::sorted_ranges(&p.slots),
            keys_expected: has_sample.then_some(p.keys),
            keys_now,
            keys_judged: preview.counts_every_key,
            stray_keys: stray,
            missing_keys: missing,
        });
    }
    for (l, n) in live.nodes.iter().enumerate() {
        if found.contains(&Some(l)) {
            continue;
        }
        let owned = live.owner.iter().filter(|&&o| o == Some(l)).count();
        let keys_now = owned_keys(l);
        let empty = owned == 0 && keys_now == 0 && stray_per_live[l] == 0;
        nodes.push(NodeCheck {
            name: n.name.clone(),
            id: n.id.clone(),
            address: n.address.clone(),
            verdict: if empty {
                NodeVerdict::NotInPreview
            } else {
                NodeVerdict::Differs
            },
            slots_expected: 0,
            slots_now: Some(owned),
            slots_lacking: 0,
            slots_extra: owned,
            slot_ranges_expected: Vec::new(),
            keys_expected: None,
            keys_now: Some(keys_now),
            keys_judged: false,
            stray_keys: stray_per_live[l],
            missing_keys: None,
        });
    }
    let keys = keys.map(|k| KeysCheck {
        sources: k.sources.clone(),
        checked: k.checked,
        missing: k.missing_total(),
        examples: k
            .examples
            .iter()
            .map(|(key, slot)| MissingKey {
                key: ByteString(key.clone()),
                slot: *slot,
                node: live.owner[usize::from(*slot)].map(live_name),
            })
            .collect(),
        expiry_checked: k.expiry_known,
        gone_expiring: k.gone_expiring,
        expiry_changed: k.expiry_changed,
        expiry_examples: k
            .expiry_examples
            .iter()
            .map(|(key, slot, had)| ExpiryChange {
                key: ByteString(key.clone()),
                slot: *slot,
                node: live.owner[usize::from(*slot)].map(live_name),
                had_expiry: *had,
            })
            .collect(),
    });
    let slots_open = slots.iter().filter(|c| !c.open.is_empty()).count();
    let stray_keys: u64 = stray_per_live.iter().sum();
    let matches = nodes.iter().all(|n| n.verdict.ok())
        && slots.is_empty()
        && keys
            .as_ref()
            .is_none_or(|k| k.missing == 0 && k.expiry_changed == 0)
        && values.as_ref().is_none_or(|v| v.keys_differing == 0);
    VerifyReport {
        preview: names.0.map(String::from),
        command: preview.command.clone(),
        cluster: names.1.to_string(),
        matches,
        slots_misplaced,
        slots_open,
        stray_keys,
        keys_judged: preview.counts_every_key,
        key_tolerance: tolerance,
        nodes,
        slots,
        keys,
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const C: &str = "cccccccccccccccccccccccccccccccccccccccc";

    /// A preview's node: id, address, slot ranges after the plan, keys after.
    type Node<'a> = (&'a str, &'a str, &'a [(u16, u16)], u64);

    fn preview_json(source: &str, nodes: &[Node<'_>]) -> String {
        let nodes: Vec<serde_json::Value> = nodes
            .iter()
            .map(|(id, addr, ranges, keys)| {
                serde_json::json!({
                    "name": addr, "id": id, "address": addr, "added": false, "emptied": ranges.is_empty(),
                    "before": {}, "after": {"slots": 0, "slot_ranges": ranges, "keys": keys}
                })
            })
            .collect();
        serde_json::json!({
            "schema_version": 2, "command": "rebalance",
            "sample": {"source": [source], "keys": 10, "scale": 1.0},
            "nodes": nodes
        })
        .to_string()
    }

    fn live(nodes: &[(&str, &str)], owner: impl Fn(usize) -> Option<usize>) -> Observed {
        Observed {
            nodes: nodes
                .iter()
                .map(|(id, addr)| LiveNode {
                    name: addr.to_string(),
                    id: Some(id.to_string()),
                    address: Some(addr.to_string()),
                })
                .collect(),
            owner: (0..SLOT_COUNT).map(owner).collect(),
            open: Vec::new(),
            counts: vec![vec![0; SLOT_COUNT]; nodes.len()],
        }
    }

    fn exact() -> String {
        SampleSource::ExactCounts.to_string()
    }

    #[test]
    fn a_cluster_in_the_previewed_state_matches() {
        let text = preview_json(
            &exact(),
            &[(A, "h:1", &[(0, 8191)], 3), (B, "h:2", &[(8192, 16383)], 1)],
        );
        let p = parse_preview(&text, 2).unwrap();
        assert!(p.counts_every_key);
        let mut l = live(&[(B, "h:2"), (A, "h:1")], |s| Some(usize::from(s < 8192)));
        l.counts[1][5] = 3;
        l.counts[0][9000] = 1;
        let r = verify(
            (Some("p.json"), "redis://h:1"),
            &p,
            &l,
            None,
            None,
            KeyTolerance::Exact,
        );
        assert!(r.matches, "{r:?}");
        assert!(r.slots.is_empty());
        assert_eq!(r.nodes[0].keys_now, Some(3));
        assert_eq!(r.nodes[0].verdict, NodeVerdict::Matches);
    }

    #[test]
    fn a_slot_not_moved_a_lost_key_and_a_stray_key_are_each_reported() {
        let text = preview_json(
            &exact(),
            &[(A, "h:1", &[(0, 8191)], 3), (B, "h:2", &[(8192, 16383)], 1)],
        );
        let p = parse_preview(&text, 2).unwrap();
        // Slot 8192 was not moved: A owns it still.
        let mut l = live(&[(A, "h:1"), (B, "h:2")], |s| Some(usize::from(s > 8192)));
        l.counts[0][5] = 2; // one key lost
        l.counts[0][9000] = 4; // keys left on A in a slot B owns
        l.counts[1][9000] = 1;
        let mut tally = KeyTally::new(vec!["k".into()]);
        tally.add(b"gone", 5, None, KeyState::Missing);
        tally.add(b"here", 5, None, KeyState::Expiring);
        let r = verify(
            (Some("p.json"), "u"),
            &p,
            &l,
            Some(&tally),
            None,
            KeyTolerance::Exact,
        );
        assert!(!r.matches);
        assert_eq!(r.slots_misplaced, 1);
        assert_eq!(r.stray_keys, 4);
        let slots: Vec<u16> = r.slots.iter().map(|c| c.slot).collect();
        assert_eq!(slots, [5, 8192, 9000]);
        assert_eq!(r.slots[0].missing_keys, 1);
        assert_eq!(r.slots[1].expected.as_deref(), Some("h:2"));
        assert_eq!(r.slots[1].owner.as_deref(), Some("h:1"));
        assert_eq!(r.slots[2].stray[0].keys, 4);
        let a = &r.nodes[0];
        assert_eq!((a.slots_lacking, a.slots_extra), (0, 1));
        assert_eq!(
            (a.keys_now, a.stray_keys, a.missing_keys),
            (Some(2), 4, Some(1))
        );
        assert_eq!(a.verdict, NodeVerdict::Differs);
        assert_eq!(r.nodes[1].slots_lacking, 1);
        let k = r.keys.unwrap();
        assert_eq!((k.checked, k.missing), (2, 1));
        assert_eq!(k.examples[0].key.0, b"gone");
    }

    #[test]
    fn a_sampled_preview_s_counts_are_not_judged() {
        let text = preview_json("sample.keys", &[(A, "h:1", &[(0, 16383)], 7)]);
        let p = parse_preview(&text, 2).unwrap();
        assert!(!p.counts_every_key);
        let l = live(&[(A, "h:1")], |_| Some(0));
        let r = verify((Some("p"), "u"), &p, &l, None, None, KeyTolerance::Exact);
        assert!(r.matches);
        assert_eq!(r.nodes[0].keys_expected, Some(7));
        assert!(!r.nodes[0].keys_judged);
    }

    #[test]
    fn removed_nodes_new_empty_masters_and_missing_nodes() {
        let text = preview_json(
            &exact(),
            &[(A, "h:1", &[(0, 16383)], 0), (B, "h:2", &[], 0)],
        );
        let p = parse_preview(&text, 2).unwrap();
        // B was removed as previewed; C is an empty master the preview did not know.
        let l = live(&[(A, "h:1"), (C, "h:3")], |_| Some(0));
        let r = verify((Some("p"), "u"), &p, &l, None, None, KeyTolerance::Exact);
        assert!(r.matches, "{r:?}");
        let v: Vec<NodeVerdict> = r.nodes.iter().map(|n| n.verdict).collect();
        assert_eq!(
            v,
            [
                NodeVerdict::Matches,
                NodeVerdict::Removed,
                NodeVerdict::NotInPreview
            ]
        );
        // A node the preview gives slots to is gone: its slots are unserved or elsewhere.
        let l = live(&[(C, "h:3")], |_| Some(0));
        let r = verify((Some("p"), "u"), &p, &l, None, None, KeyTolerance::Exact);
        assert!(!r.matches);
        assert_eq!(r.nodes[0].verdict, NodeVerdict::Missing);
        assert_eq!(r.slots_misplaced, SLOT_COUNT);
        assert_eq!(r.nodes[2].verdict, NodeVerdict::Differs);
    }

    #[test]
    fn without_a_preview_the_cluster_is_held_to_its_own_slot_map() {
        let mut l = live(&[(A, "h:1"), (B, "h:2")], |s| Some(usize::from(s >= 100)));
        l.counts[0][5] = 7;
        let p = Preview::of_cluster(&l);
        let r = verify((None, "u"), &p, &l, None, None, KeyTolerance::Exact);
        assert!(r.matches, "{r:?}");
        assert_eq!(r.command, None);
        assert_eq!(r.nodes[0].slots_expected, 100);
        assert_eq!(r.nodes[0].keys_expected, None);
        // A key on B in a slot A owns, and a key of a dump not found: both reported.
        l.counts[1][5] = 1;
        let mut tally = KeyTally::new(vec!["k".into()]);
        tally.add(b"x", 200, None, KeyState::Missing);
        let r = verify((None, "u"), &p, &l, Some(&tally), None, KeyTolerance::Exact);
        assert!(!r.matches);
        assert_eq!((r.stray_keys, r.slots_misplaced), (1, 0));
        assert_eq!(r.nodes[1].missing_keys, Some(1));
    }

    #[test]
    fn a_snapshot_s_expiries_are_held_against_the_keys_now() {
        let mut t = KeyTally::new(vec!["before.rdb".into()]);
        t.add(b"kept", 1, Some(true), KeyState::Expiring);
        t.add(b"plain", 1, Some(false), KeyState::Persistent);
        t.add(b"expired", 2, Some(true), KeyState::Missing);
        t.add(b"lost-ttl", 3, Some(true), KeyState::Persistent);
        t.add(b"new-ttl", 3, Some(false), KeyState::Expiring);
        t.add(b"dump-key", 3, None, KeyState::Expiring);
        assert_eq!((t.checked, t.expiry_known), (6, 5));
        assert_eq!(
            (t.gone_expiring, t.expiry_changed, t.missing_total()),
            (1, 2, 0)
        );
        let l = live(&[(A, "h:1")], |_| Some(0));
        let r = verify(
            (None, "u"),
            &Preview::of_cluster(&l),
            &l,
            Some(&t),
            None,
            KeyTolerance::Exact,
        );
        assert!(!r.matches, "a key's expiry lost is a difference");
        let k = r.keys.unwrap();
        assert_eq!(k.expiry_examples[0].key.0, b"lost-ttl");
        assert!(k.expiry_examples[0].had_expiry);
        assert!(!k.expiry_examples[1].had_expiry);
        let mut t = KeyTally::new(vec!["before.rdb".into()]);
        t.add(b"expired", 2, Some(true), KeyState::Missing);
        let r = verify(
            (None, "u"),
            &Preview::of_cluster(&l),
            &l,
            Some(&t),
            None,
            KeyTolerance::Exact,
        );
        assert!(r.matches, "a key that expired is no difference");
    }

    #[test]
    fn the_examples_are_the_first_by_slot_and_key_whatever_the_order() {
        let keys: Vec<(Vec<u8>, u16)> = (0..60u16)
            .map(|i| (format!("k{}", i % 7).into_bytes(), i * 37 % 50))
            .collect();
        let mut forward = KeyTally::new(Vec::new());
        let mut backward = KeyTally::new(Vec::new());
        for (k, s) in &keys {
            forward.add(k, *s, None, KeyState::Missing);
        }
        for (k, s) in keys.iter().rev() {
            backward.add(k, *s, None, KeyState::Missing);
        }
        assert_eq!(forward.examples, backward.examples);
        assert_eq!(forward.examples.len(), MISSING_EXAMPLES);
        let mut all: Vec<(u16, Vec<u8>)> = keys.iter().map(|(k, s)| (*s, k.clone())).collect();
        all.sort();
        let first: Vec<(u16, Vec<u8>)> = forward
            .examples
            .iter()
            .map(|(k, s)| (*s, k.clone()))
            .collect();
        assert_eq!(first, all[..MISSING_EXAMPLES]);
        assert_eq!(forward.missing_total(), 60);
    }

    #[test]
    fn key_counts_may_be_off_by_the_tolerance() {
        let text = preview_json(&exact(), &[(A, "h:1", &[(0, 16383)], 1000)]);
        let p = parse_preview(&text, 2).unwrap();
        let mut l = live(&[(A, "h:1")], |_| Some(0));
        l.counts[0][0] = 1010;
        let judge = |t| verify((Some("p"), "u"), &p, &l, None, None, t).matches;
        assert!(!judge(KeyTolerance::Exact));
        assert!(!judge(KeyTolerance::Keys(9)));
        assert!(judge(KeyTolerance::Keys(10)));
        assert!(judge(KeyTolerance::Percent(1.0)));
        assert!(!judge(KeyTolerance::Percent(0.9)));
        assert!(KeyTolerance::Percent(1.0).allows(1000, 990));
    }

    #[test]
    fn a_preview_of_another_cluster_shares_no_node() {
        let text = preview_json(&exact(), &[(A, "h:1", &[(0, 16383)], 0)]);
        let p = parse_preview(&text, 2).unwrap();
        assert!(shares_a_node(&p, &live(&[(A, "h:9")], |_| Some(0))));
        assert!(!shares_a_node(&p, &live(&[(B, "h:1")], |_| Some(0))));
    }

    #[test]
    fn open_slots_are_reported_with_both_sides() {
        let text = preview_json(&exact(), &[(A, "h:1", &[(0, 16383)], 0)]);
        let p = parse_preview(&text, 2).unwrap();
        let mut l = live(&[(A, "h:1")], |_| Some(0));
        l.open.push(Migration {
            slot: 42,
            node: "h:1".into(),
            peer: "h:2".into(),
            direction: MigrationDirection::Migrating,
        });
        let r = verify((Some("p"), "u"), &p, &l, None, None, KeyTolerance::Exact);
        assert!(!r.matches);
        assert_eq!(r.slots_open, 1);
        assert_eq!(r.slots[0].open, ["h:1 migrating to h:2"]);
    }

    #[test]
    fn files_that_are_not_previews_are_refused_with_the_reason() {
        let err = |t: &str| parse_preview(t, 2).unwrap_err().to_string();
        assert!(err("┌── table").starts_with("not JSON (line 1, column 1"));
        assert_eq!(err("{}"), PreviewError::NoVersion.to_string());
        assert_eq!(
            err(r#"{"schema_version":1,"command":"bench"}"#),
            "a report of keyplan bench, not a rebalance or reshard preview"
        );
        assert!(
            err(r#"{"schema_version":2,"topology":{}}"#).starts_with("a report of another command")
        );
        assert!(err(r#"{"schema_version":9,"command":"reshard"}"#).contains("schema_version 9"));
        assert!(err(r#"{"schema_version":2,"command":"reshard"}"#).starts_with("nodes:"));
        let bad = r#"{"schema_version":2,"command":"reshard","nodes":[{"name":"x","id":"a","address":null,"after":{"slot_ranges":[[5,20000]]}}]}"#;
        assert_eq!(
            err(bad),
            "nodes[0].after.slot_ranges: [5, 20000] is not a range of slots 0-16383"
        );
        let twice = preview_json(
            &exact(),
            &[(A, "h:1", &[(0, 9)], 0), (B, "h:2", &[(9, 9)], 0)],
        );
        assert!(err(&twice).ends_with("slot 9 is given to node 0 too"));
        let nameless = r#"{"schema_version":2,"command":"reshard","nodes":[{"name":"x","id":null,"address":null,"after":{"slot_ranges":[]}}]}"#;
        assert!(err(nameless).starts_with("nodes[0]: neither an id nor an address"));
        let missing = r#"{"schema_version":2,"command":"reshard","nodes":[{"name":"x"}]}"#;
        assert!(err(missing).starts_with("nodes[0]: missing field"));
    }

    fn present(kind: &str, ttl: Option<u64>, digest: &[u8]) -> KeyRead {
        KeyRead::Present {
            kind: kind.into(),
            ttl_ms: ttl,
            digest: digest.to_vec(),
        }
    }

    #[test]
    fn each_value_difference_is_counted_and_named() {
        let mut t = ValueTally::default();
        let s = present("string", None, b"a");
        t.add(b"same", 1, &s, &present("string", None, b"a"), 1000);
        t.add(b"value", 2, &s, &present("string", None, b"b"), 1000);
        t.add(b"type", 3, &s, &present("list", None, b"b"), 1000);
        t.add(b"missing", 4, &s, &KeyRead::Missing, 1000);
        let e = present("hash", Some(50_000), b"h");
        t.add(b"lost", 5, &e, &present("hash", None, b"h"), 1000);
        t.add(b"near", 6, &e, &present("hash", Some(49_500), b"h"), 1000);
        t.add(b"off", 7, &e, &present("hash", Some(40_000), b"h"), 1000);
        t.add(b"added", 8, &s, &present("string", Some(10), b"a"), 1000);
        t.add(b"gone", 9, &KeyRead::Missing, &KeyRead::Missing, 1000);
        t.add(
            b"expiring",
            10,
            &present("string", Some(800), b"a"),
            &KeyRead::Missing,
            1000,
        );
        t.add(b"both", 11, &e, &present("hash", None, b"x"), 1000);
        assert_eq!(t.checked, 10);
        assert_eq!((t.gone_at_source, t.expired), (1, 1));
        assert_eq!(t.keys_differing, 7);
        let counts: Vec<u64> = [
            ValueDiffKind::Missing,
            ValueDiffKind::Type,
            ValueDiffKind::TtlLost,
            ValueDiffKind::TtlAdded,
            ValueDiffKind::TtlOff,
            ValueDiffKind::Value,
        ]
        .iter()
        .map(|&k| t.count(k))
        .collect();
        assert_eq!(counts, [1, 1, 2, 1, 1, 2]);
        let named: Vec<(&[u8], ValueDiffKind)> = t
            .examples
            .iter()
            .map(|e| (e.key.as_slice(), e.kind))
            .collect();
        assert!(named.contains(&(b"type".as_slice(), ValueDiffKind::Type)));
        assert!(named.contains(&(b"both".as_slice(), ValueDiffKind::Value)));
        assert!(named.contains(&(b"both".as_slice(), ValueDiffKind::TtlLost)));
        let l = live(&[(A, "h:1")], |_| Some(0));
        let v = ValuesCheck::new(vec!["src".into()], ValueMethod::DumpPayload, 1000, &t, &l);
        assert_eq!((v.value_differs, v.ttl_lost, v.missing), (2, 2, 1));
        let r = verify(
            (None, "u"),
            &Preview::of_cluster(&l),
            &l,
            None,
            Some(v),
            KeyTolerance::Exact,
        );
        assert!(!r.matches);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["values"]["method"], "dump_payload");
        assert_eq!(json["values"]["examples"][0]["differs"], "missing");
        assert_eq!(json["values"]["examples"][0]["node"], "h:1");
        let clean = ValuesCheck::new(
            vec![],
            ValueMethod::DebugDigestValue,
            1000,
            &ValueTally::default(),
            &l,
        );
        let r = verify(
            (None, "u"),
            &Preview::of_cluster(&l),
            &l,
            None,
            Some(clean),
            KeyTolerance::Exact,
        );
        assert!(r.matches);
    }

    #[test]
    fn value_examples_are_the_first_of_each_kind_whatever_the_threads() {
        let s = present("string", None, b"a");
        let other = present("string", None, b"b");
        let mut whole = ValueTally::default();
        let mut parts = [
            ValueTally::default(),
            ValueTally::default(),
            ValueTally::default(),
        ];
        for i in (0..100u16).rev() {
            let key = format!("k{i:03}").into_bytes();
            whole.add(&key, i, &s, &other, 0);
            whole.add(&key, i, &s, &KeyRead::Missing, 0);
            parts[usize::from(i) % 3].add(&key, i, &s, &other, 0);
            parts[usize::from(i) % 3].add(&key, i, &s, &KeyRead::Missing, 0);
        }
        let mut merged = ValueTally::default();
        for p in parts {
            merged.merge(p);
        }
        assert_eq!(merged, whole);
        assert_eq!(whole.examples.len(), 2 * MISSING_EXAMPLES);
        assert_eq!(whole.examples[0].slot, 0);
        assert_eq!(whole.examples[0].kind, ValueDiffKind::Missing);
        assert_eq!(whole.examples[MISSING_EXAMPLES].kind, ValueDiffKind::Value);
    }
}
