//! Redis Enterprise (Redis Software) and Redis Cloud databases reached through their proxy
//! endpoint: a slot map whose keys are placed by the database's hashing policy, and a proxy
//! that runs some multi-key commands across slots itself.
//!
//! - **Hashing policies.** `redis`: the open-source rule (the first `{…}` with content).
//!   `standard`: the database's two default rules, `.*{(?<tag>.*)}.*` then `(?<tag>.*)`, which
//!   differ from the open-source rule on empty tags (`{}a` and `{}b` share a slot) and on
//!   several braces (`{a}b}` hashes `a}b`). `custom`: up to 32 PCRE rules of up to 256
//!   characters, each with a `tag` named group; the first rule that matches (anchored at the
//!   start of the key) gives the tag, and a key no rule matches is refused by the database.
//!   The rules run on PCRE2 itself, as the database runs them on PCRE. The tag's slot is
//!   CRC16 of the tag mod 16384, like every Redis slot.
//! - **The proxy** accepts MGET, MSET, DEL, EXISTS, UNLINK and TOUCH across slots and sends
//!   each shard its part; on an Active-Active database only MGET, EXISTS and TOUCH. Every other
//!   multi-key command, a MULTI…EXEC block and a script's declared keys must share one slot.
//!   A script that touches a key it did not declare runs on its declared keys' shard, and no
//!   error says when that key belongs to another.

use crate::slot::{crc16, key_slot};

/// How many rules a custom policy may have.
pub const MAX_RULES: usize = 32;
/// The longest rule, in characters.
pub const MAX_RULE_CHARS: usize = 256;

/// The commands the proxy accepts across slots.
pub const CROSS_SLOT: [&str; 6] = ["MGET", "MSET", "DEL", "EXISTS", "UNLINK", "TOUCH"];
/// The commands an Active-Active database's proxy accepts across slots.
pub const CROSS_SLOT_ACTIVE_ACTIVE: [&str; 3] = ["MGET", "EXISTS", "TOUCH"];

/// The rules of the `standard` policy (the database's defaults).
pub const STANDARD_RULES: [&str; 2] = [".*{(?<tag>.*)}.*", "(?<tag>.*)"];

/// One custom hashing rule, compiled.
#[derive(Debug)]
pub struct Rule {
    /// The rule as written.
    pub source: String,
    regex: pcre2::bytes::Regex,
    tag: usize,
}

/// How a database turns a key into the bytes it hashes.
#[derive(Debug)]
pub enum HashingPolicy {
    /// The open-source rule: the first `{…}` with content, else the whole key.
    Redis,
    /// The database's default rules (see [`STANDARD_RULES`]).
    Standard(Vec<Rule>),
    /// The user's rules, first match wins.
    Custom(Vec<Rule>),
}

/// Why a hashing policy cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// No rules.
    #[error("a custom hashing policy needs at least one rule")]
    NoRules,
    /// More than the database accepts.
    #[error("{0} rules: a database accepts at most {MAX_RULES}")]
    TooMany(usize),
    /// A rule longer than the database accepts.
    #[error("rule {index} is {chars} characters long: a database accepts at most {MAX_RULE_CHARS}")]
    TooLong {
        /// 1-based.
        index: usize,
        /// Its length.
        chars: usize,
    },
    /// A rule PCRE does not compile.
    #[error("rule {index} `{rule}` is not a valid PCRE pattern: {message}")]
    Invalid {
        /// 1-based.
        index: usize,
        /// The rule.
        rule: String,
        /// PCRE's words.
        message: String,
    },
    /// A rule without the `tag` group.
    #[error("rule {index} `{rule}` has no `tag` group: write the part to hash as (?<tag>…)")]
    NoTag {
        /// 1-based.
        index: usize,
        /// The rule.
        rule: String,
    },
}

impl Rule {
    /// Compiles rule number `index` (1-based) as the database does: PCRE, anchored at the start
    /// of the key, no other option.
    pub fn new(index: usize, source: &str) -> Result<Rule, PolicyError> {
        let chars = source.chars().count();
        if chars > MAX_RULE_CHARS {
            return Err(PolicyError::TooLong { index, chars });
        }
        // `\A(?:…)` anchors the way PCRE_ANCHORED does for a single match.
        let regex = pcre2::bytes::RegexBuilder::new()
            .jit_if_available(true)
            .build(&format!("\\A(?:{source})"))
            .map_err(|e| PolicyError::Invalid {
                index,
                rule: source.to_string(),
                message: e.to_string(),
            })?;
        let tag = regex
            .capture_names()
            .iter()
            .position(|n| n.as_deref() == Some("tag"))
            .ok_or_else(|| PolicyError::NoTag {
                index,
                rule: source.to_string(),
            })?;
        Ok(Rule {
            source: source.to_string(),
            regex,
            tag,
        })
    }

