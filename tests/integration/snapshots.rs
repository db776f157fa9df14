//! Snapshots (insta) of what users read: every subcommand's `--help`, and each renderer on the
//! bundled example data. Run in-process through `keyplan::cli::run`, as a pipe sees it. A change
//! to any of them shows up as a diff to review (`cargo insta review`, or
//! `INSTA_UPDATE=always cargo test snapshots` to accept).

fn run(args: &[&str]) -> String {
    let (code, out, err) = crate::support::run_in_process(args);
    let out = if args.windows(2).any(|w| w == ["--format", "html"]) {
        html_for_review(&out)
    } else {
        out
    };
    format!("exit {code}\n--- stdout\n{out}--- stderr\n{err}")
}

/// An HTML report as its snapshot keeps it: each run of 16 or more chart cells in a row (the
/// per-slot heat map alone is 16,384 of them, a megabyte) becomes one line with the run's
/// length, its first and last cell's title and a digest of its bytes, so that any change to a
/// cell still changes the snapshot; and a line break before each `<section>`, `<h2>`,
/// `<table>`, `<tr>` and `<svg>`, so that a diff points at the part that changed.
fn html_for_review(html: &str) -> String {
    let rect = r"<rect [^>]*(?:/>|><title>[^<]*</title></rect>)";
    let runs = regex::Regex::new(&format!("(?:{rect}){{16,}}")).unwrap();
    let title = regex::Regex::new(r"<title>([^<]*)</title>").unwrap();
    let count = regex::Regex::new("<rect ").unwrap();
    let collapsed = runs.replace_all(html, |c: &regex::Captures<'_>| {
        let run = &c[0];
        let titles: Vec<&str> = title
            .captures_iter(run)
            .map(|t| t.get(1).unwrap().as_str())
            .collect();
        // FNV-1a: stable across runs and platforms.
        let digest = run.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let named = match (titles.first(), titles.last()) {
            (Some(first), Some(last)) => format!(", '{first}' to '{last}'"),
            _ => String::new(),
        };
        format!(
            "\n<!-- {} cells{named}, fnv1a {digest:016x} -->\n",
            count.find_iter(run).count()
        )
    });
    let mut out = String::with_capacity(collapsed.len());
    for (i, part) in collapsed.split('<').enumerate() {
        if i > 0 {
            let opens_block = ["section", "h2", "table", "tr", "svg"]
                .iter()
                .any(|t| part.starts_with(t) && part[t.len()..].starts_with([' ', '>']));
            if opens_block && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push('<');
        }
        out.push_str(part);
    }
    out
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

/// The inputs each command's `--format` words are rendered on, by [`every_format_word`]: one
/// row per subcommand that offers `--format`. `None`: not rendered here, and why.
fn format_inputs(cmd: &str) -> Result<Vec<String>, &'static str> {
    let twemproxy = [
        "--from",
        "examples/twemproxy.yml",
        "--to-masters",
        "3",
        "--keys",
        KEYS,
        "--batches",
        BATCHES,
    ];
    let args: &[&str] = match cmd {
        "analyze" => &[KEYS],
        "lint" => &["--scheme", SCHEME, "--keys", KEYS],
        "plan" => &["--scheme", SCHEME],
        "simulate" => &["--batches", BATCHES],
        "migrate" => &twemproxy,
        "rebalance" => &[
            "--preview",
            "--masters",
            "3",
            "--keys",
            KEYS,
            "--weight",
            "master-0=2",
        ],
        "reshard" => &[
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
        "slot" => &["--masters", "3", "user:1", "{user:1}:cart"],
        "scan" => &["--rdb", RDB],
        "bench" => return Err("it measures a live cluster (bench:: renders both words)"),
        "verify" => return Err("it reads a live cluster (verify:: renders its reports)"),
        "code" => return Err("its output is being reworked (code:: covers it)"),
        _ => return Err(""),
    };
    Ok(std::iter::once(cmd)
        .chain(args.iter().copied())
        .map(String::from)
        .collect())
}

/// `scan --rdb`'s input: two string keys in Redis's RDB format (version 9, no checksum),
/// `{user:1}:cart` = `apple` and `user:1` = `bob`.
const RDB: &str = "tests/fixtures/rdb/two-keys.rdb";

/// Every `--format` word of every command that offers one, rendered on the example data and
/// held to a snapshot named `<command>-<word>`. The words are read from the command line
/// itself, so a new word or a new command with `--format` is rendered here or fails the test.
fn every_format_word() {
    let cli = <keyplan::cli::Cli as clap::CommandFactory>::command();
    let mut rendered = 0;
    for sub in cli.get_subcommands() {
        let cmd = sub.get_name();
        let Some(format) = sub.get_arguments().find(|a| a.get_id() == "format") else {
            continue;
        };
        let base = match format_inputs(cmd) {
            Ok(base) => base,
            Err("") => panic!("keyplan {cmd} offers --format: give format_inputs its inputs"),
            Err(_) => continue,
        };
        let words = format.get_possible_values();
        assert!(!words.is_empty(), "keyplan {cmd} --format lists no words");
        for word in words {
            let word = word.get_name();
            let mut args: Vec<&str> = base.iter().map(String::as_str).collect();
            args.extend(["--format", word]);
            let (code, out, err) = crate::support::run_in_process(&args);
            assert!(
                code <= 1 && !out.is_empty(),
                "keyplan {}: exit {code}, {} bytes out\n{err}",
                args.join(" "),
                out.len()
            );
            snap(&format!("{cmd}-{word}"), &args);
            rendered += 1;
        }
    }
    assert!(rendered >= 30, "only {rendered} --format words rendered");
}

fn plan_renderers() {
    snap(
        "plan-observed-table",
        &["plan", "--batches", BATCHES, "--keys", KEYS],
    );
}

fn simulate_renderers() {
    snap(
        "simulate-sweep",
        &["simulate", "--scheme", SCHEME, "--sizes", "1,10,100"],
    );
    snap(
        "simulate-clients",
        &["simulate", "--batches", BATCHES, "--client", "all"],
    );
}

fn slot_and_rules_renderers() {
    snap(
        "slot-explain",
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
        "slot-counts",
        &["slot", "--counts", "--masters", "3", "--keys", KEYS],
    );
    snap("rules-list", &["rules"]);
    snap("rules-explain", &["rules", "explain", "KP201"]);
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    ("help_of_every_subcommand", help_of_every_subcommand),
    ("every_format_word", every_format_word),
    ("plan_renderers", plan_renderers),
    ("simulate_renderers", simulate_renderers),
    ("slot_and_rules_renderers", slot_and_rules_renderers),
];
