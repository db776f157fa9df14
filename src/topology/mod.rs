//! Topologies: which node owns a key.
//!
//! Every command places keys through [`Topology`]: a Redis Cluster [`SlotMap`] (laid out as
//! `redis-cli --cluster create` lays out N masters, or read from `CLUSTER NODES`, `CLUSTER
//! SHARDS`/`SLOTS` replies or keyplan YAML: [`nodes`], [`reply`], [`config`]) or a client-side
//! [`ring::Ring`] (twemproxy, Jedis, libketama: [`twemproxy`], [`hashes`]).

pub mod config;
pub mod enterprise;
pub mod hashes;
pub mod nodes;
pub mod reply;
pub mod ring;
pub mod twemproxy;

/// Whether `s` is a cluster node id: 40 hexadecimal digits. Ids from every topology format
/// are held to it (an emitted script writes them as shell words).
pub fn is_node_id(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

use crate::slot::{SLOT_COUNT, key_slot};
use std::fmt::Write as _;

/// A node that can own keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The name keyplan prints: the address when known, else a generated `master-N`.
    pub name: String,
    /// The 40-character cluster node id, when known.
    pub id: Option<String>,
    /// `host:port`, when known.
    pub address: Option<String>,
    /// Flags worth reporting (`fail`, `fail?`, `handshake`, `noaddr`, `nofailover`).
    pub flags: Vec<String>,
    /// Replicas of this master.
    pub replicas: usize,
}

impl Node {
    /// Whether `s` names this node: its name, its address or its id.
    pub fn is_named(&self, s: &str) -> bool {
        self.name == s || self.address.as_deref() == Some(s) || self.id.as_deref() == Some(s)
    }
}

/// The index of the node `s` names (see [`Node::is_named`]) among `nodes`.
pub fn find_node(nodes: &[Node], s: &str) -> Option<usize> {
    nodes.iter().position(|n| n.is_named(s))
}

/// Which way a slot is moving, as a `CLUSTER NODES` marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationDirection {
    /// `[slot->-id]`: the node is sending the slot to the peer.
    Migrating,
    /// `[slot-<-id]`: the node is receiving the slot from the peer.
    Importing,
}

/// A slot in migration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Migration {
    /// The slot.
    pub slot: u16,
    /// The node whose line carries the marker.
    pub node: String,
    /// The other node.
    pub peer: String,
    /// Which way it moves.
    pub direction: MigrationDirection,
}

/// Why a topology cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TopologyError {
    /// A master count out of range.
    #[error("{0} masters: a cluster needs between 1 and 16384")]
    MastersOutOfRange(usize),
    /// A line of a topology file is malformed.
    #[error("line {line}: {message}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Some slots have no owner.
    #[error("slots {ranges} are not served by any master ({count} slots)")]
    Uncovered {
        /// The uncovered ranges, as `0-99 200`.
        ranges: String,
        /// How many slots.
        count: usize,
    },
    /// A configuration file (YAML) is invalid.
    #[error("{0}")]
    Config(String),
    /// A twemproxy configuration of several pools, and none chosen.
    #[error("the config has {} pools ({})", .0.len(), .0.join(", "))]
    PoolNotChosen(Vec<String>),
    /// The file is in no format keyplan reads.
    #[error(
        "unrecognised topology format; supported: CLUSTER NODES text or a nodes.conf, CLUSTER SLOTS/SHARDS replies, keyplan YAML, a twemproxy config, a libketama server file"
    )]
    Unrecognised,
    /// No format matched cleanly, and the closest one fails: its own located error.
    #[error("{error} (this looks like {format})")]
    Guessed {
        /// The format the text resembles.
        format: &'static str,
        /// What that format's reader says (in the message, so not a `source` said twice).
        error: Box<TopologyError>,
    },
}

/// Why a slot cannot be put in migration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    /// `SLOT:TO` without its colon.
    #[error("no ':' between slot and node")]
    NoColon,
    /// Not a slot number.
    #[error("'{0}' is not a slot (0-16383)")]
    NotASlot(String),
    /// No node by that name, address or id.
    #[error("no node '{name}' (nodes: {nodes})")]
    NoSuchNode {
        /// What was given.
        name: String,
        /// The nodes there are.
        nodes: String,
    },
    /// The slot has no owner to migrate from.
    #[error("slot {0} has no owner")]
    NoOwner(u16),
    /// The target owns the slot already.
    #[error("slot {slot} already belongs to {node}")]
    AlreadyOwned {
        /// The slot.
        slot: u16,
        /// Its owner.
        node: String,
    },
}

