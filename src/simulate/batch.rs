//! Batches to simulate: from a batch file (`MGET a b c`, `PIPELINE GET a; ZADD b 1 x`,
//! `MULTI SET a 1; INCR b`, `EVAL script 2 k1 k2 …`) or generated from a scheme's batches.

use crate::scheme::{Scheme, VarKind};

/// How a batch is sent as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchKind {
    /// One multi-key command (MGET, MSET, DEL, …).
    MultiKey,
    /// A pipeline of commands.
    Pipeline,
    /// MULTI … EXEC.
    Multi,
    /// A script (EVAL, EVALSHA, FCALL) with its keys.
    Script,
}

/// One command of a batch, with its keys (and, for MSET-like commands, the value of each key).
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// Upper-case command name.
    pub command: String,
    /// Its keys.
    pub keys: Vec<Vec<u8>>,
    /// Values paired with the keys (MSET, MSETNX), else empty.
    pub values: Vec<Vec<u8>>,
    /// The whole command as written (name first).
    pub args: Vec<Vec<u8>>,
    /// Where each of `keys` sits in `args`.
    pub key_at: Vec<usize>,
    /// Whether the server's command table knows the command (a module's command is not
    /// known: its keys are a guess).
    pub known: bool,
}

impl Op {
    /// A command from its arguments (name first) and the positions of its keys.
    pub fn new(args: Vec<Vec<u8>>, key_at: Vec<usize>, values_at: &[usize]) -> Op {
        let command = args
            .first()
            .map(|n| String::from_utf8_lossy(n).to_ascii_uppercase())
            .unwrap_or_default();
        Op {
            command,
            keys: key_at.iter().map(|&i| args[i].clone()).collect(),
            values: values_at.iter().map(|&i| args[i].clone()).collect(),
            args,
            key_at,
            known: true,
        }
    }

    /// The same command with its keys replaced by `f(key)`.
    pub fn map_keys(&self, mut f: impl FnMut(&[u8]) -> Vec<u8>) -> Op {
        let mut args = self.args.clone();
        for &i in &self.key_at {
            args[i] = f(&self.args[i]);
        }
        Op {
            command: self.command.clone(),
            keys: self.key_at.iter().map(|&i| args[i].clone()).collect(),
            values: self.values.clone(),
            args,
            key_at: self.key_at.clone(),
            known: self.known,
        }
    }

    /// The single-key command this one becomes when split key by key.
    pub fn single_key_command(&self) -> &str {
        match self.command.as_str() {
            "MGET" => "GET",
            "MSET" | "MSETNX" => "SET",
            other => other,
        }
    }
}

/// What identifies a batch, whatever its display name: where it was written and what it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchId {
    /// Its line in the batch file or MONITOR capture (from 1), or `None` for a scheme batch.
    pub line: Option<usize>,
    /// The scheme's name for it, or `None` for a line of a file.
    pub name: Option<String>,
    /// What it runs: the command of a one-command batch or script (`MGET`, `EVALSHA`, …),
    /// `PIPELINE` or `MULTI`.
    pub command: String,
}

impl BatchId {
    pub(crate) fn of(
        line: Option<usize>,
        name: Option<String>,
        kind: BatchKind,
        ops: &[Op],
    ) -> BatchId {
        let command = match kind {
            BatchKind::Pipeline => "PIPELINE".to_string(),
            BatchKind::Multi => "MULTI".to_string(),
            _ => ops.first().map(|o| o.command.clone()).unwrap_or_default(),
        };
        BatchId {
            line,
            name,
            command,
        }
    }
}

/// A batch: commands that belong together.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// A name for display (the file's line and text, or the scheme's batch name).
    pub name: String,
    /// Its stable identity.
    pub id: BatchId,
    /// How it is sent as written.
    pub kind: BatchKind,
    /// Its commands.
    pub ops: Vec<Op>,
    /// What a script really ran, as a MONITOR capture shows it (`[0 lua]` lines): each
    /// command's keys, in order. Empty for anything but a captured script.
    pub script_ran: Vec<Vec<Vec<u8>>>,
    /// The script declares `allow-cross-slot-keys` (`#!lua flags=…`): it may touch keys of
    /// several slots of its node.
    pub allow_cross_slot: bool,
    /// A script that declares no keys and touches (or may touch) keys: what shows it, and the
    /// keys its body names. `None` for anything else.
    pub no_keys: Option<crate::command::script::NoDeclaredKeys>,
}

