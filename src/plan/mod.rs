//! `keyplan plan`: hash-tag suggestions with their cost in skew and their gain in
//! round trips. Pure: no I/O, no printing.
//!
//! For every scheme batch that is cross-slot, fans out over several nodes, or sits on a hash
//! tag with too few values, candidate rewrites are generated — tag a variable the batch shares
//! (each one it shares: the finest and coarser entities), add a bucket to a tag that must stay
//! spread, or keep the layout and send per-node pipelines in parallel — and each is scored on
//! the same workload: round trips and latency from the simulator, skew from the key sample
//! re-keyed with the rewrite (or from keys generated from the declared cardinalities), keys that
//! would change node if adopted. The Pareto front over (round trips, skew) is kept and one
//! candidate recommended, with the reason in words.

pub mod observed;
pub mod workload;
pub mod yaml;

use crate::lint::TagRequirement;
use crate::scheme::predicates::{
    TagRewrite, batch_single_slot, combined_cardinality, family_indices, seg_text, seg_vars,
    tag_rewrites, with_tag_text,
};
use crate::scheme::{DeclaredBatch, Scheme, Seg, TagPart, Template, Var, VarKind};
use crate::simulate::batch::{Batch, scheme_batch_instance};
use crate::simulate::client::{Client, simulate_client};
use crate::simulate::{NetworkModel, Strategy, simulate};
use crate::topology::Topology;
use rayon::prelude::*;
use serde::Serialize;
use workload::{Rekey, Workload};

/// How plans are scored.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The highest busiest-node ÷ mean key load a recommendation may cause.
    pub max_skew: f64,
    /// How the user names that limit (the shell gives its flag), for the reasons' words.
    pub max_skew_words: &'static str,
    /// How batches are executed when they span nodes (default: per-node pipelines one after
    /// another).
    pub strategy: Strategy,
    /// Score with a client profile instead of a strategy.
    pub client: Option<Client>,
    /// The network model.
    pub net: NetworkModel,
    /// What a hash tag needs to lint clean (the active tag-cardinality rules), or `None` when
    /// no such rule is active.
    pub tag: Option<TagRequirement>,
    /// Those rules' codes and names (what `allow:` names to accept a crowded tag).
    pub tag_rules: Vec<(String, String)>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_skew: 1.25,
            max_skew_words: "max_skew",
            strategy: Strategy::Pipeline,
            client: None,
            net: NetworkModel::default(),
            tag: crate::lint::RuleSet::builtin()
                .ok()
                .and_then(|r| r.tag_requirement()),
            tag_rules: crate::lint::RuleSet::builtin()
                .map(|r| r.tag_rules())
                .unwrap_or_default(),
        }
    }
}

/// One pattern change.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Rewrite {
    /// The key's name in the scheme.
    pub key: String,
    /// The pattern now.
    pub from: String,
    /// The pattern proposed.
    pub to: String,
}

/// A variable a rewrite adds (a bucket).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NewVar {
    /// Its name.
    pub name: String,
    /// Its number of values (K buckets).
    pub cardinality: u64,
    /// How the application computes it.
    pub derive: String,
}

/// What becomes of a batch under a layout. In JSON it is its words (`ok`, or what fails).
#[derive(Debug, Clone, PartialEq)]
pub enum ScoreOutcome {
    /// It runs as written.
    Ok,
    /// It runs, split into one pipeline per node: no longer one transaction.
    NotAtomic,
    /// An atomic batch over several slots: it fails as one command.
    CrossSlot,
    /// The client or the strategy fails it: the failure's kind and its words.
    Fails {
        /// A short name for the failure (`client-error`, `CROSSSLOT`, …).
        kind: String,
        /// What the application sees.
        text: String,
    },
    /// The batch is not among those the scheme declares.
    NotRun,
}

const NOT_ATOMIC: &str = "ok, but not atomic: the batch is split per node";
const CROSSSLOT_SPLIT: &str =
    "CROSSSLOT (fails as one command; the round trips are what splitting it per node costs)";

impl ScoreOutcome {
    /// A strategy's first error (the short name is its first word).
    fn failed(text: String) -> ScoreOutcome {
        let kind = text
            .split(' ')
            .next()
            .unwrap_or("")
            .trim_end_matches(':')
            .to_string();
        ScoreOutcome::Fails { kind, text }
    }

    /// It works with the batch's semantics intact.
    pub fn is_ok(&self) -> bool {
        *self == ScoreOutcome::Ok
    }

    /// A few words for a table cell.
    pub fn short(&self) -> &str {
        match self {
            ScoreOutcome::Ok => "ok",
            ScoreOutcome::NotAtomic => "ok, not atomic",
            ScoreOutcome::CrossSlot => "CROSSSLOT",
            ScoreOutcome::Fails { kind, .. } => kind,
            ScoreOutcome::NotRun => "not",
        }
    }
}

impl std::fmt::Display for ScoreOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ScoreOutcome::Ok => "ok",
            ScoreOutcome::NotAtomic => NOT_ATOMIC,
            ScoreOutcome::CrossSlot => CROSSSLOT_SPLIT,
            ScoreOutcome::Fails { text, .. } => text,
            ScoreOutcome::NotRun => "not run",
        })
    }
}

impl Serialize for ScoreOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Read back from its words (plans spooled to disk between passes).
impl<'de> serde::Deserialize<'de> for ScoreOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "ok" => ScoreOutcome::Ok,
            "not run" => ScoreOutcome::NotRun,
            NOT_ATOMIC => ScoreOutcome::NotAtomic,
            CROSSSLOT_SPLIT => ScoreOutcome::CrossSlot,
            _ => ScoreOutcome::failed(text),
        })
    }
}

/// Runs batch `b` on `topo` as `opts.client` would (else with `strategy`): what becomes of it,
/// its round trips, latency and the nodes it touches.
fn run_batch(
    b: &Batch,
    topo: &Topology,
    opts: &PlanOptions,
    strategy: Strategy,
) -> (ScoreOutcome, u64, f64, usize) {
    let (outcome, load) = match opts.client {
        Some(c) => {
            let r = simulate_client(b, topo, c, &opts.net);
            let outcome = match &r.message {
                Some(m) if r.outcome != crate::simulate::client::Outcome::Ok => {
                    ScoreOutcome::Fails {
                        kind: r.outcome.name().to_string(),
                        text: format!("{}: {m}", r.outcome.name()),
                    }
                }
                _ => ScoreOutcome::Ok,
            };
            (outcome, r.load)
        }
        None => {
            let r = simulate(b, topo, strategy, &opts.net);
            let outcome = match r.errors.first() {
                Some(e) => ScoreOutcome::failed(e.clone()),
                None => ScoreOutcome::Ok,
            };
            (outcome, r.load)
        }
    };
    (
        outcome,
        load.round_trips,
        load.latency_ms,
        load.nodes_touched,
    )
}

