//! Renders `keyplan bench` results: the seed-002-shaped table (strategy, QPS, latency, round
//! trips and commands predicted / measured) or JSON.

use super::TextLayout;
use super::render::{Format, Stream};
use crate::bench::BenchResult;
use crate::simulate::NetworkModel;
use comfy_table::{Cell, CellAlignment};
use serde::Serialize;
use std::io::{self, Write};

/// The bench report (`--format json`).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The cluster (password masked).
    pub cluster: String,
    /// The key prefix written under.
    pub prefix: String,
    /// Seconds per (batch, strategy).
    pub duration_s: f64,
    /// Workers.
    pub concurrency: usize,
    /// The network model of the predictions.
    pub network: NetworkModel,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// One per (batch, strategy).
    pub results: Vec<BenchResult>,
}

/// Writes the report as JSON (one line).
fn render_json(out: &mut dyn Write, r: &BenchReport) -> io::Result<()> {
    super::json::write_document(out, super::json::BENCH, r)
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// Writes the line that opens the table report.
fn render_table_header(out: &mut dyn Write, r: &BenchReport) -> io::Result<()> {
    writeln!(
        out,
        "keyplan bench on {}: {} s per strategy, {} worker(s), keys under '{}:' (deleted afterwards)",
        r.cluster, r.duration_s, r.concurrency, r.prefix
    )?;
    out.flush()
}

/// Writes one batch's table: its results, one row per strategy.
fn render_batch_table(
    out: &mut dyn Write,
    results: &[BenchResult],
    layout: &TextLayout,
) -> io::Result<()> {
    let Some(first) = results.first() else {
        return Ok(());
    };
    writeln!(out, "\n{}", layout.line(&first.batch))?;
    let mut t = layout.table();
    t.set_header([
        "strategy",
        "QPS pred / meas",
        "P50 ms pred / meas",
        "P99 ms pred / meas",
        "round trips pred / meas",
        "commands pred / meas",
        "per node (meas)",
        "match",
        "QPS model",
    ]);
    for x in results {
        let m = &x.measured;
        let per_node = m
            .per_node
            .iter()
            .map(|n| format!("{} {}", n.node, num(n.commands)))
            .collect::<Vec<_>>()
            .join(", ");
        t.add_row(vec![
            Cell::new(x.strategy.name()),
            right(format!("{:.0} / {:.0}", x.predicted.load.qps, m.qps)),
            right(format!("{:.3} / {:.3}", x.predicted.load.p50_ms, m.p50_ms)),
            right(format!("{:.3} / {:.3}", x.predicted.load.p99_ms, m.p99_ms)),
            right(format!(
                "{} / {}",
                x.predicted.load.round_trips,
                num(m.round_trips)
            )),
            right(format!(
                "{} / {}",
                x.predicted.load.commands,
                num(m.commands)
            )),
            Cell::new(per_node),
            Cell::new(if x.matches {
                "✓".to_string()
            } else if m.errors > 0 {
                format!(
                    "✗ {} error(s): {}",
                    m.errors,
                    m.first_error.as_deref().unwrap_or("")
                )
            } else {
                "✗".to_string()
            }),
            Cell::new(format!(
                "{} {:.2}×",
                if x.qps_within { "✓" } else { "✗" },
                x.qps_ratio
            )),
        ]);
    }
    writeln!(out, "{t}")?;
    out.flush()
}

/// Writes the lines that close the table report.
fn render_table_footer(out: &mut dyn Write, r: &BenchReport) -> io::Result<()> {
    if r.interrupted {
        writeln!(out, "\ninterrupted: results so far")?;
    }
    let off_counts = r.results.iter().filter(|x| !x.matches).count();
    let off_qps = r.results.iter().filter(|x| !x.qps_within).count();
    let (lo, hi) = crate::bench::QPS_TOLERANCE;
    writeln!(
        out,
        "\n{} of {} run(s): counts (round trips, commands per node) equal the prediction{}; {} of {} QPS within the model's {lo}–{hi}× tolerance (a timing: it does not set the exit status)",
        r.results.len() - off_counts,
        r.results.len(),
        if off_counts > 0 { " (exit 1)" } else { "" },
        r.results.len() - off_qps,
        r.results.len(),
    )?;
    out.flush()
}

impl super::render::Render for BenchReport {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        match format {
            Format::Table => render_table(out, self, layout),
            Format::Json => render_json(out, self),
            other => Err(super::render::unsupported("bench", other)),
        }
    }
}

/// A piece of bench's report as the run produces it.
#[derive(Debug, Clone, Copy)]
pub enum BenchPiece<'a> {
    /// Every batch is known to run: the report starts.
    Start(&'a BenchReport),
    /// One batch's results, one per strategy.
    Batch(&'a [BenchResult]),
}

/// Bench's report, written as the run produces it.
pub type BenchStream<'o> = Box<dyn for<'r> Stream<BenchPiece<'r>, BenchReport> + 'o>;

/// Starts bench's report in `format` on `out`: tables are written batch by batch as each
/// finishes; JSON is one document at the end.
pub fn bench_stream<'o>(
    format: Format,
    out: &'o mut dyn Write,
    layout: &TextLayout,
) -> io::Result<BenchStream<'o>> {
    Ok(match format {
        Format::Table => Box::new(BenchTable {
            out: layout.writer(out),
            layout: *layout,
        }),
        Format::Json => Box::new(BenchJson { out }),
        other => return Err(super::render::unsupported("bench", other)),
    })
}

struct BenchTable<'o> {
    out: super::Fitted<&'o mut dyn Write>,
    layout: TextLayout,
}

impl<'r> Stream<BenchPiece<'r>, BenchReport> for BenchTable<'_> {
    fn item(&mut self, piece: &BenchPiece<'r>) -> io::Result<()> {
        match *piece {
            BenchPiece::Start(r) => render_table_header(&mut self.out, r),
            BenchPiece::Batch(results) => render_batch_table(&mut self.out, results, &self.layout),
        }
    }

    fn finish(mut self: Box<Self>, r: &BenchReport) -> io::Result<()> {
        render_table_footer(&mut self.out, r)
    }
}

struct BenchJson<'o> {
    out: &'o mut dyn Write,
}

impl<'r> Stream<BenchPiece<'r>, BenchReport> for BenchJson<'_> {
    fn item(&mut self, _: &BenchPiece<'r>) -> io::Result<()> {
        Ok(())
    }

    fn finish(self: Box<Self>, r: &BenchReport) -> io::Result<()> {
        let mut w = io::BufWriter::new(self.out);
        render_json(&mut w, r)?;
        w.flush()
    }
}

/// Writes the report as tables, one per batch.
fn render_table(out: &mut dyn Write, r: &BenchReport, layout: &TextLayout) -> io::Result<()> {
    render_table_header(out, r)?;
    for batch in r.results.chunk_by(|a, b| a.batch == b.batch) {
        render_batch_table(out, batch, layout)?;
    }
    render_table_footer(out, r)
}
