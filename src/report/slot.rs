//! Output of `keyplan slot`: one row per key (table, tsv or JSON, streamed where the format
//! allows) or the per-slot counts of `--counts`.

use super::{JsonBytes, TextLayout, display_key};
use serde::Serialize;
use std::io::{self, Write};

/// How `slot` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotFormat {
    /// A table (rows are buffered to size the columns).
    Table,
    /// Tab-separated, one line per key, with a header line.
    Tsv,
    /// `{"schema_version": 1, "keys": [...]}`, streamed.
    Json,
}

/// One key's placement.
#[derive(Debug, Clone, Copy)]
pub struct SlotRow<'a> {
    /// The key.
    pub key: &'a [u8],
    /// Its slot (`None` under a client-side ring, where slots do not apply).
    pub slot: Option<u16>,
    /// The bytes that were hashed.
    pub hashed: &'a [u8],
    /// The owning node's name, when a topology was given.
    pub node: Option<&'a str>,
    /// Why those bytes were hashed (with `--explain`).
    pub explain: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    key: JsonBytes<'a>,
    slot: Option<u16>,
    hashed: JsonBytes<'a>,
    node: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    explain: Option<&'a str>,
}

/// A malformed input line, for the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct MalformedLine {
    /// The dump it is in.
    pub file: String,
    /// 1-based line.
    pub line: u64,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Streams `slot` rows in one of the formats.
pub struct SlotEmitter<W: Write> {
    out: W,
    format: SlotFormat,
    with_node: bool,
    with_explain: bool,
    rows: u64,
    table: Option<super::FitTable>,
}

impl<W: Write> SlotEmitter<W> {
    /// Starts the output (header line, JSON opening).
    pub fn begin(
        mut out: W,
        format: SlotFormat,
        with_node: bool,
        with_explain: bool,
        layout: &TextLayout,
    ) -> io::Result<Self> {
        let mut table = None;
        let mut header = vec!["key", "slot", "hashed"];
        if with_node {
            header.push("node");
        }
        if with_explain {
            header.push("explain");
        }
        match format {
            SlotFormat::Json => {
                out.write_all(super::json::open_document(super::json::SLOT).as_bytes())?;
                out.write_all(b"\"keys\":[")?;
            }
            SlotFormat::Tsv => writeln!(out, "{}", header.join("\t"))?,
            SlotFormat::Table => {
                let mut t = layout.table();
                t.set_header(header);
                table = Some(t);
            }
        }
        Ok(SlotEmitter {
            out,
            format,
            with_node,
            with_explain,
            rows: 0,
            table,
        })
    }

    /// Emits one row.
    pub fn row(&mut self, r: &SlotRow<'_>) -> io::Result<()> {
        match self.format {
            SlotFormat::Json => {
                if self.rows > 0 {
                    self.out.write_all(b",")?;
                }
                let row = JsonRow {
                    key: JsonBytes(r.key),
                    slot: r.slot,
                    hashed: JsonBytes(r.hashed),
                    node: r.node,
                    explain: r.explain,
                };
                serde_json::to_writer(&mut self.out, &row)?;
            }
            SlotFormat::Tsv => {
                write!(
                    self.out,
                    "{}\t{}\t{}",
                    display_key(r.key),
                    r.slot.map_or_else(|| "-".to_string(), |s| s.to_string()),
                    display_key(r.hashed)
                )?;
                if self.with_node {
                    write!(self.out, "\t{}", r.node.unwrap_or("-"))?;
                }
                if self.with_explain {
                    write!(self.out, "\t{}", r.explain.unwrap_or(""))?;
                }
                self.out.write_all(b"\n")?;
            }
            SlotFormat::Table => {
                let mut cells = vec![
                    display_key(r.key).into_owned(),
                    r.slot.map_or_else(|| "-".to_string(), |s| s.to_string()),
                    display_key(r.hashed).into_owned(),
                ];
                if self.with_node {
                    cells.push(r.node.unwrap_or("-").to_string());
                }
                if self.with_explain {
                    cells.push(r.explain.unwrap_or("").to_string());
                }
                if let Some(t) = self.table.as_mut() {
                    t.add_row(cells);
                }
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// Ends the output and returns the writer.
    pub fn finish(mut self, malformed: &[MalformedLine]) -> io::Result<W> {
        match self.format {
            SlotFormat::Json => {
                self.out.write_all(b"],\"malformed\":")?;
                serde_json::to_writer(&mut self.out, malformed)?;
                self.out.write_all(b"}\n")?;
            }
            SlotFormat::Tsv => {}
            SlotFormat::Table => {
                if let Some(t) = self.table.take() {
                    writeln!(self.out, "{t}")?;
                }
            }
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One slot's count for `slot --counts`.
#[derive(Debug, Clone, Serialize)]
pub struct SlotCount {
    /// The slot.
    pub slot: u16,
    /// Keys in it.
    pub keys: u64,
    /// Owning node, when a topology was given.
    pub node: Option<String>,
}

/// The report of `slot --counts`.
#[derive(Debug, Clone, Serialize)]
pub struct SlotCountsReport {
    /// Keys counted.
    pub keys: u64,
    /// Non-empty slots, ascending.
    pub slots: Vec<SlotCount>,
    /// Malformed input lines (first few per file).
    pub malformed: Vec<MalformedLine>,
}

/// Renders `slot --counts`.
pub fn render_counts(
    out: &mut dyn Write,
    r: &SlotCountsReport,
    format: SlotFormat,
    layout: &TextLayout,
) -> io::Result<()> {
    let with_node = r.slots.iter().any(|s| s.node.is_some());
    match format {
        SlotFormat::Json => {
            super::json::write_document(&mut *out, super::json::SLOT, r)?;
        }
        SlotFormat::Tsv => {
            writeln!(out, "slot\tkeys{}", if with_node { "\tnode" } else { "" })?;
            for s in &r.slots {
                write!(out, "{}\t{}", s.slot, s.keys)?;
                if let Some(n) = &s.node {
                    write!(out, "\t{n}")?;
                }
                out.write_all(b"\n")?;
            }
        }
        SlotFormat::Table => {
            let mut t = layout.table();
            let mut header = vec!["slot", "keys", "share"];
            if with_node {
                header.push("node");
            }
            t.set_header(header);
            for s in &r.slots {
                let share = if r.keys == 0 {
                    0.0
                } else {
                    100.0 * s.keys as f64 / r.keys as f64
                };
                let mut row = vec![
                    s.slot.to_string(),
                    s.keys.to_string(),
                    format!("{share:.2}%"),
                ];
                if let Some(n) = &s.node {
                    row.push(n.clone());
                }
                t.add_row(row);
            }
            writeln!(out, "{t}")?;
            writeln!(out, "{} keys in {} slots", r.keys, r.slots.len())?;
        }
    }
    out.flush()
}
