//! Renderers: they turn report data into bytes on a writer they are given, and do nothing else.
//!
//! JSON conventions (a versioned contract, see README "JSON output"): every document carries
//! `"schema_version"`; a key (or any byte string) is a JSON string when it is valid UTF-8 and
//! otherwise an object `{"base64": "<standard base64 of the bytes>"}`.

pub mod analyze;
pub mod bench;
pub mod code;
pub mod html;
pub mod json;
pub mod lint;
pub mod markdown;
pub mod migrate;
pub mod plan;
pub mod render;
pub mod rules;
pub mod scheme_change;
pub mod simulate;
pub mod slot;
pub mod snapshot;
pub mod verify;

use std::borrow::Cow;

pub use crate::keys::display::{ByteString, JsonBytes, display_key};

/// A table in keyplan's house style at its natural width: UTF-8 borders, no terminal-width
/// dependence (what pipes, files and `--wide` get).
pub fn new_table() -> FitTable {
    TextLayout::default().table()
}

/// Columns a narrow terminal loses first, most dispensable first (matched against the start
/// of a column's header): examples, bar charts and server-measured extras, then detail that
/// the other columns summarise.
const DISPENSABLE: &[&str] = &[
    "example",
    "keys ÷ fair share",
    "CPU µs (INFO)",
    "data (INFO)",
    "net in",
    "net out",
    "CPU %",
    "slot ranges",
    "distinct tags",
    "no expiry",
    "hottest node",
    "address",
    "ops %",
    "bytes %",
    // A key's details the key, its memory and place do without.
    "encoding",
    "ttl",
    "in file",
    "elements",
];

/// Columns of prose that a narrow terminal shows under the table instead, one line per row
/// (`▸ first column: text`), where they wrap at spaces like any prose.
const PROSE: &[&str] = &[
    "what happens",
    "explain",
    "candidate",
    "summary",
    "commands per node",
    "per node (meas)",
];

/// Columns a narrow terminal loses after the prose columns went under the table: figures
/// that the ones kept imply or that matter less.
const SECONDARY: &[&str] = &["connections", "bytes", "P50 ms", "P99 ms", "commands"];

/// A table that fits itself to a terminal when printed. At its natural width when that fits
/// (or when there is no width: pipes, files and `--wide` get the same bytes every run); else
/// without its most dispensable columns, one at a time (see `DISPENSABLE`); else with its
/// prose columns (`PROSE`) as lines under it, then without `SECONDARY` columns; else as
/// one record per row, `header: value` on lines of their own. A number, range, address or key is
/// never broken across lines.
#[derive(Debug, Clone)]
pub struct FitTable {
    table: comfy_table::Table,
    width: Option<u16>,
    /// Printed as a GitHub-flavoured Markdown table.
    markdown: bool,
    /// Columns (by header prefix) hidden only when nothing else makes the table fit: a
    /// figure the verdict rests on.
    keep: Vec<String>,
    /// Shorter headers, tried first when the table is too wide, and the line under the table
    /// that says what they stand for (empty: none needed).
    short: Option<(Vec<String>, String)>,
}

impl std::ops::Deref for FitTable {
    type Target = comfy_table::Table;
    fn deref(&self) -> &comfy_table::Table {
        &self.table
    }
}

impl std::ops::DerefMut for FitTable {
    fn deref_mut(&mut self) -> &mut comfy_table::Table {
        &mut self.table
    }
}

/// How many columns a table shows (not hidden).
fn shown_columns(t: &comfy_table::Table) -> usize {
    t.column_iter()
        .filter(|c| c.constraint() != Some(&comfy_table::ColumnConstraint::Hidden))
        .count()
}

