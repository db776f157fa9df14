//! Reading a snapshot file into the per-thread sinks the key-dump readers feed: one thread
//! walks the snapshot (through a memory map, values skipped in place) and hands batches of
//! keys with their memory and expiry to the workers, batch `i` to worker `i % workers`, so each
//! sink sees the same keys in the same order on every run.

use super::summary::{SnapshotFile, SnapshotSummary};
use super::{Checkpoint, Parser, RdbError};
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

/// Whether the bytes at the start of `file` are a snapshot's, or a damaged snapshot's (see
/// [`super::sniff`]; the file offset is kept).
pub fn is_snapshot(file: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; super::SNIFF_HEAD];
    let meta = file.metadata();
    if !meta.is_ok_and(|m| m.is_file()) {
        return false;
    }
    let start = {
        use std::io::Seek;
        let mut f = file;
        f.stream_position().unwrap_or(0)
    };
    // A file shorter than the head is read as far as it goes.
    let mut got = 0;
    while got < head.len() {
        match file.read_at(&mut head[got..], start + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    super::sniff(&head[..got]).is_some()
}

/// A run of consecutive keys of the snapshot: where it starts (after the previous run's last
/// value) and how many keys it holds.
#[derive(Debug, Clone, Copy)]
struct Span {
    seq: u64,
    from: Checkpoint,
    keys: u32,
    end: usize,
}

/// A span closes at this many keys, or once its keys take 1 MiB.
const BATCH_KEYS: u32 = 4096;
const BATCH_KEY_BYTES: u64 = 1 << 20;
const RELEASE_EVERY: usize = 64 << 20;
/// How far ahead of its position the walk asks for the file's bytes. The walk is the first to
/// touch each line of the file, and without this its loads of a record's type byte and a
/// key's length waited on memory for most of its time; two kilobytes is some 40 small keys
/// ahead, far enough for the line to arrive and near enough to stay within the pages the
/// kernel mapped at the last fault (a prefetch of an unmapped page does nothing).
const WALK_AHEAD: usize = 2048;

/// How a snapshot is read.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How many of the biggest keys the summary keeps.
    pub top: usize,
    /// The `list-compress-depth` of the server the memory estimate is for.
    pub list_compress_depth: u32,
    /// The server whose memory layout the estimate follows (`None`: the one the snapshot
    /// names).
    pub server: Option<super::memory::Server>,
    /// Whether the summary keeps each slot's biggest key.
    pub slot_biggest: bool,
}

impl Settings {
    fn parser<'a>(&self, data: &'a [u8]) -> Result<Parser<'a>, ReadError> {
        let mut parser = Parser::new(data).map_err(|e| ReadError::Rdb(*e))?;
        parser.set_list_compress_depth(self.list_compress_depth);
        if let Some(server) = self.server {
            parser.set_server(server);
        }
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

/// What one worker found in its spans.
struct Part {
    snapshot: SnapshotSummary,
    uninterpreted: u64,
    error: Option<Box<RdbError>>,
}

