//! `keyplan bench --calibrate`: short micro-benchmarks of bench's own keys that measure what
//! the load model needs on the real cluster (the lone-client latency of round trips, lanes,
//! commands and keys; the CPU an execution costs under load; the latency distribution), fitted
//! into a versioned calibration file. It never runs the user's batches.

use super::{BenchError, BenchOptions, BenchResult, BenchStep, prefixed, run_pairs};
use crate::live::LiveCluster;
use crate::simulate::exec::{LaneLoad, exec_plan, onto_one_tag};
use crate::simulate::perf::{self, Coefs, Features, PerfParams};
use crate::simulate::{Batch, Strategy, parse_batches};
use crate::topology::{SlotMap, Topology};
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;

/// The calibration file's `schema_version`.
pub const CALIBRATION_VERSION: u32 = 1;

/// Concurrency levels the calibration measures.
pub const LEVELS: [usize; 2] = [1, 16];

/// A calibration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    /// Always [`CALIBRATION_VERSION`].
    pub schema_version: u32,
    /// Always `keyplan-calibration`.
    pub kind: String,
    /// What it was measured on.
    pub measured_on: MeasuredOn,
    /// Lone-client latency of one GET round trip, µs.
    pub round_trip_us: Summary,
    /// The fitted model parameters.
    pub params: PerfParams,
    /// Every micro-benchmark: its plan's features, what was measured, what the fit predicts.
    pub points: Vec<Point>,
}

impl Calibration {
    /// How many micro-benchmarks the fitted model predicts within `lo`–`hi`× of their
    /// measured QPS.
    pub fn predicted_within(&self, lo: f64, hi: f64) -> usize {
        let ratio = |p: &Point| p.predicted_qps / p.qps;
        self.points
            .iter()
            .filter(|p| p.qps > 0.0 && (lo..=hi).contains(&ratio(p)))
            .count()
    }
}

/// Where a calibration was measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MeasuredOn {
    /// The cluster (password masked).
    pub cluster: String,
    /// Masters.
    pub masters: usize,
    /// Cores of the machine keyplan ran on.
    pub client_cores: usize,
    /// Whether every node was on this machine (loopback): then the servers share its CPU.
    pub loopback: bool,
    /// keyplan's version.
    pub keyplan: String,
    /// Seconds each micro-benchmark ran.
    pub duration_s: f64,
}

/// A distribution's mean and percentiles.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Summary {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// One micro-benchmark.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// What ran (bench's own keys).
    pub batch: String,
    /// The strategy.
    pub strategy: String,
    /// Concurrent clients.
    pub concurrency: usize,
    /// The plan's waves, lanes, commands, keys, KiB.
    pub features: [f64; 5],
    /// Measured batches per second.
    pub qps: f64,
    /// Measured mean, median and 99th percentile latency, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// What the fitted model predicts for it (qps).
    pub predicted_qps: f64,
}

/// Why a calibration file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// Not JSON of the right shape.
    #[error("not a keyplan calibration file: {0}")]
    Shape(String),
    /// Another version.
    #[error(
        "calibration schema_version {0} is not {CALIBRATION_VERSION}: measure again with `keyplan bench --calibrate`"
    )]
    Version(u32),
    /// Figures no model can use.
    #[error("{0}: measure again with `keyplan bench --calibrate`")]
    Values(String),
}

