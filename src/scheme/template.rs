//! Key patterns with `<var>` placeholders. Braces are literal: they are the Redis hash-tag
//! braces of the keys the pattern describes.

/// A piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// Literal text.
    Lit(String),
    /// A variable.
    Var(String),
}

/// What Redis hashes for keys of a pattern, assuming variable values contain no braces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagPart {
    /// No `{`: the whole key.
    NoBrace,
    /// The first `{` has no `}` after it: the whole key.
    Unclosed,
    /// `{}`: the whole key.
    Empty,
    /// The pieces between the first `{` and the first `}` after it.
    Tagged(Vec<Seg>),
}

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The pattern as written.
    pub text: String,
    /// Its pieces.
    pub segs: Vec<Seg>,
}

impl Template {
    /// Parses `user:{<user_id>}:cart`; errors carry a 0-based column.
    pub fn parse(text: &str) -> Result<Template, (usize, String)> {
        let mut segs = Vec::new();
        let mut lit = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '<' {
                let start = i;
                let mut name = String::new();
                let mut closed = false;
                for (_, c) in chars.by_ref() {
                    if c == '>' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed {
                    return Err((start, "a '<' opens a variable that has no '>'".into()));
                }
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err((
                        start,
                        format!("'<{name}>' is not a variable name (letters, digits, _)"),
                    ));
                }
                if !lit.is_empty() {
                    segs.push(Seg::Lit(std::mem::take(&mut lit)));
                }
                segs.push(Seg::Var(name));
            } else {
                lit.push(c);
            }
        }
        if !lit.is_empty() {
            segs.push(Seg::Lit(lit));
        }
        Ok(Template {
            text: text.to_string(),
            segs,
        })
    }

    /// Variables used, in order (with repeats).
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.segs.iter().filter_map(|s| match s {
            Seg::Var(v) => Some(v.as_str()),
            Seg::Lit(_) => None,
        })
    }

    /// Splits the pattern at literal braces following Redis' rule: returns the tag part and
    /// whether a later `{` exists (ignored by Redis).
    pub fn tag_part(&self) -> (TagPart, bool) {
        // Flatten into (char | var) items.
        enum Item<'a> {
            C(char),
            V(&'a str),
        }
        let items: Vec<Item<'_>> = self
            .segs
            .iter()
            .flat_map(|s| -> Vec<Item<'_>> {
                match s {
                    Seg::Lit(l) => l.chars().map(Item::C).collect(),
                    Seg::Var(v) => vec![Item::V(v)],
                }
            })
            .collect();
        let Some(open) = items.iter().position(|i| matches!(i, Item::C('{'))) else {
            return (TagPart::NoBrace, false);
        };
        let Some(close) = items[open + 1..]
            .iter()
            .position(|i| matches!(i, Item::C('}')))
        else {
            return (TagPart::Unclosed, false);
        };
        let close = open + 1 + close;
        let later = items[close + 1..].iter().any(|i| matches!(i, Item::C('{')));
        if close == open + 1 {
            return (TagPart::Empty, later);
        }
        let mut segs: Vec<Seg> = Vec::new();
        for it in &items[open + 1..close] {
            match it {
                Item::C(c) => match segs.last_mut() {
                    Some(Seg::Lit(l)) => l.push(*c),
                    _ => segs.push(Seg::Lit(c.to_string())),
                },
                Item::V(v) => segs.push(Seg::Var(v.to_string())),
            }
        }
        (TagPart::Tagged(segs), later)
    }

    /// What Redis hashes: the tag's pieces, or the whole pattern.
    pub fn hashed(&self) -> Vec<Seg> {
        match self.tag_part().0 {
            TagPart::Tagged(s) => s,
            _ => self.segs.clone(),
        }
    }

    /// An example key with every variable replaced by `values(var)`.
    pub fn render(&self, value: &mut impl FnMut(&str) -> String) -> String {
        self.segs
            .iter()
            .map(|s| match s {
                Seg::Lit(l) => l.clone(),
                Seg::Var(v) => value(v),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        let t = Template::parse("order:{<order_id>}:items").unwrap();
        assert_eq!(
            t.tag_part(),
            (TagPart::Tagged(vec![Seg::Var("order_id".into())]), false)
        );
        let t = Template::parse("feed:{grp_<group>}:{x}").unwrap();
        assert_eq!(
            t.tag_part(),
            (
                TagPart::Tagged(vec![Seg::Lit("grp_".into()), Seg::Var("group".into())]),
                true
            )
        );
        assert_eq!(
            Template::parse("a:{}:<x>").unwrap().tag_part().0,
            TagPart::Empty
        );
        assert_eq!(
            Template::parse("a:{<x>").unwrap().tag_part().0,
            TagPart::Unclosed
        );
        assert_eq!(
            Template::parse("user:<id>").unwrap().tag_part().0,
            TagPart::NoBrace
        );
        assert!(Template::parse("a<b").is_err());
        assert!(Template::parse("a<b c>").is_err());
    }
}
