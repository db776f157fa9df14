//! Reading one dump on several cores. Workers parse chunks of whole lines and feed their own
//! sink; line numbers of malformed lines are made absolute afterwards from each chunk's line
//! count, so reports are exactly those of the sequential reader (same lines, same order).
//!
//! Two front-ends feed the workers:
//! * [`par_read`], for any stream (stdin, pipes): one reader thread cuts the stream into
//!   ~1 MiB chunks through recycled buffers;
//! * [`par_read_file`], for regular files: the file is memory-mapped one 16 MiB window at a
//!   time and the workers read the window in place, with no copy. Workers take the next window
//!   as soon as they are done with their part of the current one, and drop the pages of each
//!   chunk they finish from the mapping.

use super::mapped::{map_window, release};
use super::{
    Chunk, ChunkKind, Chunker, DEFAULT_CHUNK, DumpFormat, InputFormat, LineError, LineOutcome,
    LineParser, ReadError, ReadOptions, ReadSummary, Record, detect, too_long, trim_line_end,
};
use crate::slot::bulk::{LineCounts, LongLine};
use memchr::memchr;
use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

/// Asks the CPU to bring `t` into the first-level cache (a hint: it never faults and changes
/// nothing else).
#[allow(unsafe_code)]
#[inline(always)]
pub fn prefetch<T>(t: &T) {
    #[cfg(x86_simd)]
    // SAFETY: SSE is part of x86-64, and a prefetch only reads (here a valid reference).
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(t).cast());
    }
    #[cfg(not(x86_simd))]
    let _ = t;
}

/// A consumer of keys that one worker thread owns.
pub trait ChunkSink: Send {
    /// Called for every key of the worker's chunks.
    fn record(&mut self, rec: &Record<'_>);

    /// A key whose placement is known ahead of its [`ChunkSink::record`]: a sink may start
    /// fetching the counters it will add it to. Only a hint; the default ignores it.
    #[inline(always)]
    fn expect(&self, placed: &crate::slot::Placement) {
        let _ = placed;
    }

    /// Optional fast path for a chunk of raw lines: consume every key of `chunk.data` at once
    /// and return the counts, or `None` to be fed key by key through [`ChunkSink::record`].
    /// Lines longer than `chunk.max_line` bytes must be skipped and listed in `chunk.long`.
    fn raw_lines(&mut self, chunk: &mut RawChunk<'_>) -> Option<LineCounts> {
        let _ = chunk;
        None
    }

    /// Called before the keys of chunk `seq` (chunks are numbered from 0 in file order), for
    /// sinks that place what they find by line.
    fn begin_chunk(&mut self, seq: u64) {
        let _ = seq;
    }

    /// Called for every key of a chunk of lines with its 1-based line in the chunk; by default
    /// [`ChunkSink::record`].
    fn record_line(&mut self, line: u64, rec: &Record<'_>) {
        let _ = line;
        self.record(rec);
    }

    /// Called after chunk `seq` with its number of lines: the first line of chunk `k` is one
    /// past the lines of chunks `0..k`.
    fn end_chunk(&mut self, seq: u64, lines: u64) {
        let _ = (seq, lines);
    }
}

/// A chunk of raw lines (one key a line) for [`ChunkSink::raw_lines`].
pub struct RawChunk<'a> {
    /// Whole lines.
    pub data: &'a [u8],
    /// The longest line accepted, bytes.
    pub max_line: usize,
    /// Where the longer lines are listed.
    pub long: Vec<LongLine>,
}