/// The widest line of a rendered table, in characters.
fn rendered_width(t: &comfy_table::Table) -> usize {
    t.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

impl FitTable {
    /// Keeps the columns whose header starts with `name` to the last: they are hidden only
    /// when the table fits no other way (before it turns into records).
    pub fn keep_to_last(&mut self, name: &str) {
        self.keep.push(name.to_string());
    }

    /// Headers to print instead when the table is too wide for the terminal (node
    /// addresses as ports, say), before any column is dropped; `legend`, when not empty, is
    /// printed under the table then to say what they stand for. Piped output keeps the
    /// headers set with `set_header`.
    pub fn short_headers(&mut self, headers: Vec<String>, legend: String) {
        self.short = Some((headers, legend));
    }

    /// The headers, in column order.
    fn headers(&self) -> Vec<String> {
        self.table
            .header()
            .map(|h| h.cell_iter().map(comfy_table::Cell::content).collect())
            .unwrap_or_default()
    }

    /// The table as printed at `width` columns: the natural table or a narrower one, and the
    /// lines of the prose columns taken out of it; `None` when only records fit.
    fn fitted(&self, width: usize) -> Option<(comfy_table::Table, Vec<String>)> {
        let mut t = self.table.clone();
        if rendered_width(&t) <= width {
            return Some((t, Vec::new()));
        }
        let long = self.fitted_from(t.clone(), width);
        let Some((short, legend)) = &self.short else {
            return long;
        };
        // Shorter headers lose nothing (a legend says what they stand for): they are used
        // when they keep more columns than the whole headers do.
        t.set_header(short.clone());
        let Some((t, mut notes)) = self.fitted_from(t, width) else {
            return long;
        };
        if long
            .as_ref()
            .is_some_and(|(l, _)| shown_columns(l) >= shown_columns(&t))
        {
            return long;
        }
        if !legend.is_empty() {
            notes.push(legend.clone());
        }
        Some((t, notes))
    }

    /// [`FitTable::fitted`] from table `t` (the table, its headers perhaps shortened).
    fn fitted_from(
        &self,
        mut t: comfy_table::Table,
        width: usize,
    ) -> Option<(comfy_table::Table, Vec<String>)> {
        if rendered_width(&t) <= width {
            return Some((t, Vec::new()));
        }
        let headers = self.headers();
        // Hides the columns whose header starts with `name`; whether it hid any (the table is
        // measured again only then: a table of many rows costs a render each time).
        let hide = |t: &mut comfy_table::Table, name: &str| {
            let mut hid = false;
            // Never the first two columns: without them a row names nothing.
            for (i, h) in headers.iter().enumerate().skip(2) {
                if h.starts_with(name)
                    && let Some(c) = t.column_mut(i)
                {
                    c.set_constraint(comfy_table::ColumnConstraint::Hidden);
                    hid = true;
                }
            }
            hid
        };
        let kept = |name: &str| self.keep.iter().any(|k| name.starts_with(k.as_str()));
        for name in DISPENSABLE {
            if kept(name) {
                continue;
            }
            if hide(&mut t, name) && rendered_width(&t) <= width {
                return Some((t, Vec::new()));
            }
        }
        let prose: Vec<usize> = (2..headers.len())
            .filter(|&i| PROSE.contains(&headers[i].as_str()))
            .collect();
        if prose.is_empty() {
            // The kept columns go last, before the table gives way to records: after the
            // secondary ones (a nodes table at 60 columns kept `bytes` and lost the servers'
            // data figure its verdict named).
            if !self.keep.is_empty() {
                for name in SECONDARY.iter().copied().filter(|n| !kept(n)) {
                    if hide(&mut t, name) && rendered_width(&t) <= width {
                        return Some((t, Vec::new()));
                    }
                }
            }
            let mut hid = false;
            for name in &self.keep {
                hid |= hide(&mut t, name);
            }
            return (hid && rendered_width(&t) <= width).then(|| (t, Vec::new()));
        }
        for &i in &prose {
            hide(&mut t, &headers[i]);
        }
        let mut fits = rendered_width(&t) <= width;
        for name in SECONDARY
            .iter()
            .copied()
            .chain(self.keep.iter().map(String::as_str))
        {
            if fits {
                break;
            }
            if hide(&mut t, name) {
                fits = rendered_width(&t) <= width;
            }
        }
        if !fits {
            return None;
        }
        let mut notes = Vec::new();
        for row in self.table.row_iter() {
            let cells: Vec<String> = row.cell_iter().map(comfy_table::Cell::content).collect();
            let title = cells.first().map_or("", String::as_str);
            for &i in &prose {
                if let Some(text) = cells.get(i).filter(|c| !c.trim().is_empty() && *c != "-") {
                    let text = text.lines().collect::<Vec<_>>().join(" ");
                    notes.push(format!("▸ {title}: {text}"));
                }
            }
        }
        Some((t, notes))
    }

    /// One record per row: the first column's value as its title, then `header: value`
    /// (no newline after the last line, as a table has none).
    fn records(&self) -> String {
        let headers = self.headers();
        let label = headers.iter().map(|h| h.chars().count()).max().unwrap_or(0);
        let mut lines = Vec::new();
        for (n, row) in self.table.row_iter().enumerate() {
            if n > 0 {
                lines.push(String::new());
            }
            for (i, cell) in row.cell_iter().enumerate() {
                let text = cell.content();
                let head = headers.get(i).map_or("", String::as_str);
                let mut parts = text.lines();
                let first = parts.next().unwrap_or("");
                if i == 0 {
                    lines.push(format!("▸ {first}"));
                    for more in parts {
                        lines.push(format!("  {more}"));
                    }
                    continue;
                }
                // A value wraps under itself, its label's column kept clear (a prose writer
                // re-wrapping the line would fold the padding away and the label with it).
                let room = self
                    .width
                    .map_or(usize::MAX, |w| usize::from(w).saturating_sub(label + 4));
                let mut head = head;
                for part in std::iter::once(first).chain(parts) {
                    let wrapped = match part.chars().count() > room && room >= 16 {
                        true => wrap(part, room)
                            .into_iter()
                            .map(|l| l.trim_start().to_string())
                            .collect(),
                        false => vec![part.to_string()],
                    };
                    for l in wrapped {
                        lines.push(format!("  {head:<label$}  {l}"));
                        head = "";
                    }
                }
            }
        }
        lines.join("\n")
    }
}

impl std::fmt::Display for FitTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.markdown {
            let rows: Vec<Vec<String>> = self
                .table
                .row_iter()
                .map(|r| r.cell_iter().map(comfy_table::Cell::content).collect())
                .collect();
            return f.write_str(&markdown::table(&self.headers(), &rows));
        }
        let Some(width) = self.width else {
            return write!(f, "{}", self.table);
        };
        match self.fitted(usize::from(width)) {
            Some((t, notes)) if notes.is_empty() => write!(f, "{t}"),
            Some((t, notes)) => write!(f, "{t}\n{}", notes.join("\n")),
            None => f.write_str(&self.records()),
        }
    }
}

