//! `keyplan code` scored against the recorded ground truth (`tests/fixtures/code/recorded/`):
//! what real packages' own test suites sent to a real redis-server, site by site (recorded by
//! `tests/corpus/`, which CI does not run). The scorer, `tests/corpus/score.py`, fetches each
//! package's pinned sdist or npm tarball (pip download / npm pack, checked against the recorded
//! sha256; cached in KEYPLAN_CORPUS_CACHE or a temporary directory), runs this build's
//! `keyplan code` on it and counts. Needs python3 with venv, pip and npm, and the registries;
//! opt in with KEYPLAN_CORPUS=1 (it takes a few minutes, most of them fetching).
use serde_json::Value;

pub const TESTS: &[crate::support::Test] = &[("recorded_corpus", recorded_corpus)];

/// Floors per half and language, as fractions: recall, precision, verdicts, key templates. Python
/// and JavaScript's are the figures `keyplan code` (its default engine, the model since 3d265d0)
/// had on those recordings (44), less one point, so that a change may not lose ground; raise them
/// as the figures rise. Ruby's (Debian's gems, redis-rb) came later and are kept apart: the
/// figures measured when they were added, less one point (precision: 0.95, as for the others, with
/// 22 and 2 sites reported). Go (Debian's golang-*-dev packages, redigo) is measured and printed
/// by score.py but not floored: one package has batch sites (4), none found yet. The held-out
/// half is measured here too; its misses are never printed. A site is matched by either its
/// opening or its sending line.
const PYTHON_JS: &[&str] = &["python", "javascript"];
const FLOORS: [(&[&str], &str, [f64; 4]); 4] = [
    // measured on 44 recordings: 179/196 found, 192/201 real, 148/179 verdicts, 163.4/193
    // templates (a batch filled in a loop over a runtime list is `depends`, never right here)
    (PYTHON_JS, "dev", [0.90, 0.95, 0.82, 0.84]),
    // measured on 44 recordings: 112/173 found, 107/111 real, 59/112 verdicts, 73.4/167 templates
    (PYTHON_JS, "held-out", [0.64, 0.95, 0.52, 0.43]),
    // 4 packages with sites: 23/26 found, 23/23 real, 14/23 verdicts, 16.4/26 templates (the
    // MSET of a list a loop fills, found since, is `depends`: the suite saw it cross-slot)
    (&["ruby"], "dev", [0.87, 0.95, 0.60, 0.62]),
    // 5 packages with sites: 2/28 found, 2/2 real, 0/2 verdicts, 1.0/27 templates
    (&["ruby"], "held-out", [0.06, 0.95, 0.0, 0.02]),
];

/// Batches recorded cross-slot that keyplan calls one slot, over the whole corpus: 3 with the
/// per-file readers (saq's BLMOVE and two of its pipelines); 12 with the model engine as it
/// stands (none on the development half: all on the held-out half, whose sites are not read).
/// The goal is none; this may only fall.
const MAX_ONE_SLOT_FOR_CROSS: u64 = 12;

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 1.0 } else { a / b }
}

fn recorded_corpus() {
    if std::env::var_os("KEYPLAN_CORPUS").is_none() {
        crate::support::not_run(
            "KEYPLAN_CORPUS is not set (the recorded corpus fetches its packages from PyPI and npm)",
        );
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let cache = std::env::var_os("KEYPLAN_CORPUS_CACHE")
        .map_or_else(|| tmp.path().join("cache"), std::path::PathBuf::from);
    let figures = tmp.path().join("figures.json");
    let out = std::process::Command::new("python3")
        .arg(root.join("tests/corpus/score.py"))
        .arg("--keyplan")
        .arg(assert_cmd::cargo::cargo_bin("keyplan"))
        .arg("--cache")
        .arg(&cache)
        .arg("--json")
        .arg(&figures)
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "score.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&figures).unwrap()).unwrap();
    let packages = v.as_object().unwrap();
    assert!(
        packages.len() >= 20,
        "only {} packages scored",
        packages.len()
    );
    // The worst error: a batch recorded cross-slot that keyplan calls one slot.
    let worst: Vec<(&String, u64)> = packages
        .iter()
        .map(|(name, p)| (name, p["worst"].as_u64().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let total: u64 = worst.iter().map(|(_, n)| n).sum();
    assert!(
        total <= MAX_ONE_SLOT_FOR_CROSS,
        "one slot said of {total} batches recorded cross-slot (at most {MAX_ONE_SLOT_FOR_CROSS}): {worst:?}"
    );
    for (langs, half, floors) in FLOORS {
        let sum = |f: &str| -> f64 {
            packages
                .values()
                .filter(|p| {
                    p["half"] == half && langs.contains(&p["language"].as_str().unwrap_or("python"))
                })
                .map(|p| p[f].as_f64().unwrap_or(0.0))
                .sum()
        };
        let got = [
            ratio(sum("found"), sum("sites")),
            ratio(sum("real"), sum("reported")),
            ratio(sum("verdicts"), sum("found") - sum("unknown")),
            ratio(sum("tmpl"), sum("tmpl_sites")),
        ];
        for (what, (g, f)) in ["recall", "precision", "verdicts", "key templates"]
            .iter()
            .zip(got.iter().zip(floors))
        {
            assert!(*g >= f, "{half} half, {langs:?}: {what} {g:.3} < {f}");
        }
    }
}
