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
                .current_dir(root().join(".packaging/python"))
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

/// Builds the wheel now when maturin is installed (see `main`); nothing when it is not.
pub(crate) fn prebuild_wheel() {
    if std::env::var_os("KEYPLAN_MATURIN").is_some_and(|p| Path::new(&p).is_file()) {
        let _ = wheel();
    }
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
    let out =
        ok(Command::new(venv.join("bin/pip")).args(["show", "--verbose", "--files", "keyplan"]));
    let show = String::from_utf8_lossy(&out.stdout);
    let summary = env!("CARGO_PKG_DESCRIPTION");
    assert!(show.contains(&format!("Summary: {summary}")), "{show}");
    assert!(show.contains("License"), "{show}");
    // PyPI's classifiers, and the license texts in the wheel.
    assert!(
        show.contains("License :: OSI Approved :: MIT License")
            && show.contains("Programming Language :: Rust"),
        "{show}"
    );
    // uv installs the same wheel into its own fresh venv.
    if let Some(uv) = tool("KEYPLAN_UV", "uv from PyPI") {
        let uv_venv = dir.path().join("uv-venv");
        ok(Command::new(&uv).args(["venv", "--quiet"]).arg(&uv_venv));
        ok(Command::new(&uv)
            .args(["pip", "install", "--quiet", "--offline", "--python"])
            .arg(uv_venv.join("bin/python"))
            .arg(wheel));
        let out = ok(Command::new(uv_venv.join("bin/keyplan"))
            .current_dir(root())
            .args(["analyze", "examples/app.keys"]));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&analyze_here())
        );
    }
}

/// Node's name for this machine's platform with its C library on Linux (`linux-x64-gnu`), as
/// the npm platform packages are named (`@keyplan/linux-x64-gnu`).
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
    Some(match os {
        "linux" if cfg!(target_env = "musl") => format!("{os}-{arch}-musl"),
        "linux" => format!("{os}-{arch}-gnu"),
        _ => format!("{os}-{arch}"),
    })
}

/// The npm packages packed from the keyplan built here, stripped (an unstripped binary is
/// refused): packing twice gives the same bytes; the scoped platform package (`os`, `cpu`,
/// `libc`) and the launcher package installed from their tarballs into an empty directory run
/// as `npx keyplan`; the launcher alone says which package is missing and how to get it.
fn npm_tarballs_install_and_run() {
    let (Some(node), Some(npm)) = (require_binary("node"), require_binary("npm")) else {
        return;
    };
    let Some(platform) = node_platform() else {
        not_run("no npm package is built for this platform");
        return;
    };
    let Some(strip) = require_binary("strip") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pack = |dist: &Path, binary: &Path| {
        run(Command::new(&node)
            .arg(root().join(".packaging/npm/pack.js"))
            .arg(dist)
            .arg(format!("{platform}={}", binary.display())))
    };
    // A binary with debug info (a debug section added to a copy, so that a release test build,
    // stripped already, is refused too): refused, naming what to do.
    let Some(objcopy) = require_binary("objcopy") else {
        return;
    };
    let unstripped = dir.path().join("unstripped");
    let note = dir.path().join("note");
    std::fs::write(&note, b"keyplan test").unwrap();
    let out = run(Command::new(&objcopy)
        .arg("--add-section")
        .arg(format!(".debug_keyplan={}", note.display()))
        .arg(built())
        .arg(&unstripped));
    assert!(out.status.success(), "{out:?}");
    let out = pack(&dir.path().join("refused"), &unstripped);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not stripped (") && err.contains("cargo build --release"),
        "{err}"
    );
    let stripped = dir.path().join("keyplan");
    ok(Command::new(&strip).arg("-o").arg(&stripped).arg(built()));
    let dist = dir.path().join("dist");
    let out = pack(&dist, &stripped);
    assert!(out.status.success(), "{out:?}");
    let tarballs: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    let version = env!("CARGO_PKG_VERSION");
    let launcher = dist.join(format!("keyplan-{version}.tgz"));
    let binary = dist.join(format!("keyplan-{platform}-{version}.tgz"));
    assert_eq!(tarballs, vec![binary.clone(), launcher.clone()]);
    // Packed again: the same bytes.
    let again = dir.path().join("again");
    assert!(pack(&again, &stripped).status.success());
    for t in &tarballs {
        assert!(
            std::fs::read(t).unwrap() == std::fs::read(again.join(t.file_name().unwrap())).unwrap(),
            "{}: packed twice, two tarballs",
            t.display()
        );
    }
    let manifest = |tarball: &Path| -> serde_json::Value {
        let out = ok(Command::new("tar")
            .arg("-xzOf")
            .arg(tarball)
            .arg("package/package.json"));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let m = manifest(&binary);
    assert_eq!(m["name"], format!("@keyplan/{platform}"));
    let (os, cpu) = (
        platform.split('-').next().unwrap(),
        platform.split('-').nth(1).unwrap(),
    );
    assert_eq!(m["os"], serde_json::json!([os]));
    assert_eq!(m["cpu"], serde_json::json!([cpu]));
    if os == "linux" {
        let libc = if platform.ends_with("-musl") {
            "musl"
        } else {
            "glibc"
        };
        assert_eq!(m["libc"], serde_json::json!([libc]));
    }
    let m = manifest(&launcher);
    assert_eq!(
        m["optionalDependencies"],
        serde_json::json!({ format!("@keyplan/{platform}"): version })
    );

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
        err.contains(&format!("npm install @keyplan/{platform}@{version}")),
        "{err}"
    );
}