/// What a batch costs under a layout.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Score {
    /// `ok`, or what fails (`CROSSSLOT` for an atomic batch over several slots).
    pub outcome: ScoreOutcome,
    /// Round trips the client waits for.
    pub round_trips: u64,
    /// Wall-clock estimate in milliseconds.
    pub latency_ms: f64,
    /// Nodes the batch touches.
    pub nodes_touched: usize,
    /// Busiest node ÷ mean load of the batch's own keys (all keys of its patterns) with this
    /// layout: what a tag concentrates, judged against --max-skew.
    pub skew: Option<f64>,
    /// Busiest node ÷ mean load over the whole workload with this layout.
    pub skew_overall: Option<f64>,
    /// Keys (of the workload) that would change node if adopted.
    pub keys_moved: f64,
    /// Keys whose names change.
    pub keys_renamed: f64,
}

/// Rules one key should allow (with a reason) when a candidate is adopted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KeyAllow {
    /// The key's name in the scheme.
    pub key: String,
    /// Rule codes to add to its `allow:`.
    pub rules: Vec<String>,
}

/// What a candidate does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CandidateKind {
    /// Keep the patterns as they are.
    Keep,
    /// Put the batch's keys on one hash tag.
    Tag,
    /// A tag with a bucket variable: the keys stay spread, one pipeline per bucket.
    Bucket,
    /// Keep the patterns; one pipeline per node, all nodes at once.
    PerNodePipelines,
}

impl CandidateKind {
    /// Its name in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            CandidateKind::Keep => "keep",
            CandidateKind::Tag => "tag",
            CandidateKind::Bucket => "bucket",
            CandidateKind::PerNodePipelines => "per-node-pipelines",
        }
    }
}

/// A candidate layout for one batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Candidate {
    /// What it does.
    pub kind: CandidateKind,
    /// One line: what changes.
    pub summary: String,
    /// Pattern changes, ready to paste.
    pub rewrites: Vec<Rewrite>,
    /// Variables to add to the scheme.
    pub new_vars: Vec<NewVar>,
    /// Rules the batch should allow once adopted (a per-node fan-out on purpose).
    pub allow: Vec<String>,
    /// Rules keys should allow once adopted: a tag with fewer values than the tag rules ask,
    /// kept or chosen on purpose (each with the rules to name).
    pub key_allow: Vec<KeyAllow>,
    /// Variables to add to the batch's `same` (a bucketed batch is run one bucket at a time).
    pub add_same: Vec<String>,
    /// Its cost.
    pub score: Score,
    /// On the Pareto front of (round trips, skew).
    pub pareto: bool,
}

/// The plan for one batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BatchPlan {
    /// Batch name.
    pub batch: String,
    /// The batch's stable identity (line, scheme name, command).
    pub batch_id: crate::simulate::batch::BatchId,
    /// Its command.
    pub command: String,
    /// What is wrong with it now (`None`: nothing).
    pub problem: Option<String>,
    /// The candidates; the first is the current layout.
    pub candidates: Vec<Candidate>,
    /// Index of the recommended candidate.
    pub recommended: usize,
    /// Why, in plain words.
    pub reason: String,
}

struct Ctx<'a> {
    scheme: &'a Scheme,
    topo: &'a Topology,
    work: &'a Workload,
    opts: &'a PlanOptions,
    nodes: usize,
}

impl Ctx<'_> {
    /// Runs the batch `name` of `scheme` (generated keys) and scores it.
    fn run(
        &self,
        scheme: &Scheme,
        name: &str,
        strategy: Strategy,
    ) -> (ScoreOutcome, u64, f64, usize) {
        // That batch alone (generating every batch of the scheme to run one made a scheme of
        // N batches cost N² generated batches).
        let Some(d) = scheme.batch(name) else {
            return (ScoreOutcome::NotRun, 0, 0.0, 0);
        };
        let b = scheme_batch_instance(scheme, d, None, 0);
        run_batch(&b, self.topo, self.opts, strategy)
    }

    /// On a Redis Enterprise database with a standard or custom hashing policy: whether the
    /// database refuses some generated instance of the atomic batch `batch` of `scheme` (its
    /// keys placed by the policy's rules, so a `{…}` tag may not decide).
    fn refused_by_policy(&self, scheme: &Scheme, batch: &str) -> bool {
        if !self.topo.slot_map().is_some_and(|m| m.custom_hashing()) {
            return false;
        }
        let Some(d) = scheme.batch(batch) else {
            return false;
        };
        if !atomic_on(self.topo, d) {
            return false;
        }
        let size = d.size.unwrap_or(d.keys.len() as u64);
        let generated = (0..crate::simulate::session::instances_for(size))
            .map(|i| crate::simulate::batch::scheme_batch_instance(scheme, d, None, i));
        crate::simulate::verdict::over_instances(generated, self.topo)
            .is_some_and(|v| v.outcome != crate::simulate::verdict::ServerOutcome::Ok)
    }

    fn score(
        &self,
        scheme: &Scheme,
        batch: &str,
        strategy: Strategy,
        rekeys: &[Rekey],
        crossslot: bool,
        focus: &[usize],
    ) -> Score {
        let (mut outcome, round_trips, latency_ms, nodes_touched) =
            self.run(scheme, batch, strategy);
        if (crossslot || self.refused_by_policy(scheme, batch)) && self.opts.client.is_none() {
            outcome = ScoreOutcome::CrossSlot;
        }
        let loads = self.work.loads(self.scheme, self.topo, rekeys, focus);
        Score {
            outcome,
            round_trips,
            latency_ms,
            nodes_touched,
            skew: loads.focus_max_over_mean(),
            skew_overall: loads.max_over_mean(),
            keys_moved: loads.moved,
            keys_renamed: loads.renamed,
        }
    }
}

