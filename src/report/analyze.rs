//! Renders an [`AnalyzeReport`]: readable tables with the verdict first, or JSON.

use super::{TextLayout, display_key};
use crate::analyze::{AnalyzeReport, OpsSource, TagReport, TopologyKind};
use comfy_table::{Cell, CellAlignment};
use std::io::{self, Write};

/// Bytes in binary units with one decimal (`1.5 MiB`).
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

/// Writes the report as JSON (one line).
pub fn render_json(out: &mut dyn Write, r: &AnalyzeReport) -> io::Result<()> {
    super::json::write_document(out, super::json::ANALYZE, r)
}

/// A horizontal bar of `width` cells for a value in 0..=1 (eighth-block resolution).
pub fn bar(v: f64, width: usize) -> String {
    const PARTS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
    let eighths = (v.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(PARTS[eighths % 8 - 1]);
    }
    s
}

/// A sparkline of values (relative to their maximum).
pub fn sparkline(values: &[f64]) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().cloned().fold(0.0f64, f64::max);
    values
        .iter()
        .map(|&v| {
            if max <= 0.0 {
                ' '
            } else {
                LEVELS[((v / max) * 7.0).round() as usize]
            }
        })
        .collect()
}

/// An analyze report with what its text and HTML renderings show around it.
pub struct AnalyzeView<'a> {
    /// The report.
    pub report: &'a AnalyzeReport,
    /// What was read, in words.
    pub inputs: &'a str,
    /// Rows in the top lists.
    pub top: usize,
    /// Share bars and a sparkline (a terminal without NO_COLOR).
    pub charts: bool,
}

/// Writes the report as tables, one section after another. `inputs` names what was read;
/// `top` bounds the long lists. With `charts` (a terminal without NO_COLOR), share bars and a
/// slot-density sparkline are added; pipes and files get plain tables.
pub fn render_table(
    out: &mut dyn Write,
    r: &AnalyzeReport,
    inputs: &str,
    top: usize,
    charts: bool,
    layout: &TextLayout,
) -> io::Result<()> {
    render_heading(out, r, inputs)?;
    render_nodes(out, r, charts, layout)?;
    render_skew(out, r, layout)?;
    render_tags(out, r, layout)?;
    render_slots(out, r, layout)?;
    let shown = r.patterns.len().min(top);
    render_patterns(out, r, shown, layout)?;
    render_pattern_nodes(out, r, shown, layout)?;
    if let Some(snap) = &r.snapshot {
        render_snapshot(out, snap, layout)?;
    }
    if r.totals.malformed_lines > 0 {
        writeln!(
            out,
            "\n{} malformed lines were skipped (see stderr)",
            r.totals.malformed_lines
        )?;
    }
    out.flush()
}

/// What was read, the topology, the verdict and the notes.
fn render_heading(out: &mut dyn Write, r: &AnalyzeReport, inputs: &str) -> io::Result<()> {
    let t = &r.totals;
    writeln!(out, "keyplan analyze: {} keys from {inputs}", t.keys)?;
    writeln!(
        out,
        "topology: {} ({} nodes)",
        r.topology.source, r.topology.nodes
    )?;
    if let Some(sampled) = t.sampled {
        writeln!(
            out,
            "keys per node and slot: the servers' exact counts; patterns and tags (≈): estimates for the whole cluster from a sample of {sampled} keys, each node's sampled keys weighing its exact keys over its sampled ones"
        )?;
    }
    if let Some(src) = &t.ops_source {
        writeln!(out, "ops: {src}")?;
    }
    if !r.topology.uncovered_slots.is_empty() {
        writeln!(
            out,
            "uncovered slots: {} ({} keys there)",
            crate::topology::format_ranges(&r.topology.uncovered_slots),
            t.uncovered_keys
        )?;
    }
    for m in &r.topology.migrating {
        let dir = match m.direction {
            crate::topology::MigrationDirection::Migrating => "migrating to",
            crate::topology::MigrationDirection::Importing => "importing from",
        };
        writeln!(
            out,
            "slot {} is {dir} {} (marker on {})",
            m.slot, m.peer, m.node
        )?;
    }
    writeln!(out)?;
    writeln!(out, "Verdict: {}", r.skew.verdict)?;
    for n in &r.notes {
        writeln!(out, "Note: {}", n.text)?;
    }
    writeln!(out)?;
    Ok(())
}

