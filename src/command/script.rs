//! Scripts that declare no keys (`EVAL body 0 …`, `EVALSHA sha 0 …`, `FCALL f 0 …`): whether
//! their body touches keys, and the words every command (plan, lint, simulate) says it in.
//!
//! A cluster client routes a script by its declared keys; with none it sends the script to any
//! node, and a node refuses a key of a slot it does not serve ("Script attempted to access a non
//! local key in a cluster node"). Where the body is known (EVAL's first argument, a SCRIPT LOAD
//! seen before an EVALSHA) it is read for `redis.call`/`redis.pcall`/`server.call`/`server.pcall`
//! whose command takes a key at a position the call fills (the server's key specifications
//! decide which); where only the sha is seen, the script "may touch keys". Pure: no I/O.

use super::{KeysError, key_refs, table};

/// What shows that a script declaring no keys touches keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touches {
    /// Its body calls a command on a key: the call as written (`redis.call('SET', ARGV[1], 1)`).
    Call(String),
    /// A capture shows a key it touched.
    Ran(String),
    /// Its body is not seen (only its sha, or the function's name): it may touch keys.
    Unseen,
}

/// A script that declares no keys and touches (or may touch) keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoDeclaredKeys {
    /// How it is sent (`EVAL`, `EVALSHA`, `FCALL`, …).
    pub command: String,
    /// What shows that it touches keys.
    pub touches: Touches,
    /// The keys its body names, where the call gives them as a string or as `ARGV[i]` of the
    /// arguments sent (other keys are built at run time and not known).
    pub keys: Vec<Vec<u8>>,
}

impl NoDeclaredKeys {
    /// The finding, in the words plan, lint and simulate share.
    pub fn problem(&self) -> String {
        let how = match self.command.as_str() {
            "EVAL" | "EVAL_RO" => format!("{} … 0", self.command),
            "EVALSHA" | "EVALSHA_RO" => format!("{} <sha> 0", self.command),
            "FCALL" | "FCALL_RO" => format!("{} <function> 0", self.command),
            _ => "a key count of 0".to_string(),
        };
        let what = match &self.touches {
            Touches::Call(call) => {
                format!("declares no keys ({how}) but its body touches keys (`{call}`)")
            }
            Touches::Ran(key) => {
                format!("declares no keys ({how}) but touched `{key}` (as the capture shows)")
            }
            Touches::Unseen => {
                format!("declares no keys ({how}) and may touch keys (its body is not seen)")
            }
        };
        format!(
            "a script that {what}: a cluster client sends a script without keys to any node, and a node refuses the keys of slots it does not serve (Script attempted to access a non local key in a cluster node)"
        )
    }

    /// What to do instead.
    pub fn help(&self) -> String {
        let sent = match self.command.as_str() {
            "FCALL" | "FCALL_RO" => format!("{} <function> N key…", self.command),
            "EVAL" | "EVAL_RO" => format!("{} <body> N key…", self.command),
            "EVALSHA" | "EVALSHA_RO" => format!("{} <sha> N key…", self.command),
            _ => "their count N, then the keys".to_string(),
        };
        format!(
            "declare every key the script touches ({sent}, read as KEYS[i] in the body), all under one hash tag so that they share a slot"
        )
    }
}

/// A script's call to the server found in its body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    /// The call as written, shortened.
    text: String,
    /// Whether it surely touches keys (`false`: it may, its command is not known).
    sure: bool,
    /// The arguments at its key positions (the command is argument 0).
    key_args: Vec<Arg>,
}

/// One argument of a call, as far as the body says what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg {
    /// A string or number literal.
    Lit(Vec<u8>),
    /// `ARGV[i]` (from 1).
    Argv(usize),
    /// Anything else (`KEYS[1]`, `'rate:' .. ARGV[1]`, a local).
    Expr,
}

