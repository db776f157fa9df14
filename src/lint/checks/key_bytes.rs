//! `key-bytes`: whitespace or control bytes in keys and patterns.

use super::{Check, Finding, Found, KeyNeeds, KeySeen, allowed};
use crate::keys::quote;
use crate::lint::ActiveRule;
use crate::lint::rule::BytesFlag;
use crate::scheme::Scheme;
use crate::topology::Topology;

pub(super) struct KeyBytesCheck(pub BytesFlag);

/// Whether `key` has a byte either flag looks for (a space, a tab, a control byte or DEL: all
/// of them are at most 0x20 or 0x7f). Most keys have none, so the linter asks this once a key
/// and the flags' own checks run only when it says yes. Keys of 16 to 64 bytes are compared
/// in overlapping 16-byte SSE2 loads (`crate::simd::mask_at_most_or`).
#[inline]
pub(super) fn odd_bytes(key: &[u8]) -> bool {
    #[cfg(x86_simd)]
    if (16..=crate::simd::MASK_BYTES).contains(&key.len()) {
        return crate::simd::mask_at_most_or(key, 0x20, 0x7f) != 0;
    }
    key.iter()
        .fold(false, |acc, &b| acc | (b <= 0x20) | (b == 0x7f))
}

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

    fn key_needs(&self) -> KeyNeeds<'_> {
        KeyNeeds::OddBytes
    }

    fn key(&self, seen: &KeySeen<'_>) -> Found {
        let KeySeen {
            rule: r, key, odd, ..
        } = *seen;
        (odd && hit(self.0, key)).then(|| (format!("key {}: {}", quote(key), r.spec.summary), None))
    }
}

#[cfg(test)]
mod tests {
    use super::{hit, odd_bytes};
    use crate::lint::rule::BytesFlag;

    #[test]
    fn odd_bytes_is_true_whenever_a_flag_hits() {
        // Every byte at every place of keys 0 to 70 bytes long.
        for len in 0..=70usize {
            for at in 0..len.max(1) {
                for b in 0..=255u8 {
                    let mut key = vec![b'a'; len];
                    if len > 0 {
                        key[at] = b;
                    }
                    let any = hit(BytesFlag::Whitespace, &key) || hit(BytesFlag::Control, &key);
                    let odd = key.iter().any(|&c| c <= 0x20 || c == 0x7f);
                    assert_eq!(odd_bytes(&key), odd, "{key:?}");
                    assert!(!any || odd_bytes(&key), "{key:?}");
                }
            }
        }
    }
}
