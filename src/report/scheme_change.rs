//! Renders `keyplan migrate`: the two sides, the keys that change owner, each node before and
//! after, the pairs of nodes keys move between, and the batches whose fate changes.

use super::TextLayout;
use super::analyze::human_bytes;
use super::render::{Format, Render, unsupported};
use crate::migrate::scheme_change::{BatchChanges, Change, Fate, NodeLoad, SchemeChange};
pub use crate::migrate::scheme_change::{SchemeChangeReport, SideInfo};
use crate::skew::Skew;
use comfy_table::{Cell, CellAlignment};
use std::io::{self, Write};

/// Pairs of nodes listed in the table (JSON has all).
const PAIRS_SHOWN: usize = 40;
/// Changed batches listed in the table (JSON has all that were kept).
const BATCHES_SHOWN: usize = 50;

impl Render for SchemeChangeReport {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        match format {
            Format::Json => super::json::write_document(out, super::json::SCHEME_CHANGE, self),
            Format::Table => render_table(out, self, layout),
            Format::Markdown => super::markdown::from_table_output(out, |out, layout| {
                render_table(out, self, layout)
            }),
            other => Err(unsupported("a scheme change preview", other)),
        }
    }
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn pct(part: u64, whole: u64) -> String {
    match whole {
        0 => "-".into(),
        _ => format!("{:.1}%", 100.0 * part as f64 / whole as f64),
    }
}

fn share(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn skew_pair(before: &Option<Skew>, after: &Option<Skew>) -> String {
    let one = |s: &Option<Skew>| {
        s.as_ref()
            .map_or("-".into(), |s| format!("{:.2}", s.max_over_mean))
    };
    format!("{} → {}", one(before), one(after))
}

fn nodes_table(
    out: &mut dyn Write,
    nodes: &[NodeLoad],
    r: &SchemeChangeReport,
    other: &str,
    layout: &TextLayout,
) -> io::Result<()> {
    let mut t = layout.table();
    let mut header = vec!["node", "keys", "share", "nominal"];
    if r.has_bytes {
        header.push("bytes");
    }
    if r.has_ops {
        header.push("ops");
    }
    header.push(other);
    t.set_header(header);
    let total: u64 = nodes.iter().map(|n| n.load.keys).sum();
    for n in nodes {
        let mut row = vec![
            Cell::new(&n.node),
            right(n.load.keys),
            right(pct(n.load.keys, total)),
            right(share(n.nominal_share)),
        ];
        if r.has_bytes {
            row.push(right(human_bytes(n.load.bytes)));
        }
        if r.has_ops {
            row.push(right(format!("{:.1}", n.load.ops)));
        }
        row.push(Cell::new(if n.on_both_sides { "yes" } else { "no" }));
        t.add_row(row);
    }
    writeln!(out, "{t}")
}

fn moved_line(c: &SchemeChange, has_bytes: bool) -> String {
    let mut s = format!(
        "Keys that change node: {} of {} ({})",
        c.moved.keys,
        c.keys,
        pct(c.moved.keys, c.keys)
    );
    if has_bytes {
        let all = c.moved.bytes + c.stayed.bytes;
        s.push_str(&format!(
            ", {} of {} ({})",
            human_bytes(c.moved.bytes),
            human_bytes(all),
            pct(c.moved.bytes, all)
        ));
    }
    if c.stayed.keys > 0 {
        s.push_str(&format!("; {} stay on the same server", c.stayed.keys));
    } else {
        s.push_str("; no node is on both sides (same address), so every key is copied");
    }
    s
}

fn fate_text(f: &Fate) -> String {
    match f.served {
        Some(true) if f.outcome == "ok" => "served".into(),
        Some(true) => format!("served ({})", f.outcome),
        Some(false) => format!("refused ({})", f.outcome),
        None => "not modelled".into(),
    }
}

fn pairs_table(
    out: &mut dyn Write,
    c: &SchemeChange,
    has_bytes: bool,
    layout: &TextLayout,
) -> io::Result<()> {
    let mut t = layout.table();
    let mut header = vec!["from", "to", "keys", "share"];
    if has_bytes {
        header.push("bytes");
    }
    t.set_header(header);
    let none = "(no node)".to_string();
    for p in c.pairs.iter().take(PAIRS_SHOWN) {
        let to = p.to.as_ref().unwrap_or(&none);
        let mut row = vec![
            Cell::new(p.from.as_ref().unwrap_or(&none)),
            Cell::new(match p.stays {
                true => format!("{to} (stays)"),
                false => to.clone(),
            }),
            right(p.load.keys),
            right(pct(p.load.keys, c.keys)),
        ];
        if has_bytes {
            row.push(right(human_bytes(p.load.bytes)));
        }
        t.add_row(row);
    }
    writeln!(out, "{t}")?;
    if c.pairs.len() > PAIRS_SHOWN {
        let rest: u64 = c.pairs[PAIRS_SHOWN..].iter().map(|p| p.load.keys).sum();
        writeln!(
            out,
            "… {} more pairs ({} keys): --format json lists every pair",
            c.pairs.len() - PAIRS_SHOWN,
            rest
        )?;
    }
    Ok(())
}

fn batches_table(out: &mut dyn Write, b: &BatchChanges, layout: &TextLayout) -> io::Result<()> {
    let counts: Vec<String> = b
        .counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(c, n)| format!("{n} {}", c.name()))
        .collect();
    writeln!(
        out,
        "\nBatches: {} judged{}{}",
        b.judged,
        if counts.is_empty() { "" } else { ": " },
        counts.join(", ")
    )?;
    if b.rows.is_empty() {
        return Ok(());
    }
    let mut t = layout.table();
    t.set_header([
        "batch",
        "change",
        "before",
        "nodes",
        "after",
        "nodes",
        "what the application sees after",
    ]);
    for r in b.rows.iter().take(BATCHES_SHOWN) {
        let seen = match r.change {
            Change::StartsWorking | Change::FansOutWider | Change::Narrower | Change::Same => {
                r.after.message.clone().unwrap_or_default()
            }
            _ => r
                .after
                .message
                .clone()
                .or_else(|| r.before.message.clone())
                .unwrap_or_default(),
        };
        t.add_row(vec![
            Cell::new(layout.text(&r.batch)),
            Cell::new(r.change.name()),
            Cell::new(fate_text(&r.before)),
            right(r.before.nodes),
            Cell::new(fate_text(&r.after)),
            right(r.after.nodes),
            Cell::new(seen),
        ]);
    }
    writeln!(out, "{t}")?;
    let more = b.rows.len().saturating_sub(BATCHES_SHOWN) as u64 + b.rows_left_out;
    if more > 0 {
        writeln!(
            out,
            "… {more} more changed batches: --format json lists the first {}",
            b.rows.len()
        )?;
    }
    Ok(())
}

