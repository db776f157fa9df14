//! JavaScript and TypeScript source: ioredis and node-redis calls and the keys they send, read
//! from the syntax tree (tree-sitter's JavaScript grammar, or its TypeScript and TSX grammars,
//! whose expressions are JavaScript's with types around them: annotations, `x as T`, `x!`,
//! `<T>x` are looked through).
//!
//! Keys are followed through string literals, template literals, concatenation, local
//! variables, module constants and helper functions of the same file (arrow functions and
//! function declarations, called with their arguments); what cannot be followed is a named
//! placeholder. A pipeline or `multi()` is followed from where it is made (a variable, or a
//! chain of calls) to its `exec()`.

use super::profile::{ArgShape, Profile};
use super::syntax::{self, CallKeys, DEPTH, Pipe, contains, looks_plural, sorted, unescape};
use super::{FileFindings, Globals, KeyUse, Part, Position, Site, SiteKind, Template, Unknown};
use std::collections::HashMap;
use tree_sitter::{Node, Parser};

/// Why a file could not be read as JavaScript.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// The parser gave up.
    #[error("the {0:?} parser gave up on it")]
    NoTree(Dialect),
    /// Text the reader does not read (nested too deep).
    #[error(transparent)]
    Unreadable(#[from] super::guard::Unreadable),
}

/// Which grammar a file is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `.js`, `.mjs`, `.cjs`, `.jsx`.
    JavaScript,
    /// `.ts`, `.mts`, `.cts`.
    TypeScript,
    /// `.tsx`.
    Tsx,
}

