//! Renders `keyplan simulate` batch by batch, as the simulation produces them: a table per
//! batch (its strategies, or the client profiles), a sweep table per batch with `--sizes`, JSON
//! or HTML. A MONITOR capture of any length is rendered in the memory of one batch: tables
//! and HTML sections are written as they come; the JSON document's `results` array (and the
//! HTML page's body, whose counts come first) wait in a spool that moves to a temporary file
//! past 4 MiB. Only a size sweep, which regenerates a scheme's few batches, is gathered whole
//! (its tables put sizes down and strategies across).

use super::TextLayout;
use super::html::simulate_html as html;
use super::render::{Format, Stream};
use crate::simulate::client::ClientResult;
use crate::simulate::session::BatchOutcome;
use crate::simulate::verdict::Verdict;
use crate::simulate::{NetworkModel, SimResult, Strategy};
use comfy_table::{Cell, CellAlignment};
use std::collections::HashMap;
use std::io::{self, Seek, Write};

/// What every batch of a simulation shares.
#[derive(Debug, Clone)]
pub struct SimulationHeader {
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
    /// Client profiles are run instead of strategies.
    pub clients: bool,
    /// Keys go through a Redis Enterprise (or Cloud) database's proxy: it, not a cluster,
    /// refuses a batch.
    pub proxy: bool,
}

/// What refuses a batch, in words: a Redis Enterprise database's proxy, or the cluster.
fn refuser(proxy: bool) -> &'static str {
    if proxy {
        "the database's proxy"
    } else {
        "the cluster"
    }
}

/// What holds keys, in words: a Redis Enterprise database's shards (behind its proxy), or
/// the cluster's nodes.
fn holders(proxy: bool) -> &'static str {
    if proxy { "shard(s)" } else { "node(s)" }
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

/// In memory up to this much, then in a temporary file.
const SPOOL_IN_MEMORY: usize = 4 << 20;

/// What every format's writer tracks of the batches seen so far.
struct Seen {
    header: SimulationHeader,
    /// Batches written so far.
    batches: usize,
    /// The distinct strategies or client profiles of a batch (all batches run the same).
    per_batch: usize,
    /// Verdicts of scheme batches, by name (a batch may come again, swept to another size).
    scheme_verdicts: HashMap<String, Verdict>,
    /// A size sweep, gathered whole.
    sweep: Vec<(Option<u64>, SimResult)>,
}

impl Seen {
    fn new(header: SimulationHeader) -> Seen {
        Seen {
            header,
            batches: 0,
            per_batch: 0,
            scheme_verdicts: HashMap::new(),
            sweep: Vec::new(),
        }
    }

    fn sweeping(&self) -> bool {
        !self.header.sizes.is_empty() && !self.header.clients
    }

    /// Counts batch `b` (a scheme batch's verdict is kept for its later sizes).
    fn see(&mut self, b: &BatchOutcome) {
        if self.batches == 0 {
            self.per_batch = if self.header.clients {
                distinct(b.clients.iter().map(|c| c.client))
            } else {
                distinct(b.results.iter().map(|r| r.strategy.name()))
            };
        }
        self.batches += 1;
        if b.id.line.is_none()
            && let Some(v) = &b.verdict
        {
            self.scheme_verdicts
                .entry(b.name.clone())
                .or_insert_with(|| v.clone());
        }
    }

    /// The verdict of batch `b` (a scheme batch swept to another size keeps its first).
    fn verdict<'a>(&'a self, b: &'a BatchOutcome) -> Option<&'a Verdict> {
        b.verdict
            .as_ref()
            .or_else(|| self.scheme_verdicts.get(&b.name))
    }

    /// Gathers `b` into the sweep, when sweeping; `false` otherwise.
    fn gather(&mut self, b: &BatchOutcome) -> bool {
        if self.sweeping() {
            self.sweep
                .extend(b.results.iter().map(|r| (b.size, r.clone())));
        }
        self.sweeping()
    }
}

