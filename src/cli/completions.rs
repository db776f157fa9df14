//! `keyplan completions SHELL` and `keyplan man`: shell completion scripts and the man pages,
//! generated from the same clap definitions as `--help`.

use super::{Cli, Ctx};
use crate::error::{ExitStatus, UserError};
use anyhow::Context as _;
use clap::CommandFactory;
use std::path::PathBuf;

/// Print a shell completion script.
///
/// For example: `keyplan completions bash > /etc/bash_completion.d/keyplan`, or
/// `keyplan completions zsh > "${fpath[1]}/_keyplan"`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Runs `keyplan completions`.
pub fn run(args: CompletionsArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "keyplan", &mut *ctx.stdout);
    Ok(ExitStatus::Clean)
}

/// Write the man pages (roff): one per subcommand into a directory, or one page to stdout.
///
/// `keyplan man DIR` writes keyplan.1 and keyplan-analyze.1, keyplan-lint.1, … into DIR (for
/// example /usr/local/share/man/man1); `keyplan man --command analyze | man -l -` shows one
/// page; `keyplan man` alone prints keyplan.1.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write every page into this directory (created if missing)
    #[arg(value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,

    /// Print the page of this subcommand (e.g. analyze) to standard output
    #[arg(long, value_name = "NAME")]
    pub command: Option<String>,
}

/// Runs `keyplan man`.
pub fn run_man(args: ManArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the directory '{}'", dir.display()))?;
        let mut pages = 0;
        let mut all = vec![cmd.clone()];
        all.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        for page in all {
            let man = clap_mangen::Man::new(page.clone());
            let path = dir.join(man.get_filename());
            let mut text = Vec::new();
            render_page(&page, &mut text)?;
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write the man page '{}'", path.display()))?;
            pages += 1;
        }
        writeln!(ctx.stderr, "wrote {pages} man pages into {}", dir.display())?;
        return Ok(ExitStatus::Clean);
    }
    let page = match &args.command {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
                return Err(UserError::new(
                    format!("--command {name}: keyplan has no such subcommand"),
                    format!("pick one of {}", names.join(", ")),
                )
                .into());
            }
        },
    };
    render_page(&page, &mut *ctx.stdout)?;
    Ok(ExitStatus::Clean)
}

/// A man page: clap_mangen's sections (name, synopsis, description, options, subcommands),
/// then EXAMPLES (each command on a line of its own, never refilled), EXIT STATUS,
/// ENVIRONMENT and VERSION.
fn render_page(cmd: &clap::Command, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(w)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(w)?;
    }
    let examples = examples(cmd);
    if !examples.is_empty() {
        writeln!(w, ".SH EXAMPLES")?;
        for e in examples {
            writeln!(w, ".PP\n.nf\n\\fB{}\\fR\n.fi", roff_text(&e))?;
        }
    }
    writeln!(w, ".SH \"EXIT STATUS\"")?;
    for (code, meaning) in EXIT_STATUS {
        writeln!(w, ".TP\n\\fB{code}\\fR\n{}", roff_text(meaning))?;
    }
    writeln!(w, ".SH ENVIRONMENT")?;
    for (name, meaning) in ENVIRONMENT {
        writeln!(w, ".TP\n\\fB{name}\\fR\n{}", roff_text(meaning))?;
    }
    if cmd.get_version().is_some() || cmd.get_long_version().is_some() {
        man.render_version_section(w)?;
    }
    Ok(())
}

/// The exit statuses every subcommand shares.
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Done; nothing at or above the failure threshold."),
    (
        "1",
        "Done, with findings: lint findings at or above --fail-on; batches plan would change; warnings of a rebalance or reshard preview; a batch migrate finds starting to fail; a cross-slot site code finds; a rule example rules test finds wrong; a bench whose measured round trips or commands per node differ from the prediction (a QPS or latency outside its tolerance does not set it: a busy machine would).",
    ),
    (
        "2",
        "The job could not be done: bad arguments, unreadable or unrecognised input, a cluster that cannot be read. The message names the file, line, column, flag or node and says what to do.",
    ),
];

/// The environment variables keyplan reads.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "REDISCLI_AUTH",
        "The password for --cluster, as redis-cli reads it; never printed.",
    ),
    (
        "KEYPLAN_TIMEOUT",
        "Seconds to wait for a cluster node to connect and answer (default 10).",
    ),
    ("NO_COLOR", "When set, no colours and no terminal charts."),
    (
        "COLUMNS",
        "The terminal's width when it cannot be read from the terminal itself.",
    ),
    (
        "SSL_CERT_FILE, SSL_CERT_DIR",
        "Certificates to trust for rediss:// (the tls build), besides the system's.",
    ),
];

/// The command lines of a subcommand's `Examples:` help: the indented lines under its
/// `Examples:` line, wherever that paragraph stands (prose may come before it, an exit-status
/// line after it).
fn examples(cmd: &clap::Command) -> Vec<String> {
    let Some(text) = cmd.get_after_help().map(|h| h.to_string()) else {
        return Vec::new();
    };
    text.lines()
        .skip_while(|l| l.trim_end() != "Examples:")
        .skip(1)
        .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect()
}

/// Text for a roff line: backslashes and hyphens escaped, a leading `.` or `'` guarded.
fn roff_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    if s.starts_with(['.', '\'']) {
        out.push_str("\\&");
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            _ => out.push(c),
        }
    }
    out
}
