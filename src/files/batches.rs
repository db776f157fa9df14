//! Batch files (`--batches`: one batch a line), streamed a line at a time with their bounds:
//! at most [`MAX_TEXT_FILE`] bytes in all and [`MAX_BATCH_LINE`] bytes a line. The bounds are
//! held by the read itself, so a file without a size (`/dev/zero`, a FIFO, a pipe) is refused
//! at them instead of memory running out.

use super::text::MAX_TEXT_FILE;
use crate::error::UserError;
use crate::simulate::Batch;
use std::io::{BufRead as _, Read as _};
use std::path::{Path, PathBuf};

/// The longest line a batch file may hold: one batch (an MGET of a million 15-byte keys fits).
pub const MAX_BATCH_LINE: usize = 16 << 20;

/// A batch file read a line at a time: memory of one line and one batch, whatever the file's
/// length, and no more than [`MAX_TEXT_FILE`] bytes read from it.
pub struct BatchFile {
    path: PathBuf,
    reader: std::io::BufReader<std::io::Take<std::fs::File>>,
    /// The line last read (1-based).
    line: usize,
    /// Bytes read so far.
    read: u64,
    buf: Vec<u8>,
    /// An error was returned: nothing more is read.
    failed: bool,
}

fn too_big(path: &Path) -> anyhow::Error {
    UserError::new(
        format!(
            "batch file '{}' is larger than {} MiB",
            path.display(),
            MAX_TEXT_FILE >> 20
        ),
        "check the path: a batch file has one batch a line (for a longer workload, capture it with `redis-cli MONITOR` and pass --monitor, which has no such bound)",
    )
    .into()
}

impl BatchFile {
    /// Opens the batch file at `path` (a regular file over the bound is refused at once).
    pub fn open(path: &Path) -> anyhow::Result<BatchFile> {
        let f = std::fs::File::open(path).map_err(|e| {
            UserError::new(
                format!("cannot open batch file '{}': {e}", path.display()),
                "check the path and its permissions",
            )
        })?;
        if f.metadata()
            .is_ok_and(|m| m.is_file() && m.len() > MAX_TEXT_FILE)
        {
            return Err(too_big(path));
        }
        Ok(BatchFile {
            path: path.to_path_buf(),
            // One byte past the bound, so that a longer input is seen to be longer.
            reader: std::io::BufReader::with_capacity(1 << 16, f.take(MAX_TEXT_FILE + 1)),
            line: 0,
            read: 0,
            buf: Vec::new(),
            failed: false,
        })
    }

    /// Reads the next line into `buf` (without its line end); false at the end of the file.
    fn read_line(&mut self) -> anyhow::Result<bool> {
        self.buf.clear();
        loop {
            let chunk = self.reader.fill_buf().map_err(|e| {
                UserError::new(
                    format!("cannot read batch file '{}': {e}", self.path.display()),
                    "check the path and its permissions",
                )
            })?;
            if chunk.is_empty() {
                if self.read > MAX_TEXT_FILE {
                    return Err(too_big(&self.path));
                }
                return Ok(!self.buf.is_empty());
            }
            let (take, end) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if self.buf.len() + take > MAX_BATCH_LINE {
                return Err(UserError::new(
                    format!(
                        "{}: line {} is longer than {} MiB",
                        self.path.display(),
                        self.line + 1,
                        MAX_BATCH_LINE >> 20
                    ),
                    "a batch file has one batch a line: split the batch, or check the path",
                )
                .into());
            }
            self.buf.extend_from_slice(&chunk[..take]);
            let used = take + usize::from(end);
            self.reader.consume(used);
            self.read += used as u64;
            if self.read > MAX_TEXT_FILE {
                return Err(too_big(&self.path));
            }
            if end {
                return Ok(true);
            }
        }
    }

    fn next_batch(&mut self) -> anyhow::Result<Option<Batch>> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            self.line += 1;
            let bytes = self.buf.strip_suffix(b"\r").unwrap_or(&self.buf);
            let text = std::str::from_utf8(bytes).map_err(|e| {
                let bad = e.valid_up_to();
                let column = String::from_utf8_lossy(&bytes[..bad]).chars().count() + 1;
                UserError::new(
                    format!(
                        "{}:{}:{column}: not UTF-8 text (byte 0x{:02x})",
                        self.path.display(),
                        self.line,
                        bytes[bad]
                    ),
                    "a batch file is text, one batch a line: save it as UTF-8",
                )
            })?;
            match crate::simulate::batch::parse_batch_line(text, self.line) {
                Ok(Some(b)) => return Ok(Some(b)),
                Ok(None) => continue,
                Err(e) => return Err(anyhow::anyhow!("{}: {e}", self.path.display())),
            }
        }
    }
}

impl Iterator for BatchFile {
    type Item = anyhow::Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_batch();
        self.failed = next.is_err();
        next.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batches(bytes: &[u8]) -> (Vec<String>, Option<String>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.txt");
        std::fs::write(&p, bytes).unwrap();
        let mut names = Vec::new();
        for b in BatchFile::open(&p).unwrap() {
            match b {
                Ok(b) => names.push(b.name),
                Err(e) => return (names, Some(e.to_string())),
            }
        }
        (names, None)
    }

    #[test]
    fn lines_comments_and_crlf() {
        let (names, err) = batches(b"# c\r\nMGET a b\r\n\r\nPIPELINE GET a; GET b");
        assert_eq!(err, None);
        assert_eq!(names, ["line 2: MGET a b", "line 4: PIPELINE GET a; GET b"]);
    }

    #[test]
    fn a_line_past_the_bound_is_an_error_naming_it() {
        let mut text = b"MGET a b\n".to_vec();
        text.extend(std::iter::repeat_n(b'a', MAX_BATCH_LINE + 1));
        let (names, err) = batches(&text);
        assert_eq!(names, ["line 1: MGET a b"]);
        let err = err.unwrap();
        assert!(
            err.ends_with("b.txt: line 2 is longer than 16 MiB"),
            "{err}"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_named_by_line_and_column() {
        let (_, err) = batches(b"MGET a b\nMGET \xff c\n");
        assert!(
            err.unwrap()
                .ends_with("b.txt:2:6: not UTF-8 text (byte 0xff)")
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_input_without_a_size_is_held_to_the_bound() {
        // /dev/zero: one line of NUL bytes that never ends.
        let mut f = BatchFile::open(Path::new("/dev/zero")).unwrap();
        let err = f.next().unwrap().unwrap_err().to_string();
        assert_eq!(err, "/dev/zero: line 1 is longer than 16 MiB");
        assert!(f.next().is_none());
        // A FIFO-like input of many short lines: the total bound holds.
        let (r, mut w) = std::io::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            use std::io::Write as _;
            let line = b"# a comment line of some length, repeated past the bound\n";
            while w.write_all(line).is_ok() {}
        });
        let path = format!("/dev/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&r));
        let err = BatchFile::open(Path::new(&path))
            .unwrap()
            .find_map(Result::err)
            .unwrap()
            .to_string();
        assert!(err.ends_with("is larger than 64 MiB"), "{err}");
        drop(r);
        writer.join().unwrap();
    }
}
