//! `keyplan reshard --preview`: the plan `redis-cli --cluster reshard` would execute and what it
//! does to every node.

use super::Ctx;
use super::migration::{
    PreviewArgs, estimates, load_batches, load_preview_scheme, load_sample, load_view, motion,
    output, require_preview,
};
use crate::error::ExitStatus;
use crate::migrate::emit::EmitContext;
use crate::migrate::impact::impact;
use crate::migrate::redis_cli::{self, Sources};
use crate::migrate::{MigrationReport, PlanReport};
use crate::migrate::{Warning, WarningKind};

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
    let (rate, budget) = estimates(&args.common)?;
    let scheme = load_preview_scheme(&args.common)?;
    let (view, source) = load_view(&args.common.topology.with_scheme(scheme.as_ref()))?;
    // redis-cli splits --cluster-from on ',' and stops at an `all`.
    let mut ids = Vec::new();
    let mut all = false;
    for part in args.from.split(',') {
        if part == "all" {
            all = true;
            break;
        }
        if !part.is_empty() {
            ids.push(part.to_string());
        }
    }
    let from = if all { Sources::All } else { Sources::Ids(ids) };
    let plan = redis_cli::reshard(&view, &from, &args.to, args.slots)?;
    let (weights, sample) = load_sample(&args.common, &view, ctx)?;
    let (batches, clients) = load_batches(&args.common, scheme.as_ref())?;
    let planned: usize = plan.moves.iter().map(|m| m.slots.len()).sum();
    let mut report = MigrationReport {
        command: "reshard",
        topology: source,
        skipped_nodes: view.skipped.clone(),
        sample,
        batches: motion(&view, &plan.moves, &batches, &clients),
        plan: PlanReport {
            plan: "redis-cli reshard".into(),
            balance_by: "slots".into(),
            needed: !plan.moves.is_empty(),
            message: None,
            impact: impact(&view, &plan.moves, &weights),
            migration_seconds: None,
        },
        compare: None,
        warnings: Vec::new(),
        moving_big_keys: Vec::new(),
    };
    if plan.skipped_target {
        report.warnings.push(Warning::new(
            WarningKind::TargetIsSource {
                node: view.nodes[plan.target].name.clone(),
            },
            format!(
                "{} is the target and also listed in --from: redis-cli skips it (\"It is not possible to use the target node as source node\")",
                view.nodes[plan.target].name
            ),
        ));
    }
    if planned < args.slots {
        report.warnings.push(Warning::new(
            WarningKind::FewerSlots {
                planned,
                asked: args.slots,
            },
            format!(
                "the plan moves {planned} slots, not {}: redis-cli rounds each source's share down (the largest source's up), or the sources own fewer slots",
                args.slots
            ),
        ));
    }
    crate::migrate::finish_report(&mut report, &view, &plan.moves, rate, budget)?;
    report.add_moving_big_keys(&view, &plan.moves);
    let emit_ctx = EmitContext {
        header: vec![
            format!("redis-cli reshard plan from {}", report.topology),
            format!(
                "Equivalent to: redis-cli --cluster reshard <host:port> --cluster-from {} --cluster-to {} --cluster-slots {} --cluster-yes",
                args.from, args.to, args.slots
            ),
        ],
        remove: Vec::new(),
    };
    output(&args.common, &report, &view, &plan.moves, &emit_ctx, ctx)
}
