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

    /// Carrying the plan out (--apply).
    #[command(flatten)]
    pub apply: ApplyArgs,
}

/// `--apply` and its companions, shared by rebalance and reshard.
#[derive(Debug, Clone, clap::Args)]
pub struct ApplyArgs {
    /// Carry the plan out on the live cluster (--cluster) after printing it: each slot set
    /// importing and migrating, its keys moved by MIGRATE, then given to its new owner on every
    /// master; refused when the cluster's slot map is no longer the one planned from
    #[arg(long, requires = "journal")]
    pub apply: bool,

    /// With --apply: do not ask for confirmation (required when standard input is not a
    /// terminal)
    #[arg(long, requires = "apply")]
    pub yes: bool,

    /// With --apply: the journal of the run, each slot step recorded before and after it runs
    /// (a new file; --resume continues the one given)
    #[arg(long, value_name = "FILE", requires = "apply")]
    pub journal: Option<std::path::PathBuf>,

    /// With --apply: continue the run --journal records (the steps come from the journal, not
    /// from a new plan; a slot left half-moved is finished)
    #[arg(long, requires = "apply")]
    pub resume: bool,
}

/// With --apply: asks for confirmation (or takes --yes), then carries out `moves` (or, with
/// --resume, the journal's steps) on the cluster at `url`, reporting progress on stderr.
pub fn run_apply(
    command: &str,
    args: &ApplyArgs,
    pipeline: u32,
    url: Option<&str>,
    planned: Option<(&crate::migrate::ClusterView, &[crate::migrate::Move])>,
    ctx: &mut Ctx<'_>,
) -> anyhow::Result<ExitStatus> {
    use crate::error::UserError;
    use crate::live::apply::Applier;
    use crate::migrate::apply::plan_head;
    let Some(url) = url else {
        return Err(UserError::new(
            "--apply needs the live cluster: give --cluster redis://host:port",
            "a plan from a topology file can be carried out with --emit setslot",
        )
        .into());
    };
    let journal = args
        .journal
        .as_deref()
        .expect("invariant: clap requires --journal with --apply");
    let live = super::args::live_cluster(url)?;
    let mut applier = match (args.resume, planned) {
        (true, _) => Applier::resume(&live, journal)?,
        (false, Some((view, moves))) => {
            let head = plan_head(command, view, moves)
                .map_err(|e| UserError::new(format!("--apply: {e}"), "preview again once it is"))?;
            if head.steps.is_empty() {
                writeln!(ctx.stderr, "apply: nothing to move")?;
                return Ok(ExitStatus::Clean);
            }
            confirm(args, head.steps.len(), &live.url_text(), ctx)?;
            Applier::start(&live, head, journal)?
        }
        (false, None) => unreachable!("invariant: a new run is given its plan"),
    };
    applier = applier.keys_per_migrate(pipeline as usize);
    if args.resume {
        let (total, done) = applier.progress();
        confirm(args, total - done, &live.url_text(), ctx)?;
    }
    let started = std::time::Instant::now();
    let stderr = &mut *ctx.stderr;
    let mut last = std::time::Instant::now();
    let before = applier.progress().1;
    applier.run(|done, total| {
        if last.elapsed().as_secs_f64() >= 1.0 || done == total {
            last = std::time::Instant::now();
            let spent = started.elapsed().as_secs_f64();
            // The rest at this run's pace so far.
            let eta = spent / (done - before).max(1) as f64 * (total - done) as f64;
            let _ = writeln!(
                stderr,
                "apply: {done}/{total} slots moved, {spent:.0} s, about {eta:.0} s left"
            );
        }
    })?;
    let (total, _) = applier.progress();
    writeln!(
        ctx.stderr,
        "apply: done, {total} slot(s) in the previewed place (journal {})",
        journal.display()
    )?;
    Ok(ExitStatus::Clean)
}

/// `--yes`, or a `yes` typed at the terminal.
fn confirm(args: &ApplyArgs, steps: usize, cluster: &str, ctx: &mut Ctx<'_>) -> anyhow::Result<()> {
    use std::io::IsTerminal as _;
    if args.yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(crate::error::UserError::new(
            "--apply writes to the cluster, and standard input is not a terminal to confirm it",
            "add --yes",
        )
        .into());
    }
    write!(
        ctx.stderr,
        "Move {steps} slot(s) on {cluster}? Type yes to go on: "
    )?;
    ctx.stderr.flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if answer.trim() != "yes" {
        return Err(crate::error::UserError::new(
            "--apply: not confirmed; nothing was moved",
            "type yes, or add --yes",
        )
        .into());
    }
    Ok(())
}

/// Runs `keyplan reshard`.
pub fn run(args: ReshardArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    if args.apply.resume {
        let url = args.common.topology.cluster.as_deref();
        return run_apply("reshard", &args.apply, args.common.pipeline, url, None, ctx);
    }
    if !args.apply.apply {
        require_preview(&args.common, "reshard")?;
    }
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
        layout: Some(crate::migrate::managed::layout(
            crate::migrate::balance::BalanceBy::Slots,
            &weights,
            &report,
        )),
        ..EmitContext::reshard(&report.topology, &args.from, &args.to, args.slots)
    };
    let status = output(
        &args.common,
        &open.loaded.target,
        &report,
        view,
        &plan.moves,
        &emit_ctx,
        ctx,
    )?;
    if args.apply.apply {
        let url = args.common.topology.cluster.as_deref();
        return run_apply(
            "reshard",
            &args.apply,
            args.common.pipeline,
            url,
            Some((view, &plan.moves)),
            ctx,
        );
    }
    Ok(status)
}
