//! Key dumps as the commands open them: files (read through memory maps by the parallel
//! reader) or standard input, sniffed for RDB snapshots, with their names, sizes and progress
//! counting. Read errors name the dump.

use crate::error::UserError;
use crate::keys::parallel::{ChunkSink, par_read, par_read_file};
use crate::keys::{ReadError, ReadOptions, ReadSummary, Record};
use anyhow::Context as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// How many of the biggest keys a snapshot read keeps (reports show `--top` of them).
pub const TOP_KEYS: usize = 100;

/// How the reader's options read a snapshot.
fn rdb_settings(opts: &ReadOptions) -> crate::rdb::read::Settings {
    crate::rdb::read::Settings {
        top: TOP_KEYS,
        list_compress_depth: opts.list_compress_depth,
        server: opts.server,
        slot_biggest: opts.slot_biggest,
    }
}

/// An opened key dump.
pub struct Input {
    /// What reports call it: its path, or `<stdin>` for `-`.
    pub name: String,
    source: Source,
}

enum Source {
    /// Standard input.
    Stdin(io::Stdin),
    /// A file (regular files are read through memory maps by the parallel reader).
    File(File),
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

impl Input {
    /// What the input holds: a snapshot (sniffed by its magic unless `opts` names the
    /// format), or lines (an error when `opts` asks for a snapshot).
    fn content(self, opts: &ReadOptions) -> Result<Content, ReadError> {
        use crate::keys::InputFormat;
        use std::io::BufRead;
        let want_rdb = opts.format == InputFormat::Rdb;
        let auto = opts.format == InputFormat::Auto;
        let may_rdb = want_rdb || auto;
        let content = match self.source {
            Source::Stdin(s) => {
                let mut s = io::BufReader::with_capacity(1 << 20, s);
                if may_rdb && crate::rdb::sniff(s.fill_buf()?).is_some() {
                    let mut data = Vec::new();
                    s.read_to_end(&mut data)?;
                    Content::Snapshot(crate::rdb::read::Mapped::Owned(data))
                } else {
                    if auto && let Some(e) = crate::keys::sniff::not_a_dump(s.fill_buf()?, false) {
                        return Err(e.into());
                    }
                    Content::Stdin(s)
                }
            }
            Source::File(f) => {
                if may_rdb && crate::rdb::read::is_snapshot(&f) {
                    Content::Snapshot(crate::rdb::read::Mapped::open(&f)?)
                } else {
                    if auto && let Some(e) = sniff_file(&f) {
                        return Err(e.into());
                    }
                    Content::File(f)
                }
            }
        };
        if want_rdb && !matches!(content, Content::Snapshot(_)) {
            return Err(ReadError::NotSnapshot);
        }
        Ok(content)
    }

    /// Reads the whole dump (or snapshot) on `sinks.len()` threads.
    pub fn par_read<S: ChunkSink>(
        self,
        opts: &ReadOptions,
        sinks: &mut [S],
        progress: Option<&AtomicU64>,
    ) -> anyhow::Result<ReadSummary> {
        let name = self.name.clone();
        let read = match self.content(opts) {
            Ok(Content::Snapshot(data)) => {
                crate::rdb::read::par_read_data(data, &name, sinks, progress, &rdb_settings(opts))
            }
            Ok(Content::Stdin(s)) => par_read(s, opts, sinks, progress),
            Ok(Content::File(f)) => par_read_file(&f, opts, sinks, progress),
            Err(e) => Err(e),
        };
        read.map_err(|e| read_context(&name, e))
    }

