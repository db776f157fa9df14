//! The commands each strategy sends, as an execution plan: waves the client waits for one after
//! another, each made of lanes (one pipeline on one connection to one node) sent together. The
//! simulator's counts and `keyplan bench`'s execution come from the same rules.

use super::Strategy;
use super::batch::{Batch, BatchKind, Op};
use crate::slot::{hash_tag, key_slot};
use crate::topology::Topology;
use std::collections::BTreeMap;

/// One pipeline on one connection to one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// The node (index into the topology's nodes).
    pub node: usize,
    /// The commands, each as its arguments (name first).
    pub commands: Vec<Vec<Vec<u8>>>,
}

/// Lanes sent together; the client waits for all of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Wave {
    /// The lanes.
    pub lanes: Vec<Lane>,
}

/// How a batch is executed under a strategy.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExecPlan {
    /// Waves, in order.
    pub waves: Vec<Wave>,
    /// Per node, the commands that count (MULTI/EXEC wrappers excluded).
    pub commands_per_node: BTreeMap<usize, u64>,
}

/// Why a batch cannot be executed for real.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// A multi-key command that does not split into single-key commands (SUNION, scripts, …).
    #[error(
        "{0} does not split into single-key commands; bench runs MGET/MSET/DEL/EXISTS/UNLINK/TOUCH and single-key commands"
    )]
    Unsplittable(String),
    /// A key lands on a slot no node serves.
    #[error("a key lands on slot {0}, which no node serves")]
    Unserved(u16),
}

fn splits(command: &str) -> bool {
    matches!(
        command,
        "MGET" | "MSET" | "MSETNX" | "DEL" | "EXISTS" | "UNLINK" | "TOUCH"
    )
}

/// The single-key commands of `op` (MGET → GET per key, …), or the op itself when it has at
/// most one key.
/// A command's arguments (name first).
type Args = Vec<Vec<u8>>;

fn per_key(op: &Op) -> Result<Vec<(Option<u16>, Args)>, ExecError> {
    if op.keys.is_empty() {
        return Ok(vec![(None, op.args.clone())]);
    }
    if op.keys.len() == 1 && !splits(&op.command) {
        return Ok(vec![(Some(key_slot(&op.keys[0])), op.args.clone())]);
    }
    if !splits(&op.command) {
        return Err(ExecError::Unsplittable(op.command.clone()));
    }
    let single = op.single_key_command().as_bytes().to_vec();
    Ok(op
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mut args = vec![single.clone(), k.clone()];
            if let Some(v) = op.values.get(i) {
                args.push(v.clone());
            }
            (Some(key_slot(k)), args)
        })
        .collect())
}

/// The batch with every key moved onto the first key's hash tag: `{T}` + the key without
/// braces, T being what Redis hashes for the first key (its tag, or the whole key).
pub fn onto_one_tag(b: &Batch) -> Batch {
    let Some(first) = b.keys().next() else {
        return b.clone();
    };
    let tag = hash_tag(first).to_vec();
    b.map_keys(|k| {
        let mut out = Vec::with_capacity(tag.len() + k.len() + 2);
        out.push(b'{');
        out.extend_from_slice(&tag);
        out.push(b'}');
        out.extend(k.iter().filter(|&&c| c != b'{' && c != b'}'));
        out
    })
}

