//! `keyplan code`: read application source for the keys it builds and the calls that send
//! several keys at once, and judge each call as a cluster would.

use super::Ctx;
use super::args::threads;
use super::values::{Word, one_of};
use crate::code::guard::READER_STACK;
use crate::code::{CodeReport, FileFindings, FileReport, Globals, Language, Readers, Skipped};
use crate::error::{ExitStatus, UserError};
use crate::files::source::{RootError, SourceFile, check_root, read_source, walk};
use crate::report::render::{Format, render};
use anyhow::Context as _;
use std::collections::BTreeMap;
use std::path::PathBuf;

const CODE_FORMATS: &[Word<Format>] = &[
    (
        "table",
        Format::Table,
        "A table of the multi-key sites (file:line, op, atomic, verdict, keys), then a summary",
    ),
    (
        "json",
        Format::Json,
        "One JSON document: keys, sites (each at the line that opens it, and send_line where it is sent) and skipped files (schema_version 2)",
    ),
    (
        "yaml",
        Format::Yaml,
        "A keyplan.yaml draft: the keys and the multi-key calls as a scheme for lint and plan, each with its file:line",
    ),
    (
        "markdown",
        Format::Markdown,
        "The table as Markdown (a pull-request comment or a CI job summary)",
    ),
];

/// Find the Redis keys application code builds and the calls that send several at once
/// (multi-key commands, pipelines, transactions, scripts); say which can hash to different
/// slots.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Reads Python (redis-py: Redis, asyncio and RedisCluster clients), JavaScript and TypeScript (ioredis; node-redis v4+), Go (go-redis v8/v9; redigo), Ruby (redis-rb; redis-client) and Java (Jedis, Lettuce, Spring Data Redis, Redisson). Keys built from constants and functions of other files of the tree are followed.\n\nExamples:\n  keyplan code src/\n  keyplan code app.py worker.py --format json -o sites.json\n  keyplan code src/ --format yaml -o keyplan.yaml && keyplan plan --scheme keyplan.yaml\n  keyplan lint --code src/ --format sarif > code.sarif\n\nExit status: 0 no cross-slot site, 1 a site whose keys can hash to different slots, 2 error."
)]
pub struct CodeArgs {
    /// Source files or directories (directories are walked as ripgrep does: .gitignore
    /// honoured, hidden files skipped; files are named as these paths name them, `src/` gives
    /// `src/app.py`)
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Output format
    #[arg(long, value_parser = one_of(CODE_FORMATS), default_value = "table")]
    pub format: Format,

    /// Write the report to this file instead of standard output (whole, or not at all)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Worker threads (default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,

    /// How the code is read: `model` (the default) lowers every file into one model and
    /// follows values through functions, classes, objects and modules, judging a helper's
    /// batch by what its callers send; `readers` (the old engine, kept for comparison and to
    /// be removed) reads each file on its own
    #[arg(long, value_enum, value_name = "ENGINE", default_value_t = CodeEngine::Model)]
    pub engine: CodeEngine,
}

/// How `keyplan code` reads the languages both ways can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CodeEngine {
    /// Each file read on its own (the old engine, to be removed)
    Readers,
    /// One model of the whole tree, followed across functions, classes and files (the default)
    Model,
}

