//! The load model against a real 3-master cluster: `bench --calibrate`, then batches the
//! calibration never ran (MGET of 10, 50 and 200 keys, a pipeline of 30 GETs) benched with every
//! strategy at concurrency 1 and 16, predictions next to measurements. Tolerances are the
//! model's stated ones, checked over the whole table (a noisy machine moves single rows).
//!
//! A calibration only speaks for the machine as it was while it ran. On a shared or virtual
//! machine the speed of the two cores drifts by 2–4× for seconds at a time (other guests,
//! other tests), and no model can predict that. So the machine is calibrated again after each
//! round's measurements: a round whose two calibrations disagree (the machine changed speed
//! under it) proves nothing either way and is not counted. The test fails when a steady round
//! misses the tolerances and no steady round meets them, and also when no round at all was
//! steady (then it says the machine was too unsteady to judge the model).

use crate::cluster::Cluster;
use crate::support::keyplan;

fn batches() -> String {
    let keys = |n: usize| {
        (0..n)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let gets: Vec<String> = (0..30).map(|i| format!("GET p{i}")).collect();
    format!(
        "MGET {}\nMGET {}\nMGET {}\nPIPELINE {}\n",
        keys(10),
        keys(50),
        keys(200),
        gets.join("; ")
    )
}

/// Rounds at most; each costs about 35 s.
const ROUNDS: usize = 6;

fn calibrated_predictions_match_a_real_cluster() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let dir = tempfile::tempdir().unwrap();
    // A fresh cluster runs slower for its first seconds: warm it up first.
    warm_up(&url, &dir.path().join("warm-up.json"));
    let mut before = calibrate(&url, &dir.path().join("cal0.json"));
    let (mut failures, mut unsteady) = (Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let used = before.0.clone();
        let verdict = compare(&url, &used, dir.path());
        let after = calibrate(&url, &dir.path().join(format!("cal{round}.json")));
        let (steady, drift) = speed_drift(&before.1, &after.1);
        before = after;
        eprintln!("round {round}, calibrations before and after: {drift}");
        if !steady {
            eprintln!("round {round} not counted: the machine changed speed under it");
            unsteady.push(format!("round {round}: {drift}"));
            continue;
        }
        match verdict {
            Ok(kept) => {
                record(&url, &used, &kept);
                return;
            }
            Err(e) => {
                eprintln!("round {round} failed:\n{e}");
                failures.push(e);
            }
        }
    }
    if failures.is_empty() {
        panic!(
            "the machine was too unsteady to judge the load model: in each of {ROUNDS} rounds the \
             calibrations before and after disagreed:\n{}",
            unsteady.join("\n")
        );
    }
    panic!("no steady round held:\n{}", failures.join("\n\n"));
}

/// `bench --calibrate` into `path`: the file and its JSON.
fn calibrate(url: &str, path: &std::path::Path) -> (std::path::PathBuf, serde_json::Value) {
    calibration_run(url, path, "0.4");
    let c: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(c["schema_version"], 1);
    assert_eq!(c["kind"], "keyplan-calibration");
    // The calibration ran only its own shapes.
    for p in c["points"].as_array().unwrap() {
        assert!(p["batch"].as_str().unwrap().contains("cal:"), "{p}");
    }
    (path.to_path_buf(), c)
}

/// A short calibration whose figures are thrown away.
fn warm_up(url: &str, path: &std::path::Path) {
    calibration_run(url, path, "0.2");
}

