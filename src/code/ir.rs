//! The language-neutral model every language's source is lowered into before it is read for
//! Redis keys and batches: functions and methods with their parameters, assignments, string
//! building, calls with their arguments, closures, loops and branches. Nothing more of a
//! language is kept: the analysis ([`super::engine`]) runs once, on this model, for every
//! language, and what differs between clients is data (`rules/code/*.yml`).
//!
//! A lowering (`lower/<language>.rs`) turns one file's syntax tree into a [`Unit`]. Its rules:
//!
//! - **Everything is an expression or one of the few statements.** Code the model has no word
//!   for becomes [`Expr::Other`] (its sub-expressions that are calls still lowered, in
//!   [`Expr::Other`]'s list, so calls inside them are not lost) or [`Stmt::Expr`].
//! - **Strings are built, not formatted.** f-strings, template literals, `+` of strings,
//!   `"...".format(...)`, `"%s:%s" % (a, b)`, `fmt.Sprintf("%s:%d", a, b)`,
//!   `String.format(...)`, Ruby `"#{a}"` all become [`Expr::Concat`] of literal pieces
//!   ([`Expr::Str`]) and values. A printf-style format whose text is only known once its
//!   value is followed (`KEY % uid`, `fmt.Sprintf(keyFmt, id)`) is a call of [`PRINTF`] on
//!   the format, with the values to fill in as its arguments, in order.
//!   `sep.join(list)` / `list.join(sep)` / `strings.Join(list, sep)` / `String.join(sep, ...)`
//!   become [`Expr::Join`].
//! - **A call names its receiver and method** (`a.b.c(x)` is a call of `c` on `a.b`); a call of
//!   a bare name has no receiver; `new Foo(x)` is a call of `Foo` with [`Call::new`] set.
//!   Arguments keep their keywords (`keys=[...]`), spreads (`*keys`, `...keys`, `keys...`) and
//!   blocks (a Ruby block, a closure argument: an [`Expr::Lambda`]).
//! - **Scope**: a function's body is its statements; nested functions and closures are
//!   [`Expr::Lambda`] values (a nested `def f` is `f = lambda`); a class's methods are
//!   [`Func`]s of the unit with [`Func::class`] set, and its field initialisers are
//!   assignments to `self.field` in a function named [`CLASS_BODY`].
//! - **Control flow only as far as it matters**: loops ([`Stmt::Loop`], with the loop
//!   variable and what it runs over when the language says so), branches ([`Stmt::Branch`],
//!   one list of statements per arm; a condition's calls go in a [`Stmt::Expr`] before it),
//!   `with`/`using`/try-with-resources ([`Stmt::With`]), `try` bodies inline (their `catch`
//!   arms as branch arms).
//! - Positions are where the node starts, 1-based line and column in characters.

use super::Position;

/// The name of the function holding a class's field initialisers (`class A: key = "a"`,
/// `class A { key = "a"; }`): assignments to `self.<field>`.
pub const CLASS_BODY: &str = "<class>";

/// The method name of a printf-style formatting whose format is not a literal: a call of it
/// on the format (its receiver), the values to fill in its arguments (`KEY % (a, b)` →
/// `KEY.%(a, b)`). The analysis fills the format's `%` verbs once it knows its text.
pub const PRINTF: &str = "%";

/// The name of the function holding a file's top-level statements.
pub const MODULE_BODY: &str = "<module>";

/// One source file, lowered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unit {
    /// The module's name as other files import it (Python `pkg.mod`, JavaScript the path
    /// without extension), when known; informational.
    pub module: Option<String>,
    /// Names this file imports: local name → (module as written, name in it; `None` for the
    /// whole module). `from a.b import c as d` → `d → (a.b, Some(c))`; `import x` →
    /// `x → (x, None)`; `const { c } = require("./b")` → `c → (./b, Some(c))`.
    pub imports: Vec<(String, String, Option<String>)>,
    /// Classes: name and the names of the classes it extends (as written, last segment).
    pub classes: Vec<Class>,
    /// Every function of the file: [`MODULE_BODY`] first (the top-level statements), then
    /// each function and method in source order. Closures are not here: they are
    /// [`Expr::Lambda`] values where they are written.
    pub funcs: Vec<Func>,
    /// The package the file says it belongs to, where a language has files share one
    /// namespace per package (Go's `package keys`): `keys.User(…)` and `keys.Prefix` in a file
    /// that imports the package (by a path ending in its name, or under that name) name the
    /// top-level function or value of one of its files. `None` elsewhere.
    pub package: Option<String>,
}

