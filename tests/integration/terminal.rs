//! keyplan run the way a person runs it: through a pseudo-terminal (util-linux `script`), where
//! progress bars draw. Every command that can show progress must finish there with the same
//! output and exit status as through pipes, and draw its bar; with stdout on a 100-column
//! terminal, every line fits.

use super::analyze::{Cluster, generated_keys};
use super::support::{keyplan, require_binary};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `shell` (a `sh -c` line) with stdin, stdout and stderr on a fresh pseudo-terminal
/// `cols` columns wide; returns the exit status and everything the terminal showed.
/// Progress bars appear at once (no 400 ms delay), so even a quick run draws one.
pub(crate) fn in_pty(shell: &str, cols: u16) -> (i32, String) {
    let script = require_binary("script").expect("checked by the caller");
    let line = format!("stty cols {cols} rows 50 2>/dev/null; {shell}");
    let mut child = Command::new(script)
        .args(["-qec", &line, "/dev/null"])
        .env("KEYPLAN_PROGRESS_DELAY_MS", "0")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run script");
    // Read what the terminal shows while the command runs (a full pipe would stop it).
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut shown = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut shown);
        shown
    });
    // A hang is the defect under test: fail instead of waiting forever.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for script") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("`{shell}` did not finish in a terminal within 120 s (hang)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let shown = reader.join().expect("reader thread");
    let code = status.code().unwrap_or(-1);
    (code, String::from_utf8_lossy(&shown).into_owned())
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("keyplan")
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn command_line(args: &[String]) -> String {
    let mut line = sh_quote(&bin().display().to_string());
    for a in args {
        line.push(' ');
        line.push_str(&sh_quote(a));
    }
    line
}

/// The piped run of `args`: its output and exit status.
fn piped(args: &[String], stdin: Option<&Path>) -> Output {
    let mut cmd = keyplan();
    cmd.args(args);
    if let Some(p) = stdin {
        cmd.pipe_stdin(p).unwrap();
    }
    cmd.output().unwrap()
}

/// What the terminal showed, without escape sequences and with carriage-return redraws
/// resolved to the last text of each line.
pub(crate) fn screen_lines(typescript: &str) -> Vec<String> {
    let mut clean = String::new();
    let mut chars = typescript.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ params final-byte
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
            continue;
        }
        clean.push(c);
    }
    clean
        .split('\n')
        .map(|l| {
            let l = l.trim_end_matches('\r');
            l.rsplit('\r').next().unwrap_or("").to_string()
        })
        .collect()
}

/// Runs `args` through a pipe and through a terminal (stdout to a file, stderr on the
/// terminal); both must end alike, with the same stdout, and the terminal must show `bar`.
fn same_in_a_terminal(args: &[String], stdin: Option<&Path>, bar: &str) {
    same_in_a_terminal_as(args, stdin, bar, |out| out.to_vec())
}

/// [`same_in_a_terminal`], comparing stdout after `normal` (for output whose order may vary).
fn same_in_a_terminal_as(
    args: &[String],
    stdin: Option<&Path>,
    bar: &str,
    normal: impl Fn(&[u8]) -> Vec<u8>,
) {
    let expected = piped(args, stdin);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stdout");
    let mut line = command_line(args);
    if let Some(p) = stdin {
        line = format!("cat {} | {line}", sh_quote(&p.display().to_string()));
    }
    line.push_str(&format!(" > {}", sh_quote(&out.display().to_string())));
    let (code, shown) = in_pty(&line, 100);
    let got = std::fs::read(&out).unwrap();
    assert_eq!(
        Some(code),
        expected.status.code(),
        "`{line}` exited {code} in a terminal; piped: {:?}\n{shown}",
        expected.status
    );
    assert!(
        normal(&got) == normal(&expected.stdout),
        "`{line}`: stdout in a terminal differs from the piped run\n--- terminal:\n{}\n--- piped:\n{}",
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&expected.stdout)
    );
    assert!(
        shown.contains(bar),
        "`{line}`: no progress bar ('{bar}') on the terminal:\n{shown}"
    );
}

