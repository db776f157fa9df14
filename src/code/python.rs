//! Python source: redis-py calls and the keys they send, read from the syntax tree
//! (tree-sitter's Python grammar).
//!
//! Keys are followed through string literals, f-strings, `%` and `.format` formatting,
//! concatenation, local variables, module constants, class attributes and helper functions of
//! the same file (called with their arguments, a few calls deep); what cannot be followed is a
//! named placeholder. A pipeline is followed from the call that makes it (an assignment or a
//! `with … as`) through the commands queued on it to the call that sends them.

use super::profile::{ArgShape, Profile};
use super::syntax::{self, CallKeys, DEPTH, Pipe, contains, looks_plural, sorted, unescape};
use super::{
    FileFindings, Globals, KeyUse, Part, Position, Queuer, Site, SiteKind, Template, Unknown,
};
use std::collections::HashMap;
use tree_sitter::{Node, Parser};

/// Why a file could not be read as Python.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// The parser gave up (it recovers from most errors; this is a timeout or cancellation).
    #[error("the Python parser gave up on it")]
    NoTree,
    /// Text the reader does not read (nested too deep, or indented to more depths than the
    /// parser can hold).
    #[error(transparent)]
    Unreadable(#[from] super::guard::Unreadable),
}

/// The findings of one Python file under `profiles`, with what other files define.
pub fn scan(
    text: &str,
    profiles: &[Profile],
    globals: &Globals,
) -> Result<FileFindings, ParseError> {
    let tree = parse(text)?;
    let mut s = Scanner::new(text, tree.root_node(), profiles, globals, false);
    s.defs.collect(tree.root_node(), s.src, None);
    s.walk(tree.root_node());
    Ok(s.out)
}

/// Names of the file: module constants, class attributes, functions.
#[derive(Default)]
struct Defs<'t> {
    /// Module-level `NAME = value` (a name assigned more than once is left out).
    consts: HashMap<String, Option<Node<'t>>>,
    /// `Class.NAME = value` in class bodies, by `Class.NAME` and by `NAME` for `self.NAME`.
    attrs: HashMap<String, Option<Node<'t>>>,
    /// Functions and methods by name: (parameter names, the returned expression).
    funcs: HashMap<String, Option<(Vec<String>, Node<'t>)>>,
    /// What an instance of a class has, by `Class.name`: a `@property`'s returned expression,
    /// or the value `__init__` assigns to `self.name`.
    members: HashMap<String, Option<Node<'t>>>,
}

