//! `keyplan verify` on real clusters: a preview saved, the migration run by `redis-cli
//! --cluster reshard` (which knows nothing of keyplan), then the cluster checked against the
//! preview; and the same cluster broken on purpose (a slot not moved, a key deleted, a key left
//! on a master that does not own its slot, a slot left open), each reported with exit 1.

use super::cluster::Cluster;
use super::rebalance::wait_agree;
use super::support::{Reply, all_output, connect_port, keyplan, require_binary};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Keys of every kind of byte: plain ones, hash-tagged ones, quotes and backslashes, a
/// newline, a NUL, invalid UTF-8 and the empty key.
fn keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..3000)
        .map(|i| format!("user:{i}:profile").into_bytes())
        .collect();
    keys.extend((0..500).map(|i| format!("{{cart:{}}}:item:{i}", i % 5).into_bytes()));
    keys.extend((0..300).map(|i| format!("odd\"q\\k'{i}").into_bytes()));
    keys.extend((0..300).map(|i| format!("nl\n{i}").into_bytes()));
    keys.extend((0..300).map(|i| format!("nul\0{i}").into_bytes()));
    keys.extend((0..300u32).map(|i| {
        let mut k = b"bad\xff\xfe".to_vec();
        k.extend_from_slice(i.to_string().as_bytes());
        k
    }));
    keys.push(Vec::new());
    keys
}

/// The keys in redis-cli's quoted form (`redis-cli --no-raw --scan`), which holds every byte.
fn write_dump(path: &Path, keys: &[Vec<u8>]) {
    let mut text = Vec::new();
    for k in keys {
        text.push(b'"');
        for &b in k {
            match b {
                b'\\' => text.extend_from_slice(b"\\\\"),
                b'"' => text.extend_from_slice(b"\\\""),
                b'\n' => text.extend_from_slice(b"\\n"),
                0x20..=0x7e => text.push(b),
                _ => text.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            }
        }
        text.extend_from_slice(b"\"\n");
    }
    std::fs::write(path, text).unwrap();
}

/// `keyplan verify … --format json`: its exit status and report (without a preview for an
/// empty path).
fn verify_json(preview: &Path, port: u16, extra: &[&str]) -> (i32, Value) {
    let mut cmd = keyplan();
    cmd.arg("verify");
    if !preview.as_os_str().is_empty() {
        cmd.arg(preview);
    }
    let out = cmd
        .args(["--cluster", &format!("redis://127.0.0.1:{port}")])
        .args(extra)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no JSON: {}", all_output(&out)));
    (out.status.code().unwrap(), v)
}

/// Saves a live reshard preview (every key counted) as JSON.
fn save_preview(path: &Path, port: u16, to: &str, slots: &str) {
    let out = keyplan()
        .args(["reshard", "--preview", "--cluster"])
        .arg(format!("redis://127.0.0.1:{port}"))
        .args(["--from", "all", "--to", to, "--slots", slots])
        .args(["--sample", "all", "--format", "json", "-o"])
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "preview failed or warned: {}",
        all_output(&out)
    );
}

fn reshard(cli: &Path, port: u16, to: &str, slots: usize) {
    let out = Command::new(cli)
        .args(["--cluster", "reshard", &format!("127.0.0.1:{port}")])
        .args(["--cluster-from", "all", "--cluster-to", to])
        .args(["--cluster-slots", &slots.to_string(), "--cluster-yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "reshard: {}", all_output(&out));
}

fn node_id(port: u16) -> String {
    match connect_port(port).call(&[b"CLUSTER", b"MYID"]).unwrap() {
        Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("CLUSTER MYID replied {other:?}"),
    }
}

/// The port of the master that owns `key`'s slot (the servers' MOVED, not keyplan's code).
fn owner_port(ports: &[u16], key: &[u8]) -> u16 {
    match connect_port(ports[0]).call(&[b"EXISTS", key]).unwrap() {
        Reply::Int(_) => ports[0],
        Reply::Error(e) if e.starts_with("MOVED ") => {
            e.rsplit(':').next().unwrap().parse().unwrap()
        }
        other => panic!("EXISTS replied {other:?}"),
    }
}

fn slot_of(port: u16, key: &[u8]) -> u64 {
    match connect_port(port)
        .call(&[b"CLUSTER", b"KEYSLOT", key])
        .unwrap()
    {
        Reply::Int(s) => s as u64,
        other => panic!("CLUSTER KEYSLOT replied {other:?}"),
    }
}

fn call_ok(port: u16, args: &[&[u8]]) {
    let r = connect_port(port).call(args).unwrap();
    assert!(
        matches!(&r, Reply::Status(s) if s == "OK") || matches!(r, Reply::Int(_)),
        "{args:?} replied {r:?}"
    );
}

/// Every master's snapshot (SAVE), copied into `dir`.
fn snapshots(ports: &[u16], dir: &Path) -> Vec<PathBuf> {
    ports
        .iter()
        .map(|&p| {
            let mut c = connect_port(p);
            let Reply::Array(a) = c.call(&[b"CONFIG", b"GET", b"dir"]).unwrap() else {
                panic!("CONFIG GET dir")
            };
            let Reply::Bulk(Some(d)) = &a[1] else {
                panic!("CONFIG GET dir: {a:?}")
            };
            call_ok(p, &[b"SAVE"]);
            let from = Path::new(std::str::from_utf8(d).unwrap()).join("dump.rdb");
            let to = dir.join(format!("{p}.rdb"));
            std::fs::copy(&from, &to).unwrap();
            to
        })
        .collect()
}

/// RDB snapshots as `--keys`: a key's expiry lost is a difference, a key that expired is not.
fn check_expiries(ports: &[u16], dir: &Path, keys: u64, what: &str) {
    for i in 0..50 {
        let k = format!("user:{i}:profile");
        call_ok(
            owner_port(ports, k.as_bytes()),
            &[b"EXPIRE", k.as_bytes(), b"100000"],
        );
    }
    let brief = b"user:999:profile".as_slice();
    // Two seconds: time enough for the snapshots to hold it, gone when verify runs.
    call_ok(owner_port(ports, brief), &[b"PEXPIRE", brief, b"2000"]);
    let expiring = std::time::Instant::now();
    let rdbs = snapshots(ports, dir);
    let mut args: Vec<&str> = vec!["--keys"];
    args.extend(rdbs.iter().map(|p| p.to_str().unwrap()));
    std::thread::sleep(std::time::Duration::from_millis(2300).saturating_sub(expiring.elapsed()));
    let (code, v) = verify_json(Path::new(""), ports[0], &args);
    assert_eq!(code, 0, "{what}: snapshots: {v}");
    let k = &v["keys"];
    assert_eq!(k["checked"], keys, "{what}: {k}");
    assert_eq!(k["expiry_checked"], keys, "{what}: {k}");
    assert_eq!(
        (&k["gone_expiring"], &k["missing"]),
        (&Value::from(1), &Value::from(0))
    );
    assert_eq!(k["expiry_changed"], 0, "{what}: {k}");
    // One key's expiry lost: named.
    let lost = b"user:7:profile".as_slice();
    let port = owner_port(ports, lost);
    call_ok(port, &[b"PERSIST", lost]);
    let (code, v) = verify_json(Path::new(""), ports[0], &args);
    assert_eq!(code, 1, "{what}: {v}");
    let k = &v["keys"];
    assert_eq!(k["expiry_changed"], 1, "{what}: {k}");
    let e = &k["expiry_examples"][0];
    assert_eq!(e["key"], "user:7:profile");
    assert_eq!(e["had_expiry"], true);
    assert_eq!(e["node"], format!("127.0.0.1:{port}"));
    let table = keyplan()
        .args([
            "verify",
            "--cluster",
            &format!("redis://127.0.0.1:{}", ports[0]),
        ])
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(table.status.code(), Some(1));
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "expiry lost: user:7:profile (slot {}, owner 127.0.0.1:{port})",
            slot_of(port, lost)
        )) && text.contains("result: DIFFERS: 1 key with another expiry"),
        "{text}"
    );
    // The cluster as it was for the steps after: no expiry, the expired key back.
    for i in 0..50 {
        let k = format!("user:{i}:profile");
        call_ok(owner_port(ports, k.as_bytes()), &[b"PERSIST", k.as_bytes()]);
    }
    call_ok(owner_port(ports, brief), &[b"SET", brief, b"v"]);
}

