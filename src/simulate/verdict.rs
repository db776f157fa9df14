//! What a Redis Cluster answers to a batch sent as written by a client that routes each
//! command to the owner of its keys' slot: the server's own rules, before any client splits
//! anything.
//!
//! - A command whose keys hash to more than one slot is refused with `CROSSSLOT`.
//! - MULTI … EXEC: every key of every queued command must hash to one slot, else `CROSSSLOT`.
//! - A pipeline is its commands, each on its own.
//! - A script (EVAL, EVALSHA, FCALL): its declared keys must share a slot; each command it runs
//!   must address keys of one slot on the node it runs on ("Script attempted to access a non
//!   local key in a cluster node"). Redis 7.4+ also binds a script that does not allow
//!   cross-slot keys to one slot (its declared keys', else the first it touches) and refuses
//!   any other ("Script attempted to access keys that do not hash to the same slot"); Redis
//!   7.0–7.2 and Valkey 8 do not (both checked against real servers). The verdict follows
//!   them and says when Redis 7.4+ would refuse what they run.
//! - A key on a slot no node serves: `CLUSTERDOWN`.
//!
//! A client-side ring (twemproxy, client sharding) has no slots: nothing here applies.
//!
//! A Redis Enterprise / Cloud database behind its proxy places keys by its hashing policy (a
//! key no custom rule matches is refused), runs MGET, MSET, DEL, EXISTS, UNLINK and TOUCH
//! across slots itself (only MGET, EXISTS and TOUCH on Active-Active), and binds every other
//! command, a transaction and a script's declared keys to one slot. A script that touches an
//! undeclared key of another shard gets no error: it reads or writes the key on its own shard.

use super::{Batch, BatchKind};
use crate::slot::key_slot;
use crate::topology::Topology;
use serde::Serialize;

/// The outcome of a batch sent as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerOutcome {
    /// Every command runs.
    Ok,
    /// A command (or the transaction) spans several slots: `CROSSSLOT`.
    Crossslot,
    /// A script touches a key another node owns.
    NonLocalScriptKey,
    /// A key lands on a slot no node serves: `CLUSTERDOWN`.
    Unserved,
    /// A key no rule of the database's custom hashing policy matches: refused.
    Unhashable,
}

impl ServerOutcome {
    /// The name JSON and tables use.
    pub fn name(self) -> &'static str {
        match self {
            ServerOutcome::Ok => "ok",
            ServerOutcome::Crossslot => "crossslot",
            ServerOutcome::NonLocalScriptKey => "non-local-script-key",
            ServerOutcome::Unserved => "unserved",
            ServerOutcome::Unhashable => "unhashable",
        }
    }
}

/// A batch's outcome with the server's words and what caused it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// What happens.
    pub outcome: ServerOutcome,
    /// The error the application sees, as the server words it (None when ok).
    pub message: Option<String>,
    /// Distinct slots the batch's keys hash to (declared keys and keys a script ran).
    pub slots: usize,
    /// The keys of the failing command or script access (at most 8).
    pub keys: Vec<String>,
    /// For a batch generated from a scheme: the verdict over many generated instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<Instances>,
}

/// How a scheme batch fares over many generated instances (other values of its variables).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Instances {
    /// Instances generated.
    pub generated: usize,
    /// Instances the cluster refuses as written.
    pub failing: usize,
    /// `failing / generated`.
    pub share_failing: f64,
    /// Mean distinct nodes an instance's keys land on.
    pub mean_nodes: f64,
}