impl RawChunk<'_> {
    /// The chunk's keys by the fused scan, a piece at a time: `f` gets the piece, its keys and
    /// a counter of their lines. Longer lines than the limit are listed in `long`.
    pub fn scan_lines(
        &mut self,
        scanner: &mut crate::slot::bulk::BulkScanner,
        mut f: impl FnMut(&[u8], &[crate::slot::bulk::KeySpan], &mut LineCounter<'_>),
    ) -> LineCounts {
        let mut lines = LineCounter {
            data: self.data,
            ends: 0,
            after: 0,
        };
        scanner.scan_keys(self.data, self.max_line, &mut self.long, |piece, spans| {
            f(piece, spans, &mut lines)
        })
    }

    /// The chunk's keys a piece at a time, for a caller that needs neither their slots nor
    /// their lines ([`crate::slot::bulk::BulkScanner::split_keys`]).
    pub fn split(
        &mut self,
        scanner: &mut crate::slot::bulk::BulkScanner,
        f: impl FnMut(&[u8], &[crate::slot::bulk::KeySpan]),
    ) -> LineCounts {
        scanner.split_keys(self.data, self.max_line, &mut self.long, f)
    }
}

/// The lines of a raw chunk's keys as the fused scan hands them over (a piece at a time, in
/// order): a key starts a line, so what lies between it and the key before ends in a line
/// end, and is almost always just that one.
pub struct LineCounter<'a> {
    /// The chunk (pieces are parts of it).
    data: &'a [u8],
    /// Line ends before `after`.
    ends: u64,
    /// The chunk offset just past the last key.
    after: usize,
}

impl LineCounter<'_> {
    /// The 1-based line in the chunk of the key `span` of `piece` (a part of the chunk); keys
    /// must come in their order in the chunk.
    #[inline]
    pub fn line(&mut self, piece: &[u8], span: &crate::slot::bulk::KeySpan) -> u64 {
        let off = piece.as_ptr() as usize - self.data.as_ptr() as usize;
        let gap = &self.data[self.after..off + span.start];
        self.ends += match gap.len() {
            0 | 1 => gap.len() as u64,
            _ => memchr::memchr_iter(b'\n', gap).count() as u64,
        };
        self.after = off + span.end;
        self.ends + 1
    }
}

/// A sink that counts keys per slot (one per worker; aligned so that neighbouring workers
/// share no cache line). Raw lines take the fused bulk scan.
#[repr(align(128))]
pub struct SlotHistogram {
    /// Keys per slot.
    pub counts: Vec<u64>,
    scanner: crate::slot::bulk::BulkScanner,
}

impl SlotHistogram {
    /// Keys per slot over all `histograms`.
    pub fn total(histograms: &[SlotHistogram]) -> Vec<u64> {
        let mut total = vec![0u64; crate::slot::SLOT_COUNT];
        for h in histograms {
            for (t, c) in total.iter_mut().zip(&h.counts) {
                *t += c;
            }
        }
        total
    }
}

impl Default for SlotHistogram {
    fn default() -> Self {
        SlotHistogram {
            counts: vec![0; crate::slot::SLOT_COUNT],
            scanner: crate::slot::bulk::BulkScanner::new(),
        }
    }
}

impl ChunkSink for SlotHistogram {
    fn record(&mut self, rec: &Record<'_>) {
        self.counts[crate::slot::key_slot(rec.key) as usize] += 1;
    }

    fn raw_lines(&mut self, c: &mut RawChunk<'_>) -> Option<LineCounts> {
        Some(self.scanner.count_raw_lines_limited(
            c.data,
            &mut self.counts,
            c.max_line,
            &mut c.long,
        ))
    }
}

#[derive(Debug, Default)]
struct ChunkReport {
    seq: u64,
    lines: u64,
    keys: u64,
    blank: u64,
    malformed: u64,
    /// Malformed lines with chunk-relative line numbers (first few only).
    malformed_lines: Vec<LineError>,
    /// A fatal error with a chunk-relative line number.
    fatal: Option<ReadError>,
}

impl ChunkReport {
    fn malformed(&mut self, e: LineError, strict: bool) {
        if strict {
            if self.fatal.is_none() {
                self.fatal = Some(ReadError::Malformed(e));
            }
            return;
        }
        self.malformed += 1;
        if self.malformed_lines.len() < super::MALFORMED_KEPT {
            self.malformed_lines.push(e);
        }
    }
}

