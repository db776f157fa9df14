//! Element counts of the packed encodings a snapshot stores as one string: ziplist, listpack,
//! intset and zipmap. Each reads the header's count when it is exact and walks the entries
//! only when the header says "too many to count" (65535 in ziplists and listpacks, 254 in
//! zipmaps). `None` means the bytes are not a well-formed blob of that kind.

/// Bytes of a header that hold the element count (enough to read any of the four).
pub const HEADER: usize = 10;

/// Elements in a ziplist (`zlbytes u32, zltail u32, zllen u16, entries…, 0xFF`).
pub fn ziplist_len(b: &[u8]) -> Option<u64> {
    let n = u16::from_le_bytes(b.get(8..10)?.try_into().ok()?);
    if n != u16::MAX {
        return Some(n as u64);
    }
    ziplist_walk(b)
}

/// Whether the header alone gives the count (so only [`HEADER`] bytes are needed).
pub fn header_count_exact(kind: Packed, head: &[u8]) -> bool {
    match kind {
        Packed::Ziplist => head.get(8..10).is_some_and(|s| s != [0xff, 0xff]),
        Packed::Listpack => head.get(4..6).is_some_and(|s| s != [0xff, 0xff]),
        Packed::Intset => head.len() >= 8,
        Packed::Zipmap => head.first().is_some_and(|&n| n < 254),
    }
}

/// The packed encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packed {
    /// Redis 3.2 – 6.2 lists, hashes, sorted sets.
    Ziplist,
    /// Redis 7+ lists, hashes, sets, sorted sets and stream nodes.
    Listpack,
    /// Sets of integers.
    Intset,
    /// Redis ≤ 2.4 small hashes.
    Zipmap,
}

/// Elements of a blob of `kind` whose whole length is `total` bytes (`b` may be only its
/// first bytes, when the header's count is exact); for hashes and sorted sets: entries, not
/// pairs. `None` when the header disagrees with the blob's length or claims more elements
/// than its bytes can hold (a damaged or hostile snapshot).
pub fn count(kind: Packed, b: &[u8], total: usize) -> Option<u64> {
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    // The smallest blob that holds `n` elements: its fixed bytes plus the least each takes.
    let fits = |n: u64, fixed: usize, least: usize| {
        (n as u128) * (least as u128) + fixed as u128 <= total as u128
    };
    let n = match kind {
        Packed::Ziplist => {
            if u32_at(0)? != total {
                return None;
            }
            let n = ziplist_len(b)?;
            fits(n, 11, 2).then_some(n)?
        }
        Packed::Listpack => {
            if u32_at(0)? != total {
                return None;
            }
            let n = listpack_len(b)?;
            fits(n, 7, 2).then_some(n)?
        }
        Packed::Intset => {
            let n = intset_len(b)?;
            let width = u32_at(0)? as u128;
            (8 + n as u128 * width == total as u128).then_some(n)?
        }
        Packed::Zipmap => {
            let n = zipmap_len(b)?;
            fits(n / 2, 2, 3).then_some(n)?
        }
    };
    Some(n)
}

fn ziplist_walk(b: &[u8]) -> Option<u64> {
    let mut p = 10usize;
    let mut n = 0u64;
    loop {
        let first = *b.get(p)?;
        if first == 0xff {
            return Some(n);
        }
        // previous entry length: 1 byte, or 0xFE and 4 bytes
        p += if first == 0xfe { 5 } else { 1 };
        let enc = *b.get(p)?;
        let (head, data) = match enc >> 6 {
            0 => (1, (enc & 0x3f) as usize),
            1 => (2, (((enc & 0x3f) as usize) << 8) | *b.get(p + 1)? as usize),
            2 => (
                5,
                u32::from_be_bytes(b.get(p + 1..p + 5)?.try_into().ok()?) as usize,
            ),
            _ => match enc {
                0xc0 => (1, 2),
                0xd0 => (1, 4),
                0xe0 => (1, 8),
                0xf0 => (1, 3),
                0xfe => (1, 1),
                0xf1..=0xfd => (1, 0),
                _ => return None,
            },
        };
        p = p.checked_add(head)?.checked_add(data)?;
        n += 1;
    }
}

/// Elements in a listpack (`total u32, count u16, entries…, 0xFF`).
pub fn listpack_len(b: &[u8]) -> Option<u64> {
    let n = u16::from_le_bytes(b.get(4..6)?.try_into().ok()?);
    if n != u16::MAX {
        return Some(n as u64);
    }
    let mut p = 6usize;
    let mut n = 0u64;
    loop {
        let enc = *b.get(p)?;
        if enc == 0xff {
            return Some(n);
        }
        let entry = if enc & 0x80 == 0 {
            1
        } else if enc & 0xc0 == 0x80 {
            1 + (enc & 0x3f) as usize
        } else if enc & 0xe0 == 0xc0 {
            2
        } else if enc & 0xf0 == 0xe0 {
            2 + ((((enc & 0x0f) as usize) << 8) | *b.get(p + 1)? as usize)
        } else {
            match enc {
                0xf0 => 5 + u32::from_le_bytes(b.get(p + 1..p + 5)?.try_into().ok()?) as usize,
                0xf1 => 3,
                0xf2 => 4,
                0xf3 => 5,
                0xf4 => 9,
                _ => return None,
            }
        };
        let back = match entry {
            0..=127 => 1,
            128..=16_383 => 2,
            16_384..=2_097_151 => 3,
            2_097_152..=268_435_455 => 4,
            _ => 5,
        };
        p = p.checked_add(entry)?.checked_add(back)?;
        n += 1;
    }
}

