//! `unmatched-key`: dump keys that match no pattern declared in the scheme.

use super::{Check, Found, KeySeen};
use crate::keys::display::display_key;

pub(super) struct UnmatchedKeyCheck;

impl Check for UnmatchedKeyCheck {
    fn reads_keys(&self) -> bool {
        true
    }

    fn key(&self, seen: &KeySeen<'_>) -> Found {
        let KeySeen { key, unmatched, .. } = *seen;
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
