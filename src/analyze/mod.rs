//! `analyze`: one streaming pass over a key dump.
//!
//! Each worker owns an [`Analyzer`]: per-slot counts of keys, bytes and ops, hash-tag sketches
//! (a HyperLogLog of distinct tags and Space-Saving tables of the heaviest tags by keys and by
//! bytes) and a pattern tree. Memory does not grow with the number of keys. Workers are merged
//! and [`Analyzer::finish`] turns the result into an [`AnalyzeReport`], the versioned JSON
//! contract documented in README.

pub mod snapshot;
mod tags;

use crate::keys::display::ByteString;
use crate::keys::parallel::{ChunkSink, RawChunk};
use crate::keys::{ReadSummary, Record};
use crate::pattern::{Delimiters, Observation, Pattern, PatternTree};
use crate::sketch::{Hll, SpaceSaving, hash64};
use crate::skew::{Skew, describe, skew};
use crate::slot::bulk::{BulkScanner, KeySpan, LineCounts};
use crate::slot::{SLOT_COUNT, crc16};
use crate::topology::{Migration, Topology};
use serde::Serialize;

/// How `analyze` summarises.
#[derive(Debug, Clone)]
pub struct AnalyzeConfig {
    /// Rows in the top-N lists (hot slots, hot tags; patterns in tables).
    pub top: usize,
    /// A tag holding more than this share (0..1) of all keys or bytes is flagged hot.
    pub hot_tag_share: f64,
    /// Pattern delimiters.
    pub delimiters: Delimiters,
    /// Counters per heavy-hitter table.
    pub heavy_capacity: usize,
    /// Most patterns listed in the report.
    pub max_patterns: usize,
}

impl Default for AnalyzeConfig {
    fn default() -> Self {
        AnalyzeConfig {
            top: 10,
            hot_tag_share: 0.01,
            delimiters: Delimiters::default(),
            heavy_capacity: 512,
            max_patterns: 200,
        }
    }
}

/// A slot holding more than this share of the keys is a hot spot the verdict names (a slot's
/// fair share is 1/16384, about 0.006%).
const HOT_SLOT_SHARE: f64 = 0.02;
/// A tag holding more than this share of the keys or bytes is named by the verdict.
const HOT_TAG_VERDICT_SHARE: f64 = 0.05;

/// How many spans ahead of the one counted the bulk path prefetches its slot's counter.
const PREFETCH_AHEAD: usize = 8;

/// One worker's running state. Aligned to 128 bytes so that workers kept side by side in one
/// `Vec` never share a cache line (their per-key counters would ping-pong between cores).
#[repr(align(128))]
pub struct Analyzer<'t> {
    topology: &'t Topology,
    /// Keys per slot (128 KiB, half of what keys and bytes side by side took: a key dump's
    /// counters stay in the cache that the pattern and tag tables share).
    slot_keys: Vec<u64>,
    /// Bytes per slot, touched only by keys that weigh something.
    slot_bytes: Vec<u64>,
    /// Operations per slot, touched only by inputs that have them.
    slot_ops: Vec<f64>,
    node_keys: Vec<u64>,
    node_bytes: Vec<u64>,
    /// Per node, the sum of squared key bytes (the sample's variance, for intervals).
    node_bytes_sq: Vec<f64>,
    node_ops: Vec<f64>,
    unplaced: u64,
    /// Keys are placed by a Redis Enterprise hashing policy's rules, not by `{…}` tags.
    by_policy: bool,
    /// Keys no rule of that policy matches (the database refuses them), and a few of them.
    unhashable: u64,
    unhashable_examples: Vec<Vec<u8>>,
    ring: bool,
    tagged: u64,
    tag_hll: Hll,
    tags_by_keys: SpaceSaving,
    tags_by_bytes: SpaceSaving,
    /// Every tag's exact figures while the tags are few.
    exact_tags: tags::ExactTags,
    patterns: PatternTree,
    scanner: BulkScanner,
    saw_bytes: bool,
    saw_ops: bool,
    /// Whether the input says which keys expire (snapshots), and whether the key being
    /// counted does.
    saw_expiry: bool,
    current_expires: bool,
    /// Keys per slot as the servers count them (a live cluster), overriding the sample's.
    exact_slot_keys: Option<Vec<u64>>,
    /// Each node's data bytes as it reports them (a live cluster).
    node_dataset: Option<Vec<u64>>,
    /// Where the ops weights come from, when the servers measured them (a live cluster).
    ops_source: Option<OpsSource>,
    /// Each node's measured load (a live cluster): CPU µs, request and reply bytes.
    node_load: Option<Vec<ServerLoad>>,
}

/// A figure of the whole cluster estimated from a sample, with a 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// Lower end of the 95% interval.
    pub low: f64,
    /// Upper end of the 95% interval.
    pub high: f64,
}

/// A node's total bytes from `n` sampled keys of `big_n` (their bytes summing to `sum`, squares
/// to `sq`): the mean times the node's keys, with the normal 95% interval of a simple random
/// sample (finite-population corrected; a live cluster's sample is one, drawn by RANDOMKEY).
/// Sizes come in allocator steps, so a sample may show no variation while the rest of the node
/// has some: then the variance is taken as what 3/n of the keys (the 95% bound on a share never
/// seen in n draws) differing by the mean size would give, never zero.
fn bytes_estimate(n: u64, big_n: u64, sum: f64, sq: f64) -> Option<Estimate> {
    if n == 0 {
        return None;
    }
    let (nf, bn) = (n as f64, big_n as f64);
    let mean = sum / nf;
    let var = if n > 1 {
        ((sq - nf * mean * mean) / (nf - 1.0)).max(0.0)
    } else {
        0.0
    };
    let fpc = if bn > 0.0 {
        (1.0 - nf / bn).max(0.0)
    } else {
        0.0
    };
    let var = if var == 0.0 && n > 1 && n < big_n {
        3.0 / nf * mean * mean
    } else {
        var
    };
    let half = 1.96 * bn * (var / nf * fpc).sqrt();
    let value = mean * bn;
    Some(Estimate {
        value,
        low: (value - half).max(0.0),
        high: value + half,
    })
}

/// A node's load as its server measured it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServerLoad {
    /// CPU time in commands, in microseconds.
    pub cpu_usec: u64,
    /// Request bytes received (per-slot counters only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_bytes_in: Option<u64>,
    /// Reply bytes sent (per-slot counters only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_bytes_out: Option<u64>,
}

impl ServerLoad {
    /// Each node's sums of the servers' per-slot load (CPU µs, network bytes in and out; 16384
    /// entries each).
    pub fn per_node(
        topology: &crate::topology::Topology,
        cpu_usec: &[u64],
        net_in: &[u64],
        net_out: &[u64],
    ) -> Vec<ServerLoad> {
        let mut out = vec![
            ServerLoad {
                cpu_usec: 0,
                network_bytes_in: Some(0),
                network_bytes_out: Some(0),
            };
            topology.nodes().len()
        ];
        for s in 0..crate::slot::SLOT_COUNT {
            if let Some(i) = topology.node_of_slot(s as u16) {
                let n = &mut out[i];
                n.cpu_usec += cpu_usec[s];
                n.network_bytes_in = n.network_bytes_in.map(|b| b + net_in[s]);
                n.network_bytes_out = n.network_bytes_out.map(|b| b + net_out[s]);
            }
        }
        out
    }
}

