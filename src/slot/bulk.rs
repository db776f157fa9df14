//! The bulk slot path: many newline-separated keys in, a 16384-slot histogram out.
//!
//! This is the inner loop of `analyze` and `slot --counts` on raw dumps. For short
//! keys, finding line ends and braces costs more than the CRC, so the fast path is a *fused
//! scan*: one SIMD pass marks every `\n`, `{` and `}` of a buffer in three bitmaps, and the
//! per-key work then is bit arithmetic plus one CRC, with no per-key `memchr` calls. A portable
//! scan (memchr per line) gives identical results and is what non-AVX2 CPUs use; tests compare
//! the two on edge cases.
//!
//! Line rules (raw format): lines end at `\n`; one trailing `\r` is stripped; blank
//! lines are skipped; a last line without a final newline still counts.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use super::{SLOT_COUNT, TagShape, crc16};
use memchr::memchr;

/// What a bulk pass saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LineCounts {
    /// Lines seen (including blank ones).
    pub lines: u64,
    /// Keys counted (non-blank lines).
    pub keys: u64,
}

impl LineCounts {
    /// Adds another pass's counts to these.
    pub fn add(&mut self, other: LineCounts) {
        self.lines += other.lines;
        self.keys += other.keys;
    }
}

/// Size of the pieces the SIMD pass works on.
#[cfg(x86_simd)]
const PIECE: usize = 64 << 10;

/// A line longer than the limit, skipped by a bulk pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongLine {
    /// 1-based line number within the buffer passed in.
    pub line: u64,
    /// Its length in bytes (without the line end).
    pub bytes: u64,
}

/// One key found by [`BulkScanner::scan_keys`], as positions in the buffer handed to the
/// callback with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpan {
    /// First byte of the key.
    pub start: usize,
    /// One past its last byte (the line end and one `\r` before it excluded).
    pub end: usize,
    /// First byte Redis hashes (inside the hash tag when the key has one).
    pub hash_start: usize,
    /// One past the last byte Redis hashes.
    pub hash_end: usize,
    /// The key's slot.
    pub slot: u16,
}

impl KeySpan {
    /// Whether Redis hashes a non-empty hash tag rather than the whole key.
    #[inline]
    pub fn tagged(&self) -> bool {
        self.hash_start != self.start || self.hash_end != self.end
    }
}

/// Keys handed to a [`BulkScanner::scan_keys`] callback at once (portable path).
const SPAN_BATCH: usize = 4096;

/// A reusable scanner; keeps its bitmaps between calls so a stream of chunks allocates once.
#[derive(Debug, Default)]
pub struct BulkScanner {
    #[cfg(x86_simd)]
    newlines: Vec<u64>,
    #[cfg(x86_simd)]
    opens: Vec<u64>,
    #[cfg(x86_simd)]
    closes: Vec<u64>,
    spans: Vec<KeySpan>,
    #[cfg(x86_simd)]
    force_portable: bool,
}

impl BulkScanner {
    /// A scanner that uses the fastest path this CPU supports.
    pub fn new() -> Self {
        Self::default()
    }

    /// A scanner that never uses SIMD (for tests and benchmarks).
    pub fn portable() -> Self {
        BulkScanner {
            #[cfg(x86_simd)]
            force_portable: true,
            ..Self::default()
        }
    }

    /// Adds one to `hist[slot]` for every key in `buf` (raw lines) and returns the counts.
    /// `hist` must have [`SLOT_COUNT`] entries.
    pub fn count_raw_lines(&mut self, buf: &[u8], hist: &mut [u64]) -> LineCounts {
        self.count_raw_lines_limited(buf, hist, usize::MAX, &mut Vec::new())
    }

    /// Like [`BulkScanner::count_raw_lines`], but lines longer than `max_line` bytes (without
    /// the `\n`) are not counted as keys; they are appended to `long` instead.
    pub fn count_raw_lines_limited(
        &mut self,
        buf: &[u8],
        hist: &mut [u64],
        max_line: usize,
        long: &mut Vec<LongLine>,
    ) -> LineCounts {
        assert_eq!(hist.len(), SLOT_COUNT, "histogram must have 16384 entries");
        #[cfg(x86_simd)]
        {
            if self.simd() {
                return self.simd_scan(buf, max_line, long, &mut Histogram(hist));
            }
        }
        portable_scan::<true>(buf, max_line, long, |s| hist[s.slot as usize] += 1)
    }

