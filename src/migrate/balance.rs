//! What a rebalance balances, and the plan reports of both planners: redis-cli's slot-count
//! plan and keyplan's load-aware one, with the warnings a plan's result calls for.

use super::impact::{SlotWeights, impact};
use super::load_aware::{self, LoadAwareOptions};
use super::redis_cli::{RebalanceOptions, RebalancePlan};
use super::{
    ClusterView, InputNames, MigrateError, MigrationPlan, Move, PlanInput, Warning, WarningKind,
};
use crate::slot::SLOT_COUNT;

/// What a rebalance balances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalanceBy {
    /// Slot counts, exactly as redis-cli --cluster rebalance
    Slots,
    /// Sample keys per node
    Keys,
    /// Sample bytes per node (a sample that carries each key's bytes)
    Bytes,
    /// Sample ops per node (a sample that carries each key's ops)
    Ops,
    /// CPU time per slot as the servers measured it (`CLUSTER SLOT-STATS`)
    Cpu,
    /// Network bytes in and out per slot as the servers measured them (`CLUSTER SLOT-STATS`)
    Net,
    /// Memory per slot as the servers measured it (Redis 8.2+ `CLUSTER SLOT-STATS`)
    Memory,
}

impl BalanceBy {
    /// Whether it weighs slots by what the servers measure per slot (`CLUSTER SLOT-STATS`).
    pub fn needs_measured(self) -> bool {
        matches!(self, BalanceBy::Cpu | BalanceBy::Net | BalanceBy::Memory)
    }

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            BalanceBy::Slots => "slots",
            BalanceBy::Keys => "keys",
            BalanceBy::Bytes => "bytes",
            BalanceBy::Ops => "ops",
            BalanceBy::Cpu => "cpu",
            BalanceBy::Net => "net",
            BalanceBy::Memory => "memory",
        }
    }

    /// Each slot's weight under this measure (0 for a measured load that was not read).
    pub fn slot_weights(self, w: &SlotWeights) -> Vec<f64> {
        let m = w.measured.as_ref();
        (0..SLOT_COUNT)
            .map(|s| match self {
                BalanceBy::Keys => w.keys[s] as f64,
                BalanceBy::Bytes => w.bytes[s] as f64,
                BalanceBy::Ops => w.ops[s],
                BalanceBy::Slots => 1.0,
                BalanceBy::Cpu => m.map_or(0.0, |m| m.cpu_usec[s]),
                BalanceBy::Net => m.map_or(0.0, |m| m.net_bytes[s]),
                BalanceBy::Memory => m.and_then(|m| m.memory.as_ref()).map_or(0.0, |v| v[s]),
            })
            .collect()
    }

    /// Whether the weights can balance by this measure, or why not.
    pub fn available(self, w: &SlotWeights) -> Result<(), Unavailable> {
        match self {
            BalanceBy::Slots => Ok(()),
            BalanceBy::Keys | BalanceBy::Bytes | BalanceBy::Ops if w.total_keys() == 0 => {
                Err(Unavailable::NoSample(self))
            }
            BalanceBy::Bytes if !w.has_bytes => Err(Unavailable::NoBytes(self)),
            BalanceBy::Ops if !w.has_ops => Err(Unavailable::NoOps(self)),
            BalanceBy::Cpu | BalanceBy::Net | BalanceBy::Memory if w.measured.is_none() => {
                Err(Unavailable::NoSlotStats(self))
            }
            BalanceBy::Memory if w.measured.as_ref().is_some_and(|m| m.memory.is_none()) => {
                Err(Unavailable::NoMemoryStats(self))
            }
            _ => Ok(()),
        }
    }
}

/// Why a rebalance cannot balance by a measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// No key sample.
    #[error("balancing by {} needs a key sample", .0.name())]
    NoSample(BalanceBy),
    /// A sample without bytes.
    #[error("balancing by {} needs bytes in the sample", .0.name())]
    NoBytes(BalanceBy),
    /// A sample without ops.
    #[error("balancing by {} needs ops in the sample", .0.name())]
    NoOps(BalanceBy),
    /// No per-slot load from the servers.
    #[error("balancing by {} needs the load the servers measure per slot", .0.name())]
    NoSlotStats(BalanceBy),
    /// Per-slot load without memory.
    #[error(
        "balancing by {} needs per-slot memory-bytes from CLUSTER SLOT-STATS (Redis 8.2+)",
        .0.name()
    )]
    NoMemoryStats(BalanceBy),
}

