//! `keyplan rules`: list the rules, explain one, or test a directory of rules.

use super::Ctx;
use super::lint::RuleArgs;
use crate::error::{ExitStatus, UserError};
use crate::lint::{ExampleOutcome, check_examples};
use crate::report::rules::{render_explain, render_list, render_tests};
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
    let rules = RuleArgs {
        rules: args.rules,
        select: Vec::new(),
        ignore: Vec::new(),
        severity: Vec::new(),
    };
    let set = rules.rule_set()?;
    let layout = ctx.layout;
    let mut out = layout.writer(&mut *ctx.stdout);
    match args.action.unwrap_or(RulesAction::List) {
        RulesAction::List => {
            render_list(&mut out, &set, &layout)?;
            Ok(ExitStatus::Clean)
        }
        RulesAction::Explain { code } => {
            let r = set.rule(&code).ok_or_else(|| {
                UserError::new(
                    format!("no rule '{code}'"),
                    "`keyplan rules` lists the codes and names",
                )
            })?;
            render_explain(&mut out, r, &layout)?;
            Ok(ExitStatus::Clean)
        }
        RulesAction::Test => {
            let results: Vec<_> = set
                .rules
                .iter()
                .map(|r| (r, check_examples(&r.spec)))
                .collect();
            render_tests(&mut out, &results)?;
            let ok = results.iter().all(|(_, o)| *o == ExampleOutcome::Validated);
            Ok(if ok {
                ExitStatus::Clean
            } else {
                ExitStatus::Findings
            })
        }
    }
}
