//! `keyplan migrate`: a move from one sharding scheme to another (twemproxy or a client ring
//! to Redis Cluster, a cluster to a new cluster, a ring of N servers to N+1): the keys and
//! bytes that change owner, each node before and after, the batches that start failing.

use super::Ctx;
use super::args::{BatchArgs, InputArgs, TopologyArgs};
use super::loaded::{Loaded, Target, TopologySource};
use super::values::{TABLE_FORMATS, one_of};
use crate::error::{ExitStatus, UserError};
use crate::migrate::scheme_change::{
    BatchChanges, Judge, PlaceSink, Placed, Side, batch_change, preview,
};
use crate::report::render::Format;
use crate::simulate::Client;
use crate::topology::{Topology, TopologyFormat};
use std::path::PathBuf;

/// Changed batches kept for the report (all are counted).
const ROWS_KEPT: usize = 1000;

/// Preview a move to another sharding scheme: which keys and bytes change owner (per pair of
/// nodes), each node's load before and after, and which batches start failing or fan out wider.
///
/// Both sides are any topology keyplan reads, a live cluster (read-only), or N masters laid
/// out as redis-cli --cluster create assigns slots.
/// Nodes with the same address on both sides are the same server: their keys stay.
/// Batches meet Redis Cluster's servers as written on a cluster and twemproxy on a ring,
/// unless --from-client/--to-client name a client profile.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan migrate --from nutcracker.yml --to-masters 3 --keys sample.keys --batches batches.txt\n  keyplan migrate --from nodes-3.txt --to nodes-6.txt --keys sample.tsv\n  keyplan migrate --from ring.yml --to ring-plus-one.yml --keys sample.keys --monitor capture.txt\n  keyplan migrate --from redis://10.0.0.1:7000 --to-masters 6 --keys sample.keys --format json"
)]
pub struct MigrateArgs {
    /// Where keys live now: a topology file (CLUSTER NODES text or a nodes.conf, CLUSTER SLOTS
    /// or CLUSTER SHARDS as redis-cli prints them, a twemproxy (nutcracker) config, a keyplan
    /// topology YAML, or a libketama server list; the format is detected, --from-format forces
    /// it) or a live cluster URL (redis://[user:password@]host:port, read-only) [default: the
    /// scheme's topology]
    #[arg(long, value_name = "FILE|URL")]
    pub from: Option<String>,

    /// Where keys live now: N masters as redis-cli --cluster create assigns slots
    #[arg(long, value_name = "N", conflicts_with = "from",
          value_parser = clap::value_parser!(u16).range(1..=16384))]
    pub from_masters: Option<u16>,

    /// Format of the --from file
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub from_format: TopologyFormat,

    /// The twemproxy pool of --from (required when the config has several)
    #[arg(long, value_name = "NAME")]
    pub from_pool: Option<String>,

    /// Where keys will live: a topology file (format detected, --to-format to force it) or a
    /// live cluster URL
    #[arg(long, value_name = "FILE|URL", required_unless_present = "to_masters")]
    pub to: Option<String>,

    /// Where keys will live: N masters as redis-cli --cluster create assigns slots (a new
    /// cluster: no node is one of --from's)
    #[arg(long, value_name = "N", conflicts_with = "to",
          value_parser = clap::value_parser!(u16).range(1..=16384))]
    pub to_masters: Option<u16>,

    /// Format of the --to file
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub to_format: TopologyFormat,

    /// The twemproxy pool of --to
    #[arg(long, value_name = "NAME")]
    pub to_pool: Option<String>,

    /// Accept slot maps whose slots are not all served (their keys count as unplaced)
    #[arg(long)]
    pub allow_partial: bool,

    /// Key samples placed under both ('-' for stdin); a tsv's bytes and ops are counted too
    #[arg(long = "keys", value_name = "FILE", num_args = 1..)]
    pub keys: Vec<PathBuf>,

    /// How key samples are read.
    #[command(flatten)]
    pub input: InputArgs,

    /// Batches judged before and after.
    #[command(flatten)]
    pub batches: BatchArgs,

    /// Who runs batches on --from: a client profile (see simulate --client) or 'server' (a
    /// cluster's servers, each command as written) [default: server on a cluster, twemproxy
    /// on a ring]
    #[arg(long, value_name = "NAME")]
    pub from_client: Option<String>,

    /// Who runs batches on --to (as --from-client)
    #[arg(long, value_name = "NAME")]
    pub to_client: Option<String>,

    /// Output format
    #[arg(long, value_parser = one_of(TABLE_FORMATS), default_value = "table")]
    pub format: Format,

    /// Write the report to this file instead of standard output (whole, or not at all)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// One side's topology flags, as the other commands take them.
/// A config of several pools on one side of `migrate`: the hint names that side's flag (the
/// other commands' `--pool` is not one of `migrate`'s).
fn pool_hint(e: anyhow::Error, flag: &str) -> anyhow::Error {
    let several = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<crate::topology::TopologyError>(),
            Some(crate::topology::TopologyError::PoolNotChosen(_))
        )
    });
    if several {
        UserError::new(format!("{e:#}"), format!("choose one with {flag} NAME")).into()
    } else {
        e
    }
}

fn side_args(
    spec: Option<&str>,
    masters: Option<u16>,
    format: TopologyFormat,
    pool: Option<&String>,
    allow_partial: bool,
) -> TopologyArgs {
    let (cluster, topology) = match spec {
        Some(s) if s.starts_with("redis://") || s.starts_with("rediss://") => {
            (Some(s.to_string()), None)
        }
        Some(s) => (None, Some(PathBuf::from(s))),
        None => (None, None),
    };
    TopologyArgs {
        masters,
        cluster,
        topology,
        topology_format: format,
        pool: pool.cloned(),
        allow_partial,
    }
}

