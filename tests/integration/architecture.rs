//! The map holds: the crate docs (`src/lib.rs`, "The map") give each top-level module of
//! `src/` a row naming its layer, the modules it uses and whether it may touch files, sockets,
//! processes or the environment. This test reads that table (it is stated nowhere else) and
//! fails on a module without a row, a `crate::` path outside its row, a use the row lists that
//! the module does not make, a use that goes down the layers, I/O outside the I/O rows, clap or
//! printing outside the shell.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top first: a module uses only modules of its own layer or of those above.
const LAYER_ORDER: &[&str] = &[
    "core", "readers", "model", "engines", "adapters", "output", "shell",
];

/// The uses the layers alone would not allow, argued in the crate docs: a cycle (both
/// directions) and the output layer reading an adapter's result type.
const ARGUED: &[(&str, &str)] = &[("keys", "rdb"), ("rdb", "keys"), ("report", "bench")];

/// One row of the map: layer, module, the modules it uses, whether it may do I/O.
struct Row {
    layer: String,
    module: String,
    uses: BTreeSet<String>,
    io: bool,
}

/// The map's rows, read from the crate docs.
fn the_map() -> Vec<Row> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split(',')
            .map(|c| c.trim().trim_matches('`').to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        let Some(row) = line.strip_prefix("//! |") else {
            if in_table {
                break;
            }
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if cells[0] == "layer" {
            assert_eq!(
                &cells[..4],
                ["layer", "module", "uses", "I/O"],
                "src/lib.rs: the map's columns"
            );
            in_table = true;
            continue;
        }
        if !in_table || cells[0].starts_with("---") {
            continue;
        }
        // [`name`] or [`name`](mod@name)
        let module = cells[1]
            .trim_start_matches("[`")
            .split('`')
            .next()
            .unwrap()
            .to_string();
        let io = match cells[3] {
            "yes" => true,
            "no" => false,
            other => panic!("src/lib.rs: {module}'s I/O cell is {other:?}, not yes or no"),
        };
        assert!(
            LAYER_ORDER.contains(&cells[0]),
            "src/lib.rs: {module}'s layer {:?} is not one of {LAYER_ORDER:?}",
            cells[0]
        );
        rows.push(Row {
            layer: cells[0].to_string(),
            module,
            uses: names(cells[2]),
            io,
        });
    }
    assert!(
        rows.len() > 15,
        "src/lib.rs: the map has {} rows",
        rows.len()
    );
    rows
}

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

fn every_module_keeps_to_its_row_of_the_map() {
    let map = the_map();
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
    let rows: BTreeSet<String> = map.iter().map(|r| r.module.clone()).collect();
    let missing: Vec<&String> = top.difference(&rows).collect();
    let stale: Vec<&String> = rows.difference(&top).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "src/lib.rs's map: modules without a row: {missing:?}; rows without a module: {stale:?}"
    );
    let mut bad = Vec::new();
    let mut used: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
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
        let row = map.iter().find(|r| r.module == module).unwrap();
        let layer = &row.layer;
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
            for name in crate_paths(l) {
                if name == module {
                    continue;
                }
                if !row.uses.contains(&name) {
                    bad.push(format!(
                        "{at}: `{module}` ({layer}) uses `{name}`, which its row of the map does not list: {l}"
                    ));
                }
                used.entry(&row.module).or_default().insert(name);
            }
            if !row.io {
                for needle in IO {
                    if l.contains(needle) {
                        bad.push(format!(
                            "{at}: `{module}` ({layer}) does I/O ({needle}): {l}"
                        ));
                    }
                }
            }
            if layer != "shell" {
                for needle in SHELL {
                    if l.contains(needle) {
                        bad.push(format!(
                            "{at}: `{module}` ({layer}) speaks to the shell ({needle}): {l}"
                        ));
                    }
                }
            }
        }
    }
    // The map is exact: a use it lists is a use the module makes.
    for row in &map {
        let made = used.get(row.module.as_str()).cloned().unwrap_or_default();
        for name in row.uses.difference(&made) {
            bad.push(format!(
                "src/lib.rs: the map lets `{}` use `{name}`, which it does not: drop it from the row",
                row.module
            ));
        }
    }
    assert!(checked > 100, "only {checked} files found");
    assert!(bad.is_empty(), "the map is not kept:\n{}", bad.join("\n"));
}

fn the_map_is_layered() {
    let map = the_map();
    let rank = |layer: &str| LAYER_ORDER.iter().position(|l| *l == layer).unwrap();
    let row = |m: &str| {
        map.iter()
            .find(|r| r.module == m)
            .unwrap_or_else(|| panic!("src/lib.rs: the map names `{m}`, which has no row"))
    };
    let mut bad = Vec::new();
    for r in &map {
        for name in &r.uses {
            let u = row(name);
            let argued = ARGUED.contains(&(r.module.as_str(), name.as_str()));
            let down = rank(&u.layer) > rank(&r.layer);
            let back = u.uses.contains(&r.module);
            // Engines and the output layer do no I/O of their own, so an adapter's use is one
            // too: only the shell and the adapters may use the adapters.
            let adapter =
                u.layer == "adapters" && !matches!(r.layer.as_str(), "adapters" | "shell");
            if (down || back || adapter) != argued {
                bad.push(if argued {
                    format!("`{}` → `{name}` is listed as argued but the layers allow it now: drop it from ARGUED and the crate docs", r.module)
                } else if down {
                    format!("`{}` ({}) uses `{name}` ({}), a layer below", r.module, r.layer, u.layer)
                } else if back {
                    format!("`{}` and `{name}` use each other", r.module)
                } else {
                    format!("`{}` ({}) uses the adapter `{name}`", r.module, r.layer)
                });
            }
        }
    }
    // No longer cycle either (within a layer, since no use goes down): a module reached
    // again from itself, the argued pair aside.
    for r in &map {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = vec![r.module.as_str()];
        while let Some(m) = todo.pop() {
            for name in &row(m).uses {
                if ARGUED.contains(&(m, name.as_str())) {
                    continue;
                }
                if *name == r.module {
                    bad.push(format!("`{}` reaches itself through `{m}`", r.module));
                } else if seen.insert(name.as_str()) {
                    todo.push(name);
                }
            }
        }
    }
    bad.dedup();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "every_module_keeps_to_its_row_of_the_map",
        every_module_keeps_to_its_row_of_the_map,
    ),
    ("the_map_is_layered", the_map_is_layered),
];