pub(crate) const NO_OWNER: u16 = u16::MAX;

/// A Redis Cluster slot map: which node serves each of the 16384 slots.
#[derive(Debug, Clone)]
pub struct SlotMap {
    pub(crate) nodes: Vec<Node>,
    pub(crate) owner: Box<[u16]>,
    pub(crate) migrations: Vec<Migration>,
    /// A Redis Enterprise / Cloud database behind its proxy (None: Redis Cluster).
    pub(crate) enterprise: Option<std::sync::Arc<enterprise::Enterprise>>,
}

/// The slot ranges `redis-cli --cluster create` gives `masters` masters, in master order.
///
/// redis-cli computes them in single-precision floats (`clusterManagerCommandCreate`):
/// `slots_per_node = 16384 / (float)masters`; master `i` ends at
/// `lround(cursor + slots_per_node - 1)` (the last master at 16383) and `cursor` grows by
/// `slots_per_node`. This reproduces that arithmetic exactly.
pub fn create_ranges(masters: usize) -> Result<Vec<(u16, u16)>, TopologyError> {
    if masters == 0 || masters > SLOT_COUNT {
        return Err(TopologyError::MastersOutOfRange(masters));
    }
    let per_node: f32 = SLOT_COUNT as f32 / masters as f32;
    let mut cursor: f32 = 0.0;
    let mut first: i64 = 0;
    let mut out = Vec::with_capacity(masters);
    for i in 0..masters {
        let x: f32 = cursor + per_node - 1.0;
        // C's lround: halves away from zero, like f64::round.
        let mut last = (x as f64).round() as i64;
        if last > SLOT_COUNT as i64 || i == masters - 1 {
            last = SLOT_COUNT as i64 - 1;
        }
        if last < first {
            last = first;
        }
        out.push((first as u16, last as u16));
        first = last + 1;
        cursor += per_node;
    }
    Ok(out)
}

/// Writes ranges the way redis-cli and `CLUSTER NODES` do: `0-5460 7000` (single slots alone).
pub fn format_ranges(ranges: &[(u16, u16)]) -> String {
    let mut s = String::new();
    for (i, (a, b)) in ranges.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if a == b {
            let _ = write!(s, "{a}");
        } else {
            let _ = write!(s, "{a}-{b}");
        }
    }
    s
}

impl SlotMap {
    /// The layout `redis-cli --cluster create` gives `masters` masters; nodes are named
    /// `master-0`, `master-1`, … (redis-cli's `Master[i]`).
    pub fn from_masters(masters: usize) -> Result<SlotMap, TopologyError> {
        let ranges = create_ranges(masters)?;
        let mut owner = vec![NO_OWNER; SLOT_COUNT].into_boxed_slice();
        let mut nodes = Vec::with_capacity(masters);
        for (i, (a, b)) in ranges.into_iter().enumerate() {
            for s in a..=b {
                owner[s as usize] = i as u16;
            }
            nodes.push(Node {
                name: format!("master-{i}"),
                id: None,
                address: None,
                flags: Vec::new(),
                replicas: 0,
            });
        }
        Ok(SlotMap {
            nodes,
            owner,
            migrations: Vec::new(),
            enterprise: None,
        })
    }

    /// The slot map in a `CLUSTER NODES` listing (or a `nodes.conf`). Masters are ordered by
    /// their first slot (masters without slots last, by name). Unowned slots are an error
    /// unless `allow_partial`.
    pub fn from_cluster_nodes(text: &str, allow_partial: bool) -> Result<SlotMap, TopologyError> {
        let parsed = nodes::parse(text)?;
        let mut owner = vec![NO_OWNER; SLOT_COUNT].into_boxed_slice();
        for (s, o) in parsed.owner.iter().enumerate() {
            if let Some(o) = o {
                owner[s] = *o;
            }
        }
        SlotMap {
            nodes: parsed.masters,
            owner,
            migrations: parsed.migrations,
            enterprise: None,
        }
        .validated(allow_partial)
    }

