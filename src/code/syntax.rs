//! What the language readers share: a pipeline being filled, the keys of one call, positions,
//! placeholders named after code, and helpers' parameters bound to a call's arguments.

use super::{Part, Position, Site, SiteKind, Template, Unknown};
use tree_sitter::Node;

/// How deep helper functions and names are followed.
pub(super) const DEPTH: usize = 6;

/// A pipeline or transaction being filled, from where it is made to where it is sent.
pub(super) struct Pipe {
    /// Whether it is MULTI/EXEC.
    pub atomic: bool,
    /// Where it was made (a loop around a queued command but not around this is a loop).
    pub made: (usize, usize),
    ops: Vec<String>,
    /// Commands handed in past [`HELD`] (counted, not kept).
    more: usize,
    keys: Vec<Template>,
    unknown: Option<Unknown>,
}

/// How many commands, and distinct keys, a pipeline keeps of what functions it is handed to
/// queue: a function that hands the pipeline to itself, or to others that do, would
/// otherwise double them with each reading.
const HELD: usize = 256;

impl Pipe {
    /// A pipeline made by the code between bytes `made`.
    pub fn new(atomic: bool, made: (usize, usize)) -> Pipe {
        Pipe {
            atomic,
            made,
            ops: Vec::new(),
            more: 0,
            keys: Vec::new(),
            unknown: None,
        }
    }

    /// Queues one command (`in_loop`: inside a loop the pipeline was made outside).
    pub fn queue(&mut self, op: &str, keys: CallKeys, in_loop: bool) {
        self.ops.push(op.to_string());
        self.keys.extend(keys.keys);
        if self.unknown.is_none() {
            self.unknown = keys.unknown.or(in_loop.then_some(Unknown::Loop));
        }
    }

    /// [`Pipe::hand`] with what [`follow`] read: nothing queued adds nothing.
    pub fn hand_followed(&mut self, callee: &str, queued: Option<Queued>, in_loop: bool) {
        match queued {
            Some((ops, keys, unknown)) if !ops.is_empty() => {
                self.hand(callee, Some((&ops, keys, unknown)), in_loop)
            }
            Some(_) => {}
            None => self.hand(callee, None, in_loop),
        }
    }

    /// Queues what a function handed the pipeline queues (`queued`: its commands and keys
    /// when its body was followed; `None` leaves them unknown).
    pub fn hand(
        &mut self,
        callee: &str,
        queued: Option<(&[String], Vec<Template>, Option<Unknown>)>,
        in_loop: bool,
    ) {
        match queued {
            Some((ops, keys, unknown)) => {
                let room = HELD.saturating_sub(self.ops.len()).min(ops.len());
                self.ops.extend(ops[..room].iter().cloned());
                self.more += ops.len() - room;
                for k in keys {
                    if self.keys.len() < HELD && !self.keys.contains(&k) {
                        self.keys.push(k);
                    }
                }
                if self.unknown.is_none() {
                    self.unknown = unknown.or(in_loop.then_some(Unknown::Loop));
                }
            }
            None => {
                self.ops.push(format!("{callee}()"));
                if self.unknown.is_none() {
                    self.unknown = Some(Unknown::Callee(callee.to_string()));
                }
            }
        }
    }

    /// What was queued so far: commands, keys and what is not known (a function's body, read
    /// as a [`super::Queuer`]).
    pub fn queued(&self) -> (&[String], &[Template], Option<&Unknown>) {
        (&self.ops, &self.keys, self.unknown.as_ref())
    }

    /// The site of sending what was queued at `at` (`plain`: sent without MULTI whatever it
    /// was made as; `text`: the file's text, where it was made is found in); `None` when
    /// nothing was queued. The site is at the line that made the pipeline, with `at` as where
    /// it is sent, when that is a later line; a pipeline handed in as a parameter (made by no
    /// code here: `made` is empty) is at its sending.
    pub fn send(&mut self, text: &str, at: Position, plain: bool) -> Option<Site> {
        let ops = std::mem::take(&mut self.ops);
        if ops.is_empty() {
            return None;
        }
        let opened = (self.made.0 < self.made.1)
            .then(|| byte_position(text, self.made.0))
            .flatten()
            .filter(|o| o.line < at.line);
        Some(Site {
            at: opened.unwrap_or(at),
            send: opened.map(|_| at),
            kind: if self.atomic && !plain {
                SiteKind::Transaction
            } else {
                SiteKind::Pipeline
            },
            op: op_text(&ops, std::mem::take(&mut self.more)),
            keys: std::mem::take(&mut self.keys),
            unknown: self.unknown.take(),
        })
    }
}

