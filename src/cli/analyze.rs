//! `keyplan analyze`: distribution, skew, hot slots and tags, and key patterns of a dump.

use super::Ctx;
use super::args::{InputArgs, OutputArgs, SampleArgs, TopologyArgs, threads};
use super::loaded::{Loaded, Target};
use crate::analyze::{AnalyzeConfig, Analyzer};
use crate::error::{ExitStatus, UserError};
use crate::pattern::{DEFAULT_DELIMITERS, Delimiters};
use crate::report::analyze::AnalyzeView;
use std::path::PathBuf;

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

    /// Where the report goes.
    #[command(flatten)]
    pub out: OutputArgs,

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
    let loaded = Loaded::open(&args.topology, None, Some(3), args.out.target())?;
    let (topology, source) = loaded.topology_or_default()?;
    let source = source.to_string();
    let config = AnalyzeConfig {
        top: args.top.max(1),
        hot_tag_share: args.hot_tag_share / 100.0,
        delimiters: Delimiters::new(&args.delimiters),
        ..AnalyzeConfig::default()
    };
    if args.files.is_empty()
        && let Some(live) = loaded.live
    {
        let target = loaded.target;
        return run_live(&args, &target, live, topology, source, config, ctx);
    }
    let mut workers: Vec<Analyzer<'_>> = (0..threads(args.threads))
        .map(|_| Analyzer::new(&topology, &config))
        .collect();
    let dumps = args
        .input
        .par_read_dumps(&args.files, ctx.progress, &mut workers)?;
    let report = merged(workers).finish(&dumps.total(), source, &config);
    emit(&loaded.target, &report, &dumps.names(), &config, ctx)?;
    dumps.warn(ctx)?;
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

/// Samples keys from every master of a live cluster (one thread per master) and analyzes them
/// with what the servers measured.
fn run_live(
    args: &AnalyzeArgs,
    target: &Target,
    live: crate::live::LiveCluster,
    topology: crate::topology::Topology,
    source: String,
    config: AnalyzeConfig,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<ExitStatus> {
    let opts = args.sampling.scan_options(&live)?;
    let masters = topology.key_holders();
    let window = args.sampling.window;
    let analysis = args.sampling.with_progress(ctx, &opts, &masters, |tick| {
        live.analyze(&topology, &config, &opts, window, source.clone(), tick)
    })?;
    for r in &analysis.refused {
        writeln!(ctx.stderr, "note: {r}")?;
    }
    if analysis.load_from_commandstats {
        let advice = analysis
            .slot_load_advice
            .as_deref()
            .unwrap_or("that needs Valkey 8+ or Redis 8.2+ with cluster-slot-stats-enabled yes");
        writeln!(
            ctx.stderr,
            "note: the servers do not count load per slot ({advice}): each node's CPU is from INFO commandstats, and slots are not weighed by load"
        )?;
    }
    emit(target, &analysis.report, &source, &config, ctx)?;
    Ok(ExitStatus::Clean)
}

fn emit(
    target: &Target,
    report: &crate::analyze::AnalyzeReport,
    inputs: &str,
    config: &AnalyzeConfig,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<()> {
    // Charts only for a person at a terminal (and never with NO_COLOR); pipes get plain text.
    let charts = target.path.is_none()
        && ctx.stdout_is_terminal
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let view = AnalyzeView {
        report,
        inputs,
        top: config.top,
        charts,
    };
    target.render(&view, ctx)
}
