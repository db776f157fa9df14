//! HTML reports of rebalance, plan and simulate: structure checked against the JSON report,
//! and rendered by a real browser.

use super::support::{assert_renders, keyplan};
use serde_json::Value;
use std::path::Path;

/// `exit`: the status the command exits with on `args` (1: a plan or a warning to act on).
fn run_both(args: &[&str], dir: &Path, name: &str, exit: i32) -> (Value, String) {
    let json = keyplan()
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&json.stderr)));
    let html = dir.join(format!("{name}.html"));
    let out = keyplan()
        .args(args)
        .args(["--format", "html", "-o"])
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(exit),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "-o writes nothing to stdout");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.starts_with("<!doctype html>"));
    assert!(text.trim_end().ends_with("</html>"));
    // Self-contained: no scripts, no external resources.
    assert!(!text.contains("<script"));
    assert!(!text.contains("http://") && !text.contains("https://"));
    (v, text)
}

fn rebalance_report_matches_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "rebalance",
        "--preview",
        "--masters",
        "3",
        "--add-node",
        "10.0.0.4:7000",
        "--keys",
        "examples/app.keys",
    ];
    let (v, text) = run_both(&args, dir.path(), "rebalance", 0);
    // Two slot maps (before and after) and the node bars.
    assert_eq!(text.matches("aria-label=\"slot owners").count(), 2);
    assert!(text.contains("aria-label=\"slots and keys per node before and after\""));
    // One legend entry and one bar group per node; one table row per move.
    let nodes = v["nodes"].as_array().unwrap();
    for n in nodes {
        let name = n["name"].as_str().unwrap();
        assert!(text.contains(&format!("</i>{name}</span>")), "{name}");
        let keys = n["after"]["keys"].as_u64().unwrap();
        assert!(
            text.contains(&format!("keys after {keys} (")),
            "{name} {keys}"
        );
    }
    let moves = v["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 3);
    for m in moves {
        assert!(text.contains(&format!(
            "<code>{}</code>",
            crate::support::ranges_text(&m["slot_ranges"])
        )));
    }
    assert!(text.contains(&format!("<b>{}</b>", v["keys_moved"])));
    // Every slot that moves is marked on the after map.
    let dots = text.matches("fill=\"#000\" fill-opacity=\"0.55\"").count();
    assert_eq!(dots as u64, v["slots_moved"].as_u64().unwrap());
    assert_renders(&dir.path().join("rebalance.html"), dir.path());
}

fn plan_report_matches_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let (v, text) = run_both(
        &["plan", "--scheme", "examples/plan/shop.yaml"],
        dir.path(),
        "plan",
        1,
    );
    let batches = v["batches"].as_array().unwrap();
    for b in batches {
        assert!(text.contains(&format!("<h2>{} <small>", b["batch"].as_str().unwrap())));
    }
    let with_problem = batches.iter().filter(|b| !b["problem"].is_null()).count();
    // One chart per batch to change, with one point per candidate.
    assert_eq!(
        text.matches("aria-label=\"candidates by round trips and skew\"")
            .count(),
        with_problem
    );
    let points: usize = batches
        .iter()
        .filter(|b| !b["problem"].is_null())
        .map(|b| b["candidates"].as_array().unwrap().len())
        .sum();
    assert_eq!(text.matches("<circle ").count(), points);
    // The recommended rewrites are printed.
    assert!(text.contains("<code>\"order:{&lt;order_id&gt;}:items\"</code>"));
    assert_renders(&dir.path().join("plan.html"), dir.path());
}

fn simulate_report_matches_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let (v, text) = run_both(
        &[
            "simulate",
            "--scheme",
            "examples/keyplan.yaml",
            "--sizes",
            "1,10,100",
        ],
        dir.path(),
        "sweep",
        0,
    );
    let results = v["results"].as_array().unwrap();
    let mut batches: Vec<&str> = results
        .iter()
        .map(|r| r["batch"].as_str().unwrap())
        .collect();
    batches.sort_unstable();
    batches.dedup();
    // Per batch: a latency and a round-trip chart with one line per strategy.
    assert_eq!(
        text.matches("aria-label=\"latency by batch size\"").count(),
        batches.len()
    );
    assert_eq!(text.matches("<polyline ").count(), batches.len() * 2 * 5);
    // Every point carries its exact value.
    let r = &results[0];
    assert!(text.contains(&format!(
        "<title>{}: {} → ",
        r["strategy"].as_str().unwrap(),
        r["size"]
    )));
    let (v, text) = run_both(
        &[
            "simulate",
            "--batches",
            "examples/batches.txt",
            "--client",
            "jedis,redis-py",
        ],
        dir.path(),
        "clients",
        0,
    );
    for r in v["results"].as_array().unwrap() {
        // A batch refused before sending says so instead of a latency.
        let label = if r["round_trips"] == 0 && r["outcome"] != "ok" {
            "refused before sending".to_string()
        } else {
            format!(
                "{:.3} ms · {} round trip(s)",
                r["latency_ms"].as_f64().unwrap(),
                r["round_trips"]
            )
        };
        assert!(text.contains(&label), "{label}");
    }
    assert_renders(&dir.path().join("sweep.html"), dir.path());
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "rebalance_report_matches_the_json",
        rebalance_report_matches_the_json,
    ),
    ("plan_report_matches_the_json", plan_report_matches_the_json),
    (
        "simulate_report_matches_the_json",
        simulate_report_matches_the_json,
    ),
    (
        "enterprise_simulate_speaks_of_shards",
        enterprise_simulate_speaks_of_shards,
    ),
];

/// Under a Redis Enterprise topology the keys of a batch are on shards behind the proxy, as
/// the rest of simulate's output says: its instances line counts shards, not nodes.
fn enterprise_simulate_speaks_of_shards() {
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("enterprise.yaml");
    std::fs::write(&topo, "enterprise:\n  shards: 3\n  hashing: standard\n").unwrap();
    let out = keyplan()
        .args([
            "simulate",
            "--scheme",
            "examples/keyplan.yaml",
            "--topology",
        ])
        .arg(&topo)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let instances: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("over ") && l.contains("generated instances"))
        .collect();
    assert!(!instances.is_empty(), "{text}");
    for l in instances {
        assert!(
            l.contains(" shard(s) on average") && !l.contains("node"),
            "{l}"
        );
    }
    // A cluster keeps its nodes.
    let out = keyplan()
        .args(["simulate", "--scheme", "examples/keyplan.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" node(s) on average"), "{text}");
}
