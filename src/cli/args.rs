//! Argument groups shared by several subcommands, and their conversion to domain settings.

use super::Ctx;
use crate::error::UserError;
use crate::keys::parallel::{ChunkSink, par_read, par_read_file};
use crate::keys::{DEFAULT_MAX_LINE, InputFormat, ReadError, ReadOptions, ReadSummary};
use crate::report::slot::MalformedLine;
use crate::topology::{SlotMap, Topology, TopologyFormat, TopologyOptions};
use anyhow::Context as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// Line format of key dumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormatArg {
    /// Decide from the first non-blank line.
    Auto,
    /// One key per line, as `redis-cli --scan > file` writes (one trailing CR is stripped).
    Raw,
    /// redis-cli's quoted form: "..." with \\ \" \n \r \t \a \b \xHH escapes.
    Quoted,
    /// key<TAB>bytes[<TAB>ops]; the key raw (no TABs) or quoted.
    Tsv,
}

/// How key dumps are read.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// Line format of the key dumps
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub input_format: InputFormatArg,

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
            format: match self.input_format {
                InputFormatArg::Auto => InputFormat::Auto,
                InputFormatArg::Raw => InputFormat::Raw,
                InputFormatArg::Quoted => InputFormat::Quoted,
                InputFormatArg::Tsv => InputFormat::Tsv,
            },
            strict: self.strict,
            max_line_bytes: self.max_line_bytes.max(1),
        }
    }
}

/// Formats of topology files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TopologyFormatArg {
    /// Decide from the content
    Auto,
    /// The text of CLUSTER NODES, or a nodes.conf
    ClusterNodes,
    /// A twemproxy (nutcracker) YAML config
    Twemproxy,
    /// keyplan topology YAML (nodes: or ring:)
    Keyplan,
    /// CLUSTER SLOTS or CLUSTER SHARDS as redis-cli prints them (RESP2, RESP3 or --json)
    ClusterReply,
    /// A libketama server file (ip:port memory)
    Libketama,
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
    pub topology_format: TopologyFormatArg,

    /// The twemproxy pool to use (required when the config has several)
    #[arg(long, value_name = "NAME")]
    pub pool: Option<String>,

    /// Accept a slot map whose slots are not all served, and report the uncovered ones
    #[arg(long)]
    pub allow_partial: bool,

    /// `masters` came from a scheme's `topology: { masters: N }` (set by `with_scheme`).
    #[arg(skip)]
    pub from_scheme: bool,
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
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read scheme '{}'", path.display()))?;
    let scheme = crate::scheme::Scheme::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))?;
    Ok(LoadedScheme {
        path: path.to_path_buf(),
        text,
        scheme,
    })
}

/// The batches of a batch file (one a line); errors name the file and line.
pub fn read_batch_file(path: &Path) -> anyhow::Result<Vec<crate::simulate::Batch>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read batch file '{}'", path.display()))?;
    crate::simulate::parse_batches(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The batches of a `redis-cli MONITOR` capture, and what else it held.
pub fn read_monitor(
    path: &Path,
) -> anyhow::Result<(
    Vec<crate::simulate::Batch>,
    crate::simulate::monitor::MonitorStats,
)> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read MONITOR capture '{}'", path.display()))?;
    crate::simulate::monitor::parse_monitor(&String::from_utf8_lossy(&bytes)).map_err(|e| {
        UserError::new(
            format!("{}: {e}", path.display()),
            "capture with `redis-cli MONITOR > capture.txt` (one command a line)",
        )
        .into()
    })
}

/// `--scheme FILE`, else `./keyplan.yaml` when it exists.
pub fn scheme_path(flag: Option<&PathBuf>) -> Option<PathBuf> {
    match flag {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("keyplan.yaml")).filter(|p| p.is_file()),
    }
}