/// The launcher's choice of platform package: glibc or musl from Node's report (`musl` when
/// the report names no glibc), else from the musl loader on disk; on this machine, the
/// package of the C library keyplan was built for.
fn npm_launcher_tells_musl_from_glibc() {
    let Some(node) = require_binary("node") else {
        return;
    };
    let Some(platform) = node_platform() else {
        not_run("no npm package is built for this platform");
        return;
    };
    let launcher = root().join(".packaging/npm/keyplan/bin/keyplan.js");
    let script = r#"
const l = require(process.argv[1]);
const out = [
  l.platformKey(),
  l.linuxLibc(() => ({ header: { glibcVersionRuntime: "2.17" } }), () => true),
  l.linuxLibc(() => ({ header: {} }), () => false),
  l.linuxLibc(() => { throw new Error("no report"); }, (p) => /ld-musl-/.test(p)),
  l.linuxLibc(() => { throw new Error("no report"); }, () => false),
];
console.log(out.join(" "));
"#;
    let out = ok(Command::new(&node).arg("-e").arg(script).arg(&launcher));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{platform} gnu musl musl gnu")
    );
}

/// The launcher's own rules for `KEYPLAN_BINARY`, run with node from the checkout: a file it
/// names that is not executable (a private `0600` shell script) is refused with a message and
/// left as it was (never chmod'ed, never run through `/bin/sh`); a directory or a missing file
/// likewise; a binary killed by a signal (SIGPIPE, which node itself ignores, and SIGTERM) is
/// reported as that signal, as a shell would see it: killed by it, or exit 128 + n.
fn npm_launcher_runs_only_what_it_may_and_mirrors_signals() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    let Some(node) = require_binary("node") else {
        return;
    };
    let launcher = root().join(".packaging/npm/keyplan/bin/keyplan.js");
    let dir = tempfile::tempdir().unwrap();
    let launch = |binary: &Path, args: &[&str]| {
        run(Command::new(&node)
            .arg(&launcher)
            .args(args)
            .env("KEYPLAN_BINARY", binary))
    };
    let ran = dir.path().join("ran");
    let private = dir.path().join("private");
    std::fs::write(
        &private,
        format!("touch '{}'\necho planted\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = launch(&private, &["--version"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        err.contains("KEYPLAN_BINARY")
            && err.contains(&*private.to_string_lossy())
            && err.contains("is not executable (mode 0600)")
            && err.lines().count() == 1,
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(!ran.exists(), "the file was run");
    let mode = std::fs::metadata(&private).unwrap().permissions().mode() & 0o7777;
    assert_eq!(
        mode, 0o600,
        "the launcher changed the mode of a file it was named"
    );

    let out = launch(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a file"));
    let out = launch(&dir.path().join("missing"), &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));

    // The real binary runs, and its exit status passes through.
    let out = launch(&built(), &["--version"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        launch(&built(), &["analyze", "--no-such-flag"])
            .status
            .code(),
        Some(2)
    );

    for (signal, name) in [(13, "PIPE"), (15, "TERM")] {
        let script = dir.path().join(format!("sig{name}"));
        std::fs::write(&script, format!("#!/bin/sh\nkill -{name} $$\nexit 3\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        let out = launch(&script, &[]);
        assert!(
            out.status.signal() == Some(signal) || out.status.code() == Some(128 + signal),
            "SIG{name}: {:?}",
            out.status
        );
    }
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
/// cross-slot MGET make them fail with the findings; once tagged, they pass. The code hook
/// reports only the files it is given (an untracked scratch file's MGET is not reported) and
/// reads no scheme (a broken one does not fail it); the scheme hook reads keyplan.yml too.
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
    // An untracked scratch file with a cross-slot MGET, and a scheme that does not parse:
    // neither is the code hook's business.
    std::fs::write(
        repo.join("scratch.py"),
        "import redis\nr = redis.Redis()\nr.mget(f\"a:{x}\", f\"b:{x}\")\n",
    )
    .unwrap();
    std::fs::write(repo.join("keyplan.yaml"), "version: [\n").unwrap();
    let out = try_repo("keyplan-code-system");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("Passed"), "{text}");
    // The scheme as keyplan.yml (with the cross-slot batch again): the lint hook reads it.
    std::fs::remove_file(repo.join("scratch.py")).unwrap();
    scratch_repo(&repo, true);
    std::fs::rename(repo.join("keyplan.yaml"), repo.join("keyplan.yml")).unwrap();
    ok(Command::new("git").current_dir(&repo).args(["add", "-A"]));
    let out = try_repo("keyplan-lint-system");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("keyplan.yml:9:") && text.contains("KP301"),
        "{text}"
    );
}

/// The prebuilt hooks (the keyplan-pre-commit repository's, from .packaging/pre-commit): pinned
/// to this version, installed by pre-commit with pip from the wheel built here (no index, no
/// build of keyplan), they fail on a scratch repository's findings with file:line:col and
/// pass once it is clean.
fn pre_commit_prebuilt_hooks_install_the_wheel() {
    let (Some(pre_commit), Some(python)) = (
        tool("KEYPLAN_PRE_COMMIT", "pre-commit from PyPI"),
        tool("KEYPLAN_PYTHON", "the venv pre-commit is installed in"),
    ) else {
        return;
    };
    if require_binary("git").is_none() {
        return;
    }
    let hooks = root().join(".packaging/pre-commit");
    let pyproject = std::fs::read_to_string(hooks.join("pyproject.toml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        pyproject.contains(&format!("\ndependencies = [\"keyplan=={version}\"]\n")),
        ".packaging/pre-commit/pyproject.toml pins keyplan=={version}"
    );
    let Some(wheel) = wheel() else {
        return;
    };
    // setuptools (the hooks package's build backend) from the wheels virtualenv ships.
    let out = ok(Command::new(&python).args([
        "-c",
        "import os, virtualenv.seed.wheels.embed as e; print(os.path.dirname(e.__file__))",
    ]));
    let embed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("keyplan-pre-commit");
    std::fs::create_dir(&mirror).unwrap();
    for f in ["pyproject.toml", ".pre-commit-hooks.yaml"] {
        std::fs::copy(hooks.join(f), mirror.join(f)).unwrap();
    }
    let git = |cwd: &Path, args: &[&str]| {
        ok(Command::new("git").current_dir(cwd).args(args));
    };
    git(&mirror, &["init", "-q"]);
    git(&mirror, &["add", "-A"]);
    git(
        &mirror,
        &[
            "-c",
            "user.name=k",
            "-c",
            "user.email=k@localhost",
            "commit",
            "-q",
            "-m",
            "hooks",
        ],
    );
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    scratch_repo(&repo, true);
    let try_repo = |hook: &str| {
        run(Command::new(&pre_commit)
            .current_dir(&repo)
            .env("PRE_COMMIT_HOME", dir.path().join("cache"))
            .env("PIP_NO_INDEX", "1")
            .env(
                "PIP_FIND_LINKS",
                format!("{} {embed}", wheel.parent().unwrap().display()),
            )
            .args(["try-repo"])
            .arg(&mirror)
            .args([hook, "--all-files"]))
    };
    let started = std::time::Instant::now();
    let out = try_repo("keyplan-code");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("app.py:7:14: KP601"), "{text}");
    eprintln!("prebuilt hook installed and ran in {:?}", started.elapsed());
    let out = try_repo("keyplan-lint");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("keyplan.yaml:9:") && text.contains("KP301"),
        "{text}"
    );
    scratch_repo(&repo, false);
    for hook in ["keyplan-lint", "keyplan-code"] {
        let out = try_repo(hook);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("Passed"),
            "{hook}: {text}"
        );
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
    assert!(
        !out.status.success(),
        "an error fails the lint step: {out:?}"
    );
    assert_eq!(std::fs::read_to_string(&files[1]).unwrap(), "exit-code=2\n");
}

