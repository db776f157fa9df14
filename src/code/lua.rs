//! Lua script files of a source tree (`commands/addJob-6.lua`, `scripts/release.lua`): the
//! command each one becomes when the tree defines commands from its script files at run time
//! (ioredis' `defineCommand(script.name, { numberOfKeys: script.keys, … })` over a directory of
//! scripts), and how many keys that command takes.
//!
//! The name is the file's stem; a stem ending in `-<N>` names a command of `N` keys (the
//! convention loaders that read key counts from file names follow). Otherwise the count is the
//! highest `KEYS[n]` the body indexes with a number, when every use of `KEYS` is such an index
//! (`#KEYS`, `KEYS[i]` or `unpack(KEYS)` leave it unknown). Pure: no I/O.

/// A script file: the command it defines and its key count, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFile {
    /// The command name (the file's stem, less a `-<N>` key-count suffix).
    pub name: String,
    /// How many keys it takes, when the file name or the body says.
    pub keys: Option<usize>,
}

/// The command a script file defines: `stem` is the file name without `.lua`.
pub fn script_file(stem: &str, body: &str) -> ScriptFile {
    if let Some((name, n)) = stem.rsplit_once('-')
        && !name.is_empty()
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = n.parse::<usize>()
    {
        return ScriptFile {
            name: name.to_string(),
            keys: Some(n),
        };
    }
    ScriptFile {
        name: stem.to_string(),
        keys: keys_indexed(body),
    }
}

/// The highest `KEYS[n]` in `body` when every use of `KEYS` is an index by a number; `Some(0)`
/// when the body never names `KEYS`.
pub fn keys_indexed(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut most = 0usize;
    let mut from = 0;
    while let Some(off) = body[from..].find("KEYS") {
        let at = from + off;
        from = at + 4;
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + 4).copied();
        let word = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
        if word(before) || word(after) {
            continue;
        }
        // Comments are read like code: a `KEYS[i]` written in one only makes the count unknown.
        let rest = &body[at + 4..];
        let rest = rest.trim_start();
        let index = rest.strip_prefix('[')?;
        let close = index.find(']')?;
        let n: usize = index[..close].trim().parse().ok()?;
        most = most.max(n);
    }
    Some(most)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_in_the_file_name_wins() {
        assert_eq!(
            script_file("moveToActive-8", "return KEYS[1]"),
            ScriptFile {
                name: "moveToActive".into(),
                keys: Some(8)
            }
        );
    }

    #[test]
    fn otherwise_the_highest_index_the_body_reads() {
        let body = "local a = redis.call('GET', KEYS[1])\nredis.call('SET', KEYS[ 3 ], ARGV[1])";
        assert_eq!(script_file("release", body).keys, Some(3));
        assert_eq!(script_file("release", body).name, "release");
        assert_eq!(keys_indexed("return ARGV[1]"), Some(0));
        // A stem with a dash but no number is a name.
        assert_eq!(
            script_file("rate-limit", "return KEYS[2]").name,
            "rate-limit"
        );
    }

    #[test]
    fn keys_used_as_a_whole_or_by_a_variable_are_not_counted() {
        assert_eq!(
            keys_indexed("for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end"),
            None
        );
        assert_eq!(keys_indexed("return redis.call('DEL', unpack(KEYS))"), None);
        assert_eq!(keys_indexed("local KEYSPACE = 1; return KEYS[2]"), Some(2));
    }
}
