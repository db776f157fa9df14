//! What `keyplan verify` reads from a cluster: every master's keys in every slot (owned or
//! not), how the owner of their slot has given keys (there, with an expiry or not), and, with
//! a source, every key of the source against the cluster's (type, expiry, value digest).

use super::conn::NodeConn;
use super::{LiveCluster, LiveError, MAX_PLAUSIBLE_KEYS, host_port, node_error, pace};
use crate::migrate::verify::{KeyRead, KeyState, LiveNode, Observed, ValueMethod, ValueTally};
use crate::slot::SLOT_COUNT;
use redis::Value;
use std::collections::HashMap;
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

/// Keys read per round trip when values are compared (three commands a key on each side; a
/// value's DUMP may be large, so fewer than [`PIPELINE`]).
const VALUE_BATCH: usize = 100;

/// How a source's keys are compared with the cluster's.
#[derive(Debug, Clone, Copy)]
pub struct ValueOptions {
    /// How values are compared.
    pub method: ValueMethod,
    /// Expiries this many milliseconds apart (or less) are the same.
    pub ttl_tolerance_ms: u64,
    /// At most this many commands a second per source node's reader (source and cluster
    /// together).
    pub rate: Option<f64>,
}

/// One key's `TYPE`, `PTTL` and digest replies, as a [`KeyRead`] (an error reply, `MOVED`
/// among them, reads as missing).
fn key_read(replies: &[Value], method: ValueMethod) -> KeyRead {
    let kind = match &replies[0] {
        Value::SimpleString(s) if s != "none" => s.clone(),
        Value::BulkString(b) if b.as_slice() != b"none" => String::from_utf8_lossy(b).into_owned(),
        _ => return KeyRead::Missing,
    };
    let ttl_ms = match replies[1] {
        Value::Int(-1) => None,
        Value::Int(t) if t >= 0 => Some(t as u64),
        _ => return KeyRead::Missing,
    };
    let digest = match (method, &replies[2]) {
        (ValueMethod::DumpPayload, Value::BulkString(b)) => {
            use md5::Digest as _;
            // The payload, then 2 bytes of RDB version and 8 of CRC64: the value is the
            // payload (a newer server writes the same value with a newer version).
            let body = &b[..b.len().saturating_sub(10)];
            md5::Md5::digest(body).to_vec()
        }
        (ValueMethod::DebugDigestValue, Value::Array(a)) => match a.first() {
            Some(Value::BulkString(d)) => d.clone(),
            Some(Value::SimpleString(d)) => d.clone().into_bytes(),
            _ => return KeyRead::Missing,
        },
        _ => return KeyRead::Missing,
    };
    KeyRead::Present {
        kind,
        ttl_ms,
        digest,
    }
}

/// Reads `keys` on `con` (the node at `addr`): type, expiry and value digest, pipelined.
fn read_keys(
    con: &mut NodeConn,
    addr: &str,
    keys: &[&[u8]],
    method: ValueMethod,
) -> Result<Vec<KeyRead>, LiveError> {
    let what = match method {
        ValueMethod::DumpPayload => "TYPE, PTTL and DUMP",
        ValueMethod::DebugDigestValue => "TYPE, PTTL and DEBUG DIGEST-VALUE",
    };
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for k in keys {
        pipe.cmd("TYPE").arg(*k);
        pipe.cmd("PTTL").arg(*k);
        match method {
            ValueMethod::DumpPayload => pipe.cmd("DUMP").arg(*k),
            ValueMethod::DebugDigestValue => pipe.cmd("DEBUG").arg("DIGEST-VALUE").arg(*k),
        };
    }
    let replies: Vec<Value> = pipe.query(con).map_err(node_error(addr, what))?;
    if replies.len() != keys.len() * 3 {
        return Err(LiveError::Node {
            addr: addr.to_string(),
            what: what.into(),
            reason: format!("{} replies to {} commands", replies.len(), keys.len() * 3),
            sampled: 0,
        });
    }
    Ok(replies.chunks(3).map(|r| key_read(r, method)).collect())
}

