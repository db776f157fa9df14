//! `keyplan verify`: after a migration, the cluster against the preview saved before it.

use super::Ctx;
use super::args::InputArgs;
use super::values::{TABLE_FORMATS, one_of};
use crate::error::{ExitStatus, UserError};
use crate::keys::Record;
use crate::keys::parallel::ChunkSink;
use crate::migrate::verify::{
    KeyTally, KeyTolerance, Preview, ValueMethod, ValueTally, ValuesCheck, parse_preview,
    shares_a_node, verify,
};
use crate::report::render::Format;
use std::path::PathBuf;

/// Check a migrated cluster against the preview saved before the migration: every slot's
/// owner, slots left open, keys left on a master that no longer owns their slot, each node's
/// keys (against the preview's figures when it counted every key), with --keys every key of a
/// dump taken before on the owner of its slot, and with --source every key of the source
/// (the cluster or server the keys were copied from) on the owner of its slot with the same
/// type, expiry and value. Read-only.
///
/// Exit status: 0 the cluster matches the preview, 1 it differs (the report says where), 2 the
/// check could not be made.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan rebalance --preview --cluster redis://10.0.0.1:7000 --sample all --format json -o preview.json\n  keyplan verify preview.json --cluster redis://10.0.0.1:7000\n  keyplan verify preview.json --cluster redis://10.0.0.1:7000 --keys before.keys --format json\n  keyplan verify --cluster redis://10.0.1.1:7000 --keys before.keys\n  keyplan verify --cluster redis://10.0.1.1:7000 --source redis://10.0.0.5:6379 --ttl-tolerance 5s\n\nExit status: 0 the cluster matches the preview, 1 it differs (the report says where), 2 the check could not be made."
)]
pub struct VerifyArgs {
    /// The preview saved before the migration (keyplan rebalance|reshard --preview --format
    /// json); without it the cluster is held to its own slot map (open slots, keys left on a
    /// master that does not own their slot, and the keys of --keys)
    #[arg(value_name = "PREVIEW")]
    pub preview: Option<PathBuf>,

    /// The migrated cluster: redis://[user:password@]host:port (password also from
    /// REDISCLI_AUTH); read-only
    #[arg(long, value_name = "URL", required = true)]
    pub cluster: String,

    /// Key dumps taken before the migration ('-' for stdin): each key must be on the master
    /// that owns its slot now; an RDB snapshot's keys must also keep (or lack) an expiry as
    /// they had (a key with an expiry that is gone counts as expired)
    #[arg(long = "keys", value_name = "FILE", num_args = 1..)]
    pub keys: Vec<PathBuf>,

    /// A source the keys were copied from, read-only: a cluster (every master is read) or a
    /// standalone server (repeat the flag for each server of a ring). Every key of it must be
    /// on the master that owns its slot with the same type, expiry (within --ttl-tolerance)
    /// and value
    #[arg(long = "source", value_name = "URL")]
    pub source: Vec<String>,

    /// How values are compared with --source: `digest` (DEBUG DIGEST-VALUE, whatever the
    /// encoding; the servers must allow DEBUG), `dump` (a digest of the DUMP payload, and a set
    /// or hash whose payloads differ by its sorted members: other types need the same
    /// encoding settings on both sides) or `auto` (digest where every node allows it, else
    /// dump)
    #[arg(long, value_name = "HOW", default_value = "auto",
          value_parser = clap::builder::PossibleValuesParser::new(["auto", "digest", "dump"]))]
    pub compare: String,

    /// How far apart a key's expiry may be on the source and the cluster with --source: 2s,
    /// 500ms, or seconds alone
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = ttl_tolerance)]
    pub ttl_tolerance: u64,

    /// How far a node's keys may be from the preview's figure (writes and expiries during the
    /// migration): a number of keys (500) or a percentage (0.5%) [default: exactly]
    #[arg(long, value_name = "N|PCT%", value_parser = key_tolerance)]
    pub key_tolerance: Option<KeyTolerance>,

    /// At most this many commands per second per master (the masters are read in parallel;
    /// raise it on a cluster with headroom)
    #[arg(long, value_name = "OPS", default_value_t = super::args::DEFAULT_RATE,
          value_parser = super::args::parse_rate)]
    pub rate: f64,

    /// How key dumps are read.
    #[command(flatten)]
    pub input: InputArgs,

    /// Output format
    #[arg(long, value_parser = one_of(TABLE_FORMATS), default_value = "table")]
    pub format: Format,

    /// Write the report to this file instead of standard output (whole, or not at all)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `--key-tolerance`: keys (`500`) or a percentage (`0.5%`).
fn key_tolerance(text: &str) -> Result<KeyTolerance, String> {
    let bad = || "not a number of keys (500) or a percentage (0.5%)".to_string();
    match text.trim().strip_suffix('%') {
        Some(p) => match p.trim().parse::<f64>() {
            Ok(x) if (0.0..=100.0).contains(&x) => Ok(KeyTolerance::Percent(x)),
            _ => Err(bad()),
        },
        None => text
            .trim()
            .parse()
            .map(KeyTolerance::Keys)
            .map_err(|_| bad()),
    }
}

/// `--ttl-tolerance`: `2s`, `500ms` or seconds alone, as milliseconds.
fn ttl_tolerance(text: &str) -> Result<u64, String> {
    let bad = || "not a duration (2s, 500ms, or seconds alone)".to_string();
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (t, 1000.0)
    };
    match num.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 && x * scale <= 1e15 => Ok((x * scale).round() as u64),
        _ => Err(bad()),
    }
}

