//! Emitted migration scripts under hostile topologies: every `--emit` kind, for rebalance and
//! reshard, is run by `sh` with stand-in `redis-cli`, `valkey-cli` and `aws` that answer as a
//! cluster would, and no command planted in a node name, address, id or the topology's file
//! name may run. Ids that are not 40 hex digits are refused in every topology format.

use super::support::{Reply, Resp, Rng, connect_port, keyplan, require_binary};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Answers what the emitted scripts ask: ids for CLUSTER MYID, OK for each command on
/// standard input (the ECHO marks echoed, no keys in any slot), a finished job for Valkey's
/// and Redis's atomic migrations. `--cluster …` (redis-cli's own reshard) succeeds.
const STAND_IN: &str = r#"#!/bin/sh
state="$STAND_IN_DIR/ranges"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|-p) shift 2 ;;
    --raw|--no-raw) shift ;;
    *) break ;;
  esac
done
case " $* " in
  *" --cluster "*) echo '[OK] All nodes agree about slots configuration.'; exit 0 ;;
  *" CLUSTER MYID "*) echo 0123456789abcdef0123456789abcdef01234567; exit 0 ;;
  *" MIGRATESLOTS "*)
    shift 3
    r=""
    while [ "$1" != NODE ]; do r="$r${r:+ }$1-$2"; shift 2; done
    printf '%s' "$r" > "$state"; echo OK; exit 0 ;;
  *" GETSLOTMIGRATIONS "*)
    printf 'name\nj1\noperation\nEXPORT\nslot_ranges\n%s\nstate\nsuccess\n' "$(cat "$state")"; exit 0 ;;
  *" MIGRATION IMPORT "*) echo 1a2b; exit 0 ;;
  *" MIGRATION STATUS "*) printf 'id\n1a2b\nstate\ncompleted\n'; exit 0 ;;
  *" CLUSTER INFO "*) printf 'cluster_state:ok\r\ncluster_known_nodes:1\r\n'; exit 0 ;;
  # The topology as CLUSTER NODES (the test writes it): every node sees the same.
  *" CLUSTER NODES "*) cat "$STAND_IN_DIR/nodes"; exit 0 ;;
esac
[ $# -eq 0 ] || { echo "stand-in: unexpected arguments: $*" >&2; exit 3; }
while IFS= read -r line; do
  [ -z "${STAND_IN_LOG:-}" ] || printf '%s\n' "$line" >> "$STAND_IN_LOG"
  case "$line" in
    "ECHO "*) printf '"%s"\n' "${line#ECHO }" ;;
    "CLUSTER GETKEYSINSLOT "*)
      # With STAND_IN_KEYS, the first slot asked for lists two keys no line carries raw.
      if [ -n "${STAND_IN_KEYS:-}" ] && [ ! -e "$STAND_IN_DIR/listed" ]; then
        : > "$STAND_IN_DIR/listed"
        printf '%s\n' '1) "a\nb"' '2) "n\x00ul\\\""'
      else
        echo '(empty array)'
      fi ;;
    "CLUSTER COUNTKEYSINSLOT "*) echo 0 ;;
    *) echo OK ;;
  esac
done
"#;

/// Commands planted in names and addresses: each would create a file `pwned*` in the
/// directory the script runs in.
const NAME_A: &str =
    "a$(touch pwned1)`touch pwned2`;touch pwned3|touch pwned4&touch pwned5\\ntouch pwned6\\n\\r";
const NAME_B: &str = "b'; touch pwned7; '";

const KINDS: &[&str] = &[
    "redis-cli",
    "valkey-cli",
    "setslot",
    "valkey-atomic",
    "redis-atomic",
    "elasticache",
    "memorydb",
];

/// [`topology_yaml`]'s cluster as its nodes would list it in CLUSTER NODES.
const HOSTILE_NODES: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-10000\n\
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb h$(touch${IFS}pwned8):7001@17001 master - 0 0 2 connected 10001-16383\n\
cccccccccccccccccccccccccccccccccccccccc *:7002@17002 master - 0 0 3 connected\n";

