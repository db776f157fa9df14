//! Carry-less-multiply folding for CRC16-XMODEM.
//!
//! CRC16-XMODEM of a message `M` is `M·x^16 mod P` with `P = 0x1_1021`. A message is folded
//! 16 bytes at a time into a 128-bit remainder `S ≡ M (mod P)`:
//! appending a block `B` gives `S·x^128 + B ≡ hi·(x^192 mod P) + lo·(x^128 mod P) + B`, two
//! 64×16-bit carry-less products. Two more folds bring `S` down to 64 bits `v ≡ M`, and the CRC
//! is then `v·x^16 mod P`: eight look-ups in the slice tables in software, two more carry-less
//! products (Barrett reduction) with PCLMULQDQ. Inputs whose length is not a
//! multiple of 16 are read as if left-padded with zeros (XMODEM starts from 0, so that is free).
//!
//! The same algorithm exists twice: [`crc16_fold_portable`] multiplies in software and
//! `crc16_fold_pclmul` uses the PCLMULQDQ instruction, picked at run time. Tests prove both
//! equal to the bit-by-bit definition.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use super::crc16::{crc16_table, crc16_u64};

/// `x^n mod P` for the XMODEM polynomial.
const fn xpow_mod(n: u32) -> u64 {
    let mut r: u32 = 1;
    let mut i = 0;
    while i < n {
        r <<= 1;
        if r & 0x1_0000 != 0 {
            r ^= 0x1_1021;
        }
        i += 1;
    }
    r as u64
}

const K64: u64 = xpow_mod(64);
const K128: u64 = xpow_mod(128);
const K192: u64 = xpow_mod(192);
#[cfg(x86_simd)]
const K256: u64 = xpow_mod(256);
#[cfg(x86_simd)]
const K320: u64 = xpow_mod(320);
#[cfg(x86_simd)]
const K384: u64 = xpow_mod(384);
#[cfg(x86_simd)]
const K448: u64 = xpow_mod(448);

/// The Barrett constant `floor(x^80 / P)` without its `x^64` term (the quotient has degree 64).
#[cfg(x86_simd)]
const MU80: u64 = {
    let mut rem: u128 = 1 << 80;
    let mut q: u128 = 0;
    let mut d = 80;
    while d >= 16 {
        if rem >> d & 1 == 1 {
            rem ^= 0x1_1021u128 << (d - 16);
            q |= 1 << (d - 16);
        }
        d -= 1;
    }
    assert!(q >> 64 == 1);
    q as u64
};

/// Software carry-less multiply of a 64-bit value by a constant of at most 16 bits.
#[inline(always)]
fn clmul_small(a: u64, k: u64) -> u128 {
    debug_assert!(k < 1 << 16);
    let mut r = 0u128;
    let mut k = k;
    let mut shift = 0;
    while k != 0 {
        if k & 1 == 1 {
            r ^= (a as u128) << shift;
        }
        k >>= 1;
        shift += 1;
    }
    r
}

/// The first block of a message of `n >= 16` bytes: the `n % 16` leading bytes left-padded
/// with zeros, or the first whole block. Returns the block and the rest of the message.
#[inline(always)]
fn first_block(data: &[u8]) -> ([u8; 16], &[u8]) {
    let r = data.len() % 16;
    let take = if r == 0 { 16 } else { r };
    let mut block = [0u8; 16];
    block[16 - take..].copy_from_slice(&data[..take]);
    (block, &data[take..])
}

/// The folding algorithm with software multiplication: slow, but the same arithmetic as the
/// PCLMULQDQ path, so it proves the algorithm on any CPU.
pub fn crc16_fold_portable(data: &[u8]) -> u16 {
    if data.len() < 16 {
        return crc16_table(data);
    }
    let (first, rest) = first_block(data);
    let mut s = u128::from_be_bytes(first);
    for chunk in rest.chunks_exact(16) {
        let b = u128::from_be_bytes(chunk.try_into().expect("invariant: 16-byte chunk"));
        s = clmul_small((s >> 64) as u64, K192) ^ clmul_small(s as u64, K128) ^ b;
    }
    let t = clmul_small((s >> 64) as u64, K64) ^ (s as u64 as u128);
    let v = (clmul_small((t >> 64) as u64, K64) as u64) ^ (t as u64);
    crc16_u64(v)
}