impl<'t> Analyzer<'t> {
    /// A fresh analyzer placing keys on `topology`.
    pub fn new(topology: &'t Topology, config: &AnalyzeConfig) -> Analyzer<'t> {
        Analyzer {
            topology,
            slot_keys: vec![0; SLOT_COUNT],
            slot_bytes: vec![0; SLOT_COUNT],
            slot_ops: vec![0.0; SLOT_COUNT],
            node_keys: vec![0; topology.nodes().len()],
            node_bytes: vec![0; topology.nodes().len()],
            node_bytes_sq: vec![0.0; topology.nodes().len()],
            node_ops: vec![0.0; topology.nodes().len()],
            unplaced: 0,
            by_policy: topology.slot_map().is_some_and(|m| m.custom_hashing()),
            unhashable: 0,
            unhashable_examples: Vec::new(),
            ring: topology.ring().is_some(),
            tagged: 0,
            tag_hll: Hll::new(14),
            tags_by_keys: SpaceSaving::new(config.heavy_capacity),
            tags_by_bytes: SpaceSaving::new(config.heavy_capacity),
            exact_tags: tags::ExactTags::new(),
            patterns: PatternTree::new(config.delimiters.clone(), topology.nodes().len()),
            scanner: BulkScanner::new(),
            saw_bytes: false,
            saw_ops: false,
            saw_expiry: false,
            current_expires: false,
            exact_slot_keys: None,
            node_dataset: None,
            ops_source: None,
            node_load: None,
        }
    }

    /// Each node's data bytes as the node reports them (`INFO memory`), shown next to the
    /// sample's bytes.
    pub fn set_node_dataset(&mut self, bytes: Vec<u64>) {
        self.node_dataset = Some(bytes);
    }

    /// The servers' own measure of each slot's load (CPU µs from `CLUSTER SLOT-STATS`) as the
    /// ops weights of slots and nodes: node shares, hot slots by load and the verdict follow
    /// it. `since` says over what time the servers measured it.
    pub fn set_slot_ops(&mut self, ops: Vec<f64>, since: String) {
        let topo = self.topology;
        self.node_ops = vec![0.0; topo.nodes().len()];
        for (s, &o) in ops.iter().enumerate() {
            if let Some(i) = topo.node_of_slot(s as u16) {
                self.node_ops[i] += o;
            }
        }
        self.slot_ops = ops;
        self.saw_ops = true;
        self.ops_source = Some(OpsSource::SlotStatsCpu { since });
    }

    /// Says the ops weights the keys carried are their LFU counters (`OBJECT FREQ`).
    pub fn set_ops_from_heat(&mut self) {
        self.ops_source = Some(OpsSource::ObjectFreq);
    }

    /// Each node's load as its server measured it.
    pub fn set_node_load(&mut self, load: Vec<ServerLoad>) {
        self.node_load = Some(load);
    }

    /// The servers' own key count of every slot (`CLUSTER COUNTKEYSINSLOT` or
    /// `CLUSTER SLOT-STATS`): node and slot key figures, their skew and the verdict come from
    /// these; patterns and tags stay figures of the sample.
    pub fn set_exact_slot_keys(&mut self, counts: Vec<u64>) {
        self.exact_slot_keys = Some(counts);
    }

    /// Counts one key with its weights.
    #[inline]
    pub fn add(&mut self, key: &[u8], bytes: Option<u64>, ops: Option<f64>) {
        self.add_in(key, 0, key.len(), bytes, ops);
    }

    /// Counts the key `buf[a..b]` (the bytes around it let the CRC take its fastest path).
    #[inline]
    pub fn add_in(&mut self, buf: &[u8], a: usize, b: usize, bytes: Option<u64>, ops: Option<f64>) {
        let key = &buf[a..b];
        if self.by_policy
            && let Some(map) = self.topology.slot_map()
        {
            // What the database's rules hash; a key no rule matches is refused (unplaced).
            match map.place_key(key) {
                Some((slot, hashed)) => {
                    let tag = (hashed.len() < key.len()).then_some(hashed);
                    self.add_placed(key, slot, tag, bytes, ops);
                }
                None => {
                    self.unplaced += 1;
                    self.unhashable += 1;
                    // The three smallest: the same whichever worker saw which key.
                    let ex = &mut self.unhashable_examples;
                    if ex.len() < 3 || ex.last().is_some_and(|l| key < l.as_slice()) {
                        ex.push(key.to_vec());
                        ex.sort();
                        ex.dedup();
                        ex.truncate(3);
                    }
                }
            }
            return;
        }
        let p = crate::slot::place_in(buf, a, b);
        self.add_placed(key, p.slot, p.tag(key), bytes, ops);
    }

    /// Counts a key found by the bulk scan (its slot and tag are known).
    #[inline]
    fn add_span(&mut self, buf: &[u8], s: &KeySpan) {
        let tag = s.tagged().then(|| &buf[s.hash_start..s.hash_end]);
        self.add_placed(&buf[s.start..s.end], s.slot, tag, None, None);
    }

    /// Counts `key` on `slot`, with its non-empty hash tag if any.
    #[inline(always)]
    fn add_placed(
        &mut self,
        key: &[u8],
        slot: u16,
        tag: Option<&[u8]>,
        bytes: Option<u64>,
        ops: Option<f64>,
    ) {
        let slot = slot as usize;
        let w = bytes.unwrap_or(0);
        let o = ops.unwrap_or(0.0);
        self.saw_bytes |= bytes.is_some();
        self.saw_ops |= ops.is_some();
        self.slot_keys[slot] += 1;
        if w > 0 {
            self.slot_bytes[slot] += w;
        }
        if ops.is_some() {
            self.slot_ops[slot] += o;
        }
        let weighted = bytes.is_some() || ops.is_some();
        // A ring hashes what its own rule picks (twemproxy's `hash_tag`, Jedis' key tag), the
        // whole key without one: a `{…}` is a tag only where the ring reads it as one.
        let tag = match self.topology.ring() {
            Some(r) => {
                let hashed = r.hashed(key);
                (hashed.len() < key.len() && !hashed.is_empty()).then_some(hashed)
            }
            None => tag,
        };
        let tag_hash = tag.map(hash64);
        if let (Some(hashed), Some(h)) = (tag, tag_hash) {
            self.tagged += 1;
            self.tag_hll.insert_hash(h);
            self.tags_by_keys.add_hashed(hashed, h, 1, w);
            self.exact_tags.add(hashed, h, w);
            if w > 0 {
                self.tags_by_bytes.add_hashed(hashed, h, w, 1);
            }
        }
        let node = if self.ring {
            self.topology.node_of(key)
        } else {
            self.topology.node_of_slot(slot as u16)
        };
        match node {
            Some(i) => {
                self.node_keys[i] += 1;
                if weighted {
                    self.node_bytes[i] += w;
                    self.node_bytes_sq[i] += (w as f64) * (w as f64);
                    self.node_ops[i] += o;
                }
            }
            None => self.unplaced += 1,
        }
        self.patterns.add_with_tag_hash(
            &Observation {
                key,
                bytes: w,
                ops: o,
                node,
                tag,
                slot: slot as u16,
                expires: self.current_expires,
            },
            tag_hash,
        );
    }

    /// Adds another worker's counts to these.
    pub fn merge(&mut self, o: &Analyzer<'_>) {
        for (a, b) in self.slot_keys.iter_mut().zip(&o.slot_keys) {
            *a += b;
        }
        for (a, b) in self.slot_bytes.iter_mut().zip(&o.slot_bytes) {
            *a += b;
        }
        for (a, b) in self.slot_ops.iter_mut().zip(&o.slot_ops) {
            *a += b;
        }
        for (a, b) in self.node_keys.iter_mut().zip(&o.node_keys) {
            *a += b;
        }
        for (a, b) in self.node_bytes.iter_mut().zip(&o.node_bytes) {
            *a += b;
        }
        for (a, b) in self.node_bytes_sq.iter_mut().zip(&o.node_bytes_sq) {
            *a += b;
        }
        for (a, b) in self.node_ops.iter_mut().zip(&o.node_ops) {
            *a += b;
        }
        self.unplaced += o.unplaced;
        self.unhashable += o.unhashable;
        self.unhashable_examples
            .extend(o.unhashable_examples.iter().cloned());
        self.unhashable_examples.sort();
        self.unhashable_examples.dedup();
        self.unhashable_examples.truncate(3);
        self.tagged += o.tagged;
        self.tag_hll.merge(&o.tag_hll);
        self.tags_by_keys.merge(&o.tags_by_keys);
        self.tags_by_bytes.merge(&o.tags_by_bytes);
        self.exact_tags.merge(&o.exact_tags);
        self.patterns.merge(&o.patterns);
        self.saw_bytes |= o.saw_bytes;
        self.saw_ops |= o.saw_ops;
        self.saw_expiry |= o.saw_expiry;
    }
}

impl ChunkSink for Analyzer<'_> {
    #[inline(always)]
    fn expect(&self, placed: &crate::slot::Placement) {
        if let Some(t) = self.slot_keys.get(placed.slot as usize) {
            crate::keys::parallel::prefetch(t);
        }
        if let Some(t) = self.slot_bytes.get(placed.slot as usize) {
            crate::keys::parallel::prefetch(t);
        }
    }

    fn record(&mut self, rec: &Record<'_>) {
        if let Some(e) = rec.expires {
            self.saw_expiry = true;
            self.current_expires = e;
        }
        match rec.placed {
            // The reader's slot is the slot rule's; a database's own policy decides its own.
            Some(p) if !self.by_policy => {
                self.add_placed(rec.key, p.slot, p.tag(rec.key), rec.bytes, rec.ops);
            }
            _ => self.add(rec.key, rec.bytes, rec.ops),
        }
        self.current_expires = false;
    }