fn topology_yaml(id_a: &str) -> String {
    format!(
        "nodes:\n  - name: \"{NAME_A}\"\n    address: \"127.0.0.1:7000\"\n    id: \"{id_a}\"\n    slots: 0-10000\n  - name: \"{NAME_B}\"\n    address: \"h$(touch${{IFS}}pwned8):7001\"\n    id: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n    slots: 10001-16383\n  - name: \"*\"\n    address: \"*:7002\"\n    id: cccccccccccccccccccccccccccccccccccccccc\n"
    )
}

/// The stand-ins on a PATH, answering CLUSTER NODES with `nodes`.
fn stand_ins(dir: &Path, nodes: &str) -> String {
    std::fs::write(dir.join("nodes"), nodes).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["redis-cli", "valkey-cli"] {
        let p = bin.join(name);
        std::fs::write(&p, STAND_IN).unwrap();
        make_executable(&p);
    }
    let aws = bin.join("aws");
    std::fs::write(&aws, "#!/bin/sh\nexit 0\n").unwrap();
    make_executable(&aws);
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn pwned(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pwned"))
        .collect();
    found.sort();
    found
}

/// Every emit kind, rebalance and reshard, from a topology whose names, addresses and file
/// name carry commands: the scripts run to their end through `sh` and none of the commands runs.
fn planted_commands_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = stand_ins(dir.path(), HOSTILE_NODES);
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    // A file name that would end the header comment and start a command of its own.
    let topo = dir
        .path()
        .join("t\ntouch pwned9\n$(touch pwned10)`touch pwned11`.yaml");
    std::fs::write(
        &topo,
        topology_yaml("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
    )
    .unwrap();
    let topo_arg = topo.to_str().unwrap();
    let plans: [Vec<&str>; 2] = [
        vec!["rebalance", "--use-empty-masters"],
        vec![
            "reshard",
            "--from",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "--to",
            "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
            "--slots",
            "150",
        ],
    ];
    let mut ran = 0;
    for plan in &plans {
        for kind in KINDS {
            let out = keyplan()
                .args(plan)
                .args(["--preview", "--topology", topo_arg, "--emit", kind])
                .output()
                .unwrap();
            let script = String::from_utf8_lossy(&out.stdout).into_owned();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{plan:?} --emit {kind}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Comments stay comments: every line of the header before the first command is one.
            for line in script
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with("set "))
            {
                assert!(line.starts_with('#'), "{kind}: header line {line:?}");
            }
            let file = dir.path().join(format!("{}-{kind}.sh", plan[0]));
            std::fs::write(&file, &script).unwrap();
            let mut sh = Command::new("sh");
            sh.arg(&file)
                .current_dir(&run_dir)
                .env("PATH", &path)
                .env("STAND_IN_DIR", dir.path())
                .env("REPLICATION_GROUP", "g")
                .env("NODE_GROUPS_TO_REMOVE", "0001")
                .env("CLUSTER_NAME", "c");
            if matches!(*kind, "elasticache" | "memorydb") {
                sh.arg("online");
            }
            let run = sh.output().unwrap();
            assert!(
                run.status.success(),
                "{plan:?} --emit {kind} did not run to its end: {}\n{script}",
                String::from_utf8_lossy(&run.stderr)
            );
            assert_eq!(
                pwned(&run_dir),
                Vec::<String>::new(),
                "{plan:?} --emit {kind} ran a planted command:\n{script}"
            );
            ran += 1;
        }
    }
    assert_eq!(ran, 14);
}