/// The whole check on one cluster (Redis or Valkey): `cli` runs the reshards.
fn verify_after_real_reshards(cluster: Cluster, cli: &Path, what: &str) {
    let keys = keys();
    cluster.load(&keys);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("before.keys");
    write_dump(&dump, &keys);
    let dump_arg = dump.to_str().unwrap();
    let to = node_id(ports[1]);

    // 0. A preview made for another cluster is refused, not reported as all differences.
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        r#"{"schema_version":2,"command":"reshard","sample":{"source":[]},"nodes":[{"name":"10.9.9.9:7000","id":"ffffffffffffffffffffffffffffffffffffffff","address":"10.9.9.9:7000","after":{"slot_ranges":[[0,16383]],"keys":0}}]}"#,
    )
    .unwrap();
    let out = keyplan()
        .arg("verify")
        .arg(&other)
        .args(["--cluster", &format!("redis://127.0.0.1:{}", ports[0])])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = all_output(&out);
    assert!(
        text.contains("other.json: none of its nodes is in the cluster at redis://127.0.0.1:")
            && text.contains("give --cluster the cluster the preview was made for"),
        "{text}"
    );

    // 1. The preview is saved; before the migration the cluster is not in its state.
    let p1 = dir.path().join("reshard-1000.json");
    save_preview(&p1, ports[0], &to, "1000");
    let (code, v) = verify_json(&p1, ports[0], &[]);
    assert_eq!(code, 1, "{what}: before the reshard: {v}");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["slots_misplaced"], 1000, "{what}: {v}");

    // 2. redis-cli moves the slots: the cluster is as previewed, every key on its owner.
    reshard(cli, ports[0], &to, 1000);
    wait_agree(cli, &ports);
    let (code, v) = verify_json(&p1, ports[0], &["--keys", dump_arg]);
    assert_eq!(code, 0, "{what}: after the reshard: {v}");
    assert_eq!(v["matches"], true);
    assert_eq!(v["keys_judged"], true);
    assert_eq!(v["keys"]["checked"], keys.len() as u64);
    assert_eq!(v["keys"]["missing"], 0);
    assert_eq!(v["slots"], Value::Array(vec![]));
    let dbsize: u64 = cluster.dbsize().iter().sum();
    let mut now = 0;
    for n in v["nodes"].as_array().unwrap() {
        assert_eq!(n["verdict"], "matches", "{what}: {n}");
        assert_eq!(n["keys_now"], n["keys_expected"], "{what}: {n}");
        now += n["keys_now"].as_u64().unwrap();
    }
    assert_eq!(now, dbsize);
    // Without a preview: the cluster against its own slot map, every key of the dump found.
    let (code, v) = verify_json(Path::new(""), ports[1], &["--keys", dump_arg]);
    assert_eq!(code, 0, "{what}: no preview: {v}");
    assert_eq!(v["command"], Value::Null);
    assert_eq!(v["keys"]["checked"], keys.len() as u64);
    check_expiries(&ports, dir.path(), keys.len() as u64, what);
    // --rate holds per master: 16,384 slot counts at 4,096 a second take at least 3 seconds
    // (the fourth second's commands are sent when it starts).
    let started = std::time::Instant::now();
    let (code, _) = verify_json(&p1, ports[0], &["--rate", "4096"]);
    assert_eq!(code, 0);
    let took = started.elapsed().as_secs_f64();
    assert!(took >= 3.0, "{what}: --rate 4096 took {took:.2} s");
    let table = keyplan()
        .arg("verify")
        .arg(&p1)
        .args(["--cluster", &format!("redis://127.0.0.1:{}", ports[2])])
        .output()
        .unwrap();
    assert_eq!(table.status.code(), Some(0), "{}", all_output(&table));
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("result: the cluster matches the preview"),
        "{text}"
    );

    // 3. A second reshard previewed for 500 slots, run for 499: one slot not moved.
    let to2 = node_id(ports[2]);
    let p2 = dir.path().join("reshard-500.json");
    save_preview(&p2, ports[0], &to2, "500");
    reshard(cli, ports[0], &to2, 499);
    wait_agree(cli, &ports);
    let (code, v) = verify_json(&p2, ports[0], &["--keys", dump_arg]);
    assert_eq!(code, 1, "{what}: 499 of 500 slots: {v}");
    assert_eq!(v["slots_misplaced"], 1, "{what}: {v}");
    let slot = &v["slots"][0];
    assert_eq!(slot["expected"], format!("127.0.0.1:{}", ports[2]));
    assert_ne!(slot["owner"], slot["expected"]);
    assert_eq!(v["keys"]["missing"], 0, "a slot not moved loses no key");
    // The keys of that slot count on its old owner, not on the previewed one.
    let differs: Vec<&Value> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["verdict"] == "differs")
        .collect();
    assert_eq!(differs.len(), 2, "{what}: {v}");
    // The last slot moved: the cluster is as previewed again.
    let s = slot["slot"].as_u64().unwrap();
    let from_port: u16 = slot["owner"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let out = Command::new(cli)
        .args(["--cluster", "reshard", &format!("127.0.0.1:{}", ports[0])])
        .args(["--cluster-from", &node_id(from_port), "--cluster-to", &to2])
        .args(["--cluster-slots", "1", "--cluster-yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", all_output(&out));
    wait_agree(cli, &ports);
    let (code, v) = verify_json(&p2, ports[0], &["--keys", dump_arg]);
    assert_eq!(code, 0, "{what}: slot {s} moved at last: {v}");

    // 4. A key deleted: named, with its slot and the node it was looked up on.
    let lost = b"nl\n7".as_slice();
    let lost_port = owner_port(&ports, lost);
    call_ok(lost_port, &[b"DEL", lost]);
    let (code, v) = verify_json(&p2, ports[0], &["--keys", dump_arg]);
    assert_eq!(code, 1, "{what}: a key deleted: {v}");
    assert_eq!(v["keys"]["missing"], 1);
    let m = &v["keys"]["examples"][0];
    assert_eq!(m["key"], "nl\n7");
    assert_eq!(m["slot"], slot_of(ports[0], lost));
    assert_eq!(m["node"], format!("127.0.0.1:{lost_port}"));
    assert_eq!(v["slots"][0]["missing_keys"], 1);
    // Without --keys the node's count (the preview counted every key) gives it away.
    let (code, v) = verify_json(&p2, ports[0], &[]);
    assert_eq!(code, 1, "{what}: {v}");
    let node = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["address"] == format!("127.0.0.1:{lost_port}"))
        .unwrap();
    assert_eq!(node["verdict"], "differs");
    assert_eq!(
        node["keys_now"].as_u64().unwrap() + 1,
        node["keys_expected"].as_u64().unwrap()
    );
    // One key off: within --key-tolerance 1 (writes and expiries during a migration), not 0.
    let (code, v) = verify_json(&p2, ports[0], &["--key-tolerance", "1"]);
    assert_eq!(code, 0, "{what}: {v}");
    assert_eq!(v["key_tolerance"]["keys"], 1);
    let (code, _) = verify_json(&p2, ports[0], &["--key-tolerance", "0.001%"]);
    assert_eq!(code, 1, "{what}");
    call_ok(lost_port, &[b"SET", lost, b"v"]);

    // 5. A key written on a master that does not own its slot (an import half done, then
    // closed): a stray key, named by slot and node.
    let stray = b"{stray}k".as_slice();
    let owner = owner_port(&ports, stray);
    let other = *ports.iter().find(|&&p| p != owner).unwrap();
    let slot = slot_of(owner, stray);
    let slot_text = slot.to_string();
    let owner_id = node_id(owner);
    let mut c = connect_port(other);
    let r = c
        .call(&[
            b"CLUSTER",
            b"SETSLOT",
            slot_text.as_bytes(),
            b"IMPORTING",
            owner_id.as_bytes(),
        ])
        .unwrap();
    assert!(matches!(r, Reply::Status(_)), "{r:?}");
    // The slot left open: reported as such.
    let (code, v) = verify_json(&p2, ports[0], &[]);
    assert_eq!(code, 1, "{what}: {v}");
    assert_eq!(v["slots_open"], 1, "{what}: {v}");
    assert_eq!(v["slots"][0]["slot"], slot);
    c.call(&[b"ASKING"]).unwrap();
    let r = c.call(&[b"SET", stray, b"v"]).unwrap();
    assert!(matches!(r, Reply::Status(_)), "{r:?}");
    let r = c
        .call(&[b"CLUSTER", b"SETSLOT", slot_text.as_bytes(), b"STABLE"])
        .unwrap();
    assert!(matches!(r, Reply::Status(_)), "{r:?}");
    let (code, v) = verify_json(&p2, ports[0], &[]);
    assert_eq!(code, 1, "{what}: {v}");
    assert_eq!(v["slots_open"], 0, "{what}: {v}");
    assert_eq!(v["stray_keys"], 1, "{what}: {v}");
    assert_eq!(v["slots"][0]["slot"], slot);
    assert_eq!(
        v["slots"][0]["stray"][0]["node"],
        format!("127.0.0.1:{other}")
    );
    let (code, v) = verify_json(Path::new(""), ports[0], &[]);
    assert_eq!(code, 1, "{what}: no preview: {v}");
    assert_eq!(
        (&v["stray_keys"], &v["slots_misplaced"]),
        (&Value::from(1), &Value::from(0))
    );
    let table = keyplan()
        .arg("verify")
        .arg(&p2)
        .args(["--cluster", &format!("redis://127.0.0.1:{}", ports[0])])
        .output()
        .unwrap();
    assert_eq!(table.status.code(), Some(1));
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains(&format!("1 key on 127.0.0.1:{other}"))
            && text.contains(
                "result: DIFFERS from the preview: 1 key on masters that do not own their slot"
            ),
        "{text}"
    );
}

