//! Every command reads its inputs through one loader layer: the same scheme gives the same
//! topology to lint, plan, simulate and the migration previews, and the same failures.

use super::support::keyplan;

/// Four masters with uneven slot ranges and their own addresses.
const NODES: &str = "\
a000000000000000000000000000000000000001 10.9.0.1:7000@17000 myself,master - 0 0 1 connected 0-999
a000000000000000000000000000000000000002 10.9.0.2:7000@17000 master - 0 0 2 connected 1000-8191
a000000000000000000000000000000000000003 10.9.0.3:7000@17000 master - 0 0 3 connected 8192-12287
a000000000000000000000000000000000000004 10.9.0.4:7000@17000 master - 0 0 4 connected 12288-16383
";

fn example_scheme() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/keyplan.yaml"
    ))
    .unwrap()
}

fn json(args: &[&str], dir: &std::path::Path) -> (Option<i32>, serde_json::Value, String) {
    let out = keyplan().current_dir(dir).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), v, err)
}

fn a_schemes_topology_file_is_used_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    std::fs::write(dir.path().join("conf/nodes.txt"), NODES).unwrap();
    // The file is relative to the scheme, not to the working directory.
    let scheme =
        example_scheme().replace("topology: { masters: 3 }", "topology: { file: nodes.txt }");
    std::fs::write(dir.path().join("conf/keyplan.yaml"), &scheme).unwrap();
    let s = "conf/keyplan.yaml";

    let (code, v, err) = json(&["simulate", "--scheme", s, "--format", "json"], dir.path());
    assert_eq!(code, Some(0), "{err}");
    let addrs: std::collections::BTreeSet<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["nodes"].as_array().unwrap().clone())
        .filter_map(|n| n["address"].as_str().map(str::to_string))
        .collect();
    assert!(!addrs.is_empty());
    assert!(addrs.iter().all(|a| a.starts_with("10.9.0.")), "{addrs:?}");

    let (code, v, err) = json(&["plan", "--scheme", s, "--format", "json"], dir.path());
    // 1: the example's cross-slot batches are ones plan changes.
    assert_eq!(code, Some(1), "{err}");
    assert!(
        v["topology"].as_str().unwrap().contains("nodes.txt"),
        "{}",
        v["topology"]
    );

    let (code, v, err) = json(
        &["rebalance", "--preview", "--scheme", s, "--format", "json"],
        dir.path(),
    );
    // 0: no warning (no keys, no batch fails while the slots move).
    assert_eq!(code, Some(0), "{err}");
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4);
    assert_eq!(nodes[0]["address"], "10.9.0.1:7000");
    // redis-cli rebalances the uneven masters: slots move.
    assert!(v["slots_moved"].as_u64().unwrap() > 0);

    let (code, _, err) = json(
        &[
            "reshard",
            "--preview",
            "--scheme",
            s,
            "--format",
            "json",
            "--from",
            "all",
            "--to",
            "a000000000000000000000000000000000000001",
            "--slots",
            "100",
        ],
        dir.path(),
    );
    // 1: redis-cli's rounding moves 99 slots, not the 100 asked for (a warning).
    assert_eq!(code, Some(1), "{err}");

    // A flag still wins over the scheme.
    let (code, v, err) = json(
        &[
            "simulate",
            "--scheme",
            s,
            "--format",
            "json",
            "--masters",
            "2",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{err}");
    let names: std::collections::BTreeSet<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["nodes"].as_array().unwrap().clone())
        .map(|n| n["node"].as_str().unwrap().to_string())
        .collect();
    assert!(names.iter().all(|n| n.starts_with("master-")), "{names:?}");

    // A missing topology file stops every command, naming the file.
    std::fs::remove_file(dir.path().join("conf/nodes.txt")).unwrap();
    for args in [
        vec!["lint", "--scheme", s],
        vec!["plan", "--scheme", s],
        vec!["simulate", "--scheme", s],
        vec!["rebalance", "--preview", "--scheme", s],
    ] {
        let (code, _, err) = json(&args, dir.path());
        assert_eq!(
            code,
            Some(2),
            "{args:?} carried on without its topology: {err}"
        );
        assert!(err.contains("nodes.txt"), "{args:?}: {err}");
    }
}