impl Calibration {
    /// Reads and checks a calibration file's text.
    pub fn parse(text: &str) -> Result<Calibration, CalibrationError> {
        #[derive(Deserialize)]
        struct Head {
            schema_version: Option<u32>,
            kind: Option<String>,
        }
        let shape = |e: serde_json::Error| CalibrationError::Shape(e.to_string());
        let head: Head = serde_json::from_str(text).map_err(shape)?;
        if head.kind.as_deref() != Some("keyplan-calibration") {
            return Err(CalibrationError::Shape(
                "no \"kind\": \"keyplan-calibration\"".into(),
            ));
        }
        match head.schema_version {
            Some(CALIBRATION_VERSION) => {}
            Some(v) => return Err(CalibrationError::Version(v)),
            None => return Err(CalibrationError::Shape("no schema_version".into())),
        }
        let c: Calibration = serde_json::from_str(text).map_err(shape)?;
        let p = &c.params;
        let all = [p.latency, p.cpu, p.node]
            .iter()
            .flat_map(perf::coefs_array)
            .chain([p.cores])
            .collect::<Vec<f64>>();
        if all.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(CalibrationError::Values(
                "a coefficient is negative or not a number".into(),
            ));
        }
        if p.latency.wave_us <= 0.0 || p.cores < 1.0 {
            return Err(CalibrationError::Values(
                "the round trip must be positive and cores at least 1".into(),
            ));
        }
        c.check_model()?;
        Ok(c)
    }

    /// Checks the figures as a model, not only as JSON: every figure one a machine can have
    /// measured, the quantiles in order, at least one micro-benchmark.
    fn check_model(&self) -> Result<(), CalibrationError> {
        let bad = |what: String| Err(CalibrationError::Values(what));
        let p = &self.params;
        for (name, c) in [("latency", &p.latency), ("cpu", &p.cpu), ("node", &p.node)] {
            if let Some(x) = perf::coefs_array(c).into_iter().find(|x| *x > MAX_COEF_US) {
                return bad(format!(
                    "params.{name} has a coefficient of {} µs, more than a second per unit of work: no machine measured that",
                    compact(x)
                ));
            }
        }
        if p.cores > MAX_CORES {
            return bad(format!(
                "params.cores is {}, more than {MAX_CORES}",
                compact(p.cores)
            ));
        }
        let j = &p.jitter;
        let (lo, hi) = JITTER_RANGE;
        if let Some((i, x)) = j.iter().enumerate().find(|(_, x)| !(lo..=hi).contains(*x)) {
            return bad(format!(
                "params.jitter[{i}] is {}: each of the 101 quantiles (latency over its mean) must be between {lo} and {hi}",
                compact(*x)
            ));
        }
        if j.windows(2).any(|w| w[1] < w[0]) {
            return bad("params.jitter: the quantiles must not decrease".into());
        }
        if j[50] <= 0.0 || j[99] <= 0.0 {
            return bad("params.jitter: the median and the 99th percentile must be above 0".into());
        }
        let mean = j.iter().sum::<f64>() / j.len() as f64;
        let (lo, hi) = JITTER_MEAN;
        if !(lo..=hi).contains(&mean) {
            return bad(format!(
                "params.jitter: the quantiles average {}, where quantiles over the mean average 1: their mean must be between {lo} and {hi}",
                compact(mean)
            ));
        }
        if j[50] < JITTER_MIN_MEDIAN {
            return bad(format!(
                "params.jitter[50] (the median) is {}: it must be at least {JITTER_MIN_MEDIAN} of the mean",
                compact(j[50])
            ));
        }
        let rt = &self.round_trip_us;
        let figures = [
            ("mean", rt.mean),
            ("p50", rt.p50),
            ("p90", rt.p90),
            ("p99", rt.p99),
        ];
        if let Some((name, x)) = figures
            .iter()
            .find(|(_, x)| !x.is_finite() || *x < MIN_ROUND_TRIP_US || *x > MAX_COEF_US)
        {
            return bad(format!(
                "round_trip_us.{name} is {} µs: each figure must be between {MIN_ROUND_TRIP_US} µs and a second ({MAX_COEF_US:e} µs)",
                compact(*x)
            ));
        }
        if !(rt.p50 <= rt.p90 && rt.p90 <= rt.p99) {
            return bad("round_trip_us: p50, p90 and p99 must not decrease".into());
        }
        if self.points.is_empty() {
            return bad("points is empty: no micro-benchmark was measured".into());
        }
        for (i, pt) in self.points.iter().enumerate() {
            let figures = [pt.qps, pt.mean_ms, pt.p50_ms, pt.p99_ms, pt.predicted_qps];
            if figures.iter().any(|x| !x.is_finite() || *x < 0.0) || pt.qps <= 0.0 {
                return bad(format!(
                    "points[{i}]: a figure is negative, zero QPS or not a number"
                ));
            }
            if pt.p50_ms > pt.p99_ms {
                return bad(format!("points[{i}]: p50_ms is above p99_ms"));
            }
        }
        if self.measured_on.masters == 0
            || self.measured_on.duration_s.is_nan()
            || self.measured_on.duration_s <= 0.0
        {
            return bad("measured_on: no masters or no duration".into());
        }
        Ok(())
    }
}

