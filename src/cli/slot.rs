//! `keyplan slot`: each key's hash slot, the bytes Redis hashes and why, and the owning node.

use super::Ctx;
use super::args::{
    InputArgs, TopologyArgs, malformed_of, open_all, read_context, total_size, warn_malformed,
};
use super::progress::Unit;
use crate::error::{ExitStatus, UserError};
use crate::keys::parallel::SlotHistogram;
use crate::keys::{Record, for_each_record};
use crate::report::slot::{
    SlotCount, SlotCountsReport, SlotEmitter, SlotFormat, SlotRow, render_counts,
};
use crate::slot::{SLOT_COUNT, TagShape, explain, key_slot};
use crate::topology::Topology;
use anyhow::Context as _;
use std::ffi::OsString;
use std::io::BufWriter;
use std::path::PathBuf;

/// Output format of `slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SlotFormatArg {
    /// `table` for keys given as arguments, `tsv` when reading --keys files
    Auto,
    /// A table (buffers all rows; use tsv or json for large dumps)
    Table,
    /// Tab-separated with a header line; keys that need it in redis-cli's quoted form
    Tsv,
    /// {"schema_version": 1, "keys": [...]}, streamed
    Json,
}

/// Print each key's hash slot, the bytes Redis hashes, and the owning node.
///
/// Keys come from the arguments (taken as raw bytes) and from --keys dumps, in that order.
/// The slot is exactly what `CLUSTER KEYSLOT` returns: CRC16-XMODEM of the hash tag (the bytes
/// between the first '{' and the first '}' after it, when not empty) or of the whole key.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan slot user:1000 '{user:1000}:cart' --explain\n  keyplan slot --keys keys.txt --masters 6 --format tsv\n  keyplan slot --counts --keys keys.txt --format json"
)]
pub struct SlotArgs {
    /// Keys to place
    #[arg(value_name = "KEY")]
    pub keys: Vec<OsString>,

    /// Read keys from a dump ('-' for stdin); repeat for several files
    #[arg(long = "keys", value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// How dumps are read.
    #[command(flatten)]
    pub input: InputArgs,

    /// Where keys live.
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// Output format
    #[arg(long, value_enum, default_value = "auto")]
    pub format: SlotFormatArg,

    /// Say in words why those bytes were hashed
    #[arg(long)]
    pub explain: bool,

    /// Print how many keys fall in each slot instead of one line per key
    #[arg(long, conflicts_with = "explain")]
    pub counts: bool,

