//! The one integration-test binary (CI has two cores): every module below is a test group.
// Tests report skips and mismatches on stderr.
#![allow(clippy::print_stderr)]
mod analyze;
mod architecture;
mod bench;
mod cli;
mod cluster;
mod commands;
mod fuzz;
mod hostile;
mod house;
#[path = "../common/keygen.rs"]
mod keygen;
mod lint;
mod messages;
mod plan;
mod properties;
mod rdb;
mod rebalance;
mod redis;
mod reports;
mod rules;
mod simulate;
mod snapshots;
mod support;
mod terminal;
mod tls;
mod twemproxy;
mod vectors;
mod verdicts;
