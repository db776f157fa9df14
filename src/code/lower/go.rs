//! Go lowered into [`crate::code::ir`], with the grammar the Go reader uses (tree-sitter's Go
//! grammar). Types are looked through: a parameter's declared type gives its
//! [`ir::Param::ty`], conversions (`string(x)`, `[]byte(x)`, `T(x)`), type assertions
//! (`x.(T)`), `&x`, `*x` and parentheses are [`Expr::Wrap`], and declarations that are only
//! types lower to nothing.
//!
//! Choices this lowering makes where the model leaves room:
//!
//! - **Functions and methods**: every `func` of the file is a [`Func`]; a method's class is
//!   its receiver's type (without `*` or type parameters) and its receiver name is the
//!   [`Func::receiver`]. A struct type is an [`ir::Class`] whose bases are its embedded
//!   types (last name segment). Function literals are [`Expr::Lambda`]s where they are
//!   written.
//! - **Packages**: `package keys` is the unit's [`Unit::package`]; an import is `name →
//!   (path, whole package)`, the name being its alias or the package name its path gives
//!   (`github.com/redis/go-redis/v9` → `redis`). A name the file declares nowhere but
//!   qualifies other names with (`keys.User(id)`, `keys.Prefix`) is a package too (imported by
//!   another file, or written without imports): it is added as an import of that name.
//! - **Results**: a function's one declared result type (last segment, `*` and type
//!   arguments left out) is its [`Func::returns`].
//! - **Assignments**: `a, b := x, y` (and `=`, `var`, `const`) is one assignment per name,
//!   in order; `a, err := f()` (one value for several names) assigns a [`Target::Tuple`],
//!   and `return a, b` returns an [`Expr::List`] of the values, so a function's several
//!   results reach its callers' names. `v, ok := m[k]`, `v, ok := x.(T)` and `v, ok := <-c`
//!   give the first name the value. `_` is [`Target::Other`]. `var xs []T` (no value) is an
//!   empty list, `var m map[K]V` an empty map; `x += y` is `x = Concat[x, y]` unless `y` is a
//!   number. A `const` without a value (in an `iota` block) is not kept.
//! - **Lists**: `xs = append(xs, a, b...)` is one [`Stmt::Push`] per value (a spread as
//!   [`Expr::Spread`]); `ys := append(xs, a)` is `ys = xs` and then the pushes; any other
//!   `append(xs, a)` is the list `[...xs, a]`. Composite literals of slices and arrays are
//!   [`Expr::List`], of maps [`Expr::Map`]; `make([]T, …)` is an empty list, `make(map…)` an
//!   empty map. A struct literal `T{f: v}` (`&T{…}`, `pkg.T{…}`) is a call of `T` with
//!   [`ir::Call::new`] set and its fields as keyword arguments (positional when unnamed).
//! - **Strings**: `+` is [`Expr::Concat`] unless a side is a number literal and the other is
//!   not text; `fmt.Sprintf` with a literal format whose verbs match its values, and
//!   `fmt.Sprint`, are [`Expr::Concat`]; `strings.Join(xs, sep)` is [`Expr::Join`];
//!   `strconv.Itoa`/`FormatInt`/`FormatUint` and `fmt.Sprint(x)` of one value are
//!   [`Expr::Wrap`].
//! - **Control flow**: `if` (its initializer before it, its condition's calls in a
//!   [`Stmt::Expr`] before it) is a [`Stmt::Branch`] with an empty arm when it has no
//!   `else`; `switch`/`select` is one arm per case (and an empty one without `default`); `for
//!   init; cond; post` puts `init` before the loop and `post` at the end of its body; `for k,
//!   v := range xs` binds `v` to the elements of `xs`, `for k := range xs` binds `k` to
//!   values nothing is known of. `defer f(x)` runs `f(x)` when its function ends: deferred
//!   calls are put at the end of the function's body, last deferred first. `go f(x)` is the
//!   call. Labels, `break`, `continue`, `goto`, `fallthrough`, `x++` are nothing.

use super::{Columns, LowerError};
use crate::code::Position;
use crate::code::guard;
use crate::code::ir::{Arg, Call, Class, Expr, Func, MODULE_BODY, Param, Stmt, Target, Unit};
use std::collections::HashSet;
use tree_sitter::{Node, Parser};

/// `text` lowered into the model. Refused as the Go reader refuses it: no tree, or a tree
/// deeper than [`guard::MAX_DEPTH`].
pub fn lower(text: &str) -> Result<Unit, LowerError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_go::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(LowerError::NoTree)?;
    guard::check_depth(&tree)?;
    let mut l = Lowerer {
        src: text.as_bytes(),
        columns: Columns::new(text),
        unit: Unit::default(),
        effects: 0,
        pre: Vec::new(),
        defers: Vec::new(),
    };
    l.source_file(tree.root_node());
    Ok(l.unit)
}

struct Lowerer<'s> {
    src: &'s [u8],
    columns: Columns<'s>,
    unit: Unit,
    /// Calls and closures lowered so far: an expression whose lowering raised it has effects.
    effects: usize,
    /// Statements the expression being lowered needs before its statement.
    pre: Vec<Stmt>,
    /// The calls the function being lowered defers, in the order written.
    defers: Vec<Stmt>,
}

/// A node's named children, comments left out.
fn named<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|c| c.kind() != "comment")
        .collect()
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

/// `pieces` as one value: a lone literal is that literal, a lone value its text.
fn concat(mut pieces: Vec<Expr>) -> Expr {
    match pieces.len() {
        0 => Expr::Str(String::new()),
        1 => match pieces.pop() {
            Some(s @ Expr::Str(_)) => s,
            Some(x) => Expr::Wrap(Box::new(x)),
            None => Expr::Str(String::new()),
        },
        _ => Expr::Concat(pieces),
    }
}

/// Text whatever it holds.
fn texty(e: &Expr) -> bool {
    matches!(e, Expr::Str(_) | Expr::Concat(_) | Expr::Join(..))
}

/// The value a target holds, as an expression.
fn target_expr(t: &Target) -> Option<Expr> {
    match t {
        Target::Name(n) => Some(Expr::Name(n.clone())),
        Target::Field(o, f) => Some(Expr::Field(Box::new(o.clone()), f.clone())),
        Target::Index(o, i) => Some(Expr::Index(Box::new(o.clone()), Box::new(i.clone()))),
        Target::Tuple(_) | Target::Other => None,
    }
}

/// The text of a Go escape sequence (`\n`, `\x41`, `\101`, `\u00e9`, `\U0001F600`, `\"`).
fn unescape(e: &str, out: &mut String) {
    let body = e.get(1..).unwrap_or("");
    let hex = |h: &str| u32::from_str_radix(h, 16).ok().and_then(char::from_u32);
    let ch = match body.chars().next() {
        Some('a') => Some('\u{7}'),
        Some('b') => Some('\u{8}'),
        Some('f') => Some('\u{c}'),
        Some('n') => Some('\n'),
        Some('r') => Some('\r'),
        Some('t') => Some('\t'),
        Some('v') => Some('\u{b}'),
        Some('x' | 'u' | 'U') => hex(&body[1..]),
        Some('0'..='7') => u32::from_str_radix(body, 8).ok().and_then(char::from_u32),
        _ => None,
    };
    match ch {
        Some(c) => out.push(c),
        None => out.push_str(body),
    }
}

