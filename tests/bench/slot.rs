//! Benchmarks of the slot core (criterion): the CRC16 variants, and the bulk slot histogram
//! on generated dumps, against what a user would otherwise write (the `crc16` crate, a naive
//! `lines()` loop).
//!
//! ```text
//! cargo bench --bench slot                       # 10M keys (KEYPLAN_BENCH_KEYS to change)
//! ```
//! After criterion's own report, a summary prints each bulk variant as a ratio of the naive
//! loop and of `cat`-like reading (one pass of `read` into a reused buffer), measured in the
//! same run.
#![allow(clippy::print_stdout)]

#[path = "../common/keygen.rs"]
mod keygen;

use criterion::{BenchmarkId, Criterion, Throughput};
use keyplan::analyze::{AnalyzeConfig, Analyzer};
use keyplan::keys::parallel::{ChunkSink, RawChunk, par_read, par_read_file};
use keyplan::keys::{InputFormat, ReadOptions, Record};
use keyplan::slot::bulk::{BulkScanner, LineCounts, SimdPath};
use keyplan::slot::{
    SLOT_COUNT, crc16, crc16_bitwise, crc16_clmul, crc16_table, hash_tag, key_slot,
};
use keyplan::topology::{SlotMap, Topology};
use std::hint::black_box;
use std::io::{BufRead, Read, Write};
use std::time::{Duration, Instant};

fn key_count() -> usize {
    std::env::var("KEYPLAN_BENCH_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000)
}

type CrcFn = fn(&[u8]) -> u16;

fn crate_crc(data: &[u8]) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(data)
}