impl TopologyArgs {
    /// The topology asked for (or `default_masters` masters when none is), with a description
    /// of where it came from.
    pub fn resolve(
        &self,
        default_masters: Option<u16>,
    ) -> anyhow::Result<Option<(Topology, String)>> {
        if let Some(live) = self.live()? {
            let map = live.topology()?;
            let source = format!("live cluster {}", live_url_text(self));
            return Ok(Some((Topology::Cluster(map), source)));
        }
        if let Some(path) = &self.topology {
            let bytes = std::fs::read(path)
                .with_context(|| format!("cannot read topology file '{}'", path.display()))?;
            let text = String::from_utf8_lossy(&bytes);
            let format = match self.topology_format {
                TopologyFormatArg::Auto => TopologyFormat::Auto,
                TopologyFormatArg::ClusterNodes => TopologyFormat::ClusterNodes,
                TopologyFormatArg::Twemproxy => TopologyFormat::Twemproxy,
                TopologyFormatArg::Keyplan => TopologyFormat::Keyplan,
                TopologyFormatArg::ClusterReply => TopologyFormat::ClusterReply,
                TopologyFormatArg::Libketama => TopologyFormat::Libketama,
            };
            let opts = TopologyOptions {
                allow_partial: self.allow_partial,
                pool: self.pool.clone(),
            };
            let t = Topology::parse_as(&text, format, &opts)
                .with_context(|| format!("in topology file {}", path.display()))?;
            let source = match &t {
                Topology::Cluster(_) => format!("slot map from {}", path.display()),
                Topology::Ring(r) => format!("{} from {}", r.source, path.display()),
            };
            return Ok(Some((t, source)));
        }
        let (n, source) = match (self.masters, default_masters) {
            (Some(n), _) if self.from_scheme => (
                n,
                format!("the scheme's {n} masters, as redis-cli --cluster create assigns slots"),
            ),
            (Some(n), _) => (
                n,
                format!("{n} masters as redis-cli --cluster create assigns slots"),
            ),
            (None, Some(n)) => (
                n,
                format!(
                    "default: {n} masters as redis-cli --cluster create assigns slots (use --masters or --topology)"
                ),
            ),
            (None, None) => return Ok(None),
        };
        Ok(Some((
            Topology::Cluster(SlotMap::from_masters(n as usize)?),
            source,
        )))
    }
}

impl TopologyArgs {
    /// These flags with the scheme's `topology:` filled in where no flag names a topology. The
    /// one precedence rule of every command: `--cluster`, `--topology` or `--masters`, else
    /// the scheme's `file:` (read relative to the scheme, with its `pool:` unless `--pool` is
    /// given), else the scheme's `masters:`, else the command's default.
    pub fn with_scheme(&self, scheme: Option<&LoadedScheme>) -> TopologyArgs {
        let mut t = self.clone();
        let named = t.cluster.is_some() || t.topology.is_some() || t.masters.is_some();
        let Some((path, st)) = scheme.and_then(|s| Some((&s.path, s.scheme.topology.as_ref()?)))
        else {
            return t;
        };
        if named {
            return t;
        }
        if let Some(file) = &st.file {
            let dir = path.parent().unwrap_or(Path::new("."));
            t.topology = Some(dir.join(file));
            if t.pool.is_none() {
                t.pool = st.pool.clone();
            }
        } else if let Some(n) = st.masters {
            t.masters = Some(n);
            t.from_scheme = true;
        }
        t
    }

    /// The topology asked for (after [`TopologyArgs::with_scheme`]), else 3 masters.
    pub fn resolve_with_scheme(
        &self,
        scheme: Option<&LoadedScheme>,
    ) -> anyhow::Result<(Topology, String)> {
        Ok(self
            .with_scheme(scheme)
            .resolve(Some(3))?
            .expect("invariant: a default topology is given"))
    }

    /// The live cluster named by `--cluster`, if any (the password from the URL, else from
    /// REDISCLI_AUTH as redis-cli does).
    pub fn live(&self) -> anyhow::Result<Option<crate::live::LiveCluster>> {
        self.cluster.as_deref().map(live_cluster).transpose()
    }
}

/// The live cluster at `url` (the password from the URL, else from REDISCLI_AUTH as
/// redis-cli does).
pub fn live_cluster(url: &str) -> anyhow::Result<crate::live::LiveCluster> {
    let env = std::env::var("REDISCLI_AUTH").ok();
    let url = crate::live::ClusterUrl::parse(url, env)?;
    Ok(crate::live::LiveCluster::new(url))
}

/// The `--cluster` URL with any password masked.
fn live_url_text(t: &TopologyArgs) -> String {
    t.cluster
        .as_deref()
        .and_then(|u| crate::live::ClusterUrl::parse(u, None).ok())
        .map(|u| u.to_string())
        .unwrap_or_default()
}

