//! `keyplan scan`: sample keys from a live cluster into a dump for later offline use.

use super::Ctx;
use super::args::{SampleArgs, TopologyArgs};
use crate::error::{ExitStatus, UserError};
use crate::keys::quote_into;
use anyhow::Context as _;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::mpsc;

/// Sample keys from every master of a live cluster into a dump (read-only).
///
/// Keys are written in redis-cli's quoted form (one per line), or as `key<TAB>bytes` with
/// --bytes: both read back with `--input-format auto`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan scan --cluster redis://127.0.0.1:7000 --sample all --bytes -o sample.tsv\n  REDISCLI_AUTH=secret keyplan scan --cluster redis://127.0.0.1:7000 --match 'user:*' --rate 500"
)]
pub struct ScanArgs {
    /// The cluster.
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// Write the sample here instead of standard output
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// How the cluster is sampled (--bytes writes key<TAB>bytes).
    #[command(flatten)]
    pub sampling: SampleArgs,
}

/// Runs `keyplan scan`.
pub fn run(args: ScanArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let Some(live) = args.topology.live()? else {
        return Err(UserError::new(
            "scan needs --cluster URL",
            "for example --cluster redis://127.0.0.1:7000",
        )
        .into());
    };
    let map = live.topology()?;
    let opts = args.sampling.scan_options(&live)?;
    let mut file = match &args.output {
        Some(p) => Some(BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot write '{}'", p.display()))?,
        )),
        None => None,
    };
    // Sampling threads send text in chunks; this thread writes them (stdout is not `Send`).
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(16);
    let mut write_err: Option<std::io::Error> = None;
    let results: Vec<Result<u64, crate::live::LiveError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = map
            .nodes()
            .iter()
            .map(|node| {
                let (live, opts, tx) = (&live, &opts, tx.clone());
                scope.spawn(move || {
                    let mut buf = String::new();
                    let r = live.scan_node(node, opts, |k, b| {
                        quote_into(k, &mut buf);
                        if opts.bytes {
                            buf.push('\t');
                            buf.push_str(&b.unwrap_or(0).to_string());
                        }
                        buf.push('\n');
                        if buf.len() > 1 << 16 {
                            let _ = tx.send(std::mem::take(&mut buf).into_bytes());
                        }
                    });
                    let _ = tx.send(buf.into_bytes());
                    r
                })
            })
            .collect();
        drop(tx);
        for chunk in rx {
            let w = match file.as_mut() {
                Some(f) => f.write_all(&chunk),
                None => ctx.stdout.write_all(&chunk),
            };
            if let Err(e) = w {
                write_err.get_or_insert(e);
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("invariant: scan threads do not panic"))
            .collect()
    });
    if let Some(e) = write_err {
        return Err(anyhow::Error::new(e).context("writing the sample"));
    }
    let mut total = 0;
    for r in results {
        total += r?;
    }
    match file.as_mut() {
        Some(f) => f.flush()?,
        None => ctx.stdout.flush()?,
    }
    writeln!(
        ctx.stderr,
        "sampled {total} keys from {} masters",
        map.nodes().len()
    )?;
    Ok(ExitStatus::Clean)
}
