//! Renders `keyplan code`: the multi-key sites of a source tree with their verdicts (a table or
//! JSON, schema_version 2).

use super::TextLayout;
use super::render::{Format, Render, unsupported};
use crate::code::{CodeReport, Site, Verdict};
use serde::Serialize;
use std::io::{self, Write};

/// The JSON document's version; a field's meaning never changes within one. 2: a site's `line`
/// is where its batch is opened (the pipeline, `multi`), `send_line` where it is sent when
/// that is another line (in 1, `line` was the sending line).
pub const SCHEMA_VERSION: u32 = 2;

impl Render for CodeReport {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        match format {
            Format::Table => render_table(out, self, layout),
            Format::Json => render_json(out, self),
            Format::Yaml => render_yaml(out, &crate::code::draft::draft(self)),
            Format::Markdown => super::markdown::from_table_output(out, |out, layout| {
                // The first line becomes the report's heading, as other commands' reports
                // start.
                writeln!(out, "{}\n", heading(self))?;
                render_table(out, self, layout)
            }),
            other => Err(unsupported("code", other)),
        }
    }
}

/// The report's title: what was read and what was found.
fn heading(r: &CodeReport) -> String {
    let sites = sites(r).count();
    format!(
        "keyplan code: {sites} multi-key site(s), {} cross-slot, in {} file(s) read",
        r.cross_slot(),
        r.scanned
    )
}

fn verdict_words(v: &Verdict) -> (&'static str, &str) {
    match v {
        Verdict::CrossSlot(why) => ("cross-slot", why),
        Verdict::OneSlot(why) => ("one slot", why),
        Verdict::Depends(why) => ("depends", why),
    }
}

fn sites(r: &CodeReport) -> impl Iterator<Item = (&str, &Site)> {
    r.files
        .iter()
        .flat_map(|f| f.findings.sites.iter().map(move |s| (f.file.as_str(), s)))
}

/// Writes the sites as a table, then one summary line.
pub fn render_table(out: &mut dyn Write, r: &CodeReport, layout: &TextLayout) -> io::Result<()> {
    let mut t = layout.table();
    t.set_header(vec!["site", "op", "atomic", "verdict", "keys", "why"]);
    let mut rows = 0;
    for (file, s) in sites(r) {
        let verdict = s.verdict();
        let (word, why) = verdict_words(&verdict);
        let keys: Vec<String> = s.keys.iter().map(|k| k.text()).collect();
        let why = match fix(s, &verdict) {
            Some(f) => format!("{why}\nfix: {f}"),
            None => why.to_string(),
        };
        t.add_row(vec![
            match s.send {
                // Opened on one line, sent on a later one: `app.py:12-15`.
                Some(send) => format!("{file}:{}-{}", s.at.line, send.line),
                None => format!("{file}:{}", s.at.line),
            },
            s.op.clone(),
            if s.atomic() { "yes" } else { "no" }.to_string(),
            word.to_string(),
            keys.join("\n"),
            why,
        ]);
        rows += 1;
    }
    if rows > 0 {
        writeln!(out, "{t}")?;
    }
    let keys: usize = r.files.iter().map(|f| f.findings.keys.len()).sum();
    writeln!(
        out,
        "{} files read, {} skipped: {} keys built, {} multi-key sites, {} cross-slot",
        r.scanned,
        r.skipped.len(),
        keys,
        rows,
        r.cross_slot()
    )?;
    for s in &r.skipped {
        writeln!(out, "skipped {}: {}", s.file, s.reason)?;
    }
    out.flush()
}

#[derive(Serialize)]
struct JsonKey<'a> {
    template: String,
    file: &'a str,
    line: usize,
    column: usize,
    how: &'a str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum CrossSlot {
    Known(bool),
    Depends(&'static str),
}

#[derive(Serialize)]
struct JsonSite<'a> {
    file: &'a str,
    /// Where the batch is opened (the pipeline, `multi`, the script object call), or the call.
    line: usize,
    column: usize,
    /// Where the batch is sent (`execute()`, `exec()`, `Flush`), when another line than
    /// `line` (absent when one call opens and sends it).
    #[serde(skip_serializing_if = "Option::is_none")]
    send_line: Option<usize>,
    kind: crate::code::SiteKind,
    op: &'a str,
    atomic: bool,
    key_templates: Vec<String>,
    cross_slot: CrossSlot,
    why: &'a str,
    /// For a cross-slot or undecided site, the value to tag in each key (absent when the keys
    /// share none).
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

