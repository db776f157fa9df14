//! Output of `keyplan slot`: one row per key (table, tsv or JSON, streamed where the format
//! allows) or the per-slot counts of `--counts`.

use super::render::{Format, Stream};
use super::{JsonBytes, TextLayout, display_key};
use serde::Serialize;
use std::io::{self, Write};

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

/// Starts `slot`'s rows in `format` on `out`: a header line (tsv), the document's opening
/// (JSON), or a table that is printed whole at the end.
pub fn slot_stream<'o>(
    format: Format,
    out: &'o mut dyn Write,
    columns: SlotColumns,
    layout: &TextLayout,
) -> io::Result<SlotRows<'o>> {
    let mut header = vec!["key", "slot", "hashed"];
    if columns.node {
        header.push("node");
    }
    if columns.explain {
        header.push("explain");
    }
    Ok(match format {
        Format::Json => {
            out.write_all(super::json::open_document(super::json::SLOT).as_bytes())?;
            out.write_all(b"\"keys\":[")?;
            Box::new(SlotJson { out, rows: 0 })
        }
        Format::Tsv => {
            writeln!(out, "{}", header.join("\t"))?;
            Box::new(SlotTsv { out, columns })
        }
        Format::Table => {
            let mut table = layout.table();
            table.set_header(header);
            Box::new(SlotTable {
                out,
                columns,
                table,
            })
        }
        other => return Err(super::render::unsupported("slot", other)),
    })
}

/// `slot`'s rows, written one key after another (each row borrows from its key).
pub type SlotRows<'o> = Box<dyn for<'r> Stream<SlotRow<'r>, [MalformedLine]> + 'o>;

/// The optional columns of `slot`'s rows.
#[derive(Debug, Clone, Copy)]
pub struct SlotColumns {
    /// The owning node (a topology was given).
    pub node: bool,
    /// Why those bytes were hashed (`--explain`).
    pub explain: bool,
}

fn slot_text(slot: Option<u16>) -> String {
    slot.map_or_else(|| "-".to_string(), |s| s.to_string())
}

/// `{"schema_version": …, "keys": [...], "malformed": [...]}`, streamed.
struct SlotJson<'o> {
    out: &'o mut dyn Write,
    rows: u64,
}

impl<'r> Stream<SlotRow<'r>, [MalformedLine]> for SlotJson<'_> {
    fn item(&mut self, r: &SlotRow<'r>) -> io::Result<()> {
        if self.rows > 0 {
            self.out.write_all(b",")?;
        }
        self.rows += 1;
        let row = JsonRow {
            key: JsonBytes(r.key),
            slot: r.slot,
            hashed: JsonBytes(r.hashed),
            node: r.node,
            explain: r.explain,
        };
        serde_json::to_writer(&mut *self.out, &row)?;
        Ok(())
    }

    fn finish(self: Box<Self>, malformed: &[MalformedLine]) -> io::Result<()> {
        self.out.write_all(b"],\"malformed\":")?;
        serde_json::to_writer(&mut *self.out, malformed)?;
        self.out.write_all(b"}\n")?;
        self.out.flush()
    }
}

/// Tab-separated, one line per key, streamed.
struct SlotTsv<'o> {
    out: &'o mut dyn Write,
    columns: SlotColumns,
}

impl<'r> Stream<SlotRow<'r>, [MalformedLine]> for SlotTsv<'_> {
    fn item(&mut self, r: &SlotRow<'r>) -> io::Result<()> {
        write!(
            self.out,
            "{}\t{}\t{}",
            display_key(r.key),
            slot_text(r.slot),
            display_key(r.hashed)
        )?;
        if self.columns.node {
            write!(self.out, "\t{}", r.node.unwrap_or("-"))?;
        }
        if self.columns.explain {
            write!(self.out, "\t{}", r.explain.unwrap_or(""))?;
        }
        self.out.write_all(b"\n")
    }

    fn finish(self: Box<Self>, _: &[MalformedLine]) -> io::Result<()> {
        self.out.flush()
    }
}

/// A table, sized to its rows: printed at the end.
struct SlotTable<'o> {
    out: &'o mut dyn Write,
    columns: SlotColumns,
    table: super::FitTable,
}

impl<'r> Stream<SlotRow<'r>, [MalformedLine]> for SlotTable<'_> {
    fn item(&mut self, r: &SlotRow<'r>) -> io::Result<()> {
        let mut cells = vec![
            display_key(r.key).into_owned(),
            slot_text(r.slot),
            display_key(r.hashed).into_owned(),
        ];
        if self.columns.node {
            cells.push(r.node.unwrap_or("-").to_string());
        }
        if self.columns.explain {
            cells.push(r.explain.unwrap_or("").to_string());
        }
        self.table.add_row(cells);
        Ok(())
    }

    fn finish(self: Box<Self>, _: &[MalformedLine]) -> io::Result<()> {
        if self.table.markdown || self.table.width.is_none() {
            writeln!(self.out, "{}", self.table)?;
            return self.out.flush();
        }
        // Explanations that do not fit go under the table, wrapped at the terminal's width.
        let mut out = super::TextLayout {
            width: self.table.width,
            markdown: false,
        }
        .writer(&mut *self.out);
        writeln!(out, "{}", self.table)?;
        out.flush()
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

impl SlotCountsReport {
    /// The report of `counts` (keys per slot); node names from `topology` when given.
    pub fn new(
        counts: &[u64],
        topology: Option<&crate::topology::Topology>,
        malformed: Vec<MalformedLine>,
    ) -> SlotCountsReport {
        let slots = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(slot, &keys)| SlotCount {
                slot: slot as u16,
                keys,
                node: topology.map(|t| {
                    t.node_of_slot(slot as u16)
                        .map(|i| t.nodes()[i].name.clone())
                        .unwrap_or_else(|| "-".into())
                }),
            })
            .collect();
        SlotCountsReport {
            keys: counts.iter().sum(),
            slots,
            malformed,
        }
    }
}

impl super::render::Render for SlotCountsReport {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        render_counts(out, self, format, layout)
    }
}

/// Renders `slot --counts`.
fn render_counts(
    out: &mut dyn Write,
    r: &SlotCountsReport,
    format: Format,
    layout: &TextLayout,
) -> io::Result<()> {
    let with_node = r.slots.iter().any(|s| s.node.is_some());
    match format {
        Format::Json => {
            super::json::write_document(&mut *out, super::json::SLOT, r)?;
        }
        Format::Tsv => {
            writeln!(out, "slot\tkeys{}", if with_node { "\tnode" } else { "" })?;
            for s in &r.slots {
                write!(out, "{}\t{}", s.slot, s.keys)?;
                if let Some(n) = &s.node {
                    write!(out, "\t{n}")?;
                }
                out.write_all(b"\n")?;
            }
        }
        Format::Table => {
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
        other => return Err(super::render::unsupported("slot --counts", other)),
    }
    out.flush()
}