    /// Worker threads for --counts (default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

#[cfg(unix)]
fn arg_bytes(s: &OsString) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn arg_bytes(s: &OsString) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

impl SlotFormatArg {
    /// The format asked for: `auto` is a table for keys given as arguments, tsv for dumps.
    fn resolve(self, no_dumps: bool) -> SlotFormat {
        match self {
            SlotFormatArg::Auto if no_dumps => SlotFormat::Table,
            SlotFormatArg::Auto => SlotFormat::Tsv,
            SlotFormatArg::Table => SlotFormat::Table,
            SlotFormatArg::Tsv => SlotFormat::Tsv,
            SlotFormatArg::Json => SlotFormat::Json,
        }
    }
}

/// Runs `keyplan slot`.
pub fn run(args: SlotArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    if args.keys.is_empty() && args.files.is_empty() {
        return Err(UserError::new(
            "no keys given",
            "pass keys as arguments, or a dump with --keys FILE ('-' reads stdin)",
        )
        .into());
    }
    let topology = args.topology.resolve(None)?.map(|(t, _)| t);
    let format = args.format.resolve(args.files.is_empty());
    if args.counts {
        return run_counts(&args, topology.as_ref(), format, ctx);
    }
    let opts = args.input.read_options();
    // Open every dump before printing anything, so a bad path fails cleanly.
    let inputs = open_all(&args.files)?;
    let node_names: Vec<&str> = topology
        .as_ref()
        .map(|t| t.nodes().iter().map(|n| n.name.as_str()).collect())
        .unwrap_or_default();
    let layout = ctx.layout;
    let stdout = BufWriter::with_capacity(1 << 16, &mut *ctx.stdout);
    let mut em = SlotEmitter::begin(stdout, format, topology.is_some(), args.explain, &layout)?;
    let emit = |em: &mut SlotEmitter<_>, key: &[u8]| -> std::io::Result<()> {
        let (slot, hashed) = match topology.as_ref().and_then(|t| t.ring()) {
            Some(ring) => (None, ring.hashed(key)),
            None => (Some(key_slot(key)), TagShape::of(key).hashed(key)),
        };
        let node = topology
            .as_ref()
            .map(|t| t.node_of(key).map(|i| node_names[i]).unwrap_or("-"));
        let why = args
            .explain
            .then(|| match topology.as_ref().and_then(|t| t.ring()) {
                Some(_) => {
                    "a client-side ring hashes these bytes (see the topology's hash and tag rules)"
                        .to_string()
                }
                None => explain(key),
            });
        em.row(&SlotRow {
            key,
            slot,
            hashed,
            node,
            explain: why.as_deref(),
        })
    };
    for k in &args.keys {
        emit(&mut em, &arg_bytes(k))?;
    }
    let mut malformed = Vec::new();
    let mut summaries = Vec::new();
    for (name, src) in inputs {
        let mut io_err: Option<std::io::Error> = None;
        let summary = for_each_record(src, &opts, |_, rec: &Record<'_>| {
            if io_err.is_none()
                && let Err(e) = emit(&mut em, rec.key)
            {
                io_err = Some(e);
            }
        });
        if let Some(e) = io_err {
            return Err(e.into());
        }
        let summary = summary.map_err(|e| read_context(&name, e))?;
        malformed.extend(malformed_of(&name, &summary));
        args.input.check_not_empty(&name, &summary)?;
        summaries.push((name, summary));
    }
    em.finish(&malformed)?;
    for (name, s) in &summaries {
        warn_malformed(ctx, name, s)?;
    }
    Ok(ExitStatus::Clean)
}

fn run_counts(
    args: &SlotArgs,
    topology: Option<&Topology>,
    format: SlotFormat,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<ExitStatus> {
    if topology.is_some_and(|t| t.ring().is_some()) {
        return Err(UserError::new(
            "--counts counts Redis Cluster slots, which a client-side ring does not use",
            "drop --counts to see each key's server, or run `keyplan analyze` for per-server counts",
        )
        .into());
    }
    let opts = args.input.read_options();
    let threads = args.threads.map(usize::from).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let mut total = vec![0u64; SLOT_COUNT];
    for k in &args.keys {
        total[key_slot(&arg_bytes(k)) as usize] += 1;
    }
    let mut malformed = Vec::new();
    let mut summaries = Vec::new();
    let inputs = open_all(&args.files)?;
    let progress = ctx.progress("reading keys", Unit::Bytes, total_size(&inputs));
    for (name, src) in inputs {
        let mut sinks: Vec<SlotHistogram> =
            (0..threads).map(|_| SlotHistogram::default()).collect();
        let summary = src
            .par_read(&name, &opts, &mut sinks, Some(progress.counter()))
            .map_err(|e| read_context(&name, e))?;
        for s in &sinks {
            for (t, c) in total.iter_mut().zip(&s.counts) {
                *t += c;
            }
        }
        malformed.extend(malformed_of(&name, &summary));
        args.input.check_not_empty(&name, &summary)?;
        summaries.push((name, summary));
    }
    progress.finish();
    let slots = total
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(slot, &keys)| SlotCount {
            slot: slot as u16,
            keys,
            node: topology.map(|t| {
                t.node_of_slot(slot as u16)
                    .map(|i| t.nodes()[i].name.clone())
                    .unwrap_or_else(|| "-".into())
            }),
        })
        .collect();
    let report = SlotCountsReport {
        keys: total.iter().sum(),
        slots,
        malformed,
    };
    let mut out = BufWriter::new(&mut *ctx.stdout);
    render_counts(&mut out, &report, format, &ctx.layout).context("writing the slot counts")?;
    drop(out);
    for (name, s) in &summaries {
        warn_malformed(ctx, name, s)?;
    }
    Ok(ExitStatus::Clean)
}
