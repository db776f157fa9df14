//! Splitting a key into tokens and classifying them.
//!
//! A key is cut at delimiters (configurable; `: / | . - _ ! $ @ = #` by default) and at hash-tag
//! braces, which stay literal tokens. At the start of each segment, compound values that contain
//! delimiters are recognised whole: `<email>`, `<uuid>` (8-4-4-4-12 hex), `<date>` (YYYY-MM-DD)
//! and `<ip>` (dotted IPv4, or IPv6). A whole segment of digits is `<int>`; of 8 or more hex
//! digits mixing letters and digits (or 16 or more hex digits) is `<hex>`. Other segments split into runs: digits are
//! `<int>`, letters stay literal (the tree later folds many distinct letter runs at one position
//! into `<word>`), other printable bytes are literal, and runs of non-ASCII or control bytes are
//! `<bytes>`. A key of more than [`MAX_TOKENS`] tokens ends in `<rest>`.

/// A token class (a variable part of a key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Decimal digits.
    Int,
    /// Hex digits (ids, hashes).
    Hex,
    /// A UUID.
    Uuid,
    /// A calendar date, with or without zero padding: `2026-05-16`, `2026-5-16`, a month
    /// `2026-5` (a year 1900 to 2099), an ISO week `2026-W23` or `W23-2026`.
    Date,
    /// A dotted IPv4 address.
    Ip,
    /// An alphabetic identifier (many distinct values at one position).
    Word,
    /// A ULID: 26 characters of Crockford base32.
    Ulid,
    /// An IPv6 address (hex groups and `:`, with `::`, or all eight groups). Patterns show it
    /// as `<ip>`, one value with IPv4 addresses: a key's template holds either.
    Ipv6,
    /// An e-mail address: `local@domain.tld`.
    Email,
    /// A JSON object or array written into the key (`{"class":"add","args":[1,2]}`), from its
    /// opening to its balanced closing brace.
    Json,
    /// An opaque token: 20 or more letters, digits, `-` and `_` in a random-looking mix
    /// (base62 and base64url session ids, nanoids, KSUIDs, mixed letter-digit ids), or
    /// standard base64 with `+`, `/` and `=` padding (digests); its padding is part of it.
    Token,
    /// Non-ASCII or control bytes.
    Bytes,
    /// Everything after the token limit.
    Rest,
    /// A name: words of any script, numbers and the `_`, `.`, `-`, `'`, space and `&` that
    /// join them (`hugo_silva12`, `bo.o'brien`, `Farid García`, `Massive Dynamic Corp`), where
    /// a position's words are values (see the pattern tree's name fold). Never written by the
    /// tokenizer.
    Name,
}

impl Class {
    /// The placeholder written in pattern text.
    pub fn placeholder(self) -> &'static str {
        match self {
            Class::Int => "<int>",
            Class::Hex => "<hex>",
            Class::Uuid => "<uuid>",
            Class::Date => "<date>",
            Class::Ip => "<ip>",
            Class::Word => "<word>",
            Class::Ulid => "<ulid>",
            Class::Ipv6 => "<ip>",
            Class::Email => "<email>",
            Class::Json => "<json>",
            Class::Token => "<token>",
            Class::Bytes => "<bytes>",
            Class::Rest => "<rest>",
            Class::Name => "<name>",
        }
    }

    /// A byte regex that matches every value of the class.
    pub fn regex(self) -> &'static str {
        match self {
            Class::Int => "[0-9]+(?:\\.[0-9]+)?",
            Class::Hex => "[0-9A-Fa-f]+",
            Class::Uuid => {
                "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
            }
            Class::Date => {
                "[0-9]{4}-(?:[0-9]{1,2}(?:-[0-9]{1,2})?|W[0-9]{1,2})|W[0-9]{1,2}-[0-9]{4}"
            }
            Class::Ip | Class::Ipv6 => {
                "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:]*"
            }
            Class::Word => {
                "(?:[A-Za-z]|[\\xc2-\\xf4][\\x80-\\xbf]+)(?:[A-Za-z']|[\\xc2-\\xf4][\\x80-\\xbf]+)*"
            }
            Class::Ulid => "[0-9A-HJKMNP-TV-Z]{26}",
            Class::Email => {
                "(?:[A-Za-z0-9]|[\\x80-\\xff])(?:[A-Za-z0-9._%+'-]|[\\x80-\\xff])*@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+"
            }
            Class::Json => "(?s:[\\[{].*[\\]}])",
            // Runs of letters and digits joined by `-` or `_` (short ids the tree joined), and
            // the recognizers' ids of 20 characters or more (digests, base64 with padding)
            // among them: a token the tree joined may end in one (`0.0-<base64>`).
            Class::Token => {
                "(?:[A-Za-z0-9.'_-]|[\\xc2-\\xf4][\\x80-\\xbf]+|[A-Za-z0-9+/=_-]{20,})+"
            }
            Class::Bytes => "[\\x00-\\x1f\\x7f-\\xff]+",
            Class::Rest => "(?s:.*)",
            Class::Name => {
                "(?:[A-Za-z]|[\\xc2-\\xf4][\\x80-\\xbf]+)(?:[A-Za-z0-9_.' &-]|[\\x00-\\x1f\\x7f-\\xff])*"
            }
        }
    }
}

/// One token of a key: a literal range of it, or a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// Literal bytes `key[start..end]`: a delimiter, a brace, punctuation, or a run of letters.
    Lit {
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// A variable part.
    Class(Class),
}

impl Token {
    /// The literal bytes of this token in `key`, if it is a literal.
    #[inline]
    pub fn lit<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match *self {
            Token::Lit { start, end } => Some(&key[start..end]),
            Token::Class(_) => None,
        }
    }

    /// Whether this is a run of letters (which the tree may fold into `<word>`).
    #[inline]
    pub fn is_alpha_lit(&self, key: &[u8]) -> bool {
        matches!(*self, Token::Lit { start, .. } if word_start(key[start]))
    }
}

/// Keys with more tokens than this end in `<rest>`.
pub const MAX_TOKENS: usize = 48;

/// The delimiter set: which bytes separate segments.
#[derive(Debug, Clone)]
pub struct Delimiters {
    /// Per byte: `C_DELIM` for delimiters, else its character class.
    table: [u8; 256],
    /// Per byte: its kind in an id-like run (see [`match_id_like`]).
    id_kind: [u8; 256],
}

/// The default delimiters.
pub const DEFAULT_DELIMITERS: &str = ":/|.-_!$@=#";

impl Delimiters {
    /// Delimiters from a list of ASCII punctuation characters (letters and digits are ignored:
    /// they can never separate segments).
    pub fn new(chars: &str) -> Delimiters {
        let mut table = CLASS;
        for b in chars.bytes() {
            if b.is_ascii_punctuation() || b == b' ' {
                table[b as usize] = C_DELIM;
            }
        }
        table[b'{' as usize] = C_DELIM;
        table[b'}' as usize] = C_DELIM;
        let mut id_kind = [0u8; 256];
        for (b, k) in id_kind.iter_mut().enumerate() {
            let c = b as u8;
            *k = match c {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => 1,
                b'I' | b'L' | b'O' | b'U' => 2 | ID_NOT_CROCKFORD,
                b'G'..=b'Z' => 2,
                b'g'..=b'z' => 3,
                b'-' | b'_' if table[b] == C_DELIM => 4,
                _ => 0,
            };
        }
        Delimiters { table, id_kind }
    }

    #[inline(always)]
    fn is(&self, b: u8) -> bool {
        self.table[b as usize] == C_DELIM
    }

    /// Whether `b` separates segments (braces always do).
    pub fn is_delimiter(&self, b: u8) -> bool {
        self.is(b)
    }

    /// The class bits of a byte, `C_DELIM` for delimiters.
    #[inline(always)]
    fn class(&self, b: u8) -> u8 {
        self.table[b as usize]
    }
}

impl Default for Delimiters {
    fn default() -> Self {
        Delimiters::new(DEFAULT_DELIMITERS)
    }
}

fn digits(s: &[u8], n: usize) -> bool {
    s.len() >= n && s[..n].iter().all(u8::is_ascii_digit)
}

/// Whether `b` starts a letter run: an ASCII letter or the lead byte of a multi-byte UTF-8
/// character (letters of any script; the run's literal keeps them).
#[inline(always)]
pub fn word_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || (0xC2..=0xF4).contains(&b)
}

/// The length of the multi-byte UTF-8 character at `key[i..]` (a lead byte and its
/// continuation bytes), 0 when there is none.
#[inline]
fn utf8_char(key: &[u8], i: usize) -> usize {
    let need = match key.get(i) {
        Some(0xC2..=0xDF) => 2,
        Some(0xE0..=0xEF) => 3,
        Some(0xF0..=0xF4) => 4,
        _ => return 0,
    };
    let ok = key
        .get(i + 1..i + need)
        .is_some_and(|c| c.iter().all(|&b| (0x80..=0xBF).contains(&b)));
    if ok { need } else { 0 }
}

/// The end of the word at `key[i..to]` (`key[i]` starts it): ASCII letters and multi-byte
/// UTF-8 characters, and an apostrophe between two of them (`o'brien`, `d'angelo`).
#[inline]
fn word_end(key: &[u8], i: usize, to: usize) -> usize {
    let mut j = i;
    loop {
        if j < to && key[j].is_ascii_alphabetic() {
            j += 1;
            continue;
        }
        let u = if j < to { utf8_char(&key[..to], j) } else { 0 };
        if u > 0 {
            j += u;
            continue;
        }
        if j > i
            && j + 1 < to
            && key[j] == b'\''
            && (key[j + 1].is_ascii_alphabetic() || utf8_char(&key[..to], j + 1) > 0)
        {
            j += 1;
            continue;
        }
        return j;
    }
}

/// Whether the byte at `i` (if any) ends a compound value.
#[inline]
fn boundary(key: &[u8], i: usize, d: &Delimiters) -> bool {
    i >= key.len() || d.is(key[i])
}

/// `HEX[b]` is 1 for ASCII hex digits.
static HEX: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_hexdigit() as u8;
        b += 1;
    }
    t
};

/// Whether every byte of `s` is a hex digit (branch-free, so short fixed runs unroll).
#[inline(always)]
fn all_hex(s: &[u8]) -> bool {
    s.iter().fold(1u8, |a, &b| a & HEX[b as usize]) == 1
}

fn match_uuid(key: &[u8], i: usize, d: &Delimiters) -> Option<usize> {
    let s: &[u8; 36] = key.get(i..i + 36)?.try_into().ok()?;
    // The dashes first: most candidates fail there, before any hex check.
    if s[8] != b'-' || s[13] != b'-' || s[18] != b'-' || s[23] != b'-' {
        return None;
    }
    let hex = all_hex(&s[..8])
        & all_hex(&s[9..13])
        & all_hex(&s[14..18])
        & all_hex(&s[19..23])
        & all_hex(&s[24..]);
    (hex && boundary(key, i + 36, d)).then_some(36)
}

