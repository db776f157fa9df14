//! What a snapshot holds beyond its keys: keys and memory by type, expiry coverage and the
//! biggest keys, gathered while the keys stream past.

use super::KeyInfo;
use crate::keys::display::ByteString;
use smallvec::SmallVec;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

/// Keys of one type.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TypeStats {
    /// Keys.
    pub keys: u64,
    /// Estimated memory in the servers.
    pub memory: u64,
    /// Bytes in the snapshot.
    pub serialized: u64,
    /// Elements over all keys of the type (0 for strings).
    pub elements: u64,
    /// Keys without an expiry.
    pub keys_no_expiry: u64,
    /// Memory of the keys without an expiry.
    pub memory_no_expiry: u64,
    /// Keys whose memory is not estimated (module values), left out of `memory`.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_estimated: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TypeStats {
    fn add(&mut self, k: &KeyInfo<'_>) {
        self.keys += 1;
        let memory = if k.memory_estimated() {
            k.memory
        } else {
            self.not_estimated += 1;
            0
        };
        self.memory += memory;
        self.serialized += k.serialized;
        if k.kind != super::ValueKind::String {
            self.elements += k.elements.unwrap_or(0);
        }
        if k.expires_at_ms.is_none() {
            self.keys_no_expiry += 1;
            self.memory_no_expiry += memory;
        }
    }

    /// Its memory as a report cell, `human` writing the figure: "not estimated" for a type
    /// whose values' memory is not estimated (a module's), and the estimate with the keys left
    /// out where only some are.
    pub fn memory_cell(&self, human: impl Fn(u64) -> String) -> String {
        match self.not_estimated {
            0 => human(self.memory),
            n if n == self.keys => "not estimated".into(),
            n => format!("{} (+{n} keys not estimated)", human(self.memory)),
        }
    }

    fn merge(&mut self, o: &TypeStats) {
        self.keys += o.keys;
        self.memory += o.memory;
        self.serialized += o.serialized;
        self.elements += o.elements;
        self.keys_no_expiry += o.keys_no_expiry;
        self.memory_no_expiry += o.memory_no_expiry;
        self.not_estimated += o.not_estimated;
    }
}

/// One of the biggest keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BigKey {
    /// The key.
    pub key: ByteString,
    /// Its slot.
    pub slot: u16,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its encoding (in the snapshot, or as the server says).
    pub encoding: String,
    /// Its elements (a string's length), when known.
    pub elements: Option<u64>,
    /// Estimated memory in the server.
    pub memory: u64,
    /// Bytes in the snapshot (what MIGRATE sends for it, roughly); `None` for a live sample.
    pub serialized: Option<u64>,
    /// Whether it has an expiry.
    pub expires: bool,
    /// The snapshot it was read from (the node, for a live sample).
    pub file: String,
}

/// The files read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotFile {
    /// Its name.
    pub file: String,
    /// `REDIS` or `VALKEY`.
    pub magic: super::Magic,
    /// RDB format version.
    pub rdb_version: u32,
    /// The server version that wrote it (`valkey-ver` or `redis-ver` aux field).
    pub server: Option<String>,
    /// Keys read.
    pub keys: u64,
    /// Values whose contents could not be interpreted (counted, key kept).
    pub uninterpreted: u64,
    /// Function libraries it holds.
    pub functions: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// Writes `k` (of `slot`, read from `file`) into `big`, reusing its buffers.
fn fill(big: &mut BigKey, k: &KeyInfo<'_>, slot: u16, file: &str) {
    big.key.0.clear();
    big.key.0.extend_from_slice(k.key);
    big.slot = slot;
    big.kind.clear();
    big.kind.push_str(&k.kind.name());
    big.encoding.clear();
    big.encoding.push_str(k.encoding);
    big.elements = k.elements;
    big.memory = k.memory;
    big.serialized = Some(k.serialized);
    big.expires = k.expires_at_ms.is_some();
    if big.file != file {
        big.file.clear();
        big.file.push_str(file);
    }
}

const BUILTIN: [super::ValueKind; 6] = [
    super::ValueKind::String,
    super::ValueKind::List,
    super::ValueKind::Set,
    super::ValueKind::Zset,
    super::ValueKind::Hash,
    super::ValueKind::Stream,
];

