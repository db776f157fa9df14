//! The load model: what a batch costs in latency and throughput under concurrency.
//!
//! An execution plan is reduced to its *features*: one execution (a fixed cost), waves (round
//! trips waited on one after another), lanes (one connection's pipeline in a wave), commands,
//! keys and request KiB. Three
//! linear cost functions of the features, with coefficients calibrated on the real cluster
//! (`keyplan bench --calibrate`) or documented defaults, give:
//!
//! * `latency`: the time of one execution by a lone client (µs): per wave the round trip, per
//!   extra lane the client's send and receive on one more connection, per command and key the
//!   work on both sides;
//! * `cpu`: the CPU one execution costs on the machine the client shares with the servers (or
//!   the client's own machine), over `cores` cores;
//! * `node`: what one execution costs a node's single thread, per node of the plan.
//!
//! Means under concurrency come from mean-value analysis (MVA) of a closed network: N clients,
//! each starting its next batch as soon as the last one is answered; the CPU a multi-server
//! station, every node a single-threaded queue, and the lone-client latency the floor (the
//! response time at N = 1 is exactly `latency`). Percentiles come from a seeded Monte-Carlo
//! simulation around MVA's mean (see [`predict_waves`]).

use serde::{Deserialize, Serialize};

/// The features of one execution plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Features {
    /// Executions (1 for one plan: the per-execution fixed cost).
    pub executions: f64,
    /// Round trips waited on one after another.
    pub waves: f64,
    /// Pipelines on one connection each (summed over waves).
    pub lanes: f64,
    /// Commands.
    pub commands: f64,
    /// Keys addressed.
    pub keys: f64,
    /// Request KiB.
    pub kib: f64,
}

/// Coefficients of one linear cost function, in µs per unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Coefs {
    /// Per execution (fixed).
    #[serde(default)]
    pub execution_us: f64,
    /// Per wave.
    pub wave_us: f64,
    /// Per lane.
    pub lane_us: f64,
    /// Per command.
    pub command_us: f64,
    /// Per key.
    pub key_us: f64,
    /// Per KiB of request.
    pub kib_us: f64,
}

impl Coefs {
    /// The cost of `f`.
    pub fn of(&self, f: &Features) -> f64 {
        self.execution_us * f.executions
            + self.wave_us * f.waves
            + self.lane_us * f.lanes
            + self.command_us * f.commands
            + self.key_us * f.keys
            + self.kib_us * f.kib
    }

    fn as_array(&self) -> [f64; 6] {
        [
            self.execution_us,
            self.wave_us,
            self.lane_us,
            self.command_us,
            self.key_us,
            self.kib_us,
        ]
    }

    fn from_array(a: [f64; 6]) -> Coefs {
        Coefs {
            execution_us: a[0],
            wave_us: a[1],
            lane_us: a[2],
            command_us: a[3],
            key_us: a[4],
            kib_us: a[5],
        }
    }
}

/// Quantiles of the lone-client latency over its mean (101 points: 0%, 1%, …, 100%).
pub type Jitter = [f64; 101];

/// Default time per key (µs), as measured on loopback.
pub const DEFAULT_KEY_US: f64 = 0.19;

/// The default client→server bandwidth, MB/s (10 Gbit/s).
pub const DEFAULT_BANDWIDTH_MB_S: f64 = 1250.0;

/// The default round trip of one wave, ms.
pub const DEFAULT_RTT_MS: f64 = 0.5;

/// The calibrated (or default) parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerfParams {
    /// Lone-client latency of an execution.
    pub latency: Coefs,
    /// CPU per execution on the shared machine.
    pub cpu: Coefs,
    /// Cores of that machine.
    pub cores: f64,
    /// A node thread's time per execution (of the lanes it serves).
    pub node: Coefs,
    /// The lone-client latency distribution, as quantiles over the mean.
    #[serde(with = "jitter_serde")]
    pub jitter: Jitter,
}

