//! CRC16-XMODEM, the checksum behind Redis Cluster's `keyHashSlot`.
//!
//! Polynomial 0x1021, initial value 0, no reflection, no final xor; the check value of
//! `"123456789"` is `0x31C3`. Three implementations live here and tests prove them identical:
//!
//! * [`crc16_bitwise`]: the bit-by-bit definition, the reference for every other path;
//! * [`crc16_table`]: slice-by-16 tables with the *zero-prefix trick*: XMODEM starts from 0,
//!   so leading zero bytes never change the CRC. A key of `n` bytes is read as if it were
//!   left-padded with zeros to a whole 16-byte block, which turns the usual byte-at-a-time tail
//!   loop into one short slice of independent table look-ups at the head;
//! * a carry-less-multiply path ([`super::clmul`]) picked at run time when the CPU has
//!   PCLMULQDQ, used by [`crc16`] for keys of 16 bytes and more.
//!
//! [`crc16`] is the entry point the rest of keyplan uses.

/// Inputs at least this long use carry-less multiplication when the CPU has it; shorter ones
/// are faster with the tables (measured by the `crc16` group of the benchmark).
pub const CLMUL_FROM: usize = 32;

/// The generator polynomial of CRC16-XMODEM (x^16 + x^12 + x^5 + 1, top bit implied).
pub const POLY: u16 = 0x1021;

/// Number of slice tables: slice-by-16.
const SLICES: usize = 16;

/// `TABLES[k][b]` is the CRC of byte `b` followed by `k` zero bytes, i.e. `b·x^(16+8k) mod P`.
pub(crate) static TABLES: [[u16; 256]; SLICES] = build_tables();

const fn build_tables() -> [[u16; 256]; SLICES] {
    let mut t = [[0u16; 256]; SLICES];
    let mut b = 0;
    while b < 256 {
        let mut crc = (b as u16) << 8;
        let mut i = 0;
        while i < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
            i += 1;
        }
        t[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < SLICES {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev << 8) ^ t[0][(prev >> 8) as usize];
            b += 1;
        }
        k += 1;
    }
    t
}

/// The byte-at-a-time XMODEM table (`TABLES[0]`), for hashes built on it.
pub static XMODEM_TABLE: [u16; 256] = TABLES[0];

/// The bit-by-bit definition of CRC16-XMODEM. Slow; it is the reference the fast paths are
/// tested against.
pub fn crc16_bitwise(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= (byte as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// CRC of the first `data.len()` (< 16) bytes seen as the tail of a zero-padded 16-byte block:
/// byte `i` has `len - 1 - i` bytes after it, so it is looked up in that table. Starting CRC 0.
#[inline(always)]
fn head(data: &[u8]) -> u16 {
    let n = data.len();
    debug_assert!(n < SLICES);
    let mut crc = 0u16;
    for (i, &b) in data.iter().enumerate() {
        crc ^= TABLES[n - 1 - i][b as usize];
    }
    crc
}

/// Folds one full 16-byte block into `crc`.
#[inline(always)]
fn block16(crc: u16, b: &[u8; 16]) -> u16 {
    let t = &TABLES;
    t[15][((crc >> 8) as u8 ^ b[0]) as usize]
        ^ t[14][((crc & 0xff) as u8 ^ b[1]) as usize]
        ^ t[13][b[2] as usize]
        ^ t[12][b[3] as usize]
        ^ t[11][b[4] as usize]
        ^ t[10][b[5] as usize]
        ^ t[9][b[6] as usize]
        ^ t[8][b[7] as usize]
        ^ t[7][b[8] as usize]
        ^ t[6][b[9] as usize]
        ^ t[5][b[10] as usize]
        ^ t[4][b[11] as usize]
        ^ t[3][b[12] as usize]
        ^ t[2][b[13] as usize]
        ^ t[1][b[14] as usize]
        ^ t[0][b[15] as usize]
}

/// Continues a CRC over `data` that must be a whole number of 16-byte blocks.
#[inline(always)]
fn blocks(mut crc: u16, data: &[u8]) -> u16 {
    debug_assert!(data.len().is_multiple_of(SLICES));
    for chunk in data.chunks_exact(SLICES) {
        let block: &[u8; 16] = chunk.try_into().expect("invariant: chunks_exact(16)");
        crc = block16(crc, block);
    }
    crc
}

/// Portable slice-by-16 CRC16-XMODEM with the zero-prefix trick (no tail loop).
#[inline]
pub fn crc16_table(data: &[u8]) -> u16 {
    let r = data.len() % SLICES;
    let crc = head(&data[..r]);
    blocks(crc, &data[r..])
}

/// CRC of the 8 bytes of `v` (big-endian): `v·x^16 mod P`. Used by the carry-less-multiply
/// path for its final reduction.
#[inline(always)]
pub(crate) fn crc16_u64(v: u64) -> u16 {
    let b = v.to_be_bytes();
    let t = &TABLES;
    t[7][b[0] as usize]
        ^ t[6][b[1] as usize]
        ^ t[5][b[2] as usize]
        ^ t[4][b[3] as usize]
        ^ t[3][b[4] as usize]
        ^ t[2][b[5] as usize]
        ^ t[1][b[6] as usize]
        ^ t[0][b[7] as usize]
}

/// CRC16-XMODEM of `data` by the fastest path this CPU offers.
///
/// Keys shorter than 16 bytes (most keys) take the table path inline; longer inputs use
/// carry-less multiplication when the CPU supports it.
///
/// ```
/// assert_eq!(keyplan::slot::crc16(b"123456789"), 0x31C3);
/// ```
#[inline]
pub fn crc16(data: &[u8]) -> u16 {
    if data.len() < CLMUL_FROM {
        crc16_table(data)
    } else {
        super::clmul::crc16_long(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc16_bitwise(b"123456789"), 0x31C3);
        assert_eq!(crc16_table(b"123456789"), 0x31C3);
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn leading_zeros_do_not_change_the_crc() {
        let data = b"user:1000:profile";
        let mut padded = vec![0u8; 7];
        padded.extend_from_slice(data);
        assert_eq!(crc16_bitwise(&padded), crc16_bitwise(data));
    }

    #[test]
    fn table_equals_bitwise_for_every_length_up_to_300() {
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(151) ^ 0x5a) as u8)
            .collect();
        for n in 0..=data.len() {
            assert_eq!(
                crc16_table(&data[..n]),
                crc16_bitwise(&data[..n]),
                "len {n}"
            );
            assert_eq!(crc16(&data[..n]), crc16_bitwise(&data[..n]), "len {n}");
        }
    }

    #[test]
    fn u64_reduction_matches_bitwise() {
        for v in [0u64, 1, 0xdead_beef_cafe_f00d, u64::MAX, 1 << 63] {
            assert_eq!(crc16_u64(v), crc16_bitwise(&v.to_be_bytes()));
        }
    }
}
