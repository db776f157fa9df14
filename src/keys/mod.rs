//! Key dumps: streaming readers for the line formats keyplan reads (raw, quoted, tsv).
//!
//! * `raw`: one key per line, as `redis-cli --scan > file` writes; one trailing `\r` is
//!   stripped (so CRLF files work; a key that really ends in `\r` needs the quoted form);
//! * `quoted`: redis-cli's `"..."` form (see [`quote`]), the only form for keys with newlines;
//! * `tsv`: `key<TAB>bytes[<TAB>ops]`, the key raw (without TABs) or quoted;
//! * `auto`: decided from the first non-blank line; a later line in another form is an error.
//!
//! Blank lines are skipped everywhere. A malformed line is counted and reported with its line
//! and column; `strict` makes the first one fatal. Nothing allocates per key: lines are parsed
//! in place, and quoted keys are decoded into one reused scratch buffer.

mod chunk;
pub mod display;
pub(crate) mod mapped;
pub mod parallel;
pub mod pipe;
mod quoted;
pub mod sniff;

pub use chunk::{Chunk, ChunkKind, Chunker, DEFAULT_CHUNK};
pub use quoted::{QuoteError, quote, quote_into, unquote};

use memchr::memchr;
use std::fmt;
use std::io::{self, Read};

/// The line format of a key dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// Decide from the first non-blank line.
    #[default]
    Auto,
    /// One key per line, as `redis-cli --scan > file` writes (one trailing CR is stripped).
    Raw,
    /// redis-cli's quoted form: "..." with \\ \" \n \r \t \a \b \xHH escapes.
    Quoted,
    /// `key<TAB>bytes[<TAB>ops]`; the key raw (no TABs) or quoted.
    Tsv,
    /// An RDB snapshot (SAVE/BGSAVE; any Redis or Valkey version): keys with their memory.
    Rdb,
}

/// A format after auto-detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpFormat {
    /// One raw key per line.
    Raw,
    /// One redis-cli quoted key per line.
    Quoted,
    /// `key<TAB>bytes[<TAB>ops]`.
    Tsv,
    /// An RDB snapshot.
    Rdb,
}

impl fmt::Display for DumpFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DumpFormat::Raw => "raw",
            DumpFormat::Quoted => "quoted",
            DumpFormat::Tsv => "tsv",
            DumpFormat::Rdb => "rdb",
        })
    }
}

/// One key read from a dump, with its optional weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record<'a> {
    /// The key's bytes.
    pub key: &'a [u8],
    /// Memory weight in bytes (tsv column 2).
    pub bytes: Option<u64>,
    /// Traffic weight, e.g. operations per second (tsv column 3).
    pub ops: Option<f64>,
    /// Whether the key has an expiry, when the input says (snapshots do; dumps do not).
    pub expires: Option<bool>,
    /// The key's cluster slot and hash tag, when the reader already took them (a snapshot's
    /// reader does, for its own summary).
    pub placed: Option<crate::slot::Placement>,
}

/// A problem with one line: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: u64,
    /// 1-based byte column.
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// How to read a dump.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Line format.
    pub format: InputFormat,
    /// Stop at the first malformed line.
    pub strict: bool,
    /// Longest line accepted; longer lines are skipped and reported as malformed.
    pub max_line_bytes: usize,
    /// For snapshots: the `list-compress-depth` of the server whose memory is estimated.
    pub list_compress_depth: u32,
    /// For snapshots: the server whose memory layout the estimate follows (`None`: the one
    /// the snapshot names).
    pub server: Option<crate::rdb::memory::Server>,
    /// For snapshots: keep each slot's biggest key (migration previews name those of the
    /// slots that move; no other report shows them, so by default they are not kept).
    pub slot_biggest: bool,
}

/// Default for [`ReadOptions::max_line_bytes`]: 16 MiB.
pub const DEFAULT_MAX_LINE: usize = 16 << 20;

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: InputFormat::Auto,
            strict: false,
            max_line_bytes: DEFAULT_MAX_LINE,
            list_compress_depth: 0,
            server: None,
            slot_biggest: false,
        }
    }
}

