//! The cost model against a real cluster: each strategy is executed with a plain RESP client
//! and the commands every node counts (INFO commandstats) equal the model's.

use crate::analyze::Cluster;
use crate::support::{
    Nutcracker, RedisServer, Reply, Resp, free_port, json_of, keyplan, require_binary,
};
use keyplan::simulate::{
    Client, NetworkModel, Outcome, Strategy, parse_batches, simulate, simulate_client,
    simulate_client_stale,
};
use keyplan::topology::{Topology, TopologyOptions};
use std::collections::BTreeMap;

/// INFO commandstats of a node: commands received per command (`calls` plus `rejected_calls`,
/// e.g. refused with CROSSSLOT), without INFO itself.
fn commandstats(c: &mut Resp) -> BTreeMap<String, u64> {
    let Reply::Bulk(Some(info)) = c.call(&[b"INFO", b"commandstats"]).unwrap() else {
        panic!("INFO")
    };
    String::from_utf8_lossy(&info)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let received: u64 = rest
                .split(',')
                .filter_map(|f| f.split_once('='))
                .filter(|(k, _)| *k == "calls" || *k == "rejected_calls")
                .filter_map(|(_, v)| v.parse::<u64>().ok())
                .sum();
            (name != "info").then(|| (name.to_string(), received))
        })
        .collect()
}

/// calls of GET and MGET on a node.
fn calls(c: &mut Resp) -> (u64, u64) {
    let s = commandstats(c);
    (
        s.get("get").copied().unwrap_or(0),
        s.get("mget").copied().unwrap_or(0),
    )
}

fn commands_per_node_equal_the_model_for_every_strategy() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    // The cluster's own slot map (not keyplan's arithmetic) routes the executor.
    let Reply::Bulk(Some(nodes_text)) = cluster.nodes[0]
        .connect()
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    else {
        panic!("CLUSTER NODES")
    };
    let topo = Topology::parse_as(
        &String::from_utf8_lossy(&nodes_text),
        keyplan::topology::TopologyFormat::ClusterNodes,
        &TopologyOptions::default(),
    )
    .unwrap();
    let port_of: Vec<u16> = topo
        .nodes()
        .iter()
        .map(|n| {
            n.address
                .as_ref()
                .unwrap()
                .rsplit_once(':')
                .unwrap()
                .1
                .parse()
                .unwrap()
        })
        .collect();
    let conn_of = |port: u16| {
        cluster
            .nodes
            .iter()
            .find(|n| n.port == port)
            .unwrap()
            .connect()
    };
    let keys: Vec<String> = (0..50).map(|i| format!("item:{}:{i}", i * 7919)).collect();
    let line = format!("MGET {}", keys.join(" "));
    let batch = &parse_batches(&line).unwrap()[0];
    let net = NetworkModel::default();
    // The owner (by the server: CLUSTER KEYSLOT, then the map from CLUSTER NODES) of each key.
    let mut c0 = cluster.nodes[0].connect();
    let owner = |k: &str, c0: &mut Resp| -> (usize, u16) {
        let Reply::Int(slot) = c0.call(&[b"CLUSTER", b"KEYSLOT", k.as_bytes()]).unwrap() else {
            panic!()
        };
        (topo.node_of_slot(slot as u16).unwrap(), slot as u16)
    };
    let placed: Vec<(String, usize, u16)> = keys
        .iter()
        .map(|k| {
            let (n, s) = owner(k, &mut c0);
            (k.clone(), n, s)
        })
        .collect();
    for strategy in Strategy::ALL {
        let before: Vec<(u64, u64)> = port_of.iter().map(|&p| calls(&mut conn_of(p))).collect();
        match strategy {
            Strategy::Serial => {
                for (k, n, _) in &placed {
                    conn_of(port_of[*n]).call(&[b"GET", k.as_bytes()]).unwrap();
                }
            }
            Strategy::Pipeline | Strategy::Parallel | Strategy::SlotParallel => {
                // Group per node (or per slot); one pipeline per group.
                let mut groups: BTreeMap<(usize, u16), Vec<&str>> = BTreeMap::new();
                for (k, n, s) in &placed {
                    let unit = if strategy == Strategy::SlotParallel {
                        *s
                    } else {
                        0
                    };
                    groups.entry((*n, unit)).or_default().push(k);
                }
                for ((n, _), ks) in groups {
                    let mut c = conn_of(port_of[n]);
                    let mut buf = Vec::new();
                    for k in &ks {
                        Resp::encode(&mut buf, &[b"GET", k.as_bytes()]);
                    }
                    c.send(&buf).unwrap();
                    for _ in &ks {
                        c.read().unwrap();
                    }
                }
            }
            Strategy::Hashtag => {
                let tagged: Vec<String> = keys.iter().map(|k| format!("{{t}}{k}")).collect();
                let (n, _) = owner("t", &mut c0);
                let mut args: Vec<&[u8]> = vec![b"MGET"];
                args.extend(tagged.iter().map(|k| k.as_bytes()));
                let r = conn_of(port_of[n]).call(&args).unwrap();
                assert!(matches!(r, Reply::Array(_)), "{r:?}");
            }
        }
        let after: Vec<(u64, u64)> = port_of.iter().map(|&p| calls(&mut conn_of(p))).collect();
        let measured: BTreeMap<String, u64> = topo
            .nodes()
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    n.name.clone(),
                    (after[i].0 - before[i].0) + (after[i].1 - before[i].1),
                )
            })
            .filter(|(_, c)| *c > 0)
            .collect();
        let sim = simulate(batch, &topo, strategy, &net);
        let predicted: BTreeMap<String, u64> = sim.load.commands_per_node().into_iter().collect();
        if strategy == Strategy::Hashtag {
            // The model puts the rewritten batch on the first key's node; the executor used tag
            // `{t}`: compare the shape (one node, one MGET).
            assert_eq!(measured.values().copied().collect::<Vec<_>>(), vec![1]);
            assert_eq!(predicted.values().copied().collect::<Vec<_>>(), vec![1]);
        } else {
            assert_eq!(measured, predicted, "{}", strategy.name());
        }
    }
    // The CLI prints the same model.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("b.txt");
    std::fs::write(&f, &line).unwrap();
    let topo_file = dir.path().join("nodes.txt");
    std::fs::write(&topo_file, &nodes_text).unwrap();
    let v = json_of(
        keyplan()
            .args(["simulate", "--format", "json", "--batches"])
            .arg(&f)
            .arg("--topology")
            .arg(&topo_file),
    );
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["results"].as_array().unwrap().len(), 5);
    assert_eq!(v["results"][0]["strategy"], "serial");
    assert_eq!(v["results"][0]["round_trips"], 50);

    // Profiles that route by the first key and let the server judge: the server's verdict and
    // error text are the model's.
    for line in [
        "MGET a b c".to_string(),
        "MGET {u}a {u}b".to_string(),
        "DEL x{t} y{t} z".to_string(),
        line.clone(),
    ] {
        let b = &parse_batches(&line).unwrap()[0];
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let (n, _) = owner(
            std::str::from_utf8(args[1]).unwrap(),
            &mut cluster.nodes[0].connect(),
        );
        let reply = conn_of(port_of[n]).call(&args).unwrap();
        for client in [Client::GoRedis, Client::Ioredis] {
            let r = simulate_client(b, &topo, client, &net);
            match &reply {
                Reply::Error(e) => {
                    assert_eq!(r.outcome, Outcome::ServerError, "{line}: {e}");
                    assert!(r.message.as_ref().unwrap().ends_with(e.as_str()), "{e}");
                }
                _ => assert_eq!(r.outcome, Outcome::Ok, "{line}"),
            }
        }
    }
}

