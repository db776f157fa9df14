//! Batches as written, judged by keyplan and by a real 3-master cluster: every multi-key command
//! the key specifications cover, MULTI … EXEC blocks, and scripts that touch keys they did not
//! declare. The batches are captured with MONITOR from a real standalone server (so scripts'
//! `[0 lua]` lines are the server's own), judged by `keyplan simulate --monitor`, and replayed
//! on the cluster, routed only by the servers' MOVED answers; the verdicts must agree, batch by
//! batch.

use crate::analyze::Cluster;
use crate::support::{RedisServer, Reply, Resp, json_of, keyplan, require_binary};

/// Keys: `a` slot 15495, `b` 3300, `c` 7365 (three masters); `{u}…` 11826 (a's master).
const CORPUS: &[&[&str]] = &[
    &["MGET", "{u}a", "{u}b"],
    &["MGET", "a", "b"],
    &["DEL", "a", "{u}a"],
    &["EXISTS", "{u}1", "{u}2", "{u}3"],
    &["BLPOP", "q1", "q2", "0.01"],
    &["BLPOP", "{q}1", "{q}2", "0.01"],
    &["BRPOP", "a", "b", "c", "0.01"],
    &["RPOPLPUSH", "a", "b"],
    &["LMOVE", "{u}a", "{u}b", "LEFT", "RIGHT"],
    &["LMOVE", "a", "c", "LEFT", "RIGHT"],
    &["BLMOVE", "a", "b", "LEFT", "RIGHT", "0.01"],
    &["BZPOPMIN", "z1", "z2", "0.01"],
    &["LMPOP", "2", "a", "b", "LEFT"],
    &["LMPOP", "2", "{u}a", "{u}c", "LEFT"],
    &["RENAME", "a", "b"],
    &["COPY", "a", "c"],
    &["SMOVE", "a", "b", "m"],
    &["SUNIONSTORE", "d", "a", "b"],
    &["SUNIONSTORE", "{u}d", "{u}a", "{u}b"],
    &["ZUNIONSTORE", "d", "2", "a", "b"],
    &["ZUNIONSTORE", "{u}d", "2", "{u}a", "{u}b"],
    &["ZDIFF", "2", "a", "b"],
    &["SINTERCARD", "2", "a", "b"],
    &["XREAD", "COUNT", "1", "STREAMS", "s1", "s2", "0", "0"],
    &["XREAD", "COUNT", "1", "STREAMS", "{s}1", "{s}2", "0", "0"],
    &["SORT", "a", "STORE", "b"],
    &["SORT", "{u}a", "BY", "nosort", "STORE", "{u}b"],
    &["GEORADIUS", "a", "0", "0", "1", "km", "STORE", "b"],
    &["PFMERGE", "a", "b"],
    &["BITOP", "AND", "d", "a", "b"],
    &["MSET", "a", "1", "b", "2"],
    &["MSET", "{u}a", "1", "{u}b", "2"],
    &["MULTI"],
    &["SET", "a", "1"],
    &["SET", "b", "2"],
    &["EXEC"],
    &["MULTI"],
    &["SET", "{u}a", "1"],
    &["INCR", "{u}b"],
    &["EXEC"],
    &["MULTI"],
    &["SET", "a", "1"],
    &["SET", "{u}x", "2"],
    &["EXEC"],
    &["EVAL", "return redis.call('get', KEYS[1])", "2", "a", "b"],
    &[
        "EVAL",
        "return redis.call('get', KEYS[1])",
        "2",
        "{u}a",
        "{u}b",
    ],
    &[
        "EVAL",
        "redis.call('set', '{u}z', '1'); return 1",
        "1",
        "{u}a",
    ],
    &["EVAL", "redis.call('set', 'b', '1'); return 1", "1", "{u}a"],
    &["EVAL", "redis.call('set', 'a', '1'); return 1", "1", "{u}a"],
    &[
        "EVAL",
        "#!lua flags=allow-cross-slot-keys\nredis.call('set', 'a', '1'); return 1",
        "1",
        "{u}a",
    ],
    &[
        "EVAL",
        "#!lua flags=allow-cross-slot-keys\nredis.call('set', 'b', '1'); return 1",
        "1",
        "{u}a",
    ],
    &[
        "EVAL",
        "return redis.call('mget', '{u}a', 'a')",
        "1",
        "{u}a",
    ],
    &[
        "EVAL",
        "redis.call('set', 'a', '1'); redis.call('set', '{u}z', '1'); return 1",
        "1",
        "{u}a",
    ],
    &["EVAL", "redis.call('set', 'c', '1'); return 1", "0"],
];

