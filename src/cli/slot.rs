//! `keyplan slot`: each key's hash slot, the bytes Redis hashes and why, and the owning node.

use super::Ctx;
use super::args::{InputArgs, TopologyArgs, threads};
use super::loaded::Loaded;
use crate::error::{ExitStatus, UserError};
use crate::keys::parallel::SlotHistogram;
use crate::report::slot::{
    SlotCount, SlotCountsReport, SlotEmitter, SlotFormat, SlotRow, render_counts,
};
use crate::slot::{SLOT_COUNT, TagShape, explain, key_slot};
use crate::topology::Topology;
use anyhow::Context as _;
use std::ffi::OsString;
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

    /// Write to this file instead of standard output (whole, or not at all)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

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
    let topology = Loaded::open(&args.topology, None, None)?
        .topology()?
        .map(|(t, _)| t);
    let format = args.format.resolve(args.files.is_empty());
    if args.counts {
        return run_counts(&args, topology.as_ref(), format, ctx);
    }
    let node_names: Vec<&str> = topology
        .as_ref()
        .map(|t| t.nodes().iter().map(|n| n.name.as_str()).collect())
        .unwrap_or_default();
    let ring = topology.as_ref().and_then(|t| t.ring());
    // Every dump is opened before anything is printed, so a bad path fails cleanly; rows
    // stream out as keys are read, with no progress bar over them.
    let inputs = crate::files::open_all(&args.files)?;
    let quiet = super::progress::ProgressConfig::off();
    let dumps = ctx.write_to(args.output.as_ref(), |out, layout| {
        let mut em = SlotEmitter::begin(out, format, topology.is_some(), args.explain, layout)?;
        let row = |em: &mut SlotEmitter<_>, key: &[u8]| -> std::io::Result<()> {
            let (slot, hashed) = match ring {
                Some(ring) => (None, ring.hashed(key)),
                None => (Some(key_slot(key)), TagShape::of(key).hashed(key)),
            };
            let node = topology
                .as_ref()
                .map(|t| t.node_of(key).map(|i| node_names[i]).unwrap_or("-"));
            let why = args.explain.then(|| match ring {
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
            row(&mut em, &arg_bytes(k))?;
        }
        let mut io_err: Option<std::io::Error> = None;
        let dumps = args
            .input
            .read_opened(inputs, quiet, |input, opts, progress| {
                input.for_each(opts, progress, |_, rec| {
                    if io_err.is_none() {
                        io_err = row(&mut em, rec.key).err();
                    }
                })
            });
        if let Some(e) = io_err {
            return Err(e.into());
        }
        let dumps = dumps?;
        em.finish(&dumps.malformed())?;
        Ok(dumps)
    })?;
    dumps.warn(ctx)?;
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
    let mut total = vec![0u64; SLOT_COUNT];
    for k in &args.keys {
        total[key_slot(&arg_bytes(k)) as usize] += 1;
    }
    let mut sinks: Vec<SlotHistogram> = (0..threads(args.threads))
        .map(|_| SlotHistogram::default())
        .collect();
    let dumps = args
        .input
        .par_read_dumps(&args.files, ctx.progress, &mut sinks)?;
    for s in &sinks {
        for (t, c) in total.iter_mut().zip(&s.counts) {
            *t += c;
        }
    }
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
        malformed: dumps.malformed(),
    };
    ctx.write_to(args.output.as_ref(), |out, layout| {
        render_counts(out, &report, format, layout).context("writing the slot counts")
    })?;
    dumps.warn(ctx)?;
    Ok(ExitStatus::Clean)
}
