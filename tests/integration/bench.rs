//! `keyplan bench` and live sampling details against real clusters: measured round trips and
//! per-node commands equal the simulator's prediction, nothing is left behind, the refusals,
//! reading from replicas, and a node dying in the middle of a scan.

use super::analyze::{Cluster, generated_keys};
use super::support::{
    RedisServer, Reply, all_output, field_pairs, json_of, keyplan, require_binary,
};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

const BATCHES: &str = "\
MGET user:1:profile user:2:profile user:3:profile user:4:profile user:5:profile
MSET a 1 b 2 c 3 d 4
PIPELINE GET session:9; ZADD board 1 x; HGET cart:7 items; INCR counter
MULTI SET {order:7}:items x; INCR {order:7}:total
DEL a b c d
";

fn keys_under(cluster: &Cluster, prefix: &str) -> usize {
    cluster
        .nodes
        .iter()
        .map(|n| {
            let mut c = n.connect();
            match c.call(&[b"KEYS", format!("{prefix}*").as_bytes()]).unwrap() {
                Reply::Array(v) => v.len(),
                other => panic!("KEYS replied {other:?}"),
            }
        })
        .sum()
}

fn bench_measures_what_the_simulator_predicts_and_cleans_up() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&generated_keys(300));
    let before: Vec<u64> = cluster.dbsize();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batches.txt");
    std::fs::write(&file, BATCHES).unwrap();
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);

    // Refused without --allow-writes: nothing written.
    let out = keyplan()
        .args(["bench", "--cluster", &url, "--batches"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-writes is not given"));
    assert_eq!(cluster.dbsize(), before);

    let out = keyplan()
        .args([
            "bench",
            "--cluster",
            &url,
            "--allow-writes",
            "--duration",
            "0.2",
            "--concurrency",
            "2",
            "--prefix",
            "kpb",
            "--format",
            "json",
            "--batches",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{v}");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 5 * 5);
    for r in results {
        let (p, m) = (&r["predicted"], &r["measured"]);
        assert!(m["executions"].as_u64().unwrap() >= 2, "{r}");
        assert_eq!(m["errors"], 0, "{r}");
        assert_eq!(p["round_trips"].as_f64(), m["round_trips"].as_f64(), "{r}");
        // Per node, commands per batch from INFO commandstats deltas equal the prediction.
        let predicted = field_pairs(&p["nodes"], "address", "commands");
        let measured = field_pairs(&m["per_node"], "node", "commands");
        assert_eq!(predicted, measured, "{r}");
        assert_eq!(r["matches"], true);
        assert!(m["qps"].as_f64().unwrap() > 0.0 && m["p99_ms"].as_f64().unwrap() > 0.0);
    }
    // Nothing left under the prefix; the cluster's own keys untouched.
    assert_eq!(keys_under(&cluster, "kpb"), 0);
    assert_eq!(cluster.dbsize(), before);

    // A prefix that already holds keys is refused, and its keys stay.
    cluster.load(&[b"kpb:mine".to_vec()]);
    let out = keyplan()
        .args([
            "bench",
            "--cluster",
            &url,
            "--allow-writes",
            "--prefix",
            "kpb",
            "--batches",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already holds keys (e.g. 'kpb:mine'"), "{err}");
    assert_eq!(keys_under(&cluster, "kpb"), 1);
    // A prefix with braces would move keys onto a tag: refused.
    let out = keyplan()
        .args([
            "bench",
            "--cluster",
            &url,
            "--allow-writes",
            "--prefix",
            "{x}",
            "--batches",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn bench_on_a_password_protected_cluster_never_prints_the_password() {
    let password = "b3nch-s3cret";
    let Some(cluster) = Cluster::create_with(Some(password)) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batches.txt");
    std::fs::write(&file, "MGET a b c\n").unwrap();
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let bench = |extra: &[&std::ffi::OsStr]| {
        keyplan()
            .env("REDISCLI_AUTH", password)
            .args([
                "bench",
                "--cluster",
                &url,
                "--allow-writes",
                "--duration",
                "0.1",
            ])
            .arg("--batches")
            .arg(&file)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = bench(&[]);
    let all = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!all.contains(password));
    assert!(all.contains("keyplan bench on redis://"), "{all}");
    // With -o the results go to the file, and nothing to stdout.
    let results = dir.path().join("results.json");
    let json = ["--strategy", "pipeline", "--format", "json", "-o"].map(std::ffi::OsStr::new);
    let out = bench(&[&json[..], &[results.as_os_str()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert!(out.stdout.is_empty(), "{}", all_output(&out));
    let text = std::fs::read_to_string(&results).unwrap();
    assert!(!text.contains(password));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 1, "{v}");
}

/// Three masters with one replica each (redis-cli --cluster create --cluster-replicas 1).
fn cluster_with_replicas() -> Option<(Vec<RedisServer>, Vec<u16>)> {
    cluster_with_replicas_args(&[])
}

/// [`cluster_with_replicas`] with extra server arguments.
fn cluster_with_replicas_args(extra: &[&str]) -> Option<(Vec<RedisServer>, Vec<u16>)> {
    let server = require_binary("redis-server")?;
    let cli = require_binary("redis-cli")?;
    let nodes: Vec<RedisServer> = (0..6)
        .map(|_| RedisServer::start_args(&server, true, None, extra))
        .collect();
    let mut cmd = Command::new(cli);
    cmd.arg("--cluster").arg("create");
    for n in &nodes {
        cmd.arg(format!("127.0.0.1:{}", n.port));
    }
    let out = cmd
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .output()
        .expect("run redis-cli");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Wait for every node to be ok and every replica linked to its master.
    let deadline = Instant::now() + Duration::from_secs(60);
    let masters = loop {
        let mut ok = true;
        let mut masters = Vec::new();
        for n in &nodes {
            let mut c = n.connect();
            let info = match c.call(&[b"INFO", b"replication"]).unwrap() {
                Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
                _ => String::new(),
            };
            let state = match c.call(&[b"CLUSTER", b"INFO"]).unwrap() {
                Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).contains("cluster_state:ok"),
                _ => false,
            };
            ok &= state;
            // Its view of the cluster agrees too (gossip lags replication): 3 masters and 3
            // replicas, every link connected, no handshake or failure flags.
            let view = match c.call(&[b"CLUSTER", b"NODES"]).unwrap() {
                Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
                _ => String::new(),
            };
            let lines: Vec<&str> = view.lines().filter(|l| !l.trim().is_empty()).collect();
            let role = |l: &&str, r: &str| {
                l.split(' ')
                    .nth(2)
                    .is_some_and(|f| f.split(',').any(|x| x == r))
            };
            ok &= lines.len() == 6
                && lines.iter().filter(|l| role(l, "master")).count() == 3
                && lines.iter().filter(|l| role(l, "slave")).count() == 3
                && lines.iter().all(|l| {
                    l.split(' ').nth(7) == Some("connected")
                        && !role(l, "handshake")
                        && !role(l, "fail?")
                        && !role(l, "fail")
                });
            if info.contains("role:master") {
                masters.push(n.port);
                ok &= info.contains("connected_slaves:1");
            } else {
                ok &= info.contains("master_link_status:up");
            }
        }
        if ok && masters.len() == 3 {
            break masters;
        }
        assert!(Instant::now() < deadline, "replicas did not come up");
        std::thread::sleep(Duration::from_millis(200));
    };
    Some((nodes, masters))
}

fn cmdstat(port: u16, name: &str) -> u64 {
    let mut c = super::support::connect_port(port);
    let text = match c.call(&[b"INFO", b"commandstats"]).unwrap() {
        Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
        .and_then(|r| r.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

fn sampling_can_read_from_replicas() {
    let Some((nodes, masters)) = cluster_with_replicas() else {
        return;
    };
    // Write through the cluster (redis-cli -c follows MOVED), then wait for the replicas.
    let cli = require_binary("redis-cli").unwrap();
    let mut written = 0;
    for i in 0..400 {
        let out = Command::new(&cli)
            .args([
                "-c",
                "-p",
                &masters[0].to_string(),
                "SET",
                &format!("k:{i}"),
                "v",
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
        written += 1;
    }
    let replicas: Vec<u16> = nodes
        .iter()
        .map(|n| n.port)
        .filter(|p| !masters.contains(p))
        .collect();
    let size = |p: u16| match super::support::connect_port(p).call(&[b"DBSIZE"]).unwrap() {
        Reply::Int(v) => v as u64,
        other => panic!("{other:?}"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while replicas.iter().map(|&p| size(p)).sum::<u64>() != written {
        assert!(Instant::now() < deadline, "replication did not catch up");
        std::thread::sleep(Duration::from_millis(100));
    }
    let scans_before: Vec<u64> = masters.iter().map(|&p| cmdstat(p, "scan")).collect();
    let url = format!("redis://127.0.0.1:{}", masters[0]);
    let v: Value = json_of(keyplan().args([
        "analyze",
        "--cluster",
        &url,
        "--sample",
        "all",
        "--read-from",
        "replicas",
        "--bytes",
        "--format",
        "json",
    ]));
    assert_eq!(v["totals"]["keys"].as_u64(), Some(written));
    assert!(
        v["totals"]["bytes"].as_u64().unwrap() > 0,
        "MEMORY USAGE works on replicas"
    );
    // The masters served no SCAN: the replicas did.
    let scans_after: Vec<u64> = masters.iter().map(|&p| cmdstat(p, "scan")).collect();
    assert_eq!(scans_before, scans_after);
    assert!(replicas.iter().all(|&p| cmdstat(p, "scan") > 0));
    assert!(replicas.iter().all(|&p| cmdstat(p, "readonly") > 0));
}

fn a_node_dying_mid_scan_is_named() {
    let Some(mut cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&generated_keys(6000));
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let victim = cluster.nodes[2].port;
    // COUNT 10 at 5 SCANs a second per node: about 40 seconds per node, so the kill below
    // lands in the middle.
    let sample = std::env::temp_dir().join(format!("kp-midscan-{victim}.tsv"));
    let _ = std::fs::remove_file(&sample);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("keyplan"))
        .args([
            "scan",
            "--cluster",
            &url,
            "--sample",
            "all",
            "--rate",
            "5",
            "--scan-count",
            "10",
            "-o",
        ])
        .arg(&sample)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    cluster.nodes[2].kill();
    let killed = Instant::now();
    let out = child.wait_with_output().unwrap();
    // The other nodes' scans stop at once instead of running to their end (~40 s).
    assert!(
        killed.elapsed() < Duration::from_secs(20),
        "scan went on for {:?} after a node died",
        killed.elapsed()
    );
    // No partial sample is left behind.
    assert!(!sample.exists(), "a failed scan left {}", sample.display());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{victim}")), "{err}");
    assert!(
        err.contains("keys were sampled from it"),
        "the sampled count is reported: {err}"
    );
}

/// A node whose ACL refuses RANDOMKEY (how a sample smaller than a node is drawn): one line
/// naming the node, the server's own refusal once and what to do, not the pipeline's raw list
/// of every refusal.
fn a_node_refusing_randomkey_is_named_in_one_line() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&generated_keys(600));
    for n in &cluster.nodes {
        let reply = n
            .connect()
            .call(&[b"ACL", b"SETUSER", b"default", b"-randomkey"])
            .unwrap();
        assert!(matches!(reply, Reply::Status(_)), "{reply:?}");
    }
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--sample", "20"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {err}"));
    assert!(
        cluster
            .nodes
            .iter()
            .any(|n| line.contains(&format!("127.0.0.1:{}", n.port))),
        "names the node: {line}"
    );
    for says in ["RANDOMKEY", "+randomkey", "--sample all", "--match"] {
        assert!(line.contains(says), "{says}: {line}");
    }
    // The server's refusal, once.
    assert_eq!(line.matches("no permissions").count(), 1, "{line}");
    assert!(
        !err.contains("Pipeline") && !err.contains("Index "),
        "{err}"
    );
    // With SCAN instead, as the message says, the sample is taken.
    let out = keyplan()
        .args(["analyze", "--cluster", &url, "--sample", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
}

/// A calibration file with jitter of extreme magnitude (1e308: P50/P99 came out null; 1e-308:
/// 0 ms) is refused, naming the file, the field and the range; huge numbers in any message
/// about it are written short (`1e308`), never as 309 digits.
fn calibration_of_extreme_magnitude_is_refused() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let real: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("examples/calibration-loopback.json")).unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cal.json");
    let batches = root.join("examples/batches.txt");
    type Case = (Box<dyn Fn(&mut Value)>, &'static [&'static str]);
    let cases: Vec<Case> = vec![
        (
            Box::new(|v| v["params"]["jitter"] = vec![1e308; 101].into()),
            &["params.jitter[0] is 1e308", "between 0 and 101"],
        ),
        (
            Box::new(|v| v["params"]["jitter"] = vec![1e-308; 101].into()),
            &["params.jitter", "average 1e-308", "between 0.5 and 2"],
        ),
        (
            Box::new(|v| v["params"]["cores"] = 1e308.into()),
            &["params.cores is 1e308"],
        ),
        (
            Box::new(|v| v["measured_on"]["masters"] = 1e308.into()),
            &["e+308"],
        ),
    ];
    for (change, says) in cases {
        let mut v = real.clone();
        change(&mut v);
        std::fs::write(&path, v.to_string()).unwrap();
        let (code, out, err) = crate::support::run_in_process(&[
            "simulate",
            "--batches",
            batches.to_str().unwrap(),
            "--calibration",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{says:?}: {out}{err}");
        assert!(err.contains(path.to_str().unwrap()), "{err}");
        for s in says {
            assert!(err.contains(s), "{s}: {err}");
        }
        assert!(
            !err.contains("0000000000000000"),
            "a number written in full: {err}"
        );
    }
    // bench's own --rtt likewise, refused before any cluster is reached.
    for rtt in ["1e308", "1e-308", "-1", "NaN"] {
        let (code, out, err) = crate::support::run_in_process(&[
            "bench",
            "--cluster",
            "redis://127.0.0.1:1",
            "--allow-writes",
            "--batches",
            batches.to_str().unwrap(),
            &format!("--rtt={rtt}"),
        ]);
        assert_eq!(code, 2, "{rtt}: {out}{err}");
        assert!(
            err.contains("--rtt") && err.contains("between 0.001 and 60000"),
            "{rtt}: {err}"
        );
        assert!(!err.contains("0000000000000000"), "{err}");
    }
}

/// Every key of every master, sorted.
fn all_keys(cluster: &Cluster) -> Vec<String> {
    let mut out: Vec<String> = cluster
        .nodes
        .iter()
        .flat_map(|n| match n.connect().call(&[b"KEYS", b"*"]).unwrap() {
            Reply::Array(v) => v
                .into_iter()
                .map(|k| match k {
                    Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
                    other => panic!("KEYS item {other:?}"),
                })
                .collect::<Vec<_>>(),
            other => panic!("KEYS replied {other:?}"),
        })
        .collect();
    out.sort();
    out
}

fn bench_file(
    url: &str,
    dir: &std::path::Path,
    text: &str,
    extra: &[&str],
) -> std::process::Output {
    let file = dir.join("batches.txt");
    std::fs::write(&file, text).unwrap();
    keyplan()
        .env("XDG_STATE_HOME", dir.join("state"))
        .args([
            "bench",
            "--cluster",
            url,
            "--allow-writes",
            "--duration",
            "0.1",
            "--prefix",
            "kp:job",
        ])
        .args(extra)
        .arg("--batches")
        .arg(&file)
        .output()
        .unwrap()
}

fn bench_never_touches_what_is_not_its_own() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    // Another application's keys, some starting with the prefix string.
    let theirs: Vec<Vec<u8>> = ["kp:job2:a", "kp:jobs", "victim", "{x}victim", "evil0"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    cluster.load(&theirs);
    let before = all_keys(&cluster);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let dir = tempfile::tempdir().unwrap();
    // Admin, keyless, unknown commands and scripts are refused before anything is written.
    for line in [
        "FLUSHALL",
        "FLUSHDB",
        "SHUTDOWN",
        "PIPELINE GET a; FLUSHALL",
        "EVAL \"redis.call('set','evil','1')\" 0",
        "EVAL \"return 1\" 1 a",
        "MYMODULE.SET a 1",
        "CONFIG SET maxmemory 1",
        "KEYS *",
        "SORT l BY nosort GET other_* STORE dst",
        "BLPOP a b 0",
        "PUBLISH ch msg",
    ] {
        let out = bench_file(&url, dir.path(), line, &[]);
        assert_eq!(out.status.code(), Some(2), "{line}: {}", all_output(&out));
        assert_eq!(all_keys(&cluster), before, "{line} wrote something");
    }
    // Scripts declaring no keys are refused as scripts, not for where their keys are.
    for line in [
        "EVAL \"return 1\" 0",
        "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0",
        "EVAL_RO \"return 1\" 0",
        "FCALL f 0",
    ] {
        let out = bench_file(&url, dir.path(), line, &[]);
        let text = all_output(&out);
        assert_eq!(out.status.code(), Some(2), "{line}: {text}");
        assert!(
            text.contains("a script can touch any key"),
            "{line}: {text}"
        );
        assert!(
            !text.contains("not where its syntax puts them"),
            "{line}: {text}"
        );
    }
    // Destination keys are prefixed like any key: RENAME, COPY, SUNIONSTORE write under it.
    let out = bench_file(
        &url,
        dir.path(),
        "MSET {x}a 1 {x}b 2\nCOPY {x}a {x}dst\nRENAME {x}b {x}victim\nSUNIONSTORE {x}u {x}s {x}t\nSMOVE {x}s {x}t m\n",
        &["--strategy", "hashtag"],
    );
    let text = all_output(&out);
    assert_ne!(out.status.code(), Some(2), "{text}");
    // Cleanup deleted only what bench wrote: the others' keys, prefix-alike included, stay.
    assert_eq!(all_keys(&cluster), before, "{text}");
}

fn a_killed_bench_is_cleaned_up_from_its_journal() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&[b"kp:job2:mine".to_vec()]);
    let before = all_keys(&cluster);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let dir = tempfile::tempdir().unwrap();
    // Where bench keeps its record of the run (this machine's, for --cleanup).
    let state = dir.path().join("state");
    let file = dir.path().join("batches.txt");
    std::fs::write(
        &file,
        "MSET a 1 b 2 c 3\nPIPELINE SET x 1; SET y 2; INCR z\n",
    )
    .unwrap();
    let bin = assert_cmd::cargo::cargo_bin("keyplan");
    let mut child = Command::new(bin)
        .env("XDG_STATE_HOME", &state)
        .args([
            "bench",
            "--cluster",
            &url,
            "--allow-writes",
            "--duration",
            "30",
            "--prefix",
            "kp:job",
            "--batches",
        ])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it has written keys, then kill it without a chance to clean up.
    let deadline = Instant::now() + Duration::from_secs(20);
    while all_keys(&cluster)
        .iter()
        .filter(|k| k.starts_with("kp:job:"))
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "bench wrote nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(all_keys(&cluster).len() > before.len());
    // The next run is refused and says how to clean up.
    let out = bench_file(&url, dir.path(), "MGET a b", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        all_output(&out).contains("keyplan bench --cleanup --prefix kp:job"),
        "{}",
        all_output(&out)
    );
    let cleanup = |prefix: &str, state: &std::path::Path| {
        keyplan()
            .env("XDG_STATE_HOME", state)
            .args(["bench", "--cleanup", "--prefix", prefix, "--cluster", &url])
            .output()
            .unwrap()
    };
    let call = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        crate::rdb::call_routed(&cluster, &args)
    };
    let left = all_keys(&cluster);
    // Someone else's key under the prefix, added to the real journal: refused whole, nothing
    // deleted (the run never recorded writing it).
    call(&["SET", "kp:job:victim", "theirs"]);
    call(&["SADD", "kp:job:journal", "kp:job:victim"]);
    let out = cleanup("kp:job", &state);
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("did not record writing") && text.contains("'kp:job:victim'"),
        "{text}"
    );
    let mut with_victim = left.clone();
    with_victim.push("kp:job:victim".into());
    with_victim.sort();
    assert_eq!(all_keys(&cluster), with_victim);
    call(&["SREM", "kp:job:journal", "kp:job:victim"]);
    // The real journal, cleaned up where no record of its run is (another machine): refused.
    let out = cleanup("kp:job", &dir.path().join("elsewhere"));
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("no record on this machine"), "{text}");
    assert_eq!(all_keys(&cluster), with_victim);
    // Its members (the marker and the run) copied into a journal under another prefix, with
    // that prefix's keys: the run recorded another prefix, so nothing is deleted.
    let members = match call(&["SMEMBERS", "kp:job:journal"]) {
        Reply::Array(v) => v
            .into_iter()
            .filter_map(|m| match m {
                Reply::Bulk(Some(b)) => Some(String::from_utf8(b).unwrap()),
                _ => None,
            })
            .filter(|m| m.starts_with('#'))
            .collect::<Vec<_>>(),
        other => panic!("SMEMBERS replied {other:?}"),
    };
    assert_eq!(members.len(), 2, "the marker and the run: {members:?}");
    call(&["SET", "kp:copy:victim", "theirs"]);
    let mut sadd = vec!["SADD", "kp:copy:journal", "kp:copy:victim"];
    sadd.extend(members.iter().map(String::as_str));
    call(&sadd);
    let out = cleanup("kp:copy", &state);
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("wrote under 'kp:job:', not 'kp:copy:'"),
        "{text}"
    );
    assert!(all_keys(&cluster).contains(&"kp:copy:victim".to_string()));
    call(&["DEL", "kp:copy:journal"]);
    call(&["DEL", "kp:copy:victim"]);
    // Here, with the run's record: what it wrote is deleted, the victim stays.
    let out = cleanup("kp:job", &state);
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("0 remain"),
        "{}",
        all_output(&out)
    );
    let mut after = before.clone();
    after.push("kp:job:victim".into());
    after.sort();
    assert_eq!(all_keys(&cluster), after);
    // The record goes with the journal.
    let records: Vec<_> = std::fs::read_dir(state.join("keyplan/bench"))
        .unwrap()
        .collect();
    assert!(records.is_empty(), "{records:?}");
}

/// `--cleanup` deletes only what a journal bench itself wrote lists, and only names under the
/// prefix: a set bench did not write (no marker), one with the old public marker, a journal
/// with a planted name outside the prefix, a forged journal with the marker and a run id that
/// no run on this machine recorded (the hole of the marker alone), or a journal key of another
/// type is refused as a whole and nothing is deleted.
fn cleanup_never_deletes_what_a_planted_journal_lists() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let theirs: Vec<Vec<u8>> = ["app:important", "user:1:profile", "kp:plant:mine"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    cluster.load(&theirs);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let state = tempfile::tempdir().unwrap();
    let cleanup = |prefix: &str| {
        keyplan()
            .env("XDG_STATE_HOME", state.path())
            .args(["bench", "--cleanup", "--prefix", prefix, "--cluster", &url])
            .output()
            .unwrap()
    };
    let call = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        crate::rdb::call_routed(&cluster, &args)
    };
    // An application's own set, named like a journal: no marker.
    call(&[
        "SADD",
        "kp:plant:journal",
        "app:important",
        "user:1:profile",
        "kp:plant:mine",
    ]);
    let before = all_keys(&cluster);
    let out = cleanup("kp:plant");
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("without keyplan bench's marker"),
        "{}",
        all_output(&out)
    );
    assert_eq!(all_keys(&cluster), before);
    // The old public marker planted: it proves nothing, refused whole.
    call(&["SADD", "kp:plant:journal", "#keyplan-bench-journal v1"]);
    let out = cleanup("kp:plant");
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("marker of an older keyplan bench"),
        "{}",
        all_output(&out)
    );
    assert_eq!(all_keys(&cluster), before);
    // Today's marker and a run planted too, with names outside the prefix: refused whole,
    // even the one name under the prefix stays.
    call(&[
        "SADD",
        "kp:plant:journal",
        "#keyplan-bench-journal v2",
        "#run 0123456789abcdef0123456789abcdef",
    ]);
    let out = cleanup("kp:plant");
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("outside 'kp:plant:'"),
        "{}",
        all_output(&out)
    );
    assert_eq!(all_keys(&cluster), before);
    // A forged journal, listing only names under the prefix (another program's keys): the
    // public marker alone (what deleted them before), or the marker as bench writes it today
    // with a run no run here recorded, a run id that is a path, or two runs: nothing is
    // deleted.
    for run in [
        &["#keyplan-bench-journal v1"][..],
        &[
            "#keyplan-bench-journal v2",
            "#run 0123456789abcdef0123456789abcdef",
        ],
        &["#keyplan-bench-journal v2", "#run ../../../../etc/passwd"],
        &[
            "#keyplan-bench-journal v2",
            "#run 0123456789abcdef0123456789abcdef",
            "#run fedcba9876543210fedcba9876543210",
        ],
    ] {
        call(&["DEL", "kp:forged:journal"]);
        let mut sadd = vec![
            "SADD",
            "kp:forged:journal",
            "kp:forged:victim",
            "kp:forged:{t}other",
        ];
        sadd.extend(run);
        call(&sadd);
        call(&["SET", "kp:forged:victim", "theirs"]);
        call(&["SET", "kp:forged:{t}other", "theirs"]);
        let before = all_keys(&cluster);
        let out = cleanup("kp:forged");
        let text = all_output(&out);
        assert_eq!(out.status.code(), Some(2), "{run:?}: {text}");
        assert!(
            text.contains("nothing was deleted") || text.contains("Nothing was deleted"),
            "{run:?}: {text}"
        );
        assert_eq!(all_keys(&cluster), before, "{run:?}");
    }
    for k in [
        "kp:forged:journal",
        "kp:forged:victim",
        "kp:forged:{t}other",
    ] {
        call(&["DEL", k]);
    }
    // A journal key that is not a set.
    call(&["SET", "kp:str:journal", "x"]);
    let before = all_keys(&cluster);
    let out = cleanup("kp:str");
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("is a string"),
        "{}",
        all_output(&out)
    );
    assert_eq!(all_keys(&cluster), before);
    // A real bench run's journal is still honoured: what it wrote is gone, the others stay.
    let dir = tempfile::tempdir().unwrap();
    let out = bench_file(&url, dir.path(), "MSET a 1 b 2", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert_eq!(all_keys(&cluster), before);
}

/// After a failover (manual, and a master killed and replaced by its replica), live sampling
/// reads only the masters that own slots: every key counted once, none from the demoted or
/// dead node, and no "cannot connect" to a node the cluster has replaced.
fn live_sampling_survives_failovers() {
    let Some((mut nodes, masters)) =
        cluster_with_replicas_args(&["--cluster-node-timeout", "2000"])
    else {
        return;
    };
    let cli = require_binary("redis-cli").unwrap();
    let keys: Vec<String> = (0..600).map(|i| format!("k:{i}")).collect();
    let mut args = vec![
        "-c".to_string(),
        "-p".into(),
        masters[0].to_string(),
        "MSET".into(),
    ];
    // One MSET per key through the cluster (redis-cli -c follows MOVED).
    for k in &keys {
        let out = Command::new(&cli)
            .args(&args[..3])
            .args(["SET", k, "v"])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    args.clear();
    let total = |url: &str| -> (Option<i32>, u64, String) {
        let out = keyplan()
            .args([
                "analyze",
                "--cluster",
                url,
                "--sample",
                "all",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (
            out.status.code(),
            v["totals"]["sampled"].as_u64().unwrap_or(0),
            all_output(&out),
        )
    };
    let replica_of = |master: u16| -> u16 {
        let id = match super::support::connect_port(master)
            .call(&[b"CLUSTER", b"MYID"])
            .unwrap()
        {
            Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("{other:?}"),
        };
        nodes
            .iter()
            .map(|n| n.port)
            .find(|&p| {
                p != master
                    && matches!(super::support::connect_port(p).call(&[b"CLUSTER", b"NODES"]).unwrap(),
                        Reply::Bulk(Some(b)) if String::from_utf8_lossy(&b).lines().any(|l| l.contains("myself") && l.contains(&id)))
            })
            .expect("a replica of the master")
    };
    // A manual failover: the old master becomes a replica, slotless.
    let r = replica_of(masters[1]);
    super::support::connect_port(r)
        .call(&[b"CLUSTER", b"FAILOVER"])
        .unwrap();
    let url = format!("redis://127.0.0.1:{}", masters[0]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, sampled, text) = total(&url);
        if code == Some(0) {
            assert_eq!(sampled, keys.len() as u64, "{text}");
        }
        let promoted = matches!(super::support::connect_port(r).call(&[b"INFO", b"replication"]).unwrap(),
            Reply::Bulk(Some(b)) if String::from_utf8_lossy(&b).contains("role:master"));
        if promoted && code == Some(0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the failover did not finish: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // A master killed: once its replica took over, sampling works without the dead node.
    let victim = masters[2];
    let r2 = replica_of(victim);
    nodes.iter_mut().find(|n| n.port == victim).unwrap().kill();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The replica took over, and the seed keyplan asks knows it: no slot is the dead
        // node's in the seed's CLUSTER NODES.
        let seed_knows = matches!(super::support::connect_port(masters[0]).call(&[b"CLUSTER", b"NODES"]).unwrap(),
            Reply::Bulk(Some(b)) if String::from_utf8_lossy(&b).lines()
                .filter(|l| l.contains(&format!(":{victim}@")))
                .all(|l| l.split(' ').count() <= 8));
        let ok = seed_knows
            && matches!(super::support::connect_port(masters[0]).call(&[b"CLUSTER", b"INFO"]).unwrap(),
            Reply::Bulk(Some(b)) if String::from_utf8_lossy(&b).contains("cluster_state:ok"))
            && matches!(super::support::connect_port(r2).call(&[b"INFO", b"replication"]).unwrap(),
            Reply::Bulk(Some(b)) if String::from_utf8_lossy(&b).contains("role:master"));
        if ok {
            break;
        }
        assert!(Instant::now() < deadline, "the replica did not take over");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, sampled, text) = total(&url);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(sampled, keys.len() as u64, "{text}");
}

/// SIGTERM (and SIGHUP) during a bench: it stops, deletes every key it wrote, exits 2.
fn a_terminated_bench_cleans_up() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&[b"theirs:1".to_vec()]);
    let before = all_keys(&cluster);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batches.txt");
    std::fs::write(&file, "MSET a 1 b 2 c 3\nPIPELINE SET x 1; INCR z\n").unwrap();
    for signal in ["TERM", "HUP"] {
        let bin = assert_cmd::cargo::cargo_bin("keyplan");
        let child = Command::new(bin)
            .args([
                "bench",
                "--cluster",
                &url,
                "--allow-writes",
                "--duration",
                "30",
                "--prefix",
                "kp:term",
                "--batches",
            ])
            .arg(&file)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while all_keys(&cluster)
            .iter()
            .filter(|k| k.starts_with("kp:term:") && !k.ends_with(":journal"))
            .count()
            < 2
        {
            assert!(Instant::now() < deadline, "bench wrote nothing");
            std::thread::sleep(Duration::from_millis(50));
        }
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        let text = all_output(&out);
        assert_eq!(out.status.code(), Some(2), "SIG{signal}: {text}");
        assert!(text.contains("interrupted"), "SIG{signal}: {text}");
        assert_eq!(all_keys(&cluster), before, "SIG{signal}: {text}");
    }
}

/// A reshard while a live scan runs: the scan either fails saying the slot map changed, or
/// counts every key exactly once; never a silently wrong count.
fn a_reshard_mid_scan_is_caught() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let cli = require_binary("redis-cli").unwrap();
    let keys: Vec<Vec<u8>> = (0..3000).map(|i| format!("r:{i}").into_bytes()).collect();
    cluster.load(&keys);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let id = |port: u16| match super::support::connect_port(port)
        .call(&[b"CLUSTER", b"MYID"])
        .unwrap()
    {
        Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    let (from, to) = (id(cluster.nodes[0].port), id(cluster.nodes[1].port));
    let bin = assert_cmd::cargo::cargo_bin("keyplan");
    // A slow scan (with --bytes, 200 commands a second per master: about 5 s).
    let scan = Command::new(bin)
        .args([
            "scan",
            "--cluster",
            &url,
            "--sample",
            "all",
            "--bytes",
            "--rate",
            "200",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let moved = Command::new(&cli)
        .args(["--cluster", "reshard"])
        .arg(format!("127.0.0.1:{}", cluster.nodes[0].port))
        .args(["--cluster-from", &from, "--cluster-to", &to])
        .args(["--cluster-slots", "2000", "--cluster-yes"])
        .output()
        .unwrap();
    assert!(moved.status.success(), "{}", all_output(&moved));
    let out = scan.wait_with_output().unwrap();
    let text = all_output(&out);
    eprintln!(
        "scan during a reshard: exit {:?}: {}",
        out.status.code(),
        text.lines().last().unwrap_or("")
    );
    match out.status.code() {
        Some(2) => assert!(text.contains("slot map changed"), "{text}"),
        Some(0) => {
            let mut got: Vec<&str> = std::str::from_utf8(&out.stdout)
                .unwrap()
                .lines()
                .map(|l| l.split('\t').next().unwrap_or(""))
                .collect();
            let n = got.len();
            got.sort();
            got.dedup();
            assert_eq!((n, got.len()), (keys.len(), keys.len()), "{text}");
        }
        other => panic!("exit {other:?}: {text}"),
    }
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "bench_measures_what_the_simulator_predicts_and_cleans_up",
        bench_measures_what_the_simulator_predicts_and_cleans_up,
    ),
    (
        "bench_on_a_password_protected_cluster_never_prints_the_password",
        bench_on_a_password_protected_cluster_never_prints_the_password,
    ),
    (
        "sampling_can_read_from_replicas",
        sampling_can_read_from_replicas,
    ),
    (
        "a_node_dying_mid_scan_is_named",
        a_node_dying_mid_scan_is_named,
    ),
    (
        "bench_never_touches_what_is_not_its_own",
        bench_never_touches_what_is_not_its_own,
    ),
    (
        "a_killed_bench_is_cleaned_up_from_its_journal",
        a_killed_bench_is_cleaned_up_from_its_journal,
    ),
    (
        "cleanup_never_deletes_what_a_planted_journal_lists",
        cleanup_never_deletes_what_a_planted_journal_lists,
    ),
    (
        "a_node_refusing_randomkey_is_named_in_one_line",
        a_node_refusing_randomkey_is_named_in_one_line,
    ),
    (
        "calibration_of_extreme_magnitude_is_refused",
        calibration_of_extreme_magnitude_is_refused,
    ),
    (
        "live_sampling_survives_failovers",
        live_sampling_survives_failovers,
    ),
    ("a_terminated_bench_cleans_up", a_terminated_bench_cleans_up),
    ("a_reshard_mid_scan_is_caught", a_reshard_mid_scan_is_caught),
];
