//! `key-family`: keys of a known family (a library's queue, broker or lock keys) whose use on a
//! cluster is known to fail. One finding per dump: how many keys, an example, what goes wrong.

use super::{Check, DumpSeen, Found, KeyNeeds, KeySeen};
use std::cell::{Cell, RefCell};

pub(super) struct KeyFamilyCheck {
    /// `None` only if the pattern does not compile, which rule loading refuses first.
    re: Option<regex::bytes::Regex>,
    message: String,
    help: String,
    seen: Cell<u64>,
    /// The first key seen, with its line.
    example: RefCell<Option<(u64, Vec<u8>)>>,
}

impl KeyFamilyCheck {
    pub(super) fn new(pattern: &str, message: &str, help: &str) -> KeyFamilyCheck {
        KeyFamilyCheck {
            re: regex::bytes::Regex::new(pattern).ok(),
            message: message.trim().to_string(),
            help: help.trim().to_string(),
            seen: Cell::new(0),
            example: RefCell::new(None),
        }
    }
}

/// A key as text, with control bytes escaped (`\x06`).
fn shown(key: &[u8]) -> String {
    let mut out = String::new();
    for c in String::from_utf8_lossy(key).chars() {
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

impl Check for KeyFamilyCheck {
    fn key_needs(&self) -> KeyNeeds<'_> {
        match &self.re {
            Some(re) => KeyNeeds::Pattern(re.as_str()),
            None => KeyNeeds::Nothing,
        }
    }

    fn key(&self, seen: &KeySeen<'_>) -> Found {
        let KeySeen { key, line, .. } = *seen;
        if self.re.as_ref().is_some_and(|re| re.is_match(key)) {
            self.seen.set(self.seen.get() + 1);
            self.example
                .borrow_mut()
                .get_or_insert_with(|| (line, key.to_vec()));
        }
        None
    }

    fn merge(&self, other: &dyn Check) {
        let Some(o) = (other as &dyn std::any::Any).downcast_ref::<KeyFamilyCheck>() else {
            return;
        };
        self.seen.set(self.seen.get() + o.seen.get());
        let theirs = o.example.borrow().clone();
        let mut mine = self.example.borrow_mut();
        if let Some(t) = theirs
            && mine.as_ref().is_none_or(|m| t.0 < m.0)
        {
            *mine = Some(t);
        }
    }

    fn dump(&self, _seen: &DumpSeen<'_>) -> Found {
        let n = self.seen.get();
        let (_, example) = self.example.borrow().clone()?;
        Some((
            format!("{n} key(s) like '{}': {}", shown(&example), self.message),
            Some(self.help.clone()),
        ))
    }
}