/// [`par_read`] over bytes already in hand.
///
/// The snapshot is read in two passes at once. This thread walks it record by record only as
/// far as the lengths go (a string is its length and a jump; no key is copied, nothing is
/// decompressed or estimated) and cuts it into spans of consecutive keys, each with the state
/// a parser needs to start there (the database, and whether values embed their keys). The
/// workers parse their spans in full, span `i` on worker `i % workers`, so each sink sees the
/// same keys in the same order on every run, and each worker keeps its own summary of types,
/// memory and biggest keys, merged at the end as one reading in file order would keep them.
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
    let mut walker = settings.parser(&data)?;
    // What the workers resume from (the walker itself moves on).
    let template = walker.resume(walker.checkpoint());
    let workers = sinks.len();
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..workers).map(|_| mpsc::sync_channel::<Span>(16)).unzip();
    // How far each worker has parsed: the pages before the least of them can be let go.
    let done: Vec<AtomicU64> = (0..workers).map(|_| AtomicU64::new(0)).collect();
    let mut keys = 0u64;
    let (walked, parts): (Result<(), Box<RdbError>>, Vec<Part>) = std::thread::scope(|scope| {
        let handles: Vec<_> = sinks
            .iter_mut()
            .zip(rxs)
            .zip(&done)
            .map(|((sink, rx), done)| {
                let template = &template;
                let bytes: &[u8] = &data;
                scope.spawn(move || {
                    let mut part = Part {
                        snapshot: SnapshotSummary::new(settings.top, settings.slot_biggest),
                        uninterpreted: 0,
                        error: None,
                    };
                    for span in rx {
                        if part.error.is_some() {
                            continue;
                        }
                        let mut p = template.resume(span.from);
                        for _ in 0..span.keys {
                            let k = match p.next_key() {
                                Ok(Some(k)) => k,
                                // The walk counted a key here; both passes read the
                                // same bytes alike, so this is a fault of keyplan's, said
                                // as an error rather than a panic.
                                Ok(None) => {
                                    part.error = Some(Box::new(RdbError {
                                        offset: p.position(),
                                        message: "the full parse ended where the first pass \
                                                  read a key (please report this file)"
                                            .into(),
                                    }));
                                    break;
                                }
                                Err(e) => {
                                    part.error = Some(e);
                                    break;
                                }
                            };
                            // One placement for the summary and the sink.
                            let placed = place(bytes, k.key);
                            sink.expect(&placed);
                            part.snapshot.add_in_slot(&k, placed.slot, name);
                            sink.record(&Record {
                                key: k.key,
                                bytes: Some(k.memory),
                                ops: None,
                                expires: Some(k.expires_at_ms.is_some()),
                                placed: Some(placed),
                            });
                        }
                        part.uninterpreted += p.uninterpreted();
                        done.store(span.end as u64, Ordering::Release);
                    }
                    part
                })
            })
            .collect();
        let walked = walk(&mut walker, &txs, &done, &data, progress, &mut keys);
        drop(txs);
        let parts = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect();
        (walked, parts)
    });
    // The first error in file order: the workers only parse spans the walk closed, which lie
    // before any error the walk met.
    if let Some(e) = parts
        .iter()
        .filter_map(|p| p.error.clone())
        .min_by_key(|e| e.offset)
    {
        return Err(ReadError::Rdb(*e));
    }
    walked.map_err(|e| ReadError::Rdb(*e))?;
    let mut snapshot = SnapshotSummary::new(settings.top, settings.slot_biggest);
    let mut uninterpreted = 0;
    for p in parts {
        snapshot.merge_part(p.snapshot);
        uninterpreted += p.uninterpreted;
    }
    let mut summary = finished(&walker, name, keys, snapshot);
    if let Some(s) = summary.snapshot.as_mut() {
        for f in &mut s.files {
            f.uninterpreted = uninterpreted;
        }
    }
    Ok(summary)
}

