//! `keyplan analyze` against a real 3-master cluster made by `redis-cli --cluster create`, and
//! its report on generated data.

pub(crate) use crate::cluster::Cluster;
use crate::keygen::KeyGen;
use crate::support::{RedisServer, Reply, Resp, all_output, json_of, keyplan, require_binary};
use std::collections::BTreeMap;
use std::process::Command;

impl Cluster {
    fn port_index(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|n| n.port == port)
            .expect("redirect to a cluster node")
    }

    /// Writes every key, routed only by the servers' own MOVED redirects (never by keyplan's
    /// slot code). Returns how many redirects were followed.
    pub(crate) fn load(&self, keys: &[Vec<u8>]) -> usize {
        let mut conns: Vec<Resp> = self.nodes.iter().map(|n| n.connect()).collect();
        let mut pending: Vec<(usize, &Vec<u8>)> = keys.iter().map(|k| (0, k)).collect();
        let mut redirects = 0;
        while !pending.is_empty() {
            let mut next = Vec::new();
            for (node, batch) in group(&pending) {
                let mut buf = Vec::new();
                for k in &batch {
                    Resp::encode(&mut buf, &[b"SET", k, b"v"]);
                }
                conns[node].send(&buf).unwrap();
                for k in batch {
                    match conns[node].read().unwrap() {
                        Reply::Status(s) if s == "OK" => {}
                        Reply::Error(e) if e.starts_with("MOVED ") => {
                            let port: u16 = e.rsplit(':').next().unwrap().parse().unwrap();
                            next.push((self.port_index(port), k));
                            redirects += 1;
                        }
                        other => panic!("SET replied {other:?}"),
                    }
                }
            }
            pending = next;
        }
        redirects
    }

    pub(crate) fn dbsize(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .map(|n| match n.connect().call(&[b"DBSIZE"]).unwrap() {
                Reply::Int(v) => v as u64,
                other => panic!("DBSIZE replied {other:?}"),
            })
            .collect()
    }
}

fn group<'a>(pending: &[(usize, &'a Vec<u8>)]) -> BTreeMap<usize, Vec<&'a Vec<u8>>> {
    let mut m: BTreeMap<usize, Vec<&Vec<u8>>> = BTreeMap::new();
    for (n, k) in pending {
        m.entry(*n).or_default().push(k);
    }
    m
}

fn analyze_json(args: &[&str], dump: &std::path::Path) -> serde_json::Value {
    json_of(
        keyplan()
            .arg("analyze")
            .args(args)
            .args(["--format", "json"])
            .arg(dump),
    )
}

fn per_node_counts_equal_each_masters_dbsize() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let mut g = KeyGen::new(99);
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut line = String::new();
    let mut seen = std::collections::BTreeSet::new();
    while keys.len() < 5000 {
        line.clear();
        g.next_key(&mut line);
        if seen.insert(line.clone()) {
            keys.push(line.clone().into_bytes());
        }
    }
    // Binary keys too (written in quoted form to the dump).
    for i in 0..200u32 {
        keys.push(format!("bin:\u{1}{i}\n{{t{}}}\u{ff}", i % 7).into_bytes());
    }
    let redirects = cluster.load(&keys);
    assert!(redirects > 0, "keys were routed by MOVED redirects");
    let dbsize = cluster.dbsize();
    assert_eq!(dbsize.iter().sum::<u64>(), keys.len() as u64);

    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("keys.quoted");
    let text: String = keys
        .iter()
        .map(|k| keyplan::keys::quote(k) + "\n")
        .collect();
    std::fs::write(&dump, text).unwrap();

    // The redis-cli create layout: master i is the i-th node given to redis-cli.
    let v = analyze_json(&["--masters", "3"], &dump);
    let got: Vec<u64> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["keys"].as_u64().unwrap())
        .collect();
    assert_eq!(got, dbsize, "analyze --masters 3 per-node keys vs DBSIZE");

    // The cluster's own CLUSTER NODES, with a slot in migration.
    let mut c0 = cluster.nodes[0].connect();
    let ids: Vec<String> = cluster
        .nodes
        .iter()
        .map(
            |n| match n.connect().call(&[b"CLUSTER", b"MYID"]).unwrap() {
                Reply::Bulk(Some(id)) => String::from_utf8(id).unwrap(),
                other => panic!("CLUSTER MYID replied {other:?}"),
            },
        )
        .collect();
    let r = c0
        .call(&[
            b"CLUSTER",
            b"SETSLOT",
            b"100",
            b"MIGRATING",
            ids[1].as_bytes(),
        ])
        .unwrap();
    assert_eq!(r, Reply::Status("OK".into()));
    let nodes_text = match c0.call(&[b"CLUSTER", b"NODES"]).unwrap() {
        Reply::Bulk(Some(t)) => t,
        other => panic!("CLUSTER NODES replied {other:?}"),
    };
    assert!(String::from_utf8_lossy(&nodes_text).contains("[100->-"));
    let topo = dir.path().join("nodes.txt");
    std::fs::write(&topo, &nodes_text).unwrap();
    let v = analyze_json(&["--topology", topo.to_str().unwrap()], &dump);
    let by_addr: BTreeMap<String, u64> =
        crate::support::field_pairs(&v["nodes"], "address", "keys")
            .into_iter()
            .map(|(a, k)| (a, k as u64))
            .collect();
    for (n, size) in cluster.nodes.iter().zip(&dbsize) {
        assert_eq!(by_addr[&format!("127.0.0.1:{}", n.port)], *size);
    }
    // CLUSTER SLOTS and SHARDS as redis-cli prints them (RESP2, RESP3, --json) agree too.
    let cli = require_binary("redis-cli").unwrap();
    for (args, name) in [
        (&["--no-raw", "cluster", "slots"][..], "slots2"),
        (&["-3", "--no-raw", "cluster", "slots"][..], "slots3"),
        (&["--no-raw", "cluster", "shards"][..], "shards2"),
        (&["-3", "--no-raw", "cluster", "shards"][..], "shards3"),
        (&["--json", "cluster", "shards"][..], "shards-json"),
        (&["--json", "cluster", "slots"][..], "slots-json"),
    ] {
        let out = Command::new(&cli)
            .args(["-p", &cluster.nodes[2].port.to_string()])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "redis-cli {args:?}");
        let path = dir.path().join(name);
        std::fs::write(&path, &out.stdout).unwrap();
        let v = analyze_json(&["--topology", path.to_str().unwrap()], &dump);
        let by_addr: BTreeMap<String, u64> =
            crate::support::field_pairs(&v["nodes"], "address", "keys")
                .into_iter()
                .map(|(a, k)| (a, k as u64))
                .collect();
        for (n, size) in cluster.nodes.iter().zip(&dbsize) {
            assert_eq!(by_addr[&format!("127.0.0.1:{}", n.port)], *size, "{name}");
        }
    }
    let mig = &v["topology"]["migrating"][0];
    assert_eq!(mig["slot"], 100);
    assert_eq!(mig["direction"], "migrating");
    assert_eq!(mig["peer"], format!("127.0.0.1:{}", cluster.nodes[1].port));
}

