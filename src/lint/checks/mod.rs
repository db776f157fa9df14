//! The check kinds, one file each behind the [`Check`] trait. Scheme checks reason on patterns
//! and declared cardinalities; dump checks look at every key (streaming, bounded memory:
//! findings per rule and file are capped).

mod cardinality_drift;
mod code_site;
mod cross_slot;
mod fanout;
mod gates;
mod hot_spot;
mod key_bytes;
mod key_family;
mod key_length;
mod node_skew;
mod script_keys;
mod tag_cardinality;
mod tag_shape;
mod unmatched_key;
mod unused_tag;

use super::rule::CheckKind;
use super::{ActiveRule, Diagnostic, RuleSet};
use crate::keys::Record;
use crate::keys::parallel::ChunkSink;
use crate::scheme::Scheme;
use crate::scheme::matcher::KeyMatcher;
use crate::topology::Topology;
use gates::{Gate, Gates};

/// Findings kept per rule and dump file (the rest are counted on the last one kept).
const MAX_PER_RULE: usize = 20;

fn diag(
    r: &ActiveRule,
    path: &str,
    line: u64,
    column: u64,
    message: String,
    help: Option<String>,
) -> Diagnostic {
    Diagnostic {
        code: r.spec.id.clone(),
        name: r.spec.name.clone(),
        severity: r.severity,
        message,
        path: path.to_string(),
        more: 0,
        line,
        column,
        help,
        sent_at: None,
    }
}

fn allowed(list: &[String], r: &ActiveRule) -> bool {
    list.iter()
        .any(|a| a.eq_ignore_ascii_case(&r.spec.id) || *a == r.spec.name)
}

/// A finding of a check at a place in the scheme.
pub(crate) struct Finding {
    line: u64,
    column: u64,
    message: String,
    help: Option<String>,
}

impl Finding {
    fn at(pos: crate::scheme::Pos, message: String, help: Option<String>) -> Finding {
        Finding {
            line: pos.line as u64,
            column: pos.column as u64,
            message,
            help,
        }
    }
}

/// What one kind of check finds: in a scheme, in one key of a dump, and over a whole dump.
/// Each kind lives in a file of its own; a kind implements the hooks it needs.
pub(crate) trait Check: std::any::Any + Send {
    /// Findings in a scheme laid over `nodes` nodes.
    fn scheme(&self, _r: &ActiveRule, _scheme: &Scheme, _topo: &Topology) -> Vec<Finding> {
        Vec::new()
    }

    /// A finding for one dump key.
    fn key(&self, _seen: &KeySeen<'_>) -> Found {
        None
    }

    /// What a dump key must have for [`Check::key`] to find anything in it: the linter tests
    /// it first and calls the check only for the keys that have it (most keys have none).
    /// [`KeyNeeds::Nothing`], the default, is a check that reads no dump keys.
    fn key_needs(&self) -> KeyNeeds<'_> {
        KeyNeeds::Nothing
    }

    /// Whether [`Check::family_key`] should be called (it costs a pattern match per key).
    fn wants_values(&self) -> bool {
        false
    }

    /// A dump key the scheme's patterns found to be of declared key `family`, with them.
    fn family_key(&self, _family: usize, _key: &[u8], _matcher: &KeyMatcher) {}

    /// A finding over a whole dump, from its totals (and the scheme, when one is given).
    fn dump(&self, _seen: &DumpSeen<'_>) -> Found {
        None
    }

    /// Adds what `other` (the same check, fed other parts of the dump) saw.
    fn merge(&self, _other: &dyn Check) {}

    /// Joins the linters reading other parts of the same dump at once (see [`Shared`]).
    fn share(&mut self, _shared: &Shared) {}

    /// A finding for one multi-key call found in application source.
    fn site(&self, _site: &crate::code::Site) -> Found {
        None
    }

    /// [`Check::site`], with the text of the source file the call is in (when it could be
    /// read), for the checks that read more than the reader kept.
    fn site_in(&self, site: &crate::code::Site, _source: Option<&str>) -> Found {
        self.site(site)
    }
}

/// What the linters of one dump's reader threads share while they read: how many keys of each
/// declared key `cardinality-drift` has counted at each of its sampling levels, so that no
/// thread keeps taking apart keys of levels the whole dump's sample drops in the end (each
/// would otherwise sample as if it read the dump alone). The findings are the same with or
/// without it.
#[derive(Clone, Default)]
pub struct Shared {
    pub(crate) drift: std::sync::Arc<std::sync::Mutex<cardinality_drift::SharedLevels>>,
}

/// What a dump key must have for a check's [`Check::key`] to find anything in it.
pub(crate) enum KeyNeeds<'a> {
    /// The check reads no dump keys.
    Nothing,
    /// A `{`.
    Brace,
    /// A byte at most 0x20 (a space, a tab or a control byte) or DEL.
    OddBytes,
    /// More bytes than this.
    LongerThan(usize),
    /// A scheme is given and the key matches none of its patterns.
    Unmatched,
    /// A match of this regular expression.
    Pattern(&'a str),
}

/// A finding of a key or dump check: its message and a hint, or `None`.
pub(crate) type Found = Option<(String, Option<String>)>;

/// One dump key as the key checks see it.
#[derive(Clone, Copy)]
pub(crate) struct KeySeen<'a> {
    /// The rule the check runs for.
    pub rule: &'a ActiveRule,
    /// The key.
    pub key: &'a [u8],
    /// A scheme is given and the key matches none of its patterns.
    pub unmatched: bool,
    /// Where the key is (lines order keys as the dump does).
    pub line: u64,
    /// Where its hash tag is (worked out once a key for every check).
    pub shape: crate::slot::TagShape,
    /// Whether it has a byte at most 0x20 (a space, a tab or a control byte) or DEL: without
    /// one, the byte checks have nothing to find.
    pub odd: bool,
}