/// The placement of `key`, a key the parser of `data` gave. A key stored as it is lies inside
/// `data` (a key in another buffer cannot: they are two live allocations), and then its CRC may
/// read the snapshot's bytes before it, which is faster for a short key.
#[inline(always)]
fn place(data: &[u8], key: &[u8]) -> crate::slot::Placement {
    let at = (key.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
    if at <= data.len() && key.len() <= data.len() - at {
        crate::slot::place_in(data, at, at + key.len())
    } else {
        crate::slot::place_in(key, 0, key.len())
    }
}

/// The walk: cuts the snapshot into spans and sends span `i` to worker `i % workers`.
fn walk(
    walker: &mut Parser<'_>,
    txs: &[mpsc::SyncSender<Span>],
    done: &[AtomicU64],
    data: &Mapped,
    progress: Option<&AtomicU64>,
    keys: &mut u64,
) -> Result<(), Box<RdbError>> {
    let mut seq = 0u64;
    let mut reported = 0u64;
    let mut released = 0usize;
    let mut from = walker.checkpoint();
    let (mut n, mut bytes) = (0u32, 0u64);
    let send = |span: Span| {
        let w = (span.seq % txs.len() as u64) as usize;
        // A worker that stopped (it cannot: it drains its channel) only loses its spans.
        let _ = txs[w].send(span);
    };
    while let Some(key_len) = walker.skip_key()? {
        if let Some(b) = data.get(walker.position() as usize + WALK_AHEAD) {
            crate::keys::parallel::prefetch(b);
        }
        *keys += 1;
        n += 1;
        bytes += key_len;
        if n >= BATCH_KEYS || bytes >= BATCH_KEY_BYTES {
            let end = walker.position() as usize;
            send(Span {
                seq,
                from,
                keys: n,
                end,
            });
            seq += 1;
            from = walker.checkpoint();
            (n, bytes) = (0, 0);
            if let Some(p) = progress {
                p.fetch_add(end as u64 - reported, Ordering::Relaxed);
            }
            reported = end as u64;
            let parsed = done
                .iter()
                .map(|d| d.load(Ordering::Acquire))
                .min()
                .unwrap_or(0);
            data.release_behind(parsed, &mut released);
        }
    }
    if n > 0 {
        send(Span {
            seq,
            from,
            keys: n,
            end: walker.position() as usize,
        });
    }
    if let Some(p) = progress {
        p.fetch_add(walker.position() - reported, Ordering::Relaxed);
    }
    Ok(())
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
    let mut snapshot = SnapshotSummary::new(settings.top, settings.slot_biggest);
    let mut keys = 0u64;
    let mut reported = 0u64;
    let mut released = 0usize;
    while let Some(k) = parser.next_key().map_err(|e| ReadError::Rdb(*e))? {
        let placed = place(&data, k.key);
        snapshot.add_in_slot(&k, placed.slot, name);
        keys += 1;
        f(
            keys,
            &Record {
                key: k.key,
                bytes: Some(k.memory),
                ops: None,
                expires: Some(k.expires_at_ms.is_some()),
                placed: Some(placed),
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

#[cfg(test)]
mod tests {
    use super::*;

    type Seen = (Vec<u8>, Option<u64>, Option<bool>);

    #[derive(Default)]
    struct Collect(Vec<Seen>);

    impl ChunkSink for Collect {
        fn record(&mut self, rec: &Record<'_>) {
            self.0.push((rec.key.to_vec(), rec.bytes, rec.expires));
        }
    }

    /// A snapshot of `n` keys of every simple shape: plain, integer and compressed keys,
    /// strings, packed and quicklist values, a hash table, expiries, LFU/idle opcodes and
    /// database switches, so that spans start in the middle of every kind of record group.
    fn snapshot(n: usize) -> Vec<u8> {
        let mut f = b"REDIS0011".to_vec();
        f.extend_from_slice(b"\xfa\x09redis-ver\x057.2.4");
        for i in 0..n {
            if i % 3000 == 0 {
                f.extend_from_slice(&[0xfe, (i / 3000) as u8]);
            }
            if i % 7 == 0 {
                f.push(0xfc);
                f.extend_from_slice(&(1_700_000_000_000i64 + i as i64).to_le_bytes());
            }
            if i % 11 == 0 {
                f.extend_from_slice(&[0xf9, 5]);
            }
            let key = format!("k:{i}");
            match i % 5 {
                0 => {
                    // A string, the key as an LZF literal run.
                    f.extend_from_slice(&[0, 0xc3, key.len() as u8 + 1, key.len() as u8]);
                    f.push(key.len() as u8 - 1);
                    f.extend_from_slice(key.as_bytes());
                    f.extend_from_slice(&[3, b'a', b'b', b'c']);
                }
                1 => {
                    // An integer key and value.
                    f.extend_from_slice(&[0, 0xc1]);
                    f.extend_from_slice(&(i as i16).to_le_bytes());
                    f.extend_from_slice(&[0xc0, 7]);
                }
                2 => {
                    // A hash table of two fields.
                    f.push(4);
                    f.push(key.len() as u8);
                    f.extend_from_slice(key.as_bytes());
                    f.extend_from_slice(b"\x02\x01a\x01b\x01c\x01d");
                }
                3 => {
                    // A quicklist of one plain node.
                    f.push(18);
                    f.push(key.len() as u8);
                    f.extend_from_slice(key.as_bytes());
                    f.extend_from_slice(b"\x01\x01\x03xyz");
                }
                _ => {
                    // A long string value.
                    f.push(0);
                    f.push(key.len() as u8);
                    f.extend_from_slice(key.as_bytes());
                    f.extend_from_slice(&[0x41, 0x2c]);
                    f.extend(std::iter::repeat_n(b'v', 300));
                }
            }
        }
        f.push(0xff);
        f.extend_from_slice(&[0; 8]);
        f
    }

    fn settings() -> Settings {
        Settings {
            top: 5,
            list_compress_depth: 0,
            server: None,
            slot_biggest: true,
        }
    }

    fn one_thread(data: &[u8]) -> Result<(Vec<Seen>, ReadSummary), ReadError> {
        let mut all = Vec::new();
        let summary = for_each(
            Mapped::Owned(data.to_vec()),
            "f",
            None,
            &settings(),
            |_, r| all.push((r.key.to_vec(), r.bytes, r.expires)),
        )?;
        Ok((all, summary))
    }

    #[test]
    fn spans_read_on_many_threads_give_what_one_reading_in_order_gives() {
        let data = snapshot(20_000);
        let (want, one) = one_thread(&data).expect("a well-formed snapshot");
        assert_eq!(want.len(), 20_000);
        for workers in [1, 2, 3] {
            let mut sinks: Vec<Collect> = (0..workers).map(|_| Collect::default()).collect();
            let many = par_read_data(
                Mapped::Owned(data.clone()),
                "f",
                &mut sinks,
                None,
                &settings(),
            )
            .expect("a well-formed snapshot");
            // Span i (4096 keys here) went to worker i % workers, in file order.
            for (w, sink) in sinks.iter().enumerate() {
                let mine: Vec<_> = want
                    .chunks(BATCH_KEYS as usize)
                    .enumerate()
                    .filter(|(i, _)| i % workers == w)
                    .flat_map(|(_, c)| c.iter().cloned())
                    .collect();
                assert_eq!(sink.0, mine, "worker {w} of {workers}");
            }
            assert_eq!(many.keys, one.keys);
            assert_eq!(many.snapshot, one.snapshot, "{workers} workers");
            let (m, o) = (
                many.snapshot.as_ref().unwrap(),
                one.snapshot.as_ref().unwrap(),
            );
            for slot in 0..crate::slot::SLOT_COUNT as u16 {
                // Ties (keys of one shape weigh the same) go to the key read first.
                assert_eq!(m.slot_biggest(slot), o.slot_biggest(slot), "slot {slot}");
            }
        }
    }

    #[test]
    fn a_damaged_snapshot_fails_where_one_reading_in_order_fails() {
        let good = snapshot(12_000);
        // A value type no server writes, a compressed key that does not decompress (only the
        // full parse finds it), and a cut file.
        let mut bad_type = good.clone();
        let at = bad_type.len() / 2;
        let mut cases = Vec::new();
        let pos = (at..bad_type.len())
            .find(|&p| bad_type[p] == 4)
            .expect("a hash record");
        bad_type[pos] = 30;
        cases.push(bad_type);
        let mut bad_lzf = good.clone();
        let pos = (at..bad_lzf.len())
            .find(|&p| bad_lzf[p..].starts_with(&[0, 0xc3]))
            .expect("a compressed key");
        bad_lzf[pos + 4] = 0xff; // a back reference before the start
        cases.push(bad_lzf);
        cases.push(good[..good.len() * 2 / 3].to_vec());
        for data in cases {
            let Err(ReadError::Rdb(want)) = one_thread(&data) else {
                panic!("the damage is found reading in order");
            };
            let mut sinks: Vec<Collect> = (0..2).map(|_| Collect::default()).collect();
            let got = par_read_data(Mapped::Owned(data), "f", &mut sinks, None, &settings());
            let Err(ReadError::Rdb(got)) = got else {
                panic!("the damage is found on two threads");
            };
            assert_eq!(got, want);
        }
    }
}
