//! `keyplan simulate`: what batches cost under each execution strategy.

use super::Ctx;
use super::args::{BatchArgs, OutputArgs, TopologyArgs, read_topology};
use super::loaded::Loaded;
use super::values::{STRATEGIES, one_of};
use crate::error::{ExitStatus, UserError};
use crate::report::simulate::{SimulationHeader, simulation_stream};
use crate::simulate::session::{Mode, Simulation};
use crate::simulate::{Client, Strategy, batch};
use crate::topology::{Topology, TopologyFormat, TopologyOptions};
use std::path::PathBuf;

/// `--strategy`: a list of strategies (`simulate`, `bench`).
#[derive(Debug, Clone, clap::Args)]
pub struct StrategyList {
    /// Execution strategies, comma-separated or repeated (e.g. pipeline,hashtag)
    #[arg(
        long = "strategy",
        value_parser = one_of(STRATEGIES),
        value_delimiter = ',',
        default_value = "all",
        value_name = "STRATEGY,…"
    )]
    pub list: Vec<&'static [Strategy]>,
}

impl StrategyList {
    /// The strategies the list stands for, in the order given, each once.
    pub fn strategies(&self) -> Vec<Strategy> {
        let mut out: Vec<Strategy> = Vec::new();
        for &s in self.list.iter().copied().flatten() {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

/// Simulate batches on a topology: round trips, commands per node, latency per strategy.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan simulate --batches batches.txt --masters 3\n  keyplan simulate --scheme keyplan.yaml --sizes 1,10,100,1000 --strategy all\n  keyplan simulate --batches batches.txt --topology nodes.txt --rtt 1.5 --format json"
)]
pub struct SimulateArgs {
    /// Where batches come from.
    #[command(flatten)]
    pub batches: BatchArgs,

    /// Where keys live [default: the scheme's topology, else 3 masters].
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// Which strategies.
    #[command(flatten)]
    pub strategy: StrategyList,

    /// The load model.
    #[command(flatten)]
    pub model: super::args::ModelArgs,

    /// With --scheme: sweep the batch size over these values (e.g. 1,10,100,1000); the files'
    /// batches and the client profiles are simulated in runs without it
    #[arg(long, value_delimiter = ',', value_name = "N,N,…", requires = "scheme",
          conflicts_with_all = ["batches", "monitor", "client"],
          value_parser = clap::value_parser!(u64).range(1..=crate::scheme::MAX_BATCH_KEYS))]
    pub sizes: Vec<u64>,

    /// Instead of strategies: what these client libraries or proxies do with each batch
    /// (jedis3, jedis, jedis8, lettuce, redis-py, redis-py-nonatomic, go-redis, ioredis,
    /// node-redis, redis-rs, redis-rs-async, stackexchange, redisson, twemproxy, envoy, or all;
    /// NAME@VERSION picks the profile of that version, e.g. jedis@3.10)
    #[arg(long, value_delimiter = ',', value_name = "CLIENT,…",
          value_parser = super::values::ClientName, hide_possible_values = true)]
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

    /// Where the report goes.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Resolves `--client` names (`NAME`, `NAME@VERSION`, `all`).
pub(crate) fn clients(names: &[String]) -> Result<Vec<Client>, UserError> {
    Client::resolve_list(names).map_err(|e| {
        let names = Client::ALL.map(|c| c.name()).join(", ");
        let help = format!("use one of: {names}, all (optionally NAME@VERSION)");
        UserError::new(format!("--client {e}"), help)
    })
}

