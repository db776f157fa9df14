//! Java lowered into [`crate::code::ir`], with the grammar the Java reader uses (tree-sitter's
//! Java grammar). Types are looked through: a parameter's declared type is its
//! [`ir::Param::ty`] (last name segment, generics dropped), casts and parentheses are
//! [`Expr::Wrap`], and declarations that are only types (interfaces' abstract methods,
//! annotations) lower to nothing.
//!
//! Choices this lowering makes where the model leaves room:
//!
//! - **Classes** (and interfaces, enums, records; nested ones too) are [`Class`]es with their
//!   superclass and interfaces as bases. Methods are [`Func`]s with their class and the receiver
//!   `this` (static ones with [`Func::is_static`] and no receiver); constructors are named
//!   `constructor`; field initialisers and initialiser blocks are `this.field = value` in the
//!   class's [`CLASS_BODY`] function. A field declared with a type and no value (an injected
//!   client: `@Autowired RedisTemplate t;`) is a parameter of [`CLASS_BODY`] of that type,
//!   assigned to `this.t`. A static field with a value is also a module variable of the file
//!   (`PREFIX = value`), so that a bare `PREFIX` and another file's `Keys.PREFIX` read it.
//! - **Names**: a bare name that is no local or parameter in scope but a field of the class
//!   being lowered is `this.name` (an instance field) or the module variable (a static one).
//!   Unqualified calls stay bare calls (the engine finds them on the class).
//! - **Imports**: `import a.b.C;` is `C → (a.b.C, whole module)`, `import static a.b.C.m;` is
//!   `m → (a.b.C, m)`; the unit's module is its package and first top-level type
//!   (`a.b.C`).
//! - **Strings**: `+` is [`Expr::Concat`] unless one side is a number literal and neither side
//!   is text; `String.format(fmt, …)` and `fmt.formatted(…)` with a literal format,
//!   `a.concat(b)`, `new StringBuilder(a).append(b)` (and `sb.append(x);` on a local builder)
//!   are [`Expr::Concat`]; `String.join(sep, …)` is [`Expr::Join`]; `String.valueOf(x)`,
//!   `Integer.toString(x)`, `x.toString()`, `x.getBytes()`, `x.intern()`, `new String(x)` are
//!   [`Expr::Wrap`]; `new byte[]{0x61, …}` and `{0x61, …}` of ASCII bytes are the text they
//!   spell.
//! - **Collections**: array initialisers, `new T[]{…}`, `Arrays.asList`, `List.of`, `Set.of`,
//!   `Stream.of`, `Collections.singletonList` are [`Expr::List`]; `new ArrayList<>()` (and the
//!   other collection classes) an empty list, `new ArrayList<>(xs)` a copy of `xs`
//!   ([`Expr::Wrap`]); `Map.of(k, v, …)` and `new HashMap<>()` are [`Expr::Map`];
//!   `xs.stream().map(x -> f(x))` is an [`Expr::Comprehension`] and `.collect(…)`,
//!   `.toList()`, `.toArray(…)`, `.stream()` are the value they are called on
//!   ([`Expr::Wrap`]). `list.add(x)` / `list.addAll(xs)` are [`Stmt::Push`] (the call also kept
//!   unless the list is a local assigned a list); `map.put(k, v)` on a local map is
//!   `map[k] = v`.
//! - **Closures**: lambdas are [`Expr::Lambda`] (an expression body is its return value); a
//!   method reference `x::m` is the field `x.m`; an anonymous class of one method
//!   (`new SessionCallback<>() { public Object execute(RedisOperations o) { … } }`) is that
//!   method as a closure, one of several methods a class named `T$<line>` made with `new`.
//! - **Control flow**: `try` bodies are inline, each `catch` a [`Stmt::Branch`] of the handler
//!   and an empty arm, `finally` inline after; try-with-resources is one [`Stmt::With`] per
//!   resource (`try (Pipeline p = j.pipelined()) { … }` binds `p`, and ends where the statement
//!   ends); `for (T x : xs)` is a [`Stmt::Loop`] over `xs`; a classic `for` puts its
//!   initialisers before the loop and its updates at the end of the body; `switch` is one arm
//!   per case group (and an empty one without `default`).
//! - **Effects inside expressions**: an assignment inside an expression, and the calls of a
//!   ternary's condition, become statements before the statement that holds them.

use super::LowerError;
use crate::code::Position;
use crate::code::guard;
use crate::code::ir::{
    Arg, CLASS_BODY, Call, Class, Expr, Func, MODULE_BODY, Param, Stmt, Target, Unit,
};
use std::collections::{HashMap, HashSet};
use tree_sitter::{Node, Parser};

/// `text` lowered into the model. Refused as the Java reader refuses it: no tree, or a tree
/// deeper than [`guard::MAX_DEPTH`].
pub fn lower(text: &str) -> Result<Unit, LowerError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_java::LANGUAGE.into())
        .expect("invariant: the grammar matches the tree-sitter version");
    let tree = parser.parse(text, None).ok_or(LowerError::NoTree)?;
    guard::check_depth(&tree)?;
    let mut l = Lowerer {
        src: text.as_bytes(),
        text,
        unit: Unit::default(),
        pre: Vec::new(),
        locals: Vec::new(),
        in_scope: HashMap::new(),
        ascii: text.is_ascii(),
        lists: HashSet::new(),
        maps: HashSet::new(),
        builders: HashSet::new(),
        classes: Vec::new(),
        class_bodies: HashMap::new(),
        package: None,
    };
    l.program(tree.root_node());
    Ok(l.unit)
}

/// What the class being lowered declares: its fields by name, each with whether it is
/// static.
struct ClassCx {
    fields: HashMap<String, bool>,
}

struct Lowerer<'s> {
    src: &'s [u8],
    text: &'s str,
    unit: Unit,
    /// Statements the expression being lowered needs before its statement.
    pre: Vec<Stmt>,
    /// Locals and parameters in scope, innermost last.
    locals: Vec<String>,
    /// How many of [`Lowerer::locals`] have each name.
    in_scope: HashMap<String, usize>,
    /// Whether the text is ASCII (a column is then its byte offset in the line).
    ascii: bool,
    /// Locals of the function being lowered that were assigned a list.
    lists: HashSet<String>,
    /// Locals of the function being lowered that were assigned a map.
    maps: HashSet<String>,
    /// Locals of the function being lowered that hold a `StringBuilder`.
    builders: HashSet<String>,
    /// The classes being lowered, innermost last.
    classes: Vec<ClassCx>,
    /// Each class's [`CLASS_BODY`] function (index in the unit).
    class_bodies: HashMap<String, usize>,
    /// `package a.b;`.
    package: Option<String>,
}

/// A node's named children, comments left out.
fn named<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|c| !matches!(c.kind(), "line_comment" | "block_comment"))
        .collect()
}

/// Whether declaration `n` has the modifier `word` (`static`, `final`, …).
fn has_modifier(n: Node<'_>, word: &str) -> bool {
    let mut c = n.walk();
    n.children(&mut c).any(|m| {
        m.kind() == "modifiers" && {
            let mut c2 = m.walk();
            m.children(&mut c2).any(|w| w.kind() == word)
        }
    })
}

/// Text whatever it holds.
fn texty(e: &Expr) -> bool {
    matches!(e, Expr::Str(_) | Expr::Concat(_) | Expr::Join(..))
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

/// The text of one escape sequence of a string or character literal.
fn unescape(e: &str, out: &mut String) {
    let body = &e[e.len().min(1)..];
    let ch = match body.chars().next() {
        Some('n') => Some('\n'),
        Some('t') => Some('\t'),
        Some('r') => Some('\r'),
        Some('b') => Some('\u{8}'),
        Some('f') => Some('\u{c}'),
        Some('s') => Some(' '),
        Some('u') => u32::from_str_radix(body.trim_start_matches('u'), 16)
            .ok()
            .and_then(char::from_u32),
        Some('0'..='7') => u32::from_str_radix(body, 8).ok().and_then(char::from_u32),
        // A line continuation in a text block is no text.
        Some('\r' | '\n') => return,
        _ => None,
    };
    match ch {
        Some(c) => out.push(c),
        None => out.push_str(body),
    }
}

/// `String.format`'s text: each conversion (`%s`, `%d`, `%08x`, `%1$s`, …) takes the next
/// value (or the one it numbers); `%%` is `%`, `%n` a newline. `None` when a conversion has no
/// value.
fn format(fmt: &str, args: &[Expr]) -> Option<Expr> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut next = 0;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_alphabetic() || d == '%' {
                break;
            }
            spec.push(d);
            chars.next();
        }
        let verb = chars.next()?;
        match verb {
            '%' => lit.push('%'),
            'n' => lit.push('\n'),
            _ => {
                let index = match spec.split_once('$') {
                    Some((i, _)) => i.parse::<usize>().ok()?.checked_sub(1)?,
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                push_piece(&mut pieces, Expr::Str(std::mem::take(&mut lit)));
                push_piece(&mut pieces, args.get(index)?.clone());
            }
        }
    }
    push_piece(&mut pieces, Expr::Str(lit));
    Some(concat(pieces))
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

/// The target an expression names, when it names one.
fn expr_target(e: &Expr) -> Target {
    match e {
        Expr::Name(n) => Target::Name(n.clone()),
        Expr::Field(o, f) => Target::Field((**o).clone(), f.clone()),
        Expr::Index(o, i) => Target::Index((**o).clone(), (**i).clone()),
        Expr::Wrap(x) => expr_target(x),
        _ => Target::Other,
    }
}

/// Classes of the JDK (and Guava) that make a list or set, and a map.
const LIST_CLASSES: &[&str] = &[
    "ArrayList",
    "LinkedList",
    "HashSet",
    "LinkedHashSet",
    "TreeSet",
    "ArrayDeque",
    "Vector",
    "CopyOnWriteArrayList",
    "CopyOnWriteArraySet",
    "ConcurrentLinkedQueue",
];
const MAP_CLASSES: &[&str] = &[
    "HashMap",
    "LinkedHashMap",
    "TreeMap",
    "ConcurrentHashMap",
    "Hashtable",
];

