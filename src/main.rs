//! The `keyplan` binary: everything happens in the library; this only maps the exit status.
use std::process::ExitCode;

fn main() -> ExitCode {
    // Unlocked handles: each write takes the stream's lock for that write only, so a progress
    // bar drawn from another thread never waits for the whole run.
    let terminal = keyplan::cli::Terminal::detect();
    let status = keyplan::cli::run_with(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
        terminal,
    );
    ExitCode::from(status.code())
}