fn report_on_the_bundled_example() {
    let v = analyze_json(&[], std::path::Path::new("examples/app.keys"));
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["totals"]["keys"], 20000);
    assert_eq!(v["totals"]["has_bytes"], true);
    assert!(
        v["topology"]["source"]
            .as_str()
            .unwrap()
            .starts_with("default: 3 masters")
    );
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["slot_ranges"][0], serde_json::json!([0, 5460]));
    let sum: u64 = nodes.iter().map(|n| n["keys"].as_u64().unwrap()).sum();
    assert_eq!(sum, 20000);
    let patterns: Vec<&str> = v["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pattern"].as_str().unwrap())
        .collect();
    for want in [
        "user:<int>:profile",
        "session:<uuid>",
        "rate:<ip>:<date>",
        "cache:page:<hex>",
        "product:SKU-<int>",
        "feed:{group_<int>}:user:<int>",
        "order:{<int>}:items",
        "settings:<word><int>",
        "lb:{global}:<word>:<date>",
    ] {
        assert!(patterns.contains(&want), "{want} missing from {patterns:?}");
    }
    let feed = v["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pattern"] == "feed:{group_<int>}:user:<int>")
        .unwrap();
    assert_eq!(feed["tag"], "group_<int>");
    let card = feed["tag_cardinality"].as_u64().unwrap();
    assert!((10..=13).contains(&card), "12 groups, estimated {card}");
    // The hot leaderboard tag is found and flagged.
    let global = v["hot_tags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tag"] == "global")
        .unwrap();
    assert_eq!(global["hot"], true);
    assert_eq!(global["slot"], keyplan::slot::key_slot(b"global"));
    assert!(v["skew"]["verdict"].as_str().unwrap().contains("holds"));
}

fn analyze_is_deterministic_across_thread_counts() {
    let a = keyplan()
        .args([
            "analyze",
            "--format",
            "json",
            "--threads",
            "1",
            "examples/app.keys",
        ])
        .output()
        .unwrap();
    let b = keyplan()
        .args([
            "analyze",
            "--format",
            "json",
            "--threads",
            "2",
            "examples/app.keys",
        ])
        .output()
        .unwrap();
    let c = keyplan()
        .args([
            "analyze",
            "--format",
            "json",
            "--threads",
            "2",
            "examples/app.keys",
        ])
        .output()
        .unwrap();
    assert_eq!(b.stdout, c.stdout, "same input and threads, same bytes");
    let (va, vb): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&b.stdout).unwrap(),
    );
    assert_eq!(va["nodes"], vb["nodes"]);
    assert_eq!(va["patterns"], vb["patterns"]);
}

fn analyze_table_and_errors() {
    keyplan()
        .args(["analyze", "examples/app.keys", "--masters", "4"])
        .assert()
        .success()
        .stdout(
            predicates::str::contains("Verdict:").and(predicates::str::contains("Pattern × node")),
        );
    keyplan().args(["analyze"]).assert().code(2);
    keyplan()
        .args(["analyze", "/no/such.keys"])
        .assert()
        .code(2);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("nodes.txt");
    std::fs::write(&bad, "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460\n").unwrap();
    keyplan()
        .args(["analyze", "examples/app.keys", "--topology"])
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("5461-16383")
                .and(predicates::str::contains("--allow-partial")),
        );
    keyplan()
        .args([
            "analyze",
            "examples/app.keys",
            "--allow-partial",
            "--format",
            "json",
            "--topology",
        ])
        .arg(&bad)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "\"uncovered_slots\":[[5461,16383]]",
        ));
}

use predicates::prelude::PredicateBooleanExt;

fn analyze_over_a_twemproxy_ketama_pool() {
    let v = analyze_json(
        &["--topology", "examples/twemproxy.yml"],
        std::path::Path::new("examples/app.keys"),
    );
    assert_eq!(v["topology"]["kind"], "ring");
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    let sum: u64 = nodes.iter().map(|n| n["keys"].as_u64().unwrap()).sum();
    assert_eq!(sum, 20000);
    assert!(
        v["hot_slots"].as_array().unwrap().is_empty(),
        "slots do not apply to rings"
    );
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("differ only in their last character")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("fnv1a_64")), "{notes:?}");
    // Notes are objects: a kind with its figures, and the sentence.
    let kinds: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"ring_clusters"), "{kinds:?}");
    assert!(kinds.contains(&"weak_ring_hash"), "{kinds:?}");
    let clusters = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "ring_clusters")
        .unwrap();
    assert_eq!(clusters["servers"], 3);
    assert!(clusters["patterns"].as_u64().unwrap() <= clusters["checked"].as_u64().unwrap());
    // Each key's server in `slot` agrees with the library ring.
    let out = keyplan()
        .args([
            "slot",
            "--format",
            "json",
            "--topology",
            "examples/twemproxy.yml",
            "item:1",
            "item:2",
        ])
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(s["keys"][0]["slot"].is_null());
    assert!(
        s["keys"][0]["node"]
            .as_str()
            .unwrap()
            .starts_with("10.0.0.")
    );
}

fn topology_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let two = dir.path().join("two.yml");
    std::fs::write(
        &two,
        "a:\n  listen: 127.0.0.1:1\n  servers:\n   - 127.0.0.1:6379:1\nb:\n  listen: 127.0.0.1:2\n  servers:\n   - 127.0.0.1:6380:1\n",
    )
    .unwrap();
    keyplan()
        .args(["slot", "k", "--topology"])
        .arg(&two)
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("a, b").and(predicates::str::contains(
                "\n  help: choose one with --pool NAME",
            )),
        );
    keyplan()
        .args(["slot", "k", "--pool", "b", "--topology"])
        .arg(&two)
        .assert()
        .success();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello world\n").unwrap();
    keyplan()
        .args(["analyze", "examples/app.keys", "--topology"])
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("unrecognised topology format").and(
                predicates::str::contains("help: name the format with --topology-format"),
            ),
        );
    let badyaml = dir.path().join("bad.yml");
    std::fs::write(
        &badyaml,
        "ring:\n  kind: jedis\n  servers:\n    - { name: a, wieght: 2 }\n",
    )
    .unwrap();
    keyplan()
        .args(["slot", "k", "--topology"])
        .arg(&badyaml)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("wieght"));
}

fn html_report_structure_and_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    keyplan()
        .args(["analyze", "examples/app.keys", "--format", "html", "-o"])
        .arg(&html)
        .assert()
        .success();
    let text = std::fs::read_to_string(&html).unwrap();
    let v = analyze_json(&[], std::path::Path::new("examples/app.keys"));
    assert!(text.starts_with("<!doctype html>") && text.trim_end().ends_with("</html>"));
    assert!(
        !text.contains("<script") && !text.contains("http://") && !text.contains("src=\""),
        "self-contained"
    );
    assert_eq!(
        text.matches("<svg").count(),
        2,
        "node bars and slot heatmap"
    );
    assert!(text.contains(&format!("{} keys from", v["totals"]["keys"])));
    for n in v["nodes"].as_array().unwrap() {
        let id = n["id"].as_str().unwrap();
        assert!(
            text.contains(&format!(">{id}</text>")),
            "node {id} has a bar"
        );
        let ranges = crate::support::ranges_text(&n["slot_ranges"]);
        assert!(
            text.contains(&format!("{id} ({ranges})")),
            "node {id} in the legend"
        );
    }
    // Every slot with keys has a heatmap cell, with its exact count in the title.
    let hot = &v["hot_slots"][0];
    assert!(text.contains(&format!("slot {}: {} keys", hot["slot"], hot["keys"])));
    for p in v["patterns"].as_array().unwrap().iter().take(5) {
        let pat = p["pattern"]
            .as_str()
            .unwrap()
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        // A cell may break after each `:` (`<wbr>`), never inside a part.
        assert!(text.replace("<wbr>", "").contains(&pat), "pattern {pat}");
    }

    // A real browser renders it (headless Chromium), when installed (always under CI).
    crate::support::assert_renders(&html, dir.path());
}