/// An id with a command in it is refused, at its line, in every topology format that carries
/// ids; no script is written.
fn ids_that_are_not_hex_are_refused_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let bad = "$(touch pwned)aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let bad40 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa`touch pwn`";
    assert_eq!(bad40.len(), 40);
    let good_b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    let cases: Vec<(&str, String, &str)> = vec![
        ("yaml", topology_yaml(bad), "line 4"),
        ("yaml-40", topology_yaml(bad40), "line 4"),
        (
            "shards",
            format!(
                "[{{\"slots\":[0,8191],\"nodes\":[{{\"id\":\"{bad40}\",\"ip\":\"127.0.0.1\",\"port\":7000,\"role\":\"master\"}}]}},{{\"slots\":[8192,16383],\"nodes\":[{{\"id\":\"{good_b}\",\"ip\":\"127.0.0.1\",\"port\":7001,\"role\":\"master\"}}]}}]"
            ),
            "not 40 hexadecimal digits",
        ),
        (
            "slots",
            format!(
                "[[0,8191,[\"127.0.0.1\",7000,\"{bad}\"]],[8192,16383,[\"127.0.0.1\",7001,\"{good_b}\"]]]"
            ),
            "not 40 hexadecimal digits",
        ),
        (
            "display",
            format!(
                "1) 1) (integer) 0\n   2) (integer) 8191\n   3) 1) \"127.0.0.1\"\n      2) (integer) 7000\n      3) \"{bad40}\"\n2) 1) (integer) 8192\n   2) (integer) 16383\n   3) 1) \"127.0.0.1\"\n      2) (integer) 7001\n      3) \"{good_b}\"\n"
            ),
            "line 1",
        ),
        (
            "cluster-nodes",
            format!(
                "{bad40} 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-8191\n{good_b} 127.0.0.1:7001@17001 master - 0 0 2 connected 8192-16383\n"
            ),
            "line 1",
        ),
    ];
    for (what, text, place) in cases {
        let topo = dir.path().join(format!("{what}.topology"));
        std::fs::write(&topo, &text).unwrap();
        for kind in ["setslot", "redis-cli", "valkey-atomic"] {
            let out = keyplan()
                .args([
                    "rebalance",
                    "--preview",
                    "--use-empty-masters",
                    "--topology",
                ])
                .arg(&topo)
                .args(["--emit", kind])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what} {kind}: {err}");
            assert!(out.stdout.is_empty(), "{what} {kind}: a script was written");
            assert!(
                err.contains(place) && err.contains(&format!("{what}.topology")),
                "{what} {kind}: the error names neither the file nor {place}: {err}"
            );
        }
    }
}

/// The setslot script hands keys and the password to `MIGRATE` byte for byte: keys with a
/// newline or a NUL as redis-cli listed them, a password holding `\t`, a quote and a
/// backslash through awk's environment (not `awk -v`, which shows it in `ps` and turns `\t`
/// into a TAB).
fn setslot_passes_keys_and_password_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n\
         bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 127.0.0.1:7001@17001 master - 0 0 2 connected\n";
    let path = stand_ins(dir.path(), nodes);
    let topo = dir.path().join("t.nodes");
    std::fs::write(&topo, nodes).unwrap();
    let out = keyplan()
        .args([
            "rebalance",
            "--preview",
            "--use-empty-masters",
            "--topology",
        ])
        .arg(&topo)
        .args(["--emit", "setslot"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(!script.contains("-v auth"), "{script}");
    let file = dir.path().join("setslot.sh");
    std::fs::write(&file, &script).unwrap();
    let log = dir.path().join("sent");
    let run = Command::new("sh")
        .arg(&file)
        .env("PATH", &path)
        .env("STAND_IN_DIR", dir.path())
        .env("STAND_IN_LOG", &log)
        .env("STAND_IN_KEYS", "1")
        .env("REDISCLI_AUTH", "p\\tw\"x'y")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let sent = std::fs::read_to_string(&log).unwrap();
    let migrate: Vec<&str> = sent.lines().filter(|l| l.starts_with("MIGRATE ")).collect();
    assert_eq!(
        migrate,
        [
            "MIGRATE \"127.0.0.1\" 7001 \"\" 0 60000 AUTH \"p\\x5ctw\\x22x'y\" KEYS \"a\\nb\" \"n\\x00ul\\\\\\\"\""
        ],
        "{sent}"
    );
}

/// Ordinary keys and keys no line-based listing carries (a newline, a NUL, quotes and a
/// backslash, invalid UTF-8 with a CR), `n` of each, and the empty key.
pub(crate) fn hostile_keys(n: usize) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for i in 0..n {
        keys.push(format!("user:{i}:profile").into_bytes());
        keys.push(format!("nl\n{i}").into_bytes());
        keys.push(format!("nul\0{i}").into_bytes());
        keys.push(format!("q\"'\\{i}").into_bytes());
        let mut bad = format!("bad{i}").into_bytes();
        bad.extend_from_slice(&[0xff, 0xfe, b'\r', 0xc3]);
        keys.push(bad);
    }
    keys.push(Vec::new());
    keys
}

