//! `keyplan rebalance --preview` / `reshard --preview` against the real `redis-cli --cluster`:
//! a real cluster is built, keyplan previews from its CLUSTER NODES, redis-cli executes, and
//! every node's slot ranges and DBSIZE afterwards must equal the preview.

use super::analyze::Cluster;
use super::support::{RedisServer, Reply, all_output, keyplan, require_binary};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub(crate) fn cluster_nodes(port: u16) -> String {
    match super::support::connect_port(port)
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    {
        Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("CLUSTER NODES replied {other:?}"),
    }
}

/// Each master's slot ranges, by node id, from a CLUSTER NODES text (markers dropped).
fn ranges_by_id(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| l.contains("master"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let ranges: Vec<&str> = f[8..]
                .iter()
                .copied()
                .filter(|s| !s.starts_with('['))
                .collect();
            (f[0].to_string(), ranges.join(" "))
        })
        .collect()
}

fn id_of(text: &str, port: u16) -> String {
    text.lines()
        .find(|l| l.contains(&format!("127.0.0.1:{port}@")))
        .and_then(|l| l.split_whitespace().next())
        .expect("node in CLUSTER NODES")
        .to_string()
}

fn redis_cli(cli: &Path, args: &[String]) -> String {
    let out = Command::new(cli)
        .args(args)
        .output()
        .expect("run redis-cli");
    let text = all_output(&out);
    assert!(out.status.success(), "redis-cli {args:?} failed:\n{text}");
    text
}

/// Waits until every server agrees on the configuration (redis-cli --cluster check passes,
/// every node lists all the others and reports cluster_state:ok: a new master waits about two
/// seconds before it serves, and MIGRATE to it fails with CLUSTERDOWN before that).
pub(crate) fn wait_agree(cli: &Path, ports: &[u16]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let known = ports.iter().all(|&p| {
            let state_ok = matches!(
                super::support::connect_port(p).call(&[b"CLUSTER", b"INFO"]),
                Ok(Reply::Bulk(Some(info))) if String::from_utf8_lossy(&info).contains("cluster_state:ok")
            );
            let t = cluster_nodes(p);
            state_ok &&
            ports.iter().all(|q| t.contains(&format!("127.0.0.1:{q}@"))) && !t.contains("handshake")
        });
        let ok = known
            && Command::new(cli)
                .args(["--cluster", "check", &format!("127.0.0.1:{}", ports[0])])
                .output()
                .map(|o| {
                    o.status.success()
                        && String::from_utf8_lossy(&o.stdout)
                            .contains("[OK] All nodes agree about slots configuration.")
                })
                .unwrap_or(false);
        if ok {
            return;
        }
        assert!(Instant::now() < deadline, "the cluster did not converge");
        std::thread::sleep(Duration::from_millis(200));
    }
}

struct Rig {
    cluster: Cluster,
    cli: PathBuf,
    dir: tempfile::TempDir,
    keys: PathBuf,
}

impl Rig {
    fn entry(&self) -> u16 {
        self.cluster.nodes[0].port
    }

    fn ports(&self) -> Vec<u16> {
        self.cluster.nodes.iter().map(|n| n.port).collect()
    }

    /// CLUSTER NODES of the entry node, saved to a file.
    fn capture(&self, name: &str) -> (PathBuf, String) {
        let text = cluster_nodes(self.entry());
        let path = self.dir.path().join(name);
        std::fs::write(&path, &text).unwrap();
        (path, text)
    }

    /// Compares the cluster now with the preview's `after` states.
    fn assert_matches(&self, preview: &Value, what: &str) {
        wait_agree(&self.cli, &self.ports());
        self.assert_state(preview, what, &self.ports());
    }