impl Batch {
    /// A batch written at `line` of a file (a batch file or a MONITOR capture).
    pub fn at_line(name: String, line: usize, kind: BatchKind, ops: Vec<Op>) -> Batch {
        Batch {
            name,
            id: BatchId::of(Some(line), None, kind, &ops),
            kind,
            ops,
            script_ran: Vec::new(),
            allow_cross_slot: false,
            no_keys: None,
        }
    }

    /// The same batch with every key replaced by `f(key)`.
    pub fn map_keys(&self, mut f: impl FnMut(&[u8]) -> Vec<u8>) -> Batch {
        Batch {
            name: self.name.clone(),
            id: self.id.clone(),
            kind: self.kind,
            ops: self.ops.iter().map(|op| op.map_keys(&mut f)).collect(),
            script_ran: self
                .script_ran
                .iter()
                .map(|keys| keys.iter().map(|k| f(k)).collect())
                .collect(),
            allow_cross_slot: self.allow_cross_slot,
            no_keys: self.no_keys.as_ref().map(|u| {
                let mut u = u.clone();
                u.keys = u.keys.iter().map(|k| f(k)).collect();
                u
            }),
        }
    }

    /// For a script: whether it declares no keys and touches (or may touch) keys, from its
    /// body (EVAL's first argument, or `body` for an EVALSHA whose SCRIPT LOAD was seen) and the
    /// keys a capture shows it ran.
    pub fn script_without_keys(
        &self,
        body: Option<&[u8]>,
    ) -> Option<crate::command::script::NoDeclaredKeys> {
        let op = self
            .ops
            .first()
            .filter(|_| self.kind == BatchKind::Script)?;
        let body = match op.command.as_str() {
            "EVAL" | "EVAL_RO" => op.args.get(1).map(Vec::as_slice),
            _ => body,
        };
        let ran = self.script_ran.iter().flatten().next().map(Vec::as_slice);
        crate::command::script::no_declared_keys(&op.command, &op.args, body, ran)
    }

    /// All keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.ops
            .iter()
            .flat_map(|o| o.keys.iter().map(|k| k.as_slice()))
    }
}

/// Why a batch file line or a MONITOR capture line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// A bad `"…"` argument.
    #[error("line {line}, column {column}: {message}")]
    Quote {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A line of a capture that is not a MONITOR line.
    #[error(
        "line {line}, column {column}: {message} (expected `<time> [<db> <client>] \"CMD\" \"arg\" …`, as redis-cli MONITOR prints)"
    )]
    Monitor {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is missing.
        message: &'static str,
    },
    /// A command with no name.
    #[error("line {line}: an empty command")]
    Empty {
        /// 1-based line.
        line: usize,
    },
    /// A command the server would refuse before looking at its keys (wrong number of
    /// arguments, a key count that is not a number or exceeds the arguments, an unknown
    /// subcommand).
    #[error("line {line}: {message}")]
    Command {
        /// 1-based line.
        line: usize,
        /// The server's reason, in words.
        message: String,
    },
    /// `PIPELINE` or `MULTI` with nothing after it.
    #[error("line {line}: {head} without commands (separate them with ';')")]
    NoCommands {
        /// 1-based line.
        line: usize,
        /// `PIPELINE` or `MULTI`.
        head: String,
    },
}

/// Splits a command line into arguments: whitespace-separated, with redis-cli's `"…"` quoting.
/// `s` starts at 1-based column `col` of line `line` (for error positions).
pub(crate) fn split_args(s: &str, line: usize, col: usize) -> Result<Vec<Vec<u8>>, BatchError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if b[i] == b'"' {
            let mut v = Vec::new();
            let n = crate::keys::unquote(&b[i..], &mut v).map_err(|e| {
                // The dump reader's hint about raw dumps does not apply to commands.
                let what = e.message.split(" (is this a raw dump").next().unwrap_or("");
                BatchError::Quote {
                    line,
                    column: col - 1 + i + e.column,
                    message: what.to_string(),
                }
            })?;
            out.push(v);
            i += n;
        } else {
            let start = i;
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            out.push(b[start..i].to_vec());
        }
    }
    Ok(out)
}

