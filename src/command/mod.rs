//! Commands as the servers themselves describe them: arity, flags, ACL categories and key
//! specifications, from `commands.tsv` (Redis 7.0's `COMMAND` reply plus the commands only
//! Valkey 8.1, Redis 8.2 or Valkey 9.1 know; a test checks it against all four real servers). Which arguments of a command
//! are keys is decided here, the way the server decides it before routing a command in a
//! cluster: the key specifications first (begin search by index or keyword, find keys by range
//! or key count), and the server's own special cases where a specification is incomplete
//! (`SORT … STORE`, `MIGRATE … KEYS`). Pure: no I/O.

pub mod script;

use std::collections::HashMap;
use std::sync::OnceLock;

/// Where a key specification starts looking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginSearch {
    /// At this argument (the command name is argument 0).
    Index(usize),
    /// After `keyword`, searched from argument `startfrom` (negative: from the end, backwards).
    Keyword {
        /// The keyword (upper case, compared without case).
        keyword: String,
        /// Where the search starts.
        startfrom: i64,
    },
    /// The server has a special case for it.
    Unknown,
}

/// Which arguments after the start are keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindKeys {
    /// Keys from the start to `lastkey` (relative; negative counts from the end), every
    /// `keystep`; with `limit` > 0 and `lastkey` -1, the first 1/limit of the rest.
    Range {
        /// The last key, relative to the start (negative: from the end).
        lastkey: i64,
        /// Distance between keys.
        keystep: i64,
        /// A divisor of the remaining arguments.
        limit: i64,
    },
    /// A count of keys at `keynumidx`, the keys from `firstkey`, every `keystep`.
    Keynum {
        /// Where the count is, relative to the start.
        keynumidx: i64,
        /// Where the first key is, relative to the start.
        firstkey: i64,
        /// Distance between keys.
        keystep: i64,
    },
    /// The server has a special case for it.
    Unknown,
}

/// One key specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    /// Its flags as the server names them (`RO`, `RW`, `OW`, `RM`, `access`, `insert`,
    /// `update`, `delete`, `not_key`, `incomplete`, `variable_flags`).
    pub flags: Vec<String>,
    /// Where it starts.
    pub begin: BeginSearch,
    /// Which arguments are keys.
    pub find: FindKeys,
}

impl KeySpec {
    fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Whether the keys it finds are written (`RW`, `OW`, `RM`).
    pub fn writes(&self) -> bool {
        self.has("RW") || self.has("OW") || self.has("RM")
    }
}

/// A command (or subcommand, named `container|sub`) of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// Lower-case name (`get`, `object|encoding`).
    pub name: String,
    /// The server's arity: exactly N arguments (name included), or at least -N when negative.
    pub arity: i64,
    /// Command flags (`write`, `readonly`, `admin`, `noscript`, `blocking`, `movablekeys`, …,
    /// and `container` for a command with subcommands).
    pub flags: Vec<String>,
    /// ACL categories (`@read`, `@write`, `@dangerous`, `@scripting`, …).
    pub acl: Vec<String>,
    /// Key specifications.
    pub specs: Vec<KeySpec>,
    upper: String,
}

impl CommandInfo {
    /// Whether the command has this flag.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Whether the command is in this ACL category (`@dangerous`).
    pub fn in_category(&self, category: &str) -> bool {
        self.acl.iter().any(|c| c == category)
    }

    /// The upper-case name (`GET`, `OBJECT|ENCODING`).
    pub fn upper(&self) -> &str {
        &self.upper
    }

    /// Whether the command has subcommands (`OBJECT`, `XINFO`, …).
    pub fn is_container(&self) -> bool {
        self.has_flag("container")
    }

    /// Whether a script runs it (its keys are declared, the keys it touches may not be).
    pub fn is_script(&self) -> bool {
        self.in_category("@scripting")
            && matches!(
                self.name.as_str(),
                "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
            )
    }
}

