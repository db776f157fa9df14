//! Argument groups shared by several subcommands, the loader layer every command goes
//! through (key dumps, scheme, topology precedence, batch files), and their conversion to
//! domain settings. The files themselves are opened, read and written by [`crate::files`].

use super::Ctx;
use super::progress::{Progress, ProgressConfig, Unit};
use super::values::{REPORT_FORMATS, one_of};
use crate::error::UserError;
use crate::files::{BatchFile, Input, MonitorFile, read_text};
use crate::keys::parallel::ChunkSink;
use crate::keys::{DEFAULT_MAX_LINE, InputFormat, ReadOptions, ReadSummary};
use crate::report::render::Format;
use crate::report::slot::MalformedLine;
use crate::simulate::Batch;
use crate::topology::{Topology, TopologyFormat, TopologyOptions};
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// Where and how a report is written.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format
    #[arg(long, value_parser = one_of(REPORT_FORMATS), default_value = "table")]
    pub format: Format,

    /// Write the report to this file instead of standard output (whole, or not at all)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Where these flags send the report.
    pub fn target(&self) -> super::loaded::Target {
        super::loaded::Target::new(self.output.as_ref(), self.format)
    }
}

/// How key dumps are read.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// Line format of the key dumps
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub input_format: InputFormat,

    /// Stop with exit status 2 at the first malformed line instead of skipping and counting it
    #[arg(long)]
    pub strict: bool,

    /// Longest line accepted, in bytes; longer lines are skipped and reported as malformed
    #[arg(long, default_value_t = DEFAULT_MAX_LINE, value_name = "BYTES")]
    pub max_line_bytes: usize,

    /// Accept a dump with no keys (by default an empty dump is an error, so that an empty
    /// `redis-cli --scan` in CI does not pass unnoticed)
    #[arg(long)]
    pub allow_empty: bool,

    /// For RDB snapshots: the server's `list-compress-depth` (0, the default, compresses no
    /// list node); with N > 0 the memory estimate counts the inner nodes of long lists at the
    /// compressed size the snapshot gives
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=65_535))]
    pub list_compress_depth: u32,

    /// For RDB snapshots: the server whose memory layout the estimate follows: redis-7,
    /// redis-8, valkey-8 or valkey-9, a minor version may follow (redis-8.2); by default the
    /// server named in the snapshot (its redis-ver or valkey-ver field). Name the server that
    /// will load the snapshot, for a planned upgrade
    #[arg(long, value_name = "SERVER", value_parser = crate::rdb::memory::Server::parse)]
    pub server: Option<crate::rdb::memory::Server>,

    /// Whether a snapshot's read keeps each slot's biggest key (set by the migration previews,
    /// which name the biggest keys of the slots that move; not a flag).
    #[arg(skip)]
    pub slot_biggest: bool,
}

impl InputArgs {
    /// An error for a dump that held no keys, unless `--allow-empty`.
    pub fn check_not_empty(&self, name: &str, s: &ReadSummary) -> Result<(), UserError> {
        if s.keys > 0 || self.allow_empty {
            return Ok(());
        }
        let what = if s.lines == 0 {
            "it is empty".to_string()
        } else {
            format!("its {} line(s) are all blank or malformed", s.lines)
        };
        Err(UserError::new(
            format!("no keys in {name}: {what}"),
            "check the command that wrote it (an empty `redis-cli --scan` reaches no keys), or pass --allow-empty to accept it",
        ))
    }

