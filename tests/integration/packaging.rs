//! Where users get keyplan: the PyPI wheel (built by maturin from PyPI), the npm packages
//! (packed and installed from their tarballs), the pre-commit hooks (run by pre-commit from
//! PyPI), the GitHub composite action (its scripts run as a runner runs them, its YAML checked
//! by action-validator from npm) and the crates.io package's file list. Each is installed the
//! way a user installs it, into a scratch directory, and must then give the same report as the
//! keyplan built here.

use crate::support::{keyplan, not_run, require_binary};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The keyplan the tests run (the one cargo built for them).
fn built() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_keyplan"))
}

/// A tool named by an environment variable (installed by .ci/run), or marked not run.
fn tool(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        _ => {
            not_run(format!("{var} ({what}) is not set"));
            None
        }
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What the keyplan built here prints for `keyplan analyze examples/app.keys`.
fn analyze_here() -> Vec<u8> {
    let out = keyplan()
        .current_dir(root())
        .args(["analyze", "examples/app.keys"])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

/// The wheel maturin builds from this checkout (in the profile these tests were built in: the
/// binary is the same code, and the build reuses what cargo compiled for the tests), built
/// once for the tests that need it; `None` when maturin is not installed.
fn wheel() -> Option<&'static Path> {
    static WHEEL: OnceLock<Option<PathBuf>> = OnceLock::new();
    let maturin = tool("KEYPLAN_MATURIN", "maturin from PyPI")?;
    WHEEL
        .get_or_init(|| {
            // Under target/ (cargo's scratch space for integration tests), not a temp dir
            // that would outlive the run.
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wheel");
            let _ = std::fs::remove_dir_all(&dir);
            let profile = if cfg!(debug_assertions) {
                "dev"
            } else {
                "release"
            };
            ok(Command::new(&maturin)
                .current_dir(root())
                .args(["build", "--locked", "--profile", profile, "--out"])
                .arg(&dir));
            let wheel = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|e| e == "whl"))
                .expect("maturin wrote a wheel");
            Some(wheel)
        })
        .as_deref()
}

/// `pip install keyplan-….whl` into a fresh venv puts a `keyplan` on the venv's PATH that
/// names its version and commit and gives the same analyze report; the wheel's metadata is
/// Cargo.toml's.
fn wheel_installs_into_a_fresh_venv() {
    let Some(python) = require_binary("python3") else {
        return;
    };
    let Some(wheel) = wheel() else {
        return;
    };
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("keyplan-{}-py3-none-", env!("CARGO_PKG_VERSION"))),
        "{name}: a wheel for any Python 3, with no Python ABI"
    );
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    ok(Command::new(&python).args(["-m", "venv"]).arg(&venv));
    ok(Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--disable-pip-version-check",
        ])
        .arg(wheel));
    let exe = venv.join("bin/keyplan");
    let out = ok(Command::new(&exe).arg("--version"));
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        version.starts_with(&format!("keyplan {} (", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let out = ok(Command::new(&exe)
        .current_dir(root())
        .args(["analyze", "examples/app.keys"]));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&analyze_here())
    );
    let out = ok(Command::new(venv.join("bin/pip")).args(["show", "keyplan"]));
    let show = String::from_utf8_lossy(&out.stdout);
    let summary = env!("CARGO_PKG_DESCRIPTION");
    assert!(show.contains(&format!("Summary: {summary}")), "{show}");
    assert!(show.contains("License"), "{show}");
}

/// Node's name for this machine's platform (`linux-x64`), as the npm packages are named.
fn node_platform() -> Option<String> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "windows" => "win32",
        _ => return None,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        _ => return None,
    };
    Some(format!("{os}-{arch}"))
}