    /// Reads lines on `sinks.len()` threads (sinks that place what they find by line get
    /// each chunk's number, lines and line count), or a snapshot on this thread through `f`
    /// (its keys numbered by position). Returns the summary and whether `f` was used.
    pub fn par_read_lines<S: ChunkSink>(
        self,
        opts: &ReadOptions,
        sinks: &mut [S],
        progress: &AtomicU64,
        f: impl FnMut(u64, &Record<'_>),
    ) -> anyhow::Result<(ReadSummary, bool)> {
        let name = self.name.clone();
        let read = match self.content(opts) {
            Ok(Content::Snapshot(data)) => {
                crate::rdb::read::for_each(data, &name, Some(progress), &rdb_settings(opts), f)
                    .map(|s| (s, true))
            }
            Ok(Content::Stdin(s)) => par_read(s, opts, sinks, Some(progress)).map(|s| (s, false)),
            Ok(Content::File(file)) => {
                par_read_file(&file, opts, sinks, Some(progress)).map(|s| (s, false))
            }
            Err(e) => Err(e),
        };
        read.map_err(|e| read_context(&name, e))
    }

    /// Calls `f` with every key in order, on this thread (the number is the line, or for a
    /// snapshot the key's position). `progress` advances by the bytes read.
    pub fn for_each(
        self,
        opts: &ReadOptions,
        progress: &AtomicU64,
        f: impl FnMut(u64, &Record<'_>),
    ) -> anyhow::Result<ReadSummary> {
        let name = self.name.clone();
        let read = match self.content(opts) {
            Ok(Content::Snapshot(data)) => {
                crate::rdb::read::for_each(data, &name, Some(progress), &rdb_settings(opts), f)
            }
            Ok(Content::Stdin(s)) => {
                crate::keys::for_each_record(Counted::new(s, progress), opts, f)
            }
            Ok(Content::File(file)) => {
                crate::keys::for_each_record(Counted::new(file, progress), opts, f)
            }
            Err(e) => Err(e),
        };
        read.map_err(|e| read_context(&name, e))
    }

    /// The size of the input in bytes, when known (regular files).
    pub fn file_size(&self) -> Option<u64> {
        match &self.source {
            Source::File(f) => f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()),
            Source::Stdin(_) => None,
        }
    }
}

/// Whether a regular file's first bytes say it is not a key dump (a pipe is not peeked at:
/// what is read from it is gone).
fn sniff_file(f: &File) -> Option<crate::keys::sniff::NotADump> {
    use crate::keys::sniff::{SNIFF_BYTES, not_a_dump};
    let len = f.metadata().ok().filter(|m| m.is_file())?.len();
    let mut head = vec![0u8; SNIFF_BYTES.min(usize::try_from(len).unwrap_or(SNIFF_BYTES))];
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let mut got = 0;
        while got < head.len() {
            match f.read_at(&mut head[got..], got as u64) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        head.truncate(got);
    }
    #[cfg(not(unix))]
    {
        return None;
    }
    not_a_dump(&head, len <= SNIFF_BYTES as u64)
}

/// Opens a key dump; `-` is standard input.
pub fn open_input(path: &Path) -> anyhow::Result<Input> {
    if path.as_os_str() == "-" {
        let name = "<stdin>".to_string();
        // `keyplan … --keys - < dump` gets the fast file path too.
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            if let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() {
                let f = File::from(fd);
                if f.metadata().is_ok_and(|m| m.is_file()) {
                    let source = Source::File(f);
                    return Ok(Input { name, source });
                }
                crate::keys::pipe::widen(&f);
            }
        }
        let source = Source::Stdin(io::stdin());
        return Ok(Input { name, source });
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
    Ok(Input {
        name: path.display().to_string(),
        source: Source::File(f),
    })
}

/// The RDB snapshot at `path`, mapped into memory to be parsed key by key; errors name it.
pub fn open_snapshot(path: &Path) -> anyhow::Result<crate::rdb::read::Mapped> {
    let name = path.display();
    let file = File::open(path).with_context(|| {
        format!("cannot open snapshot '{name}' (check the path and its permissions)")
    })?;
    crate::rdb::read::Mapped::open(&file).with_context(|| format!("cannot read snapshot '{name}'"))
}

/// Adds the dump's name to a read error.
fn read_context(file: &str, e: ReadError) -> anyhow::Error {
    match e {
        ReadError::Io(io) => anyhow::Error::new(io).context(format!("reading key dump {file}")),
        other => anyhow::Error::new(other).context(format!("in key dump {file}")),
    }
}

/// The total size of the inputs in bytes, when every one is a regular file.
pub fn total_size(inputs: &[Input]) -> Option<u64> {
    inputs.iter().map(|i| i.file_size()).sum()
}

/// A reader that adds the bytes it reads to a progress counter.
struct Counted<'a, R> {
    inner: R,
    counter: &'a AtomicU64,
}

impl<'a, R> Counted<'a, R> {
    fn new(inner: R, counter: &'a AtomicU64) -> Self {
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

/// Opens every dump up front (so a bad path fails before anything is read); `-` may appear
/// once.
pub fn open_all(files: &[PathBuf]) -> anyhow::Result<Vec<Input>> {
    if files.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(UserError::new(
            "--keys - is given more than once",
            "standard input can be read only once; name it once",
        )
        .into());
    }
    files.iter().map(|p| open_input(p)).collect()
}
