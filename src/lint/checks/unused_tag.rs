//! `unused-tag`: hash tags over variables no batch keeps the same.

use super::{Check, Finding, allowed};
use crate::lint::ActiveRule;
use crate::scheme::predicates::seg_vars;
use crate::scheme::{Scheme, TagPart};
use crate::topology::Topology;

pub(super) struct UnusedTagCheck;

impl Check for UnusedTagCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, _topo: &Topology) -> Vec<Finding> {
        let mut out = Vec::new();
        for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
            let TagPart::Tagged(segs) = k.template.tag_part().0 else {
                continue;
            };
            let vars = seg_vars(&segs);
            if vars.is_empty() {
                continue;
            }
            let used = scheme.batches.iter().any(|b| {
                b.keys.contains(&k.name) && vars.iter().all(|v| b.same.iter().any(|s| s == v))
            });
            if !used {
                out.push(Finding::at(
                    k.pos,
                    format!(
                        "key '{}': no batch using it keeps {} the same, so its hash tag groups nothing",
                        k.name,
                        vars.iter().map(|v| format!("<{v}>")).collect::<Vec<_>>().join(", ")
                    ),
                    Some(format!(
                        "drop the braces (`{}`) or declare the batch that needs them",
                        k.template.text.replace(['{', '}'], "")
                    )),
                ));
            }
        }
        out
    }
}
