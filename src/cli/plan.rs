//! `keyplan plan`: hash-tag suggestions for the batches of a scheme and for observed batches,
//! scored in round trips (the simulator) and skew (the key sample, or the declared
//! cardinalities).

use super::Ctx;
use super::args::{BatchArgs, InputArgs, TopologyArgs, scheme_path, threads};
use super::loaded::{Loaded, Target};
use super::values::{PLAN_STRATEGIES, Word, one_of};
use crate::error::{ExitStatus, UserError};
use crate::plan::observed::ObservedPlanner;
use crate::plan::workload::{MAX_SAMPLE_KEYS, PlanSample};
use crate::plan::{PlanOptions, plan_scheme, yaml};
use crate::report::plan::{PlanReport, WorkloadInfo};
use crate::report::render::Format;
use crate::simulate::Strategy;
use std::path::PathBuf;

/// `--format` of plan.
const PLAN_FORMATS: &[Word<Format>] = &[
    (
        "table",
        Format::Table,
        "Tables: candidates per batch, the recommendation and the rewritten patterns",
    ),
    (
        "json",
        Format::Json,
        "One JSON document (schema_version 2, documented in README)",
    ),
    (
        "yaml",
        Format::Yaml,
        "The scheme file with the recommendations applied (needs --scheme)",
    ),
    (
        "html",
        Format::Html,
        "A self-contained HTML report: candidates on a round trips × skew chart (use -o FILE)",
    ),
    (
        "markdown",
        Format::Markdown,
        "The tables as Markdown (a pull-request comment or a CI job summary)",
    ),
];

/// Suggest hash tags: for every batch that is cross-slot or fans out, candidate rewrites
/// scored in round trips and skew, the Pareto front, and a recommendation.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("scheme", |a| a.help("A key scheme: its batches are planned, its `topology:` is the default topology [default: ./keyplan.yaml when it exists]")),
    after_help = "Examples:\n  keyplan plan --scheme keyplan.yaml\n  keyplan plan --scheme keyplan.yaml --keys sample.keys --max-skew 1.2\n  keyplan plan --scheme keyplan.yaml --format yaml > keyplan.new.yaml\n  keyplan plan --batches batches.txt --keys sample.keys"
)]
pub struct PlanArgs {
    /// Where batches come from: the scheme's are planned, the file's and the capture's are
    /// mined for the segment their keys share.
    #[command(flatten)]
    pub batches: BatchArgs,

    /// The rules a rewrite must lint clean under (the same flags as `keyplan lint`).
    #[command(flatten)]
    pub rules: super::lint::RuleArgs,

    /// Key samples: skew is measured by re-keying them ('-' for stdin) [default: keys generated
    /// from the scheme's declared cardinalities]
    #[arg(long = "keys", value_name = "FILE", num_args = 1..)]
    pub keys: Vec<PathBuf>,

    /// How key samples are read.
    #[command(flatten)]
    pub input: InputArgs,

    /// Where keys live [default: the scheme's topology, else 3 masters].
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// The highest busiest-node ÷ mean load a recommendation may put on the batch's keys
    #[arg(long, default_value_t = 1.25, value_name = "X")]
    pub max_skew: f64,

    /// How batches over several nodes are executed, for round trips before and after
    #[arg(long, value_parser = one_of(PLAN_STRATEGIES), default_value = "pipeline")]
    pub strategy: Strategy,

    /// Score with what this client library does instead of a strategy (see simulate --client)
    #[arg(long, value_name = "CLIENT", value_parser = super::values::ClientName,
          hide_possible_values = true)]
    pub client: Option<String>,

    /// The load model that scores the candidates.
    #[command(flatten)]
    pub model: super::args::ModelArgs,

    /// Output format
    #[arg(long, value_parser = one_of(PLAN_FORMATS), default_value = "table")]
    pub format: Format,

    /// Write to this file instead of standard output
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `keyplan plan`.
pub fn run(mut args: PlanArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    // As lint does: the scheme of the current directory unless one is named.
    args.batches.files.scheme = scheme_path(args.batches.files.scheme.as_ref());
    check(&args)?;
    let opened = Loaded::open(
        &args.topology,
        args.batches.files.scheme.as_deref(),
        Some(3),
        Target::new(args.output.as_ref(), args.format),
    )?
    .with_model(&args.model)?
    .with_rules(&args.rules)?;
    let (topology, topo_source) = opened.topology_or_default()?;
    let topo_source = topo_source.to_string();
    let opts = options(&args, &opened)?;
    let loaded = opened.scheme.as_ref();
    let scheme = loaded.map(|l| &l.scheme);
    let sample = read_sample(&args, scheme, &topology, ctx)?;
    let batches = match (scheme, &sample.workload) {
        (Some(s), Some(w)) => plan_scheme(s, &topology, w, &opts),
        _ => Vec::new(),
    };
    // Observed batches are planned as they are read; the plans of batches over several slots
    // wait in a spool (memory up to 4 MiB, then a temporary file) until the report is written.
    let mut planner = ObservedPlanner::new(&topology, &sample.keys, &opts);
    let mut spool = crate::report::plan::ObservedSpool::default();
    let mut observed = args.batches.observed()?;
    for b in observed.by_ref() {
        spool.add(planner.add(&b?)).map_err(spool_error)?;
    }
    let groups = planner.finish();
    let notes = groups
        .note
        .iter()
        .cloned()
        .chain(observed.unknown_note())
        .collect();
    let report = PlanReport {
        topology: topo_source,
        workload: WorkloadInfo::of(&sample),
        max_skew: args.max_skew,
        scored_with: match opts.client {
            Some(c) => format!("client {}", c.name()),
            None => format!("strategy {}", opts.strategy.name()),
        },
        batches,
        observed: spool.finish(groups).map_err(spool_error)?,
        notes,
    };
    write(&opened.target, &report, loaded, ctx)?;
    super::simulate::warn_hashing_limits(&topology, ctx)?;
    Ok(match report.findings() {
        0 => ExitStatus::Clean,
        _ => ExitStatus::Findings,
    })
}

