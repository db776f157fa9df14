//! `keyplan reshard --preview`: the plan `redis-cli --cluster reshard` would execute and what it
//! does to every node.

use super::Ctx;
use super::migration::{
    Opened, PreviewArgs, load_batches, load_sample, motion, output, require_preview,
};
use crate::error::ExitStatus;
use crate::migrate::emit::EmitContext;
use crate::migrate::impact::impact;
use crate::migrate::redis_cli::{self, Sources};
use crate::migrate::{MigrationPlan, MigrationReport};

/// Preview `redis-cli --cluster reshard --cluster-from … --cluster-to … --cluster-slots N`:
/// which slots move, and what that does to every node.
///
/// Sources give slots in proportion to what they own (the largest rounds up, the others
/// down), each its lowest-numbered slots first, exactly as redis-cli computes it.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan reshard --preview --topology nodes.txt --from all --to 3c3a0c74aae0b56170ccb03a76b60cfe7dc1912e --slots 1000 --keys sample.keys\n  keyplan reshard --preview --cluster redis://127.0.0.1:7000 --from all --to <id> --slots 500 --emit setslot"
)]
pub struct ReshardArgs {
    /// Shared preview options.
    #[command(flatten)]
    pub common: PreviewArgs,

    /// Source nodes: `all` (every other master) or full node ids separated by commas
    #[arg(long, value_name = "IDS|all")]
    pub from: String,

    /// The receiving node's full id (or its address for a topology without ids)
    #[arg(long, value_name = "ID")]
    pub to: String,

    /// How many slots to move
    #[arg(long, value_name = "N")]
    pub slots: usize,
}

/// Runs `keyplan reshard`.
pub fn run(args: ReshardArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    require_preview(&args.common, "reshard")?;
    let open = Opened::open(&args.common)?;
    let view = &open.view;
    let plan = redis_cli::reshard(view, &Sources::parse(&args.from), &args.to, args.slots)?;
    let (weights, sample) = load_sample(&args.common, open.loaded.live.as_ref(), view, ctx)?;
    let (batches, clients) = load_batches(&args.common, open.loaded.scheme.as_ref())?;
    let mut report = MigrationReport {
        command: "reshard",
        topology: open.source.clone(),
        skipped_nodes: view.skipped.clone(),
        sample,
        batches: motion(view, &plan.moves, &batches, &clients),
        plan: MigrationPlan {
            plan: "redis-cli reshard".into(),
            balance_by: "slots".into(),
            needed: !plan.moves.is_empty(),
            message: None,
            impact: impact(view, &plan.moves, &weights),
            migration_seconds: None,
        },
        compare: None,
        warnings: plan.warnings(view),
        moving_big_keys: Vec::new(),
        time_estimate: None,
    };
    open.complete(&mut report, &plan.moves, &weights)?;
    let emit_ctx = EmitContext {
        layout: Some(super::migration::layout(
            crate::migrate::balance::BalanceBy::Slots,
            &weights,
            &report,
        )),
        ..EmitContext::reshard(&report.topology, &args.from, &args.to, args.slots)
    };
    output(
        &args.common,
        &open.loaded.target,
        &report,
        view,
        &plan.moves,
        &emit_ctx,
        ctx,
    )
}