pub(crate) fn have_script() -> bool {
    require_binary("script").is_some()
}

fn dump(dir: &Path, n: usize) -> PathBuf {
    let keys = generated_keys(n);
    let mut text = Vec::with_capacity(n * 30);
    for k in keys {
        text.extend_from_slice(&k);
        text.push(b'\n');
    }
    let p = dir.join("keys.txt");
    std::fs::write(&p, text).unwrap();
    p
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn examples(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .display()
        .to_string()
}

fn offline_commands_finish_in_a_terminal_with_the_piped_output() {
    if !have_script() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = dump(dir.path(), 200_000);
    let k = keys.display().to_string();
    same_in_a_terminal(&s(&["analyze", &k]), None, "reading keys");
    same_in_a_terminal(
        &s(&["analyze", "--format", "json", "-"]),
        Some(&keys),
        "reading keys",
    );
    same_in_a_terminal(
        &s(&["slot", "--counts", "--keys", &k]),
        None,
        "reading keys",
    );
    same_in_a_terminal(&s(&["lint", "--keys", &k]), None, "reading keys");
    // A source tree of 3,000 files: `keyplan code` draws its bar too.
    let tree = dir.path().join("src");
    let shop = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code/shop.py"),
    )
    .unwrap();
    for i in 0..3000 {
        let sub = tree.join(format!("pkg{}", i / 100));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("m{i}.py")), &shop).unwrap();
    }
    same_in_a_terminal(
        &s(&["code", "--format", "json", &tree.display().to_string()]),
        None,
        "reading source",
    );
    let scheme = examples("keyplan.yaml");
    same_in_a_terminal(
        &s(&["plan", "--scheme", &scheme, "--keys", &k]),
        None,
        "reading keys",
    );
    same_in_a_terminal(
        &s(&["rebalance", "--preview", "--masters", "3", "--keys", &k]),
        None,
        "reading keys",
    );
}

fn quiet_draws_no_bar() {
    if !have_script() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = dump(dir.path(), 20_000);
    let line = format!(
        "{} --quiet > /dev/null",
        command_line(&s(&["analyze", &keys.display().to_string()]))
    );
    let (code, shown) = in_pty(&line, 100);
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("reading keys"), "{shown}");
}