/// Batch `b` of `scheme` with some key patterns replaced (`rewrites`, by index into the
/// scheme's keys; the last for a key wins) and variables added: a scheme of that batch alone,
/// with its keys and the variables their patterns use, which generates the batch as the whole
/// scheme rewritten would (a copy of the whole scheme per candidate made a scheme of N batches
/// cost N² copied declarations).
fn rewritten(
    scheme: &Scheme,
    b: &DeclaredBatch,
    rewrites: &[(usize, Template)],
    new_vars: &[NewVar],
) -> Scheme {
    let mut keys = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for name in &b.keys {
        let Some(i) = scheme.key_index(name) else {
            continue;
        };
        if !seen.insert(i) {
            continue;
        }
        let mut k = scheme.keys[i].clone();
        if let Some((_, t)) = rewrites.iter().rev().find(|(f, _)| *f == i) {
            k.template = t.clone();
        }
        keys.push(k);
    }
    let mut vars = indexmap::IndexMap::new();
    for k in &keys {
        for v in k.template.vars() {
            if let Some(var) = scheme.vars.get(v) {
                vars.entry(v.to_string()).or_insert_with(|| var.clone());
            }
        }
    }
    for v in new_vars {
        vars.insert(
            v.name.clone(),
            Var {
                name: v.name.clone(),
                kind: VarKind::Int,
                cardinality: Some(v.cardinality),
                values: Vec::new(),
                pos: Default::default(),
            },
        );
    }
    Scheme::new(None, vars, keys, vec![b.clone()])
}

fn bucket_name(scheme: &Scheme) -> String {
    let mut name = "bucket".to_string();
    let mut i = 2;
    while scheme.vars.contains_key(&name) {
        name = format!("bucket{i}");
        i += 1;
    }
    name
}

/// Whether `b` must touch one slot on `topo`: a Redis Enterprise proxy runs MGET, MSET, DEL,
/// EXISTS, UNLINK and TOUCH across slots itself (Active-Active: MGET, EXISTS, TOUCH).
fn atomic_on(topo: &Topology, b: &DeclaredBatch) -> bool {
    b.command.is_atomic()
        && !topo
            .slot_map()
            .and_then(|m| m.enterprise())
            .is_some_and(|e| e.accepts_cross_slot(b.command.name()))
}

/// Plans every scheme batch.
pub fn plan_scheme(
    scheme: &Scheme,
    topo: &Topology,
    work: &Workload,
    opts: &PlanOptions,
) -> Vec<BatchPlan> {
    let ctx = Ctx {
        scheme,
        topo,
        work,
        opts,
        nodes: topo.nodes().len().max(1),
    };
    // Batches are planned apart, on every core; rayon's indexed collect keeps the batches'
    // order.
    scheme
        .batches
        .par_iter()
        .map(|b| plan_batch(&ctx, b))
        .collect()
}

/// A tag value holding this share of its family's sample keys or more makes the tag crowded,
/// however many values the tag takes: its keys all live on one slot.
const HOT_VALUE_SHARE: f64 = 0.25;

/// The text of `segs` with each variable of `vars` replaced by the value at its index.
fn with_values(segs: &[Seg], vars: &[&str], values: &[String]) -> String {
    segs.iter()
        .map(|s| match s {
            Seg::Lit(l) => l.clone(),
            Seg::Var(v) => vars
                .iter()
                .position(|x| x == v)
                .and_then(|i| values.get(i))
                .cloned()
                .unwrap_or_else(|| format!("<{v}>")),
        })
        .collect()
}

fn plan_batch(ctx: &Ctx<'_>, b: &DeclaredBatch) -> BatchPlan {
    let st = assess(ctx, b);
    let keep = Candidate {
        kind: CandidateKind::Keep,
        summary: "keep the current patterns".into(),
        rewrites: Vec::new(),
        new_vars: Vec::new(),
        allow: Vec::new(),
        // Keeping a crowded tag lints clean only when its keys say they accept it.
        key_allow: if st.low_card {
            allow_on(ctx, &st.fams)
        } else {
            Vec::new()
        },
        add_same: Vec::new(),
        score: ctx.score(
            ctx.scheme,
            &b.name,
            ctx.opts.strategy,
            &[],
            st.crossslot,
            &st.fams,
        ),
        pareto: false,
    };
    let problem = problem(ctx, &st, &keep.score);
    let mut cands = vec![keep];
    let tags = tag_candidates(ctx, &st);
    let buckets = bucket_candidates(ctx, &st, &tags);
    cands.extend(tags);
    cands.extend(buckets);
    cands.extend(per_node_candidate(ctx, &st));
    mark_pareto(&mut cands);
    let fine = problem.is_none().then(|| nothing_to_change(ctx, &st));
    let (recommended, reason) = recommend(ctx, b, &cands, fine, st.crossslot);
    BatchPlan {
        batch: b.name.clone(),
        batch_id: crate::simulate::batch::BatchId {
            line: None,
            name: Some(b.name.clone()),
            command: b.command.name().to_ascii_uppercase(),
        },
        command: b.command.name().into(),
        problem,
        candidates: cands,
        recommended,
        reason,
    }
}

/// What the plan knows of a declared batch before it proposes anything.
struct Assessed<'b> {
    b: &'b DeclaredBatch,
    /// The batch's key families.
    fams: Vec<usize>,
    single: Result<(), crate::scheme::predicates::NotSingleSlot>,
    atomic: bool,
    /// An atomic batch over several slots.
    crossslot: bool,
    /// The tag the batch's keys share now (if single-slot) and its number of values.
    current_tag: Option<(Vec<Seg>, Option<u64>)>,
    /// What a key sample shows when it clearly disagrees with the declared values.
    observed_note: Option<String>,
    /// One value of the tag that holds a large share of the sample's keys.
    hot_value: Option<String>,
    /// Values a tag needs to lint clean.
    needed: u64,
    /// The scheme accepts a concentration on purpose (`allow: [KP201]`).
    accepted: bool,
    /// The current tag has too few values (or a hot one), and is not accepted.
    low_card: bool,
    /// A fan-out the scheme accepts on purpose (`allow: [KP302]`).
    fanout_accepted: bool,
    /// The variables of the current tag.
    tag_vars: Vec<String>,
}