/// The npm packages packed from the keyplan built here: the platform package and the
/// launcher package installed from their tarballs into an empty directory run as `npx
/// keyplan`; the launcher alone says which package is missing and how to get it.
fn npm_tarballs_install_and_run() {
    let (Some(node), Some(npm)) = (require_binary("node"), require_binary("npm")) else {
        return;
    };
    let Some(platform) = node_platform() else {
        not_run("no npm package is built for this platform");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("dist");
    let out = ok(Command::new(&node)
        .arg(root().join(".packaging/npm/pack.js"))
        .arg(&dist)
        .arg(format!("{platform}={}", built().display())));
    let tarballs: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    let version = env!("CARGO_PKG_VERSION");
    let launcher = dist.join(format!("keyplan-{version}.tgz"));
    let binary = dist.join(format!("keyplan-{platform}-{version}.tgz"));
    assert_eq!(tarballs, vec![binary.clone(), launcher.clone()]);

    let app = dir.path().join("app");
    std::fs::create_dir(&app).unwrap();
    // From the tarballs alone: nothing is fetched.
    ok(Command::new(&npm)
        .current_dir(&app)
        .args(["install", "--offline", "--no-audit", "--no-fund"])
        .arg(&binary)
        .arg(&launcher));
    let npx = |args: &[&str]| {
        run(Command::new(&npm)
            .current_dir(&app)
            .args(["exec", "--offline", "--no", "--", "keyplan"])
            .args(args))
    };
    let out = npx(&["--version"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&format!("keyplan {version} (")),
        "{out:?}"
    );
    let app_keys = root().join("examples/app.keys");
    let out = npx(&["analyze", app_keys.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let here = keyplan()
        .args(["analyze", app_keys.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&here.stdout)
    );
    // The exit status passes through: 2 for a bad flag.
    assert_eq!(npx(&["analyze", "--no-such-flag"]).status.code(), Some(2));

    let alone = dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    ok(Command::new(&npm)
        .current_dir(&alone)
        .args(["install", "--offline", "--no-audit", "--no-fund"])
        .arg(&launcher));
    let out = run(Command::new(&npm).current_dir(&alone).args([
        "exec",
        "--offline",
        "--no",
        "--",
        "keyplan",
        "--version",
    ]));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("npm install keyplan-{platform}@{version}")),
        "{err}"
    );
}

/// A scratch git repository with a key scheme and a Python file; `bad` puts a cross-slot
/// batch in each.
fn scratch_repo(dir: &Path, bad: bool) {
    let tag = if bad { "" } else { "{" };
    let close = if bad { "" } else { "}" };
    std::fs::write(
        dir.join("keyplan.yaml"),
        format!(
            "version: 1\ntopology: {{ masters: 3 }}\nvars:\n  uid: {{ kind: int, cardinality: 1_000_000 }}\nkeys:\n  profile: {{ pattern: \"user:{tag}<uid>{close}:profile\" }}\n  settings: {{ pattern: \"user:{tag}<uid>{close}:settings\" }}\nbatches:\n  page: {{ command: mget, keys: [profile, settings], same: [uid] }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("app.py"),
        format!(
            "import redis\n\nr = redis.Redis()\n\n\ndef page(uid):\n    return r.mget(f\"user:{tag}{{uid}}{close}:profile\", f\"user:{tag}{{uid}}{close}:settings\")\n"
        ),
    )
    .unwrap();
    let git = |args: &[&str]| {
        ok(Command::new("git").current_dir(dir).args(args));
    };
    if !dir.join(".git").exists() {
        git(&["init", "-q"]);
    }
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=keyplan",
        "-c",
        "user.email=keyplan@localhost",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "scratch",
    ]);
}

/// `pre-commit try-repo` on this repository's hooks (the ones that run the keyplan on PATH)
/// in a scratch repository: a scheme with a cross-slot batch and a source file with a
/// cross-slot MGET make them fail with the findings; once tagged, they pass.
fn pre_commit_hooks_fail_on_findings_and_pass_clean() {
    let Some(pre_commit) = tool("KEYPLAN_PRE_COMMIT", "pre-commit from PyPI") else {
        return;
    };
    if require_binary("git").is_none() {
        return;
    }
    if !root().join(".git").exists() {
        not_run("keyplan's source is not a git checkout (pre-commit try-repo needs one)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let path = format!(
        "{}:{}",
        built().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let try_repo = |hook: &str| {
        run(Command::new(&pre_commit)
            .current_dir(&repo)
            .env("PATH", &path)
            .env("PRE_COMMIT_HOME", dir.path().join("cache"))
            .args(["try-repo"])
            .arg(root())
            .args([hook, "--all-files"]))
    };
    scratch_repo(&repo, true);
    let out = try_repo("keyplan-lint-system");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("Failed") && text.contains("keyplan.yaml:9:") && text.contains("KP301"),
        "{text}"
    );
    let out = try_repo("keyplan-code-system");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("app.py:7:") && text.contains("KP601") && !text.contains("KP301"),
        "{text}"
    );
    scratch_repo(&repo, false);
    for hook in ["keyplan-lint-system", "keyplan-code-system"] {
        let out = try_repo(hook);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{hook}: {text}");
        assert!(text.contains("Passed"), "{text}");
    }
}

