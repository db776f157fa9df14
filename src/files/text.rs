//! Whole-file inputs (schemes, topologies, batch files, rules, calibrations): read into
//! memory with a size cap, and checked to be UTF-8 with the line and column of a bad byte.

use crate::error::UserError;
use anyhow::Context as _;
use std::path::Path;

/// Whole-file inputs (schemes, topologies, batch files, rules) are read into memory: at most
/// this much, so that a wrong path (`/dev/zero`) is an error instead of memory running out.
pub const MAX_TEXT_FILE: u64 = 64 << 20;

/// Reads `path` (a `what`, for messages), refusing more than `max` bytes.
pub fn read_capped(path: &Path, what: &str, max: u64) -> anyhow::Result<Vec<u8>> {
    use std::io::Read as _;
    let f = std::fs::File::open(path)
        .with_context(|| format!("cannot read {what} '{}'", path.display()))?;
    let mut bytes = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {what} '{}'", path.display()))?;
    if bytes.len() as u64 > max {
        return Err(UserError::new(
            format!(
                "{what} '{}' is larger than {} MiB",
                path.display(),
                max >> 20
            ),
            "check the path: keyplan reads this file whole (key dumps, which it streams, have no such bound)",
        )
        .into());
    }
    Ok(bytes)
}

/// Reads `path` as UTF-8 text (a `what`, for messages): capped like [`read_capped`], and a
/// byte that is not UTF-8 is an error naming its line and column.
pub fn read_text(path: &Path, what: &str) -> anyhow::Result<String> {
    let bytes = read_capped(path, what, MAX_TEXT_FILE)?;
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..bad].iter().filter(|&&b| b == b'\n').count() + 1;
        let start = bytes[..bad]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&bytes[start..bad]).chars().count() + 1;
        UserError::new(
            format!(
                "{}:{line}:{column}: not UTF-8 text (byte 0x{:02x})",
                path.display(),
                bytes[bad]
            ),
            format!("save the {what} as UTF-8"),
        )
        .into()
    })
}

/// Every file of `dir` whose name ends in `.yml` or `.yaml`, by name, with its text (each read
/// as [`read_text`] reads a `what`).
pub fn read_yaml_dir(dir: &Path, what: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {what} directory '{}'", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| Ok((f.display().to_string(), read_text(f, what)?)))
        .collect()
}
