//! `script-keys`: scripts sent with no declared keys (`EVALSHA sha 0 …`, `EVAL … 0`,
//! `FCALL f 0`) in application source. A cluster client routes a script by its declared keys;
//! with none it sends it to any node, which refuses the keys of slots it does not serve.
//!
//! Where the source shows the script's body (a string literal in the call, or a name bound to
//! one in the same file, directly or through `script_load(…)` / `register_script(…)`), the body
//! is read by [`crate::command::script::no_declared_keys`], the predicate `plan` and
//! `simulate` use: a body that touches no key (`return redis.call('TIME')`) is no finding, one
//! that does is named by its call. Where the body is not seen the script "may touch keys".

use super::{Check, Found};
use crate::code::{Site, SiteKind, Unknown};

/// Reports scripts in the code that declare no keys.
pub(crate) struct ScriptKeysCheck;

/// Whether a site is a script call whose declared keys are known to be none (not a key list
/// built at run time).
pub(crate) fn declares_no_keys(site: &Site) -> bool {
    site.kind == SiteKind::Script
        && site.keys.is_empty()
        && matches!(site.unknown, None | Some(Unknown::NoDeclaredKeys))
}

/// The finding for a site that declares no keys, its source file's text given when read.
pub(crate) fn finding(site: &Site, source: Option<&str>) -> Found {
    if !declares_no_keys(site) {
        return None;
    }
    let body = source.and_then(|s| script_body(s, site.at.line, site.at.column));
    let u = match &body {
        Some(body) => {
            // Sent as EVAL with its body: the body decides (the sha is only its name).
            let args = [b"EVAL".to_vec(), body.as_bytes().to_vec(), b"0".to_vec()];
            let mut u = crate::command::script::no_declared_keys(
                "EVAL",
                &args,
                Some(body.as_bytes()),
                None,
            )?;
            // The readers name every script call EVAL or EVALSHA alike: said by its key count.
            u.command = String::new();
            u
        }
        None => crate::command::script::unseen("", 0)?,
    };
    Some((u.problem(), Some(u.help())))
}

impl Check for ScriptKeysCheck {
    fn site(&self, site: &Site) -> Found {
        finding(site, None)
    }

    fn site_in(&self, site: &Site, source: Option<&str>) -> Found {
        finding(site, source)
    }
}

/// Bindings followed from a call's argument to a body, at most (`s = register_script(LUA)`).
const MAX_HOPS: usize = 4;

/// The body of the script called at `line`:`column` (1-based) of `source`, where the source
/// shows it: the call's first argument or its callee, as a string literal or a name bound to
/// one in the same file.
fn script_body(source: &str, line: usize, column: usize) -> Option<String> {
    let text = source.lines().nth(line.checked_sub(1)?)?;
    let at = text
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(text.len(), |(i, _)| i);
    // The call's text from its position on, over a few lines (an argument on the next line).
    let start = source
        .lines()
        .take(line - 1)
        .map(|l| l.len() + 1)
        .sum::<usize>()
        + at;
    let rest = source.get(start..)?;
    let open = rest.find('(')?;
    let callee = rest[..open].trim();
    let callee = callee.rsplit(['.', ' ', '=', '(']).next().unwrap_or(callee);
    let first = first_argument(&rest[open + 1..]);
    resolve(source, first, MAX_HOPS).or_else(|| resolve(source, callee, MAX_HOPS))
}

/// The text of the first argument of a call whose arguments start `args` (up to its `,` or
/// `)` at depth 0; a string literal whole).
fn first_argument(args: &str) -> &str {
    let args = args.trim_start();
    if let Some((lit, _)) = string_literal(args) {
        return &args[..lit];
    }
    let mut depth = 0usize;
    for (i, c) in args.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => return args[..i].trim(),
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => return args[..i].trim(),
            _ => {}
        }
    }
    args.trim()
}

