//! Ruby lowered into [`crate::code::ir`] (tree-sitter's Ruby grammar, as the Ruby reader
//! parses it).
//!
//! What each construct becomes, beyond the rules of [`crate::code::ir`]:
//!
//! - **Names.** Ruby does not mark a method called without arguments: a bare `name` is a local
//!   variable when a parameter, a block parameter or an assignment before it in its scope
//!   (a method, a class body, the file; a block sees the locals around it) made it one, and a
//!   call otherwise. Such a call is `self.name` ([`Expr::Field`]) in an instance method (so an
//!   `attr_reader`, an instance variable of that name or a method without parameters gives its
//!   value), a call of `name` without receiver elsewhere. `@x` is the field `self.x` (so
//!   `attr_reader :x` needs nothing), `@@x` the field `self.@@x`, `$x` a name.
//! - **Constants.** `NAME = value` at the top of the file is a module assignment; in a class
//!   or module `C` it is `C::NAME = value` and `NAME = C::NAME` at the top of the file (so
//!   other files find it by either name). A constant read in `C` (or a class around it) that
//!   the file defines there is `C::NAME`, `A::B::NAME` is `B::NAME`; a constant as a call's
//!   receiver is its last segment (`Sidekiq::Client.x` is a call on `Client`), and
//!   `A::B.new(…)` is a call of `B` with [`Call::new`] set.
//! - **Scope.** `def` in a class or module is a method of it (its receiver `self`);
//!   `def self.x` and the `def`s of `class << self` are [`Func::is_static`]; a `def` outside any
//!   class is a function of the unit. `include`/`extend`/`prepend M` in a class body adds `M` to
//!   its bases; the class body's other statements are its [`CLASS_BODY`].
//! - **Blocks.** A block (`do |p| … end`, `{ |p| … }`) is the call's last positional argument,
//!   an [`Expr::Lambda`] of its parameters; `&blk` passes `blk` the same way. A method that
//!   `yield`s without a `&block` parameter gets one named `&block` (last); `yield x` calls it,
//!   as does `blk.call(x)` / `blk.(x)` / `blk[x]` on a block parameter or a local holding a
//!   lambda. `->(x) { … }`, `lambda { … }` and `proc { … }` are lambdas.
//! - **Iteration.** `xs.each { |x| … }` (and `each_with_index`, `each_pair`, `each_key`,
//!   `each_value`, `each_slice`, `each_with_object`, `reverse_each`) is a [`Stmt::Loop`] over
//!   `xs`, `n.times`, `loop`, `while`/`until` and `for x in xs` are loops too;
//!   `xs.map { |x| e }` (`collect`, `flat_map`) with one expression is an
//!   [`Expr::Comprehension`]. `map(&:to_s)` is `xs` itself.
//! - **Values.** The last expression of a method or block body is returned (in each arm of an
//!   `if`/`case`/`begin` that ends it); `next x` in a block returns `x`. `if`, `case` and
//!   `begin` used as values put their statements before and give [`Expr::Either`] of their
//!   arms' last expressions (through a temporary `$vN`).
//! - **Strings.** `"a:#{x}"`, `+`, `"fmt" % args`, `format`/`sprintf` with a literal format are
//!   [`Expr::Concat`]; symbols (`:a`, `a:` keys) are text; `x.to_s`, `to_str`, `to_sym`,
//!   `freeze`, `dup`, `b` and `force_encoding`/`encode` are [`Expr::Wrap`]; `xs.join(sep)` is
//!   [`Expr::Join`]. Heredocs, regexes and ranges are [`Expr::Other`].
//! - **Arguments.** `key: v` and `:key => v` are keyword arguments, `**h` the keyword `**`,
//!   `*xs` a spread. `x.send(:name, …)` / `public_send` with a literal name is a call of `name`.
//! - **Statements.** `xs << x`, `xs.push(x)`, `xs.append(x)`, `xs.unshift(x)` and
//!   `xs.concat(ys)` on a local or a field of `self` are [`Stmt::Push`]; `a ||= b` is
//!   `a = a || b` ([`Expr::Either`]); `a += b` is text or a push (list literal);
//!   `if`/`unless`/`elsif`, `case`/`when`/`in`, modifiers and `begin`/`rescue` (and a method's
//!   own `rescue`) are [`Stmt::Branch`]es, `ensure` inline after.

use super::LowerError;
use crate::code::Position;
use crate::code::guard;
use crate::code::ir::{
    Arg, CLASS_BODY, Call, Class, Expr, Func, MODULE_BODY, Param, Stmt, Target, Unit,
};
use std::collections::HashSet;
use tree_sitter::{Node, Parser};

/// The name of the block parameter a method that `yield`s without one is given.
pub const YIELD_BLOCK: &str = "&block";

/// `text` (one Ruby file) lowered; refused as the Ruby reader refuses it (a heredoc word the
/// parser's scanner cannot hold, a tree deeper than [`guard::MAX_DEPTH`]).
pub fn lower(text: &str) -> Result<Unit, LowerError> {
    guard::ruby_heredocs(text)?;
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_ruby::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(LowerError::NoTree)?;
    guard::check_depth(&tree)?;
    let mut l = Lowerer::new(text);
    l.collect_consts(tree.root_node(), None);
    l.unit.funcs.push(Func {
        name: MODULE_BODY.into(),
        at: Position { line: 1, column: 1 },
        ..Func::default()
    });
    l.scopes.push(Scope {
        locals: HashSet::new(),
        isolated: true,
    });
    let mut body = Vec::new();
    l.body(tree.root_node(), &mut body, Tail::None);
    let mut module = std::mem::take(&mut l.hoisted);
    module.append(&mut body);
    l.unit.funcs[0].body = module;
    let mut unit = l.unit;
    unit.funcs
        .retain(|f| !(f.name == CLASS_BODY && f.body.is_empty()));
    Ok(unit)
}

/// What the last statement of a body gives.
#[derive(Clone)]
enum Tail {
    /// Nothing (a class body, a loop's body).
    None,
    /// The value of its function (a method or block).
    Return,
    /// A temporary's value (an `if` used as a value).
    Assign(String),
}

/// Local names of one scope.
struct Scope {
    locals: HashSet<String>,
    /// A method, class body or the file: the scopes around it are not seen.
    isolated: bool,
}

/// The class or module being lowered.
#[derive(Clone)]
struct ClassCx {
    name: String,
    /// In `class << self` (its `def`s are static).
    singleton: bool,
}

/// How the function being lowered sees `self`.
#[derive(Clone, Copy, PartialEq)]
enum SelfIs {
    /// The file or a function outside classes.
    Top,
    /// A class body or a static method: the class.
    Class,
    /// An instance method (and its blocks): the object.
    Object,
}

struct Lowerer<'s> {
    src: &'s str,
    /// Per line, the byte column of its first non-ASCII byte (`usize::MAX` for none).
    ascii_upto: Vec<usize>,
    unit: Unit,
    /// Statements the expressions of the statement being lowered need before it.
    pre: Vec<Stmt>,
    /// Calls, closures and yields made so far (an expression whose lowering moved it keeps
    /// something worth reading).
    made: usize,
    scopes: Vec<Scope>,
    /// Classes and modules around, innermost last.
    classes: Vec<ClassCx>,
    self_is: SelfIs,
    /// The block parameter of the method being lowered (`&blk`, or [`YIELD_BLOCK`]).
    block_param: Option<String>,
    /// Whether the method being lowered yields without a `&block` parameter.
    yields: bool,
    /// Locals holding a lambda written in the code (`f = ->(x) { … }`): `f.call(x)` calls it.
    lambdas: HashSet<String>,
    /// Constants the file defines in classes: `C::NAME`.
    consts: HashSet<String>,
    /// Constant assignments of classes, for the top of the module body.
    hoisted: Vec<Stmt>,
    /// Temporaries made so far.
    temps: usize,
}

impl<'s> Lowerer<'s> {
    fn new(src: &'s str) -> Self {
        let mut ascii_upto = Vec::new();
        let mut first = usize::MAX;
        let mut col = 0;
        for b in src.bytes() {
            if b == b'\n' {
                ascii_upto.push(first);
                first = usize::MAX;
                col = 0;
                continue;
            }
            if b >= 0x80 && first == usize::MAX {
                first = col;
            }
            col += 1;
        }
        ascii_upto.push(first);
        Lowerer {
            src,
            ascii_upto,
            unit: Unit::default(),
            pre: Vec::new(),
            made: 0,
            scopes: Vec::new(),
            classes: Vec::new(),
            self_is: SelfIs::Top,
            block_param: None,
            yields: false,
            lambdas: HashSet::new(),
            consts: HashSet::new(),
            hoisted: Vec::new(),
            temps: 0,
        }
    }

    fn text(&self, n: Node<'_>) -> &'s str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    /// 1-based line and column (in characters) of byte `byte` at tree-sitter point `p`.
    fn point(&self, byte: usize, p: tree_sitter::Point) -> Position {
        let limit = self.ascii_upto.get(p.row).copied().unwrap_or(usize::MAX);
        let column = if p.column <= limit {
            p.column
        } else {
            byte.checked_sub(p.column)
                .and_then(|start| self.src.get(start..byte))
                .map_or(p.column, |s| s.chars().count())
        };
        Position {
            line: p.row + 1,
            column: column + 1,
        }
    }

    fn pos(&self, n: Node<'_>) -> Position {
        self.point(n.start_byte(), n.start_position())
    }

    // ----- scopes -----

    fn is_local(&self, name: &str) -> bool {
        for s in self.scopes.iter().rev() {
            if s.locals.contains(name) {
                return true;
            }
            if s.isolated {
                return false;
            }
        }
        false
    }

    fn declare(&mut self, name: &str) {
        if let Some(s) = self.scopes.last_mut() {
            s.locals.insert(name.to_string());
        }
    }

    fn class_name(&self) -> Option<String> {
        self.classes.last().map(|c| c.name.clone())
    }

    /// Constants defined in class or module bodies (not in methods), as `C::NAME`, so a
    /// constant read before its definition is found. Recursion follows class nesting only.
    fn collect_consts(&mut self, n: Node<'_>, class: Option<&str>) {
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            match c.kind() {
                "class" | "module" => {
                    let name = c
                        .child_by_field_name("name")
                        .map(|x| last_segment(self.text(x)).to_string());
                    if let (Some(name), Some(b)) = (name, c.child_by_field_name("body")) {
                        self.collect_consts(b, Some(&name));
                    }
                }
                "assignment" => {
                    if let (Some(class), Some(l)) = (class, c.child_by_field_name("left"))
                        && l.kind() == "constant"
                    {
                        self.consts.insert(format!("{class}::{}", self.text(l)));
                    }
                }
                "body_statement" | "begin" | "then" | "else" | "if" | "unless" => {
                    self.collect_consts(c, class)
                }
                _ => {}
            }
        }
    }

