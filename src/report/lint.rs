//! Renders lint findings: human (`path:line:col: KP301 [error] message`), JSON, SARIF 2.1.0
//! (GitHub code scanning) and GitHub workflow annotations.

use crate::lint::rule::Severity;
use crate::lint::{Diagnostic, RuleSet};
use serde_json::json;
use std::io::{self, Write};

/// Output formats of `lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LintFormat {
    /// `path:line:col: KP301 [error] message` and a help line
    Human,
    /// {"schema_version": 1, "diagnostics": [...], "summary": {...}}
    Json,
    /// SARIF 2.1.0 for GitHub code scanning
    Sarif,
    /// GitHub Actions workflow annotations
    Github,
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

fn location(d: &Diagnostic) -> String {
    if d.line == 0 {
        d.path.clone()
    } else {
        format!("{}:{}:{}", d.path, d.line, d.column)
    }
}

/// Writes findings in a format.
pub fn render(
    out: &mut dyn Write,
    diags: &[Diagnostic],
    rules: &RuleSet,
    format: LintFormat,
) -> io::Result<()> {
    let [e, w, i, h] = counts(diags);
    match format {
        LintFormat::Human => {
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
                writeln!(out, "no findings")?;
            } else {
                writeln!(
                    out,
                    "{} finding(s): {e} error(s), {w} warning(s), {i} info, {h} hint(s)",
                    diags.len()
                )?;
            }
        }
        LintFormat::Json => {
            let v = json!({
                "diagnostics": diags,
                "summary": {"errors": e, "warnings": w, "info": i, "hints": h},
            });
            super::json::write_document(&mut *out, super::json::LINT, &v)?;
        }
        LintFormat::Github => {
            for d in diags {
                let level = match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    _ => "notice",
                };
                let esc = |s: &str| {
                    s.replace('%', "%25")
                        .replace('\r', "%0D")
                        .replace('\n', "%0A")
                };
                let prop = |s: &str| esc(s).replace(':', "%3A").replace(',', "%2C");
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
        }
        LintFormat::Sarif => {
            let used: Vec<&crate::lint::ActiveRule> = rules.rules.iter().collect();
            let rule_index = |code: &str| used.iter().position(|r| r.spec.id == code).unwrap_or(0);
            let level = |s: Severity| match s {
                Severity::Error => "error",
                Severity::Warning => "warning",
                _ => "note",
            };
            let results: Vec<serde_json::Value> = diags
                .iter()
                .map(|d| {
                    let mut region = json!({});
                    if d.line > 0 {
                        region = json!({"startLine": d.line, "startColumn": d.column.max(1)});
                    }
                    let mut text = d.message.clone();
                    if let Some(h) = &d.help {
                        text.push_str(&format!(" (help: {h})"));
                    }
                    if d.more > 0 {
                        text.push_str(&format!(" (and {} more like this not listed)", d.more));
                    }
                    let mut loc = json!({"artifactLocation": {"uri": d.path}});
                    if d.line > 0 {
                        loc["region"] = region;
                    }
                    json!({
                        "ruleId": d.code,
                        "ruleIndex": rule_index(&d.code),
                        "level": level(d.severity),
                        "message": {"text": text},
                        "locations": [{"physicalLocation": loc}],
                    })
                })
                .collect();
            let rules_json: Vec<serde_json::Value> = used
                .iter()
                .map(|r| {
                    json!({
                        "id": r.spec.id,
                        "name": r.spec.name,
                        "shortDescription": {"text": r.spec.summary},
                        "fullDescription": {"text": r.spec.summary},
                        "help": {"text": r.spec.description, "markdown": r.spec.description},
                        "defaultConfiguration": {"level": level(r.spec.severity)},
                    })
                })
                .collect();
            let v = json!({
                "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
                "version": "2.1.0",
                "runs": [{
                    "tool": {"driver": {
                        "name": "keyplan",
                        "version": env!("CARGO_PKG_VERSION"),
                        "rules": rules_json,
                    }},
                    "results": results,
                }],
            });
            serde_json::to_writer_pretty(&mut *out, &v)?;
            writeln!(out)?;
        }
    }
    out.flush()
}