/// The batch as it is: slots, its current tag and what the sample says of it, what the
/// scheme accepts.
fn assess<'b>(ctx: &Ctx<'_>, b: &'b DeclaredBatch) -> Assessed<'b> {
    let scheme = ctx.scheme;
    let fams = family_indices(scheme, b);
    let single = batch_single_slot(scheme, b);
    let atomic = atomic_on(ctx.topo, b);
    let crossslot = atomic
        && match ctx.topo.slot_map().is_some_and(|m| m.custom_hashing()) {
            true => ctx.refused_by_policy(scheme, &b.name),
            false => single.is_err(),
        };
    // The tag the batch's keys share now (if single-slot) and its number of values: what a
    // key sample shows when it clearly disagrees with the declaration (both are said).
    let mut observed_note: Option<String> = None;
    let mut hot_value: Option<String> = None;
    let current_tag: Option<(Vec<Seg>, Option<u64>)> = if single.is_ok() {
        let hashed = scheme.keys[fams[0]].template.hashed();
        let vars = seg_vars(&hashed);
        let mut card = if vars.is_empty() {
            Some(1)
        } else {
            combined_cardinality(scheme, &vars)
        };
        let observed = ctx.work.observed_values(fams[0], &vars);
        if let (Some(declared), Some(o)) = (card, &observed) {
            let (seen, keys) = (o.distinct, o.keys);
            // A sample this large would show about this many values under the declaration.
            let d = declared.max(1) as f64;
            let expected = d * (1.0 - (-(keys as f64) / d).exp());
            if !vars.is_empty() && keys >= 50 && (seen as f64) * 4.0 < expected {
                observed_note = Some(format!(
                    "{seen} value(s) in {keys} sample keys; the scheme declares {declared}"
                ));
                card = Some(seen);
            }
        }
        // However many values the tag takes, one that holds a large share of a family's sample
        // keys, or of their bytes where the sample gives sizes (one value with a few huge
        // keys), puts them all on one slot: what the sample shows, not the declared count.
        let hot = |o: &crate::plan::workload::ObservedValues| {
            if vars.is_empty() || o.keys < 50 || o.distinct < 2 {
                return None;
            }
            if o.top_keys as f64 >= HOT_VALUE_SHARE * o.keys as f64 {
                return Some(format!(
                    "`{{{}}}` holds {:.0}% of its {} sample keys",
                    with_values(&hashed, &vars, &o.top),
                    100.0 * o.top_keys as f64 / o.keys as f64,
                    o.keys
                ));
            }
            let (top, bytes, total) = o.top_bytes.as_ref()?;
            let share = *bytes as f64 / *total as f64;
            (share >= HOT_VALUE_SHARE).then(|| {
                format!(
                    "`{{{}}}` holds {:.1}% of the bytes of its {} sample keys",
                    with_values(&hashed, &vars, top),
                    100.0 * share,
                    o.keys
                )
            })
        };
        hot_value = observed.as_ref().and_then(hot).or_else(|| {
            fams[1..]
                .iter()
                .filter_map(|&f| ctx.work.observed_values(f, &vars))
                .find_map(|o| hot(&o))
        });
        Some((hashed, card))
    } else {
        None
    };
    let needed = ctx.opts.tag.map_or(1, |t| t.values_needed(ctx.nodes));
    let accepted = kp201(ctx, &b.allow) || fams.iter().all(|&f| kp201(ctx, &scheme.keys[f].allow));
    let low_card = !accepted
        && (hot_value.is_some()
            || current_tag
                .as_ref()
                .is_some_and(|(_, c)| c.is_some_and(|c| c < needed)))
        && fams
            .iter()
            .all(|&f| matches!(scheme.keys[f].template.tag_part().0, TagPart::Tagged(_)));
    let tag_vars: Vec<String> = current_tag
        .as_ref()
        .map(|(t, _)| seg_vars(t).into_iter().map(str::to_string).collect())
        .unwrap_or_default();
    let kp302 = |list: &[String]| {
        list.iter()
            .any(|a| a.eq_ignore_ascii_case("KP302") || a == "pipeline-fanout")
    };
    let fanout_accepted = !atomic && single.is_err() && kp302(&b.allow);
    Assessed {
        b,
        fams,
        single,
        atomic,
        crossslot,
        current_tag,
        observed_note,
        hot_value,
        needed,
        accepted,
        low_card,
        fanout_accepted,
        tag_vars,
    }
}

/// Whether `list` allows every tag rule (a concentration accepted on purpose).
fn kp201(ctx: &Ctx<'_>, list: &[String]) -> bool {
    let tag_rules = &ctx.opts.tag_rules;
    !tag_rules.is_empty()
        && tag_rules.iter().all(|(code, name)| {
            list.iter()
                .any(|a| a.eq_ignore_ascii_case(code) || a == name)
        })
}

/// The tag rules each of the families `fams` does not allow yet.
fn allow_on(ctx: &Ctx<'_>, fams: &[usize]) -> Vec<KeyAllow> {
    let scheme = ctx.scheme;
    let to_allow = |f: usize| -> Vec<String> {
        let allow = &scheme.keys[f].allow;
        ctx.opts
            .tag_rules
            .iter()
            .filter(|(code, name)| {
                !allow
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(code) || a == name)
            })
            .map(|(code, _)| code.clone())
            .collect()
    };
    fams.iter()
        .map(|&f| KeyAllow {
            key: scheme.keys[f].name.clone(),
            rules: to_allow(f),
        })
        .filter(|a| !a.rules.is_empty())
        .collect()
}

/// What is wrong with the batch as it is (`None`: nothing), `keep` being its score today.
fn problem(ctx: &Ctx<'_>, st: &Assessed<'_>, keep: &Score) -> Option<String> {
    let Assessed {
        b,
        single,
        crossslot,
        current_tag,
        observed_note,
        hot_value,
        needed,
        low_card,
        fanout_accepted,
        ..
    } = st;
    let (crossslot, needed, low_card, fanout_accepted) =
        (*crossslot, *needed, *low_card, *fanout_accepted);
    let by_policy = ctx.topo.slot_map().is_some_and(|m| m.custom_hashing());
    let atomic = atomic_on(ctx.topo, b);
    if crossslot && by_policy {
        Some(format!(
            "{} over keys the database's hashing policy places on different slots (or refuses): CROSSSLOT",
            b.command.name(),
        ))
    } else if crossslot {
        Some(format!(
            "{} over keys that hash to different slots: CROSSSLOT ({})",
            b.command.name(),
            single
                .as_ref()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        ))
    } else if single.is_err() && !fanout_accepted && !(by_policy && atomic) {
        Some(format!(
            "{} over several slots: {} {}, {} round trip(s) with {}",
            match b.command.is_atomic() {
                true => format!("{} (split over the shards by the proxy)", b.command.name()),
                false => "pipeline".to_string(),
            },
            keep.nodes_touched,
            match crate::simulate::behind_proxy(ctx.topo) {
                true => "shard(s)",
                false => "node(s)",
            },
            keep.round_trips,
            ctx.opts
                .client
                .map(|c| c.name())
                .unwrap_or(ctx.opts.strategy.name())
        ))
    } else if let (true, Some(hot)) = (low_card, &hot_value) {
        Some(format!(
            "one slot, but one value of its tag {hot}: they all live on one slot"
        ))
    } else if low_card {
        let (tag, card) = current_tag.clone().expect("checked above");
        Some(format!(
            "one slot, but its tag `{{{}}}` takes about {} value(s){} (fewer than {needed}): those keys crowd a few slots",
            seg_text(&tag),
            card.unwrap_or(0),
            observed_note
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ))
    } else {
        None
    }
}

