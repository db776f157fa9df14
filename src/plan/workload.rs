//! The keys a plan is scored on: a key sample matched against the scheme's patterns (each key
//! with its variable values), or, without a sample, keys generated from the declared
//! cardinalities. Re-keying a family with a rewritten pattern gives the per-node distribution
//! after the rewrite and how many keys would change node.

use crate::scheme::{Scheme, Seg, Template};
use crate::simulate::batch::value_of;
use crate::topology::Topology;

/// Keys generated per family when there is no sample.
const SYNTHETIC_PER_FAMILY: u64 = 4000;
/// Keys a family is assumed to have when a variable has no declared cardinality.
const UNKNOWN_CARDINALITY: u64 = 1_000_000;
/// Sample keys kept per family: beyond this, a hash-chosen subset (the same whatever the key
/// order) stands for all of them, so memory stays bounded on any dump.
const KEPT_PER_FAMILY: usize = 20_000;

/// One key of a family: its variable values (in the family's variable order), its weight and
/// (for sample keys) the hash that decided it is kept.
#[derive(Debug, Clone)]
struct FamilyKey {
    /// The values of the family's variables (for a sample key, read by [`Workload::settle`]).
    values: Values,
    weight: f64,
    hash: u64,
    /// Its memory in bytes, where the sample says (0 where it does not).
    bytes: u64,
}

/// A key's values: most families have one or two variables and most values are short, so
/// they are held inline (no allocation to make, none to free for each of the sample's keys).
type Values = smallvec::SmallVec<[compact_str::CompactString; 2]>;

/// A sample key kept while the sample is read: its hash and where its bytes are in its
/// family's arena (24 bytes: most are dropped again as the threshold halves, and every drop
/// moves the rest).
#[derive(Debug, Clone)]
struct Kept {
    hash: u64,
    raw: std::ops::Range<usize>,
    /// Its memory in bytes, where the sample says (0 where it does not).
    bytes: u64,
}

/// A family (declared key) and its keys.
#[derive(Debug, Clone)]
struct Family {
    vars: Vec<String>,
    /// Keys made from declared cardinalities, or the sample keys once settled.
    keys: Vec<FamilyKey>,
    /// Sample keys kept so far, until [`Family::settle`] reads their values.
    kept: Vec<Kept>,
    /// The bytes of the kept sample keys, one after another (a kept key is not an allocation
    /// of its own: most are dropped again as the threshold halves); compacted as keys go.
    arena: Vec<u8>,
    /// Sample keys seen (kept or not).
    seen: u64,
    /// Sample keys are kept when their hash is at most this.
    threshold: u64,
    /// Whether the sample gave its keys' sizes (a tsv's bytes column, a snapshot).
    sized: bool,
}

impl Family {
    fn new(vars: Vec<String>, keys: Vec<FamilyKey>) -> Family {
        Family {
            vars,
            keys,
            kept: Vec::new(),
            arena: Vec::new(),
            seen: 0,
            threshold: u64::MAX,
            sized: false,
        }
    }

    /// What each kept key stands for: all the sample keys seen over those kept.
    fn scale(&self) -> f64 {
        if self.seen > self.keys.len() as u64 && !self.keys.is_empty() {
            self.seen as f64 / self.keys.len() as f64
        } else {
            1.0
        }
    }

    /// Keeps the sample key `k` if its hash is at most the threshold; while more than twice
    /// the bound are kept, halves the threshold (a power of two less one) and drops the keys
    /// above it. The threshold only drops when the keys under it, of the whole sample, are
    /// too many, so it ends as the largest level that keeps at most twice the bound: what is
    /// kept does not depend on the key order.
    /// Adds what another reader of the same sample kept: the keys are those one reader of
    /// the whole sample keeps (the threshold of each is at least the final one).
    fn merge(&mut self, o: Family) {
        self.seen += o.seen;
        self.sized |= o.sized;
        self.threshold = self.threshold.min(o.threshold);
        let threshold = self.threshold;
        self.keys.retain(|k| k.hash <= threshold);
        self.kept.retain(|k| k.hash <= threshold);
        let Family {
            keys, kept, arena, ..
        } = o;
        self.keys
            .extend(keys.into_iter().filter(|k| k.hash <= threshold));
        // The other arena goes after this one whole (one copy, or none when this one is
        // empty), its kept keys' ranges moved by this one's length: copying each kept key on
        // its own was a call per key.
        let base = self.arena.len();
        if base == 0 {
            self.arena = arena;
        } else {
            self.arena.extend_from_slice(&arena);
        }
        for k in kept.into_iter().filter(|k| k.hash <= threshold) {
            self.kept.push(Kept {
                hash: k.hash,
                raw: k.raw.start + base..k.raw.end + base,
                bytes: k.bytes,
            });
        }
        self.thin();
    }

    /// Keeps a sample key (its bytes, hash and size if known) if its hash is at most the
    /// threshold.
    fn keep(&mut self, key: &[u8], hash: u64, size: Option<u64>) {
        self.seen += 1;
        self.sized |= size.is_some();
        if hash > self.threshold {
            return;
        }
        let raw = self.store(key);
        self.kept.push(Kept {
            hash,
            raw,
            bytes: size.unwrap_or(0),
        });
        self.thin();
    }