impl<'s> Lowerer<'s> {
    fn t(&self, n: Node<'_>) -> &'s str {
        n.utf8_text(self.src).unwrap_or("")
    }

    fn at(&self, n: Node<'_>) -> Position {
        if self.ascii {
            let p = n.start_position();
            return Position {
                line: p.row + 1,
                column: p.column + 1,
            };
        }
        crate::code::syntax::position(self.text, n)
    }

    fn end(&self, n: Node<'_>) -> Position {
        let p = n.end_position();
        let line_start = n.end_byte() - p.column;
        Position {
            line: p.row + 1,
            column: self
                .text
                .get(line_start..n.end_byte())
                .map_or(p.column, |s| s.chars().count())
                + 1,
        }
    }

    /// The statements waiting for the next statement, put before it.
    fn flush(&mut self, out: &mut Vec<Stmt>) {
        out.append(&mut self.pre);
    }

    fn declare(&mut self, name: &str) {
        self.locals.push(name.to_string());
        *self.in_scope.entry(name.to_string()).or_default() += 1;
    }

    fn is_local(&self, name: &str) -> bool {
        self.in_scope.get(name).is_some_and(|&n| n > 0)
    }

    /// The locals declared since `mark` dropped.
    fn leave(&mut self, mark: usize) {
        for name in self.locals.drain(mark.min(self.locals.len())..) {
            if let Some(n) = self.in_scope.get_mut(&name) {
                *n -= 1;
            }
        }
    }

    /// The locals in scope taken away (a class body starts without them); given back by
    /// [`Lowerer::restore_locals`].
    fn take_locals(&mut self) -> (Vec<String>, HashMap<String, usize>) {
        (
            std::mem::take(&mut self.locals),
            std::mem::take(&mut self.in_scope),
        )
    }

    fn restore_locals(&mut self, saved: (Vec<String>, HashMap<String, usize>)) {
        (self.locals, self.in_scope) = saved;
    }

    fn assign(&mut self, target: Target, value: Expr, at: Position, out: &mut Vec<Stmt>) {
        self.flush(out);
        if let Target::Name(n) = &target {
            self.lists.remove(n);
            self.maps.remove(n);
            self.builders.remove(n);
            match &value {
                Expr::List(_) | Expr::Comprehension { .. } => {
                    self.lists.insert(n.clone());
                }
                Expr::Map(_) => {
                    self.maps.insert(n.clone());
                }
                _ => {}
            }
        }
        out.push(Stmt::Assign { target, value, at });
    }

    /// The last name of a type (`a.b.C<D>` → `C`, `C[]` → `C`).
    fn type_name(&self, n: Node<'_>) -> Option<String> {
        match n.kind() {
            "type_identifier" | "identifier" => Some(self.t(n).to_string()),
            "scoped_type_identifier" | "generic_type" | "annotated_type" | "scoped_identifier" => {
                named(n)
                    .into_iter()
                    .rev()
                    .find(|c| {
                        !matches!(
                            c.kind(),
                            "type_arguments" | "annotation" | "marker_annotation"
                        )
                    })
                    .and_then(|c| self.type_name(c))
            }
            "array_type" => self.type_name(n.child_by_field_name("element")?),
            "integral_type" | "floating_point_type" | "boolean_type" | "void_type" => {
                Some(self.t(n).to_string())
            }
            _ => None,
        }
    }

    // ----- the file -----

    fn program(&mut self, root: Node<'_>) {
        self.unit.funcs.push(Func {
            name: MODULE_BODY.into(),
            at: Position { line: 1, column: 1 },
            ..Func::default()
        });
        let mut body = Vec::new();
        for c in named(root) {
            match c.kind() {
                "package_declaration" => {
                    self.package = named(c)
                        .into_iter()
                        .find(|n| matches!(n.kind(), "identifier" | "scoped_identifier"))
                        .map(|n| self.t(n).to_string());
                }
                "import_declaration" => self.import(c),
                "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "annotation_type_declaration" => {
                    let name = self.class(c, None, &mut body);
                    if self.unit.module.is_none() {
                        self.unit.module = Some(match &self.package {
                            Some(p) => format!("{p}.{name}"),
                            None => name,
                        });
                    }
                }
                // A snippet of statements (the grammar reads them at the top level too).
                _ => self.stmt(c, &mut body),
            }
        }
        self.flush(&mut body);
        self.unit.funcs[0].body.extend(body);
    }

    fn import(&mut self, n: Node<'_>) {
        let mut c = n.walk();
        let is_static = n.children(&mut c).any(|k| k.kind() == "static");
        let wild = named(n).iter().any(|k| k.kind() == "asterisk");
        let Some(path) = named(n)
            .into_iter()
            .find(|k| matches!(k.kind(), "identifier" | "scoped_identifier"))
        else {
            return;
        };
        if wild {
            return;
        }
        let path = self.t(path);
        let (head, last) = path.rsplit_once('.').unwrap_or(("", path));
        if is_static {
            self.unit
                .imports
                .push((last.to_string(), head.to_string(), Some(last.to_string())));
        } else {
            self.unit
                .imports
                .push((last.to_string(), path.to_string(), None));
        }
    }

    // ----- classes -----