/// A class (or a Go struct type with methods, a Ruby module).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Class {
    /// Its name.
    pub name: String,
    /// What it extends or includes (last name segment: `redis.Redis` → `Redis`).
    pub bases: Vec<String>,
}

/// A function, method or closure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Func {
    /// Its name ([`MODULE_BODY`], [`CLASS_BODY`], or `<lambda>` for a closure).
    pub name: String,
    /// The class (Go: the receiver's type, without `*`) it is a method of.
    pub class: Option<String>,
    /// The name its body calls its own object by (`self`, `this`, Go's receiver name, Ruby's
    /// implicit receiver as `self`); `None` for plain functions.
    pub receiver: Option<String>,
    /// Its parameters, the receiver left out (Python's `self`/`cls` included in
    /// [`Func::receiver`], not here).
    pub params: Vec<Param>,
    /// Its statements.
    pub body: Vec<Stmt>,
    /// Where it is defined.
    pub at: Position,
    /// Whether it is a static/class method (called on the class, not an instance).
    pub is_static: bool,
    /// Its declared result type's last name segment, when it declares one result (`func
    /// Get() redis.Conn` → `Conn`); `None` otherwise.
    pub returns: Option<String>,
}

/// A parameter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Whether it takes the rest of the arguments as a list (`*args`, `...args`, `args ...T`,
    /// `String... args`).
    pub rest: bool,
    /// Whether it takes keyword arguments as a map (`**kwargs`).
    pub kwrest: bool,
    /// Its default value, when written.
    pub default: Option<Expr>,
    /// Its declared type's last name segment, when written (`pipe redis.Pipeliner` →
    /// `Pipeliner`, `Jedis jedis` → `Jedis`, `p: Pipeline` → `Pipeline`).
    pub ty: Option<String>,
}

/// A statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `target = value` (also `let`/`const`/`var`/`:=`, a declaration with a value, `+=` as
    /// `target = Concat[target, value]` for strings or [`Stmt::Push`] for lists when the
    /// lowering can tell; otherwise `+=` is `target = Concat[target, value]`).
    Assign {
        /// Where the value goes.
        target: Target,
        /// The value.
        value: Expr,
        /// Where the statement is.
        at: Position,
    },
    /// `list.append(x)`, `list.push(x)`, `list.extend(xs)` (spread), `list << x`,
    /// `list = append(list, x...)`, `list.add(x)`: elements added to a list variable. The
    /// call is also kept as [`Stmt::Expr`] only when its receiver is not a plain list name
    /// (the lowering may emit both when it cannot tell: the engine ignores a push to a
    /// name it knows nothing of).
    Push {
        /// The list.
        target: Target,
        /// What is added (an [`Expr::Spread`] for `extend`/`...`).
        value: Expr,
        /// Where the statement is.
        at: Position,
    },
    /// An expression evaluated for its effects (a call).
    Expr(Expr),
    /// `return value`.
    Return(Option<Expr>, Position),
    /// A loop: `for bind in over: body`, `while …: body`, `xs.forEach(x => …)` when the
    /// lowering sees it (else the closure is an argument like any other).
    Loop {
        /// The loop variable(s).
        bind: Option<Target>,
        /// What it runs over.
        over: Option<Expr>,
        /// Its statements.
        body: Vec<Stmt>,
    },
    /// Branches (`if`/`elif`/`else`, `switch`/`case`, `try`/`catch`): one arm each; an `if`
    /// without `else` has an empty arm for the path that skips it.
    Branch(Vec<Vec<Stmt>>),
    /// `with value as bind: body` (Python), `try (T bind = value) { body }` (Java): the value
    /// is entered, bound, and left after the body (a pipeline made there is sent when the
    /// block ends).
    With {
        /// The value entered.
        value: Expr,
        /// What it is bound to.
        bind: Option<Target>,
        /// Its statements.
        body: Vec<Stmt>,
        /// Where the block ends.
        end: Position,
    },
}