    /// Reads the values of the kept sample keys of family `fi` and puts its keys in one order
    /// (by hash, then values).
    fn settle(&mut self, fi: usize, scheme: &Scheme, matcher: &crate::scheme::matcher::KeyMatcher) {
        // Per variable occurrence in the pattern, its variable's place in `vars`.
        let place: Vec<Option<usize>> = scheme.keys[fi]
            .template
            .vars()
            .map(|name| self.vars.iter().position(|v| v == name))
            .collect();
        let Family {
            keys,
            kept,
            arena,
            vars,
            ..
        } = self;
        keys.reserve(kept.len());
        for k in std::mem::take(kept) {
            // An empty key has no values to read.
            let mut values = Values::new();
            if !k.raw.is_empty() {
                values = Values::from_elem(compact_str::CompactString::default(), vars.len());
                let mut at = 0;
                matcher.for_each_value_of_match(fi, &arena[k.raw], |val| {
                    // A repeated variable takes its first occurrence's value.
                    if let Some(Some(i)) = place.get(at)
                        && values[*i].is_empty()
                    {
                        values[*i] = compact_str::CompactString::from_utf8_lossy(val);
                    }
                    at += 1;
                });
            }
            keys.push(FamilyKey {
                values,
                weight: 1.0,
                hash: k.hash,
                bytes: k.bytes,
            });
        }
        *arena = Vec::new();
        keys.sort_by(|a, b| a.hash.cmp(&b.hash).then_with(|| a.values.cmp(&b.values)));
    }

    /// Puts a key's bytes in the arena.
    fn store(&mut self, key: &[u8]) -> std::ops::Range<usize> {
        let start = self.arena.len();
        self.arena.extend_from_slice(key);
        start..self.arena.len()
    }

    /// While more than twice the bound are kept, halves the threshold and drops the keys
    /// above it; then moves the kept keys' bytes together when most of the arena is dropped
    /// keys'.
    fn thin(&mut self) {
        if self.keys.len() + self.kept.len() <= 2 * KEPT_PER_FAMILY {
            return;
        }
        while self.keys.len() + self.kept.len() > 2 * KEPT_PER_FAMILY {
            self.threshold >>= 1;
            let threshold = self.threshold;
            self.keys.retain(|k| k.hash <= threshold);
            self.kept.retain(|k| k.hash <= threshold);
        }
        let live: usize = self.kept.iter().map(|k| k.raw.len()).sum();
        if self.arena.len() > 2 * live + (1 << 16) {
            // In place: the kept keys' bytes lie in the arena in their order (each `store`
            // and merge appends), so each moves down or stays, over no byte still to move. The
            // arena keeps its allocation for the keys to come.
            let mut to = 0;
            for k in &mut self.kept {
                debug_assert!(k.raw.start >= to, "invariant: kept keys in arena order");
                let len = k.raw.len();
                self.arena.copy_within(k.raw.clone(), to);
                k.raw = to..to + len;
                to += len;
            }
            self.arena.truncate(to);
        }
    }
}

/// The keys plans are scored on.
#[derive(Debug, Clone)]
pub struct Workload {
    families: Vec<Family>,
    /// Weight per node of keys that match no family.
    other: Vec<f64>,
    /// `sample` or `declared cardinalities`.
    pub source: &'static str,
    /// Sample keys matching no declared pattern.
    pub unmatched: u64,
    /// Each family's weight per node as the scheme writes its keys, computed once: a plan
    /// scores many rewrites of a few families, and the others' keys need not be hashed again.
    base: std::sync::OnceLock<Base>,
}

/// What [`Workload::loads`] computes once: each family's weight per node, and the running
/// per-node sums of `other` and the families in order, every `stride` families (a rewrite of
/// family `f` starts from the sum before it, added up in the same order, so its figures are
/// the very same floating-point numbers as a sum from the first family).
#[derive(Debug, Clone, Default)]
struct Base {
    per_family: Vec<Vec<f64>>,
    stride: usize,
    sums: Vec<Vec<f64>>,
}

/// Running sums [`Base`] keeps, at most, in node weights (32 MiB).
const BASE_SUM_CELLS: usize = 1 << 22;

/// Synthetic keys generated in all, at most: a scheme of many families gets fewer per family
/// (never fewer than [`SYNTHETIC_MIN_PER_FAMILY`]), so memory and time stay bounded.
const SYNTHETIC_BUDGET: u64 = 1_000_000;
/// Pattern pieces (literals and variables) rendered per family's synthetic keys, at most: a
/// pattern of 300 placeholders gets fewer keys than one of 3.
const SYNTHETIC_PIECES: u64 = 200_000;
/// The fewest synthetic keys a family gets.
const SYNTHETIC_MIN_PER_FAMILY: u64 = 256;

