//! Which rules a dump key is checked by. Each rule that reads keys says what a key must have
//! for its check to find anything ([`super::KeyNeeds`]); the gates turn that into bit masks,
//! so a key that no rule applies to (most keys) costs a few instructions, not a call per rule.

/// A rule's test of a key before its check is called: what [`super::KeyNeeds`] says, built.
pub(super) enum Gate {
    /// Every key.
    Always,
    /// A key with a `{`.
    Brace,
    /// A key with a byte at most 0x20 or DEL.
    OddBytes,
    /// A key longer than this.
    LongerThan(usize),
    /// A key no declared family matches (a scheme is given).
    Unmatched,
    /// A key of a declared family (a check that reads values of declared keys).
    Family,
    /// A key this pattern matches.
    Pattern(Box<KeyGate>),
}

impl Gate {
    /// The gate of a pattern (every key, for a pattern the regex engine refuses: its check
    /// then finds nothing itself).
    pub(super) fn pattern(pattern: &str) -> Gate {
        KeyGate::new(pattern).map_or(Gate::Always, |g| Gate::Pattern(Box::new(g)))
    }
}

/// The gates of the rules that read keys, as bit masks over their positions (in rule order).
pub(super) struct Gates {
    /// Per position, the rule's index among the active rules.
    rules: Vec<usize>,
    /// 64-bit words a mask has.
    words: usize,
    always: Vec<u64>,
    brace: Vec<u64>,
    odd: Vec<u64>,
    unmatched: Vec<u64>,
    family: Vec<u64>,
    /// Length gates: position and length, and the least length (a shorter key passes none).
    longer: Vec<(usize, usize)>,
    least_longer: usize,
    /// Pattern gates by position.
    patterns: Vec<Option<KeyGate>>,
    /// Per first byte of a key, the pattern gates it may pass (`words` words each): a pattern
    /// whose DFA is dead after that byte is not tried.
    first: Vec<u64>,
    /// All pattern gates (tried on an empty key).
    any_pattern: Vec<u64>,
    /// Pattern gates whose every match holds a byte at most 0x20 or DEL (kombu's `\x06\x16`
    /// separator): a key with no such byte (most keys) passes none of them, and they are not
    /// tried on it.
    needs_odd: Vec<u64>,
}

impl Gates {
    /// The gates of `(rule index, gate)` pairs, in rule order.
    pub(super) fn new(gates: Vec<(usize, Gate)>) -> Gates {
        let words = gates.len().div_ceil(64).max(1);
        let empty = vec![0u64; words];
        let mut g = Gates {
            rules: gates.iter().map(|(i, _)| *i).collect(),
            words,
            always: empty.clone(),
            brace: empty.clone(),
            odd: empty.clone(),
            unmatched: empty.clone(),
            family: empty.clone(),
            longer: Vec::new(),
            least_longer: usize::MAX,
            patterns: Vec::new(),
            first: vec![0u64; 256 * words],
            any_pattern: empty.clone(),
            needs_odd: empty,
        };
        let set = |mask: &mut [u64], pos: usize| mask[pos / 64] |= 1 << (pos % 64);
        for (pos, (_, gate)) in gates.into_iter().enumerate() {
            let mut pattern = None;
            match gate {
                Gate::Always => set(&mut g.always, pos),
                Gate::Brace => set(&mut g.brace, pos),
                Gate::OddBytes => set(&mut g.odd, pos),
                Gate::Unmatched => set(&mut g.unmatched, pos),
                Gate::Family => set(&mut g.family, pos),
                Gate::LongerThan(n) => {
                    g.longer.push((pos, n));
                    g.least_longer = g.least_longer.min(n);
                }
                Gate::Pattern(p) => {
                    set(&mut g.any_pattern, pos);
                    if p.needs.is_some_and(is_odd) {
                        set(&mut g.needs_odd, pos);
                    }
                    for b in 0..=255u8 {
                        if p.may_start_with(b) {
                            set(&mut g.first[b as usize * words..][..words], pos);
                        }
                    }
                    pattern = Some(*p);
                }
            }
            g.patterns.push(pattern);
        }
        g
    }

    /// Whether a gate looks at a key's odd bytes (the caller finds them only then).
    pub(super) fn reads_bytes(&self) -> bool {
        self.odd.iter().chain(&self.needs_odd).any(|&w| w != 0)
    }

    /// The index among the active rules of the rule at `pos`.
    #[inline]
    pub(super) fn rule(&self, pos: usize) -> usize {
        self.rules[pos]
    }

