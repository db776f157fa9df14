//! The key hashes of client-side sharding, bit-exact.
//!
//! twemproxy's hashes take `const char*`, and on x86 `char` is signed: bytes >= 0x80 are
//! sign-extended before they are mixed in where the C code converts a `char` to a wider type.
//! Each function below says which bytes it reads how. Jedis' MurmurHash64A and jump consistent
//! hash complete the set.

use md5::{Digest, Md5};

/// Sign-extends a byte the way x86 C converts a `char` to `uint32_t`.
#[inline(always)]
fn sx(b: u8) -> u32 {
    b as i8 as i32 as u32
}

/// The hash functions twemproxy (nutcracker) offers for `hash:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TwemHash {
    /// Jenkins one-at-a-time over sign-extended bytes.
    OneAtATime,
    /// The first four bytes of MD5, little-endian.
    Md5,
    /// XMODEM table CRC carried in 32 bits without masking (twemproxy 0.5 quirk).
    Crc16,
    /// libmemcached's 15-bit CRC-32 variant.
    Crc32,
    /// Standard CRC-32 (IEEE).
    Crc32a,
    /// Real 64-bit FNV-1, truncated to 32 bits.
    Fnv1_64,
    /// Despite its name, a 32-bit FNV-1a with the 64-bit constants' low words.
    Fnv1a64,
    /// FNV-1 32.
    Fnv1_32,
    /// FNV-1a 32.
    Fnv1a32,
    /// Paul Hsieh's SuperFastHash (twemproxy variant).
    Hsieh,
    /// MurmurHash2 with twemproxy's length-derived seed.
    Murmur,
    /// Bob Jenkins' lookup3 `hashlittle`, initval 13.
    Jenkins,
}

impl TwemHash {
    /// Every hash, with the name nutcracker's config uses.
    pub const ALL: [(&'static str, TwemHash); 12] = [
        ("one_at_a_time", TwemHash::OneAtATime),
        ("md5", TwemHash::Md5),
        ("crc16", TwemHash::Crc16),
        ("crc32", TwemHash::Crc32),
        ("crc32a", TwemHash::Crc32a),
        ("fnv1_64", TwemHash::Fnv1_64),
        ("fnv1a_64", TwemHash::Fnv1a64),
        ("fnv1_32", TwemHash::Fnv1_32),
        ("fnv1a_32", TwemHash::Fnv1a32),
        ("hsieh", TwemHash::Hsieh),
        ("murmur", TwemHash::Murmur),
        ("jenkins", TwemHash::Jenkins),
    ];

    /// The hash with a nutcracker config name.
    pub fn from_name(name: &str) -> Option<TwemHash> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
    }

    /// Its nutcracker config name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, h)| *h == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// Hashes `key` exactly as twemproxy does on x86-64.
    pub fn hash(self, key: &[u8]) -> u32 {
        match self {
            TwemHash::OneAtATime => one_at_a_time(key),
            TwemHash::Md5 => md5_u32(key),
            TwemHash::Crc16 => crc16_twem(key),
            TwemHash::Crc32 => crc32_libmemcached(key),
            TwemHash::Crc32a => crc32(key),
            TwemHash::Fnv1_64 => fnv1_64(key),
            TwemHash::Fnv1a64 => fnv1a_64(key),
            TwemHash::Fnv1_32 => fnv1_32(key),
            TwemHash::Fnv1a32 => fnv1a_32(key),
            TwemHash::Hsieh => hsieh(key),
            TwemHash::Murmur => murmur2(key),
            TwemHash::Jenkins => jenkins(key),
        }
    }
}

/// MD5 digest.
pub fn md5(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
}