    /// Finds every key of `buf` (raw lines) with the bytes Redis hashes and its slot, and hands
    /// them to `f` in batches, each with the buffer its positions refer to (a piece of `buf`).
    /// Lines longer than `max_line` bytes are not keys; they are appended to `long`.
    pub fn scan_keys(
        &mut self,
        buf: &[u8],
        max_line: usize,
        long: &mut Vec<LongLine>,
        f: impl FnMut(&[u8], &[KeySpan]),
    ) -> LineCounts {
        self.keys_of::<true>(buf, max_line, long, f)
    }

    /// [`BulkScanner::scan_keys`] for a caller that needs only where keys are: the spans'
    /// hash range is the whole key and their slot is 0 (no tag is looked for, no CRC taken).
    pub fn split_keys(
        &mut self,
        buf: &[u8],
        max_line: usize,
        long: &mut Vec<LongLine>,
        f: impl FnMut(&[u8], &[KeySpan]),
    ) -> LineCounts {
        self.keys_of::<false>(buf, max_line, long, f)
    }

    /// The keys of `buf`, hashed (tag and slot) when `HASHED`.
    fn keys_of<const HASHED: bool>(
        &mut self,
        buf: &[u8],
        max_line: usize,
        long: &mut Vec<LongLine>,
        mut f: impl FnMut(&[u8], &[KeySpan]),
    ) -> LineCounts {
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        #[cfg(x86_simd)]
        {
            if self.simd() {
                let mut sink = Spans {
                    spans: &mut spans,
                    f: &mut f,
                };
                let counts = if HASHED {
                    self.simd_scan(buf, max_line, long, &mut sink)
                } else {
                    self.pieces(buf, long, |sc, piece, piece_long| {
                        // SAFETY: `simd()` said AVX2 is present.
                        unsafe { newlines_avx2(piece, &mut sc.newlines) };
                        let c = scan_with_masks::<false>(
                            piece,
                            &sc.newlines,
                            &[],
                            &[],
                            (max_line, piece_long),
                            |start, end, a, b, crc| sink.key(start, end, a, b, crc),
                            |_, _| 0,
                        );
                        sink.piece(piece);
                        c
                    })
                };
                self.spans = spans;
                return counts;
            }
        }
        let counts = portable_scan::<HASHED>(buf, max_line, long, |s| {
            spans.push(*s);
            if spans.len() == SPAN_BATCH {
                f(buf, &spans);
                spans.clear();
            }
        });
        if !spans.is_empty() {
            f(buf, &spans);
        }
        self.spans = spans;
        counts
    }

    /// The fused SIMD scan, in pieces of ~64 KiB, telling `sink` of every key and piece.
    #[cfg(x86_simd)]
    fn simd_scan(
        &mut self,
        buf: &[u8],
        max_line: usize,
        long: &mut Vec<LongLine>,
        sink: &mut impl PieceSink,
    ) -> LineCounts {
        self.pieces(buf, long, |sc, piece, piece_long| {
            // SAFETY: the callers checked `simd()`: AVX2, PCLMULQDQ and SSE4.1 are present.
            let c = unsafe {
                build_masks_avx2(piece, &mut sc.newlines, &mut sc.opens, &mut sc.closes);
                scan_x86(
                    piece,
                    &sc.newlines,
                    &sc.opens,
                    &sc.closes,
                    (max_line, piece_long),
                    |start, end, hash_start, hash_end, crc| {
                        sink.key(start, end, hash_start, hash_end, crc)
                    },
                )
            };
            sink.piece(piece);
            c
        })
    }

    /// Whether the SIMD scan may run on this CPU.
    #[cfg(x86_simd)]
    fn simd(&self) -> bool {
        !self.force_portable
            && std::arch::is_x86_feature_detected!("avx2")
            && super::clmul::window_supported()
    }