/// How text reports are laid out: at their natural width (pipes, files, `--wide`: the same
/// bytes on every run), or fitted to a terminal's width.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextLayout {
    /// The terminal's width in columns, or `None` for no limit.
    pub width: Option<u16>,
    /// Tables are GitHub-flavoured Markdown (see [`markdown`]).
    pub markdown: bool,
}

impl TextLayout {
    /// Fitted to a terminal `width` columns wide.
    pub fn fitted(width: u16) -> Self {
        TextLayout {
            width: Some(width),
            markdown: false,
        }
    }

    /// The layout of Markdown output: natural width, GFM tables.
    pub fn markdown() -> Self {
        TextLayout {
            width: None,
            markdown: true,
        }
    }

    /// A table in keyplan's house style, at its natural width without a width; with one,
    /// fitted when it is printed (see [`FitTable`]): never by breaking a cell's text.
    pub fn table(&self) -> FitTable {
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_content_arrangement(comfy_table::ContentArrangement::Disabled);
        FitTable {
            table: t,
            width: self.width,
            markdown: self.markdown,
            keep: Vec::new(),
            short: None,
        }
    }

    /// The longest key (or other identifier) shown whole in a table cell or message line.
    pub fn max_key_chars(&self) -> usize {
        match self.width {
            Some(w) => (usize::from(w) / 2).max(16),
            None => usize::MAX,
        }
    }

