//! The plans `redis-cli --cluster rebalance` and `redis-cli --cluster reshard` execute
//! (`clusterManagerCommandRebalance`, `clusterManagerCommandReshard` and
//! `clusterManagerComputeReshardTable` in `src/redis-cli.c`), reproduced exactly: the same
//! single-precision arithmetic, the same node order and stable sorts, the same
//! lowest-numbered-slots-first choice, and slot ownership updated after each move as a real
//! (not `--cluster-simulate`) run updates it.

use super::{ClusterView, MigrateError, Move, PlanInput, Problem, Warning, WarningKind};
use crate::slot::SLOT_COUNT;

/// redis-cli's default `--cluster-threshold` (percent).
pub const DEFAULT_THRESHOLD: f32 = 2.0;

/// Options of `redis-cli --cluster rebalance`.
#[derive(Debug, Clone, Default)]
pub struct RebalanceOptions {
    /// `--cluster-weight name=w`: a case-insensitive node id prefix (first node in view
    /// order that matches wins) and its weight. keyplan also accepts a node's name or address
    /// when no id starts with it (topologies without ids).
    pub weights: Vec<(String, f32)>,
    /// `--cluster-use-empty-masters`.
    pub use_empty_masters: bool,
    /// `--cluster-threshold` in percent.
    pub threshold: f32,
}

/// What `rebalance` decides.
#[derive(Debug, Clone, PartialEq)]
pub struct RebalancePlan {
    /// Whether some node is beyond the threshold; when not, redis-cli prints
    /// "No rebalancing needed" and moves nothing.
    pub needed: bool,
    /// Nodes taking part, in view order.
    pub involved: Vec<usize>,
    /// Each node's weight (0 for masters left out).
    pub weights: Vec<f32>,
    /// The total weight of the involved nodes.
    pub total_weight: f32,
    /// `(node, balance)` after the rounding fix, in redis-cli's sorted order (negative:
    /// receives slots).
    pub balances: Vec<(usize, i64)>,
    /// The moves, in execution order.
    pub moves: Vec<Move>,
}

/// The node `name` abbreviates (`clusterManagerNodeByAbbreviatedName`): the first node, in
/// view order, whose id starts with `name` case-insensitively; else a node whose name or
/// address is `name`.
pub fn node_by_abbreviated_name(view: &ClusterView, name: &str) -> Option<usize> {
    let lc = name.to_ascii_lowercase();
    view.nodes
        .iter()
        .position(|n| n.id.as_deref().is_some_and(|id| id.starts_with(&lc)))
        .or_else(|| {
            view.nodes
                .iter()
                .position(|n| n.name == name || n.address.as_deref() == Some(name))
        })
}

/// Owned slots per node, updated as moves are applied.
struct Owned {
    owner: Vec<Option<usize>>,
}

/// `clusterManagerComputeReshardTable(sources, numslots)`: sources sorted by slot count,
/// descending (stable); source `i` gives `numslots / total * its_count` slots (`ceil` for the
/// first, `floor` for the rest, in `float`), each from its lowest-numbered slots, the table
/// never exceeding `numslots`. `counts` are the slot counts redis-cli loaded (they are not
/// updated by moves; slot ownership is). Returns `(slot, source)` in table order.
fn reshard_table(
    sources: &[usize],
    counts: &[usize],
    owned: &Owned,
    numslots: usize,
) -> Vec<(u16, usize)> {
    let tot_slots: usize = sources.iter().map(|&s| counts[s]).sum();
    let mut sorted = sources.to_vec();
    // glibc's qsort is a merge sort: stable.
    sorted.sort_by(|&a, &b| counts[b].cmp(&counts[a]));
    let mut table: Vec<(u16, usize)> = Vec::with_capacity(numslots);
    for (i, &node) in sorted.iter().enumerate() {
        // C: float n = ((float) numslots / tot_slots * node->slots_count);
        let n: f32 = numslots as f32 / tot_slots as f32 * counts[node] as f32;
        let n = if i == 0 { n.ceil() } else { n.floor() };
        // `(int) n` slots at most from this source, the table never beyond numslots.
        let max = n.max(0.0) as usize;
        for s in (0..SLOT_COUNT)
            .filter(|&s| owned.owner[s] == Some(node))
            .take(max)
        {
            if table.len() >= numslots {
                break;
            }
            table.push((s as u16, node));
        }
    }
    table
}

