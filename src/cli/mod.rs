//! The command line: parsing (clap derive), dispatch to one file per subcommand, and the
//! mapping of results and errors to exit statuses (0 clean, 1 findings, 2 error; a closed
//! pipe on stdout is not an error).
//!
//! The doc comments of the argument structs are the `--help` text users read, written for a
//! terminal (`redis://[user:password@]host:port`, `key<TAB>bytes`), not rustdoc markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

pub mod analyze;
pub mod args;
pub mod bench;
pub mod code;
pub mod completions;
pub mod lint;
pub mod loaded;
pub mod migrate;
pub mod migration;
pub mod plan;
pub mod progress;
pub mod rebalance;
pub mod reshard;
pub mod rules;
pub mod scan;
pub mod simulate;
pub mod slot;
pub mod terminal;
pub mod values;
pub mod verify;

pub use terminal::Terminal;

use crate::error::{ExitStatus, UserError};
use crate::lint::{RuleChoice, RuleError};
use crate::live::LiveError;
use crate::topology::TopologyError;
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::io::Write;

/// Plan how Redis keys spread over a Redis Cluster, before production does.
///
/// Exit status: 0 done and clean, 1 done with findings, 2 the job could not be done.
#[derive(Debug, Parser)]
#[command(
    name = "keyplan",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("KEYPLAN_BUILD_COMMIT"), ")"),
    about,
    long_about = None,
    max_term_width = 100
)]
pub struct Cli {
    /// What to do
    #[command(subcommand)]
    pub command: Command,

    /// No progress bars on stderr (they are drawn only when stderr is a terminal)
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,

    /// Tables at their natural width even when stdout is a terminal (pipes and files always
    /// get them so)
    #[arg(long, global = true)]
    pub wide: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyze a key dump: distribution over nodes and slots, skew, hot tags, key patterns
    Analyze(analyze::AnalyzeArgs),
    /// Run batches on a live cluster with each strategy; measured next to the simulator
    Bench(bench::BenchArgs),
    /// Read application source: the keys it builds and its multi-key calls, judged per slot
    Code(code::CodeArgs),
    /// Check a key scheme and key dumps against the rules (for CI)
    Lint(lint::LintArgs),
    /// Preview a move to another sharding scheme (twemproxy → cluster, N → M masters, a bigger
    /// ring): keys that change owner, load per node, batches that start failing
    Migrate(migrate::MigrateArgs),
    /// Suggest hash tags for batches that are cross-slot or fan out, scored in round trips and skew
    Plan(plan::PlanArgs),
    /// Preview redis-cli --cluster rebalance (or a load-aware plan): slots, keys and bytes per node
    Rebalance(rebalance::RebalanceArgs),
    /// Preview redis-cli --cluster reshard: which slots move and what that does to every node
    Reshard(reshard::ReshardArgs),
    /// List the lint rules, explain one, or test rule examples
    Rules(rules::RulesArgs),
    /// Sample keys from a live cluster into a dump (read-only)
    Scan(scan::ScanArgs),
    /// Simulate batches: round trips, commands per node and latency per execution strategy
    Simulate(simulate::SimulateArgs),
    /// Print each key's hash slot, the bytes Redis hashes, and the owning node
    Slot(slot::SlotArgs),
    /// After a migration: check the cluster against the saved preview (slot owners, keys per
    /// node, keys left behind or missing)
    Verify(verify::VerifyArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish)
    Completions(completions::CompletionsArgs),
    /// Write the man pages (roff): one per subcommand into a directory, or one to stdout
    Man(completions::ManArgs),
}

/// Context for a run: where output and diagnostics go, and how the terminal is laid out.
pub struct Ctx<'a> {
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error.
    pub stderr: &'a mut dyn Write,
    /// Whether progress bars are drawn.
    pub progress: progress::ProgressConfig,
    /// How text reports are laid out (the terminal's width, or unbounded).
    pub layout: crate::report::TextLayout,
    /// Whether standard output is a terminal (charts are drawn only then).
    pub stdout_is_terminal: bool,
}