/// Sends each of `cmds` (its second word a key) to the node that serves the key, starting at
/// `ports[0]` and following MOVED: the replies, in order.
pub(crate) fn routed(ports: &[u16], cmds: &[Vec<Vec<u8>>]) -> Vec<Reply> {
    let mut conns: BTreeMap<u16, Resp> = BTreeMap::new();
    let mut replies: Vec<Option<Reply>> = (0..cmds.len()).map(|_| None).collect();
    let mut pending: Vec<(usize, u16)> = (0..cmds.len()).map(|i| (i, ports[0])).collect();
    let mut rounds = 0;
    while !pending.is_empty() {
        rounds += 1;
        assert!(rounds < 10, "MOVED redirects go round in circles");
        let mut by_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
        for (i, p) in pending.drain(..) {
            by_port.entry(p).or_default().push(i);
        }
        for (port, idx) in by_port {
            let c = conns.entry(port).or_insert_with(|| connect_port(port));
            for chunk in idx.chunks(1000) {
                let mut buf = Vec::new();
                for &i in chunk {
                    let args: Vec<&[u8]> = cmds[i].iter().map(Vec::as_slice).collect();
                    Resp::encode(&mut buf, &args);
                }
                c.send(&buf).unwrap();
                for &i in chunk {
                    match c.read().unwrap() {
                        Reply::Error(e) if e.starts_with("MOVED ") => {
                            let p: u16 = e.rsplit(':').next().unwrap().parse().unwrap();
                            pending.push((i, p));
                        }
                        r => replies[i] = Some(r),
                    }
                }
            }
        }
    }
    replies.into_iter().map(|r| r.unwrap()).collect()
}

fn cmd(words: &[&[u8]]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.to_vec()).collect()
}

/// Writes every key (strings, hashes and lists; every seventh with a TTL), each with a value of
/// its own.
pub(crate) fn load_values(ports: &[u16], keys: &[Vec<u8>]) {
    let mut cmds = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let v = [format!("v{i}-").into_bytes(), k.clone()].concat();
        cmds.push(match i % 5 {
            0 => cmd(&[b"HSET", k, b"f", &v, b"g", b"\0\n"]),
            1 => cmd(&[b"RPUSH", k, &v, b"x"]),
            _ => cmd(&[b"SET", k, &v]),
        });
    }
    for r in routed(ports, &cmds) {
        assert!(matches!(r, Reply::Status(_) | Reply::Int(_)), "{r:?}");
    }
    let ttl: Vec<Vec<Vec<u8>>> = keys
        .iter()
        .step_by(7)
        .map(|k| cmd(&[b"PEXPIRE", k, b"3600000"]))
        .collect();
    for r in routed(ports, &ttl) {
        assert_eq!(r, Reply::Int(1));
    }
}

/// Each key's DUMP payload and PTTL, from the node that serves it.
pub(crate) fn snapshot(ports: &[u16], keys: &[Vec<u8>]) -> Vec<(Option<Vec<u8>>, i64)> {
    let dumps = routed(
        ports,
        &keys.iter().map(|k| cmd(&[b"DUMP", k])).collect::<Vec<_>>(),
    );
    let ttls = routed(
        ports,
        &keys.iter().map(|k| cmd(&[b"PTTL", k])).collect::<Vec<_>>(),
    );
    dumps
        .into_iter()
        .zip(ttls)
        .map(|(d, t)| match (d, t) {
            (Reply::Bulk(b), Reply::Int(t)) => (b, t),
            other => panic!("DUMP/PTTL replied {other:?}"),
        })
        .collect()
}

/// Every key is where its slot's owner serves it, with the same value and type (its DUMP
/// payload) and its TTL (none, or no more than before and not expired).
pub(crate) fn assert_same_data(
    what: &str,
    keys: &[Vec<u8>],
    before: &[(Option<Vec<u8>>, i64)],
    after: &[(Option<Vec<u8>>, i64)],
) {
    for (i, k) in keys.iter().enumerate() {
        let ((d0, t0), (d1, t1)) = (&before[i], &after[i]);
        assert!(
            d1.is_some(),
            "{what}: key {:?} is lost",
            String::from_utf8_lossy(k)
        );
        assert_eq!(
            d0,
            d1,
            "{what}: key {:?} changed",
            String::from_utf8_lossy(k)
        );
        assert!(
            (*t0 == -1 && *t1 == -1) || (*t1 > 0 && t1 <= t0),
            "{what}: TTL of {:?} was {t0} ms, now {t1}",
            String::from_utf8_lossy(k)
        );
    }
}

