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

/// Reads a MONITOR capture a line at a time and hands out each batch as soon as it is whole
/// (a multi-key command at its line, a MULTI block at its EXEC, a script when the next client
/// command shows that the commands it ran are over), in the order the captured whole would list
/// them. Memory holds the open MULTI blocks and one script, never the capture.
#[derive(Debug, Default)]
pub struct MonitorParser {
    stats: MonitorStats,
    /// Per client: the line of its open MULTI and the commands queued since.
    open: HashMap<String, (usize, Vec<Op>)>,
    /// The script whose `[0 lua]` commands may follow.
    script: Option<Batch>,
    /// Batches complete and not yet taken.
    ready: std::collections::VecDeque<Batch>,
    /// The scripts SCRIPT LOAD loaded, by their sha (what an EVALSHA runs).
    loaded: HashMap<String, Vec<u8>>,
}

impl MonitorParser {
    /// A parser at the start of a capture.
    pub fn new() -> MonitorParser {
        MonitorParser::default()
    }

    /// The next complete batch, if any.
    pub fn next_batch(&mut self) -> Option<Batch> {
        self.ready.pop_front()
    }

    /// Reads line `line` (from 1) of the capture, without its line end. Errors name the line
    /// and column.
    pub fn line(&mut self, line: usize, raw: &str) -> Result<(), BatchError> {
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() || l == "OK" {
            return Ok(());
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
            if let Some(b) = self.script.as_mut() {
                let op = op_of(args, line, Strictness::Capture)?;
                if !op.keys.is_empty() {
                    b.script_ran.push(op.keys);
                }
            }
            return Ok(());
        }
        self.end_script();
        self.stats.commands += 1;
        if args.len() == 3
            && args[0].eq_ignore_ascii_case(b"SCRIPT")
            && args[1].eq_ignore_ascii_case(b"LOAD")
        {
            self.loaded
                .insert(crate::command::script::sha1_hex(&args[2]), args[2].clone());
        }
        let op = op_of(args, line, Strictness::Capture)?;
        match op.command.as_str() {
            "MULTI" => {
                self.open.insert(client.to_string(), (line, Vec::new()));
            }
            "EXEC" => {
                if let Some((at, ops)) = self.open.remove(client)
                    && ops.iter().any(|o| !o.keys.is_empty())
                {
                    let name = name_of(at, client, &ops, BatchKind::Multi);
                    self.ready
                        .push_back(Batch::at_line(name, at, BatchKind::Multi, ops));
                }
            }
            "DISCARD" => {
                self.open.remove(client);
            }
            _ => {
                if let Some((_, ops)) = self.open.get_mut(client) {
                    ops.push(op);
                    return Ok(());
                }
                let kind = match op.command.as_str() {
                    "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL" | "FCALL_RO" => {
                        BatchKind::Script
                    }
                    _ if op.keys.len() >= 2 => BatchKind::MultiKey,
                    _ => {
                        self.stats.single += 1;
                        return Ok(());
                    }
                };
                let allow = kind == BatchKind::Script && allows_cross_slot(&op);
                let ops = vec![op];
                let name = name_of(line, client, &ops, kind);
                let mut b = Batch::at_line(name, line, kind, ops);
                b.allow_cross_slot = allow;
                if kind == BatchKind::Script {
                    // Kept even without declared keys: the keys it runs on may follow.
                    self.script = Some(b);
                } else {
                    self.ready.push_back(b);
                }
            }
        }
        Ok(())
    }

    /// The script's commands are over: it is a batch if it declared or ran keys, or declares
    /// none and its body touches keys (or is not seen: an EVALSHA of a script never loaded in
    /// the capture may touch keys).
    fn end_script(&mut self) {
        if let Some(mut b) = self.script.take() {
            let body = b.ops[0].args.get(1).and_then(|sha| {
                self.loaded
                    .get(&String::from_utf8_lossy(sha).to_ascii_lowercase())
            });
            b.no_keys = b.script_without_keys(body.map(Vec::as_slice));
            if b.keys().next().is_none() && b.script_ran.is_empty() && b.no_keys.is_none() {
                self.stats.single += 1;
            } else {
                self.ready.push_back(b);
            }
        }
    }

    /// The capture is over: the last script ends, MULTI blocks still open are dropped. Take the
    /// remaining batches with [`MonitorParser::next_batch`] afterwards.
    pub fn finish(&mut self) -> MonitorStats {
        self.end_script();
        self.stats.unterminated = self.open.len() as u64;
        self.open.clear();
        self.stats.clone()
    }
}

/// Parses a whole MONITOR capture. Errors name the line and column.
pub fn parse_monitor(text: &str) -> Result<(Vec<Batch>, MonitorStats), BatchError> {
    let mut p = MonitorParser::new();
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        p.line(i + 1, raw)?;
        out.extend(std::iter::from_fn(|| p.next_batch()));
    }
    let stats = p.finish();
    out.extend(std::iter::from_fn(|| p.next_batch()));
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