fn shift(err: ReadError, offset: u64) -> ReadError {
    match err {
        ReadError::Malformed(mut e) => {
            e.line += offset;
            ReadError::Malformed(e)
        }
        ReadError::MixedForms {
            line,
            found,
            detected,
            detected_line,
        } => ReadError::MixedForms {
            line: line + offset,
            found,
            detected,
            detected_line,
        },
        other => other,
    }
}

/// One unit of work: whole lines, with the format known when it was cut.
struct Job<'a> {
    seq: u64,
    data: &'a [u8],
    format: Option<DumpFormat>,
    detected_line: u64,
}

fn process<S: ChunkSink>(job: &Job<'_>, opts: &ReadOptions, sink: &mut S) -> ChunkReport {
    sink.begin_chunk(job.seq);
    let report = process_lines(job, opts, sink);
    sink.end_chunk(job.seq, report.lines);
    report
}

fn process_lines<S: ChunkSink>(job: &Job<'_>, opts: &ReadOptions, sink: &mut S) -> ChunkReport {
    let mut report = ChunkReport {
        seq: job.seq,
        ..ChunkReport::default()
    };
    if job.format == Some(DumpFormat::Raw) {
        let mut chunk = RawChunk {
            data: job.data,
            max_line: opts.max_line_bytes,
            long: Vec::new(),
        };
        if let Some(c) = sink.raw_lines(&mut chunk) {
            report.lines = c.lines;
            report.keys = c.keys;
            report.blank = c.lines - c.keys - chunk.long.len() as u64;
            for l in chunk.long {
                report.malformed(too_long(l.line, l.bytes, opts.max_line_bytes), opts.strict);
                if report.fatal.is_some() {
                    break;
                }
            }
            return report;
        }
    }
    let mut parser = LineParser::with_format(opts, job.format, job.detected_line);
    for (i, line) in job.data.split_inclusive(|&b| b == b'\n').enumerate() {
        let rel = i as u64 + 1;
        report.lines += 1;
        match parser.line(line, rel, &mut |rec| sink.record_line(rel, rec)) {
            Ok(LineOutcome::Blank) => report.blank += 1,
            Ok(LineOutcome::Key) => report.keys += 1,
            Ok(LineOutcome::Malformed(e)) => report.malformed(e, false),
            Err(e) => {
                report.fatal = Some(e);
                break;
            }
        }
    }
    report
}

fn requested_format(opts: &ReadOptions) -> Option<DumpFormat> {
    match opts.format {
        InputFormat::Auto => None,
        InputFormat::Raw => Some(DumpFormat::Raw),
        InputFormat::Quoted => Some(DumpFormat::Quoted),
        InputFormat::Tsv => Some(DumpFormat::Tsv),
        InputFormat::Rdb => Some(DumpFormat::Rdb),
    }
}

/// Orders the chunk reports and turns them into one summary (or the first fatal error).
fn summarize(
    mut reports: Vec<ChunkReport>,
    format: Option<DumpFormat>,
) -> Result<ReadSummary, ReadError> {
    reports.sort_by_key(|r| r.seq);
    let mut summary = ReadSummary {
        format,
        ..ReadSummary::default()
    };
    let mut offset = 0u64;
    for r in reports {
        if let Some(fatal) = r.fatal {
            return Err(shift(fatal, offset));
        }
        summary.lines += r.lines;
        summary.keys += r.keys;
        summary.blank += r.blank;
        summary.malformed += r.malformed;
        for mut e in r.malformed_lines {
            e.line += offset;
            if summary.malformed_lines.len() < super::MALFORMED_KEPT {
                summary.malformed_lines.push(e);
            }
        }
        offset += r.lines;
    }
    Ok(summary)
}

