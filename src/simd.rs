//! Overlapping 16-byte loads: a slice of 16 bytes or more is covered by whole 16-byte blocks,
//! the last one ending at the slice's end and so overlapping the block before it. No copy into
//! a padded buffer, no byte-by-byte tail; a byte two blocks cover is simply seen twice.
//!
//! [`block_starts`] gives the blocks' offsets, for code that maps each block (the key memo's
//! skeletons, the pattern classes). `byte_mask` (x86-64) tests every byte of 16 to 64 bytes
//! with an SSE2 compare (part of every x86-64 CPU) and returns one bit per byte (the lint's
//! key check asks `mask_at_most_or`, built on it); [`byte_mask_scalar`] is their definition a
//! byte at a time, which the tests hold them to.
#![allow(unsafe_code)]

/// The longest slice `byte_mask` takes: four blocks.
pub const MASK_BYTES: usize = 64;

/// The offsets of the 16-byte blocks that cover `len` bytes (`len` ≥ 16): 0, 16, 32, … and,
/// when `len` is not a multiple of 16, `len - 16`, overlapping the block before. Empty for
/// `len` < 16 (no block fits).
#[inline(always)]
pub fn block_starts(len: usize) -> BlockStarts {
    BlockStarts { next: 0, len }
}

/// The iterator [`block_starts`] returns.
#[derive(Debug, Clone)]
pub struct BlockStarts {
    next: usize,
    len: usize,
}

impl Iterator for BlockStarts {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let at = self.next;
        if at + 16 <= self.len {
            self.next = at + 16;
            Some(at)
        } else if at < self.len && self.len >= 16 {
            // The tail: the last sixteen bytes, overlapping the block before.
            self.next = self.len;
            Some(self.len - 16)
        } else {
            None
        }
    }
}

/// One bit per byte of `hay` (16 to [`MASK_BYTES`] bytes), bit `i` set when `test` flags
/// byte `i`: `test` maps a 16-byte vector to a vector of `0xFF` (flagged) or `0` bytes, and is
/// run on each block of [`block_starts`] (at most four loads, the last overlapping).
#[cfg(x86_simd)]
#[inline(always)]
fn byte_mask(
    hay: &[u8],
    test: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
) -> u64 {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_movemask_epi8};
    let len = hay.len();
    assert!(
        (16..=MASK_BYTES).contains(&len),
        "invariant: 16 to 64 bytes"
    );
    let mut mask = 0u64;
    for at in block_starts(len) {
        // SAFETY: SSE2 is part of x86-64; `at + 16 <= len`, so the unaligned load reads 16
        // bytes inside `hay`. A byte two loads see sets the same bit in both.
        let flags = unsafe {
            _mm_movemask_epi8(test(_mm_loadu_si128(
                hay.as_ptr().add(at).cast::<__m128i>(),
            )))
        };
        mask |= u64::from(flags as u16) << at;
    }
    mask
}

/// One bit per byte of `hay` (16 to [`MASK_BYTES`] bytes): bit `i` set when `hay[i] <= hi`
/// or `hay[i] == also` (unsigned), by `byte_mask`.
#[cfg(x86_simd)]
#[inline(always)]
pub fn mask_at_most_or(hay: &[u8], hi: u8, also: u8) -> u64 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_min_epu8, _mm_or_si128, _mm_set1_epi8};
    byte_mask(hay, |v: __m128i| {
        // SAFETY: SSE2 is part of x86-64. b ≤ hi exactly when min(b, hi) == b (unsigned).
        unsafe {
            let (hi, also) = (_mm_set1_epi8(hi as i8), _mm_set1_epi8(also as i8));
            _mm_or_si128(
                _mm_cmpeq_epi8(_mm_min_epu8(v, hi), v),
                _mm_cmpeq_epi8(v, also),
            )
        }
    })
}

