//! What the servers say besides the keys a sample reads: each node's data bytes, each node's
//! load (summed from the per-slot counters, else its command time), what they say of the
//! biggest keys sampled, and the cluster as `redis-cli --cluster` sees it.

use super::{LiveCluster, LiveError, SlotLoad};
use crate::analyze::ServerLoad;
use crate::analyze::snapshot::{Biggest, SnapshotReport, sample_report};
use crate::migrate::ClusterView;
use crate::migrate::impact::MeasuredLoad;
use crate::topology::{Node, Topology};

/// What the servers measured of each node of a topology (the nodes not sampled count 0).
#[derive(Debug, Clone)]
pub struct NodeMeasures {
    /// Data bytes as `INFO memory` counts them (`used_memory_dataset`); `None` when a server
    /// refused `INFO` (an ACL user without it).
    pub dataset: Option<Vec<u64>>,
    /// Each node's load: the sums of its slots' `CLUSTER SLOT-STATS` counters, else its
    /// command time from `INFO commandstats`; `None` on a ring without per-slot counters.
    pub load: Option<Vec<ServerLoad>>,
    /// The load is `INFO commandstats` (the servers do not count load per slot).
    pub from_commandstats: bool,
    /// What a server refused to say, in words (an ACL user without `INFO`): left out.
    pub refused: Vec<String>,
}

/// Whether a node's error is a permission refusal (ACL `NOPERM`): the figure is then left
/// out and said to be, not an error of the run.
fn refused(e: &LiveError) -> bool {
    match e {
        LiveError::Node { reason, .. } => {
            let r = reason.to_ascii_lowercase();
            r.contains("noperm") || r.contains("no permissions")
        }
        _ => false,
    }
}

impl LiveCluster {
    /// Measures the nodes of `topology` that were `sampled`; `slot_load` is what the sample
    /// read of the per-slot counters.
    pub fn measure_nodes(
        &self,
        topology: &Topology,
        sampled: &[Node],
        slot_load: Option<&SlotLoad>,
    ) -> Result<NodeMeasures, LiveError> {
        let asked = |n: &Node| sampled.iter().any(|t| t.address == n.address);
        let mut refusals = Vec::new();
        let dataset = match topology
            .nodes()
            .iter()
            .map(|n| {
                if asked(n) {
                    self.dataset_bytes(n)
                } else {
                    Ok(0)
                }
            })
            .collect::<Result<Vec<u64>, _>>()
        {
            Ok(d) => Some(d),
            Err(e) if refused(&e) => {
                refusals.push(format!("data bytes (INFO memory) left out: {e}"));
                None
            }
            Err(e) => return Err(e),
        };
        let (load, from_commandstats) = match slot_load {
            Some(l) => {
                let load = ServerLoad::per_node(topology, &l.cpu_usec, &l.net_in, &l.net_out);
                (Some(load), false)
            }
            None if topology.slot_map().is_some() => {
                let time = |n: &Node| match asked(n) {
                    true => self.node_command_time(n).map(|t| t.usec),
                    false => Ok(0),
                };
                let load = topology
                    .nodes()
                    .iter()
                    .map(|n| {
                        Ok(ServerLoad {
                            cpu_usec: time(n)?,
                            network_bytes_in: None,
                            network_bytes_out: None,
                        })
                    })
                    .collect::<Result<_, LiveError>>();
                match load {
                    Ok(load) => (Some(load), true),
                    Err(e) if refused(&e) => {
                        refusals.push(format!("each node's CPU (INFO commandstats) left out: {e}"));
                        (None, false)
                    }
                    Err(e) => return Err(e),
                }
            }
            None => (None, false),
        };
        Ok(NodeMeasures {
            dataset,
            load,
            from_commandstats,
            refused: refusals,
        })
    }

    /// The biggest sampled keys as their servers describe them (type, encoding, elements,
    /// TTL), `top` of them in each list.
    pub fn describe_biggest(
        &self,
        topology: &Topology,
        biggest: &Biggest,
        top: usize,
    ) -> Result<SnapshotReport, LiveError> {
        let keys = biggest.keys();
        let names: Vec<&[u8]> = keys.iter().map(|(_, k)| k.as_slice()).collect();
        let facts = self.describe_keys_on(topology, &names)?;
        Ok(sample_report(keys, &facts, topology, top))
    }
}

impl LiveCluster {
    /// The cluster as redis-cli sees it: the seed's `CLUSTER NODES` (its node order), with
    /// every master's slots in migration (each master lists only its own markers).
    pub fn cluster_view(&self) -> Result<ClusterView, LiveError> {
        let text = self.cluster_nodes()?;
        let mut view = ClusterView::from_cluster_nodes(&text)
            .map_err(|e| LiveError::Topology(format!("CLUSTER NODES: {e}")))?;
        let masters: Vec<Node> = view
            .masters()
            .into_iter()
            .map(|i| view.nodes[i].to_node())
            .collect();
        for m in self.migration_markers(&masters) {
            if !view.open.contains(&m) {
                view.open.push(m);
            }
        }
        view.open
            .sort_by(|a, b| (a.slot, &a.node).cmp(&(b.slot, &b.node)));
        Ok(view)
    }
}

impl From<&SlotLoad> for MeasuredLoad {
    fn from(load: &SlotLoad) -> MeasuredLoad {
        let f = |v: &[u64]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        MeasuredLoad {
            cpu_usec: f(&load.cpu_usec),
            net_bytes: load
                .net_in
                .iter()
                .zip(&load.net_out)
                .map(|(a, b)| (a + b) as f64)
                .collect(),
            memory: load.memory.as_deref().map(f),
            since: load.since.clone(),
        }
    }
}
