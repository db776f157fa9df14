//! A live sample of a cluster, as `analyze` and the migration previews take it: every master
//! that owns slots scanned at once, then the servers' exact key count of every slot and the
//! load they measured per slot, and whether the slot map held still meanwhile.

use super::{LiveCluster, LiveError, ScanOptions, SlotLoad};
use crate::topology::{Migration, Node, SlotMap};

/// Where a sample reads.
#[derive(Debug, Clone)]
pub struct SampleTargets {
    /// The masters scanned (those owning slots; every server of a client-side ring).
    pub masters: Vec<Node>,
    /// Every master with the slots it owns (empty on a ring).
    pub owners: Vec<(Node, Vec<u16>)>,
    /// Slots in migration: their moved keys are counted on the importing node.
    pub migrations: Vec<Migration>,
}

impl SampleTargets {
    /// The masters of `topology` that hold keys.
    pub fn of_topology(topology: &crate::topology::Topology) -> SampleTargets {
        SampleTargets {
            masters: topology.key_holders(),
            owners: topology.master_slots(),
            migrations: topology.migrations().to_vec(),
        }
    }

    /// The masters of `view` that hold keys.
    pub fn of_view(view: &crate::migrate::ClusterView) -> SampleTargets {
        SampleTargets {
            masters: view.key_holders(),
            owners: view.master_slots(),
            migrations: view.open.clone(),
        }
    }
}

/// What a sample brought back besides the keys handed to the sinks.
#[derive(Debug)]
pub struct Sample<S> {
    /// One sink per master, in the order of [`SampleTargets::masters`].
    pub sinks: Vec<S>,
    /// Keys sampled.
    pub keys: u64,
    /// Every slot's exact key count; `None` when the scan matched a pattern (the servers
    /// count every key) or there are no slots (a ring).
    pub exact_slot_keys: Option<Vec<u64>>,
    /// The load the servers measured per slot, where they count it.
    pub slot_load: Option<SlotLoad>,
}

impl LiveCluster {
    /// Scans `targets.masters` into `sinks` (one per master; `f` gets each key with its bytes
    /// and heat when asked), then reads every slot's exact key count and per-slot load (over
    /// `window`, when given). A node that fails is an error: a report never leaves a node out
    /// silently.
    pub fn sample_masters<S: Send>(
        &self,
        targets: &SampleTargets,
        opts: &ScanOptions,
        window: Option<std::time::Duration>,
        mut sinks: Vec<S>,
        f: impl Fn(&mut S, &[u8], Option<u64>, Option<f64>) + Sync,
    ) -> Result<Sample<S>, LiveError> {
        let keys = self.scan_nodes(&targets.masters, opts, &mut sinks, f)?;
        let exact_slot_keys = if opts.pattern.is_none() && !targets.owners.is_empty() {
            Some(self.exact_slot_keys(&targets.owners, &targets.migrations)?)
        } else {
            None
        };
        let slot_load = self.slot_load(&targets.owners, window)?;
        Ok(Sample {
            sinks,
            keys,
            exact_slot_keys,
            slot_load,
        })
    }

    /// What the servers say of each of `keys` (type, encoding, elements, TTL), each asked of the
    /// node of `topology` that holds it; `None` for a key no node holds or that is gone.
    pub fn describe_keys_on(
        &self,
        topology: &crate::topology::Topology,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<crate::analyze::snapshot::KeyFacts>>, LiveError> {
        let mut facts = vec![None; keys.len()];
        let mut by_node: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (i, k) in keys.iter().enumerate() {
            if let Some(n) = topology.node_of(k) {
                by_node.entry(n).or_default().push(i);
            }
        }
        for (n, idx) in by_node {
            let ks: Vec<&[u8]> = idx.iter().map(|&i| keys[i]).collect();
            let got = self.describe_keys(&topology.nodes()[n], &ks)?;
            for (i, f) in idx.into_iter().zip(got) {
                facts[i] = f;
            }
        }
        Ok(facts)
    }

    /// Fails when slots changed owner since `before` was read (a failover or a reshard while
    /// keys were sampled: the sample would count some keys twice and miss others).
    pub fn ensure_stable(&self, before: &SlotMap) -> Result<(), LiveError> {
        let owners: Vec<Option<Node>> = (0..crate::slot::SLOT_COUNT as u16)
            .map(|s| before.owner_of_slot(s).map(|i| before.nodes()[i].clone()))
            .collect();
        self.ensure_unchanged_from(&owners)
    }

    /// [`LiveCluster::ensure_stable`] against each slot's owner as it was read (16384 entries,
    /// `None` for a slot no node served).
    pub fn ensure_unchanged_from(&self, before: &[Option<Node>]) -> Result<(), LiveError> {
        match self.owners_changed_from(before)? {
            0 => Ok(()),
            n => Err(LiveError::Unstable(n)),
        }
    }

    /// How many slots changed owner since each slot's owner was read (16384
    /// entries, `None` for a slot no node served). Owners are the same node when their ids are
    /// (or, without ids, their addresses): a view read from `CLUSTER NODES` names nodes by ip
    /// where `CLUSTER SHARDS` may give a hostname.
    pub fn owners_changed_from(&self, before: &[Option<Node>]) -> Result<usize, LiveError> {
        let after = self.topology()?;
        let same = |a: &Node, b: &Node| match (&a.id, &b.id) {
            (Some(x), Some(y)) => x == y,
            _ => a.address == b.address,
        };
        Ok((0..crate::slot::SLOT_COUNT as u16)
            .filter(|&s| {
                let now = after.owner_of_slot(s).map(|i| &after.nodes()[i]);
                match (&before[usize::from(s)], now) {
                    (Some(a), Some(b)) => !same(a, b),
                    (None, None) => false,
                    _ => true,
                }
            })
            .count())
    }
}

impl ScanOptions {
    /// The masters of `nodes` that have no healthy replica to read from (with replicas asked
    /// for): those are sampled themselves.
    pub fn without_replica<'a>(&self, nodes: &'a [Node]) -> Vec<&'a str> {
        let Some(map) = &self.replicas else {
            return Vec::new();
        };
        nodes
            .iter()
            .filter_map(|n| n.address.as_deref())
            .filter(|a| !map.contains_key(*a))
            .collect()
    }
}
