//! Renders lint findings: human (`path:line:col: KP301 [error] message`), JSON, SARIF 2.1.0
//! (GitHub code scanning), GitHub workflow annotations, GitLab's Code Quality report and
//! Markdown (a pull-request comment or job summary).

use super::render::Format;
use crate::lint::rule::Severity;
use crate::lint::{Diagnostic, RuleSet};
use serde::Serialize;
use std::io::{self, Write};

/// Lint's findings, with the rules they were checked against (SARIF lists them).
pub struct LintReport<'a> {
    /// The findings, in order.
    pub diags: &'a [Diagnostic],
    /// The rules.
    pub rules: &'a RuleSet,
}

impl super::render::Render for LintReport<'_> {
    fn write(
        &self,
        format: Format,
        out: &mut dyn Write,
        _layout: &super::TextLayout,
    ) -> io::Result<()> {
        match format {
            Format::Table => human(out, self.diags)?,
            Format::Json => json(out, self.diags)?,
            Format::Github => github(out, self.diags)?,
            Format::Sarif => sarif(out, self.diags, self.rules)?,
            Format::Gitlab => gitlab(out, self.diags)?,
            Format::Markdown => markdown(out, self.diags)?,
            other => return Err(super::render::unsupported("lint", other)),
        }
        out.flush()
    }
}

fn counts(d: &[Diagnostic]) -> [usize; 4] {
    let c = |s: Severity| d.iter().filter(|x| x.severity == s).count();
    [
        c(Severity::Error),
        c(Severity::Warning),
        c(Severity::Info),
        c(Severity::Hint),
    ]
}

/// The findings by severity, each counted with the ones like it not listed, and the count of
/// those not listed.
fn totals(d: &[Diagnostic]) -> ([u64; 4], u64) {
    let c = |s: Severity| {
        d.iter()
            .filter(|x| x.severity == s)
            .map(|x| 1 + x.more)
            .sum::<u64>()
    };
    let not_listed = d.iter().map(|x| x.more).sum();
    (
        [
            c(Severity::Error),
            c(Severity::Warning),
            c(Severity::Info),
            c(Severity::Hint),
        ],
        not_listed,
    )
}

/// The summary line: every finding counted, those listed one by one and those only counted
/// (`20 finding(s)` for 60 keys flagged read as if the other 40 were fine).
fn summary(d: &[Diagnostic]) -> String {
    let ([e, w, i, h], not_listed) = totals(d);
    let total = e + w + i + h;
    let listed = match not_listed {
        0 => String::new(),
        n => format!(" ({} listed, {n} more not listed)", d.len()),
    };
    format!("{total} finding(s){listed}: {e} error(s), {w} warning(s), {i} info, {h} hint(s)")
}

fn location(d: &Diagnostic) -> String {
    if d.line == 0 {
        d.path.clone()
    } else {
        format!("{}:{}:{}", d.path, d.line, d.column)
    }
}

/// `path:line:col: KP301 [error] message`, a help line, and a summary.
fn human(out: &mut dyn Write, diags: &[Diagnostic]) -> io::Result<()> {
    for d in diags {
        writeln!(
            out,
            "{}: {} [{}] {}",
            location(d),
            d.code,
            d.severity.name(),
            d.message
        )?;
        if let Some(help) = &d.help {
            writeln!(out, "  help: {help}")?;
        }
        if d.more > 0 {
            writeln!(out, "  … and {} more like this not listed", d.more)?;
        }
    }
    if diags.is_empty() {
        writeln!(out, "no findings")
    } else {
        writeln!(out, "{}", summary(diags))
    }
}

/// `{"schema_version": …, "diagnostics": [...], "summary": {...}}`.
fn json(out: &mut dyn Write, diags: &[Diagnostic]) -> io::Result<()> {
    #[derive(Serialize)]
    struct Summary {
        errors: usize,
        hints: usize,
        info: usize,
        warnings: usize,
    }
    #[derive(Serialize)]
    struct Document<'a> {
        diagnostics: &'a [Diagnostic],
        summary: Summary,
    }
    let [errors, warnings, info, hints] = counts(diags);
    let doc = Document {
        diagnostics: diags,
        summary: Summary {
            errors,
            hints,
            info,
            warnings,
        },
    };
    super::json::write_document(&mut *out, super::json::LINT, &doc)
}

