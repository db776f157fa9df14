//! `keyplan rebalance --preview`: the plan `redis-cli --cluster rebalance` would execute (or a
//! load-aware one) and what it does to every node.

use super::Ctx;
use super::migration::{
    PreviewArgs, estimates, load_batches, load_preview_scheme, load_sample, load_view, motion,
    output, require_preview,
};
use crate::error::{ExitStatus, UserError};
use crate::migrate::emit::EmitContext;
use crate::migrate::impact::{SlotWeights, impact};
use crate::migrate::load_aware::{self, LoadAwareOptions};
use crate::migrate::redis_cli::{self, RebalanceOptions};
use crate::migrate::{ClusterView, MigrationReport, PlanReport};
use crate::migrate::{Move, Warning, WarningKind};
use crate::slot::SLOT_COUNT;

/// What a load-aware plan balances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BalanceBy {
    /// Slot counts, exactly as redis-cli --cluster rebalance
    Slots,
    /// Sample keys per node
    Keys,
    /// Sample bytes per node (tsv samples or --bytes)
    Bytes,
    /// Sample ops per node (tsv samples with an ops column)
    Ops,
}

impl BalanceBy {
    fn name(self) -> &'static str {
        match self {
            BalanceBy::Slots => "slots",
            BalanceBy::Keys => "keys",
            BalanceBy::Bytes => "bytes",
            BalanceBy::Ops => "ops",
        }
    }
}

/// Preview `redis-cli --cluster rebalance`: which slots move where, and what that does to
/// every node's keys, bytes and ops.
///
/// With --balance-by slots (the default) the plan is exactly redis-cli's: its weights,
/// threshold, rounding fix, node order and lowest-slots-first choice. With keys, bytes or ops
/// keyplan plans to balance what the sample says and shows redis-cli's plan beside it.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan rebalance --preview --topology nodes.txt --keys sample.keys\n  keyplan rebalance --preview --topology nodes.txt --add-node 10.0.0.9:7000 --keys sample.tsv --migrate-rate 20MB/s\n  keyplan rebalance --preview --topology nodes.txt --keys sample.keys --balance-by keys\n  keyplan rebalance --preview --topology nodes.txt --remove-node 3c3a0c74aae0b56170ccb03a76b60cfe7dc1912e --emit redis-cli"
)]
pub struct RebalanceArgs {
    /// Shared preview options.
    #[command(flatten)]
    pub common: PreviewArgs,

    /// A node's weight, as --cluster-weight: NODE is a node id prefix (or an address)
    #[arg(long = "weight", value_name = "NODE=W", num_args = 1..)]
    pub weights: Vec<String>,

    /// Let masters without slots take part (--cluster-use-empty-masters)
    #[arg(long)]
    pub use_empty_masters: bool,

    /// Rebalance only when some node is more than PCT percent off its share (--cluster-threshold)
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub threshold: f32,

    /// What to balance: slot counts (redis-cli), or the sample's keys, bytes or ops
    #[arg(long, value_enum, default_value = "slots")]
    pub balance_by: BalanceBy,

    /// Preview adding an empty master at ADDR (add-node + rebalance --cluster-use-empty-masters)
    #[arg(long, value_name = "ADDR")]
    pub add_node: Vec<String>,

    /// Preview removing a master: its slots spread over the others (rebalance with its weight
    /// 0), then del-node
    #[arg(long, value_name = "ID")]
    pub remove_node: Vec<String>,
}

fn parse_weight(s: &str) -> Result<(String, f32), UserError> {
    let bad = |why: &str| {
        UserError::new(
            format!("--weight {s}: {why}"),
            "write NODE=WEIGHT, NODE being a node id prefix (or an address), e.g. --weight 3c3a0c74=2",
        )
    };
    let (name, w) = s.split_once('=').ok_or_else(|| bad("no '='"))?;
    let w: f32 = w
        .trim()
        .parse()
        .map_err(|_| bad("the weight is not a number"))?;
    if !(w >= 0.0 && w.is_finite()) {
        return Err(bad("the weight must be 0 or more"));
    }
    Ok((name.to_string(), w))
}

