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

/// The code path a [`BulkScanner`] takes; every path gives identical results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdPath {
    /// memchr per line and a table CRC: any CPU.
    Portable,
    /// The fused scan with AVX2 compares and four 128-bit carry-less CRCs side by side.
    Avx2,
    /// The fused scan with AVX-512 compares, and four CRCs by 512-bit carry-less multiplies
    /// from masked loads.
    Avx512,
}

/// The path [`SimdPath::limit`] set, if any.
static LIMIT: std::sync::OnceLock<SimdPath> = std::sync::OnceLock::new();

impl SimdPath {
    /// The fastest path this CPU supports, lowered by [`SimdPath::limit`] when the program
    /// set one (for comparisons); it never rises above what the CPU has.
    pub fn detect() -> SimdPath {
        let best = SimdPath::best();
        match LIMIT.get() {
            Some(SimdPath::Portable) => SimdPath::Portable,
            Some(SimdPath::Avx2) if best == SimdPath::Avx512 => SimdPath::Avx2,
            _ => best,
        }
    }

    /// Keeps every later [`SimdPath::detect`] at or below `path` (the binary reads it from
    /// `KEYPLAN_SIMD` at start); the first call wins.
    pub fn limit(path: SimdPath) {
        let _ = LIMIT.set(path);
    }

    /// The fastest path the CPU supports.
    fn best() -> SimdPath {
        #[cfg(x86_simd)]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("bmi1")
                && std::arch::is_x86_feature_detected!("bmi2")
                && std::arch::is_x86_feature_detected!("popcnt")
                && std::arch::is_x86_feature_detected!("lzcnt")
                && super::clmul::window_supported()
            {
                if super::clmul::avx512_supported() {
                    return SimdPath::Avx512;
                }
                return SimdPath::Avx2;
            }
        }
        SimdPath::Portable
    }

    /// `path`, or the best this CPU supports below it.
    pub fn at_most(path: SimdPath) -> SimdPath {
        let best = SimdPath::best();
        match (path, best) {
            (SimdPath::Portable, _) | (_, SimdPath::Portable) => SimdPath::Portable,
            (SimdPath::Avx512, SimdPath::Avx512) => SimdPath::Avx512,
            _ => SimdPath::Avx2,
        }
    }

    /// Its name: `avx512`, `avx2` or `portable`.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Portable => "portable",
            SimdPath::Avx2 => "avx2",
            SimdPath::Avx512 => "avx512",
        }
    }
}

impl Default for SimdPath {
    fn default() -> Self {
        SimdPath::detect()
    }
}

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
    /// Line-end offsets of the piece being scanned.
    #[cfg(x86_simd)]
    ends: Vec<u32>,
    path: SimdPath,
}

impl BulkScanner {
    /// A scanner that uses the fastest path this CPU supports.
    pub fn new() -> Self {
        Self::default()
    }

    /// A scanner that never uses SIMD (for tests and benchmarks).
    pub fn portable() -> Self {
        Self::with_path(SimdPath::Portable)
    }

    /// A scanner on `path`, or the best path this CPU supports below it (for tests and
    /// benchmarks).
    pub fn with_path(path: SimdPath) -> Self {
        BulkScanner {
            path: SimdPath::at_most(path),
            ..Self::default()
        }
    }

    /// The path this scanner takes.
    pub fn path(&self) -> SimdPath {
        self.path
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
                let hist: &mut [u64; SLOT_COUNT] = hist
                    .try_into()
                    .expect("invariant: the length was checked above");
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
        let avx512 = self.path == SimdPath::Avx512;
        self.pieces(buf, long, |sc, piece, piece_long| {
            let c = if piece.len() > MAX_FUSED_PIECE {
                // A piece this long holds a line far over the usual: the bitmap scan, which
                // needs no offset table.
                // SAFETY: the callers checked `simd()`: AVX2, PCLMULQDQ and SSE4.1 are present.
                unsafe {
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
                }
            } else if avx512 {
                // SAFETY: the path is AVX-512 only where `avx512_supported()` said so.
                unsafe { fused_avx512(piece, &mut sc.ends, (max_line, piece_long), sink) }
            } else {
                // SAFETY: the callers checked `simd()`: AVX2, PCLMULQDQ and SSE4.1 are present.
                unsafe {
                    fused_avx2(
                        piece,
                        &mut sc.ends,
                        &mut sc.opens,
                        &mut sc.closes,
                        (max_line, piece_long),
                        sink,
                    )
                }
            };
            sink.piece(piece);
            c
        })
    }