fn a_real_reshard_verifies_and_each_loss_is_reported() {
    let (Some(cluster), Some(cli)) = (Cluster::create(), require_binary("redis-cli")) else {
        return;
    };
    verify_after_real_reshards(cluster, &cli, "Redis");
}

fn a_real_reshard_verifies_on_valkey() {
    let Some(cluster) = Cluster::create_valkey() else {
        return;
    };
    let cli = PathBuf::from(std::env::var_os("KEYPLAN_VALKEY_BIN").unwrap()).join("valkey-cli");
    verify_after_real_reshards(cluster, &cli, "Valkey");
}

/// Previews `args` live (every key counted) into `json`, runs the `--emit setslot` script of
/// the same preview with `sh`, and waits for the nodes to agree.
fn preview_and_run_setslot(args: &[&str], json: &Path, cli: &Path, ports: &[u16]) {
    let out = keyplan()
        .args(args)
        .args(["--format", "json", "-o"])
        .arg(json)
        .output()
        .unwrap();
    // 0: the previews this test runs (grow by one master, drain one) warn of nothing.
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    let script = keyplan()
        .args(args)
        .args(["--emit", "setslot"])
        .output()
        .unwrap();
    assert_eq!(script.status.code(), Some(0), "{}", all_output(&script));
    let dir = json.parent().unwrap();
    let path = json.with_extension("sh");
    std::fs::write(&path, &script.stdout).unwrap();
    let cli_dir = cli.parent().unwrap().to_str().unwrap().to_string();
    let run = || {
        Command::new("sh")
            .arg(&path)
            .env("KEYPLAN_STATE", dir.join("state"))
            .env(
                "PATH",
                format!("{cli_dir}:{}", std::env::var("PATH").unwrap_or_default()),
            )
            .output()
            .unwrap()
    };
    let first = run();
    if !first.status.success() {
        // The script waits for `--cluster check` to agree after add-node, which does not wait
        // for every old master to know the new one: under load the first SETSLOT MIGRATING
        // can meet "I don't know about node". The script is made to be run again after an
        // interruption, so it is, once, and must then finish.
        let text = all_output(&first);
        assert!(
            text.contains("I don't know about node"),
            "setslot script: {text}"
        );
        wait_agree(cli, ports);
        let again = run();
        assert!(
            again.status.success(),
            "setslot script, run again: {}",
            all_output(&again)
        );
    }
    wait_agree(cli, ports);
}