/// The batches of the corpus: single commands, and MULTI … EXEC blocks.
fn batches() -> Vec<Vec<Vec<&'static str>>> {
    let mut out = Vec::new();
    let mut block: Option<Vec<Vec<&str>>> = None;
    for c in CORPUS {
        match c[0] {
            "MULTI" => block = Some(Vec::new()),
            "EXEC" => out.push(block.take().unwrap()),
            _ => match &mut block {
                Some(b) => b.push(c.to_vec()),
                None => out.push(vec![c.to_vec()]),
            },
        }
    }
    out
}

fn args(c: &[&str]) -> Vec<Vec<u8>> {
    c.iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn call(con: &mut Resp, c: &[Vec<u8>]) -> Reply {
    let refs: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
    con.call(&refs).unwrap()
}

/// The server's answer, as an outcome class: `ok` (whatever else the command says),
/// `refused` (CROSSSLOT, an aborted transaction) or `script` (a script's access refused).
fn class(r: &Reply) -> &'static str {
    let Reply::Error(e) = r else {
        return "ok";
    };
    if e.starts_with("CROSSSLOT") || e.starts_with("EXECABORT") {
        "refused"
    } else if e.contains("Script attempted") || e.contains("in script attempted") {
        "script"
    } else {
        "ok"
    }
}

/// keyplan's verdict as the same class (Redis 7.0 and Valkey 8 rules; keyplan says in the
/// message what Redis 7.4+ would refuse besides).
fn keyplan_class(b: &serde_json::Value) -> &'static str {
    match b["outcome"].as_str().unwrap() {
        "ok" => "ok",
        "crossslot" => "refused",
        "non-local-script-key" => "script",
        other => panic!("unexpected outcome {other}"),
    }
}

