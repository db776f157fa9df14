//! Facts about a scheme that several commands reason on: what a batch's keys hash, whether a
//! batch is single-slot, how many values a tag takes, and how to rewrite patterns so a batch
//! lands on one slot. `lint` reports from them and `plan` scores them; neither owns them.

use super::{DeclaredBatch, KeyDecl, Scheme, Seg, TagPart, Template};

/// Segments as pattern text (`user:<user_id>`).
pub fn seg_text(segs: &[Seg]) -> String {
    segs.iter()
        .map(|s| match s {
            Seg::Lit(l) => l.clone(),
            Seg::Var(v) => format!("<{v}>"),
        })
        .collect()
}

/// The distinct variables of segments, sorted.
pub fn seg_vars(segs: &[Seg]) -> Vec<&str> {
    let mut v: Vec<&str> = segs
        .iter()
        .filter_map(|s| match s {
            Seg::Var(v) => Some(v.as_str()),
            Seg::Lit(_) => None,
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Distinct values a set of variables can take together (product of cardinalities).
pub fn combined_cardinality(scheme: &Scheme, vars: &[&str]) -> Option<u64> {
    vars.iter().try_fold(1u64, |acc, v| {
        scheme.cardinality(v).map(|c| acc.saturating_mul(c.max(1)))
    })
}

/// Why a batch's keys may land on several slots.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSingleSlot {
    /// Two of its keys hash different parts of their patterns.
    #[error("{key} hashes `{hashed}` but {other} hashes `{other_hashed}`")]
    KeysDiffer {
        /// The batch's first key.
        key: String,
        /// What it hashes.
        hashed: String,
        /// A key that hashes something else.
        other: String,
        /// What that key hashes.
        other_hashed: String,
    },
    /// The part they hash holds a variable that differs between the batch's keys.
    #[error(
        "the hashed part `{hashed}` of {key} contains <{var}>, which differs between the batch's keys (not in `same`)"
    )]
    VariableDiffers {
        /// What the keys hash.
        hashed: String,
        /// The batch's first key.
        key: String,
        /// The variable not kept the same.
        var: String,
    },
}

/// Whether all of a batch's keys hash the same bytes, from variables it keeps `same`.
pub fn batch_single_slot(scheme: &Scheme, b: &DeclaredBatch) -> Result<(), NotSingleSlot> {
    let keys: Vec<&KeyDecl> = b.keys.iter().filter_map(|k| scheme.key(k)).collect();
    let hashed: Vec<Vec<Seg>> = keys.iter().map(|k| k.template.hashed()).collect();
    let per_batch = b.size.unwrap_or(keys.len() as u64);
    for (k, h) in keys.iter().zip(&hashed) {
        if h != &hashed[0] {
            return Err(NotSingleSlot::KeysDiffer {
                key: keys[0].name.clone(),
                hashed: seg_text(&hashed[0]),
                other: k.name.clone(),
                other_hashed: seg_text(h),
            });
        }
    }
    // Several keys of one batch differ in the variables the batch does not keep the same.
    if per_batch > 1
        && let Some(v) = seg_vars(&hashed[0])
            .into_iter()
            .find(|v| !b.same.iter().any(|s| s == v))
    {
        return Err(NotSingleSlot::VariableDiffers {
            hashed: seg_text(&hashed[0]),
            key: keys[0].name.clone(),
            var: v.to_string(),
        });
    }
    Ok(())
}

/// The pattern with braces removed and `tag` (pieces) braced at its first occurrence, or
/// `None` when the pattern does not contain `tag`'s pieces contiguously.
pub fn with_tag_text(t: &Template, tag: &[Seg]) -> Option<String> {
    let (text, needle) = unbraced_and_needle(t, tag);
    let at = text.find(&needle)?;
    // The match must not cut a variable name (`<…>` boundaries hold by construction of
    // seg_text when the needle starts and ends on piece boundaries or literal characters).
    Some(braced(&text, at..at + needle.len(), &needle))
}

/// `text` with `range` replaced by `{tag}`.
fn braced(text: &str, range: std::ops::Range<usize>, tag: &str) -> String {
    format!("{}{{{tag}}}{}", &text[..range.start], &text[range.end..])
}