/// Reads `src` with one worker per sink (`sinks.len()` threads, at least one) and returns the
/// same summary [`super::for_each_record`] would. Chunk `i` goes to sink `i % sinks.len()`, in
/// order, so each sink sees the same keys in the same order on every run. `progress`, when
/// given, is advanced by the bytes processed.
pub fn par_read<R: Read, S: ChunkSink>(
    src: R,
    opts: &ReadOptions,
    sinks: &mut [S],
    progress: Option<&AtomicU64>,
) -> Result<ReadSummary, ReadError> {
    assert!(!sinks.is_empty(), "par_read needs at least one sink");
    let mut chunker = Chunker::new(src, opts.max_line_bytes);
    let mut format = requested_format(opts);
    let mut detected_line = 0u64;
    let mut lines_before_detection = 0u64;
    let stop_seq = AtomicU64::new(u64::MAX);
    let workers = sinks.len();
    let (work_txs, work_rxs): (Vec<_>, Vec<_>) = (0..workers)
        .map(|_| mpsc::sync_channel::<(Chunk, Option<DumpFormat>, u64)>(2))
        .unzip();
    let (free_tx, free_rx) = mpsc::channel::<Chunk>();
    let mut own_reports: Vec<ChunkReport> = Vec::new();
    let mut io_error: Option<std::io::Error> = None;

    let worker_reports: Vec<Vec<ChunkReport>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sinks
            .iter_mut()
            .zip(work_rxs)
            .map(|(sink, work_rx)| {
                let free_tx = free_tx.clone();
                let stop_seq = &stop_seq;
                scope.spawn(move || {
                    let mut reports = Vec::new();
                    while let Ok((chunk, format, detected_line)) = work_rx.recv() {
                        if chunk.seq <= stop_seq.load(Ordering::Relaxed) {
                            let job = Job {
                                seq: chunk.seq,
                                data: chunk.data(),
                                format,
                                detected_line,
                            };
                            let r = process(&job, opts, sink);
                            if r.fatal.is_some() {
                                stop_seq.fetch_min(r.seq, Ordering::Relaxed);
                            }
                            reports.push(r);
                            if let Some(p) = progress {
                                p.fetch_add(job.data.len() as u64, Ordering::Relaxed);
                            }
                        }
                        let _ = free_tx.send(chunk);
                    }
                    reports
                })
            })
            .collect();
        drop(free_tx);

        let mut spare: Vec<Chunk> = Vec::new();
        loop {
            if stop_seq.load(Ordering::Relaxed) != u64::MAX {
                break;
            }
            spare.extend(free_rx.try_iter());
            let mut chunk = spare.pop().unwrap_or_default();
            match chunker.next_into(&mut chunk) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    io_error = Some(e);
                    break;
                }
            }
            if let ChunkKind::TooLong { bytes } = chunk.kind {
                let mut r = ChunkReport {
                    seq: chunk.seq,
                    lines: 1,
                    ..ChunkReport::default()
                };
                r.malformed(too_long(1, bytes, opts.max_line_bytes), opts.strict);
                if r.fatal.is_some() {
                    stop_seq.fetch_min(chunk.seq, Ordering::Relaxed);
                }
                own_reports.push(r);
                if format.is_none() {
                    lines_before_detection += 1;
                }
                spare.push(chunk);
                continue;
            }
            if format.is_none() {
                for line in chunk.data().split_inclusive(|&b| b == b'\n') {
                    lines_before_detection += 1;
                    let l = trim_line_end(line);
                    if !l.is_empty() {
                        format = Some(detect(l));
                        detected_line = lines_before_detection;
                        break;
                    }
                }
            }
            let worker = (chunk.seq % workers as u64) as usize;
            if work_txs[worker]
                .send((chunk, format, detected_line))
                .is_err()
            {
                break;
            }
        }
        drop(work_txs);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("invariant: key-reading workers do not panic")
            })
            .collect()
    });

    if let Some(e) = io_error {
        return Err(ReadError::Io(e));
    }
    let mut reports: Vec<ChunkReport> = worker_reports.into_iter().flatten().collect();
    reports.append(&mut own_reports);
    summarize(reports, format)
}

