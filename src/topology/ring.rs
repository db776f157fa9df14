//! Client-side sharding rings: twemproxy's ketama, modula
//! and random distributions, libketama, Jedis' sharded ring, jump consistent hash and plain
//! modulo. Each maps a key to a server exactly as the original code does.

use super::Node;
use super::hashes::{TwemHash, crc32, md5, md5_u32, murmur64a_jedis};
use serde::Serialize;

/// How a ring places keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RingKind {
    /// twemproxy `distribution: ketama`.
    Ketama {
        /// Key hash.
        hash: TwemHash,
    },
    /// twemproxy `distribution: modula`.
    Modula {
        /// Key hash.
        hash: TwemHash,
    },
    /// twemproxy `distribution: random`: no key mapping.
    Random,
    /// libketama (RJ/ketama) server file.
    Libketama,
    /// Jedis ShardedJedis / JedisSharding.
    Jedis {
        /// Jedis major version line: 1 (≤1.5), 2 (2.0–2.10), 3 (3.x), 4 (4.x–6.x). Version 1
        /// hashes `host:port*weight` + n (the shard's `toString()`), from the server address.
        version: u8,
        /// Whether keys go through the `{…}` key-tag pattern.
        key_tag: bool,
    },
    /// Jump consistent hash over a 64-bit key hash.
    Jump {
        /// Key hash to 64 bits.
        key_hash: KeyHash64,
    },
    /// `hash(key) % servers`.
    Modulo {
        /// Key hash.
        key_hash: KeyHash64,
    },
}

/// 64-bit key hashes for jump and modulo rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyHash64 {
    /// Real 64-bit FNV-1a.
    Fnv1a64,
    /// The first 8 MD5 bytes, little-endian.
    Md5,
    /// CRC-32 (IEEE).
    Crc32,
    /// Jedis' MurmurHash64A (seed 0x1234ABCD), as unsigned.
    Murmur64a,
}

impl KeyHash64 {
    /// Hashes a key to 64 bits.
    pub fn hash(self, key: &[u8]) -> u64 {
        match self {
            KeyHash64::Fnv1a64 => {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for &b in key {
                    h ^= b as u64;
                    h = h.wrapping_mul(0x0000_0100_0000_01b3);
                }
                h
            }
            KeyHash64::Md5 => {
                let d = md5(key);
                u64::from_le_bytes(d[..8].try_into().expect("invariant: 8 bytes"))
            }
            KeyHash64::Crc32 => crc32(key) as u64,
            KeyHash64::Murmur64a => murmur64a_jedis(key) as u64,
        }
    }
}

/// A server of a ring, as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct RingServer {
    /// The node keyplan reports.
    pub node: Node,
    /// The string the ring hashes for this server (twemproxy name, libketama address, Jedis
    /// shard name).
    pub ring_name: Option<String>,
    /// Weight (twemproxy weight, libketama memory, Jedis weight).
    pub weight: u32,
}

/// A client-side ring.
#[derive(Debug, Clone)]
pub struct Ring {
    kind: RingKind,
    servers: Vec<RingServer>,
    nodes: Vec<Node>,
    /// twemproxy `hash_tag` (two bytes).
    hash_tag: Option<[u8; 2]>,
    /// Sorted `(point, server)` for ketama rings.
    points: Vec<(u32, u16)>,
    /// Sorted `(signed hash, server)` for Jedis rings (later duplicates win, as in a TreeMap).
    jedis: Vec<(i64, u16)>,
    /// Server per modula slot.
    modula: Vec<u16>,
    /// Where the configuration came from, in words.
    pub source: String,
}

/// twemproxy's points per server (`ketama_update`), in its single-precision arithmetic.
pub fn twemproxy_points(weight: u32, total_weight: u32, servers: usize) -> u32 {
    let pct: f32 = weight as f32 / total_weight as f32;
    let mut t: f32 = ((pct * 160.0f32) / 4.0f32) * servers as f32;
    t = (t as f64 + 0.000_000_000_1) as f32;
    (t.floor() * 4.0f32) as u32
}

/// libketama's digests per server: `floorf(pct * 40.0 * n)` with the product in double.
pub fn libketama_digests(memory: u32, total: u32, servers: usize) -> u32 {
    let pct: f32 = memory as f32 / total as f32;
    let ks = (pct as f64 * 40.0 * (servers as f32) as f64) as f32;
    ks.floor() as u32
}

