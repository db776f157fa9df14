//! `cross-slot`: atomic batches whose keys can hash to different slots (CROSSSLOT).
//!
//! On Redis Cluster (and a Redis Enterprise database with the `redis` hashing policy) the
//! scheme's patterns decide it: the keys' hash tags must be the same text. A Redis Enterprise
//! proxy runs MGET, MSET, DEL, EXISTS, UNLINK and TOUCH across slots itself (only MGET, EXISTS
//! and TOUCH on Active-Active), so those pass; under a `standard` or `custom` hashing policy
//! the batch's generated instances are placed by the policy's rules and judged as the database
//! judges them.

use super::{Check, Finding, allowed};
use crate::lint::ActiveRule;
use crate::scheme::predicates::{batch_single_slot, seg_text, single_slot_rewrites};
use crate::scheme::{BatchCommand, DeclaredBatch, Scheme};
use crate::simulate::verdict::{ServerOutcome, over_instances};
use crate::topology::Topology;

pub(super) struct CrossSlotCheck;

impl Check for CrossSlotCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, topo: &Topology) -> Vec<Finding> {
        let enterprise = topo.slot_map().and_then(|m| m.enterprise());
        let by_policy = topo.slot_map().is_some_and(|m| m.custom_hashing());
        let mut out = Vec::new();
        for b in scheme
            .batches
            .iter()
            .filter(|b| b.command.is_atomic() && !allowed(&b.allow, r))
        {
            if enterprise.is_some_and(|e| e.accepts_cross_slot(b.command.name())) {
                continue;
            }
            if by_policy {
                out.extend(by_instances(scheme, b, topo));
                continue;
            }
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
                None => no_shared_variable(b.command),
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

/// The hint for an atomic batch whose keys share no variable: a transaction or a script must
/// run on one slot (split per node it is no longer atomic, which is never the advice); a
/// multi-key command can be sent per node, each part its own command.
fn no_shared_variable(command: BatchCommand) -> String {
    match command {
        BatchCommand::Multi | BatchCommand::Lua => format!(
            "no variable is shared by all its keys, and a {} must run on one slot: give its keys one hash tag (the id that ties them), or stop running them together; split per node it would no longer be atomic",
            match command {
                BatchCommand::Multi => "MULTI … EXEC transaction",
                _ => "script",
            }
        ),
        c => format!(
            "no variable is shared by all its keys: give them a common hash tag, or send one {} per node (each part is then its own command, no longer one operation)",
            c.name()
        ),
    }
}

/// The batch judged on its generated instances, placed by the database's hashing policy.
fn by_instances(scheme: &Scheme, b: &DeclaredBatch, topo: &Topology) -> Option<Finding> {
    let size = b.size.unwrap_or(b.keys.len() as u64);
    let generated = (0..crate::simulate::session::instances_for(size))
        .map(|i| crate::simulate::batch::scheme_batch_instance(scheme, b, None, i));
    let v = over_instances(generated, topo)?;
    let policy = topo
        .slot_map()
        .and_then(|m| m.enterprise())
        .map_or("", |e| e.hashing.name());
    let (what, help) = match v.outcome {
        ServerOutcome::Ok => return None,
        ServerOutcome::Unhashable => (
            "has keys that no rule of the custom hashing policy matches, and the database refuses them".to_string(),
            "add a rule that matches these keys (before any catch-all), or rename the keys to a pattern a rule matches".to_string(),
        ),
        _ => (
            "can touch several slots and fail with CROSSSLOT".to_string(),
            format!(
                "make the {policy} hashing policy give all its keys one tag: a rule whose `tag` group captures only what the batch's keys share"
            ),
        ),
    };
    Some(Finding::at(
        b.pos,
        format!(
            "batch '{}' ({}) {what}, e.g. {}: {}",
            b.name,
            b.command.name(),
            v.keys.join(" "),
            v.message.unwrap_or_default()
        ),
        Some(help),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_batch_is_never_told_to_split_per_node() {
        for c in [BatchCommand::Multi, BatchCommand::Lua] {
            let h = no_shared_variable(c);
            assert!(!h.contains("per-node pipelines"), "{h}");
            assert!(h.contains("must run on one slot"), "{h}");
            assert!(h.contains("no longer be atomic"), "{h}");
        }
        let h = no_shared_variable(BatchCommand::Mget);
        assert!(h.contains("one MGET per node"), "{h}");
    }
}