/// The findings of one JavaScript or TypeScript file under `profiles`.
pub fn scan(
    text: &str,
    profiles: &[Profile],
    dialect: Dialect,
    globals: &Globals,
) -> Result<FileFindings, ParseError> {
    let tree = parse(text, dialect)?;
    let mut s = Scanner {
        src: text.as_bytes(),
        text,
        profiles,
        globals,
        funcs: HashMap::new(),
        defined: HashMap::new(),
        pipes: HashMap::new(),
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

fn parse(text: &str, dialect: Dialect) -> Result<tree_sitter::Tree, ParseError> {
    let mut parser = Parser::new();
    let language: tree_sitter::Language = match dialect {
        Dialect::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Dialect::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Dialect::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
    };
    parser
        .set_language(&language)
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser
        .parse(text, None)
        .ok_or(ParseError::NoTree(dialect))?;
    super::guard::check_depth(&tree)?;
    Ok(tree)
}

/// What one JavaScript or TypeScript file defines for the others: its top-level constants
/// (exported or not: a name imported from it is looked up by name) and functions that return
/// a key.
pub fn exports(text: &str, dialect: Dialect) -> Result<Globals, ParseError> {
    let mut out = Globals::default();
    let tree = parse(text, dialect)?;
    let none = Globals::default();
    let mut s = Scanner {
        src: text.as_bytes(),
        text,
        profiles: &[],
        globals: &none,
        funcs: HashMap::new(),
        defined: HashMap::new(),
        pipes: HashMap::new(),
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
        let decl = match top.kind() {
            "export_statement" => top.child_by_field_name("declaration"),
            _ => Some(top),
        };
        let Some(decl) =
            decl.filter(|d| matches!(d.kind(), "lexical_declaration" | "variable_declaration"))
        else {
            continue;
        };
        let mut c2 = decl.walk();
        for d in decl.named_children(&mut c2) {
            if let Some((n, v)) = binding(d)
                && !matches!(v.kind(), "arrow_function" | "function_expression")
            {
                out.add_const(s.t(n), s.template(v, 0));
            }
        }
    }
    Ok(out)
}

struct Scanner<'s, 't> {
    src: &'s [u8],
    text: &'s str,
    profiles: &'s [Profile],
    /// What the other files of the tree define.
    globals: &'s Globals,
    /// Functions by name: parameter names and the returned expression (`None`: ambiguous).
    funcs: HashMap<String, Option<(Vec<String>, Node<'t>)>>,
    /// Commands made by `defineCommand(name, { numberOfKeys })`.
    defined: HashMap<String, usize>,
    pipes: HashMap<(usize, String), Pipe>,
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

/// The kinds of node that are a function.
const FUNCTIONS: &[&str] = &[
    "function_declaration",
    "function_expression",
    "arrow_function",
    "method_definition",
    "generator_function_declaration",
];

fn is_function(kind: &str) -> bool {
    FUNCTIONS.contains(&kind)
}

impl<'s, 't> Scanner<'s, 't> {
    fn t(&self, n: Node<'_>) -> &'s str {
        n.utf8_text(self.src).unwrap_or("")
    }

    fn position(&self, n: Node<'_>) -> Position {
        syntax::position(self.text, n)
    }

    fn short(&self, n: Node<'_>) -> String {
        syntax::short(self.src, n)
    }

    /// Helper functions of the file: `function f(a) { return … }`, `const f = (a) => …`,
    /// methods; and commands defined from scripts.
    fn collect(&mut self, node: Node<'t>) {
        let mut cur = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cur).collect();
        for c in children {
            self.collect(c);
        }
        let (name, func) = match node.kind() {
            "function_declaration" | "method_definition" => {
                (node.child_by_field_name("name"), Some(node))
            }
            "variable_declarator" => (
                node.child_by_field_name("name"),
                node.child_by_field_name("value")
                    .filter(|v| matches!(v.kind(), "arrow_function" | "function_expression")),
            ),
            "call_expression" => {
                self.maybe_define(node);
                (None, None)
            }
            _ => (None, None),
        };
        let (Some(name), Some(func)) = (name, func) else {
            return;
        };
        let params = self.params(func);
        self.bodies
            .entry(self.t(name).to_string())
            .and_modify(|b| *b = None)
            .or_insert(Some(func));
        let ret = match func.child_by_field_name("body") {
            Some(b) if b.kind() == "statement_block" => first_return(b),
            Some(b) => Some(b),
            None => None,
        };
        let key = self.t(name).to_string();
        match ret {
            Some(r) => {
                let slot = self.funcs.entry(key).or_insert(Some((params, r)));
                if slot.as_ref().is_some_and(|(_, n)| *n != r) {
                    *slot = None;
                }
            }
            None => {
                self.funcs.insert(key, None);
            }
        }
    }

    fn params(&self, func: Node<'_>) -> Vec<String> {
        if let Some(p) = func.child_by_field_name("parameter") {
            return vec![self.t(p).to_string()];
        }
        let Some(ps) = func.child_by_field_name("parameters") else {
            return Vec::new();
        };
        let mut cur = ps.walk();
        ps.named_children(&mut cur)
            .map(|p| match p.kind() {
                "assignment_pattern" => p
                    .child_by_field_name("left")
                    .map_or(String::new(), |l| self.t(l).to_string()),
                // TypeScript: `uid: string`, `uid?: string`, `uid = 1`.
                "required_parameter" | "optional_parameter" => p
                    .child_by_field_name("pattern")
                    .map_or(String::new(), |l| self.t(l).to_string()),
                _ => self.t(p).to_string(),
            })
            .collect()
    }

    /// `redis.defineCommand("name", { numberOfKeys: 2, lua })`.
    fn maybe_define(&mut self, call: Node<'t>) {
        let Some((_, method)) = self.method(call) else {
            return;
        };
        if !self
            .profiles
            .iter()
            .any(|p| p.scripts.define.as_deref() == Some(method))
        {
            return;
        }
        let args = positional(call);
        let (Some(name), Some(opts)) = (args.first(), args.get(1)) else {
            return;
        };
        let name = self.template(*name, 0);
        if !name.is_literal() || opts.kind() != "object" {
            return;
        }
        if let Some(n) = object_field(*opts, "numberOfKeys", self.src)
            .and_then(|v| self.t(v).parse::<usize>().ok())
        {
            self.defined.insert(name.text(), n);
        }
    }

    fn walk(&mut self, node: Node<'t>) {
        let mut cur = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cur).collect();
        for c in children {
            self.walk(c);
        }
        match node.kind() {
            "call_expression" => {
                self.hand_off(node);
                self.call(node);
            }
            _ => {
                if let Some((n, v)) = binding(node) {
                    self.maybe_pipe(v, self.t(n).to_string(), node);
                }
            }
        }
    }

    fn maybe_pipe(&mut self, value: Node<'t>, name: String, at: Node<'t>) {
        if let Some(atomic) = self.pipe_call(value) {
            self.pipes.insert(
                (scope_of(&self.up, at), name),
                Pipe::new(atomic, (at.start_byte(), at.end_byte())),
            );
        }
    }

    /// Whether `call` makes a pipeline, and whether it is MULTI/EXEC (through parentheses
    /// and TypeScript's casts).
    fn pipe_call(&self, mut call: Node<'t>) -> Option<bool> {
        while call.kind() == "parenthesized_expression" || typed(call.kind()) {
            call = match call.kind() {
                "parenthesized_expression" => call.named_child(0)?,
                _ => untyped(call)?,
            };
        }
        if call.kind() != "call_expression" {
            return None;
        }
        let (_, method) = self.method(call)?;
        self.profiles.iter().find_map(|p| {
            if p.pipeline.make_atomic.iter().any(|m| m == method) {
                Some(true)
            } else if p.pipeline.make.iter().any(|m| m == method) {
                Some(p.pipeline.atomic_by_default)
            } else {
                None
            }
        })
    }

    fn method(&self, call: Node<'t>) -> Option<(Node<'t>, &'s str)> {
        let f = call.child_by_field_name("function")?;
        if f.kind() != "member_expression" {
            return None;
        }
        Some((
            f.child_by_field_name("object")?,
            self.t(f.child_by_field_name("property")?),
        ))
    }

    fn pipe_key(&self, receiver: Node<'t>) -> Option<((usize, String), Option<Node<'t>>)> {
        let mut r = receiver;
        loop {
            match r.kind() {
                "identifier" => {
                    let key = (scope_of(&self.up, r), self.t(r).to_string());
                    return self.pipes.contains_key(&key).then_some((key, None));
                }
                "call_expression" => {
                    if self.pipe_call(r).is_some() {
                        return Some(((r.start_byte(), String::new()), Some(r)));
                    }
                    r = self.method(r)?.0;
                }
                "await_expression" | "parenthesized_expression" => r = r.named_child(0)?,
                k if typed(k) => r = untyped(r)?,
                _ => return None,
            }
        }
    }

    /// `addJob(multi, job)`, `this.enqueue(pipeline, j)`: what the function queues on the
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
            // `multi.del.apply(multi, keys)` is the pipeline's own command (see `call`).
            "member_expression"
                if f.child_by_field_name("property")
                    .is_some_and(|p| matches!(self.t(p), "apply" | "call" | "bind")) =>
            {
                return;
            }
            "member_expression" => match (
                f.child_by_field_name("object"),
                f.child_by_field_name("property"),
            ) {
                (Some(o), Some(n)) => (Some(o), self.t(n).to_string()),
                _ => return,
            },
            _ => return,
        };
        let own = receiver.and_then(|r| self.pipe_key(r)).map(|(k, _)| k);
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
                receiver.is_none_or(|r| self.t(r) == "this")
                    && !self.following.contains(&name)
                    && self.following.len() < syntax::DEPTH / 2
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
            let src = self.src;
            let Some(p) = self.pipes.get_mut(&key) else {
                continue;
            };
            let in_loop = loop_between(&self.up, node, p.made, src);
            p.hand_followed(&callee, queued, in_loop);
        }
    }

    fn call(&mut self, call: Node<'t>) {
        let Some((receiver, method)) = self.method(call) else {
            return;
        };
        // `multi.del.apply(multi, keys)`, `client.mget.call(client, …keys)`: the command,
        // its keys a runtime list.
        if matches!(method, "apply" | "call")
            && receiver.kind() == "member_expression"
            && let (Some(obj), Some(prop)) = (
                receiver.child_by_field_name("object"),
                receiver.child_by_field_name("property"),
            )
            && let Some((cmd, _)) = syntax::command_of(self.profiles, self.t(prop))
            && (self.pipe_key(obj).is_some() || self.named_like_redis(obj))
        {
            let pipe = self.pipe_key(obj).map(|(k, _)| k);
            let keys = CallKeys {
                keys: Vec::new(),
                unknown: Some(Unknown::RuntimeList(self.short(call))),
            };
            self.send(call, pipe.as_ref(), SiteKind::Command, &cmd, keys);
            return;
        }
        let pipe = self.pipe_key(receiver);
        if let Some((key, Some(root))) = &pipe
            && !self.pipes.contains_key(key)
            && let Some(atomic) = self.pipe_call(*root)
        {
            self.pipes.insert(
                key.clone(),
                Pipe::new(atomic, (root.start_byte(), root.end_byte())),
            );
        }
        let pipe = pipe.map(|(k, _)| k);
        let profiles = self.profiles;
        if let Some(key) = &pipe {
            for p in profiles {
                let plain = p.pipeline.run_plain.iter().any(|m| m == method);
                if plain || p.pipeline.run.iter().any(|m| m == method) {
                    self.run_pipe(key, call, plain);
                    return;
                }
            }
        }
        if let Some(n) = self.defined.get(method).copied() {
            // ioredis spreads array arguments into the command line, then takes the first
            // `numberOfKeys` items as keys (`limiter([key, points, ttl])` has one key).
            let (flat, rest) = self.flat_args(&command_args(call, self.src));
            let mut keys = CallKeys::default();
            for a in flat.iter().take(n) {
                keys.keys.push(self.template(*a, 0));
            }
            if flat.len() < n {
                keys.unknown = rest.map(Unknown::RuntimeList);
            }
            self.send(
                call,
                pipe.as_ref(),
                SiteKind::Script,
                &format!("EVALSHA {method}"),
                keys,
            );
            return;
        }
        for p in profiles {
            // `eval(script, numkeys, …)` (ioredis) or `eval(script, { keys })` (node-redis):
            // told apart by the second argument.
            let options = positional(call)
                .get(1)
                .is_some_and(|o| o.kind() == "object");
            if !options
                && p.scripts.eval.iter().any(|m| m == method)
                && self.redis_receiver(receiver, method)
            {
                let keys = self.eval_keys(call);
                self.send(call, pipe.as_ref(), SiteKind::Script, "EVAL", keys);
                return;
            }
            if options
                && p.scripts.eval_options.iter().any(|m| m == method)
                && self.redis_receiver(receiver, method)
            {
                let mut keys = CallKeys::default();
                if let Some(o) = positional(call).get(1).filter(|o| o.kind() == "object")
                    && let Some(k) = object_field(*o, &p.scripts.keys_keyword, self.src)
                {
                    self.list_into(k, &mut keys);
                }
                self.send(call, pipe.as_ref(), SiteKind::Script, "EVAL", keys);
                return;
            }
            if p.raw.iter().any(|m| m == method) && self.redis_receiver(receiver, method) {
                let mut args = command_args(call, self.src);
                // `sendCommand(['MGET', a, b])`: one array.
                if args.len() == 1 && args[0].kind() == "array" {
                    let mut cur = args[0].walk();
                    args = args[0].named_children(&mut cur).collect();
                }
                let Some(first) = args.first() else { return };
                let name = self.template(*first, 0);
                if !name.is_literal() {
                    return;
                }
                let cmd = name.text().to_ascii_uppercase();
                let keys = self.line_keys(&cmd, &args[1..]);
                self.send(call, pipe.as_ref(), SiteKind::Command, &cmd, keys);
                return;
            }
        }
        // A command method: named in a profile, or named like a command.
        let Some((cmd, how)) = syntax::command_of(profiles, method) else {
            return;
        };
        // The calls that make and run pipelines are no commands of their own.
        if profiles.iter().any(|p| {
            let pl = &p.pipeline;
            [&pl.make, &pl.make_atomic, &pl.run, &pl.run_plain]
                .iter()
                .any(|l| l.iter().any(|m| m == method))
        }) {
            return;
        }
        if pipe.is_none() && !self.redis_receiver(receiver, method) {
            return;
        }
        let args = command_args(call, self.src);
        let keys = match how {
            Some(how) => self.shaped_keys(&args, how, &cmd),
            None => self.line_keys(&cmd, &args),
        };
        self.send(call, pipe.as_ref(), SiteKind::Command, &cmd, keys);
    }

    /// Records the keys of one command and queues it on its pipeline or makes it a site.
    fn send(
        &mut self,
        call: Node<'t>,
        pipe: Option<&(usize, String)>,
        kind: SiteKind,
        op: &str,
        keys: CallKeys,
    ) {
        let at = self.position(call);
        for k in &keys.keys {
            self.out.keys.push(KeyUse {
                template: k.clone(),
                at,
                how: op.to_string(),
            });
        }
        match pipe {
            Some(key) => {
                let in_loop = self
                    .pipes
                    .get(key)
                    .is_some_and(|p| loop_between(&self.up, call, p.made, self.src));
                if let Some(p) = self.pipes.get_mut(key) {
                    p.queue(op, keys, in_loop);
                }
            }
            None if kind == SiteKind::Script || keys.keys.len() > 1 || keys.unknown.is_some() => {
                self.out.sites.push(Site {
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

    fn run_pipe(&mut self, key: &(usize, String), call: Node<'_>, plain: bool) {
        let at = self.position(call);
        let text = self.text;
        if let Some(site) = self
            .pipes
            .get_mut(key)
            .and_then(|p| p.send(text, at, plain))
        {
            self.out.sites.push(site);
        }
    }

    fn redis_receiver(&self, receiver: Node<'t>, method: &str) -> bool {
        const COMMON: &[&str] = &[
            "get", "set", "del", "exists", "keys", "type", "call", "eval", "touch", "copy", "sort",
            "append", "rename", "expire", "publish",
        ];
        if !COMMON.contains(&method) && method.len() > 3 {
            return true;
        }
        self.named_like_redis(receiver)
    }

    /// Whether `receiver` is named like a Redis client, pipeline or transaction.
    fn named_like_redis(&self, receiver: Node<'t>) -> bool {
        let last = syntax::receiver_name(self.t(receiver));
        // (Not `store`: in Node a store is mostly a session or cache store whose `touch`,
        // `get` and `del` are its own, as connect-redis's and express-session's are.)
        ["r", "rc", "rd", "rds", "db", "red", "io", "cluster"].contains(&last.as_str())
            || [
                "redis", "client", "conn", "cache", "pipe", "multi", "valkey",
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
                "object" | "arrow_function" | "function_expression" => {}
                _ => flat.push(*a),
            }
        }
        // A spread stands for one filler: keys found at or past it come from a runtime list;
        // keys before it are known (`hset(key, ...fields)`).
        let spread = flat.iter().position(|a| a.kind() == "spread_element");
        let line: Vec<Vec<u8>> = std::iter::once(cmd.as_bytes().to_vec())
            .chain(flat.iter().map(|a| {
                let t = self.template(*a, 0);
                if t.is_literal() {
                    t.text().into_bytes()
                } else {
                    b"x".to_vec()
                }
            }))
            .collect();
        match crate::command::table().keys(&line) {
            Ok(refs) => {
                for r in refs {
                    if spread.is_some_and(|s| r.pos > s) {
                        let s = spread.expect("a spread");
                        keys.unknown = Some(Unknown::RuntimeList(self.short(flat[s])));
                        break;
                    }
                    if let Some(a) = flat.get(r.pos - 1) {
                        keys.keys.push(self.template(*a, 0));
                    }
                }
            }
            Err(_) => {
                if let Some(s) = spread {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(flat[s])));
                }
                // One argument that is a runtime list of keys (`mget(keys)`).
                if let [one] = flat.as_slice()
                    && one.kind() == "identifier"
                    && looks_plural(self.t(*one))
                {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(*one)));
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
            ArgShape::First => {
                if let Some(a) = args.first() {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::SkipFirst => {
                for a in args.iter().skip(1) {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::Mapping => match args.first() {
                Some(o) if o.kind() == "object" => {
                    let mut cur = o.walk();
                    for pair in o.named_children(&mut cur) {
                        match pair.kind() {
                            "pair" => {
                                if let Some(k) = pair.child_by_field_name("key") {
                                    keys.keys.push(self.key_of_property(k));
                                }
                            }
                            _ => keys.unknown = Some(Unknown::RuntimeList(self.short(pair))),
                        }
                    }
                }
                Some(a) if a.kind() == "array" => {
                    // `mSet([[k, v], …])` or `mSet([k, v, …])`.
                    let mut cur = a.walk();
                    let items: Vec<Node<'t>> = a.named_children(&mut cur).collect();
                    for (i, e) in items.iter().enumerate() {
                        if e.kind() == "array" {
                            if let Some(k) = e.named_child(0) {
                                keys.keys.push(self.template(k, 0));
                            }
                        } else if i % 2 == 0 {
                            keys.keys.push(self.template(*e, 0));
                        }
                    }
                }
                Some(a) => keys.unknown = Some(Unknown::RuntimeList(self.short(*a))),
                None => {}
            },
            ArgShape::DestList | ArgShape::OpDestList => {
                let skip = usize::from(how == ArgShape::OpDestList);
                if let Some(d) = args.get(skip) {
                    keys.keys.push(self.template(*d, 0));
                }
                for a in args.iter().skip(skip + 1).take(1) {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::List => {
                let timeout = matches!(cmd, "BLPOP" | "BRPOP");
                let n = if timeout && args.len() > 1 {
                    args.len() - 1
                } else {
                    args.len()
                };
                for a in &args[..n] {
                    self.list_into(*a, &mut keys);
                }
            }
        }
        keys
    }

    fn key_of_property(&self, k: Node<'t>) -> Template {
        match k.kind() {
            "property_identifier" => Template::lit(self.t(k)),
            "computed_property_name" => k
                .named_child(0)
                .map_or_else(|| Template::var(self.short(k)), |e| self.template(e, 0)),
            _ => self.template(k, 0),
        }
    }

    fn eval_keys(&self, call: Node<'t>) -> CallKeys {
        let mut keys = CallKeys::default();
        let args = command_args(call, self.src);
        let Some(n) = args.get(1) else {
            return keys;
        };
        match self.t(*n).parse::<usize>() {
            Ok(n) => {
                let mut flat = Vec::new();
                for a in args.iter().skip(2) {
                    if a.kind() == "array" {
                        let mut cur = a.walk();
                        flat.extend(a.named_children(&mut cur));
                    } else {
                        flat.push(*a);
                    }
                }
                for a in flat.iter().take(n) {
                    if a.kind() == "spread_element" {
                        keys.unknown = Some(Unknown::RuntimeList(self.short(*a)));
                    } else {
                        keys.keys.push(self.template(*a, 0));
                    }
                }
            }
            Err(_) => {
                keys.unknown = Some(Unknown::RuntimeList(format!("numkeys {}", self.short(*n))))
            }
        }
        keys
    }

    /// A command's arguments as the client sends them: arrays spread into their items (also
    /// an array a variable holds, and the array `concat` is called on), up to the first item
    /// known only at runtime (a spread, a list named in the plural, what `concat` adds),
    /// which is returned as the second value and ends the items.
    fn flat_args(&self, args: &[Node<'t>]) -> (Vec<Node<'t>>, Option<String>) {
        let mut flat = Vec::new();
        let mut rest = None;
        for a in args {
            self.flatten_into(*a, &mut flat, &mut rest, 0);
            if rest.is_some() {
                break;
            }
        }
        (flat, rest)
    }

    fn flatten_into(
        &self,
        a: Node<'t>,
        flat: &mut Vec<Node<'t>>,
        rest: &mut Option<String>,
        depth: usize,
    ) {
        if rest.is_some() {
            return;
        }
        match a.kind() {
            "array" if depth <= DEPTH => {
                let mut cur = a.walk();
                for item in a.named_children(&mut cur) {
                    self.flatten_into(item, flat, rest, depth + 1);
                }
            }
            "spread_element" => *rest = Some(self.short(a)),
            "call_expression" if self.method(a).is_some_and(|(_, m)| m == "concat") => {
                // `[key].concat(args)`: the array's items, then a runtime list.
                if let Some(arr) = a
                    .child_by_field_name("function")
                    .and_then(|f| f.child_by_field_name("object"))
                    .filter(|o| o.kind() == "array")
                {
                    self.flatten_into(arr, flat, rest, depth + 1);
                }
                if rest.is_none() {
                    *rest = Some(self.short(a));
                }
            }
            "call_expression"
                if self
                    .method(a)
                    .is_some_and(|(_, m)| matches!(m, "map" | "filter" | "flatMap")) =>
            {
                *rest = Some(self.short(a));
            }
            "identifier" if depth <= DEPTH => match self.local_value(a, self.t(a), 0) {
                Some(v) if v.kind() == "array" => self.flatten_into(v, flat, rest, depth + 1),
                _ if looks_plural(self.t(a)) => *rest = Some(self.short(a)),
                _ => flat.push(a),
            },
            _ => flat.push(a),
        }
    }

    fn list_into(&self, a: Node<'t>, keys: &mut CallKeys) {
        match a.kind() {
            "array" => {
                let mut cur = a.walk();
                for item in a.named_children(&mut cur) {
                    self.list_into(item, keys);
                }
            }
            "spread_element" => keys.unknown = Some(Unknown::RuntimeList(self.short(a))),
            "call_expression"
                if self
                    .method(a)
                    .is_some_and(|(_, m)| matches!(m, "map" | "filter" | "concat" | "flatMap")) =>
            {
                keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
            }
            "identifier" | "shorthand_property_identifier" => {
                match self.local_value(a, self.t(a), 0) {
                    Some(v) if v.kind() == "array" => self.list_into(v, keys),
                    _ if looks_plural(self.t(a)) => {
                        keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
                    }
                    _ => keys.keys.push(self.template(a, 0)),
                }
            }
            _ => keys.keys.push(self.template(a, 0)),
        }
    }

    /// The value last given to `name` before `at` in its function, else at the top of the
    /// file.
    fn local_value(&self, at: Node<'t>, name: &str, depth: usize) -> Option<Node<'t>> {
        if depth > DEPTH {
            return None;
        }
        for p in self.up.around(at) {
            if is_function(p.kind()) || self.up.of(p).is_none() {
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
            "string" => {
                let mut t = Template::default();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    match c.kind() {
                        "string_fragment" => t.push_lit(self.t(c)),
                        "escape_sequence" => t.push_lit(&unescape(self.t(c))),
                        _ => {}
                    }
                }
                t
            }
            "template_string" => {
                let mut t = Template::default();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    match c.kind() {
                        "string_fragment" => t.push_lit(self.t(c)),
                        "escape_sequence" => t.push_lit(&unescape(self.t(c))),
                        "template_substitution" => match c.named_child(0) {
                            Some(e) => t.push(self.interpolated(e, depth)),
                            None => t.parts.push(Part::Var(self.short(c))),
                        },
                        _ => {}
                    }
                }
                t
            }
            "number" => Template::lit(self.t(n)),
            // `keys.PREFIX`: a constant another file defines.
            "member_expression" => n
                .child_by_field_name("property")
                .and_then(|p| self.globals.constant(self.t(p)))
                .unwrap_or_else(|| Template::var(self.short(n))),
            k if typed(k) => untyped(n).map_or_else(
                || Template::var(self.short(n)),
                |c| self.template(c, depth + 1),
            ),
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
                    Some(v) if !contains(v, n) => self.template(v, depth + 1),
                    Some(_) => Template::var(name),
                    None => self
                        .globals
                        .constant(name)
                        .filter(|_| !syntax::is_parameter(&self.up, n, name, self.src, FUNCTIONS))
                        .unwrap_or_else(|| Template::var(name)),
                }
            }
            "call_expression" => {
                let Some(f) = n.child_by_field_name("function") else {
                    return Template::var(self.short(n));
                };
                let name = match f.kind() {
                    "identifier" => self.t(f),
                    "member_expression" => f
                        .child_by_field_name("property")
                        .map(|p| self.t(p))
                        .unwrap_or(""),
                    _ => "",
                };
                if name == "String"
                    && let Some(a) = positional(n).first()
                {
                    return self.template(*a, depth + 1);
                }
                self.helper(name, &positional(n), n, depth)
            }
            _ => Template::var(self.short(n)),
        }
    }

    fn interpolated(&self, e: Node<'t>, depth: usize) -> Template {
        let t = self.template(e, depth + 1);
        if t.is_literal()
            || t.parts.len() > 1
            || !matches!(e.kind(), "identifier" | "member_expression")
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

/// TypeScript's expressions with a type around them: `x as T`, `x!`, `x satisfies T`, `<T>x`.
fn typed(kind: &str) -> bool {
    matches!(
        kind,
        "as_expression" | "non_null_expression" | "satisfies_expression" | "type_assertion"
    )
}

/// The expression inside a [`typed`] one.
fn untyped(n: Node<'_>) -> Option<Node<'_>> {
    let mut cur = n.walk();
    let mut exprs = n
        .named_children(&mut cur)
        .filter(|c| !c.kind().ends_with("type") && c.kind() != "type_arguments");
    match n.kind() {
        // `<T>x`: the type comes first.
        "type_assertion" => exprs.last(),
        _ => exprs.next(),
    }
}

/// `const name = value` or `name = value`: the name (an identifier) and the value.
fn binding(node: Node<'_>) -> Option<(Node<'_>, Node<'_>)> {
    let (name, value) = match node.kind() {
        "variable_declarator" => ("name", "value"),
        "assignment_expression" => ("left", "right"),
        _ => return None,
    };
    let n = node.child_by_field_name(name)?;
    (n.kind() == "identifier").then_some((n, node.child_by_field_name(value)?))
}

fn positional<'t>(call: Node<'t>) -> Vec<Node<'t>> {
    let Some(args) = call.child_by_field_name("arguments") else {
        return Vec::new();
    };
    let mut cur = args.walk();
    args.named_children(&mut cur)
        .filter(|a| a.kind() != "comment")
        .collect()
}

/// A command call's arguments without a trailing callback (`client.del(key, (err, n) => …)`,
/// `client.del(key, done)`: node-redis 3 and ioredis take one last), which is never part of
/// the command line.
fn command_args<'t>(call: Node<'t>, src: &[u8]) -> Vec<Node<'t>> {
    let mut args = positional(call);
    let literal = |a: &Node<'_>| matches!(a.kind(), "arrow_function" | "function_expression");
    let callback = |a: &Node<'_>| match a.kind() {
        _ if literal(a) => true,
        // A function passed by a callback's name (not the only argument: a command has a key).
        "identifier" => {
            let name = a.utf8_text(src).unwrap_or("");
            matches!(name, "cb" | "callback" | "done")
                || name.ends_with("Callback")
                || name.ends_with("_callback")
                || name.ends_with("Cb")
        }
        _ => false,
    };
    if args.len() > 1 && args.last().is_some_and(callback) || args.len() == 1 && literal(&args[0]) {
        args.pop();
    }
    args
}

fn object_field<'t>(o: Node<'t>, name: &str, src: &[u8]) -> Option<Node<'t>> {
    let mut cur = o.walk();
    o.named_children(&mut cur).find_map(|p| {
        if p.kind() == "shorthand_property_identifier" && p.utf8_text(src).unwrap_or("") == name {
            return Some(p);
        }
        (p.kind() == "pair"
            && p.child_by_field_name("key")
                .is_some_and(|k| k.utf8_text(src).unwrap_or("").trim_matches(['"', '\'']) == name))
        .then(|| p.child_by_field_name("value"))
        .flatten()
    })
}

fn first_return(body: Node<'_>) -> Option<Node<'_>> {
    let mut cur = body.walk();
    for c in body.named_children(&mut cur) {
        if c.kind() == "return_statement" {
            return c.named_child(0);
        }
        if is_function(c.kind()) || c.kind() == "class_declaration" {
            continue;
        }
        if let Some(r) = first_return(c) {
            return Some(r);
        }
    }
    None
}

fn scope_of<'t>(up: &syntax::Parents<'t>, n: Node<'t>) -> usize {
    syntax::scope_start(up, n, FUNCTIONS)
}

/// Whether a loop (or a callback of `forEach`/`map`) encloses `call` but not the pipeline
/// made at `made`.
fn loop_between<'t>(
    up: &syntax::Parents<'t>,
    call: Node<'t>,
    made: (usize, usize),
    src: &[u8],
) -> bool {
    for x in up.around(call) {
        let outside = !(x.start_byte() <= made.0 && made.1 <= x.end_byte());
        let looping = match x.kind() {
            "for_statement" | "for_in_statement" | "while_statement" | "do_statement" => true,
            "arrow_function" | "function_expression" => up
                .of(x)
                .and_then(|args| up.of(args))
                .filter(|c| c.kind() == "call_expression")
                .and_then(|c| c.child_by_field_name("function"))
                .and_then(|f| f.child_by_field_name("property"))
                .is_some_and(|m| {
                    matches!(
                        m.utf8_text(src).unwrap_or(""),
                        "forEach" | "map" | "flatMap"
                    )
                }),
            _ => false,
        };
        if looping && outside {
            return true;
        }
        if is_function(x.kind()) && !looping {
            return false;
        }
    }
    false
}

/// How JavaScript gives a name a value: `const|let|var name = value` or `name = value`,
/// outside nested functions and classes.
const BINDS: syntax::Binds = syntax::Binds {
    skip: |kind| is_function(kind) || kind == "class_declaration",
    pairs: |c, out| out.extend(binding(c)),
    ended: true,
};

impl<'t> syntax::Follows<'t> for Scanner<'_, 't> {
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

    fn scan_js(src: &str) -> FileFindings {
        scan(
            src,
            &Profile::builtin("javascript"),
            Dialect::JavaScript,
            &Globals::default(),
        )
        .unwrap()
    }

    #[test]
    fn other_objects_methods_called_through_call_are_not_commands() {
        let f = scan_js(
            r#"
ArrayAdapter.__super__.select.call(this, data);
RegExp.prototype.exec.apply(this, arguments);
fixed.exec.call(regex, str);
const multi = client.multi();
multi.del.apply(multi, keys);
multi.exec();
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(ops, ["DEL"], "{:?}", f.sites);
    }

    #[test]
    fn pipelines_handed_to_functions() {
        let f = scan_js(
            r#"
function addJob(multi, id) {
  multi.hset(`job:${id}`, "state", "queued");
  multi.rpush("queue:default", id);
}
class Queue {
  push(pipeline, id) { pipeline.lpush(`q:${this.name}`, id); }
  async add(id) {
    const multi = redis.multi();
    addJob(multi, id);
    this.push(multi, id);
    await multi.exec();
  }
  async touch(id) {
    const p = redis.pipeline();
    helpers.fill(p, id);
    await p.exec();
  }
}
"#,
        );
        assert_eq!(f.sites.len(), 2, "{:?}", f.sites);
        assert_eq!(f.sites[0].op, "HSET RPUSH LPUSH");
        assert_eq!(f.sites[0].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(f.sites[1].op, "helpers.fill()");
        assert!(matches!(f.sites[1].verdict(), Verdict::Depends(_)));
        // `multi.del.apply(multi, keys)` is DEL over a runtime list, not a hand-off.
        let f = scan_js(
            "async function clean(keys) { const multi = redis.multi(); multi.del.apply(multi, keys); await multi.exec(); }",
        );
        assert_eq!(f.sites.len(), 1, "{:?}", f.sites);
        assert_eq!(f.sites[0].op, "DEL");
        assert!(matches!(f.sites[0].verdict(), Verdict::Depends(_)));
    }

    #[test]
    fn ioredis_forms() {
        let f = scan_js(
            r#"
const Redis = require("ioredis");
const redis = new Redis();
const PREFIX = "app";
const userKey = (id) => `${PREFIX}:user:${id}`;

async function load(id) {
  const a = await redis.mget(userKey(id), `${PREFIX}:user:${id}:settings`);
  const b = await redis.mget([`u:{${id}}:a`, `u:{${id}}:b`]);
  await redis.pipeline().set("x:" + id, 1).incr("stats").exec();
  const m = redis.multi();
  for (const k of ids) { m.del(k); }
  await m.exec();
  await redis.eval("return 1", 2, `lock:{${id}}`, `lock:{${id}}:owner`, "tok");
  redis.defineCommand("move", { numberOfKeys: 2, lua: "return 1" });
  await redis.move(`q:${id}:a`, `q:${id}:b`, 5);
  const map = new Map(); map.get("not-a-key");
}
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            ["MGET", "MGET", "SET INCR", "DEL", "EVAL", "EVALSHA move"],
            "{:?}",
            f.sites
        );
        assert_eq!(
            texts(&f.sites[0]),
            ["app:user:<id>", "app:user:<id>:settings"]
        );
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[2].kind, SiteKind::Pipeline);
        assert!(matches!(f.sites[2].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(f.sites[3].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[3].verdict(), Verdict::Depends(_)));
        assert!(matches!(f.sites[4].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(f.sites[5].verdict(), Verdict::CrossSlot(_)));
        assert!(f.keys.iter().all(|k| k.template.text() != "not-a-key"));
    }

    #[test]
    fn callbacks_are_no_keys_and_defined_commands_take_their_first_items() {
        let f = scan_js(
            r#"
const Redis = require("ioredis");
const client = new Redis();
client.defineCommand("limit", { numberOfKeys: 1, lua: "return 1" });
client.defineCommand("pair", { numberOfKeys: 2, lua: "return 1" });
function remove(key, done) {
  client.del(key, (err, n) => done(err, n));
  client.del(key, function (err) { done(err); });
  client.del(key, done);
  client.unlink(key, onDelCallback);
  client.mget(`a:${key}`, `b:${key}`, (err, v) => done(err, v));
}
async function take(key, points, ttl, rest) {
  await client.limit([key, String(points), String(ttl)]);
  await client.limit([key].concat([String(points), String(ttl)]));
  await client.pair([key].concat(rest));
  await client.pair([`x:{${key}}`, `y:{${key}}`, String(points)]);
}
async function listen(redisClient, channel, handler) {
  await redisClient.sSubscribe(channel, handler, true);
  await redisClient.sSubscribe([`a:${channel}`, `b:${channel}`], handler);
}
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        // The one-key DEL and UNLINK calls are no sites: their callbacks are not keys.
        assert_eq!(
            ops,
            [
                "MGET",
                "EVALSHA limit",
                "EVALSHA limit",
                "EVALSHA pair",
                "EVALSHA pair",
                "SSUBSCRIBE"
            ],
            "{:?}",
            f.sites
        );
        assert_eq!(texts(&f.sites[0]), ["a:<key>", "b:<key>"]);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        for site in &f.sites[1..3] {
            assert_eq!(texts(site), ["<key>"]);
            assert!(matches!(site.verdict(), Verdict::OneSlot(_)), "{site:?}");
        }
        // Its second key comes from the runtime list `concat` adds.
        assert_eq!(texts(&f.sites[3]), ["<key>"]);
        assert!(matches!(f.sites[3].verdict(), Verdict::Depends(_)));
        assert_eq!(texts(&f.sites[4]), ["x:{<key>}", "y:{<key>}"]);
        assert!(matches!(f.sites[4].verdict(), Verdict::OneSlot(_)));
        // node-redis's listener and buffer flag follow the shard channels.
        assert_eq!(texts(&f.sites[5]), ["a:<channel>", "b:<channel>"]);
        assert!(f.keys.iter().all(|k| !k.template.text().contains("err")));
        assert!(
            f.keys
                .iter()
                .all(|k| !["<handler>", "<true>", "true"].contains(&k.template.text().as_str()))
        );
    }

    #[test]
    fn typescript_looks_through_types() {
        let src = r#"
import Redis from "ioredis";
const redis: Redis = new Redis();
const PREFIX: string = "shop";
function cartKey(uid: string, kind?: string): string {
  return `${PREFIX}:cart:${uid}:${kind}`;
}
export async function load(uid: string): Promise<void> {
  await redis.mget(cartKey(uid, "a"), `user:${uid}` as string);
  const p = (redis.pipeline() as any)!;
  p.get(`o:{${uid}}:a`!);
  p.get(`o:{${uid}}:b` satisfies string);
  await p.exec();
}
"#;
        for dialect in [Dialect::TypeScript, Dialect::Tsx] {
            let f = scan(
                src,
                &Profile::builtin("javascript"),
                dialect,
                &Globals::default(),
            )
            .unwrap();
            let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
            assert_eq!(ops, ["MGET", "GET GET"], "{dialect:?}: {:?}", f.sites);
            assert_eq!(texts(&f.sites[0]), ["shop:cart:<uid>:a", "user:<uid>"]);
            assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
            assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        }
        // `<T>x` is TypeScript's older cast (JSX in .tsx).
        let f = scan(
            "redis.mget(<string>`a:${id}`, <string>`b:${id}`);",
            &Profile::builtin("javascript"),
            Dialect::TypeScript,
            &Globals::default(),
        )
        .unwrap();
        assert_eq!(texts(&f.sites[0]), ["a:<id>", "b:<id>"]);
    }

    #[test]
    fn node_redis_forms() {
        let f = scan_js(
            r#"
import { createClient } from "redis";
const client = createClient();
export async function go(id, keys) {
  await client.mGet([`a:${id}`, `b:${id}`]);
  await client.multi().set(`s:{${id}}:x`, "1").get(`s:{${id}}:y`).exec();
  await client.multi().set(`p:${id}`, "1").get(`q:${id}`).execAsPipeline();
  await client.sUnionStore(`dst:${id}`, [`a:${id}`, `b:${id}`]);
  await client.del(keys);
  await client.eval("return 1", { keys: [`k:{${id}}`, `k:{${id}}:2`], arguments: [] });
  await client.sendCommand(["RENAME", `old:${id}`, `new:${id}`]);
}
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            [
                "MGET",
                "SET GET",
                "SET GET",
                "SUNIONSTORE",
                "DEL",
                "EVAL",
                "RENAME"
            ],
            "{:?}",
            f.sites
        );
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(f.sites[1].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[2].kind, SiteKind::Pipeline);
        assert!(matches!(f.sites[4].verdict(), Verdict::Depends(_)));
        assert!(matches!(f.sites[5].verdict(), Verdict::OneSlot(_)));
        assert_eq!(texts(&f.sites[6]), ["old:<id>", "new:<id>"]);
    }
}
