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
//! - **A budget per key.** Each rule may take [`MATCH_LIMIT`] steps of PCRE2's backtracking on
//!   a key (a nested quantifier such as `(a+)+$` takes exponentially many). A rule that runs
//!   out, or fails to match for any other reason, decides nothing: the key is unplaced (the
//!   next rule is not tried, since the database's answer is not known), and the rule counts
//!   the distinct keys it gave up on for a warning ([`HashingPolicy::limit_warnings`]).
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

/// The backtracking steps PCRE2 may take to match one rule against one key (the pattern's own
/// `(*LIMIT_MATCH=…)`, which the JIT honours too): a thousandth of PCRE2's default, so that a
/// catastrophic rule costs well under a millisecond a key, while the rules keys are written for
/// (`.*{(?<tag>.*)}.*` on a key of 60 KB) take a few thousand at most.
pub const MATCH_LIMIT: u32 = 100_000;

/// The JIT's stack for matching a rule (PCRE2's own default is 32 KiB, which a group repeated
/// over a long key exhausts).
const JIT_STACK: usize = 1 << 20;

/// One custom hashing rule, compiled.
#[derive(Debug)]
pub struct Rule {
    /// The rule as written.
    pub source: String,
    regex: pcre2::bytes::Regex,
    tag: usize,
    /// The keys this rule could not finish matching (by a hash of each, so each counts once
    /// however often it is placed), and PCRE2's words for the first failure.
    gave_up: std::sync::Mutex<(std::collections::HashSet<u64>, Option<String>)>,
}

/// What one rule (or a whole policy) makes of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleMatch<'k> {
    /// It matches: these bytes are hashed.
    Tag(&'k [u8]),
    /// It does not match.
    NoMatch,
    /// PCRE2 could not finish matching it (its match limit, or its stack): nothing is known.
    GaveUp,
}

/// Where a policy's rules leave a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement<'k> {
    /// Rule `rule` (1-based; 0 for the `redis` policy) is the first that matches; `tag` is
    /// hashed.
    Rule {
        /// 1-based.
        rule: usize,
        /// The bytes hashed.
        tag: &'k [u8],
    },
    /// No rule matches: the database refuses the key.
    NoRule,
    /// Rule `rule` (1-based) could not be matched within [`MATCH_LIMIT`]: the key is unplaced.
    GaveUp {
        /// 1-based.
        rule: usize,
    },
}

