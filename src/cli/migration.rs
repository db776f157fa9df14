//! What `keyplan rebalance` and `keyplan reshard` share: the cluster view, the key sample,
//! the batches, the estimates and the output (report or commands).

use super::Ctx;
use super::args::{BatchFiles, InputArgs, LoadedScheme, OutputArgs, SampleArgs, TopologyArgs};
use super::loaded::Loaded;
use crate::error::{ExitStatus, UserError};
use crate::keys::Record;
use crate::keys::parallel::ChunkSink;
use crate::migrate::balance::Unavailable;
use crate::migrate::emit::{Emit, EmitContext, emit};
use crate::migrate::impact::{
    ByteSize, MotionReport, Rate, SlotWeights, batches_in_motion, parse_byte_size, parse_rate,
};
use crate::migrate::timing::{Assumptions, estimate};
use crate::migrate::{
    ClusterView, MigrateError, MigrationReport, Move, PerMaster, PlanInput, Problem, SampleInfo,
    SampleSource,
};
use crate::report::render::Format;
use crate::simulate::NetworkModel;
use crate::simulate::batch::Batch;
use crate::simulate::client::Client;
use std::path::PathBuf;

/// Options shared by `rebalance` and `reshard`.
#[derive(Debug, clap::Args)]
pub struct PreviewArgs {
    /// Only preview (required unless --apply; --emit prints the commands that would migrate)
    #[arg(long)]
    pub preview: bool,

    /// Where the slots are [default: 3 masters]; CLUSTER NODES text keeps redis-cli's node order.
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// Key samples whose keys, bytes and ops are counted per node ('-' for stdin)
    #[arg(long = "keys", value_name = "FILE", num_args = 1..)]
    pub keys: Vec<PathBuf>,

    /// How key samples are read.
    #[command(flatten)]
    pub input: InputArgs,

    /// How a live cluster is sampled (with --cluster and no --keys).
    #[command(flatten)]
    pub sampling: SampleArgs,

    /// With --cluster: do not sample keys (slots only)
    #[arg(long)]
    pub no_sample: bool,

    /// Batches (declared in a key scheme, or listed in a batch file): which of them touch
    /// moving slots.
    #[command(flatten)]
    pub batches: BatchFiles,

    /// Client profiles for batches in motion (NAME, NAME@VERSION or all) [default: jedis,
    /// lettuce, redis-py, go-redis, ioredis, node-redis, redis-rs]
    #[arg(long = "client", value_name = "NAME", value_delimiter = ',',
          value_parser = super::values::ClientName, hide_possible_values = true)]
    pub clients: Vec<String>,

    /// Estimate migration time at this rate: keys per second (5000keys/s) or bytes (20MB/s)
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub migrate_rate: Option<Rate>,

    /// Multiply sample counts by this for time and budget estimates (e.g. 100 for a 1% sample)
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    pub scale: f64,

    /// Round trip between the tool and a node (and between nodes), in ms, for the time
    /// estimate of both ways of moving slots (key by key, and atomic)
    #[arg(long, default_value_t = 0.5, value_name = "MS", value_parser = positive_ms)]
    pub migrate_rtt: f64,

    /// Warn when a node holds more than this after the move (e.g. 25GB; needs bytes)
    #[arg(long, value_name = "SIZE", value_parser = parse_byte_size)]
    pub max_node_bytes: Option<ByteSize>,

    /// Print the commands that would execute the plan instead of the report
    #[arg(long, value_enum, value_name = "HOW")]
    pub emit: Option<Emit>,

    /// Keys per MIGRATE of a slot in the --emit setslot script and --apply (redis-cli's
    /// --cluster-pipeline)
    #[arg(long, value_name = "N", default_value_t = crate::migrate::emit::DEFAULT_PIPELINE as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub pipeline: u32,

    /// Where the report (or the commands) go.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `--migrate-rtt`: a positive number of milliseconds, at most a minute.
fn positive_ms(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 60_000.0 => Ok(x),
        Ok(x) if x > 60_000.0 && x.is_finite() => Err(format!(
            "{x:e} ms is over a minute; give the round trip between the nodes (e.g. --migrate-rtt 0.5)"
        )),
        _ => Err("not a positive number of milliseconds (e.g. --migrate-rtt 0.5)".into()),
    }
}

