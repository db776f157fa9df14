//! What the lowerings and the engine share: positions in characters, a pipeline's commands as
//! one line, printf formats filled, and where the command table finds keys.

use super::{Position, Template};
use tree_sitter::Node;

/// A pipeline's commands as one line: in order, cut after 16 (`… and N more`; `more`: those
/// not kept).
pub(super) fn op_text(ops: &[String], more: usize) -> String {
    const SHOWN: usize = 16;
    if ops.len() <= SHOWN && more == 0 {
        return ops.join(" ");
    }
    let shown = ops.len().min(SHOWN);
    format!(
        "{} … and {} more",
        ops[..shown].join(" "),
        ops.len() - shown + more
    )
}

/// Where a node starts (1-based line, and column in characters).
pub(super) fn position(text: &str, n: Node<'_>) -> Position {
    let p = n.start_position();
    let line_start = n.start_byte() - p.column;
    Position {
        line: p.row + 1,
        column: text[line_start..n.start_byte()].chars().count() + 1,
    }
}

/// A name that reads as a list of keys (`keys`, `cache_keys`, `ids`, `names`).
pub(super) fn looks_plural(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.ends_with("keys") || n.ends_with("list") || n.ends_with("names") || n.ends_with("ids")
}

/// The command a printf-style format makes: each `%` verb takes the next argument's template
/// (`%%` is a percent sign); `None` when the verbs and arguments do not line up.
pub(super) fn printf(format: &str, mut next: impl FnMut() -> Option<Template>) -> Option<Template> {
    let mut t = Template::default();
    let mut chars = format.chars().peekable();
    let mut lit = String::new();
    while let Some(c) = chars.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            lit.push('%');
            continue;
        }
        // Flags, width, precision, then the verb letter.
        while chars
            .peek()
            .is_some_and(|c| !c.is_ascii_alphabetic() && *c != '%')
        {
            chars.next();
        }
        chars.next()?;
        t.push_lit(&std::mem::take(&mut lit));
        t.push(next()?);
    }
    t.push_lit(&lit);
    Some(t)
}

/// Which arguments (0-based, after the command name) of `cmd` are keys, the arguments given
/// by their templates (a runtime value stands for one argument); `None` when the command
/// table cannot say (an unknown command, or too few arguments written).
pub(super) fn key_positions(cmd: &str, args: impl Iterator<Item = Template>) -> Option<Vec<usize>> {
    let line: Vec<Vec<u8>> = std::iter::once(cmd.as_bytes().to_vec())
        .chain(args.map(|t| {
            if t.is_literal() {
                t.text().into_bytes()
            } else {
                b"x".to_vec()
            }
        }))
        .collect();
    table_positions(line)
}

/// Where the command table finds keys in a command line (0-based, after the name). A client
/// method may take fewer arguments than the command line has (redis-py's
/// `blmove(src, dst, timeout)` fills in the directions): the line is filled out with
/// placeholders to the command's arity, and only keys among the given arguments kept.
pub(super) fn table_positions(mut line: Vec<Vec<u8>>) -> Option<Vec<usize>> {
    let table = crate::command::table();
    let given = line.len();
    let refs = match table.keys(&line) {
        Ok(r) => r,
        Err(_) => {
            let name = String::from_utf8_lossy(line.first()?).to_ascii_lowercase();
            let arity = table.get(&name)?.arity.unsigned_abs() as usize;
            if arity <= given {
                return None;
            }
            line.resize(arity, b"x".to_vec());
            table.keys(&line).ok()?
        }
    };
    Some(
        refs.into_iter()
            .filter(|r| r.pos < given)
            .map(|r| r.pos - 1)
            .collect(),
    )
}

/// Whether `cmd` takes keys at all (`PING`, `CLUSTER …` do not).
pub(super) fn takes_keys(cmd: &str) -> bool {
    crate::command::table()
        .get(&cmd.to_ascii_lowercase())
        .is_some_and(|c| !c.specs.is_empty())
}