mod jitter_serde {
    use super::Jitter;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(j: &Jitter, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(j.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Jitter, D::Error> {
        let v: Vec<f64> = Vec::deserialize(d)?;
        let mut j = [0.0; 101];
        if v.len() != 101 || v.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(serde::de::Error::custom(
                "jitter must list 101 non-negative quantiles",
            ));
        }
        j.copy_from_slice(&v);
        Ok(j)
    }
}

impl PerfParams {
    /// The documented defaults, measured with `keyplan bench --calibrate` on a 3-master
    /// cluster on this project's 2-core test machine (loopback), with the round trip of a wave
    /// set to `rtt_us`: what an uncalibrated prediction uses.
    pub fn defaults(rtt_us: f64) -> PerfParams {
        PerfParams {
            latency: Coefs {
                execution_us: 20.0,
                wave_us: rtt_us,
                lane_us: 5.2,
                command_us: 0.07,
                key_us: DEFAULT_KEY_US,
                kib_us: 0.8,
            },
            cpu: Coefs {
                execution_us: 0.4,
                wave_us: 6.6,
                lane_us: 12.0,
                command_us: 0.36,
                key_us: 0.11,
                kib_us: 0.0,
            },
            cores: 2.0,
            // A node's single thread on its own machine: a read and a write per lane, the
            // commands and keys (measured with the servers alone on the cores: the node
            // calibrated on loopback shares the CPU, so the calibration's own is smaller).
            node: Coefs {
                execution_us: 0.0,
                wave_us: 0.0,
                lane_us: 4.0,
                command_us: 0.36,
                key_us: 0.11,
                kib_us: 0.0,
            },
            jitter: default_jitter(),
        }
    }
}

/// The latency distribution of one 16-key MGET round trip on loopback, as `bench
/// --calibrate` measured it on this project's test machine (quantiles over the mean).
const LOOPBACK_JITTER: Jitter = [
    0.382, 0.758, 0.763, 0.767, 0.770, 0.773, 0.775, 0.777, 0.779, 0.782, 0.785, 0.787, 0.791,
    0.797, 0.815, 0.845, 0.851, 0.856, 0.860, 0.863, 0.866, 0.869, 0.872, 0.875, 0.878, 0.882,
    0.885, 0.889, 0.897, 0.911, 0.920, 0.925, 0.929, 0.933, 0.937, 0.943, 0.947, 0.952, 0.955,
    0.958, 0.960, 0.962, 0.965, 0.968, 0.970, 0.973, 0.975, 0.978, 0.981, 0.983, 0.986, 0.988,
    0.991, 0.994, 0.997, 1.001, 1.005, 1.009, 1.014, 1.018, 1.021, 1.025, 1.027, 1.030, 1.033,
    1.035, 1.037, 1.040, 1.043, 1.045, 1.048, 1.051, 1.055, 1.058, 1.063, 1.068, 1.073, 1.077,
    1.081, 1.085, 1.088, 1.090, 1.092, 1.094, 1.096, 1.098, 1.100, 1.101, 1.103, 1.105, 1.107,
    1.109, 1.111, 1.114, 1.118, 1.122, 1.128, 1.137, 1.193, 1.345, 4.035,
];

/// The default latency distribution: a loopback round trip's jitter as measured on a
/// 2-core machine (`LOOPBACK_JITTER`).
pub fn default_jitter() -> Jitter {
    LOOPBACK_JITTER
}

/// Scales quantiles so that their mean is 1.
fn normalize(j: &mut Jitter) {
    let mean = j.iter().sum::<f64>() / j.len() as f64;
    if mean > 0.0 {
        for q in j.iter_mut() {
            *q /= mean;
        }
    }
}

/// Quantiles over the mean of latency samples (any order); the maximum is held to 3× the
/// 99th percentile so that one stall does not shape every prediction.
pub fn jitter_of(samples: &[f64]) -> Option<Jitter> {
    let mut s: Vec<f64> = samples
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if s.len() < 20 {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let mut j = [0.0; 101];
    for (i, q) in j.iter_mut().enumerate() {
        let at = ((s.len() - 1) as f64 * i as f64 / 100.0).round() as usize;
        *q = s[at];
    }
    j[100] = j[100].min(3.0 * j[99]);
    normalize(&mut j);
    Some(j)
}

/// A distribution of the requests over the nodes: `share` of them go to the hottest
/// `nodes_share` of the nodes; [`Hot::UNIFORM`] spreads them evenly.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hot {
    /// Share of requests (0.8 for 80/20).
    pub share: f64,
    /// Share of nodes (0.2 for 80/20).
    pub nodes_share: f64,
}

impl Hot {
    /// Every node the same share.
    pub const UNIFORM: Hot = Hot {
        share: 0.0,
        nodes_share: 0.0,
    };

