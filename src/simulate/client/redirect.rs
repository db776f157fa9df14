//! The redirect phase of a client profile: how it follows MOVED and ASK (how many, with or
//! without a separate ASKING round trip, a blocking slot-map refresh, and what happens inside
//! a pipeline), and where a command sent to the client's (possibly stale) map is redirected.

use super::split::{Sub, control};
use super::{Client, Outcome};
use crate::simulate::{Batch, BatchKind};
use crate::topology::{Node, Topology};

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

/// [`same_node`] as lookups: the first position of a matching node.
#[derive(Default)]
struct NodeLookup {
    by_address: std::collections::HashMap<String, usize>,
    by_name_no_address: std::collections::HashMap<String, usize>,
    by_name: std::collections::HashMap<String, usize>,
}

impl NodeLookup {
    fn index(&mut self, i: usize, n: &crate::topology::Node) {
        match &n.address {
            Some(a) => {
                self.by_address.entry(a.clone()).or_insert(i);
            }
            None => {
                self.by_name_no_address.entry(n.name.clone()).or_insert(i);
            }
        }
        self.by_name.entry(n.name.clone()).or_insert(i);
    }

    /// The first indexed node that [`same_node`] matches with `n`.
    fn find(&self, n: &crate::topology::Node) -> Option<usize> {
        match &n.address {
            Some(a) => [self.by_address.get(a), self.by_name_no_address.get(&n.name)]
                .into_iter()
                .flatten()
                .min()
                .copied(),
            None => self.by_name.get(&n.name).copied(),
        }
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
    let named = |s: &str| crate::topology::find_node(nodes, s);
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

/// The waves after the redirects the client meets on the real cluster (`actual`) and follows
/// as its profile says, with the nodes of both maps in one index space (the client's map
/// first, then real nodes it does not know).
pub(super) struct Followed {
    /// Every wave sent, follow-ups included, in order.
    pub waves: Vec<Vec<Sub>>,
    /// Node `i` of the waves.
    pub names: Vec<Node>,
    /// MOVED redirects met.
    pub moved: u64,
    /// ASK redirects met.
    pub ask: u64,
    /// Time the client waits besides the waves (a retry backoff).
    pub extra_latency: f64,
}

/// Follows the redirects of `waves` (errors the application sees go to `errors`).
pub(super) fn follow_redirects(
    b: &Batch,
    topo: &Topology,
    actual: &Topology,
    client: Client,
    waves: Vec<Vec<Sub>>,
    errors: &mut Vec<(Outcome, String)>,
) -> Followed {
    let mut moved_count = 0u64;
    let mut ask_count = 0u64;
    // The nodes of both maps in one index space: the client's map first, then real nodes it
    // does not know.
    let mut names: Vec<crate::topology::Node> = topo.nodes().to_vec();
    let actual_index: Vec<usize> = {
        // [`same_node`] by lookups, not a scan per node: a map of thousands of nodes would
        // cost millions of comparisons per batch. The first matching position wins, as a scan
        // would find it.
        let mut lookup = NodeLookup::default();
        for (i, n) in names.iter().enumerate() {
            lookup.index(i, n);
        }
        let mut out = Vec::with_capacity(actual.nodes().len());
        for n in actual.nodes() {
            out.push(match lookup.find(n) {
                Some(i) => i,
                None => {
                    names.push(n.clone());
                    let i = names.len() - 1;
                    lookup.index(i, n);
                    i
                }
            });
        }
        out
    };
    // Redirects.
    let mut redirected_waves: Vec<Vec<Sub>> = Vec::new();
    let mut extra_latency = 0.0;
    // Follow-up waves are themselves checked (a MOVED can lead to an ASK), so work through a
    // queue with the follow-ups of a wave put first.
    let mut queue: std::collections::VecDeque<Vec<Sub>> = waves.into();
    let limit = client.profile().max_redirects;
    while let Some(mut wave) = queue.pop_front() {
        let original = wave.clone();
        let mut hits: Vec<(Sub, bool, usize)> = Vec::new();
        let mut over_limit: Option<(Sub, bool, usize)> = None;
        for sub in wave.iter_mut() {
            let Some(slot) = sub.slot else { continue };
            if let Some((ask, target)) = redirect(&names[sub.node], actual, slot) {
                let hit = (sub.clone(), ask, actual_index[target]);
                // The node answers with the redirect instead of the keys.
                sub.keys = 0;
                if ask {
                    ask_count += 1;
                } else {
                    moved_count += 1;
                }
                if sub.hops >= limit && client.profile().follow.as_ref().is_some() {
                    over_limit.get_or_insert(hit);
                } else {
                    hits.push(hit);
                }
            }
        }
        redirected_waves.push(wave);
        let mut follow_ups: Vec<Vec<Sub>> = Vec::new();
        let message = |(s, ask, t): &(Sub, bool, usize)| {
            format!(
                "{} {} {}",
                if *ask { "ASK" } else { "MOVED" },
                s.slot.unwrap_or(0),
                names[*t]
                    .address
                    .clone()
                    .unwrap_or_else(|| names[*t].name.clone())
            )
        };
        if let Some(h) = &over_limit {
            errors.push((
                Outcome::ServerError,
                format!(
                    "{} returned to the application: {} follows at most {limit} redirect(s) per \
                     command",
                    message(h),
                    client.name()
                ),
            ));
        }
        if hits.is_empty() {
            continue;
        }
        let Some(follow) = client.profile().follow.as_ref() else {
            errors.push((Outcome::ServerError, format!("{} returned to the application (the proxy does not follow redirects by default)", message(&hits[0]))));
            continue;
        };
        let pipeline = b.kind == BatchKind::Pipeline;
        let asking = |t: usize| control(t, &[b"ASKING"]);
        // A command re-sent after MOVED is checked again at its new node; after ASK (with
        // ASKING) the importing node serves it.
        let retried = |(s, ask, t): &(Sub, bool, usize)| Sub {
            node: *t,
            slot: if *ask { None } else { s.slot },
            hops: s.hops + 1,
            ..s.clone()
        };
        let refresh = |t: usize| control(t, &[b"CLUSTER", b"SLOTS"]);
        let any_moved = hits.iter().any(|h| !h.1);
        match (pipeline, &follow.pipeline) {
            (true, PipeRedirect::NotFollowed) => {
                errors.push((
                    Outcome::ServerError,
                    format!(
                        "{} returned as that command's reply (not followed in a pipeline)",
                        message(&hits[0])
                    ),
                ));
            }
            (true, PipeRedirect::WholeResend) => {
                let same = hits
                    .iter()
                    .all(|h| h.1 == hits[0].1 && h.2 == hits[0].2 && h.0.slot == hits[0].0.slot);
                let read_only = b
                    .ops
                    .iter()
                    .all(|o| READ_ONLY.contains(&o.command.as_str()));
                if same && read_only {
                    let (_, ask, t) = hits[0];
                    let mut again = Vec::new();
                    for sub in &original {
                        if ask {
                            again.push(asking(t));
                        }
                        again.push(Sub {
                            node: t,
                            slot: None,
                            ..sub.clone()
                        });
                    }
                    follow_ups.push(again);
                } else {
                    errors.push((
                        Outcome::ServerError,
                        format!("{} returned as that command's reply (ioredis re-sends a pipeline only when every error is the same redirect and the rest is read-only)", message(&hits[0])),
                    ));
                }
            }
            (true, PipeRedirect::SerialRetry) => {
                if any_moved && follow.blocking_refresh {
                    follow_ups.push(vec![refresh(hits[0].2)]);
                }
                for h in &hits {
                    if h.1 && follow.asking_rtt {
                        follow_ups.push(vec![asking(h.2)]);
                    }
                    let mut w = vec![retried(h)];
                    if h.1 && !follow.asking_rtt {
                        w.insert(0, asking(h.2));
                    }
                    follow_ups.push(w);
                }
            }
            (_, p) => {
                // Each redirected command follows on its own, the redirected ones concurrently.
                if let (PipeRedirect::RetryRound { backoff_ms }, true) = (p, pipeline) {
                    extra_latency += backoff_ms;
                }
                if any_moved && follow.blocking_refresh {
                    let mut targets: Vec<usize> =
                        hits.iter().filter(|h| !h.1).map(|h| h.2).collect();
                    targets.dedup();
                    follow_ups.push(targets.into_iter().take(1).map(refresh).collect());
                }
                if follow.asking_rtt && hits.iter().any(|h| h.1) {
                    redirected_waves
                        .push(hits.iter().filter(|h| h.1).map(|h| asking(h.2)).collect());
                }
                let mut w = Vec::new();
                for h in &hits {
                    if h.1 && !follow.asking_rtt {
                        w.push(asking(h.2));
                    }
                    w.push(retried(h));
                }
                follow_ups.push(w);
            }
        }
        for w in follow_ups.into_iter().rev() {
            queue.push_front(w);
        }
    }
    Followed {
        waves: redirected_waves,
        names,
        moved: moved_count,
        ask: ask_count,
        extra_latency,
    }
}
