//! A live sample written out as a key dump, as `keyplan scan` makes it: the sampling threads
//! hand text in chunks to the writing thread, so memory stays that of a few chunks.

use super::{LiveCluster, LiveError, ScanOptions};
use crate::keys::quote_into;
use crate::topology::Node;
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::mpsc;

/// Why a dump could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// A node could not be sampled.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The output could not be written (the sample was stopped).
    #[error("writing the sample")]
    Write(#[source] io::Error),
}

impl LiveCluster {
    /// Samples `nodes` (see [`LiveCluster::scan_nodes`]) into `out`: each key in redis-cli's
    /// quoted form, one a line, or `key<TAB>bytes` when `opts` asks for bytes; `tick` is
    /// called once a key. Returns the keys written. A write error stops the sampling.
    pub fn dump_keys(
        &self,
        nodes: &[Node],
        opts: &ScanOptions,
        out: &mut dyn Write,
        tick: impl Fn() + Sync,
    ) -> Result<u64, DumpError> {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(16);
        std::thread::scope(|scope| {
            let sampler = scope.spawn(|| {
                let mut sinks: Vec<(String, mpsc::SyncSender<Vec<u8>>)> =
                    nodes.iter().map(|_| (String::new(), tx.clone())).collect();
                drop(tx);
                let r = self.scan_nodes(nodes, opts, &mut sinks, |(buf, tx), k, b, _| {
                    quote_into(k, buf);
                    if opts.bytes {
                        buf.push('\t');
                        buf.push_str(&b.unwrap_or(0).to_string());
                    }
                    buf.push('\n');
                    tick();
                    if buf.len() > 1 << 16 {
                        let _ = tx.send(std::mem::take(buf).into_bytes());
                    }
                });
                for (buf, tx) in sinks {
                    let _ = tx.send(buf.into_bytes());
                }
                r
            });
            // Written on this thread (the output need not be `Send`); at the first error the
            // sampler is asked to stop, as there is nowhere to put the keys.
            let mut write_err = None;
            for chunk in rx {
                if write_err.is_none()
                    && let Err(e) = out.write_all(&chunk)
                {
                    opts.cancel.store(true, Ordering::Relaxed);
                    write_err = Some(e);
                }
            }
            let sampled = sampler
                .join()
                .expect("invariant: the sampling thread does not panic");
            match write_err {
                Some(e) => Err(DumpError::Write(e)),
                None => Ok(sampled?),
            }
        })
    }
}
