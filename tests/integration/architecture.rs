//! The layers hold: domain modules (everything but `report/`, `cli/` and `main.rs`) never reach
//! into the renderers or the command line, and never print.

use std::path::{Path, PathBuf};

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

fn domain_modules_do_not_import_the_renderers_or_the_cli_and_do_not_print() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("report/") || rel.starts_with("cli/") || rel == "main.rs" {
            continue;
        }
        checked += 1;
        let text = std::fs::read_to_string(f).unwrap();
        // Only the code above the unit tests.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            let l = line.trim_start();
            if l.starts_with("//") {
                continue;
            }
            for needle in [
                "crate::report",
                "crate::cli",
                "println!",
                "eprintln!",
                "std::io::stdout",
                "std::io::stderr",
            ] {
                if l.contains(needle) && !(rel == "lib.rs" && l.starts_with("pub mod")) {
                    bad.push(format!("src/{rel}:{}: {needle}: {}", i + 1, l));
                }
            }
        }
    }
    assert!(checked > 30, "only {checked} domain files found");
    assert!(bad.is_empty(), "layer violations:\n{}", bad.join("\n"));
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[(
    "domain_modules_do_not_import_the_renderers_or_the_cli_and_do_not_print",
    domain_modules_do_not_import_the_renderers_or_the_cli_and_do_not_print,
)];
