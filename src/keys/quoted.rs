//! redis-cli's quoted key form (`sdscatrepr`): `"..."` with `\\ \" \n \r \t \a \b \xHH`.
//!
//! This is what `redis-cli --scan` prints on a terminal or with `--no-raw`, and the only line
//! format that can carry keys containing newlines. [`quote`] writes exactly what redis-cli
//! writes; [`unquote`] reads it back (hex digits in either case).

/// Why a quoted key could not be read, with the 1-based column in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuoteError {
    /// 1-based byte column of the problem.
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
}

fn err(column: usize, message: impl Into<String>) -> QuoteError {
    QuoteError {
        column,
        message: message.into(),
    }
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Reads a quoted key at the start of `line` (which must start with `"`) into `out`
/// (cleared first). Returns the number of bytes of `line` consumed, closing quote included.
pub fn unquote(line: &[u8], out: &mut Vec<u8>) -> Result<usize, QuoteError> {
    out.clear();
    if line.first() != Some(&b'"') {
        return Err(err(1, "expected '\"' to open a quoted key"));
    }
    let mut i = 1;
    while i < line.len() {
        match line[i] {
            b'"' => return Ok(i + 1),
            b'\\' => {
                let Some(&e) = line.get(i + 1) else {
                    return Err(err(i + 1, "a '\\' ends the line; escape it as '\\\\'"));
                };
                let byte = match e {
                    b'\\' => b'\\',
                    b'"' => b'"',
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'x' => {
                        let hi = line.get(i + 2).copied().and_then(hex_val);
                        let lo = line.get(i + 3).copied().and_then(hex_val);
                        match (hi, lo) {
                            (Some(h), Some(l)) => {
                                out.push(h << 4 | l);
                                i += 4;
                                continue;
                            }
                            _ => {
                                return Err(err(
                                    i + 1,
                                    "'\\x' must be followed by two hex digits, as in '\\x0a'",
                                ));
                            }
                        }
                    }
                    other => {
                        return Err(err(
                            i + 1,
                            format!(
                                "unknown escape '\\{}'; redis-cli writes only \\\\ \\\" \\n \\r \\t \\a \\b and \\xHH",
                                other.escape_ascii()
                            ),
                        ));
                    }
                };
                out.push(byte);
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Err(err(
        line.len() + 1,
        "the quoted key has no closing '\"' (is this a raw dump? try --input-format raw)",
    ))
}

/// Appends the redis-cli quoted form of `key` (as `sdscatrepr` writes it) to `out`.
pub fn quote_into(key: &[u8], out: &mut String) {
    out.push('"');
    for &b in key {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\x");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
    }
    out.push('"');
}

/// The redis-cli quoted form of `key`.
///
/// ```
/// assert_eq!(keyplan::keys::quote(b"a\"b\n\xff"), r#""a\"b\n\xff""#);
/// ```
pub fn quote(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len() + 2);
    quote_into(key, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_all_bytes() {
        let key: Vec<u8> = (0..=255u8).collect();
        let q = quote(&key);
        let mut out = Vec::new();
        assert_eq!(unquote(q.as_bytes(), &mut out), Ok(q.len()));
        assert_eq!(out, key);
    }

    #[test]
    fn errors_have_columns() {
        let mut out = Vec::new();
        assert_eq!(unquote(b"\"abc", &mut out).unwrap_err().column, 5);
        assert_eq!(unquote(b"\"a\\q\"", &mut out).unwrap_err().column, 3);
        assert_eq!(unquote(b"\"a\\x1\"", &mut out).unwrap_err().column, 3);
        assert_eq!(unquote(b"\"a\\", &mut out).unwrap_err().column, 3);
        assert!(unquote(b"\"\\X41\"", &mut out).is_err());
        assert_eq!(unquote(b"\"\\x4A\"", &mut out), Ok(6));
        assert_eq!(out, b"J");
    }
}