pub(crate) fn generated_keys(n: usize) -> Vec<Vec<u8>> {
    let mut g = KeyGen::new(5);
    let mut seen = std::collections::BTreeSet::new();
    let mut keys = Vec::new();
    let mut line = String::new();
    while keys.len() < n {
        line.clear();
        g.next_key(&mut line);
        if seen.insert(line.clone()) {
            keys.push(line.clone().into_bytes());
        }
    }
    keys
}

fn live_cluster_topology_and_full_sample() {
    let Some(mut cluster) = Cluster::create() else {
        return;
    };
    let keys = generated_keys(3000);
    cluster.load(&keys);
    let dbsize = cluster.dbsize();
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[1].port);
    let live: serde_json::Value = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--sample",
        "all",
        "--bytes",
        "--format",
        "json",
    ]));
    // Per-node counts of a full sample equal DBSIZE.
    let by_addr: BTreeMap<String, (u64, Vec<String>)> = live["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let ranges = n["slot_ranges"]
                .as_array()
                .unwrap()
                .iter()
                .map(crate::support::range_text)
                .collect();
            (
                n["address"].as_str().unwrap().to_string(),
                (n["keys"].as_u64().unwrap(), ranges),
            )
        })
        .collect();
    for (n, size) in cluster.nodes.iter().zip(&dbsize) {
        assert_eq!(by_addr[&format!("127.0.0.1:{}", n.port)].0, *size);
    }
    assert!(
        live["totals"]["bytes"].as_u64().unwrap() > 0,
        "MEMORY USAGE read"
    );
    // The topology read live equals the one from CLUSTER NODES.
    let nodes_text = match cluster.nodes[0]
        .connect()
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    {
        Reply::Bulk(Some(t)) => t,
        other => panic!("{other:?}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("nodes.txt");
    std::fs::write(&topo, &nodes_text).unwrap();
    let out = keyplan()
        .args(["slot", "x", "--format", "json", "--topology"])
        .arg(&topo)
        .output()
        .unwrap();
    assert!(out.status.success());
    let from_nodes = analyze_json(
        &["--topology", topo.to_str().unwrap()],
        std::path::Path::new("examples/app.keys"),
    );
    let ranges_nodes: BTreeMap<String, Vec<String>> = from_nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["address"].as_str().unwrap().to_string(),
                n["slot_ranges"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(crate::support::range_text)
                    .collect(),
            )
        })
        .collect();
    let ranges_live: BTreeMap<String, Vec<String>> = by_addr
        .iter()
        .map(|(a, (_, r))| (a.clone(), r.clone()))
        .collect();
    assert_eq!(ranges_live, ranges_nodes);
    // A sample file for later, then analyzed offline: the same counts.
    let sample = dir.path().join("sample.tsv");
    keyplan()
        .args([
            "scan",
            "--cluster",
            &url,
            "--sample",
            "all",
            "--bytes",
            "-o",
        ])
        .arg(&sample)
        .assert()
        .success();
    let offline = analyze_json(&["--topology", topo.to_str().unwrap()], &sample);
    assert_eq!(offline["totals"]["keys"], live["totals"]["keys"]);
    // A node that is down is a clear error that names it, not a silently smaller sample.
    let dead = cluster.nodes[2].port;
    cluster.nodes[2].kill();
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--sample", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("127.0.0.1:{dead}")), "{err}");
}