/// Tag each variable the batch keeps the same and every key uses (for a crowded tag: the
/// ones not in it already).
fn tag_candidates(ctx: &Ctx<'_>, st: &Assessed<'_>) -> Vec<Candidate> {
    let (scheme, b, fams, needed) = (ctx.scheme, st.b, &st.fams, st.needed);
    let (single, low_card, tag_vars) = (&st.single, st.low_card, &st.tag_vars);
    let mut cands = Vec::new();
    if single.is_err() || low_card {
        // Tag each variable the batch keeps the same and every key uses (for a crowded tag:
        // the ones not in it already).
        let shared: Vec<&String> = b
            .same
            .iter()
            .filter(|v| {
                fams.iter()
                    .all(|&f| scheme.keys[f].template.vars().any(|x| x == v.as_str()))
            })
            .filter(|v| !low_card || !tag_vars.contains(v))
            .collect();
        for v in &shared {
            // The same rewrites lint suggests: `<v>` alone, and any existing tag of a batch
            // key that uses only shared variables (it keeps that key's keys in place).
            for TagRewrite { tag, rewrites: tr } in tag_rewrites(scheme, b, v) {
                // A tag of one value is a constant (a name, not an id): it puts every key of
                // the families on one slot, and is never proposed.
                let card = combined_cardinality(scheme, &seg_vars(&tag));
                if card == Some(1) {
                    continue;
                }
                let rw: Vec<(usize, Template)> = tr
                    .iter()
                    .map(|(f, text)| {
                        let t = Template::parse(text).expect("invariant: tag_rewrites parses");
                        (*f, t)
                    })
                    .collect();
                let rewrites: Vec<Rewrite> = tr
                    .into_iter()
                    .map(|(f, to)| Rewrite {
                        key: scheme.keys[f].name.clone(),
                        from: scheme.keys[f].template.text.clone(),
                        to,
                    })
                    .collect();
                let s2 = rewritten(scheme, b, &rw, &[]);
                let rekeys: Vec<Rekey> = rw
                    .iter()
                    .map(|(f, t)| Rekey {
                        family: *f,
                        template: t.clone(),
                        new_vars: Vec::new(),
                    })
                    .collect();
                let score = ctx.score(&s2, &b.name, ctx.opts.strategy, &rekeys, false, fams);
                // A tag with fewer values than the tag rules ask lints clean only when its
                // keys say they accept it.
                let key_allow = if card.is_some_and(|c| c < needed) {
                    allow_on(ctx, fams)
                } else {
                    Vec::new()
                };
                cands.push(Candidate {
                    kind: CandidateKind::Tag,
                    summary: format!(
                        "tag `{{{}}}`{}",
                        seg_text(&tag),
                        card.map(|c| format!(" ({c} values)")).unwrap_or_default()
                    ),
                    rewrites,
                    new_vars: Vec::new(),
                    allow: Vec::new(),
                    key_allow,
                    add_same: Vec::new(),
                    score,
                    pareto: false,
                });
            }
        }
    }
    cands
}

/// Buckets: for a fan-out (pipeline) whose tag (current, or one of `tags` proposed) has too
/// few values.
fn bucket_candidates(ctx: &Ctx<'_>, st: &Assessed<'_>, tags: &[Candidate]) -> Vec<Candidate> {
    let (scheme, b, fams, needed) = (ctx.scheme, st.b, &st.fams, st.needed);
    let (atomic, current_tag, low_card) = (st.atomic, &st.current_tag, st.low_card);
    let mut cands = Vec::new();
    if !atomic {
        // (the batch's families with their patterns, the tag to bucket)
        type TagCand = (Vec<(usize, Template)>, Vec<Seg>);
        let tag_cands: Vec<TagCand> = {
            let mut v = Vec::new();
            if let Some((tag, _)) = &current_tag
                && low_card
            {
                v.push((
                    fams.iter()
                        .map(|&f| (f, scheme.keys[f].template.clone()))
                        .collect(),
                    tag.clone(),
                ));
            }
            for c in tags {
                let rw: Vec<(usize, Template)> = fams
                    .iter()
                    .map(|&f| {
                        let t = c
                            .rewrites
                            .iter()
                            .find(|r| r.key == scheme.keys[f].name)
                            .and_then(|r| Template::parse(&r.to).ok())
                            .unwrap_or_else(|| scheme.keys[f].template.clone());
                        (f, t)
                    })
                    .collect();
                let tag = rw[0].1.hashed();
                let card = combined_cardinality(scheme, &seg_vars(&tag));
                if card.is_some_and(|c| c < needed) {
                    v.push((rw, tag));
                }
            }
            v
        };
        let bname = bucket_name(scheme);
        for (rw, tag) in tag_cands {
            let card = combined_cardinality(scheme, &seg_vars(&tag))
                .unwrap_or(1)
                .max(1);
            // The smallest K (a power of two up to 64) within --max-skew whose tag has enough
            // values to lint clean; else the largest tried.
            let mut chosen: Option<Candidate> = None;
            for k in [2u64, 4, 8, 16, 32, 64] {
                let mut new_tag = tag.clone();
                new_tag.push(Seg::Lit(":".into()));
                new_tag.push(Seg::Var(bname.clone()));
                let mut rws = Vec::new();
                let mut rewrites = Vec::new();
                for (f, t) in &rw {
                    let Some(unbraced) = with_tag_text(t, &tag) else {
                        continue;
                    };
                    // Replace the braced tag by the bucketed one.
                    let text = unbraced.replacen(
                        &format!("{{{}}}", seg_text(&tag)),
                        &format!("{{{}}}", seg_text(&new_tag)),
                        1,
                    );
                    let Ok(nt) = Template::parse(&text) else {
                        continue;
                    };
                    rewrites.push(Rewrite {
                        key: scheme.keys[*f].name.clone(),
                        from: scheme.keys[*f].template.text.clone(),
                        to: text,
                    });
                    rws.push((*f, nt));
                }
                if rws.is_empty() {
                    break;
                }
                let nv = NewVar {
                    name: bname.clone(),
                    cardinality: k,
                    derive: format!(
                        "hash of the key's other variables mod {k}, e.g. crc32(<{}>) % {k}",
                        rws[0]
                            .1
                            .vars()
                            .find(|v| *v != bname
                                && !tag.iter().any(|s| s == &Seg::Var(v.to_string())))
                            .unwrap_or("id")
                    ),
                };
                let s2 = rewritten(scheme, b, &rws, std::slice::from_ref(&nv));
                let rekeys: Vec<Rekey> = rws
                    .iter()
                    .map(|(f, t)| Rekey {
                        family: *f,
                        template: t.clone(),
                        new_vars: vec![(bname.clone(), k)],
                    })
                    .collect();
                let score = ctx.score(&s2, &b.name, ctx.opts.strategy, &rekeys, false, fams);
                let enough = card.saturating_mul(k) >= needed;
                let fits = score.skew.is_none_or(|s| s <= ctx.opts.max_skew);
                let c = Candidate {
                    kind: CandidateKind::Bucket,
                    summary: format!(
                        "bucketed tag `{{{}}}` with {k} buckets ({} values)",
                        seg_text(&new_tag),
                        card.saturating_mul(k)
                    ),
                    rewrites,
                    new_vars: vec![nv],
                    allow: Vec::new(),
                    key_allow: Vec::new(),
                    add_same: vec![bname.clone()],
                    score,
                    pareto: false,
                };
                chosen = Some(c);
                if enough && fits {
                    break;
                }
            }
            if let Some(c) = chosen {
                cands.push(c);
            }
        }
    }
    cands
}

