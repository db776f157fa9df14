//! `key-bytes`: whitespace or control bytes in keys and patterns.

use super::{Check, Finding, Found, KeySeen, allowed};
use crate::keys::display::display_key;
use crate::lint::ActiveRule;
use crate::lint::rule::BytesFlag;
use crate::scheme::Scheme;
use crate::topology::Topology;

pub(super) struct KeyBytesCheck(pub BytesFlag);

fn hit(flag: BytesFlag, key: &[u8]) -> bool {
    // Branch-free folds over the whole key: the compiler vectorizes them (an early exit would
    // not be), and keys are short.
    match flag {
        BytesFlag::Whitespace => key
            .iter()
            .fold(false, |acc, &b| acc | (b == b' ') | (b == b'\t')),
        BytesFlag::Control => key.iter().fold(false, |acc, &b| {
            acc | ((b < 0x20) & (b != b'\t')) | (b == 0x7f)
        }),
    }
}

impl Check for KeyBytesCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, _topo: &Topology) -> Vec<Finding> {
        scheme
            .keys
            .iter()
            .filter(|k| !allowed(&k.allow, r) && hit(self.0, k.template.text.as_bytes()))
            .map(|k| {
                Finding::at(
                    k.pos,
                    format!(
                        "key '{}' (`{}`): {}",
                        k.name,
                        k.template.text.escape_debug(),
                        r.spec.summary
                    ),
                    None,
                )
            })
            .collect()
    }

    fn reads_keys(&self) -> bool {
        true
    }

    fn key(&self, seen: &KeySeen<'_>) -> Found {
        let KeySeen { rule: r, key, .. } = *seen;
        hit(self.0, key).then(|| {
            (
                format!("key {}: {}", display_key(key), r.spec.summary),
                None,
            )
        })
    }
}
