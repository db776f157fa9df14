//! The scheme file with recommended rewrites applied, edited in place so comments, order and
//! style survive: key patterns replaced where they are written, bucket variables added under
//! `vars:`, `allow:` added to batches that fan out on purpose.

use super::{BatchPlan, NewVar};
use crate::scheme::Scheme;

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Byte offset of 1-based (line, column) in `text`.
fn offset(text: &str, line: u32, column: u32) -> Option<usize> {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line as usize {
            let col = (column as usize).saturating_sub(1);
            return l
                .char_indices()
                .nth(col)
                .map(|(b, _)| off + b)
                .or(Some(off + l.len()));
        }
        off += l.len();
    }
    None
}

/// The scalar starting at `at` (quoted or plain): its byte range.
fn scalar_at(text: &str, at: usize) -> (usize, usize) {
    let rest = &text[at..];
    let bytes = rest.as_bytes();
    match bytes.first() {
        Some(&q @ (b'"' | b'\'')) => {
            let mut i = 1;
            while i < bytes.len() {
                if bytes[i] == b'\\' && q == b'"' {
                    i += 2;
                    continue;
                }
                if bytes[i] == q {
                    if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return (at, at + i + 1);
                }
                i += 1;
            }
            (at, text.len())
        }
        _ => {
            // Plain scalar: up to `,` or `}` in flow style, or the end of the line / a comment.
            let end = rest
                .find(['\n', ',', '}'])
                .map(|e| {
                    let c = rest[..e].find(" #").unwrap_or(e);
                    c.min(e)
                })
                .unwrap_or(rest.len());
            (at, at + rest[..end].trim_end().len())
        }
    }
}

/// Why the scheme text could not be edited.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct EditError(pub String);