/// How strictly [`op_of`] treats a command the server would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// A batch file: a command with the wrong number of arguments or a bad key count is an
    /// error at its line.
    File,
    /// A capture of what clients really sent: such a command is kept, with the keys the
    /// server would find (none when it finds none).
    Capture,
}

/// The keys (and values) of a command, where the server finds them (its key specifications:
/// BLPOP's lists, RENAME's destination, ZUNIONSTORE's numkeys, XREAD's STREAMS, SORT's
/// STORE, …). A command the server does not know (a module's) is taken to address its first
/// argument, as module commands do, and marked unknown.
pub(crate) fn op_of(args: Vec<Vec<u8>>, line: usize, strict: Strictness) -> Result<Op, BatchError> {
    use crate::command::{KeysError, table};
    if args.is_empty() {
        return Err(BatchError::Empty { line });
    }
    let n = args.len();
    let (key_at, known): (Vec<usize>, bool) = match table().keys(&args) {
        Ok(refs) => (refs.iter().map(|r| r.pos).collect(), true),
        Err(KeysError::Unknown(_)) => ((1..n.min(2)).collect(), false),
        Err(_) if strict == Strictness::Capture => (Vec::new(), true),
        Err(e) => {
            return Err(BatchError::Command {
                line,
                message: e.to_string(),
            });
        }
    };
    let mut op = Op::new(args, key_at, &[]);
    op.known = known;
    if matches!(op.command.as_str(), "MSET" | "MSETNX") {
        if (n - 1) % 2 == 1 && strict == Strictness::File {
            // The server checks the pairs itself.
            return Err(BatchError::Command {
                line,
                message: format!(
                    "wrong number of arguments for '{}' (key value pairs)",
                    op.command
                ),
            });
        }
        op.values = op
            .key_at
            .iter()
            .filter_map(|&i| op.args.get(i + 1).cloned())
            .collect();
    }
    Ok(op)
}

/// Parses a batch file: one batch a line; blank lines and `#` comments are skipped.
pub fn parse_batches(text: &str) -> Result<Vec<Batch>, BatchError> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| parse_batch_line(l, i + 1).transpose())
        .collect()
}

/// One line of a batch file (1-based `line`): its batch, `None` for a blank line or a `#`
/// comment. A file is read a line at a time through this, in memory of one batch.
pub fn parse_batch_line(raw: &str, line: usize) -> Result<Option<Batch>, BatchError> {
    let l = raw.trim();
    if l.is_empty() || l.starts_with('#') {
        return Ok(None);
    }
    let (head, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
    let upper = head.to_ascii_uppercase();
    let (kind, parts): (BatchKind, Vec<&str>) = match upper.as_str() {
        "PIPELINE" => (BatchKind::Pipeline, rest.split(';').collect()),
        "MULTI" => (BatchKind::Multi, rest.split(';').collect()),
        _ => (BatchKind::MultiKey, vec![l]),
    };
    let mut ops = Vec::new();
    for p in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        ops.push(op_of(split_args(p, line, 1)?, line, Strictness::File)?);
    }
    if ops.is_empty() {
        return Err(BatchError::NoCommands { line, head: upper });
    }
    let kind = if kind == BatchKind::MultiKey
        && matches!(
            ops[0].command.as_str(),
            "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL" | "FCALL_RO"
        ) {
        BatchKind::Script
    } else {
        kind
    };
    let name = if l.len() > 60 {
        format!("line {line}: {}…", &l[..l.floor_char_boundary(57)])
    } else {
        format!("line {line}: {l}")
    };
    let mut b = Batch::at_line(name, line, kind, ops);
    if kind == BatchKind::Script {
        b.no_keys = b.script_without_keys(None);
    }
    Ok(Some(b))
}

/// A value of a variable for generated keys: the `n`-th distinct value of its kind.
pub(crate) fn value_of(kind: VarKind, values: &[String], n: u64) -> String {
    let mut out = String::new();
    write_value(&mut out, kind, values, n);
    out
}

