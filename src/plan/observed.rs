//! Observed batches (a batch file or a MONITOR capture): mined for the key segment every key of
//! a batch shares (an order id, a user id), which is the tag that would put the batch on one
//! slot. Keys are split into segments as the pattern engine splits them.

use super::{PlanOptions, Score};
use crate::pattern::{Class, Delimiters, Token, tokenize};
use crate::simulate::Strategy;
use crate::simulate::batch::{Batch, BatchKind};
use crate::slot::key_slot;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// The plan for one observed batch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObservedPlan {
    /// The batch (its line in the file).
    pub batch: String,
    /// The batch's stable identity (line, scheme name, command).
    pub batch_id: crate::simulate::batch::BatchId,
    /// Distinct keys.
    pub keys: usize,
    /// Slots the keys hash to.
    pub slots: usize,
    /// The segment value every key shares, if any.
    pub shared: Option<String>,
    /// The key shapes now (`order:<int>:items`).
    pub patterns: Vec<String>,
    /// The key shapes with the shared segment tagged (`order:{<int>}:items`).
    pub rewritten: Vec<String>,
    /// A few keys before → after.
    pub examples: Vec<(String, String)>,
    /// The batch as it is.
    pub before: Score,
    /// The batch with the tag (or with per-node pipelines when nothing is shared).
    pub after: Score,
    /// Distinct shared values seen over all observed batches with the same shapes.
    pub tag_values_seen: usize,
    /// Observed batches with the same shapes.
    pub batches_seen: usize,
    /// The recommendation in words.
    pub recommendation: String,
    /// What the plan says instead when its tag turns out to be a constant (every batch of its
    /// shape has the same value): known once every batch is seen, then cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untagged: Option<Box<Untagged>>,
}

/// The plan of an observed batch without a tag: its score and the recommendation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Untagged {
    /// The batch with per-node pipelines (a pipeline), or as it is (an atomic batch).
    pub after: Score,
    /// The recommendation in words.
    pub recommendation: String,
}

/// The spans of `key`'s segments, as the pattern engine cuts them: at its delimiters
/// (`: / | . - _ ! $ @ = #`) and at the `\x06\x16` kombu puts between a queue's name and its
/// priority, except inside a value the engine reads whole (an e-mail or IP address, a uuid, a
/// date, an opaque id such as `b_api-v2-x7Kq1` before Bottleneck's `_settings`).
fn segments(key: &str) -> Vec<(usize, usize)> {
    let d = Delimiters::default();
    let bytes = key.as_bytes();
    let mut tokens = Vec::new();
    tokenize(bytes, &d, &mut tokens);
    let mut cuts: Vec<usize> = tokens
        .iter()
        .filter_map(|t| match *t {
            Token::Lit { start, end } if end == start + 1 && d.is_delimiter(bytes[start]) => {
                Some(start)
            }
            _ => None,
        })
        .collect();
    cuts.extend(
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, 0x06 | 0x16))
            .map(|(i, _)| i),
    );
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for c in cuts {
        out.push((from, c));
        from = c + 1;
    }
    out.push((from, key.len()));
    out
}

/// Whether `s` is one name: words and numbers joined by `_`, `.`, `-` or `'`, starting with a
/// letter (of any script), a word never right after digits (`ana_garcia4`, `login-throttle`,
/// `mq-800.26`; not `x_k3J9aZ` or `order-42-items`, whose parts are values of their own).
fn is_name(s: &str) -> bool {
    #[derive(PartialEq)]
    enum Run {
        Start,
        Letters,
        Digits,
        Joiner,
    }
    let mut last = Run::Start;
    let mut digits = false;
    for c in s.chars() {
        let now = if c.is_alphabetic() {
            Run::Letters
        } else if c.is_ascii_digit() {
            Run::Digits
        } else if matches!(c, '_' | '.' | '-' | '\'') {
            Run::Joiner
        } else {
            return false;
        };
        match (&last, &now) {
            (Run::Start, Run::Letters) => {}
            (Run::Start, _) => return false,
            // A word after a number, joined or not (`x_k3J9aZ`, `order-42-items`).
            (_, Run::Letters) if digits => return false,
            _ => {}
        }
        digits |= now == Run::Digits;
        last = now;
    }
    last != Run::Start
}

/// The spans of `key`'s values: its [`segments`], except that segments joined by `_`, `.` or
/// `-` that together make one name ([`is_name`]) are one value: a fragment of a name
/// (`garcia4` of `ana_garcia4`, `800` of the prefix `mq-800.26`) is never a tag.
fn values(key: &str) -> Vec<(usize, usize)> {
    let segs = segments(key);
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(segs.len());
    let mut i = 0;
    while i < segs.len() {
        let mut j = i;
        while j + 1 < segs.len()
            && segs[j].1 + 1 == segs[j + 1].0
            && matches!(bytes[segs[j].1], b'_' | b'.' | b'-')
        {
            j += 1;
        }
        let (a, b) = (segs[i].0, segs[j].1);
        if j > i && is_name(&key[a..b]) {
            out.push((a, b));
        } else {
            out.extend_from_slice(&segs[i..=j]);
        }
        i = j + 1;
    }
    out
}

fn split(key: &str) -> Vec<&str> {
    values(key).into_iter().map(|(a, b)| &key[a..b]).collect()
}