/// CRC16 of the input by PCLMULQDQ folding, or `None` when this CPU lacks the instructions.
pub fn crc16_clmul(data: &[u8]) -> Option<u16> {
    #[cfg(x86_simd)]
    {
        if has_pclmul() {
            // SAFETY: the required CPU features were detected just above.
            return Some(unsafe { x86::crc16_fold_pclmul(data) });
        }
    }
    let _ = data;
    None
}

#[cfg(x86_simd)]
#[inline(always)]
fn has_pclmul() -> bool {
    std::arch::is_x86_feature_detected!("pclmulqdq")
        && std::arch::is_x86_feature_detected!("sse4.1")
}

/// CRC16 of an input of any length by the fastest available path (PCLMULQDQ folding when the
/// CPU has it, slice-by-16 tables otherwise).
#[inline]
pub(crate) fn crc16_long(data: &[u8]) -> u16 {
    #[cfg(x86_simd)]
    {
        if data.len() >= 16 && has_pclmul() {
            // SAFETY: the required CPU features were detected just above.
            return unsafe { x86::crc16_fold_pclmul(data) };
        }
    }
    crc16_table(data)
}

/// Whether [`crc16_window`] may be called on this CPU.
#[cfg(x86_simd)]
pub(crate) fn window_supported() -> bool {
    has_pclmul()
}

#[cfg(x86_simd)]
pub(crate) use x86::{avx512_supported, crc16_window, crc16_window_x4, crc16_window_x4_avx512};

/// [`super::place_in`] by [`crc16_window`], compiled with its CPU features so that the tag
/// search and the CRC are one call.
///
/// # Safety
/// The CPU must support `pclmulqdq`, `ssse3` and `sse4.1` ([`window_supported`]);
/// `start <= end <= buf.len()`.
#[cfg(x86_simd)]
#[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
pub(crate) unsafe fn place_in_window(buf: &[u8], start: usize, end: usize) -> super::Placement {
    // SAFETY: this function's features and bounds are the window's: every (a, b) passed lies
    // within start..=end.
    super::place_with(buf, start, end, |buf, a, b| unsafe {
        crc16_window(buf, a, b)
    })
}

/// CRC16 of `buf[a..b]`; reads the bytes just before `a` when that is faster (they are part of
/// `buf`, so this is safe), which makes short inputs branch-free.
#[inline]
pub fn crc16_in(buf: &[u8], a: usize, b: usize) -> u16 {
    #[cfg(x86_simd)]
    {
        if has_pclmul() && a <= b && b <= buf.len() {
            // SAFETY: the CPU features were detected just above and a <= b <= len.
            return unsafe { crc16_window(buf, a, b) };
        }
    }
    super::crc16::crc16(&buf[a..b])
}

#[cfg(x86_simd)]
mod x86 {
    use super::{K64, K128, K192, K256, K320, K384, K448, MU80, first_block};
    use crate::slot::crc16::crc16_table;
    use std::arch::x86_64::*;