/// What every preview starts from (after [`require_preview`] and its own flags' checks): the
/// estimates' flags parsed, the scheme read, the cluster as redis-cli would see it.
pub struct Opened {
    /// `--migrate-rate`.
    pub rate: Option<Rate>,
    /// `--max-node-bytes`.
    pub budget: Option<ByteSize>,
    /// `--migrate-rtt` and `--pipeline`, for the time estimate.
    pub timing: (f64, usize),
    /// The scheme and the live cluster handle.
    pub loaded: Loaded,
    /// The cluster.
    pub view: ClusterView,
    /// Where the cluster came from.
    pub source: String,
}

impl Opened {
    /// Reads what `args` name.
    pub fn open(args: &PreviewArgs) -> anyhow::Result<Opened> {
        let (rate, budget) = (args.migrate_rate, args.max_node_bytes);
        let loaded = Loaded::open(
            &args.topology,
            args.batches.scheme.as_deref(),
            Some(3),
            args.out.target(),
        )?;
        let (view, source) = loaded.view()?;
        Ok(Opened {
            rate,
            budget,
            timing: (args.migrate_rtt, args.pipeline as usize),
            loaded,
            view,
            source: source.to_string(),
        })
    }

    /// Adds what every preview's report gets once its plan is made: the timing estimates,
    /// their warnings, the big keys that move.
    pub fn complete(
        &self,
        report: &mut MigrationReport,
        moves: &[Move],
        weights: &SlotWeights,
    ) -> anyhow::Result<()> {
        crate::migrate::finish_report(report, &self.view, moves, self.rate, self.budget, flag)?;
        report.add_moving_big_keys(&self.view, moves);
        if !moves.is_empty() {
            let bandwidth = match self.rate {
                Some(Rate::BytesPerSec(b)) => Some(b),
                _ => None,
            };
            let a = Assumptions::new(self.timing.0, bandwidth, self.timing.1, report.sample.scale);
            report.time_estimate = Some(estimate(&self.view, moves, weights, &a));
        }
        Ok(())
    }
}

/// One worker's per-slot totals (aligned so neighbouring workers share no cache line).
#[repr(align(128))]
#[derive(Default)]
struct WeightSink(SlotWeights, Vec<(Vec<u8>, u64)>);

impl ChunkSink for WeightSink {
    fn record(&mut self, rec: &Record<'_>) {
        self.0.add(rec.key, rec.bytes, rec.ops);
        // A key MIGRATE struggles with is named in the preview.
        if let Some(b) = rec
            .bytes
            .filter(|&b| b >= crate::migrate::MIGRATE_SLOW_BYTES)
        {
            self.1.push((rec.key.to_vec(), b));
        }
    }
}