/// The verdict of a scheme batch over its generated `instances` (the first is the one shown):
/// refused when any instance is, with the share in the message. The instances are judged one
/// at a time as they come: memory of one instance, whatever their number and size.
pub fn over_instances(
    instances: impl IntoIterator<Item = Batch>,
    topo: &Topology,
) -> Option<Verdict> {
    let mut first: Option<Verdict> = None;
    let mut first_failing: Option<Verdict> = None;
    let (mut generated, mut failing, mut nodes_sum) = (0usize, 0usize, 0.0f64);
    // Per node, the last instance that touched it (the nodes an instance lands on, counted
    // without a sort), and the slot of each key of the instance as the verdict found it.
    let mut touched_by: Vec<usize> = vec![usize::MAX; topo.nodes().len()];
    let mut slot_of: Vec<Option<u16>> = Vec::new();
    for b in instances {
        let v = judge(&b, topo, &mut slot_of);
        let mut touched = 0usize;
        let mut touch = |n: usize| {
            if let Some(t) = touched_by.get_mut(n)
                && *t != generated
            {
                *t = generated;
                touched += 1;
            }
        };
        match topo.slot_map() {
            // The declared keys come first, each with its slot.
            Some(map) => slot_of
                .iter()
                .take(b.ops.iter().map(|o| o.keys.len()).sum())
                .filter_map(|s| map.owner_of_slot((*s)?))
                .for_each(&mut touch),
            None => b
                .keys()
                .filter_map(|k| topo.node_of(k))
                .for_each(&mut touch),
        }
        nodes_sum += touched as f64;
        generated += 1;
        if v.outcome != ServerOutcome::Ok {
            failing += 1;
            if first_failing.is_none() {
                first_failing = Some(v.clone());
            }
        }
        if first.is_none() {
            first = Some(v);
        }
    }
    let first = first?;
    let stats = Instances {
        generated,
        failing,
        share_failing: failing as f64 / generated as f64,
        mean_nodes: nodes_sum / generated as f64,
    };
    let mut v = match first_failing {
        Some(mut v) => {
            v.message = Some(format!(
                "{} (in {failing} of {generated} generated instances, {:.0}%)",
                v.message.unwrap_or_default(),
                stats.share_failing * 100.0
            ));
            v
        }
        None => first,
    };
    v.instances = Some(stats);
    Some(v)
}

const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
const NON_LOCAL: &str = "Script attempted to access a non local key in a cluster node";
const SCRIPT_SLOT: &str = "Script attempted to access keys that do not hash to the same slot";

fn shown(keys: &[&[u8]]) -> Vec<String> {
    keys.iter()
        .take(8)
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect()
}