    /// Checks coverage (unserved slots are an error unless `allow_partial`) and orders the
    /// nodes by first slot: the last step of every slot-map parser.
    pub(crate) fn validated(mut self, allow_partial: bool) -> Result<SlotMap, TopologyError> {
        let uncovered = self.uncovered();
        if !uncovered.is_empty() && !allow_partial {
            return Err(TopologyError::Uncovered {
                count: uncovered.iter().map(|(a, b)| (b - a) as usize + 1).sum(),
                ranges: format_ranges(&uncovered),
            });
        }
        self.sort_nodes();
        Ok(self)
    }

    /// Reorders nodes by first slot (slotless nodes last, by name), remapping owners.
    pub(crate) fn sort_nodes(&mut self) {
        let mut first = vec![u32::MAX; self.nodes.len()];
        for (s, &o) in self.owner.iter().enumerate() {
            if o != NO_OWNER && first[o as usize] == u32::MAX {
                first[o as usize] = s as u32;
            }
        }
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by(|&a, &b| {
            first[a]
                .cmp(&first[b])
                .then_with(|| self.nodes[a].name.cmp(&self.nodes[b].name))
        });
        let mut new_index = vec![0u16; self.nodes.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new as u16;
        }
        for o in self.owner.iter_mut() {
            if *o != NO_OWNER {
                *o = new_index[*o as usize];
            }
        }
        self.nodes = order.iter().map(|&i| self.nodes[i].clone()).collect();
    }

    /// Slots no node serves, as ranges.
    pub fn uncovered(&self) -> Vec<(u16, u16)> {
        let mut out: Vec<(u16, u16)> = Vec::new();
        for (s, &o) in self.owner.iter().enumerate() {
            if o == NO_OWNER {
                let s = s as u16;
                match out.last_mut() {
                    Some((_, b)) if *b + 1 == s => *b = s,
                    _ => out.push((s, s)),
                }
            }
        }
        out
    }

    /// Slots in migration (from `CLUSTER NODES` markers).
    pub fn migrations(&self) -> &[Migration] {
        &self.migrations
    }

    /// [`SlotMap::add_migration`] for `SLOT:TO`, TO being a node's name, address or id.
    pub fn add_migration_spec(&mut self, spec: &str) -> Result<(), MigrationError> {
        let (slot, to) = spec.split_once(':').ok_or(MigrationError::NoColon)?;
        let slot: u16 = slot
            .parse()
            .ok()
            .filter(|&s| usize::from(s) < SLOT_COUNT)
            .ok_or_else(|| MigrationError::NotASlot(slot.to_string()))?;
        let index = find_node(&self.nodes, to).ok_or_else(|| self.no_such_node(to))?;
        self.add_migration(slot, index)
    }

    fn no_such_node(&self, name: &str) -> MigrationError {
        let nodes: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        MigrationError::NoSuchNode {
            name: name.to_string(),
            nodes: nodes.join(", "),
        }
    }

    /// Puts `slot` in migration from its owner to node `to` (as `CLUSTER SETSLOT … MIGRATING`
    /// would), for what-if simulations. Errors when `to` is not a node or already owns it.
    pub fn add_migration(&mut self, slot: u16, to: usize) -> Result<(), MigrationError> {
        let owner = self
            .owner_of_slot(slot)
            .ok_or(MigrationError::NoOwner(slot))?;
        let target = self
            .nodes
            .get(to)
            .ok_or_else(|| self.no_such_node(&to.to_string()))?;
        if owner == to {
            return Err(MigrationError::AlreadyOwned {
                slot,
                node: target.name.clone(),
            });
        }
        let label = |n: &Node| n.address.clone().unwrap_or_else(|| n.name.clone());
        self.migrations.push(Migration {
            slot,
            node: label(&self.nodes[owner]),
            peer: label(target),
            direction: MigrationDirection::Migrating,
        });
        self.migrations
            .sort_by(|a, b| a.slot.cmp(&b.slot).then_with(|| a.node.cmp(&b.node)));
        Ok(())
    }