/// Where a report goes: the `-o` file (written under a temporary name, in place only once
/// [`Sink::finish`] is called), or standard output.
pub enum Sink<'a> {
    /// The `-o` file.
    File(AtomicFile),
    /// Standard output.
    Stdout(&'a mut dyn std::io::Write),
}

impl Sink<'_> {
    /// Puts the file in place (or flushes standard output). A sink dropped without this
    /// leaves no file behind.
    pub fn finish(self) -> anyhow::Result<()> {
        match self {
            Sink::File(f) => f.commit(),
            Sink::Stdout(s) => Ok(s.flush()?),
        }
    }
}

impl std::io::Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(f) => f.write(buf),
            Sink::Stdout(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Stdout(s) => s.flush(),
        }
    }
}

/// The sink for `-o PATH` (or standard output without it).
pub fn output_sink<'a>(
    path: Option<&PathBuf>,
    stdout: &'a mut dyn std::io::Write,
) -> anyhow::Result<Sink<'a>> {
    Ok(match path {
        Some(p) => Sink::File(AtomicFile::create(p)?),
        None => Sink::Stdout(stdout),
    })
}

/// A file written under a temporary name beside its destination and renamed onto it by
/// [`AtomicFile::commit`]; dropped without a commit, it is removed. Readers of the destination
/// see the old file or the whole new one, never a part.
pub struct AtomicFile {
    dest: PathBuf,
    out: Target,
}

enum Target {
    /// A temporary file beside the destination, renamed onto it at the commit.
    Temp(std::io::BufWriter<tempfile::NamedTempFile>),
    /// A link or something that is not a regular file (`/dev/stdout`, a FIFO): written in
    /// place.
    Direct(std::io::BufWriter<File>),
}

impl AtomicFile {
    /// Starts writing `dest` (its directory must exist and be writable).
    pub fn create(dest: &Path) -> anyhow::Result<AtomicFile> {
        // A link (`/dev/stdout`) or something that is not a regular file (a FIFO) is written
        // in place: renaming onto it would replace the link or the device.
        let in_place = std::fs::symlink_metadata(dest)
            .is_ok_and(|m| m.file_type().is_symlink() || !(m.is_file() || m.is_dir()));
        if in_place {
            let f =
                File::create(dest).with_context(|| format!("cannot write '{}'", dest.display()))?;
            return Ok(AtomicFile {
                dest: dest.to_path_buf(),
                out: Target::Direct(std::io::BufWriter::new(f)),
            });
        }
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".keyplan-").suffix(".tmp");
        // The finished file gets the usual mode (0666 less the umask), not a temp file's 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder
            .tempfile_in(dir)
            .with_context(|| {
                format!(
                    "cannot write '{}': cannot create a file in '{}' (check that the directory exists and is writable)",
                    dest.display(),
                    dir.display()
                )
            })?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            out: Target::Temp(std::io::BufWriter::new(tmp)),
        })
    }

    /// Flushes the file and renames it onto the destination.
    pub fn commit(self) -> anyhow::Result<()> {
        let dest = self.dest;
        match self.out {
            Target::Direct(mut f) => {
                std::io::Write::flush(&mut f)
                    .with_context(|| format!("writing '{}'", dest.display()))?;
            }
            Target::Temp(f) => {
                let tmp = f
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("writing '{}'", dest.display()))?;
                tmp.persist(&dest)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot write '{}'", dest.display()))?;
            }
        }
        Ok(())
    }
}

impl std::io::Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.out {
            Target::Temp(f) => f.write(buf),
            Target::Direct(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Target::Temp(f) => f.flush(),
            Target::Direct(f) => f.flush(),
        }
    }
}

/// The name a dump is reported under: its path, or `<stdin>` for `-`.
pub fn input_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// An opened key dump.
pub enum Input {
    /// Standard input.
    Stdin(io::Stdin),
    /// A file (regular files are read through memory maps by the parallel reader).
    File(File),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Stdin(s) => s.read(buf),
            Input::File(f) => f.read(buf),
        }
    }
}

impl Input {
    /// Reads the whole dump on `sinks.len()` threads.
    pub fn par_read<S: ChunkSink>(
        self,
        opts: &ReadOptions,
        sinks: &mut [S],
        progress: Option<&AtomicU64>,
    ) -> Result<ReadSummary, ReadError> {
        match self {
            Input::Stdin(s) => par_read(s, opts, sinks, progress),
            Input::File(f) => par_read_file(&f, opts, sinks, progress),
        }
    }