/// The script keyplan emits grows the cluster by a master and drains it again; verify matches
/// each preview: the added node (which the preview knew by address only) owns its share, the
/// drained one is gone as previewed, every key is on its slot's owner.
fn the_emitted_setslot_script_verifies_growing_and_draining() {
    let (Some(mut cluster), Some(server), Some(cli)) = (
        Cluster::create(),
        require_binary("redis-server"),
        require_binary("redis-cli"),
    ) else {
        return;
    };
    let keys = keys();
    cluster.load(&keys);
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("before.keys");
    write_dump(&dump, &keys);
    let dump_arg = dump.to_str().unwrap();
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let url = format!("redis://127.0.0.1:{}", ports[0]);
    cluster
        .nodes
        .push(crate::support::RedisServer::start(&server, true));
    let all: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let new = format!("127.0.0.1:{}", all[3]);

    let grow = dir.path().join("grow.json");
    let args = [
        "rebalance",
        "--preview",
        "--cluster",
        &url,
        "--add-node",
        &new,
        "--sample",
        "all",
    ];
    preview_and_run_setslot(&args, &grow, &cli, &all);
    let (code, v) = verify_json(&grow, ports[0], &["--keys", dump_arg]);
    assert_eq!(code, 0, "3 → 4: {v}");
    let added = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["address"] == new.as_str())
        .unwrap();
    assert_eq!(added["verdict"], "matches");
    assert!(added["slots_now"].as_u64().unwrap() > 4000, "{added}");
    assert!(added["keys_now"].as_u64().unwrap() > 0, "{added}");
    assert_eq!(v["keys"]["missing"], 0);

    let drain = dir.path().join("drain.json");
    let id = node_id(all[3]);
    let args = [
        "rebalance",
        "--preview",
        "--cluster",
        &url,
        "--remove-node",
        &id,
        "--sample",
        "all",
    ];
    preview_and_run_setslot(&args, &drain, &cli, &ports);
    let (code, v) = verify_json(&drain, ports[0], &["--keys", dump_arg]);
    assert_eq!(code, 0, "4 → 3: {v}");
    let gone = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id.as_str())
        .unwrap();
    assert_eq!(gone["verdict"], "removed", "{gone}");
    assert_eq!(v["keys"]["checked"], keys.len() as u64);
    // The grow preview no longer holds: its added node's slots are elsewhere.
    let (code, v) = verify_json(&grow, ports[0], &[]);
    assert_eq!(code, 1);
    let added = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["address"] == new.as_str())
        .unwrap();
    assert_eq!(added["verdict"], "missing", "{added}");
}