    /// Fills `live` (a mask) with the positions of the rules whose gates `key` passes: it has
    /// a `{` (`braced`), odd bytes (`odd`, which must be found whenever
    /// [`Gates::reads_bytes`]), and is of declared `family` (`None` without a scheme,
    /// `Some(None)` when it matches no declared family).
    #[inline]
    pub(super) fn select(
        &self,
        key: &[u8],
        braced: bool,
        odd: bool,
        family: Option<Option<usize>>,
        live: &mut Vec<u64>,
    ) {
        live.clear();
        let on = |yes: bool| if yes { u64::MAX } else { 0 };
        let (braced, odd) = (on(braced), on(odd));
        let (unmatched, declared) = (
            on(family == Some(None)),
            on(matches!(family, Some(Some(_)))),
        );
        for w in 0..self.words {
            live.push(
                self.always[w]
                    | (self.brace[w] & braced)
                    | (self.odd[w] & odd)
                    | (self.unmatched[w] & unmatched)
                    | (self.family[w] & declared),
            );
        }
        if key.len() > self.least_longer {
            for &(pos, n) in &self.longer {
                if key.len() > n {
                    live[pos / 64] |= 1 << (pos % 64);
                }
            }
        }
        let candidates = match key.first() {
            Some(&b) => &self.first[b as usize * self.words..][..self.words],
            None => &self.any_pattern[..],
        };
        for (w, &word) in candidates.iter().enumerate() {
            let mut bits = word & !(self.needs_odd[w] & !odd);
            while bits != 0 {
                let pos = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if self.patterns[pos].as_ref().is_some_and(|p| p.admits(key)) {
                    live[w] |= 1 << (pos % 64);
                }
            }
        }
    }
}

/// A check's key pattern as a gate: whether a key matches it, by a fully built DFA walked
/// over the key until it matches, dies or the key ends. The built-in key patterns are
/// anchored at the start, so their DFA dies within a byte or two of most keys, with none of a
/// regex search's set-up per call (which cost more than the walk): the start state is found
/// once, and the bytes that kill the DFA at once are a table. A pattern whose every match
/// holds a literal (`\x06\x16` in `^[^\x06\x16]+\x06\x16[0-9]+$`, which no byte kills
/// early) first looks for the literal's rarest byte in the key. A pattern the DFA cannot be
/// built for (over a megabyte, or a Unicode word boundary) is matched by the regex engine.
pub(super) struct KeyGate {
    dfa: Option<Walk>,
    re: regex::bytes::Regex,
    /// A byte every match holds.
    needs: Option<u8>,
}

/// A key gate's DFA, its start state for a key (a search from a key's first byte always
/// starts in the same state) and the first bytes after which it is dead.
struct Walk {
    dfa: regex_automata::dfa::dense::DFA<Vec<u32>>,
    start: regex_automata::util::primitives::StateID,
    dead_first: [bool; 256],
}

impl KeyGate {
    fn new(pattern: &str) -> Option<KeyGate> {
        use regex_automata::dfa::{Automaton, StartKind, dense};
        let re = regex::bytes::Regex::new(pattern).ok()?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Unanchored)
                    .dfa_size_limit(Some(1 << 20)),
            )
            // What `regex::bytes` compiles: Unicode classes, matches need not be UTF-8.
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .build(pattern)
            .ok();
        let dfa = dfa.and_then(|dfa| {
            // No byte before the search's start: the state every key starts in.
            let start = dfa
                .start_state(&regex_automata::util::start::Config::new())
                .ok()?;
            let mut dead_first = [false; 256];
            for (b, dead) in dead_first.iter_mut().enumerate() {
                *dead = dfa.is_dead_state(dfa.next_state(start, b as u8));
            }
            Some(Walk {
                dfa,
                start,
                dead_first,
            })
        });
        let needs = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .ok()
            .and_then(|hir| required_literal(&hir))
            .and_then(|lit| lit.iter().copied().min_by_key(|&b| commonness(b)));
        Some(KeyGate { dfa, re, needs })
    }

    /// Whether a key starting with `b` may match (false only when the DFA is dead after it).
    fn may_start_with(&self, b: u8) -> bool {
        self.dfa.as_ref().is_none_or(|w| !w.dead_first[b as usize])
    }

    /// Whether `key` matches the pattern (anywhere, as `Regex::is_match` says).
    #[inline]
    fn admits(&self, key: &[u8]) -> bool {
        use regex_automata::dfa::Automaton;
        if let Some(b) = self.needs
            && crate::slot::find(b, key).is_none()
        {
            return false;
        }
        let Some(Walk {
            dfa,
            start,
            dead_first,
        }) = &self.dfa
        else {
            return self.re.is_match(key);
        };
        if let Some(&b) = key.first()
            && dead_first[b as usize]
        {
            return false;
        }
        let mut state = *start;
        for &b in key {
            state = dfa.next_state(state, b);
            // One compare per byte: match and dead states are both special.
            if dfa.is_special_state(state) {
                if dfa.is_match_state(state) {
                    return true;
                }
                if dfa.is_dead_state(state) {
                    return false;
                }
            }
        }
        dfa.is_match_state(dfa.next_eoi_state(state))
    }
}

/// Whether `b` is a byte [`Gates::select`]'s `odd` says a key holds: at most 0x20, or DEL.
fn is_odd(b: u8) -> bool {
    b <= 0x20 || b == 0x7f
}

