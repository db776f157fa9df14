//! One simulation run, a batch at a time: each batch's cost under every strategy (or what each
//! client profile does with it) and what the cluster answers to it as written. Nothing is kept
//! from one batch to the next but the names of scheme batches already judged, so a capture of
//! any length runs in the memory of one batch.

use super::verdict::{Verdict, as_written, over_instances};
use super::{Batch, Client, ClientResult, NetworkModel, SimResult, Strategy, batch};
use crate::scheme::Scheme;
use crate::topology::Topology;
use std::collections::HashSet;

/// Generated instances a scheme batch is judged over (fewer for a batch of many keys, see
/// [`instances_for`]).
pub const INSTANCES: u64 = 256;

/// Keys generated in all, at most, to judge one scheme batch: a batch of 100,000 keys is
/// judged over 20 instances, not 256 (work in proportion to the batch, not to size × 256).
const JUDGED_KEYS: u64 = 2_000_000;

/// Instances a scheme batch of `size` keys is judged over: [`INSTANCES`], fewer past
/// `JUDGED_KEYS` in all, never fewer than 16.
pub fn instances_for(size: u64) -> u64 {
    (JUDGED_KEYS / size.max(1)).clamp(16, INSTANCES)
}

/// What is run on each batch.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Execution strategies, in this order.
    Strategies(Vec<Strategy>),
    /// Client profiles, on the slot map the client believes (`None`: the real one).
    Clients {
        /// The profiles, in this order.
        profiles: Vec<Client>,
        /// The client's (stale) slot map.
        believed: Option<Topology>,
    },
}

/// What simulate found for one batch.
#[derive(Debug, Clone)]
pub struct BatchOutcome {
    /// The swept batch size (`--sizes`), if any.
    pub size: Option<u64>,
    /// The batch's display name.
    pub name: String,
    /// Its identity.
    pub id: batch::BatchId,
    /// What the cluster answers to it as written; `None` when a batch of this name was judged
    /// before (a scheme batch swept over several sizes is judged once).
    pub verdict: Option<Verdict>,
    /// Its cost under each strategy (strategy mode).
    pub results: Vec<SimResult>,
    /// What each client profile does with it (client mode).
    pub clients: Vec<ClientResult>,
}

/// A simulation over one topology and network model.
#[derive(Debug)]
pub struct Simulation<'a> {
    topology: &'a Topology,
    net: &'a NetworkModel,
    mode: Mode,
    /// The scheme its batches are generated from (their instances are generated when judged).
    scheme: Option<Scheme>,
    /// Names of the scheme batches already judged.
    judged: HashSet<String>,
}

impl<'a> Simulation<'a> {
    /// A simulation of batches on `topology`; scheme batches of `scheme` are judged over
    /// [`INSTANCES`] generated instances, not just the one shown.
    pub fn new(
        topology: &'a Topology,
        net: &'a NetworkModel,
        mode: Mode,
        scheme: Option<&Scheme>,
    ) -> Simulation<'a> {
        Simulation {
            topology,
            net,
            mode,
            scheme: scheme.cloned(),
            judged: HashSet::new(),
        }
    }

    /// Simulates one batch (of swept size `size`).
    pub fn batch(&mut self, size: Option<u64>, b: &Batch) -> BatchOutcome {
        let mut results = Vec::new();
        let mut clients = Vec::new();
        match &self.mode {
            Mode::Strategies(list) => {
                for &s in list {
                    results.push(super::simulate(b, self.topology, s, self.net));
                }
            }
            Mode::Clients { profiles, believed } => {
                let believed = believed.as_ref().unwrap_or(self.topology);
                for &c in profiles {
                    clients.push(super::simulate_client_stale(
                        b,
                        believed,
                        self.topology,
                        c,
                        self.net,
                    ));
                }
            }
        }
        BatchOutcome {
            size,
            name: b.name.clone(),
            id: b.id.clone(),
            verdict: self.verdict(b),
            results,
            clients,
        }
    }

    /// The batch's verdict, unless it is a scheme batch judged before. A batch of a file or a
    /// capture is named by its line, so its name never repeats.
    fn verdict(&mut self, b: &Batch) -> Option<Verdict> {
        if b.id.line.is_some() {
            return Some(as_written(b, self.topology));
        }
        if !self.judged.insert(b.name.clone()) {
            return None;
        }
        let declared = self
            .scheme
            .as_ref()
            .and_then(|s| Some((s, s.batch(&b.name)?)));
        let verdict = declared.and_then(|(s, d)| {
            let size = d.size.unwrap_or(d.keys.len() as u64);
            let generated =
                (0..instances_for(size)).map(|i| batch::scheme_batch_instance(s, d, None, i));
            over_instances(generated, self.topology)
        });
        Some(verdict.unwrap_or_else(|| as_written(b, self.topology)))
    }
}
