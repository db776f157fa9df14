//! `fanout`: pipelines whose keys spread over several nodes.

use super::{Check, Finding, allowed};
use crate::lint::ActiveRule;
use crate::scheme::Scheme;
use crate::scheme::predicates::{batch_single_slot, combined_cardinality, seg_vars};

pub(super) struct FanoutCheck {
    pub min_nodes: usize,
}

impl Check for FanoutCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, nodes: usize) -> Vec<Finding> {
        let mut out = Vec::new();
        for b in scheme
            .batches
            .iter()
            .filter(|b| !b.command.is_atomic() && !allowed(&b.allow, r))
        {
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
                    format!("pipeline '{}' of {keys} keys touches up to {touched} of {nodes} nodes: {touched} round trips one node after another, or 1 (the slowest node's) with per-node pipelines in parallel", b.name),
                    Some("send per-node pipelines in parallel, or tag the keys on an entity the batch shares".into()),
                ));
            }
        }
        out
    }
}