/// The values `i..=j` of `spans` (over `key`) whose text is `shared`: the first such run.
fn find_run(key: &str, spans: &[(usize, usize)], shared: &str) -> Option<(usize, usize)> {
    (0..spans.len()).find_map(|i| {
        (i..spans.len())
            .take_while(|&j| spans[j].1 - spans[i].0 <= shared.len())
            .find(|&j| &key[spans[i].0..spans[j].1] == shared)
            .map(|j| (i, j))
    })
}

/// The hash tag a key has now (the text between its first `{` and the `}` after it), if any.
fn existing_tag(key: &str) -> Option<&str> {
    let open = key.find('{')?;
    let close = key[open + 1..].find('}')?;
    (close > 0).then(|| &key[open + 1..open + 1 + close])
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// The placeholder of a variable-looking segment, or `None` for a literal.
fn class(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        return None;
    }
    // A value the pattern engine reads whole.
    let mut tokens = Vec::new();
    tokenize(s.as_bytes(), &Delimiters::default(), &mut tokens);
    if let [Token::Class(c)] = tokens[..]
        && !matches!(c, Class::Word | Class::Bytes | Class::Rest)
    {
        return Some(match c {
            Class::Ipv6 => Class::Ip.placeholder(),
            c => c.placeholder(),
        });
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        Some("<int>")
    } else if is_uuid(s) {
        Some("<uuid>")
    } else if s.len() >= 8
        && s.bytes().all(|b| b.is_ascii_hexdigit())
        && s.bytes().any(|b| b.is_ascii_digit())
    {
        Some("<hex>")
    } else if s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Some("<id>")
    } else {
        None
    }
}

/// `shape` with a tag that is a literal (a name: `bull:{emails}:wait`) made any name
/// (`bull:{<name>}:wait`).
fn any_name(shape: &str) -> String {
    match (shape.find('{'), shape.find('}')) {
        (Some(a), Some(b)) if a < b && !shape[a..b].contains('<') => {
            format!("{}{{<name>}}{}", &shape[..a], &shape[b + 1..])
        }
        _ => shape.to_string(),
    }
}

/// The regex of a placeholder [`class`] writes.
fn placeholder_regex(p: &str) -> Option<&'static str> {
    Some(match p {
        "<int>" => "[0-9]+",
        "<uuid>" => Class::Uuid.regex(),
        "<hex>" => "[0-9A-Fa-f]{8,}",
        "<id>" => "[A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*",
        "<ip>" => Class::Ip.regex(),
        "<email>" => Class::Email.regex(),
        "<json>" => Class::Json.regex(),
        "<date>" => Class::Date.regex(),
        "<ulid>" => Class::Ulid.regex(),
        "<token>" => Class::Token.regex(),
        // A name ([`is_name`]): letters of any script (UTF-8 bytes), digits and joiners.
        "<name>" => "[A-Za-z0-9_.'\\x80-\\xff-]+",
        _ => return None,
    })
}

fn rank(s: &str) -> u8 {
    match class(s) {
        Some("<uuid>" | "<int>" | "<hex>" | "<ulid>" | "<token>" | "<email>" | "<ip>") => 3,
        Some(_) => 2,
        None => 1,
    }
}

/// The key's shape: values generalised to placeholders, the shared run of values (a value,
/// or a tag the keys already have, such as `c:42`) braced when given.
fn shape(key: &str, shared: Option<&str>) -> String {
    shape_via(key, shared, None)
}

/// [`shape`], where a key that does not hold `shared` but holds `via` (a value of the tag
/// `shared` other keys have already) gets that tag in its place: `user:ana4:avatar` with
/// `c:ana4` via `ana4` is `user:{c:<id>}:avatar`.
fn shape_via(key: &str, shared: Option<&str>, via: Option<&str>) -> String {
    let unbraced = key.replace(['{', '}'], "");
    let spans = values(&unbraced);
    let mut run = shared.and_then(|v| find_run(&unbraced, &spans, v));
    let mut replace = None;
    if run.is_none()
        && let (Some(t), Some(v)) = (shared, via)
    {
        run = find_run(&unbraced, &spans, v);
        replace = run.map(|_| shape(t, None));
    }
    let mut out = String::new();
    let mut at = 0;
    for (i, &(a, b)) in spans.iter().enumerate() {
        out.push_str(&unbraced[at..a]);
        if run.is_some_and(|r| r.0 == i) {
            out.push('{');
            if let Some(t) = &replace {
                out.push_str(t);
            }
        }
        let seg = &unbraced[a..b];
        if replace.is_none() || !run.is_some_and(|r| (r.0..=r.1).contains(&i)) {
            // A key's first value, when it is a name (`bull-v2`, `app_1`), is its family's
            // namespace: literal, as `bull` is.
            let literal = i == 0 && is_name(seg);
            out.push_str(class(seg).filter(|_| !literal).unwrap_or(seg));
        }
        if run.is_some_and(|r| r.1 == i) {
            out.push('}');
        }
        at = b;
    }
    out.push_str(&unbraced[at..]);
    out
}

/// The key with braces removed and `shared` braced at its first occurrence as whole values.
#[cfg(test)]
fn tag_key(key: &str, shared: &str) -> String {
    tag_key_via(key, shared, None)
}