/// twemproxy's fragmentation (one sub-command per backend server, ≥ 0.4) against a real
/// nutcracker: the commands every backend counts equal the twemproxy profile's.
fn twemproxy_profile_equals_a_real_nutcracker() {
    let (Some(redis), Some(nut)) = (require_binary("redis-server"), require_binary("nutcracker"))
    else {
        return;
    };
    let backends: Vec<RedisServer> = (0..3).map(|_| RedisServer::start(&redis, false)).collect();
    let listen = free_port();
    let mut conf = format!(
        "p:\n  listen: 127.0.0.1:{listen}\n  hash: fnv1a_64\n  distribution: ketama\n  redis: true\n  auto_eject_hosts: false\n  servers:\n"
    );
    for (i, b) in backends.iter().enumerate() {
        conf.push_str(&format!("   - 127.0.0.1:{}:1 s{i}\n", b.port));
    }
    let topo = Topology::parse_as(
        &conf,
        keyplan::topology::TopologyFormat::Twemproxy,
        &TopologyOptions::default(),
    )
    .unwrap();
    let proxy = Nutcracker::start(&nut, &conf);
    let mut conn = proxy.connect(listen);
    let keys = |n: usize, p: &str| -> Vec<String> {
        (0..n).map(|i| format!("{p}:{}", i * 104_729)).collect()
    };
    let mut lines = vec![
        format!("MGET {}", keys(40, "user").join(" ")),
        format!("DEL {}", keys(25, "sess").join(" ")),
        format!(
            "MSET {}",
            keys(12, "cart")
                .iter()
                .map(|k| format!("{k} v"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        format!(
            "PIPELINE GET a; SET b 1; MGET {}",
            keys(9, "feed").join(" ")
        ),
    ];
    lines.push("MGET only-one".into());
    let net = NetworkModel::default();
    for line in &lines {
        let b = &parse_batches(line).unwrap()[0];
        let before: Vec<BTreeMap<String, u64>> = backends
            .iter()
            .map(|s| commandstats(&mut s.connect()))
            .collect();
        // Send the batch through the proxy as a client would.
        let mut buf = Vec::new();
        for op in &b.ops {
            let mut args: Vec<&[u8]> = vec![op.command.as_bytes()];
            for (i, k) in op.keys.iter().enumerate() {
                args.push(k);
                if let Some(v) = op.values.get(i) {
                    args.push(v);
                }
            }
            if op.command == "SET" {
                args.push(b"1");
            }
            Resp::encode(&mut buf, &args);
        }
        conn.send(&buf).unwrap();
        for _ in &b.ops {
            let r = conn.read().unwrap();
            assert!(!matches!(r, Reply::Error(_)), "{line}: {r:?}");
        }
        let measured: BTreeMap<String, u64> = backends
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let after = commandstats(&mut s.connect());
                let n: u64 = after
                    .iter()
                    .map(|(k, v)| v - before[i].get(k).copied().unwrap_or(0))
                    .sum();
                (format!("s{i}"), n)
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        let r = simulate_client(b, &topo, Client::Twemproxy, &net);
        assert_eq!(r.outcome, Outcome::Ok, "{line}");
        let predicted: BTreeMap<String, u64> = r.load.commands_per_node().into_iter().collect();
        assert_eq!(measured, predicted, "{line}");
        assert!(predicted.len() > 1 || line.contains("only-one"), "{line}");
        // The strategies place keys on the ring as the proxy does: each server gets the keys
        // nutcracker sent it (the profile's, checked above), none is left unplaced, and a
        // pipeline is one round trip on the client's one connection.
        let keys_of = |l: &keyplan::simulate::BatchLoad| -> BTreeMap<String, u64> {
            l.nodes.iter().map(|n| (n.node.clone(), n.keys)).collect()
        };
        for strategy in [Strategy::Serial, Strategy::Pipeline] {
            let s = simulate(b, &topo, strategy, &net);
            assert!(s.errors.is_empty(), "{line} {strategy:?}: {:?}", s.errors);
            assert_eq!(keys_of(&s.load), keys_of(&r.load), "{line} {strategy:?}");
            assert_eq!(s.load.connections, 1, "{line} {strategy:?}");
            if strategy == Strategy::Pipeline {
                assert_eq!(s.load.round_trips, 1, "{line}");
            }
        }
    }
    // One endpoint: no strategy that opens a connection per node, and no hashtag on a ring
    // without `hash_tag: "{}"` (it hashes whole keys).
    let all = [
        Strategy::Serial,
        Strategy::Pipeline,
        Strategy::Parallel,
        Strategy::SlotParallel,
        Strategy::Hashtag,
    ];
    assert_eq!(
        keyplan::simulate::offered(&topo, &all),
        vec![Strategy::Serial, Strategy::Pipeline]
    );
    let tagged = Topology::parse_as(
        &conf.replacen("  redis: true\n", "  redis: true\n  hash_tag: \"{}\"\n", 1),
        keyplan::topology::TopologyFormat::Twemproxy,
        &TopologyOptions::default(),
    )
    .unwrap();
    assert_eq!(
        keyplan::simulate::offered(&tagged, &all),
        vec![Strategy::Serial, Strategy::Pipeline, Strategy::Hashtag]
    );
}

/// MOVED and ASK as a real cluster answers them: one slot is reassigned after the client read
/// its map (stale map → MOVED) and another is put in migration (→ ASK); the redirects keyplan
/// predicts, and their targets, are the ones the servers send.
fn redirects_equal_a_real_cluster() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    // A text reply of node i.
    let text = |i: usize, sub: &[u8]| -> String {
        match cluster.nodes[i].connect().call(&[b"CLUSTER", sub]).unwrap() {
            Reply::Bulk(Some(t)) => String::from_utf8(t).unwrap(),
            other => panic!("CLUSTER {}: {other:?}", String::from_utf8_lossy(sub)),
        }
    };
    let nodes_text = |i: usize| text(i, b"NODES");
    let parse = |text: &str| {
        Topology::parse_as(
            text,
            keyplan::topology::TopologyFormat::ClusterNodes,
            &TopologyOptions {
                allow_partial: false,
                pool: None,
            },
        )
        .unwrap()
    };
    let believed = parse(&nodes_text(0));
    let id = |i: usize| text(i, b"MYID");
    let index_of_port = |port: u16| cluster.nodes.iter().position(|n| n.port == port).unwrap();
    let port_of = |topo: &Topology, i: usize| -> u16 {
        topo.nodes()[i]
            .address
            .as_ref()
            .unwrap()
            .rsplit_once(':')
            .unwrap()
            .1
            .parse()
            .unwrap()
    };
    let (k1, k2, k3) = ("alpha", "bravo", "charlie");
    let s1 = keyplan::slot::key_slot(k1.as_bytes());
    let s2 = keyplan::slot::key_slot(k2.as_bytes());
    let owner =
        |k: &str| index_of_port(port_of(&believed, believed.node_of(k.as_bytes()).unwrap()));
    let (a, c) = (owner(k1), owner(k2));
    let (b, d) = ((a + 1) % 3, (c + 1) % 3);
    // Slot s1 now belongs to b, on every node.
    for i in 0..3 {
        let r = cluster.nodes[i]
            .connect()
            .call(&[
                b"CLUSTER",
                b"SETSLOT",
                s1.to_string().as_bytes(),
                b"NODE",
                id(b).as_bytes(),
            ])
            .unwrap();
        assert_eq!(r, Reply::Status("OK".into()));
    }
    // Slot s2 migrates from c to d.
    let setslot = |i: usize, how: &[u8], peer: usize| {
        let r = cluster.nodes[i]
            .connect()
            .call(&[
                b"CLUSTER",
                b"SETSLOT",
                s2.to_string().as_bytes(),
                how,
                id(peer).as_bytes(),
            ])
            .unwrap();
        assert_eq!(r, Reply::Status("OK".into()));
    };
    setslot(d, b"IMPORTING", c);
    setslot(c, b"MIGRATING", d);
    // The real map, seen by the migration's source (its line carries the marker).
    let actual = parse(&nodes_text(c));
    // What the servers answer when each key is sent where the stale map says.
    let mut real = Vec::new();
    for k in [k1, k2, k3] {
        let i = owner(k);
        real.push(
            cluster.nodes[i]
                .connect()
                .call(&[b"GET", k.as_bytes()])
                .unwrap(),
        );
    }
    let net = NetworkModel::default();
    for (k, reply) in [k1, k2, k3].iter().zip(&real) {
        let batch = &parse_batches(&format!("GET {k}")).unwrap()[0];
        // Envoy returns the redirect as is: its message is the server's reply.
        let r = simulate_client_stale(batch, &believed, &actual, Client::Envoy, &net);
        match reply {
            Reply::Error(e) => {
                assert_eq!(r.outcome, Outcome::ServerError, "{k}: {e}");
                let m = r.message.unwrap();
                assert!(
                    m.starts_with(e.as_str()),
                    "{k}: predicted {m:?}, server said {e:?}"
                );
            }
            other => {
                assert_eq!(r.outcome, Outcome::Ok, "{k}: {other:?}");
                assert_eq!((r.moved, r.ask), (0, 0));
            }
        }
    }
    assert!(matches!(&real[0], Reply::Error(e) if e.starts_with("MOVED")));
    assert!(matches!(&real[1], Reply::Error(e) if e.starts_with("ASK")));
    // A pipeline over the three keys: one MOVED, one ASK; redis-py re-sends each redirected
    // command alone (ASKING its own round trip), Lettuce follows both at once.
    let batch = &parse_batches(&format!("PIPELINE GET {k1}; GET {k2}; GET {k3}")).unwrap()[0];
    let r = simulate_client_stale(batch, &believed, &actual, Client::RedisPy, &net);
    assert_eq!((r.outcome, r.moved, r.ask), (Outcome::Ok, 1, 1));
    assert_eq!(r.load.round_trips, 1 + 1 + 2);
    let r = simulate_client_stale(batch, &believed, &actual, Client::Lettuce, &net);
    assert_eq!(
        (r.outcome, r.moved, r.ask, r.load.round_trips),
        (Outcome::Ok, 1, 1, 2)
    );
    // The re-sent commands reach the nodes the servers named.
    let target = |e: &Reply| match e {
        Reply::Error(e) => e.rsplit(' ').next().unwrap().to_string(),
        _ => unreachable!(),
    };
    for t in [target(&real[0]), target(&real[1])] {
        assert!(
            r.load
                .nodes
                .iter()
                .any(|n| n.address.as_deref() == Some(t.as_str())),
            "{t}"
        );
    }
    // Following the redirect really works: ASKING + GET on the target answers.
    let mut c = crate::support::connect_port(
        target(&real[1])
            .rsplit_once(':')
            .unwrap()
            .1
            .parse()
            .unwrap(),
    );
    let mut buf = Vec::new();
    Resp::encode(&mut buf, &[b"ASKING"]);
    Resp::encode(&mut buf, &[b"GET", k2.as_bytes()]);
    c.send(&buf).unwrap();
    assert_eq!(c.read().unwrap(), Reply::Status("OK".into()));
    assert_eq!(c.read().unwrap(), Reply::Bulk(None));
}

/// A real `redis-cli MONITOR` capture becomes the batches that were sent: the multi-key
/// command, the MULTI block and the script with their keys, binary keys included; single-key
/// commands and the script's own commands are not batches.
fn batches_from_a_real_monitor_capture() {
    let (Some(redis), Some(cli)) = (require_binary("redis-server"), require_binary("redis-cli"))
    else {
        return;
    };
    let server = RedisServer::start(&redis, false);
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("monitor.txt");
    let mut monitor = std::process::Command::new(&cli)
        .args(["-p", &server.port.to_string(), "monitor"])
        .stdout(std::fs::File::create(&capture).unwrap())
        .spawn()
        .unwrap();
    // Wait until the monitor is attached (its "OK").
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(&capture)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "redis-cli monitor did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut c = server.connect();
    c.call(&[b"MGET", b"a", b"b\x01\"q", b"c d"]).unwrap();
    c.call(&[b"GET", b"single"]).unwrap();
    let mut buf = Vec::new();
    Resp::encode(&mut buf, &[b"MULTI"]);
    Resp::encode(&mut buf, &[b"SET", b"{u}x", b"1"]);
    Resp::encode(&mut buf, &[b"INCR", b"{u}y"]);
    Resp::encode(&mut buf, &[b"EXEC"]);
    c.send(&buf).unwrap();
    for _ in 0..4 {
        c.read().unwrap();
    }
    c.call(&[
        b"EVAL",
        b"return redis.call('get', KEYS[1])",
        b"2",
        b"k1",
        b"k2",
        b"arg",
    ])
    .unwrap();
    c.call(&[b"PING"]).unwrap();
    // The capture is complete once the PING shows up.
    while !std::fs::read_to_string(&capture)
        .unwrap()
        .contains("\"PING\"")
    {
        assert!(std::time::Instant::now() < deadline, "capture incomplete");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = monitor.kill();
    let _ = monitor.wait();
    let text = std::fs::read_to_string(&capture).unwrap();
    let (batches, stats) = keyplan::simulate::monitor::parse_monitor(&text).unwrap();
    let keys: Vec<Vec<Vec<u8>>> = batches
        .iter()
        .map(|b| b.keys().map(|k| k.to_vec()).collect())
        .collect();
    assert_eq!(
        keys,
        vec![
            vec![b"a".to_vec(), b"b\x01\"q".to_vec(), b"c d".to_vec()],
            vec![b"{u}x".to_vec(), b"{u}y".to_vec()],
            vec![b"k1".to_vec(), b"k2".to_vec()],
        ],
        "{text}"
    );
    assert_eq!(stats.single, 2, "GET single and PING: {text}");
    // And through the CLI.
    keyplan()
        .args([
            "simulate",
            "--client",
            "lettuce",
            "--masters",
            "3",
            "--monitor",
        ])
        .arg(&capture)
        .assert()
        .success()
        .stderr(predicates::str::contains("3 batches"));
}

/// redis-py itself (from PyPI; `.ci/run` installs it in a venv and exports KEYPLAN_PYTHON)
/// against a real cluster: what it raises, and the commands each node counts, equal the
/// `redis-py` / `redis-py-nonatomic` profiles.
fn redis_py_equals_its_profile() {
    // KEYPLAN_PYTHON, else a python3 on PATH that has the redis package.
    let on_path = || {
        let ok = std::process::Command::new("python3")
            .args(["-c", "import redis.cluster"])
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| std::ffi::OsString::from("python3"))
    };
    let python = match std::env::var_os("KEYPLAN_PYTHON").or_else(on_path) {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            if std::env::var_os("CI").is_some() {
                panic!("KEYPLAN_PYTHON is not set, and CI is set: .ci/run must install redis-py");
            }
            crate::support::not_run("KEYPLAN_PYTHON (a python with redis-py) is not set");
            return;
        }
    };
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("run.py");
    std::fs::write(
        &script,
        r#"import sys, json
from redis.cluster import RedisCluster
port, what, keys = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
rc = RedisCluster(host="127.0.0.1", port=port)
try:
    if what == "mget":
        rc.mget(*keys)
    elif what == "mget_nonatomic":
        rc.mget_nonatomic(*keys)
    elif what == "delete":
        rc.delete(*keys)
    elif what == "pipeline":
        p = rc.pipeline()
        for k in keys:
            p.get(k)
        p.execute()
    elif what == "transaction":
        # What code that sent MULTI on one server calls: pipeline(), the default.
        p = rc.pipeline()
        for k in keys:
            p.set(k, "1")
        p.execute()
    elif what == "transaction_true":
        p = rc.pipeline(transaction=True)
        for k in keys:
            p.set(k, "1")
        p.execute()
    print(json.dumps({"error": None}))
except Exception as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
"#,
    )
    .unwrap();
    let topo = own_topology(&cluster);
    let data = ["get", "mget", "del", "set", "multi", "exec"];
    let keys: Vec<String> = (0..12).map(|i| format!("py:{}", i * 7919)).collect();
    let k = |n: usize| keys[..n].to_vec();
    let cases: Vec<(&str, Vec<String>, String, Client)> = vec![
        (
            "mget",
            k(6),
            format!("MGET {}", k(6).join(" ")),
            Client::RedisPy,
        ),
        (
            "mget_nonatomic",
            k(12),
            format!("MGET {}", k(12).join(" ")),
            Client::RedisPyNonatomic,
        ),
        (
            "delete",
            k(12),
            format!("DEL {}", k(12).join(" ")),
            Client::RedisPy,
        ),
        (
            "pipeline",
            k(12),
            format!("PIPELINE GET {}", k(12).join("; GET ")),
            Client::RedisPy,
        ),
        (
            "transaction",
            k(3),
            format!("MULTI SET {} 1", k(3).join(" 1; SET ")),
            Client::RedisPy,
        ),
        (
            "transaction",
            vec!["{u}a".into(), "{u}b".into()],
            "MULTI SET {u}a 1; SET {u}b 1".into(),
            Client::RedisPy,
        ),
        (
            "transaction_true",
            k(3),
            format!("MULTI SET {} 1", k(3).join(" 1; SET ")),
            Client::RedisPy,
        ),
    ];
    let net = NetworkModel::default();
    for (what, args, line, client) in cases {
        let (v, measured) = run_library(
            &cluster,
            std::process::Command::new(&python)
                .arg(&script)
                .arg(cluster.nodes[0].port.to_string())
                .arg(what)
                .args(&args),
            &data,
        );
        let b = &parse_batches(&line).unwrap()[0];
        let r = simulate_client(b, &topo, client, &net);
        match v["error"].as_str() {
            // The profile models pipeline() for a MULTI batch, and names what
            // pipeline(transaction=True) raises.
            Some(e) if what == "transaction_true" => {
                assert_eq!(r.outcome, Outcome::NotAtomic, "{what}");
                assert!(
                    r.message
                        .as_deref()
                        .unwrap()
                        .ends_with(&format!("raises {e}")),
                    "{what}: {e} vs {:?}",
                    r.message
                );
                assert!(measured.is_empty(), "{what}: {measured:?}");
            }
            Some(e) => {
                assert_eq!(
                    r.outcome,
                    Outcome::ClientError,
                    "{what}: redis-py raised {e}"
                );
                assert_eq!(r.message.as_deref(), Some(e), "{what}");
                assert!(measured.is_empty(), "{what}: {measured:?}");
            }
            None if what == "transaction_true" => {
                panic!("pipeline(transaction=True) ran cross-slot keys")
            }
            None => {
                let want = if what == "transaction" {
                    Outcome::NotAtomic
                } else {
                    Outcome::Ok
                };
                assert_eq!(r.outcome, want, "{what}: redis-py succeeded");
                let predicted: BTreeMap<String, u64> = r
                    .load
                    .nodes
                    .iter()
                    .map(|n| (n.address.clone().unwrap(), n.commands))
                    .collect();
                assert_eq!(measured, predicted, "{what}");
            }
        }
    }
}

/// ioredis itself (from npm; `.ci/run` installs it and exports KEYPLAN_IOREDIS, the package
/// directory) against a real cluster: its errors and the commands each node receives equal the
/// `ioredis` profile.
fn ioredis_equals_its_profile() {
    node_library_equals_its_profile("KEYPLAN_IOREDIS", Client::Ioredis, IOREDIS_SCRIPT);
}

/// node-redis 6.3 (from npm; KEYPLAN_NODE_REDIS, the `redis` package directory) against a real
/// cluster, the same cases: MGET and DEL split per slot in parallel, concurrent single
/// commands as its pipeline, MULTI to one node.
fn node_redis_equals_its_profile() {
    node_library_equals_its_profile("KEYPLAN_NODE_REDIS", Client::NodeRedis, NODE_REDIS_SCRIPT);
}

const IOREDIS_SCRIPT: &str = r#"const Redis = require(process.env.KEYPLAN_MODULE);
const [port, what, ...keys] = process.argv.slice(2);
const c = new Redis.Cluster([{ host: "127.0.0.1", port: Number(port) }]);
(async () => {
  const out = { error: null };
  try {
    if (what === "mget") await c.mget(...keys);
    else if (what === "del") await c.del(...keys);
    else if (what === "pipeline" || what === "multi") {
      const p = what === "multi" ? c.multi() : c.pipeline();
      for (const k of keys) p.get(k);
      const r = await p.exec();
      const e = (r || []).find((x) => x[0]);
      if (e) throw e[0];
    }
  } catch (e) {
    out.error = e.message;
  }
  console.log(JSON.stringify(out));
  c.disconnect();
})();
"#;

const NODE_REDIS_SCRIPT: &str = r#"const { createCluster } = require(process.env.KEYPLAN_MODULE);
const [port, what, ...keys] = process.argv.slice(2);
(async () => {
  const c = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }] });
  c.on("error", () => {});
  await c.connect();
  const out = { error: null };
  try {
    if (what === "mget") await c.mGet(keys);
    else if (what === "del") await c.del(keys);
    else if (what === "pipeline") await Promise.all(keys.map((k) => c.get(k)));
    else if (what === "multi") {
      const m = c.multi();
      for (const k of keys) m.get(k);
      await m.exec();
    }
  } catch (e) {
    out.error = e.message;
  }
  console.log(JSON.stringify(out));
  await c.close();
})();
"#;