/// Which optional columns the nodes table has.
struct NodeColumns {
    ring: bool,
    bytes: bool,
    ops: bool,
    cpu_only: bool,
    net: bool,
    dataset: bool,
    charts: bool,
}

impl NodeColumns {
    fn of(r: &AnalyzeReport, charts: bool) -> NodeColumns {
        let t = &r.totals;
        NodeColumns {
            ring: r.topology.kind == TopologyKind::Ring,
            bytes: t.has_bytes,
            ops: t.has_ops,
            cpu_only: !t.has_ops && r.nodes.iter().any(|n| n.load.is_some()),
            net: r
                .nodes
                .iter()
                .any(|n| n.load.is_some_and(|l| l.network_bytes_in.is_some())),
            dataset: r.nodes.iter().any(|n| n.dataset_bytes.is_some()),
            charts,
        }
    }

    fn header(&self, r: &AnalyzeReport) -> Vec<&'static str> {
        let mut header = if self.ring {
            vec!["server", "address", "ring share", "keys", "keys %"]
        } else {
            vec!["node", "slots", "slot ranges", "keys", "keys %"]
        };
        if self.bytes {
            header.extend(["bytes", "bytes %"]);
        }
        if self.ops {
            let cpu = r.totals.ops_source.as_ref().is_some_and(OpsSource::is_cpu);
            header.extend([if cpu { "CPU µs" } else { "ops" }, "ops %"]);
        }
        if self.cpu_only {
            header.push("CPU µs (INFO)");
        }
        if self.net {
            header.extend(["net in", "net out"]);
        }
        if self.dataset {
            header.push("data (INFO)");
        }
        if self.charts {
            header.push("keys ÷ fair share (| = 1×)");
        }
        header
    }

    fn row(&self, n: &crate::analyze::NodeReport) -> Vec<Cell> {
        let mut ranges =
            crate::topology::format_ranges(&n.slot_ranges[..n.slot_ranges.len().min(4)]);
        if n.slot_ranges.len() > 4 {
            ranges.push_str(&format!(" … ({} ranges)", n.slot_ranges.len()));
        }
        let mut name = n.id.clone();
        if !n.flags.is_empty() {
            name.push_str(&format!(" [{}]", n.flags.join(",")));
        }
        let mut row = if self.ring {
            vec![
                Cell::new(name),
                Cell::new(n.address.as_deref().unwrap_or("-")),
                right(pct(n.share_slots)),
                right(n.keys),
                right(pct(n.share_keys)),
            ]
        } else {
            vec![
                Cell::new(name),
                right(n.slots),
                Cell::new(ranges),
                right(n.keys),
                right(pct(n.share_keys)),
            ]
        };
        if self.bytes {
            let b = match n.estimated_bytes {
                // Every key was sampled: the figure is exact.
                Some(e) if (e.high - e.low).abs() < 0.5 => human_bytes(e.value.round() as u64),
                // The whole node, estimated from the sample, with its 95% interval.
                Some(e) => format!(
                    "≈{} ±{}",
                    human_bytes(e.value.round() as u64),
                    human_bytes(((e.high - e.low) / 2.0).round() as u64)
                ),
                None => human_bytes(n.bytes),
            };
            row.extend([right(b), right(pct(n.share_bytes))]);
        }
        if self.ops {
            row.extend([right(num(n.ops)), right(pct(n.share_ops))]);
        }
        if self.cpu_only {
            row.push(right(
                n.load
                    .map(|l| l.cpu_usec.to_string())
                    .unwrap_or_else(|| "-".into()),
            ));
        }
        if self.net {
            let b = |x: Option<u64>| x.map(human_bytes).unwrap_or_else(|| "-".into());
            row.push(right(b(n.load.and_then(|l| l.network_bytes_in))));
            row.push(right(b(n.load.and_then(|l| l.network_bytes_out))));
        }
        if self.dataset {
            row.push(right(
                n.dataset_bytes
                    .map(human_bytes)
                    .unwrap_or_else(|| "-".into()),
            ));
        }
        if self.charts {
            // The bar is the node's share over its fair share, on a scale where the mark is
            // 1× and the end 1.5×, so small excesses show.
            const W: usize = 24;
            let ratio = if n.share_slots > 0.0 {
                n.share_keys / n.share_slots
            } else {
                0.0
            };
            let mut b: Vec<char> = format!("{:<W$}", bar(ratio / 1.5, W)).chars().collect();
            let mark = (W as f64 / 1.5).round() as usize;
            if b.get(mark) == Some(&' ') {
                b[mark] = '|';
            }
            let mut text: String = b.into_iter().collect();
            text.push_str(&format!(" {ratio:.2}×"));
            row.push(Cell::new(text));
        }
        row
    }
}

