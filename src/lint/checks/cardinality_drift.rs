//! `cardinality-drift`: a variable whose distinct values in a dump disagree with the
//! cardinality the scheme declares (a tag declared over 100 seasons that holds one): every
//! figure keyplan derives from the declaration (tag cardinality, skew, plans) is then wrong.

use super::{Check, DumpSeen, Found, Shared};
use crate::scheme::matcher::KeyMatcher;
use crate::sketch::Hll;
use std::cell::RefCell;

pub(super) struct CardinalityDriftCheck {
    min_keys: u64,
    factor: f64,
    /// Per declared key (by its index in the scheme): its sampled keys and their variables'
    /// distinct values, once a key of it is seen.
    seen: RefCell<Vec<Option<Seen>>>,
    /// With other readers of the same dump: the counts they all add to, and this reader's
    /// counts since it last added them.
    shared: Option<std::sync::Arc<std::sync::Mutex<SharedLevels>>>,
    unshared: RefCell<Unshared>,
}

/// Per declared key, per level, the keys all the readers of a dump counted at that level and
/// above (each adds its counts every [`SHARE_EVERY`] keys it counts).
#[derive(Default)]
pub(crate) struct SharedLevels {
    counts: Vec<[u64; LEVELS]>,
}

/// A reader's counts not yet added to the shared ones, and the levels below which the shared
/// counts say no reader need count (per declared key).
#[derive(Default)]
struct Unshared {
    keys: u32,
    counts: Vec<[u64; LEVELS]>,
    floors: Vec<usize>,
}

/// A reader adds its counts to the shared ones after counting this many keys.
const SHARE_EVERY: u32 = 4096;

/// The lowest level the whole dump's sample can settle at, from counts of some of its keys
/// (cumulative, per level, each at most the dump's): a level past [`MAX_KEYS`] here is past
/// it in the dump, so the sample settles above it. (The lowest levels' counts may be the
/// smallest: a reader counts only from its own lowest level up.)
fn floor_level(counts: &[u64; LEVELS]) -> usize {
    (0..LEVELS - 1)
        .rev()
        .find(|&l| counts[l] > MAX_KEYS)
        .map_or(0, |l| l + 1)
}

/// Keys of one declared key whose values are counted, at most: past it, a key counts only
/// when its hash starts with enough zero bits (each bit halving the share), so that the cost
/// of matching keys stays bounded on large dumps. The sample is the same whatever the order
/// the keys come in and however many threads read them.
const MAX_KEYS: u64 = 200_000;

/// Levels of sampling: at level `l`, keys whose hash has `l` or more leading zero bits.
const LEVELS: usize = 16;

/// One declared key's sample: from `min_level` on, per level, the keys counted at it (those
/// of that level and above) and, per variable, a sketch of the values of the keys of exactly
/// that level. The sample at a level is the union of the sketches from it up (a sketch's
/// union is exactly the sketch of all its values), so a key's values go into one sketch.
struct Seen {
    min_level: usize,
    levels: Vec<(u64, Vec<Hll>)>,
    /// The variables, each once, in the order of the sketches.
    names: Vec<String>,
    /// Per variable occurrence in the pattern, its variable's place in `names`.
    place: Vec<usize>,
}

impl Seen {
    fn new(names: &[String]) -> Seen {
        let mut vars: Vec<String> = Vec::new();
        for name in names {
            if !vars.contains(name) {
                vars.push(name.clone());
            }
        }
        let place = names
            .iter()
            .map(|name| vars.iter().position(|n| n == name).unwrap_or(0))
            .collect();
        Seen {
            min_level: 0,
            levels: vec![(0, vec![Hll::new(12); vars.len()]); LEVELS],
            names: vars,
            place,
        }
    }

    /// Drops the levels holding more keys than [`MAX_KEYS`].
    fn settle(&mut self) {
        while self.min_level + 1 < LEVELS && self.levels[self.min_level].0 > MAX_KEYS {
            self.drop_level();
        }
    }

    /// Drops the levels below `floor` (the dump's sample, all readers' keys together, drops
    /// them in the end).
    fn raise_to(&mut self, floor: usize) {
        while self.min_level < floor.min(LEVELS - 1) {
            self.drop_level();
        }
    }

    fn drop_level(&mut self) {
        for h in &mut self.levels[self.min_level].1 {
            *h = Hll::new(12);
        }
        self.min_level += 1;
    }

    /// The keys counted and the distinct values of each variable.
    fn sample(&self) -> (u64, Vec<(&str, Hll)>) {
        let mut vars: Vec<(&str, Hll)> = self
            .names
            .iter()
            .map(|n| (n.as_str(), Hll::new(12)))
            .collect();
        for (_, sketches) in &self.levels[self.min_level..] {
            for ((_, all), h) in vars.iter_mut().zip(sketches) {
                all.merge(h);
            }
        }
        (self.levels[self.min_level].0, vars)
    }
}