/// [`tag_key`], where a key that does not hold `shared` but holds `via` gets the tag `shared`
/// in place of `via` (`user:ana4:avatar` → `user:{c:ana4}:avatar`).
fn tag_key_via(key: &str, shared: &str, via: Option<&str>) -> String {
    let unbraced = key.replace(['{', '}'], "");
    let spans = values(&unbraced);
    let (run, text) = match find_run(&unbraced, &spans, shared) {
        Some(r) => (Some(r), None),
        None => (
            via.and_then(|v| find_run(&unbraced, &spans, v)),
            Some(shared),
        ),
    };
    match run {
        Some((i, j)) => {
            let (a, b) = (spans[i].0, spans[j].1);
            format!(
                "{}{{{}}}{}",
                &unbraced[..a],
                text.unwrap_or(&unbraced[a..b]),
                &unbraced[b..]
            )
        }
        None => unbraced,
    }
}

fn run(b: &Batch, topo: &Topology, opts: &PlanOptions, strategy: Strategy) -> Score {
    let (outcome, round_trips, latency_ms, nodes_touched) =
        super::run_batch(b, topo, opts, strategy);
    Score {
        outcome,
        round_trips,
        latency_ms,
        nodes_touched,
        skew: None,
        skew_overall: None,
        keys_moved: 0.0,
        keys_renamed: 0.0,
    }
}

fn skew_of(per_node: &[f64]) -> Option<f64> {
    let total: f64 = per_node.iter().sum();
    if per_node.is_empty() || total <= 0.0 {
        return None;
    }
    Some(per_node.iter().cloned().fold(0.0, f64::max) / (total / per_node.len() as f64))
}

/// Per-node loads of `sample` with keys of the given shapes re-keyed by tagging the segment at
/// their shared position (all keys; the matching keys before and after), and the weight that
/// changes node.
struct SampleLoads {
    per_node: Vec<f64>,
    matched_before: Vec<f64>,
    matched_after: Vec<f64>,
    moved: f64,
    /// Sample keys a shape matched.
    matched: usize,
    /// The distinct values their tag took (two at most are kept: one value or several).
    values: std::collections::BTreeSet<Vec<u8>>,
}

/// A family's sample keys needed before one tag value over all of them means a constant.
const CONSTANT_MIN_KEYS: usize = 8;

fn sample_loads(
    sample: &[Vec<u8>],
    topo: &Topology,
    shapes: &[(regex::bytes::Regex, usize)],
) -> SampleLoads {
    let mut per_node = vec![0.0; topo.nodes().len()];
    let mut matched_before = vec![0.0; topo.nodes().len()];
    let mut matched_after = vec![0.0; topo.nodes().len()];
    let mut moved = 0.0;
    let mut matched = 0;
    let mut values = std::collections::BTreeSet::new();
    let mut unbraced = Vec::new();
    for k in sample {
        let before = topo.node_of(k);
        let mut node = before;
        // Shapes are written without the keys' braces (a tag they have is where the shape
        // braces it).
        let u: &[u8] = if k.iter().any(|&b| b == b'{' || b == b'}') {
            unbraced.clear();
            unbraced.extend(k.iter().filter(|&&b| b != b'{' && b != b'}'));
            &unbraced
        } else {
            k
        };
        for (re, group) in shapes {
            if let Some(c) = re.captures(u)
                && let Some(m) = c.get(*group)
            {
                matched += 1;
                if values.len() < 2 {
                    values.insert(m.as_bytes().to_vec());
                }
                let mut nk = Vec::with_capacity(u.len() + 2);
                nk.extend_from_slice(&u[..m.start()]);
                nk.push(b'{');
                nk.extend_from_slice(m.as_bytes());
                nk.push(b'}');
                nk.extend_from_slice(&u[m.end()..]);
                node = topo.node_of(&nk);
                if node != before {
                    moved += 1.0;
                }
                if let Some(b) = before {
                    matched_before[b] += 1.0;
                }
                if let Some(a) = node {
                    matched_after[a] += 1.0;
                }
                break;
            }
        }
        if let Some(n) = node {
            per_node[n] += 1.0;
        }
    }
    SampleLoads {
        per_node,
        matched_before,
        matched_after,
        moved,
        matched,
        values,
    }
}

/// A regex matching keys of `shape` (placeholders as classes), capturing the braced segment.
fn shape_regex(shape: &str) -> Option<(regex::bytes::Regex, usize)> {
    let mut re = String::from("(?-u)^");
    let mut braced = false;
    let mut rest = shape;
    while let Some(c) = rest.chars().next() {
        if c == '{' && !braced {
            re.push('(');
            braced = true;
            rest = &rest[1..];
            continue;
        }
        if c == '}' && braced {
            re.push(')');
            rest = &rest[1..];
            continue;
        }
        if c == '<'
            && let Some(end) = rest.find('>')
            && let Some(class) = placeholder_regex(&rest[..=end])
        {
            re.push_str("(?:");
            re.push_str(class);
            re.push(')');
            rest = &rest[end + 1..];
            continue;
        }
        re.push_str(&regex::escape(&rest[..c.len_utf8()]));
        rest = &rest[c.len_utf8()..];
    }
    re.push('$');
    if !braced {
        return None;
    }
    regex::bytes::Regex::new(&re).ok().map(|r| (r, 1))
}

/// When every observed batch has all its keys on one and the same slot (a library configured
/// with one global `{prefix}` tag), the batches run but the whole workload sits on one node: a
/// skew problem, said with the tag and the fix.
pub fn one_slot_note(batches: &[Batch], topo: &Topology) -> Option<String> {
    let mut one = OneSlot::default();
    for b in batches {
        one.add(b);
    }
    one.note(topo)
}

/// Whether every batch seen so far has all its keys on one and the same slot (see
/// [`one_slot_note`]), a batch at a time.
#[derive(Debug, Default)]
struct OneSlot {
    batches: usize,
    keys: usize,
    slot: Option<u16>,
    example: Option<String>,
    spread: bool,
}

