//! `lint`: rules (YAML, `rules/`) checked against a key scheme and key dumps.
//!
//! Rule logic lives in a few check kinds ([`rule::CheckKind`]); a rule picks one and sets its
//! parameters, so a new rule of an existing kind is one YAML file. Findings are
//! [`Diagnostic`]s, sorted deterministically.

pub mod builtin;
pub(crate) mod checks;
pub mod rule;

pub use checks::{DumpLinter, LintSink, Shared, finish_sinks, lint_code, lint_scheme};
pub use rule::{RuleChoice, RuleError};
use rule::{RuleSpec, Severity};
use serde::Serialize;

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    // Fields in alphabetical order: JSON writes them in this order.
    /// Rule code, e.g. `KP301`.
    pub code: String,
    /// 1-based column.
    pub column: u64,
    /// What to do instead.
    pub help: Option<String>,
    /// 1-based line (0 when the finding is about the whole file).
    pub line: u64,
    /// What is wrong, naming the subject.
    pub message: String,
    /// Findings of the same rule in the same file not listed (the first ones are, up to a
    /// cap): said after this one, the last listed (JSON `more_like_this`, absent when 0).
    #[serde(rename = "more_like_this", skip_serializing_if = "is_zero")]
    pub more: u64,
    /// Rule name, e.g. `cross-slot-batch`.
    pub name: String,
    /// The file it is in.
    pub path: String,
    /// Effective severity.
    pub severity: Severity,
    /// Where what the finding is about continues, when on another line (line, column): the
    /// line that sends a batch opened at `line`. SARIF gives it as a related location; the
    /// JSON document leaves it out.
    #[serde(skip)]
    pub sent_at: Option<(u64, u64)>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A rule with its effective severity.
#[derive(Debug, Clone)]
pub struct ActiveRule {
    /// The rule.
    pub spec: RuleSpec,
    /// Severity after overrides.
    pub severity: Severity,
    /// Where it came from (`builtin` or a file path).
    pub origin: String,
}

/// Where built-in rules say they come from.
const BUILTIN_ORIGIN: &str = "rules/";

/// The rules in force.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// All known rules, in code order.
    pub rules: Vec<ActiveRule>,
}

impl RuleSet {
    /// The built-in rules.
    pub fn builtin() -> Result<RuleSet, RuleError> {
        let mut set = RuleSet::default();
        for (file, text) in builtin::BUILTIN {
            set.add(
                RuleSpec::parse(text, file)?,
                format!("{BUILTIN_ORIGIN}{file}"),
            )?;
        }
        Ok(set)
    }

    /// Adds a rule; codes and names must be unique.
    pub fn add(&mut self, spec: RuleSpec, origin: String) -> Result<(), RuleError> {
        if let Some(r) = self
            .rules
            .iter()
            .find(|r| r.spec.id == spec.id || r.spec.name == spec.name)
        {
            return Err(RuleError::Clash {
                origin,
                rule: format!("{} ({})", spec.id, spec.name),
                other: format!("{} ({})", r.spec.id, r.spec.name),
                other_origin: r.origin.clone(),
            });
        }
        let severity = spec.severity;
        self.rules.push(ActiveRule {
            spec,
            severity,
            origin,
        });
        self.rules.sort_by(|a, b| a.spec.id.cmp(&b.spec.id));
        Ok(())
    }

    /// Loads every `*.yml` / `*.yaml` rule in a directory (sorted by file name). A rule with
    /// the code and name of a built-in rule replaces it (other thresholds, another severity,
    /// its own documentation), as long as it runs the same kind of check.
    pub fn load_dir(&mut self, files: &[(String, String)]) -> Result<(), RuleError> {
        for (path, text) in files {
            let spec = RuleSpec::parse(text, path)?;
            if let Some(i) = self.rules.iter().position(|r| {
                r.origin.starts_with(BUILTIN_ORIGIN)
                    && r.spec.id == spec.id
                    && r.spec.name == spec.name
            }) {
                let old = &self.rules[i].spec.check;
                if std::mem::discriminant(old) != std::mem::discriminant(&spec.check) {
                    return Err(RuleError::KindChanged {
                        origin: path.clone(),
                        id: spec.id,
                    });
                }
                self.rules.remove(i);
            }
            self.add(spec, path.clone())?;
        }
        Ok(())
    }