    // ----- statements -----

    fn flush(&mut self, out: &mut Vec<Stmt>) {
        out.append(&mut self.pre);
    }

    /// The statements of a body (a file, a method's, a block's, a branch's); `rescue`,
    /// `else` and `ensure` clauses of a method or `begin` body make it a branch.
    fn body(&mut self, n: Node<'_>, out: &mut Vec<Stmt>, tail: Tail) {
        let mut cur = n.walk();
        let children: Vec<Node<'_>> = n
            .named_children(&mut cur)
            .filter(|c| !matches!(c.kind(), "comment" | "heredoc_body" | "empty_statement"))
            .collect();
        let clauses = children
            .iter()
            .any(|c| matches!(c.kind(), "rescue" | "ensure"));
        if !clauses {
            self.stmts(&children, out, tail);
            return;
        }
        let mut main = Vec::new();
        let mut rescues = Vec::new();
        let mut els = None;
        let mut ensure = None;
        for c in children {
            match c.kind() {
                "rescue" => rescues.push(c),
                "else" => els = Some(c),
                "ensure" => ensure = Some(c),
                _ => main.push(c),
            }
        }
        let mut arm = Vec::new();
        match els {
            Some(e) => {
                self.stmts(&main, &mut arm, Tail::None);
                self.body(e, &mut arm, tail.clone());
            }
            None => self.stmts(&main, &mut arm, tail.clone()),
        }
        let mut arms = vec![arm];
        for r in rescues {
            let mut arm = Vec::new();
            if let Some(v) = r.child_by_field_name("variable")
                && let Some(name) = v.named_child(0)
            {
                let name = self.text(name).to_string();
                self.declare(&name);
            }
            if let Some(b) = r.child_by_field_name("body") {
                self.body(b, &mut arm, tail.clone());
            }
            arms.push(arm);
        }
        out.push(Stmt::Branch(arms));
        if let Some(e) = ensure {
            self.body(e, out, Tail::None);
        }
    }

