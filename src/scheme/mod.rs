//! The key scheme, `keyplan.yaml`: the keys an application uses, as patterns with
//! `<var>` placeholders (braces are literal Redis hash-tag braces), typed variables, and the
//! batches it runs. Every problem is reported with the file's line and column.

pub mod cut;
pub mod matcher;
mod memo;
pub mod predicates;
pub mod template;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_saphyr::Spanned;
pub use template::{Seg, TagPart, Template};

/// A position in the scheme file (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, serde::Serialize)]
pub struct Pos {
    /// Line.
    pub line: u32,
    /// Column.
    pub column: u32,
}

fn pos<T>(s: &Spanned<T>) -> Pos {
    Pos {
        line: s.referenced.line() as u32,
        column: s.referenced.column() as u32,
    }
}

/// Why a batch's `command` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// Neither a batch form nor a server command.
    #[error(
        "unknown command `{0}`: use mget, mset, del, exists, unlink, touch, multi, lua, pipeline, or a Redis command that takes several keys"
    )]
    Unknown(String),
    /// A server command whose keys keyplan cannot lay out from a batch's keys.
    #[error(
        "`{0}` does not take several keys keyplan can lay out: describe this batch in a batch file (--batches) instead"
    )]
    NotMultiKey(String),
}

/// Why a scheme cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemeError {
    /// YAML or shape problems (an unknown field, a wrong type), where the YAML reader found them.
    #[error("{}{message}", pos.map(|p| format!("{}:{}: ", p.line, p.column)).unwrap_or_default())]
    Yaml {
        /// Where, when known.
        pos: Option<Pos>,
        /// What, with a snippet of the file.
        message: String,
    },
    /// A semantic problem at a position.
    #[error("{line}:{column}: {message}", line = .pos.line, column = .pos.column)]
    At {
        /// Where.
        pos: Pos,
        /// What and what to do.
        message: String,
    },
}

fn at(pos: Pos, message: impl Into<String>) -> SchemeError {
    SchemeError::At {
        pos,
        message: message.into(),
    }
}

fn yaml_error(e: serde_saphyr::Error) -> SchemeError {
    let pos = e.location().filter(|l| l.line() > 0).map(|l| Pos {
        line: l.line() as u32,
        column: l.column() as u32,
    });
    let mut message = crate::error::yaml_message(&e.to_string());
    // The reader's text starts "error: line L column C: "; the position is given separately.
    if pos.is_some()
        && let Some(rest) = message.strip_prefix("error: line ")
        && let Some(i) = rest.find(": ")
    {
        message = rest[i + 2..].to_string();
    }
    SchemeError::Yaml { pos, message }
}

/// Kinds of template variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VarKind {
    /// Decimal integers.
    Int,
    /// UUIDs.
    Uuid,
    /// Hex strings.
    Hex,
    /// Alphabetic words.
    Word,
    /// Dates (YYYY-MM-DD).
    Date,
    /// One of `values`.
    Enum,
    /// Anything (may even contain braces).
    Any,
}

/// Keys one batch may have (`size:`, `--sizes`): far past any real batch, and small enough to
/// generate.
pub const MAX_BATCH_KEYS: u64 = 1_000_000;

/// Commands a batch can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchCommand {
    /// MGET
    Mget,
    /// MSET
    Mset,
    /// DEL
    Del,
    /// EXISTS
    Exists,
    /// UNLINK
    Unlink,
    /// TOUCH
    Touch,
    /// MULTI … EXEC
    Multi,
    /// EVAL / FCALL with several keys
    Lua,
    /// A pipeline (may span slots)
    Pipeline,
    /// Any other command that takes several keys (BRPOP, RENAME, ZUNIONSTORE, SUNIONSTORE,
    /// XREAD …), by its upper-case name; its keys go where the server's key specifications
    /// put them.
    Other(&'static str),
}

impl BatchCommand {
    /// Whether Redis Cluster requires all keys in one slot (CROSSSLOT otherwise).
    pub fn is_atomic(self) -> bool {
        self != BatchCommand::Pipeline
    }

