//! keyplan's own topology YAML, and libketama server files.
//!
//! ```yaml
//! # A Redis Cluster slot map
//! nodes:
//!   - { name: a, address: 10.0.0.1:6379, slots: "0-5460" }
//!   - { name: b, address: 10.0.0.2:6379, slots: "5461-10922" }
//!   - { name: c, address: 10.0.0.3:6379, slots: "10923-16383" }
//! ```
//! ```yaml
//! # A Redis Enterprise / Redis Cloud database, reached through its proxy endpoint
//! enterprise:
//!   shards: 4              # slots laid out as `redis-cli --cluster create` lays them out,
//!                          # or `nodes:` as above for the database's real slot ranges
//!   hashing: custom        # redis | standard | custom
//!   rules:                 # custom: PCRE rules with a `tag` group, first match wins
//!     - 'order:(?<tag>\d+):.*'
//!     - '(?<tag>.*)'
//!   active_active: false   # an Active-Active database splits only MGET, EXISTS and TOUCH
//! ```
//! ```yaml
//! # A client-side ring
//! ring:
//!   kind: jedis            # ketama | modula | random (twemproxy), libketama, jedis, jump, modulo
//!   version: 3             # jedis: 1, 2, 3 or 4 (4 = 4.x–6.x JedisSharding)
//!   key_tag: false         # jedis: hash only the first {…} (the ShardedJedis tag pattern)
//!   servers:
//!     - { name: host1:6379, weight: 1 }
//! ```