/// `byte_mask` without vector instructions: bit `i` set when `flag(hay[i])` (any length up
/// to [`MASK_BYTES`]).
#[inline]
pub fn byte_mask_scalar(hay: &[u8], flag: impl Fn(u8) -> bool) -> u64 {
    assert!(hay.len() <= MASK_BYTES, "invariant: at most 64 bytes");
    hay.iter()
        .enumerate()
        .fold(0u64, |m, (i, &b)| m | (u64::from(flag(b)) << i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_byte_once_or_in_the_overlap() {
        assert_eq!(block_starts(0).count(), 0);
        assert_eq!(block_starts(15).count(), 0);
        assert_eq!(block_starts(16).collect::<Vec<_>>(), [0]);
        assert_eq!(block_starts(17).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(block_starts(32).collect::<Vec<_>>(), [0, 16]);
        assert_eq!(block_starts(40).collect::<Vec<_>>(), [0, 16, 24]);
        for len in 16..200 {
            let starts: Vec<usize> = block_starts(len).collect();
            assert_eq!(starts.len(), len.div_ceil(16), "{len}");
            let mut seen = vec![0u8; len];
            for &at in &starts {
                assert!(at + 16 <= len, "{len}: a block past the end at {at}");
                for s in &mut seen[at..at + 16] {
                    *s += 1;
                }
            }
            assert!(seen.iter().all(|&s| s >= 1), "{len}: a byte left out");
            let twice = seen.iter().filter(|&&s| s == 2).count();
            assert_eq!(twice, (16 - len % 16) % 16, "{len}: the overlap");
        }
    }

    #[test]
    fn the_scalar_mask_flags_each_byte() {
        let hay: Vec<u8> = (0..64).collect();
        assert_eq!(byte_mask_scalar(&hay, |b| b == 0), 1);
        assert_eq!(byte_mask_scalar(&hay, |b| b == 63), 1 << 63);
        assert_eq!(byte_mask_scalar(&hay, |_| true), u64::MAX);
        assert_eq!(byte_mask_scalar(&[], |_| true), 0);
    }

    /// The byte-class mask the lint's key check asks is its scalar definition, for every byte
    /// value at the start, in the overlap and at the end of every length.
    #[cfg(x86_simd)]
    #[test]
    fn the_at_most_mask_is_its_definition() {
        for len in 16..=MASK_BYTES {
            let mut hay = vec![b'a'; len];
            for b in 0..=255u8 {
                for at in [0, len / 2, len - 1] {
                    hay[at] = b;
                    assert_eq!(
                        mask_at_most_or(&hay, 0x20, 0x7f),
                        byte_mask_scalar(&hay, |x| x <= 0x20 || x == 0x7f),
                        "{len} bytes, {b:#x} at {at}"
                    );
                    hay[at] = b'a';
                }
            }
        }
    }

    /// The vector mask and its scalar twin agree for every length and every position of a
    /// flagged byte, and with no flagged byte at all.
    #[cfg(x86_simd)]
    #[test]
    fn the_vector_mask_is_its_scalar_twin() {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_set1_epi8};
        let eq = |needle: u8| move |v| unsafe { _mm_cmpeq_epi8(v, _mm_set1_epi8(needle as i8)) };
        for len in 16..=MASK_BYTES {
            let mut hay = vec![b'a'; len];
            assert_eq!(byte_mask(&hay, eq(b'x')), 0, "{len}");
            for i in 0..len {
                hay[i] = b'x';
                assert_eq!(
                    byte_mask(&hay, eq(b'x')),
                    byte_mask_scalar(&hay, |b| b == b'x'),
                    "{len} bytes, x at {i}"
                );
                assert_eq!(byte_mask(&hay, eq(b'x')), 1 << i, "{len} bytes, x at {i}");
                hay[i] = b'a';
            }
            // Every byte value, at the start, in the overlap and at the end.
            for b in 0..=255u8 {
                for at in [0, len / 2, len - 1] {
                    hay[at] = b;
                    assert_eq!(
                        byte_mask(&hay, eq(b)),
                        byte_mask_scalar(&hay, |x| x == b),
                        "{len} bytes, {b:#x} at {at}"
                    );
                    hay[at] = b'a';
                }
            }
        }
    }
}