/// A pattern rewrite to score: family index, its new template, and how to fill `<bucket>`-like
/// variables the original does not have (their cardinality).
#[derive(Debug, Clone)]
pub struct Rekey {
    /// Index into the scheme's keys.
    pub family: usize,
    /// The rewritten pattern.
    pub template: Template,
    /// New variables and their number of values (derived from a hash of the key's values).
    pub new_vars: Vec<(String, u64)>,
}

fn distinct_vars(t: &Template) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for x in t.vars() {
        if !v.iter().any(|y| y == x) {
            v.push(x.to_string());
        }
    }
    v
}

/// Where each piece of a rendered key comes from: a template with its variables resolved
/// once, so that rendering a key is a run of copies.
enum Piece<'a> {
    Lit(&'a [u8]),
    /// The key's value of the family's variable at this index.
    Value(usize),
    /// The value of the rewrite's new variable at this index.
    Extra(usize),
}

/// `t`'s pieces for keys with values of `vars` and of the new variables `extra` (a variable
/// in neither renders as nothing).
fn pieces<'a>(t: &'a Template, vars: &[String], extra: &[&str]) -> Vec<Piece<'a>> {
    t.segs
        .iter()
        .filter_map(|s| match s {
            Seg::Lit(l) => Some(Piece::Lit(l.as_bytes())),
            Seg::Var(v) => match vars.iter().position(|x| x == v) {
                Some(i) => Some(Piece::Value(i)),
                None => extra.iter().position(|x| x == v).map(Piece::Extra),
            },
        })
        .collect()
}

/// Renders a key into `out` (cleared first).
fn render_into(
    out: &mut Vec<u8>,
    pieces: &[Piece<'_>],
    values: &[compact_str::CompactString],
    extra: &[String],
) {
    out.clear();
    for p in pieces {
        match *p {
            Piece::Lit(l) => out.extend_from_slice(l),
            Piece::Value(i) => out.extend_from_slice(values[i].as_bytes()),
            Piece::Extra(j) => out.extend_from_slice(extra[j].as_bytes()),
        }
    }
}

/// What a sample shows of some variables' values in one family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedValues {
    /// Distinct combinations of the variables' values.
    pub distinct: u64,
    /// Sample keys of the family.
    pub keys: u64,
    /// The heaviest combination (one value per variable, in the order asked).
    pub top: Vec<String>,
    /// Sample keys holding it.
    pub top_keys: u64,
    /// Where the sample gives sizes: the combination holding the most bytes, its bytes and
    /// the family's.
    pub top_bytes: Option<(Vec<String>, u64, u64)>,
}

impl Workload {
    /// For a sample: what the values of `vars` (a subset of family `fi`'s variables) look like
    /// among the family's sample keys: how many distinct combinations, over how many keys, and
    /// the heaviest one. `None` for generated keys or a family with no sample key.
    pub fn observed_values(&self, fi: usize, vars: &[&str]) -> Option<ObservedValues> {
        if self.source != "sample" {
            return None;
        }
        let f = self.families.get(fi)?;
        if f.keys.is_empty() {
            return None;
        }
        let at: Vec<usize> = vars
            .iter()
            .filter_map(|v| f.vars.iter().position(|x| x == v))
            .collect();
        // Per combination: its keys and their bytes.
        let mut combos: std::collections::HashMap<Vec<&str>, (u64, u64)> =
            std::collections::HashMap::new();
        for k in &f.keys {
            let c = combos
                .entry(
                    at.iter()
                        .map(|&i| k.values.get(i).map_or("", |v| v.as_str()))
                        .collect(),
                )
                .or_default();
            c.0 += 1;
            c.1 = c.1.saturating_add(k.bytes);
        }
        // The heaviest combination; ties go to the smallest, so the answer is deterministic.
        let heaviest = |by: fn(&(u64, u64)) -> u64| {
            combos
                .iter()
                .max_by(|a, b| by(a.1).cmp(&by(b.1)).then_with(|| b.0.cmp(a.0)))
                .map(|(v, n)| (v.iter().map(|s| s.to_string()).collect::<Vec<_>>(), by(n)))
                .unwrap_or_default()
        };
        let (top, top_keys) = heaviest(|c| c.0);
        let total: u64 = combos.values().map(|c| c.1).fold(0, u64::saturating_add);
        let top_bytes = (f.sized && total > 0).then(|| {
            let (v, b) = heaviest(|c| c.1);
            (v, b, total)
        });
        Some(ObservedValues {
            distinct: combos.len() as u64,
            keys: f.keys.len() as u64,
            top,
            top_keys,
            top_bytes,
        })
    }