    /// The tag this rule gives `key`, if it matches (a tag group that takes no part in the
    /// match hashes the empty string).
    pub fn tag<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        // A match error (PCRE's match limit on a pathological rule) is taken as no match.
        let caps = self.regex.captures(key).ok()??;
        Some(caps.get(self.tag).map_or(&key[..0], |m| m.as_bytes()))
    }
}

impl HashingPolicy {
    /// The `standard` policy.
    pub fn standard() -> HashingPolicy {
        HashingPolicy::Standard(
            STANDARD_RULES
                .iter()
                .enumerate()
                .map(|(i, r)| Rule::new(i + 1, r).expect("the default rules compile"))
                .collect(),
        )
    }

    /// A custom policy of `rules`, in order.
    pub fn custom<S: AsRef<str>>(rules: &[S]) -> Result<HashingPolicy, PolicyError> {
        if rules.is_empty() {
            return Err(PolicyError::NoRules);
        }
        if rules.len() > MAX_RULES {
            return Err(PolicyError::TooMany(rules.len()));
        }
        let rules = rules
            .iter()
            .enumerate()
            .map(|(i, r)| Rule::new(i + 1, r.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HashingPolicy::Custom(rules))
    }

    /// The policy's name: `redis`, `standard` or `custom`.
    pub fn name(&self) -> &'static str {
        match self {
            HashingPolicy::Redis => "redis",
            HashingPolicy::Standard(_) => "standard",
            HashingPolicy::Custom(_) => "custom",
        }
    }

    /// The rules (none for `redis`).
    pub fn rules(&self) -> &[Rule] {
        match self {
            HashingPolicy::Redis => &[],
            HashingPolicy::Standard(r) | HashingPolicy::Custom(r) => r,
        }
    }

    /// The bytes the database hashes for `key` (None: no rule matches, the database refuses
    /// the key).
    pub fn hashed<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match self {
            HashingPolicy::Redis => Some(crate::slot::TagShape::of(key).hashed(key)),
            HashingPolicy::Standard(rules) | HashingPolicy::Custom(rules) => {
                rules.iter().find_map(|r| r.tag(key))
            }
        }
    }

    /// The rule (1-based) that gives `key` its tag, with the rule's text (None for `redis`, or
    /// when no rule matches).
    pub fn rule_for(&self, key: &[u8]) -> Option<(usize, &str)> {
        self.rules()
            .iter()
            .enumerate()
            .find(|(_, r)| r.tag(key).is_some())
            .map(|(i, r)| (i + 1, r.source.as_str()))
    }

    /// The slot of `key` (None: no rule matches).
    #[inline]
    pub fn slot(&self, key: &[u8]) -> Option<u16> {
        match self {
            HashingPolicy::Redis => Some(key_slot(key)),
            _ => self.hashed(key).map(|t| crc16(t) & 0x3fff),
        }
    }

    /// The slot of `key` with the bytes hashed for it, the rules run once (None: no rule
    /// matches).
    #[inline]
    pub fn place<'k>(&self, key: &'k [u8]) -> Option<(u16, &'k [u8])> {
        match self {
            HashingPolicy::Redis => {
                Some((key_slot(key), crate::slot::TagShape::of(key).hashed(key)))
            }
            _ => self.hashed(key).map(|t| (crc16(t) & 0x3fff, t)),
        }
    }
}

/// A Redis Enterprise / Redis Cloud database behind its proxy.
#[derive(Debug)]
pub struct Enterprise {
    /// How keys are placed.
    pub hashing: HashingPolicy,
    /// An Active-Active (CRDB) database: the proxy splits only read-only commands.
    pub active_active: bool,
}

impl Enterprise {
    /// Whether the proxy runs `command` (any case) over keys of several slots.
    pub fn accepts_cross_slot(&self, command: &str) -> bool {
        let list: &[&str] = match self.active_active {
            true => &CROSS_SLOT_ACTIVE_ACTIVE,
            false => &CROSS_SLOT,
        };
        list.iter().any(|c| c.eq_ignore_ascii_case(command))
    }

