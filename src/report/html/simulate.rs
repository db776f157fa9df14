//! The HTML report of `simulate`: round trips and latency per strategy or client for each
//! batch, and the batch-size sweep as line charts.

use super::{Bar, bar_chart, cards, esc, line_chart, node_color, page_end, page_start};
use crate::simulate::{ClientResult, NetworkModel, SimResult};
use std::fmt::Write as _;

/// The page's opening: title, topology and network, and the counts (`what`: "strategies" or
/// "client profiles").
pub fn head(
    h: &mut String,
    topology: &str,
    network: &NetworkModel,
    batches: usize,
    what: &str,
    count: usize,
) {
    page_start(
        h,
        "keyplan simulate",
        &format!(
            "topology: {} · round trip {} ms, {} µs per key, {} MB/s",
            esc(topology),
            network.rtt_ms,
            network.per_key_us,
            network.bandwidth_mb_s
        ),
    );
    cards(
        h,
        &[("batches", batches.to_string()), (what, count.to_string())],
    );
}

/// The page's end.
pub fn end(h: &mut String) {
    page_end(
        h,
        "Latency = round trips × RTT + server time per key + bytes ÷ bandwidth, the slowest node for parallel sends.",
    );
}

/// One swept batch: latency and round trips by batch size, a line per strategy.
pub fn sweep_section<'a>(
    h: &mut String,
    name: &str,
    results: impl Iterator<Item = (u64, &'a SimResult)>,
) {
    let _ = write!(h, "<h2>{}</h2>", esc(name));
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut rts: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (n, r) in results {
        let key = r.strategy.name().to_string();
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, p)) => p.push((n as f64, r.load.latency_ms)),
            None => series.push((key.clone(), vec![(n as f64, r.load.latency_ms)])),
        }
        match rts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, p)) => p.push((n as f64, r.load.round_trips as f64)),
            None => rts.push((key, vec![(n as f64, r.load.round_trips as f64)])),
        }
    }
    let _ = write!(
        h,
        "<p class=\"sub\">How the cost grows with the batch size (both axes log scale).</p><div style=\"display:flex;gap:12px;flex-wrap:wrap\">"
    );
    line_chart(
        h,
        "latency by batch size",
        "keys per batch",
        "latency (ms)",
        &series,
        true,
    );
    line_chart(
        h,
        "round trips by batch size",
        "keys per batch",
        "round trips",
        &rts,
        true,
    );
    let _ = write!(h, "</div>");
}

/// One batch: a latency bar per strategy (`strategies`) or client profile (`clients`), and its
/// table.
pub fn section(h: &mut String, name: &str, strategies: &[SimResult], clients: &[ClientResult]) {
    let _ = write!(h, "<h2>{}</h2>", esc(name));
    let ok_color = node_color(0);
    let bad_color = node_color(5);
    let mut groups = Vec::new();
    for r in strategies {
        let mut label = format!(
            "{:.3} ms · {} round trip(s)",
            r.load.latency_ms, r.load.round_trips
        );
        if !r.errors.is_empty() {
            label.push_str(" · errors");
        }
        groups.push((
            r.strategy.name().to_string(),
            vec![Bar {
                label,
                value: r.load.latency_ms,
                color: if r.errors.is_empty() {
                    ok_color
                } else {
                    bad_color
                },
                faded: false,
            }],
            None,
        ));
    }
    for r in clients {
        let ok = r.outcome == crate::simulate::client::Outcome::Ok;
        let mut label = if r.load.round_trips == 0 && !ok {
            "refused before sending".to_string()
        } else {
            format!(
                "{:.3} ms · {} round trip(s)",
                r.load.latency_ms, r.load.round_trips
            )
        };
        if !ok {
            label.push_str(&format!(" · {}", r.outcome.name()));
        }
        groups.push((
            r.client.to_string(),
            vec![Bar {
                label,
                value: r.load.latency_ms,
                color: if ok { ok_color } else { bad_color },
                faded: false,
            }],
            None,
        ));
    }
    bar_chart(
        h,
        "latency per strategy or client",
        "estimated latency (bar) and round trips; orange: the batch fails (see the table)",
        &groups,
    );
    let _ = write!(
        h,
        "<table><tr><th class=\"l\">{}</th><th>round trips</th><th>nodes</th><th>commands</th><th>bytes</th><th>latency ms</th><th class=\"l\">notes</th></tr>",
        if clients.is_empty() {
            "strategy"
        } else {
            "client"
        }
    );
    for r in strategies {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td class=\"l\">{}</td></tr>",
            r.strategy.name(),
            r.load.round_trips,
            r.load.nodes_touched,
            r.load.commands,
            r.load.bytes,
            r.load.latency_ms,
            esc(&r.errors.join("; "))
        );
    }
    for r in clients {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}{}</td></tr>",
            r.client,
            r.load.round_trips,
            r.load.nodes_touched,
            r.load.commands,
            r.load.bytes,
            crate::report::simulate::client_latency(r),
            r.outcome.name(),
            r.message
                .as_deref()
                .map(|m| format!(": {}", esc(m)))
                .unwrap_or_default()
        );
    }
    let _ = write!(h, "</table>");
}