/// A rule that gave up on keys (see [`HashingPolicy::limit_hits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitHit {
    /// 1-based.
    pub rule: usize,
    /// The rule as written.
    pub source: String,
    /// Distinct keys it gave up on.
    pub keys: u64,
    /// PCRE2's words for the first time (`match limit exceeded`).
    pub reason: String,
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
        // `\A(?:…)` anchors the way PCRE_ANCHORED does for a single match; the match limit
        // bounds the work on one key.
        let regex = pcre2::bytes::RegexBuilder::new()
            .jit_if_available(true)
            .max_jit_stack_size(Some(JIT_STACK))
            .build(&format!("(*LIMIT_MATCH={MATCH_LIMIT})\\A(?:{source})"))
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
            gave_up: Default::default(),
        })
    }

    /// What this rule makes of `key`: the tag when it matches (a tag group that takes no part
    /// in the match hashes the empty string). A match PCRE2 cannot finish is counted against
    /// the rule.
    pub fn matched<'k>(&self, key: &'k [u8]) -> RuleMatch<'k> {
        match self.regex.captures(key) {
            Ok(Some(caps)) => {
                RuleMatch::Tag(caps.get(self.tag).map_or(&key[..0], |m| m.as_bytes()))
            }
            Ok(None) => RuleMatch::NoMatch,
            Err(e) => {
                use std::hash::{Hash as _, Hasher as _};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                key.hash(&mut h);
                let mut g = self.gave_up.lock().unwrap_or_else(|p| p.into_inner());
                g.0.insert(h.finish());
                g.1.get_or_insert_with(|| {
                    let words = e.to_string();
                    words
                        .rsplit_once(": ")
                        .map_or(words.clone(), |(_, w)| w.to_string())
                });
                RuleMatch::GaveUp
            }
        }
    }

    /// The tag this rule gives `key`, if it matches (None also when PCRE2 gave up on it).
    pub fn tag<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match self.matched(key) {
            RuleMatch::Tag(t) => Some(t),
            RuleMatch::NoMatch | RuleMatch::GaveUp => None,
        }
    }

    /// Distinct keys this rule gave up on so far, and PCRE2's words for the first.
    fn gave_up(&self) -> (u64, Option<String>) {
        let g = self.gave_up.lock().unwrap_or_else(|p| p.into_inner());
        (g.0.len() as u64, g.1.clone())
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

    /// Where the rules leave `key`: the first rule that matches, none, or the rule PCRE2 gave
    /// up on (the rules after it are not tried: whether it matches is not known).
    pub fn placement<'k>(&self, key: &'k [u8]) -> Placement<'k> {
        match self {
            HashingPolicy::Redis => Placement::Rule {
                rule: 0,
                tag: crate::slot::TagShape::of(key).hashed(key),
            },
            HashingPolicy::Standard(rules) | HashingPolicy::Custom(rules) => {
                for (i, r) in rules.iter().enumerate() {
                    match r.matched(key) {
                        RuleMatch::Tag(tag) => return Placement::Rule { rule: i + 1, tag },
                        RuleMatch::NoMatch => {}
                        RuleMatch::GaveUp => return Placement::GaveUp { rule: i + 1 },
                    }
                }
                Placement::NoRule
            }
        }
    }

    /// The bytes the database hashes for `key` (None: no rule matches, and the database
    /// refuses the key, or PCRE2 gave up on a rule: see [`HashingPolicy::placement`]).
    pub fn hashed<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match self.placement(key) {
            Placement::Rule { tag, .. } => Some(tag),
            Placement::NoRule | Placement::GaveUp { .. } => None,
        }
    }

    /// The rule (1-based) that gives `key` its tag, with the rule's text (None for `redis`,
    /// when no rule matches, or when PCRE2 gave up on a rule first).
    pub fn rule_for(&self, key: &[u8]) -> Option<(usize, &str)> {
        match self.placement(key) {
            Placement::Rule { rule, .. } if rule > 0 => {
                Some((rule, self.rules()[rule - 1].source.as_str()))
            }
            _ => None,
        }
    }

    /// The rules PCRE2 gave up on for some keys so far, in rule order, with how many keys.
    pub fn limit_hits(&self) -> Vec<LimitHit> {
        self.rules()
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let (keys, reason) = r.gave_up();
                (keys > 0).then(|| LimitHit {
                    rule: i + 1,
                    source: r.source.clone(),
                    keys,
                    reason: reason.unwrap_or_default(),
                })
            })
            .collect()
    }

    /// A warning per rule PCRE2 gave up on (see [`HashingPolicy::limit_hits`]), in words.
    pub fn limit_warnings(&self) -> Vec<String> {
        self.limit_hits()
            .iter()
            .map(|h| {
                format!(
                    "rule {} `{}` of the {} hashing policy could not be matched on {} key(s) within {MATCH_LIMIT} backtracking steps a key ({}): where the database puts them is unknown, so they are reported as unplaced; simplify the rule (a nested quantifier such as `(a+)+` backtracks exponentially)",
                    h.rule,
                    h.source,
                    self.name(),
                    h.keys,
                    h.reason
                )
            })
            .collect()
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
    fn a_rule_pcre_gives_up_on_leaves_the_key_unplaced_and_is_counted() {
        // `(a+)+$` on `aaa…b` backtracks exponentially: past the match limit, the key is
        // unplaced, never placed by the catch-all rule after it.
        let p = HashingPolicy::custom(&["(?<tag>(a+)+$)", "(?<tag>.*)"]).unwrap();
        let hostile: Vec<Vec<u8>> = (0..50)
            .map(|i| [vec![b'a'; 30 + i % 5], format!("b{i}").into_bytes()].concat())
            .collect();
        for k in &hostile {
            assert_eq!(p.placement(k), Placement::GaveUp { rule: 1 });
            assert_eq!(p.hashed(k), None);
            assert_eq!(p.slot(k), None);
            assert_eq!(p.rule_for(k), None);
        }
        // Placed again, a key counts once; a key the rule matches is placed by it.
        assert_eq!(p.slot(&hostile[0]), None);
        assert_eq!(tag(&p, "aaaa").as_deref(), Some("aaaa"));
        assert_eq!(
            p.placement(b"xyz"),
            Placement::Rule {
                rule: 2,
                tag: b"xyz"
            }
        );
        let hits = p.limit_hits();
        assert_eq!(
            hits,
            vec![LimitHit {
                rule: 1,
                source: "(?<tag>(a+)+$)".into(),
                keys: 50,
                reason: "match limit exceeded".into(),
            }]
        );
        let w = p.limit_warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("rule 1 `(?<tag>(a+)+$)` of the custom hashing policy could not be matched on 50 key(s) within 100000 backtracking steps"),
            "{}",
            w[0]
        );
        // The standard rules run within the budget on long keys of their shape.
        let s = HashingPolicy::standard();
        let long = [b"x".repeat(60_000), b"{a}b".to_vec()].concat();
        assert_eq!(s.hashed(&long), Some(&b"a"[..]));
        assert!(s.limit_hits().is_empty());
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
