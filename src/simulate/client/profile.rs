//! One row of facts per client profile: its names and versions, where it runs, how it splits a
//! command whose keys span slots, what it refuses, how it follows redirects, and how it sends a
//! pipeline and MULTI…EXEC. The phases (`split`, `waves`, `redirect`) read these rows and never
//! ask which client they have. A new client is one more row, and every field must be filled:
//! the row is a struct literal.

use super::Client;
use super::redirect::{Follow, PipeRedirect};
use super::split::SplitUnit;

/// A library version: (major, minor, patch).
pub(super) type Version = (u32, u32, u32);

/// Everything keyplan models of one client library or proxy.
pub(super) struct Profile {
    /// The name on the command line.
    pub(super) name: &'static str,
    /// The versions modelled, in words.
    pub(super) models: &'static str,
    /// The library this profile is a version range of (`NAME@VERSION` picks by range):
    /// its name, the first version modelled and the first past the range. `None`: the
    /// profile is picked by its own name only.
    pub(super) versions: Option<(&'static str, Version, Version)>,
    /// Other profiles the bare name also stands for (redis-py's splitting API).
    pub(super) also: &'static [Client],
    /// Which topologies it runs on.
    pub(super) serves: Serves,
    /// A proxy: one hop client → proxy, then proxy → servers.
    pub(super) proxy: bool,
    /// How it sends a multi-key command whose keys span slots (servers).
    pub(super) split: Split,
    /// The error it raises itself for a multi-slot command it does not split (else the
    /// server answers CROSSSLOT).
    pub(super) refusal: Option<Words>,
    /// Redirects it follows for one command before the application sees the error.
    pub(super) max_redirects: u8,
    /// How it follows MOVED and ASK (`None`: it does not).
    pub(super) follow: Option<Follow>,
    /// How it sends a pipeline.
    pub(super) pipeline: Pipeline,
    /// How it sends MULTI…EXEC.
    pub(super) multi: Multi,
}

/// The topologies a profile runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Serves {
    /// A Redis Cluster slot map.
    Cluster,
    /// A client-side ring of plain servers.
    Ring,
    /// Either.
    Both,
}

/// How a client splits a multi-key command whose keys span several slots (servers).
pub(super) struct Split {
    /// The commands it splits (others go whole).
    pub(super) commands: &'static [&'static str],
    /// Into what.
    pub(super) unit: SplitUnit,
    /// The parts go one after another, each a full round trip (else all at once).
    pub(super) serial: bool,
}

