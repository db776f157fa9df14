//! RDB snapshots: a reader for the files `SAVE`/`BGSAVE` write (Redis 2.x to 8.x, RDB
//! versions 1–12, and Valkey's, whose 9.x files start `VALKEY080`).
//!
//! [`Parser`] walks a snapshot held in memory (a memory map) one key at a time and says, for
//! each, what a `redis-cli --scan` dump cannot: its type and encoding, its element count, the
//! memory it takes in the server (an estimate, see [`memory`]), its size in the file, its
//! expiry and its LFU/idle figures. Values are skipped, not decoded: only the headers of
//! packed encodings are read (and decompressed when the snapshot compressed them), so the
//! reader runs at the speed of the lengths it follows.
//!
//! A value the reader can step over but not interpret (a corrupt packed blob inside a
//! well-formed string) keeps its key and is reported with no element count; a file that ends
//! early or holds a byte sequence no server writes is an error naming the byte offset.

pub mod blob;
pub mod lzf;
pub mod memory;
pub mod read;
pub mod summary;

use blob::Packed;
use memory::StringEncoding;
use std::fmt;

/// Why a snapshot could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdbError {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for RdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for RdbError {}

/// Which server family wrote the file (its magic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Magic {
    /// `REDIS` followed by a 4-digit version (Redis, and Valkey before 9.0).
    Redis,
    /// `VALKEY` followed by a 3-digit version (Valkey 9.0 and later).
    Valkey,
}

/// Whether `data` starts like a snapshot, and which. A snapshot whose magic is damaged (see
/// [`damaged_magic`]) is taken for one too, given as `(Magic::Redis, 0)`, a version no server
/// writes: [`Parser::new`] then refuses it at byte 0, where it would otherwise be read as lines
/// of keys.
pub fn sniff(data: &[u8]) -> Option<(Magic, u32)> {
    exact_magic(data).or_else(|| damaged_magic(data).map(|_| (Magic::Redis, 0)))
}

/// How many bytes of a file's start [`sniff`] wants to see to tell a damaged magic.
pub const SNIFF_HEAD: usize = 16;

/// The start of a snapshot whose magic is damaged, as it reads (`redis0010`, `RDB0010`):
/// `REDIS`, `VALKEY` or `RDB` in any case, then one to four digits, then binary bytes (a
/// snapshot's first record is an opcode, 0xFA or 0xFE; a key dump's first line is text), and
/// not a magic a server writes. `None` for anything else.
pub fn damaged_magic(data: &[u8]) -> Option<String> {
    if exact_magic(data).is_some() {
        return None;
    }
    let word = [&b"REDIS"[..], b"VALKEY", b"RDB"].into_iter().find(|w| {
        data.get(..w.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(w))
    })?;
    let rest = &data[word.len()..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if !(1..=4).contains(&digits) {
        return None;
    }
    let binary =
        |b: u8| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b >= 0xf5 || b == 0x7f;
    let after = &rest[digits..];
    let first_line = after.split(|&b| b == b'\n').next().unwrap_or_default();
    if !first_line.iter().take(4).any(|&b| binary(b)) {
        return None;
    }
    Some(String::from_utf8_lossy(&data[..word.len() + digits]).into_owned())
}

/// The magic a server writes: `REDIS` and four digits, or `VALKEY` and three.
fn exact_magic(data: &[u8]) -> Option<(Magic, u32)> {
    let digits = |d: &[u8]| -> Option<u32> {
        if d.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(d).ok()?.parse().ok()
        } else {
            None
        }
    };
    if let Some(rest) = data.strip_prefix(b"REDIS") {
        return Some((Magic::Redis, digits(rest.get(..4)?)?));
    }
    if let Some(rest) = data.strip_prefix(b"VALKEY") {
        return Some((Magic::Valkey, digits(rest.get(..3)?)?));
    }
    None
}

/// A value's type, as `TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    /// string
    String,
    /// list
    List,
    /// set
    Set,
    /// zset
    Zset,
    /// hash
    Hash,
    /// stream
    Stream,
    /// A module type, by its 9-character name.
    Module([u8; 9]),
}

impl ValueKind {
    /// The name `TYPE` answers (a module type's own name).
    pub fn name(&self) -> std::borrow::Cow<'static, str> {
        match self {
            ValueKind::String => "string".into(),
            ValueKind::List => "list".into(),
            ValueKind::Set => "set".into(),
            ValueKind::Zset => "zset".into(),
            ValueKind::Hash => "hash".into(),
            ValueKind::Stream => "stream".into(),
            ValueKind::Module(n) => String::from_utf8_lossy(n).into_owned().into(),
        }
    }
}

/// The name of the module type a 64-bit module id stands for (9 characters of 6 bits each,
/// then 10 bits of version).
pub fn module_name(id: u64) -> [u8; 9] {
    const CHARS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut name = [0u8; 9];
    for (i, c) in name.iter_mut().enumerate() {
        *c = CHARS[((id >> (58 - 6 * i)) & 63) as usize];
    }
    name
}

/// One key of a snapshot and what the snapshot says about its value.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyInfo<'a> {
    /// The key's bytes.
    pub key: &'a [u8],
    /// The database number (`SELECT`).
    pub db: u64,
    /// The value's type.
    pub kind: ValueKind,
    /// The encoding the snapshot stores the value in, named as `OBJECT ENCODING` names it.
    pub encoding: &'static str,
    /// Elements (list items, set members, hash fields, sorted-set members, stream entries;
    /// a string's length in bytes); `None` when the value could not be interpreted.
    pub elements: Option<u64>,
    /// Estimated memory in the server: the value and the key (see [`memory`]).
    pub memory: u64,
    /// Bytes the value takes in the snapshot.
    pub serialized: u64,
    /// Absolute expiry in Unix milliseconds.
    pub expires_at_ms: Option<i64>,
    /// LFU counter, when the server ran an LFU eviction policy.
    pub lfu: Option<u8>,
    /// Seconds idle, when the server ran an LRU eviction policy.
    pub idle: Option<u64>,
    /// Offset of the value's type byte.
    pub offset: u64,
}

