//! Renders `keyplan rules`: the list of rules, one rule's documentation, and the outcome of
//! running the rules' examples.

use super::TextLayout;
use crate::lint::{ActiveRule, ExampleOutcome, RuleSet};
use std::io::{self, Write};

/// Writes the rules as a table.
pub fn render_list(out: &mut dyn Write, set: &RuleSet, layout: &TextLayout) -> io::Result<()> {
    let mut t = layout.table();
    t.set_header(vec!["code", "name", "severity", "summary"]);
    for r in &set.rules {
        t.add_row(vec![
            r.spec.id.clone(),
            r.spec.name.clone(),
            r.spec.severity.name().to_string(),
            r.spec.summary.clone(),
        ]);
    }
    writeln!(out, "{t}")?;
    out.flush()
}

/// Writes one rule's documentation.
pub fn render_explain(out: &mut dyn Write, r: &ActiveRule) -> io::Result<()> {
    writeln!(
        out,
        "{} {} [{}]\n\n{}\n",
        r.spec.id,
        r.spec.name,
        r.spec.severity.name(),
        r.spec.summary
    )?;
    writeln!(out, "{}", r.spec.description.trim_end())?;
    out.flush()
}

/// Writes each rule's example outcome and a summary line.
pub fn render_tests(
    out: &mut dyn Write,
    results: &[(&ActiveRule, ExampleOutcome)],
) -> io::Result<()> {
    let mut failed = 0;
    for (r, outcome) in results {
        let text = match outcome {
            ExampleOutcome::Validated => "ok".to_string(),
            ExampleOutcome::Noisy(e) => format!("NOISY: a valid example is reported: {e}"),
            ExampleOutcome::Missing(e) => {
                format!("MISSING: an invalid example is not reported: {e}")
            }
            ExampleOutcome::Broken(e) => format!("BROKEN: {e}"),
        };
        if *outcome != ExampleOutcome::Validated {
            failed += 1;
        }
        writeln!(out, "{} {} ({}): {text}", r.spec.id, r.spec.name, r.origin)?;
    }
    writeln!(out, "{} rules, {failed} failed", results.len())?;
    out.flush()
}
