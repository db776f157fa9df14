//! `keyplan slot`: each key's hash slot, the bytes Redis hashes and why, and the owning node.

use super::Ctx;
use super::args::{InputArgs, TopologyArgs, threads};
use super::loaded::{Loaded, Target};
use super::values::{Word, one_of};
use crate::error::{ExitStatus, UserError};
use crate::keys::parallel::SlotHistogram;
use crate::report::render::Format;
use crate::report::slot::{SlotColumns, SlotCountsReport, SlotRow, slot_stream};
use crate::slot::{TagShape, explain, key_slot};
use crate::topology::Topology;
use std::ffi::OsString;
use std::path::PathBuf;

/// `--format` of slot: a format, or `auto` (none chosen).
#[derive(Debug, Clone, Copy)]
pub struct SlotFormat(Option<Format>);

const SLOT_FORMATS: &[Word<SlotFormat>] = &[
    (
        "auto",
        SlotFormat(None),
        "`table` for keys given as arguments, `tsv` when reading --keys files",
    ),
    (
        "table",
        SlotFormat(Some(Format::Table)),
        "A table (buffers all rows; use tsv or json for large dumps)",
    ),
    (
        "tsv",
        SlotFormat(Some(Format::Tsv)),
        "Tab-separated with a header line; keys that need it in redis-cli's quoted form",
    ),
    (
        "json",
        SlotFormat(Some(Format::Json)),
        "{\"schema_version\": 1, \"keys\": [...]}, streamed",
    ),
];

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
    #[arg(long, value_parser = one_of(SLOT_FORMATS), default_value = "auto")]
    pub format: SlotFormat,

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

/// Runs `keyplan slot`.
pub fn run(args: SlotArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    if args.keys.is_empty() && args.files.is_empty() {
        return Err(UserError::new(
            "no keys given",
            "pass keys as arguments, or a dump with --keys FILE ('-' reads stdin)",
        )
        .into());
    }
    // `auto`: a table for keys given as arguments, tsv for dumps.
    let format = args.format.0.unwrap_or(match args.files.is_empty() {
        true => Format::Table,
        false => Format::Tsv,
    });
    let target = Target::new(args.output.as_ref(), format);
    let loaded = Loaded::open(&args.topology, None, None, target)?;
    let topology = loaded.topology()?.map(|(t, _)| t);
    let target = loaded.target;
    if args.counts {
        return run_counts(&args, topology.as_ref(), &target, ctx);
    }
    let node_names: Vec<&str> = topology
        .as_ref()
        .map(|t| t.nodes().iter().map(|n| n.name.as_str()).collect())
        .unwrap_or_default();
    let columns = SlotColumns {
        node: topology.is_some(),
        explain: args.explain,
    };
    // Every dump is opened before anything is printed, so a bad path fails cleanly; rows
    // stream out as keys are read, with no progress bar over them.
    let inputs = crate::files::open_all(&args.files)?;
    let quiet = super::progress::ProgressConfig::off();
    let dumps = ctx.write_to(target.path.as_ref(), |out, layout| {
        let mut rows = slot_stream(format, out, columns, layout)?;
        let mut row = |key: &[u8]| -> std::io::Result<()> {
            let (slot, hashed, node) = match &topology {
                Some(t) => {
                    let (slot, hashed, node) = t.place(key);
                    (slot, hashed, Some(node.map_or("-", |i| node_names[i])))
                }
                None => (Some(key_slot(key)), TagShape::of(key).hashed(key), None),
            };
            let why = args.explain.then(|| match &topology {
                Some(t) => t.explain(key),
                None => explain(key),
            });
            rows.item(&SlotRow {
                key,
                slot,
                hashed,
                node,
                explain: why.as_deref(),
            })
        };
        for k in &args.keys {
            row(&arg_bytes(k))?;
        }
        let mut io_err: Option<std::io::Error> = None;
        let dumps = args
            .input
            .read_opened(inputs, quiet, |input, opts, progress| {
                input.for_each(opts, progress, |_, rec| {
                    if io_err.is_none() {
                        io_err = row(rec.key).err();
                    }
                })
            });
        if let Some(e) = io_err {
            return Err(e.into());
        }
        let dumps = dumps?;
        rows.finish(&dumps.malformed())?;
        Ok(dumps)
    })?;
    dumps.warn(ctx)?;
    Ok(ExitStatus::Clean)
}

fn run_counts(
    args: &SlotArgs,
    topology: Option<&Topology>,
    target: &Target,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<ExitStatus> {
    if topology.is_some_and(|t| t.slot_map().is_some_and(|m| m.custom_hashing())) {
        return Err(UserError::new(
            "--counts counts slots by Redis's `{…}` rule; this database places keys by its hashing policy's rules",
            "drop --counts to see each key's slot under the policy, or run `keyplan analyze` for per-slot and per-shard counts",
        )
        .into());
    }
    if topology.is_some_and(|t| t.ring().is_some()) {
        return Err(UserError::new(
            "--counts counts Redis Cluster slots, which a client-side ring does not use",
            "drop --counts to see each key's server, or run `keyplan analyze` for per-server counts",
        )
        .into());
    }
    let mut sinks: Vec<SlotHistogram> = (0..threads(args.threads))
        .map(|_| SlotHistogram::default())
        .collect();
    let dumps = args
        .input
        .par_read_dumps(&args.files, ctx.progress, &mut sinks)?;
    let mut total = SlotHistogram::total(&sinks);
    for k in &args.keys {
        total[key_slot(&arg_bytes(k)) as usize] += 1;
    }
    let report = SlotCountsReport::new(&total, topology, dumps.malformed());
    target.render(&report, ctx)?;
    dumps.warn(ctx)?;
    Ok(ExitStatus::Clean)
}
