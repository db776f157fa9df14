//! How a key (or any byte string) is shown: in JSON, a string when it is valid UTF-8 and
//! otherwise `{"base64": "<standard base64 of the bytes>"}`; in text, as-is when printable,
//! otherwise in redis-cli's quoted form.

use base64::Engine as _;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::borrow::Cow;

/// A byte string as keyplan writes it in JSON: a string when valid UTF-8, else
/// `{"base64": "..."}`.
#[derive(Debug, Clone, Copy)]
pub struct JsonBytes<'a>(pub &'a [u8]);

impl Serialize for JsonBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(
                    "base64",
                    &base64::engine::general_purpose::STANDARD.encode(self.0),
                )?;
                m.end()
            }
        }
    }
}

/// An owned byte string, serialised like [`JsonBytes`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ByteString(pub Vec<u8>);

impl Serialize for ByteString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        JsonBytes(&self.0).serialize(s)
    }
}

/// A key as text for tables and tsv: as-is when it is printable UTF-8 that cannot be mistaken
/// for a quoted key, otherwise redis-cli's quoted form (`"a\nb"`).
pub fn display_key(key: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(key) {
        Ok(s) if !s.is_empty() && !s.starts_with('"') && !s.chars().any(|c| c.is_control()) => {
            Cow::Borrowed(s)
        }
        _ => Cow::Owned(super::quote(key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bytes() {
        assert_eq!(
            serde_json::to_string(&JsonBytes(b"a\"b")).unwrap(),
            r#""a\"b""#
        );
        assert_eq!(
            serde_json::to_string(&JsonBytes(b"\xff\x00")).unwrap(),
            r#"{"base64":"/wA="}"#
        );
    }

    #[test]
    fn display_keys() {
        assert_eq!(display_key(b"user:1"), "user:1");
        assert_eq!(display_key(b""), "\"\"");
        assert_eq!(display_key(b"a\tb"), "\"a\\tb\"");
        assert_eq!(display_key(b"\"q\""), "\"\\\"q\\\"\"");
        assert_eq!(display_key("ключ".as_bytes()), "ключ");
    }
}