/// The pattern with braces removed and its first `<var>` replaced by `tag` (pieces) braced,
/// for a tag of literals around one variable that the pattern does not hold as such: reusing
/// `{acct:<account>}` for `balance:<account>` gives `balance:{acct:<account>}`, whose keys hash
/// `acct:42` as the tag's own keys do. `None` when the tag has not exactly one variable or the
/// pattern lacks it.
pub fn with_tag_embedded(t: &Template, tag: &[Seg]) -> Option<String> {
    let mut vars = tag.iter().filter_map(|s| match s {
        Seg::Var(v) => Some(v),
        Seg::Lit(_) => None,
    });
    let (Some(var), None) = (vars.next(), vars.next()) else {
        return None;
    };
    let (text, needle) = unbraced_and_needle(t, tag);
    let placeholder = format!("<{var}>");
    let at = text.find(&placeholder)?;
    Some(braced(&text, at..at + placeholder.len(), &needle))
}

/// The text of `t` without braces, and of `tag`.
fn unbraced_and_needle(t: &Template, tag: &[Seg]) -> (String, String) {
    // Work on the unbraced pieces.
    let mut segs: Vec<Seg> = Vec::new();
    for s in &t.segs {
        match s {
            Seg::Lit(l) => {
                let l = l.replace(['{', '}'], "");
                if l.is_empty() {
                    continue;
                }
                match segs.last_mut() {
                    Some(Seg::Lit(p)) => p.push_str(&l),
                    _ => segs.push(Seg::Lit(l)),
                }
            }
            v => segs.push(v.clone()),
        }
    }
    (seg_text(&segs), seg_text(tag))
}

/// One way to put a batch's keys on one slot: a hash tag, and the patterns of the batch's keys
/// that must change to carry it (a key already hashing exactly that tag keeps its pattern).
#[derive(Debug, Clone, PartialEq)]
pub struct TagRewrite {
    /// The tag's segments (without braces).
    pub tag: Vec<Seg>,
    /// `(index of the key in the scheme, its new pattern)`, in the batch's key order.
    pub rewrites: Vec<(usize, String)>,
}

/// The tag rewrites that put batch `b` on one slot through the variable `var`: `{<var>}`
/// alone, then each existing tag of one of the batch's keys that contains `var` and only
/// variables the batch keeps the same (reusing it leaves that key's keys in place). Rewrites
/// that would change no key, or that a pattern cannot carry, are left out.
pub fn tag_rewrites(scheme: &Scheme, b: &DeclaredBatch, var: &str) -> Vec<TagRewrite> {
    let fams: Vec<usize> = family_indices(scheme, b);
    let mut texts: Vec<Vec<Seg>> = vec![vec![Seg::Var(var.to_string())]];
    for &f in &fams {
        if let TagPart::Tagged(segs) = scheme.keys[f].template.tag_part().0 {
            let vars = seg_vars(&segs);
            if vars.contains(&var)
                && vars.iter().all(|x| b.same.iter().any(|s| s == x))
                && !texts.contains(&segs)
            {
                texts.push(segs);
            }
        }
    }
    let mut out = Vec::new();
    'tags: for tag in texts {
        let mut rewrites = Vec::new();
        for &f in &fams {
            let t = &scheme.keys[f].template;
            if t.hashed() == tag && matches!(t.tag_part().0, TagPart::Tagged(_)) {
                continue;
            }
            let Some(text) = with_tag_text(t, &tag).or_else(|| with_tag_embedded(t, &tag)) else {
                continue 'tags;
            };
            if Template::parse(&text).is_err() {
                continue 'tags;
            }
            rewrites.push((f, text));
        }
        if !rewrites.is_empty() {
            out.push(TagRewrite { tag, rewrites });
        }
    }
    out
}