fn bench_crc(c: &mut Criterion) {
    let dump = keygen::raw_dump(200_000, 7);
    let keys: Vec<&[u8]> = dump
        .split(|&b| b == b'\n')
        .filter(|k| !k.is_empty())
        .collect();
    let bytes: usize = keys.iter().map(|k| k.len()).sum();
    let kib: Vec<Vec<u8>> = (0..256u32)
        .map(|i| (0..1024u32).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect();
    let mut variants: Vec<(&str, CrcFn)> = vec![
        ("crc16-crate", crate_crc),
        ("bitwise", crc16_bitwise),
        ("table-slice16", crc16_table),
        ("dispatch", crc16),
    ];
    if crc16_clmul(b"probe").is_some() {
        variants.push(("pclmul", |d| crc16_clmul(d).unwrap_or(0)));
    }
    let mut g = c.benchmark_group("crc16/keys");
    g.throughput(Throughput::Bytes(bytes as u64));
    for (name, f) in &variants {
        g.bench_function(*name, |b| {
            b.iter(|| {
                let mut acc = 0u16;
                for k in &keys {
                    acc ^= f(black_box(k));
                }
                acc
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("crc16/1KiB");
    g.throughput(Throughput::Bytes((kib.len() * 1024) as u64));
    for (name, f) in &variants {
        g.bench_function(*name, |b| {
            b.iter(|| kib.iter().fold(0u16, |a, k| a ^ f(black_box(k))))
        });
    }
    g.finish();
}

/// The naive loop: `lines()` allocating a `String` per key, `crc16` crate.
fn naive(dump: &[u8]) -> u64 {
    let mut hist = vec![0u64; SLOT_COUNT];
    for line in dump.lines() {
        let line = line.expect("utf-8");
        hist[(crate_crc(hash_tag(line.as_bytes())) & 0x3FFF) as usize] += 1;
    }
    hist.iter().sum()
}

/// One reused buffer (`read_until`), `crc16` crate.
fn reused_buffer(dump: &[u8]) -> u64 {
    let mut hist = vec![0u64; SLOT_COUNT];
    let mut r = std::io::BufReader::new(dump);
    let mut line = Vec::new();
    while r.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
        let k = line.strip_suffix(b"\n").unwrap_or(&line);
        hist[(crate_crc(hash_tag(k)) & 0x3FFF) as usize] += 1;
        line.clear();
    }
    hist.iter().sum()
}

fn scanner_1t(dump: &[u8], mut sc: BulkScanner) -> u64 {
    let mut hist = vec![0u64; SLOT_COUNT];
    // Chunks of ~1 MiB that end on line ends, as the reader produces them.
    let mut rest = dump;
    while !rest.is_empty() {
        let end = if rest.len() <= 1 << 20 {
            rest.len()
        } else {
            (1 << 20) + memchr_pos(&rest[1 << 20..])
        };
        sc.count_raw_lines(&rest[..end], &mut hist);
        rest = &rest[end..];
    }
    hist.iter().sum()
}

fn memchr_pos(s: &[u8]) -> usize {
    s.iter()
        .position(|&b| b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(s.len())
}

struct Hist(Vec<u64>, BulkScanner);
impl ChunkSink for Hist {
    fn record(&mut self, rec: &Record<'_>) {
        self.0[key_slot(rec.key) as usize] += 1;
    }
    fn raw_lines(&mut self, c: &mut RawChunk<'_>) -> Option<LineCounts> {
        Some(
            self.1
                .count_raw_lines_limited(c.data, &mut self.0, c.max_line, &mut c.long),
        )
    }
}

fn sinks(n: usize) -> Vec<Hist> {
    (0..n)
        .map(|_| Hist(vec![0; SLOT_COUNT], BulkScanner::new()))
        .collect()
}

fn opts() -> ReadOptions {
    ReadOptions {
        format: InputFormat::Raw,
        ..ReadOptions::default()
    }
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn stream_2t(dump: &[u8]) -> u64 {
    let mut s = sinks(threads());
    par_read(dump, &opts(), &mut s, None).expect("read").keys
}

/// The full `analyze` pass (slots, tags, patterns) on all cores, from the file.
fn analyze_full(file: &std::fs::File) -> u64 {
    let topo = Topology::Cluster(SlotMap::from_masters(3).expect("3 masters"));
    let config = AnalyzeConfig::default();
    let mut workers: Vec<Analyzer<'_>> = (0..threads())
        .map(|_| Analyzer::new(&topo, &config))
        .collect();
    let summary = par_read_file(file, &opts(), &mut workers, None).expect("read");
    let mut it = workers.into_iter();
    let mut total = it.next().expect("a worker");
    for w in it {
        total.merge(&w);
    }
    let report = total.finish(&summary, String::new(), &config);
    report.totals.keys
}

fn mapped(file: &std::fs::File) -> u64 {
    let mut s = sinks(threads());
    par_read_file(file, &opts(), &mut s, None)
        .expect("read")
        .keys
}

/// `cat file > /dev/null` in-process: read the file through a reused 128 KiB buffer.
fn cat_like(path: &std::path::Path) -> u64 {
    let mut f = std::fs::File::open(path).expect("open");
    let mut buf = vec![0u8; 128 << 10];
    let mut n = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => return n,
            Ok(k) => n += k as u64,
        }
    }
}

fn bench_bulk(c: &mut Criterion) {
    let n = key_count();
    let dump = keygen::raw_dump(n, 0x5EED_2026);
    let mut tmp = tempfile::NamedTempFile::new().expect("temp file");
    tmp.write_all(&dump).expect("write dump");
    let path = tmp.path().to_path_buf();
    let file = std::fs::File::open(&path).expect("reopen");
    let mut g = c.benchmark_group("bulk-slot-histogram");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("naive-lines-crc16-crate", n), |b| {
        b.iter(|| naive(&dump))
    });
    g.bench_function(BenchmarkId::new("reused-buffer-crc16-crate", n), |b| {
        b.iter(|| reused_buffer(&dump))
    });
    g.bench_function(BenchmarkId::new("keyplan-portable-1-thread", n), |b| {
        b.iter(|| scanner_1t(&dump, BulkScanner::portable()))
    });
    g.bench_function(BenchmarkId::new("keyplan-fused-1-thread", n), |b| {
        b.iter(|| scanner_1t(&dump, BulkScanner::new()))
    });
    g.bench_function(BenchmarkId::new("keyplan-fused-avx2-1-thread", n), |b| {
        b.iter(|| scanner_1t(&dump, BulkScanner::with_path(SimdPath::Avx2)))
    });
    g.bench_function(BenchmarkId::new("keyplan-stream-all-cores", n), |b| {
        b.iter(|| stream_2t(&dump))
    });
    g.bench_function(BenchmarkId::new("keyplan-file-all-cores", n), |b| {
        b.iter(|| mapped(&file))
    });
    g.bench_function(BenchmarkId::new("keyplan-analyze-full-all-cores", n), |b| {
        b.iter(|| analyze_full(&file))
    });
    g.bench_function(BenchmarkId::new("cat-like-read", n), |b| {
        b.iter(|| cat_like(&path))
    });
    g.finish();

    // Ratios measured side by side (median of 5).
    let median = |f: &mut dyn FnMut() -> u64| {
        let mut t: Vec<f64> = (0..5)
            .map(|_| {
                let s = Instant::now();
                black_box(f());
                s.elapsed().as_secs_f64()
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[2]
    };
    let cat = median(&mut || cat_like(&path));
    let naive_t = median(&mut || naive(&dump));
    let rows: Vec<(&str, f64)> = vec![
        ("naive lines() + String + crc16 crate", naive_t),
        (
            "reused buffer + crc16 crate",
            median(&mut || reused_buffer(&dump)),
        ),
        (
            "keyplan portable, 1 thread",
            median(&mut || scanner_1t(&dump, BulkScanner::portable())),
        ),
        (
            "keyplan fused SIMD (best path), 1 thread",
            median(&mut || scanner_1t(&dump, BulkScanner::new())),
        ),
        (
            "keyplan fused SIMD, AVX2 path, 1 thread",
            median(&mut || scanner_1t(&dump, BulkScanner::with_path(SimdPath::Avx2))),
        ),
        (
            "keyplan stream, all cores",
            median(&mut || stream_2t(&dump)),
        ),
        (
            "keyplan file (mmap), all cores",
            median(&mut || mapped(&file)),
        ),
    ];
    let keys_crc = median(&mut || {
        dump.split(|&b| b == b'\n')
            .fold(0u64, |a, k| a ^ crate_crc(k) as u64)
    });
    let keys_fast = median(&mut || {
        dump.split(|&b| b == b'\n')
            .fold(0u64, |a, k| a ^ crc16(k) as u64)
    });
    println!(
        "\n== bulk slot histogram, {n} keys, {} MB ({} threads) ==",
        dump.len() >> 20,
        threads()
    );
    println!(
        "{:<40} {:>9} {:>10} {:>12}",
        "variant", "seconds", "× naive", "× cat-read"
    );
    println!(
        "{:<40} {:>9.3} {:>10} {:>12.2}",
        "cat-like read (128 KiB buffer)", cat, "", 1.0
    );
    for &(name, t) in &rows {
        println!(
            "{name:<40} {t:>9.3} {:>10.2} {:>12.2}",
            naive_t / t,
            t / cat
        );
    }
    println!(
        "CRC only, split keys: crc16 crate {keys_crc:.3}s, keyplan {keys_fast:.3}s ({:.2}× faster)",
        keys_crc / keys_fast
    );
    let bulk = rows[5].1;
    let full = rows[6].1;
    println!(
        "analyze (full) is {:.2}× faster than the naive slot-only loop and takes {:.2}× the bulk slot histogram",
        naive_t / full,
        full / bulk
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_crc(&mut c);
    bench_bulk(&mut c);
    c.final_summary();
}