/// An error message, fixed or naming the command.
#[derive(Debug, Clone, Copy)]
pub(super) enum Words {
    /// These words.
    Fixed(&'static str),
    /// The first words, the command, the last words.
    Around(&'static str, &'static str),
}

impl Words {
    /// The message for `command`.
    pub(super) fn say(self, command: &str) -> String {
        match self {
            Words::Fixed(w) => w.to_string(),
            Words::Around(before, after) => format!("{before}{command}{after}"),
        }
    }
}

/// A check a client makes on a whole pipeline (or transaction) before sending it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Precheck {
    /// ioredis: every command's keys in one slot, and every command's first key on one node.
    SlotsAndOneNode,
    /// Every key of the batch in one slot, else the message.
    OneSlot(&'static str),
}

/// How a client sends a pipeline.
pub(super) enum Pipeline {
    /// It has no cluster pipeline.
    Unsupported(&'static str),
    /// Refuses a command whose keys span slots (with `split_refusal` for one it splits
    /// elsewhere, else its own refusal), groups the commands per node and reads the nodes
    /// `readers` at a time (Jedis `ClusterPipeline`: `sync()` on 3 worker threads).
    PerNode {
        /// Nodes read at once.
        readers: usize,
        /// The error for a command the client splits outside a pipeline.
        split_refusal: Option<Words>,
    },
    /// Every command must address one slot (the client's refusal names the first that does
    /// not), then all are sent at once.
    EachOneSlot,
    /// The whole pipeline is checked first, then sent at once.
    Checked(Precheck),
    /// Commands the pipeline refuses outright; a multi-slot command goes whole and the server
    /// answers CROSSSLOT for it alone.
    ServerDecides {
        /// The commands refused.
        illegal: &'static [&'static str],
        /// The refusal, around the command.
        refusal: Words,
    },
    /// Each command handled as it would be alone (split where the client splits, else routed
    /// by its first key), everything in flight at once.
    AsAlone,
}

/// How a client sends MULTI…EXEC.
pub(super) enum Multi {
    /// How it runs a transaction on a cluster is not known.
    NotModelled,
    /// The proxy answers MULTI itself with this error: one round trip.
    ProxyRefuses(&'static str),
    /// The client refuses every transaction in cluster mode.
    Refused(&'static str),
    /// MULTI, the commands and EXEC on the node of the first keyed command; when the keys span
    /// slots the client may refuse first (else the server answers EXECABORT).
    OneNode(Option<Precheck>),
    /// Each node's commands in their own MULTI/EXEC, the nodes in parallel (Redisson's atomic
    /// `RBatch`).
    PerNode,
    /// The code that sent MULTI calls `pipeline()`, which on a cluster is a plain pipeline
    /// (redis-py's `transaction=None`): run as such, and say that atomicity is lost.
    PlainPipeline,
}

const JEDIS_SAME_SLOT: Words =
    Words::Fixed("JedisClusterOperationException: Keys must belong to same hashslot.");
const STACKEXCHANGE_SAME_SLOT: &str = "RedisCommandException: Multi-key operations must involve a \
     single slot; keys can use 'hash tags' to help this, i.e. '{/users/12345}/account' and \
     '{/users/12345}/contacts' will always be in the same slot";
const CROSSED_SLOTS: &str = "CrossSlot: Received crossed slots in pipeline";
const SPLIT_DEL: &[&str] = &["DEL", "EXISTS", "UNLINK", "TOUCH"];
const SPLIT_SIX: &[&str] = &["DEL", "UNLINK", "EXISTS", "TOUCH", "MGET", "MSET"];

impl Client {
    /// This client's row.
    pub(super) fn profile(self) -> &'static Profile {
        match self {
            Client::Jedis3 => &JEDIS3,
            Client::Jedis => &JEDIS,
            Client::Jedis8 => &JEDIS8,
            Client::Lettuce => &LETTUCE,
            Client::RedisPy => &REDIS_PY,
            Client::RedisPyNonatomic => &REDIS_PY_NONATOMIC,
            Client::GoRedis => &GO_REDIS,
            Client::Ioredis => &IOREDIS,
            Client::NodeRedis => &NODE_REDIS,
            Client::RedisRs => &REDIS_RS,
            Client::RedisRsAsync => &REDIS_RS_ASYNC,
            Client::StackExchange => &STACKEXCHANGE,
            Client::Redisson => &REDISSON,
            Client::Twemproxy => &TWEMPROXY,
            Client::Envoy => &ENVOY,
        }
    }
}

/// Splitting nothing: every multi-key command goes whole.
const WHOLE: Split = Split {
    commands: &[],
    unit: SplitUnit::Slot,
    serial: false,
};

/// Jedis's redirect handling: maxAttempts 5, `ASKING` its own round trip, MOVED renews the
/// slot cache before the retry, a `ClusterPipeline` returns redirects as replies.
const JEDIS_FOLLOW: Option<Follow> = Some(Follow {
    asking_rtt: true,
    blocking_refresh: true,
    pipeline: PipeRedirect::NotFollowed,
});

/// Follows each redirect per command, concurrently, without a blocking refresh.
const PER_COMMAND: Option<Follow> = Some(Follow {
    asking_rtt: false,
    blocking_refresh: false,
    pipeline: PipeRedirect::PerCommand,
});

const JEDIS3: Profile = Profile {
    name: "jedis3",
    models: "Jedis 3.x JedisCluster",
    versions: Some(("jedis", (3, 0, 0), (4, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: WHOLE,
    refusal: Some(Words::Fixed(
        "JedisClusterOperationException: No way to dispatch this command to Redis Cluster \
         because keys have different slots.",
    )),
    max_redirects: 4,
    follow: JEDIS_FOLLOW,
    pipeline: Pipeline::Unsupported("Jedis 3.x has no cluster pipeline"),
    multi: Multi::NotModelled,
};

const JEDIS: Profile = Profile {
    name: "jedis",
    models: "Jedis 4.4-7.x JedisCluster, ClusterPipeline",
    versions: Some(("jedis", (4, 4, 0), (8, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: WHOLE,
    refusal: Some(JEDIS_SAME_SLOT),
    max_redirects: 4,
    follow: JEDIS_FOLLOW,
    pipeline: Pipeline::PerNode {
        readers: 3,
        split_refusal: None,
    },
    multi: Multi::NotModelled,
};

const JEDIS8: Profile = Profile {
    name: "jedis8",
    models: "Jedis 8.0 RedisClusterClient",
    versions: Some(("jedis", (8, 0, 0), (9, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: Split {
        commands: &["DEL", "EXISTS", "MGET", "MSET", "TOUCH", "UNLINK", "MSETEX"],
        unit: SplitUnit::Runs,
        serial: true,
    },
    refusal: Some(JEDIS_SAME_SLOT),
    max_redirects: 4,
    follow: JEDIS_FOLLOW,
    pipeline: Pipeline::PerNode {
        readers: 3,
        split_refusal: Some(Words::Around(
            "UnsupportedOperationException: ",
            " cannot be routed to a single slot in a ClusterPipeline",
        )),
    },
    multi: Multi::NotModelled,
};

const LETTUCE: Profile = Profile {
    name: "lettuce",
    models: "Lettuce 4.x-7.x advanced cluster commands",
    versions: Some(("lettuce", (4, 0, 0), (8, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: Split {
        commands: &[
            "DEL", "EXISTS", "MGET", "MSET", "TOUCH", "UNLINK", "MSETNX", "MSETEX",
        ],
        unit: SplitUnit::Slot,
        serial: false,
    },
    refusal: None,
    max_redirects: 5,
    follow: PER_COMMAND,
    pipeline: Pipeline::AsAlone,
    multi: Multi::NotModelled,
};

/// redis-py `RedisCluster`: TTL 16 (15 redirects), `ASKING` its own round trip, redirected
/// pipeline commands re-sent one after another.
const REDIS_PY_FOLLOW: Option<Follow> = Some(Follow {
    asking_rtt: true,
    blocking_refresh: false,
    pipeline: PipeRedirect::SerialRetry,
});

const REDIS_PY: Profile = Profile {
    name: "redis-py",
    models: "redis-py 6.1-8.x RedisCluster (sync): mget, mset, delete…",
    versions: Some(("redis-py", (6, 1, 0), (9, 0, 0))),
    also: &[Client::RedisPyNonatomic],
    serves: Serves::Cluster,
    proxy: false,
    split: Split {
        commands: SPLIT_DEL,
        unit: SplitUnit::Slot,
        serial: false,
    },
    refusal: Some(Words::Around(
        "RedisClusterException: ",
        " - all keys must map to the same key slot",
    )),
    max_redirects: 15,
    follow: REDIS_PY_FOLLOW,
    pipeline: Pipeline::EachOneSlot,
    multi: Multi::PlainPipeline,
};

const REDIS_PY_NONATOMIC: Profile = Profile {
    name: "redis-py-nonatomic",
    models: "redis-py 6.1-8.x RedisCluster: mget_nonatomic, mset_nonatomic",
    versions: Some(("redis-py", (6, 1, 0), (9, 0, 0))),
    also: &[],
    split: Split {
        commands: &["DEL", "EXISTS", "UNLINK", "TOUCH", "MGET", "MSET"],
        ..REDIS_PY.split
    },
    ..REDIS_PY
};

const GO_REDIS: Profile = Profile {
    name: "go-redis",
    models: "go-redis v9.11+ ClusterClient, default resolver",
    versions: Some(("go-redis", (9, 11, 0), (10, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: WHOLE,
    refusal: None,
    max_redirects: 3,
    // go-redis sleeps a jittered backoff below MinRetryBackoff (10 ms) before the retry round:
    // modelled by its expected value.
    follow: Some(Follow {
        asking_rtt: false,
        blocking_refresh: false,
        pipeline: PipeRedirect::RetryRound { backoff_ms: 5.0 },
    }),
    pipeline: Pipeline::AsAlone,
    multi: Multi::OneNode(Some(Precheck::OneSlot(
        "ErrCrossSlot: TxPipeline keys span several slots (go-redis v9.11+)",
    ))),
};

const IOREDIS: Profile = Profile {
    name: "ioredis",
    models: "ioredis 4-6 Cluster",
    versions: Some(("ioredis", (4, 0, 0), (7, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: WHOLE,
    refusal: None,
    max_redirects: 16,
    follow: Some(Follow {
        asking_rtt: false,
        blocking_refresh: false,
        pipeline: PipeRedirect::WholeResend,
    }),
    pipeline: Pipeline::Checked(Precheck::SlotsAndOneNode),
    multi: Multi::OneNode(Some(Precheck::SlotsAndOneNode)),
};

const NODE_REDIS: Profile = Profile {
    name: "node-redis",
    models: "node-redis, @redis/client 6.2+",
    versions: Some(("node-redis", (6, 2, 0), (7, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: Split {
        commands: SPLIT_SIX,
        unit: SplitUnit::Slot,
        serial: false,
    },
    refusal: None,
    max_redirects: 16,
    follow: Some(Follow {
        asking_rtt: false,
        blocking_refresh: true,
        pipeline: PipeRedirect::PerCommand,
    }),
    pipeline: Pipeline::AsAlone,
    multi: Multi::OneNode(None),
};

/// redis-rs splits these when their keys span slots.
const REDIS_RS_SPLITS: &[&str] = &["MGET", "DEL", "EXISTS", "UNLINK", "TOUCH", "WATCH", "MSET"];

const REDIS_RS: Profile = Profile {
    name: "redis-rs",
    models: "redis-rs 0.23.4+ ClusterConnection (sync)",
    versions: Some(("redis-rs", (0, 23, 4), (2, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: Split {
        commands: REDIS_RS_SPLITS,
        unit: SplitUnit::Slot,
        serial: true,
    },
    refusal: None,
    max_redirects: 16,
    follow: Some(Follow {
        asking_rtt: true,
        blocking_refresh: true,
        pipeline: PipeRedirect::SerialRetry,
    }),
    pipeline: Pipeline::ServerDecides {
        illegal: super::split::REDIS_RS_PIPELINE_ILLEGAL,
        refusal: Words::Around(
            "This command cannot be safely routed in cluster mode - Client: Command '",
            "' can't be executed in a cluster pipeline.",
        ),
    },
    multi: Multi::Refused("atomic pipelines are not supported in cluster mode (redis-rs sync)"),
};

const REDIS_RS_ASYNC: Profile = Profile {
    name: "redis-rs-async",
    models: "redis-rs 0.23.4+ async cluster",
    versions: Some(("redis-rs-async", (0, 23, 4), (2, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: Split {
        commands: REDIS_RS_SPLITS,
        unit: SplitUnit::Slot,
        serial: false,
    },
    refusal: None,
    max_redirects: 16,
    follow: PER_COMMAND,
    pipeline: Pipeline::Checked(Precheck::OneSlot(CROSSED_SLOTS)),
    multi: Multi::OneNode(Some(Precheck::OneSlot(CROSSED_SLOTS))),
};

const STACKEXCHANGE: Profile = Profile {
    name: "stackexchange",
    models: "StackExchange.Redis 2.x (IBatch, ITransaction)",
    versions: Some(("stackexchange", (2, 0, 0), (3, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: WHOLE,
    refusal: Some(Words::Fixed(STACKEXCHANGE_SAME_SLOT)),
    max_redirects: 1,
    follow: PER_COMMAND,
    pipeline: Pipeline::EachOneSlot,
    multi: Multi::OneNode(Some(Precheck::OneSlot(STACKEXCHANGE_SAME_SLOT))),
};

const REDISSON: Profile = Profile {
    name: "redisson",
    models: "Redisson 3.x (RBuckets, RKeys, RBatch)",
    versions: Some(("redisson", (3, 0, 0), (4, 0, 0))),
    also: &[],
    serves: Serves::Cluster,
    proxy: false,
    split: Split {
        commands: &["MGET", "MSET", "DEL", "UNLINK", "EXISTS", "TOUCH"],
        unit: SplitUnit::Slot,
        serial: false,
    },
    refusal: None,
    max_redirects: u8::MAX,
    follow: PER_COMMAND,
    pipeline: Pipeline::AsAlone,
    multi: Multi::PerNode,
};

const TWEMPROXY: Profile = Profile {
    name: "twemproxy",
    models: "twemproxy 0.4+",
    versions: Some(("twemproxy", (0, 4, 0), (1, 0, 0))),
    also: &[],
    serves: Serves::Ring,
    proxy: true,
    split: Split {
        commands: &["MGET", "DEL", "UNLINK", "TOUCH", "MSET"],
        unit: SplitUnit::Server,
        serial: false,
    },
    refusal: None,
    // Its backends are plain servers.
    max_redirects: 0,
    follow: None,
    pipeline: Pipeline::AsAlone,
    multi: Multi::ProxyRefuses("twemproxy does not support MULTI"),
};

const ENVOY: Profile = Profile {
    name: "envoy",
    models: "Envoy redis_proxy",
    versions: None,
    also: &[],
    serves: Serves::Both,
    proxy: true,
    split: Split {
        commands: &["MGET", "MSET", "DEL", "EXISTS", "TOUCH", "UNLINK"],
        unit: SplitUnit::Key,
        serial: false,
    },
    refusal: None,
    // It follows redirects only with enable_redirection, off by default.
    max_redirects: 0,
    follow: None,
    pipeline: Pipeline::AsAlone,
    multi: Multi::OneNode(None),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_consistent() {
        let mut names: Vec<&str> = Client::ALL.iter().map(|c| c.profile().name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Client::ALL.len(), "two rows share a name");
        for c in Client::ALL {
            let p = c.profile();
            // A client that follows no redirect has no redirect budget, and the reverse.
            assert_eq!(p.follow.is_none(), p.max_redirects == 0, "{}", p.name);
            // Only a proxy serves a ring.
            assert!(p.serves == Serves::Cluster || p.proxy, "{}", p.name);
            // A client that splits nothing splits into nothing in particular.
            if p.split.commands.is_empty() {
                assert!(
                    !p.split.serial && p.split.unit == SplitUnit::Slot,
                    "{}",
                    p.name
                );
            }
            // Profiles a bare name also stands for are of the same library.
            for &other in p.also {
                assert_eq!(
                    other.profile().versions.map(|v| v.0),
                    p.versions.map(|v| v.0),
                    "{}",
                    p.name
                );
            }
        }
    }
}