/// Runs `keyplan simulate`: each batch is simulated and written before the next is read.
pub fn run(args: SimulateArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    args.batches.require("no batches to simulate")?;
    let opened = Loaded::open(
        &args.topology,
        args.batches.files.scheme.as_deref(),
        Some(3),
        args.out.target(),
    )?
    .with_model(&args.model)?;
    let (mut topology, topo_source) = opened.topology_or_default()?;
    let topo_source = topo_source.to_string();
    let net = *opened.model();
    let loaded = opened.scheme;
    let asked = args.strategy.strategies();
    // Behind a Redis Enterprise proxy or twemproxy the client has one endpoint, not one per
    // node; a ring without `hash_tag: "{}"` hashes whole keys.
    let strategies = crate::simulate::offered(&topology, &asked);
    if strategies.is_empty() {
        return Err(match &topology {
            crate::topology::Topology::Ring(_) => UserError::new(
                "--strategy: a twemproxy ring is reached through one proxy endpoint (parallel and slot-parallel open a connection to each node), and hashtag needs the pool's hash_tag to be \"{}\"",
                "use --strategy pipeline (twemproxy sends each server its part of MGET, MSET and DEL at once) or serial",
            ),
            crate::topology::Topology::Cluster(_) => UserError::new(
                "--strategy: parallel and slot-parallel open a connection to each node, and a Redis Enterprise database is reached through one proxy endpoint",
                "use --strategy pipeline (the proxy sends each shard its part at once), serial or hashtag",
            ),
        }
        .into());
    }
    let mode = match args.client.is_empty() {
        true => Mode::Strategies(strategies.clone()),
        false => client_mode(&args, &mut topology)?,
    };
    let header = SimulationHeader {
        topology: topo_source,
        nodes: topology.nodes().len(),
        network: net,
        strategies,
        sizes: args.sizes.clone(),
        clients: !args.client.is_empty(),
        proxy: topology
            .slot_map()
            .is_some_and(|m| m.enterprise().is_some()),
    };
    let scheme = loaded.as_ref().map(|l| &l.scheme);
    let mut sim = Simulation::new(&topology, &net, mode, scheme);
    let format = opened.target.format;
    let mut observed = args.batches.observed()?;
    ctx.write_to(opened.target.path.as_ref(), |out, layout| {
        let mut report = simulation_stream(header, format, out, layout)?;
        for b in observed.by_ref() {
            report.item(&sim.batch(None, &b?))?;
        }
        let sizes: Vec<Option<u64>> = match args.sizes.is_empty() {
            true => vec![None],
            false => args.sizes.iter().map(|&n| Some(n)).collect(),
        };
        for (size, s) in sizes.into_iter().flat_map(|n| scheme.map(|s| (n, s))) {
            for b in batch::scheme_batches(s, size) {
                report.item(&sim.batch(size, &b))?;
            }
        }
        Ok(report.finish(&())?)
    })?;
    observed.say_capture(ctx)?;
    warn_hashing_limits(&topology, ctx)?;
    Ok(ExitStatus::Clean)
}

/// On stderr: each rule of a Redis Enterprise hashing policy that PCRE2 gave up on for some
/// keys (they were reported as unplaced), with how many.
pub(crate) fn warn_hashing_limits(topology: &Topology, ctx: &mut Ctx<'_>) -> std::io::Result<()> {
    let Some(e) = topology.slot_map().and_then(|m| m.enterprise()) else {
        return Ok(());
    };
    for w in e.hashing.limit_warnings() {
        writeln!(ctx.stderr, "warning: {w}")?;
    }
    Ok(())
}

/// The `--client` profiles, on `topology` (with `--migrating` slots marked) as the client
/// believes it (`--client-topology`).
fn client_mode(args: &SimulateArgs, topology: &mut Topology) -> anyhow::Result<Mode> {
    let mut profiles = clients(&args.client)?;
    if args.client.iter().any(|n| n == "all") {
        // Only the profiles that apply to this kind of topology.
        profiles.retain(|c| c.applies_to(topology));
    }
    for spec in &args.migrating {
        let bad = |why: &dyn std::fmt::Display| {
            let help =
                "write SLOT:TO, e.g. --migrating 5000:127.0.0.1:7001 (TO as the topology names it)";
            UserError::new(format!("--migrating {spec}: {why}"), help)
        };
        match topology {
            Topology::Cluster(map) => map.add_migration_spec(spec).map_err(|e| bad(&e))?,
            Topology::Ring(_) => {
                return Err(bad(&"slots migrate only in a Redis Cluster topology").into());
            }
        }
    }
    let believed = match &args.client_topology {
        Some(p) => Some(read_topology(
            p,
            TopologyFormat::Auto,
            &TopologyOptions {
                allow_partial: true,
                pool: None,
            },
        )?),
        None => None,
    };
    Ok(Mode::Clients { profiles, believed })
}
