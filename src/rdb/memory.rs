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
            let spacing = (1u64 << (lg - 3)).max(16);
            n.div_ceil(spacing) * spacing
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
const QUICKLIST_NODE: u64 = 32;
const SKIPLIST_HEAD: u64 = 640;
const SKIPLIST_NODE: u64 = 54;
const ZSET_STRUCTS: u64 = 16 + 32;
/// The longest string kept in one allocation with its object header.
pub const EMBSTR_MAX: u64 = 44;

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

    /// Whether a string value of `len` bytes shares its object's allocation (`embstr`).
    pub fn embeds(&self, len: u64) -> bool {
        if self.embedded_keys {
            OBJECT + self.embedded_key_bytes() + len + 4 <= CACHE_LINE
        } else {
            len <= EMBSTR_MAX
        }
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
    pub fn string(&self, len: u64, encoding: &str) -> u64 {
        match encoding {
            "int" => OBJECT,
            "embstr" if self.embedded_keys => {
                let whole = alloc(OBJECT + self.embedded_key_bytes() + len + 4);
                whole - self.embedded_key_bytes()
            }
            "embstr" => alloc(OBJECT + 3 + len + 1),
            _ => OBJECT + sds(len),
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

/// A quicklist of nodes whose blobs cost `blobs` (already rounded to size classes).
pub fn quicklist(nodes: u64, blobs: u64) -> u64 {
    OBJECT + QUICKLIST + nodes * QUICKLIST_NODE + blobs
}

/// A linked list (Redis < 3.2) of `n` elements whose strings cost `strings`.
pub fn linked_list(n: u64, strings: u64) -> u64 {
    OBJECT + 48 + n * (24 + OBJECT) + strings
}

/// The fixed part of a stream (object, stream struct, radix tree head).
pub const STREAM: u64 = OBJECT + 120;
/// A stream's radix tree node per listpack.
pub const STREAM_NODE: u64 = 48;
/// A consumer group.
pub const STREAM_GROUP: u64 = 80;
/// One pending entry (radix tree leaf and the delivery record).
pub const STREAM_PENDING: u64 = 56;
/// What a running server allocates for a stream node at least (it preallocates 4 KiB).
pub const STREAM_NODE_PREALLOC: u64 = 4096;
/// A consumer (without its name).
pub const STREAM_CONSUMER: u64 = 64;

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(redis.string(5, "int"), 16);
        assert_eq!(redis.string(10, "embstr"), 32); // 16 + 3 + 10 + 1 = 30 → 32
        assert_eq!(redis.string(100, "raw"), 16 + 112); // 3 + 100 + 1 = 104 → 112
        assert!(redis.embeds(44) && !redis.embeds(45));
        // Valkey 8.1 (measured): a 10-byte key embeds values up to 31 bytes, 23 with an expiry.
        let valkey = Layout {
            embedded_keys: true,
            ..redis
        };
        assert!(valkey.embeds(31) && !valkey.embeds(32));
        let expiring = Layout {
            expires: true,
            ..valkey
        };
        assert!(expiring.embeds(23) && !expiring.embeds(24));
    }
}
