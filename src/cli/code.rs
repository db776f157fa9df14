//! `keyplan code`: read application source for the keys it builds and the calls that send
//! several keys at once, and judge each call as a cluster would.

use super::Ctx;
use super::args::threads;
use super::values::{Word, one_of};
use crate::code::guard::READER_STACK;
use crate::code::lua::ScriptFile;
use crate::code::profile::Profile;
use crate::code::scan::{Steps, par_map, scan_tree};
use crate::code::{CodeReport, FileReport, Language, Skipped};
use crate::error::{ExitStatus, UserError};
use crate::files::source::{RootError, SourceFile, check_root, read_source, walk};
use crate::report::render::{Format, render};
use anyhow::Context as _;
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
}

/// Runs `keyplan code`.
pub fn run(args: CodeArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let report = scan_paths(&args.paths, args.threads, ctx)?;
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

/// Reads the source files under `paths` (on `threads` workers, in the walk's order) for the
/// keys they build and their multi-key calls (`keyplan code`, `lint --code`).
pub fn scan_paths(
    paths: &[PathBuf],
    threads_flag: Option<u16>,
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
    // A script file that cannot be read is left out: it only names a command.
    let scripts: Vec<ScriptFile> = par_map(&pool, &lua, |f| {
        let stem = f.path.file_stem()?.to_str()?;
        let body = read_source(&f.path).ok()?;
        Some(crate::code::lua::script_file(stem, &body))
    })
    .into_iter()
    .flatten()
    .collect();
    // The walk keeps only files of the languages read: every one has a language.
    let (named, files): (Vec<(String, Language)>, Vec<SourceFile>) = files
        .into_iter()
        .filter_map(|f| {
            let ext = f.path.extension().and_then(|e| e.to_str())?;
            Some(((f.shown.clone(), Language::of_extension(ext)?), f))
        })
        .unzip();
    let text_of = |i: usize| read_source(&files[i].path).map_err(|e| e.to_string());
    let progress = ctx.progress(
        "reading source",
        super::progress::Unit::Steps,
        Some(files.len() as u64),
    );
    let results = scan_tree(
        &pool,
        &named,
        &text_of,
        &scripts,
        Profile::builtin,
        &Bar(&progress),
    );
    progress.finish();
    for ((shown, _), r) in named.into_iter().zip(results) {
        match r {
            Ok(findings) => {
                report.scanned += 1;
                if !findings.keys.is_empty() || !findings.sites.is_empty() {
                    report.files.push(FileReport {
                        file: shown,
                        findings,
                    });
                }
            }
            Err(why) => report.skipped.push(Skipped {
                file: shown,
                reason: why,
            }),
        }
    }
    Ok(report)
}

/// A progress bar counting the steps of a reading.
struct Bar<'p>(&'p super::progress::Progress);

impl Steps for Bar<'_> {
    fn total(&self, steps: u64) {
        self.0.set_total(steps);
    }
    fn done(&self, steps: u64) {
        self.0.inc(steps);
    }
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
