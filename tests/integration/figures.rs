//! Figures that are true as written (issue 61): tag counts exact where every key was read and
//! `≈` where a sample or a sketch stands for them, never `≤`; a ring that hashes whole keys
//! has no hash tags; the servers' own data figure reaches the verdict; a size sweep of a
//! refused batch says so.

use crate::cluster::Cluster;
use crate::support::{Test, json_of, keyplan};
use std::fmt::Write as _;

pub const TESTS: &[Test] = &[
    (
        "tag_counts_are_exact_when_tags_are_few",
        tag_counts_are_exact_when_tags_are_few,
    ),
    (
        "sketched_tag_counts_read_approximately_and_drop_noise",
        sketched_tag_counts_read_approximately_and_drop_noise,
    ),
    (
        "a_ring_without_hash_tag_has_no_tags_or_slots",
        a_ring_without_hash_tag_has_no_tags_or_slots,
    ),
    (
        "live_tag_counts_match_the_servers_with_sample_all",
        live_tag_counts_match_the_servers_with_sample_all,
    ),
    (
        "a_sweep_of_a_refused_batch_says_so",
        a_sweep_of_a_refused_batch_says_so,
    ),
    (
        "the_servers_data_figure_out_of_line_leads_the_verdict",
        the_servers_data_figure_out_of_line_leads_the_verdict,
    ),
    (
        "an_enterprise_database_refuses_through_its_proxy",
        an_enterprise_database_refuses_through_its_proxy,
    ),
];

/// `{big}` with 4000 keys, `{mid}` with 200, and `tail` tags of 2 keys each, with a byte
/// weight per key (TSV `key<TAB>bytes`).
fn tagged_dump(dir: &std::path::Path, tail: usize) -> std::path::PathBuf {
    let mut s = String::new();
    for i in 0..4000 {
        let _ = writeln!(s, "feed:{{big}}:{i}\t100");
    }
    for i in 0..200 {
        let _ = writeln!(s, "feed:{{mid}}:{i}\t10");
    }
    for t in 0..tail {
        for i in 0..2 {
            let _ = writeln!(s, "order:{{t{t}}}:{i}\t1");
        }
    }
    let p = dir.join("tags.tsv");
    std::fs::write(&p, s).unwrap();
    p
}