    /// The size of the input in bytes, when known (regular files).
    pub fn file_size(&self) -> Option<u64> {
        match self {
            Input::File(f) => f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()),
            Input::Stdin(_) => None,
        }
    }
}

/// Opens a key dump; `-` is standard input.
pub fn open_input(path: &PathBuf) -> anyhow::Result<Input> {
    if path.as_os_str() == "-" {
        // `keyplan … --keys - < dump` gets the fast file path too.
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            if let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() {
                let f = File::from(fd);
                if f.metadata().is_ok_and(|m| m.is_file()) {
                    return Ok(Input::File(f));
                }
                crate::keys::pipe::widen(&f);
            }
        }
        return Ok(Input::Stdin(io::stdin()));
    }
    if path.is_dir() {
        anyhow::bail!(
            "cannot read key dump '{}': it is a directory; pass a file, or '-' for stdin",
            path.display()
        );
    }
    let f = File::open(path).with_context(|| {
        format!(
            "cannot open key dump '{}' (check the path and its permissions)",
            path.display()
        )
    })?;
    crate::keys::pipe::widen(&f); // `<(redis-cli --scan)` is a pipe too
    Ok(Input::File(f))
}

/// The malformed lines of a summary, for JSON reports.
pub fn malformed_of(file: &str, s: &ReadSummary) -> Vec<MalformedLine> {
    s.malformed_lines
        .iter()
        .map(|e| MalformedLine {
            file: file.to_string(),
            line: e.line,
            column: e.column,
            message: e.message.clone(),
        })
        .collect()
}

/// Reports skipped lines on stderr once, at the end.
pub fn warn_malformed(ctx: &mut Ctx<'_>, file: &str, s: &ReadSummary) -> std::io::Result<()> {
    if s.malformed == 0 {
        return Ok(());
    }
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
    if s.malformed > s.malformed_lines.len() as u64 {
        writeln!(
            ctx.stderr,
            "  … and {} more",
            s.malformed - s.malformed_lines.len() as u64
        )?;
    }
    Ok(())
}

/// Adds the dump's name to a read error.
pub fn read_context(file: &str, e: ReadError) -> anyhow::Error {
    match e {
        ReadError::Io(io) => anyhow::Error::new(io).context(format!("reading key dump {file}")),
        other => anyhow::Error::new(other).context(format!("in key dump {file}")),
    }
}

/// The total size of the inputs in bytes, when every one is a regular file.
pub fn total_size(inputs: &[(String, Input)]) -> Option<u64> {
    inputs.iter().map(|(_, i)| i.file_size()).sum()
}

/// A reader that adds the bytes it reads to a progress counter.
pub struct Counted<'a, R> {
    inner: R,
    counter: &'a AtomicU64,
}

impl<'a, R> Counted<'a, R> {
    /// `inner`, counted into `counter`.
    pub fn new(inner: R, counter: &'a AtomicU64) -> Self {
        Counted { inner, counter }
    }
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens every dump up front; `-` may appear once.
pub fn open_all(files: &[PathBuf]) -> anyhow::Result<Vec<(String, Input)>> {
    if files.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(UserError::new(
            "--keys - is given more than once",
            "standard input can be read only once; name it once",
        )
        .into());
    }
    files
        .iter()
        .map(|p| Ok((input_name(p), open_input(p)?)))
        .collect()
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

    /// With --cluster: at most this many commands per second per node
    #[arg(long, value_name = "OPS")]
    pub rate: Option<f64>,

    /// With --cluster: read each key's MEMORY USAGE as its bytes weight
    #[arg(long)]
    pub bytes: bool,

    /// With --cluster: the SCAN COUNT hint (keys a SCAN call looks at; lower is gentler)
    #[arg(long, default_value_t = 1000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub scan_count: u64,

    /// With --cluster: sample on masters, or on one replica of each master (READONLY), sparing
    /// the masters
    #[arg(long, value_enum, default_value = "masters", value_name = "NODES")]
    pub read_from: ReadFrom,
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
            rate: self.rate,
            bytes: self.bytes,
            replicas,
            count: self.scan_count,
            cancel: Default::default(),
        })
    }
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
