//! `keyplan rules`: list the rules, explain one, or test a directory of rules.

use super::Ctx;
use super::lint::rule_set;
use crate::error::{ExitStatus, UserError};
use crate::lint::{ExampleOutcome, check_examples};
use std::path::PathBuf;

/// List keyplan's lint rules, or explain one.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  keyplan rules\n  keyplan rules explain KP301\n  keyplan rules test --rules my-rules/"
)]
pub struct RulesArgs {
    /// What to do
    #[command(subcommand)]
    pub action: Option<RulesAction>,

    /// Extra rules: every *.yml file in this directory (repeatable)
    #[arg(long = "rules", value_name = "DIR", global = true)]
    pub rules: Vec<PathBuf>,
}

/// `rules` actions.
#[derive(Debug, clap::Subcommand)]
pub enum RulesAction {
    /// List every rule (the default)
    List,
    /// Print a rule's documentation
    Explain {
        /// A rule code (KP301) or name (cross-slot-batch)
        code: String,
    },
    /// Run every rule's valid/invalid examples (built-in and --rules)
    Test,
}

/// Runs `keyplan rules`.
pub fn run(args: RulesArgs, ctx: &mut Ctx<'_>) -> anyhow::Result<ExitStatus> {
    let set = rule_set(&args.rules, &[], &[], &[])?;
    match args.action.unwrap_or(RulesAction::List) {
        RulesAction::List => {
            let mut t = ctx.layout.table();
            t.set_header(vec!["code", "name", "severity", "summary"]);
            for r in &set.rules {
                t.add_row(vec![
                    r.spec.id.clone(),
                    r.spec.name.clone(),
                    r.spec.severity.name().to_string(),
                    r.spec.summary.clone(),
                ]);
            }
            writeln!(ctx.stdout, "{t}")?;
            Ok(ExitStatus::Clean)
        }
        RulesAction::Explain { code } => {
            let r = set
                .rules
                .iter()
                .find(|r| r.spec.id.eq_ignore_ascii_case(&code) || r.spec.name == code)
                .ok_or_else(|| {
                    UserError::new(
                        format!("no rule '{code}'"),
                        "`keyplan rules` lists the codes and names",
                    )
                })?;
            writeln!(
                ctx.stdout,
                "{} {} [{}]\n\n{}\n",
                r.spec.id,
                r.spec.name,
                r.spec.severity.name(),
                r.spec.summary
            )?;
            writeln!(ctx.stdout, "{}", r.spec.description.trim_end())?;
            Ok(ExitStatus::Clean)
        }
        RulesAction::Test => {
            let mut failed = 0;
            for r in &set.rules {
                let outcome = check_examples(&r.spec);
                let text = match &outcome {
                    ExampleOutcome::Validated => "ok".to_string(),
                    ExampleOutcome::Noisy(e) => format!("NOISY: a valid example is reported: {e}"),
                    ExampleOutcome::Missing(e) => {
                        format!("MISSING: an invalid example is not reported: {e}")
                    }
                    ExampleOutcome::Broken(e) => format!("BROKEN: {e}"),
                };
                if outcome != ExampleOutcome::Validated {
                    failed += 1;
                }
                writeln!(
                    ctx.stdout,
                    "{} {} ({}): {text}",
                    r.spec.id, r.spec.name, r.origin
                )?;
            }
            writeln!(ctx.stdout, "{} rules, {failed} failed", set.rules.len())?;
            Ok(if failed == 0 {
                ExitStatus::Clean
            } else {
                ExitStatus::Findings
            })
        }
    }
}