fn spool_error(e: impl std::fmt::Display) -> anyhow::Error {
    UserError::new(
        format!("cannot spool the observed batches' plans to a temporary file: {e}"),
        "set TMPDIR to a writable directory",
    )
    .into()
}

/// Refuses flag combinations and values plan cannot use.
fn check(args: &PlanArgs) -> anyhow::Result<()> {
    args.batches.require(
        "nothing to plan: no --scheme, no keyplan.yaml here, no --batches and no --monitor",
    )?;
    if args.format == Format::Yaml && args.batches.files.scheme.is_none() {
        return Err(UserError::new(
            "--format yaml writes the updated scheme, and no --scheme is given",
            "pass --scheme keyplan.yaml, or use --format table or json",
        )
        .into());
    }
    if !(args.max_skew >= 1.0 && args.max_skew.is_finite()) {
        return Err(UserError::new(
            format!("--max-skew {}: not a ratio of 1 or more", args.max_skew),
            "give the busiest node's load over the mean you accept, e.g. --max-skew 1.25",
        )
        .into());
    }
    Ok(())
}

/// How plans are scored: the strategy or client, the network, and the rules a tag must meet.
fn options(args: &PlanArgs, loaded: &Loaded) -> anyhow::Result<PlanOptions> {
    let client = args
        .client
        .as_deref()
        .map(crate::simulate::Client::resolve_one)
        .transpose()
        .map_err(|e| UserError::new(format!("--client {e}"), "plan scores one client at a time"))?;
    let rules = loaded.rules();
    Ok(PlanOptions {
        max_skew: args.max_skew,
        max_skew_words: "--max-skew",
        strategy: args.strategy,
        client,
        net: *loaded.model(),
        tag: rules.tag_requirement(),
        tag_rules: rules.tag_rules(),
    })
}

/// The `--keys` sample: the workload plans are scored on, and the keys kept for observed
/// batches.
fn read_sample<'a>(
    args: &PlanArgs,
    scheme: Option<&'a crate::scheme::Scheme>,
    topology: &'a crate::topology::Topology,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<PlanSample<'a>> {
    let keep = args.batches.observes();
    let mut sample = PlanSample::new(scheme, topology, keep);
    // Each dump on every core; the parts merge into what one reader gets, in the sample's
    // order (dumps one after another).
    let mut order = 0u64;
    let dumps = args
        .input
        .read_dumps(&args.keys, ctx.progress, |input, opts, progress| {
            let mut sinks: Vec<PlanSample<'_>> = (0..threads(None))
                .map(|_| PlanSample::new(scheme, topology, keep))
                .collect();
            let mut snapshot = PlanSample::new(scheme, topology, keep);
            let (summary, was_snapshot) =
                input.par_read_lines(opts, &mut sinks, progress, |line, rec| {
                    snapshot.add_sized(line, rec.key, rec.bytes)
                })?;
            let mut part = if was_snapshot {
                snapshot
            } else {
                let mut parts = sinks.into_iter();
                let mut first = parts.next().expect("one sink at least");
                for p in parts {
                    first.merge(p);
                }
                first
            };
            part.order_after(order);
            order += 1;
            sample.merge(part);
            Ok(summary)
        })?;
    dumps.warn(ctx)?;
    let sample = sample.finish();
    if sample.truncated {
        writeln!(
            ctx.stderr,
            "warning: observed batches are scored on the first {MAX_SAMPLE_KEYS} sample keys"
        )?;
    }
    Ok(sample)
}

/// Writes the report (or, with `--format yaml`, the scheme with the recommendations applied).
fn write(
    target: &Target,
    report: &PlanReport,
    loaded: Option<&super::args::LoadedScheme>,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<()> {
    if target.format == Format::Yaml {
        let l = loaded.expect("invariant: checked above, --format yaml needs --scheme");
        let updated = yaml::apply(&l.text, &l.scheme, &report.batches).map_err(|e| {
            UserError::new(
                format!("cannot write the updated scheme: {e}"),
                "apply the rewrites printed by --format table by hand",
            )
        })?;
        return ctx.write_to(target.path.as_ref(), |out, _| {
            Ok(out.write_all(updated.as_bytes())?)
        });
    }
    target.render(report, ctx)
}
