//! The check kinds. Scheme checks reason on patterns and declared cardinalities; dump checks
//! look at every key (streaming, bounded memory: findings per rule and file are capped).

use super::rule::{BytesFlag, CheckKind, TagFlag};
use super::{ActiveRule, Diagnostic, RuleSet};
use crate::keys::display::display_key;
use crate::scheme::matcher::KeyMatcher;
use crate::scheme::predicates::{
    batch_single_slot, combined_cardinality, seg_text, seg_vars, single_slot_rewrites,
};
use crate::scheme::{Scheme, Seg, TagPart, Template};
use crate::slot::TagShape;
use crate::topology::Topology;

/// Findings kept per rule and dump file (the rest are counted in one summary finding).
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
        line,
        column,
        help,
    }
}

fn allowed(list: &[String], r: &ActiveRule) -> bool {
    list.iter()
        .any(|a| a.eq_ignore_ascii_case(&r.spec.id) || *a == r.spec.name)
}

/// Checks a scheme against the active rules.
pub fn lint_scheme(
    rules: &RuleSet,
    scheme: &Scheme,
    path: &str,
    topo: &Topology,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let nodes = topo.nodes().len().max(1);
    for r in rules.active() {
        match &r.spec.check {
            CheckKind::TagShape { flag } => {
                for k in &scheme.keys {
                    if allowed(&k.allow, r) {
                        continue;
                    }
                    let (part, later) = k.template.tag_part();
                    let hit = match flag {
                        TagFlag::Empty => part == TagPart::Empty,
                        TagFlag::Unclosed => part == TagPart::Unclosed,
                        TagFlag::IgnoredSecond => later,
                    };
                    if hit {
                        out.push(diag(
                            r,
                            path,
                            k.pos.line as u64,
                            k.pos.column as u64,
                            format!(
                                "key '{}' (`{}`): {}",
                                k.name, k.template.text, r.spec.summary
                            ),
                            None,
                        ));
                    }
                }
            }
            CheckKind::KeyLength { max } => {
                for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
                    let fixed: usize = k
                        .template
                        .segs
                        .iter()
                        .map(|s| match s {
                            Seg::Lit(l) => l.len(),
                            Seg::Var(_) => 0,
                        })
                        .sum();
                    if fixed > *max {
                        out.push(diag(
                            r,
                            path,
                            k.pos.line as u64,
                            k.pos.column as u64,
                            format!(
                                "key '{}': its fixed text alone is {fixed} bytes (over {max})",
                                k.name
                            ),
                            None,
                        ));
                    }
                }
            }
            CheckKind::KeyBytes { flag } => {
                for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
                    if bytes_hit(*flag, k.template.text.as_bytes()) {
                        out.push(diag(
                            r,
                            path,
                            k.pos.line as u64,
                            k.pos.column as u64,
                            format!(
                                "key '{}' (`{}`): {}",
                                k.name,
                                k.template.text.escape_debug(),
                                r.spec.summary
                            ),
                            None,
                        ));
                    }
                }
            }
            CheckKind::CrossSlot => {
                for b in scheme
                    .batches
                    .iter()
                    .filter(|b| b.command.is_atomic() && !allowed(&b.allow, r))
                {
                    if let Err(why) = batch_single_slot(scheme, b) {
                        // The rewrite that changes the fewest patterns: what plan weighs first.
                        let help = match single_slot_rewrites(scheme, b).first() {
                            Some(r) => format!(
                                "put its keys on one slot with the tag `{{{}}}`: {}",
                                seg_text(&r.tag),
                                r.rewrites
                                    .iter()
                                    .map(|(f, text)| format!("{}: \"{text}\"", scheme.keys[*f].name))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                            None => "no variable is shared by all its keys: give them a common hash tag, or run them as per-node pipelines (not atomic)".to_string(),
                        };
                        out.push(diag(r, path, b.pos.line as u64, b.pos.column as u64,
                            format!("batch '{}' ({}) can touch several slots and fail with CROSSSLOT: {why}", b.name, b.command.name()),
                            Some(help)));
                    }
                }
            }
            CheckKind::Fanout { min_nodes } => {
                for b in scheme
                    .batches
                    .iter()
                    .filter(|b| !b.command.is_atomic() && !allowed(&b.allow, r))
                {
                    if batch_single_slot(scheme, b).is_ok() {
                        continue;
                    }
                    let keys = b.size.unwrap_or(b.keys.len() as u64);
                    // Distinct hashed values in one batch: bounded by the cardinality of the
                    // hashed part's varying variables and by the batch size.
                    let mut distinct = keys;
                    for k in b.keys.iter().filter_map(|k| scheme.key(k)) {
                        let h = k.template.hashed();
                        let vary: Vec<&str> = seg_vars(&h)
                            .into_iter()
                            .filter(|v| !b.same.iter().any(|s| s == v))
                            .collect();
                        if let Some(c) = combined_cardinality(scheme, &vary) {
                            distinct = distinct.min(c.saturating_mul(b.keys.len() as u64));
                        }
                    }
                    let touched = (distinct as usize).min(nodes);
                    if touched >= *min_nodes {
                        out.push(diag(r, path, b.pos.line as u64, b.pos.column as u64,
                            format!("pipeline '{}' of {keys} keys touches up to {touched} of {nodes} nodes: {touched} round trips one node after another, or 1 (the slowest node's) with per-node pipelines in parallel", b.name),
                            Some("send per-node pipelines in parallel, or tag the keys on an entity the batch shares".into())));
                    }
                }
            }
            CheckKind::TagCardinality {
                min_per_node,
                max_share,
            } => {
                for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
                    let TagPart::Tagged(segs) = k.template.tag_part().0 else {
                        continue;
                    };
                    let vars = seg_vars(&segs);
                    let card = if vars.is_empty() {
                        Some(1)
                    } else {
                        combined_cardinality(scheme, &vars)
                    };
                    let Some(card) = card else { continue };
                    let share = 1.0 / card.max(1) as f64;
                    let need = super::TagRequirement {
                        min_per_node: *min_per_node,
                        max_share: *max_share,
                    };
                    if need.fails(card, nodes) {
                        out.push(diag(r, path, k.pos.line as u64, k.pos.column as u64,
                            format!(
                                "key '{}': its hash tag `{{{}}}` takes about {card} value(s), so its keys use at most {card} slot(s) on {nodes} nodes and one tag value holds ~{:.1}% of them",
                                k.name, seg_text(&segs), 100.0 * share
                            ),
                            Some(format!("tag a finer variable, or add a bucket: `{}`", bucketed(&k.template)))));
                    }
                }
            }
            CheckKind::UnusedTag => {
                for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
                    let TagPart::Tagged(segs) = k.template.tag_part().0 else {
                        continue;
                    };
                    let vars = seg_vars(&segs);
                    if vars.is_empty() {
                        continue;
                    }
                    let used = scheme.batches.iter().any(|b| {
                        b.keys.contains(&k.name)
                            && vars.iter().all(|v| b.same.iter().any(|s| s == v))
                    });
                    if !used {
                        out.push(diag(r, path, k.pos.line as u64, k.pos.column as u64,
                            format!("key '{}': no batch using it keeps {} the same, so its hash tag groups nothing", k.name,
                                vars.iter().map(|v| format!("<{v}>")).collect::<Vec<_>>().join(", ")),
                            Some(format!("drop the braces (`{}`) or declare the batch that needs them", k.template.text.replace(['{', '}'], "")))));
                    }
                }
            }
            CheckKind::NodeSkew { .. } | CheckKind::UnmatchedKey => {}
        }
    }
    super::sort(&mut out);
    out
}

