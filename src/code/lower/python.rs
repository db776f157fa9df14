//! Python lowered into [`crate::code::ir`] (tree-sitter's Python grammar).
//!
//! What each construct becomes, beyond the rules of [`crate::code::ir`]:
//!
//! - **Scope.** Module-level statements are [`ir::MODULE_BODY`]; a `def` outside any function
//!   (at the top level or inside a module-level `if`/`try`) is a [`Func`] of the unit, a `def`
//!   inside a function is `name = lambda` ([`Expr::Lambda`] named after it). A class (at any
//!   depth, nested ones under their own name) is an [`ir::Class`]; its `def`s are methods
//!   whose first parameter is the receiver (none for `@staticmethod`; `cls` for
//!   `@classmethod`, both [`Func::is_static`]); its other statements are [`ir::CLASS_BODY`],
//!   where a class attribute `key = …` (written or read) is `self.key`.
//! - **Imports.** `import a.b` binds `a` (module `a`) and `a.b` (module `a.b`, so that a dotted
//!   receiver is found by its text); `import a.b as c` binds `c`; `from .m import x as y`
//!   binds `y` to `x` of `.m` (relative modules keep their dots); `*` imports bind nothing.
//! - **Assignments.** `a = b = e` assigns `e` to `a`, then `a` to `b` (so a call in `e` is
//!   lowered once); `a, *b = …` has [`Target::Other`] for `b`; `a += e` is a push of
//!   `*e` when `e` is a list, tuple or set literal (also for `|=`), otherwise `a = a + e` by
//!   the rules of `+` below; other augmented operators make the target an [`Expr::Other`].
//!   `(a := e)` is an assignment before the statement it is written in, and the name after.
//! - **Lists.** `xs.append(e)`, `xs.add(e)`, `xs.insert(i, e)` and `xs.extend(e)` (pushing
//!   `*e`) on a plain name or on a field of the method's receiver are [`Stmt::Push`] only;
//!   on any other receiver they stay calls.
//! - **Strings.** A `+` with a number operand is [`Expr::Other`], with a list operand a list
//!   (`[a] + xs` is `[a, *xs]`), otherwise [`Expr::Concat`]. `"…" % args` and `"…".format(…)`
//!   on a literal format are [`Expr::Concat`] of the pieces and the values (a value the
//!   format names but the arguments do not show is read out of them: `"%s" % t` with two
//!   `%s` takes `t[0]` and `t[1]`, `"%(k)s" % d` takes `d["k"]`); `sep.join(xs)` is
//!   [`Expr::Join`] unless the receiver is a `path` module (`os.path.join`); `str(x)`,
//!   `x.encode(…)`, `x.decode(…)` are [`Expr::Wrap`] of `x`. f-strings keep only the values
//!   of their fields (no conversions, no format specifications).
//! - **Expressions.** `a if c else b`, `a or b` and `a and b` are [`Expr::Either`] (the
//!   condition's calls as a statement before); comprehensions are
//!   [`Expr::Comprehension`] with `if` filters left out; a second `for` clause nests: `[e for
//!   x in xs for y in f(x)]` binds `y` over `comp(*f(x) for x in xs)`; a dict comprehension's
//!   item is the list `[key, value]`. `super()` is the name `super`. Parentheses are their
//!   inner value; `await`/`yield`/`yield from` are [`Expr::Wrap`].
//! - **Statements.** `if`/`elif`/`else` is one [`Stmt::Branch`] of all arms (an empty one
//!   without `else`), every condition's calls before it; `try` is a branch of its body (with
//!   `else`) and its `except` arms, then `finally` inline; `match` a branch of its cases
//!   (an empty arm unless a case is `_`); a `for`/`while` loop's `else` follows the loop;
//!   `with a as b, c as d` is one [`Stmt::With`] in another. `raise`, `assert`, `del` keep
//!   their calls in [`Expr::Other`]; `global`, `nonlocal`, `pass`, `break`, `continue` and
//!   decorators (other than `staticmethod`/`classmethod`) are left out.
//!
//! [`ir::MODULE_BODY`]: crate::code::ir::MODULE_BODY
//! [`ir::Class`]: crate::code::ir::Class
//! [`ir::CLASS_BODY`]: crate::code::ir::CLASS_BODY

use super::LowerError;
use crate::code::Position;
use crate::code::guard;
use crate::code::ir::{
    Arg, CLASS_BODY, Call, Class, Expr, Func, MODULE_BODY, Param, Stmt, Target, Unit,
};
use std::collections::HashSet;
use tree_sitter::{Node, Parser};

/// `text` (one Python file) lowered; refused as the Python reader refuses it (too many
/// indentation widths for the parser's scanner, a tree deeper than [`guard::MAX_DEPTH`]).
pub fn lower(text: &str) -> Result<Unit, LowerError> {
    guard::python_indents(text)?;
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(LowerError::NoTree)?;
    guard::check_depth(&tree)?;
    let mut l = Lowerer::new(text);
    l.unit.funcs.push(Func {
        name: MODULE_BODY.into(),
        at: Position { line: 1, column: 1 },
        ..Func::default()
    });
    let mut body = Vec::new();
    l.block(tree.root_node(), &mut body);
    l.unit.funcs[0].body = body;
    let mut unit = l.unit;
    unit.funcs
        .retain(|f| !(f.name == CLASS_BODY && f.body.is_empty()));
    Ok(unit)
}

/// The class body being lowered: its name and the attributes assigned in it so far.
struct ClassScope {
    name: String,
    attrs: HashSet<String>,
}

/// How a `def` in a class body receives its object.
#[derive(Clone, Copy, PartialEq)]
enum Method {
    Instance,
    Class,
    Static,
}