/// What a function queues on a pipeline it is handed: commands, keys, what is not known.
pub(super) type Queued = (Vec<String>, Vec<Template>, Option<Unknown>);

/// A reader whose pipelines are kept by (scope start, name), as Go's and JavaScript's are.
pub(super) trait Follows<'t> {
    /// Its pipelines.
    fn pipes(&mut self) -> &mut std::collections::HashMap<(usize, String), Pipe>;
    /// What it found so far.
    fn findings(&mut self) -> &mut super::FileFindings;
    /// The functions being followed, innermost last.
    fn following(&mut self) -> &mut Vec<String>;
    /// Reads a function body.
    fn walk_body(&mut self, body: Node<'t>);
}

/// What function `def` (named `name`) queues on its parameter `param`: its body read with
/// that parameter a fresh pipeline; what the body sends by itself is left to where the
/// function is read on its own.
pub(super) fn follow<'t>(
    r: &mut impl Follows<'t>,
    def: Node<'t>,
    name: &str,
    param: String,
) -> Option<Queued> {
    let (sites, keys) = (r.findings().sites.len(), r.findings().keys.len());
    let inner = (def.start_byte(), param);
    let saved = r.pipes().remove(&inner);
    r.pipes().insert(
        inner.clone(),
        Pipe::new(false, (def.start_byte(), def.start_byte())),
    );
    r.following().push(name.to_string());
    if let Some(body) = def.child_by_field_name("body") {
        r.walk_body(body);
    }
    r.following().pop();
    let got = r.pipes().remove(&inner);
    if let Some(p) = saved {
        r.pipes().insert(inner, p);
    }
    r.findings().sites.truncate(sites);
    r.findings().keys.truncate(keys);
    got.map(|p| {
        let (ops, keys, unknown) = p.queued();
        (ops.to_vec(), keys.to_vec(), unknown.cloned())
    })
}

/// A pipeline's commands as one line: in order, cut after 16 (`… and N more`; `more`: those
/// not kept).
pub(super) fn op_text(ops: &[String], more: usize) -> String {
    const SHOWN: usize = 16;
    if ops.len() <= SHOWN && more == 0 {
        return ops.join(" ");
    }
    let shown = ops.len().min(SHOWN);
    format!(
        "{} … and {} more",
        ops[..shown].join(" "),
        ops.len() - shown + more
    )
}

/// The keys of one call: templates, and what is not known.
#[derive(Default)]
pub(super) struct CallKeys {
    pub keys: Vec<Template>,
    pub unknown: Option<Unknown>,
}

/// Where byte `offset` of `text` is (1-based line, and column in characters, as
/// [`position`] says of a node); `None` past the end or inside a character.
fn byte_position(text: &str, offset: usize) -> Option<Position> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some(Position {
        line: memchr::memchr_iter(b'\n', before.as_bytes()).count() + 1,
        column: before[line_start..].chars().count() + 1,
    })
}

/// Where a node starts (1-based line, and column in characters).
pub(super) fn position(text: &str, n: Node<'_>) -> Position {
    let p = n.start_position();
    let line_start = n.start_byte() - p.column;
    Position {
        line: p.row + 1,
        column: text[line_start..n.start_byte()].chars().count() + 1,
    }
}

/// Code on one line, cut to 40 characters.
pub(super) fn short_str(code: &str) -> String {
    let t = code.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.chars().count() > 40 {
        format!("{}…", t.chars().take(39).collect::<String>())
    } else {
        t
    }
}

/// A node's code on one line, cut to 40 characters: a placeholder's name.
pub(super) fn short(src: &[u8], n: Node<'_>) -> String {
    let t = n
        .utf8_text(src)
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if t.chars().count() > 40 {
        format!("{}…", t.chars().take(39).collect::<String>())
    } else {
        t
    }
}

/// A helper's returned template with its parameters replaced by the caller's arguments
/// (`arg(i)` makes the template of argument `i`, if there is one).
pub(super) fn bind(
    body: Template,
    params: &[&str],
    mut arg: impl FnMut(usize) -> Option<Template>,
) -> Template {
    let mut t = Template::default();
    for p in body.parts {
        match p {
            Part::Var(v) => match params.iter().position(|p| *p == v).and_then(&mut arg) {
                Some(a) => t.push(a),
                None => t.parts.push(Part::Var(v)),
            },
            Part::Lit(l) => t.push_lit(&l),
        }
    }
    t
}