use super::hashes::TwemHash;
use super::ring::{KeyHash64, Ring, RingKind, RingServer};
use super::{NO_OWNER, Node, SlotMap, TopologyError};
use crate::slot::SLOT_COUNT;
use serde::Deserialize;
use serde_saphyr::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologyConfig {
    nodes: Option<Spanned<Vec<Spanned<NodeConfig>>>>,
    ring: Option<Spanned<RingConfig>>,
    enterprise: Option<Spanned<EnterpriseConfig>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnterpriseConfig {
    shards: Option<Spanned<usize>>,
    nodes: Option<Spanned<Vec<Spanned<NodeConfig>>>>,
    hashing: Option<Spanned<String>>,
    rules: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    active_active: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeConfig {
    name: Spanned<String>,
    address: Option<String>,
    id: Option<Spanned<String>>,
    slots: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RingConfig {
    kind: Spanned<String>,
    hash: Option<Spanned<String>>,
    hash_tag: Option<Spanned<String>>,
    version: Option<Spanned<u8>>,
    #[serde(default)]
    key_tag: bool,
    #[serde(alias = "shards")]
    servers: Spanned<Vec<Spanned<ServerConfig>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerConfig {
    name: String,
    address: Option<String>,
    #[serde(default = "one")]
    weight: u32,
    /// The string the ring hashes for this server, when it is not `name`.
    ring_name: Option<String>,
    /// Jedis: whether the shard has a name (`JedisShardInfo(host, port, name)`).
    #[serde(default)]
    named: bool,
}

fn one() -> u32 {
    1
}

fn err(m: impl Into<String>) -> TopologyError {
    TopologyError::Config(m.into())
}

/// An error about the value `at`, placed on its line.
fn err_at<T>(at: &Spanned<T>, m: impl Into<String>) -> TopologyError {
    TopologyError::Parse {
        line: at.referenced.line().max(1) as usize,
        message: m.into(),
    }
}

/// Whether `text` looks like keyplan topology YAML (a top-level `nodes:` or `ring:` key).
pub fn looks_like(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("nodes:") || l.starts_with("ring:") || l.starts_with("enterprise:"))
}

/// Parses `0-5460 7000 7002-7010` into ranges.
pub fn parse_slots(s: &str) -> Result<Vec<(u16, u16)>, String> {
    let mut out = Vec::new();
    for tok in s
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
    {
        let parse = |x: &str| -> Result<u16, String> {
            x.parse::<u32>()
                .ok()
                .filter(|v| (*v as usize) < SLOT_COUNT)
                .map(|v| v as u16)
                .ok_or_else(|| format!("'{x}' is not a slot number (0-16383)"))
        };
        let (a, b) = match tok.split_once('-') {
            Some((a, b)) => (parse(a)?, parse(b)?),
            None => {
                let v = parse(tok)?;
                (v, v)
            }
        };
        if a > b {
            return Err(format!("slot range '{tok}' runs backwards"));
        }
        out.push((a, b));
    }
    Ok(out)
}

/// Parses keyplan topology YAML.
pub fn parse(text: &str, allow_partial: bool) -> Result<super::Topology, TopologyError> {
    let cfg: TopologyConfig = serde_saphyr::from_str(text)
        .map_err(|e| err(crate::error::yaml_message(&e.to_string())))?;
    match (cfg.nodes, cfg.ring, cfg.enterprise) {
        (Some(nodes), None, None) => cluster(&nodes, allow_partial).map(super::Topology::Cluster),
        (None, Some(ring), None) => build_ring(ring).map(super::Topology::Ring),
        (None, None, Some(e)) => enterprise(e, allow_partial).map(super::Topology::Cluster),
        (None, None, None) => Err(err(
            "expected `nodes:` (a slot map), `ring:` (a client-side ring) or `enterprise:` (a Redis Enterprise / Cloud database)",
        )),
        (_, Some(ring), _) => Err(err_at(
            &ring,
            "give one of `nodes:` (a slot map), `ring:` or `enterprise:`, not several",
        )),
        (_, _, Some(e)) => Err(err_at(
            &e,
            "give one of `nodes:` (a slot map), `ring:` or `enterprise:`, not several (a database's slot ranges go under `enterprise.nodes:`)",
        )),
    }
}

fn enterprise(e: Spanned<EnterpriseConfig>, allow_partial: bool) -> Result<SlotMap, TopologyError> {
    use super::enterprise::{Enterprise, HashingPolicy, PolicyError};
    let at = e;
    let e = &at.value;
    let map = match (&e.shards, &e.nodes) {
        (Some(n), None) => {
            let mut map = SlotMap::from_masters(n.value).map_err(|_| {
                err_at(
                    n,
                    format!(
                        "enterprise.shards {}: a database has between 1 and 16384 shards",
                        n.value
                    ),
                )
            })?;
            // Shards, as the topology names them.
            for (i, node) in map.nodes.iter_mut().enumerate() {
                node.name = format!("shard-{i}");
            }
            map
        }
        (None, Some(nodes)) => cluster(nodes, allow_partial)?,
        (Some(n), Some(_)) => {
            return Err(err_at(
                n,
                "give either `enterprise.shards:` or `enterprise.nodes:` (the shards' slot ranges), not both",
            ));
        }
        (None, None) => {
            return Err(err_at(
                &at,
                "`enterprise:` needs `shards: N` or `nodes:` (the shards' slot ranges)",
            ));
        }
    };
    let Some(hashing) = &e.hashing else {
        return Err(err_at(
            &at,
            "`enterprise:` needs `hashing: redis`, `standard` or `custom` (the database's hashing policy: Redis Cloud creates databases with `redis`, Redis Software with `standard`)",
        ));
    };
    let rules_at = |m: String, index: usize| match &e.rules {
        Some(r) => match r.value.get(index.wrapping_sub(1)) {
            Some(rule) => err_at(rule, m),
            None => err_at(r, m),
        },
        None => err_at(hashing, m),
    };
    let policy = match (hashing.value.as_str(), &e.rules) {
        ("redis", None) => HashingPolicy::Redis,
        ("standard", None) => HashingPolicy::standard(),
        ("redis" | "standard", Some(r)) => {
            return Err(err_at(
                r,
                format!(
                    "`rules:` belong to `hashing: custom` (the {} policy has fixed rules)",
                    hashing.value
                ),
            ));
        }
        ("custom", None) => {
            return Err(err_at(
                hashing,
                "`hashing: custom` needs `rules:`, e.g. ['.*{(?<tag>.*)}.*', '(?<tag>.*)']",
            ));
        }
        ("custom", Some(r)) => {
            let rules: Vec<&str> = r.value.iter().map(|x| x.value.as_str()).collect();
            HashingPolicy::custom(&rules).map_err(|pe| {
                let index = match &pe {
                    PolicyError::TooLong { index, .. }
                    | PolicyError::Invalid { index, .. }
                    | PolicyError::NoTag { index, .. } => *index,
                    PolicyError::NoRules | PolicyError::TooMany(_) => 0,
                };
                rules_at(format!("enterprise.rules: {pe}"), index)
            })?
        }
        (other, _) => {
            return Err(err_at(
                hashing,
                format!("enterprise.hashing '{other}': use redis, standard or custom"),
            ));
        }
    };
    Ok(map.with_enterprise(Enterprise {
        hashing: policy,
        active_active: e.active_active,
    }))
}

fn cluster(
    nodes: &Spanned<Vec<Spanned<NodeConfig>>>,
    allow_partial: bool,
) -> Result<SlotMap, TopologyError> {
    if nodes.value.is_empty() {
        return Err(err_at(nodes, "`nodes:` is empty"));
    }
    let nodes = &nodes.value;
    let mut owner = vec![NO_OWNER; SLOT_COUNT].into_boxed_slice();
    let mut out = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = &n.value.name;
        if let Some(first) = nodes[..i].iter().find(|o| o.value.name.value == name.value) {
            return Err(err_at(
                name,
                format!(
                    "node name '{}' is used twice (first on line {})",
                    name.value,
                    first.value.name.referenced.line()
                ),
            ));
        }
        if let Some(id) = &n.value.id
            && !super::is_node_id(&id.value)
        {
            return Err(err_at(
                id,
                format!(
                    "node '{}': id {:?} is not a cluster node id (40 hexadecimal digits, as CLUSTER MYID prints)",
                    name.value, id.value
                ),
            ));
        }
        let ranges = match &n.value.slots {
            Some(slots) => parse_slots(&slots.value)
                .map_err(|m| err_at(slots, format!("node '{}': {m}", name.value)))?,
            None => Vec::new(),
        };
        for (a, b) in ranges {
            for s in a..=b {
                let o = &mut owner[s as usize];
                if *o != NO_OWNER && *o as usize != i {
                    let other = &nodes[*o as usize].value.name;
                    return Err(err_at(
                        n.value.slots.as_ref().unwrap_or(name),
                        format!(
                            "slot {s} is owned twice: by node '{}' (line {}) and by node '{}'",
                            other.value,
                            other.referenced.line(),
                            name.value
                        ),
                    ));
                }
                *o = i as u16;
            }
        }
        let n = &n.value;
        out.push(Node {
            name: n.name.value.clone(),
            id: n.id.as_ref().map(|i| i.value.clone()),
            address: n.address.clone(),
            flags: Vec::new(),
            replicas: 0,
        });
    }
    let map = SlotMap {
        nodes: out,
        owner,
        migrations: Vec::new(),
        enterprise: None,
    };
    map.validated(allow_partial)
}

fn build_ring(ring: Spanned<RingConfig>) -> Result<Ring, TopologyError> {
    let r = ring.value;
    if r.servers.value.is_empty() {
        return Err(err_at(&r.servers, "`ring.servers` is empty"));
    }
    // Errors about the hash are placed on `hash:`, or on `kind:` when the default is used.
    let hash_at = |m: String| match &r.hash {
        Some(h) => err_at(h, m),
        None => err_at(&r.kind, m),
    };
    let twem_hash = |default: &str| -> Result<TwemHash, TopologyError> {
        let h = r.hash.as_ref().map_or(default, |h| h.value.as_str());
        TwemHash::from_name(h).ok_or_else(|| {
            hash_at(format!(
                "ring.hash '{h}' is not a twemproxy hash ({})",
                TwemHash::ALL.map(|(n, _)| n).join(", ")
            ))
        })
    };
    let key_hash = || -> Result<KeyHash64, TopologyError> {
        match r.hash.as_ref().map_or("fnv1a_64", |h| h.value.as_str()) {
            "fnv1a_64" => Ok(KeyHash64::Fnv1a64),
            "md5" => Ok(KeyHash64::Md5),
            "crc32" => Ok(KeyHash64::Crc32),
            "murmur64a" => Ok(KeyHash64::Murmur64a),
            h => Err(hash_at(format!(
                "ring.hash '{h}': use fnv1a_64, md5, crc32 or murmur64a"
            ))),
        }
    };
    let kind = match r.kind.value.as_str() {
        "ketama" => RingKind::Ketama {
            hash: twem_hash("fnv1a_64")?,
        },
        "modula" => RingKind::Modula {
            hash: twem_hash("fnv1a_64")?,
        },
        "random" => RingKind::Random,
        "libketama" => RingKind::Libketama,
        "jedis" => {
            let version = r.version.as_ref().map_or(3, |v| v.value);
            if !(1..=4).contains(&version) {
                let m = format!(
                    "ring.version {version}: Jedis versions are 1 (≤1.5), 2 (2.x), 3 (3.x) or 4 (4.x–6.x)"
                );
                return Err(match &r.version {
                    Some(v) => err_at(v, m),
                    None => err_at(&r.kind, m),
                });
            }
            RingKind::Jedis {
                version,
                key_tag: r.key_tag,
            }
        }
        "jump" => RingKind::Jump {
            key_hash: key_hash()?,
        },
        "modulo" => RingKind::Modulo {
            key_hash: key_hash()?,
        },
        other => {
            return Err(err_at(
                &r.kind,
                format!(
                    "ring.kind '{other}': use ketama, modula, random, libketama, jedis, jump or modulo"
                ),
            ));
        }
    };
    let hash_tag = match &r.hash_tag {
        None => None,
        Some(t) if t.value.is_empty() => None,
        Some(t) if t.value.len() == 2 => Some([t.value.as_bytes()[0], t.value.as_bytes()[1]]),
        Some(t) => {
            return Err(err_at(
                t,
                format!("ring.hash_tag '{}' must be two characters", t.value),
            ));
        }
    };
    let jedis = matches!(kind, RingKind::Jedis { .. });
    let listed = &r.servers.value;
    // A ring too big to build is refused before any server is looked at.
    if let Some(message) = super::ring::too_many_servers(listed.len()) {
        return Err(TopologyError::Parse {
            line: r.servers.referenced.line().max(1) as usize,
            message,
        });
    }
    // Each name's first server, by name (a walk of the servers before each one made a pool of
    // N servers cost N² comparisons).
    let mut first_of: std::collections::HashMap<&str, &Spanned<ServerConfig>> =
        std::collections::HashMap::with_capacity(listed.len());
    for s in listed {
        if let Some(first) = first_of.get(s.value.name.as_str()) {
            return Err(err_at(
                s,
                format!(
                    "server name '{}' is used twice (first on line {})",
                    s.value.name,
                    first.referenced.line()
                ),
            ));
        }
        first_of.insert(&s.value.name, s);
        if s.value.weight == 0 {
            return Err(err_at(
                s,
                format!(
                    "server '{}': weight 0; weights are positive whole numbers (only their ratios matter)",
                    s.value.name
                ),
            ));
        }
    }
    let servers_at = r.servers.referenced.line().max(1) as usize;
    let servers = r
        .servers
        .value
        .into_iter()
        .map(|s| s.value)
        .map(|s| {
            let ring_name = if jedis {
                s.named
                    .then(|| s.ring_name.clone().unwrap_or_else(|| s.name.clone()))
            } else {
                Some(
                    s.ring_name
                        .clone()
                        .or_else(|| {
                            s.address
                                .clone()
                                .filter(|_| matches!(kind, RingKind::Libketama))
                        })
                        .unwrap_or_else(|| s.name.clone()),
                )
            };
            RingServer {
                node: Node {
                    name: s.name,
                    id: None,
                    address: s.address,
                    flags: Vec::new(),
                    replicas: 0,
                },
                ring_name,
                weight: s.weight,
            }
        })
        .collect();
    Ring::try_new(
        kind.clone(),
        servers,
        hash_tag,
        format!("keyplan ring ({})", r.kind.value),
    )
    .map_err(|e| match e {
        // A ring-wide problem (a duplicate server, weights) belongs to `servers:`.
        TopologyError::Config(message) => TopologyError::Parse {
            line: servers_at,
            message,
        },
        e => e,
    })
}

/// Whether `text` looks like a libketama server file: `host:port<space>memory` lines.
pub fn libketama_looks_like(text: &str) -> bool {
    let mut any = false;
    for l in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut f = l.split_whitespace();
        let (Some(addr), Some(mem), None) = (f.next(), f.next(), f.next()) else {
            return false;
        };
        if !addr.contains(':') || mem.parse::<u32>().is_err() {
            return false;
        }
        any = true;
    }
    any
}

/// Parses a libketama server file (`ip:port<TAB or space>memory`; `#` comments).
pub fn parse_libketama(text: &str) -> Result<Ring, TopologyError> {
    let mut servers = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut f = l.split_whitespace();
        let (Some(addr), Some(mem)) = (f.next(), f.next()) else {
            return Err(TopologyError::Parse {
                line: i + 1,
                message: "expected `ip:port memory`".into(),
            });
        };
        let memory: u32 = mem.parse().map_err(|_| TopologyError::Parse {
            line: i + 1,
            message: format!("memory '{mem}' is not a whole number"),
        })?;
        servers.push(RingServer {
            node: Node {
                name: addr.to_string(),
                id: None,
                address: Some(addr.to_string()),
                flags: Vec::new(),
                replicas: 0,
            },
            ring_name: Some(addr.to_string()),
            weight: memory,
        });
    }
    if servers.is_empty() {
        return Err(TopologyError::Parse {
            line: 1,
            message: "no servers".into(),
        });
    }
    let n = servers.len();
    Ring::try_new(
        RingKind::Libketama,
        servers,
        None,
        format!("libketama server file ({n} servers)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_yaml() {
        let t = parse(
            "nodes:\n  - { name: a, address: 10.0.0.1:6379, slots: \"0-5460\" }\n  - { name: b, slots: \"5461-16383\" }\n",
            false,
        )
        .unwrap();
        let m = t.slot_map().unwrap();
        assert_eq!(m.owner_of_slot(5461), Some(1));
        let e = parse("nodes:\n  - { name: a, slots: \"0-100\" }\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("101-16383"), "{e}");
        let e = parse("nodes:\n  - { name: a, slot: \"0-100\" }\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("slot"), "{e}");
    }

    #[test]
    fn ring_yaml() {
        let t = parse(
            "ring:\n  kind: jedis\n  servers:\n    - { name: a }\n    - { name: b }\n    - { name: c }\n",
            false,
        )
        .unwrap();
        assert_eq!(t.node_of(b"foo"), Some(0));
        assert_eq!(t.node_of(b"bar"), Some(2));
        let t = parse(
            "ring:\n  kind: jump\n  servers:\n    - { name: a }\n    - { name: b }\n",
            false,
        )
        .unwrap();
        assert!(t.node_of(b"x").is_some());
    }

    #[test]
    fn errors_name_the_line_to_fix() {
        let cases = [
            (
                "nodes:\n  - { name: a, slots: \"0-8000\" }\n  - { name: b, slots: \"8000-16383\" }\n",
                "line 3: slot 8000 is owned twice: by node 'a' (line 2) and by node 'b'",
            ),
            (
                "nodes:\n  - { name: a, slots: \"0-8000\" }\n  - { name: a, slots: \"8001-16383\" }\n",
                "line 3: node name 'a' is used twice (first on line 2)",
            ),
            (
                "nodes:\n  - name: a\n    slots: \"0-8000x\"\n",
                "line 3: node 'a': '8000x' is not a slot number",
            ),
            (
                "ring:\n  kind: jedis\n  version: 9\n  servers:\n    - { name: a }\n",
                "line 3: ring.version 9",
            ),
            (
                "ring:\n  kind: ketama\n  hash: nope\n  servers:\n    - { name: a }\n",
                "line 3: ring.hash 'nope'",
            ),
            (
                "ring:\n  kind: jump\n  servers:\n    - { name: a }\n  hash: nope\n",
                "line 5: ring.hash 'nope'",
            ),
            (
                "ring:\n  kind: ketama\n  servers:\n    - { name: a }\n    - { name: a }\n",
                "line 5: server name 'a' is used twice (first on line 4)",
            ),
            (
                "ring:\n  kind: ketama\n  servers:\n    - { name: a, weight: 0 }\n",
                "line 4: server 'a': weight 0",
            ),
            (
                "ring:\n  kind: ketama\n  servers: []\n",
                "line 3: `ring.servers` is empty",
            ),
            (
                "ring:\n  kind: ring\n  servers: [{ name: a }]\n",
                "line 2: ring.kind 'ring'",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text, false).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn libketama_file() {
        let text = "# servers\n10.0.1.1:11211\t600\n10.0.1.2:11211\t300\n";
        assert!(libketama_looks_like(text));
        let r = parse_libketama(text).unwrap();
        // floorf(pct * 40 * n): 600/900*80 = 53, 300/900*80 = 26 digests, 4 points each.
        assert_eq!(r.points_per_server(), vec![53 * 4, 26 * 4]);
    }
}
