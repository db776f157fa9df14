//! Configuration numbers: a whole-segment `<int>` that holds a few values over many keys is
//! a literal set, not a variable. Rate-limit keys `LIMITER/<ip>/login/5/1/minute` and
//! `LIMITER/<ip>/search/500/1/day` carry numbers an application fixes (the limit, the window);
//! ids and timestamps take a new value for nearly every key.
//!
//! A pattern whose path has such `<int>`s counts its keys per combination of their values, as
//! long as each holds at most [`INT_LITERAL_CAP`] short values; past that (or at a longer
//! value) the position is a variable and the combinations merge over it. When the patterns
//! are made, a position whose every value holds [`INT_LITERAL_MIN_KEYS`] keys or more is
//! written with its values, one pattern per value. Whether a position stays tracked depends
//! only on the set of values seen, never on their order or on how keys were split between
//! threads, so the result is a function of the keys.

use super::{Class, Delimiters, Key, Observation, PatternStats, Token};

/// Whole-segment `<int>`s tracked per pattern (the first ones of its path).
pub(super) const INT_TRACKED: usize = 3;
/// Distinct values a tracked `<int>` may hold and still be a literal set.
pub(super) const INT_LITERAL_CAP: usize = 4;
/// Digits a configuration number has at most: longer ones are ids, timestamps or time windows
/// (`epoch / period`: 5 digits for a day, 6 for an hour).
const INT_LITERAL_DIGITS: usize = 4;
/// Keys each value of a position must hold for the position to be written with its values.
pub(super) const INT_LITERAL_MIN_KEYS: u64 = 8;

/// Indices of the whole-segment `<int>` edges among `len` edges: an `<int>` with a delimiter
/// (or the key's start) before it and a delimiter (or the key's end) after it.
fn whole_ints(
    len: usize,
    is_int: impl Fn(usize) -> bool,
    is_delim: impl Fn(usize) -> bool,
) -> impl Iterator<Item = usize> {
    (0..len).filter(move |&i| {
        is_int(i) && (i == 0 || is_delim(i - 1)) && (i + 1 == len || is_delim(i + 1))
    })
}

/// [`whole_ints`] of a key's tokens.
pub(super) fn token_ints<'a>(
    tokens: &'a [Token],
    key: &'a [u8],
    d: &'a Delimiters,
) -> impl Iterator<Item = usize> + 'a {
    whole_ints(
        tokens.len(),
        |i| matches!(tokens[i], Token::Class(Class::Int)),
        |i| matches!(tokens[i], Token::Lit { start, end } if end - start == 1 && d.is_delimiter(key[start])),
    )
}

/// [`whole_ints`] of a pattern's path.
pub(super) fn path_ints<'a>(
    path: &'a [Key],
    d: &'a Delimiters,
) -> impl Iterator<Item = usize> + 'a {
    whole_ints(
        path.len(),
        |i| path[i] == Key::Class(Class::Int),
        |i| super::is_delimiter_key(&path[i], d),
    )
}

/// The bytes of the whole-segment `<int>` at token `i`: between the literals around it.
pub(super) fn int_value<'k>(tokens: &[Token], key: &'k [u8], i: usize) -> &'k [u8] {
    let start = match i.checked_sub(1).map(|p| tokens[p]) {
        Some(Token::Lit { end, .. }) => end,
        _ => 0,
    };
    let end = match tokens.get(i + 1) {
        Some(Token::Lit { start, .. }) => *start,
        _ => key.len(),
    };
    &key[start..end]
}

/// Where a pattern is written with its configuration numbers (path indices) and the counts
/// of each combination of their values (the values in the same order).
pub(super) type LiteralParts = (Vec<usize>, Vec<(Vec<Vec<u8>>, PatternStats)>);

/// One pattern's tracked `<int>` values and its counts per combination of them.
#[derive(Debug, Clone)]
pub(super) struct IntSplit {
    /// Whole-segment `<int>`s in the pattern's path when it was made (the first
    /// [`INT_TRACKED`] are tracked): a fold that changes them leaves the pattern whole.
    candidates: u8,
    /// Per tracked position: whether it still holds few short values.
    live: [bool; INT_TRACKED],
    /// Counts per combination of the live positions' values (a position no longer live holds
    /// an empty value in every combination).
    parts: Vec<(Combo, PatternStats)>,
}

/// The values of a pattern's tracked positions, each [packed](pack).
type Combo = [u64; INT_TRACKED];

/// Whether `v` is short enough to be a configuration number: at most [`INT_LITERAL_DIGITS`]
/// digits, or a decimal (`800.26`, `0.5`) whose integer part and fraction each are, in at
/// most seven bytes (what [`pack`] holds).
fn short(v: &[u8]) -> bool {
    v.len() <= 7
        && v.split(|&b| b == b'.')
            .all(|p| p.len() <= INT_LITERAL_DIGITS)
}

/// A number that is [`short`] as one word: its bytes and its length (0 for no value).
fn pack(v: &[u8]) -> u64 {
    debug_assert!(short(v));
    v.iter()
        .enumerate()
        .fold((v.len() as u64) << 56, |w, (i, &b)| {
            w | (b as u64) << (8 * i)
        })
}

