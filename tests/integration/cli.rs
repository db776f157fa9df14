//! The command line as a user runs it: outputs, exit statuses, and bad input.

use crate::support::keyplan;
use keyplan::slot::key_slot;
use predicates::prelude::*;
use std::io::Write;

/// The stdout of a successful in-process run.
fn stdout_of(args: &[&str]) -> String {
    let (code, out, err) = crate::support::run_in_process(args);
    assert_eq!(code, 0, "{err}");
    out
}

fn write_file(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::File::create(&p).unwrap().write_all(data).unwrap();
    p
}

fn spec_examples_in_tsv() {
    let out = stdout_of(&[
        "slot",
        "--format",
        "tsv",
        "--masters",
        "3",
        "{user1000}.following",
        "foo{}{bar}",
        "foo{{bar}}zap",
        "foo{bar}{zap}",
        "somekey",
    ]);
    assert_eq!(
        out,
        "key\tslot\thashed\tnode\n\
         {user1000}.following\t3443\tuser1000\tmaster-0\n\
         foo{}{bar}\t8363\tfoo{}{bar}\tmaster-1\n\
         foo{{bar}}zap\t4015\t{bar\tmaster-0\n\
         foo{bar}{zap}\t5061\tbar\tmaster-0\n\
         somekey\t11058\tsomekey\tmaster-2\n"
    );
}

