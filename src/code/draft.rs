//! A keyplan scheme drafted from what the code builds: every key template becomes a key, every
//! placeholder a variable, every site with keys a batch, each named after where the code has
//! it. `lint --scheme` and `plan --scheme` read the draft as they read a scheme written by hand;
//! what the code does not say (the variables' kinds and cardinalities, the sizes of batches
//! built in loops) is left for a person to fill in.

use super::{CodeReport, Part, Site, SiteKind, Template, Verdict};
use std::collections::BTreeMap;

/// A variable of the draft: a placeholder of the code, renamed to a scheme name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftVar {
    /// The scheme name (`job_id`).
    pub name: String,
    /// The code it stands for (`job.id`), every spelling met.
    pub code: Vec<String>,
}

/// A key of the draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftKey {
    /// Its name in the scheme.
    pub name: String,
    /// Its pattern (`rq:job:<job_id>`).
    pub pattern: String,
    /// Where the code first builds it (`file:line`) and with which command.
    pub at: String,
    /// How many places build it.
    pub uses: usize,
}

/// A batch of the draft: one site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftBatch {
    /// Its name in the scheme (`queue_py_309`).
    pub name: String,
    /// The scheme's command (`mget`, `multi`, `pipeline`, `lua`, `BRPOP`).
    pub command: String,
    /// Its keys, by name.
    pub keys: Vec<String>,
    /// Variables every instance shares (a placeholder two of its keys have).
    pub same: Vec<String>,
    /// Where the site is, what it sends and the verdict (`queue.py:309 SREM DEL: cross-slot`).
    pub note: String,
}

/// The draft.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Draft {
    /// Variables, by name.
    pub vars: Vec<DraftVar>,
    /// Keys, in the order the code first builds them.
    pub keys: Vec<DraftKey>,
    /// Batches, in file and line order.
    pub batches: Vec<DraftBatch>,
    /// Sites and keys left out, and why (`file:line: why`).
    pub left_out: Vec<String>,
}

