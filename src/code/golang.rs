//! Go source: go-redis (v8/v9) and redigo calls and the keys they send, read from the syntax
//! tree (tree-sitter's Go grammar).
//!
//! Keys are followed through string literals (interpreted and raw), concatenation,
//! `fmt.Sprintf`/`fmt.Sprint`, `strconv` conversions, local variables and constants, and
//! functions of the same file that return a key, called with their arguments. A pipeline is
//! followed from `Pipeline()`/`TxPipeline()` to `Exec`, through the function given to
//! `Pipelined`/`TxPipelined`, and on a redigo connection from its `Send`s to `Flush` or
//! `Do("EXEC")`. Scripts: `Eval(ctx, src, keys, …)`, and script objects from `NewScript`.

use super::profile::{ArgShape, Profile};
use super::syntax::{self, CallKeys, DEPTH, Pipe, contains, emit, looks_plural, printf, sorted};
use super::{FileFindings, Globals, Position, SiteKind, Template, Unknown};
use std::collections::HashMap;
use tree_sitter::{Node, Parser};

/// Why a file could not be read as Go.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// The parser gave up.
    #[error("the Go parser gave up on it")]
    NoTree,
    /// Text the reader does not read (nested too deep, or more than the parser can hold).
    #[error(transparent)]
    Unreadable(#[from] super::guard::Unreadable),
}

/// The findings of one Go file under `profiles`, with what other files define.
pub fn scan(
    text: &str,
    profiles: &[Profile],
    globals: &Globals,
) -> Result<FileFindings, ParseError> {
    let tree = parse(text)?;
    let mut s = Reader {
        src: text.as_bytes(),
        text,
        profiles,
        globals,
        funcs: HashMap::new(),
        scripts: HashMap::new(),
        pipes: HashMap::new(),
        conns: Default::default(),
        bodies: HashMap::new(),
        following: Vec::new(),
        assigned: syntax::Assigned::default(),
        up: syntax::Parents::new(tree.root_node()),
        out: FileFindings::default(),
    };
    s.collect(tree.root_node());
    s.walk(tree.root_node());
    Ok(s.out)
}

fn parse(text: &str) -> Result<tree_sitter::Tree, ParseError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_go::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(ParseError::NoTree)?;
    super::guard::check_depth(&tree)?;
    Ok(tree)
}

/// What one Go file defines for the others of its tree: package-level constants and
/// variables, and functions that return a key.
pub fn exports(text: &str) -> Result<Globals, ParseError> {
    let mut out = Globals::default();
    let tree = parse(text)?;
    let none = Globals::default();
    let mut s = Reader {
        src: text.as_bytes(),
        text,
        profiles: &[],
        globals: &none,
        funcs: HashMap::new(),
        scripts: HashMap::new(),
        pipes: HashMap::new(),
        conns: Default::default(),
        bodies: HashMap::new(),
        following: Vec::new(),
        assigned: syntax::Assigned::default(),
        up: syntax::Parents::new(tree.root_node()),
        out: FileFindings::default(),
    };
    s.collect(tree.root_node());
    for (name, f) in sorted(&s.funcs) {
        if let Some((params, ret)) = f {
            out.add_func(name, params.clone(), s.template(*ret, 0));
        }
    }
    let root = tree.root_node();
    let mut cur = root.walk();
    for top in root.named_children(&mut cur) {
        if !matches!(top.kind(), "const_declaration" | "var_declaration") {
            continue;
        }
        let mut c2 = top.walk();
        for spec in top.named_children(&mut c2) {
            for (n, v) in bindings(spec) {
                out.add_const(s.t(n), s.template(v, 0));
            }
        }
    }
    Ok(out)
}

const FUNCTIONS: &[&str] = &["function_declaration", "method_declaration", "func_literal"];
const LOOPS: &[&str] = &["for_statement"];

/// A script object made by `NewScript`: its key count when it was given one (redigo).
type ScriptObject = Option<usize>;

struct Reader<'s, 't> {
    src: &'s [u8],
    text: &'s str,
    profiles: &'s [Profile],
    /// What the other Go files of the tree define.
    globals: &'s Globals,
    /// Functions by name: parameter names and the returned expression (`None`: ambiguous).
    funcs: HashMap<String, Option<(Vec<String>, Node<'t>)>>,
    /// Script objects by variable name.
    scripts: HashMap<String, ScriptObject>,
    /// Pipelines being filled, by (scope, name).
    pipes: HashMap<(usize, String), Pipe>,
    /// The pipelines that are a connection's own queue (redigo's `Send`).
    conns: std::collections::HashSet<(usize, String)>,
    /// Function and method definitions by name (`None`: two of that name in the file).
    bodies: HashMap<String, Option<Node<'t>>>,
    /// Functions being read for a pipeline handed to them (none is read inside itself).
    following: Vec<String>,
    /// The values given to names, by scope.
    assigned: syntax::Assigned<'t>,
    /// The parents of the tree's nodes.
    up: syntax::Parents<'t>,
    out: FileFindings,
}

/// A method call: its receiver, method name and arguments.
struct Call<'t> {
    node: Node<'t>,
    receiver: Node<'t>,
    method: String,
    args: Vec<Node<'t>>,
}