/// Per-node pipelines in parallel, for batches over several slots.
fn per_node_candidate(ctx: &Ctx<'_>, st: &Assessed<'_>) -> Option<Candidate> {
    let (scheme, b, fams, atomic) = (ctx.scheme, st.b, &st.fams, st.atomic);
    st.single.as_ref().err()?;
    if crate::simulate::one_endpoint(ctx.topo) {
        // One proxy endpoint (Redis Enterprise, twemproxy): the client cannot address the
        // shards (the proxy's own fan-out is what keeping the patterns costs).
        return None;
    }
    let mut score = ctx.score(scheme, &b.name, Strategy::Parallel, &[], false, fams);
    if atomic {
        score.outcome = ScoreOutcome::NotAtomic;
    }
    Some(Candidate {
        kind: CandidateKind::PerNodePipelines,
        summary: "keep the patterns; send one pipeline per node, all nodes in parallel".into(),
        rewrites: Vec::new(),
        new_vars: Vec::new(),
        allow: if atomic {
            Vec::new()
        } else {
            vec!["KP302".into()]
        },
        key_allow: Vec::new(),
        add_same: Vec::new(),
        score,
        pareto: false,
    })
}

/// Why a batch with no problem needs no change.
fn nothing_to_change(ctx: &Ctx<'_>, st: &Assessed<'_>) -> String {
    let (scheme, b, fams, needed) = (ctx.scheme, st.b, &st.fams, st.needed);
    let (current_tag, accepted, fanout_accepted) =
        (&st.current_tag, st.accepted, st.fanout_accepted);
    let allowed_reason = b
        .reason
        .as_deref()
        .or_else(|| fams.iter().find_map(|&f| scheme.keys[f].reason.as_deref()))
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let crowded = current_tag
        .as_ref()
        .is_some_and(|(_, c)| c.is_some_and(|c| c < needed));
    if fanout_accepted {
        format!(
            "{} fans out over several nodes on purpose (KP302 allowed{allowed_reason})",
            b.name
        )
    } else if accepted && crowded {
        format!(
            "{} runs on one slot; its tag concentrates keys on purpose (KP201 allowed{allowed_reason})",
            b.name
        )
    } else {
        format!(
            "{} already runs on one slot with a well-spread tag: nothing to change",
            b.name
        )
    }
}

/// Works with the batch's semantics intact (per-node pipelines of an atomic batch do not).
fn ok(c: &Candidate) -> bool {
    c.score.outcome.is_ok()
}

/// Skews closer than this count as equal (sampling noise).
const SKEW_EPS: f64 = 0.01;

/// Marks candidates no other candidate beats on both round trips and skew.
fn mark_pareto(cands: &mut [Candidate]) {
    let skew = |c: &Candidate| c.score.skew.unwrap_or(1.0);
    let n = cands.len();
    for i in 0..n {
        let dominated = (0..n).any(|j| {
            j != i
                && ok(&cands[j])
                && cands[j].score.round_trips <= cands[i].score.round_trips
                && skew(&cands[j]) <= skew(&cands[i]) + SKEW_EPS
                && (cands[j].score.round_trips < cands[i].score.round_trips
                    || skew(&cands[j]) < skew(&cands[i]) - SKEW_EPS)
        });
        cands[i].pareto = ok(&cands[i]) && !dominated;
    }
}

