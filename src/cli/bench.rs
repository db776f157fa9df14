//! `keyplan bench`: batches run on a live cluster with each strategy, measured next to the
//! simulator's prediction.

use super::Ctx;
use super::args::BatchFiles;
use super::loaded::{Loaded, Target};
use super::progress::Unit;
use super::simulate::StrategyList;
use super::values::{Word, one_of};
use crate::bench::record::{RecordError, Records, valid_run_id};
use crate::bench::{BenchOptions, BenchResult, run_bench};
use crate::error::{ExitStatus, UserError};
use crate::report::bench::{BenchPiece, BenchReport, bench_stream};
use crate::report::render::{Format, Stream};
use crate::simulate::NetworkModel;
use crate::simulate::batch::Batch;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by Ctrl-C: the running strategy stops, then the keys written are deleted.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// `--format` of bench.
const BENCH_FORMATS: &[Word<Format>] = &[
    (
        "table",
        Format::Table,
        "A table: strategy, QPS, P50/P99, round trips and commands predicted / measured",
    ),
    (
        "json",
        Format::Json,
        "One JSON document (its schema_version and fields are documented in README)",
    ),
];

/// Run batches on a live cluster with each strategy; print measured round trips, commands per
/// node, throughput and latency next to the simulator's prediction.
///
/// It writes only keys under --prefix, refuses a prefix that already holds keys, and deletes
/// everything under the prefix when done (also after an error or Ctrl-C). Needs --allow-writes.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan bench --cluster redis://127.0.0.1:7000 --allow-writes --batches batches.txt\n  keyplan bench --cluster redis://127.0.0.1:7000 --allow-writes --scheme keyplan.yaml --strategy pipeline --duration 10 --concurrency 4"
)]
pub struct BenchArgs {
    /// The cluster: redis://[user:password@]host:port (password also from REDISCLI_AUTH)
    #[arg(long, value_name = "URL")]
    pub cluster: Option<String>,

    /// Allow bench to write keys under --prefix (it refuses without)
    #[arg(long)]
    pub allow_writes: bool,

    /// The batches to run.
    #[command(flatten)]
    pub batches: BatchFiles,

    /// Which strategies.
    #[command(flatten)]
    pub strategy: StrategyList,

    /// Seconds each (batch, strategy) runs
    #[arg(long, default_value = "2", value_name = "S", value_parser = duration)]
    pub duration: Duration,

    /// Concurrent workers, each with its own connections
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,

    /// Every key written is under this prefix
    #[arg(long, default_value = "keyplan:bench", value_name = "PREFIX")]
    pub prefix: String,

    /// Measure the load model's parameters on this cluster with bench's own micro-benchmarks
    /// (never your batches) and write them to -o FILE, for simulate/plan/bench --calibration
    #[arg(long, conflicts_with_all = ["batches", "scheme", "cleanup"], requires = "output")]
    pub calibrate: bool,