/// `text` (the scheme's source) with the recommended candidates of `plans` applied.
pub fn apply(text: &str, scheme: &Scheme, plans: &[BatchPlan]) -> Result<String, EditError> {
    // Edits as (start, end, replacement), applied back to front.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut new_vars: Vec<&NewVar> = Vec::new();
    let mut done_keys: Vec<&str> = Vec::new();
    for p in plans {
        let c = &p.candidates[p.recommended];
        for r in &c.rewrites {
            if done_keys.contains(&r.key.as_str()) {
                continue;
            }
            done_keys.push(&r.key);
            let k = scheme
                .key(&r.key)
                .ok_or_else(|| EditError(format!("key '{}' is not in the scheme", r.key)))?;
            let at = offset(text, k.pos.line, k.pos.column).ok_or_else(|| {
                EditError(format!(
                    "cannot find the pattern of key '{}' in the file",
                    r.key
                ))
            })?;
            let (a, b) = scalar_at(text, at);
            edits.push((a, b, quote(&r.to)));
        }
        for v in &c.new_vars {
            if !new_vars.iter().any(|x| x.name == v.name) {
                new_vars.push(v);
            }
        }
        if !c.add_same.is_empty() {
            let b = scheme
                .batches
                .iter()
                .find(|b| b.name == p.batch)
                .ok_or_else(|| EditError(format!("batch '{}' is not in the scheme", p.batch)))?;
            let add: Vec<&String> = c.add_same.iter().filter(|v| !b.same.contains(v)).collect();
            if !add.is_empty() {
                edits.push(same_edit(
                    text,
                    b.pos.line,
                    b.pos.column,
                    &add,
                    !b.same.is_empty(),
                )?);
            }
        }
        if !c.allow.is_empty() {
            let b = scheme
                .batches
                .iter()
                .find(|b| b.name == p.batch)
                .ok_or_else(|| EditError(format!("batch '{}' is not in the scheme", p.batch)))?;
            let missing: Vec<&String> = c
                .allow
                .iter()
                .filter(|a| !b.allow.iter().any(|x| x.eq_ignore_ascii_case(a)))
                .collect();
            if !missing.is_empty() {
                edits.push(allow_edit(
                    text,
                    b.pos.line,
                    b.pos.column,
                    &missing,
                    &c.summary,
                    !b.allow.is_empty(),
                )?);
            }
        }
    }
    if !new_vars.is_empty() {
        edits.push(vars_edit(text, &new_vars)?);
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (a, b, r) in edits {
        out.replace_range(a..b, &r);
    }
    Ok(out)
}

/// Adds `allow: [codes]` (and a reason) to the batch whose mapping starts at (line, column).
fn allow_edit(
    text: &str,
    line: u32,
    column: u32,
    codes: &[&String],
    why: &str,
    has_allow: bool,
) -> Result<(usize, usize, String), EditError> {
    let at = offset(text, line, column)
        .ok_or_else(|| EditError(format!("cannot find the batch at line {line}")))?;
    let list = codes
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let reason = quote(&format!("keyplan plan: {why}"));
    let line_end = text[at..].find('\n').map(|e| at + e).unwrap_or(text.len());
    let this_line = &text[at..line_end];
    if has_allow {
        // Put the codes first in the existing list.
        if let Some(i) = text[at..].find("allow:") {
            let lb = at
                + i
                + text[at + i..].find('[').ok_or_else(|| {
                    EditError(format!("line {line}: the batch's `allow:` is not a [list]"))
                })?;
            return Ok((lb + 1, lb + 1, format!("{list}, ")));
        }
    }
    if this_line.trim_start().starts_with('{') {
        // Flow mapping on one line: insert before its closing brace.
        let close = this_line.rfind('}').ok_or_else(|| {
            EditError(format!(
                "line {line}: the batch's mapping does not close on its line"
            ))
        })?;
        let pos = at + close;
        let before = text[..pos].trim_end().len();
        return Ok((before, pos, format!(", allow: [{list}], reason: {reason} ")));
    }
    // Block mapping: a new line at the indentation of its first field.
    let indent: String = text[..at]
        .rsplit('\n')
        .next()
        .unwrap_or("")
        .chars()
        .take_while(|c| *c == ' ')
        .collect();
    let indent = if this_line.trim().is_empty() || !indent.is_empty() {
        indent
    } else {
        "    ".into()
    };
    let start_of_line = text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
    Ok((
        start_of_line,
        start_of_line,
        format!("{indent}allow: [{list}]\n{indent}reason: {reason}\n"),
    ))
}

/// Adds variables to the `same:` list of the batch whose mapping starts at (line, column).
fn same_edit(
    text: &str,
    line: u32,
    column: u32,
    vars: &[&String],
    has_same: bool,
) -> Result<(usize, usize, String), EditError> {
    let at = offset(text, line, column)
        .ok_or_else(|| EditError(format!("cannot find the batch at line {line}")))?;
    let list = vars
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let line_end = text[at..].find('\n').map(|e| at + e).unwrap_or(text.len());
    let this_line = &text[at..line_end];
    if has_same {
        let i = text[at..]
            .find("same:")
            .ok_or_else(|| EditError(format!("line {line}: cannot find the batch's `same:`")))?;
        let rest = &text[at + i..];
        let open = rest
            .find('[')
            .filter(|&o| !rest[..o].contains('\n'))
            .ok_or_else(|| {
                EditError(format!(
                    "line {line}: the batch's `same:` is not a [list] on one line"
                ))
            })?;
        let close = rest[open..].find(']').ok_or_else(|| {
            EditError(format!(
                "line {line}: the batch's `same:` list does not close"
            ))
        })?;
        let pos = at + i + open + close;
        return Ok((pos, pos, format!(", {list}")));
    }
    if this_line.trim_start().starts_with('{') {
        let close = this_line.rfind('}').ok_or_else(|| {
            EditError(format!(
                "line {line}: the batch's mapping does not close on its line"
            ))
        })?;
        let pos = at + close;
        let before = text[..pos].trim_end().len();
        return Ok((before, pos, format!(", same: [{list}] ")));
    }
    let indent: String = text[..at]
        .rsplit('\n')
        .next()
        .unwrap_or("")
        .chars()
        .take_while(|c| *c == ' ')
        .collect();
    let start_of_line = text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
    Ok((
        start_of_line,
        start_of_line,
        format!("{indent}same: [{list}]\n"),
    ))
}

/// Adds the bucket variables as the first entries under `vars:`.
fn vars_edit(text: &str, vars: &[&NewVar]) -> Result<(usize, usize, String), EditError> {
    let mut off = 0;
    for l in text.split_inclusive('\n') {
        let t = l.trim_end();
        if let Some(after) = t.strip_prefix("vars:") {
            let after = after.trim();
            if !after.is_empty() && !after.starts_with('#') {
                return Err(EditError(
                    "`vars:` is written in flow style; add the bucket variable by hand".into(),
                ));
            }
            // Indentation of the next non-blank line.
            let next = text[off + l.len()..]
                .lines()
                .find(|x| !x.trim().is_empty())
                .unwrap_or("  x");
            let indent: String = next.chars().take_while(|c| *c == ' ').collect();
            let indent = if indent.is_empty() {
                "  ".into()
            } else {
                indent
            };
            let lines: String = vars
                .iter()
                .map(|v| {
                    format!(
                        "{indent}{}: {{ kind: int, cardinality: {} }}  # {}\n",
                        v.name, v.cardinality, v.derive
                    )
                })
                .collect();
            let at = off + l.len();
            return Ok((at, at, lines));
        }
        off += l.len();
    }
    Err(EditError("the scheme has no `vars:` section".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars() {
        let t = "a: { pattern: \"x:{<id>}\", bytes: 3 }\nb: { pattern: y:<id> }\n";
        let at = t.find('"').unwrap();
        assert_eq!(&t[scalar_at(t, at).0..scalar_at(t, at).1], "\"x:{<id>}\"");
        let at = t.find("y:").unwrap();
        let (a, b) = scalar_at(t, at);
        assert_eq!(&t[a..b], "y:<id>");
        assert_eq!(offset("ab\ncd\n", 2, 2), Some(4));
    }
}
