//! `unmatched-key`: dump keys that match no pattern declared in the scheme.

use super::Check;
use crate::keys::display::display_key;
use crate::lint::ActiveRule;

pub(super) struct UnmatchedKeyCheck;

impl Check for UnmatchedKeyCheck {
    fn key(
        &self,
        _r: &ActiveRule,
        key: &[u8],
        unmatched: bool,
    ) -> Option<(String, Option<String>)> {
        unmatched.then(|| {
            (
                format!(
                    "key {} matches no pattern declared in the scheme",
                    display_key(key)
                ),
                Some("declare its pattern under `keys:`".into()),
            )
        })
    }
}