/// Whether `inner` lies within `outer`.
pub(super) fn contains(outer: Node<'_>, inner: Node<'_>) -> bool {
    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
}

/// The last name of a receiver's text, lower-cased and without leading `_`s, as receivers
/// are judged by it (`self._cache` → `cache`, `app.redis` → `redis`).
pub(super) fn receiver_name(text: &str) -> String {
    text.rsplit(['.', ' '])
        .next()
        .unwrap_or(text)
        .trim_start_matches('_')
        .to_ascii_lowercase()
}

/// A name that reads as a list of keys (`keys`, `cache_keys`, `ids`, `names`).
pub(super) fn looks_plural(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.ends_with("keys") || n.ends_with("list") || n.ends_with("names") || n.ends_with("ids")
}

/// The character an escape sequence stands for (others as written).
pub(super) fn unescape(e: &str) -> String {
    match e {
        "\\n" => "\n".into(),
        "\\t" => "\t".into(),
        "\\\\" => "\\".into(),
        "\\'" => "'".into(),
        "\\\"" => "\"".into(),
        "\\`" => "`".into(),
        "\\{" => "{".into(),
        "\\}" => "}".into(),
        other => other.to_string(),
    }
}

/// Records the keys one command sends (`op`, at `at`) and either queues it on `pipe` (with
/// whether it is queued in a loop the pipeline was made outside) or, when it stands alone and
/// sends several keys, a script or keys not known, makes it a site.
pub(super) fn emit(
    out: &mut super::FileFindings,
    at: Position,
    kind: SiteKind,
    op: &str,
    keys: CallKeys,
    pipe: Option<(&mut Pipe, bool)>,
) {
    for k in &keys.keys {
        out.keys.push(super::KeyUse {
            template: k.clone(),
            at,
            how: op.to_string(),
        });
    }
    match pipe {
        Some((p, in_loop)) => p.queue(op, keys, in_loop),
        None if kind == SiteKind::Script || keys.keys.len() > 1 || keys.unknown.is_some() => {
            out.sites.push(Site {
                at,
                send: None,
                kind,
                op: op.to_string(),
                keys: keys.keys,
                unknown: keys.unknown,
            })
        }
        None => {}
    }
}

/// Whether a loop (a node of a kind in `loops`) lies around `call` but not around the code
/// between bytes `made` that made the pipeline.
pub(super) fn in_loop_since<'t>(
    up: &Parents<'t>,
    call: Node<'t>,
    made: (usize, usize),
    loops: &[&str],
) -> bool {
    for p in up.around(call) {
        if loops.contains(&p.kind()) {
            return !(p.start_byte() <= made.0 && made.1 <= p.end_byte());
        }
    }
    false
}

/// The command a printf-style format makes: each `%` verb takes the next argument's template
/// (`%%` is a percent sign); `None` when the verbs and arguments do not line up.
pub(super) fn printf(format: &str, mut next: impl FnMut() -> Option<Template>) -> Option<Template> {
    let mut t = Template::default();
    let mut chars = format.chars().peekable();
    let mut lit = String::new();
    while let Some(c) = chars.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            lit.push('%');
            continue;
        }
        // Flags, width, precision, then the verb letter.
        while chars
            .peek()
            .is_some_and(|c| !c.is_ascii_alphabetic() && *c != '%')
        {
            chars.next();
        }
        chars.next()?;
        t.push_lit(&std::mem::take(&mut lit));
        t.push(next()?);
    }
    t.push_lit(&lit);
    Some(t)
}