impl Ctx<'_> {
    /// The layout of a text report written to `output` (`None`: standard output): a file
    /// always gets the natural width.
    pub fn layout_for(&self, output: Option<&std::path::PathBuf>) -> crate::report::TextLayout {
        match output {
            Some(_) => crate::report::TextLayout::default(),
            None => self.layout,
        }
    }

    /// Writes a report to `output` (atomically: under a temporary name, renamed into place
    /// once complete) or to standard output, laid out for where it goes.
    pub fn write_to<T>(
        &mut self,
        output: Option<&std::path::PathBuf>,
        write: impl FnOnce(&mut dyn Write, &crate::report::TextLayout) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let layout = self.layout_for(output);
        let mut sink = crate::files::output_sink(output, &mut *self.stdout)?;
        let mut out = std::io::BufWriter::new(&mut sink);
        let done = write(&mut out, &layout)?;
        out.flush()?;
        drop(out);
        sink.finish()?;
        Ok(done)
    }

    /// Starts a progress bar for a long step (drawn only when progress is on).
    pub fn progress(
        &self,
        label: &str,
        unit: progress::Unit,
        total: Option<u64>,
    ) -> progress::Progress {
        progress::Progress::start(self.progress, label, unit, total)
    }
}

/// Whether an error chain is a closed pipe (`keyplan … | head`), which is not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs keyplan with `args` (program name first), writing to the given streams as to pipes
/// (no progress, tables at their natural width).
pub fn run<I, T>(args: I, stdout: &mut dyn Write, stderr: &mut dyn Write) -> ExitStatus
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_with(args, stdout, stderr, Terminal::default())
}

/// Runs keyplan with `args`, writing to streams connected as `terminal` says.
///
/// The streams are written in short bursts; no lock is held across the run, so a progress
/// bar drawn on the real stderr meanwhile never waits for the command.
pub fn run_with<I, T>(
    args: I,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    terminal: Terminal,
) -> ExitStatus
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // Help is wrapped at the terminal's width (at most 100): example commands longer than
    // that are broken before a flag with a ` \` continuation, as a shell reads them.
    let help_width = terminal
        .stdout_width
        .map_or(100, |w| usize::from(w).min(100));
    let parsed = with_broken_examples(<Cli as clap::CommandFactory>::command(), help_width)
        .try_get_matches_from(args)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors: they go to stdout with status 0.
            return if e.use_stderr() {
                let _ = write!(stderr, "{}", e.render());
                ExitStatus::Error
            } else {
                let _ = write!(stdout, "{}", e.render());
                ExitStatus::Clean
            };
        }
    };
    let progress = if terminal.stderr_is_terminal && !cli.quiet {
        progress::ProgressConfig::terminal()
    } else {
        progress::ProgressConfig::off()
    };
    let layout = crate::report::TextLayout {
        width: terminal.stdout_width.filter(|_| !cli.wide),
        markdown: false,
    };
    // Notes, warnings and errors wrap at spaces to a terminal's width too.
    let mut stderr = crate::report::TextLayout {
        width: terminal.stderr_width.filter(|_| !cli.wide),
        markdown: false,
    }
    .writer(stderr);
    let mut ctx = Ctx {
        stdout,
        stderr: &mut stderr,
        progress,
        layout,
        stdout_is_terminal: terminal.stdout_width.is_some(),
    };
    let result = match cli.command {
        Command::Analyze(a) => analyze::run(a, &mut ctx),
        Command::Bench(a) => bench::run(a, &mut ctx),
        Command::Lint(a) => lint::run(a, &mut ctx),
        Command::Plan(a) => plan::run(a, &mut ctx),
        Command::Rebalance(a) => rebalance::run(a, &mut ctx),
        Command::Reshard(a) => reshard::run(a, &mut ctx),
        Command::Migrate(a) => migrate::run(a, &mut ctx),
        Command::Rules(a) => rules::run(a, &mut ctx),
        Command::Code(a) => code::run(a, &mut ctx),
        Command::Scan(a) => scan::run(a, &mut ctx),
        Command::Simulate(a) => simulate::run(a, &mut ctx),
        Command::Slot(a) => slot::run(a, &mut ctx),
        Command::Verify(a) => verify::run(a, &mut ctx),
        Command::Completions(a) => completions::run(a, &mut ctx),
        Command::Man(a) => completions::run_man(a, &mut ctx),
    };
    match result {
        Ok(status) => status,
        Err(err) if is_broken_pipe(&err) => ExitStatus::Clean,
        Err(err) => {
            let err = shell_words(err);
            let _ = writeln!(ctx.stderr, "error: {err:#}");
            let help = err
                .chain()
                .find_map(|e| e.downcast_ref::<UserError>())
                .and_then(|u| u.help.clone())
                .or_else(|| shell_help(&err));
            if let Some(help) = help {
                let _ = writeln!(ctx.stderr, "  help: {help}");
            }
            ExitStatus::Error
        }
    }
}