/// The execution plan of `b` under `strategy` on `topo`. For `Hashtag`, pass the batch
/// rewritten with [`onto_one_tag`].
pub fn exec_plan(b: &Batch, topo: &Topology, strategy: Strategy) -> Result<ExecPlan, ExecError> {
    let node_of = |slot: Option<u16>| -> Result<usize, ExecError> {
        match slot {
            None => Ok(0),
            Some(s) => topo.node_of_slot(s).ok_or(ExecError::Unserved(s)),
        }
    };
    let mut plan = ExecPlan::default();
    if strategy == Strategy::Hashtag {
        let Some(first) = b.keys().next() else {
            return Ok(plan);
        };
        let node = node_of(Some(key_slot(first)))?;
        let mut commands: Vec<Vec<Vec<u8>>> = Vec::new();
        let counted;
        match b.kind {
            BatchKind::Script => {
                return Err(ExecError::Unsplittable(
                    b.ops.first().map(|o| o.command.clone()).unwrap_or_default(),
                ));
            }
            BatchKind::MultiKey => {
                // One command with every key (they share one slot now).
                commands.extend(b.ops.iter().map(|o| o.args.clone()));
                counted = commands.len() as u64;
            }
            BatchKind::Pipeline | BatchKind::Multi => {
                for op in &b.ops {
                    for (_, c) in per_key(op)? {
                        commands.push(c);
                    }
                }
                counted = commands.len() as u64;
                if b.kind == BatchKind::Multi {
                    commands.insert(0, vec![b"MULTI".to_vec()]);
                    commands.push(vec![b"EXEC".to_vec()]);
                }
            }
        }
        plan.commands_per_node.insert(node, counted);
        plan.waves.push(Wave {
            lanes: vec![Lane { node, commands }],
        });
        return Ok(plan);
    }
    let mut cmds: Vec<(usize, Option<u16>, Vec<Vec<u8>>)> = Vec::new();
    for op in &b.ops {
        for (slot, c) in per_key(op)? {
            cmds.push((node_of(slot)?, slot, c));
        }
    }
    for (n, _, _) in &cmds {
        *plan.commands_per_node.entry(*n).or_default() += 1;
    }
    match strategy {
        Strategy::Serial => {
            for (node, _, c) in cmds {
                plan.waves.push(Wave {
                    lanes: vec![Lane {
                        node,
                        commands: vec![c],
                    }],
                });
            }
        }
        Strategy::Pipeline | Strategy::Parallel => {
            let mut per_node: BTreeMap<usize, Vec<Vec<Vec<u8>>>> = BTreeMap::new();
            for (node, _, c) in cmds {
                per_node.entry(node).or_default().push(c);
            }
            let lanes: Vec<Lane> = per_node
                .into_iter()
                .map(|(node, commands)| Lane { node, commands })
                .collect();
            if strategy == Strategy::Pipeline {
                plan.waves = lanes.into_iter().map(|l| Wave { lanes: vec![l] }).collect();
            } else if !lanes.is_empty() {
                plan.waves.push(Wave { lanes });
            }
        }
        Strategy::SlotParallel => {
            let mut per_slot: BTreeMap<(usize, u16), Vec<Vec<Vec<u8>>>> = BTreeMap::new();
            for (node, slot, c) in cmds {
                per_slot
                    .entry((node, slot.unwrap_or(0)))
                    .or_default()
                    .push(c);
            }
            let lanes: Vec<Lane> = per_slot
                .into_iter()
                .map(|((node, _), commands)| Lane { node, commands })
                .collect();
            if !lanes.is_empty() {
                plan.waves.push(Wave { lanes });
            }
        }
        Strategy::Hashtag => unreachable!("handled above"),
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::{NetworkModel, parse_batches, simulate};
    use crate::topology::SlotMap;

    #[test]
    fn plans_agree_with_the_simulator() {
        let t = Topology::Cluster(SlotMap::from_masters(3).unwrap());
        let net = NetworkModel::default();
        let text = "MGET hello somekey x bar a b foo{hash_tag}\nPIPELINE GET session:9; ZADD board 1 x; HGET cart:7 items\nMULTI SET {u}a 1; INCR {u}b\nMSET a 1 b 2 c 3\n";
        for b in parse_batches(text).unwrap() {
            for s in Strategy::ALL {
                let input = if s == Strategy::Hashtag {
                    onto_one_tag(&b)
                } else {
                    b.clone()
                };
                let p = exec_plan(&input, &t, s).unwrap();
                let r = simulate(&b, &t, s, &net);
                assert_eq!(p.waves.len() as u64, r.round_trips, "{} {:?}", b.name, s);
                let per_node: Vec<(String, u64)> = r
                    .nodes
                    .iter()
                    .map(|n| (n.node.clone(), n.commands))
                    .collect();
                let planned: Vec<(String, u64)> = p
                    .commands_per_node
                    .iter()
                    .map(|(&n, &c)| (t.nodes()[n].name.clone(), c))
                    .collect();
                assert_eq!(planned, per_node, "{} {:?}", b.name, s);
                let lanes = p
                    .waves
                    .iter()
                    .map(|w| w.lanes.len() as u64)
                    .max()
                    .unwrap_or(0);
                if s != Strategy::Serial && s != Strategy::Pipeline {
                    assert_eq!(lanes, r.connections, "{} {:?}", b.name, s);
                }
            }
        }
        // The pipeline keeps ZADD's arguments.
        let b = &parse_batches("PIPELINE ZADD board 1 x").unwrap()[0];
        let p = exec_plan(b, &t, Strategy::Pipeline).unwrap();
        assert_eq!(
            p.waves[0].lanes[0].commands[0],
            vec![
                b"ZADD".to_vec(),
                b"board".to_vec(),
                b"1".to_vec(),
                b"x".to_vec()
            ]
        );
        // One tag: every key hashes to the first key's slot.
        let b = &parse_batches("MGET user:1 user:2 {x}y").unwrap()[0];
        let one = onto_one_tag(b);
        let slots: Vec<u16> = one.keys().map(key_slot).collect();
        assert!(slots.iter().all(|&s| s == key_slot(b"user:1")), "{slots:?}");
        assert!(
            exec_plan(
                &parse_batches("SUNION a b").unwrap()[0],
                &t,
                Strategy::Pipeline
            )
            .is_err()
        );
    }
}