/// A user's KP201 (here: tags may hold up to 10% of a pattern each) reaches `plan` as it
/// reaches `lint`: the feed's 12-group tag passes both, where the built-in rule fails both.
fn a_rule_override_reaches_the_planner() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/rules/KP201-low-cardinality-hash-tag.yml"
    ))
    .unwrap();
    let rules = dir.path().join("rules");
    std::fs::create_dir(&rules).unwrap();
    std::fs::write(
        rules.join("KP201.yml"),
        builtin.replace("max_share: 0.02", "max_share: 0.1"),
    )
    .unwrap();
    let scheme = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/keyplan.yaml");
    let r = rules.to_str().unwrap();
    let feed = |v: &serde_json::Value| {
        v["batches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["batch"] == "feed_fanout")
            .cloned()
            .unwrap()
    };
    let kp201 = |v: &serde_json::Value| {
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "KP201" && d["message"].as_str().unwrap().contains("'feed'"))
    };
    // Built-in thresholds: lint flags the feed's tag, plan calls it a problem.
    let (_, lint, err) = json(
        &["lint", "--scheme", scheme, "--format", "json"],
        dir.path(),
    );
    assert!(kp201(&lint), "{err}");
    let (_, plan, err) = json(
        &["plan", "--scheme", scheme, "--format", "json"],
        dir.path(),
    );
    assert!(feed(&plan)["problem"].is_string(), "{err}");
    // The override: both accept it.
    let (_, lint, err) = json(
        &["lint", "--scheme", scheme, "--rules", r, "--format", "json"],
        dir.path(),
    );
    assert!(!kp201(&lint), "{err}");
    let (_, plan, err) = json(
        &["plan", "--scheme", scheme, "--rules", r, "--format", "json"],
        dir.path(),
    );
    assert!(feed(&plan)["problem"].is_null(), "{}\n{err}", feed(&plan));
    // KP201 off: plan asks nothing of tags either.
    let (_, plan, err) = json(
        &[
            "plan",
            "--scheme",
            scheme,
            "--severity",
            "KP201=off",
            "--format",
            "json",
        ],
        dir.path(),
    );
    assert!(feed(&plan)["problem"].is_null(), "{}\n{err}", feed(&plan));
}