/// A whole dump as the dump-wide checks see it.
#[derive(Clone, Copy)]
pub(crate) struct DumpSeen<'a> {
    /// Where the keys live.
    pub topo: &'a Topology,
    /// What the dump holds.
    pub totals: &'a DumpTotals,
    /// The scheme, when one is given.
    pub scheme: Option<&'a Scheme>,
}

/// What a dump holds, per node, per slot and per hash-tag value (the dump-wide checks read it).
pub(crate) struct DumpTotals {
    /// Keys read.
    pub keys: u64,
    /// Bytes of the keys (a tsv dump's second column), 0 without.
    pub bytes: u64,
    /// Whether the dump carried bytes.
    pub has_bytes: bool,
    /// Whether the dump carried ops.
    pub has_ops: bool,
    /// Per node: keys, bytes, ops.
    pub node_keys: Vec<u64>,
    /// Per node bytes.
    pub node_bytes: Vec<u64>,
    /// Per node ops.
    pub node_ops: Vec<f64>,
    /// Per slot: keys and bytes.
    pub slot_keys: Vec<u64>,
    /// Per slot bytes.
    pub slot_bytes: Vec<u64>,
    /// The heaviest hash-tag values by keys (bytes carried along).
    pub tags: crate::sketch::SpaceSaving,
    /// The heaviest hash-tag values by bytes.
    pub tags_by_bytes: crate::sketch::SpaceSaving,
}

impl DumpTotals {
    fn new(nodes: usize) -> DumpTotals {
        DumpTotals {
            keys: 0,
            bytes: 0,
            has_bytes: false,
            has_ops: false,
            node_keys: vec![0; nodes],
            node_bytes: vec![0; nodes],
            node_ops: vec![0.0; nodes],
            slot_keys: vec![0; crate::slot::SLOT_COUNT],
            slot_bytes: vec![0; crate::slot::SLOT_COUNT],
            tags: crate::sketch::SpaceSaving::new(64),
            tags_by_bytes: crate::sketch::SpaceSaving::new(64),
        }
    }

    fn merge(&mut self, o: &DumpTotals) {
        self.keys += o.keys;
        self.bytes += o.bytes;
        self.has_bytes |= o.has_bytes;
        self.has_ops |= o.has_ops;
        let add = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        add(&mut self.node_keys, &o.node_keys);
        add(&mut self.node_bytes, &o.node_bytes);
        add(&mut self.slot_keys, &o.slot_keys);
        add(&mut self.slot_bytes, &o.slot_bytes);
        for (x, y) in self.node_ops.iter_mut().zip(&o.node_ops) {
            *x += y;
        }
        self.tags.merge(&o.tags);
        self.tags_by_bytes.merge(&o.tags_by_bytes);
    }

    /// On a slot map, sets each node's keys and bytes to its slots' (added per slot while
    /// reading); call once, after the last key and merge.
    fn add_up_nodes(&mut self, topo: &Topology) {
        let Some(map) = topo.slot_map() else {
            return;
        };
        for (slot, (&keys, &bytes)) in self.slot_keys.iter().zip(&self.slot_bytes).enumerate() {
            if let Some(i) = map.owner_of_slot(slot as u16) {
                self.node_keys[i] += keys;
                self.node_bytes[i] += bytes;
            }
        }
    }

    fn add(
        &mut self,
        topo: &Topology,
        key: &[u8],
        shape: crate::slot::TagShape,
        slot: Option<u16>,
        bytes: Option<u64>,
        ops: Option<f64>,
    ) {
        self.keys += 1;
        let b = bytes.unwrap_or(0);
        self.has_bytes |= bytes.is_some();
        self.has_ops |= ops.is_some();
        self.bytes += b;
        // The slot, and on a Redis Enterprise database with a standard or custom hashing
        // policy the tag its rule captures (what is hashed when it is not the whole key), the
        // rules run once.
        let map = topo.slot_map();
        let by_policy = map.is_some_and(|m| m.custom_hashing());
        let (slot, policy_tag) = match map {
            Some(m) if by_policy => match m.place_key(key) {
                Some((s, hashed)) => (Some(s), (hashed.len() < key.len()).then_some(hashed)),
                None => (None, None),
            },
            Some(_) | None => (
                Some(slot.unwrap_or_else(|| crate::slot::crc16(shape.hashed(key)) & 0x3FFF)),
                None,
            ),
        };
        if let Some(slot) = slot.map(usize::from) {
            self.slot_keys[slot] += 1;
            // (A dump without bytes leaves the per-slot bytes alone: one table less in cache.)
            if bytes.is_some() {
                self.slot_bytes[slot] += b;
            }
        }
        // On a slot map, a node's keys and bytes are its slots' ([`DumpTotals::add_up_nodes`]
        // adds them up at the end); only ops, when the dump has them, are added per key. (A
        // per-key add to a node's counter waits on the last key's add to the same counter.)
        match map {
            Some(m) => {
                if let (Some(o), Some(i)) = (ops, slot.and_then(|s| m.owner_of_slot(s))) {
                    self.node_ops[i] += o;
                }
            }
            None => {
                if let Some(i) = topo.node_of(key) {
                    self.node_keys[i] += 1;
                    self.node_bytes[i] += b;
                    self.node_ops[i] += ops.unwrap_or(0.0);
                }
            }
        }
        let tag = match by_policy {
            true => policy_tag,
            false => {
                matches!(shape, crate::slot::TagShape::Tagged { .. }).then(|| shape.hashed(key))
            }
        };
        if let Some(tag) = tag {
            self.tags.add(tag, 1, b);
            if bytes.is_some() {
                self.tags_by_bytes.add(tag, b, 1);
            }
        }
    }
}

