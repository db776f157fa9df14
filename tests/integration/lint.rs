//! `keyplan lint` and `keyplan rules` as CI uses them: formats, exit codes, scheme errors, and
//! cross-slot verdicts confirmed by a real cluster.

use crate::support::{RedisServer, Reply, Resp, keyplan, require_binary};
use predicates::prelude::*;
use std::process::Command;

/// The documented example scheme.
const SPEC: &str = include_str!("../fixtures/spec-keyplan.yaml");

fn scheme(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let p = dir.path().join("keyplan.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Past 20 findings of one rule in one dump, the 20th says how many more there are, after
/// the ones listed (not as a finding of its own at line 0); keys that match no declared
/// pattern are reported once per inferred pattern, at the line of its first key.
fn capped_findings_and_unmatched_keys_read_as_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let mut dump = String::new();
    for i in 0..50 {
        dump.push_str(&format!("user:{i}:profile\n"));
    }
    for i in 0..25 {
        dump.push_str(&format!("bad key {i}\n"));
    }
    for i in 0..30 {
        dump.push_str(&format!("session:{i}\n"));
    }
    // 25 more shapes, each its own pattern (one more segment each).
    for i in 0..25 {
        let path = ":lvl".repeat(i + 1);
        dump.push_str(&format!("deep{path}:{i}\ndeep{path}:{}\n", i + 100));
    }
    let keys = dir.path().join("keys.txt");
    std::fs::write(&keys, dump).unwrap();
    let s = scheme(
        &dir,
        "version: 1\nvars:\n  uid: {kind: int, cardinality: 100000}\nkeys:\n  user:\n    pattern: \"user:<uid>:profile\"\n",
    );
    let out = keyplan()
        .args(["lint", "--format", "json", "--scheme"])
        .arg(&s)
        .arg("--keys")
        .arg(&keys)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let diags = v["diagnostics"].as_array().unwrap();
    assert!(
        diags
            .iter()
            .all(|d| d["line"].as_u64() != Some(0) || d["code"] != "KP403")
    );
    let ws: Vec<_> = diags.iter().filter(|d| d["code"] == "KP403").collect();
    assert_eq!(ws.len(), 20, "{ws:?}");
    assert_eq!(ws[19]["more_like_this"], 5, "{:?}", ws[19]);
    assert!(ws[..19].iter().all(|d| d.get("more_like_this").is_none()));
    let unmatched: Vec<_> = diags.iter().filter(|d| d["code"] == "KP401").collect();
    assert_eq!(unmatched.len(), 20, "{unmatched:?}");
    // session:<int> is the biggest undeclared pattern: one finding, at its first key's line.
    let session = unmatched
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("session:<int>"))
        .unwrap_or_else(|| panic!("{unmatched:?}"));
    assert_eq!(session["line"], 76);
    assert!(
        session["message"]
            .as_str()
            .unwrap()
            .starts_with("30 key(s) like session:<int>")
    );
    let more: u64 = unmatched
        .iter()
        .filter_map(|d| d["more_like_this"].as_u64())
        .sum();
    assert!(more > 0, "{unmatched:?}");
    // The human form says it after the findings listed.
    let out = keyplan()
        .args(["lint", "--scheme"])
        .arg(&s)
        .arg("--keys")
        .arg(&keys)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("… and 5 more like this not listed"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        lines[at - 2].contains("KP403") || lines[at - 1].contains("KP403"),
        "{text}"
    );
    assert!(!text.contains(":0:0: KP403"), "{text}");
}

fn the_spec_example_lints_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = scheme(&dir, SPEC);
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains(":9:27: KP201 [warning]")
                .and(predicate::str::contains("1 finding")),
        );
    // Below the threshold: clean.
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .args(["--fail-on", "error"])
        .assert()
        .code(0);
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .args(["--ignore", "KP2"])
        .assert()
        .code(0)
        .stdout("no findings\n");
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .args(["--severity", "KP201=info"])
        .assert()
        .code(0);
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .args(["--select", "KP301"])
        .assert()
        .code(0);
    // Found in the current directory.
    keyplan()
        .current_dir(dir.path())
        .arg("lint")
        .assert()
        .code(1);
}

fn cross_slot_batch_is_an_error_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let p = scheme(
        &dir,
        &SPEC.replace("order:{<order_id>}:items", "order:<order_id>:items"),
    );
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("KP301 [error] batch 'checkout' (MULTI)")
                .and(predicate::str::contains("order:{<order_id>}:items")),
        );
}

fn every_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = scheme(
        &dir,
        &SPEC.replace("order:{<order_id>}:items", "order:<order_id>:items"),
    );
    let out = keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["summary"]["errors"], 1);
    let d = &v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "KP301")
        .unwrap();
    assert_eq!(d["severity"], "error");
    assert_eq!(d["line"], 13);
    let out = keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .args(["--format", "sarif"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    assert!(run["tool"]["driver"]["rules"].as_array().unwrap().len() >= 12);
    let r = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "KP301")
        .unwrap();
    assert_eq!(r["level"], "error");
    assert_eq!(
        r["locations"][0]["physicalLocation"]["region"]["startLine"],
        13
    );
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .args(["--format", "github"])
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("::error file=")
                .and(predicate::str::contains(",line=13,col=")),
        );
}

