//! Helpers shared by the integration tests: the binary under test, real servers on loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `keyplan` as a command.
pub fn keyplan() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("keyplan").expect("the keyplan binary builds")
}

/// One test: its name and its function (each module lists its own in `TESTS`).
pub type Test = (&'static str, fn());

thread_local! {
    /// Why the test running on this thread could not run here, if it could not.
    static NOT_RUN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Marks the running test as not run: what it needs (`reason` says what) is not on this
/// machine. The test then returns early and the harness reports it as ignored with the reason,
/// never as passed. Under CI (`CI` set) it is a failure instead: .ci/run installs everything.
pub fn not_run(reason: impl Into<String>) {
    let reason = reason.into();
    if std::env::var_os("CI").is_some() {
        panic!("{reason}, and CI is set: .ci/run must install it");
    }
    NOT_RUN.with(|n| {
        n.borrow_mut().get_or_insert(reason);
    });
}

/// Runs `groups` (module name, its tests) through libtest-mimic: the usual `cargo test`
/// arguments and output, and a test that called [`not_run`] shown as `ignored (reason)`.
/// The tests named in `opt_in` (benchmarks) are ignored unless `--ignored` or
/// `--include-ignored` asks for them. Ends with a list of what was not run and why.
pub fn run_tests(groups: &[(&str, &[Test])], opt_in: &[&str]) -> std::process::ExitCode {
    use libtest_mimic::{Arguments, Completion, Trial};
    use std::sync::{Arc, Mutex};
    let args = Arguments::from_args();
    let skipped: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let mut trials = Vec::new();
    for (module, tests) in groups {
        for &(name, f) in *tests {
            let full = format!("{module}::{name}");
            let skipped = Arc::clone(&skipped);
            let name_for_list = full.clone();
            let trial = Trial::ignorable_test(full.clone(), move || {
                NOT_RUN.with(|n| n.borrow_mut().take());
                f();
                match NOT_RUN.with(|n| n.borrow_mut().take()) {
                    None => Ok(Completion::Completed),
                    Some(reason) => {
                        skipped
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((name_for_list, reason.clone()));
                        Ok(Completion::ignored_with(format!("not run: {reason}")))
                    }
                }
            });
            trials.push(trial.with_ignored_flag(opt_in.contains(&full.as_str())));
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    let skipped = skipped.lock().unwrap_or_else(|e| e.into_inner());
    if !skipped.is_empty() && !args.list {
        let mut why: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for (_, reason) in skipped.iter() {
            *why.entry(reason.as_str()).or_default() += 1;
        }
        #[allow(clippy::print_stdout)]
        {
            println!(
                "{} test(s) not run on this machine (shown as ignored):",
                skipped.len()
            );
            for (reason, n) in why {
                println!("  {n:>3} × {reason}");
            }
            println!(
                "Install what they need (.ci/run lists and installs it all), or run with CI=true to make a missing one fail."
            );
        }
    }
    conclusion.exit_code()
}

/// Finds `name` on PATH. Without it the test is marked not run (see [`not_run`]), except
/// under CI, where a missing server is a failure (.ci/run installs it).
pub fn require_binary(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        not_run(format!("{name} is not on PATH"));
    }
    found
}

/// A free TCP port on loopback (whose port + 10000, the cluster bus, is free too), never one
/// handed out before in this test process: the OS may give a just-released port again, and
/// two servers (or two nutcracker pools) must not be told to listen on the same one.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = l.local_addr().expect("local addr").port();
        if port < 55000 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
            if !given.contains(&port) && !given.contains(&(port + 10000)) {
                given.push(port);
                return port;
            }
        }
    }
}

