//! Application source read for Redis Cluster hazards: the key templates a program builds and
//! the calls that send several keys at once (a multi-key command, a pipeline or transaction, a
//! script), each judged as lint and plan judge batches: can its keys hash to different slots?
//!
//! Which calls matter is data: one client profile per library (`rules/code/*.yml`) names its
//! multi-key methods, how it makes and runs pipelines, and its script calls. Each language's
//! syntax tree is lowered into one model ([`lower`], [`ir`]); [`engine`] reads that model once
//! for every language, following values through functions, classes and files; [`scan`] drives
//! a tree of files through both. Nothing here reads files.

pub mod draft;
pub mod engine;
pub mod guard;
pub mod ir;
pub mod lower;
pub mod lua;
pub mod profile;
pub mod scan;
mod syntax;

use serde::Serialize;

/// A language `keyplan code` reads, known by a file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// `.py`.
    Python,
    /// `.js`, `.mjs`, `.cjs`, `.jsx`, `.ts`, `.mts`, `.cts`, `.tsx`.
    JavaScript(lower::javascript::Dialect),
    /// `.go`.
    Go,
    /// `.rb`.
    Ruby,
    /// `.java`.
    Java,
}

impl Language {
    /// Every extension read.
    pub const EXTENSIONS: &'static [&'static str] = &[
        "py", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx", "go", "rb", "java",
    ];

    /// The language of a file with extension `ext`.
    pub fn of_extension(ext: &str) -> Option<Language> {
        use lower::javascript::Dialect;
        Some(match ext {
            "py" => Language::Python,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript(Dialect::JavaScript),
            "ts" | "mts" | "cts" => Language::JavaScript(Dialect::TypeScript),
            "tsx" => Language::JavaScript(Dialect::Tsx),
            "go" => Language::Go,
            "rb" => Language::Ruby,
            "java" => Language::Java,
            _ => return None,
        })
    }

    /// The `language:` of the client profiles that apply.
    pub fn profile_language(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript(_) => "javascript",
            Language::Go => "go",
            Language::Ruby => "ruby",
            Language::Java => "java",
        }
    }
}

/// One piece of a key template.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// Bytes written in the code.
    Lit(String),
    /// A value known only when the program runs, named after the code that makes it.
    Var(String),
}

/// A key as the code builds it: literal text and named placeholders (`user:<uid>:profile`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Template {
    /// Its pieces, adjacent literals joined.
    pub parts: Vec<Part>,
}

impl Template {
    /// A template of literal text.
    pub fn lit(s: impl Into<String>) -> Template {
        let mut t = Template::default();
        t.push_lit(&s.into());
        t
    }

    /// A template of one runtime value named `name`.
    pub fn var(name: impl Into<String>) -> Template {
        Template {
            parts: vec![Part::Var(name.into())],
        }
    }