fn push_md5_points(points: &mut Vec<(u32, u16)>, s: &str, idx: u16) {
    let d = md5(s.as_bytes());
    for x in 0..4 {
        let p = u32::from_le_bytes([d[4 * x], d[4 * x + 1], d[4 * x + 2], d[4 * x + 3]]);
        points.push((p, idx));
    }
}

/// Jedis' key tag: the first `{` followed, with no line terminator in between, by at least one
/// character and a `}` (the regex `\{(.+?)\}`).
fn jedis_tag(key: &[u8]) -> &[u8] {
    let is_terminator = |k: &[u8], j: usize| {
        matches!(k[j], b'\n' | b'\r')
            || k[j..].starts_with("\u{85}".as_bytes())
            || k[j..].starts_with("\u{2028}".as_bytes())
            || k[j..].starts_with("\u{2029}".as_bytes())
    };
    for i in (0..key.len()).filter(|&i| key[i] == b'{') {
        let mut j = i + 1;
        while j < key.len() {
            if is_terminator(key, j) {
                break;
            }
            if key[j] == b'}' && j >= i + 2 {
                return &key[i + 1..j];
            }
            j += 1;
        }
    }
    key
}

/// Ring entries (points, slots of a modula table) keyplan builds at the most: a ring past it
/// is a typo (a weight of 4294967295) rather than a real pool.
pub const MAX_RING_ENTRIES: u64 = 10_000_000;

/// Servers a ring may have (server indexes are 16-bit).
pub const MAX_RING_SERVERS: usize = 65_535;

/// Why a ring of `servers` servers cannot be built, if it cannot: what a reader checks first,
/// before it looks at each server (a pool of 70,000 servers was compared name by name, for 48
/// s, before it was refused).
pub fn too_many_servers(servers: usize) -> Option<String> {
    (servers > MAX_RING_SERVERS)
        .then(|| format!("{servers} servers: a ring has at most {MAX_RING_SERVERS}"))
}

impl Ring {
    /// [`Ring::new`], after checking that the ring can be built: at most
    /// [`MAX_RING_SERVERS`] servers, weights whose sum fits the 32 bits twemproxy and
    /// libketama add them in, and at most [`MAX_RING_ENTRIES`] entries.
    pub fn try_new(
        kind: RingKind,
        servers: Vec<RingServer>,
        hash_tag: Option<[u8; 2]>,
        source: String,
    ) -> Result<Ring, super::TopologyError> {
        let bad = |m: String| Err(super::TopologyError::Config(m));
        if let Some(m) = too_many_servers(servers.len()) {
            return bad(m);
        }
        let total: u64 = servers.iter().map(|s| u64::from(s.weight)).sum();
        let entries: u64 = match &kind {
            RingKind::Ketama { .. } | RingKind::Libketama => {
                if total > u64::from(u32::MAX) {
                    return bad(format!(
                        "the weights sum to {total}, past the 4294967295 the ring adds them in: lower them (only their ratios matter)"
                    ));
                }
                160 * servers.len() as u64
            }
            RingKind::Modula { .. } => total,
            RingKind::Jedis { version, .. } if *version < 4 => 160 * total,
            RingKind::Jedis { .. } => 160 * servers.len() as u64,
            _ => servers.len() as u64,
        };
        if entries > MAX_RING_ENTRIES {
            return bad(format!(
                "these weights make a ring of {entries} entries (at most {MAX_RING_ENTRIES}): lower them (only their ratios matter)"
            ));
        }
        Ok(Ring::new(kind, servers, hash_tag, source))
    }