    /// Slots owned by node `index`.
    pub fn slot_count(&self, index: usize) -> usize {
        self.owner
            .iter()
            .filter(|&&o| o as usize == index && o != NO_OWNER)
            .count()
    }

    /// The nodes, in the order they were declared.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The slot of `key`: CRC16 of its hash tag, or on a Redis Enterprise database of what its
    /// hashing policy hashes (None: no rule of a custom policy matches, and the database
    /// refuses the key).
    #[inline]
    pub fn slot_of(&self, key: &[u8]) -> Option<u16> {
        match &self.enterprise {
            None => Some(key_slot(key)),
            Some(e) => e.hashing.slot(key),
        }
    }

    /// The bytes hashed for `key` (see [`SlotMap::slot_of`]).
    pub fn hashed<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match &self.enterprise {
            None => Some(crate::slot::TagShape::of(key).hashed(key)),
            Some(e) => e.hashing.hashed(key),
        }
    }

    /// [`SlotMap::slot_of`] with [`SlotMap::hashed`], a policy's rules run once.
    #[inline]
    pub fn place_key<'k>(&self, key: &'k [u8]) -> Option<(u16, &'k [u8])> {
        match &self.enterprise {
            None => Some((key_slot(key), crate::slot::TagShape::of(key).hashed(key))),
            Some(e) => e.hashing.place(key),
        }
    }

    /// The Redis Enterprise / Cloud database this map is behind, if any.
    pub fn enterprise(&self) -> Option<&enterprise::Enterprise> {
        self.enterprise.as_deref()
    }

    /// This map as a Redis Enterprise database's shards.
    pub fn with_enterprise(mut self, e: enterprise::Enterprise) -> SlotMap {
        self.enterprise = Some(std::sync::Arc::new(e));
        self
    }

    /// Whether keys are placed by a rule other than Redis Cluster's (a Redis Enterprise
    /// `standard` or `custom` hashing policy).
    pub fn custom_hashing(&self) -> bool {
        self.enterprise
            .as_ref()
            .is_some_and(|e| !matches!(e.hashing, enterprise::HashingPolicy::Redis))
    }

    /// Index (into [`SlotMap::nodes`]) of the node serving `slot`, if any.
    #[inline]
    pub fn owner_of_slot(&self, slot: u16) -> Option<usize> {
        match self.owner.get(slot as usize) {
            Some(&o) if o != NO_OWNER => Some(o as usize),
            _ => None,
        }
    }

    /// The contiguous slot ranges of node `index`, ascending.
    pub fn ranges_of(&self, index: usize) -> Vec<(u16, u16)> {
        let mut out: Vec<(u16, u16)> = Vec::new();
        for (s, &o) in self.owner.iter().enumerate() {
            if o as usize == index && o != NO_OWNER {
                let s = s as u16;
                match out.last_mut() {
                    Some((_, b)) if *b + 1 == s => *b = s,
                    _ => out.push((s, s)),
                }
            }
        }
        out
    }
}

/// Where keys live.
#[derive(Debug, Clone)]
pub enum Topology {
    /// A Redis Cluster slot map.
    Cluster(SlotMap),
    /// A client-side sharding ring (twemproxy, libketama, Jedis, jump, modulo).
    Ring(ring::Ring),
}

/// The topology formats keyplan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopologyFormat {
    /// Decide from the content
    Auto,
    /// The text of CLUSTER NODES, or a nodes.conf
    ClusterNodes,
    /// A twemproxy (nutcracker) YAML config
    Twemproxy,
    /// keyplan topology YAML (nodes:, ring: or enterprise:)
    Keyplan,
    /// CLUSTER SLOTS or CLUSTER SHARDS as redis-cli prints them (RESP2, RESP3 or --json)
    ClusterReply,
    /// A libketama server file (ip:port memory)
    Libketama,
}

/// How to read a topology file.
#[derive(Debug, Clone, Default)]
pub struct TopologyOptions {
    /// Accept slot maps with unserved slots.
    pub allow_partial: bool,
    /// twemproxy pool to use.
    pub pool: Option<String>,
}