/// Starts a simulation's report in `format` on `out` (text fitted to `layout`): a stream of
/// batches, each written (or spooled) as it comes.
pub fn simulation_stream<'o>(
    header: SimulationHeader,
    format: Format,
    out: &'o mut dyn Write,
    layout: &TextLayout,
) -> io::Result<Box<dyn Stream<BatchOutcome> + 'o>> {
    Ok(match format {
        Format::Table => Box::new(SimulationTable::new(header, out, layout)?),
        Format::Markdown => Box::new(SimulationTable::new(header, out, &TextLayout::markdown())?),
        Format::Json => Box::new(SimulationJson::new(header, out)?),
        Format::Html => Box::new(SimulationHtml {
            seen: Seen::new(header),
            out,
            spool: tempfile::SpooledTempFile::new(SPOOL_IN_MEMORY),
        }),
        other => return Err(super::render::unsupported("simulate", other)),
    })
}

/// Tables, a batch at a time (a size sweep's at the end).
struct SimulationTable<'o> {
    seen: Seen,
    out: super::Fitted<&'o mut dyn Write>,
    layout: TextLayout,
    /// Client tables: the profiles' descriptions, each once, for the footnotes.
    profiles: Vec<String>,
}

impl<'o> SimulationTable<'o> {
    fn new(
        header: SimulationHeader,
        out: &'o mut dyn Write,
        layout: &TextLayout,
    ) -> io::Result<SimulationTable<'o>> {
        let mut out = layout.writer(out);
        let seen = Seen::new(header);
        // Markdown's first line is its heading: the report's title, not its network line.
        if layout.markdown {
            let h = &seen.header;
            writeln!(
                out,
                "keyplan simulate: {}{}",
                h.topology,
                if h.clients { " (client profiles)" } else { "" }
            )?;
        }
        if !seen.sweeping() {
            let h = &seen.header;
            write_network(
                &mut out,
                &h.network,
                (!h.clients).then_some(h.nodes),
                h.proxy,
            )?;
        }
        Ok(SimulationTable {
            seen,
            out,
            layout: *layout,
            profiles: Vec::new(),
        })
    }
}

impl Stream<BatchOutcome> for SimulationTable<'_> {
    fn item(&mut self, b: &BatchOutcome) -> io::Result<()> {
        self.seen.see(b);
        if self.seen.gather(b) {
            return Ok(());
        }
        let verdict = self.seen.verdict(b);
        if self.seen.header.clients {
            let proxy = self.seen.header.proxy;
            client_table(&mut self.out, b, verdict, proxy, &self.layout)?;
            for x in &b.clients {
                let s = format!("{} = {}", x.client, x.models);
                if !self.profiles.contains(&s) {
                    self.profiles.push(s);
                }
            }
            Ok(())
        } else {
            let proxy = self.seen.header.proxy;
            strategy_table(&mut self.out, b, verdict, proxy, &self.layout)
        }
    }

    fn finish(mut self: Box<Self>, _: &()) -> io::Result<()> {
        if self.seen.sweeping() {
            sweep_tables(
                &mut self.out,
                &self.seen.header,
                &self.seen.sweep,
                &self.seen.scheme_verdicts,
                &self.layout,
            )?;
        } else if self.seen.header.clients {
            writeln!(self.out, "\nprofiles:")?;
            for s in &self.profiles {
                writeln!(self.out, "  {s}")?;
            }
        }
        self.out.flush()
    }
}

/// One JSON document: the verdicts as they come, then the results (spooled meanwhile).
struct SimulationJson<'o> {
    out: &'o mut dyn Write,
    /// The `results` array, written after the verdicts.
    spool: tempfile::SpooledTempFile,
    /// Verdicts written so far.
    verdicts: usize,
    /// Results spooled so far.
    results: usize,
}