    /// Appends literal text.
    pub fn push_lit(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some(Part::Lit(l)) => l.push_str(s),
            _ => self.parts.push(Part::Lit(s.to_string())),
        }
    }

    /// Appends another template.
    pub fn push(&mut self, other: Template) {
        for p in other.parts {
            match p {
                Part::Lit(l) => self.push_lit(&l),
                v => self.parts.push(v),
            }
        }
    }

    /// Whether it holds no runtime value.
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// The template as keyplan writes patterns: `user:<uid>:profile`.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(l) => s.push_str(l),
                Part::Var(v) => {
                    s.push('<');
                    s.push_str(v);
                    s.push('>');
                }
            }
        }
        s
    }

    /// The pieces of its hash tag as Redis finds it (the first `{`, then the next `}` after it,
    /// with something between), runtime values taken as holding no brace; `None` when the key
    /// has no tag and so hashes whole.
    pub fn tag(&self) -> Option<Vec<Part>> {
        // Each piece split into characters, runtime values as one unit.
        enum U<'a> {
            C(char),
            V(&'a str),
        }
        let units: Vec<U> = self
            .parts
            .iter()
            .flat_map(|p| match p {
                Part::Lit(l) => l.chars().map(U::C).collect::<Vec<_>>(),
                Part::Var(v) => vec![U::V(v)],
            })
            .collect();
        let open = units.iter().position(|u| matches!(u, U::C('{')))?;
        let close = open
            + 1
            + units[open + 1..]
                .iter()
                .position(|u| matches!(u, U::C('}')))?;
        if close == open + 1 {
            return None;
        }
        let mut t = Template::default();
        for u in &units[open + 1..close] {
            match u {
                U::C(c) => t.push_lit(&c.to_string()),
                U::V(v) => t.parts.push(Part::Var(v.to_string())),
            }
        }
        Some(t.parts)
    }

    /// Whether two keys made by these templates (runtime values of one name being one value)
    /// always share a slot.
    pub fn same_slot(&self, other: &Template) -> bool {
        match (self.tag(), other.tag()) {
            (Some(a), Some(b)) => {
                a == b
                    || (a.iter().all(|p| matches!(p, Part::Lit(_)))
                        && b.iter().all(|p| matches!(p, Part::Lit(_)))
                        && crate::slot::key_slot(Template { parts: a }.text().as_bytes())
                            == crate::slot::key_slot(Template { parts: b }.text().as_bytes()))
            }
            _ if self.is_literal() && other.is_literal() => {
                crate::slot::key_slot(self.text().as_bytes())
                    == crate::slot::key_slot(other.text().as_bytes())
            }
            (None, None) => self == other,
            _ => false,
        }
    }
}

/// Where something is in a file (1-based line and column, in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Default)]
pub struct Position {
    /// Line.
    pub line: usize,
    /// Column.
    pub column: usize,
}

/// A key the code builds, where, and by which call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyUse {
    /// The key.
    pub template: Template,
    /// Where the call is.
    pub at: Position,
    /// The Redis command it is sent with (`GET`, `MGET`, `EVAL`).
    pub how: String,
}

/// What a site sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SiteKind {
    /// One multi-key command.
    Command,
    /// A pipeline (no MULTI).
    Pipeline,
    /// MULTI/EXEC.
    Transaction,
    /// A Lua script with its declared keys.
    Script,
}

/// Why a site's keys cannot be judged from the code alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unknown {
    /// Keys from a list built at runtime (`*keys`, a variable).
    RuntimeList(String),
    /// Commands queued in a loop.
    Loop,
    /// A script that declares no keys: it may touch any, and a cluster runs it on any node.
    NoDeclaredKeys,
    /// Commands queued by a function the pipeline is handed to, whose body was not found
    /// (or is defined differently in two places).
    Callee(String),
    /// Calls past the most a reading follows (a call graph that fans out): the batch may
    /// hold commands of calls not read, from this function on.
    Unfollowed(String),
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unknown::RuntimeList(e) => write!(f, "keys from a list built at runtime ({e})"),
            Unknown::Loop => f.write_str("commands queued in a loop: their keys vary per pass"),
            Unknown::NoDeclaredKeys => {
                f.write_str("a script that declares no keys: the keys it touches are not known")
            }
            Unknown::Callee(c) => write!(
                f,
                "the pipeline is handed to {c}(), whose commands keyplan could not follow"
            ),
            Unknown::Unfollowed(c) => write!(
                f,
                "too many calls to follow from here: {c}() and the calls after it were not read"
            ),
        }
    }
}

/// A call that sends several keys at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// Where the batch is opened (the pipeline or `multi` call, the script object call), or
    /// the call itself when one call opens and sends it (a multi-key command).
    pub at: Position,
    /// Where the batch is sent, when that is another line than [`Site::at`] (a pipeline's
    /// `execute()`, `exec()`, `Flush`); `None` for a call that opens and sends at once.
    pub send: Option<Position>,
    /// What it is.
    pub kind: SiteKind,
    /// The command (`MGET`), or for a pipeline or transaction its commands in order.
    pub op: String,
    /// Its keys, in the order they are sent.
    pub keys: Vec<Template>,
    /// What the code does not say about its keys.
    pub unknown: Option<Unknown>,
}

/// A site's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its keys can hash to different slots: a cluster refuses it (atomic) or the client splits
    /// it.
    CrossSlot(String),
    /// One slot: one key, or keys sharing a hash tag.
    OneSlot(String),
    /// The code does not say.
    Depends(String),
}