/// A literal every match of `hir` holds, when there is one: the longest literal among the
/// parts a match must pass through (a concatenation's parts, a group, a repetition of at least
/// one). Alternations and classes give none.
fn required_literal(hir: &regex_syntax::hir::Hir) -> Option<Vec<u8>> {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Literal(l) => Some(l.0.to_vec()),
        HirKind::Capture(c) => required_literal(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required_literal(&r.sub),
        HirKind::Concat(parts) => parts
            .iter()
            .filter_map(required_literal)
            .max_by_key(|l| l.len()),
        _ => None,
    }
}

/// How often a byte is in keys, roughly: control bytes and DEL least, then bytes of non-ASCII
/// text, punctuation, upper-case letters, digits, and lower-case letters and the usual
/// separators most. The rarest byte of a literal is the one looked for.
fn commonness(b: u8) -> u8 {
    match b {
        0..=0x1f | 0x7f => 0,
        0x80..=0xff => 1,
        b'a'..=b'z' | b':' | b'_' | b'-' | b'.' => 5,
        b'0'..=b'9' => 4,
        b'A'..=b'Z' => 3,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::{Gate, Gates, KeyGate};
    use proptest::prelude::*;

    /// The built-in key patterns, and unanchored, Unicode and end-anchored ones a user's rule
    /// may have.
    fn patterns() -> Vec<String> {
        let mut v: Vec<String> = crate::lint::RuleSet::builtin()
            .expect("the built-in rules load")
            .rules
            .iter()
            .filter_map(|r| match &r.spec.check {
                crate::lint::rule::CheckKind::KeyFamily { pattern, .. } => Some(pattern.clone()),
                _ => None,
            })
            .collect();
        assert!(v.len() >= 5, "the key-family rules are found");
        v.extend(
            [
                r"bull",
                r":\d+$",
                r"(?i)SESSION:\w+",
                r"é",
                r"^a.*z$",
                r"\bjob\b",
                // Literals whose rarest byte is a space or DEL.
                r"a b",
                "x\x7f",
            ]
            .map(String::from),
        );
        v
    }

    proptest! {
        #[test]
        fn the_gate_says_what_the_regex_says(
            keys in proptest::collection::vec(
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..40),
                    "(rq|bull|dramatiq|\\{bull\\}|x)(:[a-z0-9é]{0,6}){0,4}(\x06\x16[0-9]{1,3})?"
                        .prop_map(String::into_bytes),
                ],
                1..64,
            )
        ) {
            for p in patterns() {
                let gate = KeyGate::new(&p).expect("a valid pattern");
                let re = regex::bytes::Regex::new(&p).expect("a valid pattern");
                for k in &keys {
                    prop_assert_eq!(gate.admits(k), re.is_match(k), "{:?} on {:?}", p, k);
                }
            }
        }
    }

    proptest! {
        // Each case builds 150 gates (and their DFAs).
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The masks pick exactly the rules whose gate a key passes, one gate at a time, over
        /// more rules than one 64-bit word holds (a pattern that needs a space, a control byte
        /// or DEL is not tried on a key with none, and says no more than when it is).
        #[test]
        fn the_masks_pick_what_each_gate_says(
            keys in proptest::collection::vec(
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..90),
                    "(rq|bull|\\{bull\\}|x|a)(:[a-z{}0-9 ]{0,6}){0,6}(\x06\x16[0-9]{1,3}|\x7f)?"
                        .prop_map(String::into_bytes),
                ],
                1..32,
            ),
            braced in any::<bool>(),
            family in prop_oneof![Just(None), Just(Some(None)), Just(Some(Some(0usize)))],
        ) {
            let pats = patterns();
            let gate = |k: usize| match k % 7 {
                0 => Gate::Always,
                1 => Gate::Brace,
                2 => Gate::OddBytes,
                3 => Gate::LongerThan(k % 50),
                4 => Gate::Unmatched,
                5 => Gate::Family,
                _ => Gate::pattern(&pats[k % pats.len()]),
            };
            let n = 150;
            let gates = Gates::new((0..n).map(|k| (1000 + k, gate(k))).collect());
            let each: Vec<Gate> = (0..n).map(gate).collect();
            let mut live = Vec::new();
            for key in &keys {
                // As the linter finds it (whenever a gate reads it, as here).
                let odd = key.iter().any(|&c| c <= 0x20 || c == 0x7f);
                assert!(gates.reads_bytes());
                gates.select(key, braced, odd, family, &mut live);
                for (k, g) in each.iter().enumerate() {
                    let want = match g {
                        Gate::Always => true,
                        Gate::Brace => braced,
                        Gate::OddBytes => odd,
                        Gate::LongerThan(m) => key.len() > *m,
                        Gate::Unmatched => family == Some(None),
                        Gate::Family => matches!(family, Some(Some(_))),
                        Gate::Pattern(p) => p.admits(key),
                    };
                    let got = live[k / 64] >> (k % 64) & 1 == 1;
                    prop_assert_eq!(got, want, "gate {} on {:?}", k, key);
                    prop_assert_eq!(gates.rule(k), 1000 + k);
                }
            }
        }
    }
}