/// Size of one mapped window (bounds resident memory; a window also holds the longest line).
const WINDOW: usize = 16 << 20;

/// Finds the format from the first non-blank line of `data`; returns it with its line number.
fn detect_in(data: &[u8], max_line: usize) -> Option<(DumpFormat, u64)> {
    for (i, line) in data.split_inclusive(|&b| b == b'\n').enumerate() {
        let l = trim_line_end(line);
        if !l.is_empty() && l.len() <= max_line {
            return Some((detect(l), i as u64 + 1));
        }
    }
    None
}

/// Reads a regular file like [`par_read`], but through memory-mapped windows with no copy.
/// Falls back to [`par_read`] when the file cannot be mapped (a pipe, a special file).
pub fn par_read_file<S: ChunkSink>(
    file: &File,
    opts: &ReadOptions,
    sinks: &mut [S],
    progress: Option<&AtomicU64>,
) -> Result<ReadSummary, ReadError> {
    assert!(!sinks.is_empty(), "par_read_file needs at least one sink");
    let meta = file.metadata()?;
    // Start where the file's offset is (stdin redirected from a file may be part-read).
    let start = {
        use std::io::Seek;
        let mut f = file;
        f.stream_position().unwrap_or(0)
    };
    let len = meta.len();
    if !meta.is_file() || len <= start || usize::try_from(len).is_err() {
        return par_read(file, opts, sinks, progress);
    }
    let len = len as usize;
    // A window must hold any acceptable line plus its end, so a line that does not end in a
    // window is longer than the limit.
    let window = WINDOW.max(opts.max_line_bytes.saturating_add(2));
    let mut format = requested_format(opts);
    let stop_seq = AtomicU64::new(u64::MAX);
    let workers = sinks.len();
    let first = match map_window(file, start, window.min(len - start as usize)) {
        Ok(m) => m,
        Err(_) => return par_read(file, opts, sinks, progress),
    };
    // Workers live for the whole file and are handed one window at a time (a rendezvous, so at
    // most one window beyond those being read is mapped): no barrier between windows, so a
    // worker that finishes its part of one goes straight on to the next. Job i of a window
    // goes to worker i % workers: the same split on every run.
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..workers)
        .map(|_| mpsc::sync_channel::<Arc<Window>>(0))
        .unzip();
    let (own_reports, worker_reports) = std::thread::scope(|scope| {
        let handles: Vec<_> = sinks
            .iter_mut()
            .zip(rxs)
            .enumerate()
            .map(|(w, (sink, rx))| {
                let stop_seq = &stop_seq;
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for window in rx {
                        for job in window.jobs.iter().skip(w).step_by(workers) {
                            if job.seq > stop_seq.load(Ordering::Relaxed) {
                                continue;
                            }
                            let data = &window.map[job.range.clone()];
                            let r = process(
                                &Job {
                                    seq: job.seq,
                                    data,
                                    format: job.format,
                                    detected_line: job.detected_line,
                                },
                                opts,
                                sink,
                            );
                            release(&window.map, job.range.clone());
                            if r.fatal.is_some() {
                                stop_seq.fetch_min(r.seq, Ordering::Relaxed);
                            }
                            out.push(r);
                            if let Some(p) = progress {
                                p.fetch_add(data.len() as u64, Ordering::Relaxed);
                            }
                        }
                    }
                    out
                })
            })
            .collect();
        let feed = Feed {
            file,
            opts,
            len,
            window,
            stop_seq: &stop_seq,
        };
        let own = feed.run(first, start as usize, &mut format, &txs);
        drop(txs);
        let worker_reports: Vec<Vec<ChunkReport>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("invariant: key-reading workers do not panic")
            })
            .collect();
        (own, worker_reports)
    });
    let mut reports = own_reports?;
    reports.extend(worker_reports.into_iter().flatten());
    summarize(reports, format)
}

