//! `hot-spot`: one slot or one hash-tag value holding a large share of a dump's keys or bytes
//! (a node can be within its share while one of its slots is a hot spot no rebalance can split).

use super::{Check, DumpSeen, Found};

pub(super) struct HotSpotCheck {
    pub max_share: f64,
    pub min_keys: u64,
}

impl Check for HotSpotCheck {
    fn dump(&self, seen: &DumpSeen<'_>) -> Found {
        let DumpSeen {
            topo, totals: t, ..
        } = *seen;
        if t.keys < self.min_keys {
            return None;
        }
        let pct = |x: f64| x * 100.0;
        let mut found: Vec<(f64, String)> = Vec::new();
        let node_of_slot = |s: usize| {
            topo.node_of_slot(s as u16)
                .map(|n| topo.nodes()[n].name.clone())
                .unwrap_or_else(|| "-".into())
        };
        // The largest slot and tag, by keys and (with a bytes column) by bytes.
        let mut by = vec![("keys", &t.slot_keys, t.keys, &t.tags)];
        if t.has_bytes && t.bytes > 0 {
            by.push(("bytes", &t.slot_bytes, t.bytes, &t.tags_by_bytes));
        }
        for (what, per_slot, total, tags) in by {
            if topo.ring().is_none()
                && let Some((slot, &v)) = per_slot.iter().enumerate().max_by_key(|(_, v)| **v)
            {
                let share = v as f64 / total as f64;
                if share > self.max_share {
                    found.push((
                        share,
                        format!(
                            "slot {slot} (on {}) holds {:.1}% of the {what}",
                            node_of_slot(slot),
                            pct(share)
                        ),
                    ));
                }
            }
            if let Some(top) = tags.top(1).first() {
                // A lower bound (Space-Saving over-counts by at most `error`).
                let share = (top.weight - top.error) as f64 / total as f64;
                if share > self.max_share {
                    found.push((
                        share,
                        format!(
                            "the hash tag {{{}}} holds {:.1}% of the {what}",
                            String::from_utf8_lossy(&top.item),
                            pct(share)
                        ),
                    ));
                }
            }
        }
        if found.is_empty() {
            return None;
        }
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        let text: Vec<String> = found.into_iter().map(|(_, t)| t).collect();
        Some((
            format!(
                "{} (over the {:.1}% limit): a slot moves whole, so no rebalance spreads it",
                text.join("; "),
                pct(self.max_share)
            ),
            Some(
                "run `keyplan analyze` to see the pattern behind it; spread that tag (a finer variable, or buckets)"
                    .into(),
            ),
        ))
    }
}