impl OneSlot {
    fn add(&mut self, b: &Batch) {
        self.batches += 1;
        if self.spread {
            return;
        }
        for k in b
            .keys()
            .chain(b.script_ran.iter().flatten().map(Vec::as_slice))
        {
            let s = key_slot(k);
            if *self.slot.get_or_insert(s) != s {
                self.spread = true;
                return;
            }
            self.keys += 1;
            self.example
                .get_or_insert_with(|| String::from_utf8_lossy(k).into_owned());
        }
    }

    fn note(&self, topo: &Topology) -> Option<String> {
        let slot = self.slot.filter(|_| !self.spread)?;
        if self.batches < 3 || topo.nodes().len() < 2 {
            return None;
        }
        let example = self.example.clone().unwrap_or_default();
        let tag = String::from_utf8_lossy(crate::slot::hash_tag(example.as_bytes())).into_owned();
        let node = topo
            .node_of_slot(slot)
            .map(|n| topo.nodes()[n].name.clone())
            .unwrap_or_else(|| "-".into());
        Some(format!(
            "All {} observed batches ({} keys) hash to one slot, {slot} (tag `{{{tag}}}`, e.g. {example}), on {node}: they run, but the whole workload lands on one node of {}. That is a skew problem: tag per name instead of one global tag (for a queue library, one tag per queue, as `bull:{{<queue>}}:…`), so that names spread over the nodes while each batch stays on one slot.",
            self.batches,
            self.keys,
            topo.nodes().len()
        ))
    }
}

/// A batch's keys, each once, in order: those it declares, then for a script those it touched
/// without declaring them (a capture's `[0 lua]` lines, or the keys a body that declares none
/// names). A set, not a walk of the keys so far, for a batch of many.
fn script_keys(b: &Batch) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let named = b
        .no_keys
        .iter()
        .flat_map(|u| u.keys.iter().map(Vec::as_slice));
    for k in b
        .keys()
        .chain(b.script_ran.iter().flatten().map(Vec::as_slice))
        .chain(named)
    {
        let k = String::from_utf8_lossy(k).into_owned();
        if seen.insert(k.clone()) {
            keys.push(k);
        }
    }
    keys
}

/// Plans every observed batch whose keys span several slots, and every script that declares
/// no keys but touches (or may touch) keys. `sample` (may be empty) scores
/// the skew of each rewrite.
pub fn plan_observed(
    batches: &[Batch],
    topo: &Topology,
    sample: &[Vec<u8>],
    opts: &PlanOptions,
) -> Vec<ObservedPlan> {
    let mut planner = ObservedPlanner::new(topo, sample, opts);
    let mut plans: Vec<ObservedPlan> = batches.iter().filter_map(|b| planner.add(b)).collect();
    let groups = planner.finish();
    for p in &mut plans {
        groups.complete(p);
    }
    plans
}

/// Plans observed batches a batch at a time, keeping only what completes the plans (counts per
/// rewritten shape), never the batches or the plans.
pub struct ObservedPlanner<'a> {
    topo: &'a Topology,
    sample: &'a [Vec<u8>],
    opts: &'a PlanOptions,
    base: Option<Vec<f64>>,
    /// Per rewritten shape: the batches planned with it and the distinct tag values.
    groups: std::collections::HashMap<Vec<String>, Group>,
    one_slot: OneSlot,
}

impl<'a> ObservedPlanner<'a> {
    /// A planner on `topo`; `sample` (may be empty) scores the skew of each rewrite.
    pub fn new(topo: &'a Topology, sample: &'a [Vec<u8>], opts: &'a PlanOptions) -> Self {
        let base = if sample.is_empty() {
            None
        } else {
            Some(sample_loads(sample, topo, &[]).per_node)
        };
        ObservedPlanner {
            topo,
            sample,
            opts,
            base,
            groups: std::collections::HashMap::new(),
            one_slot: OneSlot::default(),
        }
    }

    /// Plans one batch: its plan when its keys span several slots (complete it with
    /// [`ObservedGroups::complete`] once every batch is planned).
    pub fn add(&mut self, b: &Batch) -> Option<ObservedPlan> {
        self.one_slot.add(b);
        let p = self.plan(b)?;
        if !p.rewritten.is_empty() {
            let g = self.groups.entry(p.rewritten.clone()).or_default();
            g.batches += 1;
            if let Some(v) = &p.shared {
                g.values.insert(v.clone());
            }
            if g.prints.len() < 2 {
                let mut keys: Vec<&[u8]> = b.keys().collect();
                keys.sort_unstable();
                keys.dedup();
                g.prints
                    .insert(super::workload::stable_hash(&keys.join(&b"\n"[..])));
            }
        }
        Some(p)
    }

