//! Ruby source: redis-rb and redis-client calls and the keys they send, read from the syntax
//! tree (tree-sitter's Ruby grammar).
//!
//! Keys are followed through string literals and interpolation, `+`, `format`/`sprintf`/`%`,
//! `.to_s`, `[…].join(sep)`, local variables, constants (of the file and of its classes, also
//! as `Mod::NAME`), instance variables assigned once, and methods of the same file that return
//! a key, called with their arguments. A pipeline is the block given to `pipelined` or `multi`,
//! whose parameter (or, in the old form without one, the client itself) queues the commands
//! sent when the block ends.

use super::profile::{ArgShape, Profile};
use super::syntax::{self, CallKeys, DEPTH, Pipe, contains, emit, looks_plural, printf, sorted};
use super::{FileFindings, Globals, Position, SiteKind, Template, Unknown};
use std::collections::HashMap;
use tree_sitter::{Node, Parser};

/// Why a file could not be read as Ruby.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// The parser gave up.
    #[error("the Ruby parser gave up on it")]
    NoTree,
    /// Text the reader does not read (nested too deep, or more than the parser can hold).
    #[error(transparent)]
    Unreadable(#[from] super::guard::Unreadable),
}

/// The findings of one Ruby file under `profiles`, with what other files define.
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
        consts: HashMap::new(),
        ivars: HashMap::new(),
        pipes: Vec::new(),
        bodies: HashMap::new(),
        following: Vec::new(),
        assigned: syntax::Assigned::default(),
        up: syntax::Parents::new(tree.root_node()),
        out: FileFindings::default(),
    };
    r.collect(tree.root_node());
    r.walk(tree.root_node());
    Ok(r.out)
}

fn parse(text: &str) -> Result<tree_sitter::Tree, ParseError> {
    super::guard::ruby_heredocs(text)?;
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_ruby::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(ParseError::NoTree)?;
    super::guard::check_depth(&tree)?;
    Ok(tree)
}

