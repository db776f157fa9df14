//! Snapshots (insta) of what users read: every subcommand's `--help`, and each renderer on the
//! bundled example data. Run in-process through `keyplan::cli::run`, as a pipe sees it. A change
//! to any of them shows up as a diff to review (`cargo insta review`, or
//! `INSTA_UPDATE=always cargo test snapshots` to accept).

fn run(args: &[&str]) -> String {
    let (code, out, err) = crate::support::run_in_process(args);
    format!("exit {code}\n--- stdout\n{out}--- stderr\n{err}")
}

fn snap(name: &str, args: &[&str]) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_description(format!("keyplan {}", args.join(" ")));
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, run(args)));
}

fn help_of_every_subcommand() {
    snap("help", &["--help"]);
    for cmd in [
        "analyze",
        "bench",
        "code",
        "completions",
        "lint",
        "man",
        "migrate",
        "plan",
        "rebalance",
        "reshard",
        "rules",
        "scan",
        "simulate",
        "slot",
        "verify",
    ] {
        snap(&format!("help-{cmd}"), &[cmd, "--help"]);
    }
}

const KEYS: &str = "examples/app.keys";
const SCHEME: &str = "examples/keyplan.yaml";
const BATCHES: &str = "examples/batches.txt";

fn analyze_renderers() {
    snap("analyze-table", &["analyze", KEYS]);
    snap("analyze-json", &["analyze", "--format", "json", KEYS]);
}

fn lint_renderers() {
    for f in ["human", "json", "sarif", "github"] {
        snap(
            &format!("lint-{f}"),
            &["lint", "--scheme", SCHEME, "--keys", KEYS, "--format", f],
        );
    }
}

fn plan_renderers() {
    for f in ["table", "json", "yaml"] {
        snap(
            &format!("plan-{f}"),
            &["plan", "--scheme", SCHEME, "--format", f],
        );
    }
    snap(
        "plan-observed-table",
        &["plan", "--batches", BATCHES, "--keys", KEYS],
    );
}

fn simulate_renderers() {
    snap("simulate-table", &["simulate", "--batches", BATCHES]);
    snap(
        "simulate-json",
        &["simulate", "--batches", BATCHES, "--format", "json"],
    );
    snap(
        "simulate-sweep",
        &["simulate", "--scheme", SCHEME, "--sizes", "1,10,100"],
    );
    snap(
        "simulate-clients",
        &["simulate", "--batches", BATCHES, "--client", "all"],
    );
}

fn migration_renderers() {
    let twemproxy = [
        "migrate",
        "--from",
        "examples/twemproxy.yml",
        "--to-masters",
        "3",
        "--keys",
        KEYS,
        "--batches",
        BATCHES,
    ];
    snap("migrate-table", &twemproxy);
    snap(
        "migrate-json",
        &[&twemproxy[..], &["--format", "json"]].concat(),
    );
    snap(
        "rebalance-table",
        &[
            "rebalance",
            "--preview",
            "--masters",
            "3",
            "--keys",
            KEYS,
            "--weight",
            "master-0=2",
        ],
    );
    snap(
        "rebalance-json",
        &[
            "rebalance",
            "--preview",
            "--masters",
            "3",
            "--keys",
            KEYS,
            "--weight",
            "master-0=2",
            "--format",
            "json",
        ],
    );
    snap(
        "reshard-table",
        &[
            "reshard",
            "--preview",
            "--masters",
            "3",
            "--keys",
            KEYS,
            "--from",
            "master-1",
            "--to",
            "master-0",
            "--slots",
            "500",
        ],
    );
}

fn slot_and_rules_renderers() {
    snap(
        "slot-table",
        &[
            "slot",
            "--masters",
            "3",
            "--explain",
            "user:1",
            "{user:1}:cart",
            "a{}b",
        ],
    );
    snap(
        "slot-json",
        &[
            "slot",
            "--masters",
            "3",
            "--format",
            "json",
            "user:1",
            "{user:1}:cart",
        ],
    );
    snap(
        "slot-counts",
        &["slot", "--counts", "--masters", "3", "--keys", KEYS],
    );
    snap("rules-list", &["rules"]);
    snap("rules-explain", &["rules", "explain", "KP201"]);
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    ("help_of_every_subcommand", help_of_every_subcommand),
    ("analyze_renderers", analyze_renderers),
    ("lint_renderers", lint_renderers),
    ("plan_renderers", plan_renderers),
    ("simulate_renderers", simulate_renderers),
    ("migration_renderers", migration_renderers),
    ("slot_and_rules_renderers", slot_and_rules_renderers),
];