impl KeyInfo<'_> {
    /// Whether [`KeyInfo::memory`] is an estimate: a module's value (a vector set, a graph, a
    /// JSON document) is laid out by its module, and its `memory` is only the object and the
    /// bytes it takes in the snapshot, a floor that reports mark "not estimated".
    pub fn memory_estimated(&self) -> bool {
        !matches!(self.kind, ValueKind::Module(_))
    }
}

/// A string as the snapshot stores it.
#[derive(Debug, Clone, Copy)]
enum Str {
    Int(i64),
    Raw {
        start: usize,
        len: usize,
    },
    Lzf {
        start: usize,
        clen: usize,
        ulen: usize,
    },
}

impl Str {
    /// Where its bytes start in the file (`None` for an integer).
    fn start(&self) -> Option<usize> {
        match *self {
            Str::Int(_) => None,
            Str::Raw { start, .. } | Str::Lzf { start, .. } => Some(start),
        }
    }

    fn len(&self) -> u64 {
        match *self {
            Str::Int(v) => {
                let mut b = itoa_len(v.unsigned_abs());
                if v < 0 {
                    b += 1;
                }
                b
            }
            Str::Raw { len, .. } => len as u64,
            Str::Lzf { ulen, .. } => ulen as u64,
        }
    }
}

fn itoa_len(mut v: u64) -> u64 {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// Reads a snapshot held in memory one key at a time.
pub struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    version: u32,
    magic: Magic,
    db: u64,
    key: Vec<u8>,
    scratch: Vec<u8>,
    aux: Vec<(Vec<u8>, Vec<u8>)>,
    functions: u64,
    uninterpreted: u64,
    done: bool,
    /// The server whose layout the memory estimate follows: the one the snapshot's
    /// `redis-ver`/`valkey-ver` names, unless [`Parser::set_server`] chose one.
    server: memory::Server,
    /// Whether [`Parser::set_server`] chose the server (the snapshot's fields then do not).
    server_chosen: bool,
    /// The `list-compress-depth` of the server the memory estimate is for.
    list_compress_depth: u32,
}

/// Errors are boxed: a parse step returns its value in registers, not through memory.
type R<T> = Result<T, Box<RdbError>>;

/// A key's value type byte and the opcodes read before it.
#[derive(Debug, Clone, Copy)]
struct ValueHead {
    t: u8,
    at: usize,
    expires_at_ms: Option<i64>,
    lfu: Option<u8>,
    idle: Option<u64>,
}

/// Where a [`Parser`] stands between two keys, to [`Parser::resume`] from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The next record's byte offset.
    pub pos: usize,
    db: u64,
    server: memory::Server,
}

#[inline(always)]
fn check_value_type(t: u8, at: usize) -> R<()> {
    if matches!(t, 0..=7 | 9..=25) {
        return Ok(());
    }
    Err(unknown_value_type(t, at))
}

#[cold]
#[inline(never)]
fn unknown_value_type(t: u8, at: usize) -> Box<RdbError> {
    Box::new(RdbError {
        offset: at as u64,
        message: format!(
            "unknown value type {t} (written by a server newer than this keyplan, or not a \
             snapshot from here on)"
        ),
    })
}

/// The newest Redis RDB version read (Redis 7.4 and 8 write 12).
const MAX_REDIS_RDB: u32 = 15;

/// The newest Valkey RDB version read (Valkey 9 writes 80).
const MAX_VALKEY_RDB: u32 = 89;

impl<'a> Parser<'a> {
    /// Checks the header and positions the parser on the first record.
    pub fn new(data: &'a [u8]) -> R<Parser<'a>> {
        if let Some(seen) = damaged_magic(data) {
            return Err(Box::new(RdbError {
                offset: 0,
                message: format!(
                    "a snapshot with a damaged header: it starts `{}` followed by binary data, where a snapshot starts with REDIS and four digits (VALKEY and three); take a fresh snapshot (BGSAVE, or `redis-cli --rdb FILE`), or pass --input-format raw if this is a key dump",
                    seen.escape_debug()
                ),
            }));
        }
        let (magic, version) = exact_magic(data).ok_or_else(|| {
            Box::new(RdbError {
                offset: 0,
                message: "not an RDB snapshot: it does not start with REDIS0… or VALKEY…".into(),
            })
        })?;
        // Redis writes versions 1–12 today and Valkey 9 writes 80: a few versions past those
        // are read (a new server may only add what the reader then names as unknown), a
        // number far past them is damage.
        let redis_ok = magic == Magic::Redis && (1..=MAX_REDIS_RDB).contains(&version);
        let valkey_ok = magic == Magic::Valkey && (80..=MAX_VALKEY_RDB).contains(&version);
        if !(redis_ok || valkey_ok) {
            return Err(Box::new(RdbError {
                offset: 5,
                message: format!(
                    "RDB version {version} is not one any server writes (Redis writes 1 to 12, Valkey 80): a damaged header"
                ),
            }));
        }
        let start = Checkpoint {
            pos: 9,
            db: 0,
            server: memory::Server::Redis7,
        };
        Ok(Parser::standing(data, version, magic, 0, start))
    }

    /// A parser of `data` standing at `at`, with no auxiliary fields or counts yet.
    fn standing(
        data: &'a [u8],
        version: u32,
        magic: Magic,
        list_compress_depth: u32,
        at: Checkpoint,
    ) -> Parser<'a> {
        Parser {
            data,
            pos: at.pos,
            version,
            magic,
            db: at.db,
            key: Vec::new(),
            scratch: Vec::new(),
            aux: Vec::new(),
            functions: 0,
            uninterpreted: 0,
            done: false,
            server: at.server,
            server_chosen: false,
            list_compress_depth,
        }
    }

