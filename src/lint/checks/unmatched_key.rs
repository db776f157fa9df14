//! `unmatched-key`: dump keys that match no pattern declared in the scheme.

use super::{Check, Found, KeyNeeds, KeySeen};
use crate::keys::quote;

pub(super) struct UnmatchedKeyCheck;

impl Check for UnmatchedKeyCheck {
    fn key_needs(&self) -> KeyNeeds<'_> {
        KeyNeeds::Unmatched
    }

    fn key(&self, seen: &KeySeen<'_>) -> Found {
        let KeySeen { key, unmatched, .. } = *seen;
        unmatched.then(|| {
            (
                format!(
                    "key {} matches no pattern declared in the scheme",
                    quote(key)
                ),
                Some("declare its pattern under `keys:`".into()),
            )
        })
    }
}