/// An engine's typed error in the command line's words (its flags and what to do), where the
/// engine's own words name no flag.
fn shell_words(err: anyhow::Error) -> anyhow::Error {
    if let Some(e) = err.downcast_ref::<crate::migrate::MigrateError>()
        && let Some(u) = migration::words(e)
    {
        return u.into();
    }
    if let Some(u) = err.downcast_ref::<crate::migrate::balance::Unavailable>() {
        return migration::unavailable(u).into();
    }
    let flagged = |flag: &str, e: &dyn std::fmt::Display| UserError {
        title: format!("{flag} {e}"),
        help: None,
    };
    if let Some(e @ (LiveError::Url(_) | LiveError::NoTls(_))) = err.downcast_ref::<LiveError>() {
        return flagged("--cluster", e).into();
    }
    if let Some(RuleError::Unknown { choice, code }) = err.downcast_ref::<RuleError>() {
        let flag = match choice {
            RuleChoice::Select => "--select",
            RuleChoice::Ignore => "--ignore",
            RuleChoice::Severity => "--severity",
        };
        return flagged(
            flag,
            &format!("{code}: no rule has this code, prefix or name"),
        )
        .into();
    }
    if let Some(TopologyError::MastersOutOfRange(n)) = err.downcast_ref::<TopologyError>() {
        return flagged(
            "--masters",
            &format!("{n}: a cluster needs between 1 and 16384 masters"),
        )
        .into();
    }
    err
}

/// `cmd` and its subcommands with every `Examples:` command line longer than `width` broken
/// before a flag (else a space), continued with ` \` and a deeper indent, so that a wrap never
/// leaves half a command on a line of its own.
fn with_broken_examples(mut cmd: clap::Command, width: usize) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |s| with_broken_examples(s, width));
    }
    let Some(text) = cmd.get_after_help().map(|h| h.to_string()) else {
        return cmd;
    };
    // `Examples:` may follow prose (`code`); its example lines are the indented ones.
    if !text.lines().any(|l| l.trim_end() == "Examples:")
        || text.lines().all(|l| l.chars().count() <= width)
    {
        return cmd;
    }
    let lines: Vec<String> = text.lines().flat_map(|l| break_command(l, width)).collect();
    cmd.after_help(lines.join("\n"))
}

