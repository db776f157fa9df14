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
/// MULTI block goes to the owner of its first key, found the same way with a harmless
/// `EXISTS`); a script with no keys goes to every node and counts as refused if any node
/// refuses it.
fn replay(cluster: &Cluster, batch: &[Vec<&str>]) -> &'static str {
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
    if batch.len() == 1 && batch[0][0] == "EVAL" && batch[0][2] == "0" {
        let c = args(&batch[0]);
        let classes: Vec<&str> = conns.iter_mut().map(|con| class(&call(con, &c))).collect();
        return classes.into_iter().find(|c| *c != "ok").unwrap_or("ok");
    }
    if batch.len() == 1 {
        return class(&routed(&mut conns, &args(&batch[0])));
    }
    let first = batch[0][1];
    let node = match call(&mut conns[0], &args(&["EXISTS", first])) {
        Reply::Error(e) if e.starts_with("MOVED ") => port_of(&e),
        _ => 0,
    };
    let con = &mut conns[node];
    call(con, &args(&["MULTI"]));
    for c in batch {
        call(con, &args(c));
    }
    class(&call(con, &args(&["EXEC"])))
}

#[test]
fn keyplan_judges_batches_as_the_cluster_does() {
    if let Some(cluster) = Cluster::create() {
        judge(&cluster);
    }
}

#[test]
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
        let real = replay(cluster, b);
        if real != *mine {
            wrong.push(format!("{b:?}: the cluster says {real}, keyplan {mine}"));
        }
    }
    assert!(wrong.is_empty(), "verdicts differ:\n{}", wrong.join("\n"));
    // The corpus covers every class.
    for class in ["ok", "refused", "script"] {
        assert!(judged.contains(&class), "no {class} batch in the corpus");
    }
}
