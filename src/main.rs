//! The `keyplan` binary: everything happens in the library; this only maps the exit status.
use std::process::ExitCode;

fn main() -> ExitCode {
    // Unlocked handles: each write takes the stream's lock for that write only, so a progress
    // bar drawn from another thread never waits for the whole run.
    let terminal = keyplan::cli::Terminal::detect();
    // `KEYPLAN_SIMD=avx2|portable` holds the bulk slot scan to a lower path (benchmarks
    // compare the paths on one machine); anything else leaves the CPU's best.
    match std::env::var("KEYPLAN_SIMD").as_deref() {
        Ok("portable") => {
            keyplan::slot::bulk::SimdPath::limit(keyplan::slot::bulk::SimdPath::Portable)
        }
        Ok("avx2") => keyplan::slot::bulk::SimdPath::limit(keyplan::slot::bulk::SimdPath::Avx2),
        _ => {}
    }
    let status = keyplan::cli::run_with(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
        terminal,
    );
    ExitCode::from(status.code())
}