/// A digest of each set's members or hash's fields and values (`kinds`: each key's type),
/// sorted: the same for the same members whatever order the server keeps them in. A key gone
/// meanwhile gets an empty digest (it differs from any other).
fn sorted_digests(
    con: &mut NodeConn,
    addr: &str,
    keys: &[&[u8]],
    kinds: &[&str],
) -> Result<Vec<Vec<u8>>, LiveError> {
    use md5::Digest as _;
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for (k, kind) in keys.iter().zip(kinds) {
        match *kind {
            "hash" => pipe.cmd("HGETALL").arg(*k),
            _ => pipe.cmd("SMEMBERS").arg(*k),
        };
    }
    let replies: Vec<Value> = pipe
        .query(con)
        .map_err(node_error(addr, "SMEMBERS or HGETALL"))?;
    Ok(replies
        .iter()
        .zip(kinds)
        .map(|(v, kind)| {
            let flat: Vec<&[u8]> = match v {
                Value::Array(a) | Value::Set(a) => a
                    .iter()
                    .filter_map(|x| match x {
                        Value::BulkString(b) => Some(b.as_slice()),
                        _ => None,
                    })
                    .collect(),
                Value::Map(m) => m
                    .iter()
                    .flat_map(|(a, b)| [a, b])
                    .filter_map(|x| match x {
                        Value::BulkString(b) => Some(b.as_slice()),
                        _ => None,
                    })
                    .collect(),
                _ => return Vec::new(),
            };
            let mut items: Vec<Vec<u8>> = if *kind == "hash" {
                flat.chunks(2)
                    .map(|p| {
                        // Length-prefixed, so that no field and value run into another pair.
                        let mut e = (p[0].len() as u64).to_le_bytes().to_vec();
                        e.extend_from_slice(p[0]);
                        e.extend_from_slice(p.get(1).copied().unwrap_or_default());
                        e
                    })
                    .collect()
            } else {
                flat.iter().map(|m| m.to_vec()).collect()
            };
            items.sort_unstable();
            let mut h = md5::Md5::new();
            h.update(kind.as_bytes());
            for i in &items {
                h.update((i.len() as u64).to_le_bytes());
                h.update(i);
            }
            h.finalize().to_vec()
        })
        .collect())
}

impl LiveCluster {
    /// The nodes a source's keys are read from: every master when the server at the URL is a
    /// cluster node, else the server itself (a standalone server, a ring's server).
    pub fn source_nodes(&self) -> Result<Vec<String>, LiveError> {
        match self.cluster_view() {
            Ok(view) => view
                .masters()
                .iter()
                .map(|&i| {
                    view.nodes[i]
                        .address
                        .clone()
                        .ok_or_else(|| LiveError::Node {
                            addr: view.nodes[i].name.clone(),
                            what: "connect".into(),
                            reason: "the node has no address".into(),
                            sampled: 0,
                        })
                })
                .collect(),
            Err(LiveError::NotCluster { addr }) => Ok(vec![addr]),
            Err(e) => Err(e),
        }
    }

    /// Whether the node at `addr` answers `DEBUG DIGEST-VALUE` (servers refuse it unless
    /// `enable-debug-command` allows the connection).
    pub fn allows_digest_value(&self, addr: &str) -> Result<bool, LiveError> {
        let (host, port) = host_port(addr)?;
        let mut con = self.connect(&host, port)?;
        let r: redis::RedisResult<Value> = redis::cmd("DEBUG")
            .arg("DIGEST-VALUE")
            .arg("keyplan:probe")
            .query(&mut con);
        Ok(matches!(r, Ok(Value::Array(_))))
    }