/// The plan a rebalance preview shows, with the moves it makes: redis-cli's own when `by` is
/// slots, else the load-aware plan with redis-cli's beside it (the second report).
pub fn rebalance_plans(
    view: &ClusterView,
    by: BalanceBy,
    weights: &SlotWeights,
    opts: &RebalanceOptions,
    max_skew: f64,
) -> Result<(MigrationPlan, Option<MigrationPlan>, Vec<Move>), MigrateError> {
    let slot_plan = super::redis_cli::rebalance(view, opts)?;
    let slot_report = redis_cli_report(view, &slot_plan, opts, weights);
    if by == BalanceBy::Slots {
        return Ok((slot_report, None, slot_plan.moves));
    }
    let (report, moves) = load_aware_report(view, by, weights, opts, opts.threshold, max_skew)?;
    Ok((report, Some(slot_report), moves))
}

/// The sample's weights other than `by` that a load-aware plan keeps within `--max-skew`:
/// keys, and bytes and ops when the sample has them.
fn guards(by: BalanceBy, w: &SlotWeights) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for other in [BalanceBy::Keys, BalanceBy::Bytes, BalanceBy::Ops] {
        if other != by && other.available(w).is_ok() {
            out.push(other.slot_weights(w));
        }
    }
    out
}

/// The load-aware plan balancing `by` (within `tolerance`, a fraction of each node's target;
/// the other weights kept within `max_skew`), with its report.
pub fn load_aware_report(
    view: &ClusterView,
    by: BalanceBy,
    weights: &SlotWeights,
    opts: &RebalanceOptions,
    tolerance_pct: f32,
    max_skew: f64,
) -> Result<(MigrationPlan, Vec<Move>), MigrateError> {
    let la = load_aware::plan(
        view,
        &by.slot_weights(weights),
        &LoadAwareOptions {
            weights: opts.weights.clone(),
            use_empty_masters: opts.use_empty_masters,
            tolerance: tolerance_pct as f64 / 100.0,
            guards: guards(by, weights),
            max_skew,
        },
    )?;
    // The objective cannot improve: moving slots would shuffle the other weights for nothing.
    let moved = impact(view, &la.moves, weights);
    let pick = |set: &super::impact::SkewSet| match by {
        BalanceBy::Keys => set.keys.clone(),
        BalanceBy::Bytes => set.bytes.clone(),
        BalanceBy::Ops => set.ops.clone(),
        BalanceBy::Cpu => set.cpu.clone(),
        _ => None,
    };
    if !la.within_tolerance
        && let (Some(b), Some(a)) = (pick(&moved.skew.before), pick(&moved.skew.after))
        && b.max_over_mean - a.max_over_mean < NO_GAIN.max(0.1 * (b.max_over_mean - 1.0))
    {
        let w = by.slot_weights(weights);
        let total: f64 = w.iter().sum();
        let hottest = hottest_slot(&w);
        let report = MigrationPlan {
            plan: "load-aware".into(),
            balance_by: by.name().into(),
            needed: false,
            message: Some(format!(
                "Nothing to move: balancing by {0} cannot improve it ({1:.2}× the mean node before, {2:.2}× after the best plan found), because slot {hottest} alone holds {3:.1}% of the {0} and a slot moves whole.",
                by.name(),
                b.max_over_mean,
                a.max_over_mean,
                if total > 0.0 {
                    100.0 * w[usize::from(hottest)] / total
                } else {
                    0.0
                },
            )),
            impact: impact(view, &[], weights),
            migration_seconds: None,
        };
        return Ok((report, Vec::new()));
    }
    let message = if !la.within_tolerance {
        Some(format!(
            "The busiest node stays at {:.2}× its share of {}: its hottest slots cannot be split (hash tags), and further moves would only strip it of lighter slots or push the other weights past --max-skew; see `keyplan analyze` for the tags.",
            la.max_over_target,
            by.name()
        ))
    } else if la.moves.is_empty() {
        Some(format!(
            "No moves needed: every node is within {tolerance_pct:.2}% of its share of {}.",
            by.name()
        ))
    } else {
        None
    };
    let report = MigrationPlan {
        plan: "load-aware".into(),
        balance_by: by.name().into(),
        needed: !la.moves.is_empty(),
        message,
        impact: moved,
        migration_seconds: None,
    };
    Ok((report, la.moves))
}

