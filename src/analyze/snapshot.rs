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

/// The snapshot section of an analyze report (for a live sample with `--bytes`: its biggest
/// keys only).
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotReport {
    /// `snapshot` (RDB files: every key) or `sample` (a live sample: its biggest keys, as the
    /// servers describe them; `files`, `total` and `types` are empty).
    pub source: &'static str,
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
        source: "snapshot",
        files: s.files.clone(),
        share_keys_no_expiry: share(total.keys_no_expiry, total.keys),
        share_memory_no_expiry: share(total.memory_no_expiry, total.memory),
        total,
        types,
        biggest_by_memory: place(s.biggest_by_memory()),
        biggest_by_elements: place(s.biggest_by_elements()),
    }
}

/// What a server says of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFacts {
    /// `TYPE`.
    pub kind: String,
    /// `OBJECT ENCODING`.
    pub encoding: String,
    /// Elements (`LLEN`, `SCARD`, …; `STRLEN` for a string), when the type has a count.
    pub elements: Option<u64>,
    /// Whether `PTTL` says it expires.
    pub expires: bool,
}

/// The `n` biggest keys of a sample by bytes (ties: the smaller key), deterministically.
#[derive(Debug, Clone, Default)]
pub struct Biggest {
    n: usize,
    keys: Vec<(u64, Vec<u8>)>,
}

impl Biggest {
    /// Keeps the `n` biggest.
    pub fn new(n: usize) -> Biggest {
        Biggest {
            n,
            keys: Vec::new(),
        }
    }

    fn worst(&self) -> Option<(u64, &[u8])> {
        self.keys.last().map(|(b, k)| (*b, k.as_slice()))
    }

    /// Offers one key.
    pub fn offer(&mut self, bytes: u64, key: &[u8]) {
        if self.n == 0 {
            return;
        }
        if self.keys.len() >= self.n
            && let Some((b, k)) = self.worst()
            && (bytes, std::cmp::Reverse(key)) <= (b, std::cmp::Reverse(k))
        {
            return;
        }
        let at = self.keys.partition_point(|(b, k)| {
            (*b, std::cmp::Reverse(k.as_slice())) > (bytes, std::cmp::Reverse(key))
        });
        self.keys.insert(at, (bytes, key.to_vec()));
        self.keys.truncate(self.n);
    }

    /// Adds another's keys.
    pub fn merge(&mut self, o: &Biggest) {
        for (b, k) in &o.keys {
            self.offer(*b, k);
        }
    }

    /// The keys, biggest first.
    pub fn keys(&self) -> &[(u64, Vec<u8>)] {
        &self.keys
    }
}

/// The section for a live sample: its biggest keys by bytes (`MEMORY USAGE`) with what their
/// servers say of them (`facts[i]` for `keys[i]`; `None`: gone since sampled), and the same
/// keys ranked by elements.
pub fn sample_report(
    keys: &[(u64, Vec<u8>)],
    facts: &[Option<KeyFacts>],
    topo: &Topology,
    top: usize,
) -> SnapshotReport {
    let names: Vec<&str> = topo.nodes().iter().map(|n| n.name.as_str()).collect();
    let described: Vec<PlacedKey> = keys
        .iter()
        .zip(facts)
        .filter_map(|((bytes, key), f)| {
            let f = f.as_ref()?;
            let node = topo.node_of(key).map(|i| names[i].to_string());
            Some(PlacedKey {
                key: BigKey {
                    key: crate::keys::display::ByteString(key.clone()),
                    slot: crate::slot::key_slot(key),
                    kind: f.kind.clone(),
                    encoding: f.encoding.clone(),
                    elements: f.elements,
                    memory: *bytes,
                    serialized: None,
                    expires: f.expires,
                    file: node.clone().unwrap_or_default(),
                },
                node,
            })
        })
        .collect();
    let mut by_elements: Vec<PlacedKey> = described
        .iter()
        .filter(|p| p.key.kind != "string")
        .cloned()
        .collect();
    // Most elements first, then by key.
    by_elements.sort_by(|a, b| {
        (std::cmp::Reverse(a.key.elements), &a.key.key.0)
            .cmp(&(std::cmp::Reverse(b.key.elements), &b.key.key.0))
    });
    by_elements.truncate(top);
    SnapshotReport {
        source: "sample",
        files: Vec::new(),
        total: TypeStats::default(),
        share_keys_no_expiry: 0.0,
        share_memory_no_expiry: 0.0,
        types: Vec::new(),
        biggest_by_memory: described.into_iter().take(top).collect(),
        biggest_by_elements: by_elements,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn biggest_keeps_the_largest_in_any_order() {
        let items = [
            (5u64, b"a".to_vec()),
            (9, b"b".to_vec()),
            (9, b"a".to_vec()),
            (1, b"c".to_vec()),
        ];
        let mut fwd = Biggest::new(2);
        let mut rev = Biggest::new(2);
        for (b, k) in &items {
            fwd.offer(*b, k);
        }
        for (b, k) in items.iter().rev() {
            rev.offer(*b, k);
        }
        assert_eq!(fwd.keys(), rev.keys());
        assert_eq!(fwd.keys(), &[(9, b"a".to_vec()), (9, b"b".to_vec())]);
    }
}