fn json_contract_with_binary_keys() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "k.quoted", b"\"a\\xffb\"\n\"{x}\\n\"\n");
    let out = stdout_of(&[
        "slot",
        "--format",
        "json",
        "--masters",
        "4",
        "--keys",
        p.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema_version"], 1);
    let keys = v["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["key"]["base64"], "Yf9i");
    assert_eq!(keys[0]["slot"], key_slot(b"a\xffb"));
    assert_eq!(keys[1]["key"], "{x}\n");
    assert_eq!(keys[1]["hashed"], "x");
    assert_eq!(keys[1]["slot"], key_slot(b"x"));
    assert!(keys[1]["node"].as_str().unwrap().starts_with("master-"));
    assert_eq!(v["malformed"].as_array().unwrap().len(), 0);
}

fn node_is_null_without_topology() {
    let v: serde_json::Value =
        serde_json::from_str(&stdout_of(&["slot", "--format", "json", "k"])).unwrap();
    assert!(v["keys"][0]["node"].is_null());
}

fn explain_says_why() {
    let out = stdout_of(&["slot", "--explain", "--format", "tsv", "foo{}{bar}", "a{b"]);
    assert!(
        out.contains("is empty, so the whole key is hashed"),
        "{out}"
    );
    assert!(out.contains("a later '{' is ignored"), "{out}");
    assert!(out.contains("has no '}' after it"), "{out}");
}

fn table_is_the_default_for_arguments() {
    let out = stdout_of(&["slot", "hello"]);
    assert!(
        out.contains("hello") && out.contains("866") && out.contains('│'),
        "{out}"
    );
}

fn counts_per_slot_with_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = String::new();
    for i in 0..5000 {
        data.push_str(&format!("user:{{{}}}:k{i}\r\n", i % 10));
    }
    let p = write_file(&dir, "k.txt", data.as_bytes());
    let out = stdout_of(&[
        "slot",
        "--counts",
        "--format",
        "json",
        "--masters",
        "3",
        "--keys",
        p.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["keys"], 5000);
    let slots = v["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 10);
    for s in slots {
        assert_eq!(s["keys"], 500);
    }
    let want = key_slot(b"3") as u64;
    assert!(slots.iter().any(|s| s["slot"] == want));
}

fn crlf_and_missing_final_newline() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "k.txt", b"hello\r\nsomekey\r\n\r\nx");
    let out = stdout_of(&["slot", "--keys", p.to_str().unwrap()]);
    assert_eq!(
        out,
        "key\tslot\thashed\nhello\t866\thello\nsomekey\t11058\tsomekey\nx\t16287\tx\n"
    );
}

fn no_keys_is_an_error_with_help() {
    keyplan()
        .arg("slot")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no keys given").and(predicate::str::contains("--keys")));
}

fn unreadable_paths_name_the_file() {
    keyplan()
        .args(["slot", "--keys", "/no/such/dump.keys"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("/no/such/dump.keys"));
    let dir = tempfile::tempdir().unwrap();
    keyplan()
        .args(["slot", "--keys"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a directory"));
}

fn bad_flags_exit_2() {
    let cases: &[(&[&str], i32, &str)] = &[
        (&["slot", "--masters", "0", "k"], 2, "--masters"),
        (&["slot", "--format", "yaml", "k"], 2, "--format"),
        (&["nope"], 2, "nope"),
        (&["slot", "--keys", "-", "--keys", "-"], 2, "more than once"),
        (&["--help"], 0, ""),
    ];
    for (args, want, says) in cases {
        let (code, out, err) = crate::support::run_in_process(args);
        assert_eq!(code, *want, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        if *want == 0 {
            assert!(out.contains("slot"), "{out}");
        }
    }
}

fn malformed_lines_are_reported_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "k.quoted", b"\"a\"\n\"b\\q\"\n\"c\n\"d\"\n");
    keyplan()
        .args(["slot", "--input-format", "quoted", "--keys"])
        .arg(&p)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("\nd\t"))
        .stderr(
            predicate::str::contains("skipped 2 malformed line(s)")
                .and(predicate::str::contains("k.quoted:2:3: unknown escape"))
                .and(predicate::str::contains("k.quoted:3:3:")),
        );
    keyplan()
        .args(["slot", "--strict", "--input-format", "quoted", "--keys"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("k.quoted").and(predicate::str::contains("line 2, column 3")),
        );
}

fn mixed_forms_are_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "mixed.keys", b"\"a\"\n\"b\"\nraw-key\n");
    keyplan()
        .args(["slot", "--keys"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("mixed.keys").and(predicate::str::contains("line 3")));
}

fn binary_garbage_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = crate::support::Rng(42);
    let data: Vec<u8> = (0..1_000_000).map(|_| rng.next() as u8).collect();
    let p = write_file(&dir, "garbage.bin", &data);
    for fmt in ["auto", "raw", "quoted", "tsv"] {
        for extra in [&["--counts"][..], &[][..]] {
            let out = keyplan()
                .args(["slot", "--format", "json", "--input-format", fmt])
                .args(extra)
                .arg("--keys")
                .arg(&p)
                .output()
                .unwrap();
            assert!(
                matches!(out.status.code(), Some(0) | Some(2)),
                "{fmt}: {:?} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
        }
    }
}

fn a_100_mb_line_is_skipped_or_accepted_never_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = b"before\n".to_vec();
    data.extend(std::iter::repeat_n(b'x', 100 << 20));
    data.extend_from_slice(b"\nafter\n");
    let p = write_file(&dir, "huge.keys", &data);
    keyplan()
        .args(["slot", "--keys"])
        .arg(&p)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("before").and(predicate::str::contains("after")))
        .stderr(predicate::str::contains(
            "huge.keys:2:1: line of 104857600 bytes is longer than",
        ));
    keyplan()
        .args(["slot", "--counts", "--strict", "--keys"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2"));
    let out = keyplan()
        .args([
            "slot",
            "--counts",
            "--format",
            "json",
            "--max-line-bytes",
            "200000000",
            "--keys",
        ])
        .arg(&p)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["keys"], 3);
}

fn closed_pipe_is_not_an_error() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let data: String = (0..300_000).map(|i| format!("key:{i}\n")).collect();
    let p = write_file(&dir, "k.txt", data.as_bytes());
    let bin = assert_cmd::cargo::cargo_bin("keyplan");
    let mut child = Command::new(bin)
        .args(["slot", "--keys"])
        .arg(&p)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = keyplan().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("keyplan") && text.contains("analyze"),
            "{shell}"
        );
    }
    keyplan()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::contains(".TH keyplan 1").and(predicate::str::contains("lint")));
}