/// The check a rule's kind and parameters describe.
fn check_of(kind: &CheckKind) -> Box<dyn Check> {
    match kind {
        CheckKind::TagShape { flag } => Box::new(tag_shape::TagShapeCheck(*flag)),
        CheckKind::CrossSlot => Box::new(cross_slot::CrossSlotCheck),
        CheckKind::Fanout { min_nodes } => Box::new(fanout::FanoutCheck {
            min_nodes: *min_nodes,
        }),
        CheckKind::TagCardinality {
            min_per_node,
            max_share,
        } => Box::new(tag_cardinality::TagCardinalityCheck(
            super::TagRequirement {
                min_per_node: *min_per_node,
                max_share: *max_share,
            },
        )),
        CheckKind::UnusedTag => Box::new(unused_tag::UnusedTagCheck),
        CheckKind::NodeSkew {
            max_over_mean,
            min_keys,
        } => Box::new(node_skew::NodeSkewCheck {
            max_over_mean: *max_over_mean,
            min_keys: *min_keys,
        }),
        CheckKind::HotSpot {
            max_share,
            min_keys,
        } => Box::new(hot_spot::HotSpotCheck {
            max_share: *max_share,
            min_keys: *min_keys,
        }),
        CheckKind::KeyFamily {
            pattern,
            message,
            help,
        } => Box::new(key_family::KeyFamilyCheck::new(pattern, message, help)),
        CheckKind::CardinalityDrift { min_keys, factor } => Box::new(
            cardinality_drift::CardinalityDriftCheck::new(*min_keys, *factor),
        ),
        CheckKind::UnmatchedKey => Box::new(unmatched_key::UnmatchedKeyCheck),
        CheckKind::KeyLength { max } => Box::new(key_length::KeyLengthCheck { max: *max }),
        CheckKind::KeyBytes { flag } => Box::new(key_bytes::KeyBytesCheck(*flag)),
        CheckKind::ScriptKeys => Box::new(script_keys::ScriptKeysCheck),
        CheckKind::CodeSite { verdict, atomic } => Box::new(code_site::CodeSiteCheck {
            verdict: *verdict,
            atomic: *atomic,
        }),
    }
}

/// Checks the multi-key calls `keyplan code` found in application source against the active
/// rules; each finding is at the call, in its file. `source` gives a file's text (by its name in
/// the report) where a check reads more than the reader kept (a script's body).
pub fn lint_code(
    rules: &RuleSet,
    report: &crate::code::CodeReport,
    source: &dyn Fn(&str) -> Option<String>,
) -> Vec<Diagnostic> {
    let read = source;
    let mut out = Vec::new();
    for r in rules.active() {
        let check = check_of(&r.spec.check);
        for f in &report.files {
            // The file's text, read once and only for a script that declares no keys.
            let mut source: Option<Option<String>> = None;
            for s in &f.findings.sites {
                let text = match script_keys::declares_no_keys(s) {
                    true => source.get_or_insert_with(|| read(&f.file)).as_deref(),
                    false => None,
                };
                if let Some((message, help)) = check.site_in(s, text) {
                    // At the line that opens the batch; the line that sends it beside.
                    let (line, column) = (s.at.line as u64, s.at.column as u64);
                    let mut d = diag(r, &f.file, line, column, message, help);
                    d.sent_at = s.send.map(|p| (p.line as u64, p.column as u64));
                    out.push(d);
                }
            }
        }
    }
    super::sort(&mut out);
    out
}

impl Unmatched {
    /// Adds what another part of the dump left unmatched.
    fn merge(&mut self, o: Unmatched) {
        self.tree.merge(&o.tree);
        self.first.extend(o.first);
        self.first.sort_by_key(|(line, _)| *line);
        self.first.truncate(UNMATCHED_LINES_KEPT);
        for (mine, theirs) in self.shapes.iter_mut().zip(o.shapes) {
            let FirstOfShapes {
                mut by_shape,
                by_line,
            } = theirs;
            for (line, shape) in by_line {
                if let Some((_, key)) = by_shape.remove(&shape) {
                    mine.offer(&shape, line, &key);
                }
            }
        }
    }

    fn add(&mut self, line: u64, key: &[u8]) {
        if self.first.len() < UNMATCHED_LINES_KEPT {
            self.first.push((line, key.to_vec()));
        }
        for (i, with_last) in [false, true].into_iter().enumerate() {
            shape_of(key, with_last, &mut self.scratch);
            self.shapes[i].offer(&self.scratch, line, key);
        }
        self.tree.add(&crate::pattern::Observation {
            key,
            bytes: 0,
            ops: 0.0,
            node: None,
            tag: None,
            slot: 0,
            expires: false,
        });
    }