/// The first four MD5 bytes, little-endian (twemproxy `md5`, libketama `ketama_hashi`).
pub fn md5_u32(key: &[u8]) -> u32 {
    let d = md5(key);
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

fn one_at_a_time(key: &[u8]) -> u32 {
    let mut v: u32 = 0;
    for &b in key {
        v = v.wrapping_add(sx(b));
        v = v.wrapping_add(v << 10);
        v ^= v >> 6;
    }
    v = v.wrapping_add(v << 3);
    v ^= v >> 11;
    v.wrapping_add(v << 15)
}

fn crc16_twem(key: &[u8]) -> u32 {
    // XMODEM table, but the running value is a u32 that is never masked to 16 bits.
    let table = &crate::slot::XMODEM_TABLE;
    let mut crc: u32 = 0;
    for &b in key {
        crc = (crc << 8) ^ table[(((crc >> 8) ^ b as u32) & 0xff) as usize] as u32;
    }
    crc
}

static CRC32_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Standard CRC-32 (IEEE 802.3, reflected), twemproxy `crc32a`, Codis' slot hash.
pub fn crc32(key: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in key {
        crc = CRC32_TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

fn crc32_libmemcached(key: &[u8]) -> u32 {
    (crc32(key) >> 16) & 0x7fff
}

fn fnv1_64(key: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= b as i8 as i64 as u64;
    }
    h as u32
}

/// FNV over 32 bits, as twemproxy computes its 32-bit variants (and its `fnv1a_64`, which
/// keeps only the low 32 bits of the 64-bit offset basis and prime): `xor_first` is FNV-1a.
#[inline]
fn fnv_32(key: &[u8], basis: u32, prime: u32, xor_first: bool) -> u32 {
    let mut h = basis;
    for &b in key {
        if xor_first {
            h ^= sx(b);
            h = h.wrapping_mul(prime);
        } else {
            h = h.wrapping_mul(prime);
            h ^= sx(b);
        }
    }
    h
}

fn fnv1a_64(key: &[u8]) -> u32 {
    fnv_32(key, 0x8422_2325, 0x0000_01b3, true)
}

fn fnv1_32(key: &[u8]) -> u32 {
    fnv_32(key, 2_166_136_261, 16_777_619, false)
}

fn fnv1a_32(key: &[u8]) -> u32 {
    fnv_32(key, 2_166_136_261, 16_777_619, true)
}

fn hsieh(key: &[u8]) -> u32 {
    if key.is_empty() {
        return 0;
    }
    let get16 = |d: &[u8]| (d[0] as u32) | (d[1] as u32) << 8;
    let mut hash: u32 = 0;
    let mut chunks = key.chunks_exact(4);
    for c in &mut chunks {
        hash = hash.wrapping_add(get16(c));
        let tmp = (get16(&c[2..]) << 11) ^ hash;
        hash = (hash << 16) ^ tmp;
        hash = hash.wrapping_add(hash >> 11);
    }
    let rest = chunks.remainder();
    match rest.len() {
        3 => {
            hash = hash.wrapping_add(get16(rest));
            hash ^= hash << 16;
            hash ^= sx(rest[2]) << 18;
            hash = hash.wrapping_add(hash >> 11);
        }
        2 => {
            hash = hash.wrapping_add(get16(rest));
            hash ^= hash << 11;
            hash = hash.wrapping_add(hash >> 17);
        }
        1 => {
            hash = hash.wrapping_add(rest[0] as u32);
            hash ^= hash << 10;
            hash = hash.wrapping_add(hash >> 1);
        }
        _ => {}
    }
    hash ^= hash << 3;
    hash = hash.wrapping_add(hash >> 5);
    hash ^= hash << 4;
    hash = hash.wrapping_add(hash >> 17);
    hash ^= hash << 25;
    hash.wrapping_add(hash >> 6)
}

fn murmur2(key: &[u8]) -> u32 {
    const M: u32 = 0x5bd1_e995;
    let len = key.len() as u32;
    let seed = 0xdead_beef_u32.wrapping_mul(len);
    let mut h = seed ^ len;
    let mut chunks = key.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= (rest[2] as u32) << 16;
    }
    if rest.len() >= 2 {
        h ^= (rest[1] as u32) << 8;
    }
    if !rest.is_empty() {
        h ^= rest[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

fn jenkins(key: &[u8]) -> u32 {
    #[inline(always)]
    fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(4);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(6);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(8);
        *b = b.wrapping_add(*a);
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(16);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(19);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(4);
        *b = b.wrapping_add(*a);
    }
    let init = 0xdead_beef_u32
        .wrapping_add(key.len() as u32)
        .wrapping_add(13);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |s: &[u8]| -> u32 {
        s.iter()
            .enumerate()
            .fold(0u32, |w, (i, &x)| w | (x as u32) << (8 * i))
    };
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(word(&k[0..4]));
        b = b.wrapping_add(word(&k[4..8]));
        c = c.wrapping_add(word(&k[8..12]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    a = a.wrapping_add(word(&k[..k.len().min(4)]));
    if k.len() > 4 {
        b = b.wrapping_add(word(&k[4..k.len().min(8)]));
    }
    if k.len() > 8 {
        c = c.wrapping_add(word(&k[8..]));
    }
    // The final mix: x ^= y, then x -= y rotated, for seven (x, y, rotation) steps.
    #[inline(always)]
    fn fold(x: &mut u32, y: u32, r: u32) {
        *x ^= y;
        *x = x.wrapping_sub(y.rotate_left(r));
    }
    fold(&mut c, b, 14);
    fold(&mut a, c, 11);
    fold(&mut b, a, 25);
    fold(&mut c, b, 16);
    fold(&mut a, c, 4);
    fold(&mut b, a, 14);
    fold(&mut c, b, 24);
    c
}

/// Jedis' MurmurHash64A (seed 0x1234ABCD), as the signed `long` Java returns.
pub fn murmur64a_jedis(key: &[u8]) -> i64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let seed: u64 = 0x1234_ABCD;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("invariant: 8-byte chunk"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut t = [0u8; 8];
        t[..rest.len()].copy_from_slice(rest);
        h ^= u64::from_le_bytes(t);
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h as i64
}

/// Jump consistent hash (Lamping & Veach): the bucket in `0..buckets` for a 64-bit key.
pub fn jump(mut key: u64, buckets: u32) -> u32 {
    let mut b: i64 = -1;
    let mut j: i64 = 0;
    while j < buckets as i64 {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b.max(0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twemproxy_vectors_for_foo() {
        let want = [
            ("fnv1a_64", 4275688823u32),
            ("md5", 3675831724),
            ("crc16", 205303702),
            ("crc32", 3187),
            ("crc32a", 2356372769),
            ("fnv1_64", 1805727027),
            ("fnv1_32", 1083137555),
            ("fnv1a_32", 2851307223),
            ("hsieh", 1993659431),
            ("murmur", 3303027599),
            ("jenkins", 2583187353),
            ("one_at_a_time", 596015325),
        ];
        for (name, v) in want {
            assert_eq!(TwemHash::from_name(name).unwrap().hash(b"foo"), v, "{name}");
        }
    }

    #[test]
    fn jedis_and_jump_vectors() {
        assert_eq!(murmur64a_jedis(b""), 8371356515094919947);
        assert_eq!(murmur64a_jedis(b"foo"), -7063922479176959649);
        assert_eq!(murmur64a_jedis(b"abcdefghi"), -2111598944829186864);
        assert_eq!(jump(42, 57), 43);
        assert_eq!(jump(16045690984833335023, 255), 237);
    }
}