struct Lowerer<'s> {
    src: &'s str,
    /// Per line (tree-sitter row), the byte column of its first non-ASCII byte (`usize::MAX`
    /// for none): columns before it count characters as bytes.
    ascii_upto: Vec<usize>,
    unit: Unit,
    /// Statements the expressions of the statement being lowered need before it (`:=`, the
    /// calls of a conditional expression's condition).
    pre: Vec<Stmt>,
    /// Calls, closures and yields made so far: an expression whose lowering moved it has
    /// something worth keeping.
    made: usize,
    /// Inside a function (a `def` here is a closure).
    in_func: bool,
    /// Directly in a class body.
    class: Option<ClassScope>,
    /// The receiver of the method being lowered (inherited by its closures).
    self_name: Option<String>,
    /// Local names imports bound so far (`json.decode(s)` is a module's function, not bytes
    /// decoded).
    imported: HashSet<String>,
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
            in_func: false,
            class: None,
            self_name: None,
            imported: HashSet::new(),
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

    fn end(&self, n: Node<'_>) -> Position {
        self.point(n.end_byte(), n.end_position())
    }

    // ----- statements -----

    /// The statements of a block (or the module, or an `ERROR` node's pieces).
    fn block(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let mut cur = n.walk();
        for child in n.named_children(&mut cur) {
            self.stmt(child, out);
        }
    }

    fn flush(&mut self, out: &mut Vec<Stmt>) {
        out.append(&mut self.pre);
    }

    fn stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let at = self.pos(n);
        match n.kind() {
            "comment"
            | "pass_statement"
            | "break_statement"
            | "continue_statement"
            | "global_statement"
            | "nonlocal_statement"
            | "future_import_statement"
            | "type_alias_statement" => {}
            "block" | "ERROR" | "module" => self.block(n, out),
            "expression_statement" => {
                let mut cur = n.walk();
                for child in n.named_children(&mut cur) {
                    match child.kind() {
                        "assignment" => self.assign(child, at, out),
                        "augmented_assignment" => self.augmented(child, at, out),
                        "comment" => {}
                        _ => {
                            let before = self.made;
                            let e = self.expr(child);
                            let worth = self.made != before;
                            self.flush(out);
                            self.effect(e, worth, at, out);
                        }
                    }
                }
            }
            "return_statement" => {
                let value = n.named_child(0).filter(|c| c.kind() != "comment");
                let value = value.map(|v| self.expr(v));
                self.flush(out);
                out.push(Stmt::Return(value, at));
            }
            "if_statement" => self.if_stmt(n, out),
            "for_statement" => {
                let bind = n.child_by_field_name("left").map(|l| self.target(l, false));
                let over = self.fields_expr(n, "right");
                self.flush(out);
                let mut body = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    self.block(b, &mut body);
                }
                out.push(Stmt::Loop { bind, over, body });
                self.else_inline(n, out);
            }
            "while_statement" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.condition(c, out);
                }
                let mut body = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    self.block(b, &mut body);
                }
                out.push(Stmt::Loop {
                    bind: None,
                    over: None,
                    body,
                });
                self.else_inline(n, out);
            }
            "try_statement" => self.try_stmt(n, out),
            "with_statement" => self.with_stmt(n, out),
            "match_statement" => self.match_stmt(n, out),
            "function_definition" => self.def(n, Method::Instance, out),
            "decorated_definition" => {
                let mut kind = Method::Instance;
                let mut cur = n.walk();
                for d in n.named_children(&mut cur) {
                    if d.kind() != "decorator" {
                        continue;
                    }
                    let name = self.text(d).trim_start_matches('@').trim();
                    let last = name.rsplit('.').next().unwrap_or(name);
                    if last.ends_with("staticmethod") {
                        kind = Method::Static;
                    } else if last.ends_with("classmethod") {
                        kind = Method::Class;
                    }
                }
                if let Some(d) = n.child_by_field_name("definition") {
                    match d.kind() {
                        "function_definition" => self.def(d, kind, out),
                        _ => self.stmt(d, out),
                    }
                }
            }
            "class_definition" => self.class_def(n),
            "import_statement" => self.import(n),
            "import_from_statement" => self.import_from(n),
            // raise, assert, del, print, exec: their calls.
            k if k.ends_with("_statement") => {
                let before = self.made;
                let e = self.other(n);
                let worth = self.made != before;
                self.flush(out);
                if worth {
                    out.push(Stmt::Expr(e));
                }
            }
            // An expression where a statement was expected (in what the grammar could not read).
            _ => {
                let before = self.made;
                let e = self.expr(n);
                let worth = self.made != before;
                self.flush(out);
                self.effect(e, worth, at, out);
            }
        }
    }

    /// An expression statement: a push for `xs.append(e)` and its kin, else the expression
    /// when it does something (a name left by `(x := f())` does not: the call is before it).
    fn effect(&mut self, e: Expr, worth: bool, at: Position, out: &mut Vec<Stmt>) {
        if let Expr::Call(c) = &e
            && let Some(push) = self.push(c, at)
        {
            out.push(push);
            return;
        }
        if worth && !matches!(e, Expr::Name(_) | Expr::Str(_) | Expr::Num(_)) {
            out.push(Stmt::Expr(e));
        }
    }

    /// `xs.append(e)`, `xs.add(e)`, `xs.insert(i, e)`, `xs.extend(e)` on a plain name or a
    /// field of the receiver.
    fn push(&self, c: &Call, at: Position) -> Option<Stmt> {
        if c.callee.is_some() || c.args.iter().any(|a| a.keyword.is_some()) {
            return None;
        }
        let target = match c.receiver.as_ref()? {
            Expr::Name(n) => Target::Name(n.clone()),
            Expr::Field(o, f) => match &**o {
                Expr::Name(s) if self.self_name.as_deref() == Some(s) || s == "self" => {
                    Target::Field(Expr::Name(s.clone()), f.clone())
                }
                _ => return None,
            },
            _ => return None,
        };
        let plain = |a: &Arg| !matches!(a.value, Expr::Spread(_));
        let value = match (c.name.as_str(), c.args.as_slice()) {
            ("append" | "add", [a]) if plain(a) => a.value.clone(),
            ("insert", [i, a]) if plain(i) && plain(a) => a.value.clone(),
            ("extend", [a]) if plain(a) => Expr::Spread(Box::new(a.value.clone())),
            _ => return None,
        };
        Some(Stmt::Push { target, value, at })
    }

    /// A condition: its `:=` assignments, then the condition itself when it calls something.
    fn condition(&mut self, c: Node<'_>, out: &mut Vec<Stmt>) {
        let before = self.made;
        let e = self.expr(c);
        let worth = self.made != before;
        self.flush(out);
        if worth && !matches!(e, Expr::Name(_) | Expr::Str(_) | Expr::Num(_)) {
            out.push(Stmt::Expr(e));
        }
    }

    /// The `else` of a `for`/`while`: after the loop.
    fn else_inline(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        if let Some(e) = n.child_by_field_name("alternative")
            && let Some(b) = e.child_by_field_name("body")
        {
            self.block(b, out);
        }
    }

    fn if_stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        if let Some(c) = n.child_by_field_name("condition") {
            self.condition(c, out);
        }
        let mut arms = Vec::new();
        let mut arm = Vec::new();
        if let Some(b) = n.child_by_field_name("consequence") {
            self.block(b, &mut arm);
        }
        arms.push(arm);
        let mut has_else = false;
        let mut cur = n.walk();
        for alt in n.children_by_field_name("alternative", &mut cur) {
            let mut arm = Vec::new();
            match alt.kind() {
                "elif_clause" => {
                    if let Some(c) = alt.child_by_field_name("condition") {
                        self.condition(c, out);
                    }
                    if let Some(b) = alt.child_by_field_name("consequence") {
                        self.block(b, &mut arm);
                    }
                }
                _ => {
                    has_else = true;
                    if let Some(b) = alt.child_by_field_name("body") {
                        self.block(b, &mut arm);
                    }
                }
            }
            arms.push(arm);
        }
        if !has_else {
            arms.push(Vec::new());
        }
        out.push(Stmt::Branch(arms));
    }

    fn try_stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let mut body = Vec::new();
        if let Some(b) = n.child_by_field_name("body") {
            self.block(b, &mut body);
        }
        let mut arms = Vec::new();
        let mut finally = Vec::new();
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            match c.kind() {
                "except_clause" | "except_group_clause" => {
                    let mut arm = Vec::new();
                    let mut cc = c.walk();
                    for b in c.named_children(&mut cc).filter(|b| b.kind() == "block") {
                        self.block(b, &mut arm);
                    }
                    arms.push(arm);
                }
                "else_clause" => {
                    if let Some(b) = c.child_by_field_name("body") {
                        self.block(b, &mut body);
                    }
                }
                "finally_clause" => {
                    let mut cc = c.walk();
                    for b in c.named_children(&mut cc).filter(|b| b.kind() == "block") {
                        self.block(b, &mut finally);
                    }
                }
                _ => {}
            }
        }
        if arms.is_empty() {
            out.append(&mut body);
        } else {
            arms.insert(0, body);
            out.push(Stmt::Branch(arms));
        }
        out.append(&mut finally);
    }

    fn with_stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let mut items = Vec::new();
        let mut cur = n.walk();
        for clause in n.named_children(&mut cur) {
            if clause.kind() != "with_clause" {
                continue;
            }
            let mut cc = clause.walk();
            for item in clause.named_children(&mut cc) {
                let Some(v) = item.child_by_field_name("value") else {
                    continue;
                };
                items.push(self.with_item(v));
            }
        }
        self.flush(out);
        let mut body = Vec::new();
        if let Some(b) = n.child_by_field_name("body") {
            self.block(b, &mut body);
        }
        let end = self.end(n);
        for (value, bind) in items.into_iter().rev() {
            body = vec![Stmt::With {
                value,
                bind,
                body,
                end,
            }];
        }
        out.append(&mut body);
    }

    /// A `with` item: `value as target` or `value`.
    fn with_item(&mut self, v: Node<'_>) -> (Expr, Option<Target>) {
        if v.kind() == "as_pattern" {
            let value = v
                .named_child(0)
                .map_or(Expr::Other(vec![]), |x| self.expr(x));
            let bind = v
                .child_by_field_name("alias")
                .and_then(|a| a.named_child(0))
                .map(|t| self.target(t, true));
            (value, bind)
        } else {
            (self.expr(v), None)
        }
    }

    fn match_stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        if let Some(s) = n.child_by_field_name("subject") {
            self.condition(s, out);
        }
        let mut arms = Vec::new();
        let mut total = false;
        if let Some(body) = n.child_by_field_name("body") {
            let mut cur = body.walk();
            for case in body.named_children(&mut cur) {
                if case.kind() != "case_clause" {
                    continue;
                }
                let mut cc = case.walk();
                let patterns: Vec<Node<'_>> = case
                    .named_children(&mut cc)
                    .filter(|p| p.kind() == "case_pattern")
                    .collect();
                if case.child_by_field_name("guard").is_none()
                    && patterns.len() == 1
                    && matches!(self.text(patterns[0]), "_")
                {
                    total = true;
                }
                let mut arm = Vec::new();
                if let Some(b) = case.child_by_field_name("consequence") {
                    self.block(b, &mut arm);
                }
                arms.push(arm);
            }
        }
        if !total {
            arms.push(Vec::new());
        }
        out.push(Stmt::Branch(arms));
    }

    // ----- definitions -----

    /// A `def`: a method in a class body, a function of the unit outside functions, a
    /// closure assigned to its name inside one.
    fn def(&mut self, n: Node<'_>, kind: Method, out: &mut Vec<Stmt>) {
        let name = n
            .child_by_field_name("name")
            .map_or("", |x| self.text(x))
            .to_string();
        if let Some(class) = self.class.as_ref().map(|c| c.name.clone()) {
            let slot = self.reserve();
            let f = self.func(n, name, Some(class), Some(kind), out);
            self.unit.funcs[slot] = f;
        } else if self.in_func {
            let at = self.pos(n);
            let f = self.func(n, name.clone(), None, None, out);
            out.push(Stmt::Assign {
                target: Target::Name(name),
                value: Expr::Lambda(Box::new(f)),
                at,
            });
        } else {
            let slot = self.reserve();
            let f = self.func(n, name, None, None, out);
            self.unit.funcs[slot] = f;
        }
    }

    /// A place in the unit's functions, so that they stay in source order when a function
    /// holds a class whose methods are lowered first.
    fn reserve(&mut self) -> usize {
        self.unit.funcs.push(Func::default());
        self.unit.funcs.len() - 1
    }

    /// A function (`def` or `lambda`): its parameters (defaults lowered where written, their
    /// statements into `out`), then its body in a scope of its own.
    fn func(
        &mut self,
        n: Node<'_>,
        name: String,
        class: Option<String>,
        method: Option<Method>,
        out: &mut Vec<Stmt>,
    ) -> Func {
        let mut params = match n.child_by_field_name("parameters") {
            Some(p) => self.params(p),
            None => Vec::new(),
        };
        self.flush(out);
        let mut receiver = None;
        if matches!(method, Some(Method::Instance | Method::Class))
            && params.first().is_some_and(|p| !p.rest && !p.kwrest)
        {
            receiver = Some(params.remove(0).name);
        }
        let saved = (
            std::mem::replace(&mut self.in_func, true),
            self.class.take(),
            std::mem::take(&mut self.pre),
            match &receiver {
                Some(r) => self.self_name.replace(r.clone()),
                None => self.self_name.clone(),
            },
        );
        let mut body = Vec::new();
        if let Some(b) = n.child_by_field_name("body") {
            if n.kind() == "lambda" {
                let at = self.pos(b);
                let e = self.expr(b);
                self.flush(&mut body);
                body.push(Stmt::Return(Some(e), at));
            } else {
                self.block(b, &mut body);
            }
        }
        self.in_func = saved.0;
        self.class = saved.1;
        self.pre = saved.2;
        self.self_name = saved.3;
        self.made += 1;
        Func {
            name,
            class,
            receiver,
            params,
            body,
            at: self.pos(n),
            is_static: matches!(method, Some(Method::Static | Method::Class)),
            returns: None,
        }
    }

    fn params(&mut self, n: Node<'_>) -> Vec<Param> {
        let mut out = Vec::new();
        let mut cur = n.walk();
        for p in n.named_children(&mut cur) {
            let mut param = Param::default();
            let mut name_node = Some(p);
            match p.kind() {
                "identifier" => {}
                "default_parameter" | "typed_default_parameter" => {
                    name_node = p.child_by_field_name("name");
                    param.default = p.child_by_field_name("value").map(|v| self.expr(v));
                }
                "typed_parameter" => name_node = p.named_child(0),
                "list_splat_pattern" | "dictionary_splat_pattern" => {}
                "tuple_pattern" => {}
                _ => continue, // `*`, `/`, comments
            }
            if let Some(t) = p.child_by_field_name("type") {
                param.ty = type_name(self.text(t));
            }
            let Some(mut nn) = name_node else { continue };
            match nn.kind() {
                "list_splat_pattern" => param.rest = true,
                "dictionary_splat_pattern" => param.kwrest = true,
                _ => {}
            }
            if param.rest || param.kwrest {
                match nn.named_child(0) {
                    Some(inner) => nn = inner,
                    None => continue,
                }
            }
            param.name = self.text(nn).to_string();
            out.push(param);
        }
        out
    }

    fn class_def(&mut self, n: Node<'_>) {
        let name = n
            .child_by_field_name("name")
            .map_or("", |x| self.text(x))
            .to_string();
        let mut bases = Vec::new();
        if let Some(sup) = n.child_by_field_name("superclasses") {
            let mut cur = sup.walk();
            for b in sup.named_children(&mut cur) {
                let b = if b.kind() == "subscript" {
                    match b.child_by_field_name("value") {
                        Some(v) => v,
                        None => continue,
                    }
                } else {
                    b
                };
                if matches!(b.kind(), "identifier" | "attribute") {
                    let t = self.text(b);
                    bases.push(t.rsplit('.').next().unwrap_or(t).trim().to_string());
                }
            }
        }
        self.unit.classes.push(Class {
            name: name.clone(),
            bases,
        });
        let slot = self.reserve();
        let saved = (
            self.class.replace(ClassScope {
                name: name.clone(),
                attrs: HashSet::new(),
            }),
            std::mem::take(&mut self.pre),
            self.self_name.replace("self".into()),
        );
        let mut body = Vec::new();
        if let Some(b) = n.child_by_field_name("body") {
            self.block(b, &mut body);
        }
        self.flush(&mut body);
        self.class = saved.0;
        self.pre = saved.1;
        self.self_name = saved.2;
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

    /// Whether a call of `name` on `receiver` (none: a bare name) is `typing`'s function of
    /// that name, through `import typing [as t]` or `from typing import name [as n]`.
    fn is_typing(&self, receiver: Option<&Expr>, name: &str) -> bool {
        let typing = |m: &str| matches!(m, "typing" | "typing_extensions");
        match receiver {
            Some(Expr::Name(local)) => self
                .unit
                .imports
                .iter()
                .any(|(l, m, n)| l == local && typing(m) && n.is_none()),
            Some(_) => false,
            None => self
                .unit
                .imports
                .iter()
                .any(|(l, m, n)| l == name && typing(m) && n.as_deref() == Some(name)),
        }
    }

    /// An import binding `local` to `name` of `module` (the whole module for `None`).
    fn bind(&mut self, local: String, module: String, name: Option<String>) {
        self.imported.insert(local.clone());
        self.unit.imports.push((local, module, name));
    }

    fn import(&mut self, n: Node<'_>) {
        let mut cur = n.walk();
        for name in n.children_by_field_name("name", &mut cur) {
            match name.kind() {
                "dotted_name" => {
                    let module = self.text(name).to_string();
                    if let Some((first, _)) = module.split_once('.') {
                        self.bind(first.to_string(), first.to_string(), None);
                    }
                    self.bind(module.clone(), module, None);
                }
                "aliased_import" => {
                    if let (Some(m), Some(a)) = (
                        name.child_by_field_name("name"),
                        name.child_by_field_name("alias"),
                    ) {
                        let (m, a) = (self.text(m).to_string(), self.text(a).to_string());
                        self.bind(a, m, None);
                    }
                }
                _ => {}
            }
        }
    }

    fn import_from(&mut self, n: Node<'_>) {
        let Some(module) = n.child_by_field_name("module_name") else {
            return;
        };
        let module: String = self
            .text(module)
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '\\')
            .collect();
        let mut cur = n.walk();
        for name in n.children_by_field_name("name", &mut cur) {
            let (local, original) = match name.kind() {
                "dotted_name" => {
                    let t = self.text(name).to_string();
                    (t.clone(), t)
                }
                "aliased_import" => match (
                    name.child_by_field_name("name"),
                    name.child_by_field_name("alias"),
                ) {
                    (Some(m), Some(a)) => (self.text(a).to_string(), self.text(m).to_string()),
                    _ => continue,
                },
                _ => continue,
            };
            self.bind(local, module.clone(), Some(original));
        }
    }

    // ----- assignments -----

    /// `a = e`, `a = b = e`, `a: T = e` (`a: T` alone assigns nothing).
    fn assign(&mut self, n: Node<'_>, at: Position, out: &mut Vec<Stmt>) {
        let mut targets = Vec::new();
        let mut cur = n;
        let value = loop {
            if let Some(l) = cur.child_by_field_name("left") {
                targets.push(l);
            }
            match cur.child_by_field_name("right") {
                Some(r) if r.kind() == "assignment" => cur = r,
                Some(r) if r.kind() == "augmented_assignment" => {
                    // `a = b += 1` is not Python; read what is there.
                    break Some(self.other(r));
                }
                Some(r) => break Some(self.expr(r)),
                None => break None,
            }
        };
        let Some(value) = value else {
            // An annotation without a value.
            self.flush(out);
            return;
        };
        let targets: Vec<Target> = targets.into_iter().map(|t| self.target(t, true)).collect();
        self.flush(out);
        let mut first: Option<Expr> = None;
        for target in targets {
            let value = match &first {
                None => {
                    first = Some(read(&target).unwrap_or_else(|| value.clone()));
                    value.clone()
                }
                Some(f) => f.clone(),
            };
            out.push(Stmt::Assign { target, value, at });
        }
    }

    fn augmented(&mut self, n: Node<'_>, at: Position, out: &mut Vec<Stmt>) {
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            let e = self.other(n);
            self.flush(out);
            out.push(Stmt::Expr(e));
            return;
        };
        let op = n
            .child_by_field_name("operator")
            .map_or("", |o| self.text(o));
        let target = self.target(l, true);
        let before = self.made;
        let value = self.expr(r);
        let worth = self.made != before;
        self.flush(out);
        if matches!(op, "+=" | "|=") && matches!(value, Expr::List(_)) {
            out.push(Stmt::Push {
                target,
                value: Expr::Spread(Box::new(value)),
                at,
            });
            return;
        }
        let current = read(&target).unwrap_or(Expr::Other(vec![]));
        let value = if op == "+=" {
            plus(current, value, worth)
        } else {
            Expr::Other(if worth { vec![value] } else { vec![] })
        };
        out.push(Stmt::Assign { target, value, at });
    }

    /// Where an assignment (or a loop, a `with … as`, a comprehension) puts its value; in a
    /// class body a plain name is the class attribute `self.name` when `attr` is set.
    fn target(&mut self, n: Node<'_>, attr: bool) -> Target {
        match n.kind() {
            "identifier" => {
                let name = self.text(n).to_string();
                if attr && let Some(c) = self.class.as_mut() {
                    c.attrs.insert(name.clone());
                    return Target::Field(Expr::name("self"), name);
                }
                Target::Name(name)
            }
            "attribute" => {
                let obj = n
                    .child_by_field_name("object")
                    .map_or(Expr::Other(vec![]), |o| self.expr(o));
                let field = n
                    .child_by_field_name("attribute")
                    .map_or("", |a| self.text(a));
                Target::Field(obj, field.to_string())
            }
            "subscript" => {
                let obj = n
                    .child_by_field_name("value")
                    .map_or(Expr::Other(vec![]), |o| self.expr(o));
                let index = self.subscript(n);
                Target::Index(obj, index)
            }
            "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list"
            | "expression_list" => {
                let mut cur = n.walk();
                let parts: Vec<Node<'_>> = n
                    .named_children(&mut cur)
                    .filter(|c| c.kind() != "comment")
                    .collect();
                Target::Tuple(parts.into_iter().map(|c| self.target(c, attr)).collect())
            }
            "parenthesized_expression" => match n.named_child(0) {
                Some(inner) => self.target(inner, attr),
                None => Target::Other,
            },
            _ => Target::Other,
        }
    }

    // ----- expressions -----

    /// The expression of field `field` of `n`; several (`for x in a, b`) as a list.
    fn fields_expr(&mut self, n: Node<'_>, field: &str) -> Option<Expr> {
        let mut cur = n.walk();
        let nodes: Vec<Node<'_>> = n
            .children_by_field_name(field, &mut cur)
            .filter(|c| c.is_named())
            .collect();
        match nodes.len() {
            0 => None,
            1 => Some(self.expr(nodes[0])),
            _ => Some(Expr::List(
                nodes.into_iter().map(|c| self.expr(c)).collect(),
            )),
        }
    }

    /// `Other` of the named children of `n` that call or make something.
    fn other(&mut self, n: Node<'_>) -> Expr {
        let mut kept = Vec::new();
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            if c.kind() == "comment" {
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

    fn expr(&mut self, n: Node<'_>) -> Expr {
        match n.kind() {
            "identifier" => {
                let name = self.text(n);
                if let Some(c) = &self.class
                    && c.attrs.contains(name)
                {
                    return Expr::field(Expr::name("self"), name);
                }
                Expr::name(name)
            }
            "string" => self.string(n),
            "concatenated_string" => {
                let mut pieces = Vec::new();
                let mut cur = n.walk();
                for s in n.named_children(&mut cur) {
                    if s.kind() == "string" {
                        let e = self.string(s);
                        push_piece(&mut pieces, e);
                    }
                }
                concat(pieces)
            }
            "integer" | "float" | "true" | "false" | "none" => Expr::Num(self.text(n).into()),
            "attribute" => {
                let obj = n
                    .child_by_field_name("object")
                    .map_or(Expr::Other(vec![]), |o| self.expr(o));
                let field = n
                    .child_by_field_name("attribute")
                    .map_or("", |a| self.text(a));
                Expr::field(obj, field)
            }
            "subscript" => {
                let obj = n
                    .child_by_field_name("value")
                    .map_or(Expr::Other(vec![]), |o| self.expr(o));
                let index = self.subscript(n);
                Expr::Index(Box::new(obj), Box::new(index))
            }
            "call" => self.call(n),
            "list" | "tuple" | "set" | "expression_list" | "pattern_list" => {
                let mut items = Vec::new();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    if c.kind() != "comment" {
                        items.push(self.expr(c));
                    }
                }
                Expr::List(items)
            }
            "list_splat" | "parenthesized_list_splat" | "list_splat_pattern" => {
                match n.named_child(0) {
                    Some(c) => match self.expr(c) {
                        s @ Expr::Spread(_) => s,
                        e => Expr::Spread(Box::new(e)),
                    },
                    None => Expr::Other(vec![]),
                }
            }
            "dictionary" => {
                let mut entries = Vec::new();
                let mut cur = n.walk();
                for c in n.named_children(&mut cur) {
                    match c.kind() {
                        "pair" => {
                            let k = c
                                .child_by_field_name("key")
                                .map_or(Expr::Other(vec![]), |k| self.expr(k));
                            let v = c
                                .child_by_field_name("value")
                                .map_or(Expr::Other(vec![]), |v| self.expr(v));
                            entries.push((k, v));
                        }
                        "dictionary_splat" => {
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
            "list_comprehension"
            | "set_comprehension"
            | "generator_expression"
            | "dictionary_comprehension" => self.comprehension(n),
            "parenthesized_expression" => {
                let mut cur = n.walk();
                let inner: Vec<Node<'_>> = n
                    .named_children(&mut cur)
                    .filter(|c| c.kind() != "comment")
                    .collect();
                match inner.as_slice() {
                    [one] => self.expr(*one),
                    _ => self.other(n),
                }
            }
            "binary_operator" => self.binary(n),
            "unary_operator" => {
                let arg = n.child_by_field_name("argument");
                match arg {
                    Some(a) if matches!(a.kind(), "integer" | "float") => {
                        Expr::Num(self.text(n).split_whitespace().collect())
                    }
                    _ => self.other(n),
                }
            }
            "boolean_operator" => {
                // `a or b or c` nests to the left: the left's alternatives grow in place.
                let mut items = match n.child_by_field_name("left").map(|c| self.expr(c)) {
                    Some(Expr::Either(xs)) => xs,
                    Some(e) => vec![e],
                    None => Vec::new(),
                };
                match n.child_by_field_name("right").map(|c| self.expr(c)) {
                    Some(Expr::Either(xs)) => items.extend(xs),
                    Some(e) => items.push(e),
                    None => {}
                }
                Expr::Either(items)
            }
            "conditional_expression" => {
                let mut cur = n.walk();
                let parts: Vec<Node<'_>> = n
                    .named_children(&mut cur)
                    .filter(|c| c.kind() != "comment")
                    .collect();
                if parts.len() != 3 {
                    return self.other(n);
                }
                let a = self.expr(parts[0]);
                let before = self.made;
                let c = self.expr(parts[1]);
                if self.made != before {
                    self.pre.push(Stmt::Expr(c));
                }
                let b = self.expr(parts[2]);
                let mut items = Vec::new();
                for e in [a, b] {
                    match e {
                        Expr::Either(xs) => items.extend(xs),
                        e => items.push(e),
                    }
                }
                Expr::Either(items)
            }
            "lambda" => {
                let mut scratch = Vec::new();
                let f = self.func(n, "<lambda>".into(), None, None, &mut scratch);
                // A default's `:=` runs where the lambda is written.
                self.pre.append(&mut scratch);
                Expr::Lambda(Box::new(f))
            }
            "named_expression" => {
                let name = n.child_by_field_name("name").map_or("", |x| self.text(x));
                let value = n
                    .child_by_field_name("value")
                    .map_or(Expr::Other(vec![]), |v| self.expr(v));
                let at = self.pos(n);
                self.pre.push(Stmt::Assign {
                    target: Target::Name(name.to_string()),
                    value,
                    at,
                });
                Expr::name(name)
            }
            "await" => match n.named_child(0) {
                Some(c) => Expr::Wrap(Box::new(self.expr(c))),
                None => Expr::Other(vec![]),
            },
            "yield" => {
                self.made += 1;
                let inner = n.named_child(0).filter(|c| c.kind() != "comment");
                match inner {
                    Some(c) => Expr::Wrap(Box::new(self.expr(c))),
                    None => Expr::Wrap(Box::new(Expr::Num("None".into()))),
                }
            }
            "as_pattern" | "type" | "dictionary_splat" => match n.named_child(0) {
                Some(c) => self.expr(c),
                None => Expr::Other(vec![]),
            },
            // not, comparisons, slices, ellipsis, what the grammar could not read.
            _ => self.other(n),
        }
    }

    /// The index of a subscript (several, `a[1, 2]`, as a list).
    fn subscript(&mut self, n: Node<'_>) -> Expr {
        self.fields_expr(n, "subscript")
            .unwrap_or(Expr::Other(vec![]))
    }

    /// A string literal: its text with escapes resolved, or an f-string's pieces.
    fn string(&mut self, n: Node<'_>) -> Expr {
        let mut prefix = "";
        let mut pieces = Vec::new();
        let mut buf = String::new();
        let mut fstring = false;
        let mut cur = n.walk();
        for c in n.children(&mut cur) {
            match c.kind() {
                "string_start" => {
                    prefix = self.text(c);
                    fstring = prefix.contains(['f', 'F', 't', 'T']);
                }
                "string_content" => {
                    let raw = prefix.contains(['r', 'R']);
                    let mut at = c.start_byte();
                    let mut cc = c.walk();
                    for e in c.named_children(&mut cc) {
                        buf.push_str(self.src.get(at..e.start_byte()).unwrap_or(""));
                        let t = self.text(e);
                        match e.kind() {
                            "escape_interpolation" => buf.extend(t.chars().next()),
                            "escape_sequence" if !raw => unescape(t, &mut buf),
                            _ => buf.push_str(t),
                        }
                        at = e.end_byte();
                    }
                    buf.push_str(self.src.get(at..c.end_byte()).unwrap_or(""));
                }
                "interpolation" => {
                    if !buf.is_empty() {
                        push_piece(&mut pieces, Expr::Str(std::mem::take(&mut buf)));
                    }
                    let v = c
                        .child_by_field_name("expression")
                        .map_or(Expr::Other(vec![]), |x| self.expr(x));
                    push_piece(&mut pieces, v);
                }
                _ => {}
            }
        }
        if !buf.is_empty() {
            push_piece(&mut pieces, Expr::Str(buf));
        }
        if fstring && pieces.iter().any(|p| !matches!(p, Expr::Str(_))) {
            Expr::Concat(pieces)
        } else {
            concat(pieces)
        }
    }

    fn binary(&mut self, n: Node<'_>) -> Expr {
        let op = n
            .child_by_field_name("operator")
            .map_or("", |o| self.text(o));
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
                Expr::Str(fmt) => percent(&fmt, r),
                // A format held in a name or a field (`CART % uid`): filled by the analysis
                // once it knows the text; a number's `%` is not a format and reads as one.
                l @ (Expr::Name(_) | Expr::Field(..) | Expr::Concat(_)) => {
                    let args = match r {
                        Expr::List(items) => items.into_iter().map(Arg::pos).collect(),
                        r => vec![Arg::pos(r)],
                    };
                    Expr::Call(Box::new(Call {
                        receiver: Some(l),
                        name: crate::code::ir::PRINTF.to_string(),
                        callee: None,
                        args,
                        new: false,
                        at: n
                            .child_by_field_name("operator")
                            .map_or_else(|| self.pos(n), |o| self.pos(o)),
                    }))
                }
                l => keep([(l, l_worth), (r, r_worth)]),
            },
            _ => keep([(l, l_worth), (r, r_worth)]),
        }
    }

    fn comprehension(&mut self, n: Node<'_>) -> Expr {
        let mut clauses = Vec::new();
        let mut cur = n.walk();
        for c in n.named_children(&mut cur) {
            if c.kind() == "for_in_clause" {
                clauses.push(c);
            }
        }
        let mut acc: Option<(Target, Expr)> = None;
        for c in clauses {
            let over = self.fields_expr(c, "right").unwrap_or(Expr::Other(vec![]));
            let bind = c
                .child_by_field_name("left")
                .map_or(Target::Other, |l| self.target(l, false));
            let over = match acc.take() {
                None => over,
                Some((b, o)) => Expr::Comprehension {
                    item: Box::new(Expr::Spread(Box::new(over))),
                    bind: Box::new(b),
                    over: Box::new(o),
                },
            };
            acc = Some((bind, over));
        }
        let item = match n.child_by_field_name("body") {
            Some(b) if b.kind() == "pair" => {
                let k = b
                    .child_by_field_name("key")
                    .map_or(Expr::Other(vec![]), |k| self.expr(k));
                let v = b
                    .child_by_field_name("value")
                    .map_or(Expr::Other(vec![]), |v| self.expr(v));
                Expr::List(vec![k, v])
            }
            Some(b) => self.expr(b),
            None => Expr::Other(vec![]),
        };
        match acc {
            Some((bind, over)) => Expr::Comprehension {
                item: Box::new(item),
                bind: Box::new(bind),
                over: Box::new(over),
            },
            None => Expr::Other(vec![item]),
        }
    }

    fn call(&mut self, n: Node<'_>) -> Expr {
        let Some(function) = n.child_by_field_name("function") else {
            return self.other(n);
        };
        let (receiver, name, callee, at, receiver_node) = match function.kind() {
            "identifier" => (
                None,
                self.text(function).to_string(),
                None,
                self.pos(function),
                None,
            ),
            "attribute" => {
                let obj = function.child_by_field_name("object");
                let attr = function.child_by_field_name("attribute");
                let recv = obj.map_or(Expr::Other(vec![]), |o| self.expr(o));
                let (name, at) = match attr {
                    Some(a) => (self.text(a).to_string(), self.pos(a)),
                    None => (String::new(), self.pos(n)),
                };
                (Some(recv), name, None, at, obj)
            }
            _ => {
                let callee = self.expr(function);
                (None, String::new(), Some(callee), self.pos(n), None)
            }
        };
        if receiver.is_none() && callee.is_none() && name == "super" {
            return Expr::name("super");
        }
        let args = match n.child_by_field_name("arguments") {
            Some(a) if a.kind() == "generator_expression" => vec![Arg::pos(self.expr(a))],
            Some(a) => self.args(a),
            None => Vec::new(),
        };
        let (receiver, args) =
            match self.text_form(receiver, &name, args, callee.is_some(), receiver_node) {
                Ok(e) => return e,
                Err(parts) => parts,
            };
        self.made += 1;
        Expr::Call(Box::new(Call {
            receiver,
            name,
            callee,
            args,
            new: false,
            at,
        }))
    }

    /// A call that builds text rather than calling something: `str(x)`, `x.encode(…)`,
    /// `x.decode(…)`, `"…".format(…)`, `sep.join(xs)`; otherwise its receiver and arguments
    /// back.
    fn text_form(
        &self,
        receiver: Option<Expr>,
        name: &str,
        mut args: Vec<Arg>,
        computed: bool,
        receiver_node: Option<Node<'_>>,
    ) -> Result<Expr, (Option<Expr>, Vec<Arg>)> {
        let plain = |a: &Arg| a.keyword.is_none() && !matches!(a.value, Expr::Spread(_));
        match (receiver, name) {
            (None, "str") if !computed && args.len() == 1 && plain(&args[0]) => match args.pop() {
                Some(a) => Ok(Expr::Wrap(Box::new(a.value))),
                None => Err((None, args)),
            },
            (Some(r), "encode" | "decode")
                if args.len() <= 2
                    && args.iter().all(|a| {
                        matches!(a.keyword.as_deref(), None | Some("encoding" | "errors"))
                    })
                    && !matches!(&r, Expr::Name(m) if self.imported.contains(m)) =>
            {
                Ok(Expr::Wrap(Box::new(r)))
            }
            // `cast(T, x)` from `typing` is `x` to the running program.
            (r, "cast")
                if !computed
                    && args.len() == 2
                    && args.iter().all(plain)
                    && self.is_typing(r.as_ref(), "cast") =>
            {
                match args.pop() {
                    Some(a) => Ok(a.value),
                    None => Err((r, args)),
                }
            }
            (Some(Expr::Str(fmt)), "format") => Ok(format(&fmt, &args)),
            (Some(r), "join")
                if args.len() == 1
                    && plain(&args[0])
                    && !is_path_module(&r, receiver_node.map(|x| x.kind())) =>
            {
                match args.pop() {
                    Some(a) => Ok(Expr::Join(Box::new(r), Box::new(a.value))),
                    None => Err((Some(r), args)),
                }
            }
            (r, _) => Err((r, args)),
        }
    }

    fn args(&mut self, n: Node<'_>) -> Vec<Arg> {
        let mut out = Vec::new();
        let mut cur = n.walk();
        for a in n.named_children(&mut cur) {
            match a.kind() {
                "comment" => {}
                "keyword_argument" => {
                    let k = a.child_by_field_name("name").map_or("", |k| self.text(k));
                    let v = a
                        .child_by_field_name("value")
                        .map_or(Expr::Other(vec![]), |v| self.expr(v));
                    out.push(Arg::kw(k, v));
                }
                "dictionary_splat" => {
                    let v = a
                        .named_child(0)
                        .map_or(Expr::Other(vec![]), |v| self.expr(v));
                    out.push(Arg::kw("**", v));
                }
                _ => out.push(Arg::pos(self.expr(a))),
            }
        }
        out
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
            // A concat on the left is already flat: it grows in place (a chain of n terms
            // costs n, not n²).
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

/// Whether a `join` receiver is a path module (`os.path.join(a)`), not a separator.
fn is_path_module(r: &Expr, kind: Option<&str>) -> bool {
    if matches!(kind, Some("string" | "concatenated_string")) {
        return false;
    }
    match r {
        Expr::Name(n) => matches!(n.as_str(), "path" | "posixpath" | "ntpath" | "os"),
        Expr::Field(_, f) => f == "path",
        _ => false,
    }
}

/// `fmt % args` for a literal `fmt`: its pieces and the values its conversions take.
fn percent(fmt: &str, args: Expr) -> Expr {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut index = 0usize;
    let mut chars = fmt.chars().peekable();
    let single = !matches!(args, Expr::List(_) | Expr::Map(_));
    let specs = count_percent_specs(fmt);
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
        let mut key = None;
        if chars.peek() == Some(&'(') {
            chars.next();
            let mut k = String::new();
            let mut depth = 1;
            for c in chars.by_ref() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k.push(c);
            }
            key = Some(k);
        }
        // Flags, width, precision, length, then the conversion.
        let mut conversion = None;
        for c in chars.by_ref() {
            if c.is_ascii_alphabetic() && !matches!(c, 'h' | 'l' | 'L') {
                conversion = Some(c);
                break;
            }
        }
        if conversion.is_none() {
            lit.push('%');
            break;
        }
        if !lit.is_empty() {
            pieces.push(Expr::Str(std::mem::take(&mut lit)));
        }
        let value = match (&key, &args) {
            (Some(k), Expr::Map(entries)) => entries
                .iter()
                .find(|(ek, _)| matches!(ek, Expr::Str(s) if s == k))
                .map_or(Expr::Other(vec![]), |(_, v)| v.clone()),
            (Some(k), a) => Expr::Index(Box::new(a.clone()), Box::new(Expr::str(k.clone()))),
            (None, Expr::List(items)) => items.get(index).cloned().unwrap_or(Expr::Other(vec![])),
            (None, a) if single && specs == 1 => a.clone(),
            (None, a) => Expr::Index(Box::new(a.clone()), Box::new(Expr::Num(index.to_string()))),
        };
        index += 1;
        pieces.push(value);
    }
    if !lit.is_empty() {
        pieces.push(Expr::Str(lit));
    }
    Expr::Concat(pieces)
}

/// How many conversions (not `%%`) a `%` format has.
fn count_percent_specs(fmt: &str) -> usize {
    let mut n = 0;
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('%') | None => {}
                Some(_) => n += 1,
            }
        }
    }
    n
}