    /// Whether the SIMD scan may run on this CPU.
    #[cfg(x86_simd)]
    fn simd(&self) -> bool {
        self.path != SimdPath::Portable
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
struct Histogram<'a>(&'a mut [u64; SLOT_COUNT]);

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

/// The longest piece the offset-table scan takes (offsets are `u32`, and the table's room is
/// the piece's length); longer ones (a line of megabytes) take the bitmap scan.
#[cfg(x86_simd)]
const MAX_FUSED_PIECE: usize = 1 << 20;

/// Bits `from..from + 64` of a bitmap that has one zero word past the last it covers.
#[cfg(x86_simd)]
#[inline(always)]
fn bits_at(bitmap: &[u64], from: usize) -> u64 {
    let w = from >> 6;
    let pair = u128::from(bitmap[w]) | (u128::from(bitmap[w + 1]) << 64);
    (pair >> (from & 63)) as u64
}

/// The hash range of a key from where its first `{` (`open`) and its `}`s (`closes`, a bit per
/// byte of the key) are, both relative to the key's first byte, `len` bytes long: the first
/// `}` after `open` with at least one byte between them; else the whole key. Branch-free.
#[cfg(x86_simd)]
#[inline(always)]
fn tag_from(open: u32, closes: u64, len: usize) -> (usize, usize) {
    let after = (u128::MAX << (open + 1)) as u64;
    let c_bits = closes & after;
    let c = c_bits.trailing_zeros();
    let tagged = (c_bits != 0) & (c > open + 1);
    if tagged {
        (open as usize + 1, c as usize)
    } else {
        (0, len)
    }
}

/// Where Redis' hash range of the key `buf[s..s + len]` (1 to 64 bytes) lies, relative to `s`,
/// from the brace bitmaps (each with one zero word past the piece).
#[cfg(x86_simd)]
#[inline(always)]
fn tag_range(opens: &[u64], closes: &[u64], s: usize, len: usize) -> (usize, usize) {
    let below = (u128::MAX >> (128 - len)) as u64;
    let o = (bits_at(opens, s) & below).trailing_zeros();
    tag_from(o, bits_at(closes, s) & below, len)
}

/// The fused scan of one piece by its table of line-end offsets: four lines at a time, and
/// when all four are keys of 1 to 64 bytes within the limit (nearly always), their hash
/// ranges by `tag4` (relative to each key's start) and their CRCs by `crc4`, whose four
/// carry-less chains overlap. Any other line (blank, over the limit, over 64 bytes) and the
/// last few take the one-key path; `sink` sees every key in order.
#[cfg(x86_simd)]
#[inline(always)]
#[allow(clippy::needless_range_loop)] // four lanes indexed side by side
fn fused_keys<S: PieceSink>(
    buf: &[u8],
    ends: &[u32],
    (max_line, long): (usize, &mut Vec<LongLine>),
    sink: &mut S,
    tag4: impl Fn([usize; 4], [usize; 4]) -> [(usize, usize); 4],
    crc4: impl Fn([usize; 4], [usize; 4]) -> [u16; 4],
    crc1: impl Fn(usize, usize) -> u16,
) -> LineCounts {
    let mut counts = LineCounts::default();
    let one =
        |s: usize, e: usize, counts: &mut LineCounts, sink: &mut S, long: &mut Vec<LongLine>| {
            let Some(e) = key_end(buf, s, e, max_line, counts, long) else {
                return;
            };
            let (a, b) = match TagShape::of(&buf[s..e]) {
                TagShape::Tagged { open, close } => (s + open + 1, s + close),
                _ => (s, e),
            };
            sink.key(s, e, a, b, crc1(a, b));
        };
    let mut start = 0usize;
    let mut quads = ends.chunks_exact(4);
    for q in &mut quads {
        let e = [q[0] as usize, q[1] as usize, q[2] as usize, q[3] as usize];
        let s = [start, e[0] + 1, e[1] + 1, e[2] + 1];
        start = e[3] + 1;
        // A `\r` before the line end is not part of the key. (On a blank line the byte
        // before is the line end before it, or for the piece's first line its own.)
        let k: [usize; 4] =
            std::array::from_fn(|j| e[j] - usize::from(buf[e[j].saturating_sub(1)] == b'\r'));
        let len: [usize; 4] = std::array::from_fn(|j| k[j] - s[j]);
        let fits = |j: usize| (len[j].wrapping_sub(1) < 64) & (e[j] - s[j] <= max_line);
        if fits(0) & fits(1) & fits(2) & fits(3) {
            let t = tag4(s, len);
            let a: [usize; 4] = std::array::from_fn(|j| s[j] + t[j].0);
            let b: [usize; 4] = std::array::from_fn(|j| s[j] + t[j].1);
            let c = crc4(a, b);
            for j in 0..4 {
                sink.key(s[j], k[j], a[j], b[j], c[j]);
            }
            counts.lines += 4;
            counts.keys += 4;
        } else {
            for j in 0..4 {
                one(s[j], e[j], &mut counts, sink, long);
            }
        }
    }
    for &e in quads.remainder() {
        one(start, e as usize, &mut counts, sink, long);
        start = e as usize + 1;
    }
    if start < buf.len() {
        one(start, buf.len(), &mut counts, sink, long);
    }
    counts
}

/// Appends the offsets `base + i` of the set bits `i` of `m` to `out` (which has room for
/// four more than it gets): four are written whatever `m` holds, which keeps the common case
/// (up to four line ends in 64 bytes) free of branches.
///
/// # Safety
/// `out` must have spare capacity for `m.count_ones().max(4)` more offsets.
#[cfg(x86_simd)]
#[inline(always)]
unsafe fn push_offsets(out: &mut Vec<u32>, base: u32, mut m: u64) {
    let n = m.count_ones() as usize;
    let len = out.len();
    let p = out.as_mut_ptr();
    // SAFETY: the caller guarantees room for max(n, 4) more entries past `len`; the entries up
    // to `len + n` are then all written before the length grows over them.
    unsafe {
        for i in 0..4 {
            *p.add(len + i) = base + m.trailing_zeros();
            m &= m.wrapping_sub(1);
        }
        let mut i = 4;
        while m != 0 {
            *p.add(len + i) = base + m.trailing_zeros();
            m &= m - 1;
            i += 1;
        }
        out.set_len(len + n);
    }
}

/// Clears the offset table and makes room for a piece of `len` bytes: every byte may end a
/// line, and four offsets are written per 64 bytes at least.
#[cfg(x86_simd)]
fn ready_ends(len: usize, ends: &mut Vec<u32>) {
    ends.clear();
    ends.reserve(len + 64);
}

/// [`fused_keys`] with AVX-512: one 64-byte load and compare per block for the line ends (a
/// masked load for the last); each key's braces by a masked load of its own bytes and two
/// compares; the four-key CRC by 512-bit carry-less multiplies.
///
/// # Safety
/// The CPU must support what [`super::clmul::avx512_supported`] checks and BMI1/2, POPCNT and
/// LZCNT; `buf.len()` at most [`MAX_FUSED_PIECE`].
#[cfg(x86_simd)]
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,vpclmulqdq,pclmulqdq,ssse3,sse4.1,avx2,bmi1,bmi2,popcnt,lzcnt"
)]
unsafe fn fused_avx512(
    buf: &[u8],
    ends: &mut Vec<u32>,
    limit: (usize, &mut Vec<LongLine>),
    sink: &mut impl PieceSink,
) -> LineCounts {
    use std::arch::x86_64::*;
    debug_assert!(buf.len() <= MAX_FUSED_PIECE);
    ready_ends(buf.len(), ends);
    let vn = _mm512_set1_epi8(b'\n' as i8);
    let mut at = 0usize;
    while at < buf.len() {
        let rest = buf.len() - at;
        let keep = if rest >= 64 {
            u64::MAX
        } else {
            (1u64 << rest) - 1
        };
        // SAFETY: the mask keeps only bytes of `buf` (from `at`, at most `rest`); masked-off
        // bytes are not read.
        let z = unsafe { _mm512_maskz_loadu_epi8(keep, buf.as_ptr().add(at).cast()) };
        // SAFETY: `ends` has room for the piece's length plus 64 (`ready_ends`), and one
        // block adds at most max(its line ends, 4).
        unsafe { push_offsets(ends, at as u32, _mm512_cmpeq_epi8_mask(z, vn)) };
        at += 64;
    }
    let base = buf.as_ptr();
    let (vo, vc) = (_mm512_set1_epi8(b'{' as i8), _mm512_set1_epi8(b'}' as i8));
    fused_keys(
        buf,
        ends,
        limit,
        sink,
        |s, len| {
            std::array::from_fn(|j| {
                let keep = (u128::MAX >> (128 - len[j])) as u64;
                // SAFETY: the mask keeps the key's own bytes, `buf[s..s + len]`; the others
                // are not read.
                let z = unsafe { _mm512_maskz_loadu_epi8(keep, base.add(s[j]).cast()) };
                let open = _mm512_cmpeq_epi8_mask(z, vo).trailing_zeros();
                tag_from(open, _mm512_cmpeq_epi8_mask(z, vc), len[j])
            })
        },
        |a, b| {
            let p = std::array::from_fn(|i| base.wrapping_add(b[i]));
            let n = std::array::from_fn(|i| b[i] - a[i]);
            // SAFETY: this function's features are the kernel's; each hash range is 1 to 64
            // bytes of `buf`.
            unsafe { super::clmul::crc16_window_x4_avx512(p, n) }
        },
        // SAFETY: the features are present and the scan passes a <= b <= len.
        |a, b| unsafe { super::clmul::crc16_window(buf, a, b) },
    )
}