/// With --source: every key of each source compared with the cluster's.
fn compare_values(
    args: &VerifyArgs,
    live: &crate::live::LiveCluster,
    observed: &crate::migrate::verify::Observed,
) -> anyhow::Result<Option<ValuesCheck>> {
    if args.source.is_empty() {
        return Ok(None);
    }
    let mut sources = Vec::new();
    for url in &args.source {
        if !url.contains("://") {
            return Err(UserError::new(
                format!("--source {url}: expected redis://[user:password@]host:port"),
                format!("did you mean --source redis://{url} ?"),
            )
            .into());
        }
        let source = super::args::live_cluster(url)?;
        let nodes = source.source_nodes()?;
        sources.push((source, nodes));
    }
    let method = match args.compare.as_str() {
        "dump" => ValueMethod::DumpPayload,
        how => {
            let mut all = true;
            for (source, nodes) in &sources {
                for n in nodes {
                    all &= source.allows_digest_value(n)?;
                }
            }
            for n in observed.nodes.iter().filter_map(|n| n.address.as_deref()) {
                all &= live.allows_digest_value(n)?;
            }
            match (how, all) {
                (_, true) => ValueMethod::DebugDigestValue,
                ("digest", false) => {
                    return Err(UserError::new(
                        "--compare digest: a node refuses DEBUG DIGEST-VALUE (enable-debug-command is off for this connection)",
                        "allow it (enable-debug-command local or yes) or give --compare dump",
                    )
                    .into());
                }
                _ => ValueMethod::DumpPayload,
            }
        }
    };
    let opts = crate::live::ValueOptions {
        method,
        ttl_tolerance_ms: args.ttl_tolerance,
        rate: Some(args.rate),
    };
    let tallies = std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .iter()
            .flat_map(|(source, nodes)| nodes.iter().map(move |n| (source, n)))
            .map(|(source, n)| {
                scope.spawn(move || live.compare_source_node(source, n, observed, opts))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("invariant: comparing threads do not panic"))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let mut tally = ValueTally::default();
    for t in tallies {
        tally.merge(t);
    }
    let names = sources.iter().map(|(s, _)| s.url_text()).collect();
    Ok(Some(ValuesCheck::new(
        names,
        method,
        args.ttl_tolerance,
        &tally,
        observed,
    )))
}

/// One worker's keys.
#[repr(align(128))]
#[derive(Default)]
struct KeySink(Vec<(Vec<u8>, Option<bool>)>);

impl ChunkSink for KeySink {
    fn record(&mut self, rec: &Record<'_>) {
        self.0.push((rec.key.to_vec(), rec.expires));
    }
}

/// Runs `keyplan verify`.
pub fn run(args: VerifyArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let name = args.preview.as_ref().map(|p| p.display().to_string());
    let preview = match &args.preview {
        Some(path) => {
            let text = crate::files::read_text(path, "the preview")?;
            let parsed = parse_preview(&text, crate::report::json::MIGRATION).map_err(|e| {
                UserError::new(
                    format!("{}: {e}", path.display()),
                    "give the JSON a preview wrote: keyplan rebalance|reshard --preview … --format json -o preview.json",
                )
            })?;
            Some(parsed)
        }
        None => None,
    };
    let live = super::args::live_cluster(&args.cluster)?;
    let observed = live.observe(Some(args.rate))?;
    if let (Some(p), Some(name)) = (&preview, &name)
        && !shares_a_node(p, &observed)
    {
        return Err(UserError::new(
            format!(
                "{name}: none of its nodes is in the cluster at {} (by node id, or address for a node it adds): it was made for another cluster",
                live.url_text()
            ),
            "give --cluster the cluster the preview was made for",
        )
        .into());
    }
    let preview = preview.unwrap_or_else(|| Preview::of_cluster(&observed));
    let tally = if args.keys.is_empty() {
        None
    } else {
        let threads = super::args::threads(None);
        let mut sinks: Vec<KeySink> = (0..threads).map(|_| KeySink::default()).collect();
        let dumps = args
            .input
            .par_read_dumps(&args.keys, ctx.progress, &mut sinks)?;
        dumps.warn(ctx)?;
        let mut tally = KeyTally::new(dumps.0.iter().map(|(n, _)| n.clone()).collect());
        let keys: Vec<(&[u8], u16)> = sinks
            .iter()
            .flat_map(|s| &s.0)
            .map(|(k, _)| (k.as_slice(), crate::slot::key_slot(k)))
            .collect();
        let states = live.key_states_on_owners(&observed, &keys, Some(args.rate))?;
        let expires = sinks.iter().flat_map(|s| &s.0).map(|(_, e)| *e);
        for (((k, slot), expires), state) in keys.iter().zip(expires).zip(states) {
            tally.add(k, *slot, expires, state);
        }
        Some(tally)
    };
    let values = compare_values(&args, &live, &observed)?;
    let report = verify(
        (name.as_deref(), &live.url_text()),
        &preview,
        &observed,
        tally.as_ref(),
        values,
        args.key_tolerance.unwrap_or_default(),
    );
    let target = super::loaded::Target::new(args.output.as_ref(), args.format);
    target.render(&report, ctx)?;
    Ok(if report.matches {
        ExitStatus::Clean
    } else {
        ExitStatus::Findings
    })
}