    fn raw_lines(&mut self, c: &mut RawChunk<'_>) -> Option<LineCounts> {
        if self.by_policy {
            // The bulk scan hashes `{…}` tags: each key goes through the policy instead.
            return None;
        }
        let mut scanner = std::mem::take(&mut self.scanner);
        let counts = scanner.scan_keys(c.data, c.max_line, &mut c.long, |piece, spans| {
            // The slot counters are read at random: the load of a later span's is started
            // while this one is counted.
            for (i, s) in spans.iter().enumerate() {
                if let Some(ahead) = spans.get(i + PREFETCH_AHEAD)
                    && let Some(t) = self.slot_keys.get(ahead.slot as usize)
                {
                    crate::keys::parallel::prefetch(t);
                }
                self.add_span(piece, s);
            }
        });
        self.scanner = scanner;
        Some(counts)
    }
}

/// A finding of `analyze` beyond the tables: what it is, its figures, and a sentence.
#[derive(Debug, Clone, Serialize)]
pub struct Note {
    /// What kind of finding, with its figures (`kind` names it in JSON).
    #[serde(flatten)]
    pub what: NoteKind,
    /// The finding in words.
    pub text: String,
}

/// The kinds of [`Note`].
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NoteKind {
    /// A pattern's keys gather on one node far beyond its fair share.
    PatternOnOneNode {
        /// The pattern.
        pattern: String,
        /// Its keys.
        keys: u64,
        /// The node.
        node: String,
        /// The share of the pattern's keys on that node (0–1).
        share: f64,
        /// The node's share of slots (or of the ring) (0–1).
        fair_share: f64,
    },
    /// A pattern whose hash tag takes few values: its hottest values and their shares.
    TagValues {
        /// The pattern.
        pattern: String,
        /// Its tag's estimated number of values.
        values: u64,
        /// The hottest values: (tag, keys, share of the pattern's keys).
        hottest: Vec<(String, u64, f64)>,
    },
    /// On a client-side ring, keys that differ only in their last character land together.
    RingClusters {
        /// Patterns where they do.
        patterns: usize,
        /// Patterns checked.
        checked: usize,
        /// Servers on the ring.
        servers: usize,
        /// Up to three examples in words.
        examples: Vec<String>,
    },
    /// twemproxy's fnv1a_64 hash, which is the cause of such clustering.
    WeakRingHash {
        /// The hash.
        hash: String,
    },
    /// On a Redis Enterprise database, keys no rule of its hashing policy matches.
    Unhashable {
        /// How many.
        keys: u64,
        /// Up to three of them.
        examples: Vec<String>,
    },
}

/// What kind of topology keys are placed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TopologyKind {
    /// A Redis Cluster slot map.
    Cluster,
    /// A client-side ring of servers.
    Ring,
}

impl TopologyKind {
    /// What a node's nominal share is a share of: slots, or the ring.
    pub fn nominal(self) -> &'static str {
        match self {
            TopologyKind::Cluster => "slots",
            TopologyKind::Ring => "ring",
        }
    }
}

/// Where the ops weights come from when the servers measured them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpsSource {
    /// CPU µs per slot from `CLUSTER SLOT-STATS`, over the time given in words.
    SlotStatsCpu {
        /// Since when, or over what window.
        since: String,
    },
    /// Each sampled key's LFU counter (`OBJECT FREQ`).
    ObjectFreq,
}

impl OpsSource {
    /// The ops are CPU time.
    pub fn is_cpu(&self) -> bool {
        matches!(self, OpsSource::SlotStatsCpu { .. })
    }
}

impl std::fmt::Display for OpsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpsSource::SlotStatsCpu { since } => {
                write!(f, "CPU µs per slot from CLUSTER SLOT-STATS: {since}")
            }
            OpsSource::ObjectFreq => f.write_str(
                "OBJECT FREQ of each sampled key (its LFU access counter, logarithmic: a heat rank, not a count of operations)",
            ),
        }
    }
}

impl Serialize for OpsSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where the topology came from and what it says.
#[derive(Debug, Clone, Serialize)]
pub struct TopologyInfo {
    /// A slot map or a ring.
    pub kind: TopologyKind,
    /// In words: `default: 3 masters as redis-cli --cluster create assigns slots`, …
    pub source: String,
    /// Number of nodes keys can land on.
    pub nodes: usize,
    /// Slots no node serves (with --allow-partial), as `[first, last]` ranges.
    pub uncovered_slots: Vec<(u16, u16)>,
    /// Slots in migration.
    pub migrating: Vec<Migration>,
}

/// Totals over the whole input.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// Keys: those read from a dump, or the servers' exact count on a live cluster.
    pub keys: u64,
    /// Keys sampled from a live cluster, when `keys` is the servers' count (patterns, tags and
    /// bytes are figures of this sample).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<u64>,
    /// Sum of the bytes weights (0 without weights).
    pub bytes: u64,
    /// Sum of the ops weights (0 without weights).
    pub ops: f64,
    /// Whether the input carried bytes weights.
    pub has_bytes: bool,
    /// Whether the input carried ops weights.
    pub has_ops: bool,
    /// Where the ops weights come from when the servers measured them (`CLUSTER SLOT-STATS`
    /// CPU µs, and over what time); absent for a dump's ops column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_source: Option<OpsSource>,
    /// Lines read.
    pub lines: u64,
    /// Blank lines skipped.
    pub blank_lines: u64,
    /// Malformed lines skipped.
    pub malformed_lines: u64,
    /// Keys with a non-empty hash tag.
    pub tagged_keys: u64,
    /// Share of keys with a hash tag (0..1).
    pub tagged_share: f64,
    /// Estimated number of distinct hash tags (HyperLogLog, ~1% error).
    pub distinct_tags_estimate: u64,
    /// Keys on slots that no node serves (with --allow-partial).
    pub uncovered_keys: u64,
}

/// One node's load.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    /// The name keyplan uses (address, or `master-N`).
    pub id: String,
    /// The cluster node id, when known.
    pub node_id: Option<String>,
    /// `host:port`, when known.
    pub address: Option<String>,
    /// Slot ranges, each `[first, last]` (inclusive).
    pub slot_ranges: Vec<(u16, u16)>,
    /// Slots served.
    pub slots: usize,
    /// Keys.
    pub keys: u64,
    /// Keys sampled from it, when `keys` is the servers' count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<u64>,
    /// The node's data bytes as it reports them (`INFO memory` `used_memory_dataset`; a live
    /// cluster only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset_bytes: Option<u64>,
    /// The node's load as its server measured it (a live cluster only).
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub load: Option<ServerLoad>,
    /// Bytes (of the sample, on a live cluster).
    pub bytes: u64,
    /// The node's bytes estimated from the sample (its sampled bytes per key times its exact
    /// keys), with a 95% interval: a live cluster with bytes sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_bytes: Option<Estimate>,
    /// Ops.
    pub ops: f64,
    /// Share of all keys (0..1).
    pub share_keys: f64,
    /// Share of all bytes (0..1).
    pub share_bytes: f64,
    /// Share of all ops (0..1).
    pub share_ops: f64,
    /// Share of the 16384 slots (0..1).
    pub share_slots: f64,
    /// Replicas (from CLUSTER NODES).
    pub replicas: usize,
    /// Flags worth knowing (`fail`, `noaddr`, …).
    pub flags: Vec<String>,
}

/// Skew of each weight, and a verdict in words.
#[derive(Debug, Clone, Serialize)]
pub struct SkewReport {
    /// By keys.
    pub keys: Option<Skew>,
    /// By bytes (with weights).
    pub bytes: Option<Skew>,
    /// By ops (with weights).
    pub ops: Option<Skew>,
    /// By the servers' own data bytes (`used_memory_dataset`, a live cluster), present when
    /// it is out of line (1.1× the mean node or more) and so part of the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<Skew>,
    /// Plain words, most important first.
    pub verdict: String,
}

/// A hot slot.
#[derive(Debug, Clone, Serialize)]
pub struct SlotReport {
    /// The slot.
    pub slot: u16,
    /// Its node.
    pub node: Option<String>,
    /// Keys.
    pub keys: u64,
    /// Bytes.
    pub bytes: u64,
    /// Ops.
    pub ops: f64,
    /// Share of all keys (0..1).
    pub share_keys: f64,
    /// Share of all bytes (0..1).
    pub share_bytes: f64,
    /// Share of all ops (0..1).
    pub share_ops: f64,
}

