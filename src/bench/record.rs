//! Bench's own record of what a run writes, kept on the machine that runs it, beside the
//! journal it keeps on the cluster. The journal on the cluster says which run wrote it (a
//! random run id) and is there for anyone to see, and to forge: anyone who can write to the
//! cluster can write a set with the marker. The record is what `--cleanup` trusts: it deletes
//! only names this machine's record of that run lists, so a forged or altered journal cannot
//! make it delete a key the run did not write.
//!
//! A record is the file `<state>/keyplan/bench/<run id>.run` (`<state>`: `$XDG_STATE_HOME`,
//! else `~/.local/state`), readable by its owner only: a header line, `prefix <prefix>`, then
//! every key the run writes, hex-encoded, one per line.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The first line of a record.
const HEADER: &str = "keyplan-bench-record v1";

/// A run id: 32 lower-case hex digits (128 random bits).
pub fn valid_run_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A new run id, from the system's random source.
pub fn new_run_id() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
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

/// Where records are kept: `$XDG_STATE_HOME/keyplan/bench`, else
/// `$HOME/.local/state/keyplan/bench`; `None` when neither is set to an absolute path.
pub fn dir() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let state = std::env::var_os("XDG_STATE_HOME")
        .and_then(abs)
        .or_else(|| Some(std::env::var_os("HOME").and_then(abs)?.join(".local/state")))?;
    Some(state.join("keyplan").join("bench"))
}

/// The record of run `id` in `dir` (`id` must be a valid run id: it becomes a file name).
fn path_in(dir: &Path, id: &str) -> PathBuf {
    debug_assert!(valid_run_id(id));
    dir.join(format!("{id}.run"))
}

/// Why a record could not be written or read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct RecordError {
    /// The file (or directory).
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

fn record_err(path: &Path, e: impl std::fmt::Display) -> RecordError {
    RecordError {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// Writes the record of run `id` under `prefix`: `keys`, every key it will write. Whole or
/// not at all (written under a temporary name, then renamed), readable by its owner only.
pub fn write<'k>(
    id: &str,
    prefix: &str,
    keys: impl IntoIterator<Item = &'k Vec<u8>>,
) -> Result<PathBuf, RecordError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = dir().ok_or_else(|| RecordError {
        path: "$XDG_STATE_HOME".into(),
        reason: "neither XDG_STATE_HOME nor HOME is set to an absolute path".into(),
    })?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| record_err(&dir, e))?;
    let path = path_in(&dir, id);
    let tmp = dir.join(format!(".{id}.run.tmp"));
    let mut text = format!("{HEADER}\nprefix {prefix}\n");
    for k in keys {
        text.push_str(&hex(k));
        text.push('\n');
    }
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(record_err(&path, e));
    }
    Ok(path)
}

/// A run's record, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its file.
    pub path: PathBuf,
    /// The prefix the run wrote under.
    pub prefix: String,
    /// Every key it wrote (or was about to).
    pub keys: std::collections::BTreeSet<Vec<u8>>,
}

/// The record of run `id` on this machine: `Ok(None)` when there is none (another machine's
/// run, or another user's), an error when the file is there but not a record.
pub fn read(id: &str) -> Result<Option<Record>, RecordError> {
    let Some(dir) = dir() else {
        return Ok(None);
    };
    if !valid_run_id(id) {
        return Ok(None);
    }
    let path = path_in(&dir, id);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(record_err(&path, e)),
    };
    let mut lines = text.lines();
    let bad = |what: &str| record_err(&path, format!("not a bench record ({what})"));
    if lines.next() != Some(HEADER) {
        return Err(bad("its first line is not the header"));
    }
    let prefix = lines
        .next()
        .and_then(|l| l.strip_prefix("prefix "))
        .ok_or_else(|| bad("no prefix line"))?
        .to_string();
    let mut keys = std::collections::BTreeSet::new();
    for (i, l) in lines.enumerate() {
        keys.insert(unhex(l).ok_or_else(|| bad(&format!("line {} is not hex", i + 3)))?);
    }
    Ok(Some(Record { path, prefix, keys }))
}

/// Removes the record of run `id` (once nothing it lists remains on the cluster).
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_hex_and_nothing_else() {
        let id = new_run_id().unwrap();
        assert!(valid_run_id(&id), "{id}");
        assert_ne!(id, new_run_id().unwrap());
        for bad in [
            "",
            "../../etc/passwd",
            &"A".repeat(32),
            &"0".repeat(31),
            "0/..0",
        ] {
            assert!(!valid_run_id(bad), "{bad}");
        }
        assert_eq!(unhex(&hex(b"k\n\x00\xff")), Some(b"k\n\x00\xff".to_vec()));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }
}