fn live_cluster_with_a_password() {
    let password = "s3cret-pa55";
    let Some(cluster) = Cluster::create_with(Some(password)) else {
        return;
    };
    let keys = generated_keys(500);
    cluster.load(&keys);
    let dbsize: u64 = cluster.dbsize().iter().sum();
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let out = keyplan()
        .env("REDISCLI_AUTH", password)
        .args([
            "analyze",
            "--cluster",
            &url,
            "--sample",
            "all",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["keys"].as_u64().unwrap(), dbsize);
    let all = all_output(&out);
    assert!(!all.contains(password));
    // In the URL too, and with a wrong one: never echoed.
    let out = keyplan()
        .args([
            "analyze",
            "--cluster",
            &format!("redis://:{password}@127.0.0.1:{}", cluster.nodes[0].port),
            "--sample",
            "10",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let all = all_output(&out);
    assert!(
        !all.contains(password) && all.contains("***"),
        "masked in the report's source"
    );
    let out = keyplan()
        .args([
            "analyze",
            "--cluster",
            &format!(
                "redis://:wrong-{password}@127.0.0.1:{}",
                cluster.nodes[0].port
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all = all_output(&out);
    assert!(
        !all.contains(password) && all.contains("refused the credentials"),
        "{all}"
    );
}

/// Each pattern's `regex` matches its keys in Python's `re` and in `grep -P`, and its
/// `scan_match` glob finds at least its keys with a real server's `SCAN … MATCH`.
fn pattern_regex_and_scan_match_work_in_python_grep_and_redis() {
    let Some(server) = require_binary("redis-server") else {
        return;
    };
    let Some(python) = require_binary("python3") else {
        return;
    };
    let dump = std::path::Path::new("examples/app.keys");
    let v = analyze_json(&["--top", "1000"], dump);
    let patterns = v["patterns"].as_array().unwrap();
    assert!(patterns.len() > 5);
    let keys: Vec<Vec<u8>> = std::fs::read(dump)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        // key<TAB>bytes<TAB>ops
        .map(|l| l.split(|&b| b == b'\t').next().unwrap_or(l).to_vec())
        .collect();

    // Python: every key matches the regex of exactly as many keys as the pattern counts, or
    // more (patterns are disjoint, but a regex is only as strict as its classes).
    let mut script = std::process::Command::new(&python)
        .args([
            "-c",
            "import json,re,sys\n\
             d=json.loads(sys.argv[1]); keys=[l.split(b'\\t')[0] for l in open(sys.argv[2],'rb').read().split(b'\\n')]\n\
             for p in d:\n\
             \x20 r=re.compile(p['regex'].encode())\n\
             \x20 n=sum(1 for k in keys if k and r.fullmatch(k))\n\
             \x20 assert n>=p['keys'], (p['pattern'],n,p['keys'])\n\
             \x20 for e in p['examples']: assert r.fullmatch(e.encode()), (p['regex'],e)\n\
             print('ok',len(d))",
        ])
        .arg(serde_json::to_string(patterns).unwrap())
        .arg(dump)
        .output()
        .unwrap();
    assert!(
        script.status.success(),
        "python re: {}",
        String::from_utf8_lossy(&script.stderr)
    );
    // grep -P on the examples.
    for p in patterns {
        let examples: Vec<&str> = p["examples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        script = std::process::Command::new("grep")
            .args(["-c", "-P", p["regex"].as_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write as _;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(format!("{}\n", examples.join("\n")).as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let n: usize = String::from_utf8_lossy(&script.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        assert_eq!(n, examples.len(), "grep -P {}", p["regex"]);
    }

    // Redis: SCAN MATCH with each glob finds at least the pattern's keys.
    let redis = RedisServer::start(&server, false);
    let mut c = redis.connect();
    let mut buf = Vec::new();
    for k in &keys {
        Resp::encode(&mut buf, &[b"SET", k, b"1"]);
    }
    c.send(&buf).unwrap();
    for _ in &keys {
        c.read().unwrap();
    }
    let distinct: std::collections::BTreeSet<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    for p in patterns {
        let glob = p["scan_match"].as_str().unwrap();
        // The dump may repeat a key; the server holds each once.
        let re =
            regex::bytes::Regex::new(&format!("(?-u){}", p["regex"].as_str().unwrap())).unwrap();
        let expected = distinct.iter().filter(|k| re.is_match(k)).count() as u64;
        let mut cursor = b"0".to_vec();
        let mut found = 0u64;
        loop {
            let reply = c
                .call(&[
                    b"SCAN",
                    &cursor,
                    b"MATCH",
                    glob.as_bytes(),
                    b"COUNT",
                    b"10000",
                ])
                .unwrap();
            let Reply::Array(parts) = reply else {
                panic!("SCAN replied {reply:?}")
            };
            let (Reply::Bulk(Some(next)), Reply::Array(ks)) = (&parts[0], &parts[1]) else {
                panic!("SCAN replied {parts:?}")
            };
            found += ks.len() as u64;
            cursor = next.clone();
            if cursor == b"0" {
                break;
            }
        }
        assert!(
            found >= expected && expected > 0,
            "SCAN MATCH {glob} found {found} keys, the pattern {} has {expected} distinct keys",
            p["pattern"],
        );
    }
}

/// Loads `hot` keys on one tag (one slot, one master) and `spread` generated keys: each
/// master's DBSIZE, and the cluster's URL.
fn load_uneven(cluster: &Cluster, hot: usize, spread: usize) -> (Vec<u64>, String) {
    let mut keys: Vec<Vec<u8>> = (0..hot)
        .map(|i| format!("{{hot}}:{i}").into_bytes())
        .collect();
    keys.extend(generated_keys(spread));
    cluster.load(&keys);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    (cluster.dbsize(), url)
}

/// The `nodes[]` entry of an analyze report for `addr`.
fn node_of<'a>(v: &'a serde_json::Value, addr: &str) -> &'a serde_json::Value {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["address"] == addr)
        .unwrap_or_else(|| panic!("no node {addr} in the report"))
}

/// On a live cluster, node and slot key figures are the servers' own counts whatever the
/// sample: with 200 keys sampled per master from masters holding very different numbers of
/// keys, every node's keys equal its DBSIZE and each hot slot's keys its COUNTKEYSINSLOT.
fn live_node_keys_are_exact_whatever_the_sample() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    // Uneven: 6,000 keys on one tag (one slot, one master) and 3,000 spread keys.
    let (dbsize, url) = load_uneven(&cluster, 6000, 3000);
    let v = json_of(
        keyplan()
            .args([
                "analyze",
                "--cluster",
                &url,
                "--sample",
                "200",
                "--format",
                "json",
            ])
            .arg("--quiet"),
    );
    let total: u64 = dbsize.iter().sum();
    assert_eq!(v["totals"]["keys"], total);
    assert!(v["totals"]["sampled"].as_u64().unwrap() <= 600);
    for (n, size) in cluster.nodes.iter().zip(&dbsize) {
        let addr = format!("127.0.0.1:{}", n.port);
        let node = node_of(&v, &addr);
        assert_eq!(node["keys"], *size, "{addr}");
        assert!(node["sampled"].as_u64().unwrap() <= 200, "{addr}");
        // The node's own figure of its data bytes (INFO memory) is there, and on Redis 7
        // (no per-slot load) its command time from INFO commandstats.
        assert!(node["dataset_bytes"].as_u64().unwrap() > 0, "{addr}");
        assert!(node["cpu_usec"].as_u64().unwrap() > 0, "{addr}");
        assert!(node.get("network_bytes_in").is_none(), "{addr}");
    }
    assert!(v["totals"].get("ops_source").is_none());
    // Patterns and tags are estimates for the whole cluster (each node's sampled keys weigh its
    // exact keys over its sampled ones): {hot}'s 6,000 keys and the 3,000 spread ones, from
    // 200 keys a master.
    let pattern = |text: &str| -> f64 {
        v["patterns"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["pattern"].as_str().unwrap().starts_with(text))
            .map(|p| p["estimated_keys"].as_f64().unwrap())
            .sum()
    };
    let hot_est = pattern("{hot}");
    assert!((hot_est - 6000.0).abs() < 600.0, "{hot_est}");
    let tag = &v["hot_tags"][0];
    assert_eq!(tag["tag"], "hot");
    assert!(
        (tag["estimated_keys"].as_f64().unwrap() - 6000.0).abs() < 600.0,
        "{tag}"
    );
    // Bytes from a random sample of 200 a master estimate each node's bytes with a 95%
    // interval: the full sample's sum (every key's MEMORY USAGE) lies within two half-widths
    // of the estimate (a 1-in-10,000 miss for a normal estimate: not a flaky bound).
    let bytes_of = |sample: &str| {
        json_of(keyplan().args([
            "analyze",
            "--cluster",
            &url,
            "--sample",
            sample,
            "--bytes",
            "--format",
            "json",
            "--quiet",
        ]))
    };
    let (small, full) = (bytes_of("200"), bytes_of("all"));
    for n in &cluster.nodes {
        let addr = format!("127.0.0.1:{}", n.port);
        let e = &node_of(&small, &addr)["estimated_bytes"];
        let truth = node_of(&full, &addr)["bytes"].as_f64().unwrap();
        let (value, low, high) = (
            e["value"].as_f64().unwrap(),
            e["low"].as_f64().unwrap(),
            e["high"].as_f64().unwrap(),
        );
        assert!(low <= value && value <= high, "{e}");
        assert!(
            (truth - value).abs() <= (high - low) + 1.0,
            "{addr}: {truth} vs {e}"
        );
    }
    // The hottest slot is {hot}'s, with all 6,000 of its keys.
    let hot = &v["hot_slots"][0];
    assert_eq!(hot["slot"], u64::from(keyplan::slot::key_slot(b"{hot}")));
    assert_eq!(hot["keys"], 6000);
    // The verdict names the skew the servers see, not the sample's even 200s.
    let verdict = v["skew"]["verdict"].as_str().unwrap();
    assert!(verdict.contains("skewed"), "{verdict}");
    // The table says which figures are exact.
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--sample", "200"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("the servers' exact counts"));
    // And says that per-slot load needs a newer server than the one it runs.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(" runs Redis ")
            && String::from_utf8_lossy(&out.stderr)
                .contains("CLUSTER SLOT-STATS needs Redis 8.2 or later (or Valkey 8+)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --balance-by cpu says what it needs.
    let out = keyplan()
        .args([
            "rebalance",
            "--preview",
            "--cluster",
            &url,
            "--balance-by",
            "cpu",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        all_output(&out).contains("CLUSTER SLOT-STATS"),
        "{}",
        all_output(&out)
    );
}

/// On Redis 8.2 without `cluster-slot-stats-enabled`, the note names the server's version and
/// the setting to turn on; once it is on, the load is per slot and the note is gone.
fn redis8_slot_load_note_names_the_setting() {
    let Some(cluster) = Cluster::create_redis8_args(&[]) else {
        return;
    };
    cluster.load(&generated_keys(300));
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let run = || {
        keyplan()
            .args([
                "analyze",
                "--cluster",
                &url,
                "--sample",
                "all",
                "--format",
                "json",
            ])
            .output()
            .unwrap()
    };
    let out = run();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("runs Redis 8.2") && err.contains("CONFIG SET cluster-slot-stats-enabled yes"),
        "{err}"
    );
    for n in &cluster.nodes {
        let r = n
            .connect()
            .call(&[b"CONFIG", b"SET", b"cluster-slot-stats-enabled", b"yes"]);
        assert!(matches!(r, Ok(Reply::Status(_))), "{r:?}");
    }
    let out = run();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("do not count load per slot"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["totals"]["ops_source"]
            .as_str()
            .unwrap_or_default()
            .contains("CLUSTER SLOT-STATS"),
        "{}",
        v["totals"]
    );
}

/// `--read-from replicas` samples a master itself, with a warning, when it has no healthy
/// replica (here: none has), instead of failing the run.
fn read_from_replicas_falls_back_to_masters_without_one() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&generated_keys(500));
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let out = keyplan()
        .args([
            "analyze",
            "--cluster",
            &url,
            "--read-from",
            "replicas",
            "--sample",
            "all",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("has no healthy replica").count(), 3, "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["keys"], 500);
    assert_eq!(v["totals"]["sampled"], 500);
}

/// On Valkey 8, keys per slot come from `CLUSTER SLOT-STATS` (one command per slot range)
/// instead of one `COUNTKEYSINSLOT` per slot, with the same exact figures.
fn valkey_counts_come_from_slot_stats() {
    let Some(cluster) = Cluster::create_valkey() else {
        return;
    };
    let (dbsize, url) = load_uneven(&cluster, 2000, 1000);
    let v = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--sample",
        "100",
        "--format",
        "json",
    ]));
    for (n, size) in cluster.nodes.iter().zip(&dbsize) {
        let addr = format!("127.0.0.1:{}", n.port);
        let node = node_of(&v, &addr);
        assert_eq!(node["keys"], *size, "{addr}");
    }
    assert_eq!(v["hot_slots"][0]["keys"], 2000);
    for n in &cluster.nodes {
        let stats = match n.connect().call(&[b"INFO", b"commandstats"]).unwrap() {
            Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("INFO replied {other:?}"),
        };
        assert!(stats.contains("cmdstat_cluster|slot-stats:"), "{stats}");
        assert!(
            !stats.contains("cmdstat_cluster|countkeysinslot:"),
            "{stats}"
        );
    }
}

/// A slot in migration on a live cluster shows in `analyze --cluster`, with the markers of
/// both ends (each master lists only its own in CLUSTER NODES).
fn live_slots_in_migration_are_shown() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let id = |i: usize| match cluster.nodes[i]
        .connect()
        .call(&[b"CLUSTER", b"MYID"])
        .unwrap()
    {
        Reply::Bulk(Some(b)) => b,
        other => panic!("MYID replied {other:?}"),
    };
    let (a, b) = (id(0), id(1));
    // Slot 100 is the first master's: redis-cli --cluster create gives it 0-5460.
    let ok = |i: usize, args: &[&[u8]]| {
        let r = cluster.nodes[i].connect().call(args).unwrap();
        assert!(matches!(r, Reply::Status(_)), "{r:?}");
    };
    // Ten keys of slot 100, four of them moved to the importing node before the handover.
    let tag = (0u32..)
        .map(|i| format!("t{i}"))
        .find(|t| keyplan::slot::key_slot(t.as_bytes()) == 100)
        .unwrap();
    let keys: Vec<String> = (0..10).map(|i| format!("{{{tag}}}:{i}")).collect();
    for k in &keys {
        ok(0, &[b"SET", k.as_bytes(), b"v"]);
    }
    ok(1, &[b"CLUSTER", b"SETSLOT", b"100", b"IMPORTING", &a]);
    ok(0, &[b"CLUSTER", b"SETSLOT", b"100", b"MIGRATING", &b]);
    let port1 = cluster.nodes[1].port.to_string();
    let mut migrate: Vec<&[u8]> = vec![
        b"MIGRATE",
        b"127.0.0.1",
        port1.as_bytes(),
        b"",
        b"0",
        b"5000",
        b"KEYS",
    ];
    migrate.extend(keys[..4].iter().map(|k| k.as_bytes()));
    ok(0, &migrate);
    assert_eq!(cluster.dbsize()[..2], [6, 4]);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let v = json_of(keyplan().args(["analyze", "--cluster", &url, "--format", "json"]));
    // The keys already moved count too: the exact count is both ends'.
    assert_eq!(v["totals"]["keys"], 10, "{}", v["totals"]);
    let m = v["topology"]["migrating"].as_array().unwrap();
    let dirs: Vec<(&str, &str)> = m
        .iter()
        .map(|x| {
            (
                x["direction"].as_str().unwrap(),
                x["node"].as_str().unwrap(),
            )
        })
        .collect();
    let (n0, n1) = (
        format!("127.0.0.1:{}", cluster.nodes[0].port),
        format!("127.0.0.1:{}", cluster.nodes[1].port),
    );
    assert!(dirs.contains(&("migrating", n0.as_str())), "{m:?}");
    assert!(dirs.contains(&("importing", n1.as_str())), "{m:?}");
    assert!(m.iter().all(|x| x["slot"] == 100), "{m:?}");
    // A preview seeded at the third master (whose CLUSTER NODES shows no marker) still sees
    // the open slot, and refuses as redis-cli does.
    let url2 = format!("redis://127.0.0.1:{}", cluster.nodes[2].port);
    let out = keyplan()
        .args([
            "rebalance",
            "--preview",
            "--cluster",
            &url2,
            "--use-empty-masters",
        ])
        .output()
        .unwrap();
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("100") && text.contains("open"), "{text}");
}

/// Each slot's CPU µs as one server counts it (`CLUSTER SLOT-STATS SLOTSRANGE 0 16383`).
fn server_slot_cpu(n: &RedisServer) -> BTreeMap<u16, u64> {
    let reply = n
        .connect()
        .call(&[b"CLUSTER", b"SLOT-STATS", b"SLOTSRANGE", b"0", b"16383"])
        .unwrap();
    let Reply::Array(entries) = reply else {
        panic!("SLOT-STATS replied {reply:?}");
    };
    let mut out = BTreeMap::new();
    for e in entries {
        let Reply::Array(pair) = e else {
            panic!("{e:?}")
        };
        let (Reply::Int(slot), Reply::Array(fields)) = (&pair[0], &pair[1]) else {
            panic!("{pair:?}")
        };
        for kv in fields.chunks(2) {
            if let (Reply::Bulk(Some(k)), Reply::Int(v)) = (&kv[0], &kv[1])
                && k == b"cpu-usec"
            {
                out.insert(*slot as u16, *v as u64);
            }
        }
    }
    out
}

/// Valkey 8 with per-slot statistics: traffic on one master's keys, then `analyze --cluster`
/// shows each node's CPU share as the servers count it, and `rebalance --preview --balance-by
/// cpu` plans slot moves that even out the CPU the servers measured.
fn valkey_load_comes_from_slot_stats_and_drives_a_cpu_balanced_plan() {
    let Some(cluster) = Cluster::create_valkey_args(&["--cluster-slot-stats-enabled", "yes"])
    else {
        return;
    };
    let keys = generated_keys(3000);
    cluster.load(&keys);
    // Reads of the keys the first master owns (others answer MOVED and are not sent on).
    let mut c0 = cluster.nodes[0].connect();
    let mut hot = Vec::new();
    for k in &keys {
        if let Reply::Bulk(_) = c0.call(&[b"GET", k]).unwrap() {
            hot.push(k.clone());
        }
    }
    for _ in 0..30 {
        let mut buf = Vec::new();
        for k in &hot {
            Resp::encode(&mut buf, &[b"GET", k]);
        }
        c0.send(&buf).unwrap();
        for _ in &hot {
            c0.read().unwrap();
        }
    }
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let v = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--sample",
        "200",
        "--format",
        "json",
    ]));
    assert!(
        v["totals"]["ops_source"]
            .as_str()
            .unwrap()
            .contains("CLUSTER SLOT-STATS"),
        "{}",
        v["totals"]
    );
    let cpu: Vec<BTreeMap<u16, u64>> = cluster.nodes.iter().map(server_slot_cpu).collect();
    let per_node: Vec<f64> = cpu.iter().map(|m| m.values().sum::<u64>() as f64).collect();
    let total: f64 = per_node.iter().sum();
    let dbsize = cluster.dbsize();
    for (i, n) in cluster.nodes.iter().enumerate() {
        let node = node_of(&v, &format!("127.0.0.1:{}", n.port));
        assert_eq!(node["keys"], dbsize[i]);
        let share = node["share_ops"].as_f64().unwrap();
        assert!(
            (share - per_node[i] / total).abs() < 0.01,
            "node {i}: {share} vs {}",
            per_node[i] / total
        );
        assert_eq!(node["cpu_usec"].as_f64().unwrap(), per_node[i]);
    }
    let max_before = per_node.iter().cloned().fold(0.0, f64::max) / (total / 3.0);
    assert!(max_before > 1.3, "the traffic made no skew: {per_node:?}");
    // The CPU-balanced plan, judged by the servers' own per-slot counts: with the keys kept
    // within the default --max-skew it improves the CPU as far as that allows; with the keys
    // left free it evens the CPU out.
    let slot_cpu: BTreeMap<u16, u64> = cpu.iter().flat_map(|m| m.clone()).collect();
    let plan = |max_skew: &str| {
        json_of(keyplan().args([
            "rebalance",
            "--preview",
            "--cluster",
            &url,
            "--balance-by",
            "cpu",
            "--sample",
            "200",
            "--max-skew",
            max_skew,
            "--format",
            "json",
        ]))
    };
    let guarded = plan("1.25");
    let keys_after = guarded["skew"]["after"]["keys"]["max_over_mean"]
        .as_f64()
        .unwrap();
    let keys_before = guarded["skew"]["before"]["keys"]["max_over_mean"]
        .as_f64()
        .unwrap();
    assert!(
        keys_after <= keys_before.max(1.25) + 1e-9,
        "{keys_before} → {keys_after}"
    );
    let p = plan("100");
    let after: Vec<f64> = p["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            n["after"]["slot_ranges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let (a, b) = (r[0].as_u64().unwrap() as u16, r[1].as_u64().unwrap() as u16);
                    (a..=b)
                        .map(|s| slot_cpu.get(&s).copied().unwrap_or(0))
                        .sum::<u64>() as f64
                })
                .sum()
        })
        .collect();
    let mean = after.iter().sum::<f64>() / after.len() as f64;
    let max_after = after.iter().cloned().fold(0.0, f64::max) / mean;
    assert!(
        max_after <= 1.15,
        "after the cpu plan: {after:?} ({max_after:.2} × the mean; before {max_before:.2})"
    );
    assert!(!p["moves"].as_array().unwrap().is_empty());
}