/// The two tag tables with one figure per tag. A tag ranked in both is bounded by both
/// sketches: each ranks its own weight by an upper bound (and its error), and carries the
/// other weight counted while it held the tag (a lower bound); their intersection is shown
/// in both tables. Without it the tables disagreed for one tag (`≈4106` keys and `≥4000`),
/// and each showed the looser bound.
fn reconcile_tags(
    mut by_keys: Vec<TagReport>,
    mut by_bytes: Vec<TagReport>,
    hot_share: f64,
) -> (Vec<TagReport>, Vec<TagReport>) {
    for k in &mut by_keys {
        let Some(b) = by_bytes.iter_mut().find(|b| b.tag == k.tag) else {
            continue;
        };
        let keys_low = k.keys.saturating_sub(k.keys_error).max(b.keys).min(k.keys);
        let bytes_low = b
            .bytes
            .saturating_sub(b.bytes_error)
            .max(k.bytes)
            .min(b.bytes);
        k.keys_error = k.keys - keys_low;
        k.bytes = b.bytes;
        k.estimated_bytes = b.estimated_bytes;
        k.bytes_error = b.bytes - bytes_low;
        k.share_bytes = b.share_bytes;
        b.keys = k.keys;
        b.keys_error = k.keys_error;
        b.estimated_keys = k.estimated_keys;
        b.share_keys = k.share_keys;
        b.bytes_error = k.bytes_error;
        b.keys_lower_bound = false;
        for t in [&mut *k, &mut *b] {
            t.hot = t.share_keys > hot_share || t.share_bytes > hot_share;
        }
    }
    (by_keys, by_bytes)
}

impl TagReport {
    /// Whether most of the ranked figure (keys, or bytes `by_bytes`) may be the sketch's
    /// error (a 2-key tag that reads 31): such rows are left out of the tables, JSON keeps
    /// them with their error.
    pub fn mostly_error(&self, by_bytes: bool) -> bool {
        if by_bytes {
            self.bytes_error.saturating_mul(2) > self.bytes
        } else {
            self.keys_error.saturating_mul(2) > self.keys
        }
    }
}

/// A heavy hash tag.
#[derive(Debug, Clone, Serialize)]
pub struct TagReport {
    /// The tag bytes.
    pub tag: ByteString,
    /// The slot all its keys share.
    pub slot: u16,
    /// Its node.
    pub node: Option<String>,
    /// Keys carrying it (upper bound; of the sample, on a live cluster).
    pub keys: u64,
    /// The tag's keys in the whole cluster, estimated from a live sample (its node's exact keys
    /// over its sampled ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_keys: Option<f64>,
    /// How much `keys` may over-count.
    pub keys_error: u64,
    /// Bytes of its keys (approximate unless `exact`; of the sample, on a live cluster).
    pub bytes: u64,
    /// The tag's bytes in the whole cluster, estimated from a live sample as
    /// `estimated_keys` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_bytes: Option<f64>,
    /// How much `bytes` may over-count (the table by bytes ranks by an upper bound; 0 when
    /// `exact`).
    pub bytes_error: u64,
    /// `keys` was counted only while the ranking by bytes held the tag: a lower bound (a tag
    /// not in the ranking by keys).
    #[serde(skip)]
    pub keys_lower_bound: bool,
    /// Every key of the tag was counted: `keys` and `bytes` are exact figures (of the sample,
    /// on a live cluster), not a sketch's bounds.
    pub exact: bool,
    /// Share of all keys (0..1).
    pub share_keys: f64,
    /// Share of all bytes (0..1).
    pub share_bytes: f64,
    /// Whether it holds more than the hot-tag threshold of keys or bytes.
    pub hot: bool,
}

/// One node's part of a pattern.
#[derive(Debug, Clone, Serialize)]
pub struct PatternNode {
    /// The node.
    pub node: String,
    /// The pattern's keys there.
    pub keys: u64,
    /// Share of the pattern's keys (0..1).
    pub share: f64,
}

/// An inferred key pattern.
#[derive(Debug, Clone, Serialize)]
pub struct PatternReport {
    /// e.g. `feed:{group_<int>}:user:<int>`.
    pub pattern: String,
    /// Keys (of the sample, on a live cluster).
    pub keys: u64,
    /// The pattern's keys in the whole cluster, estimated from a live sample: each node's
    /// sampled keys weigh its exact keys over its sampled ones (`share_keys` is this estimate's
    /// share then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_keys: Option<f64>,
    /// Bytes.
    pub bytes: u64,
    /// Keys with no expiry (snapshot inputs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys_no_expiry: Option<u64>,
    /// Bytes of the keys with no expiry (snapshot inputs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_no_expiry: Option<u64>,
    /// Ops.
    pub ops: f64,
    /// Share of all keys (0..1).
    pub share_keys: f64,
    /// Share of all bytes (0..1).
    pub share_bytes: f64,
    /// The hash tag's pattern, e.g. `group_<int>`.
    pub tag: Option<String>,
    /// Estimated distinct tag values.
    pub tag_cardinality: Option<u64>,
    /// Per node, in node order.
    pub nodes: Vec<PatternNode>,
    /// The node holding the largest share of this pattern's keys compared with its slot share.
    pub hottest_node: Option<String>,
    /// Up to three example keys.
    pub examples: Vec<ByteString>,
    /// An anchored regex every key of the pattern matches (Python `re`, `grep -P` and Rust
    /// `regex` syntax, matched against the key's bytes).
    pub regex: String,
    /// A `SCAN … MATCH` glob every key of the pattern matches (it may match more).
    pub scan_match: String,
}

/// The result of `analyze` (JSON `schema_version` 2).
#[derive(Debug, Clone, Serialize)]
pub struct AnalyzeReport {
    /// The topology used.
    pub topology: TopologyInfo,
    /// Totals.
    pub totals: Totals,
    /// Nodes, ordered by first slot.
    pub nodes: Vec<NodeReport>,
    /// Skew by keys, bytes, ops.
    pub skew: SkewReport,
    /// The slots with the most keys.
    pub hot_slots: Vec<SlotReport>,
    /// The slots with the most load, when the servers measured it (a live cluster with
    /// `CLUSTER SLOT-STATS`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hot_slots_by_ops: Vec<SlotReport>,
    /// The tags with the most keys.
    pub hot_tags: Vec<TagReport>,
    /// The tags with the most bytes (with weights).
    pub hot_tags_by_bytes: Vec<TagReport>,
    /// Patterns, most keys first.
    pub patterns: Vec<PatternReport>,
    /// Patterns beyond the listing limit, folded.
    pub patterns_not_listed: usize,
    /// Keys of the patterns not listed (of the sample, on a live cluster).
    pub keys_not_listed: u64,
    /// Bytes of the patterns not listed.
    pub bytes_not_listed: u64,
    /// Findings (e.g. a pattern that clusters on one server).
    pub notes: Vec<Note>,
    /// What snapshots held beyond their keys (RDB inputs, or a live sample with --bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<snapshot::SnapshotReport>,
    /// Keys per slot (16384 entries; for the HTML heatmap, not part of the JSON contract).
    #[serde(skip)]
    pub slot_keys: Vec<u64>,
    /// Owning node index per slot (for the heatmap's node boundaries).
    #[serde(skip)]
    pub slot_owner: Vec<Option<usize>>,
}

fn share(part: f64, total: f64) -> f64 {
    if total > 0.0 { part / total } else { 0.0 }
}

