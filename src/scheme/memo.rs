//! A memo of key *skeletons* for finding keys' declared families: most dump keys differ from
//! many others only in their digits (`user:1412278:profile`, `user:8:profile`), and when the
//! scheme's automaton does not tell one digit from another, keys of one skeleton (every digit
//! read as `0`) take the same steps and end in the same family. The memo remembers the family
//! of recent skeletons, so such keys are found by a hash and a compare instead of a walk of
//! every byte.
//!
//! A remembered skeleton is compared whole (its length and bytes), never trusted by its hash:
//! the memo changes how fast a family is found, never which. Keys whose skeletons rarely
//! repeat (uuids, random ids) gain nothing and would only fill the memo, and keys of no family
//! gain little (their walk mostly dies within a few bytes), so the memo learns, per key start,
//! whether its keys are found there with a family, and skips the look-up for starts that are
//! not (trying one key in [`RETRY`] of them again, in case that changes). A caller that finds
//! few keys here at all lets the memo rest (see `KeyMatcher::families`).

use crate::pattern::simd::skeleton_block;

/// The longest key the memo remembers (three 16-byte blocks); longer keys are walked.
const LONGEST: usize = 48;

/// log2 of the memo's entries (each a cache line: 64 KiB in all).
const BITS: u32 = 10;

/// log2 of the key starts whose hit rate is learnt.
const START_BITS: u32 = 10;

/// A start's score: a key looked up and found with a family adds [`FOUND`], any other takes
/// 1, so a start stays looked up while at least one key in five of it is found so.
const FOUND: u8 = 4;
/// Scores from here up are looked up.
const LOOK: u8 = 128;
/// Of the keys not looked up (of any start), one in this many is looked up again.
const RETRY: u32 = 64;

/// One remembered skeleton: its 16-byte blocks (the first `len / 16`, then the last sixteen
/// bytes when the length is not a multiple of 16; a key under 16 bytes is one block, padded
/// with zero bytes), its length (0: a free entry) and its family.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Entry {
    blocks: [[u64; 2]; 3],
    len: u32,
    /// The family plus one (0: no family).
    family: u32,
}

/// A key's skeleton, as the memo compares it.
#[derive(Clone, Copy)]
pub(super) struct Skeleton {
    blocks: [[u64; 2]; 3],
    len: u32,
}

impl Skeleton {
    /// The skeleton of a key of 1 to [`LONGEST`] bytes, else `None`.
    #[inline(always)]
    pub(super) fn of(key: &[u8]) -> Option<Skeleton> {
        let n = key.len();
        if n == 0 || n > LONGEST {
            return None;
        }
        let mut blocks = [[0u64; 2]; 3];
        if n < 16 {
            let mut padded = [0u8; 16];
            padded[..n].copy_from_slice(key);
            blocks[0] = skeleton_block::<false>(&padded);
        } else {
            // Every byte is in a block; the last ends at the key's end (overlapping).
            for (b, at) in blocks.iter_mut().zip(crate::simd::block_starts(n)) {
                *b = skeleton_block::<false>(&key[at..at + 16]);
            }
        }
        Some(Skeleton {
            blocks,
            len: n as u32,
        })
    }

    /// The memo entry it goes in: its words folded with rotations, then one multiply (the
    /// compare, not the hash, decides what is found).
    #[inline(always)]
    fn slot(&self) -> usize {
        let [[a, b], [c, d], [e, f]] = self.blocks;
        let x = a ^ b.rotate_left(13) ^ c.rotate_left(23) ^ d.rotate_left(37) ^ e.rotate_left(43);
        let h = (x ^ f.rotate_left(53) ^ self.len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - BITS)) as usize
    }

    /// Whether `e` holds this skeleton (word by word, no call).
    #[inline(always)]
    fn is_in(&self, e: &Entry) -> bool {
        let mut diff = (e.len ^ self.len) as u64;
        for (x, y) in e.blocks.iter().zip(&self.blocks) {
            diff |= (x[0] ^ y[0]) | (x[1] ^ y[1]);
        }
        diff == 0
    }
}

/// The start of a key (its first four bytes, digits read as `0`), as the learnt scores are
/// indexed.
#[inline(always)]
fn start_of(key: &[u8]) -> usize {
    // One load for a key of four bytes or more (a copy of a variable length is a call).
    let w = match key.first_chunk::<4>() {
        Some(w) => *w,
        None => {
            let mut w = [0u8; 4];
            for (d, &b) in w.iter_mut().zip(key) {
                *d = b;
            }
            w
        }
    };
    let w = digits_to_zero(u32::from_le_bytes(w));
    (w.wrapping_mul(0x9E37_79B1) >> (32 - START_BITS)) as usize
}

