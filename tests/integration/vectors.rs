//! The reference vectors (tests/fixtures/vectors.json): Redis
//! slots, every twemproxy hash, twemproxy ketama rings, Jedis' MurmurHash64A and rings, jump.

use keyplan::slot::key_slot;
use keyplan::topology::Node;
use keyplan::topology::hashes::{TwemHash, jump, murmur64a_jedis};
use keyplan::topology::ring::{Ring, RingKind, RingServer};
use serde_json::Value;

fn vectors() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/vectors.json"
    ))
    .expect("tests/fixtures/vectors.json");
    serde_json::from_str(&text).expect("valid json")
}

fn server(name: &str, ring_name: Option<&str>, weight: u32) -> RingServer {
    RingServer {
        node: Node {
            name: name.to_string(),
            id: None,
            address: None,
            flags: Vec::new(),
            replicas: 0,
        },
        ring_name: ring_name.map(str::to_string),
        weight,
    }
}

fn key_of(row: &Value) -> Vec<u8> {
    match row.get("key_utf8_hex").and_then(Value::as_str) {
        Some(hex) => (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect(),
        None => row["key"].as_str().unwrap().as_bytes().to_vec(),
    }
}

fn redis_cluster_keyslot() {
    let v = vectors();
    for (k, slot) in v["redis_cluster_keyslot"].as_object().unwrap() {
        assert_eq!(key_slot(k.as_bytes()) as u64, slot.as_u64().unwrap(), "{k}");
    }
}

fn every_twemproxy_hash_and_the_three_server_rings() {
    let v = vectors();
    let t = &v["twemproxy_hashes_and_ketama_3servers_127.0.0.1:6379-6381_w1"];
    let names: Vec<String> = t["servers_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let servers: Vec<RingServer> = names.iter().map(|n| server(n, Some(n), 1)).collect();
    let fnv = Ring::new(
        RingKind::Ketama {
            hash: TwemHash::Fnv1a64,
        },
        servers.clone(),
        None,
        String::new(),
    );
    let md5 = Ring::new(
        RingKind::Ketama {
            hash: TwemHash::Md5,
        },
        servers,
        None,
        String::new(),
    );
    let rows = t["rows"].as_array().unwrap();
    assert!(rows.len() >= 10);
    for row in rows {
        let key = key_of(row);
        for (name, h) in TwemHash::ALL {
            assert_eq!(
                h.hash(&key) as u64,
                row[name].as_u64().unwrap(),
                "{name}({:?})",
                row["key"]
            );
        }
        assert_eq!(
            fnv.node_of(&key),
            Some(row["ketama_fnv1a64_server"].as_u64().unwrap() as usize)
        );
        assert_eq!(
            md5.node_of(&key),
            Some(row["ketama_md5_server"].as_u64().unwrap() as usize)
        );
    }
}

fn weighted_named_and_25_server_rings() {
    let v = vectors();
    let t = &v["twemproxy_ketama_weighted_named_redis1w3_redis2w1_redis3w2"];
    let servers = vec![
        server("redis1", Some("redis1"), 3),
        server("redis2", Some("redis2"), 1),
        server("redis3", Some("redis3"), 2),
    ];
    let fnv = Ring::new(
        RingKind::Ketama {
            hash: TwemHash::Fnv1a64,
        },
        servers.clone(),
        None,
        String::new(),
    );
    let md5 = Ring::new(
        RingKind::Ketama {
            hash: TwemHash::Md5,
        },
        servers,
        None,
        String::new(),
    );
    let points: Vec<u64> = t["points_per_server"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(
        fnv.points_per_server()
            .iter()
            .map(|&p| p as u64)
            .collect::<Vec<_>>(),
        points
    );
    for row in t["rows"].as_array().unwrap() {
        let key = key_of(row);
        assert_eq!(
            fnv.node_of(&key),
            Some(row["ketama_fnv1a64_server"].as_u64().unwrap() as usize),
            "{:?}",
            row["key"]
        );
        assert_eq!(
            md5.node_of(&key),
            Some(row["ketama_md5_server"].as_u64().unwrap() as usize),
            "{:?}",
            row["key"]
        );
    }
    let t = &v["twemproxy_ketama_25_servers_a..y_w1"];
    let servers: Vec<RingServer> = (b'a'..=b'y')
        .map(|c| {
            let n = (c as char).to_string();
            server(&n, Some(&n), 1)
        })
        .collect();
    let ring = Ring::new(
        RingKind::Ketama {
            hash: TwemHash::Fnv1a64,
        },
        servers,
        None,
        String::new(),
    );
    let each = t["points_per_server_each"].as_u64().unwrap() as usize;
    assert!(ring.points_per_server().iter().all(|&p| p == each));
    for row in t["rows"].as_array().unwrap() {
        let key = key_of(row);
        assert_eq!(
            ring.node_of(&key),
            Some(row["ketama_fnv1a64_server"].as_u64().unwrap() as usize),
            "{:?}",
            row["key"]
        );
    }
}

fn jedis_hash_and_rings() {
    let v = vectors();
    for (k, h) in v["jedis_murmur64a_seed_0x1234ABCD_signed"]
        .as_object()
        .unwrap()
    {
        assert_eq!(murmur64a_jedis(k.as_bytes()), h.as_i64().unwrap(), "{k}");
    }
    let unnamed: Vec<RingServer> = (0..3)
        .map(|i| server(&format!("shard{i}"), None, 1))
        .collect();
    let ring = Ring::new(
        RingKind::Jedis {
            version: 3,
            key_tag: false,
        },
        unnamed.clone(),
        None,
        String::new(),
    );
    for (k, s) in v["jedis_sharding_3_unnamed_shards"].as_object().unwrap() {
        assert_eq!(
            ring.node_of(k.as_bytes()),
            Some(s.as_u64().unwrap() as usize),
            "{k}"
        );
    }
    // 4.x JedisSharding uses the same unnamed node names.
    let ring4 = Ring::new(
        RingKind::Jedis {
            version: 4,
            key_tag: false,
        },
        unnamed,
        None,
        String::new(),
    );
    assert_eq!(ring4.node_of(b"foo"), ring.node_of(b"foo"));
    let named = vec![
        server("host1:6379", Some("host1:6379"), 1),
        server("host2:6379", Some("host2:6379"), 2),
        server("host3:6379", Some("host3:6379"), 1),
    ];
    let ring = Ring::new(
        RingKind::Jedis {
            version: 3,
            key_tag: false,
        },
        named,
        None,
        String::new(),
    );
    for (k, s) in v["jedis3_sharding_named_host1w1_host2w2_host3w1"]
        .as_object()
        .unwrap()
    {
        assert_eq!(
            ring.node_of(k.as_bytes()),
            Some(s.as_u64().unwrap() as usize),
            "{k}"
        );
    }
}

fn jump_consistent_hash() {
    let v = vectors();
    for row in v["jump_consistent_hash"].as_array().unwrap() {
        let r = row.as_array().unwrap();
        let (key, n, want) = (
            r[0].as_u64().unwrap(),
            r[1].as_u64().unwrap(),
            r[2].as_u64().unwrap(),
        );
        assert_eq!(jump(key, n as u32) as u64, want, "jump({key}, {n})");
    }
}

/// libketama's own test: `ketama_test ketama.servers` prints an empty line, then for keys
/// "0".."999999" `"%u %u %s\n"` (key hash, the point it lands on, the server); the md5 of that
/// output is published in libketama/test.sh.
fn libketama_published_checksum() {
    use md5::{Digest, Md5};
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ketama.servers"
    ))
    .unwrap();
    let ring = keyplan::topology::config::parse_libketama(&text).unwrap();
    assert_eq!(ring.points_per_server().iter().sum::<usize>(), 1264);
    let mut md5 = Md5::new();
    md5.update(b"\n");
    let mut line = String::new();
    for i in 0..1_000_000u32 {
        let k = i.to_string();
        let (point, server) = ring.point_of(k.as_bytes()).unwrap();
        line.clear();
        use std::fmt::Write as _;
        let _ = writeln!(
            line,
            "{} {} {}",
            keyplan::topology::hashes::md5_u32(k.as_bytes()),
            point,
            ring.servers()[server].node.name
        );
        md5.update(line.as_bytes());
    }
    let digest: String = md5.finalize().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(digest, "5672b131391f5aa2b280936aec1eea74");
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    ("redis_cluster_keyslot", redis_cluster_keyslot),
    (
        "every_twemproxy_hash_and_the_three_server_rings",
        every_twemproxy_hash_and_the_three_server_rings,
    ),
    (
        "weighted_named_and_25_server_rings",
        weighted_named_and_25_server_rings,
    ),
    ("jedis_hash_and_rings", jedis_hash_and_rings),
    ("jump_consistent_hash", jump_consistent_hash),
    ("libketama_published_checksum", libketama_published_checksum),
];