    /// Write the results (with --calibrate: the calibration file) to this file instead of
    /// standard output, whole or not at all
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Only delete what an earlier run under --prefix wrote (from the journal it keeps on the
    /// cluster: the keys a killed or failed run left behind), then exit
    #[arg(long, conflicts_with_all = ["batches", "scheme"])]
    pub cleanup: bool,

    /// The calibration file the predictions use (from --calibrate; without it bench probes
    /// the round trip itself and uses the documented defaults for the rest)
    #[arg(long, value_name = "FILE", conflicts_with = "calibrate")]
    pub calibration: Option<PathBuf>,

    /// Round trip of one wave for the predictions, in milliseconds [default: measured]
    #[arg(long, value_name = "MS", value_parser = rtt_ms)]
    pub rtt: Option<f64>,

    /// Output format
    #[arg(long, value_parser = one_of(BENCH_FORMATS), default_value = "table")]
    pub format: Format,
}

/// Runs `keyplan bench`.
pub fn run(args: BenchArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    if args.cleanup {
        return run_cleanup(&args, ctx);
    }
    if args.calibrate {
        return run_calibrate(&args, ctx);
    }
    let url = check(&args)?;
    let target = Target::new(args.output.as_ref(), args.format);
    let loaded = Loaded::live_only(url, args.batches.scheme.as_deref(), target)?
        .with_probed_model(
            args.calibration.as_deref(),
            args.rtt,
            u32::from(args.concurrency),
        )?;
    let batches = args.batches.all(loaded.scheme.as_ref())?;
    let net = *loaded.model();
    let target = loaded.target.clone();
    let live = loaded.into_live();
    let map = live.topology()?;
    let strategies = args.strategy.strategies();
    let opts = BenchOptions {
        prefix: args.prefix.clone(),
        duration: args.duration,
        concurrency: args.concurrency as usize,
        strategies,
        net,
    };
    // Ctrl-C stops the run; the keys written are still deleted. A handler may already be set
    // (the library used twice in one process): then Ctrl-C keeps its default behaviour.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::Relaxed));
    let mut report = BenchReport {
        cluster: live.url_text(),
        prefix: args.prefix.clone(),
        duration_s: args.duration.as_secs_f64(),
        concurrency: args.concurrency as usize,
        network: opts.net,
        interrupted: false,
        results: Vec::new(),
    };
    // Tables are printed batch by batch as each finishes; JSON is one document at the end.
    let layout = ctx.layout_for(target.path.as_ref());
    let mut out = crate::files::output_sink(target.path.as_ref(), &mut *ctx.stdout)?;
    let mut stream = bench_stream(target.format, &mut out, &layout)?;
    let pending = run_printing(
        &live,
        &map,
        &batches,
        &opts,
        &mut report,
        &mut *stream,
        ctx.progress,
    )?;
    let interrupted = INTERRUPTED.load(Ordering::Relaxed);
    report.interrupted = interrupted;
    // An interrupted run's last batch may be partly done: its results so far.
    stream.item(&BenchPiece::Batch(&pending))?;
    stream.finish(&report)?;
    out.finish()?;
    if interrupted {
        writeln!(ctx.stderr, "interrupted: the keys written were deleted")?;
        return Ok(ExitStatus::Error);
    }
    Ok(if report.results.iter().all(|r| r.matches) {
        ExitStatus::Clean
    } else {
        ExitStatus::Findings
    })
}

/// Runs the bench, drawing progress and (for tables) printing each batch's table as its last
/// strategy finishes; fills `report.results` and returns the results of a batch left partly
/// done by an interruption.
fn run_printing(
    live: &crate::live::LiveCluster,
    map: &crate::topology::SlotMap,
    batches: &[Batch],
    opts: &BenchOptions,
    report: &mut BenchReport,
    stream: &mut dyn for<'r> Stream<BenchPiece<'r>, BenchReport>,
    progress: super::progress::ProgressConfig,
) -> anyhow::Result<Vec<BenchResult>> {
    let per_batch = opts.strategies.len();
    let progress = super::progress::Progress::start(progress, "benchmarking", Unit::Steps, None);
    let mut pending: Vec<BenchResult> = Vec::new();
    let mut write_err: Option<std::io::Error> = None;
    let records = StateFiles::here();
    let run = run_bench(
        live,
        map,
        batches,
        opts,
        &records,
        &INTERRUPTED,
        &mut |step| {
            progress.set_total(step.steps as u64);
            if step.index == 0 && step.result.is_none() {
                // Started once every batch is known to run: a refusal prints nothing on stdout.
                if let Err(e) = progress.suspend(|| stream.item(&BenchPiece::Start(report))) {
                    write_err.get_or_insert(e);
                }
            }
            match step.result {
                None => {
                    progress.set_position(step.index as u64);
                    progress.set_message(format!("{} · {}", step.batch, step.strategy.name()));
                }
                Some(r) => {
                    progress.set_position(step.index as u64 + 1);
                    pending.push(r.clone());
                    if pending.len() == per_batch {
                        let done = std::mem::take(&mut pending);
                        let write = || stream.item(&BenchPiece::Batch(&done));
                        if let Err(e) = progress.suspend(write) {
                            write_err.get_or_insert(e);
                        }
                    }
                }
            }
        },
    );
    progress.finish();
    report.results = run?;
    if let Some(e) = write_err {
        return Err(anyhow::Error::new(e).context("writing the results"));
    }
    Ok(pending)
}

/// `--cleanup`: deletes the keys the journal under the prefix lists.
fn run_cleanup(args: &BenchArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let Some(url) = args.cluster.as_deref() else {
        return Err(UserError::new(
            "--cleanup needs the cluster",
            "pass --cluster redis://host:port",
        )
        .into());
    };
    let live = Loaded::live_only(url, None, Target::new(None, Format::Table))?.into_live();
    let map = live.topology()?;
    let c = crate::bench::clean_journal(&live, &map, &args.prefix, &StateFiles::here())?;
    writeln!(
        ctx.stderr,
        "deleted {} key(s) an earlier bench run wrote under '{}:'; {} remain",
        c.deleted, args.prefix, c.remaining
    )?;
    for f in &c.failures {
        writeln!(ctx.stderr, "  {f}")?;
    }
    Ok(if c.remaining == 0 {
        ExitStatus::Clean
    } else {
        ExitStatus::Error
    })
}

/// Bench's records of its runs (see [`crate::bench::record`]), kept as files on this machine:
/// `$XDG_STATE_HOME/keyplan/bench/<run id>.run`, else `~/.local/state/keyplan/bench/…`, in a
/// directory only its owner may enter, each readable by its owner only.
struct StateFiles {
    /// The directory; `None` when neither XDG_STATE_HOME nor HOME is an absolute path.
    dir: Option<PathBuf>,
}

impl StateFiles {
    fn here() -> StateFiles {
        let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
        let state = std::env::var_os("XDG_STATE_HOME")
            .and_then(abs)
            .or_else(|| Some(std::env::var_os("HOME").and_then(abs)?.join(".local/state")));
        StateFiles {
            dir: state.map(|s| s.join("keyplan").join("bench")),
        }
    }

