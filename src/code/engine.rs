//! The one analysis of `keyplan code`, run on the language-neutral model ([`super::ir`]) of
//! every file of a tree: which values are Redis clients, pipelines and scripts, which keys the
//! code builds, and which calls send several keys at once.
//!
//! It interprets the model abstractly. A value is a string built of literal text and runtime
//! values (a [`Template`]), a list (its elements, or what each element looks like), a map, a
//! client, a pipeline being filled, a script object, a function, an object of a class of the
//! tree, or nothing known. Every function is read once on its own, its parameters unknown; and
//! every call of a function of the tree (any file of the same language) is followed into its
//! body with the caller's arguments, up to [`DEPTH`] calls deep, so a helper that runs a
//! pipeline, a script or a multi-key command for its callers, a pipeline made in one function
//! and filled and sent in others, a script kept in a field and keys built by helpers are read
//! as the program runs them. A site reached from callers is judged on what its callers pass:
//! one slot only when every caller's keys share one, cross-slot when one caller's can part,
//! naming that caller.
//!
//! What differs between client libraries is data: the profiles (`rules/code/*.yml`) name the
//! methods that make and send pipelines, run scripts and send multi-key commands; any other
//! method named like a Redis command sends that command, its keys where the command table puts
//! them. Nothing here knows a library by name.

use super::ir::{self, Arg, Call, Expr, Func, Stmt, Target, Unit};
use super::lua::ScriptFile;
use super::profile::{ArgShape, Profile};
use super::{FileFindings, KeyUse, Part, Position, Site, SiteKind, Template, Unknown};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;

/// The module variable that holds what importing a whole module gives (`module.exports`).
const MODULE_EXPORTS: &str = "module.exports";

/// How many calls deep a function of the tree is followed from a caller.
pub const DEPTH: usize = 5;

/// Most steps (expressions evaluated) one function's reading may take, callees included; past
/// it calls are no longer followed (their results unknown). Real functions take a few hundred;
/// the bound keeps generated code and call graphs that fan out from costing more than linear
/// time per function.
const BUDGET: usize = 20_000;

/// Most elements of a literal list a loop is unrolled over (each pass read with its element).
const UNROLL: usize = 24;

/// Most alternatives a value of several possibilities keeps.
const EITHER: usize = 4;

/// One file of the tree: its name as shown and its model.
pub struct Source<'a> {
    /// The file as reports name it.
    pub file: &'a str,
    /// Its model.
    pub unit: &'a Unit,
}

/// The findings of every file, in the order given, from reading them together.
pub fn analyse(
    sources: &[Source<'_>],
    profiles: &[Profile],
    scripts: &[ScriptFile],
) -> Vec<FileFindings> {
    let program = Program::new(sources, profiles, scripts);
    let mut found = Found::default();
    for (u, s) in sources.iter().enumerate() {
        for (fi, f) in s.unit.funcs.iter().enumerate() {
            let mut cx = Cx::new(&program, &mut found);
            cx.entry(u, fi, f);
        }
    }
    found.into_findings(sources.len())
}

/// [`analyse`] on `threads` workers: each function read on its own by one of them (what the
/// tree defines is shared, read-only), the findings merged in a fixed order, so the result
/// is the same on any number of threads.
pub fn analyse_parallel(
    sources: &[Source<'_>],
    profiles: &[Profile],
    scripts: &[ScriptFile],
    run: impl Fn(&(dyn Fn(usize) -> Found + Sync), usize) -> Vec<Found>,
) -> Vec<FileFindings> {
    let program = Program::new(sources, profiles, scripts);
    let entries: Vec<(usize, usize)> = sources
        .iter()
        .enumerate()
        .flat_map(|(u, s)| (0..s.unit.funcs.len()).map(move |f| (u, f)))
        .collect();
    let read = |i: usize| {
        let (u, fi) = entries[i];
        let mut found = Found::default();
        let mut cx = Cx::new(&program, &mut found);
        cx.entry(u, fi, &sources[u].unit.funcs[fi]);
        found
    };
    let parts = run(&read, entries.len());
    let mut all = Found::default();
    for p in parts {
        all.merge(p);
    }
    all.into_findings(sources.len())
}

// ---- what is known of the tree ---------------------------------------------------------------

/// A function of the tree: (unit, index in its `funcs`).
type FuncId = (usize, usize);

/// What the tree defines, found once.
struct Program<'a> {
    sources: &'a [Source<'a>],
    calls: Calls,
    /// Top-level functions by name.
    funcs: HashMap<&'a str, Vec<FuncId>>,
    /// Methods by (class, name).
    methods: HashMap<(&'a str, &'a str), Vec<FuncId>>,
    /// Methods by name alone.
    method_names: HashMap<&'a str, Vec<FuncId>>,
    /// Each class's bases, by class name.
    bases: HashMap<&'a str, Vec<&'a str>>,
    /// Each class's field initialisers and constructors.
    inits: HashMap<&'a str, Vec<FuncId>>,
    /// `self.<field> = …` anywhere in a class's methods: (class, field) → (function, value).
    field_sets: HashMap<(&'a str, &'a str), Vec<(FuncId, &'a Expr)>>,
    /// Module-level `name = value` of each unit, the last one written.
    module_vars: Vec<HashMap<&'a str, &'a Expr>>,
    /// Module-level names by name, across the tree.
    module_names: HashMap<&'a str, Vec<(usize, &'a Expr)>>,
    /// Each unit's imports: local name → (module, name).
    imports: Vec<HashMap<&'a str, (&'a str, Option<&'a str>)>>,
    /// Each unit's module path (from its name), for imports.
    modules: Vec<String>,
    /// Commands defined from scripts (`defineCommand(name, { numberOfKeys })`): name → keys.
    defined: HashMap<String, Option<usize>>,
    /// Whether the tree defines commands under names its text does not spell
    /// (`defineCommand(script.name, …)`): a client's method nothing else explains is one.
    dynamic_defines: bool,
    /// Classes by their name lower-cased without `_` (`None`: two classes read alike).
    class_norm: HashMap<String, Option<&'a str>>,
    /// The unit each module path written in an import names, when one.
    module_units: HashMap<String, Option<usize>>,
    /// Each class and its bases, nearest first.
    lineages: HashMap<&'a str, Vec<&'a str>>,
    /// Each class's subclasses in the tree (nearest or not), in name order.
    subclasses: HashMap<&'a str, Vec<&'a str>>,
}

/// The calls that matter, from every profile of the language: data, never a library's name.
#[derive(Default)]
struct Calls {
    commands: HashMap<String, (String, ArgShape)>,
    any_command: bool,
    context_first: bool,
    make: HashSet<String>,
    make_atomic: HashSet<String>,
    atomic_by_default: bool,
    atomic_keyword: HashSet<String>,
    run: HashSet<String>,
    run_plain: HashSet<String>,
    block: HashSet<String>,
    block_atomic: HashSet<String>,
    queue_raw: HashSet<String>,
    objects: HashSet<String>,
    eval: HashSet<String>,
    eval_options: HashSet<String>,
    eval_list: HashSet<String>,
    new_script: HashSet<String>,
    run_list: HashSet<String>,
    run_counted: HashSet<String>,
    queue_counted: HashSet<String>,
    define: HashSet<String>,
    register: HashSet<String>,
    keys_keyword: HashSet<String>,
    raw: HashSet<String>,
    make_client: HashSet<String>,
    pool_get: HashSet<String>,
    client_types: HashSet<String>,
    pipeline_types: HashSet<String>,
    script_types: HashSet<String>,
    client_api: HashSet<String>,
}

impl Calls {
    fn of(profiles: &[Profile]) -> Calls {
        let mut c = Calls::default();
        let set = |s: &mut HashSet<String>, v: &[String]| s.extend(v.iter().cloned());
        for p in profiles {
            for (m, how) in &p.commands {
                c.commands.insert(m.clone(), (how.command.clone(), how.how));
            }
            c.any_command |= p.any_command;
            c.context_first |= p.context_first;
            set(&mut c.make, &p.pipeline.make);
            set(&mut c.make_atomic, &p.pipeline.make_atomic);
            c.atomic_by_default |= p.pipeline.atomic_by_default;
            c.atomic_keyword
                .extend(p.pipeline.atomic_keyword.iter().cloned());
            set(&mut c.run, &p.pipeline.run);
            set(&mut c.run_plain, &p.pipeline.run_plain);
            set(&mut c.block, &p.pipeline.block);
            set(&mut c.block_atomic, &p.pipeline.block_atomic);
            set(&mut c.queue_raw, &p.pipeline.queue_raw);
            set(&mut c.objects, &p.pipeline.objects);
            set(&mut c.eval, &p.scripts.eval);
            set(&mut c.eval_options, &p.scripts.eval_options);
            set(&mut c.eval_list, &p.scripts.eval_list);
            set(&mut c.new_script, &p.scripts.new_script);
            set(&mut c.run_list, &p.scripts.run_list);
            set(&mut c.run_counted, &p.scripts.run_counted);
            set(&mut c.queue_counted, &p.scripts.queue_counted);
            c.define.extend(p.scripts.define.iter().cloned());
            set(&mut c.register, &p.scripts.register);
            c.keys_keyword.insert(p.scripts.keys_keyword.clone());
            set(&mut c.raw, &p.raw);
            set(&mut c.make_client, &p.clients.make);
            set(&mut c.pool_get, &p.clients.pool_get);
            set(&mut c.client_types, &p.clients.types);
            set(&mut c.pipeline_types, &p.clients.pipeline_types);
            set(&mut c.script_types, &p.clients.script_types);
            set(&mut c.client_api, &p.clients.api);
        }
        c
    }

    /// Whether `method`, called on a client of a tree that defines commands from scripts under
    /// names its text does not spell, can be one of them: not a Redis command, not one of the
    /// client's own methods (connecting, events), not an everyday name.
    fn may_be_defined(&self, method: &str) -> bool {
        !everyday(method)
            && !self.client_api.contains(method)
            && crate::command::table()
                .get(&method.to_ascii_lowercase())
                .is_none()
    }

    /// Whether `method` is one the profiles give a meaning on a client.
    fn is_client_method(&self, method: &str) -> bool {
        self.commands.contains_key(method)
            || self.make.contains(method)
            || self.make_atomic.contains(method)
            || self.block.contains(method)
            || self.block_atomic.contains(method)
            || self.eval.contains(method)
            || self.eval_options.contains(method)
            || self.eval_list.contains(method)
            || self.register.contains(method)
            || self.raw.contains(method)
            || self.queue_raw.contains(method)
    }
}

/// A top-level name of a package's file: a function (`Ok`) or a module-level value (`Err`),
/// with its unit.
type PackageMember<'a> = Result<(usize, &'a Func), (usize, &'a Expr)>;

/// The module path a file's name gives (`a/b/c.py` → `a.b.c`, `lib/x.js` → `lib.x`,
/// `pkg/__init__.py` → `pkg`, `src/index.ts` → `src`).
fn module_path(file: &str) -> String {
    let no_ext = match file.rfind('.') {
        Some(i) if !file[i..].contains('/') => &file[..i],
        _ => file,
    };
    let mut parts: Vec<&str> = no_ext
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if matches!(
        parts.last(),
        Some(&"__init__") | Some(&"index") | Some(&"mod")
    ) {
        parts.pop();
    }
    parts.join(".")
}

/// Whether an import of `wanted` (`.job`, `rq.job`, `./lib/job`, `../job`) can name the module
/// at `path` (`rq.job`): the import's dotted path, leading dots and `..` dropped, is a suffix
/// of the module's at a segment boundary.
fn import_names(wanted: &str, path: &str) -> bool {
    let w: String = wanted
        .replace('/', ".")
        .split('.')
        .filter(|p| !p.is_empty() && *p != "..")
        .collect::<Vec<_>>()
        .join(".");
    let w = w
        .strip_suffix(".js")
        .or(w.strip_suffix(".ts"))
        .unwrap_or(&w);
    !w.is_empty() && (path == w || path.ends_with(&format!(".{w}")))
}

impl<'a> Program<'a> {
    fn new(sources: &'a [Source<'a>], profiles: &[Profile], scripts: &[ScriptFile]) -> Program<'a> {
        let mut p = Program {
            sources,
            calls: Calls::of(profiles),
            funcs: HashMap::new(),
            methods: HashMap::new(),
            method_names: HashMap::new(),
            bases: HashMap::new(),
            inits: HashMap::new(),
            field_sets: HashMap::new(),
            module_vars: Vec::new(),
            module_names: HashMap::new(),
            imports: Vec::new(),
            modules: Vec::new(),
            defined: HashMap::new(),
            dynamic_defines: false,
            class_norm: HashMap::new(),
            module_units: HashMap::new(),
            lineages: HashMap::new(),
            subclasses: HashMap::new(),
        };
        for (u, s) in sources.iter().enumerate() {
            p.modules
                .push(s.unit.module.clone().unwrap_or_else(|| module_path(s.file)));
            let mut imports = HashMap::new();
            for (local, module, name) in &s.unit.imports {
                imports.insert(local.as_str(), (module.as_str(), name.as_deref()));
            }
            p.imports.push(imports);
            for c in &s.unit.classes {
                p.bases
                    .entry(c.name.as_str())
                    .or_default()
                    .extend(c.bases.iter().map(String::as_str));
            }
            let mut vars = HashMap::new();
            for (fi, f) in s.unit.funcs.iter().enumerate() {
                let id = (u, fi);
                match (&f.class, f.name.as_str()) {
                    (None, ir::MODULE_BODY) => {
                        for st in &f.body {
                            match st {
                                Stmt::Assign {
                                    target: Target::Name(n),
                                    value,
                                    ..
                                } => {
                                    vars.insert(n.as_str(), value);
                                    p.module_names
                                        .entry(n.as_str())
                                        .or_default()
                                        .push((u, value));
                                }
                                // `module.exports = value`: what importing the module gives.
                                Stmt::Assign {
                                    target: Target::Field(Expr::Name(m), e),
                                    value,
                                    ..
                                } if m == "module" && e == "exports" => {
                                    vars.insert(MODULE_EXPORTS, value);
                                }
                                _ => {}
                            }
                        }
                    }
                    (None, name) => p.funcs.entry(name).or_default().push(id),
                    (Some(c), name) => {
                        if name == ir::CLASS_BODY
                            || matches!(name, "__init__" | "constructor" | "initialize")
                        {
                            p.inits.entry(c.as_str()).or_default().push(id);
                        }
                        if name != ir::CLASS_BODY {
                            p.methods.entry((c.as_str(), name)).or_default().push(id);
                            // A method without a body (a protocol's or an interface's stub:
                            // `def get(self, key): ...`) describes a client's method; it does
                            // not define one of the tree's own.
                            if !f.body.is_empty() {
                                p.method_names.entry(name).or_default().push(id);
                            }
                        }
                        let receiver = f.receiver.as_deref().unwrap_or("self");
                        collect_field_sets(&f.body, receiver, c, id, &mut p.field_sets);
                    }
                }
            }
            for (_, f) in s.unit.all_funcs() {
                p.dynamic_defines |= collect_defines(&f.body, &p.calls.define, &mut p.defined);
            }
            p.module_vars.push(vars);
        }
        // Commands defined under names the code does not spell: the tree's script files are
        // the candidates, with the key counts their names or bodies give.
        if p.dynamic_defines {
            for sf in scripts {
                p.defined.entry(sf.name.clone()).or_insert(sf.keys);
            }
        }
        // Every class with methods is a class, bases or not.
        let with_methods: Vec<&'a str> = p.methods.keys().map(|(c, _)| *c).collect();
        for c in with_methods {
            p.bases.entry(c).or_default();
        }
        let classes: Vec<&'a str> = p.bases.keys().copied().collect();
        for c in classes {
            let norm = c.replace('_', "").to_ascii_lowercase();
            p.class_norm
                .entry(norm)
                .and_modify(|e| {
                    if *e != Some(c) {
                        *e = None
                    }
                })
                .or_insert(Some(c));
            let l = p.lineage(c);
            for base in l.iter().skip(1) {
                p.subclasses.entry(base).or_default().push(c);
            }
            p.lineages.insert(c, l);
        }
        // Each list on its own (the map's order does not matter).
        p.subclasses.values_mut().for_each(|subs| {
            subs.sort_unstable();
            subs.dedup();
        });
        // Every module an import names: `from a import b` names `a`, and `a.b` when `b` is a
        // module.
        let wanted: Vec<String> = sources
            .iter()
            .flat_map(|s| {
                s.unit.imports.iter().flat_map(|(_, m, n)| {
                    let sub = n.as_ref().map(|n| {
                        if m.ends_with('.') || m.ends_with('/') {
                            format!("{m}{n}")
                        } else {
                            format!("{m}.{n}")
                        }
                    });
                    std::iter::once(m.clone()).chain(sub)
                })
            })
            .collect();
        for w in wanted {
            if !p.module_units.contains_key(&w) {
                let hits: Vec<usize> = (0..p.modules.len())
                    .filter(|&u| import_names(&w, &p.modules[u]))
                    .collect();
                p.module_units.insert(w, (hits.len() == 1).then(|| hits[0]));
            }
        }
        p
    }

    fn func(&self, id: FuncId) -> &'a Func {
        &self.sources[id.0].unit.funcs[id.1]
    }

    /// The class `class` and its bases, nearest first (each once).
    fn lineage(&self, class: &'a str) -> Vec<&'a str> {
        let mut out = vec![class];
        let mut i = 0;
        while i < out.len() && out.len() < 16 {
            if let Some(bs) = self.bases.get(out[i]) {
                for b in bs {
                    if !out.contains(b) {
                        out.push(b);
                    }
                }
            }
            i += 1;
        }
        out
    }

    /// The method `name` of `class` (or the nearest base that has one), when one definition.
    ///
    /// Classes are known by name: where several files define a class of that name with the
    /// method (a sync and an async `RedisStorage`), the definition in file `near` (the caller's)
    /// is the one, when there is one there.
    fn method(&self, class: &str, name: &str, near: usize) -> Option<FuncId> {
        for c in self.lineages.get(class).map(Vec::as_slice).unwrap_or(&[]) {
            let c: &str = c;
            if let Some(ids) = self.methods.get(&(c, name)) {
                if ids.len() == 1 {
                    return Some(ids[0]);
                }
                let mut here = ids.iter().filter(|id| id.0 == near);
                return match (here.next(), here.next()) {
                    (Some(&id), None) => Some(id),
                    _ => None,
                };
            }
        }
        None
    }

    /// The definitions of `name` in the subclasses of `class` that override it (each once,
    /// at most 4): what `self.name(…)` in a base class runs on its subclasses' objects.
    fn overrides(&self, class: &str, name: &str) -> Vec<FuncId> {
        let mut out: Vec<FuncId> = Vec::new();
        for sub in self.subclasses.get(class).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(id) = self.method(sub, name, usize::MAX)
                && !out.contains(&id)
                && self.func(id).class.as_deref() != Some(class)
            {
                out.push(id);
                if out.len() == 4 {
                    break;
                }
            }
        }
        out
    }

    fn lineage_of(&self, class: &str) -> Vec<&'a str> {
        self.lineages.get(class).cloned().unwrap_or_default()
    }

    /// `class`, its bases, and every class of the tree descending from any of them.
    fn family<'c>(&'c self, class: &'c str) -> HashSet<&'c str> {
        let mut out: HashSet<&str> = HashSet::new();
        out.insert(class);
        for c in self.lineage_of(class) {
            out.insert(c);
            // Bases every kind of class has (typing's, the language's root object) make no
            // family.
            let bare = c.split('[').next().unwrap_or(c);
            let bare = bare.rsplit('.').next().unwrap_or(bare);
            if matches!(
                bare,
                "object" | "Object" | "Generic" | "Protocol" | "ABC" | "Exception" | "Enum"
            ) {
                continue;
            }
            if let Some(subs) = self.subclasses.get(c) {
                out.extend(subs.iter().copied());
            }
        }
        out
    }

    /// The class a receiver named `name` stands for (`job` → `Job`, `started_job_registry` →
    /// `StartedJobRegistry`, `self._queue` → `Queue`): case and `_` aside, exactly one class.
    fn class_named_like(&self, name: &str) -> Option<&'a str> {
        let last = name.rsplit('.').next().unwrap_or(name);
        if last.len() < 3 {
            return None;
        }
        let mut want = String::with_capacity(last.len());
        want.extend(
            last.chars()
                .filter(|c| *c != '_')
                .map(|c| c.to_ascii_lowercase()),
        );
        self.class_norm.get(&want).copied().flatten()
    }

    /// The units of the package (see [`ir::Unit::package`]) that name `local` of unit `u`
    /// imports as a whole module: those whose package is that name or the import path's last
    /// segment.
    fn package_units(&self, u: usize, local: &str) -> Vec<usize> {
        let Some((path, None)) = self.imports[u].get(local) else {
            return Vec::new();
        };
        let last = path.rsplit(['/', '.']).next().unwrap_or(path);
        (0..self.sources.len())
            .filter(|&v| {
                self.sources[v]
                    .unit
                    .package
                    .as_deref()
                    .is_some_and(|p| p == local || p == last)
            })
            .collect()
    }

    /// `pkg.name` of a package of the tree unit `u` imports: the one top-level function
    /// (`Ok`) or module-level value (`Err`) of that name in its files.
    fn package_member(&self, u: usize, pkg: &str, name: &str) -> Option<PackageMember<'a>> {
        let mut found = None;
        for v in self.package_units(u, pkg) {
            let unit = self.sources[v].unit;
            let here = match unit
                .funcs
                .iter()
                .find(|f| f.class.is_none() && f.name == name)
            {
                Some(f) => Some(Ok((v, f))),
                None => self.module_vars[v].get(name).map(|e| Err((v, *e))),
            };
            if here.is_some() {
                if found.is_some() {
                    return None;
                }
                found = here;
            }
        }
        found
    }

    /// The unit that module path `wanted` names, seen from unit `from`.
    fn module_unit(&self, wanted: &str) -> Option<usize> {
        self.module_units.get(wanted).copied().flatten()
    }

    /// The unit a name unit `u` imports stands for, when it names a module (`import a.b as
    /// m`, `from . import m`).
    fn imported_module(&self, u: usize, name: &str) -> Option<usize> {
        match self.imports[u].get(name)? {
            (path, None) => self.module_unit(path),
            (path, Some(n)) => {
                let sub = if path.ends_with('.') || path.ends_with('/') {
                    format!("{path}{n}")
                } else {
                    format!("{path}.{n}")
                };
                self.module_unit(&sub)
            }
        }
    }
}

