//! `keyplan completions SHELL` and `keyplan man`: shell completion scripts and the man page,
//! generated from the same clap definitions as `--help`.

use super::{Cli, Ctx};
use crate::error::ExitStatus;
use clap::CommandFactory;

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

/// Print the man page (roff): `keyplan man > keyplan.1 && man ./keyplan.1`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {}

/// Runs `keyplan man`.
pub fn run_man(_args: ManArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let cmd = Cli::command();
    clap_mangen::Man::new(cmd).render(&mut *ctx.stdout)?;
    Ok(ExitStatus::Clean)
}