    fn dir(&self) -> Result<&Path, RecordError> {
        self.dir.as_deref().ok_or_else(|| RecordError {
            path: "$XDG_STATE_HOME".into(),
            reason: "neither XDG_STATE_HOME nor HOME is set to an absolute path".into(),
        })
    }

    /// Run `id`'s file (`id` is a run id: 32 hex digits, never a path).
    fn file(&self, id: &str) -> Result<PathBuf, RecordError> {
        if !valid_run_id(id) {
            return Err(RecordError {
                path: id.into(),
                reason: "not a run id".into(),
            });
        }
        Ok(self.dir()?.join(format!("{id}.run")))
    }
}

fn record_err(path: &Path, e: impl std::fmt::Display) -> RecordError {
    RecordError {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl Records for StateFiles {
    fn new_run_id(&self) -> Result<String, RecordError> {
        use std::io::Read;
        let mut bytes = [0u8; 16];
        let urandom = Path::new("/dev/urandom");
        std::fs::File::open(urandom)
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| record_err(urandom, e))?;
        Ok(crate::bench::record::hex(&bytes))
    }

    fn keep(&self, id: &str, text: &str) -> Result<(), RecordError> {
        use std::io::Write as _;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = self.dir()?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| record_err(dir, e))?;
        let path = self.file(id)?;
        let tmp = dir.join(format!(".{id}.run.tmp"));
        // A new file (never one planted under that name, nor a link), then renamed into place.
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(record_err(&path, e));
        }
        Ok(())
    }

    fn find(&self, id: &str) -> Result<Option<(String, String)>, RecordError> {
        let (Some(_), true) = (&self.dir, valid_run_id(id)) else {
            return Ok(None);
        };
        let path = self.file(id)?;
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some((path.display().to_string(), text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(record_err(&path, e)),
        }
    }

    fn forget(&self, id: &str) {
        if let Ok(path) = self.file(id) {
            let _ = std::fs::remove_file(path);
        }
    }

    fn place(&self) -> String {
        self.dir.as_ref().map_or_else(
            || "neither XDG_STATE_HOME nor HOME is set".into(),
            |d| d.display().to_string(),
        )
    }
}

/// `--rtt`: a round trip in milliseconds, from a microsecond to a minute (past those, the
/// predictions are nonsense: 1e308 came out as 309 digits, 1e-308 as 0 ms).
fn rtt_ms(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ms) if (0.001..=60_000.0).contains(&ms) => Ok(ms),
        _ => {
            Err("not a round trip in milliseconds between 0.001 and 60000 (e.g. --rtt 0.5)".into())
        }
    }
}

/// `--duration`: a positive number of seconds, at most an hour.
fn duration(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3600.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err("not a number of seconds between 0 and 3600 (e.g. --duration 2)".into()),
    }
}