    fn plan(&self, b: &Batch) -> Option<ObservedPlan> {
        // A script that declares no keys and touches (or may touch) keys is sent to any node:
        // that comes first, whatever its keys' slots.
        let undeclared = b.no_keys.as_ref().filter(|_| self.topo.nodes().len() > 1);
        let Some(u) = undeclared else {
            return self.plan_keys(b);
        };
        let first = format!("{}; {}", u.problem(), u.help());
        if let Some(mut p) = self.plan_keys(b) {
            p.recommendation = format!("{first}; then: {}", p.recommendation);
            return Some(p);
        }
        let keys = script_keys(b);
        let mut slots: Vec<u16> = keys.iter().map(|k| key_slot(k.as_bytes())).collect();
        slots.sort_unstable();
        slots.dedup();
        let mut patterns: Vec<String> = keys.iter().map(|k| shape(k, None)).collect();
        patterns.sort();
        patterns.dedup();
        let before = run(b, self.topo, self.opts, self.opts.strategy);
        Some(ObservedPlan {
            batch: b.name.clone(),
            batch_id: b.id.clone(),
            keys: keys.len(),
            slots: slots.len(),
            shared: None,
            patterns,
            rewritten: Vec::new(),
            examples: Vec::new(),
            after: before.clone(),
            before,
            tag_values_seen: 0,
            batches_seen: 0,
            recommendation: first,
            untagged: None,
        })
    }

    /// The plan of `b` (over `keys` keys) with no tag: an atomic batch must change, a
    /// pipeline is sent per node (or as one pipeline to a proxy). `note` says why no shared
    /// value is a tag.
    fn untagged(
        &self,
        b: &Batch,
        keys: usize,
        note: &str,
        atomic: bool,
        before: &Score,
    ) -> (Score, String) {
        let (topo, opts) = (self.topo, self.opts);
        let proxy = topo.slot_map().and_then(|m| m.enterprise());
        if atomic {
            // Splitting would drop what the batch is for: the application must change.
            let what = match b.kind {
                BatchKind::Multi => "a MULTI … EXEC transaction".to_string(),
                BatchKind::Script => "a script".to_string(),
                _ => format!("one {} command", b.id.command),
            };
            let rec = format!(
                "no segment is shared by all {keys} keys{note}, and {what} must run on one slot: the application must change: give these keys one hash tag (the id that ties them, such as a group, chord or order id) or stop batching them; per-node pipelines would run it, but not atomically{}",
                if b.kind == BatchKind::MultiKey {
                    " (and a blocking pop over several lists cannot be split at all)"
                } else {
                    ""
                }
            );
            (before.clone(), rec)
        } else if proxy.is_some() {
            let after = run(b, topo, opts, Strategy::Pipeline);
            let rec = format!(
                "no segment is shared by all {keys} keys{note}: no tag helps; the database's proxy sends each shard its part at once: {} round trip(s) with one pipeline",
                after.round_trips
            );
            (after, rec)
        } else {
            let after = run(b, topo, opts, Strategy::Parallel);
            let rec = format!(
                "no segment is shared by all {keys} keys{note}: no tag helps; send per-node pipelines in parallel: {} → {} round trip(s)",
                before.round_trips, after.round_trips
            );
            (after, rec)
        }
    }