/// `--format gitlab` has every field GitLab's Code Quality widget reads (docs.gitlab.com,
/// "Code Quality report format": description, check_name, fingerprint, severity,
/// location.path, location.lines.begin), with GitLab's severity words, fingerprints unique
/// within the report and stable when a finding moves to another line.
fn gitlab_code_quality_report_has_the_fields_gitlab_reads() {
    let dir = tempfile::tempdir().unwrap();
    let text = SPEC.replace("order:{<order_id>}:items", "order:<order_id>:items");
    let p = scheme(&dir, &text);
    let dump = dir.path().join("dump.keys");
    let keys: String = (0..3000).map(|i| format!("sess:{{{}}}\n", i % 3)).collect();
    std::fs::write(&dump, keys).unwrap();
    let report = |scheme: &std::path::Path| {
        let out = keyplan()
            .current_dir(dir.path())
            .args(["lint", "--scheme"])
            .arg(scheme.file_name().unwrap())
            .args(["--keys", "dump.keys", "--format", "gitlab"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v = report(&p);
    let issues = v.as_array().expect("a JSON array of issues");
    assert!(issues.len() >= 3, "{v:#}");
    let mut fingerprints = std::collections::HashSet::new();
    for i in issues {
        assert!(!i["description"].as_str().unwrap().is_empty(), "{i:#}");
        assert!(i["check_name"].as_str().unwrap().starts_with("KP"), "{i:#}");
        let f = i["fingerprint"].as_str().unwrap();
        assert!(
            f.len() == 32 && f.chars().all(|c| c.is_ascii_hexdigit()),
            "{f}"
        );
        assert!(fingerprints.insert(f.to_string()), "fingerprint {f} twice");
        assert!(
            ["info", "minor", "major", "critical", "blocker"]
                .contains(&i["severity"].as_str().unwrap()),
            "{i:#}"
        );
        let path = i["location"]["path"].as_str().unwrap();
        assert!(
            dir.path().join(path).is_file(),
            "{path} is not relative to the run"
        );
        assert!(
            i["location"]["lines"]["begin"].as_u64().unwrap() >= 1,
            "{i:#}"
        );
    }
    let cross = issues
        .iter()
        .find(|i| i["check_name"] == "KP301")
        .expect("the cross-slot batch");
    assert_eq!(cross["severity"], "critical");
    assert_eq!(cross["location"]["lines"]["begin"], 13);
    // Two lines added above: the same findings, on other lines, with the same fingerprints.
    std::fs::write(&p, format!("# a comment\n# another\n{text}")).unwrap();
    let w = report(&p);
    let moved_cross = w
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check_name"] == "KP301")
        .unwrap();
    assert_eq!(moved_cross["location"]["lines"]["begin"], 15);
    let prints = |v: &serde_json::Value| {
        let mut f: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["fingerprint"].as_str().unwrap().to_string())
            .collect();
        f.sort();
        f
    };
    assert_eq!(prints(&v), prints(&w));
}

/// `--format markdown` as GitHub renders it (cmark-gfm, GitHub's own Markdown, with its table
/// extension): a table row per finding, the rule table, and keys shown as written (no
/// `<user_id>` swallowed as HTML, no `*` read as emphasis).
fn markdown_renders_as_written_on_github() {
    let Some(cmark) = crate::support::require_binary("cmark-gfm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = scheme(
        &dir,
        &SPEC.replace("order:{<order_id>}:items", "order:<order_id>:items"),
    );
    let render = |md: &[u8]| {
        let mut child = Command::new(&cmark)
            .args(["-e", "table", "-e", "strikethrough", "-e", "autolink"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(md).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let json = keyplan()
        .args(["lint", "--format", "json", "--scheme"])
        .arg(&p)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let findings = v["diagnostics"].as_array().unwrap().len();
    let out = keyplan()
        .args(["lint", "--format", "markdown", "--scheme"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let html = render(&out.stdout);
    assert_eq!(html.matches("<table>").count(), 2, "{html}");
    // The rule table's rows and the findings table's, each with its header row.
    let rules: std::collections::BTreeSet<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        html.matches("<tr>").count(),
        rules.len() + 1 + findings + 1,
        "{html}"
    );
    assert!(html.contains("order:&lt;order_id&gt;:items"), "{html}");
    assert!(html.contains("<h2>keyplan lint: "), "{html}");
    assert!(!html.contains("<em>") && !html.contains("<del>"), "{html}");
    // A report's tables, through the same renderer: analyze's node table has a row per node.
    let out = keyplan()
        .args(["analyze", "examples/app.keys", "--format", "markdown"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let html = render(&out.stdout);
    assert!(html.contains("<h2>keyplan analyze: 20000 keys"), "{html}");
    assert!(html.contains("<h4>Nodes</h4>"), "{html}");
    assert!(html.contains("<td>master-2</td>"), "{html}");
    assert!(
        html.contains("feed:{group_&lt;int&gt;}:user:&lt;int&gt;"),
        "{html}"
    );
    assert!(!html.contains("<em>") && !html.contains("<del>"), "{html}");
}

fn scheme_errors_exit_2_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, want) in [
        (
            SPEC.replace("user:<user_id>:profile", "user:<uid>:profile"),
            ":8:",
        ),
        (SPEC.replace("keys: [feed]", "keys: [feeds]"), ":14:"),
        (SPEC.replace("bytes: 300", "byts: 300"), "keyplan.yaml:8:"),
        (SPEC.replace("vars:", "vars: ["), "keyplan.yaml:"),
        (SPEC.replace("same: [order_id]", "same: [order]"), ":13:"),
    ] {
        let p = scheme(&dir, &bad);
        keyplan()
            .arg("lint")
            .arg("--scheme")
            .arg(&p)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("keyplan.yaml").and(predicate::str::contains(want)));
    }
    keyplan()
        .args(["lint", "--select", "KP999", "--keys", "examples/app.keys"])
        .assert()
        .code(2)
        .stderr("error: --select KP999: no rule has this code, prefix or name\n");
    keyplan()
        .args([
            "lint",
            "--severity",
            "KP301=loud",
            "--keys",
            "examples/app.keys",
        ])
        .assert()
        .code(2);
    keyplan()
        .current_dir(dir.path().join(".."))
        .args(["lint"])
        .assert()
        .code(2);
}

fn dumps_are_checked_with_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = scheme(&dir, SPEC);
    let dump = dir.path().join("k.txt");
    std::fs::write(&dump, "user:1:profile\ntmp:x\ncart:{}:1\nuser:2:profile\n").unwrap();
    keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(&p)
        .arg("--keys")
        .arg(&dump)
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("k.txt:2:1: KP401")
                .and(predicate::str::contains("k.txt:3:1: KP101"))
                .and(predicate::str::contains("k.txt:3:1: KP401")),
        );
}

/// A dump of several MiB is read on several threads: the findings, their lines and the
/// dump-wide figures are the same with 1, 2 and 3 threads, and each finding points at the line
/// of its key (the reader's chunks of about 1 MiB are stitched back into the dump's lines).
fn dumps_lint_the_same_on_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let p = scheme(&dir, SPEC);
    let dump = dir.path().join("big.txt");
    let mut text = String::new();
    let mut bad = Vec::new();
    let mut line = 0u64;
    for i in 0..400_000u64 {
        line += 1;
        text.push_str(&format!("user:{i}:profile\n"));
        if i % 3_001 == 7 {
            line += 1;
            text.push_str(&format!("cart:{{}}:{i}\n"));
            bad.push(line);
        }
        if i % 50_000 == 9 {
            line += 1;
            text.push('\n');
        }
    }
    std::fs::write(&dump, &text).unwrap();
    assert!(text.len() > 6 << 20, "a dump of several chunks");
    let run = |threads: &str| {
        let out = keyplan()
            .args(["lint", "--format", "json", "--threads", threads])
            .arg("--scheme")
            .arg(&p)
            .arg("--keys")
            .arg(&dump)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let one = run("1");
    assert_eq!(run("2"), one);
    assert_eq!(run("3"), one);
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    // KP101 (an empty tag) is capped at 20 findings: the first 20 bad lines, in order.
    let lines: Vec<u64> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "KP101")
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, bad[..20].to_vec());
}

fn rules_commands_and_user_rules() {
    keyplan()
        .args(["rules"])
        .assert()
        .success()
        .stdout(predicate::str::contains("KP301"));
    keyplan()
        .args(["rules", "explain", "cross-slot-batch"])
        .assert()
        .success()
        .stdout(predicate::str::contains("## Why is this bad?"));
    keyplan()
        .args(["rules", "explain", "KP999"])
        .assert()
        .code(2);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("X900-long-session-key.yml"),
        "id: X900\nname: long-session-key\nseverity: error\nsummary: \"keys over 40 bytes\"\ndescription: |\n  ## What it does\n  x\n  ## Why is this bad?\n  x\n  ## Example\n  x\n  ## Use instead\n  x\ncheck:\n  kind: key-length\n  max: 40\nexamples:\n  invalid:\n    - \"session:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n  valid:\n    - \"session:1\"\n",
    )
    .unwrap();
    keyplan()
        .args(["rules", "test", "--rules"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(
            predicate::str::contains("X900 long-session-key")
                .and(predicate::str::contains("0 failed")),
        );
    let dump = dir.path().join("k.txt");
    std::fs::write(
        &dump,
        "session:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
    )
    .unwrap();
    keyplan()
        .args(["lint", "--keys"])
        .arg(&dump)
        .arg("--rules")
        .arg(dir.path())
        .assert()
        .code(1)
        .stdout(predicate::str::contains("X900 [error]"));
}

/// Keys generated from a batch's patterns, sent as MULTI and MGET to a real cluster node that
/// owns every slot: CROSSSLOT exactly when lint says the batch is cross-slot.
fn cross_slot_verdicts_match_a_real_cluster() {
    let Some(bin) = require_binary("redis-server") else {
        return;
    };
    let server = RedisServer::start(&bin, true);
    let mut c = server.connect();
    assert_eq!(
        c.call(&[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"16383"])
            .unwrap(),
        Reply::Status("OK".into())
    );
    for _ in 0..200 {
        if let Ok(Reply::Bulk(Some(info))) = c.call(&[b"CLUSTER", b"INFO"])
            && String::from_utf8_lossy(&info).contains("cluster_state:ok")
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let cases = [
        (SPEC.to_string(), false),
        (
            SPEC.replace("order:{<order_id>}:items", "order:<order_id>:items"),
            true,
        ),
        // Without `same`, the two keys may carry different order ids.
        (SPEC.replace("same: [order_id]", "same: []"), true),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (text, cross) in cases {
        let p = scheme(&dir, &text);
        let out = keyplan()
            .arg("lint")
            .arg("--scheme")
            .arg(&p)
            .args(["--select", "KP301", "--format", "json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let says_cross = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "KP301");
        assert_eq!(says_cross, cross, "lint verdict for {text}");
        // The keys of one checkout batch, with the same order id.
        let s = keyplan::scheme::Scheme::parse(&text).unwrap();
        let b = &s.batches[0];
        for id in [7u64, 123456, 4999999] {
            // Variables the batch keeps `same` share one value; the others differ per key.
            let keys: Vec<Vec<u8>> = b
                .keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    s.key(k)
                        .unwrap()
                        .template
                        .render(&mut |var| {
                            if b.same.iter().any(|x| x == var) {
                                id.to_string()
                            } else {
                                (id * 31 + i as u64 * 7919).to_string()
                            }
                        })
                        .into_bytes()
                })
                .collect();
            let mut mget: Vec<&[u8]> = vec![b"MGET"];
            mget.extend(keys.iter().map(|k| k.as_slice()));
            let r = c.call(&mget).unwrap();
            let redis_cross = matches!(&r, Reply::Error(e) if e.starts_with("CROSSSLOT"));
            assert_eq!(redis_cross, cross, "MGET {keys:?} -> {r:?}");
            // And inside MULTI/EXEC.
            assert_eq!(c.call(&[b"MULTI"]).unwrap(), Reply::Status("OK".into()));
            let mut buf = Vec::new();
            for k in &keys {
                Resp::encode(&mut buf, &[b"SET", k, b"1"]);
            }
            c.send(&buf).unwrap();
            let mut queued_err = false;
            for _ in &keys {
                if let Reply::Error(e) = c.read().unwrap() {
                    queued_err |= e.starts_with("CROSSSLOT");
                }
            }
            let exec = c.call(&[b"EXEC"]).unwrap();
            let multi_cross = queued_err
                || matches!(&exec, Reply::Error(e) if e.contains("CROSSSLOT") || e.starts_with("EXECABORT"));
            assert_eq!(multi_cross, cross, "MULTI {keys:?} -> {exec:?}");
        }
    }
    let _ = Command::new("true");
}

/// Real libraries (rq, kombu, dramatiq, limits from PyPI) run against a real server, their keys
/// dumped with `redis-cli --scan`: each library's rule fires on its own dump, and on no other.
fn library_rules_fire_on_real_library_dumps() {
    let Some(python) = crate::verdicts::library_python() else {
        return;
    };
    let (Some(server), Some(cli)) = (require_binary("redis-server"), require_binary("redis-cli"))
    else {
        return;
    };
    let drive =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/libraries/drive.py");
    let dir = tempfile::tempdir().unwrap();
    for (lib, rule) in [
        ("rq", "KP501"),
        ("kombu", "KP502"),
        ("dramatiq", "KP503"),
        ("limits", ""),
    ] {
        let s = RedisServer::start(&server, false);
        let out = std::process::Command::new(&python)
            .arg(&drive)
            .arg(s.port.to_string())
            .arg(lib)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{lib}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dump = std::process::Command::new(&cli)
            .args(["-p", &s.port.to_string(), "--scan"])
            .output()
            .unwrap();
        assert!(!dump.stdout.is_empty(), "{lib} wrote no keys");
        let file = dir.path().join(format!("{lib}.keys"));
        std::fs::write(&file, &dump.stdout).unwrap();
        let out = keyplan()
            .args(["lint", "--select", "KP5", "--format", "json", "--keys"])
            .arg(&file)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let codes: Vec<&str> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap())
            .collect();
        let want: Vec<&str> = if rule.is_empty() { vec![] } else { vec![rule] };
        assert_eq!(codes, want, "{lib}: {v}");
    }
}

/// BullMQ (npm) run against a real server: without a hash tag its keys fire KP504, with the
/// one global prefix tag `{bull}` KP505; each only on its own dump.
fn bullmq_rules_fire_on_real_bullmq_dumps() {
    let Some(bullmq) = std::env::var_os("KEYPLAN_BULLMQ") else {
        if std::env::var_os("CI").is_some() {
            panic!("KEYPLAN_BULLMQ is not set, and CI is set: .ci/run must install bullmq");
        }
        crate::support::not_run("KEYPLAN_BULLMQ (bullmq from npm) is not set");
        return;
    };
    let (Some(server), Some(cli), Some(node)) = (
        require_binary("redis-server"),
        require_binary("redis-cli"),
        require_binary("node"),
    ) else {
        return;
    };
    let drive = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/libraries/drive-bullmq.js");
    let dir = tempfile::tempdir().unwrap();
    for (prefix, rule) in [("bull", "KP504"), ("{bull}", "KP505")] {
        let s = RedisServer::start(&server, false);
        let out = Command::new(&node)
            .env("KEYPLAN_BULLMQ", &bullmq)
            .arg(&drive)
            .arg(s.port.to_string())
            .arg(prefix)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{prefix}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dump = Command::new(&cli)
            .args(["-p", &s.port.to_string(), "--scan"])
            .output()
            .unwrap();
        let file = dir.path().join("bullmq.keys");
        std::fs::write(&file, &dump.stdout).unwrap();
        let out = keyplan()
            .args(["lint", "--select", "KP5", "--format", "json", "--keys"])
            .arg(&file)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let codes: Vec<&str> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap())
            .collect();
        assert_eq!(codes, vec![rule], "{prefix}: {v}");
    }
}

/// `lint --code`: a script sent with a key count of 0 is KP304 (an error, exit 1), once, not
/// also KP603; a script that declares its key is not; the KP301 hint for a MULTI or a script
/// whose keys share no variable never advises per-node pipelines.
fn scripts_declaring_no_keys_and_atomic_hints() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("limits.py"),
        "import redis\nr = redis.Redis()\n\ndef hit(sha, user):\n    return r.evalsha(sha, 0, f\"rate:{user}\")\n\ndef ok(sha, user):\n    return r.evalsha(sha, 1, f\"rate:{user}\")\n",
    )
    .unwrap();
    let out = keyplan()
        .current_dir(dir.path())
        .args(["lint", "--code", "."])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let findings: Vec<&str> = text.lines().filter(|l| l.contains(": KP")).collect();
    assert_eq!(findings.len(), 1, "{text}");
    assert!(findings[0].starts_with("limits.py:5:"), "{text}");
    assert!(
        findings[0].contains(
            "KP304 [error] a script that declares no keys (a key count of 0) and may touch keys"
        ),
        "{text}"
    );
    assert!(
        text.contains("help: declare every key the script touches"),
        "{text}"
    );
    let s = scheme(
        &dir,
        "version: 1\nvars:\n  a: { kind: int, cardinality: 1000 }\n  b: { kind: int, cardinality: 1000 }\nkeys:\n  left: { pattern: \"left:<a>\" }\n  right: { pattern: \"right:<b>\" }\nbatches:\n  tx: { command: multi, keys: [left, right] }\n  script: { command: lua, keys: [left, right] }\n  many: { command: mget, keys: [left, right] }\n",
    );
    let out = keyplan()
        .args(["lint", "--scheme", s.to_str().unwrap(), "--select", "KP301"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let helps: Vec<&str> = text.lines().filter(|l| l.contains("help:")).collect();
    assert_eq!(helps.len(), 3, "{text}");
    for h in &helps[..2] {
        assert!(!h.contains("per-node pipelines"), "{text}");
        assert!(h.contains("must run on one slot"), "{text}");
    }
    assert!(helps[2].contains("one MGET per node"), "{text}");
}

/// `lint --code` reads a script's body where the source shows it (the call's literal, a name
/// bound to one, a `script_load` or `register_script` of one) with the predicate plan and
/// simulate use: a body touching keys given as ARGV is KP304 naming its call, a body touching
/// no key is no finding, a body not seen may touch keys. A real cluster agrees: each flagged
/// body is refused by a node that does not own its key, each unflagged one runs on every node.
fn scripts_declaring_no_keys_are_judged_by_their_body() {
    let dir = tempfile::tempdir().unwrap();
    let incr = "return redis.call('INCR', ARGV[1])";
    let clock = "return redis.call('TIME')";
    let release = "if redis.call('GET', ARGV[1]) == ARGV[2] then return redis.call('DEL', ARGV[1]) end return 0";
    let source = format!(
        "import redis\n\
         r = redis.Redis()\n\
         INCR = \"{incr}\"\n\
         CLOCK = \"{clock}\"\n\
         RELEASE = \"\"\"{release}\"\"\"\n\
         incr_sha = r.script_load(INCR)\n\
         release = r.register_script(RELEASE)\n\
         \n\
         def hit(user, name, token, other_sha):\n\
         \x20   r.eval(INCR, 0, f\"rate:{{user}}\")\n\
         \x20   r.evalsha(incr_sha, 0, f\"rate:{{user}}\")\n\
         \x20   r.eval(CLOCK, 0)\n\
         \x20   r.eval(\"return redis.call('PING')\", 0)\n\
         \x20   release(keys=[], args=[f\"lock:{{name}}\", token])\n\
         \x20   r.evalsha(other_sha, 0, f\"rate:{{user}}\")\n"
    );
    std::fs::write(dir.path().join("limits.py"), source).unwrap();
    let out = keyplan()
        .current_dir(dir.path())
        .args(["lint", "--code", ".", "--select", "KP304"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let at = |line: usize| {
        text.lines()
            .find(|l| l.starts_with(&format!("limits.py:{line}:")))
            .map(str::to_string)
    };
    let touches = |line: usize, call: &str| {
        let f = at(line).unwrap_or_else(|| panic!("no finding at line {line}: {text}"));
        assert!(
            f.contains(&format!("but its body touches keys (`{call}`)")),
            "{f}"
        );
    };
    touches(10, "redis.call('INCR', ARGV[1])");
    touches(11, "redis.call('INCR', ARGV[1])");
    touches(14, "redis.call('GET', ARGV[1])");
    assert_eq!(at(12), None, "{text}");
    assert_eq!(at(13), None, "{text}");
    assert!(at(15).unwrap().contains("may touch keys"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(": KP304")).count(),
        4,
        "{text}"
    );
    // What a cluster does with each body sent with no keys.
    let Some(cluster) = crate::analyze::Cluster::create() else {
        return;
    };
    let refused_somewhere = |body: &str, args: &[&[u8]]| {
        cluster.nodes.iter().any(|node| {
            let mut cmd: Vec<&[u8]> = vec![b"EVAL".as_slice(), body.as_bytes(), b"0".as_slice()];
            cmd.extend_from_slice(args);
            match node.connect().call(&cmd).unwrap() {
                Reply::Error(e) => {
                    assert!(
                        e.contains("Script attempted to access a non local key in a cluster node"),
                        "{e}"
                    );
                    true
                }
                _ => false,
            }
        })
    };
    assert!(refused_somewhere(incr, &[b"rate:ana"]));
    assert!(refused_somewhere(release, &[b"lock:report", b"t1"]));
    assert!(!refused_somewhere(clock, &[]));
    assert!(!refused_somewhere("return redis.call('PING')", &[]));
}

/// This module's tests, run by the harness in `main.rs`.
/// Errors of a JSON document against the SARIF 2.1.0 schema, by Python's jsonschema.
fn sarif_errors(python: &std::ffi::OsStr, schema: &std::ffi::OsStr, doc: &[u8]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.sarif");
    std::fs::write(&path, doc).unwrap();
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             schema = json.load(open(sys.argv[1]))\n\
             doc = json.load(open(sys.argv[2]))\n\
             v = jsonschema.validators.validator_for(schema)(schema)\n\
             for e in v.iter_errors(doc): print(list(e.absolute_path), e.message)",
        ])
        .arg(schema)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `lint --format sarif` (on a scheme and on source code) is valid SARIF 2.1.0 by the
/// official schema (KEYPLAN_SARIF_SCHEMA: the copy Microsoft's SARIF SDK ships; jsonschema
/// from KEYPLAN_PYTHON's venv), and the same check rejects a broken report.
fn sarif_is_valid_against_the_schema() {
    let (Some(python), Some(schema)) = (
        std::env::var_os("KEYPLAN_PYTHON"),
        std::env::var_os("KEYPLAN_SARIF_SCHEMA"),
    ) else {
        crate::support::not_run(
            "KEYPLAN_PYTHON (with jsonschema) or KEYPLAN_SARIF_SCHEMA (the SARIF 2.1.0 schema) is not set",
        );
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let scheme = keyplan()
        .arg("lint")
        .arg("--scheme")
        .arg(root.join("examples/keyplan.yaml"))
        .args(["--format", "sarif"])
        .output()
        .unwrap();
    let code = keyplan()
        .arg("lint")
        .arg("--code")
        .arg(root.join("tests/fixtures/code"))
        .args(["--format", "sarif"])
        .output()
        .unwrap();
    for (what, out) in [("scheme", &scheme), ("code", &code)] {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            !v["runs"][0]["results"].as_array().unwrap().is_empty(),
            "{what}: no results to validate"
        );
        let errors = sarif_errors(&python, &schema, &out.stdout);
        assert!(errors.is_empty(), "{what}: {errors:#?}");
    }
    // The check can fail: a level SARIF does not have, a line that is not a number.
    let mut v: serde_json::Value = serde_json::from_slice(&code.stdout).unwrap();
    let r = &mut v["runs"][0]["results"][0];
    r["level"] = "fatal".into();
    r["locations"][0]["physicalLocation"]["region"]["startLine"] = "x".into();
    let errors = sarif_errors(&python, &schema, &serde_json::to_vec(&v).unwrap());
    assert_eq!(errors.len(), 2, "{errors:#?}");
}

/// Where the findings of a subdirectory land, as CI shows them: the action's lint script run as
/// a runner runs it from a repository root with `code: src/` (the example workflow's input),
/// and the README's GitLab recipe run there too. Every annotation, SARIF result and GitLab
/// issue names the file by its path from the repository root (`src/app.py`, not `app.py`,
/// which GitHub and GitLab cannot place) at the line of the call.
fn ci_reports_name_files_from_the_repository_root() {
    let Some(bash) = require_binary("bash") else {
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_keyplan"));
    let run = |cmd: &mut Command| {
        cmd.output()
            .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
    };
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("runner");
    std::fs::create_dir(&runner).unwrap();
    let output = runner.join("output");
    let summary = runner.join("summary");
    std::fs::write(&output, "").unwrap();
    std::fs::write(&summary, "").unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    std::fs::create_dir_all(repo.join("src/shop")).unwrap();
    std::fs::write(
        repo.join("src/app.py"),
        "import redis\n\nr = redis.Redis()\n\n\ndef page(uid):\n    return r.mget(f\"user:{uid}:profile\", f\"user:{uid}:settings\")\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("src/shop/cart.py"),
        "import redis\n\nr = redis.Redis()\nitems = r.mget(\"cart:a\", \"cart:b\")\n",
    )
    .unwrap();
    // A scheme with no findings at the root (the README's GitLab recipe names it, and lint
    // reads ./keyplan.yaml by itself).
    std::fs::write(
        repo.join("keyplan.yaml"),
        "version: 1\ntopology: { masters: 3 }\nvars:\n  uid: { kind: int, cardinality: 1_000_000 }\nkeys:\n  profile: { pattern: \"user:{<uid>}:profile\" }\n  settings: { pattern: \"user:{<uid>}:settings\" }\nbatches:\n  page: { command: mget, keys: [profile, settings], same: [uid] }\n",
    )
    .unwrap();
    let want: std::collections::BTreeSet<(String, u64)> = [
        ("src/app.py".to_string(), 7),
        ("src/shop/cart.py".to_string(), 4),
    ]
    .into();
    let placed = |what: &str, got: Vec<(String, u64)>| {
        let got: std::collections::BTreeSet<(String, u64)> = got.into_iter().collect();
        assert_eq!(got, want, "{what}");
        for (file, _) in &got {
            assert!(
                repo.join(file).is_file(),
                "{what}: {file} is not in the repository"
            );
        }
    };
    let script = root.join(".github/actions/keyplan/lint.sh");
    let system_path = std::env::var("PATH").unwrap_or_default();
    let here_path = format!("{}:{system_path}", built.parent().unwrap().display());
    for code in ["src/", "./src"] {
        let out = run(Command::new(&bash)
            .current_dir(&repo)
            .arg(&script)
            .env("PATH", &here_path)
            .env("RUNNER_TEMP", &runner)
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("KEYPLAN_CODE", format!("{code}\n"))
            .env("KEYPLAN_FAIL_ON", "warning"));
        let log = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{code}: {log}");
        let annotations: Vec<(String, u64)> = log
            .lines()
            .filter_map(|l| l.strip_prefix("::error file="))
            .map(|l| {
                let (file, rest) = l.split_once(",line=").unwrap();
                let line = rest.split(',').next().unwrap().parse().unwrap();
                (file.to_string(), line)
            })
            .collect();
        placed(&format!("annotations of --code {code}"), annotations);
        // Literal keys are said with their slots (CLUSTER KEYSLOT on redis-server: cart:a is
        // 8057, cart:b 12058); keys built at runtime can hash apart.
        assert!(
            log.contains(
                "MGET: `cart:a` (slot 8057) and `cart:b` (slot 12058) hash to different slots;"
            ),
            "{log}"
        );
        assert!(
            log.contains(
                "MGET: user:<uid>:profile and user:<uid>:settings can hash to different slots;"
            ),
            "{log}"
        );
        let sarif: serde_json::Value =
            serde_json::from_slice(&std::fs::read(runner.join("keyplan.sarif")).unwrap()).unwrap();
        let results: Vec<(String, u64)> = sarif["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let at = &r["locations"][0]["physicalLocation"];
                (
                    at["artifactLocation"]["uri"].as_str().unwrap().to_string(),
                    at["region"]["startLine"].as_u64().unwrap(),
                )
            })
            .collect();
        placed(&format!("SARIF of --code {code}"), results);
    }
    // The README's GitLab recipe, as written.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let recipe = readme
        .lines()
        .map(str::trim)
        .find_map(|l| {
            l.strip_prefix("- keyplan lint ")
                .filter(|l| l.contains("--format gitlab"))
        })
        .expect("README has a GitLab recipe running keyplan lint");
    assert!(recipe.contains("--code src/"), "{recipe}");
    let out = run(Command::new(&built)
        .current_dir(&repo)
        .arg("lint")
        .args(recipe.split_whitespace()));
    assert_eq!(out.status.code(), Some(1), "{recipe}: {out:?}");
    let report = recipe
        .split_whitespace()
        .skip_while(|w| *w != "-o")
        .nth(1)
        .expect("the recipe writes a file");
    let issues: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo.join(report)).unwrap()).unwrap();
    let issues: Vec<(String, u64)> = issues
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["location"]["path"].as_str().unwrap().to_string(),
                i["location"]["lines"]["begin"].as_u64().unwrap(),
            )
        })
        .collect();
    placed("GitLab Code Quality", issues);
}

