//! Generates a realistic key dump for keyplan's examples and benchmarks.
//!
//! ```text
//! cargo run --release --example gen_keys -- [COUNT] [--tsv] [--ids] [--seed N] > keys.txt
//! ```
//!
//! `--ids` writes keys whose ids never repeat a skeleton instead: base62 session tokens,
//! ULIDs, e-mail addresses and IPv6 addresses, a quarter each.
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
    let mut ids = false;
    let mut seed: u64 = 0x5EED_2026;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tsv" => tsv = true,
            "--ids" => ids = true,
            "--seed" => {
                seed = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--seed takes a number")
            }
            n => {
                count = n
                    .parse()
                    .expect("usage: gen_keys [COUNT] [--tsv] [--ids] [--seed N]")
            }
        }
    }
    if ids {
        id_keys(count, seed);
        return;
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

/// Keys whose ids never repeat a skeleton (see the module docs).
fn id_keys(count: u64, seed: u64) {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const B32: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    for i in 0..count {
        let mut k = Vec::with_capacity(48);
        match i % 4 {
            0 => {
                k.extend_from_slice(b"sess:");
                k.extend((0..32).map(|_| B62[(next() % 62) as usize]));
            }
            1 => {
                k.extend_from_slice(b"redisom:User:01");
                k.extend((0..24).map(|_| B32[(next() % 32) as usize]));
            }
            2 => {
                k.extend_from_slice(b"user:");
                k.extend((0..8).map(|_| b'a' + (next() % 26) as u8));
                k.extend_from_slice(format!("{}@example.com", next() % 1000).as_bytes());
            }
            _ => {
                k.extend_from_slice(
                    format!(
                        "rl:2001:db8:{:x}::{:x}:minute",
                        next() % 65536,
                        next() % 65536
                    )
                    .as_bytes(),
                );
            }
        }
        k.push(b'\n');
        out.write_all(&k).unwrap();
    }
    out.flush().unwrap();
}