/// The bytes of a [packed](pack) number.
fn unpack(w: u64) -> Vec<u8> {
    (0..(w >> 56) as usize)
        .map(|i| (w >> (8 * i)) as u8)
        .collect()
}

impl IntSplit {
    /// The split of a pattern whose path holds `candidates` whole-segment `<int>`s; `None`
    /// when it holds none.
    pub(super) fn new(candidates: usize) -> Option<Box<IntSplit>> {
        (candidates > 0).then(|| {
            let mut live = [false; INT_TRACKED];
            live[..candidates.min(INT_TRACKED)].fill(true);
            Box::new(IntSplit {
                candidates: candidates.min(u8::MAX as usize) as u8,
                live,
                parts: Vec::new(),
            })
        })
    }

    fn tracked(&self) -> usize {
        (self.candidates as usize).min(INT_TRACKED)
    }

    /// The distinct values position `i` holds.
    fn values(&self, i: usize) -> Vec<u64> {
        let mut v: Vec<u64> = self.parts.iter().map(|(c, _)| c[i]).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Position `i` is a variable: the combinations merge over it.
    fn end(&mut self, i: usize) {
        self.live[i] = false;
        let parts = std::mem::take(&mut self.parts);
        for (mut combo, stats) in parts {
            combo[i] = 0;
            self.join(combo, &stats);
        }
    }

    fn join(&mut self, combo: Combo, stats: &PatternStats) {
        match self.parts.iter_mut().find(|(c, _)| *c == combo) {
            Some((_, s)) => s.merge(stats),
            None => self.parts.push((combo, stats.clone())),
        }
    }

    /// Ends every live position past [`INT_LITERAL_CAP`] values; whether any is still live.
    fn settle(&mut self) -> bool {
        for i in 0..self.tracked() {
            if self.live[i] && self.values(i).len() > INT_LITERAL_CAP {
                self.end(i);
            }
        }
        self.live.iter().any(|&l| l)
    }

    /// Counts one key whose tracked `<int>`s read `values`; whether the split still tracks
    /// anything (when not, the pattern is whole from now on).
    pub(super) fn count(
        &mut self,
        values: &[&[u8]],
        obs: &Observation<'_>,
        tag_hash: Option<u64>,
        node_count: usize,
    ) -> bool {
        for (i, v) in values.iter().enumerate().take(self.tracked()) {
            if self.live[i] && !short(v) {
                self.end(i);
            }
        }
        debug_assert_eq!(values.len(), self.tracked());
        let mut combo: Combo = [0; INT_TRACKED];
        for (i, v) in values.iter().enumerate().take(self.tracked()) {
            if self.live[i] {
                combo[i] = pack(v);
            }
        }
        if let Some((_, s)) = self.parts.iter_mut().find(|(c, _)| *c == combo) {
            s.count(obs, tag_hash);
            return true;
        }
        let mut s = PatternStats::new(node_count);
        s.count(obs, tag_hash);
        self.parts.push((combo, s));
        self.settle()
    }

    /// Adds another worker's split of the same pattern; `None` when nothing is tracked any
    /// more.
    pub(super) fn merge(mut self: Box<Self>, other: &IntSplit) -> Option<Box<IntSplit>> {
        if other.candidates != self.candidates {
            return None;
        }
        for i in 0..self.tracked() {
            if self.live[i] && !other.live[i] {
                self.end(i);
            }
        }
        for (combo, stats) in &other.parts {
            let mut combo = *combo;
            for (v, live) in combo.iter_mut().zip(self.live) {
                if !live {
                    *v = 0;
                }
            }
            self.join(combo, stats);
        }
        self.settle().then_some(self)
    }

    /// The pattern's parts as written: per path index of a position written with its values,
    /// and the counts of each combination of those values. `None` when the pattern stays whole
    /// (no position qualifies, or folds changed the path's `<int>`s).
    pub(super) fn literal_parts(&self, path: &[Key], d: &Delimiters) -> Option<LiteralParts> {
        let at: Vec<usize> = path_ints(path, d).collect();
        if at.len() != self.candidates as usize {
            return None;
        }
        let literal: Vec<usize> = (0..self.tracked())
            .filter(|&i| {
                self.live[i]
                    && self.values(i).iter().all(|&v| {
                        let keys: u64 = self
                            .parts
                            .iter()
                            .filter(|(c, _)| c[i] == v)
                            .map(|(_, s)| s.keys)
                            .sum();
                        keys >= INT_LITERAL_MIN_KEYS
                    })
            })
            .collect();
        if literal.is_empty() {
            return None;
        }
        let mut grouped: Vec<(Vec<Vec<u8>>, PatternStats)> = Vec::new();
        for (combo, stats) in &self.parts {
            let values: Vec<Vec<u8>> = literal.iter().map(|&i| unpack(combo[i])).collect();
            match grouped.iter_mut().find(|(c, _)| *c == values) {
                Some((_, s)) => s.merge(stats),
                None => grouped.push((values, stats.clone())),
            }
        }
        grouped.sort_by(|a, b| a.0.cmp(&b.0));
        Some((literal.iter().map(|&i| at[i]).collect(), grouped))
    }
}