/// An undeclared pattern whose first key comes after the thousands of other undeclared keys
/// is reported at that key's line, with that key as its example; keys are quoted in messages
/// (a key with spaces reads as one key); the summary counts the findings not listed too. The
/// same on one thread and on three (a dump of several chunks).
fn undeclared_keys_are_placed_at_the_key_shown_and_counts_are_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut dump = String::new();
    let n = 300_000;
    for i in 0..n {
        dump.push_str(&format!("tmp:debug:{i}\n"));
    }
    dump.push_str("cache:page:17\n");
    for i in 0..5 {
        dump.push_str(&format!("cache:page:{}\n", 100 + i));
    }
    for i in 0..60 {
        dump.push_str(&format!("key with space {i}\n"));
    }
    assert!(dump.len() > 4 << 20, "a dump of several chunks");
    let keys = dir.path().join("keys.txt");
    std::fs::write(&keys, dump).unwrap();
    let s = scheme(
        &dir,
        "version: 1\nvars:\n  uid: {kind: int, cardinality: 100000}\nkeys:\n  user:\n    pattern: \"user:<uid>:profile\"\n",
    );
    let run = |threads: &str, format: &str| {
        let out = keyplan()
            .args(["lint", "--threads", threads, "--format", format, "--scheme"])
            .arg(&s)
            .arg("--keys")
            .arg(&keys)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "warnings fail by default");
        String::from_utf8(out.stdout).unwrap()
    };
    let json = run("1", "json");
    assert_eq!(run("3", "json"), json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let diags = v["diagnostics"].as_array().unwrap();
    let page = diags
        .iter()
        .find(|d| d["code"] == "KP401" && d["message"].as_str().unwrap().contains(":page:"))
        .unwrap_or_else(|| panic!("{diags:?}"));
    assert_eq!(page["line"], n + 1, "{page}");
    assert!(
        page["message"]
            .as_str()
            .unwrap()
            .contains("such as \"cache:page:17\" on this line"),
        "{page}"
    );
    let spaced: Vec<&str> = diags
        .iter()
        .filter(|d| d["code"] == "KP403")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(spaced.len(), 20);
    assert!(
        spaced[0].starts_with("key \"key with space 0\": "),
        "{spaced:?}"
    );
    let text = run("1", "human");
    let listed = diags.len();
    let summary = text.lines().last().unwrap();
    assert_eq!(
        summary,
        format!(
            "{} finding(s) ({listed} listed, 40 more not listed): 0 error(s), {} warning(s), 0 info, 0 hint(s)",
            listed + 40,
            listed + 40
        ),
        "{text}"
    );
}

pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "undeclared_keys_are_placed_at_the_key_shown_and_counts_are_whole",
        undeclared_keys_are_placed_at_the_key_shown_and_counts_are_whole,
    ),
    (
        "ci_reports_name_files_from_the_repository_root",
        ci_reports_name_files_from_the_repository_root,
    ),
    (
        "sarif_is_valid_against_the_schema",
        sarif_is_valid_against_the_schema,
    ),
    (
        "capped_findings_and_unmatched_keys_read_as_patterns",
        capped_findings_and_unmatched_keys_read_as_patterns,
    ),
    (
        "the_spec_example_lints_with_one_warning",
        the_spec_example_lints_with_one_warning,
    ),
    (
        "cross_slot_batch_is_an_error_with_the_fix",
        cross_slot_batch_is_an_error_with_the_fix,
    ),
    ("every_format", every_format),
    (
        "gitlab_code_quality_report_has_the_fields_gitlab_reads",
        gitlab_code_quality_report_has_the_fields_gitlab_reads,
    ),
    (
        "markdown_renders_as_written_on_github",
        markdown_renders_as_written_on_github,
    ),
    (
        "scheme_errors_exit_2_with_positions",
        scheme_errors_exit_2_with_positions,
    ),
    ("dumps_are_checked_with_lines", dumps_are_checked_with_lines),
    (
        "dumps_lint_the_same_on_every_thread_count",
        dumps_lint_the_same_on_every_thread_count,
    ),
    (
        "rules_commands_and_user_rules",
        rules_commands_and_user_rules,
    ),
    (
        "cross_slot_verdicts_match_a_real_cluster",
        cross_slot_verdicts_match_a_real_cluster,
    ),
    (
        "library_rules_fire_on_real_library_dumps",
        library_rules_fire_on_real_library_dumps,
    ),
    (
        "bullmq_rules_fire_on_real_bullmq_dumps",
        bullmq_rules_fire_on_real_bullmq_dumps,
    ),
    (
        "scripts_declaring_no_keys_and_atomic_hints",
        scripts_declaring_no_keys_and_atomic_hints,
    ),
    (
        "scripts_declaring_no_keys_are_judged_by_their_body",
        scripts_declaring_no_keys_are_judged_by_their_body,
    ),
];