    /// A line saying what this database is: `Redis Enterprise proxy, hashing: custom (3 rules)`.
    pub fn describe(&self) -> String {
        let rules = match &self.hashing {
            HashingPolicy::Custom(r) => format!(" ({} rules)", r.len()),
            _ => String::new(),
        };
        format!(
            "Redis Enterprise proxy{}, hashing policy: {}{rules}",
            if self.active_active {
                " (Active-Active)"
            } else {
                ""
            },
            self.hashing.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(p: &HashingPolicy, k: &str) -> Option<String> {
        p.hashed(k.as_bytes())
            .map(|t| String::from_utf8_lossy(t).into_owned())
    }

    #[test]
    fn the_standard_policy_differs_from_redis_where_the_documentation_says() {
        let s = HashingPolicy::standard();
        let r = HashingPolicy::Redis;
        // One tag: the same bytes.
        for k in ["foo{bar}", "{bar}baz", "foo{bar}baz", "plain"] {
            assert_eq!(tag(&s, k), tag(&r, k), "{k}");
        }
        // Empty tags are not ignored: `{}foo` and `{}bar` share a slot.
        assert_eq!(tag(&s, "{}foo").as_deref(), Some(""));
        assert_eq!(s.slot(b"{}foo"), s.slot(b"{}bar"));
        assert_ne!(r.slot(b"{}foo"), r.slot(b"{}bar"));
        // Several braces: `{foo}bar}` hashes `foo}bar`.
        assert_eq!(tag(&s, "{foo}bar}").as_deref(), Some("foo}bar"));
        assert_ne!(s.slot(b"{foo}bar}"), s.slot(b"{foo}qux}"));
        assert_eq!(r.slot(b"{foo}bar}"), r.slot(b"{foo}qux}"));
        // The slot of a tag is CRC16 of the tag.
        assert_eq!(s.slot(b"user:{42}:a"), Some(key_slot(b"42")));
    }

    #[test]
    fn custom_rules_first_match_wins_and_unmatched_keys_are_refused() {
        let p = HashingPolicy::custom(&[
            r"order:(?<tag>\d+):.*",
            r"user:(?<tag>[^:]+)",
            r".*\|(?<tag>)",
        ])
        .unwrap();
        assert_eq!(tag(&p, "order:17:items").as_deref(), Some("17"));
        assert_eq!(p.slot(b"order:17:items"), p.slot(b"order:17:total"));
        // Anchored at the start: `xorder:…` is not an order key.
        assert_eq!(tag(&p, "xorder:17:items"), None);
        assert_eq!(tag(&p, "user:ann:cart").as_deref(), Some("ann"));
        assert_eq!(tag(&p, "a|b").as_deref(), Some(""));
        assert_eq!(p.slot(b"nothing"), None);
    }

    #[test]
    fn bad_policies_say_which_rule_and_why() {
        let long = format!("(?<tag>{})", "a".repeat(260));
        assert!(matches!(
            HashingPolicy::custom(&["(?<tag>.*)", long.as_str()]),
            Err(PolicyError::TooLong { index: 2, .. })
        ));
        assert!(matches!(
            HashingPolicy::custom(&["(?<tag>a"]),
            Err(PolicyError::Invalid { index: 1, .. })
        ));
        assert!(matches!(
            HashingPolicy::custom(&["(?<id>.*)"]),
            Err(PolicyError::NoTag { index: 1, .. })
        ));
        let many = vec!["(?<tag>.*)"; 33];
        assert_eq!(
            HashingPolicy::custom(&many).unwrap_err(),
            PolicyError::TooMany(33)
        );
        assert_eq!(
            HashingPolicy::custom::<&str>(&[]).unwrap_err(),
            PolicyError::NoRules
        );
    }

    #[test]
    fn the_proxy_splits_six_commands_and_active_active_three() {
        let e = Enterprise {
            hashing: HashingPolicy::Redis,
            active_active: false,
        };
        assert!(e.accepts_cross_slot("mset"));
        assert!(!e.accepts_cross_slot("SUNION"));
        let aa = Enterprise {
            active_active: true,
            ..e
        };
        assert!(aa.accepts_cross_slot("MGET") && !aa.accepts_cross_slot("DEL"));
    }
}