/// A mapped window of the file and the jobs it is cut into.
struct Window {
    map: memmap2::Mmap,
    jobs: Vec<WindowJob>,
}

/// A job of a [`Window`]: a range of whole lines.
struct WindowJob {
    seq: u64,
    range: std::ops::Range<usize>,
    format: Option<DumpFormat>,
    detected_line: u64,
}

/// The mapping side of [`par_read_file`].
struct Feed<'a> {
    file: &'a File,
    opts: &'a ReadOptions,
    len: usize,
    window: usize,
    stop_seq: &'a AtomicU64,
}

impl Feed<'_> {
    /// Maps the file window by window from `pos` (the first window is `first`), detects the
    /// format, cuts each window into jobs and sends it to every worker. Returns the reports of
    /// the lines it handles itself: lines that do not end within a window (over the limit).
    fn run(
        &self,
        first: memmap2::Mmap,
        mut pos: usize,
        format: &mut Option<DumpFormat>,
        txs: &[mpsc::SyncSender<Arc<Window>>],
    ) -> Result<Vec<ChunkReport>, ReadError> {
        let opts = self.opts;
        let mut reports = Vec::new();
        let mut detected_line = 0u64;
        let mut lines_seen = 0u64; // before detection
        let mut seq = 0u64;
        let mut next = Some(first);
        while pos < self.len && self.stop_seq.load(Ordering::Relaxed) == u64::MAX {
            let wlen = self.window.min(self.len - pos);
            let map = match next.take() {
                Some(m) => m,
                None => map_window(self.file, pos as u64, wlen)?,
            };
            let at_eof = pos + wlen == self.len;
            let usable = if at_eof {
                wlen
            } else {
                memchr::memrchr(b'\n', &map).map_or(0, |i| i + 1)
            };
            if usable == 0 {
                // No line end in a whole window: this line is over the limit. Skip to its end.
                drop(map);
                let (bytes, after) = skip_long_line(self.file, pos, self.len, self.window)?;
                let mut r = ChunkReport {
                    seq,
                    lines: 1,
                    ..ChunkReport::default()
                };
                r.malformed(too_long(1, bytes, opts.max_line_bytes), opts.strict);
                let fatal = r.fatal.is_some();
                reports.push(r);
                if format.is_none() {
                    lines_seen += 1;
                }
                if fatal {
                    self.stop_seq.fetch_min(seq, Ordering::Relaxed);
                    break;
                }
                seq += 1;
                pos = after;
                continue;
            }
            let data = &map[..usable];
            if format.is_none()
                && let Some((f, line)) = detect_in(data, opts.max_line_bytes)
            {
                *format = Some(f);
                detected_line = lines_seen + line;
            }
            if format.is_none() {
                lines_seen += data.iter().filter(|&&b| b == b'\n').count() as u64;
            }
            // Cut the window into ~1 MiB jobs that end on line ends.
            let mut jobs = Vec::new();
            let mut p = 0usize;
            while p < data.len() {
                let target = (p + DEFAULT_CHUNK).min(data.len());
                let end = if target == data.len() {
                    target
                } else {
                    match memchr(b'\n', &data[target - 1..]) {
                        Some(i) => target + i,
                        None => data.len(),
                    }
                };
                jobs.push(WindowJob {
                    seq,
                    range: p..end,
                    format: *format,
                    detected_line,
                });
                seq += 1;
                p = end;
            }
            let window = Arc::new(Window { map, jobs });
            for tx in txs {
                // A worker that is gone has panicked; joining it reports that.
                let _ = tx.send(Arc::clone(&window));
            }
            pos += usable;
        }
        Ok(reports)
    }
}