    fn plan_keys(&self, b: &Batch) -> Option<ObservedPlan> {
        let (topo, sample, opts) = (self.topo, self.sample, self.opts);
        let base = &self.base;
        {
            let keys = script_keys(b);
            let mut slots: Vec<u16> = keys.iter().map(|k| key_slot(k.as_bytes())).collect();
            slots.sort_unstable();
            slots.dedup();
            if keys.len() < 2 || slots.len() < 2 {
                return None;
            }
            // Segment values every key has.
            let sets: Vec<Vec<String>> = keys
                .iter()
                .map(|k| {
                    split(&k.replace(['{', '}'], ""))
                        .into_iter()
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .collect();
            let lookup: Vec<std::collections::HashSet<&str>> = sets
                .iter()
                .map(|s| s.iter().map(String::as_str).collect())
                .collect();
            let mut shared: Vec<&String> = sets[0]
                .iter()
                .filter(|v| lookup.iter().all(|s| s.contains(v.as_str())))
                .collect();
            shared.dedup();
            // Ids before words; a segment that is not first before one that is; longer first.
            shared.sort_by_key(|v| {
                let first = sets.iter().all(|s| s.first() == Some(*v));
                (
                    std::cmp::Reverse(rank(v)),
                    first,
                    std::cmp::Reverse(v.len()),
                )
            });
            // An id; else a name that ties keys of different shapes and is neither every key's
            // first segment (the family prefix) nor every key's last (a constant suffix), or is a
            // whole key itself: a queue's or a group's name, as `bull:{<queue>}:…`. A name shared by
            // keys of one shape is a constant of that family: tagging it would put the whole family
            // on one slot.
            let shapes_now: std::collections::BTreeSet<String> =
                keys.iter().map(|k| shape(k, None)).collect();
            let all_at = |v: &str, last: bool| {
                sets.iter().all(|s| {
                    let at = if last { s.last() } else { s.first() };
                    at.map(String::as_str) == Some(v)
                })
            };
            // A tag some keys have already, that every key holds as whole values, comes first:
            // reused, the keys that have it stay where they are and the others join them.
            let reuse = keys.iter().filter_map(|k| existing_tag(k)).find(|t| {
                keys.iter().all(|k| {
                    let u = k.replace(['{', '}'], "");
                    find_run(&u, &values(&u), t).is_some()
                })
            });
            // A value every key has as its first (the family's namespace: `bull-v2`, `app_1`) is
            // no tag unless it is an id itself: the verdict must not turn on whether a prefix
            // carries a version number.
            let namespace = |v: &str| all_at(v, false) && rank(v) < 3;
            let ids_and_ties: Vec<&String> = shared
                .iter()
                .filter(|v| {
                    (rank(v) > 1 && !namespace(v))
                        || (shapes_now.len() > 1
                            && ((!all_at(v, false) && !all_at(v, true))
                                || keys.iter().any(|k| k.as_str() == v.as_str())))
                })
                .copied()
                .collect();
            // Else a tag some keys have already (`{c:ana4}`) whose values include one every key
            // holds (`ana4`): the keys without it get that tag in its place, the tagged keys
            // stay where they are.
            let partial = reuse.is_none().then(|| {
                keys.iter().filter_map(|k| existing_tag(k)).find_map(|t| {
                    let spans = values(t);
                    ids_and_ties
                        .iter()
                        .find(|v| {
                            spans.iter().any(|&(a, b)| &t[a..b] == v.as_str()) && v.as_str() != t
                        })
                        .map(|v| (t.to_string(), Some(v.to_string())))
                })
            });
            let mut candidates: Vec<(String, Option<String>)> = reuse
                .map(|t| (t.to_string(), None))
                .into_iter()
                .chain(partial.flatten())
                .collect();
            for v in ids_and_ties {
                if !candidates.iter().any(|(c, _)| c == v) {
                    candidates.push((v.clone(), None));
                }
            }
            // A value the whole family has in the sample is a constant of the family (a
            // library's name and version), not an id: tagging it puts the family on one slot.
            let mut constants: Vec<String> = Vec::new();
            let mut loads: Option<SampleLoads> = None;
            let mut pick: Option<(String, Option<String>)> = None;
            for (v, via) in candidates {
                let mut rw: Vec<String> = keys
                    .iter()
                    .map(|k| shape_via(k, Some(&v), via.as_deref()))
                    .collect();
                rw.sort();
                rw.dedup();
                if base.is_some() {
                    // A name braced literally matches only itself: the sample is asked how
                    // many names stand there (`bull:{<name>}:wait`), one being a constant.
                    let shapes: Vec<(regex::bytes::Regex, usize)> = rw
                        .iter()
                        .filter_map(|s| shape_regex(&any_name(s)))
                        .collect();
                    let l = sample_loads(sample, topo, &shapes);
                    if l.matched >= CONSTANT_MIN_KEYS && l.values.len() == 1 {
                        constants.push(v);
                        continue;
                    }
                    loads = Some(l);
                }
                pick = Some((v, via));
                break;
            }
            let constant_note = match constants.as_slice() {
                [] => String::new(),
                c => format!(
                    " (every sample key of these shapes has the same {}: a constant of the family, not a tag)",
                    c.iter()
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            // A Redis Enterprise proxy runs some multi-key commands over several slots itself.
            let proxy = topo.slot_map().and_then(|m| m.enterprise());
            let atomic = matches!(
                b.kind,
                BatchKind::Multi | BatchKind::Script | BatchKind::MultiKey
            ) && !(b.kind == BatchKind::MultiKey
                && proxy.is_some_and(|e| e.accepts_cross_slot(&b.id.command)));
            let mut patterns: Vec<String> = keys.iter().map(|k| shape(k, None)).collect();
            patterns.sort();
            patterns.dedup();
            let before = run(b, topo, opts, opts.strategy);
            let mut matched_before = None;
            let untagged = |note: &str| self.untagged(b, keys.len(), note, atomic, &before);
            let (rewritten, examples, after, recommendation, fallback) = match &pick {
                Some((v, via)) => {
                    let via = via.as_deref();
                    let new_keys: Vec<String> =
                        keys.iter().map(|k| tag_key_via(k, v, via)).collect();
                    let nb = b.map_keys(|k| {
                        tag_key_via(&String::from_utf8_lossy(k), v, via).into_bytes()
                    });
                    let mut after = run(&nb, topo, opts, opts.strategy);
                    let mut rw: Vec<String> =
                        keys.iter().map(|k| shape_via(k, Some(v), via)).collect();
                    rw.sort();
                    rw.dedup();
                    if let Some(l) = &loads {
                        after.skew_overall = skew_of(&l.per_node);
                        after.skew = skew_of(&l.matched_after);
                        after.keys_moved = l.moved;
                        matched_before = skew_of(&l.matched_before);
                    }
                    let ex: Vec<(String, String)> = keys
                        .iter()
                        .zip(&new_keys)
                        .take(3)
                        .map(|(a, b)| (a.clone(), b.clone()))
                        .collect();
                    let what = match via {
                        Some(id) => format!(
                            "every key holds `{id}` and some have the tag `{{{v}}}` already: give the others that tag"
                        ),
                        None => format!("every key shares the segment `{v}`: tag it"),
                    };
                    let rec = format!(
                        "{what} ({}) and the batch runs on one slot, {} → {} round trip(s)",
                        rw.join(", "),
                        before.round_trips,
                        after.round_trips
                    );
                    // What to say instead should every batch of this shape have the same value
                    // (a constant, known once all batches are seen).
                    let (f_after, f_rec) = untagged(&format!(
                        " but `{v}`, which every batch of this shape has while their other keys differ: a constant of the family, not a tag"
                    ));
                    let fallback = Untagged {
                        after: f_after,
                        recommendation: f_rec,
                    };
                    (rw, ex, after, rec, Some(Box::new(fallback)))
                }
                None => {
                    let (after, rec) = untagged(&constant_note);
                    (Vec::new(), Vec::new(), after, rec, None)
                }
            };
            let mut before = before;
            before.skew_overall = base.as_deref().and_then(skew_of);
            before.skew = matched_before;
            Some(ObservedPlan {
                batch: b.name.clone(),
                batch_id: b.id.clone(),
                keys: keys.len(),
                slots: slots.len(),
                shared: pick.map(|(v, _)| v),
                patterns,
                rewritten,
                examples,
                before,
                after,
                tag_values_seen: 0,
                batches_seen: 0,
                recommendation,
                untagged: fallback,
            })
        }
    }

    /// What completes the plans: how often each rewrite's tag came up, and the note when
    /// every batch sat on one slot.
    pub fn finish(self) -> ObservedGroups {
        ObservedGroups {
            note: self.one_slot.note(self.topo),
            groups: self.groups,
        }
    }
}

/// The observed batches planned with one rewrite: how many, the values their tag took, and
/// whether they were all the same batch (two fingerprints of their keys at most are kept).
#[derive(Debug, Default)]
struct Group {
    batches: usize,
    values: std::collections::BTreeSet<String>,
    prints: std::collections::BTreeSet<u64>,
}

/// What the observed batches show as a whole: how many batches of each rewritten shape there
/// were and how many values their tag took (one value over many batches is a constant, which
/// would put them all on one slot), and whether every batch sat on one slot.
#[derive(Debug, Default)]
pub struct ObservedGroups {
    /// The note when every observed batch hashes to one slot.
    pub note: Option<String>,
    groups: std::collections::HashMap<Vec<String>, Group>,
}

impl ObservedGroups {
    /// Completes a plan [`ObservedPlanner::add`] made: the counts over its shape, and what
    /// they mean for the recommendation.
    pub fn complete(&self, p: &mut ObservedPlan) {
        let group = self
            .groups
            .get(&p.rewritten)
            .filter(|_| !p.rewritten.is_empty());
        let (batches, values, distinct) =
            group.map_or((0, 0, 0), |g| (g.batches, g.values.len(), g.prints.len()));
        p.batches_seen = batches;
        p.tag_values_seen = values;
        let untagged = p.untagged.take();
        let name = p.shared.as_deref().is_some_and(|v| rank(v) == 1);
        if name {
            p.recommendation.push_str(
                "; the tag is a name, not an id: every key of that name lands on one slot (a queue library's documented cluster setup); with few names, load gathers on few nodes",
            );
        } else if p.batches_seen >= 3 && p.tag_values_seen == 1 {
            match untagged {
                // Different batches, one value: a constant of the family (a library's name
                // or version, a fixed window), never a tag.
                Some(u) if distinct > 1 => {
                    p.shared = None;
                    p.rewritten.clear();
                    p.examples.clear();
                    p.after = u.after;
                    p.recommendation = u.recommendation;
                }
                // The same batch again and again: the value may be an id all the same.
                _ => p.recommendation.push_str(&format!(
                    "; but all {} batches of this shape share the same value, so the tag would be a constant: a name, not an id: every key of that name lands on one slot, and they all go to one node",
                    p.batches_seen
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::batch::parse_batches;
    use crate::topology::SlotMap;

    #[test]
    fn shapes_and_tags() {
        assert_eq!(shape("order:42:items", Some("42")), "order:{<int>}:items");
        assert_eq!(shape("user:{7}:cart", None), "user:<int>:cart");
        assert_eq!(tag_key("order:42:items", "42"), "order:{42}:items");
        assert_eq!(tag_key("{x}:42:42", "42"), "x:{42}:42");
        // The pattern engine's segments: values read whole, every delimiter, prefix and suffix
        // kept.
        assert_eq!(
            shape("rl:2001:db8::1:minute", Some("2001:db8::1")),
            "rl:{<ip>}:minute"
        );
        assert_eq!(
            tag_key("b_api-v2-133-x7Kq11_settings", "b_api-v2-133-x7Kq11"),
            "{b_api-v2-133-x7Kq11}_settings"
        );
        assert_eq!(
            shape("acct:email=hugo.1234@example.com:meta", None),
            "acct:email=<email>:meta"
        );
        assert_eq!(
            shape("x_k3J9aZ_settings", Some("k3J9aZ")),
            "x_{<id>}_settings"
        );
        let (re, g) = shape_regex("rl:{<ip>}:minute").unwrap();
        let c = re.captures(b"rl:2001:db8::1:minute").unwrap();
        assert_eq!(c.get(g).unwrap().as_bytes(), b"2001:db8::1");
        assert!(!re.is_match(b"rl:2001:db8::1:hour"));
        let (re, g) = shape_regex("order:{<int>}:items").unwrap();
        let c = re.captures(b"order:9:items").unwrap();
        assert_eq!(c.get(g).unwrap().as_bytes(), b"9");
        assert!(shape_regex("order:<int>").is_none());
    }

    #[test]
    fn mines_the_shared_id() {
        let text = "MULTI SET order:1001:items x; SET order:1001:total 5\nMGET product:1 product:2 product:3 product:4\nMGET a:1 a:1\n";
        let b = parse_batches(text).unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let p = plan_observed(&b, &topo, &[], &PlanOptions::default());
        assert_eq!(p.len(), 2, "{p:#?}");
        assert_eq!(p[0].shared.as_deref(), Some("1001"));
        assert_eq!(
            p[0].rewritten,
            vec![
                "order:{<int>}:items".to_string(),
                "order:{<int>}:total".into()
            ]
        );
        assert_eq!(p[0].after.round_trips, 1);
        assert!(p[0].before.round_trips >= 1);
        assert_eq!(p[1].shared, None);
        assert!(
            p[1].recommendation.starts_with("no segment is shared"),
            "{}",
            p[1].recommendation
        );
    }

    #[test]
    fn atomic_batches_keep_their_atomicity_and_names_tie_families() {
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let text = "MULTI SET task:aaa 1; SET task:bbb 2\nPIPELINE GET task:aaa; GET task:bbb\nEVALSHA x 2 bull:q:wait bull:q:active\nMGET user:1:profile user:2:profile user:3:profile\n";
        let b = parse_batches(text).unwrap();
        let p = plan_observed(&b, &topo, &[], &PlanOptions::default());
        let by_line = |l: usize| p.iter().find(|x| x.batch_id.line == Some(l)).unwrap();
        let multi = by_line(1);
        assert!(
            multi.recommendation.contains("application must change"),
            "{}",
            multi.recommendation
        );
        assert!(!multi.recommendation.contains("send per-node pipelines"));
        assert_eq!(multi.after.round_trips, multi.before.round_trips);
        // A pipeline is not atomic: per-node pipelines are fine advice.
        assert!(
            by_line(2)
                .recommendation
                .contains("send per-node pipelines")
        );
        // The queue name ties the queue's keys of different shapes.
        assert_eq!(by_line(3).shared.as_deref(), Some("q"));
        // One family's constant suffix is not a tag.
        assert_eq!(by_line(4).shared, None);
        // All batches on one slot: a skew problem.
        let one =
            parse_batches("MGET {g}:a {g}:b\nMGET {g}:c {g}:d\nMULTI SET {g}:e 1; SET {g}:f 2\n")
                .unwrap();
        let note = one_slot_note(&one, &topo).unwrap();
        assert!(
            note.contains("tag `{g}`") && note.contains("skew problem"),
            "{note}"
        );
        assert_eq!(one_slot_note(&b, &topo), None);
    }

    #[test]
    fn names_are_tagged_whole_and_existing_tags_are_reused() {
        // A name joined by `_`, `.` or `-` is one value: never a fragment of it.
        assert_eq!(
            split("acct:ana_garcia4:x"),
            ["acct", "ana_garcia4", "x"],
            "{:?}",
            split("acct:ana_garcia4:x")
        );
        assert_eq!(split("login-throttle:7"), ["login-throttle", "7"]);
        assert_eq!(split("mq-800.26:job:9"), ["mq-800.26", "job", "9"]);
        // Ids between joiners stay values of their own.
        assert_eq!(split("order-42-items"), ["order", "42", "items"]);
        assert_eq!(
            tag_key("acct:ana_garcia4:x", "ana_garcia4"),
            "acct:{ana_garcia4}:x"
        );
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let text = "MGET u:ana_garcia4:a w:ana_garcia4:b\nMGET {c:42}:profile c:42:orders c:42:cart\nMGET mq-800.26:job:1 mq-800.26:job:2:log\n";
        let b = parse_batches(text).unwrap();
        let p = plan_observed(&b, &topo, &[], &PlanOptions::default());
        let by_line = |l: usize| p.iter().find(|x| x.batch_id.line == Some(l));
        assert_eq!(by_line(1).unwrap().shared.as_deref(), Some("ana_garcia4"));
        let reused = by_line(2).unwrap();
        assert_eq!(reused.shared.as_deref(), Some("c:42"), "{reused:#?}");
        assert!(
            reused.rewritten.iter().all(|r| r.starts_with("{c:<int>}:")),
            "{:?}",
            reused.rewritten
        );
        // The prefix's version number is no tag; the job id is.
        if let Some(mq) = by_line(3) {
            assert_ne!(mq.shared.as_deref(), Some("800"), "{mq:#?}");
            assert_ne!(mq.shared.as_deref(), Some("mq-800.26"), "{mq:#?}");
        }
    }

    #[test]
    fn a_value_every_sample_key_of_the_family_has_is_no_tag() {
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        // Every key of the family carries `v9`; the batch's keys share it and nothing else.
        let sample: Vec<Vec<u8>> = (0..40)
            .flat_map(|i| {
                [
                    format!("app:v9:user:{i}").into_bytes(),
                    format!("app:v9:cart:{}", i * 7).into_bytes(),
                ]
            })
            .collect();
        let b = parse_batches("MGET app:v9:user:3 app:v9:cart:11\n").unwrap();
        let p = plan_observed(&b, &topo, &sample, &PlanOptions::default());
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].shared, None, "{p:#?}");
        assert!(
            p[0].recommendation
                .contains("a constant of the family, not a tag"),
            "{}",
            p[0].recommendation
        );
    }

    #[test]
    fn a_tag_value_every_batch_of_a_shape_shares_is_a_constant() {
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        // Three batches of one shape sharing the id 7, two of another with different ids,
        // and one whose keys share nothing.
        let text = "MGET order:7:items order:7:total
MGET order:7:items order:7:total
MGET order:7:items order:7:total
MGET cart:1:a cart:1:b
MGET cart:2:a cart:2:b
MGET x:1 y:2
";
        let b = parse_batches(text).unwrap();
        let p = plan_observed(&b, &topo, &[], &PlanOptions::default());
        let seen: Vec<(usize, usize)> = p
            .iter()
            .map(|x| (x.batches_seen, x.tag_values_seen))
            .collect();
        assert_eq!(
            seen,
            [(3, 1), (3, 1), (3, 1), (2, 2), (2, 2), (0, 0)],
            "{p:#?}"
        );
        assert!(
            p[0].recommendation
                .contains("all 3 batches of this shape share the same value")
        );
        assert!(!p[3].recommendation.contains("share the same value"));
    }
}
