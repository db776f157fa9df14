//! Renders a [`MigrationReport`]: tables (plan, moves, nodes before → after, skew, batches in
//! motion, warnings) or JSON.

use super::TextLayout;
use super::analyze::human_bytes;
use crate::migrate::impact::{Impact, SkewSet};
use crate::migrate::{MigrationPlan, MigrationReport, SampleSource};
use comfy_table::{Cell, CellAlignment};
use std::io::{self, Write};

/// Writes the report as JSON (one line).
pub fn render_json(out: &mut dyn Write, r: &MigrationReport) -> io::Result<()> {
    super::json::write_document(out, super::json::MIGRATION, r)
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Up to `max` of `ranges`, the widest ones (a node's own range outlasts the slivers a plan
/// gives it), in slot order, and how many more there are.
fn short_ranges(ranges: &[(u16, u16)], max: usize) -> String {
    if ranges.len() <= max {
        return crate::topology::format_ranges(ranges);
    }
    let mut widest: Vec<(u16, u16)> = ranges.to_vec();
    widest.sort_by_key(|&(a, b)| (std::cmp::Reverse(b - a), a));
    widest.truncate(max);
    widest.sort_unstable();
    format!(
        "{} … (+{} more ranges)",
        crate::topology::format_ranges(&widest),
        ranges.len() - max
    )
}

fn duration(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < 3600.0 {
        format!("{:.1} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

/// The weights a plan leaves more skewed than it found them (busiest node ÷ mean up by 0.05
/// or more), in one sentence: a preview says so, whatever it balances (its exit status stays
/// as it is: the plan was asked for).
pub fn skew_raised(before: &SkewSet, after: &SkewSet) -> Option<String> {
    let mut parts = Vec::new();
    let mut busiest = None;
    for (name, b, a) in [
        ("keys", &before.keys, &after.keys),
        ("bytes", &before.bytes, &after.bytes),
        ("ops", &before.ops, &after.ops),
        ("cpu", &before.cpu, &after.cpu),
    ] {
        if let (Some(b), Some(a)) = (b, a)
            && a.max_over_mean >= b.max_over_mean + 0.05
        {
            parts.push(format!(
                "{name} {:.2}× → {:.2}×",
                b.max_over_mean, a.max_over_mean
            ));
            busiest.get_or_insert_with(|| a.hottest_node.clone());
        }
    }
    let busiest = busiest?;
    Some(format!(
        "this plan raises skew (busiest node ÷ mean): {}; {busiest} is the busiest after",
        parts.join(", ")
    ))
}

fn skew_line(before: &SkewSet, after: &SkewSet) -> String {
    let mut parts = Vec::new();
    let pairs = [
        ("keys", &before.keys, &after.keys),
        ("bytes", &before.bytes, &after.bytes),
        ("ops", &before.ops, &after.ops),
        ("cpu", &before.cpu, &after.cpu),
        ("slots", &before.slots, &after.slots),
    ];
    for (name, b, a) in pairs {
        let f = |s: &Option<crate::skew::Skew>| {
            s.as_ref()
                .map(|s| format!("{:.2}", s.max_over_mean))
                .unwrap_or_else(|| "-".into())
        };
        if b.is_some() || a.is_some() {
            parts.push(format!("{name} {} → {}", f(b), f(a)));
        }
    }
    parts.join(", ")
}

fn moves_table(
    out: &mut dyn Write,
    im: &Impact,
    has_bytes: bool,
    layout: &TextLayout,
) -> io::Result<()> {
    if im.moves.is_empty() {
        return Ok(());
    }
    let mut t = layout.table();
    let mut header = vec!["from", "to", "slots", "slot ranges", "keys"];
    if has_bytes {
        header.push("bytes");
    }
    t.set_header(header);
    for m in &im.moves {
        let mut row = vec![
            Cell::new(&m.from),
            Cell::new(&m.to),
            right(m.slots),
            Cell::new(short_ranges(&m.slot_ranges, 4)),
            right(m.keys),
        ];
        if has_bytes {
            row.push(right(human_bytes(m.bytes)));
        }
        t.add_row(row);
    }
    writeln!(out, "{t}")
}

fn nodes_table(
    out: &mut dyn Write,
    im: &Impact,
    has_bytes: bool,
    has_ops: bool,
    layout: &TextLayout,
) -> io::Result<()> {
    let mut t = layout.table();
    let mut header = vec![
        "node",
        "slots before → after",
        "slot ranges after",
        "keys before → after",
        "keys % after",
    ];
    if has_bytes {
        header.extend(["bytes before → after", "bytes % after"]);
    }
    if has_ops {
        header.extend(["ops before → after", "ops % after"]);
    }
    let cpu = im.nodes.iter().any(|n| n.before.cpu_usec.is_some());
    if cpu {
        header.extend(["CPU µs before → after (measured)"]);
    }
    t.set_header(header);
    for n in &im.nodes {
        let mut name = n.name.clone();
        if n.added {
            name.push_str(" (new)");
        }
        if n.emptied {
            name.push_str(" (emptied)");
        }
        let ranges = if n.after.slots == 0 {
            "-".to_string()
        } else {
            short_ranges(&n.after.slot_ranges, 3)
        };
        let mut row = vec![
            Cell::new(name),
            right(format!("{} → {}", n.before.slots, n.after.slots)),
            Cell::new(ranges),
            right(format!("{} → {}", n.before.keys, n.after.keys)),
            right(pct(n.after.share)),
        ];
        if has_bytes {
            row.push(right(format!(
                "{} → {}",
                human_bytes(n.before.bytes),
                human_bytes(n.after.bytes)
            )));
            row.push(right(pct(n.after.share_bytes)));
        }
        if has_ops {
            row.push(right(format!("{:.1} → {:.1}", n.before.ops, n.after.ops)));
            row.push(right(pct(n.after.share_ops)));
        }
        if cpu {
            row.push(right(format!(
                "{:.0} → {:.0}",
                n.before.cpu_usec.unwrap_or(0.0),
                n.after.cpu_usec.unwrap_or(0.0)
            )));
        }
        t.add_row(row);
    }
    writeln!(out, "{t}")
}

/// The plan in one line. `exact`: key counts are the servers' own (no sample stands for
/// them), so its keys are keys, not sample keys.
fn plan_summary(p: &MigrationPlan, has_bytes: bool, exact: bool) -> String {
    let im = &p.impact;
    let mut s = format!(
        "{} move(s), {} slots, {} {}",
        im.moves.len(),
        im.slots_moved,
        im.keys_moved,
        if exact { "keys" } else { "sample keys" }
    );
    if has_bytes {
        s.push_str(&format!(", {}", human_bytes(im.bytes_moved)));
    }
    s
}

/// Writes the report as tables.
pub fn render_table(
    out: &mut dyn Write,
    r: &MigrationReport,
    layout: &TextLayout,
) -> io::Result<()> {
    let (hb, ho) = (r.sample.has_bytes, r.sample.has_ops);
    let exact = r.sample.source.contains(&SampleSource::ExactCounts);
    let p = &r.plan;
    writeln!(
        out,
        "keyplan {} --preview: {} plan (balance by {})",
        r.command, p.plan, p.balance_by
    )?;
    writeln!(out, "topology: {}", r.topology)?;
    if !r.skipped_nodes.is_empty() {
        writeln!(
            out,
            "left out as redis-cli leaves them out (failed, no address or disconnected): {}",
            r.skipped_nodes.join(", ")
        )?;
    }
    if r.sample.source.is_empty() {
        writeln!(
            out,
            "sample: none (slots only; give --keys for keys, bytes and ops)"
        )?;
    } else if exact {
        // The servers counted every slot's keys: the sample gave only what they do not count.
        let rest: Vec<String> = r
            .sample
            .source
            .iter()
            .filter(|s| **s != SampleSource::ExactCounts)
            .map(ToString::to_string)
            .collect();
        writeln!(
            out,
            "keys: the servers' exact key counts per slot{}",
            if rest.is_empty() {
                String::new()
            } else {
                format!(
                    "; from a sample of {} keys: {}",
                    r.sample.keys,
                    rest.join("; ")
                )
            }
        )?;
    } else {
        writeln!(
            out,
            "sample: {} keys from {}{}",
            r.sample.keys,
            r.sample
                .source
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
            if r.sample.scale != 1.0 {
                format!(" (estimates × {})", r.sample.scale)
            } else {
                String::new()
            }
        )?;
    }
    writeln!(out)?;
    if let Some(m) = &p.message {
        writeln!(out, "{m}")?;
    }
    if p.needed {
        writeln!(out, "Moves: {}", plan_summary(p, hb, exact))?;
        moves_table(out, &p.impact, hb, layout)?;
    }
    writeln!(out, "\nNodes:")?;
    nodes_table(out, &p.impact, hb, ho, layout)?;
    writeln!(
        out,
        "Skew (busiest node ÷ mean, before → after): {}",
        skew_line(&p.impact.skew.before, &p.impact.skew.after)
    )?;
    if p.needed
        && let Some(line) = skew_raised(&p.impact.skew.before, &p.impact.skew.after)
    {
        writeln!(out, "Note: {line}")?;
    }
    if let Some(s) = p.migration_seconds {
        writeln!(out, "Estimated migration time: {}", duration(s))?;
    }
    if let Some(t) = &r.time_estimate {
        writeln!(
            out,
            "Time to move: key by key (CLUSTER SETSLOT + MIGRATE, as redis-cli reshard) {} in {} round trips; atomic slot migration (Valkey 9 CLUSTER MIGRATESLOTS, Redis 8.4 CLUSTER MIGRATION IMPORT) {} in {} round trips",
            duration(t.key_by_key.seconds),
            t.key_by_key.round_trips,
            duration(t.atomic.seconds),
            t.atomic.round_trips
        )?;
        writeln!(
            out,
            "  assuming {} (--migrate-rtt, --migrate-rate in bytes, --pipeline)",
            t.described
        )?;
    }
    if let Some(c) = &r.compare {
        writeln!(
            out,
            "\nCompared with {} (balance by {}):",
            c.plan, c.balance_by
        )?;
        if let Some(m) = &c.message {
            writeln!(out, "  {m}")?;
        }
        writeln!(out, "  {}", plan_summary(c, hb, exact))?;
        writeln!(
            out,
            "  skew (before → after): {}",
            skew_line(&c.impact.skew.before, &c.impact.skew.after)
        )?;
        if let Some(s) = c.migration_seconds {
            writeln!(out, "  estimated migration time: {}", duration(s))?;
        }
    }
    if !r.batches.is_empty() {
        writeln!(out, "\nBatches touching slots that move:")?;
        let mut t = layout.table();
        t.set_header([
            "batch",
            "client",
            "slots moving",
            "now",
            "during the move",
            "ASK",
            "TRYAGAIN",
            "after (old map)",
            "MOVED",
        ]);
        for m in &r.batches {
            t.add_row(vec![
                Cell::new(&m.batch),
                Cell::new(m.client),
                Cell::new(short_ranges(&m.slots_in_motion, 3)),
                Cell::new(m.baseline.name()),
                Cell::new(m.during.name()),
                right(m.ask),
                Cell::new(if m.tryagain { "possible" } else { "-" }),
                Cell::new(m.after.name()),
                right(m.moved),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    if !r.moving_big_keys.is_empty() {
        let mut t = super::new_table();
        t.set_header(vec![
            "key", "slot", "type", "elements", "memory", "in file", "from", "to",
        ]);
        for k in &r.moving_big_keys {
            t.add_row(vec![
                Cell::new(super::display_key(&k.key.key.0)),
                right(k.key.slot),
                Cell::new(&k.key.kind),
                right(
                    k.key
                        .elements
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| "?".into()),
                ),
                right(super::analyze::human_bytes(k.key.memory)),
                right(
                    k.key
                        .serialized
                        .map(super::analyze::human_bytes)
                        .unwrap_or_else(|| "-".into()),
                ),
                Cell::new(&k.from),
                Cell::new(&k.to),
            ]);
        }
        writeln!(out, "\nBiggest keys in the slots that move\n{t}")?;
    }
    if !r.warnings.is_empty() {
        writeln!(out, "\nWarnings:")?;
        for w in &r.warnings {
            writeln!(out, "  - {}", w.text)?;
        }
    }
    out.flush()
}
