//! `keyplan lint`: check a key scheme (`keyplan.yaml`) and key dumps against the rules.

use super::Ctx;
use super::args::{InputArgs, TopologyArgs, scheme_path, threads};
use super::loaded::{Loaded, Target};
use super::values::{FAIL_ON, Word, one_of};
use crate::error::{ExitStatus, UserError};
use crate::lint::rule::Severity;
use crate::lint::{
    DumpLinter, LintSink, RuleSet, Shared, finish_sinks, lint_code, lint_scheme, sort,
};
use crate::report::lint::LintReport;
use crate::report::render::{Format, render};
use anyhow::Context as _;
use std::path::PathBuf;

/// `--format` of lint.
const LINT_FORMATS: &[Word<Format>] = &[
    (
        "human",
        Format::Table,
        "`path:line:col: KP301 [error] message` and a help line",
    ),
    (
        "json",
        Format::Json,
        "{\"schema_version\": 1, \"diagnostics\": [...], \"summary\": {...}}",
    ),
    (
        "sarif",
        Format::Sarif,
        "SARIF 2.1.0 for GitHub code scanning",
    ),
    (
        "github",
        Format::Github,
        "GitHub Actions workflow annotations",
    ),
    (
        "gitlab",
        Format::Gitlab,
        "GitLab's Code Quality report (artifacts:reports:codequality)",
    ),
    (
        "markdown",
        Format::Markdown,
        "Markdown: counts, findings by rule, the worst finding and a table (a pull-request comment or $GITHUB_STEP_SUMMARY)",
    ),
];

/// Check a key scheme and key dumps against keyplan's rules.
///
/// Exit status: 0 when no finding is at or above --fail-on, 1 when some are, 2 when the job
/// cannot be done (a bad scheme, rule or argument).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan lint\n  keyplan lint --scheme keyplan.yaml --keys sample.txt\n  keyplan lint --format sarif > keyplan.sarif\n  keyplan lint --select KP3 --fail-on error\n  keyplan lint --code src/ --format github"
)]
pub struct LintArgs {
    /// The key scheme [default: ./keyplan.yaml, else ./keyplan.yml, when it exists]
    #[arg(long, value_name = "FILE")]
    pub scheme: Option<PathBuf>,

    /// Key dumps to check ('-' for stdin); repeat for several
    #[arg(long = "keys", value_name = "FILE")]
    pub keys: Vec<PathBuf>,

    /// Application source to check (files or directories, read as `keyplan code` reads
    /// them: Python, JavaScript/TypeScript, Go, Ruby, Java); repeat for several
    #[arg(long = "code", value_name = "PATH")]
    pub code: Vec<PathBuf>,

    /// Report only the findings in these source files (the files a pre-commit hook is
    /// given): the --code paths [default: .] are read to resolve what they call, and the
    /// default scheme is not read (--scheme names one to check too)
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// How dumps are read.
    #[command(flatten)]
    pub input: InputArgs,

    /// Where keys live [default: the scheme's `topology:`, else 3 masters].
    #[command(flatten)]
    pub topology: TopologyArgs,

    /// Which rules apply.
    #[command(flatten)]
    pub rules: RuleArgs,

    /// Exit 1 when a finding is at or above this severity
    #[arg(long, value_parser = one_of(FAIL_ON), default_value = "warning")]
    pub fail_on: Severity,

    /// Output format
    #[arg(long, value_parser = one_of(LINT_FORMATS), default_value = "human")]
    pub format: Format,

    /// Write the findings to this file instead of standard output (whole, or not at all)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Worker threads reading the dumps (default: all cores; the findings are the same)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Which rules apply: the built-ins, extra rule files, and the user's choices. `lint` and
/// `plan` take the same flags, so a plan aims at the rules its rewrite is linted with.
#[derive(Debug, Clone, clap::Args)]
pub struct RuleArgs {
    /// Extra rules: every *.yml file in this directory (repeatable); a file with a built-in
    /// rule's code replaces it (e.g. KP201 with other thresholds)
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,

    /// Only these rules (codes, code prefixes like KP3, or names; comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub select: Vec<String>,

    /// Skip these rules (codes, prefixes or names; comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub ignore: Vec<String>,