/// Writes the report as tables.
pub fn render_table(
    out: &mut dyn Write,
    r: &SchemeChangeReport,
    layout: &TextLayout,
) -> io::Result<()> {
    writeln!(out, "keyplan migrate: {} → {}", r.from.kind, r.to.kind)?;
    writeln!(
        out,
        "before: {} ({} nodes; batches meet {})",
        r.from.topology, r.from.nodes, r.from.batches_meet
    )?;
    writeln!(
        out,
        "after: {} ({} nodes; batches meet {})",
        r.to.topology, r.to.nodes, r.to.batches_meet
    )?;
    if let Some(c) = &r.change {
        writeln!(out, "sample: {} keys from {}", c.keys, r.samples.join(", "))?;
        writeln!(out)?;
        writeln!(out, "{}", moved_line(c, r.has_bytes))?;
        if c.unplaced_before > 0 {
            writeln!(
                out,
                "{} keys have no node before (random distribution, or slots nobody serves)",
                c.unplaced_before
            )?;
        }
        if c.unplaced_after > 0 {
            writeln!(
                out,
                "{} keys have no node after (random distribution, or slots nobody serves)",
                c.unplaced_after
            )?;
        }
        writeln!(out, "\nNodes before:")?;
        nodes_table(out, &c.before, r, "still there after", layout)?;
        writeln!(out, "Nodes after:")?;
        nodes_table(out, &c.after, r, "there before", layout)?;
        let mut skew = vec![format!(
            "keys {}",
            skew_pair(&c.skew.keys_before, &c.skew.keys_after)
        )];
        if r.has_bytes {
            skew.push(format!(
                "bytes {}",
                skew_pair(&c.skew.bytes_before, &c.skew.bytes_after)
            ));
        }
        if r.has_ops {
            skew.push(format!(
                "ops {}",
                skew_pair(&c.skew.ops_before, &c.skew.ops_after)
            ));
        }
        writeln!(
            out,
            "Skew (busiest node ÷ mean, before → after): {}",
            skew.join("; ")
        )?;
        writeln!(out, "\nWhere keys go (most first):")?;
        pairs_table(out, c, r.has_bytes, layout)?;
    }
    if let Some(b) = &r.batches {
        batches_table(out, b, layout)?;
        if b.starting_to_fail() > 0 {
            writeln!(
                out,
                "\n{} batches start failing: give their keys a common hash tag (keyplan plan suggests one), or have the client split them per slot",
                b.starting_to_fail()
            )?;
        }
    }
    Ok(())
}