/// An IPv6 address at `key[i..]`: groups of 1 to 4 hex digits joined by `:`, with one `::`
/// (at least two groups then) or eight groups without; it ends before a `:` not followed by a
/// hex group, so the key's own `:` separators stay separators (`rl:2001:db8::1:minute`).
/// Reads which bytes are hex digits and `:`, never digit values.
fn match_ipv6(key: &[u8], i: usize) -> Option<usize> {
    ipv6_scan(key, i).0
}

/// [`match_ipv6`], and one past the last byte it read.
#[inline]
fn ipv6_scan(key: &[u8], i: usize) -> (Option<usize>, usize) {
    let reach = std::cell::Cell::new(i);
    let hex_run = |at: usize| {
        let g = key[at.min(key.len())..]
            .iter()
            .take(5)
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        // It read the run and the byte that ended it.
        reach.set(reach.get().max((at + g + 1).min(at + 5)));
        // Hex digits that run on into a letter are a word (`day` after `::1:`), not a group.
        if g < 5 && key.get(at + g).is_some_and(u8::is_ascii_alphabetic) {
            return 0;
        }
        g
    };
    let mut j = i;
    let (mut groups, mut double) = (0usize, false);
    let mut end = i;
    loop {
        let g = hex_run(j);
        if g > 4 {
            return (None, reach.get().min(key.len()));
        }
        if g > 0 {
            groups += 1;
            j += g;
            end = j;
        }
        if key.get(j) != Some(&b':') {
            break;
        }
        if key.get(j + 1) == Some(&b':') {
            if double {
                break;
            }
            double = true;
            j += 2;
            end = j;
            continue;
        }
        // A single `:` continues the address only before another hex group.
        if hex_run(j + 1) == 0 || g == 0 {
            break;
        }
        j += 1;
    }
    let ok = (double && groups >= 2) || (!double && groups == 8);
    // A trailing `::` belongs to the address only when nothing hex follows it.
    (
        (ok && end > i).then_some(end - i),
        reach.get().min(key.len()),
    )
}

/// An id-like run at `key[i..]`: a ULID (26 upper-case Crockford base32 characters), or an
/// opaque token (20 or more letters, digits, `-` and `_`, the character kind changing at least
/// once every three characters: base62/base64url ids, not words joined by `-` or `_`). It ends
/// at a delimiter other than `-` and `_`, or at the end. Reads letters and digit positions
/// only, never digit values (the skeleton memo relies on it).
pub(crate) fn match_id_like(key: &[u8], i: usize, d: &Delimiters) -> Option<(usize, Class)> {
    if i >= key.len() {
        return None;
    }
    #[cfg(x86_simd)]
    let run = if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
    {
        id_run_avx2(key, i, d)
    } else {
        id_run_sse2(key, i, d)
    };
    #[cfg(not(x86_simd))]
    let run = id_run_scalar(key, i, d);
    decide_id_like(key, i, run, d)
}

/// What an id-like run starting at `key[i]` holds: its end and its character counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct IdRun {
    /// One past the run's last byte.
    end: usize,
    hex: usize,
    upper: usize,
    lower: usize,
    dash: usize,
    /// Upper-case letters Crockford base32 leaves out (`I`, `L`, `O`, `U`).
    ilou: usize,
    /// Places where the character kind changes from one byte to the next.
    changes: usize,
}

/// The class of the run `r` at `key[i..]`, if it is an id.
#[inline]
fn decide_id_like(key: &[u8], i: usize, r: IdRun, d: &Delimiters) -> Option<(usize, Class)> {
    let (j, len) = (r.end, r.end - i);
    if j < key.len() && !d.is(key[j]) {
        return None;
    }
    // Only hex digits (and `-`, `_`): `<hex>`, uuids and ints, decided by the segment rules.
    if r.upper + r.lower == 0 || starts_with_word(key, i, j) {
        return None;
    }
    // Canonical ULIDs: Crockford base32 (no `I`, `L`, `O`, `U`), no lower-case letter past `f`;
    // their 16 random characters hold hex digits, and the 26 mix in at least three letters past
    // `F` (a random part can have few of them: redis-om's ids did, 11 of 1,600).
    if len == 26
        && r.lower == 0
        && r.dash == 0
        && r.ilou == 0
        && r.upper >= 3
        && key[j - 16..j].iter().any(u8::is_ascii_hexdigit)
    {
        return Some((len, Class::Ulid));
    }
    if r.dash > 0 && joined_words(&key[i..j]) {
        return None;
    }
    if r.dash > 0
        && let Some(cut) = suffix_words(key, i, j)
    {
        return id_before_suffix(&key[i..cut]).then_some((cut - i, Class::Token));
    }
    // Hex digits and other letters mixed, the kind changing often (a random base62 string
    // changes about every other character; words, even CamelCase ones, far less).
    let random = if r.hex > 0 {
        r.changes * 4 >= len
    } else {
        r.upper > 1 && r.lower > 1 && r.changes * 3 >= len
    };
    (len >= 20 && random).then_some((len + padding(key, j, d), Class::Token))
}

/// The base64 padding at `key[j..]`: one or two `=` (a delimiter) that end the key or come
/// before another delimiter, 0 when there is none. A token's value holds its padding, so that
/// `<token>`, `<token>=` and `<token>==` are one value.
#[inline]
fn padding(key: &[u8], j: usize, d: &Delimiters) -> usize {
    let n = key[j.min(key.len())..]
        .iter()
        .take(3)
        .take_while(|&&b| b == b'=')
        .count();
    if (1..=2).contains(&n) && d.is(b'=') && boundary(key, j + n, d) {
        n
    } else {
        0
    }
}

/// Whether the run `key[i..j]` starts with a family name: a word joined to the rest by `-` or
/// `_` (three or more letters of one case, one of them past `f`: a word, not hex digits),
/// followed by a second such word (`celery-task-meta-<uuid>`, `flask_cache_<id>`) or by hex
/// digits only (`user-<uuid>`), or a word after such a word (`cache_…` in `flask_cache_…`). A
/// single short word before more letters is as likely the start of a random base64url id
/// (`kyh_Eh7qY2…`), which stays one token; a lower-case word of six letters or more is a name
/// (`session_<id>`). The words stay literals and what follows is
/// tokenized after them. Reads which bytes are letters, their case and whether they are hex
/// digits, from the word before the run (see [`word_before`]) on.
#[inline]
fn starts_with_word(key: &[u8], i: usize, j: usize) -> bool {
    let word_at = |at: usize| -> Option<usize> {
        let part = &key[at..j];
        let k = part
            .iter()
            .position(|b| !b.is_ascii_alphabetic())
            .unwrap_or(part.len());
        (matches!(part.get(k), Some(b'-' | b'_')) && family_word(&part[..k])).then_some(at + k + 1)
    };
    if word_before(key, i).is_some() {
        return true;
    }
    let Some(rest) = word_at(i) else {
        return false;
    };
    // A lower-case word of six letters or more (`session_<base32 id>`): a random base64url id
    // starts so about once in 7,000.
    let long_word = rest - 1 - i >= 6 && key[i..rest - 1].iter().all(u8::is_ascii_lowercase);
    word_at(rest).is_some()
        || long_word
        || !key[rest..j]
            .iter()
            .any(|b| b.is_ascii_alphabetic() && !b.is_ascii_hexdigit())
}

/// Whether `run` is words joined by `-` or `_`, each a family word ([`family_word`]) or a
/// handle's word ([`handle_word`]): `asgiworker-thumbnails`, `search_users-uploads`,
/// `kenji-okafor9306`, not an id (random ids mix in digits or upper case).
#[inline]
fn joined_words(run: &[u8]) -> bool {
    run.split(|b| matches!(b, b'-' | b'_'))
        .all(|w| family_word(w) || handle_word(w))
}

/// Whether `word` reads as a word of a name or handle: two or more lower-case letters, then
/// digits or none (`kenji`, `okafor9306`, `feed`), or digits only (`4411`). A random id's
/// parts mix cases and put letters after digits.
#[inline]
fn handle_word(word: &[u8]) -> bool {
    let letters = word.iter().take_while(|b| b.is_ascii_lowercase()).count();
    (letters >= 2 || letters == 0)
        && !word.is_empty()
        && word[letters..].iter().all(u8::is_ascii_digit)
}

/// Where a suffix of words starts in the run `key[i..j]`: the run ends in two or more family
/// words ([`family_word`]), or one of seven letters or more, each after `-` or `_`
/// (`<id>_client_last_seen`, `<id>_settings`; the longer the word, the less likely a random id
/// ends in it); the suffix names the key's part, the id comes
/// before it. `None` without such a suffix, or when nothing comes before it.
#[inline]
fn suffix_words(key: &[u8], i: usize, j: usize) -> Option<usize> {
    let (mut end, mut words, mut longest, mut cut) = (j, 0, 0, None);
    while end > i {
        let start = key[i..end]
            .iter()
            .rposition(|b| matches!(b, b'-' | b'_'))
            .map(|p| i + p + 1)?;
        let word = &key[start..end];
        if !family_word(word) {
            break;
        }
        words += 1;
        longest = longest.max(word.len());
        cut = Some(start - 1);
        end = start - 1;
    }
    cut.filter(|&c| c > i && (words >= 2 || longest >= 7))
}