impl Analyzer<'_> {
    /// Builds the report, section by section as it is rendered. `read` is the reader's summary
    /// over all inputs; `source` says where the topology came from.
    pub fn finish(
        mut self,
        read: &ReadSummary,
        source: String,
        config: &AnalyzeConfig,
    ) -> AnalyzeReport {
        let all_patterns = std::mem::replace(
            &mut self.patterns,
            PatternTree::new(config.delimiters.clone(), 0),
        )
        .finish();
        let f = Figures::of(&self, config);
        let topo = f.topo;
        let map = topo.slot_map();
        let nodes = f.nodes();
        let (sk_keys, sk_bytes, sk_ops) = f.skews();
        let (hot_slots, hot_slots_by_ops) = f.hot_slots();
        let (hot_tags, hot_tags_by_bytes) = f.hot_tags();
        let sk_dataset = f.dataset_skew();
        let mut verdict = f.verdict(&sk_keys, &sk_bytes, &sk_ops, &hot_tags, &hot_tags_by_bytes);
        if let Some(s) = &sk_dataset {
            verdict = with_dataset(verdict, s, &sk_keys);
        }
        let listed = f.patterns(all_patterns);
        // The heavy tags, for the notes on tag patterns' hottest values.
        let heavy_tags: Vec<(Vec<u8>, u64)> = self
            .exact_tags
            .top(config.heavy_capacity, false)
            .unwrap_or_else(|| self.tags_by_keys.top(config.heavy_capacity))
            .into_iter()
            .map(|h| (h.item, h.weight - h.error))
            .collect();
        let mut notes = notes(&listed.patterns, topo);
        notes.extend(tag_value_notes(&listed.patterns, &heavy_tags));
        if self.unhashable > 0 {
            let policy = topo
                .slot_map()
                .and_then(|m| m.enterprise())
                .map_or("", |e| e.hashing.name());
            let examples: Vec<String> = self
                .unhashable_examples
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            notes.push(Note {
                text: format!(
                    "{} keys match no rule of the database's {policy} hashing policy, and the database refuses them (e.g. {}): add a rule for them before any catch-all",
                    self.unhashable,
                    examples.join(", ")
                ),
                what: NoteKind::Unhashable {
                    keys: self.unhashable,
                    examples,
                },
            });
        }
        AnalyzeReport {
            topology: TopologyInfo {
                kind: if self.ring {
                    TopologyKind::Ring
                } else {
                    TopologyKind::Cluster
                },
                source,
                nodes: f.names.len(),
                uncovered_slots: map.map(|m| m.uncovered()).unwrap_or_default(),
                migrating: map.map(|m| m.migrations().to_vec()).unwrap_or_default(),
            },
            totals: f.totals(read),
            nodes,
            skew: SkewReport {
                keys: sk_keys,
                bytes: sk_bytes,
                ops: sk_ops,
                dataset: sk_dataset,
                verdict,
            },
            hot_slots,
            hot_slots_by_ops,
            hot_tags,
            hot_tags_by_bytes,
            notes,
            patterns: listed.patterns,
            patterns_not_listed: listed.not_listed,
            keys_not_listed: listed.keys_not_listed,
            bytes_not_listed: listed.bytes_not_listed,
            snapshot: read
                .snapshot
                .as_deref()
                .map(|s| snapshot::snapshot_report(s, topo, config.top)),
            slot_owner: if self.ring {
                Vec::new()
            } else {
                (0..SLOT_COUNT)
                    .map(|s| topo.node_of_slot(s as u16))
                    .collect()
            },
            slot_keys: if self.ring {
                Vec::new()
            } else {
                f.slot_keys.clone()
            },
        }
    }
}

/// The patterns listed in a report and what the rest hold.
struct ListedPatterns {
    patterns: Vec<PatternReport>,
    not_listed: usize,
    keys_not_listed: u64,
    bytes_not_listed: u64,
}

/// The figures every section of a report is computed from: the sample's counts, and the
/// servers' exact counts of nodes and slots where they were read.
struct Figures<'a, 't> {
    a: &'a Analyzer<'t>,
    config: &'a AnalyzeConfig,
    topo: &'t Topology,
    names: Vec<String>,
    /// Keys sampled (all keys read, for a dump).
    sampled_keys: u64,
    /// Keys per slot: the servers' exact counts, else the sample's.
    slot_keys: Vec<u64>,
    /// Keys per node: likewise.
    node_keys: Vec<u64>,
    /// Whether the servers' exact counts were read.
    exact: bool,
    /// On a live cluster each node's sampled keys stand for its exact keys: the weight
    /// that makes pattern, tag and byte figures estimates of the whole cluster.
    factor: Option<Vec<f64>>,
    keys: u64,
    bytes: u64,
    ops: f64,
    slot_shares: Vec<f64>,
    /// Slots with keys, most keys first.
    slot_order: Vec<usize>,
}

impl<'a, 't> Figures<'a, 't> {
    fn of(a: &'a Analyzer<'t>, config: &'a AnalyzeConfig) -> Figures<'a, 't> {
        let topo = a.topology;
        let names: Vec<String> = topo.nodes().iter().map(|n| n.name.clone()).collect();
        let n = names.len();
        let (slot_keys, exact_node_keys) = match &a.exact_slot_keys {
            Some(exact) => {
                let mut per_node = vec![0u64; n];
                for (s, &c) in exact.iter().enumerate() {
                    if let Some(i) = topo.node_of_slot(s as u16) {
                        per_node[i] += c;
                    }
                }
                (exact.clone(), Some(per_node))
            }
            None => (a.slot_keys.clone(), None),
        };
        let factor: Option<Vec<f64>> = exact_node_keys.as_ref().map(|exact| {
            exact
                .iter()
                .zip(&a.node_keys)
                .map(|(&e, &s)| if s > 0 { e as f64 / s as f64 } else { 0.0 })
                .collect()
        });
        let mut slot_order: Vec<usize> = (0..SLOT_COUNT).filter(|&s| slot_keys[s] > 0).collect();
        slot_order.sort_by(|&x, &y| slot_keys[y].cmp(&slot_keys[x]).then(x.cmp(&y)));
        Figures {
            a,
            config,
            topo,
            names,
            sampled_keys: a.slot_keys.iter().sum(),
            keys: slot_keys.iter().sum(),
            slot_keys,
            node_keys: exact_node_keys.unwrap_or_else(|| a.node_keys.clone()),
            exact: a.exact_slot_keys.is_some(),
            factor,
            bytes: a.slot_bytes.iter().sum(),
            ops: a.slot_ops.iter().sum(),
            slot_shares: topo.nominal_shares(),
            slot_order,
        }
    }

    /// The totals over the whole input.
    fn totals(&self, read: &ReadSummary) -> Totals {
        let a = self.a;
        Totals {
            keys: self.keys,
            sampled: self.exact.then_some(self.sampled_keys),
            bytes: self.bytes,
            ops: self.ops,
            has_bytes: a.saw_bytes,
            has_ops: a.saw_ops,
            ops_source: a.ops_source.clone(),
            lines: read.lines,
            blank_lines: read.blank,
            malformed_lines: read.malformed,
            tagged_keys: a.tagged,
            tagged_share: share(a.tagged as f64, self.sampled_keys as f64),
            distinct_tags_estimate: if a.tagged == 0 {
                0
            } else {
                a.tag_hll.estimate()
            },
            uncovered_keys: a.unplaced,
        }
    }

    /// Each node's keys, bytes and load.
    fn nodes(&self) -> Vec<NodeReport> {
        let (a, topo, map) = (self.a, self.topo, self.topo.slot_map());
        let (node_keys, sampled_node_keys) = (&self.node_keys, &a.node_keys);
        let (node_bytes, node_ops) = (&a.node_bytes, &a.node_ops);
        let (keys, bytes, ops, exact) = (self.keys, self.bytes, self.ops, self.exact);
        topo.nodes()
            .iter()
            .enumerate()
            .map(|(i, node)| NodeReport {
                id: node.name.clone(),
                node_id: node.id.clone(),
                address: node.address.clone(),
                slot_ranges: map.map(|m| m.ranges_of(i)).unwrap_or_default(),
                slots: map.map(|m| m.slot_count(i)).unwrap_or(0),
                keys: node_keys[i],
                sampled: exact.then(|| sampled_node_keys[i]),
                dataset_bytes: a.node_dataset.as_ref().and_then(|d| d.get(i).copied()),
                load: a.node_load.as_ref().and_then(|d| d.get(i).copied()),
                bytes: node_bytes[i],
                estimated_bytes: if exact && a.saw_bytes {
                    bytes_estimate(
                        sampled_node_keys[i],
                        node_keys[i],
                        node_bytes[i] as f64,
                        a.node_bytes_sq[i],
                    )
                } else {
                    None
                },
                ops: node_ops[i],
                share_keys: share(node_keys[i] as f64, keys as f64),
                share_bytes: share(node_bytes[i] as f64, bytes as f64),
                share_ops: share(node_ops[i], ops),
                share_slots: self.slot_shares[i],
                replicas: node.replicas,
                flags: node.flags.clone(),
            })
            .collect()
    }

    /// Max over mean and the hottest node, per weight.
    fn skews(&self) -> (Option<Skew>, Option<Skew>, Option<Skew>) {
        let a = self.a;
        let (names, slot_shares) = (&self.names, &self.slot_shares);
        let to_f = |v: &[u64]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let keys = skew(&to_f(&self.node_keys), names, slot_shares);
        let bytes = if a.saw_bytes {
            skew(&to_f(&a.node_bytes), names, slot_shares)
        } else {
            None
        };
        let ops = if a.saw_ops {
            skew(&a.node_ops, names, slot_shares)
        } else {
            None
        };
        (keys, bytes, ops)
    }