    /// A key as [`display_key`] writes it, shortened with `…` in the middle when it is longer
    /// than [`TextLayout::max_key_chars`].
    pub fn key<'a>(&self, key: &'a [u8]) -> Cow<'a, str> {
        match display_key(key) {
            Cow::Borrowed(s) => elide_middle(s, self.max_key_chars()),
            Cow::Owned(s) => Cow::Owned(elide_middle(&s, self.max_key_chars()).into_owned()),
        }
    }

    /// Text shortened with `…` in the middle to at most [`TextLayout::max_key_chars`].
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        elide_middle(s, self.max_key_chars())
    }

    /// A title on a line of its own: shortened with `…` in the middle only when longer than
    /// the whole line.
    pub fn line<'a>(&self, s: &'a str) -> Cow<'a, str> {
        match self.width {
            Some(w) => elide_middle(s, usize::from(w).max(16)),
            None => Cow::Borrowed(s),
        }
    }
}

impl TextLayout {
    /// `out`, with prose lines longer than the width wrapped at spaces (continued with a
    /// two-space indent) and words longer than a line shortened in the middle. Table lines
    /// pass as they are (tables fit themselves). Without a width, text passes unchanged.
    /// In the Markdown layout, the writer turns text into Markdown instead (see
    /// [`markdown::Markdown`]).
    pub fn writer<W: std::io::Write>(&self, out: W) -> Fitted<W> {
        if self.markdown {
            return Fitted::Markdown(markdown::Markdown::new(out));
        }
        Fitted::Text(FittedText {
            out,
            width: self.width.map(usize::from),
            line: Vec::new(),
        })
    }
}

/// A writer that fits prose lines to a width, or writes Markdown; see [`TextLayout::writer`].
pub enum Fitted<W: std::io::Write> {
    /// Text, fitted to a width.
    Text(FittedText<W>),
    /// Markdown.
    Markdown(markdown::Markdown<W>),
}

impl<W: std::io::Write> std::io::Write for Fitted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Fitted::Text(t) => t.write(buf),
            Fitted::Markdown(m) => m.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Fitted::Text(t) => t.flush(),
            Fitted::Markdown(m) => m.flush(),
        }
    }
}

/// Text with prose lines fitted to a width; see [`TextLayout::writer`].
pub struct FittedText<W: std::io::Write> {
    out: W,
    width: Option<usize>,
    line: Vec<u8>,
}

impl<W: std::io::Write> FittedText<W> {
    fn emit_line(&mut self) -> std::io::Result<()> {
        let Some(width) = self.width else {
            return self.out.write_all(&self.line);
        };
        let text = String::from_utf8_lossy(&self.line);
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let is_table = body.starts_with(['┌', '│', '├', '╞', '└', '╘', '═', '─']);
        if is_table || body.chars().count() <= width {
            return self.out.write_all(&self.line);
        }
        let wrapped = wrap(body, width);
        for l in &wrapped {
            self.out.write_all(l.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for FittedText<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.width.is_none() {
            return self.out.write(buf);
        }
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..=i]);
            self.emit_line()?;
            self.line.clear();
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.out.write_all(&self.line)?;
            self.line.clear();
        }
        self.out.flush()
    }
}

impl<W: std::io::Write> Drop for FittedText<W> {
    fn drop(&mut self) {
        let _ = std::io::Write::flush(self);
    }
}

/// `text` broken into lines of at most `width` characters at spaces; continuation lines are
/// indented by two spaces (and keep the text's own indent); a word longer than a line is
/// shortened in the middle.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let indent: String = text.chars().take_while(|c| *c == ' ').collect();
    let cont = format!("{indent}  ");
    let width = width.max(cont.chars().count() + 8);
    let mut lines = Vec::new();
    let mut cur = indent.clone();
    let mut cur_len = cur.chars().count();
    let mut first_word = true;
    for word in unbroken_words(text) {
        // Room on a continuation line, where a long word may well land.
        let word = elide_middle(&word, width - cont.chars().count());
        let wlen = word.chars().count();
        if !first_word && cur_len + 1 + wlen > width {
            lines.push(std::mem::replace(&mut cur, cont.clone()));
            cur_len = cont.chars().count();
            first_word = true;
        }
        if !first_word {
            cur.push(' ');
            cur_len += 1;
        }
        cur.push_str(&word);
        cur_len += wlen;
        first_word = false;
    }
    lines.push(cur);
    lines
}

/// Units a number is never parted from at a line break (`19.9 s`, `3.2 MiB`, `40 %`).
const UNITS: &[&str] = &[
    "s", "ms", "µs", "us", "ns", "min", "h", "B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB",
    "%", "×", "keys", "slots", "bytes",
];