impl<'o> SimulationJson<'o> {
    fn new(header: SimulationHeader, out: &'o mut dyn Write) -> io::Result<SimulationJson<'o>> {
        out.write_all(super::json::open_document(super::json::SIMULATE).as_bytes())?;
        out.write_all(b"\"network\":")?;
        serde_json::to_writer(&mut *out, &header.network)?;
        out.write_all(b",\"batches\":[")?;
        Ok(SimulationJson {
            out,
            spool: tempfile::SpooledTempFile::new(SPOOL_IN_MEMORY),
            verdicts: 0,
            results: 0,
        })
    }
}

impl Stream<BatchOutcome> for SimulationJson<'_> {
    fn item(&mut self, b: &BatchOutcome) -> io::Result<()> {
        if let Some(verdict) = &b.verdict {
            if self.verdicts > 0 {
                self.out.write_all(b",")?;
            }
            self.verdicts += 1;
            serde_json::to_writer(
                &mut *self.out,
                &BatchVerdict {
                    batch: &b.name,
                    batch_id: &b.id,
                    verdict,
                },
            )?;
        }
        let mut spool = io::BufWriter::new(&mut self.spool);
        for r in &b.results {
            if self.results > 0 {
                spool.write_all(b",")?;
            }
            self.results += 1;
            serde_json::to_writer(
                &mut spool,
                &Sized {
                    result: r,
                    size: b.size,
                },
            )?;
        }
        for c in &b.clients {
            if self.results > 0 {
                spool.write_all(b",")?;
            }
            self.results += 1;
            serde_json::to_writer(&mut spool, c)?;
        }
        spool.flush().map_err(spool_error)
    }

    fn finish(mut self: Box<Self>, _: &()) -> io::Result<()> {
        self.out.write_all(b"],\"results\":[")?;
        copy_spool(&mut self.spool, &mut *self.out)?;
        self.out.write_all(b"]}\n")?;
        self.out.flush()
    }
}

/// A self-contained HTML page: its head (whose counts come first) at the end, the batches'
/// sections spooled meanwhile.
struct SimulationHtml<'o> {
    seen: Seen,
    out: &'o mut dyn Write,
    /// The page's body.
    spool: tempfile::SpooledTempFile,
}

impl Stream<BatchOutcome> for SimulationHtml<'_> {
    fn item(&mut self, b: &BatchOutcome) -> io::Result<()> {
        self.seen.see(b);
        if self.seen.gather(b) {
            return Ok(());
        }
        let mut h = String::new();
        html::section(&mut h, &b.name, &b.results, &b.clients);
        self.spool.write_all(h.as_bytes()).map_err(spool_error)
    }

    fn finish(mut self: Box<Self>, _: &()) -> io::Result<()> {
        let seen = &self.seen;
        let mut h = String::with_capacity(1 << 16);
        let what = if seen.header.clients {
            "client profiles"
        } else {
            "strategies"
        };
        let batches = if seen.sweeping() {
            distinct(seen.sweep.iter().map(|(_, r)| r.batch.as_str()))
        } else {
            seen.batches
        };
        html::head(
            &mut h,
            &seen.header.topology,
            &seen.header.network,
            batches,
            what,
            seen.per_batch,
        );
        if seen.sweeping() {
            for name in names(seen.sweep.iter().map(|(_, r)| r.batch.as_str())) {
                html::sweep_section(
                    &mut h,
                    name,
                    seen.sweep
                        .iter()
                        .filter(|(_, r)| r.batch == name)
                        .filter_map(|(n, r)| Some(((*n)?, r))),
                );
                // A batch the cluster refuses says so under its sweep, as the text does.
                let mut words = Vec::new();
                write_verdict(
                    &mut words,
                    seen.scheme_verdicts
                        .get(name)
                        .filter(|v| v.message.is_some()),
                    seen.header.proxy,
                )?;
                for line in String::from_utf8_lossy(&words).lines() {
                    h.push_str(&format!("<p class=\"note\">{}</p>", super::html::esc(line)));
                }
            }
        }
        self.out.write_all(h.as_bytes())?;
        copy_spool(&mut self.spool, &mut *self.out)?;
        h.clear();
        html::end(&mut h);
        self.out.write_all(h.as_bytes())?;
        self.out.flush()
    }
}

