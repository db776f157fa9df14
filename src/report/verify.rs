//! Renders `keyplan verify`'s report: a table per node, the slots that differ, the key
//! dumps' check and a verdict line; or JSON.

use super::TextLayout;
use super::render::{Format, Render, unsupported};
use crate::migrate::verify::{KeyTolerance, NodeCheck, SlotCheck, ValuesCheck, VerifyReport};
use comfy_table::{Cell, CellAlignment};
use std::io::{self, Write};

/// Rows of slots shown in a table (JSON lists every one).
const SLOT_ROWS: usize = 30;

/// Writes the report as JSON (one line).
pub fn render_json(out: &mut dyn Write, r: &VerifyReport) -> io::Result<()> {
    super::json::write_document(out, super::json::VERIFY, r)
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

/// `n thing` or `n things`.
fn count(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn slots_cell(n: &NodeCheck) -> String {
    let now = or_dash(n.slots_now);
    let mut s = format!("{} → {now}", n.slots_expected);
    if n.slots_lacking > 0 || n.slots_extra > 0 {
        s.push_str(&format!(
            " ({} lacking, {} extra)",
            n.slots_lacking, n.slots_extra
        ));
    }
    s
}

fn nodes_table(out: &mut dyn Write, r: &VerifyReport, layout: &TextLayout) -> io::Result<()> {
    let missing = r.keys.is_some();
    // Without a preview there is nothing to set the slots and keys against.
    let preview = r.preview.is_some();
    let mut t = layout.table();
    let mut header = vec!["node", "verdict"];
    if preview {
        header.extend(["slots (preview → now)", "keys (preview)"]);
    } else {
        header.push("slots");
    }
    header.extend(["keys (now)", "keys in slots it does not own"]);
    if missing {
        header.push("missing keys");
    }
    t.set_header(header);
    t.keep_to_last("verdict");
    for n in &r.nodes {
        let mut row = vec![Cell::new(&n.name), Cell::new(n.verdict.words())];
        if preview {
            row.extend([Cell::new(slots_cell(n)), right(or_dash(n.keys_expected))]);
        } else {
            row.push(right(or_dash(n.slots_now)));
        }
        row.extend([right(or_dash(n.keys_now)), right(n.stray_keys)]);
        if missing {
            row.push(right(or_dash(n.missing_keys)));
        }
        t.add_row(row);
    }
    writeln!(out, "{t}")
}

/// Slots whose only difference is their owner, run together as ranges when consecutive with
/// the same preview owner and owner now; others one row each.
fn slot_rows(slots: &[SlotCheck]) -> Vec<(String, &SlotCheck)> {
    let mut rows: Vec<(u16, u16, &SlotCheck)> = Vec::new();
    for c in slots {
        if let Some(last) = rows.last_mut()
            && c.owner_only()
            && last.2.owner_only()
            && last.1 + 1 == c.slot
            && last.2.expected == c.expected
            && last.2.owner == c.owner
        {
            last.1 = c.slot;
            continue;
        }
        rows.push((c.slot, c.slot, c));
    }
    rows.into_iter()
        .map(|(a, b, c)| {
            let text = if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            };
            (text, c)
        })
        .collect()
}

fn slots_table(out: &mut dyn Write, r: &VerifyReport, layout: &TextLayout) -> io::Result<()> {
    if r.slots.is_empty() {
        return Ok(());
    }
    writeln!(out, "slots not as previewed: {}", r.slots.len())?;
    let rows = slot_rows(&r.slots);
    let mut t = layout.table();
    let mut header = vec!["slots", "owner (preview)", "owner (now)", "what differs"];
    let missing = r.keys.is_some();
    if missing {
        header.push("missing keys");
    }
    t.set_header(header);
    for (text, c) in rows.iter().take(SLOT_ROWS) {
        let mut what = Vec::new();
        if c.expected != c.owner {
            what.push("owner".to_string());
        }
        what.extend(c.open.iter().cloned());
        what.extend(
            c.stray
                .iter()
                .map(|s| format!("{} on {}", count(s.keys, "key"), s.node)),
        );
        if c.missing_keys > 0 {
            what.push("keys missing".into());
        }
        let mut row = vec![
            Cell::new(text),
            Cell::new(c.expected.as_deref().unwrap_or("(none)")),
            Cell::new(c.owner.as_deref().unwrap_or("(unserved)")),
            Cell::new(what.join("; ")),
        ];
        if missing {
            row.push(right(c.missing_keys));
        }
        t.add_row(row);
    }
    writeln!(out, "{t}")?;
    if rows.len() > SLOT_ROWS {
        writeln!(
            out,
            "… and {} more rows (--format json lists every slot)",
            rows.len() - SLOT_ROWS
        )?;
    }
    Ok(())
}

/// Writes the report as text.
pub fn render_table(out: &mut dyn Write, r: &VerifyReport, layout: &TextLayout) -> io::Result<()> {
    match (&r.command, &r.preview) {
        (Some(command), Some(preview)) => writeln!(
            out,
            "keyplan verify: the cluster against the {command} preview in {}",
            layout.line(preview)
        )?,
        _ => writeln!(
            out,
            "keyplan verify: the cluster against its own slot map (no preview: open slots, keys left on masters that do not own their slot, and the keys of --keys)"
        )?,
    }
    writeln!(out, "cluster: {}", r.cluster)?;
    nodes_table(out, r, layout)?;
    match r.key_tolerance {
        _ if !r.keys_judged => {}
        KeyTolerance::Exact => {}
        KeyTolerance::Keys(n) => writeln!(out, "keys (now) may differ from the preview's by {n}")?,
        KeyTolerance::Percent(p) => {
            writeln!(out, "keys (now) may differ from the preview's by {p}%")?
        }
    }
    if !r.keys_judged && r.nodes.iter().any(|n| n.keys_expected.is_some()) {
        writeln!(
            out,
            "keys (preview) are a sample's: not held against the cluster's (a preview with --cluster and every key sampled is; --keys checks each key)"
        )?;
    }
    slots_table(out, r, layout)?;
    if let Some(k) = &r.keys {
        writeln!(
            out,
            "keys of {}: {} looked up on the owner of their slot, {} missing",
            k.sources.join(", "),
            k.checked,
            k.missing
        )?;
        for m in &k.examples {
            writeln!(
                out,
                "  missing: {} (slot {}, owner {})",
                layout.key(&m.key.0),
                m.slot,
                m.node.as_deref().unwrap_or("none")
            )?;
        }
        if k.missing > k.examples.len() as u64 {
            writeln!(out, "  … and {} more", k.missing - k.examples.len() as u64)?;
        }
        if k.expiry_checked > 0 {
            writeln!(
                out,
                "expiries: {} keys compared with the dump's, {} not as they were; {} that had an expiry are gone (taken as expired: the dump says whether a key expires, not when)",
                k.expiry_checked, k.expiry_changed, k.gone_expiring
            )?;
        }
        for e in &k.expiry_examples {
            writeln!(
                out,
                "  {}: {} (slot {}, owner {})",
                if e.had_expiry {
                    "expiry lost"
                } else {
                    "expiry set since"
                },
                layout.key(&e.key.0),
                e.slot,
                e.node.as_deref().unwrap_or("none")
            )?;
        }
        if k.expiry_changed > k.expiry_examples.len() as u64 {
            writeln!(
                out,
                "  … and {} more",
                k.expiry_changed - k.expiry_examples.len() as u64
            )?;
        }
    }
    if let Some(v) = &r.values {
        values_section(out, v, layout)?;
    }
    if r.matches {
        match r.preview {
            Some(_) => writeln!(out, "result: the cluster matches the preview"),
            None => writeln!(
                out,
                "result: no slot open, no key outside its slot's owner{}",
                match (r.keys.is_some(), r.values.is_some()) {
                    (_, true) => ", every key of the source as it is there",
                    (true, false) => ", every key of the dumps found",
                    _ => "",
                }
            ),
        }
    } else {
        let mut parts = Vec::new();
        if r.slots_misplaced > 0 {
            parts.push(format!(
                "{} with another owner",
                count(r.slots_misplaced as u64, "slot")
            ));
        }
        if r.slots_open > 0 {
            parts.push(format!("{} left open", count(r.slots_open as u64, "slot")));
        }
        if r.stray_keys > 0 {
            parts.push(format!(
                "{} on masters that do not own their slot",
                count(r.stray_keys, "key")
            ));
        }
        if let Some(k) = r.keys.as_ref().filter(|k| k.missing > 0) {
            parts.push(format!("{} missing", count(k.missing, "key")));
        }
        if let Some(k) = r.keys.as_ref().filter(|k| k.expiry_changed > 0) {
            parts.push(format!(
                "{} with another expiry",
                count(k.expiry_changed, "key")
            ));
        }
        if let Some(v) = r.values.as_ref().filter(|v| v.keys_differing > 0) {
            parts.push(format!(
                "{} not as on the source",
                count(v.keys_differing, "key")
            ));
        }
        let nodes = r.nodes.iter().filter(|n| !n.verdict.ok()).count();
        if nodes > 0 {
            parts.push(format!("{} not as previewed", count(nodes as u64, "node")));
        }
        writeln!(
            out,
            "result: DIFFERS{}: {}",
            if r.preview.is_some() {
                " from the preview"
            } else {
                ""
            },
            parts.join(", ")
        )
    }
}

/// The source's keys against the cluster's: the counts, then the first differences.
fn values_section(out: &mut dyn Write, v: &ValuesCheck, layout: &TextLayout) -> io::Result<()> {
    writeln!(
        out,
        "keys of {}: {} compared with the owner of their slot (type, expiry within {} ms, value by {}), {} differ",
        v.sources.join(", "),
        v.checked,
        v.ttl_tolerance_ms,
        v.method.words(),
        v.keys_differing
    )?;
    let kinds = [
        (v.missing, "missing"),
        (v.type_differs, "of another type"),
        (v.value_differs, "with another value"),
        (v.ttl_lost, "whose expiry is gone"),
        (v.ttl_added, "with an expiry the source's has not"),
        (v.ttl_off, "whose expiry is further off than the tolerance"),
    ];
    let said: Vec<String> = kinds
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{} {what}", count(*n, "key")))
        .collect();
    if !said.is_empty() {
        writeln!(out, "  {}", said.join(", "))?;
    }
    if v.gone_at_source > 0 || v.expired > 0 {
        writeln!(
            out,
            "  not counted: {} gone from the source before they were read, {} missing that were to expire within the tolerance",
            v.gone_at_source, v.expired
        )?;
    }
    if v.examples.is_empty() {
        return Ok(());
    }
    let ttl = |t: Option<u64>| t.map_or_else(|| "none".to_string(), |t| format!("{t} ms"));
    let mut t = layout.table();
    t.set_header(vec![
        "key",
        "slot",
        "owner",
        "differs",
        "source (type, expiry)",
        "cluster (type, expiry)",
    ]);
    for e in &v.examples {
        t.add_row(vec![
            Cell::new(layout.key(&e.key.0)),
            right(e.slot),
            Cell::new(e.node.as_deref().unwrap_or("none")),
            Cell::new(e.differs.words()),
            Cell::new(format!("{}, {}", e.source_type, ttl(e.source_ttl_ms))),
            Cell::new(match &e.target_type {
                Some(k) => format!("{k}, {}", ttl(e.target_ttl_ms)),
                None => "(missing)".to_string(),
            }),
        ]);
    }
    writeln!(out, "{t}")?;
    let listed = v.examples.len() as u64;
    let all = v.missing + v.type_differs + v.value_differs + v.ttl_lost + v.ttl_added + v.ttl_off;
    if all > listed {
        writeln!(
            out,
            "  … and {} more (the first 20 of each kind are listed)",
            all - listed
        )?;
    }
    Ok(())
}

impl Render for VerifyReport {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        match format {
            Format::Json => render_json(out, self),
            Format::Table => render_table(out, self, layout),
            Format::Markdown => super::markdown::from_table_output(out, |out, layout| {
                render_table(out, self, layout)
            }),
            other => Err(unsupported("verify", other)),
        }
    }
}