/// The action's lint script run as a runner runs it, with the keyplan built here on PATH and
/// hostile `args`: flags the action sets itself (`-o`, `--output=`, `-qo`, `--format`,
/// `--fail-on`) fail the step with a message naming the input to use, before anything runs
/// (the file `-o` names is never written); `$(…)` and backticks are never run; quoted values
/// keep their spaces, over several lines; a keyplan that exits 2, or a SARIF run killed by
/// SIGPIPE after the annotations run went well, fails the step with exit-code=2 and no
/// findings count or SARIF file (a gate that could pass silently before).
fn github_action_refuses_conflicting_args_and_never_swallows_a_failed_run() {
    let (Some(bash), Some(_git)) = (require_binary("bash"), require_binary("git")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("runner");
    std::fs::create_dir(&runner).unwrap();
    let output = runner.join("output");
    let summary = runner.join("summary");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    scratch_repo(&repo, true);
    std::fs::copy(repo.join("app.py"), repo.join("my app.py")).unwrap();
    let script = root().join(".github/actions/keyplan/lint.sh");
    let system_path = std::env::var("PATH").unwrap_or_default();
    let here_path = format!("{}:{system_path}", built().parent().unwrap().display());
    let step = |args: &str, path: &str| {
        std::fs::write(&output, "").unwrap();
        std::fs::write(&summary, "").unwrap();
        let _ = std::fs::remove_file(runner.join("keyplan.sarif"));
        let out = run(Command::new(&bash)
            .current_dir(&repo)
            .arg(&script)
            .env("PATH", path)
            .env("RUNNER_TEMP", &runner)
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("KEYPLAN_SCHEME", "keyplan.yaml")
            .env("KEYPLAN_CODE", "app.py\n")
            .env("KEYPLAN_FAIL_ON", "warning")
            .env("KEYPLAN_SUMMARY", "true")
            .env("KEYPLAN_ARGS", args));
        let log = String::from_utf8_lossy(&out.stdout).into_owned();
        let outputs = std::fs::read_to_string(&output).unwrap();
        (out.status, log, outputs)
    };
    let failed = |args: &str, path: &str, says: &[&str]| {
        let (status, log, outputs) = step(args, path);
        assert_eq!(status.code(), Some(2), "{args:?}: {log}");
        assert_eq!(outputs, "exit-code=2\n", "{args:?}: {log}");
        let error = log
            .lines()
            .find(|l| l.starts_with("::error::"))
            .unwrap_or_else(|| panic!("{args:?}: no error annotation: {log}"));
        for s in says {
            assert!(error.contains(s), "{args:?}: {error}");
        }
        assert!(
            !runner.join("keyplan.sarif").exists(),
            "{args:?}: a SARIF file was left"
        );
        log
    };
    for args in [
        "-o out.txt",
        "--output=out.txt",
        "-qo out.txt",
        "--masters 3 -oout.txt",
    ] {
        failed(args, &here_path, &["-o/--output", "sarif-file"]);
        assert!(!repo.join("out.txt").exists(), "{args}: wrote out.txt");
    }
    for args in ["--format json", "--format=sarif"] {
        failed(args, &here_path, &["--format", "`sarif`", "`summary`"]);
    }
    for args in ["--fail-on error", "--fail-on=hint"] {
        failed(args, &here_path, &["`fail-on` input"]);
    }
    failed("--ignore 'KP301", &here_path, &["quote is not closed"]);
    // Never run, never expanded: keyplan is handed the text and refuses it.
    let pwned = repo.join("pwned");
    for args in [
        "$(touch pwned)",
        "`touch pwned`",
        "--ignore \"$(touch pwned)\" ; touch pwned",
    ] {
        failed(args, &here_path, &["could not run (exit status 2)"]);
        assert!(!pwned.exists(), "{args}: ran a command");
    }
    failed(
        "--no-such-flag",
        &here_path,
        &["could not run (exit status 2)"],
    );

    // Quoted values keep their spaces, on several lines.
    let (status, log, outputs) = step("--code 'my app.py'\n  --ignore \"KP301\"\n", &here_path);
    assert!(status.success(), "{log}");
    assert!(
        log.contains("file=my app.py,line=7") && log.contains("file=app.py,line=7"),
        "{log}"
    );
    let sarif = runner.join("keyplan.sarif");
    assert_eq!(
        outputs,
        format!("exit-code=1\nsarif-file={}\nfindings=2\n", sarif.display())
    );
    assert!(sarif.is_file());

    // The SARIF run killed by SIGPIPE after the annotations run went well.
    let wrap = dir.path().join("wrap");
    std::fs::create_dir(&wrap).unwrap();
    let keyplan = wrap.join("keyplan");
    std::fs::write(
        &keyplan,
        format!(
            "#!/bin/sh\ncase \"$*\" in *'--format sarif'*) kill -PIPE $$ ;; esac\nexec '{}' \"$@\"\n",
            built().display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&keyplan, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let log = failed(
        "",
        &format!("{}:{system_path}", wrap.display()),
        &["SARIF", "killed by signal 13"],
    );
    assert!(log.contains("::error file=app.py,line=7"), "{log}");
}

/// The release workflow and the project's CI workflow pass action-validator (a broken copy
/// does not); the release builds every platform its users run, wheels and npm packages from
/// the same binaries, and fails while Cargo.toml names no repository or homepage; the CI
/// examples pin only tags this repository has (or `main`, until a release is tagged).
fn release_workflow_validates_and_covers_every_platform() {
    let Some(validator) = tool("KEYPLAN_ACTION_VALIDATOR", "action-validator from npm") else {
        return;
    };
    let release = root().join(".github/workflows/release.yml");
    for file in [&release, &root().join(".github/workflows/ci.yml")] {
        ok(Command::new(&validator).arg(file));
    }
    let text = std::fs::read_to_string(&release).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("release.yml");
    std::fs::write(
        &broken,
        text.replacen("    runs-on: ubuntu-latest\n", "", 1),
    )
    .unwrap();
    assert!(!run(Command::new(&validator).arg(&broken)).status.success());
    for (target, npm) in [
        ("x86_64-unknown-linux-gnu", "linux-x64-gnu"),
        ("aarch64-unknown-linux-gnu", "linux-arm64-gnu"),
        ("x86_64-unknown-linux-musl", "linux-x64-musl"),
        ("aarch64-unknown-linux-musl", "linux-arm64-musl"),
        ("x86_64-apple-darwin", "darwin-x64"),
        ("aarch64-apple-darwin", "darwin-arm64"),
        ("x86_64-pc-windows-msvc", "win32-x64"),
    ] {
        assert!(
            text.contains(&format!("target: {target},"))
                && text.contains(&format!("npm: {npm} }}")),
            "release.yml builds {target} as {npm}"
        );
    }
    for needed in [
        "uses: PyO3/maturin-action@v1",
        "command: sdist",
        "twine check --strict",
        "node .packaging/npm/pack.js",
        "pypa/gh-action-pypi-publish@release/v1",
        "cargo publish --locked",
        "npm publish --provenance --access public",
        "manylinux: \"2_17\"",
        "manylinux: musllinux_1_2",
    ] {
        assert!(text.contains(needed), "release.yml: {needed}");
    }
    // The placeholder check: Cargo.toml has no repository yet, and the check says so.
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let package = cargo.split("\n[").next().unwrap();
    if !package.contains("\nrepository = ") {
        assert!(
            text.contains("[package]${missing# } not set"),
            "the placeholder check"
        );
    }
    // Pinned tags exist.
    let tags = ok(Command::new("git")
        .current_dir(root())
        .args(["tag", "--list"]));
    let tags = String::from_utf8_lossy(&tags.stdout).into_owned();
    for f in [
        "examples/ci/keyplan-lint.yml",
        "examples/ci/pre-commit-config.yaml",
    ] {
        let text = std::fs::read_to_string(root().join(f)).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
            let pin = if let Some((_, rest)) =
                line.split_once("OWNER/keyplan/.github/actions/keyplan@")
            {
                rest.trim()
            } else if let Some((_, rest)) = line.split_once("rev: ") {
                rest.trim()
            } else {
                continue;
            };
            assert!(
                pin == "main" || tags.lines().any(|t| t == pin),
                "{f}: pins {pin}, a tag this repository does not have"
            );
        }
    }
}

/// `maturin sdist` (from .packaging/python) writes an sdist that passes `twine check
/// --strict` and holds what a build from it needs: Cargo.toml and Cargo.lock, the sources,
/// the rules, the license texts and a pyproject.toml pointing at the crate.
fn sdist_passes_twine_check() {
    let (Some(maturin), Some(twine)) = (
        tool("KEYPLAN_MATURIN", "maturin from PyPI"),
        tool("KEYPLAN_TWINE", "twine from PyPI"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    ok(Command::new(&maturin)
        .current_dir(root().join(".packaging/python"))
        .args(["sdist", "--out"])
        .arg(dir.path()));
    let version = env!("CARGO_PKG_VERSION");
    let sdist = dir.path().join(format!("keyplan-{version}.tar.gz"));
    let out = ok(Command::new(&twine).args(["check", "--strict"]).arg(&sdist));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("PASSED"),
        "{out:?}"
    );
    let list = ok(Command::new("tar").arg("-tzf").arg(&sdist));
    let list = String::from_utf8_lossy(&list.stdout);
    let prefix = format!("keyplan-{version}/");
    for f in [
        "Cargo.toml",
        "Cargo.lock",
        "pyproject.toml",
        "PKG-INFO",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "src/main.rs",
        "src/build.rs",
        "rules/KP301-cross-slot-batch.yml",
    ] {
        assert!(
            list.lines().any(|l| l == format!("{prefix}{f}")),
            "{f} is not in the sdist:\n{list}"
        );
    }
    let pyproject = ok(Command::new("tar")
        .arg("-xzOf")
        .arg(&sdist)
        .arg(format!("{prefix}pyproject.toml")));
    let pyproject = String::from_utf8_lossy(&pyproject.stdout);
    assert!(
        pyproject.contains("manifest-path = \"Cargo.toml\""),
        "{pyproject}"
    );
}

/// The manylinux2014 wheel (glibc 2.17, as ruff and uv ship) built with `maturin build --zig`:
/// its binary asks for no glibc symbol newer than 2.17, and installed into fresh venvs by pip
/// and by uv it gives the report the cargo build gives. Built in its own target directory
/// (KEYPLAN_ZIG_TARGET, cached by CI between runs).
fn manylinux2014_wheel_needs_glibc_2_17_and_installs() {
    let Some(maturin) = tool("KEYPLAN_MATURIN", "maturin from PyPI") else {
        return;
    };
    let Some(zig_python) = tool("KEYPLAN_ZIG", "a Python with ziglang from PyPI") else {
        return;
    };
    let (Some(objdump), Some(python)) = (require_binary("objdump"), require_binary("python3"))
    else {
        return;
    };
    if std::env::consts::ARCH != "x86_64" || std::env::consts::OS != "linux" {
        not_run("the manylinux2014 wheel is built on x86-64 Linux");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target_dir = std::env::var_os("KEYPLAN_ZIG_TARGET")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("zig"));
    // maturin finds zig as `python -m ziglang` with the Python first on PATH.
    let path = format!(
        "{}:{}",
        zig_python.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    ok(Command::new(&maturin)
        .current_dir(root().join(".packaging/python"))
        .env("PATH", &path)
        .args([
            "build",
            "--locked",
            "--zig",
            "--compatibility",
            "manylinux2014",
            "--target",
            "x86_64-unknown-linux-gnu",
            "--profile",
            "dev",
            "--out",
        ])
        .arg(dir.path())
        .arg("--target-dir")
        .arg(&target_dir));
    let wheel = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin wrote a wheel");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.contains("manylinux_2_17_x86_64") && name.contains("manylinux2014_x86_64"),
        "{name}"
    );
    let venv = dir.path().join("venv");
    ok(Command::new(&python).args(["-m", "venv"]).arg(&venv));
    ok(Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--disable-pip-version-check",
        ])
        .arg(&wheel));
    let exe = venv.join("bin/keyplan");
    let out = ok(Command::new(&objdump).arg("-T").arg(&exe));
    let symbols = String::from_utf8_lossy(&out.stdout);
    let newest = symbols
        .split("GLIBC_")
        .skip(1)
        .filter_map(|rest| {
            let v: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
            Some((
                parts.next()?,
                parts.next().unwrap_or(0),
                parts.next().unwrap_or(0),
            ))
        })
        .max()
        .expect("the binary links glibc");
    assert!(
        newest <= (2, 17, 0),
        "needs GLIBC {newest:?}, newer than 2.17"
    );
    let here = analyze_here();
    let out = ok(Command::new(&exe)
        .current_dir(root())
        .args(["analyze", "examples/app.keys"]));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&here)
    );
    if let Some(uv) = tool("KEYPLAN_UV", "uv from PyPI") {
        let uv_venv = dir.path().join("uv-venv");
        ok(Command::new(&uv).args(["venv", "--quiet"]).arg(&uv_venv));
        ok(Command::new(&uv)
            .args(["pip", "install", "--quiet", "--offline", "--python"])
            .arg(uv_venv.join("bin/python"))
            .arg(&wheel));
        let out = ok(Command::new(uv_venv.join("bin/keyplan"))
            .current_dir(root())
            .args(["analyze", "examples/app.keys"]));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&here)
        );
    }
}