    /// Builds a ring from its servers, in configuration order.
    pub fn new(
        kind: RingKind,
        servers: Vec<RingServer>,
        hash_tag: Option<[u8; 2]>,
        source: String,
    ) -> Ring {
        let nodes = servers.iter().map(|s| s.node.clone()).collect();
        let mut ring = Ring {
            kind: kind.clone(),
            servers,
            nodes,
            hash_tag,
            points: Vec::new(),
            jedis: Vec::new(),
            modula: Vec::new(),
            source,
        };
        let n = ring.servers.len();
        let name = |s: &RingServer| s.ring_name.clone().unwrap_or_else(|| s.node.name.clone());
        match kind {
            RingKind::Ketama { .. } => {
                let total: u32 = ring.servers.iter().map(|s| s.weight).sum();
                for (i, s) in ring.servers.iter().enumerate() {
                    let p = twemproxy_points(s.weight, total.max(1), n);
                    let nm = name(s);
                    for j in 0..p / 4 {
                        push_md5_points(&mut ring.points, &format!("{nm}-{j}"), i as u16);
                    }
                }
                ring.points.sort_by_key(|p| p.0);
            }
            RingKind::Libketama => {
                let total: u32 = ring.servers.iter().map(|s| s.weight).sum();
                for (i, s) in ring.servers.iter().enumerate() {
                    let ks = libketama_digests(s.weight, total.max(1), n);
                    let nm = name(s);
                    for k in 0..ks {
                        push_md5_points(&mut ring.points, &format!("{nm}-{k}"), i as u16);
                    }
                }
                ring.points.sort_by_key(|p| p.0);
            }
            RingKind::Modula { .. } => {
                for (i, s) in ring.servers.iter().enumerate() {
                    for _ in 0..s.weight {
                        ring.modula.push(i as u16);
                    }
                }
            }
            RingKind::Jedis { version, .. } => {
                let mut map = std::collections::BTreeMap::<i64, u16>::new();
                for (i, s) in ring.servers.iter().enumerate() {
                    let weight = if version >= 4 { 1 } else { s.weight.max(1) };
                    for n in 0..160 * weight {
                        let node = match (&s.ring_name, version) {
                            // ≤ 1.5: `shardInfo.toString() + n`, and JedisShardInfo.toString()
                            // is `host:port*weight`.
                            (_, 1) => format!(
                                "{}*{}{n}",
                                s.node.address.as_deref().unwrap_or(&s.node.name),
                                s.weight
                            ),
                            (Some(nm), 2) => format!("{nm}*{}{n}", s.weight),
                            (Some(nm), 3) => format!("{nm}*{n}"),
                            _ => format!("SHARD-{i}-NODE-{n}"),
                        };
                        map.insert(murmur64a_jedis(node.as_bytes()), i as u16);
                    }
                }
                ring.jedis = map.into_iter().collect();
            }
            RingKind::Random | RingKind::Jump { .. } | RingKind::Modulo { .. } => {}
        }
        ring
    }

    /// twemproxy's `hash_tag`: the two bytes around the part of a key that is hashed, when set.
    pub fn hash_tag(&self) -> Option<[u8; 2]> {
        self.hash_tag
    }

    /// The servers.
    pub fn servers(&self) -> &[RingServer] {
        &self.servers
    }

    /// How the ring places keys.
    pub fn kind(&self) -> &RingKind {
        &self.kind
    }

    /// The servers as nodes.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Each server's nominal share of the keys (0..1): its share of the ring's points
    /// (ketama, libketama, Jedis), of the weights (modula, random), or an equal share.
    pub fn nominal_shares(&self) -> Vec<f64> {
        let n = self.servers.len();
        let mut v = vec![0f64; n];
        if !self.points.is_empty() {
            for (_, i) in &self.points {
                v[*i as usize] += 1.0;
            }
        } else if !self.jedis.is_empty() {
            for (_, i) in &self.jedis {
                v[*i as usize] += 1.0;
            }
        } else if matches!(self.kind, RingKind::Modula { .. }) {
            for (i, s) in self.servers.iter().enumerate() {
                v[i] = s.weight as f64;
            }
        } else {
            v.iter_mut().for_each(|x| *x = 1.0);
        }
        let total: f64 = v.iter().sum();
        if total > 0.0 {
            v.iter_mut().for_each(|x| *x /= total);
        }
        v
    }

    /// Points (ketama, libketama) or virtual nodes (Jedis) per server.
    pub fn points_per_server(&self) -> Vec<usize> {
        let mut v = vec![0; self.servers.len()];
        for (_, i) in &self.points {
            v[*i as usize] += 1;
        }
        for (_, i) in &self.jedis {
            v[*i as usize] += 1;
        }
        v
    }

