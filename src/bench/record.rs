//! Bench's own record of what a run writes, kept on the machine that runs it, beside the
//! journal it keeps on the cluster. The journal on the cluster says which run wrote it (a
//! random run id) and is there for anyone to see, and to forge: anyone who can write to the
//! cluster can write a set with the marker. The record is what `--cleanup` trusts: it deletes
//! only names this machine's record of that run lists, so a forged or altered journal cannot
//! make it delete a key the run did not write.
//!
//! This module says what a record holds and checks what is read back; where records are kept
//! is the caller's (see [`Records`]: the shell keeps them as files, readable by their owner
//! only). A record's text is a header line, `prefix <prefix>`, then every key the run writes,
//! hex-encoded, one per line.

use std::collections::BTreeSet;

/// The first line of a record.
const HEADER: &str = "keyplan-bench-record v1";

/// Where runs' records are kept (on the machine that runs bench).
pub trait Records {
    /// A new run id: 32 lower-case hex digits of 128 random bits.
    fn new_run_id(&self) -> Result<String, RecordError>;
    /// Keeps `text` as the record of run `id`, whole or not at all.
    fn keep(&self, id: &str, text: &str) -> Result<(), RecordError>;
    /// The text of run `id`'s record, with where it is; `None` when there is none here.
    fn find(&self, id: &str) -> Result<Option<(String, String)>, RecordError>;
    /// Removes run `id`'s record (once nothing it lists remains on the cluster).
    fn forget(&self, id: &str);
    /// Where records are kept, for messages.
    fn place(&self) -> String;
}

/// Why a record could not be kept or read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct RecordError {
    /// The file (or directory).
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

/// A run id: 32 lower-case hex digits (128 random bits). Nothing else is ever a file name.
pub fn valid_run_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Bytes as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The text of the record of a run under `prefix` that writes `keys`.
pub fn render<'k>(prefix: &str, keys: impl IntoIterator<Item = &'k Vec<u8>>) -> String {
    let mut text = format!("{HEADER}\nprefix {prefix}\n");
    for k in keys {
        text.push_str(&hex(k));
        text.push('\n');
    }
    text
}

/// A run's record, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The prefix the run wrote under.
    pub prefix: String,
    /// Every key it wrote (or was about to).
    pub keys: BTreeSet<Vec<u8>>,
}

/// A record's text read back; what is wrong with it otherwise.
pub fn parse(text: &str) -> Result<Record, String> {
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!(
            "not a bench record: its first line is not `{HEADER}`"
        ));
    }
    let prefix = lines
        .next()
        .and_then(|l| l.strip_prefix("prefix "))
        .ok_or("not a bench record: no `prefix` line")?
        .to_string();
    let mut keys = BTreeSet::new();
    for (i, l) in lines.enumerate() {
        keys.insert(unhex(l).ok_or_else(|| {
            format!(
                "not a bench record: line {} is not a hex-encoded key",
                i + 3
            )
        })?);
    }
    Ok(Record { prefix, keys })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_hex_and_nothing_else() {
        assert!(valid_run_id(&hex(&[0xab; 16])));
        for bad in [
            "",
            "../../etc/passwd",
            &"A".repeat(32),
            &"0".repeat(31),
            &"0".repeat(33),
            "0/..0",
        ] {
            assert!(!valid_run_id(bad), "{bad}");
        }
    }

    #[test]
    fn records_read_back_as_written() {
        let keys: BTreeSet<Vec<u8>> = [b"kp:a".to_vec(), b"kp:\n\x00\xff".to_vec()].into();
        let text = render("kp", &keys);
        assert_eq!(
            parse(&text),
            Ok(Record {
                prefix: "kp".into(),
                keys
            })
        );
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é1"), None);
        assert!(parse("prefix kp\n").unwrap_err().contains("first line"));
        assert!(
            parse(&format!("{HEADER}\n"))
                .unwrap_err()
                .contains("prefix")
        );
        assert!(
            parse(&format!("{HEADER}\nprefix kp\nzz\n"))
                .unwrap_err()
                .contains("line 3")
        );
    }
}
