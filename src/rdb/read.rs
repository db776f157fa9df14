//! Reading a snapshot file into the per-thread sinks the key-dump readers feed: one thread
//! walks the snapshot (through a memory map, values skipped in place) and hands batches of
//! keys with their memory and expiry to the workers, batch `i` to worker `i % workers`, so each
//! sink sees the same keys in the same order on every run.

use super::summary::{SnapshotFile, SnapshotSummary};
use super::{Parser, RdbError};
use crate::keys::mapped::{map_window, release};
use crate::keys::parallel::ChunkSink;
use crate::keys::{DumpFormat, ReadError, ReadSummary, Record};
use memmap2::Mmap;
use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// A snapshot's bytes: mapped when the file can be mapped, read into memory otherwise.
pub enum Mapped {
    /// A read-only map of the whole file.
    Map(Mmap),
    /// The bytes, read (a pipe or a special file).
    Owned(Vec<u8>),
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Mapped::Map(m) => m,
            Mapped::Owned(v) => v,
        }
    }
}

impl Mapped {
    /// Maps `file` from its current offset (or reads it when it cannot be mapped).
    pub fn open(file: &File) -> std::io::Result<Mapped> {
        use std::io::Seek;
        let meta = file.metadata()?;
        let mut f = file;
        let start = f.stream_position().unwrap_or(0);
        if meta.is_file()
            && meta.len() > start
            && usize::try_from(meta.len()).is_ok()
            && let Ok(m) = map_window(file, start, (meta.len() - start) as usize)
        {
            return Ok(Mapped::Map(m));
        }
        let mut v = Vec::new();
        f.read_to_end(&mut v)?;
        Ok(Mapped::Owned(v))
    }

    /// Drops the pages of `range` from this process once read (maps only).
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let Mapped::Map(m) = self {
            release(m, range);
        }
    }

    /// Drops the pages before `pos` once 64 MiB more have been read since `released`, so a
    /// walk through the file keeps resident memory flat.
    pub fn release_behind(&self, pos: u64, released: &mut usize) {
        let pos = pos as usize;
        if pos.saturating_sub(*released) >= RELEASE_EVERY {
            let upto = pos & !4095;
            self.release(*released..upto);
            *released = upto;
        }
    }
}

/// Whether the bytes at the start of `file` are a snapshot's (the file offset is kept).
pub fn is_snapshot(file: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 9];
    let meta = file.metadata();
    if !meta.is_ok_and(|m| m.is_file()) {
        return false;
    }
    let start = {
        use std::io::Seek;
        let mut f = file;
        f.stream_position().unwrap_or(0)
    };
    file.read_exact_at(&mut head, start).is_ok() && super::sniff(&head).is_some()
}

struct Batch {
    seq: u64,
    keys: Vec<u8>,
    entries: Vec<(u32, u32, u64, bool)>,
}

const BATCH_KEYS: usize = 4096;
const RELEASE_EVERY: usize = 64 << 20;

/// How a snapshot is read.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How many of the biggest keys the summary keeps.
    pub top: usize,
    /// The `list-compress-depth` of the server the memory estimate is for.
    pub list_compress_depth: u32,
}

impl Settings {
    fn parser<'a>(&self, data: &'a [u8]) -> Result<Parser<'a>, ReadError> {
        let mut parser = Parser::new(data).map_err(ReadError::Rdb)?;
        parser.set_list_compress_depth(self.list_compress_depth);
        Ok(parser)
    }
}

/// Reads the snapshot in `file` (named `name` in reports) into `sinks`, keeping the `top`
/// biggest keys. `progress` advances by the bytes walked.
pub fn par_read<S: ChunkSink>(
    file: &File,
    name: &str,
    sinks: &mut [S],
    progress: Option<&AtomicU64>,
    settings: &Settings,
) -> Result<ReadSummary, ReadError> {
    par_read_data(Mapped::open(file)?, name, sinks, progress, settings)
}