    /// Runs `scan` over pieces of ~64 KiB of `buf` that end on a line end (so the bitmaps stay
    /// in L1 and the bytes in L2 between the mask pass and the key pass), renumbering the long
    /// lines it reports.
    #[cfg(x86_simd)]
    fn pieces(
        &mut self,
        buf: &[u8],
        long: &mut Vec<LongLine>,
        mut scan: impl FnMut(&mut Self, &[u8], &mut Vec<LongLine>) -> LineCounts,
    ) -> LineCounts {
        let mut total = LineCounts::default();
        let mut rest = buf;
        let mut piece_long = Vec::new();
        while !rest.is_empty() {
            let cut = if rest.len() <= PIECE {
                rest.len()
            } else {
                match memchr::memrchr(b'\n', &rest[..PIECE]) {
                    Some(i) => i + 1,
                    None => memchr(b'\n', &rest[PIECE..]).map_or(rest.len(), |i| PIECE + i + 1),
                }
            };
            let (piece, tail) = rest.split_at(cut);
            let c = scan(self, piece, &mut piece_long);
            for l in piece_long.drain(..) {
                long.push(LongLine {
                    line: l.line + total.lines,
                    bytes: l.bytes,
                });
            }
            total.add(c);
            rest = tail;
        }
        total
    }
}

#[cfg(x86_simd)]
/// What the fused scan does with each key (positions in its piece, the CRC of the hashed
/// bytes) and with each finished piece.
trait PieceSink {
    fn key(&mut self, start: usize, end: usize, hash_start: usize, hash_end: usize, crc: u16);
    fn piece(&mut self, piece: &[u8]);
}

#[cfg(x86_simd)]
/// Counts keys per slot.
struct Histogram<'a>(&'a mut [u64]);

#[cfg(x86_simd)]
impl PieceSink for Histogram<'_> {
    #[inline(always)]
    fn key(&mut self, _: usize, _: usize, _: usize, _: usize, crc: u16) {
        self.0[(crc & 0x3FFF) as usize] += 1;
    }
    fn piece(&mut self, _: &[u8]) {}
}

#[cfg(x86_simd)]
/// Collects a piece's keys and hands them to `f` when the piece is done.
struct Spans<'a, F> {
    spans: &'a mut Vec<KeySpan>,
    f: &'a mut F,
}

#[cfg(x86_simd)]
impl<F: FnMut(&[u8], &[KeySpan])> PieceSink for Spans<'_, F> {
    #[inline(always)]
    fn key(&mut self, start: usize, end: usize, hash_start: usize, hash_end: usize, crc: u16) {
        self.spans.push(KeySpan {
            start,
            end,
            hash_start,
            hash_end,
            slot: crc & 0x3FFF,
        });
    }
    fn piece(&mut self, piece: &[u8]) {
        (self.f)(piece, self.spans);
        self.spans.clear();
    }
}

/// Portable bulk pass: memchr for line ends and braces.
pub fn count_raw_lines_portable(buf: &[u8], hist: &mut [u64]) -> LineCounts {
    BulkScanner::portable().count_raw_lines(buf, hist)
}

/// Counts the line `buf[start..end]` (without its `\n`) and says where its key ends (a
/// trailing `\r` dropped), or `None` for an empty line or one longer than `max_line` (listed
/// in `long`). Every key it passes is counted.
#[inline(always)]
fn key_end(
    buf: &[u8],
    start: usize,
    mut end: usize,
    max_line: usize,
    counts: &mut LineCounts,
    long: &mut Vec<LongLine>,
) -> Option<usize> {
    counts.lines += 1;
    let too_long = end - start > max_line;
    if end > start && buf[end - 1] == b'\r' {
        end -= 1;
    }
    if too_long {
        long.push(LongLine {
            line: counts.lines,
            bytes: (end - start) as u64,
        });
        return None;
    }
    if end == start {
        return None;
    }
    counts.keys += 1;
    Some(end)
}