/// Groups a reshard table into moves to `target` (consecutive slots of one source together).
fn table_moves(table: &[(u16, usize)], target: usize) -> Vec<Move> {
    let mut moves: Vec<Move> = Vec::new();
    for &(slot, src) in table {
        match moves.last_mut() {
            Some(m) if m.from == src => m.slots.push(slot),
            _ => moves.push(Move {
                from: src,
                to: target,
                slots: vec![slot],
            }),
        }
    }
    moves
}

/// The plan `redis-cli --cluster rebalance` executes on `view`.
pub fn rebalance(
    view: &ClusterView,
    opts: &RebalanceOptions,
) -> Result<RebalancePlan, MigrateError> {
    let n = view.nodes.len();
    let mut weights = vec![1.0f32; n];
    for (name, w) in &opts.weights {
        let i = node_by_abbreviated_name(view, name)
            .ok_or_else(|| MigrateError::NoSuchNode(name.clone()))?;
        weights[i] = *w;
    }
    let counts: Vec<usize> = (0..n).map(|i| view.slot_count(i)).collect();
    let mut involved = Vec::new();
    let mut total_weight: f32 = 0.0;
    for i in 0..n {
        if !view.nodes[i].master {
            weights[i] = 0.0;
            continue;
        }
        if !opts.use_empty_masters && counts[i] == 0 {
            weights[i] = 0.0;
            continue;
        }
        total_weight += weights[i];
        involved.push(i);
    }
    view.check("rebalancing")?;
    if involved.is_empty() || total_weight <= 0.0 || !total_weight.is_finite() {
        return Err(MigrateError::Invalid(format!(
            "the masters taking part have a total weight of {total_weight:.2}: give at least one of them a weight above 0"
        )));
    }
    let mut balance = vec![0i64; n];
    let mut total_balance: i64 = 0;
    let mut needed = false;
    for &i in &involved {
        // C: int expected = (int) (((float)CLUSTER_MANAGER_SLOTS / total_weight) * n->weight);
        let expected = ((SLOT_COUNT as f32 / total_weight) * weights[i]) as i64;
        balance[i] = counts[i] as i64 - expected;
        total_balance += balance[i];
        if opts.threshold > 0.0 {
            if counts[i] > 0 {
                // C: float err_perc = fabs((100-(100.0*expected/n->slots_count)));
                let err = (100.0 - (100.0 * expected as f64 / counts[i] as f64)).abs() as f32;
                if err > opts.threshold {
                    needed = true;
                }
            } else if expected > 1 {
                needed = true;
            }
        }
    }
    if !needed {
        return Ok(RebalancePlan {
            needed,
            involved,
            weights,
            total_weight,
            balances: Vec::new(),
            moves: Vec::new(),
        });
    }
    // The rounding fix: nodes that do not give slots take one more, in list order.
    while total_balance > 0 {
        for &i in &involved {
            if balance[i] <= 0 && total_balance > 0 {
                balance[i] -= 1;
                total_balance -= 1;
            }
        }
    }
    let mut sorted: Vec<usize> = involved.clone();
    sorted.sort_by_key(|&i| balance[i]); // stable, like glibc's merge-sort qsort
    let balances: Vec<(usize, i64)> = sorted.iter().map(|&i| (i, balance[i])).collect();
    let mut owned = Owned {
        owner: view.owner.clone(),
    };
    let mut moves = Vec::new();
    let (mut dst_idx, mut src_idx) = (0usize, sorted.len() - 1);
    while dst_idx < src_idx {
        let (dst, src) = (sorted[dst_idx], sorted[src_idx]);
        let numslots = balance[dst].abs().min(balance[src].abs());
        if numslots > 0 {
            let table = reshard_table(&[src], &counts, &owned, numslots as usize);
            if table.len() != numslots as usize {
                return Err(MigrateError::Invalid(format!(
                    "redis-cli would stop with \"*** Assertion failed: Reshard table != number of slots\" moving {numslots} slots from {}",
                    view.nodes[src].name
                )));
            }
            for &(s, _) in &table {
                owned.owner[s as usize] = Some(dst);
            }
            moves.extend(table_moves(&table, dst));
        }
        balance[dst] += numslots;
        balance[src] -= numslots;
        if balance[dst] == 0 {
            dst_idx += 1;
        }
        if balance[src] == 0 {
            src_idx = src_idx.saturating_sub(1);
        }
        if numslots == 0 && balance[dst] != 0 && balance[src] != 0 {
            break; // cannot happen with balances summing to zero; never loop forever
        }
    }
    Ok(RebalancePlan {
        needed,
        involved,
        weights,
        total_weight,
        balances,
        moves,
    })
}

