//! Key dumps as the commands open them: files (read through memory maps by the parallel
//! reader) or standard input, with their names, sizes, progress counting and malformed lines.

use super::Ctx;
use crate::error::UserError;
use crate::keys::parallel::{ChunkSink, par_read, par_read_file};
use crate::keys::{ReadError, ReadOptions, ReadSummary};
use crate::report::slot::MalformedLine;
use anyhow::Context as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// How many of the biggest keys a snapshot read keeps (reports show `--top` of them).
pub const TOP_KEYS: usize = 100;

/// The name a dump is reported under: its path, or `<stdin>` for `-`.
pub fn input_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// An opened key dump.
pub enum Input {
    /// Standard input.
    Stdin(io::Stdin),
    /// A file (regular files are read through memory maps by the parallel reader).
    File(File),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Stdin(s) => s.read(buf),
            Input::File(f) => f.read(buf),
        }
    }
}

impl Input {
    /// What the input holds: a snapshot (sniffed by its magic unless `opts` names the
    /// format), or lines (an error when `opts` asks for a snapshot).
    fn content(self, opts: &ReadOptions) -> Result<Content, ReadError> {
        use crate::keys::InputFormat;
        use std::io::BufRead;
        let want_rdb = opts.format == InputFormat::Rdb;
        let may_rdb = want_rdb || opts.format == InputFormat::Auto;
        let content = match self {
            Input::Stdin(s) => {
                let mut s = io::BufReader::with_capacity(1 << 20, s);
                if may_rdb && crate::rdb::sniff(s.fill_buf()?).is_some() {
                    let mut data = Vec::new();
                    s.read_to_end(&mut data)?;
                    Content::Snapshot(crate::rdb::read::Mapped::Owned(data))
                } else {
                    Content::Stdin(s)
                }
            }
            Input::File(f) => {
                if may_rdb && crate::rdb::read::is_snapshot(&f) {
                    Content::Snapshot(crate::rdb::read::Mapped::open(&f)?)
                } else {
                    Content::File(f)
                }
            }
        };
        if want_rdb && !matches!(content, Content::Snapshot(_)) {
            return Err(ReadError::NotSnapshot);
        }
        Ok(content)
    }

    /// Reads the whole dump (or snapshot) on `sinks.len()` threads; `name` is what reports
    /// call it.
    pub fn par_read<S: ChunkSink>(
        self,
        name: &str,
        opts: &ReadOptions,
        sinks: &mut [S],
        progress: Option<&AtomicU64>,
    ) -> Result<ReadSummary, ReadError> {
        match self.content(opts)? {
            Content::Snapshot(data) => {
                crate::rdb::read::par_read_data(data, name, sinks, progress, TOP_KEYS)
            }
            Content::Stdin(s) => par_read(s, opts, sinks, progress),
            Content::File(f) => par_read_file(&f, opts, sinks, progress),
        }
    }

    /// Calls `f` with every key in order, on this thread (the number is the line, or for a
    /// snapshot the key's position). `progress` advances by the bytes read.
    pub fn for_each(
        self,
        name: &str,
        opts: &ReadOptions,
        progress: &AtomicU64,
        f: impl FnMut(u64, &crate::keys::Record<'_>),
    ) -> Result<ReadSummary, ReadError> {
        match self.content(opts)? {
            Content::Snapshot(data) => {
                crate::rdb::read::for_each(data, name, Some(progress), TOP_KEYS, f)
            }
            Content::Stdin(s) => crate::keys::for_each_record(Counted::new(s, progress), opts, f),
            Content::File(file) => {
                crate::keys::for_each_record(Counted::new(Input::File(file), progress), opts, f)
            }
        }
    }

    /// The size of the input in bytes, when known (regular files).
    pub fn file_size(&self) -> Option<u64> {
        match self {
            Input::File(f) => f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()),
            Input::Stdin(_) => None,
        }
    }
}

/// An input once its first bytes are read.
enum Content {
    /// A snapshot, mapped (a file) or read whole (standard input).
    Snapshot(crate::rdb::read::Mapped),
    /// Lines on standard input (the bytes sniffed still buffered).
    Stdin(io::BufReader<io::Stdin>),
    /// Lines in a file.
    File(File),
}

/// Opens a key dump; `-` is standard input.
pub fn open_input(path: &PathBuf) -> anyhow::Result<Input> {
    if path.as_os_str() == "-" {
        // `keyplan … --keys - < dump` gets the fast file path too.
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            if let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() {
                let f = File::from(fd);
                if f.metadata().is_ok_and(|m| m.is_file()) {
                    return Ok(Input::File(f));
                }
                crate::keys::pipe::widen(&f);
            }
        }
        return Ok(Input::Stdin(io::stdin()));
    }
    if path.is_dir() {
        anyhow::bail!(
            "cannot read key dump '{}': it is a directory; pass a file, or '-' for stdin",
            path.display()
        );
    }
    let f = File::open(path).with_context(|| {
        format!(
            "cannot open key dump '{}' (check the path and its permissions)",
            path.display()
        )
    })?;
    crate::keys::pipe::widen(&f); // `<(redis-cli --scan)` is a pipe too
    Ok(Input::File(f))
}

/// The malformed lines of a summary, for JSON reports.
pub fn malformed_of(file: &str, s: &ReadSummary) -> Vec<MalformedLine> {
    s.malformed_lines
        .iter()
        .map(|e| MalformedLine {
            file: file.to_string(),
            line: e.line,
            column: e.column,
            message: e.message.clone(),
        })
        .collect()
}

/// Reports skipped lines on stderr once, at the end.
pub fn warn_malformed(ctx: &mut Ctx<'_>, file: &str, s: &ReadSummary) -> std::io::Result<()> {
    if s.malformed == 0 {
        return Ok(());
    }
    writeln!(
        ctx.stderr,
        "warning: {file}: skipped {} malformed line(s) of {} (--strict makes them fatal):",
        s.malformed, s.lines
    )?;
    for e in &s.malformed_lines {
        writeln!(
            ctx.stderr,
            "  {file}:{}:{}: {}",
            e.line, e.column, e.message
        )?;
    }
    if s.malformed > s.malformed_lines.len() as u64 {
        writeln!(
            ctx.stderr,
            "  … and {} more",
            s.malformed - s.malformed_lines.len() as u64
        )?;
    }
    Ok(())
}

/// Adds the dump's name to a read error.
pub fn read_context(file: &str, e: ReadError) -> anyhow::Error {
    match e {
        ReadError::Io(io) => anyhow::Error::new(io).context(format!("reading key dump {file}")),
        other => anyhow::Error::new(other).context(format!("in key dump {file}")),
    }
}

/// The total size of the inputs in bytes, when every one is a regular file.
pub fn total_size(inputs: &[(String, Input)]) -> Option<u64> {
    inputs.iter().map(|(_, i)| i.file_size()).sum()
}

/// A reader that adds the bytes it reads to a progress counter.
pub struct Counted<'a, R> {
    inner: R,
    counter: &'a AtomicU64,
}

impl<'a, R> Counted<'a, R> {
    /// `inner`, counted into `counter`.
    pub fn new(inner: R, counter: &'a AtomicU64) -> Self {
        Counted { inner, counter }
    }
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens every dump up front; `-` may appear once.
pub fn open_all(files: &[PathBuf]) -> anyhow::Result<Vec<(String, Input)>> {
    if files.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(UserError::new(
            "--keys - is given more than once",
            "standard input can be read only once; name it once",
        )
        .into());
    }
    files
        .iter()
        .map(|p| Ok((input_name(p), open_input(p)?)))
        .collect()
}

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