    /// `SHARE/NODES` in percent (`80/20`: 80% of the requests to 20% of the nodes), or
    /// `uniform`.
    pub fn parse(text: &str) -> Result<Hot, NotHot> {
        if text == "uniform" {
            return Ok(Hot::UNIFORM);
        }
        let pct = |t: &str| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|p| *p > 0.0 && *p < 100.0)
        };
        match text.split_once('/').map(|(a, b)| (pct(a), pct(b))) {
            Some((Some(share), Some(nodes))) => Ok(Hot {
                share: share / 100.0,
                nodes_share: nodes / 100.0,
            }),
            _ => Err(NotHot),
        }
    }
}

/// `--hot-nodes` that is neither `SHARE/NODES` nor `uniform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "not SHARE/NODES percentages: give two percentages between 0 and 100, e.g. 80/20, or uniform"
)]
pub struct NotHot;

/// What the model predicts for one batch at one concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// Concurrent clients.
    pub concurrency: u32,
    /// Batches per second, all clients together.
    pub qps: f64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// The busiest station and its utilisation (`cpu` or a node's index as `node N`).
    pub bottleneck: &'static str,
    /// Its utilisation, 0..1.
    pub utilization: f64,
}

/// One execution's demands: lone latency (µs), CPU (µs) and per-node thread time (µs).
#[derive(Debug, Clone, PartialEq)]
pub struct Demands {
    /// Lone-client latency.
    pub latency_us: f64,
    /// CPU on the shared machine.
    pub cpu_us: f64,
    /// Per node (index into the topology's nodes).
    pub node_us: Vec<f64>,
}

/// The demands of one execution whose waves are `waves` (each a list of lanes).
pub fn demands(
    waves: &[Vec<super::exec::LaneLoad>],
    nodes: usize,
    p: &PerfParams,
    hot: Option<Hot>,
) -> Demands {
    let mut f = Features {
        executions: 1.0,
        ..Features::default()
    };
    let mut node_us = vec![0.0; nodes.max(1)];
    let mut latency = 0.0;
    for (i, w) in waves.iter().enumerate() {
        // The per-execution cost is counted once, with the first wave.
        let mut wf = Features {
            executions: if i == 0 { 1.0 } else { 0.0 },
            waves: 1.0,
            ..Features::default()
        };
        for l in w {
            let lf = Features {
                executions: 0.0,
                waves: 0.0,
                lanes: 1.0,
                commands: l.commands as f64,
                keys: l.keys as f64,
                kib: l.bytes as f64 / 1024.0,
            };
            wf.lanes += 1.0;
            wf.commands += lf.commands;
            wf.keys += lf.keys;
            wf.kib += lf.kib;
            if let Some(n) = node_us.get_mut(l.node) {
                *n += p.node.of(&lf);
            }
        }
        latency += p.latency.of(&wf);
        f.waves += 1.0;
        f.lanes += wf.lanes;
        f.commands += wf.commands;
        f.keys += wf.keys;
        f.kib += wf.kib;
    }
    if let Some(h) = hot {
        node_us = reweigh(&node_us, h);
    }
    Demands {
        latency_us: latency,
        cpu_us: p.cpu.of(&f),
        node_us,
    }
}

