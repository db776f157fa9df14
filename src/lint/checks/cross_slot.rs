//! `cross-slot`: atomic batches whose keys can hash to different slots (CROSSSLOT).

use super::{Check, Finding, allowed};
use crate::lint::ActiveRule;
use crate::scheme::Scheme;
use crate::scheme::predicates::{batch_single_slot, seg_text, single_slot_rewrites};

pub(super) struct CrossSlotCheck;

impl Check for CrossSlotCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, _nodes: usize) -> Vec<Finding> {
        let mut out = Vec::new();
        for b in scheme
            .batches
            .iter()
            .filter(|b| b.command.is_atomic() && !allowed(&b.allow, r))
        {
            let Err(why) = batch_single_slot(scheme, b) else {
                continue;
            };
            // The rewrite that changes the fewest patterns: what plan weighs first.
            let help = match single_slot_rewrites(scheme, b).first() {
                Some(rw) => format!(
                    "put its keys on one slot with the tag `{{{}}}`: {}",
                    seg_text(&rw.tag),
                    rw.rewrites
                        .iter()
                        .map(|(f, text)| format!("{}: \"{text}\"", scheme.keys[*f].name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => "no variable is shared by all its keys: give them a common hash tag, or run them as per-node pipelines (not atomic)".to_string(),
            };
            out.push(Finding::at(
                b.pos,
                format!(
                    "batch '{}' ({}) can touch several slots and fail with CROSSSLOT: {why}",
                    b.name,
                    b.command.name()
                ),
                Some(help),
            ));
        }
        out
    }
}
