//! Rules as YAML: metadata, documentation, the check kind with its parameters,
//! and valid/invalid examples that the test suite runs.

use serde::{Deserialize, Serialize};

/// How serious a finding is (ast-grep's scale; `off` disables the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Disabled.
    Off,
    /// A hint.
    Hint,
    /// Information.
    Info,
    /// A likely problem.
    Warning,
    /// A definite problem.
    Error,
}

impl Severity {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Off => "off",
            Severity::Hint => "hint",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<Severity> {
        match s {
            "off" => Some(Severity::Off),
            "hint" => Some(Severity::Hint),
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

/// Which part of a key the `tag-shape` check looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TagFlag {
    /// `{}` first.
    Empty,
    /// `{` with no `}` after it.
    Unclosed,
    /// Another `{` after the first pair.
    IgnoredSecond,
}

/// Which bytes the `key-bytes` check looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BytesFlag {
    /// Space or tab.
    Whitespace,
    /// Other control bytes (< 0x20 except tab, and 0x7f).
    Control,
}

/// Why a rule file or a rule choice cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The file is not a rule (YAML or fields).
    #[error("{origin}: {message}")]
    Yaml {
        /// The file.
        origin: String,
        /// What is wrong, with its position.
        message: String,
    },
    /// A code that is not upper-case letters and digits.
    #[error("{origin}: id '{id}' must be upper-case letters and digits, like KP101")]
    BadId {
        /// The file.
        origin: String,
        /// The code.
        id: String,
    },
    /// A name that is not kebab-case.
    #[error("{origin}: name '{name}' must be kebab-case")]
    BadName {
        /// The file.
        origin: String,
        /// The name.
        name: String,
    },
    /// Two rules with one code or one name.
    #[error("{origin}: rule {rule} clashes with {other} from {other_origin}")]
    Clash {
        /// The file of the new rule.
        origin: String,
        /// Its code and name: `KP201 (low-cardinality-hash-tag)`.
        rule: String,
        /// The code and name of the rule already there.
        other: String,
        /// Where it came from.
        other_origin: String,
    },
    /// A rule replacing a built-in one with another kind of check.
    #[error(
        "{origin}: rule {id} replaces a built-in rule with another kind of check; give it a code of its own"
    )]
    KindChanged {
        /// The file.
        origin: String,
        /// The code.
        id: String,
    },
    /// A rule choice naming no rule.
    #[error("{choice} {code}: no rule has this code, prefix or name")]
    Unknown {
        /// Which choice named it.
        choice: RuleChoice,
        /// What it named.
        code: String,
    },
}

/// A choice of rules made for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleChoice {
    /// Only these rules run.
    Select,
    /// These rules do not run.
    Ignore,
    /// This rule's severity is overridden.
    Severity,
}

impl std::fmt::Display for RuleChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RuleChoice::Select => "rules to select:",
            RuleChoice::Ignore => "rules to ignore:",
            RuleChoice::Severity => "severity override:",
        })
    }
}

