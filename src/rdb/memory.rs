//! What a key costs in a server's memory, estimated from what its snapshot says.
//!
//! The model follows how the server that loads the snapshot lays values out on 64-bit Linux
//! and what its `MEMORY USAGE` counts ([`Server`]: Redis 7, Redis 8, Valkey 8.1 and 9): every
//! allocation rounded up to its jemalloc size class; a 16-byte object header per value; packed
//! encodings (listpack, ziplist, intset) are one allocation of the bytes the snapshot holds;
//! strings are `int`, `embstr` (header and bytes in one allocation) or `raw`; hash tables cost
//! a 56-byte dict, 8 bytes a bucket (a power of two at least the size) and a 24-byte entry per
//! element plus the element's sds strings; sorted sets add a skiplist (a 640-byte head and ~54
//! bytes a node). In Redis 7 the key adds its sds string and its 24-byte entry in the
//! keyspace; Redis 8 and Valkey ≥ 8.1 keep the key inside the value's object. Tests compare
//! the sums with `MEMORY USAGE … SAMPLES 0` of real servers.

/// The server whose memory layout an estimate follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// Redis up to 7.4 and Valkey before 8.1: keys in the keyspace's dict entries, jemalloc
    /// with a 16-byte quantum (as Debian's Redis 7.0 links it, the build the model was
    /// measured on).
    Redis7,
    /// Redis 8: the key (and its expiry, and a short string value) inside the value's object,
    /// which the keyspace holds directly; its bundled jemalloc has 8-byte size classes up to
    /// 64 bytes.
    Redis8,
    /// Valkey 8.1 and later: the key inside the value's object, the keyspace and sets and
    /// hashes in Valkey's own hash table.
    Valkey8,
}

/// The values `--server` accepts, as help and errors name them.
pub const SERVER_NAMES: &str = "redis-7, redis-8, valkey-8, valkey-9 (a minor version may follow: redis-7.2, redis-8.2, valkey-8.1)";

impl Server {
    /// The layout of the server a snapshot's `redis-ver` or `valkey-ver` field names
    /// (`None` for other fields).
    pub fn from_aux(field: &[u8], version: &[u8]) -> Option<Server> {
        let v = String::from_utf8_lossy(version);
        let (major, minor) = major_minor(&v)?;
        match field {
            b"valkey-ver" => Some(Server::valkey(major, minor)),
            b"redis-ver" => Some(Server::redis(major)),
            _ => None,
        }
    }

    fn redis(major: u32) -> Server {
        if major >= 8 {
            Server::Redis8
        } else {
            Server::Redis7
        }
    }

    fn valkey(major: u32, minor: u32) -> Server {
        if (major, minor) >= (8, 1) {
            Server::Valkey8
        } else {
            Server::Redis7
        }
    }

    /// Reads `--server`: `redis-8`, `redis-8.2`, `valkey-9.1.2`, …
    pub fn parse(s: &str) -> Result<Server, String> {
        let bad = || format!("unknown server `{s}`: expected one of {SERVER_NAMES}");
        let lower = s.trim().to_ascii_lowercase();
        let (name, version) = lower.split_once('-').ok_or_else(bad)?;
        let (major, minor) = major_minor(version).ok_or_else(bad)?;
        match name {
            "redis" if (2..=8).contains(&major) => Ok(Server::redis(major)),
            "valkey" if (7..=9).contains(&major) => Ok(Server::valkey(major, minor)),
            _ => Err(bad()),
        }
    }

    /// Whether the key lives inside its value's object.
    pub fn embeds_keys(self) -> bool {
        self != Server::Redis7
    }

    /// The words reports use for it.
    pub fn name(self) -> &'static str {
        match self {
            Server::Redis7 => "Redis 7",
            Server::Redis8 => "Redis 8",
            Server::Valkey8 => "Valkey 8.1+",
        }
    }

    /// The allocation `n` bytes take on this server.
    pub fn alloc(self, n: u64) -> u64 {
        match self {
            Server::Redis8 => alloc8(n),
            _ => alloc(n),
        }
    }

    /// An sds string of `len` bytes (header, bytes, terminator) on this server.
    pub fn sds(self, len: u64) -> u64 {
        self.alloc(sds_header(len) + len + 1)
    }

    /// A value held as one packed blob of `bytes` bytes (listpack, ziplist, intset, zipmap).
    pub fn packed(self, bytes: u64) -> u64 {
        OBJECT + self.alloc(bytes)
    }
}