/// `fmt.format(args)` for a literal `fmt`: its pieces and the values its fields name.
fn format(fmt: &str, args: &[Arg]) -> Expr {
    let positional: Vec<&Expr> = args
        .iter()
        .filter(|a| a.keyword.is_none())
        .map(|a| &a.value)
        .collect();
    let spread_pos = positional.iter().any(|e| matches!(e, Expr::Spread(_)));
    let kwargs = args
        .iter()
        .find(|a| a.keyword.as_deref() == Some("**"))
        .map(|a| &a.value);
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut auto = 0usize;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                lit.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                lit.push('}');
            }
            '{' => {
                // The field, to its closing brace (a nested `{width}` in the spec included).
                let mut field = String::new();
                let mut depth = 1;
                for c in chars.by_ref() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    field.push(c);
                }
                let name_end = field.find(['!', ':']).unwrap_or(field.len());
                let name = &field[..name_end];
                let head_end = name.find(['.', '[']).unwrap_or(name.len());
                let (head, mut rest) = name.split_at(head_end);
                let mut value = if head.is_empty() {
                    auto += 1;
                    nth_positional(&positional, spread_pos, auto - 1)
                } else if let Ok(i) = head.parse::<usize>() {
                    nth_positional(&positional, spread_pos, i)
                } else {
                    match args.iter().find(|a| a.keyword.as_deref() == Some(head)) {
                        Some(a) => a.value.clone(),
                        None => match kwargs {
                            Some(kw) => {
                                Expr::Index(Box::new(kw.clone()), Box::new(Expr::str(head)))
                            }
                            None => Expr::Other(vec![]),
                        },
                    }
                };
                // `.attr` and `[key]` after the name.
                while !rest.is_empty() {
                    if let Some(r) = rest.strip_prefix('.') {
                        let end = r.find(['.', '[']).unwrap_or(r.len());
                        value = Expr::field(value, &r[..end]);
                        rest = &r[end..];
                    } else if let Some(r) = rest.strip_prefix('[') {
                        let end = r.find(']').unwrap_or(r.len());
                        let key = &r[..end];
                        let key = if key.parse::<usize>().is_ok() {
                            Expr::Num(key.into())
                        } else {
                            Expr::str(key)
                        };
                        value = Expr::Index(Box::new(value), Box::new(key));
                        rest = r.get(end + 1..).unwrap_or("");
                    } else {
                        break;
                    }
                }
                if !lit.is_empty() {
                    pieces.push(Expr::Str(std::mem::take(&mut lit)));
                }
                pieces.push(value);
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() {
        pieces.push(Expr::Str(lit));
    }
    Expr::Concat(pieces)
}

