//! Names the commit keyplan is built from, for `keyplan --version`: `KEYPLAN_COMMIT` when
//! set, else the checkout's `git rev-parse HEAD`, else the commit `cargo package` recorded
//! in `.cargo_vcs_info.json` (a build from crates.io), else `unknown`.
//!
//! Also sets `cfg(x86_simd)`, which builds the x86-64 SIMD code paths (SSE2, and AVX2 and
//! PCLMULQDQ where the CPU has them): on x86-64, unless the `portable` feature asks for the
//! code every other target runs (so that the tests can run that code on an x86-64 machine).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(x86_simd)");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
        && std::env::var_os("CARGO_FEATURE_PORTABLE").is_none()
    {
        println!("cargo:rustc-cfg=x86_simd");
    }
    println!("cargo:rerun-if-env-changed=KEYPLAN_COMMIT");
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let root = Path::new(&root);
    // Rebuilt when the checkout moves to another commit.
    for f in [".git/HEAD", ".git/packed-refs"] {
        if root.join(f).exists() {
            println!("cargo:rerun-if-changed={f}");
        }
    }
    if let Ok(head) = std::fs::read_to_string(root.join(".git/HEAD"))
        && let Some(r) = head.trim().strip_prefix("ref: ")
    {
        if root.join(".git").join(r).exists() {
            println!("cargo:rerun-if-changed=.git/{r}");
        }
        // A fresh clone may keep the branch only in packed-refs; `git pull` then writes it
        // as a file of this directory, which the line above did not name.
        if let Some((dir, _)) = r.rsplit_once('/')
            && root.join(".git").join(dir).is_dir()
        {
            println!("cargo:rerun-if-changed=.git/{dir}");
        }
    }
    let commit = std::env::var("KEYPLAN_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| {
            Command::new("git")
                .args(["rev-parse", "HEAD"])
                .current_dir(root)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        })
        .or_else(|| {
            let info = std::fs::read_to_string(root.join(".cargo_vcs_info.json")).ok()?;
            let at = info.find("\"sha1\"")?;
            let rest = &info[at + 6..];
            let start = rest.find('"')? + 1;
            let len = rest[start..].find('"')?;
            Some(rest[start..start + len].to_string())
        })
        .map(|c| c.chars().take(12).collect::<String>())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=KEYPLAN_BUILD_COMMIT={commit}");
}
