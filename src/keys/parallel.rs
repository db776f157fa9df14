//! Reading one dump on several cores: one reader thread cuts the stream into chunks of whole
//! lines; workers parse them and feed their own sink. Line numbers of malformed lines are made
//! absolute afterwards from each chunk's line count, so reports are exactly those of the
//! sequential reader (same lines, same order).

use super::{
    Chunk, ChunkKind, Chunker, Format, LineError, LineOutcome, LineParser, ReadError, ReadOptions,
    ReadSummary, Record, detect, too_long, trim_line_end,
};
use crate::slot::bulk::LineCounts;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};

/// A consumer of keys that one worker thread owns.
pub trait ChunkSink: Send {
    /// Called for every key of the worker's chunks.
    fn record(&mut self, rec: &Record<'_>);

    /// Optional fast path for a chunk of raw lines: consume every key of `data` at once and
    /// return the counts, or `None` to be fed key by key through [`ChunkSink::record`].
    fn raw_lines(&mut self, data: &[u8]) -> Option<LineCounts> {
        let _ = data;
        None
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

fn process_chunk<S: ChunkSink>(
    chunk: &Chunk,
    format: Option<Format>,
    detected_line: u64,
    opts: &ReadOptions,
    sink: &mut S,
) -> ChunkReport {
    let mut report = ChunkReport {
        seq: chunk.seq,
        ..ChunkReport::default()
    };
    if format == Some(Format::Raw)
        && let Some(c) = sink.raw_lines(chunk.data())
    {
        report.lines = c.lines;
        report.keys = c.keys;
        report.blank = c.lines - c.keys;
        return report;
    }
    let mut parser = LineParser::with_format(opts, format, detected_line);
    for (i, line) in chunk.data().split_inclusive(|&b| b == b'\n').enumerate() {
        let rel = i as u64 + 1;
        report.lines += 1;
        match parser.line(line, rel, &mut |rec| sink.record(rec)) {
            Ok(LineOutcome::Blank) => report.blank += 1,
            Ok(LineOutcome::Key) => report.keys += 1,
            Ok(LineOutcome::Malformed(e)) => {
                report.malformed += 1;
                if report.malformed_lines.len() < super::MALFORMED_KEPT {
                    report.malformed_lines.push(e);
                }
            }
            Err(e) => {
                report.fatal = Some(e);
                break;
            }
        }
    }
    report
}

/// Reads `src` with one worker per sink (`sinks.len()` threads, at least one) and returns the
/// same summary [`super::for_each_record`] would. Keys reach the sinks in no particular order.
pub fn par_read<R: Read, S: ChunkSink>(
    src: R,
    opts: &ReadOptions,
    sinks: &mut [S],
) -> Result<ReadSummary, ReadError> {
    assert!(!sinks.is_empty(), "par_read needs at least one sink");
    let mut chunker = Chunker::new(src, opts.max_line_bytes);
    let mut format: Option<Format> = match opts.format {
        super::InputFormat::Auto => None,
        super::InputFormat::Raw => Some(Format::Raw),
        super::InputFormat::Quoted => Some(Format::Quoted),
        super::InputFormat::Tsv => Some(Format::Tsv),
    };
    let mut detected_line = 0u64;
    let mut lines_before_detection = 0u64;
    let stop_seq = AtomicU64::new(u64::MAX);
    let workers = sinks.len();
    let (work_tx, work_rx) = mpsc::sync_channel::<(Chunk, Option<Format>, u64)>(workers * 2);
    let work_rx = Mutex::new(work_rx);
    let (free_tx, free_rx) = mpsc::channel::<Chunk>();
    let mut own_reports: Vec<ChunkReport> = Vec::new();
    let mut io_error: Option<std::io::Error> = None;

    let worker_reports: Vec<Vec<ChunkReport>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sinks
            .iter_mut()
            .map(|sink| {
                let work_rx = &work_rx;
                let free_tx = free_tx.clone();
                let stop_seq = &stop_seq;
                scope.spawn(move || {
                    let mut reports = Vec::new();
                    loop {
                        let next = work_rx.lock().map(|rx| rx.recv());
                        let Ok(Ok((chunk, format, detected_line))) = next else {
                            break;
                        };
                        if chunk.seq <= stop_seq.load(Ordering::Relaxed) {
                            let r = process_chunk(&chunk, format, detected_line, opts, sink);
                            if r.fatal.is_some() {
                                stop_seq.fetch_min(r.seq, Ordering::Relaxed);
                            }
                            reports.push(r);
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
                let e = too_long(1, bytes, opts.max_line_bytes);
                let mut r = ChunkReport {
                    seq: chunk.seq,
                    lines: 1,
                    ..ChunkReport::default()
                };
                if opts.strict {
                    r.fatal = Some(ReadError::Malformed(e));
                    stop_seq.fetch_min(chunk.seq, Ordering::Relaxed);
                } else {
                    r.malformed = 1;
                    r.malformed_lines.push(e);
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
            if work_tx.send((chunk, format, detected_line)).is_err() {
                break;
            }
        }
        drop(work_tx);
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
        let mut seq_keys = Vec::new();
        let seq = for_each_record(input.as_bytes(), &opts, |_, r| {
            seq_keys.push(r.key.to_vec())
        })
        .unwrap();
        let mut sinks = vec![Collect::default(), Collect::default()];
        let par = par_read(input.as_bytes(), &opts, &mut sinks).unwrap();
        assert_eq!(seq, par);
        let mut par_keys: Vec<_> = sinks.into_iter().flat_map(|s| s.0).collect();
        par_keys.sort();
        seq_keys.sort();
        assert_eq!(par_keys, seq_keys);
    }

    #[test]
    fn parallel_mixed_forms_line_is_absolute() {
        let mut input = "\"a\"\n".repeat(300_000);
        input.push_str("plain\n");
        input.push_str(&"\"b\"\n".repeat(10));
        let mut sinks = vec![Collect::default(), Collect::default()];
        let err = par_read(input.as_bytes(), &ReadOptions::default(), &mut sinks).unwrap_err();
        assert!(err.to_string().starts_with("line 300001:"), "{err}");
    }
}
