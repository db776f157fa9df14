//! Emitted migration scripts under hostile topologies: every `--emit` kind, for rebalance and
//! reshard, is run by `sh` with stand-in `redis-cli`, `valkey-cli` and `aws` that answer as a
//! cluster would, and no command planted in a node name, address, id or the topology's file
//! name may run. Ids that are not 40 hex digits are refused in every topology format.

use super::support::keyplan;
use std::path::Path;
use std::process::Command;

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
  *" --cluster "*) exit 0 ;;
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

fn topology_yaml(id_a: &str) -> String {
    format!(
        "nodes:\n  - name: \"{NAME_A}\"\n    address: \"127.0.0.1:7000\"\n    id: \"{id_a}\"\n    slots: 0-10000\n  - name: \"{NAME_B}\"\n    address: \"h$(touch${{IFS}}pwned8):7001\"\n    id: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n    slots: 10001-16383\n  - name: \"*\"\n    address: \"*:7002\"\n    id: cccccccccccccccccccccccccccccccccccccccc\n"
    )
}

fn stand_ins(dir: &Path) -> String {
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
    let path = stand_ins(dir.path());
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
    let path = stand_ins(dir.path());
    let topo = dir.path().join("t.nodes");
    std::fs::write(
        &topo,
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n\
         bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 127.0.0.1:7001@17001 master - 0 0 2 connected\n",
    )
    .unwrap();
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

pub(crate) const TESTS: &[crate::support::Test] = &[
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