/// `<receiver>.<field> = value` in a class's methods.
fn collect_field_sets<'a>(
    body: &'a [Stmt],
    receiver: &str,
    class: &'a str,
    id: FuncId,
    out: &mut HashMap<(&'a str, &'a str), Vec<(FuncId, &'a Expr)>>,
) {
    for st in body {
        match st {
            Stmt::Assign {
                target: Target::Field(Expr::Name(r), field),
                value,
                ..
            } if r == receiver => {
                out.entry((class, field.as_str()))
                    .or_default()
                    .push((id, value));
            }
            Stmt::Loop { body, .. } | Stmt::With { body, .. } => {
                collect_field_sets(body, receiver, class, id, out)
            }
            Stmt::Branch(arms) => {
                for a in arms {
                    collect_field_sets(a, receiver, class, id, out);
                }
            }
            _ => {}
        }
    }
}

/// `x.defineCommand("name", { numberOfKeys: n, … })` written anywhere in `body`.
fn collect_defines(
    body: &[Stmt],
    define: &HashSet<String>,
    out: &mut HashMap<String, Option<usize>>,
) -> bool {
    fn in_expr(
        e: &Expr,
        define: &HashSet<String>,
        out: &mut HashMap<String, Option<usize>>,
        dynamic: &mut bool,
    ) {
        if let Expr::Call(c) = e {
            if define.contains(&c.name)
                && !matches!(c.args.first().map(|a| &a.value), Some(Expr::Str(_)) | None)
            {
                *dynamic = true;
            }
            if define.contains(&c.name)
                && let Some(Expr::Str(name)) = c.args.first().map(|a| &a.value)
            {
                let n = c.args.get(1).and_then(|a| match &a.value {
                    Expr::Map(kv) => kv.iter().find_map(|(k, v)| match (k, v) {
                        (Expr::Str(k), Expr::Num(n)) if k == "numberOfKeys" => n.parse().ok(),
                        _ => None,
                    }),
                    _ => None,
                });
                let e = out.entry(name.clone()).or_insert(n);
                if *e != n {
                    *e = None;
                }
            }
            if let Some(r) = &c.receiver {
                in_expr(r, define, out, dynamic);
            }
            for a in &c.args {
                in_expr(&a.value, define, out, dynamic);
            }
        }
    }
    let mut dynamic = false;
    for st in body {
        match st {
            Stmt::Expr(e) | Stmt::Assign { value: e, .. } => in_expr(e, define, out, &mut dynamic),
            Stmt::Loop { body, .. } | Stmt::With { body, .. } => {
                dynamic |= collect_defines(body, define, out)
            }
            Stmt::Branch(arms) => {
                for a in arms {
                    dynamic |= collect_defines(a, define, out);
                }
            }
            _ => {}
        }
    }
    dynamic
}

// ---- values ----------------------------------------------------------------------------------

/// What the analysis knows of a value.
#[derive(Clone, Debug)]
enum V<'a> {
    /// Text: literal pieces and runtime values.
    Text(Template),
    /// A number or constant written in the code.
    Num(String),
    /// A list.
    List(Rc<ListV<'a>>),
    /// A map.
    Map(Rc<Vec<(V<'a>, V<'a>)>>),
    /// A Redis client (or connection).
    Client,
    /// A pipeline or transaction being filled.
    Pipe(usize),
    /// An object of a pipeline that names a key (`batch.getBucket(name)`).
    PipeObject(usize, Template),
    /// A script object.
    Script(Rc<ScriptV>),
    /// A function value.
    Func(FuncV<'a>),
    /// An object of a class of the tree.
    Obj(Rc<ObjV<'a>>),
    /// One of several values.
    Either(Rc<Vec<V<'a>>>),
    /// Nothing known; the name of the code that makes it.
    Unknown(Rc<str>),
}

#[derive(Debug)]
struct ListV<'a> {
    items: Vec<V<'a>>,
    /// More elements not known: what each looks like (two of them, from two passes of the
    /// loop that makes them, when known), or just a name.
    rest: Option<Rest<'a>>,
}

/// The value a list of `[key, value]` pairs (a dict comprehension's) holds under the text
/// `k`: the pair's whose key is `k`, else the values of the pairs whose key is not known
/// (one pass or two of the loop that made them). `None` when an element is no pair.
fn pair_value<'a>(l: &ListV<'a>, k: &Template) -> Option<V<'a>> {
    let mut pairs: Vec<&V<'a>> = l.items.iter().collect();
    if let Some(Rest::Like(a, b)) = &l.rest {
        pairs.push(a);
        pairs.push(b);
    }
    let mut unknown_keys = Vec::new();
    for p in pairs {
        let V::List(pair) = p else { return None };
        let [key, value] = pair.items.as_slice() else {
            return None;
        };
        if pair.rest.is_some() {
            return None;
        }
        match key {
            V::Text(t) if t == k => return Some(value.clone()),
            V::Text(_) | V::Num(_) => {}
            _ => unknown_keys.push(value.clone()),
        }
    }
    (!unknown_keys.is_empty()).then(|| V::either(unknown_keys))
}

#[derive(Debug, Clone)]
enum Rest<'a> {
    /// Elements like these two (one per pass of a loop).
    Like(Box<V<'a>>, Box<V<'a>>),
    /// Elements of a list nothing is known of, named.
    Named(Rc<str>),
}

#[derive(Debug)]
struct ScriptV {
    /// Keys taken from the first arguments of each run (`NewScript(2, src)`), when fixed.
    counted: Option<usize>,
}

#[derive(Clone, Debug)]
struct FuncV<'a> {
    func: &'a Func,
    unit: usize,
    /// The variables it sees where it was made (a closure).
    env: Option<Rc<RefCell<HashMap<String, V<'a>>>>>,
    /// The object it is a method of, bound.
    this: Option<Box<V<'a>>>,
}

#[derive(Debug)]
struct ObjV<'a> {
    class: &'a str,
    fields: RefCell<HashMap<String, V<'a>>>,
}

fn unknown<'a>(name: impl AsRef<str>) -> V<'a> {
    V::Unknown(Rc::from(name.as_ref()))
}

impl<'a> V<'a> {
    fn text(t: Template) -> V<'a> {
        V::Text(t)
    }

    fn list(items: Vec<V<'a>>, rest: Option<Rest<'a>>) -> V<'a> {
        V::List(Rc::new(ListV { items, rest }))
    }

    /// The alternatives of a value (itself when it is one).
    fn alternatives(&self) -> Vec<&V<'a>> {
        match self {
            V::Either(vs) => vs.iter().collect(),
            v => vec![v],
        }
    }

    fn either(vs: Vec<V<'a>>) -> V<'a> {
        let mut out: Vec<V<'a>> = Vec::new();
        for v in vs {
            for a in v.alternatives() {
                // A pipeline is never dropped: what is queued on it must reach it.
                if (out.len() < EITHER || matches!(a, V::Pipe(_)))
                    && !out.iter().any(|o| same(o, a))
                {
                    out.push(a.clone());
                }
            }
        }
        match out.len() {
            0 => unknown("?"),
            1 => out.pop().expect("invariant: one"),
            _ => V::Either(Rc::new(out)),
        }
    }
}

/// Whether two values are the same value (as far as the analysis can tell).
fn same<'a>(a: &V<'a>, b: &V<'a>) -> bool {
    match (a, b) {
        (V::Text(x), V::Text(y)) => x == y,
        (V::Num(x), V::Num(y)) => x == y,
        (V::Client, V::Client) => true,
        (V::Pipe(x), V::Pipe(y)) => x == y,
        (V::Unknown(x), V::Unknown(y)) => x == y,
        (V::List(x), V::List(y)) => Rc::ptr_eq(x, y),
        (V::Map(x), V::Map(y)) => Rc::ptr_eq(x, y),
        (V::Obj(x), V::Obj(y)) => Rc::ptr_eq(x, y),
        // Scripts that take their keys alike are one for what a call of them sends.
        (V::Script(x), V::Script(y)) => Rc::ptr_eq(x, y) || x.counted == y.counted,
        (V::Func(x), V::Func(y)) => std::ptr::eq(x.func, y.func),
        _ => false,
    }
}

/// A value as a key: its template (a runtime value as one placeholder).
fn template(v: &V<'_>) -> Template {
    match v {
        V::Text(t) => t.clone(),
        V::Num(n) => Template::lit(n.clone()),
        V::Unknown(n) => Template::var(n.to_string()),
        V::Either(vs) => template(&vs[0]),
        V::Obj(o) => Template::var(o.class.to_ascii_lowercase()),
        V::List(l) => match l.items.first() {
            Some(x) if l.items.len() == 1 && l.rest.is_none() => template(x),
            _ => Template::var("list"),
        },
        _ => Template::var("value"),
    }
}

/// Whether a value is worth keeping as a key (text or a runtime value; a client, a pipeline
/// or a function is no key).
fn keyish(v: &V<'_>) -> bool {
    matches!(v, V::Text(_) | V::Unknown(_) | V::Num(_) | V::Either(_))
}

/// A short description of an expression: the name a runtime value it makes is given.
fn describe(e: &Expr) -> String {
    fn go(e: &Expr, out: &mut String, budget: &mut usize) {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        match e {
            Expr::Name(n) => out.push_str(n),
            Expr::Num(n) => out.push_str(n),
            Expr::Str(s) => {
                out.push('"');
                out.extend(s.chars().take(20));
                out.push('"');
            }
            Expr::Field(o, f) => {
                go(o, out, budget);
                out.push('.');
                out.push_str(f);
            }
            Expr::Index(o, i) => {
                go(o, out, budget);
                out.push('[');
                go(i, out, budget);
                out.push(']');
            }
            Expr::Call(c) => {
                if let Some(r) = &c.receiver {
                    go(r, out, budget);
                    out.push('.');
                }
                out.push_str(&c.name);
                out.push('(');
                for (i, a) in c.args.iter().take(3).enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    go(&a.value, out, budget);
                }
                out.push(')');
            }
            Expr::Wrap(x) | Expr::Spread(x) => go(x, out, budget),
            // `src + ":1"`: the pieces, so that two calls on different text are told apart.
            Expr::Concat(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" + ");
                    }
                    go(x, out, budget);
                }
            }
            _ => out.push('…'),
        }
    }
    let mut s = String::new();
    let mut budget = 12;
    go(e, &mut s, &mut budget);
    let s = s.trim_start_matches("self.").trim_start_matches("this.");
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(39).collect::<String>())
    } else if s.is_empty() {
        "value".to_string()
    } else {
        s.to_string()
    }
}

/// The last name of a receiver's description, lower-cased, `_` trimmed: `self._redis` →
/// `redis`.
fn last_name(s: &str) -> String {
    // A call's result is named after the call (`redis()`, Ruby's `redis` method).
    let s = s.strip_suffix("()").unwrap_or(s);
    s.rsplit(['.', ' ', '('])
        .next()
        .unwrap_or(s)
        .trim_matches('_')
        .to_ascii_lowercase()
}

/// A name that says Redis (`redis`, `self._valkey`, `rds`).
fn strong_client_name(name: &str) -> bool {
    let n = last_name(name);
    n.contains("redis")
        || n.contains("valkey")
        || n.contains("keydb")
        || matches!(n.as_str(), "rds" | "rdb")
}

/// A name that reads as a Redis client or connection (`redis`, `self._conn`, `client`, `r`).
fn client_name(name: &str) -> bool {
    let n = last_name(name);
    n.contains("redis")
        || n.contains("valkey")
        || n.contains("keydb")
        || matches!(
            n.as_str(),
            "r" | "rc"
                | "rd"
                | "rdb"
                | "rds"
                | "conn"
                | "connection"
                | "client"
                | "cli"
                | "cluster"
                | "redis_client"
                | "master"
                | "primary"
                | "replica"
        )
        || n.ends_with("conn")
        || n.ends_with("connection")
        || n.ends_with("client")
}

/// A name that reads as a pipeline or transaction handed in (`pipe`, `pipeline`, `tx`).
fn pipe_name(name: &str) -> bool {
    let n = last_name(name);
    n.contains("pipe")
        || matches!(
            n.as_str(),
            "p" | "tx" | "txn" | "multi" | "transaction" | "trans" | "batch"
        )
}

/// A command whose name is also an everyday method of other objects (a dict's `get`, a
/// cache's `delete`): sent by a receiver only when it is known to be a client.
fn everyday(method: &str) -> bool {
    matches!(
        method.to_ascii_lowercase().as_str(),
        "get"
            | "set"
            | "delete"
            | "del"
            | "remove"
            | "exists"
            | "keys"
            | "type"
            | "move"
            | "copy"
            | "rename"
            | "sort"
            | "append"
            | "touch"
            | "dump"
            | "restore"
            | "scan"
            | "time"
            | "info"
            | "echo"
            | "ping"
            | "watch"
            | "unwatch"
            | "multi"
            | "exec"
            | "discard"
            | "publish"
            | "subscribe"
            | "unsubscribe"
            | "select"
            | "wait"
            | "save"
            | "monitor"
            | "sync"
            | "replicaof"
            | "slaveof"
            | "lastsave"
            | "object"
            | "shutdown"
            | "quit"
            | "reset"
            | "hello"
            | "auth"
            | "client"
            | "config"
            | "debug"
            | "memory"
            | "module"
            | "function"
            | "script"
            | "latency"
            | "command"
            | "cluster"
            | "role"
            | "failover"
            | "flushall"
            | "flushdb"
            | "dbsize"
            | "randomkey"
            | "incr"
            | "decr"
            | "lpush"
            | "rpush"
            | "pop"
            | "push"
            | "lpop"
            | "rpop"
            | "len"
            | "strlen"
            | "lset"
            | "eval"
            | "getset"
            | "expire"
            | "persist"
            | "ttl"
            | "pttl"
            | "unlink"
    )
}

// ---- what is found -------------------------------------------------------------------------

/// One reading of a site: its keys as one context sent them.
#[derive(Debug, Clone)]
struct Instance {
    site: Site,
    /// The call that led there from another function (`None`: the function read on its own).
    caller: Option<String>,
    /// Sent on a pipeline handed in as a parameter (where it was made is not known here).
    handed: bool,
}

/// What readings found, by file.
#[derive(Default)]
pub struct Found {
    /// Sites by (unit, opening position, sending position): a pipeline sent twice is two
    /// batches.
    sites: BTreeMap<(usize, Position, Option<Position>), Vec<Instance>>,
    /// Keys by (unit, position, template).
    keys: BTreeMap<(usize, Position, String), (Template, String)>,
}

impl Found {
    fn merge(&mut self, other: Found) {
        for (k, v) in other.sites {
            let e = self.sites.entry(k).or_default();
            for i in v {
                if e.len() < 32 && !e.iter().any(|x| same_instance(x, &i)) {
                    e.push(i);
                }
            }
        }
        for (k, v) in other.keys {
            self.keys.entry(k).or_insert(v);
        }
    }

    fn into_findings(self, units: usize) -> Vec<FileFindings> {
        let mut out: Vec<FileFindings> = (0..units).map(|_| FileFindings::default()).collect();
        for ((u, at, _), (template, how)) in self.keys {
            out[u].keys.push(KeyUse { template, at, how });
        }
        // A pipeline handed in and sent where a caller's own pipeline, made elsewhere, is
        // sent too: the same batch, found at the caller's opening line.
        let sent_from_made: BTreeSet<(usize, Position)> = self
            .sites
            .iter()
            .flat_map(|(&(u, _, _), v)| v.iter().filter(|i| !i.handed).map(move |i| (u, i)))
            .filter_map(|(u, i)| i.site.send.map(|s| (u, s)))
            .collect();
        for ((u, at, _), instances) in self.sites {
            if instances.iter().all(|i| i.handed) && sent_from_made.contains(&(u, at)) {
                continue;
            }
            out[u].sites.push(judge(instances));
        }
        out
    }
}

fn same_instance(a: &Instance, b: &Instance) -> bool {
    a.caller == b.caller
        && a.site.keys == b.site.keys
        && a.site.unknown == b.site.unknown
        && a.site.op == b.site.op
}

/// One site from its readings: what its callers send when it has callers (cross-slot when one
/// caller's keys can part, one slot when every caller's share one), else what the function
/// says on its own.
fn judge(instances: Vec<Instance>) -> Site {
    use super::Verdict;
    let from_callers: Vec<&Instance> = instances.iter().filter(|i| i.caller.is_some()).collect();
    let pool: Vec<&Instance> = if from_callers.is_empty() {
        instances.iter().collect()
    } else {
        from_callers
    };
    let verdicts: Vec<Verdict> = pool.iter().map(|i| i.site.verdict()).collect();
    if let Some(k) = verdicts
        .iter()
        .position(|v| matches!(v, Verdict::CrossSlot(_)))
    {
        return pool[k].site.clone();
    }
    if let Some(k) = verdicts
        .iter()
        .position(|v| matches!(v, Verdict::Depends(_)))
    {
        let mut s = pool[k].site.clone();
        let undecided: Vec<&str> = pool
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| matches!(v, Verdict::Depends(_)))
            .filter_map(|(i, _)| i.caller.as_deref())
            .collect();
        if !undecided.is_empty() && pool.len() > undecided.len() {
            s.unknown = Some(Unknown::RuntimeList(format!(
                "as called from {}",
                undecided.join(", ")
            )));
        }
        return s;
    }
    pool[0].site.clone()
}

// ---- a reading ---------------------------------------------------------------------------------

/// A pipeline being filled.
#[derive(Debug, Clone)]
struct PipeState {
    atomic: bool,
    /// Where it was made: (unit, position); `None` when it was handed in.
    made: Option<(usize, Position)>,
    /// The loop depth it was made at.
    loop_depth: usize,
    ops: Vec<String>,
    more: usize,
    keys: Vec<Template>,
    unknown: Option<Unknown>,
    sent: bool,
    /// Whether it was handed in as a parameter (its commands are the caller's business).
    handed: bool,
    /// Watching keys (`pipe.watch(…)`, until `pipe.multi()`): its commands are sent at once,
    /// each on its own, not queued.
    immediate: bool,
    /// How many times it was sent (a send in one arm of a branch is told from the others).
    sends: usize,
    /// How many functions deep the reading was when it was made.
    depth: usize,
}

/// What a pipeline held before a branch: (id, ops, more, keys, unknown, sends).
type PipeSnapshot = (
    usize,
    Vec<String>,
    usize,
    Vec<Template>,
    Option<Unknown>,
    usize,
);

/// The variables of one function's reading.
struct Frame<'a> {
    unit: usize,
    vars: Rc<RefCell<HashMap<String, V<'a>>>>,
    this: Option<V<'a>>,
    receiver: Option<&'a str>,
    class: Option<&'a str>,
}