/// Where an assignment puts a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A local (or module) variable.
    Name(String),
    /// A field: `obj.field` (`self.script`, `this.redis`).
    Field(Expr, String),
    /// An element: `obj[index]`.
    Index(Expr, Expr),
    /// Several at once (`a, b = …`, `[a, b] = …`, `{a, b} = …` by name).
    Tuple(Vec<Target>),
    /// Anything else.
    Other,
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Literal text (escapes already resolved).
    Str(String),
    /// A number, `true`/`false`/`null`/`None`/`nil` as written.
    Num(String),
    /// A name (`self`, `this` included).
    Name(String),
    /// `obj.field`.
    Field(Box<Expr>, String),
    /// `obj[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// A string built of pieces, in order.
    Concat(Vec<Expr>),
    /// The elements of a list joined by a separator: (separator, list).
    Join(Box<Expr>, Box<Expr>),
    /// A call.
    Call(Box<Call>),
    /// A list, tuple, array or set literal, elements in order (spreads as [`Expr::Spread`]).
    List(Vec<Expr>),
    /// A dict, map or object literal: (key, value), in order; `{a}` shorthand is
    /// `(Str("a"), Name("a"))`; a spread entry is `(Spread(x), Other)`.
    Map(Vec<(Expr, Expr)>),
    /// `*xs`, `...xs`, `xs...`.
    Spread(Box<Expr>),
    /// A closure or nested function.
    Lambda(Box<Func>),
    /// One of several values (`a if c else b`, `c ? a : b`, `a || b`, `a or b`, `a ?? b`).
    Either(Vec<Expr>),
    /// A list made by a comprehension or a map over a list: `[f(x) for x in xs]`,
    /// `xs.map(x => f(x))`: each element is `item` with `bind` taken from `over`.
    Comprehension {
        /// The element made.
        item: Box<Expr>,
        /// The loop variable.
        bind: Box<Target>,
        /// What it runs over.
        over: Box<Expr>,
    },
    /// `await x`, `yield x`, a cast, parentheses, `x!`, `x as T`: the value of `x`.
    Wrap(Box<Expr>),
    /// Anything else; the expressions inside it that are worth reading (calls, lambdas).
    Other(Vec<Expr>),
}

/// A call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// What it is called on (`a.b` of `a.b.c(x)`); `None` for a bare name.
    pub receiver: Option<Expr>,
    /// The function or method name (`c`); for a call of a computed value (`f()()`,
    /// `handlers[x](y)`) the lowering writes `""` and puts the callee in
    /// [`Call::callee`].
    pub name: String,
    /// The callee when it is not a name (a call's result, an index).
    pub callee: Option<Expr>,
    /// Its arguments, in order.
    pub args: Vec<Arg>,
    /// Whether it is `new Name(...)` (JavaScript, Java) or `Name.new(...)` (Ruby).
    pub new: bool,
    /// Where the call is: the start of its method name (`pipe.execute()` → `execute`), or of
    /// the call for a bare name.
    pub at: Position,
}

/// One argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    /// Its keyword (`keys=` in Python, `keys:` in Ruby), when named.
    pub keyword: Option<String>,
    /// Its value (a spread as [`Expr::Spread`], a block or closure as [`Expr::Lambda`]).
    pub value: Expr,
}

impl Arg {
    /// A positional argument.
    pub fn pos(value: Expr) -> Arg {
        Arg {
            keyword: None,
            value,
        }
    }

    /// A keyword argument.
    pub fn kw(keyword: impl Into<String>, value: Expr) -> Arg {
        Arg {
            keyword: Some(keyword.into()),
            value,
        }
    }
}

impl Expr {
    /// Literal text.
    pub fn str(s: impl Into<String>) -> Expr {
        Expr::Str(s.into())
    }

    /// A name.
    pub fn name(s: impl Into<String>) -> Expr {
        Expr::Name(s.into())
    }

    /// `self.field`.
    pub fn field(obj: Expr, field: impl Into<String>) -> Expr {
        Expr::Field(Box::new(obj), field.into())
    }

