//! The byte maps of the skeleton and shape hashes, and the byte classes the token memo
//! compares, sixteen bytes at a time.
//!
//! Each hash map maps one 16-byte block and returns its two little-endian words, equal to the
//! word-at-a-time maps in [`segment`](super::segment) (a test holds every byte value to it).
//! x86-64 uses SSE2, part of every x86-64 CPU; other targets map the two words one by one, and
//! read the byte classes a byte at a time.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(x86_simd)]
use std::arch::x86_64::*;

/// Loads a 16-byte block.
#[cfg(x86_simd)]
#[inline(always)]
fn load(block: &[u8]) -> __m128i {
    assert!(block.len() >= 16, "invariant: a 16-byte block");
    // SAFETY: SSE2 is in the x86-64 baseline; the load is unaligned and 16 bytes are there.
    unsafe { _mm_loadu_si128(block.as_ptr() as *const __m128i) }
}

/// The two little-endian words of a vector.
#[cfg(x86_simd)]
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
#[cfg(x86_simd)]
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
#[cfg(x86_simd)]
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
    #[cfg(x86_simd)]
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
    #[cfg(not(x86_simd))]
    {
        let [a, b] = split(block);
        [
            super::segment::skeleton_word::<HEX>(a),
            super::segment::skeleton_word::<HEX>(b),
        ]
    }
}

/// The shape (letters and digits read as `a`) or, with `CLASS`, the class shape (letters as
/// `a`, digits as `0`) of a block: [`shape_blocks`] when only one of them is needed.
#[inline(always)]
pub(crate) fn shape_block<const CLASS: bool>(block: &[u8]) -> [u64; 2] {
    #[cfg(x86_simd)]
    {
        let x = load(block);
        let d = range(x, b'0', b'9');
        // SAFETY: SSE2 is in the x86-64 baseline.
        let l = range(unsafe { _mm_or_si128(x, _mm_set1_epi8(0x20)) }, b'a', b'z');
        if CLASS {
            words(put(put(x, l, b'a'), d, b'0'))
        } else {
            // SAFETY: as above.
            words(put(x, unsafe { _mm_or_si128(l, d) }, b'a'))
        }
    }
    #[cfg(not(x86_simd))]
    {
        let [a, b] = split(block);
        let w = if CLASS {
            super::segment::class_shape_word
        } else {
            super::segment::shape_word
        };
        [w(a), w(b)]
    }
}

/// The shape (letters and digits read as `a`) and the class shape (letters as `a`, digits as
/// `0`) of a block.
#[inline(always)]
pub(crate) fn shape_blocks(block: &[u8]) -> [[u64; 2]; 2] {
    #[cfg(x86_simd)]
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
    #[cfg(not(x86_simd))]
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

/// Longest key [`same_classes`] compares.
pub(crate) const CLASS_BYTES: usize = 96;

/// In a class code: a digit.
pub(crate) const CODE_DIGIT: u8 = 1;
/// In a class code: a letter or a digit.
pub(crate) const CODE_ALNUM: u8 = 2;
/// In a class code: a hex digit.
pub(crate) const CODE_HEX: u8 = 4;
/// In a class code: an upper-case letter.
pub(crate) const CODE_UPPER: u8 = 8;
/// In a class code: `I`, `L`, `O` or `U` (the letters Crockford base32 leaves out).
pub(crate) const CODE_ILOU: u8 = 16;
/// In a care mask: compare the byte itself (the mask is then `0xFF`).
pub(crate) const CARE_EXACT: u8 = 0xFF;

/// A byte's class code: which of the `CODE_*` classes it is in.
pub(crate) fn class_code(b: u8) -> u8 {
    let on = |c: bool, bit: u8| if c { bit } else { 0 };
    on(b.is_ascii_digit(), CODE_DIGIT)
        | on(b.is_ascii_alphanumeric(), CODE_ALNUM)
        | on(b.is_ascii_hexdigit(), CODE_HEX)
        | on(b.is_ascii_uppercase(), CODE_UPPER)
        | on(matches!(b, b'I' | b'L' | b'O' | b'U'), CODE_ILOU)
}

/// Whether every byte of `key` (at most [`CLASS_BYTES`]) agrees with `expected` where `care`
/// says: the byte itself where `care` is [`CARE_EXACT`], else the bits of its class code that
/// `care` holds.
#[inline]
pub(crate) fn same_classes(
    key: &[u8],
    expected: &[u8; CLASS_BYTES],
    care: &[u8; CLASS_BYTES],
) -> bool {
    let n = key.len();
    assert!(n <= CLASS_BYTES, "invariant: a short key");
    #[cfg(x86_simd)]
    {
        let block = |at: usize, x: &[u8]| same_block(x, &expected[at..at + 16], &care[at..at + 16]);
        if n >= 16 {
            // Whole blocks, the last ending at the key's end (overlapping the one before).
            crate::simd::block_starts(n).all(|at| block(at, &key[at..at + 16]))
        } else if n == 0 {
            true
        } else {
            // A short key: its bytes, then bytes that agree wherever `care` can look (past the
            // key's end it is 0).
            let mut buf = [0u8; 16];
            buf[..n].copy_from_slice(key);
            block(0, &buf)
        }
    }
    #[cfg(not(x86_simd))]
    {
        key.iter().zip(expected).zip(care).all(|((&b, &e), &c)| {
            let v = if c == CARE_EXACT { b } else { class_code(b) };
            (v ^ e) & c == 0
        })
    }
}

/// [`same_classes`] for one 16-byte block.
#[cfg(x86_simd)]
#[inline(always)]
fn same_block(x: &[u8], expected: &[u8], care: &[u8]) -> bool {
    let (x, e, c) = (load(x), load(expected), load(care));
    // SAFETY: SSE2 is in the x86-64 baseline.
    unsafe {
        let set = |b: u8| _mm_set1_epi8(b as i8);
        let eq = |b: u8| _mm_cmpeq_epi8(x, set(b));
        let folded = _mm_or_si128(x, set(0x20));
        let digit = range(x, b'0', b'9');
        let alnum = _mm_or_si128(digit, range(folded, b'a', b'z'));
        let hex = _mm_or_si128(digit, range(folded, b'a', b'f'));
        let upper = range(x, b'A', b'Z');
        let ilou = _mm_or_si128(
            _mm_or_si128(eq(b'I'), eq(b'L')),
            _mm_or_si128(eq(b'O'), eq(b'U')),
        );
        let code = _mm_or_si128(
            _mm_or_si128(
                _mm_and_si128(digit, set(CODE_DIGIT)),
                _mm_and_si128(alnum, set(CODE_ALNUM)),
            ),
            _mm_or_si128(
                _mm_or_si128(
                    _mm_and_si128(hex, set(CODE_HEX)),
                    _mm_and_si128(upper, set(CODE_UPPER)),
                ),
                _mm_and_si128(ilou, set(CODE_ILOU)),
            ),
        );
        // Where care is 0xFF (negative as a signed byte) the byte itself is compared.
        let exact = _mm_cmplt_epi8(c, _mm_setzero_si128());
        let v = _mm_or_si128(_mm_and_si128(exact, x), _mm_andnot_si128(exact, code));
        let diff = _mm_and_si128(_mm_xor_si128(v, e), c);
        _mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) == 0xFFFF
    }
}

