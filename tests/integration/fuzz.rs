//! Mutated real inputs, every kind keyplan reads: key dumps, schemes, topology files in each
//! format, batch files, MONITOR captures and rules. Each mutation (bytes flipped, inserted,
//! deleted, lines duplicated or cut, the file truncated) is run through the command that reads
//! it, in process: no panic, and an exit status of 0, 1 or 2 with a message on an error.
//!
//! `KEYPLAN_FUZZ_CASES` sets the cases per input kind (64 by default, for CI; the benchmark
//! script runs more).

use crate::support::run_in_process;
use proptest::prelude::*;
use std::path::Path;

pub(crate) fn cases() -> u32 {
    std::env::var("KEYPLAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// One way to damage a file.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    DuplicateLine(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let hostile = prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"\\x".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        Just(b"\0".to_vec()),
        Just(b"4294967295".to_vec()),
        Just(b"-1".to_vec()),
        Just(b"99999999999999999999".to_vec()),
        Just(b": [".to_vec()),
        Just(b"*".to_vec()),
        Just(b"<".to_vec()),
        Just(b"#".to_vec()),
        proptest::collection::vec(any::<u8>(), 1..8),
    ];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), hostile).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(seed: &[u8], ms: &[Mutation]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for m in ms {
        if v.is_empty() {
            break;
        }
        match m {
            Mutation::Flip(i, b) => {
                let i = i % v.len();
                v[i] ^= b | 1;
            }
            Mutation::Insert(i, bytes) => {
                let i = i % (v.len() + 1);
                v.splice(i..i, bytes.iter().copied());
            }
            Mutation::Delete(i, n) => {
                let i = i % v.len();
                let end = (i + n).min(v.len());
                v.drain(i..end);
            }
            Mutation::DuplicateLine(i) => {
                let lines: Vec<&[u8]> = v.split(|&b| b == b'\n').collect();
                let l = lines[i % lines.len()].to_vec();
                let mut out = v.clone();
                out.extend_from_slice(b"\n");
                out.extend_from_slice(&l);
                v = out;
            }
            Mutation::Truncate(i) => {
                let i = i % v.len();
                v.truncate(i);
            }
        }
    }
    v
}

fn seed(path: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    // Small seeds keep each case quick.
    bytes[..bytes.len().min(16 * 1024)].to_vec()
}

/// Writes the mutated file and runs `args` with `{}` replaced by its path.
fn check(name: &str, bytes: &[u8], args: &[&str]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    let path = p.to_str().unwrap();
    let argv: Vec<String> = args.iter().map(|a| a.replace("{}", path)).collect();
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (code, _out, err) = run_in_process(&argv);
    prop_assert!((0..=2).contains(&code), "exit {code}: {err}");
    if code == 2 {
        prop_assert!(
            err.starts_with("error: "),
            "an error without a message: {err:?}"
        );
    }
    Ok(())
}

fn fuzz(name: &str, seed_path: &str, args: &[&str]) {
    let seed = seed(seed_path);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&proptest::collection::vec(mutation(), 1..6), |ms| {
            check(name, &apply(&seed, &ms), args)
        })
        .unwrap_or_else(|e| panic!("{name} from {seed_path}: {e}"));
}

fn mutated_key_dumps() {
    fuzz(
        "dump.keys",
        "examples/app.keys",
        &["analyze", "--quiet", "{}"],
    );
    fuzz(
        "dump.keys",
        "examples/app.keys",
        &["slot", "--counts", "{}"],
    );
}

fn mutated_schemes() {
    fuzz(
        "scheme.yaml",
        "examples/keyplan.yaml",
        &["lint", "--scheme", "{}"],
    );
    fuzz(
        "scheme.yaml",
        "examples/plan/shop.yaml",
        &["plan", "--scheme", "{}"],
    );
    fuzz(
        "scheme.yaml",
        "examples/keyplan.yaml",
        &["simulate", "--scheme", "{}"],
    );
}

fn mutated_topologies() {
    fuzz(
        "t.yml",
        "examples/twemproxy.yml",
        &["slot", "--topology", "{}", "a", "b"],
    );
    fuzz(
        "t.servers",
        "tests/fixtures/ketama.servers",
        &["slot", "--topology", "{}", "a"],
    );
    fuzz(
        "t.yaml",
        "tests/fixtures/spec-keyplan.yaml",
        &["slot", "--topology", "{}", "a"],
    );
    let nodes = "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922\n292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383 [100->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]\ne7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460\n";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nodes.txt");
    std::fs::write(&p, nodes).unwrap();
    fuzz(
        "nodes.txt",
        p.to_str().unwrap(),
        &["rebalance", "--preview", "--topology", "{}"],
    );
}

fn mutated_batches_and_captures() {
    fuzz(
        "b.txt",
        "examples/batches.txt",
        &["simulate", "--batches", "{}"],
    );
    fuzz(
        "cap.txt",
        "tests/fixtures/libraries/rq.monitor",
        &["simulate", "--monitor", "{}", "--strategy", "pipeline"],
    );
    fuzz(
        "cap.txt",
        "tests/fixtures/libraries/dramatiq.monitor",
        &["plan", "--monitor", "{}"],
    );
}

/// Mutated calibration files: refused with a message, or a model whose every prediction is a
/// finite, non-negative number with P50 ≤ P99 (never `inf`, `NaN` or QPS 0 from a file that
/// passed).
fn mutated_calibrations() {
    let seed = seed("examples/calibration-loopback.json");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let batches = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/batches.txt");
    runner
        .run(&proptest::collection::vec(mutation(), 1..4), |ms| {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("cal.json");
            std::fs::write(&p, apply(&seed, &ms)).unwrap();
            let (code, out, err) = run_in_process(&[
                "simulate",
                "--batches",
                batches.to_str().unwrap(),
                "--calibration",
                p.to_str().unwrap(),
                "--concurrency",
                "8",
                "--format",
                "json",
            ]);
            prop_assert!(code == 0 || code == 2, "exit {code}: {err}");
            if code == 2 {
                prop_assert!(err.starts_with("error: "), "{err:?}");
                return Ok(());
            }
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            for r in v["results"].as_array().unwrap() {
                if r["round_trips"].as_u64() == Some(0) {
                    continue;
                }
                let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
                for k in ["qps", "latency_ms", "p50_ms", "p99_ms"] {
                    prop_assert!(f(k).is_finite() && f(k) >= 0.0, "{k} = {}: {r}", r[k]);
                }
                prop_assert!(f("qps") > 0.0, "{r}");
                prop_assert!(f("p50_ms") <= f("p99_ms") + 1e-9, "{r}");
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("calibration: {e}"));
}

fn mutated_rules() {
    let dir = tempfile::tempdir().unwrap();
    let seed = seed("rules/KP201-low-cardinality-hash-tag.yml");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&proptest::collection::vec(mutation(), 1..6), |ms| {
            std::fs::write(
                dir.path().join("KP201-low-cardinality-hash-tag.yml"),
                apply(&seed, &ms),
            )
            .unwrap();
            let (code, _out, err) =
                run_in_process(&["rules", "test", "--rules", dir.path().to_str().unwrap()]);
            prop_assert!((0..=2).contains(&code), "exit {code}: {err}");
            Ok(())
        })
        .unwrap();
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    ("mutated_calibrations", mutated_calibrations),
    ("mutated_key_dumps", mutated_key_dumps),
    ("mutated_schemes", mutated_schemes),
    ("mutated_topologies", mutated_topologies),
    ("mutated_batches_and_captures", mutated_batches_and_captures),
    ("mutated_rules", mutated_rules),
];
