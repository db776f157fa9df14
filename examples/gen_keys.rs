//! Generates a realistic key dump for keyplan's examples and benchmarks.
//!
//! ```text
//! cargo run --release --example gen_keys -- [COUNT] [--tsv] [--seed N] > keys.txt
//! ```
//!
//! The key families and their skew are described in `tests/common/keygen.rs`. With `--tsv`
//! every line also gets a memory weight (bytes) and a traffic weight (ops/s). Output is
//! deterministic for a given seed. `examples/app.keys` is `gen_keys 20000 --tsv`.
use std::io::{BufWriter, Write};

#[path = "../tests/common/keygen.rs"]
mod keygen;

fn main() {
    let mut count: u64 = 20_000;
    let mut tsv = false;
    let mut seed: u64 = 0x5EED_2026;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tsv" => tsv = true,
            "--seed" => {
                seed = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--seed takes a number")
            }
            n => {
                count = n
                    .parse()
                    .expect("usage: gen_keys [COUNT] [--tsv] [--seed N]")
            }
        }
    }
    let mut g = keygen::KeyGen::new(seed);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut line = String::with_capacity(128);
    for _ in 0..count {
        line.clear();
        let (bytes, ops) = g.next_key(&mut line);
        if tsv {
            line.push_str(&format!("\t{bytes}\t{ops}"));
        }
        line.push('\n');
        if out.write_all(line.as_bytes()).is_err() {
            return; // closed pipe
        }
    }
    let _ = out.flush();
}
