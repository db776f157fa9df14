//! Batches from a `redis-cli MONITOR` capture: multi-key commands, MULTI…EXEC blocks
//! and scripts (EVAL/EVALSHA/FCALL) with their keys, grouped per client connection as MONITOR
//! shows them. Single-key commands outside a transaction are not batches and are only counted.
//!
//! A line looks like `1796034785.337983 [0 127.0.0.1:35226] "SET" "a" "1"`; commands a script
//! runs appear as `[0 lua]` and belong to the script, so they are skipped.

use super::batch::{BatchError, Strictness, op_of, split_args};
use super::{Batch, BatchKind, Op};
use std::collections::HashMap;

/// What a capture held besides its batches.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MonitorStats {
    /// Commands read (client commands, not those run by scripts).
    pub commands: u64,
    /// Single-key commands (not batches).
    pub single: u64,
    /// MULTI blocks still open at the end of the capture (dropped).
    pub unterminated: u64,
}

fn name_of(line: usize, client: &str, ops: &[Op], kind: BatchKind) -> String {
    let first = &ops[0];
    let mut text = match kind {
        BatchKind::Multi => format!("MULTI … EXEC, {} commands", ops.len()),
        _ => {
            let keys: Vec<String> = first
                .keys
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            format!("{} {}", first.command, keys.join(" "))
        }
    };
    if text.chars().count() > 60 {
        text = text.chars().take(57).collect::<String>() + "…";
    }
    format!("line {line} [{client}]: {text}")
}