    fn stmts(&mut self, nodes: &[Node<'_>], out: &mut Vec<Stmt>, tail: Tail) {
        let last = nodes.len().saturating_sub(1);
        for (i, n) in nodes.iter().enumerate() {
            let t = if i == last { tail.clone() } else { Tail::None };
            self.stmt(*n, out, t);
        }
        if nodes.is_empty()
            && let Tail::Assign(t) = tail
        {
            out.push(Stmt::Assign {
                target: Target::Name(t),
                value: Expr::Num("nil".into()),
                at: Position::default(),
            });
        }
    }

    fn stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>, tail: Tail) {
        let at = self.pos(n);
        match n.kind() {
            "comment" | "heredoc_body" | "empty_statement" | "break" | "redo" | "retry"
            | "alias" | "undef" => {}
            "method" | "singleton_method" => self.def(n),
            "class" | "module" => self.class_def(n),
            "singleton_class" => {
                if let Some(b) = n.child_by_field_name("body") {
                    let saved = self.classes.last().cloned();
                    if let Some(c) = self.classes.last_mut() {
                        c.singleton = true;
                    }
                    self.body(b, out, Tail::None);
                    if let (Some(s), Some(c)) = (saved, self.classes.last_mut()) {
                        *c = s;
                    }
                }
            }
            "assignment" | "operator_assignment" => {
                let target = self.assign(n, out);
                self.tail_value(target.as_ref().and_then(read), at, out, tail);
            }
            "return" => {
                let v = n.named_child(0).map(|a| self.returned(a));
                self.flush(out);
                out.push(Stmt::Return(v, at));
            }
            "next" => {
                // The value of a block's pass.
                let v = n.named_child(0).map(|a| self.returned(a));
                self.flush(out);
                out.push(Stmt::Return(v, at));
            }
            "if" | "unless" => self.if_stmt(n, out, tail),
            "if_modifier" | "unless_modifier" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.condition(c, out);
                }
                let mut arm = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, &mut arm, tail.clone());
                }
                let mut other = Vec::new();
                self.stmts(&[], &mut other, tail);
                out.push(Stmt::Branch(vec![arm, other]));
            }
            "while" | "until" | "while_modifier" | "until_modifier" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.condition(c, out);
                }
                let mut body = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    match b.kind() {
                        "do" => self.body(b, &mut body, Tail::None),
                        _ => self.stmt(b, &mut body, Tail::None),
                    }
                }
                out.push(Stmt::Loop {
                    bind: None,
                    over: None,
                    body,
                });
            }
            "for" => {
                let over = n
                    .child_by_field_name("value")
                    .map(|v| match v.named_child(0) {
                        Some(x) if v.kind() == "in" => self.expr(x),
                        _ => self.expr(v),
                    });
                self.flush(out);
                let bind = n.child_by_field_name("pattern").map(|p| self.target(p));
                let mut body = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    self.body(b, &mut body, Tail::None);
                }
                out.push(Stmt::Loop { bind, over, body });
            }
            "case" | "case_match" => self.case(n, out, tail),
            "begin"
            | "parenthesized_statements"
            | "then"
            | "else"
            | "do"
            | "block_body"
            | "body_statement" => self.body(n, out, tail),
            "begin_block" | "end_block" => self.body(n, out, Tail::None),
            "rescue_modifier" => {
                let mut arm = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, &mut arm, tail.clone());
                }
                let mut other = Vec::new();
                if let Some(h) = n.child_by_field_name("handler") {
                    self.stmt(h, &mut other, tail);
                }
                out.push(Stmt::Branch(vec![arm, other]));
            }
            "binary" if self.op(n) == "<<" => {
                // `xs << x`: a push (several chained: each).
                let before = self.made;
                let e = self.shovel(n, at, out);
                let worth = self.made != before;
                self.flush(out);
                if let Some(e) = e {
                    self.effect(e, worth, at, out, tail);
                }
            }
            _ => {
                let before = self.made;
                let e = self.expr(n);
                let worth = self.made != before;
                self.flush(out);
                self.effect(e, worth, at, out, tail);
            }
        }
    }

    /// An expression statement: a push for `xs.push(x)` and its kin, the function's value at
    /// its end, else the expression when it does something.
    fn effect(&mut self, e: Expr, worth: bool, at: Position, out: &mut Vec<Stmt>, tail: Tail) {
        if let Expr::Call(c) = &e
            && let Some(push) = self.push(c, at)
        {
            out.push(push);
            let value = match push_target(out) {
                Some(t) => read(&t),
                None => None,
            };
            self.tail_value(value, at, out, tail);
            return;
        }
        match tail {
            Tail::None => {
                if worth && !matches!(e, Expr::Name(_) | Expr::Str(_) | Expr::Num(_)) {
                    out.push(Stmt::Expr(e));
                }
            }
            tail => self.tail_value(Some(e), at, out, tail),
        }
    }

    /// What the end of a body gives: `value`, returned or assigned to a temporary.
    fn tail_value(&mut self, value: Option<Expr>, at: Position, out: &mut Vec<Stmt>, tail: Tail) {
        match tail {
            Tail::None => {}
            Tail::Return => out.push(Stmt::Return(value, at)),
            Tail::Assign(t) => out.push(Stmt::Assign {
                target: Target::Name(t),
                value: value.unwrap_or(Expr::Num("nil".into())),
                at,
            }),
        }
    }

    /// `xs.push(x)`, `xs.append(x)`, `xs.unshift(x)`, `xs.concat(ys)` on a local or a field of
    /// `self`.
    fn push(&self, c: &Call, at: Position) -> Option<Stmt> {
        if c.callee.is_some() || c.args.iter().any(|a| a.keyword.is_some()) {
            return None;
        }
        let target = self.list_target(c.receiver.as_ref()?)?;
        let value = match (c.name.as_str(), c.args.as_slice()) {
            ("push" | "append" | "unshift" | "prepend", [a]) => a.value.clone(),
            ("concat", [a]) if !matches!(a.value, Expr::Spread(_)) => {
                Expr::Spread(Box::new(a.value.clone()))
            }
            _ => return None,
        };
        Some(Stmt::Push { target, value, at })
    }

    /// A list a push may add to: a local, or a field of `self`.
    fn list_target(&self, e: &Expr) -> Option<Target> {
        match e {
            Expr::Name(n) if self.is_local(n) => Some(Target::Name(n.clone())),
            Expr::Field(o, f) if matches!(&**o, Expr::Name(s) if s == "self") => {
                Some(Target::Field(Expr::name("self"), f.clone()))
            }
            _ => None,
        }
    }

    /// `xs << a << b`: pushes onto `xs` when it is a local or a field of `self` (the
    /// statement's value is then `None`), else the expression.
    fn shovel(&mut self, n: Node<'_>, at: Position, out: &mut Vec<Stmt>) -> Option<Expr> {
        let mut values = Vec::new();
        let mut cur = n;
        while cur.kind() == "binary" && self.op(cur) == "<<" {
            if let Some(r) = cur.child_by_field_name("right") {
                values.push(r);
            }
            match cur.child_by_field_name("left") {
                Some(l) => cur = l,
                None => return Some(self.other(n)),
            }
        }
        let list = self.expr(cur);
        let Some(target) = self.list_target(&list) else {
            let mut kept = vec![list];
            for v in values.into_iter().rev() {
                kept.push(self.expr(v));
            }
            return Some(Expr::Other(kept));
        };
        for v in values.into_iter().rev() {
            let value = self.expr(v);
            self.flush(out);
            out.push(Stmt::Push {
                target: target.clone(),
                value,
                at,
            });
        }
        None
    }

    /// A condition: its calls before the statement that tests it.
    fn condition(&mut self, c: Node<'_>, out: &mut Vec<Stmt>) {
        let before = self.made;
        let e = self.expr(c);
        let worth = self.made != before;
        self.flush(out);
        if worth && !matches!(e, Expr::Name(_) | Expr::Str(_) | Expr::Num(_)) {
            out.push(Stmt::Expr(e));
        }
    }

    fn if_stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>, tail: Tail) {
        let mut arms = Vec::new();
        let mut cur = Some(n);
        let mut has_else = false;
        while let Some(node) = cur {
            cur = None;
            match node.kind() {
                "if" | "unless" | "elsif" => {
                    if let Some(c) = node.child_by_field_name("condition") {
                        self.condition(c, out);
                    }
                    let mut arm = Vec::new();
                    match node.child_by_field_name("consequence") {
                        Some(b) => self.body(b, &mut arm, tail.clone()),
                        None => self.stmts(&[], &mut arm, tail.clone()),
                    }
                    arms.push(arm);
                    cur = node.child_by_field_name("alternative");
                }
                _ => {
                    has_else = true;
                    let mut arm = Vec::new();
                    self.body(node, &mut arm, tail.clone());
                    arms.push(arm);
                }
            }
        }
        if !has_else {
            let mut arm = Vec::new();
            self.stmts(&[], &mut arm, tail);
            arms.push(arm);
        }
        out.push(Stmt::Branch(arms));
    }

    fn case(&mut self, n: Node<'_>, out: &mut Vec<Stmt>, tail: Tail) {
        if let Some(v) = n.child_by_field_name("value") {
            self.condition(v, out);
        }
        let mut arms = Vec::new();
        let mut has_else = false;
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            match c.kind() {
                "when" | "in_clause" => {
                    let mut pc = c.walk();
                    for p in c.children_by_field_name("pattern", &mut pc) {
                        if p.kind() != "pattern" || c.kind() == "when" {
                            self.condition(p, out);
                        }
                    }
                    let mut arm = Vec::new();
                    match c.child_by_field_name("body") {
                        Some(b) => self.body(b, &mut arm, tail.clone()),
                        None => self.stmts(&[], &mut arm, tail.clone()),
                    }
                    arms.push(arm);
                }
                "else" => {
                    has_else = true;
                    let mut arm = Vec::new();
                    self.body(c, &mut arm, tail.clone());
                    arms.push(arm);
                }
                _ => {}
            }
        }
        if !has_else {
            let mut arm = Vec::new();
            self.stmts(&[], &mut arm, tail);
            arms.push(arm);
        }
        out.push(Stmt::Branch(arms));
    }

    // ----- definitions -----

    /// A `def`: a method of the class around it, a function of the unit outside classes.
    fn def(&mut self, n: Node<'_>) {
        let name = n
            .child_by_field_name("name")
            .map_or("", |x| self.text(x))
            .to_string();
        let class = self.class_name();
        let singleton =
            n.kind() == "singleton_method" || self.classes.last().is_some_and(|c| c.singleton);
        let slot = self.unit.funcs.len();
        self.unit.funcs.push(Func::default());
        let self_is = match (&class, singleton) {
            (None, _) => SelfIs::Top,
            (Some(_), true) => SelfIs::Class,
            (Some(_), false) => SelfIs::Object,
        };
        let saved_pre = std::mem::take(&mut self.pre);
        let saved_lambdas = std::mem::take(&mut self.lambdas);
        let saved_self = std::mem::replace(&mut self.self_is, self_is);
        let saved_block = self.block_param.take();
        let saved_yields = std::mem::replace(&mut self.yields, false);
        self.scopes.push(Scope {
            locals: HashSet::new(),
            isolated: true,
        });
        let mut params = match n.child_by_field_name("parameters") {
            Some(p) => self.params(p),
            None => Vec::new(),
        };
        if let Some(b) = params.iter().find(|p| p.name.starts_with('&')) {
            self.block_param = Some(b.name.trim_start_matches('&').to_string());
        }
        for p in params.iter_mut() {
            if let Some(n) = p.name.strip_prefix('&') {
                p.name = n.to_string();
            }
        }
        let mut body = Vec::new();
        if let Some(b) = n.child_by_field_name("body") {
            match b.kind() {
                "body_statement" => self.body(b, &mut body, Tail::Return),
                // `def x = expr`
                _ => self.stmt(b, &mut body, Tail::Return),
            }
        }
        self.flush(&mut body);
        if self.yields && self.block_param.is_none() {
            params.push(Param {
                name: YIELD_BLOCK.into(),
                ..Param::default()
            });
        }
        self.scopes.pop();
        self.pre = saved_pre;
        self.lambdas = saved_lambdas;
        self.self_is = saved_self;
        self.block_param = saved_block;
        self.yields = saved_yields;
        let instance = class.is_some() && !singleton;
        self.unit.funcs[slot] = Func {
            name,
            receiver: instance.then(|| "self".to_string()),
            class,
            params,
            body,
            at: self.pos(n),
            is_static: !instance && self_is == SelfIs::Class,
            returns: None,
        };
    }

    /// Parameters (a method's, a block's, a lambda's), each declared a local; a block
    /// parameter keeps its `&` (the caller strips it).
    fn params(&mut self, n: Node<'_>) -> Vec<Param> {
        let mut out = Vec::new();
        let mut cur = n.walk();
        for (i, p) in n.named_children(&mut cur).enumerate() {
            let mut param = Param::default();
            let name = match p.kind() {
                "identifier" => Some(self.text(p).to_string()),
                "optional_parameter" | "keyword_parameter" => {
                    if let Some(v) = p.child_by_field_name("value") {
                        param.default = Some(self.expr(v));
                    }
                    p.child_by_field_name("name")
                        .map(|x| self.text(x).to_string())
                }
                "splat_parameter" => {
                    param.rest = true;
                    Some(
                        p.child_by_field_name("name")
                            .map_or("*".to_string(), |x| self.text(x).to_string()),
                    )
                }
                "hash_splat_parameter" => {
                    param.kwrest = true;
                    Some(
                        p.child_by_field_name("name")
                            .map_or("**".to_string(), |x| self.text(x).to_string()),
                    )
                }
                "block_parameter" => p
                    .child_by_field_name("name")
                    .map(|x| format!("&{}", self.text(x))),
                "forward_parameter" => {
                    param.rest = true;
                    Some("...".to_string())
                }
                "destructured_parameter" => {
                    let mut dc = p.walk();
                    for inner in p.named_children(&mut dc) {
                        if inner.kind() == "identifier" {
                            let n = self.text(inner).to_string();
                            self.declare(&n);
                        }
                    }
                    Some(format!("${i}"))
                }
                _ => None, // comments, `;` block locals
            };
            let Some(name) = name else { continue };
            self.declare(name.trim_start_matches('&'));
            param.name = name;
            out.push(param);
        }
        // Block-local names (`|x; y|`).
        let mut lc = n.walk();
        for l in n.children_by_field_name("locals", &mut lc) {
            let name = self.text(l).to_string();
            self.declare(&name);
        }
        out
    }

    fn class_def(&mut self, n: Node<'_>) {
        let name = n
            .child_by_field_name("name")
            .map_or("", |x| last_segment(self.text(x)))
            .to_string();
        let mut bases = Vec::new();
        if let Some(s) = n.child_by_field_name("superclass")
            && let Some(b) = s.named_child(0)
            && matches!(b.kind(), "constant" | "scope_resolution")
        {
            bases.push(last_segment(self.text(b)).to_string());
        }
        let class_index = self.unit.classes.len();
        self.unit.classes.push(Class {
            name: name.clone(),
            bases,
        });
        let slot = self.unit.funcs.len();
        self.unit.funcs.push(Func::default());
        self.classes.push(ClassCx {
            name: name.clone(),
            singleton: false,
        });
        let saved_pre = std::mem::take(&mut self.pre);
        let saved_self = std::mem::replace(&mut self.self_is, SelfIs::Class);
        let saved_lambdas = std::mem::take(&mut self.lambdas);
        self.scopes.push(Scope {
            locals: HashSet::new(),
            isolated: true,
        });
        let mut body = Vec::new();
        if let Some(b) = n.child_by_field_name("body") {
            let mut cur = b.walk();
            let children: Vec<Node<'_>> = b.named_children(&mut cur).collect();
            for c in children {
                // `include M`, `extend M`, `prepend M`: M's methods are the class's.
                if c.kind() == "call"
                    && c.child_by_field_name("receiver").is_none()
                    && let Some(m) = c.child_by_field_name("method")
                    && matches!(self.text(m), "include" | "extend" | "prepend")
                {
                    if let Some(args) = c.child_by_field_name("arguments") {
                        let mut ac = args.walk();
                        for a in args.named_children(&mut ac) {
                            if matches!(a.kind(), "constant" | "scope_resolution") {
                                let base = last_segment(self.text(a)).to_string();
                                self.unit.classes[class_index].bases.push(base);
                            }
                        }
                    }
                    continue;
                }
                if c.kind() == "call"
                    && c.child_by_field_name("receiver").is_none()
                    && c.child_by_field_name("block").is_none()
                    && let Some(m) = c.child_by_field_name("method")
                    && matches!(
                        self.text(m),
                        "attr_reader"
                            | "attr_writer"
                            | "attr_accessor"
                            | "private"
                            | "public"
                            | "protected"
                            | "module_function"
                            | "private_constant"
                            | "private_class_method"
                            | "public_class_method"
                            | "require"
                            | "require_relative"
                    )
                {
                    continue;
                }
                if c.kind() == "identifier"
                    && matches!(
                        self.text(c),
                        "private" | "public" | "protected" | "module_function"
                    )
                {
                    continue;
                }
                self.stmt(c, &mut body, Tail::None);
            }
        }
        self.flush(&mut body);
        self.scopes.pop();
        self.pre = saved_pre;
        self.self_is = saved_self;
        self.lambdas = saved_lambdas;
        self.classes.pop();
        self.unit.funcs[slot] = Func {
            name: CLASS_BODY.into(),
            class: Some(name),
            receiver: Some("self".into()),
            params: Vec::new(),
            body,
            at: self.pos(n),
            is_static: false,
            returns: None,
        };
    }

    // ----- assignments -----

    /// `a = e`, `a = b = e`, `a, b = e`, `a ||= e`, `a += e`: the statements into `out`;
    /// the target, when one place.
    fn assign(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) -> Option<Target> {
        let at = self.pos(n);
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            let e = self.other(n);
            self.flush(out);
            out.push(Stmt::Expr(e));
            return None;
        };
        if n.kind() == "operator_assignment" {
            let op = n
                .child_by_field_name("operator")
                .map_or("", |o| self.text(o));
            let target = self.target(l);
            let before = self.made;
            let value = self.expr(r);
            let worth = self.made != before;
            self.flush(out);
            let current = read(&target).unwrap_or(Expr::Other(vec![]));
            let value = match op {
                "||=" => Expr::Either(vec![current, value]),
                "+=" if matches!(value, Expr::List(_)) => {
                    out.push(Stmt::Push {
                        target: target.clone(),
                        value: Expr::Spread(Box::new(value)),
                        at,
                    });
                    return Some(target);
                }
                "+=" => plus(current, value, worth),
                "<<=" => {
                    out.push(Stmt::Push {
                        target: target.clone(),
                        value,
                        at,
                    });
                    return Some(target);
                }
                _ => Expr::Other(if worth { vec![value] } else { vec![] }),
            };
            self.hoist_or_assign(target.clone(), value, at, out);
            return Some(target);
        }
        let value = match r.kind() {
            "assignment" | "operator_assignment" => {
                let inner = self.assign(r, out);
                inner.as_ref().and_then(read).unwrap_or(Expr::Other(vec![]))
            }
            "right_assignment_list" => {
                let mut items = Vec::new();
                let mut cur = r.walk();
                for c in r.named_children(&mut cur) {
                    items.push(self.expr(c));
                }
                Expr::List(items)
            }
            _ => self.expr(r),
        };
        if let Expr::Lambda(_) = value
            && l.kind() == "identifier"
        {
            self.lambdas.insert(self.text(l).to_string());
        }
        let target = self.target(l);
        self.flush(out);
        self.hoist_or_assign(target.clone(), value, at, out);
        Some(target)
    }

    /// An assignment; a constant of a class goes to the top of the file as `C::NAME` (and
    /// `NAME`).
    fn hoist_or_assign(&mut self, target: Target, value: Expr, at: Position, out: &mut Vec<Stmt>) {
        if let Target::Name(n) = &target
            && n.starts_with(|c: char| c.is_ascii_uppercase())
            && !n.contains("::")
            && let Some(class) = self.class_name()
            && self.self_is == SelfIs::Class
        {
            let qualified = format!("{class}::{n}");
            self.hoisted.push(Stmt::Assign {
                target: Target::Name(qualified.clone()),
                value,
                at,
            });
            self.hoisted.push(Stmt::Assign {
                target: Target::Name(n.clone()),
                value: Expr::Name(qualified),
                at,
            });
            return;
        }
        out.push(Stmt::Assign { target, value, at });
    }

    /// Where an assignment (or a loop) puts its value; a name assigned is a local from here.
    fn target(&mut self, n: Node<'_>) -> Target {
        match n.kind() {
            "identifier" => {
                let name = self.text(n).to_string();
                self.declare(&name);
                Target::Name(name)
            }
            "instance_variable" => Target::Field(Expr::name("self"), self.text(n)[1..].to_string()),
            "class_variable" => Target::Field(Expr::name("self"), self.text(n).to_string()),
            "global_variable" => Target::Name(self.text(n).to_string()),
            "constant" => Target::Name(self.text(n).to_string()),
            "scope_resolution" => match self.const_ref(n) {
                Expr::Name(q) => Target::Name(q),
                _ => Target::Other,
            },
            "call" => {
                let obj = n
                    .child_by_field_name("receiver")
                    .map_or(Expr::Other(vec![]), |o| self.receiver(o));
                match n.child_by_field_name("method") {
                    Some(m) => Target::Field(obj, self.text(m).to_string()),
                    None => Target::Other,
                }
            }
            "element_reference" => {
                let obj = n
                    .child_by_field_name("object")
                    .map_or(Expr::Other(vec![]), |o| self.expr(o));
                let index = self.index(n);
                Target::Index(obj, index)
            }
            "left_assignment_list" | "destructured_left_assignment" => {
                let mut cur = n.walk();
                let parts: Vec<Node<'_>> = n.named_children(&mut cur).collect();
                Target::Tuple(parts.into_iter().map(|c| self.target(c)).collect())
            }
            "rest_assignment" => {
                if let Some(c) = n.named_child(0) {
                    self.target(c);
                }
                Target::Other
            }
            _ => Target::Other,
        }
    }

    // ----- expressions -----

    /// `Other` of the named children of `n` that call or make something.
    fn other(&mut self, n: Node<'_>) -> Expr {
        let mut kept = Vec::new();
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            if matches!(c.kind(), "comment" | "heredoc_body") {
                continue;
            }
            let before = self.made;
            let e = self.expr(c);
            if self.made != before {
                kept.push(e);
            }
        }
        Expr::Other(kept)
    }

    fn op(&self, n: Node<'_>) -> &'s str {
        n.child_by_field_name("operator")
            .map_or("", |o| self.text(o))
    }

    /// A bare name: a local, or a call of a method without arguments.
    fn name(&mut self, n: Node<'_>) -> Expr {
        let name = self.text(n);
        if self.is_local(name) {
            return Expr::name(name);
        }
        if name == "block_given?" {
            return Expr::Num("true".into());
        }
        if self.self_is == SelfIs::Object {
            return Expr::field(Expr::name("self"), name);
        }
        self.made += 1;
        Expr::call(None, name, Vec::new(), self.pos(n))
    }

    /// A constant read as a value: `C::NAME` when a class around it defines it in this file.
    fn const_ref(&self, n: Node<'_>) -> Expr {
        match n.kind() {
            "constant" => {
                let name = self.text(n);
                for c in self.classes.iter().rev() {
                    let q = format!("{}::{name}", c.name);
                    if self.consts.contains(&q) {
                        return Expr::Name(q);
                    }
                }
                Expr::name(name)
            }
            _ => {
                let text: String = self
                    .text(n)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                let mut parts: Vec<&str> = text.split("::").filter(|p| !p.is_empty()).collect();
                let name = parts.pop().unwrap_or("");
                match parts.pop() {
                    Some(scope) => Expr::Name(format!("{scope}::{name}")),
                    None => Expr::name(name),
                }
            }
        }
    }

    /// A call's receiver: a constant by its last segment.
    fn receiver(&mut self, n: Node<'_>) -> Expr {
        match n.kind() {
            "constant" | "scope_resolution" => Expr::name(last_segment(self.text(n))),
            _ => self.expr(n),
        }
    }

    fn expr(&mut self, n: Node<'_>) -> Expr {
        match n.kind() {
            "identifier" => self.name(n),
            "instance_variable" => Expr::field(Expr::name("self"), &self.text(n)[1..]),
            "class_variable" => Expr::field(Expr::name("self"), self.text(n)),
            "global_variable" => Expr::name(self.text(n)),
            "constant" | "scope_resolution" => self.const_ref(n),
            "self" => Expr::name("self"),
            "super" => Expr::name("super"),
            "integer" | "float" | "nil" | "true" | "false" | "rational" | "complex" => {
                Expr::Num(self.text(n).to_string())
            }
            "string" | "delimited_symbol" | "bare_string" | "bare_symbol" => self.string(n),
            "chained_string" => {
                let mut pieces = Vec::new();
                let mut cur = n.walk();
                for s in n.named_children(&mut cur) {
                    let e = self.string(s);
                    push_piece(&mut pieces, e);
                }
                concat(pieces)
            }
            "simple_symbol" => Expr::str(self.text(n).trim_start_matches(':')),
            "hash_key_symbol" => Expr::str(self.text(n)),
            "character" => Expr::str(self.text(n).trim_start_matches('?')),
            "array" | "string_array" | "symbol_array" => {
                let mut items = Vec::new();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    if c.kind() != "comment" {
                        items.push(self.expr(c));
                    }
                }
                Expr::List(items)
            }
            "splat_argument" => match n.named_child(0) {
                Some(c) => Expr::Spread(Box::new(self.expr(c))),
                None => Expr::Other(vec![]),
            },
            "hash" => {
                let mut entries = Vec::new();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    match c.kind() {
                        "pair" => {
                            let k = c
                                .child_by_field_name("key")
                                .map_or(Expr::Other(vec![]), |k| self.expr(k));
                            let v = match c.child_by_field_name("value") {
                                Some(v) => self.expr(v),
                                // `{ id: }`: the local of that name.
                                None => match &k {
                                    Expr::Str(s) => Expr::name(s.clone()),
                                    _ => Expr::Other(vec![]),
                                },
                            };
                            entries.push((k, v));
                        }
                        "hash_splat_argument" => {
                            let d = c
                                .named_child(0)
                                .map_or(Expr::Other(vec![]), |d| self.expr(d));
                            entries.push((Expr::Spread(Box::new(d)), Expr::Other(vec![])));
                        }
                        _ => {}
                    }
                }
                Expr::Map(entries)
            }
            "call" => self.call(n),
            "element_reference" => {
                let obj = n
                    .child_by_field_name("object")
                    .map_or(Expr::Other(vec![]), |o| self.expr(o));
                let index = self.index(n);
                // `blk[x]` on a block: a call of it.
                if let Expr::Name(b) = &obj
                    && self.is_callable(b)
                {
                    let args = match index {
                        Expr::List(xs) => xs.into_iter().map(Arg::pos).collect(),
                        x => vec![Arg::pos(x)],
                    };
                    return self.callee_call(obj, args, self.pos(n));
                }
                Expr::Index(Box::new(obj), Box::new(index))
            }
            "parenthesized_statements" | "begin" | "if" | "unless" | "case" | "case_match" => {
                self.statements_value(n)
            }
            "binary" => self.binary(n),
            "unary" => {
                let operand = n.child_by_field_name("operand");
                match operand {
                    Some(a) if matches!(a.kind(), "integer" | "float") && self.op(n) == "-" => {
                        Expr::Num(self.text(n).split_whitespace().collect())
                    }
                    _ => self.other(n),
                }
            }
            "conditional" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    let before = self.made;
                    let e = self.expr(c);
                    if self.made != before {
                        self.pre.push(Stmt::Expr(e));
                    }
                }
                let mut items = Vec::new();
                for f in ["consequence", "alternative"] {
                    match n.child_by_field_name(f).map(|x| self.expr(x)) {
                        Some(Expr::Either(xs)) => items.extend(xs),
                        Some(e) => items.push(e),
                        None => {}
                    }
                }
                Expr::Either(items)
            }
            "lambda" => {
                let f = self.lambda(n);
                Expr::Lambda(Box::new(f))
            }
            "assignment" | "operator_assignment" => {
                let mut out = Vec::new();
                let t = self.assign(n, &mut out);
                self.pre.append(&mut out);
                t.as_ref().and_then(read).unwrap_or(Expr::Other(vec![]))
            }
            "yield" => {
                self.made += 1;
                self.yields = true;
                let args = match n.named_child(0) {
                    Some(a) if a.kind() == "argument_list" => self.args(a),
                    Some(a) => vec![Arg::pos(self.expr(a))],
                    None => Vec::new(),
                };
                let name = self
                    .block_param
                    .clone()
                    .unwrap_or_else(|| YIELD_BLOCK.to_string());
                Expr::call(None, name, args, self.pos(n))
            }
            "rescue_modifier" => {
                let mut items = Vec::new();
                for f in ["body", "handler"] {
                    if let Some(x) = n.child_by_field_name(f) {
                        items.push(self.expr(x));
                    }
                }
                Expr::Either(items)
            }
            "if_modifier" | "unless_modifier" | "while_modifier" | "until_modifier" | "while"
            | "until" | "for" | "return" | "next" | "break" => {
                let mut out = Vec::new();
                self.stmt(n, &mut out, Tail::None);
                self.pre.append(&mut out);
                Expr::Num("nil".into())
            }
            "method" | "singleton_method" => {
                // `private def x`: the method, and its name as the value.
                let name = n
                    .child_by_field_name("name")
                    .map_or("", |x| self.text(x))
                    .to_string();
                self.def(n);
                Expr::Str(name)
            }
            "heredoc_beginning" | "regex" | "range" | "subshell" => self.other(n),
            "argument_list" => match n.named_child(0) {
                Some(c) if n.named_child_count() == 1 => self.expr(c),
                _ => self.other(n),
            },
            _ => self.other(n),
        }
    }

    /// `if`, `case`, `begin` or `( … )` used as a value: its statements before, and the
    /// value of whichever arm ran.
    fn statements_value(&mut self, n: Node<'_>) -> Expr {
        // `(x)`: x itself.
        if n.kind() == "parenthesized_statements" {
            let mut cur = n.walk();
            let inner: Vec<Node<'_>> = n
                .named_children(&mut cur)
                .filter(|c| c.kind() != "comment")
                .collect();
            if let [one] = inner.as_slice() {
                return self.expr(*one);
            }
        }
        self.temps += 1;
        let t = format!("$v{}", self.temps);
        let mut out = Vec::new();
        let pre = std::mem::take(&mut self.pre);
        self.stmt(n, &mut out, Tail::Assign(t.clone()));
        self.pre = pre;
        self.pre.append(&mut out);
        Expr::Name(t)
    }

    fn index(&mut self, n: Node<'_>) -> Expr {
        let obj = n.child_by_field_name("object").map(|o| o.id());
        let mut items = Vec::new();
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            if Some(c.id()) == obj || c.kind() == "comment" {
                continue;
            }
            items.push(self.expr(c));
        }
        match items.len() {
            0 => Expr::Other(vec![]),
            1 => items.pop().unwrap_or(Expr::Other(vec![])),
            _ => Expr::List(items),
        }
    }

    /// A string literal (or a symbol written like one): its text with escapes resolved, or
    /// its pieces when it interpolates.
    fn string(&mut self, n: Node<'_>) -> Expr {
        let raw = self.text(n).starts_with('\'') || self.text(n).starts_with("%q");
        let mut pieces = Vec::new();
        let mut buf = String::new();
        let mut interpolated = false;
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            match c.kind() {
                "string_content" => buf.push_str(self.text(c)),
                "escape_sequence" => {
                    let t = self.text(c);
                    if raw {
                        buf.push_str(t.strip_prefix('\\').unwrap_or(t));
                    } else {
                        unescape(t, &mut buf);
                    }
                }
                "interpolation" => {
                    interpolated = true;
                    if !buf.is_empty() {
                        push_piece(&mut pieces, Expr::Str(std::mem::take(&mut buf)));
                    }
                    let mut ic = c.walk();
                    let inner: Vec<Node<'_>> = c
                        .named_children(&mut ic)
                        .filter(|x| x.kind() != "comment")
                        .collect();
                    let v = match inner.as_slice() {
                        [] => Expr::Str(String::new()),
                        [one] => self.expr(*one),
                        _ => {
                            // Several statements: the last one's value.
                            let mut out = Vec::new();
                            for s in &inner[..inner.len() - 1] {
                                self.stmt(*s, &mut out, Tail::None);
                            }
                            self.pre.append(&mut out);
                            self.expr(inner[inner.len() - 1])
                        }
                    };
                    push_piece(&mut pieces, v);
                }
                _ => {}
            }
        }
        if !buf.is_empty() {
            push_piece(&mut pieces, Expr::Str(buf));
        }
        if interpolated && pieces.iter().any(|p| !matches!(p, Expr::Str(_))) {
            Expr::Concat(pieces)
        } else {
            concat(pieces)
        }
    }

    fn binary(&mut self, n: Node<'_>) -> Expr {
        let op = self.op(n);
        let before = self.made;
        let l = n
            .child_by_field_name("left")
            .map_or(Expr::Other(vec![]), |x| self.expr(x));
        let l_worth = self.made != before;
        let mid = self.made;
        let r = n
            .child_by_field_name("right")
            .map_or(Expr::Other(vec![]), |x| self.expr(x));
        let r_worth = self.made != mid;
        match op {
            "+" => plus(l, r, l_worth || r_worth),
            "%" => match l {
                Expr::Str(fmt) => {
                    let args = match r {
                        Expr::List(xs) => xs,
                        x => vec![x],
                    };
                    printf(&fmt, &args)
                        .unwrap_or_else(|| Expr::Other(if r_worth { args } else { vec![] }))
                }
                Expr::Concat(fmt) => {
                    let args = match r {
                        Expr::List(xs) => xs,
                        x => vec![x],
                    };
                    printf_concat(&fmt, &args).unwrap_or_else(|| {
                        Expr::Other(if l_worth || r_worth { args } else { vec![] })
                    })
                }
                l => keep([(l, l_worth), (r, r_worth)]),
            },
            "||" | "or" | "&&" | "and" => {
                let mut items = match l {
                    Expr::Either(xs) => xs,
                    e => vec![e],
                };
                match r {
                    Expr::Either(xs) => items.extend(xs),
                    e => items.push(e),
                }
                Expr::Either(items)
            }
            _ => keep([(l, l_worth), (r, r_worth)]),
        }
    }

    /// Whether `name` is a block parameter or a local holding a lambda: `name.call(…)` calls
    /// it.
    fn is_callable(&self, name: &str) -> bool {
        self.block_param.as_deref() == Some(name) || self.lambdas.contains(name)
    }

    fn callee_call(&mut self, callee: Expr, args: Vec<Arg>, at: Position) -> Expr {
        self.made += 1;
        Expr::Call(Box::new(Call {
            receiver: None,
            name: String::new(),
            callee: Some(callee),
            args,
            new: false,
            at,
        }))
    }

    /// A closure: a block's or a lambda's parameters and body, in a scope that sees the
    /// locals around it.
    fn closure(&mut self, params: Option<Node<'_>>, body: Option<Node<'_>>, at: Position) -> Func {
        self.scopes.push(Scope {
            locals: HashSet::new(),
            isolated: false,
        });
        let saved_pre = std::mem::take(&mut self.pre);
        let mut params = match params {
            Some(p) => self.params(p),
            None => Vec::new(),
        };
        for p in params.iter_mut() {
            if let Some(n) = p.name.strip_prefix('&') {
                p.name = n.to_string();
            }
        }
        let mut stmts = Vec::new();
        if let Some(b) = body {
            match b.kind() {
                "block_body" | "body_statement" | "block" | "do_block" => {
                    self.body(b, &mut stmts, Tail::Return)
                }
                _ => self.stmt(b, &mut stmts, Tail::Return),
            }
        }
        self.flush(&mut stmts);
        self.pre = saved_pre;
        self.scopes.pop();
        self.made += 1;
        Func {
            name: "<lambda>".into(),
            class: self.class_name().filter(|_| self.self_is != SelfIs::Top),
            receiver: (self.self_is == SelfIs::Object).then(|| "self".to_string()),
            params,
            body: stmts,
            at,
            is_static: false,
            returns: None,
        }
    }

    fn block(&mut self, b: Node<'_>) -> Func {
        let at = self.pos(b);
        self.closure(
            b.child_by_field_name("parameters"),
            b.child_by_field_name("body"),
            at,
        )
    }

    /// `->(x) { … }`.
    fn lambda(&mut self, n: Node<'_>) -> Func {
        let at = self.pos(n);
        let body = n.child_by_field_name("body");
        let inner = body.and_then(|b| b.child_by_field_name("body"));
        self.closure(n.child_by_field_name("parameters"), inner, at)
    }

    fn call(&mut self, n: Node<'_>) -> Expr {
        let recv_node = n.child_by_field_name("receiver");
        let method = n.child_by_field_name("method");
        let block = n.child_by_field_name("block");
        let args_node = n.child_by_field_name("arguments");
        let name = method.map_or("", |m| self.text(m)).to_string();
        let at = method.map_or_else(|| self.pos(n), |m| self.pos(m));
        let receiver = recv_node.map(|r| self.receiver(r));
        // `lambda { … }`, `proc { … }`, `Proc.new { … }`: a closure.
        if let Some(b) = block
            && args_node.is_none()
            && match &receiver {
                None => matches!(name.as_str(), "lambda" | "proc"),
                Some(Expr::Name(r)) => r == "Proc" && name == "new",
                _ => false,
            }
        {
            let f = self.block(b);
            return Expr::Lambda(Box::new(f));
        }
        let mut args = match args_node {
            Some(a) => self.args(a),
            None => Vec::new(),
        };
        // `xs.each { |x| … }`, `n.times { |i| … }`, `loop { … }`: loops.
        if let Some(b) = block
            && let Some(e) = self.iteration(&receiver, &name, &args, b)
        {
            return e;
        }
        // `xs.map { |x| f(x) }`: the list of what the block makes.
        if let (Some(r), Some(b)) = (&receiver, block)
            && args.is_empty()
            && matches!(
                name.as_str(),
                "map" | "collect" | "flat_map" | "collect_concat"
            )
            && let Some(e) = self.comprehension(r.clone(), &name, b)
        {
            return e;
        }
        if let Some(b) = block {
            let f = self.block(b);
            args.push(Arg::pos(Expr::Lambda(Box::new(f))));
        }
        match (receiver, name.as_str()) {
            // `foo.()`: a call of `foo`.
            (Some(r), "") => self.callee_call(r, args, at),
            (Some(Expr::Name(b)), "call" | "yield" | "()") if self.is_callable(&b) => {
                self.callee_call(Expr::Name(b), args, at)
            }
            // `Redis.new(…)`, `A::B.new(…)`: a call of the class.
            (Some(Expr::Name(c)), "new")
                if recv_node
                    .is_some_and(|r| matches!(r.kind(), "constant" | "scope_resolution")) =>
            {
                self.made += 1;
                Expr::Call(Box::new(Call {
                    receiver: None,
                    name: c,
                    callee: None,
                    args,
                    new: true,
                    at,
                }))
            }
            (Some(r), "to_s" | "to_str" | "to_sym" | "freeze" | "dup" | "b" | "itself")
                if args.is_empty() =>
            {
                Expr::Wrap(Box::new(r))
            }
            (Some(r), "force_encoding" | "encode") if args.len() <= 2 => Expr::Wrap(Box::new(r)),
            (Some(r), "join") if args.len() <= 1 && args.iter().all(plain) => {
                let sep = args.pop().map_or(Expr::str(""), |a| a.value);
                Expr::Join(Box::new(sep), Box::new(r))
            }
            (Some(r), "send" | "public_send" | "__send__")
                if matches!(
                    args.first(),
                    Some(Arg {
                        keyword: None,
                        value: Expr::Str(_)
                    })
                ) =>
            {
                let Expr::Str(m) = args.remove(0).value else {
                    unreachable!("matched above")
                };
                self.made += 1;
                Expr::call(Some(r), m, args, at)
            }
            (None, "format" | "sprintf")
                if matches!(
                    args.first(),
                    Some(Arg {
                        keyword: None,
                        value: Expr::Str(_)
                    })
                ) =>
            {
                let Expr::Str(fmt) = &args[0].value else {
                    unreachable!("matched above")
                };
                let values: Vec<Expr> = args[1..].iter().map(|a| a.value.clone()).collect();
                match printf(fmt, &values) {
                    Some(e) => e,
                    None => {
                        self.made += 1;
                        Expr::call(None, name, args, at)
                    }
                }
            }
            // `job.queue`: an attribute read (Ruby does not tell it from a call without
            // arguments), unless the method's name says it is a call.
            (Some(r), m)
                if args.is_empty()
                    && args_node.is_none()
                    && recv_node.is_some_and(|r| {
                        !matches!(r.kind(), "constant" | "scope_resolution" | "self")
                    })
                    && n.child_by_field_name("operator")
                        .is_some_and(|o| self.text(o) != "::")
                    && reads_like_attribute(m) =>
            {
                Expr::field(r, m)
            }
            (r, _) => {
                self.made += 1;
                Expr::call(r, name, args, at)
            }
        }
    }

    /// `xs.each { |x| … }` and its kin, `n.times { |i| … }`, `loop { … }`: a loop before the
    /// statement, and the call's value (its receiver).
    fn iteration(
        &mut self,
        receiver: &Option<Expr>,
        name: &str,
        args: &[Arg],
        b: Node<'_>,
    ) -> Option<Expr> {
        let over = match (receiver, name) {
            (Some(r), "each" | "each_with_index" | "each_entry" | "reverse_each" | "each_key")
                if args.is_empty() =>
            {
                Some(r.clone())
            }
            (Some(r), "each_value") if args.is_empty() => Some(Expr::call(
                Some(r.clone()),
                "values",
                Vec::new(),
                self.pos(b),
            )),
            (Some(r), "each_pair") if args.is_empty() => Some(r.clone()),
            (Some(r), "each_slice" | "each_cons") if args.len() == 1 => Some(r.clone()),
            (Some(r), "each_with_object") if args.len() == 1 => Some(r.clone()),
            (Some(_), "times") if args.is_empty() => None,
            (None, "loop") if args.is_empty() => None,
            _ => return None,
        };
        self.scopes.push(Scope {
            locals: HashSet::new(),
            isolated: false,
        });
        let params = b
            .child_by_field_name("parameters")
            .map(|p| self.params(p))
            .unwrap_or_default();
        let names: Vec<Target> = params
            .iter()
            .map(|p| Target::Name(p.name.trim_start_matches('&').to_string()))
            .collect();
        let bind = match (name, names.len()) {
            (_, 0) => None,
            ("each_pair", 2) => Some(Target::Tuple(names)),
            _ => names.into_iter().next(),
        };
        let mut body = Vec::new();
        if let Some(bb) = b.child_by_field_name("body") {
            self.body(bb, &mut body, Tail::None);
        }
        self.flush(&mut body);
        self.scopes.pop();
        // `next` in the block ends one pass: not the function's return.
        let body = body
            .into_iter()
            .map(|s| match s {
                Stmt::Return(Some(e), _) => Stmt::Expr(e),
                Stmt::Return(None, _) => Stmt::Expr(Expr::Other(vec![])),
                s => s,
            })
            .collect();
        self.made += 1;
        self.pre.push(Stmt::Loop {
            bind,
            over: over.clone(),
            body,
        });
        Some(over.unwrap_or(Expr::Num("nil".into())))
    }

    /// `xs.map { |x| e }` with one parameter and one expression: a comprehension.
    fn comprehension(&mut self, over: Expr, name: &str, b: Node<'_>) -> Option<Expr> {
        let params = b.child_by_field_name("parameters")?;
        let body = b.child_by_field_name("body")?;
        let mut pc = params.walk();
        let ps: Vec<Node<'_>> = params.named_children(&mut pc).collect();
        let [p] = ps.as_slice() else { return None };
        if p.kind() != "identifier" {
            return None;
        }
        let mut bc = body.walk();
        let stmts: Vec<Node<'_>> = body
            .named_children(&mut bc)
            .filter(|c| c.kind() != "comment")
            .collect();
        let [one] = stmts.as_slice() else { return None };
        if matches!(
            one.kind(),
            "assignment" | "operator_assignment" | "if" | "unless" | "case" | "while" | "return"
        ) {
            return None;
        }
        let var = self.text(*p).to_string();
        self.scopes.push(Scope {
            locals: HashSet::from([var.clone()]),
            isolated: false,
        });
        let saved = std::mem::take(&mut self.pre);
        let item = self.expr(*one);
        let inner = std::mem::replace(&mut self.pre, saved);
        self.scopes.pop();
        if !inner.is_empty() {
            // The block needs statements: read as a closure instead.
            return None;
        }
        self.made += 1;
        let item = if name == "map" || name == "collect" {
            item
        } else {
            Expr::Spread(Box::new(item))
        };
        Some(Expr::Comprehension {
            item: Box::new(item),
            bind: Box::new(Target::Name(var)),
            over: Box::new(over),
        })
    }

    /// A `return`'s or `next`'s value (several: a list).
    fn returned(&mut self, a: Node<'_>) -> Expr {
        if a.kind() == "argument_list" {
            let mut cur = a.walk();
            let items: Vec<Node<'_>> = a
                .named_children(&mut cur)
                .filter(|c| c.kind() != "comment")
                .collect();
            return match items.as_slice() {
                [one] => self.expr(*one),
                _ => Expr::List(items.into_iter().map(|c| self.expr(c)).collect()),
            };
        }
        self.expr(a)
    }

    fn args(&mut self, n: Node<'_>) -> Vec<Arg> {
        let mut out = Vec::new();
        let mut cur = n.walk();
        for a in n.named_children(&mut cur) {
            match a.kind() {
                "comment" | "heredoc_body" => {}
                "pair" => {
                    let key = a.child_by_field_name("key");
                    let k = key.map_or(String::new(), |k| {
                        self.text(k)
                            .trim_start_matches(':')
                            .trim_end_matches(':')
                            .trim_matches(['"', '\''])
                            .to_string()
                    });
                    let v = match a.child_by_field_name("value") {
                        Some(v) => self.expr(v),
                        None => Expr::name(k.clone()),
                    };
                    match key.map(|k| k.kind()) {
                        Some("hash_key_symbol" | "simple_symbol") => out.push(Arg::kw(k, v)),
                        // `"k" => v`: a hash given last, its key a value.
                        _ => {
                            let kx = key.map_or(Expr::Other(vec![]), |k| self.expr(k));
                            out.push(Arg::pos(Expr::Map(vec![(kx, v)])));
                        }
                    }
                }
                "splat_argument" => {
                    let v = a
                        .named_child(0)
                        .map_or(Expr::Other(vec![]), |v| self.expr(v));
                    out.push(Arg::pos(Expr::Spread(Box::new(v))));
                }
                "hash_splat_argument" => {
                    let v = a
                        .named_child(0)
                        .map_or(Expr::Other(vec![]), |v| self.expr(v));
                    out.push(Arg::kw("**", v));
                }
                "block_argument" => {
                    let v = match a.named_child(0) {
                        Some(s) if s.kind() == "simple_symbol" => Expr::Other(vec![]),
                        Some(v) => self.expr(v),
                        // `&` alone forwards the method's block.
                        None => Expr::name(
                            self.block_param
                                .clone()
                                .unwrap_or_else(|| YIELD_BLOCK.to_string()),
                        ),
                    };
                    out.push(Arg::pos(v));
                }
                "forward_argument" => out.push(Arg::pos(Expr::Spread(Box::new(Expr::name("..."))))),
                _ => out.push(Arg::pos(self.expr(a))),
            }
        }
        out
    }
}