fn text(args: &[&str]) -> String {
    let out = keyplan().args(args).output().unwrap();
    // analyze and simulate report; they have no findings status.
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The table under `title`, up to the next blank line.
fn section<'a>(report: &'a str, title: &str) -> &'a str {
    let start = report
        .find(title)
        .unwrap_or_else(|| panic!("no {title:?} in\n{report}"));
    let rest = &report[start..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

fn tag_counts_are_exact_when_tags_are_few() {
    let dir = tempfile::tempdir().unwrap();
    let dump = tagged_dump(dir.path(), 3000);
    let d = dump.to_str().unwrap();
    let v = json_of(keyplan().args(["analyze", d, "--format", "json"]));
    for table in ["hot_tags", "hot_tags_by_bytes"] {
        let tags = v[table].as_array().unwrap();
        assert!(tags.iter().all(|t| t["exact"] == true), "{table}: {tags:?}");
        assert!(
            tags.iter()
                .all(|t| t["keys_error"] == 0 && t["bytes_error"] == 0)
        );
        let big = tags.iter().find(|t| t["tag"] == "big").unwrap();
        assert_eq!(
            (big["keys"].as_u64(), big["bytes"].as_u64()),
            (Some(4000), Some(400_000))
        );
        let mid = tags.iter().find(|t| t["tag"] == "mid").unwrap();
        assert_eq!(
            (mid["keys"].as_u64(), mid["bytes"].as_u64()),
            (Some(200), Some(2000))
        );
    }
    // The tail tags hold 2 keys each, exactly.
    let tail: Vec<u64> = v["hot_tags"]
        .as_array()
        .unwrap()
        .iter()
        .skip(2)
        .map(|t| t["keys"].as_u64().unwrap())
        .collect();
    assert!(!tail.is_empty() && tail.iter().all(|&k| k == 2), "{tail:?}");
    let t = text(&["analyze", d]);
    for title in ["Top tags by keys", "Top tags by bytes"] {
        let table = section(&t, title);
        assert!(!table.contains('≤') && !table.contains('≈'), "{table}");
        assert!(table.contains(" 4000 "), "{table}");
    }
}

fn sketched_tag_counts_read_approximately_and_drop_noise() {
    // 70,000 distinct tags: more than are counted one by one, so the sketches rank them.
    let dir = tempfile::tempdir().unwrap();
    let dump = tagged_dump(dir.path(), 70_000);
    let d = dump.to_str().unwrap();
    let v = json_of(keyplan().args(["analyze", d, "--format", "json"]));
    let tags = v["hot_tags"].as_array().unwrap();
    let big = tags.iter().find(|t| t["tag"] == "big").unwrap();
    assert_eq!(big["exact"], false);
    let (k, e) = (
        big["keys"].as_u64().unwrap(),
        big["keys_error"].as_u64().unwrap(),
    );
    assert!(k - e <= 4000 && 4000 <= k, "the bounds hold: {k} - {e}");
    let by_bytes = v["hot_tags_by_bytes"].as_array().unwrap();
    let big_b = by_bytes.iter().find(|t| t["tag"] == "big").unwrap();
    let (b, be) = (
        big_b["bytes"].as_u64().unwrap(),
        big_b["bytes_error"].as_u64().unwrap(),
    );
    assert!(
        b - be <= 400_000 && 400_000 <= b,
        "the bounds hold: {b} - {be}"
    );
    // Rows that are mostly the sketch's error are in JSON, not in the tables.
    let noisy = tags
        .iter()
        .filter(|t| 2 * t["keys_error"].as_u64().unwrap() > t["keys"].as_u64().unwrap())
        .count();
    assert!(noisy > 0, "the tail is noise: {tags:?}");
    let t = text(&["analyze", d]);
    let table = section(&t, "Top tags by keys");
    assert!(!table.contains('≤'), "{table}");
    assert!(!table.contains("{t"), "2-key tags are noise here:\n{table}");
    assert!(table.contains("big"), "{table}");
    assert!(
        t.contains(&format!(
            "{noisy} more tags left out: most of their figure may be the sketch's error"
        )),
        "{t}"
    );
}

fn a_ring_without_hash_tag_has_no_tags_or_slots() {
    // examples/twemproxy.yml sets no hash_tag: the ring hashes whole keys.
    let v = json_of(keyplan().args([
        "analyze",
        "examples/app.keys",
        "--topology",
        "examples/twemproxy.yml",
        "--format",
        "json",
    ]));
    assert_eq!(v["totals"]["tagged_keys"], 0, "{}", v["totals"]);
    assert!(v["hot_tags"].as_array().unwrap().is_empty());
    let t = text(&[
        "analyze",
        "examples/app.keys",
        "--topology",
        "examples/twemproxy.yml",
    ]);
    assert!(!t.contains("its slots"), "{t}");
    assert!(!t.contains("HOT"), "{t}");
    assert!(!t.contains("Top tags by keys"), "{t}");
    // With hash_tag "{}" the ring hashes the tag: tags come back, with a server and no slot.
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("pool.yml");
    std::fs::write(
        &conf,
        std::fs::read_to_string("examples/twemproxy.yml")
            .unwrap()
            .replace(
                "  hash: fnv1a_64\n",
                "  hash: fnv1a_64\n  hash_tag: \"{}\"\n",
            ),
    )
    .unwrap();
    let c = conf.to_str().unwrap();
    let v = json_of(keyplan().args([
        "analyze",
        "examples/app.keys",
        "--topology",
        c,
        "--format",
        "json",
    ]));
    let tags = v["hot_tags"].as_array().unwrap();
    assert!(!tags.is_empty());
    assert!(
        tags.iter()
            .all(|t| t["node"].as_str().is_some_and(|n| n.starts_with("10.0.0.")))
    );
    let t = text(&["analyze", "examples/app.keys", "--topology", c]);
    let table = section(&t, "Top tags by keys");
    assert!(
        table.contains("│ tag ") && !table.contains(" slot "),
        "{table}"
    );
}

fn live_tag_counts_match_the_servers_with_sample_all() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for i in 0..4000 {
        keys.push(format!("feed:{{big}}:{i}").into_bytes());
    }
    for i in 0..200 {
        keys.push(format!("feed:{{mid}}:{i}").into_bytes());
    }
    for i in 0..6000 {
        keys.push(format!("user:{i}").into_bytes());
    }
    cluster.load(&keys);
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    // The servers' own count of the tag's slot (only the tag's keys are in it).
    let slot_of = |tag: &str| -> u64 {
        let v = json_of(keyplan().args(["slot", "--format", "json", tag]));
        v["keys"][0]["slot"].as_u64().unwrap()
    };
    let count_in_slot = |slot: u64| -> u64 {
        for n in &cluster.nodes {
            if let Ok(crate::support::Reply::Int(c)) =
                n.connect()
                    .call(&[b"CLUSTER", b"COUNTKEYSINSLOT", slot.to_string().as_bytes()])
                && c > 0
            {
                return c as u64;
            }
        }
        0
    };
    assert_eq!(count_in_slot(slot_of("{big}")), 4000);
    let t = text(&["analyze", "--cluster", &url, "--sample", "all"]);
    let table = section(&t, "Top tags by keys");
    assert!(!table.contains('≤') && !table.contains('≈'), "{table}");
    assert!(
        table.contains(" 4000 ") && table.contains(" 200 "),
        "{table}"
    );
    // A sample stands for the cluster: its figures are estimates, marked `≈`, never `≤`.
    let t = text(&["analyze", "--cluster", &url, "--sample", "3000"]);
    let table = section(&t, "Top tags by keys");
    assert!(!table.contains('≤'), "{table}");
    assert!(table.contains('≈'), "{table}");
}