/// `fmt.Sprintf`'s text: each verb (`%s`, `%d`, `%v`, `%05.2f`, `%[1]s` …) takes the next
/// value, `%%` is `%`; `None` when the verbs and the values do not line up.
fn printf(fmt: &str, args: Vec<Expr>) -> Option<Expr> {
    let mut pieces = Vec::new();
    let mut args = args.into_iter();
    let mut lit = String::new();
    let mut chars = fmt.chars().peekable();
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
        // Flags, width, precision and argument indexes, then the verb letter.
        while chars
            .peek()
            .is_some_and(|c| !c.is_ascii_alphabetic() && *c != '%')
        {
            if chars.next() == Some('[') {
                // An explicit argument index: values no longer taken in order.
                return None;
            }
        }
        let verb = chars.next()?;
        let value = args.next()?;
        push_piece(&mut pieces, Expr::Str(std::mem::take(&mut lit)));
        if verb == 'q' {
            push_piece(&mut pieces, Expr::Str("\"".into()));
            push_piece(&mut pieces, value);
            lit.push('"');
        } else {
            push_piece(&mut pieces, value);
        }
    }
    if args.next().is_some() {
        return None;
    }
    push_piece(&mut pieces, Expr::Str(lit));
    Some(concat(pieces))
}

/// The name a package's import path gives it: its last segment, a major version suffix
/// (`/v9`, `.v5`) and a `go-` prefix or `-go`/`.go` suffix left out.
fn package_name(path: &str) -> Option<String> {
    let mut segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let is_version = |s: &str| {
        s.strip_prefix('v')
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
    };
    if segs.len() > 1 && segs.last().is_some_and(|s| is_version(s)) {
        segs.pop();
    }
    let mut last = *segs.last()?;
    if let Some((head, v)) = last.rsplit_once('.')
        && is_version(v)
    {
        last = head;
    }
    let last = last.strip_prefix("go-").unwrap_or(last);
    let last = last
        .strip_suffix("-go")
        .or_else(|| last.strip_suffix(".go"))
        .unwrap_or(last);
    let name: String = last
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect();
    (!name.is_empty()).then_some(name)
}

impl<'s> Lowerer<'s> {
    fn t(&self, n: Node<'_>) -> &'s str {
        n.utf8_text(self.src).unwrap_or("")
    }

    fn at(&mut self, n: Node<'_>) -> Position {
        self.columns.at(n)
    }

    /// The statements waiting for the next statement, put before it.
    fn flush(&mut self, out: &mut Vec<Stmt>) {
        out.append(&mut self.pre);
    }

    /// `e` lowered, and whether it has effects (a call or a closure in it).
    fn expr_effects(&mut self, n: Node<'_>) -> (Expr, bool) {
        let before = self.effects;
        let e = self.expr(n);
        (e, self.effects > before)
    }

    /// A condition or a value read for its effects: its calls as a statement.
    fn effects_of(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let (e, effects) = self.expr_effects(n);
        self.flush(out);
        if effects {
            out.push(Stmt::Expr(e));
        }
    }

    // ----- the file -----

    fn source_file(&mut self, root: Node<'_>) {
        self.unit.funcs.push(Func {
            name: MODULE_BODY.into(),
            at: Position { line: 1, column: 1 },
            ..Func::default()
        });
        let mut body = Vec::new();
        for c in named(root) {
            match c.kind() {
                "package_clause" => {
                    self.unit.package = named(c).first().map(|p| self.t(*p).to_string());
                }
                "import_declaration" => self.imports(c),
                "function_declaration" | "method_declaration" => {
                    let f = self.function(c);
                    self.unit.funcs.push(f);
                }
                "type_declaration" => self.types(c),
                _ => self.stmt(c, &mut body),
            }
        }
        self.flush(&mut body);
        self.unit.funcs[0].body = body;
        self.packages_used(root);
    }

    /// `import "a/b"`, `import x "a/b"`, `import ( … )`.
    fn imports(&mut self, n: Node<'_>) {
        let mut specs = Vec::new();
        for c in named(n) {
            match c.kind() {
                "import_spec" => specs.push(c),
                "import_spec_list" => {
                    specs.extend(named(c).into_iter().filter(|s| s.kind() == "import_spec"))
                }
                _ => {}
            }
        }
        for s in specs {
            let Some(path) = s.child_by_field_name("path").map(|p| self.string(p)) else {
                continue;
            };
            let local = match s.child_by_field_name("name") {
                Some(a) if a.kind() == "package_identifier" => Some(self.t(a).to_string()),
                Some(_) => None,
                None => package_name(&path),
            };
            if let Some(local) = local {
                self.unit.imports.push((local, path, None));
            }
        }
    }

    /// Names the file qualifies others with but declares nowhere: packages (see the module
    /// docs). One pass over the tree, with a cursor (no recursion).
    fn packages_used(&mut self, root: Node<'_>) {
        let mut declared: HashSet<&'s str> = HashSet::new();
        let mut qualifiers: Vec<&'s str> = Vec::new();
        let mut cur = root.walk();
        'walk: loop {
            let n = cur.node();
            match n.kind() {
                "parameter_declaration"
                | "variadic_parameter_declaration"
                | "var_spec"
                | "const_spec"
                | "function_declaration"
                | "type_spec"
                | "type_alias" => {
                    let mut c = n.walk();
                    for name in n.children_by_field_name("name", &mut c) {
                        declared.insert(self.t(name));
                    }
                }
                "short_var_declaration" | "range_clause" | "receive_statement" => {
                    if let Some(l) = n.child_by_field_name("left") {
                        for name in named(l) {
                            declared.insert(self.t(name));
                        }
                    }
                }
                "type_switch_statement" => {
                    if let Some(a) = n.child_by_field_name("alias") {
                        for name in named(a) {
                            declared.insert(self.t(name));
                        }
                    }
                }
                "selector_expression" => {
                    if let Some(o) = n.child_by_field_name("operand")
                        && o.kind() == "identifier"
                    {
                        qualifiers.push(self.t(o));
                    }
                }
                _ => {}
            }
            if cur.goto_first_child() {
                continue;
            }
            loop {
                if cur.goto_next_sibling() {
                    continue 'walk;
                }
                if !cur.goto_parent() {
                    break 'walk;
                }
            }
        }
        let imported: HashSet<String> = self.unit.imports.iter().map(|i| i.0.clone()).collect();
        let mut added: HashSet<&str> = HashSet::new();
        for q in qualifiers {
            if !declared.contains(q) && !imported.contains(q) && added.insert(q) {
                self.unit.imports.push((q.to_string(), q.to_string(), None));
            }
        }
    }

    /// `type A struct { … }`: a class whose bases are its embedded types.
    fn types(&mut self, n: Node<'_>) {
        for spec in named(n) {
            if spec.kind() != "type_spec" {
                continue;
            }
            let (Some(name), Some(ty)) = (
                spec.child_by_field_name("name"),
                spec.child_by_field_name("type"),
            ) else {
                continue;
            };
            if ty.kind() != "struct_type" {
                continue;
            }
            let mut bases = Vec::new();
            for list in named(ty) {
                for field in named(list) {
                    if field.kind() == "field_declaration"
                        && field.child_by_field_name("name").is_none()
                        && let Some(t) = field.child_by_field_name("type")
                        && let Some(b) = self.type_name(t)
                    {
                        bases.push(b);
                    }
                }
            }
            self.unit.classes.push(Class {
                name: self.t(name).to_string(),
                bases,
            });
        }
    }