/// Whether a script that declares no keys touches keys: `None` when it declares some, or when
/// its body is known and neither it nor what a capture shows it ran touches a key.
///
/// `command` is how it is sent (upper case), `args` the whole command (name first), `body` its
/// source when known (EVAL's, or a SCRIPT LOAD's for an EVALSHA), `ran` the first key a capture
/// shows it touching.
pub fn no_declared_keys(
    command: &str,
    args: &[Vec<u8>],
    body: Option<&[u8]>,
    ran: Option<&[u8]>,
) -> Option<NoDeclaredKeys> {
    let numkeys = args.get(2).and_then(|n| std::str::from_utf8(n).ok())?;
    if numkeys.trim() != "0" {
        return None;
    }
    let argv = args.get(3..).unwrap_or_default();
    let calls = body.map(|b| calls(&String::from_utf8_lossy(b)));
    let keys: Vec<Vec<u8>> = calls
        .iter()
        .flatten()
        .flat_map(|c| c.key_args.iter())
        .filter_map(|a| match a {
            Arg::Lit(k) => Some(k.clone()),
            Arg::Argv(i) => argv.get(i - 1).cloned(),
            Arg::Expr => None,
        })
        .fold(Vec::new(), |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        });
    let touches = match (ran, &calls) {
        (Some(k), _) => Touches::Ran(String::from_utf8_lossy(k).into_owned()),
        (None, None) => Touches::Unseen,
        (None, Some(calls)) => {
            let c = calls.iter().find(|c| c.sure).or_else(|| calls.first())?;
            Touches::Call(c.text.clone())
        }
    };
    Some(NoDeclaredKeys {
        command: command.to_ascii_uppercase(),
        touches,
        keys,
    })
}

/// [`no_declared_keys`] for a script known only by how it is sent (a call in application
/// source): it declares no keys when `declared` is 0, and may touch keys.
pub fn unseen(command: &str, declared: usize) -> Option<NoDeclaredKeys> {
    (declared == 0).then(|| NoDeclaredKeys {
        command: command.to_ascii_uppercase(),
        touches: Touches::Unseen,
        keys: Vec::new(),
    })
}

/// Whether a script body touches keys: the first call that does, as written.
pub fn body_touches_keys(body: &str) -> Option<String> {
    let calls = calls(body);
    calls
        .iter()
        .find(|c| c.sure)
        .or_else(|| calls.first())
        .map(|c| c.text.clone())
}