/// The largest per-unit coefficient (µs) a calibration may hold: a second.
const MAX_COEF_US: f64 = 1e6;

/// The most cores a calibration may name.
const MAX_CORES: f64 = 4096.0;

/// The range of each jitter quantile: latencies over their mean, so none is negative, and none
/// is above 101 (where the other 100 would all be 0).
const JITTER_RANGE: (f64, f64) = (0.0, 101.0);

/// The range of the jitter quantiles' own mean: `bench --calibrate` makes it 1.
const JITTER_MEAN: (f64, f64) = (0.5, 2.0);

/// The least median latency, over the mean, a calibration may hold.
const JITTER_MIN_MEDIAN: f64 = 0.01;

/// The shortest round trip a calibration may hold, µs: no network answers faster.
const MIN_ROUND_TRIP_US: f64 = 0.1;

/// A number as a message shows it: as written for ordinary sizes, in exponent form for huge
/// and tiny ones (`1e308`, not 309 digits).
pub fn compact(x: f64) -> String {
    let a = x.abs();
    if x.is_finite() && a != 0.0 && !(1e-4..1e9).contains(&a) {
        // Four significant digits, trailing zeros dropped: 1.0000000000000014e-308 → 1e-308.
        let text = format!("{x:.3e}");
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        format!("{mantissa}e{exp}")
    } else {
        format!("{x}")
    }
}