/// `--heat` reads each sampled key's OBJECT FREQ as its ops weight under an LFU policy, and
/// names the policy that prevents it otherwise.
fn heat_reads_lfu_counters_and_names_the_policy_otherwise() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let keys = generated_keys(600);
    cluster.load(&keys);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--heat"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        all_output(&out).contains("maxmemory-policy is noeviction"),
        "{}",
        all_output(&out)
    );
    for n in &cluster.nodes {
        n.connect()
            .call(&[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"])
            .unwrap();
    }
    // Many reads of the first master's keys: their LFU counters climb.
    let mut c0 = cluster.nodes[0].connect();
    let mine: Vec<&Vec<u8>> = keys
        .iter()
        .filter(|k| matches!(c0.call(&[b"GET", k]).unwrap(), Reply::Bulk(_)))
        .collect();
    for _ in 0..200 {
        for k in &mine {
            c0.call(&[b"GET", k]).unwrap();
        }
    }
    let v = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--heat",
        "--sample",
        "all",
        "--format",
        "json",
    ]));
    assert!(
        v["totals"]["ops_source"]
            .as_str()
            .unwrap()
            .contains("OBJECT FREQ")
    );
    let hot = node_of(&v, &format!("127.0.0.1:{}", cluster.nodes[0].port));
    assert!(hot["share_ops"].as_f64().unwrap() > 0.5, "{hot}");
}

