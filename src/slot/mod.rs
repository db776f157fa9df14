//! The slot core: Redis Cluster's `keyHashSlot`, exactly.
//!
//! `slot = CRC16-XMODEM(h) mod 16384`, where `h` is the hash tag when the key has one and the
//! whole key otherwise. The tag rule: find the FIRST `{`; find the first `}` after it; if both
//! exist and at least one byte lies between them, `h` is the bytes between. Later brace pairs
//! are never consulted. Keys are bytes, not strings.
//!
//! Everything here is pure: no I/O, no printing.

pub mod bulk;
mod clmul;
mod crc16;

pub use clmul::{crc16_clmul, crc16_fold_portable, crc16_in};
pub use crc16::{XMODEM_TABLE, crc16, crc16_bitwise, crc16_table};

use memchr::memchr;

/// The number of hash slots in a Redis Cluster.
pub const SLOT_COUNT: usize = 16384;

/// How the first `{` of a key shapes what Redis hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagShape {
    /// The key has no `{`: the whole key is hashed.
    NoBrace,
    /// The first `{` (at byte `open`) has no `}` after it: the whole key is hashed.
    Unclosed {
        /// Byte offset of the first `{`.
        open: usize,
    },
    /// The first `{` (at byte `open`) is directly followed by `}`: the whole key is hashed.
    Empty {
        /// Byte offset of the first `{`.
        open: usize,
    },
    /// A hash tag: the bytes strictly between `open` and `close` are hashed.
    Tagged {
        /// Byte offset of the first `{`.
        open: usize,
        /// Byte offset of the first `}` after `open`.
        close: usize,
    },
}

/// The first `needle` in `hay`. Keys are mostly short, where `memchr`'s set-up costs more
/// than the search: on x86-64, 16 to 64 bytes are compared in 16-byte SSE2 loads (two up to 32
/// bytes, four up to 64, the last ending at the end); elsewhere as [`find_portable`] does.
#[inline]
pub(crate) fn find(needle: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(x86_simd)]
    if (16..=64).contains(&hay.len()) {
        return find_sse2(needle, hay);
    }
    find_portable(needle, hay)
}

/// [`find`] for 16 to 64 bytes by SSE2 compares.
#[cfg(x86_simd)]
#[allow(unsafe_code)]
#[inline(always)]
fn find_sse2(needle: u8, hay: &[u8]) -> Option<usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let len = hay.len();
    assert!((16..=64).contains(&len), "invariant: 16 to 64 bytes");
    // SAFETY: SSE2 is part of x86-64; each load reads the 16 bytes of `hay` from `i`, and every
    // `i` is at most `len - 16` (16 ≤ len ≤ 64): 0 and `len - 16`, and past 32 bytes also 16
    // and `min(32, len - 16)`. A byte two loads see sets the same bit in both.
    let mask = unsafe {
        let n = _mm_set1_epi8(needle as i8);
        let at = |i: usize| {
            let v = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
            u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, n)) as u16) << i
        };
        match len {
            ..=32 => at(0) | at(len - 16),
            _ => at(0) | at(16) | at(32.min(len - 16)) | at(len - 16),
        }
    };
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

/// [`find`] without vector instructions: two overlapping words for 4 to 15 bytes (in each, the
/// lowest byte flagged by the zero-byte test is exactly the first match: a borrow only flags
/// bytes above a true match), byte by byte below, `memchr` from 16.
#[inline]
fn find_portable(needle: u8, hay: &[u8]) -> Option<usize> {
    let len = hay.len();
    if len >= 16 {
        return memchr(needle, hay);
    }
    if len >= 4 {
        let (first, last) = if len >= 8 {
            (word::<8>(hay, 0), word::<8>(hay, len - 8))
        } else {
            (word::<4>(hay, 0), word::<4>(hay, len - 4))
        };
        let width = if len >= 8 { 8 } else { 4 };
        let hits = |w: u64| {
            let x = w ^ (0x0101_0101_0101_0101u64 * u64::from(needle));
            x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080
        };
        let (a, b) = (hits(first), hits(last));
        return if a != 0 {
            Some((a.trailing_zeros() / 8) as usize)
        } else if b != 0 {
            Some(len - width + (b.trailing_zeros() / 8) as usize)
        } else {
            None
        };
    }
    hay.iter().position(|&b| b == needle)
}

/// `N` (4 or 8) bytes of `hay` from `at`, little-endian, zero-extended to 64 bits.
#[inline(always)]
fn word<const N: usize>(hay: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..N].copy_from_slice(&hay[at..at + N]);
    u64::from_le_bytes(b)
}