    /// Every key of the source node at `addr` (read through `source`, by SCAN) compared with
    /// the master of this cluster that owns its slot in `observed`: its type, expiry and value
    /// digest on both sides, a batch of keys at a time (memory: one batch), at most
    /// `opts.rate` commands a second on both sides together.
    pub fn compare_source_node(
        &self,
        source: &LiveCluster,
        addr: &str,
        observed: &Observed,
        opts: ValueOptions,
    ) -> Result<ValueTally, LiveError> {
        let (host, port) = host_port(addr)?;
        let mut src = source.connect(&host, port)?;
        let mut targets: HashMap<usize, NodeConn> = HashMap::new();
        let mut tally = ValueTally::default();
        let started = Instant::now();
        let mut sent = 0u64;
        let mut cursor = 0u64;
        let mut pending: Vec<Vec<u8>> = Vec::new();
        loop {
            pace(opts.rate, sent, started);
            let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("COUNT")
                .arg(VALUE_BATCH)
                .query(&mut src)
                .map_err(node_error(addr, "SCAN"))?;
            sent += 1;
            cursor = next;
            pending.extend(keys);
            while pending.len() >= VALUE_BATCH || (cursor == 0 && !pending.is_empty()) {
                let take = pending.len().min(VALUE_BATCH);
                let batch: Vec<Vec<u8>> = pending.drain(..take).collect();
                self.compare_batch(
                    (&mut src, addr),
                    &mut targets,
                    &batch,
                    observed,
                    opts,
                    &mut tally,
                    (&mut sent, started),
                )?;
            }
            if cursor == 0 {
                return Ok(tally);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn compare_batch(
        &self,
        (src, addr): (&mut NodeConn, &str),
        targets: &mut HashMap<usize, NodeConn>,
        batch: &[Vec<u8>],
        observed: &Observed,
        opts: ValueOptions,
        tally: &mut ValueTally,
        (sent, started): (&mut u64, Instant),
    ) -> Result<(), LiveError> {
        let keys: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        pace(opts.rate, *sent, started);
        let mut at_source = read_keys(src, addr, &keys, opts.method)?;
        *sent += 3 * keys.len() as u64;
        let slots: Vec<u16> = keys.iter().map(|k| crate::slot::key_slot(k)).collect();
        let mut at_target = vec![KeyRead::Missing; keys.len()];
        let mut by_owner: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (i, s) in slots.iter().enumerate() {
            // A key the source no longer has is not looked for; one of an unserved slot is
            // missing.
            if at_source[i] == KeyRead::Missing {
                continue;
            }
            if let Some(o) = observed.owner[usize::from(*s)] {
                by_owner.entry(o).or_default().push(i);
            }
        }
        for (owner, places) in by_owner {
            let Some(taddr) = observed.nodes[owner].address.as_deref() else {
                continue;
            };
            let con = match targets.entry(owner) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let (h, p) = host_port(taddr)?;
                    e.insert(self.connect(&h, p)?)
                }
            };
            let ks: Vec<&[u8]> = places.iter().map(|&i| keys[i]).collect();
            pace(opts.rate, *sent, started);
            let reads = read_keys(con, taddr, &ks, opts.method)?;
            *sent += 3 * ks.len() as u64;
            for (&i, r) in places.iter().zip(reads) {
                at_target[i] = r;
            }
        }
        // A set or hash kept in a hash table is dumped in its table's order, which a copy
        // need not keep: where such payloads differ, the members are compared, sorted.
        let unordered: Vec<usize> = (0..keys.len())
            .filter(|&i| {
                opts.method == ValueMethod::DumpPayload
                    && matches!((&at_source[i], &at_target[i]), (
                        KeyRead::Present { kind: a, digest: x, .. },
                        KeyRead::Present { kind: b, digest: y, .. },
                    ) if a == b && x != y && (a == "set" || a == "hash"))
            })
            .collect();
        if !unordered.is_empty() {
            let ks: Vec<&[u8]> = unordered.iter().map(|&i| keys[i]).collect();
            let kinds: Vec<&str> = unordered
                .iter()
                .map(|&i| match &at_source[i] {
                    KeyRead::Present { kind, .. } => kind.as_str(),
                    KeyRead::Missing => "",
                })
                .collect();
            pace(opts.rate, *sent, started);
            let from = sorted_digests(src, addr, &ks, &kinds)?;
            *sent += ks.len() as u64;
            for (j, &i) in unordered.iter().enumerate() {
                if let KeyRead::Present { digest, .. } = &mut at_source[i] {
                    *digest = from[j].clone();
                }
            }
            let mut by_owner: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
            for &i in &unordered {
                if let Some(o) = observed.owner[usize::from(slots[i])] {
                    by_owner.entry(o).or_default().push(i);
                }
            }
            for (owner, places) in by_owner {
                let (Some(con), Some(taddr)) = (
                    targets.get_mut(&owner),
                    observed.nodes[owner].address.as_deref(),
                ) else {
                    continue;
                };
                let ks: Vec<&[u8]> = places.iter().map(|&i| keys[i]).collect();
                let kinds: Vec<&str> = places
                    .iter()
                    .map(|&i| match &at_source[i] {
                        KeyRead::Present { kind, .. } => kind.as_str(),
                        KeyRead::Missing => "",
                    })
                    .collect();
                pace(opts.rate, *sent, started);
                let to = sorted_digests(con, taddr, &ks, &kinds)?;
                *sent += ks.len() as u64;
                for (j, &i) in places.iter().enumerate() {
                    if let KeyRead::Present { digest, .. } = &mut at_target[i] {
                        *digest = to[j].clone();
                    }
                }
            }
        }
        for i in 0..keys.len() {
            tally.add(
                keys[i],
                slots[i],
                &at_source[i],
                &at_target[i],
                opts.ttl_tolerance_ms,
            );
        }
        Ok(())
    }
}