    /// One finding per inferred pattern, most keys first, at the line of the first of its keys
    /// kept (the dump's first unmatched keys, and the first key of each shape), whose key is
    /// the example shown. A pattern none of whose keys was kept is reported for the whole
    /// dump, with an example of its keys.
    fn findings(mut self, r: &ActiveRule, path: &str) -> Vec<Diagnostic> {
        // Classified as finished (folded), so the texts match the finished patterns'.
        self.tree.fold();
        let mut kept: Vec<(u64, Vec<u8>)> = std::mem::take(&mut self.first);
        for shapes in std::mem::take(&mut self.shapes) {
            kept.extend(shapes.by_shape.into_values());
        }
        kept.sort();
        kept.dedup();
        let mut first_of: std::collections::HashMap<String, (u64, Vec<u8>)> =
            std::collections::HashMap::new();
        for (line, key) in kept {
            if let Some(p) = self.tree.classify(&key) {
                first_of.entry(p).or_insert((line, key));
            }
        }
        let patterns = self.tree.finish();
        let mut out: Vec<Diagnostic> = Vec::new();
        for p in patterns.iter().take(MAX_PER_RULE) {
            let (line, example) = match first_of.remove(&p.text) {
                Some((line, key)) => (line, key),
                None => (0, p.stats.examples().next().unwrap_or_default().to_vec()),
            };
            out.push(diag(
                r,
                path,
                line,
                if line == 0 { 0 } else { 1 },
                format!(
                    "{} key(s) like {}, such as {}{}, match no pattern declared in the scheme",
                    p.stats.keys,
                    p.text,
                    crate::keys::quote(&example),
                    if line == 0 { "" } else { " on this line" },
                ),
                Some(format!("declare it under `keys:` (pattern: {})", p.text)),
            ));
        }
        if patterns.len() > MAX_PER_RULE
            && let Some(last) = out.last_mut()
        {
            last.more = (patterns.len() - MAX_PER_RULE) as u64;
        }
        out
    }
}

/// The first key (with its line) of each shape ([`shape_of`]) of unmatched keys: of the
/// shapes seen, the [`UNMATCHED_SHAPES_KEPT`] whose first key comes first. Kept so, the shapes
/// linters of parts of a dump keep and merge are the ones one linter of the whole dump keeps,
/// whichever parts each read.
#[derive(Default)]
struct FirstOfShapes {
    by_shape: std::collections::HashMap<Vec<u8>, (u64, Vec<u8>)>,
    /// The shapes by the line of their first key.
    by_line: std::collections::BTreeMap<u64, Vec<u8>>,
}

impl FirstOfShapes {
    /// Offers the key of `shape` on `line`.
    fn offer(&mut self, shape: &[u8], line: u64, key: &[u8]) {
        if let Some(kept) = self.by_shape.get_mut(shape) {
            if line < kept.0 {
                self.by_line.remove(&kept.0);
                *kept = (line, key.to_vec());
                self.by_line.insert(line, shape.to_vec());
            }
            return;
        }
        if self.by_shape.len() >= UNMATCHED_SHAPES_KEPT {
            match self.by_line.last_key_value() {
                Some((&last, _)) if line < last => {
                    if let Some(gone) = self.by_line.remove(&last) {
                        self.by_shape.remove(&gone);
                    }
                }
                _ => return,
            }
        }
        self.by_shape.insert(shape.to_vec(), (line, key.to_vec()));
        self.by_line.insert(line, shape.to_vec());
    }
}

/// The shape of an unmatched key, for keeping the first key of each: its first segment as
/// written when that is a short word, each other segment as a class (`#` digits, `h` hex of 8
/// or more, `a` letters, `x` mixed), the delimiters between them, and (`with_last`) its last
/// segment as written when that is a short word. Keys of one inferred pattern have one or a few shapes, so the first
/// key of a pattern that starts deep in a dump is usually kept.
fn shape_of(key: &[u8], with_last: bool, out: &mut Vec<u8>) {
    const DELIMS: &[u8] = b":/|.-_!$@=#{} ";
    out.clear();
    let last_start = key
        .iter()
        .rposition(|b| DELIMS.contains(b))
        .map_or(0, |i| i + 1);
    let mut start = 0usize;
    while start <= key.len() && out.len() <= 96 {
        let end = key[start..]
            .iter()
            .position(|b| DELIMS.contains(b))
            .map_or(key.len(), |i| start + i);
        let seg = &key[start..end];
        let word = seg.len() <= 24 && seg.iter().all(u8::is_ascii_alphabetic);
        if word && (start == 0 || (start == last_start && with_last)) {
            out.extend_from_slice(seg);
        } else if seg.is_empty() {
            // Two delimiters in a row.
        } else if seg.iter().all(u8::is_ascii_digit) {
            out.push(b'#');
        } else if seg.len() >= 8 && seg.iter().all(u8::is_ascii_hexdigit) {
            out.push(b'h');
        } else if seg.iter().all(u8::is_ascii_alphabetic) {
            out.push(b'a');
        } else {
            out.push(b'x');
        }
        match key.get(end) {
            Some(&d) => out.push(d),
            None => break,
        }
        start = end + 1;
    }
}

/// Checks a scheme against the active rules.
pub fn lint_scheme(
    rules: &RuleSet,
    scheme: &Scheme,
    path: &str,
    topo: &Topology,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for r in rules.active() {
        for f in check_of(&r.spec.check).scheme(r, scheme, topo) {
            out.push(diag(r, path, f.line, f.column, f.message, f.help));
        }
    }
    super::sort(&mut out);
    out
}

