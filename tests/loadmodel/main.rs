//! The load model's test against a real cluster, in its own test binary: cargo runs test
//! binaries one after another, so its calibration and measurements share the two cores with
//! no other test (the integration binary's tests run in parallel and would skew the timings).
#![allow(clippy::print_stderr)]
#![allow(dead_code)]
#[path = "../integration/cluster.rs"]
mod cluster;
#[path = "../integration/loadmodel.rs"]
mod loadmodel;
#[path = "../integration/support.rs"]
mod support;
