//! What a key costs in a server's memory, estimated from what its snapshot says.
//!
//! The model follows how Redis 7 on 64-bit Linux lays values out and what `MEMORY USAGE`
//! counts: every allocation rounded up to its jemalloc size class; a 16-byte object header per
//! value; packed encodings (listpack, ziplist, intset) are one allocation of the bytes the
//! snapshot holds; strings are `int` (16 bytes), `embstr` (header and bytes in one
//! allocation, up to 44 bytes) or `raw`; hash tables cost a 56-byte dict, 8 bytes a bucket
//! (a power of two at least the size) and a 24-byte entry per element plus the element's
//! sds strings; sorted sets add a skiplist (a 640-byte head and ~54 bytes a node). The key
//! itself adds its sds string and its 24-byte entry in the keyspace. Tests compare the sums
//! with `MEMORY USAGE … SAMPLES 0` of real servers.

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
    /// Valkey ≥ 8.1: the key (and its expiry, and a string value of up to one cache line)
    /// live inside the value's object, which the keyspace's table points to directly.
    pub embedded_keys: bool,
}

/// A cache line: Valkey ≥ 8.1 embeds a string value when the object fits in one.
const CACHE_LINE: u64 = 64;

impl Layout {
    fn embedded_key_bytes(&self) -> u64 {
        self.key_len + 3 + if self.expires { 8 } else { 0 }
    }

    /// Whether a string value of `len` bytes shares its object's allocation (`embstr`). Valkey
    /// ≥ 8.1 (measured on 8.1): when key and value together are at most 41 bytes, or with an
    /// expiry when object, key, expiry and value fit one cache line.
    pub fn embeds(&self, len: u64) -> bool {
        if self.embedded_keys {
            if self.expires {
                self.valkey_embstr(len) <= CACHE_LINE
            } else {
                self.key_len + len <= 41
            }
        } else {
            len <= EMBSTR_MAX
        }
    }

    /// The bytes of a Valkey ≥ 8.1 object holding key (expiry) and a value of `len` bytes.
    fn valkey_embstr(&self, len: u64) -> u64 {
        let key_header = if self.key_len < 32 { 1 } else { 3 };
        15 + (key_header - 1) + self.key_len + len + if self.expires { 8 } else { 0 }
    }

    /// The key's own cost: its sds string and its entry in the keyspace (Redis), or its
    /// bytes inside the object and the table's pointer (Valkey ≥ 8.1).
    pub fn key(&self) -> u64 {
        if self.embedded_keys {
            self.embedded_key_bytes() + 8
        } else {
            sds(self.key_len) + DICT_ENTRY
        }
    }

    /// A string value of `len` bytes in the given encoding (without [`Layout::key`]).
    pub fn string(&self, len: u64, encoding: StringEncoding) -> u64 {
        match encoding {
            StringEncoding::Int => OBJECT,
            StringEncoding::Embstr if self.embedded_keys => {
                alloc(self.valkey_embstr(len)).saturating_sub(self.embedded_key_bytes())
            }
            StringEncoding::Embstr => alloc(OBJECT + 3 + len + 1),
            StringEncoding::Raw => OBJECT + sds(len),
        }
    }

    /// A hash-table set of `n` members whose strings cost `strings`.
    pub fn set(&self, n: u64, strings: u64) -> u64 {
        if self.embedded_keys {
            // Valkey ≥ 8.1's table holds the member strings themselves (measured ~25 bytes of
            // table per member beside its string).
            OBJECT + DICT + n * VALKEY_SET_ENTRY + strings
        } else {
            table(n, strings)
        }
    }

    /// A hash-table hash of `n` fields whose field and value strings cost `strings`.
    pub fn hash(&self, n: u64, strings: u64) -> u64 {
        if self.embedded_keys {
            // Valkey ≥ 8.1 keeps field and value in one entry (measured ~10 bytes of table a
            // field beside its strings).
            OBJECT + DICT + n * VALKEY_HASH_ENTRY + strings
        } else {
            table(n, strings)
        }
    }

    /// A skiplist sorted set of `n` members whose strings cost `strings`.
    pub fn skiplist(&self, n: u64, strings: u64) -> u64 {
        let redis = skiplist(n, strings);
        if self.embedded_keys {
            redis.saturating_sub(n * VALKEY_ZSET_SAVING)
        } else {
            redis
        }
    }
}

const VALKEY_SET_ENTRY: u64 = 25;
const VALKEY_HASH_ENTRY: u64 = 10;
const VALKEY_ZSET_SAVING: u64 = 15;

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
pub fn list_node_blob(len: u64, compressed: Option<u64>) -> u64 {
    match compressed {
        Some(c) if len >= MIN_COMPRESS_BYTES && c + MIN_COMPRESS_IMPROVE < len => alloc(8 + c),
        _ => alloc(len),
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
            embedded_keys: false,
        };
        assert_eq!(redis.string(5, StringEncoding::Int), 16);
        assert_eq!(redis.string(10, StringEncoding::Embstr), 32); // 16 + 3 + 10 + 1 = 30 → 32
        assert_eq!(redis.string(100, StringEncoding::Raw), 16 + 112); // 3 + 100 + 1 = 104 → 112
        assert!(redis.embeds(44) && !redis.embeds(45));
        // Valkey 8.1 (measured): a 10-byte key embeds values up to 31 bytes, with an expiry too;
        // a 34-byte key up to 7, 5 with an expiry.
        let valkey = Layout {
            embedded_keys: true,
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