impl TagShape {
    /// Classifies a key the way Redis' `keyHashSlot` does.
    #[inline(always)]
    pub fn of(key: &[u8]) -> TagShape {
        let Some(open) = find(b'{', key) else {
            return TagShape::NoBrace;
        };
        match find(b'}', &key[open + 1..]) {
            None => TagShape::Unclosed { open },
            Some(0) => TagShape::Empty { open },
            Some(d) => TagShape::Tagged {
                open,
                close: open + 1 + d,
            },
        }
    }

    /// The bytes Redis hashes for `key`, which must be the key this shape was computed from.
    #[inline]
    pub fn hashed<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        match *self {
            TagShape::Tagged { open, close } => &key[open + 1..close],
            _ => key,
        }
    }

    /// The byte offset just past the part of the key this shape looked at: later braces start
    /// here and are never consulted by Redis.
    fn consulted_end(&self) -> Option<usize> {
        match *self {
            TagShape::Tagged { close, .. } => Some(close + 1),
            TagShape::Empty { open } => Some(open + 2),
            _ => None,
        }
    }
}

/// The bytes Redis hashes to place `key`: its hash tag when it has a non-empty one, else the
/// whole key.
///
/// ```
/// use keyplan::slot::hash_tag;
/// assert_eq!(hash_tag(b"{user1000}.following"), b"user1000");
/// assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}"); // empty first tag: whole key
/// assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
/// ```
#[inline]
pub fn hash_tag(key: &[u8]) -> &[u8] {
    TagShape::of(key).hashed(key)
}

/// The non-empty hash tag of `key`, or `None` when Redis hashes the whole key.
#[inline]
pub fn tag(key: &[u8]) -> Option<&[u8]> {
    match TagShape::of(key) {
        TagShape::Tagged { open, close } => Some(&key[open + 1..close]),
        _ => None,
    }
}

/// The Redis Cluster hash slot of `key` (0..16384), identical to `CLUSTER KEYSLOT`.
///
/// ```
/// use keyplan::slot::key_slot;
/// assert_eq!(key_slot(b"somekey"), 11058);
/// assert_eq!(key_slot(b"foo{hash_tag}"), 2515);
/// assert_eq!(key_slot(b""), 0);
/// ```
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & 0x3FFF
}

/// Where the slot rule puts a key: its slot and, when it has a non-empty `{…}` tag, where the
/// tag lies in the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The key's cluster slot (0..16384).
    pub slot: u16,
    /// The tag's bytes, `key[start..end]`, when the key has a non-empty tag.
    pub tag: Option<(usize, usize)>,
}

impl Placement {
    /// The key's non-empty hash tag, given the key this placement was taken of.
    #[inline]
    pub fn tag<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        self.tag.map(|(a, b)| &key[a..b])
    }
}

/// The placement of the key `buf[start..end]`. A short key's CRC reads the bytes of `buf`
/// before `start` (masked out), which saves it a byte-by-byte path: pass the key inside the
/// buffer it was read from when there is one.
///
/// ```
/// use keyplan::slot::{key_slot, place_in};
/// let buf = b"....user:{42}:cart";
/// let p = place_in(buf, 4, buf.len());
/// assert_eq!(p.slot, key_slot(b"user:{42}:cart"));
/// assert_eq!(p.tag(b"user:{42}:cart"), Some(&b"42"[..]));
/// ```
#[allow(unsafe_code)]
#[inline(always)]
pub fn place_in(buf: &[u8], start: usize, end: usize) -> Placement {
    #[cfg(x86_simd)]
    if clmul::window_supported() && start <= end && end <= buf.len() {
        // SAFETY: the CPU features were detected just above and start <= end <= len.
        return unsafe { clmul::place_in_window(buf, start, end) };
    }
    place_with(buf, start, end, |buf, a, b| crc16(&buf[a..b]))
}

/// [`place_in`] with the CRC of `buf[a..b]` given by `crc(buf, a, b)`.
#[inline(always)]
fn place_with(
    buf: &[u8],
    start: usize,
    end: usize,
    crc: impl Fn(&[u8], usize, usize) -> u16,
) -> Placement {
    match TagShape::of(&buf[start..end]) {
        TagShape::Tagged { open, close } => Placement {
            slot: crc(buf, start + open + 1, start + close) & 0x3FFF,
            tag: Some((open + 1, close)),
        },
        _ => Placement {
            slot: crc(buf, start, end) & 0x3FFF,
            tag: None,
        },
    }
}