/// One reading: an entry function and the calls followed from it.
struct Cx<'p, 'a> {
    p: &'p Program<'a>,
    found: &'p mut Found,
    pipes: Vec<PipeState>,
    steps: usize,
    /// Functions being read, innermost last.
    stack: Vec<&'a Func>,
    loop_depth: usize,
    /// The second reading of a loop's body: runtime values made there are other values
    /// (primed), and nothing is recorded but what is queued on pipelines.
    second_pass: bool,
    /// Nothing is recorded (module constants read for a value).
    quiet: bool,
    /// The call the reading is in, from the entry function: `f (file:line)`.
    caller: Option<String>,
    /// Closures made and not yet read.
    closures: Vec<(FuncV<'a>, usize)>,
    /// Loop variables bound to the elements of a list only the running code knows, by name
    /// (primed in the second pass): the list they come from.
    elements: HashMap<String, String>,
    /// Module variables being read (a cycle is unknown).
    reading_globals: HashSet<(usize, String)>,
    /// Objects' fields made per class (constructor with parameters unknown).
    class_fields: HashMap<&'a str, Rc<ObjV<'a>>>,
    /// What a function returned for arguments of one signature (no pipeline among them):
    /// a function called again alike is not read again.
    memo: HashMap<(usize, String), V<'a>>,
    /// The function at which the reading ran out of steps, if it did: pipelines open then or
    /// made after hold commands of calls not followed.
    exhausted: Option<String>,
    /// The commands queued on a connection by name (`conn.Send(…)` of a profile's
    /// `queue_raw`), by (the frame's variables, the connection's name): its pipeline.
    conns: HashMap<(usize, String), usize>,
}

impl<'p, 'a> Cx<'p, 'a> {
    fn new(p: &'p Program<'a>, found: &'p mut Found) -> Cx<'p, 'a> {
        Cx {
            p,
            found,
            pipes: Vec::new(),
            steps: 0,
            stack: Vec::new(),
            loop_depth: 0,
            second_pass: false,
            quiet: false,
            caller: None,
            closures: Vec::new(),
            elements: HashMap::new(),
            reading_globals: HashSet::new(),
            class_fields: HashMap::new(),
            memo: HashMap::new(),
            exhausted: None,
            conns: HashMap::new(),
        }
    }

    fn on_stack(&self, f: &Func) -> bool {
        self.stack.iter().any(|g| std::ptr::eq(*g, f))
    }

    fn file(&self, unit: usize) -> &'a str {
        self.p.sources[unit].file
    }

    /// Reads function `f` of unit `u` on its own: parameters unknown (a parameter named or
    /// typed like a pipeline is one handed in; like a client, a client).
    fn entry(&mut self, u: usize, _fi: usize, f: &'a Func) {
        let this = match (&f.class, f.is_static) {
            (Some(c), false) => Some(self.instance_of(c)),
            _ => None,
        };
        let mut vars = HashMap::new();
        for prm in &f.params {
            let v = self.param_value(prm, u, f.at);
            vars.insert(prm.name.clone(), v);
        }
        let frame = Frame {
            unit: u,
            vars: Rc::new(RefCell::new(vars)),
            this,
            receiver: f.receiver.as_deref(),
            class: f.class.as_deref(),
        };
        self.stack.push(f);
        self.run_body(&frame, &f.body);
        self.stack.pop();
        self.read_closures(0);
        self.flush_pipes(0);
    }