    /// The verdict: how even the nodes are, and one slot or tag no rebalance can split.
    fn verdict(
        &self,
        sk_keys: &Option<Skew>,
        sk_bytes: &Option<Skew>,
        sk_ops: &Option<Skew>,
        hot_tags: &[TagReport],
        hot_tags_by_bytes: &[TagReport],
    ) -> String {
        let (topo, keys, ring) = (self.topo, self.keys, self.a.ring);
        let what_share = if ring { "of the ring" } else { "of the slots" };
        let random = matches!(
            topo.ring().map(|r| r.kind()),
            Some(crate::topology::ring::RingKind::Random)
        );
        let mut verdict = if random {
            "the pool uses distribution: random, so any key can land on any server: there is no per-server placement to report".to_string()
        } else {
            verdict(keys, sk_keys, sk_bytes, sk_ops, self.a.unplaced, what_share)
        };
        let (slot_order, slot_keys) = (&self.slot_order, &self.slot_keys);
        // Even nodes can hide one slot or one tag no rebalance can split: the verdict says so.
        if !ring && keys >= 100 {
            let mut hot: Vec<String> = Vec::new();
            if let Some(&s) = slot_order.first() {
                let share = share(slot_keys[s] as f64, keys as f64);
                if share > HOT_SLOT_SHARE {
                    hot.push(format!("slot {s} holds {:.1}% of the keys", share * 100.0));
                }
            }
            let tag_keys = hot_tags
                .first()
                .filter(|t: &&TagReport| t.share_keys > HOT_TAG_VERDICT_SHARE);
            if let Some(t) = tag_keys {
                hot.push(format!(
                    "the tag {{{}}} holds {:.1}% of the keys",
                    String::from_utf8_lossy(&t.tag.0),
                    t.share_keys * 100.0
                ));
            }
            if let Some(t) = hot_tags_by_bytes
                .first()
                .filter(|t| t.share_bytes > HOT_TAG_VERDICT_SHARE)
            {
                hot.push(format!(
                    "the tag {{{}}} holds {:.1}% of the bytes",
                    String::from_utf8_lossy(&t.tag.0),
                    t.share_bytes * 100.0
                ));
            }
            if !hot.is_empty() {
                verdict.push_str(&format!(
                    "; but {}: a slot moves whole, so no rebalance spreads it",
                    hot.join(" and ")
                ));
            }
        }

        verdict
    }

    /// The servers' own data figure (`used_memory_dataset`) per node when it is out of line
    /// (1.1× the mean node or more). Ignored below 1 MiB on the fullest node, where a
    /// server's fixed overheads weigh more than its keys.
    fn dataset_skew(&self) -> Option<Skew> {
        if self.a.ring {
            return None;
        }
        let ds = self.a.node_dataset.as_ref()?;
        if ds.len() != self.names.len() || ds.iter().copied().max()? < DATASET_VERDICT_MIN {
            return None;
        }
        let values: Vec<f64> = ds.iter().map(|&b| b as f64).collect();
        skew(&values, &self.names, &self.slot_shares).filter(|s| s.max_over_mean >= 1.1)
    }

    /// The node that owns `slot` (none on a ring: a ring places keys, not slots).
    fn node_name(&self, slot: u16) -> Option<String> {
        if self.a.ring {
            None
        } else {
            self.topo.node_of_slot(slot).map(|i| self.names[i].clone())
        }
    }

    fn slot_report(&self, s: usize) -> SlotReport {
        let a = self.a;
        SlotReport {
            slot: s as u16,
            node: self.node_name(s as u16),
            keys: self.slot_keys[s],
            bytes: a.slot_bytes[s],
            ops: a.slot_ops[s],
            share_keys: share(self.slot_keys[s] as f64, self.keys as f64),
            share_bytes: share(a.slot_bytes[s] as f64, self.bytes as f64),
            share_ops: share(a.slot_ops[s], self.ops),
        }
    }

    /// The hottest slots by keys, and by CPU when the servers measured it.
    fn hot_slots(&self) -> (Vec<SlotReport>, Vec<SlotReport>) {
        let (a, config, ring) = (self.a, self.config, self.a.ring);
        let hot_slots = self
            .slot_order
            .iter()
            .take(if ring { 0 } else { config.top })
            .map(|&s| self.slot_report(s))
            .collect();
        let hot_slots_by_ops = if a.ops_source.as_ref().is_some_and(OpsSource::is_cpu) && !ring {
            let mut by_ops: Vec<usize> = (0..SLOT_COUNT).filter(|&s| a.slot_ops[s] > 0.0).collect();
            by_ops.sort_by(|&x, &y| a.slot_ops[y].total_cmp(&a.slot_ops[x]).then(x.cmp(&y)));
            by_ops
                .iter()
                .take(config.top)
                .map(|&s| self.slot_report(s))
                .collect()
        } else {
            Vec::new()
        };
        (hot_slots, hot_slots_by_ops)
    }

    fn tag_report(&self, h: &crate::sketch::HeavyHitter, by_bytes: bool, exact: bool) -> TagReport {
        let (config, keys, bytes) = (self.config, self.keys, self.bytes);
        let slot = crc16(&h.item) & 0x3FFF;
        let (mut k, mut kerr, mut b, mut berr) = if by_bytes {
            (h.other, 0, h.weight, h.error)
        } else {
            (h.weight, h.error, h.other, 0)
        };
        // Every key of a tag is in the tag's slot, and every key read was counted in its slot:
        // the slot's figures cap a sketch's over-count (a tag of 4000 keys in a slot of 4006
        // read 4106). A ring places keys by its own rule, not by slot: no cap there.
        if !self.a.ring {
            let cap = |v: u64, err: u64, slot_total: u64| {
                let low = v.saturating_sub(err);
                let v = v.min(slot_total);
                (v, v.saturating_sub(low.min(v)))
            };
            (k, kerr) = cap(k, kerr, self.a.slot_keys[usize::from(slot)]);
            (b, berr) = cap(b, berr, self.a.slot_bytes[usize::from(slot)]);
        }
        let node_factor = self.factor.as_ref().map(|f| {
            self.topo
                .node_of_slot(slot)
                .and_then(|i| f.get(i))
                .copied()
                .unwrap_or(0.0)
        });
        let estimated_keys = node_factor.map(|x| k as f64 * x);
        // The sample's bytes stand for the node's keys like its keys do (a tag of 8 values
        // of 1 MiB read 3.8 MiB, unmarked, from the half of them sampled).
        let estimated_bytes = node_factor.map(|x| b as f64 * x);
        let sk = match estimated_keys {
            Some(e) => share(e, keys as f64),
            None => share(k as f64, self.sampled_keys as f64),
        };
        let sb = share(b as f64, bytes as f64);
        TagReport {
            tag: ByteString(h.item.clone()),
            slot,
            // A ring places a tag's keys by the tag (a `{…}` it hashes), not by a slot.
            node: if self.a.ring {
                self.topo.node_of(&h.item).map(|i| self.names[i].clone())
            } else {
                self.node_name(slot)
            },
            keys: k,
            estimated_keys,
            estimated_bytes,
            keys_error: kerr,
            bytes: b,
            bytes_error: berr,
            keys_lower_bound: by_bytes && !exact,
            exact,
            share_keys: sk,
            share_bytes: sb,
            hot: sk > config.hot_tag_share || sb > config.hot_tag_share,
        }
    }

    /// The top tags by keys and by bytes.
    fn hot_tags(&self) -> (Vec<TagReport>, Vec<TagReport>) {
        let (a, top) = (self.a, self.config.top);
        // Exact figures while the tags were few enough to count each; the sketches' otherwise.
        let exact = a.exact_tags.is_exact();
        let keys_top = a
            .exact_tags
            .top(top, false)
            .unwrap_or_else(|| a.tags_by_keys.top(top));
        let by_keys = keys_top
            .iter()
            .map(|h| self.tag_report(h, false, exact))
            .collect();
        let by_bytes = if a.saw_bytes {
            a.exact_tags
                .top(top, true)
                .unwrap_or_else(|| a.tags_by_bytes.top(top))
                .iter()
                .map(|h| self.tag_report(h, true, exact))
                .collect()
        } else {
            Vec::new()
        };
        reconcile_tags(by_keys, by_bytes, self.config.hot_tag_share)
    }