/// A scheme name made of `text` (letters, digits, `_`; not starting with a digit).
fn scheme_name(text: &str, fallback: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    let mut out = out.trim_end_matches('_').to_string();
    if out.len() > 40 {
        out.truncate(40);
        out = out.trim_end_matches('_').to_string();
    }
    if out.is_empty() {
        out = fallback.to_string();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    // Words YAML reads as null or a boolean would not be names.
    if ["null", "true", "false", "yes", "no", "on", "off", "y", "n"].contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// Names given so far, and for each name asked for, the next number to try after it: a
/// hundred thousand keys named alike each get their number at once, not after trying those
/// before it.
#[derive(Default)]
struct Names {
    taken: std::collections::HashSet<String>,
    next: std::collections::HashMap<String, usize>,
}

/// A name not among `names`: `name`, else `name_2`, `name_3`…
fn fresh(name: String, names: &mut Names) -> String {
    let mut n = name.clone();
    let i = names.next.entry(name.clone()).or_insert(2);
    while names.taken.contains(&n) {
        n = format!("{name}_{i}");
        *i += 1;
    }
    names.taken.insert(n.clone());
    n
}

struct Builder {
    /// Placeholder (code) → variable name.
    vars: BTreeMap<String, String>,
    var_order: Vec<String>,
    var_names: Names,
    /// Pattern → key index.
    keys: BTreeMap<String, usize>,
    key_names: Names,
    draft: Draft,
}

impl Builder {
    fn var(&mut self, code: &str) -> String {
        if let Some(v) = self.vars.get(code) {
            return v.clone();
        }
        // `self.key` → `key`, `job.id` → `job_id`, `uuid4().hex` → `uuid4_hex`.
        let trimmed = code
            .strip_prefix("self.")
            .or_else(|| code.strip_prefix("this."))
            .unwrap_or(code)
            .trim_start_matches('@');
        let base = scheme_name(trimmed, "value");
        // One name per spelling; two spellings of one name stay apart.
        let name = fresh(base, &mut self.var_names);
        self.vars.insert(code.to_string(), name.clone());
        self.var_order.push(name.clone());
        self.draft.vars.push(DraftVar {
            name: name.clone(),
            code: vec![code.to_string()],
        });
        name
    }

    /// The pattern of a template, or why it cannot be one.
    fn pattern(&mut self, t: &Template) -> Result<String, String> {
        let mut p = String::new();
        for part in &t.parts {
            match part {
                Part::Lit(l) if l.contains(['<', '>']) => {
                    return Err(format!(
                        "{}: a key with `<` or `>` in its text cannot be a scheme pattern",
                        t.text()
                    ));
                }
                Part::Lit(l) => p.push_str(l),
                Part::Var(v) => {
                    let name = self.var(v);
                    p.push('<');
                    p.push_str(&name);
                    p.push('>');
                }
            }
        }
        Ok(p)
    }

    /// The key of template `t` (`built`: one more place builds it).
    fn key(&mut self, t: &Template, at: &str, built: bool) -> Result<String, String> {
        let pattern = self.pattern(t)?;
        if let Some(&i) = self.keys.get(&pattern) {
            if built {
                self.draft.keys[i].uses += 1;
            }
            return Ok(self.draft.keys[i].name.clone());
        }
        let words: String = t
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Lit(l) => Some(l.as_str()),
                Part::Var(_) => None,
            })
            .collect::<Vec<_>>()
            .join("_");
        let base = if words.chars().any(|c| c.is_ascii_alphanumeric()) {
            scheme_name(&words, "key")
        } else {
            // A key that is nothing but a runtime value: named after it.
            scheme_name(
                &t.parts
                    .iter()
                    .find_map(|p| match p {
                        Part::Var(v) => Some(v.clone()),
                        Part::Lit(_) => None,
                    })
                    .unwrap_or_default(),
                "key",
            )
        };
        let name = fresh(base, &mut self.key_names);
        self.keys.insert(pattern.clone(), self.draft.keys.len());
        self.draft.keys.push(DraftKey {
            name: name.clone(),
            pattern,
            at: at.to_string(),
            uses: usize::from(built),
        });
        Ok(name)
    }

    fn batch(&mut self, file: &str, s: &Site, taken: &mut Names) {
        let at = format!("{file}:{}", s.at.line);
        let verdict = match s.verdict() {
            Verdict::CrossSlot(_) => "cross-slot".to_string(),
            Verdict::OneSlot(_) => "one slot".to_string(),
            Verdict::Depends(why) => format!("depends ({why})"),
        };
        if s.keys.is_empty() {
            self.draft
                .left_out
                .push(format!("{at} {}: no key in the code; {verdict}", s.op));
            return;
        }
        let command = match s.kind {
            SiteKind::Transaction => "multi".to_string(),
            SiteKind::Pipeline => "pipeline".to_string(),
            SiteKind::Script => "lua".to_string(),
            SiteKind::Command => {
                let op = s.op.to_ascii_lowercase();
                if ["mget", "mset", "del", "exists", "unlink", "touch"].contains(&op.as_str()) {
                    op
                } else {
                    // Any other command a scheme names by its name, when it takes several keys.
                    let several = crate::command::table().get(&op).is_some_and(|c| {
                        crate::command::args_for(c, &[b"a".to_vec(), b"b".to_vec()]).is_some()
                    });
                    if !several {
                        self.draft.left_out.push(format!(
                            "{at} {}: not a command a scheme batch can name (it takes one key)",
                            s.op
                        ));
                        return;
                    }
                    s.op.to_ascii_uppercase()
                }
            }
        };
        let mut keys: Vec<String> = Vec::new();
        let mut named = std::collections::HashSet::new();
        let mut distinct: Vec<&Template> = Vec::new();
        for t in &s.keys {
            match self.key(t, &at, false) {
                Ok(k) => {
                    if named.insert(k.clone()) {
                        keys.push(k);
                        distinct.push(t);
                    }
                }
                Err(why) => self.draft.left_out.push(format!("{at}: {why}")),
            }
        }
        if keys.is_empty() {
            return;
        }
        // A placeholder two keys share: one value for the whole call.
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &distinct {
            let mut seen = std::collections::BTreeSet::new();
            for p in &t.parts {
                if let Part::Var(v) = p
                    && seen.insert(v.as_str())
                {
                    *count.entry(v.as_str()).or_default() += 1;
                }
            }
        }
        let same: Vec<String> = count
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(v, _)| self.vars[*v].clone())
            .collect();
        let name = fresh(
            // Named by the file, not its directory: a path given as `/srv/app/src/` would
            // otherwise fill the name before its line.
            scheme_name(
                &format!("{}_{}", file.rsplit('/').next().unwrap_or(file), s.at.line),
                "batch",
            ),
            taken,
        );
        self.draft.batches.push(DraftBatch {
            name,
            command,
            keys,
            same,
            note: format!("{at} {}: {verdict}", s.op),
        });
    }
}

