//! One interface for every report: a typed report in, bytes in the chosen format out. The
//! commands choose the format; the renderers behind each implementation only render.

use super::TextLayout;
use super::analyze::AnalyzeView;
use crate::migrate::MigrationReport;
use crate::report::plan::PlanReport;
use std::io::{self, Write};

/// The formats a report renders in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON document (with `schema_version`).
    Json,
    /// Tables and text for a person.
    Table,
    /// A self-contained HTML page.
    Html,
}

/// A report in each of the formats.
pub trait Render {
    /// The JSON document.
    fn json(&self, out: &mut dyn Write) -> io::Result<()>;
    /// Tables and text, laid out for `layout`.
    fn table(&self, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()>;
    /// The HTML page.
    fn html(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// Writes `report` in `format`; text is fitted to `layout` (long lines wrapped).
pub fn render(
    report: &dyn Render,
    format: Format,
    out: &mut dyn Write,
    layout: &TextLayout,
) -> io::Result<()> {
    match format {
        Format::Json => report.json(out),
        Format::Table => report.table(&mut layout.writer(out), layout),
        Format::Html => report.html(out),
    }
}

impl Render for AnalyzeView<'_> {
    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        super::analyze::render_json(out, self.report)
    }
    fn table(&self, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        super::analyze::render_table(out, self.report, self.inputs, self.top, self.charts, layout)
    }
    fn html(&self, out: &mut dyn Write) -> io::Result<()> {
        super::html::render_html(out, self.report, self.inputs)
    }
}

impl Render for PlanReport {
    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        super::plan::render_json(out, self)
    }
    fn table(&self, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        super::plan::render_table(out, self, layout)
    }
    fn html(&self, out: &mut dyn Write) -> io::Result<()> {
        super::html::render_plan(out, self)
    }
}

impl Render for MigrationReport {
    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        super::migrate::render_json(out, self)
    }
    fn table(&self, out: &mut dyn Write, layout: &TextLayout) -> io::Result<()> {
        super::migrate::render_table(out, self, layout)
    }
    fn html(&self, out: &mut dyn Write) -> io::Result<()> {
        super::html::render_migration(out, self)
    }
}