/// `8.2.3` as (8, 2); a version without a minor is (major, 0).
fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    let major = it.next()?.parse().ok()?;
    let minor = match it.next() {
        Some(m) => m.parse().ok()?,
        None => 0,
    };
    Some((major, minor))
}

/// The size class of jemalloc built with an 8-byte quantum (`--with-lg-quantum=3`, as Redis
/// builds its bundled copy): every multiple of 8 up to 64, then as [`alloc`].
pub fn alloc8(n: u64) -> u64 {
    if n <= 64 { n.div_ceil(8) * 8 } else { alloc(n) }
}

/// The jemalloc size class `n` bytes are served from (64-bit, 16-byte quantum).
pub fn alloc(n: u64) -> u64 {
    match n {
        0 => 0,
        1..=8 => 8,
        9..=16 => 16,
        _ => {
            let lg = 64 - (n - 1).leading_zeros(); // 2^(lg-1) < n <= 2^lg
            // A power of two: rounding up is a mask, not a division.
            let spacing = (1u64 << (lg - 3)).max(16);
            (n + spacing - 1) & !(spacing - 1)
        }
    }
}

/// Header bytes of an sds string of `len` bytes.
fn sds_header(len: u64) -> u64 {
    match len {
        0..=31 => 1,
        32..=255 => 3,
        256..=65_535 => 5,
        65_536..=0xffff_ffff => 9,
        _ => 17,
    }
}

/// An sds string of `len` bytes (header, bytes, terminator).
pub fn sds(len: u64) -> u64 {
    alloc(sds_header(len) + len + 1)
}

/// The object header every value has.
pub const OBJECT: u64 = 16;
const DICT: u64 = 56;
const DICT_ENTRY: u64 = 24;
const QUICKLIST: u64 = 40;
const SKIPLIST_HEAD: u64 = 640;
const SKIPLIST_NODE: u64 = 54;
const ZSET_STRUCTS: u64 = 16 + 32;
/// The longest string kept in one allocation with its object header.
pub const EMBSTR_MAX: u64 = 44;

/// How a server holds a string value (`OBJECT ENCODING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringEncoding {
    /// An integer in the object's pointer.
    Int,
    /// The string in one allocation with its object header.
    Embstr,
    /// The string in an allocation of its own.
    Raw,
}

impl StringEncoding {
    /// The name `OBJECT ENCODING` gives.
    pub fn name(self) -> &'static str {
        match self {
            StringEncoding::Int => "int",
            StringEncoding::Embstr => "embstr",
            StringEncoding::Raw => "raw",
        }
    }
}

/// How a key and its value object are laid out.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// The key's length.
    pub key_len: u64,
    /// Whether the key has an expiry.
    pub expires: bool,
    /// The server that holds the key.
    pub server: Server,
}

/// A cache line: Valkey ≥ 8.1 embeds a string value when the object fits in one.
const CACHE_LINE: u64 = 64;

impl Layout {
    fn embedded_key_bytes(&self) -> u64 {
        self.key_len + 3 + if self.expires { 8 } else { 0 }
    }

    /// Redis 8's object with its key: the header, the expiry, a byte giving the key's header
    /// size and the key's sds string.
    fn redis8_object(&self) -> u64 {
        OBJECT + if self.expires { 8 } else { 0 } + 1 + sds_header(self.key_len) + self.key_len + 1
    }

    /// Whether a string value of `len` bytes shares its object's allocation (`embstr`). Redis
    /// 8 and Valkey ≥ 8.1 (measured on 8.2 and 8.1): when key and value together are at most
    /// 41 bytes; Redis 8 with an expiry at most 33; Valkey with an expiry when object, key,
    /// expiry and value fit one cache line.
    pub fn embeds(&self, len: u64) -> bool {
        match self.server {
            Server::Redis7 => len <= EMBSTR_MAX,
            Server::Redis8 => self.key_len + len + if self.expires { 8 } else { 0 } <= 41,
            Server::Valkey8 if self.expires => self.valkey_embstr(len) <= CACHE_LINE,
            Server::Valkey8 => self.key_len + len <= 41,
        }
    }

    /// The bytes of a Valkey ≥ 8.1 object holding key (expiry) and a value of `len` bytes.
    fn valkey_embstr(&self, len: u64) -> u64 {
        let key_header = if self.key_len < 32 { 1 } else { 3 };
        15 + (key_header - 1) + self.key_len + len + if self.expires { 8 } else { 0 }
    }