/// The fix a site's verdict calls for: none for one slot.
fn fix(s: &Site, v: &Verdict) -> Option<String> {
    match v {
        Verdict::OneSlot(_) => None,
        _ => s.fix(),
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema_version: u32,
    files_scanned: usize,
    keys: Vec<JsonKey<'a>>,
    sites: Vec<JsonSite<'a>>,
    skipped: &'a [crate::code::Skipped],
}

/// Writes the JSON document.
pub fn render_json(out: &mut dyn Write, r: &CodeReport) -> io::Result<()> {
    let verdicts: Vec<(&str, &Site, Verdict)> =
        sites(r).map(|(f, s)| (f, s, s.verdict())).collect();
    let doc = JsonReport {
        schema_version: SCHEMA_VERSION,
        files_scanned: r.scanned,
        keys: r
            .files
            .iter()
            .flat_map(|f| {
                f.findings.keys.iter().map(move |k| JsonKey {
                    template: k.template.text(),
                    file: &f.file,
                    line: k.at.line,
                    column: k.at.column,
                    how: &k.how,
                })
            })
            .collect(),
        sites: verdicts
            .iter()
            .map(|(file, s, v)| JsonSite {
                file,
                line: s.at.line,
                column: s.at.column,
                send_line: s.send.map(|p| p.line),
                kind: s.kind,
                op: &s.op,
                atomic: s.atomic(),
                key_templates: s.keys.iter().map(|k| k.text()).collect(),
                cross_slot: match v {
                    Verdict::CrossSlot(_) => CrossSlot::Known(true),
                    Verdict::OneSlot(_) => CrossSlot::Known(false),
                    Verdict::Depends(_) => CrossSlot::Depends("depends"),
                },
                why: verdict_words(v).1,
                fix: fix(s, v),
            })
            .collect(),
        skipped: &r.skipped,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    out.flush()
}

/// A YAML string: double-quoted, escaped as JSON escapes (which YAML reads the same).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The scheme draft as `keyplan.yaml`: keys and batches, each with a `# file:line` comment.
pub fn render_yaml(out: &mut dyn Write, d: &crate::code::draft::Draft) -> io::Result<()> {
    writeln!(
        out,
        "# A keyplan scheme drafted by `keyplan code` from the keys the code builds and the calls\n\
         # that send several at once (each with the file:line it comes from). The code does not\n\
         # say what values the variables take: set each one's kind (int, uuid, hex, word, date,\n\
         # enum with values, any) and cardinality, then\n\
         #   keyplan lint --scheme keyplan.yaml\n\
         #   keyplan plan --scheme keyplan.yaml      (hash tags for the cross-slot batches)\n\
         version: 1"
    )?;
    if !d.vars.is_empty() {
        writeln!(out, "vars:")?;
        let width = d.vars.iter().map(|v| v.name.len()).max().unwrap_or(0);
        for v in &d.vars {
            writeln!(
                out,
                "  {:width$} {{ kind: any }}  # {}",
                format!("{}:", v.name),
                v.code.join(", "),
                width = width + 1
            )?;
        }
    }
    if !d.keys.is_empty() {
        writeln!(out, "keys:")?;
        let width = d.keys.iter().map(|k| k.name.len()).max().unwrap_or(0);
        for k in &d.keys {
            let more = match k.uses {
                0 | 1 => String::new(),
                n => format!(
                    ", and {} more place{}",
                    n - 1,
                    if n == 2 { "" } else { "s" }
                ),
            };
            writeln!(
                out,
                "  {:width$} {{ pattern: {} }}  # {}{more}",
                format!("{}:", k.name),
                quoted(&k.pattern),
                k.at,
                width = width + 1
            )?;
        }
    }
    if !d.batches.is_empty() {
        writeln!(out, "batches:")?;
        for b in &d.batches {
            writeln!(out, "  # {}", b.note)?;
            let same = if b.same.is_empty() {
                String::new()
            } else {
                format!(", same: [{}]", b.same.join(", "))
            };
            writeln!(
                out,
                "  {}: {{ command: {}, keys: [{}]{same} }}",
                b.name,
                b.command,
                b.keys.join(", ")
            )?;
        }
    }
    if !d.left_out.is_empty() {
        writeln!(out, "# Left out:")?;
        for l in &d.left_out {
            writeln!(out, "#   {}", l.replace('\n', " "))?;
        }
    }
    Ok(())
}