    /// The key patterns: at least `max_patterns`, and as many more as it takes to cover 99% of
    /// the keys (up to ten times as many); what the rest holds is said.
    fn patterns(&self, all: Vec<Pattern>) -> ListedPatterns {
        let (a, config, names, slot_shares) = (self.a, self.config, &self.names, &self.slot_shares);
        let (factor, keys, bytes, sampled_keys) =
            (&self.factor, self.keys, self.bytes, self.sampled_keys);
        let total_pattern_keys: u64 = all.iter().map(|p| p.stats.keys).sum();
        let mut listed = 0usize;
        let mut covered = 0u64;
        for p in &all {
            if listed >= config.max_patterns
                && (covered as f64 >= 0.99 * total_pattern_keys as f64
                    || listed >= 10 * config.max_patterns)
            {
                break;
            }
            covered += p.stats.keys;
            listed += 1;
        }
        let patterns_not_listed = all.len() - listed;
        let keys_not_listed: u64 = all[listed..].iter().map(|p| p.stats.keys).sum();
        let bytes_not_listed: u64 = all[listed..].iter().map(|p| p.stats.bytes).sum();
        let patterns: Vec<PatternReport> = all
            .into_iter()
            .take(listed)
            .map(|p| {
                let st = &p.stats;
                // A ring hashes what its own rule picks: without twemproxy's hash_tag the
                // whole key, and a pattern's `{…}` is no tag there (its example tells).
                let tag = p.tag.clone().filter(|_| {
                    self.topo.ring().is_none_or(|r| {
                        st.examples()
                            .next()
                            .is_some_and(|ex| r.hashed(ex).len() < ex.len())
                    })
                });
                // From a live sample, each node's sampled keys stand for its exact keys over
                // its sampled ones: the shares are of the estimate, not of the sample.
                let weighted = |i: usize| {
                    let k = st.node_keys.get(i).copied().unwrap_or(0) as f64;
                    factor
                        .as_ref()
                        .map_or(k, |f| k * f.get(i).copied().unwrap_or(0.0))
                };
                let weighted_total: f64 = (0..names.len()).map(weighted).sum();
                let pnodes: Vec<PatternNode> = names
                    .iter()
                    .enumerate()
                    .map(|(i, name)| PatternNode {
                        node: name.clone(),
                        keys: st.node_keys.get(i).copied().unwrap_or(0),
                        share: share(weighted(i), weighted_total),
                    })
                    .collect();
                let hottest_node = pnodes
                    .iter()
                    .enumerate()
                    .filter(|(_, pn)| pn.keys > 0)
                    .max_by(|(i, a), (j, b)| {
                        let ra = a.share / slot_shares[*i].max(1e-9);
                        let rb = b.share / slot_shares[*j].max(1e-9);
                        ra.total_cmp(&rb).then(j.cmp(i))
                    })
                    .map(|(_, pn)| pn.node.clone());
                let estimated_keys = factor.as_ref().map(|f| {
                    f.iter()
                        .enumerate()
                        .map(|(i, x)| st.node_keys.get(i).copied().unwrap_or(0) as f64 * x)
                        .sum::<f64>()
                });
                PatternReport {
                    pattern: p.text.clone(),
                    keys: st.keys,
                    estimated_keys,
                    bytes: st.bytes,
                    keys_no_expiry: a.saw_expiry.then(|| st.keys - st.expiring),
                    bytes_no_expiry: a.saw_expiry.then(|| st.bytes - st.expiring_bytes),
                    ops: st.ops,
                    share_keys: match estimated_keys {
                        Some(e) => share(e, keys as f64),
                        None => share(st.keys as f64, sampled_keys as f64),
                    },
                    share_bytes: share(st.bytes as f64, bytes as f64),
                    tag_cardinality: tag.as_ref().map(|_| st.tags.estimate()),
                    tag,
                    nodes: pnodes,
                    hottest_node,
                    examples: st.examples().map(|e| ByteString(e.to_vec())).collect(),
                    regex: p.regex.clone(),
                    scan_match: p.scan_match.clone(),
                }
            })
            .collect();
        // Estimated for the whole cluster, the patterns rank by the estimate (stable: ties keep
        // the sample's order).
        let mut patterns = patterns;
        if factor.is_some() {
            patterns.sort_by(|a, b| {
                b.estimated_keys
                    .unwrap_or(0.0)
                    .total_cmp(&a.estimated_keys.unwrap_or(0.0))
            });
        }
        ListedPatterns {
            patterns,
            not_listed: patterns_not_listed,
            keys_not_listed,
            bytes_not_listed,
        }
    }
}

/// Findings in words: patterns whose keys pile onto one node far beyond its nominal share,
/// and, on client-side rings, keys that differ only in their last character landing together.
/// For each pattern whose hash tag has a variable part and few values (at most 64), one note
/// naming its hottest tag values (from the heavy-hitter tags) and their share of its keys: one
/// tag value is one slot, so a hot value is a hot slot.
fn tag_value_notes(patterns: &[PatternReport], heavy: &[(Vec<u8>, u64)]) -> Vec<Note> {
    let mut out = Vec::new();
    for p in patterns.iter().filter(|p| p.keys >= 50) {
        let (Some(tag), Some(values)) = (&p.tag, p.tag_cardinality) else {
            continue;
        };
        if !tag.contains('<') || !(2..=64).contains(&values) {
            continue;
        }
        // The tag's text as a regex: placeholders by their classes, the rest literal.
        let mut re = String::from("(?-u)^");
        let mut rest = tag.as_str();
        while let Some(open) = rest.find('<') {
            re.push_str(&regex::escape(&rest[..open]));
            let close = rest[open..].find('>').map_or(rest.len(), |c| open + c + 1);
            let class = match &rest[open..close] {
                "<int>" => "[0-9]+",
                "<word>" => "[A-Za-z]+",
                "<hex>" => "[0-9A-Fa-f]+",
                _ => ".+",
            };
            re.push_str(class);
            rest = &rest[close..];
        }
        re.push_str(&regex::escape(rest));
        re.push('$');
        let Ok(re) = regex::bytes::Regex::new(&re) else {
            continue;
        };
        let mut hottest: Vec<(String, u64, f64)> = heavy
            .iter()
            .filter(|(t, _)| re.is_match(t))
            .take(3)
            .map(|(t, k)| {
                (
                    String::from_utf8_lossy(t).into_owned(),
                    *k,
                    (*k as f64 / p.keys as f64).min(1.0),
                )
            })
            .collect();
        hottest.retain(|h| h.1 > 0);
        if hottest.is_empty() {
            continue;
        }
        let list = hottest
            .iter()
            .map(|(t, _, share)| format!("{{{t}}} {:.1}%", share * 100.0))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Note {
            text: format!(
                "pattern {}: its tag takes about {values} value(s), each one slot; the hottest: {list} of its keys",
                p.pattern
            ),
            what: NoteKind::TagValues {
                pattern: p.pattern.clone(),
                values,
                hottest,
            },
        });
    }
    out
}

