//! Agreement with a real Redis server: `CLUSTER KEYSLOT` for every kind of key, and
//! redis-cli's own quoted `--scan` output read back by keyplan's reader.

use crate::support::{RedisServer, Reply, Resp, Rng, json_of, keyplan, require_binary};
use keyplan::keys::{InputFormat, ReadOptions, for_each_record, quote};
use keyplan::slot::key_slot;
use std::collections::BTreeSet;
use std::process::Command;

/// 10,000+ keys: the spec's examples, random binary keys (NUL, CR, LF, bytes ≥ 0x80, braces),
/// keys built around tags, the empty key, and keys over 64 KB.
fn test_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = [
        "123456789",
        "somekey",
        "foo{hash_tag}",
        "bar{hash_tag}",
        "{user1000}.following",
        "hello",
        "user:1000",
        "{user:1000}:profile",
        "x",
        "foo{}{bar}",
        "foo{{bar}}zap",
        "foo{bar}{zap}",
        "{}",
        "{{}}",
        "",
        "{}foo",
        "{",
        "}",
        "}{",
        "{a",
        "a}",
        "{06S}key",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let alphabet: &[u8] = b"{}{}ab:\x00\r\n\t\"\\ \x7f\x80\xff\xc3\xa9z0";
    let mut seen: BTreeSet<Vec<u8>> = keys.iter().cloned().collect();
    while seen.len() < 10_000 {
        let len = match rng.below(10) {
            0 => rng.below(4),
            1..=6 => 1 + rng.below(40),
            7 | 8 => 1 + rng.below(300),
            _ => 1 + rng.below(3000),
        } as usize;
        let key: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(3) == 0 {
                    alphabet[rng.below(alphabet.len() as u64) as usize]
                } else {
                    rng.next() as u8
                }
            })
            .collect();
        if seen.insert(key.clone()) {
            keys.push(key);
        }
    }
    for (i, size) in [65_537usize, 70_000, 100_000, 131_072]
        .into_iter()
        .enumerate()
    {
        let mut big = vec![b'k'; size];
        big[size / 2] = b'\n';
        big[size - 3] = 0;
        keys.push(big.clone());
        // The same size with a tag in the middle.
        big[1000] = b'{';
        big[1000 + i + 2] = b'}';
        keys.push(big);
    }
    keys
}

fn keyslots(conn: &mut Resp, keys: &[Vec<u8>]) -> Vec<u16> {
    let mut out = Vec::with_capacity(keys.len());
    for batch in keys.chunks(500) {
        let mut buf = Vec::new();
        for k in batch {
            Resp::encode(&mut buf, &[b"CLUSTER", b"KEYSLOT", k]);
        }
        conn.send(&buf).expect("send");
        for _ in batch {
            match conn.read().expect("reply") {
                Reply::Int(n) => out.push(n as u16),
                other => panic!("CLUSTER KEYSLOT replied {other:?}"),
            }
        }
    }
    out
}

fn key_slot_equals_cluster_keyslot_of_a_real_server() {
    let Some(bin) = require_binary("redis-server") else {
        return;
    };
    let server = RedisServer::start(&bin, true);
    let mut conn = server.connect();
    let keys = test_keys();
    assert!(keys.len() >= 10_000);
    let real = keyslots(&mut conn, &keys);
    let mut mismatches = 0;
    for (k, want) in keys.iter().zip(&real) {
        if key_slot(k) != *want {
            mismatches += 1;
            eprintln!(
                "mismatch: {} -> keyplan {} redis {want}",
                quote(&k[..k.len().min(80)]),
                key_slot(k)
            );
        }
    }
    assert_eq!(
        mismatches,
        0,
        "{mismatches} of {} keys disagree",
        keys.len()
    );

    // The CLI agrees too, reading the keys from a quoted dump.
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("keys.quoted");
    let text: String = keys.iter().map(|k| quote(k) + "\n").collect();
    std::fs::write(&dump, text).unwrap();
    let v = json_of(
        keyplan()
            .args(["slot", "--format", "json", "--keys"])
            .arg(&dump),
    );
    let slots: Vec<u16> = v["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slot"].as_u64().unwrap() as u16)
        .collect();
    assert_eq!(
        slots, real,
        "CLI slots (in input order) equal CLUSTER KEYSLOT"
    );

    // And so do the per-slot counts of the bulk path.
    let out = keyplan()
        .args(["slot", "--counts", "--format", "json", "--keys"])
        .arg(&dump)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut want = std::collections::BTreeMap::<u64, u64>::new();
    for s in &real {
        *want.entry(*s as u64).or_default() += 1;
    }
    let got: std::collections::BTreeMap<u64, u64> = v["slots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["slot"].as_u64().unwrap(), r["keys"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, want);
}

fn redis_cli_quoted_scan_output_round_trips() {
    let (Some(bin), Some(cli)) = (require_binary("redis-server"), require_binary("redis-cli"))
    else {
        return;
    };
    let server = RedisServer::start(&bin, true);
    let mut conn = server.connect();
    assert_eq!(
        conn.call(&[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"16383"])
            .unwrap(),
        Reply::Status("OK".into())
    );
    // Wait for the one-node cluster to serve its slots.
    for _ in 0..200 {
        if let Ok(Reply::Bulk(Some(info))) = conn.call(&[b"CLUSTER", b"INFO"])
            && String::from_utf8_lossy(&info).contains("cluster_state:ok")
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let keys = test_keys();
    for batch in keys.chunks(500) {
        let mut buf = Vec::new();
        for k in batch {
            Resp::encode(&mut buf, &[b"SET", k, b"1"]);
        }
        conn.send(&buf).unwrap();
        for _ in batch {
            let r = conn.read().unwrap();
            assert_eq!(r, Reply::Status("OK".into()));
        }
    }
    let out = Command::new(cli)
        .args(["-p", &server.port.to_string(), "--no-raw", "--scan"])
        .output()
        .expect("run redis-cli --scan");
    assert!(out.status.success());
    let opts = ReadOptions {
        format: InputFormat::Auto,
        strict: true,
        ..ReadOptions::default()
    };
    let mut read = BTreeSet::new();
    let summary = for_each_record(&out.stdout[..], &opts, |_, r| {
        read.insert(r.key.to_vec());
    })
    .expect("redis-cli's quoted output parses");
    assert_eq!(summary.format, Some(keyplan::keys::DumpFormat::Quoted));
    let want: BTreeSet<Vec<u8>> = keys.into_iter().collect();
    assert_eq!(read.len(), want.len());
    assert!(
        read == want,
        "keys read back from redis-cli differ from the keys written"
    );
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "key_slot_equals_cluster_keyslot_of_a_real_server",
        key_slot_equals_cluster_keyslot_of_a_real_server,
    ),
    (
        "redis_cli_quoted_scan_output_round_trips",
        redis_cli_quoted_scan_output_round_trips,
    ),
];
