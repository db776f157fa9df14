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

/// Writes one rule's documentation. On a terminal (`layout` with a width) each paragraph is
/// one line for the writer to wrap at the width, so lines broken at the file's width do not
/// zig-zag; indented lines, list items and fenced code keep their own breaks.
pub fn render_explain(out: &mut dyn Write, r: &ActiveRule, layout: &TextLayout) -> io::Result<()> {
    writeln!(
        out,
        "{} {} [{}]\n\n{}\n",
        r.spec.id,
        r.spec.name,
        r.spec.severity.name(),
        r.spec.summary
    )?;
    let text = r.spec.description.trim_end();
    if layout.width.is_some() {
        writeln!(out, "{}", reflow(text))?;
    } else {
        writeln!(out, "{text}")?;
    }
    out.flush()
}

/// `text` with each paragraph's lines joined into one, except lines that are indented, list
/// items, headings or inside a fenced block (their breaks mean something).
pub fn reflow(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    let mut joinable = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
            out.push(line.to_string());
            joinable = false;
            continue;
        }
        let keeps_break = fenced
            || line.trim().is_empty()
            || line.starts_with([' ', '\t'])
            || t.starts_with(['-', '*', '#', '|', '>'])
            || t.split_once(". ")
                .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
        match out.last_mut() {
            Some(prev) if joinable && !keeps_break => {
                prev.push(' ');
                prev.push_str(line.trim());
            }
            _ => out.push(line.to_string()),
        }
        // A list item's or a paragraph's continuation joins it; a blank line or fence does not.
        joinable = !fenced
            && !line.trim().is_empty()
            && !line.starts_with([' ', '\t'])
            && !t.starts_with(['#', '|']);
    }
    out.join("\n")
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

#[cfg(test)]
mod tests {
    #[test]
    fn reflow_joins_paragraphs_and_keeps_code_and_lists() {
        let text = "A paragraph broken\nat the file's width.\n\n- an item\n  its example\n- another\n\n```\nMGET a\nb\n```\nEnd";
        assert_eq!(
            super::reflow(text),
            "A paragraph broken at the file's width.\n\n- an item\n  its example\n- another\n\n```\nMGET a\nb\n```\nEnd"
        );
    }
}