impl Site {
    /// Whether MULTI/EXEC or a script makes it atomic.
    pub fn atomic(&self) -> bool {
        matches!(self.kind, SiteKind::Transaction | SiteKind::Script)
    }

    /// Its keys, each once, in the order first sent (a set, not a search of those kept: a
    /// call of 100,000 keys is common in generated code).
    fn distinct(&self) -> Vec<&Template> {
        let mut seen = std::collections::HashSet::with_capacity(self.keys.len());
        self.keys.iter().filter(|k| seen.insert(*k)).collect()
    }

    /// The verdict: can its keys land on different slots?
    pub fn verdict(&self) -> Verdict {
        let distinct = self.distinct();
        if let Some((a, b)) = first_apart(&distinct) {
            // Apart only as two passes of a loop over a list the running code holds
            // (`job:<id>` and `job:<id'>`): one slot when the list has one element, or all
            // its elements share a tag; the verdict is the list's.
            let mut folded: Vec<Template> = distinct.iter().map(|t| unprimed(t)).collect();
            folded.sort();
            folded.dedup();
            if first_apart(&folded.iter().collect::<Vec<_>>()).is_none() {
                return Verdict::Depends(
                    self.unknown
                        .as_ref()
                        .map_or_else(|| Unknown::Loop.to_string(), |u| u.to_string()),
                );
            }
            let (x, y) = (distinct[a], distinct[b]);
            // Keys whose slot the code fixes (literal, or a literal hash tag) are said with
            // their slots: they do not merely can, they do hash apart.
            return Verdict::CrossSlot(match (SlotClass::of(x), SlotClass::of(y)) {
                (SlotClass::Known { slot: sx, .. }, SlotClass::Known { slot: sy, .. })
                    if sx != sy =>
                {
                    format!(
                        "`{}` (slot {sx}) and `{}` (slot {sy}) hash to different slots",
                        x.text(),
                        y.text()
                    )
                }
                _ => format!("{} and {} can hash to different slots", x.text(), y.text()),
            });
        }
        if let Some(u) = &self.unknown {
            return Verdict::Depends(u.to_string());
        }
        if self.kind == SiteKind::Script && self.keys.is_empty() {
            return Verdict::Depends(Unknown::NoDeclaredKeys.to_string());
        }
        Verdict::OneSlot(match distinct.len() {
            0 | 1 => "one key".to_string(),
            _ => match distinct[0].tag() {
                Some(t) => format!(
                    "every key has the hash tag {{{}}}",
                    Template { parts: t }.text()
                ),
                None => "every key hashes to one slot".to_string(),
            },
        })
    }
}

impl Site {
    /// How to put the keys on one slot without giving up what the site is: the value every
    /// key shares, tagged in each (`user:{<uid>}:profile`); `None` when the keys share no
    /// value or one of them is nothing but that value.
    pub fn fix(&self) -> Option<String> {
        let distinct = self.distinct();
        let vars = |t: &Template| -> Vec<String> {
            t.parts
                .iter()
                .filter_map(|p| match p {
                    Part::Var(v) => Some(v.clone()),
                    Part::Lit(_) => None,
                })
                .collect()
        };
        let shared = distinct.first().and_then(|first| {
            vars(first)
                .into_iter()
                .find(|v| distinct.iter().all(|t| vars(t).contains(v)))
        });
        match shared {
            Some(v) if distinct.iter().all(|t| t.parts.len() > 1) => {
                let tagged: Vec<String> = distinct
                    .iter()
                    .take(3)
                    .map(|t| {
                        let mut s = String::new();
                        let mut done = false;
                        for p in &t.parts {
                            match p {
                                Part::Var(x) if *x == v && !done && t.tag().is_none() => {
                                    s.push_str(&format!("{{<{x}>}}"));
                                    done = true;
                                }
                                Part::Var(x) => s.push_str(&format!("<{x}>")),
                                Part::Lit(l) => s.push_str(l),
                            }
                        }
                        s
                    })
                    .collect();
                Some(format!(
                    "tag the value every key shares, <{v}>, in each key: {}",
                    tagged.join(", ")
                ))
            }
            _ => None,
        }
    }
}