/// Whether what comes before a suffix of words is an id: eight bytes or more with a digit or
/// an upper-case letter (a name such as `my-limiter` is words, tokenized as such).
#[inline]
fn id_before_suffix(part: &[u8]) -> bool {
    part.len() >= 8
        && part
            .iter()
            .any(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

/// Whether `word` reads as a family name's word: three or more letters of one case, one of
/// them past `f` (a word, not hex digits).
#[inline]
fn family_word(word: &[u8]) -> bool {
    word.len() >= 3
        && (word.iter().all(u8::is_ascii_lowercase) || word.iter().all(u8::is_ascii_uppercase))
        && word.iter().any(|b| !b.is_ascii_hexdigit())
}

/// Where the family word ([`family_word`]) that `key[i]` follows starts: a segment of letters
/// joined to `key[i]` by `-` or `_`.
#[inline]
fn word_before(key: &[u8], i: usize) -> Option<usize> {
    if i < 4 || !matches!(key[i - 1], b'-' | b'_') {
        return None;
    }
    let end = i - 1;
    let start = key[..end]
        .iter()
        .rposition(|b| !b.is_ascii_alphabetic())
        .map_or(0, |p| p + 1);
    ((start == 0 || !key[start - 1].is_ascii_alphanumeric()) && family_word(&key[start..end]))
        .then_some(start)
}

/// The id-like run at `key[i..]` (`i` in bounds), one table lookup per byte.
#[cfg_attr(x86_simd, allow(dead_code))]
fn id_run_scalar(key: &[u8], i: usize, d: &Delimiters) -> IdRun {
    // Kinds: hex digits (0-9, a-f, A-F) as one kind, other upper-case and lower-case letters,
    // and `-`/`_` when they are delimiters. Which hex digit a character is never matters, so
    // keys that differ only in hex digits (or only in digits) get the same answer: the skeleton
    // memos rely on it.
    let table = &d.id_kind;
    let mut last = table[key[i] as usize] & ID_KIND;
    let mut r = IdRun {
        end: i,
        ..IdRun::default()
    };
    let mut j = i;
    // Four 16-bit counters (hex, upper, lower, `-`/`_`), flushed before one could overflow.
    while j < key.len() {
        let stop = (j + 0xFFFF).min(key.len());
        let (mut acc, mut excluded) = (0u64, 0usize);
        while j < stop {
            let e = table[key[j] as usize];
            let kind = e & ID_KIND;
            if kind == 0 {
                break;
            }
            acc += 1u64 << (16 * (kind - 1));
            excluded += (e >> 3) as usize;
            r.changes += (kind != last) as usize;
            last = kind;
            j += 1;
        }
        r.hex += (acc & 0xFFFF) as usize;
        r.upper += (acc >> 16 & 0xFFFF) as usize;
        r.lower += (acc >> 32 & 0xFFFF) as usize;
        r.dash += (acc >> 48) as usize;
        r.ilou += excluded;
        if j < stop {
            break;
        }
    }
    r.end = j;
    r
}

/// Per character kind, a bit per byte of a block (bit `k`: byte `j + k` of the key, zero past
/// its end).
#[cfg(x86_simd)]
#[derive(Clone, Copy)]
struct KindMasks {
    hex: u32,
    upper: u32,
    lower: u32,
    dash: u32,
    ilou: u32,
}

/// [`id_run_scalar`] a block of `W` bytes at a time, from `load`'s kind masks: the run ends at
/// the first byte of no kind; the kind changes where a byte's kind bit differs from the byte
/// before it (the kinds exclude each other), the counts are popcounts.
#[cfg(x86_simd)]
#[inline(always)]
fn id_run_blocks<const W: u32>(key: &[u8], i: usize, load: impl Fn(usize) -> KindMasks) -> IdRun {
    let mut r = IdRun::default();
    let mut j = i;
    let mut m = load(j);
    // The kind bits of the byte before the block; for the run's first byte, its own (no
    // change before it).
    let mut prev = [m.hex & 1, m.upper & 1, m.lower & 1, m.dash & 1];
    loop {
        let valid = m.hex | m.upper | m.lower | m.dash;
        let stop = (!valid).trailing_zeros().min(W);
        let run = ((1u64 << stop) - 1) as u32;
        let changed = |k: u32, p: u32| k ^ (k << 1 | p);
        let changes = changed(m.hex, prev[0])
            | changed(m.upper, prev[1])
            | changed(m.lower, prev[2])
            | changed(m.dash, prev[3]);
        r.changes += (changes & run).count_ones() as usize;
        r.hex += (m.hex & run).count_ones() as usize;
        r.upper += (m.upper & run).count_ones() as usize;
        r.lower += (m.lower & run).count_ones() as usize;
        r.dash += (m.dash & run).count_ones() as usize;
        r.ilou += (m.ilou & run).count_ones() as usize;
        j += stop as usize;
        if stop < W || j >= key.len() {
            r.end = j.min(key.len());
            return r;
        }
        let last = |k: u32| k >> (W - 1) & 1;
        prev = [last(m.hex), last(m.upper), last(m.lower), last(m.dash)];
        m = load(j);
    }
}

/// The kind masks of the block at `key[j..]` from its bytes `x` (already loaded), `$w` bytes
/// wide, with the intrinsics of that width: one body for SSE2 and AVX2.
#[cfg(x86_simd)]
macro_rules! kind_masks {
    ($x:expr, $d:expr, $set1:ident, $or:ident, $and:ident, $gt:ident, $lt:ident, $eq:ident, $movemask:ident) => {{
        let x = $x;
        let set = |b: u8| $set1(b as i8);
        let range = |x, lo: u8, hi: u8| $and($gt(x, set(lo - 1)), $lt(x, set(hi + 1)));
        let eq = |x, b: u8| $eq(x, set(b));
        let bits = |m| $movemask(m) as u32;
        let folded = $or(x, set(0x20));
        let dash = $d.is(b'-') as u32 * bits(eq(x, b'-')) | $d.is(b'_') as u32 * bits(eq(x, b'_'));
        KindMasks {
            hex: bits($or(range(x, b'0', b'9'), range(folded, b'a', b'f'))),
            upper: bits(range(x, b'G', b'Z')),
            lower: bits(range(x, b'g', b'z')),
            dash,
            ilou: bits($or(
                $or(eq(x, b'I'), eq(x, b'L')),
                $or(eq(x, b'O'), eq(x, b'U')),
            )),
        }
    }};
}

/// The `W` bytes of `key` from `j` for a block load: a pointer to them (or to a zero-padded
/// copy in `buf` when the key ends sooner and is shorter than a block) and how many bits to
/// shift the masks right (when the block was read from the key's last `W` bytes instead).
#[cfg(x86_simd)]
#[inline(always)]
fn block_at<const W: usize>(key: &[u8], j: usize, buf: &mut [u8; W]) -> (*const u8, u32) {
    if j + W <= key.len() {
        (key[j..].as_ptr(), 0)
    } else if key.len() >= W {
        (key[key.len() - W..].as_ptr(), (j + W - key.len()) as u32)
    } else {
        *buf = [0; W];
        buf[..key.len() - j].copy_from_slice(&key[j..]);
        (buf.as_ptr(), 0)
    }
}

/// [`KindMasks`] shifted right by `s` bits (the bits past the key's end come in as zeros).
#[cfg(x86_simd)]
#[inline(always)]
fn shifted(m: KindMasks, s: u32) -> KindMasks {
    KindMasks {
        hex: m.hex >> s,
        upper: m.upper >> s,
        lower: m.lower >> s,
        dash: m.dash >> s,
        ilou: m.ilou >> s,
    }
}

/// [`id_run_scalar`] sixteen bytes at a time with SSE2 (part of every x86-64 CPU).
#[cfg(x86_simd)]
#[allow(unsafe_code)]
#[inline(always)]
fn id_run_sse2(key: &[u8], i: usize, d: &Delimiters) -> IdRun {
    use std::arch::x86_64::*;
    id_run_blocks::<16>(key, i, |j| {
        let mut buf = [0u8; 16];
        let (p, s) = block_at(key, j, &mut buf);
        // SAFETY: SSE2 is part of the x86-64 baseline; `p` points at 16 readable bytes.
        let m = unsafe {
            kind_masks!(
                _mm_loadu_si128(p as *const __m128i),
                d,
                _mm_set1_epi8,
                _mm_or_si128,
                _mm_and_si128,
                _mm_cmpgt_epi8,
                _mm_cmplt_epi8,
                _mm_cmpeq_epi8,
                _mm_movemask_epi8
            )
        };
        shifted(m, s)
    })
}

/// [`id_run_scalar`] thirty-two bytes at a time (AVX2, counts by POPCNT): most ids fit one
/// block.
#[cfg(x86_simd)]
#[allow(unsafe_code)]
fn id_run_avx2(key: &[u8], i: usize, d: &Delimiters) -> IdRun {
    #[target_feature(enable = "avx2,popcnt")]
    fn with_avx2(key: &[u8], i: usize, d: &Delimiters) -> IdRun {
        use std::arch::x86_64::*;
        // No less-than compare in AVX2: `a < b` is `b > a`.
        let lt = |a: __m256i, b: __m256i| _mm256_cmpgt_epi8(b, a);
        id_run_blocks::<32>(key, i, |j| {
            let mut buf = [0u8; 32];
            let (p, s) = block_at(key, j, &mut buf);
            // SAFETY: `p` points at 32 readable bytes; AVX2 is enabled on this function.
            let m = unsafe {
                kind_masks!(
                    _mm256_loadu_si256(p as *const __m256i),
                    d,
                    _mm256_set1_epi8,
                    _mm256_or_si256,
                    _mm256_and_si256,
                    _mm256_cmpgt_epi8,
                    lt,
                    _mm256_cmpeq_epi8,
                    _mm256_movemask_epi8
                )
            };
            shifted(m, s)
        })
    }
    // SAFETY: called only where the CPU has AVX2 and POPCNT.
    unsafe { with_avx2(key, i, d) }
}

/// In [`Delimiters::id_kind`]: the character kind of an id-like run (0: the run ends).
const ID_KIND: u8 = 7;
/// In [`Delimiters::id_kind`]: an upper-case letter Crockford base32 leaves out.
const ID_NOT_CROCKFORD: u8 = 8;

/// A number of one or two digits at `key[i..]`: its value and length (a third digit makes it
/// no such number).
#[inline]
fn small_number(key: &[u8], i: usize) -> Option<(u32, usize)> {
    let n = key[i.min(key.len())..]
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .count();
    (1..=2).contains(&n).then(|| {
        (
            key[i..i + n]
                .iter()
                .fold(0u32, |v, b| v * 10 + (b - b'0') as u32),
            n,
        )
    })
}

/// A calendar date at `key[i..]`, zero-padded or not: `YYYY-M-D` (month 1 to 12, day 1 to
/// 31), a month `YYYY-M` (year 1900 to 2099) or an ISO week `YYYY-Www` (week 1 to 53), ending
/// at a delimiter or at the end. A third number after a month that is no day (`2026-5-45`,
/// `2026-13-01`) makes it no date.
fn match_date(key: &[u8], i: usize, d: &Delimiters) -> Option<usize> {
    let s = key.get(i..i + 6)?;
    if !(digits(s, 4) && s[4] == b'-') {
        return None;
    }
    let century = matches!(&s[..2], b"19" | b"20");
    if s[5] == b'W' {
        let (week, n) = small_number(key, i + 6)?;
        let end = i + 6 + n;
        return ((1..=53).contains(&week) && boundary(key, end, d)).then_some(end - i);
    }
    let (month, n) = small_number(key, i + 5)?;
    if !(1..=12).contains(&month) {
        return None;
    }
    let end = i + 5 + n;
    if key.get(end) == Some(&b'-') && key.get(end + 1).is_some_and(u8::is_ascii_digit) {
        let (day, m) = small_number(key, end + 1)?;
        let end = end + 1 + m;
        return ((1..=31).contains(&day) && boundary(key, end, d)).then_some(end - i);
    }
    (century && boundary(key, end, d)).then_some(end - i)
}

/// An ISO week written `Www-YYYY` at `key[i..]` (`W23-2026`), ending at a delimiter or at the
/// end. Reads where the digits are, never their values (no memo records it).
#[inline]
fn match_week(key: &[u8], i: usize, d: &Delimiters) -> Option<usize> {
    let n = key[(i + 1).min(key.len())..]
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .count();
    let dash = i + 1 + n;
    ((1..=2).contains(&n)
        && key.get(dash) == Some(&b'-')
        && key
            .get(dash + 1..dash + 5)
            .is_some_and(|y| y.iter().all(u8::is_ascii_digit))
        && boundary(key, dash + 5, d))
    .then_some(dash + 5 - i)
}

fn match_ip(key: &[u8], i: usize, d: &Delimiters) -> Option<usize> {
    let mut j = i;
    for part in 0..4 {
        let start = j;
        let mut value: u32 = 0;
        while j < key.len() && key[j].is_ascii_digit() && j - start < 3 {
            value = value * 10 + (key[j] - b'0') as u32;
            j += 1;
        }
        if j == start || value > 255 {
            return None;
        }
        if part < 3 {
            if key.get(j) != Some(&b'.') {
                return None;
            }
            j += 1;
        }
    }
    boundary(key, j, d).then_some(j - i)
}

/// Whether `b` may be in the local part of an e-mail address (before the `@`).
#[inline]
fn local_byte(b: u8) -> bool {
    // RFC 6531 allows UTF-8 in the local part; names carry apostrophes.
    b.is_ascii_alphanumeric() || b >= 0x80 || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-' | b'\'')
}

/// The next `@` of a key at or after some position, and where the run of local-part bytes
/// that ends at it starts: an e-mail address can start at a segment start in between.
#[derive(Debug, Clone, Copy)]
struct AtSign {
    /// The `@`, or the key's length when there is none.
    at: usize,
    /// The first byte of the local-part run before it.
    local_from: usize,
}

impl AtSign {
    #[inline]
    fn after(key: &[u8], from: usize) -> AtSign {
        let at = memchr::memchr(b'@', &key[from.min(key.len())..]).map_or(key.len(), |p| from + p);
        let mut local_from = at;
        while local_from > from && local_byte(key[local_from - 1]) {
            local_from -= 1;
        }
        AtSign { at, local_from }
    }
}

/// The length of the JSON object or array at `key[i..]`: `{"`, `["`, `[{` or `[[` opens it, and
/// it runs to the brace or bracket that closes the first (strings and their escapes skipped),
/// which ends the key or comes before a delimiter. Reads only braces, brackets, quotes and
/// backslashes, never a letter or digit (the skeleton and shape memos rely on it).
fn match_json(key: &[u8], i: usize, d: &Delimiters) -> Option<usize> {
    if !matches!(
        (key[i], key.get(i + 1)),
        (b'{', Some(b'"')) | (b'[', Some(b'"' | b'{' | b'['))
    ) {
        return None;
    }
    let mut depth = 0usize;
    let mut j = i;
    let mut in_string = false;
    while j < key.len() {
        let b = key[j];
        if in_string {
            match b {
                b'\\' => j += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        let end = j + 1;
                        return (end == key.len() || d.is(key[end])).then_some(end - i);
                    }
                }
                _ => {}
            }
        }
        j += 1;
    }
    None
}

