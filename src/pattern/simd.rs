//! The byte maps of the skeleton and shape hashes, sixteen bytes at a time.
//!
//! Each function maps one 16-byte block and returns its two little-endian words, equal to the
//! word-at-a-time maps in [`segment`](super::segment) (a test holds every byte value to it).
//! x86-64 uses SSE2, part of every x86-64 CPU; other targets map the two words one by one.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Loads a 16-byte block.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn load(block: &[u8]) -> __m128i {
    assert!(block.len() >= 16, "invariant: a 16-byte block");
    // SAFETY: SSE2 is in the x86-64 baseline; the load is unaligned and 16 bytes are there.
    unsafe { _mm_loadu_si128(block.as_ptr() as *const __m128i) }
}

/// The two little-endian words of a vector.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn words(v: __m128i) -> [u64; 2] {
    // SAFETY: SSE2 is in the x86-64 baseline.
    unsafe {
        [
            _mm_cvtsi128_si64(v) as u64,
            _mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v)) as u64,
        ]
    }
}

/// All-ones bytes where `lo <= byte <= hi` (ASCII ranges; bytes of 0x80 and up compare
/// negative and never match).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn range(x: __m128i, lo: u8, hi: u8) -> __m128i {
    // SAFETY: SSE2 is in the x86-64 baseline.
    unsafe {
        _mm_and_si128(
            _mm_cmpgt_epi8(x, _mm_set1_epi8((lo - 1) as i8)),
            _mm_cmplt_epi8(x, _mm_set1_epi8((hi + 1) as i8)),
        )
    }
}

/// `x` with the bytes in `mask` replaced by `b`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn put(x: __m128i, mask: __m128i, b: u8) -> __m128i {
    // SAFETY: SSE2 is in the x86-64 baseline.
    unsafe {
        _mm_or_si128(
            _mm_andnot_si128(mask, x),
            _mm_and_si128(mask, _mm_set1_epi8(b as i8)),
        )
    }
}

/// Every digit (and, with `HEX`, every hex letter) read as `0`.
#[inline(always)]
pub(crate) fn skeleton_block<const HEX: bool>(block: &[u8]) -> [u64; 2] {
    #[cfg(target_arch = "x86_64")]
    {
        let x = load(block);
        let mut m = range(x, b'0', b'9');
        if HEX {
            // SAFETY: SSE2 is in the x86-64 baseline.
            let folded = unsafe { _mm_or_si128(x, _mm_set1_epi8(0x20)) };
            // SAFETY: as above.
            m = unsafe { _mm_or_si128(m, range(folded, b'a', b'f')) };
        }
        words(put(x, m, b'0'))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let [a, b] = split(block);
        [
            super::segment::skeleton_word::<HEX>(a),
            super::segment::skeleton_word::<HEX>(b),
        ]
    }
}

/// The shape (letters and digits read as `a`) and the class shape (letters as `a`, digits as
/// `0`) of a block.
#[inline(always)]
pub(crate) fn shape_blocks(block: &[u8]) -> [[u64; 2]; 2] {
    #[cfg(target_arch = "x86_64")]
    {
        let x = load(block);
        let d = range(x, b'0', b'9');
        // SAFETY: SSE2 is in the x86-64 baseline.
        let (l, alnum) = unsafe {
            let l = range(_mm_or_si128(x, _mm_set1_epi8(0x20)), b'a', b'z');
            (l, _mm_or_si128(l, d))
        };
        [
            words(put(x, alnum, b'a')),
            words(put(put(x, l, b'a'), d, b'0')),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let [a, b] = split(block);
        let (sa, sb) = (super::segment::shape_word(a), super::segment::shape_word(b));
        let (ca, cb) = (
            super::segment::class_shape_word(a),
            super::segment::class_shape_word(b),
        );
        [[sa, sb], [ca, cb]]
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn split(block: &[u8]) -> [u64; 2] {
    let le = |s: &[u8]| u64::from_le_bytes(s[..8].try_into().expect("invariant: 8 bytes"));
    [le(&block[..8]), le(&block[8..16])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::segment::{class_shape_word, shape_word, skeleton_word};

    /// Every byte value, sixteen blocks of sixteen.
    fn blocks() -> Vec<[u8; 16]> {
        (0..16)
            .map(|k| std::array::from_fn(|i| (k * 16 + i) as u8))
            .collect()
    }

    fn le(s: &[u8]) -> u64 {
        u64::from_le_bytes(s.try_into().unwrap())
    }

    #[test]
    fn block_maps_equal_the_word_maps_on_every_byte() {
        for b in blocks() {
            let (lo, hi) = (le(&b[..8]), le(&b[8..]));
            assert_eq!(
                skeleton_block::<false>(&b),
                [skeleton_word::<false>(lo), skeleton_word::<false>(hi)]
            );
            assert_eq!(
                skeleton_block::<true>(&b),
                [skeleton_word::<true>(lo), skeleton_word::<true>(hi)]
            );
            assert_eq!(
                shape_blocks(&b),
                [
                    [shape_word(lo), shape_word(hi)],
                    [class_shape_word(lo), class_shape_word(hi)]
                ]
            );
        }
    }
}