    /// The rule with this code (any case) or name.
    pub fn rule(&self, code: &str) -> Option<&ActiveRule> {
        self.find(code).map(|i| &self.rules[i])
    }

    fn find(&self, code: &str) -> Option<usize> {
        self.rules
            .iter()
            .position(|r| r.spec.id.eq_ignore_ascii_case(code) || r.spec.name == code)
    }

    /// Keeps only the rules named (codes, code prefixes like `KP3`, or names).
    pub fn select(&mut self, codes: &[String]) -> Result<(), RuleError> {
        for c in codes {
            if !self.rules.iter().any(|r| matches_code(r, c)) {
                return Err(RuleError::Unknown {
                    choice: RuleChoice::Select,
                    code: c.clone(),
                });
            }
        }
        for r in &mut self.rules {
            if !codes.iter().any(|c| matches_code(r, c)) {
                r.severity = Severity::Off;
            }
        }
        Ok(())
    }

    /// Turns the rules named off.
    pub fn ignore(&mut self, codes: &[String]) -> Result<(), RuleError> {
        for c in codes {
            let mut hit = false;
            for r in &mut self.rules {
                if matches_code(r, c) {
                    r.severity = Severity::Off;
                    hit = true;
                }
            }
            if !hit {
                return Err(RuleError::Unknown {
                    choice: RuleChoice::Ignore,
                    code: c.clone(),
                });
            }
        }
        Ok(())
    }

    /// Overrides one rule's severity.
    pub fn set_severity(&mut self, code: &str, severity: Severity) -> Result<(), RuleError> {
        let i = self.find(code).ok_or_else(|| RuleError::Unknown {
            choice: RuleChoice::Severity,
            code: format!("{code}=…"),
        })?;
        self.rules[i].severity = severity;
        Ok(())
    }

    /// Rules that are on.
    pub fn active(&self) -> impl Iterator<Item = &ActiveRule> {
        self.rules.iter().filter(|r| r.severity != Severity::Off)
    }

    /// The codes and names of the active tag-cardinality rules (KP201 and any of the user's):
    /// what an `allow:` must name to accept a crowded tag.
    pub fn tag_rules(&self) -> Vec<(String, String)> {
        self.active()
            .filter(|r| matches!(r.spec.check, rule::CheckKind::TagCardinality { .. }))
            .map(|r| (r.spec.id.clone(), r.spec.name.clone()))
            .collect()
    }

    /// What a hash tag must meet to lint clean under the active tag-cardinality rules (KP201
    /// and any of the user's), or `None` when none is active. `plan` aims its rewrites at this,
    /// so a recommendation lints clean under the same rules and parameters.
    pub fn tag_requirement(&self) -> Option<TagRequirement> {
        self.active()
            .filter_map(|r| match r.spec.check {
                rule::CheckKind::TagCardinality {
                    min_per_node,
                    max_share,
                } => Some(TagRequirement {
                    min_per_node,
                    max_share,
                }),
                _ => None,
            })
            .reduce(|a, b| TagRequirement {
                min_per_node: a.min_per_node.max(b.min_per_node),
                max_share: a.max_share.min(b.max_share),
            })
    }
}

/// The parameters of a tag-cardinality rule: how many values a hash tag needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TagRequirement {
    /// Fewest tag values per node.
    pub min_per_node: u64,
    /// Largest share of a pattern's keys one tag value may hold.
    pub max_share: f64,
}

impl TagRequirement {
    /// Whether a tag of `values` values on `nodes` nodes fails the rule.
    pub fn fails(&self, values: u64, nodes: usize) -> bool {
        let share = 1.0 / values.max(1) as f64;
        values < self.min_per_node.saturating_mul(nodes as u64) || share > self.max_share
    }

    /// The fewest values a tag needs on `nodes` nodes to pass.
    pub fn values_needed(&self, nodes: usize) -> u64 {
        let by_share = if self.max_share > 0.0 {
            (1.0 / self.max_share).ceil().min(u64::MAX as f64) as u64
        } else {
            u64::MAX
        };
        let mut n = self
            .min_per_node
            .saturating_mul(nodes as u64)
            .max(by_share)
            .max(1);
        while n < u64::MAX && self.fails(n, nodes) {
            n += 1;
        }
        n
    }
}