/// The report of redis-cli's own rebalance plan `p`.
pub fn redis_cli_report(
    view: &ClusterView,
    p: &RebalancePlan,
    opts: &RebalanceOptions,
    w: &SlotWeights,
) -> MigrationPlan {
    MigrationPlan {
        plan: "redis-cli rebalance".into(),
        balance_by: "slots".into(),
        needed: p.needed,
        message: (!p.needed).then(|| {
            format!(
                "*** No rebalancing needed! All nodes are within the {:.2}% threshold.",
                opts.threshold
            )
        }),
        impact: impact(view, &p.moves, w),
        migration_seconds: None,
    }
}

/// A node ending with less than this share of its fair share of keys is "near empty".
/// The slot of most weight in `w` (the lowest of equals).
pub fn hottest_slot(w: &[f64]) -> u16 {
    (0..w.len())
        .max_by(|&x, &y| w[x].total_cmp(&w[y]).then(y.cmp(&x)))
        .unwrap_or(0) as u16
}

const NEAR_EMPTY: f64 = 0.1;

/// How much a load-aware plan that misses its tolerance must lower its objective's max/mean
/// to be worth moving slots: this much, and a tenth of the way to an even spread (2.95× →
/// 2.93× around one huge key is no gain).
const NO_GAIN: f64 = 0.01;

/// Warnings for what a plan does to the weights it does not balance: a skew (keys, bytes or
/// ops) made worse past `max_skew`, and a node that keeps slots but ends near empty by keys.
pub fn side_effects(report: &MigrationPlan, max_skew: f64, names: InputNames) -> Vec<Warning> {
    let mut out = Vec::new();
    let (before, after) = (&report.impact.skew.before, &report.impact.skew.after);
    for (name, b, a) in [
        ("keys", &before.keys, &after.keys),
        ("bytes", &before.bytes, &after.bytes),
        ("ops", &before.ops, &after.ops),
    ] {
        if name == report.balance_by {
            continue;
        }
        let (Some(b), Some(a)) = (b, a) else {
            continue;
        };
        if a.max_over_mean > max_skew && a.max_over_mean > b.max_over_mean + 1e-9 {
            out.push(Warning::new(
                WarningKind::SkewWorse {
                    weight: name.to_string(),
                    before: b.max_over_mean,
                    after: a.max_over_mean,
                    max_skew,
                },
                format!(
                    "balancing {} makes {name} worse: the busiest node goes from {:.2}× to {:.2}× the mean, past {} {max_skew}",
                    report.balance_by,
                    b.max_over_mean,
                    a.max_over_mean,
                    names(PlanInput::MaxSkew)
                ),
            ));
        }
    }
    let served: Vec<_> = report
        .impact
        .nodes
        .iter()
        .filter(|n| n.after.slots > 0)
        .collect();
    let keys: u64 = served.iter().map(|n| n.after.keys).sum();
    if keys > 0 && served.len() > 1 {
        let fair = keys as f64 / served.len() as f64;
        for n in served {
            if (n.after.keys as f64) < fair * NEAR_EMPTY && n.after.keys < n.before.keys {
                out.push(Warning::new(
                    WarningKind::NearEmpty {
                        node: n.name.clone(),
                        keys: n.after.keys,
                        fair,
                    },
                    format!(
                        "{} ends near empty: {} key(s) after the plan, {:.1}% of its fair share of {:.0} (it keeps {} slot(s))",
                        n.name,
                        n.after.keys,
                        100.0 * n.after.keys as f64 / fair,
                        fair,
                        n.after.slots
                    ),
                ));
            }
        }
    }
    out
}

/// Warnings for nodes being removed (`removed`) that still serve slots after `moves`.
pub fn still_serving(view: &ClusterView, moves: &[Move], removed: &[usize]) -> Vec<Warning> {
    if removed.is_empty() {
        return Vec::new();
    }
    let after = view.owners_after(moves);
    removed
        .iter()
        .filter(|&&r| after.contains(&Some(r)))
        .map(|&r| {
            Warning::new(
                WarningKind::StillServes {
                    node: view.nodes[r].name.clone(),
                },
                format!(
                    "{} still serves slots after the plan: del-node would refuse it",
                    view.nodes[r].name
                ),
            )
        })
        .collect()
}
