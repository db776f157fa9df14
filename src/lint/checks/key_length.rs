//! `key-length`: keys (and patterns whose fixed text alone is) longer than a limit.

use super::{Check, Finding, Found, KeyNeeds, KeySeen, allowed};
use crate::keys::quote;
use crate::lint::ActiveRule;
use crate::scheme::{Scheme, Seg};
use crate::topology::Topology;

pub(super) struct KeyLengthCheck {
    pub max: usize,
}

impl Check for KeyLengthCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, _topo: &Topology) -> Vec<Finding> {
        let max = self.max;
        let mut out = Vec::new();
        for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
            let fixed: usize = k
                .template
                .segs
                .iter()
                .map(|s| match s {
                    Seg::Lit(l) => l.len(),
                    Seg::Var(_) => 0,
                })
                .sum();
            if fixed > max {
                out.push(Finding::at(
                    k.pos,
                    format!(
                        "key '{}': its fixed text alone is {fixed} bytes (over {max})",
                        k.name
                    ),
                    None,
                ));
            }
        }
        out
    }

    fn key_needs(&self) -> KeyNeeds<'_> {
        KeyNeeds::LongerThan(self.max)
    }

    fn key(&self, seen: &KeySeen<'_>) -> Found {
        let KeySeen { key, .. } = *seen;
        let max = self.max;
        (key.len() > max).then(|| {
            let shown: Vec<u8> = key.iter().take(60).copied().collect();
            (
                format!("key {}… is {} bytes (over {max})", quote(&shown), key.len()),
                None,
            )
        })
    }
}