/// Skips a line that starts at `pos` and runs past a whole window; returns its length (without
/// the line end) and the offset of the next line.
fn skip_long_line(
    file: &File,
    pos: usize,
    len: usize,
    window: usize,
) -> Result<(u64, usize), ReadError> {
    let mut at = pos;
    let mut last: Option<u8> = None;
    while at < len {
        let wlen = window.min(len - at);
        let map = map_window(file, at as u64, wlen)?;
        if let Some(i) = memchr(b'\n', &map) {
            let prev = if i > 0 { Some(map[i - 1]) } else { last };
            let bytes = (at + i - pos) as u64 - u64::from(prev == Some(b'\r'));
            return Ok((bytes, at + i + 1));
        }
        last = map.last().copied();
        at += wlen;
    }
    let bytes = (len - pos) as u64 - u64::from(last == Some(b'\r'));
    Ok((bytes, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{InputFormat, for_each_record};

    #[derive(Default)]
    struct Collect(Vec<Vec<u8>>);
    impl ChunkSink for Collect {
        fn record(&mut self, rec: &Record<'_>) {
            self.0.push(rec.key.to_vec());
        }
    }

    /// Reads `input` one record after another, and with `parallel` into two sinks: the two
    /// summaries and the two key lists (in any order) must be equal.
    fn assert_same_as_sequential(
        input: &[u8],
        opts: &ReadOptions,
        parallel: impl FnOnce(&mut [Collect]) -> ReadSummary,
    ) {
        let mut seq_keys = Vec::new();
        let seq = for_each_record(input, opts, |_, r| seq_keys.push(r.key.to_vec())).unwrap();
        let mut sinks = vec![Collect::default(), Collect::default()];
        let par = parallel(&mut sinks);
        assert_eq!(seq, par, "{:?}", opts.format);
        let mut par_keys: Vec<_> = sinks.into_iter().flat_map(|s| s.0).collect();
        par_keys.sort();
        seq_keys.sort();
        assert_eq!(par_keys, seq_keys);
    }

    #[test]
    fn parallel_summary_equals_sequential() {
        let mut input = String::new();
        for i in 0..200_000 {
            if i % 1000 == 7 {
                input.push_str("\"bad\\q\"\n");
            } else if i % 777 == 0 {
                input.push('\n');
            } else {
                input.push_str(&format!("\"key:{i}\\n\"\n"));
            }
        }
        let opts = ReadOptions {
            format: InputFormat::Quoted,
            ..ReadOptions::default()
        };
        assert_same_as_sequential(input.as_bytes(), &opts, |sinks| {
            par_read(input.as_bytes(), &opts, sinks, None).unwrap()
        });
    }

    #[test]
    fn mapped_file_equals_sequential() {
        use std::io::Write;
        let mut input = String::new();
        for i in 0..300_000u32 {
            match i % 997 {
                3 => input.push('\n'),
                5 => input.push_str(&"x".repeat(300)),
                _ => input.push_str(&format!("k:{{{}}}:{i}\r", i % 13)),
            }
            input.push('\n');
        }
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(input.as_bytes()).unwrap();
        std::io::Seek::rewind(&mut f).unwrap();
        for format in [InputFormat::Auto, InputFormat::Raw, InputFormat::Tsv] {
            let opts = ReadOptions {
                format,
                max_line_bytes: 200,
                ..ReadOptions::default()
            };
            assert_same_as_sequential(input.as_bytes(), &opts, |sinks| {
                par_read_file(&f, &opts, sinks, None).unwrap()
            });
        }
    }

    #[test]
    fn parallel_mixed_forms_line_is_absolute() {
        let mut input = "\"a\"\n".repeat(300_000);
        input.push_str("plain\n");
        input.push_str(&"\"b\"\n".repeat(10));
        let mut sinks = vec![Collect::default(), Collect::default()];
        let err =
            par_read(input.as_bytes(), &ReadOptions::default(), &mut sinks, None).unwrap_err();
        assert!(err.to_string().starts_with("line 300001:"), "{err}");
    }
}
