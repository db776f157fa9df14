//! `keyplan migrate` against the real systems on both sides: the same keys are written
//! through a real nutcracker pool, a grown pool, a real 3-master and a real 6-master cluster
//! (each cluster led only by its own MOVED replies), and where every key really landed must
//! equal the preview, node by node and pair by pair. Every batch is run on nutcracker and on
//! the cluster, and what each really did must equal the preview's before and after.

use crate::cluster::Cluster;
use crate::support::{
    Nutcracker, RedisServer, Reply, Resp, connect_port, free_port, keyplan, require_binary,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Keys of the shapes applications write: ids, tenants in hash tags, sessions, paths, an
/// empty tag, UTF-8.
fn keys() -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..5000 {
        out.push(format!("user:{i}:profile"));
    }
    for i in 0..4000 {
        out.push(format!("{{tenant{}}}:order:{i}", i % 37));
    }
    for i in 0..3000u64 {
        out.push(format!(
            "session:{:016x}",
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ));
    }
    for i in 0..1500 {
        out.push(format!("cache:page:/docs/été/{i}"));
        out.push(format!("{{}}:empty-tag:{i}"));
    }
    out
}

/// Batches: MGET, EXISTS and MSET over keys of one tenant (one slot) or of anyone.
fn batches(keys: &[String]) -> Vec<(String, Vec<String>)> {
    let mut rng = crate::support::Rng(0x5eed_1234);
    let tenant = |t: u64, n: u64| -> String { format!("{{tenant{t}}}:order:{}", t + 37 * n) };
    let mut out = Vec::new();
    for i in 0..300 {
        let n = 2 + rng.below(4) as usize;
        let ks: Vec<String> = if i % 3 == 0 {
            let t = rng.below(37);
            (0..n as u64)
                .map(|j| tenant(t, j * 3 + rng.below(3)))
                .collect()
        } else {
            (0..n)
                .map(|_| keys[rng.below(keys.len() as u64) as usize].clone())
                .collect()
        };
        let cmd = ["MGET", "EXISTS", "MSET"][(i / 3) % 3];
        out.push((cmd.to_string(), ks));
    }
    out
}

