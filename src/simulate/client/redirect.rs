//! The redirect phase of a client profile: how it follows MOVED and ASK (how many, with or
//! without a separate ASKING round trip, a blocking slot-map refresh, and what happens inside
//! a pipeline), and where a command sent to the client's (possibly stale) map is redirected.

use super::Client;
use crate::topology::Topology;

/// How a client follows MOVED and ASK.
pub(super) struct Follow {
    /// `ASKING` is its own round trip before the command (else pipelined with it).
    pub(super) asking_rtt: bool,
    /// MOVED triggers a full `CLUSTER SLOTS` the command waits for.
    pub(super) blocking_refresh: bool,
    /// What happens to redirected commands of a pipeline.
    pub(super) pipeline: PipeRedirect,
}

pub(super) enum PipeRedirect {
    /// The MOVED/ASK error is that command's reply (Jedis ClusterPipeline).
    NotFollowed,
    /// After the pipeline, each redirected command is re-sent alone, one after another.
    SerialRetry,
    /// Redirected commands are re-sent in one round after a backoff (go-redis).
    RetryRound { backoff_ms: f64 },
    /// Each command follows its redirect independently, concurrently.
    PerCommand,
    /// The whole pipeline is re-sent to the target when every error is the same redirect
    /// and every other command is read-only (ioredis); else errors are returned.
    WholeResend,
}

impl Client {
    /// Redirects the client follows for one command before giving the error to the
    /// application (clients.md: Jedis maxAttempts 5, Lettuce 5, redis-py TTL 16, go-redis
    /// MaxRedirects 3, ioredis and node-redis 16, redis-rs 16 retries, StackExchange.Redis
    /// one, Redisson no cap).
    pub(super) fn max_redirects(self) -> u8 {
        match self {
            Client::Jedis3 | Client::Jedis | Client::Jedis8 => 4,
            Client::Lettuce => 5,
            Client::RedisPy | Client::RedisPyNonatomic => 15,
            Client::GoRedis => 3,
            Client::Ioredis | Client::NodeRedis | Client::RedisRs | Client::RedisRsAsync => 16,
            Client::StackExchange => 1,
            Client::Redisson => u8::MAX,
            Client::Envoy | Client::Twemproxy => 0,
        }
    }

    pub(super) fn follow(self) -> Option<Follow> {
        use PipeRedirect::*;
        let f = |asking_rtt, blocking_refresh, pipeline| {
            Some(Follow {
                asking_rtt,
                blocking_refresh,
                pipeline,
            })
        };
        match self {
            Client::Jedis3 | Client::Jedis | Client::Jedis8 => f(true, true, NotFollowed),
            Client::Lettuce | Client::RedisRsAsync => f(false, false, PerCommand),
            Client::RedisPy | Client::RedisPyNonatomic => f(true, false, SerialRetry),
            Client::StackExchange | Client::Redisson => f(false, false, PerCommand),
            // go-redis sleeps a jittered backoff below MinRetryBackoff (10 ms) before the retry
            // round: modelled by its expected value.
            Client::GoRedis => f(false, false, RetryRound { backoff_ms: 5.0 }),
            Client::Ioredis => f(false, false, WholeResend),
            Client::NodeRedis => f(false, true, PerCommand),
            Client::RedisRs => f(true, true, SerialRetry),
            // Envoy follows redirects only with enable_redirection (off by default); twemproxy
            // backends are plain servers.
            Client::Envoy | Client::Twemproxy => None,
        }
    }
}

/// Commands that only read (ioredis re-sends a redirected pipeline only when the others are).
pub(super) const READ_ONLY: &[&str] = &[
    "GET",
    "MGET",
    "EXISTS",
    "HGET",
    "HMGET",
    "HGETALL",
    "LRANGE",
    "LLEN",
    "SMEMBERS",
    "SISMEMBER",
    "SCARD",
    "ZRANGE",
    "ZSCORE",
    "ZCARD",
    "ZRANK",
    "STRLEN",
    "TTL",
    "PTTL",
    "TYPE",
    "GETRANGE",
    "HEXISTS",
    "HLEN",
    "HKEYS",
    "HVALS",
    "LINDEX",
    "ZCOUNT",
    "ZRANGEBYSCORE",
    "ZREVRANGE",
    "PFCOUNT",
    "BITCOUNT",
    "GETBIT",
    "XRANGE",
    "XLEN",
];

/// Where a node of the client's map is in the real one.
pub(super) fn same_node(a: &crate::topology::Node, b: &crate::topology::Node) -> bool {
    match (&a.address, &b.address) {
        (Some(x), Some(y)) => x == y,
        _ => a.name == b.name,
    }
}

/// The redirect a command to node `node` (of the client's map) for `slot` meets, if any:
/// (ASK?, index of the target in the real map).
pub(super) fn redirect(
    sent_to: &crate::topology::Node,
    actual: &Topology,
    slot: u16,
) -> Option<(bool, usize)> {
    let Topology::Cluster(map) = actual else {
        return None;
    };
    let owner = map.owner_of_slot(slot)?;
    let nodes = map.nodes();
    if !same_node(sent_to, &nodes[owner]) {
        return Some((false, owner));
    }
    // A slot migrating away from its owner: the key is assumed already moved (worst case).
    let named = |s: &str| {
        nodes.iter().position(|n| {
            n.name == s || n.address.as_deref() == Some(s) || n.id.as_deref() == Some(s)
        })
    };
    use crate::topology::MigrationDirection::*;
    map.migrations()
        .iter()
        .filter(|m| m.slot == slot)
        .find_map(|m| match m.direction {
            Migrating if named(&m.node) == Some(owner) => named(&m.peer),
            Importing if named(&m.peer) == Some(owner) => named(&m.node),
            _ => None,
        })
        .map(|t| (true, t))
}