/// Whether `x.name` (no arguments, no parentheses) reads like an attribute rather than a
/// call: not a predicate or a bang method, nor a method of lists and strings that makes a
/// new value or takes one out (`to_a`, `first`, `pop`…).
fn reads_like_attribute(name: &str) -> bool {
    !name.ends_with(['?', '!', '='])
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && !matches!(
            name,
            "to_a"
                | "to_h"
                | "to_i"
                | "to_f"
                | "to_json"
                | "compact"
                | "flatten"
                | "uniq"
                | "keys"
                | "values"
                | "first"
                | "last"
                | "sort"
                | "reverse"
                | "size"
                | "length"
                | "count"
                | "pop"
                | "shift"
                | "next"
                | "sample"
                | "shuffle"
                | "upcase"
                | "downcase"
                | "strip"
                | "chomp"
                | "succ"
                | "min"
                | "max"
                | "sum"
                | "entries"
                | "lazy"
                | "each"
                | "map"
                | "new"
                | "call"
                | "now"
                | "rand"
        )
}

/// Whether an argument is positional and no spread.
fn plain(a: &Arg) -> bool {
    a.keyword.is_none() && !matches!(a.value, Expr::Spread(_))
}

/// The last segment of a constant path (`A::B` → `B`).
fn last_segment(s: &str) -> &str {
    s.rsplit("::").next().unwrap_or(s).trim()
}