    /// Override a rule's severity, e.g. KP302=warning or KP201=off (repeatable)
    #[arg(long, value_name = "ID=LEVEL")]
    pub severity: Vec<String>,
}

impl RuleArgs {
    /// The rule set these flags ask for: the built-ins, the `--rules` directories' files,
    /// then `--select`, `--ignore` and `--severity`.
    pub fn rule_set(&self) -> anyhow::Result<RuleSet> {
        let mut set = RuleSet::builtin()?;
        for dir in &self.rules {
            let loaded = crate::files::text::read_yaml_dir(dir, "rules")?;
            if loaded.is_empty() {
                return Err(UserError::new(
                    format!("--rules {}: no .yml rule files there", dir.display()),
                    "write one YAML file per rule (see rules/ in keyplan's sources and README)",
                )
                .into());
            }
            set.load_dir(&loaded)?;
        }
        if !self.select.is_empty() {
            set.select(&self.select)?;
        }
        set.ignore(&self.ignore)?;
        for s in &self.severity {
            let bad = |why: String| {
                UserError::new(
                    format!("--severity {s}: {why}"),
                    "for example --severity KP302=warning (levels: off, hint, info, warning, error)",
                )
            };
            let (code, level) = s
                .split_once('=')
                .ok_or_else(|| bad("expected ID=LEVEL".into()))?;
            let level = Severity::from_name(level)
                .ok_or_else(|| bad(format!("'{level}' is not a severity")))?;
            set.set_severity(code, level)?;
        }
        Ok(set)
    }
}

/// The FILEs `keyplan lint` reports on, canonical (as the findings' paths are compared);
/// `None` when none are given. A FILE that is not a file is an error naming it.
fn only_files(files: &[PathBuf]) -> anyhow::Result<Option<std::collections::BTreeSet<PathBuf>>> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut set = std::collections::BTreeSet::new();
    for f in files {
        match std::fs::canonicalize(f) {
            Ok(p) if p.is_file() => {
                set.insert(p);
            }
            _ => {
                return Err(UserError::new(
                    format!("{}: not a file", f.display()),
                    "give the source files to report on (directories go to --code)",
                )
                .into());
            }
        }
    }
    Ok(Some(set))
}

/// Runs `keyplan lint`.
pub fn run(mut args: LintArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    // FILEs: findings in these files only, the --code tree read to resolve what they call.
    let only = only_files(&args.files)?;
    let scheme_path = if only.is_some() {
        args.scheme.clone()
    } else {
        scheme_path(args.scheme.as_ref())
    };
    if only.is_some() && args.code.is_empty() {
        args.code.push(PathBuf::from("."));
    }
    if scheme_path.is_none() && args.keys.is_empty() && args.code.is_empty() {
        return Err(UserError::new(
            "nothing to lint: no --scheme, no keyplan.yaml or keyplan.yml here, no --keys and no --code",
            "pass --scheme keyplan.yaml, --keys dump.txt and/or --code src/",
        )
        .into());
    }
    let target = Target::new(args.output.as_ref(), args.format);
    let loaded = Loaded::open(&args.topology, scheme_path.as_deref(), Some(3), target)?
        .with_rules(&args.rules)?;
    let (topology, _) = loaded.topology_or_default()?;
    let rules = loaded.rules();
    let scheme = &loaded.scheme;
    let mut diags = Vec::new();
    if let Some(l) = &scheme {
        let path = l.path.display().to_string();
        diags.extend(lint_scheme(rules, &l.scheme, &path, &topology));
    }
    let dumps = args
        .input
        .read_dumps(&args.keys, ctx.progress, |input, opts, progress| {
            let scheme = scheme.as_ref().map(|l| &l.scheme);
            let shared = Shared::default();
            let linter = || DumpLinter::new(rules, scheme, &topology, &input.name).sharing(&shared);
            let mut sinks: Vec<LintSink<'_>> = (0..threads(args.threads))
                .map(|_| LintSink::new(linter()))
                .collect();
            let mut snapshot = linter();
            let (summary, was_snapshot) =
                input.par_read_lines(opts, &mut sinks, progress, |line, rec| {
                    snapshot.record(line, rec.key, rec.bytes, rec.ops)
                })?;
            diags.extend(if was_snapshot {
                snapshot.finish()
            } else {
                finish_sinks(sinks)
            });
            Ok(summary)
        })?;
    if !args.code.is_empty() {
        let report = super::code::scan_paths(&args.code, args.threads, ctx)?;
        diags.extend(
            lint_code(rules, &report, &|file| std::fs::read_to_string(file).ok())
                .into_iter()
                .filter(|d| {
                    only.as_ref().is_none_or(|files| {
                        std::fs::canonicalize(&d.path).is_ok_and(|p| files.contains(&p))
                    })
                }),
        );
        for s in &report.skipped {
            writeln!(ctx.stderr, "note: {}: not read: {}", s.file, s.reason)?;
        }
    }
    sort(&mut diags);
    let report = LintReport {
        diags: &diags,
        rules,
    };
    let format = loaded.target.format;
    ctx.write_to(loaded.target.path.as_ref(), |out, layout| {
        render(&report, format, out, layout).context("writing the findings")
    })?;
    dumps.warn(ctx)?;
    let threshold = args.fail_on;
    Ok(if diags.iter().any(|d| d.severity >= threshold) {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}