/// `--bytes` while a slot is migrating, keys half moved (real MIGRATE): the source answers ASK
/// for keys gone, the importing node MOVED for keys it holds of a slot it does not own yet;
/// keyplan follows both and reads every sampled key's bytes.
fn bytes_are_read_while_a_slot_migrates() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let id = |i: usize| match cluster.nodes[i]
        .connect()
        .call(&[b"CLUSTER", b"MYID"])
        .unwrap()
    {
        Reply::Bulk(Some(b)) => b,
        other => panic!("MYID replied {other:?}"),
    };
    let (a, b) = (id(0), id(1));
    // 40 keys of slot 100 (`{x}` is not slot 100: find a tag that is), on the first master.
    let tag = (0u32..)
        .map(|i| format!("t{i}"))
        .find(|t| keyplan::slot::key_slot(t.as_bytes()) == 100)
        .unwrap();
    let keys: Vec<Vec<u8>> = (0..40)
        .map(|i| format!("{{{tag}}}:{i}").into_bytes())
        .collect();
    cluster.load(&keys);
    let ok = |i: usize, args: &[&[u8]]| {
        let r = cluster.nodes[i].connect().call(args).unwrap();
        assert!(matches!(r, Reply::Status(_)), "{r:?}");
    };
    ok(1, &[b"CLUSTER", b"SETSLOT", b"100", b"IMPORTING", &a]);
    ok(0, &[b"CLUSTER", b"SETSLOT", b"100", b"MIGRATING", &b]);
    // Half the keys moved.
    let port1 = cluster.nodes[1].port.to_string();
    for k in &keys[..20] {
        ok(
            0,
            &[b"MIGRATE", b"127.0.0.1", port1.as_bytes(), k, b"0", b"5000"],
        );
    }
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let v = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--sample",
        "all",
        "--bytes",
        "--format",
        "json",
    ]));
    assert_eq!(v["totals"]["sampled"], 40, "{}", v["totals"]);
    let pattern_bytes: u64 = v["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bytes"].as_u64().unwrap())
        .sum();
    // Every key's bytes were read: 40 keys of at least a few dozen bytes each.
    assert!(pattern_bytes >= 40 * 16, "{pattern_bytes}");
}