/// The index of a built-in type in [`SnapshotSummary`]'s table (`None` for module types).
fn builtin_index(kind: super::ValueKind) -> Option<usize> {
    BUILTIN.iter().position(|&k| k == kind)
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Ranked(u64, Reverse<Vec<u8>>, u64);

/// Keeps the `n` largest entries by a metric (ties: smaller key first), deterministically.
#[derive(Debug, Clone, Default)]
struct TopN {
    n: usize,
    heap: BinaryHeap<Reverse<Ranked>>,
    items: BTreeMap<u64, BigKey>,
    next: u64,
}

impl TopN {
    fn new(n: usize) -> TopN {
        TopN {
            n,
            ..TopN::default()
        }
    }

    fn wants(&self, metric: u64, key: &[u8]) -> bool {
        if self.n == 0 {
            return false;
        }
        if self.heap.len() < self.n {
            return true;
        }
        let Reverse(Ranked(m, Reverse(k), _)) = self.heap.peek().expect("invariant: full heap");
        (metric, Reverse(key)) > (*m, Reverse(k.as_slice()))
    }

    fn push(&mut self, metric: u64, big: BigKey) {
        if !self.wants(metric, &big.key.0) {
            return;
        }
        let id = self.next;
        self.next += 1;
        self.heap
            .push(Reverse(Ranked(metric, Reverse(big.key.0.clone()), id)));
        self.items.insert(id, big);
        if self.heap.len() > self.n {
            let Reverse(Ranked(_, _, gone)) = self.heap.pop().expect("invariant: non-empty");
            self.items.remove(&gone);
        }
    }

    fn sorted(&self) -> Vec<BigKey> {
        let mut v: Vec<(Ranked, &BigKey)> = self
            .heap
            .iter()
            .map(|Reverse(r)| (r.clone(), &self.items[&r.2]))
            .collect();
        v.sort_by(|a, b| b.0.0.cmp(&a.0.0).then_with(|| a.1.key.0.cmp(&b.1.key.0)));
        v.into_iter().map(|(_, b)| b.clone()).collect()
    }
}

/// A slot's biggest key as the summary holds it while reading (when asked to keep them: each
/// reader thread then keeps a table of every slot), so a key of up to 32 bytes is held inline
/// and the type, encoding and file are not copied: the table costs no allocation per slot,
/// neither filled nor dropped. [`SnapshotSummary::slot_biggest`] makes the [`BigKey`] of one
/// when asked.
#[derive(Debug, Clone)]
struct SlotBig {
    key: SmallVec<[u8; 32]>,
    kind: super::ValueKind,
    encoding: &'static str,
    elements: Option<u64>,
    memory: u64,
    serialized: u64,
    expires: bool,
    file: Arc<str>,
}

impl SlotBig {
    fn big_key(&self, slot: u16) -> BigKey {
        BigKey {
            key: ByteString(self.key.to_vec()),
            slot,
            kind: self.kind.name().into_owned(),
            encoding: self.encoding.to_string(),
            elements: self.elements,
            memory: self.memory,
            serialized: Some(self.serialized),
            expires: self.expires,
            file: self.file.to_string(),
        }
    }
}

/// What the snapshots read hold, beyond their keys.
#[derive(Debug, Clone, Default)]
pub struct SnapshotSummary {
    /// The files, in the order read.
    pub files: Vec<SnapshotFile>,
    /// Keys of the built-in types, indexed by [`builtin_index`].
    builtin: [TypeStats; 6],
    /// Keys of module types, by name.
    modules: BTreeMap<[u8; 9], TypeStats>,
    by_memory: TopN,
    by_elements: TopN,
    /// The biggest key of each slot (by memory; ties: the first read), for migration
    /// previews, and its memory alone (checked first: a small array stays in cache).
    slot_biggest: Vec<Option<SlotBig>>,
    slot_max: Vec<u64>,
    /// The byte offset of each slot's biggest key in its file, so that parts of one file
    /// read on several threads merge to what one thread reading it in order keeps.
    slot_at: Vec<u64>,
    /// The name of the file read last, shared by the slot entries read from it.
    file: Option<Arc<str>>,
}

impl PartialEq for SnapshotSummary {
    fn eq(&self, o: &Self) -> bool {
        self.files == o.files
            && self.by_type() == o.by_type()
            && self.biggest_by_memory() == o.biggest_by_memory()
            && self.biggest_by_elements() == o.biggest_by_elements()
    }
}

impl SnapshotSummary {
    /// An empty summary keeping the `top` biggest keys of each ranking, and each slot's
    /// biggest key when `per_slot` (a table of every slot, filled as keys go by: a cost only
    /// migration previews, which name them, need pay).
    pub fn new(top: usize, per_slot: bool) -> SnapshotSummary {
        let slots = if per_slot { crate::slot::SLOT_COUNT } else { 0 };
        SnapshotSummary {
            files: Vec::new(),
            builtin: Default::default(),
            modules: BTreeMap::new(),
            by_memory: TopN::new(top),
            by_elements: TopN::new(top),
            slot_biggest: vec![None; slots],
            slot_max: vec![0; slots],
            slot_at: vec![0; slots],
            file: None,
        }
    }

    /// The biggest key of `slot`, if the snapshots hold any key there.
    pub fn slot_biggest(&self, slot: u16) -> Option<BigKey> {
        self.slot_biggest
            .get(slot as usize)
            .and_then(|b| b.as_ref())
            .map(|b| b.big_key(slot))
    }

    /// Offers `big` (read at byte `at` of its file) as its slot's biggest key; `earlier`
    /// says whether it wins a tie, which it does when it was read first.
    fn offer_slot(&mut self, s: usize, big: SlotBig, at: u64, earlier: impl Fn(u64) -> bool) {
        if self.slot_biggest.is_empty() {
            self.slot_biggest = vec![None; crate::slot::SLOT_COUNT];
            self.slot_max = vec![0; crate::slot::SLOT_COUNT];
            self.slot_at = vec![0; crate::slot::SLOT_COUNT];
        }
        if self.slot_biggest[s].is_none()
            || big.memory > self.slot_max[s]
            || (big.memory == self.slot_max[s] && earlier(self.slot_at[s]))
        {
            self.slot_max[s] = big.memory;
            self.slot_at[s] = at;
            self.slot_biggest[s] = Some(big);
        }
    }

    /// Counts one key of `file`.
    pub fn add(&mut self, k: &KeyInfo<'_>, file: &str) {
        self.add_in_slot(k, crate::slot::key_slot(k.key), file);
    }

    /// [`SnapshotSummary::add`] of a key whose slot the caller took.
    pub fn add_in_slot(&mut self, k: &KeyInfo<'_>, slot: u16, file: &str) {
        match builtin_index(k.kind) {
            Some(i) => self.builtin[i].add(k),
            None => {
                if let super::ValueKind::Module(name) = k.kind {
                    self.modules.entry(name).or_default().add(k);
                }
            }
        }
        let elements = k.elements.unwrap_or(0);
        // A value whose memory is not estimated is not ranked by a figure that is only a floor.
        let ranked = k.memory_estimated();
        let by_mem = ranked && self.by_memory.wants(k.memory, k.key);
        let by_el =
            ranked && k.kind != super::ValueKind::String && self.by_elements.wants(elements, k.key);
        // Memory is never 0, so a 0 in `slot_max` means the slot has no key yet (and a
        // summary that keeps no slot's key has an empty table).
        let by_slot = self
            .slot_max
            .get(slot as usize)
            .is_some_and(|&m| k.memory > m);
        if by_slot {
            self.slot_max[slot as usize] = k.memory;
            self.slot_at[slot as usize] = k.offset;
            let file = match &self.file {
                Some(f) if **f == *file => f.clone(),
                _ => self.file.insert(Arc::from(file)).clone(),
            };
            self.slot_biggest[slot as usize] = Some(SlotBig {
                key: SmallVec::from_slice(k.key),
                kind: k.kind,
                encoding: k.encoding,
                elements: k.elements,
                memory: k.memory,
                serialized: k.serialized,
                expires: k.expires_at_ms.is_some(),
                file,
            });
        }
        if by_mem || by_el {
            let mut big = BigKey::default();
            fill(&mut big, k, slot, file);
            if by_el {
                self.by_elements.push(elements, big.clone());
            }
            if by_mem {
                self.by_memory.push(k.memory, big);
            }
        }
    }

    /// Adds the figures of another summary (of other files).
    pub fn merge(&mut self, mut o: SnapshotSummary) {
        self.files.append(&mut o.files);
        self.merge_figures(o, false);
    }

    /// Adds the figures of another part of the same file (keys another thread read): the
    /// result is what one summary reading both parts in file order holds, except that two
    /// keys equal in name and in the ranked figure (the same name in two databases) may be
    /// kept in the other order.
    pub fn merge_part(&mut self, o: SnapshotSummary) {
        self.merge_figures(o, true);
    }

    /// Adds `o`'s figures; a slot's biggest key on a tie is the one read first within one
    /// file (`same_file`), else this summary's.
    fn merge_figures(&mut self, o: SnapshotSummary, same_file: bool) {
        for (mine, theirs) in self.builtin.iter_mut().zip(&o.builtin) {
            mine.merge(theirs);
        }
        for (name, t) in &o.modules {
            self.modules.entry(*name).or_default().merge(t);
        }
        for b in o.by_memory.sorted() {
            self.by_memory.push(b.memory, b);
        }
        for b in o.by_elements.sorted() {
            self.by_elements.push(b.elements.unwrap_or(0), b);
        }
        for (s, b) in o.slot_biggest.into_iter().enumerate() {
            if let Some(b) = b {
                let at = o.slot_at[s];
                self.offer_slot(s, b, at, |mine| same_file && at < mine);
            }
        }
    }

    /// The biggest keys by estimated memory, biggest first.
    pub fn biggest_by_memory(&self) -> Vec<BigKey> {
        self.by_memory.sorted()
    }

    /// The collections with the most elements, biggest first (strings are not ranked here).
    pub fn biggest_by_elements(&self) -> Vec<BigKey> {
        self.by_elements.sorted()
    }

    /// Keys by type name (types with keys only).
    pub fn by_type(&self) -> BTreeMap<String, TypeStats> {
        let mut m = BTreeMap::new();
        for (kind, t) in BUILTIN.iter().zip(&self.builtin) {
            if t.keys > 0 {
                m.insert(kind.name().into_owned(), t.clone());
            }
        }
        for (name, t) in &self.modules {
            m.insert(
                super::ValueKind::Module(*name).name().into_owned(),
                t.clone(),
            );
        }
        m
    }

    /// All types together.
    pub fn total(&self) -> TypeStats {
        let mut t = TypeStats::default();
        for s in self.by_type().values() {
            t.merge(s);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::ValueKind;

    fn info(key: &[u8], memory: u64, elements: u64) -> KeyInfo<'_> {
        KeyInfo {
            key,
            db: 0,
            kind: ValueKind::Hash,
            encoding: "listpack",
            elements: Some(elements),
            memory,
            serialized: memory / 2,
            expires_at_ms: None,
            lfu: None,
            idle: None,
            offset: 0,
        }
    }

    #[test]
    fn top_keys_are_deterministic_and_bounded() {
        let mut a = SnapshotSummary::new(2, false);
        for (k, m) in [(&b"a"[..], 10), (b"b", 30), (b"c", 30), (b"d", 5)] {
            a.add(&info(k, m, m), "f");
        }
        let keys: Vec<Vec<u8>> = a.biggest_by_memory().into_iter().map(|b| b.key.0).collect();
        assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
        let mut b = SnapshotSummary::new(2, false);
        b.add(&info(b"z", 100, 1), "g");
        a.merge(b);
        let keys: Vec<Vec<u8>> = a.biggest_by_memory().into_iter().map(|b| b.key.0).collect();
        assert_eq!(keys, vec![b"z".to_vec(), b"b".to_vec()]);
        assert_eq!(a.total().keys, 5);
        assert_eq!(a.by_type()["hash"].keys_no_expiry, 5);
        // Nor did it keep any slot's biggest key: it was not asked to.
        assert_eq!(a.slot_biggest(crate::slot::key_slot(b"z")), None);
    }

    #[test]
    fn a_slots_biggest_key_is_told_in_full_whatever_its_length_type_and_file() {
        // Keys of one slot (the tag decides it): short ones held inline, a long one past the
        // inline space, a module type, and a bigger key of the same slot in a second file.
        let slot = crate::slot::key_slot(b"{s}");
        let long = [b"{s}".as_slice(), &[b'x'; 61]].concat();
        let mut a = SnapshotSummary::new(1, true);
        a.add(&info(b"{s}1", 10, 1), "first.rdb");
        let mut m = info(&long, 20, 0);
        m.kind = ValueKind::Module(*b"ReJSON-RL");
        m.encoding = "module";
        m.elements = None;
        m.expires_at_ms = Some(1);
        a.add(&m, "first.rdb");
        a.add(&info(b"{s}2", 20, 5), "first.rdb");
        let big = a.slot_biggest(slot).expect("the slot has keys");
        assert_eq!(
            big,
            BigKey {
                key: ByteString(long.clone()),
                slot,
                kind: "ReJSON-RL".into(),
                encoding: "module".into(),
                elements: None,
                memory: 20,
                serialized: Some(10),
                expires: true,
                file: "first.rdb".into(),
            }
        );
        let mut b = SnapshotSummary::new(1, true);
        b.add(&info(b"{s}3", 30, 7), "second.rdb");
        a.merge(b);
        let big = a.slot_biggest(slot).expect("the slot has keys");
        assert_eq!(
            (
                big.key.0.as_slice(),
                big.kind.as_str(),
                big.elements,
                big.file.as_str()
            ),
            (&b"{s}3"[..], "hash", Some(7), "second.rdb")
        );
        // A summary that goes on to read another file names it.
        a.add(&info(b"{s}4", 40, 1), "third.rdb");
        assert_eq!(a.slot_biggest(slot).expect("a key").file, "third.rdb");
        assert_eq!(a.slot_biggest(slot.wrapping_add(1) % 16384), None);
    }
}