/// The memchr scan: the reference for the SIMD scan, and what CPUs without it use. Without
/// `HASHED`, spans hash the whole key and their slot is 0.
fn portable_scan<const HASHED: bool>(
    buf: &[u8],
    max_line: usize,
    long: &mut Vec<LongLine>,
    mut emit: impl FnMut(&KeySpan),
) -> LineCounts {
    let mut counts = LineCounts::default();
    let mut start = 0;
    while start < buf.len() {
        let nl = memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        if let Some(end) = key_end(buf, start, nl, max_line, &mut counts, long) {
            let (hash_start, hash_end) = match HASHED {
                true => match TagShape::of(&buf[start..end]) {
                    TagShape::Tagged { open, close } => (start + open + 1, start + close),
                    _ => (start, end),
                },
                false => (start, end),
            };
            emit(&KeySpan {
                start,
                end,
                hash_start,
                hash_end,
                slot: match HASHED {
                    true => crc16(&buf[hash_start..hash_end]) & 0x3FFF,
                    false => 0,
                },
            });
        }
        start = nl + 1;
    }
    counts
}

/// First set bit at or after `from` and before `to` in a bitmap.
#[cfg(x86_simd)]
#[inline(always)]
fn find_next(bitmap: &[u64], from: usize, to: usize) -> Option<usize> {
    if from >= to {
        return None;
    }
    let mut word = from >> 6;
    let mut bits = bitmap[word] & (!0u64 << (from & 63));
    loop {
        if bits != 0 {
            let pos = (word << 6) + bits.trailing_zeros() as usize;
            return (pos < to).then_some(pos);
        }
        word += 1;
        if word << 6 >= to {
            return None;
        }
        bits = bitmap[word];
    }
}

/// The mask-driven scan with the branch-free windowed CRC, compiled for the x86 features.
///
/// # Safety
/// The CPU must support AVX2, PCLMULQDQ, SSSE3 and SSE4.1.
#[cfg(x86_simd)]
#[target_feature(enable = "avx2,pclmulqdq,ssse3,sse4.1")]
unsafe fn scan_x86(
    buf: &[u8],
    newlines: &[u64],
    opens: &[u64],
    closes: &[u64],
    limit: (usize, &mut Vec<LongLine>),
    emit: impl FnMut(usize, usize, usize, usize, u16),
) -> LineCounts {
    scan_with_masks::<true>(buf, newlines, opens, closes, limit, emit, |a, b| {
        // SAFETY: the caller guarantees the CPU features; the scan passes a <= b <= len.
        unsafe { super::clmul::crc16_window(buf, a, b) }
    })
}

/// The keys of `buf` by its line-end bitmap; with `HASHED`, each with its hash tag (by the
/// brace bitmaps) and `crc_of` its hashed bytes, else with the whole key as hash range.
#[cfg(x86_simd)]
#[inline(always)]
fn scan_with_masks<const HASHED: bool>(
    buf: &[u8],
    newlines: &[u64],
    opens: &[u64],
    closes: &[u64],
    (max_line, long): (usize, &mut Vec<LongLine>),
    mut emit: impl FnMut(usize, usize, usize, usize, u16),
    crc_of: impl Fn(usize, usize) -> u16,
) -> LineCounts {
    let mut counts = LineCounts::default();
    let mut start = 0usize;
    let mut on_line = |s: usize, e: usize, counts: &mut LineCounts| {
        let Some(e) = key_end(buf, s, e, max_line, counts, long) else {
            return;
        };
        if !HASHED {
            emit(s, e, s, e, 0);
            return;
        }
        let (a, b) = match find_next(opens, s, e) {
            Some(o) => match find_next(closes, o + 1, e) {
                Some(c) if c > o + 1 => (o + 1, c),
                _ => (s, e),
            },
            None => (s, e),
        };
        emit(s, e, a, b, crc_of(a, b));
    };
    for (w, &word) in newlines.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let pos = (w << 6) + bits.trailing_zeros() as usize;
            on_line(start, pos, &mut counts);
            start = pos + 1;
            bits &= bits - 1;
        }
    }
    if start < buf.len() {
        on_line(start, buf.len(), &mut counts);
    }
    counts
}