/// The script body an expression stands for: a string literal's text, a name bound to one,
/// or a call that loads or registers one (`script_load(LUA)`, `register_script(LUA)`).
fn resolve(source: &str, expr: &str, hops: usize) -> Option<String> {
    let expr = expr.trim();
    if let Some((end, body)) = string_literal(expr) {
        return (end == expr.len()).then_some(body);
    }
    if hops == 0 {
        return None;
    }
    // A call that takes the script: its first argument.
    if let Some(open) = expr.find('(')
        && expr.ends_with(')')
    {
        let name = expr[..open].rsplit('.').next().unwrap_or_default();
        let loads = [
            "script_load",
            "scriptLoad",
            "register_script",
            "registerScript",
            "createScript",
            "Script",
            "NewScript",
            "new_script",
        ];
        return loads
            .contains(&name)
            .then(|| resolve(source, first_argument(&expr[open + 1..]), hops - 1))
            .flatten();
    }
    let is_ident = !expr.is_empty()
        && expr
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        && !expr.starts_with(|c: char| c.is_ascii_digit());
    if !is_ident {
        return None;
    }
    // Its binding in the file: `NAME = …`, `const NAME = …`, `NAME := …` (the first one).
    for l in source.lines() {
        let t = l.trim_start();
        let t = ["const ", "let ", "var ", "static ", "final "]
            .iter()
            .find_map(|k| t.strip_prefix(k))
            .unwrap_or(t);
        let Some(after) = t.strip_prefix(expr) else {
            continue;
        };
        let after = after.trim_start();
        let after = after
            .strip_prefix(":=")
            .or_else(|| after.strip_prefix('=').filter(|a| !a.starts_with('=')));
        if let Some(rhs) = after {
            // The value from its line on (a literal may span lines).
            let from = l.as_ptr() as usize - source.as_ptr() as usize + (l.len() - rhs.len());
            let rhs = source[from..].trim_start();
            let value = match string_literal(rhs) {
                Some((end, _)) => &rhs[..end],
                None => rhs
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches([';', ' ']),
            };
            return resolve(source, value, hops - 1);
        }
    }
    None
}

/// A string literal at the start of `s` (Python's `'…'`, `"…"`, `"""…"""` with `r`/`b`/`u`
/// prefixes, JavaScript's template `` `…` ``, Ruby's and Go's): its end in `s` and its text
/// (escapes of the quote and backslash undone). `None` when `s` does not start with one, or
/// with an f-string or a template with substitutions (a body built at run time).
fn string_literal(s: &str) -> Option<(usize, String)> {
    let prefix = s.find(['\'', '"', '`']).filter(|&p| {
        s[..p]
            .chars()
            .all(|c| matches!(c, 'r' | 'b' | 'u' | 'R' | 'B' | 'U'))
    })?;
    let raw = s[..prefix].contains(['r', 'R']);
    let body = &s[prefix..];
    let quote = body.chars().next()?;
    let triple: String = std::iter::repeat_n(quote, 3).collect();
    let (open, close) = if body.starts_with(&triple) {
        (3, triple.as_str())
    } else {
        (1, &body[..1])
    };
    let inner = &body[open..];
    let mut text = String::new();
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        if inner[i..].starts_with(close) {
            if quote == '`' && text.contains("${") {
                return None;
            }
            return Some((prefix + open + i + close.len(), text));
        }
        if c == '\\' && !raw && quote != '`' {
            match chars.next() {
                Some((_, 'n')) => text.push('\n'),
                Some((_, 't')) => text.push('\t'),
                Some((_, e)) => text.push(e),
                None => return None,
            }
            continue;
        }
        if c == '\n' && open == 1 && quote != '`' {
            return None;
        }
        text.push(c);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_read_from_the_call_or_its_bindings() {
        let src = "import redis\nINCR = \"return redis.call('INCR', ARGV[1])\"\nCLOCK = '''\nreturn redis.call('TIME')\n'''\nsha = r.script_load(INCR)\ns = r.register_script(CLOCK)\nr.eval(INCR, 0, k)\nr.evalsha(sha, 0, k)\ns(keys=[], args=[k])\nr.eval(\"return redis.call('GET', ARGV[1])\", 0, k)\nr.eval(f\"return {x}\", 0)\nr.evalsha(unknown_sha, 0, k)\n";
        let body = |line: usize| script_body(src, line, 1);
        assert_eq!(
            body(8).as_deref(),
            Some("return redis.call('INCR', ARGV[1])")
        );
        assert_eq!(
            body(9).as_deref(),
            Some("return redis.call('INCR', ARGV[1])")
        );
        assert_eq!(body(10).as_deref(), Some("\nreturn redis.call('TIME')\n"));
        assert_eq!(
            body(11).as_deref(),
            Some("return redis.call('GET', ARGV[1])")
        );
        assert_eq!(body(12), None);
        assert_eq!(body(13), None);
        let js = "const LUA = `return redis.call('DEL', ARGV[1])`;\nawait redis.eval(LUA, 0, key);\nawait redis.eval(`return ${x}`, 0);\n";
        assert_eq!(
            script_body(js, 2, 7).as_deref(),
            Some("return redis.call('DEL', ARGV[1])")
        );
        assert_eq!(script_body(js, 3, 7), None);
    }
}