/// Node demands redistributed so that `h.share` of the work lands on the hottest
/// `h.nodes_share` of the nodes (at least one), the rest spread evenly.
fn reweigh(node_us: &[f64], h: Hot) -> Vec<f64> {
    let n = node_us.len();
    let total: f64 = node_us.iter().sum();
    if n < 2 || total <= 0.0 {
        return node_us.to_vec();
    }
    if h == Hot::UNIFORM {
        return vec![total / n as f64; n];
    }
    let hot = ((n as f64 * h.nodes_share).ceil() as usize).clamp(1, n - 1);
    (0..n)
        .map(|i| {
            if i < hot {
                total * h.share / hot as f64
            } else {
                total * (1.0 - h.share) / (n - hot) as f64
            }
        })
        .collect()
}

/// Mean-value analysis of `n` closed-loop clients: (throughput per µs, mean response µs,
/// CPU utilisation, node utilisations).
fn mva(d: &Demands, cores: f64, n: u32) -> (f64, f64, f64, Vec<f64>) {
    let cores = cores.max(1.0);
    let mut q_cpu = 0.0;
    let mut q_node = vec![0.0; d.node_us.len()];
    let (mut x, mut r) = (0.0, d.latency_us.max(1e-3));
    for i in 1..=n.max(1) {
        let w_cpu = d.cpu_us / cores * (q_cpu - (cores - 1.0)).max(0.0);
        let w_node: Vec<f64> = d.node_us.iter().zip(&q_node).map(|(s, q)| s * q).collect();
        r = d.latency_us.max(1e-3) + w_cpu + w_node.iter().sum::<f64>();
        x = i as f64 / r;
        q_cpu = x * (d.cpu_us + w_cpu);
        for ((q, s), w) in q_node.iter_mut().zip(&d.node_us).zip(&w_node) {
            *q = x * (s + w);
        }
    }
    let u_cpu = (x * d.cpu_us / cores).min(1.0);
    let u_node = d.node_us.iter().map(|s| (x * s).min(1.0)).collect();
    (x, r, u_cpu, u_node)
}

/// A small deterministic generator for the Monte-Carlo draws (SplitMix64).
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (1.0 - self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// A gamma variate of shape `k` and scale 1 (Marsaglia and Tsang).
    fn gamma(&mut self, k: f64) -> f64 {
        if k < 1.0 {
            let u = self.uniform().max(1e-300);
            return self.gamma(k + 1.0) * u.powf(1.0 / k);
        }
        let d = k - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let z = self.normal();
            let v = (1.0 + c * z).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.max(1e-300).ln() < 0.5 * z * z + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}

fn jitter_draw(j: &Jitter, u: f64) -> f64 {
    let x = u * 100.0;
    let i = (x.floor() as usize).min(99);
    let t = x - i as f64;
    j[i] * (1.0 - t) + j[i + 1] * t
}

const DRAWS: usize = 4000;

/// Predicts one execution's throughput and latency with `n` clients.
///
/// Means (throughput, mean latency) are MVA's. Percentiles come from a seeded Monte-Carlo of
/// that mean split in two: the lone latency, spread like the calibrated distribution (the
/// spread of a sum of `w` waves shrinking as √w), and the queueing delay MVA adds under load,
/// drawn from a gamma distribution with MVA's mean and shape 3·√w (a queue of closed-loop
/// clients is shorter-tailed than an open one's exponential; 3 fits the measurements the
/// README reports).
pub fn predict(d: &Demands, p: &PerfParams, n: u32) -> Prediction {
    predict_waves(d, p, n, 1.0)
}

/// [`predict`] for an execution of `waves` round trips. Results are remembered per thread
/// (batches of one shape repeat: a MONITOR capture has thousands of each).
pub fn predict_waves(d: &Demands, p: &PerfParams, n: u32, waves: f64) -> Prediction {
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Key = (Vec<u64>, u32, u64);
    thread_local! {
        static MEMO: RefCell<HashMap<Key, Prediction, MixState>> = RefCell::new(HashMap::default());
    }
    let mut bits: Vec<u64> = vec![d.latency_us.to_bits(), d.cpu_us.to_bits()];
    bits.extend(d.node_us.iter().map(|x| x.to_bits()));
    bits.extend(coefs_array(&p.latency).iter().map(|x| x.to_bits()));
    bits.extend(coefs_array(&p.cpu).iter().map(|x| x.to_bits()));
    bits.extend(coefs_array(&p.node).iter().map(|x| x.to_bits()));
    bits.push(p.cores.to_bits());
    bits.extend(p.jitter.iter().map(|x| x.to_bits()));
    let key = (bits, n, waves.to_bits());
    if let Some(hit) = MEMO.with(|m| m.borrow().get(&key).copied()) {
        return hit;
    }
    let out = predict_uncached(d, p, n, waves);
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= 100_000 {
            m.clear();
        }
        m.insert(key, out);
    });
    out
}

