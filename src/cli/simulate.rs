//! `keyplan simulate`: what batches cost under each execution strategy.

use super::Ctx;
use super::args::TopologyArgs;
use super::inputs::MonitorFile;
use crate::error::{ExitStatus, UserError};
use crate::report::render::Format;
use crate::report::simulate::{SimulationHeader, SimulationWriter};
use crate::simulate::session::{Mode, Simulation};
use crate::simulate::{Client, Strategy, batch};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Strategies on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StrategyArg {
    /// One command per key
    Serial,
    /// Per-node pipelines, one node after another
    Pipeline,
    /// Per-node pipelines, concurrently
    Parallel,
    /// Per-slot pipelines, concurrently
    SlotParallel,
    /// The batch rewritten onto one hash tag
    Hashtag,
    /// Every strategy
    All,
}

/// `--strategy`: a list of strategies (`simulate`, `bench`).
#[derive(Debug, Clone, clap::Args)]
pub struct StrategyList {
    /// Execution strategies, comma-separated or repeated (e.g. pipeline,hashtag)
    #[arg(
        long = "strategy",
        value_enum,
        value_delimiter = ',',
        default_value = "all",
        value_name = "STRATEGY,…"
    )]
    pub list: Vec<StrategyArg>,
}

impl StrategyList {
    /// The strategies the list stands for, in the order given, each once.
    pub fn strategies(&self) -> Vec<Strategy> {
        let mut out: Vec<Strategy> = Vec::new();
        for s in self.list.iter().flat_map(|a| a.strategies()) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

impl StrategyArg {
    /// The strategies this choice stands for.
    pub fn strategies(self) -> Vec<Strategy> {
        match self {
            StrategyArg::All => Strategy::ALL.to_vec(),
            StrategyArg::Serial => vec![Strategy::Serial],
            StrategyArg::Pipeline => vec![Strategy::Pipeline],
            StrategyArg::Parallel => vec![Strategy::Parallel],
            StrategyArg::SlotParallel => vec![Strategy::SlotParallel],
            StrategyArg::Hashtag => vec![Strategy::Hashtag],
        }
    }
}

/// Output format of `simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimFormat {
    /// A table per batch
    Table,
    /// {"schema_version": 2, "results": [...]}
    Json,
    /// A self-contained HTML report with charts (use -o FILE)
    Html,
}

/// Simulate batches on a topology: round trips, commands per node, latency per strategy.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan simulate --batches batches.txt --masters 3\n  keyplan simulate --scheme keyplan.yaml --sizes 1,10,100,1000 --strategy all\n  keyplan simulate --batches batches.txt --topology nodes.txt --rtt 1.5 --format json"
)]
pub struct SimulateArgs {
    /// Batches declared in a key scheme (keys generated from its variables)
    #[arg(long, value_name = "FILE")]
    pub scheme: Option<PathBuf>,

    /// A `redis-cli MONITOR` capture: its multi-key commands, MULTI…EXEC blocks and scripts,
    /// per client connection
    #[arg(long, value_name = "FILE")]
    pub monitor: Option<PathBuf>,

    /// A batch file: one batch a line (`MGET a b c`, `PIPELINE GET a; ZADD b 1 x`, `MULTI SET a 1; INCR b`)
    #[arg(long, value_name = "FILE")]
    pub batches: Option<PathBuf>,

    /// Where keys live [default: the scheme's topology, else 3 masters].
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// Which strategies.
    #[command(flatten)]
    pub strategy: StrategyList,

    /// The load model.
    #[command(flatten)]
    pub model: super::args::ModelArgs,

    /// With --scheme: sweep the batch size over these values (e.g. 1,10,100,1000)
    #[arg(long, value_delimiter = ',', value_name = "N,N,…")]
    pub sizes: Vec<u64>,

    /// Instead of strategies: what these client libraries or proxies do with each batch
    /// (jedis3, jedis, jedis8, lettuce, redis-py, redis-py-nonatomic, go-redis, ioredis,
    /// node-redis, redis-rs, redis-rs-async, stackexchange, redisson, twemproxy, envoy, or all;
    /// NAME@VERSION picks the profile of that version, e.g. jedis@3.10)
    #[arg(long, value_delimiter = ',', value_name = "CLIENT,…")]
    pub client: Vec<String>,