impl<'t> Defs<'t> {
    fn collect(&mut self, node: Node<'t>, src: &[u8], class: Option<&str>) {
        let mut cur = node.walk();
        for child in node.named_children(&mut cur) {
            match child.kind() {
                "expression_statement" => {
                    if let Some(a) = child.named_child(0).filter(|a| a.kind() == "assignment")
                        && let (Some(l), Some(r)) = (
                            a.child_by_field_name("left"),
                            a.child_by_field_name("right"),
                        )
                        && l.kind() == "identifier"
                    {
                        let name = text_of(l, src).to_string();
                        match class {
                            Some(c) => {
                                once(&mut self.attrs, format!("{c}.{name}"), r);
                                once(&mut self.attrs, name, r);
                            }
                            None => once(&mut self.consts, name, r),
                        }
                    }
                }
                "class_definition" => self.class(child, src),
                "function_definition" => {
                    self.function(child, src);
                    if let Some(c) = class {
                        self.member(child, src, c, false);
                    }
                }
                "decorated_definition" => {
                    if let Some(d) = child.child_by_field_name("definition") {
                        match d.kind() {
                            "function_definition" => {
                                self.function(d, src);
                                if let Some(c) = class {
                                    let mut cur = child.walk();
                                    let property = child.named_children(&mut cur).any(|x| {
                                        x.kind() == "decorator"
                                            && text_of(x, src).contains("property")
                                    });
                                    self.member(d, src, c, property);
                                }
                            }
                            "class_definition" => self.class(d, src),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A method of `class`: a property's value, or what `__init__` sets on `self`.
    fn member(&mut self, f: Node<'t>, src: &[u8], class: &str, property: bool) {
        let (Some(name), Some(body)) =
            (f.child_by_field_name("name"), f.child_by_field_name("body"))
        else {
            return;
        };
        let name = text_of(name, src);
        if property {
            if let Some(r) = first_return(body) {
                once(&mut self.members, format!("{class}.{name}"), r);
            }
        } else if name == "__init__" {
            let mut found = Vec::new();
            self_assignments(body, src, &mut found);
            // `self.name = name`: a parameter is a runtime value, not its default.
            let params = params_of(f, src);
            for (attr, value) in found {
                if value.kind() == "identifier" && params.iter().any(|p| p == text_of(value, src)) {
                    continue;
                }
                once(&mut self.members, format!("{class}.{attr}"), value);
            }
        }
    }

    fn class(&mut self, c: Node<'t>, src: &[u8]) {
        if let (Some(n), Some(body)) =
            (c.child_by_field_name("name"), c.child_by_field_name("body"))
        {
            let name = text_of(n, src).to_string();
            self.collect(body, src, Some(&name));
        }
    }

    fn function(&mut self, f: Node<'t>, src: &[u8]) {
        let (Some(name), Some(_), Some(body)) = (
            f.child_by_field_name("name"),
            f.child_by_field_name("parameters"),
            f.child_by_field_name("body"),
        ) else {
            return;
        };
        let names = all_params(f, src);
        // A helper that makes a key returns it: its first `return` with a value.
        let ret = first_return(body);
        let key = text_of(name, src).to_string();
        match ret {
            Some(r) => {
                let slot = self.funcs.entry(key).or_insert(Some((names.clone(), r)));
                if slot.as_ref().is_some_and(|(_, n)| *n != r) {
                    *slot = None;
                }
            }
            None => {
                self.funcs.insert(key, None);
            }
        }
    }
}

fn once<'t>(map: &mut HashMap<String, Option<Node<'t>>>, name: String, value: Node<'t>) {
    map.entry(name)
        .and_modify(|v| *v = None)
        .or_insert(Some(value));
}

fn first_return(body: Node<'_>) -> Option<Node<'_>> {
    let mut cur = body.walk();
    for c in body.named_children(&mut cur) {
        match c.kind() {
            "return_statement" => return c.named_child(0),
            "function_definition" | "class_definition" => {}
            // Only statements hold a `return` (expressions are not looked into).
            k if k == "block" || k.ends_with("_statement") || k.ends_with("_clause") => {
                if let Some(r) = first_return(c) {
                    return Some(r);
                }
            }
            _ => {}
        }
    }
    None
}

/// The syntax tree of `text`, or why it is not read: indented to more depths than the parser's
/// scanner can hold (it would abort the process), or nested too deep to walk.
fn parse(text: &str) -> Result<tree_sitter::Tree, ParseError> {
    super::guard::python_indents(text)?;
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(ParseError::NoTree)?;
    super::guard::check_depth(&tree)?;
    Ok(tree)
}

fn text_of<'s>(n: Node<'_>, src: &'s [u8]) -> &'s str {
    n.utf8_text(src).unwrap_or("")
}

/// What one Python file defines for the others: module constants, class attributes (by
/// name) and functions that return a key.
pub fn exports(
    text: &str,
    profiles: &[Profile],
    tree_globals: &Globals,
    module: Option<&str>,
) -> Result<Globals, ParseError> {
    let mut out = Globals::default();
    let tree = parse(text)?;
    // Functions that queue commands on a pipeline they are handed; each pass follows the
    // file's own such functions one call deeper.
    let mut own = Globals::default();
    for _ in 0..QUEUER_PASSES {
        // The tree's names with this file's own queuers over them (copied only when the file
        // has any: most files have none).
        let overlaid;
        let known = if own.has_queuers() {
            let mut k = tree_globals.clone();
            k.overlay(&own);
            overlaid = k;
            &overlaid
        } else {
            tree_globals
        };
        let mut s = Scanner::new(text, tree.root_node(), profiles, known, true);
        s.module = module;
        s.defs.collect(tree.root_node(), s.src, None);
        s.walk(tree.root_node());
        let mut found = Globals::default();
        for (name, q) in s.queuers.take().unwrap_or_default() {
            found.add_queuer(&name, q);
        }
        // Another pass reads the same file with the same names: nothing new.
        let settled = found == own;
        own = found;
        if settled {
            break;
        }
    }
    out.merge(own);
    let none = Globals::default();
    let mut s = Scanner::new(text, tree.root_node(), profiles, &none, false);
    s.defs.collect(tree.root_node(), s.src, None);
    for (name, v) in sorted(&s.defs.consts)
        .into_iter()
        .chain(sorted(&s.defs.attrs))
    {
        if let Some(v) = v {
            out.add_const(name.rsplit('.').next().unwrap_or(name), s.template(*v, 0));
        }
    }
    for (name, f) in sorted(&s.defs.funcs) {
        if let Some((params, ret)) = f {
            out.add_func(name, params.clone(), s.template(*ret, 0));
        }
    }
    // An instance's keys by `Class.name` (`job.key` in another file is `Job.key`), and the
    // class attributes by `Class.NAME`.
    for (name, v) in sorted(&s.defs.members).into_iter().chain(
        sorted(&s.defs.attrs)
            .into_iter()
            .filter(|(n, _)| n.contains('.')),
    ) {
        if let Some(v) = v {
            out.add_const(name, s.template(*v, 0));
        }
    }
    Ok(out)
}

/// How many calls deep a file's own functions handed a pipeline are followed.
const QUEUER_PASSES: usize = 3;

struct Scanner<'s, 't> {
    src: &'s [u8],
    text: &'s str,
    profiles: &'s [Profile],
    /// What the other Python files of the tree define.
    globals: &'s Globals,
    defs: Defs<'t>,
    /// Pipelines by (function start byte, variable name).
    pipes: HashMap<(usize, String), Pipe>,
    /// Other names of a pipeline (`conn = pipeline if pipeline is not None else self.conn`).
    aliases: HashMap<(usize, String), (usize, String)>,
    /// Names that are a pipeline handed in or a client (`pipeline if pipeline is not None
    /// else self.connection`): a multi-key command on one is a site of its own as well.
    direct_too: std::collections::HashSet<(usize, String)>,
    /// Pipelines after `watch(…)` and before `multi()`: their commands are sent at once.
    watching: std::collections::HashSet<(usize, String)>,
    /// The module the file is (its name without `.py`), when known: its functions are also
    /// known as `module.name`.
    module: Option<&'s str>,
    /// When reading what the file defines for the others: every parameter of a function is
    /// taken as a pipeline it may be handed, and what its body queues on one is gathered
    /// here, by `name` and `Class.name`.
    queuers: Option<Vec<(String, Queuer)>>,
    /// The values given to names, by scope.
    assigned: syntax::Assigned<'t>,
    /// The parents of the tree's nodes.
    up: syntax::Parents<'t>,
    out: FileFindings,
}

impl<'s, 't> Scanner<'s, 't> {
    /// A scanner of `text`; `queuers`: reading what functions queue on a pipeline handed to them.
    fn new(
        text: &'s str,
        root: Node<'t>,
        profiles: &'s [Profile],
        globals: &'s Globals,
        queuers: bool,
    ) -> Scanner<'s, 't> {
        Scanner {
            src: text.as_bytes(),
            text,
            profiles,
            globals,
            defs: Defs::default(),
            pipes: HashMap::new(),
            aliases: HashMap::new(),
            direct_too: Default::default(),
            watching: Default::default(),
            module: None,
            queuers: queuers.then(Vec::new),
            assigned: syntax::Assigned::default(),
            up: syntax::Parents::new(root),
            out: FileFindings::default(),
        }
    }

    fn t(&self, n: Node<'_>) -> &'s str {
        text_of(n, self.src)
    }

    fn position(&self, n: Node<'_>) -> Position {
        syntax::position(self.text, n)
    }

    /// Children first, so a pipeline's commands are queued before it runs.
    fn walk(&mut self, node: Node<'t>) {
        let params = match (&self.queuers, node.kind()) {
            (Some(_), "function_definition") => self.param_pipes(node, may_take_pipeline),
            // `def add_jobs(self, jobs, pipeline)`: a pipeline the caller made, run here.
            (None, "function_definition") => {
                self.param_pipes(node, |p| p.to_ascii_lowercase().contains("pipe"));
                Vec::new()
            }
            _ => Vec::new(),
        };
        let mut cur = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cur).collect();
        for c in children {
            self.walk(c);
        }
        if !params.is_empty() {
            self.gather_queuer(node, &params);
        }
        match node.kind() {
            "call" => {
                self.hand_off(node);
                self.call(node);
            }
            "assignment" => {
                if let (Some(l), Some(r)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) && l.kind() == "identifier"
                {
                    self.maybe_pipe(r, self.t(l).to_string(), node);
                }
            }
            "as_pattern" => {
                if let (Some(v), Some(alias)) =
                    (node.named_child(0), node.child_by_field_name("alias"))
                {
                    let name = self.t(alias).trim().to_string();
                    self.maybe_pipe(v, name, node);
                }
            }
            _ => {}
        }
    }

    /// Every parameter of function `f` (but `self`, `cls`) as a pipeline it may be handed;
    /// the parameter names.
    fn param_pipes(&mut self, f: Node<'t>, pipe: impl Fn(&str) -> bool) -> Vec<String> {
        let names = params_of(f, self.src);
        for n in names.iter().filter(|n| pipe(n)) {
            self.pipes.insert(
                (f.start_byte(), n.clone()),
                Pipe::new(false, (f.start_byte(), f.start_byte())),
            );
        }
        names
    }

    /// What function `f` queued on each parameter, kept as a [`Queuer`].
    fn gather_queuer(&mut self, f: Node<'t>, params: &[String]) {
        let Some(name) = f.child_by_field_name("name").map(|n| self.t(n).to_string()) else {
            return;
        };
        let class = enclosing_class(&self.up, f, self.src);
        let pipes: Vec<(String, Pipe)> = params
            .iter()
            .filter_map(|p| Some((p.clone(), self.pipes.remove(&(f.start_byte(), p.clone()))?)))
            .collect();
        // The parameter that takes the pipeline: the first one a command is queued on, else
        // one named like a pipeline that is handed on (the others are values a function is
        // handed, not pipelines).
        let real = |p: &Pipe| p.queued().0.iter().any(|o| !o.ends_with("()"));
        let chosen = pipes.iter().find(|(_, p)| real(p)).or_else(|| {
            pipes
                .iter()
                .find(|(n, p)| !p.queued().0.is_empty() && n.to_ascii_lowercase().contains("pipe"))
        });
        if let Some((p, pipe)) = chosen {
            let (ops, keys, unknown) = pipe.queued();
            let q = Queuer {
                params: params.to_vec(),
                pipe: p.clone(),
                ops: ops.to_vec(),
                keys: keys.to_vec(),
                unknown: unknown.cloned(),
            };
            let module = self.module;
            let out = self.queuers.get_or_insert_with(Vec::new);
            match (&class, module) {
                (Some(c), _) => out.push((format!("{c}.{name}"), q.clone())),
                (None, Some(m)) => out.push((format!("{m}.{name}"), q.clone())),
                (None, None) => {}
            }
            out.push((name.clone(), q));
        }
    }

    /// `helper(pipe)`, `job.save(pipeline=pipe)`: the commands the function queues on a
    /// pipeline it is handed go into that pipeline (its body found in the tree), or are
    /// left unknown.
    fn hand_off(&mut self, call: Node<'t>) {
        const NOT_QUEUING: &[&str] = &[
            "len",
            "print",
            "isinstance",
            "id",
            "repr",
            "str",
            "type",
            "getattr",
            "hasattr",
            "setattr",
            "callable",
            "cast",
            "bool",
            "super",
        ];
        let (Some(f), Some(args)) = (
            call.child_by_field_name("function"),
            call.child_by_field_name("arguments"),
        ) else {
            return;
        };
        let (receiver, name) = match f.kind() {
            "identifier" => (None, self.t(f)),
            "attribute" => match (
                f.child_by_field_name("object"),
                f.child_by_field_name("attribute"),
            ) {
                (Some(o), Some(a)) => (Some(o), self.t(a)),
                _ => return,
            },
            _ => return,
        };
        if NOT_QUEUING.contains(&name) {
            return;
        }
        let own = receiver.and_then(|r| self.pipe_key(r));
        let mut cur = args.walk();
        let list: Vec<Node<'t>> = args.named_children(&mut cur).collect();
        let mut pos = 0;
        for a in &list {
            let (keyword, v) = match a.kind() {
                "keyword_argument" => (
                    a.child_by_field_name("name").map(|n| self.t(n)),
                    a.child_by_field_name("value"),
                ),
                "list_splat" | "dictionary_splat" | "comment" => continue,
                _ => {
                    pos += 1;
                    (None, Some(*a))
                }
            };
            let Some(v) = v.filter(|v| v.kind() == "identifier") else {
                continue;
            };
            let Some(key) = self.pipe_key(v).filter(|k| own.as_ref() != Some(k)) else {
                continue;
            };
            let receiver_text = receiver.map(|r| self.t(r));
            let q = self
                .find_queuer(name, receiver_text, call)
                .filter(|q| match keyword {
                    Some(k) => q.pipe == k,
                    None => q.params.get(pos - 1) == Some(&q.pipe),
                })
                .cloned();
            let queued = q.map(|q| {
                let (keys, unknown) = q.bind(receiver_text, |i| {
                    let param = q.params.get(i)?;
                    let mut p = 0;
                    for a in &list {
                        match a.kind() {
                            "keyword_argument" => {
                                if a.child_by_field_name("name")
                                    .is_some_and(|n| self.t(n) == param)
                                {
                                    return Some(self.template(a.child_by_field_name("value")?, 1));
                                }
                            }
                            "list_splat" | "dictionary_splat" | "comment" => {}
                            _ => {
                                if p == i {
                                    return Some(self.template(*a, 1));
                                }
                                p += 1;
                            }
                        }
                    }
                    None
                });
                (q.ops, keys, unknown)
            });
            let in_loop = self
                .pipes
                .get(&key)
                .is_some_and(|p| loop_between(&self.up, call, p.made));
            if let Some(p) = self.pipes.get_mut(&key) {
                let callee = match receiver_text {
                    Some(r) => format!("{}.{name}", syntax::short_str(r)),
                    None => name.to_string(),
                };
                match &queued {
                    Some((ops, keys, unknown)) => {
                        p.hand(&callee, Some((ops, keys.clone(), unknown.clone())), in_loop)
                    }
                    None => p.hand(&callee, None, in_loop),
                }
            }
        }
    }

    /// The function `name` called on `receiver` that queues on a pipeline: a method of the
    /// class the receiver names (`job.save` → `Job.save`, `self.save` → this class's), else
    /// the one function of that name.
    fn find_queuer(&self, name: &str, receiver: Option<&str>, call: Node<'t>) -> Option<&Queuer> {
        let class = match receiver {
            Some("self") | Some("cls") => enclosing_class(&self.up, call, self.src),
            Some(r) => Some(
                r.rsplit('.')
                    .next()
                    .unwrap_or(r)
                    .replace('_', "")
                    .to_ascii_lowercase(),
            ),
            None => None,
        };
        if let Some(c) = class
            && let Some(q) = self.globals.queuer_of_class(&c, name)
        {
            return Some(q);
        }
        self.globals.queuer(name)
    }

    /// `name = <client>.pipeline(…)`: a pipeline named `name` from here on.
    fn maybe_pipe(&mut self, value: Node<'t>, name: String, at: Node<'t>) {
        let value = if value.kind() == "await" {
            match value.named_child(0) {
                Some(v) => v,
                None => return,
            }
        } else {
            value
        };
        // `pipeline if pipeline is not None else self.connection.pipeline()`,
        // `pipeline or self.connection`: another name of a pipeline, or a new one.
        let branches: Vec<Node<'t>> = match value.kind() {
            "conditional_expression" => [value.named_child(0), value.named_child(2)]
                .into_iter()
                .flatten()
                .collect(),
            "boolean_operator" => [
                value.child_by_field_name("left"),
                value.child_by_field_name("right"),
            ]
            .into_iter()
            .flatten()
            .collect(),
            _ => Vec::new(),
        };
        let scope = scope_of(&self.up, at);
        // `pipe = pipeline if pipeline is not None else self.connection.pipeline()`: where this
        // function runs `pipe` itself, it is the new pipeline (the caller's is run by the
        // caller); only when reading what the function queues for its caller is it the
        // caller's.
        if self.queuers.is_none()
            && let Some(b) = branches.iter().find(|b| self.pipe_call(**b).is_some())
        {
            return self.maybe_pipe(*b, name, at);
        }
        for b in &branches {
            if b.kind() == "identifier"
                && let Some(target) = self.pipe_key(*b)
            {
                if target != (scope, name.clone()) {
                    // The other branch a client (`self.connection`): a command on this name
                    // is also sent by itself.
                    if branches.iter().any(|o| {
                        o.id() != b.id() && o.kind() != "identifier" && self.pipe_call(*o).is_none()
                    }) {
                        self.direct_too.insert((scope, name.clone()));
                    }
                    self.aliases.insert((scope, name), target);
                }
                return;
            }
        }
        if let Some(b) = branches.iter().find(|b| self.pipe_call(**b).is_some()) {
            return self.maybe_pipe(*b, name, at);
        }
        if let Some(atomic) = self.pipe_call(value) {
            let scope = scope_of(&self.up, at);
            // A new pipeline under the name: neither another's alias nor watching.
            let key = (scope, name);
            self.aliases.remove(&key);
            self.watching.remove(&key);
            self.direct_too.remove(&key);
            self.pipes
                .insert(key, Pipe::new(atomic, (at.start_byte(), at.end_byte())));
        }
    }

    /// Whether `call` makes a pipeline, and whether it is atomic.
    fn pipe_call(&self, call: Node<'t>) -> Option<bool> {
        if call.kind() != "call" {
            return None;
        }
        let (_, method) = self.method(call)?;
        let p = self
            .profiles
            .iter()
            .find(|p| p.pipeline.make.iter().any(|m| m == method))?;
        let mut atomic = p.pipeline.atomic_by_default;
        if let (Some(kw), Some(args)) = (
            &p.pipeline.atomic_keyword,
            call.child_by_field_name("arguments"),
        ) {
            let mut cur = args.walk();
            for a in args.named_children(&mut cur) {
                if a.kind() == "keyword_argument"
                    && a.child_by_field_name("name")
                        .is_some_and(|n| self.t(n) == kw)
                    && let Some(v) = a.child_by_field_name("value")
                {
                    atomic = self.t(v) != "False";
                }
            }
        }
        Some(atomic)
    }

    /// `push(…)` after `push = pipe.lpush if front else pipe.rpush`: the receiver and method
    /// the name is bound to, when it is bound to a method of a pipeline.
    fn bound_method(&self, call: Node<'t>) -> Option<(Node<'t>, &'s str)> {
        let f = call
            .child_by_field_name("function")
            .filter(|f| f.kind() == "identifier")?;
        let v = self.local_value(f, self.t(f), 0)?;
        let attr = match v.kind() {
            "attribute" => v,
            "conditional_expression" => v.named_child(0).filter(|a| a.kind() == "attribute")?,
            _ => return None,
        };
        let object = attr.child_by_field_name("object")?;
        self.pipe_key(object)?;
        Some((object, self.t(attr.child_by_field_name("attribute")?)))
    }

    /// The receiver and method name of `obj.method(…)`.
    fn method(&self, call: Node<'t>) -> Option<(Node<'t>, &'s str)> {
        let f = call.child_by_field_name("function")?;
        if f.kind() != "attribute" {
            return None;
        }
        Some((
            f.child_by_field_name("object")?,
            self.t(f.child_by_field_name("attribute")?),
        ))
    }

    /// The pipeline a receiver is: a pipeline variable, or a chain of calls on one.
    fn pipe_key(&self, receiver: Node<'t>) -> Option<(usize, String)> {
        let mut r = receiver;
        loop {
            match r.kind() {
                "identifier" => {
                    let name = self.t(r);
                    // (Finding the function a name is in climbs the tree: only for a name
                    // some pipeline has.)
                    if !self
                        .pipes
                        .keys()
                        .chain(self.aliases.keys())
                        .any(|k| k.1 == name)
                    {
                        return None;
                    }
                    let key = (scope_of(&self.up, r), name.to_string());
                    let key = self.aliases.get(&key).cloned().unwrap_or(key);
                    return self.pipes.contains_key(&key).then_some(key);
                }
                "call" => {
                    if self.pipe_call(r).is_some() {
                        // `r.pipeline().set(…).execute()`: one pipeline, named by where it is made.
                        return Some((r.start_byte(), String::new()));
                    }
                    r = self.method(r)?.0;
                }
                _ => return None,
            }
        }
    }

    fn call(&mut self, call: Node<'t>) {
        let Some((receiver, method)) = self.method(call).or_else(|| self.bound_method(call)) else {
            self.script_object_call(call);
            return;
        };
        let pipe = self.pipe_key(receiver);
        if let Some(key) = &pipe
            && key.1.is_empty()
            && !self.pipes.contains_key(key)
            && let Some(root) = chain_root(receiver, self)
            && let Some(atomic) = self.pipe_call(root)
        {
            self.pipes.insert(
                key.clone(),
                Pipe::new(atomic, (root.start_byte(), root.end_byte())),
            );
        }
        // Watching: commands are sent one by one, as on the client itself.
        let pipe = pipe.filter(|k| {
            !self.watching.contains(k)
                || self
                    .profiles
                    .iter()
                    .any(|p| p.pipeline.run.iter().any(|m| m == method))
                || method == "multi"
        });
        let profiles = self.profiles;
        for p in profiles {
            if let Some(key) = &pipe {
                if p.pipeline.run.iter().any(|m| m == method) {
                    self.run_pipe(key, call);
                    return;
                }
                if method == "multi" {
                    if let Some(pp) = self.pipes.get_mut(key) {
                        pp.atomic = true;
                    }
                    self.watching.remove(key);
                    return;
                }
                if method == "watch" {
                    // redis-py: after WATCH the pipeline sends each command at once, until
                    // `multi()`.
                    self.watching.insert(key.clone());
                    return;
                }
            }
            if let Some(m) = p.commands.get(method) {
                if pipe.is_none() && self.cache_touch(receiver, method) {
                    return;
                }
                if pipe.is_none() && !self.redis_receiver(receiver, method) {
                    continue;
                }
                let keys = self.keys_of(call, m.how, &m.command);
                // A number, `None` or a boolean where a key goes (`cache.touch(key, 0)`,
                // Django's `cache.touch(key, -1)` or `cache.touch(key, None)`, whose second
                // argument is a timeout): another library's method of that name, not Redis's
                // command (redis-py refuses `None` and booleans as keys).
                if pipe.is_none() && keys.keys.iter().any(not_a_key) {
                    return;
                }
                self.record(call, &m.command, &keys);
                if pipe.is_some()
                    && receiver.kind() == "identifier"
                    && self
                        .direct_too
                        .contains(&(scope_of(&self.up, receiver), self.t(receiver).to_string()))
                    && (keys.keys.len() > 1 || keys.unknown.is_some())
                    && self.queuers.is_none()
                {
                    self.out.sites.push(Site {
                        at: self.position(call),
                        send: None,
                        kind: SiteKind::Command,
                        op: m.command.clone(),
                        keys: keys.keys.clone(),
                        unknown: keys.unknown.clone(),
                    });
                }
                match &pipe {
                    Some(k) => self.queue(k, call, &m.command, keys),
                    None if keys.keys.len() > 1 || keys.unknown.is_some() => {
                        self.out.sites.push(Site {
                            at: self.position(call),
                            send: None,
                            kind: SiteKind::Command,
                            op: m.command.clone(),
                            keys: keys.keys,
                            unknown: keys.unknown,
                        })
                    }
                    None => {}
                }
                return;
            }
            if p.scripts.eval.iter().any(|m| m == method) {
                // A script and its number of keys at least (`expr.eval(context)` is not
                // Redis's), on a pipeline or what reads as a client.
                if positional(call).len() < 2
                    || pipe.is_none() && !self.redis_receiver(receiver, "eval")
                {
                    return;
                }
                let keys = self.eval_keys(call);
                self.record(call, "EVAL", &keys);
                match &pipe {
                    Some(k) => self.queue(k, call, "EVAL", keys),
                    None => self.out.sites.push(Site {
                        at: self.position(call),
                        send: None,
                        kind: SiteKind::Script,
                        op: "EVAL".into(),
                        keys: keys.keys,
                        unknown: keys.unknown,
                    }),
                }
                return;
            }
            if p.raw.iter().any(|m| m == method) && self.redis_receiver(receiver, method) {
                let keys = self.raw_keys(call);
                if let Some((cmd, keys)) = keys {
                    self.record(call, &cmd, &keys);
                    match &pipe {
                        Some(k) => self.queue(k, call, &cmd, keys),
                        None if keys.keys.len() > 1 || keys.unknown.is_some() => {
                            self.out.sites.push(Site {
                                at: self.position(call),
                                send: None,
                                kind: SiteKind::Command,
                                op: cmd,
                                keys: keys.keys,
                                unknown: keys.unknown,
                            })
                        }
                        None => {}
                    }
                }
                return;
            }
        }
        // Any other Redis command queued on a pipeline (`pipe.hincrbyfloat(key, …)`): its keys
        // where the command's key specification puts them.
        if let Some(k) = &pipe
            && !matches!(method, "watch" | "unwatch" | "reset" | "multi")
            && syntax::takes_keys(method)
        {
            let cmd = method.to_ascii_uppercase();
            let keys = self.keys_of(call, ArgShape::Args, &cmd);
            self.record(call, &cmd, &keys);
            self.queue(k, call, &cmd, keys);
        }
    }

    /// A registered script called with its keys: `script(keys=[…], args=[…])`.
    fn script_object_call(&mut self, call: Node<'t>) {
        let Some(f) = call
            .child_by_field_name("function")
            .filter(|f| f.kind() == "identifier")
        else {
            return;
        };
        let name = self.t(f);
        let registered = self.profiles.iter().find_map(|p| {
            let value = self.local_value(f, name, 0)?;
            let (_, m) = self.method(value)?;
            p.scripts
                .register
                .iter()
                .any(|r| r == m)
                .then(|| p.scripts.keys_keyword.clone())
        });
        let Some(kw) = registered else {
            return;
        };
        let Some(args) = call.child_by_field_name("arguments") else {
            return;
        };
        let mut keys = CallKeys::default();
        let mut cur = args.walk();
        let list: Vec<Node<'t>> = args.named_children(&mut cur).collect();
        for a in &list {
            if a.kind() == "keyword_argument"
                && a.child_by_field_name("name")
                    .is_some_and(|n| self.t(n) == kw)
                && let Some(v) = a.child_by_field_name("value")
            {
                self.list_into(v, &mut keys);
            }
        }
        if list.first().is_some_and(|a| a.kind() != "keyword_argument") {
            self.list_into(list[0], &mut keys);
        }
        self.record(call, "EVALSHA", &keys);
        self.out.sites.push(Site {
            at: self.position(call),
            send: None,
            kind: SiteKind::Script,
            op: "EVALSHA".into(),
            keys: keys.keys,
            unknown: keys.unknown,
        });
    }

    fn record(&mut self, call: Node<'_>, how: &str, keys: &CallKeys) {
        let at = self.position(call);
        for k in &keys.keys {
            self.out.keys.push(KeyUse {
                template: k.clone(),
                at,
                how: how.to_string(),
            });
        }
    }

    fn queue(&mut self, key: &(usize, String), call: Node<'t>, op: &str, keys: CallKeys) {
        let in_loop = {
            let Some(p) = self.pipes.get(key) else { return };
            loop_between(&self.up, call, p.made)
        };
        if let Some(p) = self.pipes.get_mut(key) {
            p.queue(op, keys, in_loop);
        }
    }

    fn run_pipe(&mut self, key: &(usize, String), call: Node<'_>) {
        if self.queuers.is_some() {
            // Reading what functions queue: nothing is sent.
            return;
        }
        let at = self.position(call);
        let text = self.text;
        if let Some(site) = self
            .pipes
            .get_mut(key)
            .and_then(|p| p.send(text, at, false))
        {
            self.out.sites.push(site);
        }
    }

    /// Whether a receiver of a command whose name is also a common method (`get`, `delete`) is
    /// a Redis client: named like one, or made by a client constructor.
    fn redis_receiver(&self, receiver: Node<'t>, method: &str) -> bool {
        const COMMON: &[&str] = &[
            "get",
            "set",
            "delete",
            "exists",
            "touch",
            "rename",
            "copy",
            "unlink",
            "incr",
            "decr",
            "expire",
            "publish",
            "hget",
            "hset",
            "execute_command",
            "eval",
            "evalsha",
        ];
        let text = self.t(receiver);
        // A class's own method of that name (`cls.lmove(…)`), not the client's.
        if matches!(text, "self" | "cls") {
            return false;
        }
        if !COMMON.contains(&method) {
            return true;
        }
        let last = syntax::receiver_name(text);
        if ["r", "rc", "rd", "rds", "db", "red"].contains(&last.as_str())
            || [
                "redis", "client", "conn", "cache", "pipe", "store", "backend", "valkey",
            ]
            .iter()
            .any(|w| last.contains(w))
        {
            return true;
        }
        self.made_as_redis_client(receiver)
    }

    /// Whether `receiver` is a variable last given a new Redis client (`Redis(…)`,
    /// `from_url(…)`, `get_redis_connection()`, …).
    fn made_as_redis_client(&self, receiver: Node<'t>) -> bool {
        if receiver.kind() == "identifier"
            && let Some(v) = self.local_value(receiver, self.t(receiver), 0)
            && v.kind() == "call"
            && let Some(f) = v.child_by_field_name("function")
        {
            let name = self.t(f).rsplit('.').next().unwrap_or("");
            return [
                "Redis",
                "StrictRedis",
                "RedisCluster",
                "from_url",
                "master_for",
                "get_redis_connection",
            ]
            .contains(&name);
        }
        false
    }

    /// Whether `receiver.touch(…)` is the cache API's `touch(key, timeout)` (Django's, and the
    /// Redis cache clients behind it): a receiver named like a cache that is not seen to be
    /// made as a Redis client.
    fn cache_touch(&self, receiver: Node<'t>, method: &str) -> bool {
        if method != "touch" {
            return false;
        }
        syntax::receiver_name(self.t(receiver)).contains("cache")
            && !self.made_as_redis_client(receiver)
    }

    /// The keys of a command call, by the method's argument shape.
    fn keys_of(&self, call: Node<'t>, how: ArgShape, command: &str) -> CallKeys {
        let mut keys = CallKeys::default();
        let args = positional(call);
        match how {
            ArgShape::None => {}
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
            ArgShape::Mapping => {
                if let Some(a) = args.first() {
                    if a.kind() == "dictionary" {
                        let mut cur = a.walk();
                        for pair in a.named_children(&mut cur) {
                            match pair.kind() {
                                "pair" => {
                                    if let Some(k) = pair.child_by_field_name("key") {
                                        keys.keys.push(self.template(k, 0));
                                    }
                                }
                                _ => keys.unknown = Some(Unknown::RuntimeList(self.short(pair))),
                            }
                        }
                    } else {
                        keys.unknown = Some(Unknown::RuntimeList(self.short(*a)));
                    }
                }
            }
            ArgShape::DestList | ArgShape::OpDestList => {
                let skip = usize::from(how == ArgShape::OpDestList);
                if let Some(d) = args.get(skip) {
                    keys.keys.push(self.template(*d, 0));
                }
                for a in args.iter().skip(skip + 1).take(1) {
                    self.list_into(*a, &mut keys);
                }
                if how == ArgShape::OpDestList {
                    for a in args.iter().skip(3) {
                        self.list_into(*a, &mut keys);
                    }
                }
            }
            ArgShape::List => {
                let timeout = matches!(command, "BLPOP" | "BRPOP");
                // BLPOP's last argument is its timeout, whatever expression gives it.
                let n = if timeout && args.len() > 1 {
                    args.len() - 1
                } else {
                    args.len()
                };
                for a in &args[..n] {
                    self.list_into(*a, &mut keys);
                }
            }
            ArgShape::Args => {
                // Laid out as the command line, the table finds the keys.
                let line: Vec<Vec<u8>> = std::iter::once(command.as_bytes().to_vec())
                    .chain(args.iter().map(|a| {
                        let t = self.template(*a, 0);
                        if t.is_literal() {
                            t.text().into_bytes()
                        } else {
                            b"x".to_vec()
                        }
                    }))
                    .collect();
                let refs = syntax::table_positions(line).filter(|r| !r.is_empty());
                match refs {
                    Some(refs) => {
                        for r in refs {
                            if let Some(a) = args.get(r) {
                                keys.keys.push(self.template(*a, 0));
                            }
                        }
                    }
                    None => {
                        if let Some(a) = args.first() {
                            keys.keys.push(self.template(*a, 0));
                        }
                    }
                }
            }
        }
        keys
    }

    /// `eval(script, numkeys, *keys_and_args)`.
    fn eval_keys(&self, call: Node<'t>) -> CallKeys {
        let mut keys = CallKeys::default();
        let args = positional(call);
        let Some(n) = args.get(1) else {
            return keys;
        };
        match self.t(*n).parse::<usize>() {
            Ok(n) => {
                for a in args.iter().skip(2).take(n) {
                    if a.kind() == "list_splat" {
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

    /// `execute_command("MGET", a, b)`: the command from its first argument.
    fn raw_keys(&self, call: Node<'t>) -> Option<(String, CallKeys)> {
        let args = positional(call);
        let name = self.template(*args.first()?, 0);
        if !name.is_literal() {
            return None;
        }
        let cmd = name.text().to_ascii_uppercase();
        let mut line = vec![cmd.as_bytes().to_vec()];
        let mut keys = CallKeys::default();
        for a in &args[1..] {
            if a.kind() == "list_splat" {
                keys.unknown = Some(Unknown::RuntimeList(self.short(*a)));
                return Some((cmd, keys));
            }
            let t = self.template(*a, 0);
            line.push(if t.is_literal() {
                t.text().into_bytes()
            } else {
                b"x".to_vec()
            });
        }
        let refs = crate::command::table().keys(&line).ok()?;
        for r in refs {
            if let Some(a) = args.get(r.pos) {
                keys.keys.push(self.template(*a, 0));
            }
        }
        Some((cmd, keys))
    }

    /// Keys from one argument that may be a list: a list or tuple literal gives its items, a
    /// starred or other runtime list is unknown, anything else is one key.
    fn list_into(&self, a: Node<'t>, keys: &mut CallKeys) {
        match a.kind() {
            "list" | "tuple" => {
                let mut cur = a.walk();
                for item in a.named_children(&mut cur) {
                    self.list_into(item, keys);
                }
            }
            "list_splat" | "list_comprehension" | "generator_expression" => {
                keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
            }
            "identifier" => match self.local_value(a, self.t(a), 0) {
                Some(v) if matches!(v.kind(), "list" | "tuple") => self.list_into(v, keys),
                Some(v) if matches!(v.kind(), "list_comprehension" | "generator_expression") => {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
                }
                _ if looks_plural(self.t(a)) => {
                    keys.unknown = Some(Unknown::RuntimeList(self.short(a)));
                }
                _ => keys.keys.push(self.template(a, 0)),
            },
            _ => keys.keys.push(self.template(a, 0)),
        }
    }

    fn short(&self, n: Node<'_>) -> String {
        syntax::short(self.src, n)
    }

    /// The value last assigned to `name` before `at` in its function (or the module's
    /// constant).
    fn local_value(&self, at: Node<'t>, name: &str, depth: usize) -> Option<Node<'t>> {
        if depth > DEPTH {
            return None;
        }
        if !self.assigned.may_have(name, self.src) {
            return self.defs.consts.get(name).copied().flatten();
        }
        let mut scope = at;
        for p in self.up.around(at) {
            scope = p;
            if p.kind() == "function_definition" {
                break;
            }
        }
        self.assigned
            .last(scope, name, at.start_byte(), self.src, &BINDS)
            .or_else(|| self.defs.consts.get(name).copied().flatten())
    }

    /// The template an expression makes.
    fn template(&self, n: Node<'t>, depth: usize) -> Template {
        if depth > DEPTH {
            return Template::var(self.short(n));
        }
        match n.kind() {
            "string" => self.string(n, depth),
            "concatenated_string" => {
                let mut t = Template::default();
                let mut cur = n.walk();
                for s in n.named_children(&mut cur) {
                    t.push(self.template(s, depth + 1));
                }
                t
            }
            "integer" => Template::lit(self.t(n)),
            "parenthesized_expression" => n.named_child(0).map_or_else(
                || Template::var(self.short(n)),
                |c| self.template(c, depth + 1),
            ),
            "binary_operator" => {
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
                    "%" => {
                        let fmt = self.template(l, depth + 1);
                        if !fmt.is_literal() {
                            return Template::var(self.short(n));
                        }
                        let values: Vec<Node<'t>> = if r.kind() == "tuple" {
                            let mut cur = r.walk();
                            r.named_children(&mut cur).collect()
                        } else {
                            vec![r]
                        };
                        self.percent(fmt, &values, depth)
                    }
                    _ => Template::var(self.short(n)),
                }
            }
            "identifier" => {
                let name = self.t(n);
                match self.local_value(n, name, depth) {
                    Some(v) if v != n && !contains(v, n) => self.template(v, depth + 1),
                    Some(_) => Template::var(name),
                    None => self
                        .globals
                        .constant(name)
                        .filter(|_| {
                            !syntax::is_parameter(
                                &self.up,
                                n,
                                name,
                                self.src,
                                &["function_definition", "lambda"],
                            )
                        })
                        .unwrap_or_else(|| Template::var(name)),
                }
            }
            "attribute" => {
                let attr = n
                    .child_by_field_name("attribute")
                    .map(|a| self.t(a))
                    .unwrap_or("");
                let obj = n
                    .child_by_field_name("object")
                    .map(|o| self.t(o))
                    .unwrap_or("");
                let own_class = matches!(obj, "self" | "cls")
                    .then(|| enclosing_class(&self.up, n, self.src))
                    .flatten();
                let known = self
                    .defs
                    .attrs
                    .get(&format!("{obj}.{attr}"))
                    .or_else(|| {
                        let c = own_class.as_ref()?;
                        self.defs
                            .attrs
                            .get(&format!("{c}.{attr}"))
                            .or_else(|| self.defs.members.get(&format!("{c}.{attr}")))
                    })
                    .or_else(|| {
                        matches!(obj, "self" | "cls")
                            .then(|| self.defs.attrs.get(attr))
                            .flatten()
                    })
                    .copied()
                    .flatten();
                // `job.key`: the member of the class the receiver names, from any file.
                let member = || {
                    if matches!(obj, "self" | "cls") {
                        let c = own_class.as_ref()?;
                        return self.globals.constant(&format!("{c}.{attr}"));
                    }
                    let hint = obj.rsplit('.').next().unwrap_or(obj);
                    let mut t = self.globals.member_of_class(hint, attr)?;
                    for p in &mut t.parts {
                        if let Part::Var(v) = p
                            && let Some(rest) = v.strip_prefix("self.")
                        {
                            *v = format!("{obj}.{rest}");
                        }
                    }
                    Some(t)
                };
                // `id = property(get_id, set_id)`: a value the program computes.
                let known = known.filter(|v| {
                    !(v.kind() == "call"
                        && v.child_by_field_name("function")
                            .is_some_and(|f| matches!(self.t(f), "property" | "cached_property")))
                });
                match known {
                    Some(v) if v != n && !contains(v, n) && depth < DEPTH => {
                        self.template(v, depth + 1)
                    }
                    Some(_) => Template::var(self.short(n)),
                    None if member().is_some() => member().unwrap_or_default(),
                    // `settings.PREFIX`, `keys.USER`: a constant of another file.
                    None => self
                        .globals
                        .constant(attr)
                        .filter(|_| !matches!(obj, "self" | "cls"))
                        .unwrap_or_else(|| Template::var(self.short(n))),
                }
            }
            "call" => self.call_template(n, depth),
            _ => Template::var(self.short(n)),
        }
    }

    /// `"…".format(…)`, `str(x)`, or a helper of this file that returns a key.
    fn call_template(&self, n: Node<'t>, depth: usize) -> Template {
        let Some(f) = n.child_by_field_name("function") else {
            return Template::var(self.short(n));
        };
        let args = positional(n);
        if f.kind() == "attribute"
            && let (Some(obj), Some(attr)) = (
                f.child_by_field_name("object"),
                f.child_by_field_name("attribute"),
            )
        {
            if self.t(attr) == "format" {
                let fmt = self.template(obj, depth + 1);
                if fmt.is_literal() {
                    return self.format(fmt, &args, n, depth);
                }
            }
            // `self.key_for(x)`, `Keys.order(x)`: a function or method of this file, or of
            // another file (`keys.user(uid)`).
            if matches!(self.t(obj), "self" | "cls")
                || matches!(self.defs.funcs.get(self.t(attr)), Some(Some(_)))
                || self.globals.call(self.t(attr), &[], |_| None).is_some()
            {
                return self.helper(self.t(attr), &args, n, depth);
            }
        }
        if f.kind() == "identifier" {
            let name = self.t(f);
            if name == "str" && args.len() == 1 {
                return self.template(args[0], depth + 1);
            }
            return self.helper(name, &args, n, depth);
        }
        Template::var(self.short(n))
    }

    fn helper(&self, name: &str, args: &[Node<'t>], call: Node<'t>, depth: usize) -> Template {
        let Some(Some((params, ret))) = self.defs.funcs.get(name) else {
            return self
                .globals
                .call(name, &["self", "cls"], |i| {
                    args.get(i).map(|a| self.template(*a, depth + 1))
                })
                .unwrap_or_else(|| Template::var(self.short(call)));
        };
        // The helper's parameters (`self` aside) are the caller's arguments.
        let params: Vec<&str> = params
            .iter()
            .map(String::as_str)
            .filter(|p| !matches!(*p, "self" | "cls"))
            .collect();
        let body = self.template(*ret, depth + 1);
        syntax::bind(body, &params, |i| {
            args.get(i).map(|a| self.template(*a, depth + 1))
        })
    }

    /// A string literal or f-string.
    fn string(&self, n: Node<'t>, depth: usize) -> Template {
        let mut t = Template::default();
        let fstring = n
            .named_child(0)
            .filter(|s| s.kind() == "string_start")
            .is_some_and(|s| self.t(s).to_ascii_lowercase().contains('f'));
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            match c.kind() {
                "string_content" => {
                    let s = self.t(c);
                    if fstring {
                        t.push_lit(&s.replace("{{", "{").replace("}}", "}"));
                    } else {
                        t.push_lit(s);
                    }
                }
                "escape_sequence" => t.push_lit(&unescape(self.t(c))),
                "escape_interpolation" => t.push_lit(&self.t(c)[..1]),
                "interpolation" => match c.child_by_field_name("expression") {
                    Some(e) => t.push(self.interpolated(e, depth)),
                    None => t.parts.push(Part::Var(self.short(c))),
                },
                _ => {}
            }
        }
        t
    }

    /// A value put into a string: a constant is its text, anything else a placeholder named
    /// after the expression.
    fn interpolated(&self, e: Node<'t>, depth: usize) -> Template {
        let t = self.template(e, depth + 1);
        if t.is_literal() {
            return t;
        }
        // A helper's or a variable's own template, when it says more than its name.
        if t.parts.len() > 1 || !matches!(e.kind(), "identifier" | "attribute") {
            return t;
        }
        Template::var(self.short(e))
    }

    /// `"a:%s:%d" % (x, y)`.
    fn percent(&self, f: Template, values: &[Node<'t>], depth: usize) -> Template {
        let mut out = Template::default();
        let mut i = 0;
        for p in f.parts {
            match p {
                Part::Lit(l) => {
                    let mut rest = l.as_str();
                    while let Some(at) = rest.find('%') {
                        out.push_lit(&rest[..at]);
                        let after = &rest[at + 1..];
                        if let Some(stripped) = after.strip_prefix('%') {
                            out.push_lit("%");
                            rest = stripped;
                            continue;
                        }
                        let spec_end = after
                            .char_indices()
                            .find(|(_, c)| c.is_ascii_alphabetic())
                            .map_or(after.len(), |(k, c)| k + c.len_utf8());
                        match values.get(i) {
                            Some(v) => out.push(self.interpolated(*v, depth)),
                            None => out
                                .parts
                                .push(Part::Var(format!("%{}", &after[..spec_end]))),
                        }
                        i += 1;
                        rest = &after[spec_end..];
                    }
                    out.push_lit(rest);
                }
                v => out.parts.push(v),
            }
        }
        out
    }

    /// `"{}:{name}".format(a, name=b)`.
    fn format(&self, f: Template, args: &[Node<'t>], call: Node<'t>, depth: usize) -> Template {
        let mut named: HashMap<&str, Node<'t>> = HashMap::new();
        if let Some(al) = call.child_by_field_name("arguments") {
            let mut cur = al.walk();
            for a in al.named_children(&mut cur) {
                if a.kind() == "keyword_argument"
                    && let (Some(k), Some(v)) = (
                        a.child_by_field_name("name"),
                        a.child_by_field_name("value"),
                    )
                {
                    named.insert(self.t(k), v);
                }
            }
        }
        let mut out = Template::default();
        let mut next = 0;
        for p in f.parts {
            match p {
                Part::Lit(l) => {
                    let mut rest = l.as_str();
                    while let Some(open) = rest.find('{') {
                        if rest[open + 1..].starts_with('{') {
                            out.push_lit(&rest[..open + 1]);
                            rest = &rest[open + 2..];
                            continue;
                        }
                        let Some(close) = rest[open..].find('}') else {
                            break;
                        };
                        out.push_lit(&rest[..open]);
                        let field = &rest[open + 1..open + close];
                        let field = field.split([':', '!']).next().unwrap_or("");
                        let value = if field.is_empty() {
                            next += 1;
                            args.get(next - 1).copied()
                        } else if let Ok(i) = field.parse::<usize>() {
                            args.get(i).copied()
                        } else {
                            named.get(field).copied()
                        };
                        match value {
                            Some(v) => out.push(self.interpolated(v, depth)),
                            None => out.parts.push(Part::Var(field.to_string())),
                        }
                        rest = &rest[open + close + 1..];
                    }
                    out.push_lit(&rest.replace("}}", "}"));
                }
                v => out.parts.push(v),
            }
        }
        out
    }
}

/// The positional arguments of a call (starred ones included, keywords left out).
fn positional<'t>(call: Node<'t>) -> Vec<Node<'t>> {
    let Some(args) = call.child_by_field_name("arguments") else {
        return Vec::new();
    };
    let mut cur = args.walk();
    args.named_children(&mut cur)
        .filter(|a| {
            !matches!(
                a.kind(),
                "keyword_argument" | "dictionary_splat" | "comment"
            )
        })
        .collect()
}

/// `self.NAME = value` in a method body (not in nested functions or classes).
fn self_assignments<'t>(n: Node<'t>, src: &[u8], out: &mut Vec<(String, Node<'t>)>) {
    let mut cur = n.walk();
    for c in n.named_children(&mut cur) {
        match c.kind() {
            "function_definition" | "class_definition" | "lambda" => {}
            "assignment" => {
                if let (Some(l), Some(r)) = (
                    c.child_by_field_name("left"),
                    c.child_by_field_name("right"),
                ) && l.kind() == "attribute"
                    && l.child_by_field_name("object")
                        .is_some_and(|o| text_of(o, src) == "self")
                    && let Some(a) = l.child_by_field_name("attribute")
                {
                    out.push((text_of(a, src).to_string(), r));
                }
                self_assignments(c, src, out);
            }
            _ => self_assignments(c, src, out),
        }
    }
}

/// The parameter names of function `f`, in order.
fn all_params(f: Node<'_>, src: &[u8]) -> Vec<String> {
    let Some(params) = f.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut cur = params.walk();
    params
        .named_children(&mut cur)
        .filter_map(|p| match p.kind() {
            "identifier" => Some(p),
            "default_parameter" | "typed_parameter" | "typed_default_parameter" => p
                .child_by_field_name("name")
                .or_else(|| p.named_child(0))
                .filter(|n| n.kind() == "identifier"),
            _ => None,
        })
        .map(|n| text_of(n, src).to_string())
        .collect()
}

/// The parameter names of function `f`, `self` and `cls` left out.
fn params_of(f: Node<'_>, src: &[u8]) -> Vec<String> {
    let mut names = all_params(f, src);
    names.retain(|n| n != "self" && n != "cls");
    names
}

/// The name of the class `n` is defined in (through its methods), if any.
fn enclosing_class<'t>(up: &syntax::Parents<'t>, n: Node<'t>, src: &[u8]) -> Option<String> {
    let class = up.around(n).find(|x| x.kind() == "class_definition")?;
    class
        .child_by_field_name("name")
        .map(|c| text_of(c, src).to_string())
}

/// Whether a parameter named `name` may be handed a pipeline (or a client a pipeline stands
/// in for): named like one (`pipeline`, `pipe`, `conn`, `redis`, `client`, `tx`, `multi`,
/// `batch`, `r`, `p`). Any other parameter is a value: `expr.subs(…)` in a function handed
/// `expr` queues nothing, and taking every parameter for a pipeline made whole libraries
/// (any function calling `.get`/`.set` on what it is handed) read as pipeline helpers.
fn may_take_pipeline(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(n.as_str(), "r" | "p" | "pl" | "tr" | "db")
        || [
            "pipe", "conn", "redis", "client", "multi", "trans", "tx", "batch",
        ]
        .iter()
        .any(|w| n.contains(w))
}

/// The start byte of the function `n` is in (0 for the module).
fn scope_of<'t>(up: &syntax::Parents<'t>, n: Node<'t>) -> usize {
    syntax::scope_start(up, n, &["function_definition"])
}

/// The root call of a chain `a.pipeline().set(…).get(…)`: the call that makes the pipeline.
fn chain_root<'t>(receiver: Node<'t>, s: &Scanner<'_, 't>) -> Option<Node<'t>> {
    let mut r = receiver;
    loop {
        if r.kind() != "call" {
            return None;
        }
        if s.pipe_call(r).is_some() {
            return Some(r);
        }
        r = s.method(r)?.0;
    }
}

/// Whether a loop encloses `call` but not the pipeline made at `made`.
fn loop_between<'t>(up: &syntax::Parents<'t>, call: Node<'t>, made: (usize, usize)) -> bool {
    for x in up.around(call) {
        if matches!(
            x.kind(),
            "for_statement" | "while_statement" | "list_comprehension" | "generator_expression"
        ) && !(x.start_byte() <= made.0 && made.1 <= x.end_byte())
        {
            return true;
        }
        if x.kind() == "function_definition" {
            return false;
        }
    }
    false
}

/// How Python gives a name a value: `name = value`, in the function (not in nested functions
/// or classes).
const BINDS: syntax::Binds = syntax::Binds {
    skip: |kind| matches!(kind, "function_definition" | "class_definition"),
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
    ended: true,
};

/// Whether a key argument is a number (`0`, `-1`, `2.5`), `None` or a boolean: what code
/// passes as a timeout or a flag, never as a Redis key.
fn not_a_key(k: &Template) -> bool {
    let number = |t: &str| {
        let digits = t.trim_start_matches(['-', '+']);
        digits.starts_with(|c: char| c.is_ascii_digit() || c == '.') && t.parse::<f64>().is_ok()
    };
    match k.parts.as_slice() {
        [Part::Lit(t)] => number(t),
        [Part::Var(v)] => number(v) || matches!(v.as_str(), "None" | "True" | "False"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{Verdict, texts};

    fn scan_py(src: &str) -> FileFindings {
        scan(src, &Profile::builtin("python"), &Globals::default()).unwrap()
    }

    #[test]
    fn other_libraries_methods_named_like_commands_are_not_sites() {
        let f = scan_py(
            r#"
OPERATORS = {"or": lambda context, x, y: x.eval(context) or y.eval(context)}

def touch(self, key):
    return self._cache.touch(key, 0)

def django(cache, key):
    cache.touch(key, -1)
    cache.touch(key, None)
    cache.touch(key, 2.5)

def script(r, a, b):
    return r.eval("return 1", 2, a, b)

def backend(self, key, timeout=None):
    return self._cache.touch(key, self.get_backend_timeout(timeout))

def real(r, a, b, inf):
    r.touch(a, b)
    r.touch("inf", "x:1")
    cache = redis.Redis()
    cache.touch(a, b)
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(ops, ["EVAL", "TOUCH", "TOUCH", "TOUCH"], "{:?}", f.sites);
        assert_eq!(texts(&f.sites[2]), ["inf", "x:1"]);
        assert_eq!(texts(&f.sites[3]), ["<a>", "<b>"]);
    }

    #[test]
    fn a_value_assigned_later_or_in_another_function_is_not_the_one_used() {
        let f = scan_py(
            r#"
def other(r):
    k2 = "b"

def load(r, uid):
    k1 = f"user:{uid}"
    k2 = f"cart:{uid}"
    r.mget(k1, k2)
    k1 = "later"
    k2 = k2 + ":x"
"#,
        );
        assert_eq!(texts(&f.sites[0]), ["user:<uid>", "cart:<uid>"]);
    }

    #[test]
    fn functions_that_hand_a_pipeline_to_each_other_stay_bounded() {
        // Each function hands the pipeline on eight times: 8³ calls; what a pipeline keeps
        // stays bounded.
        let mut text = String::new();
        for (f, g) in [("a", "b"), ("b", "c"), ("c", "d")] {
            text.push_str(&format!("def {f}(pipe, x):\n"));
            for _ in 0..8 {
                text.push_str(&format!("    {g}(pipe, x)\n"));
            }
        }
        text.push_str("def d(pipe, x):\n    pipe.get(x)\n");
        text.push_str("def run(r):\n    p = r.pipeline()\n    a(p, 'k')\n    p.execute()\n");
        let g = exports(
            &text,
            &Profile::builtin("python"),
            &Globals::default(),
            None,
        )
        .unwrap();
        let f = scan(&text, &Profile::builtin("python"), &g).unwrap();
        let op = &f.sites.last().unwrap().op;
        let more: usize = op
            .rsplit("and ")
            .next()
            .and_then(|t| t.strip_suffix(" more"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(more > 16 && more + 16 <= 256, "{op}");
    }

    #[test]
    fn mget_of_two_templates_is_cross_slot() {
        let f = scan_py(
            r#"
import redis
r = redis.Redis()
PREFIX = "app"

def profile_key(uid):
    return f"{PREFIX}:user:{uid}:profile"

def load(uid):
    return r.mget(profile_key(uid), f"{PREFIX}:user:{uid}:settings")

def load_tagged(uid):
    return r.mget(f"user:{{{uid}}}:profile", "user:{%s}:settings" % uid)
"#,
        );
        assert_eq!(f.sites.len(), 2, "{:?}", f.sites);
        let a = &f.sites[0];
        assert_eq!(
            texts(a),
            ["app:user:<uid>:profile", "app:user:<uid>:settings"]
        );
        assert_eq!(a.at.line, 10);
        assert!(matches!(a.verdict(), Verdict::CrossSlot(_)));
        let b = &f.sites[1];
        assert_eq!(texts(b), ["user:{<uid>}:profile", "user:{<uid>}:settings"]);
        assert!(matches!(b.verdict(), Verdict::OneSlot(_)));
    }

    #[test]
    fn pipelines_and_transactions() {
        let f = scan_py(
            r#"
def save(r, uid, items):
    p = r.pipeline()
    p.set("user:%s" % uid, 1)
    p.incr("stats:users")
    p.execute()
    with r.pipeline(transaction=False) as q:
        for i in items:
            q.get("item:{}".format(i))
        q.execute()
    r.pipeline().set("a", 1).set("b", 2).execute()
"#,
        );
        assert_eq!(f.sites.len(), 3, "{:?}", f.sites);
        assert_eq!(f.sites[0].kind, SiteKind::Transaction);
        assert_eq!(f.sites[0].op, "SET INCR");
        assert_eq!(texts(&f.sites[0]), ["user:<uid>", "stats:users"]);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(f.sites[1].kind, SiteKind::Pipeline);
        assert!(matches!(f.sites[1].verdict(), Verdict::Depends(_)));
        assert_eq!(texts(&f.sites[2]), ["a", "b"]);
        // Two literal keys: their real slots differ.
        assert!(matches!(f.sites[2].verdict(), Verdict::CrossSlot(_)));
    }

    #[test]
    fn pipelines_handed_to_functions() {
        let profiles = Profile::builtin("python");
        let src = r#"
class Job:
    def save(self, pipeline=None, meta=True):
        connection = pipeline if pipeline is not None else self.connection
        connection.hset(self.key, mapping=self.to_dict(meta=meta))

class Result:
    def save(self, ttl, pipeline=None):
        pipeline.xadd(self.stream_key, {})

class Queue:
    def push(self, job_id, pipeline=None):
        pipe = pipeline if pipeline is not None else self.connection
        pipe.rpush(self.key, job_id)

    def enqueue(self, job, pipeline=None):
        pipe = pipeline if pipeline is not None else self.connection.pipeline()
        job.save(pipeline=pipe)
        self.push(job.id, pipeline=pipe)
        if pipeline is None:
            pipe.execute()

def touch(redis, job):
    with redis.pipeline() as p:
        job.save(pipeline=p)
        p.expire(job.key, 10)
        p.execute()

def unknown(redis, job, other):
    with redis.pipeline(transaction=False) as p:
        other.store(p)
        p.execute()
"#;
        let globals = exports(src, &profiles, &Globals::default(), None).unwrap();
        let f = scan(src, &profiles, &globals).unwrap();
        // Each pipeline by the line that sends it; the site is at the line that opens it.
        let at = |line| {
            f.sites
                .iter()
                .find(|s| s.send.map(|p| p.line) == Some(line))
                .unwrap()
        };
        let opened: Vec<usize> = [21, 27, 32].map(|l| at(l).at.line).to_vec();
        assert_eq!(opened, [17, 24, 30]);
        // `job.save` is Job's (the receiver names the class), `self.push` this class's.
        let s = at(21);
        assert_eq!(s.op, "HSET RPUSH");
        assert_eq!(texts(s), ["<job.key>", "<self.key>"]);
        assert!(matches!(s.verdict(), Verdict::CrossSlot(_)));
        let s = at(27);
        assert_eq!(s.op, "HSET EXPIRE");
        assert!(matches!(s.verdict(), Verdict::OneSlot(_)), "{s:?}");
        // A function whose body is not in the tree: the site is found, its keys unknown.
        let s = at(32);
        assert_eq!(s.op, "other.store()");
        assert_eq!(s.kind, SiteKind::Pipeline);
        let Verdict::Depends(why) = s.verdict() else {
            panic!("{s:?}")
        };
        assert!(why.contains("other.store()"), "{why}");
        // Without the tree's functions, the same site is only known to depend on them.
        let alone = scan(src, &profiles, &Globals::default()).unwrap();
        let s = alone.sites.iter().find(|s| s.at.line == 17).unwrap();
        assert_eq!(s.op, "job.save() self.push()");
        assert_eq!(s.send.map(|p| p.line), Some(21));
    }

    #[test]
    fn scripts_and_runtime_lists() {
        let f = scan_py(
            r#"
def go(client, keys, uid):
    client.eval("return 1", 2, f"lock:{uid}", f"owner:{uid}", "arg")
    client.delete(*keys)
    s = client.register_script("return 1")
    s(keys=[f"q:{{{uid}}}:a", f"q:{{{uid}}}:b"], args=[1])
    client.execute_command("SUNIONSTORE", "dst", "a", "b")
    d = {}
    d.get("not a key")
"#,
        );
        let ops: Vec<&str> = f.sites.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            ["EVAL", "DEL", "EVALSHA", "SUNIONSTORE"],
            "{:?}",
            f.sites
        );
        assert!(f.sites[0].atomic());
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::Depends(_)));
        assert!(matches!(f.sites[2].verdict(), Verdict::OneSlot(_)));
        assert_eq!(texts(&f.sites[3]), ["dst", "a", "b"]);
        assert!(f.keys.iter().all(|k| k.template.text() != "not a key"));
    }
}