/// The action's `sarif` input, decided as a runner runs it: `true` and `false` as said; `auto`
/// uploads on a public repository and, on a private one, only where the code scanning API
/// answers (200, or 404 before the first analysis), with a notice and no failure where it
/// refuses (403: no GitHub code security) or cannot be reached. The API is a local server.
fn github_action_uploads_sarif_only_where_code_scanning_is() {
    use std::io::BufRead as _;
    let (Some(bash), Some(python), Some(_curl)) = (
        require_binary("bash"),
        require_binary("python3"),
        require_binary("curl"),
    ) else {
        return;
    };
    // Answers every request with the status its repository's name asks for (/repos/o/403/…),
    // checking the token is sent.
    let server = r#"
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer t0ken"
        self.send_response(int(self.path.split("/")[3]) if ok else 401)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut child = Command::new(&python)
        .args(["-c", server])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let api = format!("http://127.0.0.1:{}", port.trim());
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    let decide = |sarif: &str, private: &str, repo: &str| {
        std::fs::write(&output, "").unwrap();
        let out = run(Command::new(&bash)
            .arg(root().join(".github/actions/keyplan/scanning.sh"))
            .env("GITHUB_OUTPUT", &output)
            .env("KEYPLAN_SARIF", sarif)
            .env("KEYPLAN_PRIVATE", private)
            .env("GITHUB_API_URL", &api)
            .env("GITHUB_REPOSITORY", format!("o/{repo}"))
            .env("GITHUB_TOKEN", "t0ken"));
        (
            out.status.code(),
            std::fs::read_to_string(&output).unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let cases = [
        ("true", "true", "403", "upload=true\n"),
        ("false", "false", "200", "upload=false\n"),
        ("auto", "false", "403", "upload=true\n"),
        ("auto", "true", "200", "upload=true\n"),
        ("auto", "true", "404", "upload=true\n"),
        ("auto", "true", "403", "upload=false\n"),
    ];
    for (sarif, private, status, expected) in cases {
        let (code, outputs, log) = decide(sarif, private, status);
        assert_eq!(code, Some(0), "{sarif} {private} {status}: {log}");
        assert_eq!(outputs, expected, "{sarif} {private} {status}: {log}");
        if expected == "upload=false\n" && sarif == "auto" {
            assert!(
                log.starts_with("::notice::") && log.contains("answered 403"),
                "{log}"
            );
        }
    }
    let (code, outputs, log) = decide("yes", "true", "200");
    assert_eq!((code, outputs.as_str()), (Some(2), ""), "{log}");
    assert!(log.contains("is not auto, true or false"), "{log}");
    child.kill().unwrap();
    child.wait().unwrap();
    // Unreachable: a notice, no upload, no failure.
    let (code, outputs, log) = decide("auto", "true", "200");
    assert_eq!(
        (code, outputs.as_str()),
        (Some(0), "upload=false\n"),
        "{log}"
    );
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
        "LICENSE-MIT",
        "LICENSE-APACHE",
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
        "npm_launcher_tells_musl_from_glibc",
        npm_launcher_tells_musl_from_glibc,
    ),
    (
        "npm_launcher_runs_only_what_it_may_and_mirrors_signals",
        npm_launcher_runs_only_what_it_may_and_mirrors_signals,
    ),
    (
        "pre_commit_hooks_fail_on_findings_and_pass_clean",
        pre_commit_hooks_fail_on_findings_and_pass_clean,
    ),
    (
        "pre_commit_prebuilt_hooks_install_the_wheel",
        pre_commit_prebuilt_hooks_install_the_wheel,
    ),
    (
        "github_action_validates_installs_and_reports",
        github_action_validates_installs_and_reports,
    ),
    (
        "github_action_refuses_conflicting_args_and_never_swallows_a_failed_run",
        github_action_refuses_conflicting_args_and_never_swallows_a_failed_run,
    ),
    (
        "github_action_uploads_sarif_only_where_code_scanning_is",
        github_action_uploads_sarif_only_where_code_scanning_is,
    ),
    (
        "release_workflow_validates_and_covers_every_platform",
        release_workflow_validates_and_covers_every_platform,
    ),
    ("sdist_passes_twine_check", sdist_passes_twine_check),
    (
        "manylinux2014_wheel_needs_glibc_2_17_and_installs",
        manylinux2014_wheel_needs_glibc_2_17_and_installs,
    ),
    (
        "crates_io_package_holds_what_the_crate_builds_from",
        crates_io_package_holds_what_the_crate_builds_from,
    ),
];