/// One key argument of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    /// Its position (the command name is 0).
    pub pos: usize,
    /// Whether the command writes it.
    pub write: bool,
    /// A channel rather than a key (sharded pub/sub): not a key, but the cluster routes the
    /// command by its slot all the same.
    pub channel: bool,
}

/// Why a command's keys cannot be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeysError {
    /// The server does not know the command.
    #[error("unknown command '{0}'")]
    Unknown(String),
    /// The server does not know the subcommand.
    #[error("unknown subcommand '{sub}' of {command}")]
    UnknownSubcommand {
        /// The container command.
        command: String,
        /// The subcommand given.
        sub: String,
    },
    /// Wrong number of arguments: the server refuses it before looking at keys.
    #[error("wrong number of arguments for '{command}' (the server wants {want})")]
    Arity {
        /// The command.
        command: String,
        /// What the server wants, in words.
        want: String,
    },
    /// The command's key count or keyword is not where its syntax says: the server refuses it.
    #[error("{command}: {why}")]
    Syntax {
        /// The command.
        command: String,
        /// What is wrong.
        why: String,
    },
}

/// The commands of some batches that the table does not know (a module's, or a server's newer
/// than the table), with how many times each was seen, for the note that names them.
#[derive(Debug, Clone, Default)]
pub struct UnknownCommands {
    seen: std::collections::BTreeMap<String, u64>,
}

/// How many unknown commands a note names (the rest are counted).
const UNKNOWN_NAMED: usize = 8;

impl UnknownCommands {
    /// Counts one use of `command` (its name as written).
    pub fn add(&mut self, command: &str) {
        match self.seen.get_mut(command) {
            Some(n) => *n += 1,
            None => {
                self.seen.insert(command.to_string(), 1);
            }
        }
    }

    /// The note naming them, or `None` when every command was known.
    pub fn note(&self) -> Option<String> {
        if self.seen.is_empty() {
            return None;
        }
        let mut names: Vec<String> = self
            .seen
            .iter()
            .take(UNKNOWN_NAMED)
            .map(|(c, n)| match n {
                1 => format!("`{c}`"),
                n => format!("`{c}` ({n} times)"),
            })
            .collect();
        if self.seen.len() > UNKNOWN_NAMED {
            names.push(format!("{} more", self.seen.len() - UNKNOWN_NAMED));
        }
        Some(format!(
            "not commands of Redis 7.0 to 8.2 or Valkey 8.1 to 9.1: {}; each is read as addressing its first argument only (as module commands do), so a batch that passes it several keys may be judged one slot when it is not",
            names.join(", ")
        ))
    }
}

/// The table of every command.
pub struct Table {
    by_name: HashMap<String, CommandInfo>,
}

/// The command table (parsed once).
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        Table::parse(include_str!("commands.tsv"))
            .expect("invariant: commands.tsv is well formed (a test parses it)")
    })
}

fn parse_begin(s: &str) -> Option<BeginSearch> {
    if s == "unknown" {
        return Some(BeginSearch::Unknown);
    }
    if let Some(i) = s.strip_prefix("index=") {
        return i.parse().ok().map(BeginSearch::Index);
    }
    let (kw, from) = s.strip_prefix("keyword=")?.rsplit_once('@')?;
    Some(BeginSearch::Keyword {
        keyword: kw.to_string(),
        startfrom: from.parse().ok()?,
    })
}

fn three(s: &str) -> Option<(i64, i64, i64)> {
    let mut it = s.split(',').map(str::parse::<i64>);
    let t = (it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?);
    it.next().is_none().then_some(t)
}

fn parse_find(s: &str) -> Option<FindKeys> {
    if s == "unknown" {
        return Some(FindKeys::Unknown);
    }
    if let Some(r) = s.strip_prefix("range=") {
        let (lastkey, keystep, limit) = three(r)?;
        return Some(FindKeys::Range {
            lastkey,
            keystep,
            limit,
        });
    }
    let (keynumidx, firstkey, keystep) = three(s.strip_prefix("keynum=")?)?;
    Some(FindKeys::Keynum {
        keynumidx,
        firstkey,
        keystep,
    })
}