/// Where a key's slot comes from, for comparing many keys at once: two keys share a slot
/// always exactly when [`Template::same_slot`] says so of them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SlotClass {
    /// A slot known from the code: the key is literal, or its hash tag is. `literal`: the
    /// whole key is; `tagged`: it has a tag.
    Known {
        slot: u16,
        literal: bool,
        tagged: bool,
    },
    /// A hash tag holding a runtime value.
    Tag(Vec<Part>),
    /// No tag and a runtime value: it shares a slot with itself only.
    Own,
}

impl SlotClass {
    fn of(t: &Template) -> SlotClass {
        let literal = t.is_literal();
        match t.tag() {
            Some(tag) if tag.iter().all(|p| matches!(p, Part::Lit(_))) => SlotClass::Known {
                slot: crate::slot::key_slot(Template { parts: tag }.text().as_bytes()),
                literal,
                tagged: true,
            },
            Some(tag) => SlotClass::Tag(tag),
            None if literal => SlotClass::Known {
                slot: crate::slot::key_slot(t.text().as_bytes()),
                literal,
                tagged: false,
            },
            None => SlotClass::Own,
        }
    }

    /// Whether two different keys of these classes always share a slot (as
    /// [`Template::same_slot`]: a literal key without a tag is compared with a literal key
    /// only).
    fn together(&self, other: &SlotClass) -> bool {
        match (self, other) {
            (
                SlotClass::Known {
                    slot: a,
                    literal: la,
                    tagged: ta,
                },
                SlotClass::Known {
                    slot: b,
                    literal: lb,
                    tagged: tb,
                },
            ) => a == b && !((*la && !ta && !lb) || (*lb && !tb && !la)),
            (SlotClass::Tag(a), SlotClass::Tag(b)) => a == b,
            _ => false,
        }
    }
}

/// Up to two different values seen, enough to say whether one differs from a given value.
#[derive(Debug, Clone)]
struct TwoOf<T>(Option<T>, bool);

impl<T: PartialEq + Clone> TwoOf<T> {
    fn new() -> TwoOf<T> {
        TwoOf(None, false)
    }

    fn add(&mut self, v: &T) {
        match &self.0 {
            None => self.0 = Some(v.clone()),
            Some(first) if first != v => self.1 = true,
            Some(_) => {}
        }
    }

    /// Whether a value other than `v` was seen.
    fn other_than(&self, v: &T) -> bool {
        self.1 || self.0.as_ref().is_some_and(|f| f != v)
    }
}

/// A key with the marks of a second pass of a loop taken off its placeholders (`<id'>` →
/// `<id>`, `<key_for(id')'>` → `<key_for(id)>`).
fn unprimed(t: &Template) -> Template {
    Template {
        parts: t
            .parts
            .iter()
            .map(|p| match p {
                Part::Var(n) => Part::Var(n.replace('\'', "")),
                lit => lit.clone(),
            })
            .collect(),
    }
}

/// The first pair `(i, j)`, `i < j` in the order `for i { for j > i }`, of distinct keys that
/// can hash to different slots; in time linear in the keys (a site of 100,000 literal keys
/// took minutes when each pair was compared).
fn first_apart(keys: &[&Template]) -> Option<(usize, usize)> {
    let classes: Vec<SlotClass> = keys.iter().map(|t| SlotClass::of(t)).collect();
    // What the keys after each one are, built from the last: whether one of them parts
    // from it.
    let (mut own, mut tags, mut known) = (0usize, 0usize, 0usize);
    let (mut tag_values, mut slots) = (TwoOf::new(), TwoOf::new());
    let (mut tagged_not_literal, mut literal_untagged) = (0usize, 0usize);
    let mut apart_later = vec![false; classes.len()];
    for (i, c) in classes.iter().enumerate().rev() {
        apart_later[i] = match c {
            SlotClass::Own => own + tags + known > 0,
            SlotClass::Tag(p) => own > 0 || known > 0 || tag_values.other_than(p),
            SlotClass::Known {
                slot,
                literal,
                tagged,
            } => {
                own > 0
                    || tags > 0
                    || slots.other_than(slot)
                    || (!literal && literal_untagged > 0)
                    || (*literal && !tagged && tagged_not_literal > 0)
            }
        };
        match c {
            SlotClass::Own => own += 1,
            SlotClass::Tag(p) => {
                tags += 1;
                tag_values.add(p);
            }
            SlotClass::Known {
                slot,
                literal,
                tagged,
            } => {
                known += 1;
                slots.add(slot);
                if !literal {
                    tagged_not_literal += 1;
                } else if !tagged {
                    literal_untagged += 1;
                }
            }
        }
    }
    let i = apart_later.iter().position(|&a| a)?;
    let j = (i + 1..classes.len()).find(|&j| !classes[i].together(&classes[j]))?;
    Some((i, j))
}

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The file, as the path given names it (`src/` gives `src/app.py`).
    pub file: String,
    /// Why.
    pub reason: String,
}