/// A batch that keeps a variable the same is never told its keys share none, even when a
/// per-node pipeline beats the tag on that variable; and plan's exit status says whether it
/// recommends a change.
fn plan_reasons_and_exit_status_follow_its_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = dir.path().join("keyplan.yaml");
    std::fs::write(
        &scheme,
        "version: 1\nvars:\n  group: { kind: word, cardinality: 12 }\n  user_id: { kind: int, cardinality: 2000000 }\nkeys:\n  feed: { pattern: \"feed:<group>:user:<user_id>\" }\nbatches:\n  feed_read: { command: pipeline, keys: [feed], size: 100, same: [group] }\n",
    )
    .unwrap();
    let (code, v, err) = json(
        &[
            "plan",
            "--scheme",
            scheme.to_str().unwrap(),
            "--format",
            "json",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    let b = &v["batches"][0];
    let kinds: Vec<&str> = b["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"tag"), "{kinds:?}");
    let reason = b["reason"].as_str().unwrap();
    assert!(!reason.contains("share no variable"), "{reason}");

    // Observed batches: a cross-slot one is a finding, a single-slot one is not.
    let cross = dir.path().join("cross.txt");
    std::fs::write(&cross, "MGET user:1:a user:1:b\n").unwrap();
    let same = dir.path().join("same.txt");
    std::fs::write(&same, "MGET {user:1}:a {user:1}:b\n").unwrap();
    let empty = tempfile::tempdir().unwrap();
    for (file, want) in [(&cross, 1), (&same, 0)] {
        let out = keyplan()
            .current_dir(empty.path())
            .args(["plan", "--batches"])
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(want),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// lint's fix for a cross-slot batch is the rewrite plan recommends for it.
fn lint_and_plan_give_the_same_fix_for_a_cross_slot_batch() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/keyplan.yaml");
    let (_, lint, err) = json(
        &["lint", "--scheme", scheme, "--format", "json"],
        dir.path(),
    );
    let help = lint["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "KP301" && d["message"].as_str().unwrap().contains("cart_view"))
        .unwrap_or_else(|| panic!("no KP301 for cart_view: {err}"))["help"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, plan, err) = json(
        &["plan", "--scheme", scheme, "--format", "json"],
        dir.path(),
    );
    let b = plan["batches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["batch"] == "cart_view")
        .unwrap_or_else(|| panic!("{err}"))
        .clone();
    let rec = &b["candidates"][b["recommended"].as_u64().unwrap() as usize];
    assert_eq!(rec["kind"], "tag");
    let rewrites = rec["rewrites"].as_array().unwrap();
    assert!(!rewrites.is_empty());
    for r in rewrites {
        let said = format!(
            "{}: \"{}\"",
            r["key"].as_str().unwrap(),
            r["to"].as_str().unwrap()
        );
        assert!(
            help.contains(&said),
            "lint says `{help}`, plan rewrites {said}"
        );
    }
    // And lint names no key that plan leaves alone.
    assert_eq!(help.matches(": \"").count(), rewrites.len(), "{help}");
}

/// `plan --format yaml` writes a scheme that lints clean even when the best layout keeps a
/// tag with fewer values than KP201 asks: the key then allows KP201, with a reason.
fn the_planned_scheme_lints_clean_with_a_crowded_tag_kept_on_purpose() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = dir.path().join("keyplan.yaml");
    std::fs::write(
        &scheme,
        "version: 1\nvars:\n  board: { kind: word, cardinality: 20 }\n  day: { kind: date, cardinality: 30 }\nkeys:\n  leaderboard: { pattern: \"lb:{global}:<board>:<day>\", type: zset }\nbatches:\n  boards: { command: multi, keys: [leaderboard], size: 20, same: [day] }\n",
    )
    .unwrap();
    let out = keyplan()
        .current_dir(dir.path())
        .args(["plan", "--format", "yaml"])
        .output()
        .unwrap();
    let planned = String::from_utf8(out.stdout).unwrap();
    assert!(
        planned.contains("allow: [KP201], reason: \"keyplan plan:"),
        "{planned}"
    );
    std::fs::write(&scheme, &planned).unwrap();
    let lint = keyplan()
        .current_dir(dir.path())
        .arg("lint")
        .output()
        .unwrap();
    assert_eq!(
        lint.status.code(),
        Some(0),
        "{planned}\n{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    // Planning the planned scheme again changes nothing.
    let again = keyplan()
        .current_dir(dir.path())
        .args(["plan", "--format", "yaml"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(again.stdout).unwrap(), planned);
}

/// `plan --client NAME` scores with that profile, even where the name also stands for a
/// library's second API elsewhere (`redis-py`); a choice of several is refused with the names.
fn plan_scores_with_one_named_client() {
    let dir = tempfile::tempdir().unwrap();
    let scheme = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/keyplan.yaml");
    let (code, v, err) = json(
        &[
            "plan", "--scheme", scheme, "--client", "redis-py", "--format", "json",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(v["scored_with"], "client redis-py");
    let out = keyplan()
        .args(["plan", "--scheme", scheme, "--client", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plan scores one client at a time"), "{err}");
    assert!(err.contains("name one of them"), "{err}");
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "a_schemes_topology_file_is_used_by_every_command",
        a_schemes_topology_file_is_used_by_every_command,
    ),
    (
        "a_rule_override_reaches_the_planner",
        a_rule_override_reaches_the_planner,
    ),
    (
        "plan_reasons_and_exit_status_follow_its_candidates",
        plan_reasons_and_exit_status_follow_its_candidates,
    ),
    (
        "lint_and_plan_give_the_same_fix_for_a_cross_slot_batch",
        lint_and_plan_give_the_same_fix_for_a_cross_slot_batch,
    ),
    (
        "the_planned_scheme_lints_clean_with_a_crowded_tag_kept_on_purpose",
        the_planned_scheme_lints_clean_with_a_crowded_tag_kept_on_purpose,
    ),
    (
        "plan_scores_with_one_named_client",
        plan_scores_with_one_named_client,
    ),
];