    /// A parameter's value when its function is read on its own.
    fn param_value(&mut self, prm: &ir::Param, u: usize, at: Position) -> V<'a> {
        let written = prm.ty.as_deref().unwrap_or("");
        // The type's own name: its last segment (`client.Pipeline`), under the name a file
        // imported it as (`from redis.commands.core import Script as RedisScript`).
        let last = written.rsplit('.').next().unwrap_or(written);
        let ty = match self.p.imports.get(u).and_then(|i| i.get(last)) {
            Some((_, Some(original))) => *original,
            _ => last,
        };
        let calls = &self.p.calls;
        if !ty.is_empty() && calls.script_types.contains(ty) && !prm.rest {
            return V::Script(Rc::new(ScriptV { counted: None }));
        }
        if !ty.is_empty() && calls.pipeline_types.contains(ty)
            || ty.is_empty() && pipe_name(&prm.name) && !prm.rest
        {
            let id = self.pipes.len();
            self.pipes.push(PipeState {
                atomic: false,
                made: None,
                loop_depth: 0,
                ops: Vec::new(),
                more: 0,
                keys: Vec::new(),
                unknown: None,
                sent: false,
                handed: true,
                immediate: false,
                sends: 0,
                depth: 0,
            });
            let _ = (u, at);
            return V::Pipe(id);
        }
        if !ty.is_empty() && calls.client_types.contains(ty) {
            return V::Client;
        }
        if prm.rest {
            return V::list(Vec::new(), Some(Rest::Named(Rc::from(prm.name.as_str()))));
        }
        unknown(&prm.name)
    }

    /// An object of class `c` as its constructor leaves it, parameters unknown (made once
    /// per class and reading).
    fn instance_of(&mut self, c: &'a str) -> V<'a> {
        if let Some(o) = self.class_fields.get(c) {
            return V::Obj(o.clone());
        }
        let obj = Rc::new(ObjV {
            class: c,
            fields: RefCell::new(HashMap::new()),
        });
        self.class_fields.insert(c, obj.clone());
        let v = V::Obj(obj);
        self.construct(c, &v, None);
        v
    }

    /// Runs the field initialisers and constructor of `class` (and its bases') on `obj`.
    fn construct(&mut self, class: &'a str, obj: &V<'a>, args: Option<(&'a [Arg], &Frame<'a>)>) {
        let lineage = self.p.lineage_of(class);
        let q = args.is_none() || self.quiet;
        let quiet = std::mem::replace(&mut self.quiet, q);
        for c in lineage.iter().rev() {
            let Some(ids) = self.p.inits.get(c) else {
                continue;
            };
            for &id in ids {
                let f = self.p.func(id);
                // A class body that makes an object of its own class (Ruby's
                // `HANDLERS << Logger.new` inside `class Logger`) is not run again inside itself.
                if f.name == ir::CLASS_BODY && !self.on_stack(f) {
                    let vars = self.class_body_params(id.0, f, |_| unknown(""));
                    let frame = self.method_frame(id.0, f, obj.clone(), vars);
                    self.stack.push(f);
                    self.run_body(&frame, &f.body);
                    self.stack.pop();
                }
            }
        }
        // The nearest constructor (a base's runs only through `super`).
        let ctor = lineage.iter().find_map(|c| {
            self.p.inits.get(c).and_then(|ids| {
                ids.iter()
                    .copied()
                    .find(|&id| self.p.func(id).name != ir::CLASS_BODY)
            })
        });
        if let Some(id) = ctor {
            let f = self.p.func(id);
            if !self.on_stack(f) && self.stack.len() <= DEPTH {
                let vars = match args {
                    Some((a, frame)) => self.bind(f, a, frame, id.0),
                    None => f
                        .params
                        .iter()
                        .map(|p| {
                            let v = self.param_value(p, id.0, f.at);
                            (p.name.clone(), v)
                        })
                        .collect(),
                };
                let frame = self.method_frame(id.0, f, obj.clone(), vars);
                self.stack.push(f);
                self.run_body(&frame, &f.body);
                self.stack.pop();
            }
        }
        self.quiet = quiet;
    }

    /// The parameters of function `f` of unit `u`, each `otherwise(p)`; those of a class
    /// body (fields declared with a type and no value: `@Autowired RedisTemplate t;`) the value
    /// their type says.
    fn class_body_params(
        &mut self,
        u: usize,
        f: &'a Func,
        otherwise: impl Fn(&ir::Param) -> V<'a>,
    ) -> HashMap<String, V<'a>> {
        f.params
            .iter()
            .map(|p| {
                let v = if f.name == ir::CLASS_BODY {
                    self.param_value(p, u, f.at)
                } else {
                    otherwise(p)
                };
                (p.name.clone(), v)
            })
            .collect()
    }

    fn method_frame(
        &self,
        unit: usize,
        f: &'a Func,
        this: V<'a>,
        vars: HashMap<String, V<'a>>,
    ) -> Frame<'a> {
        Frame {
            unit,
            vars: Rc::new(RefCell::new(vars)),
            this: Some(this),
            receiver: Some(f.receiver.as_deref().unwrap_or("self")),
            class: f.class.as_deref(),
        }
    }

    // ---- statements ----

    fn run_body(&mut self, fr: &Frame<'a>, body: &'a [Stmt]) -> Vec<V<'a>> {
        let mut returns = Vec::new();
        for st in body {
            self.stmt(fr, st, &mut returns);
        }
        returns
    }

    fn stmt(&mut self, fr: &Frame<'a>, st: &'a Stmt, returns: &mut Vec<V<'a>>) {
        match st {
            Stmt::Assign { target, value, .. } => {
                let v = self.eval(fr, value);
                self.assign(fr, target, v);
            }
            Stmt::Push { target, value, .. } => {
                let v = match value {
                    Expr::Spread(x) => Spreaded(self.eval(fr, x)),
                    x => Single(self.eval(fr, x)),
                };
                self.push(fr, target, v);
            }
            Stmt::Expr(e) => {
                let v = self.eval(fr, e);
                // `commands.multi();` with its result dropped (Lettuce's commands, Spring's
                // operations): the variable it is called on queues what follows, until it is
                // sent.
                if let (V::Pipe(_), Expr::Call(c)) = (&v, e)
                    && c.args.is_empty()
                    && let Some(Expr::Name(n)) = &c.receiver
                    && (self.p.calls.make.contains(&c.name)
                        || self.p.calls.make_atomic.contains(&c.name))
                {
                    fr.vars.borrow_mut().insert(n.clone(), v);
                }
            }
            Stmt::Return(e, _) => {
                let v = match e {
                    Some(e) => self.eval(fr, e),
                    None => V::Num("None".into()),
                };
                returns.push(v);
            }
            Stmt::Loop { bind, over, body } => {
                self.run_loop(fr, bind.as_ref(), over.as_ref(), body, returns)
            }
            Stmt::Branch(arms) => {
                let before: HashMap<String, V<'a>> = fr.vars.borrow().clone();
                let mut after: Vec<HashMap<String, V<'a>>> = Vec::new();
                // Pipelines filled before the branch: one sent in an arm still holds what it
                // held on the paths that do not take that arm.
                let pending: Vec<PipeSnapshot> = self
                    .pipes
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| !p.ops.is_empty())
                    .map(|(i, p)| {
                        (
                            i,
                            p.ops.clone(),
                            p.more,
                            p.keys.clone(),
                            p.unknown.clone(),
                            p.sends,
                        )
                    })
                    .collect();
                for arm in arms {
                    *fr.vars.borrow_mut() = before.clone();
                    for s in arm {
                        self.stmt(fr, s, returns);
                    }
                    after.push(fr.vars.borrow().clone());
                }
                for (id, ops, more, keys, unknown, sends) in pending {
                    let p = &mut self.pipes[id];
                    if p.sends == sends {
                        continue;
                    }
                    let mut all = ops;
                    all.append(&mut p.ops);
                    p.ops = all;
                    p.more += more;
                    let mut ks = keys;
                    for k in std::mem::take(&mut p.keys) {
                        if !ks.contains(&k) {
                            ks.push(k);
                        }
                    }
                    p.keys = ks;
                    p.unknown = unknown.or(p.unknown.take());
                }
                if after.len() > 1 {
                    let mut merged = before;
                    let names: BTreeSet<String> =
                        after.iter().flat_map(|m| m.keys().cloned()).collect();
                    for n in names {
                        let vs: Vec<V<'a>> = after
                            .iter()
                            .filter_map(|m| m.get(&n).or(merged.get(&n)).cloned())
                            .collect();
                        merged.insert(n, V::either(vs));
                    }
                    *fr.vars.borrow_mut() = merged;
                }
            }
            Stmt::With {
                value,
                bind,
                body,
                end,
            } => {
                let v = self.eval(fr, value);
                if let Some(b) = bind {
                    self.assign(fr, b, v.clone());
                }
                for s in body {
                    self.stmt(fr, s, returns);
                }
                // A pipeline entered by `with` is sent when the block ends, if nothing sent
                // it before.
                if let V::Pipe(id) = v
                    && !self.pipes[id].sent
                    && !self.pipes[id].handed
                {
                    self.send(id, fr.unit, *end, false);
                }
            }
        }
    }

    fn run_loop(
        &mut self,
        fr: &Frame<'a>,
        bind: Option<&'a Target>,
        over: Option<&'a Expr>,
        body: &'a [Stmt],
        returns: &mut Vec<V<'a>>,
    ) {
        let over_v = over.map(|o| self.eval(fr, o));
        if let (Some(b), Some(V::List(l))) = (bind, &over_v)
            && l.rest.is_none()
            && !l.items.is_empty()
            && l.items.len() <= UNROLL
        {
            // A loop over a list written in the code: each pass with its element.
            for item in l.items.clone() {
                self.assign(fr, b, item);
                for s in body {
                    self.stmt(fr, s, returns);
                }
            }
            return;
        }
        let element = |pass: usize| -> V<'a> {
            match &over_v {
                Some(V::List(l)) => match &l.rest {
                    Some(Rest::Like(a, b)) => {
                        if pass == 0 {
                            (**a).clone()
                        } else {
                            (**b).clone()
                        }
                    }
                    _ => l.items.first().cloned().unwrap_or_else(|| unknown("item")),
                },
                Some(V::Map(m)) => m
                    .first()
                    .map(|(k, _)| k.clone())
                    .unwrap_or_else(|| unknown("item")),
                _ => unknown("item"),
            }
        };
        self.loop_depth += 1;
        let mut bound: Vec<String> = Vec::new();
        for pass in 0..2 {
            let sp = pass == 1 || self.second_pass;
            let second = std::mem::replace(&mut self.second_pass, sp);
            if let Some(b) = bind {
                let v = match element(pass) {
                    V::Unknown(_) => {
                        let name = self.prime(&describe_target(b));
                        if let Some(o) = over
                            && !lists_keys_by_pattern(o)
                        {
                            self.elements.insert(name.clone(), describe(o));
                            bound.push(name.clone());
                        }
                        unknown(name)
                    }
                    v => v,
                };
                self.assign(fr, b, v);
            }
            for s in body {
                self.stmt(fr, s, returns);
            }
            self.second_pass = second;
        }
        for name in bound {
            self.elements.remove(&name);
        }
        self.loop_depth -= 1;
    }

    /// A runtime value's name, primed in a loop's second pass (another value of it).
    fn prime(&self, name: &str) -> String {
        if self.second_pass {
            format!("{name}'")
        } else {
            name.to_string()
        }
    }

    fn assign(&mut self, fr: &Frame<'a>, target: &'a Target, v: V<'a>) {
        // A value known only by what kind of thing it is (a command's reply, an expression
        // not read) takes the name it is given: `a = r.get(x)` and `b = r.get(y)` are two
        // values, `<a>` and `<b>`, not one `<reply>`.
        let v = match &v {
            V::Unknown(u) if is_anonymous(u) => match target {
                Target::Name(_) | Target::Field(..) => {
                    unknown(self.prime(&describe_target(target)))
                }
                _ => v,
            },
            _ => v,
        };
        match target {
            Target::Name(n) => {
                fr.vars.borrow_mut().insert(n.clone(), v);
            }
            Target::Field(obj, field) => {
                let o = self.eval(fr, obj);
                if let V::Obj(o) = o {
                    o.fields.borrow_mut().insert(field.clone(), v);
                } else if let Some(d) = obj.dotted() {
                    fr.vars.borrow_mut().insert(format!("{d}.{field}"), v);
                }
            }
            Target::Index(obj, _) => {
                // `keys[i] = k`: the list gets an element like it.
                if let Some(d) = obj.dotted() {
                    self.push_named(fr, d, Single(v));
                }
            }
            Target::Tuple(ts) => {
                let items: Vec<V<'a>> = match &v {
                    V::List(l) => l.items.clone(),
                    _ => Vec::new(),
                };
                for (i, t) in ts.iter().enumerate() {
                    let v = items
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| unknown(format!("{}[{i}]", describe_target(t))));
                    self.assign(fr, t, v);
                }
            }
            Target::Other => {}
        }
    }

    fn push(&mut self, fr: &Frame<'a>, target: &'a Target, v: Pushed<'a>) {
        match target {
            Target::Name(n) => self.push_named(fr, n.clone(), v),
            Target::Field(o, f) => match self.eval(fr, o) {
                V::Obj(obj) => {
                    let current = obj.fields.borrow().get(f).cloned();
                    if let Some(list) = self.pushed(current, v) {
                        obj.fields.borrow_mut().insert(f.clone(), list);
                    }
                }
                _ => {
                    if let Some(d) = o.dotted() {
                        self.push_named(fr, format!("{d}.{f}"), v);
                    }
                }
            },
            _ => {}
        }
    }

    fn push_named(&mut self, fr: &Frame<'a>, name: String, v: Pushed<'a>) {
        let current = fr.vars.borrow().get(&name).cloned();
        if let Some(list) = self.pushed(current, v) {
            fr.vars.borrow_mut().insert(name, list);
        }
    }

    /// A list with `v` added (`None`: what is pushed onto is not a list).
    fn pushed(&self, current: Option<V<'a>>, v: Pushed<'a>) -> Option<V<'a>> {
        let (mut items, mut rest) = match current {
            Some(V::List(l)) => (l.items.clone(), l.rest.clone()),
            Some(V::Unknown(n)) => (Vec::new(), Some(Rest::Named(n))),
            None => (Vec::new(), None),
            Some(_) => return None,
        };
        let in_loop = self.loop_depth > 0;
        match v {
            Single(x) if in_loop => {
                // Pushed in a loop: elements like it, one per pass.
                rest = Some(match rest {
                    Some(Rest::Like(a, _)) if self.second_pass => Rest::Like(a, Box::new(x)),
                    _ => Rest::Like(Box::new(x.clone()), Box::new(x)),
                });
            }
            Single(x) => {
                if items.len() < 4096 {
                    items.push(x)
                }
            }
            Spreaded(V::List(l)) => {
                items.extend(l.items.iter().cloned());
                if l.rest.is_some() {
                    rest = l.rest.clone();
                }
            }
            Spreaded(other) => rest = Some(Rest::Named(Rc::from(template(&other).text().as_str()))),
        }
        Some(V::list(items, rest))
    }

    // ---- expressions ----

    fn eval(&mut self, fr: &Frame<'a>, e: &'a Expr) -> V<'a> {
        self.steps += 1;
        match e {
            Expr::Str(s) => V::text(Template::lit(s.clone())),
            Expr::Num(n) => V::Num(n.clone()),
            Expr::Name(n) => self.lookup(fr, n),
            Expr::Field(o, f) => {
                let ov = self.eval(fr, o);
                self.field(fr, ov, o, f)
            }
            Expr::Index(o, i) => {
                let ov = self.eval(fr, o);
                let iv = self.eval(fr, i);
                match (&ov, &iv) {
                    (V::List(l), V::Num(n)) => {
                        match (
                            n.parse::<usize>().ok().and_then(|k| l.items.get(k)),
                            &l.rest,
                        ) {
                            (Some(x), _) => x.clone(),
                            // An element of a list a loop made: like the ones it made.
                            (None, Some(Rest::Like(a, b))) => {
                                V::either(vec![(**a).clone(), (**b).clone()])
                            }
                            (None, _) => unknown(self.prime(&describe(e))),
                        }
                    }
                    (V::Map(m), V::Text(k)) => m
                        .iter()
                        .find(|(mk, _)| matches!(mk, V::Text(t) if t == k))
                        .map(|(_, v)| v.clone())
                        .unwrap_or_else(|| unknown(self.prime(&describe(e)))),
                    // A dict comprehension (its `[key, value]` pairs) read by a string key.
                    (V::List(l), V::Text(k)) => match pair_value(l, k) {
                        Some(v) => v,
                        None => unknown(self.prime(&describe(e))),
                    },
                    _ => unknown(self.prime(&describe(e))),
                }
            }
            Expr::Concat(parts) => {
                let mut t = Template::default();
                for p in parts {
                    let v = self.eval(fr, p);
                    let piece = match &v {
                        V::Unknown(_) | V::Text(_) | V::Num(_) => template(&v),
                        _ => Template::var(self.prime(&describe(p))),
                    };
                    t.push(piece);
                }
                V::Text(t)
            }
            Expr::Join(sep, list) => {
                let s = self.eval(fr, sep);
                let l = self.eval(fr, list);
                match (&s, &l) {
                    (V::Text(sep), V::List(l)) if l.rest.is_none() => {
                        let mut t = Template::default();
                        for (i, x) in l.items.iter().enumerate() {
                            if i > 0 {
                                t.push(sep.clone());
                            }
                            t.push(template(x));
                        }
                        V::Text(t)
                    }
                    _ => unknown(self.prime(&describe(list))),
                }
            }
            Expr::Call(c) => self.call(fr, c, e),
            Expr::List(xs) => {
                let mut items = Vec::new();
                let mut rest = None;
                for x in xs {
                    match x {
                        Expr::Spread(inner) => match self.eval(fr, inner) {
                            V::List(l) => {
                                items.extend(l.items.iter().cloned());
                                if l.rest.is_some() {
                                    rest = l.rest.clone();
                                }
                            }
                            other => {
                                rest = Some(Rest::Named(Rc::from(template(&other).text().as_str())))
                            }
                        },
                        x => items.push(self.eval(fr, x)),
                    }
                }
                V::list(items, rest)
            }
            Expr::Map(kv) => {
                let mut out = Vec::new();
                for (k, v) in kv {
                    let kv = self.eval(fr, k);
                    let vv = self.eval(fr, v);
                    out.push((kv, vv));
                }
                // An object literal's functions see the object as `this` (siblings called as
                // `this.other(…)`): the object as written, its functions without a `this` of
                // their own (no value holds itself).
                if out
                    .iter()
                    .any(|(_, v)| matches!(v, V::Func(f) if f.this.is_none()))
                {
                    let base = V::Map(Rc::new(out.clone()));
                    for (_, v) in out.iter_mut() {
                        if let V::Func(f) = v
                            && f.this.is_none()
                        {
                            f.this = Some(Box::new(base.clone()));
                            for (c, _) in self.closures.iter_mut() {
                                if std::ptr::eq(c.func, f.func) && c.this.is_none() {
                                    c.this = f.this.clone();
                                }
                            }
                        }
                    }
                }
                V::Map(Rc::new(out))
            }
            Expr::Spread(x) => match self.eval(fr, x) {
                v @ V::List(_) => v,
                other => V::list(
                    Vec::new(),
                    Some(Rest::Named(Rc::from(template(&other).text().as_str()))),
                ),
            },
            Expr::Lambda(f) => {
                let fv = FuncV {
                    func: f,
                    unit: fr.unit,
                    env: Some(fr.vars.clone()),
                    this: fr.this.clone().map(Box::new),
                };
                if !self.quiet && !self.second_pass {
                    self.closures.push((fv.clone(), self.stack.len()));
                }
                V::Func(fv)
            }
            Expr::Either(xs) => {
                let vs: Vec<V<'a>> = xs.iter().map(|x| self.eval(fr, x)).collect();
                V::either(vs)
            }
            Expr::Comprehension { item, bind, over } => {
                let ov = self.eval(fr, over);
                if let V::List(l) = &ov
                    && l.rest.is_none()
                    && l.items.len() <= UNROLL
                {
                    let mut items = Vec::new();
                    for x in l.items.clone() {
                        self.assign(fr, bind, x);
                        items.push(self.eval(fr, item));
                    }
                    return V::list(items, None);
                }
                let elem = |this: &Self, pass: usize| -> V<'a> {
                    match &ov {
                        V::List(l) => match &l.rest {
                            Some(Rest::Like(a, b)) => {
                                if pass == 0 {
                                    (**a).clone()
                                } else {
                                    (**b).clone()
                                }
                            }
                            _ => unknown(this.prime(&describe_target(bind))),
                        },
                        _ => unknown(this.prime(&describe_target(bind))),
                    }
                };
                let first = elem(self, 0);
                self.assign(fr, bind, first);
                let a = self.eval(fr, item);
                let second = std::mem::replace(&mut self.second_pass, true);
                let b0 = elem(self, 1);
                self.assign(fr, bind, b0);
                let b = self.eval(fr, item);
                self.second_pass = second;
                V::list(Vec::new(), Some(Rest::Like(Box::new(a), Box::new(b))))
            }
            Expr::Wrap(x) => self.eval(fr, x),
            Expr::Other(xs) => {
                for x in xs {
                    self.eval(fr, x);
                }
                unknown(self.prime("value"))
            }
        }
    }

    fn lookup(&mut self, fr: &Frame<'a>, n: &str) -> V<'a> {
        if let Some(v) = fr.vars.borrow().get(n) {
            return v.clone();
        }
        if fr.receiver == Some(n)
            && let Some(t) = &fr.this
        {
            return t.clone();
        }
        if let Some(v) = self.global(fr.unit, n) {
            return v;
        }
        // A function of the tree named so.
        if let Some(ids) = self.p.funcs.get(n)
            && ids.len() == 1
        {
            let id = ids[0];
            return V::Func(FuncV {
                func: self.p.func(id),
                unit: id.0,
                env: None,
                this: None,
            });
        }
        unknown(self.prime(n))
    }

    /// A module-level name of unit `u`, or one it imports, or one the tree defines once.
    fn global(&mut self, u: usize, n: &str) -> Option<V<'a>> {
        if let Some(e) = self.p.module_vars[u].get(n) {
            return Some(self.global_value(u, n, e));
        }
        if let Some((module, name)) = self.p.imports[u].get(n) {
            if name.is_none()
                && let Some(v) = self.p.module_unit(module)
                && let Some(e) = self.p.module_vars[v].get(MODULE_EXPORTS)
            {
                return Some(self.global_value(v, MODULE_EXPORTS, e));
            }
            let name = name.unwrap_or(n);
            if let Some(v) = self.p.module_unit(module) {
                if let Some(e) = self.p.module_vars[v].get(name) {
                    return Some(self.global_value(v, name, e));
                }
                if let Some(fi) = self.p.sources[v]
                    .unit
                    .funcs
                    .iter()
                    .position(|f| f.class.is_none() && f.name == name)
                {
                    return Some(V::Func(FuncV {
                        func: &self.p.sources[v].unit.funcs[fi],
                        unit: v,
                        env: None,
                        this: None,
                    }));
                }
            }
        }
        // Defined at the top of one module of the tree (a constant of another file).
        match self.p.module_names.get(n).map(Vec::as_slice) {
            Some([(v, e)]) => Some(self.global_value(*v, n, e)),
            _ => None,
        }
    }

    fn global_value(&mut self, u: usize, n: &str, e: &'a Expr) -> V<'a> {
        let key = (u, n.to_string());
        if !self.reading_globals.insert(key.clone()) {
            return unknown(n);
        }
        let frame = Frame {
            unit: u,
            vars: Rc::new(RefCell::new(HashMap::new())),
            this: None,
            receiver: None,
            class: None,
        };
        let quiet = std::mem::replace(&mut self.quiet, true);
        let second = std::mem::replace(&mut self.second_pass, false);
        let v = self.eval(&frame, e);
        self.quiet = quiet;
        self.second_pass = second;
        self.reading_globals.remove(&key);
        match v {
            // A module-level runtime value is named after the module's name for it.
            V::Unknown(_) => unknown(n),
            v => v,
        }
    }

    /// `obj.field`.
    fn field(&mut self, fr: &Frame<'a>, obj: V<'a>, obj_expr: &'a Expr, f: &'a str) -> V<'a> {
        match &obj {
            V::Obj(o) => {
                if let Some(v) = o.fields.borrow().get(f) {
                    return v.clone();
                }
                // Set in another method of the class: its value there.
                let class = o.class;
                if let Some(v) = self.field_elsewhere(class, f, &obj) {
                    o.fields.borrow_mut().insert(f.to_string(), v.clone());
                    return v;
                }
                // A method read as a property (no parameters: its value), or bound for a
                // later call.
                if let Some(id) = self.p.method(class, f, fr.unit) {
                    let func = self.p.func(id);
                    if func.params.is_empty() && !func.is_static {
                        let v = self.run_function(
                            fr,
                            id.0,
                            func,
                            HashMap::new(),
                            Some(obj.clone()),
                            None,
                        );
                        if keyish(&v)
                            || matches!(v, V::List(_) | V::Client | V::Script(_) | V::Pipe(_))
                        {
                            return v;
                        }
                    }
                    return V::Func(FuncV {
                        func: self.p.func(id),
                        unit: id.0,
                        env: None,
                        this: Some(Box::new(obj.clone())),
                    });
                }
                let name = match obj_expr.dotted() {
                    Some(d) => format!("{d}.{f}"),
                    None => f.to_string(),
                };
                unknown(self.prime(name.trim_start_matches("self.").trim_start_matches("this.")))
            }
            V::Map(m) => m
                .iter()
                .find(|(k, _)| matches!(k, V::Text(t) if t.text() == f))
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| unknown(self.prime(f))),
            _ => {
                let d = match obj_expr.dotted() {
                    Some(d) => format!("{d}.{f}"),
                    None => format!("{}.{f}", describe(obj_expr)),
                };
                if let Some(v) = fr.vars.borrow().get(&d) {
                    return v.clone();
                }
                // `module.NAME` of an imported module.
                if let Expr::Name(m) = obj_expr
                    && let Some(u) = self.p.imported_module(fr.unit, m)
                    && let Some(e) = self.p.module_vars[u].get(f)
                {
                    return self.global_value(u, f, e);
                }
                // `pkg.NAME` of a package of the tree.
                if let Expr::Name(m) = obj_expr
                    && let Some(Err((u, e))) = self.p.package_member(fr.unit, m, f)
                {
                    return self.global_value(u, f, e);
                }
                // `job.key` on a runtime value named like a class of the tree: that class's
                // field or property.
                if let V::Unknown(n) = &obj
                    && let Some(class) = self.p.class_named_like(n)
                    && (self.p.field_sets.contains_key(&(class, f))
                        || self.p.method(class, f, fr.unit).is_some())
                {
                    let o = V::Obj(Rc::new(ObjV {
                        class,
                        fields: RefCell::new(HashMap::new()),
                    }));
                    let v = self.field_elsewhere(class, f, &o);
                    if let Some(v) = v {
                        return rename_self(v, n);
                    }
                    if let Some(id) = self.p.method(class, f, fr.unit) {
                        // A property: its value.
                        let func = self.p.func(id);
                        if func.params.is_empty() {
                            return match self.invoke(fr, id.0, func, &[], Some(o), None) {
                                V::Text(t) => V::Text(rename_template(t, n)),
                                v => v,
                            };
                        }
                    }
                }
                let d = d.trim_start_matches("self.").trim_start_matches("this.");
                // A field of a runtime value that is the same in every pass of a loop is the
                // same value in every pass (`parent.name`).
                if matches!(&obj, V::Unknown(n) if !n.ends_with('\'')) {
                    return unknown(d);
                }
                unknown(self.prime(d))
            }
        }
    }

    /// The value `self.<field>` is given in some method of `class` (the first one written),
    /// read with that method's parameters unknown.
    fn field_elsewhere(&mut self, class: &'a str, f: &str, obj: &V<'a>) -> Option<V<'a>> {
        for c in self.p.lineage_of(class) {
            let Some(sets) = self.p.field_sets.get(&(c, f)) else {
                continue;
            };
            let &(id, e) = sets.first()?;
            let key = (usize::MAX - id.0, format!("{c}.{f}"));
            if !self.reading_globals.insert(key.clone()) {
                return None;
            }
            let func = self.p.func(id);
            let vars = self.class_body_params(id.0, func, |p| unknown(&p.name));
            let frame = self.method_frame(id.0, func, obj.clone(), vars);
            let quiet = std::mem::replace(&mut self.quiet, true);
            let v = self.eval(&frame, e);
            self.quiet = quiet;
            self.reading_globals.remove(&key);
            return Some(match v {
                V::Unknown(_) => unknown(format!("self.{f}")),
                v => v,
            });
        }
        None
    }

    // ---- calls ----

    fn call(&mut self, fr: &Frame<'a>, c: &'a Call, e: &'a Expr) -> V<'a> {
        let Some(recv_expr) = &c.receiver else {
            return self.bare_call(fr, c, e);
        };
        let recv = self.eval(fr, recv_expr);
        // Several possibilities (`pipe if pipe else self.conn`): the call on each.
        if let V::Either(alts) = &recv {
            let mut alts: Vec<V<'a>> = alts.iter().cloned().collect();
            // `pipe = pipe or self.conn.pipeline(); …; if made_here: pipe.execute()`: sending
            // one of a pipeline made here and one handed in sends the one made here; the
            // caller sends its own.
            let calls = &self.p.calls;
            if calls.run.contains(&c.name) || calls.run_plain.contains(&c.name) {
                let here = self.stack.len();
                let made_here =
                    |v: &V<'a>| matches!(v, V::Pipe(id) if self.pipes[*id].depth == here);
                let handed_in =
                    |v: &V<'a>| matches!(v, V::Pipe(id) if self.pipes[*id].depth < here);
                if alts.iter().any(made_here) && alts.iter().any(handed_in) {
                    alts.retain(|v| !handed_in(v));
                }
            }
            let mut out = Vec::new();
            for a in alts {
                out.push(self.method_call(fr, c, e, a, recv_expr));
            }
            return V::either(out);
        }
        self.method_call(fr, c, e, recv, recv_expr)
    }

    fn method_call(
        &mut self,
        fr: &Frame<'a>,
        c: &'a Call,
        e: &'a Expr,
        recv: V<'a>,
        recv_expr: &'a Expr,
    ) -> V<'a> {
        let m = c.name.as_str();
        match &recv {
            V::Pipe(id) => return self.on_pipe(fr, c, *id),
            V::PipeObject(id, key) => {
                let (id, key) = (*id, key.clone());
                let op = m.to_string();
                self.queue(id, &op, vec![key], None, c.at, fr.unit);
                return recv;
            }
            V::Client => return self.on_client(fr, c, e),
            V::Script(s) => {
                let s = s.clone();
                return self.run_script_object(fr, c, &s);
            }
            V::Obj(o) => {
                if let Some(id) = self.p.method(o.class, m, fr.unit) {
                    // Subclasses that override it: an object of any of them may be the one
                    // (its own class's definition read too).
                    let overrides = self.p.overrides(o.class, m);
                    if !overrides.is_empty() {
                        let mut vs = Vec::with_capacity(overrides.len() + 1);
                        for id in std::iter::once(id).chain(overrides) {
                            let func = self.p.func(id);
                            vs.push(self.invoke(
                                fr,
                                id.0,
                                func,
                                &c.args,
                                Some(recv.clone()),
                                Some(c.at),
                            ));
                        }
                        return V::either(vs);
                    }
                    let func = self.p.func(id);
                    return self.invoke(fr, id.0, func, &c.args, Some(recv.clone()), Some(c.at));
                }
                // A field holding a function or a script (`self.script(keys=…)`).
                let fv = o.fields.borrow().get(m).cloned();
                let fv = match fv {
                    Some(v) => Some(v),
                    None => self.field_elsewhere(o.class, m, &recv),
                };
                match fv {
                    Some(V::Script(s)) => return self.run_script_object(fr, c, &s),
                    Some(V::Func(f)) => return self.invoke_value(fr, &f, &c.args, Some(c.at)),
                    Some(V::Client) if c.args.is_empty() => return V::Client,
                    _ => {}
                }
                // A class of the tree that extends a client's class: the client's methods.
                let calls = &self.p.calls;
                if self
                    .p
                    .lineage_of(o.class)
                    .iter()
                    .any(|b| calls.make_client.contains(*b) || calls.client_types.contains(*b))
                {
                    return self.on_client(fr, c, e);
                }
                return self.unknown_method(fr, c, e, &recv, recv_expr);
            }
            V::Func(f) if matches!(m, "call" | "apply") => {
                let f = f.clone();
                let args: &'a [Arg] = if c.args.is_empty() {
                    &c.args
                } else {
                    &c.args[1..]
                };
                return self.invoke_value(fr, &f, args, Some(c.at));
            }
            V::Map(entries) => {
                let held = entries
                    .iter()
                    .find(|(k, _)| matches!(k, V::Text(t) if t.text() == m))
                    .map(|(_, v)| v.clone());
                match held {
                    Some(V::Func(mut f)) => {
                        // An object literal's function: `this` is the object (its siblings
                        // called as `this.other(…)`).
                        if f.this.is_none() {
                            f.this = Some(Box::new(recv.clone()));
                        }
                        return self.invoke_value(fr, &f, &c.args, Some(c.at));
                    }
                    Some(V::Script(s)) => return self.run_script_object(fr, c, &s),
                    _ => return self.value_method(fr, c, &recv),
                }
            }
            V::List(_) | V::Text(_) | V::Num(_) => {
                return self.value_method(fr, c, &recv);
            }
            _ => {}
        }
        self.unknown_method(fr, c, e, &recv, recv_expr)
    }

    /// A method of something nothing is known of: a client's when the receiver is named like
    /// one or the method is a command nothing else has; a function of the tree's class the
    /// receiver is named after; else its result is unknown (its arguments read for effects).
    fn unknown_method(
        &mut self,
        fr: &Frame<'a>,
        c: &'a Call,
        e: &'a Expr,
        recv: &V<'a>,
        recv_expr: &'a Expr,
    ) -> V<'a> {
        let m = c.name.as_str();
        let calls = &self.p.calls;
        let rname = match recv {
            V::Unknown(n) => n.to_string(),
            _ => describe(recv_expr),
        };
        // The list helpers of lodash and underscore (`_.map(keys, f)`, `_.concat(a, b)`): the
        // list method on the first argument.
        if matches!(rname.as_str(), "_" | "lodash" | "underscore")
            && matches!(
                m,
                "map" | "flatMap" | "concat" | "flatten" | "compact" | "uniq" | "clone"
            )
            && let Some((first, rest)) = c.args.split_first()
        {
            let xs = self.eval(fr, &first.value);
            if let V::List(_) = xs {
                let args: Vec<V<'a>> = rest.iter().map(|a| self.eval(fr, &a.value)).collect();
                return self.list_method(fr, m, &xs, args, c.at);
            }
        }
        // `redis.Redis(…)`, `Redis.from_url(…)`, `new IORedis.Cluster(…)`: a client made.
        if calls.make_client.contains(m) && matches!(recv, V::Unknown(_)) {
            self.eval_args_for_effects(fr, &c.args);
            return V::Client;
        }
        // `s.pool.Get()`, `jedisPool.getResource()`: a connection taken from a pool.
        if calls.pool_get.contains(m) && last_segment(&rname).to_ascii_lowercase().ends_with("pool")
        {
            self.eval_args_for_effects(fr, &c.args);
            return V::Client;
        }
        // `redis.NewScript(…)`: a script made by the client's package.
        if calls.new_script.contains(m) && matches!(recv, V::Unknown(_)) {
            return self.make_script(fr, c);
        }
        // `module.function(…)` of a module the file imports.
        if let Expr::Name(module) = recv_expr
            && let Some(u) = self.p.imported_module(fr.unit, module)
            && let Some(func) = self.p.sources[u]
                .unit
                .funcs
                .iter()
                .find(|f| f.class.is_none() && f.name == m)
        {
            return self.invoke(fr, u, func, &c.args, None, Some(c.at));
        }
        // `pkg.Function(…)` of a package of the tree, its files the package's.
        if let Expr::Name(pkg) = recv_expr
            && let Some(Ok((u, func))) = self.p.package_member(fr.unit, pkg, m)
        {
            return self.invoke(fr, u, func, &c.args, None, Some(c.at));
        }
        // The tree's class the receiver is named after (`job.save(pipeline=pipe)`).
        if let V::Unknown(n) = recv
            && let Some(class) = self.p.class_named_like(n)
            && let Some(id) = self.p.method(class, m, fr.unit)
        {
            let func = self.p.func(id);
            let obj = V::Obj(Rc::new(ObjV {
                class,
                fields: RefCell::new(HashMap::new()),
            }));
            let v = self.invoke(fr, id.0, func, &c.args, Some(obj), Some(c.at));
            return match v {
                V::Text(t) => V::Text(rename_template(t, n)),
                v => v,
            };
        }
        let command_like = self.command_of(m).is_some();
        let client_method =
            calls.is_client_method(m) || command_like || self.p.defined.contains_key(m);
        // A receiver that says Redis (`redis`, `self._valkey`, a client's maker) is a client;
        // one named only like a client (`client`, `conn`, `r`) is one unless the tree defines
        // the method itself (a wrapper class called through a field named `client`).
        // A value nothing is known of reached through a name (`self.connection` whose
        // property makes the client from a class keyplan cannot follow): the name says.
        let written = match recv {
            V::Unknown(_) => describe(recv_expr),
            _ => String::new(),
        };
        // A runtime value named after a client's class, or held in a variable so named
        // (`jedis` for `Jedis`, as typed languages name a variable after its type), is one
        // too.
        let named_after_type = |name: &str| {
            calls
                .make_client
                .iter()
                .chain(&calls.client_types)
                .any(|t| t.eq_ignore_ascii_case(name))
        };
        let weak = client_name(&rname) || client_name(&written);
        let strong = strong_client_name(&rname)
            || strong_client_name(&written)
            || matches!(recv, V::Unknown(_)) && calls.make_client.contains(&last_segment(&rname))
            || matches!(recv, V::Unknown(_))
                && !weak
                && (named_after_type(&last_segment(&rname))
                    || named_after_type(&last_segment(&describe(recv_expr))));
        // A class that wraps a client and calls the method of the same name on its field
        // (`def mget(self, keys): return self.client.mget(keys)`): the field is the client.
        let tree_has = self.tree_defines_method(m) && !self.delegates(fr, recv_expr, m);
        let makes_batch = calls.make.contains(m)
            || calls.make_atomic.contains(m)
            || calls.block.contains(m)
            || calls.block_atomic.contains(m);
        let dynamic_command =
            self.p.dynamic_defines && !command_like && !tree_has && calls.may_be_defined(m);
        if strong && (client_method || dynamic_command)
            || weak && (makes_batch || dynamic_command)
            || weak && client_method && !tree_has
            || calls.is_client_method(m) && !everyday(m) && !tree_has && !command_like
            || !matches!(recv, V::Obj(_))
                && command_like
                && !everyday(m)
                && !matches!(recv, V::List(_) | V::Map(_) | V::Text(_))
                && c.args.iter().any(|a| !matches!(a.value, Expr::Lambda(_)))
                && !tree_has
        {
            return self.on_client(fr, c, e);
        }
        if pipe_name(&rname) && (command_like || calls.run.contains(m)) {
            // A pipeline nothing is known of (a field set elsewhere): what is sent on it is
            // not known here.
            self.eval_args(fr, &c.args);
            return recv.clone();
        }
        // A method of the tree defined once under that name.
        if let Some(ids) = self.p.method_names.get(m)
            && ids.len() == 1
            && !command_like
        {
            let id = ids[0];
            let func = self.p.func(id);
            let this = func.class.as_deref().map(|cl| {
                V::Obj(Rc::new(ObjV {
                    class: self.p.lineage_of(cl).first().copied().unwrap_or("?"),
                    fields: RefCell::new(HashMap::new()),
                }))
            });
            return self.invoke(fr, id.0, func, &c.args, this, Some(c.at));
        }
        let callee = describe(e);
        let callee = callee.split('(').next().unwrap_or(&callee).to_string();
        self.handed(fr, &c.args, Some(&callee));
        unknown(self.prime(&describe(e)))
    }

    fn tree_defines_method(&self, m: &str) -> bool {
        self.p.method_names.contains_key(m)
    }

    /// Whether `recv.m(…)` is a class delegating `m` to one of its own fields: the receiver
    /// is a field of `self`/`this`, and the only class of the tree that defines `m` is the
    /// one being read.
    fn delegates(&self, fr: &Frame<'a>, recv_expr: &Expr, m: &str) -> bool {
        // A function named `m` calling `m` on something that is not its own object
        // (`moveToActive(queue) { return queue.client.moveToActive(…) }`): a wrapper of the
        // receiver's method, not a call of itself.
        // (The receiver's own fields are judged below, by the classes that define `m`.)
        let mut root = recv_expr;
        while let Expr::Field(x, _) = root {
            root = x;
        }
        let on_self = matches!(root, Expr::Name(n)
            if Some(n.as_str()) == fr.receiver || matches!(n.as_str(), "this" | "self"));
        if !on_self && self.stack.last().is_some_and(|f| f.name == m) {
            return true;
        }
        let Some(class) = fr.class else {
            return false;
        };
        let on_field = matches!(recv_expr, Expr::Field(x, _)
            if matches!(&**x, Expr::Name(n) if Some(n.as_str()) == fr.receiver));
        // No class outside this class's family (its bases, and every class descending from
        // them: the siblings that implement the same interface) defines it: a field holding
        // another of the tree's classes would. A cache backend's `delete` calling
        // `self._client.delete(…)` calls the client's, although every backend has a `delete`.
        let family = self.p.family(class);
        on_field
            && self.p.method_names.get(m).is_some_and(|ids| {
                ids.iter().all(|&id| {
                    self.p
                        .func(id)
                        .class
                        .as_deref()
                        .is_none_or(|c| family.contains(c))
                })
            })
    }

    /// Methods of lists, maps and strings that build values.
    fn value_method(&mut self, fr: &Frame<'a>, c: &'a Call, recv: &V<'a>) -> V<'a> {
        let m = c.name.as_str();
        let args: Vec<V<'a>> = c.args.iter().map(|a| self.eval(fr, &a.value)).collect();
        self.list_method(fr, m, recv, args, c.at)
    }

    /// A list's, map's or text's method `m` on `recv` with these arguments (see
    /// [`Cx::value_method`]); `xs.map(f)` applies `f` to each element written out.
    fn list_method(
        &mut self,
        fr: &Frame<'a>,
        m: &str,
        recv: &V<'a>,
        args: Vec<V<'a>>,
        at: Position,
    ) -> V<'a> {
        if let (V::List(l), "map" | "flatMap" | "flat_map" | "collect", Some(V::Func(f))) =
            (recv, m, args.first())
        {
            let f = f.clone();
            let mut items = Vec::with_capacity(l.items.len());
            for x in l.items.iter().take(UNROLL) {
                let v = self.apply(fr, &f, vec![x.clone()], at);
                match v {
                    V::List(inner) if m != "map" && m != "collect" => {
                        items.extend(inner.items.iter().cloned())
                    }
                    v => items.push(v),
                }
            }
            let rest = match &l.rest {
                None if l.items.len() <= UNROLL => None,
                Some(Rest::Like(a, b)) => {
                    let (a, b) = ((**a).clone(), (**b).clone());
                    let fa = self.apply(fr, &f, vec![a], at);
                    let fb = self.apply(fr, &f, vec![b], at);
                    Some(Rest::Like(Box::new(fa), Box::new(fb)))
                }
                Some(Rest::Named(n)) => Some(Rest::Named(Rc::from(format!("{n}.{m}(…)").as_str()))),
                None => Some(Rest::Named(Rc::from(format!("{m}(…)").as_str()))),
            };
            return V::list(items, rest);
        }
        match (recv, m) {
            (
                V::List(l),
                "copy" | "slice" | "concat" | "clone" | "to_a" | "dup" | "values" | "keys" | "flat"
                | "flatten" | "compact" | "uniq",
            ) => {
                let mut items = l.items.clone();
                let mut rest = l.rest.clone();
                for a in args {
                    match a {
                        V::List(o) => {
                            items.extend(o.items.iter().cloned());
                            if o.rest.is_some() {
                                rest = o.rest.clone();
                            }
                        }
                        v if m == "concat" => items.push(v),
                        _ => {}
                    }
                }
                V::list(items, rest)
            }
            // A list mapped by a function not followed (`xs.map(String)`): as many elements,
            // each only the running code knows.
            (V::List(l), "map" | "flatMap" | "flat_map" | "collect") => V::list(
                Vec::new(),
                Some(Rest::Named(Rc::from(
                    format!(
                        "{}.{m}(…)",
                        l.rest.as_ref().map_or("list", |r| match r {
                            Rest::Named(n) => n,
                            Rest::Like(..) => "list",
                        })
                    )
                    .as_str(),
                ))),
            ),
            (V::Map(mv), "keys") => V::list(mv.iter().map(|(k, _)| k.clone()).collect(), None),
            (V::Map(mv), "values") => V::list(mv.iter().map(|(_, v)| v.clone()).collect(), None),
            (
                V::Text(t),
                "lower" | "upper" | "strip" | "trim" | "encode" | "decode" | "toString" | "to_s"
                | "toLowerCase" | "toUpperCase",
            ) => V::Text(t.clone()),
            // A printf-style format known once followed (`CART % uid`): its verbs filled in
            // order; arguments that do not line up leave the text as a value of the code.
            (V::Text(t), super::ir::PRINTF) if t.is_literal() => {
                let mut next = args.iter();
                match super::syntax::printf(&t.text(), || next.next().map(template)) {
                    Some(filled) => V::Text(filled),
                    None => unknown(self.prime(&format!("{}%", t.text()))),
                }
            }
            (V::Text(t), "format") if t.is_literal() => {
                // `"{}:{}".format(a, b)` the lowering did not turn into a concatenation.
                let text = t.text();
                let mut out = Template::default();
                let mut rest = text.as_str();
                let mut i = 0;
                while let Some(open) = rest.find('{') {
                    let Some(close) = rest[open..].find('}') else {
                        break;
                    };
                    out.push_lit(&rest[..open]);
                    let inner = &rest[open + 1..open + close];
                    let v = inner
                        .parse::<usize>()
                        .ok()
                        .and_then(|k| args.get(k))
                        .or_else(|| if inner.is_empty() { args.get(i) } else { None });
                    out.push(v.map(template).unwrap_or_else(|| Template::var(inner)));
                    i += 1;
                    rest = &rest[open + close + 1..];
                }
                out.push_lit(rest);
                V::Text(out)
            }
            // A list made from one nothing is known of (`args.slice(0, n).map(f)`,
            // `d.keys()`, `s.split(",")`): a list only the running code knows.
            (
                V::Unknown(n),
                "map" | "flatMap" | "flat_map" | "filter" | "slice" | "concat" | "flat" | "keys"
                | "values" | "split" | "toArray" | "to_a" | "select" | "reject" | "collect",
            ) => V::list(
                Vec::new(),
                Some(Rest::Named(Rc::from(format!("{n}.{m}(…)").as_str()))),
            ),
            _ => unknown(self.prime(&made_of(&format!("{}.{m}", label(recv)), &args))),
        }
    }

    /// The value function `f` returns for these argument values.
    fn apply(&mut self, fr: &Frame<'a>, f: &FuncV<'a>, args: Vec<V<'a>>, at: Position) -> V<'a> {
        self.closures.retain(|(c, _)| !std::ptr::eq(c.func, f.func));
        let mut vars = f
            .env
            .as_ref()
            .map(|e| e.borrow().clone())
            .unwrap_or_default();
        for (p, v) in f.func.params.iter().zip(args) {
            vars.insert(p.name.clone(), v);
        }
        let this = f.this.as_deref().cloned();
        self.run_function(fr, f.unit, f.func, vars, this, Some(at))
    }

    /// A call of a bare name: a function of the tree (followed), a class (an object made by
    /// its constructor), a client's maker, a script maker, a function value.
    fn bare_call(&mut self, fr: &Frame<'a>, c: &'a Call, e: &'a Expr) -> V<'a> {
        let calls = &self.p.calls;
        let n = c.name.as_str();
        if n.is_empty()
            && let Some(callee) = &c.callee
        {
            let f = self.eval(fr, callee);
            return match f {
                V::Func(f) => self.invoke_value(fr, &f, &c.args, Some(c.at)),
                V::Script(s) => self.run_script_object(fr, c, &s),
                // A client's class handed out by a function (`self._get_client()(pool=…)`
                // where `_get_client` returns `redis.StrictRedis`): a client made.
                V::Unknown(n) if calls.make_client.contains(&last_segment(&n)) => {
                    self.eval_args_for_effects(fr, &c.args);
                    V::Client
                }
                _ => {
                    self.eval_args_for_effects(fr, &c.args);
                    unknown(self.prime(&describe(e)))
                }
            };
        }
        // A local or global holding a function or a script.
        let local = fr.vars.borrow().get(n).cloned();
        let held = match local {
            Some(v) => Some(v),
            None => {
                if self.p.module_vars[fr.unit].contains_key(n) {
                    self.global(fr.unit, n)
                } else {
                    None
                }
            }
        };
        match held {
            Some(V::Func(f)) => return self.invoke_value(fr, &f, &c.args, Some(c.at)),
            Some(V::Script(s)) => return self.run_script_object(fr, c, &s),
            Some(V::Client) if calls.is_client_method(n) => return self.on_client(fr, c, e),
            _ => {}
        }
        if n == "super" {
            return fr.this.clone().unwrap_or_else(|| unknown("super"));
        }
        if calls.make_client.contains(n) {
            self.eval_args_for_effects(fr, &c.args);
            return V::Client;
        }
        if calls.new_script.contains(n) {
            return self.make_script(fr, c);
        }
        // A class of the tree: an object made by its constructor with these arguments.
        if self.p.bases.contains_key(n) || self.p.inits.contains_key(n) {
            let class = self.p.lineage_of(n).first().copied().unwrap_or(n);
            let obj = V::Obj(Rc::new(ObjV {
                class,
                fields: RefCell::new(HashMap::new()),
            }));
            if self.stack.len() <= DEPTH && self.steps < BUDGET {
                self.construct(class, &obj, Some((&c.args, fr)));
            }
            return obj;
        }
        // A function of this file, one it imports, or the tree's one function of that name.
        let target = self.resolve_function(fr.unit, n);
        if let Some((u, func)) = target {
            return self.invoke(fr, u, func, &c.args, None, Some(c.at));
        }
        // Python's builtins that copy or map a list (`list(keys)`, `tuple(…)`, `sorted(…)`,
        // `map(f, keys)`): the list they make.
        if c.receiver.is_none() && c.args.iter().all(|a| a.keyword.is_none()) {
            match (n, c.args.as_slice()) {
                ("list" | "tuple" | "set" | "frozenset" | "sorted" | "reversed", [a]) => {
                    if let v @ V::List(_) = self.eval(fr, &a.value) {
                        return v;
                    }
                }
                ("map", [f, xs]) => {
                    let f = self.eval(fr, &f.value);
                    let xs = self.eval(fr, &xs.value);
                    if let V::List(_) = xs {
                        return self.list_method(fr, "map", &xs, vec![f], c.at);
                    }
                }
                _ => {}
            }
        }
        // A method of this object called without its receiver (Ruby, Java, Go closures), or
        // of its class from a static method.
        if let Some(class) = fr.class
            && let Some(id) = self.p.method(class, n, fr.unit)
        {
            let func = self.p.func(id);
            let this = fr.this.clone();
            return self.invoke(fr, id.0, func, &c.args, this, Some(c.at));
        }
        if fr.class.is_some()
            && fr.this.is_some()
            && (calls.is_client_method(n) || self.command_of(n).is_some() && !everyday(n))
        {
            // A class that is a client (extends one): its own commands.
            if fr
                .class
                .map(|cl| {
                    self.p
                        .lineage_of(cl)
                        .iter()
                        .any(|b| calls.make_client.contains(*b))
                })
                .unwrap_or(false)
            {
                return self.on_client(fr, c, e);
            }
        }
        self.eval_args_for_effects(fr, &c.args);
        unknown(self.prime(&describe(e)))
    }

    fn resolve_function(&self, u: usize, n: &str) -> Option<(usize, &'a Func)> {
        let unit = self.p.sources[u].unit;
        if let Some(f) = unit.funcs.iter().find(|f| f.class.is_none() && f.name == n) {
            return Some((u, f));
        }
        if let Some((module, name)) = self.p.imports[u].get(n)
            && let Some(v) = self.p.module_unit(module)
        {
            let name = name.unwrap_or(n);
            if let Some(f) = self.p.sources[v]
                .unit
                .funcs
                .iter()
                .find(|f| f.class.is_none() && f.name == name)
            {
                return Some((v, f));
            }
        }
        match self.p.funcs.get(n).map(Vec::as_slice) {
            Some([id]) => Some((id.0, self.p.func(*id))),
            _ => None,
        }
    }

    /// A call's positional arguments (its keyword arguments read for what they do).
    fn eval_args(&mut self, fr: &Frame<'a>, args: &'a [Arg]) -> Vec<V<'a>> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            let v = self.eval(fr, &a.value);
            if a.keyword.is_none() {
                out.push(v);
            }
        }
        out
    }

    /// Reads a call's arguments for what they do (a closure given to a function nothing is
    /// known of is read as it would run: its parameters unknown).
    fn eval_args_for_effects(&mut self, fr: &Frame<'a>, args: &'a [Arg]) {
        self.handed(fr, args, None);
    }

    /// Reads a call's arguments for what they do; a pipeline among them is handed to code not
    /// followed (`callee`, or the call's text): what that code queues on it is not known.
    fn handed(&mut self, fr: &Frame<'a>, args: &'a [Arg], callee: Option<&str>) {
        for a in args {
            let v = self.eval(fr, &a.value);
            for alt in v.alternatives() {
                if let V::Pipe(id) = alt {
                    let name = callee
                        .map(str::to_string)
                        .unwrap_or_else(|| "a function".into());
                    self.mark_handed(*id, name);
                }
            }
        }
    }

    fn mark_handed(&mut self, id: usize, callee: String) {
        let p = &mut self.pipes[id];
        if p.unknown.is_none() && !p.sent {
            p.unknown = Some(Unknown::Callee(callee));
        }
    }

    /// Calls a function value.
    fn invoke_value(
        &mut self,
        fr: &Frame<'a>,
        f: &FuncV<'a>,
        args: &'a [Arg],
        at: Option<Position>,
    ) -> V<'a> {
        // A closure called here is read here, not again on its own.
        self.closures.retain(|(c, _)| !std::ptr::eq(c.func, f.func));
        let this = f.this.as_deref().cloned();
        match &f.env {
            Some(env) => {
                let mut vars = env.borrow().clone();
                let bound = self.bind(f.func, args, fr, f.unit);
                vars.extend(bound);
                self.run_function(fr, f.unit, f.func, vars, this, at)
            }
            None => self.invoke(fr, f.unit, f.func, args, this, at),
        }
    }

    /// Calls function `func` of unit `u` with these arguments (read in frame `fr`).
    fn invoke(
        &mut self,
        fr: &Frame<'a>,
        u: usize,
        func: &'a Func,
        args: &'a [Arg],
        this: Option<V<'a>>,
        at: Option<Position>,
    ) -> V<'a> {
        let vars = self.bind(func, args, fr, u);
        self.run_function(fr, u, func, vars, this, at)
    }

    fn run_function(
        &mut self,
        fr: &Frame<'a>,
        u: usize,
        func: &'a Func,
        vars: HashMap<String, V<'a>>,
        this: Option<V<'a>>,
        at: Option<Position>,
    ) -> V<'a> {
        if self.on_stack(func) || self.stack.len() > DEPTH || self.steps > BUDGET {
            // Not followed: a pipeline handed to it gets commands not known here.
            let mut handed: Vec<usize> = vars
                .values()
                .flat_map(|v| v.alternatives())
                .filter_map(|alt| match alt {
                    V::Pipe(id) => Some(*id),
                    _ => None,
                })
                .collect();
            handed.sort_unstable();
            handed.dedup();
            for id in handed {
                self.mark_handed(id, func.name.clone());
            }
            // Out of steps: every pipeline still open may miss commands of calls not followed.
            if self.steps > BUDGET && self.exhausted.is_none() {
                self.exhausted = Some(func.name.clone());
                for p in self
                    .pipes
                    .iter_mut()
                    .filter(|p| !p.sent && p.unknown.is_none())
                {
                    p.unknown = Some(Unknown::Unfollowed(func.name.clone()));
                }
            }
            let v = unknown(self.prime(&made_of(&func.name, &param_values(func, &vars))));
            return self.declared_result(func, v);
        }
        let memo_key =
            signature(&vars, this.as_ref()).map(|sig| (func as *const Func as usize, sig));
        if let Some(k) = &memo_key
            && let Some(v) = self.memo.get(k)
        {
            return v.clone();
        }
        let this = this.or_else(|| match (&func.class, func.is_static) {
            (Some(c), false) if fr.class == Some(c.as_str()) => fr.this.clone(),
            _ => None,
        });
        // What the result is called when nothing is known of it: the function with its
        // arguments (`key_for(a)` and `key_for(b)` are two values).
        let named_args = param_values(func, &vars);
        let frame = Frame {
            unit: u,
            vars: Rc::new(RefCell::new(vars)),
            this,
            receiver: func.receiver.as_deref(),
            class: func.class.as_deref(),
        };
        let outer_caller = self.caller.clone();
        if self.caller.is_none()
            && let Some(at) = at
        {
            let from = self
                .stack
                .last()
                .map(|f| f.name.clone())
                .unwrap_or_default();
            self.caller = Some(format!("{} ({}:{})", from, self.file(fr.unit), at.line));
        }
        self.stack.push(func);
        let returns = self.run_body(&frame, &func.body);
        self.stack.pop();
        self.caller = outer_caller;
        let v = match returns.len() {
            0 => unknown(self.prime(&made_of(&func.name, &named_args))),
            _ => V::either(returns),
        };
        let v = self.declared_result(func, v);
        // A pipeline a helper made and returned (`multi = this.multi()`): the caller's batch,
        // opened where it called the helper.
        if let (V::Pipe(id), Some(at)) = (&v, at)
            && self.pipes[*id].depth > self.stack.len()
            && self.pipes[*id].ops.is_empty()
        {
            self.pipes[*id].made = Some((fr.unit, at));
            self.pipes[*id].depth = self.stack.len();
        }
        if let Some(k) = memo_key {
            self.memo.insert(k, v.clone());
        }
        v
    }

    /// What a function returns, as its declared result type says: a client's type (`func
    /// Get() redis.Conn`) is a client, whatever wraps it.
    fn declared_result(&self, func: &Func, v: V<'a>) -> V<'a> {
        match func.returns.as_deref() {
            Some(t) if self.p.calls.client_types.contains(t) && !matches!(v, V::Pipe(_)) => {
                V::Client
            }
            _ => v,
        }
    }

    /// A function's parameters bound to a call's arguments: positional, keyword, the rest as a
    /// list, defaults for what is not given.
    fn bind(
        &mut self,
        func: &'a Func,
        args: &'a [Arg],
        fr: &Frame<'a>,
        u: usize,
    ) -> HashMap<String, V<'a>> {
        let mut vars = HashMap::new();
        let mut positional: Vec<V<'a>> = Vec::new();
        let mut spread_rest: Option<Rest<'a>> = None;
        let mut keyword: HashMap<&str, V<'a>> = HashMap::new();
        for a in args {
            match (&a.keyword, &a.value) {
                (Some(k), v) => {
                    let v = self.eval(fr, v);
                    keyword.insert(k.as_str(), v);
                }
                (None, Expr::Spread(x)) => match self.eval(fr, x) {
                    V::List(l) => {
                        positional.extend(l.items.iter().cloned());
                        if l.rest.is_some() {
                            spread_rest = l.rest.clone();
                        }
                    }
                    other => {
                        spread_rest = Some(Rest::Named(Rc::from(template(&other).text().as_str())))
                    }
                },
                (None, v) => {
                    let v = self.eval(fr, v);
                    positional.push(v);
                }
            }
        }
        let mut i = 0;
        for p in &func.params {
            if p.rest {
                let items: Vec<V<'a>> = positional
                    .get(i..)
                    .map(<[V<'a>]>::to_vec)
                    .unwrap_or_default();
                i = positional.len();
                vars.insert(p.name.clone(), V::list(items, spread_rest.take()));
                continue;
            }
            if p.kwrest {
                let m: Vec<(V<'a>, V<'a>)> = keyword
                    .iter()
                    .filter(|(k, _)| !func.params.iter().any(|q| q.name == **k))
                    .map(|(k, v)| (V::Text(Template::lit(*k)), v.clone()))
                    .collect();
                vars.insert(p.name.clone(), V::Map(Rc::new(m)));
                continue;
            }
            let v = if let Some(v) = keyword.remove(p.name.as_str()) {
                v
            } else if let Some(v) = positional.get(i) {
                i += 1;
                v.clone()
            } else if spread_rest.is_some() {
                unknown(&p.name)
            } else if let Some(d) = &p.default {
                let frame = Frame {
                    unit: u,
                    vars: Rc::new(RefCell::new(HashMap::new())),
                    this: None,
                    receiver: None,
                    class: None,
                };
                match self.eval(&frame, d) {
                    V::Num(n) if matches!(n.as_str(), "None" | "null" | "nil" | "undefined") => {
                        self.param_value(p, u, func.at)
                    }
                    v => v,
                }
            } else {
                self.param_value(p, u, func.at)
            };
            vars.insert(p.name.clone(), v);
        }
        vars
    }

    // ---- Redis ----

    /// The Redis command a method sends, and how its arguments carry keys.
    fn command_of(&self, method: &str) -> Option<(String, Option<ArgShape>)> {
        if let Some((cmd, how)) = self.p.calls.commands.get(method) {
            return Some((cmd.clone(), Some(*how)));
        }
        let lower = method.to_ascii_lowercase();
        let lower = lower.trim_end_matches("async").trim_end_matches('_');
        crate::command::table()
            .get(lower)
            .filter(|c| !c.is_container() && !c.specs.is_empty())
            .map(|_| (lower.to_ascii_uppercase(), None))
    }

    /// A call on a client.
    fn on_client(&mut self, fr: &Frame<'a>, c: &'a Call, e: &'a Expr) -> V<'a> {
        let calls = &self.p.calls;
        let m = c.name.as_str();
        let at = c.at;
        if calls.make.contains(m) || calls.make_atomic.contains(m) {
            let mut atomic = calls.make_atomic.contains(m) || calls.atomic_by_default;
            for a in &c.args {
                if let Some(k) = &a.keyword
                    && calls.atomic_keyword.contains(k)
                {
                    atomic = !matches!(&a.value, Expr::Num(n) if matches!(n.as_str(), "False" | "false"));
                }
            }
            if calls.make_atomic.contains(m) {
                atomic = true;
            }
            let id = self.new_pipe(atomic, fr.unit, at);
            // `pipeline([["set", k, v], …])`: commands given as lists.
            if let Some(Arg {
                keyword: None,
                value,
            }) = c.args.first()
                && let V::List(l) = self.eval(fr, value)
            {
                for cmd in l.items.clone() {
                    if let V::List(parts) = cmd {
                        self.queue_raw_line(id, &parts.items, at, fr.unit);
                    }
                }
            }
            return V::Pipe(id);
        }
        if calls.block.contains(m) || calls.block_atomic.contains(m) {
            let atomic = calls.block_atomic.contains(m);
            let id = self.new_pipe(atomic, fr.unit, at);
            // Arguments given by value: functions given by name (`client.transaction(self._move,
            // key)`), and keys beside them, watched (redis-py's `transaction(func, *watches)`:
            // the function's commands are sent at once until it calls `multi()`).
            // A context handed first (`Pipelined(ctx, func…)`) is no watched key.
            let context_first = calls.context_first;
            let given: Vec<Option<V<'a>>> = c
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let context = i == 0 && context_first && is_context(&a.value);
                    (a.keyword.is_none() && !matches!(a.value, Expr::Lambda(_)) && !context)
                        .then(|| self.eval(fr, &a.value))
                })
                .collect();
            self.pipes[id].immediate = given.iter().flatten().any(|v| !matches!(v, V::Func(_)));
            for (a, v) in c.args.iter().zip(given) {
                if let Some(V::Func(fv)) = v {
                    self.apply(fr, &fv, vec![V::Pipe(id)], at);
                    continue;
                }
                if v.is_some() {
                    continue;
                }
                if let Expr::Lambda(f) = &a.value {
                    let mut vars = HashMap::new();
                    // The block's first parameter is the pipeline (Ruby's may have none: the
                    // block queues on the client itself).
                    // Without a parameter the block queues on the client it was called on
                    // (`redis.pipelined do redis.set(…) end`, `@redis.multi do @redis.del(…)
                    // end`): that name or field of this object is the pipeline inside it.
                    let mut restore = None;
                    match (f.params.first(), &c.receiver) {
                        (Some(p), _) => {
                            vars.insert(p.name.clone(), V::Pipe(id));
                        }
                        (None, Some(Expr::Name(n))) => {
                            vars.insert(n.clone(), V::Pipe(id));
                        }
                        (None, Some(Expr::Field(o, field))) => {
                            if let (Expr::Name(r), Some(V::Obj(obj))) = (&**o, &fr.this)
                                && fr.receiver == Some(r.as_str())
                            {
                                let old =
                                    obj.fields.borrow_mut().insert(field.clone(), V::Pipe(id));
                                restore = Some((obj.clone(), field.clone(), old));
                            }
                        }
                        _ => {}
                    }
                    let fv = FuncV {
                        func: f,
                        unit: fr.unit,
                        env: Some(fr.vars.clone()),
                        this: fr.this.clone().map(Box::new),
                    };
                    let mut env = fv
                        .env
                        .as_ref()
                        .map(|e| e.borrow().clone())
                        .unwrap_or_default();
                    env.extend(vars);
                    self.run_function(fr, fr.unit, f, env, fr.this.clone(), Some(at));
                    if let Some((obj, field, old)) = restore {
                        let mut fields = obj.fields.borrow_mut();
                        match old {
                            Some(v) => fields.insert(field, v),
                            None => fields.remove(&field),
                        };
                    }
                } else {
                    self.eval(fr, &a.value);
                }
            }
            self.send(id, fr.unit, at, false);
            return unknown("results");
        }
        if let Some(v) = self.script_call(fr, c, None) {
            return v;
        }
        if calls.register.contains(m) {
            self.eval_args_for_effects(fr, &c.args);
            return V::Script(Rc::new(ScriptV { counted: None }));
        }
        // A connection that queues commands (`conn.Send(…)`): its queue, sent by `Flush`, or
        // by the next raw command (`Do`) unless a raw MULTI made it a transaction that a raw
        // EXEC sends.
        let conn = c
            .receiver
            .as_ref()
            .and_then(|r| r.dotted())
            .filter(|_| !calls.queue_raw.is_empty())
            .map(|d| (Rc::as_ptr(&fr.vars) as usize, d));
        if let Some(key) = &conn
            && calls.run.contains(m)
            && let Some(id) = self.conns.remove(key)
        {
            self.eval_args_for_effects(fr, &c.args);
            self.send(id, fr.unit, at, false);
            return unknown("reply");
        }
        if let Some(key) = conn
            && (calls.queue_raw.contains(m) || calls.raw.contains(m))
        {
            let queue = calls.queue_raw.contains(m);
            let args = self.eval_args(fr, &c.args);
            let op = match args.first() {
                Some(V::Text(t)) if t.is_literal() => Some(t.text().to_ascii_uppercase()),
                _ => None,
            };
            let open = self.conns.get(&key).copied();
            match (op.as_deref(), open) {
                (Some("MULTI"), _) => {
                    let id = match open {
                        Some(id) => id,
                        None => self.new_pipe(true, fr.unit, at),
                    };
                    self.pipes[id].atomic = true;
                    self.conns.insert(key, id);
                    return unknown("reply");
                }
                (Some("EXEC"), Some(id)) => {
                    self.conns.remove(&key);
                    self.send(id, fr.unit, at, false);
                    return unknown("reply");
                }
                (Some(_), Some(id)) => {
                    self.queue_raw_line(id, &args, at, fr.unit);
                    if !queue && !self.pipes[id].atomic {
                        self.conns.remove(&key);
                        self.send(id, fr.unit, at, false);
                    }
                    return unknown("reply");
                }
                (Some(_), None) if queue => {
                    let id = self.new_pipe(false, fr.unit, at);
                    self.conns.insert(key, id);
                    self.queue_raw_line(id, &args, at, fr.unit);
                    return unknown("reply");
                }
                _ => {}
            }
            let (op, keys, unknown_) = self.raw_keys(&args);
            if let Some(op) = op {
                if op.eq_ignore_ascii_case("EXEC") || op.eq_ignore_ascii_case("MULTI") {
                    return unknown("reply");
                }
                self.direct(fr.unit, at, SiteKind::Command, &op, keys, unknown_);
            }
            return unknown(self.prime(&describe(e)));
        }
        if calls.raw.contains(m) || calls.queue_raw.contains(m) {
            let args = self.eval_args(fr, &c.args);
            let (op, keys, unknown_) = self.raw_keys(&args);
            if let Some(op) = op {
                if op.eq_ignore_ascii_case("EXEC") || op.eq_ignore_ascii_case("MULTI") {
                    return unknown("reply");
                }
                self.direct(fr.unit, at, SiteKind::Command, &op, keys, unknown_);
            }
            return unknown(self.prime(&describe(e)));
        }
        if let Some(n) = self.p.defined.get(m).copied() {
            let args = self.eval_args(fr, &c.args);
            let (keys, unk) = match n {
                Some(n) => {
                    let (mut flat, unk) = flatten_args(&args, true);
                    // Fewer values written out than the script takes keys: a value nothing is
                    // known of holds several of them (a list built at run time), so which keys
                    // they are is not known.
                    let short = flat.len() < n;
                    flat.truncate(n);
                    let unk = unk.or_else(|| {
                        (n > 1).then(|| {
                            Unknown::RuntimeList(format!(
                                "{m} takes {n} keys; fewer are written out"
                            ))
                        })
                    });
                    (flat, unk.filter(|_| short))
                }
                None => (Vec::new(), Some(Unknown::RuntimeList(format!("{m} keys")))),
            };
            self.direct(fr.unit, at, SiteKind::Script, m, keys, unk);
            return unknown(self.prime(&describe(e)));
        }
        if let Some((cmd, how)) = self.command_of(m) {
            let args = self.eval_args(fr, &c.args);
            let (keys, unk) = self.command_keys(&cmd, how, &args);
            self.direct(fr.unit, at, SiteKind::Command, &cmd, keys, unk);
            return unknown(self.prime(&describe(e)));
        }
        if self.p.dynamic_defines
            && self.p.calls.may_be_defined(m)
            && !m.starts_with("on")
            && !m.starts_with("get")
        {
            // A command the tree defines from a script under a name its text does not spell:
            // its first `numberOfKeys` arguments are keys, how many is not known.
            let args = self.eval_args(fr, &c.args);
            let (keys, _) = flatten_args(&args, true);
            self.direct(
                fr.unit,
                at,
                SiteKind::Script,
                m,
                keys,
                Some(Unknown::RuntimeList(format!(
                    "{m}'s numberOfKeys: a command defined from a script at runtime"
                ))),
            );
            return unknown(self.prime(&describe(e)));
        }
        if matches!(
            m,
            "duplicate"
                | "client"
                | "getResource"
                | "get_connection"
                | "connection"
                | "withTimeout"
                | "WithContext"
                | "Conn"
                | "getConnection"
                | "connect"
                | "resource"
        ) {
            self.eval_args_for_effects(fr, &c.args);
            return V::Client;
        }
        self.eval_args_for_effects(fr, &c.args);
        unknown(self.prime(&describe(e)))
    }

    /// A script run (`eval`, `evalsha`, `Eval`, …), on a client (`pipe` None) or queued on a
    /// pipeline; `None` when the method runs no script.
    fn script_call(&mut self, fr: &Frame<'a>, c: &'a Call, pipe: Option<usize>) -> Option<V<'a>> {
        let calls = &self.p.calls;
        let m = c.name.as_str();
        let is_eval = calls.eval.contains(m);
        let is_opts = calls.eval_options.contains(m);
        let is_list = calls.eval_list.contains(m);
        if !(is_eval || is_opts || is_list) {
            return None;
        }
        // A function handed in (`execute(new SessionCallback() { … })`, `execute(conn -> …)`)
        // is a callback run with a connection, not a script.
        let mut first = c.args.first().map(|a| &a.value);
        while let Some(Expr::Wrap(x)) = first {
            first = Some(&**x);
        }
        if matches!(first, Some(Expr::Lambda(_))) {
            return None;
        }
        let mut args = self.eval_args(fr, &c.args);
        if calls.context_first && args.len() > 1 && is_context(&c.args[0].value) {
            args.remove(0);
        }
        // Keys given by keyword (`eval(src, keys: […], argv: […])`).
        let by_keyword = c.args.iter().find(|a| {
            a.keyword
                .as_ref()
                .is_some_and(|k| calls.keys_keyword.contains(k))
        });
        if let Some(k) = by_keyword {
            let v = self.eval(fr, &k.value);
            args.truncate(1);
            args.push(v);
        }
        let second = args.get(1);
        let (keys, unk): (Vec<Template>, Option<Unknown>) = match second {
            // `eval(script, { keys: [...] })`.
            Some(V::Map(m)) if is_opts => match m
                .iter()
                .find(|(k, _)| matches!(k, V::Text(t) if t.text() == "keys"))
            {
                Some((_, v)) => flatten_args(std::slice::from_ref(v), true),
                None => (Vec::new(), None),
            },
            // `eval(script, numkeys, keys…, args…)`.
            Some(V::Num(n)) if is_eval => match n.parse::<usize>() {
                Ok(k) => {
                    let (flat, unk) = flatten_args(&args[2..], true);
                    let given = flat.len();
                    let keys: Vec<Template> = flat.into_iter().take(k).collect();
                    (keys, unk.filter(|_| given < k))
                }
                Err(_) => (
                    Vec::new(),
                    Some(Unknown::RuntimeList(format!("{m} numkeys"))),
                ),
            },
            // `Eval(ctx, src, keys, args…)`.
            Some(v) if is_list => flatten_args(std::slice::from_ref(v), true),
            Some(v) => (Vec::new(), Some(Unknown::RuntimeList(template(v).text()))),
            None => (Vec::new(), None),
        };
        let op = m.to_ascii_uppercase();
        match pipe {
            Some(id) => self.queue(id, &op, keys, unk, c.at, fr.unit),
            None => self.direct(fr.unit, c.at, SiteKind::Script, &op, keys, unk),
        }
        Some(unknown("reply"))
    }

    /// Runs a script object (`script(keys=[…], args=[…], client=pipe)`, `script.Run(ctx, rdb,
    /// keys, args…)`, `script.Do(conn, keys…, args…)`).
    fn run_script_object(&mut self, fr: &Frame<'a>, c: &'a Call, s: &ScriptV) -> V<'a> {
        let calls = &self.p.calls;
        let mut keys = None;
        let mut pipe = None;
        let mut positional = Vec::new();
        for a in &c.args {
            let v = self.eval(fr, &a.value);
            match &a.keyword {
                Some(k) if calls.keys_keyword.contains(k) => keys = Some(v),
                Some(k) if matches!(k.as_str(), "client" | "conn" | "connection" | "redis") => {
                    if let V::Pipe(id) = v {
                        pipe = Some(id)
                    }
                }
                Some(_) => {}
                None => positional.push(v),
            }
        }
        let m = c.name.as_str();
        let (k, unk) = if let Some(k) = keys {
            flatten_args(std::slice::from_ref(&k), true)
        } else if calls.run_list.contains(m) {
            // (ctx, client, keys, args…)
            let mut rest = positional.as_slice();
            if calls.context_first
                && rest.len() > 1
                && matches!(&rest[0], V::Unknown(n) if n.contains("ctx") || n.contains("context"))
            {
                rest = &rest[1..];
            }
            if let Some(V::Pipe(id)) = rest.first() {
                pipe = Some(*id);
            }
            match rest.get(1) {
                Some(v) => flatten_args(std::slice::from_ref(v), true),
                None => (Vec::new(), None),
            }
        } else if let (Some(n), true) = (s.counted, calls.run_counted.contains(m)) {
            let rest = if positional.is_empty() {
                &positional[..]
            } else {
                &positional[1..]
            };
            let (mut flat, unk) = flatten_args(rest, true);
            flat.truncate(n);
            (flat, unk)
        } else if m.is_empty() || c.receiver.is_some() {
            // `script(keys, args)` / `self.script([k], [a])`: the first list.
            match positional.first() {
                Some(v @ V::List(_)) => flatten_args(std::slice::from_ref(v), true),
                _ => (Vec::new(), None),
            }
        } else {
            (Vec::new(), None)
        };
        // `script.SendHash(conn, …)`: queued on the connection, sent by its `Flush`.
        if pipe.is_none()
            && calls.queue_counted.contains(m)
            && let Some(d) = c.args.first().and_then(|a| a.value.dotted())
        {
            let key = (Rc::as_ptr(&fr.vars) as usize, d);
            pipe = Some(match self.conns.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.new_pipe(false, fr.unit, c.at);
                    self.conns.insert(key, id);
                    id
                }
            });
        }
        match pipe {
            Some(id) => self.queue(id, "EVALSHA", k, unk, c.at, fr.unit),
            None => self.direct(fr.unit, c.at, SiteKind::Script, "EVALSHA", k, unk),
        }
        unknown("reply")
    }

    fn make_script(&mut self, fr: &Frame<'a>, c: &'a Call) -> V<'a> {
        let args = self.eval_args(fr, &c.args);
        let counted = match args.first() {
            Some(V::Num(n)) if args.len() > 1 => n.parse().ok(),
            _ => None,
        };
        V::Script(Rc::new(ScriptV { counted }))
    }

    /// A call on a pipeline: a command queued, the pipeline sent, or a script queued.
    fn on_pipe(&mut self, fr: &Frame<'a>, c: &'a Call, id: usize) -> V<'a> {
        let calls = &self.p.calls;
        let m = c.name.as_str();
        if calls.run.contains(m) || calls.run_plain.contains(m) {
            let plain = calls.run_plain.contains(m);
            self.eval_args_for_effects(fr, &c.args);
            self.send(id, fr.unit, c.at, plain);
            return unknown("results");
        }
        if matches!(m, "multi" | "MULTI" | "Multi") {
            self.pipes[id].atomic = true;
            self.pipes[id].immediate = false;
            return V::Pipe(id);
        }
        // A pipeline that watches keys sends what follows at once, until `multi()` starts the
        // transaction (redis-py's and its kin's semantics; other clients watch on the client).
        if m == "watch" {
            self.eval_args_for_effects(fr, &c.args);
            self.pipes[id].immediate = true;
            return V::Pipe(id);
        }
        if self.pipes[id].immediate
            && let Some((cmd, how)) = self.command_of(m)
        {
            let args = self.eval_args(fr, &c.args);
            let (keys, unk) = self.command_keys(&cmd, how, &args);
            self.direct(fr.unit, c.at, SiteKind::Command, &cmd, keys, unk);
            return unknown("reply");
        }
        if matches!(
            m,
            "unwatch"
                | "reset"
                | "discard"
                | "Discard"
                | "close"
                | "Close"
                | "__enter__"
                | "__aenter__"
                | "immediate_execute_command"
        ) {
            self.eval_args_for_effects(fr, &c.args);
            return V::Pipe(id);
        }
        if calls.objects.contains(m) {
            let args = self.eval_args(fr, &c.args);
            let key = args
                .first()
                .map(template)
                .unwrap_or_else(|| Template::var("name"));
            return V::PipeObject(id, key);
        }
        if self.script_call(fr, c, Some(id)).is_some() {
            return V::Pipe(id);
        }
        if calls.raw.contains(m) || calls.queue_raw.contains(m) {
            let args = self.eval_args(fr, &c.args);
            self.queue_raw_line(id, &args, c.at, fr.unit);
            return V::Pipe(id);
        }
        if let Some(n) = self.p.defined.get(m).copied() {
            let args = self.eval_args(fr, &c.args);
            let (mut flat, unk) = flatten_args(&args, true);
            // As on a client: fewer values written out than the script takes keys leaves
            // which keys they are unknown.
            let short = n.is_some_and(|n| flat.len() < n);
            if let Some(n) = n {
                flat.truncate(n);
            }
            let unk = match n {
                None => unk,
                Some(n) if short => unk.or_else(|| {
                    (n > 1).then(|| {
                        Unknown::RuntimeList(format!("{m} takes {n} keys; fewer are written out"))
                    })
                }),
                Some(_) => None,
            };
            self.queue(id, m, flat, unk, c.at, fr.unit);
            return V::Pipe(id);
        }
        if let Some((cmd, how)) = self.command_of(m) {
            let args = self.eval_args(fr, &c.args);
            let (keys, unk) = self.command_keys(&cmd, how, &args);
            self.queue(id, &cmd, keys, unk, c.at, fr.unit);
            return V::Pipe(id);
        }
        if self.p.dynamic_defines
            && calls.may_be_defined(m)
            && !self.tree_defines_method(m)
            && !m.starts_with("on")
        {
            // A command the tree defines from a script under a name its text does not spell,
            // queued: its first `numberOfKeys` arguments are keys, how many is not known.
            let args = self.eval_args(fr, &c.args);
            let (flat, _) = flatten_args(&args, true);
            let why = Unknown::RuntimeList(format!(
                "{m}'s numberOfKeys: a command defined from a script at runtime"
            ));
            self.queue(id, m, flat, Some(why), c.at, fr.unit);
            return V::Pipe(id);
        }
        // A method the tree adds to pipelines, or one nothing is known of.
        self.eval_args_for_effects(fr, &c.args);
        V::Pipe(id)
    }

    /// The keys of a command sent with these arguments.
    fn command_keys(
        &self,
        cmd: &str,
        how: Option<ArgShape>,
        args: &[V<'a>],
    ) -> (Vec<Template>, Option<Unknown>) {
        let mut args: &[V<'a>] = args;
        if self.p.calls.context_first
            && args.len() > 1
            && matches!(&args[0], V::Unknown(n) if n.contains("ctx") || n.contains("context") || n.starts_with("context."))
        {
            args = &args[1..];
        }
        match how {
            Some(ArgShape::None) => (Vec::new(), None),
            Some(ArgShape::DestList) => {
                let mut keys = args.first().map(|a| vec![template(a)]).unwrap_or_default();
                let (more, unk) = flatten_args(args.get(1..2).unwrap_or(&[]), true);
                keys.extend(more);
                (keys, unk)
            }
            Some(ArgShape::OpDestList) => flatten_args(args.get(1..).unwrap_or(&[]), true),
            Some(ArgShape::SkipFirst) => flatten_args(args.get(1..).unwrap_or(&[]), true),
            Some(ArgShape::First) => flatten_args(args.get(..1).unwrap_or(&[]), true),
            Some(ArgShape::Mapping) => {
                let mut keys = Vec::new();
                let mut unk = None;
                for a in args {
                    match a {
                        V::Map(m) => keys.extend(
                            m.iter()
                                .filter(|(k, _)| keyish(k))
                                .map(|(k, _)| template(k)),
                        ),
                        V::List(_) => {
                            let (flat, u) = flatten_args(std::slice::from_ref(a), false);
                            keys.extend(flat.into_iter().step_by(2));
                            unk = unk.or(u);
                        }
                        other => unk = unk.or(Some(Unknown::RuntimeList(template(other).text()))),
                    }
                }
                (keys, unk)
            }
            // Keys, then a blocking pop's timeout when one is written as a number (Ruby's
            // `brpop(a, b, timeout: 5)` gives it by keyword).
            Some(ArgShape::List) => {
                let end = match args.last() {
                    Some(V::Num(_)) => args.len() - 1,
                    _ => args.len(),
                };
                flatten_args(&args[..end], true)
            }
            Some(ArgShape::Args) | None => {
                // The arguments as the command line has them; the command table finds the keys.
                let (flat, unk) = flatten_args(args, false);
                match super::syntax::key_positions(cmd, flat.iter().cloned()) {
                    Some(pos) => {
                        // A list a loop fills (`args << key; args << 0` per pass) stands for
                        // any number of arguments: where a multi-key command's keys fall in
                        // it (MSET's every other one) is not known.
                        if unk.is_none()
                            && pos.len() < flat.len()
                            && is_multi_key(cmd)
                            && args.iter().any(loop_made)
                        {
                            // Its keys: the arguments that are not numbers.
                            let keys = flat
                                .into_iter()
                                .filter(|t| !t.text().bytes().all(|b| b.is_ascii_digit()))
                                .collect();
                            return (keys, Some(Unknown::Loop));
                        }
                        let keys: Vec<Template> = pos
                            .into_iter()
                            .filter_map(|i| flat.get(i).cloned())
                            .collect();
                        (keys, unk)
                    }
                    None if flat.is_empty() && unk.is_some() => (Vec::new(), unk),
                    None => (flat.into_iter().take(1).collect(), unk),
                }
            }
        }
    }

    /// A raw command line (`execute_command("MGET", a, b)`, `call("mget", …)`): its name and
    /// keys.
    fn raw_keys(&self, args: &[V<'a>]) -> (Option<String>, Vec<Template>, Option<Unknown>) {
        // The command line as one list (`call_v(["MGET", a, b])`).
        if let [V::List(l)] = args
            && l.rest.is_none()
            && matches!(l.items.first(), Some(V::Text(_)))
        {
            return self.raw_keys(&l.items);
        }
        let Some(V::Text(name)) = args.first() else {
            return (None, Vec::new(), None);
        };
        if !name.is_literal() {
            return (None, Vec::new(), None);
        }
        let op = name.text().to_ascii_uppercase();
        let (flat, unk) = flatten_args(&args[1..], false);
        if (op == "EVAL" || op == "EVALSHA" || op == "FCALL")
            && let Some(Ok(n)) = flat.get(1).map(|t| t.text().parse::<usize>())
        {
            return (Some(op), flat.into_iter().skip(2).take(n).collect(), None);
        }
        let keys = super::syntax::key_positions(&op, flat.iter().cloned())
            .map(|pos| {
                pos.into_iter()
                    .filter_map(|i| flat.get(i).cloned())
                    .collect()
            })
            .unwrap_or_default();
        (Some(op), keys, unk)
    }

    fn queue_raw_line(&mut self, id: usize, parts: &[V<'a>], at: Position, unit: usize) {
        let (op, keys, unk) = self.raw_keys(parts);
        if let Some(op) = op {
            if op == "MULTI" {
                self.pipes[id].atomic = true;
                return;
            }
            if op == "EXEC" {
                self.send(id, unit, at, false);
                return;
            }
            self.queue(id, &op, keys, unk, at, unit);
        }
    }

    fn new_pipe(&mut self, atomic: bool, unit: usize, at: Position) -> usize {
        self.pipes.push(PipeState {
            atomic,
            made: Some((unit, at)),
            loop_depth: self.loop_depth,
            ops: Vec::new(),
            more: 0,
            keys: Vec::new(),
            unknown: None,
            sent: false,
            handed: false,
            immediate: false,
            sends: 0,
            depth: self.stack.len(),
        });
        if let Some(f) = &self.exhausted {
            let id = self.pipes.len() - 1;
            self.pipes[id].unknown = Some(Unknown::Unfollowed(f.clone()));
        }
        self.pipes.len() - 1
    }

    /// Queues a command on pipeline `id`.
    fn queue(
        &mut self,
        id: usize,
        op: &str,
        keys: Vec<Template>,
        mut unk: Option<Unknown>,
        at: Position,
        unit: usize,
    ) {
        // A key that is a whole element of a list only the running code knows (`for k in
        // keys: pipe.expire(k)`): the batch's keys are that list's. (A pipeline made inside
        // the loop holds one element: `for k in keys: with pipe: exists(k); hgetall(k + ':w')`.)
        let in_loop = self.loop_depth > self.pipes[id].loop_depth;
        let keys: Vec<Template> = keys
            .into_iter()
            .filter(|k| match k.parts.as_slice() {
                _ if !in_loop => true,
                [super::Part::Var(n)] => match self.elements.get(n) {
                    Some(list) => {
                        unk = unk
                            .take()
                            .or_else(|| Some(Unknown::RuntimeList(list.clone())));
                        false
                    }
                    None => true,
                },
                _ => true,
            })
            .collect();
        if !self.quiet && !self.second_pass {
            for k in &keys {
                self.record_key(unit, at, k, op);
            }
        }
        let second = self.second_pass;
        let p = &mut self.pipes[id];
        if !second {
            if p.ops.len() < 256 {
                p.ops.push(op.to_string());
            } else {
                p.more += 1;
            }
        }
        for k in keys {
            if p.keys.len() < 256 && !p.keys.contains(&k) {
                p.keys.push(k);
            }
        }
        if p.unknown.is_none() {
            p.unknown = unk.or(None);
        }
    }

    /// Sends pipeline `id` at `at`: a site at the line that made it (when in the same file),
    /// sent at `at`.
    fn send(&mut self, id: usize, unit: usize, at: Position, plain: bool) {
        let p = &mut self.pipes[id];
        // Nothing queued but what a function the tree does not define was handed the
        // pipeline for: the batch is that function's doing.
        if p.ops.is_empty()
            && p.made.is_some()
            && let Some(Unknown::Callee(callee)) = &p.unknown
        {
            p.ops.push(format!("{callee}()"));
        }
        if p.ops.is_empty() {
            p.sent = true;
            return;
        }
        p.sent = true;
        p.sends += 1;
        let ops = std::mem::take(&mut p.ops);
        let more = std::mem::take(&mut p.more);
        let keys = std::mem::take(&mut p.keys);
        let unknown = p.unknown.take();
        let kind = if p.atomic && !plain {
            SiteKind::Transaction
        } else {
            SiteKind::Pipeline
        };
        let handed = p.made.is_none();
        let (site_unit, open) = match p.made {
            Some((u, made)) if u == unit => (u, made),
            _ => (unit, at),
        };
        if self.quiet || self.second_pass {
            return;
        }
        let site = Site {
            at: open,
            send: (open != at).then_some(at),
            kind,
            op: super::syntax::op_text(&ops, more),
            keys: disambiguate(keys),
            unknown,
        };
        self.record_site(site_unit, site, handed);
    }

    /// Pipelines made in this reading and never sent by it, at its end: filled and handed on
    /// (returned, kept in a field): what they hold is sent by code not read here.
    fn flush_pipes(&mut self, _from: usize) {
        self.pipes.clear();
        self.conns.clear();
    }

    /// Closures made and not called, read as they would run (parameters unknown).
    fn read_closures(&mut self, depth: usize) {
        let mut rounds = 0;
        while let Some((f, d)) = self.closures.pop() {
            rounds += 1;
            if rounds > 256 || d < depth {
                break;
            }
            let mut vars = f
                .env
                .as_ref()
                .map(|e| e.borrow().clone())
                .unwrap_or_default();
            for p in &f.func.params {
                let v = self.param_value(p, f.unit, f.func.at);
                vars.insert(p.name.clone(), v);
            }
            let frame = Frame {
                unit: f.unit,
                vars: Rc::new(RefCell::new(vars)),
                this: f.this.as_deref().cloned(),
                receiver: Some("self"),
                class: f.func.class.as_deref(),
            };
            // The name the closure's lowering gives its object (Ruby's blocks: `self`), else
            // `this`.
            let frame = Frame {
                receiver: match (f.func.receiver.as_deref(), &frame.this) {
                    (Some(r), _) => Some(r),
                    (None, Some(_)) => Some("this"),
                    (None, None) => None,
                },
                ..frame
            };
            self.stack.push(f.func);
            self.run_body(&frame, &f.func.body);
            self.stack.pop();
        }
    }

    /// A command sent at once: its keys recorded; a site when it sends several keys, keys not
    /// known, or runs a script.
    fn direct(
        &mut self,
        unit: usize,
        at: Position,
        kind: SiteKind,
        op: &str,
        keys: Vec<Template>,
        unk: Option<Unknown>,
    ) {
        if self.quiet || self.second_pass {
            return;
        }
        for k in &keys {
            self.record_key(unit, at, k, op);
        }
        let distinct = {
            let mut d = keys.clone();
            d.sort();
            d.dedup();
            d.len()
        };
        if kind == SiteKind::Script
            || distinct > 1
            || unk.is_some() && super::syntax::takes_keys(op) && is_multi_key(op)
        {
            let site = Site {
                at,
                send: None,
                kind,
                op: op.to_string(),
                keys: disambiguate(keys),
                unknown: unk,
            };
            self.record_site(unit, site, false);
        }
    }

    fn record_key(&mut self, unit: usize, at: Position, k: &Template, how: &str) {
        if self.quiet {
            return;
        }
        self.found
            .keys
            .entry((unit, at, k.text()))
            .or_insert_with(|| (k.clone(), how.to_string()));
    }

    fn record_site(&mut self, unit: usize, site: Site, handed: bool) {
        let inst = Instance {
            site,
            caller: self.caller.clone(),
            handed,
        };
        let e = self
            .found
            .sites
            .entry((unit, inst.site.at, inst.site.send))
            .or_default();
        if e.len() < 32 && !e.iter().any(|x| same_instance(x, &inst)) {
            e.push(inst);
        }
    }
}

/// A call's arguments as a memo key; `None` when one is a pipeline (what the call queues on
/// it must be queued again) or a closure.
fn signature(vars: &HashMap<String, V<'_>>, this: Option<&V<'_>>) -> Option<String> {
    fn sig(v: &V<'_>, out: &mut String, depth: usize) -> Option<()> {
        use std::fmt::Write as _;
        if depth > 3 || out.len() > 400 {
            out.push('…');
            return Some(());
        }
        match v {
            V::Text(t) => {
                out.push('"');
                out.push_str(&t.text());
            }
            V::Num(n) => out.push_str(n),
            V::Unknown(n) => {
                out.push('?');
                out.push_str(n);
            }
            V::Client => out.push('C'),
            V::Pipe(_) | V::PipeObject(..) | V::Func(_) => return None,
            V::Script(s) => {
                let _ = write!(out, "S{:p}", Rc::as_ptr(s));
            }
            V::Obj(o) => {
                let _ = write!(out, "O{:p}", Rc::as_ptr(o));
            }
            V::List(l) => {
                out.push('[');
                for x in &l.items {
                    sig(x, out, depth + 1)?;
                    out.push(',');
                }
                match &l.rest {
                    Some(Rest::Like(a, b)) => {
                        sig(a, out, depth + 1)?;
                        sig(b, out, depth + 1)?;
                    }
                    Some(Rest::Named(n)) => out.push_str(n),
                    None => {}
                }
                out.push(']');
            }
            V::Map(m) => {
                out.push('{');
                for (k, x) in m.iter() {
                    sig(k, out, depth + 1)?;
                    out.push(':');
                    sig(x, out, depth + 1)?;
                }
                out.push('}');
            }
            V::Either(vs) => {
                out.push('|');
                for x in vs.iter() {
                    sig(x, out, depth + 1)?;
                }
            }
        }
        out.push(';');
        Some(())
    }
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    let mut out = String::new();
    if let Some(t) = this {
        sig(t, &mut out, 0)?;
    }
    for n in names {
        out.push_str(n);
        out.push('=');
        sig(&vars[n], &mut out, 0)?;
    }
    Some(out)
}

/// Whether a command takes several keys (so keys not known make it a site).
/// Whether a value is, or holds, a list a loop made (elements like two of its passes).
fn loop_made(v: &V<'_>) -> bool {
    fn go(v: &V<'_>, depth: usize) -> bool {
        depth < 4
            && match v {
                V::List(l) => {
                    matches!(l.rest, Some(Rest::Like(..)))
                        || l.items.iter().any(|x| go(x, depth + 1))
                }
                V::Either(vs) => vs.iter().any(|x| go(x, depth + 1)),
                _ => false,
            }
    }
    go(v, 0)
}

fn is_multi_key(op: &str) -> bool {
    crate::command::table()
        .get(&op.to_ascii_lowercase())
        .is_some_and(|c| {
            c.specs.len() > 1
                || c.specs
                    .iter()
                    .any(|s| !matches!(s.find, crate::command::FindKeys::Range { lastkey: 0, .. }))
        })
}

/// An expression that is a context (`ctx`, `context.Background()`).
fn is_context(e: &Expr) -> bool {
    let d = describe(e);
    let l = last_name(&d);
    l == "ctx" || l.ends_with("ctx") || l.contains("context") || d.starts_with("context.")
}

fn last_segment(s: &str) -> String {
    s.rsplit('.').next().unwrap_or(s).to_string()
}

/// Whether a runtime value's name says only what kind of value it is (`reply`, `value`), or
/// is cut short (`r.get(…)`), not which value: two of them may be two values.
fn is_anonymous(name: &str) -> bool {
    name.contains('…')
        || matches!(
            name.trim_end_matches('\''),
            "reply" | "results" | "value" | "item" | "?" | ""
        )
}

/// A short name of a value, for naming what is made of it: runtime values by their names,
/// text by its pieces (`user:<id>` is `user:id`), literal text quoted.
fn label(v: &V<'_>) -> String {
    match v {
        V::Text(t) if t.is_literal() => {
            format!("\"{}\"", t.text().chars().take(20).collect::<String>())
        }
        V::Text(t) => t
            .parts
            .iter()
            .map(|p| match p {
                Part::Lit(l) | Part::Var(l) => l.as_str(),
            })
            .collect(),
        V::Num(n) => n.clone(),
        V::Unknown(n) => n.to_string(),
        _ => "…".into(),
    }
}

/// The name of a runtime value `what` makes of `args` (`key_for(a)`, `k.lower()`): two calls
/// of one function with different arguments make two values, never one key.
fn made_of(what: &str, args: &[V<'_>]) -> String {
    let mut s = format!("{what}(");
    for (i, a) in args.iter().take(3).enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&label(a));
    }
    if args.len() > 3 {
        s.push_str(", …");
    }
    s.push(')');
    if s.chars().count() > 60 {
        s = s.chars().take(59).collect::<String>() + "…";
    }
    s
}

/// The values a function was called with, in the order of its parameters.
fn param_values<'a>(func: &Func, vars: &HashMap<String, V<'a>>) -> Vec<V<'a>> {
    func.params
        .iter()
        .filter(|p| !matches!(p.name.as_str(), "self" | "cls" | "this"))
        .map(|p| vars.get(&p.name).cloned().unwrap_or_else(|| unknown("…")))
        .collect()
}