fn recommend(
    ctx: &Ctx<'_>,
    b: &DeclaredBatch,
    cands: &[Candidate],
    fine: Option<String>,
    crossslot: bool,
) -> (usize, String) {
    let (max, limit) = (ctx.opts.max_skew, ctx.opts.max_skew_words);
    let skew = |c: &Candidate| c.score.skew.unwrap_or(1.0);
    if let Some(why) = fine {
        return (0, why);
    }
    // What holds the keys: a Redis Enterprise database's shards, else the cluster's nodes.
    let node = if ctx.topo.slot_map().and_then(|m| m.enterprise()).is_some() {
        "shard"
    } else {
        "node"
    };
    // Within the skew budget and working: fewest round trips, then latency (to the microsecond:
    // closer is noise of the generated keys), then fewest keys moved, then fewest rewrites.
    let micros = |c: &Candidate| (c.score.latency_ms * 1000.0).round();
    let mut best: Option<usize> = None;
    for (i, c) in cands.iter().enumerate() {
        // Per-node pipelines are advice for a pipeline only: split, an atomic batch (MULTI, a
        // script, an Enterprise proxy's multi-key command) is no longer one transaction.
        let usable = ok(c)
            || (!crossslot
                && c.kind == CandidateKind::PerNodePipelines
                && c.score.outcome != ScoreOutcome::NotAtomic);
        if !usable || skew(c) > max + 1e-9 {
            continue;
        }
        let better = match best {
            None => true,
            Some(j) => {
                let d = &cands[j];
                (
                    c.score.round_trips,
                    micros(c),
                    c.score.keys_moved,
                    c.rewrites.len(),
                )
                    .partial_cmp(&(
                        d.score.round_trips,
                        micros(d),
                        d.score.keys_moved,
                        d.rewrites.len(),
                    ))
                    == Some(std::cmp::Ordering::Less)
            }
        };
        if better {
            best = Some(i);
        }
    }
    let before = &cands[0].score;
    if let Some(i) = best {
        let c = &cands[i];
        let why = match c.kind {
            CandidateKind::Tag => format!(
                "{}: every batch lands on one slot, {} → {} round trip(s), and the busiest {node} carries {:.2}× the mean (within {limit} {max})",
                c.summary,
                before.round_trips,
                c.score.round_trips,
                skew(c)
            ),
            CandidateKind::Bucket => format!(
                "{}: the keys stay spread ({:.2}× the mean on the busiest {node}, within {limit} {max}); the batch becomes one single-slot pipeline per bucket, touching {} {node}(s) in {} round trip(s) ({} in parallel)",
                c.summary,
                skew(c),
                c.score.nodes_touched,
                c.score.round_trips,
                c.new_vars.first().map(|v| v.cardinality).unwrap_or(0)
            ),
            CandidateKind::PerNodePipelines => {
                let pipelines = format!(
                    "keep the layout and send per-node pipelines in parallel: {} round trip(s) instead of {} ({:.3} ms instead of {:.3} ms)",
                    c.score.round_trips, before.round_trips, c.score.latency_ms, before.latency_ms
                );
                // Tags were considered: say why each loses, rather than that none exists.
                let tags: Vec<&Candidate> = cands
                    .iter()
                    .filter(|t| matches!(t.kind, CandidateKind::Tag | CandidateKind::Bucket))
                    .collect();
                match tags.iter().min_by(|a, b| skew(a).total_cmp(&skew(b))) {
                    None => {
                        format!("no tag helps: the batch's keys share no variable, so {pipelines}")
                    }
                    Some(t) if skew(t) > max + 1e-9 => format!(
                        "{pipelines}; the tags that would make it one slot crowd a {node}: {} puts {:.2}× the mean load on the busiest {node}, over {limit} {max}",
                        t.summary,
                        skew(t)
                    ),
                    Some(t) => format!(
                        "{pipelines}; that beats the tags: {} takes {} round trip(s) ({:.3} ms)",
                        t.summary, t.score.round_trips, t.score.latency_ms
                    ),
                }
            }
            CandidateKind::Keep => format!(
                "keeping the layout is best within {limit} {max}: {} round trip(s)",
                c.score.round_trips
            ),
        };
        return (i, why);
    }
    // Nothing fits the skew budget.
    let tagged = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == CandidateKind::Tag && ok(c))
        .min_by(|a, b| skew(a.1).total_cmp(&skew(b.1)));
    if crossslot {
        if let Some((i, c)) = tagged {
            return (
                i,
                format!(
                    "{} is the only way to make {} work as one command, but it puts {:.2}× the mean load on one node (over {limit} {max}): one node bursts while the others idle; consider a finer shared entity",
                    c.summary,
                    b.name,
                    skew(c)
                ),
            );
        }
        // An atomic batch split per node is no longer atomic: that is never the advice.
        let split = cands
            .iter()
            .find(|c| c.kind == CandidateKind::PerNodePipelines)
            .map(|c| {
                format!(
                    "; per-node pipelines would run it, but not atomically ({} → {} round trip(s))",
                    before.round_trips, c.score.round_trips
                )
            })
            .unwrap_or_default();
        // Shared variables of one value are constants, not tags: said, not proposed.
        let constants: Vec<String> = b
            .same
            .iter()
            .filter(|v| ctx.scheme.cardinality(v) == Some(1))
            .map(|v| format!("`<{v}>`"))
            .collect();
        let constant_note = match constants.is_empty() {
            true => String::new(),
            false => format!(
                " but {}, which take(s) one value: a constant, a name, not an id (as a tag it would put every key on one slot)",
                constants.join(", ")
            ),
        };
        return (
            0,
            format!(
                "no variable is shared by all keys of {}{constant_note}: no tag can make it one slot, and {} must run on one slot: the application must change (give its keys one hash tag, the id that ties them, or stop batching them){split}",
                b.name,
                b.command.name().to_ascii_uppercase()
            ),
        );
    }
    // Single-slot but crowded, and nothing within the budget: the least crowded that works.
    let (i, c) = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| ok(c))
        .min_by(|a, b| skew(a.1).total_cmp(&skew(b.1)))
        .unwrap_or((0, &cands[0]));
    let why = if i == 0 {
        format!(
            "its keys crowd a few values of their tag ({:.2}× the mean on the busiest {node}, over {limit} {max}) and {} has no other variable it keeps the same to spread them by; accept it (allow KP201 with a reason) or split the batch",
            skew(c),
            b.name
        )
    } else {
        format!(
            "{} lowers the crowding to {:.2}× the mean (from {:.2}×), still over {limit} {max}; a finer shared variable would do better",
            c.summary,
            skew(c),
            skew(&cands[0])
        )
    };
    (i, why)
}

