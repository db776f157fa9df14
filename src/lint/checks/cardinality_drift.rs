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
    /// Per declared key: its sampled keys and their variables' distinct values.
    seen: RefCell<BTreeMap<usize, Seen>>,
}

/// Keys of one declared key whose values are counted, at most: past it, a key counts only
/// when its hash starts with enough zero bits (each bit halving the share), so that the cost
/// of matching keys stays bounded on large dumps. The sample is the same whatever the order
/// the keys come in and however many threads read them.
const MAX_KEYS: u64 = 200_000;

/// Levels of sampling: at level `l`, keys whose hash has `l` or more leading zero bits.
const LEVELS: usize = 16;

/// One declared key's sample: from `min_level` on, per level, the keys counted and each
/// variable's distinct values among them.
struct Seen {
    min_level: usize,
    levels: Vec<(u64, Vec<(String, Hll)>)>,
}

impl Seen {
    fn new(names: &[String]) -> Seen {
        let mut vars: Vec<(String, Hll)> = Vec::new();
        for name in names {
            if !vars.iter().any(|(n, _)| n == name) {
                vars.push((name.clone(), Hll::new(12)));
            }
        }
        Seen {
            min_level: 0,
            levels: vec![(0, vars); LEVELS],
        }
    }

    /// Drops the levels holding more keys than [`MAX_KEYS`].
    fn settle(&mut self) {
        while self.min_level + 1 < LEVELS && self.levels[self.min_level].0 > MAX_KEYS {
            let vars = &mut self.levels[self.min_level].1;
            *vars = vars
                .iter()
                .map(|(n, _)| (n.clone(), Hll::new(12)))
                .collect();
            self.min_level += 1;
        }
    }

    /// The keys counted and the distinct values of each variable.
    fn sample(&self) -> &(u64, Vec<(String, Hll)>) {
        &self.levels[self.min_level]
    }
}

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
        let entry = seen
            .entry(family)
            .or_insert_with(|| Seen::new(matcher.var_names(family).unwrap_or_default()));
        let level = (crate::sketch::hash64(key).leading_zeros() as usize).min(LEVELS - 1);
        if level < entry.min_level {
            return;
        }
        let Some(names) = matcher.var_names(family) else {
            return;
        };
        let mut values: Vec<&[u8]> = Vec::with_capacity(names.len());
        if !matcher.for_each_value(family, key, |v| values.push(v)) {
            return;
        }
        for l in entry.min_level..=level {
            let (keys, vars) = &mut entry.levels[l];
            *keys += 1;
            for (name, value) in names.iter().zip(&values) {
                if let Some((_, hll)) = vars.iter_mut().find(|(n, _)| n == name) {
                    hll.insert(value);
                }
            }
        }
        entry.settle();
    }

    fn merge(&self, other: &dyn Check) {
        let Some(o) = (other as &dyn std::any::Any).downcast_ref::<CardinalityDriftCheck>() else {
            return;
        };
        let mut mine = self.seen.borrow_mut();
        for (family, theirs) in o.seen.borrow().iter() {
            let Some(m) = mine.get_mut(family) else {
                mine.insert(
                    *family,
                    Seen {
                        min_level: theirs.min_level,
                        levels: theirs.levels.clone(),
                    },
                );
                continue;
            };
            m.min_level = m.min_level.max(theirs.min_level);
            for l in m.min_level..LEVELS {
                let (keys, vars) = &mut m.levels[l];
                *keys += theirs.levels[l].0;
                for ((_, h), (_, t)) in vars.iter_mut().zip(&theirs.levels[l].1) {
                    h.merge(t);
                }
            }
            m.settle();
        }
    }

    fn dump(&self, seen: &DumpSeen<'_>) -> Found {
        let DumpSeen { scheme, .. } = *seen;
        let scheme = scheme?;
        let mut found: Vec<(f64, String, String)> = Vec::new();
        let seen = self.seen.borrow();
        let all = seen.iter().flat_map(|(f, s)| {
            let (keys, vars) = s.sample();
            vars.iter().map(move |(v, h)| (*f, v, h, *keys))
        });
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