/// Fills one bitmap word per 64 input bytes for each of `\n`, `{`, `}`.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(x86_simd)]
#[target_feature(enable = "avx2")]
unsafe fn build_masks_avx2(buf: &[u8], nl: &mut Vec<u64>, op: &mut Vec<u64>, cl: &mut Vec<u64>) {
    use std::arch::x86_64::*;
    let words = buf.len().div_ceil(64);
    nl.clear();
    op.clear();
    cl.clear();
    nl.reserve(words);
    op.reserve(words);
    cl.reserve(words);
    let vn = _mm256_set1_epi8(b'\n' as i8);
    let vo = _mm256_set1_epi8(b'{' as i8);
    let vc = _mm256_set1_epi8(b'}' as i8);
    let mask_of = |block: &[u8]| {
        debug_assert_eq!(block.len(), 64);
        // SAFETY: `block` has 64 readable bytes; loadu needs no alignment.
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(block.as_ptr().cast()),
                _mm256_loadu_si256(block.as_ptr().add(32).cast()),
            )
        };
        let m = |v: __m256i| {
            let lo = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, v)) as u32 as u64;
            let hi = _mm256_movemask_epi8(_mm256_cmpeq_epi8(b, v)) as u32 as u64;
            lo | (hi << 32)
        };
        nl.push(m(vn));
        op.push(m(vo));
        cl.push(m(vc));
    };
    // Zero padding matches none of the three bytes.
    each_block(buf, mask_of);
}

/// Calls `f` with each 64-byte block of `buf`, the last one padded with zeros.
#[cfg(x86_simd)]
#[inline(always)]
fn each_block(buf: &[u8], mut f: impl FnMut(&[u8])) {
    let mut chunks = buf.chunks_exact(64);
    for block in &mut chunks {
        f(block);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut last = [0u8; 64];
        last[..tail.len()].copy_from_slice(tail);
        f(&last);
    }
}