    /// Keys generated from the declared cardinalities: per family, up to a few thousand keys
    /// with values drawn from each variable's declared range, weighted so a family counts as
    /// many keys as the product of its variables' cardinalities.
    pub fn synthetic(scheme: &Scheme, nodes: usize) -> Workload {
        let per_family = (SYNTHETIC_BUDGET / scheme.keys.len().max(1) as u64)
            .clamp(SYNTHETIC_MIN_PER_FAMILY, SYNTHETIC_PER_FAMILY);
        let families = scheme
            .keys
            .iter()
            .enumerate()
            .map(|(fi, k)| {
                let vars = distinct_vars(&k.template);
                let total: u64 = vars.iter().fold(1u64, |acc, v| {
                    acc.saturating_mul(scheme.cardinality(v).unwrap_or(UNKNOWN_CARDINALITY).max(1))
                });
                // A pattern of many pieces costs as much per key: fewer keys for it.
                let pieces = k.template.segs.len().max(1) as u64;
                let m = total.clamp(1, per_family.min((SYNTHETIC_PIECES / pieces).max(32)));
                let weight = total as f64 / m as f64;
                let keys = (0..m)
                    .map(|j| FamilyKey {
                        values: vars
                            .iter()
                            .map(|v| {
                                let var = scheme.vars.get(v);
                                let c = var
                                    .and_then(|x| x.cardinality)
                                    .unwrap_or(UNKNOWN_CARDINALITY)
                                    .max(1);
                                let h = stable_hash(format!("{fi}:{v}:{j}").as_bytes()) % c;
                                let (kind, values) = var
                                    .map(|x| (x.kind, x.values.as_slice()))
                                    .unwrap_or((crate::scheme::VarKind::Any, &[]));
                                compact_str::CompactString::from(value_of(kind, values, h))
                            })
                            .collect(),
                        weight,
                        hash: 0,
                        bytes: 0,
                    })
                    .collect();
                Family::new(vars, keys)
            })
            .collect();
        Workload {
            families,
            other: vec![0.0; nodes],
            source: "declared cardinalities",
            unmatched: 0,
            base: std::sync::OnceLock::new(),
        }
    }

    /// An empty sample-based workload; feed it keys with [`Workload::add_sample_key`].
    pub fn sample(scheme: &Scheme, nodes: usize) -> Workload {
        Workload {
            families: scheme
                .keys
                .iter()
                .map(|k| Family::new(distinct_vars(&k.template), Vec::new()))
                .collect(),
            other: vec![0.0; nodes],
            source: "sample",
            unmatched: 0,
            base: std::sync::OnceLock::new(),
        }
    }

    /// Adds another reader's part of the same sample.
    fn merge(&mut self, o: Workload) {
        for (f, of) in self.families.iter_mut().zip(o.families) {
            f.merge(of);
        }
        for (x, y) in self.other.iter_mut().zip(&o.other) {
            *x += y;
        }
        self.unmatched += o.unmatched;
        self.base = std::sync::OnceLock::new();
    }

    /// Reads the values of the kept sample keys (only those: a key the sample drops is never
    /// taken apart), then puts each family's keys in one order (by hash), whatever order they
    /// were read in. Call it once the sample is read.
    pub fn settle(&mut self, scheme: &Scheme, matcher: &crate::scheme::matcher::KeyMatcher) {
        // Families settle apart, on every core.
        use rayon::prelude::*;
        self.families
            .par_iter_mut()
            .enumerate()
            .for_each(|(fi, f)| f.settle(fi, scheme, matcher));
    }

    /// Whether the workload has any weight.
    pub fn is_empty(&self) -> bool {
        self.families
            .iter()
            .all(|f| f.keys.is_empty() && f.kept.is_empty())
            && self.other.iter().all(|&w| w == 0.0)
    }

    /// Adds one sample key: `matched` is the family it matches (with the captured values of
    /// its variables in pattern order, repeats included), or `None`.
    pub fn add_sample_key(
        &mut self,
        topo: &Topology,
        key: &[u8],
        matcher: &crate::scheme::matcher::KeyMatcher,
    ) {
        self.add_sample_key_of(topo, key, matcher.family(key), None);
    }

    /// [`Workload::add_sample_key`] of a key whose family the caller found.
    /// `size` is its memory in bytes where the sample says.
    pub fn add_sample_key_of(
        &mut self,
        topo: &Topology,
        key: &[u8],
        family: Option<usize>,
        size: Option<u64>,
    ) {
        self.base = std::sync::OnceLock::new();
        // A key the family's sample drops at once is neither kept nor later taken apart (a
        // capture per variable): `keep` counts it and stops at its hash.
        match family {
            Some(fi) => self.families[fi].keep(key, stable_hash(key), size),
            None => {
                self.unmatched += 1;
                if let Some(n) = topo.node_of(key) {
                    self.other[n] += 1.0;
                }
            }
        }
    }