/// The target of the push just added to `out`.
fn push_target(out: &[Stmt]) -> Option<Target> {
    match out.last() {
        Some(Stmt::Push { target, .. }) => Some(target.clone()),
        _ => None,
    }
}

/// The expression that reads what `t` names (`None` for a target that is not one place).
fn read(t: &Target) -> Option<Expr> {
    Some(match t {
        Target::Name(n) => Expr::Name(n.clone()),
        Target::Field(o, f) => Expr::Field(Box::new(o.clone()), f.clone()),
        Target::Index(o, i) => Expr::Index(Box::new(o.clone()), Box::new(i.clone())),
        Target::Tuple(_) | Target::Other => return None,
    })
}

/// `Other` of the operands worth keeping.
fn keep<const N: usize>(parts: [(Expr, bool); N]) -> Expr {
    Expr::Other(
        parts
            .into_iter()
            .filter_map(|(e, w)| w.then_some(e))
            .collect(),
    )
}

/// `l + r`: numbers are arithmetic, lists are joined, anything else is text.
fn plus(l: Expr, r: Expr, worth: bool) -> Expr {
    match (l, r) {
        (l @ Expr::Num(_), r) | (l, r @ Expr::Num(_)) => {
            Expr::Other(if worth { vec![l, r] } else { vec![] })
        }
        (Expr::List(mut a), Expr::List(b)) => {
            a.extend(b);
            Expr::List(a)
        }
        (Expr::List(mut a), r) => {
            a.push(Expr::Spread(Box::new(r)));
            Expr::List(a)
        }
        (l, Expr::List(b)) => {
            let mut a = vec![Expr::Spread(Box::new(l))];
            a.extend(b);
            Expr::List(a)
        }
        (l, r) => {
            let mut pieces = match l {
                Expr::Concat(xs) => xs,
                l => {
                    let mut pieces = Vec::new();
                    push_piece(&mut pieces, l);
                    pieces
                }
            };
            push_piece(&mut pieces, r);
            Expr::Concat(pieces)
        }
    }
}