/// A map's entries in the order of their names (what a file exports is gathered in a
/// stable order).
pub(super) fn sorted<K: Ord, V>(map: &std::collections::HashMap<K, V>) -> Vec<(&K, &V)> {
    let mut v: Vec<(&K, &V)> = map.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// The command a method sends under `profiles`: named in a profile (with how its arguments
/// carry the keys), or, for clients whose methods are commands, named like one (its arguments
/// then the command line).
pub(super) fn command_of(
    profiles: &[super::profile::Profile],
    method: &str,
) -> Option<(String, Option<super::profile::ArgShape>)> {
    if let Some(m) = profiles.iter().find_map(|p| p.commands.get(method)) {
        return Some((m.command.clone(), Some(m.how)));
    }
    if !profiles.iter().any(|p| p.any_command) {
        return None;
    }
    let lower = method.to_ascii_lowercase();
    crate::command::table()
        .get(&lower)
        .filter(|c| !c.is_container())
        .map(|_| (lower.to_ascii_uppercase(), None))
}

/// Which arguments (0-based, after the command name) of `cmd` are keys, the arguments given
/// by their templates (a runtime value stands for one argument); `None` when the command
/// table cannot say (an unknown command, or too few arguments written).
pub(super) fn key_positions(cmd: &str, args: impl Iterator<Item = Template>) -> Option<Vec<usize>> {
    let line: Vec<Vec<u8>> = std::iter::once(cmd.as_bytes().to_vec())
        .chain(args.map(|t| {
            if t.is_literal() {
                t.text().into_bytes()
            } else {
                b"x".to_vec()
            }
        }))
        .collect();
    table_positions(line)
}

/// Where the command table finds keys in a command line (0-based, after the name). A client
/// method may take fewer arguments than the command line has (redis-py's
/// `blmove(src, dst, timeout)` fills in the directions): the line is filled out with
/// placeholders to the command's arity, and only keys among the given arguments kept.
pub(super) fn table_positions(mut line: Vec<Vec<u8>>) -> Option<Vec<usize>> {
    let table = crate::command::table();
    let given = line.len();
    let refs = match table.keys(&line) {
        Ok(r) => r,
        Err(_) => {
            let name = String::from_utf8_lossy(line.first()?).to_ascii_lowercase();
            let arity = table.get(&name)?.arity.unsigned_abs() as usize;
            if arity <= given {
                return None;
            }
            line.resize(arity, b"x".to_vec());
            table.keys(&line).ok()?
        }
    };
    Some(
        refs.into_iter()
            .filter(|r| r.pos < given)
            .map(|r| r.pos - 1)
            .collect(),
    )
}

/// Whether `cmd` takes keys at all (`PING`, `CLUSTER …` do not).
pub(super) fn takes_keys(cmd: &str) -> bool {
    crate::command::table()
        .get(&cmd.to_ascii_lowercase())
        .is_some_and(|c| !c.specs.is_empty())
}

/// Where the nearest node of a kind in `scopes` around `n` starts (0: none, the file).
pub(super) fn scope_start<'t>(up: &Parents<'t>, n: Node<'t>, scopes: &[&str]) -> usize {
    up.around(n)
        .find(|q| scopes.contains(&q.kind()))
        .map_or(0, |q| q.start_byte())
}

/// Whether `name` is a parameter of a function (a node of a kind in `functions`) around `n`:
/// then it is a runtime value, whatever another file defines under the same name.
pub(super) fn is_parameter<'t>(
    up: &Parents<'t>,
    n: Node<'t>,
    name: &str,
    src: &[u8],
    functions: &[&str],
) -> bool {
    for q in up.around(n) {
        if functions.contains(&q.kind()) {
            for field in ["parameters", "parameter"] {
                let text = q
                    .child_by_field_name(field)
                    .and_then(|ps| ps.utf8_text(src).ok())
                    .unwrap_or("");
                if text
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .any(|w| w == name)
                {
                    return true;
                }
            }
        }
    }
    false
}

/// The parents of one tree's nodes, each found once. `Node::parent` searches down from the
/// root at every call, so a walk outwards by it costs the square of the depth; the readers walk
/// outwards from every call they read, and a chain of a thousand calls took minutes.
pub(super) struct Parents<'t> {
    root: Node<'t>,
    /// Parents found so far, by node id.
    known: std::cell::RefCell<std::collections::HashMap<usize, Node<'t>>>,
}

impl<'t> Parents<'t> {
    /// The parents of the nodes under `root`.
    pub fn new(root: Node<'t>) -> Parents<'t> {
        Parents {
            root,
            known: Default::default(),
        }
    }

    /// The node around `n` (`None` for the root): found in one search down from the root,
    /// which records the parent of every node on the way.
    pub fn of(&self, n: Node<'t>) -> Option<Node<'t>> {
        if n.id() == self.root.id() {
            return None;
        }
        if let Some(p) = self.known.borrow().get(&n.id()) {
            return Some(*p);
        }
        let mut known = self.known.borrow_mut();
        let mut at = self.root;
        loop {
            let Some(child) = at.child_with_descendant(n) else {
                // Not under this root (never so for the readers' nodes): ask the tree.
                return n.parent();
            };
            known.insert(child.id(), at);
            if child.id() == n.id() {
                return Some(at);
            }
            at = child;
        }
    }

    /// The nodes around `n`, innermost first.
    pub fn around(&self, n: Node<'t>) -> impl Iterator<Item = Node<'t>> + '_ {
        std::iter::successors(self.of(n), |p| self.of(*p))
    }
}

/// How a language gives a name a value, for [`Assigned`].
pub(super) struct Binds {
    /// Node kinds whose insides are another scope (nested functions, classes).
    pub skip: fn(&str) -> bool,
    /// The (name, value) pairs a node gives, in source order.
    pub pairs: for<'a> fn(Node<'a>, &mut Vec<(Node<'a>, Node<'a>)>),
    /// Whether the giving node must end before the place asked about (`x = f(x)` asked
    /// inside `f(x)` is the earlier `x`).
    pub ended: bool,
}

/// One value given to a name: the giving node's bytes and the value.
struct Given<'t> {
    start: usize,
    end: usize,
    value: Node<'t>,
}

