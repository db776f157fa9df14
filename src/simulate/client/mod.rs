//! Client profiles: what a given client library or proxy
//! really does with a batch whose keys span several slots: split it (per slot, per run of
//! same-slot keys, per server, per key), send the parts in parallel or one after another,
//! reject it before sending anything, or let the server answer `CROSSSLOT`.
//!
//! Each profile names the version range it models. Pure: no I/O.
//!
//! A profile runs in phases, one file each: `split` (how one multi-key command is sent:
//! whole, split per slot/run/server/key, or refused), `waves` (what the client sends for a
//! multi-key command, a pipeline or MULTI…EXEC, as waves it waits for in turn), `redirect`
//! (the MOVED/ASK the waves meet on the real cluster and how the client follows them). The waves
//! then become waves of lanes (one per node) and are costed by the one model the strategies
//! use ([`crate::simulate::exec::Execution::load`]).

mod profile;
mod redirect;
mod split;
mod waves;

use super::exec::{Execution, LaneLoad};
use super::{Batch, BatchKind, NetworkModel};
use crate::topology::Topology;
use profile::{Serves, Version};
use serde::Serialize;
use split::{OpPlan, plan_op};
use std::collections::BTreeMap;

/// A client library or proxy whose cross-slot behaviour keyplan models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    /// Jedis 3.x `JedisCluster`.
    Jedis3,
    /// Jedis 4.4–7.x `JedisCluster` / `ClusterPipeline`.
    Jedis,
    /// Jedis 8 `RedisClusterClient`.
    Jedis8,
    /// Lettuce ≥ 4 advanced cluster commands.
    Lettuce,
    /// redis-py `RedisCluster` (sync), v6.1+: `mget`/`mset` and friends.
    RedisPy,
    /// redis-py's splitting API: `mget_nonatomic` / `mset_nonatomic`.
    RedisPyNonatomic,
    /// go-redis v9.11+ `ClusterClient` (default command resolver).
    GoRedis,
    /// ioredis `Cluster`.
    Ioredis,
    /// node-redis with @redis/client ≥ 6.2.
    NodeRedis,
    /// redis-rs ≥ 0.23.4, sync `ClusterConnection`.
    RedisRs,
    /// redis-rs ≥ 0.23.4, async cluster connection.
    RedisRsAsync,
    /// StackExchange.Redis.
    StackExchange,
    /// Redisson.
    Redisson,
    /// twemproxy (nutcracker) ≥ 0.4.0.
    Twemproxy,
    /// Envoy `redis_proxy`.
    Envoy,
}

impl Client {
    /// Every profile.
    pub const ALL: [Client; 15] = [
        Client::Jedis3,
        Client::Jedis,
        Client::Jedis8,
        Client::Lettuce,
        Client::RedisPy,
        Client::RedisPyNonatomic,
        Client::GoRedis,
        Client::Ioredis,
        Client::NodeRedis,
        Client::RedisRs,
        Client::RedisRsAsync,
        Client::StackExchange,
        Client::Redisson,
        Client::Twemproxy,
        Client::Envoy,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        self.profile().name
    }

