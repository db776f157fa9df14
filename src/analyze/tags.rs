//! Exact hash-tag counts while the tags are few.
//!
//! The Space-Saving sketches find the heavy tags of any input in bounded memory, but a tag
//! counted after an eviction carries the sketch's error: a 2-key tag can read 31. As long as
//! the input holds at most [`EXACT_TAG_LIMIT`] distinct tags, every tag is counted exactly here
//! instead and the tables print true figures; past the limit the table is dropped (its memory
//! freed) and the sketches' bounded figures are used.

use crate::sketch::HeavyHitter;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Distinct tags counted exactly before giving up (a few MiB at most).
pub const EXACT_TAG_LIMIT: usize = 1 << 16;

/// A hasher for keys that are already 64-bit hashes.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// One tag's exact figures.
/// A tag's figures; the tag itself is `text[at..at + len]` of its table.
#[derive(Debug, Clone, Copy)]
struct Tally {
    at: usize,
    len: usize,
    keys: u64,
    bytes: u64,
}

/// Every tag's keys and bytes, while there are few enough of them.
#[derive(Debug, Clone, Default)]
pub struct ExactTags {
    /// By the tag's 64-bit hash; `None` once the limit was passed or two tags shared a hash.
    map: Option<HashMap<u64, Tally, BuildHasherDefault<Prehashed>>>,
    /// The tags' bytes one after another: one allocation for all of them, where a `Vec` per tag
    /// made an input with more tags than the limit allocate (and then free) one per tag.
    text: Vec<u8>,
}

impl ExactTags {
    /// An empty, counting table.
    pub fn new() -> ExactTags {
        ExactTags {
            map: Some(HashMap::default()),
            text: Vec::new(),
        }
    }

    /// Whether the figures are still exact.
    pub fn is_exact(&self) -> bool {
        self.map.is_some()
    }

    /// Stops counting and frees the table.
    fn give_up(&mut self) {
        self.map = None;
        self.text = Vec::new();
    }

    /// Counts one key of `tag` (whose `hash64` is `h`) weighing `bytes`.
    #[inline]
    pub fn add(&mut self, tag: &[u8], h: u64, bytes: u64) {
        let Some(map) = &mut self.map else {
            return;
        };
        if let Some(t) = map.get_mut(&h) {
            if self.text[t.at..t.at + t.len] != *tag {
                // Two tags, one hash: the table can no longer tell them apart.
                self.give_up();
                return;
            }
            t.keys += 1;
            t.bytes += bytes;
            return;
        }
        if map.len() >= EXACT_TAG_LIMIT {
            self.give_up();
            return;
        }
        let at = self.text.len();
        self.text.extend_from_slice(tag);
        map.insert(
            h,
            Tally {
                at,
                len: tag.len(),
                keys: 1,
                bytes,
            },
        );
    }

    /// Adds another worker's table to this one.
    pub fn merge(&mut self, o: &ExactTags) {
        let (Some(map), Some(other)) = (&mut self.map, &o.map) else {
            self.give_up();
            return;
        };
        // Sums, and a give-up on any shared hash: the same whatever the order.
        #[allow(clippy::iter_over_hash_type)]
        for (h, t) in other {
            let tag = &o.text[t.at..t.at + t.len];
            match map.get_mut(h) {
                Some(mine) if self.text[mine.at..mine.at + mine.len] == *tag => {
                    mine.keys += t.keys;
                    mine.bytes += t.bytes;
                }
                Some(_) => {
                    self.give_up();
                    return;
                }
                None => {
                    let at = self.text.len();
                    self.text.extend_from_slice(tag);
                    map.insert(*h, Tally { at, ..*t });
                }
            }
        }
        if map.len() > EXACT_TAG_LIMIT {
            self.give_up();
        }
    }

    /// The `n` tags with the most keys (`by_bytes`: the most bytes), in the sketches' shape
    /// with no error; ties go to the smaller tag. `None` when the figures are not exact.
    pub fn top(&self, n: usize, by_bytes: bool) -> Option<Vec<HeavyHitter>> {
        let map = self.map.as_ref()?;
        let tag = |t: &Tally| &self.text[t.at..t.at + t.len];
        let mut all: Vec<&Tally> = map.values().filter(|t| !by_bytes || t.bytes > 0).collect();
        let weight = |t: &Tally| if by_bytes { t.bytes } else { t.keys };
        all.sort_by(|a, b| weight(b).cmp(&weight(a)).then_with(|| tag(a).cmp(tag(b))));
        Some(
            all.into_iter()
                .take(n)
                .map(|t| HeavyHitter {
                    item: tag(t).to_vec(),
                    weight: weight(t),
                    error: 0,
                    other: if by_bytes { t.keys } else { t.bytes },
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::hash64;

    fn add(t: &mut ExactTags, tag: &str, bytes: u64) {
        t.add(tag.as_bytes(), hash64(tag.as_bytes()), bytes);
    }

    #[test]
    fn counts_are_exact_and_ordered() {
        let mut a = ExactTags::new();
        let mut b = ExactTags::new();
        for _ in 0..4000 {
            add(&mut a, "big", 10);
        }
        for i in 0..3000 {
            add(&mut b, &format!("two{}", i % 1500), 1);
        }
        add(&mut b, "big", 5);
        a.merge(&b);
        let top = a.top(3, false).unwrap();
        assert_eq!(top[0].item, b"big");
        assert_eq!(
            (top[0].weight, top[0].error, top[0].other),
            (4001, 0, 40005)
        );
        assert_eq!((top[1].weight, top[1].other), (2, 2));
        let by_bytes = a.top(1, true).unwrap();
        assert_eq!((by_bytes[0].weight, by_bytes[0].other), (40005, 4001));
    }

    #[test]
    fn too_many_tags_give_up() {
        let mut a = ExactTags::new();
        for i in 0..=EXACT_TAG_LIMIT {
            add(&mut a, &i.to_string(), 1);
        }
        assert!(!a.is_exact());
        assert!(a.top(1, false).is_none());
        let mut b = ExactTags::new();
        b.merge(&a);
        assert!(!b.is_exact());
    }
}