    /// The key's own cost: its sds string and its entry in the keyspace (Redis 7), or its
    /// bytes inside the object beyond the object's header (Redis 8), and the table's pointer
    /// (Valkey ≥ 8.1).
    pub fn key(&self) -> u64 {
        match self.server {
            Server::Redis7 => sds(self.key_len) + DICT_ENTRY,
            Server::Redis8 => alloc8(self.redis8_object()) - OBJECT,
            Server::Valkey8 => self.embedded_key_bytes() + 8,
        }
    }

    /// The allocation `n` bytes take on the layout's server.
    pub fn alloc(&self, n: u64) -> u64 {
        self.server.alloc(n)
    }

    /// An sds string of `len` bytes on the layout's server.
    pub fn sds(&self, len: u64) -> u64 {
        self.server.sds(len)
    }

    /// A value held as one packed blob of `bytes` bytes.
    pub fn packed(&self, bytes: u64) -> u64 {
        self.server.packed(bytes)
    }

    /// A string value of `len` bytes in the given encoding (without [`Layout::key`]).
    pub fn string(&self, len: u64, encoding: StringEncoding) -> u64 {
        match (encoding, self.server) {
            (StringEncoding::Int, _) => OBJECT,
            (StringEncoding::Embstr, Server::Valkey8) => {
                alloc(self.valkey_embstr(len)).saturating_sub(self.embedded_key_bytes())
            }
            (StringEncoding::Embstr, Server::Redis8) => {
                // The value's sds (an 8-bit header) follows the key in the object.
                alloc8(self.redis8_object() + 3 + len + 1) - self.key()
            }
            (StringEncoding::Embstr, Server::Redis7) => alloc(OBJECT + 3 + len + 1),
            (StringEncoding::Raw, _) => OBJECT + self.sds(len),
        }
    }

    /// A hash-table set of `n` members whose strings cost `strings`.
    pub fn set(&self, n: u64, strings: u64) -> u64 {
        match self.server {
            // Valkey ≥ 8.1's table holds the member strings themselves (measured ~25 bytes of
            // table per member beside its string).
            Server::Valkey8 => OBJECT + DICT + n * VALKEY_SET_ENTRY + strings,
            _ => table(n, strings),
        }
    }

    /// A hash-table hash of `n` fields whose field and value strings cost `strings`.
    pub fn hash(&self, n: u64, strings: u64) -> u64 {
        match self.server {
            // Valkey ≥ 8.1 keeps field and value in one entry (measured ~10 bytes of table a
            // field beside its strings).
            Server::Valkey8 => OBJECT + DICT + n * VALKEY_HASH_ENTRY + strings,
            _ => table(n, strings),
        }
    }

    /// A skiplist sorted set of `n` members whose strings cost `strings`.
    pub fn skiplist(&self, n: u64, strings: u64) -> u64 {
        let redis = skiplist(n, strings);
        match self.server {
            Server::Valkey8 => redis.saturating_sub(n * VALKEY_ZSET_SAVING),
            // Redis 8 (measured on 8.2 over 4,000 and 8,000 members of 9 to 105 bytes): the
            // members' dict has 16-byte entries, and the nodes (score, member, backward link
            // and 1.33 levels of 16 bytes on average) fall in 8-byte size classes.
            Server::Redis8 => {
                OBJECT
                    + DICT
                    + 8 * buckets(n)
                    + n * (16 + REDIS8_SKIPLIST_NODE)
                    + strings
                    + ZSET_STRUCTS
                    + SKIPLIST_HEAD
            }
            Server::Redis7 => redis,
        }
    }

    /// What `expiring` hash fields with an expiry add to a hash-table hash (Redis ≥ 7.4: a
    /// field's string carries its expiry; measured on 8.2: 24 bytes a field for the first ten,
    /// 16 for each after).
    pub fn field_expiries(&self, expiring: u64) -> u64 {
        match self.server {
            Server::Valkey8 => 8 * expiring,
            _ => 24 * expiring.min(10) + 16 * expiring.saturating_sub(10),
        }
    }

    /// Redis 8 loads a hash with field expiries of `n` fields through a listpack, then a
    /// table that doubles as fields are added, one bucket moved a field: while fewer fields
    /// than ~63% of the old table's size came after the last doubling, the old table is still
    /// held beside the new one (as `MEMORY USAGE` sees it after loading; measured on 8.2 from
    /// 513 to 2,500 fields).
    pub fn expiring_hash_rehash(&self, n: u64) -> u64 {
        if self.server != Server::Redis8 || n < 2 {
            return 0;
        }
        let old = (n - 1).next_power_of_two() / 2; // the largest power of two below n
        if old >= 4 && (n - old) * 1000 < old * 632 {
            8 * old
        } else {
            0
        }
    }