/// GitHub Actions workflow annotations: `::error file=…,line=…,col=…,title=…::message`.
fn github(out: &mut dyn Write, diags: &[Diagnostic]) -> io::Result<()> {
    let esc = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let prop = |s: &str| esc(s).replace(':', "%3A").replace(',', "%2C");
    for d in diags {
        let level = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            _ => "notice",
        };
        let mut loc = format!("file={}", prop(&d.path));
        if d.line > 0 {
            loc.push_str(&format!(",line={},col={}", d.line, d.column));
        }
        let mut msg = d.message.clone();
        if let Some(h) = &d.help {
            msg.push_str(&format!("\nhelp: {h}"));
        }
        if d.more > 0 {
            msg.push_str(&format!("\n… and {} more like this not listed", d.more));
        }
        writeln!(
            out,
            "::{level} {loc},title={}::{}",
            prop(&format!("{} {}", d.code, d.name)),
            esc(&msg)
        )?;
    }
    Ok(())
}

/// SARIF 2.1.0 for code scanning. The structures hold only what keyplan writes; their fields
/// are declared in the order they are written (alphabetical, as they always were).
mod sarif_log {
    use serde::Serialize;

    #[derive(Serialize)]
    pub struct Log<'a> {
        #[serde(rename = "$schema")]
        pub schema: &'static str,
        pub runs: [Run<'a>; 1],
        pub version: &'static str,
    }

    #[derive(Serialize)]
    pub struct Run<'a> {
        pub results: Vec<Result<'a>>,
        pub tool: Tool<'a>,
    }

    #[derive(Serialize)]
    pub struct Tool<'a> {
        pub driver: Driver<'a>,
    }

    #[derive(Serialize)]
    pub struct Driver<'a> {
        #[serde(rename = "informationUri")]
        pub information_uri: &'static str,
        pub name: &'static str,
        pub rules: Vec<Rule<'a>>,
        pub version: &'static str,
    }

    #[derive(Serialize)]
    pub struct Rule<'a> {
        #[serde(rename = "defaultConfiguration")]
        pub default_configuration: Level,
        #[serde(rename = "fullDescription")]
        pub full_description: Text<'a>,
        pub help: Help<'a>,
        pub id: &'a str,
        pub name: &'a str,
        #[serde(rename = "shortDescription")]
        pub short_description: Text<'a>,
    }

    #[derive(Serialize)]
    pub struct Level {
        pub level: &'static str,
    }

    #[derive(Serialize)]
    pub struct Text<'a> {
        pub text: std::borrow::Cow<'a, str>,
    }

    #[derive(Serialize)]
    pub struct Help<'a> {
        pub markdown: &'a str,
        pub text: &'a str,
    }

    #[derive(Serialize)]
    pub struct Result<'a> {
        pub level: &'static str,
        pub locations: [Location<'a>; 1],
        pub message: Text<'a>,
        #[serde(rename = "partialFingerprints")]
        pub partial_fingerprints: PartialFingerprints,
        /// Where else the finding's code is: the line that sends a batch opened at the result.
        #[serde(rename = "relatedLocations", skip_serializing_if = "Vec::is_empty")]
        pub related_locations: Vec<Related<'a>>,
        #[serde(rename = "ruleId")]
        pub rule_id: &'a str,
        #[serde(rename = "ruleIndex")]
        pub rule_index: usize,
    }

    /// The finding's line-free fingerprint (GitHub code scanning keeps a finding's alert
    /// across edits that move it).
    #[derive(Serialize)]
    pub struct PartialFingerprints {
        #[serde(rename = "keyplan/v1")]
        pub keyplan: String,
    }

    #[derive(Serialize)]
    pub struct Related<'a> {
        pub id: u32,
        pub message: Text<'a>,
        #[serde(rename = "physicalLocation")]
        pub physical_location: Physical<'a>,
    }

    #[derive(Serialize)]
    pub struct Location<'a> {
        #[serde(rename = "physicalLocation")]
        pub physical_location: Physical<'a>,
    }

    #[derive(Serialize)]
    pub struct Physical<'a> {
        #[serde(rename = "artifactLocation")]
        pub artifact_location: Artifact<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub region: Option<Region>,
    }

    #[derive(Serialize)]
    pub struct Artifact<'a> {
        pub uri: &'a str,
    }

    #[derive(Serialize)]
    pub struct Region {
        #[serde(rename = "startColumn")]
        pub start_column: u64,
        #[serde(rename = "startLine")]
        pub start_line: u64,
    }
}