/// Lints keys of one dump, one at a time.
pub struct DumpLinter<'a> {
    rules: Vec<&'a ActiveRule>,
    /// One check per rule, in the same order.
    checks: Vec<Box<dyn Check>>,
    path: String,
    topo: &'a Topology,
    /// The scheme's patterns, and per declared key, which of `rules` its `allow:` silences.
    matcher: Option<(KeyMatcher, Vec<Vec<bool>>)>,
    totals: DumpTotals,
    scheme: Option<Scheme>,
    found: Vec<Diagnostic>,
    counts: Vec<usize>,
    /// Keys that match no declared pattern, grouped into inferred patterns: one finding per
    /// pattern rather than one per key (`unmatched-key`).
    unmatched: Option<Unmatched>,
    /// The rules that do anything key by key (a check that reads keys or their values, and
    /// the rule that lists keys no declared family matches), each with what a key must have
    /// for it to be called ([`Check::key_needs`]).
    per_key: Gates,
    /// The rules a key passes the gates of (bits of positions in `per_key`), reused.
    live: Vec<u64>,
}

/// The keys `unmatched-key` reports, as inferred patterns.
struct Unmatched {
    /// The rule's index among the active rules.
    rule: usize,
    tree: crate::pattern::PatternTree,
    /// The first keys seen with their lines (the line a pattern's finding points at).
    first: Vec<(u64, Vec<u8>)>,
    /// The first key (with its line) of each shape ([`shape_of`]), without and with the last
    /// segment, at most [`UNMATCHED_SHAPES_KEPT`] of each.
    shapes: [FirstOfShapes; 2],
    /// A shape being built, reused.
    scratch: Vec<u8>,
}

/// Unmatched keys whose lines are kept to place each pattern's finding.
const UNMATCHED_LINES_KEPT: usize = 4096;

/// Shapes of unmatched keys whose first key and line are kept, of each kind.
const UNMATCHED_SHAPES_KEPT: usize = 4096;

impl<'a> DumpLinter<'a> {
    /// This linter, reading its part of a dump alongside the others given `shared`.
    pub fn sharing(mut self, shared: &Shared) -> Self {
        for c in &mut self.checks {
            c.share(shared);
        }
        self
    }

    /// A linter for the dump at `path`, with the scheme (for `unmatched-key`) if any.
    pub fn new(
        rules: &'a RuleSet,
        scheme: Option<&Scheme>,
        topo: &'a Topology,
        path: &str,
    ) -> Self {
        let rules: Vec<&ActiveRule> = rules.active().collect();
        let matcher = scheme.map(|s| {
            let allowed = s
                .keys
                .iter()
                .map(|k| rules.iter().map(|r| allowed(&k.allow, r)).collect())
                .collect();
            (KeyMatcher::new(s), allowed)
        });
        let n = rules.len();
        let checks: Vec<Box<dyn Check>> = rules.iter().map(|r| check_of(&r.spec.check)).collect();
        let unmatched = rules
            .iter()
            .position(|r| matches!(r.spec.check, CheckKind::UnmatchedKey))
            .filter(|_| matcher.is_some())
            .map(|rule| Unmatched {
                rule,
                tree: crate::pattern::PatternTree::new(
                    crate::pattern::Delimiters::default(),
                    topo.nodes().len(),
                ),
                first: Vec::new(),
                shapes: Default::default(),
                scratch: Vec::new(),
            });
        let per_key: Vec<(usize, Gate)> = (0..checks.len())
            .filter_map(|i| {
                if unmatched.as_ref().is_some_and(|u| u.rule == i) {
                    return Some((i, Gate::Unmatched));
                }
                if checks[i].wants_values() {
                    return Some((i, Gate::Family));
                }
                Some((
                    i,
                    match checks[i].key_needs() {
                        KeyNeeds::Nothing => return None,
                        KeyNeeds::Brace => Gate::Brace,
                        KeyNeeds::OddBytes => Gate::OddBytes,
                        KeyNeeds::LongerThan(n) => Gate::LongerThan(n),
                        KeyNeeds::Unmatched => Gate::Unmatched,
                        KeyNeeds::Pattern(p) => Gate::pattern(p),
                    },
                ))
            })
            .collect();
        DumpLinter {
            per_key: Gates::new(per_key),
            live: Vec::new(),
            rules,
            checks,
            path: path.to_string(),
            topo,
            matcher,
            totals: DumpTotals::new(topo.nodes().len()),
            scheme: scheme.cloned(),
            found: Vec::new(),
            counts: vec![0; n],
            unmatched,
        }
    }

    fn push(&mut self, i: usize, line: u64, message: String, help: Option<String>) {
        self.counts[i] += 1;
        if self.counts[i] <= MAX_PER_RULE {
            let d = diag(self.rules[i], &self.path, line, 1, message, help);
            self.found.push(d);
        }
    }

    /// Checks one key (its 1-based line in the dump).
    pub fn key(&mut self, line: u64, key: &[u8]) {
        self.record(line, key, None, None);
    }

    /// Checks one key with its bytes and ops when the dump has them (a tsv dump).
    pub fn record(&mut self, line: u64, key: &[u8], bytes: Option<u64>, ops: Option<f64>) {
        let shape = crate::slot::TagShape::of(key);
        let family = self.matcher.as_ref().map(|(m, _)| m.family(key));
        self.record_placed(line, key, shape, None, family, bytes, ops);
    }

    /// Whether keys are placed by a hashing policy's rules rather than their `{…}` tags (a
    /// Redis Enterprise database): the bulk scan's slots do not apply.
    fn by_policy(&self) -> bool {
        self.topo.slot_map().is_some_and(|m| m.custom_hashing())
    }

