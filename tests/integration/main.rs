//! The one integration-test binary (CI has two cores): every module below is a test group.
//! Its harness is libtest-mimic (`harness = false` in Cargo.toml), so that a test whose
//! server or library is missing here is reported as ignored with the reason, never as passed.
// Tests report skips and mismatches on stderr.
#![allow(clippy::print_stderr)]
mod analyze;
mod architecture;
mod bench;
mod cli;
mod cluster;
mod code;
mod commands;
mod corpus;
mod enterprise;
mod figures;
mod fuzz;
mod hostile;
mod house;
#[path = "../common/keygen.rs"]
mod keygen;
mod lint;
mod messages;
mod migrate;
mod modelfit;
mod packaging;
mod plan;
mod properties;
mod pty_tables;
mod rdb;
mod rebalance;
mod redis;
mod reports;
mod rules;
mod scripts;
mod simulate;
mod snapshots;
mod support;
mod terminal;
mod tls;
mod twemproxy;
mod vectors;
mod verdicts;
mod verify;

fn main() -> std::process::ExitCode {
    let groups: &[(&str, &[support::Test])] = &[
        ("analyze", analyze::TESTS),
        ("architecture", architecture::TESTS),
        ("bench", bench::TESTS),
        ("cli", cli::TESTS),
        ("code", code::TESTS),
        ("corpus", corpus::TESTS),
        ("commands", commands::TESTS),
        ("enterprise", enterprise::TESTS),
        ("figures", figures::TESTS),
        ("fuzz", fuzz::TESTS),
        ("hostile", hostile::TESTS),
        ("house", house::TESTS),
        ("lint", lint::TESTS),
        ("messages", messages::TESTS),
        ("migrate", migrate::TESTS),
        ("packaging", packaging::TESTS),
        ("modelfit", modelfit::TESTS),
        ("plan", plan::TESTS),
        ("properties", properties::TESTS),
        ("pty_tables", pty_tables::TESTS),
        ("rdb", rdb::TESTS),
        ("rebalance", rebalance::TESTS),
        ("redis", redis::TESTS),
        ("reports", reports::TESTS),
        ("rules", rules::TESTS),
        ("scripts", scripts::TESTS),
        ("simulate", simulate::TESTS),
        ("snapshots", snapshots::TESTS),
        ("terminal", terminal::TESTS),
        ("twemproxy", twemproxy::TESTS),
        ("vectors", vectors::TESTS),
        ("verdicts", verdicts::TESTS),
        ("verify", verify::TESTS),
        #[cfg(feature = "tls")]
        ("tls", tls::TESTS),
    ];
    // maturin relinks the test build's `keyplan` binary while it builds the wheel: done
    // before any test runs, so that no test finds the binary missing mid-link.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if filters.is_empty()
        || filters
            .iter()
            .any(|f| "packaging::".contains(f.as_str()) || f.starts_with("packaging"))
    {
        packaging::prebuild_wheel();
    }
    support::run_tests(groups, &[])
}