fn distinct(slots: impl Iterator<Item = u16>) -> Vec<u16> {
    let mut v: Vec<u16> = slots.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// How many distinct slots are among `slots`: sorted for a few, a bit per slot for many (a
/// sort of a million-key batch's slots was its cost).
fn count_distinct(slots: impl Iterator<Item = u16> + Clone) -> usize {
    if slots.clone().nth(64).is_none() {
        return distinct(slots).len();
    }
    let mut seen = vec![0u64; 1 << 10];
    let mut n = 0;
    for s in slots {
        let (w, bit) = (usize::from(s >> 6), 1u64 << (s & 63));
        if seen[w] & bit == 0 {
            seen[w] |= bit;
            n += 1;
        }
    }
    n
}

/// What the cluster `topo` answers to `b` sent as written.
pub fn as_written(b: &Batch, topo: &Topology) -> Verdict {
    judge(b, topo, &mut Vec::new())
}

/// [`as_written`], leaving in `slot_of` the slot of each of the batch's keys on a slot map (its
/// declared keys in order, then those its script ran; empty on a ring), each worked out once.
fn judge(b: &Batch, topo: &Topology, slot_of: &mut Vec<Option<u16>>) -> Verdict {
    slot_of.clear();
    let all: Vec<&[u8]> = b
        .keys()
        .chain(b.script_ran.iter().flatten().map(Vec::as_slice))
        .collect();
    let Some(map) = topo.slot_map() else {
        let slots = count_distinct(all.iter().map(|k| key_slot(k)));
        return Verdict {
            outcome: ServerOutcome::Ok,
            message: None,
            slots,
            keys: Vec::new(),
            instances: None,
        };
    };
    slot_of.extend(all.iter().map(|k| map.slot_of(k)));
    let sl: &[Option<u16>] = slot_of;
    let slots = count_distinct(sl.iter().flatten().copied());
    let verdict = |outcome: ServerOutcome, message: Option<&str>, keys: &[&[u8]]| Verdict {
        outcome,
        message: message.map(str::to_string),
        slots,
        keys: shown(keys),
        instances: None,
    };
    let enterprise = map.enterprise();
    if let Some(i) = sl.iter().position(Option::is_none) {
        use crate::topology::enterprise::Placement;
        let k = all[i];
        let m = match enterprise.map(|e| (e, e.hashing.placement(k))) {
            Some((e, Placement::GaveUp { rule })) => format!(
                "rule {rule} `{}` of the database's {} hashing policy could not be matched on the key within {} backtracking steps: where the database puts it is unknown, so it is unplaced",
                e.hashing.rules()[rule - 1].source,
                e.hashing.name(),
                crate::topology::enterprise::MATCH_LIMIT
            ),
            _ => "the key matches no rule of the database's custom hashing policy, so the database refuses it".to_string(),
        };
        return verdict(ServerOutcome::Unhashable, Some(&m), &[k]);
    }
    // Every key has a slot from here on.
    let slot = |i: usize| sl[i].unwrap_or(0);
    if let Some(i) = (0..all.len()).find(|&i| map.owner_of_slot(slot(i)).is_none()) {
        let m = format!("CLUSTERDOWN Hash slot not served (slot {})", slot(i));
        return Verdict {
            message: Some(m),
            ..verdict(ServerOutcome::Unserved, None, &[all[i]])
        };
    }
    // The commands the server checks one by one (a transaction is checked as one), as ranges
    // of `all`. A Redis Enterprise proxy runs some commands across slots itself.
    let declared = b.ops.iter().map(|o| o.keys.len()).sum::<usize>();
    let groups: Vec<std::ops::Range<usize>> = match b.kind {
        BatchKind::Multi => std::iter::once(0..declared).collect(),
        _ => {
            let mut at = 0;
            let mut out = Vec::new();
            for o in &b.ops {
                let r = at..at + o.keys.len();
                at = r.end;
                if !enterprise.is_some_and(|e| e.accepts_cross_slot(&o.command)) {
                    out.push(r);
                }
            }
            out
        }
    };
    for g in groups {
        if g.clone().any(|i| slot(i) != slot(g.start)) {
            return verdict(ServerOutcome::Crossslot, Some(CROSSSLOT), &all[g]);
        }
    }
    if let Some(e) = enterprise
        && b.kind == BatchKind::Script
        && !b.script_ran.is_empty()
    {
        return enterprise_script(b, map, e, &verdict);
    }
    // A script that declares no keys and whose body touches (or may touch) keys: the client
    // sends it to any node, and every node but the owner of its keys refuses them.
    if b.kind == BatchKind::Script
        && declared == 0
        && b.script_ran.is_empty()
        && let Some(u) = &b.no_keys
        && topo.nodes().len() > 1
    {
        let n = topo.nodes().len();
        let ks: Vec<&[u8]> = u.keys.iter().map(Vec::as_slice).collect();
        let owners = distinct(
            ks.iter()
                .filter_map(|k| map.slot_of(k).and_then(|s| map.owner_of_slot(s)))
                .map(|o| o as u16),
        );
        let runs = match owners.as_slice() {
            [] => format!("on {n} nodes, only the owner of the keys it touches runs it"),
            [o] => format!(
                "on {n} nodes, only {} (the owner of {}) runs it",
                topo.nodes()[usize::from(*o)].name,
                shown(&ks).join(" ")
            ),
            _ => format!(
                "its keys live on {} of {n} nodes: no node runs it whole",
                owners.len()
            ),
        };
        return Verdict {
            message: Some(format!("{}; {runs}", u.problem())),
            slots: count_distinct(ks.iter().filter_map(|k| map.slot_of(k))),
            ..verdict(ServerOutcome::NonLocalScriptKey, None, &ks)
        };
    }
    if b.kind != BatchKind::Script || b.script_ran.is_empty() {
        return verdict(ServerOutcome::Ok, None, &[]);
    }
    // The script runs on its declared keys' node (with none declared, on whichever node the
    // client picked: the first command decides whether that can work at all).
    let declared_slot: Option<u16> = (declared > 0).then(|| slot(0));
    let mut bound: Option<u16> = declared_slot;
    let mut stricter = None;
    let node = declared_slot.and_then(|s| map.owner_of_slot(s));
    let mut at = declared;
    for keys in &b.script_ran {
        let r = at..at + keys.len();
        at = r.end;
        let ks = &all[r.clone()];
        let own = distinct(r.map(slot));
        if own.is_empty() {
            continue;
        }
        let owners = distinct(
            own.iter()
                .filter_map(|&s| map.owner_of_slot(s).map(|n| n as u16)),
        );
        let here = match node {
            Some(n) => owners.len() == 1 && usize::from(owners[0]) == n,
            None => owners.len() == 1,
        };
        if own.len() > 1 || !here {
            // Not all on the script's node (a command over several slots is refused the same
            // way): the server's words are Redis 7.0's.
            return verdict(ServerOutcome::NonLocalScriptKey, Some(NON_LOCAL), ks);
        }
        if b.allow_cross_slot {
            continue;
        }
        // Redis 7.4+ binds the script to its declared keys' slot (or the first
        // slot it touches) and refuse any other; Redis 7.0–7.2 and Valkey 8 do not check.
        match bound {
            None => bound = Some(own[0]),
            Some(s) if s != own[0] && stricter.is_none() => stricter = Some(ks.to_vec()),
            Some(_) => {}
        }
    }
    if declared_slot.is_none() {
        // Keys touched, none declared: it works only where the client happens to send it.
        let n = topo.nodes().len();
        if n > 1 {
            let ks = &all[declared..];
            return Verdict {
                message: Some(format!(
                    "{NON_LOCAL} (the script declares no keys, so a cluster client sends it to any of {n} nodes; it runs only on the owner of slot {})",
                    bound.unwrap_or(0)
                )),
                ..verdict(ServerOutcome::NonLocalScriptKey, None, ks)
            };
        }
    }
    match stricter {
        Some(ks) => Verdict {
            message: Some(format!(
                "runs on Redis 7.0–7.2 and Valkey 8, but Redis 7.4+ refuses it: {SCRIPT_SLOT} (the script touches more than one slot)"
            )),
            ..verdict(ServerOutcome::Ok, None, &ks)
        },
        None => verdict(ServerOutcome::Ok, None, &[]),
    }
}

/// Builds a verdict from an outcome, the server's words and the keys that caused it.
type VerdictOf<'a> = dyn Fn(ServerOutcome, Option<&str>, &[&[u8]]) -> Verdict + 'a;

/// A script on a Redis Enterprise database: it runs on its declared keys' shard (with none
/// declared, on the shard the proxy picks), and a key it touches that another shard owns is
/// read or written there anyway, without an error.
fn enterprise_script(
    b: &Batch,
    map: &crate::topology::SlotMap,
    e: &crate::topology::enterprise::Enterprise,
    verdict: &VerdictOf<'_>,
) -> Verdict {
    let shard = |k: &[u8]| map.slot_of(k).and_then(|s| map.owner_of_slot(s));
    let home = b.keys().next().map(shard);
    let touched: Vec<&[u8]> = b.script_ran.iter().flatten().map(Vec::as_slice).collect();
    let shards = map.nodes().len();
    let stray = match home {
        Some(h) => touched.iter().find(|k| shard(k) != h),
        None if shards > 1 => touched.first(),
        None => None,
    };
    let Some(k) = stray else {
        return verdict(ServerOutcome::Ok, None, &[]);
    };
    let why = match home {
        Some(_) => format!(
            "no error is returned: the script runs on its declared keys' shard and reads or writes {}, which another shard owns, on that shard ({})",
            String::from_utf8_lossy(k),
            e.describe()
        ),
        None => format!(
            "no error is returned: the script declares no keys, so it runs on whichever of {shards} shards the proxy picks, and reads or writes {} there even where another shard owns it ({})",
            String::from_utf8_lossy(k),
            e.describe()
        ),
    };
    Verdict {
        message: Some(why),
        ..verdict(ServerOutcome::NonLocalScriptKey, None, &touched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::parse_batches;
    use crate::topology::SlotMap;

    fn verdict_of(line: &str) -> ServerOutcome {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        as_written(&parse_batches(line).unwrap()[0], &t).outcome
    }

    #[test]
    fn the_servers_rules() {
        assert_eq!(verdict_of("MGET {u}a {u}b"), ServerOutcome::Ok);
        assert_eq!(verdict_of("MGET a b"), ServerOutcome::Crossslot);
        assert_eq!(verdict_of("BLPOP q1 q2 0"), ServerOutcome::Crossslot);
        assert_eq!(verdict_of("RENAME {x}a {x}b"), ServerOutcome::Ok);
        assert_eq!(verdict_of("PIPELINE GET a; GET b"), ServerOutcome::Ok);
        assert_eq!(
            verdict_of("PIPELINE GET a; MGET a b"),
            ServerOutcome::Crossslot
        );
        assert_eq!(
            verdict_of("MULTI SET a 1; SET b 2"),
            ServerOutcome::Crossslot
        );
        assert_eq!(
            verdict_of("MULTI SET {a}1 1; SET {a}2 2"),
            ServerOutcome::Ok
        );
        assert_eq!(verdict_of("EVAL s 2 a b"), ServerOutcome::Crossslot);
    }

    #[test]
    fn scripts_that_touch_undeclared_keys() {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let mut b = parse_batches("EVAL s 1 {u}a").unwrap()[0].clone();
        b.script_ran = vec![vec![b"{u}b".to_vec()]];
        assert_eq!(as_written(&b, &t).outcome, ServerOutcome::Ok);
        // "b" (slot 3300, master-0) is not on {u}'s master (slot 11826, master-2).
        b.script_ran = vec![vec![b"b".to_vec()]];
        assert_eq!(as_written(&b, &t).outcome, ServerOutcome::NonLocalScriptKey);
        // Same node, other slots: Redis 7.0 and Valkey 8 run it, Redis 7.4+ refuses it (said
        // in the message) unless the script allows cross-slot keys.
        let same_node: Vec<Vec<u8>> = (0u32..)
            .map(|i| format!("k{i}").into_bytes())
            .filter(|k| key_slot(k) != key_slot(b"{u}a") && t.node_of(k) == t.node_of(b"{u}a"))
            .take(2)
            .collect();
        assert_ne!(key_slot(&same_node[0]), key_slot(&same_node[1]));
        b.script_ran = vec![vec![same_node[0].clone()]];
        let v = as_written(&b, &t);
        assert_eq!(v.outcome, ServerOutcome::Ok);
        assert!(v.message.unwrap().contains("Redis 7.4+ refuses it"));
        b.script_ran = vec![vec![same_node[0].clone()], vec![same_node[1].clone()]];
        assert_eq!(as_written(&b, &t).outcome, ServerOutcome::Ok);
        b.allow_cross_slot = true;
        assert_eq!(as_written(&b, &t).message, None);
        assert_eq!(as_written(&b, &t).outcome, ServerOutcome::Ok);
    }

    fn enterprise(hashing: crate::topology::enterprise::HashingPolicy, aa: bool) -> Topology {
        Topology::Cluster(SlotMap::from_masters(3).unwrap().with_enterprise(
            crate::topology::enterprise::Enterprise {
                hashing,
                active_active: aa,
            },
        ))
    }

    #[test]
    fn the_enterprise_proxy_splits_six_commands_and_binds_the_rest() {
        use crate::topology::enterprise::HashingPolicy;
        let t = enterprise(HashingPolicy::Redis, false);
        let v = |line: &str, t: &Topology| as_written(&parse_batches(line).unwrap()[0], t).outcome;
        for line in [
            "MGET a b",
            "MSET a 1 b 2",
            "DEL a b",
            "EXISTS a b",
            "UNLINK a b",
            "TOUCH a b",
            "PIPELINE GET a; MGET a b",
        ] {
            assert_eq!(v(line, &t), ServerOutcome::Ok, "{line}");
        }
        assert_eq!(v("SUNION a b", &t), ServerOutcome::Crossslot);
        assert_eq!(v("MULTI SET a 1; SET b 2", &t), ServerOutcome::Crossslot);
        assert_eq!(v("MULTI MGET a b", &t), ServerOutcome::Crossslot);
        assert_eq!(v("EVAL s 2 a b", &t), ServerOutcome::Crossslot);
        // Active-Active: only the read-only ones.
        let aa = enterprise(HashingPolicy::Redis, true);
        assert_eq!(v("MGET a b", &aa), ServerOutcome::Ok);
        assert_eq!(v("EXISTS a b", &aa), ServerOutcome::Ok);
        assert_eq!(v("MSET a 1 b 2", &aa), ServerOutcome::Crossslot);
        assert_eq!(v("DEL a b", &aa), ServerOutcome::Crossslot);
        // A custom policy: a key no rule matches is refused.
        let c = enterprise(
            HashingPolicy::custom(&[r"user:(?<tag>\d+):.*"]).unwrap(),
            false,
        );
        assert_eq!(
            v("MULTI SET user:1:a 1; SET user:1:b 2", &c),
            ServerOutcome::Ok
        );
        assert_eq!(
            v("MULTI SET user:1:a 1; SET user:2:b 2", &c),
            ServerOutcome::Crossslot
        );
        assert_eq!(v("GET other", &c), ServerOutcome::Unhashable);
    }

    #[test]
    fn an_enterprise_script_off_its_shard_gets_no_error_but_is_flagged() {
        use crate::topology::enterprise::HashingPolicy;
        let t = enterprise(HashingPolicy::Redis, false);
        let mut b = parse_batches("EVAL s 1 {u}a").unwrap()[0].clone();
        b.script_ran = vec![vec![b"{u}b".to_vec()]];
        assert_eq!(as_written(&b, &t).outcome, ServerOutcome::Ok);
        // "b" lives on another shard than {u}.
        b.script_ran = vec![vec![b"b".to_vec()]];
        let v = as_written(&b, &t);
        assert_eq!(v.outcome, ServerOutcome::NonLocalScriptKey);
        assert!(v.message.unwrap().starts_with("no error is returned"));
    }
}