    /// A type's own name, last segment (`*redis.Client` → `Client`, `List[T]` → `List`).
    fn type_name(&self, t: Node<'_>) -> Option<String> {
        match t.kind() {
            "type_identifier" => Some(self.t(t).to_string()),
            "qualified_type" => t.child_by_field_name("name").map(|n| self.t(n).to_string()),
            "pointer_type" | "parenthesized_type" => {
                named(t).first().and_then(|i| self.type_name(*i))
            }
            "generic_type" => t
                .child_by_field_name("type")
                .and_then(|i| self.type_name(i)),
            _ => None,
        }
    }

    // ----- functions -----

    /// A function, method or function literal.
    fn function(&mut self, n: Node<'_>) -> Func {
        let at = self.at(n);
        let name = match n.kind() {
            "func_literal" => "<lambda>".to_string(),
            _ => n
                .child_by_field_name("name")
                .map_or_else(String::new, |x| self.t(x).to_string()),
        };
        let (mut class, mut receiver) = (None, None);
        if let Some(r) = n.child_by_field_name("receiver")
            && let Some(p) = named(r).into_iter().find(|p| {
                matches!(
                    p.kind(),
                    "parameter_declaration" | "variadic_parameter_declaration"
                )
            })
        {
            class = p
                .child_by_field_name("type")
                .and_then(|t| self.type_name(t));
            receiver = p
                .child_by_field_name("name")
                .map(|x| self.t(x).to_string())
                .filter(|x| x != "_");
        }
        let params = n
            .child_by_field_name("parameters")
            .map_or_else(Vec::new, |p| self.params(p));
        // One result: its type; `(T, error)` and named results give none.
        let returns = n
            .child_by_field_name("result")
            .and_then(|r| self.type_name(r));
        let pre = std::mem::take(&mut self.pre);
        let defers = std::mem::take(&mut self.defers);
        let mut body = Vec::new();
        if let Some(b) = n.child_by_field_name("body") {
            self.block(b, &mut body);
            self.flush(&mut body);
        }
        let deferred = std::mem::replace(&mut self.defers, defers);
        body.extend(deferred.into_iter().rev());
        self.pre = pre;
        Func {
            name,
            class,
            receiver,
            params,
            body,
            at,
            is_static: false,
            returns,
        }
    }

    fn params(&mut self, list: Node<'_>) -> Vec<Param> {
        let mut out = Vec::new();
        for p in named(list) {
            let rest = match p.kind() {
                "parameter_declaration" => false,
                "variadic_parameter_declaration" => true,
                _ => continue,
            };
            let ty = p
                .child_by_field_name("type")
                .and_then(|t| self.type_name(t));
            let mut c = p.walk();
            let names: Vec<String> = p
                .children_by_field_name("name", &mut c)
                .map(|x| self.t(x).to_string())
                .collect();
            // `func(string, int)`: unnamed, but each takes its place.
            let names = if names.is_empty() {
                vec!["_".to_string()]
            } else {
                names
            };
            for name in names {
                out.push(Param {
                    name,
                    rest,
                    ty: ty.clone(),
                    ..Param::default()
                });
            }
        }
        out
    }

    /// A block's statements (`{ … }`, or a case's statement list).
    fn block(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        for s in named(n) {
            self.stmt(s, out);
        }
    }

    // ----- statements -----

