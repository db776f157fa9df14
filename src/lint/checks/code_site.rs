//! `code-site`: calls in application source that send several keys at once, as `keyplan code`
//! reads them, reported by verdict (cross-slot, or not known from the code) and atomicity.

use super::{Check, Found};
use crate::code::{Site, SiteKind, Verdict};
use crate::lint::rule::SiteVerdict;

/// Reports sites with one verdict (and, when given, one atomicity).
pub(crate) struct CodeSiteCheck {
    pub verdict: SiteVerdict,
    pub atomic: Option<bool>,
}

fn what(site: &Site) -> String {
    match site.kind {
        SiteKind::Command => site.op.clone(),
        SiteKind::Pipeline => format!("a pipeline ({})", site.op),
        SiteKind::Transaction => format!("a MULTI/EXEC transaction ({})", site.op),
        SiteKind::Script => format!("a script ({})", site.op),
    }
}

impl Check for CodeSiteCheck {
    fn site(&self, site: &Site) -> Found {
        if self
            .atomic
            .is_some_and(|a| a != (site.atomic() || site.kind == SiteKind::Command))
        {
            return None;
        }
        match (site.verdict(), self.verdict) {
            (Verdict::CrossSlot(why), SiteVerdict::CrossSlot) => {
                let refusal = match site.kind {
                    SiteKind::Pipeline => {
                        "a cluster client splits it per node (a round trip each), a plain client gets MOVED"
                    }
                    _ => "Redis Cluster refuses it (CROSSSLOT) or the client splits it and it is no longer one operation",
                };
                let help = site.fix().unwrap_or_else(|| {
                    "give the keys one hash tag (the same {…} in each), or send them apart".into()
                });
                Some((format!("{}: {why}; {refusal}", what(site)), Some(help)))
            }
            // A script that declares no keys is KP304's (script-keys).
            (Verdict::Depends(_), SiteVerdict::Depends)
                if super::script_keys::declares_no_keys(site) =>
            {
                None
            }
            (Verdict::Depends(why), SiteVerdict::Depends) => Some((
                format!("{}: its keys are not known from the code ({why})", what(site)),
                Some(match site.fix() {
                    Some(fix) => format!("make sure every key it sends shares one hash tag at runtime; {fix}"),
                    None => "make sure every key it sends shares one hash tag at runtime, or send them apart".into(),
                }),
            )),
            _ => None,
        }
    }
}
