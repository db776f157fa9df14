//! What `analyze` says about snapshots beyond placement: keys and memory by type, how much
//! never expires, and the biggest keys with the slot and node they live on.

use crate::rdb::summary::{BigKey, SnapshotFile, SnapshotSummary, TypeStats};
use crate::topology::Topology;
use serde::Serialize;

/// One type's row.
#[derive(Debug, Clone, Serialize)]
pub struct TypeRow {
    /// `string`, `hash`, … or a module type's name.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its figures.
    #[serde(flatten)]
    pub stats: TypeStats,
    /// Its share of all keys.
    pub share_keys: f64,
    /// Its share of all memory.
    pub share_memory: f64,
}

/// One of the biggest keys, placed.
#[derive(Debug, Clone, Serialize)]
pub struct PlacedKey {
    /// The key and its figures.
    #[serde(flatten)]
    pub key: BigKey,
    /// The node it lives on under the topology used.
    pub node: Option<String>,
}

/// The snapshot section of an analyze report.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotReport {
    /// The files read.
    pub files: Vec<SnapshotFile>,
    /// All keys together.
    pub total: TypeStats,
    /// Share of keys with no expiry.
    pub share_keys_no_expiry: f64,
    /// Share of memory in keys with no expiry.
    pub share_memory_no_expiry: f64,
    /// Types, most memory first.
    pub types: Vec<TypeRow>,
    /// The biggest keys by estimated memory.
    pub biggest_by_memory: Vec<PlacedKey>,
    /// The collections with the most elements.
    pub biggest_by_elements: Vec<PlacedKey>,
}

fn share(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Builds the section from what the reader gathered, placing keys on `topo`'s nodes.
pub fn snapshot_report(s: &SnapshotSummary, topo: &Topology, top: usize) -> SnapshotReport {
    let total = s.total();
    let mut types: Vec<TypeRow> = s
        .by_type()
        .into_iter()
        .map(|(k, t)| TypeRow {
            share_keys: share(t.keys, total.keys),
            share_memory: share(t.memory, total.memory),
            kind: k,
            stats: t,
        })
        .collect();
    types.sort_by(|a, b| {
        b.stats
            .memory
            .cmp(&a.stats.memory)
            .then_with(|| a.kind.cmp(&b.kind))
    });
    let names: Vec<&str> = topo.nodes().iter().map(|n| n.name.as_str()).collect();
    let place = |v: Vec<BigKey>| -> Vec<PlacedKey> {
        v.into_iter()
            .take(top)
            .map(|key| PlacedKey {
                node: topo.node_of(&key.key.0).map(|i| names[i].to_string()),
                key,
            })
            .collect()
    };
    SnapshotReport {
        files: s.files.clone(),
        share_keys_no_expiry: share(total.keys_no_expiry, total.keys),
        share_memory_no_expiry: share(total.memory_no_expiry, total.memory),
        total,
        types,
        biggest_by_memory: place(s.biggest_by_memory()),
        biggest_by_elements: place(s.biggest_by_elements()),
    }
}