/// The MONITOR capture of the corpus run on a standalone server.
fn capture(server: &RedisServer) -> String {
    let mut mon = server.connect();
    assert_eq!(mon.call(&[b"MONITOR"]).unwrap(), Reply::Status("OK".into()));
    let mut con = server.connect();
    for c in CORPUS {
        call(&mut con, &args(c));
    }
    call(&mut con, &args(&["ECHO", "end-of-capture"]));
    let mut text = String::from("OK\n");
    loop {
        let Reply::Status(line) = mon.read().unwrap() else {
            panic!("MONITOR sent something else");
        };
        if line.contains("end-of-capture") {
            break;
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Sends one batch to the cluster as a cluster client would: to node 0, following MOVED (a
/// MULTI block goes to the owner of its first key, which the server's own `COMMAND GETKEYS`
/// names, found the same way with a harmless `EXISTS`); a script with no keys goes to every
/// node and counts as refused if any node refuses it.
fn replay(cluster: &Cluster, batch: &[Vec<Vec<u8>>]) -> &'static str {
    let mut conns: Vec<Resp> = cluster.nodes.iter().map(|n| n.connect()).collect();
    let port_of = |e: &str| -> usize {
        let port: u16 = e.rsplit(':').next().unwrap().parse().unwrap();
        cluster.nodes.iter().position(|n| n.port == port).unwrap()
    };
    let routed = |conns: &mut Vec<Resp>, c: &[Vec<u8>]| -> Reply {
        let mut node = 0;
        loop {
            match call(&mut conns[node], c) {
                Reply::Error(e) if e.starts_with("MOVED ") => node = port_of(&e),
                other => return other,
            }
        }
    };
    let is = |c: &[Vec<u8>], name: &str| c[0].eq_ignore_ascii_case(name.as_bytes());
    if batch.len() == 1 && is(&batch[0], "EVAL") && batch[0][2] == b"0" {
        let c = &batch[0];
        let classes: Vec<&str> = conns.iter_mut().map(|con| class(&call(con, c))).collect();
        return classes.into_iter().find(|c| *c != "ok").unwrap_or("ok");
    }
    if batch.len() == 1 {
        return class(&routed(&mut conns, &batch[0]));
    }
    let first_key = batch.iter().find_map(|c| {
        let mut q = vec![b"COMMAND".to_vec(), b"GETKEYS".to_vec()];
        q.extend(c.iter().cloned());
        match call(&mut conns[0], &q) {
            Reply::Array(keys) => keys.into_iter().find_map(|k| match k {
                Reply::Bulk(Some(k)) => Some(k),
                _ => None,
            }),
            _ => None,
        }
    });
    let node = match first_key {
        Some(k) => match call(&mut conns[0], &[b"EXISTS".to_vec(), k]) {
            Reply::Error(e) if e.starts_with("MOVED ") => port_of(&e),
            _ => 0,
        },
        None => 0,
    };
    let con = &mut conns[node];
    call(con, &args(&["MULTI"]));
    for c in batch {
        call(con, c);
    }
    class(&call(con, &args(&["EXEC"])))
}

fn keyplan_judges_batches_as_the_cluster_does() {
    if let Some(cluster) = Cluster::create() {
        judge(&cluster);
    }
}

fn keyplan_judges_batches_as_a_valkey_cluster_does() {
    if let Some(cluster) = Cluster::create_valkey() {
        judge(&cluster);
    }
}

fn judge(cluster: &Cluster) {
    let Some(redis) = require_binary("redis-server") else {
        return;
    };
    let standalone = RedisServer::start(&redis, false);
    let text = capture(&standalone);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.txt");
    std::fs::write(&cap, &text).unwrap();
    let nodes = match cluster.nodes[0]
        .connect()
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    {
        Reply::Bulk(Some(b)) => b,
        other => panic!("CLUSTER NODES replied {other:?}"),
    };
    let topo = dir.path().join("nodes.txt");
    std::fs::write(&topo, nodes).unwrap();
    let report = json_of(keyplan().args([
        "simulate",
        "--monitor",
        cap.to_str().unwrap(),
        "--topology",
        topo.to_str().unwrap(),
        "--strategy",
        "pipeline",
        "--client",
        "all",
        "--format",
        "json",
    ]));
    let judged: Vec<&str> = report["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(keyplan_class)
        .collect();
    let corpus = batches();
    assert_eq!(
        judged.len(),
        corpus.len(),
        "one batch per corpus entry:\n{text}"
    );
    let mut wrong = Vec::new();
    for (b, mine) in corpus.iter().zip(&judged) {
        let cmds: Vec<Vec<Vec<u8>>> = b.iter().map(|c| args(c)).collect();
        let real = replay(cluster, &cmds);
        if real != *mine {
            wrong.push(format!("{b:?}: the cluster says {real}, keyplan {mine}"));
        }
    }
    assert!(wrong.is_empty(), "verdicts differ:\n{}", wrong.join("\n"));
    // Every client profile fails a script the cluster refuses for keys it did not declare: no
    // client can route by keys it is not told.
    let batches = report["batches"].as_array().unwrap();
    let mut scripts = 0;
    for r in report["results"].as_array().unwrap() {
        let b = batches
            .iter()
            .find(|b| b["batch_id"] == r["batch_id"])
            .expect("a result names its batch");
        if keyplan_class(b) != "script" || r["outcome"] == "not-modelled" {
            continue;
        }
        scripts += 1;
        assert_eq!(r["outcome"], "server-error", "{}: {r}", b["batch"]);
    }
    assert!(scripts > 0, "no refused script judged by a client profile");
    // The corpus covers every class.
    for class in ["ok", "refused", "script"] {
        assert!(judged.contains(&class), "no {class} batch in the corpus");
    }
}

/// One MONITOR line: its client and arguments (an independent reading of redis-cli's quoting:
/// `\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b`, `\xHH`).
fn monitor_line(line: &str) -> Option<(String, Vec<Vec<u8>>)> {
    let open = line.find(" [")?;
    let close = line[open..].find("] ")? + open;
    let client = line[open + 2..close].split_once(' ')?.1.to_string();
    let b = &line.as_bytes()[close + 2..];
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        i += 1;
        let mut arg = Vec::new();
        while i < b.len() && b[i] != b'"' {
            if b[i] == b'\\' && i + 1 < b.len() {
                i += 1;
                match b[i] {
                    b'n' => arg.push(b'\n'),
                    b'r' => arg.push(b'\r'),
                    b't' => arg.push(b'\t'),
                    b'a' => arg.push(7),
                    b'b' => arg.push(8),
                    b'x' => {
                        let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok()?;
                        arg.push(u8::from_str_radix(hex, 16).ok()?);
                        i += 2;
                    }
                    c => arg.push(c),
                }
            } else {
                arg.push(b[i]);
            }
            i += 1;
        }
        i += 1;
        out.push(arg);
    }
    Some((client, out))
}

/// Python with the libraries the captures come from (`.ci/run` installs them into its venv).
pub(crate) fn library_python() -> Option<String> {
    let python = std::env::var("KEYPLAN_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&python)
        .args(["-c", "import rq, kombu, redis"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "rq and kombu are not importable by {python}, and CI is set: .ci/run must install them"
        );
    }
    crate::support::not_run(format!("rq and kombu are not importable by {python}"));
    None
}

/// A capture of real libraries (rq's transactions, kombu's BRPOP over priority lists), made with
/// MONITOR on a standalone server; every batch that is not a script (a script's keys depend on
/// the data it meets) replayed on a real cluster: keyplan's verdicts equal the cluster's.
fn real_library_captures_are_judged_as_the_cluster_does() {
    let Some(python) = library_python() else {
        return;
    };
    let Some(redis) = require_binary("redis-server") else {
        return;
    };
    let standalone = RedisServer::start(&redis, false);
    let drive =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/libraries/drive.py");
    let mut mon = standalone.connect();
    assert_eq!(mon.call(&[b"MONITOR"]).unwrap(), Reply::Status("OK".into()));
    for lib in ["rq", "kombu"] {
        let out = std::process::Command::new(&python)
            .arg(&drive)
            .arg(standalone.port.to_string())
            .arg(lib)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{lib}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    standalone
        .connect()
        .call(&[b"ECHO", b"end-of-capture"])
        .unwrap();
    let mut text = String::from("OK\n");
    loop {
        let Reply::Status(line) = mon.read().unwrap() else {
            panic!("MONITOR sent something else");
        };
        if line.contains("end-of-capture") {
            break;
        }
        text.push_str(&line);
        text.push('\n');
    }
    let lines: Vec<&str> = text.lines().collect();
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.txt");
    std::fs::write(&cap, &text).unwrap();
    let nodes = match cluster.nodes[0]
        .connect()
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    {
        Reply::Bulk(Some(b)) => b,
        other => panic!("CLUSTER NODES replied {other:?}"),
    };
    let topo = dir.path().join("nodes.txt");
    std::fs::write(&topo, nodes).unwrap();
    let report = json_of(keyplan().args([
        "simulate",
        "--monitor",
        cap.to_str().unwrap(),
        "--topology",
        topo.to_str().unwrap(),
        "--strategy",
        "pipeline",
        "--format",
        "json",
    ]));
    let (mut judged, mut wrong) = (0, Vec::new());
    let mut seen = std::collections::BTreeMap::new();
    for b in report["batches"].as_array().unwrap() {
        let command = b["batch_id"]["command"].as_str().unwrap();
        if command.starts_with("EVAL") || command.starts_with("FCALL") {
            continue;
        }
        let at = b["batch_id"]["line"].as_u64().unwrap() as usize - 1;
        let (client, first) = monitor_line(lines[at]).unwrap();
        let mut cmds = Vec::new();
        if command == "MULTI" {
            for l in &lines[at + 1..] {
                let Some((c, a)) = monitor_line(l) else {
                    continue;
                };
                if c != client {
                    continue;
                }
                if a[0].eq_ignore_ascii_case(b"EXEC") {
                    break;
                }
                cmds.push(a);
            }
        } else {
            let mut a = first;
            // A blocking pop waits for its timeout on an empty list: a short one.
            if [&b"BRPOP"[..], b"BLPOP", b"BZPOPMIN", b"BZPOPMAX"]
                .iter()
                .any(|n| a[0].eq_ignore_ascii_case(n))
            {
                *a.last_mut().unwrap() = b"0.01".to_vec();
            }
            cmds.push(a);
        }
        let real = replay(&cluster, &cmds);
        let mine = keyplan_class(b);
        *seen.entry(format!("{command} {real}")).or_insert(0) += 1;
        judged += 1;
        if real != mine {
            wrong.push(format!(
                "line {}: {}: the cluster says {real}, keyplan {mine}",
                at + 1,
                b["batch"]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {judged} verdicts differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // Both kinds are there: rq's cross-slot transactions and kombu's BRPOP over its lists.
    assert!(seen.keys().any(|k| k == "MULTI refused"), "{seen:?}");
    assert!(seen.keys().any(|k| k == "BRPOP refused"), "{seen:?}");
    eprintln!("library capture: {judged} batches replayed: {seen:?}");
}

/// `keyplan code`'s verdicts against a real cluster: rq 2.6.0 runs on a standalone server
/// while every pipeline and transaction it sends is recorded with the line of rq's source that
/// sends it (`tests/fixtures/libraries/sites.py`); each recorded batch is replayed on a real
/// 3-master cluster. Every executed batch is at a site keyplan found; a site keyplan calls
/// one-slot always runs; a site it calls cross-slot is refused at least once.
fn code_sites_against_a_real_cluster() {
    let Some(python) = library_python() else {
        return;
    };
    let Some(dir) = crate::code::rq_dir() else {
        return;
    };
    let Some((_tmp, recorded)) = record_sites(python.as_ref(), "sites.py", None) else {
        return;
    };
    judge_recorded_sites("rq", &dir, &recorded, 100);
}

/// Runs `PROGRAM DRIVER [PACKAGE] PORT OUT.json` (a driver of `tests/fixtures/libraries`)
/// against a fresh standalone server: the file of the batches it recorded (in the directory
/// returned with it).
fn record_sites(
    program: &std::ffi::OsStr,
    driver: &str,
    package: Option<&std::path::Path>,
) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    let redis = require_binary("redis-server")?;
    let standalone = RedisServer::start(&redis, false);
    let tmp = tempfile::tempdir().unwrap();
    let recorded = tmp.path().join("sites.json");
    let driver = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/libraries")
        .join(driver);
    let mut run = std::process::Command::new(program);
    run.arg(&driver);
    if let Some(p) = package {
        run.arg(p);
    }
    let out = run
        .arg(standalone.port.to_string())
        .arg(&recorded)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((tmp, recorded))
}

/// The same for Node: bull 4.16.5 (from npm; `.ci/run` installs it and exports KEYPLAN_BULL,
/// the package's directory) run by `sites.js` on ioredis against a standalone server, each
/// pipeline and MULTI it sends recorded with the line of bull's source that sends it, then
/// replayed on a real cluster.
fn node_code_sites_against_a_real_cluster() {
    let Some(bull) = std::env::var_os("KEYPLAN_BULL") else {
        if std::env::var_os("CI").is_some() {
            panic!("KEYPLAN_BULL is not set, and CI is set: .ci/run must install bull");
        }
        crate::support::not_run("KEYPLAN_BULL (bull 4.16.5 from npm) is not set");
        return;
    };
    let bull = std::path::PathBuf::from(bull);
    let version: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bull.join("package.json")).unwrap()).unwrap();
    assert_eq!(
        version["version"], "4.16.5",
        "these lines are bull 4.16.5's"
    );
    let Some(node) = require_binary("node") else {
        return;
    };
    let Some((_tmp, recorded)) = record_sites(node.as_os_str(), "sites.js", Some(&bull)) else {
        return;
    };
    judge_recorded_sites("bull", &bull, &recorded, 8);
}

/// Replays every batch a driver recorded (`[{file, line, commands}]`, paths relative to the
/// package) on a real 3-master cluster, and checks each site's outcomes against the verdict
/// `keyplan code DIR` gives the site at that line: a site called one-slot always runs, one
/// called cross-slot is refused at least once, and no batch comes from a line keyplan missed.
fn judge_recorded_sites(
    name: &str,
    dir: &std::path::Path,
    recorded: &std::path::Path,
    at_least: usize,
) {
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(recorded).unwrap()).unwrap();
    assert!(
        records.len() >= at_least,
        "{} batches recorded",
        records.len()
    );
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let (_, report) = crate::code::sites_of(dir);
    // Each site by both its lines: the one that opens it and the one that sends it.
    let verdicts: std::collections::BTreeMap<(String, u64), String> = report["sites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            let v = match &s["cross_slot"] {
                serde_json::Value::Bool(b) => b.to_string(),
                other => other.as_str().unwrap().to_string(),
            };
            let file = s["file"].as_str().unwrap().to_string();
            [&s["line"], &s["send_line"]]
                .into_iter()
                .filter_map(serde_json::Value::as_u64)
                .map(move |l| ((file.clone(), l), v.clone()))
        })
        .collect();
    // Outcomes per site: (refused or split, ran).
    let mut outcomes: std::collections::BTreeMap<(String, u64), (usize, usize)> =
        Default::default();
    for r in &records {
        let batch: Vec<Vec<Vec<u8>>> = r["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                c.as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().chars().map(|ch| ch as u8).collect())
                    .collect()
            })
            .collect();
        let site = (
            r["file"].as_str().unwrap().to_string(),
            r["line"].as_u64().unwrap(),
        );
        let e = outcomes.entry(site).or_default();
        match replay(&cluster, &batch) {
            "refused" => e.0 += 1,
            _ => e.1 += 1,
        }
    }
    let mut wrong = Vec::new();
    let mut summary = Vec::new();
    for (site, (refused, ran)) in &outcomes {
        let at = format!("{}:{}", site.0, site.1);
        match verdicts.get(site).map(String::as_str) {
            None => wrong.push(format!(
                "{at}: ran {} times, no site found there",
                refused + ran
            )),
            Some("false") if *refused > 0 => wrong.push(format!(
                "{at}: one slot, but the cluster refused it {refused} times"
            )),
            Some("true") if *refused == 0 => {
                wrong.push(format!("{at}: cross-slot, but the cluster ran all {ran}"))
            }
            Some(v) => summary.push(format!("{at} {v}: refused {refused}, ran {ran}")),
        }
    }
    eprintln!(
        "{name} on a real cluster: {} batches at {} sites\n  {}",
        records.len(),
        outcomes.len(),
        summary.join("\n  ")
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Both kinds are there.
    assert!(
        outcomes
            .iter()
            .any(|(s, o)| verdicts[s] == "true" && o.0 > 0)
    );
    assert!(
        outcomes
            .iter()
            .any(|(s, o)| verdicts[s] == "false" && o.1 > 0)
    );
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "keyplan_judges_batches_as_the_cluster_does",
        keyplan_judges_batches_as_the_cluster_does,
    ),
    (
        "keyplan_judges_batches_as_a_valkey_cluster_does",
        keyplan_judges_batches_as_a_valkey_cluster_does,
    ),
    (
        "code_sites_against_a_real_cluster",
        code_sites_against_a_real_cluster,
    ),
    (
        "node_code_sites_against_a_real_cluster",
        node_code_sites_against_a_real_cluster,
    ),
    (
        "real_library_captures_are_judged_as_the_cluster_does",
        real_library_captures_are_judged_as_the_cluster_does,
    ),
];
