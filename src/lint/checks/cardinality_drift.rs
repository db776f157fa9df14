//! `cardinality-drift`: a variable whose distinct values in a dump disagree with the
//! cardinality the scheme declares (a tag declared over 100 seasons that holds one): every
//! figure keyplan derives from the declaration (tag cardinality, skew, plans) is then wrong.

use super::{Check, DumpSeen, Found};
use crate::scheme::matcher::KeyMatcher;
use crate::sketch::Hll;
use std::cell::RefCell;
use std::collections::BTreeMap;

pub(super) struct CardinalityDriftCheck {
    min_keys: u64,
    factor: f64,
    /// Per declared key: keys read, and per variable the distinct values seen.
    seen: RefCell<BTreeMap<usize, Seen>>,
}

/// Keys read of one declared key, and its variables' distinct values.
type Seen = (u64, Vec<(String, Hll)>);

/// Keys of one declared key read for its values; past it the figures are those of the first
/// keys read (a dump in SCAN order is in hash order, a fair sample), which bounds the cost of
/// the pattern match on large dumps.
const MAX_KEYS: u64 = 200_000;

impl CardinalityDriftCheck {
    pub(super) fn new(min_keys: u64, factor: f64) -> CardinalityDriftCheck {
        CardinalityDriftCheck {
            min_keys,
            factor: factor.max(1.0),
            seen: RefCell::new(BTreeMap::new()),
        }
    }
}

/// Distinct values expected among `draws` uniform draws from `n` values.
fn expected_distinct(n: u64, draws: u64) -> f64 {
    let n = n.max(1) as f64;
    n * (1.0 - (-(draws as f64) / n).exp())
}

impl Check for CardinalityDriftCheck {
    fn wants_values(&self) -> bool {
        true
    }

    fn family_key(&self, family: usize, key: &[u8], matcher: &KeyMatcher) {
        let mut seen = self.seen.borrow_mut();
        let entry = seen.entry(family).or_insert_with(|| {
            let mut vars: Vec<(String, Hll)> = Vec::new();
            for name in matcher.var_names(family).unwrap_or_default() {
                if !vars.iter().any(|(n, _)| n == name) {
                    vars.push((name.clone(), Hll::new(12)));
                }
            }
            (0, vars)
        });
        if entry.0 >= MAX_KEYS {
            return;
        }
        let (Some(values), Some(names)) = (matcher.values(family, key), matcher.var_names(family))
        else {
            return;
        };
        entry.0 += 1;
        for (name, value) in names.iter().zip(&values) {
            if let Some((_, hll)) = entry.1.iter_mut().find(|(n, _)| n == name) {
                hll.insert(value.as_bytes());
            }
        }
    }

    fn dump(&self, seen: &DumpSeen<'_>) -> Found {
        let DumpSeen { scheme, .. } = *seen;
        let scheme = scheme?;
        let mut found: Vec<(f64, String, String)> = Vec::new();
        let seen = self.seen.borrow();
        let all = seen
            .iter()
            .flat_map(|(f, (keys, vars))| vars.iter().map(move |(v, h)| (*f, v, h, *keys)));
        for (family, var, hll, keys) in all {
            let keys = &keys;
            let Some(declared) = scheme.cardinality(var) else {
                continue;
            };
            if *keys < self.min_keys {
                continue;
            }
            let observed = hll.estimate().min(*keys);
            let expected = expected_distinct(declared, *keys);
            let key = &scheme.keys[family].name;
            // Off by more than the factor either way (HyperLogLog's ~2% error aside).
            let (off, text) = if (observed as f64) * self.factor < expected {
                (
                    expected / observed.max(1) as f64,
                    format!(
                        "key '{key}': <{var}> takes about {observed} distinct value(s) in {keys} dump keys, but the scheme declares {declared} (a sample this large would show about {expected:.0})"
                    ),
                )
            } else if observed as f64 > declared as f64 * self.factor * 1.05 {
                (
                    observed as f64 / declared as f64,
                    format!(
                        "key '{key}': <{var}> takes about {observed} distinct values in {keys} dump keys, more than the {declared} the scheme declares"
                    ),
                )
            } else {
                continue;
            };
            found.push((
                off,
                text,
                format!("declare `{var}: {{ cardinality: {} }}`", observed.max(1)),
            ));
        }
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        let (_, first, help) = found.first()?.clone();
        let more = found.len() - 1;
        Some((
            if more > 0 {
                format!("{first}; and {more} more variable(s) off their declaration")
            } else {
                first
            },
            Some(format!(
                "{help} (tag-cardinality findings, skew and plans follow the declaration)"
            )),
        ))
    }
}
