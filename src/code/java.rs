//! Java source: Jedis, Lettuce, Spring Data Redis and Redisson calls and the keys they send,
//! read from the syntax tree (tree-sitter's Java grammar).
//!
//! Keys are followed through string literals, concatenation, `String.format`,
//! `String.valueOf`/`toString()`/`getBytes()`, `String.join`, local variables, fields and
//! constants of the file, and methods of the file that return a key, called with their
//! arguments. A pipeline is followed from the call that makes it (`jedis.pipelined()`,
//! `jedis.multi()`, `redisson.createBatch()`) to the one that sends it (`sync()`, `exec()`,
//! `execute()`), through the callback given to Spring's `executePipelined`, and on a
//! connection or template from `multi()` to `exec()` (Lettuce, Spring's `SessionCallback`).

use super::profile::{ArgShape, Profile};
use super::syntax::{self, CallKeys, DEPTH, Pipe, contains, emit, looks_plural, printf, sorted};
use super::{FileFindings, Globals, Position, SiteKind, Template, Unknown};
use std::collections::HashMap;
use tree_sitter::{Node, Parser};

/// Why a file could not be read as Java.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// The parser gave up.
    #[error("the Java parser gave up on it")]
    NoTree,
    /// Text the reader does not read (nested too deep, or more than the parser can hold).
    #[error(transparent)]
    Unreadable(#[from] super::guard::Unreadable),
}

/// The findings of one Java file under `profiles`, with what other files define.
pub fn scan(
    text: &str,
    profiles: &[Profile],
    globals: &Globals,
) -> Result<FileFindings, ParseError> {
    let tree = parse(text)?;
    let mut r = Reader {
        src: text.as_bytes(),
        text,
        profiles,
        globals,
        methods: HashMap::new(),
        fields: HashMap::new(),
        pipes: HashMap::new(),
        assigned: syntax::Assigned::default(),
        up: syntax::Parents::new(tree.root_node()),
        out: FileFindings::default(),
    };
    r.collect(tree.root_node());
    r.walk(tree.root_node());
    Ok(r.out)
}

fn parse(text: &str) -> Result<tree_sitter::Tree, ParseError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_java::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(ParseError::NoTree)?;
    super::guard::check_depth(&tree)?;
    Ok(tree)
}

/// What one Java file defines for the others: its fields and constants with a value, and
/// methods that return a key.
pub fn exports(text: &str) -> Result<Globals, ParseError> {
    let mut out = Globals::default();
    let tree = parse(text)?;
    let none = Globals::default();
    let mut r = Reader {
        src: text.as_bytes(),
        text,
        profiles: &[],
        globals: &none,
        methods: HashMap::new(),
        fields: HashMap::new(),
        pipes: HashMap::new(),
        assigned: syntax::Assigned::default(),
        up: syntax::Parents::new(tree.root_node()),
        out: FileFindings::default(),
    };
    r.collect(tree.root_node());
    for (name, v) in sorted(&r.fields) {
        if let Some(v) = v {
            out.add_const(name, r.template(*v, 0));
        }
    }
    for (name, m) in sorted(&r.methods) {
        if let Some((params, ret)) = m {
            out.add_func(name, params.clone(), r.template(*ret, 0));
        }
    }
    Ok(out)
}

const SCOPES: &[&str] = &[
    "method_declaration",
    "constructor_declaration",
    "lambda_expression",
];
const LOOPS: &[&str] = &[
    "for_statement",
    "enhanced_for_statement",
    "while_statement",
    "do_statement",
];

struct Reader<'s, 't> {
    src: &'s [u8],
    text: &'s str,
    profiles: &'s [Profile],
    /// What the other Java files of the tree define.
    globals: &'s Globals,
    /// Methods by name: parameter names and the returned expression (`None`: ambiguous).
    methods: HashMap<String, Option<(Vec<String>, Node<'t>)>>,
    /// Fields and constants with an initial value (`None`: declared twice).
    fields: HashMap<String, Option<Node<'t>>>,
    /// Pipelines being filled, by (scope, name).
    pipes: HashMap<(usize, String), Pipe>,
    /// The values given to names, by scope.
    assigned: syntax::Assigned<'t>,
    /// The parents of the tree's nodes.
    up: syntax::Parents<'t>,
    out: FileFindings,
}

/// A method call: receiver (if any), name and arguments.
struct Call<'t> {
    node: Node<'t>,
    receiver: Option<Node<'t>>,
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

