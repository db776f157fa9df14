//! The command line: parsing (clap derive), dispatch to one file per subcommand, and the
//! mapping of results and errors to exit statuses (0 clean, 1 findings, 2 error; a closed
//! pipe on stdout is not an error).

pub mod analyze;
pub mod args;
pub mod bench;
pub mod completions;
pub mod lint;
pub mod migration;
pub mod plan;
pub mod rebalance;
pub mod reshard;
pub mod rules;
pub mod scan;
pub mod simulate;
pub mod slot;

use crate::error::{ExitStatus, UserError};
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::io::Write;

/// Plan how Redis keys spread over a Redis Cluster, before production does.
///
/// Exit status: 0 done and clean, 1 done with findings, 2 the job could not be done.
#[derive(Debug, Parser)]
#[command(name = "keyplan", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// What to do
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyze a key dump: distribution over nodes and slots, skew, hot tags, key patterns
    Analyze(analyze::AnalyzeArgs),
    /// Run batches on a live cluster with each strategy; measured next to the simulator
    Bench(bench::BenchArgs),
    /// Check a key scheme and key dumps against the rules (for CI)
    Lint(lint::LintArgs),
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
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish)
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff)
    Man(completions::ManArgs),
}

/// Context for a run: where output and diagnostics go.
pub struct Ctx<'a> {
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error.
    pub stderr: &'a mut dyn Write,
}

/// Whether an error chain is a closed pipe (`keyplan … | head`), which is not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs keyplan with `args` (program name first), writing to the given streams.
pub fn run<I, T>(args: I, stdout: &mut dyn Write, stderr: &mut dyn Write) -> ExitStatus
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
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
    let mut ctx = Ctx { stdout, stderr };
    let result = match cli.command {
        Command::Analyze(a) => analyze::run(a, &mut ctx),
        Command::Bench(a) => bench::run(a, &mut ctx),
        Command::Lint(a) => lint::run(a, &mut ctx),
        Command::Plan(a) => plan::run(a, &mut ctx),
        Command::Rebalance(a) => rebalance::run(a, &mut ctx),
        Command::Reshard(a) => reshard::run(a, &mut ctx),
        Command::Rules(a) => rules::run(a, &mut ctx),
        Command::Scan(a) => scan::run(a, &mut ctx),
        Command::Simulate(a) => simulate::run(a, &mut ctx),
        Command::Slot(a) => slot::run(a, &mut ctx),
        Command::Completions(a) => completions::run(a, &mut ctx),
        Command::Man(a) => completions::run_man(a, &mut ctx),
    };
    match result {
        Ok(status) => status,
        Err(err) if is_broken_pipe(&err) => ExitStatus::Clean,
        Err(err) => {
            let _ = writeln!(ctx.stderr, "error: {err:#}");
            if let Some(help) = err
                .chain()
                .find_map(|e| e.downcast_ref::<UserError>())
                .and_then(|u| u.help.as_deref())
            {
                let _ = writeln!(ctx.stderr, "  help: {help}");
            }
            ExitStatus::Error
        }
    }
}