/// `--from-client`/`--to-client` on `topology`.
fn judge(flag: &str, name: Option<&str>, topology: &Topology) -> Result<Judge, UserError> {
    let Some(name) = name else {
        return Ok(Judge::default_for(topology));
    };
    if name == "server" {
        return match topology {
            Topology::Cluster(_) => Ok(Judge::Server),
            Topology::Ring(_) => Err(UserError::new(
                format!(
                    "{flag} server: a client-side ring has no cluster servers to refuse a batch"
                ),
                format!(
                    "on a ring, name the proxy or client that routes keys ({flag} twemproxy or {flag} envoy)"
                ),
            )),
        };
    }
    let client = Client::resolve_one(name).map_err(|e| {
        let names = Client::ALL.map(|c| c.name()).join(", ");
        UserError::new(
            format!("{flag} {e}"),
            format!("use server or one of: {names} (optionally NAME@VERSION)"),
        )
    })?;
    if !client.applies_to(topology) {
        let kind = match topology {
            Topology::Cluster(_) => "a Redis Cluster",
            Topology::Ring(_) => "a client-side ring",
        };
        return Err(UserError::new(
            format!("{flag} {name}: {} does not run on {kind}", client.name()),
            match topology {
                Topology::Cluster(_) => format!("name a cluster client, or {flag} server"),
                Topology::Ring(_) => {
                    format!("name a proxy that serves a ring: {flag} twemproxy or {flag} envoy")
                }
            },
        ));
    }
    Ok(Judge::Client(client))
}

/// Runs `keyplan migrate`.
pub fn run(args: MigrateArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let has_batches = args.batches.files.scheme.is_some()
        || args.batches.files.batches.is_some()
        || args.batches.monitor.is_some();
    if args.keys.is_empty() && !has_batches {
        return Err(UserError::new(
            "nothing to compare: no keys and no batches",
            "pass --keys DUMP (keys, bytes and ops per node) and/or --batches FILE, --scheme keyplan.yaml or --monitor CAPTURE (batches that start failing)",
        )
        .into());
    }
    let target = Target::new(args.output.as_ref(), args.format);
    let from_args = side_args(
        args.from.as_deref(),
        args.from_masters,
        args.from_format,
        args.from_pool.as_ref(),
        args.allow_partial,
    );
    let to_args = side_args(
        args.to.as_deref(),
        args.to_masters,
        args.to_format,
        args.to_pool.as_ref(),
        args.allow_partial,
    );
    // The scheme's own topology, when --from names none, is where keys live now.
    let from_loaded = Loaded::open(
        &from_args,
        args.batches.files.scheme.as_deref(),
        None,
        target.clone(),
    )
    .map_err(|e| pool_hint(e, "--from-pool"))?;
    let Some((from_topology, from_source)) = from_loaded
        .topology()
        .map_err(|e| pool_hint(e, "--from-pool"))?
    else {
        return Err(UserError::new(
            "no --from: where do keys live now?",
            "pass --from FILE|URL (a topology file or a live cluster) or --from-masters N",
        )
        .into());
    };
    let to_loaded = Loaded::open(&to_args, None, None, target.clone())
        .map_err(|e| pool_hint(e, "--to-pool"))?;
    let (to_topology, to_source) = to_loaded
        .topology()
        .map_err(|e| pool_hint(e, "--to-pool"))?
        .expect("invariant: clap requires --to or --to-masters");
    let from = Side {
        topology: &from_topology,
        synthetic: matches!(from_source, TopologySource::Masters { .. }),
        judge: judge("--from-client", args.from_client.as_deref(), &from_topology)?,
    };
    let to = Side {
        topology: &to_topology,
        synthetic: matches!(to_source, TopologySource::Masters { .. }),
        judge: judge("--to-client", args.to_client.as_deref(), &to_topology)?,
    };

    // The keys, placed under both on every core.
    let placed = if args.keys.is_empty() {
        None
    } else {
        let threads = super::args::threads(None);
        let mut sinks: Vec<PlaceSink> = (0..threads)
            .map(|_| PlaceSink::new(&from_topology, &to_topology))
            .collect();
        let dumps = args
            .input
            .par_read_dumps(&args.keys, ctx.progress, &mut sinks)?;
        let samples = dumps.0.iter().map(|(n, _)| n.clone()).collect();
        dumps.warn(ctx)?;
        Some(Placed::merge(&from_topology, &to_topology, &sinks, samples))
    };

    // The batches, judged one at a time as they are read.
    let mut observed = args.batches.observed()?;
    let mut failed: Option<anyhow::Error> = None;
    let listed = observed.by_ref().map_while(|b| match b {
        Ok(b) => Some(b),
        Err(e) => {
            failed = Some(e);
            None
        }
    });
    let declared = from_loaded
        .scheme
        .iter()
        .flat_map(|s| crate::simulate::batch::from_scheme(&s.scheme, None));
    let batches = BatchChanges::collect(
        listed.chain(declared).map(|b| batch_change(&b, &from, &to)),
        ROWS_KEPT,
    );
    if let Some(e) = failed {
        return Err(e);
    }
    observed.say_capture(ctx)?;

    let report = preview(
        (&from, from_source.to_string()),
        (&to, to_source.to_string()),
        placed,
        has_batches.then_some(batches),
    );
    target.render(&report, ctx)?;
    Ok(match report.starting_to_fail() {
        0 => ExitStatus::Clean,
        _ => ExitStatus::Findings,
    })
}