/// Runs the cases of a Node.js client library (its package directory in `env`) against a real
/// cluster and compares them with `client`'s profile.
fn node_library_equals_its_profile(env: &str, client: Client, script_text: &str) {
    let (Some(module), Some(node)) = (std::env::var_os(env), require_binary_quiet("node")) else {
        if std::env::var_os("CI").is_some() {
            panic!("{env} or node missing, and CI is set: .ci/run must install them");
        }
        crate::support::not_run(format!(
            "{env} (an npm-installed client library) or node is missing"
        ));
        return;
    };
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("run.js");
    std::fs::write(&script, script_text).unwrap();
    let topo = own_topology(&cluster);
    let data = ["get", "mget", "del", "multi", "exec"];
    let keys: Vec<String> = (0..40).map(|i| format!("io:{}", i * 7919)).collect();
    // Keys on one node, in different slots (one node group, several slots).
    let node0 = topo.node_of(keys[0].as_bytes());
    let same_node: Vec<String> = keys
        .iter()
        .filter(|k| topo.node_of(k.as_bytes()) == node0)
        .take(4)
        .cloned()
        .collect();
    let cases: Vec<(&str, Vec<String>, String)> = vec![
        (
            "mget",
            keys[..5].to_vec(),
            format!("MGET {}", keys[..5].join(" ")),
        ),
        (
            "mget",
            vec!["{t}a".into(), "{t}b".into()],
            "MGET {t}a {t}b".into(),
        ),
        (
            "del",
            keys[..5].to_vec(),
            format!("DEL {}", keys[..5].join(" ")),
        ),
        (
            "pipeline",
            keys[..6].to_vec(),
            format!("PIPELINE GET {}", keys[..6].join("; GET ")),
        ),
        (
            "pipeline",
            same_node.clone(),
            format!("PIPELINE GET {}", same_node.join("; GET ")),
        ),
        (
            "multi",
            same_node.clone(),
            format!("MULTI GET {}", same_node.join("; GET ")),
        ),
    ];
    let net = NetworkModel::default();
    for (what, args, line) in cases {
        let (v, measured) = run_library(
            &cluster,
            std::process::Command::new(&node)
                .arg(&script)
                .arg(cluster.nodes[0].port.to_string())
                .arg(what)
                .args(&args)
                .env("KEYPLAN_MODULE", &module),
            &data,
        );
        let b = &parse_batches(&line).unwrap()[0];
        let r = simulate_client(b, &topo, client, &net);
        let predicted: BTreeMap<String, u64> = r
            .load
            .nodes
            .iter()
            .map(|n| (n.address.clone().unwrap(), n.commands))
            .collect();
        match v["error"].as_str() {
            Some(e) if r.outcome == Outcome::ClientError => {
                assert_eq!(r.message.as_deref(), Some(e), "{line}");
                assert!(measured.is_empty(), "{line}: {measured:?}");
            }
            Some(e) if what == "multi" => {
                // An aborted transaction: the node receives MULTI, the commands and EXEC (the
                // model), but INFO commandstats counts only MULTI and EXEC: queued commands
                // that never run are not counted.
                assert_eq!(r.outcome, Outcome::ServerError, "{line}");
                assert!(r.message.as_deref().unwrap().starts_with(e), "{line}: {e}");
                let node = predicted.keys().next().unwrap().clone();
                assert_eq!(
                    predicted,
                    BTreeMap::from([(node.clone(), args.len() as u64 + 2)])
                );
                assert_eq!(measured, BTreeMap::from([(node, 2)]), "{line}");
            }
            Some(e) => {
                assert_eq!(
                    r.outcome,
                    Outcome::ServerError,
                    "{line}: the library said {e}"
                );
                assert!(r.message.as_deref().unwrap().ends_with(e), "{line}: {e}");
                assert_eq!(measured, predicted, "{line}");
            }
            None => {
                assert_eq!(r.outcome, Outcome::Ok, "{line}: the library succeeded");
                assert_eq!(measured, predicted, "{line}");
            }
        }
    }
}