/// [`value_of`] written at the end of `out` (no allocation of its own).
pub(crate) fn write_value(out: &mut String, kind: VarKind, values: &[String], n: u64) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = match kind {
        VarKind::Int => write!(out, "{}", 1_000_003u64.wrapping_mul(n + 1) % 100_000_000),
        VarKind::Hex => write!(out, "{:016x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        VarKind::Uuid => {
            let x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            write!(
                out,
                "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
                x >> 32,
                (x >> 16) & 0xffff,
                x & 0xfff,
                (n >> 3) & 0xfff,
                n
            )
        }
        VarKind::Word => {
            out.push('w');
            let mut v = n + 1;
            while v > 0 {
                out.push((b'a' + (v % 26) as u8) as char);
                v /= 26;
            }
            Ok(())
        }
        VarKind::Date => write!(out, "2026-{:02}-{:02}", 1 + (n / 28) % 12, 1 + n % 28),
        VarKind::Enum => {
            if let Some(v) = values.get((n as usize) % values.len().max(1)) {
                out.push_str(v);
            }
            Ok(())
        }
        VarKind::Any => write!(out, "v{n}"),
    };
}

/// One batch per scheme batch, with keys generated from the declared variables: variables the
/// batch keeps `same` share one value, the others differ from key to key; `size` keys.
pub fn from_scheme(s: &Scheme, size_override: Option<u64>) -> Vec<Batch> {
    from_scheme_instance(s, size_override, 0)
}

/// [`from_scheme`]'s batches one at a time, each generated when it is taken (memory of one
/// batch, however many batches of a million keys the scheme declares).
pub fn scheme_batches(s: &Scheme, size_override: Option<u64>) -> impl Iterator<Item = Batch> {
    s.batches
        .iter()
        .map(move |b| scheme_batch_instance(s, b, size_override, 0))
}

/// Like [`from_scheme`], the `instance`-th time the application runs each batch: other
/// values of every variable (instance 0 is [`from_scheme`]'s).
pub fn from_scheme_instance(s: &Scheme, size_override: Option<u64>, instance: u64) -> Vec<Batch> {
    s.batches
        .iter()
        .map(|b| scheme_batch_instance(s, b, size_override, instance))
        .collect()
}

