//! GitHub-flavoured Markdown: what a bot posts on a pull request or a CI job writes to its
//! summary. A report's text output becomes Markdown as it is written (see [`Markdown`]): its
//! tables are GFM tables (the layout's [`TextLayout::markdown`] makes them so), its first
//! line a heading, a line directly above a table that table's heading, and every other line a
//! line of text with Markdown's special characters escaped (keys such as `user:*` or
//! `<uid>` show as written).

use super::TextLayout;
use std::io::{self, Write};

/// Characters that mean something to Markdown (or to the HTML GitHub allows in it) anywhere
/// in a line: each is written after a backslash.
const SPECIAL: &[char] = &['\\', '`', '*', '_', '[', ']', '<', '>', '|', '~', '&'];

/// `s` with Markdown's special characters escaped: it renders as the same characters.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if SPECIAL.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Text as Markdown: what the text quotes between backticks becomes a code span (shown as
/// written), the rest is escaped. Text with an odd number of backticks is all escaped.
pub fn prose(s: &str) -> String {
    if s.matches('`').count() % 2 == 1 {
        return escape(s);
    }
    s.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("`{part}`")
            } else {
                escape(part)
            }
        })
        .collect()
}

/// A table cell's text: as [`prose`], `|` escaped even in code (GFM reads it as a column
/// break otherwise), its lines joined by `<br>`.
pub fn cell(s: &str) -> String {
    s.lines()
        .map(|l| code_pipes(&prose(l)))
        .collect::<Vec<_>>()
        .join("<br>")
}

/// `|` inside the code spans of escaped text written `\|`.
fn code_pipes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut code = false;
    let mut prev = '\0';
    for c in s.chars() {
        if c == '`' && prev != '\\' {
            code = !code;
        }
        if c == '|' && code {
            out.push('\\');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// A GFM table: a header row (empty cells when the table has none), the delimiter row, a row
/// per row; cells escaped, multi-line cells joined by `<br>`.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let columns = rows
        .iter()
        .map(Vec::len)
        .chain([header.len()])
        .max()
        .unwrap_or(0)
        .max(1);
    let line = |cells: &[String]| {
        let mut l = String::from("|");
        for i in 0..columns {
            l.push(' ');
            l.push_str(&cell(cells.get(i).map_or("", String::as_str)));
            l.push_str(" |");
        }
        l
    };
    // Columns of figures are right-aligned, as the text tables have them.
    let figure = |c: &str| {
        let c = c.trim_start_matches(['≈', '-', '+', '~']);
        c.starts_with(|ch: char| ch.is_ascii_digit())
    };
    let mut delimiter = String::from("|");
    for i in 0..columns {
        let mut cells = rows
            .iter()
            .filter_map(|r| r.get(i))
            .filter(|c| !c.is_empty() && c.as_str() != "-")
            .peekable();
        let right = cells.peek().is_some() && cells.all(|c| figure(c));
        delimiter.push_str(if right { "---:|" } else { "---|" });
    }
    let mut out = vec![line(header), delimiter];
    out.extend(rows.iter().map(|r| line(r)));
    out.join("\n")
}

/// The opening of the text a line holds, as the Markdown writer sees it.
fn is_table_line(line: &str) -> bool {
    line.starts_with('|')
}

/// A writer that turns a report's text (as its table output writes it, with tables already
/// GFM) into Markdown; see the module's documentation. Lines are held until the next shows
/// whether they head a table.
pub struct Markdown<W: Write> {
    out: W,
    /// The bytes of the line being written.
    line: Vec<u8>,
    /// A text line (and whether a blank line followed it) waiting for the next line.
    held: Option<(String, bool)>,
    /// Whether anything has been written (the first text line is the document's heading).
    started: bool,
    /// Whether the last line written was a table's.
    in_table: bool,
    /// Whether the last line written was blank (no two blank lines in a row).
    blank: bool,
}

impl<W: Write> Markdown<W> {
    /// Markdown written to `out`.
    pub fn new(out: W) -> Self {
        Markdown {
            out,
            line: Vec::new(),
            held: None,
            started: false,
            in_table: false,
            blank: true,
        }
    }

    fn put(&mut self, s: &str) -> io::Result<()> {
        let blank = s.is_empty();
        if blank && self.blank {
            return Ok(());
        }
        self.out.write_all(s.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.blank = blank;
        Ok(())
    }

    /// Writes a held line as text, or as the heading of what follows.
    fn release(&mut self, heading: bool) -> io::Result<()> {
        let Some((text, blank_after)) = self.held.take() else {
            return Ok(());
        };
        if !self.started {
            self.started = true;
            self.put(&format!("## {}", prose(text.trim())))?;
            return self.put("");
        }
        if heading {
            self.put("")?;
            self.put(&format!("#### {}", prose(text.trim())))?;
            return self.put("");
        }
        // Leading spaces (an indent Markdown would drop, or read as code from four on) are
        // kept as non-breaking spaces; a line that would start a list, quote or heading is
        // escaped; the line ends in a hard break so the report's lines stay lines.
        let indent = text.len() - text.trim_start_matches(' ').len();
        let body = prose(&text[indent..]);
        let body = match body.chars().next() {
            Some('#' | '-' | '+' | '=') => format!("\\{body}"),
            Some(c) if c.is_ascii_digit() => escape_ordinal(&body),
            _ => body,
        };
        self.put(&format!("{}{body}  ", "&nbsp;".repeat(indent)))?;
        if blank_after {
            self.put("")?;
        }
        Ok(())
    }

    fn emit(&mut self, line: String) -> io::Result<()> {
        if is_table_line(&line) {
            let heading = self.held.is_some();
            self.release(heading)?;
            if !self.in_table {
                self.put("")?;
            }
            self.in_table = true;
            self.started = true;
            return self.put(&line);
        }
        if self.in_table {
            self.in_table = false;
            self.put("")?;
        }
        if line.trim().is_empty() {
            match &mut self.held {
                Some((_, blank)) if !*blank => *blank = true,
                Some(_) => {
                    self.release(false)?;
                    self.put("")?;
                }
                None => self.put("")?,
            }
            return Ok(());
        }
        self.release(false)?;
        self.held = Some((line, false));
        Ok(())
    }
}

/// A line starting `12.` or `12)` would be a numbered list item: its mark is escaped.
fn escape_ordinal(body: &str) -> String {
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    match body[digits..].chars().next() {
        Some(c @ ('.' | ')')) => format!("{}\\{c}{}", &body[..digits], &body[digits + 1..]),
        _ => body.to_string(),
    }
}

impl<W: Write> Write for Markdown<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..i]);
            let line = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            self.emit(line)?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    /// Writes what is held: call it at the end of the document (dropping the writer does).
    fn flush(&mut self) -> io::Result<()> {
        if !self.line.is_empty() {
            let line = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            self.emit(line)?;
        }
        self.release(false)?;
        self.out.flush()
    }
}