/// The key sample: from `--keys` files, or sampled live with `--cluster`.
pub fn load_sample(
    args: &PreviewArgs,
    live: Option<&crate::live::LiveCluster>,
    view: &ClusterView,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<(SlotWeights, SampleInfo)> {
    if !(args.scale > 0.0 && args.scale.is_finite()) {
        return Err(UserError::new(
            format!("--scale {}: not a positive factor", args.scale),
            "give the cluster's key count over the sample's, e.g. --scale 100 for a 1% sample",
        )
        .into());
    }
    let mut info = SampleInfo {
        scale: args.scale,
        ..SampleInfo::default()
    };
    let mut weights = SlotWeights::default();
    if !args.keys.is_empty() {
        let threads = super::args::threads(None);
        let mut sinks: Vec<WeightSink> = (0..threads).map(|_| WeightSink::default()).collect();
        // The report names the biggest keys of the slots that move.
        let input = super::args::InputArgs {
            slot_biggest: true,
            ..args.input.clone()
        };
        let dumps = input.par_read_dumps(&args.keys, ctx.progress, &mut sinks)?;
        for w in &sinks {
            weights.merge(&w.0);
            info.big_keys.extend(w.1.iter().cloned());
        }
        info.big_keys
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (name, summary) in &dumps.0 {
            info.keys += summary.keys;
            if let Some(snap) = &summary.snapshot {
                match &mut info.snapshot {
                    Some(all) => all.merge((**snap).clone()),
                    None => info.snapshot = Some(snap.clone()),
                }
            }
            info.source.push(SampleSource::Dump(name.clone()));
        }
        dumps.warn(ctx)?;
    } else if !args.no_sample
        && let Some(live) = live
    {
        weights = sample_live(args, live, view, &mut info, ctx)?;
    }
    info.has_bytes = weights.has_bytes;
    info.has_ops = weights.has_ops;
    Ok((weights, info))
}

/// Samples the live cluster's masters; the servers' exact counts and per-slot load replace or
/// join the sample's figures.
fn sample_live(
    args: &PreviewArgs,
    live: &crate::live::LiveCluster,
    view: &ClusterView,
    info: &mut SampleInfo,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<SlotWeights> {
    let opts = args.sampling.scan_options(live)?;
    let window = args.sampling.window;
    let sample = args
        .sampling
        .with_progress(ctx, &opts, &view.key_holders(), |tick| {
            live.sample_weights(view, &opts, window, tick)
        })?;
    info.keys += sample.keys;
    info.big_keys = sample.big_keys;
    let per_master = match opts.per_node {
        None => PerMaster::All,
        Some(n) => PerMaster::UpTo(n),
    };
    if sample.exact {
        info.source.push(SampleSource::ExactCounts);
        if args.sampling.bytes {
            info.source.push(SampleSource::MemoryUsage(per_master));
        }
        // Exact counts stand for the whole cluster already.
        if info.scale != 1.0 {
            writeln!(
                ctx.stderr,
                "note: --scale {} ignored: keys per slot are the servers' exact counts, which already stand for the whole cluster",
                info.scale
            )?;
            info.scale = 1.0;
        }
    } else {
        info.source.push(SampleSource::Live {
            per_master,
            bytes: args.sampling.bytes,
        });
    }
    if let Some(since) = &sample.load_since {
        info.source.push(SampleSource::SlotStats(since.clone()));
    }
    Ok(sample.weights)
}

/// The batches from `--scheme` and `--batches`, and the client profiles to run them with.
pub fn load_batches(
    args: &PreviewArgs,
    scheme: Option<&LoadedScheme>,
) -> anyhow::Result<(Vec<Batch>, Vec<Client>)> {
    let batches = args.batches.all(scheme)?;
    let clients = if args.clients.is_empty() {
        crate::migrate::impact::PREVIEW_CLIENTS.to_vec()
    } else {
        super::simulate::clients(&args.clients)?
    };
    Ok((batches, clients))
}

/// Batches touching the slots of `moves`.
pub fn motion(
    view: &ClusterView,
    moves: &[Move],
    batches: &[Batch],
    clients: &[Client],
) -> Vec<MotionReport> {
    batches_in_motion(view, moves, batches, clients, &NetworkModel::default())
}

/// Writes the report (or the commands), and returns the exit status: 1 with warnings.
pub fn output(
    args: &PreviewArgs,
    target: &super::loaded::Target,
    report: &MigrationReport,
    view: &ClusterView,
    moves: &[Move],
    emit_ctx: &EmitContext,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<ExitStatus> {
    match args.emit {
        Some(how) => {
            let text = emit(view, moves, how, args.pipeline as usize, emit_ctx)?;
            ctx.write_to(target.path.as_ref(), |out, _| {
                Ok(out.write_all(text.as_bytes())?)
            })?;
        }
        None => target.render(report, ctx)?,
    }
    if args.emit.is_some() || target.format != Format::Table {
        for w in &report.warnings {
            writeln!(ctx.stderr, "warning: {}", w.text)?;
        }
    }
    Ok(match report.warnings.is_empty() {
        true => ExitStatus::Clean,
        false => ExitStatus::Findings,
    })
}

/// `--weight NODE=W` (redis-cli's `--cluster-weight`): NODE a node id prefix (or an address),
/// W a weight of 0 or more.
pub fn parse_weight(s: &str) -> Result<(String, f32), UserError> {
    let bad = |why: &str| {
        UserError::new(
            format!("--weight {s}: {why}"),
            "write NODE=WEIGHT, NODE being a node id prefix (or an address), e.g. --weight 3c3a0c74=2",
        )
    };
    let (name, w) = s.split_once('=').ok_or_else(|| bad("no '='"))?;
    let w: f32 = w
        .trim()
        .parse()
        .map_err(|_| bad("the weight is not a number"))?;
    if !(w >= 0.0 && w.is_finite()) {
        return Err(bad("the weight must be 0 or more"));
    }
    Ok((name.to_string(), w))
}

/// The flag that gives a plan's input.
pub fn flag(input: PlanInput) -> &'static str {
    match input {
        PlanInput::Weight => "--weight",
        PlanInput::AddNode => "--add-node",
        PlanInput::RemoveNode => "--remove-node",
        PlanInput::From => "--from",
        PlanInput::To => "--to",
        PlanInput::Slots => "--slots",
        PlanInput::Emit => "--emit",
        PlanInput::MigrateRate => "--migrate-rate",
        PlanInput::MaxNodeBytes => "--max-node-bytes",
        PlanInput::MaxSkew => "--max-skew",
    }
}

/// A migration engine's error in the command line's words: the flag that gave the input, and
/// what to do. `None` for errors that name no input.
pub fn words(e: &MigrateError) -> Option<UserError> {
    let plain = |title: String| UserError { title, help: None };
    Some(match e {
        MigrateError::NoSuchNode(n) => plain(format!(
            "--weight {n}: no node id starts with '{n}' (redis-cli: \"*** No such master node {n}\")"
        )),
        MigrateError::NotAMaster { input, name } => plain(format!(
            "{} {name}: not a known master (give a full node id, or the address for a topology without ids)",
            flag(*input)
        )),
        MigrateError::Input {
            input,
            value,
            problem,
        } => {
            let f = flag(*input);
            let (title, help) = match problem {
                Problem::ListedTwice => (
                    format!("{f}: {} is {problem}", value.as_deref().unwrap_or_default()),
                    None,
                ),
                Problem::NoIds(_) => (
                    format!("{f} {problem}"),
                    Some("give the topology as CLUSTER NODES text (--topology) or a --cluster URL"),
                ),
                Problem::NoAddress(_) | Problem::NoEntry => (format!("{f} {problem}"), None),
                Problem::NotLowestFirst(_) => (
                    format!("{f} redis-cli: {problem}"),
                    Some("use --emit setslot"),
                ),
                Problem::NeedsBytes if *input == PlanInput::MigrateRate => (
                    format!("{f} in bytes per second {problem}"),
                    Some(
                        "give a tsv sample (key<TAB>bytes), sample live with --bytes, or a rate in keys/s",
                    ),
                ),
                Problem::NeedsBytes => (
                    format!("{f} {problem}"),
                    Some("give a tsv sample (key<TAB>bytes) or sample live with --bytes"),
                ),
                _ => (
                    format!(
                        "{f}{}: {problem}",
                        value
                            .as_deref()
                            .map(|v| format!(" {v}"))
                            .unwrap_or_default()
                    ),
                    None,
                ),
            };
            UserError {
                title,
                help: help.map(String::from),
            }
        }
        _ => return None,
    })
}

/// Why a rebalance cannot balance by a measure, with the flags that fix it.
pub fn unavailable(u: &Unavailable) -> UserError {
    let help = match u {
        Unavailable::NoSample(_) => "give --keys FILE (or --cluster URL to sample live)",
        Unavailable::NoBytes(_) => "give a tsv sample (key<TAB>bytes) or sample live with --bytes",
        Unavailable::NoOps(_) => {
            "give a tsv sample with a third column (key<TAB>bytes<TAB>ops), or --balance-by cpu on a live cluster"
        }
        Unavailable::NoSlotStats(_) => {
            "give --cluster URL of a cluster whose servers have CLUSTER SLOT-STATS (Valkey 8+ with cluster-slot-stats-enabled yes, or Redis 8.2+)"
        }
        Unavailable::NoMemoryStats(_) => {
            "Valkey does not count it: use --balance-by bytes with --bytes"
        }
    };
    let (Unavailable::NoSample(by)
    | Unavailable::NoBytes(by)
    | Unavailable::NoOps(by)
    | Unavailable::NoSlotStats(by)
    | Unavailable::NoMemoryStats(by)) = u;
    let text = u.to_string();
    let rest = text.split_once(" needs ").map_or(text.as_str(), |(_, r)| r);
    UserError::new(format!("--balance-by {} needs {rest}", by.name()), help)
}

/// Refuses to run without `--preview`.
pub fn require_preview(args: &PreviewArgs, command: &str) -> Result<(), UserError> {
    if args.preview {
        Ok(())
    } else {
        Err(UserError::new(
            format!("keyplan {command} only previews: add --preview (or --apply)"),
            "add --preview; --emit redis-cli or --emit setslot prints the commands that would migrate, and --apply --cluster … carries the plan out",
        ))
    }
}