/// The calls of `body` that touch keys (surely, or maybe where the command is not known).
fn calls(body: &str) -> Vec<Call> {
    let b = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'-' if b.get(i + 1) == Some(&b'-') => i = skip_comment(b, i),
            b'\'' | b'"' => i = skip_string(b, i).0,
            b'[' if long_bracket(b, i).is_some() => i = skip_string(b, i).0,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
                let word = &body[start..i];
                let ident_before =
                    start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
                if !ident_before
                    && matches!(
                        word,
                        "redis.call" | "redis.pcall" | "server.call" | "server.pcall"
                    )
                {
                    let mut j = i;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if b.get(j) == Some(&b'(')
                        && let Some((args, end)) = split_call(body, j)
                    {
                        if let Some(c) = call_of(&body[start..end], &args) {
                            out.push(c);
                        }
                        i = end;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// A call and its arguments: the call if it touches keys.
fn call_of(text: &str, args: &[&str]) -> Option<Call> {
    let shown = if text.chars().count() > 80 {
        text.chars().take(77).collect::<String>() + "…"
    } else {
        text.to_string()
    };
    let parsed: Vec<Arg> = args.iter().map(|a| arg_of(a)).collect();
    let Some(Arg::Lit(_)) = parsed.first() else {
        // The command is chosen at run time: it may touch keys.
        return (args.len() >= 2).then(|| Call {
            text: shown,
            sure: false,
            key_args: Vec::new(),
        });
    };
    // Literals as written; any other argument stands as a placeholder.
    let filled: Vec<Vec<u8>> = parsed
        .iter()
        .map(|a| match a {
            Arg::Lit(v) => v.clone(),
            _ => b"x".to_vec(),
        })
        .collect();
    let cmd = match table().lookup(&filled) {
        Ok(c) => c,
        // A module's command addresses its first argument, as module commands do.
        Err(KeysError::Unknown(_)) => {
            return (parsed.len() >= 2).then(|| Call {
                text: shown,
                sure: false,
                key_args: parsed.get(1).cloned().into_iter().collect(),
            });
        }
        Err(_) => return None,
    };
    if cmd.specs.is_empty() {
        return None;
    }
    match key_refs(cmd, &filled) {
        Ok(refs) => {
            let key_args: Vec<Arg> = refs
                .iter()
                .filter(|r| !r.channel)
                .filter_map(|r| parsed.get(r.pos).cloned())
                .collect();
            (!key_args.is_empty()).then_some(Call {
                text: shown,
                sure: true,
                key_args,
            })
        }
        // Its keys' places depend on values only known at run time (a count from ARGV).
        Err(_) => Some(Call {
            text: shown,
            sure: true,
            key_args: Vec::new(),
        }),
    }
}

/// What one argument's text is.
fn arg_of(a: &str) -> Arg {
    let a = a.trim();
    let b = a.as_bytes();
    if let Some(&q) = b.first()
        && (q == b'\'' || q == b'"' || (q == b'[' && long_bracket(b, 0).is_some()))
    {
        let (end, value) = skip_string(b, 0);
        if end == b.len() {
            return Arg::Lit(value);
        }
        return Arg::Expr;
    }
    if !a.is_empty()
        && a.bytes()
            .all(|c| c.is_ascii_digit() || c == b'.' || c == b'-')
    {
        return Arg::Lit(a.as_bytes().to_vec());
    }
    let compact: String = a.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(n) = compact
        .strip_prefix("ARGV[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n >= 1)
    {
        return Arg::Argv(n);
    }
    Arg::Expr
}

/// The arguments of the call whose `(` is at `open`, split at its top-level commas, and the
/// byte after its `)`; `None` when it is not closed.
fn split_call(body: &str, open: usize) -> Option<(Vec<&str>, usize)> {
    let b = body.as_bytes();
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut from = open + 1;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'(' | b'{' => depth += 1,
            b'[' if long_bracket(b, i).is_some() => {
                i = skip_string(b, i).0;
                continue;
            }
            b'[' => depth += 1,
            b')' | b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let last = body[from..i].trim();
                    if !last.is_empty() || !args.is_empty() {
                        args.push(last);
                    }
                    return Some((args, i + 1));
                }
            }
            b',' if depth == 1 => {
                args.push(body[from..i].trim());
                from = i + 1;
            }
            b'\'' | b'"' => {
                i = skip_string(b, i).0;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = skip_comment(b, i);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The level of a long bracket opening at `i` (`[[` is 0, `[==[` is 2).
fn long_bracket(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    while b.get(j) == Some(&b'=') {
        j += 1;
    }
    (b.get(j) == Some(&b'[')).then_some(j - i - 1)
}

/// Skips a string at `i` (quoted or long bracket): the byte after it and its value.
fn skip_string(b: &[u8], i: usize) -> (usize, Vec<u8>) {
    if let Some(level) = long_bracket(b, i) {
        let start = i + level + 2;
        let mut close = vec![b']'];
        close.extend(std::iter::repeat_n(b'=', level));
        close.push(b']');
        return match b[start..].windows(close.len()).position(|w| w == close) {
            Some(p) => (start + p + close.len(), b[start..start + p].to_vec()),
            None => (b.len(), b[start..].to_vec()),
        };
    }
    let q = b[i];
    let mut value = Vec::new();
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            c if c == q => return (j + 1, value),
            b'\\' if j + 1 < b.len() => {
                value.push(match b[j + 1] {
                    b'n' => b'\n',
                    b't' => b'\t',
                    c => c,
                });
                j += 2;
            }
            b'\n' => return (j, value),
            c => {
                value.push(c);
                j += 1;
            }
        }
    }
    (b.len(), value)
}

/// Skips a comment at `i` (`--` to the line's end, or `--[[ … ]]`): the byte after it.
fn skip_comment(b: &[u8], i: usize) -> usize {
    if long_bracket(b, i + 2).is_some() {
        return skip_string(b, i + 2).0;
    }
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p + 1)
}

/// The SHA-1 of `data` in lower-case hex: the name `SCRIPT LOAD` gives a script (and EVALSHA
/// calls it by).
pub fn sha1_hex(data: &[u8]) -> String {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (t, word) in chunk.chunks_exact(4).enumerate() {
            w[t] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for t in 16..80 {
            w[t] = (w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (t, &wt) in w.iter().enumerate() {
            let (f, k) = match t {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let temp = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(wt);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = temp;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &[&str]) -> Vec<Vec<u8>> {
        line.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn sha1_matches_known_digests() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        // What `SCRIPT LOAD "return 1"` answers on redis-server.
        assert_eq!(
            sha1_hex(b"return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
        let long = vec![b'a'; 1000];
        assert_eq!(sha1_hex(&long), "291e9a6c66994949b57ba5e650361e98fc36b1ba");
    }

    #[test]
    fn a_body_touches_keys_where_a_command_takes_one() {
        let t = body_touches_keys;
        assert_eq!(
            t("return redis.call('SET', ARGV[1], 1)").as_deref(),
            Some("redis.call('SET', ARGV[1], 1)")
        );
        assert!(t("local v = redis.pcall(\"incrby\", 'rate:' .. ARGV[1], 1) return v").is_some());
        assert!(t("return server.call('GET', KEYS[1])").is_some());
        assert!(t("return redis.call('ZUNIONSTORE', ARGV[1], ARGV[2], ARGV[3])").is_some());
        // Commands that take no key.
        assert_eq!(t("return redis.call('TIME')"), None);
        assert_eq!(t("return redis.call('PUBLISH', ARGV[1], ARGV[2])"), None);
        assert_eq!(t("return 1"), None);
        // Calls in comments and strings are not calls.
        assert_eq!(
            t("-- redis.call('SET', 'a', 1)\nreturn 'redis.call(\"DEL\", \"x\")'"),
            None
        );
        assert_eq!(
            t("--[[ redis.call('SET', 'a', 1) ]] return redis.call('PING')"),
            None
        );
        // A command chosen at run time may touch keys.
        assert!(t("return redis.call(ARGV[1], ARGV[2])").is_some());
        // A module's command, by its first argument.
        assert!(t("return redis.call('JSON.GET', ARGV[1])").is_some());
        // Unclosed: no call read, and no panic.
        assert_eq!(t("redis.call('SET', 'a'"), None);
        assert_eq!(t("redis.call"), None);
    }

    #[test]
    fn a_script_declaring_no_keys_is_flagged_by_what_it_touches() {
        let eval = args(&[
            "EVAL",
            "return redis.call('SET', ARGV[1], 1)",
            "0",
            "rate:ana",
        ]);
        let u = no_declared_keys("EVAL", &eval, Some(&eval[1]), None).unwrap();
        assert_eq!(
            u.touches,
            Touches::Call("redis.call('SET', ARGV[1], 1)".into())
        );
        assert_eq!(u.keys, vec![b"rate:ana".to_vec()]);
        assert!(
            u.problem()
                .contains("declares no keys (EVAL … 0) but its body touches keys")
        );
        // A literal key, and the same key twice is named once.
        let lit = args(&["EVAL", "redis.call('DEL','a') redis.call('DEL','a')", "0"]);
        assert_eq!(
            no_declared_keys("EVAL", &lit, Some(&lit[1]), None)
                .unwrap()
                .keys,
            vec![b"a".to_vec()]
        );
        // Declared keys, or a body that touches none: nothing to flag.
        let one = args(&["EVAL", "return redis.call('GET', KEYS[1])", "1", "k"]);
        assert_eq!(no_declared_keys("EVAL", &one, Some(&one[1]), None), None);
        let none = args(&["EVAL", "return redis.call('TIME')", "0"]);
        assert_eq!(no_declared_keys("EVAL", &none, Some(&none[1]), None), None);
        // Only the sha: it may touch keys.
        let sha = args(&[
            "EVALSHA",
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
            "0",
            "x",
        ]);
        let u = no_declared_keys("EVALSHA", &sha, None, None).unwrap();
        assert_eq!(u.touches, Touches::Unseen);
        assert!(u.problem().contains("may touch keys"));
        assert!(u.help().contains("EVALSHA <sha> N key…"));
        // A capture shows what it ran.
        let u = no_declared_keys("EVALSHA", &sha, None, Some(b"q:1")).unwrap();
        assert_eq!(u.touches, Touches::Ran("q:1".into()));
        // Odd input never panics.
        assert_eq!(no_declared_keys("EVAL", &args(&["EVAL"]), None, None), None);
        assert_eq!(unseen("FCALL", 0).unwrap().touches, Touches::Unseen);
        // Sent in a way not named (a client's own method): said by its key count.
        let u = unseen("", 0).unwrap();
        assert!(
            u.problem()
                .contains("declares no keys (a key count of 0) and may touch keys")
        );
        assert!(
            u.help()
                .contains("(their count N, then the keys, read as KEYS[i]")
        );
        assert_eq!(unseen("FCALL", 2), None);
    }
}