impl<'s, 't> Reader<'s, 't> {
    fn t(&self, n: Node<'_>) -> &'s str {
        n.utf8_text(self.src).unwrap_or("")
    }

    fn at(&self, n: Node<'_>) -> Position {
        syntax::position(self.text, n)
    }

    fn short(&self, n: Node<'_>) -> String {
        syntax::short(self.src, n)
    }

    fn any(&self, pick: impl Fn(&Profile) -> &Vec<String>, method: &str) -> bool {
        self.profiles
            .iter()
            .any(|p| pick(p).iter().any(|m| m == method))
    }

    /// Functions that return a key, and script objects.
    fn collect(&mut self, node: Node<'t>) {
        let mut cur = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cur).collect();
        for c in children {
            self.collect(c);
        }
        match node.kind() {
            "function_declaration" | "method_declaration" => {
                let Some(name) = node.child_by_field_name("name") else {
                    return;
                };
                let params = self.params(node);
                let ret = node.child_by_field_name("body").and_then(first_return);
                self.bodies
                    .entry(self.t(name).to_string())
                    .and_modify(|b| *b = None)
                    .or_insert(Some(node));
                let entry = self.funcs.entry(self.t(name).to_string());
                match (entry, ret) {
                    (std::collections::hash_map::Entry::Vacant(v), Some(r)) => {
                        v.insert(Some((params, r)));
                    }
                    (e, _) => {
                        e.insert_entry(None);
                    }
                }
            }
            "short_var_declaration" | "var_spec" | "assignment_statement" => {
                for (name, value) in bindings(node) {
                    if let Some(c) = self.call_of(value)
                        && self.any(|p| &p.scripts.new_script, &c.method)
                    {
                        let count = match c.args.as_slice() {
                            [n, _] => self.t(*n).parse::<usize>().ok(),
                            _ => None,
                        };
                        self.scripts.insert(self.t(name).to_string(), count);
                    }
                }
            }
            _ => {}
        }
    }

    fn params(&self, func: Node<'_>) -> Vec<String> {
        let Some(ps) = func.child_by_field_name("parameters") else {
            return Vec::new();
        };
        let mut names = Vec::new();
        let mut cur = ps.walk();
        for p in ps.named_children(&mut cur) {
            let mut c2 = p.walk();
            names.extend(
                p.children_by_field_name("name", &mut c2)
                    .map(|n| self.t(n).to_string()),
            );
        }
        names
    }

    fn call_of(&self, n: Node<'t>) -> Option<Call<'t>> {
        if n.kind() != "call_expression" {
            return None;
        }
        let f = n.child_by_field_name("function")?;
        if f.kind() != "selector_expression" {
            return None;
        }
        let args = n.child_by_field_name("arguments")?;
        let mut cur = args.walk();
        Some(Call {
            node: n,
            receiver: f.child_by_field_name("operand")?,
            method: self.t(f.child_by_field_name("field")?).to_string(),
            args: args.named_children(&mut cur).collect(),
        })
    }

    fn walk(&mut self, node: Node<'t>) {
        // A function given to `Pipelined`: its pipeline parameter is filled by the body, and
        // sent when the call returns.
        let block = self.call_of(node).and_then(|c| self.block_pipe(&c));
        if let Some((key, atomic)) = &block {
            self.pipes.insert(
                key.clone(),
                Pipe::new(*atomic, (node.start_byte(), node.end_byte())),
            );
        }
        let mut cur = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cur).collect();
        for c in children {
            self.walk(c);
        }
        if let Some((key, _)) = block {
            self.run_pipe(&key, node, false);
            self.pipes.remove(&key);
            return;
        }
        if node.kind() == "call_expression" {
            self.hand_off(node);
        }
        if let Some(c) = self.call_of(node) {
            self.call(c);
        } else {
            for (name, value) in bindings(node) {
                if let Some(atomic) = self.call_of(value).and_then(|c| self.makes_pipe(&c)) {
                    self.pipes.insert(
                        (scope_of(&self.up, node), self.t(name).to_string()),
                        Pipe::new(atomic, (node.start_byte(), node.end_byte())),
                    );
                }
            }
        }
    }