/// The scheme batch `b` the `instance`-th time the application runs it (see
/// [`from_scheme_instance`]): one batch, so that a caller can judge instances one at a time.
pub fn scheme_batch_instance(
    s: &Scheme,
    b: &crate::scheme::DeclaredBatch,
    size_override: Option<u64>,
    instance: u64,
) -> Batch {
    {
        let size = size_override
            .or(b.size)
            .unwrap_or(b.keys.len() as u64)
            .max(1);
        // Each declared key's pattern worked out once, not once per generated key: its pieces,
        // each variable with its kind, values, cardinality and whether the batch keeps it the
        // same.
        enum Piece<'s> {
            Lit(&'s str),
            Var {
                kind: VarKind,
                values: &'s [String],
                cardinality: Option<u64>,
                same: bool,
            },
        }
        let decls: Vec<Option<Vec<Piece<'_>>>> = b
            .keys
            .iter()
            .map(|k| {
                let decl = s.key(k)?;
                Some(
                    decl.template
                        .segs
                        .iter()
                        .map(|seg| match seg {
                            crate::scheme::Seg::Lit(l) => Piece::Lit(l),
                            crate::scheme::Seg::Var(var) => {
                                let v = s.vars.get(var);
                                Piece::Var {
                                    kind: v.map_or(VarKind::Any, |v| v.kind),
                                    values: v.map_or(&[], |v| v.values.as_slice()),
                                    cardinality: v.and_then(|v| v.cardinality),
                                    same: b.same.iter().any(|x| x == var),
                                }
                            }
                        })
                        .collect(),
                )
            })
            .collect();
        let mut keys = Vec::with_capacity(size as usize);
        let mut key = String::new();
        for i in 0..size {
            let Some(pieces) = &decls[(i as usize) % decls.len()] else {
                continue;
            };
            key.clear();
            for p in pieces {
                match *p {
                    Piece::Lit(l) => key.push_str(l),
                    Piece::Var {
                        kind,
                        values,
                        cardinality,
                        same,
                    } => {
                        let n = if same {
                            7 + instance.wrapping_mul(104_729)
                        } else {
                            (i * 7919 + 13).wrapping_add(instance.wrapping_mul(1_000_003))
                        };
                        // A variable takes at most its declared number of values.
                        let n = match cardinality {
                            Some(c) if c > 0 => n % c,
                            _ => n,
                        };
                        write_value(&mut key, kind, values, n);
                    }
                }
            }
            keys.push(key.as_bytes().to_vec());
        }
        let command = b.command.name().to_string();
        let (kind, ops) = match b.command {
            crate::scheme::BatchCommand::Pipeline | crate::scheme::BatchCommand::Multi => (
                if matches!(b.command, crate::scheme::BatchCommand::Multi) {
                    BatchKind::Multi
                } else {
                    BatchKind::Pipeline
                },
                keys.into_iter()
                    .map(|k| Op::new(vec![b"GET".to_vec(), k], vec![1], &[]))
                    .collect(),
            ),
            crate::scheme::BatchCommand::Lua => {
                let mut args = vec![
                    b"EVAL".to_vec(),
                    b"return 1".to_vec(),
                    keys.len().to_string().into_bytes(),
                ];
                let key_at: Vec<usize> = (3..3 + keys.len()).collect();
                args.extend(keys);
                (BatchKind::Script, vec![Op::new(args, key_at, &[])])
            }
            crate::scheme::BatchCommand::Other(name) => {
                let cmd = crate::command::table()
                    .get(&name.to_ascii_lowercase())
                    .expect("invariant: a scheme's command is in the table (checked when read)");
                let kind = if cmd.is_script() {
                    BatchKind::Script
                } else {
                    BatchKind::MultiKey
                };
                match crate::command::args_for(cmd, &keys) {
                    Some((args, key_at)) => (kind, vec![Op::new(args, key_at, &[])]),
                    // One key (size 1): the command with it.
                    None => {
                        let mut args = vec![name.as_bytes().to_vec()];
                        let key_at: Vec<usize> = (1..=keys.len()).collect();
                        args.extend(keys);
                        (kind, vec![Op::new(args, key_at, &[])])
                    }
                }
            }
            _ => {
                let mset = matches!(b.command, crate::scheme::BatchCommand::Mset);
                let mut args = vec![command.into_bytes()];
                let (mut key_at, mut values_at) = (Vec::new(), Vec::new());
                for k in keys {
                    key_at.push(args.len());
                    args.push(k);
                    if mset {
                        values_at.push(args.len());
                        args.push(b"v".to_vec());
                    }
                }
                (BatchKind::MultiKey, vec![Op::new(args, key_at, &values_at)])
            }
        };
        Batch {
            name: b.name.clone(),
            id: BatchId::of(None, Some(b.name.clone()), kind, &ops),
            kind,
            ops,
            script_ran: Vec::new(),
            allow_cross_slot: false,
            no_keys: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_file() {
        let b = parse_batches("# c\nMGET a b \"c d\"\nPIPELINE GET a; ZADD b 1 x; PING\nMULTI SET a 1; INCR b\nEVAL \"return 1\" 2 k1 k2 arg\nMSET a 1 b 2\n").unwrap();
        assert_eq!(b.len(), 5);
        assert_eq!(
            b[0].keys().collect::<Vec<_>>(),
            vec![&b"a"[..], b"b", b"c d"]
        );
        assert_eq!(b[1].kind, BatchKind::Pipeline);
        assert_eq!(b[1].ops.len(), 3);
        assert_eq!(b[1].ops[1].keys, vec![b"b".to_vec()]);
        assert_eq!(b[3].kind, BatchKind::Script);
        assert_eq!(b[3].keys().count(), 2);
        assert_eq!(b[4].ops[0].values, vec![b"1".to_vec(), b"2".to_vec()]);
        assert!(parse_batches("MSET a").is_err());
        assert!(parse_batches("EVAL s 3 a").is_err());
        assert!(parse_batches("PIPELINE ;").is_err());
    }
}
