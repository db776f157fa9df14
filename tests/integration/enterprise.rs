//! Redis Enterprise / Redis Cloud databases (`enterprise:` topologies). No Enterprise server
//! runs here, so the proxy's rules are checked against its documentation (the unit tests of
//! `simulate::verdict` and `lint`); what can be checked against real software is:
//!
//! - the hashing rules: each key's tag under several policies equals what Perl's regex engine
//!   (the engine PCRE follows) captures with the same rules anchored at the start of the key,
//!   first match wins;
//! - the slot of a tag: equal to a real redis-server's `CLUSTER KEYSLOT` of the tag.

use crate::support::{RedisServer, Reply, Resp, Rng, json_of, keyplan, require_binary};
use std::collections::BTreeSet;
use std::process::Command;

/// The policies: the `standard` rules, and custom rule lists with classes, alternation,
/// lazy and possessive quantifiers, an empty catch-all tag and literal braces.
const POLICIES: &[&[&str]] = &[
    &[".*{(?<tag>.*)}.*", "(?<tag>.*)"],
    &[
        r"order:(?<tag>\d+):.*",
        r"user:(?<tag>[^:]+)(:.*)?",
        r"(cart|wish)list:(?<tag>\w+?)_.*",
        r"[a-z]++\|(?<tag>[a-z0-9]{2,4})",
    ],
    &[
        r"(?<tag>[^{]*){",
        r"ses(sion)?:(?<tag>[0-9a-f]{8})",
        r"(?i)TENANT-(?<tag>\d+)/.*",
        r".*(?<tag>)",
    ],
];