/// The words of `text`, a number joined to the unit after it (so a wrap never parts them).
fn unbroken_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut last_was_number = false;
    for w in text.split(' ').filter(|w| !w.is_empty()) {
        let unit = w.trim_end_matches([',', ';', '.', ')', ':']);
        if last_was_number && UNITS.contains(&unit) {
            if let Some(prev) = words.last_mut() {
                prev.push(' ');
                prev.push_str(w);
            }
            last_was_number = false;
            continue;
        }
        last_was_number = w
            .trim_start_matches(['(', '~', '≈', '+', '-'])
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
            && w.chars().last().is_some_and(|c| c.is_ascii_digit());
        words.push(w.to_string());
    }
    words
}

/// `s` cut to at most `max` characters by replacing its middle with `…`.
pub fn elide_middle(s: &str, max: usize) -> Cow<'_, str> {
    let n = s.chars().count();
    if n <= max || max < 3 {
        return Cow::Borrowed(s);
    }
    let keep = max - 1;
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column kept to the last outlives every dispensable one, and goes before the table
    /// turns into records.
    #[test]
    fn a_kept_column_is_the_last_to_go() {
        let build = |keep: bool, width: u16| {
            let mut t = TextLayout::fitted(width).table();
            t.set_header(vec![
                "node",
                "slots",
                "slot ranges",
                "keys",
                "keys %",
                "CPU µs (INFO)",
                "data (INFO)",
            ]);
            for i in 0..3 {
                t.add_row(vec![
                    format!("10.0.0.{i}:6379"),
                    "5461".into(),
                    "0-5460 10923-12000 13000-14000".into(),
                    "123456".into(),
                    "33.3%".into(),
                    "123456789".into(),
                    "61.9 MiB".into(),
                ]);
            }
            if keep {
                t.keep_to_last("data (INFO)");
            }
            t.to_string()
        };
        // Dispensable order drops `data (INFO)` before `slot ranges`…
        let plain = build(false, 60);
        assert!(!plain.contains("data (INFO)"), "{plain}");
        // …unless it is kept: the ranges go, the data stays.
        let kept = build(true, 60);
        assert!(
            kept.contains("data (INFO)") && !kept.contains("slot ranges"),
            "{kept}"
        );
        assert!(kept.lines().all(|l| l.chars().count() <= 60), "{kept}");
        // Too narrow for it: it goes too, before records.
        let narrow = build(true, 44);
        assert!(
            narrow.starts_with('┌') && !narrow.contains("data (INFO)"),
            "{narrow}"
        );
    }

    /// Short headers keep a comparison a table where the whole ones turn it into records,
    /// with their legend under it; where the whole headers fit as well, they stay.
    #[test]
    fn short_headers_come_before_records() {
        let build = |width: u16| {
            let mut t = TextLayout::fitted(width).table();
            t.set_header(vec!["pattern", "127.0.0.1:30001", "127.0.0.1:30002"]);
            t.add_row(vec!["user:<int>:profile", "50.1%", "49.9%"]);
            t.short_headers(
                vec!["pattern".into(), ":30001".into(), ":30002".into()],
                "(nodes: ports of 127.0.0.1)".into(),
            );
            t.to_string()
        };
        let narrow = build(50);
        assert!(narrow.starts_with('┌'), "{narrow}");
        assert!(narrow.contains("┆ :30001 ┆"), "{narrow}");
        assert!(
            narrow.ends_with("\n(nodes: ports of 127.0.0.1)"),
            "{narrow}"
        );
        assert!(narrow.lines().all(|l| l.chars().count() <= 50), "{narrow}");
        let wide = build(70);
        assert!(
            wide.contains("127.0.0.1:30001") && !wide.contains("(nodes"),
            "{wide}"
        );
    }

    /// A record's long value wraps under itself, its label column kept clear (it was
    /// re-wrapped as prose: `candidate keep the patterns; …` with the padding gone).
    #[test]
    fn records_wrap_their_values_under_themselves() {
        let mut t = TextLayout::fitted(40).table();
        t.set_header(vec!["#", "outcome", "details"]);
        t.add_row(vec![
            "4",
            "ok, not atomic",
            "keep the patterns; send one pipeline per node, all nodes in parallel",
        ]);
        let text = t.to_string();
        assert!(!text.starts_with('┌'), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "▸ 4", "{text}");
        assert_eq!(lines[1], "  outcome  ok, not atomic", "{text}");
        assert!(lines[2].starts_with("  details  keep the"), "{text}");
        for l in &lines[3..] {
            assert!(
                l.starts_with("           ") && !l[11..].starts_with(' '),
                "{text}"
            );
        }
        assert!(lines.len() > 3, "{text}");
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{text}");
    }

    /// A kept column outlives the secondary ones too: a nodes table of a live cluster at 60
    /// columns lost `data (INFO)` (the verdict's figure) and kept `bytes`.
    #[test]
    fn a_kept_column_outlives_secondary_ones() {
        let build = |keep: bool| {
            let mut t = TextLayout::fitted(60).table();
            t.set_header(vec![
                "node",
                "slots",
                "slot ranges",
                "keys",
                "keys %",
                "bytes",
                "bytes %",
                "data (INFO)",
            ]);
            for i in 0..3 {
                t.add_row(vec![
                    format!("127.0.0.1:740{i}"),
                    "5461".into(),
                    "10923-16383".into(),
                    "2045".into(),
                    "34.0%".into(),
                    "232.4 KiB".into(),
                    "0.5%".into(),
                    "493.5 KiB".into(),
                ]);
            }
            if keep {
                t.keep_to_last("data (INFO)");
            }
            t.to_string()
        };
        let kept = build(true);
        assert!(
            kept.starts_with('┌') && kept.contains("data (INFO)") && !kept.contains("┆ bytes"),
            "{kept}"
        );
        assert!(kept.lines().all(|l| l.chars().count() <= 60), "{kept}");
        // Not kept, the dispensable order is as it was.
        let plain = build(false);
        assert!(!plain.contains("data (INFO)"), "{plain}");
    }

    #[test]
    fn elides_in_the_middle() {
        assert_eq!(elide_middle("abcdefghij", 20), "abcdefghij");
        assert_eq!(elide_middle("abcdefghij", 5), "ab…ij");
        assert_eq!(elide_middle("abcdefghij", 6), "abc…ij");
        assert_eq!(elide_middle("ключключключ", 5).chars().count(), 5);
        let layout = TextLayout::fitted(40);
        assert_eq!(layout.key(&[b'k'; 100]).chars().count(), 20);
        assert_eq!(TextLayout::default().key(&[b'k'; 100]).len(), 100);
    }

    #[test]
    fn a_number_keeps_its_unit_across_a_wrap() {
        let text = "the move takes about 19.9 s at 20 MB/s and moves 3.2 MiB of the sample";
        for width in 20..text.len() {
            for line in wrap(text, width) {
                let line = line.trim();
                assert!(
                    !line.starts_with("s ") && !line.starts_with("MiB") && !line.ends_with("19.9"),
                    "width {width}: {line:?}"
                );
                assert!(!line.ends_with(" 3.2"), "width {width}: {line:?}");
            }
        }
        assert_eq!(wrap("a 19.9 s", 80), vec!["a 19.9 s"]);
    }

    #[test]
    fn wraps_prose_and_passes_tables() {
        use std::io::Write as _;
        let mut buf = Vec::new();
        {
            let mut w = TextLayout::fitted(20).writer(&mut buf);
            write!(
                w,
                "short line\nthis line is far too long to fit\n│ a table row that is long │\n"
            )
            .unwrap();
            writeln!(w, "{}", "k".repeat(50)).unwrap();
        }
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(
            text,
            "short line\nthis line is far too\n  long to fit\n│ a table row that is long │\nkkkkkkkkk…kkkkkkkk\n"
        );
        for l in text.lines().filter(|l| !l.starts_with('│')) {
            assert!(l.chars().count() <= 20, "{l}");
        }
        let mut buf = Vec::new();
        TextLayout::default()
            .writer(&mut buf)
            .write_all(b"this line is far too long to fit\n")
            .unwrap();
        assert_eq!(buf, b"this line is far too long to fit\n");
    }
}