    /// The reader settings these flags ask for.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            format: self.input_format,
            strict: self.strict,
            max_line_bytes: self.max_line_bytes.max(1),
            list_compress_depth: self.list_compress_depth,
            server: self.server,
            slot_biggest: self.slot_biggest,
        }
    }

    /// Opens every dump of `files` (so that a bad path fails before anything is read), then
    /// reads each with `read` under one progress bar; a dump with no keys is an error unless
    /// `--allow-empty`.
    pub fn read_dumps(
        &self,
        files: &[PathBuf],
        progress: ProgressConfig,
        read: impl FnMut(Input, &ReadOptions, &AtomicU64) -> anyhow::Result<ReadSummary>,
    ) -> anyhow::Result<Dumps> {
        self.read_opened(crate::files::open_all(files)?, progress, read)
    }

    /// [`InputArgs::read_dumps`] of dumps already opened.
    pub fn read_opened(
        &self,
        inputs: Vec<Input>,
        progress: ProgressConfig,
        mut read: impl FnMut(Input, &ReadOptions, &AtomicU64) -> anyhow::Result<ReadSummary>,
    ) -> anyhow::Result<Dumps> {
        let opts = self.read_options();
        let total = crate::files::total_size(&inputs);
        let progress = Progress::start(progress, "reading keys", Unit::Bytes, total);
        let mut dumps = Vec::new();
        for input in inputs {
            let name = input.name.clone();
            let summary = read(input, &opts, progress.counter())?;
            self.check_not_empty(&name, &summary)?;
            dumps.push((name, summary));
        }
        progress.finish();
        Ok(Dumps(dumps))
    }

    /// [`InputArgs::read_dumps`] on every core: each dump's records go to `sinks`, one a
    /// thread.
    pub fn par_read_dumps<S: ChunkSink>(
        &self,
        files: &[PathBuf],
        progress: ProgressConfig,
        sinks: &mut [S],
    ) -> anyhow::Result<Dumps> {
        self.read_dumps(files, progress, |input, opts, progress| {
            input.par_read(opts, sinks, Some(progress))
        })
    }
}

/// The dumps a command read: each one's name and what reading it found.
pub struct Dumps(pub Vec<(String, ReadSummary)>);

impl Dumps {
    /// The dumps' names, comma-separated.
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.0.iter().map(|(n, _)| n.as_str()).collect();
        names.join(", ")
    }

    /// What reading all of them found (one file's summary is its own, not copied).
    pub fn total(&self) -> std::borrow::Cow<'_, ReadSummary> {
        if let [(_, one)] = self.0.as_slice() {
            return std::borrow::Cow::Borrowed(one);
        }
        let mut all = ReadSummary::default();
        for (_, s) in &self.0 {
            all.merge(s.clone());
        }
        std::borrow::Cow::Owned(all)
    }

    /// Their malformed lines, for JSON reports.
    pub fn malformed(&self) -> Vec<MalformedLine> {
        let lines = self.0.iter().flat_map(|(file, s)| {
            s.malformed_lines.iter().map(|e| MalformedLine {
                file: file.clone(),
                line: e.line,
                column: e.column,
                message: e.message.clone(),
            })
        });
        lines.collect()
    }

    /// Reports the lines skipped, on stderr (once, at the end).
    pub fn warn(&self, ctx: &mut Ctx<'_>) -> std::io::Result<()> {
        for (file, s) in self.0.iter().filter(|(_, s)| s.malformed > 0) {
            writeln!(
                ctx.stderr,
                "warning: {file}: skipped {} malformed line(s) of {} (--strict makes them fatal):",
                s.malformed, s.lines
            )?;
            for e in &s.malformed_lines {
                writeln!(
                    ctx.stderr,
                    "  {file}:{}:{}: {}",
                    e.line, e.column, e.message
                )?;
            }
            let more = s.malformed - s.malformed_lines.len() as u64;
            if more > 0 {
                writeln!(ctx.stderr, "  … and {more} more")?;
            }
        }
        Ok(())
    }
}

/// Where keys live.
#[derive(Debug, Clone, clap::Args)]
pub struct TopologyArgs {
    /// Place keys on N masters laid out as `redis-cli --cluster create` assigns slots
    #[arg(long, value_name = "N", conflicts_with_all = ["topology", "cluster"],
          value_parser = clap::value_parser!(u16).range(1..=16384))]
    pub masters: Option<u16>,

    /// A running cluster: redis://[user:password@]host:port (password also from REDISCLI_AUTH);
    /// read-only
    #[arg(long, value_name = "URL", conflicts_with = "topology")]
    pub cluster: Option<String>,

    /// A topology file: CLUSTER NODES text (or a nodes.conf), CLUSTER SLOTS or CLUSTER SHARDS
    /// as redis-cli prints them, a twemproxy (nutcracker) config, a keyplan topology YAML, or a
    /// libketama server list; the format is detected (--topology-format to force it)
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,

    /// Format of the --topology file
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub topology_format: TopologyFormat,

    /// The twemproxy pool to use (required when the config has several)
    #[arg(long, value_name = "NAME")]
    pub pool: Option<String>,

    /// Accept a slot map whose slots are not all served, and report the uncovered ones
    #[arg(long)]
    pub allow_partial: bool,
}