fn notes(patterns: &[PatternReport], topo: &Topology) -> Vec<Note> {
    let nominal = topo.nominal_shares();
    let mut out = Vec::new();
    for p in patterns.iter().filter(|p| p.keys >= 50) {
        for (i, pn) in p.nodes.iter().enumerate() {
            let fair = nominal.get(i).copied().unwrap_or(0.0);
            if pn.share >= 0.5 && pn.share >= 1.5 * fair && fair < 0.5 {
                out.push(Note {
                    text: format!(
                        "pattern {} puts {:.1}% of its {} keys on {} (its fair share is {:.1}%)",
                        p.pattern,
                        100.0 * pn.share,
                        match p.estimated_keys {
                            Some(e) => format!("≈{}", e.round()),
                            None => p.keys.to_string(),
                        },
                        pn.node,
                        100.0 * fair
                    ),
                    what: NoteKind::PatternOnOneNode {
                        pattern: p.pattern.clone(),
                        keys: p.keys,
                        node: pn.node.clone(),
                        share: pn.share,
                        fair_share: fair,
                    },
                });
            }
        }
    }
    let Some(ring) = topo.ring() else {
        return out;
    };
    let servers = ring.servers().len();
    if servers < 2 || matches!(ring.kind(), crate::topology::ring::RingKind::Random) {
        return out;
    }
    // Vary the last character of each pattern's first example over ten values: a good hash
    // spreads them (about 10/servers each); a weak one keeps them together.
    let mut checked = 0;
    let mut found: Vec<String> = Vec::new();
    for p in patterns.iter().take(20) {
        let Some(example) = p.examples.first() else {
            continue;
        };
        let Some(&last) = example.0.last() else {
            continue;
        };
        checked += 1;
        let alphabet: &[u8] = if last.is_ascii_digit() {
            b"0123456789"
        } else {
            b"abcdefghij"
        };
        let mut counts = vec![0usize; servers];
        for &c in alphabet {
            let mut k = example.0.clone();
            *k.last_mut().expect("invariant: non-empty") = c;
            if let Some(i) = ring.node_of(&k) {
                counts[i] += 1;
            }
        }
        let max = counts.iter().copied().max().unwrap_or(0);
        if max >= 8 {
            let node = counts.iter().position(|&c| c == max).unwrap_or(0);
            found.push(format!(
                "{max} of 10 variants of {} land on {}",
                crate::keys::display::display_key(&example.0),
                ring.nodes()[node].name
            ));
        }
    }
    let clustered = !found.is_empty();
    if clustered {
        let total = found.len();
        let more = if total > 3 {
            format!("; and {} more", total - 3)
        } else {
            String::new()
        };
        found.truncate(3);
        out.push(Note {
            text: format!(
                "keys that differ only in their last character land on the same server in {total} of {checked} patterns checked (with {servers} servers about {:.0} of 10 would): {}{more}",
                10.0 / servers as f64,
                found.join("; ")
            ),
            what: NoteKind::RingClusters {
                patterns: total,
                checked,
                servers,
                examples: found.clone(),
            },
        });
    }
    if clustered
        && matches!(
            ring.kind(),
            crate::topology::ring::RingKind::Ketama {
                hash: crate::topology::hashes::TwemHash::Fnv1a64
            } | crate::topology::ring::RingKind::Modula {
                hash: crate::topology::hashes::TwemHash::Fnv1a64
            }
        )
    {
        out.push(Note {
            text: "twemproxy's fnv1a_64 is really a 32-bit FNV-1a with multiplier 435: keys that differ only in their last characters get nearby hashes and land on the same server; `hash: murmur` or `hash: md5` spreads them"
                .to_string(),
            what: NoteKind::WeakRingHash {
                hash: "fnv1a_64".into(),
            },
        });
    }
    out
}

/// The verdict: the worst skew first, in words.
fn verdict(
    keys: u64,
    by_keys: &Option<Skew>,
    by_bytes: &Option<Skew>,
    by_ops: &Option<Skew>,
    uncovered: u64,
    what_share: &str,
) -> String {
    if keys == 0 {
        return "no keys were read".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut worst: Vec<(&str, &Skew)> = Vec::new();
    if let Some(s) = by_keys {
        worst.push(("keys", s));
    }
    if let Some(s) = by_bytes {
        worst.push(("bytes", s));
    }
    if let Some(s) = by_ops {
        worst.push(("ops", s));
    }
    worst.sort_by(|a, b| b.1.max_over_mean.total_cmp(&a.1.max_over_mean));
    if let Some((what, s)) = worst.first() {
        let level = if s.max_over_mean >= 1.5 {
            "badly skewed"
        } else if s.max_over_mean >= 1.1 {
            "skewed"
        } else {
            "evenly spread"
        };
        parts.push(format!(
            "{what} are {level}: {}",
            describe(s, what, what_share)
        ));
        for (what, s) in worst.iter().skip(1) {
            if s.max_over_mean >= 1.1 {
                parts.push(describe(s, what, what_share));
            }
        }
    }
    if uncovered > 0 {
        parts.push(format!("{uncovered} keys have no node to land on"));
    }
    let read = parts.join("; ");
    match by_keys
        .as_ref()
        .and_then(|s| too_few(keys, s.hottest_slot_share))
    {
        Some(why) => format!("too few keys to judge the spread ({why}); as read: {read}"),
        None => read,
    }
}

/// The verdict with the servers' out-of-line data figure in it: an exact figure where the
/// sample's are estimates, so it leads when it is more skewed than the keys are.
fn with_dataset(verdict: String, s: &Skew, sk_keys: &Option<Skew>) -> String {
    let level = if s.max_over_mean >= 1.5 {
        "badly skewed"
    } else {
        "skewed"
    };
    let part = format!(
        "data is {level} by the servers' own count (used_memory_dataset): {}",
        describe(s, "the data", "of the slots")
    );
    if sk_keys
        .as_ref()
        .is_none_or(|k| s.max_over_mean > k.max_over_mean)
    {
        format!("{part}; {verdict}")
    } else {
        format!("{verdict}; {part}")
    }
}

/// The fullest node's `used_memory_dataset` below which the servers' data figure stays out
/// of the verdict (fixed overheads dominate it).
const DATASET_VERDICT_MIN: u64 = 1 << 20;

/// Keys a node should get, on average, before a skew verdict means anything.
const KEYS_PER_NODE_TO_JUDGE: f64 = 100.0;

/// Why `keys` are too few to judge a spread over nodes with a nominal share `p` each, or
/// `None`. Hashing alone moves a node's share by about ±2 standard deviations of a binomial:
/// ±2·√((1−p)/(n·p)) of its mean.
fn too_few(keys: u64, p: f64) -> Option<String> {
    if !(p > 0.0 && p < 1.0) || keys as f64 * p >= KEYS_PER_NODE_TO_JUDGE {
        return None;
    }
    let noise = 2.0 * ((1.0 - p) / (keys as f64 * p)).sqrt();
    Some(format!(
        "{keys} key(s), about {:.0} per node: chance alone moves a node's share by about ±{:.0}%; at least {:.0} per node are needed",
        keys as f64 * p,
        noise * 100.0,
        KEYS_PER_NODE_TO_JUDGE
    ))
}

#[cfg(test)]
mod tests {
    use super::bytes_estimate;

    #[test]
    fn a_record_with_its_slot_counts_as_one_without() {
        use crate::keys::parallel::ChunkSink;
        let topology =
            crate::topology::Topology::Cluster(crate::topology::SlotMap::from_masters(3).unwrap());
        let config = super::AnalyzeConfig::default();
        let (mut given, mut taken) = (
            super::Analyzer::new(&topology, &config),
            super::Analyzer::new(&topology, &config),
        );
        for i in 0..3000u64 {
            let key = match i % 4 {
                0 => format!("user:{{u{}}}:x{i}", i % 17),
                1 => format!("plain:{i}"),
                2 => format!("e:{{}}{i}"),
                _ => format!("two:{{a{}}}{{b}}:{i}", i % 5),
            };
            let rec = |placed| crate::keys::Record {
                key: key.as_bytes(),
                bytes: Some(10 + i % 90),
                ops: None,
                expires: Some(i % 3 == 0),
                placed,
            };
            // Placed inside a longer buffer, as a snapshot's reader places its keys.
            let buf = [b"0123456789".repeat(7).as_slice(), key.as_bytes()].concat();
            let placed = crate::slot::place_in(&buf, 70, buf.len());
            assert_eq!(placed.slot, crate::slot::key_slot(key.as_bytes()));
            given.record(&rec(Some(placed)));
            taken.record(&rec(None));
        }
        let read = crate::keys::ReadSummary::default();
        let json = |a: super::Analyzer<'_>| {
            serde_json::to_string(&a.finish(&read, "t".into(), &config)).unwrap()
        };
        assert_eq!(json(given), json(taken));
    }

    #[test]
    fn byte_intervals() {
        // 100 of 1,000 keys, sizes 50 and 150 half and half: mean 100, sd about 50.25.
        let (sum, sq) = (
            50.0 * (50.0 + 150.0),
            50.0 * (50.0f64.powi(2) + 150.0f64.powi(2)),
        );
        let e = bytes_estimate(100, 1000, sum, sq).unwrap();
        assert_eq!(e.value, 100_000.0);
        let sd = ((sq - 100.0 * 100.0 * 100.0) / 99.0f64).sqrt();
        let half = 1.96 * 1000.0 * sd / 10.0 * 0.9f64.sqrt();
        assert!((e.high - e.value - half).abs() < 1e-6, "{e:?}");
        // Every sampled key the same size: the rest may still differ, so the interval is not
        // empty.
        let e = bytes_estimate(200, 1000, 200.0 * 104.0, 200.0 * 104.0 * 104.0).unwrap();
        assert!(e.high - e.low > 1000.0, "{e:?}");
        // The whole node: exact.
        let e = bytes_estimate(1000, 1000, 1000.0 * 104.0, 1000.0 * 104.0 * 104.0).unwrap();
        assert_eq!((e.low, e.value, e.high), (104_000.0, 104_000.0, 104_000.0));
    }
}
