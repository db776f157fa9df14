//! The load model against a real cluster, in its own test binary and only on request (`cargo
//! test --test loadmodel -- --ignored`): cargo runs test binaries one after another, so its
//! calibration and measurements share the two cores with no other test.
#![allow(clippy::print_stderr)]
#![allow(dead_code)]
#[path = "../integration/cluster.rs"]
mod cluster;
#[path = "../integration/loadmodel.rs"]
mod loadmodel;
#[path = "../integration/modelfit.rs"]
mod modelfit;
#[path = "../integration/support.rs"]
mod support;

/// The load model's timing test is a benchmark: it compares predictions with measurements
/// on this machine's two cores, and a busy machine decides it as much as the model does. So it
/// runs only when asked: `cargo test --test loadmodel -- --ignored`. The model itself is
/// tested in the default run on measurements recorded from a real cluster.
fn main() -> std::process::ExitCode {
    support::run_tests(
        &[("loadmodel", loadmodel::TESTS)],
        &["loadmodel::calibrated_predictions_match_a_real_cluster"],
    )
}