fn line_of(cmd: &str, ks: &[String]) -> String {
    match cmd {
        "MSET" => format!(
            "MSET {}",
            ks.iter()
                .map(|k| format!("{k} {k}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        _ => format!("{cmd} {}", ks.join(" ")),
    }
}

fn args_of<'a>(cmd: &'a str, ks: &'a [String]) -> Vec<&'a [u8]> {
    let mut a: Vec<&[u8]> = vec![cmd.as_bytes()];
    for k in ks {
        a.push(k.as_bytes());
        if cmd == "MSET" {
            a.push(k.as_bytes());
        }
    }
    a
}

/// Whether the reply is the right answer (every key exists and holds its own name).
fn correct(cmd: &str, ks: &[String], r: &Reply) -> bool {
    match (cmd, r) {
        ("MGET", Reply::Array(v)) => {
            v.len() == ks.len()
                && v.iter()
                    .zip(ks)
                    .all(|(x, k)| *x == Reply::Bulk(Some(k.as_bytes().to_vec())))
        }
        ("EXISTS", Reply::Int(n)) => *n as usize == ks.len(),
        ("MSET", Reply::Status(s)) => s == "OK",
        _ => false,
    }
}

/// Sends `args` to a cluster the way a client that does not split batches does: to any node,
/// then wherever MOVED says.
fn cluster_call(first: u16, args: &[&[u8]]) -> Reply {
    let mut port = first;
    for _ in 0..3 {
        let r = connect_port(port).call(args).unwrap();
        match &r {
            Reply::Error(e) if e.starts_with("MOVED ") => {
                port = e.rsplit(':').next().unwrap().parse().unwrap();
            }
            _ => return r,
        }
    }
    panic!("more than two MOVED for {args:?}")
}

/// Writes every key (value: the key) into the cluster through `first`, following MOVED.
fn load_cluster(first: u16, keys: &[String]) {
    let mut pending: BTreeMap<u16, Vec<&String>> = BTreeMap::new();
    pending.insert(first, keys.iter().collect());
    for _ in 0..3 {
        let mut next: BTreeMap<u16, Vec<&String>> = BTreeMap::new();
        for (port, ks) in &pending {
            let mut c = connect_port(*port);
            for chunk in ks.chunks(500) {
                let mut buf = Vec::new();
                for k in chunk {
                    Resp::encode(&mut buf, &[b"SET", k.as_bytes(), k.as_bytes()]);
                }
                c.send(&buf).unwrap();
                for k in chunk {
                    match c.read().unwrap() {
                        Reply::Status(s) if s == "OK" => {}
                        Reply::Error(e) if e.starts_with("MOVED ") => {
                            let p: u16 = e.rsplit(':').next().unwrap().parse().unwrap();
                            next.entry(p).or_default().push(k);
                        }
                        other => panic!("SET {k}: {other:?}"),
                    }
                }
            }
        }
        if next.is_empty() {
            return;
        }
        pending = next;
    }
    panic!("keys still MOVED after three rounds");
}

/// Writes every key through a nutcracker pool.
fn load_pool(c: &mut Resp, keys: &[String]) {
    for chunk in keys.chunks(500) {
        let mut buf = Vec::new();
        for k in chunk {
            Resp::encode(&mut buf, &[b"SET", k.as_bytes(), k.as_bytes()]);
        }
        c.send(&buf).unwrap();
        for k in chunk {
            assert_eq!(c.read().unwrap(), Reply::Status("OK".into()), "SET {k}");
        }
    }
}

/// The keys of database `db` on the server at `port`.
fn keys_on(port: u16, db: u32) -> BTreeSet<String> {
    let mut c = connect_port(port);
    c.call(&[b"SELECT", db.to_string().as_bytes()]).unwrap();
    match c.call(&[b"KEYS", b"*"]).unwrap() {
        Reply::Array(v) => v
            .into_iter()
            .map(|r| match r {
                Reply::Bulk(Some(k)) => String::from_utf8(k).unwrap(),
                other => panic!("KEYS: {other:?}"),
            })
            .collect(),
        other => panic!("KEYS: {other:?}"),
    }
}

fn cluster_nodes(port: u16) -> String {
    match connect_port(port).call(&[b"CLUSTER", b"NODES"]).unwrap() {
        Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("CLUSTER NODES: {other:?}"),
    }
}

fn migrate_json(dir: &Path, args: &[&str]) -> (Value, i32) {
    let out = keyplan()
        .current_dir(dir)
        .arg("migrate")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "keyplan migrate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (serde_json::from_slice(&out.stdout).unwrap(), code)
}

/// Keys per node (by node name) on one side of the report.
fn per_node(v: &Value, side: &str) -> BTreeMap<String, u64> {
    v["change"][side]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["node"].as_str().unwrap().to_string(),
                n["keys"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Keys per (from, to) pair, with whether they stay.
fn pairs(v: &Value) -> BTreeMap<(String, String), (u64, bool)> {
    v["change"]["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                (
                    p["from"].as_str().unwrap().to_string(),
                    p["to"].as_str().unwrap().to_string(),
                ),
                (p["keys"].as_u64().unwrap(), p["stays"].as_bool().unwrap()),
            )
        })
        .collect()
}

/// Where each key really is: its server's address, from every server's KEYS.
fn located(servers: &[(String, BTreeSet<String>)]) -> BTreeMap<String, String> {
    let mut at = BTreeMap::new();
    for (addr, ks) in servers {
        for k in ks {
            assert!(
                at.insert(k.clone(), addr.clone()).is_none(),
                "{k} on two servers"
            );
        }
    }
    at
}

/// The real pair matrix: keys per (server before, server after).
fn real_pairs(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> BTreeMap<(String, String), u64> {
    let mut m = BTreeMap::new();
    for (k, a) in before {
        *m.entry((a.clone(), after[k].clone())).or_default() += 1;
    }
    m
}

/// Keys per server in a key → server map.
fn count(m: &BTreeMap<String, String>) -> BTreeMap<String, u64> {
    let mut c: BTreeMap<String, u64> = BTreeMap::new();
    for a in m.values() {
        *c.entry(a.clone()).or_default() += 1;
    }
    c
}

/// The preview `v` must put as many keys on each node before and after, and move as many
/// between each pair of nodes, as really are where `before` and `after` found them.
fn assert_placed(v: &Value, before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) {
    assert_eq!(per_node(v, "before"), count(before), "keys per node before");
    assert_eq!(per_node(v, "after"), count(after), "keys per node after");
    let preview: BTreeMap<(String, String), u64> =
        pairs(v).into_iter().map(|(p, (n, _))| (p, n)).collect();
    assert_eq!(preview, real_pairs(before, after), "keys per pair");
}

fn twemproxy_to_cluster_and_a_grown_ring_equal_the_real_systems() {
    let (Some(redis), Some(nut)) = (require_binary("redis-server"), require_binary("nutcracker"))
    else {
        return;
    };
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let backends: Vec<RedisServer> = (0..4).map(|_| RedisServer::start(&redis, false)).collect();
    let addr = |s: &RedisServer| format!("127.0.0.1:{}", s.port);
    let (old_port, grown_port) = (free_port(), free_port());
    let pool = |name: &str, port: u16, db: u32, n: usize| {
        let mut s = format!(
            "{name}:\n  listen: 127.0.0.1:{port}\n  hash: fnv1a_64\n  hash_tag: \"{{}}\"\n  distribution: ketama\n  redis: true\n  redis_db: {db}\n  auto_eject_hosts: false\n  servers:\n"
        );
        for b in &backends[..n] {
            s.push_str(&format!("   - {}:1\n", addr(b)));
        }
        s
    };
    let conf = format!(
        "{}{}",
        pool("old", old_port, 0, 3),
        pool("grown", grown_port, 1, 4)
    );
    let proxy = Nutcracker::start(&nut, &conf);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nutcracker.yml"), &conf).unwrap();

    let keys = keys();
    std::fs::write(dir.path().join("sample.keys"), keys.join("\n") + "\n").unwrap();
    let mut old = proxy.connect(old_port);
    load_pool(&mut old, &keys);
    load_pool(&mut proxy.connect(grown_port), &keys);
    let first = cluster.nodes[0].port;
    load_cluster(first, &keys);
    std::fs::write(dir.path().join("nodes.txt"), cluster_nodes(first)).unwrap();

    let pool_db = |db: u32, n: usize| -> Vec<(String, BTreeSet<String>)> {
        backends[..n]
            .iter()
            .map(|b| (addr(b), keys_on(b.port, db)))
            .collect()
    };
    let in_old = located(&pool_db(0, 3));
    let in_grown = located(&pool_db(1, 4));
    let in_cluster = located(
        &cluster
            .nodes
            .iter()
            .map(|n| (format!("127.0.0.1:{}", n.port), keys_on(n.port, 0)))
            .collect::<Vec<_>>(),
    );
    assert_eq!(in_old.len(), keys.len());
    assert_eq!(in_cluster.len(), keys.len());

    // The batches, each run on the pool and on the cluster.
    let batches = batches(&keys);
    let text: String = batches
        .iter()
        .map(|(c, ks)| line_of(c, ks) + "\n")
        .collect();
    std::fs::write(dir.path().join("batches.txt"), text).unwrap();
    let mut real: Vec<(bool, bool, String)> = Vec::new();
    for (cmd, ks) in &batches {
        let args = args_of(cmd, ks);
        let on_pool = old.call(&args).unwrap();
        let on_cluster = cluster_call(first, &args);
        let refused = match &on_cluster {
            Reply::Error(e) => e.clone(),
            _ => String::new(),
        };
        real.push((
            correct(cmd, ks, &on_pool),
            correct(cmd, ks, &on_cluster),
            refused,
        ));
    }

    // twemproxy → cluster.
    let (v, code) = migrate_json(
        dir.path(),
        &[
            "--from",
            "nutcracker.yml",
            "--from-pool",
            "old",
            "--to",
            "nodes.txt",
            "--keys",
            "sample.keys",
            "--batches",
            "batches.txt",
        ],
    );
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["change"]["keys"].as_u64(), Some(keys.len() as u64));
    assert_placed(&v, &in_old, &in_cluster);
    assert_eq!(v["change"]["stayed"]["keys"], 0);

    let b = &v["batches"];
    assert_eq!(b["judged"].as_u64(), Some(batches.len() as u64));
    assert_eq!(b["rows_left_out"], 0);
    let mut fates: BTreeMap<u64, (bool, bool)> = BTreeMap::new();
    for r in b["rows"].as_array().unwrap() {
        let served = |s: &str| r[s]["served"].as_bool().expect("every batch modelled");
        fates.insert(
            r["id"]["line"].as_u64().unwrap(),
            (served("before"), served("after")),
        );
    }
    let mut starts_failing = 0;
    for (i, (on_pool, on_cluster, refused)) in real.iter().enumerate() {
        let line = i as u64 + 1;
        let previewed = fates.get(&line).copied().unwrap_or((true, true));
        assert_eq!(
            previewed,
            (*on_pool, *on_cluster),
            "batch {line} `{}`: preview (before, after) vs nutcracker and the cluster (cluster said {refused:?})",
            line_of(&batches[i].0, &batches[i].1)
        );
        if previewed == (true, false) {
            starts_failing += 1;
            assert!(refused.starts_with("CROSSSLOT"), "{refused}");
        }
    }
    assert_eq!(b["counts"]["starts-failing"].as_u64(), Some(starts_failing));
    assert!(starts_failing > 100, "{starts_failing}");
    assert_eq!(code, 1, "batches start failing: exit status 1");

    // The pool grows by one server: the keys that stay are those on the same server in both.
    let (v, code) = migrate_json(
        dir.path(),
        &[
            "--from",
            "nutcracker.yml",
            "--from-pool",
            "old",
            "--to",
            "nutcracker.yml",
            "--to-pool",
            "grown",
            "--keys",
            "sample.keys",
        ],
    );
    assert_eq!(code, 0);
    assert_placed(&v, &in_old, &in_grown);
    let real = real_pairs(&in_old, &in_grown);
    let preview = pairs(&v);
    let stayed: u64 = real
        .iter()
        .filter(|((a, b), _)| a == b)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(v["change"]["stayed"]["keys"].as_u64(), Some(stayed));
    assert!(
        preview
            .iter()
            .all(|((a, b), (_, stays))| (a == b) == *stays)
    );
    // Consistent hashing: only the new server gains keys.
    let new = addr(&backends[3]);
    assert!(real.keys().all(|(a, b)| a == b || *b == new));
    assert!(stayed > keys.len() as u64 / 2, "{stayed}");

    // A script run through nutcracker: it runs on its first key's server and writes its
    // undeclared key there, whichever server owns that key.
    let server_of = |k: &str| -> String {
        backends[..3]
            .iter()
            .find(|b| b.connect().call(&[b"EXISTS", k.as_bytes()]).unwrap() == Reply::Int(1))
            .map(addr)
            .unwrap_or_default()
    };
    let first_key = "user:1:profile";
    let home = in_old[first_key].clone();
    let mut elsewhere = None;
    let mut same = None;
    for i in 0..200 {
        let k = format!("{i}:script-probe");
        assert_eq!(
            old.call(&[b"SET", k.as_bytes(), b"own"]).unwrap(),
            Reply::Status("OK".into())
        );
        match server_of(&k) == home {
            false if elsewhere.is_none() => elsewhere = Some(k),
            true if same.is_none() => same = Some(k),
            _ => {}
        }
    }
    let (elsewhere, same) = (elsewhere.unwrap(), same.unwrap());
    let script = "redis.call('SET', ARGV[1], 'from-script') return 1";
    let mut capture = String::new();
    for (n, k) in [&elsewhere, &same].iter().enumerate() {
        let r = old
            .call(&[
                b"EVAL",
                script.as_bytes(),
                b"1",
                first_key.as_bytes(),
                k.as_bytes(),
            ])
            .unwrap();
        assert_eq!(r, Reply::Int(1), "EVAL through nutcracker");
        capture.push_str(&format!(
            "{n}.0 [0 127.0.0.1:40000] \"EVAL\" \"{script}\" \"1\" \"{first_key}\" \"{k}\"\n{n}.1 [0 lua] \"SET\" \"{k}\" \"from-script\"\n"
        ));
    }
    let on_home = |k: &str| {
        let b = backends.iter().find(|b| addr(b) == home).unwrap();
        b.connect().call(&[b"GET", k.as_bytes()]).unwrap()
    };
    // Really: the key another server owns was written on the first key's server.
    assert_eq!(
        on_home(&elsewhere),
        Reply::Bulk(Some(b"from-script".to_vec()))
    );
    assert_eq!(
        old.call(&[b"GET", elsewhere.as_bytes()]).unwrap(),
        Reply::Bulk(Some(b"own".to_vec())),
        "read through nutcracker, the key still has its own value"
    );
    assert_eq!(on_home(&same), Reply::Bulk(Some(b"from-script".to_vec())));
    std::fs::write(dir.path().join("scripts.monitor"), capture).unwrap();
    let (v, _) = migrate_json(
        dir.path(),
        &[
            "--from",
            "nutcracker.yml",
            "--from-pool",
            "old",
            "--to",
            "nodes.txt",
            "--monitor",
            "scripts.monitor",
        ],
    );
    let rows = v["batches"]["rows"].as_array().unwrap();
    let before = |line: u64| {
        rows.iter().find(|r| r["id"]["line"] == line).map(|r| {
            (
                r["before"]["served"].as_bool(),
                r["before"]["outcome"].as_str().unwrap().to_string(),
            )
        })
    };
    assert_eq!(
        before(1),
        Some((Some(false), "wrong-server".into())),
        "{rows:?}"
    );
    assert!(
        before(3).is_none_or(|(served, _)| served == Some(true)),
        "{rows:?}"
    );
}

fn three_masters_to_a_new_six_master_cluster_equal_real_dbsize() {
    let (Some(three), Some(six)) = (Cluster::create(), Cluster::create_masters(6)) else {
        return;
    };
    let keys = keys();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sample.keys"), keys.join("\n") + "\n").unwrap();
    load_cluster(three.nodes[0].port, &keys);
    load_cluster(six.nodes[0].port, &keys);
    std::fs::write(
        dir.path().join("three.txt"),
        cluster_nodes(three.nodes[0].port),
    )
    .unwrap();
    std::fs::write(dir.path().join("six.txt"), cluster_nodes(six.nodes[0].port)).unwrap();
    let where_ = |c: &Cluster| {
        located(
            &c.nodes
                .iter()
                .map(|n| (format!("127.0.0.1:{}", n.port), keys_on(n.port, 0)))
                .collect::<Vec<_>>(),
        )
    };
    let (in3, in6) = (where_(&three), where_(&six));
    let dbsize = |c: &Cluster| -> BTreeMap<String, u64> {
        c.nodes
            .iter()
            .map(|n| match n.connect().call(&[b"DBSIZE"]).unwrap() {
                Reply::Int(k) => (format!("127.0.0.1:{}", n.port), k as u64),
                other => panic!("DBSIZE: {other:?}"),
            })
            .collect()
    };
    let (v, code) = migrate_json(
        dir.path(),
        &[
            "--from",
            "three.txt",
            "--to",
            "six.txt",
            "--keys",
            "sample.keys",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(
        per_node(&v, "before"),
        dbsize(&three),
        "DBSIZE per master, 3 masters"
    );
    assert_eq!(
        per_node(&v, "after"),
        dbsize(&six),
        "DBSIZE per master, 6 masters"
    );
    assert_placed(&v, &in3, &in6);
    assert_eq!(
        v["change"]["moved"]["keys"].as_u64(),
        Some(keys.len() as u64)
    );
    // Both sides read live (CLUSTER SLOTS of each running cluster): the same preview.
    let live = |c: &Cluster| format!("redis://127.0.0.1:{}", c.nodes[0].port);
    let (l, _) = migrate_json(
        dir.path(),
        &[
            "--from",
            &live(&three),
            "--to",
            &live(&six),
            "--keys",
            "sample.keys",
        ],
    );
    assert_placed(&l, &in3, &in6);
    assert!(
        l["from"]["topology"]
            .as_str()
            .unwrap()
            .starts_with("live cluster redis://"),
        "{}",
        l["from"]
    );

    // --to-masters 6 lays slots out as redis-cli --cluster create did: the same counts, in
    // the order of the masters' first slots.
    let (w, _) = migrate_json(
        dir.path(),
        &[
            "--from",
            "three.txt",
            "--to-masters",
            "6",
            "--keys",
            "sample.keys",
        ],
    );
    let counts = |v: &Value| -> Vec<u64> {
        v["change"]["after"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["keys"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(counts(&w), counts(&v));
}

/// A stand-in for `valkey-cli` (Valkey 9) or `redis-cli` (Redis 8.4) that answers the atomic
/// slot migration commands with the replies their documentation gives, and records every
/// job it is asked to start. Sources: valkey.io/commands/cluster-migrateslots ("CLUSTER
/// MIGRATESLOTS SLOTSRANGE start-slot end-slot [start-slot end-slot ...] NODE node-id", reply
/// OK), valkey.io/commands/cluster-getslotmigrations (one entry per job: name, operation
/// EXPORT|IMPORT, slot_ranges "a-b c-d", target_node, source_node, …, state; Valkey's
/// src/cluster_migrateslots.c names the terminal states success, failed and cancelled),
/// redis.io/commands/cluster-migration ("CLUSTER MIGRATION IMPORT start-slot end-slot
/// [start-slot end-slot ...]" on the destination returns a task id; "STATUS ID task-id"
/// lists id, slots, source, dest, operation, state (completed when done), last_error, …).
/// A job is in progress at its first poll and ends in `FINAL` (an environment variable) at
/// the next.
const STUB: &str = r#"#!/bin/sh
log="$STUB_DIR/calls"
raw=0
[ "$1" = --raw ] && { raw=1; shift; }
[ "$1" = -h ] || { echo "stub: expected -h, got $*" >&2; exit 2; }
host=$2 port=$4; shift 4
echo "$host:$port $*" >> "$log"
case "$1 $2" in
  "CLUSTER MIGRATESLOTS")
    shift 2
    [ "$1" = SLOTSRANGE ] || { echo "ERR syntax: SLOTSRANGE expected"; exit 0; }
    shift; r=""
    while [ "$1" != NODE ]; do
      [ $# -ge 3 ] && [ "$1" -le "$2" ] || { echo "ERR bad range $1 $2"; exit 0; }
      r="$r${r:+ }$1-$2"; shift 2
    done
    case "$2" in ????????????????????????????????????????) ;; *) echo "ERR bad node id"; exit 0 ;; esac
    echo "$host:$port|$r|$2" >> "$STUB_DIR/jobs"; echo OK ;;
  "CLUSTER GETSLOTMIGRATIONS")
    n=0
    while IFS='|' read -r at r node; do
      [ "$at" = "$host:$port" ] || continue
      n=$((n + 1)); polls="$STUB_DIR/polls-$n"; echo x >> "$polls"
      state=snapshotting; [ "$(wc -l < "$polls")" -gt 1 ] && state=$FINAL
      printf 'name\n%040d\noperation\nEXPORT\nslot_ranges\n%s\ntarget_node\n%s\nsource_node\nffff\ncreate_time\n1\nlast_update_time\n2\nlast_ack_time\n2\nstate\n%s\nmessage\n\n' "$n" "$r" "$node" "$state"
    done < "$STUB_DIR/jobs" ;;
  "CLUSTER MIGRATION")
    case "$3" in
      IMPORT)
        shift 3; r=""
        while [ $# -ge 2 ]; do [ "$1" -le "$2" ] || { echo "ERR bad range"; exit 0; }; r="$r${r:+ }$1-$2"; shift 2; done
        [ $# -eq 0 ] || { echo "ERR odd number of slots"; exit 0; }
        n=$(($(cat "$STUB_DIR/jobs" 2>/dev/null | wc -l) + 1))
        echo "$host:$port|$r|$n" >> "$STUB_DIR/jobs"; printf '%040x\n' "$n" ;;
      STATUS)
        [ "$4" = ID ] || { echo "ERR STATUS ID expected"; exit 0; }
        polls="$STUB_DIR/polls-$5"; echo x >> "$polls"
        state=in_progress; [ "$(wc -l < "$polls")" -gt 1 ] && state=$FINAL
        err=""; [ "$state" = failed ] && err="source unreachable"
        printf 'id\n%s\nslots\n0-1\nsource\naaaa\ndest\nbbbb\noperation\nimport\nstate\n%s\nlast_error\n%s\nretries\n0\ncreate_time\n1\nstart_time\n1\nend_time\n2\nwrite_pause_ms\n3\n' "$5" "$state" "$err" ;;
    esac ;;
  *) echo "stub: unexpected $*" >&2; exit 2 ;;
esac
"#;

/// Runs an emitted script with the stub as its cli; returns (exit status, stderr, jobs).
fn run_with_stub(script: &str, cli: &str, final_state: &str) -> (i32, String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join(cli);
    std::fs::write(&bin, STUB).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(dir.path().join("plan.sh"), script).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .arg(dir.path().join("plan.sh"))
        .env("PATH", path)
        .env("STUB_DIR", dir.path())
        .env("FINAL", final_state)
        .output()
        .unwrap();
    let jobs = std::fs::read_to_string(dir.path().join("jobs")).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        jobs.lines().map(str::to_string).collect(),
    )
}

fn atomic_migration_scripts_speak_the_documented_commands() {
    if require_binary("awk").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let nodes = "\
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 10.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 10.0.0.2:7000@17000 master - 0 0 2 connected 5461-10922
cccccccccccccccccccccccccccccccccccccccc 10.0.0.3:7000@17000 master - 0 0 3 connected 10923-16383
dddddddddddddddddddddddddddddddddddddddd 10.0.0.4:7000@17000 master - 0 0 4 connected
";
    std::fs::write(dir.path().join("nodes.txt"), nodes).unwrap();
    let emitted = |how: &str| -> String {
        let out = keyplan()
            .current_dir(dir.path())
            .args([
                "rebalance",
                "--preview",
                "--topology",
                "nodes.txt",
                "--use-empty-masters",
            ])
            .args(["--emit", how])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // The plan: 4096 slots to 10.0.0.4 from the three others (redis-cli's rebalance).
    let want: BTreeSet<(String, String)> = [
        ("10.0.0.2:7000", "5461-6826"),
        ("10.0.0.3:7000", "10923-12287"),
        ("10.0.0.1:7000", "0-1364"),
    ]
    .iter()
    .map(|(a, r)| (a.to_string(), r.to_string()))
    .collect();

    // Valkey 9: one MIGRATESLOTS job per move on its source, to the target's id.
    let script = emitted("valkey-atomic");
    let (code, err, jobs) = run_with_stub(&script, "valkey-cli", "success");
    assert_eq!(code, 0, "{err}");
    let got: BTreeSet<(String, String)> = jobs
        .iter()
        .map(|j| {
            let f: Vec<&str> = j.split('|').collect();
            assert_eq!(f[2], "dddddddddddddddddddddddddddddddddddddddd", "{j}");
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    assert_eq!(got, want);
    assert!(err.contains("(4096 of 4096)"), "{err}");
    let (code, err, _) = run_with_stub(&script, "valkey-cli", "failed");
    assert_eq!(code, 1);
    assert!(err.contains("is failed"), "{err}");

    // Redis 8.4: one IMPORT task per move on the target, polled by its id.
    let script = emitted("redis-atomic");
    let (code, err, jobs) = run_with_stub(&script, "redis-cli", "completed");
    assert_eq!(code, 0, "{err}");
    let got: BTreeSet<(String, String)> = jobs
        .iter()
        .map(|j| {
            let f: Vec<&str> = j.split('|').collect();
            assert_eq!(f[0], "10.0.0.4:7000", "{j}");
            (f[1].to_string(), f[2].to_string())
        })
        .map(|(r, n)| {
            let source = match r.as_str() {
                "5461-6826" => "10.0.0.2:7000",
                "10923-12287" => "10.0.0.3:7000",
                "0-1364" => "10.0.0.1:7000",
                other => panic!("unexpected range {other} (task {n})"),
            };
            (source.to_string(), r)
        })
        .collect();
    assert_eq!(got, want);
    let (code, err, _) = run_with_stub(&script, "redis-cli", "failed");
    assert_eq!(code, 1);
    assert!(err.contains("is failed: source unreachable"), "{err}");

    // valkey-cli's own reshard with atomic migration.
    let lines = emitted("valkey-cli");
    assert_eq!(
        lines
            .matches("--cluster-use-atomic-slot-migration\n")
            .count(),
        3,
        "{lines}"
    );
    assert!(lines.contains("valkey-cli --cluster reshard 10.0.0.1:7000 --cluster-from bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb --cluster-to dddddddddddddddddddddddddddddddddddddddd --cluster-slots 1366 --cluster-yes"));
}

/// Runs a managed-service script's `mode` with the real AWS CLI (`KEYPLAN_AWS`, awscli from
/// PyPI) pointed at a closed loopback port with made-up credentials: the CLI checks every
/// parameter against the service's API model before it connects, so "Could not connect"
/// means the command was accepted and "Parameter validation failed" that it was not.
fn aws_accepts(aws: &Path, script: &str, mode: &str, env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("aws");
    let port = free_port();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' --endpoint-url http://127.0.0.1:{port} \"$@\"\n",
            aws.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(dir.path().join("plan.sh"), script).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .arg(dir.path().join("plan.sh"))
        .arg(mode)
        .env("PATH", path)
        .env("AWS_ACCESS_KEY_ID", "keyplan-test")
        .env("AWS_SECRET_ACCESS_KEY", "keyplan-test")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_MAX_ATTEMPTS", "1")
        .env("AWS_CONFIG_FILE", dir.path().join("none"))
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
}

fn managed_service_commands_pass_the_aws_cli_parameter_check() {
    let Some(aws) = std::env::var_os("KEYPLAN_AWS").map(std::path::PathBuf::from) else {
        crate::support::not_run("KEYPLAN_AWS (awscli from PyPI) is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nodes = "\
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 10.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 10.0.0.2:7000@17000 master - 0 0 2 connected 5461-10922
cccccccccccccccccccccccccccccccccccccccc 10.0.0.3:7000@17000 master - 0 0 3 connected 10923-16383
";
    std::fs::write(dir.path().join("nodes.txt"), nodes).unwrap();
    // Keys crowded in the low slots: an even layout is far from balanced by keys.
    let mut sample = String::new();
    for i in 0..20_000 {
        sample.push_str(&format!("{{t{}}}:k{i}\n", i % 50));
        sample.push_str(&format!("u:{i}\n"));
    }
    std::fs::write(dir.path().join("sample.keys"), sample).unwrap();
    let emitted = |args: &[&str]| -> String {
        let out = keyplan()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        // 0: none of these previews warns.
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let grow = [
        "rebalance",
        "--preview",
        "--topology",
        "nodes.txt",
        "--add-node",
        "10.0.0.4:7000",
        "--keys",
        "sample.keys",
        "--balance-by",
        "keys",
    ];
    let ec = emitted(&[&grow[..], &["--emit", "elasticache"]].concat());
    let env = [
        ("REPLICATION_GROUP", "prod"),
        ("NEW_REPLICATION_GROUP", "prod-4"),
        ("SNAPSHOT", "prod-backup"),
        ("NODE_TYPE", "cache.r7g.large"),
        ("CLUSTER_NAME", "prod"),
        ("NEW_CLUSTER_NAME", "prod-4"),
        ("ACL_NAME", "open-access"),
        ("NODE_GROUPS_TO_REMOVE", "0003"),
    ];
    for mode in ["online", "offline"] {
        let said = aws_accepts(&aws, &ec, mode, &env);
        assert!(
            said.contains("Could not connect to the endpoint URL"),
            "elasticache {mode}: {said}"
        );
    }
    // The offline layout: four contiguous ranges over every slot, once each.
    let ranges: Vec<(u16, u16)> = ec
        .lines()
        .filter_map(|l| l.trim().strip_prefix("\"NodeGroupId="))
        .map(|l| {
            let slots = l.split("Slots=").nth(1).unwrap().split(',').next().unwrap();
            let (a, b) = slots.split_once('-').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert_eq!(ranges.len(), 4, "{ec}");
    assert_eq!(ranges[0].0, 0);
    assert_eq!(ranges[3].1, 16383);
    assert!(
        ranges.windows(2).all(|w| w[0].1 + 1 == w[1].0),
        "{ranges:?}"
    );
    // Balancing keys, the ranges are not the even ones.
    assert!(
        ranges.iter().any(|&(a, b)| (b - a + 1) as i32 - 4096 > 100),
        "{ranges:?}"
    );
    assert!(ec.contains("--node-group-count 4"));
    // Scaling in names the node groups to remove.
    let shrink = emitted(&[
        "rebalance",
        "--preview",
        "--topology",
        "nodes.txt",
        "--remove-node",
        "cccccccccccccccccccccccccccccccccccccccc",
        "--emit",
        "elasticache",
    ]);
    assert!(shrink.contains("--node-group-count 2"), "{shrink}");
    assert!(shrink.contains("--node-groups-to-remove"), "{shrink}");
    let said = aws_accepts(&aws, &shrink, "online", &env);
    assert!(
        said.contains("Could not connect to the endpoint URL"),
        "{said}"
    );
    let md = emitted(&[&grow[..], &["--emit", "memorydb"]].concat());
    for mode in ["online", "offline"] {
        let said = aws_accepts(&aws, &md, mode, &env);
        assert!(
            said.contains("Could not connect to the endpoint URL"),
            "memorydb {mode}: {said}"
        );
    }
    // The check can fail: a misspelt field is refused before any connection.
    let bad = ec.replace(",Slots=", ",Slotz=");
    let said = aws_accepts(&aws, &bad, "offline", &env);
    assert!(said.contains("Parameter validation failed"), "{said}");
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "twemproxy_to_cluster_and_a_grown_ring_equal_the_real_systems",
        twemproxy_to_cluster_and_a_grown_ring_equal_the_real_systems,
    ),
    (
        "three_masters_to_a_new_six_master_cluster_equal_real_dbsize",
        three_masters_to_a_new_six_master_cluster_equal_real_dbsize,
    ),
    (
        "atomic_migration_scripts_speak_the_documented_commands",
        atomic_migration_scripts_speak_the_documented_commands,
    ),
    (
        "managed_service_commands_pass_the_aws_cli_parameter_check",
        managed_service_commands_pass_the_aws_cli_parameter_check,
    ),
];