/// A plain-words account of which bytes of `key` Redis hashes and why.
pub fn explain(key: &[u8]) -> String {
    let shape = TagShape::of(key);
    let mut text = match shape {
        TagShape::NoBrace => "no '{' in the key, so the whole key is hashed".to_string(),
        TagShape::Unclosed { open } => {
            format!("the first '{{' (byte {open}) has no '}}' after it, so the whole key is hashed")
        }
        TagShape::Empty { open } => format!(
            "the first '{{…}}' (bytes {open}-{}) is empty, so the whole key is hashed",
            open + 1
        ),
        TagShape::Tagged { open, close } => format!(
            "the first '{{' (byte {open}) and the first '}}' after it (byte {close}) enclose a hash tag, so only the tag is hashed"
        ),
    };
    if let Some(end) = shape.consulted_end()
        && memchr(b'{', &key[end..]).is_some()
    {
        text.push_str("; a later '{' is ignored (Redis only looks at the first)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The fast slot is the slot rule's, for keys full of braces and of every length
        /// around the CRC's 16- and 64-byte paths, alone and inside a buffer (whose bytes
        /// before the key a short key's CRC reads), with the tag the rule finds.
        #[test]
        fn the_fast_slot_is_the_slot(
            key in proptest::collection::vec(
                proptest::sample::select(vec![b'{', b'}', b'a', b'7', 0u8, 0xff]),
                0..140,
            ),
            before in proptest::collection::vec(proptest::num::u8::ANY, 0..90),
        ) {
            let alone = place_in(&key, 0, key.len());
            proptest::prop_assert_eq!(alone.slot, key_slot(&key));
            proptest::prop_assert_eq!(alone.tag(&key), tag(&key));
            let buf = [before.as_slice(), &key].concat();
            let p = place_in(&buf, before.len(), buf.len());
            proptest::prop_assert_eq!(p.slot, key_slot(&key));
            proptest::prop_assert_eq!(p.tag(&key), tag(&key));
        }
    }

    #[test]
    fn short_key_search_agrees_with_memchr() {
        // Every length around the 4-, 8-, 16-, 32- and 64-byte paths, with the needle absent,
        // at every position, and twice (the first must win, also when only a later load sees
        // it), among bytes one bit or one borrow away from the needle.
        const AROUND: [u8; 8] = [0x7a, 0x7c, 0xfb, 0x00, 0x01, 0xff, 0x80, b'a'];
        for len in 0..=72usize {
            for shift in 0..AROUND.len() {
                let base: Vec<u8> = (0..len)
                    .map(|i| AROUND[(i + shift) % AROUND.len()])
                    .collect();
                // The build's search and the one other targets build.
                for search in [find, find_portable] {
                    assert_eq!(search(b'{', &base), memchr(b'{', &base), "len {len}");
                    for i in 0..len {
                        for j in i..len {
                            let mut k = base.clone();
                            k[i] = b'{';
                            k[j] = b'{';
                            assert_eq!(search(b'{', &k), Some(i), "len {len}, at {i} and {j}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn spec_examples() {
        let cases: &[(&[u8], u16)] = &[
            (b"123456789", 12739),
            (b"somekey", 11058),
            (b"foo{hash_tag}", 2515),
            (b"bar{hash_tag}", 2515),
            (b"{user1000}.following", 3443),
            (b"hello", 866),
            (b"user:1000", 1649),
            (b"{user:1000}:profile", 1649),
            (b"x", 16287),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"foo{bar}{zap}", 5061),
            (b"{}", 15257),
            (b"{{}}", 4092),
            (b"", 0),
            (b"{06S}key", 0),
            (b"{Qi}key", 1),
            (b"{5L5}key", 2),
        ];
        for (key, slot) in cases {
            assert_eq!(key_slot(key), *slot, "{}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn shapes() {
        assert_eq!(TagShape::of(b"abc"), TagShape::NoBrace);
        assert_eq!(TagShape::of(b"a{bc"), TagShape::Unclosed { open: 1 });
        assert_eq!(TagShape::of(b"a}{bc"), TagShape::Unclosed { open: 2 });
        assert_eq!(TagShape::of(b"a{}b"), TagShape::Empty { open: 1 });
        assert_eq!(
            TagShape::of(b"a{b}c"),
            TagShape::Tagged { open: 1, close: 3 }
        );
        assert_eq!(tag(b"{}x"), None);
        assert_eq!(tag(b"x{y}"), Some(&b"y"[..]));
    }

    #[test]
    fn explain_mentions_ignored_later_tags() {
        let e = explain(b"foo{}{bar}");
        assert!(e.contains("is empty, so the whole key is hashed"), "{e}");
        assert!(e.contains("later '{' is ignored"), "{e}");
        let e = explain(b"foo{bar}{zap}");
        assert!(e.contains("enclose a hash tag"), "{e}");
        assert!(e.contains("later '{' is ignored"), "{e}");
        assert!(!explain(b"{a}b").contains("later"));
        assert!(explain(b"ab{").contains("no '}' after it"));
    }
}
