//! Renders `keyplan simulate`: a table per batch (its strategies, or the client profiles), a
//! sweep table per batch with `--sizes`, or JSON.

use super::TextLayout;
use crate::simulate::client::ClientResult;
use crate::simulate::verdict::Verdict;
use crate::simulate::{NetworkModel, SimResult, Strategy};
use comfy_table::{Cell, CellAlignment};
use std::collections::HashMap;
use std::io::{self, Write};

/// What `simulate` found.
#[derive(Debug, Clone)]
pub struct SimulationReport {
    /// Where keys live, in words.
    pub topology: String,
    /// Nodes of the topology.
    pub nodes: usize,
    /// The network model.
    pub network: NetworkModel,
    /// The strategies run (strategy mode).
    pub strategies: Vec<Strategy>,
    /// The swept batch sizes (`--sizes`), or empty.
    pub sizes: Vec<u64>,
    /// Strategy results, with the swept size when there is one.
    pub results: Vec<(Option<u64>, SimResult)>,
    /// Client-profile results (`--client`); then `results` is empty.
    pub clients: Option<Vec<ClientResult>>,
    /// What the cluster answers to each batch sent as written, by batch name.
    pub verdicts: Vec<(String, crate::simulate::batch::BatchId, Verdict)>,
}

impl SimulationReport {
    /// The report as the HTML renderer takes it.
    pub fn html(&self) -> super::html::SimulateHtml<'_> {
        super::html::SimulateHtml {
            topology: &self.topology,
            network: &self.network,
            strategies: &self.results,
            clients: self.clients.as_deref().unwrap_or(&[]),
        }
    }
}

/// One batch's verdict as JSON: its name and identity, then the verdict's fields.
#[derive(serde::Serialize)]
struct BatchVerdict<'a> {
    batch: &'a str,
    batch_id: &'a crate::simulate::batch::BatchId,
    #[serde(flatten)]
    verdict: &'a Verdict,
}

/// A strategy result with its swept size.
#[derive(serde::Serialize)]
struct Sized<'a> {
    #[serde(flatten)]
    result: &'a SimResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

/// The results, serialized one by one as they are (no copy of the whole report).
struct Results<'a>(&'a SimulationReport);

impl serde::Serialize for Results<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0.clients {
            Some(c) => s.collect_seq(c.iter()),
            None => s.collect_seq(self.0.results.iter().map(|(size, result)| Sized {
                result,
                size: *size,
            })),
        }
    }
}

#[derive(serde::Serialize)]
struct Doc<'a> {
    network: &'a NetworkModel,
    batches: Vec<BatchVerdict<'a>>,
    results: Results<'a>,
}

