//! `keyplan code`: read application source for the keys it builds and the calls that send
//! several keys at once, and judge each call as a cluster would.

use super::Ctx;
use super::values::{Word, one_of};
use crate::code::profile::Profile;
use crate::code::{CodeReport, FileReport, Skipped};
use crate::error::{ExitStatus, UserError};
use crate::files::source::{read_source, walk};
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
        "One JSON document: keys, sites and skipped files (schema_version 1)",
    ),
];

/// Find the Redis keys application code builds and the calls that send several at once
/// (multi-key commands, pipelines, transactions, scripts); say which can hash to different
/// slots.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Reads Python (redis-py: Redis, asyncio and RedisCluster clients) and JavaScript (ioredis; node-redis v4+).\n\nExamples:\n  keyplan code src/\n  keyplan code app.py worker.py --format json -o sites.json\n\nExit status: 0 no cross-slot site, 1 a site whose keys can hash to different slots, 2 error."
)]
pub struct CodeArgs {
    /// Source files or directories (directories are walked as ripgrep does: .gitignore
    /// honoured, hidden files skipped)
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Output format
    #[arg(long, value_parser = one_of(CODE_FORMATS), default_value = "table")]
    pub format: Format,

    /// Write the report to this file instead of standard output (whole, or not at all)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `keyplan code`.
pub fn run(args: CodeArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    for p in &args.paths {
        if !p.exists() {
            return Err(UserError::new(
                format!("{}: no such file or directory", p.display()),
                "give the source files or directories to read",
            )
            .into());
        }
    }
    let python = Profile::builtin("python");
    let javascript = Profile::builtin("javascript");
    let (files, errors) = walk(&args.paths, &["py", "js", "mjs", "cjs", "jsx"]);
    let mut report = CodeReport::default();
    for (root, why) in errors {
        report.skipped.push(Skipped {
            file: root,
            reason: why,
        });
    }
    let progress = ctx.progress(
        "reading source",
        super::progress::Unit::Steps,
        Some(files.len() as u64),
    );
    for f in files {
        progress.inc(1);
        let text = match read_source(&f.path) {
            Ok(t) => t,
            Err(why) => {
                report.skipped.push(Skipped {
                    file: f.shown,
                    reason: why.to_string(),
                });
                continue;
            }
        };
        let python_file = f.path.extension().is_some_and(|e| e == "py");
        let scanned = if python_file {
            crate::code::python::scan(&text, &python).map_err(|e| e.to_string())
        } else {
            crate::code::javascript::scan(&text, &javascript).map_err(|e| e.to_string())
        };
        match scanned {
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
    progress.finish();
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