    /// Checks one key whose tag shape, and slot when the caller hashed it already, are known,
    /// with its declared family (`None` without a scheme, `Some(None)` when it matches none).
    #[allow(clippy::too_many_arguments)]
    fn record_placed(
        &mut self,
        line: u64,
        key: &[u8],
        shape: crate::slot::TagShape,
        slot: Option<u16>,
        family: Option<Option<usize>>,
        bytes: Option<u64>,
        ops: Option<f64>,
    ) {
        self.totals.add(self.topo, key, shape, slot, bytes, ops);
        let odd = self.per_key.reads_bytes() && key_bytes::odd_bytes(key);
        let braced = shape != crate::slot::TagShape::NoBrace;
        let mut live = std::mem::take(&mut self.live);
        self.per_key.select(key, braced, odd, family, &mut live);
        for (w, &word) in live.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = self.per_key.rule(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
                self.check_key(i, line, key, shape, odd, family);
            }
        }
        self.live = live;
    }

    /// Runs rule `i`'s check on a key that passed its gate.
    fn check_key(
        &mut self,
        i: usize,
        line: u64,
        key: &[u8],
        shape: crate::slot::TagShape,
        odd: bool,
        family: Option<Option<usize>>,
    ) {
        let r = self.rules[i];
        let silenced = match (&self.matcher, family) {
            (Some((_, allowed)), Some(Some(f))) => allowed[f][i],
            _ => false,
        };
        if silenced {
            return;
        }
        let unmatched = family == Some(None);
        if let Some(u) = self.unmatched.as_mut().filter(|u| u.rule == i) {
            if unmatched {
                u.add(line, key);
            }
            return;
        }
        if let (Some((m, _)), Some(Some(f))) = (&self.matcher, family)
            && self.checks[i].wants_values()
        {
            self.checks[i].family_key(f, key, m);
        }
        if let Some((message, help)) = self.checks[i].key(&KeySeen {
            rule: r,
            key,
            unmatched,
            line,
            shape,
            odd,
        }) {
            self.push(i, line, message, help);
        }
    }

    /// Adds what another linter of the same rules saw of other parts of the dump (each line
    /// read by exactly one of them).
    pub fn merge(&mut self, other: DumpLinter<'_>) {
        self.totals.merge(&other.totals);
        for (c, o) in self.checks.iter().zip(&other.checks) {
            c.merge(o.as_ref());
        }
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c += o;
        }
        self.found.extend(other.found);
        match (&mut self.unmatched, other.unmatched) {
            (Some(u), Some(o)) => u.merge(o),
            (None, Some(o)) => self.unmatched = Some(o),
            _ => {}
        }
    }

    /// The findings, with per-rule overflow summarised and dump-wide checks added.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.totals.add_up_nodes(self.topo);
        // Merged linters kept their own first findings of each rule: the dump's first are
        // kept.
        self.found.sort_by_key(|d| d.line);
        let mut kept = vec![0usize; self.rules.len()];
        let codes: Vec<&str> = self.rules.iter().map(|r| r.spec.id.as_str()).collect();
        self.found
            .retain(|d| match codes.iter().position(|c| *c == d.code) {
                Some(i) => {
                    kept[i] += 1;
                    kept[i] <= MAX_PER_RULE
                }
                None => true,
            });
        for i in 0..self.rules.len() {
            let r = self.rules[i];
            if let Some((message, help)) = self.checks[i].dump(&DumpSeen {
                topo: self.topo,
                totals: &self.totals,
                scheme: self.scheme.as_ref(),
            }) {
                self.found.push(diag(r, &self.path, 0, 0, message, help));
            }
            if self.counts[i] > MAX_PER_RULE {
                // The last finding kept of this rule says how many more there are.
                let code = &r.spec.id;
                if let Some(last) = self.found.iter_mut().rev().find(|d| &d.code == code) {
                    last.more = (self.counts[i] - MAX_PER_RULE) as u64;
                }
            }
        }
        if let Some(u) = self.unmatched.take() {
            let r = self.rules[u.rule];
            let found = u.findings(r, &self.path);
            self.found.extend(found);
        }
        super::sort(&mut self.found);
        self.found
    }
}

/// A [`DumpLinter`] fed by one thread of the parallel reader. Its findings carry a chunk's
/// number and a line in the chunk until [`finish_sinks`] makes them lines of the dump.
pub struct LintSink<'a> {
    linter: DumpLinter<'a>,
    seq: u64,
    chunks: Vec<(u64, u64)>,
    /// The fused scan raw dumps are read with (reused between chunks).
    scanner: crate::slot::bulk::BulkScanner,
    /// The declared families of a piece's keys (with a scheme), reused.
    families: crate::scheme::matcher::FamilyScratch,
}

impl<'a> LintSink<'a> {
    /// A sink around a fresh linter.
    pub fn new(linter: DumpLinter<'a>) -> Self {
        LintSink {
            linter,
            seq: 0,
            chunks: Vec::new(),
            scanner: crate::slot::bulk::BulkScanner::new(),
            families: Default::default(),
        }
    }
}

/// Bits of a line in its chunk, in the line a sink hands its linter (the chunk's number above).
const CHUNK_SHIFT: u32 = 32;