/// Each node's keys, bytes and load, and the keys along the slots.
fn render_nodes(
    out: &mut dyn Write,
    r: &AnalyzeReport,
    charts: bool,
    layout: &TextLayout,
) -> io::Result<()> {
    let columns = NodeColumns::of(r, charts);
    let mut nodes = layout.table();
    nodes.set_header(columns.header(r));
    // The servers' exact data figure is out of line: the verdict rests on it, so it is the
    // last column a narrow terminal loses.
    if r.skew.dataset.is_some() {
        nodes.keep_to_last("data (INFO)");
    }
    for n in &r.nodes {
        nodes.add_row(columns.row(n));
    }
    writeln!(out, "Nodes\n{nodes}\n")?;
    if charts && r.slot_keys.len() == crate::slot::SLOT_COUNT {
        let buckets: Vec<f64> = r
            .slot_keys
            .chunks(crate::slot::SLOT_COUNT / 64)
            .map(|c| c.iter().sum::<u64>() as f64)
            .collect();
        writeln!(
            out,
            "Keys along the slots (64 buckets of 256 slots): {}\n",
            sparkline(&buckets)
        )?;
    }

    Ok(())
}

/// Max over mean, CV and the hottest node, per weight.
fn render_skew(out: &mut dyn Write, r: &AnalyzeReport, layout: &TextLayout) -> io::Result<()> {
    // A ring places keys, not slots: its nodes own no slot share to compare with.
    let slots = r.topology.kind != TopologyKind::Ring;
    let mut skew = layout.table();
    let mut header = vec!["weight", "max/mean", "CV", "hottest node", "its share"];
    if slots {
        header.push("its slots");
    }
    header.push("coldest share");
    skew.set_header(header);
    for (what, s) in [
        ("keys", &r.skew.keys),
        ("bytes", &r.skew.bytes),
        ("ops", &r.skew.ops),
    ] {
        if let Some(s) = s {
            let mut row = vec![
                Cell::new(what),
                right(format!("{:.2}", s.max_over_mean)),
                right(format!("{:.3}", s.cv)),
                Cell::new(&s.hottest_node),
                right(pct(s.hottest_share)),
            ];
            if slots {
                row.push(right(pct(s.hottest_slot_share)));
            }
            row.push(right(pct(s.coldest_share)));
            skew.add_row(row);
        }
    }
    writeln!(out, "Skew\n{skew}\n")?;

    Ok(())
}

/// A tag's key count as the tables print it: the exact count where every key of the tag was
/// counted (and, on a live cluster, every key read), `≈` for a sample's estimate or a sketch's
/// figure (`keys_error` in JSON bounds it), `≥` for keys carried along a by-bytes ranking.
pub fn tag_keys_text(h: &TagReport) -> String {
    match h.estimated_keys {
        Some(e) if h.exact && (e - h.keys as f64).abs() < 0.5 => h.keys.to_string(),
        Some(e) => format!("≈{}", e.round()),
        None if h.exact => h.keys.to_string(),
        // Counted only while the sketch by bytes held the tag: a lower bound.
        None if h.keys_lower_bound => format!("≥{}", h.keys),
        None if h.keys_error > 0 => format!("≈{}", h.keys),
        // Both sketches' bounds meet (and the slot's count): the figure is known.
        None => h.keys.to_string(),
    }
}