    /// With --client: the slot map the client holds, when it is stale (CLUSTER NODES text or
    /// any --topology format); commands it sends to the wrong node meet MOVED. Slots in
    /// migration in --topology (CLUSTER NODES markers) meet ASK either way
    #[arg(
        long,
        visible_alias = "stale-after",
        value_name = "FILE",
        requires = "client"
    )]
    pub client_topology: Option<PathBuf>,

    /// With --client: put SLOT in migration to node TO (name, address or id, as --topology
    /// names them); its keys meet ASK. Repeatable
    #[arg(long, value_name = "SLOT:TO", requires = "client")]
    pub migrating: Vec<String>,

    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: SimFormat,

    /// Write to this file instead of standard output
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Applies `--migrating SLOT:TO`.
fn add_migration(topology: &mut crate::topology::Topology, spec: &str) -> Result<(), UserError> {
    let bad = |why: String| {
        UserError::new(
            format!("--migrating {spec}: {why}"),
            "write SLOT:TO, e.g. --migrating 5000:127.0.0.1:7001 (TO as the topology names it)",
        )
    };
    let crate::topology::Topology::Cluster(map) = topology else {
        return Err(bad("slots migrate only in a Redis Cluster topology".into()));
    };
    let (slot, to) = spec
        .split_once(':')
        .ok_or_else(|| bad("no ':' between slot and node".into()))?;
    let slot: u16 = slot
        .parse()
        .ok()
        .filter(|s| *s < 16384)
        .ok_or_else(|| bad(format!("'{slot}' is not a slot (0-16383)")))?;
    let index = crate::topology::find_node(map.nodes(), to).ok_or_else(|| {
        bad(format!(
            "no node '{to}' (nodes: {})",
            map.nodes()
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    map.add_migration(slot, index).map_err(bad)
}

/// Resolves `--client` names (`NAME`, `NAME@VERSION`, `all`).
pub(crate) fn clients(names: &[String]) -> Result<Vec<Client>, UserError> {
    let mut out = Vec::new();
    for n in names {
        if n == "all" {
            return Ok(Client::ALL.to_vec());
        }
        for c in Client::resolve(n).map_err(|e| {
            UserError::new(
                format!("--client {e}"),
                format!(
                    "use one of: {}, all (optionally NAME@VERSION)",
                    Client::ALL.map(|c| c.name()).join(", ")
                ),
            )
        })? {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    Ok(out)
}

/// Runs `keyplan simulate`: each batch is simulated and written before the next is read.
pub fn run(args: SimulateArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    check(&args)?;
    let loaded = args
        .scheme
        .as_deref()
        .map(super::args::load_scheme)
        .transpose()?;
    let (mut topology, topo_source) = args.topology.resolve_with_scheme(loaded.as_ref())?;
    let net = args.model.model()?;
    let strategies = args.strategy.strategies();
    let mode = if args.client.is_empty() {
        Mode::Strategies(strategies.clone())
    } else {
        client_mode(&args, &mut topology)?
    };
    let header = SimulationHeader {
        topology: topo_source,
        nodes: topology.nodes().len(),
        network: net,
        strategies,
        sizes: args.sizes.clone(),
        clients: !args.client.is_empty(),
    };
    let scheme = loaded.as_ref().map(|l| &l.scheme);
    let mut sim = Simulation::new(&topology, &net, mode, scheme);
    let layout = ctx.layout_for(args.output.as_ref());
    let mut sink = super::args::output_sink(args.output.as_ref(), &mut *ctx.stdout)?;
    let mut out = BufWriter::new(&mut sink);
    let format = match args.format {
        SimFormat::Html => Format::Html,
        SimFormat::Json => Format::Json,
        SimFormat::Table => Format::Table,
    };
    let mut report = SimulationWriter::new(header, format, &mut out, &layout)?;
    if let Some(p) = &args.batches {
        for b in super::args::read_batch_file(p)? {
            report.batch(&sim.batch(None, &b))?;
        }
    }
    let mut capture = args.monitor.as_deref().map(MonitorFile::open).transpose()?;
    let mut captured = 0u64;
    if let Some(c) = capture.as_mut() {
        for b in c.by_ref() {
            report.batch(&sim.batch(None, &b?))?;
            captured += 1;
        }
    }
    if let Some(s) = scheme {
        let sizes: Vec<Option<u64>> = match args.sizes.is_empty() {
            true => vec![None],
            false => args.sizes.iter().map(|&n| Some(n)).collect(),
        };
        for size in sizes {
            for b in batch::from_scheme(s, size) {
                report.batch(&sim.batch(size, &b))?;
            }
        }
    }
    report.finish()?;
    out.flush()?;
    drop(out);
    sink.finish()?;
    if let (Some(p), Some(stats)) = (&args.monitor, capture.as_ref().and_then(|c| c.stats())) {
        say_capture(ctx, p, stats, captured)?;
    }
    Ok(ExitStatus::Clean)
}

/// What a capture held, on stderr.
fn say_capture(
    ctx: &mut Ctx<'_>,
    path: &std::path::Path,
    stats: &crate::simulate::monitor::MonitorStats,
    batches: u64,
) -> std::io::Result<()> {
    writeln!(
        ctx.stderr,
        "{}: {} commands, {batches} batches; {} single-key commands are not batches{}",
        path.display(),
        stats.commands,
        stats.single,
        if stats.unterminated > 0 {
            format!("; {} MULTI without EXEC dropped", stats.unterminated)
        } else {
            String::new()
        }
    )
}

/// Refuses flag combinations and values simulate cannot use.
fn check(args: &SimulateArgs) -> anyhow::Result<()> {
    if args.scheme.is_none() && args.batches.is_none() && args.monitor.is_none() {
        return Err(UserError::new(
            "no batches to simulate",
            "pass --scheme keyplan.yaml, --batches FILE or --monitor CAPTURE",
        )
        .into());
    }
    if let Some(&n) = args
        .sizes
        .iter()
        .find(|&&n| n == 0 || n > crate::scheme::MAX_BATCH_KEYS)
    {
        return Err(UserError::new(
            format!(
                "--sizes {n}: a batch has between 1 and {} keys",
                crate::scheme::MAX_BATCH_KEYS
            ),
            "give batch sizes such as --sizes 1,10,100,1000",
        )
        .into());
    }
    if !args.sizes.is_empty() && args.scheme.is_none() {
        return Err(UserError::new(
            "--sizes needs --scheme",
            "sizes regenerate the scheme's batches with N keys each",
        )
        .into());
    }
    if !args.sizes.is_empty() && (args.batches.is_some() || args.monitor.is_some()) {
        return Err(UserError::new(
            "--sizes cannot be combined with --batches or --monitor",
            "sizes regenerate the scheme's batches; simulate the files' batches in a run without --sizes",
        )
        .into());
    }
    if !args.sizes.is_empty() && !args.client.is_empty() {
        return Err(UserError::new(
            "--sizes cannot be combined with --client",
            "sweep sizes with strategies, or drop --sizes to see client profiles",
        )
        .into());
    }
    Ok(())
}

/// The `--client` profiles, on `topology` (with `--migrating` slots marked) as the client
/// believes it (`--client-topology`).
fn client_mode(
    args: &SimulateArgs,
    topology: &mut crate::topology::Topology,
) -> anyhow::Result<Mode> {
    let mut profiles = clients(&args.client)?;
    if args.client.iter().any(|n| n == "all") {
        // Only the profiles that apply to this kind of topology.
        let ring = matches!(topology, crate::topology::Topology::Ring(_));
        profiles.retain(|c| match c {
            Client::Twemproxy => ring,
            Client::Envoy => true,
            _ => !ring,
        });
    }
    for spec in &args.migrating {
        add_migration(topology, spec)?;
    }
    let believed = match &args.client_topology {
        Some(p) => {
            let text = super::inputs::read_text(p, "client topology")?;
            Some(
                crate::topology::Topology::parse_as(
                    &text,
                    crate::topology::TopologyFormat::Auto,
                    &crate::topology::TopologyOptions {
                        allow_partial: true,
                        pool: None,
                    },
                )
                .map_err(|e| {
                    UserError::new(
                        format!("{}: {e}", p.display()),
                        "give the client's slot map as CLUSTER NODES text or another --topology format",
                    )
                })?,
            )
        }
        None => None,
    };
    Ok(Mode::Clients { profiles, believed })
}