/// Whether an EVAL's script declares `#!lua flags=…allow-cross-slot-keys…` on its first line.
fn allows_cross_slot(op: &Op) -> bool {
    if !op.command.starts_with("EVAL") || op.command.starts_with("EVALSHA") {
        return false;
    }
    let Some(body) = op.args.get(1) else {
        return false;
    };
    let first = body.split(|&c| c == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    first.starts_with("#!")
        && first
            .split_once("flags=")
            .is_some_and(|(_, f)| f.split([',', ' ']).any(|x| x == "allow-cross-slot-keys"))
}

/// Parses a MONITOR capture. Errors name the line and column.
pub fn parse_monitor(text: &str) -> Result<(Vec<Batch>, MonitorStats), BatchError> {
    let mut out: Vec<Batch> = Vec::new();
    let mut stats = MonitorStats::default();
    // Per client: the line of its open MULTI and the commands queued since.
    let mut open: HashMap<String, (usize, Vec<Op>)> = HashMap::new();
    // The script whose `[0 lua]` commands may follow (an index into `out`).
    let mut last_script: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() || l == "OK" {
            continue;
        }
        let bad = |column: usize, message: &'static str| BatchError::Monitor {
            line,
            column,
            message,
        };
        let (ts, rest) = l
            .split_once(' ')
            .ok_or_else(|| bad(1, "not a MONITOR line"))?;
        if ts.is_empty() || !ts.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(bad(1, "no timestamp"));
        }
        let open_at = ts.len() + 2;
        let rest = rest
            .strip_prefix('[')
            .ok_or_else(|| bad(open_at, "no '[db client]'"))?;
        let (inside, args) = rest
            .split_once("] ")
            .ok_or_else(|| bad(open_at, "no closing ']'"))?;
        let client = inside
            .split_once(' ')
            .map(|(_, c)| c)
            .ok_or_else(|| bad(open_at + 1, "no client in '[db client]'"))?;
        let args_at = open_at + inside.len() + 2;
        let args = split_args(args, line, args_at)?;
        if args.is_empty() {
            return Err(bad(args_at, "no command"));
        }
        if client == "lua" {
            // A command the script just sent ran (the server runs a script to its end before
            // anything else, so its commands follow its line).
            if let Some(b) = last_script.and_then(|i| out.get_mut(i)) {
                let op = op_of(args, line, Strictness::Capture)?;
                if !op.keys.is_empty() {
                    b.script_ran.push(op.keys);
                }
            }
            continue;
        }
        last_script = None;
        stats.commands += 1;
        let op = op_of(args, line, Strictness::Capture)?;
        match op.command.as_str() {
            "MULTI" => {
                open.insert(client.to_string(), (line, Vec::new()));
            }
            "EXEC" => {
                if let Some((at, ops)) = open.remove(client)
                    && ops.iter().any(|o| !o.keys.is_empty())
                {
                    let name = name_of(at, client, &ops, BatchKind::Multi);
                    out.push(Batch::at_line(name, at, BatchKind::Multi, ops));
                }
            }
            "DISCARD" => {
                open.remove(client);
            }
            _ => {
                if let Some((_, ops)) = open.get_mut(client) {
                    ops.push(op);
                    continue;
                }
                let kind = match op.command.as_str() {
                    "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL" | "FCALL_RO" => {
                        // Kept even without declared keys: the keys it runs on may follow.
                        last_script = Some(out.len());
                        BatchKind::Script
                    }
                    _ if op.keys.len() >= 2 => BatchKind::MultiKey,
                    _ => {
                        stats.single += 1;
                        continue;
                    }
                };
                let allow = kind == BatchKind::Script && allows_cross_slot(&op);
                let ops = vec![op];
                let name = name_of(line, client, &ops, kind);
                let mut b = Batch::at_line(name, line, kind, ops);
                b.allow_cross_slot = allow;
                out.push(b);
            }
        }
    }
    // A script with no declared keys that ran no key command is not a batch.
    let before = out.len();
    out.retain(|b| {
        !(b.kind == BatchKind::Script && b.keys().next().is_none() && b.script_ran.is_empty())
    });
    stats.single += (before - out.len()) as u64;
    stats.unterminated = open.len() as u64;
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = r#"OK
1796034785.312830 [0 127.0.0.1:35222] "mget" "a" "b" "c"
1796034785.335156 [0 127.0.0.1:35226] "COMMAND" "DOCS"
1796034785.337983 [0 127.0.0.1:35226] "MULTI"
1796034785.338100 [0 127.0.0.1:40000] "GET" "x"
1796034785.338685 [0 127.0.0.1:35226] "SET" "a" "1"
1796034785.338875 [0 127.0.0.1:35226] "INCR" "b"
1796034785.338883 [0 127.0.0.1:35226] "EXEC"
1796034785.345936 [0 127.0.0.1:35228] "eval" "return redis.call('get', KEYS[1])" "2" "k1" "k 2" "x"
1796034785.348132 [0 lua] "get" "k1"
1796034785.353509 [0 unix:/tmp/redis.sock] "del" "bin\x01" "c"
"#;

    #[test]
    fn batches_from_a_capture() {
        let (b, stats) = parse_monitor(CAPTURE).unwrap();
        assert_eq!(b.len(), 4);
        assert_eq!(b[0].kind, BatchKind::MultiKey);
        assert_eq!(
            b[0].ops[0].keys,
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(b[1].kind, BatchKind::Multi);
        assert_eq!(b[1].ops.len(), 2);
        assert!(
            b[1].name.starts_with("line 4 [127.0.0.1:35226]"),
            "{}",
            b[1].name
        );
        assert_eq!(b[2].kind, BatchKind::Script);
        assert_eq!(b[2].ops[0].keys, vec![b"k1".to_vec(), b"k 2".to_vec()]);
        assert_eq!(b[3].ops[0].keys[0], b"bin\x01".to_vec());
        assert_eq!(
            stats,
            MonitorStats {
                commands: 9,
                single: 2,
                unterminated: 0
            }
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_monitor("OK\nhello world\n").unwrap_err();
        assert!(
            matches!(
                e,
                BatchError::Monitor {
                    line: 2,
                    column: 1,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().starts_with("line 2, column 1"), "{e}");
        let e = parse_monitor("1.0 [0 c] \"GET\" \"unterminated\n").unwrap_err();
        assert!(
            matches!(
                e,
                BatchError::Quote {
                    line: 1,
                    column: 29,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("line 1, column 29: the quoted key has no closing"),
            "{e}"
        );
        let (_, s) = parse_monitor("1.0 [0 c] \"MULTI\"\n1.1 [0 c] \"SET\" \"a\" \"1\"\n").unwrap();
        assert_eq!(s.unterminated, 1);
    }
}