fn simulate_inputs_and_errors() {
    keyplan()
        .args(["simulate"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no batches"));
    let dir = tempfile::tempdir().unwrap();
    let bad = write_file(&dir, "b.txt", b"MGET a\nMSET a\n");
    keyplan()
        .args(["simulate", "--batches"])
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("b.txt").and(predicate::str::contains("line 2")));
    let ok = write_file(&dir, "ok.txt", b"MGET a b c\n");
    keyplan()
        .args(["simulate", "--sizes", "1,10", "--batches"])
        .arg(&ok)
        .assert()
        .code(2);
    keyplan()
        .args(["simulate", "--rtt", "-1", "--batches"])
        .arg(&ok)
        .assert()
        .code(2);
    // Extreme magnitudes are refused with the range, said short (never 309 digits).
    for (flag, value, range) in [
        ("--rtt", "1e308", "0..60000 ms"),
        ("--per-key-us", "1e308", "0..1000000 µs"),
        ("--bandwidth", "1e308", "0.001..1000000 MB/s"),
        ("--bandwidth", "1e-308", "0.001..1000000 MB/s"),
    ] {
        let out = keyplan()
            .args(["simulate", flag, value, "--batches"])
            .arg(&ok)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(
            err.contains(flag) && err.contains(range),
            "{flag} {value}: {err}"
        );
        assert!(!err.contains("00000000000000000000"), "{err}");
    }
    keyplan()
        .args([
            "rebalance",
            "--preview",
            "--masters",
            "3",
            "--migrate-rtt",
            "1e308",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("1e308 ms is over a minute"));
    // A twemproxy config of several pools: each command's hint names its own flag.
    let pools = write_file(
        &dir,
        "pools.yml",
        b"a:\n  servers:\n   - 10.0.0.1:6379:1\nb:\n  servers:\n   - 10.0.0.2:6379:1\n",
    );
    let keys = "examples/app.keys";
    let pools_arg = pools.to_str().unwrap();
    for (args, flag) in [
        (
            vec![
                "migrate",
                "--from",
                pools_arg,
                "--to-masters",
                "3",
                "--keys",
                keys,
            ],
            "--from-pool",
        ),
        (
            vec![
                "migrate",
                "--from-masters",
                "3",
                "--to",
                pools_arg,
                "--keys",
                keys,
            ],
            "--to-pool",
        ),
        (vec!["analyze", "--topology", pools_arg, keys], "--pool"),
    ] {
        let out = keyplan().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("choose one with {flag} NAME")),
            "{args:?}: {err}"
        );
        // The flag named is one the command takes.
        let with_pool: Vec<&str> = args.iter().copied().chain([flag, "a"]).collect();
        let out = keyplan().args(&with_pool).output().unwrap();
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("unexpected argument"),
            "{with_pool:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    keyplan()
        .args([
            "simulate",
            "--scheme",
            "examples/keyplan.yaml",
            "--sizes",
            "1,10,100",
            "--strategy",
            "serial",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("100 / "));
    keyplan()
        .args(["simulate", "--client", "jedis9", "--batches"])
        .arg(&ok)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such client profile"))
        .stderr(predicate::str::contains("lettuce"));
    let out = keyplan()
        .args([
            "simulate",
            "--client",
            "all",
            "--format",
            "json",
            "--batches",
        ])
        .arg(&ok)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 2);
    let clients = v["results"].as_array().unwrap();
    // Twemproxy needs a ring; on the default cluster "all" leaves it out.
    assert_eq!(clients.len(), 14);
    let of = |name: &str| clients.iter().find(|c| c["client"] == name).unwrap();
    assert_eq!(of("redis-py")["outcome"], "client-error");
    assert_eq!(of("lettuce")["outcome"], "ok");
    assert_eq!(of("lettuce")["commands"], 3);
    assert_eq!(of("go-redis")["outcome"], "server-error");
    keyplan()
        .args(["simulate", "--client", "jedis8,redis-rs", "--batches"])
        .arg(&ok)
        .assert()
        .success()
        .stdout(predicate::str::contains("jedis8"))
        .stdout(predicate::str::contains("Jedis 8.0 RedisClusterClient"));
    // A slot in migration: its key meets ASK; a stale map (alias --stale-after) meets MOVED.
    // "a" is slot 15495 (master-2 of 3); with 4 masters it belongs to master-3.
    let a = write_file(&dir, "a.txt", b"GET a\n");
    let v = crate::support::json_of(
        keyplan()
            .args(["simulate", "--client", "lettuce", "--format", "json"])
            .args([
                "--masters",
                "3",
                "--migrating",
                "15495:master-0",
                "--batches",
            ])
            .arg(&a),
    );
    assert_eq!(
        (
            v["results"][0]["ask"].as_u64(),
            v["results"][0]["moved"].as_u64()
        ),
        (Some(1), Some(0))
    );
    let stale = write_file(
        &dir,
        "stale.yaml",
        b"nodes:\n  - { name: master-0, slots: \"0-5460\" }\n  - { name: master-1, slots: \"5461-10922\" }\n  - { name: master-2, slots: \"10923-16383\" }\n",
    );
    let v = crate::support::json_of(
        keyplan()
            .args(["simulate", "--client", "jedis@5.2", "--format", "json"])
            .args(["--masters", "4", "--stale-after"])
            .arg(&stale)
            .arg("--batches")
            .arg(&a),
    );
    assert_eq!(v["results"][0]["moved"], 1);
    assert_eq!(
        v["results"][0]["round_trips"], 3,
        "GET, CLUSTER SLOTS, GET again"
    );
    keyplan()
        .args([
            "simulate",
            "--client",
            "lettuce",
            "--migrating",
            "99999:master-0",
            "--batches",
        ])
        .arg(&a)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a slot"));
    keyplan()
        .args(["simulate", "--client", "go-redis@9.7", "--batches"])
        .arg(&a)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not modelled"));
}

/// This module's tests, run by the harness in `main.rs`.
/// `keyplan --version` names the commit it was built from: in a git checkout, the
/// checkout's own (`git rev-parse HEAD`, its first 12 characters).
fn version_names_the_commit() {
    let out = stdout_of(&["--version"]);
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim()[..12].to_string());
    let Some(commit) = commit else {
        crate::support::not_run("not built from a git checkout (or git is not installed)");
        return;
    };
    assert_eq!(
        out.trim(),
        format!("keyplan {} ({commit})", env!("CARGO_PKG_VERSION"))
    );
}

