//! Which declared key a dump key is, and its variables' values: the scheme's patterns compiled
//! once, shared by `lint` (undeclared keys, per-key allows) and `plan` (re-keying a sample).

use super::Scheme;
use regex::bytes::{Regex, RegexSet};
use std::sync::OnceLock;

/// The scheme's key patterns, compiled.
#[derive(Debug)]
pub struct KeyMatcher {
    set: RegexSet,
    /// Per declared key: its pattern with one capture group per variable (compiled when first
    /// needed).
    captures: Vec<(String, OnceLock<Option<Regex>>)>,
    /// Per declared key: its variables in pattern order (one per occurrence, as `values`).
    names: Vec<Vec<String>>,
}

impl KeyMatcher {
    /// Compiles every declared key's pattern.
    pub fn new(scheme: &Scheme) -> KeyMatcher {
        let set = RegexSet::new(scheme.keys.iter().map(|k| scheme.key_regex(k, false)))
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
        self.set.matches(key).iter().next()
    }

    /// The values of declared key `family`'s variables in `key`, in pattern order (a repeated
    /// variable once per occurrence); `None` when `key` is not of that family.
    pub fn values(&self, family: usize, key: &[u8]) -> Option<Vec<String>> {
        let (text, re) = self.captures.get(family)?;
        let re = re.get_or_init(|| Regex::new(text).ok()).as_ref()?;
        let caps = re.captures(key)?;
        Some(
            (0..caps.len() - 1)
                .map(|i| {
                    caps.name(&format!("v{i}"))
                        .map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned())
                        .unwrap_or_default()
                })
                .collect(),
        )
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
}