impl ChunkSink for LintSink<'_> {
    fn record(&mut self, rec: &Record<'_>) {
        self.record_line(0, rec);
    }

    fn begin_chunk(&mut self, seq: u64) {
        self.seq = seq;
    }

    /// Raw lines take the fused scan, which finds the keys, their tags and slots of a whole
    /// piece at once.
    fn raw_lines(
        &mut self,
        c: &mut crate::keys::parallel::RawChunk<'_>,
    ) -> Option<crate::slot::bulk::LineCounts> {
        if self.linter.by_policy() {
            // The scan hashes `{…}` tags: each key goes through the policy instead.
            return None;
        }
        let mut scanner = std::mem::take(&mut self.scanner);
        let seq = self.seq << CHUNK_SHIFT;
        let mut families = std::mem::take(&mut self.families);
        let counts = c.scan_lines(&mut scanner, |piece, spans, lines| {
            // The piece's keys' families at once (the matcher walks several together).
            if let Some((m, _)) = &self.linter.matcher {
                m.families(
                    spans.len(),
                    |i| &piece[spans[i].start..spans[i].end],
                    &mut families,
                );
            }
            for (k, s) in spans.iter().enumerate() {
                let line = lines.line(piece, s);
                let key = &piece[s.start..s.end];
                let shape = match s.tagged() {
                    true => crate::slot::TagShape::Tagged {
                        open: s.hash_start - s.start - 1,
                        close: s.hash_end - s.start,
                    },
                    false => crate::slot::TagShape::of(key),
                };
                let family = self.linter.matcher.as_ref().map(|_| families.found[k]);
                self.linter
                    .record_placed(seq | line, key, shape, Some(s.slot), family, None, None);
            }
        });
        self.scanner = scanner;
        self.families = families;
        Some(counts)
    }

    fn record_line(&mut self, line: u64, rec: &Record<'_>) {
        self.linter.record(
            (self.seq << CHUNK_SHIFT) | line,
            rec.key,
            rec.bytes,
            rec.ops,
        );
    }

    fn end_chunk(&mut self, seq: u64, lines: u64) {
        self.chunks.push((seq, lines));
    }
}