pub(crate) const TESTS: &[crate::support::Test] = &[
    ("version_names_the_commit", version_names_the_commit),
    ("spec_examples_in_tsv", spec_examples_in_tsv),
    (
        "json_contract_with_binary_keys",
        json_contract_with_binary_keys,
    ),
    (
        "node_is_null_without_topology",
        node_is_null_without_topology,
    ),
    ("explain_says_why", explain_says_why),
    (
        "table_is_the_default_for_arguments",
        table_is_the_default_for_arguments,
    ),
    ("counts_per_slot_with_nodes", counts_per_slot_with_nodes),
    (
        "crlf_and_missing_final_newline",
        crlf_and_missing_final_newline,
    ),
    (
        "no_keys_is_an_error_with_help",
        no_keys_is_an_error_with_help,
    ),
    (
        "unreadable_paths_name_the_file",
        unreadable_paths_name_the_file,
    ),
    ("bad_flags_exit_2", bad_flags_exit_2),
    (
        "malformed_lines_are_reported_at_the_end",
        malformed_lines_are_reported_at_the_end,
    ),
    (
        "mixed_forms_are_an_error_naming_the_line",
        mixed_forms_are_an_error_naming_the_line,
    ),
    (
        "binary_garbage_does_not_panic",
        binary_garbage_does_not_panic,
    ),
    (
        "a_100_mb_line_is_skipped_or_accepted_never_a_crash",
        a_100_mb_line_is_skipped_or_accepted_never_a_crash,
    ),
    ("closed_pipe_is_not_an_error", closed_pipe_is_not_an_error),
    ("completions_and_man_page", completions_and_man_page),
    ("simulate_inputs_and_errors", simulate_inputs_and_errors),
];