/// An e-mail address starting at `key[i]` (a letter or digit) whose `@` is `key[at]`: a local
/// part of 1 to 64 letters, digits and `. _ % + -`, then a domain of two or more labels of
/// letters, digits and `-` joined by `.`, the last at least two long, ending at a delimiter or
/// at the end. Reads which bytes are letters or digits and which punctuation, never which
/// letter or digit (the skeleton and shape memos rely on it).
fn match_email(key: &[u8], i: usize, at: usize, d: &Delimiters) -> Option<usize> {
    let n = key.len();
    if at <= i || at - i > 64 || !(key[i].is_ascii_alphanumeric() || key[i] >= 0x80) {
        return None;
    }
    let (mut j, mut labels, mut last, mut end) = (at + 1, 0, 0, at + 1);
    loop {
        let start = j;
        while j < n && (key[j].is_ascii_alphanumeric() || key[j] == b'-') {
            j += 1;
        }
        if j == start {
            break;
        }
        labels += 1;
        last = j - start;
        end = j;
        if j + 1 < n && key[j] == b'.' && key[j + 1].is_ascii_alphanumeric() {
            j += 1;
            continue;
        }
        break;
    }
    (labels >= 2 && last >= 2 && boundary(key, end, d)).then_some(end - i)
}

// Byte classes for the one-pass segment scan.
const C_DIGIT: u8 = 1;
const C_HEXALPHA: u8 = 2;
const C_ALPHA: u8 = 4;
const C_OTHER: u8 = 8;
const C_DELIM: u8 = 16;

static CLASS: [u8; 256] = {
    let mut t = [C_OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_digit() {
            C_DIGIT
        } else if matches!(c, b'a'..=b'f' | b'A'..=b'F') {
            C_HEXALPHA
        } else if c.is_ascii_alphabetic() {
            C_ALPHA
        } else {
            C_OTHER
        };
        b += 1;
    }
    t
};

/// Where the tokenizer writes a key's tokens.
pub trait TokenSink {
    /// Tokens written so far.
    fn count(&self) -> usize;
    /// The literal token `key[start..end]`.
    fn lit(&mut self, key: &[u8], start: usize, end: usize);
    /// A class token.
    fn class(&mut self, c: Class);
    /// The tokenizer tested whether a date or an IPv4 address starts somewhere (the only
    /// decisions that depend on the values of digits, see [`skeleton_hash`]).
    #[inline(always)]
    fn value_check(&mut self, check: ValueCheck) {
        let _ = check;
    }
    /// The `<hex>` token just written covers `key[start..end]`.
    #[inline(always)]
    fn hex_span(&mut self, start: usize, end: usize) {
        let _ = (start, end);
    }

    /// The `<token>` or `<ulid>` just written starts at `key[start]`.
    #[inline(always)]
    fn id_span(&mut self, start: usize) {
        let _ = start;
    }

    /// What the tokenizer is about to read, or just read, of `key` (for the token memo, which
    /// remembers which byte classes decided a key's tokens).
    #[inline(always)]
    fn reads(&mut self, key: &[u8], what: Reads) {
        let _ = (key, what);
    }
}

/// What the tokenizer reads of a key's bytes beyond their being letters or digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// A segment starts here (a letter, digit or other non-delimiter byte).
    Segment(usize),
    /// The id-like recognizer is about to read from here on: which bytes are hex digits,
    /// upper or lower case, `I`/`L`/`O`/`U`.
    IdRun(usize),
    /// Whether the segment `start..end` is `<hex>` depends on which of its letters are hex
    /// digits.
    HexSegment(usize, usize),
    /// The IPv6 address or uuid just written covers `start..end`: only which of its bytes are
    /// hex digits decided it.
    HexOnly(usize, usize),
    /// The standard-base64 recognizer is about to read from here on: which bytes are digits,
    /// upper or lower case letters, `+` or `/`.
    Base64(usize),
    /// Which letters the bytes `start..end` are decided a token (the `W` of an ISO week).
    Exact(usize, usize),
}

/// A bit for each of the bytes `start..end` (those below 128).
#[inline]
pub(crate) fn span_bits(start: usize, end: usize) -> u128 {
    let below = |n: usize| {
        if n >= 128 {
            u128::MAX
        } else {
            (1u128 << n) - 1
        }
    };
    below(end) & !below(start)
}

impl TokenSink for Vec<Token> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn lit(&mut self, _key: &[u8], start: usize, end: usize) {
        self.push(Token::Lit { start, end });
    }
    #[inline(always)]
    fn class(&mut self, c: Class) {
        self.push(Token::Class(c));
    }
}

/// One value-dependent test the tokenizer made, and its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueCheck {
    /// Where the tested value starts.
    pub at: usize,
    /// `true` for an IPv4 address, `false` for a date.
    pub ip: bool,
    /// The length matched, `None` when the test failed.
    pub len: Option<usize>,
}

impl ValueCheck {
    /// Tests whether an IPv4 address (`ip`) or a date starts at `key[at]`.
    #[inline]
    pub fn run(key: &[u8], at: usize, ip: bool, d: &Delimiters) -> ValueCheck {
        let len = if ip {
            match_ip(key, at, d)
        } else {
            match_date(key, at, d)
        };
        ValueCheck { at, ip, len }
    }

    /// Whether the same test on `key` has the same outcome.
    #[inline]
    pub fn holds(&self, key: &[u8], d: &Delimiters) -> bool {
        ValueCheck::run(key, self.at, self.ip, d).len == self.len
    }
}

/// Tokens together with the value-dependent tests that decided them.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// The tokens.
    pub tokens: Vec<Token>,
    /// The tests, in the order they were made.
    pub checks: Vec<ValueCheck>,
    /// Where each `<hex>` token is, in order.
    pub hex_spans: Vec<(usize, usize)>,
    /// Where each `<token>` and `<ulid>` starts, in order.
    pub id_spans: Vec<usize>,
    /// The bytes (a bit each, the first 128) whose being a hex digit decided a token.
    pub hex_read: u128,
    /// The bytes whose case or being `I`/`L`/`O`/`U` decided a token (the id-like runs').
    pub ids_read: u128,
    /// The bytes of IPv6 addresses and uuids: whether they are digits or letters decided
    /// nothing (only which are hex digits did).
    pub hex_only: u128,
    /// The bytes whose case and being a digit decided a token (the standard-base64
    /// recognizer's), even inside a later uuid.
    pub case_read: u128,
    /// Whether the standard-base64 recognizer ran: it reads letter case and which bytes are
    /// digits, so keys of one hex skeleton or one shape can tokenize differently.
    pub base64: bool,
    /// The bytes whose very value decided a token though no literal holds them.
    pub exact_read: u128,
    /// One past the last byte an id-like run the recognizer tried could reach (the runs of
    /// letters, digits, `-` and `_` it started at): it read their case and which of them are
    /// hex digits, even where it then said no (`zz-<uuid>` against `zz-<token>`).
    pub id_reach: usize,
}