/// Adds `e` to the pieces of a text, merging neighbouring literals and flattening concats.
fn push_piece(pieces: &mut Vec<Expr>, e: Expr) {
    match e {
        Expr::Concat(xs) => xs.into_iter().for_each(|x| push_piece(pieces, x)),
        Expr::Str(s) => match pieces.last_mut() {
            Some(Expr::Str(last)) => last.push_str(&s),
            _ => pieces.push(Expr::Str(s)),
        },
        e => pieces.push(e),
    }
}

/// Pieces as one expression: one literal as itself, otherwise a concat.
fn concat(mut pieces: Vec<Expr>) -> Expr {
    match pieces.len() {
        0 => Expr::Str(String::new()),
        1 if matches!(pieces[0], Expr::Str(_)) => pieces.pop().unwrap_or(Expr::Str(String::new())),
        _ => Expr::Concat(pieces),
    }
}

/// `format(fmt, args…)` / `fmt % args` for a literal `fmt`: its pieces and the values its
/// conversions take (`%{name}` and `%<name>s` from a hash); `None` when a conversion has no
/// value written out.
fn printf(fmt: &str, args: &[Expr]) -> Option<Expr> {
    let mut next = 0usize;
    let mut pieces = Vec::new();
    printf_into(fmt, args, &mut next, &mut pieces)?;
    Some(concat(pieces))
}