/// The composite action and the example workflow pass action-validator (which a broken copy
/// does not), README shows the example workflow as it is in examples/ci, and the action's
/// scripts, run as a runner runs them (GITHUB_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
/// RUNNER_TEMP), install the wheel and report the findings.
fn github_action_validates_installs_and_reports() {
    let Some(validator) = tool("KEYPLAN_ACTION_VALIDATOR", "action-validator from npm") else {
        return;
    };
    let action = root().join(".github/actions/keyplan/action.yml");
    let workflow = root().join("examples/ci/keyplan-lint.yml");
    for file in [&action, &workflow] {
        ok(Command::new(&validator).arg(file));
    }
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("action.yml");
    let text = std::fs::read_to_string(&action).unwrap();
    std::fs::write(&broken, text.replace("      shell: bash\n", "")).unwrap();
    assert!(!run(Command::new(&validator).arg(&broken)).status.success());
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let example = std::fs::read_to_string(&workflow).unwrap();
    let body: String = example
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    // (README shows it inside a list item: indented by two spaces)
    let indented: String = body
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    assert!(
        readme.contains(&indented),
        "README shows examples/ci/keyplan-lint.yml"
    );

    let Some(wheel) = wheel() else {
        return;
    };
    let runner = dir.path().join("runner");
    std::fs::create_dir(&runner).unwrap();
    let files = ["path", "output", "summary"].map(|f| runner.join(f));
    for f in &files {
        std::fs::write(f, "").unwrap();
    }
    let scripts = root().join(".github/actions/keyplan");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    scratch_repo(&repo, true);
    let step = |script: &str, env: &[(&str, &str)], path: &str| {
        let mut cmd = Command::new("bash");
        cmd.current_dir(&repo)
            .arg(scripts.join(script))
            .env("PATH", path)
            .env("RUNNER_TEMP", &runner)
            .env("GITHUB_PATH", &files[0])
            .env("GITHUB_OUTPUT", &files[1])
            .env("GITHUB_STEP_SUMMARY", &files[2])
            .envs(env.iter().copied());
        run(&mut cmd)
    };
    let system_path = std::env::var("PATH").unwrap_or_default();
    let out = step(
        "install.sh",
        &[("KEYPLAN_INSTALL", wheel.to_str().unwrap())],
        &system_path,
    );
    assert!(out.status.success(), "{out:?}");
    let added = std::fs::read_to_string(&files[0]).unwrap();
    let bin = added.trim();
    assert!(Path::new(bin).join("keyplan").is_file(), "{added}");
    // The next steps see what the install step added to GITHUB_PATH first.
    let path = format!("{bin}:{system_path}");
    let out = step(
        "lint.sh",
        &[
            ("KEYPLAN_SCHEME", "keyplan.yaml"),
            ("KEYPLAN_CODE", "app.py\n"),
            ("KEYPLAN_FAIL_ON", "warning"),
            ("KEYPLAN_SUMMARY", "true"),
        ],
        &path,
    );
    assert!(out.status.success(), "the lint step never fails: {out:?}");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("::error file=keyplan.yaml,line=9")
            && log.contains("::error file=app.py,line=7"),
        "{log}"
    );
    let outputs = std::fs::read_to_string(&files[1]).unwrap();
    let sarif = runner.join("keyplan.sarif");
    assert_eq!(
        outputs,
        format!("exit-code=1\nsarif-file={}\nfindings=2\n", sarif.display())
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&sarif).unwrap()).expect("SARIF is JSON");
    assert_eq!(v["runs"][0]["results"].as_array().unwrap().len(), 2);
    let summary = std::fs::read_to_string(&files[2]).unwrap();
    assert!(
        summary.starts_with("## keyplan lint: 2 finding(s)")
            && summary.contains("#### Worst finding"),
        "{summary}"
    );
    // A bad flag: exit status 2 for the last step, no SARIF.
    std::fs::write(&files[1], "").unwrap();
    let out = step(
        "lint.sh",
        &[
            ("KEYPLAN_SCHEME", "keyplan.yaml"),
            ("KEYPLAN_ARGS", "--no-such-flag"),
        ],
        &path,
    );
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&files[1]).unwrap(), "exit-code=2\n");
}

/// `cargo package` ships what the crate builds from (every rule file the code includes, the
/// command table, README) and none of the test fixtures.
fn crates_io_package_holds_what_the_crate_builds_from() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = ok(Command::new(cargo).current_dir(root()).args([
        "package",
        "--list",
        "--allow-dirty",
        "--offline",
    ]));
    let list = String::from_utf8_lossy(&out.stdout);
    let files: std::collections::BTreeSet<&str> = list.lines().collect();
    for f in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "src/main.rs",
        "src/lib.rs",
        "src/build.rs",
        "src/command/commands.tsv",
        "examples/app.keys",
    ] {
        assert!(files.contains(f), "{f} is not in the package");
    }
    for entry in walk(&root().join("rules")) {
        let rel = entry
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(files.contains(rel.as_str()), "{rel} is not in the package");
    }
    assert!(
        !files
            .iter()
            .any(|f| f.starts_with("tests/fixtures") || f.ends_with(".png")),
        "test fixtures or screenshots are in the package"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "wheel_installs_into_a_fresh_venv",
        wheel_installs_into_a_fresh_venv,
    ),
    ("npm_tarballs_install_and_run", npm_tarballs_install_and_run),
    (
        "pre_commit_hooks_fail_on_findings_and_pass_clean",
        pre_commit_hooks_fail_on_findings_and_pass_clean,
    ),
    (
        "github_action_validates_installs_and_reports",
        github_action_validates_installs_and_reports,
    ),
    (
        "crates_io_package_holds_what_the_crate_builds_from",
        crates_io_package_holds_what_the_crate_builds_from,
    ),
];