/// A tag's bytes as the tables print them: `≈` where a sketch's figure stands for them.
pub fn tag_bytes_text(h: &TagReport) -> String {
    match h.estimated_bytes {
        // Every key read: the sample is the cluster.
        Some(e) if h.exact && (e - h.bytes as f64).abs() < 0.5 => human_bytes(h.bytes),
        // A live sample's estimate for the whole cluster.
        Some(e) => format!("≈{}", human_bytes(e.round() as u64)),
        None if h.exact => human_bytes(h.bytes),
        None => format!("≈{}", human_bytes(h.bytes)),
    }
}

/// Whether most of a tag's ranked figure may be the sketch's error (a 2-key tag that reads
/// 31): such rows are left out of the tables (JSON keeps them with their error).
pub fn tag_mostly_error(h: &TagReport, by_bytes: bool) -> bool {
    h.mostly_error(by_bytes)
}

/// The line under a tag table that left rows out, if it did.
pub fn tag_rows_left_out(tags: &[TagReport], by_bytes: bool) -> Option<String> {
    let n = tags
        .iter()
        .filter(|h| tag_mostly_error(h, by_bytes))
        .count();
    (n > 0).then(|| {
        format!(
            "{n} more {} left out: most of {} figure may be the sketch's error (too many distinct tags to count each; JSON has them with keys_error and bytes_error)",
            if n == 1 { "tag" } else { "tags" },
            if n == 1 { "its" } else { "their" }
        )
    })
}