/// The sample as redis-cli's quoted form, which holds every byte.
pub(crate) fn quoted_sample(keys: &[Vec<u8>]) -> Vec<u8> {
    let mut text = Vec::new();
    for k in keys {
        text.push(b'"');
        for &b in k {
            match b {
                b'\\' => text.extend_from_slice(b"\\\\"),
                b'"' => text.extend_from_slice(b"\\\""),
                0x20..=0x7e => text.push(b),
                _ => text.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            }
        }
        text.extend_from_slice(b"\"\n");
    }
    text
}

/// Each master's slot ranges by address, from a CLUSTER NODES text (markers dropped).
fn ranges_by_address(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| l.contains("master"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let addr = f[1].split('@').next().unwrap().to_string();
            let r: Vec<&str> = f[8..]
                .iter()
                .copied()
                .filter(|s| !s.starts_with('['))
                .collect();
            (addr, r.join(" "))
        })
        .collect()
}

/// Every node of the preview owns, in the cluster seen from `port`, the slots it previewed.
pub(crate) fn assert_owners(what: &str, preview: &Value, port: u16) {
    let real = ranges_by_address(&crate::rebalance::cluster_nodes(port));
    for n in preview["nodes"].as_array().unwrap() {
        let addr = n["address"].as_str().unwrap();
        assert_eq!(
            real.get(addr).map(String::as_str).unwrap_or(""),
            crate::support::ranges_text(&n["after"]["slot_ranges"]),
            "{what}: slots of {addr} (real vs preview)"
        );
    }
}

/// Runs `script` with `sh`, killing it (its whole process group) after a random delay, up to
/// `kills` times, then once to its end, and once more (a finished script run again changes
/// nothing). Returns how many runs the kills cut short.
pub(crate) fn run_with_kills(
    script: &Path,
    env: &[(&str, &Path)],
    rng: &mut Rng,
    kills: usize,
) -> usize {
    use std::os::unix::process::CommandExt;
    let start = || {
        let mut c = Command::new("sh");
        c.arg(script)
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        c.spawn().unwrap()
    };
    let mut cut = 0;
    for _ in 0..kills {
        let mut child = start();
        let delay = 150 + rng.below(1500);
        std::thread::sleep(Duration::from_millis(delay));
        if child.try_wait().unwrap().is_none() {
            let pgid = format!("-{}", child.id());
            Command::new("kill")
                .args(["-KILL", "--", &pgid])
                .status()
                .unwrap();
            let _ = child.wait();
            cut += 1;
        } else {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "the script failed on its own ({}): {}",
                out.status,
                crate::support::all_output(&out)
            );
            break;
        }
    }
    for run in ["the run after the kills", "a run of the finished script"] {
        let out = start().wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{run} failed: {}",
            crate::support::all_output(&out)
        );
    }
    cut
}

fn preview_json(args: &[&str]) -> Value {
    let out = keyplan()
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no JSON: {}", String::from_utf8_lossy(&out.stderr)))
}

