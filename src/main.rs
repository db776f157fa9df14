//! The `keyplan` binary: everything happens in the library; this only maps the exit status.
use std::process::ExitCode;

fn main() -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let status = keyplan::cli::run(std::env::args_os(), &mut stdout.lock(), &mut stderr.lock());
    ExitCode::from(status.code())
}