/// How many malformed lines a summary keeps in full (the count is always exact).
pub const MALFORMED_KEPT: usize = 20;

/// What a read saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadSummary {
    /// The format used (`None` when the input had no non-blank line).
    pub format: Option<DumpFormat>,
    /// Lines read, blank and malformed ones included.
    pub lines: u64,
    /// Keys delivered.
    pub keys: u64,
    /// Blank lines skipped.
    pub blank: u64,
    /// Malformed lines skipped.
    pub malformed: u64,
    /// The first [`MALFORMED_KEPT`] malformed lines.
    pub malformed_lines: Vec<LineError>,
    /// What snapshots held beyond their keys (RDB inputs only).
    pub snapshot: Option<Box<crate::rdb::summary::SnapshotSummary>>,
}

impl ReadSummary {
    pub(crate) fn note_malformed(&mut self, e: LineError) {
        self.malformed += 1;
        if self.malformed_lines.len() < MALFORMED_KEPT {
            self.malformed_lines.push(e);
        }
    }

    /// Adds another summary (of a later part of the same stream, or of another file).
    pub fn merge(&mut self, other: ReadSummary) {
        self.format = self.format.or(other.format);
        self.lines += other.lines;
        self.keys += other.keys;
        self.blank += other.blank;
        self.malformed += other.malformed;
        for e in other.malformed_lines {
            if self.malformed_lines.len() < MALFORMED_KEPT {
                self.malformed_lines.push(e);
            }
        }
        match (&mut self.snapshot, other.snapshot) {
            (Some(mine), Some(theirs)) => mine.merge(*theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
    }
}

/// Why a dump could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The source failed.
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    /// A malformed line in strict mode.
    #[error("line {}, column {}: {} (--strict stops at the first malformed line)", .0.line, .0.column, .0.message)]
    Malformed(LineError),
    /// `auto` chose a format from the first line, and a later line is in another form.
    #[error(
        "line {line}: {found}, but line {detected_line} made the format '{detected}'; a dump must use one form throughout: pass --input-format to choose one"
    )]
    MixedForms {
        /// The offending line.
        line: u64,
        /// What the offending line looks like.
        found: &'static str,
        /// The format detected.
        detected: DumpFormat,
        /// The line it was detected from.
        detected_line: u64,
    },
    /// An RDB snapshot that could not be read.
    #[error("{0}")]
    Rdb(crate::rdb::RdbError),
    /// `--input-format rdb` on something that is not a snapshot.
    #[error(
        "not an RDB snapshot (it does not start with REDIS0… or VALKEY…); drop --input-format rdb to read it as a key dump"
    )]
    NotSnapshot,
    /// `auto` on a file that is plainly something else (see [`sniff::not_a_dump`]).
    #[error(transparent)]
    NotADump(#[from] sniff::NotADump),
}

/// Whether `s` is a tsv weight: a non-empty run of ASCII digits.
fn is_uint(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(u8::is_ascii_digit)
}

/// Decides the format of a dump from its first non-blank line (without the line end).
pub fn detect(line: &[u8]) -> DumpFormat {
    let mut scratch = Vec::new();
    if line.first() == Some(&b'"') {
        if let Ok(n) = unquote(line, &mut scratch) {
            if n == line.len() {
                return DumpFormat::Quoted;
            }
            if line[n] == b'\t' {
                return DumpFormat::Tsv;
            }
        }
        return DumpFormat::Raw;
    }
    if let Some(t) = memchr(b'\t', line) {
        let rest = &line[t + 1..];
        let second = rest.split(|&b| b == b'\t').next().unwrap_or_default();
        if is_uint(second) {
            return DumpFormat::Tsv;
        }
    }
    DumpFormat::Raw
}

/// A line's content with its `\n` and one trailing `\r` removed.
#[inline]
pub fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Why a line is not in the expected format: (1-based column, message, is-a-different-form).
#[derive(Debug)]
pub struct ParseFailure {
    /// 1-based byte column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// The line looks like another format (auto-detection treats that as mixed forms).
    pub other_form: Option<&'static str>,
}