/// Every way [`tag_rewrites`] finds to make `b` single-slot over the variables it keeps the
/// same that all its keys use, the rewrites that change the fewest patterns first (ties in
/// the order found). The first is what `lint` suggests; `plan` scores them all.
pub fn single_slot_rewrites(scheme: &Scheme, b: &DeclaredBatch) -> Vec<TagRewrite> {
    let mut out: Vec<TagRewrite> = Vec::new();
    for v in shared_vars(scheme, b) {
        for r in tag_rewrites(scheme, b, v) {
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out.sort_by_key(|r| r.rewrites.len());
    out
}

/// The variables batch `b` keeps the same that every one of its keys uses.
pub fn shared_vars<'a>(scheme: &Scheme, b: &'a DeclaredBatch) -> Vec<&'a str> {
    b.same
        .iter()
        .map(String::as_str)
        .filter(|v| {
            b.keys
                .iter()
                .filter_map(|k| scheme.key(k))
                .all(|k| k.template.vars().any(|x| x == *v))
        })
        .collect()
}

/// The scheme indices of a batch's keys, each once, in the batch's order.
pub fn family_indices(scheme: &Scheme, b: &DeclaredBatch) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for k in &b.keys {
        if let Some(i) = scheme.key_index(k)
            && seen.insert(i)
        {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOP: &str = "version: 1\nvars:\n  user_id: { kind: int, cardinality: 1000 }\nkeys:\n  cart: { pattern: \"cart:{user:<user_id>}:items\" }\n  profile: { pattern: \"user:<user_id>:profile\" }\nbatches:\n  view: { command: mget, keys: [cart, profile], same: [user_id] }\n";

    #[test]
    fn a_tag_with_literal_content_is_reused() {
        let text = "version: 1\nvars:\n  account: { kind: int, cardinality: 1000000 }\nkeys:\n  meta: { pattern: \"acct:{acct:<account>}:meta\" }\n  balance: { pattern: \"balance:<account>\" }\n  ledger: { pattern: \"ledger:<account>:entries\" }\nbatches:\n  pay: { command: multi, keys: [meta, balance, ledger], same: [account] }\n";
        let s = Scheme::parse(text).unwrap();
        let b = &s.batches[0];
        let all = single_slot_rewrites(&s, b);
        // Reusing `{acct:<account>}` renames the two others and leaves the tagged keys in place.
        assert_eq!(seg_text(&all[0].tag), "acct:<account>", "{all:?}");
        assert_eq!(
            all[0].rewrites,
            vec![
                (1, "balance:{acct:<account>}".to_string()),
                (2, "ledger:{acct:<account>}:entries".to_string())
            ]
        );
        let mut text2 = text.to_string();
        for (f, new) in &all[0].rewrites {
            text2 = text2.replace(
                &format!("\"{}\"", s.keys[*f].template.text),
                &format!("\"{new}\""),
            );
        }
        let s2 = Scheme::parse(&text2).unwrap();
        assert!(batch_single_slot(&s2, &s2.batches[0]).is_ok(), "{text2}");
    }

    #[test]
    fn the_rewrite_that_changes_fewest_patterns_comes_first() {
        let s = Scheme::parse(SHOP).unwrap();
        let b = &s.batches[0];
        assert!(batch_single_slot(&s, b).is_err());
        let all = single_slot_rewrites(&s, b);
        assert_eq!(all.len(), 2, "{all:?}");
        // Reusing the cart's tag renames the profile only.
        assert_eq!(seg_text(&all[0].tag), "user:<user_id>");
        assert_eq!(
            all[0].rewrites,
            vec![(1, "{user:<user_id>}:profile".to_string())]
        );
        // Tagging the bare variable renames both.
        assert_eq!(seg_text(&all[1].tag), "<user_id>");
        assert_eq!(all[1].rewrites.len(), 2);
        // Applied, each makes the batch single-slot.
        for r in &all {
            let mut text = SHOP.to_string();
            for (f, new) in &r.rewrites {
                text = text.replace(&s.keys[*f].template.text, new);
            }
            let s2 = Scheme::parse(&text).unwrap();
            assert!(batch_single_slot(&s2, &s2.batches[0]).is_ok(), "{text}");
        }
    }

    #[test]
    fn tags_go_on_the_first_occurrence() {
        let t = Template::parse("a:{x}:<id>:<id>").unwrap();
        assert_eq!(
            with_tag_text(&t, &[Seg::Var("id".into())]).as_deref(),
            Some("a:x:{<id>}:<id>")
        );
        assert_eq!(with_tag_text(&t, &[Seg::Var("other".into())]), None);
    }
}
