//! Which declared key a dump key is, and its variables' values: the scheme's patterns compiled
//! once, shared by `lint` (undeclared keys, per-key allows) and `plan` (re-keying a sample).

use super::Scheme;
use regex::bytes::Regex;
use regex_automata::{Anchored, Input, meta};
use std::sync::OnceLock;

use super::memo::{Recall, Skeleton, SkeletonMemo};

/// The most memory a scheme's family DFA may take (past it, the lazy DFA of `set` is used).
const DFA_LIMIT: usize = 4 << 20;

/// The scheme's patterns as one anchored DFA, flattened into a plain transition table: a
/// step is a class lookup and a table load (no state-kind checks, no bounds on the class).
#[derive(Debug)]
struct Families {
    /// Each byte's class (bytes no pattern tells apart share one).
    classes: [u8; 256],
    /// Per state, `stride` entries: per class the next state (as its offset in this table),
    /// then, in the last, the family a key ending in this state is (or [`NO_FAMILY`]). The
    /// state at offset 0 is the dead state: every step stays there and no family ends there.
    table: Vec<u32>,
    stride: usize,
    /// The state every key starts in.
    start: u32,
    /// Whether every digit is in one class: keys that differ only in digits then take the
    /// same steps (and a memo of skeletons can answer for them).
    digits_alike: bool,
}

/// The end entry of a state where no pattern matches.
const NO_FAMILY: u32 = u32::MAX;

impl Families {
    fn new(patterns: &[String]) -> Option<Families> {
        use regex_automata::dfa::{Automaton, StartKind, dense};
        use regex_automata::util::primitives::StateID;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Anchored)
                    .dfa_size_limit(Some(DFA_LIMIT))
                    .determinize_size_limit(Some(2 * DFA_LIMIT)),
            )
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .build_many(patterns)
            .ok()?;
        let start = dfa
            .start_state(&regex_automata::util::start::Config::new().anchored(Anchored::Yes))
            .ok()?;
        // One representative byte per class.
        let mut classes = [0u8; 256];
        let mut reps: Vec<u8> = Vec::new();
        for b in 0..=255u8 {
            let c = dfa.byte_classes().get(b);
            classes[b as usize] = c;
            if c as usize == reps.len() {
                reps.push(b);
            }
        }
        let stride = reps.len() + 1;
        // The states reachable from the start, numbered as found (the dead state first).
        let mut table: Vec<u32> = vec![0; stride];
        table[stride - 1] = NO_FAMILY;
        let mut number: std::collections::HashMap<StateID, u32> = std::collections::HashMap::new();
        let mut queue: Vec<StateID> = Vec::new();
        let mut offset_of = |id: StateID, table: &mut Vec<u32>, queue: &mut Vec<StateID>| {
            if dfa.is_dead_state(id) {
                return Some(0);
            }
            if dfa.is_quit_state(id) {
                return None;
            }
            Some(*number.entry(id).or_insert_with(|| {
                let at = table.len();
                table.resize(at + stride, 0);
                queue.push(id);
                at as u32
            }))
        };
        let first = offset_of(start, &mut table, &mut queue)?;
        let mut done = 0;
        while done < queue.len() {
            let id = queue[done];
            let at = (done + 1) * stride;
            done += 1;
            for (c, &b) in reps.iter().enumerate() {
                let next = offset_of(dfa.next_state(id, b), &mut table, &mut queue)?;
                table[at + c] = next;
            }
            let end = dfa.next_eoi_state(id);
            table[at + stride - 1] = match dfa.is_match_state(end) {
                true => u32::try_from(dfa.match_pattern(end, 0).as_usize()).ok()?,
                false => NO_FAMILY,
            };
            if table.len() * 4 > DFA_LIMIT {
                return None;
            }
        }
        let digits_alike = (b'0'..=b'9').all(|b| classes[b as usize] == classes[b'0' as usize]);
        Some(Families {
            classes,
            table,
            stride,
            start: first,
            digits_alike,
        })
    }

    /// The first pattern matching all of `key` (every pattern ends in `$`: a match ends at the
    /// key's end).
    #[inline]
    fn family(&self, key: &[u8]) -> Option<usize> {
        let mut state = self.start;
        for &b in key {
            state = self.step(state, b);
            if state == 0 {
                return None;
            }
        }
        self.end(state)
    }

    #[inline(always)]
    fn step(&self, state: u32, b: u8) -> u32 {
        self.table[state as usize + self.classes[b as usize] as usize]
    }

    /// The family a walk that ended in `state` found.
    #[inline(always)]
    fn end(&self, state: u32) -> Option<usize> {
        let f = self.table[state as usize + self.stride - 1];
        (f != NO_FAMILY).then_some(f as usize)
    }

    /// [`Families::family`] of four keys, walked in step: each byte's step waits on the load
    /// of the step before, so four walks at once keep four loads in flight. A dead walk stays
    /// dead; past the shortest key, each goes on alone.
    #[inline]
    fn family4(&self, keys: [&[u8]; 4]) -> [Option<usize>; 4] {
        let common = keys.iter().map(|k| k.len()).min().unwrap_or(0);
        let mut s = [self.start; 4];
        let [a, b, c, d] = keys.map(|k| &k[..common]);
        for (((&x, &y), &z), &w) in a.iter().zip(b).zip(c).zip(d) {
            s[0] = self.step(s[0], x);
            s[1] = self.step(s[1], y);
            s[2] = self.step(s[2], z);
            s[3] = self.step(s[3], w);
        }
        let mut out = [None; 4];
        for l in 0..4 {
            let mut state = s[l];
            if state == 0 {
                continue;
            }
            for &x in &keys[l][common..] {
                state = self.step(state, x);
                if state == 0 {
                    break;
                }
            }
            out[l] = self.end(state);
        }
        out
    }
}

