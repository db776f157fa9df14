//! Memory bounded by design: `simulate --monitor` and `plan --monitor` on a capture of many
//! distinct batches keep the memory of one batch (plus a fixed spool), whatever the capture's
//! length. Measured with a
//! counting allocator, so this test has its own binary (the allocator sees every thread of the
//! process; no other test may run beside it: the tests here take a lock).
#![allow(clippy::print_stderr)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes held and their peak.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = HELD.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; only counters are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout is passed on as it is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc` and `dealloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size > layout.size() {
                grew(new_size - layout.size());
            } else {
                HELD.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Held by each test: the counters see the whole process, so the tests run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A capture of `n` distinct batches: MGETs of 2–6 keys from 50 clients, every tenth a
/// MULTI block, and single-key commands between them.
fn capture(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = b"OK\n".to_vec();
    for i in 0..n {
        let client = 40000 + i % 50;
        if i % 10 == 0 {
            for cmd in [
                "\"MULTI\"".to_string(),
                format!("\"SET\" \"order:{i}\" \"1\""),
                format!("\"INCR\" \"stock:{}\"", next() % 1000),
                "\"EXEC\"".to_string(),
            ] {
                writeln!(out, "1796145909.{i:06} [0 127.0.0.1:{client}] {cmd}").unwrap();
            }
            continue;
        }
        let mut line = format!("1796145909.{i:06} [0 127.0.0.1:{client}] \"MGET\"");
        for _ in 0..2 + next() % 5 {
            line.push_str(&format!(" \"user:{}:profile\"", next() % 1_000_000));
        }
        writeln!(out, "{line}").unwrap();
        writeln!(
            out,
            "1796145909.{i:06} [0 127.0.0.1:{client}] \"GET\" \"x\""
        )
        .unwrap();
    }
    out
}

/// Runs `keyplan COMMAND FLAG INPUT --format FORMAT -o OUT EXTRA…` in this process (`FLAG`:
/// `--monitor` or `--batches`) and checks that it wrote more than `min_written` bytes while the
/// heap grew by less than 12 MiB at its peak. Returns its exit code, its stderr and the file it
/// wrote.
fn run_flat(
    command: &str,
    flag: &str,
    capture: &std::path::Path,
    format: &str,
    extra: &[&str],
    out: &std::path::Path,
    min_written: usize,
) -> (i32, String, Vec<u8>) {
    let mut args: Vec<String> = vec![command.into(), flag.into()];
    args.push(capture.display().to_string());
    args.extend(["--format".into(), format.into(), "-o".into()]);
    args.push(out.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, stderr, grew_by) = peak_of(&args);
    let written = std::fs::read(out).unwrap_or_default();
    eprintln!(
        "{command} --format {format} {}: {} MB written, peak heap {:.1} MB",
        extra.join(" "),
        written.len() >> 20,
        grew_by as f64 / (1 << 20) as f64
    );
    assert!(
        written.len() > min_written,
        "{} bytes written: {stderr}",
        written.len()
    );
    assert!(
        grew_by < 12 << 20,
        "{command} --format {format}: {grew_by} bytes of heap at the peak for {} bytes written",
        written.len()
    );
    (status, stderr, written)
}

/// `plan --monitor` keeps what completes the plans (counts per shape), not the batches or the
/// plans: they wait in a spool.
#[test]
fn plan_keeps_no_plan_in_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const BATCHES: usize = 30_000;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.monitor");
    std::fs::write(&cap, capture(BATCHES)).unwrap();
    for format in ["json", "table", "html"] {
        let out = dir.path().join(format!("plan.{format}"));
        // Kept whole, the batches and their plans took about 2 KB each (60 MB here).
        let (status, stderr, written) =
            run_flat("plan", "--monitor", &cap, format, &[], &out, 10 << 20);
        assert_eq!(status, 1, "{stderr}");
        if format == "json" {
            let doc: serde_json::Value = serde_json::from_slice(&written).unwrap();
            assert!(doc["observed"].as_array().unwrap().len() > BATCHES / 2);
        }
    }
}

#[test]
fn simulate_keeps_the_memory_of_one_batch() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const BATCHES: usize = 12_000;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.monitor");
    std::fs::write(&cap, capture(BATCHES)).unwrap();
    for (format, extra) in [
        ("json", &[][..]),
        ("table", &[][..]),
        ("html", &[][..]),
        ("json", &["--client", "all"][..]),
    ] {
        let out = dir.path().join(format!("report.{format}"));
        // Built whole, the report took about 4 KB a batch (47 MB here) and more than the
        // output's size; streamed, it takes the spool's 4 MiB and one batch.
        let (status, stderr, written) =
            run_flat("simulate", "--monitor", &cap, format, extra, &out, 20 << 20);
        assert_eq!(status, 0, "{stderr}");
        assert!(stderr.contains(&format!("{BATCHES} batches")), "{stderr}");
        if format == "json" {
            let doc: serde_json::Value = serde_json::from_slice(&written).unwrap();
            assert_eq!(doc["schema_version"], 2);
            assert_eq!(doc["batches"].as_array().unwrap().len(), BATCHES);
            let per_batch = if extra.is_empty() { 5 } else { 11 };
            assert!(doc["results"].as_array().unwrap().len() >= BATCHES * per_batch);
        }
    }
}