    /// Every previewed node's slot ranges (in the CLUSTER NODES of `ports[0]`) and DBSIZE
    /// equal the preview's `after`.
    fn assert_state(&self, preview: &Value, what: &str, ports: &[u16]) {
        let real = ranges_by_id(&cluster_nodes(ports[0]));
        let sizes = self.cluster.dbsize();
        for n in preview["nodes"].as_array().unwrap() {
            let id = n["id"].as_str().unwrap();
            let after = &n["after"];
            assert_eq!(
                real.get(id).map(String::as_str).unwrap_or(""),
                crate::support::ranges_text(&after["slot_ranges"]),
                "{what}: slot ranges of {} (preview vs real)",
                n["name"]
            );
            let port: u16 = n["address"]
                .as_str()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let k = self.ports().iter().position(|&p| p == port).unwrap();
            assert_eq!(
                sizes[k],
                after["keys"].as_u64().unwrap(),
                "{what}: DBSIZE of {} (preview vs real)",
                n["name"]
            );
        }
    }

    /// Previews `args`, runs with `sh` the script `--emit how` prints, and checks the cluster
    /// (seen from `ports`) ends as previewed.
    fn run_emitted(&self, args: &[&str], how: &str, ports: &[u16]) -> Value {
        wait_agree(&self.cli, ports);
        let p = preview(args);
        let script = keyplan().args(args).args(["--emit", how]).output().unwrap();
        assert!(script.status.success());
        let path = self.dir.path().join(format!("{how}.sh"));
        std::fs::write(&path, &script.stdout).unwrap();
        let cli_dir = self.cli.parent().unwrap().to_str().unwrap().to_string();
        let run = Command::new("sh")
            .arg(&path)
            .env(
                "PATH",
                format!("{cli_dir}:{}", std::env::var("PATH").unwrap_or_default()),
            )
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{how} script failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        self.assert_state(&p, &format!("--emit {how}"), ports);
        p
    }
}

/// Runs a preview (exit status 0, or 1 with warnings) and parses its JSON.
fn preview(args: &[&str]) -> Value {
    let out = keyplan()
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no JSON; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    let warned = !v["warnings"].as_array().unwrap().is_empty();
    assert_eq!(out.status.code(), Some(i32::from(warned)), "{v}");
    v
}