fn live_commands_finish_in_a_terminal_with_the_piped_output() {
    if !have_script() {
        return;
    }
    let Some(cluster) = Cluster::create() else {
        return;
    };
    cluster.load(&generated_keys(20_000));
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    // The nodes' own memory and command-time figures (INFO memory, INFO commandstats) move
    // between two runs: compare the rest.
    same_in_a_terminal_as(
        &s(&[
            "analyze",
            "--cluster",
            &url,
            "--sample",
            "all",
            "--format",
            "json",
        ]),
        None,
        "sampling",
        |out| {
            let mut v: serde_json::Value = serde_json::from_slice(out).unwrap();
            for n in v["nodes"].as_array_mut().unwrap() {
                n.as_object_mut().unwrap().remove("dataset_bytes");
                n.as_object_mut().unwrap().remove("cpu_usec");
            }
            serde_json::to_vec(&v).unwrap()
        },
    );
    // Nodes are sampled at once, so their keys interleave differently run to run.
    same_in_a_terminal_as(
        &s(&["scan", "--cluster", &url, "--sample", "all"]),
        None,
        "sampling",
        |out| {
            let mut lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
            lines.sort();
            lines.join(&b'\n')
        },
    );
    // Bench measures timings, which differ run to run: compare the exit status and the
    // table's fixed parts, and check that results are printed as each batch finishes.
    let dir = tempfile::tempdir().unwrap();
    let batches = dir.path().join("batches.txt");
    std::fs::write(&batches, "MGET a b c\nMSET {t}a 1 {t}b 2\n").unwrap();
    let args = s(&[
        "bench",
        "--cluster",
        &url,
        "--allow-writes",
        "--duration",
        "0.2",
        "--strategy",
        "pipeline,hashtag",
        "--batches",
        &batches.display().to_string(),
    ]);
    let expected = piped(&args, None);
    let (code, shown) = in_pty(&command_line(&args), 100);
    assert_eq!(Some(code), expected.status.code(), "{shown}");
    assert!(shown.contains("benchmarking"), "{shown}");
    for line in String::from_utf8_lossy(&expected.stdout).lines() {
        if line == "MGET a b c" || line.starts_with("line 1: MGET a b c") {
            assert!(shown.contains(line), "missing `{line}` in\n{shown}");
        }
    }
    // Its tables and its bar fit the 100-column terminal.
    for l in screen_lines(&shown) {
        assert!(
            l.chars().count() <= 100,
            "bench: a line of {} columns:\n{l}",
            l.chars().count()
        );
    }
    // Bench and the live report fit an 80-column terminal too (their figures move run to run,
    // so the words are not compared with a --wide run as the offline ones are).
    let live_table = s(&["analyze", "--cluster", &url, "--sample", "200", "--bytes"]);
    for args in [&args, &live_table] {
        let (code, shown) = in_pty(&format!("{} 2>/dev/null", command_line(args)), 80);
        assert!(
            code == 0 || code == 1,
            "{}: exit {code}\n{shown}",
            args.join(" ")
        );
        for l in screen_lines(&shown) {
            assert!(
                l.chars().count() <= 80,
                "{}: a line of {} columns on an 80-column terminal:\n{l}",
                args.join(" "),
                l.chars().count()
            );
        }
    }
}

/// The words of a text: what lies between spaces and table borders.
fn tokens(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || "│┆┌┐└┘├┤┬┴┼╞╪╡═─▸".contains(c))
        .filter(|t| !t.is_empty())
        .collect()
}

/// Every line a person sees on an 80- or a 100-column terminal fits it, and no number, range,
/// address or key is broken to get there: every word on the terminal is a word of the same
/// command's output with `--wide` (a table loses columns or turns into records, prose wraps at spaces, and an
/// over-long key is shortened with `…` in its middle).
fn output_fits_80_and_100_column_terminals() {
    if !have_script() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = dump(dir.path(), 20_000);
    // A 2 KB key, which lint reports whole in a pipe.
    let long = dir.path().join("long.txt");
    let mut text = std::fs::read(&keys).unwrap();
    text.extend_from_slice(&[b'x'; 2048]);
    text.push(b'\n');
    std::fs::write(&long, text).unwrap();
    let k = keys.display().to_string();
    let l = long.display().to_string();
    let scheme = examples("keyplan.yaml");
    let batches = examples("batches.txt");
    let app = examples("app.keys");
    let runs: Vec<Vec<String>> = vec![
        s(&["analyze", &k]),
        s(&["analyze", &app]),
        s(&["plan", "--scheme", &scheme]),
        s(&["plan", "--batches", &batches, "--keys", &k]),
        s(&["simulate", "--batches", &batches, "--client", "all"]),
        s(&["simulate", "--scheme", &scheme]),
        s(&["rebalance", "--preview", "--masters", "3", "--keys", &k]),
        s(&[
            "reshard",
            "--preview",
            "--masters",
            "3",
            "--from",
            "master-1",
            "--to",
            "master-2",
            "--slots",
            "100",
        ]),
        s(&["lint", "--scheme", &scheme, "--keys", &l]),
        s(&["rules"]),
        s(&["slot", "--counts", "--keys", &k]),
    ];
    for args in runs {
        // --wide keeps the natural width (tables whole, as pipes get them) and the
        // terminal's extras (charts): its words are the reference.
        let wide = format!("{} --wide 2>/dev/null", command_line(&args));
        let (wide_code, natural) = in_pty(&wide, 100);
        let natural = screen_lines(&natural).join("\n");
        let words: std::collections::HashSet<&str> = tokens(&natural).into_iter().collect();
        // Short headers and the legend under them use the same words in other places (`trips`
        // of `round trips`, `(its` of `skew (its keys)`): compared without the punctuation
        // around a word, a broken value still shows (`user:<int>:pr`, `546`).
        let trim = |t: &str| t.trim_matches(|c: char| "()[],;:".contains(c)).to_string();
        let bare_words: std::collections::HashSet<String> = words.iter().map(|t| trim(t)).collect();
        for cols in [80, 100] {
            let line = format!("{} 2>/dev/null", command_line(&args));
            let (code, shown) = in_pty(&line, cols);
            assert!(code == 0 || code == 1, "`{line}` exited {code}:\n{shown}");
            assert_eq!(code, wide_code, "{wide}");
            let lines = screen_lines(&shown);
            for l in &lines {
                assert!(
                    l.chars().count() <= usize::from(cols),
                    "`{}`: a line of {} columns on a {cols}-column terminal:\n{l}",
                    args.join(" "),
                    l.chars().count()
                );
                for t in tokens(l) {
                    // A prose column under a table is introduced as `▸ row: text`.
                    let bare = t.strip_suffix(':').unwrap_or(t);
                    assert!(
                        words.contains(t)
                            || words.contains(bare)
                            || bare_words.contains(&trim(t))
                            || t.contains('…'),
                        "`{}` on a {cols}-column terminal: {t:?} is not a word of the --wide output (a value broken across lines?):\n{l}\n\n{}",
                        args.join(" "),
                        lines.join("\n")
                    );
                }
            }
        }
    }
}