/// The draft of a scheme from what a scan found.
pub fn draft(r: &CodeReport) -> Draft {
    let mut b = Builder {
        vars: BTreeMap::new(),
        var_order: Vec::new(),
        var_names: Default::default(),
        keys: BTreeMap::new(),
        key_names: Default::default(),
        draft: Draft::default(),
    };
    // Keys in the order the files build them, then the batches.
    for f in &r.files {
        for k in &f.findings.keys {
            let at = format!("{}:{} ({})", f.file, k.at.line, k.how);
            if let Err(why) = b.key(&k.template, &at, true) {
                b.draft
                    .left_out
                    .push(format!("{}:{}: {why}", f.file, k.at.line));
            }
        }
    }
    let mut taken = Names::default();
    for f in &r.files {
        for s in &f.findings.sites {
            b.batch(&f.file, s, &mut taken);
        }
    }
    b.draft.left_out.dedup();
    b.draft
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{FileFindings, FileReport, KeyUse, Position};

    #[test]
    fn keys_vars_and_batches() {
        let t = |parts: &[(&str, bool)]| {
            let mut t = Template::default();
            for (s, var) in parts {
                if *var {
                    t.parts.push(Part::Var(s.to_string()));
                } else {
                    t.push_lit(s);
                }
            }
            t
        };
        let profile = t(&[("user:", false), ("uid", true), (":profile", false)]);
        let cart = t(&[("cart:", false), ("uid", true)]);
        let job = t(&[("rq:job:", false), ("self.id", true)]);
        let at = Position { line: 3, column: 1 };
        let site = |kind, op: &str, keys: Vec<Template>| Site {
            at,
            send: None,
            kind,
            op: op.into(),
            keys,
            unknown: None,
        };
        let report = CodeReport {
            files: vec![FileReport {
                file: "app/views.py".into(),
                findings: FileFindings {
                    keys: vec![KeyUse {
                        template: job.clone(),
                        at,
                        how: "HSET".into(),
                    }],
                    sites: vec![
                        site(
                            SiteKind::Command,
                            "MGET",
                            vec![profile.clone(), cart.clone()],
                        ),
                        site(SiteKind::Transaction, "HSET RPUSH", vec![job, cart]),
                        site(SiteKind::Command, "BLPOP", vec![]),
                    ],
                },
            }],
            ..Default::default()
        };
        let d = draft(&report);
        let patterns: Vec<&str> = d.keys.iter().map(|k| k.pattern.as_str()).collect();
        assert_eq!(
            patterns,
            ["rq:job:<id>", "user:<uid>:profile", "cart:<uid>"]
        );
        assert_eq!(d.keys[2].uses, 0);
        assert_eq!(d.keys[0].uses, 1);
        let names: Vec<&str> = d.keys.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["rq_job", "user_profile", "cart"]);
        assert_eq!(d.batches.len(), 2);
        assert_eq!(d.batches[0].name, "views_py_3");
        assert_eq!(d.batches[0].command, "mget");
        assert_eq!(d.batches[0].same, ["uid"]);
        assert_eq!(d.batches[1].name, "views_py_3_2");
        assert_eq!(d.batches[1].command, "multi");
        assert!(d.batches[1].same.is_empty());
        assert_eq!(d.left_out.len(), 1, "{:?}", d.left_out);
        assert!(d.left_out[0].contains("BLPOP"));
    }
}
