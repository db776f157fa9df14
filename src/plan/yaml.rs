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
    let mut allowed_keys: Vec<&str> = Vec::new();
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
        for ka in &c.key_allow {
            let k = scheme
                .key(&ka.key)
                .ok_or_else(|| EditError(format!("key '{}' is not in the scheme", ka.key)))?;
            let missing = not_allowed(&ka.rules, &k.allow);
            if !missing.is_empty() && !allowed_keys.contains(&ka.key.as_str()) {
                allowed_keys.push(&ka.key);
                let reason = format!(
                    "keyplan plan: batch {} runs on one slot through this tag on purpose ({})",
                    p.batch, c.summary
                );
                edits.push(allow_edit(text, k.decl, &missing, &k.allow, &reason)?);
            }
        }
        if !c.add_same.is_empty() || !c.allow.is_empty() {
            let b = scheme
                .batches
                .iter()
                .find(|b| b.name == p.batch)
                .ok_or_else(|| EditError(format!("batch '{}' is not in the scheme", p.batch)))?;
            let add: Vec<&String> = c.add_same.iter().filter(|v| !b.same.contains(v)).collect();
            if !add.is_empty() {
                edits.push(batch_list_edit(
                    text,
                    (b.pos.line, b.pos.column),
                    "same",
                    &add,
                    !b.same.is_empty(),
                    None,
                )?);
            }
            let missing = not_allowed(&c.allow, &b.allow);
            if !missing.is_empty() {
                let reason = format!("keyplan plan: {}", c.summary);
                edits.push(allow_edit(text, b.pos, &missing, &b.allow, &reason)?);
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

/// Adds `missing` to the `allow:` of the key or batch mapping at `at` (which allows `allow`
/// now), with `reason` when the field is new.
fn allow_edit(
    text: &str,
    at: crate::scheme::Pos,
    missing: &[&String],
    allow: &[String],
    reason: &str,
) -> Result<(usize, usize, String), EditError> {
    batch_list_edit(
        text,
        (at.line, at.column),
        "allow",
        missing,
        !allow.is_empty(),
        Some(("reason", quote(reason))),
    )
}

/// The rule codes of `wanted` that `allow` does not name yet.
fn not_allowed<'a>(wanted: &'a [String], allow: &[String]) -> Vec<&'a String> {
    wanted
        .iter()
        .filter(|a| !allow.iter().any(|x| x.eq_ignore_ascii_case(a)))
        .collect()
}

/// Adds `items` to the list field `field` of the batch whose mapping starts at (line, column):
/// appended to the list when the batch has the field (`has`), else the field is added (with an
/// optional `extra` field, e.g. a reason), in flow or block style like the batch.
fn batch_list_edit(
    text: &str,
    (line, column): (u32, u32),
    field: &str,
    items: &[&String],
    has: bool,
    extra: Option<(&str, String)>,
) -> Result<(usize, usize, String), EditError> {
    let at = offset(text, line, column)
        .ok_or_else(|| EditError(format!("cannot find the batch at line {line}")))?;
    let list = items
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let line_end = text[at..].find('\n').map(|e| at + e).unwrap_or(text.len());
    let this_line = &text[at..line_end];
    if has {
        let key = format!("{field}:");
        let i = text[at..]
            .find(&key)
            .ok_or_else(|| EditError(format!("line {line}: cannot find the batch's `{key}`")))?;
        let rest = &text[at + i..];
        let open = rest
            .find('[')
            .filter(|&o| !rest[..o].contains('\n'))
            .ok_or_else(|| {
                EditError(format!(
                    "line {line}: the batch's `{key}` is not a [list] on one line"
                ))
            })?;
        let close = rest[open..].find(']').ok_or_else(|| {
            EditError(format!(
                "line {line}: the batch's `{key}` list does not close"
            ))
        })?;
        let pos = at + i + open + close;
        return Ok((pos, pos, format!(", {list}")));
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
        let extra = extra
            .map(|(k, v)| format!(", {k}: {v}"))
            .unwrap_or_default();
        return Ok((before, pos, format!(", {field}: [{list}]{extra} ")));
    }
    // Block mapping: new lines at the indentation of its first field.
    let indent: String = text[..at]
        .rsplit('\n')
        .next()
        .unwrap_or("")
        .chars()
        .take_while(|c| *c == ' ')
        .collect();
    let start_of_line = text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let extra = extra
        .map(|(k, v)| format!("{indent}{k}: {v}\n"))
        .unwrap_or_default();
    Ok((
        start_of_line,
        start_of_line,
        format!("{indent}{field}: [{list}]\n{extra}"),
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

    fn apply_one(text: &str, line: u32, col: u32, field: &str, has: bool, extra: bool) -> String {
        let items = ["bucket".to_string()];
        let refs: Vec<&String> = items.iter().collect();
        let (a, b, r) = batch_list_edit(
            text,
            (line, col),
            field,
            &refs,
            has,
            extra.then(|| ("reason", "\"why\"".to_string())),
        )
        .unwrap();
        let mut out = text.to_string();
        out.replace_range(a..b, &r);
        out
    }

    #[test]
    fn batch_lists_in_flow_and_block_style() {
        let flow = "batches:\n  f: { command: pipeline, keys: [feed], same: [group] }\n";
        assert_eq!(
            apply_one(flow, 2, 6, "same", true, false),
            "batches:\n  f: { command: pipeline, keys: [feed], same: [group, bucket] }\n"
        );
        assert_eq!(
            apply_one(flow, 2, 6, "allow", false, true),
            "batches:\n  f: { command: pipeline, keys: [feed], same: [group], allow: [bucket], reason: \"why\" }\n"
        );
        let block = "batches:\n  f:\n    command: pipeline\n    keys: [feed]\n";
        assert_eq!(
            apply_one(block, 3, 5, "same", false, false),
            "batches:\n  f:\n    same: [bucket]\n    command: pipeline\n    keys: [feed]\n"
        );
        assert_eq!(
            apply_one(block, 3, 5, "allow", false, true),
            "batches:\n  f:\n    allow: [bucket]\n    reason: \"why\"\n    command: pipeline\n    keys: [feed]\n"
        );
    }
}
