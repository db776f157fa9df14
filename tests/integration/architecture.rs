//! The layers hold, as one table: each top-level module of `src/` has a row naming the modules
//! it may use and whether it may touch files, sockets, processes or the environment. Engines
//! are pure and know nothing of the command line (no clap, no flags' types); readers and the
//! live client do the I/O; renderers render what the engines computed; only the shell (`cli/`
//! and `main.rs`) prints. A module without a row, a `crate::` path outside its row, I/O outside
//! the I/O rows, clap outside the shell, or printing outside it fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Layer, module, the modules it may use, whether it may do I/O.
const LAYERS: &[(&str, &str, &[&str], bool)] = &[
    // Foundations: no dependencies of their own.
    ("foundation", "slot", &[], false),
    ("foundation", "simd", &[], false),
    ("foundation", "sketch", &[], false),
    ("foundation", "skew", &[], false),
    ("foundation", "command", &[], false),
    ("foundation", "error", &[], false),
    // Readers of key dumps and snapshots (memory maps, pipes, files) and their records.
    ("reader", "keys", &["rdb", "slot"], true),
    ("reader", "rdb", &["keys", "slot"], true),
    // Engines: pure computation over values.
    ("engine", "pattern", &["simd", "sketch", "slot"], false),
    ("engine", "topology", &["error", "keys", "slot"], false),
    (
        "engine",
        "scheme",
        &["command", "error", "pattern", "simd"],
        false,
    ),
    (
        "engine",
        "simulate",
        &["command", "keys", "scheme", "slot", "topology"],
        false,
    ),
    (
        "engine",
        "migrate",
        &["keys", "rdb", "simulate", "skew", "slot", "topology"],
        false,
    ),
    (
        "engine",
        "lint",
        &[
            "code", "command", "error", "keys", "pattern", "scheme", "simd", "simulate", "sketch",
            "skew", "slot", "topology",
        ],
        false,
    ),
    (
        "engine",
        "plan",
        &[
            "keys", "lint", "pattern", "scheme", "simulate", "slot", "topology",
        ],
        false,
    ),
    ("engine", "code", &["command", "slot"], false),
    (
        "engine",
        "analyze",
        &[
            "keys", "pattern", "rdb", "sketch", "skew", "slot", "topology",
        ],
        false,
    ),
    // Adapters: input files and the live cluster.
    (
        "adapter",
        "files",
        &["error", "keys", "rdb", "simulate"],
        true,
    ),
    (
        "adapter",
        "live",
        &["analyze", "keys", "migrate", "slot", "topology"],
        true,
    ),
    (
        "adapter",
        "bench",
        &["keys", "live", "simulate", "slot", "topology"],
        false,
    ),
    // Renderers: every engine's results, to a writer they are given.
    (
        "renderer",
        "report",
        &[
            "analyze", "bench", "code", "keys", "lint", "migrate", "plan", "rdb", "simulate",
            "skew", "slot", "topology",
        ],
        false,
    ),
    // The shell: arguments, loading, progress, output.
    (
        "shell",
        "cli",
        &[
            "analyze", "bench", "code", "command", "error", "files", "keys", "lint", "live",
            "migrate", "pattern", "plan", "rdb", "report", "scheme", "simulate", "sketch", "skew",
            "slot", "topology",
        ],
        true,
    ),
];

/// What only the I/O rows may name.
const IO: &[&str] = &[
    "std::fs",
    "std::net",
    "TcpStream",
    "File::open",
    "File::create",
    "std::io::stdin",
    "std::env::var",
    "std::process",
];

/// What only the shell may name.
const SHELL: &[&str] = &[
    "clap::",
    "println!",
    "eprintln!",
    "print!(",
    "eprint!(",
    "std::io::stdout",
    "std::io::stderr",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The `crate::name` paths a line names (`use crate::{a, b}` too).
fn crate_paths(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

fn every_module_keeps_to_its_row_of_the_layer_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    // Every top-level module has a row.
    let top: BTreeSet<String> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            first.trim_end_matches(".rs").to_string()
        })
        // (`build.rs` is Cargo's build script, not a module.)
        .filter(|m| m != "lib" && m != "main" && m != "build")
        .collect();
    let rows: BTreeSet<String> = LAYERS.iter().map(|r| r.1.to_string()).collect();
    let missing: Vec<&String> = top.difference(&rows).collect();
    let stale: Vec<&String> = rows.difference(&top).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "modules without a row: {missing:?}; rows without a module: {stale:?}"
    );
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "lib.rs" || rel == "main.rs" || rel == "build.rs" {
            continue;
        }
        let module = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let (layer, _, may_use, io) = LAYERS.iter().find(|r| r.1 == module).unwrap();
        checked += 1;
        let text = std::fs::read_to_string(f).unwrap();
        // Only the code above the unit tests.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            let l = line.trim_start();
            if l.starts_with("//") {
                continue;
            }
            let at = format!("src/{rel}:{}", i + 1);
            for used in crate_paths(l) {
                if used != module && !may_use.contains(&used.as_str()) {
                    bad.push(format!("{at}: the {layer} `{module}` uses `{used}`: {l}"));
                }
            }
            if !io {
                for needle in IO {
                    if l.contains(needle) {
                        bad.push(format!(
                            "{at}: the {layer} `{module}` does I/O ({needle}): {l}"
                        ));
                    }
                }
            }
            if *layer != "shell" {
                for needle in SHELL {
                    if l.contains(needle) {
                        bad.push(format!(
                            "{at}: the {layer} `{module}` speaks to the shell ({needle}): {l}"
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} files found");
    assert!(bad.is_empty(), "layer violations:\n{}", bad.join("\n"));
}

fn the_table_is_layered() {
    // Engines use foundations, readers and other engines only; readers use foundations and each
    // other; nothing but the shell uses the shell, and no engine uses an adapter or a renderer.
    let layer_of = |m: &str| LAYERS.iter().find(|r| r.1 == m).map(|r| r.0).unwrap();
    for (layer, module, may_use, _) in LAYERS {
        for used in *may_use {
            let l = layer_of(used);
            let ok = match *layer {
                "foundation" => false,
                "reader" => matches!(l, "foundation" | "reader"),
                "engine" => matches!(l, "foundation" | "reader" | "engine"),
                "adapter" => l != "renderer" && l != "shell",
                "renderer" => l != "shell" && l != "adapter" || *used == "bench",
                "shell" => true,
                _ => false,
            };
            assert!(ok, "the {layer} `{module}` may not use the {l} `{used}`");
        }
    }
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "every_module_keeps_to_its_row_of_the_layer_table",
        every_module_keeps_to_its_row_of_the_layer_table,
    ),
    ("the_table_is_layered", the_table_is_layered),
];
