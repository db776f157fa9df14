//! `node-skew`: a dump whose keys load one node far above the mean.

use super::Check;
use crate::lint::ActiveRule;
use crate::topology::Topology;

pub(super) struct NodeSkewCheck {
    pub max_over_mean: f64,
    pub min_keys: u64,
}

impl Check for NodeSkewCheck {
    fn dump(
        &self,
        _r: &ActiveRule,
        topo: &Topology,
        node_keys: &[u64],
        keys: u64,
    ) -> Option<(String, Option<String>)> {
        let max_over_mean = self.max_over_mean;
        if keys < self.min_keys || node_keys.is_empty() {
            return None;
        }
        let names: Vec<String> = topo.nodes().iter().map(|n| n.name.clone()).collect();
        let vals: Vec<f64> = node_keys.iter().map(|&x| x as f64).collect();
        let s = crate::skew::skew(&vals, &names, &topo.nominal_shares())?;
        (s.max_over_mean > max_over_mean).then(|| {
            let of = if topo.ring().is_some() {
                "of the ring"
            } else {
                "of the slots"
            };
            (
                format!(
                    "{} (over the {max_over_mean:.2}× limit)",
                    crate::skew::describe(&s, "keys", of)
                ),
                Some(
                    "run `keyplan analyze` on this dump to see which pattern or tag causes it"
                        .into(),
                ),
            )
        })
    }
}