/// Where a reshard takes slots from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sources {
    /// `--cluster-from all`: every master but the target, in view order.
    All,
    /// `--cluster-from id1,id2`: full node ids.
    Ids(Vec<String>),
}

impl Sources {
    /// The sources of `--cluster-from TEXT` as redis-cli reads it: split on `,`, empty parts
    /// skipped, and an `all` anywhere stops the list and means every master.
    pub fn parse(text: &str) -> Sources {
        let mut ids = Vec::new();
        for part in text.split(',') {
            if part == "all" {
                return Sources::All;
            }
            if !part.is_empty() {
                ids.push(part.to_string());
            }
        }
        Sources::Ids(ids)
    }
}

/// What `reshard` decides.
#[derive(Debug, Clone, PartialEq)]
pub struct ReshardPlan {
    /// The receiving node.
    pub target: usize,
    /// The source nodes, as redis-cli lists them.
    pub sources: Vec<usize>,
    /// Slots asked for.
    pub requested: usize,
    /// The moves (all to `target`), in execution order.
    pub moves: Vec<Move>,
    /// Sources named that redis-cli skips with "It is not possible to use the target node as
    /// source node".
    pub skipped_target: bool,
}

impl ReshardPlan {
    /// What the operator should know before running it: a target also named as a source
    /// (redis-cli skips it), fewer slots planned than asked for.
    pub fn warnings(&self, view: &ClusterView) -> Vec<Warning> {
        let mut warnings = Vec::new();
        let target = &view.nodes[self.target].name;
        if self.skipped_target {
            warnings.push(Warning::new(
                WarningKind::TargetIsSource {
                    node: target.clone(),
                },
                format!(
                    "{target} is the target and also listed as a source: redis-cli skips it (\"It is not possible to use the target node as source node\")"
                ),
            ));
        }
        let planned: usize = self.moves.iter().map(|m| m.slots.len()).sum();
        if planned < self.requested {
            warnings.push(Warning::new(
                WarningKind::FewerSlots {
                    planned,
                    asked: self.requested,
                },
                format!(
                    "the plan moves {planned} slots, not {}: redis-cli rounds each source's share down (the largest source's up), or the sources own fewer slots",
                    self.requested
                ),
            ));
        }
        warnings
    }
}

/// The plan `redis-cli --cluster reshard --cluster-from FROM --cluster-to TO --cluster-slots N`
/// executes on `view`.
pub fn reshard(
    view: &ClusterView,
    from: &Sources,
    to: &str,
    numslots: usize,
) -> Result<ReshardPlan, MigrateError> {
    view.check("resharding")?;
    if numslots == 0 || numslots > SLOT_COUNT {
        return Err(MigrateError::Input {
            input: PlanInput::Slots,
            value: Some(numslots.to_string()),
            problem: Problem::SlotCount,
        });
    }
    let master = |name: &str, input: PlanInput| -> Result<usize, MigrateError> {
        match view.node_by_name(name) {
            Some(i) if view.nodes[i].master => Ok(i),
            _ => Err(MigrateError::NotAMaster {
                input,
                name: name.to_string(),
            }),
        }
    };
    let target = master(to, PlanInput::To)?;
    let mut sources = Vec::new();
    let mut skipped_target = false;
    match from {
        Sources::All => {
            sources.extend(view.masters().into_iter().filter(|&i| i != target));
        }
        Sources::Ids(ids) => {
            for id in ids {
                let i = master(id, PlanInput::From)?;
                if i == target {
                    skipped_target = true;
                    continue;
                }
                if sources.contains(&i) {
                    return Err(MigrateError::Input {
                        input: PlanInput::From,
                        value: Some(id.to_string()),
                        problem: Problem::ListedTwice,
                    });
                }
                sources.push(i);
            }
        }
    }
    if sources.is_empty() {
        return Err(MigrateError::Invalid(
            "no source nodes (redis-cli: \"*** No source nodes given, operation aborted.\")".into(),
        ));
    }
    let counts: Vec<usize> = (0..view.nodes.len()).map(|i| view.slot_count(i)).collect();
    let owned = Owned {
        owner: view.owner.clone(),
    };
    let table = reshard_table(&sources, &counts, &owned, numslots);
    Ok(ReshardPlan {
        target,
        sources,
        requested: numslots,
        moves: table_moves(&table, target),
        skipped_target,
    })
}