/// The micro-benchmarks: (batch text, strategy). Shapes the user's batches are made of (one
/// round trip; lanes fanned out over nodes and slots; commands in a pipeline; keys in one
/// command), in sizes of their own.
fn shapes() -> Vec<(String, Strategy)> {
    let spread = |n: usize| {
        (0..n)
            .map(|i| format!("cal:s{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut v = vec![("GET cal:one".to_string(), Strategy::Serial)];
    for n in [4, 16, 64, 128] {
        v.push((format!("MGET {}", spread(n)), Strategy::Hashtag));
    }
    for n in [4, 16] {
        let gets: Vec<String> = (0..n).map(|i| format!("GET cal:p{i}")).collect();
        v.push((format!("PIPELINE {}", gets.join("; ")), Strategy::Hashtag));
    }
    for s in [
        Strategy::Serial,
        Strategy::Pipeline,
        Strategy::Parallel,
        Strategy::SlotParallel,
    ] {
        v.push((format!("MGET {}", spread(24)), s));
    }
    v.push((format!("MGET {}", spread(6)), Strategy::SlotParallel));
    v.push((format!("MGET {}", spread(96)), Strategy::Parallel));
    v
}

/// The features of `b`'s plan under `s` (as bench executes it, under `prefix`).
pub fn plan_features(
    b: &Batch,
    topo: &Topology,
    s: Strategy,
    prefix: &str,
) -> Option<(Features, Vec<Vec<LaneLoad>>)> {
    let input = if s == Strategy::Hashtag {
        prefixed(&onto_one_tag(b), prefix)
    } else {
        prefixed(b, prefix)
    };
    let plan = exec_plan(&input, topo, s).ok()?;
    let waves = plan.lane_loads();
    Some((features_of(&waves), waves))
}

/// The features of waves of lanes.
pub fn features_of(waves: &[Vec<LaneLoad>]) -> Features {
    let mut f = Features {
        executions: 1.0,
        ..Features::default()
    };
    for w in waves {
        f.waves += 1.0;
        for l in w {
            f.lanes += 1.0;
            f.commands += l.commands as f64;
            f.keys += l.keys as f64;
            f.kib += l.bytes as f64 / 1024.0;
        }
    }
    f
}

fn summary(sorted_ms: &[f64]) -> Summary {
    let q = |f: f64| {
        if sorted_ms.is_empty() {
            0.0
        } else {
            sorted_ms[((sorted_ms.len() - 1) as f64 * f).round() as usize] * 1000.0
        }
    };
    Summary {
        mean: sorted_ms.iter().sum::<f64>() / sorted_ms.len().max(1) as f64 * 1000.0,
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
    }
}

/// Runs the micro-benchmarks under `opts.prefix` (each for `opts.duration`, at every level of
/// [`LEVELS`]) and fits the model. Keys are written, journaled and deleted as bench does.
pub fn calibrate(
    live: &LiveCluster,
    map: &SlotMap,
    opts: &BenchOptions,
    records: &dyn super::record::Records,
    stop: &AtomicBool,
    observe: &mut dyn FnMut(BenchStep<'_>),
) -> Result<Calibration, BenchError> {
    let topo = Topology::Cluster(map.clone());
    let shapes = shapes();
    let batches: Vec<Batch> = shapes
        .iter()
        .map(|(text, _)| {
            parse_batches(text)
                .expect("invariant: calibration batches parse")
                .remove(0)
        })
        .collect();
    let pairs: Vec<(&Batch, Strategy)> = batches
        .iter()
        .zip(&shapes)
        .map(|(b, (_, s))| (b, *s))
        .collect();
    let mut results: Vec<(usize, Vec<BenchResult>)> = Vec::new();
    for level in LEVELS {
        let o = BenchOptions {
            concurrency: level,
            ..opts.clone()
        };
        results.push((
            level,
            run_pairs(live, map, &pairs, &o, records, stop, observe)?,
        ));
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let loopback = map.nodes().iter().all(|n| {
        n.address.as_deref().is_some_and(|a| {
            a.starts_with("127.") || a.starts_with("[::1]") || a.starts_with("localhost")
        })
    });
    let feats: Vec<Features> = batches
        .iter()
        .zip(&shapes)
        .map(|(b, (_, s))| {
            plan_features(b, &topo, *s, &opts.prefix)
                .map(|(f, _)| f)
                .unwrap_or_default()
        })
        .collect();
    let (lone, loaded) = (&results[0].1, &results[results.len() - 1].1);
    // Lone-client latency: the mean of each shape at concurrency 1.
    let lat_rows: Vec<(Features, f64)> = feats
        .iter()
        .zip(lone)
        .map(|(f, r)| (*f, r.measured.mean_ms * 1000.0))
        .collect();
    let latency = perf::fit(&lat_rows, [None; 6]);
    // CPU under load: with every core busy, one execution costs cores / throughput.
    let cpu_rows: Vec<(Features, f64)> = feats
        .iter()
        .zip(loaded)
        .filter(|(_, r)| r.measured.qps > 0.0)
        .map(|(f, r)| (*f, cores as f64 * 1e6 / r.measured.qps))
        .collect();
    let cpu = perf::fit(&cpu_rows, [None; 6]);
    // The latency distribution of one round trip of a 16-key MGET (a steady, common shape).
    let mut samples: Vec<f64> = lone[2].measured.latencies.clone();
    samples.sort_by(f64::total_cmp);
    let mut round_trip: Vec<f64> = lone[0].measured.latencies.clone();
    round_trip.sort_by(f64::total_cmp);
    let jitter = perf::jitter_of(&samples).unwrap_or_else(perf::default_jitter);
    // A node thread's share of the CPU: the share that best predicts the loaded runs.
    let level = LEVELS[LEVELS.len() - 1] as u32;
    let mut best: Option<(f64, Coefs)> = None;
    for share in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0] {
        let node = scale(&cpu, share);
        let p = PerfParams {
            latency,
            cpu,
            cores: cores as f64,
            node,
            jitter,
        };
        let err: f64 = batches
            .iter()
            .zip(&shapes)
            .zip(loaded)
            .filter_map(|((b, (_, s)), r)| {
                let (_, waves) = plan_features(b, &topo, *s, &opts.prefix)?;
                let d = perf::demands(&waves, topo.nodes().len(), &p, None);
                let q = perf::predict(&d, &p, level).qps;
                (r.measured.qps > 0.0 && q > 0.0).then(|| (q / r.measured.qps).ln().powi(2))
            })
            .sum();
        if best.as_ref().is_none_or(|(e, _)| err < *e) {
            best = Some((err, node));
        }
    }
    let node = best.map(|(_, n)| n).unwrap_or_default();
    let params = PerfParams {
        latency,
        cpu,
        cores: cores as f64,
        node,
        jitter,
    };
    let mut points = Vec::new();
    for (level, rs) in &results {
        for ((b, (_, s)), (f, r)) in batches.iter().zip(&shapes).zip(feats.iter().zip(rs)) {
            let predicted_qps = plan_features(b, &topo, *s, &opts.prefix)
                .map(|(_, waves)| {
                    let d = perf::demands(&waves, topo.nodes().len(), &params, None);
                    perf::predict(&d, &params, *level as u32).qps
                })
                .unwrap_or(0.0);
            points.push(Point {
                batch: b.name.clone(),
                strategy: s.name().to_string(),
                concurrency: *level,
                features: [f.waves, f.lanes, f.commands, f.keys, f.kib],
                qps: r.measured.qps,
                mean_ms: r.measured.mean_ms,
                p50_ms: r.measured.p50_ms,
                p99_ms: r.measured.p99_ms,
                predicted_qps,
            });
        }
    }
    Ok(Calibration {
        schema_version: CALIBRATION_VERSION,
        kind: "keyplan-calibration".into(),
        measured_on: MeasuredOn {
            cluster: live.url_text(),
            masters: map.nodes().len(),
            client_cores: cores,
            loopback,
            keyplan: env!("CARGO_PKG_VERSION").into(),
            duration_s: opts.duration.as_secs_f64(),
        },
        round_trip_us: summary(&round_trip),
        params,
        points,
    })
}

fn scale(c: &Coefs, k: f64) -> Coefs {
    Coefs {
        execution_us: c.execution_us * k,
        wave_us: c.wave_us * k,
        lane_us: c.lane_us * k,
        command_us: c.command_us * k,
        key_us: c.key_us * k,
        kib_us: c.kib_us * k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL: &str = include_str!("../../examples/calibration-loopback.json");

    /// The real calibration with one change made by `f` to its JSON.
    fn altered(f: impl FnOnce(&mut serde_json::Value)) -> Result<Calibration, CalibrationError> {
        let mut v: serde_json::Value = serde_json::from_str(REAL).unwrap();
        f(&mut v);
        Calibration::parse(&v.to_string())
    }

    #[test]
    fn a_real_calibration_is_a_model() {
        let c = Calibration::parse(REAL).unwrap();
        assert!(!c.points.is_empty());
    }

    #[test]
    fn figures_no_machine_measured_are_refused() {
        type Change = Box<dyn FnOnce(&mut serde_json::Value)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "coefficient",
                Box::new(|v| v["params"]["latency"]["wave_us"] = 1e308.into()),
            ),
            (
                "coefficient",
                Box::new(|v| v["params"]["cpu"]["key_us"] = 5e6.into()),
            ),
            ("cores", Box::new(|v| v["params"]["cores"] = 1e308.into())),
            (
                "median",
                Box::new(|v| v["params"]["jitter"] = vec![0.0; 101].into()),
            ),
            (
                "decrease",
                Box::new(|v| {
                    let mut j: Vec<f64> = (0..101).map(|i| 2.0 - i as f64 / 100.0).collect();
                    j[0] = 2.0;
                    v["params"]["jitter"] = j.into();
                }),
            ),
            (
                "round_trip_us",
                Box::new(|v| v["round_trip_us"]["p50"] = 0.0.into()),
            ),
            (
                "round_trip_us",
                Box::new(|v| v["round_trip_us"]["mean"] = (-3.0).into()),
            ),
            (
                "round_trip_us",
                Box::new(|v| v["round_trip_us"]["p99"] = 1.0.into()),
            ),
            (
                "points is empty",
                Box::new(|v| v["points"] = serde_json::json!([])),
            ),
            (
                "points[0]",
                Box::new(|v| v["points"][0]["qps"] = 0.0.into()),
            ),
            // Jitter of extreme magnitude: each quantile, their mean and the median in range.
            (
                "params.jitter[0] is 1e308: each of the 101 quantiles (latency over its mean) must be between 0 and 101",
                Box::new(|v| v["params"]["jitter"] = vec![1e308; 101].into()),
            ),
            (
                "params.jitter: the quantiles average 1e-308",
                Box::new(|v| v["params"]["jitter"] = vec![1e-308; 101].into()),
            ),
            (
                "params.jitter[100] is 1e200",
                Box::new(|v| v["params"]["jitter"][100] = 1e200.into()),
            ),
            (
                "params.jitter[50] (the median) is 1e-308",
                Box::new(|v| {
                    for i in 0..=50 {
                        v["params"]["jitter"][i] = 1e-308.into();
                    }
                    v["params"]["jitter"][100] = 60.0.into();
                }),
            ),
            (
                "round_trip_us.p50 is 1e-308 µs: each figure must be between 0.1 µs and a second (1e6 µs)",
                Box::new(|v| v["round_trip_us"]["p50"] = 1e-308.into()),
            ),
        ];
        for (want, f) in cases {
            let e = altered(f).expect_err(want);
            assert!(e.to_string().contains(want), "{want}: {e}");
            assert!(e.to_string().contains("measure again"), "{e}");
        }
    }

    #[test]
    fn huge_numbers_are_written_short() {
        let e = altered(|v| v["params"]["cores"] = 1e308.into()).unwrap_err();
        assert!(e.to_string().contains("params.cores is 1e308,"), "{e}");
        let e = altered(|v| v["params"]["latency"]["wave_us"] = 1e300.into()).unwrap_err();
        assert!(e.to_string().contains("coefficient of 1e300 µs"), "{e}");
        // serde's own messages too (a float where an integer belongs).
        let e = altered(|v| v["measured_on"]["masters"] = (-1e308).into()).unwrap_err();
        let text = e.to_string();
        assert!(!text.contains("0000000000000000"), "{text}");
        assert!(text.len() < 200, "{text}");
        assert_eq!(compact(0.5), "0.5");
        assert_eq!(compact(4096.0), "4096");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(1e-308), "1e-308");
        assert_eq!(compact(1.0000000000000014e-308), "1e-308");
        assert_eq!(compact(-2.5e12), "-2.5e12");
    }

    #[test]
    fn a_noisy_calibration_is_said_to_be() {
        let c = altered(|v| v["round_trip_us"]["p99"] = 6000.0.into()).unwrap();
        let mut net = crate::simulate::NetworkModel::calibrated(c.params, None);
        net.measured_round_trip_ms = Some([c.round_trip_us.p50 / 1000.0, 6.0]);
        assert!(net.noisy_calibration().unwrap().contains("noisy machine"));
        net.measured_round_trip_ms = Some([0.055, 0.081]);
        assert_eq!(net.noisy_calibration(), None);
    }
}
