//! `keyplan plan`: recommendations on schemes with known answers, the rewritten scheme linting
//! clean, observed batches, sample-based skew.

use super::support::keyplan;
use serde_json::Value;
use std::path::Path;

const SHOP: &str = "examples/plan/shop.yaml";

fn plan_json(args: &[&str]) -> (i32, Value) {
    let out = keyplan()
        .arg("plan")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!("no JSON: {}", String::from_utf8_lossy(&out.stderr));
    });
    (out.status.code().unwrap_or(-1), v)
}

fn batch<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["batches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["batch"] == name)
        .unwrap_or_else(|| panic!("no batch {name}"))
}

fn recommended(b: &Value) -> &Value {
    &b["candidates"][b["recommended"].as_u64().unwrap() as usize]
}

fn shop_scheme_gets_the_known_answers() {
    let (code, v) = plan_json(&["--scheme", SHOP]);
    assert_eq!(code, 1, "problems are findings");
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["workload"]["source"], "declared cardinalities");

    // The cross-slot checkout gets {<order_id>}.
    let c = batch(&v, "checkout");
    assert!(c["problem"].as_str().unwrap().contains("CROSSSLOT"));
    let r = recommended(c);
    assert_eq!(r["kind"], "tag");
    let to: Vec<&str> = r["rewrites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["to"].as_str().unwrap())
        .collect();
    assert_eq!(to, ["order:{<order_id>}:items", "order:{<order_id>}:total"]);
    assert_eq!(r["score"]["round_trips"], 1);
    assert_eq!(r["pareto"], true);

    // The cart view keeps the cart's existing tag and tags the profile to match.
    let r = recommended(batch(&v, "cart_view"));
    assert_eq!(r["rewrites"][0]["key"], "profile");
    assert_eq!(r["rewrites"][0]["to"], "{user:<user_id>}:profile");

    // The 12-value group tag is flagged and bucketed.
    let f = batch(&v, "feed_page");
    assert!(
        f["problem"]
            .as_str()
            .unwrap()
            .contains("takes about 12 value(s)")
    );
    let r = recommended(f);
    assert_eq!(r["kind"], "bucket");
    assert_eq!(
        r["rewrites"][0]["to"],
        "feed:{<group>:<bucket>}:user:<user_id>"
    );
    let k = r["new_vars"][0]["cardinality"].as_u64().unwrap();
    assert!(k * 12 >= 50, "{k}");
    let keep = &f["candidates"][0]["score"]["skew"];
    assert!(r["score"]["skew"].as_f64().unwrap() < keep.as_f64().unwrap());
    assert!(r["score"]["skew"].as_f64().unwrap() <= 1.25);

    // The random fan-out: no tag helps, per-node parallel pipelines, with round trips.
    let l = batch(&v, "lookup");
    let r = recommended(l);
    assert_eq!(r["kind"], "per-node-pipelines");
    assert!(l["reason"].as_str().unwrap().starts_with("no tag helps"));
    assert_eq!(l["candidates"][0]["score"]["round_trips"], 3);
    assert_eq!(r["score"]["round_trips"], 1);
}