#[cfg(not(x86_simd))]
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
    fn class_comparisons_equal_the_byte_at_a_time_ones() {
        // Every byte value against every byte value, under each care bit and exact.
        let plain = |key: &[u8], e: &[u8; CLASS_BYTES], c: &[u8; CLASS_BYTES]| {
            key.iter().zip(e).zip(c).all(|((&b, &e), &c)| {
                let v = if c == CARE_EXACT { b } else { class_code(b) };
                (v ^ e) & c == 0
            })
        };
        let cares = [
            CODE_DIGIT, CODE_ALNUM, CODE_HEX, CODE_UPPER, CODE_ILOU, CARE_EXACT,
        ];
        for &care in &cares {
            for b in 0..=255u8 {
                for o in 0..=255u8 {
                    let key = [b; 16];
                    let want = if care == CARE_EXACT {
                        o
                    } else {
                        class_code(o) & care
                    };
                    let (e, c) = ([want; CLASS_BYTES], [care; CLASS_BYTES]);
                    assert_eq!(
                        same_classes(&key, &e, &c),
                        plain(&key, &e, &c),
                        "{b} {o} {care}"
                    );
                }
            }
        }
        for len in [5usize, 16, 37, 96] {
            for (k, &care) in cares.iter().enumerate() {
                for shift in [0u8, 1, 7, 100] {
                    let key: Vec<u8> = (0..len)
                        .map(|i| (i as u8).wrapping_mul(37) ^ shift)
                        .collect();
                    let other: Vec<u8> = (0..CLASS_BYTES)
                        .map(|i| (i as u8).wrapping_mul(53).wrapping_add(k as u8))
                        .collect();
                    let mut e = [0u8; CLASS_BYTES];
                    let mut c = [0u8; CLASS_BYTES];
                    for i in 0..len {
                        c[i] = care;
                        e[i] = if care == CARE_EXACT {
                            other[i]
                        } else {
                            class_code(other[i]) & care
                        };
                    }
                    assert_eq!(same_classes(&key, &e, &c), plain(&key, &e, &c));
                    // The key's own classes always agree.
                    for i in 0..len {
                        e[i] = if care == CARE_EXACT {
                            key[i]
                        } else {
                            class_code(key[i]) & care
                        };
                    }
                    assert!(same_classes(&key, &e, &c));
                    // One byte changed where it is compared exactly: no longer.
                    if care == CARE_EXACT {
                        let mut k2 = key.clone();
                        k2[len - 1] ^= 1;
                        assert!(!same_classes(&k2, &e, &c));
                    }
                }
            }
        }
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