fn spool_error(e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "cannot spool the report to a temporary file (set TMPDIR to a writable directory): {e}"
        ),
    )
}

fn copy_spool(spool: &mut tempfile::SpooledTempFile, out: &mut dyn Write) -> io::Result<()> {
    spool.seek(io::SeekFrom::Start(0)).map_err(spool_error)?;
    io::copy(spool, out)?;
    Ok(())
}

/// The distinct values, in the order met.
fn names<'a>(all: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for n in all {
        if !v.contains(&n) {
            v.push(n);
        }
    }
    v
}

fn distinct<'a>(all: impl Iterator<Item = &'a str>) -> usize {
    names(all).len()
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

/// One sweep table per batch: sizes down, strategies across (round trips / latency).
fn sweep_tables(
    out: &mut dyn Write,
    header: &SimulationHeader,
    results: &[(Option<u64>, SimResult)],
    verdicts: &HashMap<String, Verdict>,
    layout: &TextLayout,
) -> io::Result<()> {
    write_network(out, &header.network, Some(header.nodes), header.proxy)?;
    for name in names(results.iter().map(|(_, x)| x.batch.as_str())) {
        writeln!(out, "\n{name}: round trips / mean ms by batch size")?;
        let mut t = layout.table();
        let mut head = vec!["size".to_string()];
        head.extend(header.strategies.iter().map(|s| s.name().to_string()));
        t.set_header(head);
        for &n in &header.sizes {
            let mut row = vec![right(n.max(1))];
            for &st in &header.strategies {
                let cell = results
                    .iter()
                    .find(|(size, x)| {
                        *size == Some(n.max(1)) && x.batch == name && x.strategy == st
                    })
                    .map(|(_, x)| format!("{} / {:.3}", x.load.round_trips, x.load.latency_ms))
                    .unwrap_or_default();
                row.push(right(cell));
            }
            t.add_row(row);
        }
        writeln!(out, "{t}")?;
        // A batch the cluster refuses: its sweep costs a batch that does not run as written.
        write_verdict(
            out,
            verdicts.get(name).filter(|v| v.message.is_some()),
            header.proxy,
        )?;
    }
    Ok(())
}

/// One batch's table: a row per strategy.
fn strategy_table(
    out: &mut dyn Write,
    b: &BatchOutcome,
    verdict: Option<&Verdict>,
    proxy: bool,
    layout: &TextLayout,
) -> io::Result<()> {
    let Some(first) = b.results.first() else {
        return Ok(());
    };
    let keys: u64 = first.load.nodes.iter().map(|n| n.keys).sum();
    writeln!(
        out,
        "\n{}{} ({keys} keys)",
        first.batch,
        b.size.map(|n| format!(" [size {n}]")).unwrap_or_default()
    )?;
    let mut t = layout.table();
    t.set_header(vec![
        "strategy",
        "round trips",
        if proxy { "shards" } else { "nodes" },
        "commands",
        "connections",
        "bytes",
        "mean ms",
        "QPS",
        "P50 ms",
        "P99 ms",
        if proxy {
            "commands per shard"
        } else {
            "commands per node"
        },
    ]);
    for x in &b.results {
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
            Cell::new(per_node(&x.load)),
        ]);
    }
    writeln!(out, "{t}")?;
    write_verdict(out, verdict, proxy)?;
    for e in &first.errors {
        writeln!(out, "error: {e}")?;
    }
    Ok(())
}