    /// Estimates memory for a server running with `list-compress-depth` `depth`: the nodes of
    /// a list more than `depth` from either end are held LZF-compressed.
    pub fn set_list_compress_depth(&mut self, depth: u32) {
        self.list_compress_depth = depth;
    }

    /// Estimates memory for `server`, whatever server the snapshot names.
    pub fn set_server(&mut self, server: memory::Server) {
        self.server = server;
        self.server_chosen = true;
    }

    /// The server whose layout the memory estimate follows (as far as the parser has read).
    pub fn server(&self) -> memory::Server {
        self.server
    }

    /// The RDB format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Which magic the file starts with.
    pub fn magic(&self) -> Magic {
        self.magic
    }

    /// The auxiliary fields read so far (`redis-ver`, `ctime`, `used-mem`, …).
    pub fn aux(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.aux
    }

    /// Function libraries stepped over.
    pub fn functions(&self) -> u64 {
        self.functions
    }

    /// Values whose key was read but whose contents could not be interpreted.
    pub fn uninterpreted(&self) -> u64 {
        self.uninterpreted
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    #[cold]
    #[inline(never)]
    fn err<T>(&self, at: usize, message: impl Into<String>) -> R<T> {
        Err(Box::new(RdbError {
            offset: at as u64,
            message: message.into(),
        }))
    }

    #[cold]
    #[inline(never)]
    fn truncated<T>(&self, what: &str) -> R<T> {
        self.err(
            self.pos,
            format!("the file ends inside {what} (a truncated or partly copied snapshot)"),
        )
    }

    #[inline]
    fn byte(&mut self) -> R<u8> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => self.truncated("a record"),
        }
    }

    #[inline]
    fn take(&mut self, n: u64, what: &str) -> R<usize> {
        let start = self.pos;
        match usize::try_from(n)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|&end| end <= self.data.len())
        {
            Some(end) => {
                self.pos = end;
                Ok(start)
            }
            None => self.truncated(what),
        }
    }

    #[inline]
    fn fixed<const N: usize>(&mut self, what: &str) -> R<[u8; N]> {
        let at = self.take(N as u64, what)?;
        Ok(self.data[at..at + N]
            .try_into()
            .expect("invariant: N bytes taken"))
    }

    /// A length, or an encoded-string marker (`Err(kind)` in the inner result).
    #[inline(always)]
    fn len_or_enc(&mut self) -> R<Result<u64, u8>> {
        if let Some(&b) = self.data.get(self.pos) {
            match b >> 6 {
                0 => {
                    self.pos += 1;
                    return Ok(Ok(u64::from(b & 0x3f)));
                }
                3 => {
                    self.pos += 1;
                    return Ok(Err(b & 0x3f));
                }
                1 if self.pos + 1 < self.data.len() => {
                    let c = self.data[self.pos + 1];
                    self.pos += 2;
                    return Ok(Ok((u64::from(b & 0x3f) << 8) | u64::from(c)));
                }
                _ => {}
            }
        }
        self.len_or_enc_slow()
    }

    #[inline(never)]
    fn len_or_enc_slow(&mut self) -> R<Result<u64, u8>> {
        let at = self.pos;
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Ok((b & 0x3f) as u64),
            1 => Ok((((b & 0x3f) as u64) << 8) | self.byte()? as u64),
            3 => Err(b & 0x3f),
            _ => match b {
                0x80 => Ok(u32::from_be_bytes(self.fixed("a length")?) as u64),
                0x81 => Ok(u64::from_be_bytes(self.fixed("a length")?)),
                _ => return self.err(at, format!("byte 0x{b:02x} is not a length")),
            },
        })
    }

    /// A length (the one-byte form inline: most lengths are under 64).
    #[inline(always)]
    fn len(&mut self) -> R<u64> {
        if let Some(&b) = self.data.get(self.pos) {
            if b < 0x40 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
            if b < 0x80
                && let Some(&c) = self.data.get(self.pos + 1)
            {
                self.pos += 2;
                return Ok((u64::from(b & 0x3f) << 8) | u64::from(c));
            }
        }
        self.len_slow()
    }

    #[inline(never)]
    fn len_slow(&mut self) -> R<u64> {
        let at = self.pos;
        match self.len_or_enc()? {
            Ok(n) => Ok(n),
            Err(_) => self.err(at, "an encoded string where a length belongs"),
        }
    }

    /// A string (inline: one under 64 bytes, most keys and small values, and a compressed
    /// one of lengths under 16 KiB).
    #[inline(always)]
    fn string(&mut self) -> R<Str> {
        if let Some(&b) = self.data.get(self.pos) {
            if b < 0x40 {
                let start = self.pos + 1;
                let len = usize::from(b);
                if start + len <= self.data.len() {
                    self.pos = start + len;
                    return Ok(Str::Raw { start, len });
                }
            } else if b == 0xc3 {
                let at = self.pos;
                self.pos += 1;
                if let (Some(clen), Some(ulen)) = (self.short_len(), self.short_len()) {
                    let start = self.pos;
                    // A 2-byte back reference expands to at most 264 bytes.
                    if ulen <= clen * 132 + 64 && start + clen <= self.data.len() {
                        self.pos = start + clen;
                        return Ok(Str::Lzf { start, clen, ulen });
                    }
                }
                self.pos = at;
            }
        }
        self.string_slow()
    }

    /// A length in its 1- or 2-byte form, or `None` (nothing consumed).
    #[inline(always)]
    fn short_len(&mut self) -> Option<usize> {
        let b = *self.data.get(self.pos)?;
        if b < 0x40 {
            self.pos += 1;
            return Some(usize::from(b));
        }
        if b < 0x80 {
            let c = *self.data.get(self.pos + 1)?;
            self.pos += 2;
            return Some((usize::from(b & 0x3f) << 8) | usize::from(c));
        }
        None
    }

    #[inline(never)]
    fn string_slow(&mut self) -> R<Str> {
        let at = self.pos;
        match self.len_or_enc()? {
            Ok(n) => {
                let start = self.take(n, "a string")?;
                Ok(Str::Raw {
                    start,
                    len: n as usize,
                })
            }
            Err(0) => Ok(Str::Int(i8::from_le_bytes(self.fixed("an integer")?) as i64)),
            Err(1) => Ok(Str::Int(
                i16::from_le_bytes(self.fixed("an integer")?) as i64
            )),
            Err(2) => Ok(Str::Int(
                i32::from_le_bytes(self.fixed("an integer")?) as i64
            )),
            Err(3) => {
                let clen = self.len()?;
                let ulen = self.len()?;
                // A 2-byte back reference expands to at most 264 bytes.
                let ulen = usize::try_from(ulen)
                    .ok()
                    .filter(|&u| u <= (clen as usize).saturating_mul(132).saturating_add(64))
                    .map_or_else(
                        || self.err(at, "a compressed string of impossible length"),
                        Ok,
                    )?;
                let start = self.take(clen, "a compressed string")?;
                Ok(Str::Lzf {
                    start,
                    clen: clen as usize,
                    ulen,
                })
            }
            Err(k) => self.err(at, format!("unknown string encoding {k}")),
        }
    }

    /// The bytes of `s` (decompressed into `out` when needed; `out` holds them either way).
    fn materialize(&self, s: Str, out: &mut Vec<u8>, at: usize) -> R<()> {
        out.clear();
        match s {
            Str::Int(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Str::Raw { start, len } => out.extend_from_slice(&self.data[start..start + len]),
            Str::Lzf { start, clen, ulen } => {
                if let Err(e) = lzf::decompress(&self.data[start..start + clen], ulen, out) {
                    return self.err(at, e.to_string());
                }
            }
        }
        Ok(())
    }

    /// A string inside a value: [`Parser::string`], and a compressed one checked to expand
    /// (every back reference within what it has produced, its stated length exact), so that a
    /// damaged one is an error naming its offset rather than a value taken as whole. (The walk,
    /// [`Parser::skip_key`], steps over strings without this.)
    #[inline(always)]
    fn value_string(&mut self) -> R<Str> {
        let s = self.string()?;
        if let Str::Lzf { start, clen, ulen } = s {
            self.check_lzf(start, clen, ulen)?;
        }
        Ok(s)
    }

    /// [`lzf::check`] of the compressed string at `start`, as an error at `start`.
    #[inline(never)]
    fn check_lzf(&self, start: usize, clen: usize, ulen: usize) -> R<Option<u8>> {
        match lzf::check(&self.data[start..start + clen], ulen) {
            Ok(last) => Ok(last),
            Err(e) => self.err(
                start,
                format!(
                    "{e} ({clen} compressed bytes from here, stated to expand to {ulen}): a damaged snapshot"
                ),
            ),
        }
    }

    /// Elements of a packed blob, reading no more of it than needed; `None` when malformed
    /// in a way the value can still be stepped over. A blob that does not end with its end
    /// marker (0xFF: listpacks, ziplists, zipmaps) is an error at its last byte.
    fn packed_count(&mut self, s: Str, kind: Packed) -> R<Option<u64>> {
        let terminated = kind != Packed::Intset;
        match s {
            Str::Int(_) => Ok(None),
            Str::Raw { start, len } => {
                let b = &self.data[start..start + len];
                if terminated && len > 0 && b[len - 1] != 0xff {
                    return self.unterminated(kind, start + len - 1, len, b[len - 1], "");
                }
                Ok(blob::count(kind, b, len))
            }
            Str::Lzf { start, clen, ulen } => {
                let last = self.check_lzf(start, clen, ulen)?;
                let input = &self.data[start..start + clen];
                let mut buf = std::mem::take(&mut self.scratch);
                // The header's count is exact, or the whole blob is expanded and walked (and
                // expanded too in the rare case that its last byte comes from a back
                // reference). It expands: `check_lzf` said so.
                let _ = lzf::decompress_prefix(input, ulen, blob::HEADER, &mut buf);
                if !blob::header_count_exact(kind, &buf) || (terminated && last.is_none()) {
                    let _ = lzf::decompress(input, ulen, &mut buf);
                }
                let last = last.or_else(|| buf.last().copied());
                let n = blob::count(kind, &buf, ulen);
                self.scratch = buf;
                match last {
                    Some(b) if terminated && ulen > 0 && b != 0xff => self.unterminated(
                        kind,
                        start,
                        ulen,
                        b,
                        " (compressed: its data starts here)",
                    ),
                    _ => Ok(n),
                }
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn unterminated<T>(&self, kind: Packed, at: usize, len: usize, last: u8, how: &str) -> R<T> {
        let name = match kind {
            Packed::Listpack => "listpack",
            Packed::Ziplist => "ziplist",
            Packed::Zipmap => "zipmap",
            Packed::Intset => "intset",
        };
        self.err(
            at,
            format!(
                "a {name} of {len} bytes{how} ends with 0x{last:02x}, not its end marker 0xff: a damaged snapshot"
            ),
        )
    }

    fn skip_module_value(&mut self) -> R<()> {
        loop {
            let at = self.pos;
            match self.len()? {
                0 => return Ok(()),
                1 | 2 => {
                    let _ = self.len_or_enc()?;
                }
                3 => {
                    self.take(4, "a module float")?;
                }
                4 => {
                    self.take(8, "a module double")?;
                }
                5 => {
                    self.string()?;
                }
                op => return self.err(at, format!("unknown module value opcode {op}")),
            }
        }
    }

    /// The next key, or `None` at the end of the snapshot.
    #[inline(always)]
    pub fn next_key(&mut self) -> R<Option<KeyInfo<'_>>> {
        match self.next_value()? {
            Some(h) => self.value(h).map(Some),
            None => Ok(None),
        }
    }

    /// Steps over the next key and its value without interpreting them, and gives the key's
    /// length (as [`KeyInfo::key`] would hold it), or `None` at the end of the snapshot. A
    /// file this walks without error may still hold a compressed key or value that does not
    /// decompress, which only [`Parser::next_key`] finds.
    #[inline]
    pub fn skip_key(&mut self) -> R<Option<u64>> {
        let Some(h) = self.next_value()? else {
            return Ok(None);
        };
        check_value_type(h.t, h.at)?;
        let key_len = self.string()?.len();
        match h.t {
            0 => {
                self.string()?;
            }
            9..=13 | 16 | 17 | 20 | 23 | 25 => {
                if h.t == 25 {
                    self.take(8, "a hash's next field expiry")?;
                }
                self.string()?;
            }
            14 | 18 => {
                let nodes = self.len()?;
                for _ in 0..nodes {
                    if h.t == 18 {
                        let c = self.len()?;
                        if !(1..=2).contains(&c) {
                            return self.err(self.pos, format!("unknown list node container {c}"));
                        }
                    }
                    self.string()?;
                }
            }
            t => {
                let layout = memory::Layout {
                    key_len,
                    expires: h.expires_at_ms.is_some(),
                    server: self.server,
                };
                self.value_body(t, h.at, &layout)?;
            }
        }
        Ok(Some(key_len))
    }

    /// Where the parser stands: the next record's offset and the state it carries to it.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            pos: self.pos,
            db: self.db,
            server: self.server,
        }
    }

    /// A parser of the same snapshot as `self`, standing at `at` (a checkpoint of a parser of
    /// the same bytes), with no auxiliary fields or counts of its own.
    pub fn resume(&self, at: Checkpoint) -> Parser<'a> {
        let mut p = Parser::standing(
            self.data,
            self.version,
            self.magic,
            self.list_compress_depth,
            at,
        );
        p.server_chosen = self.server_chosen;
        p
    }

    /// Reads records up to the next key's value type byte (`None` at the end marker).
    #[inline(always)]
    fn next_value(&mut self) -> R<Option<ValueHead>> {
        // Most keys have no opcode before their value type.
        if !self.done
            && let Some(&t) = self.data.get(self.pos)
            && t < 0xf0
        {
            self.pos += 1;
            return Ok(Some(ValueHead {
                t,
                at: self.pos - 1,
                expires_at_ms: None,
                lfu: None,
                idle: None,
            }));
        }
        self.next_value_slow()
    }

    /// [`Parser::next_value`] past opcodes, or at the end.
    #[inline(never)]
    fn next_value_slow(&mut self) -> R<Option<ValueHead>> {
        if self.done {
            return Ok(None);
        }
        let mut expires_at_ms = None;
        let mut lfu = None;
        let mut idle = None;
        loop {
            let at = self.pos;
            if at == self.data.len() {
                return self.truncated("the snapshot (no end marker)");
            }
            let t = self.byte()?;
            match t {
                0xff => {
                    self.done = true;
                    if self.version >= 5 {
                        self.take(8, "the checksum")?;
                    }
                    return Ok(None);
                }
                0xfe => {
                    let db = self.len()?;
                    // Servers number their databases with a C int.
                    if db > i32::MAX as u64 {
                        return self.err(
                            at,
                            format!("SELECTDB {db}: no server has that many databases"),
                        );
                    }
                    self.db = db;
                }
                0xfd => {
                    expires_at_ms = Some(u32::from_le_bytes(self.fixed("an expiry")?) as i64 * 1000)
                }
                0xfc => {
                    let ms = i64::from_le_bytes(self.fixed("an expiry")?);
                    // A server saves only expiries it holds, and it deletes a key whose
                    // expiry is set before 1970 at once.
                    if ms < 0 {
                        return self.err(
                            at,
                            format!(
                                "an expiry of {ms} ms, before 1970: no server writes a negative expiry (a damaged snapshot)"
                            ),
                        );
                    }
                    expires_at_ms = Some(ms);
                }
                0xfb => {
                    self.len()?;
                    self.len()?;
                }
                0xfa => {
                    let k = self.string()?;
                    let v = self.string()?;
                    if self.aux.len() < 256 {
                        let (mut kb, mut vb) = (Vec::new(), Vec::new());
                        self.materialize(k, &mut kb, at)?;
                        self.materialize(v, &mut vb, at)?;
                        // Valkey writes `redis-ver` (the Redis it is compatible with), then
                        // `valkey-ver`: the last one read names the server.
                        let valkey_named = self.aux.iter().any(|(k, _)| k == b"valkey-ver");
                        if !(self.server_chosen || (valkey_named && kb == b"redis-ver"))
                            && let Some(server) = memory::Server::from_aux(&kb, &vb)
                        {
                            self.server = server;
                        }
                        self.aux.push((kb, vb));
                    }
                }
                0xf9 => lfu = Some(self.byte()?),
                0xf8 => idle = Some(self.len()?),
                0xf7 => {
                    self.len()?; // module id
                    self.len()?; // the "when" opcode
                    self.len()?; // when
                    self.skip_module_value()?;
                }
                0xf6 => {
                    return self.err(
                        at,
                        "a function library in the Redis 7.0 release-candidate format, which \
                         no released server reads; save the snapshot again with Redis ≥ 7.0.0",
                    );
                }
                0xf5 => {
                    self.string()?;
                    self.functions += 1;
                }
                0xf4 => {
                    self.len()?;
                    self.len()?;
                    self.len()?;
                }
                _ => {
                    return Ok(Some(ValueHead {
                        t,
                        at,
                        expires_at_ms,
                        lfu,
                        idle,
                    }));
                }
            }
        }
    }

    #[inline(always)]
    fn value(&mut self, h: ValueHead) -> R<KeyInfo<'_>> {
        let ValueHead {
            t,
            at,
            expires_at_ms,
            lfu,
            idle,
        } = h;
        check_value_type(t, at)?;
        let key = self.string()?;
        // A key stored as it is is read in place; others are decoded into `self.key`.
        let raw = match key {
            Str::Raw { start, len } => Some(start..start + len),
            _ => {
                let mut kb = std::mem::take(&mut self.key);
                self.materialize(key, &mut kb, at)?;
                self.key = kb;
                None
            }
        };
        let start = self.pos;
        let layout = memory::Layout {
            key_len: key.len(),
            expires: expires_at_ms.is_some(),
            server: self.server,
        };
        let v = if t == 0 {
            self.string_value(&layout)?
        } else {
            self.value_body(t, at, &layout)?
        };
        let memory = v.memory + layout.key();
        if v.elements.is_none() {
            self.uninterpreted += 1;
        }
        let data = self.data;
        Ok(KeyInfo {
            key: match raw {
                Some(r) => &data[r],
                None => &self.key,
            },
            db: self.db,
            kind: v.kind,
            encoding: v.encoding,
            elements: v.elements,
            memory,
            serialized: (self.pos - start) as u64,
            expires_at_ms,
            lfu,
            idle,
            offset: at as u64,
        })
    }

    /// A string value (type 0): most values, read on the inline path.
    #[inline(always)]
    fn string_value(&mut self, layout: &memory::Layout) -> R<Value> {
        let s = self.value_string()?;
        let len = s.len();
        let encoding = match s {
            Str::Int(_) => StringEncoding::Int,
            Str::Raw { start, len } if len <= 20 && is_long(&self.data[start..start + len]) => {
                StringEncoding::Int
            }
            _ if layout.embeds(len) => StringEncoding::Embstr,
            _ => StringEncoding::Raw,
        };
        Ok(Value::new(
            ValueKind::String,
            encoding.name(),
            Some(len),
            layout.string(len, encoding),
        ))
    }

    fn value_body(&mut self, t: u8, at: usize, layout: &memory::Layout) -> R<Value> {
        use ValueKind as K;
        Ok(match t {
            0 => self.string_value(layout)?,
            1 | 2 => {
                let n = self.len()?;
                let mut strings = 0u64;
                for _ in 0..n {
                    strings += layout.sds(self.value_string()?.len());
                }
                if t == 1 {
                    Value::new(
                        K::List,
                        "linkedlist",
                        Some(n),
                        memory::linked_list(n, strings),
                    )
                } else {
                    Value::new(K::Set, "hashtable", Some(n), layout.set(n, strings))
                }
            }
            3 | 5 => {
                let n = self.len()?;
                let mut strings = 0u64;
                for _ in 0..n {
                    strings += layout.sds(self.value_string()?.len());
                    if t == 5 {
                        self.take(8, "a score")?;
                    } else {
                        let l = self.byte()?;
                        if l < 253 {
                            self.take(l as u64, "a score")?;
                        }
                    }
                }
                Value::new(K::Zset, "skiplist", Some(n), layout.skiplist(n, strings))
            }
            22 if self.magic == Magic::Valkey => {
                // Valkey 9's hash with field expiries: (field, value, expiry ms) per field.
                let n = self.len()?;
                let mut strings = 0u64;
                for _ in 0..n {
                    strings += layout.sds(self.value_string()?.len());
                    strings += layout.sds(self.value_string()?.len());
                    self.take(8, "a field's expiry")?;
                }
                Value::new(
                    K::Hash,
                    "hashtable",
                    Some(n),
                    layout.hash(n, strings) + 8 * n,
                )
            }
            4 | 22 | 24 => {
                if t == 24 {
                    self.take(8, "a hash's next field expiry")?;
                }
                let n = self.len()?;
                let mut strings = 0u64;
                let mut expiring = 0u64;
                for _ in 0..n {
                    // A field's TTL (0: none).
                    if t != 4 && self.len()? != 0 {
                        expiring += 1;
                    }
                    strings += layout.sds(self.value_string()?.len());
                    strings += layout.sds(self.value_string()?.len());
                }
                let mut mem = layout.hash(n, strings) + layout.field_expiries(expiring);
                if t == 24 {
                    mem += layout.expiring_hash_rehash(n);
                }
                Value::new(K::Hash, "hashtable", Some(n), mem)
            }
            6 => {
                return self.err(
                    at,
                    "a module value in the Redis 4.0 release-candidate format, which cannot be \
                     stepped over without the module",
                );
            }
            7 => {
                let id = self.len()?;
                self.skip_module_value()?;
                let size = (self.pos - at) as u64;
                Value::new(
                    K::Module(module_name(id)),
                    "raw",
                    Some(1),
                    memory::OBJECT + size,
                )
            }
            9 | 10 | 11 | 12 | 13 | 16 | 17 | 20 | 23 | 25 => {
                if t == 25 {
                    self.take(8, "a hash's next field expiry")?;
                }
                let (kind, encoding, packed, per) = match t {
                    9 => (K::Hash, "zipmap", Packed::Zipmap, 2),
                    10 => (K::List, "ziplist", Packed::Ziplist, 1),
                    11 => (K::Set, "intset", Packed::Intset, 1),
                    12 => (K::Zset, "ziplist", Packed::Ziplist, 2),
                    13 => (K::Hash, "ziplist", Packed::Ziplist, 2),
                    16 => (K::Hash, "listpack", Packed::Listpack, 2),
                    17 => (K::Zset, "listpack", Packed::Listpack, 2),
                    20 => (K::Set, "listpack", Packed::Listpack, 1),
                    _ => (K::Hash, "listpackex", Packed::Listpack, 3),
                };
                // (packed_count checks a compressed blob's runs)
                let s = self.string()?;
                let elements = match self.packed_count(s, packed)? {
                    Some(n) if n % per != 0 => {
                        let what = match per {
                            2 if kind == K::Zset => "member-score pairs",
                            2 => "field-value pairs",
                            _ => "field, value and expiry triples",
                        };
                        return self.err(
                            s.start().unwrap_or(at),
                            format!(
                                "a {} {encoding} of {n} entries, not a whole number of {what}: a damaged snapshot",
                                kind.name()
                            ),
                        );
                    }
                    n => n.map(|n| n / per),
                };
                let mut mem = layout.packed(s.len());
                if matches!(t, 23 | 25) {
                    mem += layout.listpack_ex();
                }
                Value::new(kind, encoding, elements, mem)
            }
            14 | 18 => {
                let nodes = self.len()?;
                let mut elements = Some(0u64);
                let mut blobs = 0u64;
                let mut only_packed_size = None;
                for i in 0..nodes {
                    let plain = if t == 18 {
                        let c = self.len()?;
                        if !(1..=2).contains(&c) {
                            return self.err(self.pos, format!("unknown list node container {c}"));
                        }
                        c == 1
                    } else {
                        false
                    };
                    // (a packed node's runs are checked by packed_count)
                    let s = if plain {
                        self.value_string()?
                    } else {
                        self.string()?
                    };
                    let depth = u64::from(self.list_compress_depth);
                    let inner = depth > 0 && nodes >= 2 * depth && i >= depth && i < nodes - depth;
                    blobs += match s {
                        // What the server compresses is what the snapshot holds compressed.
                        Str::Lzf { clen, .. } if inner => {
                            memory::list_node_blob(layout.server, s.len(), Some(clen as u64))
                        }
                        _ => memory::list_node_blob(layout.server, s.len(), None),
                    };
                    let n = if plain {
                        Some(1)
                    } else {
                        let kind = if t == 14 {
                            Packed::Ziplist
                        } else {
                            Packed::Listpack
                        };
                        self.packed_count(s, kind)?
                    };
                    elements = elements.zip(n).map(|(a, b)| a + b);
                    if i == 0 && !plain {
                        only_packed_size = Some(s.len());
                    }
                }
                // Servers from 7.2 (RDB 11) hold a list that fits one small node as a listpack.
                match only_packed_size {
                    Some(size) if t == 18 && nodes == 1 && self.version >= 11 && size <= 8192 => {
                        Value::new(K::List, "listpack", elements, layout.packed(size))
                    }
                    _ => Value::new(
                        K::List,
                        "quicklist",
                        elements,
                        memory::quicklist(nodes, blobs, t == 18),
                    ),
                }
            }
            15 | 19 | 21 => self.stream(t, layout.server)?,
            _ => unreachable!("invariant: value types are checked above"),
        })
    }

    fn stream(&mut self, t: u8, server: memory::Server) -> R<Value> {
        let layout = memory::StreamLayout::for_type(t);
        let nodes = self.len()?;
        let mut mem = memory::OBJECT + layout.stream;
        let mut ids = memory::RaxCounter::default();
        let mut scratch = std::mem::take(&mut self.scratch);
        for _ in 0..nodes {
            let at = self.pos;
            let id = self.value_string()?; // the node's master id, the tree's key
            scratch.clear();
            self.materialize(id, &mut scratch, at)?;
            ids.push(&scratch);
            let lp = self.value_string()?;
            mem += server.alloc(lp.len());
        }
        self.scratch = scratch;
        mem += ids.usage();
        let length = self.len()?;
        self.len()?; // last id
        self.len()?;
        if t >= 19 {
            for _ in 0..5 {
                self.len()?; // first id, max deleted id, entries added
            }
        }
        let groups = self.len()?;
        for _ in 0..groups {
            self.value_string()?;
            self.len()?;
            self.len()?;
            if t >= 19 {
                self.len()?; // entries read
            }
            mem += layout.group;
            let pending = self.len()?;
            let mut pel = memory::RaxCounter::default();
            for _ in 0..pending {
                let at = self.take(16 + 8, "a pending entry")?;
                pel.push(&self.data[at..at + 16]);
                self.len()?;
            }
            mem += pel.usage() + pending * memory::STREAM_NACK;
            let consumers = self.len()?;
            for _ in 0..consumers {
                let name = self.value_string()?;
                mem += layout.consumer + name.len();
                self.take(if t >= 21 { 16 } else { 8 }, "a consumer's times")?;
                let own = self.len()?;
                let at = self.take(own.saturating_mul(16), "a consumer's pending entries")?;
                let mut pel = memory::RaxCounter::default();
                for id in self.data[at..at + own as usize * 16].chunks_exact(16) {
                    pel.push(id);
                }
                mem += pel.usage();
            }
        }
        Ok(Value::new(ValueKind::Stream, "stream", Some(length), mem))
    }
}

