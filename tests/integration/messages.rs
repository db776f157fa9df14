//! What keyplan says when something is wrong or missing: each message names the problem and
//! what to do, against real servers where a server is involved.

use super::support::{RedisServer, all_output, keyplan, require_binary};
use std::io::Write as _;

fn stderr_of(cmd: &mut assert_cmd::Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A file that is not a key dump is named for what it is, with what to do, and exit 2, instead of
/// a confident verdict on its "keys": a real cluster's CLUSTER NODES output, JSON, an
/// executable, a twemproxy configuration. A handful of real keys gets a verdict that says they
/// are too few to judge.
fn files_that_are_not_key_dumps_are_recognised() {
    let Some(cluster) = crate::analyze::Cluster::create() else {
        return;
    };
    let nodes = match cluster.nodes[0]
        .connect()
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    {
        crate::support::Reply::Bulk(Some(b)) => b,
        other => panic!("CLUSTER NODES replied {other:?}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, data: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, data).unwrap();
        p
    };
    let mut cases = vec![
        (
            file("nodes.txt", &nodes),
            "CLUSTER NODES output",
            "--topology",
        ),
        (
            file("a.json", b"{\"a\":1}\n"),
            "looks like JSON",
            "one key per line",
        ),
        (
            std::path::PathBuf::from("examples/twemproxy.yml"),
            "twemproxy",
            "--topology",
        ),
    ];
    let ls = std::path::PathBuf::from("/bin/ls");
    if ls.is_file() {
        cases.push((ls, "executable", "key dump"));
    }
    for (path, looks, help) in cases {
        for cmd in ["analyze", "lint"] {
            let mut k = keyplan();
            if cmd == "lint" {
                k.args(["lint", "--keys"]);
            } else {
                k.arg("analyze");
            }
            let (code, err) = stderr_of(k.arg(&path));
            assert_eq!(code, Some(2), "{cmd} {}: {err}", path.display());
            assert!(err.contains(looks) && err.contains(help), "{err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
        }
        // Read as keys when asked to.
        let out = keyplan()
            .args(["analyze", "--input-format", "raw"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    }
    let few = file("few.keys", b"user:1\nuser:2\nuser:3\n");
    let out = keyplan().arg("analyze").arg(&few).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        all_output(&out).contains("too few keys to judge the spread (3 key(s)"),
        "{}",
        all_output(&out)
    );
}

/// A `--cluster` given as host:port alone is refused with the URL it most likely means; a
/// password in a malformed URL is never echoed.
fn a_cluster_address_without_a_scheme_suggests_the_url() {
    for cmd in [
        vec!["analyze", "--cluster", "127.0.0.1:7600"],
        vec!["scan", "--cluster", "127.0.0.1:7600"],
        vec!["bench", "--cleanup", "--cluster", "127.0.0.1:7600"],
    ] {
        let (code, err) = stderr_of(keyplan().args(&cmd));
        assert_eq!(code, Some(2), "{cmd:?}: {err}");
        assert!(
            err.contains("did you mean --cluster redis://127.0.0.1:7600"),
            "{cmd:?}: {err}"
        );
    }
    let (code, err) = stderr_of(keyplan().args(["analyze", "--cluster", "user:s3cret@host"]));
    assert_eq!(code, Some(2));
    assert!(!err.contains("s3cret"), "{err}");
}

fn a_server_that_wants_a_password_says_how_to_give_it() {
    let Some(server) = require_binary("redis-server") else {
        return;
    };
    let node = RedisServer::start_with(&server, true, Some("s3cret-pw"));
    let url = format!("redis://127.0.0.1:{}", node.port);
    let (code, err) =
        stderr_of(
            keyplan()
                .env_remove("REDISCLI_AUTH")
                .args(["analyze", "--cluster", &url]),
        );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("requires a password"), "{err}");
    assert!(err.contains("REDISCLI_AUTH"), "{err}");
    assert!(err.contains("redis://user:password@host:port"), "{err}");
    assert!(!err.contains("NOAUTH"), "no bare server error: {err}");
}

fn a_port_that_does_not_speak_resp_is_named() {
    // An HTTP-ish server on a loopback port: it answers anything with a status line.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let mut s = s;
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let (code, err) = stderr_of(keyplan().args(["analyze", "--cluster", &url]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "127.0.0.1:{port} does not speak the Redis protocol"
        )),
        "{err}"
    );
    assert!(!err.contains("Parse error"), "{err}");
}

fn an_empty_dump_is_an_error_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.keys");
    std::fs::write(&empty, b"").unwrap();
    let blank = dir.path().join("blank.keys");
    std::fs::write(&blank, b"\n\n").unwrap();
    let e = empty.to_str().unwrap();
    let b = blank.to_str().unwrap();
    let scheme = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/keyplan.yaml");
    let runs: Vec<Vec<&str>> = vec![
        vec!["analyze", e],
        vec!["analyze", b],
        vec!["slot", "--counts", "--keys", e],
        vec!["lint", "--keys", e],
        vec!["plan", "--scheme", scheme, "--keys", e],
        vec!["rebalance", "--preview", "--masters", "3", "--keys", e],
    ];
    for args in runs {
        let (code, err) = stderr_of(keyplan().args(&args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("no keys in"), "{args:?}: {err}");
        assert!(err.contains("--allow-empty"), "{args:?}: {err}");
        let out = keyplan().args(&args).arg("--allow-empty").output().unwrap();
        assert_ne!(
            out.status.code(),
            Some(2),
            "{args:?} --allow-empty: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn a_byte_budget_is_reported_in_the_users_unit_with_the_excess() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("sample.tsv");
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("user:{i}\t1000000\n"));
    }
    std::fs::write(&dump, text).unwrap();
    let out = keyplan()
        .args([
            "rebalance",
            "--preview",
            "--masters",
            "3",
            "--max-node-bytes",
            "0.9GB",
            "--keys",
        ])
        .arg(&dump)
        .output()
        .unwrap();
    let all = all_output(&out);
    // Three masters of about 1 GB each, over a 0.9 GB budget by about 0.1 GB.
    assert!(
        all.contains("over the --max-node-bytes budget of 0.90 GB"),
        "{all}"
    );
    assert!(all.contains(" GB after the move, "), "{all}");
    assert!(all.contains(" MB ("), "the excess in MB: {all}");
    assert!(!all.contains("GiB"), "{all}");
}

fn man_pages_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = keyplan().arg("man").arg(dir.path()).output().unwrap();
    assert!(out.status.success());
    for page in [
        "keyplan.1",
        "keyplan-analyze.1",
        "keyplan-lint.1",
        "keyplan-scan.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    let out = keyplan()
        .args(["man", "--command", "analyze"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("keyplan\\-analyze"), "{text}");
    assert!(text.contains("hot\\-tag\\-share"), "{text}");
    let (code, err) = stderr_of(keyplan().args(["man", "--command", "nope"]));
    assert_eq!(code, Some(2));
    assert!(err.contains("pick one of analyze"), "{err}");
    // Rendered as a person reads it: every page has EXIT STATUS, ENVIRONMENT and (where the
    // help has them) EXAMPLES, each example whole on its own line.
    let Some(man) = require_binary("man") else {
        return;
    };
    let mut pages: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    assert!(pages.len() >= 12, "{pages:?}");
    for page in pages {
        let out = std::process::Command::new(&man)
            .arg("-l")
            .arg(&page)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        for section in ["NAME", "SYNOPSIS", "EXIT STATUS", "ENVIRONMENT"] {
            assert!(
                text.contains(section),
                "{}: no {section}:\n{text}",
                page.display()
            );
        }
        for var in ["REDISCLI_AUTH", "KEYPLAN_TIMEOUT", "NO_COLOR"] {
            assert!(text.contains(var), "{}: {var}", page.display());
        }
        assert!(!text.contains("EXTRA"), "{}", page.display());
        if page.ends_with("keyplan-analyze.1") {
            assert!(text.contains("EXAMPLES"), "{text}");
            let line = "keyplan analyze keys.txt --topology nodes.txt --format html -o report.html";
            assert!(
                text.lines().any(|l| l.trim() == line),
                "an example broken across lines:\n{text}"
            );
        }
    }
}

fn help_lists_every_topology_format_and_scan_only_its_options() {
    for cmd in [
        "analyze",
        "lint",
        "migrate",
        "plan",
        "simulate",
        "rebalance",
        "reshard",
        "slot",
    ] {
        let out = keyplan().args([cmd, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for format in [
            "CLUSTER NODES",
            "nodes.conf",
            "CLUSTER SLOTS",
            "CLUSTER SHARDS",
            "twemproxy",
            "keyplan topology YAML",
            "libketama",
        ] {
            assert!(help.contains(format), "{cmd} --help lacks {format}");
        }
    }
    let out = keyplan().args(["scan", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for absent in ["--masters", "--topology", "--pool", "--allow-partial"] {
        assert!(!help.contains(absent), "scan --help lists {absent}");
    }
    assert!(help.contains("--cluster"));
}

fn plan_reads_the_scheme_of_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/keyplan.yaml"),
        dir.path().join("keyplan.yaml"),
    )
    .unwrap();
    let here = keyplan()
        .current_dir(dir.path())
        .args(["plan", "--format", "json"])
        .output()
        .unwrap();
    let named = keyplan()
        .current_dir(dir.path())
        .args(["plan", "--format", "json", "--scheme", "keyplan.yaml"])
        .output()
        .unwrap();
    assert_eq!(here.status.code(), named.status.code());
    assert_eq!(
        String::from_utf8_lossy(&here.stdout),
        String::from_utf8_lossy(&named.stdout)
    );
    let empty = tempfile::tempdir().unwrap();
    let (code, err) = stderr_of(keyplan().current_dir(empty.path()).arg("plan"));
    assert_eq!(code, Some(2));
    assert!(err.contains("no keyplan.yaml here"), "{err}");
}

fn a_failed_run_leaves_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "MSET a\n").unwrap();
    let out = dir.path().join("out.json");
    let (code, err) = stderr_of(
        keyplan()
            .args(["simulate", "--format", "json", "--batches"])
            .arg(&bad)
            .arg("-o")
            .arg(&out),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(!out.exists(), "a failed simulate left {}", out.display());
    // Nor any temporary file.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // A run that succeeds puts the whole file in place.
    let good = dir.path().join("good.txt");
    std::fs::write(&good, "MGET a b c\n").unwrap();
    let (code, err) = stderr_of(
        keyplan()
            .args(["simulate", "--format", "json", "--batches"])
            .arg(&good)
            .arg("-o")
            .arg(&out),
    );
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["results"][0]["batch_id"]["line"], 1);
    assert_eq!(v["results"][0]["batch_id"]["command"], "MGET");
}

/// `-o` through a link writes the link's target and leaves the link in place; `/dev/stdout`
/// (a link to the process's stdout) works as it does for other tools.
fn output_through_a_link_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.json");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let keys = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/app.keys");
    let out = keyplan()
        .args(["analyze", "--format", "json", keys, "-o"])
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(v["totals"]["keys"], 20000);
    if std::path::Path::new("/dev/stdout").exists() {
        let out = keyplan()
            .args(["analyze", "--format", "json", keys, "-o", "/dev/stdout"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["totals"]["keys"], 20000);
        assert!(
            std::fs::symlink_metadata("/dev/stdout")
                .map(|m| !m.file_type().is_file())
                .unwrap_or(true),
            "/dev/stdout was replaced by a file"
        );
    }
}

/// Hostile and mistaken inputs: each is refused with a located message, never a panic, a
/// runaway allocation or a silent wrong answer.
fn hostile_inputs_are_refused_with_their_limits() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let keys = write("k.keys", b"a\nb\n");
    let run = |args: &[&std::ffi::OsStr]| -> (Option<i32>, String) {
        let out = keyplan().args(args).output().unwrap();
        (out.status.code(), all_output(&out))
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    // Not UTF-8 in a scheme: the line and column.
    let scheme = write(
        "s.yaml",
        b"version: 1\nkeys:\n  a: { pattern: \"x\xff\" }\n",
    );
    let (code, text) = run(&[&os("lint"), &os("--scheme"), scheme.as_os_str()]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("s.yaml:3:19: not UTF-8"), "{text}");
    // A scheme's own topology with no masters: the scheme is named, not --masters.
    let scheme = write(
        "m0.yaml",
        b"version: 1\ntopology: { masters: 0 }\nkeys:\n  a: { pattern: \"a\" }\n",
    );
    let (code, text) = run(&[&os("lint"), &os("--scheme"), scheme.as_os_str()]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("m0.yaml:2:13: topology: masters: 0") && !text.contains("--masters"),
        "{text}"
    );
    // A whole-file input that never ends.
    let (code, text) = run(&[
        &os("analyze"),
        &os("--topology"),
        &os("/dev/zero"),
        keys.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("larger than 64 MiB"), "{text}");
    // A capture is streamed, but a line that never ends is bounded too.
    let (code, text) = run(&[&os("simulate"), &os("--monitor"), &os("/dev/zero")]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("/dev/zero: line 1 is longer than 256 MiB"),
        "{text}"
    );
    // A sweep regenerates a scheme's batches; a capture's cannot be swept.
    let capture = write(
        "sweep.monitor",
        b"1.0 [0 127.0.0.1:1] \"MGET\" \"a\" \"b\"\n",
    );
    let (code, text) = run(&[
        &os("simulate"),
        &os("--scheme"),
        &os("examples/keyplan.yaml"),
        &os("--sizes"),
        &os("1,10"),
        &os("--monitor"),
        capture.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("the argument '--sizes <N,N,…>' cannot be used with '--monitor <FILE>'"),
        "{text}"
    );
    // Rates that mean nothing.
    for rate in ["0", "NaN", "inf", "1e-300", "1e9"] {
        let (code, text) = run(&[
            &os("analyze"),
            &os("--cluster"),
            &os("redis://127.0.0.1:1"),
            &os("--rate"),
            &os(rate),
        ]);
        assert_eq!(code, Some(2), "{rate}: {text}");
        assert!(
            text.contains("commands per second between 1 and 10000000"),
            "{rate}: {text}"
        );
    }
    // Ring weights past what a ring can be.
    for (name, conf) in [
        (
            "modula.yml",
            "p:\n  hash: fnv1a_64\n  distribution: modula\n  servers:\n   - 10.0.0.1:6379:4294967295\n",
        ),
        (
            "ketama.yml",
            "p:\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n   - 10.0.0.1:6379:4294967295\n   - 10.0.0.2:6379:4294967295\n",
        ),
    ] {
        let t = write(name, conf.as_bytes());
        let (code, text) = run(&[
            &os("analyze"),
            &os("--topology"),
            t.as_os_str(),
            keys.as_os_str(),
        ]);
        assert_eq!(code, Some(2), "{name}: {text}");
        assert!(
            text.contains("lower them (only their ratios matter)"),
            "{name}: {text}"
        );
    }
    // More servers than a ring can index (a libketama server file).
    let mut big = String::new();
    for i in 0..65_536u32 {
        big.push_str(&format!(
            "10.{}.{}.{}:11211 1\n",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        ));
    }
    let t = write("big.servers", big.as_bytes());
    let (code, text) = run(&[
        &os("analyze"),
        &os("--topology"),
        t.as_os_str(),
        keys.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("at most 65535"), "{text}");
    // A YAML file far too large for what it claims to be: said in words, not the reader's.
    let mut yaml = String::from("ring:\n  kind: ketama\n  servers:\n");
    for i in 0..65_536u32 {
        yaml.push_str(&format!(
            "    - {{ name: s{i}, address: 10.0.0.1:{} }}\n",
            1000 + i % 60000
        ));
    }
    let t = write("big.yml", yaml.as_bytes());
    let (code, text) = run(&[
        &os("analyze"),
        &os("--topology"),
        t.as_os_str(),
        keys.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("is this the right file?") && !text.contains("budget"),
        "{text}"
    );
    // A reply display nested 200,000 deep: refused, not a stack overflow.
    let deep = format!("{}(integer) 0\n", "1) ".repeat(200_000));
    let t = write("deep.txt", deep.as_bytes());
    let (code, text) = run(&[
        &os("slot"),
        &os("--topology"),
        t.as_os_str(),
        &os("--topology-format"),
        &os("cluster-reply"),
        &os("a"),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("nested deeper than 32 levels"), "{text}");
    // Batch sizes no batch has.
    let scheme = write(
        "size.yaml",
        b"version: 1\nkeys:\n  a: { pattern: \"a:<id>\" }\nvars:\n  id: { kind: int }\nbatches:\n  b: { command: mget, keys: [a], size: 1000000000 }\n",
    );
    let (code, text) = run(&[&os("simulate"), &os("--scheme"), scheme.as_os_str()]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("size 1000000000 is not between 1 and 1000000"),
        "{text}"
    );
    let ok_scheme = write(
        "ok.yaml",
        b"version: 1\nkeys:\n  a: { pattern: \"a:<id>\" }\nvars:\n  id: { kind: int }\nbatches:\n  b: { command: mget, keys: [a] }\n",
    );
    let (code, text) = run(&[
        &os("simulate"),
        &os("--scheme"),
        ok_scheme.as_os_str(),
        &os("--sizes"),
        &os("99999999999"),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("99999999999 is not in 1..=1000000"), "{text}");
}

/// The `--flags` a subcommand accepts, read from its `--help`.
fn accepted_flags(command: &str) -> std::collections::BTreeSet<String> {
    let out = keyplan().args([command, "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    flags_in(&text)
}

/// Every `--flag` written in `text`.
fn flags_in(text: &str) -> std::collections::BTreeSet<String> {
    let mut flags = std::collections::BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let start = i + at;
        let mut end = start + 2;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'-') {
            end += 1;
        }
        let before_ok = start == 0 || !b[start - 1].is_ascii_alphanumeric();
        if end > start + 2 && before_ok && b[start + 2].is_ascii_alphabetic() {
            flags.insert(text[start..end].trim_end_matches('-').to_string());
        }
        i = end.max(start + 2);
    }
    flags
}

/// Every `help:` line names only flags its command accepts: a run of each command into its
/// common mistakes (a config of several pools, an unknown client or rule, a missing preview,
/// a file of the wrong kind, …) and the flags of each hint checked against the command's
/// `--help`.
fn every_help_hint_names_a_flag_its_command_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let pools = dir.path().join("nutcracker.yml");
    std::fs::write(
        &pools,
        "alpha:\n  listen: 127.0.0.1:22121\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n   - 10.0.0.1:6379:1\n   - 10.0.0.2:6379:1\nbeta:\n  listen: 127.0.0.1:22122\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n   - 10.0.0.3:6379:1\n   - 10.0.0.4:6379:1\n",
    )
    .unwrap();
    let p = pools.to_str().unwrap();
    let garbage = dir.path().join("garbage.txt");
    std::fs::write(&garbage, "this is not a topology\nnor is this\n").unwrap();
    let g = garbage.to_str().unwrap();
    let keys = "examples/app.keys";
    let cases: Vec<Vec<&str>> = vec![
        vec!["analyze", keys, "--topology", p],
        vec!["analyze", keys, "--topology", g],
        vec!["analyze", keys, "--masters", "0"],
        vec!["analyze", "no-such-file.keys"],
        vec!["lint", "--keys", keys, "--select", "KP999"],
        vec!["lint", "--keys", keys, "--topology", p],
        vec![
            "simulate",
            "--batches",
            "examples/batches.txt",
            "--client",
            "nope",
        ],
        vec![
            "simulate",
            "--batches",
            "examples/batches.txt",
            "--topology",
            p,
        ],
        vec!["plan", "--scheme", "examples/keyplan.yaml", "--topology", p],
        vec!["slot", "--topology", p, "a"],
        vec!["rebalance", "--topology", g, "--keys", keys],
        vec![
            "rebalance",
            "--preview",
            "--masters",
            "3",
            "--threshold",
            "-1",
        ],
        vec![
            "rebalance",
            "--preview",
            "--masters",
            "3",
            "--client",
            "nope",
            "--keys",
            keys,
        ],
        vec![
            "reshard",
            "--preview",
            "--masters",
            "3",
            "--from",
            "all",
            "--to",
            "nope",
            "--slots",
            "10",
        ],
        vec![
            "migrate",
            "--from",
            p,
            "--to",
            "redis://127.0.0.1:1",
            "--keys",
            keys,
        ],
        vec![
            "migrate",
            "--from",
            "examples/twemproxy.yml",
            "--to",
            p,
            "--keys",
            keys,
        ],
        vec!["man", "--command", "nope"],
    ];
    let mut checked = 0;
    for args in &cases {
        let out = keyplan().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let accepted = accepted_flags(args[0]);
        for line in err.lines().filter(|l| l.trim_start().starts_with("help:")) {
            for flag in flags_in(line) {
                assert!(
                    accepted.contains(&flag),
                    "keyplan {}: the hint names {flag}, which `{}` does not accept:\n{err}",
                    args.join(" "),
                    args[0]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 8, "the hints named {checked} flags");
    // The several-pools hint of migrate names the side's flag.
    let out = keyplan().args(&cases[14]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--from-pool"), "{err}");
}

/// Errors that used to end without a next step: a binary or a key dump given as the topology,
/// a refused connection, a snapshot cut short.
fn errors_say_what_to_do_next() {
    let (code, err) =
        stderr_of(keyplan().args(["analyze", "examples/app.keys", "--topology", "/bin/ls"]));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("/bin/ls: this is not a topology: it is binary data"),
        "{err}"
    );
    assert!(
        err.contains("help: a topology is CLUSTER NODES text"),
        "{err}"
    );
    let (code, err) = stderr_of(keyplan().args([
        "analyze",
        "examples/app.keys",
        "--topology",
        "examples/app.keys",
    ]));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("it looks like a key dump (one key a line)"),
        "{err}"
    );
    assert!(err.contains("pass it as the keys input instead"), "{err}");
    // A port nobody listens on.
    let port = crate::support::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let (code, err) = stderr_of(keyplan().args(["analyze", "--cluster", &url]));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("Connection refused") || err.contains("refused"),
        "{err}"
    );
    assert!(err.contains(&format!("help: nothing listens there: check that the server runs (`redis-cli -h 127.0.0.1 -p {port} ping`)")), "{err}");
    // A snapshot cut short, from a real server.
    let Some(server) = require_binary("redis-server") else {
        return;
    };
    let mut r = RedisServer::start(&server, false);
    let mut c = r.connect();
    for i in 0..2000 {
        c.call(&[b"SET", format!("key:{i}").as_bytes(), &[b'v'; 50]])
            .unwrap();
    }
    c.call(&[b"SAVE"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir_of = match c.call(&[b"CONFIG", b"GET", b"dir"]).unwrap() {
        crate::support::Reply::Array(v) => match &v[1] {
            crate::support::Reply::Bulk(Some(d)) => String::from_utf8(d.clone()).unwrap(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let rdb = std::fs::read(std::path::Path::new(&dir_of).join("dump.rdb")).unwrap();
    let cut = dir.path().join("cut.rdb");
    std::fs::write(&cut, &rdb[..rdb.len() * 2 / 3]).unwrap();
    r.kill();
    let (code, err) = stderr_of(keyplan().args(["analyze", cut.to_str().unwrap()]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("help: the snapshot is damaged or cut short at that byte"),
        "{err}"
    );
}

/// This module's tests, run by the harness in `main.rs`.
/// Every subcommand's man page has an EXAMPLES section holding its `--help` examples and
/// nothing else: `code` puts prose before its list and `verify` an exit-status line after it.
fn man_page_examples_are_the_helps_examples() {
    for cmd in [
        "analyze",
        "bench",
        "code",
        "lint",
        "migrate",
        "plan",
        "rebalance",
        "reshard",
        "rules",
        "scan",
        "simulate",
        "slot",
        "verify",
    ] {
        let (code, page, err) = crate::support::run_in_process(&["man", "--command", cmd]);
        assert_eq!(code, 0, "{err}");
        let examples = page
            .split(".SH EXAMPLES\n")
            .nth(1)
            .unwrap_or_else(|| panic!("keyplan-{cmd}.1 has no EXAMPLES: {page}"));
        let examples = examples.split("\n.SH ").next().unwrap();
        let got: Vec<String> = examples
            .lines()
            .filter_map(|l| l.strip_prefix("\\fB")?.strip_suffix("\\fR"))
            .map(|l| l.replace("\\-", "-"))
            .collect();
        assert!(!got.is_empty(), "keyplan-{cmd}.1: {examples}");
        for e in &got {
            assert!(
                e.contains("keyplan ") && !e.to_lowercase().starts_with("exit status"),
                "keyplan-{cmd}.1: {e:?} is not a command line"
            );
        }
        if cmd == "code" {
            assert_eq!(got.len(), 4, "{got:?}");
            assert_eq!(got[0], "keyplan code src/");
        }
    }
}

/// Bash completion offers the client profiles wherever `--client` is accepted (plan's took
/// file names).
fn completions_offer_client_names_for_every_client_flag() {
    let (code, script, err) = crate::support::run_in_process(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = script.lines().collect();
    let mut seen = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.trim() == "--client)" {
            seen += 1;
            let reply = lines[i + 1];
            assert!(
                reply.contains("compgen -W") && reply.contains("jedis") && reply.contains("all"),
                "line {}: {reply}",
                i + 2
            );
        }
    }
    assert!(seen >= 4, "simulate, plan, rebalance, reshard: {seen}");
}

/// At 60 columns every `--help` example is still whole: a long one is broken before a flag
/// and continued with ` \\`, never wrapped by the terminal into half a command (`code`'s
/// examples follow a paragraph of prose).
fn help_examples_break_with_a_continuation_mark() {
    if !crate::terminal::have_script() {
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("keyplan")
        .display()
        .to_string();
    let examples = |cmd: &str, columns: u16| -> Vec<String> {
        let (code, typescript) = crate::terminal::in_pty(&format!("'{bin}' {cmd} --help"), columns);
        assert_eq!(code, 0, "{typescript}");
        let lines = crate::terminal::screen_lines(&typescript);
        let mut list: Vec<String> = Vec::new();
        let mut continued = false;
        for l in lines
            .iter()
            .skip_while(|l| l.trim_end() != "Examples:")
            .skip(1)
            .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
        {
            let part = l.trim().trim_end_matches(" \\");
            match (continued, list.last_mut()) {
                (true, Some(last)) => {
                    last.push(' ');
                    last.push_str(part);
                }
                _ => list.push(part.to_string()),
            }
            continued = l.ends_with(" \\");
        }
        list
    };
    for cmd in [
        "analyze",
        "code",
        "migrate",
        "rebalance",
        "simulate",
        "verify",
    ] {
        let wide = examples(cmd, 200);
        assert!(!wide.is_empty(), "{cmd}");
        assert_eq!(examples(cmd, 60), wide, "{cmd} --help at 60 columns");
    }
}

/// keyplan's own YAML given as keys is named for what it is, whichever YAML style it is
/// written in: examples/plan/shop.yaml writes its patterns in flow mappings
/// (`profile: { pattern: … }`) and was read as 22 keys with a verdict, exit 0.
fn keyplans_own_yaml_is_not_a_key_dump() {
    let dir = tempfile::tempdir().unwrap();
    let enterprise = dir.path().join("enterprise.yaml");
    std::fs::write(
        &enterprise,
        "enterprise: { shards: 3, hashing: standard }\n",
    )
    .unwrap();
    let cases = [
        (
            std::path::PathBuf::from("examples/plan/shop.yaml"),
            "a keyplan key scheme",
            "--scheme FILE",
        ),
        (enterprise, "keyplan topology YAML", "--topology FILE"),
    ];
    for (path, looks, help) in cases {
        for cmd in [&["analyze"][..], &["lint", "--keys"]] {
            let (code, err) = stderr_of(keyplan().args(cmd).arg(&path));
            assert_eq!(code, Some(2), "{cmd:?} {}: {err}", path.display());
            assert!(err.contains(looks) && err.contains(help), "{err}");
        }
    }
}

pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "keyplans_own_yaml_is_not_a_key_dump",
        keyplans_own_yaml_is_not_a_key_dump,
    ),
    (
        "help_examples_break_with_a_continuation_mark",
        help_examples_break_with_a_continuation_mark,
    ),
    (
        "completions_offer_client_names_for_every_client_flag",
        completions_offer_client_names_for_every_client_flag,
    ),
    (
        "man_page_examples_are_the_helps_examples",
        man_page_examples_are_the_helps_examples,
    ),
    ("errors_say_what_to_do_next", errors_say_what_to_do_next),
    (
        "every_help_hint_names_a_flag_its_command_accepts",
        every_help_hint_names_a_flag_its_command_accepts,
    ),
    (
        "a_cluster_address_without_a_scheme_suggests_the_url",
        a_cluster_address_without_a_scheme_suggests_the_url,
    ),
    (
        "files_that_are_not_key_dumps_are_recognised",
        files_that_are_not_key_dumps_are_recognised,
    ),
    (
        "a_server_that_wants_a_password_says_how_to_give_it",
        a_server_that_wants_a_password_says_how_to_give_it,
    ),
    (
        "a_port_that_does_not_speak_resp_is_named",
        a_port_that_does_not_speak_resp_is_named,
    ),
    (
        "an_empty_dump_is_an_error_unless_allowed",
        an_empty_dump_is_an_error_unless_allowed,
    ),
    (
        "a_byte_budget_is_reported_in_the_users_unit_with_the_excess",
        a_byte_budget_is_reported_in_the_users_unit_with_the_excess,
    ),
    ("man_pages_per_subcommand", man_pages_per_subcommand),
    (
        "help_lists_every_topology_format_and_scan_only_its_options",
        help_lists_every_topology_format_and_scan_only_its_options,
    ),
    (
        "plan_reads_the_scheme_of_the_current_directory",
        plan_reads_the_scheme_of_the_current_directory,
    ),
    (
        "a_failed_run_leaves_no_output_file",
        a_failed_run_leaves_no_output_file,
    ),
    (
        "output_through_a_link_keeps_the_link",
        output_through_a_link_keeps_the_link,
    ),
    (
        "hostile_inputs_are_refused_with_their_limits",
        hostile_inputs_are_refused_with_their_limits,
    ),
];