/// `fmt % args` for a format built of literal text and values (`"#{PREFIX}:%s" % id`): the
/// conversions of its literal pieces take the values in order.
fn printf_concat(fmt: &[Expr], args: &[Expr]) -> Option<Expr> {
    let mut next = 0usize;
    let mut pieces = Vec::new();
    for p in fmt {
        match p {
            Expr::Str(s) => printf_into(s, args, &mut next, &mut pieces)?,
            e => push_piece(&mut pieces, e.clone()),
        }
    }
    Some(Expr::Concat(pieces))
}

/// The pieces of one literal format into `pieces`, its conversions taking `args` from `next`.
fn printf_into(fmt: &str, args: &[Expr], next: &mut usize, pieces: &mut Vec<Expr>) -> Option<()> {
    let mut lit = String::new();
    let mut chars = fmt.chars().peekable();
    let named = |key: &str| -> Option<Expr> {
        match args {
            [Expr::Map(kv)] => kv
                .iter()
                .find(|(k, _)| matches!(k, Expr::Str(s) if s == key))
                .map(|(_, v)| v.clone()),
            [one] => Some(Expr::Index(Box::new(one.clone()), Box::new(Expr::str(key)))),
            _ => None,
        }
    };
    while let Some(c) = chars.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        let value = match chars.peek() {
            Some('%') => {
                chars.next();
                lit.push('%');
                continue;
            }
            Some('{') => {
                chars.next();
                let key: String = chars.by_ref().take_while(|&c| c != '}').collect();
                named(&key)?
            }
            Some('<') => {
                chars.next();
                let key: String = chars.by_ref().take_while(|&c| c != '>').collect();
                while chars
                    .peek()
                    .is_some_and(|c| matches!(c, '-' | '+' | ' ' | '0'..='9' | '#' | '.'))
                {
                    chars.next();
                }
                chars.next();
                named(&key)?
            }
            _ => {
                while chars
                    .peek()
                    .is_some_and(|c| matches!(c, '-' | '+' | ' ' | '0'..='9' | '#' | '.' | '*'))
                {
                    chars.next();
                }
                chars.next()?;
                let v = args.get(*next)?.clone();
                *next += 1;
                v
            }
        };
        if !lit.is_empty() {
            push_piece(pieces, Expr::Str(std::mem::take(&mut lit)));
        }
        push_piece(pieces, Expr::Wrap(Box::new(value)));
    }
    if !lit.is_empty() {
        push_piece(pieces, Expr::Str(lit));
    }
    Some(())
}