/// A copy from a standalone server (a twemproxy backend, say) into a cluster by `redis-cli
/// --cluster import --cluster-copy`: verify without a preview, the source's snapshot as
/// `--keys`, reports exactly the keys the copy left out (redis-cli 7.0 leaves out every key
/// holding a NUL byte), finds the expiries kept, and one key deleted afterwards.
fn a_copy_into_a_cluster_verifies_against_the_source_snapshot() {
    let (Some(cluster), Some(server), Some(cli)) = (
        Cluster::create(),
        require_binary("redis-server"),
        require_binary("redis-cli"),
    ) else {
        return;
    };
    let source = crate::support::RedisServer::start(&server, false);
    let keys = keys();
    let mut c = source.connect();
    for (i, k) in keys.iter().enumerate() {
        call_ok(source.port, &[b"SET", k, b"v"]);
        if i % 10 == 0 {
            c.call(&[b"EXPIRE", k, b"100000"]).unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let rdb = snapshots(&[source.port], dir.path()).remove(0);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let out = Command::new(&cli)
        .args(["--cluster", "import", &format!("127.0.0.1:{}", ports[0])])
        .args(["--cluster-from", &format!("127.0.0.1:{}", source.port)])
        .arg("--cluster-copy")
        .output()
        .unwrap();
    assert!(out.status.success(), "import: {}", all_output(&out));
    // What the copy left out, asked of the servers key by key (routed by their MOVED): the
    // truth verify must find. (redis-cli 7.0's import leaves out every key holding a NUL.)
    let absent: Vec<usize> = (0..keys.len())
        .filter(|&i| {
            let port = owner_port(&ports, &keys[i]);
            !matches!(
                connect_port(port).call(&[b"EXISTS", &keys[i]]).unwrap(),
                Reply::Int(1)
            )
        })
        .collect();
    let with_expiry = absent.iter().filter(|&&i| i % 10 == 0).count() as u64;
    let args = ["--keys", rdb.to_str().unwrap()];
    let (code, v) = verify_json(Path::new(""), ports[0], &args);
    let k = &v["keys"];
    assert_eq!(k["checked"], keys.len() as u64);
    assert_eq!(k["expiry_checked"], keys.len() as u64);
    assert_eq!(k["expiry_changed"], 0, "the copy keeps expiries: {k}");
    assert_eq!(k["missing"], absent.len() as u64 - with_expiry, "{k}");
    assert_eq!(k["gone_expiring"], with_expiry, "{k}");
    assert_eq!(code, i32::from(absent.len() as u64 > with_expiry), "{v}");
    for e in k["examples"].as_array().unwrap() {
        // A key is a JSON string when it is UTF-8, else {"base64": …}.
        let named = absent.iter().any(|&i| match std::str::from_utf8(&keys[i]) {
            Ok(text) => e["key"] == text,
            Err(_) => e["key"].get("base64").is_some(),
        });
        assert!(named, "{e} is not a key the copy left out");
    }
    let sizes: u64 = cluster.dbsize().iter().sum();
    assert_eq!(sizes, (keys.len() - absent.len()) as u64);
    // A key deleted on the cluster: one more missing, its slot reported.
    let lost = b"odd\"q\\k'3".as_slice();
    call_ok(owner_port(&ports, lost), &[b"DEL", lost]);
    let (code, v2) = verify_json(Path::new(""), ports[0], &args);
    assert_eq!(code, 1, "{v2}");
    assert_eq!(
        v2["keys"]["missing"].as_u64().unwrap(),
        v["keys"]["missing"].as_u64().unwrap() + 1
    );
    let slot = slot_of(ports[0], lost);
    let slots = v2["slots"].as_array().unwrap();
    assert!(
        slots
            .iter()
            .any(|c| c["slot"] == slot && c["missing_keys"].as_u64() > Some(0)),
        "slot {slot} of the deleted key is not reported"
    );
}

/// Every key of the servers at `from` (SCAN), copied by DUMP and RESTORE (its expiry kept) to
/// the master of the cluster at `to` owning its slot, as an operator's copy loop does. Returns
/// the keys copied.
fn copy_keys(from: &[u16], to: &[u16]) -> Vec<Vec<u8>> {
    let mut copied = Vec::new();
    for &port in from {
        let mut c = connect_port(port);
        let mut cursor = b"0".to_vec();
        loop {
            let Reply::Array(r) = c.call(&[b"SCAN", &cursor, b"COUNT", b"500"]).unwrap() else {
                panic!("SCAN failed");
            };
            let (Reply::Bulk(Some(next)), Reply::Array(keys)) = (&r[0], &r[1]) else {
                panic!("SCAN replied {r:?}");
            };
            for k in keys {
                let Reply::Bulk(Some(k)) = k else { panic!() };
                let Reply::Bulk(Some(payload)) = c.call(&[b"DUMP", k]).unwrap() else {
                    panic!("DUMP failed")
                };
                let Reply::Int(ttl) = c.call(&[b"PTTL", k]).unwrap() else {
                    panic!()
                };
                let ttl = ttl.max(0).to_string();
                call_ok(
                    owner_port(to, k),
                    &[b"RESTORE", k, ttl.as_bytes(), &payload],
                );
                copied.push(k.clone());
            }
            if next.as_slice() == b"0" {
                break;
            }
            cursor = next.clone();
        }
    }
    copied
}

/// Keys of five types on `port`, with and without expiries, and keys of any bytes.
fn fill_typed(port: u16) -> usize {
    let mut c = connect_port(port);
    let mut n = 0;
    let mut put = |args: &[&[u8]]| {
        let r = c.call(args).unwrap();
        assert!(!matches!(r, Reply::Error(_)), "{args:?}: {r:?}");
    };
    for i in 0..300 {
        let k = format!("s:{i}");
        put(&[b"SET", k.as_bytes(), format!("value {i}").as_bytes()]);
        if i % 10 == 0 {
            put(&[b"EXPIRE", k.as_bytes(), b"100000"]);
        }
        n += 1;
    }
    for i in 0..60 {
        let k = format!("h:{i}");
        put(&[
            b"HSET",
            k.as_bytes(),
            b"f1",
            b"a",
            b"f2",
            format!("{i}").as_bytes(),
        ]);
        put(&[b"RPUSH", format!("l:{i}").as_bytes(), b"x", b"y", b"z"]);
        put(&[b"SADD", format!("set:{i}").as_bytes(), b"m1", b"m2"]);
        put(&[b"ZADD", format!("z:{i}").as_bytes(), b"1", b"a", b"2", b"b"]);
        n += 4;
    }
    // Quotes, newlines, NULs, invalid UTF-8 and hash tags.
    for k in keys()
        .iter()
        .filter(|k| !k.starts_with(b"user:"))
        .step_by(9)
    {
        put(&[b"SET", k, b"v\n\0\xff"]);
        n += 1;
    }
    n
}

fn values_of(v: &Value) -> &Value {
    let values = &v["values"];
    assert!(values.is_object(), "no values in {v}");
    values
}

/// Keys copied from a standalone server into a cluster by DUMP/RESTORE: verify --source finds
/// every key on its owner as it was (exit 0, nothing differs); then one value corrupted, one
/// key's type changed, one expiry dropped and one key deleted, each reported as such, in JSON
/// and in the table.
fn values_are_compared_with_a_standalone_source() {
    let (Some(cluster), Some(server)) = (Cluster::create(), require_binary("redis-server")) else {
        return;
    };
    let source = crate::support::RedisServer::start(&server, false);
    let n = fill_typed(source.port);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let copied = copy_keys(&[source.port], &ports);
    assert_eq!(copied.len(), n);
    let src = format!("redis://127.0.0.1:{}", source.port);
    let (code, v) = verify_json(Path::new(""), ports[0], &["--source", &src]);
    let values = values_of(&v);
    assert_eq!(code, 0, "{v}");
    assert_eq!(values["checked"], n as u64, "{values}");
    assert_eq!(values["keys_differing"], 0, "{values}");
    assert_eq!(values["method"], "dump_payload", "DEBUG is off by default");
    assert_eq!(values["examples"].as_array().unwrap().len(), 0);
    assert_eq!(v["matches"], true);
    // Broken on purpose, on the owners.
    let at = |k: &[u8]| owner_port(&ports, k);
    call_ok(at(b"s:5"), &[b"SET", b"s:5", b"corrupt"]);
    call_ok(at(b"h:3"), &[b"DEL", b"h:3"]);
    call_ok(at(b"h:3"), &[b"RPUSH", b"h:3", b"a", b"2"]);
    call_ok(at(b"s:20"), &[b"PERSIST", b"s:20"]);
    call_ok(at(b"z:7"), &[b"DEL", b"z:7"]);
    let (code, v) = verify_json(Path::new(""), ports[0], &["--source", &src]);
    let values = values_of(&v);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["matches"], false);
    assert_eq!(values["checked"], n as u64);
    assert_eq!(values["keys_differing"], 4, "{values}");
    for (field, want) in [
        ("value_differs", 1),
        ("type_differs", 1),
        ("ttl_lost", 1),
        ("missing", 1),
        ("ttl_added", 0),
        ("ttl_off", 0),
    ] {
        assert_eq!(values[field], want, "{field}: {values}");
    }
    let named: Vec<(String, String)> = values["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap().to_string(),
                e["differs"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("z:7", "missing"),
        ("h:3", "type"),
        ("s:20", "ttl_lost"),
        ("s:5", "value"),
    ]
    .iter()
    .map(|(k, d)| (k.to_string(), d.to_string()))
    .collect();
    assert_eq!(named, want);
    let h3 = &values["examples"][1];
    assert_eq!(
        (&h3["source_type"], &h3["target_type"]),
        (&Value::from("hash"), &Value::from("list"))
    );
    assert_eq!(h3["slot"], slot_of(ports[0], b"h:3"));
    assert_eq!(h3["node"], format!("127.0.0.1:{}", at(b"h:3")));
    let s20 = &values["examples"][2];
    assert!(s20["source_ttl_ms"].as_u64().unwrap() > 90_000, "{s20}");
    assert_eq!(s20["target_ttl_ms"], Value::Null);
    // The table says the same.
    let out = keyplan()
        .arg("verify")
        .args(["--cluster", &format!("redis://127.0.0.1:{}", ports[0])])
        .args(["--source", &src])
        .output()
        .unwrap();
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for words in [
        &format!("{n} compared with the owner of their slot"),
        "4 differ",
        "1 key missing, 1 key of another type, 1 key with another value, 1 key whose expiry is gone",
        "another type",
        "expiry lost",
        "another value",
        "hash, none",
        "list, none",
        "result: DIFFERS: 4 keys not as on the source",
    ] {
        assert!(text.contains(words), "{words:?} not in:\n{text}");
    }
    // An expiry further off than the tolerance (a minute less), and within a wide one.
    let Reply::Int(ttl) = source.connect().call(&[b"PTTL", b"s:30"]).unwrap() else {
        panic!("PTTL failed")
    };
    let sooner = (ttl - 60_000).to_string();
    call_ok(at(b"s:30"), &[b"PEXPIRE", b"s:30", sooner.as_bytes()]);
    let (_, v) = verify_json(Path::new(""), ports[0], &["--source", &src]);
    assert_eq!(values_of(&v)["ttl_off"], 1, "{v}");
    let (_, v) = verify_json(
        Path::new(""),
        ports[0],
        &["--source", &src, "--ttl-tolerance", "200s"],
    );
    assert_eq!(values_of(&v)["ttl_off"], 0, "{v}");
    assert_eq!(values_of(&v)["ttl_tolerance_ms"], 200_000);
    // DEBUG is refused here: asked for, it is an error that says what to do.
    let out = keyplan()
        .arg("verify")
        .args(["--cluster", &format!("redis://127.0.0.1:{}", ports[0])])
        .args(["--source", &src, "--compare", "digest"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("--compare dump"),
        "{}",
        all_output(&out)
    );
}

/// A cluster copied into another (both allowing DEBUG from local connections): the values
/// are compared by DEBUG DIGEST-VALUE, every master of the source cluster read; a hash with
/// one field changed is the one difference.
fn values_are_compared_by_digest_with_a_source_cluster() {
    let debug = ["--enable-debug-command", "local"];
    let (Some(from), Some(to)) = (Cluster::create_args(&debug), Cluster::create_args(&debug))
    else {
        return;
    };
    let from_ports: Vec<u16> = from.nodes.iter().map(|n| n.port).collect();
    let to_ports: Vec<u16> = to.nodes.iter().map(|n| n.port).collect();
    let mut n = 0;
    for i in 0..400 {
        let k = format!("{{t{}}}:h:{i}", i % 40);
        let port = owner_port(&from_ports, k.as_bytes());
        call_ok(
            port,
            &[
                b"HSET",
                k.as_bytes(),
                b"a",
                b"1",
                b"b",
                format!("{i}").as_bytes(),
            ],
        );
        n += 1;
    }
    let copied = copy_keys(&from_ports, &to_ports);
    assert_eq!(copied.len(), n);
    let src = format!("redis://127.0.0.1:{}", from_ports[1]);
    let (code, v) = verify_json(Path::new(""), to_ports[0], &["--source", &src]);
    let values = values_of(&v);
    assert_eq!(code, 0, "{v}");
    assert_eq!(values["method"], "debug_digest_value");
    assert_eq!(values["checked"], n as u64);
    let key = b"{t3}:h:43".as_slice();
    call_ok(
        owner_port(&to_ports, key),
        &[b"HSET", key, b"b", b"changed"],
    );
    let (code, v) = verify_json(Path::new(""), to_ports[0], &["--source", &src]);
    let values = values_of(&v);
    assert_eq!(code, 1, "{v}");
    assert_eq!(values["value_differs"], 1, "{values}");
    assert_eq!(values["keys_differing"], 1, "{values}");
    assert_eq!(values["examples"][0]["key"], "{t3}:h:43");
    // The DUMP digest finds it too.
    let (_, v) = verify_json(
        Path::new(""),
        to_ports[0],
        &["--source", &src, "--compare", "dump"],
    );
    assert_eq!(values_of(&v)["method"], "dump_payload");
    assert_eq!(values_of(&v)["value_differs"], 1, "{v}");
}

/// `reshard --apply` on a real cluster holding keys of every kind of byte (a standalone
/// server holds the same keys, as the truth): the run is killed twice at random points
/// (mid-slot included), a rerun without --resume is refused and moves nothing, and --resume
/// ends in the previewed state (verify against the saved preview: every slot owner and every
/// node's keys) with every key, type, expiry and value as on the standalone server.
fn reshard_apply_killed_and_resumed_ends_in_the_preview() {
    let (Some(cluster), Some(server)) = (Cluster::create(), require_binary("redis-server")) else {
        return;
    };
    let truth = crate::support::RedisServer::start(&server, false);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let keys = keys();
    let mut t = truth.connect();
    for (i, k) in keys.iter().enumerate() {
        let v = format!("value {i}\n\0");
        let port = owner_port(&ports, k);
        call_ok(port, &[b"SET", k, v.as_bytes()]);
        call_ok(truth.port, &[b"SET", k, v.as_bytes()]);
        if i % 10 == 0 {
            call_ok(port, &[b"EXPIRE", k, b"100000"]);
            t.call(&[b"EXPIRE", k, b"100000"]).unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let preview = dir.path().join("preview.json");
    let to = node_id(ports[2]);
    save_preview(&preview, ports[0], &to, "2000");
    let journal = dir.path().join("apply.journal");
    let url = format!("redis://127.0.0.1:{}", ports[0]);
    let apply = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_keyplan"));
        cmd.args(["reshard", "--apply", "--cluster", &url])
            .args([
                "--from",
                "all",
                "--to",
                &to,
                "--slots",
                "2000",
                "--no-sample",
            ])
            // 7 keys a MIGRATE: the 100 keys of a hash tag's slot take 15.
            .args(["--pipeline", "7"])
            .arg("--journal")
            .arg(&journal)
            .args(extra)
            .stdin(std::process::Stdio::null());
        cmd
    };
    let done = || {
        std::fs::read_to_string(&journal)
            .unwrap_or_default()
            .matches("\"done\"")
            .count()
    };
    // Without --yes, and stdin not a terminal: refused, nothing moved.
    let out = apply(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("add --yes"),
        "{}",
        all_output(&out)
    );
    assert!(!journal.exists());
    // Killed twice, at a random number of slots done.
    let mut rng = crate::support::Rng(std::process::id() as u64 | 1);
    let mut killed_at = Vec::new();
    for (round, extra) in [(0, &["--yes"][..]), (1, &["--yes", "--resume"][..])] {
        let want = done() + 50 + rng.below(400) as usize;
        let mut child = apply(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while done() < want && std::time::Instant::now() < deadline {
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the run ended before it was killed ({} done)",
                done()
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // A few milliseconds more: the kill lands inside a slot as often as between two.
        std::thread::sleep(std::time::Duration::from_millis(rng.below(5)));
        child.kill().unwrap();
        child.wait().unwrap();
        let text = std::fs::read_to_string(&journal).unwrap();
        let mid_slot = text.lines().last().is_some_and(|l| l.contains("\"begin\""));
        eprintln!("kill {round}: {} slots done, mid-slot: {mid_slot}", done());
        killed_at.push(done());
    }
    assert!(
        killed_at[1] > killed_at[0] && killed_at[1] < 2000,
        "killed at {killed_at:?} of 2000"
    );
    // A new run over the journal is refused: the cluster is no longer as planned.
    let out = apply(&["--yes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert_eq!(done(), killed_at[1], "a refused run moves nothing");
    // A slot the plan does not move given to another master meanwhile: the resume is
    // refused, naming it; given back, the resume goes on.
    let spare = (10923..16384u32)
        .rev()
        .find(|s| {
            let s = s.to_string();
            matches!(
                connect_port(ports[2])
                    .call(&[b"CLUSTER", b"COUNTKEYSINSLOT", s.as_bytes()])
                    .unwrap(),
                Reply::Int(0)
            )
        })
        .unwrap()
        .to_string();
    // Told to every master directly: no gossip to wait for (and a slot the kill left open
    // would keep redis-cli's check from ever agreeing).
    let give = |to: u16| {
        let id = node_id(to);
        for p in [to, ports[0], ports[1], ports[2]] {
            call_ok(
                p,
                &[
                    b"CLUSTER",
                    b"SETSLOT",
                    spare.as_bytes(),
                    b"NODE",
                    id.as_bytes(),
                ],
            );
        }
    };
    give(ports[0]);
    let out = apply(&["--yes", "--resume"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(
        all_output(&out).contains(&format!(
            "not where the journal left them (slot {spare} first)"
        )),
        "{}",
        all_output(&out)
    );
    assert_eq!(done(), killed_at[1], "a refused resume moves nothing");
    give(ports[2]);
    let out = apply(&["--yes", "--resume"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "resume: {}", all_output(&out));
    assert!(
        all_output(&out).contains("2000 slot(s) in the previewed place"),
        "{}",
        all_output(&out)
    );
    assert_eq!(done(), 2000);
    let truth_url = format!("redis://127.0.0.1:{}", truth.port);
    let (code, v) = verify_json(&preview, ports[0], &["--source", &truth_url]);
    assert_eq!(code, 0, "killed at {killed_at:?}: {v}");
    assert_eq!(v["matches"], true);
    assert_eq!(v["values"]["checked"], keys.len() as u64);
    assert_eq!(v["values"]["keys_differing"], 0);
    assert_eq!(v["slots_misplaced"], 0);
    assert_eq!(cluster.dbsize().iter().sum::<u64>(), keys.len() as u64);
    // The unbalanced cluster rebalanced by keyplan itself, as its preview said.
    let preview2 = dir.path().join("rebalance.json");
    let out = keyplan()
        .args(["rebalance", "--preview", "--cluster", &url])
        .args(["--sample", "all", "--format", "json", "-o"])
        .arg(&preview2)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    let moving: u64 = serde_json::from_str::<Value>(&std::fs::read_to_string(&preview2).unwrap())
        .unwrap()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            n["after"]["slots"]
                .as_u64()
                .unwrap()
                .saturating_sub(n["before"]["slots"].as_u64().unwrap())
        })
        .sum();
    assert!(moving > 500, "the rebalance moves {moving} slots");
    let out = keyplan()
        .args([
            "rebalance",
            "--apply",
            "--yes",
            "--no-sample",
            "--cluster",
            &url,
        ])
        .arg("--journal")
        .arg(dir.path().join("rebalance.journal"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    let (code, v) = verify_json(&preview2, ports[0], &["--source", &truth_url]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["values"]["keys_differing"], 0);
    eprintln!(
        "reshard --apply killed at {killed_at:?} of 2000 slots; rebalance --apply moved {moving}"
    );
}

/// `--apply` on a cluster with a password (given in the URL): the source logs in to the
/// destination for MIGRATE as keyplan did, and every key arrives.
fn reshard_apply_on_a_cluster_with_a_password() {
    let Some(cluster) = Cluster::create_with(Some("s3cret")) else {
        return;
    };
    let keys = keys();
    cluster.load(&keys);
    let port = cluster.nodes[0].port;
    let mut c = cluster.nodes[2].connect();
    let Reply::Bulk(Some(to)) = c.call(&[b"CLUSTER", b"MYID"]).unwrap() else {
        panic!("CLUSTER MYID failed")
    };
    let to = String::from_utf8(to).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = keyplan()
        .args(["reshard", "--apply", "--yes", "--no-sample"])
        .args(["--cluster", &format!("redis://:s3cret@127.0.0.1:{port}")])
        .args(["--from", "all", "--to", &to, "--slots", "300", "--journal"])
        .arg(dir.path().join("j"))
        .output()
        .unwrap();
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        !text.contains("s3cret"),
        "the password is never shown: {text}"
    );
    assert_eq!(cluster.dbsize().iter().sum::<u64>(), keys.len() as u64);
    let Reply::Bulk(Some(nodes)) = c.call(&[b"CLUSTER", b"NODES"]).unwrap() else {
        panic!("CLUSTER NODES failed")
    };
    let nodes = String::from_utf8(nodes).unwrap();
    let mine = nodes.lines().find(|l| l.contains("myself")).unwrap();
    let owned: u32 = mine
        .split_whitespace()
        .skip(8)
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<u32>().unwrap() - a.parse::<u32>().unwrap() + 1,
            None => 1,
        })
        .sum();
    assert_eq!(owned, 5461 + 300, "{mine}");
}

/// On Valkey 8: keys copied from a standalone Valkey into a cluster verify clean by --source,
/// then `reshard --apply` moves 1,000 slots and every key is still as on the source; one value
/// changed afterwards is the one difference.
fn values_and_apply_on_valkey() {
    let Some(cluster) = Cluster::create_valkey() else {
        return;
    };
    let dir = std::env::var_os("KEYPLAN_VALKEY_BIN").expect("set, as the cluster started");
    let server = std::path::PathBuf::from(dir).join("valkey-server");
    let source = crate::support::RedisServer::start(&server, false);
    let n = fill_typed(source.port);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    assert_eq!(copy_keys(&[source.port], &ports).len(), n);
    let src = format!("redis://127.0.0.1:{}", source.port);
    let (code, v) = verify_json(Path::new(""), ports[0], &["--source", &src]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(values_of(&v)["checked"], n as u64);
    let dir = tempfile::tempdir().unwrap();
    let preview = dir.path().join("preview.json");
    let to = node_id(ports[1]);
    save_preview(&preview, ports[0], &to, "1000");
    let out = keyplan()
        .args(["reshard", "--apply", "--yes", "--no-sample"])
        .args(["--cluster", &format!("redis://127.0.0.1:{}", ports[0])])
        .args(["--from", "all", "--to", &to, "--slots", "1000", "--journal"])
        .arg(dir.path().join("j"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    let (code, v) = verify_json(&preview, ports[0], &["--source", &src]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(values_of(&v)["keys_differing"], 0);
    call_ok(
        owner_port(&ports, b"l:4"),
        &[b"LSET", b"l:4", b"0", b"changed"],
    );
    let (code, v) = verify_json(&preview, ports[0], &["--source", &src]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(values_of(&v)["value_differs"], 1, "{v}");
    assert_eq!(values_of(&v)["examples"][0]["key"], "l:4");
}

fn verify_errors_name_the_file_and_flag() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("preview.txt");
    std::fs::write(
        &table,
        "keyplan reshard --preview: redis-cli reshard plan\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = keyplan().arg("verify").args(args).output().unwrap();
        (out.status.code().unwrap(), all_output(&out))
    };
    let t = table.to_str().unwrap();
    let (code, text) = run(&[t, "--cluster", "redis://127.0.0.1:1"]);
    assert_eq!(code, 2);
    assert!(
        text.contains(&format!("{t}: not JSON (line 1, column 1")),
        "{text}"
    );
    assert!(text.contains("--format json"), "{text}");
    let nodes = dir.path().join("other.json");
    std::fs::write(
        &nodes,
        r#"{"schema_version":2,"topology":{"kind":"cluster"}}"#,
    )
    .unwrap();
    let (code, text) = run(&[nodes.to_str().unwrap(), "--cluster", "redis://127.0.0.1:1"]);
    assert_eq!(code, 2);
    assert!(
        text.contains("not a rebalance or reshard preview"),
        "{text}"
    );
    let (code, text) = run(&["missing.json", "--cluster", "redis://127.0.0.1:1"]);
    assert_eq!(code, 2);
    assert!(text.contains("missing.json"), "{text}");
    let (code, text) = run(&[t]);
    assert_eq!(code, 2);
    assert!(text.contains("--cluster"), "{text}");
    let (code, text) = run(&[t, "--cluster", "redis://127.0.0.1:1", "--rate", "0"]);
    assert_eq!(code, 2);
    assert!(text.contains("--rate"), "{text}");
    let (code, text) = run(&[
        t,
        "--cluster",
        "redis://127.0.0.1:1",
        "--key-tolerance",
        "x",
    ]);
    assert_eq!(code, 2);
    assert!(
        text.contains("--key-tolerance") && text.contains("a percentage (0.5%)"),
        "{text}"
    );
    // A good preview, a cluster that is not there.
    let good = dir.path().join("p.json");
    std::fs::write(
        &good,
        r#"{"schema_version":2,"command":"reshard","sample":{"source":[]},"nodes":[{"name":"a","id":null,"address":"127.0.0.1:7000","after":{"slot_ranges":[[0,16383]],"keys":0}}]}"#,
    )
    .unwrap();
    let port = super::support::free_port();
    let (code, text) = run(&[
        good.to_str().unwrap(),
        "--cluster",
        &format!("redis://127.0.0.1:{port}"),
    ]);
    assert_eq!(code, 2);
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
}

pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "a_real_reshard_verifies_and_each_loss_is_reported",
        a_real_reshard_verifies_and_each_loss_is_reported,
    ),
    (
        "a_real_reshard_verifies_on_valkey",
        a_real_reshard_verifies_on_valkey,
    ),
    (
        "the_emitted_setslot_script_verifies_growing_and_draining",
        the_emitted_setslot_script_verifies_growing_and_draining,
    ),
    (
        "a_copy_into_a_cluster_verifies_against_the_source_snapshot",
        a_copy_into_a_cluster_verifies_against_the_source_snapshot,
    ),
    (
        "values_are_compared_with_a_standalone_source",
        values_are_compared_with_a_standalone_source,
    ),
    (
        "values_are_compared_by_digest_with_a_source_cluster",
        values_are_compared_by_digest_with_a_source_cluster,
    ),
    (
        "reshard_apply_killed_and_resumed_ends_in_the_preview",
        reshard_apply_killed_and_resumed_ends_in_the_preview,
    ),
    (
        "reshard_apply_on_a_cluster_with_a_password",
        reshard_apply_on_a_cluster_with_a_password,
    ),
    ("values_and_apply_on_valkey", values_and_apply_on_valkey),
    (
        "verify_errors_name_the_file_and_flag",
        verify_errors_name_the_file_and_flag,
    ),
];