/// Fills one bitmap word per 64 input bytes of `\n`.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(x86_simd)]
#[target_feature(enable = "avx2")]
unsafe fn newlines_avx2(buf: &[u8], nl: &mut Vec<u64>) {
    use std::arch::x86_64::*;
    nl.clear();
    nl.reserve(buf.len().div_ceil(64));
    let vn = _mm256_set1_epi8(b'\n' as i8);
    each_block(buf, |block: &[u8]| {
        debug_assert_eq!(block.len(), 64);
        // SAFETY: `block` has 64 readable bytes; loadu needs no alignment.
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(block.as_ptr().cast()),
                _mm256_loadu_si256(block.as_ptr().add(32).cast()),
            )
        };
        let lo = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, vn)) as u32 as u64;
        let hi = _mm256_movemask_epi8(_mm256_cmpeq_epi8(b, vn)) as u32 as u64;
        nl.push(lo | (hi << 32));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot::key_slot;

    fn both(buf: &[u8]) -> (Vec<u64>, LineCounts) {
        let mut h1 = vec![0u64; SLOT_COUNT];
        let mut h2 = vec![0u64; SLOT_COUNT];
        let c1 = BulkScanner::new().count_raw_lines(buf, &mut h1);
        let c2 = BulkScanner::portable().count_raw_lines(buf, &mut h2);
        assert_eq!(
            c1,
            c2,
            "counts differ for {:?}",
            String::from_utf8_lossy(buf)
        );
        assert_eq!(
            h1,
            h2,
            "histograms differ for {:?}",
            String::from_utf8_lossy(buf)
        );
        (h1, c1)
    }

    #[test]
    fn edge_cases_agree() {
        let long_key = "k{".to_string() + &"x".repeat(200) + "}\n";
        let cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"\n".to_vec(),
            b"a".to_vec(),
            b"a\nb".to_vec(),
            b"a\r\nb\r\n".to_vec(),
            b"\r\n\r\n".to_vec(),
            b"foo{bar}\nfoo{}{bar}\n{}\n{{}}\nx{\n}{x}\n".to_vec(),
            b"{a\n}b\n".to_vec(),
            long_key.repeat(5).into_bytes(),
            (0..200)
                .map(|i| format!("user:{i}:{{t{}}}\n", i % 7))
                .collect::<String>()
                .into_bytes(),
        ];
        for c in cases {
            both(&c);
        }
    }

    #[test]
    fn counts_match_key_slot() {
        let (h, c) = both(b"foo{bar}\r\nhello\n\nsomekey");
        assert_eq!(c, LineCounts { lines: 4, keys: 3 });
        assert_eq!(h[key_slot(b"bar") as usize], 1);
        assert_eq!(h[866], 1);
        assert_eq!(h[11058], 1);
    }

    #[test]
    fn long_lines_are_skipped_by_both_paths() {
        let buf = b"short\nlooooooong\r\nok\n";
        for mut sc in [BulkScanner::new(), BulkScanner::portable()] {
            let mut h = vec![0u64; SLOT_COUNT];
            let mut long = Vec::new();
            let c = sc.count_raw_lines_limited(buf, &mut h, 6, &mut long);
            assert_eq!(c, LineCounts { lines: 3, keys: 2 });
            assert_eq!(long, vec![LongLine { line: 2, bytes: 10 }]);
        }
    }

    fn spans(sc: &mut BulkScanner, buf: &[u8], max_line: usize) -> Vec<(Vec<u8>, Vec<u8>, u16)> {
        let mut out = Vec::new();
        let mut long = Vec::new();
        sc.scan_keys(buf, max_line, &mut long, |piece, spans| {
            for s in spans {
                let hashed = piece[s.hash_start..s.hash_end].to_vec();
                assert_eq!(s.tagged(), hashed != piece[s.start..s.end]);
                out.push((piece[s.start..s.end].to_vec(), hashed, s.slot));
            }
        });
        out
    }

    #[test]
    fn key_spans_agree_with_the_slot_rule() {
        for buf in [
            &b""[..],
            b"a",
            b"a\n",
            b"\n\nb",
            b"x\r\ny\nzz",
            b"a{b}c\n{}x\n{{}}\n}{y}\r\n",
        ] {
            let mut big = buf.to_vec();
            big.extend(std::iter::repeat_n(b'q', 70));
            big.extend_from_slice(buf);
            let many: Vec<u8> = (0..30_000)
                .flat_map(|i| format!("k:{i}:{{t{}}}\n", i % 11).into_bytes())
                .chain(big.iter().copied())
                .collect();
            for data in [buf, &big[..], &many[..]] {
                let a = spans(&mut BulkScanner::new(), data, usize::MAX);
                let b = spans(&mut BulkScanner::portable(), data, usize::MAX);
                assert_eq!(a, b);
                let keys: Vec<&[u8]> = data
                    .split(|&c| c == b'\n')
                    .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
                    .filter(|l| !l.is_empty())
                    .collect();
                assert_eq!(a.len(), keys.len());
                for ((k, _, slot), want) in a.iter().zip(keys) {
                    assert_eq!(k.as_slice(), want);
                    assert_eq!(*slot, key_slot(want));
                }
            }
        }
    }

    #[test]
    fn split_keys_finds_the_keys_scan_keys_finds() {
        let many: Vec<u8> = (0..30_000)
            .flat_map(|i| match i % 5 {
                0 => format!("k:{i}:{{t{}}}\r\n", i % 11).into_bytes(),
                1 => b"\n".to_vec(),
                2 => "x"
                    .repeat(i % 97)
                    .into_bytes()
                    .into_iter()
                    .chain(*b"\n")
                    .collect(),
                _ => format!("{{{i}}}\n").into_bytes(),
            })
            .collect();
        for data in [&b""[..], b"a", b"\r\n\nb\r", b"a{b}\n\n{}\n", &many[..]] {
            for max_line in [usize::MAX, 40] {
                for mut sc in [BulkScanner::new(), BulkScanner::portable()] {
                    let (mut hashed, mut split) = (Vec::new(), Vec::new());
                    let (mut long_h, mut long_s) = (Vec::new(), Vec::new());
                    let ch = sc.scan_keys(data, max_line, &mut long_h, |piece, spans| {
                        hashed.extend(spans.iter().map(|s| piece[s.start..s.end].to_vec()))
                    });
                    let cs = sc.split_keys(data, max_line, &mut long_s, |piece, spans| {
                        for s in spans {
                            assert_eq!((s.hash_start, s.hash_end, s.slot), (s.start, s.end, 0));
                            split.push(piece[s.start..s.end].to_vec());
                        }
                    });
                    assert_eq!((ch, &long_h, &hashed), (cs, &long_s, &split));
                }
            }
        }
    }

    #[test]
    fn braces_across_64_byte_words() {
        for pad in 0..130 {
            let mut s = "p".repeat(pad);
            s.push_str("{tag}rest\n");
            s.push_str(&"q".repeat(pad));
            s.push_str("{x\n}y{\n");
            both(s.as_bytes());
        }
    }
}