    /// Per-node weight with the given rewrites applied (over everything, and over the
    /// `focus` families alone), and the weight of keys that change node and that are renamed.
    pub fn loads(
        &self,
        scheme: &Scheme,
        topo: &Topology,
        rekeys: &[Rekey],
        focus: &[usize],
    ) -> Loads {
        let nodes = self.other.len();
        let mut focus_per_node = vec![0.0; nodes];
        let mut moved = 0.0;
        let mut renamed = 0.0;
        let mut key = Vec::new();
        let base = self.base.get_or_init(|| {
            let per_family: Vec<Vec<f64>> = self
                .families
                .iter()
                .enumerate()
                .map(|(fi, f)| {
                    let mut per = vec![0.0; nodes];
                    let scale = f.scale();
                    let orig = pieces(&scheme.keys[fi].template, &f.vars, &[]);
                    for k in &f.keys {
                        render_into(&mut key, &orig, &k.values, &[]);
                        if let Some(n) = topo.node_of(&key) {
                            per[n] += k.weight * scale;
                        }
                    }
                    per
                })
                .collect();
            let stride = (per_family.len() * nodes.max(1))
                .div_ceil(BASE_SUM_CELLS)
                .max(1);
            let mut sums = Vec::with_capacity(per_family.len() / stride + 1);
            let mut sum = self.other.clone();
            for (fi, per) in per_family.iter().enumerate() {
                if fi.is_multiple_of(stride) {
                    sums.push(sum.clone());
                }
                for (p, w) in sum.iter_mut().zip(per) {
                    *p += w;
                }
            }
            if per_family.len().is_multiple_of(stride) {
                // The sum of them all, where a score with no rewrite starts.
                sums.push(sum);
            }
            Base {
                per_family,
                stride,
                sums,
            }
        });
        let (mut before, mut after, mut joined) = (Vec::new(), Vec::new(), Vec::new());
        // The rewrite of each family (the first given for it) and the focus families, in
        // family order, walked alongside the families (a lookup per family in lists as long
        // as a batch's keys made a plan of N batches over N keys cost N³).
        let mut rewrites: Vec<(usize, usize)> = rekeys
            .iter()
            .enumerate()
            .map(|(i, r)| (r.family, i))
            .collect();
        rewrites.sort_unstable();
        rewrites.dedup_by_key(|&mut (f, _)| f);
        let mut focused: Vec<usize> = focus.to_vec();
        focused.sort_unstable();
        focused.dedup();
        // The families before the first rewritten one add up as they always do: start from
        // the running sum kept nearest before it.
        let first = rewrites
            .first()
            .map_or(self.families.len(), |&(f, _)| f)
            .min(self.families.len());
        let from = match base.sums.get(first / base.stride) {
            Some(_) => first / base.stride * base.stride,
            None => 0,
        };
        let mut per_node = base
            .sums
            .get(from / base.stride)
            .cloned()
            .unwrap_or_else(|| self.other.clone());
        for &fi in focused.iter().take_while(|&&fi| fi < from) {
            for (p, w) in focus_per_node.iter_mut().zip(&base.per_family[fi]) {
                *p += w;
            }
        }
        let (mut next_rewrite, mut next_focus) = (
            rewrites.iter().peekable(),
            focused.iter().skip_while(|&&fi| fi < from).peekable(),
        );
        for (fi, f) in self.families.iter().enumerate().skip(from) {
            let in_focus = next_focus.next_if(|&&x| x == fi).is_some();
            let rk = next_rewrite
                .next_if(|&&(x, _)| x == fi)
                .map(|&(_, i)| &rekeys[i]);
            // Not rewritten: as computed once (the node sums added in family order, as ever).
            let Some(r) = rk else {
                for (p, w) in per_node.iter_mut().zip(&base.per_family[fi]) {
                    *p += w;
                }
                if in_focus {
                    for (p, w) in focus_per_node.iter_mut().zip(&base.per_family[fi]) {
                        *p += w;
                    }
                }
                continue;
            };
            let orig = pieces(&scheme.keys[fi].template, &f.vars, &[]);
            let names: Vec<&str> = r.new_vars.iter().map(|(n, _)| n.as_str()).collect();
            let rewritten = pieces(&r.template, &f.vars, &names);
            let mut extra = vec![String::new(); r.new_vars.len()];
            let scale = f.scale();
            for k in &f.keys {
                let weight = k.weight * scale;
                render_into(&mut before, &orig, &k.values, &[]);
                let node_before = topo.node_of(&before);
                // A new variable's value: a hash of the key's values (joined by 0x1f), in
                // its number of values.
                if !extra.is_empty() {
                    joined.clear();
                    for (i, v) in k.values.iter().enumerate() {
                        if i > 0 {
                            joined.push(0x1f);
                        }
                        joined.extend_from_slice(v.as_bytes());
                    }
                    let h = stable_hash(&joined);
                    for (x, (_, c)) in extra.iter_mut().zip(&r.new_vars) {
                        use std::fmt::Write;
                        x.clear();
                        let _ = write!(x, "{}", h % (*c).max(1));
                    }
                }
                render_into(&mut after, &rewritten, &k.values, &extra);
                if after != before {
                    renamed += weight;
                }
                let node = topo.node_of(&after);
                if node != node_before {
                    moved += weight;
                }
                if let Some(n) = node {
                    per_node[n] += weight;
                    if in_focus {
                        focus_per_node[n] += weight;
                    }
                }
            }
        }
        Loads {
            per_node,
            focus_per_node,
            moved,
            renamed,
        }
    }
}

/// Per-node weights after a rewrite.
#[derive(Debug, Clone, PartialEq)]
pub struct Loads {
    /// Weight per node.
    pub per_node: Vec<f64>,
    /// Weight per node of the focus families.
    pub focus_per_node: Vec<f64>,
    /// Weight of keys that change node.
    pub moved: f64,
    /// Weight of keys whose name changes.
    pub renamed: f64,
}