    /// The bytes twemproxy hashes for `key`, after its `hash_tag`.
    fn twem_key<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        if let Some([open, close]) = self.hash_tag
            && let Some(s) = key.iter().position(|&b| b == open)
            && let Some(d) = key[s + 1..].iter().position(|&b| b == close)
            && d > 0
        {
            return &key[s + 1..s + 1 + d];
        }
        key
    }

    /// The bytes of `key` this ring hashes (after twemproxy's `hash_tag` or Jedis' key tag).
    pub fn hashed<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        match &self.kind {
            RingKind::Ketama { .. } | RingKind::Modula { .. } | RingKind::Random => {
                self.twem_key(key)
            }
            RingKind::Jedis { key_tag: true, .. } => jedis_tag(key),
            _ => key,
        }
    }

    /// The server index for `key`, or `None` when placement is random or the ring is empty.
    pub fn node_of(&self, key: &[u8]) -> Option<usize> {
        if self.servers.is_empty() {
            return None;
        }
        match &self.kind {
            RingKind::Ketama { hash } => {
                if self.servers.len() == 1 {
                    return Some(0);
                }
                let k = self.twem_key(key);
                let h = if k.is_empty() { 0 } else { hash.hash(k) };
                lower_bound(&self.points, h)
            }
            RingKind::Modula { hash } => {
                if self.servers.len() == 1 {
                    return Some(0);
                }
                let k = self.twem_key(key);
                let h = if k.is_empty() { 0 } else { hash.hash(k) };
                if self.modula.is_empty() {
                    return None;
                }
                Some(self.modula[(h as usize) % self.modula.len()] as usize)
            }
            RingKind::Random => {
                if self.servers.len() == 1 {
                    Some(0)
                } else {
                    None
                }
            }
            RingKind::Libketama => lower_bound(&self.points, md5_u32(key)),
            RingKind::Jedis { key_tag, .. } => {
                let k = if *key_tag { jedis_tag(key) } else { key };
                let h = murmur64a_jedis(k);
                let i = self.jedis.partition_point(|(p, _)| *p < h);
                let (_, s) = self.jedis.get(i).or(self.jedis.first())?;
                Some(*s as usize)
            }
            RingKind::Jump { key_hash } => {
                Some(super::hashes::jump(key_hash.hash(key), self.servers.len() as u32) as usize)
            }
            RingKind::Modulo { key_hash } => {
                Some((key_hash.hash(key) % self.servers.len() as u64) as usize)
            }
        }
    }
}

impl Ring {
    /// For point-based rings (ketama, libketama): the point a key lands on and its server.
    pub fn point_of(&self, key: &[u8]) -> Option<(u32, usize)> {
        let h = match &self.kind {
            RingKind::Ketama { hash } => {
                let k = self.twem_key(key);
                if k.is_empty() { 0 } else { hash.hash(k) }
            }
            RingKind::Libketama => md5_u32(key),
            _ => return None,
        };
        let i = self.points.partition_point(|(p, _)| *p < h);
        self.points
            .get(i)
            .or(self.points.first())
            .map(|&(p, s)| (p, s as usize))
    }
}

/// The server of the first point >= `h`, wrapping to the first point.
fn lower_bound(points: &[(u32, u16)], h: u32) -> Option<usize> {
    let i = points.partition_point(|(p, _)| *p < h);
    points.get(i).or(points.first()).map(|(_, s)| *s as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, weight: u32) -> RingServer {
        RingServer {
            node: Node {
                name: name.to_string(),
                id: None,
                address: Some(name.to_string()),
                flags: Vec::new(),
                replicas: 0,
            },
            ring_name: Some(name.to_string()),
            weight,
        }
    }

    #[test]
    fn twemproxy_point_counts() {
        assert_eq!(twemproxy_points(1, 3, 3), 160);
        assert_eq!(twemproxy_points(3, 6, 3), 240);
        assert_eq!(twemproxy_points(1, 6, 3), 80);
        assert_eq!(twemproxy_points(1, 25, 25), 156);
        assert_eq!(twemproxy_points(1, 24, 24), 160);
    }

    #[test]
    fn ketama_three_servers() {
        let servers = ["127.0.0.1:6379", "127.0.0.1:6380", "127.0.0.1:6381"]
            .map(|s| server(s, 1))
            .to_vec();
        let r = Ring::new(
            RingKind::Ketama {
                hash: TwemHash::Fnv1a64,
            },
            servers.clone(),
            None,
            String::new(),
        );
        assert_eq!(r.points.len(), 480);
        assert_eq!(
            &r.points[..3],
            &[(20075150, 0), (23409604, 1), (29345296, 1)]
        );
        assert_eq!(r.node_of(b"foo"), Some(2));
        assert_eq!(r.node_of(b"bar"), Some(0));
        for i in 0..10 {
            assert_eq!(r.node_of(format!("key:{i}").as_bytes()), Some(1));
        }
        let r = Ring::new(
            RingKind::Ketama {
                hash: TwemHash::Md5,
            },
            servers,
            None,
            String::new(),
        );
        assert_eq!(r.node_of(b"foo"), Some(0));
        assert_eq!(r.node_of(b"bar"), Some(2));
    }

    #[test]
    fn jedis_tag_follows_the_regex() {
        assert_eq!(jedis_tag(b"{user1}:a"), b"user1");
        assert_eq!(jedis_tag(b"a{}b{c}"), b"}b{c");
        assert_eq!(jedis_tag(b"{}"), b"{}");
        assert_eq!(jedis_tag(b"{a\nb}{c}"), b"c");
    }
}