/// What a reader keeps between its calls of [`KeyMatcher::families`]: the answers of the last
/// call, and its memo of recent key skeletons.
#[derive(Default)]
pub struct FamilyScratch {
    /// Per key of the last call, its family.
    pub found: Vec<Option<usize>>,
    memo: Option<Box<SkeletonMemo>>,
    /// The keys to walk, and those of them to remember afterwards (by their place).
    walk: Vec<usize>,
    missed: Vec<(usize, Skeleton)>,
    /// Calls so far, and whether the memo rests (the last call that asked it found under a
    /// quarter of its keys' families there): then one call in [`MEMO_RETRY`] asks it.
    calls: u32,
    resting: bool,
}

/// While the memo rests, one call of [`KeyMatcher::families`] in this many asks it again.
const MEMO_RETRY: u32 = 16;

/// The scheme's key patterns, compiled.
#[derive(Debug)]
pub struct KeyMatcher {
    /// Every pattern in one leftmost-first automaton: as each pattern is anchored at both
    /// ends, the match it reports is the first pattern (in declaration order) that matches,
    /// found in one forward pass with no overlapping search.
    set: meta::Regex,
    /// The same patterns as one fully built DFA walked over a key (a byte a step, with no
    /// search set-up), when it fits in [`DFA_LIMIT`] bytes; `set` answers otherwise.
    dfa: Option<Families>,
    /// Per declared key: its pattern with one capture group per variable (compiled when first
    /// needed).
    captures: Vec<(String, OnceLock<Option<Regex>>)>,
    /// Per declared key: its variables in pattern order (one per occurrence, as `values`).
    names: Vec<Vec<String>>,
    /// Per declared key: its values read without a regex, when its pattern allows it.
    cuts: Vec<Option<super::cut::Cut>>,
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
            cuts: scheme
                .keys
                .iter()
                .map(|k| super::cut::Cut::new(scheme, k))
                .collect(),
            dfa: Families::new(&patterns),
            set,
            captures,
            names,
        }
    }

    /// The index (into the scheme's keys) of the first declared key `key` matches.
    pub fn family(&self, key: &[u8]) -> Option<usize> {
        match &self.dfa {
            Some(d) => d.family(key),
            None => self.family_by_set(key),
        }
    }

    /// [`KeyMatcher::family`] of each of `n` keys (`key(i)` is the `i`th) into
    /// `scratch.found`: the same answers, found faster when there are many (keys whose
    /// skeletons a reader met recently are recalled; the others are walked four at a time).
    pub fn families<'k>(
        &self,
        n: usize,
        key: impl Fn(usize) -> &'k [u8],
        scratch: &mut FamilyScratch,
    ) {
        let FamilyScratch {
            found,
            memo,
            walk,
            missed,
            calls,
            resting,
        } = scratch;
        found.clear();
        let Some(d) = &self.dfa else {
            found.extend((0..n).map(|i| self.family_by_set(key(i))));
            return;
        };
        *calls = calls.wrapping_add(1);
        // Keys of dumps where few skeletons repeat (or few keys are of a family) are walked
        // with no look-up at all, but for one call in `MEMO_RETRY`.
        if !d.digits_alike || (*resting && *calls % MEMO_RETRY != 0) {
            let mut i = 0;
            while i + 4 <= n {
                found.extend(d.family4([key(i), key(i + 1), key(i + 2), key(i + 3)]));
                i += 4;
            }
            found.extend((i..n).map(|i| d.family(key(i))));
            return;
        }
        let memo = memo.get_or_insert_with(|| Box::new(SkeletonMemo::new()));
        found.resize(n, None);
        walk.clear();
        missed.clear();
        let mut recalled = 0;
        for (i, f) in found.iter_mut().enumerate() {
            match memo.recall(key(i)) {
                Recall::Found(family) => {
                    recalled += usize::from(family.is_some());
                    *f = family;
                }
                Recall::Missed(s) => {
                    walk.push(i);
                    missed.push((i, s));
                }
                Recall::Skipped => walk.push(i),
            }
        }
        let mut four = walk.chunks_exact(4);
        for w in &mut four {
            let families = d.family4([key(w[0]), key(w[1]), key(w[2]), key(w[3])]);
            for (&i, f) in w.iter().zip(families) {
                found[i] = f;
            }
        }
        for &i in four.remainder() {
            found[i] = d.family(key(i));
        }
        for &(i, s) in missed.iter() {
            memo.remember(s, found[i]);
        }
        *resting = recalled * 4 < n;
    }

    /// [`KeyMatcher::family`] by the lazy DFA.
    fn family_by_set(&self, key: &[u8]) -> Option<usize> {
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
        f: impl FnMut(&'k [u8]),
    ) -> bool {
        self.read_values(family, key, true, f)
    }

    /// [`KeyMatcher::for_each_value`] of a key [`KeyMatcher::family`] (or
    /// [`KeyMatcher::families`]) found to be of `family`: the same values, found without
    /// checking again that the key matches when its pattern has a cut.
    pub fn for_each_value_of_match<'k>(
        &self,
        family: usize,
        key: &'k [u8],
        f: impl FnMut(&'k [u8]),
    ) -> bool {
        self.read_values(family, key, false, f)
    }

    /// The values by the family's cut (checking the key's bytes when `checked`), else by its
    /// regex.
    #[inline]
    fn read_values<'k>(
        &self,
        family: usize,
        key: &'k [u8],
        checked: bool,
        f: impl FnMut(&'k [u8]),
    ) -> bool {
        match (self.cuts.get(family), checked) {
            (Some(Some(cut)), true) if cut.reads(key) => cut.values(key, f),
            (Some(Some(cut)), false) if cut.reads(key) => {
                cut.values_of_match(key, f);
                true
            }
            _ => self.values_by_regex(family, key, f),
        }
    }

    /// [`KeyMatcher::for_each_value`] by the family's regex and its capture groups.
    fn values_by_regex<'k>(
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
        assert!(m.dfa.is_some(), "the patterns fit in a dense DFA");
        let set =
            regex::bytes::RegexSet::new(s.keys.iter().map(|k| s.key_regex(k, false))).unwrap();
        let pieces: [&[u8]; 12] = [
            b"u", b":", b"7", b"x", b"y", b"ab", b"12", b"-", b"\xff", b"\n", b"F", b"_",
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut tried = 0;
        let mut all = Vec::new();
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
            assert_eq!(m.family(&key), m.family_by_set(&key));
            assert_eq!(
                m.family(&key),
                set.matches(&key).iter().next(),
                "{}",
                String::from_utf8_lossy(&key)
            );
            tried += usize::from(m.family(&key).is_some_and(|f| f > 0));
            all.push(key);
        }
        // Many at once, four walked in step, give the same answers (with a tail of three).
        let mut out = FamilyScratch::default();
        m.families(all.len() - 1, |i| &all[i], &mut out);
        let one: Vec<Option<usize>> = all[..all.len() - 1].iter().map(|k| m.family(k)).collect();
        assert_eq!(out.found, one);
        assert!(tried > 1000, "later patterns are reached: {tried}");
    }

    #[test]
    fn keys_recalled_by_their_skeleton_are_of_the_family_a_walk_finds() {
        // Families told apart by letters after digits, by the digits' count (a date), by a
        // last byte past a 16-byte block, and keys of every length around 16, 32 and 48.
        let s = Scheme::parse(
            "version: 1\nvars:\n  i: { kind: int }\n  w: { kind: word }\n  d: { kind: date }\n  a: { kind: any }\nkeys:\n  k0: { pattern: \"u:<i>:a\" }\n  k1: { pattern: \"u:<i>:b\" }\n  k2: { pattern: \"day:<d>\" }\n  k3: { pattern: \"u:<w>\" }\n  k4: { pattern: \"<a>:<i>x\" }\n",
        )
        .unwrap();
        let m = KeyMatcher::new(&s);
        assert!(m.dfa.as_ref().is_some_and(|d| d.digits_alike));
        let pieces: [&[u8]; 12] = [
            b"u:",
            b":",
            b"7",
            b"a",
            b"b",
            b"x",
            b"12",
            b"-",
            b"day:",
            b"2024-01-02",
            b"\xff",
            b"0123456789",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Keys of the families (digits of every count, words, dates, long `any` values) and
        // keys made of random pieces, the latter all of one phase in the middle.
        let mut phase = |n: usize, junk_only: bool| {
            let mut keys: Vec<Vec<u8>> = Vec::new();
            for _ in 0..n {
                let mut r = next();
                let digits = |r: u64| (r % 10u64.pow((r % 9) as u32 + 1)).to_string();
                let key = match if junk_only { 5 } else { r % 6 } {
                    0 => format!("u:{}:a", digits(r >> 8)).into_bytes(),
                    1 => format!("u:{}:b", digits(r >> 8)).into_bytes(),
                    2 => format!("day:20{:02}-0{}-1{}", r % 97, r % 7, r % 9).into_bytes(),
                    3 => format!("u:{}{}", ["ab", "x_y", "Q"][(r % 3) as usize], r % 1000)
                        .into_bytes(),
                    4 => {
                        let any = "z:".repeat((r % 30) as usize);
                        format!("{any}{}x", digits(r >> 8)).into_bytes()
                    }
                    _ => {
                        let mut key = Vec::new();
                        for _ in 0..(r % 9) {
                            r /= 9;
                            key.extend_from_slice(pieces[(r % 12) as usize]);
                            r /= 12;
                        }
                        key
                    }
                };
                keys.push(key);
            }
            keys
        };
        let mut all = phase(40_000, false);
        all.extend(phase(40_000, true));
        all.extend(phase(40_000, false));
        let one: Vec<Option<usize>> = all.iter().map(|k| m.family(k)).collect();
        let mut scratch = FamilyScratch::default();
        let mut found = Vec::new();
        for piece in all.chunks(1000).zip(one.chunks(1000)) {
            m.families(piece.0.len(), |i| &piece.0[i], &mut scratch);
            assert_eq!(scratch.found, piece.1);
            found.push(scratch.memo.as_ref().map_or(0, |memo| memo.found));
        }
        // The memo answers in the first phase, rests (mostly) in the second, answers again in
        // the third.
        let (first, second, third) = (found[39], found[79] - found[39], found[119] - found[79]);
        assert!(first > 15_000, "found in the first phase: {first}");
        assert!(second < first / 4, "found among random keys: {second}");
        assert!(third > 15_000, "found in the third phase: {third}");
        // A pattern with a literal digit: digits are told apart, and every key is walked.
        let s = Scheme::parse(
            "version: 1\nvars:\n  i: { kind: int }\nkeys:\n  v2: { pattern: \"v2:<i>\" }\n",
        )
        .unwrap();
        let m = KeyMatcher::new(&s);
        assert!(m.dfa.as_ref().is_some_and(|d| !d.digits_alike));
        let keys: [&[u8]; 5] = [b"v2:1", b"v3:1", b"v2:x", b"v2:12", b"v1:1"];
        let mut scratch = FamilyScratch::default();
        for _ in 0..2 * MEMO_RETRY {
            m.families(5, |i| keys[i], &mut scratch);
            assert_eq!(scratch.found, [Some(0), None, None, Some(0), None]);
        }
    }

    proptest::proptest! {
        /// Values read by a cut are what the regex's groups capture, and a key a cut refuses is
        /// one the regex refuses: over patterns of every variable kind and keys made from them,
        /// broken or not.
        #[test]
        fn cuts_read_what_the_regex_captures(
            segs in proptest::collection::vec((0usize..16, 0usize..7), 1..6),
            keys in proptest::collection::vec(
                proptest::collection::vec((0usize..12, 0usize..12), 6),
                1..24,
            ),
        ) {
            const LITS: [&str; 9] = [":", "-", "{", "}", "x", "_", "ab:", "7", "\u{e9}"];
            const KINDS: [&str; 7] = ["int", "uuid", "hex", "word", "date", "any", "enum"];
            // Pieces of values of every kind, and bytes no kind holds.
            const BITS: [&[u8]; 12] = [
                b"42", b"-7", b"0f3A", b"beef", b"word_1", b"2026-01-02",
                b"123e4567-e89b-12d3-a456-426614174000", b":", b"-", b"", b"\xff", b"x1",
            ];
            let mut pattern = String::new();
            for (i, &(lit, kind)) in segs.iter().enumerate() {
                if lit < LITS.len() {
                    pattern.push_str(LITS[lit]);
                } else {
                    pattern.push_str(&format!("<v{i}_{}>", KINDS[kind]));
                }
            }
            let mut yaml = String::from("version: 1\nvars:\n");
            for (i, &(_, kind)) in segs.iter().enumerate() {
                let extra = if kind == 6 { ", values: [a, b1, \"7\"]" } else { "" };
                yaml.push_str(&format!("  v{i}_{}: {{ kind: {}{extra} }}\n", KINDS[kind], KINDS[kind]));
            }
            yaml.push_str(&format!("keys:\n  k: {{ pattern: {:?} }}\n", pattern));
            let Ok(scheme) = Scheme::parse(&yaml) else {
                // A pattern the scheme refuses (no variable, say) has nothing to read.
                return Ok(());
            };
            let m = KeyMatcher::new(&scheme);
            // Valid values of each kind (in KINDS' order).
            const VALUES: [&[&[u8]]; 7] = [
                &[b"42", b"-7", b"0"],
                &[b"123e4567-e89b-12d3-a456-426614174000"],
                &[b"0f3A", b"beef", b"7"],
                &[b"word_1", b"a", b"x-y"],
                &[b"2026-01-02"],
                &[b"10.0.0.1", b":", b"a:b", b"\xc3\xa9"],
                &[b"a", b"b1", b"7"],
            ];
            for parts in &keys {
                // Each piece of the pattern made as it says, or (now and then) broken.
                let mut key = Vec::new();
                for (&(lit, kind), &(pick, broken)) in segs.iter().zip(parts) {
                    if broken >= 10 {
                        key.extend_from_slice(BITS[pick]);
                    } else if lit < LITS.len() {
                        key.extend_from_slice(LITS[lit].as_bytes());
                    } else {
                        let values = VALUES[kind];
                        key.extend_from_slice(values[pick % values.len()]);
                    }
                }
                let (mut by_cut, mut by_regex) = (Vec::new(), Vec::new());
                let cut = m.for_each_value(0, &key, |v| by_cut.push(v.to_vec()));
                let re = m.values_by_regex(0, &key, |v| by_regex.push(v.to_vec()));
                proptest::prop_assert_eq!(cut, re, "{:?} on {:?}", pattern, String::from_utf8_lossy(&key));
                proptest::prop_assert_eq!(&by_cut, &by_regex, "{:?} on {:?}", pattern, String::from_utf8_lossy(&key));
                // A key the family's automaton matches has the same values read unchecked.
                proptest::prop_assert_eq!(m.family(&key) == Some(0), re);
                if re {
                    let mut of_match = Vec::new();
                    m.for_each_value_of_match(0, &key, |v| of_match.push(v.to_vec()));
                    proptest::prop_assert_eq!(&of_match, &by_regex, "{:?} on {:?}", pattern, String::from_utf8_lossy(&key));
                }
            }
        }
    }

    #[test]
    fn values_of_a_match_end_at_their_stop_bytes() {
        let s = Scheme::parse(
            "version: 1\nvars:\n  i: { kind: int }\n  j: { kind: int }\n  h: { kind: hex }\n  a: { kind: any }\nkeys:\n  k: { pattern: \"n:<i>-<j>:<h>\" }\n  l: { pattern: \"<h>:<a>.x\" }\n",
        )
        .unwrap();
        let m = KeyMatcher::new(&s);
        for key in [
            &b"n:-7--3:ff"[..],
            b"n:7-3:0",
            b"n:-12-9:A",
            b"beef:a:b.x.x",
            b"0:..x",
        ] {
            let family = m.family(key).expect("the key is declared");
            let (mut checked, mut unchecked) = (Vec::new(), Vec::new());
            assert!(m.for_each_value(family, key, |v| checked.push(v)));
            assert!(m.for_each_value_of_match(family, key, |v| unchecked.push(v)));
            assert_eq!(checked, unchecked, "{}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn patterns_of_runs_fixed_values_and_a_last_any_are_cut() {
        let s = Scheme::parse(
            "version: 1\nvars:\n  i: { kind: int }\n  u: { kind: uuid }\n  w: { kind: word }\n  a: { kind: any }\n  d: { kind: date }\n  e: { kind: enum, values: [x] }\nkeys:\n  k0: { pattern: \"user:{<i>}:<u>\" }\n  k1: { pattern: \"rate:<a>:<d>\" }\n  k2: { pattern: \"s:<w><i>\" }\n  k3: { pattern: \"<a>:<i>\" }\n  k4: { pattern: \"<e>:<i>\" }\n  k5: { pattern: \"<w>-<i>\" }\n",
        )
        .unwrap();
        let m = KeyMatcher::new(&s);
        let cut: Vec<bool> = m.cuts.iter().map(Option::is_some).collect();
        // A word and an int side by side are cut as a pair; an `any` before a run, an enum,
        // a word before a `-` it may hold: the regex reads those.
        assert_eq!(cut, [true, true, true, false, false, false]);
        // The word takes all it can: the int is the last digit (as the regex reads it).
        assert_eq!(
            m.values(2, b"s:olivia3154"),
            Some(vec!["olivia315".into(), "4".into()])
        );
        assert_eq!(m.values(2, b"s:olivia"), None);
        // A long key is left to the regex (a pair's splits tried one by one could cost the
        // square of its length), with the same values.
        let long = [b"s:".as_slice(), &[b'7'; 400]].concat();
        let pair = m.cuts[2].as_ref().expect("a pair is cut");
        assert!(pair.reads(b"s:olivia3154") && !pair.reads(&long));
        let (mut by_cut, mut by_regex) = (Vec::new(), Vec::new());
        assert!(pair.values(&long, |v| by_cut.push(v.len())));
        assert!(m.for_each_value(2, &long, |v| by_regex.push(v.len())));
        assert_eq!((by_cut, by_regex), (vec![399, 1], vec![399, 1]));
        assert_eq!(
            m.values(1, b"rate:10.0.0.1:2026-01-02"),
            Some(vec!["10.0.0.1".into(), "2026-01-02".into()])
        );
    }
}