struct Value {
    kind: ValueKind,
    encoding: &'static str,
    elements: Option<u64>,
    memory: u64,
}

impl Value {
    fn new(kind: ValueKind, encoding: &'static str, elements: Option<u64>, memory: u64) -> Value {
        Value {
            kind,
            encoding,
            elements,
            memory,
        }
    }
}

/// Whether a server would hold these bytes as an integer: the canonical decimal form of an
/// i64 (no sign on zero, no leading zeros, no `+`).
fn is_long(b: &[u8]) -> bool {
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    if digits.len() > 1 && digits[0] == b'0' || b == b"-0" {
        return false;
    }
    std::str::from_utf8(b).is_ok_and(|s| s.parse::<i64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(body: &[u8]) -> Vec<u8> {
        let mut f = b"REDIS0011".to_vec();
        f.extend_from_slice(body);
        f.push(0xff);
        f.extend_from_slice(&[0; 8]);
        f
    }

    #[test]
    fn strings_of_every_encoding() {
        let mut body = vec![0xfa, 3, b'a', b'b', b'c', 1, b'x'];
        body.extend_from_slice(&[0xfe, 2]);
        body.extend_from_slice(&[0, 1, b'k', 0xc0, 0x7f]); // int8
        body.extend_from_slice(&[0xfc]);
        body.extend_from_slice(&1_700_000_000_000i64.to_le_bytes());
        body.extend_from_slice(&[0, 2, b'k', b'2', 3, b'a', b'b', b'c']);
        let data = file(&body);
        let mut p = Parser::new(&data).unwrap();
        let k = p.next_key().unwrap().unwrap();
        assert_eq!(
            (k.key, k.db, k.encoding, k.elements),
            (&b"k"[..], 2, "int", Some(3))
        );
        assert_eq!(k.expires_at_ms, None);
        let k = p.next_key().unwrap().unwrap();
        assert_eq!(
            (k.key, k.encoding, k.elements),
            (&b"k2"[..], "embstr", Some(3))
        );
        assert_eq!(k.expires_at_ms, Some(1_700_000_000_000));
        assert!(p.next_key().unwrap().is_none());
        assert_eq!(p.aux(), &[(b"abc".to_vec(), b"x".to_vec())]);
    }

    #[test]
    fn headers_and_numbers_no_server_writes_are_damage() {
        for head in [&b"VALKEY999"[..], b"REDIS0079", b"REDIS0000"] {
            let e = Parser::new(head).err().unwrap();
            assert!(e.message.contains("not one any server writes"), "{e}");
        }
        assert!(Parser::new(b"REDIS0012").is_ok());
        assert!(Parser::new(b"VALKEY080").is_ok());
        // SELECTDB 2^64-1 (a 64-bit length: 0x81 then 8 big-endian bytes).
        let mut body = vec![0xfe, 0x81];
        body.extend_from_slice(&u64::MAX.to_be_bytes());
        body.extend_from_slice(&[0, 1, b'k', 1, b'v']);
        let data = file(&body);
        let e = Parser::new(&data).unwrap().next_key().unwrap_err();
        assert!(
            e.message.contains("no server has that many databases"),
            "{e}"
        );
    }

    #[test]
    fn damaged_magics_are_told_from_key_dumps() {
        for head in [
            &b"redis0010\xfa\x09redis-ver"[..],
            b"RDB0010\xfa",
            b"Redis0011\xfe\x00",
            b"valkey080\xfa",
            b"REDIS001 \xfa",
        ] {
            assert!(damaged_magic(head).is_some(), "{head:?}");
            assert!(sniff(head).is_some(), "{head:?}");
            let e = Parser::new(head).err().unwrap();
            assert_eq!(e.offset, 0, "{e}");
            assert!(e.message.contains("damaged header"), "{e}");
        }
        for head in [
            &b"REDIS0011\xfa"[..],
            b"redis0001\nuser:1\n",
            b"RDB0010:x\n",
            b"rdb:1\n",
            b"RDB\xfa",
            b"redis01234567\xfa",
            b"redis",
        ] {
            assert!(damaged_magic(head).is_none(), "{head:?}");
        }
        assert_eq!(sniff(b"REDIS0011\xfa"), Some((Magic::Redis, 11)));
    }

    #[test]
    fn negative_expiries_are_damage() {
        let mut body = vec![0xfc];
        body.extend_from_slice(&(-1i64).to_le_bytes());
        body.extend_from_slice(&[0, 1, b'k', 1, b'v']);
        let data = file(&body);
        let e = Parser::new(&data).unwrap().next_key().unwrap_err();
        assert_eq!(e.offset, 9);
        assert!(e.message.contains("an expiry of -1 ms"), "{e}");
    }

    #[test]
    fn truncation_names_the_offset() {
        let data = b"REDIS0011\x00\x05ab";
        let mut p = Parser::new(data).unwrap();
        let e = p.next_key().unwrap_err();
        assert_eq!(e.offset, 11); // where the string that runs past the end starts
        assert!(e.message.contains("ends inside"), "{e}");
        assert!(Parser::new(b"REDIS00a1").is_err());
        assert!(Parser::new(b"hello").is_err());
        let e = Parser::new(b"REDIS0011\x08")
            .unwrap()
            .next_key()
            .unwrap_err();
        assert!(e.message.contains("unknown value type 8"), "{e}");
    }

    #[test]
    fn valkey_hashes_with_field_expiries() {
        let mut f = b"VALKEY080".to_vec();
        f.extend_from_slice(&[22, 1, b'h', 2]);
        for (field, value) in [(&b"a"[..], &b"1"[..]), (b"b", b"2")] {
            f.extend_from_slice(&[field.len() as u8]);
            f.extend_from_slice(field);
            f.extend_from_slice(&[value.len() as u8]);
            f.extend_from_slice(value);
            f.extend_from_slice(&(-1i64).to_le_bytes());
        }
        f.extend_from_slice(&[0, 1, b'k', 1, b'v', 0xff]);
        f.extend_from_slice(&[0; 8]);
        let mut p = Parser::new(&f).unwrap();
        let k = p.next_key().unwrap().unwrap();
        assert_eq!(
            (k.key, k.kind, k.elements),
            (&b"h"[..], ValueKind::Hash, Some(2))
        );
        let k = p.next_key().unwrap().unwrap();
        assert_eq!(k.key, b"k");
        assert!(p.next_key().unwrap().is_none());
    }

    #[test]
    fn canonical_integers() {
        for (s, want) in [
            ("0", true),
            ("-1", true),
            ("9223372036854775807", true),
            ("9223372036854775808", false),
            ("007", false),
            ("-0", false),
            ("+1", false),
            ("", false),
        ] {
            assert_eq!(is_long(s.as_bytes()), want, "{s}");
        }
    }

    #[test]
    fn module_names() {
        // "ReJSON-RL" version 3, as the module registers it.
        let chars = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut id = 0u64;
        for c in b"ReJSON-RL" {
            id = id << 6 | chars.iter().position(|x| x == c).unwrap() as u64;
        }
        id = id << 10 | 3;
        assert_eq!(&module_name(id), b"ReJSON-RL");
    }
}