/// The format a text that no reader recognised resembles most, if any: CLUSTER NODES lines
/// (an id, an address, flags naming master or slave), a CLUSTER SLOTS/SHARDS reply (JSON or
/// redis-cli's numbered display), a twemproxy config (`servers:`), keyplan YAML (`masters:`,
/// `slots:`).
fn closest_format(text: &str) -> Option<(TopologyFormat, &'static str)> {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let f: Vec<&str> = first.split_whitespace().collect();
    let flags = |s: &str| {
        s.split(',').any(|x| {
            matches!(
                x,
                "master" | "slave" | "myself" | "replica" | "fail" | "handshake" | "noaddr"
            )
        })
    };
    if f.len() >= 3 && f[1].contains(':') && flags(f[2]) {
        return Some((TopologyFormat::ClusterNodes, "CLUSTER NODES text"));
    }
    // A CLUSTER NODES line whose fields were damaged still has its link state, or an id of 40
    // hex digits run into its address.
    let nodes_line = |f: &Vec<&str>| {
        f.iter().any(|w| matches!(*w, "connected" | "disconnected"))
            && f.iter().any(|w| w.contains(':') || w.contains('@'))
            || f.first().is_some_and(|w| {
                w.len() > 40 && w.as_bytes()[..40].iter().all(u8::is_ascii_hexdigit)
            })
    };
    // Most lines in one line format, a few not (the bad line is then that format's to name).
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let most = |n: usize| n > 0 && n * 2 >= lines.len();
    if most(
        lines
            .iter()
            .filter(|f| f.len() >= 3 && f[1].contains(':') && flags(f[2]) || nodes_line(f))
            .count(),
    ) {
        return Some((TopologyFormat::ClusterNodes, "CLUSTER NODES text"));
    }
    // A twemproxy pool: `servers:` or, when that is what was damaged, the pool keys only
    // twemproxy has, indented under the pool's name.
    let pool_key = |l: &str| {
        let t = l.trim_start();
        l.starts_with([' ', '\t'])
            && [
                "servers:",
                "listen:",
                "distribution:",
                "auto_eject_hosts:",
                "server_retry_timeout:",
                "server_failure_limit:",
                "preconnect:",
                "hash_tag:",
                "server_connections:",
            ]
            .iter()
            .any(|k| t.starts_with(k))
    };
    let twemproxy = text.lines().any(|l| l.trim_start().starts_with("servers:"))
        || text.lines().filter(|l| pool_key(l)).count() >= 2;
    if most(
        lines
            .iter()
            .filter(|f| f.len() == 2 && f[0].contains(':'))
            .count(),
    ) && !twemproxy
    {
        return Some((TopologyFormat::Libketama, "a libketama server file"));
    }
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with(|c: char| c.is_ascii_digit()) && first.contains(')') {
        return Some((TopologyFormat::ClusterReply, "a CLUSTER SLOTS/SHARDS reply"));
    }
    if twemproxy {
        return Some((TopologyFormat::Twemproxy, "a twemproxy config"));
    }
    if text
        .lines()
        .any(|l| l.starts_with("masters:") || l.trim_start().starts_with("slots:"))
    {
        return Some((TopologyFormat::Keyplan, "keyplan topology YAML"));
    }
    None
}

impl Topology {
    /// The nodes that hold keys of their own: on a cluster the masters that own slots (a
    /// master demoted a moment ago, or a failed one replaced by its replica, owns none), on a
    /// ring every server.
    pub fn key_holders(&self) -> Vec<Node> {
        match self {
            Topology::Cluster(map) => (0..map.nodes().len())
                .filter(|&i| map.slot_count(i) > 0)
                .map(|i| map.nodes()[i].clone())
                .collect(),
            Topology::Ring(r) => r.nodes().to_vec(),
        }
    }

    /// Every master with the slots it owns (none on a ring).
    pub fn master_slots(&self) -> Vec<(Node, Vec<u16>)> {
        let Topology::Cluster(map) = self else {
            return Vec::new();
        };
        (0..map.nodes().len())
            .map(|i| {
                let slots = map.ranges_of(i).iter().flat_map(|&(a, b)| a..=b).collect();
                (map.nodes()[i].clone(), slots)
            })
            .collect()
    }