    /// Upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            BatchCommand::Mget => "MGET",
            BatchCommand::Mset => "MSET",
            BatchCommand::Del => "DEL",
            BatchCommand::Exists => "EXISTS",
            BatchCommand::Unlink => "UNLINK",
            BatchCommand::Touch => "TOUCH",
            BatchCommand::Multi => "MULTI",
            BatchCommand::Lua => "EVAL",
            BatchCommand::Pipeline => "pipeline",
            BatchCommand::Other(name) => name,
        }
    }

    /// The command `text` names (any case): one of the batch forms, or a command of the
    /// server's table that takes several keys.
    pub fn parse(text: &str) -> Result<BatchCommand, CommandError> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "mget" => BatchCommand::Mget,
            "mset" => BatchCommand::Mset,
            "del" => BatchCommand::Del,
            "exists" => BatchCommand::Exists,
            "unlink" => BatchCommand::Unlink,
            "touch" => BatchCommand::Touch,
            "multi" => BatchCommand::Multi,
            "lua" => BatchCommand::Lua,
            "pipeline" => BatchCommand::Pipeline,
            other => {
                let table = crate::command::table();
                let Some(cmd) = table.get(other) else {
                    return Err(CommandError::Unknown(text.to_string()));
                };
                if crate::command::args_for(cmd, &[b"a".to_vec(), b"b".to_vec()]).is_none() {
                    return Err(CommandError::NotMultiKey(text.to_string()));
                }
                BatchCommand::Other(cmd.upper())
            }
        })
    }
}

