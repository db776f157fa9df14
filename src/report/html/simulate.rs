//! The HTML report of `simulate`: round trips and latency per strategy or client for each
//! batch, and the batch-size sweep as line charts.

use super::{Bar, bar_chart, cards, esc, line_chart, node_color, page_end, page_start};
use crate::simulate::{ClientResult, NetworkModel, SimResult};
use std::fmt::Write as _;
use std::io::{self, Write};

/// What `simulate` computed, for the HTML report.
pub struct SimulateHtml<'a> {
    /// Where keys live.
    pub topology: &'a str,
    /// The network model.
    pub network: &'a NetworkModel,
    /// Strategy results, with the swept size when `--sizes` was given.
    pub strategies: &'a [(Option<u64>, SimResult)],
    /// Client-profile results.
    pub clients: &'a [ClientResult],
}

fn batches<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for n in names {
        if !v.contains(&n) {
            v.push(n);
        }
    }
    v
}

/// Writes the simulation as one self-contained HTML document.
pub fn render_simulate(out: &mut dyn Write, s: &SimulateHtml<'_>) -> io::Result<()> {
    let mut h = String::with_capacity(1 << 18);
    page_start(
        &mut h,
        "keyplan simulate",
        &format!(
            "topology: {} · round trip {} ms, {} µs per key, {} MB/s",
            esc(s.topology),
            s.network.rtt_ms,
            s.network.per_key_us,
            s.network.bandwidth_mb_s
        ),
    );
    let sweep = s.strategies.iter().any(|(size, _)| size.is_some());
    let names = batches(
        s.strategies
            .iter()
            .map(|(_, r)| r.batch.as_str())
            .chain(s.clients.iter().map(|r| r.batch.as_str())),
    );
    cards(
        &mut h,
        &[
            ("batches", names.len().to_string()),
            (
                if s.clients.is_empty() {
                    "strategies"
                } else {
                    "client profiles"
                },
                if s.clients.is_empty() {
                    batches(s.strategies.iter().map(|(_, r)| r.strategy.name())).len()
                } else {
                    batches(s.clients.iter().map(|r| r.client)).len()
                }
                .to_string(),
            ),
        ],
    );
    for name in names {
        let _ = write!(h, "<h2>{}</h2>", esc(name));
        if sweep {
            let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
            let mut rts: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
            for (size, r) in s.strategies.iter().filter(|(_, r)| r.batch == name) {
                let Some(n) = size else { continue };
                let key = r.strategy.name().to_string();
                match series.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, p)) => p.push((*n as f64, r.load.latency_ms)),
                    None => series.push((key.clone(), vec![(*n as f64, r.load.latency_ms)])),
                }
                match rts.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, p)) => p.push((*n as f64, r.load.round_trips as f64)),
                    None => rts.push((key, vec![(*n as f64, r.load.round_trips as f64)])),
                }
            }
            let _ = write!(
                h,
                "<p class=\"sub\">How the cost grows with the batch size (both axes log scale).</p><div style=\"display:flex;gap:12px;flex-wrap:wrap\">"
            );
            line_chart(
                &mut h,
                "latency by batch size",
                "keys per batch",
                "latency (ms)",
                &series,
                true,
            );
            line_chart(
                &mut h,
                "round trips by batch size",
                "keys per batch",
                "round trips",
                &rts,
                true,
            );
            let _ = write!(h, "</div>");
            continue;
        }
        let ok_color = node_color(0);
        let bad_color = node_color(5);
        let mut groups = Vec::new();
        for (_, r) in s.strategies.iter().filter(|(_, r)| r.batch == name) {
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
        for r in s.clients.iter().filter(|r| r.batch == name) {
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
            &mut h,
            "latency per strategy or client",
            "estimated latency (bar) and round trips; orange: the batch fails (see the table)",
            &groups,
        );
        let _ = write!(
            h,
            "<table><tr><th class=\"l\">{}</th><th>round trips</th><th>nodes</th><th>commands</th><th>bytes</th><th>latency ms</th><th class=\"l\">notes</th></tr>",
            if s.clients.is_empty() {
                "strategy"
            } else {
                "client"
            }
        );
        for (_, r) in s.strategies.iter().filter(|(_, r)| r.batch == name) {
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
        for r in s.clients.iter().filter(|r| r.batch == name) {
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
    page_end(
        &mut h,
        "Latency = round trips × RTT + server time per key + bytes ÷ bandwidth, the slowest node for parallel sends.",
    );
    out.write_all(h.as_bytes())?;
    out.flush()
}