impl CardinalityDriftCheck {
    pub(super) fn new(min_keys: u64, factor: f64) -> CardinalityDriftCheck {
        CardinalityDriftCheck {
            min_keys,
            factor: factor.max(1.0),
            seen: RefCell::new(Vec::new()),
            shared: None,
            unshared: RefCell::new(Unshared::default()),
        }
    }

    /// Adds this reader's counts to the shared ones, and raises each declared key's sample
    /// to the level all the counts so far put it at. Every reader counts every key from its
    /// own lowest level up, and none raises past the level the whole dump's keys settle at,
    /// so a merged sample is the one a single reader takes.
    fn share_counts(&self, shared: &std::sync::Mutex<SharedLevels>, seen: &mut [Option<Seen>]) {
        let mut mine = self.unshared.borrow_mut();
        let Unshared {
            keys,
            counts,
            floors,
        } = &mut *mine;
        *keys = 0;
        let mut all = shared.lock().unwrap_or_else(|e| e.into_inner());
        if all.counts.len() < counts.len() {
            all.counts.resize(counts.len(), [0; LEVELS]);
        }
        floors.resize(all.counts.len(), 0);
        for (f, total) in all.counts.iter_mut().enumerate() {
            if let Some(c) = counts.get_mut(f) {
                for (t, c) in total.iter_mut().zip(c.iter_mut()) {
                    *t += std::mem::take(c);
                }
            }
            floors[f] = floor_level(total);
        }
        drop(all);
        for (s, &floor) in seen.iter_mut().zip(floors.iter()) {
            if let Some(s) = s {
                s.raise_to(floor);
            }
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
        if seen.len() <= family {
            seen.resize_with(family + 1, || None);
        }
        let entry = seen[family]
            .get_or_insert_with(|| Seen::new(matcher.var_names(family).unwrap_or_default()));
        let level = (crate::sketch::hash64(key).leading_zeros() as usize).min(LEVELS - 1);
        if level < entry.min_level {
            return;
        }
        let from = entry.min_level;
        // Values come only for a key of the family, each into its variable's sketch at the
        // key's level.
        let sketches = &mut entry.levels[level].1;
        let place = &entry.place;
        let mut at = 0;
        let matched = matcher.for_each_value_of_match(family, key, |value| {
            if let Some(&v) = place.get(at) {
                sketches[v].insert(value);
            }
            at += 1;
        });
        if !matched {
            return;
        }
        for (keys, _) in &mut entry.levels[entry.min_level..=level] {
            *keys += 1;
        }
        if entry.levels[entry.min_level].0 > MAX_KEYS {
            entry.settle();
        }
        let Some(shared) = &self.shared else {
            return;
        };
        let mut mine = self.unshared.borrow_mut();
        if mine.counts.len() <= family {
            mine.counts.resize(family + 1, [0; LEVELS]);
        }
        for c in &mut mine.counts[family][from..=level] {
            *c += 1;
        }
        mine.keys += 1;
        if mine.keys >= SHARE_EVERY {
            drop(mine);
            self.share_counts(shared, &mut seen);
        }
    }

    fn share(&mut self, shared: &Shared) {
        self.shared = Some(shared.drift.clone());
    }

    fn merge(&self, other: &dyn Check) {
        let Some(o) = (other as &dyn std::any::Any).downcast_ref::<CardinalityDriftCheck>() else {
            return;
        };
        let mut mine = self.seen.borrow_mut();
        let theirs_all = o.seen.borrow();
        if mine.len() < theirs_all.len() {
            mine.resize_with(theirs_all.len(), || None);
        }
        for (family, theirs) in theirs_all.iter().enumerate() {
            let Some(theirs) = theirs else {
                continue;
            };
            let Some(m) = mine[family].as_mut() else {
                mine[family] = Some(Seen {
                    min_level: theirs.min_level,
                    levels: theirs.levels.clone(),
                    names: theirs.names.clone(),
                    place: theirs.place.clone(),
                });
                continue;
            };
            m.min_level = m.min_level.max(theirs.min_level);
            for l in m.min_level..LEVELS {
                let (keys, sketches) = &mut m.levels[l];
                *keys += theirs.levels[l].0;
                for (h, t) in sketches.iter_mut().zip(&theirs.levels[l].1) {
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
        // Per declared key seen: its index, keys counted and each variable's values.
        type Sample<'a> = (usize, u64, Vec<(&'a str, Hll)>);
        let samples: Vec<Sample<'_>> = seen
            .iter()
            .enumerate()
            .filter_map(|(f, s)| s.as_ref().map(|s| (f, s.sample())))
            .map(|(f, (keys, vars))| (f, keys, vars))
            .collect();
        let all = samples
            .iter()
            .flat_map(|(f, keys, vars)| vars.iter().map(move |(v, h)| (*f, *v, h, *keys)));
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
