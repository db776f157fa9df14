//! `keyplan scan`: sample keys from a live cluster into a dump for later offline use.

use super::Ctx;
use super::args::SampleArgs;
use super::loaded::{Loaded, Target};
use super::progress::Unit;
use super::values::{Word, one_of};
use crate::error::{ExitStatus, UserError};
use crate::report::render::Format;
use std::path::PathBuf;

/// Sample keys from every master of a live cluster (read-only), or list what an RDB snapshot
/// holds, into a dump.
///
/// Keys are written in redis-cli's quoted form (one per line), or as `key<TAB>bytes` with
/// --bytes: both read back with `--input-format auto`. With --rdb, every key of the snapshot
/// is written as `key<TAB>bytes` (estimated memory), or with --format jsonl as one JSON object
/// per key with its type, encoding, elements, memory, size in the file, expiry and LFU/idle.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("window", |a| a.hide(true)),
    after_help = "Examples:\n  keyplan scan --cluster redis://127.0.0.1:7000 --sample all --bytes -o sample.tsv\n  REDISCLI_AUTH=secret keyplan scan --cluster redis://127.0.0.1:7000 --match 'user:*' --rate 500\n  keyplan scan --rdb dump.rdb --format jsonl -o keys.jsonl"
)]
pub struct ScanArgs {
    /// The cluster: redis://[user:password@]host:port (password also from REDISCLI_AUTH)
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "rdb",
        conflicts_with = "rdb"
    )]
    pub cluster: Option<String>,

    /// Read this RDB snapshot instead of a live cluster
    #[arg(long, value_name = "FILE")]
    pub rdb: Option<PathBuf>,

    /// What --rdb writes per key
    #[arg(long, value_parser = one_of(SNAPSHOT_FORMATS), default_value = "tsv", requires = "rdb")]
    pub format: Format,

    /// With --rdb: the server's `list-compress-depth` (0, the default, compresses no list
    /// node); with N > 0 `bytes` counts the inner nodes of long lists at their compressed size
    #[arg(long, default_value_t = 0, value_name = "N", requires = "rdb",
          value_parser = clap::value_parser!(u32).range(0..=65_535))]
    pub list_compress_depth: u32,

    /// With --rdb: the server whose memory layout `bytes` follows: redis-7, redis-8, valkey-8
    /// or valkey-9, a minor version may follow (redis-8.2); by default the server named in the
    /// snapshot (its redis-ver or valkey-ver field)
    #[arg(long, value_name = "SERVER", requires = "rdb",
          value_parser = crate::rdb::memory::Server::parse)]
    pub server: Option<crate::rdb::memory::Server>,

    /// Write the sample here instead of standard output
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// How the cluster is sampled (--bytes writes key<TAB>bytes).
    #[command(flatten)]
    pub sampling: SampleArgs,
}

/// `--format` of scan --rdb.
const SNAPSHOT_FORMATS: &[Word<Format>] = &[
    (
        "tsv",
        Format::Tsv,
        "key<TAB>bytes, the key in redis-cli's quoted form (a dump every command reads)",
    ),
    (
        "jsonl",
        Format::Jsonl,
        "One JSON object per key: key, db, slot, type, encoding, elements, bytes, serialized, expires_at_ms, lfu, idle",
    ),
];

/// Runs `keyplan scan`.
pub fn run(args: ScanArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    if let Some(rdb) = &args.rdb {
        return run_rdb(
            rdb,
            args.format,
            args.list_compress_depth,
            args.server,
            args.output.as_ref(),
            ctx,
        );
    }
    let (live, target) = live_target(&args)?;
    let topology = crate::topology::Topology::Cluster(live.topology()?);
    let opts = args.sampling.scan_options(&live)?;
    let nodes = topology.key_holders();
    super::args::warn_no_replica(ctx, &opts, &nodes)?;
    let total = opts.per_node.map(|n| n * nodes.len() as u64);
    let progress = ctx.progress("sampling", Unit::Keys, total);
    // A file is renamed into place only once the sample is complete and the slot map held
    // still: a failed scan never leaves a partial sample behind.
    let keys = ctx.write_to(target.path.as_ref(), |out, _| {
        let keys = live.dump_keys(&nodes, &opts, out, || progress.inc(1));
        progress.finish();
        SampleArgs::check_stable(&live, &topology)?;
        Ok(keys?)
    })?;
    writeln!(
        ctx.stderr,
        "sampled {keys} keys from {} masters",
        nodes.len()
    )?;
    Ok(ExitStatus::Clean)
}

/// The cluster to sample, once the flags that do not apply to scan are refused.
fn live_target(args: &ScanArgs) -> anyhow::Result<(crate::live::LiveCluster, Target)> {
    if args.sampling.window.is_some() {
        return Err(UserError::new(
            "--window has no effect on scan",
            "it sets how long analyze and the previews measure the servers' per-slot load; scan only samples keys",
        )
        .into());
    }
    match args.cluster.as_deref() {
        Some(url) => {
            let target = Target::new(args.output.as_ref(), args.format);
            let loaded = Loaded::live_only(url, None, target)?;
            let target = loaded.target.clone();
            Ok((loaded.into_live(), target))
        }
        None => Err(UserError::new(
            "scan needs --cluster URL",
            "for example --cluster redis://127.0.0.1:7000",
        )
        .into()),
    }
}

/// `scan --rdb`: every key of a snapshot, in file order.
fn run_rdb(
    path: &std::path::Path,
    format: Format,
    list_compress_depth: u32,
    server: Option<crate::rdb::memory::Server>,
    output: Option<&PathBuf>,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<ExitStatus> {
    use crate::rdb::Parser;
    use crate::report::snapshot::snapshot_stream;
    let name = path.display().to_string();
    let data = crate::files::open_snapshot(path)?;
    let mut parser = Parser::new(&data).map_err(|e| {
        UserError::new(
            format!("{name}: {e}"),
            "pass a file written by SAVE/BGSAVE (dump.rdb), or read a key dump with analyze",
        )
    })?;
    parser.set_list_compress_depth(list_compress_depth);
    if let Some(server) = server {
        parser.set_server(server);
    }
    let damaged = |e| {
        let help = "the snapshot is damaged or truncated at that byte; nothing was written to -o";
        UserError::new(format!("{name}: {e}"), help)
    };
    let progress = ctx.progress("reading snapshot", Unit::Bytes, Some(data.len() as u64));
    let keys = ctx.write_to(output, |out, _| {
        let (mut keys, mut last, mut released) = (0u64, 0u64, 0usize);
        let mut lines = snapshot_stream(format, out)?;
        while let Some(k) = parser.next_key().map_err(damaged)? {
            lines.item(&k)?;
            keys += 1;
            if keys.is_multiple_of(4096) {
                let pos = parser.position();
                progress.inc(pos - last);
                last = pos;
                data.release_behind(pos, &mut released);
            }
        }
        lines.finish(&())?;
        progress.finish();
        Ok(keys)
    })?;
    let odd = match parser.uninterpreted() {
        0 => String::new(),
        n => {
            format!(" ({n} values could not be interpreted: their keys are listed, elements null)")
        }
    };
    writeln!(
        ctx.stderr,
        "read {keys} keys from {name} (RDB {}){odd}",
        parser.version()
    )?;
    Ok(ExitStatus::Clean)
}