    /// Whether `c` makes a pipeline, and whether it is MULTI/EXEC.
    fn makes_pipe(&self, c: &Call<'_>) -> Option<bool> {
        self.profiles.iter().find_map(|p| {
            if p.pipeline.make_atomic.contains(&c.method) {
                Some(true)
            } else if p.pipeline.make.contains(&c.method) {
                Some(p.pipeline.atomic_by_default)
            } else {
                None
            }
        })
    }

    /// `rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error { … })`: the pipeline's key
    /// (the function, its first parameter) and whether it is MULTI/EXEC.
    fn block_pipe(&self, c: &Call<'t>) -> Option<((usize, String), bool)> {
        let atomic = if self.any(|p| &p.pipeline.block_atomic, &c.method) {
            true
        } else if self.any(|p| &p.pipeline.block, &c.method) {
            false
        } else {
            return None;
        };
        let f = c.args.iter().find(|a| a.kind() == "func_literal")?;
        let param = self.params(*f).into_iter().next()?;
        Some(((f.start_byte(), param), atomic))
    }

    /// The pipeline a receiver names: a variable holding one, or a chain from the call that
    /// makes one.
    fn pipe_of(&mut self, receiver: Node<'t>) -> Option<(usize, String)> {
        match receiver.kind() {
            "identifier" => {
                let key = (scope_of(&self.up, receiver), self.t(receiver).to_string());
                self.pipes.contains_key(&key).then_some(key)
            }
            "call_expression" => {
                let c = self.call_of(receiver)?;
                let atomic = self.makes_pipe(&c)?;
                let key = (receiver.start_byte(), String::new());
                self.pipes.entry(key.clone()).or_insert_with(|| {
                    Pipe::new(atomic, (receiver.start_byte(), receiver.end_byte()))
                });
                Some(key)
            }
            "parenthesized_expression" => self.pipe_of(receiver.named_child(0)?),
            _ => None,
        }
    }

    /// `addJob(ctx, pipe, job)`, `s.enqueue(pipe, j)`: what the function queues on the
    /// pipeline it is handed goes into it (its body read when the file defines it once), or
    /// the pipeline depends on it.
    fn hand_off(&mut self, node: Node<'t>) {
        let (Some(f), Some(args)) = (
            node.child_by_field_name("function"),
            node.child_by_field_name("arguments"),
        ) else {
            return;
        };
        let (receiver, name) = match f.kind() {
            "identifier" => (None, self.t(f).to_string()),
            "selector_expression" => match (
                f.child_by_field_name("operand"),
                f.child_by_field_name("field"),
            ) {
                (Some(o), Some(n)) => (Some(o), self.t(n).to_string()),
                _ => return,
            },
            _ => return,
        };
        let own = receiver
            .filter(|r| r.kind() == "identifier")
            .map(|r| (scope_of(&self.up, r), self.t(r).to_string()));
        let mut cur = args.walk();
        let list: Vec<Node<'t>> = args
            .named_children(&mut cur)
            .filter(|a| a.kind() != "comment")
            .collect();
        for (pos, a) in list.iter().enumerate() {
            if a.kind() != "identifier" {
                continue;
            }
            let key = (scope_of(&self.up, *a), self.t(*a).to_string());
            if !self.pipes.contains_key(&key) || own.as_ref() == Some(&key) {
                continue;
            }
            let def = self.bodies.get(&name).copied().flatten().filter(|_| {
                !self.following.contains(&name) && self.following.len() < syntax::DEPTH / 2
            });
            let param = def.and_then(|d| self.params(d).get(pos).cloned());
            let queued = match (def, param) {
                (Some(d), Some(param)) => syntax::follow(self, d, &name, param),
                _ => None,
            };
            let callee = match receiver {
                Some(r) => format!("{}.{name}", syntax::short_str(self.t(r))),
                None => name.clone(),
            };
            let Some(p) = self.pipes.get_mut(&key) else {
                continue;
            };
            let in_loop = syntax::in_loop_since(&self.up, node, p.made, LOOPS);
            p.hand_followed(&callee, queued, in_loop);
        }
    }

