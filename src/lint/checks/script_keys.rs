//! `script-keys`: scripts sent with no declared keys (`EVALSHA sha 0 …`, `EVAL … 0`,
//! `FCALL f 0`) in application source. A cluster client routes a script by its declared keys;
//! with none it sends it to any node, which refuses the keys of slots it does not serve. The
//! body is not seen from the call, so the script "may touch keys": the words are
//! [`crate::command::script`]'s, as `plan` and `simulate` say them.

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

impl Check for ScriptKeysCheck {
    fn site(&self, site: &Site) -> Found {
        if !declares_no_keys(site) {
            return None;
        }
        // The readers name every script call EVAL or EVALSHA alike: said by its key count.
        let u = crate::command::script::unseen("", 0)?;
        Some((u.problem(), Some(u.help())))
    }
}