/// Where declared and listed batches come from (`bench`, the previews; with a capture in
/// [`BatchArgs`]).
#[derive(Debug, Clone, clap::Args)]
pub struct BatchFiles {
    /// A key scheme: its batches, keys generated from its variables
    #[arg(long, value_name = "FILE")]
    pub scheme: Option<PathBuf>,

    /// A batch file: one batch a line (`MGET a b c`, `PIPELINE GET a; ZADD b 1 x`, `MULTI SET
    /// a 1; INCR b`)
    #[arg(long, value_name = "FILE")]
    pub batches: Option<PathBuf>,
}

impl BatchFiles {
    /// The scheme's batches (at their declared sizes), then the batch file's.
    pub fn all(&self, scheme: Option<&LoadedScheme>) -> anyhow::Result<Vec<Batch>> {
        let mut all = Vec::new();
        if let Some(s) = scheme {
            all.extend(crate::simulate::batch::from_scheme(&s.scheme, None));
        }
        if let Some(p) = &self.batches {
            all.extend(read_batch_file(p)?);
        }
        Ok(all)
    }
}

/// Where batches come from (`simulate`, `plan`): a scheme, a batch file, a MONITOR capture.
#[derive(Debug, Clone, clap::Args)]
pub struct BatchArgs {
    /// The scheme and the batch file.
    #[command(flatten)]
    pub files: BatchFiles,

    /// A `redis-cli MONITOR` capture: its multi-key commands, MULTI…EXEC blocks and scripts,
    /// per client connection
    #[arg(long, value_name = "FILE")]
    pub monitor: Option<PathBuf>,
}

impl BatchArgs {
    /// The error `title` when no source of batches is given.
    pub fn require(&self, title: &str) -> Result<(), UserError> {
        if self.files.scheme.is_some() || self.files.batches.is_some() || self.monitor.is_some() {
            return Ok(());
        }
        Err(UserError::new(
            title,
            "pass --scheme keyplan.yaml, --batches FILE or --monitor CAPTURE",
        ))
    }

    /// Whether batches are observed (a batch file or a capture).
    pub fn observes(&self) -> bool {
        self.files.batches.is_some() || self.monitor.is_some()
    }

    /// The observed batches: the batch file's, then the capture's as it is read.
    pub fn observed(&self) -> anyhow::Result<ObservedBatches> {
        let listed = self
            .files
            .batches
            .as_deref()
            .map(BatchFile::open)
            .transpose()?;
        let capture = self.monitor.as_deref().map(MonitorFile::open).transpose()?;
        Ok(ObservedBatches {
            listed,
            capture,
            captured: 0,
            unknown: Default::default(),
        })
    }
}

/// The observed batches of [`BatchArgs::observed`], one at a time.
pub struct ObservedBatches {
    listed: Option<BatchFile>,
    capture: Option<MonitorFile>,
    captured: u64,
    unknown: crate::command::UnknownCommands,
}

impl Iterator for ObservedBatches {
    type Item = anyhow::Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        let b = match self.listed.as_mut().and_then(Iterator::next) {
            Some(b) => b,
            None => {
                let b = self.capture.as_mut()?.next()?;
                self.captured += 1;
                b
            }
        };
        if let Ok(b) = &b {
            for op in b.ops.iter().filter(|op| !op.known) {
                self.unknown.add(&op.command);
            }
        }
        Some(b)
    }
}

impl ObservedBatches {
    /// The note naming the commands of the batches read so far that the command table does
    /// not know (`None` when it knew them all).
    pub fn unknown_note(&self) -> Option<String> {
        self.unknown.note()
    }

    /// Says on stderr what the capture held besides its batches, once it is read to the end,
    /// and names the commands of the batches that the command table does not know.
    pub fn say_capture(&self, ctx: &mut Ctx<'_>) -> std::io::Result<()> {
        if let Some(note) = self.unknown_note() {
            writeln!(ctx.stderr, "note: {note}")?;
        }
        let Some((c, stats)) = self.capture.as_ref().and_then(|c| Some((c, c.stats()?))) else {
            return Ok(());
        };
        let dropped = match stats.unterminated {
            0 => String::new(),
            n => format!("; {n} MULTI without EXEC dropped"),
        };
        writeln!(
            ctx.stderr,
            "{}: {} commands, {} batches; {} single-key commands are not batches{dropped}",
            c.path().display(),
            stats.commands,
            self.captured,
            stats.single,
        )
    }
}