/// Four bytes with every digit (`0x30..=0x39`) read as `0`, at once: a byte is a digit when
/// its high nibble is 3 and its low nibble plus 6 does not carry into bit 4.
#[inline(always)]
fn digits_to_zero(w: u32) -> u32 {
    let hi3 = !((w & 0xF0F0_F0F0) ^ 0x3030_3030);
    let low = ((w & 0x0F0F_0F0F) + 0x0606_0606) & 0x1010_1010;
    let digit = (hi3 >> 4) & (hi3 >> 5) & (hi3 >> 6) & (hi3 >> 7) & !(low >> 4) & 0x0101_0101;
    w & !(digit * 0x0F)
}

/// What the memo said of a key.
pub(super) enum Recall {
    /// Its family (or that it has none).
    Found(Option<usize>),
    /// Not remembered: walk it, then [`SkeletonMemo::remember`] it.
    Missed(Skeleton),
    /// Not looked up (too long, or its start is rarely found): walk it.
    Skipped,
}

/// Recent skeletons and their families, and per key start whether to look keys up.
pub(super) struct SkeletonMemo {
    entries: Box<[Entry]>,
    scores: Box<[u8]>,
    /// Keys not looked up, counting to the next retry.
    skipped: u32,
    /// Keys found (for tests: that the memo answered).
    #[cfg(test)]
    pub(super) found: u64,
}

impl SkeletonMemo {
    pub(super) fn new() -> SkeletonMemo {
        SkeletonMemo {
            entries: vec![Entry::default(); 1 << BITS].into_boxed_slice(),
            scores: vec![LOOK + 32; 1 << START_BITS].into_boxed_slice(),
            skipped: 0,
            #[cfg(test)]
            found: 0,
        }
    }

    /// The family of `key`'s skeleton, if remembered.
    #[inline(always)]
    pub(super) fn recall(&mut self, key: &[u8]) -> Recall {
        let start = start_of(key);
        let score = self.scores[start];
        if score < LOOK {
            self.skipped += 1;
            if !self.skipped.is_multiple_of(RETRY) {
                return Recall::Skipped;
            }
        }
        let Some(s) = Skeleton::of(key) else {
            return Recall::Skipped;
        };
        let e = &self.entries[s.slot()];
        if s.is_in(e) {
            self.scores[start] = match e.family {
                0 => score.saturating_sub(1),
                _ => score.saturating_add(FOUND),
            };
            #[cfg(test)]
            {
                self.found += 1;
            }
            return Recall::Found(e.family.checked_sub(1).map(|f| f as usize));
        }
        self.scores[start] = score.saturating_sub(1);
        Recall::Missed(s)
    }

    /// Remembers that keys of skeleton `s` are of `family`.
    #[inline]
    pub(super) fn remember(&mut self, s: Skeleton, family: Option<usize>) {
        self.entries[s.slot()] = Entry {
            blocks: s.blocks,
            len: s.len,
            family: family.map_or(0, |f| f as u32 + 1),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_read_as_zero_four_bytes_at_once() {
        for b in 0..=255u8 {
            let want = if b.is_ascii_digit() { b'0' } else { b };
            for at in 0..4 {
                let mut w = [b'x', 0xff, b'9', 0x00];
                w[at] = b;
                let mut expect = w.map(|c| if c.is_ascii_digit() { b'0' } else { c });
                expect[at] = want;
                assert_eq!(
                    digits_to_zero(u32::from_le_bytes(w)).to_le_bytes(),
                    expect,
                    "byte {b:#04x} at {at}"
                );
            }
        }
    }

    /// Whether the memo finds `b` in the entry `a` is remembered in.
    fn same(a: &Skeleton, b: Option<Skeleton>) -> bool {
        let e = Entry {
            blocks: a.blocks,
            len: a.len,
            family: 0,
        };
        b.is_some_and(|b| b.is_in(&e))
    }

    #[test]
    fn skeletons_are_equal_exactly_when_keys_differ_only_in_digits() {
        // Every length around the block edges, and a change at each place of the key.
        for n in 1..=LONGEST {
            let key: Vec<u8> = (0..n).map(|i| b"ab:7x{9}"[i % 8]).collect();
            let s = Skeleton::of(&key).expect("short enough");
            for at in 0..n {
                let mut digit = key.clone();
                let mut other = key.clone();
                if key[at].is_ascii_digit() {
                    digit[at] = b'3';
                    other[at] = b'q';
                } else {
                    other[at] = key[at] ^ 0x01;
                }
                assert!(same(&s, Skeleton::of(&digit)), "n {n}, digit at {at}");
                assert!(!same(&s, Skeleton::of(&other)), "n {n}, other byte at {at}");
            }
            let mut longer = key.clone();
            longer.push(0);
            assert!(!same(&s, Skeleton::of(&longer)), "n {n}, one more byte");
        }
        assert!(Skeleton::of(b"").is_none());
        assert!(Skeleton::of(&[b'a'; LONGEST + 1]).is_none());
    }
}
