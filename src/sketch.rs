//! Bounded-memory summaries of a key stream: a HyperLogLog for distinct counts and a
//! Space-Saving heavy-hitters table for the top-K items. Both merge, so each worker keeps its
//! own and the results are combined at the end.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for keys that are already good 64-bit hashes.
#[derive(Default, Clone, Copy)]
pub struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// A map keyed by 64-bit hashes.
pub type HashIndex<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

/// A fast 64-bit hash for sketches: [`mix_words`] over the bytes as they are.
/// Not for hash tables exposed to untrusted input; only for estimates.
#[inline]
pub fn hash64(data: &[u8]) -> u64 {
    mix_words(data, |w| w)
}

/// Folded 64×64→128-bit multiply (as in wyhash and rapidhash).
#[inline(always)]
fn mum(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// Hashes `data` read as little-endian words, each passed through `word` first (a byte-wise
/// map such as "digits read as `0`"; bytes past the end of a short key are zero). Every byte
/// is read at least once (some twice, where the windows overlap) and the length is mixed in
/// last. Each 16-byte block is mixed on its own, with secrets that depend on its position,
/// so the multiplies run in parallel instead of adding up their latencies word after word.
#[inline(always)]
pub fn mix_words(data: &[u8], word: impl Fn(u64) -> u64) -> u64 {
    mix_words_n(data, |w| [word(w)])[0]
}

/// The secrets [`mix_words_n`] and [`mix_blocks_n`] mix with.
const S0: u64 = 0x2d35_8dcc_aa6c_78a5;
const S1: u64 = 0x8bb8_4b93_962e_acc9;
const S2: u64 = 0x4b33_a62e_d433_d4a3;
const S3: u64 = 0x4d5a_2da5_1de1_aa47;

/// [`mix_words`] for `N` word transforms at once: one pass over `data`, each 8-byte word
/// loaded once, `N` hashes equal to `N` separate [`mix_words`] calls.
#[inline(always)]
pub fn mix_words_n<const N: usize>(data: &[u8], word: impl Fn(u64) -> [u64; N]) -> [u64; N] {
    let le64 = |s: &[u8]| u64::from_le_bytes(s[..8].try_into().expect("invariant: 8 bytes"));
    let le32 = |s: &[u8]| {
        u64::from(u32::from_le_bytes(
            s[..4].try_into().expect("invariant: 4 bytes"),
        ))
    };
    let n = data.len();
    let mut acc = [0u64; N];
    if n <= 16 {
        let (a, b) = if n >= 8 {
            (le64(data), le64(&data[n - 8..]))
        } else if n >= 4 {
            (le32(data), le32(&data[n - 4..]))
        } else if n > 0 {
            let a = u64::from(data[0]) << 16 | u64::from(data[n / 2]) << 8 | u64::from(data[n - 1]);
            (a, 0)
        } else {
            (0, 0)
        };
        let (wa, wb) = (word(a), word(b));
        for k in 0..N {
            acc[k] = mum(wa[k] ^ S0, wb[k] ^ S1);
        }
    } else {
        // 16-byte blocks from the start, then the last 16 bytes.
        let mut i = 0usize;
        let mut lane = 0u64;
        while i + 16 < n {
            let (wa, wb) = (word(le64(&data[i..])), word(le64(&data[i + 8..])));
            for k in 0..N {
                acc[k] ^= mum(wa[k] ^ S0.wrapping_add(lane), wb[k] ^ S1.wrapping_add(lane));
            }
            i += 16;
            lane = lane.wrapping_add(S2);
        }
        let (wa, wb) = (word(le64(&data[n - 16..])), word(le64(&data[n - 8..])));
        for k in 0..N {
            acc[k] ^= mum(wa[k] ^ S2, wb[k] ^ S3);
        }
    }
    for a in &mut acc {
        *a = mum(*a ^ S3, (n as u64) ^ S0);
    }
    acc
}

/// [`mix_words_n`] with the words of each 16-byte block mapped together by `block` (which must
/// equal `word` applied to the block's two little-endian words): a vector unit maps sixteen
/// bytes in a few instructions. Keys of 16 bytes or fewer use `word`.
#[inline(always)]
pub fn mix_blocks_n<const N: usize>(
    data: &[u8],
    word: impl Fn(u64) -> [u64; N],
    block: impl Fn(&[u8]) -> [[u64; 2]; N],
) -> [u64; N] {
    let n = data.len();
    if n <= 16 {
        return mix_words_n(data, word);
    }
    let mut acc = [0u64; N];
    let mut i = 0usize;
    let mut lane = 0u64;
    while i + 16 < n {
        let w = block(&data[i..i + 16]);
        for k in 0..N {
            acc[k] ^= mum(
                w[k][0] ^ S0.wrapping_add(lane),
                w[k][1] ^ S1.wrapping_add(lane),
            );
        }
        i += 16;
        lane = lane.wrapping_add(S2);
    }
    let w = block(&data[n - 16..]);
    for k in 0..N {
        acc[k] ^= mum(w[k][0] ^ S2, w[k][1] ^ S3);
        acc[k] = mum(acc[k] ^ S3, (n as u64) ^ S0);
    }
    acc
}

/// HyperLogLog with `2^p` one-byte registers (standard error ≈ 1.04/√(2^p)).
#[derive(Debug, Clone)]
pub struct Hll {
    p: u8,
    regs: Vec<u8>,
}

impl Hll {
    /// A sketch with `2^p` registers, `4 <= p <= 16`.
    pub fn new(p: u8) -> Hll {
        let p = p.clamp(4, 16);
        Hll {
            p,
            regs: vec![0; 1 << p],
        }
    }

    /// Adds an item by its 64-bit hash.
    #[inline]
    pub fn insert_hash(&mut self, h: u64) {
        let idx = (h >> (64 - self.p)) as usize;
        let rest = (h << self.p) | (1 << (self.p - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        if rank > self.regs[idx] {
            self.regs[idx] = rank;
        }
    }

    /// Adds an item.
    #[inline]
    pub fn insert(&mut self, item: &[u8]) {
        self.insert_hash(hash64(item));
    }

    /// Combines another sketch of the same size into this one.
    pub fn merge(&mut self, other: &Hll) {
        if other.p != self.p {
            return;
        }
        for (a, b) in self.regs.iter_mut().zip(&other.regs) {
            *a = (*a).max(*b);
        }
    }

    /// The estimated number of distinct items (with the small-range correction).
    pub fn estimate(&self) -> u64 {
        let m = self.regs.len() as f64;
        let alpha = match self.regs.len() {
            16 => 0.673,
            32 => 0.697,
            64 => 0.709,
            _ => 0.7213 / (1.0 + 1.079 / m),
        };
        let sum: f64 = self.regs.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let raw = alpha * m * m / sum;
        let zeros = self.regs.iter().filter(|&&r| r == 0).count();
        let est = if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln()
        } else {
            raw
        };
        est.round() as u64
    }
}

/// One monitored item of a [`SpaceSaving`] table.
#[derive(Debug, Clone, PartialEq)]
pub struct HeavyHitter {
    /// The item.
    pub item: Vec<u8>,
    /// Its estimated weight (an upper bound).
    pub weight: u64,
    /// How much of `weight` may be over-counted (`weight - error` is a lower bound).
    pub error: u64,
    /// A second weight carried along (e.g. bytes while ranking by keys); approximate.
    pub other: u64,
}

/// The Space-Saving algorithm (Metwally et al.): keeps `capacity` counters; any item whose true
/// weight exceeds `total / capacity` is guaranteed to be among them.
///
/// The victim when a new item arrives is any item of minimum weight. Instead of a heap (whose
/// sift costs log(capacity) on every update, and most updates of a long tail are evictions),
/// the items at the current minimum are kept in a list, rebuilt by one scan when it runs out:
/// weights only grow, and an evicted slot leaves the minimum, so a scan serves about as many
/// evictions as there are items at the minimum. O(1) amortised per update.
///
/// An evicted item's hash stays in the index (one probe per update instead of three: find,
/// unindex the victim, index the newcomer); an entry counts only while the item it points to
/// still has that hash, and the index is rebuilt from the items when stale entries make it
/// `INDEX_SLACK` times the capacity, so its memory stays bounded.
#[derive(Debug, Clone)]
pub struct SpaceSaving {
    capacity: usize,
    /// hash64(item) -> index into `items`; stale where `hashes[i]` is no longer the key.
    index: HashIndex<usize>,
    items: Vec<HeavyHitter>,
    /// hash64 of each item (tells live index entries from stale ones; rebuilds the index).
    hashes: Vec<u64>,
    /// The items of minimum weight.
    mins: MinList,
}

/// The items of a [`SpaceSaving`] table at the minimum weight, rebuilt by one scan when it
/// runs out or may be wrong.
#[derive(Debug, Clone)]
struct MinList {
    /// Indices of items whose weight is `min` (valid when not `stale`).
    at_min: Vec<usize>,
    /// Position of each item in `at_min`, or `usize::MAX`.
    min_pos: Vec<usize>,
    /// The minimum weight (valid when not `stale`).
    min: u64,
    /// `at_min` must be rebuilt before use.
    stale: bool,
}

impl MinList {
    fn new() -> MinList {
        MinList {
            at_min: Vec::new(),
            min_pos: Vec::new(),
            min: 0,
            stale: true,
        }
    }

    /// Makes room for one more item (not at the minimum until the next rebuild).
    fn push(&mut self) {
        self.min_pos.push(usize::MAX);
        self.stale = true;
    }

    /// Removes item `i` from the list (its weight grew).
    fn leave(&mut self, i: usize) {
        let p = self.min_pos[i];
        if p == usize::MAX {
            return;
        }
        self.min_pos[i] = usize::MAX;
        self.at_min.swap_remove(p);
        if let Some(&moved) = self.at_min.get(p) {
            self.min_pos[moved] = p;
        }
        if self.at_min.is_empty() {
            self.stale = true;
        }
    }

    /// An item of minimum weight among `items` (not empty), and that weight.
    fn victim(&mut self, items: &[HeavyHitter]) -> (usize, u64) {
        if self.stale || self.at_min.is_empty() {
            for &i in &self.at_min {
                self.min_pos[i] = usize::MAX;
            }
            self.at_min.clear();
            self.min = items.iter().map(|h| h.weight).min().unwrap_or(0);
            for (i, h) in items.iter().enumerate() {
                if h.weight == self.min {
                    self.min_pos[i] = self.at_min.len();
                    self.at_min.push(i);
                }
            }
            self.stale = false;
        }
        let i = *self.at_min.last().expect("a full table has a minimum");
        (i, self.min)
    }
}

/// How many times the capacity the Space-Saving index may grow (with stale entries) before
/// it is rebuilt.
const INDEX_SLACK: usize = 4;

impl SpaceSaving {
    /// A table with room for `capacity` items.
    pub fn new(capacity: usize) -> SpaceSaving {
        SpaceSaving {
            capacity: capacity.max(1),
            index: HashIndex::default(),
            items: Vec::new(),
            hashes: Vec::new(),
            mins: MinList::new(),
        }
    }

    /// Adds `weight` (and a carried `other` weight) to `item`.
    pub fn add(&mut self, item: &[u8], weight: u64, other: u64) {
        self.add_hashed(item, hash64(item), weight, other);
    }

    /// [`SpaceSaving::add`] with the item's [`hash64`] already computed. Allocation-free once
    /// the table is full.
    pub fn add_hashed(&mut self, item: &[u8], h: u64, weight: u64, other: u64) {
        if self.index.len() >= INDEX_SLACK * self.capacity {
            self.reindex();
        }
        let slot = match self.index.entry(h) {
            Entry::Occupied(e) if self.hashes[*e.get()] == h => {
                let i = *e.get();
                if self.items[i].item != item {
                    return; // a 64-bit hash collision: too rare to matter for an estimate
                }
                self.items[i].weight += weight;
                self.items[i].other += other;
                if weight > 0 {
                    self.mins.leave(i);
                }
                return;
            }
            // A stale entry (its item was evicted) or none: `item` is new to the table.
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(usize::MAX),
        };
        if self.items.len() < self.capacity {
            *slot = self.items.len();
            self.items.push(HeavyHitter {
                item: item.to_vec(),
                weight,
                error: 0,
                other,
            });
            self.hashes.push(h);
            self.mins.push();
            return;
        }
        // Replace an item of minimum weight: the newcomer inherits it as possible over-count.
        let (i, min) = self.mins.victim(&self.items);
        *slot = i;
        let e = &mut self.items[i];
        e.item.clear();
        e.item.extend_from_slice(item);
        e.weight = min + weight;
        e.error = min;
        e.other = other;
        self.hashes[i] = h;
        if weight > 0 {
            self.mins.leave(i);
        }
    }

    /// Rebuilds the index from the items (drops the stale entries).
    fn reindex(&mut self) {
        self.index.clear();
        for (i, &h) in self.hashes.iter().enumerate() {
            self.index.insert(h, i);
        }
    }

    /// Where the item with hash `h` is, if it is in the table.
    fn position(&self, h: u64) -> Option<usize> {
        self.index.get(&h).copied().filter(|&i| self.hashes[i] == h)
    }

    /// Combines another table into this one (weights of shared items add up; the result keeps
    /// the `capacity` heaviest).
    pub fn merge(&mut self, other: &SpaceSaving) {
        let mut all: HashMap<Vec<u8>, HeavyHitter> = HashMap::new();
        let self_min = self.min_weight();
        let other_min = other.min_weight();
        for h in &self.items {
            all.insert(h.item.clone(), h.clone());
        }
        for h in &other.items {
            match all.get_mut(&h.item) {
                Some(e) => {
                    e.weight += h.weight;
                    e.error += h.error;
                    e.other += h.other;
                }
                None => {
                    // Absent from this table: it may have had up to this table's minimum.
                    let mut e = h.clone();
                    e.weight += self_min;
                    e.error += self_min;
                    all.insert(h.item.clone(), e);
                }
            }
        }
        for h in &self.items {
            if other.position(hash64(&h.item)).is_none()
                && let Some(e) = all.get_mut(&h.item)
            {
                e.weight += other_min;
                e.error += other_min;
            }
        }
        let mut v: Vec<HeavyHitter> = all.into_values().collect();
        v.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.item.cmp(&b.item)));
        v.truncate(self.capacity);
        let mut fresh = SpaceSaving::new(self.capacity);
        for (i, h) in v.into_iter().enumerate() {
            let hh = hash64(&h.item);
            fresh.index.insert(hh, i);
            fresh.hashes.push(hh);
            fresh.mins.push();
            fresh.items.push(h);
        }
        *self = fresh;
    }

    fn min_weight(&self) -> u64 {
        if self.items.len() < self.capacity {
            0
        } else {
            self.items.iter().map(|h| h.weight).min().unwrap_or(0)
        }
    }

    /// The `n` heaviest items, heaviest first (ties by item bytes).
    pub fn top(&self, n: usize) -> Vec<HeavyHitter> {
        let mut v = self.items.clone();
        v.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.item.cmp(&b.item)));
        v.truncate(n);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hll_estimates_within_a_few_percent() {
        for n in [0u64, 10, 1000, 100_000] {
            let mut h = Hll::new(14);
            for i in 0..n {
                h.insert(format!("tag:{i}").as_bytes());
            }
            let e = h.estimate() as f64;
            assert!(
                (e - n as f64).abs() <= (n as f64 * 0.03).max(2.0),
                "n={n} est={e}"
            );
        }
    }

    #[test]
    fn hll_merge_equals_union() {
        let (mut a, mut b, mut u) = (Hll::new(12), Hll::new(12), Hll::new(12));
        for i in 0..5000 {
            let k = format!("k{i}");
            if i % 2 == 0 {
                a.insert(k.as_bytes())
            } else {
                b.insert(k.as_bytes())
            }
            u.insert(k.as_bytes());
        }
        a.merge(&b);
        assert_eq!(a.estimate(), u.estimate());
    }

    #[test]
    fn space_saving_finds_heavy_items() {
        let mut s = SpaceSaving::new(64);
        for i in 0..10_000u64 {
            s.add(format!("rare{i}").as_bytes(), 1, 0);
            if i % 10 == 0 {
                s.add(b"hot", 1, 5);
            }
            if i % 20 == 0 {
                s.add(b"warm", 1, 0);
            }
        }
        let top = s.top(2);
        assert_eq!(top[0].item, b"hot");
        assert!(top[0].weight - top[0].error <= 1000 && top[0].weight >= 1000);
        assert_eq!(top[1].item, b"warm");
    }

    #[test]
    fn space_saving_merge_keeps_heavy_items() {
        let (mut a, mut b) = (SpaceSaving::new(8), SpaceSaving::new(8));
        for i in 0..1000u64 {
            a.add(format!("x{i}").as_bytes(), 1, 0);
            b.add(format!("y{i}").as_bytes(), 1, 0);
            a.add(b"hot", 1, 0);
            b.add(b"hot", 1, 0);
        }
        a.merge(&b);
        let top = a.top(1);
        assert_eq!(top[0].item, b"hot");
        assert!(top[0].weight >= 2000);
    }

    proptest::proptest! {
        /// Whichever minimum item is evicted, Space-Saving's guarantees hold, however often
        /// items leave and come back (which leaves stale index entries and rebuilds the index).
        #[test]
        fn space_saving_bounds_hold_with_evictions(
            stream in proptest::collection::vec((0u8..40, 0u64..3), 0..2000),
            capacity in 1usize..12,
        ) {
            let mut s = SpaceSaving::new(capacity);
            let mut truth = std::collections::BTreeMap::new();
            for &(item, w) in &stream {
                s.add(&[item], w, 0);
                *truth.entry(item).or_insert(0u64) += w;
            }
            let total: u64 = truth.values().sum();
            proptest::prop_assert_eq!(s.items.iter().map(|h| h.weight).sum::<u64>(), total);
            proptest::prop_assert!(s.index.len() <= INDEX_SLACK * s.capacity);
            let mut seen = std::collections::HashSet::new();
            for (i, h) in s.items.iter().enumerate() {
                proptest::prop_assert!(seen.insert(h.item.clone()), "item kept twice");
                proptest::prop_assert_eq!(s.position(hash64(&h.item)), Some(i));
                let t = truth[&h.item[0]];
                proptest::prop_assert!(h.weight - h.error <= t && t <= h.weight);
            }
            // An item heavier than total / capacity is always kept.
            for (item, &t) in &truth {
                if t * capacity as u64 > total {
                    proptest::prop_assert!(s.position(hash64(&[*item])).is_some());
                }
            }
        }
    }
}