/// A progress bar on an 80-column terminal draws frames of at most 80 columns (one line, no
/// padding to twice the width) and never claims `eta 0s` while work is left: the eta is blank
/// until there is a rate, then counts down.
fn progress_frames_fit_80_columns() {
    if !have_script() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = dump(dir.path(), 300_000);
    let line = format!(
        "{} >/dev/null",
        command_line(&s(&[
            "analyze",
            &keys.display().to_string(),
            "--masters",
            "3"
        ]))
    );
    let (code, raw) = in_pty(&line, 80);
    assert_eq!(code, 0, "{raw}");
    let escape = regex::Regex::new("\x1b\\[[0-9;?]*[A-Za-z]").unwrap();
    let frames: Vec<String> = raw
        .split(['\r', '\n'])
        .map(|f| escape.replace_all(f, "").into_owned())
        .filter(|f| f.contains("reading keys"))
        .collect();
    assert!(!frames.is_empty(), "no bar drawn:\n{raw:?}");
    for f in &frames {
        assert!(
            f.chars().count() <= 80,
            "a frame of {} columns: {f:?}",
            f.chars().count()
        );
        // `eta 0s` only on a full bar (nothing left).
        let bar = f
            .split_once('[')
            .and_then(|(_, b)| b.split_once(']'))
            .map(|(b, _)| b);
        assert!(
            !f.contains("eta 0s") || bar.is_some_and(|b| b.chars().all(|c| c == '=')),
            "{f:?}"
        );
    }
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "progress_frames_fit_80_columns",
        progress_frames_fit_80_columns,
    ),
    (
        "offline_commands_finish_in_a_terminal_with_the_piped_output",
        offline_commands_finish_in_a_terminal_with_the_piped_output,
    ),
    ("quiet_draws_no_bar", quiet_draws_no_bar),
    (
        "live_commands_finish_in_a_terminal_with_the_piped_output",
        live_commands_finish_in_a_terminal_with_the_piped_output,
    ),
    (
        "output_fits_80_and_100_column_terminals",
        output_fits_80_and_100_column_terminals,
    ),
];