    fn call(&mut self, c: Call<'t>) {
        let pipe = self.pipe_of(c.receiver);
        if let Some(key) = &pipe
            && (self.any(|p| &p.pipeline.run, &c.method)
                || self.any(|p| &p.pipeline.run_plain, &c.method))
        {
            let plain = self.any(|p| &p.pipeline.run_plain, &c.method);
            self.run_pipe(key, c.node, plain);
            // A connection's queue (redigo) starts again empty once flushed.
            if self.conns.remove(key) {
                self.pipes.remove(key);
            }
            return;
        }
        // A script object: `script.Run(ctx, rdb, keys, args...)`, `script.Do(conn, k…, a…)`.
        if let Some(count) = self.script_object(c.receiver) {
            let counted = self.any(|p| &p.scripts.run_counted, &c.method);
            if counted || self.any(|p| &p.scripts.run_list, &c.method) {
                let mut keys = CallKeys::default();
                match (counted, count) {
                    (true, Some(n)) => self.listed_keys(c.args.iter().skip(1).take(n), &mut keys),
                    (true, None) => {
                        keys.unknown = Some(Unknown::RuntimeList(self.short(c.receiver)));
                    }
                    (false, _) => {
                        if let Some(k) = c.args.get(2) {
                            self.list_into(*k, &mut keys);
                        }
                    }
                }
                self.send(&c, pipe.as_ref(), SiteKind::Script, "EVALSHA", keys);
                return;
            }
        }
        let ctx = usize::from(self.profiles.iter().any(|p| p.context_first));
        if self.any(|p| &p.scripts.eval_list, &c.method) && self.redis_receiver(c.receiver) {
            let mut keys = CallKeys::default();
            if let Some(k) = c.args.get(ctx + 1) {
                self.list_into(*k, &mut keys);
            }
            let op = c.method.to_ascii_uppercase();
            self.send(&c, pipe.as_ref(), SiteKind::Script, &op, keys);
            return;
        }
        // redigo: `conn.Send("SET", k, v)` queues on the connection; `conn.Do("EXEC")` sends
        // what was queued; `conn.Do("MGET", a, b)` sends one command.
        let raw_queue = self.any(|p| &p.pipeline.queue_raw, &c.method);
        if raw_queue || self.any(|p| &p.raw, &c.method) {
            let Some(first) = c.args.first() else { return };
            let name = self.template(*first, 0);
            if !name.is_literal() {
                return;
            }
            let cmd = name.text().to_ascii_uppercase();
            let conn = (scope_of(&self.up, c.node), self.t(c.receiver).to_string());
            if raw_queue {
                self.conns.insert(conn.clone());
            }
            match cmd.as_str() {
                "MULTI" => {
                    let p = self.pipes.entry(conn).or_insert_with(|| {
                        Pipe::new(true, (c.node.start_byte(), c.node.end_byte()))
                    });
                    p.atomic = true;
                }
                "EXEC" | "" => {
                    self.run_pipe(&conn, c.node, false);
                    self.pipes.remove(&conn);
                    self.conns.remove(&conn);
                }
                _ => {
                    let keys = self.line_keys(&cmd, &c.args[1..]);
                    if raw_queue {
                        self.pipes.entry(conn.clone()).or_insert_with(|| {
                            Pipe::new(false, (c.node.start_byte(), c.node.end_byte()))
                        });
                        self.send(&c, Some(&conn), SiteKind::Command, &cmd, keys);
                    } else if let Some(open) = self.pipes.get(&conn).map(|p| p.atomic) {
                        // Inside MULTI, `Do` queues until EXEC; else it sends what `Send`
                        // queued, then its own command.
                        self.send(&c, Some(&conn), SiteKind::Command, &cmd, keys);
                        if !open {
                            self.run_pipe(&conn, c.node, false);
                            self.pipes.remove(&conn);
                            self.conns.remove(&conn);
                        }
                    } else {
                        self.send(&c, None, SiteKind::Command, &cmd, keys);
                    }
                }
            }
            return;
        }
        // A command method: named in a profile, or named like a command.
        let Some((cmd, how)) = syntax::command_of(self.profiles, &c.method) else {
            return;
        };
        if pipe.is_none() && !self.redis_receiver(c.receiver) {
            return;
        }
        let args = &c.args[ctx.min(c.args.len())..];
        let keys = match how {
            Some(how) => self.shaped_keys(args, how, &cmd),
            None => self.line_keys(&cmd, args),
        };
        self.send(&c, pipe.as_ref(), SiteKind::Command, &cmd, keys);
    }

    fn script_object(&self, receiver: Node<'_>) -> Option<ScriptObject> {
        (receiver.kind() == "identifier")
            .then(|| self.scripts.get(self.t(receiver)).copied())
            .flatten()
    }

    fn send(
        &mut self,
        c: &Call<'t>,
        pipe: Option<&(usize, String)>,
        kind: SiteKind,
        op: &str,
        keys: CallKeys,
    ) {
        let at = self.at(c.node);
        let pipe = pipe.and_then(|k| self.pipes.get_mut(k)).map(|p| {
            let in_loop = syntax::in_loop_since(&self.up, c.node, p.made, LOOPS);
            (p, in_loop)
        });
        emit(&mut self.out, at, kind, op, keys, pipe);
    }