fn words(s: &str) -> Vec<String> {
    if s == "-" || s.is_empty() {
        Vec::new()
    } else {
        s.split(',').map(str::to_string).collect()
    }
}

impl Table {
    /// Parses the table text; `Err` names the bad line.
    pub fn parse(text: &str) -> Result<Table, String> {
        let mut by_name = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || format!("commands.tsv line {}: {line}", i + 1);
            let f: Vec<&str> = line.split('\t').collect();
            let [name, arity, flags, acl, specs] = f[..] else {
                return Err(bad());
            };
            let mut parsed = Vec::new();
            if specs != "-" {
                for s in specs.split(' ') {
                    let mut p = s.splitn(3, '/');
                    let (Some(fl), Some(b), Some(k)) = (p.next(), p.next(), p.next()) else {
                        return Err(bad());
                    };
                    parsed.push(KeySpec {
                        flags: words(fl),
                        begin: parse_begin(b).ok_or_else(bad)?,
                        find: parse_find(k).ok_or_else(bad)?,
                    });
                }
            }
            by_name.insert(
                name.to_string(),
                CommandInfo {
                    upper: name.to_ascii_uppercase(),
                    name: name.to_string(),
                    arity: arity.parse().map_err(|_| bad())?,
                    flags: words(flags),
                    acl: words(acl),
                    specs: parsed,
                },
            );
        }
        Ok(Table { by_name })
    }

    /// Every command and subcommand.
    pub fn commands(&self) -> impl Iterator<Item = &CommandInfo> {
        self.by_name.values()
    }

    /// A command by its lower-case name (`get`, `object|encoding`).
    pub fn get(&self, name: &str) -> Option<&CommandInfo> {
        self.by_name.get(name)
    }

    /// The command `args` runs (name first; a container's subcommand by its second argument).
    pub fn lookup(&self, args: &[Vec<u8>]) -> Result<&CommandInfo, KeysError> {
        let name = args
            .first()
            .map(|n| String::from_utf8_lossy(n).to_ascii_lowercase())
            .unwrap_or_default();
        let cmd = self
            .by_name
            .get(&name)
            .ok_or_else(|| KeysError::Unknown(name.to_ascii_uppercase()))?;
        if !cmd.is_container() {
            return Ok(cmd);
        }
        let Some(sub) = args.get(1) else {
            return Err(arity_error(cmd));
        };
        let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
        self.by_name
            .get(&format!("{name}|{sub}"))
            .ok_or_else(|| KeysError::UnknownSubcommand {
                command: name.to_ascii_uppercase(),
                sub,
            })
    }

    /// The keys of `args` ([`Table::lookup`] then [`key_refs`]).
    pub fn keys(&self, args: &[Vec<u8>]) -> Result<Vec<KeyRef>, KeysError> {
        key_refs(self.lookup(args)?, args)
    }
}

fn display_name(cmd: &CommandInfo) -> String {
    cmd.name.replace('|', " ").to_ascii_uppercase()
}

fn arity_error(cmd: &CommandInfo) -> KeysError {
    let want = if cmd.arity >= 0 {
        format!("exactly {} argument(s), the name included", cmd.arity)
    } else {
        format!("at least {} argument(s), the name included", -cmd.arity)
    };
    KeysError::Arity {
        command: display_name(cmd),
        want,
    }
}

/// The key arguments of `args`, run as `cmd`, exactly as the server finds them before routing
/// the command: the arity check, then every key specification in order (a specification whose
/// keyword is absent finds nothing), then, where a specification is incomplete or unknown, the
/// server's own special case.
pub fn key_refs(cmd: &CommandInfo, args: &[Vec<u8>]) -> Result<Vec<KeyRef>, KeysError> {
    let argc = args.len() as i64;
    if (cmd.arity >= 0 && argc != cmd.arity) || (cmd.arity < 0 && argc < -cmd.arity) {
        return Err(arity_error(cmd));
    }
    match by_specs(cmd, args) {
        Ok(keys) => Ok(keys),
        Err(why) => match cmd.name.as_str() {
            "sort" => Ok(sort_keys(args)),
            "sort_ro" => Ok(vec![read_key(1)]),
            "migrate" => Ok(migrate_keys(args)),
            _ => Err(KeysError::Syntax {
                command: display_name(cmd),
                why,
            }),
        },
    }
}