/// Elements in an intset (`encoding u32, length u32, integers…`).
pub fn intset_len(b: &[u8]) -> Option<u64> {
    let width = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
    if !matches!(width, 2 | 4 | 8) {
        return None;
    }
    Some(u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as u64)
}

/// Entries (fields and values) in a zipmap (`count u8, (len key len free value)…, 0xFF`).
pub fn zipmap_len(b: &[u8]) -> Option<u64> {
    let n = *b.first()?;
    if n < 254 {
        return Some(2 * n as u64);
    }
    let mut p = 1usize;
    let mut pairs = 0u64;
    let len_at = |p: usize| -> Option<(usize, usize)> {
        let l = *b.get(p)?;
        match l {
            0..=253 => Some((1, l as usize)),
            254 => Some((
                5,
                u32::from_le_bytes(b.get(p + 1..p + 5)?.try_into().ok()?) as usize,
            )),
            _ => None,
        }
    };
    loop {
        if *b.get(p)? == 0xff {
            return Some(2 * pairs);
        }
        let (h, klen) = len_at(p)?;
        p = p.checked_add(h + klen)?;
        let (h, vlen) = len_at(p)?;
        let free = *b.get(p + h)? as usize;
        p = p.checked_add(h + 1 + vlen + free)?;
        pairs += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listpack(entries: &[&[u8]], count: u16) -> Vec<u8> {
        let mut body = Vec::new();
        for e in entries {
            assert!(e.len() < 64);
            body.push(0x80 | e.len() as u8);
            body.extend_from_slice(e);
            body.push(1 + e.len() as u8);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&((body.len() + 7) as u32).to_le_bytes());
        b.extend_from_slice(&count.to_le_bytes());
        b.extend_from_slice(&body);
        b.push(0xff);
        b
    }

    #[test]
    fn listpack_header_and_walk() {
        let lp = listpack(&[b"a", b"bc", b"def"], 3);
        assert_eq!(listpack_len(&lp), Some(3));
        let lp = listpack(&[b"a", b"bc", b"def"], u16::MAX);
        assert_eq!(listpack_len(&lp), Some(3));
        assert!(!header_count_exact(Packed::Listpack, &lp));
        assert_eq!(listpack_len(&lp[..lp.len() - 1]), None);
    }

    #[test]
    fn ziplist_walk_counts_every_encoding() {
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&u16::MAX.to_le_bytes());
        // "ab" (6-bit length), int16, immediate 5, int8
        b.extend_from_slice(&[0, 0x02, b'a', b'b']);
        b.extend_from_slice(&[4, 0xc0, 1, 0]);
        b.extend_from_slice(&[4, 0xf6]);
        b.extend_from_slice(&[2, 0xfe, 7]);
        b.push(0xff);
        assert_eq!(ziplist_len(&b), Some(4));
    }

    #[test]
    fn counts_are_bounded_by_the_bytes_that_hold_them() {
        // An intset header claiming 4,294,967,295 members in 25 bytes.
        let mut i = 2u32.to_le_bytes().to_vec();
        i.extend_from_slice(&u32::MAX.to_le_bytes());
        i.resize(25, 0);
        assert_eq!(count(Packed::Intset, &i, i.len()), None);
        // A true one: 3 members of 2 bytes.
        let mut i = 2u32.to_le_bytes().to_vec();
        i.extend_from_slice(&3u32.to_le_bytes());
        i.extend_from_slice(&[1, 0, 2, 0, 3, 0]);
        assert_eq!(count(Packed::Intset, &i, i.len()), Some(3));
        // A listpack whose total_bytes lies, or whose count cannot fit its bytes.
        let lp = listpack(&[b"a", b"bc", b"def"], 3);
        assert_eq!(count(Packed::Listpack, &lp, lp.len()), Some(3));
        let mut lying = lp.clone();
        lying[0..4].copy_from_slice(&1_000_000u32.to_le_bytes());
        assert_eq!(count(Packed::Listpack, &lying, lying.len()), None);
        let many = listpack(&[b"a"], 60_000);
        assert_eq!(count(Packed::Listpack, &many, many.len()), None);
        // Only the header read (the count is exact there): judged by the whole blob's length.
        assert_eq!(count(Packed::Listpack, &lp[..HEADER], lp.len()), Some(3));
    }

    #[test]
    fn intset_and_zipmap() {
        let mut i = 2u32.to_le_bytes().to_vec();
        i.extend_from_slice(&3u32.to_le_bytes());
        assert_eq!(intset_len(&i), Some(3));
        assert_eq!(intset_len(&[3, 0, 0, 0, 1, 0, 0, 0]), None);
        // 254 → walk: "k" → "v" with 1 free byte
        let z = [254, 1, b'k', 1, 1, b'v', 0, 0xff];
        assert_eq!(zipmap_len(&z), Some(2));
        assert_eq!(zipmap_len(&[2]), Some(4));
    }
}