/// The seeded Monte-Carlo draws of [`predict_uncached`] for one jitter and number of waves,
/// which depend on nothing else: each draw's lone-latency factor (`j`, at least 0) and its
/// gamma variate (`g`), in draw order, and the factors sorted.
struct Draws {
    j: Vec<f64>,
    g: Vec<f64>,
    j_sorted: Vec<f64>,
}

impl Draws {
    fn new(jitter: &Jitter, waves: f64) -> Draws {
        // The same draws at every concurrency (common random numbers): each draw grows with
        // the queueing delay, so percentiles never fall as clients are added.
        let mut rng = Rng(0x6B65_7970_6C61_6E00);
        let spread = waves.sqrt();
        let shape = 3.0 * spread;
        let (mut j, mut g) = (Vec::with_capacity(DRAWS), Vec::with_capacity(DRAWS));
        for _ in 0..DRAWS {
            let x = 1.0 + (jitter_draw(jitter, rng.uniform()) - 1.0) / spread;
            j.push(x.max(0.0));
            // The gamma draw is taken even without a wait, so that every concurrency sees the
            // same sequence.
            g.push(rng.gamma(shape));
        }
        let mut j_sorted = j.clone();
        j_sorted.sort_by(f64::total_cmp);
        Draws { j, g, j_sorted }
    }

    /// The draws for `jitter` and `waves` (≥ 1), made once per thread and kept for the next
    /// batches with as many waves (a batch's prediction was 4,000 fresh gamma variates and a
    /// sort: most of simulate's time on a capture).
    fn with<T>(jitter: &Jitter, waves: f64, f: impl FnOnce(&Draws) -> T) -> T {
        use std::cell::RefCell;
        use std::collections::HashMap;
        /// The jitter the draws were made for (a run has one), and the draws by waves.
        type Kept = (Option<[u64; 101]>, HashMap<u64, std::rc::Rc<Draws>>);
        thread_local! {
            static KEPT: RefCell<Kept> = RefCell::new((None, HashMap::new()));
        }
        let bits = jitter.map(f64::to_bits);
        let draws = KEPT.with(|k| {
            let (kept_for, by_waves) = &mut *k.borrow_mut();
            if *kept_for != Some(bits) || by_waves.len() >= 32 {
                *kept_for = Some(bits);
                by_waves.clear();
            }
            by_waves
                .entry(waves.to_bits())
                .or_insert_with(|| std::rc::Rc::new(Draws::new(jitter, waves)))
                .clone()
        });
        f(&draws)
    }
}