/// [`fused_keys`] with AVX2: two 32-byte loads per block and three compares (line ends and
/// brace bitmaps), and the four-key CRC by 128-bit carry-less multiplies of the 64 bytes that
/// end each hash range (keys in the first 64 bytes of the piece one at a time).
///
/// # Safety
/// The CPU must support AVX2, PCLMULQDQ, SSSE3, SSE4.1, BMI1/2, POPCNT and LZCNT;
/// `buf.len()` at most [`MAX_FUSED_PIECE`].
#[cfg(x86_simd)]
#[target_feature(enable = "avx2,pclmulqdq,ssse3,sse4.1,bmi1,bmi2,popcnt,lzcnt")]
unsafe fn fused_avx2(
    buf: &[u8],
    ends: &mut Vec<u32>,
    op: &mut Vec<u64>,
    cl: &mut Vec<u64>,
    limit: (usize, &mut Vec<LongLine>),
    sink: &mut impl PieceSink,
) -> LineCounts {
    use std::arch::x86_64::*;
    debug_assert!(buf.len() <= MAX_FUSED_PIECE);
    ready_ends(buf.len(), ends);
    let words = buf.len().div_ceil(64) + 1;
    op.clear();
    cl.clear();
    op.reserve(words);
    cl.reserve(words);
    let vn = _mm256_set1_epi8(b'\n' as i8);
    let vo = _mm256_set1_epi8(b'{' as i8);
    let vc = _mm256_set1_epi8(b'}' as i8);
    let mut at = 0u32;
    each_block(buf, |block: &[u8]| {
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
        // SAFETY: as in `fused_avx512`: room for the piece's length plus 64.
        unsafe { push_offsets(ends, at, m(vn)) };
        op.push(m(vo));
        cl.push(m(vc));
        at += 64;
    });
    op.push(0);
    cl.push(0);
    let (op, cl) = (&op[..], &cl[..]);
    fused_keys(
        buf,
        ends,
        limit,
        sink,
        |s, len| std::array::from_fn(|j| tag_range(op, cl, s[j], len[j])),
        |a, b| {
            if b.iter().all(|&b| b >= 64) {
                // SAFETY: features present; each range is 1 to 64 bytes of `buf` ending at 64
                // or later.
                unsafe { super::clmul::crc16_window_x4(buf, a, b) }
            } else {
                // SAFETY: features present; a <= b <= len.
                std::array::from_fn(|i| unsafe { super::clmul::crc16_window(buf, a[i], b[i]) })
            }
        },
        // SAFETY: the features are present and the scan passes a <= b <= len.
        |a, b| unsafe { super::clmul::crc16_window(buf, a, b) },
    )
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

    /// Every path this CPU can take (the portable one last).
    fn paths() -> Vec<BulkScanner> {
        let mut v: Vec<BulkScanner> = [SimdPath::Avx512, SimdPath::Avx2]
            .into_iter()
            .map(BulkScanner::with_path)
            .filter(|s| s.path() != SimdPath::Portable)
            .collect();
        v.dedup_by_key(|s| s.path());
        v.push(BulkScanner::portable());
        v
    }

    /// Counts `buf` on every path; they must agree.
    fn both(buf: &[u8]) -> (Vec<u64>, LineCounts) {
        let mut h2 = vec![0u64; SLOT_COUNT];
        let c2 = BulkScanner::portable().count_raw_lines(buf, &mut h2);
        for mut sc in paths() {
            let mut h1 = vec![0u64; SLOT_COUNT];
            let c1 = sc.count_raw_lines(buf, &mut h1);
            assert_eq!(
                c1,
                c2,
                "counts differ on {:?} for {:?}",
                sc.path(),
                String::from_utf8_lossy(buf)
            );
            assert_eq!(
                h1,
                h2,
                "histograms differ on {:?} for {:?}",
                sc.path(),
                String::from_utf8_lossy(buf)
            );
        }
        (h2, c2)
    }

    #[test]
    fn every_key_length_and_tag_place_agrees() {
        // Keys of 1 to 80 bytes (the four-key CRC takes up to 64), tags anywhere, `\r\n`
        // ends, blank lines, and lines over a limit among them, at every offset in a piece.
        let mut text = String::new();
        for len in 1..=80usize {
            for tag_at in [None, Some(0), Some(len / 3), Some(len.saturating_sub(3))] {
                let mut k: Vec<u8> = (0..len).map(|i| b'a' + (i * 7 % 26) as u8).collect();
                if let Some(t) = tag_at
                    && t + 2 < len
                {
                    k[t] = b'{';
                    k[len - 1 - (len - t) / 3] = b'}';
                }
                text.push_str(std::str::from_utf8(&k).expect("ascii"));
                text.push_str(if len % 3 == 0 { "\r\n" } else { "\n" });
                if len % 17 == 0 {
                    text.push('\n');
                }
            }
        }
        for skip in [0, 1, 5, 31, 63, 64, 65] {
            let buf = &text.as_bytes()[skip..];
            both(buf);
            for max_line in [10, 63, 64, 65] {
                let mut want = (Vec::new(), vec![0u64; SLOT_COUNT]);
                let wc = BulkScanner::portable().count_raw_lines_limited(
                    buf,
                    &mut want.1,
                    max_line,
                    &mut want.0,
                );
                for mut sc in paths() {
                    let mut got = (Vec::new(), vec![0u64; SLOT_COUNT]);
                    let gc = sc.count_raw_lines_limited(buf, &mut got.1, max_line, &mut got.0);
                    assert_eq!((gc, &got), (wc, &want), "{:?}, limit {max_line}", sc.path());
                }
            }
        }
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
        for mut sc in paths() {
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
                let b = spans(&mut BulkScanner::portable(), data, usize::MAX);
                for mut sc in paths() {
                    assert_eq!(spans(&mut sc, data, usize::MAX), b, "{:?}", sc.path());
                }
                let a = b;
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
                for mut sc in paths() {
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
