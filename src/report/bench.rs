//! Renders `keyplan bench` results: the seed-002-shaped table (strategy, QPS, latency, round
//! trips and commands predicted / measured) or JSON.

use super::new_table;
use crate::bench::BenchResult;
use crate::simulate::NetworkModel;
use comfy_table::{Cell, CellAlignment};
use serde::Serialize;
use std::io::{self, Write};

/// The bench report (`--format json`).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// JSON contract version.
    pub schema_version: u32,
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
pub fn render_json(out: &mut dyn Write, r: &BenchReport) -> io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    out.write_all(b"\n")?;
    out.flush()
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

/// Writes the report as tables, one per batch.
pub fn render_table(out: &mut dyn Write, r: &BenchReport) -> io::Result<()> {
    writeln!(
        out,
        "keyplan bench on {}: {} s per strategy, {} worker(s), keys under '{}:' (deleted afterwards)",
        r.cluster, r.duration_s, r.concurrency, r.prefix
    )?;
    let mut i = 0;
    while i < r.results.len() {
        let name = &r.results[i].batch;
        writeln!(out, "\n{name}")?;
        let mut t = new_table();
        t.set_header([
            "strategy",
            "QPS",
            "P50 ms",
            "P99 ms",
            "round trips pred / meas",
            "commands pred / meas",
            "per node (meas)",
            "predicted ms",
            "match",
        ]);
        while i < r.results.len() && &r.results[i].batch == name {
            let x = &r.results[i];
            let m = &x.measured;
            let per_node = m
                .per_node
                .iter()
                .map(|n| format!("{} {}", n.node, num(n.commands)))
                .collect::<Vec<_>>()
                .join(", ");
            t.add_row(vec![
                Cell::new(x.strategy.name()),
                right(format!("{:.0}", m.qps)),
                right(format!("{:.3}", m.p50_ms)),
                right(format!("{:.3}", m.p99_ms)),
                right(format!(
                    "{} / {}",
                    x.predicted.round_trips,
                    num(m.round_trips)
                )),
                right(format!("{} / {}", x.predicted.commands, num(m.commands))),
                Cell::new(per_node),
                right(format!("{:.3}", x.predicted.latency_ms)),
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
            ]);
            i += 1;
        }
        writeln!(out, "{t}")?;
    }
    if r.interrupted {
        writeln!(out, "\ninterrupted: results so far")?;
    }
    out.flush()
}
