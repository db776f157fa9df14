//! The baseline keyplan is measured against: what a user would write in plain Rust to build a
//! slot histogram from a dump. `BufRead::lines()` (a `String` per key) and the `crc16` crate.
//!
//! ```text
//! cargo run --release --example naive_slots -- keys.txt
//! ```
#![allow(clippy::print_stdout)]
use std::io::BufRead;

fn slot(key: &[u8]) -> usize {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(s) => match key[s + 1..].iter().position(|&b| b == b'}') {
            Some(0) | None => key,
            Some(e) => &key[s + 1..s + 1 + e],
        },
        None => key,
    };
    (crc16::State::<crc16::XMODEM>::calculate(hashed) & 0x3FFF) as usize
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: naive_slots FILE");
    let file = std::fs::File::open(&path).expect("open the dump");
    let mut hist = vec![0u64; 16384];
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { continue };
        hist[slot(line.as_bytes())] += 1;
    }
    let keys: u64 = hist.iter().sum();
    let max = hist.iter().max().copied().unwrap_or(0);
    println!("{keys} keys, busiest slot {max}");
}