/// The scheme batches a set of candidates makes single-slot, for soundness checks: after
/// applying `c`, the batch's generated keys all hash to one slot.
pub fn single_slot_after(scheme: &Scheme, batch: &str, c: &Candidate) -> Option<bool> {
    let rw: Vec<(usize, Template)> = c
        .rewrites
        .iter()
        .filter_map(|r| {
            let f = scheme.key_index(&r.key)?;
            Some((f, Template::parse(&r.to).ok()?))
        })
        .collect();
    let s2 = rewritten(scheme, scheme.batch(batch)?, &rw, &c.new_vars);
    let b = scheme_batch_instance(&s2, s2.batch(batch)?, None, 0);
    let slots: Vec<u16> = b.keys().map(crate::slot::key_slot).collect();
    Some(slots.windows(2).all(|w| w[0] == w[1]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::SlotMap;

    /// A candidate is scored on a scheme of its batch alone, whatever the scheme's size (a
    /// copy of the whole scheme per candidate made plans of N batches cost N²), and that
    /// scheme generates the batch as the whole scheme rewritten does.
    #[test]
    fn a_candidate_is_scored_on_its_batch_alone() {
        let mut text = String::from(
            "version: 1\nvars:\n  id: { kind: int, cardinality: 1000 }\n  w: { kind: word, cardinality: 9 }\nkeys:\n",
        );
        for i in 0..300 {
            text.push_str(&format!("  k{i}: {{ pattern: \"key{i}:<id>:<w>\" }}\n"));
        }
        text.push_str("batches:\n");
        for i in 0..300 {
            text.push_str(&format!(
                "  b{i}: {{ command: mget, keys: [k{i}, k{}, k{i}], same: [w] }}\n",
                (i + 7) % 300
            ));
        }
        let s = Scheme::parse(&text).unwrap();
        for i in [0, 150, 299] {
            let d = &s.batches[i];
            let f = s.key_index(&d.keys[1]).unwrap();
            let t = Template::parse(&format!("{{key{f}:<id>}}:<w>")).unwrap();
            let nv = NewVar {
                name: "bucket".into(),
                cardinality: 4,
                derive: String::new(),
            };
            let alone = rewritten(&s, d, &[(f, t.clone())], std::slice::from_ref(&nv));
            assert_eq!((alone.batches.len(), alone.keys.len()), (1, 2));
            assert!(alone.vars.len() <= 3);
            // The whole scheme rewritten, as the plan once scored it.
            let mut whole = s.clone();
            whole.keys[f].template = t;
            let got = scheme_batch_instance(&alone, &alone.batches[0], None, 0);
            let want = crate::simulate::batch::from_scheme(&whole, None).swap_remove(i);
            assert_eq!(got, want);
        }
    }

    const SCHEME: &str = "version: 1
vars:
  user_id:  { kind: int, cardinality: 10_000_000 }
  group:    { kind: word, cardinality: 12 }
  order_id: { kind: int, cardinality: 5_000_000 }
  sku:      { kind: int, cardinality: 900_000 }
keys:
  profile:     { pattern: \"user:<user_id>:profile\", bytes: 300 }
  feed:        { pattern: \"feed:{<group>}:user:<user_id>\", type: zset }
  order_items: { pattern: \"order:<order_id>:items\" }
  order_total: { pattern: \"order:<order_id>:total\" }
  product:     { pattern: \"product:<sku>\" }
batches:
  checkout: { command: multi, keys: [order_items, order_total], same: [order_id] }
  fanout:   { command: pipeline, keys: [feed], size: 1000, same: [group] }
  lookup:   { command: pipeline, keys: [product], size: 100 }
";

    fn run() -> (Scheme, Vec<BatchPlan>) {
        let s = Scheme::parse(SCHEME).unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let w = Workload::synthetic(&s, 3);
        let p = plan_scheme(&s, &topo, &w, &PlanOptions::default());
        (s, p)
    }

    #[test]
    fn checkout_gets_the_order_id_tag() {
        let (s, p) = run();
        let c = &p[0];
        assert!(
            c.problem.as_deref().unwrap().contains("CROSSSLOT"),
            "{:?}",
            c.problem
        );
        let r = &c.candidates[c.recommended];
        assert_eq!(r.kind, CandidateKind::Tag);
        let to: Vec<&str> = r.rewrites.iter().map(|x| x.to.as_str()).collect();
        assert_eq!(to, ["order:{<order_id>}:items", "order:{<order_id>}:total"]);
        assert_eq!(r.score.round_trips, 1);
        assert_eq!(single_slot_after(&s, "checkout", r), Some(true));
        assert!(c.reason.contains("one slot"), "{}", c.reason);
    }

    #[test]
    fn low_cardinality_group_tag_is_bucketed() {
        let (s, p) = run();
        let f = &p[1];
        assert!(
            f.problem
                .as_deref()
                .unwrap()
                .contains("takes about 12 value(s)"),
            "{:?}",
            f.problem
        );
        let r = &f.candidates[f.recommended];
        assert_eq!(r.kind, CandidateKind::Bucket, "{f:#?}");
        assert!(
            r.rewrites[0]
                .to
                .starts_with("feed:{<group>:<bucket>}:user:<user_id>"),
            "{:?}",
            r.rewrites
        );
        assert!(r.new_vars[0].cardinality * 12 >= 50);
        assert!(r.score.skew.unwrap() <= 1.25);
        assert!(f.candidates[0].score.skew.unwrap() > r.score.skew.unwrap());
        let _ = s;
    }

    #[test]
    fn random_fanout_gets_per_node_pipelines() {
        let (_, p) = run();
        let l = &p[2];
        let r = &l.candidates[l.recommended];
        assert_eq!(r.kind, CandidateKind::PerNodePipelines, "{l:#?}");
        assert!(l.reason.starts_with("no tag helps"), "{}", l.reason);
        assert_eq!(r.score.round_trips, 1);
        assert_eq!(l.candidates[0].score.round_trips, 3);
    }

    /// A tag declared over 100 values that a sample shows with one: judged by what the sample
    /// shows, and both figures said.
    #[test]
    fn the_sample_overrides_a_declared_tag_cardinality() {
        let s = Scheme::parse(
            "version: 1\nvars:\n  season: { kind: word, cardinality: 100 }\n  user: { kind: int, cardinality: 1000000 }\nkeys:\n  board: { pattern: \"board:{season:<season>}:user:<user>\" }\n  meta: { pattern: \"meta:{season:<season>}\" }\nbatches:\n  top: { command: mget, keys: [board, meta], same: [season] }\n",
        )
        .unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let m = crate::scheme::matcher::KeyMatcher::new(&s);
        let mut w = Workload::sample(&s, 3);
        for i in 0..500 {
            let k = format!("board:{{season:spring}}:user:{i}");
            w.add_sample_key(&topo, k.as_bytes(), &m);
        }
        w.settle(&s, &m);
        let p = plan_scheme(&s, &topo, &w, &PlanOptions::default());
        let problem = p[0].problem.as_deref().unwrap();
        assert!(
            problem.contains(
                "takes about 1 value(s) (1 value(s) in 500 sample keys; the scheme declares 100)"
            ),
            "{problem}"
        );
    }

    /// A tag that takes its declared 100 values in a sample, one of which holds 40% of the
    /// keys: crowded, not "well spread" (the value's slot carries them).
    #[test]
    fn one_heavy_tag_value_in_the_sample_is_a_problem() {
        let s = Scheme::parse(
            "version: 1\nvars:\n  season: { kind: word, cardinality: 100 }\n  user: { kind: int, cardinality: 1000000 }\nkeys:\n  board: { pattern: \"board:{season:<season>}:user:<user>\" }\n  meta: { pattern: \"meta:{season:<season>}\" }\nbatches:\n  top: { command: mget, keys: [board, meta], same: [season] }\n",
        )
        .unwrap();
        let topo = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let m = crate::scheme::matcher::KeyMatcher::new(&s);
        let sample = |hot: usize| {
            let mut w = Workload::sample(&s, 3);
            for i in 0..1000 {
                let season = if i < hot {
                    "spring".to_string()
                } else {
                    format!("s{}", i % 100)
                };
                let k = format!("board:{{season:{season}}}:user:{i}");
                w.add_sample_key(&topo, k.as_bytes(), &m);
            }
            w.settle(&s, &m);
            plan_scheme(&s, &topo, &w, &PlanOptions::default())
        };
        let p = sample(400);
        let problem = p[0].problem.as_deref().unwrap_or_default();
        assert!(
            problem.contains("`{season:spring}` holds 40% of its 1000 sample keys"),
            "{problem}"
        );
        // Spread evenly, the same tag is fine.
        let p = sample(0);
        assert_eq!(p[0].problem, None, "{:?}", p[0].problem);
    }
}
