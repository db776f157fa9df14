//! `redis-cli MONITOR` captures, streamed from their files a line at a time.

use crate::error::UserError;
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// The longest line a MONITOR capture may hold (a command with its arguments, escaped).
pub const MAX_CAPTURE_LINE: usize = 256 << 20;

/// A `redis-cli MONITOR` capture read a line at a time: its batches, one after another, as the
/// parser completes them. Memory stays that of one line and the open MULTI blocks, whatever
/// the size of the capture.
pub struct MonitorFile {
    path: PathBuf,
    reader: std::io::BufReader<std::fs::File>,
    parser: crate::simulate::monitor::MonitorParser,
    line: usize,
    buf: Vec<u8>,
    stats: Option<crate::simulate::monitor::MonitorStats>,
}

impl MonitorFile {
    /// Opens the capture at `path`.
    pub fn open(path: &Path) -> anyhow::Result<MonitorFile> {
        let f = std::fs::File::open(path)
            .with_context(|| format!("cannot read MONITOR capture '{}'", path.display()))?;
        Ok(MonitorFile {
            path: path.to_path_buf(),
            reader: std::io::BufReader::with_capacity(1 << 16, f),
            parser: Default::default(),
            line: 0,
            buf: Vec::new(),
            stats: None,
        })
    }

    /// Where the capture is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the capture held besides its batches, once every batch has been taken.
    pub fn stats(&self) -> Option<&crate::simulate::monitor::MonitorStats> {
        self.stats.as_ref()
    }

    /// Reads the next line into `buf` (without its `\n`); false at the end of the file.
    fn read_line(&mut self) -> anyhow::Result<bool> {
        use std::io::BufRead as _;
        self.buf.clear();
        loop {
            let chunk = self.reader.fill_buf().with_context(|| {
                format!("cannot read MONITOR capture '{}'", self.path.display())
            })?;
            if chunk.is_empty() {
                return Ok(!self.buf.is_empty());
            }
            let (take, end) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if self.buf.len() + take > MAX_CAPTURE_LINE {
                return Err(UserError::new(
                    format!(
                        "{}: line {} is longer than {} MiB",
                        self.path.display(),
                        self.line + 1,
                        MAX_CAPTURE_LINE >> 20
                    ),
                    "check the path: a MONITOR capture has one command a line",
                )
                .into());
            }
            self.buf.extend_from_slice(&chunk[..take]);
            self.reader.consume(take + usize::from(end));
            if end {
                return Ok(true);
            }
        }
    }

    fn located(&self, e: crate::simulate::batch::BatchError) -> anyhow::Error {
        UserError::new(
            format!("{}: {e}", self.path.display()),
            "capture with `redis-cli MONITOR > capture.txt` (one command a line)",
        )
        .into()
    }
}

impl Iterator for MonitorFile {
    type Item = anyhow::Result<crate::simulate::Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(b) = self.parser.next_batch() {
                return Some(Ok(b));
            }
            if self.stats.is_some() {
                return None;
            }
            match self.read_line() {
                Err(e) => {
                    self.stats = Some(Default::default());
                    return Some(Err(e));
                }
                Ok(false) => self.stats = Some(self.parser.finish()),
                Ok(true) => {
                    self.line += 1;
                    let text = String::from_utf8_lossy(&self.buf);
                    if let Err(e) = self.parser.line(self.line, &text) {
                        let e = self.located(e);
                        self.stats = Some(Default::default());
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}
