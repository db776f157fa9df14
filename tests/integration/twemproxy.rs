//! Placement under a real `nutcracker` (twemproxy): keys written through pools with every hash,
//! both key-mapping distributions, weights, names and hash tags must land exactly where
//! keyplan says.

use crate::support::{Nutcracker, RedisServer, Reply, Resp, free_port, require_binary};
use keyplan::topology::Topology;
use keyplan::topology::hashes::TwemHash;
use std::collections::BTreeMap;

/// (pool name, distribution, hash, hash_tag, servers)
type Pool<'a> = (String, &'a str, &'a str, Option<&'a str>, Vec<String>);

/// Keys that exercise the hashes: ASCII, bytes >= 0x80 (sign extension), tags, empty tags,
/// keys differing only in their last characters, every length 1..40.
fn keys(prefix: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..1500u32 {
        out.push(format!("{prefix}:user:{i}").into_bytes());
    }
    for i in 0..200u32 {
        out.push(format!("{prefix}:{{tag{}}}:item:{i}", i % 9).into_bytes());
        out.push(format!("{prefix}:$t{}$:x{i}", i % 5).into_bytes());
        out.push(format!("{prefix}:{{}}:e{i}").into_bytes());
        let mut k = format!("{prefix}:été:").into_bytes();
        k.extend_from_slice(&[0x80 + (i % 120) as u8, b'z', (i % 250) as u8 + 1]);
        out.push(k);
    }
    for n in 1..40usize {
        out.push(format!("{prefix}{}", "k".repeat(n)).into_bytes());
    }
    out.retain(|k| !k.contains(&b'\r') && !k.contains(&b'\n'));
    out
}

fn placement_equals_a_real_nutcracker() {
    let (Some(redis), Some(nut)) = (require_binary("redis-server"), require_binary("nutcracker"))
    else {
        return;
    };
    let backends: Vec<RedisServer> = (0..4).map(|_| RedisServer::start(&redis, false)).collect();
    let b = |i: usize| backends[i].port;
    // (pool name, distribution, hash, hash_tag, servers)
    let mut pools: Vec<Pool> = Vec::new();
    for (name, _) in TwemHash::ALL {
        pools.push((
            format!("k_{name}"),
            "ketama",
            name,
            None,
            (0..3).map(|i| format!("127.0.0.1:{}:1", b(i))).collect(),
        ));
    }
    pools.push((
        "weighted_named".into(),
        "ketama",
        "fnv1a_64",
        Some("{}"),
        vec![
            format!("127.0.0.1:{}:3 redis1", b(0)),
            format!("127.0.0.1:{}:1 redis2", b(1)),
            format!("127.0.0.1:{}:2 redis3", b(2)),
        ],
    ));
    pools.push((
        "md5_dollar".into(),
        "ketama",
        "md5",
        Some("$$"),
        (0..4)
            .map(|i| format!("127.0.0.1:{}:{}", b(i), i + 1))
            .collect(),
    ));
    pools.push((
        "modula_murmur".into(),
        "modula",
        "murmur",
        Some("{}"),
        vec![
            format!("127.0.0.1:{}:2", b(0)),
            format!("127.0.0.1:{}:1", b(3)),
            format!("127.0.0.1:{}:3", b(1)),
        ],
    ));
    pools.push((
        "modula_crc32a".into(),
        "modula",
        "crc32a",
        None,
        (0..4).map(|i| format!("127.0.0.1:{}:1", b(i))).collect(),
    ));
    let mut conf = String::new();
    let mut listen = Vec::new();
    for (name, dist, hash, tag, servers) in &pools {
        let port = free_port();
        listen.push(port);
        conf.push_str(&format!(
            "{name}:\n  listen: 127.0.0.1:{port}\n  hash: {hash}\n  distribution: {dist}\n  redis: true\n  auto_eject_hosts: false\n"
        ));
        if let Some(t) = tag {
            conf.push_str(&format!("  hash_tag: \"{t}\"\n"));
        }
        conf.push_str("  servers:\n");
        for s in servers {
            conf.push_str(&format!("   - {s}\n"));
        }
    }
    let proxy = Nutcracker::start(&nut, &conf);

    let mut expected: Vec<(usize, Vec<u8>, String)> = Vec::new(); // (pool, key, expected address)
    for (p, (name, ..)) in pools.iter().enumerate() {
        let mut conn = proxy.connect(listen[p]);
        let ring = match Topology::parse_as(
            &conf,
            keyplan::topology::TopologyFormat::Twemproxy,
            &keyplan::topology::TopologyOptions {
                allow_partial: false,
                pool: Some(name.clone()),
            },
        )
        .unwrap()
        {
            Topology::Ring(r) => r,
            other => panic!("{other:?}"),
        };
        let ks = keys(&format!("p{p}"));
        for batch in ks.chunks(200) {
            let mut buf = Vec::new();
            for k in batch {
                Resp::encode(&mut buf, &[b"SET", k, name.as_bytes()]);
            }
            conn.send(&buf).unwrap();
            for _ in batch {
                assert_eq!(
                    conn.read().unwrap(),
                    Reply::Status("OK".into()),
                    "pool {name}"
                );
            }
        }
        for k in ks {
            let i = ring.node_of(&k).expect("ketama and modula place every key");
            let addr = ring.servers()[i].node.address.clone().unwrap();
            expected.push((p, k, addr));
        }
    }
    // Where did each key land?
    let mut actual: BTreeMap<(String, Vec<u8>), String> = BTreeMap::new();
    for s in &backends {
        let mut c = s.connect();
        let Reply::Array(keys) = c.call(&[b"KEYS", b"*"]).unwrap() else {
            panic!("KEYS")
        };
        for k in keys {
            let Reply::Bulk(Some(k)) = k else { continue };
            let Reply::Bulk(Some(pool)) = c.call(&[b"GET", &k]).unwrap() else {
                panic!("GET")
            };
            actual.insert(
                (String::from_utf8(pool).unwrap(), k),
                format!("127.0.0.1:{}", s.port),
            );
        }
    }
    let mut wrong: BTreeMap<String, usize> = BTreeMap::new();
    for (p, k, addr) in &expected {
        let pool = &pools[*p].0;
        match actual.get(&(pool.clone(), k.clone())) {
            Some(a) if a == addr => {}
            got => {
                let n = wrong.entry(pool.clone()).or_default();
                if *n < 3 {
                    eprintln!(
                        "{pool}: {:?} expected {addr}, got {got:?}",
                        String::from_utf8_lossy(k)
                    );
                }
                *n += 1;
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "keys placed differently from nutcracker, per pool: {wrong:?}"
    );
    assert!(expected.len() > 20_000);
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[(
    "placement_equals_a_real_nutcracker",
    placement_equals_a_real_nutcracker,
)];