/// [`par_read`] over bytes already in hand.
pub fn par_read_data<S: ChunkSink>(
    data: Mapped,
    name: &str,
    sinks: &mut [S],
    progress: Option<&AtomicU64>,
    settings: &Settings,
) -> Result<ReadSummary, ReadError> {
    assert!(
        !sinks.is_empty(),
        "rdb::read::par_read needs at least one sink"
    );
    let mut parser = settings.parser(&data)?;
    let mut snapshot = SnapshotSummary::new(settings.top);
    let workers = sinks.len();
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..workers).map(|_| mpsc::sync_channel::<Batch>(4)).unzip();
    let (free_tx, free_rx) = mpsc::channel::<Batch>();
    let mut keys = 0u64;
    let result: Result<(), RdbError> = std::thread::scope(|scope| {
        for (sink, rx) in sinks.iter_mut().zip(rxs) {
            let free_tx = free_tx.clone();
            scope.spawn(move || {
                for batch in rx {
                    for &(a, b, memory, expires) in &batch.entries {
                        sink.record(&Record {
                            key: &batch.keys[a as usize..b as usize],
                            bytes: Some(memory),
                            ops: None,
                            expires: Some(expires),
                        });
                    }
                    let _ = free_tx.send(batch);
                }
            });
        }
        let mut seq = 0u64;
        let mut reported = 0u64;
        let mut released = 0usize;
        let mut batch = new_batch(seq);
        let send = |batch: Batch, txs: &[mpsc::SyncSender<Batch>]| {
            let w = (batch.seq % workers as u64) as usize;
            let _ = txs[w].send(batch);
        };
        let outcome = loop {
            let k = match parser.next_key() {
                Ok(Some(k)) => k,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            snapshot.add(&k, name);
            let a = batch.keys.len();
            batch.keys.extend_from_slice(k.key);
            let b = batch.keys.len();
            let (Ok(a), Ok(b)) = (u32::try_from(a), u32::try_from(b)) else {
                break Err(RdbError {
                    offset: k.offset,
                    message: "a key longer than 4 GiB".into(),
                });
            };
            batch
                .entries
                .push((a, b, k.memory, k.expires_at_ms.is_some()));
            keys += 1;
            if batch.entries.len() >= BATCH_KEYS || batch.keys.len() >= 1 << 20 {
                seq += 1;
                let mut next = free_rx.try_recv().unwrap_or_else(|_| new_batch(seq));
                next.seq = seq;
                next.keys.clear();
                next.entries.clear();
                send(std::mem::replace(&mut batch, next), &txs);
                let pos = parser.position();
                if let Some(p) = progress {
                    p.fetch_add(pos - reported, Ordering::Relaxed);
                }
                reported = pos;
                data.release_behind(pos, &mut released);
            }
        };
        if !batch.entries.is_empty() {
            send(batch, &txs);
        }
        if let Some(p) = progress {
            p.fetch_add(parser.position() - reported, Ordering::Relaxed);
        }
        drop(txs);
        outcome
    });
    result.map_err(ReadError::Rdb)?;
    Ok(finished(&parser, name, keys, snapshot))
}

fn new_batch(seq: u64) -> Batch {
    Batch {
        seq,
        keys: Vec::with_capacity(64 << 10),
        entries: Vec::with_capacity(BATCH_KEYS),
    }
}

/// Calls `f` with every key of a snapshot in file order (the number is the key's position,
/// 1-based, where a dump would give a line number), on this thread.
pub fn for_each(
    data: Mapped,
    name: &str,
    progress: Option<&AtomicU64>,
    settings: &Settings,
    mut f: impl FnMut(u64, &Record<'_>),
) -> Result<ReadSummary, ReadError> {
    let mut parser = settings.parser(&data)?;
    let mut snapshot = SnapshotSummary::new(settings.top);
    let mut keys = 0u64;
    let mut reported = 0u64;
    let mut released = 0usize;
    while let Some(k) = parser.next_key().map_err(ReadError::Rdb)? {
        snapshot.add(&k, name);
        keys += 1;
        f(
            keys,
            &Record {
                key: k.key,
                bytes: Some(k.memory),
                ops: None,
                expires: Some(k.expires_at_ms.is_some()),
            },
        );
        if keys.is_multiple_of(4096) {
            let pos = parser.position();
            if let Some(p) = progress {
                p.fetch_add(pos - reported, Ordering::Relaxed);
            }
            reported = pos;
            data.release_behind(pos, &mut released);
        }
    }
    if let Some(p) = progress {
        p.fetch_add(parser.position() - reported, Ordering::Relaxed);
    }
    Ok(finished(&parser, name, keys, snapshot))
}

/// What reading one snapshot of `keys` keys gives: the summary with this file's entry.
fn finished(
    parser: &Parser<'_>,
    name: &str,
    keys: u64,
    mut snapshot: SnapshotSummary,
) -> ReadSummary {
    snapshot.files.push(file_entry(parser, name, keys));
    ReadSummary {
        format: Some(DumpFormat::Rdb),
        lines: keys,
        keys,
        snapshot: Some(Box::new(snapshot)),
        ..ReadSummary::default()
    }
}

fn file_entry(parser: &Parser<'_>, name: &str, keys: u64) -> SnapshotFile {
    let server = parser
        .aux()
        .iter()
        .find(|(k, _)| k == b"valkey-ver")
        .or_else(|| parser.aux().iter().find(|(k, _)| k == b"redis-ver"))
        .map(|(k, v)| {
            let family = if k == b"valkey-ver" {
                "valkey"
            } else {
                "redis"
            };
            format!("{family} {}", String::from_utf8_lossy(v))
        });
    SnapshotFile {
        file: name.to_string(),
        magic: parser.magic(),
        rdb_version: parser.version(),
        server,
        keys,
        uninterpreted: parser.uninterpreted(),
        functions: parser.functions(),
        bytes: parser.position(),
    }
}
