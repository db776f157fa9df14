//! JavaScript and TypeScript (and their JSX dialects) lowered into [`crate::code::ir`], with
//! the grammars the JavaScript reader uses (tree-sitter's JavaScript grammar for `.js`, its
//! TypeScript and TSX grammars for `.ts` and `.tsx`). Types are looked through: annotations
//! give a parameter its [`ir::Param::ty`], `x as T`, `x!`, `<T>x` and `x satisfies T` are
//! [`Expr::Wrap`], and declarations that are only types (interfaces, type aliases, enums,
//! `declare`, overload and abstract signatures) lower to nothing.
//!
//! Choices this lowering makes where the model leaves room:
//!
//! - **Functions of the module**: `function f() {}`, `const f = () => …`,
//!   `const f = function () {}` (exported or not), `export default function` (named `default`
//!   when anonymous), `exports.f = …` and `module.exports.f = …` written at the top level are
//!   [`Func`]s of the unit named `f`, and nothing else is kept for them. Written inside a
//!   function they are `f = Lambda`.
//! - **Classes**: methods (the constructor as `constructor`, accessors, static ones with
//!   [`Func::is_static`]) are [`Func`]s with their class and the receiver `this`; a field whose
//!   value is a function literal (`handle = (x) => { … }`) is a method of that name too, other
//!   field initialisers and `static { … }` blocks go to the class's [`CLASS_BODY`] function as
//!   `this.field = value`. TypeScript's parameter properties (`constructor(private r: Redis)`)
//!   are also `this.r = r` at the start of the constructor.
//! - **Prototypes**: `C.prototype.m = function () {}` (and `C.prototype = { m() {} }`) is a
//!   method `m` of class `C`; a top-level `function C() {}` (or `var C = function () {}`) whose
//!   prototype the file assigns to is that class's `constructor` (receiver `this`), and
//!   `util.inherits(C, B)` gives it the base `B`.
//! - **Imports**: `import x from "m"` is `x → (m, default)`, `import * as ns from "m"`,
//!   `import ns = require("m")` and `const ns = require("m")` are `ns → (m, whole module)`,
//!   `import { a as b }` / `const { a: b } = require("m")` are `b → (m, a)`,
//!   `const x = require("m").y` is `x → (m, y)`. A `require` bound this way is not also an
//!   assignment.
//! - **Destructuring** (`const {a, b: c = d} = e`, `[x, , y] = e`) is one assignment per
//!   name: `a = e.a`, `c = Either[e.b, d]`, `x = e[0]`, `y = e[2]`; `e` is first put in a
//!   temporary `$tmpN` unless it is a name or a chain of fields (evaluated once). An object
//!   rest (`...rest`) is `e` itself, an array rest is [`Expr::Other`]. A destructured
//!   parameter is named `$i` (its position) and destructured the same way at the start of the
//!   body. In a `for … of` loop an array pattern binds a [`Target::Tuple`], an object pattern a
//!   temporary destructured at the start of the body.
//! - **Strings**: `+` is [`Expr::Concat`] unless one side is a number literal and neither side
//!   is text (`i + 1` is arithmetic: [`Expr::Other`]); two values of unknown type
//!   (`prefix + id`) are taken as text. Template literals, `"x".concat(a)`,
//!   `util.format("%s:%d", a, b)` (a literal format) are [`Expr::Concat`]; `xs.join(sep)` is
//!   [`Expr::Join`] (`path.join` is a call); `String(x)` and `x.toString()` are
//!   [`Expr::Wrap`]; `String.raw` templates keep their escapes as written.
//! - **Control flow**: a `try` body is inline, its `catch` a [`Stmt::Branch`] of the handler and
//!   an empty arm, its `finally` inline after; a `switch` is one arm per case (and an empty one
//!   when it has no `default`), its value's and cases' calls before it; `for (init; cond; step)` puts `init` before the
//!   loop; `for (k in o)` runs over the keys of an object literal (otherwise over
//!   [`Expr::Other`] of `o`: indices or keys, not elements); `xs.forEach((x) => { … })` is a
//!   [`Stmt::Loop`] whose `return`s are plain expressions; `xs.map((x) => f(x))` (one plain
//!   parameter, one returned value) is an [`Expr::Comprehension`].
//! - **Effects inside expressions**: an assignment inside an expression (`a = b = f()`), the
//!   calls of a ternary's condition and the leading parts of a comma expression become
//!   statements before the statement that holds them.
//! - `list.push(x, …)` / `list.unshift(…)` are one [`Stmt::Push`] per argument; the call is
//!   also kept as [`Stmt::Expr`] unless the list is a local the function assigned a list to.
//!
//! [`ir::Param::ty`]: crate::code::ir::Param::ty

use super::{Columns, LowerError};
use crate::code::Position;
use crate::code::guard;
use crate::code::ir::{
    Arg, CLASS_BODY, Call, Class, Expr, Func, MODULE_BODY, Param, Stmt, Target, Unit,
};
use std::collections::{HashMap, HashSet};
use tree_sitter::{Node, Parser};

/// Which grammar a JavaScript-family file is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `.js`, `.mjs`, `.cjs`, `.jsx`.
    JavaScript,
    /// `.ts`, `.mts`, `.cts`.
    TypeScript,
    /// `.tsx`.
    Tsx,
}

/// `text` (of `dialect`) lowered into the model. Refused as the JavaScript reader refuses it:
/// no tree, or a tree deeper than [`guard::MAX_DEPTH`].
pub fn lower(text: &str, dialect: Dialect) -> Result<Unit, LowerError> {
    let mut parser = Parser::new();
    let language: tree_sitter::Language = match dialect {
        Dialect::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Dialect::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Dialect::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
    };
    parser
        .set_language(&language)
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(LowerError::NoTree)?;
    guard::check_depth(&tree)?;
    let mut l = Lowerer {
        src: text.as_bytes(),
        columns: Columns::new(text),
        unit: Unit::default(),
        tmp: 0,
        effects: 0,
        pre: Vec::new(),
        lists: HashSet::new(),
        classes: HashSet::new(),
        class_bodies: HashMap::new(),
        ctors: HashSet::new(),
        inherits: HashMap::new(),
    };
    l.program(tree.root_node());
    Ok(l.unit)
}

/// Where a statement is lowered.
#[derive(Clone, Copy)]
struct Ctx {
    /// At the module's top level (not inside a function).
    top: bool,
    /// In the body of a `forEach` callback lowered as a loop: `return` ends one iteration.
    foreach: bool,
}

const TOP: Ctx = Ctx {
    top: true,
    foreach: false,
};
const INNER: Ctx = Ctx {
    top: false,
    foreach: false,
};

struct Lowerer<'s> {
    src: &'s [u8],
    columns: Columns<'s>,
    unit: Unit,
    /// Temporaries made so far (`$tmpN`).
    tmp: usize,
    /// Calls and closures lowered so far: an expression whose lowering raised it has effects.
    effects: usize,
    /// Statements the expression being lowered needs before its statement.
    pre: Vec<Stmt>,
    /// Locals of the function being lowered that were assigned a list.
    lists: HashSet<String>,
    /// Classes already in the unit.
    classes: HashSet<String>,
    /// Each class's [`CLASS_BODY`] function (index in the unit).
    class_bodies: HashMap<String, usize>,
    /// Names whose prototype the file assigns to (constructor functions).
    ctors: HashSet<String>,
    /// `util.inherits(C, B)`: C → its bases.
    inherits: HashMap<String, Vec<String>>,
}

/// A node's named children, comments left out.
fn named<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|c| !matches!(c.kind(), "comment" | "html_comment"))
        .collect()
}

fn is_function(kind: &str) -> bool {
    matches!(
        kind,
        "arrow_function" | "function_expression" | "function" | "generator_function"
    )
}

/// A name, or a chain of fields of one: evaluating it twice does nothing more than once.
fn simple(e: &Expr) -> bool {
    match e {
        Expr::Name(_) => true,
        Expr::Field(o, _) => simple(o),
        _ => false,
    }
}

/// Text whatever it holds.
fn texty(e: &Expr) -> bool {
    matches!(e, Expr::Str(_) | Expr::Concat(_) | Expr::Join(..))
}

/// The value a target holds, as an expression.
fn target_expr(t: &Target) -> Expr {
    match t {
        Target::Name(n) => Expr::Name(n.clone()),
        Target::Field(o, f) => Expr::Field(Box::new(o.clone()), f.clone()),
        Target::Index(o, i) => Expr::Index(Box::new(o.clone()), Box::new(i.clone())),
        Target::Tuple(_) | Target::Other => Expr::Other(Vec::new()),
    }
}

/// `pieces` with `e` added: a concatenation's pieces spliced in, neighbouring literals joined.
fn push_piece(pieces: &mut Vec<Expr>, e: Expr) {
    match e {
        Expr::Concat(xs) => xs.into_iter().for_each(|x| push_piece(pieces, x)),
        Expr::Str(s) if s.is_empty() => {}
        Expr::Str(s) => match pieces.last_mut() {
            Some(Expr::Str(last)) => last.push_str(&s),
            _ => pieces.push(Expr::Str(s)),
        },
        other => pieces.push(other),
    }
}

/// `pieces` as one value: a lone literal is that literal.
fn concat(mut pieces: Vec<Expr>) -> Expr {
    match pieces.as_slice() {
        [] => Expr::Str(String::new()),
        [Expr::Str(_)] => pieces.pop().unwrap_or(Expr::Str(String::new())),
        _ => Expr::Concat(pieces),
    }
}

/// `alternatives` with `e` added, nested alternatives spliced in.
fn push_either(alternatives: &mut Vec<Expr>, e: Expr) {
    match e {
        Expr::Either(xs) => alternatives.extend(xs),
        other => alternatives.push(other),
    }
}

/// The text of one escape sequence of a string or template literal.
fn unescape(e: &str, out: &mut String) {
    let body = &e[e.len().min(1)..];
    let hex = |h: &str| u32::from_str_radix(h, 16).ok().and_then(char::from_u32);
    let ch = match body.chars().next() {
        Some('n') => Some('\n'),
        Some('t') => Some('\t'),
        Some('r') => Some('\r'),
        Some('b') => Some('\u{8}'),
        Some('f') => Some('\u{c}'),
        Some('v') => Some('\u{b}'),
        Some('0') if body.len() == 1 => Some('\0'),
        Some('x') => hex(&body[1..]),
        Some('u') => hex(body[1..].trim_start_matches('{').trim_end_matches('}')),
        // A line continuation is no text.
        Some('\r' | '\n' | '\u{2028}' | '\u{2029}') => return,
        _ => None,
    };
    match ch {
        Some(c) => out.push(c),
        None => out.push_str(body),
    }
}

/// `util.format`'s text: `%s`, `%d`, `%i`, `%f`, `%j`, `%o`, `%O`, `%c` take the next value
/// (`%c` none of it), `%%` is `%`; values left over follow, each after a space.
fn format(fmt: &str, args: Vec<Expr>) -> Expr {
    let mut pieces = Vec::new();
    let mut args = args.into_iter();
    let mut lit = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('%') => {
                chars.next();
                lit.push('%');
            }
            Some(k @ ('s' | 'd' | 'i' | 'f' | 'j' | 'o' | 'O' | 'c')) => match args.next() {
                Some(a) => {
                    chars.next();
                    if k != 'c' {
                        push_piece(&mut pieces, Expr::Str(std::mem::take(&mut lit)));
                        push_piece(&mut pieces, a);
                    }
                }
                None => lit.push('%'),
            },
            _ => lit.push('%'),
        }
    }
    push_piece(&mut pieces, Expr::Str(lit));
    for a in args {
        push_piece(&mut pieces, Expr::Str(" ".into()));
        push_piece(&mut pieces, a);
    }
    concat(pieces)
}

