//! The HTML report of `rebalance --preview` / `reshard --preview`: the plan, slot maps before
//! and after (moving slots marked), per-node bars before/after, the moves, batches in motion.

use super::{
    Bar, bar_chart, cards, esc, node_color, node_legend, page_end, page_start, pct, slot_map,
};
use crate::migrate::MigrationReport;
use crate::report::analyze::human_bytes;
use crate::slot::SLOT_COUNT;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Owners of every slot from the nodes' slot ranges.
fn owners(r: &MigrationReport, after: bool) -> Vec<Option<usize>> {
    let mut owner = vec![None; SLOT_COUNT];
    for (i, n) in r.plan.impact.nodes.iter().enumerate() {
        let ranges = if after {
            &n.after.slot_ranges
        } else {
            &n.before.slot_ranges
        };
        for &(a, b) in ranges {
            let (a, b) = (usize::from(a), usize::from(b).min(SLOT_COUNT - 1));
            for o in owner.iter_mut().take(b + 1).skip(a) {
                *o = Some(i);
            }
        }
    }
    owner
}

/// Writes the preview as one self-contained HTML document.
pub fn render_migration(out: &mut dyn Write, r: &MigrationReport) -> io::Result<()> {
    let p = &r.plan;
    let im = &p.impact;
    let mut h = String::with_capacity(1 << 20);
    // Keys per slot the servers counted are keys, not sample keys.
    let exact = r
        .sample
        .source
        .contains(&crate::migrate::SampleSource::ExactCounts);
    let keys_word = if exact { "keys" } else { "sample keys" };
    let sample = if r.sample.source.is_empty() {
        "no key sample (slots only)".to_string()
    } else if exact {
        format!(
            "keys: {}",
            r.sample
                .source
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        format!(
            "{} sample keys from {}",
            r.sample.keys,
            r.sample
                .source
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    page_start(
        &mut h,
        &format!("keyplan {} --preview", r.command),
        &format!(
            "{} plan (balance by {}) · topology: {} · {}",
            esc(&p.plan),
            esc(&p.balance_by),
            esc(&r.topology),
            esc(&sample)
        ),
    );
    let verdict = match (&p.message, p.needed) {
        (Some(m), _) => m.clone(),
        (None, true) => format!(
            "{} move(s) of {} slots carry {} {keys_word}{}.",
            im.moves.len(),
            im.slots_moved,
            im.keys_moved,
            if r.sample.has_bytes {
                format!(" ({})", human_bytes(im.bytes_moved))
            } else {
                String::new()
            }
        ),
        (None, false) => "Nothing moves.".into(),
    };
    let _ = write!(
        h,
        "<div class=\"verdict\"><b>Plan:</b> {}</div>",
        esc(&verdict)
    );
    for w in &r.warnings {
        let _ = write!(h, "<div class=\"note\">{}</div>", esc(&w.text));
    }
    let skew = |s: &Option<crate::skew::Skew>| {
        s.as_ref()
            .map(|s| format!("{:.2}", s.max_over_mean))
            .unwrap_or_else(|| "-".into())
    };
    let mut items: Vec<(&str, String)> = vec![
        ("moves", im.moves.len().to_string()),
        ("slots moved", im.slots_moved.to_string()),
        (
            if exact {
                "keys moved"
            } else {
                "sample keys moved"
            },
            im.keys_moved.to_string(),
        ),
        (
            "key skew before → after",
            format!(
                "{} → {}",
                skew(&im.skew.before.keys),
                skew(&im.skew.after.keys)
            ),
        ),
    ];
    if r.sample.has_bytes {
        items.push(("bytes moved", human_bytes(im.bytes_moved)));
    }
    if let Some(s) = p.migration_seconds {
        items.push(("estimated time", format!("{s:.1} s")));
    }
    cards(&mut h, &items);

    let names: Vec<String> = im.nodes.iter().map(|n| n.name.clone()).collect();
    let before = owners(r, false);
    let after = owners(r, true);
    let moving: Vec<bool> = (0..SLOT_COUNT).map(|s| before[s] != after[s]).collect();
    let _ = write!(
        h,
        "<h2>Slots before and after</h2><p class=\"sub\">16384 slots, 128 per row, coloured by the node that serves them; the dark dots mark the slots that move. Hover for the ranges.</p><div style=\"display:flex;gap:16px;flex-wrap:wrap\"><figure style=\"margin:0\"><figcaption>before</figcaption>"
    );
    slot_map(&mut h, "slot owners before", &before, &names, &[], 3.0);
    let _ = write!(
        h,
        "</figure><figure style=\"margin:0\"><figcaption>after</figcaption>"
    );
    slot_map(&mut h, "slot owners after", &after, &names, &moving, 3.0);
    let _ = write!(h, "</figure></div>");
    node_legend(&mut h, &names);

    let _ = write!(h, "<h2>Nodes before and after</h2>");
    let total_keys: u64 = im.nodes.iter().map(|n| n.before.keys).sum();
    let mut groups = Vec::new();
    for (i, n) in im.nodes.iter().enumerate() {
        let c = node_color(i);
        let mut bars = vec![
            Bar {
                label: format!("slots before {}", n.before.slots),
                value: n.before.slots as f64 / SLOT_COUNT as f64,
                color: c,
                faded: true,
            },
            Bar {
                label: format!("slots after {}", n.after.slots),
                value: n.after.slots as f64 / SLOT_COUNT as f64,
                color: c,
                faded: false,
            },
        ];
        if total_keys > 0 {
            bars.push(Bar {
                label: format!("keys before {} ({})", n.before.keys, pct(n.before.share)),
                value: n.before.share,
                color: c,
                faded: true,
            });
            bars.push(Bar {
                label: format!("keys after {} ({})", n.after.keys, pct(n.after.share)),
                value: n.after.share,
                color: c,
                faded: false,
            });
        }
        if r.sample.has_bytes {
            for (when, state, faded) in [("before", &n.before, true), ("after", &n.after, false)] {
                bars.push(Bar {
                    label: format!(
                        "bytes {when} {} ({})",
                        human_bytes(state.bytes),
                        pct(state.share_bytes)
                    ),
                    value: state.share_bytes,
                    color: c,
                    faded,
                });
            }
        }
        let mut name = n.name.clone();
        if n.added {
            name.push_str(" (new)");
        }
        if n.emptied {
            name.push_str(" (emptied)");
        }
        let masters = im.nodes.iter().filter(|x| x.after.slots > 0).count().max(1);
        groups.push((name, bars, Some(1.0 / masters as f64)));
    }
    bar_chart(
        &mut h,
        "slots and keys per node before and after",
        "share of slots, keys and bytes; pale = before, solid = after; the tick is an even share",
        &groups,
    );

    if !im.moves.is_empty() {
        let _ = write!(
            h,
            "<h2>Moves</h2><table><tr><th class=\"l\">from</th><th class=\"l\">to</th><th>slots</th><th class=\"l\">slot ranges</th><th>keys</th>"
        );
        if r.sample.has_bytes {
            let _ = write!(h, "<th>bytes</th>");
        }
        let _ = write!(h, "</tr>");
        for m in &im.moves {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\"><code>{}</code></td><td>{}</td>",
                esc(&m.from),
                esc(&m.to),
                m.slots,
                esc(&crate::topology::format_ranges(&m.slot_ranges)),
                m.keys
            );
            if r.sample.has_bytes {
                let _ = write!(h, "<td>{}</td>", human_bytes(m.bytes));
            }
            let _ = write!(h, "</tr>");
        }
        let _ = write!(h, "</table>");
    }
    if let Some(c) = &r.compare {
        let _ = write!(
            h,
            "<h2>Compared with {}</h2><p>{}{} move(s), {} slots, {} {keys_word}; key skew after {} (this plan: {}); slot skew after {} (this plan: {}).</p>",
            esc(&c.plan),
            c.message
                .as_deref()
                .map(|m| format!("{} ", esc(m)))
                .unwrap_or_default(),
            c.impact.moves.len(),
            c.impact.slots_moved,
            c.impact.keys_moved,
            skew(&c.impact.skew.after.keys),
            skew(&im.skew.after.keys),
            skew(&c.impact.skew.after.slots),
            skew(&im.skew.after.slots)
        );
    }
    if !r.batches.is_empty() {
        let _ = write!(
            h,
            "<h2>Batches touching slots that move</h2><table><tr><th class=\"l\">batch</th><th class=\"l\">client</th><th class=\"l\">slots</th><th class=\"l\">now</th><th class=\"l\">during</th><th>ASK</th><th class=\"l\">TRYAGAIN</th><th class=\"l\">after</th><th>MOVED</th></tr>"
        );
        for m in &r.batches {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td></tr>",
                esc(&m.batch),
                esc(m.client),
                esc(&crate::topology::format_ranges(&m.slots_in_motion)),
                m.baseline.name(),
                m.during.name(),
                m.ask,
                if m.tryagain { "possible" } else { "-" },
                m.after.name(),
                m.moved
            );
        }
        let _ = write!(h, "</table>");
    }
    page_end(
        &mut h,
        "keyplan never migrates: --emit prints the commands that would run this plan.",
    );
    out.write_all(h.as_bytes())?;
    out.flush()
}
