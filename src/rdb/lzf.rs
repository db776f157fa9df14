//! LZF decompression, as Redis uses it for strings in snapshots (`rdbcompression yes`).
//!
//! The format is a sequence of runs, each led by a control byte: below 32 it is a literal run
//! of `ctrl + 1` bytes; otherwise a back reference whose length is `ctrl >> 5` (7 meaning
//! "7 plus the next byte") plus 2 and whose distance is `((ctrl & 31) << 8 | next byte) + 1`.

/// Why compressed bytes could not be expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LzfError {
    /// The input ended inside a run.
    Truncated,
    /// A back reference points before the start of the output.
    BadReference,
    /// The runs produce more bytes than the stated length.
    TooLong,
}

impl std::fmt::Display for LzfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LzfError::Truncated => "compressed string ends inside a run",
            LzfError::BadReference => "compressed string refers before its start",
            LzfError::TooLong => "compressed string expands past its stated length",
        })
    }
}

/// Expands `input` into `out` (cleared first) until `out` holds `want` bytes or the input
/// ends. `want` may be shorter than the full length: the first bytes of a compressed value
/// (a ziplist or listpack header) come out without expanding the rest. `full` is the stated
/// uncompressed length; producing more than that is an error.
pub fn decompress_prefix(
    input: &[u8],
    full: usize,
    want: usize,
    out: &mut Vec<u8>,
) -> Result<(), LzfError> {
    out.clear();
    let want = want.min(full);
    // The stated length comes from the file: reserve no more than the input can expand to.
    out.reserve(want.min(input.len().saturating_mul(4)));
    let mut i = 0usize;
    while i < input.len() && out.len() < want {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let lit = input.get(i..i + run).ok_or(LzfError::Truncated)?;
            if out.len() + run > full {
                return Err(LzfError::TooLong);
            }
            out.extend_from_slice(lit);
            i += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i).ok_or(LzfError::Truncated)? as usize;
                i += 1;
            }
            len += 2;
            let low = *input.get(i).ok_or(LzfError::Truncated)? as usize;
            i += 1;
            let dist = ((ctrl & 31) << 8 | low) + 1;
            if dist > out.len() {
                return Err(LzfError::BadReference);
            }
            if out.len() + len > full {
                return Err(LzfError::TooLong);
            }
            let from = out.len() - dist;
            // Overlapping copies repeat the bytes just written, so copy one at a time when the
            // source runs into the destination.
            if dist >= len {
                out.extend_from_within(from..from + len);
            } else {
                for k in 0..len {
                    let b = out[from + k];
                    out.push(b);
                }
            }
        }
    }
    if out.len() < want {
        return Err(LzfError::Truncated);
    }
    Ok(())
}

/// Expands all of `input`, which must produce exactly `full` bytes.
pub fn decompress(input: &[u8], full: usize, out: &mut Vec<u8>) -> Result<(), LzfError> {
    decompress_prefix(input, full, full, out)
}

/// Checks that all of `input` would expand to exactly `full` bytes, every back reference
/// within the bytes already produced, without expanding it: one step per run, no output
/// written. Gives the last byte of the output when the last run is a literal (as every
/// compressor writes it), `None` when it is a back reference.
pub fn check(input: &[u8], full: usize) -> Result<Option<u8>, LzfError> {
    let mut produced = 0usize;
    let mut last = None;
    let mut i = 0usize;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            if input.len() - i < run {
                return Err(LzfError::Truncated);
            }
            produced += run;
            i += run;
            last = Some(input[i - 1]);
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i).ok_or(LzfError::Truncated)? as usize;
                i += 1;
            }
            len += 2;
            let low = *input.get(i).ok_or(LzfError::Truncated)? as usize;
            i += 1;
            if ((ctrl & 31) << 8 | low) + 1 > produced {
                return Err(LzfError::BadReference);
            }
            produced += len;
            last = None;
        }
        if produced > full {
            return Err(LzfError::TooLong);
        }
    }
    if produced < full {
        return Err(LzfError::Truncated);
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_back_reference() {
        // "abcabcabc": literal "abc" (ctrl 2), then a 6-byte reference at distance 3
        // (len field 4 → 6 bytes; ctrl = 4 << 5 | 0, low = 2 → distance 3).
        let input = [2, b'a', b'b', b'c', 4 << 5, 2];
        let mut out = Vec::new();
        decompress(&input, 9, &mut out).unwrap();
        assert_eq!(out, b"abcabcabc");
        decompress_prefix(&input, 9, 2, &mut out).unwrap();
        assert_eq!(&out[..2], b"ab");
    }

    #[test]
    fn errors() {
        let mut out = Vec::new();
        assert_eq!(
            decompress(&[5, b'a'], 6, &mut out),
            Err(LzfError::Truncated)
        );
        assert_eq!(
            decompress(&[1 << 5, 0], 3, &mut out),
            Err(LzfError::BadReference)
        );
        assert_eq!(
            decompress(&[2, b'a', b'b', b'c'], 2, &mut out),
            Err(LzfError::TooLong)
        );
        assert_eq!(
            decompress(&[0, b'a'], 2, &mut out),
            Err(LzfError::Truncated)
        );
    }

    #[test]
    fn check_agrees_with_decompress() {
        let good = [2, b'a', b'b', b'c', 4 << 5, 2, 0, b'z'];
        assert_eq!(check(&good, 10), Ok(Some(b'z')));
        assert_eq!(check(&good[..6], 9), Ok(None));
        // A reference before the start, anywhere in the input (here after a literal).
        assert_eq!(
            check(&[0, b'a', 1 << 5, 4, 0, b'b'], 5),
            Err(LzfError::BadReference)
        );
        assert_eq!(check(&[1 << 5, 0], 3), Err(LzfError::BadReference));
        assert_eq!(check(&[5, b'a'], 6), Err(LzfError::Truncated));
        assert_eq!(check(&good, 9), Err(LzfError::TooLong));
        assert_eq!(check(&good, 11), Err(LzfError::Truncated));
        let mut out = Vec::new();
        for (input, full) in [(&good[..], 10), (&good[..6], 9), (&[7 << 5][..], 9)] {
            assert_eq!(
                check(input, full).is_ok(),
                decompress(input, full, &mut out).is_ok(),
                "{input:?}"
            );
        }
    }
}