/// The check a rule runs, with its parameters. Every parameter is required: a rule file states
/// its own values, and the built-in rules' files in `rules/` are the only place keyplan's
/// defaults are written.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum CheckKind {
    /// Hash-tag shape of keys and patterns.
    TagShape {
        /// What to look for.
        flag: TagFlag,
    },
    /// Atomic batches whose keys can hash to different slots.
    CrossSlot,
    /// Pipelines touching several nodes.
    Fanout {
        /// Report from this many nodes on.
        min_nodes: usize,
    },
    /// Hash tags with too few values.
    TagCardinality {
        /// Fewest tag values per node.
        min_per_node: u64,
        /// Largest share of a pattern's data one tag value may hold.
        max_share: f64,
    },
    /// Tagged variables that no batch shares.
    UnusedTag,
    /// Node skew in a dump.
    NodeSkew {
        /// Largest busiest-node / mean ratio.
        max_over_mean: f64,
        /// Dumps with fewer keys are not judged.
        min_keys: u64,
    },
    /// One slot or one hash-tag value holding a large share of a dump's keys or bytes.
    HotSpot {
        /// Largest share of the keys (or bytes) one slot or tag value may hold.
        max_share: f64,
        /// Dumps with fewer keys are not judged.
        min_keys: u64,
    },
    /// Dump keys of a known family (a library's keys) with a known cluster hazard: one finding
    /// per dump, with the count and an example.
    KeyFamily {
        /// A regular expression a key of the family matches (over its bytes).
        pattern: String,
        /// What is wrong with that family on a cluster.
        message: String,
        /// What to do instead.
        help: String,
    },
    /// A variable whose values in a dump disagree with its declared cardinality.
    CardinalityDrift {
        /// Keys of a declared key needed before its variables are judged.
        min_keys: u64,
        /// How far off the distinct values seen may be (a factor either way).
        factor: f64,
    },
    /// Dump keys matching no declared pattern.
    UnmatchedKey,
    /// Over-long keys.
    KeyLength {
        /// Longest acceptable key in bytes.
        max: usize,
    },
    /// Whitespace or control bytes in keys.
    KeyBytes {
        /// Which bytes.
        flag: BytesFlag,
    },
    /// A script in application source sent with no declared keys (`EVALSHA sha 0 …`).
    ScriptKeys,
    /// A call in application source that sends several keys at once (`keyplan code`,
    /// `lint --code`), by its verdict and whether it is atomic.
    CodeSite {
        /// Which verdict is reported.
        verdict: SiteVerdict,
        /// Only atomic sites (`true`), only non-atomic ones (`false`), or both (absent).
        #[serde(default)]
        atomic: Option<bool>,
    },
}

/// A code site's verdict a rule reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteVerdict {
    /// Its keys can hash to different slots.
    CrossSlot,
    /// The code does not say (keys from a runtime list, a loop, a script declaring none).
    Depends,
}

/// One example of a rule: a key, or a scheme and/or keys.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Example {
    /// A key (checked as a dump key and as a pattern).
    Key(String),
    /// A scheme, keys, or both.
    Case {
        /// Scheme YAML.
        #[serde(default)]
        scheme: Option<String>,
        /// Dump keys.
        #[serde(default)]
        keys: Vec<String>,
        /// Masters of the topology (default 3).
        #[serde(default)]
        masters: Option<u16>,
        /// Application source (for code-site rules).
        #[serde(default)]
        code: Option<String>,
        /// The source's file extension (`py`, `js`, `ts`, `go`, `rb`, `java`; default `py`).
        #[serde(default)]
        language: Option<String>,
    },
}

/// Examples that must and must not be reported.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Examples {
    /// Each must produce at least one finding of the rule.
    #[serde(default)]
    pub invalid: Vec<Example>,
    /// Each must produce none.
    #[serde(default)]
    pub valid: Vec<Example>,
}

/// A rule as written in `rules/<CODE>-<name>.yml`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Stable code, e.g. `KP101`.
    pub id: String,
    /// Kebab-case name of the problem.
    pub name: String,
    /// Default severity.
    pub severity: Severity,
    /// One line.
    pub summary: String,
    /// What it does / why is this bad / example / use instead.
    pub description: String,
    /// The check.
    pub check: CheckKind,
    /// Examples the test suite runs.
    #[serde(default)]
    pub examples: Examples,
    /// Links.
    #[serde(default)]
    pub references: Vec<String>,
}

impl RuleSpec {
    /// Parses a rule file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<RuleSpec, RuleError> {
        let r: RuleSpec = serde_saphyr::from_str(text).map_err(|e| RuleError::Yaml {
            origin: origin.to_string(),
            message: crate::error::yaml_message(&e.to_string()),
        })?;
        let code_ok = r.id.len() == 5 && r.id.starts_with("KP")
            || (r.id.len() >= 3
                && r.id
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
        if !code_ok {
            return Err(RuleError::BadId {
                origin: origin.to_string(),
                id: r.id,
            });
        }
        if r.name.is_empty()
            || !r
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(RuleError::BadName {
                origin: origin.to_string(),
                name: r.name,
            });
        }
        if let CheckKind::KeyFamily { pattern, .. } = &r.check
            && let Err(e) = regex::bytes::Regex::new(pattern)
        {
            return Err(RuleError::Yaml {
                origin: origin.to_string(),
                message: format!("check.pattern is not a valid regular expression: {e}"),
            });
        }
        Ok(r)
    }
}
