//! `keyplan analyze`: distribution, skew, hot slots and tags, and key patterns of a dump.

use super::Ctx;
use super::args::{
    InputArgs, SampleArgs, TopologyArgs, open_all, read_context, total_size, warn_malformed,
};
use super::progress::Unit;
use crate::analyze::snapshot::Biggest;
use crate::analyze::{AnalyzeConfig, Analyzer};
use crate::error::{ExitStatus, UserError};
use crate::keys::ReadSummary;
use crate::pattern::{DEFAULT_DELIMITERS, Delimiters};
use crate::report::analyze::AnalyzeView;
use crate::report::render::{Format, render};
use anyhow::Context as _;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Output format of `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnalyzeFormat {
    /// Tables, verdict first
    Table,
    /// One JSON document (schema_version 2, documented in README)
    Json,
    /// A self-contained HTML report with charts (use -o report.html)
    Html,
}

/// Analyze a key dump: per-node and per-slot distribution, skew, hot tags, patterns.
///
/// One streaming pass on all cores; memory does not grow with the number of keys. Without a
/// topology, keys are placed on 3 masters laid out as `redis-cli --cluster create` does.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan analyze keys.txt\n  redis-cli --scan | keyplan analyze -\n  keyplan analyze keys.txt --topology nodes.txt --format html -o report.html\n  keyplan analyze --cluster redis://127.0.0.1:7000 --sample all --bytes"
)]
pub struct AnalyzeArgs {
    /// Key dumps to read ('-' for stdin); with --cluster and no FILE, keys are sampled live
    #[arg(value_name = "FILE", required_unless_present = "cluster")]
    pub files: Vec<PathBuf>,

    /// How dumps are read.
    #[command(flatten)]
    pub input: InputArgs,

    /// Where keys live [default: 3 masters].
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: AnalyzeFormat,

    /// Write the report to this file instead of standard output
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Rows in the top lists (hot slots, tags, patterns in tables)
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,

    /// Characters that separate key segments when inferring patterns
    #[arg(long, default_value = DEFAULT_DELIMITERS, value_name = "CHARS")]
    pub delimiters: String,

    /// Flag a hash tag as hot when it holds more than this percent of all keys or bytes
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub hot_tag_share: f64,

    /// How a live cluster is sampled (with --cluster).
    #[command(flatten)]
    pub sampling: SampleArgs,

    /// Worker threads (default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Runs `keyplan analyze`.
pub fn run(args: AnalyzeArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    if !(0.0..=100.0).contains(&args.hot_tag_share) {
        return Err(UserError::new(
            format!("--hot-tag-share {}: not a percentage", args.hot_tag_share),
            "give a number between 0 and 100, e.g. --hot-tag-share 1",
        )
        .into());
    }
    let (topology, source) = args
        .topology
        .resolve(Some(3))?
        .expect("invariant: a default topology is given");
    let config = AnalyzeConfig {
        top: args.top.max(1),
        hot_tag_share: args.hot_tag_share / 100.0,
        delimiters: Delimiters::new(&args.delimiters),
        ..AnalyzeConfig::default()
    };
    let opts = args.input.read_options();
    let threads = args.threads.map(usize::from).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    if args.files.is_empty()
        && let Some(live) = args.topology.live()?
    {
        return run_live(&args, live, topology, source, config, ctx);
    }
    let inputs = open_all(&args.files)?;
    let total_bytes = total_size(&inputs);
    let names: Vec<String> = inputs.iter().map(|(n, _)| n.clone()).collect();
    let mut workers: Vec<Analyzer<'_>> = (0..threads)
        .map(|_| Analyzer::new(&topology, &config))
        .collect();
    let mut read = ReadSummary::default();
    let mut summaries = Vec::new();

    let progress = ctx.progress("reading keys", Unit::Bytes, total_bytes);
    for (name, input) in inputs {
        let s = input
            .par_read(&name, &opts, &mut workers, Some(progress.counter()))
            .map_err(|e| read_context(&name, e))?;
        read.merge(s.clone());
        args.input.check_not_empty(&name, &s)?;
        summaries.push((name, s));
    }
    progress.finish();

    let report = merged(workers).finish(&read, source, &config);
    emit(&args, &report, &names.join(", "), &config, ctx)?;
    for (name, s) in &summaries {
        warn_malformed(ctx, name, s)?;
    }
    Ok(ExitStatus::Clean)
}

fn merged(workers: Vec<Analyzer<'_>>) -> Analyzer<'_> {
    let mut it = workers.into_iter();
    let mut total = it.next().expect("invariant: at least one worker");
    for w in it {
        total.merge(&w);
    }
    total
}

/// Samples keys from every master of a live cluster (one thread per master) and analyzes them.
fn run_live(
    args: &AnalyzeArgs,
    live: crate::live::LiveCluster,
    topology: crate::topology::Topology,
    source: String,
    config: AnalyzeConfig,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<ExitStatus> {
    let opts = args.sampling.scan_options(&live)?;
    let nodes = topology.key_holders();
    let owners = topology.master_slots();
    // With --bytes, each node's biggest sampled keys are kept too (described afterwards).
    let keep = if opts.bytes {
        super::inputs::TOP_KEYS
    } else {
        0
    };
    let workers: Vec<(Analyzer<'_>, Biggest)> = nodes
        .iter()
        .map(|_| (Analyzer::new(&topology, &config), Biggest::new(keep)))
        .collect();
    super::args::warn_no_replica(ctx, &opts, &nodes)?;
    let total = opts.per_node.map(|n| n * nodes.len() as u64);
    let progress = ctx.progress("sampling", Unit::Keys, total);
    let targets = crate::live::SampleTargets {
        masters: &nodes,
        owners: &owners,
        migrations: topology.migrations(),
    };
    let sample = live.sample_masters(
        &targets,
        &opts,
        args.sampling.window()?,
        workers,
        |(w, big), k, b, h| {
            w.add(k, b, h);
            if let Some(b) = b {
                big.offer(b, k);
            }
            progress.inc(1);
        },
    )?;
    progress.finish();
    super::args::SampleArgs::check_stable(&live, &topology)?;
    let (workers, bigs): (Vec<Analyzer<'_>>, Vec<Biggest>) = sample.sinks.into_iter().unzip();
    let mut biggest = Biggest::new(keep);
    for b in &bigs {
        biggest.merge(b);
    }
    let read = crate::keys::ReadSummary {
        keys: sample.keys,
        lines: sample.keys,
        ..Default::default()
    };
    let mut analyzer = merged(workers);
    // The servers know every slot's exact key count: node and slot figures come from them,
    // whatever the sample (unless --match narrows the keys to some of them).
    if let Some(exact) = sample.exact_slot_keys {
        analyzer.set_exact_slot_keys(exact);
    }
    set_live_load(
        args,
        &live,
        &topology,
        &nodes,
        &sample.slot_load,
        &mut analyzer,
        ctx,
    )?;
    if args.sampling.heat {
        analyzer.set_ops_source(
            "OBJECT FREQ of each sampled key (its LFU access counter, logarithmic: a heat rank, not a count of operations)".into(),
        );
    }
    let mut report = analyzer.finish(&read, source.clone(), &config);
    if !biggest.keys().is_empty() {
        report.snapshot = Some(describe_biggest(&live, &topology, &biggest, config.top)?);
    }
    emit(args, &report, &source, &config, ctx)?;
    Ok(ExitStatus::Clean)
}

/// What the servers measured: each node's data bytes, and the load per slot where they count
/// it (CLUSTER SLOT-STATS), else each node's command time (INFO commandstats), with a note
/// saying so.
fn set_live_load(
    args: &AnalyzeArgs,
    live: &crate::live::LiveCluster,
    topology: &crate::topology::Topology,
    nodes: &[crate::topology::Node],
    slot_load: &Option<crate::live::SlotLoad>,
    analyzer: &mut Analyzer<'_>,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<()> {
    // Each sampled node's data bytes as INFO memory counts them.
    let dataset: Vec<u64> = topology
        .nodes()
        .iter()
        .map(|n| match nodes.iter().any(|t| t.address == n.address) {
            true => live.dataset_bytes(n),
            false => Ok(0),
        })
        .collect::<Result<_, _>>()?;
    analyzer.set_node_dataset(dataset);
    match slot_load {
        Some(load) => {
            analyzer.set_node_load(crate::analyze::NodeLoad::per_node(
                topology,
                &load.cpu_usec,
                &load.net_in,
                &load.net_out,
            ));
            // --heat asked for the keys' LFU counters as the ops: the CPU stays per node.
            if !args.sampling.heat {
                analyzer.set_slot_ops(
                    load.cpu_usec.iter().map(|&c| c as f64).collect(),
                    format!("CPU µs per slot from CLUSTER SLOT-STATS: {}", load.since),
                );
            }
        }
        None if topology.slot_map().is_some() => {
            analyzer.set_node_load(command_times(live, topology, nodes)?);
            writeln!(
                ctx.stderr,
                "note: the servers do not count load per slot (that needs Valkey 8+ with cluster-slot-stats-enabled yes, or Redis 8.2+): each node's CPU is from INFO commandstats, and slots are not weighed by load"
            )?;
        }
        None => {}
    }
    Ok(())
}

/// Each node's command time as INFO commandstats counts it (a master that owns no slot, a
/// failed one replaced, is not asked).
fn command_times(
    live: &crate::live::LiveCluster,
    topology: &crate::topology::Topology,
    sampled: &[crate::topology::Node],
) -> anyhow::Result<Vec<crate::analyze::NodeLoad>> {
    let times = topology
        .nodes()
        .iter()
        .map(|n| match sampled.iter().any(|t| t.address == n.address) {
            true => live.node_command_time(n).map(|t| t.usec),
            false => Ok(0),
        })
        .collect::<Result<Vec<u64>, _>>()?;
    Ok(times
        .into_iter()
        .map(|cpu_usec| crate::analyze::NodeLoad {
            cpu_usec,
            network_bytes_in: None,
            network_bytes_out: None,
        })
        .collect())
}

/// The biggest sampled keys as their servers describe them (type, encoding, elements, TTL).
fn describe_biggest(
    live: &crate::live::LiveCluster,
    topology: &crate::topology::Topology,
    biggest: &Biggest,
    top: usize,
) -> anyhow::Result<crate::analyze::snapshot::SnapshotReport> {
    let keys = biggest.keys();
    let names: Vec<&[u8]> = keys.iter().map(|(_, k)| k.as_slice()).collect();
    let facts = live.describe_keys_on(topology, &names)?;
    Ok(crate::analyze::snapshot::sample_report(
        keys, &facts, topology, top,
    ))
}

fn emit(
    args: &AnalyzeArgs,
    report: &crate::analyze::AnalyzeReport,
    inputs: &str,
    config: &AnalyzeConfig,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<()> {
    // Charts only for a person at a terminal (and never with NO_COLOR); pipes get plain text.
    let charts = args.output.is_none()
        && ctx.stdout_is_terminal
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let layout = ctx.layout_for(args.output.as_ref());
    let view = AnalyzeView {
        report,
        inputs,
        top: config.top,
        charts,
    };
    let format = match args.format {
        AnalyzeFormat::Json => Format::Json,
        AnalyzeFormat::Table => Format::Table,
        AnalyzeFormat::Html => Format::Html,
    };
    let mut sink = super::args::output_sink(args.output.as_ref(), &mut *ctx.stdout)?;
    let mut out = BufWriter::new(&mut sink);
    render(&view, format, &mut out, &layout).context("writing the report")?;
    out.flush()?;
    drop(out);
    sink.finish()
}