/// A one-node cluster (the node owns every slot and never met another, so it does not know
/// its own address: CLUSTER SHARDS, SLOTS and NODES give it an empty ip) is reached at the
/// address keyplan was given, as redis-cli and redis-py do.
fn a_one_node_cluster_is_reached_where_it_was_asked() {
    let Some(redis) = require_binary("redis-server") else {
        return;
    };
    let node = RedisServer::start(&redis, true);
    let mut c = node.connect();
    c.call(&[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"16383"])
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let Reply::Bulk(Some(info)) = c.call(&[b"CLUSTER", b"INFO"]).unwrap() else {
            panic!("CLUSTER INFO")
        };
        if String::from_utf8_lossy(&info).contains("cluster_state:ok") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "cluster_state never ok"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let Reply::Bulk(Some(nodes)) = c.call(&[b"CLUSTER", b"NODES"]).unwrap() else {
        panic!("CLUSTER NODES")
    };
    let nodes = String::from_utf8_lossy(&nodes).into_owned();
    assert!(nodes.contains(&format!(" :{}@", node.port)), "{nodes}");
    for i in 0..300 {
        c.call(&[b"SET", format!("user:{i}").as_bytes(), b"x"])
            .unwrap();
    }
    let url = format!("redis://127.0.0.1:{}", node.port);
    let address = format!("127.0.0.1:{}", node.port);
    let report = json_of(keyplan().args(["analyze", "--format", "json", "--cluster", &url]));
    assert_eq!(report["totals"]["keys"], 300, "{report}");
    assert_eq!(report["nodes"][0]["id"], address.as_str(), "{report}");
    let preview = json_of(keyplan().args([
        "rebalance",
        "--preview",
        "--format",
        "json",
        "--cluster",
        &url,
        "--add-node",
        "127.0.0.1:1",
    ]));
    let moves = preview["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 1, "{preview}");
    assert_eq!(moves[0]["from"], address.as_str(), "{preview}");
    assert_eq!(moves[0]["slots"], 8192, "{preview}");
}

/// The check that the slot map held still while keys were sampled compares owners by node id,
/// so a view read from CLUSTER NODES (ips) and one from CLUSTER SHARDS agree on a stable
/// cluster, and a slot whose owner is another node counts as changed.
fn slot_owners_are_compared_by_node_id() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let live =
        keyplan::live::LiveCluster::new(keyplan::live::ClusterUrl::parse(&url, None).unwrap());
    let map = live.topology().unwrap();
    live.ensure_stable(&map).unwrap();
    // The same owners under other addresses (a hostname where CLUSTER NODES gives the ip).
    let mut owners: Vec<Option<keyplan::topology::Node>> = (0..16384u16)
        .map(|s| {
            map.owner_of_slot(s).map(|i| {
                let mut n = map.nodes()[i].clone();
                n.address = Some(format!("node-{i}.example:7000"));
                n
            })
        })
        .collect();
    assert_eq!(live.owners_changed_from(&owners).unwrap(), 0);
    // Slot 100 read as another node's: one slot changed.
    let other = owners[16383].clone();
    owners[100] = other;
    assert_eq!(live.owners_changed_from(&owners).unwrap(), 1);
}

/// An ACL user without INFO (`-info`) can still analyze: the data bytes and each node's CPU,
/// which only INFO gives, are left out with a note saying so, and the keys are counted as for
/// anyone.
fn an_acl_user_without_info_still_analyzes() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&generated_keys(500));
    for n in &cluster.nodes {
        let r = n.connect().call(&[
            b"ACL", b"SETUSER", b"limited", b"on", b">pw", b"~*", b"+@all", b"-info",
        ]);
        assert!(matches!(r, Ok(crate::support::Reply::Status(_))), "{r:?}");
    }
    let url = format!("redis://limited:pw@127.0.0.1:{}", cluster.nodes[0].port);
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("note: data bytes (INFO memory) left out"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["keys"], 500, "{v}");
}

/// Past the exact count (70,000 distinct tags) the two tag tables print one figure per tag,
/// within the truth's bounds and never above the tag's slot: `{big}` (4000 keys of 100 B)
/// read `≈4106` keys in one table and `≥4000` in the next, and `{mid}` (200 keys) `≈306` in a
/// slot the dump holds 210 keys in.
fn sketched_tag_tables_agree_and_stay_within_the_slot() {
    use std::fmt::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let mut s = String::new();
    for i in 0..4000 {
        let _ = writeln!(s, "feed:{{big}}:{i}\t100");
    }
    for i in 0..200 {
        let _ = writeln!(s, "feed:{{mid}}:{i}\t10");
    }
    for t in 0..70_000 {
        for i in 0..2 {
            let _ = writeln!(s, "order:{{t{t}}}:{i}\t1");
        }
    }
    let dump = dir.path().join("tags.tsv");
    std::fs::write(&dump, s).unwrap();
    let d = dump.to_str().unwrap();
    let v = json_of(keyplan().args(["analyze", d, "--format", "json", "--top", "50"]));
    let slot_keys = |slot: u64| -> u64 {
        v["hot_slots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["slot"] == slot)
            .and_then(|s| s["keys"].as_u64())
            .unwrap_or_else(|| panic!("slot {slot} not among the hottest: {}", v["hot_slots"]))
    };
    for (tag, truth, truth_bytes) in [("big", 4000u64, 400_000u64), ("mid", 200, 2000)] {
        let by_keys = v["hot_tags"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tag"] == tag)
            .unwrap();
        let by_bytes = v["hot_tags_by_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tag"] == tag)
            .unwrap();
        let (k, e) = (
            by_keys["keys"].as_u64().unwrap(),
            by_keys["keys_error"].as_u64().unwrap(),
        );
        assert!(
            k - e <= truth && truth <= k,
            "{tag}: {k} - {e} against {truth}"
        );
        assert!(
            k <= slot_keys(by_keys["slot"].as_u64().unwrap()),
            "{tag}: {k} keys"
        );
        let (b, be) = (
            by_bytes["bytes"].as_u64().unwrap(),
            by_bytes["bytes_error"].as_u64().unwrap(),
        );
        assert!(
            b - be <= truth_bytes && truth_bytes <= b,
            "{tag}: {b} - {be} B"
        );
        for f in ["keys", "keys_error", "bytes", "bytes_error"] {
            assert_eq!(
                by_keys[f], by_bytes[f],
                "{tag}: {f} differs between the tables"
            );
        }
    }
    // The text tables print the same figures for a tag.
    let out = keyplan().args(["analyze", d]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let t = String::from_utf8(out.stdout).unwrap();
    let row = |title: &str, tag: &str| -> Vec<String> {
        let table = &t[t.find(title).unwrap_or_else(|| panic!("no {title}\n{t}"))..];
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("│ {tag} ")))
            .unwrap_or_else(|| panic!("no {tag} under {title}\n{t}"));
        line.split(['│', '┆'])
            .map(|c| c.trim().to_string())
            .collect()
    };
    for tag in ["big", "mid"] {
        // tag slot node keys keys% bytes bytes% hot / tag slot node bytes bytes% keys hot
        let (k, b) = (row("Top tags by keys", tag), row("Top tags by bytes", tag));
        assert_eq!(k[4], b[6], "{tag} keys: {k:?} / {b:?}");
        assert_eq!(k[6], b[4], "{tag} bytes: {k:?} / {b:?}");
        assert!(k[4].starts_with('≈') && !t.contains('≤'), "{k:?}");
    }
}