    /// PCLMULQDQ folding; identical results to [`super::crc16_fold_portable`].
    ///
    /// # Safety
    /// The CPU must support `pclmulqdq`, `ssse3` and `sse4.1`.
    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    pub(super) unsafe fn crc16_fold_pclmul(data: &[u8]) -> u16 {
        if data.len() < 16 {
            return crc16_table(data);
        }
        // Byte i of the result is byte 15-i of the input: turns a little-endian load into the
        // big-endian polynomial order (first byte = highest coefficients).
        let rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let k = _mm_set_epi64x(K192 as i64, K128 as i64);
        let (first, rest) = first_block(data);
        // SAFETY: `first` is 16 readable bytes; loadu has no alignment requirement.
        let mut s = _mm_shuffle_epi8(unsafe { _mm_loadu_si128(first.as_ptr().cast()) }, rev);
        for chunk in rest.chunks_exact(16) {
            // SAFETY: `chunk` is exactly 16 readable bytes.
            let b = _mm_shuffle_epi8(unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) }, rev);
            let hi = _mm_clmulepi64_si128(s, k, 0x11);
            let lo = _mm_clmulepi64_si128(s, k, 0x00);
            s = _mm_xor_si128(_mm_xor_si128(hi, lo), b);
        }
        let k64 = _mm_set_epi64x(0, K64 as i64);
        let t = _mm_xor_si128(_mm_clmulepi64_si128(s, k64, 0x01), _mm_move_epi64(s));
        let u = _mm_xor_si128(_mm_clmulepi64_si128(t, k64, 0x01), t);
        reduce64(u)
    }

    /// The CRC of the 64-bit remainder `v` in the low half of `u`, `v·x^16 mod P`, by Barrett
    /// reduction: the quotient is `floor(v·floor(x^80/P) / x^64)`, exact for `v` of degree below
    /// 64, and the remainder is the low 16 bits of the quotient times `P` (the low 16 bits of
    /// `v·x^16` are zero). Two carry-less products instead of eight table look-ups.
    #[target_feature(enable = "pclmulqdq,sse4.1")]
    #[inline]
    pub(super) fn reduce64(u: __m128i) -> u16 {
        let v = _mm_move_epi64(u);
        let q = _mm_xor_si128(
            _mm_srli_si128(
                _mm_clmulepi64_si128(v, _mm_set_epi64x(0, MU80 as i64), 0x00),
                8,
            ),
            v,
        );
        let r = _mm_clmulepi64_si128(q, _mm_set_epi64x(0, 0x1021), 0x00);
        _mm_cvtsi128_si32(r) as u16
    }

    /// `MASK[k]` is 0xff for k >= 64: a 64-byte window of it starting at `n` keeps the last
    /// `n` bytes of a 64-byte block.
    static MASK: [u8; 128] = {
        let mut m = [0u8; 128];
        let mut i = 64;
        while i < 128 {
            m[i] = 0xff;
            i += 1;
        }
        m
    };

    /// CRC16 of `buf[a..b]` without a byte loop for short inputs: when `b >= 64` and
    /// `b - a <= 64`, the 64 bytes ending at `b` are loaded (the bytes before `a` are in `buf`,
    /// so reading them is safe) and those before `a` masked to zero, which the zero-prefix
    /// property makes harmless. The four blocks are folded side by side, each multiplied by its
    /// own power of `x` (six independent products, one multiply deep instead of three in a
    /// chain); an input of at most 16 bytes is the last block alone. Other inputs take the
    /// general path.
    ///
    /// # Safety
    /// The CPU must support `pclmulqdq`, `ssse3` and `sse4.1`; `a <= b <= buf.len()`.
    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    #[inline]
    pub(crate) unsafe fn crc16_window(buf: &[u8], a: usize, b: usize) -> u16 {
        let n = b - a;
        if b < 64 || n > 64 {
            // SAFETY: same CPU features as this function.
            return unsafe { crc16_fold_pclmul(&buf[a..b]) };
        }
        let rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let win = &buf[b - 64..b];
        let mask = &MASK[n..n + 64];
        let block = |i: usize| {
            // SAFETY: `win` and `mask` have 64 bytes, so bytes 16*i..16*i+16 are in bounds
            // for i < 4.
            let (d, m) = unsafe {
                (
                    _mm_loadu_si128(win.as_ptr().add(16 * i).cast()),
                    _mm_loadu_si128(mask.as_ptr().add(16 * i).cast()),
                )
            };
            _mm_shuffle_epi8(_mm_and_si128(d, m), rev)
        };
        // Block i is worth `B·x^(128·(3-i))`: its high half times x^(128·(3-i)+64), its low
        // half times x^(128·(3-i)), each reduced mod P to at most 16 bits.
        let fold = |i: usize, k: __m128i| {
            let s = block(i);
            _mm_xor_si128(
                _mm_clmulepi64_si128(s, k, 0x11),
                _mm_clmulepi64_si128(s, k, 0x00),
            )
        };
        let s = if n <= 16 {
            // The first three blocks are all masked out.
            block(3)
        } else {
            let k3 = _mm_set_epi64x(K448 as i64, K384 as i64);
            let k2 = _mm_set_epi64x(K320 as i64, K256 as i64);
            let k1 = _mm_set_epi64x(K192 as i64, K128 as i64);
            _mm_xor_si128(
                _mm_xor_si128(fold(0, k3), fold(1, k2)),
                _mm_xor_si128(fold(2, k1), block(3)),
            )
        };
        let k64 = _mm_set_epi64x(0, K64 as i64);
        let t = _mm_xor_si128(_mm_clmulepi64_si128(s, k64, 0x01), _mm_move_epi64(s));
        let u = _mm_xor_si128(_mm_clmulepi64_si128(t, k64, 0x01), t);
        reduce64(u)
    }

    /// The 64-bit tail shared by the four-key CRCs: `s` (128 bits, `≡ M mod P`) down to the CRC.
    #[target_feature(enable = "pclmulqdq,sse4.1")]
    #[inline]
    fn finish(s: __m128i) -> u16 {
        let k64 = _mm_set_epi64x(0, K64 as i64);
        let t = _mm_xor_si128(_mm_clmulepi64_si128(s, k64, 0x01), _mm_move_epi64(s));
        let u = _mm_xor_si128(_mm_clmulepi64_si128(t, k64, 0x01), t);
        reduce64(u)
    }

    /// [`crc16_window`] of four inputs at once, each `buf[a[i]..b[i]]` with
    /// `1 <= b[i] - a[i] <= 64` and `b[i] >= 64`: the four dependency chains of carry-less
    /// products are written side by side, so the core overlaps their latencies.
    ///
    /// # Safety
    /// The CPU must support `pclmulqdq`, `ssse3` and `sse4.1`; `a[i] <= b[i] <= buf.len()`,
    /// `b[i] - a[i] <= 64` and `b[i] >= 64` for every `i`.
    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    #[inline]
    #[allow(clippy::needless_range_loop)] // four lanes indexed side by side
    pub(crate) unsafe fn crc16_window_x4(buf: &[u8], a: [usize; 4], b: [usize; 4]) -> [u16; 4] {
        let rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let k3 = _mm_set_epi64x(K448 as i64, K384 as i64);
        let k2 = _mm_set_epi64x(K320 as i64, K256 as i64);
        let k1 = _mm_set_epi64x(K192 as i64, K128 as i64);
        let mut s = [_mm_setzero_si128(); 4];
        for i in 0..4 {
            let n = b[i] - a[i];
            debug_assert!(n <= 64 && b[i] >= 64 && b[i] <= buf.len());
            let win = &buf[b[i] - 64..b[i]];
            let mask = &MASK[n..n + 64];
            let block = |q: usize| {
                // SAFETY: `win` and `mask` have 64 bytes; q < 4.
                let (d, m) = unsafe {
                    (
                        _mm_loadu_si128(win.as_ptr().add(16 * q).cast()),
                        _mm_loadu_si128(mask.as_ptr().add(16 * q).cast()),
                    )
                };
                _mm_shuffle_epi8(_mm_and_si128(d, m), rev)
            };
            let fold = |q: usize, k: __m128i| {
                let v = block(q);
                _mm_xor_si128(
                    _mm_clmulepi64_si128(v, k, 0x11),
                    _mm_clmulepi64_si128(v, k, 0x00),
                )
            };
            s[i] = _mm_xor_si128(
                _mm_xor_si128(fold(0, k3), fold(1, k2)),
                _mm_xor_si128(fold(2, k1), block(3)),
            );
        }
        let mut out = [0u16; 4];
        for i in 0..4 {
            out[i] = finish(s[i]);
        }
        out
    }

    /// Whether [`crc16_window_x4_avx512`] may be called on this CPU.
    pub(crate) fn avx512_supported() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("vpclmulqdq")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
            && std::arch::is_x86_feature_detected!("sse4.1")
            && std::arch::is_x86_feature_detected!("ssse3")
    }

    /// The CRC16 of four inputs `[p[i] - n[i], p[i])` with `1 <= n[i] <= 64` by AVX-512: one
    /// masked 64-byte load each (the bytes masked off are never read, so the input may start
    /// anywhere), the four 16-byte blocks of a load folded by one 512-bit carry-less multiply
    /// (the last block by `x^64 mod P` and 1, which leaves it unchanged mod `P`).
    ///
    /// # Safety
    /// The CPU must support AVX-512 F/BW/VL, VPCLMULQDQ, PCLMULQDQ, SSSE3 and SSE4.1
    /// ([`avx512_supported`]); each `[p[i] - n[i], p[i])` must be readable.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,vpclmulqdq,pclmulqdq,ssse3,sse4.1")]
    #[inline]
    #[allow(clippy::needless_range_loop)] // four lanes indexed side by side
    pub(crate) unsafe fn crc16_window_x4_avx512(p: [*const u8; 4], n: [usize; 4]) -> [u16; 4] {
        let rev = _mm512_broadcast_i32x4(_mm_set_epi8(
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        ));
        let kk = _mm512_set_epi64(
            K64 as i64,
            1,
            K192 as i64,
            K128 as i64,
            K320 as i64,
            K256 as i64,
            K448 as i64,
            K384 as i64,
        );
        let mut z = [_mm512_setzero_si512(); 4];
        for i in 0..4 {
            debug_assert!((1..=64).contains(&n[i]));
            let mask = !0u64 << (64 - n[i]);
            // SAFETY: the bytes the mask keeps are the input, readable by the caller's
            // contract; masked-off bytes are not accessed (AVX-512 masked loads do not fault
            // on them).
            z[i] = unsafe { _mm512_maskz_loadu_epi8(mask, p[i].wrapping_sub(64).cast()) };
        }
        for v in &mut z {
            let r = _mm512_shuffle_epi8(*v, rev);
            *v = _mm512_xor_si512(
                _mm512_clmulepi64_epi128::<0x11>(r, kk),
                _mm512_clmulepi64_epi128::<0x00>(r, kk),
            );
        }
        let mut out = [0u16; 4];
        for i in 0..4 {
            let y = _mm256_xor_si256(
                _mm512_castsi512_si256(z[i]),
                _mm512_extracti64x4_epi64::<1>(z[i]),
            );
            let s = _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256::<1>(y));
            out[i] = finish(s);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot::crc16::crc16_bitwise;

    #[test]
    fn constants_are_powers_of_x() {
        // x^16 mod P = P without its top bit.
        assert_eq!(xpow_mod(16), 0x1021);
        assert_eq!(xpow_mod(15), 0x8000);
    }

    #[test]
    fn fold_paths_equal_bitwise_for_many_lengths() {
        let data: Vec<u8> = (0..1100u32)
            .map(|i| (i.wrapping_mul(7919) >> 3) as u8)
            .collect();
        for n in (0..=200).chain([255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1100]) {
            let want = crc16_bitwise(&data[..n]);
            assert_eq!(crc16_fold_portable(&data[..n]), want, "portable len {n}");
            if let Some(got) = crc16_clmul(&data[..n]) {
                assert_eq!(got, want, "pclmul len {n}");
            }
            assert_eq!(crc16_long(&data[..n]), want, "dispatch len {n}");
        }
    }

    #[cfg(x86_simd)]
    #[test]
    fn barrett_reduction_equals_the_tables() {
        if !window_supported() {
            return;
        }
        let mut v = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..200_000u64 {
            v = v
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Also values with few bits, high or low.
            let x = match i % 3 {
                0 => v,
                1 => v >> (i % 64),
                _ => v << (i % 64),
            };
            // SAFETY: support was checked above.
            let got =
                unsafe { x86::reduce64(std::arch::x86_64::_mm_set_epi64x(i as i64, x as i64)) };
            assert_eq!(got, crate::slot::crc16::crc16_u64(x), "{x:#x}");
        }
    }

    #[cfg(x86_simd)]
    #[test]
    fn window_path_equals_bitwise() {
        if !window_supported() {
            return;
        }
        let data: Vec<u8> = (0..400u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
            .collect();
        for b in 0..=data.len() {
            for a in (0..=b).rev().take(80) {
                // SAFETY: support was checked above; a <= b <= len.
                let got = unsafe { crc16_window(&data, a, b) };
                assert_eq!(got, crc16_bitwise(&data[a..b]), "a={a} b={b}");
            }
        }
    }

    #[test]
    #[cfg(x86_simd)]
    fn four_key_paths_equal_bitwise() {
        if !window_supported() {
            return;
        }
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2246822519) >> 9) as u8)
            .collect();
        assert_eq!(
            crc16_bitwise(b"123456789"),
            0x31C3,
            "the reference itself is XMODEM"
        );
        for n0 in 1..=64usize {
            // Four ranges of different lengths and ends; for even lengths the first starts at
            // the buffer's first byte (the AVX-512 path only; the other needs 64 bytes).
            let n = [n0, 65 - n0, (n0 * 7) % 64 + 1, (n0 * 13) % 64 + 1];
            let first_end = if n0 % 2 == 0 { n[0] } else { 64 + n0 };
            let b = [first_end, 64 + n0, 150 + n0 % 5, 299 - n0];
            let a: [usize; 4] = std::array::from_fn(|i| b[i] - n[i]);
            let want: [u16; 4] = std::array::from_fn(|i| crc16_bitwise(&data[a[i]..b[i]]));
            if b.iter().all(|&b| b >= 64) {
                // SAFETY: support checked; ranges of 1 to 64 bytes ending at 64 or later.
                assert_eq!(unsafe { crc16_window_x4(&data, a, b) }, want, "n={n:?}");
            }
            if avx512_supported() {
                let p = std::array::from_fn(|i| data.as_ptr().wrapping_add(b[i]));
                // SAFETY: support checked; each range lies in `data`.
                let got = unsafe { crc16_window_x4_avx512(p, n) };
                assert_eq!(got, want, "n={n:?}");
            }
        }
    }
}