/// A key scheme read from its file.
#[derive(Debug, Clone)]
pub struct LoadedScheme {
    /// Where it was read.
    pub path: PathBuf,
    /// Its text (for rewriting it).
    pub text: String,
    /// The parsed scheme.
    pub scheme: crate::scheme::Scheme,
}

/// Reads and parses the scheme at `path`; errors name the file (and the line and column of a
/// bad entry).
pub fn load_scheme(path: &Path) -> anyhow::Result<LoadedScheme> {
    let text = read_text(path, "scheme")?;
    let scheme = crate::scheme::Scheme::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))?;
    Ok(LoadedScheme {
        path: path.to_path_buf(),
        text,
        scheme,
    })
}

/// Reads the topology file at `path` (in `format`, or detected); errors name the file.
pub fn read_topology(
    path: &Path,
    format: TopologyFormat,
    opts: &TopologyOptions,
) -> anyhow::Result<Topology> {
    let bytes = crate::files::read_capped(path, "topology file", crate::files::MAX_TEXT_FILE)?;
    Topology::parse_as(&String::from_utf8_lossy(&bytes), format, opts)
        .with_context(|| format!("in topology file {}", path.display()))
}

/// The batches of a batch file (one a line, read within its bounds); errors name the file and
/// line.
pub fn read_batch_file(path: &Path) -> anyhow::Result<Vec<crate::simulate::Batch>> {
    BatchFile::open(path)?.collect()
}

/// `--scheme FILE`, else `./keyplan.yaml`, else `./keyplan.yml`, the first that exists.
pub fn scheme_path(flag: Option<&PathBuf>) -> Option<PathBuf> {
    match flag {
        Some(p) => Some(p.clone()),
        None => ["keyplan.yaml", "keyplan.yml"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file()),
    }
}

/// `--threads N`, else every core.
pub fn threads(flag: Option<u16>) -> usize {
    flag.map(usize::from).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// The live cluster at `url` (the password from the URL, else from REDISCLI_AUTH as
/// redis-cli does).
pub fn live_cluster(url: &str) -> anyhow::Result<crate::live::LiveCluster> {
    let env = std::env::var("REDISCLI_AUTH").ok();
    let url = match crate::live::ClusterUrl::parse(url, env) {
        Ok(u) => u,
        // `host:port` alone: say the URL it most likely means.
        Err(e @ crate::live::LiveError::Url(_))
            if !url.contains("://")
                && !url.contains('@')
                && url
                    .rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
        {
            return Err(UserError::new(
                format!("--cluster {e}"),
                format!("did you mean --cluster redis://{url} ?"),
            )
            .into());
        }
        Err(e) => return Err(e.into()),
    };
    let mut live = crate::live::LiveCluster::new(url);
    // KEYPLAN_TIMEOUT: seconds to wait for a node (10 by default).
    if let Ok(v) = std::env::var("KEYPLAN_TIMEOUT") {
        let secs: f64 = v.trim().parse().ok().filter(|s: &f64| *s > 0.0 && s.is_finite() && *s <= 3600.0).ok_or_else(|| {
            UserError::new(
                format!("KEYPLAN_TIMEOUT={v}: not a number of seconds"),
                "give seconds to wait for a node's answer, e.g. KEYPLAN_TIMEOUT=30 (default 10)",
            )
        })?;
        live = live.timeout(std::time::Duration::from_secs_f64(secs));
    }
    Ok(live)
}

/// How a live cluster is sampled (`analyze --cluster`, `scan`).
#[derive(Debug, clap::Args)]
pub struct SampleArgs {
    /// With --cluster: keys to sample per master (a number, or `all`)
    #[arg(long, value_name = "N|all", default_value = "10000")]
    pub sample: String,

    /// With --cluster: only keys matching this SCAN pattern
    #[arg(long = "match", value_name = "PATTERN")]
    pub pattern: Option<String>,

    /// With --cluster: at most this many commands per second per node, in every second (raise
    /// it on an idle cluster; 0 is not allowed)
    #[arg(long, value_name = "OPS", default_value_t = DEFAULT_RATE, value_parser = parse_rate)]
    pub rate: f64,

    /// With --cluster: read each key's MEMORY USAGE as its bytes weight
    #[arg(long)]
    pub bytes: bool,

    /// With --cluster: read each key's OBJECT FREQ (its LFU access counter) as its ops weight;
    /// the servers must run an LFU maxmemory-policy
    #[arg(long)]
    pub heat: bool,

    /// With --cluster: the SCAN COUNT hint (keys a SCAN call looks at; lower is gentler)
    #[arg(long, default_value_t = 1000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub scan_count: u64,

    /// With --cluster: sample on masters, or on one replica of each master (READONLY), sparing
    /// the masters
    #[arg(long, value_enum, default_value = "masters", value_name = "NODES")]
    pub read_from: ReadFrom,

    /// With --cluster: measure the load (CLUSTER SLOT-STATS CPU and network counters) over
    /// this many seconds instead of taking the counters as they stand
    #[arg(long, value_name = "S", value_parser = window)]
    pub window: Option<std::time::Duration>,
}

/// The default `--rate`: gentle on a production master (under a tenth of one core).
pub const DEFAULT_RATE: f64 = 20000.0;

/// `--rate`: a finite number of commands per second between 1 and 10 million.
pub(crate) fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && (1.0..=10_000_000.0).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "not a number of commands per second between 1 and 10000000 (the default is {DEFAULT_RATE}; raise it, e.g. --rate 50000, on a cluster with headroom)"
        )),
    }
}

