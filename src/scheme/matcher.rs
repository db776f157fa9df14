//! Which declared key a dump key is, and its variables' values: the scheme's patterns compiled
//! once, shared by `lint` (undeclared keys, per-key allows) and `plan` (re-keying a sample).

use super::Scheme;
use regex::bytes::Regex;
use regex_automata::{Anchored, Input, meta};
use std::sync::OnceLock;

/// The scheme's key patterns, compiled.
#[derive(Debug)]
pub struct KeyMatcher {
    /// Every pattern in one leftmost-first automaton: as each pattern is anchored at both
    /// ends, the match it reports is the first pattern (in declaration order) that matches,
    /// found in one forward pass with no overlapping search.
    set: meta::Regex,
    /// Per declared key: its pattern with one capture group per variable (compiled when first
    /// needed).
    captures: Vec<(String, OnceLock<Option<Regex>>)>,
    /// Per declared key: its variables in pattern order (one per occurrence, as `values`).
    names: Vec<Vec<String>>,
}

impl KeyMatcher {
    /// Compiles every declared key's pattern.
    pub fn new(scheme: &Scheme) -> KeyMatcher {
        let patterns: Vec<String> = scheme
            .keys
            .iter()
            .map(|k| scheme.key_regex(k, false))
            .collect();
        // As `regex::bytes` compiles them: patterns may match bytes that are not UTF-8.
        let set = meta::Regex::builder()
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .configure(meta::Regex::config().utf8_empty(false))
            .build_many(&patterns)
            .expect("invariant: key_regex builds valid regexes");
        let captures = scheme
            .keys
            .iter()
            .map(|k| (scheme.key_regex(k, true), OnceLock::new()))
            .collect();
        let names = scheme
            .keys
            .iter()
            .map(|k| k.template.vars().map(str::to_string).collect())
            .collect();
        KeyMatcher {
            set,
            captures,
            names,
        }
    }

    /// The index (into the scheme's keys) of the first declared key `key` matches.
    pub fn family(&self, key: &[u8]) -> Option<usize> {
        self.set
            .find(Input::new(key).anchored(Anchored::Yes))
            .map(|m| m.pattern().as_usize())
    }

    /// Calls `f` with each variable value of declared key `family` in `key` (in pattern order,
    /// a repeated variable once per occurrence, as byte strings); false when `key` is not of
    /// that family.
    pub fn for_each_value<'k>(
        &self,
        family: usize,
        key: &'k [u8],
        mut f: impl FnMut(&'k [u8]),
    ) -> bool {
        let Some((text, re)) = self.captures.get(family) else {
            return false;
        };
        let Some(re) = re.get_or_init(|| Regex::new(text).ok()).as_ref() else {
            return false;
        };
        let mut locs = re.capture_locations();
        if re.captures_read(&mut locs, key).is_none() {
            return false;
        }
        // The groups are the variables in order (`v0`, `v1`, …): group 0 is the whole match.
        for g in 1..locs.len() {
            f(locs.get(g).map_or(&key[..0], |(a, b)| &key[a..b]));
        }
        true
    }

    /// The values of declared key `family`'s variables in `key`, in pattern order (a repeated
    /// variable once per occurrence); `None` when `key` is not of that family.
    pub fn values(&self, family: usize, key: &[u8]) -> Option<Vec<String>> {
        let mut out = Vec::new();
        self.for_each_value(family, key, |v| {
            out.push(String::from_utf8_lossy(v).into_owned())
        })
        .then_some(out)
    }

    /// The variable names of declared key `family`, in the order of [`KeyMatcher::values`].
    pub fn var_names(&self, family: usize) -> Option<&[String]> {
        self.names.get(family).map(Vec::as_slice)
    }

    /// [`KeyMatcher::family`] with [`KeyMatcher::values`].
    pub fn matched(&self, key: &[u8]) -> Option<(usize, Vec<String>)> {
        let f = self.family(key)?;
        Some((f, self.values(f, key)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_declared_pattern_wins_and_values_come_in_order() {
        let s = Scheme::parse(
            "version: 1\nvars:\n  id: { kind: int }\n  d: { kind: date }\nkeys:\n  a: { pattern: \"user:<id>:<d>\" }\n  b: { pattern: \"user:<id>:<d>\" }\n  c: { pattern: \"cart:{<id>}\" }\n",
        )
        .unwrap();
        let m = KeyMatcher::new(&s);
        assert_eq!(
            m.matched(b"user:42:2026-01-02"),
            Some((0, vec!["42".to_string(), "2026-01-02".to_string()]))
        );
        assert_eq!(m.family(b"cart:{7}"), Some(2));
        assert_eq!(m.family(b"cart:7"), None);
        assert_eq!(m.values(2, b"user:42:2026-01-02"), None);
    }

    #[test]
    fn one_leftmost_first_pass_finds_the_first_pattern_the_set_finds() {
        // Overlapping patterns of every kind, in an order where a later one often matches too.
        let s = Scheme::parse(
            "version: 1\nvars:\n  i: { kind: int }\n  w: { kind: word }\n  h: { kind: hex }\n  a: { kind: any }\n  e: { kind: enum, values: [x, xy, \"7\"] }\nkeys:\n  k0: { pattern: \"u:<i>\" }\n  k1: { pattern: \"u:<h>\" }\n  k2: { pattern: \"u:<w>\" }\n  k3: { pattern: \"u:<e>:<a>\" }\n  k4: { pattern: \"<a>:<i>\" }\n  k5: { pattern: \"u:<a>\" }\n",
        )
        .unwrap();
        let m = KeyMatcher::new(&s);
        let set =
            regex::bytes::RegexSet::new(s.keys.iter().map(|k| s.key_regex(k, false))).unwrap();
        let pieces: [&[u8]; 12] = [
            b"u", b":", b"7", b"x", b"y", b"ab", b"12", b"-", b"\xff", b"\n", b"F", b"_",
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut tried = 0;
        for _ in 0..20_000 {
            let mut key = b"u:".to_vec();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut r = state;
            for _ in 0..(r % 5) {
                r /= 5;
                key.extend_from_slice(pieces[(r % 12) as usize]);
                r /= 12;
            }
            assert_eq!(
                m.family(&key),
                set.matches(&key).iter().next(),
                "{}",
                String::from_utf8_lossy(&key)
            );
            tried += usize::from(m.family(&key).is_some_and(|f| f > 0));
        }
        assert!(tried > 1000, "later patterns are reached: {tried}");
    }
}
