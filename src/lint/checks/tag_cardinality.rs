//! `tag-cardinality`: hash tags with too few values for the topology.

use super::{Check, Finding, allowed};
use crate::lint::{ActiveRule, TagRequirement};
use crate::scheme::predicates::{combined_cardinality, seg_text, seg_vars};
use crate::scheme::{Scheme, TagPart, Template};
use crate::topology::Topology;

pub(super) struct TagCardinalityCheck(pub TagRequirement);

impl Check for TagCardinalityCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, topo: &Topology) -> Vec<Finding> {
        let nodes = topo.nodes().len().max(1);
        let mut out = Vec::new();
        for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
            let TagPart::Tagged(segs) = k.template.tag_part().0 else {
                continue;
            };
            let vars = seg_vars(&segs);
            let card = if vars.is_empty() {
                Some(1)
            } else {
                combined_cardinality(scheme, &vars)
            };
            let Some(card) = card else { continue };
            let share = 1.0 / card.max(1) as f64;
            if self.0.fails(card, nodes) {
                out.push(Finding::at(
                    k.pos,
                    format!(
                        "key '{}': its hash tag `{{{}}}` takes about {card} value(s), so its keys use at most {card} slot(s) on {nodes} nodes and one tag value holds ~{:.1}% of them",
                        k.name, seg_text(&segs), 100.0 * share
                    ),
                    Some(format!("tag a finer variable, or add a bucket: `{}`", bucketed(&k.template))),
                ));
            }
        }
        out
    }
}

fn bucketed(t: &Template) -> String {
    match t.tag_part().0 {
        TagPart::Tagged(segs) => {
            let inner = seg_text(&segs);
            t.text
                .replacen(&format!("{{{inner}}}"), &format!("{{{inner}:<bucket>}}"), 1)
        }
        _ => t.text.clone(),
    }
}