impl<'de> Deserialize<'de> for BatchCommand {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        BatchCommand::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for BatchCommand {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            BatchCommand::Lua => s.serialize_str("lua"),
            BatchCommand::Pipeline => s.serialize_str("pipeline"),
            other => s.serialize_str(&other.name().to_ascii_lowercase()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScheme {
    version: Spanned<u32>,
    topology: Option<RawTopology>,
    #[serde(default)]
    vars: IndexMap<String, Spanned<RawVar>>,
    #[serde(default)]
    keys: IndexMap<String, Spanned<RawKey>>,
    #[serde(default)]
    batches: IndexMap<String, Spanned<RawBatch>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    masters: Option<u16>,
    file: Option<String>,
    pool: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVar {
    kind: VarKind,
    cardinality: Option<u64>,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    pattern: Spanned<String>,
    bytes: Option<u64>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBatch {
    command: BatchCommand,
    keys: Spanned<Vec<String>>,
    #[serde(default)]
    same: Vec<String>,
    size: Option<u64>,
    #[serde(default)]
    allow: Vec<String>,
    reason: Option<String>,
}

/// A template variable.
#[derive(Debug, Clone)]
pub struct Var {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: VarKind,
    /// How many distinct values it takes (enum: the number of values).
    pub cardinality: Option<u64>,
    /// Enum values.
    pub values: Vec<String>,
    /// Where it is declared.
    pub pos: Pos,
}

/// A declared key.
#[derive(Debug, Clone)]
pub struct KeyDecl {
    /// Its name in the scheme.
    pub name: String,
    /// The pattern.
    pub template: Template,
    /// Where the pattern is written.
    pub pos: Pos,
    /// Where the key's mapping starts (`{ pattern: … }` or its first field).
    pub decl: Pos,
    /// Average bytes per key.
    pub bytes: Option<u64>,
    /// Redis type.
    pub kind: Option<String>,
    /// Rule codes suppressed for this key.
    pub allow: Vec<String>,
    /// Why they are suppressed.
    pub reason: Option<String>,
}

/// A declared batch.
#[derive(Debug, Clone)]
pub struct DeclaredBatch {
    /// Its name in the scheme.
    pub name: String,
    /// The command it runs.
    pub command: BatchCommand,
    /// Key names (into [`Scheme::keys`]).
    pub keys: Vec<String>,
    /// Variables equal for every key of one batch.
    pub same: Vec<String>,
    /// Keys per batch (default: one per listed key).
    pub size: Option<u64>,
    /// Where it is declared.
    pub pos: Pos,
    /// Rule codes suppressed for this batch.
    pub allow: Vec<String>,
    /// Why they are suppressed.
    pub reason: Option<String>,
}

/// The default topology a scheme names.
#[derive(Debug, Clone, Default)]
pub struct SchemeTopology {
    /// `masters: N`.
    pub masters: Option<u16>,
    /// `file: path` (relative to the scheme).
    pub file: Option<String>,
    /// twemproxy pool.
    pub pool: Option<String>,
}

/// A parsed, validated scheme.
#[derive(Debug, Clone)]
pub struct Scheme {
    /// The default topology, if any.
    pub topology: Option<SchemeTopology>,
    /// Variables by name, in file order.
    pub vars: IndexMap<String, Var>,
    /// Keys, in file order.
    pub keys: Vec<KeyDecl>,
    /// Batches, in file order.
    pub batches: Vec<DeclaredBatch>,
    /// Where each key and batch name is first found in `keys` and `batches` (a lookup by name
    /// is a hash, not a walk of the list: a batch of 10,000 declared keys looks each up once
    /// per generated key).
    index: NameIndex,
}

/// The first position of each name in a scheme's keys and batches, and how long the lists
/// were when indexed.
#[derive(Debug, Clone, Default)]
struct NameIndex {
    keys: std::collections::HashMap<String, usize>,
    batches: std::collections::HashMap<String, usize>,
    lens: (usize, usize),
}

impl NameIndex {
    fn of(keys: &[KeyDecl], batches: &[DeclaredBatch]) -> NameIndex {
        let mut ix = NameIndex {
            lens: (keys.len(), batches.len()),
            ..NameIndex::default()
        };
        for (i, k) in keys.iter().enumerate() {
            ix.keys.entry(k.name.clone()).or_insert(i);
        }
        for (i, b) in batches.iter().enumerate() {
            ix.batches.entry(b.name.clone()).or_insert(i);
        }
        ix
    }
}

impl Scheme {
    /// Parses and validates scheme text.
    pub fn parse(text: &str) -> Result<Scheme, SchemeError> {
        let raw: RawScheme = serde_saphyr::from_str(text).map_err(yaml_error)?;
        if raw.version.value != 1 {
            return Err(at(
                pos(&raw.version),
                format!(
                    "version {} is not supported; this keyplan reads version: 1",
                    raw.version.value
                ),
            ));
        }
        let mut vars = IndexMap::new();
        for (name, v) in &raw.vars {
            if v.value.kind == VarKind::Enum && v.value.values.is_empty() {
                return Err(at(
                    pos(v),
                    format!("var '{name}' is an enum without `values`"),
                ));
            }
            let cardinality = match v.value.kind {
                VarKind::Enum => Some(v.value.values.len() as u64),
                _ => v.value.cardinality,
            };
            vars.insert(
                name.clone(),
                Var {
                    name: name.clone(),
                    kind: v.value.kind,
                    cardinality,
                    values: v.value.values.clone(),
                    pos: pos(v),
                },
            );
        }
        let mut keys = Vec::new();
        for (name, k) in &raw.keys {
            let p = pos(&k.value.pattern);
            let template = Template::parse(&k.value.pattern.value).map_err(|(col, m)| {
                at(
                    Pos {
                        line: p.line,
                        column: p.column + col as u32,
                    },
                    format!("key '{name}': {m}"),
                )
            })?;
            for v in template.vars() {
                if !vars.contains_key(v) {
                    return Err(at(
                        p,
                        format!(
                            "key '{name}': pattern uses <{v}>, which is not declared under `vars:`"
                        ),
                    ));
                }
            }
            keys.push(KeyDecl {
                name: name.clone(),
                template,
                pos: p,
                decl: pos(k),
                bytes: k.value.bytes,
                kind: k.value.kind.clone(),
                allow: k.value.allow.clone(),
                reason: k.value.reason.clone(),
            });
        }
        let mut batches = Vec::new();
        let declared: std::collections::HashSet<&str> =
            keys.iter().map(|d: &KeyDecl| d.name.as_str()).collect();
        for (name, b) in &raw.batches {
            let p = pos(b);
            for k in &b.value.keys.value {
                if !declared.contains(k.as_str()) {
                    return Err(at(
                        pos(&b.value.keys),
                        format!(
                            "batch '{name}' names key '{k}', which is not declared under `keys:`"
                        ),
                    ));
                }
            }
            if b.value.keys.value.is_empty() {
                return Err(at(p, format!("batch '{name}' has no keys")));
            }
            for v in &b.value.same {
                if !vars.contains_key(v) {
                    return Err(at(
                        p,
                        format!(
                            "batch '{name}': `same` names <{v}>, which is not declared under `vars:`"
                        ),
                    ));
                }
            }
            if let Some(n) = b.value.size.filter(|&n| n == 0 || n > MAX_BATCH_KEYS) {
                return Err(at(
                    p,
                    format!("batch '{name}': size {n} is not between 1 and {MAX_BATCH_KEYS} keys"),
                ));
            }
            batches.push(DeclaredBatch {
                name: name.clone(),
                command: b.value.command,
                keys: b.value.keys.value.clone(),
                same: b.value.same.clone(),
                size: b.value.size,
                pos: p,
                allow: b.value.allow.clone(),
                reason: b.value.reason.clone(),
            });
        }
        if let Some(n) = raw
            .topology
            .as_ref()
            .and_then(|t| t.masters)
            .filter(|&n| n == 0 || n > 16384)
        {
            // Where `masters:` is written, for the message.
            let line = text
                .lines()
                .position(|l| l.contains("masters"))
                .map_or(1, |i| i + 1);
            let column = text
                .lines()
                .nth(line - 1)
                .and_then(|l| l.find("masters"))
                .map_or(1, |c| c + 1);
            return Err(at(
                Pos {
                    line: line as u32,
                    column: column as u32,
                },
                format!("topology: masters: {n} is not between 1 and 16384 (a cluster's masters)"),
            ));
        }
        let topology = raw.topology.map(|t| SchemeTopology {
            masters: t.masters,
            file: t.file,
            pool: t.pool,
        });
        Ok(Scheme::new(topology, vars, keys, batches))
    }

    /// A scheme of these parts (checked by whoever made them).
    pub fn new(
        topology: Option<SchemeTopology>,
        vars: IndexMap<String, Var>,
        keys: Vec<KeyDecl>,
        batches: Vec<DeclaredBatch>,
    ) -> Scheme {
        let index = NameIndex::of(&keys, &batches);
        Scheme {
            topology,
            vars,
            keys,
            batches,
            index,
        }
    }

    /// The position in [`Scheme::keys`] of the declared key with this name (the first, were a
    /// name declared twice).
    pub fn key_index(&self, name: &str) -> Option<usize> {
        match self.index.keys.get(name) {
            Some(&i) if self.keys.get(i).is_some_and(|k| k.name == name) => Some(i),
            None if self.keys.len() == self.index.lens.0 => None,
            // The list changed since it was indexed: a walk finds the name.
            _ => self.keys.iter().position(|k| k.name == name),
        }
    }

    /// The declared key with this name.
    pub fn key(&self, name: &str) -> Option<&KeyDecl> {
        self.key_index(name).map(|i| &self.keys[i])
    }

    /// The declared batch with this name.
    pub fn batch(&self, name: &str) -> Option<&DeclaredBatch> {
        match self.index.batches.get(name) {
            Some(&i) if self.batches.get(i).is_some_and(|b| b.name == name) => {
                Some(&self.batches[i])
            }
            None if self.batches.len() == self.index.lens.1 => None,
            _ => self.batches.iter().find(|b| b.name == name),
        }
    }

    /// A byte regex (`(?-u)^…$`) matching the keys of `k`; with `capture`, variable `i` (in
    /// pattern order) is captured as group `v{i}`.
    pub fn key_regex(&self, k: &KeyDecl, capture: bool) -> String {
        let mut re = String::from("(?-u)^");
        let mut i = 0;
        for seg in &k.template.segs {
            match seg {
                Seg::Lit(l) => re.push_str(&regex::escape(l)),
                Seg::Var(v) => {
                    let inner = var_regex(self.vars.get(v));
                    if capture {
                        re.push_str(&format!("(?P<v{i}>{inner})"));
                    } else {
                        re.push_str(&inner);
                    }
                    i += 1;
                }
            }
        }
        re.push('$');
        re
    }

    /// A variable's cardinality (`None` when not declared).
    pub fn cardinality(&self, var: &str) -> Option<u64> {
        self.vars.get(var).and_then(|v| v.cardinality)
    }
}

/// The regex of one variable's values, by kind.
pub fn var_regex(v: Option<&Var>) -> String {
    match v.map(|v| (v.kind, &v.values)) {
        Some((VarKind::Int, _)) => "-?[0-9]+".into(),
        Some((VarKind::Uuid, _)) => {
            "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}".into()
        }
        Some((VarKind::Hex, _)) => "[0-9A-Fa-f]+".into(),
        Some((VarKind::Word, _)) => "[A-Za-z0-9_-]+".into(),
        Some((VarKind::Date, _)) => "[0-9]{4}-[0-9]{2}-[0-9]{2}".into(),
        Some((VarKind::Enum, values)) => format!(
            "(?:{})",
            values
                .iter()
                .map(|x| regex::escape(x))
                .collect::<Vec<_>>()
                .join("|")
        ),
        Some((VarKind::Any, _)) | None => "(?s:.+)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are found by the index, and still found when the lists were changed after it
    /// was made.
    #[test]
    fn names_are_indexed() {
        let text = "version: 1\nkeys:\n  a: { pattern: \"a\" }\n  b: { pattern: \"b\" }\nbatches:\n  x: { command: mget, keys: [a, b] }\n";
        let mut s = Scheme::parse(text).unwrap();
        assert_eq!(s.key_index("b"), Some(1));
        assert_eq!(s.key("a").map(|k| k.template.text.as_str()), Some("a"));
        assert!(s.key("c").is_none());
        assert_eq!(s.batch("x").map(|b| b.keys.len()), Some(2));
        assert!(s.batch("y").is_none());
        let mut c = s.keys[0].clone();
        c.name = "c".into();
        s.keys.insert(0, c);
        assert_eq!(
            (s.key_index("c"), s.key_index("a"), s.key_index("b")),
            (Some(0), Some(1), Some(2))
        );
    }

    /// The documented example scheme, shared with the integration tests.
    pub const SPEC_EXAMPLE: &str = include_str!("../../tests/fixtures/spec-keyplan.yaml");

    #[test]
    fn the_spec_example_is_accepted() {
        let s = Scheme::parse(SPEC_EXAMPLE).unwrap();
        assert_eq!(s.keys.len(), 4);
        assert_eq!(s.cardinality("user_id"), Some(10_000_000));
        assert_eq!(s.batches[0].command, BatchCommand::Multi);
        assert_eq!(
            s.keys[1].pos,
            Pos {
                line: 9,
                column: 27
            }
        );
        assert_eq!(s.topology.as_ref().unwrap().masters, Some(3));
    }

    #[test]
    fn errors_have_positions() {
        let e =
            Scheme::parse(&SPEC_EXAMPLE.replace("user:<user_id>:profile", "user:<uid>:profile"))
                .unwrap_err()
                .to_string();
        assert!(e.starts_with("8:") && e.contains("<uid>"), "{e}");
        let e = Scheme::parse(&SPEC_EXAMPLE.replace("keys: [feed]", "keys: [feeds]"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("14:") && e.contains("feeds"), "{e}");
        let e = Scheme::parse(&SPEC_EXAMPLE.replace("bytes: 300", "byte: 300"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("8:") && e.contains("byte"), "{e}");
        let e = Scheme::parse(&SPEC_EXAMPLE.replace("command: multi", "command: mgett"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mgett"), "{e}");
        let e =
            Scheme::parse(&SPEC_EXAMPLE.replace("user:<user_id>:profile", "user:<user_id:profile"))
                .unwrap_err()
                .to_string();
        assert!(e.starts_with("8:") && e.contains("'<'"), "{e}");
    }
}