/// A hasher for the memo's keys (words of floats' bits), far cheaper than SipHash: nothing
/// hostile chooses them, and the memo only saves work (its answers are the same either way).
#[derive(Default)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(
                c.try_into().expect("invariant: 8 bytes"),
            ));
        }
        for &b in chunks.remainder() {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

type MixState = std::hash::BuildHasherDefault<MixHasher>;

fn predict_uncached(d: &Demands, p: &PerfParams, n: u32, waves: f64) -> Prediction {
    let n = n.max(1);
    let (x, r, u_cpu, u_node) = mva(d, p.cores, n);
    let waves = waves.max(1.0);
    let spread = waves.sqrt();
    let wait = (r - d.latency_us).max(0.0);
    let shape = 3.0 * spread;
    let at = |f: f64| ((DRAWS - 1) as f64 * f).round() as usize;
    let (p50, p99) = Draws::with(&p.jitter, waves, |dr| {
        let latency = d.latency_us;
        if wait == 0.0 && latency > 0.0 && latency.is_finite() {
            // Each draw is `latency × j + 0`: in the order of the factors, so its quantiles
            // are those of the sorted factors, scaled (no draw to make or sort).
            (
                latency * dr.j_sorted[at(0.5)],
                latency * dr.j_sorted[at(0.99)],
            )
        } else {
            let mut draws: Vec<f64> =
                dr.j.iter()
                    .zip(&dr.g)
                    .map(|(&j, &g)| latency * j + g * wait / shape)
                    .collect();
            // The two quantiles a sort would put at their places.
            let p50 = *draws.select_nth_unstable_by(at(0.5), f64::total_cmp).1;
            let p99 = *draws.select_nth_unstable_by(at(0.99), f64::total_cmp).1;
            (p50, p99)
        }
    });
    let (mut bottleneck, mut util) = ("cpu", u_cpu);
    for (i, u) in u_node.iter().enumerate() {
        if *u > util {
            util = *u;
            bottleneck = NODE_NAMES.get(i).copied().unwrap_or("node");
        }
    }
    Prediction {
        concurrency: n,
        qps: x * 1e6,
        mean_ms: r / 1000.0,
        p50_ms: p50 / 1000.0,
        p99_ms: p99 / 1000.0,
        bottleneck,
        utilization: util,
    }
}

const NODE_NAMES: [&str; 16] = [
    "node 0", "node 1", "node 2", "node 3", "node 4", "node 5", "node 6", "node 7", "node 8",
    "node 9", "node 10", "node 11", "node 12", "node 13", "node 14", "node 15",
];

/// Least squares with non-negative coefficients over the five features (active-set: a
/// coefficient that comes out negative is dropped and the rest refitted). `rows` are
/// (features, observed µs); `fixed` pins coefficients (`Some(v)`).
pub fn fit(rows: &[(Features, f64)], fixed: [Option<f64>; 6]) -> Coefs {
    let feats = |f: &Features| [f.executions, f.waves, f.lanes, f.commands, f.keys, f.kib];
    let mut active: Vec<usize> = (0..6).filter(|&i| fixed[i].is_none()).collect();
    let mut coef = [0.0; 6];
    for (i, v) in fixed.iter().enumerate() {
        if let Some(v) = v {
            coef[i] = *v;
        }
    }
    loop {
        let m = active.len();
        if m == 0 {
            break;
        }
        // Normal equations for the active coefficients on the residual of the fixed ones.
        let mut ata = vec![vec![0.0; m]; m];
        let mut atb = vec![0.0; m];
        for (f, y) in rows {
            let v = feats(f);
            let fixed_part: f64 = (0..6)
                .filter(|i| !active.contains(i))
                .map(|i| coef[i] * v[i])
                .sum();
            let y = y - fixed_part;
            for (a, &i) in active.iter().enumerate() {
                atb[a] += v[i] * y;
                for (b, &j) in active.iter().enumerate() {
                    ata[a][b] += v[i] * v[j];
                }
            }
        }
        let Some(sol) = solve(ata, atb) else {
            // Singular: drop the last active feature and retry.
            let gone = active.pop().expect("invariant: m > 0");
            coef[gone] = 0.0;
            continue;
        };
        if let Some(neg) = sol.iter().position(|&s| s < 0.0) {
            let gone = active.remove(neg);
            coef[gone] = 0.0;
            continue;
        }
        for (a, &i) in active.iter().enumerate() {
            coef[i] = sol[a];
        }
        break;
    }
    Coefs::from_array(coef)
}

/// Gaussian elimination with partial pivoting; `None` when singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        let pivot = a[c].clone();
        for r in c + 1..n {
            let f = a[r][c] / pivot[c];
            for (x, p) in a[r].iter_mut().zip(&pivot).skip(c) {
                *x -= f * p;
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

/// The coefficients in the order of the features (execution, wave, lane, command, key, KiB).
pub fn coefs_array(c: &Coefs) -> [f64; 6] {
    c.as_array()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::exec::LaneLoad;

    fn lane(node: usize, commands: u64, keys: u64) -> LaneLoad {
        LaneLoad {
            node,
            commands,
            keys,
            bytes: keys * 12,
        }
    }

    /// The percentiles are those of the seeded draws made afresh and sorted, bit for bit,
    /// whether the draws are kept from batch to batch and whatever the queueing wait.
    #[test]
    fn kept_draws_give_the_same_percentiles() {
        fn fresh(d: &Demands, p: &PerfParams, n: u32, waves: f64) -> (f64, f64) {
            let (_, r, _, _) = mva(d, p.cores, n.max(1));
            let mut rng = Rng(0x6B65_7970_6C61_6E00);
            let waves = waves.max(1.0);
            let spread = waves.sqrt();
            let wait = (r - d.latency_us).max(0.0);
            let shape = 3.0 * spread;
            let mut draws: Vec<f64> = (0..DRAWS)
                .map(|_| {
                    let j = 1.0 + (jitter_draw(&p.jitter, rng.uniform()) - 1.0) / spread;
                    let g = rng.gamma(shape);
                    d.latency_us * j.max(0.0) + g * wait / shape
                })
                .collect();
            draws.sort_by(f64::total_cmp);
            let q = |f: f64| draws[((DRAWS - 1) as f64 * f).round() as usize];
            (q(0.5) / 1000.0, q(0.99) / 1000.0)
        }
        let mut p = PerfParams::defaults(500.0);
        for (i, x) in p.jitter.iter_mut().enumerate() {
            *x = 0.6 + (i as f64 / 100.0).powi(3) * 3.0;
        }
        for waves in [1.0, 2.0, 3.0, 7.0, 1000.0] {
            for n in [1, 2, 16, 64] {
                for (lanes, keys) in [(1, 1), (3, 40), (16, 5000)] {
                    let w: Vec<Vec<LaneLoad>> = (0..waves as usize)
                        .map(|_| (0..lanes).map(|l| lane(l % 3, 2, keys)).collect())
                        .collect();
                    let d = demands(&w, 3, &p, None);
                    for _ in 0..2 {
                        let got = predict_uncached(&d, &p, n, waves);
                        let want = fresh(&d, &p, n, waves);
                        assert_eq!(
                            (got.p50_ms.to_bits(), got.p99_ms.to_bits()),
                            (want.0.to_bits(), want.1.to_bits()),
                            "waves {waves}, {n} clients, {lanes} lanes"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_lone_client_sees_the_lone_latency() {
        let p = PerfParams::defaults(40.0);
        let d = demands(&[vec![lane(0, 1, 50)]], 3, &p, None);
        let one = predict(&d, &p, 1);
        assert!((one.mean_ms * 1000.0 - d.latency_us).abs() < 1e-6);
        assert!((one.qps - 1e6 / d.latency_us).abs() < 1e-6);
    }

    #[test]
    fn fits_recover_coefficients() {
        let truth = Coefs {
            execution_us: 12.0,
            wave_us: 30.0,
            lane_us: 5.0,
            command_us: 0.5,
            key_us: 0.2,
            kib_us: 0.0,
        };
        let rows: Vec<(Features, f64)> = [
            (1.0, 1.0, 1.0, 1.0),
            (1.0, 1.0, 1.0, 50.0),
            (1.0, 3.0, 3.0, 50.0),
            (3.0, 3.0, 3.0, 50.0),
            (1.0, 24.0, 24.0, 24.0),
            (8.0, 8.0, 8.0, 64.0),
            (1.0, 1.0, 16.0, 16.0),
        ]
        .iter()
        .map(|&(w, l, c, k)| {
            let f = Features {
                executions: 1.0,
                waves: w,
                lanes: l,
                commands: c,
                keys: k,
                kib: 0.0,
            };
            (f, truth.of(&f))
        })
        .collect();
        let got = fit(&rows, [None; 6]);
        for (a, b) in coefs_array(&got).iter().zip(coefs_array(&truth)) {
            assert!((a - b).abs() < 1e-6, "{got:?}");
        }
    }
}