    /// The struct a listpack hash with field expiries (`listpackex`) keeps beside its
    /// listpack: its place among the expiring keys and the listpack's pointer (Redis 8: 24
    /// bytes, measured on 8.2; Redis 7.4 also kept a pointer to the key: 32).
    pub fn listpack_ex(&self) -> u64 {
        match self.server {
            Server::Redis8 => 24,
            _ => 32,
        }
    }
}

const VALKEY_SET_ENTRY: u64 = 25;
const VALKEY_HASH_ENTRY: u64 = 10;
const VALKEY_ZSET_SAVING: u64 = 15;
/// A Redis 8 skiplist node's average size class.
const REDIS8_SKIPLIST_NODE: u64 = 46;

/// A value held as one packed blob of `bytes` bytes (listpack, ziplist, intset, zipmap).
pub fn packed(bytes: u64) -> u64 {
    OBJECT + alloc(bytes)
}

/// Buckets of a hash table holding `n` entries.
fn buckets(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        n.next_power_of_two().max(4)
    }
}

/// A hash table value (set or hash) of `n` entries whose strings cost `strings` in all.
pub fn table(n: u64, strings: u64) -> u64 {
    OBJECT + DICT + 8 * buckets(n) + n * DICT_ENTRY + strings
}

/// A skiplist sorted set of `n` members whose strings cost `strings`.
pub fn skiplist(n: u64, strings: u64) -> u64 {
    table(n, strings) + ZSET_STRUCTS + SKIPLIST_HEAD + n * SKIPLIST_NODE
}

/// A quicklist of nodes whose blobs cost `blobs` (already rounded to size classes); Redis ≥ 7.0
/// (`wide_nodes`) made a node's size field 8 bytes, so a node struct takes 40 bytes, not 32.
pub fn quicklist(nodes: u64, blobs: u64, wide_nodes: bool) -> u64 {
    let node = if wide_nodes { 40 } else { 32 };
    OBJECT + QUICKLIST + nodes * node + blobs
}

/// Bytes a list node shorter than this is never compressed.
const MIN_COMPRESS_BYTES: u64 = 48;
/// A node stays uncompressed unless compression saves more than this.
const MIN_COMPRESS_IMPROVE: u64 = 8;

/// What a list node of `len` bytes costs: its blob, or, when it is one the server compresses and
/// `compressed` is its LZF length, the compressed form behind an 8-byte length.
pub fn list_node_blob(server: Server, len: u64, compressed: Option<u64>) -> u64 {
    match compressed {
        Some(c) if len >= MIN_COMPRESS_BYTES && c + MIN_COMPRESS_IMPROVE < len => {
            server.alloc(8 + c)
        }
        _ => server.alloc(len),
    }
}

/// A linked list (Redis < 3.2) of `n` elements whose strings cost `strings`.
pub fn linked_list(n: u64, strings: u64) -> u64 {
    OBJECT + 48 + n * (24 + OBJECT) + strings
}

/// The struct sizes of a stream as a server of the snapshot's generation lays it out: Redis 5
/// and 6 (RDB type 15), Redis 7.0 (type 19, which added first/max-deleted ids, entries added
/// and entries read) and Redis ≥ 7.2 / Valkey (type 21, which added a consumer's active time).
#[derive(Debug, Clone, Copy)]
pub struct StreamLayout {
    /// The stream struct itself.
    pub stream: u64,
    /// A consumer group.
    pub group: u64,
    /// A consumer (without its name).
    pub consumer: u64,
}

impl StreamLayout {
    /// The layout of the server generation that writes RDB stream type `t`.
    pub fn for_type(t: u8) -> StreamLayout {
        match t {
            15 => StreamLayout {
                stream: 40,
                group: 32,
                consumer: 24,
            },
            19 => StreamLayout {
                stream: 80,
                group: 40,
                consumer: 24,
            },
            _ => StreamLayout {
                stream: 80,
                group: 40,
                consumer: 32,
            },
        }
    }
}

/// One pending entry's delivery record (time, count, consumer).
pub const STREAM_NACK: u64 = 24;