/// Runs `keyplan ARGS…` in this process: its exit code, stderr, and how far the heap grew.
fn peak_of(args: &[&str]) -> (i32, String, usize) {
    let args: Vec<String> = std::iter::once("keyplan")
        .chain(args.iter().copied())
        .map(String::from)
        .collect();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let status = keyplan::cli::run(args.iter(), &mut stdout, &mut stderr);
    let grew_by = PEAK.load(Ordering::Relaxed) - before;
    eprintln!(
        "{}: peak heap {:.1} MB",
        args.join(" "),
        grew_by as f64 / (1 << 20) as f64
    );
    (
        status as i32,
        String::from_utf8_lossy(&stderr).into_owned(),
        grew_by,
    )
}

/// A batch file of many lines is read a line at a time: the heap holds one batch, not the
/// file's (one-word lines took about 900 bytes each when the file was parsed whole).
#[test]
fn a_long_batch_file_keeps_the_memory_of_one_batch() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batches.txt");
    let mut text = String::new();
    for i in 0..30_000 {
        text.push_str(&format!("MGET a:{i} b:{i}\n"));
    }
    std::fs::write(&file, text).unwrap();
    for command in ["simulate", "plan"] {
        let out = dir.path().join(format!("{command}.json"));
        let (status, stderr, _) = run_flat(command, "--batches", &file, "json", &[], &out, 1 << 20);
        assert!(status <= 1, "{command}: {stderr}");
    }
}

/// A scheme batch of 20,000 keys is judged over generated instances one at a time, and a
/// scheme of thousands of keys, or of a pattern with hundreds of placeholders, is planned on a
/// bounded number of generated keys: the heap stays far from what the instances or keys
/// would take all at once (1.2 GB, 4 GB and 450 MB before).
#[test]
fn large_schemes_stay_within_bounded_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let big_batch = write(
        "batch.yaml",
        "version: 1\nvars:\n  a: {kind: int, cardinality: 1000000}\nkeys:\n  k: { pattern: \"k:<a>\" }\nbatches:\n  b: { command: mget, keys: [k], size: 20000 }\n".into(),
    );
    let mut many =
        String::from("version: 1\nvars:\n  a: {kind: int, cardinality: 1000000}\nkeys:\n");
    for i in 0..5000 {
        many.push_str(&format!("  k{i}: {{ pattern: \"k{i}:<a>\" }}\n"));
    }
    many.push_str("batches:\n  b: { command: mget, keys: [k0, k1, k2], same: [a] }\n");
    let many_keys = write("many.yaml", many);
    let mut wide = String::from("version: 1\nvars:\n");
    for i in 0..1000 {
        wide.push_str(&format!("  v{i}: {{kind: int, cardinality: 1000}}\n"));
    }
    let pattern: Vec<String> = (0..1000).map(|i| format!("<v{i}>")).collect();
    wide.push_str(&format!(
        "keys:\n  k: {{ pattern: \"{}\" }}\nbatches:\n  b: {{ command: mget, keys: [k, k], same: [v0] }}\n",
        pattern.join(":")
    ));
    let wide_key = write("wide.yaml", wide);
    // A map of 16384 masters and 54,000 replicas (parsed and looked up by id and address, not
    // by a scan per node: seconds, not minutes).
    let mut nodes = String::new();
    let id = |p: &str, i: usize| format!("{p}{i:039}");
    for i in 0..16384 {
        nodes.push_str(&format!(
            "{} 10.0.{}.{}:7000@17000 master - 0 0 1 connected {i}\n",
            id("a", i),
            i / 256,
            i % 256
        ));
    }
    for j in 0..54_000 {
        nodes.push_str(&format!(
            "{} 11.{}.{}.{}:7000@17000 slave {} 0 0 1 connected\n",
            id("b", j),
            j / 65536,
            (j / 256) % 256,
            j % 256,
            id("a", j % 16384)
        ));
    }
    let big_map = write("nodes.txt", nodes);
    let batches = write("batches.txt", "MGET a b c\nPIPELINE GET x; GET y\n".into());
    for (args, limit_mb) in [
        (
            vec![
                "simulate",
                "--batches",
                &batches,
                "--client",
                "all",
                "--topology",
                &big_map,
                "--format",
                "json",
            ],
            150,
        ),
        (
            vec!["simulate", "--scheme", &big_batch, "--format", "json"],
            150,
        ),
        (
            vec!["plan", "--scheme", &many_keys, "--format", "json"],
            400,
        ),
        (vec!["plan", "--scheme", &wide_key, "--format", "json"], 100),
    ] {
        let (status, stderr, grew_by) = peak_of(&args);
        assert!(status <= 1, "{args:?}: {stderr}");
        assert!(
            grew_by < limit_mb << 20,
            "{args:?}: {grew_by} bytes of heap at the peak"
        );
    }
}