/// The `i`th positional argument of a `.format` (unknown after a `*spread`).
fn nth_positional(positional: &[&Expr], spread: bool, i: usize) -> Expr {
    if spread {
        return Expr::Other(vec![]);
    }
    positional
        .get(i)
        .map_or(Expr::Other(vec![]), |e| (*e).clone())
}

/// Resolves one escape sequence (`\n`, `\x41`, `\u00e9`, `\101`, a backslash-newline) into
/// `out`; one Python does not resolve (`\N{…}`, an invalid one) is kept as written.
fn unescape(e: &str, out: &mut String) {
    let Some(body) = e.strip_prefix('\\') else {
        out.push_str(e);
        return;
    };
    let simple = match body {
        "\n" | "\r\n" | "\r" => Some(""),
        "\\" => Some("\\"),
        "'" => Some("'"),
        "\"" => Some("\""),
        "a" => Some("\x07"),
        "b" => Some("\x08"),
        "f" => Some("\x0c"),
        "n" => Some("\n"),
        "r" => Some("\r"),
        "t" => Some("\t"),
        "v" => Some("\x0b"),
        _ => None,
    };
    if let Some(s) = simple {
        out.push_str(s);
        return;
    }
    let code = if let Some(h) = body
        .strip_prefix('x')
        .or_else(|| body.strip_prefix('u'))
        .or_else(|| body.strip_prefix('U'))
    {
        u32::from_str_radix(h, 16).ok()
    } else if !body.is_empty()
        && body.len() <= 3
        && body.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        u32::from_str_radix(body, 8).ok()
    } else {
        None
    };
    match code.and_then(char::from_u32) {
        Some(c) => out.push(c),
        None => out.push_str(e),
    }
}