/// What `MEMORY USAGE` counts for one of a stream's radix trees: 16 bytes an element and a
/// fixed 244 bytes a node (the node header and the children and data pointers the server
/// assumes a node has).
pub fn radix_tree(elements: u64, nodes: u64) -> u64 {
    elements * 16 + nodes * 244
}

/// Counts the nodes of a Redis radix tree (`rax`) built from keys given in ascending order,
/// as the stream ids of a snapshot are: the head, one node where keys branch, one where each
/// branch starts when its edge is longer than one byte (a compressed node), and one a key.
#[derive(Debug, Default)]
pub struct RaxCounter {
    prev: Vec<u8>,
    /// Depths of the branching nodes on the path to the newest key.
    stack: Vec<usize>,
    keys: u64,
    branching: u64,
    long_edges: u64,
}

impl RaxCounter {
    /// Adds the next key (ascending; a key out of order is counted as if it were in order).
    pub fn push(&mut self, key: &[u8]) {
        if self.keys == 0 {
            self.prev.clear();
            self.prev.extend_from_slice(key);
            self.keys = 1;
            return;
        }
        let l = self
            .prev
            .iter()
            .zip(key)
            .take_while(|(a, b)| a == b)
            .count();
        let mut child = self.prev.len();
        while let Some(&top) = self.stack.last() {
            if top <= l {
                break;
            }
            self.stack.pop();
            self.edge(child - top);
            child = top;
        }
        if self.stack.last() != Some(&l) {
            self.branching += 1;
            self.stack.push(l);
        }
        self.edge(child.saturating_sub(l));
        self.prev.clear();
        self.prev.extend_from_slice(key);
        self.keys += 1;
    }

    fn edge(&mut self, len: usize) {
        if len > 1 {
            self.long_edges += 1;
        }
    }

    /// The keys pushed so far.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// The tree's node count (an empty tree has its head node).
    pub fn nodes(&self) -> u64 {
        let mut long_edges = self.long_edges;
        let mut child = self.prev.len();
        for &top in self.stack.iter().rev() {
            if child - top > 1 {
                long_edges += 1;
            }
            child = top;
        }
        let head_is_branching = self.keys > 1 && self.stack.first() == Some(&0);
        let head = if head_is_branching { 0 } else { 1 };
        head + self.branching + self.keys + long_edges
    }

