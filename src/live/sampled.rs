//! A live sample turned into what the commands compute from: an analysis of the sampled keys
//! with what the servers measured, or a migration preview's per-slot weights.

use super::{LiveCluster, LiveError, SampleTargets, ScanOptions};
use crate::analyze::snapshot::Biggest;
use crate::analyze::{AnalyzeConfig, AnalyzeReport, Analyzer};
use crate::migrate::ClusterView;
use crate::migrate::impact::SlotWeights;
use crate::topology::{Node, Topology};
use std::time::Duration;

/// How many of the biggest sampled keys (with bytes) are described by their servers.
pub const BIGGEST_KEYS: usize = 100;

/// An analysis of a live sample.
#[derive(Debug)]
pub struct LiveAnalysis {
    /// The report: node and slot figures from the servers' exact counts (unless the scan
    /// matched a pattern), their measured load and data bytes, the biggest keys described.
    pub report: AnalyzeReport,
    /// Each node's load is its command time from `INFO commandstats`: the servers do not count
    /// load per slot.
    pub load_from_commandstats: bool,
    /// When the load is per node: what to do so that the servers count it per slot (the
    /// setting, or the version needed), for the first master.
    pub slot_load_advice: Option<String>,
    /// What the servers refused to say (an ACL user without `INFO`), in words: left out of
    /// the report.
    pub refused: Vec<String>,
}

/// A migration preview's weights from a live sample.
#[derive(Debug)]
pub struct LiveWeights {
    /// Per-slot keys and bytes (scaled to the servers' exact key counts when they were read),
    /// and the load the servers measured per slot where they count it.
    pub weights: SlotWeights,
    /// Keys sampled.
    pub keys: u64,
    /// Keys per slot are the servers' exact counts (they stand for the whole cluster).
    pub exact: bool,
    /// Over what time the per-slot load was measured, when it was.
    pub load_since: Option<String>,
    /// Sampled keys whose `MEMORY USAGE` reaches `crate::migrate::MIGRATE_SLOW_BYTES`, with
    /// their bytes, biggest first (MIGRATE of each blocks both nodes).
    pub big_keys: Vec<(Vec<u8>, u64)>,
}

impl LiveCluster {
    /// Samples every master of `topology` (`tick` once a key; over `window` for the per-slot
    /// load) and analyzes the keys with what the servers measured. Fails when the slot map
    /// changed meanwhile.
    pub fn analyze(
        &self,
        topology: &Topology,
        config: &AnalyzeConfig,
        opts: &ScanOptions,
        window: Option<Duration>,
        source: String,
        tick: &(dyn Fn() + Sync),
    ) -> Result<LiveAnalysis, LiveError> {
        let targets = SampleTargets::of_topology(topology);
        let nodes = &targets.masters;
        // With bytes, each node's biggest sampled keys are kept too (described afterwards).
        let keep = if opts.bytes { BIGGEST_KEYS } else { 0 };
        let workers: Vec<(Analyzer<'_>, Biggest)> = nodes
            .iter()
            .map(|_| (Analyzer::new(topology, config), Biggest::new(keep)))
            .collect();
        let sample =
            self.sample_masters(&targets, opts, window, workers, |(w, big), k, b, h| {
                w.add(k, b, h);
                if let Some(b) = b {
                    big.offer(b, k);
                }
                tick();
            })?;
        if let Some(map) = topology.slot_map() {
            self.ensure_stable(map)?;
        }
        let mut biggest = Biggest::new(keep);
        let mut workers = sample.sinks.into_iter().map(|(w, big)| {
            biggest.merge(&big);
            w
        });
        let mut analyzer = workers.next().expect("invariant: a topology has a node");
        for w in workers {
            analyzer.merge(&w);
        }
        // The servers know every slot's exact key count: node and slot figures come from
        // them, whatever the sample (unless a pattern narrows the keys to some of them).
        if let Some(exact) = sample.exact_slot_keys {
            analyzer.set_exact_slot_keys(exact);
        }
        let measured = self.measure_nodes(topology, nodes, sample.slot_load.as_ref())?;
        if let Some(d) = measured.dataset {
            analyzer.set_node_dataset(d);
        }
        if let Some(load) = measured.load {
            analyzer.set_node_load(load);
        }
        match &sample.slot_load {
            // The keys' LFU counters are the ops: the CPU stays per node.
            _ if opts.heat => analyzer.set_ops_from_heat(),
            Some(load) => analyzer.set_slot_ops(
                load.cpu_usec.iter().map(|&c| c as f64).collect(),
                load.since.clone(),
            ),
            None => {}
        }
        let read = crate::keys::ReadSummary {
            keys: sample.keys,
            lines: sample.keys,
            ..Default::default()
        };
        let mut report = analyzer.finish(&read, source, config);
        if !biggest.keys().is_empty() {
            report.snapshot = Some(self.describe_biggest(topology, &biggest, config.top)?);
        }
        let slot_load_advice = measured
            .from_commandstats
            .then(|| {
                topology
                    .key_holders()
                    .first()
                    .map(|n| self.slot_stats_advice(n))
            })
            .flatten();
        Ok(LiveAnalysis {
            report,
            load_from_commandstats: measured.from_commandstats,
            slot_load_advice,
            refused: measured.refused,
        })
    }

    /// Samples the masters of `view` into per-slot weights (`tick` once a key; over `window`
    /// for the per-slot load): the servers' exact keys per slot replace the sample's (bytes
    /// scaled to them) unless a pattern narrows the keys, and their per-slot load joins them.
    /// Fails when the slot map changed meanwhile.
    pub fn sample_weights(
        &self,
        view: &ClusterView,
        opts: &ScanOptions,
        window: Option<Duration>,
        tick: &(dyn Fn() + Sync),
    ) -> Result<LiveWeights, LiveError> {
        let targets = SampleTargets::of_view(view);
        type Sink = (SlotWeights, Vec<(Vec<u8>, u64)>);
        let sinks: Vec<Sink> = targets.masters.iter().map(|_| Sink::default()).collect();
        let sample = self.sample_masters(&targets, opts, window, sinks, |(w, big), k, b, h| {
            w.add(k, b, h);
            if let Some(b) = b.filter(|&b| b >= crate::migrate::MIGRATE_SLOW_BYTES) {
                big.push((k.to_vec(), b));
            }
            tick();
        })?;
        // A failover or a reshard while sampling would count some keys twice and miss others.
        let before: Vec<Option<Node>> = view
            .owner
            .iter()
            .map(|o| o.map(|i| view.nodes[i].to_node()))
            .collect();
        self.ensure_unchanged_from(&before)?;
        let mut weights = SlotWeights::default();
        let mut big_keys = Vec::new();
        for (w, big) in &sample.sinks {
            weights.merge(w);
            big_keys.extend(big.iter().cloned());
        }
        big_keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        if let Some(exact) = &sample.exact_slot_keys {
            weights.scale_to(exact, &view.owner);
        }
        let load_since = sample.slot_load.as_ref().map(|l| l.since.clone());
        weights.measured = sample.slot_load.as_ref().map(Into::into);
        Ok(LiveWeights {
            weights,
            keys: sample.keys,
            exact: sample.exact_slot_keys.is_some(),
            load_since,
            big_keys,
        })
    }
}