/// A command line of `cmd` addressing exactly `keys` (two or more), with filler arguments
/// (`0`) where its syntax wants others: the arguments and where each key sits, or `None` when
/// the command does not take that many keys in a way keyplan can lay out. Tried forms: the
/// keys in a row at the first key position (SUNION, RENAME, BLPOP … 0), a count then the keys
/// (LMPOP 2 a b, ZUNIONSTORE d 2 a b), and a keyword then the keys (XREAD STREAMS a b 0 0);
/// each checked by finding its keys the server's way.
pub fn args_for(cmd: &CommandInfo, keys: &[Vec<u8>]) -> Option<(Vec<Vec<u8>>, Vec<usize>)> {
    if cmd.is_container() || keys.len() < 2 {
        return None;
    }
    let name = cmd.upper.as_bytes().to_vec();
    let zero = || b"0".to_vec();
    let n = keys.len();
    let mut tries: Vec<Vec<Vec<u8>>> = Vec::new();
    for spec in cmd.specs.iter().take(1) {
        let at = match &spec.begin {
            BeginSearch::Index(i) => *i,
            BeginSearch::Keyword { keyword, .. } => {
                // keyword, keys, then as many fillers (XREAD's ids).
                let mut a = vec![name.clone(), keyword.as_bytes().to_vec()];
                a.extend(keys.iter().cloned());
                a.extend((0..n).map(|_| zero()));
                tries.push(a);
                continue;
            }
            BeginSearch::Unknown => continue,
        };
        let lead: Vec<Vec<u8>> = (1..at).map(|_| zero()).collect();
        for trailing in 0..4 {
            let mut a = vec![name.clone()];
            a.extend(lead.iter().cloned());
            a.extend(keys.iter().cloned());
            a.extend((0..trailing).map(|_| zero()));
            tries.push(a);
            // The first key alone, a count, then the rest (ZUNIONSTORE d 2 a b).
            let mut a = vec![name.clone()];
            a.extend(lead.iter().cloned());
            a.push(keys[0].clone());
            a.push((n - 1).to_string().into_bytes());
            a.extend(keys[1..].iter().cloned());
            a.extend((0..trailing).map(|_| zero()));
            tries.push(a);
            // A count, then the keys (LMPOP 2 a b LEFT).
            let mut a = vec![name.clone()];
            a.extend(lead.iter().cloned());
            a.push(n.to_string().into_bytes());
            a.extend(keys.iter().cloned());
            a.extend((0..trailing).map(|_| zero()));
            tries.push(a);
        }
    }
    tries.into_iter().find_map(|args| {
        let refs = key_refs(cmd, &args).ok()?;
        let at: Vec<usize> = refs.iter().map(|r| r.pos).collect();
        let found: Vec<&Vec<u8>> = at.iter().map(|&i| &args[i]).collect();
        (found.len() == n && found.iter().zip(keys).all(|(a, b)| *a == b)).then_some((args, at))
    })
}