/// One example line as lines of at most `width` characters (where its words allow).
fn break_command(line: &str, width: usize) -> Vec<String> {
    if line.chars().count() <= width || !line.starts_with("  ") {
        return vec![line.to_string()];
    }
    const CONT: &str = "      ";
    let mut out = Vec::new();
    let mut cur = String::new();
    let words: Vec<&str> = line.trim_start().split(' ').collect();
    let mut i = 0;
    while i < words.len() {
        // A flag and its value stay together, where they fit on one continued line.
        let mut group = words[i].to_string();
        if words[i].starts_with("--")
            && let Some(v) = words.get(i + 1).filter(|v| !v.starts_with('-'))
            && CONT.len() + group.chars().count() + 1 + v.chars().count() + 2 <= width
        {
            group.push(' ');
            group.push_str(v);
            i += 1;
        }
        i += 1;
        let lead = if out.is_empty() { "  " } else { CONT };
        if cur.is_empty() {
            cur = format!("{lead}{group}");
        } else if cur.chars().count() + 1 + group.chars().count() + 2 <= width {
            cur.push(' ');
            cur.push_str(&group);
        } else {
            out.push(format!("{cur} \\"));
            cur = format!("{CONT}{group}");
        }
    }
    out.push(cur);
    out
}

/// What to do about an engine's typed error, in the command line's flags (the engine's own
/// words name none).
fn shell_help(err: &anyhow::Error) -> Option<String> {
    if let Some(crate::live::LiveError::Connect { addr, reason }) = err
        .chain()
        .find_map(|e| e.downcast_ref::<crate::live::LiveError>())
    {
        let (host, port) = addr.rsplit_once(':').unwrap_or((addr.as_str(), "6379"));
        return Some(if reason.to_ascii_lowercase().contains("refused") {
            format!(
                "nothing listens there: check that the server runs (`redis-cli -h {host} -p {port} ping`), that {port} is its client port (not the cluster bus port, client port + 10000) and the address is the one the servers announce"
            )
        } else {
            format!(
                "check that {addr} is reachable from here (`redis-cli -h {host} -p {port} ping`), no firewall is in the way, and give a slow network more time with KEYPLAN_TIMEOUT (seconds)"
            )
        });
    }
    if let Some(crate::keys::ReadError::Rdb(_)) = err
        .chain()
        .find_map(|e| e.downcast_ref::<crate::keys::ReadError>())
    {
        return Some(
            "the snapshot is damaged or cut short at that byte (copied while it was written?): take a fresh one with BGSAVE or `redis-cli --rdb FILE` and pass it as it is; `redis-check-rdb FILE` shows where it breaks"
                .to_string(),
        );
    }
    let e = err
        .chain()
        .find_map(|e| e.downcast_ref::<TopologyError>())?;
    Some(
        match e {
            TopologyError::Uncovered { .. } => {
                "pass --allow-partial to report them as uncovered instead"
            }
            TopologyError::Unrecognised | TopologyError::Guessed { .. } => {
                "name the format with --topology-format"
            }
            TopologyError::PoolNotChosen(_) => "choose one with --pool NAME",
            _ => return None,
        }
        .to_string(),
    )
}

#[cfg(test)]
mod help_tests {
    use super::break_command;

    #[test]
    fn long_examples_break_before_a_flag_with_a_continuation() {
        let line = "  keyplan reshard --preview --topology nodes.txt --from all --to 3c3a0c74aae0b56170ccb03a76b60cfe7dc1912e --slots 1000 --keys sample.keys";
        let lines = break_command(line, 80);
        assert!(lines.len() > 1, "{lines:?}");
        for (i, l) in lines.iter().enumerate() {
            assert!(l.chars().count() <= 80, "{l}");
            assert_eq!(l.ends_with(" \\"), i + 1 < lines.len(), "{lines:?}");
        }
        // Nothing lost, a flag never parted from its value.
        let joined: String = lines
            .iter()
            .map(|l| l.trim_end_matches(" \\").trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined, line.trim());
        assert!(
            lines
                .iter()
                .all(|l| !l.trim_end_matches(" \\").ends_with("--to"))
        );
        assert_eq!(
            break_command("  keyplan slot a", 80),
            vec!["  keyplan slot a"]
        );
    }
}