/// The slots of node `node` when the plan for removing it runs: `redis-cli --cluster
/// rebalance --cluster-weight <id>=0` (its slots spread over the other masters), after which
/// `del-node` can remove it.
pub fn drain_options(
    view: &ClusterView,
    node: usize,
    base: &RebalanceOptions,
) -> Result<RebalanceOptions, MigrateError> {
    let n = &view.nodes[node];
    if !n.master {
        return Err(MigrateError::Input {
            input: PlanInput::RemoveNode,
            value: Some(n.name.clone()),
            problem: Problem::Replica,
        });
    }
    let key = n.id.clone().unwrap_or_else(|| n.name.clone());
    let mut o = base.clone();
    o.weights.push((key, 0.0));
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::ranges_text;
    use crate::topology::SlotMap;

    fn view(masters: usize) -> ClusterView {
        ClusterView::from_slot_map(&SlotMap::from_masters(masters).unwrap())
    }

    #[test]
    fn sources_are_read_as_redis_cli_reads_cluster_from() {
        let ids = |v: &[&str]| Sources::Ids(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(Sources::parse("a,,b"), ids(&["a", "b"]));
        assert_eq!(Sources::parse("a,all,b"), Sources::All);
        assert_eq!(Sources::parse("all"), Sources::All);
        assert_eq!(Sources::parse(""), ids(&[]));
    }

    fn opts() -> RebalanceOptions {
        RebalanceOptions {
            threshold: DEFAULT_THRESHOLD,
            ..Default::default()
        }
    }

    #[test]
    fn balanced_cluster_needs_nothing() {
        let p = rebalance(&view(3), &opts()).unwrap();
        assert!(!p.needed && p.moves.is_empty());
        // An empty master is left out unless --use-empty-masters.
        let mut v = view(3);
        v.add_node("10.0.0.4:7000").unwrap();
        assert!(!rebalance(&v, &opts()).unwrap().needed);
    }

    #[test]
    fn empty_master_receives_from_every_master() {
        let mut v = view(3);
        v.add_node("10.0.0.4:7000").unwrap();
        let p = rebalance(
            &v,
            &RebalanceOptions {
                use_empty_masters: true,
                ..opts()
            },
        )
        .unwrap();
        assert!(p.needed);
        // Balances: A 1365, B 1366, C 1365, D -4096; sorted stably: D, A, C, B.
        assert_eq!(
            p.balances,
            vec![(3, -4096), (0, 1365), (2, 1365), (1, 1366)]
        );
        let got: Vec<(usize, usize, String)> = p
            .moves
            .iter()
            .map(|m| (m.from, m.to, ranges_text(&m.slots)))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 3, "5461-6826".to_string()),
                (2, 3, "10923-12287".to_string()),
                (0, 3, "0-1364".to_string()),
            ]
        );
    }

    #[test]
    fn weights_and_draining() {
        let v = view(3);
        let o = drain_options(&v, 1, &opts()).unwrap();
        let p = rebalance(&v, &o).unwrap();
        let after = v.owners_after(&p.moves);
        assert_eq!(after.iter().filter(|&&o| o == Some(1)).count(), 0);
        let a = after.iter().filter(|&&o| o == Some(0)).count();
        let c = after.iter().filter(|&&o| o == Some(2)).count();
        assert_eq!(a + c, 16384);
        assert!(a.abs_diff(c) <= 1);
        // A weight naming no node is refused like redis-cli refuses it.
        let bad = RebalanceOptions {
            weights: vec![("ffff".into(), 2.0)],
            ..opts()
        };
        assert_eq!(
            rebalance(&v, &bad).unwrap_err(),
            MigrateError::NoSuchNode("ffff".into())
        );
        // Weight 2 on master-0: expected 8192 / 4096 / 4096.
        let w = RebalanceOptions {
            weights: vec![("master-0".into(), 2.0)],
            ..opts()
        };
        let p = rebalance(&v, &w).unwrap();
        let after = v.owners_after(&p.moves);
        let count = |i| after.iter().filter(|&&o| o == Some(i)).count();
        assert_eq!((count(0), count(1), count(2)), (8192, 4096, 4096));
    }

    #[test]
    fn threshold_decides() {
        // 0-5000 / 5001-16383 on two masters: 5000 off 8192 is far beyond 2%.
        let text =
            "nodes:\n  - name: a\n    slots: \"0-8000\"\n  - name: b\n    slots: \"8001-16383\"\n";
        let t = crate::topology::Topology::parse(text, false).unwrap();
        let v = ClusterView::from_slot_map(t.slot_map().unwrap());
        // a has 8001 (expected 8192: 2.39% off), b 8383 (2.28% off).
        assert!(rebalance(&v, &opts()).unwrap().needed);
        let lax = RebalanceOptions {
            threshold: 2.5,
            ..opts()
        };
        assert!(!rebalance(&v, &lax).unwrap().needed);
        let p = rebalance(&v, &opts()).unwrap();
        assert_eq!(p.moves.len(), 1);
        assert_eq!(ranges_text(&p.moves[0].slots), "8001-8191");
    }

    #[test]
    fn reshard_splits_proportionally() {
        let mut v = view(3);
        let d = v.add_node("10.0.0.4:7000").unwrap();
        let p = reshard(&v, &Sources::All, "10.0.0.4:7000", 4096).unwrap();
        assert_eq!(p.target, d);
        // Sorted by count: master-1 (5462) first (ceil), then master-0, master-2 (floor).
        let got: Vec<(usize, String)> = p
            .moves
            .iter()
            .map(|m| (m.from, ranges_text(&m.slots)))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "5461-6826".to_string()),
                (0, "0-1364".to_string()),
                (2, "10923-12287".to_string())
            ]
        );
        let total: usize = p.moves.iter().map(|m| m.slots.len()).sum();
        assert_eq!(total, 1366 + 1365 + 1365);
        // The target named among the sources is skipped, as redis-cli skips it.
        let p = reshard(
            &v,
            &Sources::Ids(vec!["master-0".into(), "10.0.0.4:7000".into()]),
            "10.0.0.4:7000",
            10,
        )
        .unwrap();
        assert!(p.skipped_target);
        assert_eq!(ranges_text(&p.moves[0].slots), "0-9");
        let w = p.warnings(&v);
        assert_eq!(w.len(), 1);
        assert!(
            matches!(&w[0].what, WarningKind::TargetIsSource { node } if node == "10.0.0.4:7000"),
            "{w:?}"
        );
        assert!(reshard(&v, &Sources::Ids(vec!["nope".into()]), "master-0", 1).is_err());
    }

    #[test]
    fn floor_rounding_can_fall_short() {
        // Four one-slot... here: asking 2 slots from 3 equal sources gives ceil(0.67)=1 then
        // floor(0.67)=0 twice: a plan of 1 slot, as redis-cli computes it.
        let v = view(3);
        let p = reshard(
            &v,
            &Sources::Ids(vec!["master-0".into(), "master-2".into()]),
            "master-1",
            1,
        )
        .unwrap();
        assert_eq!(p.moves.iter().map(|m| m.slots.len()).sum::<usize>(), 1);
        let p = reshard(
            &v,
            &Sources::Ids(vec!["master-0".into(), "master-2".into()]),
            "master-1",
            3,
        )
        .unwrap();
        // 3/10922*5461 = 1.5: ceil 2 from master-0, floor 1 from master-2.
        assert_eq!(p.moves.iter().map(|m| m.slots.len()).sum::<usize>(), 3);
        let p = reshard(&v, &Sources::All, "master-1", 1).unwrap();
        assert_eq!(p.moves.len(), 1);
        assert!(p.warnings(&v).is_empty());
        // Two slots from three sources of 4096: 0.67 each, rounded up once and down twice.
        let v = view(4);
        let p = reshard(&v, &Sources::All, "master-3", 2).unwrap();
        let w = p.warnings(&v);
        assert!(
            matches!(
                w[..],
                [Warning {
                    what: WarningKind::FewerSlots {
                        planned: 1,
                        asked: 2
                    },
                    ..
                }]
            ),
            "{w:?}"
        );
    }
}