/// Commands per node, as `node n, node n`.
fn per_node(load: &crate::simulate::BatchLoad) -> String {
    load.commands_per_node()
        .iter()
        .map(|(node, n)| format!("{node} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines that say how a batch fares over generated instances and that it fails as
/// written (nothing when it runs).
fn write_verdict(out: &mut dyn Write, verdict: Option<&Verdict>, proxy: bool) -> io::Result<()> {
    let Some(v) = verdict else {
        return Ok(());
    };
    let who = refuser(proxy);
    if let Some(i) = &v.instances {
        let refused = if i.generated > 0 && i.failing == i.generated {
            "refused as written in every instance: the figures are those of a batch that never runs"
                .to_string()
        } else {
            format!("{:.0}% refused as written", i.share_failing * 100.0)
        };
        writeln!(
            out,
            "over {} generated instances (other values of its variables): keys on {:.2} {} on average; {refused}",
            i.generated,
            i.mean_nodes,
            holders(proxy),
        )?;
    }
    if let Some(m) = &v.message {
        // A Redis Enterprise script that strays off its shard gets no error.
        let lead = match m.starts_with("no error is returned") {
            true => "as written",
            false => &format!("as written, {who} refuses it"),
        };
        writeln!(
            out,
            "{lead}: {m} ({} slots; keys {})",
            v.slots,
            v.keys.join(" ")
        )?;
    }
    Ok(())
}

/// One batch's table: a row per client profile.
fn client_table(
    out: &mut dyn Write,
    b: &BatchOutcome,
    verdict: Option<&Verdict>,
    proxy: bool,
    layout: &TextLayout,
) -> io::Result<()> {
    let Some(first) = b.clients.first() else {
        return Ok(());
    };
    writeln!(out, "\n{}", first.batch)?;
    write_verdict(out, verdict, proxy)?;
    let mut t = layout.table();
    t.set_header(vec![
        "client",
        "outcome",
        "round trips",
        "nodes",
        "commands",
        "mean ms",
        "QPS",
        "P99 ms",
        "what happens",
    ]);
    for x in &b.clients {
        let mut what = match &x.message {
            Some(m) => m.clone(),
            None => per_node(&x.load),
        };
        if x.moved + x.ask > 0 {
            what = format!("{what} ({} MOVED, {} ASK)", x.moved, x.ask);
        }
        let latency = client_latency(x);
        let sent = latency != "-";
        t.add_row(vec![
            Cell::new(x.client),
            Cell::new(x.outcome.name()),
            right(x.load.round_trips),
            right(x.load.nodes_touched),
            right(x.load.commands),
            right(&latency),
            right(if sent {
                format!("{:.0}", x.load.qps)
            } else {
                "-".to_string()
            }),
            right(if sent {
                format!("{:.3}", x.load.p99_ms)
            } else {
                "-".to_string()
            }),
            Cell::new(what),
        ]);
    }
    writeln!(out, "{t}")
}

/// The network model line above the tables.
fn write_network(
    out: &mut dyn Write,
    net: &NetworkModel,
    nodes: Option<usize>,
    proxy: bool,
) -> io::Result<()> {
    let short = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let bandwidth = if net.bandwidth_mb_s.is_finite() {
        short(net.bandwidth_mb_s)
    } else {
        "unlimited".into()
    };
    match net.measured_round_trip_ms {
        // Calibrated: the measurement first; the fit's coefficients named as such.
        Some([p50, p99]) => write!(
            out,
            "network: measured round trip {} ms (a lone GET's median; P99 {} ms); fitted model: {} ms per wave, {} µs per key, {} MB/s",
            short(p50),
            short(p99),
            short(net.rtt_ms),
            short(net.per_key_us),
            bandwidth
        )?,
        None => write!(
            out,
            "network: rtt {} ms, {} µs per key, {} MB/s",
            short(net.rtt_ms),
            short(net.per_key_us),
            bandwidth
        )?,
    }
    match nodes {
        Some(n) if proxy => writeln!(
            out,
            "; {n} shards behind one proxy endpoint (one client connection; the proxy sends each shard its part at once)"
        ),
        Some(n) => writeln!(out, "; {n} nodes"),
        None => writeln!(out),
    }?;
    writeln!(
        out,
        "load model: {}; mean ms is one client's mean latency alone, QPS/P50/P99 are for {} concurrent client{}{}",
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
    )?;
    if let Some(note) = net.noisy_calibration() {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}