/// Every value given to a name in a scope, by name in source order, built once per scope:
/// "the value last given to `name` before byte b" is then a binary search, where a walk of
/// the scope for each name asked about made long functions and modules quadratic.
#[derive(Default)]
pub(super) struct Assigned<'t> {
    scopes: std::cell::RefCell<std::collections::HashMap<usize, ScopeIndex<'t>>>,
    /// Names asked about, and whether the file may give them a value: one it never does
    /// needs no scope found (finding a node's function climbs the tree, which costs).
    names: std::cell::RefCell<std::collections::HashMap<String, bool>>,
}

type ScopeIndex<'t> = std::collections::HashMap<String, Vec<Given<'t>>>;

impl<'t> Assigned<'t> {
    /// Whether `name = …` may be written anywhere in `src` (a whole word, then `=` but not
    /// `==`; keyword arguments count too): a name never written so needs no scope found.
    pub fn may_have(&self, name: &str, src: &[u8]) -> bool {
        if let Some(&known) = self.names.borrow().get(name) {
            return known;
        }
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80;
        let found = !name.is_empty()
            && memchr::memmem::find_iter(src, name.as_bytes()).any(|at| {
                let end = at + name.len();
                if at > 0 && word(src[at - 1]) || src.get(end).copied().is_some_and(word) {
                    return false;
                }
                let rest = &src[end..];
                let skip = rest
                    .iter()
                    .take_while(|b| matches!(b, b' ' | b'\t'))
                    .count();
                rest.get(skip) == Some(&b'=') && rest.get(skip + 1) != Some(&b'=')
            });
        self.names.borrow_mut().insert(name.to_string(), found);
        found
    }

    /// The value last given to `name` under `scope` (not inside what `binds.skip` names) by a
    /// node that starts before byte `before` (and ends before it, when `binds.ended`).
    pub fn last(
        &self,
        scope: Node<'t>,
        name: &str,
        before: usize,
        src: &[u8],
        binds: &Binds,
    ) -> Option<Node<'t>> {
        let mut scopes = self.scopes.borrow_mut();
        let index = scopes.entry(scope.id()).or_insert_with(|| {
            let mut index = ScopeIndex::new();
            index_scope(scope, src, binds, &mut index);
            index
        });
        let given = index.get(name)?;
        let upto = given.partition_point(|g| g.start < before);
        given[..upto]
            .iter()
            .rev()
            .find(|g| !binds.ended || g.end <= before)
            .map(|g| g.value)
    }
}

/// Indexes what `scope`'s nodes give, in source order (one cursor over the tree, not into
/// what `binds.skip` names).
fn index_scope<'t>(scope: Node<'t>, src: &[u8], binds: &Binds, index: &mut ScopeIndex<'t>) {
    let mut pairs = Vec::new();
    let mut cur = scope.walk();
    if !cur.goto_first_child() {
        return;
    }
    loop {
        let c = cur.node();
        let mut descend = true;
        if c.is_named() {
            if (binds.skip)(c.kind()) {
                descend = false;
            } else {
                (binds.pairs)(c, &mut pairs);
                for (n, v) in pairs.drain(..) {
                    if let Ok(name) = n.utf8_text(src) {
                        index.entry(name.to_string()).or_default().push(Given {
                            start: c.start_byte(),
                            end: c.end_byte(),
                            value: v,
                        });
                    }
                }
            }
        }
        if descend && cur.goto_first_child() {
            continue;
        }
        while !cur.goto_next_sibling() {
            if !cur.goto_parent() || cur.node().id() == scope.id() {
                return;
            }
        }
    }
}