impl TokenSink for Recorded {
    #[inline(always)]
    fn count(&self) -> usize {
        self.tokens.len()
    }
    #[inline(always)]
    fn lit(&mut self, key: &[u8], start: usize, end: usize) {
        self.tokens.lit(key, start, end);
    }
    #[inline(always)]
    fn class(&mut self, c: Class) {
        self.tokens.push(Token::Class(c));
    }
    #[inline(always)]
    fn value_check(&mut self, check: ValueCheck) {
        self.checks.push(check);
    }
    #[inline(always)]
    fn hex_span(&mut self, start: usize, end: usize) {
        self.hex_spans.push((start, end));
    }
    #[inline(always)]
    fn id_span(&mut self, start: usize) {
        self.id_spans.push(start);
    }
    #[inline(always)]
    fn reads(&mut self, key: &[u8], what: Reads) {
        match what {
            Reads::Segment(at) => self.segment(key, at),
            Reads::IdRun(at) => {
                self.hex_read |= span_bits(at, 128);
                self.ids_read |= span_bits(at, 128);
                let run = key[at.min(key.len())..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
                    .count();
                self.id_reach = self.id_reach.max(at + run);
            }
            Reads::HexSegment(start, end) => self.hex_read |= span_bits(start, end),
            Reads::HexOnly(start, end) => self.hex_only |= span_bits(start, end),
            Reads::Base64(at) => {
                self.case_read |= span_bits(at, 128);
                self.base64 = true;
            }
            Reads::Exact(start, end) => self.exact_read |= span_bits(start, end),
        }
    }
}

impl Recorded {
    /// A segment starts at `key[at]`. One that starts with a hex digit is tested for an IPv6
    /// address or a uuid (behind pre-checks that read only punctuation).
    fn segment(&mut self, key: &[u8], at: usize) {
        // When a pre-check passes, whether the first byte is a hex digit decides whether the
        // recognizer runs, and then it reads which of the following bytes are.
        let n = key.len();
        let ipv6 = key[at..n.min(at + 5)].contains(&b':');
        let uuid = key.get(at + 8) == Some(&b'-');
        if !key[at].is_ascii_alphanumeric() || !(ipv6 || uuid) {
            return;
        }
        self.hex_read |= span_bits(at, at + 1);
        if !key[at].is_ascii_hexdigit() {
            return;
        }
        if ipv6 {
            self.hex_read |= span_bits(at, ipv6_scan(key, at).1);
        }
        if uuid {
            self.hex_read |= span_bits(at, n.min(at + 36));
        }
    }
}

/// Splits `key` into tokens and records the value-dependent tests (both cleared first).
pub fn tokenize_recorded(key: &[u8], d: &Delimiters, out: &mut Recorded) {
    out.tokens.clear();
    out.checks.clear();
    out.hex_spans.clear();
    out.id_spans.clear();
    out.hex_read = 0;
    out.ids_read = 0;
    out.hex_only = 0;
    out.case_read = 0;
    out.base64 = false;
    out.exact_read = 0;
    out.id_reach = 0;
    tokenize_into(key, d, out);
}

/// A 64-bit hash of the *shape* of a key: every ASCII letter and digit read as `a`. Keys whose
/// opaque tokens and ULIDs never repeat a skeleton share a shape, so the pattern tree can
/// remember them by it (re-checking each token, see the pattern tree's id memo).
#[inline]
pub fn shape_hash(key: &[u8]) -> u64 {
    crate::sketch::mix_words(key, shape_word)
}

// The word maps below are also what `simd` falls back to off x86-64.

const L: u64 = 0x0101_0101_0101_0101;
const H: u64 = 0x8080_8080_8080_8080;

/// High bit of each byte set where `lo <= byte <= hi` (bytes below 0x80 only; no borrow
/// crosses bytes: each operand byte is at least 0x80).
#[inline(always)]
fn between(w: u64, lo: u64, hi: u64) -> u64 {
    let x = (w & !H) | H;
    (x - lo * L) & !(x - (hi + 1) * L) & !w & H
}

/// A byte mask (0xFF per byte) from high bits.
#[inline(always)]
fn full(m: u64) -> u64 {
    (m >> 7) * 0xFF
}

/// Eight bytes with every ASCII letter and digit read as `a`.
#[inline(always)]
pub(super) fn shape_word(w: u64) -> u64 {
    let m = full(between(w, 0x30, 0x39) | between(w, 0x41, 0x5A) | between(w, 0x61, 0x7A));
    (w & !m) | ((0x61 * L) & m)
}

/// Eight bytes with every ASCII letter read as `a` and every digit as `0`.
#[inline(always)]
pub(super) fn class_shape_word(w: u64) -> u64 {
    let d = full(between(w, 0x30, 0x39));
    let l = full(between(w, 0x41, 0x5A) | between(w, 0x61, 0x7A));
    (w & !(d | l)) | ((0x30 * L) & d) | ((0x61 * L) & l)
}

/// A 64-bit hash of the *class shape* of a key: every ASCII letter read as `a` and every digit
/// as `0`. Keys of one family whose letters vary (e-mail addresses, words) and whose hex groups
/// vary (IPv6 addresses) share it, and their letter and digit runs start and end at the same
/// places, so the pattern tree can remember their tokens by it (re-tokenizing each key, see the
/// pattern tree's token memo).
#[inline]
pub fn class_shape_hash(key: &[u8]) -> u64 {
    crate::sketch::mix_words(key, class_shape_word)
}

/// [`shape_hash`] or, with `CLASS`, [`class_shape_hash`], sixteen bytes at a time: for a
/// family whose keys one of them is known to find.
#[inline]
pub fn one_shape_hash<const CLASS: bool>(key: &[u8]) -> u64 {
    crate::sketch::mix_blocks_n(
        key,
        |w| {
            [if CLASS {
                class_shape_word(w)
            } else {
                shape_word(w)
            }]
        },
        |b| [super::simd::shape_block::<CLASS>(b)],
    )[0]
}

/// [`shape_hash`] and [`class_shape_hash`] of `key` in one pass: the hashes a key needs when
/// neither its skeleton nor its hex skeleton is remembered.
#[inline]
pub fn shape_hashes(key: &[u8]) -> [u64; 2] {
    crate::sketch::mix_blocks_n(
        key,
        |w| {
            // The byte classes once, shared by the two maps (each equal to its own word map).
            let d = full(between(w, 0x30, 0x39));
            let l = full(between(w | (0x20 * L), 0x61, 0x7A));
            let alnum = d | l;
            let shape = (w & !alnum) | ((0x61 * L) & alnum);
            let class_shape = (w & !alnum) | ((0x30 * L) & d) | ((0x61 * L) & l);
            [shape, class_shape]
        },
        super::simd::shape_blocks,
    )
}

/// A 64-bit hash of the *skeleton* of a key: the key with every ASCII digit replaced by `0`.
///
/// The tokenizer reads digits only through their class, except when it tests for a date or an
/// IPv4 address (month, day and octet ranges). So two keys with the same skeleton whose value
/// tests ([`ValueCheck`]) come out the same have the same tokens: the pattern tree can remember
/// a skeleton's pattern instead of tokenizing every key. Eight bytes at a time, branch-free.
#[inline]
pub fn skeleton_hash(key: &[u8]) -> u64 {
    skeleton_hash_of::<false>(key)
}

/// A 64-bit hash of the *hex skeleton* of a key: every hex digit (`0`-`9`, `a`-`f`, `A`-`F`)
/// read as `0`. Uuids and hex ids tokenize the same whichever hex digits they hold (a `<hex>`
/// token only needs a letter, and a digit when shorter than 16), so keys made of a literal
/// prefix, `<uuid>`/`<hex>` tokens and literals without hex letters can be remembered by this
/// skeleton (see the pattern tree), while their plain skeletons never repeat.
#[inline]
pub fn hex_skeleton_hash(key: &[u8]) -> u64 {
    skeleton_hash_of::<true>(key)
}

#[inline(always)]
fn skeleton_hash_of<const HEX: bool>(key: &[u8]) -> u64 {
    crate::sketch::mix_blocks_n(
        key,
        |w| [skeleton_word::<HEX>(w)],
        |b| [super::simd::skeleton_block::<HEX>(b)],
    )[0]
}

/// Eight bytes with every digit (and, with `HEX`, every hex letter) read as `0`.
#[inline(always)]
pub(super) fn skeleton_word<const HEX: bool>(w: u64) -> u64 {
    let t = w ^ (0x30 * L);
    // High bit of each byte: set where (t & 0x7f) >= 10 (no borrows: every byte >= 0x80).
    let ge10 = ((t | H) - 10 * L) & H;
    // Digits: t < 10 and the byte below 0x80.
    let digit = !ge10 & !t & H;
    let mut m = (digit >> 7) * 0xFF;
    if HEX {
        // Hex letters: (byte | 0x20) ^ 0x60 in 1..=6, the byte below 0x80.
        let u = (w | (0x20 * L)) ^ (0x60 * L);
        let ge1 = ((u | H) - L) & H;
        let ge7 = ((u | H) - 7 * L) & H;
        m |= ((ge1 & !ge7 & !u & H) >> 7) * 0xFF;
    }
    (w & !m) | ((0x30 * L) & m)
}

/// Splits `key` into tokens, appending them to `out` (cleared first).
pub fn tokenize(key: &[u8], d: &Delimiters, out: &mut Vec<Token>) {
    out.clear();
    tokenize_into(key, d, out);
}

/// Splits `key` into tokens, writing them to `out`.
#[inline]
pub fn tokenize_into<S: TokenSink>(key: &[u8], d: &Delimiters, out: &mut S) {
    let n = key.len();
    let mut i = 0;
    let mut email = AtSign::after(key, 0);
    'tokens: while i < n {
        if out.count() >= MAX_TOKENS {
            out.class(Class::Rest);
            return;
        }
        let b = key[i];
        if d.is(b) {
            // An opaque token may start with `-` or `_` (base64url), right after another
            // delimiter or at the start.
            if matches!(b, b'-' | b'_')
                && (i == 0 || d.is(key[i - 1]))
                && n - i >= 20
                && let Some(len) = id_token(key, i, d, out)
            {
                i += len;
                continue;
            }
            // And a standard-base64 one with `/`.
            if b == b'/'
                && (i == 0 || d.is(key[i - 1]))
                && n - i >= 20
                && let Some(len) = base64_token(key, i, d, out)
            {
                i += len;
                continue;
            }
            // A JSON object written into the key (braces are delimiters).
            if b == b'{'
                && let Some(len) = match_json(key, i, d)
            {
                out.class(Class::Json);
                i += len;
                continue;
            }
            out.lit(key, i, i + 1);
            i += 1;
            continue;
        }
        // A segment starts here: compound values first, behind O(1) pre-checks.
        out.reads(key, Reads::Segment(i));
        if email.at < n {
            if i > email.at {
                email = AtSign::after(key, i);
            }
            if i >= email.local_from
                && i < email.at
                && let Some(len) = match_email(key, i, email.at, d)
            {
                out.class(Class::Email);
                i += len;
                continue;
            }
        }
        if b == b'['
            && let Some(len) = match_json(key, i, d)
        {
            out.class(Class::Json);
            i += len;
            continue;
        }
        if b == b'W'
            && key.get(i + 1).is_some_and(u8::is_ascii_digit)
            && let Some(len) = match_week(key, i, d)
        {
            // The `W` decided it: the token memo compares it exactly.
            out.reads(key, Reads::Exact(i, i + 1));
            out.class(Class::Date);
            i += len;
            continue;
        }
        let c = CLASS[b as usize];
        if c & (C_DIGIT | C_HEXALPHA) != 0 {
            if key[i..n.min(i + 5)].contains(&b':')
                && let Some(len) = match_ipv6(key, i)
            {
                out.class(Class::Ipv6);
                out.reads(key, Reads::HexOnly(i, i + len));
                i += len;
                continue;
            }
            if key.get(i + 8) == Some(&b'-')
                && let Some(len) = match_uuid(key, i, d)
            {
                out.class(Class::Uuid);
                out.reads(key, Reads::HexOnly(i, i + len));
                i += len;
                continue;
            }
            if c == C_DIGIT {
                // The only tests that read digit values; each is recorded (for the memo).
                for ip in [false, true] {
                    let candidate = if ip {
                        (i..n.min(i + 4)).any(|p| key[p] == b'.')
                    } else {
                        key.get(i + 4) == Some(&b'-')
                    };
                    if !candidate {
                        continue;
                    }
                    let check = ValueCheck::run(key, i, ip, d);
                    out.value_check(check);
                    if let Some(len) = check.len {
                        out.class(if ip { Class::Ip } else { Class::Date });
                        i += len;
                        continue 'tokens;
                    }
                }
            }
        }
        let mut j = i;
        let mut mask = 0u8;
        while j < n {
            let c = d.class(key[j]);
            if c == C_DELIM {
                break;
            }
            mask |= c;
            j += 1;
        }
        // Standard base64 (`+` and `/` among letters and digits) before the other ids, so that
        // one that has a `/` is not cut there.
        if n - i >= 20
            && (key.get(j) == Some(&b'/') || (mask & C_OTHER != 0 && key[i..j].contains(&b'+')))
            && (c & (C_DIGIT | C_HEXALPHA | C_ALPHA) != 0
                || (b == b'+' && (i == 0 || d.is(key[i - 1]))))
            && let Some(len) = base64_token(key, i, d, out)
        {
            i += len;
            continue;
        }
        if c & (C_DIGIT | C_HEXALPHA | C_ALPHA) != 0
            && may_be_id(key, i, j, mask)
            && let Some(len) = id_token(key, i, d, out)
        {
            i += len;
            continue;
        }
        let len = j - i;
        if mask & C_OTHER == 0 && len >= 8 {
            // `<hex>` or not: whether every letter is a hex digit.
            out.reads(key, Reads::HexSegment(i, j));
        }
        if mask == C_DIGIT {
            out.class(Class::Int);
            // A decimal is one number with its integer part (`12.5` beside `12`): digits, `.`,
            // digits, ending the segment, not a part of a dotted run (`1.2.3`, an address).
            j += decimal_part(key, i, j, d);
        } else if mask & !(C_DIGIT | C_HEXALPHA) == 0
            && len >= 8
            && (len >= 16 || mask & C_DIGIT != 0)
        {
            out.class(Class::Hex);
            out.hex_span(i, j);
        } else if mask & (C_DIGIT | C_OTHER) == 0 {
            // Letters only: one literal run.
            out.lit(key, i, j);
        } else if !runs(key, i, j, out) {
            return;
        }
        i = j;
    }
}

