//! `node-skew`: a dump whose keys load one node far above the mean.

use super::{Check, DumpSeen, Found};

pub(super) struct NodeSkewCheck {
    pub max_over_mean: f64,
    pub min_keys: u64,
}

impl Check for NodeSkewCheck {
    fn dump(&self, seen: &DumpSeen<'_>) -> Found {
        let DumpSeen {
            topo, totals: t, ..
        } = *seen;
        let max_over_mean = self.max_over_mean;
        if t.keys < self.min_keys || t.node_keys.is_empty() {
            return None;
        }
        let names: Vec<String> = topo.nodes().iter().map(|n| n.name.clone()).collect();
        let shares = topo.nominal_shares();
        // Keys, and bytes and ops where the dump has them: the worst over the limit.
        let mut measures: Vec<(&str, Vec<f64>)> =
            vec![("keys", t.node_keys.iter().map(|&x| x as f64).collect())];
        if t.has_bytes {
            measures.push(("bytes", t.node_bytes.iter().map(|&x| x as f64).collect()));
        }
        if t.has_ops {
            measures.push(("ops", t.node_ops.clone()));
        }
        let worst = measures
            .iter()
            .filter_map(|(what, vals)| Some((*what, crate::skew::skew(vals, &names, &shares)?)))
            .filter(|(_, s)| s.max_over_mean > max_over_mean)
            .max_by(|a, b| a.1.max_over_mean.total_cmp(&b.1.max_over_mean))?;
        let of = if topo.ring().is_some() {
            "of the ring"
        } else {
            "of the slots"
        };
        Some((
            format!(
                "{} (over the {max_over_mean:.2}× limit)",
                crate::skew::describe(&worst.1, worst.0, of)
            ),
            Some("run `keyplan analyze` on this dump to see which pattern or tag causes it".into()),
        ))
    }
}