    fn stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        match n.kind() {
            "block" | "statement_list" => self.block(n, out),
            "expression_statement" => {
                for e in named(n) {
                    let x = self.expr(e);
                    self.flush(out);
                    out.push(Stmt::Expr(x));
                }
            }
            "short_var_declaration" | "assignment_statement" => self.assignment(n, out),
            "var_declaration" | "const_declaration" => {
                for spec in named(n) {
                    match spec.kind() {
                        "var_spec" | "const_spec" => self.spec(spec, out),
                        "var_spec_list" => {
                            for s in named(spec) {
                                if s.kind() == "var_spec" {
                                    self.spec(s, out);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            "return_statement" => {
                let at = self.at(n);
                let values: Vec<Expr> = named(n)
                    .into_iter()
                    .flat_map(|l| match l.kind() {
                        "expression_list" => named(l),
                        _ => vec![l],
                    })
                    .map(|v| self.expr(v))
                    .collect();
                self.flush(out);
                let value = match values.len() {
                    0 => None,
                    1 => values.into_iter().next(),
                    _ => Some(Expr::List(values)),
                };
                out.push(Stmt::Return(value, at));
            }
            "if_statement" => self.if_stmt(n, out),
            "for_statement" => self.for_stmt(n, out),
            "expression_switch_statement" | "type_switch_statement" | "select_statement" => {
                self.switch(n, out)
            }
            "go_statement" => {
                for e in named(n) {
                    let x = self.expr(e);
                    self.flush(out);
                    out.push(Stmt::Expr(x));
                }
            }
            "defer_statement" => {
                let mut stmts = Vec::new();
                for e in named(n) {
                    let x = self.expr(e);
                    self.flush(&mut stmts);
                    stmts.push(Stmt::Expr(x));
                }
                self.defers.extend(stmts);
            }
            "labeled_statement" => {
                for c in named(n) {
                    if c.kind() != "label_name" {
                        self.stmt(c, out);
                    }
                }
            }
            "send_statement" | "inc_statement" | "dec_statement" => {
                let mut kept = Vec::new();
                for c in named(n) {
                    let (e, effects) = self.expr_effects(c);
                    if effects {
                        kept.push(e);
                    }
                }
                self.flush(out);
                if !kept.is_empty() {
                    out.push(Stmt::Expr(Expr::Other(kept)));
                }
            }
            "receive_statement" => {
                let at = self.at(n);
                let value = match n.child_by_field_name("right") {
                    Some(r) => self.expr(r),
                    None => Expr::Other(Vec::new()),
                };
                self.flush(out);
                match n.child_by_field_name("left") {
                    Some(l) => {
                        let targets: Vec<Target> =
                            named(l).into_iter().map(|t| self.target(t)).collect();
                        for (i, t) in targets.into_iter().enumerate() {
                            let v = if i == 0 {
                                value.clone()
                            } else {
                                Expr::Other(Vec::new())
                            };
                            out.push(Stmt::Assign {
                                target: t,
                                value: v,
                                at,
                            });
                        }
                    }
                    None => out.push(Stmt::Expr(value)),
                }
            }
            "function_declaration" | "method_declaration" => {
                let f = self.function(n);
                self.unit.funcs.push(f);
            }
            "type_declaration"
            | "empty_statement"
            | "break_statement"
            | "continue_statement"
            | "goto_statement"
            | "fallthrough_statement"
            | "comment"
            | "package_clause"
            | "import_declaration" => {}
            "ERROR" => {
                for c in named(n) {
                    self.stmt(c, out);
                }
            }
            _ => {
                let x = self.expr(n);
                self.flush(out);
                out.push(Stmt::Expr(x));
            }
        }
    }

    /// `var a, b T = x, y`, `const c = "x"`.
    fn spec(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let at = self.at(n);
        let mut c = n.walk();
        let names: Vec<Node<'_>> = n.children_by_field_name("name", &mut c).collect();
        let values: Vec<Node<'_>> = n.child_by_field_name("value").map_or_else(Vec::new, named);
        if values.is_empty() {
            // No value: a slice or map type's zero value is an empty one.
            let zero = match n.child_by_field_name("type").map(|t| t.kind()) {
                Some("slice_type" | "array_type") => Expr::List(Vec::new()),
                Some("map_type") => Expr::Map(Vec::new()),
                _ => return,
            };
            for name in names {
                out.push(Stmt::Assign {
                    target: self.target(name),
                    value: zero.clone(),
                    at,
                });
            }
            return;
        }
        self.bind(names, values, at, out);
    }

    /// `a, b := x, y`, `a = append(a, x)`, `a += "x"`.
    fn assignment(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let at = self.at(n);
        let lefts = n.child_by_field_name("left").map_or_else(Vec::new, named);
        let rights = n.child_by_field_name("right").map_or_else(Vec::new, named);
        let op = n.child_by_field_name("operator").map_or(
            if n.kind() == "short_var_declaration" {
                ":="
            } else {
                "="
            },
            |o| self.t(o),
        );
        match op {
            "=" | ":=" => self.bind(lefts, rights, at, out),
            "+=" => {
                for (l, r) in lefts.into_iter().zip(rights) {
                    let target = self.target(l);
                    let (value, _) = self.expr_effects(r);
                    self.flush(out);
                    let value = match (target_expr(&target), value) {
                        (_, Expr::Num(_)) => Expr::Other(Vec::new()),
                        (Some(cur), v) => {
                            let mut pieces = Vec::new();
                            push_piece(&mut pieces, cur);
                            push_piece(&mut pieces, v);
                            concat(pieces)
                        }
                        (None, v) => Expr::Other(vec![v]),
                    };
                    out.push(Stmt::Assign { target, value, at });
                }
            }
            _ => {
                for (l, r) in lefts.into_iter().zip(rights) {
                    let target = self.target(l);
                    let (value, effects) = self.expr_effects(r);
                    self.flush(out);
                    let kept = if effects { vec![value] } else { Vec::new() };
                    out.push(Stmt::Assign {
                        target,
                        value: Expr::Other(kept),
                        at,
                    });
                }
            }
        }
    }

    /// Names given values: one each, several from one call, or a value and a flag.
    fn bind(
        &mut self,
        lefts: Vec<Node<'_>>,
        rights: Vec<Node<'_>>,
        at: Position,
        out: &mut Vec<Stmt>,
    ) {
        if lefts.len() == rights.len() {
            for (l, r) in lefts.into_iter().zip(rights) {
                let target = self.target(l);
                if self.append_to(&target, r, at, out) {
                    continue;
                }
                let value = self.expr(r);
                self.flush(out);
                out.push(Stmt::Assign { target, value, at });
            }
            return;
        }
        let [r] = rights.as_slice() else {
            // Counts that do not match: the values read for their effects.
            for r in rights {
                self.effects_of(r, out);
            }
            return;
        };
        let mut targets: Vec<Target> = lefts.into_iter().map(|t| self.target(t)).collect();
        // `v, ok := m[k]`, `v, ok := x.(T)`, `v, ok := <-c`: the value and a flag.
        let comma_ok = matches!(
            r.kind(),
            "index_expression" | "type_assertion_expression" | "unary_expression"
        );
        let value = self.expr(*r);
        self.flush(out);
        if comma_ok && !targets.is_empty() {
            let first = targets.remove(0);
            out.push(Stmt::Assign {
                target: first,
                value,
                at,
            });
            for t in targets {
                out.push(Stmt::Assign {
                    target: t,
                    value: Expr::Other(Vec::new()),
                    at,
                });
            }
        } else {
            out.push(Stmt::Assign {
                target: Target::Tuple(targets),
                value,
                at,
            });
        }
    }

    /// `xs = append(xs, a, b...)` (and `ys := append(xs, a)`): pushes onto `target`; false
    /// when `value` is not a call of `append` with a list.
    fn append_to(
        &mut self,
        target: &Target,
        value: Node<'_>,
        at: Position,
        out: &mut Vec<Stmt>,
    ) -> bool {
        if value.kind() != "call_expression"
            || value
                .child_by_field_name("function")
                .is_none_or(|f| f.kind() != "identifier" || self.t(f) != "append")
            || matches!(target, Target::Other | Target::Tuple(_))
        {
            return false;
        }
        let Some(args) = value.child_by_field_name("arguments") else {
            return false;
        };
        let args = named(args);
        let Some((first, rest)) = args.split_first() else {
            return false;
        };
        let list = self.expr(*first);
        let values: Vec<Expr> = rest.iter().map(|a| self.expr(*a)).collect();
        self.effects += 1;
        self.flush(out);
        if target_expr(target).as_ref() != Some(&list) {
            out.push(Stmt::Assign {
                target: target.clone(),
                value: list,
                at,
            });
        }
        for v in values {
            out.push(Stmt::Push {
                target: target.clone(),
                value: v,
                at,
            });
        }
        true
    }

    /// Where an assignment puts its value.
    fn target(&mut self, n: Node<'_>) -> Target {
        match n.kind() {
            "identifier" if self.t(n) == "_" => Target::Other,
            "identifier" => Target::Name(self.t(n).to_string()),
            "selector_expression" => match (
                n.child_by_field_name("operand"),
                n.child_by_field_name("field"),
            ) {
                (Some(o), Some(f)) => {
                    let o = self.expr(o);
                    Target::Field(o, self.t(f).to_string())
                }
                _ => Target::Other,
            },
            "index_expression" => match (
                n.child_by_field_name("operand"),
                n.child_by_field_name("index"),
            ) {
                (Some(o), Some(i)) => {
                    let o = self.expr(o);
                    Target::Index(o, self.expr(i))
                }
                _ => Target::Other,
            },
            "parenthesized_expression" => match named(n).as_slice() {
                [inner] => self.target(*inner),
                _ => Target::Other,
            },
            // `*p = v`: what `p` points at.
            "unary_expression" => match n.child_by_field_name("operand") {
                Some(o) => self.target(o),
                None => Target::Other,
            },
            _ => Target::Other,
        }
    }

    fn if_stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        if let Some(i) = n.child_by_field_name("initializer") {
            self.stmt(i, out);
        }
        if let Some(c) = n.child_by_field_name("condition") {
            self.effects_of(c, out);
        }
        let mut yes = Vec::new();
        if let Some(c) = n.child_by_field_name("consequence") {
            self.stmt(c, &mut yes);
        }
        let mut no = Vec::new();
        if let Some(a) = n.child_by_field_name("alternative") {
            self.stmt(a, &mut no);
        }
        out.push(Stmt::Branch(vec![yes, no]));
    }

    fn for_stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let mut body = Vec::new();
        let mut after = Vec::new();
        let (mut bind, mut over) = (None, None);
        for c in named(n) {
            if n.child_by_field_name("body") == Some(c) {
                continue;
            }
            match c.kind() {
                "for_clause" => {
                    if let Some(i) = c.child_by_field_name("initializer") {
                        self.stmt(i, out);
                    }
                    if let Some(k) = c.child_by_field_name("condition") {
                        self.effects_of(k, &mut body);
                    }
                    if let Some(u) = c.child_by_field_name("update") {
                        self.stmt(u, &mut after);
                    }
                }
                "range_clause" => {
                    let Some(r) = c.child_by_field_name("right") else {
                        continue;
                    };
                    let names = c.child_by_field_name("left").map_or_else(Vec::new, named);
                    let (xs, _) = self.expr_effects(r);
                    self.flush(out);
                    match names.as_slice() {
                        [] => over = Some(Expr::Other(vec![xs])),
                        [k] => {
                            // The index (or a map's key): values nothing is known of.
                            bind = Some(self.target(*k));
                            over = Some(Expr::Other(vec![xs]));
                        }
                        [k, v, ..] => {
                            let k = self.target(*k);
                            if !matches!(k, Target::Other) {
                                let at = self.at(c);
                                body.push(Stmt::Assign {
                                    target: k,
                                    value: Expr::Other(Vec::new()),
                                    at,
                                });
                            }
                            bind = Some(self.target(*v));
                            over = Some(xs);
                        }
                    }
                }
                _ => self.effects_of(c, &mut body),
            }
        }
        if let Some(b) = n.child_by_field_name("body") {
            self.stmt(b, &mut body);
        }
        body.append(&mut after);
        out.push(Stmt::Loop { bind, over, body });
    }

    /// `switch`, type `switch` and `select`: one arm per case, an empty one without `default`.
    fn switch(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        if let Some(i) = n.child_by_field_name("initializer") {
            self.stmt(i, out);
        }
        if let Some(v) = n.child_by_field_name("value") {
            match n.child_by_field_name("alias").map(named) {
                // `switch x := v.(type)`: `x` is the value in every case.
                Some(names) if !names.is_empty() => {
                    let at = self.at(n);
                    let value = self.expr(v);
                    self.flush(out);
                    let target = self.target(names[0]);
                    out.push(Stmt::Assign {
                        target,
                        value: Expr::Wrap(Box::new(value)),
                        at,
                    });
                }
                _ => self.effects_of(v, out),
            }
        }
        let mut arms = Vec::new();
        let mut default = false;
        for case in named(n) {
            let mut arm = Vec::new();
            match case.kind() {
                "expression_case" | "type_case" | "communication_case" | "default_case" => {
                    default |= case.kind() == "default_case";
                    for c in named(case) {
                        let field = |f: &str| case.child_by_field_name(f) == Some(c);
                        let is_type = case.kind() == "type_case"
                            && (c.kind().ends_with("_type") || c.kind() == "type_identifier");
                        if field("value") || field("type") || is_type {
                            if case.kind() == "expression_case" {
                                self.effects_of(c, &mut arm);
                            }
                        } else {
                            self.stmt(c, &mut arm);
                        }
                    }
                    arms.push(arm);
                }
                _ => {}
            }
        }
        if !default {
            arms.push(Vec::new());
        }
        out.push(Stmt::Branch(arms));
    }

    // ----- expressions -----

    fn expr(&mut self, n: Node<'_>) -> Expr {
        match n.kind() {
            "interpreted_string_literal" | "raw_string_literal" => Expr::Str(self.string(n)),
            "int_literal" | "float_literal" | "imaginary_literal" | "rune_literal" | "true"
            | "false" | "nil" | "iota" => Expr::Num(self.t(n).to_string()),
            "identifier" | "field_identifier" | "package_identifier" | "type_identifier" => {
                Expr::Name(self.t(n).to_string())
            }
            "selector_expression" => match (
                n.child_by_field_name("operand"),
                n.child_by_field_name("field"),
            ) {
                (Some(o), Some(f)) => {
                    let o = self.expr(o);
                    Expr::field(o, self.t(f))
                }
                _ => self.other(n),
            },
            "index_expression" => match (
                n.child_by_field_name("operand"),
                n.child_by_field_name("index"),
            ) {
                (Some(o), Some(i)) => {
                    let o = self.expr(o);
                    Expr::Index(Box::new(o), Box::new(self.expr(i)))
                }
                _ => self.other(n),
            },
            "call_expression" => self.call(n),
            "func_literal" => {
                self.effects += 1;
                let f = self.function(n);
                Expr::Lambda(Box::new(f))
            }
            "parenthesized_expression" => match named(n).as_slice() {
                [inner] => Expr::Wrap(Box::new(self.expr(*inner))),
                _ => self.other(n),
            },
            "type_assertion_expression" | "type_conversion_expression" => {
                match n.child_by_field_name("operand") {
                    Some(o) => Expr::Wrap(Box::new(self.expr(o))),
                    None => self.other(n),
                }
            }
            "unary_expression" => {
                let op = n.child_by_field_name("operator").map(|o| self.t(o));
                match (op, n.child_by_field_name("operand")) {
                    (Some("&" | "*"), Some(o)) => Expr::Wrap(Box::new(self.expr(o))),
                    _ => self.other(n),
                }
            }
            "binary_expression" => self.binary(n),
            "composite_literal" => self.composite(n),
            "variadic_argument" => match named(n).as_slice() {
                [inner] => Expr::Spread(Box::new(self.expr(*inner))),
                _ => self.other(n),
            },
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

    /// A string literal's text (escapes resolved; a raw string's carriage returns dropped,
    /// as Go drops them).
    fn string(&self, n: Node<'_>) -> String {
        let mut out = String::new();
        for c in named(n) {
            match c.kind() {
                "escape_sequence" => unescape(self.t(c), &mut out),
                "raw_string_literal_content" => {
                    out.extend(self.t(c).chars().filter(|&ch| ch != '\r'))
                }
                _ => out.push_str(self.t(c)),
            }
        }
        out
    }

    fn binary(&mut self, n: Node<'_>) -> Expr {
        let (Some(l), Some(r), Some(op)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
            n.child_by_field_name("operator"),
        ) else {
            return self.other(n);
        };
        if self.t(op) != "+" {
            return self.other(n);
        }
        let (le, le_fx) = self.expr_effects(l);
        let (re, re_fx) = self.expr_effects(r);
        let number = |e: &Expr| matches!(e, Expr::Num(_));
        if number(&le) && !texty(&re) || number(&re) && !texty(&le) {
            let kept = [(le, le_fx), (re, re_fx)]
                .into_iter()
                .filter(|(_, fx)| *fx)
                .map(|(e, _)| e)
                .collect();
            return Expr::Other(kept);
        }
        let mut pieces = Vec::new();
        push_piece(&mut pieces, le);
        push_piece(&mut pieces, re);
        match pieces.len() {
            0 => Expr::Str(String::new()),
            1 if matches!(pieces[0], Expr::Str(_)) => pieces.remove(0),
            _ => Expr::Concat(pieces),
        }
    }

    /// `[]T{…}`, `map[K]V{…}`, `T{f: v}`.
    fn composite(&mut self, n: Node<'_>) -> Expr {
        let Some(body) = n.child_by_field_name("body") else {
            return self.other(n);
        };
        match n.child_by_field_name("type") {
            Some(t) if matches!(t.kind(), "map_type" | "struct_type") => self.map_literal(body),
            Some(t)
                if matches!(
                    t.kind(),
                    "type_identifier" | "qualified_type" | "generic_type"
                ) =>
            {
                let at = self.at(t);
                let (receiver, name) = match t.kind() {
                    "qualified_type" => (
                        t.child_by_field_name("package")
                            .map(|p| Expr::Name(self.t(p).to_string())),
                        t.child_by_field_name("name")
                            .map_or_else(String::new, |x| self.t(x).to_string()),
                    ),
                    _ => (None, self.type_name(t).unwrap_or_default()),
                };
                let mut args = Vec::new();
                for e in named(body) {
                    match e.kind() {
                        "keyed_element" => {
                            let (Some(k), Some(v)) =
                                (e.child_by_field_name("key"), e.child_by_field_name("value"))
                            else {
                                continue;
                            };
                            let key = self.t(k).to_string();
                            let value = self.element(v);
                            args.push(Arg::kw(key, value));
                        }
                        _ => {
                            let v = self.element(e);
                            args.push(Arg::pos(v));
                        }
                    }
                }
                self.effects += 1;
                Expr::Call(Box::new(Call {
                    receiver,
                    name,
                    callee: None,
                    args,
                    new: true,
                    at,
                }))
            }
            // Slices, arrays, and literals whose type is elided (`[][]string{{"a"}}`).
            _ => self.list_literal(body),
        }
    }

    fn list_literal(&mut self, body: Node<'_>) -> Expr {
        let mut items = Vec::new();
        for e in named(body) {
            match e.kind() {
                // `[...]string{2: "c"}`: the value, its index dropped.
                "keyed_element" => {
                    if let Some(v) = e.child_by_field_name("value") {
                        let v = self.element(v);
                        items.push(v);
                    }
                }
                _ => {
                    let v = self.element(e);
                    items.push(v);
                }
            }
        }
        Expr::List(items)
    }

    fn map_literal(&mut self, body: Node<'_>) -> Expr {
        let mut entries = Vec::new();
        for e in named(body) {
            if e.kind() != "keyed_element" {
                continue;
            }
            let (Some(k), Some(v)) = (e.child_by_field_name("key"), e.child_by_field_name("value"))
            else {
                continue;
            };
            // A struct's field names are its keys' text.
            let key = match self.element(k) {
                Expr::Name(n) => Expr::Str(n),
                other => other,
            };
            let value = self.element(v);
            entries.push((key, value));
        }
        Expr::Map(entries)
    }

    /// An element of a composite literal: a nested `{…}` (its type elided) is a list, or a
    /// map when its elements are keyed.
    fn element(&mut self, n: Node<'_>) -> Expr {
        match n.kind() {
            "literal_element" => match named(n).as_slice() {
                [inner] => self.element(*inner),
                _ => self.other(n),
            },
            "literal_value" => {
                if named(n).iter().any(|e| e.kind() == "keyed_element") {
                    self.map_literal(n)
                } else {
                    self.list_literal(n)
                }
            }
            _ => self.expr(n),
        }
    }

    fn args(&mut self, n: Option<Node<'_>>) -> Vec<Arg> {
        let Some(n) = n else { return Vec::new() };
        named(n)
            .into_iter()
            .map(|a| Arg::pos(self.expr(a)))
            .collect()
    }

    fn call(&mut self, n: Node<'_>) -> Expr {
        let Some(f) = n.child_by_field_name("function") else {
            return self.other(n);
        };
        let args_node = n.child_by_field_name("arguments");
        // Builtins whose first argument is a type.
        if f.kind() == "identifier" && matches!(self.t(f), "make" | "new") {
            let first = args_node.and_then(|a| named(a).into_iter().next());
            return match first.map(|t| t.kind()) {
                Some("slice_type" | "array_type") if self.t(f) == "make" => Expr::List(Vec::new()),
                Some("map_type") if self.t(f) == "make" => Expr::Map(Vec::new()),
                _ => Expr::Other(Vec::new()),
            };
        }
        let (receiver, name, callee, at) = match f.kind() {
            "identifier" => {
                let at = self.at(f);
                (None, self.t(f).to_string(), None, at)
            }
            "selector_expression" => match (
                f.child_by_field_name("operand"),
                f.child_by_field_name("field"),
            ) {
                (Some(o), Some(p)) => {
                    let o = self.expr(o);
                    let at = self.at(p);
                    (Some(o), self.t(p).to_string(), None, at)
                }
                _ => {
                    let at = self.at(f);
                    (None, String::new(), Some(self.other(f)), at)
                }
            },
            // `[]byte(x)`, `(*T)(x)`, `map[string]int(m)`: conversions.
            "slice_type" | "array_type" | "map_type" | "pointer_type" | "channel_type"
            | "function_type" | "interface_type" | "qualified_type" | "generic_type"
            | "parenthesized_type" => {
                let args = self.args(args_node);
                return match args.into_iter().next() {
                    Some(a) => Expr::Wrap(Box::new(a.value)),
                    None => Expr::Other(Vec::new()),
                };
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
        };
        let mut args = self.args(args_node);
        let spread = args.iter().any(|a| matches!(a.value, Expr::Spread(_)));
        let pkg = match &receiver {
            Some(Expr::Name(p)) => p.as_str(),
            _ => "",
        };
        // Text made by a call.
        match (pkg, name.as_str(), args.len()) {
            ("", "string", 1) if callee.is_none() && receiver.is_none() => {
                return Expr::Wrap(Box::new(args.remove(0).value));
            }
            ("", "append", 1..) if callee.is_none() && receiver.is_none() => {
                let mut items = Vec::new();
                for (i, a) in args.into_iter().enumerate() {
                    items.push(if i == 0 {
                        Expr::Spread(Box::new(a.value))
                    } else {
                        a.value
                    });
                }
                self.effects += 1;
                return Expr::List(items);
            }
            ("fmt", "Sprintf", 1..) if !spread => {
                if let Expr::Str(fmt) = &args[0].value {
                    let fmt = fmt.clone();
                    let values = args.iter().skip(1).map(|a| a.value.clone()).collect();
                    if let Some(e) = printf(&fmt, values) {
                        return e;
                    }
                }
            }
            ("fmt", "Sprint", 1..) if !spread => {
                let mut pieces = Vec::new();
                for a in args {
                    push_piece(&mut pieces, a.value);
                }
                return concat(pieces);
            }
            ("strconv", "Itoa" | "FormatInt" | "FormatUint", 1..) if !spread => {
                return Expr::Wrap(Box::new(args.remove(0).value));
            }
            ("strings", "Join", 2) if !spread => {
                let sep = args.pop().map_or(Expr::Other(Vec::new()), |a| a.value);
                let list = args.pop().map_or(Expr::Other(Vec::new()), |a| a.value);
                return Expr::Join(Box::new(sep), Box::new(list));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::engine::{Source, analyse};
    use crate::code::guard::{MAX_DEPTH, READER_STACK, Unreadable};
    use crate::code::profile::Profile;
    use crate::code::{FileFindings, SiteKind, Verdict, texts};

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
            Target::Other => "_".into(),
        }
    }

    fn s(x: &Stmt) -> String {
        match x {
            Stmt::Assign { target, value, .. } => format!("{} = {}", t(target), e(value)),
            Stmt::Push { target, value, .. } => format!("{} += {}", t(target), e(value)),
            Stmt::Expr(x) => e(x),
            Stmt::Return(Some(x), _) => format!("return {}", e(x)),
            Stmt::Return(None, _) => "return".into(),
            Stmt::Loop { bind, over, body } => format!(
                "for {} in {} {{ {} }}",
                bind.as_ref().map_or("-".into(), t),
                over.as_ref().map_or("-".into(), e),
                stmts(body)
            ),
            Stmt::Branch(arms) => {
                format!("branch {}", list(arms, |a| format!("{{ {} }}", stmts(a))))
            }
            Stmt::With {
                value, bind, body, ..
            } => format!(
                "with {} as {} {{ {} }}",
                e(value),
                bind.as_ref().map_or("-".into(), t),
                stmts(body)
            ),
        }
    }

    fn stmts(xs: &[Stmt]) -> String {
        xs.iter().map(s).collect::<Vec<_>>().join("; ")
    }

    fn func(f: &Func) -> String {
        let params = list(&f.params, |p| {
            let mut out = String::new();
            if p.rest {
                out.push_str("...");
            }
            out.push_str(&p.name);
            if let Some(ty) = &p.ty {
                out.push(':');
                out.push_str(ty);
            }
            out
        });
        format!("({params}) {{ {} }}", stmts(&f.body))
    }

    /// Each function of the unit as `[class.]name(params) { body }`, a line each.
    fn render(u: &Unit) -> String {
        let mut out = String::new();
        for f in &u.funcs {
            let head = match (&f.class, &f.receiver) {
                (Some(c), Some(r)) => format!("{c}[{r}].{}", f.name),
                (Some(c), None) => format!("{c}.{}", f.name),
                _ => f.name.clone(),
            };
            out.push_str(&format!("{head}{}\n", func(f)));
        }
        out
    }

    /// The function named `name`, rendered.
    fn one(src: &str, name: &str) -> String {
        let u = lower(src).expect("lowers");
        let f = u
            .funcs
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no {name} in {}", render(&u)));
        func(f)
    }

    /// The findings of Go files read together through the model with the Go profiles.
    fn scan_go_files(files: &[&str]) -> Vec<FileFindings> {
        let units: Vec<Unit> = files.iter().map(|t| lower(t).expect("lowers")).collect();
        let names: Vec<String> = (0..files.len()).map(|i| format!("f{i}.go")).collect();
        let sources: Vec<Source<'_>> = names
            .iter()
            .zip(&units)
            .map(|(file, unit)| Source { file, unit })
            .collect();
        analyse(&sources, &Profile::builtin("go"), &[])
    }

    fn scan_go(src: &str) -> FileFindings {
        scan_go_files(&[src]).remove(0)
    }

    fn ops(f: &FileFindings) -> Vec<&str> {
        f.sites.iter().map(|s| s.op.as_str()).collect()
    }

    // ----- the lowering -----

    #[test]
    fn functions_methods_and_structs() {
        let src = r#"package store

import (
	"context"
	r "github.com/redis/go-redis/v9"
	"gopkg.in/redis.v5"
	_ "embed"
)

type Store struct {
	*r.Client
	Base
	prefix string
}

func New(c *r.Client, ids ...string) *Store { return &Store{Client: c, prefix: "p"} }

func (s *Store) Get(ctx context.Context, a, b string, _ int) string {
	return s.prefix + a
}

func (Store) Name() string { return "x" }
"#;
        let u = lower(src).unwrap();
        assert_eq!(u.package.as_deref(), Some("store"));
        let imports: Vec<String> = u
            .imports
            .iter()
            .map(|(l, m, n)| format!("{l}={m}{}", n.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            imports,
            [
                "context=context",
                "r=github.com/redis/go-redis/v9",
                "redis=gopkg.in/redis.v5"
            ]
        );
        assert_eq!(u.classes.len(), 1);
        assert_eq!(u.classes[0].name, "Store");
        assert_eq!(u.classes[0].bases, ["Client", "Base"]);
        assert_eq!(
            render(&u),
            "<module>() {  }\n\
             New(c:Client, ...ids:string) { return wrap(new Store(Client=c, prefix=\"p\")) }\n\
             Store[s].Get(ctx:Context, a:string, b:string, _:int) { return cat(s.prefix, a) }\n\
             Store.Name() { return \"x\" }\n"
        );
    }

    #[test]
    fn assignments_of_several_names_and_results() {
        let body = one(
            r#"package p
func f() (string, error) {
	a, b := "x", "y"
	v, err := g(a)
	m, ok := cache[b]
	_, _ = v, m
	var (
		k1, k2 = "k1", "k2"
		keys []string
		seen map[string]bool
		n int
	)
	const c = "c"
	k1 += ":" + b
	n += 1
	n -= 2
	return k1 + c, err
}
"#,
            "f",
        );
        assert_eq!(
            body,
            "() { a = \"x\"; b = \"y\"; (v, err) = g(a); m = cache[b]; ok = other(); _ = v; \
             _ = m; k1 = \"k1\"; k2 = \"k2\"; keys = []; seen = {}; c = \"c\"; \
             k1 = cat(k1, \":\", b); n = other(); n = other(); return [cat(k1, c), err] }"
        );
    }

    #[test]
    fn lists_maps_and_append() {
        let body = one(
            r#"package p
func f(ids []string, more ...string) {
	keys := []string{"a", "b:" + ids[0]}
	keys = append(keys, "c", more...)
	all := append(keys, "d")
	m := map[string]string{"k": "v", "k2": x}
	grid := [][]string{{"a"}, {"b"}}
	pairs := []Pair{{Key: "a"}}
	buf := make([]string, 0, 4)
	h := make(map[string]int)
	send(append([]string{"x"}, ids...)...)
}
"#,
            "f",
        );
        assert_eq!(
            body,
            "(ids, ...more:string) { keys = [\"a\", cat(\"b:\", ids[0])]; keys += \"c\"; \
             keys += *more; all = keys; all += \"d\"; m = {\"k\": \"v\", \"k2\": x}; \
             grid = [[\"a\"], [\"b\"]]; pairs = [{\"Key\": \"a\"}]; buf = []; h = {}; \
             send(*[*[\"x\"], *ids]) }"
        );
    }

    #[test]
    fn strings_are_built() {
        let body = one(
            r#"package p
func f(id string, n int) {
	a := fmt.Sprintf("user:%s:%05d", id, n)
	b := fmt.Sprintf("%q/%%", id)
	c := fmt.Sprintf("%s:%s", id)
	d := fmt.Sprint("x:", id)
	e := strconv.Itoa(n) + `raw\n` + "esc\t\x41\u00e9"
	g := strings.Join([]string{"a", id}, ":")
	h := string(id[0]) + fmt.Sprintf("%s", id)
	i := n + 1
	j := (id + "x")
	k := []byte("b:" + id)
	l := x.(string)
	m := &id
}
"#,
            "f",
        );
        assert_eq!(
            body,
            "(id:string, n:int) { a = cat(\"user:\", id, \":\", n); b = cat(\"\\\"\", id, \"\\\"/%\"); \
             c = fmt.Sprintf(\"%s:%s\", id); d = cat(\"x:\", id); \
             e = cat(wrap(n), \"raw\\\\nesc\\tAé\"); g = join(\":\", [\"a\", id]); \
             h = cat(wrap(id[0]), wrap(id)); i = other(); j = wrap(cat(id, \"x\")); \
             k = wrap(cat(\"b:\", id)); l = wrap(x); m = wrap(id) }"
        );
    }

    #[test]
    fn control_flow_closures_defer_and_go() {
        let body = one(
            r#"package p
func f(ctx context.Context, rdb *redis.Client, ids []string, m map[string]int) error {
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return err
	} else if x {
		g()
	}
	for _, id := range ids {
		rdb.Get(ctx, "k:"+id)
	}
	for i := range ids {
		use(i)
	}
	for i := 0; i < check(); i++ {
		step(i)
	}
	for {
		break
	}
	switch v := rdb.Type(ctx, "k").Val(); v {
	case "string", kind():
		a()
	default:
		b()
	}
	switch t := x.(type) {
	case string, *int:
		c(t)
	}
	select {
	case v := <-ch:
		d(v)
	}
	go func() { rdb.Del(ctx, "a") }()
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "a", 1, 0)
		return nil
	})
	defer func() { done() }()
	return err
}
"#,
            "f",
        );
        assert_eq!(
            body,
            "(ctx:Context, rdb:Client, ids, m) { err = rdb.Ping(ctx).Err(); \
             branch { return err }, { branch { g() }, {  } }; \
             for id in ids { rdb.Get(ctx, cat(\"k:\", id)) }; \
             for i in other(ids) { use(i) }; \
             i = 0; for - in - { other(check()); step(i) }; for - in - {  }; \
             v = rdb.Type(ctx, \"k\").Val(); branch { other(kind()); a() }, { b() }; \
             t = wrap(x); branch { c(t) }, {  }; \
             branch { v = other(); d(v) }, {  }; \
             (lambda () { rdb.Del(ctx, \"a\") })(); \
             (_, err) = rdb.Pipelined(ctx, lambda (pipe:Pipeliner) { pipe.Set(ctx, \"a\", 1, 0); return nil }); \
             return err; (lambda () { done() })(); rdb.Close() }"
        );
    }

    // ----- through the engine: the Go reader's cases -----

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
        assert_eq!(ops(&f), ["HSET RPUSH", "other.Fill()"], "{:?}", f.sites);
        assert_eq!(texts(&f.sites[0]), ["job:<id>", "queue:default"]);
        assert_eq!(f.sites[0].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        // A function the tree does not define: the site depends on it.
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
        assert_eq!(
            ops(&f),
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
        // A pipeline filled in a loop over ids: a key per pass, apart only as two passes:
        // the verdict is the list's.
        assert_eq!(f.sites[3].kind, SiteKind::Pipeline);
        assert_eq!(texts(&f.sites[3]), ["item:<id>", "item:<id'>"]);
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
        assert_eq!(
            ops(&f),
            ["SET EXPIRE", "MGET", "GET GET", "EVALSHA", "SET SET"],
            "{:?}",
            f.sites
        );
        assert_eq!(f.sites[0].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[0].verdict(), Verdict::CrossSlot(_)));
        assert!(matches!(f.sites[1].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[2].kind, SiteKind::Pipeline);
        assert_eq!(texts(&f.sites[3]), ["k1:<id>", "k2:<id>"]);
        assert!(matches!(f.sites[3].verdict(), Verdict::CrossSlot(_)));
        assert_eq!(f.sites[4].kind, SiteKind::Transaction);
        assert!(matches!(f.sites[4].verdict(), Verdict::OneSlot(_)));
    }

    /// A key function and a constant of another package, qualified by its name (the
    /// package imported, or not), and a method whose receiver holds the client.
    #[test]
    fn packages_methods_and_struct_literals() {
        let app = r#"package app
import "example.com/shop/keys"
type Store struct { rdb *redis.Client; prefix string }
func NewStore(c *redis.Client) *Store { return &Store{rdb: c, prefix: keys.Prefix} }
func (s *Store) Load(ctx context.Context, uid string) {
	s.rdb.MGet(ctx, keys.User(uid), s.prefix+":cart:"+uid)
}
"#;
        let keys = r#"package keys
const Prefix = "shop"
func User(uid string) string { return Prefix + ":user:" + uid }
"#;
        let found = scan_go_files(&[app, keys]);
        let f = &found[0];
        assert_eq!(ops(f), ["MGET"], "{:?}", f.sites);
        assert_eq!(texts(&f.sites[0])[0], "shop:user:<uid>");
        assert_eq!(f.sites[0].at.line, 6);
        assert_eq!(f.sites[0].at.column, 8);
    }

    /// A method declared to return a client's interface returns a client, though its body
    /// makes the tree's own wrapper (read from the caller that makes the `Cluster`); a redigo
    /// connection's queue is sent by `Flush`.
    #[test]
    fn a_function_declared_to_return_a_connection() {
        let f = scan_go(
            r#"package redisc
type Cluster struct{}
type Conn struct{ cluster *Cluster }
func (c *Cluster) Get() redis.Conn { return &Conn{cluster: c} }
func (c *Conn) Do(cmd string, args ...interface{}) (interface{}, error) { return nil, nil }
func use(c *Cluster) {
	conn := c.Get()
	defer conn.Close()
	conn.Do("MGET", "a{x}", "b{x}")
	conn2 := c.Get().(*Conn)
	conn2.Send("GET", "k1")
	conn2.Send("GET", "k2")
	conn2.Flush()
}
func main() { use(&Cluster{}) }
"#,
        );
        assert_eq!(ops(&f), ["MGET", "GET GET"], "{:?}", f.sites);
        assert!(matches!(f.sites[0].verdict(), Verdict::OneSlot(_)));
        assert_eq!(f.sites[1].kind, SiteKind::Pipeline);
        assert_eq!(
            (f.sites[1].at.line, f.sites[1].send.map(|p| p.line)),
            (11, Some(13))
        );
        assert!(matches!(f.sites[1].verdict(), Verdict::CrossSlot(_)));
        let u = lower(
            "package p
func a() *redis.Client { return nil }
func b() (string, error) { return \"\", nil }
",
        )
        .unwrap();
        assert_eq!(u.funcs[1].returns.as_deref(), Some("Client"));
        assert_eq!(u.funcs[2].returns, None);
    }

    /// Each nesting shape, as deep as is still read, lowers on a reader thread's stack; one
    /// level deeper is refused, as the reader refuses it.
    #[test]
    fn the_deepest_trees_lower_on_the_readers_stack() {
        use crate::code::guard::tests::nested;
        let parse = |text: &str| {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_go::LANGUAGE.into()).unwrap();
            p.parse(text, None).unwrap()
        };
        for shape in [
            "blocks", "ifs", "calls", "parens", "lists", "concat", "closures", "helper", "follow",
        ] {
            let (mut lo, mut hi) = (1, 2 * MAX_DEPTH);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if guard::deeper_than(&parse(&nested("go", shape, mid)), MAX_DEPTH) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let (ok, deeper) = (nested("go", shape, lo), nested("go", shape, hi));
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
    }
}
