//! What `keyplan verify` reads from a cluster: every master's keys in every slot (owned or
//! not), and how the owner of their slot has given keys (there, with an expiry or not).

use super::{LiveCluster, LiveError, MAX_PLAUSIBLE_KEYS, host_port, node_error, pace};
use crate::migrate::verify::{KeyState, LiveNode, Observed};
use crate::slot::SLOT_COUNT;
use redis::Value;
use std::time::Instant;

/// Commands sent per round trip (fewer at a rate below it, so that every second keeps to it).
const PIPELINE: usize = 1024;

/// Commands per round trip at `rate` commands per second.
fn pipeline(rate: Option<f64>) -> usize {
    rate.map_or(PIPELINE, |r| (r as usize).clamp(1, PIPELINE))
}

impl LiveCluster {
    /// The masters, each slot's owner and open markers (every master's), and every master's
    /// key count in each of the 16384 slots, whether it owns the slot or not
    /// (`CLUSTER COUNTKEYSINSLOT` counts the keys a node holds, owner or not): the masters
    /// asked in parallel, each at most `rate` commands per second.
    pub fn observe(&self, rate: Option<f64>) -> Result<Observed, LiveError> {
        let view = self.cluster_view()?;
        let masters = view.masters();
        let nodes: Vec<LiveNode> = masters
            .iter()
            .map(|&i| LiveNode {
                name: view.nodes[i].name.clone(),
                id: view.nodes[i].id.clone(),
                address: view.nodes[i].address.clone(),
            })
            .collect();
        let counts = std::thread::scope(|scope| {
            let handles: Vec<_> = nodes
                .iter()
                .map(|n| {
                    scope.spawn(move || match &n.address {
                        Some(addr) => self.every_slot_key_count(addr, rate),
                        None => Ok(vec![0; SLOT_COUNT]),
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("invariant: counting threads do not panic"))
                .collect::<Result<Vec<_>, _>>()
        })?;
        let owner = view
            .owner
            .iter()
            .map(|o| o.and_then(|i| masters.iter().position(|&m| m == i)))
            .collect();
        Ok(Observed {
            nodes,
            owner,
            open: view.open,
            counts,
        })
    }

    /// The keys the node at `addr` holds in each of the 16384 slots.
    fn every_slot_key_count(&self, addr: &str, rate: Option<f64>) -> Result<Vec<u64>, LiveError> {
        let (host, port) = host_port(addr)?;
        let mut con = self.connect(&host, port)?;
        let mut out = Vec::with_capacity(SLOT_COUNT);
        let slots: Vec<u16> = (0..SLOT_COUNT as u16).collect();
        let started = Instant::now();
        for chunk in slots.chunks(pipeline(rate)) {
            pace(rate, out.len() as u64, started);
            let mut pipe = redis::pipe();
            for s in chunk {
                pipe.cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(*s);
            }
            let counts: Vec<i64> = pipe
                .query(&mut con)
                .map_err(node_error(addr, "CLUSTER COUNTKEYSINSLOT"))?;
            for (s, n) in chunk.iter().zip(counts) {
                match u64::try_from(n) {
                    Ok(x) if x <= MAX_PLAUSIBLE_KEYS => out.push(x),
                    _ => {
                        return Err(LiveError::Node {
                            addr: addr.to_string(),
                            what: "CLUSTER COUNTKEYSINSLOT".into(),
                            reason: format!(
                                "it says slot {s} holds {n} keys, which no server counts: a broken server or a proxy in the way"
                            ),
                            sampled: 0,
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    /// How the master that owns each key's slot in `observed` has it (`keys`: each key with
    /// its slot), in the order of `keys`: every master's keys looked up at once, each master at
    /// most `rate` commands a second. A key of an unserved slot is missing.
    pub fn key_states_on_owners(
        &self,
        observed: &Observed,
        keys: &[(&[u8], u16)],
        rate: Option<f64>,
    ) -> Result<Vec<KeyState>, LiveError> {
        // The keys' places in `keys`, by the master owning their slot.
        let mut by_owner: std::collections::BTreeMap<Option<usize>, Vec<usize>> =
            Default::default();
        for (i, (_, slot)) in keys.iter().enumerate() {
            by_owner
                .entry(observed.owner[usize::from(*slot)])
                .or_default()
                .push(i);
        }
        let looked_up = std::thread::scope(|scope| {
            let handles: Vec<_> = by_owner
                .iter()
                .map(|(owner, places)| {
                    let addr = owner.and_then(|o| observed.nodes[o].address.as_deref());
                    scope.spawn(move || match addr {
                        Some(addr) => {
                            let ks: Vec<&[u8]> = places.iter().map(|&i| keys[i].0).collect();
                            self.key_states(addr, &ks, rate)
                        }
                        // An unserved slot (or a master without an address): nowhere.
                        None => Ok(vec![KeyState::Missing; places.len()]),
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("invariant: lookup threads do not panic"))
                .collect::<Result<Vec<_>, _>>()
        })?;
        let mut out = vec![KeyState::Missing; keys.len()];
        for (places, states) in by_owner.values().zip(looked_up) {
            for (&i, state) in places.iter().zip(states) {
                out[i] = state;
            }
        }
        Ok(out)
    }

    /// How the master at `addr` has each of `keys` (`PTTL`, pipelined, at most `rate` a
    /// second): missing, without an expiry or with one. A key the node answers with an error for (`MOVED`: it does not own
    /// the key's slot) is missing there.
    pub fn key_states(
        &self,
        addr: &str,
        keys: &[&[u8]],
        rate: Option<f64>,
    ) -> Result<Vec<KeyState>, LiveError> {
        let (host, port) = host_port(addr)?;
        let mut con = self.connect(&host, port)?;
        let mut out = Vec::with_capacity(keys.len());
        let started = Instant::now();
        for chunk in keys.chunks(pipeline(rate)) {
            pace(rate, out.len() as u64, started);
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for k in chunk {
                pipe.cmd("PTTL").arg(*k);
            }
            let replies: Vec<Value> = pipe.query(&mut con).map_err(node_error(addr, "PTTL"))?;
            if replies.len() != chunk.len() {
                return Err(LiveError::Node {
                    addr: addr.to_string(),
                    what: "PTTL".into(),
                    reason: format!("{} replies to {} commands", replies.len(), chunk.len()),
                    sampled: 0,
                });
            }
            out.extend(replies.iter().map(|v| match v {
                Value::Int(-1) => KeyState::Persistent,
                Value::Int(t) if *t >= 0 => KeyState::Expiring,
                _ => KeyState::Missing,
            }));
        }
        Ok(out)
    }
}