/// The class a type annotation names (its last dotted segment): `Optional[P]`, `P | None`,
/// `Union[P, None]`, `"P"` and `Annotated[P, …]` name `P`; any other generic names its
/// outer type (`List[str]` → `List`).
fn type_name(text: &str) -> Option<String> {
    let mut t = text.trim().trim_matches(['"', '\'']).trim();
    loop {
        let union = split_top(t, '|');
        if union.len() > 1 {
            t = union.into_iter().find(|p| *p != "None")?;
            continue;
        }
        if t.ends_with(']')
            && let Some(open) = t.find('[')
        {
            let head = t[..open].trim();
            let last = head.rsplit('.').next().unwrap_or(head);
            let inner = &t[open + 1..t.len() - 1];
            match last {
                "Optional" | "Annotated" | "Final" | "ClassVar" => {
                    t = split_top(inner, ',').into_iter().next()?;
                    continue;
                }
                "Union" => {
                    t = split_top(inner, ',').into_iter().find(|p| *p != "None")?;
                    continue;
                }
                _ => t = head,
            }
        }
        break;
    }
    let t = t.trim_matches(['"', '\'']);
    let last = t.rsplit('.').next().unwrap_or(t).trim();
    let ident =
        !last.is_empty() && last.chars().all(|c| c.is_alphanumeric() || c == '_') && last != "None";
    ident.then(|| last.to_string())
}

