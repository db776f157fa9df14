//! `tag-shape`: hash tags that are empty, unclosed, or followed by a second one Redis ignores.

use super::{Check, Finding, Found, KeyNeeds, KeySeen, allowed};
use crate::keys::display::display_key;
use crate::lint::ActiveRule;
use crate::lint::rule::TagFlag;
use crate::scheme::{Scheme, TagPart};
use crate::slot::TagShape;
use crate::topology::Topology;

pub(super) struct TagShapeCheck(pub TagFlag);

impl Check for TagShapeCheck {
    fn scheme(&self, r: &ActiveRule, scheme: &Scheme, _topo: &Topology) -> Vec<Finding> {
        let mut out = Vec::new();
        for k in scheme.keys.iter().filter(|k| !allowed(&k.allow, r)) {
            let (part, later) = k.template.tag_part();
            let hit = match self.0 {
                TagFlag::Empty => part == TagPart::Empty,
                TagFlag::Unclosed => part == TagPart::Unclosed,
                TagFlag::IgnoredSecond => later,
            };
            if hit {
                out.push(Finding::at(
                    k.pos,
                    format!(
                        "key '{}' (`{}`): {}",
                        k.name, k.template.text, r.spec.summary
                    ),
                    None,
                ));
            }
        }
        out
    }

    fn key_needs(&self) -> KeyNeeds<'_> {
        KeyNeeds::Brace
    }

    fn key(&self, seen: &KeySeen<'_>) -> Found {
        let KeySeen {
            rule: r,
            key,
            shape,
            ..
        } = *seen;
        let hit = match self.0 {
            TagFlag::Empty => matches!(shape, TagShape::Empty { .. }),
            TagFlag::Unclosed => matches!(shape, TagShape::Unclosed { .. }),
            TagFlag::IgnoredSecond => {
                let end = match shape {
                    TagShape::Tagged { close, .. } => Some(close + 1),
                    TagShape::Empty { open } => Some(open + 2),
                    _ => None,
                };
                end.is_some_and(|e| key[e..].contains(&b'{'))
            }
        };
        hit.then(|| {
            (
                format!("key {}: {}", display_key(key), r.spec.summary),
                Some(crate::slot::explain(key)),
            )
        })
    }
}