/// Runs `keyplan rebalance`.
pub fn run(args: RebalanceArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    require_preview(&args.common, "rebalance")?;
    if !(args.threshold >= 0.0 && args.threshold.is_finite()) {
        return Err(UserError::new(
            format!("--threshold {}: not a percentage", args.threshold),
            "give a percentage such as 2 (redis-cli's default)",
        )
        .into());
    }
    let weights: Vec<(String, f32)> = args
        .weights
        .iter()
        .map(|w| parse_weight(w))
        .collect::<Result<_, _>>()?;
    let (rate, budget) = estimates(&args.common)?;
    let scheme = load_preview_scheme(&args.common)?;
    let (mut view, source) = load_view(&args.common.topology.with_scheme(scheme.as_ref()))?;
    for a in &args.add_node {
        view.add_node(a)?;
    }
    let mut opts = RebalanceOptions {
        weights,
        use_empty_masters: args.use_empty_masters || !args.add_node.is_empty(),
        threshold: args.threshold,
    };
    let mut removed = Vec::new();
    for r in &args.remove_node {
        let i = view.node_by_name(r).ok_or_else(|| {
            UserError::new(
                format!("--remove-node {r}: no such node"),
                "give the node's full id (or its address for a topology without ids)",
            )
        })?;
        opts = redis_cli::drain_options(&view, i, &opts)?;
        removed.push(i);
    }
    let (weights_by_slot, sample) = load_sample(&args.common, &view, ctx)?;
    if args.balance_by != BalanceBy::Slots {
        check_sample(&sample, &weights_by_slot, args.balance_by)?;
    }
    let (batches, clients) = load_batches(&args.common, scheme.as_ref())?;

    let slot_plan = redis_cli::rebalance(&view, &opts)?;
    let slot_report = slot_plan_report(&view, &slot_plan, &opts, &weights_by_slot);
    let (plan, compare, moves) = if args.balance_by == BalanceBy::Slots {
        let moves = slot_plan.moves.clone();
        (slot_report, None, moves)
    } else {
        let (report, moves) = load_aware_plan(&args, &view, &opts, &weights_by_slot)?;
        (report, Some(slot_report), moves)
    };
    let mut report = MigrationReport {
        command: "rebalance",
        topology: source,
        skipped_nodes: view.skipped.clone(),
        sample,
        batches: motion(&view, &moves, &batches, &clients),
        plan,
        compare,
        warnings: Vec::new(),
    };
    crate::migrate::finish_report(&mut report, &view, &moves, rate, budget)?;
    report
        .warnings
        .extend(still_serving(&view, &moves, &removed));
    let header = script_header(&args, &report, &opts);
    let emit_ctx = EmitContext {
        header,
        remove: removed,
    };
    output(&args.common, &report, &view, &moves, &emit_ctx, ctx)
}

/// The load-aware plan of `--balance-by keys|bytes|ops`, with its report.
fn load_aware_plan(
    args: &RebalanceArgs,
    view: &ClusterView,
    opts: &RebalanceOptions,
    weights_by_slot: &SlotWeights,
) -> anyhow::Result<(PlanReport, Vec<Move>)> {
    let w: Vec<f64> = (0..SLOT_COUNT)
        .map(|s| match args.balance_by {
            BalanceBy::Keys => weights_by_slot.keys[s] as f64,
            BalanceBy::Bytes => weights_by_slot.bytes[s] as f64,
            BalanceBy::Ops => weights_by_slot.ops[s],
            BalanceBy::Slots => 1.0,
        })
        .collect();
    let la = load_aware::plan(
        view,
        &w,
        &LoadAwareOptions {
            weights: opts.weights.clone(),
            use_empty_masters: opts.use_empty_masters,
            tolerance: args.threshold as f64 / 100.0,
        },
    )?;
    let message = if la.moves.is_empty() {
        Some(format!(
            "No moves needed: every node is within {:.2}% of its share of {}.",
            args.threshold,
            args.balance_by.name()
        ))
    } else if !la.within_tolerance {
        Some(format!(
            "The busiest node stays at {:.2}× its share of {}: its hottest slots cannot be split (hash tags); see `keyplan analyze` for the tags.",
            la.max_over_target,
            args.balance_by.name()
        ))
    } else {
        None
    };
    let report = PlanReport {
        plan: "load-aware".into(),
        balance_by: args.balance_by.name().into(),
        needed: !la.moves.is_empty(),
        message,
        impact: impact(view, &la.moves, weights_by_slot),
        migration_seconds: None,
    };
    Ok((report, la.moves))
}

/// Warnings for `--remove-node` nodes that still serve slots after the plan.
fn still_serving(view: &ClusterView, moves: &[Move], removed: &[usize]) -> Vec<Warning> {
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

/// The comment lines of an emitted script: the plan, and the redis-cli command it equals.
fn script_header(
    args: &RebalanceArgs,
    report: &MigrationReport,
    opts: &RebalanceOptions,
) -> Vec<String> {
    let mut header = vec![format!(
        "{} plan (balance by {}), from {}",
        report.plan.plan, report.plan.balance_by, report.topology
    )];
    if args.balance_by == BalanceBy::Slots {
        header.push(format!(
            "Equivalent to: redis-cli --cluster rebalance <host:port>{}{}{}",
            opts.weights
                .iter()
                .map(|(n, w)| format!(" --cluster-weight {n}={w}"))
                .collect::<String>(),
            if opts.use_empty_masters {
                " --cluster-use-empty-masters"
            } else {
                ""
            },
            format_args!(" --cluster-threshold {}", args.threshold)
        ));
    }
    header
}

fn slot_plan_report(
    view: &ClusterView,
    p: &redis_cli::RebalancePlan,
    opts: &RebalanceOptions,
    w: &SlotWeights,
) -> PlanReport {
    PlanReport {
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

fn check_sample(
    sample: &crate::migrate::SampleInfo,
    w: &SlotWeights,
    by: BalanceBy,
) -> Result<(), UserError> {
    if w.total_keys() == 0 {
        return Err(UserError::new(
            format!("--balance-by {} needs a key sample", by.name()),
            "give --keys FILE (or --cluster URL to sample live)",
        ));
    }
    match by {
        BalanceBy::Bytes if !sample.has_bytes => Err(UserError::new(
            "--balance-by bytes needs bytes in the sample",
            "give a tsv sample (key<TAB>bytes) or sample live with --bytes",
        )),
        BalanceBy::Ops if !sample.has_ops => Err(UserError::new(
            "--balance-by ops needs ops in the sample",
            "give a tsv sample with a third column (key<TAB>bytes<TAB>ops)",
        )),
        _ => Ok(()),
    }
}