/// `t` split at `sep` outside brackets, each part trimmed.
fn split_top(t: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in t.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(t[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(t[start..].trim());
    parts
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

    /// A statement (commas inside it kept apart from the `; ` between statements).
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
            if let Some(ty) = &p.ty {
                write!(x, ": {ty}").unwrap();
            }
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

    /// The module body's statements.
    fn module(src: &str) -> String {
        block(&unit(src).funcs[0].body).replace("\u{1}", ", ")
    }

    /// Every function of the file, one a line.
    fn funcs(src: &str) -> String {
        let u = unit(src);
        u.funcs.iter().map(func).collect::<Vec<_>>().join("\n")
    }

    // ----- scope -----

    #[test]
    fn module_statements_functions_and_classes() {
        let src = "\
import redis
KEY = 'k'
def helper(x):
    return x
class Store(base.Base, Mixin, metaclass=Meta):
    key = 'a:' + KEY
    script = '''return 1'''
    other = key
    def __init__(self, client):
        self.r = client
    @staticmethod
    def make(a):
        return a
    @classmethod
    def build(cls, b):
        return cls(b)
    @property
    def name(self):
        return self.key
    class Inner:
        def go(me):
            pass
if x:
    def maybe():
        pass
";
        let u = unit(src);
        assert_eq!(
            u.classes,
            vec![
                Class {
                    name: "Store".into(),
                    bases: vec!["Base".into(), "Mixin".into()]
                },
                Class {
                    name: "Inner".into(),
                    bases: vec![]
                }
            ]
        );
        assert_eq!(
            funcs(src),
            "\
<module>() {KEY = \"k\"; branch {} {}}
helper(x) {return x}
Store.<class>(self;) {self.key = cat(\"a:\", KEY); self.script = \"return 1\"; self.other = self.key}
Store.__init__(self; client) {self.r = client}
Store.make(a) static {return a}
Store.build(cls; b) static {return cls(b)}
Store.name(self;) {return self.key}
Inner.go(me;) {}
maybe() {}"
        );
        assert_eq!(u.funcs[0].name, MODULE_BODY);
        assert_eq!(u.funcs[1].at, Position { line: 3, column: 1 });
        assert_eq!(u.funcs[2].receiver.as_deref(), Some("self"));
    }

    /// Class attributes assigned under an `if` are class attributes too, and read as such.
    #[test]
    fn class_bodies_under_branches() {
        assert_eq!(
            funcs(
                "class K(Generic[T]):\n    if X:\n        k = 'a'\n    else:\n        k = 'b'\n    j = k + ':'\n    z: int = 0\n"
            ),
            "<module>() {}\nK.<class>(self;) {branch {self.k = \"a\"} {self.k = \"b\"}; self.j = cat(self.k, \":\"); self.z = 0}"
        );
        assert_eq!(
            unit("class K(Generic[T]): pass\n").classes[0].bases,
            vec!["Generic"]
        );
    }

    #[test]
    fn nested_defs_and_lambdas_are_closures() {
        assert_eq!(
            funcs(
                "def outer(p):\n    def inner(k, *a):\n        return p.get(k)\n    f = lambda x: x + ':1'\n    return inner\n"
            ),
            "<module>() {}\nouter(p) {inner = lambda inner(k *a) {return p.get(k)}; f = lambda <lambda>(x) {return cat(x, \":1\")}; return inner}"
        );
        // A closure in a method keeps the method's receiver for its pushes.
        assert_eq!(
            funcs(
                "class A:\n    def m(self):\n        def add(k):\n            self.keys.append(k)\n        return add\n"
            ),
            "<module>() {}\nA.m(self;) {add = lambda add(k) {push self.keys <- k}; return add}"
        );
    }

    #[test]
    fn imports_bind_their_local_names() {
        let u = unit(
            "import a.b as c, d\nimport x.y\nfrom .m import y as z, w\nfrom . import q\nfrom p import *\nfrom __future__ import annotations\n",
        );
        let got: Vec<(&str, &str, Option<&str>)> = u
            .imports
            .iter()
            .map(|(l, m, n)| (l.as_str(), m.as_str(), n.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("c", "a.b", None),
                ("d", "d", None),
                ("x", "x", None),
                ("x.y", "x.y", None),
                ("z", ".m", Some("y")),
                ("w", ".m", Some("w")),
                ("q", ".", Some("q")),
            ]
        );
    }

    #[test]
    fn parameters() {
        assert_eq!(
            funcs(
                "def f(a, b=1, *args, c: Optional[redis.Pipeline] = None, d: 'P', e: P | None, g: List[str], /, **kw): pass\ndef h(a, *, b, p: Union[None, Pipe]): pass\n"
            ),
            "<module>() {}\nf(a b=1 *args c: Pipeline=None d: P e: P g: List **kw) {}\nh(a b p: Pipe) {}"
        );
    }

    // ----- assignments -----

    #[test]
    fn assignments() {
        assert_eq!(
            module(
                "a = e\na = b = r.pipeline()\nc: T = 1\nd: T\nx, y = 1, k\nself.x = v\nobj[k] = v\n[p, *q] = z\n"
            ),
            "{a = e; a = r.pipeline(); b = a; c = 1; (x, y) = [1, k]; self.x = v; obj[k] = v; (p, ?) = z}"
        );
    }

    #[test]
    fn augmented_assignments() {
        assert_eq!(
            module(
                "k += ':x'\nk += s\nn += 1\nks += [a, b]\nself.ks += (c,)\ns |= {d}\nn -= f(1)\nn *= 2\n"
            ),
            "{k = cat(k, \":x\"); k = cat(k, s); n = other(); push ks <- *[a, b]; push self.ks <- *[c]; push s <- *[d]; n = other(f(1)); n = other()}"
        );
    }

    #[test]
    fn walrus_assigns_before_its_statement() {
        assert_eq!(
            module("if (m := r.get(k)):\n    use(m)\nprint((n := 'a') + 'b')\n"),
            "{m = r.get(k); branch {use(m)} {}; n = \"a\"; print(cat(n, \"b\"))}"
        );
    }

    #[test]
    fn list_methods_are_pushes() {
        assert_eq!(
            funcs(
                "class A:\n    def m(self, ks):\n        ks.append(k)\n        ks.extend(more)\n        self.s.add(x)\n        ks.insert(0, y)\n        obj.items.append(z)\n        f().append(w)\n        ks.append(*v)\n"
            ),
            "<module>() {}\nA.m(self; ks) {push ks <- k; push ks <- *more; push self.s <- x; push ks <- y; obj.items.append(z); f().append(w); ks.append(*v)}"
        );
    }

    // ----- strings -----

    #[test]
    fn string_literals() {
        assert_eq!(
            module(
                "a = 'x\\n\\t\\\\\\'\\\"\\x41\\u00e9\\101\\d'\nb = r'\\n' b'y' rb'\\x'\nc = '''t\nu'''\nd = 'a\\\nb'\n"
            ),
            "{a = \"x\\n\\t\\\\'\\\"Aé A\\\\d\"; b = \"\\\\ny\\\\x\"; c = \"t\\nu\"; d = \"ab\"}"
                .replace("é A", "éA")
        );
    }

    #[test]
    fn f_strings_keep_their_values() {
        assert_eq!(
            module("a = f'k:{u!r:>10}:{{x}}'\nb = f'{x}'\nc = f'p' 'q' f'{y}'\nd = f'{\"lit\"}'\n"),
            "{a = cat(\"k:\", u, \":{x}\"); b = cat(x); c = cat(\"pq\", y); d = \"lit\"}"
        );
    }

    #[test]
    fn plus_is_text_unless_numbers_or_lists() {
        assert_eq!(
            module(
                "a = 'k:' + u + ':' + f(v)\nb = x + y\nc = n + 1\nd = g(n) - 1\ne = [a] + xs\nf = xs + [b]\ng = -1\n"
            ),
            "{a = cat(\"k:\", u, \":\", f(v)); b = cat(x, y); c = other(); d = other(g(n)); e = [a, *xs]; f = [*xs, b]; g = -1}"
        );
    }

    #[test]
    fn percent_formats() {
        assert_eq!(
            module(
                "a = '%s:%d' % (x, y)\nb = 'k:%s' % x\nc = '%(n)s-%(m)s' % {'n': u, 'm': v}\nd = '%s:%s' % t\ne = fmt % x\nf = 'r%%%-5s' % z\ng = '%(n)s' % d\n"
            ),
            "{a = cat(x, \":\", y); b = cat(\"k:\", x); c = cat(u, \"-\", v); d = cat(t[0], \":\", t[1]); e = fmt.%(x); f = cat(\"r%\", z); g = cat(d[\"n\"])}"
        );
    }

    #[test]
    fn str_format() {
        assert_eq!(
            module(
                "a = '{}:{}'.format(x, y)\nb = '{0}:{name}:{0}'.format(x, name=n)\nc = '{a.b}{c[k]}{d[0]:>5}{{}}'.format(a=p, c=q, d=r)\nd = fmt.format(x)\ne = '{k}'.format(**kw)\n"
            ),
            "{a = cat(x, \":\", y); b = cat(x, \":\", n, \":\", x); c = cat(p.b, q[\"k\"], r[0], \"{}\"); d = fmt.format(x); e = cat(kw[\"k\"])}"
        );
    }

    #[test]
    fn joins_and_conversions_to_text() {
        assert_eq!(
            module(
                "import json\na = ':'.join(parts)\nb = sep.join([x, y])\nc = os.path.join(p)\nd = str(k)\ne = k.encode('utf-8')\nf = v.decode(self.encoding)\ng = json.decode(s)\nh = str(a, b)\n"
            ),
            "{a = join(\":\", parts); b = join(sep, [x, y]); c = os.path.join(p); d = wrap(k); e = wrap(k); f = wrap(v); g = json.decode(s); h = str(a, b)}"
        );
    }

    // ----- calls -----

    #[test]
    fn calls() {
        assert_eq!(
            module(
                "f(x)\na.b.c(x, k=v, *xs, **kw)\na.b(x).c(y)\nh[k](z)\nf()()\nsuper().m(x)\nsum(x for x in xs)\na[0].f(x)\n"
            ),
            "{f(x); a.b.c(x, k=v, *xs, **=kw); a.b(x).c(y); (h[k])(z); (f())(); super.m(x); sum(comp(x for x in xs)); a[0].f(x)}"
        );
    }

    #[test]
    fn call_positions_are_where_the_name_starts() {
        let u = unit("x = 1\n  # é\nné = pipe.execute()\nrun(1)\nf()(2)\n");
        let calls: Vec<(String, Position)> = u
            .all_funcs()
            .into_iter()
            .flat_map(|(_, f)| f.body.iter())
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
                    "execute".into(),
                    Position {
                        line: 3,
                        column: 11
                    }
                ),
                ("run".into(), Position { line: 4, column: 1 }),
                ("".into(), Position { line: 5, column: 1 }),
            ]
        );
        let Stmt::Assign { at, .. } = &u.funcs[0].body[1] else {
            panic!("{:?}", u.funcs[0].body)
        };
        assert_eq!(*at, Position { line: 3, column: 1 });
    }

    // ----- statements -----

    #[test]
    fn branches() {
        assert_eq!(
            module(
                "if ok(x):\n    a = 1\nelif y:\n    a = 2\nelif z():\n    a = 3\nelse:\n    a = 4\nif q:\n    b = 1\n"
            ),
            "{ok(x); z(); branch {a = 1} {a = 2} {a = 3} {a = 4}; branch {b = 1} {}}"
        );
    }

    #[test]
    fn loops() {
        assert_eq!(
            module(
                "for k, v in items(d):\n    p.set(k, v)\nelse:\n    done()\nwhile more(c):\n    c += 1\nasync def f():\n    async for m in sub:\n        pass\n"
            ),
            "{for (k, v) in items(d) {p.set(k, v)}; done(); more(c); for - in - {c = other()}}"
        );
        assert_eq!(
            funcs("async def f():\n    async for m in sub:\n        g(m)\n"),
            "<module>() {}\nf() {for m in sub {g(m)}}"
        );
    }

    #[test]
    fn try_arms_and_finally() {
        assert_eq!(
            module(
                "try:\n    a()\nexcept E as e:\n    b()\nexcept:\n    c()\nelse:\n    d()\nfinally:\n    f()\ntry:\n    g()\nfinally:\n    h()\n"
            ),
            "{branch {a(); d()} {b()} {c()}; f(); g(); h()}"
        );
    }

    #[test]
    fn with_items_nest() {
        let u = unit(
            "with r.pipeline() as p, lock(x), open(f) as (a, b):\n    p.set('k', 1)\n\nasync with c as d:\n    pass\n",
        );
        assert_eq!(
            block(&u.funcs[0].body).replace("\u{1}", ", "),
            "{with r.pipeline() as p {with lock(x) as - {with open(f) as (a, b) {p.set(\"k\", 1)}}}; with c as d {}}"
        );
        let Stmt::With { end, .. } = &u.funcs[0].body[0] else {
            panic!()
        };
        // Just past the block's last character.
        assert_eq!(
            *end,
            Position {
                line: 2,
                column: 18
            }
        );
    }

    #[test]
    fn simple_statements() {
        assert_eq!(
            funcs(
                "def f(x):\n    global G\n    raise Err(g(x))\n    del d[k(x)]\n    assert ok(x), 'no'\n    yield x\n    yield from h(x)\n    await p.execute()\n    return\n    return a, b\n"
            ),
            "<module>() {}\nf(x) {other(Err(g(x))); other(d[k(x)]); other(ok(x)); wrap(x); wrap(h(x)); wrap(p.execute()); return; return [a, b]}"
        );
    }

    #[test]
    fn match_cases() {
        assert_eq!(
            module(
                "match cmd(x):\n    case 'a':\n        f()\n    case [b, c] if c:\n        g()\n"
            ),
            "{cmd(x); branch {f()} {g()} {}}"
        );
        assert_eq!(
            module("match x:\n    case 1:\n        f()\n    case _:\n        g()\n"),
            "{branch {f()} {g()}}"
        );
    }

    // ----- expressions -----

    #[test]
    fn expressions() {
        assert_eq!(
            module(
                "a = x if c else y\nb = x or y or z\nc = x and y\nd = not f(x)\ne = a < g(b)\nf = [x, *xs]\ng = (1, 2)\nh = {1, 2}\ni = {'k': v, **d}\nj = a[1:f(2)]\nk = a.b.c\nl = (x)\nm = None\nn = x if h(c) else y\no = a[1, 2]\np = ...\n"
            ),
            "{a = either(x, y); b = either(x, y, z); c = either(x, y); d = other(f(x)); e = other(g(b)); f = [x, *xs]; g = [1, 2]; h = [1, 2]; i = {\"k\": v, *d: other()}; j = a[other(f(2))]; k = a.b.c; l = x; m = None; h(c); n = either(x, y); o = a[[1, 2]]; p = other()}"
        );
    }

    #[test]
    fn comprehensions() {
        assert_eq!(
            module(
                "a = [k(x) for x in xs if x]\nb = {x for x in xs}\nc = list(x for x in xs)\nd = {k: v for k, v in d.items()}\ne = [y for row in rows for y in row]\n"
            ),
            "{a = comp(k(x) for x in xs); b = comp(x for x in xs); c = list(comp(x for x in xs)); d = comp([k, v] for (k, v) in d.items()); e = comp(y for y in comp(*row for row in rows))}"
        );
    }

    #[test]
    fn decorators_are_left_out_but_their_functions_kept() {
        assert_eq!(
            funcs("@app.route('/x')\ndef view():\n    return r.get('k')\n"),
            "<module>() {}\nview() {return r.get(\"k\")}"
        );
    }

    #[test]
    fn text_the_grammar_cannot_read_keeps_its_calls() {
        let u = unit("r.mget('a', 'b')\nx = = 2\ndef f(:\n    p.execute()\n");
        let mut calls = Vec::new();
        for (_, f) in u.all_funcs() {
            for s in &f.body {
                calls.push(s.clone());
            }
        }
        let text = format!("{calls:?}");
        assert!(text.contains("mget"), "{text}");
        assert!(text.contains("execute"), "{text}");
    }

    // ----- files -----

    /// Every Python fixture lowers without error.
    #[test]
    fn the_fixtures_lower() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code");
        let mut files = vec![root.join("shop.py")];
        for entry in std::fs::read_dir(root.join("tree/py")).unwrap() {
            files.push(entry.unwrap().path());
        }
        assert!(files.len() > 2);
        for f in files {
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
            p.set_language(&tree_sitter_python::LANGUAGE.into())
                .unwrap();
            p.parse(text, None).unwrap()
        };
        for shape in [
            "calls", "lists", "parens", "concat", "lambdas", "fstrings", "helper", "pipeline",
        ] {
            let (mut lo, mut hi) = (1, 2 * MAX_DEPTH);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if guard::deeper_than(&parse(&nested("py", shape, mid)), MAX_DEPTH) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let (ok, deeper) = (nested("py", shape, lo), nested("py", shape, hi));
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
        // Blocks are refused by their indentation before they are deep.
        let blocks = nested("py", "blocks", 400);
        assert!(matches!(
            lower(&blocks),
            Err(LowerError::Unreadable(Unreadable::PythonIndents))
        ));
        let fits = nested("py", "blocks", 290);
        let got = std::thread::Builder::new()
            .stack_size(READER_STACK)
            .spawn(move || lower(&fits).is_ok())
            .unwrap()
            .join()
            .unwrap();
        assert!(got);
    }

    /// The Python sources of the recorded corpus, when unpacked (not in CI): none errs or
    /// panics. `cargo test --lib lower::python -- --ignored`.
    #[test]
    #[ignore]
    fn the_corpus_lowers() {
        let root = std::path::Path::new("/tmp/keyplan-corpus-score/src");
        if !root.is_dir() {
            return;
        }
        let mut stack = vec![root.to_path_buf()];
        let (mut files, mut refused) = (0, Vec::new());
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "py")
                    && let Ok(text) = std::fs::read_to_string(&p)
                {
                    files += 1;
                    let got = std::thread::Builder::new()
                        .stack_size(READER_STACK)
                        .spawn(move || lower(&text).map(|_| ()).map_err(|e| e.to_string()))
                        .unwrap()
                        .join();
                    match got {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => refused.push(format!("{}: {e}", p.display())),
                        Err(_) => panic!("{} panicked", p.display()),
                    }
                }
            }
        }
        assert!(files > 0);
        assert!(
            refused.is_empty(),
            "{} of {files} refused: {refused:#?}",
            refused.len()
        );
    }
}