/// What one Ruby file defines for the others: its constants and methods that return a key.
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
        consts: HashMap::new(),
        ivars: HashMap::new(),
        pipes: Vec::new(),
        bodies: HashMap::new(),
        following: Vec::new(),
        assigned: syntax::Assigned::default(),
        up: syntax::Parents::new(tree.root_node()),
        out: FileFindings::default(),
    };
    r.collect(tree.root_node());
    for (name, v) in sorted(&r.consts) {
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

const SCOPES: &[&str] = &["method", "singleton_method", "block", "do_block", "lambda"];
/// Iterators whose block runs many times.
const ITERATORS: &[&str] = &[
    "each",
    "each_with_index",
    "each_with_object",
    "each_slice",
    "each_pair",
    "map",
    "flat_map",
    "times",
    "select",
    "collect",
    "upto",
];

/// A pipeline block being filled: who queues on it (the block's parameter, or the client
/// itself in the old form), where the block is, and the pipeline.
struct OpenPipe {
    queuer: String,
    block: (usize, usize),
    pipe: Pipe,
}

struct Reader<'s, 't> {
    src: &'s [u8],
    text: &'s str,
    profiles: &'s [Profile],
    /// What the other Ruby files of the tree define.
    globals: &'s Globals,
    /// Methods by name: parameter names and the returned expression (`None`: ambiguous).
    methods: HashMap<String, Option<(Vec<String>, Node<'t>)>>,
    /// Constants by name (`NAME = …` anywhere; `None`: assigned twice).
    consts: HashMap<String, Option<Node<'t>>>,
    /// Instance variables assigned once in the file.
    ivars: HashMap<String, Option<Node<'t>>>,
    /// Pipeline blocks open around the node being read, innermost last.
    pipes: Vec<OpenPipe>,
    /// Method definitions by name (`None`: defined twice in the file).
    bodies: HashMap<String, Option<Node<'t>>>,
    /// Methods being read for a pipeline handed to them (no method is read inside itself).
    following: Vec<String>,
    /// The values given to names, by scope.
    assigned: syntax::Assigned<'t>,
    /// The parents of the tree's nodes.
    up: syntax::Parents<'t>,
    out: FileFindings,
}

/// A method call: receiver (if any), name, positional arguments, keyword arguments, block.
struct Call<'t> {
    node: Node<'t>,
    receiver: Option<Node<'t>>,
    method: String,
    args: Vec<Node<'t>>,
    keywords: Vec<(String, Node<'t>)>,
    block: Option<Node<'t>>,
}

fn once<'t>(map: &mut HashMap<String, Option<Node<'t>>>, name: String, value: Node<'t>) {
    map.entry(name)
        .and_modify(|v| *v = None)
        .or_insert(Some(value));
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
            "method" | "singleton_method" => {
                let Some(name) = node.child_by_field_name("name") else {
                    return;
                };
                let params = self.params(node);
                let ret = node.child_by_field_name("body").and_then(returned);
                let key = self.t(name).to_string();
                once(&mut self.bodies, key.clone(), node);
                match ret {
                    Some(r) if !self.methods.contains_key(&key) => {
                        self.methods.insert(key, Some((params, r)));
                    }
                    _ => {
                        self.methods.insert(key, None);
                    }
                }
            }
            "assignment" | "operator_assignment" => {
                let (Some(l), Some(r)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) else {
                    return;
                };
                let op = node.kind() == "operator_assignment";
                let name = self.t(l).to_string();
                match l.kind() {
                    "constant" if !op => once(&mut self.consts, name, r),
                    // `@prefix ||= "x"` and `@prefix = x` both count as an assignment.
                    "instance_variable" => once(&mut self.ivars, name, r),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn params(&self, m: Node<'_>) -> Vec<String> {
        let Some(ps) = m.child_by_field_name("parameters") else {
            return Vec::new();
        };
        let mut cur = ps.walk();
        ps.named_children(&mut cur)
            .map(|p| match p.child_by_field_name("name") {
                Some(n) => self.t(n).to_string(),
                None => self.t(p).to_string(),
            })
            .collect()
    }

    fn call_of(&self, n: Node<'t>) -> Option<Call<'t>> {
        if n.kind() != "call" {
            return None;
        }
        let method = self.t(n.child_by_field_name("method")?).to_string();
        let mut args = Vec::new();
        let mut keywords = Vec::new();
        if let Some(list) = n.child_by_field_name("arguments") {
            let mut cur = list.walk();
            for a in list.named_children(&mut cur) {
                match a.kind() {
                    "pair" => {
                        if let (Some(k), Some(v)) =
                            (a.child_by_field_name("key"), a.child_by_field_name("value"))
                        {
                            let key = self.t(k).trim_start_matches(':').trim_end_matches(':');
                            keywords.push((key.trim_matches('"').to_string(), v));
                        }
                    }
                    "block_argument" => {}
                    _ => args.push(a),
                }
            }
        }
        Some(Call {
            node: n,
            receiver: n.child_by_field_name("receiver"),
            method,
            args,
            keywords,
            block: n.child_by_field_name("block"),
        })
    }

    fn walk(&mut self, node: Node<'t>) {
        let call = self.call_of(node);
        // `redis.pipelined do |p| … end`, `redis.multi { |tx| … }`: the block fills a
        // pipeline sent when it ends.
        let opened = call.as_ref().and_then(|c| self.open_pipe(c));
        if let Some(p) = opened {
            self.pipes.push(p);
        }
        let mut cur = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cur).collect();
        for c in children {
            self.walk(c);
        }
        if opened_here(&self.pipes, node) {
            let mut p = self.pipes.pop().expect("invariant: pushed above");
            let at = self.at(node);
            if let Some(site) = p.pipe.send(self.text, at, false) {
                self.out.sites.push(site);
            }
            return;
        }
        if let Some(c) = call {
            self.call(c);
        }
    }

    fn open_pipe(&self, c: &Call<'t>) -> Option<OpenPipe> {
        let atomic = if self.any(|p| &p.pipeline.block_atomic, &c.method) {
            true
        } else if self.any(|p| &p.pipeline.block, &c.method) {
            false
        } else {
            return None;
        };
        let block = c.block?;
        let queuer = match block.child_by_field_name("parameters") {
            Some(ps) => self.t(ps.named_child(0)?).to_string(),
            // The old form: commands on the client itself inside the block.
            None => self.t(c.receiver?).to_string(),
        };
        Some(OpenPipe {
            queuer,
            block: (c.node.start_byte(), c.node.end_byte()),
            pipe: Pipe::new(atomic, (block.start_byte(), block.end_byte())),
        })
    }

    /// `atomic_push(pipeline, payloads)` in a pipeline block: what the method queues on
    /// that parameter goes into the pipeline (its body read when the file defines it once),
    /// or the pipeline depends on it.
    fn hand_off(&mut self, c: &Call<'t>) {
        let on_pipe = c.receiver.and_then(|r| {
            let name = self.t(r);
            self.pipes.iter().rposition(|p| p.queuer == name)
        });
        for (pos, a) in c.args.iter().enumerate() {
            if a.kind() != "identifier" {
                continue;
            }
            let name = self.t(*a);
            let Some(i) = self.pipes.iter().rposition(|p| p.queuer == name) else {
                continue;
            };
            if on_pipe == Some(i) {
                continue;
            }
            let in_loop = in_loop_since(&self.up, c.node, self.pipes[i].block, self.src);
            let def = self.bodies.get(&c.method).copied().flatten().filter(|_| {
                c.receiver.is_none_or(|r| self.t(r) == "self")
                    && !self.following.contains(&c.method)
                    && self.following.len() < syntax::DEPTH / 2
            });
            let param = def.and_then(|d| self.params(d).get(pos).cloned());
            let queued = match (def, param) {
                (Some(d), Some(param)) => {
                    let (sites, keys) = (self.out.sites.len(), self.out.keys.len());
                    self.pipes.push(OpenPipe {
                        queuer: param,
                        block: (d.start_byte(), d.end_byte()),
                        pipe: Pipe::new(false, (d.start_byte(), d.end_byte())),
                    });
                    self.following.push(c.method.clone());
                    if let Some(body) = d.child_by_field_name("body") {
                        self.walk(body);
                    }
                    self.following.pop();
                    let inner = self.pipes.pop().expect("invariant: pushed above");
                    // What the body sends by itself is found where the method is defined.
                    self.out.sites.truncate(sites);
                    self.out.keys.truncate(keys);
                    let (ops, keys, unknown) = inner.pipe.queued();
                    Some((ops.to_vec(), keys.to_vec(), unknown.cloned()))
                }
                _ => None,
            };
            let callee = match c.receiver {
                Some(r) => format!("{}.{}", syntax::short_str(self.t(r)), c.method),
                None => c.method.clone(),
            };
            let pipe = &mut self.pipes[i].pipe;
            match queued {
                Some((ops, keys, unknown)) if !ops.is_empty() => {
                    pipe.hand(&callee, Some((&ops, keys, unknown)), in_loop)
                }
                Some(_) => {}
                None => pipe.hand(&callee, None, in_loop),
            }
        }
    }

    fn call(&mut self, c: Call<'t>) {
        self.hand_off(&c);
        let queued = c.receiver.and_then(|r| {
            let name = self.t(r);
            self.pipes.iter().rposition(|p| p.queuer == name)
        });
        let receiver_ok = queued.is_some() || c.receiver.is_some_and(|r| self.redis_receiver(r));
        if !receiver_ok {
            return;
        }
        let keyword = |name: &str| c.keywords.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        // Scripts: `eval(src, keys: […], argv: […])` or `eval(src, […], […])`.
        let eval = self.profiles.iter().find(|p| {
            p.scripts.eval_list.contains(&c.method) || p.scripts.eval.contains(&c.method)
        });
        if let Some(p) = eval {
            let mut keys = CallKeys::default();
            match keyword(&p.scripts.keys_keyword) {
                Some(k) => self.list_into(k, &mut keys),
                None => {
                    if let Some(k) = c.args.get(1) {
                        self.list_into(*k, &mut keys);
                    }
                }
            }
            let op = c.method.to_ascii_uppercase();
            self.send(&c, queued, SiteKind::Script, &op, keys);
            return;
        }
        // redis-client's `call("MGET", a, b)`, `call_v(["MGET", a, b])`.
        if self.any(|p| &p.raw, &c.method) {
            let mut args = c.args.clone();
            if let [one] = args.as_slice()
                && one.kind() == "array"
            {
                let mut cur = one.walk();
                args = one.named_children(&mut cur).collect();
            }
            let Some(first) = args.first() else { return };
            let name = self.template(*first, 0);
            if !name.is_literal() {
                return;
            }
            let cmd = name.text().to_ascii_uppercase();
            let keys = self.line_keys(&cmd, &args[1..]);
            self.send(&c, queued, SiteKind::Command, &cmd, keys);
            return;
        }
        let Some((cmd, how)) = syntax::command_of(self.profiles, &c.method) else {
            return;
        };
        if self.any(|p| &p.pipeline.block, &c.method)
            || self.any(|p| &p.pipeline.block_atomic, &c.method)
        {
            return;
        }
        let keys = match how {
            Some(how) => self.shaped_keys(&c.args, how, &cmd),
            None => self.line_keys(&cmd, &c.args),
        };
        self.send(&c, queued, SiteKind::Command, &cmd, keys);
    }

    fn send(
        &mut self,
        c: &Call<'t>,
        queued: Option<usize>,
        kind: SiteKind,
        op: &str,
        keys: CallKeys,
    ) {
        let at = self.at(c.node);
        let pipe = queued.and_then(|i| self.pipes.get_mut(i)).map(|p| {
            let in_loop = in_loop_since(&self.up, c.node, p.block, self.src);
            (&mut p.pipe, in_loop)
        });
        emit(&mut self.out, at, kind, op, keys, pipe);
    }

    /// Whether a receiver reads as a Redis client or connection.
    fn redis_receiver(&self, receiver: Node<'_>) -> bool {
        let text = self.t(receiver);
        let last = text
            .rsplit(['.', ' ', ':'])
            .next()
            .unwrap_or(text)
            .trim_start_matches('@')
            .to_ascii_lowercase();
        ["r", "c", "rc", "db", "cluster", "pipe", "tx", "conn"].contains(&last.as_str())
            || [
                "redis",
                "client",
                "conn",
                "pipeline",
                "transaction",
                "store",
                "valkey",
                "pool",
            ]
            .iter()
            .any(|w| last.contains(w))
    }

    /// The keys of a command whose arguments are the command line (arrays flattened).
    fn line_keys(&self, cmd: &str, args: &[Node<'t>]) -> CallKeys {
        let mut keys = CallKeys::default();
        let mut flat: Vec<Node<'t>> = Vec::new();
        for a in args {
            match a.kind() {
                "array" => {
                    let mut cur = a.walk();
                    flat.extend(a.named_children(&mut cur));
                }
                "hash" => {}
                _ => flat.push(*a),
            }
        }
        let spread = flat.iter().position(|a| a.kind() == "splat_argument");
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
                        self.list_into(*a, &mut keys);
                    }
                }
            }
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
            ArgShape::Args => return self.line_keys(cmd, args),
            ArgShape::Mapping => match args.first() {
                Some(h) if h.kind() == "hash" => {
                    let mut cur = h.walk();
                    for pair in h.named_children(&mut cur) {
                        match pair.child_by_field_name("key") {
                            Some(k) if pair.kind() == "pair" => {
                                keys.keys.push(self.key_of_hash_key(k));
                            }
                            _ => keys.unknown = Some(Unknown::RuntimeList(self.short(pair))),
                        }
                    }
                }
                Some(a) => keys.unknown = Some(Unknown::RuntimeList(self.short(*a))),
                None => {}
            },
            ArgShape::First => {
                if let Some(a) = args.first() {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::List | ArgShape::SkipFirst => {
                let skip = usize::from(how == ArgShape::SkipFirst);
                // A trailing number is a blocking pop's timeout (`brpop(a, b, 5)`).
                let end = match args.last() {
                    Some(l) if matches!(l.kind(), "integer" | "float") => args.len() - 1,
                    _ => args.len(),
                };
                for a in args.iter().take(end).skip(skip) {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::DestList | ArgShape::OpDestList => {
                let skip = usize::from(how == ArgShape::OpDestList);
                if let Some(d) = args.get(skip) {
                    keys.keys.push(self.template(*d, 0));
                }
                for a in args.iter().skip(skip + 1) {
                    self.list_into(*a, &mut keys);
                }
            }
        }
        keys
    }

    fn key_of_hash_key(&self, k: Node<'t>) -> Template {
        match k.kind() {
            "hash_key_symbol" => Template::lit(self.t(k)),
            _ => self.template(k, 0),
        }
    }

    /// Keys from one argument: a key, an array literal, a splat, or a variable holding one.
    fn list_into(&self, a: Node<'t>, keys: &mut CallKeys) {
        match a.kind() {
            "array" => {
                let mut cur = a.walk();
                for item in a.named_children(&mut cur) {
                    self.list_into(item, keys);
                }
            }
            "splat_argument" => keys.unknown = Some(Unknown::RuntimeList(self.short(a))),
            "call"
                if self.call_of(a).is_some_and(|c| {
                    ITERATORS.contains(&c.method.as_str())
                        || matches!(c.method.as_str(), "to_a" | "keys" | "values" | "flatten")
                }) =>
            {
                keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
            }
            "identifier" => match self.local_value(a, self.t(a)) {
                Some(v) if v.kind() == "array" => self.list_into(v, keys),
                _ if looks_plural(self.t(a)) => {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
                }
                _ => keys.keys.push(self.template(a, 0)),
            },
            _ => keys.keys.push(self.template(a, 0)),
        }
    }

    /// The value last given to local `name` before `at` in its method or block.
    fn local_value(&self, at: Node<'t>, name: &str) -> Option<Node<'t>> {
        for p in self.up.around(at) {
            if SCOPES.contains(&p.kind()) || self.up.of(p).is_none() {
                let found = self
                    .assigned
                    .last(p, name, at.start_byte(), self.src, &BINDS);
                if found.is_some() {
                    return found;
                }
                if matches!(p.kind(), "method" | "singleton_method") {
                    return None;
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
            "string" => {
                let mut t = Template::default();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    match c.kind() {
                        "string_content" => t.push_lit(self.t(c)),
                        "escape_sequence" => t.push_lit(&syntax::unescape(self.t(c))),
                        "interpolation" => {
                            if let Some(e) = c.named_child(0) {
                                t.push(self.interpolated(e, depth));
                            }
                        }
                        _ => {}
                    }
                }
                t
            }
            "simple_symbol" => Template::lit(self.t(n).trim_start_matches(':')),
            "integer" => Template::lit(self.t(n)),
            "parenthesized_statements" => n.named_child(0).map_or_else(
                || Template::var(self.short(n)),
                |c| self.template(c, depth + 1),
            ),
            "binary" => {
                let (Some(l), Some(r), Some(op)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                    n.child_by_field_name("operator"),
                ) else {
                    return Template::var(self.short(n));
                };
                match self.t(op) {
                    "+" => {
                        let mut t = self.template(l, depth + 1);
                        t.push(self.template(r, depth + 1));
                        t
                    }
                    // `"user:%s" % uid`, `"%s:%s" % [a, b]`.
                    "%" => {
                        let f = self.template(l, depth + 1);
                        let values: Vec<Node<'t>> = match r.kind() {
                            "array" => {
                                let mut cur = r.walk();
                                r.named_children(&mut cur).collect()
                            }
                            _ => vec![r],
                        };
                        self.formatted(f, &values, n, depth)
                    }
                    _ => Template::var(self.short(n)),
                }
            }
            "constant" => match self.consts.get(self.t(n)) {
                Some(Some(v)) => self.template(*v, depth + 1),
                Some(None) => Template::var(self.t(n)),
                None => self
                    .globals
                    .constant(self.t(n))
                    .unwrap_or_else(|| Template::var(self.t(n))),
            },
            "scope_resolution" => {
                let name = n.child_by_field_name("name").map_or("", |c| self.t(c));
                match self.consts.get(name) {
                    Some(Some(v)) => self.template(*v, depth + 1),
                    Some(None) => Template::var(self.short(n)),
                    None => self
                        .globals
                        .constant(name)
                        .unwrap_or_else(|| Template::var(self.short(n))),
                }
            }
            "instance_variable" => match self.ivars.get(self.t(n)) {
                Some(Some(v)) => {
                    let t = self.template(*v, depth + 1);
                    if t.is_literal() {
                        t
                    } else {
                        Template::var(self.t(n))
                    }
                }
                _ => Template::var(self.t(n)),
            },
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
                    // A parameter is a runtime value.
                    None if syntax::is_parameter(&self.up, n, name, self.src, SCOPES) => {
                        Template::var(name)
                    }
                    // A bare name that is no local: a method of the file called without
                    // arguments.
                    None => self.helper(name, &[], n, depth),
                }
            }
            "call" => self.call_template(n, depth),
            _ => Template::var(self.short(n)),
        }
    }

    fn call_template(&self, n: Node<'t>, depth: usize) -> Template {
        let Some(c) = self.call_of(n) else {
            return Template::var(self.short(n));
        };
        match (c.receiver, c.method.as_str()) {
            (Some(r), "to_s" | "to_str" | "to_sym" | "to_i") => self.interpolated(r, depth),
            (Some(r), "join") if r.kind() == "array" => {
                let sep = c
                    .args
                    .first()
                    .map_or_else(Template::default, |s| self.template(*s, depth + 1));
                let mut t = Template::default();
                let mut cur = r.walk();
                for (i, item) in r.named_children(&mut cur).enumerate() {
                    if i > 0 {
                        t.push(sep.clone());
                    }
                    t.push(self.interpolated(item, depth));
                }
                t
            }
            (None, "format" | "sprintf") => {
                let Some(f) = c.args.first() else {
                    return Template::var(self.short(n));
                };
                let f = self.template(*f, depth + 1);
                self.formatted(f, &c.args[1..], n, depth)
            }
            (None | Some(_), _) if c.receiver.is_none_or(|r| self.t(r) == "self") => {
                self.helper(&c.method, &c.args, n, depth)
            }
            // `Keys.user(uid)`, `Keys::user(uid)`: a method of another file of the tree.
            (Some(r), _) if matches!(r.kind(), "constant" | "scope_resolution") => self
                .globals
                .call(&c.method, &[], |i| {
                    c.args.get(i).map(|a| self.template(*a, depth + 1))
                })
                .unwrap_or_else(|| Template::var(self.short(n))),
            _ => Template::var(self.short(n)),
        }
    }

    fn formatted(&self, f: Template, values: &[Node<'t>], n: Node<'t>, depth: usize) -> Template {
        if !f.is_literal() {
            return Template::var(self.short(n));
        }
        let mut rest = values.iter();
        printf(&f.text(), || {
            rest.next().map(|a| self.interpolated(*a, depth))
        })
        .unwrap_or_else(|| Template::var(self.short(n)))
    }

    /// A value inside a key: its template, or a placeholder named after it.
    fn interpolated(&self, e: Node<'t>, depth: usize) -> Template {
        let t = self.template(e, depth + 1);
        if t.is_literal()
            || t.parts.len() > 1
            || !matches!(
                e.kind(),
                "identifier" | "instance_variable" | "call" | "constant"
            )
        {
            return t;
        }
        if e.kind() == "call" && t.text() != format!("<{}>", self.short(e)) {
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

/// Whether the innermost open pipeline is the block of `node`.
fn opened_here(pipes: &[OpenPipe], node: Node<'_>) -> bool {
    pipes
        .last()
        .is_some_and(|p| p.block == (node.start_byte(), node.end_byte()))
}

/// What a method body returns: an explicit `return` first, else its last expression.
fn returned(body: Node<'_>) -> Option<Node<'_>> {
    let mut cur = body.walk();
    let stmts: Vec<Node<'_>> = body.named_children(&mut cur).collect();
    for s in &stmts {
        if s.kind() == "return" {
            return s.named_child(0).and_then(|a| match a.kind() {
                "argument_list" => a.named_child(0),
                _ => Some(a),
            });
        }
    }
    stmts.last().copied().filter(|s| s.kind() != "comment")
}

/// Whether a loop lies around `call` inside the pipeline's block (between bytes `block`): a
/// `for`/`while`/`until`, or the block of an iterator (`each`, `map`, `times`…).
fn in_loop_since<'t>(
    up: &syntax::Parents<'t>,
    call: Node<'t>,
    block: (usize, usize),
    src: &[u8],
) -> bool {
    for p in up.around(call) {
        if p.start_byte() <= block.0 && block.1 <= p.end_byte() {
            return false;
        }
        let iterator = matches!(p.kind(), "block" | "do_block")
            && up.of(p).is_some_and(|c| {
                c.kind() == "call"
                    && c.child_by_field_name("method")
                        .and_then(|m| m.utf8_text(src).ok())
                        .is_some_and(|m| ITERATORS.contains(&m))
            });
        if iterator || matches!(p.kind(), "for" | "while" | "until") {
            return true;
        }
    }
    false
}

/// How Ruby gives a local a value: `name = value`, not in nested methods.
const BINDS: syntax::Binds = syntax::Binds {
    skip: |kind| matches!(kind, "method" | "singleton_method"),
    pairs: |c, out| {
        if c.kind() == "assignment"
            && let (Some(l), Some(r)) = (
                c.child_by_field_name("left"),
                c.child_by_field_name("right"),
            )
            && l.kind() == "identifier"
        {
            out.push((l, r));
        }
    },
    ended: false,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{Verdict, texts};

    fn scan_rb(src: &str) -> FileFindings {
        scan(src, &Profile::builtin("ruby"), &Globals::default()).unwrap()
    }

    #[test]
    fn redis_rb_forms() {
        let f = scan_rb(
            r##"
PREFIX = "app"
module Keys
  SESSION = "sess"
end
class Store
  def initialize
    @ns = "shop"
  end
  def user_key(uid)
    "#{PREFIX}:user:#{uid}"
  end
  def load(uid, ids)
    redis.mget(user_key(uid), "#{PREFIX}:settings:" + uid.to_s)
    redis.mget("u:{#{uid}}:a", format("u:{%s}:b", uid))
    @redis.pipelined do |pipeline|
      pipeline.set("#{@ns}:a:#{uid}", 1)
      pipeline.incr "stats"
    end
    redis.multi do |tx|
      ids.each { |id| tx.del("item:#{id}") }
    end
    redis.del(*ids)
    redis.brpop("q:#{uid}", "q2:#{uid}", timeout: 5)
    redis.eval(SCRIPT, keys: ["l:{#{uid}}", "l:{#{uid}}:o"], argv: [1])
    redis.evalsha(SHA, ["x:#{uid}", "y:#{uid}"], [1])
    redis.get("#{Keys::SESSION}:%s" % uid)
  end
end
"##,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            [
                "MGET", "MGET", "SET INCR", "DEL", "DEL", "BRPOP", "EVAL", "EVALSHA"
            ],
            "{:?}",
            f.sites
        );
        assert_eq!(texts(&f.sites[0]), ["app:user:<uid>", "app:settings:<uid>"]);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(texts(&f.sites[2]), ["shop:a:<uid>", "stats"]);
        assert_eq!(f.sites[2].kind, SiteKind::Pipeline);
        assert_eq!(f.sites[3].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[3].verdict(), Verdict::Depends(_)));
        assert!(matches!(f.sites[4].verdict(), Verdict::Depends(_)));
        assert_eq!(texts(&f.sites[5]), ["q:<uid>", "q2:<uid>"]);
        assert!(matches!(f.sites[6].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(f.sites[7].verdict(), Verdict::CrossSlot(_)));
        assert!(f.keys.iter().any(|k| k.template.text() == "sess:<uid>"));
    }

    #[test]
    fn redis_client_forms() {
        let f = scan_rb(
            r##"
def go(conn, id)
  conn.call("MGET", "a:#{id}", "b:#{id}")
  conn.pipelined { |p| p.call("SET", "s:{#{id}}:x", 1); p.call("GET", "s:{#{id}}:y") }
  conn.call_v(["RENAME", "old:#{id}", "new:#{id}"])
end
"##,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(ops, ["MGET", "SET GET", "RENAME"], "{:?}", f.sites);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(f.sites[2].verdict(), Verdict::CrossSlot(_)));
    }
}