fn previews_equal_real_redis_cli_migrations() {
    let Some(mut cluster) = Cluster::create() else {
        return;
    };
    let (Some(server), Some(cli)) = (require_binary("redis-server"), require_binary("redis-cli"))
    else {
        return;
    };
    // Keys with hash tags, so slots hold unequal numbers of keys.
    let mut keys: Vec<Vec<u8>> = (0..6000)
        .map(|i| format!("user:{i}:profile").into_bytes())
        .collect();
    keys.extend((0..1500).map(|i| format!("{{cart:{}}}:item:{i}", i % 7).into_bytes()));
    // Keys the setslot script must quote for redis-cli: quotes, backslashes, non-ASCII.
    keys.extend((0..4000).map(|i| format!("odd\"q\\k\\\"é'{i}").into_bytes()));
    // Keys no line-based listing carries: a newline, a NUL, a TAB and DEL, a CR; and the
    // empty key. The setslot script must move them all.
    keys.extend((0..2000).map(|i| format!("nl\n{i}").into_bytes()));
    keys.extend((0..2000).map(|i| format!("nul\0{i}").into_bytes()));
    keys.extend((0..2000).map(|i| format!("t\t\x7f\r{i}").into_bytes()));
    keys.push(Vec::new());
    cluster.load(&keys);
    let dir = tempfile::tempdir().unwrap();
    let keys_path = dir.path().join("sample.keys");
    // The sample in redis-cli's quoted form, which holds every byte.
    let mut text = Vec::new();
    for k in &keys {
        text.push(b'"');
        for &b in k {
            match b {
                b'\\' => text.extend_from_slice(b"\\\\"),
                b'"' => text.extend_from_slice(b"\\\""),
                b'\n' => text.extend_from_slice(b"\\n"),
                b'\r' => text.extend_from_slice(b"\\r"),
                b'\t' => text.extend_from_slice(b"\\t"),
                0x20..=0x7e => text.push(b),
                _ => text.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            }
        }
        text.extend_from_slice(b"\"\n");
    }
    std::fs::write(&keys_path, text).unwrap();

    // 1. An empty master joins; rebalance --cluster-use-empty-masters.
    let d = RedisServer::start(&server, true);
    let d_port = d.port;
    let entry = format!("127.0.0.1:{}", cluster.nodes[0].port);
    redis_cli(
        &cli,
        &[
            "--cluster".into(),
            "add-node".into(),
            format!("127.0.0.1:{d_port}"),
            entry.clone(),
        ],
    );
    cluster.nodes.push(d);
    let rig = Rig {
        cluster,
        cli: cli.clone(),
        dir,
        keys: keys_path,
    };
    wait_agree(&cli, &rig.ports());
    let (topo, _) = rig.capture("nodes-1.txt");
    let keys_arg = rig.keys.to_str().unwrap();
    let p = preview(&[
        "rebalance",
        "--preview",
        "--topology",
        topo.to_str().unwrap(),
        "--use-empty-masters",
        "--keys",
        keys_arg,
    ]);
    assert_eq!(p["needed"], true);
    // Read live (CLUSTER NODES of the entry node, every key sampled): the same preview.
    let url = format!("redis://{entry}");
    let live = preview(&[
        "rebalance",
        "--preview",
        "--cluster",
        &url,
        "--use-empty-masters",
        "--sample",
        "all",
    ]);
    assert_eq!(live["moves"], p["moves"]);
    assert_eq!(live["nodes"], p["nodes"]);
    let out = redis_cli(
        &cli,
        &[
            "--cluster".into(),
            "rebalance".into(),
            entry.clone(),
            "--cluster-use-empty-masters".into(),
        ],
    );
    // redis-cli's own summary lines, in order, equal the preview's moves.
    let printed: Vec<String> = out
        .lines()
        .filter_map(|l| l.find("Moving ").map(|i| l[i..].to_string()))
        .collect();
    let previewed: Vec<String> = p["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "Moving {} slots from {} to {}",
                m["slots"],
                m["from"].as_str().unwrap(),
                m["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(printed, previewed, "redis-cli printed:\n{out}");
    rig.assert_matches(&p, "rebalance --use-empty-masters");
    // Every master now has 4096 slots: nothing more to do, as redis-cli also says.
    let (topo, _) = rig.capture("nodes-2.txt");
    let again = preview(&[
        "rebalance",
        "--preview",
        "--topology",
        topo.to_str().unwrap(),
    ]);
    assert_eq!(again["needed"], false);
    let out = redis_cli(
        &cli,
        &["--cluster".into(), "rebalance".into(), entry.clone()],
    );
    assert!(
        out.contains(again["message"].as_str().unwrap()),
        "{out} vs {}",
        again["message"]
    );

    // 2. A weighted rebalance: the first master (by id prefix) weighs 3.
    let (topo, text) = rig.capture("nodes-3.txt");
    let a_id = id_of(&text, rig.ports()[1]);
    let weight = format!("{}={}", &a_id[..8], 3);
    let p = preview(&[
        "rebalance",
        "--preview",
        "--topology",
        topo.to_str().unwrap(),
        "--weight",
        &weight,
        "--keys",
        keys_arg,
    ]);
    assert_eq!(p["needed"], true);
    redis_cli(
        &cli,
        &[
            "--cluster".into(),
            "rebalance".into(),
            entry.clone(),
            "--cluster-weight".into(),
            weight.clone(),
        ],
    );
    rig.assert_matches(&p, "rebalance --cluster-weight");

    // 3. A reshard of 777 slots from all masters to one.
    let (topo, text) = rig.capture("nodes-4.txt");
    let to = id_of(&text, rig.ports()[2]);
    let p = preview(&[
        "reshard",
        "--preview",
        "--topology",
        topo.to_str().unwrap(),
        "--from",
        "all",
        "--to",
        &to,
        "--slots",
        "777",
        "--keys",
        keys_arg,
    ]);
    redis_cli(
        &cli,
        &[
            "--cluster".into(),
            "reshard".into(),
            entry.clone(),
            "--cluster-from".into(),
            "all".into(),
            "--cluster-to".into(),
            to.clone(),
            "--cluster-slots".into(),
            "777".into(),
            "--cluster-yes".into(),
        ],
    );
    rig.assert_matches(&p, "reshard --cluster-from all");

    // 4. Remove the added master: its slots spread over the others (weight 0), then del-node.
    let (topo, text) = rig.capture("nodes-5.txt");
    let d_id = id_of(&text, d_port);
    let p = preview(&[
        "rebalance",
        "--preview",
        "--topology",
        topo.to_str().unwrap(),
        "--remove-node",
        &d_id,
        "--keys",
        keys_arg,
    ]);
    let d_after = p["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == d_id.as_str())
        .unwrap();
    assert_eq!(d_after["after"]["slots"], 0);
    assert_eq!(d_after["emptied"], true);
    // The drained master gives all its slots in the first move, so keyplan warns that Redis
    // would make it a replica and a single redis-cli run would then stop; following its advice
    // keeps the node an empty master for the whole run.
    let warnings = p["warnings"].to_string();
    assert!(
        warnings.contains("cluster-allow-replica-migration"),
        "{warnings}"
    );
    let d_server = rig.cluster.nodes.iter().find(|n| n.port == d_port).unwrap();
    assert_eq!(
        d_server
            .connect()
            .call(&[b"CONFIG", b"SET", b"cluster-allow-replica-migration", b"no"])
            .unwrap(),
        Reply::Status("OK".into())
    );
    redis_cli(
        &cli,
        &[
            "--cluster".into(),
            "rebalance".into(),
            entry.clone(),
            "--cluster-weight".into(),
            format!("{d_id}=0"),
        ],
    );
    rig.assert_matches(&p, "rebalance --cluster-weight <removed>=0");
    redis_cli(
        &cli,
        &[
            "--cluster".into(),
            "del-node".into(),
            entry.clone(),
            d_id.clone(),
        ],
    );

    // 5. The emitted CLUSTER SETSLOT script, run by sh, does what the preview says; then the
    //    same for the emitted redis-cli lines.
    let ports: Vec<u16> = rig.ports()[..3].to_vec();
    wait_agree(&cli, &ports);
    for (name, how, from, to, slots) in [
        ("nodes-6.txt", "setslot", 1, 0, "40"),
        ("nodes-7.txt", "redis-cli", 2, 1, "25"),
    ] {
        let (topo, text) = rig.capture(name);
        let (from, to) = (id_of(&text, ports[from]), id_of(&text, ports[to]));
        let args = [
            "reshard",
            "--preview",
            "--topology",
            topo.to_str().unwrap(),
            "--from",
            &from,
            "--to",
            &to,
            "--slots",
            slots,
            "--keys",
            keys_arg,
        ];
        let p = rig.run_emitted(&args, how, &ports);
        assert_eq!(p["slots_moved"].as_u64().unwrap().to_string(), slots);
    }
}

fn run(args: &[&str]) -> (i32, String, String) {
    crate::support::run_in_process(args)
}

/// A sample where a few hash tags pile keys into slots master-0 keeps under redis-cli's plan.
fn skewed_sample(dir: &Path) -> PathBuf {
    let mut text = String::new();
    for i in 0..30_000 {
        text.push_str(&format!("session:{i}\n"));
    }
    let mut tags = Vec::new();
    let mut t = 0;
    while tags.len() < 4 {
        let tag = format!("tenant{t}");
        let slot = keyplan::slot::key_slot(tag.as_bytes());
        if (2000..5000).contains(&slot) {
            tags.push(tag);
        }
        t += 1;
    }
    for (k, tag) in tags.iter().enumerate() {
        for i in 0..(2000 + 1000 * k) {
            text.push_str(&format!("{{{tag}}}:event:{i}\n"));
        }
    }
    let path = dir.join("skewed.keys");
    std::fs::write(&path, text).unwrap();
    path
}

fn load_aware_plan_beats_the_slot_count_plan_on_a_skewed_sample() {
    let dir = tempfile::tempdir().unwrap();
    let sample = skewed_sample(dir.path());
    let p = preview(&[
        "rebalance",
        "--preview",
        "--masters",
        "3",
        "--add-node",
        "10.0.0.4:7000",
        "--balance-by",
        "keys",
        "--keys",
        sample.to_str().unwrap(),
        "--migrate-rate",
        "1000keys/s",
    ]);
    assert_eq!(p["plan"], "load-aware");
    assert_eq!(p["compare"]["plan"], "redis-cli rebalance");
    let ours = p["skew"]["after"]["keys"]["max_over_mean"]
        .as_f64()
        .unwrap();
    let redis = p["compare"]["skew"]["after"]["keys"]["max_over_mean"]
        .as_f64()
        .unwrap();
    assert!(ours < redis, "load-aware {ours} vs redis-cli {redis}");
    assert!(ours < 1.05, "{ours}");
    // The keys moved are reported honestly: the moves add up, and every key is somewhere.
    let moved: u64 = p["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["keys"].as_u64().unwrap())
        .sum();
    assert_eq!(p["keys_moved"].as_u64().unwrap(), moved);
    let total: u64 = p["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["after"]["keys"].as_u64().unwrap())
        .sum();
    assert_eq!(total, p["sample"]["keys"].as_u64().unwrap());
    let secs = p["migration_seconds"].as_f64().unwrap();
    assert!((secs - moved as f64 / 1000.0).abs() < 1e-6);
    // The new node received only whole runs of slots, in few ranges.
    let new = p["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["added"] == true)
        .unwrap();
    let ranges = new["after"]["slot_ranges"].as_array().unwrap();
    assert!(ranges.len() <= 8, "{ranges:?}");
}

fn preview_errors_name_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let sample = skewed_sample(dir.path());
    let s = sample.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["rebalance", "--masters", "3"],
            "only previews: add --preview",
        ),
        (
            &["rebalance", "--preview", "--weight", "master-0"],
            "--weight master-0: no '='",
        ),
        (
            &["rebalance", "--preview", "--weight", "abcd=2"],
            "--weight abcd: no node id starts with 'abcd'",
        ),
        (
            &[
                "rebalance",
                "--preview",
                "--balance-by",
                "bytes",
                "--keys",
                s,
            ],
            "--balance-by bytes needs bytes in the sample",
        ),
        (
            &["rebalance", "--preview", "--balance-by", "keys"],
            "--balance-by keys needs a key sample",
        ),
        (
            &["rebalance", "--preview", "--add-node", "nohost"],
            "--add-node nohost: not a host:port address",
        ),
        (
            &["rebalance", "--preview", "--remove-node", "feedface"],
            "--remove-node feedface: no such node",
        ),
        (
            &[
                "rebalance",
                "--preview",
                "--emit",
                "redis-cli",
                "--remove-node",
                "master-1",
            ],
            "--emit needs node ids",
        ),
        (
            &["rebalance", "--preview", "--migrate-rate", "fast"],
            "invalid value 'fast' for '--migrate-rate <RATE>': 'fast' is not a rate",
        ),
        (
            &["rebalance", "--preview", "--max-node-bytes", "1GB"],
            "--max-node-bytes needs bytes in the sample",
        ),
        (
            &[
                "reshard",
                "--preview",
                "--from",
                "all",
                "--to",
                "nobody",
                "--slots",
                "10",
            ],
            "--to nobody: not a known master",
        ),
        (
            &[
                "reshard",
                "--preview",
                "--from",
                "all",
                "--to",
                "master-0",
                "--slots",
                "0",
            ],
            "--slots 0: redis-cli moves between 1 and 16384 slots",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A ring has no slots.
    let ring = dir.path().join("ring.yml");
    std::fs::write(
        &ring,
        "alpha:\n  listen: 127.0.0.1:22121\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n   - 127.0.0.1:6379:1\n   - 127.0.0.1:6380:1\n",
    )
    .unwrap();
    let (code, _, err) = run(&[
        "rebalance",
        "--preview",
        "--topology",
        ring.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("a client-side ring has no slots to migrate"),
        "{err}"
    );
}

fn table_report_reads_like_redis_cli() {
    let (code, out, err) = run(&["rebalance", "--preview", "--masters", "3"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("*** No rebalancing needed! All nodes are within the 2.00% threshold."));
    assert!(
        out.contains("master-1 ┆          5462 → 5462 ┆ 5461-10922"),
        "{out}"
    );
    let (code, out, err) = run(&[
        "reshard",
        "--preview",
        "--masters",
        "4",
        "--from",
        "master-0,master-1",
        "--to",
        "master-3",
        "--slots",
        "100",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("│ master-0 ┆ master-3 ┆    50 ┆ 0-49"),
        "{out}"
    );
    assert!(
        out.contains("│ master-1 ┆ master-3 ┆    50 ┆ 4096-4145"),
        "{out}"
    );
    assert!(
        out.contains("master-3 ┆          4096 → 4196 ┆ 0-49 4096-4145 12288-16383"),
        "{out}"
    );
}

/// A live preview takes each slot's keys from the servers: a 50-key sample per master and
/// the whole keyspace give the same keys before and after on every node, equal to DBSIZE
/// before the move.
fn a_sampled_live_preview_agrees_with_the_full_one() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let mut keys: Vec<Vec<u8>> = (0..4000)
        .map(|i| format!("{{hot}}:{i}").into_bytes())
        .collect();
    keys.extend(crate::analyze::generated_keys(3000));
    cluster.load(&keys);
    let dbsize = cluster.dbsize();
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let preview = |sample: &str| {
        let (code, out, err) = crate::support::run_in_process(&[
            "rebalance",
            "--preview",
            "--cluster",
            &url,
            "--balance-by",
            "keys",
            "--sample",
            sample,
            "--format",
            "json",
        ]);
        assert!(code == 0 || code == 1, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["address"].as_str().unwrap().to_string(),
                    n["before"]["keys"].as_u64().unwrap(),
                    n["after"]["keys"].as_u64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let small = preview("50");
    let all = preview("all");
    assert_eq!(small, all);
    for (n, size) in cluster.nodes.iter().zip(&dbsize) {
        let addr = format!("127.0.0.1:{}", n.port);
        let before = small.iter().find(|(a, _, _)| *a == addr).unwrap().1;
        assert_eq!(before, *size, "{addr}");
    }
}

/// A real cluster where one slot holds a 10 MiB value: balancing bytes cannot bring that node
/// below the one slot, so the plan must not strip it of its other slots (keys skew from ~1.0
/// to 1.5 and a node left with a handful of keys, as before). Every node keeps a fair part of
/// the keys, the keys skew stays within --max-skew, the report says why the bytes stay skewed,
/// and the exit status agrees with the warnings.
fn balancing_bytes_around_one_huge_slot_strips_no_node() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&crate::analyze::generated_keys(5000));
    let big = vec![b'x'; 10 << 20];
    let r = crate::rdb::call_routed(&cluster, &[b"SET", b"{blob}", &big]);
    assert!(matches!(r, crate::support::Reply::Status(_)), "{r:?}");
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let (code, out, err) = crate::support::run_in_process(&[
        "rebalance",
        "--preview",
        "--cluster",
        &url,
        "--balance-by",
        "bytes",
        "--sample",
        "all",
        "--bytes",
        "--format",
        "json",
    ]);
    assert!(code == 0 || code == 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let warnings = v["warnings"].as_array().unwrap();
    assert_eq!(code == 1, !warnings.is_empty(), "{warnings:?}");
    let nodes = v["nodes"].as_array().unwrap();
    let total: u64 = nodes
        .iter()
        .map(|n| n["after"]["keys"].as_u64().unwrap())
        .sum();
    for n in nodes {
        let keys = n["after"]["keys"].as_u64().unwrap();
        assert!(
            keys as f64 > 0.8 * total as f64 / nodes.len() as f64,
            "{} ends with {keys} of {total} keys",
            n["name"]
        );
    }
    let after = v["skew"]["after"]["keys"]["max_over_mean"]
        .as_f64()
        .unwrap();
    assert!(after <= 1.25, "keys skew after: {after}");
    // Nothing moves for nothing: the bytes cannot improve, and the key holding them is named.
    let message = v["message"].as_str().unwrap_or("");
    assert!(message.contains("Nothing to move"), "{message}");
    assert!(message.contains("Its biggest key is {blob} ("), "{message}");
    assert_eq!(
        v["moves"].as_array().map_or(0, Vec::len),
        0,
        "{}",
        v["moves"]
    );
    assert_eq!(code, 0, "{warnings:?}");
}

/// Draining the node that holds a 12 MiB key warns about that key by name, from the live
/// sample's MEMORY USAGE (MIGRATE of it blocks both nodes).
fn draining_a_node_names_its_huge_key_from_a_live_sample() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    // Fewer keys per master (about 333) than `--sample 500` reads from each, so that the
    // sample holds {blob} whichever keys the servers hand out first (with 2,000 keys, 500 of
    // the drained master's 645 were read and {blob} was among them about 4 runs in 5).
    cluster.load(&crate::analyze::generated_keys(1000));
    let big = vec![b'x'; 12 << 20];
    let r = crate::rdb::call_routed(&cluster, &[b"SET", b"{blob}", &big]);
    assert!(matches!(r, crate::support::Reply::Status(_)), "{r:?}");
    let slot = keyplan_slot("{blob}");
    let holder = cluster
        .nodes
        .iter()
        .find(|n| {
            matches!(
                n.connect()
                    .call(&[b"CLUSTER", b"COUNTKEYSINSLOT", slot.to_string().as_bytes()]),
                Ok(crate::support::Reply::Int(1))
            )
        })
        .expect("a node holds {blob}");
    let id = match holder.connect().call(&[b"CLUSTER", b"MYID"]).unwrap() {
        crate::support::Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    for sample in ["all", "500"] {
        let (code, out, err) = crate::support::run_in_process(&[
            "rebalance",
            "--preview",
            "--cluster",
            &url,
            "--remove-node",
            &id,
            "--sample",
            sample,
            "--bytes",
            "--format",
            "json",
        ]);
        assert_eq!(code, 1, "{err}{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let w = v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["kind"] == "sampled_big_key")
            .unwrap_or_else(|| panic!("--sample {sample}: {}", v["warnings"]));
        assert_eq!(w["key"], "{blob}");
        assert_eq!(w["slot"], slot);
        assert!(w["memory"].as_u64().unwrap() >= 12 << 20);
        assert!(
            w["text"].as_str().unwrap().contains("key {blob} (slot"),
            "{}",
            w["text"]
        );
    }
}

/// A reshard preview that leaves the keys more skewed says so, and exits as it would
/// otherwise (it was asked for).
fn a_reshard_preview_that_raises_key_skew_says_so() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&crate::analyze::generated_keys(6000));
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let target = match cluster.nodes[1]
        .connect()
        .call(&[b"CLUSTER", b"MYID"])
        .unwrap()
    {
        crate::support::Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    let (code, out, err) = crate::support::run_in_process(&[
        "reshard",
        "--preview",
        "--cluster",
        &url,
        "--from",
        "all",
        "--to",
        &target,
        "--slots",
        "3000",
    ]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(
        out.contains("Note: this plan raises skew (busiest node ÷ mean): keys "),
        "{out}"
    );
    // The servers counted the keys: no "sample keys" for an exact count.
    assert!(
        out.contains("keys: the servers' exact key counts per slot"),
        "{out}"
    );
    assert!(!out.contains("sample keys"), "{out}");
}

fn keyplan_slot(key: &str) -> u64 {
    let out = crate::support::keyplan()
        .args(["slot", "--format", "json", key])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["keys"][0]["slot"].as_u64().unwrap()
}

/// This module's tests, run by the harness in `main.rs`.
/// A slot left half-open on a real cluster (IMPORTING on its target only, or MIGRATING on its
/// source only): the CLUSTER NODES captured on that node shows it, and every offline preview
/// (rebalance, reshard) refuses, naming the slot, as the live preview does. A capture on a node
/// with no open slot cannot show it (CLUSTER NODES lists only its own node's markers).
fn offline_previews_refuse_a_half_open_slot_as_the_live_one_does() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let text = cluster_nodes(ports[0]);
    let (a, b) = (id_of(&text, ports[0]), id_of(&text, ports[1]));
    let dir = tempfile::tempdir().unwrap();
    // Slot 100 belongs to the first master.
    for (side, port, cmd, open) in [
        (
            "importing",
            ports[1],
            ["CLUSTER", "SETSLOT", "100", "IMPORTING", a.as_str()],
            "[100-<-",
        ),
        (
            "migrating",
            ports[0],
            ["CLUSTER", "SETSLOT", "100", "MIGRATING", b.as_str()],
            "[100->-",
        ),
    ] {
        let args: Vec<&[u8]> = cmd.iter().map(|w| w.as_bytes()).collect();
        let mut c = super::support::connect_port(port);
        assert_eq!(c.call(&args).unwrap(), Reply::Status("OK".into()), "{side}");
        let captured = cluster_nodes(port);
        assert!(captured.contains(open), "{side}: {captured}");
        let file = dir.path().join(format!("{side}.nodes"));
        std::fs::write(&file, &captured).unwrap();
        let topo = file.to_str().unwrap();
        let live = format!("redis://127.0.0.1:{}", ports[2]);
        for (how, source) in [
            ("offline", ["--topology", topo]),
            ("live", ["--cluster", live.as_str()]),
        ] {
            for plan in [
                vec!["rebalance", "--preview", "--remove-node", b.as_str()],
                vec![
                    "reshard",
                    "--preview",
                    "--from",
                    "all",
                    "--to",
                    b.as_str(),
                    "--slots",
                    "10",
                ],
            ] {
                let out = keyplan().args(&plan).args(source).output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{side} {how} {plan:?}: {err}");
                assert!(
                    err.contains("slots 100 are open"),
                    "{side} {how} {plan:?}: the slot is not named: {err}"
                );
            }
        }
        assert_eq!(
            c.call(&[b"CLUSTER", b"SETSLOT", b"100", b"STABLE"])
                .unwrap(),
            Reply::Status("OK".into())
        );
    }
}

pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "offline_previews_refuse_a_half_open_slot_as_the_live_one_does",
        offline_previews_refuse_a_half_open_slot_as_the_live_one_does,
    ),
    (
        "previews_equal_real_redis_cli_migrations",
        previews_equal_real_redis_cli_migrations,
    ),
    (
        "load_aware_plan_beats_the_slot_count_plan_on_a_skewed_sample",
        load_aware_plan_beats_the_slot_count_plan_on_a_skewed_sample,
    ),
    ("preview_errors_name_the_flag", preview_errors_name_the_flag),
    (
        "table_report_reads_like_redis_cli",
        table_report_reads_like_redis_cli,
    ),
    (
        "a_sampled_live_preview_agrees_with_the_full_one",
        a_sampled_live_preview_agrees_with_the_full_one,
    ),
    (
        "balancing_bytes_around_one_huge_slot_strips_no_node",
        balancing_bytes_around_one_huge_slot_strips_no_node,
    ),
    (
        "draining_a_node_names_its_huge_key_from_a_live_sample",
        draining_a_node_names_its_huge_key_from_a_live_sample,
    ),
    (
        "a_reshard_preview_that_raises_key_skew_says_so",
        a_reshard_preview_that_raises_key_skew_says_so,
    ),
];