/// Keys of the shapes the rules look for, brace puzzles, and random printable text.
fn keys() -> Vec<String> {
    let mut out: Vec<String> = [
        "order:17:items",
        "order:17:total",
        "order:x:items",
        "xorder:17:items",
        "user:ann",
        "user:ann:cart",
        "user::x",
        "cartlist:bob_1",
        "wishlist:b_c_d",
        "abc|z9",
        "abc|z9xyz",
        "ABC|z9",
        "{}foo",
        "{}bar",
        "{foo}bar}",
        "{foo}qux}",
        "a{b}c{d}e",
        "foo{{bar}}zap",
        "{",
        "}",
        "session:deadbeef",
        "ses:0123abcd:x",
        "tenant-42/a",
        "TeNaNt-42/b",
        "plain",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = Rng(0x5151_2024_0000_0001);
    let pieces = [
        "order:", "user:", "cart", "wish", "list:", "session:", "ses:", "tenant-", "TENANT-", "{",
        "}", ":", "|", "_", "/", "17", "ann", "deadbeef", "x", "9", "ab",
    ];
    let mut seen: BTreeSet<String> = out.iter().cloned().collect();
    while seen.len() < 6000 {
        let n = 1 + rng.below(6) as usize;
        let mut k = String::new();
        for _ in 0..n {
            if rng.below(4) == 0 {
                // A printable ASCII character (no newline: PCRE's `.` stops at one).
                k.push((b' ' + rng.below(95) as u8) as char);
            } else {
                k.push_str(pieces[rng.below(pieces.len() as u64) as usize]);
            }
        }
        if seen.insert(k.clone()) {
            out.push(k);
        }
    }
    out
}

/// Each key's tag under `rules` as Perl captures it (`None`: no rule matches).
fn perl_tags(perl: &std::path::Path, rules: &[&str], keys: &[String]) -> Vec<Option<String>> {
    let dir = tempfile::tempdir().unwrap();
    let rules_file = dir.path().join("rules");
    let keys_file = dir.path().join("keys");
    std::fs::write(&rules_file, rules.join("\n") + "\n").unwrap();
    std::fs::write(&keys_file, keys.join("\n") + "\n").unwrap();
    let script = r#"
        open(my $r, '<', $ARGV[0]) or die; my @rules = map { chomp; qr/\A(?:$_)/ } <$r>;
        open(my $k, '<', $ARGV[1]) or die;
        while (my $key = <$k>) {
            chomp $key; my $out = "\x01";
            for my $re (@rules) { if ($key =~ $re) { $out = defined $+{tag} ? $+{tag} : ''; last } }
            print "$out\n";
        }
    "#;
    let out = Command::new(perl)
        .args(["-e", script])
        .arg(&rules_file)
        .arg(&keys_file)
        .output()
        .expect("perl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let tags: Vec<Option<String>> = text
        .lines()
        .map(|l| (l != "\x01").then(|| l.to_string()))
        .collect();
    assert_eq!(tags.len(), keys.len());
    tags
}

fn topology_yaml(rules: &[&str]) -> String {
    let mut y = String::from("enterprise:\n  shards: 3\n  hashing: custom\n  rules:\n");
    for r in rules {
        y.push_str(&format!("    - '{}'\n", r.replace('\'', "''")));
    }
    y
}

fn keyslots(conn: &mut Resp, keys: &[&str]) -> Vec<u16> {
    let mut buf = Vec::new();
    for k in keys {
        Resp::encode(&mut buf, &[b"CLUSTER", b"KEYSLOT", k.as_bytes()]);
    }
    conn.send(&buf).expect("send");
    keys.iter()
        .map(|_| match conn.read().expect("reply") {
            Reply::Int(n) => n as u16,
            other => panic!("CLUSTER KEYSLOT replied {other:?}"),
        })
        .collect()
}

fn hashing_rules_agree_with_perl_and_slots_with_a_real_server() {
    let Some(perl) = require_binary("perl") else {
        return;
    };
    let Some(redis) = require_binary("redis-server") else {
        return;
    };
    let server = RedisServer::start(&redis, true);
    let mut conn = server.connect();
    let keys = keys();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("keys.txt");
    std::fs::write(&dump, keys.join("\n") + "\n").unwrap();
    let (mut matched, mut refused, mut checked_slots) = (0usize, 0usize, 0usize);
    for rules in POLICIES {
        let want = perl_tags(&perl, rules, &keys);
        let topo = dir.path().join("enterprise.yaml");
        std::fs::write(&topo, topology_yaml(rules)).unwrap();
        let v = json_of(
            keyplan()
                .args([
                    "slot",
                    "--format",
                    "json",
                    "--input-format",
                    "raw",
                    "--topology",
                ])
                .arg(&topo)
                .arg("--keys")
                .arg(&dump),
        );
        let rows = v["keys"].as_array().unwrap();
        assert_eq!(rows.len(), keys.len());
        // (tag, keyplan's slot) of the keys a rule matches.
        let mut tagged: Vec<(String, u16)> = Vec::new();
        for ((k, row), want) in keys.iter().zip(rows).zip(&want) {
            let slot = row["slot"].as_u64();
            match want {
                None => {
                    assert_eq!(slot, None, "{rules:?}: {k:?} matches no rule (Perl)");
                    refused += 1;
                }
                Some(tag) => {
                    assert_eq!(
                        row["hashed"].as_str(),
                        Some(tag.as_str()),
                        "{rules:?}: the tag of {k:?}"
                    );
                    matched += 1;
                    tagged.push((tag.clone(), slot.expect("a matched key has a slot") as u16));
                }
            }
        }
        // The slot is CRC16 of the tag: the server's CLUSTER KEYSLOT of the tag, for tags the
        // server hashes whole (no `{…}` with content inside).
        let whole: Vec<&(String, u16)> = tagged
            .iter()
            .filter(|(t, _)| {
                let Some(open) = t.find('{') else {
                    return true;
                };
                t[open + 1..].find('}').is_none_or(|close| close == 0)
            })
            .collect();
        let real = keyslots(
            &mut conn,
            &whole.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        );
        for ((t, slot), want) in whole.iter().zip(&real) {
            assert_eq!(slot, want, "the slot of the tag {t:?}");
        }
        checked_slots += whole.len();
    }
    eprintln!(
        "{} policies × {} keys: {matched} tags equal Perl's, {refused} keys refused by both, {checked_slots} slots equal CLUSTER KEYSLOT",
        POLICIES.len(),
        keys.len()
    );
    assert!(matched > 5000 && refused > 500 && checked_slots > 5000);
}

/// The CLI judges a scheme's batches under the database's rules: what the proxy splits passes,
/// a transaction over two slots and a key no rule matches fail, and the same scheme on Redis
/// Cluster fails otherwise.
fn lint_and_simulate_judge_batches_under_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = dir.path().join("keyplan.yaml");
    std::fs::write(
        &scheme,
        "version: 1
vars:
  user_id:  { kind: int, cardinality: 1000000 }
  order_id: { kind: int, cardinality: 5000000 }
keys:
  profile:     { pattern: \"user:<user_id>:profile\" }
  cart:        { pattern: \"user:<user_id>:cart\" }
  order_items: { pattern: \"order:<order_id>:items\" }
  order_total: { pattern: \"order:<order_id>:total\" }
  session:     { pattern: \"session:<user_id>\" }
batches:
  checkout: { command: multi, keys: [order_items, order_total], same: [order_id] }
  user:     { command: multi, keys: [profile, cart], same: [user_id] }
  both:     { command: mget, keys: [profile, order_items] }
  sess:     { command: multi, keys: [session, profile], same: [user_id] }
",
    )
    .unwrap();
    let custom = dir.path().join("custom.yaml");
    std::fs::write(
        &custom,
        "enterprise:
  shards: 3
  hashing: custom
  rules:
    - 'order:(?<tag>\\d+):.*'
    - 'user:(?<tag>[^:]+).*'
",
    )
    .unwrap();
    // (exit status, the lines of the KP301 findings)
    let lint = |topo: &[&str]| -> (i32, Vec<u64>) {
        let out = keyplan()
            .args(["lint", "--format", "json", "--scheme"])
            .arg(&scheme)
            .args(topo)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        let kp301 = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == "KP301")
            .map(|d| d["line"].as_u64().unwrap())
            .collect();
        (out.status.code().unwrap(), kp301)
    };
    // Redis Cluster: every batch is cross-slot.
    assert_eq!(lint(&["--masters", "3"]), (1, vec![12, 13, 14, 15]));
    // The custom rules tag orders and users: only the session batch fails (no rule matches).
    assert_eq!(
        lint(&["--topology", custom.to_str().unwrap()]),
        (1, vec![15])
    );

    // simulate's verdicts on observed batches.
    let batches = dir.path().join("batches.txt");
    std::fs::write(
        &batches,
        "MGET user:1:a order:2:b
DEL user:1:a order:2:b
MULTI SET user:1:a 1; SET user:2:b 2
MULTI SET user:ann:cart 1; SET user:ann:x 2
GET plain:key
",
    )
    .unwrap();
    let verdicts = |topo: &std::path::Path| -> Vec<String> {
        let v = json_of(
            keyplan()
                .args(["simulate", "--format", "json", "--topology"])
                .arg(topo)
                .arg("--batches")
                .arg(&batches),
        );
        v["batches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["outcome"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        verdicts(&custom),
        ["ok", "ok", "crossslot", "ok", "unhashable"]
    );
    // analyze places keys by the rules and names the ones no rule matches.
    let dump = dir.path().join("keys.txt");
    std::fs::write(
        &dump,
        "order:1:a\norder:1:b\nuser:ann:x\nnothing\nplain:2\n",
    )
    .unwrap();
    let v = json_of(
        keyplan()
            .args(["analyze", "--format", "json", "--topology"])
            .arg(&custom)
            .arg(&dump),
    );
    let note = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "unhashable")
        .expect("an unhashable note");
    assert_eq!(note["keys"], 2);
    assert_eq!(note["examples"], serde_json::json!(["nothing", "plain:2"]));

    let aa = dir.path().join("aa.yaml");
    std::fs::write(
        &aa,
        "enterprise:\n  shards: 2\n  hashing: standard\n  active_active: true\n",
    )
    .unwrap();
    assert_eq!(
        verdicts(&aa),
        ["ok", "crossslot", "crossslot", "crossslot", "ok"]
    );
}

/// A bad `enterprise:` topology names the line and says what to write.
fn bad_enterprise_topologies_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "enterprise:\n  shards: 3\n",
            "needs `hashing: redis`, `standard` or `custom`",
        ),
        (
            "enterprise:\n  shards: 3\n  hashing: custom\n",
            "`hashing: custom` needs `rules:`",
        ),
        (
            "enterprise:\n  shards: 3\n  hashing: custom\n  rules:\n    - '(?<tag>.*)'\n    - '(?<id>x)'\n",
            "line 6: enterprise.rules: rule 2 `(?<id>x)` has no `tag` group",
        ),
        (
            "enterprise:\n  shards: 3\n  hashing: custom\n  rules:\n    - '(?<tag>a'\n",
            "line 5: enterprise.rules: rule 1 `(?<tag>a` is not a valid PCRE pattern",
        ),
        (
            "enterprise:\n  shards: 3\n  hashing: fancy\n",
            "line 3: enterprise.hashing 'fancy': use redis, standard or custom",
        ),
        (
            "enterprise:\n  hashing: redis\n",
            "needs `shards: N` or `nodes:`",
        ),
    ];
    for (yaml, want) in cases {
        let topo = dir.path().join("t.yaml");
        std::fs::write(&topo, yaml).unwrap();
        let out = keyplan()
            .args(["slot", "--topology"])
            .arg(&topo)
            .arg("k")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{yaml}");
        assert!(err.contains(want), "{yaml}\nwanted: {want}\ngot: {err}");
    }
}

/// A custom rule that backtracks catastrophically (`(a+)+$` on `aaa…b`) is bounded on every
/// key: 1,000 such keys run through `simulate` and `analyze` and finish; each key is unplaced
/// (never placed by the catch-all rule after it), and `simulate` warns naming the rule and the
/// number of keys.
fn a_catastrophic_rule_is_bounded_and_its_keys_unplaced() {
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("t.yaml");
    std::fs::write(&topo, topology_yaml(&["(?<tag>(a+)+$)", "(?<tag>.*)"])).unwrap();
    let keys: Vec<String> = (0..1000)
        .map(|i| format!("{}b{i}", "a".repeat(26 + i % 5)))
        .collect();
    let batches = dir.path().join("batches.txt");
    let lines: String = keys
        .chunks(2)
        .map(|p| format!("MGET {} {}\n", p[0], p[1]))
        .collect();
    std::fs::write(&batches, lines).unwrap();
    let out = keyplan()
        .args([
            "simulate",
            "--format",
            "json",
            "--strategy",
            "pipeline",
            "--topology",
        ])
        .arg(&topo)
        .arg("--batches")
        .arg(&batches)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdicts = v["batches"].as_array().unwrap();
    assert_eq!(verdicts.len(), 500);
    for b in verdicts {
        assert_eq!(b["outcome"], "unhashable", "{b}");
        let m = b["message"].as_str().unwrap();
        assert!(
            m.starts_with("rule 1 `(?<tag>(a+)+$)` of the database's custom hashing policy could not be matched on the key"),
            "{m}"
        );
    }
    assert!(
        stderr.contains("warning: rule 1 `(?<tag>(a+)+$)` of the custom hashing policy could not be matched on 1000 key(s) within 100000 backtracking steps a key (match limit exceeded)"),
        "{stderr}"
    );
    // analyze counts them unplaced.
    let dump = dir.path().join("keys.txt");
    std::fs::write(&dump, keys.join("\n") + "\n").unwrap();
    let v = json_of(
        keyplan()
            .args(["analyze", "--format", "json", "--topology"])
            .arg(&topo)
            .arg(&dump),
    );
    let note = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "unhashable")
        .expect("an unhashable note");
    assert_eq!(note["keys"], 1000);
}

/// A database behind its proxy is simulated and planned as one endpoint: no strategy or
/// candidate that opens a connection to each node, a pipeline costs one round trip on one
/// connection (the proxy sends each shard its part), and shards are named as the topology
/// names them.
fn the_proxy_is_one_endpoint_with_named_shards() {
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("enterprise.yaml");
    std::fs::write(&topo, "enterprise:\n  shards: 3\n  hashing: standard\n").unwrap();
    let batches = dir.path().join("batches.txt");
    std::fs::write(&batches, "MGET a b c d e f\nSUNION a b\n").unwrap();
    let topo = topo.to_str().unwrap();
    let (code, out, err) = crate::support::run_in_process(&[
        "simulate",
        "--topology",
        topo,
        "--batches",
        batches.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let results = v["results"].as_array().unwrap();
    let mget: Vec<&serde_json::Value> = results
        .iter()
        .filter(|r| r["batch"].as_str().unwrap().starts_with("line 1"))
        .collect();
    let names: Vec<&str> = mget
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["serial", "pipeline", "hashtag"], "{out}");
    let pipeline = mget[1];
    assert_eq!(pipeline["round_trips"], 1, "{pipeline}");
    assert_eq!(pipeline["connections"], 1, "{pipeline}");
    assert_eq!(pipeline["nodes_touched"], 3, "{pipeline}");
    let shards: Vec<&str> = pipeline["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_str().unwrap())
        .collect();
    assert_eq!(shards, ["shard-0", "shard-1", "shard-2"]);
    let (_, table, _) = crate::support::run_in_process(&[
        "simulate",
        "--topology",
        topo,
        "--batches",
        batches.to_str().unwrap(),
    ]);
    assert!(
        table.contains("3 shards behind one proxy endpoint"),
        "{table}"
    );
    assert!(table.contains("commands per shard"), "{table}");
    assert!(
        !table.contains("master-") && !table.contains("parallel"),
        "{table}"
    );
    assert!(
        table.contains("as written, the database's proxy refuses it: CROSSSLOT"),
        "SUNION: {table}"
    );
    // Asked for per-node strategies only: refused, naming what does apply.
    let (code, _, err) = crate::support::run_in_process(&[
        "simulate",
        "--topology",
        topo,
        "--batches",
        batches.to_str().unwrap(),
        "--strategy",
        "parallel",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("one proxy endpoint") && err.contains("--strategy pipeline"),
        "{err}"
    );
    // plan: no per-node candidate, shards counted as shards.
    let scheme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/keyplan.yaml");
    let (code, plan, err) = crate::support::run_in_process(&[
        "plan",
        "--scheme",
        scheme.to_str().unwrap(),
        "--topology",
        topo,
    ]);
    assert!(code <= 1, "{err}");
    assert!(!plan.contains("one pipeline per node"), "{plan}");
    // The keys are held by shards: the load is a shard's, never a node's.
    assert!(plan.contains("the busiest shard carries"), "{plan}");
    assert!(!plan.contains("node"), "{plan}");
    assert!(
        plan.contains("MGET (split over the shards by the proxy) over several slots: 2 shard(s), 1 round trip(s)"),
        "{plan}"
    );
}

pub const TESTS: &[crate::support::Test] = &[
    (
        "the_proxy_is_one_endpoint_with_named_shards",
        the_proxy_is_one_endpoint_with_named_shards,
    ),
    (
        "hashing_rules_agree_with_perl_and_slots_with_a_real_server",
        hashing_rules_agree_with_perl_and_slots_with_a_real_server,
    ),
    (
        "lint_and_simulate_judge_batches_under_the_proxy",
        lint_and_simulate_judge_batches_under_the_proxy,
    ),
    (
        "bad_enterprise_topologies_name_the_line",
        bad_enterprise_topologies_name_the_line,
    ),
    (
        "a_catastrophic_rule_is_bounded_and_its_keys_unplaced",
        a_catastrophic_rule_is_bounded_and_its_keys_unplaced,
    ),
];