/// Parses one non-blank line (without its line end) in `format`. Quoted keys are decoded into
/// `scratch`, which the returned record may borrow.
#[inline]
pub fn parse_line<'a>(
    line: &'a [u8],
    format: DumpFormat,
    scratch: &'a mut Vec<u8>,
) -> Result<Record<'a>, ParseFailure> {
    match format {
        DumpFormat::Raw => Ok(Record {
            key: line,
            bytes: None,
            ops: None,
            expires: None,
            placed: None,
        }),
        DumpFormat::Quoted => {
            if line.first() != Some(&b'"') {
                return Err(ParseFailure {
                    column: 1,
                    message: "expected a quoted key (\"...\")".into(),
                    other_form: Some("a raw (unquoted) key"),
                });
            }
            let n = unquote(line, scratch).map_err(|e| ParseFailure {
                column: e.column,
                message: e.message,
                other_form: None,
            })?;
            if n != line.len() {
                return Err(ParseFailure {
                    column: n + 1,
                    message: "unexpected text after the closing '\"'".into(),
                    other_form: (line[n] == b'\t').then_some("a tsv line"),
                });
            }
            Ok(Record {
                key: scratch,
                bytes: None,
                ops: None,
                expires: None,
                placed: None,
            })
        }
        DumpFormat::Tsv => parse_tsv(line, scratch),
        DumpFormat::Rdb => Err(ParseFailure {
            column: 1,
            message: "an RDB snapshot is read as a whole file, not line by line".into(),
            other_form: None,
        }),
    }
}

fn parse_tsv<'a>(line: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<Record<'a>, ParseFailure> {
    let fail = |column: usize, message: String, other: Option<&'static str>| ParseFailure {
        column,
        message,
        other_form: other,
    };
    let (key, rest_at): (&'a [u8], usize) = if line.first() == Some(&b'"') {
        let n = unquote(line, scratch).map_err(|e| fail(e.column, e.message, None))?;
        (&scratch[..], n)
    } else {
        match memchr(b'\t', line) {
            Some(t) => (&line[..t], t),
            None => {
                return Err(fail(
                    line.len() + 1,
                    "expected key<TAB>bytes[<TAB>ops]".into(),
                    Some("a line without a TAB"),
                ));
            }
        }
    };
    if line.get(rest_at) != Some(&b'\t') {
        return Err(fail(
            rest_at + 1,
            "expected a TAB and the bytes weight after the key".into(),
            None,
        ));
    }
    let fields_at = rest_at + 1;
    let mut fields = line[fields_at..].split(|&b| b == b'\t');
    let bytes_field = fields.next().unwrap_or_default();
    if !is_uint(bytes_field) {
        return Err(fail(
            fields_at + 1,
            format!(
                "the bytes weight '{}' is not a whole number",
                bytes_field.escape_ascii()
            ),
            None,
        ));
    }
    let bytes = std::str::from_utf8(bytes_field)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| fail(fields_at + 1, "the bytes weight is too large".into(), None))?;
    let ops_at = fields_at + bytes_field.len() + 1;
    let ops = match fields.next() {
        None => None,
        Some(f) => {
            let v = std::str::from_utf8(f)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0);
            match v {
                Some(v) => Some(v),
                None => {
                    return Err(fail(
                        ops_at + 1,
                        format!(
                            "the ops weight '{}' is not a non-negative number",
                            f.escape_ascii()
                        ),
                        None,
                    ));
                }
            }
        }
    };
    if fields.next().is_some() {
        return Err(fail(
            ops_at + 1,
            "too many fields: expected key<TAB>bytes[<TAB>ops] (quote keys that contain TABs)"
                .into(),
            None,
        ));
    }
    Ok(Record {
        key,
        bytes: Some(bytes),
        ops,
        expires: None,
        placed: None,
    })
}

/// Line-by-line state shared by the sequential and parallel readers: format detection,
/// blank-line skipping, malformed-line bookkeeping.
#[derive(Debug)]
pub(crate) struct LineParser {
    requested: InputFormat,
    pub(crate) format: Option<DumpFormat>,
    detected_line: u64,
    strict: bool,
    max_line: usize,
    scratch: Vec<u8>,
}

