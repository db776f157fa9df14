//! One interface for every report: a typed report in, bytes in the chosen format out. The
//! commands choose the format; the renderers behind each implementation only render.

use super::TextLayout;
use super::analyze::AnalyzeView;
use crate::migrate::MigrationReport;
use crate::report::plan::PlanReport;
use std::io::{self, Write};

/// Every format keyplan writes. Each report or stream writes some of them; each command
/// offers those of its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Tables and text for a person.
    Table,
    /// One JSON document (with `schema_version`).
    Json,
    /// A self-contained HTML page.
    Html,
    /// The scheme, rewritten (plan).
    Yaml,
    /// SARIF 2.1.0, for code scanning (lint).
    Sarif,
    /// GitHub Actions workflow annotations (lint).
    Github,
    /// Tab-separated lines.
    Tsv,
    /// One JSON object per line.
    Jsonl,
    /// GitHub-flavoured Markdown: a pull-request comment or a CI job summary.
    Markdown,
    /// GitLab's Code Quality report (lint).
    Gitlab,
}

/// A whole report, written in one of the formats it has.
pub trait Render {
    /// Writes the report in `format` (tables fitted to `layout`); a format the report does not
    /// have is an error (see [`unsupported`]: the commands offer only those it has).
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()>;
}

/// A report written piece by piece as the work produces it (simulate's batches, bench's
/// results, slot's keys, scan's keys): one writer per format, made by the report's
/// `…_stream` function.
///
/// `Item` is one piece; `End` what the end of the report needs.
pub trait Stream<Item: ?Sized, End: ?Sized = ()> {
    /// Writes (or holds) one piece.
    fn item(&mut self, item: &Item) -> io::Result<()>;
    /// Ends the report.
    fn finish(self: Box<Self>, end: &End) -> io::Result<()>;
}

/// The error for a format a report or stream does not have.
pub fn unsupported(what: &str, format: Format) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} has no {format:?} output"),
    )
}

/// Writes `report` in `format`; text is fitted to `layout` (long lines wrapped).
pub fn render(
    report: &dyn Render,
    format: Format,
    out: &mut dyn Write,
    layout: &TextLayout,
) -> io::Result<()> {
    match format {
        Format::Table => report.write(format, &mut layout.writer(out), layout),
        _ => report.write(format, out, layout),
    }
}

impl Render for AnalyzeView<'_> {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        match format {
            Format::Json => super::analyze::render_json(out, self.report),
            Format::Table => super::analyze::render_table(
                out,
                self.report,
                self.inputs,
                self.top,
                self.charts,
                layout,
            ),
            Format::Html => super::html::render_html(out, self.report, self.inputs),
            Format::Markdown => super::markdown::from_table_output(out, |out, layout| {
                self.write(Format::Table, out, layout)
            }),
            other => Err(unsupported("analyze", other)),
        }
    }
}

impl Render for PlanReport {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        match format {
            Format::Json => super::plan::render_json(out, self),
            Format::Table => super::plan::render_table(out, self, layout),
            Format::Html => super::html::render_plan(out, self),
            Format::Markdown => super::markdown::from_table_output(out, |out, layout| {
                super::plan::render_table(out, self, layout)
            }),
            other => Err(unsupported("plan", other)),
        }
    }
}

impl Render for MigrationReport {
    fn write(&self, format: Format, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        match format {
            Format::Json => super::migrate::render_json(out, self),
            Format::Table => super::migrate::render_table(out, self, layout),
            Format::Html => super::html::render_migration(out, self),
            Format::Markdown => super::markdown::from_table_output(out, |out, layout| {
                super::migrate::render_table(out, self, layout)
            }),
            other => Err(unsupported("a migration preview", other)),
        }
    }
}