/// SARIF 2.1.0: every rule, and a result per finding.
fn sarif(out: &mut dyn Write, diags: &[Diagnostic], rules: &RuleSet) -> io::Result<()> {
    use sarif_log::*;
    let level = |s: Severity| match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        _ => "note",
    };
    let rule_index = |code: &str| {
        rules
            .rules
            .iter()
            .position(|r| r.spec.id == code)
            .unwrap_or(0)
    };
    let results = diags
        .iter()
        .zip(fingerprints(diags))
        .map(|(d, fingerprint)| {
            let mut text = d.message.clone();
            if let Some(h) = &d.help {
                text.push_str(&format!(" (help: {h})"));
            }
            if d.more > 0 {
                text.push_str(&format!(" (and {} more like this not listed)", d.more));
            }
            Result {
                level: level(d.severity),
                locations: [Location {
                    physical_location: Physical {
                        artifact_location: Artifact { uri: &d.path },
                        region: (d.line > 0).then(|| Region {
                            start_column: d.column.max(1),
                            start_line: d.line,
                        }),
                    },
                }],
                message: Text { text: text.into() },
                partial_fingerprints: PartialFingerprints {
                    keyplan: fingerprint,
                },
                related_locations: d
                    .sent_at
                    .map(|(line, column)| Related {
                        id: 1,
                        message: Text {
                            text: "sent here".into(),
                        },
                        physical_location: Physical {
                            artifact_location: Artifact { uri: &d.path },
                            region: Some(Region {
                                start_column: column.max(1),
                                start_line: line,
                            }),
                        },
                    })
                    .into_iter()
                    .collect(),
                rule_id: &d.code,
                rule_index: rule_index(&d.code),
            }
        })
        .collect();
    let rules = rules
        .rules
        .iter()
        .map(|r| Rule {
            default_configuration: Level {
                level: level(r.spec.severity),
            },
            full_description: Text {
                text: r.spec.summary.as_str().into(),
            },
            help: Help {
                markdown: &r.spec.description,
                text: &r.spec.description,
            },
            id: &r.spec.id,
            name: &r.spec.name,
            short_description: Text {
                text: r.spec.summary.as_str().into(),
            },
        })
        .collect();
    let log = Log {
        schema: "https://json.schemastore.org/sarif-2.1.0.json",
        runs: [Run {
            results,
            tool: Tool {
                driver: Driver {
                    information_uri: INFORMATION_URI,
                    name: "keyplan",
                    rules,
                    version: env!("CARGO_PKG_VERSION"),
                },
            },
        }],
        version: "2.1.0",
    };
    serde_json::to_writer_pretty(&mut *out, &log)?;
    writeln!(out)
}

/// Each finding's fingerprint (MD5, hex) of its rule, file and message and the number of
/// earlier findings with the same three, not its line: a finding moved by an edit above it
/// keeps its fingerprint (GitLab's `fingerprint`, SARIF's `partialFingerprints`).
fn fingerprints(diags: &[Diagnostic]) -> Vec<String> {
    use md5::Digest as _;
    let mut seen: std::collections::HashMap<(&str, &str, &str), u64> =
        std::collections::HashMap::new();
    diags
        .iter()
        .map(|d| {
            let n = seen
                .entry((d.code.as_str(), d.path.as_str(), d.message.as_str()))
                .or_insert(0);
            let mut h = md5::Md5::new();
            for part in [d.code.as_bytes(), d.path.as_bytes(), d.message.as_bytes()] {
                h.update(part);
                h.update([0u8]);
            }
            h.update(n.to_le_bytes());
            *n += 1;
            h.finalize().iter().map(|b| format!("{b:02x}")).collect()
        })
        .collect()
}

/// Where SARIF readers send a user for the tool: the crate's homepage once Cargo.toml names
/// one, else its crates.io page.
const INFORMATION_URI: &str = if env!("CARGO_PKG_HOMEPAGE").is_empty() {
    "https://crates.io/crates/keyplan"
} else {
    env!("CARGO_PKG_HOMEPAGE")
};