fn read_key(pos: usize) -> KeyRef {
    KeyRef {
        pos,
        write: false,
        channel: false,
    }
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// The specifications' keys, or why a specification cannot be followed.
fn by_specs(cmd: &CommandInfo, args: &[Vec<u8>]) -> Result<Vec<KeyRef>, String> {
    let argc = args.len() as i64;
    let mut out = Vec::new();
    for spec in &cmd.specs {
        let first = match &spec.begin {
            BeginSearch::Index(i) => *i as i64,
            BeginSearch::Keyword { keyword, startfrom } => {
                let (start, end) = if *startfrom > 0 {
                    (*startfrom, argc - 1)
                } else {
                    (argc + startfrom, 1)
                };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if eq(&args[i as usize], keyword) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    // The keyword is not there: this specification finds no key.
                    continue;
                }
                found
            }
            BeginSearch::Unknown => return Err("its keys are found by a special case".into()),
        };
        let (first, last, step) = match &spec.find {
            FindKeys::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let last = if *lastkey >= 0 {
                    first + lastkey
                } else if *limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, *keystep)
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let at = first + keynumidx;
                if *keynumidx >= argc || at >= argc {
                    return Err("the number of keys is missing".into());
                }
                let n: i64 = std::str::from_utf8(&args[at as usize])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| {
                        format!(
                            "'{}' is not a number of keys",
                            String::from_utf8_lossy(&args[at as usize])
                        )
                    })?;
                if n == 0 {
                    // `EVAL script 0`, `FCALL f 0`: declared keys, none of them.
                    continue;
                }
                // The count is of keys, each `keystep` apart (Valkey 9.1's MSETEX: a count, then
                // key value pairs); every count before it had a step of 1.
                let first = first + firstkey;
                (first, first + (n - 1) * (*keystep).max(1), *keystep)
            }
            FindKeys::Unknown => return Err("its keys are found by a special case".into()),
        };
        if last >= argc || last < first || first >= argc {
            if matches!(spec.find, FindKeys::Keynum { .. }) && last >= argc {
                return Err("the number of keys is greater than the number of arguments".into());
            }
            return Err("its keys are not where its syntax puts them".into());
        }
        let mut i = first;
        while i <= last {
            out.push(KeyRef {
                pos: i as usize,
                write: spec.writes(),
                channel: spec.has("not_key"),
            });
            i += step.max(1);
        }
        if spec.has("incomplete") {
            return Err("its key specification is incomplete".into());
        }
    }
    Ok(out)
}

/// SORT: the sorted key, and the last `STORE` destination (LIMIT takes two arguments, GET and
/// BY one).
fn sort_keys(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let mut out = vec![read_key(1)];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if eq(a, "limit") {
            i += 2;
        } else if eq(a, "get") || eq(a, "by") {
            i += 1;
        } else if eq(a, "store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    if let Some(pos) = store {
        out.push(KeyRef {
            pos,
            write: true,
            channel: false,
        });
    }
    out
}

/// MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 user pw] [KEYS k…].
fn migrate_keys(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let (mut first, mut num) = (3usize, 1usize);
    let mut i = 6;
    while i < args.len() {
        let a = &args[i];
        if eq(a, "keys") {
            if args[3].is_empty() {
                first = i + 1;
                num = args.len() - first;
            } else {
                num = 0;
            }
            break;
        }
        if eq(a, "auth") {
            i += 1;
        } else if eq(a, "auth2") {
            i += 2;
        }
        i += 1;
    }
    (first..first + num)
        .map(|pos| KeyRef {
            pos,
            write: true,
            channel: false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn unknown_commands_are_named_once_each() {
        let mut u = UnknownCommands::default();
        assert_eq!(u.note(), None);
        u.add("VFOO");
        u.add("ABAR");
        u.add("VFOO");
        let note = u.note().unwrap();
        assert!(note.contains("`ABAR`, `VFOO` (2 times)"), "{note}");
        for i in 0..10 {
            u.add(&format!("X{i}"));
        }
        assert!(u.note().unwrap().contains("4 more"));
    }

    use super::*;

    fn keys(line: &str) -> Result<Vec<String>, KeysError> {
        let args: Vec<Vec<u8>> = line.split(' ').map(|s| s.as_bytes().to_vec()).collect();
        table().keys(&args).map(|k| {
            k.iter()
                .map(|r| line.split(' ').nth(r.pos).unwrap().to_string())
                .collect()
        })
    }

    #[test]
    fn key_positions_of_every_form() {
        assert_eq!(keys("GET a").unwrap(), ["a"]);
        assert_eq!(keys("MSET a 1 b 2").unwrap(), ["a", "b"]);
        // Commands newer than Redis 7.0: Valkey 9.1's MSETEX (a count, then key value pairs),
        // Redis 8's hash-field expiry and vector sets (one key).
        assert_eq!(keys("MSETEX 2 a 1 b 2 EX 5").unwrap(), ["a", "b"]);
        assert_eq!(keys("HGETDEL h FIELDS 2 f g").unwrap(), ["h"]);
        assert_eq!(keys("HSETEX h EX 5 FIELDS 1 f v").unwrap(), ["h"]);
        assert_eq!(keys("VADD v VALUES 2 1 2 e").unwrap(), ["v"]);
        assert_eq!(keys("BLPOP q1 q2 q3 0").unwrap(), ["q1", "q2", "q3"]);
        assert_eq!(keys("RENAME a b").unwrap(), ["a", "b"]);
        assert_eq!(keys("LMPOP 2 l1 l2 LEFT").unwrap(), ["l1", "l2"]);
        assert_eq!(keys("ZUNIONSTORE d 2 a b").unwrap(), ["d", "a", "b"]);
        assert_eq!(
            keys("XREAD COUNT 2 STREAMS s1 s2 0 0").unwrap(),
            ["s1", "s2"]
        );
        assert_eq!(keys("EVAL s 2 k1 k2 a").unwrap(), ["k1", "k2"]);
        assert_eq!(keys("GEORADIUS g 0 0 1 km STORE d").unwrap(), ["g", "d"]);
        assert_eq!(keys("SORT l BY w_* LIMIT 0 1 STORE d").unwrap(), ["l", "d"]);
        assert_eq!(keys("SORT l GET store").unwrap(), ["l"]);
        assert_eq!(keys("OBJECT ENCODING k").unwrap(), ["k"]);
        assert_eq!(keys("MIGRATE h 1  0 5 KEYS a b").unwrap(), ["a", "b"]);
        assert_eq!(keys("PING").unwrap(), Vec::<String>::new());
        assert!(matches!(keys("GET"), Err(KeysError::Arity { .. })));
        assert!(matches!(keys("NOSUCH a"), Err(KeysError::Unknown(_))));
        assert!(matches!(
            keys("OBJECT NOSUCH k"),
            Err(KeysError::UnknownSubcommand { .. })
        ));
        assert!(matches!(keys("EVAL s x k"), Err(KeysError::Syntax { .. })));
        assert!(matches!(keys("EVAL s 3 k"), Err(KeysError::Syntax { .. })));
    }

    #[test]
    fn the_table_parses() {
        assert!(table().commands().count() > 300);
        let get = table().get("get").unwrap();
        assert!(get.has_flag("readonly") && !get.is_container());
        assert!(table().get("flushall").unwrap().in_category("@dangerous"));
    }

    #[test]
    fn several_keys_laid_out_the_servers_way() {
        let keys = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        for name in [
            "mget",
            "sunionstore",
            "blpop",
            "brpop",
            "bzpopmin",
            "zunionstore",
            "zdiff",
            "sintercard",
            "lmpop",
            "zmpop",
            "xread",
            "pfmerge",
            "del",
            "watch",
        ] {
            let cmd = table().get(name).unwrap();
            let (args, at) = args_for(cmd, &keys).unwrap_or_else(|| panic!("{name}"));
            let found: Vec<&Vec<u8>> = at.iter().map(|&i| &args[i]).collect();
            assert_eq!(found, keys.iter().collect::<Vec<_>>(), "{name}");
        }
        // Two keys exactly.
        let two = vec![b"a".to_vec(), b"b".to_vec()];
        for name in ["rename", "copy", "smove", "lmove", "rpoplpush", "blmove"] {
            assert!(
                args_for(table().get(name).unwrap(), &two).is_some(),
                "{name}"
            );
            assert!(
                args_for(table().get(name).unwrap(), &keys).is_none(),
                "{name}"
            );
        }
        // One key only.
        assert!(args_for(table().get("get").unwrap(), &two).is_none());
    }
}