    /// The versions this profile models.
    pub fn models(self) -> &'static str {
        self.profile().models
    }

    /// The profiles for `NAME` or `NAME@VERSION` on the command line (`redis-py` gives both its
    /// strict and its splitting API). An error says which versions are modelled.
    pub fn resolve(spec: &str) -> Result<Vec<Client>, ClientError> {
        let (name, version) = match spec.split_once('@') {
            Some((n, v)) => (n, Some(v)),
            None => (spec, None),
        };
        let v = match version {
            Some(v) => Some(parse_version(v).ok_or_else(|| ClientError::NotAVersion {
                spec: spec.to_string(),
                version: v.to_string(),
                name: name.to_string(),
            })?),
            None => None,
        };
        // (profile, lowest version, first version past the range) of the library `name`.
        let ranges: Vec<(Client, Version, Version)> = Client::ALL
            .iter()
            .filter_map(|&c| match c.profile().versions {
                Some((library, lo, hi)) if library == name => Some((c, lo, hi)),
                _ => None,
            })
            .collect();
        let exact = Client::ALL.iter().find(|c| c.name() == name).copied();
        let picked: Vec<Client> = match (v, exact) {
            (None, Some(c)) => std::iter::once(c)
                .chain(c.profile().also.iter().copied())
                .collect(),
            (None, None) => Vec::new(),
            (Some(v), _) => ranges
                .iter()
                .filter(|(_, lo, hi)| *lo <= v && v < *hi)
                .map(|r| r.0)
                .collect(),
        };
        if picked.is_empty() {
            if ranges.is_empty() && exact.is_none() {
                return Err(ClientError::Unknown(spec.to_string()));
            }
            let modelled: Vec<String> = ranges
                .iter()
                .map(|(c, _, _)| format!("{} = {}", c.name(), c.models()))
                .collect();
            return Err(ClientError::NotModelled {
                spec: spec.to_string(),
                modelled: if modelled.is_empty() {
                    exact.map(|c| c.models().to_string()).unwrap_or_default()
                } else {
                    modelled.join("; ")
                },
            });
        }
        Ok(picked)
    }

    /// The profiles for a list of `NAME`, `NAME@VERSION` or `all`, each once in the order
    /// given. An error says which names there are.
    pub fn resolve_list(specs: &[String]) -> Result<Vec<Client>, ClientError> {
        let mut out = Vec::new();
        for spec in specs {
            if spec == "all" {
                return Ok(Client::ALL.to_vec());
            }
            for c in Client::resolve(spec)? {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        Ok(out)
    }

    /// The one profile `spec` names: a profile's own name is that profile (`redis-py` alone,
    /// not also its splitting API); a name or version that stands for several is an error
    /// naming them.
    pub fn resolve_one(spec: &str) -> Result<Client, ClientError> {
        if let Some(&exact) = Client::ALL.iter().find(|c| c.name() == spec) {
            return Ok(exact);
        }
        match Client::resolve_list(&[spec.to_string()])?.as_slice() {
            [one] => Ok(*one),
            many => Err(ClientError::Several {
                spec: spec.to_string(),
                names: many.iter().map(|c| c.name()).collect(),
            }),
        }
    }

    /// A proxy (one hop client → proxy, then proxy → servers) rather than a library.
    pub fn is_proxy(self) -> bool {
        self.profile().proxy
    }

    /// Whether the profile runs on `topology`'s kind: Redis Cluster clients on a slot map,
    /// twemproxy on a ring of plain servers, Envoy on either.
    pub fn applies_to(self, topology: &Topology) -> bool {
        // A Redis Enterprise proxy endpoint is a plain Redis endpoint: no cluster client or
        // proxy of these talks to it (with the OSS Cluster API enabled the database is a
        // Redis Cluster, read as one from its CLUSTER SLOTS).
        if topology
            .slot_map()
            .is_some_and(|m| m.enterprise().is_some())
        {
            return false;
        }
        match (self.profile().serves, topology) {
            (Serves::Both, _) => true,
            (Serves::Cluster, Topology::Cluster(_)) | (Serves::Ring, Topology::Ring(_)) => true,
            (Serves::Cluster, Topology::Ring(_)) | (Serves::Ring, Topology::Cluster(_)) => false,
        }
    }
}

/// Why `--client` names no profile, or more than one where one is wanted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// No profile has this name.
    #[error("{0}: no such client profile")]
    Unknown(String),
    /// `NAME@VERSION` with a version that does not parse.
    #[error("{spec}: '{version}' is not a version (e.g. {name}@4.4 or {name}@9.11.0)")]
    NotAVersion {
        /// What was given.
        spec: String,
        /// Its version part.
        version: String,
        /// Its name part.
        name: String,
    },
    /// A version outside every modelled range.
    #[error("{spec}: this version is not modelled (modelled: {modelled})")]
    NotModelled {
        /// What was given.
        spec: String,
        /// The modelled versions, in words.
        modelled: String,
    },
    /// Several profiles where one is wanted.
    #[error("{spec} names {}; name one of them, e.g. {}", several(.names), .names[0])]
    Several {
        /// What was given.
        spec: String,
        /// The profiles it names.
        names: Vec<&'static str>,
    },
}

fn several(names: &[&str]) -> String {
    match names.len() {
        n if n > 3 => format!("{n} profiles"),
        _ => names.join(" and "),
    }
}

/// `4`, `4.4`, `v9.11.0`, `0.23.4` → (major, minor, patch).
fn parse_version(v: &str) -> Option<Version> {
    let v = v.trim_start_matches('v');
    let mut parts = v.split('.');
    let mut next = |required: bool| match parts.next() {
        Some(p) => {
            let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse::<u32>().ok()
        }
        None if required => None,
        None => Some(0),
    };
    Some((next(true)?, next(false)?, next(false)?))
}

