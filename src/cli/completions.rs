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
        clap_mangen::generate_to(cmd.clone(), dir)
            .with_context(|| format!("cannot write the man pages into '{}'", dir.display()))?;
        fn pages(c: &clap::Command) -> usize {
            1 + c.get_subcommands().map(pages).sum::<usize>()
        }
        let pages = pages(&cmd);
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
    clap_mangen::Man::new(page).render(&mut *ctx.stdout)?;
    Ok(ExitStatus::Clean)
}