/// Refuses what bench must not do or cannot do; the cluster URL.
fn check(args: &BenchArgs) -> anyhow::Result<&str> {
    let Some(url) = args.cluster.as_deref() else {
        return Err(UserError::new(
            "bench runs on a live cluster, and no --cluster is given",
            "pass --cluster redis://host:port (and --allow-writes)",
        )
        .into());
    };
    if !args.allow_writes {
        return Err(UserError::new(
            "bench writes keys to the cluster, and --allow-writes is not given",
            format!(
                "it writes only keys under '{}:' (--prefix), refuses a prefix that already holds keys and deletes what it wrote; pass --allow-writes to go ahead",
                args.prefix
            ),
        )
        .into());
    }
    if args.batches.batches.is_none() && args.batches.scheme.is_none() && !args.calibrate {
        return Err(UserError::new(
            "no batches to run",
            "pass --batches FILE or --scheme keyplan.yaml",
        )
        .into());
    }
    Ok(url)
}

/// `bench --calibrate`: the micro-benchmarks, the fit, the file.
fn run_calibrate(args: &BenchArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    use crate::bench::calibrate::{LEVELS, calibrate};
    let url = check(args)?;
    let out = args.output.as_ref().expect("invariant: clap requires -o");
    let target = Target::new(Some(out), Format::Json);
    let live = Loaded::live_only(url, None, target)?.into_live();
    let map = live.topology()?;
    let opts = BenchOptions {
        prefix: args.prefix.clone(),
        duration: args.duration,
        concurrency: 1,
        strategies: Vec::new(),
        net: NetworkModel::default(),
    };
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::Relaxed));
    let progress = ctx.progress("calibrating", Unit::Steps, None);
    let mut done = 0u64;
    let records = StateFiles::here();
    let cal = calibrate(&live, &map, &opts, &records, &INTERRUPTED, &mut |step| {
        progress.set_total((step.steps * LEVELS.len()) as u64);
        if step.result.is_some() {
            done += 1;
            progress.set_position(done);
        }
        progress.set_message(format!("{} · {}", step.batch, step.strategy.name()));
    });
    progress.finish();
    if INTERRUPTED.load(Ordering::Relaxed) {
        writeln!(
            ctx.stderr,
            "interrupted: the keys written were deleted; no calibration written"
        )?;
        return Ok(ExitStatus::Error);
    }
    let cal = cal?;
    ctx.write_to(Some(out), |sink, _| {
        serde_json::to_writer_pretty(&mut *sink, &cal)?;
        Ok(sink.write_all(b"\n")?)
    })?;
    let within = cal.predicted_within(0.7, 1.43);
    writeln!(
        ctx.stderr,
        "calibrated on {} ({} masters): one round trip {:.0} µs (p99 {:.0} µs); the fitted model predicts {} of {} micro-benchmarks within 0.7–1.43× of their measured QPS; written to {}",
        cal.measured_on.cluster,
        cal.measured_on.masters,
        cal.round_trip_us.p50,
        cal.round_trip_us.p99,
        within,
        cal.points.len(),
        out.display()
    )?;
    // Said now, where the calibration is made, not first by the simulate that reads it.
    if let Some(w) = noisy(cal.round_trip_us.p50, cal.round_trip_us.p99) {
        writeln!(ctx.stderr, "{w}")?;
    }
    Ok(ExitStatus::Clean)
}

/// The warning for a calibration whose lone-GET P99 round trip (µs) is far above its median.
fn noisy(p50: f64, p99: f64) -> Option<String> {
    (p50 > 0.0 && p99 / p50 > crate::simulate::NOISY_P99_OVER_P50).then(|| {
        format!(
            "warning: the machine was noisy while calibrating: a lone GET's P99 round trip was {:.0}× its median ({p99:.0} µs against {p50:.0} µs); predictions from this file are only as steady as that: calibrate again on a quiet machine",
            p99 / p50
        )
    })
}

#[cfg(test)]
mod noisy_tests {
    #[test]
    fn a_tail_far_above_the_median_is_warned_about() {
        assert_eq!(super::noisy(50.0, 120.0), None);
        let w = super::noisy(40.0, 3640.0).unwrap();
        assert!(w.contains("91× its median (3640 µs against 40 µs)"), "{w}");
    }
}