/// What [`LineParser::line`] did with a line.
pub(crate) enum LineOutcome {
    Blank,
    Key,
    Malformed(LineError),
}

impl LineParser {
    pub(crate) fn new(opts: &ReadOptions) -> Self {
        let format = match opts.format {
            InputFormat::Auto => None,
            InputFormat::Raw => Some(DumpFormat::Raw),
            InputFormat::Quoted => Some(DumpFormat::Quoted),
            InputFormat::Tsv => Some(DumpFormat::Tsv),
            InputFormat::Rdb => Some(DumpFormat::Rdb),
        };
        LineParser {
            requested: opts.format,
            format,
            detected_line: 0,
            strict: opts.strict,
            max_line: opts.max_line_bytes,
            scratch: Vec::new(),
        }
    }

    /// A parser for one chunk of a stream whose format is already known.
    pub(crate) fn with_format(
        opts: &ReadOptions,
        format: Option<DumpFormat>,
        detected_line: u64,
    ) -> Self {
        let mut p = Self::new(opts);
        if p.format.is_none() {
            p.format = format;
            p.detected_line = detected_line;
        }
        p
    }

    /// Parses one line (with or without its line end) numbered `line_no` and hands a key to
    /// `f`. Errors only for strict mode and mixed forms.
    #[inline]
    pub(crate) fn line(
        &mut self,
        raw: &[u8],
        line_no: u64,
        f: &mut impl FnMut(&Record<'_>),
    ) -> Result<LineOutcome, ReadError> {
        let content = raw.strip_suffix(b"\n").unwrap_or(raw);
        if content.len() > self.max_line {
            let e = too_long(line_no, trim_line_end(raw).len() as u64, self.max_line);
            return if self.strict {
                Err(ReadError::Malformed(e))
            } else {
                Ok(LineOutcome::Malformed(e))
            };
        }
        let line = trim_line_end(raw);
        if line.is_empty() {
            return Ok(LineOutcome::Blank);
        }
        let format = match self.format {
            Some(f) => f,
            None => {
                let f = detect(line);
                self.format = Some(f);
                self.detected_line = line_no;
                f
            }
        };
        match parse_line(line, format, &mut self.scratch) {
            Ok(rec) => {
                f(&rec);
                Ok(LineOutcome::Key)
            }
            Err(fail) => {
                if self.requested == InputFormat::Auto
                    && let Some(found) = fail.other_form
                {
                    return Err(ReadError::MixedForms {
                        line: line_no,
                        found,
                        detected: format,
                        detected_line: self.detected_line,
                    });
                }
                let e = LineError {
                    line: line_no,
                    column: fail.column,
                    message: fail.message,
                };
                if self.strict {
                    return Err(ReadError::Malformed(e));
                }
                Ok(LineOutcome::Malformed(e))
            }
        }
    }
}

/// The message for a line skipped for being longer than the limit.
pub(crate) fn too_long(line: u64, bytes: u64, limit: usize) -> LineError {
    LineError {
        line,
        column: 1,
        message: format!(
            "line of {bytes} bytes is longer than the {limit}-byte limit and was skipped (raise it with --max-line-bytes)"
        ),
    }
}

/// Reads a whole dump on this thread, calling `f` for every key in input order with its line
/// number.
pub fn for_each_record<R: Read>(
    src: R,
    opts: &ReadOptions,
    mut f: impl FnMut(u64, &Record<'_>),
) -> Result<ReadSummary, ReadError> {
    let mut chunker = Chunker::new(src, opts.max_line_bytes);
    let mut chunk = Chunk::new();
    let mut parser = LineParser::new(opts);
    let mut summary = ReadSummary::default();
    let mut line_no = 0u64;
    while chunker.next_into(&mut chunk)? {
        if let ChunkKind::TooLong { bytes } = chunk.kind {
            line_no += 1;
            summary.lines += 1;
            let e = too_long(line_no, bytes, opts.max_line_bytes);
            if opts.strict {
                return Err(ReadError::Malformed(e));
            }
            summary.note_malformed(e);
            continue;
        }
        for line in chunk.data().split_inclusive(|&b| b == b'\n') {
            line_no += 1;
            summary.lines += 1;
            let n = line_no;
            match parser.line(line, n, &mut |rec| f(n, rec))? {
                LineOutcome::Blank => summary.blank += 1,
                LineOutcome::Key => summary.keys += 1,
                LineOutcome::Malformed(e) => summary.note_malformed(e),
            }
        }
    }
    summary.format = parser.format;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Keys = Vec<(u64, Vec<u8>)>;

    fn read(input: &[u8], format: InputFormat) -> Result<(Keys, ReadSummary), ReadError> {
        let opts = ReadOptions {
            format,
            ..ReadOptions::default()
        };
        let mut keys = Vec::new();
        let s = for_each_record(input, &opts, |n, r| keys.push((n, r.key.to_vec())))?;
        Ok((keys, s))
    }

    #[test]
    fn detection() {
        assert_eq!(detect(b"user:1"), DumpFormat::Raw);
        assert_eq!(detect(b"\"user:1\""), DumpFormat::Quoted);
        assert_eq!(detect(b"\"user\\n1\"\t42"), DumpFormat::Tsv);
        assert_eq!(detect(b"user:1\t42\t1.5"), DumpFormat::Tsv);
        assert_eq!(detect(b"user\tname"), DumpFormat::Raw);
        assert_eq!(detect(b"\"unterminated"), DumpFormat::Raw);
    }

    #[test]
    fn raw_crlf_blank_and_no_final_newline() {
        let (keys, s) = read(b"a\r\n\r\nb\nc", InputFormat::Auto).unwrap();
        assert_eq!(
            keys,
            vec![(1, b"a".to_vec()), (3, b"b".to_vec()), (4, b"c".to_vec())]
        );
        assert_eq!((s.lines, s.keys, s.blank, s.malformed), (4, 3, 1, 0));
        assert_eq!(s.format, Some(DumpFormat::Raw));
    }

    #[test]
    fn quoted_keys_with_newlines() {
        let (keys, _) = read(b"\"a\\nb\"\n\"\\x00{x}\"\n", InputFormat::Auto).unwrap();
        assert_eq!(keys[0].1, b"a\nb");
        assert_eq!(keys[1].1, b"\x00{x}");
    }

    #[test]
    fn mixed_forms_in_auto_mode_name_the_line() {
        let err = read(b"\"a\"\n\"b\"\nplain\n", InputFormat::Auto).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("line 3:"), "{msg}");
        assert!(msg.contains("--input-format"), "{msg}");
    }

    #[test]
    fn malformed_lines_are_counted_with_positions() {
        let (keys, s) = read(b"\"a\"\n\"b\\q\"\n\"c\"\n", InputFormat::Quoted).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(s.malformed, 1);
        assert_eq!(s.malformed_lines[0].line, 2);
        assert_eq!(s.malformed_lines[0].column, 3);
    }

    #[test]
    fn strict_stops_at_first_malformed() {
        let opts = ReadOptions {
            format: InputFormat::Quoted,
            strict: true,
            ..ReadOptions::default()
        };
        let err = for_each_record(&b"\"a\"\nnope\n"[..], &opts, |_, _| {}).unwrap_err();
        assert!(
            matches!(err, ReadError::Malformed(ref e) if e.line == 2),
            "{err}"
        );
    }

    #[test]
    fn tsv_weights() {
        let opts = ReadOptions::default();
        let mut got = Vec::new();
        let s = for_each_record(
            &b"k1\t100\t2.5\n\"k\\t2\"\t7\nk3\tx\nk4\t1\t2\t3\n"[..],
            &opts,
            |_, r| got.push((r.key.to_vec(), r.bytes, r.ops)),
        )
        .unwrap();
        assert_eq!(got[0], (b"k1".to_vec(), Some(100), Some(2.5)));
        assert_eq!(got[1], (b"k\t2".to_vec(), Some(7), None));
        assert_eq!(s.malformed, 2);
        assert_eq!(s.malformed_lines[0].line, 3);
        assert_eq!(s.malformed_lines[0].column, 4);
    }
}