/// What became of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every command succeeds.
    Ok,
    /// The client refuses the batch before sending anything.
    ClientError,
    /// The batch is sent and the server refuses (all or part of) it.
    ServerError,
    /// The proxy refuses the batch.
    ProxyError,
    /// It runs, but some keys are read from or written to a server that does not own them.
    WrongServer,
    /// It runs without an error, but not as the transaction it was written as.
    NotAtomic,
    /// clients.md does not describe what this client does with this kind of batch.
    NotModelled,
}

impl Outcome {
    /// The name shown in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ClientError => "client-error",
            Outcome::ServerError => "server-error",
            Outcome::ProxyError => "proxy-error",
            Outcome::WrongServer => "wrong-server",
            Outcome::NotAtomic => "not-atomic",
            Outcome::NotModelled => "not-modelled",
        }
    }
}

/// What a client does with one batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClientResult {
    /// Batch name.
    pub batch: String,
    /// The batch's stable identity (line, scheme name, command).
    pub batch_id: crate::simulate::batch::BatchId,
    /// Profile name.
    pub client: &'static str,
    /// The versions the profile models.
    pub models: &'static str,
    /// What became of the batch.
    pub outcome: Outcome,
    /// The error the application sees, or why it is not modelled.
    pub message: Option<String>,
    /// What running it costs.
    #[serde(flatten)]
    pub load: crate::simulate::BatchLoad,
    /// MOVED redirects met (a stale client map).
    pub moved: u64,
    /// ASK redirects met (slots in migration).
    pub ask: u64,
}

/// Simulates `client` executing batch `b` on `topo` (the client's slot map is current).
pub fn simulate_client(
    b: &Batch,
    topo: &Topology,
    client: Client,
    net: &NetworkModel,
) -> ClientResult {
    simulate_client_stale(b, topo, topo, client, net)
}