impl<W: Write> Drop for Markdown<W> {
    fn drop(&mut self) {
        let _ = Write::flush(self);
    }
}

/// Writes, as Markdown, what `table_output` writes as a report's table output (given the
/// Markdown layout, whose tables are GFM).
pub fn from_table_output(
    out: &mut dyn Write,
    table_output: impl FnOnce(&mut dyn Write, &TextLayout) -> io::Result<()>,
) -> io::Result<()> {
    let layout = TextLayout::markdown();
    let mut md = layout.writer(&mut *out);
    table_output(&mut md, &layout)?;
    md.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> String {
        let mut buf = Vec::new();
        {
            let mut w = Markdown::new(&mut buf);
            w.write_all(text.as_bytes()).unwrap();
            w.flush().unwrap();
        }
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn the_first_line_and_a_tables_caption_become_headings() {
        let t = table(
            &["node".into(), "keys".into()],
            &[vec!["a".into(), "1".into()]],
        );
        let text = format!("keyplan analyze: 3 keys\ntopology: x\n\nNodes\n{t}\n\nVerdict: ok\n");
        assert_eq!(
            md(&text),
            "## keyplan analyze: 3 keys\n\ntopology: x  \n\n#### Nodes\n\n| node | keys |\n|---|---:|\n| a | 1 |\n\nVerdict: ok  \n"
        );
    }

    #[test]
    fn keys_and_cells_show_as_written() {
        assert_eq!(escape("user:*:<uid>_x"), r"user:\*:\<uid\>\_x");
        assert_eq!(cell("a|b\nc"), r"a\|b<br>c");
        assert_eq!(cell("tag `{a|b}` and *"), r"tag `{a\|b}` and \*");
        assert_eq!(prose("odd ` one_x"), r"odd \` one\_x");
        let text = md("title\n- not a list\n1. not a list either\n    indented *x*\n");
        assert!(text.contains("\\- not a list  \n"), "{text}");
        assert!(text.contains("1\\. not a list either  \n"), "{text}");
        assert!(
            text.contains("&nbsp;&nbsp;&nbsp;&nbsp;indented \\*x\\*  \n"),
            "{text}"
        );
    }

    #[test]
    fn a_table_without_a_header_gets_an_empty_one() {
        assert_eq!(
            table(&[], &[vec!["a".into(), "b".into()]]),
            "|  |  |\n|---|---|\n| a | b |"
        );
    }
}