    /// A class, interface, enum or record (named `name` when given: an anonymous class): its
    /// class, methods and field initialisers. Module-level statements it needs (static
    /// fields) go to `module`. Returns its name.
    fn class(&mut self, n: Node<'_>, name: Option<String>, module: &mut Vec<Stmt>) -> String {
        let name = name.unwrap_or_else(|| {
            n.child_by_field_name("name")
                .map_or_else(|| "<anonymous>".to_string(), |c| self.t(c).to_string())
        });
        let mut bases = Vec::new();
        if let Some(s) = n.child_by_field_name("superclass") {
            bases.extend(named(s).into_iter().filter_map(|t| self.type_name(t)));
        }
        for c in named(n) {
            if matches!(c.kind(), "super_interfaces" | "extends_interfaces") {
                for list in named(c) {
                    bases.extend(named(list).into_iter().filter_map(|t| self.type_name(t)));
                }
            }
        }
        self.unit.classes.push(Class {
            name: name.clone(),
            bases,
        });
        let Some(body) = n.child_by_field_name("body") else {
            return name;
        };
        let members: Vec<Node<'_>> = named(body)
            .into_iter()
            .flat_map(|m| {
                // An enum's fields and methods follow its constants.
                if m.kind() == "enum_body_declarations" {
                    named(m)
                } else {
                    vec![m]
                }
            })
            .collect();
        // What the class declares, known before its methods are lowered.
        let mut cx = ClassCx {
            fields: HashMap::new(),
        };
        for m in &members {
            if matches!(m.kind(), "field_declaration" | "constant_declaration") {
                let is_static = m.kind() == "constant_declaration" || has_modifier(*m, "static");
                let mut c = m.walk();
                for d in m.children_by_field_name("declarator", &mut c) {
                    if let Some(v) = d.child_by_field_name("name") {
                        cx.fields.insert(self.t(v).to_string(), is_static);
                    }
                }
            }
        }
        // Record components are fields given by the constructor.
        let mut record_params = Vec::new();
        if n.kind() == "record_declaration"
            && let Some(ps) = n.child_by_field_name("parameters")
        {
            for p in named(ps) {
                if let Some(v) = p.child_by_field_name("name") {
                    cx.fields.insert(self.t(v).to_string(), false);
                    record_params.push(p);
                }
            }
        }
        let outer_locals = self.take_locals();
        self.classes.push(cx);
        let interface = n.kind() == "interface_declaration";
        for m in members {
            match m.kind() {
                "method_declaration" => {
                    if m.child_by_field_name("body").is_none() {
                        continue;
                    }
                    let method = m
                        .child_by_field_name("name")
                        .map(|k| self.t(k).to_string())
                        .unwrap_or_default();
                    let is_static = has_modifier(m, "static");
                    self.top_func(m, &method, &name, is_static);
                }
                "constructor_declaration" | "compact_constructor_declaration" => {
                    self.top_func(m, "constructor", &name, false);
                }
                "field_declaration" | "constant_declaration" => {
                    let is_static = interface
                        || m.kind() == "constant_declaration"
                        || has_modifier(m, "static");
                    self.field(m, &name, is_static, body, module);
                }
                "static_initializer" | "block" => {
                    let mut stmts = Vec::new();
                    let pre = std::mem::take(&mut self.pre);
                    self.stmt(m, &mut stmts);
                    self.flush(&mut stmts);
                    self.pre = pre;
                    self.leave(0);
                    self.class_body(&name, body, stmts);
                }
                "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "annotation_type_declaration" => {
                    self.class(m, None, module);
                }
                "enum_constant" => {
                    if let Some(b) = m.child_by_field_name("body") {
                        let inner = format!(
                            "{name}.{}",
                            m.child_by_field_name("name").map_or("", |k| self.t(k))
                        );
                        self.unit.classes.push(Class {
                            name: inner.clone(),
                            bases: vec![name.clone()],
                        });
                        self.class_members(b, &inner, module);
                    }
                }
                _ => {}
            }
        }
        if !record_params.is_empty() {
            let mut f = Func {
                name: "constructor".into(),
                class: Some(name.clone()),
                receiver: Some("this".into()),
                at: self.at(n),
                ..Func::default()
            };
            for p in record_params {
                let param = self.param(p);
                f.body.push(Stmt::Assign {
                    target: Target::Field(Expr::name("this"), param.name.clone()),
                    value: Expr::Name(param.name.clone()),
                    at: self.at(p),
                });
                f.params.push(param);
            }
            self.unit.funcs.push(f);
        }
        self.classes.pop();
        self.restore_locals(outer_locals);
        name
    }

    /// A class body's members, for a class already added to the unit.
    fn class_members(&mut self, body: Node<'_>, name: &str, module: &mut Vec<Stmt>) {
        let mut cx = ClassCx {
            fields: HashMap::new(),
        };
        let members = named(body);
        for m in &members {
            if m.kind() == "field_declaration" {
                let is_static = has_modifier(*m, "static");
                let mut c = m.walk();
                for d in m.children_by_field_name("declarator", &mut c) {
                    if let Some(v) = d.child_by_field_name("name") {
                        cx.fields.insert(self.t(v).to_string(), is_static);
                    }
                }
            }
        }
        let outer_locals = self.take_locals();
        let outer_lists = std::mem::take(&mut self.lists);
        self.classes.push(cx);
        for m in members {
            match m.kind() {
                "method_declaration" if m.child_by_field_name("body").is_some() => {
                    let method = m
                        .child_by_field_name("name")
                        .map(|k| self.t(k).to_string())
                        .unwrap_or_default();
                    let is_static = has_modifier(m, "static");
                    self.top_func(m, &method, name, is_static);
                }
                "field_declaration" => {
                    let is_static = has_modifier(m, "static");
                    self.field(m, name, is_static, body, module);
                }
                "block" | "static_initializer" => {
                    let mut stmts = Vec::new();
                    let pre = std::mem::take(&mut self.pre);
                    self.stmt(m, &mut stmts);
                    self.flush(&mut stmts);
                    self.pre = pre;
                    self.leave(0);
                    self.class_body(name, body, stmts);
                }
                "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration" => {
                    self.class(m, None, module);
                }
                _ => {}
            }
        }
        self.classes.pop();
        self.restore_locals(outer_locals);
        self.lists = outer_lists;
    }

    /// A field declaration of class `class`: `this.f = value` in its [`CLASS_BODY`] (also
    /// `f = value` at the module level when static); without a value, a typed parameter of
    /// [`CLASS_BODY`] assigned to the field.
    fn field(
        &mut self,
        m: Node<'_>,
        class: &str,
        is_static: bool,
        body: Node<'_>,
        module: &mut Vec<Stmt>,
    ) {
        let ty = m
            .child_by_field_name("type")
            .and_then(|t| self.type_name(t));
        let at = self.at(m);
        let mut c = m.walk();
        let declarators: Vec<Node<'_>> = m.children_by_field_name("declarator", &mut c).collect();
        for d in declarators {
            let Some(field) = d.child_by_field_name("name").map(|v| self.t(v).to_string()) else {
                continue;
            };
            let Some(value) = d.child_by_field_name("value") else {
                if is_static {
                    continue;
                }
                // Declared, given by whoever makes the object: a value of its type.
                let i = self.class_body_index(class, body);
                let pname = field.clone();
                self.unit.funcs[i].params.push(Param {
                    name: pname.clone(),
                    ty: ty.clone(),
                    ..Param::default()
                });
                self.unit.funcs[i].body.push(Stmt::Assign {
                    target: Target::Field(Expr::name("this"), field),
                    value: Expr::Name(pname),
                    at,
                });
                continue;
            };
            let pre = std::mem::take(&mut self.pre);
            self.leave(0);
            let v = self.value(value);
            let mut stmts = Vec::new();
            self.flush(&mut stmts);
            self.pre = pre;
            if is_static {
                module.extend(stmts.iter().cloned());
                module.push(Stmt::Assign {
                    target: Target::Name(field.clone()),
                    value: v.clone(),
                    at,
                });
            }
            stmts.push(Stmt::Assign {
                target: Target::Field(Expr::name("this"), field),
                value: v,
                at,
            });
            self.class_body(class, body, stmts);
        }
    }

    /// Class `name`'s [`CLASS_BODY`] function (made at `body` the first time).
    fn class_body_index(&mut self, name: &str, body: Node<'_>) -> usize {
        if let Some(&i) = self.class_bodies.get(name) {
            return i;
        }
        let at = self.at(body);
        self.unit.funcs.push(Func {
            name: CLASS_BODY.into(),
            class: Some(name.to_string()),
            receiver: Some("this".into()),
            at,
            ..Func::default()
        });
        let i = self.unit.funcs.len() - 1;
        self.class_bodies.insert(name.to_string(), i);
        i
    }

    fn class_body(&mut self, name: &str, body: Node<'_>, stmts: Vec<Stmt>) {
        let i = self.class_body_index(name, body);
        self.unit.funcs[i].body.extend(stmts);
    }

    /// A method or constructor of class `class`, in its place among the unit's functions.
    fn top_func(&mut self, n: Node<'_>, name: &str, class: &str, is_static: bool) {
        let i = self.unit.funcs.len();
        self.unit.funcs.push(Func::default());
        let receiver = (!is_static).then_some("this");
        let mut f = self.function(n, name, receiver);
        f.class = Some(class.to_string());
        f.is_static = is_static;
        self.unit.funcs[i] = f;
    }

    // ----- functions -----

    /// A method, constructor or lambda: its parameters and body.
    fn function(&mut self, n: Node<'_>, name: &str, receiver: Option<&str>) -> Func {
        let at = self.at(n);
        let pre = std::mem::take(&mut self.pre);
        let lists = std::mem::take(&mut self.lists);
        let maps = std::mem::take(&mut self.maps);
        let builders = std::mem::take(&mut self.builders);
        let mark = self.locals.len();
        let params = self.params(n);
        for p in &params {
            self.declare(&p.name);
        }
        let mut body = Vec::new();
        match n.child_by_field_name("body") {
            Some(b) if matches!(b.kind(), "block" | "constructor_body") => {
                for s in named(b) {
                    self.stmt(s, &mut body);
                }
                self.flush(&mut body);
            }
            Some(b) => {
                let at = self.at(b);
                let e = self.expr(b);
                self.flush(&mut body);
                body.push(Stmt::Return(Some(e), at));
            }
            None => {}
        }
        self.leave(mark);
        self.pre = pre;
        self.lists = lists;
        self.maps = maps;
        self.builders = builders;
        Func {
            name: name.to_string(),
            class: None,
            receiver: receiver.map(str::to_string),
            params,
            body,
            at,
            is_static: false,
            returns: None,
        }
    }

    fn params(&mut self, n: Node<'_>) -> Vec<Param> {
        let Some(ps) = n.child_by_field_name("parameters") else {
            return Vec::new();
        };
        match ps.kind() {
            "identifier" => vec![Param {
                name: self.t(ps).to_string(),
                ..Param::default()
            }],
            "inferred_parameters" => named(ps)
                .into_iter()
                .map(|p| Param {
                    name: self.t(p).to_string(),
                    ..Param::default()
                })
                .collect(),
            _ => named(ps)
                .into_iter()
                .filter(|p| matches!(p.kind(), "formal_parameter" | "spread_parameter"))
                .map(|p| self.param(p))
                .collect(),
        }
    }

    fn param(&mut self, p: Node<'_>) -> Param {
        if p.kind() == "spread_parameter" {
            let kids = named(p);
            let ty = kids.iter().find_map(|k| self.type_name(*k));
            let name = kids
                .iter()
                .find(|k| k.kind() == "variable_declarator")
                .and_then(|d| d.child_by_field_name("name"))
                .map_or_else(String::new, |v| self.t(v).to_string());
            return Param {
                name,
                rest: true,
                ty,
                ..Param::default()
            };
        }
        Param {
            name: p
                .child_by_field_name("name")
                .map_or_else(String::new, |v| self.t(v).to_string()),
            ty: p
                .child_by_field_name("type")
                .and_then(|t| self.type_name(t)),
            ..Param::default()
        }
    }

    // ----- statements -----

    /// The statements of a block, its locals dropped after it.
    fn block(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        let mark = self.locals.len();
        if n.kind() == "block" {
            for s in named(n) {
                self.stmt(s, out);
            }
        } else {
            self.stmt(n, out);
        }
        self.flush(out);
        self.leave(mark);
    }

    fn stmt(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        match n.kind() {
            "expression_statement" => {
                for e in named(n) {
                    self.expr_stmt(e, out);
                }
            }
            "local_variable_declaration" => {
                let at = self.at(n);
                let mut c = n.walk();
                let ds: Vec<Node<'_>> = n.children_by_field_name("declarator", &mut c).collect();
                for d in ds {
                    self.declarator(d, at, out);
                }
            }
            "block" => self.block(n, out),
            "if_statement" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.condition(c);
                }
                self.flush(out);
                let mut yes = Vec::new();
                if let Some(c) = n.child_by_field_name("consequence") {
                    self.block(c, &mut yes);
                }
                let mut no = Vec::new();
                if let Some(alt) = n.child_by_field_name("alternative") {
                    self.block(alt, &mut no);
                }
                out.push(Stmt::Branch(vec![yes, no]));
            }
            "while_statement" | "do_statement" => {
                let mut body = Vec::new();
                let cond = n.child_by_field_name("condition");
                let first = n.kind() == "while_statement";
                if first && let Some(c) = cond {
                    self.condition(c);
                    self.flush(&mut body);
                }
                if let Some(b) = n.child_by_field_name("body") {
                    self.block(b, &mut body);
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
            "for_statement" => {
                let mark = self.locals.len();
                let mut c = n.walk();
                let inits: Vec<Node<'_>> = n.children_by_field_name("init", &mut c).collect();
                for i in inits {
                    if i.kind() == "local_variable_declaration" {
                        self.stmt(i, out);
                    } else {
                        self.expr_stmt(i, out);
                    }
                }
                let mut body = Vec::new();
                if let Some(cond) = n.child_by_field_name("condition") {
                    self.condition(cond);
                    self.flush(&mut body);
                }
                if let Some(b) = n.child_by_field_name("body") {
                    self.block(b, &mut body);
                }
                let mut c = n.walk();
                let updates: Vec<Node<'_>> = n.children_by_field_name("update", &mut c).collect();
                for u in updates {
                    self.expr_stmt(u, &mut body);
                }
                self.leave(mark);
                out.push(Stmt::Loop {
                    bind: None,
                    over: None,
                    body,
                });
            }
            "enhanced_for_statement" => {
                let over = n.child_by_field_name("value").map(|v| self.expr(v));
                self.flush(out);
                let mark = self.locals.len();
                let bind = n.child_by_field_name("name").map(|v| {
                    let name = self.t(v).to_string();
                    self.declare(&name);
                    Target::Name(name)
                });
                let mut body = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    self.block(b, &mut body);
                }
                self.leave(mark);
                out.push(Stmt::Loop { bind, over, body });
            }
            "try_statement" => {
                if let Some(b) = n.child_by_field_name("body") {
                    self.block(b, out);
                }
                self.handlers(n, out);
            }
            "try_with_resources_statement" => {
                let mark = self.locals.len();
                let resources = n
                    .child_by_field_name("resources")
                    .map(named)
                    .unwrap_or_default();
                let end = self.end(n);
                let mut withs: Vec<(Expr, Option<Target>)> = Vec::new();
                for r in resources {
                    let (value, bind) = match r.child_by_field_name("value") {
                        Some(v) => {
                            let e = self.value(v);
                            let bind = r.child_by_field_name("name").map(|k| {
                                let name = self.t(k).to_string();
                                self.declare(&name);
                                Target::Name(name)
                            });
                            (e, bind)
                        }
                        // `try (existing) { … }`: a variable already made.
                        None => match named(r).into_iter().next() {
                            Some(v) => (self.expr(v), None),
                            None => continue,
                        },
                    };
                    withs.push((value, bind));
                }
                self.flush(out);
                let mut body = Vec::new();
                if let Some(b) = n.child_by_field_name("body") {
                    self.block(b, &mut body);
                }
                self.leave(mark);
                for (value, bind) in withs.into_iter().rev() {
                    body = vec![Stmt::With {
                        value,
                        bind,
                        body,
                        end,
                    }];
                }
                out.extend(body);
                self.handlers(n, out);
            }
            "switch_expression" => self.switch(n, out),
            "synchronized_statement" => {
                for c in named(n) {
                    match c.kind() {
                        "parenthesized_expression" => self.condition(c),
                        _ => {
                            self.flush(out);
                            self.block(c, out);
                        }
                    }
                }
            }
            "labeled_statement" => {
                for c in named(n) {
                    if c.kind() != "identifier" {
                        self.stmt(c, out);
                    }
                }
            }
            "return_statement" => {
                let at = self.at(n);
                let value = named(n).into_iter().next().map(|v| self.value(v));
                self.flush(out);
                out.push(Stmt::Return(value, at));
            }
            "yield_statement" | "throw_statement" | "assert_statement" => {
                let value: Vec<Expr> = named(n).into_iter().map(|v| self.expr(v)).collect();
                self.flush(out);
                out.push(Stmt::Expr(Expr::Other(value)));
            }
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration" => {
                // A local class: its methods are the unit's; its static parts the module's.
                let mut module = Vec::new();
                self.class(n, None, &mut module);
            }
            "explicit_constructor_invocation" => {
                let at = self.at(n);
                let name = n
                    .child_by_field_name("constructor")
                    .map_or("super", |c| self.t(c))
                    .to_string();
                let args = self.args(n.child_by_field_name("arguments"));
                self.flush(out);
                out.push(Stmt::Expr(Expr::Call(Box::new(Call {
                    receiver: None,
                    name,
                    callee: None,
                    args,
                    new: false,
                    at,
                }))));
            }
            "break_statement"
            | "continue_statement"
            | ";"
            | "line_comment"
            | "block_comment"
            | "import_declaration"
            | "package_declaration"
            | "module_declaration" => {}
            "method_declaration" => {
                // A method outside any class (a snippet): a function of the unit.
                let name = n
                    .child_by_field_name("name")
                    .map(|k| self.t(k).to_string())
                    .unwrap_or_default();
                let i = self.unit.funcs.len();
                self.unit.funcs.push(Func::default());
                let f = self.function(n, &name, None);
                self.unit.funcs[i] = f;
            }
            "ERROR" => {
                for c in named(n) {
                    self.stmt(c, out);
                }
            }
            _ => self.expr_stmt(n, out),
        }
    }

    /// A `try`'s `catch` arms (each a branch of its handler and an empty arm) and `finally`.
    fn handlers(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        for c in named(n) {
            match c.kind() {
                "catch_clause" => {
                    let mark = self.locals.len();
                    for p in named(c) {
                        if p.kind() == "catch_formal_parameter"
                            && let Some(v) = p.child_by_field_name("name")
                        {
                            let name = self.t(v).to_string();
                            self.declare(&name);
                        }
                    }
                    let mut arm = Vec::new();
                    if let Some(b) = c.child_by_field_name("body") {
                        self.block(b, &mut arm);
                    }
                    self.leave(mark);
                    out.push(Stmt::Branch(vec![arm, Vec::new()]));
                }
                "finally_clause" => {
                    for b in named(c) {
                        self.block(b, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// `switch (v) { case …: … }` (as a statement): one arm per case group or rule.
    fn switch(&mut self, n: Node<'_>, out: &mut Vec<Stmt>) {
        if let Some(c) = n.child_by_field_name("condition") {
            self.condition(c);
        }
        self.flush(out);
        let mut arms = Vec::new();
        let mut default = false;
        if let Some(body) = n.child_by_field_name("body") {
            for g in named(body) {
                let mark = self.locals.len();
                let mut arm = Vec::new();
                for c in named(g) {
                    match c.kind() {
                        "switch_label" => {
                            if self.t(c).starts_with("default") {
                                default = true;
                            }
                        }
                        "expression_statement" | "block" | "throw_statement" => {
                            self.stmt(c, &mut arm)
                        }
                        _ => self.stmt(c, &mut arm),
                    }
                }
                self.flush(&mut arm);
                self.leave(mark);
                arms.push(arm);
            }
        }
        if !default {
            arms.push(Vec::new());
        }
        out.push(Stmt::Branch(arms));
    }

    /// A condition: its calls as a statement before the statement that tests it.
    fn condition(&mut self, n: Node<'_>) {
        let n = match named(n).as_slice() {
            [inner] if n.kind() == "parenthesized_expression" => *inner,
            _ => n,
        };
        let e = self.expr(n);
        if has_call(&e) {
            self.pre.push(Stmt::Expr(e));
        }
    }

    fn declarator(&mut self, d: Node<'_>, at: Position, out: &mut Vec<Stmt>) {
        let Some(name) = d.child_by_field_name("name").map(|v| self.t(v).to_string()) else {
            return;
        };
        let value = d.child_by_field_name("value").map(|v| self.value(v));
        self.declare(&name);
        if let Some(v) = value {
            let builder = is_builder(&v);
            let v = if builder { unbuild(v) } else { v };
            self.assign(Target::Name(name.clone()), v, at, out);
            if builder {
                self.builders.insert(name);
            }
        }
    }

    /// An expression evaluated for its effects.
    fn expr_stmt(&mut self, e: Node<'_>, out: &mut Vec<Stmt>) {
        match e.kind() {
            "assignment_expression" => {
                self.assignment(e, out);
            }
            "method_invocation" if self.call_stmt(e, out) => {}
            "parenthesized_expression" => {
                for c in named(e) {
                    self.expr_stmt(c, out);
                }
            }
            _ => {
                let x = self.expr(e);
                self.flush(out);
                out.push(Stmt::Expr(x));
            }
        }
    }

    /// `list.add(x)`, `list.addAll(xs)`, `map.put(k, v)`, `sb.append(x)` as statements; false
    /// for any other call.
    fn call_stmt(&mut self, e: Node<'_>, out: &mut Vec<Stmt>) -> bool {
        let (Some(_), Some(name)) = (
            e.child_by_field_name("object"),
            e.child_by_field_name("name"),
        ) else {
            return false;
        };
        let method = self.t(name);
        if !matches!(method, "add" | "addAll" | "put" | "append") {
            return false;
        }
        let call = self.expr(e);
        let Expr::Call(c) = &call else {
            self.flush(out);
            out.push(Stmt::Expr(call));
            return true;
        };
        let at = self.at(e);
        self.flush(out);
        let Some(recv) = &c.receiver else {
            out.push(Stmt::Expr(call));
            return true;
        };
        let target = expr_target(recv);
        let local = match &target {
            Target::Name(n) => Some(n.clone()),
            _ => None,
        };
        match (method, c.args.as_slice()) {
            ("append", [a]) if local.as_ref().is_some_and(|n| self.builders.contains(n)) => {
                let value = concat({
                    let mut pieces = Vec::new();
                    push_piece(&mut pieces, target_expr(&target));
                    push_piece(&mut pieces, a.value.clone());
                    pieces
                });
                out.push(Stmt::Assign { target, value, at });
                return true;
            }
            ("put", [k, v]) if local.as_ref().is_some_and(|n| self.maps.contains(n)) => {
                out.push(Stmt::Assign {
                    target: Target::Index(target_expr(&target), k.value.clone()),
                    value: v.value.clone(),
                    at,
                });
                return true;
            }
            ("add", [x]) | ("add", [_, x]) => {
                out.push(Stmt::Push {
                    target: target.clone(),
                    value: x.value.clone(),
                    at,
                });
            }
            ("addAll", [xs]) => {
                out.push(Stmt::Push {
                    target: target.clone(),
                    value: Expr::Spread(Box::new(xs.value.clone())),
                    at,
                });
            }
            _ => {
                out.push(Stmt::Expr(call));
                return true;
            }
        }
        let known = local.as_ref().is_some_and(|n| self.lists.contains(n));
        if !known {
            out.push(Stmt::Expr(call));
        }
        true
    }

    fn target(&mut self, n: Node<'_>) -> Target {
        let e = self.expr(n);
        expr_target(&e)
    }

    /// `a = b` (also inside an expression, where it is a statement before its statement);
    /// returns the value the expression has.
    fn assignment(&mut self, e: Node<'_>, out: &mut Vec<Stmt>) -> Expr {
        let at = self.at(e);
        let (Some(l), Some(r)) = (
            e.child_by_field_name("left"),
            e.child_by_field_name("right"),
        ) else {
            return Expr::Other(Vec::new());
        };
        let op = e.child_by_field_name("operator").map_or("=", |o| self.t(o));
        let target = self.target(l);
        let value = self.value(r);
        let value = match op {
            "=" => value,
            "+=" => {
                let mut pieces = Vec::new();
                push_piece(&mut pieces, target_expr(&target));
                push_piece(&mut pieces, value);
                concat(pieces)
            }
            _ => Expr::Other(vec![value]),
        };
        let builder = is_builder(&value);
        let value = if builder { unbuild(value) } else { value };
        self.assign(target.clone(), value, at, out);
        if builder && let Target::Name(n) = &target {
            self.builders.insert(n.clone());
        }
        target_expr(&target)
    }

    // ----- expressions -----

    /// A value given to a name (an array initialiser included).
    fn value(&mut self, n: Node<'_>) -> Expr {
        self.expr(n)
    }

    fn other(&mut self, n: Node<'_>) -> Expr {
        let inner: Vec<Expr> = named(n)
            .into_iter()
            .map(|c| self.expr(c))
            .filter(has_call)
            .collect();
        Expr::Other(inner)
    }

    /// A bare name: a local, a field of the class being lowered (`this.f`; a static field is
    /// the module's), or a name of elsewhere.
    fn name(&self, n: &str) -> Expr {
        if !self.is_local(n) {
            for c in self.classes.iter().rev() {
                match c.fields.get(n) {
                    Some(false) => return Expr::field(Expr::name("this"), n),
                    Some(true) => return Expr::name(n),
                    None => {}
                }
            }
        }
        Expr::name(n)
    }

    fn expr(&mut self, n: Node<'_>) -> Expr {
        match n.kind() {
            "string_literal" => self.string(n),
            "character_literal" => {
                let t = self.t(n);
                let body = t
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(t);
                let mut s = String::new();
                if body.starts_with('\\') {
                    unescape(body, &mut s);
                } else {
                    s.push_str(body);
                }
                Expr::Str(s)
            }
            "decimal_integer_literal"
            | "hex_integer_literal"
            | "octal_integer_literal"
            | "binary_integer_literal"
            | "decimal_floating_point_literal"
            | "hex_floating_point_literal"
            | "true"
            | "false"
            | "null_literal" => Expr::Num(self.t(n).to_string()),
            "identifier" => self.name(self.t(n)),
            "this" => Expr::name("this"),
            "super" => Expr::name("super"),
            "field_access" => {
                let (Some(o), Some(f)) = (
                    n.child_by_field_name("object"),
                    n.child_by_field_name("field"),
                ) else {
                    return self.other(n);
                };
                let o = self.expr(o);
                Expr::field(o, self.t(f))
            }
            "array_access" => {
                let (Some(a), Some(i)) = (
                    n.child_by_field_name("array"),
                    n.child_by_field_name("index"),
                ) else {
                    return self.other(n);
                };
                let a = self.expr(a);
                let i = self.expr(i);
                Expr::Index(Box::new(a), Box::new(i))
            }
            "parenthesized_expression" => match named(n).as_slice() {
                [inner] => Expr::Wrap(Box::new(self.expr(*inner))),
                _ => self.other(n),
            },
            "cast_expression" => match n.child_by_field_name("value") {
                Some(v) => Expr::Wrap(Box::new(self.expr(v))),
                None => self.other(n),
            },
            "binary_expression" => self.binary(n),
            "ternary_expression" => {
                if let Some(c) = n.child_by_field_name("condition") {
                    self.condition(c);
                }
                let mut alts = Vec::new();
                for f in ["consequence", "alternative"] {
                    if let Some(x) = n.child_by_field_name(f) {
                        match self.expr(x) {
                            Expr::Either(xs) => alts.extend(xs),
                            e => alts.push(e),
                        }
                    }
                }
                Expr::Either(alts)
            }
            "assignment_expression" => {
                let mut stmts = Vec::new();
                let v = self.assignment(n, &mut stmts);
                self.pre.extend(stmts);
                v
            }
            "method_invocation" => self.call(n),
            "object_creation_expression" => self.new_object(n),
            "array_creation_expression" => self.array(n),
            "array_initializer" => self.array_items(n),
            "lambda_expression" => {
                let f = self.function(n, "<lambda>", None);
                Expr::Lambda(Box::new(f))
            }
            "method_reference" => {
                let kids = named(n);
                let method = kids
                    .last()
                    .filter(|k| k.kind() == "identifier")
                    .map(|k| self.t(*k).to_string());
                match (kids.first(), method) {
                    (Some(o), Some(m)) if kids.len() >= 2 => {
                        let o = match o.kind() {
                            "type_identifier" | "scoped_type_identifier" | "generic_type" => {
                                Expr::name(self.type_name(*o).unwrap_or_default())
                            }
                            _ => self.expr(*o),
                        };
                        Expr::field(o, m)
                    }
                    _ => Expr::Other(Vec::new()),
                }
            }
            "template_expression" => match n.child_by_field_name("template_argument") {
                Some(s) => self.string(s),
                None => self.other(n),
            },
            "switch_expression" => {
                let mut stmts = Vec::new();
                self.switch(n, &mut stmts);
                self.pre.extend(stmts);
                Expr::Other(Vec::new())
            }
            _ => self.other(n),
        }
    }

    /// A string literal (a text block's lines as written, its escapes resolved), or a string
    /// template's pieces.
    fn string(&mut self, n: Node<'_>) -> Expr {
        let mut pieces = Vec::new();
        let block = self.t(n).starts_with("\"\"\"");
        let mut lit = String::new();
        for c in named(n) {
            match c.kind() {
                "string_fragment" | "multiline_string_fragment" => lit.push_str(self.t(c)),
                "escape_sequence" => unescape(self.t(c), &mut lit),
                "string_interpolation" => {
                    push_piece(&mut pieces, Expr::Str(std::mem::take(&mut lit)));
                    if let Some(x) = named(c).into_iter().next() {
                        let e = self.expr(x);
                        push_piece(&mut pieces, e);
                    }
                }
                _ => {}
            }
        }
        if block {
            lit = strip_text_block(&lit);
        }
        push_piece(&mut pieces, Expr::Str(lit));
        concat(pieces)
    }

    fn binary(&mut self, n: Node<'_>) -> Expr {
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return self.other(n);
        };
        let op = n.child_by_field_name("operator").map_or("", |o| self.t(o));
        let le = self.expr(l);
        let re = self.expr(r);
        if op == "+" {
            let number = |e: &Expr| matches!(e, Expr::Num(_));
            let arithmetic = (number(&le) || number(&re)) && !texty(&le) && !texty(&re);
            if !arithmetic {
                let mut pieces = Vec::new();
                push_piece(&mut pieces, le);
                push_piece(&mut pieces, re);
                return concat(pieces);
            }
        }
        let inner: Vec<Expr> = [le, re].into_iter().filter(has_call).collect();
        Expr::Other(inner)
    }

    fn args(&mut self, n: Option<Node<'_>>) -> Vec<Arg> {
        let Some(n) = n else { return Vec::new() };
        named(n)
            .into_iter()
            .map(|a| Arg::pos(self.expr(a)))
            .collect()
    }

    fn call(&mut self, n: Node<'_>) -> Expr {
        let Some(name_node) = n.child_by_field_name("name") else {
            return self.other(n);
        };
        let name = self.t(name_node).to_string();
        let at = self.at(name_node);
        let object = n.child_by_field_name("object");
        // The receiver as written when it is a type (`String.format`, `Arrays.asList`).
        let on = object
            .filter(|o| o.kind() == "identifier")
            .map(|o| self.t(o))
            .filter(|o| !self.is_local(o));
        let receiver = object.map(|o| self.expr(o));
        let mut args = self.args(n.child_by_field_name("arguments"));
        match (on, name.as_str(), args.len()) {
            (Some("String"), "format", 1..) => {
                // `String.format([locale,] fmt, args…)`.
                let skip = usize::from(!matches!(args[0].value, Expr::Str(_)) && args.len() > 1);
                if let Expr::Str(f) = &args[skip].value {
                    let rest: Vec<Expr> =
                        args[skip + 1..].iter().map(|a| a.value.clone()).collect();
                    if let Some(e) = format(f, &rest) {
                        return e;
                    }
                }
            }
            (Some("String"), "valueOf" | "copyValueOf", 1)
            | (
                Some(
                    "Integer" | "Long" | "Short" | "Byte" | "Double" | "Float" | "Boolean"
                    | "Character" | "Objects" | "String",
                ),
                "toString",
                1,
            )
            | (Some("Objects"), "requireNonNull", 1..) => {
                return Expr::Wrap(Box::new(args.swap_remove(0).value));
            }
            (Some("String"), "join", 1..) => {
                let sep = args.remove(0).value;
                let list = if args.len() == 1 {
                    args.remove(0).value
                } else {
                    Expr::List(args.into_iter().map(|a| a.value).collect())
                };
                return Expr::Join(Box::new(sep), Box::new(list));
            }
            (Some("Arrays"), "asList", _)
            | (Some("List" | "Set" | "Stream" | "ImmutableList" | "ImmutableSet"), "of", _)
            | (Some("Collections"), "singletonList" | "singleton", _)
            | (Some("Lists"), "newArrayList", _)
            | (Some("Sets"), "newHashSet", _) => {
                // A single array given to varargs is that array's elements.
                if let [a] = args.as_slice()
                    && matches!(a.value, Expr::List(_))
                {
                    return args.swap_remove(0).value;
                }
                return Expr::List(args.into_iter().map(|a| a.value).collect());
            }
            (Some("Arrays"), "stream", 1)
            | (
                Some("Collections"),
                "unmodifiableList"
                | "unmodifiableSet"
                | "unmodifiableCollection"
                | "unmodifiableMap",
                1,
            ) => {
                return Expr::Wrap(Box::new(args.swap_remove(0).value));
            }
            (Some("Map" | "ImmutableMap"), "of", _) if args.len().is_multiple_of(2) => {
                let mut kv = Vec::new();
                let mut it = args.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    kv.push((k.value, v.value));
                }
                return Expr::Map(kv);
            }
            _ => {}
        }
        if let Some(r) = &receiver {
            match (name.as_str(), args.len()) {
                ("collect", 1)
                    if let Expr::Call(c) = &args[0].value
                        && c.name == "joining" =>
                {
                    let sep = c
                        .args
                        .first()
                        .map_or(Expr::Str(String::new()), |a| a.value.clone());
                    return Expr::Join(Box::new(sep), Box::new(r.clone()));
                }
                (
                    "toString" | "intern" | "getBytes" | "stream" | "toList" | "collect"
                    | "toArray" | "parallelStream",
                    _,
                ) if !(name == "collect" && args.len() > 1) => {
                    return Expr::Wrap(Box::new(r.clone()));
                }
                ("formatted", _) if let Expr::Str(f) = r => {
                    let rest: Vec<Expr> = args.iter().map(|a| a.value.clone()).collect();
                    if let Some(e) = format(f, &rest) {
                        return e;
                    }
                }
                ("concat" | "append", 1) if texty(r) || is_builder(r) => {
                    let mut pieces = Vec::new();
                    push_piece(&mut pieces, unbuild(r.clone()));
                    push_piece(&mut pieces, args.swap_remove(0).value);
                    return Expr::Wrap(Box::new(concat(pieces)));
                }
                ("map", 1) => {
                    if let Expr::Lambda(cb) = &args[0].value
                        && let [p] = cb.params.as_slice()
                        && !p.rest
                        && let [Stmt::Return(Some(item), _)] = cb.body.as_slice()
                    {
                        return Expr::Comprehension {
                            item: Box::new(item.clone()),
                            bind: Box::new(Target::Name(p.name.clone())),
                            over: Box::new(r.clone()),
                        };
                    }
                }
                _ => {}
            }
        }
        Expr::Call(Box::new(Call {
            receiver,
            name,
            callee: None,
            args,
            new: false,
            at,
        }))
    }

    /// `new T(args)`, with a class body an anonymous class.
    fn new_object(&mut self, n: Node<'_>) -> Expr {
        let ty = n.child_by_field_name("type");
        let name = ty.and_then(|t| self.type_name(t)).unwrap_or_default();
        let at = ty.map_or_else(|| self.at(n), |t| self.at(t));
        let mut args = self.args(n.child_by_field_name("arguments"));
        let body = named(n).into_iter().find(|c| c.kind() == "class_body");
        if let Some(body) = body {
            let members = named(body);
            let methods: Vec<Node<'_>> = members
                .iter()
                .copied()
                .filter(|m| m.kind() == "method_declaration")
                .collect();
            // One method and nothing else: the function it implements.
            if let [m] = methods.as_slice()
                && members.len() == 1
            {
                let mname = m
                    .child_by_field_name("name")
                    .map_or_else(|| "<lambda>".to_string(), |k| self.t(k).to_string());
                let f = self.function(*m, &mname, None);
                return Expr::Lambda(Box::new(f));
            }
            let class = format!("{name}${}", at.line);
            self.unit.classes.push(Class {
                name: class.clone(),
                bases: vec![name],
            });
            let mut module = Vec::new();
            self.class_members(body, &class, &mut module);
            return Expr::Call(Box::new(Call {
                receiver: None,
                name: class,
                callee: None,
                args,
                new: true,
                at,
            }));
        }
        if LIST_CLASSES.contains(&name.as_str()) {
            return match args.pop() {
                Some(a) if !matches!(a.value, Expr::Num(_)) => Expr::Wrap(Box::new(a.value)),
                _ => Expr::List(Vec::new()),
            };
        }
        if MAP_CLASSES.contains(&name.as_str()) {
            return match args.pop() {
                Some(a) if !matches!(a.value, Expr::Num(_)) => Expr::Wrap(Box::new(a.value)),
                _ => Expr::Map(Vec::new()),
            };
        }
        if matches!(name.as_str(), "StringBuilder" | "StringBuffer") {
            let start = match args.pop() {
                Some(a) if !matches!(a.value, Expr::Num(_)) => a.value,
                _ => Expr::Str(String::new()),
            };
            return Expr::Call(Box::new(Call {
                receiver: None,
                name,
                callee: None,
                args: vec![Arg::pos(start)],
                new: true,
                at,
            }));
        }
        if name == "String" && !args.is_empty() {
            return Expr::Wrap(Box::new(args.swap_remove(0).value));
        }
        Expr::Call(Box::new(Call {
            receiver: None,
            name,
            callee: None,
            args,
            new: true,
            at,
        }))
    }

    /// `new T[]{…}` (a list; of ASCII bytes, the text they spell), `new T[n]`.
    fn array(&mut self, n: Node<'_>) -> Expr {
        let Some(v) = n.child_by_field_name("value") else {
            return self.other(n);
        };
        let bytes_type = n
            .child_by_field_name("type")
            .is_some_and(|t| t.kind() == "integral_type" && self.t(t) == "byte");
        let dims = {
            let mut c = n.walk();
            n.children_by_field_name("dimensions", &mut c)
                .map(|d| self.t(d).matches('[').count())
                .sum::<usize>()
        };
        if bytes_type && dims < 2 {
            return match self.byte_text(v) {
                Some(s) => Expr::Str(s),
                None => self.other(v),
            };
        }
        self.array_items(v)
    }

    /// `{a, b}`: a list; of hexadecimal ASCII bytes, the text they spell.
    fn array_items(&mut self, n: Node<'_>) -> Expr {
        let items = named(n);
        if !items.is_empty()
            && items.iter().all(|i| i.kind() == "hex_integer_literal")
            && let Some(s) = self.byte_text(n)
        {
            return Expr::Str(s);
        }
        Expr::List(items.into_iter().map(|i| self.expr(i)).collect())
    }

    /// The text an array of number literals spells, when every one is an ASCII byte.
    fn byte_text(&self, list: Node<'_>) -> Option<String> {
        let mut out = String::new();
        for c in named(list) {
            let t = self.t(c);
            let v = match c.kind() {
                "hex_integer_literal" => {
                    u32::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16)
                        .ok()?
                }
                "decimal_integer_literal" => t.parse().ok()?,
                _ => return None,
            };
            out.push(char::from_u32(v).filter(char::is_ascii)?);
        }
        Some(out)
    }
}

/// Whether an expression makes a `StringBuilder` (`new StringBuilder(…)`, or text appended
/// to one).
fn is_builder(e: &Expr) -> bool {
    match e {
        Expr::Call(c) => c.new && matches!(c.name.as_str(), "StringBuilder" | "StringBuffer"),
        Expr::Wrap(x) => matches!(&**x, Expr::Concat(_) | Expr::Str(_)) || is_builder(x),
        _ => false,
    }
}

/// The text a builder holds (`new StringBuilder(a)` → `a`).
fn unbuild(e: Expr) -> Expr {
    match e {
        Expr::Call(c) if c.new && matches!(c.name.as_str(), "StringBuilder" | "StringBuffer") => c
            .args
            .into_iter()
            .next()
            .map_or(Expr::Str(String::new()), |a| a.value),
        Expr::Wrap(x) => unbuild(*x),
        other => other,
    }
}

/// Whether an expression calls something or makes a closure (worth keeping in
/// [`Expr::Other`]).
fn has_call(e: &Expr) -> bool {
    match e {
        Expr::Call(_) | Expr::Lambda(_) => true,
        Expr::Str(_) | Expr::Num(_) | Expr::Name(_) => false,
        Expr::Field(x, _) | Expr::Spread(x) | Expr::Wrap(x) => has_call(x),
        Expr::Index(a, b) | Expr::Join(a, b) => has_call(a) || has_call(b),
        Expr::Concat(xs) | Expr::List(xs) | Expr::Either(xs) | Expr::Other(xs) => {
            xs.iter().any(has_call)
        }
        Expr::Map(kv) => kv.iter().any(|(k, v)| has_call(k) || has_call(v)),
        Expr::Comprehension { item, over, .. } => has_call(item) || has_call(over),
    }
}

/// A text block's lines without the indentation they share (and without the line break that
/// follows the opening quotes).
fn strip_text_block(s: &str) -> String {
    let s = s.strip_prefix('\n').unwrap_or(s);
    let indent = s
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, l) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(l.get(indent..).unwrap_or(l.trim_start()).trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::engine::{self, Source};
    use crate::code::guard::{MAX_DEPTH, READER_STACK, Unreadable};
    use crate::code::profile::Profile;
    use crate::code::{FileFindings, SiteKind, Verdict, texts};

    /// The findings of Java files `(name, text)` read together through the model.
    fn read(files: &[(&str, &str)]) -> Vec<FileFindings> {
        let units: Vec<Unit> = files.iter().map(|(_, t)| lower(t).unwrap()).collect();
        let sources: Vec<Source<'_>> = files
            .iter()
            .zip(&units)
            .map(|((f, _), unit)| Source { file: f, unit })
            .collect();
        engine::analyse(&sources, &Profile::builtin("java"), &[])
    }

    fn read_one(text: &str) -> FileFindings {
        read(&[("A.java", text)]).remove(0)
    }

    fn ops(f: &FileFindings) -> Vec<(usize, &str)> {
        f.sites.iter().map(|s| (s.at.line, s.op.as_str())).collect()
    }

    fn cross(f: &FileFindings, i: usize) -> bool {
        matches!(f.sites[i].verdict(), Verdict::CrossSlot(_))
    }

    fn one_slot(f: &FileFindings, i: usize) -> bool {
        matches!(f.sites[i].verdict(), Verdict::OneSlot(_))
    }

    fn depends(f: &FileFindings, i: usize) -> bool {
        matches!(f.sites[i].verdict(), Verdict::Depends(_))
    }

    // ----- the Java reader's cases, read through the model -----

    /// Two files define `getId`: a test's returns text, the session's what its field's object
    /// says. A call of `getId()` on an object is neither to be guessed; a static key method
    /// one file defines still resolves.
    #[test]
    fn a_method_another_file_defines_unknowably_is_not_guessed() {
        let f = read(&[
            (
                "CustomSession.java",
                "class CustomSession {\n    public String getId() { return \"id\"; }\n    public static String userKey(String id) { return \"user:\" + id; }\n}\n",
            ),
            (
                "Session.java",
                "class Session {\n    private MapSession cached;\n    public String getId() { return this.cached.getId(); }\n}\n",
            ),
            (
                "Repo.java",
                r#"
class Repo {
    private StringRedisTemplate ops;
    void change(Session s, String old) {
        ops.rename("sessions:" + s.getId(), "sessions:" + old);
        ops.rename(CustomSession.userKey(old), CustomSession.userKey(s.id));
    }
}
"#,
            ),
        ]);
        let repo = &f[2];
        assert_eq!(
            ops(repo),
            [(5, "RENAME"), (6, "RENAME")],
            "{:?}",
            repo.sites
        );
        let first = texts(&repo.sites[0]);
        assert_eq!(first[1], "sessions:<old>");
        assert!(
            first[0].starts_with("sessions:<") && first[0] != "sessions:id",
            "{first:?}"
        );
        assert_eq!(texts(&repo.sites[1]), ["user:<old>", "user:<s.id>"]);
    }

    /// Jedis, Spring Data Redis, Lettuce and Redisson, as the Java reader was tested on them.
    /// Differences from the reader: Lettuce's commands object is declared with its type
    /// (the model reads a variable as a client by its type or name, and `commands` says
    /// neither); Redisson's batch names the work queued (`setAsync`), Spring's script run is
    /// named by its method (`EXECUTE`).
    #[test]
    fn jedis_spring_lettuce_redisson_forms() {
        let f = read_one(
            r#"
class Store {
  private static final String PREFIX = "app";
  private String userKey(String uid) { return PREFIX + ":user:" + uid; }
  void load(String uid, List<String> keys, RedisCommands<String, String> commands) {
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
        assert_eq!(
            ops(&f),
            [
                (6, "MGET"),
                (7, "MGET"),
                (8, "SET INCR"),
                (12, "DEL"),
                (15, "EVAL"),
                (16, "EVAL"),
                (17, "BLPOP"),
                (18, "MGET"),
                (19, "DEL"),
                (20, "GET GET"),
                (25, "SET EXPIRE"),
                (29, "setAsync putAsync"),
                (33, "EXECUTE"),
            ],
            "{:?}",
            f.sites
        );
        assert_eq!(texts(&f.sites[0]), ["app:user:<uid>", "app:settings:<uid>"]);
        assert!(cross(&f, 0));
        assert!(one_slot(&f, 1));
        assert_eq!(f.sites[2].kind, SiteKind::Pipeline);
        assert_eq!(f.sites[2].send.map(|p| p.line), Some(11));
        assert!(cross(&f, 2));
        assert_eq!(f.sites[3].kind, SiteKind::Transaction);
        assert!(depends(&f, 3));
        assert!(one_slot(&f, 4));
        assert!(cross(&f, 5));
        assert_eq!(texts(&f.sites[6]), ["q:<uid>", "q2:<uid>"]);
        assert!(cross(&f, 7));
        assert!(depends(&f, 8));
        assert!(one_slot(&f, 9));
        assert_eq!(f.sites[10].kind, SiteKind::Transaction);
        assert!(cross(&f, 10));
        assert_eq!(texts(&f.sites[11]), ["b:<uid>", "h:<uid>"]);
        assert!(one_slot(&f, 12));
    }

    // ----- what the model reads that the reader did not -----

    /// Injected and constructor-given clients, Spring's `SessionCallback`, try-with-resources,
    /// keys collected in loops and streams, array varargs, `StringBuilder` keys and a
    /// pipelined callback looping over a literal list.
    #[test]
    fn fields_callbacks_resources_loops_and_builders() {
        let f = read_one(
            r#"package com.shop;

public class Repo {
  private static final String PREFIX = "shop";
  @Autowired
  private StringRedisTemplate template;
  private final JedisPool pool;
  private final String ns;

  public Repo(JedisPool pool) {
    this.pool = pool;
    this.ns = "ns";
  }

  void session(String uid) {
    template.execute(new SessionCallback<Object>() {
      public Object execute(RedisOperations operations) {
        operations.multi();
        operations.opsForValue().set("s1:" + uid, "1");
        operations.opsForValue().set("s2:" + uid, "1");
        return operations.exec();
      }
    });
  }

  void pipe(String uid) {
    try (Jedis jedis = pool.getResource(); Pipeline p = jedis.pipelined()) {
      p.set(PREFIX + ":a:" + uid, "1");
      p.set(ns + ":b:" + uid, "1");
    }
  }

  void loop(List<String> ids) {
    List<String> keys = new ArrayList<>();
    for (String id : ids) {
      keys.add(String.format("%s:item:%s", PREFIX, id));
    }
    template.delete(keys);
    String[] two = {"x:{1}", "y:{1}"};
    template.delete(Arrays.asList(two));
    StringBuilder sb = new StringBuilder(PREFIX);
    sb.append(":z:");
    sb.append(ids.get(0));
    template.opsForValue().multiGet(List.of(sb.toString(), "w"));
    List<String> ks = ids.stream().map(i -> "k:" + i).collect(Collectors.toList());
    template.delete(ks);
    template.executePipelined((RedisCallback<Object>) conn -> {
      for (String id : List.of("a", "b")) {
        conn.stringCommands().get(("c:" + id).getBytes());
      }
      return null;
    });
  }
}
"#,
        );
        assert_eq!(
            ops(&f),
            [
                (18, "SET SET"),
                (27, "SET SET"),
                (38, "DEL"),
                (40, "DEL"),
                (44, "MGET"),
                (46, "DEL"),
                (47, "GET GET"),
            ],
            "{:?}",
            f.sites
        );
        assert_eq!(f.sites[0].kind, SiteKind::Transaction);
        assert_eq!(f.sites[0].send.map(|p| p.line), Some(21));
        assert_eq!(texts(&f.sites[1]), ["shop:a:<uid>", "ns:b:<uid>"]);
        assert_eq!(f.sites[1].send.map(|p| p.line), Some(30));
        assert!(texts(&f.sites[2])[0].starts_with("shop:item:<id"));
        assert!(one_slot(&f, 3));
        assert_eq!(texts(&f.sites[4]), ["shop:z:<ids.get(0)>", "w"]);
        assert!(texts(&f.sites[5])[0].starts_with("k:<i"));
        assert_eq!(texts(&f.sites[6]), ["c:a", "c:b"]);
        assert!(cross(&f, 6));
    }

    /// A Jedis pool's connections taken in try-with-resources (a variable named after the
    /// client's class is one), a Spring script kept in a field and run with keys built by
    /// helpers, and a hash's fields deleted (one key: no site).
    #[test]
    fn pooled_connections_scripts_and_one_key_operations() {
        let f = read(&[
            (
                "RateLimiter.java",
                r#"public class RateLimiter {
    private static final String KEY_PREFIX = "rate:";
    private final StringRedisTemplate redisTemplate;
    private final DefaultRedisScript<Long> script;
    public RateLimiter(StringRedisTemplate redisTemplate) {
        this.redisTemplate = redisTemplate;
        this.script = new DefaultRedisScript<>(LUA, Long.class);
    }
    private String tokensKey(String id) { return KEY_PREFIX + id + ":tokens"; }
    private String tsKey(String id) { return KEY_PREFIX + id + ":ts"; }
    public boolean allow(String id) {
        List<String> keys = Arrays.asList(tokensKey(id), tsKey(id));
        Long r = redisTemplate.execute(script, keys, "10", "1");
        return r != null && r == 1L;
    }
    public void clear(String id, String field) {
        redisTemplate.opsForHash().delete(tokensKey(id), field, "other");
    }
}
"#,
            ),
            (
                "Cache.java",
                r#"public class Cache {
    private final JedisPool pool;
    public Cache(JedisPool pool) { this.pool = pool; }
    public void touch(String user) {
        try (Jedis jedis = pool.getResource()) {
            Transaction t = jedis.multi();
            t.incr(String.format("visits:{%s}", user));
            t.expire(String.format("visits:{%s}", user), 3600);
            t.sadd("users", user);
            t.exec();
        }
    }
}
"#,
            ),
        ]);
        assert_eq!(ops(&f[0]), [(13, "EXECUTE")], "{:?}", f[0].sites);
        assert_eq!(texts(&f[0].sites[0]), ["rate:<id>:tokens", "rate:<id>:ts"]);
        assert!(cross(&f[0], 0));
        assert_eq!(ops(&f[1]), [(6, "INCR EXPIRE SADD")], "{:?}", f[1].sites);
        assert_eq!(f[1].sites[0].send.map(|p| p.line), Some(10));
        assert_eq!(texts(&f[1].sites[0]), ["visits:{<user>}", "users"]);
        assert!(cross(&f[1], 0));
    }

    // ----- the model -----

    #[test]
    fn classes_fields_methods_and_imports() {
        let u = lower(
            "package a.b;\nimport x.y.Keys;\nimport static x.y.Keys.user;\nimport x.z.*;\nclass C extends B implements I, J<K> {\n  static final String P = \"p\";\n  private Jedis j;\n  C(Jedis j) { this.j = j; }\n  static String k(String id) { return P + id; }\n  void m(String... ids) { j.del(k(ids[0])); }\n}\n",
        )
        .unwrap();
        assert_eq!(u.module.as_deref(), Some("a.b.C"));
        assert_eq!(
            u.imports,
            [
                ("Keys".to_string(), "x.y.Keys".to_string(), None),
                (
                    "user".to_string(),
                    "x.y.Keys".to_string(),
                    Some("user".to_string())
                ),
            ]
        );
        assert_eq!(u.classes[0].name, "C");
        assert_eq!(u.classes[0].bases, ["B", "I", "J"]);
        // The module body holds the static field; the class body the fields; then the
        // constructor and methods in order.
        assert_eq!(
            u.funcs[0].body,
            [Stmt::Assign {
                target: Target::Name("P".into()),
                value: Expr::str("p"),
                at: Position { line: 6, column: 3 },
            }]
        );
        let names: Vec<&str> = u.funcs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, [MODULE_BODY, CLASS_BODY, "constructor", "k", "m"]);
        let body = &u.funcs[1];
        assert_eq!(body.params[0].name, "j");
        assert_eq!(body.params[0].ty.as_deref(), Some("Jedis"));
        let k = &u.funcs[3];
        assert!(k.is_static && k.receiver.is_none());
        let m = &u.funcs[4];
        assert!(m.params[0].rest);
        assert_eq!(m.params[0].ty.as_deref(), Some("String"));
        // `j` is the field; `k(…)` a bare call at its name.
        let Stmt::Expr(Expr::Call(c)) = &m.body[0] else {
            panic!("{:?}", m.body)
        };
        assert_eq!(c.receiver, Some(Expr::field(Expr::name("this"), "j")));
        assert_eq!(
            c.at,
            Position {
                line: 10,
                column: 29
            }
        );
        let Expr::Call(inner) = &c.args[0].value else {
            panic!("{c:?}")
        };
        assert_eq!(inner.name, "k");
        assert!(inner.receiver.is_none());
    }

    #[test]
    fn strings_are_built_from_pieces() {
        let u = lower(
            "class A { void m(String id, int n) {\n  String a = \"x:\" + id + ':' + n;\n  String b = String.format(\"%s:%05d:%%\", id, n);\n  String c = String.join(\",\", \"a\", id);\n  String d = String.valueOf(n) + \"\\t\";\n  byte[] e = new byte[]{0x61, 0x62};\n  int f = n + 1;\n  String g = \"%s-%s\".formatted(id, n);\n} }\n",
        )
        .unwrap();
        let values: Vec<&Expr> = u.funcs[1]
            .body
            .iter()
            .map(|s| match s {
                Stmt::Assign { value, .. } => value,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            *values[0],
            Expr::Concat(vec![
                Expr::str("x:"),
                Expr::name("id"),
                Expr::str(":"),
                Expr::name("n")
            ])
        );
        assert_eq!(
            *values[1],
            Expr::Concat(vec![
                Expr::name("id"),
                Expr::str(":"),
                Expr::name("n"),
                Expr::str(":%")
            ])
        );
        assert_eq!(
            *values[2],
            Expr::Join(
                Box::new(Expr::str(",")),
                Box::new(Expr::List(vec![Expr::str("a"), Expr::name("id")]))
            )
        );
        assert_eq!(
            *values[3],
            Expr::Concat(vec![Expr::Wrap(Box::new(Expr::name("n"))), Expr::str("\t")])
        );
        assert_eq!(*values[4], Expr::str("ab"));
        assert!(matches!(values[5], Expr::Other(_)));
        assert_eq!(
            *values[6],
            Expr::Concat(vec![Expr::name("id"), Expr::str("-"), Expr::name("n")])
        );
    }

    #[test]
    fn control_flow_and_resources() {
        let u = lower(
            "class A { void m(List<String> ks) {\n  for (String k : ks) { r.del(k); }\n  if (ok()) { a(); } else { b(); }\n  try (Pipeline p = r.pipelined()) {\n    p.set(\"k\", \"v\");\n  } catch (Exception e) { c(); } finally { d(); }\n  for (int i = 0; i < 3; i++) { e(i); }\n} }\n",
        )
        .unwrap();
        let body = &u.funcs[1].body;
        assert!(matches!(
            &body[0],
            Stmt::Loop { bind: Some(Target::Name(k)), over: Some(Expr::Name(o)), body }
                if k == "k" && o == "ks" && body.len() == 1
        ));
        assert!(matches!(&body[1], Stmt::Expr(Expr::Call(c)) if c.name == "ok"));
        assert!(matches!(&body[2], Stmt::Branch(arms) if arms.len() == 2));
        let Stmt::With {
            value: Expr::Call(c),
            bind: Some(Target::Name(p)),
            body: inner,
            end,
        } = &body[3]
        else {
            panic!("{:?}", body[3])
        };
        assert_eq!(
            (c.name.as_str(), p.as_str(), inner.len()),
            ("pipelined", "p", 1)
        );
        assert_eq!(
            *end,
            Position {
                line: 6,
                column: 50
            }
        );
        assert!(matches!(&body[4], Stmt::Branch(arms) if arms[0].len() == 1 && arms[1].is_empty()));
        assert!(matches!(&body[5], Stmt::Expr(Expr::Call(c)) if c.name == "d"));
        assert!(matches!(&body[6], Stmt::Assign { .. }));
        assert!(matches!(&body[7], Stmt::Loop { bind: None, body, .. } if body.len() == 2));
    }

    #[test]
    fn closures_anonymous_classes_and_collections() {
        let u = lower(
            "class A { void m(String id) {\n  t.executePipelined((RedisCallback<Object>) c -> { c.get(id); return null; });\n  t.execute(new SessionCallback<Object>() { public Object execute(RedisOperations o) { return o.exec(); } });\n  Runnable x = new Thread() { int n = 1; public void run() { go(n); } };\n  List<String> l = new ArrayList<>();\n  l.add(\"a\");\n  Map<String, String> h = new HashMap<>();\n  h.put(\"k\", id);\n  Object f = this::save;\n} }\n",
        )
        .unwrap();
        let body = &u.funcs[1].body;
        let Stmt::Expr(Expr::Call(c)) = &body[0] else {
            panic!("{body:?}")
        };
        assert!(
            matches!(&c.args[0].value, Expr::Wrap(l) if matches!(&**l, Expr::Lambda(f) if f.params[0].name == "c"))
        );
        let Stmt::Expr(Expr::Call(c)) = &body[1] else {
            panic!("{body:?}")
        };
        assert!(
            matches!(&c.args[0].value, Expr::Lambda(f) if f.name == "execute" && f.params[0].ty.as_deref() == Some("RedisOperations"))
        );
        assert!(
            matches!(&body[2], Stmt::Assign { value: Expr::Call(c), .. } if c.new && c.name == "Thread$4")
        );
        assert!(
            u.funcs
                .iter()
                .any(|f| f.name == "run" && f.class.as_deref() == Some("Thread$4"))
        );
        assert!(matches!(&body[3], Stmt::Assign { value: Expr::List(xs), .. } if xs.is_empty()));
        // A push to a local list: no call kept.
        assert!(matches!(&body[4], Stmt::Push { value: Expr::Str(s), .. } if s == "a"));
        assert!(matches!(
            &body[5],
            Stmt::Assign {
                value: Expr::Map(_),
                ..
            }
        ));
        assert!(matches!(
            &body[6],
            Stmt::Assign {
                target: Target::Index(..),
                ..
            }
        ));
        assert!(
            matches!(&body[7], Stmt::Assign { value: Expr::Field(o, m), .. }
            if **o == Expr::name("this") && m == "save")
        );
    }

    #[test]
    fn broken_code_is_lowered_as_far_as_it_goes() {
        let u = lower("class A { void m() { r.mget(\"a\", \"b\"); r.get( } }\n").unwrap();
        assert!(format!("{u:?}").contains("mget"));
    }

    // ----- depth -----

    fn too_deep(text: &str) -> bool {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_java::LANGUAGE.into())
            .unwrap();
        guard::deeper_than(&parser.parse(text, None).unwrap(), MAX_DEPTH)
    }

    /// Every nested shape the Java reader is tested on, at the deepest nesting still read, is
    /// lowered on a thread of [`READER_STACK`] (unoptimised, as the tests run) and keeps the
    /// call at its bottom; one level of nesting past that is refused.
    #[test]
    fn the_deepest_trees_read_are_lowered_on_the_readers_stack() {
        use crate::code::guard::tests::{SHAPES, nested};
        let shapes = SHAPES.iter().find(|(e, _)| *e == "java").unwrap().1;
        for shape in shapes {
            let (mut lo, mut hi) = (1, 2 * MAX_DEPTH);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if too_deep(&nested("java", shape, mid)) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let text = nested("java", shape, lo);
            let found = std::thread::Builder::new()
                .stack_size(READER_STACK)
                .spawn(move || {
                    let u = lower(&text).unwrap();
                    let d = format!("{u:?}");
                    d.contains("\"mget\"") || d.contains("\"set\"")
                })
                .unwrap()
                .join()
                .unwrap();
            assert!(found, "{shape} at {lo} levels");
            assert!(
                matches!(
                    lower(&nested("java", shape, hi)),
                    Err(LowerError::Unreadable(Unreadable::TooDeep))
                ),
                "{shape} at {hi} levels"
            );
        }
    }

    /// Far past the bound, refused by a walk that does not recurse (on the test's own stack).
    #[test]
    fn deeper_trees_are_refused_on_any_stack() {
        use crate::code::guard::tests::nested;
        for shape in ["blocks", "calls", "concat", "closures"] {
            assert!(matches!(
                lower(&nested("java", shape, 10 * MAX_DEPTH)),
                Err(LowerError::Unreadable(Unreadable::TooDeep))
            ));
        }
    }
}