/// Simulates `client` executing batch `b` when its slot map is `believed` while the cluster
/// is really `actual`: commands sent to a node that no longer owns the slot meet MOVED, keys
/// of a slot in migration meet ASK, and the client follows them as its profile says.
pub fn simulate_client_stale(
    b: &Batch,
    topo: &Topology,
    actual: &Topology,
    client: Client,
    net: &NetworkModel,
) -> ClientResult {
    let mut r = ClientResult {
        batch: b.name.clone(),
        batch_id: b.id.clone(),
        client: client.name(),
        models: client.models(),
        outcome: Outcome::Ok,
        message: None,
        load: crate::simulate::BatchLoad::default(),
        moved: 0,
        ask: 0,
    };
    let fail = |mut r: ClientResult, outcome: Outcome, message: String| {
        r.outcome = outcome;
        r.message = Some(message);
        r
    };
    if !client.applies_to(topo) {
        let enterprise = topo.slot_map().and_then(|m| m.enterprise());
        let why = match client.profile().serves {
            _ if enterprise.is_some() => format!(
                "{} does not run against a Redis Enterprise proxy endpoint (a plain Redis endpoint): simulate without --client for what the proxy does; with the OSS Cluster API enabled, give the database's CLUSTER SLOTS as the topology",
                client.name()
            ),
            Serves::Ring => format!(
                "{0} shards over a ring of plain servers: give a {0} config as the topology",
                client.name()
            ),
            Serves::Cluster | Serves::Both => format!(
                "{} is a Redis Cluster client; this topology is a client-side ring",
                client.name()
            ),
        };
        return fail(r, Outcome::NotModelled, why);
    }
    let plans: Vec<OpPlan> = b.ops.iter().map(|op| plan_op(client, op, topo)).collect();
    for p in &plans {
        if let OpPlan::Unserved(m) = p {
            return fail(r, Outcome::ServerError, m.clone());
        }
    }
    // A script's undeclared keys (seen in a capture) decide on the server: no client can route
    // by keys it is not told, so each sends the script where its declared keys (or, with none,
    // any node) say, and the server refuses a key it does not hold.
    // So is a script that declares no keys and whose body touches keys (or may).
    if b.kind == BatchKind::Script && (!b.script_ran.is_empty() || b.no_keys.is_some()) {
        let v = crate::simulate::verdict::as_written(b, actual);
        if v.outcome == crate::simulate::verdict::ServerOutcome::NonLocalScriptKey {
            let m = v
                .message
                .unwrap_or_else(|| "Script attempted to access a non local key".into());
            r.load.round_trips = 1;
            r.load.latency_ms = net.wave_ms();
            return fail(r, Outcome::ServerError, m);
        }
    }
    // On a ring a proxy sends a script to the server of its first declared key, where it
    // reads and writes every key it touches: keys another server owns are the wrong ones, and
    // no error says so. twemproxy cannot route a script that declares no key.
    if b.kind == BatchKind::Script
        && let Topology::Ring(_) = actual
    {
        match b.keys().next() {
            None if client == Client::Twemproxy => {
                return fail(
                    r,
                    Outcome::ProxyError,
                    "twemproxy routes a script by its first key, and this one declares none (numkeys 0)".into(),
                );
            }
            Some(first) => {
                let home = actual.node_of(first);
                let touched = b
                    .keys()
                    .chain(b.script_ran.iter().flatten().map(Vec::as_slice));
                if let Some(k) = touched.into_iter().find(|k| actual.node_of(k) != home) {
                    r.load.round_trips = 1;
                    r.load.latency_ms = net.wave_ms();
                    return fail(
                        r,
                        Outcome::WrongServer,
                        format!(
                            "the script runs on the server of its first key, and touches {}, which another server owns: it is read or written on the wrong server",
                            String::from_utf8_lossy(k)
                        ),
                    );
                }
            }
            None => {}
        }
    }
    let cx = waves::Cx {
        b,
        topo,
        actual,
        client,
        plans: &plans,
    };
    // Waves: groups of commands sent together; the client waits for each wave in turn.
    let waves::Built {
        waves,
        mut errors,
        note,
    } = match waves::build(&cx) {
        Ok(built) => built,
        Err(refused) => {
            if refused.one_trip {
                r.load.round_trips = 1;
                r.load.latency_ms = net.wave_ms();
            }
            return fail(r, refused.outcome, refused.message);
        }
    };
    if note.is_some() {
        r.message = note;
    }
    let followed = redirect::follow_redirects(b, topo, actual, client, waves, &mut errors);
    r.moved = followed.moved;
    r.ask = followed.ask;
    let waves = &followed.waves;
    // One lane per node and wave: the commands a wave sends to one node share a connection.
    let lanes: Vec<Vec<LaneLoad>> = waves
        .iter()
        .map(|wave| {
            let mut per_node: BTreeMap<usize, LaneLoad> = BTreeMap::new();
            for s in wave {
                let l = per_node.entry(s.node).or_insert(LaneLoad {
                    node: s.node,
                    ..LaneLoad::default()
                });
                l.commands += 1;
                l.keys += s.keys;
                l.bytes += s.bytes;
            }
            per_node.into_values().collect()
        })
        .collect();
    r.load = Execution::ClientWaves(lanes).load(&followed.names, net);
    // A proxy is one round trip to the client (the proxy's own fan-out is behind it).
    if client.is_proxy() {
        r.load.round_trips = u64::from(!waves.is_empty());
        r.load.latency_ms += net.wave_ms();
    }
    r.load.latency_ms += followed.extra_latency;
    if let Some((o, m)) = errors.into_iter().next() {
        r.outcome = o;
        r.message = Some(m);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::parse_batches;
    use crate::topology::SlotMap;

    fn run(line: &str, c: Client) -> ClientResult {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let b = &parse_batches(line).unwrap()[0];
        let net = NetworkModel::round_trips_only(1.0);
        simulate_client(b, &t, c, &net)
    }

    // Slots: a 15495 (master-2), b 3300 (master-0), c 7365 (master-1), d 11298 (master-2).
    #[test]
    fn split_units_differ() {
        // Jedis 8 splits by consecutive runs and sends them serially: a,d on one slot? no:
        // a 15495, d 11298 differ, so 4 runs → 4 round trips.
        let r = run("MGET a b c d", Client::Jedis8);
        assert_eq!(
            (r.outcome, r.load.round_trips, r.load.commands),
            (Outcome::Ok, 4, 4)
        );
        // Lettuce: per slot, all at once → 1 round trip, one connection per node.
        let r = run("MGET a b c d", Client::Lettuce);
        assert_eq!(
            (r.load.round_trips, r.load.commands, r.load.connections),
            (1, 4, 3)
        );
        // redis-py: plain MGET across slots is refused before sending.
        let r = run("MGET a b c d", Client::RedisPy);
        assert_eq!((r.outcome, r.load.round_trips), (Outcome::ClientError, 0));
        assert!(r.message.unwrap().contains("MGET - all keys must map"));
        // …but DEL is split per slot.
        let r = run("DEL a b c d", Client::RedisPy);
        assert_eq!((r.outcome, r.load.commands), (Outcome::Ok, 4));
        // go-redis routes by the first key; the server answers CROSSSLOT.
        let r = run("MGET a b c d", Client::GoRedis);
        assert_eq!(
            (r.outcome, r.load.round_trips, r.load.commands),
            (Outcome::ServerError, 1, 1)
        );
        assert_eq!(r.load.nodes[0].node, "master-2");
        // Envoy: one GET per key, plus the client→proxy hop.
        let r = run("MGET a b c d", Client::Envoy);
        assert_eq!((r.load.round_trips, r.load.commands), (1, 4));
        assert!((r.load.latency_ms - 2.0).abs() < 1e-9);
        // Jedis 3 refuses.
        assert_eq!(
            run("MGET a b", Client::Jedis3).outcome,
            Outcome::ClientError
        );
        // Same slot: everyone sends one command.
        for c in Client::ALL {
            if c == Client::Twemproxy {
                continue;
            }
            let r = run("MGET {u}a {u}b", c);
            assert_eq!((r.outcome, r.load.commands), (Outcome::Ok, 1), "{c:?}");
        }
    }

    #[test]
    fn twemproxy_runs_a_script_on_its_first_keys_server() {
        use crate::simulate::monitor::parse_monitor;
        use crate::topology::{TopologyFormat, TopologyOptions};
        let conf = "p:\n  listen: 127.0.0.1:1\n  hash: md5\n  distribution: ketama\n  servers:\n   - 10.0.0.1:6379:1\n   - 10.0.0.2:6379:1\n   - 10.0.0.3:6379:1\n";
        let t = Topology::parse_as(conf, TopologyFormat::Twemproxy, &TopologyOptions::default())
            .unwrap();
        let home = t.node_of(b"a");
        let other = (0..100)
            .map(|i| format!("k{i}"))
            .find(|k| t.node_of(k.as_bytes()) != home)
            .unwrap();
        let same = (0..100)
            .map(|i| format!("k{i}"))
            .find(|k| t.node_of(k.as_bytes()) == home)
            .unwrap();
        let capture = format!(
            "1.0 [0 10.0.0.9:1] \"EVALSHA\" \"abc\" \"0\"\n1.1 [0 lua] \"get\" \"a\"\n\
             2.0 [0 10.0.0.9:1] \"EVAL\" \"s\" \"1\" \"a\"\n2.1 [0 lua] \"get\" \"{other}\"\n\
             3.0 [0 10.0.0.9:1] \"EVAL\" \"s\" \"1\" \"a\"\n3.1 [0 lua] \"get\" \"{same}\"\n"
        );
        let (batches, _) = parse_monitor(&capture).unwrap();
        let net = NetworkModel::round_trips_only(1.0);
        let outcome = |i: usize| simulate_client(&batches[i], &t, Client::Twemproxy, &net).outcome;
        assert_eq!(outcome(0), Outcome::ProxyError);
        assert_eq!(outcome(1), Outcome::WrongServer);
        assert_eq!(outcome(2), Outcome::Ok);
    }

    #[test]
    fn scripts_touching_undeclared_keys_fail_for_every_client() {
        use crate::simulate::monitor::parse_monitor;
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let net = NetworkModel::round_trips_only(1.0);
        let capture = "1.0 [0 10.0.0.1:1] \"EVALSHA\" \"abc\" \"0\"\n\
                       1.1 [0 lua] \"get\" \"a\"\n\
                       1.2 [0 lua] \"get\" \"b\"\n\
                       2.0 [0 10.0.0.1:1] \"EVAL\" \"s\" \"1\" \"{u}a\"\n\
                       2.1 [0 lua] \"get\" \"{u}b\"\n";
        let (batches, _) = parse_monitor(capture).unwrap();
        assert_eq!(batches.len(), 2);
        for c in Client::ALL {
            if c == Client::Twemproxy {
                continue;
            }
            // No keys declared, keys on two nodes: refused wherever the client sends it.
            let r = simulate_client(&batches[0], &t, c, &net);
            assert_eq!(
                (r.outcome, r.load.round_trips),
                (Outcome::ServerError, 1),
                "{c:?}"
            );
            assert!(r.message.unwrap().contains("non local key"), "{c:?}");
            // Its undeclared key shares the declared key's slot: it runs.
            let r = simulate_client(&batches[1], &t, c, &net);
            assert_eq!(r.outcome, Outcome::Ok, "{c:?}");
        }
    }

    #[test]
    fn runs_count_returns_to_a_slot() {
        // Slots A,B,A: Jedis 8 sends 3 commands, Lettuce 2.
        assert_eq!(run("MGET {x}1 {y}1 {x}2", Client::Jedis8).load.commands, 3);
        assert_eq!(run("MGET {x}1 {y}1 {x}2", Client::Lettuce).load.commands, 2);
    }

    #[test]
    fn pipelines_and_transactions() {
        let r = run("PIPELINE GET a; GET b; GET c; GET d", Client::Jedis);
        assert_eq!(
            (r.outcome, r.load.round_trips, r.load.commands),
            (Outcome::Ok, 1, 4)
        );
        let r = run("PIPELINE GET a; GET b", Client::Ioredis);
        assert_eq!(r.outcome, Outcome::ClientError);
        let r = run("PIPELINE GET a; MGET a b", Client::RedisRs);
        assert_eq!(r.outcome, Outcome::ClientError);
        let r = run("PIPELINE GET a; DEL a b", Client::GoRedis);
        assert_eq!((r.outcome, r.load.commands), (Outcome::ServerError, 2));
        // redis-py's default cluster pipeline(): the commands without MULTI/EXEC, no error.
        let r = run("MULTI SET {u}a 1; INCR {u}b", Client::RedisPy);
        assert_eq!(
            (r.outcome, r.load.commands, r.load.round_trips),
            (Outcome::NotAtomic, 2, 1)
        );
        let r = run("MULTI SET a 1; INCR b", Client::RedisPy);
        assert_eq!(r.outcome, Outcome::NotAtomic);
        assert!(r.message.unwrap().contains("CrossSlotTransactionError"));
        let r = run("MULTI SET a 1; INCR b", Client::NodeRedis);
        assert_eq!(r.outcome, Outcome::ServerError);
        assert_eq!(
            run("MULTI SET a 1", Client::Lettuce).outcome,
            Outcome::NotModelled
        );
    }

    #[test]
    fn a_stale_map_meets_moved_and_every_key_is_still_read_once() {
        let believed = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let actual = Topology::Cluster(SlotMap::from_masters(4).unwrap());
        let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        let net = NetworkModel::default();
        for line in [
            format!("DEL {}", keys.join(" ")),
            format!("PIPELINE GET {}", keys.join("; GET ")),
        ] {
            let b = &parse_batches(&line).unwrap()[0];
            for c in [
                Client::Lettuce,
                Client::RedisPy,
                Client::GoRedis,
                Client::NodeRedis,
            ] {
                if c == Client::GoRedis && line.starts_with("DEL") {
                    continue; // go-redis does not split DEL: the server answers CROSSSLOT
                }
                let fresh = simulate_client(b, &believed, c, &net);
                let r = simulate_client_stale(b, &believed, &actual, c, &net);
                assert_eq!((fresh.moved, fresh.ask), (0, 0));
                assert!(r.moved > 0, "{c:?}");
                assert_eq!(r.outcome, Outcome::Ok, "{c:?} {line}");
                assert_eq!(
                    r.load.nodes.iter().map(|n| n.keys).sum::<u64>(),
                    40,
                    "{c:?}"
                );
                assert!(r.load.round_trips > fresh.load.round_trips, "{c:?}");
                // Plus one CLUSTER SLOTS where the client waits for a refresh (node-redis).
                let refresh = u64::from(c == Client::NodeRedis);
                assert_eq!(
                    r.load.commands,
                    fresh.load.commands + r.moved + refresh,
                    "{c:?}"
                );
            }
        }
    }

    #[test]
    fn versions_pick_profiles() {
        assert_eq!(
            Client::resolve("jedis@3.10.0").unwrap(),
            vec![Client::Jedis3]
        );
        assert_eq!(Client::resolve("jedis@5").unwrap(), vec![Client::Jedis]);
        assert_eq!(
            Client::resolve("jedis@8.0.0-beta1").unwrap(),
            vec![Client::Jedis8]
        );
        assert!(matches!(
            Client::resolve("jedis@4.2"),
            Err(ClientError::NotModelled { .. })
        ));
        assert_eq!(
            Client::resolve("redis-py").unwrap(),
            vec![Client::RedisPy, Client::RedisPyNonatomic]
        );
        assert_eq!(
            Client::resolve("go-redis@v9.22.1").unwrap(),
            vec![Client::GoRedis]
        );
        assert!(Client::resolve("go-redis@9.7").is_err());
        assert_eq!(
            Client::resolve("redis-rs@0.23.4").unwrap(),
            vec![Client::RedisRs]
        );
        assert!(Client::resolve("redis-rs@0.23.3").is_err());
        assert!(matches!(
            Client::resolve("jedis@x"),
            Err(ClientError::NotAVersion { .. })
        ));
        assert_eq!(
            Client::resolve("hiredis").unwrap_err().to_string(),
            "hiredis: no such client profile"
        );
        let e = Client::resolve_one("jedis@3.10");
        assert_eq!(e, Ok(Client::Jedis3));
        let e = Client::resolve_one("all").unwrap_err().to_string();
        assert!(
            e.starts_with("all names 15 profiles; name one of them"),
            "{e}"
        );
        assert_eq!(Client::resolve("envoy").unwrap(), vec![Client::Envoy]);
    }

    #[test]
    fn stackexchange_and_redisson() {
        let r = run("MGET a b", Client::StackExchange);
        assert_eq!(r.outcome, Outcome::ClientError);
        assert!(
            r.message
                .unwrap()
                .starts_with("RedisCommandException: Multi-key operations")
        );
        let r = run("MGET a b c d", Client::Redisson);
        assert_eq!(
            (r.outcome, r.load.commands, r.load.round_trips),
            (Outcome::Ok, 4, 1)
        );
        // RBatch atomic: one MULTI/EXEC per node; b and c are alone on their nodes.
        let r = run("MULTI SET b 1; SET c 1", Client::Redisson);
        assert_eq!(
            (r.outcome, r.load.commands, r.load.nodes_touched),
            (Outcome::Ok, 6, 2)
        );
        assert!(r.message.unwrap().contains("atomic per node only"));
        // a and d share master-2 but not a slot: that node's EXEC aborts.
        let r = run("MULTI SET a 1; SET d 1", Client::Redisson);
        assert_eq!(r.outcome, Outcome::ServerError);
        let r = run("MGET a b c d", Client::RedisPyNonatomic);
        assert_eq!((r.outcome, r.load.commands), (Outcome::Ok, 4));
    }

    #[test]
    fn moved_then_ask_and_the_redirect_limit() {
        // "a" (slot 15495) is on master-2 of 3 in the client's map, on master-3 of 4 in
        // reality, and migrating from there to master-0.
        let believed = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let mut map = SlotMap::from_masters(4).unwrap();
        map.add_migration(15495, 0).unwrap();
        let actual = Topology::Cluster(map);
        let b = &parse_batches("GET a").unwrap()[0];
        let net = NetworkModel::round_trips_only(1.0);
        let r = simulate_client_stale(b, &believed, &actual, Client::Lettuce, &net);
        assert_eq!(
            (r.outcome, r.moved, r.ask, r.load.round_trips),
            (Outcome::Ok, 1, 1, 3)
        );
        assert_eq!(r.load.nodes.iter().map(|n| n.keys).sum::<u64>(), 1);
        // Jedis: GET, CLUSTER SLOTS, GET (ASK), ASKING, GET.
        let r = simulate_client_stale(b, &believed, &actual, Client::Jedis, &net);
        assert_eq!(
            (r.outcome, r.load.round_trips, r.load.commands),
            (Outcome::Ok, 5, 5)
        );
        // StackExchange.Redis follows one redirect: the ASK reaches the application.
        let r = simulate_client_stale(b, &believed, &actual, Client::StackExchange, &net);
        assert_eq!(r.outcome, Outcome::ServerError);
        let m = r.message.unwrap();
        assert!(m.starts_with("ASK 15495 master-0 returned"), "{m}");
        assert!(m.contains("at most 1 redirect"), "{m}");
    }
}