/// Runs `keyplan code`.
pub fn run(args: CodeArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let report = scan_paths(&args.paths, args.threads, args.engine, ctx)?;
    let format = args.format;
    ctx.write_to(args.output.as_ref(), |out, layout| {
        render(&report, format, out, layout).context("writing the report")
    })?;
    Ok(if report.cross_slot() > 0 {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}

/// How many files deep a pipeline handed from function to function is followed.
const CROSS_FILE_DEPTH: usize = 3;

/// Reads the source files under `paths` (on `threads` workers, in the walk's order) for the
/// keys they build and their multi-key calls (`keyplan code`, `lint --code`).
pub fn scan_paths(
    paths: &[PathBuf],
    threads_flag: Option<u16>,
    engine: CodeEngine,
    ctx: &Ctx<'_>,
) -> anyhow::Result<CodeReport> {
    for p in paths {
        if let Err(why) = check_root(p) {
            let help = match why {
                RootError::Missing => "give the source files or directories to read",
                RootError::DanglingLink | RootError::LinkLoop => {
                    "mend the link (`ls -l` shows where it points) or give the directory it stands for"
                }
                RootError::Special(_) => {
                    "give source files or directories; to read code from a pipe or device, save it to a file first"
                }
                RootError::Io(_) => "check the path and its permissions",
            };
            return Err(UserError::new(format!("{}: {why}", p.display()), help).into());
        }
    }
    let readers = Readers::builtin();
    // One walk for the source files and the Lua script files beside them (commands the code
    // defines from its script files at run time take their names and key counts from them).
    let mut extensions = Language::EXTENSIONS.to_vec();
    extensions.push("lua");
    let (all_files, errors) = walk(paths, &extensions);
    let (lua, files): (Vec<SourceFile>, Vec<SourceFile>) = all_files
        .into_iter()
        .partition(|f| f.path.extension().is_some_and(|e| e == "lua"));
    let mut report = CodeReport::default();
    for (root, why) in errors {
        report.skipped.push(Skipped {
            file: root,
            reason: why,
        });
    }
    let pool = reader_pool(threads(threads_flag))?;
    // One step per reading of what a file defines, per reading again (Python), per scan.
    let progress = ctx.progress(
        "reading source",
        super::progress::Unit::Steps,
        Some(2 * files.len() as u64),
    );
    // First what each file defines for the others (constants, key functions), then each
    // file read with what the others of its language define. A file's text is read from
    // disk for each reading and dropped after it: memory holds what the files define, not
    // the files.
    let load = |f: &SourceFile| -> Result<(Language, String), String> {
        let text = read_source(&f.path).map_err(|e| e.to_string())?;
        let ext = f.path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let language = Language::of_extension(ext)
            .ok_or_else(|| format!("not a language keyplan code reads (.{ext})"))?;
        Ok((language, text))
    };
    let stem = |f: &SourceFile| {
        f.path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
    };
    let none = Globals::default();
    let language_of = |f: &SourceFile| {
        f.path
            .extension()
            .and_then(|e| e.to_str())
            .and_then(Language::of_extension)
    };
    // Languages read through the model (`--engine model`): each file lowered on its own, then
    // the files of one language analysed together (a function of one file followed from the
    // others).
    let through_model = |l: Language| engine == CodeEngine::Model && crate::code::scan::lowered(l);
    let modelled: Vec<usize> = (0..files.len())
        .filter(|&i| language_of(&files[i]).is_some_and(through_model))
        .collect();
    let lowered: Vec<Result<(String, Language, crate::code::ir::Unit), String>> =
        par_map(&pool, &modelled, |&i| {
            progress.inc(1);
            let (l, text) = load(&files[i])?;
            crate::code::scan::lower(l, &text).map(|u| (files[i].shown.clone(), l, u))
        });
    let mut model_results: BTreeMap<usize, Result<FileFindings, String>> = BTreeMap::new();
    let mut units = Vec::new();
    let mut unit_index = Vec::new();
    for (&i, r) in modelled.iter().zip(lowered) {
        match r {
            Ok(u) => {
                units.push(u);
                unit_index.push(i);
            }
            Err(why) => {
                model_results.insert(i, Err(why));
            }
        }
    }
    let run = |job: &(dyn Fn(usize) -> crate::code::engine::Found + Sync), n: usize| {
        let idx: Vec<usize> = (0..n).collect();
        par_map(&pool, &idx, |&i| job(i))
    };
    // A script file that cannot be read is left out: it only names a command.
    let scripts: Vec<crate::code::lua::ScriptFile> = if engine == CodeEngine::Model {
        par_map(&pool, &lua, |f| {
            let stem = f.path.file_stem()?.to_str()?;
            let body = read_source(&f.path).ok()?;
            Some(crate::code::lua::script_file(stem, &body))
        })
        .into_iter()
        .flatten()
        .collect()
    } else {
        Vec::new()
    };
    let found = crate::code::scan::analyse(
        &units,
        crate::code::profile::Profile::builtin,
        &scripts,
        &run,
    );
    drop(units);
    for (i, f) in unit_index.into_iter().zip(found) {
        model_results.insert(i, Ok(f));
    }
    let exported: Vec<Result<(Language, Globals), String>> = par_map(&pool, &files, |f| {
        progress.inc(1);
        if let Some(l) = language_of(f).filter(|&l| through_model(l)) {
            return Ok((l, Globals::default()));
        }
        let (l, text) = load(f)?;
        readers
            .definitions(l, &text, &none, stem(f).as_deref())
            .map(|g| (l, g))
    });
    let mut globals: BTreeMap<&str, Globals> = BTreeMap::new();
    // What each Python file defines (by file), kept to be read again.
    let mut python_exports: Vec<Option<Globals>> = vec![None; files.len()];
    let mut python: Vec<usize> = Vec::new();
    // Why a file is not read, found on its first reading: it is not parsed again.
    let mut refused: Vec<Option<String>> = vec![None; files.len()];
    for (i, e) in exported.into_iter().enumerate() {
        match e {
            Ok((l, g)) => {
                if l == Language::Python {
                    python_exports[i] = Some(g.clone());
                    python.push(i);
                }
                globals.entry(l.profile_language()).or_default().merge(g);
            }
            Err(why) => refused[i] = Some(why),
        }
    }
    // Python functions handed a pipeline hand it on to functions of other files: read again,
    // with what the whole tree queues known, each reading one call deeper. Only a file that
    // defines such a function or names one can read differently; the others keep what they
    // gave, and a tree with none is not read again.
    if !python.is_empty() {
        progress.set_total((2 * files.len() + (CROSS_FILE_DEPTH - 1) * python.len()) as u64);
    }
    for _ in 1..CROSS_FILE_DEPTH {
        let known = globals.get("python").cloned().unwrap_or_default();
        if !known.has_queuers() {
            progress.inc(python.len() as u64);
            continue;
        }
        let names: Vec<memchr::memmem::Finder<'_>> = known
            .queuer_names()
            .into_iter()
            .map(memchr::memmem::Finder::new)
            .collect();
        let fresh: Vec<Option<Globals>> = par_map(&pool, &python, |&i| {
            progress.inc(1);
            let f = &files[i];
            let (_, text) = load(f).ok()?;
            let involved = python_exports[i].as_ref().is_some_and(Globals::has_queuers)
                || names.iter().any(|n| n.find(text.as_bytes()).is_some());
            involved.then(|| readers.exports(Language::Python, &text, &known, stem(f).as_deref()))
        });
        for (&i, g) in python.iter().zip(fresh) {
            if let Some(g) = g {
                python_exports[i] = Some(g);
            }
        }
        let mut merged = Globals::default();
        for &i in &python {
            if let Some(g) = &python_exports[i] {
                merged.merge(g.clone());
            }
        }
        globals.insert("python", merged);
    }
    drop(python_exports);
    let order: Vec<usize> = (0..files.len()).collect();
    let results: Vec<Result<FileFindings, String>> = par_map(&pool, &order, |&i| {
        progress.inc(1);
        if let Some(r) = model_results.get(&i) {
            return r.clone();
        }
        if let Some(why) = &refused[i] {
            return Err(why.clone());
        }
        let (l, text) = load(&files[i])?;
        let g = globals.get(l.profile_language()).unwrap_or(&none);
        readers.scan(l, &text, g)
    });
    progress.finish();
    for (f, r) in files.into_iter().zip(results) {
        match r {
            Ok(findings) => {
                report.scanned += 1;
                if !findings.keys.is_empty() || !findings.sites.is_empty() {
                    report.files.push(FileReport {
                        file: f.shown,
                        findings,
                    });
                }
            }
            Err(why) => report.skipped.push(Skipped {
                file: f.shown,
                reason: why,
            }),
        }
    }
    Ok(report)
}

/// The threads that read source: `workers` of them, each on a stack the size the readers need
/// (they recurse as deep as the deepest tree they read). When the system refuses that many,
/// one thread does the work; an error when not even one can be started.
fn reader_pool(workers: usize) -> anyhow::Result<rayon::ThreadPool> {
    let pool = |n: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .stack_size(READER_STACK)
            .thread_name(|_| "keyplan-code".into())
            .build()
    };
    pool(workers.max(1)).or_else(|_| pool(1)).map_err(|e| {
        anyhow::Error::from(UserError::new(
            format!(
                "cannot start a thread with a {} MiB stack to read source: {e}",
                READER_STACK >> 20
            ),
            "allow more virtual memory (ulimit -v) or pass --threads 1",
        ))
    })
}

/// `f` of every item on the threads of `pool`, in the items' order.
fn par_map<T: Sync, R: Send>(
    pool: &rayon::ThreadPool,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    use rayon::prelude::*;
    // `f` by reference: a `Sync` closure's reference is `Send`.
    pool.install(|| items.par_iter().map(&f).collect())
}