fn describe_target(t: &Target) -> String {
    match t {
        Target::Name(n) => n.clone(),
        Target::Field(o, f) => format!("{}.{f}", describe(o)),
        _ => "item".into(),
    }
}

/// Runtime values named `self.x` in a value read for an object named `n`: `n.x`.
fn rename_self<'a>(v: V<'a>, n: &str) -> V<'a> {
    match v {
        V::Text(t) => V::Text(rename_template(t, n)),
        V::Unknown(u) if u.starts_with("self.") => unknown(format!("{n}.{}", &u[5..])),
        v => v,
    }
}

fn rename_template(t: Template, n: &str) -> Template {
    Template {
        parts: t
            .parts
            .into_iter()
            .map(|p| match p {
                Part::Var(v) if v.starts_with("self.") => Part::Var(format!("{n}.{}", &v[5..])),
                p => p,
            })
            .collect(),
    }
}

enum Pushed<'a> {
    Single(V<'a>),
    Spreaded(V<'a>),
}
use Pushed::{Single, Spreaded};

/// The command-line arguments a call's values make (lists flattened, maps as key value
/// pairs when `maps` is false, or their keys), and what is not known: a list of runtime
/// length (its name), or elements of one shape from a loop (both kept, as two keys).
fn flatten_args(args: &[V<'_>], keys_only: bool) -> (Vec<Template>, Option<Unknown>) {
    let mut out = Vec::new();
    let mut unk = None;
    fn go(
        v: &V<'_>,
        out: &mut Vec<Template>,
        unk: &mut Option<Unknown>,
        keys_only: bool,
        depth: usize,
    ) {
        if depth > 4 {
            return;
        }
        match v {
            V::List(l) => {
                for x in &l.items {
                    go(x, out, unk, keys_only, depth + 1);
                }
                match &l.rest {
                    Some(Rest::Like(a, b)) => {
                        go(a, out, unk, keys_only, depth + 1);
                        go(b, out, unk, keys_only, depth + 1);
                    }
                    Some(Rest::Named(n)) if unk.is_none() => {
                        *unk = Some(Unknown::RuntimeList(n.to_string()));
                    }
                    _ => {}
                }
            }
            V::Map(m) => {
                for (k, val) in m.iter() {
                    out.push(template(k));
                    if !keys_only {
                        out.push(template(val));
                    }
                }
            }
            // One of several values: the first, unless some are lists (`found ? [...found]
            // : []`): then the first list, and a value nothing is known of among them is a
            // list only the running code knows.
            V::Either(vs) => match vs.iter().find(|v| matches!(v, V::List(_))) {
                Some(list) => {
                    go(list, out, unk, keys_only, depth + 1);
                    for v in vs.iter() {
                        if let V::Unknown(n) = v
                            && unk.is_none()
                        {
                            *unk = Some(Unknown::RuntimeList(n.to_string()));
                        }
                    }
                }
                None => go(&vs[0], out, unk, keys_only, depth + 1),
            },
            V::Client | V::Pipe(_) | V::PipeObject(..) => {}
            // A value nothing is known of, named as a list of keys (`keys`, `found_keys`,
            // `conn.keys(…)`): a list only the running code knows.
            V::Unknown(n) if names_a_list(n) => {
                if unk.is_none() {
                    *unk = Some(Unknown::RuntimeList(n.to_string()));
                }
            }
            v => out.push(template(v)),
        }
    }
    for a in args {
        go(a, &mut out, &mut unk, keys_only, 0);
    }
    (out, unk)
}

/// Whether `e` lists the keys a pattern matches (`scan_iter(…)`, `scan(…)`, `keys(…)`,
/// `scanStream(…)`): keys from every slot, not a list a caller chose.
fn lists_keys_by_pattern(e: &Expr) -> bool {
    let mut e = e;
    while let Expr::Wrap(x) = e {
        e = x;
    }
    match e {
        Expr::Call(c) => {
            let m = c.name.to_ascii_lowercase();
            m == "keys" && !c.args.is_empty() || m.starts_with("scan") || m.ends_with("scan_iter")
        }
        _ => false,
    }
}

/// Whether the name of a value nothing is known of reads as a list of keys: its last segment,
/// a call's parentheses left out (`keys`, `self.cache_keys`, `r.keys(…)`, `worker_ids`).
fn names_a_list(name: &str) -> bool {
    let bare = name.split('(').next().unwrap_or(name);
    let last = bare.rsplit(['.', ' ', ':']).next().unwrap_or(bare);
    !last.is_empty() && super::syntax::looks_plural(last)
}

/// Keys of one site whose placeholders read alike but come from two passes of a loop
/// (`job:<id>` and `job:<id'>`) stay two keys; each key once, in order.
fn disambiguate(keys: Vec<Template>) -> Vec<Template> {
    let mut out: Vec<Template> = Vec::with_capacity(keys.len());
    for k in keys {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Language, Verdict, ir::Unit};
    use super::*;

    /// The sites of a tree of (file name, text), every file of one language, as
    /// (file index, opening line, sending line, ops, verdict kind).
    fn sites(
        lang: Language,
        files: &[(&str, &str)],
    ) -> Vec<(usize, usize, Option<usize>, String, &'static str)> {
        sites_with(lang, files, &[])
    }

    /// [`sites`], with the tree's Lua script files.
    fn sites_with(
        lang: Language,
        files: &[(&str, &str)],
        scripts: &[ScriptFile],
    ) -> Vec<(usize, usize, Option<usize>, String, &'static str)> {
        let units: Vec<Unit> = files
            .iter()
            .map(|(_, t)| super::super::scan::lower(lang, t).expect("lowers"))
            .collect();
        let sources: Vec<Source<'_>> = files
            .iter()
            .zip(&units)
            .map(|((f, _), u)| Source { file: f, unit: u })
            .collect();
        let found = analyse(
            &sources,
            &Profile::builtin(lang.profile_language()),
            scripts,
        );
        let mut out = Vec::new();
        for (i, f) in found.iter().enumerate() {
            for s in &f.sites {
                let v = match s.verdict() {
                    Verdict::CrossSlot(_) => "cross",
                    Verdict::OneSlot(_) => "one",
                    Verdict::Depends(_) => "depends",
                };
                out.push((i, s.at.line, s.send.map(|p| p.line), s.op.clone(), v));
            }
        }
        out.sort();
        out
    }

    fn py(files: &[(&str, &str)]) -> Vec<(usize, usize, Option<usize>, String, &'static str)> {
        sites(Language::Python, files)
    }

    /// Two values made by one function nothing is known of, from different arguments, are
    /// two keys: never "one slot" (a cross-slot batch said to be one slot is the worst error).
    #[test]
    fn results_of_one_unknown_function_are_told_apart_by_their_arguments() {
        let app = "\
import redis
r = redis.Redis()

def both(helper, a, b):
    pipe = r.pipeline()
    pipe.delete(helper.key_for(a))
    pipe.delete(helper.key_for(b))
    pipe.execute()

def same(helper, a):
    pipe = r.pipeline()
    pipe.incr(helper.key_for(a))
    pipe.expire(helper.key_for(a), 60)
    pipe.execute()

def replies(src):
    first = r.get(src + ':1')
    second = r.get(src + ':2')
    r.mget(first, second)
";
        let got = py(&[("app.py", app)]);
        assert!(
            got.contains(&(0, 5, Some(8), "DEL DEL".into(), "cross")),
            "{got:?}"
        );
        assert!(
            got.contains(&(0, 11, Some(14), "INCR EXPIRE".into(), "one")),
            "{got:?}"
        );
        assert!(
            got.contains(&(0, 19, None, "MGET".into(), "cross")),
            "{got:?}"
        );
    }

    /// A list a loop fills (`args << key; args << 0`) given to a multi-key command whose keys
    /// are only some of its arguments (MSET) is a site: where its keys fall is not known.
    #[test]
    fn a_loop_filled_list_given_to_mset_is_a_site() {
        let rb = "\
class Stats
  def reset(conn, stats)
    args = stats.map { |s| \"stat:#{s}\" }
    conn.mset(*args)
  end

  def rpush_all(conn, key, items)
    vals = items.map { |i| \"v#{i}\" }
    conn.rpush(key, *vals)
  end
end
";
        let got = sites(Language::Ruby, &[("stats.rb", rb)]);
        assert_eq!(got, vec![(0, 4, None, "MSET".into(), "depends")]);
    }

    /// redigo: a connection taken from a pool queues with `Send`, and a script queued with
    /// `SendHash` goes with the connection's other commands, all sent by `Flush`.
    #[test]
    fn redigo_pool_connections_and_queued_scripts_are_one_pipeline() {
        let go = "\
package broker

import \"github.com/gomodule/redigo/redis\"

type Shard struct {
\tpool *redis.Pool
}

var script = redis.NewScript(1, \"return 1\")

func (s *Shard) two(a, b string) error {
\tconn := s.pool.Get()
\tconn.Send(\"SET\", \"x:\"+a, 1)
\tscript.SendHash(conn, \"y:\"+b)
\treturn conn.Flush()
}
";
        let got = sites(Language::Go, &[("shard.go", go)]);
        assert_eq!(got, vec![(0, 13, Some(15), "SET EVALSHA".into(), "cross")]);
    }

    #[test]
    fn a_helper_in_another_file_is_judged_by_its_callers() {
        let helpers = "\
def touch_all(pipe, keys):
    for k in keys:
        pipe.expire(k, 60)
";
        let app = "\
import redis
from helpers import touch_all

r = redis.Redis()

def same_user(uid):
    pipe = r.pipeline()
    touch_all(pipe, ['{user:%s}:a' % uid, '{user:%s}:b' % uid])
    pipe.execute()

def two_users(a, b):
    pipe = r.pipeline()
    touch_all(pipe, ['user:' + a, 'user:' + b])
    pipe.execute()
";
        let got = py(&[("helpers.py", helpers), ("app.py", app)]);
        assert!(
            got.contains(&(1, 7, Some(9), "EXPIRE EXPIRE".into(), "one"))
                || got.iter().any(|s| s.0 == 1 && s.1 == 7 && s.4 == "one"),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|s| s.0 == 1 && s.1 == 12 && s.2 == Some(14) && s.4 == "cross"),
            "{got:?}"
        );
    }

    #[test]
    fn scripts_kept_in_a_dict_comprehension_behind_a_cast_and_a_protocol() {
        // A protocol stub of the client's method defines nothing of the tree's own; `cast`
        // is its value; a script read from a dict comprehension by its name runs.
        let types = "\
from typing import Protocol

class ClientP(Protocol):
    def register_script(self, script): ...
";
        let store = "\
from typing import cast
import redis

class Store:
    def __init__(self, url):
        self.storage = redis.Redis.from_url(url)
        self.scripts = {n: self.conn().register_script(s) for n, s in SCRIPTS.items()}

    def conn(self):
        return cast(ClientP, self.storage)

    def both(self, q):
        return self.scripts['swap'](keys=['a:' + q, 'b:' + q], args=[1])

    def tagged(self, q):
        return self.scripts['swap'](keys=['{%s}:a' % q, '{%s}:b' % q])

    def pooled(self, q):
        s = self.pool.get().register_script('x')
        return s(keys=['c:' + q, 'd:' + q])
";
        let got = py(&[("types.py", types), ("store.py", store)]);
        assert_eq!(
            got,
            vec![
                (1, 13, None, "EVALSHA".into(), "cross"),
                (1, 16, None, "EVALSHA".into(), "one"),
                (1, 20, None, "EVALSHA".into(), "cross")
            ],
            "{got:?}"
        );
    }

    #[test]
    fn a_class_named_like_another_files_runs_its_own_files_methods() {
        let sync = "\
import redis

class Storage:
    def __init__(self):
        self.r = redis.Redis()

    def key(self, k):
        return '{%s}' % k

    def pair(self, k):
        return self.r.mget(self.key(k), self.key(k) + ':prev')
";
        let other = "\
class Storage:
    def key(self, k):
        return 'x:' + k
";
        let got = py(&[("sync.py", sync), ("other.py", other)]);
        assert_eq!(got, vec![(0, 11, None, "MGET".into(), "one")], "{got:?}");
    }

    #[test]
    fn a_client_held_in_a_field_and_a_key_built_by_a_method() {
        let src = "\
import redis

class Cart:
    def __init__(self, url):
        self.redis = redis.Redis.from_url(url)
        self.prefix = 'shop'

    def key(self, kind, uid):
        return '%s:%s:%s' % (self.prefix, kind, uid)

    def clear(self, uid):
        return self.redis.delete(self.key('cart', uid), self.key('seen', uid))
";
        let got = py(&[("cart.py", src)]);
        assert_eq!(got, vec![(0, 12, None, "DEL".into(), "cross")], "{got:?}");
    }

    #[test]
    fn a_pipeline_sent_twice_is_two_batches() {
        let src = "\
import redis
r = redis.Redis()

def prune(name, ids):
    pipe = r.pipeline()
    pipe.exists('job:' + ids[0])
    pipe.exists('job:' + ids[1])
    pipe.execute()
    pipe.srem('group:' + name, *ids)
    pipe.execute()
";
        let got = py(&[("group.py", src)]);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().any(|s| s.2 == Some(8)), "{got:?}");
        assert!(got.iter().any(|s| s.2 == Some(10)), "{got:?}");
    }

    #[test]
    fn lists_only_the_running_code_knows() {
        let src = "\
import redis
r = redis.Redis()

def touch_many(keys):
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.expire(k, 60)
    pipe.execute()

def drop_matching(pattern):
    pipe = r.pipeline()
    for key in r.scan_iter(pattern):
        pipe.delete(key)
    pipe.execute()

def values(found_keys):
    return r.mget(found_keys)
";
        let got = py(&[("bulk.py", src)]);
        let verdict = |line: usize| got.iter().find(|s| s.1 == line).map(|s| s.4);
        // A caller's list: its keys may share a slot.
        assert_eq!(verdict(5), Some("depends"), "{got:?}");
        // Every key a pattern matches, queued a pass at a time: the keys of two passes are
        // told apart only by the pass, so the verdict is the list's (keys of many slots
        // when the pattern matches many: a `depends` that says so is the next step).
        assert_eq!(verdict(11), Some("depends"), "{got:?}");
        assert_eq!(verdict(17), Some("depends"), "{got:?}");
    }

    #[test]
    fn a_pipeline_handed_to_a_function_that_may_make_its_own() {
        let src = "\
import redis
REDIS = redis.Redis()

def unblock_ip(ip, pipe=None):
    commit = False
    if not pipe:
        pipe = REDIS.pipeline()
        commit = True
    pipe.delete('ip:' + ip)
    pipe.delete('attempts:' + ip)
    if commit:
        pipe.execute()

def reset(ip):
    pipe = REDIS.pipeline()
    unblock_ip(ip, pipe=pipe)
    pipe.execute()
";
        let got = py(&[("utils.py", src)]);
        // Its own pipeline, and the caller's: no third site for the parameter alone.
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|s| s.4 == "cross"), "{got:?}");
        assert!(
            got.iter().any(|s| s.1 == 7) && got.iter().any(|s| s.1 == 15),
            "{got:?}"
        );
    }

    #[test]
    fn a_wrapper_class_delegating_to_its_field() {
        let src = "\
class Backend:
    def __init__(self, client):
        self.client = client

    def mget(self, keys):
        return self.client.mget(keys)
";
        let got = py(&[("backend.py", src)]);
        assert_eq!(got, vec![(0, 6, None, "MGET".into(), "depends")], "{got:?}");
    }

    #[test]
    fn commands_defined_at_runtime_and_the_clients_own_methods() {
        let src = "\
const Redis = require('ioredis');
const scripts = require('./scripts');

class Queue {
  constructor(opts) {
    this.client = new Redis(opts);
    for (const s of scripts) {
      this.client.defineCommand(s.name, { numberOfKeys: s.keys, lua: s.lua });
    }
  }

  close() {
    this.client.removeListener('error', this.onError);
    return this.client.quit();
  }

  retry(id) {
    const multi = this.client.multi();
    multi.retryJob(['q:job:' + id]);
    return multi.exec();
  }
}
module.exports = Queue;
";
        let got = sites(
            Language::JavaScript(super::super::lower::javascript::Dialect::JavaScript),
            &[("queue.js", src)],
        );
        // removeListener and quit are the client's own: no script site.
        assert!(got.iter().all(|s| s.1 >= 18), "{got:?}");
        // A command defined from a script under a computed name: how many keys is not known.
        assert!(
            got.iter()
                .any(|s| s.1 == 18 && s.2 == Some(20) && s.4 == "depends"),
            "{got:?}"
        );
    }
    #[test]
    fn an_object_s_method_wrapping_a_command_defined_from_a_script_file() {
        // Commands defined from the tree's script files; `scripts.move` wraps the client's
        // `move` (not a call of itself, although the queue has a `move` of its own too).
        let queue = "\
const Redis = require('ioredis');
const scripts = require('./scripts');
function Queue(name) {
  this.client = new Redis();
  for (const s of loaded) {
    this.client.defineCommand(s.name, { numberOfKeys: s.keys, lua: s.content });
  }
}
Queue.prototype.move = function (id) {
  return scripts.move(this, id);
};
module.exports = Queue;
";
        let scripts_js = "\
const scripts = {
  move(queue, id) {
    const keys = [queue.name + ':wait', queue.name + ':active'];
    return queue.client.move(keys.concat([id]));
  },
  release: function (queue, id) {
    return queue.client.release([queue.name + ':' + id + ':lock', queue.token]);
  },
  pause(queue, keys) {
    return queue.client.pause(keys);
  },
};
module.exports = scripts;
";
        let files = [("queue.js", queue), ("scripts.js", scripts_js)];
        let js = Language::JavaScript(super::super::lower::javascript::Dialect::JavaScript);
        let lua = [
            super::super::lua::script_file("move-2", ""),
            super::super::lua::script_file("release", "return redis.call('DEL', KEYS[1])"),
            super::super::lua::script_file("pause-3", ""),
        ];
        let got = sites_with(js, &files, &lua);
        // Two keys written out, of two prefixes; the lock released is one key (its count read
        // from the body); a list nobody here writes out for a script of 3 keys: not known.
        assert!(
            got.contains(&(1, 4, None, "move".into(), "cross")),
            "{got:?}"
        );
        assert!(
            got.contains(&(1, 7, None, "release".into(), "one")),
            "{got:?}"
        );
        assert!(
            got.contains(&(1, 10, None, "pause".into(), "depends")),
            "{got:?}"
        );
        // Without the script files their key counts are not known.
        let bare = sites(js, &files);
        assert!(bare.iter().any(|s| s.1 == 7 && s.4 != "one"), "{bare:?}");
    }

    #[test]
    fn lists_mapped_by_a_function_and_siblings_called_through_this() {
        let src = "\
const _ = require('lodash');
const Redis = require('ioredis');
const redis = new Redis();
const scripts = {
  keysOf(queue, names) {
    return _.map(names, name => queue.prefix + ':' + name);
  },
  pause(queue) {
    const keys = this.keysOf(queue, ['wait', 'paused']);
    return redis.eval('return 1', 2, ...keys);
  },
  drain(queue) {
    const keys = ['a', 'b'].map(n => '{' + queue.prefix + '}:' + n);
    return redis.eval('return 1', 2, ...keys);
  },
};
module.exports = scripts;
";
        let js = Language::JavaScript(super::super::lower::javascript::Dialect::JavaScript);
        let got = sites(js, &[("scripts.js", src)]);
        assert!(
            got.contains(&(0, 10, None, "EVAL".into(), "cross")),
            "{got:?}"
        );
        assert!(
            got.contains(&(0, 14, None, "EVAL".into(), "one")),
            "{got:?}"
        );
        let got = py(&[(
            "m.py",
            "\
import redis
r = redis.Redis()
def drop(uid):
    keys = list(map(lambda n: 'user:' + uid + ':' + n, ['a', 'b']))
    return r.delete(*keys)
",
        )]);
        assert!(
            got.contains(&(0, 5, None, "DEL".into(), "cross")),
            "{got:?}"
        );
    }

    #[test]
    fn a_backend_s_field_is_the_client_though_every_backend_has_the_method() {
        let got = py(&[
            (
                "base.py",
                "\
class BaseCache:
    def delete(self, key):
        return True

    def delete_many(self, *keys):
        return [self.delete(k) for k in keys]
",
            ),
            (
                "redis_cache.py",
                "\
import redis
from base import BaseCache

class RedisCache(BaseCache):
    def __init__(self, client):
        self._write_client = client

    def delete(self, key):
        return self._write_client.delete('c:' + key)

    def delete_many(self, *keys):
        return self._write_client.delete(*['c:' + k for k in keys])

class FileCache(BaseCache):
    def delete(self, key):
        return False
",
            ),
            (
                "backend.py",
                "\
import redis

class Backend:
    redis = redis

    def _get_client(self):
        return self.redis.StrictRedis

    @property
    def client(self):
        return self._get_client()(host='h')

    def mget(self, keys):
        return self.client.mget(keys)
",
            ),
        ]);
        // One key per id the caller gives: the list of keys is the caller's, and so is the
        // verdict (one slot when it holds one id).
        assert!(
            got.contains(&(1, 12, None, "DEL".into(), "depends")),
            "{got:?}"
        );
        assert!(
            got.contains(&(2, 14, None, "MGET".into(), "depends")),
            "{got:?}"
        );
    }

    #[test]
    fn a_parameter_declared_a_script_runs_it() {
        let got = py(&[(
            "groups.py",
            "\
from redis.commands.core import Script as RedisScript

def _create(script: RedisScript, group: str) -> None:
    script(keys=['group:' + group, 'groups'], args=[group])
",
        )]);
        assert!(
            got.contains(&(0, 4, None, "EVALSHA".into(), "cross")),
            "{got:?}"
        );
    }

    #[test]
    fn a_transaction_handed_a_method_by_name() {
        let got = py(&[(
            "queue.py",
            "\
import redis
connection = redis.Redis()

class Queue:
    def __init__(self, name):
        self.key = 'queue:' + name

    def _empty(self, pipe):
        ids = pipe.lrange(self.key, 0, -1)
        pipe.multi()
        pipe.delete(self.key)
        pipe.delete('unblock:' + self.key)

    def empty(self):
        connection.transaction(self._empty, self.key)
",
        )]);
        // Watching until multi(): LRANGE is sent on its own; the transaction is the two DELs.
        assert!(
            got.iter()
                .any(|s| s.1 == 15 && s.3 == "DEL DEL" && s.4 == "cross"),
            "{got:?}"
        );
    }

    #[test]
    fn a_watching_pipeline_sends_its_commands_at_once() {
        let got = py(&[(
            "enq.py",
            "\
async def enqueue(redis, job_id):
    async with redis.pipeline(transaction=True) as pipe:
        await pipe.watch('job:' + job_id)
        if await pipe.exists('job:' + job_id, 'result:' + job_id):
            return None
        pipe.multi()
        pipe.set('job:' + job_id, 1)
        pipe.zadd('queue', {job_id: 1})
        await pipe.execute()
",
        )]);
        // EXISTS is sent on its own while watching: a command of two keys, not one of the
        // transaction's.
        assert!(
            got.contains(&(0, 4, None, "EXISTS".into(), "cross")),
            "{got:?}"
        );
        let tx = got.iter().find(|s| s.1 == 2).expect("the transaction");
        assert_eq!(tx.3, "SET ZADD", "{got:?}");
    }

    #[test]
    fn a_base_class_method_runs_its_subclasses_overrides() {
        let src = "\
import redis

class Storage:
    def _get(self, pipe, key):
        raise NotImplementedError

    def get_many(self, client, keys):
        with client.pipeline(transaction=False) as pipe:
            for key in keys:
                self._get(pipe, 'doc:' + key)
            return pipe.execute()

class HashStorage(Storage):
    def _get(self, pipe, key):
        return pipe.hgetall(key)
";
        let got = py(&[("storage.py", src)]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            (got[0].1, got[0].2, got[0].3.as_str()),
            (8, Some(11), "HGETALL"),
            "{got:?}"
        );
    }
}