fn calibration_run(url: &str, path: &std::path::Path, seconds: &str) {
    let out = keyplan()
        .args(["bench", "--calibrate", "--cluster", url, "--allow-writes"])
        .args(["--duration", seconds, "-o"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether two calibrations of the same cluster agree (no more than a quarter of the
/// micro-benchmarks measured at speeds 1.3× apart or more), and how far apart they are.
fn speed_drift(a: &serde_json::Value, b: &serde_json::Value) -> (bool, String) {
    let (pa, pb) = (
        a["points"].as_array().unwrap(),
        b["points"].as_array().unwrap(),
    );
    assert_eq!(pa.len(), pb.len());
    let mut ratios: Vec<f64> = pa
        .iter()
        .zip(pb)
        .map(|(x, y)| y["qps"].as_f64().unwrap() / x["qps"].as_f64().unwrap().max(1e-9))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let off = ratios
        .iter()
        .filter(|r| !(1.0 / 1.3..=1.3).contains(*r))
        .count();
    let text = format!(
        "{off} of {} micro-benchmarks 1.3× apart or more; after/before from {:.2}× to {:.2}×, median {:.2}×",
        ratios.len(),
        ratios[0],
        ratios[ratios.len() - 1],
        ratios[ratios.len() / 2]
    );
    (off * 4 <= ratios.len(), text)
}

/// One round's measurements: bench the batches at concurrency 1 and 16 with the calibration
/// `cal`, compare (see [`crate::modelfit::judge`]). The measured results, when they hold.
fn compare(
    url: &str,
    cal: &std::path::Path,
    dir: &std::path::Path,
) -> Result<Vec<(&'static str, Vec<serde_json::Value>)>, String> {
    let file = dir.join("batches.txt");
    std::fs::write(&file, batches()).unwrap();
    let mut rows = Vec::new();
    let mut kept = Vec::new();
    for c in ["1", "16"] {
        // Each cell is measured twice and the faster run kept: other work on the machine only
        // ever slows a run down, so the best of two is the closer measure of what the cluster
        // can do (one 0.4 s run was at times 1.5–2× slow while its neighbours were not).
        let runs: Vec<Vec<serde_json::Value>> = (0..2).map(|_| bench(url, &file, c, cal)).collect();
        let results: Vec<serde_json::Value> = runs[0]
            .iter()
            .zip(&runs[1])
            .map(|(a, b)| {
                assert_eq!((&a["batch"], &a["strategy"]), (&b["batch"], &b["strategy"]));
                let qps = |r: &serde_json::Value| r["measured"]["qps"].as_f64().unwrap();
                if qps(b) > qps(a) {
                    b.clone()
                } else {
                    a.clone()
                }
            })
            .collect();
        for r in &results {
            rows.push(crate::modelfit::Row {
                concurrency: c.to_string(),
                batch: r["batch"].as_str().unwrap().to_string(),
                strategy: r["strategy"].as_str().unwrap().to_string(),
                predicted: r["predicted"]["qps"].as_f64().unwrap(),
                measured: r["measured"]["qps"].as_f64().unwrap(),
            });
        }
        kept.push((c, results));
    }
    let table = crate::modelfit::judge(&rows)?;
    eprintln!("{table}");
    Ok(kept)
}

/// With `KEYPLAN_LOADMODEL_RECORD=DIR`, a round that held is kept as the recording the default
/// test run checks the model on (`tests/fixtures/loadmodel/`): the calibration, the cluster's
/// slot map, the batches as bench ran them (under its prefix) and the measured results.
fn record(url: &str, cal: &std::path::Path, kept: &[(&'static str, Vec<serde_json::Value>)]) {
    let Some(dir) = std::env::var_os("KEYPLAN_LOADMODEL_RECORD") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(cal, dir.join("calibration.json")).unwrap();
    let prefixed: String = batches()
        .lines()
        .map(|l| {
            let mut words = l.split(' ');
            let head = words.next().unwrap();
            let rest: Vec<String> = words
                .map(|w| {
                    let (w, semi) = w.strip_suffix(';').map_or((w, ""), |w| (w, ";"));
                    match w {
                        "GET" => format!("{w}{semi}"),
                        _ => format!("keyplan:bench:{w}{semi}"),
                    }
                })
                .collect();
            format!("{head} {}\n", rest.join(" "))
        })
        .collect();
    std::fs::write(dir.join("batches.txt"), prefixed).unwrap();
    let port = url.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    let nodes = match crate::support::connect_port(port)
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    {
        crate::support::Reply::Bulk(Some(b)) => b,
        other => panic!("CLUSTER NODES replied {other:?}"),
    };
    std::fs::write(dir.join("nodes.txt"), nodes).unwrap();
    for (c, results) in kept {
        let measured: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "batch": r["batch"],
                    "strategy": r["strategy"],
                    "measured_qps": r["measured"]["qps"],
                })
            })
            .collect();
        std::fs::write(
            dir.join(format!("measured-c{c}.json")),
            serde_json::to_string_pretty(&measured).unwrap() + "\n",
        )
        .unwrap();
    }
    eprintln!("recorded the round in {}", dir.display());
}

/// `bench` of the batches in `file` at concurrency `c` with the calibration `cal`: its results.
fn bench(
    url: &str,
    file: &std::path::Path,
    c: &str,
    cal: &std::path::Path,
) -> Vec<serde_json::Value> {
    let out = keyplan()
        .args(["bench", "--cluster", url, "--allow-writes", "--batches"])
        .arg(file)
        .args(["--duration", "0.4", "--concurrency", c, "--format", "json"])
        .arg("--calibration")
        .arg(cal)
        .output()
        .unwrap();
    assert!(
        out.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["results"].as_array().unwrap().clone()
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[(
    "calibrated_predictions_match_a_real_cluster",
    calibrated_predictions_match_a_real_cluster,
)];