/// A binary on PATH, or None (no notice: the caller decides).
fn require_binary_quiet(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// The cluster's own slot map (CLUSTER NODES of its first node).
fn own_topology(cluster: &Cluster) -> Topology {
    let Reply::Bulk(Some(nodes_text)) = cluster.nodes[0]
        .connect()
        .call(&[b"CLUSTER", b"NODES"])
        .unwrap()
    else {
        panic!("CLUSTER NODES")
    };
    Topology::parse_as(
        &String::from_utf8_lossy(&nodes_text),
        keyplan::topology::TopologyFormat::ClusterNodes,
        &TopologyOptions::default(),
    )
    .unwrap()
}

/// Runs a client library's script, which prints `{"error": null | "text"}`; returns that and
/// the `data` commands each node received meanwhile (nodes that received none left out).
fn run_library(
    cluster: &Cluster,
    cmd: &mut std::process::Command,
    data: &[&str],
) -> (serde_json::Value, BTreeMap<String, u64>) {
    measure(cluster, data, || {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{:?}: {}",
            cmd,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    })
}

/// Runs `f`, and returns its result with the `data` commands each node received meanwhile
/// (nodes that received none left out).
fn measure<T>(
    cluster: &Cluster,
    data: &[&str],
    f: impl FnOnce() -> T,
) -> (T, BTreeMap<String, u64>) {
    let before = data_counts(cluster, data);
    let t = f();
    let measured = data_counts(cluster, data)
        .into_iter()
        .map(|(n, c)| {
            let d = c - before[&n];
            (n, d)
        })
        .filter(|(_, c)| *c > 0)
        .collect();
    (t, measured)
}

/// The redis crate's own sync cluster client (redis-rs, the `cluster` feature, a dev-dependency)
/// against a real cluster: a cross-slot MGET and DEL are split per slot, a cluster pipeline is
/// grouped per node, MGET in a cluster pipeline is refused; the commands each node receives and
/// the error text equal the `redis-rs` profile.
fn redis_rs_equals_its_profile() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let topo = own_topology(&cluster);
    let client = redis::cluster::ClusterClient::new(vec![format!(
        "redis://127.0.0.1:{}/",
        cluster.nodes[0].port
    )])
    .unwrap();
    let mut con = client.get_connection().unwrap();
    let data = ["get", "mget", "del"];
    let keys: Vec<String> = (0..12).map(|i| format!("rs:{}", i * 7919)).collect();
    let net = NetworkModel::default();
    type Run<'a> = Box<dyn Fn(&mut redis::cluster::ClusterConnection) -> Result<(), String> + 'a>;
    let cases: Vec<(String, Run)> = vec![
        (
            format!("MGET {}", keys.join(" ")),
            Box::new(|c| {
                redis::cmd("MGET")
                    .arg(&keys)
                    .query::<Vec<Option<String>>>(c)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
        ),
        (
            format!("DEL {}", keys.join(" ")),
            Box::new(|c| {
                redis::cmd("DEL")
                    .arg(&keys)
                    .query::<i64>(c)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
        ),
        (
            format!("PIPELINE GET {}", keys.join("; GET ")),
            Box::new(|c| {
                let mut p = redis::cluster::cluster_pipe();
                for k in &keys {
                    p.cmd("GET").arg(k);
                }
                p.query::<Vec<Option<String>>>(c)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
        ),
        (
            format!("PIPELINE GET {}; MGET {} {}", keys[0], keys[1], keys[2]),
            Box::new(|c| {
                let mut p = redis::cluster::cluster_pipe();
                p.cmd("GET").arg(&keys[0]);
                p.cmd("MGET").arg(&keys[1]).arg(&keys[2]);
                p.query::<redis::Value>(c)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
        ),
    ];
    for (line, run) in cases {
        let (result, measured) = measure(&cluster, &data, || run(&mut con));
        let b = &parse_batches(&line).unwrap()[0];
        let r = simulate_client(b, &topo, Client::RedisRs, &net);
        match result {
            Err(e) => {
                assert_eq!(r.outcome, Outcome::ClientError, "{line}: redis-rs said {e}");
                assert_eq!(r.message.as_deref(), Some(e.as_str()), "{line}");
                assert!(measured.is_empty(), "{line}: {measured:?}");
            }
            Ok(()) => {
                assert_eq!(r.outcome, Outcome::Ok, "{line}: redis-rs succeeded");
                let predicted: BTreeMap<String, u64> = r
                    .load
                    .nodes
                    .iter()
                    .map(|n| (n.address.clone().unwrap(), n.commands))
                    .collect();
                assert_eq!(measured, predicted, "{line}");
            }
        }
    }
}

/// The `data` commands each node has received so far, by address.
fn data_counts(cluster: &Cluster, data: &[&str]) -> BTreeMap<String, u64> {
    cluster
        .nodes
        .iter()
        .map(|n| {
            let s = commandstats(&mut n.connect());
            let c = data.iter().map(|d| s.get(*d).copied().unwrap_or(0)).sum();
            (format!("127.0.0.1:{}", n.port), c)
        })
        .collect()
}

/// The captures of real libraries in tests/fixtures/libraries (see its README): dramatiq's
/// dispatch script touches keys it does not declare, kombu's BRPOP spans its lists, rq's
/// transactions span a job and its queue; limits' scripts stay on their one key.
fn captures_of_real_libraries_get_their_verdicts() {
    let count = |lib: &str, outcome: &str| -> usize {
        let v = json_of(keyplan().args([
            "simulate",
            "--monitor",
            &format!("tests/fixtures/libraries/{lib}.monitor"),
            "--strategy",
            "pipeline",
            "--format",
            "json",
        ]));
        v["batches"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["outcome"] == outcome)
            .count()
    };
    assert!(count("dramatiq", "non-local-script-key") > 50);
    assert_eq!(count("dramatiq", "ok"), 0);
    assert!(count("kombu", "crossslot") > 20);
    assert!(count("rq", "crossslot") > 20);
    assert_eq!(
        count("limits", "crossslot") + count("limits", "non-local-script-key"),
        0
    );
}

/// A capture is read a line at a time: CRLF line ends and a last line without one read as
/// the same batches, in the order the whole capture lists them (a script's batch comes when
/// its commands are over, before the next client's); a bad line stops the run with its line
/// named and, with `-o`, no file written.
fn a_capture_streams_to_the_same_report() {
    let text = "OK\n\
        1.0 [0 127.0.0.1:1] \"MULTI\"\n\
        1.1 [0 127.0.0.1:1] \"SET\" \"a\" \"1\"\n\
        1.2 [0 127.0.0.1:2] \"EVAL\" \"return 1\" \"1\" \"k1\"\n\
        1.3 [0 lua] \"get\" \"k2\"\n\
        1.4 [0 127.0.0.1:1] \"INCR\" \"b\"\n\
        1.5 [0 127.0.0.1:1] \"EXEC\"\n\
        1.6 [0 127.0.0.1:3] \"EVAL\" \"return 1\" \"0\"\n\
        1.7 [0 127.0.0.1:3] \"MGET\" \"x\" \"y\"\n\
        1.8 [0 127.0.0.1:4] \"DEL\" \"p\" \"q\"";
    let dir = tempfile::tempdir().unwrap();
    let lf = dir.path().join("lf.monitor");
    let crlf = dir.path().join("crlf.monitor");
    std::fs::write(&lf, format!("{text}\n")).unwrap();
    std::fs::write(&crlf, text.replace('\n', "\r\n")).unwrap();
    let (batches, _) = keyplan::simulate::monitor::parse_monitor(text).unwrap();
    let names: Vec<&str> = batches.iter().map(|b| b.name.as_str()).collect();
    let json = |path: &std::path::Path| {
        let out = keyplan()
            .args(["simulate", "--format", "json", "--monitor"])
            .arg(path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(),
            stderr,
        )
    };
    let (a, stderr) = json(&lf);
    let (b, _) = json(&crlf);
    assert_eq!(a, b);
    let listed: Vec<&str> = a["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["batch"].as_str().unwrap())
        .collect();
    assert_eq!(listed, names);
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(
        listed[0].starts_with("line 4 [127.0.0.1:2]: EVAL"),
        "{listed:?}"
    );
    assert!(
        listed[1].starts_with("line 2 [127.0.0.1:1]: MULTI"),
        "{listed:?}"
    );
    assert!(
        stderr.contains("8 commands, 4 batches; 1 single-key commands are not batches"),
        "{stderr}"
    );
    let bad = dir.path().join("bad.monitor");
    std::fs::write(&bad, format!("{text}\n1.9 [0 127.0.0.1:5 \"GET\" \"z\"\n")).unwrap();
    let report = dir.path().join("report.json");
    let out = keyplan()
        .args(["simulate", "--format", "json", "-o"])
        .arg(&report)
        .arg("--monitor")
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.monitor: line 11, column"), "{stderr}");
    assert!(!report.exists(), "a failed run leaves no report");
}

/// Batch files are held to their bounds by the read itself: an input without a size
/// (`/dev/zero`) and a line that never ends are refused naming the file, the line and the
/// bound, as a regular file over the bound is, at once (exit 2, nothing simulated).
fn batch_files_are_bounded_whatever_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    // A 17 MiB line: one batch longer than a batch file's line may be.
    let long = dir.path().join("long.txt");
    let mut text = b"MGET a b\n".to_vec();
    text.extend(std::iter::repeat_n(b'a', 17 << 20));
    std::fs::write(&long, text).unwrap();
    // A 65 MiB file (sparse: its size is all that is read).
    let big = dir.path().join("big.txt");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    let cases: Vec<(std::path::PathBuf, String)> = vec![
        (
            "/dev/zero".into(),
            "/dev/zero: line 1 is longer than 16 MiB".into(),
        ),
        (
            long.clone(),
            format!("{}: line 2 is longer than 16 MiB", long.display()),
        ),
        (
            big.clone(),
            format!("batch file '{}' is larger than 64 MiB", big.display()),
        ),
    ];
    for (path, want) in &cases {
        let out = keyplan()
            .args(["simulate", "--format", "json", "--batches"])
            .arg(path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", path.display());
        assert!(stderr.contains(want.as_str()), "{stderr}");
    }
}

/// A script that declares no keys and writes one (`EVALSHA sha 0 key`, the key passed as
/// ARGV): the real cluster runs it only on the key's owner and refuses it on every other node;
/// simulate says so for the batch file's EVAL and EVALSHA and for a capture's EVALSHA after its
/// SCRIPT LOAD, naming the node that ran it.
fn a_script_declaring_no_keys_is_refused_where_simulate_says() {
    use keyplan::command::script::sha1_hex;
    use keyplan::simulate::monitor::parse_monitor;
    use keyplan::simulate::verdict::{ServerOutcome, as_written};
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let topo = own_topology(&cluster);
    let body = "return redis.call('SET', ARGV[1], 'v')";
    let key = "rate:ana";
    let mut ran_on = Vec::new();
    for node in &cluster.nodes {
        let mut c = node.connect();
        let Reply::Bulk(Some(sha)) = c.call(&[b"SCRIPT", b"LOAD", body.as_bytes()]).unwrap() else {
            panic!("SCRIPT LOAD")
        };
        // keyplan names a loaded script as the server does.
        assert_eq!(String::from_utf8_lossy(&sha), sha1_hex(body.as_bytes()));
        match c.call(&[b"EVALSHA", &sha, b"0", key.as_bytes()]).unwrap() {
            Reply::Status(s) if s == "OK" => ran_on.push(format!("127.0.0.1:{}", node.port)),
            Reply::Error(e) => assert!(
                e.contains("Script attempted to access a non local key in a cluster node"),
                "{e}"
            ),
            other => panic!("{other:?}"),
        }
    }
    // Exactly one node of three ran it: the owner of the key's slot.
    assert_eq!(ran_on.len(), 1, "{ran_on:?}");
    let owner = topo.nodes()[topo.node_of(key.as_bytes()).unwrap()]
        .name
        .clone();
    assert_eq!(ran_on[0], owner);
    let sha = sha1_hex(body.as_bytes());
    let file = format!(
        "EVAL \"{body}\" 0 {key}\nEVALSHA {sha} 0 {key}\nEVAL \"return redis.call('TIME')\" 0\n"
    );
    let batches = parse_batches(&file).unwrap();
    let v = as_written(&batches[0], &topo);
    assert_eq!(v.outcome, ServerOutcome::NonLocalScriptKey);
    let m = v.message.unwrap();
    assert!(m.contains("declares no keys (EVAL … 0) but its body touches keys (`redis.call('SET', ARGV[1], 'v')`)"), "{m}");
    assert!(
        m.contains(&format!("only {owner} (the owner of {key}) runs it")),
        "{m}"
    );
    // Only the sha: it may touch keys.
    let v = as_written(&batches[1], &topo);
    assert_eq!(v.outcome, ServerOutcome::NonLocalScriptKey);
    assert!(v.message.unwrap().contains("may touch keys"));
    // A body that touches no key runs anywhere.
    assert_eq!(as_written(&batches[2], &topo).outcome, ServerOutcome::Ok);
    // A capture: the SCRIPT LOAD gives the EVALSHA its body, and the client is told.
    let capture = format!(
        "1.0 [0 10.0.0.1:1] \"SCRIPT\" \"LOAD\" \"{body}\"\n1.1 [0 10.0.0.1:1] \"EVALSHA\" \"{sha}\" \"0\" \"{key}\"\n1.2 [0 10.0.0.1:1] \"GET\" \"x\"\n"
    );
    let (captured, _) = parse_monitor(&capture).unwrap();
    assert_eq!(captured.len(), 1);
    let v = as_written(&captured[0], &topo);
    assert_eq!(v.outcome, ServerOutcome::NonLocalScriptKey);
    assert!(v.message.unwrap().contains("its body touches keys"));
    let r = simulate_client(
        &captured[0],
        &topo,
        Client::RedisPy,
        &NetworkModel::default(),
    );
    assert_eq!(r.outcome, Outcome::ServerError, "{r:?}");
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "commands_per_node_equal_the_model_for_every_strategy",
        commands_per_node_equal_the_model_for_every_strategy,
    ),
    (
        "twemproxy_profile_equals_a_real_nutcracker",
        twemproxy_profile_equals_a_real_nutcracker,
    ),
    (
        "redirects_equal_a_real_cluster",
        redirects_equal_a_real_cluster,
    ),
    (
        "batches_from_a_real_monitor_capture",
        batches_from_a_real_monitor_capture,
    ),
    ("redis_py_equals_its_profile", redis_py_equals_its_profile),
    ("ioredis_equals_its_profile", ioredis_equals_its_profile),
    (
        "node_redis_equals_its_profile",
        node_redis_equals_its_profile,
    ),
    ("redis_rs_equals_its_profile", redis_rs_equals_its_profile),
    (
        "captures_of_real_libraries_get_their_verdicts",
        captures_of_real_libraries_get_their_verdicts,
    ),
    (
        "a_capture_streams_to_the_same_report",
        a_capture_streams_to_the_same_report,
    ),
    (
        "batch_files_are_bounded_whatever_their_kind",
        batch_files_are_bounded_whatever_their_kind,
    ),
    (
        "a_script_declaring_no_keys_is_refused_where_simulate_says",
        a_script_declaring_no_keys_is_refused_where_simulate_says,
    ),
];
