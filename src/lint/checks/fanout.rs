//! `fanout`: pipelines whose keys spread over several nodes.

use super::{Check, Finding, allowed};
use crate::lint::ActiveRule;
use crate::scheme::Scheme;
use crate::scheme::predicates::{batch_single_slot, combined_cardinality, seg_vars};
use crate::topology::Topology;

pub(super) struct FanoutCheck {
    pub min_nodes: usize,
}

impl Check for FanoutCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, topo: &Topology) -> Vec<Finding> {
        let nodes = topo.nodes().len().max(1);
        let enterprise = topo.slot_map().and_then(|m| m.enterprise());
        let by_policy = topo.slot_map().is_some_and(|m| m.custom_hashing());
        let mut out = Vec::new();
        // A Redis Enterprise proxy splits some multi-key commands over the shards itself: a
        // fan-out like a pipeline's.
        let spreads = |b: &crate::scheme::DeclaredBatch| {
            !b.command.is_atomic()
                || enterprise.is_some_and(|e| e.accepts_cross_slot(b.command.name()))
        };
        for b in scheme
            .batches
            .iter()
            .filter(|b| spreads(b) && !allowed(&b.allow, r))
        {
            if by_policy {
                // Placed by the database's hashing rules: the nodes its generated instances
                // really touch.
                let size = b.size.unwrap_or(b.keys.len() as u64);
                let generated = (0..crate::simulate::session::instances_for(size))
                    .map(|i| crate::simulate::batch::scheme_batch_instance(scheme, b, None, i));
                let Some(v) = crate::simulate::verdict::over_instances(generated, topo) else {
                    continue;
                };
                let mean = v.instances.map_or(0.0, |i| i.mean_nodes);
                if mean >= self.min_nodes as f64 {
                    out.push(Finding::at(
                        b.pos,
                        format!("batch '{}' ({}) of {size} keys touches {mean:.1} of {nodes} shards on average (placed by the database's hashing policy): each shard's part is a round trip from the proxy", b.name, b.command.name()),
                        Some("make the hashing policy give the batch's keys one tag (a rule whose `tag` group captures what they share), or accept the fan-out".into()),
                    ));
                }
                continue;
            }
            if batch_single_slot(scheme, b).is_ok() {
                continue;
            }
            let keys = b.size.unwrap_or(b.keys.len() as u64);
            // Distinct hashed values in one batch: bounded by the cardinality of the hashed
            // part's varying variables and by the batch size.
            let mut distinct = keys;
            for k in b.keys.iter().filter_map(|k| scheme.key(k)) {
                let h = k.template.hashed();
                let vary: Vec<&str> = seg_vars(&h)
                    .into_iter()
                    .filter(|v| !b.same.iter().any(|s| s == v))
                    .collect();
                if let Some(c) = combined_cardinality(scheme, &vary) {
                    distinct = distinct.min(c.saturating_mul(b.keys.len() as u64));
                }
            }
            let touched = (distinct as usize).min(nodes);
            if touched >= self.min_nodes {
                out.push(Finding::at(
                    b.pos,
                    format!("{} '{}' of {keys} keys touches up to {touched} of {nodes} nodes: {touched} round trips one node after another, or 1 (the slowest node's) with per-node pipelines in parallel", if b.command.is_atomic() { b.command.name() } else { "pipeline" }, b.name),
                    Some("send per-node pipelines in parallel, or tag the keys on an entity the batch shares".into()),
                ));
            }
        }
        out
    }
}