/// The findings of the sinks that read one dump together, at the dump's own lines: the same
/// findings one linter reading it alone gives.
pub fn finish_sinks(sinks: Vec<LintSink<'_>>) -> Vec<Diagnostic> {
    let mut chunks: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    let mut linters = Vec::new();
    for s in sinks {
        chunks.extend(s.chunks);
        linters.push(s.linter);
    }
    let mut linters = linters.into_iter();
    let Some(mut first) = linters.next() else {
        return Vec::new();
    };
    for l in linters {
        first.merge(l);
    }
    let mut found = first.finish();
    // The first line of each chunk. A chunk no sink saw is one line too long to read, which
    // the reader reports itself.
    let last = chunks.keys().next_back().copied().unwrap_or(0);
    let mut start = Vec::with_capacity(last as usize + 1);
    let mut at = 0u64;
    for seq in 0..=last {
        start.push(at);
        at += chunks.get(&seq).copied().unwrap_or(1);
    }
    for d in &mut found {
        if d.line != 0 {
            let (seq, rel) = (d.line >> CHUNK_SHIFT, d.line & ((1 << CHUNK_SHIFT) - 1));
            d.line = start.get(seq as usize).copied().unwrap_or(at) + rel;
        }
    }
    super::sort(&mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::{DumpLinter, LintSink, finish_sinks};
    use crate::keys::parallel::{ChunkSink, RawChunk};
    use crate::lint::RuleSet;
    use crate::topology::{SlotMap, Topology};

    /// The fused scan of raw lines finds what one key at a time finds, at the same lines:
    /// across blank lines, `\r\n` ends, overlong lines and 64 KiB pieces.
    #[test]
    fn raw_lines_find_what_one_key_at_a_time_finds() {
        let rules = RuleSet::builtin().expect("the built-in rules load");
        let topo = Topology::Cluster(SlotMap::from_masters(3).expect("3 masters"));
        let max_line = 100;
        let specials: [&[u8]; 8] = [
            b"user:{}:1",
            b"a{b}{c}1",
            b"has space",
            b"ctl\x01x",
            b"rq:job:9",
            b"kombu\x06\x1612",
            b"user:{abc:1",
            b"{bull}:q:1",
        ];
        let mut data = Vec::new();
        for i in 0..12_000u32 {
            match i % 97 {
                13 => data.extend_from_slice(b"\n"),
                29 => data.extend_from_slice(b"user:crlf\r\n"),
                41 => data.extend_from_slice(&[b'x'; 150]),
                _ => {}
            }
            if i % 41 == 0 && i > 3000 {
                data.extend_from_slice(b"\n");
            }
            // Findings beyond the first pieces, so pieces' offsets count.
            if i > 4000 && i % 331 == 0 {
                data.extend_from_slice(specials[(i as usize / 331) % specials.len()]);
            } else {
                data.extend_from_slice(format!("user:{i}:profile").as_bytes());
            }
            data.push(b'\n');
        }
        let linter = || DumpLinter::new(&rules, None, &topo, "dump");
        let mut sink = LintSink::new(linter());
        sink.begin_chunk(0);
        let mut chunk = RawChunk {
            data: &data,
            max_line,
            long: Vec::new(),
        };
        let counts = sink.raw_lines(&mut chunk).expect("raw lines take the scan");
        sink.end_chunk(0, counts.lines);
        let fused = finish_sinks(vec![sink]);

        let mut one = linter();
        for (i, line) in data.split(|&b| b == b'\n').enumerate() {
            let key = line.strip_suffix(b"\r").unwrap_or(line);
            if !key.is_empty() && key.len() <= max_line {
                one.key(i as u64 + 1, key);
            }
        }
        let single = one.finish();
        assert!(single.iter().filter(|d| d.line > 4000).count() >= 8);
        assert_eq!(fused, single);
    }

    /// On a slot map a node's keys and bytes are added up from its slots after the last key
    /// (and merge); they equal the keys and bytes of the dump's keys the topology places on
    /// the node, one key at a time, and so do the ops added per key.
    #[test]
    fn node_totals_are_the_keys_the_topology_puts_on_each_node() {
        let rules = RuleSet::builtin().expect("the built-in rules load");
        // Uneven slot ranges (and a slot nobody owns), so a wrong slot-to-node sum shows.
        let nodes = "\
a0000000000000000000000000000000000000a0 127.0.0.1:7000@17000 master - 0 0 1 connected 121-5000
b0000000000000000000000000000000000000b0 127.0.0.1:7001@17001 master - 0 0 2 connected 5001-16383
c0000000000000000000000000000000000000c0 127.0.0.1:7002@17002 master - 0 0 3 connected 0-99
";
        let map = SlotMap::from_cluster_nodes(nodes, true).expect("the nodes parse");
        let topo = Topology::Cluster(map);
        let keys: Vec<(Vec<u8>, u64, f64)> = (0..30_000u64)
            .map(|i| {
                let key = match i % 5 {
                    0 => format!("{{hot}}:{i}"),
                    _ => format!("user:{i}:profile"),
                };
                (key.into_bytes(), i % 700 + 1, (i % 13) as f64 * 0.5)
            })
            .collect();
        let mut want = (vec![0u64; 3], vec![0u64; 3], vec![0f64; 3]);
        for (key, bytes, ops) in &keys {
            if let Some(n) = topo.node_of(key) {
                want.0[n] += 1;
                want.1[n] += bytes;
                want.2[n] += ops;
            }
        }
        assert!(
            want.0.iter().sum::<u64>() < keys.len() as u64,
            "a key on no node"
        );
        let mut readers: Vec<DumpLinter<'_>> = (0..2)
            .map(|_| DumpLinter::new(&rules, None, &topo, "dump"))
            .collect();
        for (i, (key, bytes, ops)) in keys.iter().enumerate() {
            readers[i % 2].record(i as u64 + 1, key, Some(*bytes), Some(*ops));
        }
        let mut one = readers.remove(0);
        one.merge(readers.remove(0));
        one.totals.add_up_nodes(&topo);
        assert_eq!(one.totals.node_keys, want.0);
        assert_eq!(one.totals.node_bytes, want.1);
        for (got, want) in one.totals.node_ops.iter().zip(&want.2) {
            assert!(
                (got - want).abs() < 1e-6,
                "{got} ops where {want} were added"
            );
        }
    }
}

#[cfg(test)]
mod shared_tests {
    use super::{DumpLinter, Shared};
    use crate::lint::RuleSet;
    use crate::scheme::Scheme;
    use crate::topology::{SlotMap, Topology};

    /// Readers of parts of a dump that share their `cardinality-drift` counts find what one
    /// reader of the whole dump finds (the same sample: the keys counted show in the finding),
    /// and so do readers that do not share, however the keys fall to them.
    #[test]
    fn shared_drift_counts_leave_the_findings_as_one_reader_finds_them() {
        let rules = RuleSet::builtin().expect("the built-in rules load");
        let topo = Topology::Cluster(SlotMap::from_masters(3).expect("3 masters"));
        let scheme = Scheme::parse(
            "version: 1\nvars:\n  id: { kind: int, cardinality: 10 }\n  day: { kind: date, cardinality: 5000 }\nkeys:\n  profile: { pattern: \"user:<id>:profile\" }\n  visit: { pattern: \"visit:<day>:<id>\" }\n",
        )
        .expect("the scheme parses");
        // Past 200,000 keys of a declared key, its sample drops levels: 1,500,000 keys (a
        // level dropped halfway through) and 500,000.
        let keys: Vec<Vec<u8>> = (0..2_000_000u64)
            .map(|i| match i % 4 < 3 {
                true => format!("user:{i}:profile").into_bytes(),
                false => format!("visit:2026-0{}-1{}:{}", i % 9 + 1, i % 7, i % 1000).into_bytes(),
            })
            .collect();
        let mut one = DumpLinter::new(&rules, Some(&scheme), &topo, "dump");
        for (i, k) in keys.iter().enumerate() {
            one.key(i as u64 + 1, k);
        }
        let single = one.finish();
        let drift: Vec<_> = single
            .iter()
            .filter(|d| d.name == "cardinality-drift")
            .map(|d| d.message.clone())
            .collect();
        assert!(
            drift.iter().any(|m| m.contains("dump keys")),
            "a drift finding names its sample: {drift:?}"
        );
        // Three readers, the keys dealt in runs of uneven length.
        for shared in [true, false] {
            let with = Shared::default();
            let mut readers: Vec<DumpLinter<'_>> = (0..3)
                .map(|_| {
                    let l = DumpLinter::new(&rules, Some(&scheme), &topo, "dump");
                    if shared { l.sharing(&with) } else { l }
                })
                .collect();
            let mut at = 0;
            let mut turn = 0;
            while at < keys.len() {
                let run = 500 + (turn * 7919) % 40_000;
                for (i, k) in keys.iter().enumerate().skip(at).take(run) {
                    readers[turn % 3].key(i as u64 + 1, k);
                }
                at += run;
                turn += 1;
            }
            let mut all = readers.into_iter();
            let mut first = all.next().expect("three readers");
            for r in all {
                first.merge(r);
            }
            assert_eq!(first.finish(), single, "shared: {shared}");
        }
    }
}