fn a_sweep_of_a_refused_batch_says_so() {
    // cart_view MGETs `cart:{user:<id>}:items` and `user:<id>:profile`: two slots, refused.
    let out = keyplan()
        .args([
            "simulate",
            "--scheme",
            "examples/keyplan.yaml",
            "--sizes",
            "1,10,100",
        ])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    let at = t
        .find("cart_view: round trips / mean ms by batch size")
        .unwrap_or_else(|| panic!("{t}\n{}", String::from_utf8_lossy(&out.stderr)));
    let sweep = &t[at..];
    let sweep = &sweep[..sweep.find("\n\n").unwrap_or(sweep.len())];
    assert!(
        sweep.contains("as written, the cluster refuses it"),
        "{sweep}"
    );
    assert!(
        sweep.contains("refused as written in every instance"),
        "{sweep}"
    );
    // A batch that runs says nothing of the kind.
    let at = t.find("checkout: round trips").unwrap();
    let checkout = &t[at..];
    let checkout = &checkout[..checkout.find("\n\n").unwrap_or(checkout.len())];
    assert!(!checkout.contains("refuses"), "{checkout}");
}

/// One node holds most of the data (`used_memory_dataset`) while the keys are even: the
/// verdict says so first, from the servers' own figure, and JSON carries that skew.
fn the_servers_data_figure_out_of_line_leads_the_verdict() {
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&crate::analyze::generated_keys(3000));
    let value = vec![b'v'; 1 << 20];
    for i in 0..8 {
        let key = format!("{{blob}}:{i}");
        let r = crate::rdb::call_routed(&cluster, &[b"SET", key.as_bytes(), &value]);
        assert!(matches!(r, crate::support::Reply::Status(_)), "{r:?}");
    }
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let v = json_of(keyplan().args(["analyze", "--cluster", &url, "--format", "json"]));
    let verdict = v["skew"]["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("data is badly skewed by the servers' own count (used_memory_dataset)"),
        "{verdict}"
    );
    let ds = &v["skew"]["dataset"];
    assert!(ds["max_over_mean"].as_f64().unwrap() >= 1.5, "{ds}");
    // The node it names holds the blobs' slot.
    let slot = json_of(keyplan().args(["slot", "--format", "json", "{blob}"]))["keys"][0]["slot"]
        .as_u64()
        .unwrap();
    let holder = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| {
            n["slot_ranges"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r[0].as_u64().unwrap() <= slot && slot <= r[1].as_u64().unwrap())
        })
        .unwrap();
    assert_eq!(ds["hottest_node"], holder["id"], "{ds}");
    // An even cluster says nothing of the kind.
    for i in 0..8 {
        let key = format!("{{blob}}:{i}");
        crate::rdb::call_routed(&cluster, &[b"DEL", key.as_bytes()]);
    }
    let v = json_of(keyplan().args(["analyze", "--cluster", &url, "--format", "json"]));
    assert!(v["skew"]["dataset"].is_null(), "{}", v["skew"]);
}

/// Under a Redis Enterprise topology the proxy, not a cluster, refuses a cross-slot batch.
fn an_enterprise_database_refuses_through_its_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("enterprise.yaml");
    std::fs::write(&topo, "enterprise:\n  shards: 3\n  hashing: standard\n").unwrap();
    let batches = dir.path().join("batches.txt");
    std::fs::write(&batches, "SUNIONSTORE dest:1 set:a set:b\n").unwrap();
    let (t, b) = (topo.to_str().unwrap(), batches.to_str().unwrap());
    let out = text(&["simulate", "--batches", b, "--topology", t]);
    assert!(
        out.contains("as written, the database's proxy refuses it: CROSSSLOT"),
        "{out}"
    );
    assert!(!out.contains("the cluster refuses"), "{out}");
    let out = text(&["simulate", "--batches", b, "--masters", "3"]);
    assert!(
        out.contains("as written, the cluster refuses it: CROSSSLOT"),
        "{out}"
    );
}