/// A double-quoted string's escape sequence, resolved into `out`.
fn unescape(e: &str, out: &mut String) {
    let body = e.strip_prefix('\\').unwrap_or(e);
    let mut chars = body.chars();
    let Some(first) = chars.next() else {
        out.push_str(e);
        return;
    };
    let rest: String = chars.collect();
    match first {
        'n' => out.push('\n'),
        't' => out.push('\t'),
        'r' => out.push('\r'),
        '0' if rest.is_empty() => out.push('\0'),
        's' => out.push(' '),
        'e' => out.push('\u{1b}'),
        'a' => out.push('\u{7}'),
        'b' => out.push('\u{8}'),
        'f' => out.push('\u{c}'),
        'v' => out.push('\u{b}'),
        'x' => match u32::from_str_radix(&rest, 16).ok().and_then(char::from_u32) {
            Some(c) => out.push(c),
            None => out.push_str(e),
        },
        'u' => {
            let hex = rest.trim_start_matches('{').trim_end_matches('}');
            let mut ok = true;
            let mut s = String::new();
            for h in hex.split_whitespace() {
                match u32::from_str_radix(h, 16).ok().and_then(char::from_u32) {
                    Some(c) => s.push(c),
                    None => ok = false,
                }
            }
            if ok {
                out.push_str(&s);
            } else {
                out.push_str(e);
            }
        }
        '0'..='7' => {
            let digits = format!("{first}{rest}");
            match u32::from_str_radix(&digits, 8)
                .ok()
                .and_then(char::from_u32)
            {
                Some(c) => out.push(c),
                None => out.push_str(e),
            }
        }
        '\n' => {}
        c => {
            out.push(c);
            out.push_str(&rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::guard::{MAX_DEPTH, READER_STACK, Unreadable};
    use std::fmt::Write;

    // ----- a compact rendering of the model, for the tests -----

    fn list<T>(xs: &[T], f: impl Fn(&T) -> String) -> String {
        xs.iter().map(f).collect::<Vec<_>>().join(", ")
    }

    fn e(x: &Expr) -> String {
        match x {
            Expr::Str(s) => format!("{s:?}"),
            Expr::Num(n) => n.clone(),
            Expr::Name(n) => n.clone(),
            Expr::Field(o, f) => format!("{}.{f}", e(o)),
            Expr::Index(o, i) => format!("{}[{}]", e(o), e(i)),
            Expr::Concat(xs) => format!("cat({})", list(xs, e)),
            Expr::Join(s, xs) => format!("join({}, {})", e(s), e(xs)),
            Expr::Call(c) => {
                let head = match (&c.receiver, &c.callee) {
                    (Some(r), _) => format!("{}.{}", e(r), c.name),
                    (None, Some(f)) => format!("({})", e(f)),
                    (None, None) => c.name.clone(),
                };
                let args = list(&c.args, |a| match &a.keyword {
                    Some(k) => format!("{k}={}", e(&a.value)),
                    None => e(&a.value),
                });
                format!("{}{head}({args})", if c.new { "new " } else { "" })
            }
            Expr::List(xs) => format!("[{}]", list(xs, e)),
            Expr::Map(kv) => format!("{{{}}}", list(kv, |(k, v)| format!("{}: {}", e(k), e(v)))),
            Expr::Spread(x) => format!("*{}", e(x)),
            Expr::Lambda(f) => format!("lambda {}", func(f)),
            Expr::Either(xs) => format!("either({})", list(xs, e)),
            Expr::Comprehension { item, bind, over } => {
                format!("comp({} for {} in {})", e(item), t(bind), e(over))
            }
            Expr::Wrap(x) => format!("wrap({})", e(x)),
            Expr::Other(xs) => format!("other({})", list(xs, e)),
        }
    }

    fn t(x: &Target) -> String {
        match x {
            Target::Name(n) => n.clone(),
            Target::Field(o, f) => format!("{}.{f}", e(o)),
            Target::Index(o, i) => format!("{}[{}]", e(o), e(i)),
            Target::Tuple(ts) => format!("({})", list(ts, t)),
            Target::Other => "?".into(),
        }
    }

    fn block(b: &[Stmt]) -> String {
        format!(
            "{{{}}}",
            list(b, s).replace(", ", "; ").replace("\u{1}", ", ")
        )
    }

    fn s(x: &Stmt) -> String {
        let text = match x {
            Stmt::Assign { target, value, .. } => format!("{} = {}", t(target), e(value)),
            Stmt::Push { target, value, .. } => format!("push {} <- {}", t(target), e(value)),
            Stmt::Expr(x) => e(x),
            Stmt::Return(Some(x), _) => format!("return {}", e(x)),
            Stmt::Return(None, _) => "return".into(),
            Stmt::Loop { bind, over, body } => format!(
                "for {} in {} {}",
                bind.as_ref().map_or("-".into(), t),
                over.as_ref().map_or("-".into(), e),
                block(body)
            ),
            Stmt::Branch(arms) => format!(
                "branch {}",
                arms.iter().map(|a| block(a)).collect::<Vec<_>>().join(" ")
            ),
            Stmt::With {
                value, bind, body, ..
            } => format!(
                "with {} as {} {}",
                e(value),
                bind.as_ref().map_or("-".into(), t),
                block(body)
            ),
        };
        text.replace(", ", "\u{1}")
    }

    fn func(f: &Func) -> String {
        let mut params: Vec<String> = f.receiver.iter().map(|r| format!("{r};")).collect();
        for p in &f.params {
            let mut x = format!(
                "{}{}{}",
                if p.rest { "*" } else { "" },
                if p.kwrest { "**" } else { "" },
                p.name
            );
            if let Some(d) = &p.default {
                write!(x, "={}", e(d)).unwrap();
            }
            params.push(x);
        }
        format!(
            "{}{}({}){} {}",
            f.class.as_ref().map_or(String::new(), |c| format!("{c}.")),
            f.name,
            params.join(" "),
            if f.is_static { " static" } else { "" },
            block(&f.body).replace("\u{1}", ", ")
        )
    }

    fn unit(src: &str) -> Unit {
        lower(src).unwrap_or_else(|e| panic!("{e}: {src}"))
    }

    /// Every function of the file, one a line.
    fn funcs(src: &str) -> String {
        let u = unit(src);
        u.funcs.iter().map(func).collect::<Vec<_>>().join("\n")
    }

    // ----- lowering -----

    #[test]
    fn names_constants_classes_and_blocks() {
        assert_eq!(
            funcs(
                "PREFIX = 'app'\nmodule Keys\n  SESSION = \"sess\"\n  def self.user(uid)\n    \"#{PREFIX}:#{SESSION}:#{uid}\"\n  end\nend\nclass Store < Base::Model\n  include Helpers\n  attr_reader :redis\n  def initialize(r)\n    @redis = r\n  end\n  def load(id)\n    k = key(id)\n    redis.pipelined do |p|\n      p.set(k, 1)\n      p.get Keys::SESSION\n    end\n  end\nend\n"
            ),
            "\
<module>() {Keys::SESSION = \"sess\"; SESSION = Keys::SESSION; PREFIX = \"app\"}
Keys.user(uid) static {return cat(PREFIX, \":\", Keys::SESSION, \":\", uid)}
Store.initialize(self; r) {self.redis = r; return self.redis}
Store.load(self; id) {k = key(id); return self.redis.pipelined(lambda Store.<lambda>(self; p) {p.set(k, 1); return p.get(Keys::SESSION)})}"
        );
        let u = unit("class Store < Base::Model\n  include Helpers\nend\n");
        assert_eq!(u.classes[0].bases, vec!["Model", "Helpers"]);
    }

    #[test]
    fn yield_and_block_parameters() {
        assert_eq!(
            funcs(
                "def with_pipe\n  r.pipelined { |p| yield p }\nend\ndef run(&blk)\n  blk.call(1)\n  other(&blk)\nend\nf = ->(x) { x + ':a' }\nf.(2)\n"
            ),
            "\
<module>() {f = lambda <lambda>(x) {return cat(x, \":a\")}; (f)(2)}
with_pipe(&block) {return r().pipelined(lambda <lambda>(p) {return &block(p)})}
run(blk) {(blk)(1); return other(blk)}"
        );
    }

    #[test]
    fn strings_iteration_and_values() {
        assert_eq!(
            funcs(
                "def f(a, ids, *keys, ttl: 5)\n  x = \"u:%s:%d\" % [a, 1]\n  y = format('v:%s', a) + :s.to_s\n  z = [a, 'b'].join(':')\n  ids.each { |i| keys << \"k:#{i}\" }\n  m = ids.map { |i| \"m:#{i}\" }\n  c ||= 'd'\n  v = if a then 'p' else 'q' end\n  r.del(*keys, **opts)\nend\n"
            ),
            "\
<module>() {}
f(a ids *keys ttl=5) {x = cat(\"u:\", wrap(a), \":\", wrap(1)); y = cat(\"v:\", wrap(a), wrap(\"s\")); z = join(\":\", [a, \"b\"]); for i in ids {push keys <- cat(\"k:\", i)}; m = comp(cat(\"m:\", i) for i in ids); c = either(c, \"d\"); branch {$v1 = \"p\"} {$v1 = \"q\"}; v = $v1; return r().del(*keys, **=opts())}"
        );
    }

    #[test]
    fn call_positions_are_where_the_name_starts() {
        let u = unit("x = 1\n# é\nné = pipe.exec()\nrun 1\n");
        let calls: Vec<(String, Position)> = u.funcs[0]
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::Assign {
                    value: Expr::Call(c),
                    ..
                }
                | Stmt::Expr(Expr::Call(c)) => Some((c.name.clone(), c.at)),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                (
                    "exec".into(),
                    Position {
                        line: 3,
                        column: 11
                    }
                ),
                ("run".into(), Position { line: 4, column: 1 }),
            ]
        );
    }

    /// Every Ruby fixture lowers.
    #[test]
    fn the_fixtures_lower() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code");
        for entry in std::fs::read_dir(root.join("tree/rb")).unwrap() {
            let f = entry.unwrap().path();
            let text = std::fs::read_to_string(&f).unwrap();
            let u = lower(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            assert!(!u.funcs.is_empty(), "{}", f.display());
        }
    }

    /// Each nesting shape, as deep as is still read, lowers on a reader thread's stack; one
    /// level deeper is refused, as the reader refuses it.
    #[test]
    fn the_deepest_trees_lower_on_the_readers_stack() {
        use crate::code::guard::tests::nested;
        let parse = |text: &str| {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_ruby::LANGUAGE.into()).unwrap();
            p.parse(text, None).unwrap()
        };
        for shape in [
            "blocks",
            "begins",
            "calls",
            "lists",
            "parens",
            "concat",
            "closures",
            "interpolation",
            "helper",
            "follow",
        ] {
            let (mut lo, mut hi) = (1, 2 * MAX_DEPTH);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if guard::deeper_than(&parse(&nested("rb", shape, mid)), MAX_DEPTH) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let (ok, deeper) = (nested("rb", shape, lo), nested("rb", shape, hi));
            let got = std::thread::Builder::new()
                .stack_size(READER_STACK)
                .spawn(move || lower(&ok).map(|u| u.funcs.len()).map_err(|e| e.to_string()))
                .unwrap()
                .join()
                .unwrap();
            assert!(got.is_ok(), "{shape} at {lo}: {got:?}");
            assert!(
                matches!(
                    lower(&deeper),
                    Err(LowerError::Unreadable(Unreadable::TooDeep))
                ),
                "{shape} at {hi}"
            );
        }
        let long = format!("x = <<~{}\nhi\n{0}\n", "W".repeat(2000));
        assert!(matches!(
            lower(&long),
            Err(LowerError::Unreadable(Unreadable::HeredocWord))
        ));
    }

    // ----- through the engine: the Ruby reader's cases -----

    fn sites(src: &str) -> Vec<crate::code::Site> {
        let u = unit(src);
        let sources = [crate::code::engine::Source {
            file: "t.rb",
            unit: &u,
        }];
        let profiles = crate::code::profile::Profile::builtin("ruby");
        let mut f = crate::code::engine::analyse(&sources, &profiles, &[]);
        f.remove(0).sites
    }

    #[test]
    fn redis_rb_forms() {
        use crate::code::{SiteKind, Verdict, texts};
        let s = sites(
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
        let ops: Vec<&str> = s.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(
            ops,
            [
                "MGET", "MGET", "SET INCR", "DEL", "DEL", "BRPOP", "EVAL", "EVALSHA"
            ],
            "{s:?}"
        );
        assert_eq!(texts(&s[0]), ["app:user:<uid>", "app:settings:<uid>"]);
        assert!(matches!(s[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(s[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(texts(&s[2]), ["shop:a:<uid>", "stats"]);
        assert_eq!(s[2].kind, SiteKind::Pipeline);
        assert_eq!(s[3].kind, SiteKind::Transaction);
        assert!(!matches!(s[3].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(s[4].verdict(), Verdict::Depends(_)));
        assert_eq!(texts(&s[5]), ["q:<uid>", "q2:<uid>"]);
        assert!(matches!(s[6].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(s[7].verdict(), Verdict::CrossSlot(_)));
        let u = unit(
            "module Keys\n  SESSION = 'sess'\nend\ndef f(uid)\n  redis.get(\"#{Keys::SESSION}:%s\" % uid)\nend\n",
        );
        let sources = [crate::code::engine::Source {
            file: "t.rb",
            unit: &u,
        }];
        let f = crate::code::engine::analyse(
            &sources,
            &crate::code::profile::Profile::builtin("ruby"),
            &[],
        );
        assert!(
            f[0].keys.iter().any(|k| k.template.text() == "sess:<uid>"),
            "{:?}",
            f[0].keys
        );
    }

    #[test]
    fn redis_client_forms() {
        use crate::code::Verdict;
        let s = sites(
            r##"
def go(conn, id)
  conn.call("MGET", "a:#{id}", "b:#{id}")
  conn.pipelined { |p| p.call("SET", "s:{#{id}}:x", 1); p.call("GET", "s:{#{id}}:y") }
  conn.call_v(["RENAME", "old:#{id}", "new:#{id}"])
end
"##,
        );
        let ops: Vec<&str> = s.iter().map(|s| s.op.as_str()).collect();
        assert_eq!(ops, ["MGET", "SET GET", "RENAME"], "{s:?}");
        assert!(matches!(s[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(s[1].verdict(), Verdict::OneSlot(_)));
        assert!(matches!(s[2].verdict(), Verdict::CrossSlot(_)));
    }

    /// The old form of a pipeline block: no parameter, commands on the client itself (a
    /// local, or a method or field of the object).
    #[test]
    fn blocks_without_a_parameter_queue_on_their_client() {
        use crate::code::{SiteKind, texts};
        let s = sites(
            r##"def a(redis, id)
  redis.pipelined do
    redis.set("a:#{id}", 1)
    redis.incr('n')
  end
end
class B
  def b(id)
    @redis.multi do
      @redis.del("b:#{id}")
      @redis.del('c')
    end
    @redis.mget('x', 'y')
  end
end
"##,
        );
        let got: Vec<(&str, SiteKind)> = s.iter().map(|s| (s.op.as_str(), s.kind)).collect();
        assert_eq!(
            got,
            [
                ("SET INCR", SiteKind::Pipeline),
                ("DEL DEL", SiteKind::Transaction),
                ("MGET", SiteKind::Command)
            ],
            "{s:?}"
        );
        assert_eq!(texts(&s[0]), ["a:<id>", "n"]);
    }

    /// A pipeline handed to a method that yields it.
    #[test]
    fn pipelines_through_helpers() {
        use crate::code::texts;
        let s = sites(
            "module App\n  def self.redis\n    pool.with { |conn| yield conn }\n  end\nend\nclass Job\n  def save(id)\n    App.redis do |conn|\n      conn.multi do |tx|\n        add(tx, id)\n      end\n    end\n  end\n  def add(t, id)\n    t.sadd('jobs', id)\n    t.hset(\"job:#{id}\", 'a', 1)\n  end\nend\n",
        );
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].op, "SADD HSET");
        assert_eq!(texts(&s[0]), ["jobs", "job:<id>"]);
    }
}