    /// What `MEMORY USAGE` counts for the tree.
    pub fn usage(&self) -> u64 {
        radix_tree(self.keys, self.nodes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rax(keys: &[&[u8]]) -> u64 {
        let mut r = RaxCounter::default();
        for k in keys {
            r.push(k);
        }
        r.nodes()
    }

    #[test]
    fn radix_tree_nodes() {
        // An empty tree is its head; one key is the head (compressed) and the key's node.
        assert_eq!(rax(&[]), 1);
        assert_eq!(rax(&[b"abcdef"]), 2);
        // "abc" compressed, the branch at "abc", each branch a compressed node and a key.
        assert_eq!(rax(&[b"abcdxx", b"abcexx"]), 6);
        // Branches one byte long end in the key itself.
        assert_eq!(rax(&[b"abcd", b"abce", b"abcf"]), 5);
        // A head that branches is not a node of its own.
        assert_eq!(rax(&[b"ab", b"cd"]), 5);
        // Nested branching: "a" → {b, c}; "ab" → {x, y}.
        assert_eq!(rax(&[b"abx", b"aby", b"acz"]), 1 + 2 + 3 + 1);
    }

    #[test]
    fn servers_by_name_and_snapshot_field() {
        assert_eq!(Server::parse("redis-8.2"), Ok(Server::Redis8));
        assert_eq!(Server::parse("Redis-7"), Ok(Server::Redis7));
        assert_eq!(Server::parse("valkey-9.1.2"), Ok(Server::Valkey8));
        assert_eq!(Server::parse("valkey-8.0"), Ok(Server::Redis7));
        for bad in ["redis", "redis-x", "keydb-6", "redis-9", "valkey-", ""] {
            let e = Server::parse(bad).unwrap_err();
            assert!(e.contains("redis-8") && e.contains("valkey-9"), "{e}");
        }
        assert_eq!(
            Server::from_aux(b"redis-ver", b"8.2.3"),
            Some(Server::Redis8)
        );
        assert_eq!(
            Server::from_aux(b"redis-ver", b"7.4.1"),
            Some(Server::Redis7)
        );
        assert_eq!(
            Server::from_aux(b"valkey-ver", b"8.1.8"),
            Some(Server::Valkey8)
        );
        assert_eq!(Server::from_aux(b"ctime", b"8"), None);
    }

    #[test]
    fn redis8_strings() {
        // As MEMORY USAGE gives them on Redis 8.2 (key included).
        let whole = |key_len, expires, len| {
            let l = Layout {
                key_len,
                expires,
                server: Server::Redis8,
            };
            let enc = if l.embeds(len) {
                StringEncoding::Embstr
            } else {
                StringEncoding::Raw
            };
            (enc, l.string(len, enc) + l.key())
        };
        assert_eq!(whole(4, false, 0), (StringEncoding::Embstr, 32));
        assert_eq!(whole(4, false, 6), (StringEncoding::Embstr, 40));
        assert_eq!(whole(4, false, 37), (StringEncoding::Embstr, 64));
        assert_eq!(whole(4, false, 38), (StringEncoding::Raw, 72));
        assert_eq!(whole(32, false, 9), (StringEncoding::Embstr, 80));
        assert_eq!(whole(32, false, 10), (StringEncoding::Raw, 72));
        assert_eq!(whole(8, true, 25), (StringEncoding::Embstr, 64));
        assert_eq!(whole(8, true, 26), (StringEncoding::Raw, 72));
        assert_eq!(whole(60, false, 7), (StringEncoding::Raw, 112));
        let int = Layout {
            key_len: 1,
            expires: false,
            server: Server::Redis8,
        };
        assert_eq!(int.string(5, StringEncoding::Int) + int.key(), 24);
        // A hash with field expiries mid-rehash after loading (measured: 700 and 1,500
        // fields hold the old table, 900 and 2,000 do not).
        let l = Layout {
            key_len: 3,
            expires: false,
            server: Server::Redis8,
        };
        assert_eq!(l.expiring_hash_rehash(700), 4096);
        assert_eq!(l.expiring_hash_rehash(900), 0);
        assert_eq!(l.expiring_hash_rehash(1500), 8192);
        assert_eq!(l.expiring_hash_rehash(2000), 0);
    }

    #[test]
    fn size_classes() {
        let got: Vec<u64> = [
            1, 8, 9, 17, 33, 48, 49, 65, 100, 129, 200, 257, 600, 1025, 5000,
        ]
        .iter()
        .map(|&n| alloc(n))
        .collect();
        assert_eq!(
            got,
            [
                8, 8, 16, 32, 48, 48, 64, 80, 112, 160, 224, 320, 640, 1280, 5120
            ]
        );
    }

    #[test]
    fn strings() {
        let redis = Layout {
            key_len: 10,
            expires: false,
            server: Server::Redis7,
        };
        assert_eq!(redis.string(5, StringEncoding::Int), 16);
        assert_eq!(redis.string(10, StringEncoding::Embstr), 32); // 16 + 3 + 10 + 1 = 30 → 32
        assert_eq!(redis.string(100, StringEncoding::Raw), 16 + 112); // 3 + 100 + 1 = 104 → 112
        assert!(redis.embeds(44) && !redis.embeds(45));
        // Valkey 8.1 (measured): a 10-byte key embeds values up to 31 bytes, with an expiry too;
        // a 34-byte key up to 7, 5 with an expiry.
        let valkey = Layout {
            server: Server::Valkey8,
            ..redis
        };
        assert!(valkey.embeds(31) && !valkey.embeds(32));
        let expiring = Layout {
            expires: true,
            ..valkey
        };
        assert!(expiring.embeds(31) && !expiring.embeds(32));
        let long = Layout {
            key_len: 34,
            ..valkey
        };
        assert!(long.embeds(7) && !long.embeds(8));
        let long_expiring = Layout {
            expires: true,
            ..long
        };
        assert!(long_expiring.embeds(5) && !long_expiring.embeds(6));
        // Sizes as MEMORY USAGE gives them (key included): 40, 56, 72 bytes.
        let whole = |l: &Layout, len| l.string(len, StringEncoding::Embstr) + l.key();
        assert_eq!(
            whole(
                &Layout {
                    key_len: 4,
                    ..valkey
                },
                13
            ),
            40
        );
        assert_eq!(
            whole(
                &Layout {
                    key_len: 4,
                    ..valkey
                },
                14
            ),
            56
        );
        assert_eq!(
            whole(
                &Layout {
                    key_len: 4,
                    ..expiring
                },
                21
            ),
            56
        );
        assert_eq!(
            whole(
                &Layout {
                    key_len: 4,
                    ..expiring
                },
                22
            ),
            72
        );
    }
}