/// The busiest node's weight over the mean (1 = even); `None` when empty.
pub fn max_over_mean(per_node: &[f64]) -> Option<f64> {
    let n = per_node.len();
    let total: f64 = per_node.iter().sum();
    if n == 0 || total <= 0.0 {
        return None;
    }
    let max = per_node.iter().cloned().fold(0.0f64, f64::max);
    Some(max / (total / n as f64))
}

impl Loads {
    /// Skew over the whole workload.
    pub fn max_over_mean(&self) -> Option<f64> {
        max_over_mean(&self.per_node)
    }

    /// Skew of the focus families.
    pub fn focus_max_over_mean(&self) -> Option<f64> {
        max_over_mean(&self.focus_per_node)
    }
}

/// The hash behind synthetic keys' values: fixed, so a plan's figures do not move when the
/// sketches' hash changes (FNV-1a over 8-byte words, then a murmur3 finaliser).
pub(super) fn stable_hash(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (data.len() as u64);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("invariant: 8-byte chunk"));
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    for &b in chunks.remainder() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Sample keys kept in memory to score observed batches.
pub const MAX_SAMPLE_KEYS: usize = 2_000_000;

/// A key sample as `plan` reads it: the scheme's workload re-keyed from it, and the first
/// [`MAX_SAMPLE_KEYS`] keys kept for observed batches.
pub struct PlanSample<'a> {
    scheme: Option<(&'a Scheme, crate::scheme::matcher::KeyMatcher)>,
    topology: &'a Topology,
    /// The scheme's workload (from the sample's keys; once done, from the declared
    /// cardinalities when no key matched).
    pub workload: Option<Workload>,
    /// Keys read.
    pub read: u64,
    /// Keys kept for observed batches (none unless asked for), in the sample's order once
    /// done.
    pub keys: Vec<Vec<u8>>,
    /// While reading: the kept keys with their lines (a chunk's number above
    /// [`CHUNK_SHIFT`] bits when read in parallel).
    lined: Vec<(u64, Vec<u8>)>,
    /// The chunk being read (parallel reading).
    seq: u64,
    /// Whether keys are kept at all.
    keep: bool,
    /// The fused scan raw dumps are read with, and a piece's keys' families (reused).
    scanner: crate::slot::bulk::BulkScanner,
    families: crate::scheme::matcher::FamilyScratch,
    /// More keys were read than kept.
    pub truncated: bool,
}

impl<'a> PlanSample<'a> {
    /// An empty sample for `scheme` on `topology`; `keep` keeps keys for observed batches.
    pub fn new(scheme: Option<&'a Scheme>, topology: &'a Topology, keep: bool) -> Self {
        let nodes = topology.nodes().len();
        PlanSample {
            scheme: scheme.map(|s| (s, crate::scheme::matcher::KeyMatcher::new(s))),
            topology,
            workload: scheme.map(|s| Workload::sample(s, nodes)),
            read: 0,
            keys: Vec::new(),
            lined: Vec::new(),
            seq: 0,
            keep,
            truncated: false,
            scanner: crate::slot::bulk::BulkScanner::new(),
            families: Default::default(),
        }
    }

    /// Adds the key at `line` (lines order the keys as the sample does).
    pub fn add(&mut self, line: u64, key: &[u8]) {
        self.add_sized(line, key, None);
    }

    /// [`PlanSample::add`] of a key whose memory in bytes the sample gives.
    pub fn add_sized(&mut self, line: u64, key: &[u8], size: Option<u64>) {
        let family = self.scheme.as_ref().map(|(_, m)| m.family(key));
        self.add_of(line, key, family, size);
    }

    /// [`PlanSample::add`] of a key whose family the caller found (`None` without a scheme).
    fn add_of(&mut self, line: u64, key: &[u8], family: Option<Option<usize>>, size: Option<u64>) {
        self.read += 1;
        if let (Some(family), Some(w)) = (family, self.workload.as_mut()) {
            w.add_sample_key_of(self.topology, key, family, size);
        }
        if self.keep {
            match self.lined.len() < MAX_SAMPLE_KEYS {
                true => self.lined.push((line, key.to_vec())),
                false => self.truncated = true,
            }
        }
    }

    /// Orders this part's keys after those of the `dump` dumps read before it.
    pub fn order_after(&mut self, dump: u64) {
        for (line, _) in &mut self.lined {
            *line |= dump << 56;
        }
    }

    /// Adds another reader's part of the same sample (read in parallel).
    pub fn merge(&mut self, o: PlanSample<'_>) {
        self.read += o.read;
        if let (Some(w), Some(ow)) = (self.workload.as_mut(), o.workload) {
            w.merge(ow);
        }
        self.truncated |= o.truncated;
        self.lined.extend(o.lined);
    }