/// Writes the report as one JSON document (schema_version 2), streamed: memory stays that of
/// the report itself.
pub fn render_json(out: &mut dyn Write, r: &SimulationReport) -> io::Result<()> {
    super::json::write_document(
        out,
        super::json::SIMULATE,
        &Doc {
            network: &r.network,
            batches: r
                .verdicts
                .iter()
                .map(|(batch, batch_id, verdict)| BatchVerdict {
                    batch,
                    batch_id,
                    verdict,
                })
                .collect(),
            results: Results(r),
        },
    )
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

/// A client's latency as text: "-" when nothing was sent (the client, a proxy or the model
/// refused the batch before any round trip), never a misleading 0.000 ms.
pub(crate) fn client_latency(x: &ClientResult) -> String {
    if x.load.round_trips == 0 && x.outcome != crate::simulate::client::Outcome::Ok {
        "-".into()
    } else {
        format!("{:.3}", x.load.latency_ms)
    }
}

/// Writes the report as tables.
pub fn render_table(
    out: &mut dyn Write,
    r: &SimulationReport,
    layout: &TextLayout,
) -> io::Result<()> {
    match &r.clients {
        Some(c) => clients_tables(out, r, c, layout),
        None if !r.sizes.is_empty() => sweep_tables(out, r, layout),
        None => strategy_tables(out, r, layout),
    }?;
    out.flush()
}

/// One sweep table per batch: sizes down, strategies across (round trips / latency).
fn sweep_tables(out: &mut dyn Write, r: &SimulationReport, layout: &TextLayout) -> io::Result<()> {
    write_network(out, &r.network, Some(r.nodes))?;
    let mut names: Vec<&String> = Vec::new();
    for (_, x) in &r.results {
        if !names.contains(&&x.batch) {
            names.push(&x.batch);
        }
    }
    for name in names {
        writeln!(out, "\n{name}: round trips / latency ms by batch size")?;
        let mut t = layout.table();
        let mut header = vec!["size".to_string()];
        header.extend(r.strategies.iter().map(|s| s.name().to_string()));
        t.set_header(header);
        for &n in &r.sizes {
            let mut row = vec![right(n.max(1))];
            for &st in &r.strategies {
                let cell = r
                    .results
                    .iter()
                    .find(|(size, x)| {
                        *size == Some(n.max(1)) && &x.batch == name && x.strategy == st
                    })
                    .map(|(_, x)| format!("{} / {:.3}", x.load.round_trips, x.load.latency_ms))
                    .unwrap_or_default();
                row.push(right(cell));
            }
            t.add_row(row);
        }
        writeln!(out, "{t}")?;
    }
    Ok(())
}

/// One table per batch (and size): a row per strategy.
fn strategy_tables(
    out: &mut dyn Write,
    r: &SimulationReport,
    layout: &TextLayout,
) -> io::Result<()> {
    write_network(out, &r.network, Some(r.nodes))?;
    let verdicts = verdict_index(r);
    let results = &r.results;
    let mut i = 0;
    while i < results.len() {
        let (size, first) = &results[i];
        let keys: u64 = first.load.nodes.iter().map(|n| n.keys).sum();
        writeln!(
            out,
            "\n{}{} ({keys} keys)",
            first.batch,
            size.map(|n| format!(" [size {n}]")).unwrap_or_default()
        )?;
        let mut t = layout.table();
        t.set_header(vec![
            "strategy",
            "round trips",
            "nodes",
            "commands",
            "connections",
            "bytes",
            "latency ms",
            "QPS",
            "P50 ms",
            "P99 ms",
            "commands per node",
        ]);
        while i < results.len() && results[i].1.batch == first.batch && results[i].0 == *size {
            let x = &results[i].1;
            t.add_row(vec![
                Cell::new(x.strategy.name()),
                right(x.load.round_trips),
                right(x.load.nodes_touched),
                right(x.load.commands),
                right(x.load.connections),
                right(x.load.bytes),
                right(format!("{:.3}", x.load.latency_ms)),
                right(format!("{:.0}", x.load.qps)),
                right(format!("{:.3}", x.load.p50_ms)),
                right(format!("{:.3}", x.load.p99_ms)),
                Cell::new(
                    x.load
                        .nodes
                        .iter()
                        .map(|n| format!("{} {}", n.node, n.commands))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ]);
            i += 1;
        }
        writeln!(out, "{t}")?;
        write_verdict(out, &verdicts, &first.batch)?;
        for e in &first.errors {
            writeln!(out, "error: {e}")?;
        }
    }
    Ok(())
}

/// The line that says a batch fails as written (nothing when it runs).
/// Each batch's verdict by name (the first, as listed), so a table per batch does not search
/// the list (a capture of 200,000 batches made that quadratic).
fn verdict_index(r: &SimulationReport) -> HashMap<&str, &Verdict> {
    let mut index = HashMap::with_capacity(r.verdicts.len());
    for (name, _, v) in &r.verdicts {
        index.entry(name.as_str()).or_insert(v);
    }
    index
}

fn write_verdict(
    out: &mut dyn Write,
    verdicts: &HashMap<&str, &Verdict>,
    batch: &str,
) -> io::Result<()> {
    let Some(v) = verdicts.get(batch) else {
        return Ok(());
    };
    if let Some(i) = &v.instances {
        writeln!(
            out,
            "over {} generated instances (other values of its variables): keys on {:.2} node(s) on average; {:.0}% refused as written",
            i.generated,
            i.mean_nodes,
            i.share_failing * 100.0
        )?;
    }
    if let Some(m) = &v.message {
        writeln!(
            out,
            "as written, the cluster refuses it: {m} ({} slots; keys {})",
            v.slots,
            v.keys.join(" ")
        )?;
    }
    Ok(())
}

/// One table per batch: a row per client profile; what each profile models as footnotes.
fn clients_tables(
    out: &mut dyn Write,
    r: &SimulationReport,
    results: &[ClientResult],
    layout: &TextLayout,
) -> io::Result<()> {
    let net = &r.network;
    write_network(out, net, None)?;
    let verdicts = verdict_index(r);
    let mut i = 0;
    while i < results.len() {
        let name = &results[i].batch;
        writeln!(out, "\n{name}")?;
        write_verdict(out, &verdicts, name)?;
        let mut t = layout.table();
        t.set_header(vec![
            "client",
            "outcome",
            "round trips",
            "nodes",
            "commands",
            "latency ms",
            "QPS",
            "P99 ms",
            "what happens",
        ]);
        while i < results.len() && &results[i].batch == name {
            let x = &results[i];
            let mut what = match &x.message {
                Some(m) => m.clone(),
                None => x
                    .load
                    .nodes
                    .iter()
                    .map(|n| format!("{} {}", n.node, n.commands))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            if x.moved + x.ask > 0 {
                what = format!("{what} ({} MOVED, {} ASK)", x.moved, x.ask);
            }
            t.add_row(vec![
                Cell::new(x.client),
                Cell::new(x.outcome.name()),
                right(x.load.round_trips),
                right(x.load.nodes_touched),
                right(x.load.commands),
                right(client_latency(x)),
                right(if client_latency(x) == "-" {
                    "-".to_string()
                } else {
                    format!("{:.0}", x.load.qps)
                }),
                right(if client_latency(x) == "-" {
                    "-".to_string()
                } else {
                    format!("{:.3}", x.load.p99_ms)
                }),
                Cell::new(what),
            ]);
            i += 1;
        }
        writeln!(out, "{t}")?;
    }
    writeln!(out, "\nprofiles:")?;
    let mut seen: Vec<String> = Vec::new();
    for x in results {
        let s = format!("{} = {}", x.client, x.models);
        if !seen.contains(&s) {
            writeln!(out, "  {s}")?;
            seen.push(s);
        }
    }
    Ok(())
}

/// The network model line above the tables.
fn write_network(out: &mut dyn Write, net: &NetworkModel, nodes: Option<usize>) -> io::Result<()> {
    let short = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    write!(
        out,
        "network: rtt {} ms, {} µs per key, {} MB/s",
        short(net.rtt_ms),
        short(net.per_key_us),
        if net.bandwidth_mb_s.is_finite() {
            short(net.bandwidth_mb_s)
        } else {
            "unlimited".into()
        }
    )?;
    match nodes {
        Some(n) => writeln!(out, "; {n} nodes"),
        None => writeln!(out),
    }?;
    writeln!(
        out,
        "load model: {}; latency is one client's, QPS/P50/P99 are for {} concurrent client{}{}",
        if net.calibrated {
            "calibrated on a real cluster"
        } else {
            "uncalibrated (documented defaults; measure yours with `keyplan bench --calibrate`)"
        },
        net.concurrency,
        if net.concurrency == 1 { "" } else { "s" },
        net.hot
            .map(|h| format!(
                ", {:.0}% of the requests on {:.0}% of the nodes",
                h.share * 100.0,
                h.nodes_share * 100.0
            ))
            .unwrap_or_default()
    )
}