/// A redis-server started for one test, stopped when dropped.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    password: Option<String>,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port in a temp dir, optionally in cluster mode.
    pub fn start(binary: &Path, cluster: bool) -> RedisServer {
        Self::start_with(binary, cluster, None)
    }

    /// Like [`RedisServer::start`], optionally with a password (requirepass + masterauth).
    pub fn start_with(binary: &Path, cluster: bool, password: Option<&str>) -> RedisServer {
        Self::start_args(binary, cluster, password, &[])
    }

    /// Like [`RedisServer::start_with`], with extra server arguments (`--name value` pairs).
    pub fn start_args(
        binary: &Path,
        cluster: bool,
        password: Option<&str>,
        extra: &[&str],
    ) -> RedisServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let mut cmd = Command::new(binary);
        cmd.arg("--port")
            .arg(port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(dir.path())
            .arg("--save")
            .arg("")
            .arg("--appendonly")
            .arg("no")
            .arg("--daemonize")
            .arg("no")
            .arg("--protected-mode")
            .arg("no")
            .arg("--logfile")
            .arg(dir.path().join("redis.log"));
        if let Some(p) = password {
            cmd.arg("--requirepass").arg(p).arg("--masterauth").arg(p);
        }
        cmd.args(extra);
        if cluster {
            cmd.arg("--cluster-enabled")
                .arg("yes")
                .arg("--cluster-config-file")
                .arg(dir.path().join("nodes.conf"));
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let server = RedisServer {
            child,
            port,
            password: password.map(str::to_string),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut c) = server.try_connect()
                && let Ok(Reply::Status(s)) = c.call(&[b"PING"])
                && s == "PONG"
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn try_connect(&self) -> std::io::Result<Resp> {
        let s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut c = Resp {
            w: s.try_clone()?,
            r: BufReader::new(s),
        };
        if let Some(p) = &self.password {
            c.call(&[b"AUTH", p.as_bytes()])?;
        }
        Ok(c)
    }

    /// Stops the server now (to simulate a failed node).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A connection to this server.
    pub fn connect(&self) -> Resp {
        self.try_connect().expect("connect to redis-server")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A RESP connection to a port on loopback.
pub fn connect_port(port: u16) -> Resp {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    Resp {
        w: s.try_clone().expect("clone"),
        r: BufReader::new(s),
    }
}

/// A RESP2 reply.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

/// A minimal RESP2 connection for tests (requests are pipelined by `send` + `read`).
pub struct Resp {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Resp {
    /// Encodes one command into `buf`.
    pub fn encode(buf: &mut Vec<u8>, args: &[&[u8]]) {
        buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            buf.extend_from_slice(a);
            buf.extend_from_slice(b"\r\n");
        }
    }

    /// Sends already-encoded commands.
    pub fn send(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.w.write_all(buf)
    }

    /// Reads one reply.
    pub fn read(&mut self) -> std::io::Result<Reply> {
        let mut line = Vec::new();
        self.r.read_until(b'\n', &mut line)?;
        if line.len() < 3 {
            return Err(std::io::Error::other("connection closed"));
        }
        let body = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        Ok(match line[0] {
            b'+' => Reply::Status(body),
            b'-' => Reply::Error(body),
            b':' => Reply::Int(body.parse().map_err(std::io::Error::other)?),
            b'$' => {
                let n: i64 = body.parse().map_err(std::io::Error::other)?;
                if n < 0 {
                    Reply::Bulk(None)
                } else {
                    let mut data = vec![0u8; n as usize + 2];
                    self.r.read_exact(&mut data)?;
                    data.truncate(n as usize);
                    Reply::Bulk(Some(data))
                }
            }
            b'*' => {
                let n: i64 = body.parse().map_err(std::io::Error::other)?;
                let mut items = Vec::new();
                for _ in 0..n.max(0) {
                    items.push(self.read()?);
                }
                Reply::Array(items)
            }
            other => return Err(std::io::Error::other(format!("bad reply type {other}"))),
        })
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&[u8]]) -> std::io::Result<Reply> {
        let mut buf = Vec::new();
        Self::encode(&mut buf, args);
        self.send(&buf)?;
        self.read()
    }
}

/// A deterministic xorshift generator for test data (no dependency on proptest's RNG).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A nutcracker started for one test on a config text, stopped when dropped.
pub struct Nutcracker {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Nutcracker {
    /// Checks the config with `nutcracker -t`, then starts it.
    pub fn start(binary: &Path, conf: &str) -> Nutcracker {
        let dir = tempfile::tempdir().expect("temp dir");
        let conf_path = dir.path().join("nutcracker.yml");
        std::fs::write(&conf_path, conf).expect("write nutcracker.yml");
        let check = Command::new(binary)
            .arg("-t")
            .arg("-c")
            .arg(&conf_path)
            .output()
            .expect("run nutcracker -t");
        assert!(
            check.status.success(),
            "nutcracker -t: {}\n{conf}",
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new(binary)
            .arg("-c")
            .arg(&conf_path)
            .arg("-s")
            .arg(free_port().to_string())
            .arg("-o")
            .arg(dir.path().join("nutcracker.log"))
            .arg("-p")
            .arg(dir.path().join("nutcracker.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nutcracker");
        Nutcracker { child, _dir: dir }
    }

    /// Connects to one of its pools, waiting until it listens.
    pub fn connect(&self, port: u16) -> Resp {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(_) => return connect_port(port),
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("nutcracker pool on port {port} not listening: {e}"),
            }
        }
    }
}

impl Drop for Nutcracker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A finished process's standard output followed by its standard error, as text.
pub fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs a keyplan command that must succeed and parses its JSON output.
pub fn json_of(cmd: &mut assert_cmd::Command) -> serde_json::Value {
    let out = cmd.output().expect("run keyplan");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("keyplan printed JSON")
}

/// Loads an HTML file in headless Chromium and checks the screenshot is a 1200×1600 PNG that
/// is not blank. Skips (with a notice) without Chromium, except under CI.
pub fn assert_renders(html: &Path, scratch: &Path) {
    let Some(chromium) = require_binary("chromium") else {
        return;
    };
    let stem = html
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "page".into());
    let png = scratch.join(format!("{stem}.png"));
    let profile = scratch.join(format!("{stem}-profile"));
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    assert!(
        png.is_file(),
        "no screenshot of {}: {}",
        html.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&png).expect("read the screenshot");
    assert_eq!(&bytes[1..4], b"PNG");
    let w = u32::from_be_bytes(bytes[16..20].try_into().expect("4 bytes"));
    let h = u32::from_be_bytes(bytes[20..24].try_into().expect("4 bytes"));
    assert_eq!((w, h), (1200, 1600));
    // A blank page compresses to a few KB; a report's colour and text do not.
    assert!(
        bytes.len() > 50_000,
        "screenshot of {} looks blank ({} bytes)",
        html.display(),
        bytes.len()
    );
}

/// `(item[name], item[value])` for each item of a JSON array, e.g. each node's address and
/// key count.
pub fn field_pairs(items: &serde_json::Value, name: &str, value: &str) -> Vec<(String, f64)> {
    items
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|n| {
            (
                n[name].as_str().expect("a string field").to_string(),
                n[value].as_f64().expect("a number field"),
            )
        })
        .collect()
}

/// A `[first, last]` slot range of a JSON report as redis-cli writes it (`0-5460`, or `7`).
pub fn range_text(r: &serde_json::Value) -> String {
    let (a, b) = (r[0].as_u64().unwrap(), r[1].as_u64().unwrap());
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

/// A JSON array of `[first, last]` ranges as CLUSTER NODES writes them (`0-99 200-300`).
pub fn ranges_text(v: &serde_json::Value) -> String {
    v.as_array()
        .unwrap()
        .iter()
        .map(range_text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs keyplan in this process (through `keyplan::cli::run`, streams as pipes): the exit
/// code, stdout and stderr. For table-driven cases; a handful of tests run the real binary.
pub fn run_in_process(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut argv = vec!["keyplan"];
    argv.extend_from_slice(args);
    let status = keyplan::cli::run(argv, &mut out, &mut err);
    (
        i32::from(status.code()),
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}