    fn run_pipe(&mut self, key: &(usize, String), call: Node<'_>, plain: bool) {
        let at = self.at(call);
        let text = self.text;
        if let Some(site) = self
            .pipes
            .get_mut(key)
            .and_then(|p| p.send(text, at, plain))
        {
            self.out.sites.push(site);
        }
    }

    /// Whether a receiver reads as a Redis client, connection or pipeline.
    fn redis_receiver(&self, receiver: Node<'_>) -> bool {
        let text = self.t(receiver);
        let last = text
            .rsplit(['.', ' ', '('])
            .next()
            .unwrap_or(text)
            .to_ascii_lowercase();
        [
            "r", "c", "rc", "rd", "rdb", "db", "cli", "red", "cluster", "pipe", "tx", "p",
        ]
        .contains(&last.as_str())
            || [
                "redis", "client", "conn", "cache", "pipe", "store", "valkey", "pool",
            ]
            .iter()
            .any(|w| last.contains(w))
    }

    /// The keys of a command whose arguments are the command line (slices flattened).
    fn line_keys(&self, cmd: &str, args: &[Node<'t>]) -> CallKeys {
        let mut keys = CallKeys::default();
        let mut flat: Vec<Node<'t>> = Vec::new();
        for a in args {
            match composite_items(*a) {
                Some(items) => flat.extend(items),
                None => flat.push(*a),
            }
        }
        let spread = flat.iter().position(|a| a.kind() == "variadic_argument");
        let templates = flat.iter().map(|a| self.template(*a, 0));
        match syntax::key_positions(cmd, templates) {
            Some(positions) => {
                for p in positions {
                    if let Some(s) = spread
                        && p >= s
                    {
                        keys.unknown = Some(Unknown::RuntimeList(self.short(flat[s])));
                        break;
                    }
                    if let Some(a) = flat.get(p) {
                        keys.keys.push(self.template(*a, 0));
                    }
                }
            }
            // A spread hides keys only of a command that takes keys (not `CLUSTER`, `PING`).
            None => {
                if let Some(s) = spread.filter(|_| syntax::takes_keys(cmd)) {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(flat[s])));
                }
            }
        }
        keys
    }

    fn shaped_keys(&self, args: &[Node<'t>], how: ArgShape, cmd: &str) -> CallKeys {
        let mut keys = CallKeys::default();
        match how {
            ArgShape::None => {}
            ArgShape::Args | ArgShape::Mapping => return self.line_keys(cmd, args),
            ArgShape::List => self.listed_keys(args.iter(), &mut keys),
            ArgShape::SkipFirst => self.listed_keys(args.iter().skip(1), &mut keys),
            ArgShape::First => self.listed_keys(args.iter().take(1), &mut keys),
            ArgShape::DestList | ArgShape::OpDestList => {
                let skip = usize::from(how == ArgShape::OpDestList);
                if let Some(d) = args.get(skip) {
                    keys.keys.push(self.template(*d, 0));
                }
                self.listed_keys(args.iter().skip(skip + 1), &mut keys);
            }
        }
        keys
    }

    fn listed_keys<'a>(&self, args: impl Iterator<Item = &'a Node<'t>>, keys: &mut CallKeys)
    where
        't: 'a,
    {
        for a in args {
            self.list_into(*a, keys);
        }
    }

    /// Keys from one argument that is a key, a slice literal, or a slice passed on (`k...`).
    fn list_into(&self, a: Node<'t>, keys: &mut CallKeys) {
        if let Some(items) = composite_items(a) {
            for i in items {
                self.list_into(i, keys);
            }
            return;
        }
        match a.kind() {
            "variadic_argument" => match a.named_child(0) {
                Some(inner) if composite_items(inner).is_some() => self.list_into(inner, keys),
                _ => keys.unknown = Some(Unknown::RuntimeList(self.short(a))),
            },
            "identifier" => match self.local_value(a, self.t(a), 0) {
                Some(v) if composite_items(v).is_some() => self.list_into(v, keys),
                _ if looks_plural(self.t(a)) => {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
                }
                _ => keys.keys.push(self.template(a, 0)),
            },
            _ => keys.keys.push(self.template(a, 0)),
        }
    }

    /// The value last given to `name` before `at` in its function, else at the top of the file.
    fn local_value(&self, at: Node<'t>, name: &str, depth: usize) -> Option<Node<'t>> {
        if depth > DEPTH {
            return None;
        }
        for p in self.up.around(at) {
            if FUNCTIONS.contains(&p.kind()) || self.up.of(p).is_none() {
                let found = self
                    .assigned
                    .last(p, name, at.start_byte(), self.src, &BINDS);
                if found.is_some() {
                    return found;
                }
            }
        }
        None
    }

    fn template(&self, n: Node<'t>, depth: usize) -> Template {
        if depth > DEPTH {
            return Template::var(self.short(n));
        }
        match n.kind() {
            "interpreted_string_literal" => {
                let mut t = Template::default();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    match c.kind() {
                        "escape_sequence" => t.push_lit(&syntax::unescape(self.t(c))),
                        _ => t.push_lit(self.t(c)),
                    }
                }
                t
            }
            "raw_string_literal" => {
                let raw = self.t(n);
                Template::lit(raw.trim_start_matches('`').trim_end_matches('`'))
            }
            "int_literal" => Template::lit(self.t(n)),
            "parenthesized_expression" => n.named_child(0).map_or_else(
                || Template::var(self.short(n)),
                |c| self.template(c, depth + 1),
            ),
            "binary_expression" => {
                let (Some(l), Some(r), Some(op)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                    n.child_by_field_name("operator"),
                ) else {
                    return Template::var(self.short(n));
                };
                if self.t(op) != "+" {
                    return Template::var(self.short(n));
                }
                let mut t = self.template(l, depth + 1);
                t.push(self.template(r, depth + 1));
                t
            }
            "identifier" => {
                let name = self.t(n);
                match self.local_value(n, name, depth) {
                    Some(v) if !contains(v, n) => {
                        let t = self.template(v, depth + 1);
                        // A value that is itself unknown keeps the variable's name.
                        if t.parts.len() == 1 && !t.is_literal() {
                            Template::var(name)
                        } else {
                            t
                        }
                    }
                    Some(_) => Template::var(name),
                    None => self
                        .globals
                        .constant(name)
                        .filter(|_| !syntax::is_parameter(&self.up, n, name, self.src, FUNCTIONS))
                        .unwrap_or_else(|| Template::var(name)),
                }
            }
            // `keys.Prefix`: a constant of another file (package).
            "selector_expression" => n
                .child_by_field_name("field")
                .and_then(|f| self.globals.constant(self.t(f)))
                .unwrap_or_else(|| Template::var(self.short(n))),
            "call_expression" => self.call_template(n, depth),
            _ => Template::var(self.short(n)),
        }
    }

    /// `fmt.Sprintf(…)`, `fmt.Sprint(…)`, `strconv.Itoa(x)`, `string(x)`, or a helper.
    fn call_template(&self, n: Node<'t>, depth: usize) -> Template {
        let (Some(f), Some(args)) = (
            n.child_by_field_name("function"),
            n.child_by_field_name("arguments"),
        ) else {
            return Template::var(self.short(n));
        };
        let mut cur = args.walk();
        let args: Vec<Node<'t>> = args.named_children(&mut cur).collect();
        let name = self.t(f);
        match name {
            "fmt.Sprintf" => {
                let Some(format) = args.first().map(|a| self.template(*a, depth + 1)) else {
                    return Template::var(self.short(n));
                };
                if !format.is_literal() {
                    return Template::var(self.short(n));
                }
                let mut rest = args[1..].iter();
                printf(&format.text(), || {
                    rest.next().map(|a| self.interpolated(*a, depth))
                })
                .unwrap_or_else(|| Template::var(self.short(n)))
            }
            "fmt.Sprint" => {
                let mut t = Template::default();
                for a in &args {
                    t.push(self.interpolated(*a, depth));
                }
                t
            }
            "strconv.Itoa" | "strconv.FormatInt" | "strconv.FormatUint" | "string" => {
                args.first().map_or_else(
                    || Template::var(self.short(n)),
                    |a| self.interpolated(*a, depth),
                )
            }
            "strings.Join" => {
                let (Some(items), Some(sep)) = (
                    args.first().and_then(|a| composite_items(*a)),
                    args.get(1).map(|s| self.template(*s, depth + 1)),
                ) else {
                    return Template::var(self.short(n));
                };
                let mut t = Template::default();
                for (i, item) in items.into_iter().enumerate() {
                    if i > 0 {
                        t.push(sep.clone());
                    }
                    t.push(self.interpolated(item, depth));
                }
                t
            }
            _ if f.kind() == "identifier" => self.helper(name, &args, n, depth),
            // `keys.User(id)`: a key function of another package of the tree.
            _ if f.kind() == "selector_expression" => f
                .child_by_field_name("field")
                .and_then(|field| {
                    self.globals.call(self.t(field), &[], |i| {
                        args.get(i).map(|a| self.template(*a, depth + 1))
                    })
                })
                .unwrap_or_else(|| Template::var(self.short(n))),
            _ => Template::var(self.short(n)),
        }
    }

    /// A value inside a key: its template, or a placeholder named after it.
    fn interpolated(&self, e: Node<'t>, depth: usize) -> Template {
        let t = self.template(e, depth + 1);
        if t.is_literal()
            || t.parts.len() > 1
            || !matches!(e.kind(), "identifier" | "selector_expression")
        {
            return t;
        }
        Template::var(self.short(e))
    }

    fn helper(&self, name: &str, args: &[Node<'t>], call: Node<'t>, depth: usize) -> Template {
        let Some(Some((params, ret))) = self.funcs.get(name) else {
            return self
                .globals
                .call(name, &[], |i| {
                    args.get(i).map(|a| self.template(*a, depth + 1))
                })
                .unwrap_or_else(|| Template::var(self.short(call)));
        };
        let params: Vec<&str> = params.iter().map(String::as_str).collect();
        let body = self.template(*ret, depth + 1);
        syntax::bind(body, &params, |i| {
            args.get(i).map(|a| self.template(*a, depth + 1))
        })
    }
}

/// `a, b := x, y`, `var a = x`, `const a = x`, `a = x`: each name with its value.
fn bindings(node: Node<'_>) -> Vec<(Node<'_>, Node<'_>)> {
    let (names, values) = match node.kind() {
        "short_var_declaration" | "assignment_statement" => (
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
        ),
        "var_spec" | "const_spec" => {
            let mut cur = node.walk();
            let names: Vec<Node<'_>> = node.children_by_field_name("name", &mut cur).collect();
            let values = node.child_by_field_name("value");
            let vals: Vec<Node<'_>> = values.map_or_else(Vec::new, |v| {
                let mut c2 = v.walk();
                v.named_children(&mut c2).collect()
            });
            return names.into_iter().zip(vals).collect();
        }
        _ => return Vec::new(),
    };
    let (Some(names), Some(values)) = (names, values) else {
        return Vec::new();
    };
    let mut c1 = names.walk();
    let mut c2 = values.walk();
    let names: Vec<Node<'_>> = names.named_children(&mut c1).collect();
    let values: Vec<Node<'_>> = values.named_children(&mut c2).collect();
    if names.len() != values.len() {
        return Vec::new();
    }
    names
        .into_iter()
        .zip(values)
        .filter(|(n, _)| n.kind() == "identifier")
        .collect()
}