/// The hash tags: how many keys carry one, the top tags by keys and by bytes.
fn render_tags(out: &mut dyn Write, r: &AnalyzeReport, layout: &TextLayout) -> io::Result<()> {
    let t = &r.totals;
    let wb = t.has_bytes;
    // A ring places a tag's keys by the tag itself: there is no slot to show.
    let slots = r.topology.kind != TopologyKind::Ring;
    match t.sampled {
        // A live sample: the count is the sample's, the share stands for the cluster.
        Some(sampled) => writeln!(
            out,
            "Hash tags: {} of the {} sampled keys ({}) carry one; about {} distinct tags in the sample",
            t.tagged_keys,
            sampled,
            pct(t.tagged_share),
            t.distinct_tags_estimate
        )?,
        // A ring that reads no tag in any key (twemproxy without hash_tag reads none).
        None if !slots && t.tagged_keys == 0 => writeln!(
            out,
            "Hash tags: none: the ring hashes each key whole (a {{…}} in a key is hashed with the rest)"
        )?,
        None => writeln!(
            out,
            "Hash tags: {} keys ({}) carry one; about {} distinct tags",
            t.tagged_keys,
            pct(t.tagged_share),
            t.distinct_tags_estimate
        )?,
    }
    let place = |h: &TagReport| -> Vec<Cell> {
        let mut cells = vec![Cell::new(display_key(&h.tag.0))];
        if slots {
            cells.push(right(h.slot));
        }
        cells.push(Cell::new(h.node.as_deref().unwrap_or("-")));
        cells
    };
    let place_header = |rest: &[&'static str]| -> Vec<&'static str> {
        let mut hd = vec!["tag"];
        if slots {
            hd.push("slot");
        }
        hd.push("node");
        hd.extend(rest.iter().copied());
        hd
    };
    let shown: Vec<&TagReport> = r
        .hot_tags
        .iter()
        .filter(|h| !tag_mostly_error(h, false))
        .collect();
    if !shown.is_empty() {
        let mut tags = layout.table();
        let mut rest = vec!["keys", "keys %"];
        if wb {
            rest.extend(["bytes", "bytes %"]);
        }
        rest.push("hot");
        tags.set_header(place_header(&rest));
        for h in shown {
            let mut row = place(h);
            row.extend([right(tag_keys_text(h)), right(pct(h.share_keys))]);
            if wb {
                row.extend([right(tag_bytes_text(h)), right(pct(h.share_bytes))]);
            }
            row.push(Cell::new(if h.hot { "HOT" } else { "" }));
            tags.add_row(row);
        }
        writeln!(out, "Top tags by keys\n{tags}")?;
    }
    if let Some(line) = tag_rows_left_out(&r.hot_tags, false) {
        writeln!(out, "{line}")?;
    }
    let shown: Vec<&TagReport> = r
        .hot_tags_by_bytes
        .iter()
        .filter(|h| !tag_mostly_error(h, true))
        .collect();
    if !shown.is_empty() {
        let mut tags = layout.table();
        tags.set_header(place_header(&["bytes", "bytes %", "keys", "hot"]));
        for h in shown {
            let mut row = place(h);
            row.extend([
                right(tag_bytes_text(h)),
                right(pct(h.share_bytes)),
                right(tag_keys_text(h)),
                Cell::new(if h.hot { "HOT" } else { "" }),
            ]);
            tags.add_row(row);
        }
        writeln!(out, "Top tags by bytes\n{tags}")?;
    }
    if let Some(line) = tag_rows_left_out(&r.hot_tags_by_bytes, true) {
        writeln!(out, "{line}")?;
    }
    writeln!(out)?;
    Ok(())
}

/// The hottest slots by keys, and by CPU when the servers measured it.
fn render_slots(out: &mut dyn Write, r: &AnalyzeReport, layout: &TextLayout) -> io::Result<()> {
    // A ring has no slots: it places each key by its own hash.
    if r.topology.kind == TopologyKind::Ring {
        return Ok(());
    }
    let wb = r.totals.has_bytes;
    let mut slots = layout.table();
    let mut header = vec!["slot", "node", "keys", "keys %"];
    if wb {
        header.extend(["bytes", "bytes %"]);
    }
    slots.set_header(header);
    for s in &r.hot_slots {
        let mut row = vec![
            right(s.slot),
            Cell::new(s.node.as_deref().unwrap_or("-")),
            right(s.keys),
            right(pct(s.share_keys)),
        ];
        if wb {
            row.extend([right(human_bytes(s.bytes)), right(pct(s.share_bytes))]);
        }
        slots.add_row(row);
    }
    writeln!(
        out,
        "Hottest slots (a slot holds 0.006% of keys on average)\n{slots}\n"
    )?;
    if !r.hot_slots_by_ops.is_empty() {
        let mut by_load = layout.table();
        by_load.set_header(vec!["slot", "node", "CPU µs", "CPU %", "keys"]);
        for s in &r.hot_slots_by_ops {
            by_load.add_row(vec![
                right(s.slot),
                Cell::new(s.node.as_deref().unwrap_or("-")),
                right(num(s.ops)),
                right(pct(s.share_ops)),
                right(s.keys),
            ]);
        }
        writeln!(
            out,
            "Busiest slots by CPU (CLUSTER SLOT-STATS)\n{by_load}\n"
        )?;
    }

    Ok(())
}

/// The first `shown` key patterns.
fn render_patterns(
    out: &mut dyn Write,
    r: &AnalyzeReport,
    shown: usize,
    layout: &TextLayout,
) -> io::Result<()> {
    let wb = r.totals.has_bytes;
    let total_patterns = r.patterns.len() + r.patterns_not_listed;
    let mut pats = layout.table();
    let mut header = vec!["pattern", "keys", "keys %"];
    if wb {
        header.extend(["bytes", "bytes %"]);
    }
    let expiry = r.patterns.iter().any(|p| p.keys_no_expiry.is_some());
    if expiry {
        header.push("no expiry");
    }
    header.extend(["tag", "distinct tags", "hottest node", "example"]);
    pats.set_header(header);
    for p in r.patterns.iter().take(shown) {
        let mut row = vec![
            Cell::new(&p.pattern),
            right(match p.estimated_keys {
                // Every key read (`--sample all`): the estimate is the count.
                Some(e) if (e - p.keys as f64).abs() < 0.5 => p.keys.to_string(),
                Some(e) => format!("≈{}", e.round()),
                None => p.keys.to_string(),
            }),
            right(pct(p.share_keys)),
        ];
        if wb {
            row.extend([right(human_bytes(p.bytes)), right(pct(p.share_bytes))]);
        }
        if expiry {
            let share = match p.keys_no_expiry {
                Some(n) if p.keys > 0 => pct(n as f64 / p.keys as f64),
                _ => "-".into(),
            };
            row.push(right(share));
        }
        row.extend([
            Cell::new(p.tag.as_deref().unwrap_or("-")),
            right(
                p.tag_cardinality
                    .map(|c| format!("~{c}"))
                    .unwrap_or_else(|| "-".into()),
            ),
            Cell::new(p.hottest_node.as_deref().unwrap_or("-")),
            Cell::new(
                p.examples
                    .first()
                    .map(|e| display_key(&e.0).into_owned())
                    .unwrap_or_default(),
            ),
        ]);
        pats.add_row(row);
    }
    writeln!(out, "Patterns ({shown} of {total_patterns})\n{pats}")?;
    if r.patterns_not_listed > 0 {
        writeln!(
            out,
            "({} more patterns, not listed, hold {} keys and {})",
            r.patterns_not_listed,
            r.keys_not_listed,
            human_bytes(r.bytes_not_listed)
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// Headers for a narrow terminal when node names are longer than the figures under them
/// (a live cluster's `host:port`): the ports when every node is on one host (the legend names
/// the host), else `#1`, `#2`, … with a legend of what each stands for; `None` when the names
/// are short already (`master-0`).
fn short_node_headers(nodes: &[crate::analyze::NodeReport]) -> Option<(Vec<String>, String)> {
    // A figure is `100.0% ▲` at most: a name that long costs the table nothing.
    if nodes.iter().all(|n| n.id.chars().count() <= 8) {
        return None;
    }
    let split: Vec<Option<(&str, &str)>> = nodes.iter().map(|n| n.id.rsplit_once(':')).collect();
    let host = split.first().copied().flatten().map(|(h, _)| h);
    let one_host = host.is_some()
        && split
            .iter()
            .all(|s| s.is_some_and(|(h, p)| Some(h) == host && p.chars().count() <= 7));
    if let (true, Some(host)) = (one_host, host) {
        let ports = split
            .iter()
            .flatten()
            .map(|(_, p)| format!(":{p}"))
            .collect();
        return Some((ports, format!("(nodes: ports of {host})")));
    }
    let short: Vec<String> = (1..=nodes.len()).map(|i| format!("#{i}")).collect();
    let legend = nodes
        .iter()
        .zip(&short)
        .map(|(n, s)| format!("{s} {}", n.id))
        .collect::<Vec<_>>()
        .join(", ");
    Some((short, format!("(nodes: {legend})")))
}

/// How the first `shown` patterns' keys spread over the nodes.
fn render_pattern_nodes(
    out: &mut dyn Write,
    r: &AnalyzeReport,
    shown: usize,
    layout: &TextLayout,
) -> io::Result<()> {
    let nominal = r.topology.kind.nominal();
    let mut matrix = layout.table();
    // Short headers keep the comparison a table on a narrow terminal: the node's name only,
    // its share of the slots in the title.
    let mut header = vec!["pattern".to_string()];
    header.extend(r.nodes.iter().map(|n| n.id.clone()));
    matrix.set_header(header);
    if let Some((short, legend)) = short_node_headers(&r.nodes) {
        let mut header = vec!["pattern".to_string()];
        header.extend(short);
        matrix.short_headers(header, legend);
    }
    for p in r.patterns.iter().take(shown) {
        let mut row = vec![Cell::new(&p.pattern)];
        for (pn, n) in p.nodes.iter().zip(&r.nodes) {
            let mark = if n.share_slots > 0.0 && pn.share > 1.25 * n.share_slots && pn.keys > 0 {
                " ▲"
            } else {
                ""
            };
            row.push(right(format!("{}{mark}", pct(pn.share))));
        }
        matrix.add_row(row);
    }
    let shares: Vec<String> = r
        .nodes
        .iter()
        .map(|n| format!("{} {}", n.id, pct(n.share_slots)))
        .collect();
    writeln!(
        out,
        "Pattern × node: the share of each pattern's keys on each node (▲: more than 1.25× the node's {nominal} share; {nominal}: {})\n{matrix}",
        shares.join(", ")
    )?;
    Ok(())
}

fn render_snapshot(
    out: &mut dyn Write,
    s: &crate::analyze::snapshot::SnapshotReport,
    layout: &TextLayout,
) -> io::Result<()> {
    writeln!(out)?;
    if s.source == "sample" {
        writeln!(
            out,
            "Biggest keys of the sample: bytes by MEMORY USAGE; type, encoding, elements and expiry as their servers say now"
        )?;
    }
    for f in &s.files {
        let uninterpreted = match f.uninterpreted {
            0 => String::new(),
            n => format!(", {n} values not interpreted"),
        };
        writeln!(
            out,
            "Snapshot {}: RDB {}{}, {} keys, {}{uninterpreted}",
            f.file,
            f.rdb_version,
            f.server
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default(),
            f.keys,
            human_bytes(f.bytes),
        )?;
    }
    if !s.types.is_empty() {
        render_types(out, s, layout)?;
    }
    for (title, keys) in [
        ("Biggest keys by memory", &s.biggest_by_memory),
        ("Most elements", &s.biggest_by_elements),
    ] {
        if keys.is_empty() {
            continue;
        }
        let mut t = layout.table();
        t.set_header(vec![
            "key", "type", "encoding", "elements", "memory", "slot", "node", "ttl",
        ]);
        for k in keys {
            t.add_row(vec![
                Cell::new(layout.key(&k.key.key.0)),
                Cell::new(&k.key.kind),
                Cell::new(&k.key.encoding),
                right(
                    k.key
                        .elements
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| "?".into()),
                ),
                right(human_bytes(k.key.memory)),
                right(k.key.slot),
                Cell::new(k.node.as_deref().unwrap_or("-")),
                Cell::new(if k.key.expires { "yes" } else { "no" }),
            ]);
        }
        writeln!(out, "{title}\n{t}")?;
    }
    Ok(())
}

fn render_types(
    out: &mut dyn Write,
    s: &crate::analyze::snapshot::SnapshotReport,
    layout: &TextLayout,
) -> io::Result<()> {
    writeln!(
        out,
        "Memory (estimated): {}; keys with no expiry: {} of keys, {} of memory",
        s.total.memory_cell(human_bytes),
        pct(s.share_keys_no_expiry),
        pct(s.share_memory_no_expiry)
    )?;
    let mut types = layout.table();
    types.set_header(vec![
        "type",
        "keys",
        "keys %",
        "memory",
        "memory %",
        "elements",
        "no expiry",
        "in file",
    ]);
    for t in &s.types {
        types.add_row(vec![
            Cell::new(&t.kind),
            right(t.stats.keys),
            right(pct(t.share_keys)),
            right(t.stats.memory_cell(human_bytes)),
            right(pct(t.share_memory)),
            right(t.stats.elements),
            right(pct(if t.stats.keys == 0 {
                0.0
            } else {
                t.stats.keys_no_expiry as f64 / t.stats.keys as f64
            })),
            right(human_bytes(t.stats.serialized)),
        ]);
    }
    writeln!(out, "Keys by type\n{types}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_sparklines() {
        assert_eq!(bar(0.0, 4), "");
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(0.5, 2), "█");
        assert_eq!(bar(0.0625, 2), "▏");
        assert_eq!(bar(2.0, 3), "███");
        assert_eq!(sparkline(&[0.0, 1.0, 2.0]), "▁▅█");
        assert_eq!(sparkline(&[0.0, 0.0]), "  ");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