    /// Done reading: the kept keys in the sample's order (the first [`MAX_SAMPLE_KEYS`]), and
    /// a workload no sample key matched generated from the scheme's declared cardinalities.
    pub fn finish(mut self) -> Self {
        self.lined.sort_by_key(|(line, _)| *line);
        if self.lined.len() > MAX_SAMPLE_KEYS {
            self.lined.truncate(MAX_SAMPLE_KEYS);
            self.truncated = true;
        }
        self.keys = std::mem::take(&mut self.lined)
            .into_iter()
            .map(|(_, k)| k)
            .collect();
        if let (Some((s, m)), Some(w)) = (&self.scheme, self.workload.as_mut()) {
            w.settle(s, m);
        }
        if let (Some((s, _)), Some(w)) = (&self.scheme, &self.workload)
            && w.is_empty()
        {
            self.workload = Some(Workload::synthetic(s, self.topology.nodes().len()));
        }
        self
    }
}

/// Bits of a line in its chunk, in the line a parallel reader's sample keeps (the chunk's
/// number above).
const CHUNK_SHIFT: u32 = 32;

impl crate::keys::parallel::ChunkSink for PlanSample<'_> {
    fn record(&mut self, rec: &crate::keys::Record<'_>) {
        self.add_sized(self.seq << CHUNK_SHIFT, rec.key, rec.bytes);
    }

    fn begin_chunk(&mut self, seq: u64) {
        self.seq = seq;
    }

    /// Raw lines take the fused scan, and a piece's keys are matched to families together.
    fn raw_lines(
        &mut self,
        c: &mut crate::keys::parallel::RawChunk<'_>,
    ) -> Option<crate::slot::bulk::LineCounts> {
        let mut scanner = std::mem::take(&mut self.scanner);
        let mut families = std::mem::take(&mut self.families);
        let seq = self.seq << CHUNK_SHIFT;
        let keep = self.keep;
        let mut take =
            |piece: &[u8],
             spans: &[crate::slot::bulk::KeySpan],
             line: &mut dyn FnMut(&crate::slot::bulk::KeySpan) -> u64| {
                if let Some((_, m)) = &self.scheme {
                    m.families(
                        spans.len(),
                        |i| &piece[spans[i].start..spans[i].end],
                        &mut families,
                    );
                }
                for (k, s) in spans.iter().enumerate() {
                    let family = self.scheme.as_ref().map(|_| families.found[k]);
                    self.add_of(seq | line(s), &piece[s.start..s.end], family, None);
                }
            };
        // Lines order the keys kept for observed batches; without those, neither lines nor
        // slots are wanted.
        let counts = match keep {
            true => c.scan_lines(&mut scanner, |piece, spans, lines| {
                take(piece, spans, &mut |s| lines.line(piece, s))
            }),
            false => c.split(&mut scanner, |piece, spans| take(piece, spans, &mut |_| 0)),
        };
        self.scanner = scanner;
        self.families = families;
        Some(counts)
    }

    fn record_line(&mut self, line: u64, rec: &crate::keys::Record<'_>) {
        self.add_sized((self.seq << CHUNK_SHIFT) | line, rec.key, rec.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::SlotMap;

    const SCHEME: &str = "version: 1\nvars:\n  group: { kind: word, cardinality: 12 }\n  user_id: { kind: int, cardinality: 1000000 }\nkeys:\n  feed: { pattern: \"feed:{<group>}:user:<user_id>\" }\n  profile: { pattern: \"user:<user_id>:profile\" }\n";

    #[test]
    fn a_sample_read_in_parts_is_the_sample_read_whole() {
        let s = Scheme::parse(SCHEME).unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let keys: Vec<String> = (0..150_000u64)
            .map(|i| match i % 3 {
                0 => format!("feed:{{g{}}}:user:{i}", i % 12),
                1 => format!("user:{i}:profile"),
                _ => format!("other:{i}"),
            })
            .collect();
        let mut whole = PlanSample::new(Some(&s), &topo, true);
        for (i, k) in keys.iter().enumerate() {
            whole.add(i as u64 + 1, k.as_bytes());
        }
        // Three readers taking chunks of 1,000 lines in turn, merged in another order.
        let mut parts: Vec<PlanSample<'_>> = (0..3)
            .map(|_| PlanSample::new(Some(&s), &topo, true))
            .collect();
        for (seq, chunk) in keys.chunks(1000).enumerate() {
            let p = &mut parts[seq % 3];
            crate::keys::parallel::ChunkSink::begin_chunk(p, seq as u64);
            for (i, k) in chunk.iter().enumerate() {
                p.add(((seq as u64) << CHUNK_SHIFT) | (i as u64 + 1), k.as_bytes());
            }
        }
        let mut merged = parts.pop().unwrap();
        for p in parts.into_iter().rev() {
            merged.merge(p);
        }
        let (whole, merged) = (whole.finish(), merged.finish());
        assert_eq!(merged.read, whole.read);
        assert_eq!(merged.keys, whole.keys);
        let (a, b) = (whole.workload.unwrap(), merged.workload.unwrap());
        assert_eq!(a.unmatched, b.unmatched);
        assert_eq!(a.other, b.other);
        for (fa, fb) in a.families.iter().zip(&b.families) {
            assert!(
                fa.keys.len() > 2 * KEPT_PER_FAMILY / 2,
                "the bound is reached"
            );
            assert_eq!((fa.seen, fa.threshold), (fb.seen, fb.threshold));
            // The same keys, with the same values read from the merged arenas.
            let kept = |f: &Family| {
                f.keys
                    .iter()
                    .map(|k| (k.hash, k.values.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(kept(fa), kept(fb));
        }
    }

    /// A family whose kept keys are dropped and compacted many times over keeps each key's
    /// own bytes: every settled key's values, written back into its pattern, give the hash
    /// it was kept by.
    #[test]
    fn kept_keys_keep_their_own_bytes_through_every_compaction() {
        let s = Scheme::parse(SCHEME).unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let mut sample = PlanSample::new(Some(&s), &topo, false);
        // Ids of every length from 1 to 12 digits, so that the moves are uneven.
        for i in 0..400_000u64 {
            let id = i.wrapping_mul(0x9E37_79B9) % 10u64.pow(1 + (i % 12) as u32);
            sample.add(i + 1, format!("user:{id}:profile").as_bytes());
        }
        let w = sample.finish().workload.unwrap();
        let f = &w.families[1];
        assert!(
            f.seen == 400_000 && f.threshold < u64::MAX >> 2,
            "dropped many times"
        );
        assert!(f.keys.len() >= KEPT_PER_FAMILY);
        for k in &f.keys {
            let key = format!("user:{}:profile", k.values[0]);
            assert_eq!(stable_hash(key.as_bytes()), k.hash, "{key}");
        }
    }

    #[test]
    fn synthetic_loads_show_a_low_cardinality_tag() {
        let s = Scheme::parse(SCHEME).unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let w = Workload::synthetic(&s, 3);
        let base = w.loads(&s, &topo, &[], &[0]);
        // feed (12M keys on 12 slots) dominates profile (1M spread evenly).
        let skew = base.max_over_mean().unwrap();
        assert!(skew > 1.2, "{skew}");
        assert_eq!(base.moved, 0.0);
        // Tagging the user id spreads it.
        let r = Rekey {
            family: 0,
            template: Template::parse("feed:<group>:user:{<user_id>}").unwrap(),
            new_vars: vec![],
        };
        let after = w.loads(&s, &topo, &[r], &[0]);
        assert!(after.max_over_mean().unwrap() < 1.05);
        assert!(base.focus_max_over_mean().unwrap() > after.focus_max_over_mean().unwrap());
        assert!(after.renamed > 0.0 && after.moved > 0.0);
        let total: f64 = after.per_node.iter().sum();
        assert!((total - 13_000_000.0).abs() < 1.0, "{total}");
    }

    #[test]
    fn sample_keys_keep_their_values() {
        let s = Scheme::parse(SCHEME).unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let m = crate::scheme::matcher::KeyMatcher::new(&s);
        let mut w = Workload::sample(&s, 3);
        w.add_sample_key(&topo, b"user:42:profile", &m);
        w.add_sample_key(&topo, b"misc", &m);
        w.settle(&s, &m);
        assert_eq!(w.unmatched, 1);
        assert_eq!(w.families[1].keys[0].values.as_slice(), ["42"]);
        let base = w.loads(&s, &topo, &[], &[0]);
        assert_eq!(base.per_node.iter().sum::<f64>(), 2.0);
        let n = topo.node_of(b"user:42:profile").unwrap();
        assert!(base.per_node[n] >= 1.0);
    }

    #[test]
    fn a_large_sample_is_bounded_and_still_counts_every_key() {
        let s = Scheme::parse(SCHEME).unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let n = 3 * KEPT_PER_FAMILY as u64 + 17;
        let m = crate::scheme::matcher::KeyMatcher::new(&s);
        let mut forward = Workload::sample(&s, 3);
        let mut backward = Workload::sample(&s, 3);
        let key = |i: u64| (format!("user:{i}:profile"), vec![i.to_string()]);
        for i in 0..n {
            let (k, _) = key(i);
            forward.add_sample_key(&topo, k.as_bytes(), &m);
            let (k, _) = key(n - 1 - i);
            backward.add_sample_key(&topo, k.as_bytes(), &m);
        }
        forward.settle(&s, &m);
        backward.settle(&s, &m);
        let kept = forward.families[1].keys.len();
        assert!(
            (KEPT_PER_FAMILY / 2..=2 * KEPT_PER_FAMILY).contains(&kept),
            "{kept}"
        );
        assert_eq!(kept, backward.families[1].keys.len());
        let a = forward.loads(&s, &topo, &[], &[1]);
        let b = backward.loads(&s, &topo, &[], &[1]);
        // The kept subset does not depend on the key order, and stands for every key.
        assert_eq!(a.per_node, b.per_node);
        assert!((a.per_node.iter().sum::<f64>() - n as f64).abs() < 1e-6);
        // Each node's estimate is close to its exact count.
        let mut exact = [0f64; 3];
        for i in 0..n {
            exact[topo.node_of(key(i).0.as_bytes()).unwrap()] += 1.0;
        }
        for (est, ex) in a.per_node.iter().zip(exact) {
            assert!((est - ex).abs() / ex < 0.03, "{est} vs {ex}");
        }
    }
}