/// `--window`: seconds from a tenth of a second to an hour (a shorter window measures nothing:
/// the servers' counters move in whole calls).
fn window(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<f64>() {
        Ok(w) if (0.1..=3600.0).contains(&w) => Ok(std::time::Duration::from_secs_f64(w)),
        _ => Err("not a number of seconds from 0.1 to 3600 (e.g. --window 10)".into()),
    }
}

/// Which nodes a live sample reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadFrom {
    /// The masters
    Masters,
    /// One replica of each master
    Replicas,
}

impl SampleArgs {
    /// Fails when the slot map of `before` changed while keys were sampled.
    pub fn check_stable(
        live: &crate::live::LiveCluster,
        before: &Topology,
    ) -> Result<(), crate::live::LiveError> {
        before
            .slot_map()
            .map_or(Ok(()), |map| live.ensure_stable(map))
    }

    /// The scan settings these flags ask for, on `live` (its replicas with --read-from
    /// replicas).
    pub fn scan_options(
        &self,
        live: &crate::live::LiveCluster,
    ) -> anyhow::Result<crate::live::ScanOptions> {
        let replicas = match self.read_from {
            ReadFrom::Masters => None,
            ReadFrom::Replicas => Some(live.replica_map()?),
        };
        Ok(crate::live::ScanOptions {
            per_node: sample_budget(&self.sample)?,
            pattern: self.pattern.clone(),
            rate: Some(self.rate),
            bytes: self.bytes,
            heat: self.heat,
            replicas,
            count: self.scan_count,
            cancel: Default::default(),
        })
    }
}

impl SampleArgs {
    /// Runs `sample` (which calls its tick once a key) under a progress bar, after warning of
    /// the masters that have no replica to read from.
    pub fn with_progress<T, E: Into<anyhow::Error>>(
        &self,
        ctx: &mut Ctx<'_>,
        opts: &crate::live::ScanOptions,
        masters: &[crate::topology::Node],
        sample: impl FnOnce(&(dyn Fn() + Sync)) -> Result<T, E>,
    ) -> anyhow::Result<T> {
        warn_no_replica(ctx, opts, masters)?;
        let total = opts.per_node.map(|n| n * masters.len() as u64);
        let progress = ctx.progress("sampling", Unit::Keys, total);
        let done = sample(&|| progress.inc(1));
        progress.finish();
        done.map_err(Into::into)
    }
}

/// Says, for `--read-from replicas`, which masters of `nodes` have no healthy replica and are
/// sampled themselves.
pub fn warn_no_replica(
    ctx: &mut super::Ctx<'_>,
    opts: &crate::live::ScanOptions,
    nodes: &[crate::topology::Node],
) -> std::io::Result<()> {
    for a in opts.without_replica(nodes) {
        writeln!(
            ctx.stderr,
            "warning: {a} has no healthy replica: sampling the master itself"
        )?;
    }
    Ok(())
}

/// Parses `--sample`.
pub fn sample_budget(s: &str) -> anyhow::Result<Option<u64>> {
    if s == "all" {
        return Ok(None);
    }
    s.replace('_', "")
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .map(Some)
        .ok_or_else(|| {
            UserError::new(
                format!("--sample {s}: not a number of keys"),
                "give a positive number, or `all`",
            )
            .into()
        })
}