/// How Go gives a name a value: `:=`, `=`, `var`/`const`, not in nested functions.
const BINDS: syntax::Binds = syntax::Binds {
    skip: |kind| FUNCTIONS.contains(&kind),
    pairs: |c, out| out.extend(bindings(c)),
    ended: false,
};

/// The items of a slice literal (`[]string{a, b}`), or `None`.
fn composite_items(n: Node<'_>) -> Option<Vec<Node<'_>>> {
    if n.kind() != "composite_literal" {
        return None;
    }
    let body = n.child_by_field_name("body")?;
    let mut cur = body.walk();
    let items = body
        .named_children(&mut cur)
        .filter_map(|e| match e.kind() {
            "literal_element" => e.named_child(0),
            "keyed_element" => None,
            _ => Some(e),
        })
        .collect();
    Some(items)
}

/// The first expression a function body returns.
fn first_return(body: Node<'_>) -> Option<Node<'_>> {
    let mut cur = body.walk();
    for c in body.named_children(&mut cur) {
        if FUNCTIONS.contains(&c.kind()) {
            continue;
        }
        if c.kind() == "return_statement" {
            return c.named_child(0).and_then(|l| match l.kind() {
                "expression_list" => l.named_child(0),
                _ => Some(l),
            });
        }
        if let Some(r) = first_return(c) {
            return Some(r);
        }
    }
    None
}

/// Where the function around `n` starts (0: the file).
fn scope_of<'t>(up: &syntax::Parents<'t>, n: Node<'t>) -> usize {
    syntax::scope_start(up, n, FUNCTIONS)
}

impl<'t> syntax::Follows<'t> for Reader<'_, 't> {
    fn pipes(&mut self) -> &mut HashMap<(usize, String), Pipe> {
        &mut self.pipes
    }

    fn findings(&mut self) -> &mut FileFindings {
        &mut self.out
    }

    fn following(&mut self) -> &mut Vec<String> {
        &mut self.following
    }

    fn walk_body(&mut self, body: Node<'t>) {
        self.walk(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{Verdict, texts};

    fn scan_go(src: &str) -> FileFindings {
        scan(src, &Profile::builtin("go"), &Globals::default()).unwrap()
    }

    #[test]
    fn pipelines_handed_to_functions() {
        let f = scan_go(
            r#"package q
func addJob(ctx context.Context, pipe redis.Pipeliner, id string) {
	pipe.HSet(ctx, "job:"+id, "state", "queued")
	pipe.RPush(ctx, "queue:default", id)
}
func Enqueue(ctx context.Context, rdb *redis.Client, id string) error {
	pipe := rdb.TxPipeline()
	addJob(ctx, pipe, id)
	_, err := pipe.Exec(ctx)
	return err
}
func Touch(ctx context.Context, rdb *redis.Client, id string) error {
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		other.Fill(ctx, p)
		return nil
	})
	return err
}
"#,
        );
        assert_eq!(f.sites.len(), 2, "{:?}", f.sites);
        assert_eq!(f.sites[0].op, "HSET RPUSH");
        assert_eq!(texts(&f.sites[0]), ["job:<id>", "queue:default"]);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        // A function the file does not define: the site depends on it.
        assert_eq!(f.sites[1].op, "other.Fill()");
        assert!(matches!(f.sites[1].verdict(), Verdict::Depends(_)));
    }

    #[test]
    fn go_redis_forms() {
        let f = scan_go(
            r#"
package store
const prefix = "app"
func userKey(uid string) string { return fmt.Sprintf("%s:user:%s", prefix, uid) }
var lockScript = redis.NewScript(`return 1`)
func load(ctx context.Context, rdb *redis.Client, uid string, ids []string) {
	rdb.MGet(ctx, userKey(uid), prefix+":settings:"+uid)
	rdb.MGet(ctx, "u:{"+uid+"}:a", "u:{"+uid+"}:b")
	pipe := rdb.TxPipeline()
	pipe.Get(ctx, "a:"+uid)
	pipe.Incr(ctx, "stats")
	pipe.Exec(ctx)
	rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Get(ctx, "item:"+id)
		}
		return nil
	})
	rdb.Del(ctx, ids...)
	rdb.BLPop(ctx, time.Second, "q:"+uid, "q2:"+uid)
	rdb.Eval(ctx, "return 1", []string{"l:{" + uid + "}", "l:{" + uid + "}:o"}, 1)
	lockScript.Run(ctx, rdb, []string{"x:" + uid, "y:" + uid}, "tok")
	rdb.Get(ctx, strconv.Itoa(7))
}
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            [
                "MGET", "MGET", "GET INCR", "GET", "DEL", "BLPOP", "EVAL", "EVALSHA"
            ],
            "{:?}",
            f.sites
        );
        assert_eq!(texts(&f.sites[0]), ["app:user:<uid>", "app:settings:<uid>"]);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[2].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[2].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(f.sites[3].kind, SiteKind::Pipeline);
        assert!(matches!(f.sites[3].verdict(), Verdict::Depends(_)));
        assert!(matches!(f.sites[4].verdict(), Verdict::Depends(_)));
        assert_eq!(texts(&f.sites[5]), ["q:<uid>", "q2:<uid>"]);
        assert!(matches!(f.sites[6].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(f.sites[7].verdict(), Verdict::CrossSlot(_)));
        assert!(f.keys.iter().any(|k| k.template.text() == "7"));
    }

    #[test]
    fn redigo_forms() {
        let f = scan_go(
            r#"
package store
var getScript = redis.NewScript(2, `return 1`)
func save(c redis.Conn, id string) {
	c.Send("MULTI")
	c.Send("SET", "s:"+id, 1)
	c.Send("EXPIRE", "t:"+id, 60)
	c.Do("EXEC")
	c.Do("MGET", fmt.Sprintf("a:{%s}", id), fmt.Sprintf("b:{%s}", id))
	c.Send("GET", "x:"+id)
	c.Send("GET", "y:"+id)
	c.Flush()
	getScript.Do(c, "k1:"+id, "k2:"+id, "arg")
	c.Do("MULTI")
	c.Do("SET", "m{"+id+"}1", 1)
	c.Do("SET", "m{"+id+"}2", 2)
	c.Do("EXEC")
	c.Do("CLUSTER", args...)
}
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            ["SET EXPIRE", "MGET", "GET GET", "EVALSHA", "SET SET"],
            "{:?}",
            f.sites
        );
        assert_eq!(f.sites[4].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[4].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[0].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[2].kind, SiteKind::Pipeline);
        assert_eq!(texts(&f.sites[3]), ["k1:<id>", "k2:<id>"]);
        assert!(matches!(f.sites[3].verdict(), Verdict::CrossSlot(_)));
    }
}