fn the_rewritten_scheme_lints_clean_and_needs_no_more_plans() {
    let dir = tempfile::tempdir().unwrap();
    let out = keyplan()
        .args(["plan", "--scheme", SHOP, "--format", "yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let new = dir.path().join("shop.yaml");
    std::fs::write(&new, &out.stdout).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // Comments and layout survive; only the recommended edits change.
    assert!(text.starts_with("# A shop's keys before hash-tag planning"));
    assert!(text.contains("  bucket: { kind: int, cardinality: 8 }"));
    assert!(text.contains("same: [group, bucket]"));
    let lint = keyplan()
        .args(["lint", "--scheme", new.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        lint.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let (code, v) = plan_json(&["--scheme", new.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert!(
        v["batches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["problem"].is_null())
    );
}

fn the_spec_example_keeps_its_checkout_and_buckets_its_fanout() {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spec-keyplan.yaml");
    let (_, v) = plan_json(&["--scheme", spec.to_str().unwrap()]);
    let c = batch(&v, "checkout");
    assert!(c["problem"].is_null());
    assert_eq!(recommended(c)["kind"], "keep");
    assert_eq!(recommended(batch(&v, "fanout"))["kind"], "bucket");
}

/// A sample of the shop's keys where one group holds most of the feed.
fn shop_sample(dir: &Path) -> std::path::PathBuf {
    let mut s = String::new();
    for i in 0..3000 {
        s.push_str(&format!("user:{i}:profile\ncart:{{user:{i}}}:items\n"));
        s.push_str(&format!(
            "order:{}:items\norder:{}:total\n",
            10_000 + i,
            10_000 + i
        ));
        s.push_str(&format!("product:{}\n", 500 + i));
        let g = if i % 4 == 0 {
            format!("g{}", i % 12)
        } else {
            "hot".into()
        };
        s.push_str(&format!("feed:{{{g}}}:user:{i}\n"));
    }
    s.push_str("misc:key\n");
    let p = dir.join("shop.keys");
    std::fs::write(&p, s).unwrap();
    p
}

fn skew_comes_from_the_sample_when_given() {
    let dir = tempfile::tempdir().unwrap();
    let sample = shop_sample(dir.path());
    let (_, v) = plan_json(&["--scheme", SHOP, "--keys", sample.to_str().unwrap()]);
    assert_eq!(v["workload"]["source"], "sample");
    assert_eq!(v["workload"]["keys"], 18001);
    assert_eq!(v["workload"]["unmatched"], 1);
    // Three quarters of the feed on one tag value: the current layout crowds one node.
    let f = batch(&v, "feed_page");
    let keep = f["candidates"][0]["score"]["skew"].as_f64().unwrap();
    assert!(keep > 2.0, "{keep}");
    let r = recommended(f);
    assert_eq!(r["kind"], "bucket");
    assert!(r["score"]["skew"].as_f64().unwrap() < keep);
    // Keys that would move are counted from the sample.
    let c = recommended(batch(&v, "checkout"));
    let moved = c["score"]["keys_moved"].as_f64().unwrap();
    assert!(moved > 0.0 && moved <= 6000.0, "{moved}");
    assert_eq!(c["score"]["keys_renamed"].as_f64().unwrap(), 6000.0);
}

fn observed_batches_are_mined_for_the_shared_segment() {
    let dir = tempfile::tempdir().unwrap();
    let batches = dir.path().join("batches.txt");
    std::fs::write(
        &batches,
        "MULTI SET order:1001:items x; SET order:1001:total 5\n\
         MULTI SET order:2002:items x; SET order:2002:total 9\n\
         MGET product:501 product:502 product:503 product:504 product:505\n\
         MGET user:7:profile {user:7}:cart\n",
    )
    .unwrap();
    let sample = shop_sample(dir.path());
    let (code, v) = plan_json(&[
        "--batches",
        batches.to_str().unwrap(),
        "--keys",
        sample.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let o = v["observed"].as_array().unwrap();
    assert_eq!(o.len(), 4, "{v}");
    assert_eq!(o[0]["shared"], "1001");
    assert_eq!(o[0]["rewritten"][0], "order:{<int>}:items");
    assert_eq!(o[0]["examples"][0][1], "order:{1001}:items");
    assert_eq!(o[0]["after"]["round_trips"], 1);
    assert_eq!(o[0]["tag_values_seen"], 2);
    // Re-keying the sample's order keys by their id keeps them spread.
    assert!(o[0]["after"]["skew"].as_f64().unwrap() < 1.2, "{}", o[0]);
    assert!(o[2]["shared"].is_null());
    assert!(
        o[2]["recommendation"]
            .as_str()
            .unwrap()
            .starts_with("no segment is shared")
    );
    // The tag one key has already is reused: that key stays where it is, the other joins it,
    // and the rewritten shapes keep the braces.
    assert_eq!(o[3]["shared"], "user:7");
    assert_eq!(o[3]["examples"][0][1], "{user:7}:profile");
    assert_eq!(o[3]["examples"][1][1], "{user:7}:cart");
    assert_eq!(
        o[3]["rewritten"],
        serde_json::json!(["{user:<int>}:cart", "{user:<int>}:profile"])
    );
}

fn plan_errors_name_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["plan"], "nothing to plan"),
        (
            &[
                "plan",
                "--batches",
                "examples/batches.txt",
                "--format",
                "yaml",
            ],
            "--format yaml writes the updated scheme",
        ),
        (
            &["plan", "--scheme", SHOP, "--max-skew", "0.5"],
            "--max-skew 0.5",
        ),
        (&["plan", "--scheme", SHOP, "--client", "nope"], "--client"),
        (
            &["plan", "--scheme", "missing.yaml"],
            "cannot read scheme 'missing.yaml'",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = crate::support::run_in_process(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `plan --batches` reads batch files within the same bounds as `simulate`: `/dev/zero` is
/// refused at the end of its first 16 MiB line (exit 2), not read until memory runs out.
fn batch_files_without_a_size_are_bounded() {
    let out = keyplan()
        .args(["plan", "--format", "json", "--batches", "/dev/zero"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/dev/zero: line 1 is longer than 16 MiB"),
        "{stderr}"
    );
}

/// Atomic batches whose keys share no variable (a MULTI, a script): plan says the application
/// must change and never stars per-node pipelines (split, they are no longer atomic), in the
/// JSON and in the table; a pipeline over the same keys may get them.
fn atomic_batches_are_never_recommended_per_node_pipelines() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = dir.path().join("keyplan.yaml");
    std::fs::write(
        &scheme,
        "version: 1\n\
         vars:\n  a: { kind: int, cardinality: 100000 }\n  b: { kind: int, cardinality: 100000 }\n\
         keys:\n  left: { pattern: \"left:<a>\" }\n  right: { pattern: \"right:<b>\" }\n\
         batches:\n\
         \x20 tx: { command: multi, keys: [left, right] }\n\
         \x20 script: { command: lua, keys: [left, right] }\n\
         \x20 many: { command: pipeline, keys: [left, right], size: 40 }\n",
    )
    .unwrap();
    let (code, v) = plan_json(&["--scheme", scheme.to_str().unwrap(), "--masters", "3"]);
    assert_eq!(code, 1, "{v}");
    for name in ["tx", "script"] {
        let b = batch(&v, name);
        assert!(b["problem"].as_str().unwrap().contains("CROSSSLOT"), "{b}");
        let r = recommended(b);
        assert_ne!(r["kind"], "per-node-pipelines", "{name}: {b}");
        for c in b["candidates"].as_array().unwrap() {
            if c["kind"] == "per-node-pipelines" {
                assert_eq!(c["pareto"], false, "{name}: {c}");
            }
        }
        let why = b["why"].as_str().unwrap_or_default().to_string() + &b.to_string();
        assert!(why.contains("the application must change"), "{name}: {why}");
    }
    let out = keyplan()
        .args([
            "plan",
            "--scheme",
            scheme.to_str().unwrap(),
            "--masters",
            "3",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // In the table a star marks the recommendation: never on the atomic batches' pipelines.
    let mut current = "";
    let mut starred = 0;
    for line in text.lines() {
        if let Some(name) = ["tx", "script", "many"]
            .iter()
            .find(|n| line.trim_start().starts_with(&n.to_string()))
        {
            current = name;
        }
        if line.contains('★') && line.contains("pipeline per node") {
            assert_eq!(
                current, "many",
                "starred per-node pipelines for {current}:\n{text}"
            );
            starred += 1;
        }
    }
    // The pipeline over the same keys is starred per-node pipelines: the loop reads the table.
    assert_eq!(starred, 1, "{text}");
}

/// Scripts that declare no keys but touch keys (the body read from EVAL, a SCRIPT LOAD seen in
/// a capture), or may (only the sha): plan lists each, with the fix, even over one key.
fn scripts_declaring_no_keys_are_planned() {
    let dir = tempfile::tempdir().unwrap();
    let batches = dir.path().join("batches.txt");
    std::fs::write(
        &batches,
        "EVAL \"return redis.call('INCR', ARGV[1])\" 0 rate:ana\n\
         EVALSHA 0123456789abcdef0123456789abcdef01234567 0 rate:bo\n\
         EVAL \"return redis.call('TIME')\" 0\n\
         EVAL \"return redis.call('INCR', KEYS[1])\" 1 rate:cy\n",
    )
    .unwrap();
    let (code, v) = plan_json(&["--batches", batches.to_str().unwrap(), "--masters", "3"]);
    assert_eq!(code, 1, "{v}");
    let o = v["observed"].as_array().unwrap();
    assert_eq!(o.len(), 2, "{v}");
    let r0 = o[0]["recommendation"].as_str().unwrap();
    assert!(
        r0.starts_with("a script that declares no keys (EVAL … 0) but its body touches keys (`redis.call('INCR', ARGV[1])`)"),
        "{r0}"
    );
    assert!(r0.contains("declare every key the script touches"), "{r0}");
    assert_eq!(o[0]["keys"], 1);
    let r1 = o[1]["recommendation"].as_str().unwrap();
    assert!(r1.contains("(EVALSHA <sha> 0) and may touch keys"), "{r1}");
    // A capture: the SCRIPT LOAD gives the EVALSHA its body.
    let body = "return redis.call('DEL', ARGV[1])";
    let sha = keyplan::command::script::sha1_hex(body.as_bytes());
    let capture = dir.path().join("monitor.txt");
    std::fs::write(
        &capture,
        format!(
            "1.0 [0 10.0.0.1:1] \"SCRIPT\" \"LOAD\" \"{body}\"\n1.1 [0 10.0.0.1:1] \"EVALSHA\" \"{sha}\" \"0\" \"job:7\"\n1.2 [0 10.0.0.1:1] \"GET\" \"x\"\n"
        ),
    )
    .unwrap();
    let (_, v) = plan_json(&["--monitor", capture.to_str().unwrap(), "--masters", "3"]);
    let o = v["observed"].as_array().unwrap();
    assert_eq!(o.len(), 1, "{v}");
    assert!(
        o[0]["recommendation"]
            .as_str()
            .unwrap()
            .contains("but its body touches keys (`redis.call('DEL', ARGV[1])`)"),
        "{}",
        o[0]
    );
    // One node: any node serves every key, nothing to say.
    let (_, v) = plan_json(&["--batches", batches.to_str().unwrap(), "--masters", "1"]);
    assert!(v["observed"].as_array().unwrap().is_empty(), "{v}");
}

/// A uuid-shaped job id from a counter (deterministic, as a job queue's v4 ids look).
fn job_uuid(i: u64) -> String {
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let l = h.rotate_left(17).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xfff,
        l >> 52,
        l & 0xffff_ffff_ffff
    )
}

fn observed(v: &Value) -> &Vec<Value> {
    v["observed"].as_array().unwrap()
}

/// A job queue whose every key carries its constant namespace and schema number
/// (`mq:800:job:<uuid>`, `mq:800:queue:emails`): many different jobs, one `800`. Plan never
/// proposes the constant as a tag (it would put every key of the queue on one slot): the
/// MULTI must change, and the advice names the constant.
fn a_constant_shared_by_different_batches_is_never_a_tag() {
    let dir = tempfile::tempdir().unwrap();
    let batches = dir.path().join("batches.txt");
    let queues = ["emails", "reports", "webhooks"];
    let text: String = (0..12u64)
        .map(|i| {
            let (j, q) = (job_uuid(i), queues[i as usize % 3]);
            format!("MULTI HSET mq:800:job:{j} state queued; LPUSH mq:800:queue:{q} {j}\n")
        })
        .collect();
    std::fs::write(&batches, text).unwrap();
    let (code, v) = plan_json(&["--batches", batches.to_str().unwrap(), "--masters", "3"]);
    assert_eq!(code, 1, "{v}");
    let o = observed(&v);
    assert!(!o.is_empty(), "{v}");
    for p in o {
        assert!(p["shared"].is_null(), "{p}");
        assert_eq!(p["rewritten"], serde_json::json!([]), "{p}");
        let r = p["recommendation"].as_str().unwrap();
        assert!(
            r.contains("`800`") && r.contains("a constant of the family, not a tag"),
            "{r}"
        );
        assert!(r.contains("the application must change"), "{r}");
        // The untagged advice is what the plan says: no leftover of it in the JSON.
        assert!(p.get("untagged").is_none(), "{p}");
    }
    // The same batch sent again and again is no evidence of a constant: the id stays the tag,
    // with the warning.
    std::fs::write(&batches, "MGET order:7:items order:7:total\n".repeat(3)).unwrap();
    let (_, v) = plan_json(&["--batches", batches.to_str().unwrap(), "--masters", "3"]);
    let o = observed(&v);
    assert_eq!(o[0]["shared"], "7", "{v}");
    assert!(
        o[0]["recommendation"]
            .as_str()
            .unwrap()
            .contains("the tag would be a constant: a name, not an id"),
        "{v}"
    );
}

/// A cache that tags each user's keys `{c:<user>}` already, batched with a key written
/// elsewhere without the tag (`user:<user>:avatar`): plan reuses the tag the keys have (the
/// tagged keys stay where they are, the other one gets `{c:<user>}`), never a new tag on the
/// user's handle that drops the braces.
fn existing_tags_are_kept_when_only_some_keys_have_them() {
    let dir = tempfile::tempdir().unwrap();
    let batches = dir.path().join("batches.txt");
    let users = ["ana_garcia4", "hugo.silva12", "omar_müller", "bo-obrien7"];
    let text: String = users
        .iter()
        .map(|u| format!("MGET {{c:{u}}}:profile {{c:{u}}}:prefs user:{u}:avatar\n"))
        .collect();
    std::fs::write(&batches, text).unwrap();
    let (code, v) = plan_json(&["--batches", batches.to_str().unwrap(), "--masters", "3"]);
    assert_eq!(code, 1, "{v}");
    let o = observed(&v);
    assert!(!o.is_empty(), "{v}");
    for p in o {
        let user = users[p["batch_id"]["line"].as_u64().unwrap() as usize - 1];
        assert_eq!(p["shared"], format!("c:{user}"), "{p}");
        for r in p["rewritten"].as_array().unwrap() {
            assert!(r.as_str().unwrap().contains("{c:"), "{p}");
        }
        for pair in p["examples"].as_array().unwrap() {
            let (from, to) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
            if from.starts_with('{') {
                assert_eq!(from, to, "a tagged key moved: {p}");
            } else {
                assert_eq!(to, format!("user:{{c:{user}}}:avatar"), "{p}");
            }
        }
        assert_eq!(p["after"]["round_trips"], 1, "{p}");
    }
}

/// The same BullMQ-style script (`wait`, `active` and a job under one queue) under prefixes
/// that differ only in carrying a version or an index (`bull`, `bull-v2`, `app_1`, `jobs2`)
/// gets one verdict: tag the queue's name, with the name warning; never the prefix. With a key
/// sample holding several queues the verdict is the same (the queue's name is no constant).
fn one_script_shape_gets_one_verdict_under_any_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let batches = dir.path().join("batches.txt");
    let keys = dir.path().join("sample.keys");
    let prefixes = ["bull", "bull-v2", "app_1", "jobs2"];
    let queues = ["emails", "reports", "thumbnails"];
    let mut text = String::new();
    let mut sample = String::new();
    for (pi, p) in prefixes.iter().enumerate() {
        for (qi, q) in queues.iter().enumerate() {
            let job = 1000 + 37 * (pi * 3 + qi);
            text.push_str(&format!(
                "EVALSHA 0123456789abcdef0123456789abcdef01234567 3 {p}:{q}:wait {p}:{q}:active {p}:{q}:{job}\n"
            ));
            for s in ["wait", "active", "id", "events", "meta"] {
                sample.push_str(&format!("{p}:{q}:{s}\n"));
            }
            for j in 0..60 {
                sample.push_str(&format!("{p}:{q}:{}\n", 5000 + j * 13 + qi));
            }
        }
    }
    std::fs::write(&batches, text).unwrap();
    std::fs::write(&keys, sample).unwrap();
    let with = |extra: &[&str]| {
        let mut args = vec!["--batches", batches.to_str().unwrap(), "--masters", "3"];
        args.extend_from_slice(extra);
        plan_json(&args).1
    };
    for v in [with(&[]), with(&["--keys", keys.to_str().unwrap()])] {
        let o = observed(&v);
        assert_eq!(o.len(), prefixes.len() * queues.len(), "{v}");
        for p in o {
            let line = p["batch_id"]["line"].as_u64().unwrap() as usize - 1;
            let (prefix, queue) = (prefixes[line / 3], queues[line % 3]);
            assert_eq!(p["shared"], queue, "{p}");
            let r = p["recommendation"].as_str().unwrap();
            assert!(r.contains("the tag is a name, not an id"), "{r}");
            assert!(
                p["rewritten"].as_array().unwrap().iter().all(|s| s
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{prefix}:{{{queue}}}:"))),
                "{p}"
            );
        }
    }
}

/// A tag declared over 200 seasons, whose sample (a tsv with each key's bytes) shows one
/// season holding half the family's bytes in a few huge keys (under 2% of the keys): plan
/// judges by what the sample shows and never calls the tag well-spread.
fn a_tag_value_holding_most_bytes_is_not_well_spread() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = dir.path().join("keyplan.yaml");
    std::fs::write(
        &scheme,
        "version: 1\n\
         vars:\n  season: { kind: int, cardinality: 200 }\n  team: { kind: int, cardinality: 5000 }\n\
         keys:\n  season_close: { pattern: \"close:{<season>}:team:<team>\" }\n  season_meta: { pattern: \"meta:{<season>}\" }\n\
         batches:\n  close: { command: multi, keys: [season_close, season_meta], same: [season] }\n",
    )
    .unwrap();
    let mut tsv = String::new();
    for season in 0..200u64 {
        for t in 0..3u64 {
            let team = (season * 7919 + t * 104_729) % 5000;
            tsv.push_str(&format!(
                "close:{{{season}}}:team:{team}\t{}\n",
                200 + (season * 31 + t * 17) % 200
            ));
        }
        tsv.push_str(&format!("meta:{{{season}}}\t100\n"));
    }
    // Season 7's standings: three keys of 64 KB, as large as the rest together.
    for t in 0..3 {
        tsv.push_str(&format!("close:{{7}}:team:{}\t64000\n", 4990 + t));
    }
    let sample = dir.path().join("sample.tsv");
    std::fs::write(&sample, tsv).unwrap();
    let (_, v) = plan_json(&[
        "--scheme",
        scheme.to_str().unwrap(),
        "--keys",
        sample.to_str().unwrap(),
        "--masters",
        "3",
    ]);
    let b = batch(&v, "close");
    let problem = b["problem"].as_str().unwrap_or_default();
    assert!(
        problem.contains("`{7}` holds") && problem.contains("of the bytes"),
        "{b}"
    );
    assert!(
        !b["reason"].as_str().unwrap().contains("well-spread"),
        "{b}"
    );
    // Without sizes the same keys show no concentration: the tag is well spread.
    let plain: String = std::fs::read_to_string(&sample)
        .unwrap()
        .lines()
        .map(|l| format!("{}\n", l.split('\t').next().unwrap()))
        .collect();
    std::fs::write(&sample, plain).unwrap();
    let (_, v) = plan_json(&[
        "--scheme",
        scheme.to_str().unwrap(),
        "--keys",
        sample.to_str().unwrap(),
        "--masters",
        "3",
    ]);
    let b = batch(&v, "close");
    assert!(b["problem"].is_null(), "{b}");
}

/// A scheme whose job queue keys share only a namespace of one value (`<ns>`, the library's
/// name and version, declared `same`): a tag on it would put every job and queue on one slot,
/// so plan never proposes it; the MULTI is told the application must change, the constant named.
fn a_declared_variable_of_one_value_is_never_a_tag() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = dir.path().join("keyplan.yaml");
    std::fs::write(
        &scheme,
        "version: 1\n\
         vars:\n  ns: { kind: word, cardinality: 1, values: [\"mq-800.26\"] }\n  job: { kind: uuid, cardinality: 1000000 }\n  queue: { kind: word, cardinality: 5 }\n\
         keys:\n  job: { pattern: \"<ns>:job:<job>\" }\n  queue: { pattern: \"<ns>:queue:<queue>\" }\n\
         batches:\n  enqueue: { command: multi, keys: [job, queue], same: [ns] }\n",
    )
    .unwrap();
    let (code, v) = plan_json(&["--scheme", scheme.to_str().unwrap(), "--masters", "3"]);
    assert_eq!(code, 1, "{v}");
    let b = batch(&v, "enqueue");
    for c in b["candidates"].as_array().unwrap() {
        assert!(
            !c["summary"].as_str().unwrap().contains("{<ns>}"),
            "a constant proposed as a tag: {c}"
        );
    }
    assert_ne!(recommended(b)["kind"], "tag", "{b}");
    let reason = b["reason"].as_str().unwrap();
    assert!(
        reason.contains("`<ns>`, which take(s) one value: a constant, a name, not an id")
            && reason.contains("the application must change"),
        "{reason}"
    );
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "shop_scheme_gets_the_known_answers",
        shop_scheme_gets_the_known_answers,
    ),
    (
        "the_rewritten_scheme_lints_clean_and_needs_no_more_plans",
        the_rewritten_scheme_lints_clean_and_needs_no_more_plans,
    ),
    (
        "the_spec_example_keeps_its_checkout_and_buckets_its_fanout",
        the_spec_example_keeps_its_checkout_and_buckets_its_fanout,
    ),
    (
        "skew_comes_from_the_sample_when_given",
        skew_comes_from_the_sample_when_given,
    ),
    (
        "observed_batches_are_mined_for_the_shared_segment",
        observed_batches_are_mined_for_the_shared_segment,
    ),
    ("plan_errors_name_the_flag", plan_errors_name_the_flag),
    (
        "batch_files_without_a_size_are_bounded",
        batch_files_without_a_size_are_bounded,
    ),
    (
        "atomic_batches_are_never_recommended_per_node_pipelines",
        atomic_batches_are_never_recommended_per_node_pipelines,
    ),
    (
        "scripts_declaring_no_keys_are_planned",
        scripts_declaring_no_keys_are_planned,
    ),
    (
        "a_constant_shared_by_different_batches_is_never_a_tag",
        a_constant_shared_by_different_batches_is_never_a_tag,
    ),
    (
        "existing_tags_are_kept_when_only_some_keys_have_them",
        existing_tags_are_kept_when_only_some_keys_have_them,
    ),
    (
        "one_script_shape_gets_one_verdict_under_any_prefix",
        one_script_shape_gets_one_verdict_under_any_prefix,
    ),
    (
        "a_tag_value_holding_most_bytes_is_not_well_spread",
        a_tag_value_holding_most_bytes_is_not_well_spread,
    ),
    (
        "a_declared_variable_of_one_value_is_never_a_tag",
        a_declared_variable_of_one_value_is_never_a_tag,
    ),
];