fn bucketed(t: &Template) -> String {
    match t.tag_part().0 {
        TagPart::Tagged(segs) => {
            let inner = seg_text(&segs);
            t.text
                .replacen(&format!("{{{inner}}}"), &format!("{{{inner}:<bucket>}}"), 1)
        }
        _ => t.text.clone(),
    }
}

fn bytes_hit(flag: BytesFlag, key: &[u8]) -> bool {
    match flag {
        BytesFlag::Whitespace => key.iter().any(|&b| b == b' ' || b == b'\t'),
        BytesFlag::Control => key.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f),
    }
}

/// Lints keys of one dump, one at a time.
pub struct DumpLinter<'a> {
    rules: Vec<&'a ActiveRule>,
    path: String,
    topo: &'a Topology,
    /// The scheme's patterns, and per declared key, which of `rules` its `allow:` silences.
    matcher: Option<(KeyMatcher, Vec<Vec<bool>>)>,
    node_keys: Vec<u64>,
    keys: u64,
    found: Vec<Diagnostic>,
    counts: Vec<usize>,
}

impl<'a> DumpLinter<'a> {
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
        DumpLinter {
            rules,
            path: path.to_string(),
            topo,
            matcher,
            node_keys: vec![0; topo.nodes().len()],
            keys: 0,
            found: Vec::new(),
            counts: vec![0; n],
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
        self.keys += 1;
        if let Some(i) = self.topo.node_of(key) {
            self.node_keys[i] += 1;
        }
        let family = self.matcher.as_ref().map(|(m, _)| m.family(key));
        for i in 0..self.rules.len() {
            let r = self.rules[i];
            let silenced = match (&self.matcher, family) {
                (Some((_, allowed)), Some(Some(f))) => allowed[f][i],
                _ => false,
            };
            if silenced {
                continue;
            }
            match &r.spec.check {
                CheckKind::TagShape { flag } => {
                    let shape = TagShape::of(key);
                    let hit = match flag {
                        TagFlag::Empty => matches!(shape, TagShape::Empty { .. }),
                        TagFlag::Unclosed => matches!(shape, TagShape::Unclosed { .. }),
                        TagFlag::IgnoredSecond => {
                            let end = match shape {
                                TagShape::Tagged { close, .. } => Some(close + 1),
                                TagShape::Empty { open } => Some(open + 2),
                                _ => None,
                            };
                            end.is_some_and(|e| key[e..].contains(&b'{'))
                        }
                    };
                    if hit {
                        self.push(
                            i,
                            line,
                            format!("key {}: {}", display_key(key), r.spec.summary),
                            Some(crate::slot::explain(key)),
                        );
                    }
                }
                CheckKind::KeyLength { max } if key.len() > *max => {
                    let shown: Vec<u8> = key.iter().take(60).copied().collect();
                    self.push(
                        i,
                        line,
                        format!(
                            "key {}… is {} bytes (over {max})",
                            display_key(&shown),
                            key.len()
                        ),
                        None,
                    );
                }
                CheckKind::KeyBytes { flag } if bytes_hit(*flag, key) => {
                    self.push(
                        i,
                        line,
                        format!("key {}: {}", display_key(key), r.spec.summary),
                        None,
                    );
                }
                CheckKind::UnmatchedKey if family == Some(None) => {
                    self.push(
                        i,
                        line,
                        format!(
                            "key {} matches no pattern declared in the scheme",
                            display_key(key)
                        ),
                        Some("declare its pattern under `keys:`".into()),
                    );
                }
                _ => {}
            }
        }
    }