/// On a twemproxy ring without `hash_tag` the ring hashes whole keys: no pattern has a tag
/// (`cart:{user:<int>}:items` showed tag `user:<int>`, `~0` distinct tags), and no slot table
/// (an empty 'Hottest slots' stood there); with `hash_tag: "{}"` the tags come back.
fn a_ring_without_hash_tag_reads_no_tag_in_patterns() {
    let args = |topo: &str, format: &str| -> Vec<String> {
        [
            "analyze",
            "examples/app.keys",
            "--topology",
            topo,
            "--format",
            format,
        ]
        .map(String::from)
        .to_vec()
    };
    let v = json_of(keyplan().args(args("examples/twemproxy.yml", "json")));
    let patterns = v["patterns"].as_array().unwrap();
    assert!(
        patterns
            .iter()
            .any(|p| p["pattern"] == "cart:{user:<int>}:items"),
        "{patterns:?}"
    );
    for p in patterns {
        assert!(p["tag"].is_null(), "{}: tag {}", p["pattern"], p["tag"]);
        assert!(p["tag_cardinality"].is_null(), "{}", p["pattern"]);
    }
    for format in ["table", "markdown"] {
        let out = keyplan()
            .args(args("examples/twemproxy.yml", format))
            .output()
            .unwrap();
        let t = String::from_utf8(out.stdout).unwrap();
        assert!(!t.contains("Hottest slots"), "{t}");
        // No tag column names the `{…}` (table cells, and Markdown's escaped ones).
        assert!(
            !t.contains("┆ user:<int>") && !t.contains("| user:\\<int\\> |"),
            "{t}"
        );
        assert!(
            t.contains("Hash tags: none: the ring hashes each key whole"),
            "{t}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("pool.yml");
    std::fs::write(
        &conf,
        std::fs::read_to_string("examples/twemproxy.yml")
            .unwrap()
            .replace(
                "  hash: fnv1a_64\n",
                "  hash: fnv1a_64\n  hash_tag: \"{}\"\n",
            ),
    )
    .unwrap();
    let v = json_of(keyplan().args(args(conf.to_str().unwrap(), "json")));
    let cart = v["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pattern"] == "cart:{user:<int>}:items")
        .unwrap();
    assert_eq!(cart["tag"], "user:<int>", "{cart}");
}

/// A live sample's tag bytes are an estimate for the whole cluster like its keys (`≈`, JSON
/// `estimated_bytes`): 16 values of 64 KiB under `{blob}` read as the bytes of the half that
/// was sampled, unmarked. Every key read, they are the servers' figures, unmarked.
fn live_tag_bytes_are_estimates_like_their_keys() {
    let Some(cluster) = crate::cluster::Cluster::create() else {
        return;
    };
    cluster.load(&generated_keys(3000));
    let value = vec![b'v'; 64 << 10];
    for i in 0..16 {
        let key = format!("{{blob}}:{i}");
        let r = crate::rdb::call_routed(&cluster, &[b"SET", key.as_bytes(), &value]);
        assert!(matches!(r, Reply::Status(_)), "{r:?}");
    }
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let blob = |v: &serde_json::Value| -> serde_json::Value {
        v["hot_tags_by_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tag"] == "blob")
            .cloned()
            .unwrap_or_else(|| panic!("no blob in {}", v["hot_tags_by_bytes"]))
    };
    let all = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--sample",
        "all",
        "--bytes",
        "--format",
        "json",
    ]));
    let whole = blob(&all);
    assert!(
        whole["bytes"].as_u64().unwrap() >= 16 * (64 << 10),
        "{whole}"
    );
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--sample", "all", "--bytes"])
        .output()
        .unwrap();
    let t = String::from_utf8(out.stdout).unwrap();
    let row = t.lines().find(|l| l.starts_with("│ blob ")).unwrap();
    assert!(!row.contains('≈'), "{row}");
    // About half of each master's keys: {blob}'s figures stand for all 16 values.
    let v = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--sample",
        "500",
        "--bytes",
        "--format",
        "json",
    ]));
    let b = blob(&v);
    let est = b["estimated_bytes"].as_f64().unwrap();
    assert!(est >= b["bytes"].as_f64().unwrap(), "{b}");
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--sample", "500", "--bytes"])
        .output()
        .unwrap();
    let t = String::from_utf8(out.stdout).unwrap();
    let at = t.find("Top tags by bytes").unwrap();
    let row = t[at..].lines().find(|l| l.starts_with("│ blob ")).unwrap();
    let cells: Vec<&str> = row.split(['│', '┆']).map(str::trim).collect();
    // tag slot node bytes bytes% keys hot
    assert!(
        cells[4].starts_with('≈') && cells[6].starts_with('≈'),
        "{row}"
    );
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "live_tag_bytes_are_estimates_like_their_keys",
        live_tag_bytes_are_estimates_like_their_keys,
    ),
    (
        "a_ring_without_hash_tag_reads_no_tag_in_patterns",
        a_ring_without_hash_tag_reads_no_tag_in_patterns,
    ),
    (
        "sketched_tag_tables_agree_and_stay_within_the_slot",
        sketched_tag_tables_agree_and_stay_within_the_slot,
    ),
    (
        "an_acl_user_without_info_still_analyzes",
        an_acl_user_without_info_still_analyzes,
    ),
    (
        "per_node_counts_equal_each_masters_dbsize",
        per_node_counts_equal_each_masters_dbsize,
    ),
    (
        "report_on_the_bundled_example",
        report_on_the_bundled_example,
    ),
    (
        "analyze_is_deterministic_across_thread_counts",
        analyze_is_deterministic_across_thread_counts,
    ),
    ("analyze_table_and_errors", analyze_table_and_errors),
    (
        "analyze_over_a_twemproxy_ketama_pool",
        analyze_over_a_twemproxy_ketama_pool,
    ),
    (
        "topology_errors_name_the_problem",
        topology_errors_name_the_problem,
    ),
    (
        "html_report_structure_and_rendering",
        html_report_structure_and_rendering,
    ),
    (
        "live_cluster_topology_and_full_sample",
        live_cluster_topology_and_full_sample,
    ),
    ("live_cluster_with_a_password", live_cluster_with_a_password),
    (
        "pattern_regex_and_scan_match_work_in_python_grep_and_redis",
        pattern_regex_and_scan_match_work_in_python_grep_and_redis,
    ),
    (
        "live_node_keys_are_exact_whatever_the_sample",
        live_node_keys_are_exact_whatever_the_sample,
    ),
    (
        "read_from_replicas_falls_back_to_masters_without_one",
        read_from_replicas_falls_back_to_masters_without_one,
    ),
    (
        "valkey_counts_come_from_slot_stats",
        valkey_counts_come_from_slot_stats,
    ),
    (
        "redis8_slot_load_note_names_the_setting",
        redis8_slot_load_note_names_the_setting,
    ),
    (
        "live_slots_in_migration_are_shown",
        live_slots_in_migration_are_shown,
    ),
    (
        "valkey_load_comes_from_slot_stats_and_drives_a_cpu_balanced_plan",
        valkey_load_comes_from_slot_stats_and_drives_a_cpu_balanced_plan,
    ),
    (
        "heat_reads_lfu_counters_and_names_the_policy_otherwise",
        heat_reads_lfu_counters_and_names_the_policy_otherwise,
    ),
    (
        "bytes_are_read_while_a_slot_migrates",
        bytes_are_read_while_a_slot_migrates,
    ),
    (
        "a_one_node_cluster_is_reached_where_it_was_asked",
        a_one_node_cluster_is_reached_where_it_was_asked,
    ),
    (
        "slot_owners_are_compared_by_node_id",
        slot_owners_are_compared_by_node_id,
    ),
];