    fn collect(&mut self, node: Node<'t>) {
        let mut cur = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cur).collect();
        for c in children {
            self.collect(c);
        }
        match node.kind() {
            "method_declaration" => {
                let Some(name) = node.child_by_field_name("name") else {
                    return;
                };
                let params = self.params(node);
                let ret = node.child_by_field_name("body").and_then(first_return);
                let key = self.t(name).to_string();
                match ret {
                    Some(r) if !self.methods.contains_key(&key) => {
                        self.methods.insert(key, Some((params, r)));
                    }
                    _ => {
                        self.methods.insert(key, None);
                    }
                }
            }
            "field_declaration" => {
                let mut cur = node.walk();
                for d in node.children_by_field_name("declarator", &mut cur) {
                    if let (Some(n), Some(v)) = (
                        d.child_by_field_name("name"),
                        d.child_by_field_name("value"),
                    ) {
                        self.fields
                            .entry(self.t(n).to_string())
                            .and_modify(|e| *e = None)
                            .or_insert(Some(v));
                    }
                }
            }
            _ => {}
        }
    }

    fn params(&self, m: Node<'_>) -> Vec<String> {
        let Some(ps) = m.child_by_field_name("parameters") else {
            return Vec::new();
        };
        if ps.kind() == "identifier" {
            return vec![self.t(ps).to_string()];
        }
        let mut cur = ps.walk();
        ps.named_children(&mut cur)
            .map(|p| match p.child_by_field_name("name") {
                Some(n) => self.t(n).to_string(),
                None => self.t(p).to_string(),
            })
            .collect()
    }

    fn call_of(&self, n: Node<'t>) -> Option<Call<'t>> {
        if n.kind() != "method_invocation" {
            return None;
        }
        let args = n.child_by_field_name("arguments")?;
        let mut cur = args.walk();
        Some(Call {
            node: n,
            receiver: n.child_by_field_name("object"),
            method: self.t(n.child_by_field_name("name")?).to_string(),
            args: args.named_children(&mut cur).collect(),
        })
    }

    fn walk(&mut self, node: Node<'t>) {
        // `executePipelined(connection -> { … })`: the callback's parameter is a pipeline
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
            let at = self.at(node);
            let text = self.text;
            if let Some(site) = self
                .pipes
                .remove(&key)
                .and_then(|mut p| p.send(text, at, false))
            {
                self.out.sites.push(site);
            }
            return;
        }
        if let Some(c) = self.call_of(node) {
            self.call(c);
        } else if node.kind() == "variable_declarator" || node.kind() == "assignment_expression" {
            let (name, value) = match node.kind() {
                "variable_declarator" => (
                    node.child_by_field_name("name"),
                    node.child_by_field_name("value"),
                ),
                _ => (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ),
            };
            if let (Some(name), Some(value)) = (name, value)
                && let Some(atomic) = self.call_of(value).and_then(|c| self.makes_pipe(&c))
            {
                self.pipes.insert(
                    (scope_of(&self.up, node), self.t(name).to_string()),
                    Pipe::new(atomic, (node.start_byte(), node.end_byte())),
                );
            }
        }
    }

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

    fn block_pipe(&self, c: &Call<'t>) -> Option<((usize, String), bool)> {
        let atomic = if self.any(|p| &p.pipeline.block_atomic, &c.method) {
            true
        } else if self.any(|p| &p.pipeline.block, &c.method) {
            false
        } else {
            return None;
        };
        let lambda = c.args.iter().find_map(|a| match a.kind() {
            "lambda_expression" => Some(*a),
            "cast_expression" => a
                .child_by_field_name("value")
                .filter(|v| v.kind() == "lambda_expression"),
            _ => None,
        })?;
        let param = self.params(lambda).into_iter().next()?;
        Some(((lambda.start_byte(), param), atomic))
    }

    /// The pipeline a receiver names: a variable holding one (also at the root of a chain,
    /// `connection.stringCommands().get(…)`), or a chain from the call that makes one.
    fn pipe_of(&mut self, receiver: Node<'t>) -> Option<(usize, String)> {
        match receiver.kind() {
            "identifier" => {
                let name = self.t(receiver).to_string();
                // The variable may be a callback's parameter: look in each scope outwards.
                for q in self.up.around(receiver) {
                    if SCOPES.contains(&q.kind()) {
                        let key = (q.start_byte(), name.clone());
                        if self.pipes.contains_key(&key) {
                            return Some(key);
                        }
                    }
                }
                let key = (0, name);
                self.pipes.contains_key(&key).then_some(key)
            }
            "method_invocation" => {
                let c = self.call_of(receiver)?;
                if let Some(atomic) = self.makes_pipe(&c) {
                    let key = (receiver.start_byte(), String::new());
                    self.pipes.entry(key.clone()).or_insert_with(|| {
                        Pipe::new(atomic, (receiver.start_byte(), receiver.end_byte()))
                    });
                    return Some(key);
                }
                self.pipe_of(c.receiver?)
            }
            "parenthesized_expression" => self.pipe_of(receiver.named_child(0)?),
            _ => None,
        }
    }

    fn call(&mut self, c: Call<'t>) {
        let Some(receiver) = c.receiver else { return };
        let pipe = self.pipe_of(receiver);
        if let Some(key) = &pipe
            && (self.any(|p| &p.pipeline.run, &c.method)
                || self.any(|p| &p.pipeline.run_plain, &c.method))
        {
            let plain = self.any(|p| &p.pipeline.run_plain, &c.method);
            let at = self.at(c.node);
            let text = self.text;
            if let Some(site) = self
                .pipes
                .get_mut(key)
                .and_then(|p| p.send(text, at, plain))
            {
                self.out.sites.push(site);
            }
            return;
        }
        // `commands.multi(); … commands.exec();` on a connection or template (Lettuce,
        // Spring's SessionCallback): the commands between are one transaction.
        let conn = (scope_of(&self.up, c.node), self.t(receiver).to_string());
        if pipe.is_none()
            && c.args.is_empty()
            && c.method == "multi"
            && self
                .up
                .of(c.node)
                .is_some_and(|p| p.kind() == "expression_statement")
        {
            self.pipes.insert(
                conn,
                Pipe::new(true, (c.node.start_byte(), c.node.end_byte())),
            );
            return;
        }
        if !self.redis_receiver(receiver) && pipe.is_none() {
            return;
        }
        // Scripts: `eval(src, numkeys, keys…)`, `eval(src, keys, args)`,
        // `execute(script, keys, args…)`.
        let numkeys = c
            .args
            .get(1)
            .is_some_and(|a| a.kind() == "decimal_integer_literal");
        let list_form = self.any(|p| &p.scripts.eval_list, &c.method)
            && c.args.len() >= 2
            && !matches!(
                c.args[0].kind(),
                "lambda_expression" | "object_creation_expression" | "cast_expression"
            );
        // Lettuce: `eval(script, ScriptOutputType.X, keys…)`.
        let typed = c
            .args
            .get(1)
            .is_some_and(|a| self.t(*a).starts_with("ScriptOutputType"));
        if (numkeys && self.any(|p| &p.scripts.eval, &c.method)) || (list_form && !numkeys) {
            let mut keys = CallKeys::default();
            if typed {
                for a in c.args.iter().skip(2) {
                    self.list_into(*a, &mut keys);
                }
            } else if numkeys {
                let n: usize = self.t(c.args[1]).parse().unwrap_or(0);
                for a in c.args.iter().skip(2).take(n) {
                    self.list_into(*a, &mut keys);
                }
            } else if let Some(k) = c.args.get(1) {
                self.list_into(*k, &mut keys);
            }
            self.send(&c, pipe.as_ref(), SiteKind::Script, "EVAL", keys);
            return;
        }
        // Redisson: `batch.getBucket(name)` queues work on the object named `name`.
        if pipe.is_some() && self.any(|p| &p.pipeline.objects, &c.method) {
            let mut keys = CallKeys::default();
            if let Some(k) = c.args.first() {
                keys.keys.push(self.template(*k, 0));
            }
            self.send(&c, pipe.as_ref(), SiteKind::Command, &c.method, keys);
            return;
        }
        let Some((cmd, how)) = syntax::command_of(self.profiles, &c.method) else {
            return;
        };
        let pipe = pipe.or_else(|| self.pipes.contains_key(&conn).then_some(conn));
        let keys = match how {
            Some(how) => self.shaped_keys(&c.args, how, &cmd),
            None => self.line_keys(&cmd, &c.args),
        };
        self.send(&c, pipe.as_ref(), SiteKind::Command, &cmd, keys);
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

    /// Whether a receiver reads as a Redis client, template, connection or batch.
    fn redis_receiver(&self, receiver: Node<'_>) -> bool {
        let text = self.t(receiver).to_ascii_lowercase();
        [
            "redis",
            "jedis",
            "template",
            "ops",
            "commands",
            "connection",
            "conn",
            "client",
            "cluster",
            "batch",
            "pipeline",
            "transaction",
            "sync",
            "async",
            "reactive",
            "cache",
            "valkey",
        ]
        .iter()
        .any(|w| text.contains(w))
            || ["r", "c", "p", "t", "tx", "pipe", "cmd"].contains(&text.as_str())
    }

    /// The keys of a command whose arguments are the command line (arrays flattened).
    fn line_keys(&self, cmd: &str, args: &[Node<'t>]) -> CallKeys {
        let mut keys = CallKeys::default();
        let mut flat: Vec<Node<'t>> = Vec::new();
        for a in args {
            match items(*a, self.src) {
                Some(items) => flat.extend(items),
                None => flat.push(*a),
            }
        }
        let templates = flat.iter().map(|a| self.template(*a, 0));
        for p in syntax::key_positions(cmd, templates).unwrap_or_default() {
            if let Some(a) = flat.get(p) {
                self.list_into(*a, &mut keys);
            }
        }
        keys
    }

    fn shaped_keys(&self, args: &[Node<'t>], how: ArgShape, cmd: &str) -> CallKeys {
        let mut keys = CallKeys::default();
        match how {
            ArgShape::None => {}
            ArgShape::Args => return self.line_keys(cmd, args),
            ArgShape::Mapping => match args.first() {
                Some(m) if self.call_of(*m).is_some_and(|c| c.method == "of") => {
                    // `Map.of(k1, v1, k2, v2)`.
                    let c = self.call_of(*m).expect("checked");
                    for k in c.args.iter().step_by(2) {
                        keys.keys.push(self.template(*k, 0));
                    }
                }
                Some(a) => keys.unknown = Some(Unknown::RuntimeList(self.short(*a))),
                None => {}
            },
            ArgShape::List | ArgShape::SkipFirst => {
                let skip = usize::from(how == ArgShape::SkipFirst);
                for a in args.iter().skip(skip) {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::First => {
                if let Some(a) = args.first() {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::DestList | ArgShape::OpDestList => {
                let skip = usize::from(how == ArgShape::OpDestList);
                for a in args.iter().skip(skip) {
                    self.list_into(*a, &mut keys);
                }
            }
        }
        keys
    }

    /// Keys from one argument: a key, a list or array literal, or a variable holding one.
    fn list_into(&self, a: Node<'t>, keys: &mut CallKeys) {
        if a.kind() == "null_literal" {
            return;
        }
        if let Some(items) = items(a, self.src) {
            for i in items {
                self.list_into(i, keys);
            }
            return;
        }
        match a.kind() {
            "identifier" => match self.local_value(a, self.t(a)) {
                Some(v) if items(v, self.src).is_some() => self.list_into(v, keys),
                _ if looks_plural(self.t(a)) => {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
                }
                _ => keys.keys.push(self.template(a, 0)),
            },
            "method_invocation"
                if self.call_of(a).is_some_and(|c| {
                    matches!(
                        c.method.as_str(),
                        "stream" | "collect" | "toList" | "toArray" | "keySet" | "map"
                    )
                }) =>
            {
                keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
            }
            _ => keys.keys.push(self.template(a, 0)),
        }
    }

    /// The value last given to local `name` before `at` in its method or lambda, else a
    /// field of the file.
    fn local_value(&self, at: Node<'t>, name: &str) -> Option<Node<'t>> {
        for p in self.up.around(at) {
            if SCOPES.contains(&p.kind()) {
                let found = self
                    .assigned
                    .last(p, name, at.start_byte(), self.src, &BINDS);
                if found.is_some() {
                    return found;
                }
            }
        }
        self.fields.get(name).copied().flatten()
    }

    fn template(&self, n: Node<'t>, depth: usize) -> Template {
        if depth > DEPTH {
            return Template::var(self.short(n));
        }
        match n.kind() {
            "string_literal" => {
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
            "character_literal" | "decimal_integer_literal" => {
                Template::lit(self.t(n).trim_matches('\''))
            }
            "array_initializer" | "array_creation_expression" => match byte_values(n, self.src) {
                Some(bytes) => Template::lit(bytes),
                None => Template::var(self.short(n)),
            },
            "parenthesized_expression" => n.named_child(0).map_or_else(
                || Template::var(self.short(n)),
                |c| self.template(c, depth + 1),
            ),
            "cast_expression" => n.child_by_field_name("value").map_or_else(
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
                let mut t = self.interpolated(l, depth);
                t.push(self.interpolated(r, depth));
                t
            }
            "identifier" => {
                let name = self.t(n);
                match self.local_value(n, name) {
                    Some(v) if !contains(v, n) => {
                        let t = self.template(v, depth + 1);
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
                        .filter(|_| !syntax::is_parameter(&self.up, n, name, self.src, SCOPES))
                        .unwrap_or_else(|| Template::var(name)),
                }
            }
            "field_access" => {
                // `this.prefix`, `Keys.PREFIX` (of this file or another).
                let field = n.child_by_field_name("field").map_or("", |f| self.t(f));
                match self.fields.get(field) {
                    Some(Some(v)) => self.template(*v, depth + 1),
                    Some(None) => Template::var(self.short(n)),
                    None => self
                        .globals
                        .constant(field)
                        .unwrap_or_else(|| Template::var(self.short(n))),
                }
            }
            "method_invocation" => self.call_template(n, depth),
            _ => Template::var(self.short(n)),
        }
    }

    fn call_template(&self, n: Node<'t>, depth: usize) -> Template {
        let Some(c) = self.call_of(n) else {
            return Template::var(self.short(n));
        };
        let on = c.receiver.map(|r| self.t(r));
        match (on, c.method.as_str()) {
            (Some("String"), "format") | (Some(_), "formatted") => {
                let (f, values) = match on {
                    Some("String") => match c.args.split_first() {
                        Some((f, rest)) => (self.template(*f, depth + 1), rest.to_vec()),
                        None => return Template::var(self.short(n)),
                    },
                    _ => (
                        self.template(c.receiver.expect("checked"), depth + 1),
                        c.args.clone(),
                    ),
                };
                if !f.is_literal() {
                    return Template::var(self.short(n));
                }
                let mut rest = values.iter();
                printf(&f.text(), || {
                    rest.next().map(|a| self.interpolated(*a, depth))
                })
                .unwrap_or_else(|| Template::var(self.short(n)))
            }
            (Some("String" | "Integer" | "Long"), "valueOf" | "toString")
            | (Some("SafeEncoder"), "encode") => c.args.first().map_or_else(
                || Template::var(self.short(n)),
                |a| self.interpolated(*a, depth),
            ),
            (Some(_), "toString" | "getBytes" | "intern" | "toLowerCase" | "toUpperCase")
                if c.method != "toLowerCase" && c.method != "toUpperCase" =>
            {
                self.interpolated(c.receiver.expect("checked"), depth)
            }
            (Some("String"), "join") => {
                let Some((sep, parts)) = c.args.split_first() else {
                    return Template::var(self.short(n));
                };
                let sep = self.template(*sep, depth + 1);
                let mut t = Template::default();
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        t.push(sep.clone());
                    }
                    t.push(self.interpolated(*p, depth));
                }
                t
            }
            (None | Some("this"), name) => self.helper(name, &c.args, n, depth),
            // `Keys.user(uid)`: a method of another file of the tree.
            (Some(_), name) => self
                .globals
                .call(name, &[], |i| {
                    c.args.get(i).map(|a| self.template(*a, depth + 1))
                })
                .unwrap_or_else(|| Template::var(self.short(n))),
        }
    }

    /// A value inside a key: its template, or a placeholder named after it.
    fn interpolated(&self, e: Node<'t>, depth: usize) -> Template {
        let t = self.template(e, depth + 1);
        if t.is_literal() || t.parts.len() > 1 || !matches!(e.kind(), "identifier" | "field_access")
        {
            return t;
        }
        Template::var(self.short(e))
    }

    fn helper(&self, name: &str, args: &[Node<'t>], call: Node<'t>, depth: usize) -> Template {
        let Some(Some((params, ret))) = self.methods.get(name) else {
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

/// The items of a list or array written in place: `new String[]{a, b}`, `{a, b}`,
/// `Arrays.asList(a, b)`, `List.of(a, b)`, `Set.of(a, b)`, `Stream.of(a, b)`; else `None`.
fn items<'t>(n: Node<'t>, src: &[u8]) -> Option<Vec<Node<'t>>> {
    let list = match n.kind() {
        // `new byte[]{…}` is one binary key; `new String[]{…}`, `new byte[][]{…}` are lists.
        "array_creation_expression" => {
            let ty = n.child_by_field_name("type")?;
            let dims = n.child_by_field_name("dimensions").map_or(0, |d| {
                d.utf8_text(src).map_or(0, |t| t.matches('[').count())
            });
            if ty.kind() == "integral_type" && dims < 2 {
                return None;
            }
            n.child_by_field_name("value")?
        }
        // `{ 0x01, 0x02 }`: the bytes of one binary key.
        "array_initializer" if byte_values(n, src).is_some() => return None,
        "array_initializer" => n,
        "method_invocation" => {
            let on = n.child_by_field_name("object")?.utf8_text(src).ok()?;
            let name = n.child_by_field_name("name")?.utf8_text(src).ok()?;
            let factory = matches!(
                (on, name),
                ("Arrays", "asList")
                    | (
                        "List" | "Set" | "Stream" | "ImmutableList" | "ImmutableSet",
                        "of"
                    )
                    | ("Collections", "singletonList" | "singleton")
            );
            if !factory {
                return None;
            }
            n.child_by_field_name("arguments")?
        }
        _ => return None,
    };
    let mut cur = list.walk();
    Some(list.named_children(&mut cur).collect())
}

/// The bytes of a binary key written as numbers (`{ 0x01, 0x02 }`, `new byte[]{ 1, 2 }`),
/// when every one is ASCII (so the key's text hashes as its bytes do).
fn byte_values(n: Node<'_>, src: &[u8]) -> Option<String> {
    let list = match n.kind() {
        "array_creation_expression" => n.child_by_field_name("value")?,
        "array_initializer" => n,
        _ => return None,
    };
    let mut cur = list.walk();
    let mut out = String::new();
    let mut any = false;
    for c in list.named_children(&mut cur) {
        let t = c.utf8_text(src).ok()?;
        let v = match c.kind() {
            "hex_integer_literal" => {
                u32::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()?
            }
            "decimal_integer_literal" => t.parse().ok()?,
            _ => return None,
        };
        out.push(char::from_u32(v).filter(char::is_ascii)?);
        any = true;
    }
    any.then_some(out)
}

/// How Java gives a local a value: a declaration or `name = value`, in the method or lambda
/// (not in nested ones or in a class body).
const BINDS: syntax::Binds = syntax::Binds {
    skip: |kind| SCOPES.contains(&kind) || kind == "class_body",
    pairs: |c, out| {
        let (l, r) = match c.kind() {
            "variable_declarator" => (
                c.child_by_field_name("name"),
                c.child_by_field_name("value"),
            ),
            "assignment_expression" => (
                c.child_by_field_name("left"),
                c.child_by_field_name("right"),
            ),
            _ => (None, None),
        };
        if let (Some(l), Some(r)) = (l, r) {
            out.push((l, r));
        }
    },
    ended: false,
};

/// The first expression a method body returns.
fn first_return(body: Node<'_>) -> Option<Node<'_>> {
    let mut cur = body.walk();
    for c in body.named_children(&mut cur) {
        if SCOPES.contains(&c.kind()) || c.kind() == "class_body" {
            continue;
        }
        if c.kind() == "return_statement" {
            return c.named_child(0);
        }
        if let Some(r) = first_return(c) {
            return Some(r);
        }
    }
    None
}

/// Where the method or lambda around `n` starts (0: none).
fn scope_of<'t>(up: &syntax::Parents<'t>, n: Node<'t>) -> usize {
    syntax::scope_start(up, n, SCOPES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{Verdict, texts};

    fn scan_java(src: &str) -> FileFindings {
        scan(src, &Profile::builtin("java"), &Globals::default()).unwrap()
    }

    #[test]
    fn a_method_another_file_defines_unknowably_is_not_guessed() {
        // Two files define `getId`: a test's returns text, the session's returns what its
        // field's object says. A call of `getId()` on an object is neither to be guessed.
        let mut g = exports(
            r#"
class CustomSession {
    public String getId() { return "id"; }
    public static String userKey(String id) { return "user:" + id; }
}
"#,
        )
        .unwrap();
        g.merge(
            exports(
                r#"
class Session {
    private MapSession cached;
    public String getId() { return this.cached.getId(); }
}
"#,
            )
            .unwrap(),
        );
        let f = scan(
            r#"
class Repo {
    private StringRedisTemplate ops;
    void change(Session s, String old) {
        ops.rename("sessions:" + s.getId(), "sessions:" + old);
        ops.rename(Keys.userKey(old), Keys.userKey(s.id));
    }
}
"#,
            &Profile::builtin("java"),
            &g,
        )
        .unwrap();
        assert_eq!(
            texts(&f.sites[0]),
            ["sessions:<s.getId()>", "sessions:<old>"]
        );
        // A method one file defines still resolves.
        assert_eq!(texts(&f.sites[1]), ["user:<old>", "user:<s.id>"]);
    }

    #[test]
    fn jedis_spring_lettuce_redisson_forms() {
        let f = scan_java(
            r#"
class Store {
  private static final String PREFIX = "app";
  private String userKey(String uid) { return PREFIX + ":user:" + uid; }
  void load(String uid, List<String> keys) {
    jedis.mget(userKey(uid), String.format("%s:settings:%s", PREFIX, uid));
    jedis.mget("u:{" + uid + "}:a", "u:{" + uid + "}:b");
    Pipeline p = jedis.pipelined();
    p.set("a:" + uid, "1");
    p.incr("stats");
    p.sync();
    Transaction t = jedis.multi();
    for (String k : keys) { t.del(k); }
    t.exec();
    jedis.eval(SCRIPT, 2, "l:{" + uid + "}", "l:{" + uid + "}:o", "tok");
    jedis.eval(SCRIPT, Arrays.asList("x:" + uid, "y:" + uid), List.of("a"));
    jedis.blpop(5, "q:" + uid, "q2:" + uid);
    redisTemplate.opsForValue().multiGet(List.of("v:" + uid, "w:" + uid));
    redisTemplate.delete(keys);
    redisTemplate.executePipelined((RedisCallback<Object>) connection -> {
      connection.stringCommands().get(("c:{" + uid + "}:1").getBytes());
      connection.stringCommands().get(("c:{" + uid + "}:2").getBytes());
      return null;
    });
    commands.multi();
    commands.set("m:" + uid, "1");
    commands.expire("n:" + uid, 60);
    commands.exec();
    RBatch batch = redisson.createBatch();
    batch.getBucket("b:" + uid).setAsync(1);
    batch.getMap("h:" + uid).putAsync("f", 1);
    batch.execute();
    redisTemplate.execute(script, List.of("s:{" + uid + "}", "s:{" + uid + "}:2"), "1");
  }
}
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            [
                "MGET",
                "MGET",
                "SET INCR",
                "DEL",
                "EVAL",
                "EVAL",
                "BLPOP",
                "MGET",
                "DEL",
                "GET GET",
                "SET EXPIRE",
                "getBucket getMap",
                "EVAL"
            ],
            "{:?}",
            f.sites
        );
        assert_eq!(texts(&f.sites[0]), ["app:user:<uid>", "app:settings:<uid>"]);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[2].kind, SiteKind::Pipeline);
        assert!(matches!(f.sites[2].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(f.sites[3].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[3].verdict(), Verdict::Depends(_)));
        assert!(matches!(f.sites[4].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(f.sites[5].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(texts(&f.sites[6]), ["q:<uid>", "q2:<uid>"]);
        assert!(matches!(f.sites[7].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[8].verdict(), Verdict::Depends(_)));
        assert!(matches!(f.sites[9].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[10].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[10].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(texts(&f.sites[11]), ["b:<uid>", "h:<uid>"]);
        assert!(matches!(f.sites[12].verdict(), Verdict::OneSlot(_)));
    }
}