    /// The findings, with per-rule overflow summarised and dump-wide checks added.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        for i in 0..self.rules.len() {
            let r = self.rules[i];
            if let CheckKind::NodeSkew {
                max_over_mean,
                min_keys,
            } = &r.spec.check
                && self.keys >= *min_keys
                && !self.node_keys.is_empty()
            {
                let names: Vec<String> = self.topo.nodes().iter().map(|n| n.name.clone()).collect();
                let vals: Vec<f64> = self.node_keys.iter().map(|&x| x as f64).collect();
                if let Some(s) = crate::skew::skew(&vals, &names, &self.topo.nominal_shares())
                    && s.max_over_mean > *max_over_mean
                {
                    self.found.push(diag(r, &self.path, 0, 0,
                        format!("{} (over the {max_over_mean:.2}× limit)", crate::skew::describe(&s, "keys", if self.topo.ring().is_some() { "of the ring" } else { "of the slots" })),
                        Some("run `keyplan analyze` on this dump to see which pattern or tag causes it".into())));
                }
            }
            if self.counts[i] > MAX_PER_RULE {
                let d = diag(
                    r,
                    &self.path,
                    0,
                    0,
                    format!(
                        "… and {} more keys like these ({} in all)",
                        self.counts[i] - MAX_PER_RULE,
                        self.counts[i]
                    ),
                    None,
                );
                self.found.push(d);
            }
        }
        super::sort(&mut self.found);
        self.found
    }
}