fn matches_code(r: &ActiveRule, c: &str) -> bool {
    r.spec
        .id
        .to_ascii_uppercase()
        .starts_with(&c.to_ascii_uppercase())
        || r.spec.name == c
}

/// Sorts diagnostics: by path, line, column, code, message.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        (&a.path, a.line, a.column, &a.code, &a.message)
            .cmp(&(&b.path, b.line, b.column, &b.code, &b.message))
    });
}

/// Outcome of running one rule's examples (ast-grep `sg test` semantics).
#[derive(Debug, Clone, PartialEq)]
pub enum ExampleOutcome {
    /// Every invalid example is reported and no valid one is.
    Validated,
    /// A valid example was reported.
    Noisy(String),
    /// An invalid example was not reported.
    Missing(String),
    /// An example could not be run.
    Broken(String),
}

/// Runs a rule's examples.
pub fn check_examples(spec: &RuleSpec) -> ExampleOutcome {
    use crate::scheme::Scheme;
    use crate::topology::{SlotMap, Topology};
    let mut set = RuleSet::default();
    if set.add(spec.clone(), "example".into()).is_err() {
        return ExampleOutcome::Broken("rule".into());
    }
    let run = |ex: &rule::Example| -> Result<usize, String> {
        let (scheme_text, keys, masters): (Option<String>, Vec<String>, u16) = match ex {
            rule::Example::Key(k) => (None, vec![k.clone()], 3),
            rule::Example::Case {
                scheme,
                keys,
                masters,
                ..
            } => (scheme.clone(), keys.clone(), masters.unwrap_or(3)),
        };
        if let rule::Example::Case {
            code: Some(code),
            language,
            ..
        } = ex
        {
            let ext = language.as_deref().unwrap_or("py");
            let lang = crate::code::Language::of_extension(ext)
                .ok_or_else(|| format!("no language with the extension .{ext}"))?;
            let file = format!("example.{ext}");
            let findings = crate::code::scan::scan_one(lang, &file, code, &[])?;
            let report = crate::code::CodeReport {
                files: vec![crate::code::FileReport { file, findings }],
                skipped: Vec::new(),
                scanned: 1,
            };
            return Ok(checks::lint_code(&set, &report, &|_| Some(code.clone())).len());
        }
        let topo =
            Topology::Cluster(SlotMap::from_masters(masters as usize).map_err(|e| e.to_string())?);
        let scheme = match &scheme_text {
            Some(t) => Some(Scheme::parse(t).map_err(|e| e.to_string())?),
            None => None,
        };
        let mut n = 0;
        if let Some(s) = &scheme {
            n += lint_scheme(&set, s, "example.yaml", &topo).len();
        }
        if !keys.is_empty() {
            let mut d = DumpLinter::new(&set, scheme.as_ref(), &topo, "example.keys");
            // A key, or `key<TAB>bytes[<TAB>ops]` as in a tsv dump (when the second field is a
            // number; else the TAB is part of the key).
            for (i, k) in keys.iter().enumerate() {
                let mut f = k.split('\t');
                let key = f.next().unwrap_or_default();
                match f.next().map(str::parse::<u64>) {
                    Some(Ok(bytes)) => {
                        let ops = f.next().and_then(|o| o.parse().ok());
                        d.record(i as u64 + 1, key.as_bytes(), Some(bytes), ops);
                    }
                    _ => d.key(i as u64 + 1, k.as_bytes()),
                }
            }
            n += d.finish().len();
        }
        Ok(n)
    };
    for ex in &spec.examples.invalid {
        match run(ex) {
            Ok(0) => return ExampleOutcome::Missing(format!("{ex:?}")),
            Ok(_) => {}
            Err(e) => return ExampleOutcome::Broken(e),
        }
    }
    for ex in &spec.examples.valid {
        match run(ex) {
            Ok(0) => {}
            Ok(_) => return ExampleOutcome::Noisy(format!("{ex:?}")),
            Err(e) => return ExampleOutcome::Broken(e),
        }
    }
    ExampleOutcome::Validated
}