/// The length of the fraction (`.` and digits) after the digits `key[i..j]`, when they are a
/// decimal number: the `.` (a delimiter) is followed by digits that end at a delimiter other
/// than `.` or at the end, and no `.` comes before `key[i]`. Reads which bytes are digits and
/// dots, never digit values.
#[inline]
fn decimal_part(key: &[u8], i: usize, j: usize, d: &Delimiters) -> usize {
    if key.get(j) != Some(&b'.') || !d.is(b'.') || (i > 0 && key[i - 1] == b'.') {
        return 0;
    }
    let f = key[j + 1..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let end = j + 1 + f;
    if f > 0 && boundary(key, end, d) && key.get(end) != Some(&b'.') {
        end - j
    } else {
        0
    }
}

/// Writes the `<token>` or `<ulid>` at `key[i..]` and returns its length, if there is one.
#[inline(always)]
fn id_token<S: TokenSink>(key: &[u8], i: usize, d: &Delimiters, out: &mut S) -> Option<usize> {
    out.reads(key, Reads::IdRun(word_before(key, i).unwrap_or(i)));
    let (len, class) = match_id_like(key, i, d)?;
    out.class(class);
    out.id_span(i);
    Some(len)
}

/// A standard-base64 id at `key[i..]` (`A`-`Z`, `a`-`z`, `0`-`9`, `+`, `/`, up to two `=` of
/// padding), as `base64.b64encode` of a digest writes it (Flask-Caching's memoized keys): at
/// least 20 letters, digits, `+` and `/`, with a `+` or `/`, both cases, the kind (digit,
/// upper, lower case) changing at least once every four letters and digits, and no part
/// between `/` that reads as a word or a number (`api`, `Users`, `2024`: a path, not an id).
/// Ends at a delimiter or at the end.
fn match_base64(key: &[u8], i: usize, d: &Delimiters) -> Option<usize> {
    let n = key.len();
    let (mut j, mut alnum, mut sym, mut upper, mut lower, mut changes) = (i, 0, 0, 0, 0, 0);
    let mut last = 0u8;
    let mut part = i;
    let word_like = |p: &[u8]| {
        let lower_tail = |t: &[u8]| t.iter().all(u8::is_ascii_lowercase);
        (p.len() >= 3 && (lower_tail(p) || p.iter().all(u8::is_ascii_digit)))
            || (p.len() >= 4
                && (p.iter().all(u8::is_ascii_uppercase)
                    || (p[0].is_ascii_uppercase() && lower_tail(&p[1..]))))
    };
    while j < n {
        let kind = match key[j] {
            b'0'..=b'9' => 1,
            b'A'..=b'Z' => 2,
            b'a'..=b'z' => 3,
            b'+' | b'/' => {
                if key[j] == b'/' {
                    if word_like(&key[part..j]) {
                        return None;
                    }
                    part = j + 1;
                }
                sym += 1;
                j += 1;
                continue;
            }
            _ => break,
        };
        upper += (kind == 2) as usize;
        lower += (kind == 3) as usize;
        changes += (last != 0 && kind != last) as usize;
        last = kind;
        alnum += 1;
        j += 1;
    }
    if word_like(&key[part..j]) {
        return None;
    }
    let mut pad = 0;
    while pad < 2 && j < n && key[j] == b'=' {
        j += 1;
        pad += 1;
    }
    let ends = j == n || d.is(key[j]);
    let len = alnum + sym;
    (ends && sym > 0 && len >= 20 && upper > 0 && lower > 0 && changes * 4 >= alnum)
        .then_some(j - i)
}

/// Writes the standard-base64 `<token>` at `key[i..]` and returns its length, if there is one.
#[inline]
fn base64_token<S: TokenSink>(key: &[u8], i: usize, d: &Delimiters, out: &mut S) -> Option<usize> {
    out.reads(key, Reads::Base64(i));
    let len = match_base64(key, i, d)?;
    out.class(Class::Token);
    Some(len)
}

/// Whether an id-like run can start at the segment `key[i..j]` whose class bits are `mask`
/// (when not, [`match_id_like`] would say no). The run starts with the segment's bytes, so a
/// byte that is neither a letter, a digit nor a delimiter in the segment ends it where no
/// delimiter follows (no id), and a delimiter other than `-` and `_` ends it with the segment
/// (an id only when the segment is 20 bytes or more).
#[inline(always)]
fn may_be_id(key: &[u8], i: usize, j: usize, mask: u8) -> bool {
    mask & C_OTHER == 0
        && key.len() - i >= 20
        && (j - i >= 20 || matches!(key.get(j), Some(b'-' | b'_')))
}

/// Splits the segment `key[from..to]` into letter runs (literal), digit runs (`<int>`), single
/// punctuation bytes (literal) and runs of other bytes (`<bytes>`). `false` when the key
/// reached [`MAX_TOKENS`] and ended in `<rest>`.
#[inline]
fn runs<S: TokenSink>(key: &[u8], from: usize, to: usize, out: &mut S) -> bool {
    let mut i = from;
    while i < to {
        if out.count() >= MAX_TOKENS {
            out.class(Class::Rest);
            return false;
        }
        let b = key[i];
        let mut j = i + 1;
        if b.is_ascii_alphabetic() || utf8_char(&key[..to], i) > 0 {
            // Letters of any script, and an apostrophe between them.
            j = word_end(key, i, to);
            out.lit(key, i, j);
        } else if b.is_ascii_digit() {
            while j < to && key[j].is_ascii_digit() {
                j += 1;
            }
            out.class(Class::Int);
        } else if b.is_ascii_graphic() || b == b' ' {
            out.lit(key, i, j);
        } else {
            while j < to
                && !(key[j].is_ascii_graphic() || key[j] == b' ')
                && utf8_char(&key[..to], j) == 0
            {
                j += 1;
            }
            out.class(Class::Bytes);
        }
        i = j;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `match_id_like` written the plain way (a `match` per byte, separate passes for the ULID
    /// test): the table-driven version must agree with it on every input.
    fn plain_id_like(key: &[u8], i: usize, d: &Delimiters) -> Option<(usize, Class)> {
        let mut j = i;
        let (mut hex, mut upper, mut lower, mut changes, mut last) = (0, 0, 0, 0, 0u8);
        while j < key.len() {
            let b = key[j];
            let kind = match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => 1,
                b'G'..=b'Z' => 2,
                b'g'..=b'z' => 3,
                b'-' | b'_' if d.is(b) => 4,
                _ => break,
            };
            match kind {
                1 => hex += 1,
                2 => upper += 1,
                3 => lower += 1,
                _ => {}
            }
            if last != 0 && kind != last {
                changes += 1;
            }
            last = kind;
            j += 1;
        }
        let len = j - i;
        if (j < key.len() && !d.is(key[j])) || upper + lower == 0 {
            return None;
        }
        // A leading family name joined by `-` or `_` is not part of an id: two words, or one
        // before hex digits only.
        let word_end = |at: usize| {
            let lead = key[at..j]
                .iter()
                .take_while(|b| b.is_ascii_alphabetic())
                .count();
            let word = &key[at..at + lead];
            (lead >= 3
                && at + lead < j
                && matches!(key[at + lead], b'-' | b'_')
                && (word.iter().all(|b| b.is_ascii_lowercase())
                    || word.iter().all(|b| b.is_ascii_uppercase()))
                && word.iter().any(|b| !b.is_ascii_hexdigit()))
            .then_some(at + lead + 1)
        };
        let after_word = i >= 4 && matches!(key[i - 1], b'-' | b'_') && {
            let start = key[..i - 1]
                .iter()
                .rposition(|b| !b.is_ascii_alphabetic())
                .map_or(0, |p| p + 1);
            let word = &key[start..i - 1];
            word.len() >= 3
                && (start == 0 || !key[start - 1].is_ascii_alphanumeric())
                && (word.iter().all(|b| b.is_ascii_lowercase())
                    || word.iter().all(|b| b.is_ascii_uppercase()))
                && word.iter().any(|b| !b.is_ascii_hexdigit())
        };
        if after_word {
            return None;
        }
        if let Some(rest) = word_end(i)
            && (word_end(rest).is_some()
                || (rest - 1 - i >= 6 && key[i..rest - 1].iter().all(u8::is_ascii_lowercase))
                || key[rest..j]
                    .iter()
                    .all(|b| !matches!(b, b'g'..=b'z' | b'G'..=b'Z')))
        {
            return None;
        }
        let crockford = |b: &u8| matches!(b.to_ascii_uppercase(), b'0'..=b'9' | b'A'..=b'H' | b'J' | b'K' | b'M' | b'N' | b'P'..=b'T' | b'V'..=b'Z');
        let run = &key[i..j];
        if len == 26
            && run.iter().all(crockford)
            && lower == 0
            && run[10..].iter().any(u8::is_ascii_hexdigit)
            && run.iter().filter(|b| matches!(b, b'G'..=b'Z')).count() >= 3
        {
            return Some((len, Class::Ulid));
        }
        if run.iter().any(|b| matches!(b, b'-' | b'_')) && joined_words(run) {
            return None;
        }
        if run.iter().any(|b| matches!(b, b'-' | b'_'))
            && let Some(cut) = suffix_words(key, i, j)
        {
            return id_before_suffix(&key[i..cut]).then_some((cut - i, Class::Token));
        }
        let random = if hex > 0 {
            changes * 4 >= len
        } else {
            upper > 1 && lower > 1 && changes * 3 >= len
        };
        (len >= 20 && random).then_some((len, Class::Token))
    }

    proptest! {
        #[test]
        fn one_pass_hashes_equal_the_separate_ones(
            key in proptest::collection::vec(any::<u8>(), 0..80),
        ) {
            for (blocks, words) in [
                (skeleton_hash(&key), crate::sketch::mix_words(&key, skeleton_word::<false>)),
                (hex_skeleton_hash(&key), crate::sketch::mix_words(&key, skeleton_word::<true>)),
            ] {
                prop_assert_eq!(blocks, words);
            }
            prop_assert_eq!(shape_hashes(&key), [shape_hash(&key), class_shape_hash(&key)]);
            prop_assert_eq!(one_shape_hash::<false>(&key), shape_hash(&key));
            prop_assert_eq!(one_shape_hash::<true>(&key), class_shape_hash(&key));
        }

        #[test]
        fn the_id_precheck_never_turns_an_id_away(
            key in proptest::collection::vec(
                prop_oneof![
                    8 => proptest::sample::select(b"0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZghijklmnopqrstuvwxyz".to_vec()),
                    1 => proptest::sample::select(b"-_:.@ {}".to_vec()),
                    1 => any::<u8>(),
                ],
                0..60,
            ),
            delims in proptest::sample::select(vec![":/|.-_", ":", ":-", "_", ":@"]),
        ) {
            let d = Delimiters::new(delims);
            for i in 0..key.len() {
                if d.is(key[i]) {
                    continue;
                }
                let (mut j, mut mask) = (i, 0u8);
                while j < key.len() && d.class(key[j]) != C_DELIM {
                    mask |= d.class(key[j]);
                    j += 1;
                }
                if !may_be_id(&key, i, j, mask) {
                    prop_assert_eq!(match_id_like(&key, i, &d), None, "at {}", i);
                }
            }
        }

        #[test]
        fn long_id_runs_agree_with_the_plain_version(
            key in proptest::collection::vec(
                proptest::sample::select(b"0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZghijklmnopqrstuvwxyz-_".to_vec()),
                0..90,
            ),
            end in proptest::sample::select(b":.@ ".to_vec()),
            at in 0usize..4,
            delims in proptest::sample::select(vec![":/|.-_", ":", ":-", "_"]),
        ) {
            let d = Delimiters::new(delims);
            let mut key = key;
            key.push(end);
            prop_assert_eq!(match_id_like(&key, at, &d), plain_id_like(&key, at, &d));
            key.pop();
            prop_assert_eq!(match_id_like(&key, at, &d), plain_id_like(&key, at, &d));
        }

        #[test]
        fn id_like_agrees_with_the_plain_version(
            key in proptest::collection::vec(
                prop_oneof![
                    6 => proptest::sample::select(b"0123456789abcdefABCDEF".to_vec()),
                    6 => proptest::sample::select(b"GHIJKLMNOPQRSTUVWXYZ".to_vec()),
                    4 => proptest::sample::select(b"ghijklmnopqrstuvwxyz".to_vec()),
                    1 => proptest::sample::select(b"-_:.@ {}".to_vec()),
                    1 => any::<u8>(),
                ],
                0..72,
            ),
            at in 0usize..8,
            delims in proptest::sample::select(vec![":/|.-_", ":", ":-", "_"]),
        ) {
            let d = Delimiters::new(delims);
            prop_assert_eq!(match_id_like(&key, at, &d), plain_id_like(&key, at, &d));
            #[cfg(x86_simd)]
            if at < key.len() {
                prop_assert_eq!(id_run_sse2(&key, at, &d), id_run_scalar(&key, at, &d));
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
                {
                    prop_assert_eq!(id_run_avx2(&key, at, &d), id_run_scalar(&key, at, &d));
                }
            }
        }
    }

    /// A case the property test found: a lower-case word of six letters or more before `-` is a
    /// family name in both versions.
    #[test]
    fn a_long_word_before_a_dash_is_a_name_in_both_versions() {
        let key = b"00000agagggg-00000000000G";
        for delims in [":-", ":/|.-_", ":", "_"] {
            let d = Delimiters::new(delims);
            for at in 0..8 {
                assert_eq!(
                    match_id_like(key, at, &d),
                    plain_id_like(key, at, &d),
                    "{delims} {at}"
                );
            }
        }
        assert_eq!(match_id_like(key, 5, &Delimiters::new(":-")), None);
    }

    fn text(key: &str) -> String {
        let mut v = Vec::new();
        tokenize(key.as_bytes(), &Delimiters::default(), &mut v);
        v.iter()
            .map(|t| match t.lit(key.as_bytes()) {
                Some(l) => String::from_utf8_lossy(l).into_owned(),
                None => match t {
                    Token::Class(c) => c.placeholder().to_string(),
                    Token::Lit { .. } => unreachable!(),
                },
            })
            .collect()
    }

    #[test]
    fn family_words_stay_out_of_ids() {
        // celery's result keys and Flask-Caching's memoized keys (standard base64 of a digest
        // and a version, `+` and `/` included).
        assert_eq!(
            text("celery-task-meta-cb8e043d-8f7b-4579-be1e-9027ee7460e4"),
            "celery-task-meta-<uuid>"
        );
        for k in [
            "flask_cache_d4tR4CJE3pCx7Vy71H08/6",
            "flask_cache_hzrG+x+5vKseAswn1H08/6",
            "flask_cache_+/I9ZPiQxCZidmMv1H08/6",
            "flask_cache_0N33ITN2KYqZ5BT71H08/6",
        ] {
            assert_eq!(text(k), "flask_cache_<token>", "{k}");
        }
        // Paths stay paths; a base64url token after a word stays one token.
        assert_eq!(
            text("flask_cache_view//products/80"),
            "flask_cache_view//products/<int>"
        );
        assert_eq!(
            text("cache:/api/v1/Users/GetById/12345"),
            "cache:/api/v<int>/Users/GetById/<int>"
        );
        assert_eq!(
            text("sess:uV1bRQ-3wYgZ_h6TqKp9LmN0xCvB2dEf"),
            "sess:<token>"
        );
        // Hex-letter words are not family words (they could be hex digits).
        assert!(!starts_with_word(b"cafe-x9Kq2", 0, 10));
        assert!(starts_with_word(b"task-meta-x9Kq2", 0, 15));
        assert!(starts_with_word(b"user-3fa9-0b1c", 0, 14));
        // One short word before more letters: as likely a random base64url id's start.
        assert!(!starts_with_word(b"kyh_Eh7qY2qZvX", 0, 14));
        assert!(!starts_with_word(b"Task-meta-x9Kq2", 0, 15));
    }

    #[test]
    fn families() {
        assert_eq!(text("user:1000:profile"), "user:<int>:profile");
        assert_eq!(
            text("session:9f1c2d3e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"),
            "session:<uuid>"
        );
        assert_eq!(text("rate:10.0.0.1:2026-11-16"), "rate:<ip>:<date>");
        assert_eq!(text("cache:page:0f3a9b7c11d2e4f5"), "cache:page:<hex>");
        assert_eq!(text("product:SKU-000123"), "product:SKU-<int>");
        assert_eq!(
            text("feed:{group_3}:user:42"),
            "feed:{group_<int>}:user:<int>"
        );
        assert_eq!(text("settings:alice123"), "settings:alice<int>");
        assert_eq!(text("2026-13-01"), "<int>-<int>-<int>");
        assert_eq!(text("300.1.1.1"), "<int>.<int>.<int>.<int>");
        assert_eq!(text("deadbeef"), "deadbeef");
        // Letters of any script are letters; other bytes are `<bytes>`.
        assert_eq!(text("k\u{e9}y\x01"), "k\u{e9}y<bytes>");
        assert_eq!(text("k\x7fy\x01"), "k<bytes>y<bytes>");
        assert_eq!(text(""), "");
    }

    #[test]
    fn skeleton_hash_ignores_digit_values_only() {
        let h = |k: &str| skeleton_hash(k.as_bytes());
        assert_eq!(h("user:1412278:profile"), h("user:9000001:profile"));
        assert_eq!(h("2026-11-16"), h("9999-99-99"));
        assert_eq!(h("0123456789abcdefg"), h("9876543210abcdefg"));
        assert_ne!(h("user:12:p"), h("user:123:p"));
        assert_ne!(h("a0"), h("a\0"));
        assert_ne!(h("a0"), h("aa"));
        assert_ne!(h("a0"), h("a0\0"));
        assert_ne!(skeleton_hash(b"k\xb0"), skeleton_hash(b"k0"));
        // Every byte that is not a digit stays itself, at every position of a word.
        reads_as_zero_exactly(skeleton_hash, u8::is_ascii_digit);
    }

    /// Checks that, at every position of a key, `hash` sees a byte as `0` exactly when
    /// `as_zero` says so.
    fn reads_as_zero_exactly(hash: fn(&[u8]) -> u64, as_zero: fn(&u8) -> bool) {
        for pos in 0..20 {
            for b in 0..=255u8 {
                let mut k = vec![b'x'; 20];
                k[pos] = b;
                let mut z = k.clone();
                z[pos] = b'0';
                assert_eq!(hash(&k) == hash(&z), as_zero(&b), "{pos} {b}");
            }
        }
    }

    #[test]
    fn hex_skeleton_hash_ignores_which_hex_digits_only() {
        let h = |k: &[u8]| hex_skeleton_hash(k);
        assert_eq!(
            h(b"session:37ffed0c-521b-46d5-9c41-b82cd3ef6f16"),
            h(b"session:00000000-AAAA-fff0-9999-abcdefABCDEF")
        );
        assert_ne!(h(b"k:abc"), h(b"k:abg"));
        assert_ne!(h(b"k:abc"), h(b"k:abcd"));
        reads_as_zero_exactly(hex_skeleton_hash, u8::is_ascii_hexdigit);
    }

    #[test]
    fn recorded_checks_decide_dates_and_ips() {
        let d = Delimiters::default();
        let mut r = Recorded::default();
        tokenize_recorded(b"rate:10.0.0.1:2026-11-16", &d, &mut r);
        assert_eq!(
            r.checks,
            vec![
                ValueCheck {
                    at: 5,
                    ip: true,
                    len: Some(8)
                },
                ValueCheck {
                    at: 14,
                    ip: false,
                    len: Some(10)
                },
            ]
        );
        assert!(
            r.checks
                .iter()
                .all(|c| c.holds(b"rate:99.1.2.3:1999-01-31", &d))
        );
        assert!(!r.checks[0].holds(b"rate:99.1.2.300:1999-01-31", &d));
        assert!(!r.checks[1].holds(b"rate:99.1.2.3:1999-13-31", &d));
    }

    #[test]
    fn token_limit() {
        let key = "a:".repeat(100);
        let mut v = Vec::new();
        tokenize(key.as_bytes(), &Delimiters::default(), &mut v);
        assert_eq!(v.len(), MAX_TOKENS + 1);
        assert_eq!(v.last(), Some(&Token::Class(Class::Rest)));
        // A long run inside one segment ends the key once, not once per segment after it.
        let key = format!("cache:{}:tail", "a%".repeat(40));
        tokenize(key.as_bytes(), &Delimiters::default(), &mut v);
        assert_eq!(v.len(), MAX_TOKENS + 1);
        assert_eq!(
            v.iter()
                .filter(|t| **t == Token::Class(Class::Rest))
                .count(),
            1
        );
    }

    #[test]
    fn emails_are_one_value() {
        for (key, want) in [
            ("acct:email=hugo.1234@example.com", "acct:email=<email>"),
            (
                "user:Mary.Ann+x@mail.example.co.uk:profile",
                "user:<email>:profile",
            ),
            (
                "LIMITS:LIMITER/o.neil@ex-ample.io/login/5",
                "LIMITS:LIMITER/<email>/login/<int>",
            ),
            ("{a_b@c.de}:x", "{<email>}:x"),
            ("rl:2001:db8::1:day", "rl:<ip>:day"),
            ("rl:2001:db8::123456", "rl:<int>:db<int>::<int>"),
            ("x@y.z", "x@y.z"),
            ("npm:@scope/pkg", "npm:@scope/pkg"),
            ("job@2024-01-01", "job@<date>"),
            ("a@b", "a@b"),
        ] {
            assert_eq!(text(key), want, "{key}");
        }
    }

    #[test]
    fn dates_without_zero_padding_weeks_and_months() {
        for (key, want) in [
            ("stat:2026-5-16", "stat:<date>"),
            ("stat:2026-05-16", "stat:<date>"),
            ("seen:2026-5-16-7", "seen:<date>-<int>"),
            ("seen:2026-12-1-23", "seen:<date>-<int>"),
            ("report:2026-5", "report:<date>"),
            ("week:W23-2026", "week:<date>"),
            ("week:2026-W7", "week:<date>"),
            ("pages:archive/2025-1-1", "pages:archive/<date>"),
            // Not dates: a month or a week out of range, a third number that is no day, a
            // year outside 1900-2099 without a day, another letter than `W`.
            ("x:2026-13-01", "x:<int>-<int>-<int>"),
            ("x:2026-5-45", "x:<int>-<int>-<int>"),
            ("x:2026-W54", "x:<int>-W<int>"),
            ("x:1234-5", "x:<int>-<int>"),
            ("x:X23-2026", "x:X<int>-<int>"),
            ("x:2026-5-16x", "x:<int>-<int>-<int>x"),
        ] {
            assert_eq!(text(key), want, "{key}");
        }
        let re = regex::Regex::new(&format!("^(?:{})$", Class::Date.regex())).unwrap();
        for v in ["2026-5-16", "2026-05-16", "2026-5", "W23-2026", "2026-W7"] {
            assert!(re.is_match(v), "{v}");
        }
    }

    #[test]
    fn decimals_are_numbers_and_padding_is_part_of_a_token() {
        assert_eq!(text("total:12.5"), "total:<int>");
        assert_eq!(text("total:12"), "total:<int>");
        assert_eq!(text("prices:USD:499.99:x"), "prices:USD:<int>:x");
        // Dotted runs of numbers stay apart: versions, addresses.
        assert_eq!(text("v:1.2.3"), "v:<int>.<int>.<int>");
        assert_eq!(text("ip:10.0.0.1"), "ip:<ip>");
        assert_eq!(text("x:a.12.5"), "x:a.<int>.<int>");
        let re = regex::Regex::new(&format!("^(?:{})$", Class::Int.regex())).unwrap();
        assert!(re.is_match("12.5") && re.is_match("12") && !re.is_match("1.2.3"));
        // Base64 of 16, 17 and 18 bytes (`==`, `=`, no padding) without `+` or `/`: one token.
        for id in [
            "KZx7FzlAC8ynwBuXQ1ydGw==",
            "KZx7FzlAC8ynwBuXQ1ydGmZ=",
            "KZx7FzlAC8ynwBuXQ1ydGmZc",
            "Kc-7FzlAC8ynwBuX_1ydGw==",
        ] {
            assert_eq!(text(&format!("token:{id}")), "token:<token>", "{id}");
            assert_eq!(text(&format!("token:{id}:x")), "token:<token>:x", "{id}");
        }
        // `=` that is no padding stays a delimiter.
        assert_eq!(text("a=KZx7FzlAC8ynwBuXQ1ydGmZc=b"), "a=<token>=b");
    }

    #[test]
    fn names_of_any_script_and_utf8_addresses() {
        for (key, want) in [
            ("carts:omar.m\u{fc}ller4645@example.co.uk", "carts:<email>"),
            ("carts:bo.o'brien12@example.com", "carts:<email>"),
            (
                "carts:jos\u{e9}.garc\u{ed}a@mail.example.org:x",
                "carts:<email>:x",
            ),
        ] {
            assert_eq!(text(key), want, "{key}");
        }
        let re = regex::bytes::Regex::new(&format!("(?-u)^(?:{})$", Class::Email.regex())).unwrap();
        assert!(re.is_match("omar.m\u{fc}ller4645@example.co.uk".as_bytes()));
        assert!(re.is_match(b"bo.o'brien12@example.com"));
        // A word is letters of any script, and an apostrophe between letters: one literal.
        let d = Delimiters::default();
        for (key, words) in [
            (
                "author:Farid Garc\u{ed}a",
                vec!["author", "Farid", "Garc\u{ed}a"],
            ),
            ("u:bo.o'brien12", vec!["u", "bo", "o'brien"]),
            (
                "u:\u{141}ukasz_\u{de}\u{f3}rsson",
                vec!["u", "\u{141}ukasz", "\u{de}\u{f3}rsson"],
            ),
            ("u:'quoted'", vec!["u", "quoted"]),
        ] {
            let mut v = Vec::new();
            tokenize(key.as_bytes(), &d, &mut v);
            let got: Vec<&str> = v
                .iter()
                .filter(|t| t.is_alpha_lit(key.as_bytes()))
                .map(|t| std::str::from_utf8(t.lit(key.as_bytes()).unwrap()).unwrap())
                .collect();
            assert_eq!(got, words, "{key}");
        }
        let re = regex::bytes::Regex::new(&format!("(?-u)^(?:{})$", Class::Word.regex())).unwrap();
        assert!(re.is_match("Garc\u{ed}a".as_bytes()) && re.is_match(b"o'brien"));
        // A handle's words joined by `-` or `_` are no random id, even 20 bytes long and of
        // hex letters (`feed`); a base64url id is.
        let d = Delimiters::default();
        assert_eq!(match_id_like(b"feed-kenji-okafor9306", 0, &d), None);
        assert_eq!(match_id_like(b"ana_garcia_lopez_4411", 0, &d), None);
        assert!(match_id_like(b"kyh_Eh7qY2qZvXb8NcT_dud", 0, &d).is_some());
    }

    #[test]
    fn punctuation_separates_segments() {
        assert_eq!(
            text("asgispecific.5efd0c0a9b8c4d7e8f6a5b4c3d2e1f0a!"),
            "asgispecific.<hex>!"
        );
        assert_eq!(text("a=1#b$2"), "a=<int>#b$<int>");
    }

    #[test]
    fn words_and_suffixes_around_ids() {
        // Words joined by `-` or `_` are words, however long.
        assert_eq!(text("asgiworker-thumbnails"), "asgiworker-thumbnails");
        // A suffix of words names the key's part; the id before it stays one token.
        assert_eq!(
            text("b_api-v2-133-x7Kq11_client_last_seen"),
            "<token>_client_last_seen"
        );
        assert_eq!(
            text("b_search_users-1oo-x7Kq32_settings"),
            "<token>_settings"
        );
        // A name before the suffix (no digit, no capital) is words.
        assert_eq!(
            text("b_my-limiter-of-uploads_settings"),
            "b_my-limiter-of-uploads_settings"
        );
        // A random id whose last part happens to be short lower-case letters stays whole.
        assert_eq!(text("sess:Eh7qY2kLm9Pq_Wz3xVb8NcT_dudgv"), "sess:<token>");
    }
}