/// GitLab's Code Quality report (the CodeClimate issue format GitLab reads): a JSON array of
/// `{description, check_name, fingerprint, severity, location: {path, lines: {begin}}}`.
///
/// The fingerprint (MD5, as GitLab's own analyzers write it) is of the rule, the file and the
/// message, and the number of earlier findings with the same three, not the line: a finding
/// moved by an edit above it stays the same finding when GitLab compares a merge request's
/// report with its target branch's.
fn gitlab(out: &mut dyn Write, diags: &[Diagnostic]) -> io::Result<()> {
    #[derive(Serialize)]
    struct Lines {
        begin: u64,
    }
    #[derive(Serialize)]
    struct Location<'a> {
        path: &'a str,
        lines: Lines,
    }
    #[derive(Serialize)]
    struct Issue<'a> {
        description: String,
        check_name: String,
        fingerprint: String,
        severity: &'static str,
        location: Location<'a>,
    }
    let fingerprints = fingerprints(diags);
    let issues: Vec<Issue> = diags
        .iter()
        .zip(fingerprints)
        .map(|(d, fingerprint)| {
            let mut description = d.message.clone();
            if let Some(help) = &d.help {
                description.push_str(&format!(" (help: {help})"));
            }
            if d.more > 0 {
                description.push_str(&format!(" (and {} more like this not listed)", d.more));
            }
            Issue {
                description,
                check_name: d.code.clone(),
                fingerprint,
                severity: match d.severity {
                    Severity::Error => "critical",
                    Severity::Warning => "major",
                    Severity::Info => "minor",
                    Severity::Hint | Severity::Off => "info",
                },
                location: Location {
                    path: &d.path,
                    // GitLab needs a line: a finding about a whole file is put on its first.
                    lines: Lines {
                        begin: d.line.max(1),
                    },
                },
            }
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &issues)?;
    writeln!(out)
}

/// At most this many findings are listed one by one in Markdown (a job summary holds 1 MiB,
/// a pull-request comment 64 KiB); the rest are counted.
const MARKDOWN_FINDINGS: usize = 100;

/// Markdown: the counts, the findings by rule, the worst finding with its help, and a table
/// of the findings (the first [`MARKDOWN_FINDINGS`]).
fn markdown(out: &mut dyn Write, diags: &[Diagnostic]) -> io::Result<()> {
    use super::markdown::{escape, prose, table};
    if diags.is_empty() {
        writeln!(out, "## keyplan lint: no findings")?;
        return Ok(());
    }
    writeln!(out, "## keyplan lint: {}\n", summary(diags))?;
    // By rule, the most severe first, then by code.
    let mut by_rule: Vec<(&str, &str, Severity, u64)> = Vec::new();
    for d in diags {
        let n = 1 + d.more;
        match by_rule.iter_mut().find(|r| r.0 == d.code) {
            Some(r) => {
                r.3 += n;
                r.2 = r.2.max(d.severity);
            }
            None => by_rule.push((&d.code, &d.name, d.severity, n)),
        }
    }
    by_rule.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    writeln!(out, "#### Findings by rule\n")?;
    let rows: Vec<Vec<String>> = by_rule
        .iter()
        .map(|(code, name, sev, n)| {
            vec![
                code.to_string(),
                name.to_string(),
                sev.name().to_string(),
                n.to_string(),
            ]
        })
        .collect();
    writeln!(
        out,
        "{}\n",
        table(
            &[
                "rule".into(),
                "name".into(),
                "severity".into(),
                "findings".into()
            ],
            &rows
        )
    )?;
    // The first of the most severe findings (they are sorted by file and line).
    let top = diags.iter().map(|d| d.severity).max();
    let worst = diags
        .iter()
        .find(|d| Some(d.severity) == top)
        .expect("invariant: diags is not empty here");
    writeln!(out, "#### Worst finding\n")?;
    writeln!(
        out,
        "**{} {}** ({}) at `{}`: {}",
        escape(&worst.code),
        escape(&worst.name),
        worst.severity.name(),
        location(worst).replace('`', "'"),
        prose(&worst.message)
    )?;
    if let Some(help) = &worst.help {
        writeln!(out, "\nhelp: {}", prose(help))?;
    }
    writeln!(out, "\n#### Findings\n")?;
    let rows: Vec<Vec<String>> = diags
        .iter()
        .take(MARKDOWN_FINDINGS)
        .map(|d| {
            let mut message = d.message.clone();
            if let Some(help) = &d.help {
                message.push_str(&format!("\nhelp: {help}"));
            }
            if d.more > 0 {
                message.push_str(&format!("\n… and {} more like this not listed", d.more));
            }
            vec![
                location(d),
                d.code.clone(),
                d.severity.name().to_string(),
                message,
            ]
        })
        .collect();
    writeln!(
        out,
        "{}",
        table(
            &[
                "location".into(),
                "rule".into(),
                "severity".into(),
                "message".into()
            ],
            &rows
        )
    )?;
    if diags.len() > MARKDOWN_FINDINGS {
        writeln!(
            out,
            "\n… and {} more finding(s) not listed here: `keyplan lint` prints them all.",
            diags.len() - MARKDOWN_FINDINGS
        )?;
    }
    Ok(())
}