/// `exit`: the status the preview exits with (1 when it warns).
fn script_of(args: &[&str], path: &Path, exit: i32) -> String {
    let out = keyplan()
        .args(args)
        .args(["--emit", "setslot"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(exit),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(path, &out.stdout).unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// The setslot script killed at random points (a fixed seed) and run again ends in the
/// previewed state with every key, its type, value and TTL intact: a 3-master cluster grows by
/// two masters (the script adds them), then both are drained and removed (the first drained
/// gives its last slot before the last move, so the script keeps it a master for the run).
/// The keys hold newlines, NULs, quotes and invalid UTF-8.
fn setslot_script_reruns_to_the_previewed_state_after_kills() {
    let Some(mut cluster) = crate::cluster::Cluster::create() else {
        return;
    };
    let (Some(server), Some(cli)) = (require_binary("redis-server"), require_binary("redis-cli"))
    else {
        return;
    };
    let keys = hostile_keys(1200);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    load_values(&ports, &keys);
    let before = snapshot(&ports, &keys);
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.keys");
    std::fs::write(&sample, quoted_sample(&keys)).unwrap();
    let state = dir.path().join("state");
    let env: [(&str, &Path); 1] = [("KEYPLAN_STATE", &state)];
    let mut rng = Rng(0x6b65_7970_6c61_6e64);

    // 1. Two empty servers join and take their share.
    for _ in 0..2 {
        cluster
            .nodes
            .push(crate::support::RedisServer::start(&server, true));
    }
    let all: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let nodes = dir.path().join("nodes-1.txt");
    std::fs::write(&nodes, crate::rebalance::cluster_nodes(ports[0])).unwrap();
    let add: Vec<String> = all[3..].iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let args = [
        "rebalance",
        "--preview",
        "--topology",
        nodes.to_str().unwrap(),
        "--add-node",
        &add[0],
        "--add-node",
        &add[1],
        "--keys",
        sample.to_str().unwrap(),
        "--pipeline",
        "20",
    ];
    let p = preview_json(&args);
    let script = dir.path().join("grow.sh");
    script_of(&args, &script, 0);
    let cut = run_with_kills(&script, &env, &mut rng, 4);
    assert!(
        cut >= 2,
        "only {cut} of the kills landed before the script ended"
    );
    crate::rebalance::wait_agree(&cli, &all);
    assert_owners("3 → 5", &p, ports[0]);
    assert_same_data("3 → 5", &keys, &before, &snapshot(&all, &keys));
    let sizes: u64 = cluster.dbsize().iter().sum();
    assert_eq!(
        sizes,
        keys.len() as u64,
        "3 → 5: keys on more than one node"
    );

    // 2. Both drained and removed.
    let text = crate::rebalance::cluster_nodes(ports[0]);
    std::fs::write(dir.path().join("nodes-2.txt"), &text).unwrap();
    let id = |port: u16| -> String {
        text.lines()
            .find(|l| l.contains(&format!("127.0.0.1:{port}@")))
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .to_string()
    };
    let (a, b) = (id(all[3]), id(all[4]));
    let nodes = dir.path().join("nodes-2.txt");
    let args = [
        "rebalance",
        "--preview",
        "--topology",
        nodes.to_str().unwrap(),
        "--remove-node",
        &a,
        "--remove-node",
        &b,
        "--keys",
        sample.to_str().unwrap(),
        "--pipeline",
        "20",
    ];
    let p = preview_json(&args);
    let warned = p["warnings"]
        .to_string()
        .contains("cluster-allow-replica-migration");
    let script = dir.path().join("drain.sh");
    // 1: the drain warns (checked below).
    let text = script_of(&args, &script, 1);
    assert!(
        warned,
        "the drain of two masters no longer warns: {}",
        p["warnings"]
    );
    assert!(
        text.contains("\nkeep_masters\n") && text.contains("\nrestore_masters\n"),
        "{text}"
    );
    let cut = run_with_kills(&script, &env, &mut rng, 4);
    assert!(
        cut >= 2,
        "only {cut} of the kills landed before the script ended"
    );
    assert!(!state.exists(), "the script left its state file");
    crate::rebalance::wait_agree(&cli, &ports);
    let listed = crate::rebalance::cluster_nodes(ports[0]);
    assert!(!listed.contains(&a) && !listed.contains(&b), "{listed}");
    assert_owners("5 → 3", &p, ports[0]);
    assert_same_data("5 → 3", &keys, &before, &snapshot(&ports, &keys));
    let sizes: i64 = ports
        .iter()
        .map(|&p| match connect_port(p).call(&[b"DBSIZE"]).unwrap() {
            Reply::Int(n) => n,
            other => panic!("DBSIZE replied {other:?}"),
        })
        .sum();
    assert_eq!(
        sizes,
        keys.len() as i64,
        "5 → 3: keys on more than one node"
    );
}

/// A slot left open on a real cluster (SETSLOT IMPORTING on one master, MIGRATING on
/// another), its `CLUSTER NODES` captured on each side: CLUSTER NODES lists only the capturing
/// node's markers, so each file shows one side. An offline preview from either file refuses,
/// naming the slot, the side the file shows and why the other is not there, and for every
/// command that plans moves (rebalance, reshard, --emit setslot); the live preview, which reads
/// every master, names both sides and no missing one.
fn an_open_slot_seen_from_one_side_is_refused_naming_it() {
    let Some(cluster) = super::cluster::Cluster::create() else {
        return;
    };
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let call = |port: u16, args: &[&[u8]]| connect_port(port).call(args).unwrap();
    let id = |port: u16| match call(port, &[b"CLUSTER", b"MYID"]) {
        Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("CLUSTER MYID replied {other:?}"),
    };
    // The owner of slot 100, and another master to move it to.
    let owner = ports
        .iter()
        .copied()
        .find(|&p| {
            let Reply::Bulk(Some(nodes)) = call(p, &[b"CLUSTER", b"NODES"]) else {
                panic!("CLUSTER NODES failed")
            };
            let text = String::from_utf8(nodes).unwrap();
            let mine = text.lines().find(|l| l.contains("myself")).unwrap();
            mine.split_whitespace().skip(8).any(|r| {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                a.parse::<u16>().is_ok_and(|a| a <= 100) && b.parse::<u16>().is_ok_and(|b| b >= 100)
            })
        })
        .expect("an owner of slot 100");
    let to = *ports.iter().find(|&&p| p != owner).unwrap();
    let (owner_id, to_id) = (id(owner), id(to));
    for (port, args) in [
        (to, [b"IMPORTING".as_slice(), owner_id.as_bytes()]),
        (owner, [b"MIGRATING".as_slice(), to_id.as_bytes()]),
    ] {
        let r = call(port, &[b"CLUSTER", b"SETSLOT", b"100", args[0], args[1]]);
        assert!(matches!(&r, Reply::Status(s) if s == "OK"), "{r:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let capture = |port: u16| {
        let Reply::Bulk(Some(text)) = call(port, &[b"CLUSTER", b"NODES"]) else {
            panic!("CLUSTER NODES failed")
        };
        let path = dir.path().join(format!("nodes-{port}.txt"));
        std::fs::write(&path, text).unwrap();
        path
    };
    let (a, b) = (format!("127.0.0.1:{owner}"), format!("127.0.0.1:{to}"));
    let sides = [
        (
            capture(owner),
            format!("slot 100 migrating from {a} to {b}"),
        ),
        (capture(to), format!("slot 100 importing into {b} from {a}")),
    ];
    for (file, side) in &sides {
        let text = std::fs::read_to_string(file).unwrap();
        assert_eq!(text.matches("[100-").count(), 1, "one marker: {text}");
        for args in [
            vec!["rebalance", "--preview"],
            vec![
                "reshard",
                "--preview",
                "--from",
                "all",
                "--to",
                &b,
                "--slots",
                "10",
            ],
            vec!["rebalance", "--preview", "--emit", "setslot"],
        ] {
            let out = keyplan()
                .args(&args)
                .arg("--topology")
                .arg(file)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("slots 100 are open"), "{args:?}: {err}");
            assert!(
                err.contains(&format!("{side}: only this side is shown")),
                "{args:?} on {}: {err}",
                file.display()
            );
            assert!(err.contains("preview with --cluster"), "{err}");
        }
    }
    let out = keyplan()
        .args(["rebalance", "--preview", "--cluster"])
        .arg(format!("redis://{a}"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("slots 100 are open"), "{err}");
    assert!(
        !err.contains("only this side"),
        "both sides are read live: {err}"
    );
}

pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "an_open_slot_seen_from_one_side_is_refused_naming_it",
        an_open_slot_seen_from_one_side_is_refused_naming_it,
    ),
    (
        "setslot_script_reruns_to_the_previewed_state_after_kills",
        setslot_script_reruns_to_the_previewed_state_after_kills,
    ),
    ("planted_commands_never_run", planted_commands_never_run),
    (
        "setslot_passes_keys_and_password_byte_for_byte",
        setslot_passes_keys_and_password_byte_for_byte,
    ),
    (
        "ids_that_are_not_hex_are_refused_everywhere",
        ids_that_are_not_hex_are_refused_everywhere,
    ),
];