/// What one file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileFindings {
    /// Keys built, by call.
    pub keys: Vec<KeyUse>,
    /// Multi-key sites.
    pub sites: Vec<Site>,
}

/// The findings of one file, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file, as the path given names it (`src/` gives `src/app.py`; `/` separators).
    pub file: String,
    /// Its findings.
    pub findings: FileFindings,
}

/// A scan of a source tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeReport {
    /// Files with findings, by path.
    pub files: Vec<FileReport>,
    /// Files not read.
    pub skipped: Vec<Skipped>,
    /// Files read.
    pub scanned: usize,
}

impl CodeReport {
    /// Sites whose keys can hash to different slots.
    pub fn cross_slot(&self) -> usize {
        self.files
            .iter()
            .flat_map(|f| &f.findings.sites)
            .filter(|s| matches!(s.verdict(), Verdict::CrossSlot(_)))
            .count()
    }
}

/// A site's keys as text (the unit tests of every reader).
#[cfg(test)]
pub(crate) fn texts(s: &Site) -> Vec<String> {
    s.keys.iter().map(Template::text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(parts: &[(&str, bool)]) -> Template {
        let mut t = Template::default();
        for (s, var) in parts {
            if *var {
                t.parts.push(Part::Var(s.to_string()));
            } else {
                t.push_lit(s);
            }
        }
        t
    }

    #[test]
    fn tags_and_slots_of_templates() {
        let a = t(&[("user:{", false), ("uid", true), ("}:profile", false)]);
        let b = t(&[("user:{", false), ("uid", true), ("}:settings", false)]);
        let c = t(&[("user:", false), ("uid", true), (":settings", false)]);
        assert_eq!(a.text(), "user:{<uid>}:profile");
        assert!(a.same_slot(&b));
        assert!(!a.same_slot(&c));
        assert!(!c.same_slot(&t(&[("user:", false), ("uid", true), (":x", false)])));
        // Literal keys: their real slots.
        assert!(Template::lit("{a}x").same_slot(&Template::lit("a")));
        assert!(!Template::lit("a").same_slot(&Template::lit("b")));
        // `{}` is no tag: the whole key hashes.
        assert_eq!(Template::lit("a{}b").tag(), None);
    }

    /// The pair a site's verdict names is the first its keys give compared two by two, in a
    /// pass linear in the keys: every arrangement of up to four keys of a pool of every kind
    /// (literal, tagged, tagged by a runtime value, neither) against the pairwise comparison.
    #[test]
    fn the_first_pair_apart_is_the_pairwise_one() {
        let pool = [
            t(&[("a", false)]),
            t(&[("{a}x", false)]),
            t(&[("{a}:", false), ("v", true)]),
            t(&[("b", false)]),
            t(&[("{b}", false)]),
            t(&[("u:{", false), ("id", true), ("}:p", false)]),
            t(&[("u:{", false), ("id", true), ("}:q", false)]),
            t(&[("u:", false), ("id", true)]),
            t(&[("x:{", false), ("w", true), ("}", false)]),
            // Its tag hashes as `a` does.
            t(&[("{a}", false), ("z", true)]),
        ];
        let pairwise = |keys: &[&Template]| {
            for (i, a) in keys.iter().enumerate() {
                for (j, b) in keys.iter().enumerate().skip(i + 1) {
                    if !a.same_slot(b) {
                        return Some((i, j));
                    }
                }
            }
            None
        };
        let mut arrangements = 0;
        let mut stack: Vec<Vec<usize>> = vec![vec![]];
        while let Some(picked) = stack.pop() {
            let keys: Vec<&Template> = picked.iter().map(|&i| &pool[i]).collect();
            assert_eq!(first_apart(&keys), pairwise(&keys), "{picked:?}");
            arrangements += 1;
            if picked.len() < 4 {
                for i in 0..pool.len() {
                    if !picked.contains(&i) {
                        let mut more = picked.clone();
                        more.push(i);
                        stack.push(more);
                    }
                }
            }
        }
        assert!(arrangements > 5000);
    }

    /// A site's verdict and fix look at each key a bounded number of times: 100,000 distinct
    /// literal keys on one slot (all tagged alike, the worst case for a pairwise comparison)
    /// are judged one slot.
    #[test]
    fn a_site_of_many_keys_is_judged_in_one_pass() {
        let keys: Vec<Template> = (0..100_000)
            .map(|i| Template::lit(format!("{{t}}:{i}")))
            .collect();
        let site = Site {
            at: Position { line: 1, column: 1 },
            send: None,
            kind: SiteKind::Command,
            op: "MGET".into(),
            keys,
            unknown: None,
        };
        assert_eq!(
            site.verdict(),
            Verdict::OneSlot("every key has the hash tag {t}".into())
        );
        assert_eq!(site.fix(), None);
    }

    #[test]
    fn verdicts() {
        let site = |keys: Vec<Template>, unknown| Site {
            at: Position { line: 1, column: 1 },
            send: None,
            kind: SiteKind::Command,
            op: "MGET".into(),
            keys,
            unknown,
        };
        let a = t(&[("user:", false), ("uid", true), (":profile", false)]);
        let b = t(&[("user:", false), ("uid", true), (":settings", false)]);
        assert!(matches!(
            site(vec![a.clone(), b.clone()], None).verdict(),
            Verdict::CrossSlot(_)
        ));
        assert!(matches!(
            site(vec![a.clone(), a.clone()], None).verdict(),
            Verdict::OneSlot(_)
        ));
        assert!(matches!(
            site(vec![a.clone()], Some(Unknown::Loop)).verdict(),
            Verdict::Depends(_)
        ));
        // Two known keys on different slots are cross-slot whatever else the loop adds.
        assert!(matches!(
            site(vec![a.clone(), b.clone()], Some(Unknown::Loop)).verdict(),
            Verdict::CrossSlot(_)
        ));
        // Keys built at runtime can hash apart; literal keys and literal tags do, on the
        // slots they name (CLUSTER KEYSLOT on redis-server: user:1 is 10778, user:2 is 6777).
        assert_eq!(
            site(vec![a.clone(), b], None).verdict(),
            Verdict::CrossSlot(
                "user:<uid>:profile and user:<uid>:settings can hash to different slots".into()
            )
        );
        assert_eq!(
            site(vec![Template::lit("user:1"), Template::lit("user:2")], None).verdict(),
            Verdict::CrossSlot(
                "`user:1` (slot 10778) and `user:2` (slot 6777) hash to different slots".into()
            )
        );
        let tagged = |tag: &str| t(&[("{", false), (tag, false), ("}:", false), ("id", true)]);
        assert_eq!(
            site(vec![tagged("user:1"), tagged("user:2")], None).verdict(),
            Verdict::CrossSlot(
                "`{user:1}:<id>` (slot 10778) and `{user:2}:<id>` (slot 6777) hash to different slots"
                    .into()
            )
        );
        // A literal key beside a runtime one: its slot is known, the other's is not.
        assert_eq!(
            site(vec![Template::lit("user:1"), a], None).verdict(),
            Verdict::CrossSlot("user:1 and user:<uid>:profile can hash to different slots".into())
        );
    }
}