/// The load model's flags (`simulate`, `plan`): calibration, network, concurrency, hot nodes.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// A calibration file from `keyplan bench --calibrate` (without it the documented defaults
    /// are used and the figures are uncalibrated)
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,

    /// Round trip of one wave in milliseconds [default: 0.5; with --calibration, the measured one]
    #[arg(long, value_name = "MS", value_parser = rtt_ms)]
    pub rtt: Option<f64>,

    /// Time per key in microseconds [default: 0.19; with --calibration, the measured one]
    #[arg(long, value_name = "US", value_parser = per_key_us)]
    pub per_key_us: Option<f64>,

    /// Client→server bandwidth in MB/s [default: 1250]
    #[arg(long, value_name = "MB_S", value_parser = bandwidth_mb_s)]
    pub bandwidth: Option<f64>,

    /// Concurrent clients, each running the batch again as soon as it is answered: predicted
    /// QPS, P50 and P99 are for this many
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: u32,

    /// How requests spread over the nodes: SHARE/NODES percent (80/20 sends 80% of them to
    /// 20% of the nodes), or `uniform` [default: as the batches' keys place them]
    #[arg(long, value_name = "SHARE/NODES", value_parser = crate::simulate::perf::Hot::parse)]
    pub hot_nodes: Option<crate::simulate::perf::Hot>,
}

/// A finite number of 0 or more.
pub fn non_negative(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err("not a number of 0 or more".into()),
    }
}

/// A finite number above 0.
pub fn positive(text: &str) -> Result<f64, String> {
    match non_negative(text)? {
        0.0 => Err("not a number above 0".into()),
        v => Ok(v),
    }
}

/// A number within `lo..=hi` (each bound a plausible extreme of what it measures), said in
/// short form when it is not.
fn within(text: &str, lo: f64, hi: f64, unit: &str) -> Result<f64, String> {
    let v = non_negative(text)?;
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v:e} is outside {lo}..{hi} {unit}"))
    }
}

/// `--rtt`: 0 to a minute.
fn rtt_ms(text: &str) -> Result<f64, String> {
    within(text, 0.0, 60_000.0, "ms")
}

/// `--per-key-us`: 0 to a second a key.
fn per_key_us(text: &str) -> Result<f64, String> {
    within(text, 0.0, 1_000_000.0, "µs")
}

/// `--bandwidth`: 1 kB/s to 1 TB/s.
fn bandwidth_mb_s(text: &str) -> Result<f64, String> {
    within(text, 0.001, 1_000_000.0, "MB/s")
}

impl ModelArgs {
    /// The model these flags describe.
    pub fn model(&self) -> anyhow::Result<crate::simulate::NetworkModel> {
        let mut net = network_model(
            self.calibration.as_deref(),
            self.rtt,
            self.per_key_us,
            self.bandwidth,
        )?;
        net.concurrency = self.concurrency;
        net.hot = self.hot_nodes;
        Ok(net)
    }
}

/// The load model of a calibration file (else the documented defaults), with its round trip,
/// time per key or bandwidth replaced where given; one client.
pub fn network_model(
    calibration: Option<&Path>,
    rtt: Option<f64>,
    per_key_us: Option<f64>,
    bandwidth: Option<f64>,
) -> anyhow::Result<crate::simulate::NetworkModel> {
    let calibration = calibration.map(read_calibration).transpose()?;
    let measured = calibration
        .as_ref()
        .map(|c| [c.round_trip_us.p50 / 1000.0, c.round_trip_us.p99 / 1000.0]);
    let mut net = crate::simulate::NetworkModel::from_parts(
        calibration.map(|c| c.params),
        rtt,
        per_key_us,
        bandwidth,
    );
    net.measured_round_trip_ms = measured;
    Ok(net)
}

/// The calibration file at `path`, written by `keyplan bench --calibrate`.
pub fn read_calibration(path: &Path) -> anyhow::Result<crate::bench::calibrate::Calibration> {
    let text = read_text(path, "calibration file")?;
    crate::bench::calibrate::Calibration::parse(&text).map_err(|e| {
        let help = "give a file written by `keyplan bench --calibrate -o FILE`";
        UserError::new(format!("{}: {e}", path.display()), help).into()
    })
}