    /// Slots in migration (none on a ring).
    pub fn migrations(&self) -> &[Migration] {
        self.slot_map().map_or(&[], |m| m.migrations())
    }

    /// The nodes keys can land on.
    pub fn nodes(&self) -> &[Node] {
        match self {
            Topology::Cluster(m) => m.nodes(),
            Topology::Ring(r) => r.nodes(),
        }
    }

    /// Where `key` goes: its slot (none on a ring, which does not use slots), the bytes that
    /// are hashed (the hash tag's, or the ring's tag's), and the node that holds it.
    pub fn place<'k>(&self, key: &'k [u8]) -> (Option<u16>, &'k [u8], Option<usize>) {
        match self {
            Topology::Cluster(m) => match m.place_key(key) {
                Some((slot, hashed)) => (Some(slot), hashed, m.owner_of_slot(slot)),
                // No hashing rule matches: the database refuses the key.
                None => (None, key, None),
            },
            Topology::Ring(r) => (None, r.hashed(key), r.node_of(key)),
        }
    }

    /// Why `key` goes where [`Topology::place`] puts it, in words: a ring hashes the bytes
    /// its hash and tag rules give, a Redis Enterprise database the bytes its hashing policy's
    /// first matching rule captures (or refuses the key), a cluster the bytes of Redis's `{…}`
    /// rule ([`crate::slot::explain`]).
    pub fn explain(&self, key: &[u8]) -> String {
        let policy = self
            .slot_map()
            .filter(|m| m.custom_hashing())
            .and_then(|m| m.enterprise());
        match (self, policy) {
            (Topology::Ring(_), _) => {
                "a client-side ring hashes these bytes (see the topology's hash and tag rules)"
                    .to_string()
            }
            (Topology::Cluster(_), Some(e)) => match e.hashing.rule_for(key) {
                Some((i, rule)) => format!(
                    "rule {i} of the database's {} hashing policy, `{rule}`, is the first that matches; its `tag` group captures these bytes",
                    e.hashing.name()
                ),
                None => format!(
                    "no rule of the database's {} hashing policy matches: the database refuses this key",
                    e.hashing.name()
                ),
            },
            (Topology::Cluster(_), None) => crate::slot::explain(key),
        }
    }

    /// Index of the node that holds `key`, if any node does (none for a random ring).
    #[inline]
    pub fn node_of(&self, key: &[u8]) -> Option<usize> {
        match self {
            Topology::Cluster(m) => m.owner_of_slot(m.slot_of(key)?),
            Topology::Ring(r) => r.node_of(key),
        }
    }

    /// The slot map, for slot-based topologies.
    pub fn slot_map(&self) -> Option<&SlotMap> {
        match self {
            Topology::Cluster(m) => Some(m),
            Topology::Ring(_) => None,
        }
    }

    /// The ring, for client-side sharding.
    pub fn ring(&self) -> Option<&ring::Ring> {
        match self {
            Topology::Ring(r) => Some(r),
            Topology::Cluster(_) => None,
        }
    }

    /// Each node's nominal share of the keys (0..1): its share of the slots, or of the ring.
    pub fn nominal_shares(&self) -> Vec<f64> {
        match self {
            Topology::Cluster(m) => (0..m.nodes().len())
                .map(|i| m.slot_count(i) as f64 / SLOT_COUNT as f64)
                .collect(),
            Topology::Ring(r) => r.nominal_shares(),
        }
    }

    /// Reads a topology file, detecting its format.
    pub fn parse(text: &str, allow_partial: bool) -> Result<Topology, TopologyError> {
        Self::parse_as(
            text,
            TopologyFormat::Auto,
            &TopologyOptions {
                allow_partial,
                pool: None,
            },
        )
    }

    /// Reads a topology file in a given (or detected) format.
    pub fn parse_as(
        text: &str,
        format: TopologyFormat,
        opts: &TopologyOptions,
    ) -> Result<Topology, TopologyError> {
        let format = match format {
            TopologyFormat::Auto if nodes::looks_like(text) => TopologyFormat::ClusterNodes,
            TopologyFormat::Auto if reply::looks_like(text) => TopologyFormat::ClusterReply,
            TopologyFormat::Auto if config::looks_like(text) => TopologyFormat::Keyplan,
            TopologyFormat::Auto if twemproxy::looks_like(text) => TopologyFormat::Twemproxy,
            TopologyFormat::Auto if config::libketama_looks_like(text) => TopologyFormat::Libketama,
            TopologyFormat::Auto => {
                // Nothing matched cleanly: the closest format's own error says where and what.
                let Some((guess, name)) = closest_format(text) else {
                    return Err(TopologyError::Unrecognised);
                };
                return Self::parse_as(text, guess, opts).map_err(|e| TopologyError::Guessed {
                    format: name,
                    error: Box::new(e),
                });
            }
            f => f,
        };
        match format {
            TopologyFormat::ClusterNodes => Ok(Topology::Cluster(SlotMap::from_cluster_nodes(
                text,
                opts.allow_partial,
            )?)),
            TopologyFormat::Twemproxy => Ok(Topology::Ring(twemproxy::parse(
                text,
                opts.pool.as_deref(),
            )?)),
            TopologyFormat::Keyplan => config::parse(text, opts.allow_partial),
            TopologyFormat::ClusterReply => {
                Ok(Topology::Cluster(reply::parse(text, opts.allow_partial)?))
            }
            TopologyFormat::Libketama => Ok(Topology::Ring(config::parse_libketama(text)?)),
            TopologyFormat::Auto => Err(TopologyError::Unrecognised),
        }
    }

    /// Index of the node that serves `slot` (slot-based topologies only).
    #[inline]
    pub fn node_of_slot(&self, slot: u16) -> Option<usize> {
        match self {
            Topology::Cluster(m) => m.owner_of_slot(slot),
            Topology::Ring(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(n: usize) -> String {
        create_ranges(n)
            .unwrap()
            .iter()
            .map(|(a, b)| format!("{a}-{b}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn redis_cli_create_ranges() {
        assert_eq!(fmt(3), "0-5460,5461-10922,10923-16383");
        assert_eq!(fmt(4), "0-4095,4096-8191,8192-12287,12288-16383");
        assert_eq!(fmt(5), "0-3276,3277-6553,6554-9829,9830-13106,13107-16383");
        assert_eq!(
            fmt(6),
            "0-2730,2731-5460,5461-8191,8192-10922,10923-13652,13653-16383"
        );
        assert_eq!(
            fmt(7),
            "0-2340,2341-4680,4681-7021,7022-9361,9362-11702,11703-14042,14043-16383"
        );
        assert!(fmt(8).split(',').all(|r| {
            let (a, b) = r.split_once('-').unwrap();
            b.parse::<u32>().unwrap() - a.parse::<u32>().unwrap() + 1 == 2048
        }));
        assert_eq!(
            fmt(9),
            "0-1819,1820-3640,3641-5460,5461-7281,7282-9101,9102-10922,10923-12742,12743-14563,14564-16383"
        );
        assert_eq!(
            fmt(10),
            "0-1637,1638-3276,3277-4914,4915-6553,6554-8191,8192-9829,9830-11468,11469-13106,13107-14745,14746-16383"
        );
    }

    #[test]
    fn every_count_covers_all_slots_once() {
        for n in [1, 2, 3, 11, 100, 1000, 16383, 16384] {
            let r = create_ranges(n).unwrap();
            assert_eq!(r.len(), n);
            assert_eq!(r[0].0, 0);
            assert_eq!(r[n - 1].1, 16383);
            for w in r.windows(2) {
                assert_eq!(w[0].1 + 1, w[1].0, "n={n}");
            }
        }
        assert!(create_ranges(0).is_err());
        assert!(create_ranges(16385).is_err());
    }

    #[test]
    fn slot_map_lookups() {
        let m = SlotMap::from_masters(3).unwrap();
        assert_eq!(m.owner_of_slot(5460), Some(0));
        assert_eq!(m.owner_of_slot(5461), Some(1));
        assert_eq!(m.ranges_of(2), vec![(10923, 16383)]);
        assert_eq!(format_ranges(&[(0, 5460), (7000, 7000)]), "0-5460 7000");
    }

    const NODES: &str = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,,shard-id=69bc slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [93-<-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f] [77->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]
vars currentEpoch 6 lastVoteEpoch 0
";

    #[test]
    fn cluster_nodes_with_markers() {
        let t = Topology::parse(NODES, false).unwrap();
        let m = t.slot_map().unwrap();
        let names: Vec<&str> = m.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            ["127.0.0.1:30001", "127.0.0.1:30002", "127.0.0.1:30003"]
        );
        assert_eq!(m.nodes()[0].replicas, 1);
        assert_eq!(m.owner_of_slot(93), Some(0));
        assert_eq!(m.owner_of_slot(77), Some(0));
        assert_eq!(m.owner_of_slot(5461), Some(1));
        assert_eq!(m.migrations().len(), 2);
        assert_eq!(m.migrations()[0].slot, 77);
        assert_eq!(m.migrations()[0].direction, MigrationDirection::Migrating);
        assert_eq!(m.migrations()[0].peer, "127.0.0.1:30002");
    }

    #[test]
    fn a_file_mostly_in_one_format_gets_that_formats_located_error() {
        let ketama = "10.0.0.1:11211 600\n10.0.0.2:11211 3x0\n10.0.0.3:11211 300\n";
        let e = Topology::parse(ketama, false).unwrap_err().to_string();
        assert!(
            e.starts_with("line 2: memory '3x0'") && e.contains("libketama"),
            "{e}"
        );
        assert_eq!(e.matches("3x0").count(), 1, "said once: {e}");
        let mut nodes: Vec<&str> = NODES.lines().collect();
        nodes.insert(1, "garbage line here x");
        let e = Topology::parse(&nodes.join("\n"), false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("line 2:"), "{e}");
    }

    #[test]
    fn damaged_files_of_a_known_format_get_that_format_s_error_at_its_line() {
        let pool = "cache:\n  listen: 127.0.0.1:22121\n  hash: fnv1a_64\n  distribution: ketama\n";
        // `servers:` lost: still a twemproxy pool, not a libketama file or nothing.
        let e = Topology::parse(pool, false).unwrap_err().to_string();
        assert!(e.contains("line 1:") && e.contains("has no servers"), "{e}");
        let typo = format!("{pool}  server:\n   - 10.0.0.1:6379:1\n");
        let e = Topology::parse(&typo, false).unwrap_err().to_string();
        assert!(e.contains("line 5") && e.contains("`server`"), "{e}");
        // An id run into its address, on every line.
        let merged: String = NODES
            .lines()
            .filter(|l| !l.starts_with("vars"))
            .map(|l| format!("{}{}\n", &l[..40], &l[41..]))
            .collect();
        let e = Topology::parse(&merged, false).unwrap_err().to_string();
        assert!(e.contains("line 1:") && e.contains("CLUSTER NODES"), "{e}");
    }

    #[test]
    fn cluster_nodes_errors_name_the_line() {
        let gap = NODES.replace("10923-16383", "10923-16000");
        let e = Topology::parse(&gap, false).unwrap_err();
        assert!(
            matches!(&e, TopologyError::Uncovered { ranges, count: 383 } if ranges == "16001-16383"),
            "{e}"
        );
        let t = Topology::parse(&gap, true).unwrap();
        assert_eq!(t.slot_map().unwrap().uncovered(), vec![(16001, 16383)]);
        let twice = NODES.replace("5461-10922", "5000-10922");
        let e = Topology::parse(&twice, false).unwrap_err().to_string();
        assert!(e.contains("slot 5000 is owned twice"), "{e}");
        let bad = NODES.replace("10923-16383", "10923-99999");
        let e = Topology::parse(&bad, false).unwrap_err().to_string();
        assert!(e.starts_with("line 3:") && e.contains("99999"), "{e}");
        let short = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:1@2 master -\n";
        assert!(Topology::parse(short, false).is_err());
        assert!(matches!(
            Topology::parse("hello", false),
            Err(TopologyError::Unrecognised)
        ));
        // A short id: not recognised as CLUSTER NODES, but close enough for its own error.
        let e = Topology::parse(
            "e7d1eec 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n",
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("line 1: 'e7d1eec' is not a 40-character node id")
                && e.contains("looks like CLUSTER NODES"),
            "{e}"
        );
    }
}
