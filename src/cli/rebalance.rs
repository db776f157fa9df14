//! `keyplan rebalance --preview`: the plan `redis-cli --cluster rebalance` would execute (or a
//! load-aware one) and what it does to every node.

use super::Ctx;
use super::migration::{
    Opened, PreviewArgs, load_batches, load_sample, motion, output, require_preview,
};
use crate::error::{ExitStatus, UserError};
use crate::migrate::balance::{
    BalanceBy, hottest_slot, rebalance_plans, side_effects, still_serving,
};
use crate::migrate::emit::EmitContext;
use crate::migrate::impact::SlotWeights;
use crate::migrate::redis_cli::{self, RebalanceOptions};
use crate::migrate::{ClusterView, MigrationReport};

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

    /// With --balance-by other than slots: the sample's other weights (keys, bytes, ops) may
    /// not end with a node above this many times its fair share (nor below its fair share
    /// divided by it) through the plan's moves; a plan that leaves one worse past it is warned
    /// about (exit 1)
    #[arg(long, default_value_t = 1.25, value_name = "X", value_parser = max_skew)]
    pub max_skew: f64,

    /// Preview adding an empty master at ADDR (add-node + rebalance --cluster-use-empty-masters)
    #[arg(long, value_name = "ADDR")]
    pub add_node: Vec<String>,

    /// Preview removing a master: its slots spread over the others (rebalance with its weight
    /// 0), then del-node
    #[arg(long, value_name = "ID")]
    pub remove_node: Vec<String>,

    /// Carrying the plan out (--apply).
    #[command(flatten)]
    pub apply: super::reshard::ApplyArgs,
}

/// `--max-skew`: a ratio of at least 1.
fn max_skew(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x >= 1.0 && x.is_finite() => Ok(x),
        _ => Err("not a ratio of at least 1 (e.g. --max-skew 1.25)".into()),
    }
}

/// For `--balance-by cpu|net|memory`: whether the servers measure that load, asked of one
/// master's first slot before the (rate-limited) sample, so that a cluster without `CLUSTER
/// SLOT-STATS` is refused at once, not after sampling every key.
fn measured_available(
    args: &RebalanceArgs,
    live: Option<&crate::live::LiveCluster>,
    view: &ClusterView,
) -> anyhow::Result<()> {
    if !args.balance_by.needs_measured() {
        return Ok(());
    }
    let mut probe = SlotWeights::default();
    let sampled_live = args.common.keys.is_empty() && !args.common.no_sample;
    if sampled_live && let Some(live) = live {
        let first: Vec<_> = view
            .master_slots()
            .into_iter()
            .filter_map(|(n, slots)| slots.first().map(|&s| (n, vec![s])))
            .take(1)
            .collect();
        probe.measured = live.slot_load(&first, None)?.as_ref().map(Into::into);
    }
    args.balance_by.available(&probe)?;
    Ok(())
}

/// Runs `keyplan rebalance`.
pub fn run(args: RebalanceArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    if args.apply.resume {
        let url = args.common.topology.cluster.as_deref();
        return super::reshard::run_apply(
            "rebalance",
            &args.apply,
            args.common.pipeline,
            url,
            None,
            ctx,
        );
    }
    if !args.apply.apply {
        require_preview(&args.common, "rebalance")?;
    }
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
        .map(|w| super::migration::parse_weight(w))
        .collect::<Result<_, _>>()?;
    let mut open = Opened::open(&args.common)?;
    let view = &mut open.view;
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
        opts = redis_cli::drain_options(view, i, &opts)?;
        removed.push(i);
    }
    let view = &open.view;
    measured_available(&args, open.loaded.live.as_ref(), view)?;
    let live = open.loaded.live.as_ref();
    let (weights_by_slot, sample) = load_sample(&args.common, live, view, ctx)?;
    args.balance_by.available(&weights_by_slot)?;
    let (batches, clients) = load_batches(&args.common, open.loaded.scheme.as_ref())?;

    let (mut plan, compare, moves) = rebalance_plans(
        view,
        args.balance_by,
        &weights_by_slot,
        &opts,
        args.max_skew,
    )?;
    // Nothing could improve: the slot that holds it is named, and its biggest key when the
    // sample knows it.
    if compare.is_some() && moves.is_empty() && !plan.needed {
        let hottest = hottest_slot(&args.balance_by.slot_weights(&weights_by_slot));
        let known = sample
            .big_keys
            .iter()
            .find(|(k, _)| crate::slot::key_slot(k) == hottest)
            .map(|(k, b)| (k.clone(), *b))
            .or_else(|| {
                let big = sample.snapshot.as_ref()?.slot_biggest(hottest)?;
                Some((big.key.0, big.memory))
            });
        if let (Some(m), Some((key, bytes))) = (plan.message.as_mut(), known)
            && m.starts_with("Nothing to move")
        {
            m.push_str(&format!(
                " Its biggest key is {} ({}); split it, or spread its data over several keys in other slots.",
                crate::keys::display::display_key(&key),
                crate::report::analyze::human_bytes(bytes)
            ));
        }
    }
    let side = if compare.is_some() {
        side_effects(&plan, args.max_skew, super::migration::flag)
    } else {
        Vec::new()
    };
    let mut report = MigrationReport {
        command: "rebalance",
        topology: open.source.clone(),
        skipped_nodes: view.skipped.clone(),
        sample,
        batches: motion(view, &moves, &batches, &clients),
        plan,
        compare,
        warnings: Vec::new(),
        moving_big_keys: Vec::new(),
        time_estimate: None,
    };
    open.complete(&mut report, &moves, &weights_by_slot)?;
    report
        .warnings
        .extend(still_serving(view, &moves, &removed));
    report.warnings.extend(side);
    let emit_ctx = EmitContext {
        remove: removed,
        layout: Some(crate::migrate::managed::layout(
            args.balance_by,
            &weights_by_slot,
            &report,
        )),
        ..EmitContext::rebalance(&report.plan, &report.topology, &opts)
    };
    let status = output(
        &args.common,
        &open.loaded.target,
        &report,
        view,
        &moves,
        &emit_ctx,
        ctx,
    )?;
    if args.apply.apply {
        let url = args.common.topology.cluster.as_deref();
        return super::reshard::run_apply(
            "rebalance",
            &args.apply,
            args.common.pipeline,
            url,
            Some((view, &moves)),
            ctx,
        );
    }
    Ok(status)
}