impl<'s> Lowerer<'s> {
    fn t(&self, n: Node<'_>) -> &'s str {
        n.utf8_text(self.src).unwrap_or("")
    }

    fn at(&mut self, n: Node<'_>) -> Position {
        self.columns.at(n)
    }

    fn temp(&mut self) -> String {
        self.tmp += 1;
        format!("$tmp{}", self.tmp - 1)
    }

    /// The statements waiting for the next statement, put before it.
    fn flush(&mut self, out: &mut Vec<Stmt>) {
        out.append(&mut self.pre);
    }

    fn assign(&mut self, target: Target, value: Expr, at: Position, out: &mut Vec<Stmt>) {
        self.flush(out);
        if let Target::Name(n) = &target {
            if matches!(value, Expr::List(_) | Expr::Comprehension { .. }) {
                self.lists.insert(n.clone());
            } else {
                self.lists.remove(n);
            }
        }
        out.push(Stmt::Assign { target, value, at });
    }

    /// `e` lowered, and whether it has effects (a call or a closure in it).
    fn expr_effects(&mut self, n: Node<'_>) -> (Expr, bool) {
        let before = self.effects;
        let e = self.expr(n);
        (e, self.effects > before)
    }

    /// A condition: its calls as a statement before the statement that tests it.
    fn condition(&mut self, n: Node<'_>) {
        let n = match n.kind() {
            "parenthesized_expression" => match named(n).as_slice() {
                [inner] => *inner,
                _ => n,
            },
            _ => n,
        };
        let (e, effects) = self.expr_effects(n);
        if effects {
            self.pre.push(Stmt::Expr(e));
        }
    }

    // ----- the module -----

    fn program(&mut self, root: Node<'_>) {
        self.unit.funcs.push(Func {
            name: MODULE_BODY.into(),
            at: Position { line: 1, column: 1 },
            ..Func::default()
        });
        self.prescan(root);
        let mut body = Vec::new();
        for c in named(root) {
            self.stmt(c, TOP, &mut body);
        }
        self.flush(&mut body);
        self.unit.funcs[0].body = body;
    }

    /// The constructor functions of the file (`C.prototype.m = …`, `C.prototype = …` at the
    /// top level) and what they inherit (`util.inherits(C, B)`).
    fn prescan(&mut self, root: Node<'_>) {
        for s in named(root) {
            let Some(e) = (s.kind() == "expression_statement")
                .then(|| named(s).into_iter().next())
                .flatten()
            else {
                continue;
            };
            match e.kind() {
                "assignment_expression" => {
                    let Some(left) = e.child_by_field_name("left") else {
                        continue;
                    };
                    if let Some(c) = self.prototype_of(left) {
                        self.ctors.insert(c.to_string());
                        // `C.prototype = Object.create(B.prototype)`.
                        if let Some(right) = e.child_by_field_name("right")
                            && right.kind() == "call_expression"
                            && right
                                .child_by_field_name("function")
                                .is_some_and(|f| self.t(f) == "Object.create")
                            && let Some(args) = right.child_by_field_name("arguments")
                            && let [proto] = named(args).as_slice()
                            && let Some(b) = self.prototype_of(*proto)
                        {
                            self.inherits
                                .entry(c.to_string())
                                .or_default()
                                .push(b.to_string());
                        }
                    } else if let Some((c, _)) = self.prototype_method(left) {
                        self.ctors.insert(c.to_string());
                    }
                }
                "call_expression" => {
                    let (Some(f), Some(args)) = (
                        e.child_by_field_name("function"),
                        e.child_by_field_name("arguments"),
                    ) else {
                        continue;
                    };
                    let name = match f.kind() {
                        "member_expression" => f
                            .child_by_field_name("property")
                            .map(|p| self.t(p))
                            .unwrap_or(""),
                        _ => self.t(f),
                    };
                    let args = named(args);
                    if name == "inherits"
                        && let [c, b] = args.as_slice()
                        && c.kind() == "identifier"
                        && let Some(b) = self.last_segment(*b)
                    {
                        self.ctors.insert(self.t(*c).to_string());
                        self.inherits
                            .entry(self.t(*c).to_string())
                            .or_default()
                            .push(b);
                    }
                }
                _ => {}
            }
        }
    }

    /// `C` of `C.prototype`.
    fn prototype_of(&self, n: Node<'_>) -> Option<&'s str> {
        let object = n.child_by_field_name("object")?;
        let prop = n.child_by_field_name("property")?;
        (n.kind() == "member_expression"
            && self.t(prop) == "prototype"
            && object.kind() == "identifier")
            .then(|| self.t(object))
    }

    /// `(C, m)` of `C.prototype.m`.
    fn prototype_method(&self, n: Node<'_>) -> Option<(&'s str, &'s str)> {
        if n.kind() != "member_expression" {
            return None;
        }
        let c = self.prototype_of(n.child_by_field_name("object")?)?;
        Some((c, self.t(n.child_by_field_name("property")?)))
    }

    /// `f` of `exports.f` and `module.exports.f`.
    fn export_name(&self, n: Node<'_>) -> Option<&'s str> {
        if n.kind() != "member_expression" {
            return None;
        }
        let object = n.child_by_field_name("object")?;
        let exports = match object.kind() {
            "identifier" => self.t(object) == "exports",
            "member_expression" => self.t(object) == "module.exports",
            _ => false,
        };
        if !exports {
            return None;
        }
        Some(self.t(n.child_by_field_name("property")?))
    }

    /// The last name of a dotted name (`redis.Redis` → `Redis`).
    fn last_segment(&self, n: Node<'_>) -> Option<String> {
        match n.kind() {
            "identifier" | "type_identifier" | "property_identifier" | "predefined_type" => {
                Some(self.t(n).to_string())
            }
            "member_expression" => Some(self.t(n.child_by_field_name("property")?).to_string()),
            "nested_type_identifier" | "generic_type" => {
                self.last_segment(n.child_by_field_name("name")?)
            }
            "parenthesized_expression" | "non_null_expression" => {
                self.last_segment(*named(n).first()?)
            }
            _ => None,
        }
    }

    fn add_class(&mut self, name: &str, bases: Vec<String>) {
        if self.classes.insert(name.to_string()) {
            self.unit.classes.push(Class {
                name: name.to_string(),
                bases,
            });
        }
    }

    /// A function of the unit, in its place among them (reserved before its body is lowered,
    /// so that functions found inside it come after it).
    fn top_func(&mut self, n: Node<'_>, name: &str, class: Option<&str>, is_static: bool) {
        let i = self.unit.funcs.len();
        self.unit.funcs.push(Func::default());
        let receiver = class.map(|_| "this");
        let f = self.function(n, name, class, receiver, is_static, INNER);
        self.unit.funcs[i] = f;
    }

    /// A top-level function declaration or function value named `name`: a constructor when
    /// the file assigns to its prototype.
    fn module_func(&mut self, n: Node<'_>, name: &str) {
        if self.ctors.contains(name) {
            let bases = self.inherits.get(name).cloned().unwrap_or_default();
            self.add_class(name, bases);
            self.top_func(n, "constructor", Some(name), false);
        } else {
            self.top_func(n, name, None, false);
        }
    }

    // ----- functions -----

    /// A function, method or closure: its parameters and body (`ctx` for the body's
    /// statements: a `forEach` callback's returns are no function's).
    fn function(
        &mut self,
        n: Node<'_>,
        name: &str,
        class: Option<&str>,
        receiver: Option<&str>,
        is_static: bool,
        ctx: Ctx,
    ) -> Func {
        let at = self.at(n);
        let pre = std::mem::take(&mut self.pre);
        let lists = std::mem::take(&mut self.lists);
        let mut body = Vec::new();
        let params = self.params(n, name == "constructor" && class.is_some(), &mut body);
        self.body(n, ctx, &mut body);
        self.pre = pre;
        self.lists = lists;
        Func {
            name: name.to_string(),
            class: class.map(str::to_string),
            receiver: receiver.map(str::to_string),
            params,
            body,
            at,
            is_static,
            returns: None,
        }
    }

    /// A function's body statements (an expression body is its return value).
    fn body(&mut self, n: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        let Some(b) = n.child_by_field_name("body") else {
            return;
        };
        if b.kind() == "statement_block" {
            for s in named(b) {
                self.stmt(s, ctx, out);
            }
            self.flush(out);
        } else if ctx.foreach {
            self.expr_stmt(b, ctx, out);
        } else {
            let at = self.at(b);
            let e = self.expr(b);
            self.flush(out);
            out.push(Stmt::Return(Some(e), at));
        }
    }

    /// The parameters of function `n`; destructuring and (in a constructor) parameter
    /// properties go to `prelude`.
    fn params(&mut self, n: Node<'_>, ctor: bool, prelude: &mut Vec<Stmt>) -> Vec<Param> {
        if let Some(p) = n.child_by_field_name("parameter") {
            return vec![Param {
                name: self.t(p).to_string(),
                ..Param::default()
            }];
        }
        let Some(list) = n.child_by_field_name("parameters") else {
            return Vec::new();
        };
        let mut params = Vec::new();
        for p in named(list) {
            let at = self.at(p);
            let mut param = Param::default();
            let mut property = false;
            let (pattern, default) = match p.kind() {
                "required_parameter" | "optional_parameter" => {
                    let mut c = p.walk();
                    property = ctor
                        && p.children(&mut c).any(|c| {
                            matches!(
                                c.kind(),
                                "accessibility_modifier" | "readonly" | "override_modifier"
                            )
                        });
                    param.ty = p
                        .child_by_field_name("type")
                        .and_then(|t| named(t).into_iter().next())
                        .and_then(|t| self.last_segment(t));
                    (
                        p.child_by_field_name("pattern")
                            .or_else(|| p.child_by_field_name("name")),
                        p.child_by_field_name("value"),
                    )
                }
                "assignment_pattern" => (
                    p.child_by_field_name("left"),
                    p.child_by_field_name("right"),
                ),
                _ => (Some(p), None),
            };
            let Some(mut pattern) = pattern else { continue };
            if pattern.kind() == "this" {
                continue;
            }
            if pattern.kind() == "rest_pattern" {
                param.rest = true;
                match named(pattern).into_iter().next() {
                    Some(inner) => pattern = inner,
                    None => continue,
                }
            }
            param.default = default.map(|d| self.expr(d));
            self.flush(prelude);
            if pattern.kind() == "identifier" {
                param.name = self.t(pattern).to_string();
                if property {
                    prelude.push(Stmt::Assign {
                        target: Target::Field(Expr::name("this"), param.name.clone()),
                        value: Expr::name(param.name.clone()),
                        at,
                    });
                }
            } else {
                param.name = format!("${}", params.len());
                self.destructure(pattern, Expr::Name(param.name.clone()), at, prelude);
            }
            params.push(param);
        }
        params
    }

    // ----- classes -----

    /// A class declaration or expression (named `hint` when it has no name of its own, or when
    /// it is assigned to one): its class, methods and field initialisers. Returns its name.
    fn class(&mut self, n: Node<'_>, hint: Option<&str>) -> String {
        let own = n.child_by_field_name("name").map(|c| self.t(c));
        let name = hint.or(own).unwrap_or("<anonymous>").to_string();
        let mut bases = Vec::new();
        for c in named(n) {
            if c.kind() != "class_heritage" {
                continue;
            }
            for h in named(c) {
                let base = match h.kind() {
                    "extends_clause" => h.child_by_field_name("value"),
                    "implements_clause" => None,
                    _ => Some(h),
                };
                if let Some(b) = base.and_then(|b| self.last_segment(b)) {
                    bases.push(b);
                }
            }
        }
        self.add_class(&name, bases);
        let Some(body) = n.child_by_field_name("body") else {
            return name;
        };
        for m in named(body) {
            let is_static = {
                let mut c = m.walk();
                m.children(&mut c).any(|c| c.kind() == "static")
            };
            match m.kind() {
                "method_definition" => {
                    let method = m
                        .child_by_field_name("name")
                        .map(|k| self.key_text(k))
                        .unwrap_or_default();
                    self.top_func(m, &method, Some(&name), is_static);
                }
                "field_definition" | "public_field_definition" => {
                    let Some(key) = m
                        .child_by_field_name("property")
                        .or_else(|| m.child_by_field_name("name"))
                    else {
                        continue;
                    };
                    let field = self.key_text(key);
                    let Some(value) = m.child_by_field_name("value") else {
                        continue;
                    };
                    if is_function(value.kind()) {
                        self.top_func(value, &field, Some(&name), is_static);
                        continue;
                    }
                    let at = self.at(m);
                    let mut stmts = Vec::new();
                    let pre = std::mem::take(&mut self.pre);
                    let v = self.expr(value);
                    self.assign(Target::Field(Expr::name("this"), field), v, at, &mut stmts);
                    self.pre = pre;
                    self.class_body(&name, body, stmts);
                }
                "class_static_block" => {
                    let mut stmts = Vec::new();
                    let pre = std::mem::take(&mut self.pre);
                    if let Some(b) = m.child_by_field_name("body") {
                        self.stmt(b, INNER, &mut stmts);
                    }
                    self.flush(&mut stmts);
                    self.pre = pre;
                    self.class_body(&name, body, stmts);
                }
                _ => {}
            }
        }
        name
    }

    /// Statements added to class `name`'s [`CLASS_BODY`] function (made at `body` the first
    /// time).
    fn class_body(&mut self, name: &str, body: Node<'_>, stmts: Vec<Stmt>) {
        let i = match self.class_bodies.get(name) {
            Some(&i) => i,
            None => {
                let at = self.at(body);
                self.unit.funcs.push(Func {
                    name: CLASS_BODY.into(),
                    class: Some(name.to_string()),
                    receiver: Some("this".into()),
                    at,
                    ..Func::default()
                });
                self.class_bodies
                    .insert(name.to_string(), self.unit.funcs.len() - 1);
                self.unit.funcs.len() - 1
            }
        };
        self.unit.funcs[i].body.extend(stmts);
    }

    /// A property or method name as text (`'a-b'` → `a-b`, `#x` as written, a computed
    /// `[k]` as written).
    fn key_text(&self, k: Node<'_>) -> String {
        match k.kind() {
            "string" => self.string(k),
            _ => self.t(k).to_string(),
        }
    }

    // ----- statements -----

    fn stmt(&mut self, n: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        match n.kind() {
            "expression_statement" => {
                for e in named(n) {
                    self.expr_stmt(e, ctx, out);
                }
            }
            "lexical_declaration" | "variable_declaration" | "using_declaration" => {
                let at = self.at(n);
                for d in named(n) {
                    if d.kind() == "variable_declarator" {
                        self.declarator(d, at, ctx, out);
                    }
                }
            }
            "function_declaration" | "generator_function_declaration" => {
                let name = n
                    .child_by_field_name("name")
                    .map_or("default", |c| self.t(c));
                self.fn_decl(n, name, ctx, out);
            }
            "class_declaration" | "abstract_class_declaration" => {
                self.class(n, None);
            }
            "export_statement" => self.export(n, ctx, out),
            "import_statement" => self.import(n),
            "if_statement" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.condition(c);
                }
                self.flush(out);
                let mut yes = Vec::new();
                if let Some(c) = n.child_by_field_name("consequence") {
                    self.stmt(c, ctx, &mut yes);
                }
                let mut no = Vec::new();
                if let Some(alt) = n.child_by_field_name("alternative") {
                    for c in named(alt) {
                        self.stmt(c, ctx, &mut no);
                    }
                }
                out.push(Stmt::Branch(vec![yes, no]));
            }
            "switch_statement" => self.switch(n, ctx, out),
            "try_statement" => {
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, ctx, out);
                }
                if let Some(h) = n.child_by_field_name("handler") {
                    let mut arm = Vec::new();
                    if let Some(b) = h.child_by_field_name("body") {
                        self.stmt(b, ctx, &mut arm);
                    }
                    out.push(Stmt::Branch(vec![arm, Vec::new()]));
                }
                if let Some(f) = n.child_by_field_name("finalizer")
                    && let Some(b) = f.child_by_field_name("body")
                {
                    self.stmt(b, ctx, out);
                }
            }
            "for_statement" => self.for_classic(n, ctx, out),
            "for_in_statement" => self.for_in(n, ctx, out),
            "while_statement" | "do_statement" => {
                let mut body = Vec::new();
                let cond = n.child_by_field_name("condition");
                let first = n.kind() == "while_statement";
                if first && let Some(c) = cond {
                    self.condition(c);
                    self.flush(&mut body);
                }
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, ctx, &mut body);
                }
                if !first && let Some(c) = cond {
                    self.condition(c);
                    self.flush(&mut body);
                }
                out.push(Stmt::Loop {
                    bind: None,
                    over: None,
                    body,
                });
            }
            "return_statement" => {
                let at = self.at(n);
                let value = named(n).into_iter().next().map(|v| self.expr(v));
                self.flush(out);
                match value {
                    Some(v) if ctx.foreach => out.push(Stmt::Expr(v)),
                    None if ctx.foreach => {}
                    v => out.push(Stmt::Return(v, at)),
                }
            }
            "throw_statement" => {
                let value: Vec<Expr> = named(n).into_iter().map(|v| self.expr(v)).collect();
                self.flush(out);
                out.push(Stmt::Expr(Expr::Other(value)));
            }
            "labeled_statement" | "with_statement" => {
                if let Some(o) = n.child_by_field_name("object") {
                    self.condition(o);
                    self.flush(out);
                }
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, ctx, out);
                }
            }
            "statement_block" => {
                for s in named(n) {
                    self.stmt(s, ctx, out);
                }
            }
            // A TypeScript namespace's statements are the module's.
            "internal_module" | "module" => {
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, ctx, out);
                }
            }
            "break_statement"
            | "continue_statement"
            | "debugger_statement"
            | "empty_statement"
            | "comment"
            | "html_comment"
            | "hash_bang_line"
            | "interface_declaration"
            | "type_alias_declaration"
            | "enum_declaration"
            | "ambient_declaration"
            | "function_signature"
            | "import_alias" => {}
            "ERROR" => {
                for c in named(n) {
                    self.stmt(c, ctx, out);
                }
            }
            _ => self.expr_stmt(n, ctx, out),
        }
    }

    /// An expression evaluated for its effects.
    fn expr_stmt(&mut self, e: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        match e.kind() {
            "assignment_expression" => self.assignment(e, ctx, out),
            "augmented_assignment_expression" => self.augmented(e, out),
            "sequence_expression" => {
                for c in named(e) {
                    self.expr_stmt(c, ctx, out);
                }
            }
            "call_expression" if self.call_stmt(e, out) => {}
            "internal_module" | "module" => self.stmt(e, ctx, out),
            _ => {
                let x = self.expr(e);
                self.flush(out);
                out.push(Stmt::Expr(x));
            }
        }
    }

    /// `list.push(…)`, `list.unshift(…)` and `xs.forEach(cb)` as statements; false for any
    /// other call.
    fn call_stmt(&mut self, e: Node<'_>, out: &mut Vec<Stmt>) -> bool {
        let (Some(f), Some(args)) = (
            e.child_by_field_name("function"),
            e.child_by_field_name("arguments"),
        ) else {
            return false;
        };
        if f.kind() != "member_expression" || args.kind() != "arguments" {
            return false;
        }
        let (Some(object), Some(prop)) = (
            f.child_by_field_name("object"),
            f.child_by_field_name("property"),
        ) else {
            return false;
        };
        let args = named(args);
        match self.t(prop) {
            "push" | "unshift"
                if matches!(
                    object.kind(),
                    "identifier" | "member_expression" | "subscript_expression"
                ) =>
            {
                let call = self.expr(e);
                let Expr::Call(c) = &call else {
                    self.flush(out);
                    out.push(Stmt::Expr(call));
                    return true;
                };
                self.flush(out);
                let at = self.at(e);
                let target = match &c.receiver {
                    Some(Expr::Name(n)) => Target::Name(n.clone()),
                    Some(Expr::Field(o, f)) => Target::Field((**o).clone(), f.clone()),
                    Some(Expr::Index(o, i)) => Target::Index((**o).clone(), (**i).clone()),
                    _ => Target::Other,
                };
                let known = matches!(&target, Target::Name(n) if self.lists.contains(n));
                for a in &c.args {
                    out.push(Stmt::Push {
                        target: target.clone(),
                        value: a.value.clone(),
                        at,
                    });
                }
                if !known {
                    out.push(Stmt::Expr(call));
                }
                true
            }
            "forEach" if args.first().is_some_and(|a| is_function(a.kind())) => {
                let cb = args[0];
                let over = self.expr(object);
                self.flush(out);
                let mut body = Vec::new();
                let bind = self.loop_bind(cb, &mut body);
                let pre = std::mem::take(&mut self.pre);
                self.body(
                    cb,
                    Ctx {
                        top: false,
                        foreach: true,
                    },
                    &mut body,
                );
                self.pre = pre;
                self.effects += 1;
                out.push(Stmt::Loop {
                    bind,
                    over: Some(over),
                    body,
                });
                true
            }
            _ => false,
        }
    }

    /// The loop variable of a `forEach` callback: its first parameter.
    fn loop_bind(&mut self, cb: Node<'_>, body: &mut Vec<Stmt>) -> Option<Target> {
        if let Some(p) = cb.child_by_field_name("parameter") {
            return Some(Target::Name(self.t(p).to_string()));
        }
        let first = named(cb.child_by_field_name("parameters")?)
            .into_iter()
            .next()?;
        let pattern = match first.kind() {
            "required_parameter" | "optional_parameter" => first.child_by_field_name("pattern")?,
            "assignment_pattern" => first.child_by_field_name("left")?,
            _ => first,
        };
        Some(self.bind_target(pattern, body))
    }

    /// What a loop binds to `pattern`: a name, a tuple of names for an array pattern, or a
    /// temporary destructured at the start of the body for an object pattern.
    fn bind_target(&mut self, pattern: Node<'_>, body: &mut Vec<Stmt>) -> Target {
        match pattern.kind() {
            "identifier" => Target::Name(self.t(pattern).to_string()),
            "array_pattern" => Target::Tuple(
                named(pattern)
                    .into_iter()
                    .map(|p| match p.kind() {
                        "identifier" => Target::Name(self.t(p).to_string()),
                        _ => Target::Other,
                    })
                    .collect(),
            ),
            "object_pattern" => {
                let t = self.temp();
                let at = self.at(pattern);
                self.destructure(pattern, Expr::Name(t.clone()), at, body);
                Target::Name(t)
            }
            _ => self.target(pattern),
        }
    }

    fn switch(&mut self, n: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        if let Some(v) = n.child_by_field_name("value") {
            self.condition(v);
        }
        self.flush(out);
        let mut arms = Vec::new();
        let mut default = false;
        if let Some(body) = n.child_by_field_name("body") {
            for case in named(body) {
                default |= case.kind() == "switch_default";
                if let Some(v) = case.child_by_field_name("value") {
                    // A case's value is computed before the arm is chosen.
                    self.condition(v);
                    self.flush(out);
                }
                let mut arm = Vec::new();
                let mut c = case.walk();
                if c.goto_first_child() {
                    loop {
                        if c.field_name() == Some("body") {
                            self.stmt(c.node(), ctx, &mut arm);
                        }
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                }
                arms.push(arm);
            }
        }
        if !default {
            arms.push(Vec::new());
        }
        self.flush(out);
        out.push(Stmt::Branch(arms));
    }

    fn for_classic(&mut self, n: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        if let Some(init) = n.child_by_field_name("initializer") {
            self.stmt(init, ctx, out);
        }
        let mut body = Vec::new();
        if let Some(c) = n.child_by_field_name("condition")
            && c.is_named()
        {
            self.condition(c);
            self.flush(&mut body);
        }
        if let Some(b) = n.child_by_field_name("body") {
            self.stmt(b, ctx, &mut body);
        }
        if let Some(step) = n.child_by_field_name("increment") {
            let before = self.effects;
            let mut stmts = Vec::new();
            self.expr_stmt(step, ctx, &mut stmts);
            if self.effects > before
                || stmts
                    .iter()
                    .any(|s| !matches!(s, Stmt::Expr(Expr::Other(_))))
            {
                body.extend(stmts);
            }
        }
        out.push(Stmt::Loop {
            bind: None,
            over: None,
            body,
        });
    }

    fn for_in(&mut self, n: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        let of = n
            .child_by_field_name("operator")
            .is_some_and(|o| o.kind() == "of");
        let over = n.child_by_field_name("right").map(|r| {
            if of {
                self.expr(r)
            } else if r.kind() == "object" {
                Expr::List(
                    named(r)
                        .into_iter()
                        .filter_map(|p| match p.kind() {
                            "pair" => p
                                .child_by_field_name("key")
                                .map(|k| Expr::Str(self.key_text(k))),
                            "shorthand_property_identifier" => Some(Expr::str(self.t(p))),
                            _ => None,
                        })
                        .collect(),
                )
            } else {
                Expr::Other(vec![self.expr(r)])
            }
        });
        self.flush(out);
        let mut body = Vec::new();
        let bind = n
            .child_by_field_name("left")
            .map(|l| self.bind_target(l, &mut body));
        if let Some(b) = n.child_by_field_name("body") {
            self.stmt(b, ctx, &mut body);
        }
        out.push(Stmt::Loop { bind, over, body });
    }

    fn fn_decl(&mut self, n: Node<'_>, name: &str, ctx: Ctx, out: &mut Vec<Stmt>) {
        if ctx.top {
            self.module_func(n, name);
        } else {
            let at = self.at(n);
            let f = self.lambda(n);
            self.assign(Target::Name(name.to_string()), f, at, out);
        }
    }

    /// A closure.
    fn lambda(&mut self, n: Node<'_>) -> Expr {
        self.named_lambda(n, "<lambda>")
    }

    /// A closure that an object literal gives a name (`{ run(keys) {…} }`,
    /// `{ run: function (keys) {…} }`): the name lets a wrapper of a client's method of the same
    /// name be told from a call of itself.
    fn named_lambda(&mut self, n: Node<'_>, name: &str) -> Expr {
        self.effects += 1;
        Expr::Lambda(Box::new(self.function(n, name, None, None, false, INNER)))
    }

    fn export(&mut self, n: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        if let Some(d) = n.child_by_field_name("declaration") {
            self.stmt(d, ctx, out);
        } else if let Some(v) = n.child_by_field_name("value") {
            let own = v.child_by_field_name("name").map(|c| self.t(c));
            if is_function(v.kind()) {
                self.module_func(v, own.unwrap_or("default"));
            } else if v.kind() == "class" {
                self.class(v, Some(own.unwrap_or("default")));
            } else {
                let at = self.at(n);
                let e = self.expr(v);
                self.assign(Target::Name("default".into()), e, at, out);
            }
        }
    }

    fn import(&mut self, n: Node<'_>) {
        let Some(source) = n.child_by_field_name("source").map(|s| self.string(s)) else {
            // `import x = require("m")`.
            for c in named(n) {
                if c.kind() == "import_require_clause"
                    && let (Some(id), Some(s)) = (
                        named(c).into_iter().find(|i| i.kind() == "identifier"),
                        c.child_by_field_name("source"),
                    )
                {
                    let m = self.string(s);
                    self.unit.imports.push((self.t(id).to_string(), m, None));
                }
            }
            return;
        };
        for clause in named(n) {
            if clause.kind() != "import_clause" {
                continue;
            }
            for c in named(clause) {
                match c.kind() {
                    "identifier" => self.unit.imports.push((
                        self.t(c).to_string(),
                        source.clone(),
                        Some("default".into()),
                    )),
                    "namespace_import" => {
                        if let Some(id) = named(c).into_iter().next() {
                            self.unit
                                .imports
                                .push((self.t(id).to_string(), source.clone(), None));
                        }
                    }
                    "named_imports" => {
                        for s in named(c) {
                            let Some(name) = s.child_by_field_name("name") else {
                                continue;
                            };
                            let name = self.key_text(name);
                            let local = s
                                .child_by_field_name("alias")
                                .map_or(name.clone(), |a| self.t(a).to_string());
                            self.unit.imports.push((local, source.clone(), Some(name)));
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The module of `require("m")` (through `await` and parentheses), and the name taken
    /// of it (`require("m").y`).
    fn required(&self, n: Node<'_>) -> Option<(String, Option<String>)> {
        match n.kind() {
            "call_expression" => {
                let f = n.child_by_field_name("function")?;
                let args = named(n.child_by_field_name("arguments")?);
                match (self.t(f), args.as_slice()) {
                    ("require", [s]) if s.kind() == "string" => Some((self.string(*s), None)),
                    _ => None,
                }
            }
            "member_expression" => {
                let (m, None) = self.required(n.child_by_field_name("object")?)? else {
                    return None;
                };
                Some((
                    m,
                    Some(self.t(n.child_by_field_name("property")?).to_string()),
                ))
            }
            "parenthesized_expression" | "await_expression" => self.required(*named(n).first()?),
            _ => None,
        }
    }

    fn declarator(&mut self, d: Node<'_>, at: Position, ctx: Ctx, out: &mut Vec<Stmt>) {
        let (Some(name), Some(value)) = (
            d.child_by_field_name("name"),
            d.child_by_field_name("value"),
        ) else {
            return;
        };
        if let Some((module, member)) = self.required(value) {
            match name.kind() {
                "identifier" => {
                    self.unit
                        .imports
                        .push((self.t(name).to_string(), module, member));
                    return;
                }
                "object_pattern" if member.is_none() => {
                    let mut plain = Vec::new();
                    for p in named(name) {
                        match p.kind() {
                            "shorthand_property_identifier_pattern" => {
                                plain.push((self.t(p).to_string(), self.t(p).to_string()))
                            }
                            "pair_pattern" => {
                                match (p.child_by_field_name("key"), p.child_by_field_name("value"))
                                {
                                    (Some(k), Some(v)) if v.kind() == "identifier" => {
                                        plain.push((self.t(v).to_string(), self.key_text(k)))
                                    }
                                    _ => break,
                                }
                            }
                            _ => break,
                        }
                    }
                    if plain.len() == named(name).len() {
                        for (local, member) in plain {
                            self.unit
                                .imports
                                .push((local, module.clone(), Some(member)));
                        }
                        return;
                    }
                }
                _ => {}
            }
        }
        if name.kind() == "identifier" {
            let n = self.t(name);
            if ctx.top && is_function(value.kind()) {
                self.module_func(value, n);
                return;
            }
            if value.kind() == "class" {
                self.class(value, Some(n));
                return;
            }
            let v = self.expr(value);
            self.assign(Target::Name(n.to_string()), v, at, out);
        } else {
            let v = self.expr(value);
            self.destructure(name, v, at, out);
        }
    }

    /// `pattern = value` as one assignment per name.
    fn destructure(&mut self, pattern: Node<'_>, value: Expr, at: Position, out: &mut Vec<Stmt>) {
        match pattern.kind() {
            "object_pattern" | "array_pattern" => {}
            "assignment_pattern" | "object_assignment_pattern" => {
                let (Some(left), Some(right)) = (
                    pattern.child_by_field_name("left"),
                    pattern.child_by_field_name("right"),
                ) else {
                    return;
                };
                let d = self.expr(right);
                let mut alts = Vec::new();
                push_either(&mut alts, value);
                push_either(&mut alts, d);
                return self.destructure(left, Expr::Either(alts), at, out);
            }
            "rest_pattern" => {
                if let Some(inner) = named(pattern).into_iter().next() {
                    self.destructure(inner, value, at, out);
                }
                return;
            }
            _ => {
                let t = self.target(pattern);
                return self.assign(t, value, at, out);
            }
        }
        let src = if simple(&value) {
            value
        } else {
            let t = self.temp();
            self.assign(Target::Name(t.clone()), value, at, out);
            Expr::Name(t)
        };
        if pattern.kind() == "object_pattern" {
            for p in named(pattern) {
                match p.kind() {
                    "shorthand_property_identifier_pattern" => {
                        let f = self.t(p);
                        self.assign(
                            Target::Name(f.to_string()),
                            Expr::field(src.clone(), f),
                            at,
                            out,
                        );
                    }
                    "pair_pattern" => {
                        let (Some(k), Some(v)) =
                            (p.child_by_field_name("key"), p.child_by_field_name("value"))
                        else {
                            continue;
                        };
                        let from = self.member(src.clone(), k);
                        self.destructure(v, from, at, out);
                    }
                    "object_assignment_pattern" => {
                        let (Some(l), Some(r)) = (
                            p.child_by_field_name("left"),
                            p.child_by_field_name("right"),
                        ) else {
                            continue;
                        };
                        let from = Expr::field(src.clone(), self.t(l));
                        let d = self.expr(r);
                        let mut alts = vec![from];
                        push_either(&mut alts, d);
                        let target = match l.kind() {
                            "shorthand_property_identifier_pattern" => {
                                Target::Name(self.t(l).to_string())
                            }
                            _ => self.target(l),
                        };
                        self.assign(target, Expr::Either(alts), at, out);
                    }
                    "rest_pattern" => self.destructure(p, src.clone(), at, out),
                    _ => {}
                }
            }
        } else {
            let mut index = 0usize;
            let mut c = pattern.walk();
            for e in pattern.children(&mut c) {
                match e.kind() {
                    "," => index += 1,
                    "[" | "]" | "comment" => {}
                    "rest_pattern" => {
                        self.destructure(e, Expr::Other(Vec::new()), at, out);
                    }
                    _ if e.is_named() => {
                        let from = Expr::Index(
                            Box::new(src.clone()),
                            Box::new(Expr::Num(index.to_string())),
                        );
                        self.destructure(e, from, at, out);
                    }
                    _ => {}
                }
            }
        }
    }

    /// `obj.key` (a computed `[k]` key is `obj[k]`).
    fn member(&mut self, obj: Expr, key: Node<'_>) -> Expr {
        match key.kind() {
            "computed_property_name" => {
                let k = named(key)
                    .into_iter()
                    .next()
                    .map_or(Expr::Other(Vec::new()), |k| self.expr(k));
                Expr::Index(Box::new(obj), Box::new(k))
            }
            _ => Expr::field(obj, self.key_text(key)),
        }
    }

    /// Where an assignment puts its value.
    fn target(&mut self, n: Node<'_>) -> Target {
        match n.kind() {
            "identifier" | "shorthand_property_identifier_pattern" => {
                Target::Name(self.t(n).to_string())
            }
            "member_expression" => {
                let (Some(o), Some(p)) = (
                    n.child_by_field_name("object"),
                    n.child_by_field_name("property"),
                ) else {
                    return Target::Other;
                };
                Target::Field(self.expr(o), self.t(p).to_string())
            }
            "subscript_expression" => {
                let (Some(o), Some(i)) = (
                    n.child_by_field_name("object"),
                    n.child_by_field_name("index"),
                ) else {
                    return Target::Other;
                };
                let o = self.expr(o);
                Target::Index(o, self.expr(i))
            }
            "parenthesized_expression"
            | "non_null_expression"
            | "as_expression"
            | "satisfies_expression" => match named(n).into_iter().next() {
                Some(inner) => self.target(inner),
                None => Target::Other,
            },
            _ => Target::Other,
        }
    }

    fn assignment(&mut self, e: Node<'_>, ctx: Ctx, out: &mut Vec<Stmt>) {
        let (Some(left), Some(right)) = (
            e.child_by_field_name("left"),
            e.child_by_field_name("right"),
        ) else {
            return;
        };
        let at = self.at(e);
        if is_function(right.kind()) {
            if let Some((class, m)) = self.prototype_method(left) {
                self.add_class(class, self.inherits.get(class).cloned().unwrap_or_default());
                return self.top_func(right, m, Some(class), false);
            }
            if ctx.top
                && let Some(name) = self.export_name(left)
            {
                return self.top_func(right, name, None, false);
            }
        }
        if right.kind() == "object"
            && let Some(class) = self.prototype_of(left)
        {
            self.add_class(class, self.inherits.get(class).cloned().unwrap_or_default());
            let mut stmts = Vec::new();
            for p in named(right) {
                match p.kind() {
                    "method_definition" => {
                        if let Some(k) = p.child_by_field_name("name") {
                            let m = self.key_text(k);
                            self.top_func(p, &m, Some(class), false);
                        }
                    }
                    "pair" => {
                        let (Some(k), Some(v)) =
                            (p.child_by_field_name("key"), p.child_by_field_name("value"))
                        else {
                            continue;
                        };
                        if is_function(v.kind()) {
                            let m = self.key_text(k);
                            self.top_func(v, &m, Some(class), false);
                        } else {
                            let proto = Expr::field(Expr::name(class), "prototype");
                            let target = match self.member(proto, k) {
                                Expr::Field(o, f) => Target::Field(*o, f),
                                Expr::Index(o, i) => Target::Index(*o, *i),
                                _ => Target::Other,
                            };
                            let v = self.expr(v);
                            self.assign(target, v, at, &mut stmts);
                        }
                    }
                    _ => {}
                }
            }
            out.extend(stmts);
            return;
        }
        if matches!(left.kind(), "object_pattern" | "array_pattern") {
            let v = self.expr(right);
            return self.destructure(left, v, at, out);
        }
        let target = self.target(left);
        let value = if right.kind() == "class" {
            Expr::Name(self.class(right, None))
        } else {
            self.expr(right)
        };
        self.assign(target, value, at, out);
    }

    /// `a += b` (text added, or a list's elements), `a ||= b` (either), `a -= b` (a value of
    /// its own).
    fn augmented(&mut self, e: Node<'_>, out: &mut Vec<Stmt>) {
        let (Some(left), Some(right)) = (
            e.child_by_field_name("left"),
            e.child_by_field_name("right"),
        ) else {
            return;
        };
        let at = self.at(e);
        let op = e.child_by_field_name("operator").map_or("", |o| o.kind());
        let target = self.target(left);
        let (value, effects) = self.expr_effects(right);
        let old = target_expr(&target);
        match op {
            "+=" if matches!(value, Expr::List(_)) => {
                self.flush(out);
                out.push(Stmt::Push {
                    target,
                    value: Expr::Spread(Box::new(value)),
                    at,
                });
            }
            "+=" if matches!(value, Expr::Num(_)) && !texty(&old) => {
                // `i += 2`: arithmetic, as `i + 2` is.
                let kept = if effects { vec![value] } else { Vec::new() };
                self.assign(target, Expr::Other(kept), at, out);
            }
            "+=" => {
                let mut pieces = Vec::new();
                push_piece(&mut pieces, old);
                push_piece(&mut pieces, value);
                self.assign(target, concat(pieces), at, out);
            }
            "||=" | "??=" | "&&=" => {
                let mut alts = vec![old];
                push_either(&mut alts, value);
                self.assign(target, Expr::Either(alts), at, out);
            }
            _ => {
                let kept = if effects { vec![value] } else { Vec::new() };
                self.assign(target, Expr::Other(kept), at, out);
            }
        }
    }

    // ----- expressions -----

    fn expr(&mut self, n: Node<'_>) -> Expr {
        match n.kind() {
            "string" => Expr::Str(self.string(n)),
            "template_string" => self.template(n, false),
            "number" | "true" | "false" | "null" | "undefined" => Expr::Num(self.t(n).into()),
            "identifier"
            | "shorthand_property_identifier"
            | "property_identifier"
            | "private_property_identifier"
            | "type_identifier" => Expr::Name(self.t(n).into()),
            "this" | "super" | "import" => Expr::Name(n.kind().into()),
            "member_expression" => {
                let (Some(o), Some(p)) = (
                    n.child_by_field_name("object"),
                    n.child_by_field_name("property"),
                ) else {
                    return self.other(n);
                };
                let o = self.expr(o);
                Expr::field(o, self.t(p))
            }
            "subscript_expression" => {
                let (Some(o), Some(i)) = (
                    n.child_by_field_name("object"),
                    n.child_by_field_name("index"),
                ) else {
                    return self.other(n);
                };
                let o = self.expr(o);
                Expr::Index(Box::new(o), Box::new(self.expr(i)))
            }
            "call_expression" => self.call(n),
            "new_expression" => self.new_call(n),
            k if is_function(k) => self.lambda(n),
            "class" => Expr::Name(self.class(n, None)),
            "parenthesized_expression"
            | "await_expression"
            | "yield_expression"
            | "as_expression"
            | "satisfies_expression"
            | "non_null_expression"
            | "type_assertion" => match named(n)
                .into_iter()
                .find(|c| !matches!(c.kind(), "type_arguments"))
            {
                Some(inner) => Expr::Wrap(Box::new(self.expr(inner))),
                None => Expr::Other(Vec::new()),
            },
            "instantiation_expression" => match n.child_by_field_name("function") {
                Some(f) => self.expr(f),
                None => self.other(n),
            },
            "sequence_expression" => {
                let parts = named(n);
                let Some((last, first)) = parts.split_last() else {
                    return Expr::Other(Vec::new());
                };
                let mut stmts = Vec::new();
                for p in first {
                    // Kept for their effects only (`(0, f)(x)` calls `f`).
                    let before = (self.effects, stmts.len());
                    self.expr_stmt(*p, INNER, &mut stmts);
                    if self.effects == before.0
                        && stmts[before.1..].iter().all(|s| matches!(s, Stmt::Expr(_)))
                    {
                        stmts.truncate(before.1);
                    }
                }
                self.pre.extend(stmts);
                self.expr(*last)
            }
            "ternary_expression" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.condition(c);
                }
                let mut alts = Vec::new();
                for f in ["consequence", "alternative"] {
                    if let Some(x) = n.child_by_field_name(f) {
                        let e = self.expr(x);
                        push_either(&mut alts, e);
                    }
                }
                Expr::Either(alts)
            }
            "binary_expression" => self.binary(n),
            "assignment_expression" | "augmented_assignment_expression" => {
                let mut stmts = Vec::new();
                self.expr_stmt(n, INNER, &mut stmts);
                let value = match stmts.last() {
                    Some(Stmt::Assign { target, .. } | Stmt::Push { target, .. }) => {
                        target_expr(target)
                    }
                    _ => Expr::Other(Vec::new()),
                };
                self.pre.extend(stmts);
                value
            }
            "array" => Expr::List(named(n).into_iter().map(|e| self.element(e)).collect()),
            "object" => self.object(n),
            "spread_element" => self.element(n),
            "jsx_element" | "jsx_self_closing_element" | "jsx_fragment" => {
                let mut found = Vec::new();
                self.jsx(n, &mut found);
                Expr::Other(found)
            }
            "regex" | "meta_property" => Expr::Other(Vec::new()),
            k if k.ends_with("_statement")
                || k.ends_with("_declaration")
                || k == "statement_block" =>
            {
                let mut stmts = Vec::new();
                self.stmt(n, INNER, &mut stmts);
                self.pre.extend(stmts);
                Expr::Other(Vec::new())
            }
            _ => self.other(n),
        }
    }

    /// Anything else: its sub-expressions that have effects.
    fn other(&mut self, n: Node<'_>) -> Expr {
        let mut kept = Vec::new();
        for c in named(n) {
            let (e, effects) = self.expr_effects(c);
            if effects {
                kept.push(e);
            }
        }
        Expr::Other(kept)
    }

    /// An element of an array or an argument: a spread is [`Expr::Spread`].
    fn element(&mut self, n: Node<'_>) -> Expr {
        if n.kind() == "spread_element" {
            let inner = named(n)
                .into_iter()
                .next()
                .map_or(Expr::Other(Vec::new()), |i| self.expr(i));
            Expr::Spread(Box::new(inner))
        } else {
            self.expr(n)
        }
    }

    fn object(&mut self, n: Node<'_>) -> Expr {
        let mut entries = Vec::new();
        for p in named(n) {
            match p.kind() {
                "pair" => {
                    let (Some(k), Some(v)) =
                        (p.child_by_field_name("key"), p.child_by_field_name("value"))
                    else {
                        continue;
                    };
                    let key = match k.kind() {
                        "computed_property_name" => named(k)
                            .into_iter()
                            .next()
                            .map_or(Expr::Other(Vec::new()), |k| self.expr(k)),
                        _ => Expr::Str(self.key_text(k)),
                    };
                    let value = match &key {
                        Expr::Str(name) if is_function(v.kind()) => {
                            let name = name.clone();
                            self.named_lambda(v, &name)
                        }
                        _ => self.expr(v),
                    };
                    entries.push((key, value));
                }
                "shorthand_property_identifier" => {
                    let name = self.t(p);
                    entries.push((Expr::str(name), Expr::name(name)));
                }
                "method_definition" => {
                    let key = p
                        .child_by_field_name("name")
                        .map_or(String::new(), |k| self.key_text(k));
                    let f = self.named_lambda(p, &key);
                    entries.push((Expr::Str(key), f));
                }
                "spread_element" => {
                    entries.push((self.element(p), Expr::Other(Vec::new())));
                }
                _ => {
                    let (e, effects) = self.expr_effects(p);
                    if effects {
                        entries.push((Expr::Other(Vec::new()), e));
                    }
                }
            }
        }
        Expr::Map(entries)
    }

    fn jsx(&mut self, n: Node<'_>, found: &mut Vec<Expr>) {
        for c in named(n) {
            match c.kind() {
                "jsx_expression" => {
                    for e in named(c) {
                        let e = self.element(e);
                        found.push(e);
                    }
                }
                "jsx_element"
                | "jsx_self_closing_element"
                | "jsx_opening_element"
                | "jsx_attribute"
                | "jsx_fragment" => self.jsx(c, found),
                _ => {}
            }
        }
    }

    fn binary(&mut self, n: Node<'_>) -> Expr {
        let op = n.child_by_field_name("operator").map_or("", |o| o.kind());
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return self.other(n);
        };
        let (le, l_effects) = self.expr_effects(l);
        let (re, r_effects) = self.expr_effects(r);
        match op {
            "+" if texty(&le)
                || texty(&re)
                || !(matches!(le, Expr::Num(_)) || matches!(re, Expr::Num(_))) =>
            {
                // `a + b + c` nests to the left: the left side's pieces are taken over, not
                // copied, so a long chain is built in linear time.
                let mut pieces = match le {
                    Expr::Concat(xs) => xs,
                    other => vec![other],
                };
                push_piece(&mut pieces, re);
                concat(pieces)
            }
            "||" | "??" | "&&" => {
                let mut alts = match le {
                    Expr::Either(xs) => xs,
                    other => vec![other],
                };
                push_either(&mut alts, re);
                Expr::Either(alts)
            }
            _ => {
                let mut kept = Vec::new();
                if l_effects {
                    kept.push(le);
                }
                if r_effects {
                    kept.push(re);
                }
                Expr::Other(kept)
            }
        }
    }

    /// A string literal's text.
    fn string(&self, n: Node<'_>) -> String {
        let mut s = String::new();
        let (start, end) = (n.start_byte() + 1, n.end_byte().saturating_sub(1));
        let mut at = start;
        let mut c = n.walk();
        for p in n.children(&mut c) {
            if p.start_byte() < start || p.end_byte() > end {
                continue;
            }
            if p.start_byte() > at {
                s.push_str(self.slice(at, p.start_byte()));
            }
            match p.kind() {
                "escape_sequence" => unescape(self.t(p), &mut s),
                "html_character_reference" => s.push_str(&html_entity(self.t(p))),
                _ => s.push_str(self.t(p)),
            }
            at = p.end_byte();
        }
        if end > at {
            s.push_str(self.slice(at, end));
        }
        s
    }

    fn slice(&self, from: usize, to: usize) -> &'s str {
        std::str::from_utf8(self.src.get(from..to).unwrap_or(&[])).unwrap_or("")
    }

    /// A template literal: its pieces ([`Expr::Str`] when it has no `${}`); `raw` keeps
    /// escapes as written (`String.raw`).
    fn template(&mut self, n: Node<'_>, raw: bool) -> Expr {
        let mut pieces = Vec::new();
        let (start, end) = (n.start_byte() + 1, n.end_byte().saturating_sub(1));
        let mut at = start;
        let mut lit = String::new();
        let mut c = n.walk();
        let children: Vec<Node<'_>> = n.children(&mut c).collect();
        for p in children {
            if p.start_byte() < start || p.end_byte() > end {
                continue;
            }
            if p.start_byte() > at {
                lit.push_str(self.slice(at, p.start_byte()));
            }
            match p.kind() {
                "escape_sequence" if !raw => unescape(self.t(p), &mut lit),
                "template_substitution" => {
                    push_piece(&mut pieces, Expr::Str(std::mem::take(&mut lit)));
                    let parts = named(p);
                    let e = match parts.as_slice() {
                        [one] => self.expr(*one),
                        _ => self.other(p),
                    };
                    if matches!(e, Expr::Str(_) | Expr::Concat(_)) {
                        // Text inside text is one piece of it (`${"a"}`, nested templates).
                        push_piece(&mut pieces, e);
                    } else {
                        pieces.push(e);
                    }
                }
                _ => lit.push_str(self.t(p)),
            }
            at = p.end_byte();
        }
        if end > at {
            lit.push_str(self.slice(at, end));
        }
        push_piece(&mut pieces, Expr::Str(lit));
        pieces.retain(|p| !matches!(p, Expr::Str(s) if s.is_empty()));
        match pieces.as_slice() {
            [] => Expr::Str(String::new()),
            [Expr::Str(_)] => pieces.pop().unwrap_or(Expr::Str(String::new())),
            _ => Expr::Concat(pieces),
        }
    }

    fn args(&mut self, n: Option<Node<'_>>) -> Vec<Arg> {
        let Some(n) = n else { return Vec::new() };
        named(n)
            .into_iter()
            .map(|a| Arg::pos(self.element(a)))
            .collect()
    }

    /// What is called: (receiver, name, callee, where the name starts).
    fn callee(&mut self, f: Node<'_>) -> (Option<Expr>, String, Option<Expr>, Position) {
        match f.kind() {
            "identifier" | "super" | "import" => {
                let at = self.at(f);
                (None, self.t(f).to_string(), None, at)
            }
            "member_expression" => {
                let (Some(o), Some(p)) = (
                    f.child_by_field_name("object"),
                    f.child_by_field_name("property"),
                ) else {
                    let at = self.at(f);
                    return (None, String::new(), Some(self.other(f)), at);
                };
                let o = self.expr(o);
                let at = self.at(p);
                (Some(o), self.t(p).to_string(), None, at)
            }
            _ => {
                let at = self.at(f);
                let mut c = self.expr(f);
                while let Expr::Wrap(inner) = c {
                    c = *inner;
                }
                match c {
                    Expr::Name(name) => (None, name, None, at),
                    Expr::Field(o, name) => (Some(*o), name, None, at),
                    other => (None, String::new(), Some(other), at),
                }
            }
        }
    }

    fn call(&mut self, n: Node<'_>) -> Expr {
        let Some(f) = n.child_by_field_name("function") else {
            return self.other(n);
        };
        let args_node = n.child_by_field_name("arguments");
        if let Some(t) = args_node.filter(|a| a.kind() == "template_string")
            && self.t(f) == "String.raw"
        {
            return self.template(t, true);
        }
        let (receiver, name, callee, at) = self.callee(f);
        let mut args = match args_node {
            Some(t) if t.kind() == "template_string" => vec![Arg::pos(self.template(t, false))],
            a => self.args(a),
        };
        let spread = args.iter().any(|a| matches!(a.value, Expr::Spread(_)));
        // Text made by a call.
        match (&receiver, name.as_str(), args.len()) {
            (Some(r), "join", 0 | 1) if !spread && *r != Expr::name("path") => {
                let sep = args.pop().map_or(Expr::str(","), |a| a.value);
                return Expr::Join(
                    Box::new(sep),
                    Box::new(receiver.unwrap_or(Expr::Other(Vec::new()))),
                );
            }
            (Some(_), "toString", 0) => {
                return Expr::Wrap(Box::new(receiver.unwrap_or(Expr::Other(Vec::new()))));
            }
            // `obj.m.apply(obj, list)` and `obj.m.call(obj, a, b)`: a call of `m` on `obj`.
            (Some(Expr::Field(obj, m)), "apply" | "call", 1..)
                if matches!(**obj, Expr::Name(_) | Expr::Field(..)) =>
            {
                let (obj, m) = ((**obj).clone(), m.clone());
                let mut rest = args.split_off(1);
                let args = if name == "apply" {
                    rest.truncate(1);
                    rest.into_iter()
                        .map(|a| Arg::pos(Expr::Spread(Box::new(a.value))))
                        .collect()
                } else {
                    rest
                };
                return Expr::Call(Box::new(Call {
                    receiver: Some(obj),
                    name: m,
                    callee: None,
                    args,
                    new: false,
                    at,
                }));
            }
            // `Array.from(xs)` (a set's or an iterator's elements): a list of them.
            (Some(r), "from", 1) if *r == Expr::name("Array") && !spread => {
                return Expr::List(vec![Expr::Spread(Box::new(args.remove(0).value))]);
            }
            (None, "String", 1) if callee.is_none() && !spread => {
                return Expr::Wrap(Box::new(args.remove(0).value));
            }
            (Some(r), "concat", _) if texty(r) && !spread => {
                let mut pieces = Vec::new();
                push_piece(&mut pieces, receiver.unwrap_or(Expr::Other(Vec::new())));
                for a in args {
                    push_piece(&mut pieces, a.value);
                }
                return concat(pieces);
            }
            (None | Some(Expr::Name(_)), "format", 1..)
                if !spread
                    && matches!(&receiver, None | Some(Expr::Name(_)))
                    && receiver.as_ref().is_none_or(|r| *r == Expr::name("util"))
                    && matches!(args[0].value, Expr::Str(_)) =>
            {
                let mut values = args.into_iter().map(|a| a.value);
                let Some(Expr::Str(fmt)) = values.next() else {
                    return Expr::Other(Vec::new());
                };
                return format(&fmt, values.collect());
            }
            (Some(_), "map", 1) => {
                if let Expr::Lambda(cb) = &args[0].value
                    && let [p] = cb.params.as_slice()
                    && !p.rest
                    && p.default.is_none()
                    && !p.name.starts_with('$')
                    && let [Stmt::Return(Some(item), _)] = cb.body.as_slice()
                {
                    return Expr::Comprehension {
                        item: Box::new(item.clone()),
                        bind: Box::new(Target::Name(p.name.clone())),
                        over: Box::new(receiver.unwrap_or(Expr::Other(Vec::new()))),
                    };
                }
            }
            _ => {}
        }
        self.effects += 1;
        Expr::Call(Box::new(Call {
            receiver,
            name,
            callee,
            args,
            new: false,
            at,
        }))
    }

    fn new_call(&mut self, n: Node<'_>) -> Expr {
        let Some(c) = n.child_by_field_name("constructor") else {
            return self.other(n);
        };
        let (receiver, name, callee, at) = self.callee(c);
        let args = self.args(n.child_by_field_name("arguments"));
        self.effects += 1;
        Expr::Call(Box::new(Call {
            receiver,
            name,
            callee,
            args,
            new: true,
            at,
        }))
    }
}

/// The text of an HTML character reference in JSX text (`&amp;`, `&#39;`, `&#x27;`); one not
/// known stays as written.
fn html_entity(r: &str) -> String {
    let body = r.trim_start_matches('&').trim_end_matches(';');
    let c = match body {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{a0}'),
        _ => body
            .strip_prefix("#x")
            .or_else(|| body.strip_prefix("#X"))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .or_else(|| body.strip_prefix('#').and_then(|d| d.parse().ok()))
            .and_then(char::from_u32),
    };
    c.map_or(r.to_string(), String::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::guard::{MAX_DEPTH, READER_STACK, Unreadable};
    use crate::code::ir::Target;

    // ----- a compact rendering of the model, for comparisons -----

    fn r_params(ps: &[Param]) -> String {
        ps.iter()
            .map(|p| {
                let mut s = String::new();
                if p.rest {
                    s.push_str("...");
                }
                s.push_str(&p.name);
                if let Some(t) = &p.ty {
                    s += &format!(": {t}");
                }
                if let Some(d) = &p.default {
                    s += &format!(" = {}", r_expr(d));
                }
                s
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn r_list(xs: &[Expr]) -> String {
        xs.iter().map(r_expr).collect::<Vec<_>>().join(", ")
    }

    fn r_expr(e: &Expr) -> String {
        match e {
            Expr::Str(s) => format!("{s:?}"),
            Expr::Num(n) | Expr::Name(n) => n.clone(),
            Expr::Field(o, f) => format!("{}.{f}", r_expr(o)),
            Expr::Index(o, i) => format!("{}[{}]", r_expr(o), r_expr(i)),
            Expr::Concat(xs) => format!("concat({})", r_list(xs)),
            Expr::Join(s, l) => format!("join({}, {})", r_expr(s), r_expr(l)),
            Expr::Call(c) => {
                let mut s = String::new();
                if c.new {
                    s.push_str("new ");
                }
                if let Some(r) = &c.receiver {
                    s += &format!("{}.", r_expr(r));
                }
                if let Some(f) = &c.callee {
                    s += &format!("({})", r_expr(f));
                }
                s.push_str(&c.name);
                let args: Vec<String> = c
                    .args
                    .iter()
                    .map(|a| match &a.keyword {
                        Some(k) => format!("{k}={}", r_expr(&a.value)),
                        None => r_expr(&a.value),
                    })
                    .collect();
                s + &format!("({})", args.join(", "))
            }
            Expr::List(xs) => format!("[{}]", r_list(xs)),
            Expr::Map(kv) => format!(
                "{{{}}}",
                kv.iter()
                    .map(|(k, v)| format!("{}: {}", r_expr(k), r_expr(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Expr::Spread(x) => format!("...{}", r_expr(x)),
            Expr::Lambda(f) => format!("fn({}) {{ {} }}", r_params(&f.params), r_stmts(&f.body)),
            Expr::Either(xs) => format!("either({})", r_list(xs)),
            Expr::Comprehension { item, bind, over } => format!(
                "[{} for {} in {}]",
                r_expr(item),
                r_target(bind),
                r_expr(over)
            ),
            Expr::Wrap(x) => format!("wrap({})", r_expr(x)),
            Expr::Other(xs) => format!("other({})", r_list(xs)),
        }
    }

    fn r_target(t: &Target) -> String {
        match t {
            Target::Name(n) => n.clone(),
            Target::Field(o, f) => format!("{}.{f}", r_expr(o)),
            Target::Index(o, i) => format!("{}[{}]", r_expr(o), r_expr(i)),
            Target::Tuple(ts) => format!(
                "({})",
                ts.iter().map(r_target).collect::<Vec<_>>().join(", ")
            ),
            Target::Other => "?".into(),
        }
    }

    fn r_stmt(s: &Stmt) -> String {
        match s {
            Stmt::Assign { target, value, .. } => {
                format!("{} = {}", r_target(target), r_expr(value))
            }
            Stmt::Push { target, value, .. } => {
                format!("push {} <- {}", r_target(target), r_expr(value))
            }
            Stmt::Expr(e) => r_expr(e),
            Stmt::Return(Some(e), _) => format!("return {}", r_expr(e)),
            Stmt::Return(None, _) => "return".into(),
            Stmt::Loop { bind, over, body } => {
                let mut s = "loop ".to_string();
                if let Some(b) = bind {
                    s += &format!("{} ", r_target(b));
                }
                if let Some(o) = over {
                    s += &format!("in {} ", r_expr(o));
                }
                s + &format!("{{ {} }}", r_stmts(body))
            }
            Stmt::Branch(arms) => format!(
                "branch {{ {} }}",
                arms.iter()
                    .map(|a| r_stmts(a))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
            Stmt::With {
                value, bind, body, ..
            } => format!(
                "with {}{} {{ {} }}",
                r_expr(value),
                bind.as_ref()
                    .map(|b| format!(" as {}", r_target(b)))
                    .unwrap_or_default(),
                r_stmts(body)
            ),
        }
    }

    fn r_stmts(ss: &[Stmt]) -> String {
        ss.iter().map(r_stmt).collect::<Vec<_>>().join("; ")
    }

    /// The whole unit: imports, classes, then each function with its statements, one a line.
    fn render(u: &Unit) -> String {
        let mut out = String::new();
        for (local, module, name) in &u.imports {
            out += &format!(
                "import {local} = {module}:{}\n",
                name.as_deref().unwrap_or("*")
            );
        }
        for c in &u.classes {
            out += &format!("class {}({})\n", c.name, c.bases.join(", "));
        }
        for f in &u.funcs {
            out += &format!("func {}({})", f.name, r_params(&f.params));
            if let Some(c) = &f.class {
                out += &format!(" of {c}");
            }
            if let Some(r) = &f.receiver {
                out += &format!(" as {r}");
            }
            if f.is_static {
                out += " static";
            }
            out.push('\n');
            for s in &f.body {
                out += &format!("  {}\n", r_stmt(s));
            }
        }
        out
    }

    fn js(src: &str) -> String {
        render(&lower(src, Dialect::JavaScript).unwrap())
    }

    fn ts(src: &str) -> String {
        render(&lower(src, Dialect::TypeScript).unwrap())
    }

    /// The module's statements only.
    fn top(src: &str) -> String {
        let u = lower(src, Dialect::TypeScript).unwrap();
        u.funcs[0].body.iter().map(|s| r_stmt(s) + "\n").collect()
    }

    fn check(got: String, want: &str) {
        let indent = want
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        let want: String = want
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("{}\n", &l[indent..]))
            .collect();
        assert_eq!(got, want, "\n--- got ---\n{got}\n--- want ---\n{want}");
    }

    // ----- functions of the module -----

    #[test]
    fn top_level_functions_are_functions_of_the_unit() {
        check(
            js(r#"
                const k = "a";
                function f(a) { return a; }
                export function g() {}
                export default function () {}
                const h = (a) => { run(a); };
                const i = function () {};
                const j = async x => x + ":";
                module.exports.m = function (b) {};
                exports.n = () => 1;
                exports.o = k;
            "#),
            r#"
            func <module>()
              k = "a"
              exports.o = k
            func f(a)
              return a
            func g()
            func default()
            func h(a)
              run(a)
            func i()
            func j(x)
              return concat(x, ":")
            func m(b)
            func n()
              return 1
            "#,
        );
    }

    #[test]
    fn functions_inside_functions_are_closures_assigned_to_their_names() {
        check(
            js(r#"
                function outer() {
                    function inner(a) { return a; }
                    const arrow = (b) => b;
                    exports.x = function () {};
                    return inner;
                }
            "#),
            r#"
            func <module>()
            func outer()
              inner = fn(a) { return a }
              arrow = fn(b) { return b }
              exports.x = fn() {  }
              return inner
            "#,
        );
    }

    // ----- classes -----

    #[test]
    fn classes_methods_and_fields() {
        check(
            ts(r#"
                class C extends base.B implements I {
                    x = "a";
                    static y = 1;
                    private readonly z: string = `k:${this.x}`;
                    w: number;
                    handler = (m) => { this.on(m); };
                    constructor(private redis: Redis.Cluster, opts?: Opts) { super(opts); }
                    get size() { return 1; }
                    set size(v) {}
                    async load(id: string): Promise<void> { await this.redis.get(id); }
                    static make() { return new C(); }
                    abstract gone(): void;
                    over(a: string): void;
                    over(a: any) {}
                    static { init(); }
                }
            "#),
            r#"
            class C(B)
            func <module>()
            func <class>() of C as this
              this.x = "a"
              this.y = 1
              this.z = concat("k:", this.x)
              init()
            func handler(m) of C as this
              this.on(m)
            func constructor(redis: Cluster, opts: Opts) of C as this
              this.redis = redis
              super(opts)
            func size() of C as this
              return 1
            func size(v) of C as this
            func load(id: string) of C as this
              wrap(this.redis.get(id))
            func make() of C as this static
              return new C()
            func over(a: any) of C as this
            "#,
        );
    }

    #[test]
    fn class_expressions_take_the_name_they_are_given() {
        check(
            js(r#"
                const Q = class extends EventEmitter { run() {} };
                module.exports = class Worker {};
            "#),
            r#"
            class Q(EventEmitter)
            class Worker()
            func <module>()
              module.exports = Worker
            func run() of Q as this
            "#,
        );
    }

    #[test]
    fn prototype_methods_and_constructor_functions() {
        check(
            js(r#"
                function Queue(name) { this.name = name; }
                util.inherits(Queue, events.EventEmitter);
                Queue.prototype.add = function (job) { return this.client.lpush(this.name, job); };
                Queue.prototype = { close() {}, pause: function () {}, n: 1 };
                Other.prototype.go = function () {};
                function plain() {}
                var Job = function (data) {};
                Job.prototype = Object.create(Base.prototype);
            "#),
            r#"
            class Queue(EventEmitter)
            class Other()
            class Job(Base)
            func <module>()
              util.inherits(Queue, events.EventEmitter)
              Queue.prototype.n = 1
              Job.prototype = Object.create(Base.prototype)
            func constructor(name) of Queue as this
              this.name = name
            func add(job) of Queue as this
              return this.client.lpush(this.name, job)
            func close() of Queue as this
            func pause() of Queue as this
            func go() of Other as this
            func plain()
            func constructor(data) of Job as this
            "#,
        );
    }

    // ----- imports -----

    #[test]
    fn imports_and_requires() {
        check(
            ts(r#"
                import Redis from "ioredis";
                import def, { a as b, c } from "./m";
                import * as ns from "node-redis";
                import r = require("req");
                import "side-effect";
                const x = require("x");
                const { y, z: w } = require("./y");
                const v = require("v").Cluster;
                const { deep: { q } } = require("d");
                function later() { const lazy = require("lazy"); }
            "#),
            r#"
            import Redis = ioredis:default
            import def = ./m:default
            import b = ./m:a
            import c = ./m:c
            import ns = node-redis:*
            import r = req:*
            import x = x:*
            import y = ./y:y
            import w = ./y:z
            import v = v:Cluster
            import lazy = lazy:*
            func <module>()
              $tmp0 = require("d")
              q = $tmp0.deep.q
            func later()
            "#,
        );
    }

    // ----- parameters -----

    #[test]
    fn parameters_defaults_rests_patterns_and_types() {
        check(
            ts(r#"
                function f(a, b = "x", ...rest) {}
                function g({ keys, args: [first] }, [p, q] = [], pipe: Pipeline, m: ChainableCommander, c: Redis.Cluster, l: Array<string>, u: string | number) {}
                function h(this: Foo, ...ks: string[]) {}
            "#),
            r#"
            func <module>()
            func f(a, b = "x", ...rest)
            func g($0, $1 = [], pipe: Pipeline, m: ChainableCommander, c: Cluster, l: Array, u)
              keys = $0.keys
              first = $0.args[0]
              p = $1[0]
              q = $1[1]
            func h(...ks)
            "#,
        );
    }

    // ----- declarations and assignments -----

    #[test]
    fn declarations_and_destructuring() {
        check(
            top(r#"
                let a = 1, b;
                var c = f();
                const { d, e: g, h = "x", ...rest } = make();
                const { i } = this.opts;
                const [j, , k, ...more] = pair;
                [a, c] = [c, a];
            "#),
            r#"
            a = 1
            c = f()
            $tmp0 = make()
            d = $tmp0.d
            g = $tmp0.e
            h = either($tmp0.h, "x")
            rest = $tmp0
            i = this.opts.i
            j = pair[0]
            k = pair[2]
            more = other()
            $tmp1 = [c, a]
            a = $tmp1[0]
            c = $tmp1[1]
            "#,
        );
    }

    #[test]
    fn assignments_to_names_fields_and_elements() {
        check(
            top(r#"
                a = e;
                this.x = e;
                obj.k = e;
                a[i] = e;
                s += ":" + id;
                j += 2;
                n -= 1;
                m -= f();
                o ||= def();
                p ??= q;
                l += [x, y];
                x = y = z();
            "#),
            r#"
            a = e
            this.x = e
            obj.k = e
            a[i] = e
            s = concat(s, ":", id)
            j = other()
            n = other()
            m = other(f())
            o = either(o, def())
            p = either(p, q)
            push l <- ...[x, y]
            y = z()
            x = y
            "#,
        );
    }

    #[test]
    fn pushes_add_each_argument_to_the_list() {
        check(
            top(r#"
                const keys = [];
                keys.push(a, ...bs);
                keys.unshift(c);
                this.keys.push(k(d));
                other.push(e);
                q().push(f);
                const all = keys.concat(more);
            "#),
            r#"
            keys = []
            push keys <- a
            push keys <- ...bs
            push keys <- c
            push this.keys <- k(d)
            this.keys.push(k(d))
            push other <- e
            other.push(e)
            q().push(f)
            all = keys.concat(more)
            "#,
        );
    }

    // ----- string building -----

    #[test]
    fn strings_are_built_from_pieces() {
        check(
            top(r#"
                a = `k:${id}:\n\x41\u{42}\u0043\${x}`;
                b = `plain`;
                c = `${x}`;
                d = String.raw`a\n${x}`;
                e = "p:" + id + ":" + 2;
                f = i + 1;
                g = 1 + 2;
                h = prefix + id;
                i = ["a", b].join(":");
                j = keys.join();
                k = util.format("%s:%d:%%:%j", a, 2, o, extra);
                l = format("%s-%s", a);
                m = "x".concat(a, b);
                n = String(x);
                o = x.toString();
                p = x.toString(16);
                q = path.join(a, b);
                r = path.join(a);
                s = 'it\'s' + "\"q\"" + 'line\
            cont';
                t = `a${"b"}c${`d${e}`}`;
            "#),
            r#"
            a = concat("k:", id, ":\nABC${x}")
            b = "plain"
            c = concat(x)
            d = concat("a\\n", x)
            e = concat("p:", id, ":", 2)
            f = other()
            g = other()
            h = concat(prefix, id)
            i = join(":", ["a", b])
            j = join(",", keys)
            k = concat(a, ":", 2, ":%:", o, " ", extra)
            l = concat(a, "-%s")
            m = concat("x", a, b)
            n = wrap(x)
            o = wrap(x)
            p = x.toString(16)
            q = path.join(a, b)
            r = path.join(a)
            s = "it's\"q\"line            cont"
            t = concat("abcd", e)
            "#,
        );
    }

    // ----- calls -----

    #[test]
    fn calls_name_their_receiver_and_method() {
        check(
            top(r#"
                a.b.c(x);
                a?.b?.(x);
                new C(x);
                new ns.C();
                new D;
                f()(x);
                handlers[k](y);
                f(...xs, { keys: [k], n });
                (0, g)(z);
                super.m();
                tag`t${v}`;
                import("m");
                this.redis!.get(k);
                fn<string>(a);
            "#),
            r#"
            a.b.c(x)
            a.b(x)
            new C(x)
            new ns.C()
            new D()
            (f())(x)
            (handlers[k])(y)
            f(...xs, {"keys": [k], "n": n})
            g(z)
            super.m()
            tag(concat("t", v))
            import("m")
            wrap(this.redis).get(k)
            fn(a)
            "#,
        );
    }

    #[test]
    fn calls_are_where_their_method_name_starts() {
        let u = lower(
            "const p = r.pipeline();\n  p.set(\"é\", 1).get(`ü${x}`);\nconst é = 1; é.execute();\n",
            Dialect::JavaScript,
        )
        .unwrap();
        let mut calls = Vec::new();
        fn walk(e: &Expr, out: &mut Vec<(String, Position)>) {
            if let Expr::Call(c) = e {
                if let Some(r) = &c.receiver {
                    walk(r, out);
                }
                out.push((c.name.clone(), c.at));
            }
        }
        for s in &u.funcs[0].body {
            match s {
                Stmt::Assign { value, .. } | Stmt::Expr(value) => walk(value, &mut calls),
                _ => {}
            }
        }
        let pos = |line, column| Position { line, column };
        assert_eq!(
            calls,
            vec![
                ("pipeline".into(), pos(1, 13)),
                ("set".into(), pos(2, 5)),
                ("get".into(), pos(2, 17)),
                ("execute".into(), pos(3, 16)),
            ]
        );
        // Statements are where they start.
        let Stmt::Assign { at, .. } = &u.funcs[0].body[2] else {
            panic!("{:?}", u.funcs[0].body)
        };
        assert_eq!(*at, pos(3, 1));
    }

    // ----- statements -----

    #[test]
    fn branches() {
        check(
            top(r#"
                if (a) { x(); } else if (check(b)) { y(); } else { z(); }
                if (c) w();
                switch (kind(k)) { case "a": one(); break; case "b": case "c": two(); break; default: three(); }
                switch (k) { case 1: one(); }
                try { a(); } catch (e) { b(); } finally { c(); }
                try { d(); } finally { e(); }
                v = f() ? g : h;
                w = p || q ?? r && s;
            "#),
            r#"
            branch { x() | check(b); branch { y() | z() } }
            branch { w() |  }
            kind(k)
            branch { one() |  | two() | three() }
            branch { one() |  }
            a()
            branch { b() |  }
            c()
            d()
            e()
            f()
            v = either(g, h)
            w = either(p, q, r, s)
            "#,
        );
    }

    #[test]
    fn loops() {
        check(
            top(r#"
                for (let i = 0, n = f(); i < n; i++) { a(i); }
                for (const k of keys) { b(k); }
                for await (const [k, v] of entries(o)) { c(k, v); }
                for (const { id, name: n } of users) { d(id, n); }
                for (x.y of z) {}
                for (const k in { a: 1, "b": 2, c }) { e(k); }
                for (const k in obj) { f(k); }
                while (more()) { g(); }
                do { h(); } while (again());
                ids.forEach((id) => { if (!id) return; pipe.set(id); });
                ids.forEach(id => keys.push(id));
                ids.forEach(function () { return done(); });
                ids.forEach(cb);
                outer: for (;;) { break outer; }
                { inner(); }
            "#),
            r#"
            i = 0
            n = f()
            loop { a(i) }
            loop k in keys { b(k) }
            loop (k, v) in entries(o) { c(k, v) }
            loop $tmp0 in users { id = $tmp0.id; n = $tmp0.name; d(id, n) }
            loop x.y in z {  }
            loop k in ["a", "b", "c"] { e(k) }
            loop k in other(obj) { f(k) }
            loop { more(); g() }
            loop { h(); again() }
            loop id in ids { branch {  |  }; pipe.set(id) }
            loop id in ids { push keys <- id; keys.push(id) }
            loop in ids { done() }
            ids.forEach(cb)
            loop {  }
            inner()
            "#,
        );
    }

    #[test]
    fn returns_and_throws() {
        check(
            js(r#"
                function f(a) {
                    if (!a) throw new Error("no " + a);
                    if (a > 1) return;
                    return g(a);
                }
                const h = async () => ({ a: await k() });
            "#),
            r#"
            func <module>()
            func f(a)
              branch { other(new Error(concat("no ", a))) |  }
              branch { return |  }
              return g(a)
            func h()
              return wrap({"a": wrap(k())})
            "#,
        );
    }

    // ----- expressions -----

    #[test]
    fn expressions() {
        check(
            ts(r#"
                a = await x;
                b = (x);
                c = x as T;
                d = x satisfies T;
                e = x!;
                f = <T>x;
                g = [a, ...b];
                h = { a, [b]: 1, "c-d": 2, 3: e, m(x) { return x; }, ...o };
                i = xs.map(x => f(x));
                j = xs.map(function (x) { return x + ":"; });
                k = xs.map((x, i) => x);
                l = xs.map(x => { g(x); return x; });
                m = o.p[q];
                n = -f(x) * y;
                o = !x;
                p = typeof x === "string";
                q = function* () { yield k; };
                r = /re/g;
                s = (f(), g());
            "#),
            r#"
            func <module>()
              a = wrap(x)
              b = wrap(x)
              c = wrap(x)
              d = wrap(x)
              e = wrap(x)
              f = wrap(x)
              g = [a, ...b]
              h = {"a": a, b: 1, "c-d": 2, "3": e, "m": fn(x) { return x }, ...o: other()}
              i = [f(x) for x in xs]
              j = [concat(x, ":") for x in xs]
              k = xs.map(fn(x, i) { return x })
              l = xs.map(fn(x) { g(x); return x })
              m = o.p[q]
              n = other(other(f(x)))
              o = other()
              p = other()
              q = fn() { wrap(k) }
              r = other()
              f()
              s = wrap(g())
            "#,
        );
    }

    #[test]
    fn jsx_keeps_the_expressions_it_embeds() {
        let u = lower(
            "const v = <div a={x} {...y}><b>{f(k)}</b> text &amp; <>{g()}</></div>;\n",
            Dialect::JavaScript,
        )
        .unwrap();
        check(
            render(&u),
            r#"
            func <module>()
              v = other(x, ...y, f(k), g())
            "#,
        );
        let u = lower("const v = <A n={1} />;\n", Dialect::Tsx).unwrap();
        check(render(&u), "func <module>()\n  v = other(1)\n");
    }

    #[test]
    fn typescript_only_syntax_is_no_code() {
        check(
            ts(r#"
                interface I { get(k: string): Promise<string>; }
                type K = `k:${string}`;
                enum E { A = "a", B = "b" }
                declare const x: number;
                declare module "m" { export function f(): void; }
                export function over(a: string): void;
                export function over(a: any) { return a; }
                namespace N { export const k = "n"; }
                abstract class A { abstract run(): void; go() {} }
                export type { I };
                let t: string;
            "#),
            r#"
            class A()
            func <module>()
              k = "n"
            func over(a: any)
              return a
            func go() of A as this
            "#,
        );
    }

    #[test]
    fn broken_code_is_lowered_as_far_as_it_goes() {
        let u = lower(
            "const a = r.get('k';\nfunction f( { r.set('x') }\n",
            Dialect::JavaScript,
        )
        .unwrap();
        let text = render(&u);
        assert!(text.contains("r.get(\"k\")"), "{text}");
    }

    // ----- depth -----

    /// Whether `text` is refused for its depth (parsed only).
    fn too_deep(text: &str, dialect: Dialect) -> bool {
        let mut parser = Parser::new();
        let language: tree_sitter::Language = match dialect {
            Dialect::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Dialect::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Dialect::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        };
        parser.set_language(&language).unwrap();
        guard::deeper_than(&parser.parse(text, None).unwrap(), MAX_DEPTH)
    }

    /// Every nested shape the readers are tested on, at the deepest nesting still read, is
    /// lowered on a thread of [`READER_STACK`] (unoptimised, as the tests run), and keeps the
    /// call at its bottom; one level of nesting past that is refused.
    #[test]
    fn the_deepest_trees_read_are_lowered_on_the_readers_stack() {
        use crate::code::guard::tests::{SHAPES, nested};
        for (ext, dialect) in [("js", Dialect::JavaScript), ("ts", Dialect::TypeScript)] {
            let shapes = SHAPES.iter().find(|(e, _)| *e == ext).unwrap().1;
            for shape in shapes {
                let (mut lo, mut hi) = (1, 2 * MAX_DEPTH);
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    if too_deep(&nested(ext, shape, mid), dialect) {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                let text = nested(ext, shape, lo);
                let found = std::thread::Builder::new()
                    .stack_size(READER_STACK)
                    .spawn(move || {
                        let rendered = render(&lower(&text, dialect).unwrap());
                        rendered.contains("mget(") || rendered.contains("set(\"k0\"")
                    })
                    .unwrap()
                    .join()
                    .unwrap();
                assert!(found, "{shape}.{ext} at {lo} levels");
                assert!(
                    matches!(
                        lower(&nested(ext, shape, hi), dialect),
                        Err(LowerError::Unreadable(Unreadable::TooDeep))
                    ),
                    "{shape}.{ext} at {hi} levels"
                );
            }
        }
    }

    /// Far past the bound, refused by a walk that does not recurse (on the test's own stack).
    #[test]
    fn deeper_trees_are_refused_on_any_stack() {
        use crate::code::guard::tests::nested;
        for shape in ["blocks", "calls", "concat", "closures", "templates"] {
            assert!(matches!(
                lower(&nested("js", shape, 10 * MAX_DEPTH), Dialect::JavaScript),
                Err(LowerError::Unreadable(Unreadable::TooDeep))
            ));
        }
    }

    // ----- real files -----

    fn dialect_of(path: &std::path::Path) -> Option<Dialect> {
        match path.extension()?.to_str()? {
            "js" | "mjs" | "cjs" | "jsx" => Some(Dialect::JavaScript),
            "ts" | "mts" | "cts" => Some(Dialect::TypeScript),
            "tsx" => Some(Dialect::Tsx),
            _ => None,
        }
    }

    fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                files_under(&p, out);
            } else if dialect_of(&p).is_some() {
                out.push(p);
            }
        }
    }

    /// Every JavaScript and TypeScript file of the fixtures is lowered, with functions and calls
    /// found in each.
    #[test]
    fn the_fixture_files_are_lowered() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in [
            "tests/fixtures/code/tree/js",
            "tests/fixtures/libraries",
            "tests/corpus/js",
        ] {
            files_under(&root.join(dir), &mut files);
        }
        assert!(files.len() >= 3, "{files:?}");
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let u = lower(&text, dialect_of(f).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let all = u.all_funcs();
            assert!(!all.is_empty(), "{}", f.display());
            assert!(render(&u).contains('('), "{}: no call", f.display());
        }
        // The tree's keys module: its functions and constants.
        let text =
            std::fs::read_to_string(root.join("tests/fixtures/code/tree/js/keys.ts")).unwrap();
        let u = lower(&text, Dialect::TypeScript).unwrap();
        assert!(u.funcs.len() > 1, "{}", render(&u));
    }

    /// The npm sources of the recorded corpus, when unpacked (`KEYPLAN_JS_CORPUS`, default
    /// `/tmp/keyplan-corpus-score/src`): every file lowers without an error or a panic, and
    /// the time taken is printed. Run by hand: `cargo test --release --lib
    /// lower::javascript -- --ignored --nocapture`.
    #[test]
    #[ignore]
    #[allow(clippy::print_stdout)]
    fn the_recorded_corpus_lowers() {
        let root = std::env::var("KEYPLAN_JS_CORPUS")
            .unwrap_or_else(|_| "/tmp/keyplan-corpus-score/src".into());
        let mut files = Vec::new();
        files_under(std::path::Path::new(&root), &mut files);
        let texts: Vec<(std::path::PathBuf, String)> = files
            .into_iter()
            .filter_map(|f| Some((f.clone(), std::fs::read_to_string(&f).ok()?)))
            .collect();
        let bytes: usize = texts.iter().map(|(_, t)| t.len()).sum();
        let start = std::time::Instant::now();
        let results = std::thread::Builder::new()
            .stack_size(READER_STACK)
            .spawn(move || {
                let mut parse_only = std::time::Duration::ZERO;
                let mut slowest = Vec::new();
                let results = texts
                    .iter()
                    .map(|(f, t)| {
                        let dialect = dialect_of(f).unwrap();
                        let start = std::time::Instant::now();
                        let u = lower(t, dialect);
                        let lowering = start.elapsed();
                        let start = std::time::Instant::now();
                        too_deep(t, dialect);
                        let parsing = start.elapsed();
                        parse_only += parsing;
                        slowest.push((
                            lowering.saturating_sub(parsing),
                            lowering,
                            t.len(),
                            f.clone(),
                        ));
                        (
                            f.clone(),
                            u.map(|u| u.all_funcs().len()).map_err(|e| e.to_string()),
                        )
                    })
                    .collect::<Vec<_>>();
                slowest.sort();
                println!(
                    "parsing alone (and the depth check): {parse_only:?}; slowest past parsing (beyond, all, bytes, file): {:?}",
                    &slowest[slowest.len().saturating_sub(3)..]
                );
                results
            })
            .unwrap()
            .join()
            .unwrap();
        let took = start.elapsed();
        let funcs: usize = results.iter().filter_map(|(_, r)| r.as_ref().ok()).sum();
        let failed: Vec<_> = results.iter().filter(|(_, r)| r.is_err()).collect();
        println!(
            "{} files, {bytes} bytes, {funcs} functions, lowered in {took:?}; refused: {failed:?}",
            results.len()
        );
        assert!(failed.is_empty());
    }
}