    /// The call `receiver.name(args)` at `at`.
    pub fn call(
        receiver: Option<Expr>,
        name: impl Into<String>,
        args: Vec<Arg>,
        at: Position,
    ) -> Expr {
        Expr::Call(Box::new(Call {
            receiver,
            name: name.into(),
            callee: None,
            args,
            new: false,
            at,
        }))
    }

    /// The dotted text of a name or a chain of fields (`self.redis.conn`), when it is one:
    /// used to name runtime values after the code.
    pub fn dotted(&self) -> Option<String> {
        match self {
            Expr::Name(n) => Some(n.clone()),
            Expr::Field(o, f) => Some(format!("{}.{f}", o.dotted()?)),
            Expr::Wrap(x) => x.dotted(),
            _ => None,
        }
    }
}

impl Unit {
    /// Every function of the unit, closures included (depth first, in source order), each
    /// with the index of the top-level function it is written in.
    pub fn all_funcs(&self) -> Vec<(usize, &Func)> {
        fn in_stmts<'a>(top: usize, body: &'a [Stmt], out: &mut Vec<(usize, &'a Func)>) {
            for s in body {
                match s {
                    Stmt::Assign { target, value, .. } | Stmt::Push { target, value, .. } => {
                        in_target(top, target, out);
                        in_expr(top, value, out);
                    }
                    Stmt::Expr(e) | Stmt::Return(Some(e), _) => in_expr(top, e, out),
                    Stmt::Return(None, _) => {}
                    Stmt::Loop { bind, over, body } => {
                        if let Some(b) = bind {
                            in_target(top, b, out);
                        }
                        if let Some(o) = over {
                            in_expr(top, o, out);
                        }
                        in_stmts(top, body, out);
                    }
                    Stmt::Branch(arms) => {
                        for a in arms {
                            in_stmts(top, a, out);
                        }
                    }
                    Stmt::With {
                        value, bind, body, ..
                    } => {
                        in_expr(top, value, out);
                        if let Some(b) = bind {
                            in_target(top, b, out);
                        }
                        in_stmts(top, body, out);
                    }
                }
            }
        }
        fn in_target<'a>(top: usize, t: &'a Target, out: &mut Vec<(usize, &'a Func)>) {
            match t {
                Target::Field(e, _) => in_expr(top, e, out),
                Target::Index(a, b) => {
                    in_expr(top, a, out);
                    in_expr(top, b, out);
                }
                Target::Tuple(ts) => ts.iter().for_each(|t| in_target(top, t, out)),
                Target::Name(_) | Target::Other => {}
            }
        }
        fn in_expr<'a>(top: usize, e: &'a Expr, out: &mut Vec<(usize, &'a Func)>) {
            match e {
                Expr::Lambda(f) => {
                    out.push((top, f));
                    in_stmts(top, &f.body, out);
                }
                Expr::Field(x, _) | Expr::Spread(x) | Expr::Wrap(x) => in_expr(top, x, out),
                Expr::Index(a, b) | Expr::Join(a, b) => {
                    in_expr(top, a, out);
                    in_expr(top, b, out);
                }
                Expr::Concat(xs) | Expr::List(xs) | Expr::Either(xs) | Expr::Other(xs) => {
                    xs.iter().for_each(|x| in_expr(top, x, out))
                }
                Expr::Map(kv) => kv.iter().for_each(|(k, v)| {
                    in_expr(top, k, out);
                    in_expr(top, v, out);
                }),
                Expr::Call(c) => {
                    if let Some(r) = &c.receiver {
                        in_expr(top, r, out);
                    }
                    if let Some(r) = &c.callee {
                        in_expr(top, r, out);
                    }
                    c.args.iter().for_each(|a| in_expr(top, &a.value, out));
                }
                Expr::Comprehension { item, bind, over } => {
                    in_expr(top, item, out);
                    in_target(top, bind, out);
                    in_expr(top, over, out);
                }
                Expr::Str(_) | Expr::Num(_) | Expr::Name(_) => {}
            }
        }
        let mut out = Vec::new();
        for (i, f) in self.funcs.iter().enumerate() {
            out.push((i, f));
            in_stmts(i, &f.body, &mut out);
        }
        out
    }
}
