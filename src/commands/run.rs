//! `assent run`: the MR pipeline job.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use anyhow::Context as _;

use crate::commands::gitlab_inputs::{
    Connection, ConnectionArgs, EnvLookup, InputError, RATE_LIMIT_ADVICE, RateLimitArgs, first_of,
    process_env, resolve_mr, switch_input, with_gitlab_environment,
};
use crate::commands::report_file::write_atomically;
use crate::commands::{CliError, CliResult, Exit, OutputFormat, UsageError, progress_for};
use crate::core::codequality::codequality_report;
use crate::core::commit_sha::CommitSha;
use crate::core::model::{Decision, Effect};
use crate::core::policy::excerpt::{MAX_MESSAGE_CHARS, excerpt_lines};
use crate::core::receipt::{ApprovalOutcome, Outcome, Receipt, ReceiptAction};
use crate::core::refusal::Staleness;
use crate::core::semantic_diff::Limits;
use crate::core::terminal::terminal_safe;
use crate::engine::observe::Event;
use crate::engine::run::inputs::PolicyProject;
use crate::engine::run::review::{RunError, RunReport, RunRequest, run_review_with};
use crate::forge::PolicyProjectFiles;
use crate::gitlab::{GitLabClient, GitLabForge};

const EXAMPLES: &str = "\
Examples:
  # In a merge request pipeline every input comes from the CI environment:
  assent run
  # By hand, against a given MR, without writing anything:
  ASSENT_TOKEN=glpat-… assent run --api-url https://gitlab.example.com/api/v4 \\
      --project group/configs --mr 7 --source-sha 0123abcd… --dry-run
  # Print the receipt (the job fails on REVIEW and BLOCK, the default --fail-on review):
  assent run --format json
  # Approve the MR as the bot on APPROVE (withdraw the approval otherwise), so that an
  # approval rule requiring the bot holds the gate, and fail the job on BLOCK only:
  assent run --approve --fail-on block
  # Give GitLab's rate limits up to 30 minutes on a very large MR:
  assent run --rate-limit-wait 30m
  # Also write GitLab's Code Quality report (artifacts:reports:codequality):
  assent run --codequality gl-code-quality-report.json

Progress goes to stderr, one `progress: ...` line per phase (inputs read, desired state,
listings, writes k/n, rescan, verified); --quiet or --format json leave only errors and
warnings there.

Exit codes: 0 published and verified (or a stale pipeline / closed MR: nothing written),
1 decision at or above --fail-on, 2 usage or configuration error (nothing written: a
previous bot user's markers on the MR, not adopted, included),
3 forge or runtime failure (rate limited past --rate-limit-wait included).";

/// Which decision fails the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Fail on BLOCK.
    Block,
    /// Fail on BLOCK or REVIEW.
    Review,
    /// Never fail on the decision.
    Never,
}

/// Arguments of `assent run`.
#[derive(Debug, Args)]
#[command(after_help = with_gitlab_environment(EXAMPLES))]
pub struct RunArgs {
    /// GitLab connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Merge request IID [env: CI_MERGE_REQUEST_IID].
    #[arg(long, value_name = "IID")]
    pub mr: Option<u64>,
    /// Source head SHA the pipeline runs for [env: CI_MERGE_REQUEST_SOURCE_BRANCH_SHA, then CI_COMMIT_SHA].
    #[arg(long, value_name = "SHA")]
    pub source_sha: Option<String>,
    /// Target SHA to read policies from [env: CI_MERGE_REQUEST_TARGET_BRANCH_SHA; else the target branch tip, read once].
    #[arg(long, value_name = "SHA")]
    pub target_sha: Option<String>,
    /// Diff base SHA [env: CI_MERGE_REQUEST_DIFF_BASE_SHA; else the MR's diff_refs.base_sha].
    #[arg(long, value_name = "SHA")]
    pub base_sha: Option<String>,
    /// Target branch the pipeline runs for; an MR retargeted since is a stale pipeline
    /// [env: CI_MERGE_REQUEST_TARGET_BRANCH_NAME; else the MR's target_branch, read at start].
    #[arg(long, value_name = "BRANCH")]
    pub target_branch: Option<String>,
    /// A central policy project whose `.assent/policies/` apply beside this project's own:
    /// its id or path, optionally `@` a branch or commit SHA (default: its default branch),
    /// resolved to one commit at start and recorded in the receipt's pins
    /// [env: ASSENT_POLICY_PROJECT].
    #[arg(long, value_name = "ID_OR_PATH[@REF]")]
    pub policy_project: Option<String>,
    /// Where to write the receipt (JSON).
    #[arg(long, value_name = "PATH", default_value = "assent-receipt.json")]
    pub receipt: PathBuf,
    /// Also write GitLab's Code Quality report of the findings (JSON) here, whenever the
    /// receipt is written; declare it as `artifacts:reports:codequality`.
    #[arg(long, value_name = "PATH")]
    pub codequality: Option<PathBuf>,
    /// Compute and print the plan; make zero writes.
    #[arg(long)]
    pub dry_run: bool,
    /// The decision at or above which the job fails. The default, review, fails the job while
    /// a challenge awaits assent: a job that passes on REVIEW is no gate. Use block only where
    /// an approval rule requiring the bot (--approve) holds the gate instead.
    #[arg(long, value_enum, default_value = "review")]
    pub fail_on: FailOn,
    /// After the verified summary, approve the MR as the bot when the decision is APPROVE at
    /// the pinned head, and withdraw the bot's approval otherwise [env: ASSENT_APPROVE=1|0, true|false, yes|no, on|off].
    #[arg(long)]
    pub approve: bool,
    /// Output format on stdout: a few lines for a person (`text`), or exactly the receipt document (`json`).
    #[arg(long, value_enum, default_value = "text")]
    pub format: OutputFormat,
    /// How long to wait for GitLab's rate limits.
    #[command(flatten)]
    pub rate_limit: RateLimitArgs,
    /// No progress lines on stderr (errors and warnings still go there).
    #[arg(long)]
    pub quiet: bool,
    /// After a token renewal that made a new bot user: the previous bot user's username, whose
    /// threads and summary assent then reads as its own (their assents kept, no duplicates).
    /// Repeat for several; GitLab must mark each as a bot (a person is refused). Renew with
    /// GitLab's rotation API to keep the bot user instead (docs/run.md, "Renewing the token")
    /// [env: ASSENT_PREVIOUS_BOT_USERS=name1,name2].
    #[arg(long, value_name = "USERNAME")]
    pub previous_bot_user: Vec<String>,
}

/// Runs `assent run` with the process environment.
pub fn run(args: &RunArgs) -> CliResult {
    execute(args, &process_env)
}

/// The previous bot users' usernames: the flags, else `ASSENT_PREVIOUS_BOT_USERS`
/// (comma-separated, blanks around names ignored).
fn previous_bot_users(flags: &[String], env: EnvLookup<'_>) -> Result<Vec<String>, InputError> {
    let names: Vec<String> = if flags.is_empty() {
        first_of(None, &["ASSENT_PREVIOUS_BOT_USERS"], env)
            .map(|list| list.split(',').map(|n| n.trim().to_owned()).collect())
            .unwrap_or_default()
    } else {
        flags.iter().map(|n| n.trim().to_owned()).collect()
    };
    if names.iter().any(String::is_empty) {
        return Err(InputError(
            "an empty previous bot username in --previous-bot-user or ASSENT_PREVIOUS_BOT_USERS; give GitLab usernames, comma-separated".to_owned(),
        ));
    }
    Ok(names)
}

fn sha_input(
    flag: Option<&str>,
    vars: &[&str],
    env: EnvLookup<'_>,
    what: &str,
) -> Result<Option<CommitSha>, InputError> {
    match first_of(flag, vars, env) {
        None => Ok(None),
        Some(sha) => match CommitSha::parse(&sha) {
            Ok(sha) => Ok(Some(sha)),
            Err(_) => Err(InputError(format!(
                "{what} is not a commit SHA (40 or 64 hex digits): {sha:?}"
            ))),
        },
    }
}

fn execute(args: &RunArgs, env: EnvLookup<'_>) -> CliResult {
    let (connection, request) = resolve_request(args, env)?;
    let forge = GitLabForge::new(connection.gitlab_config(), request.mr)
        .map_err(|e| UsageError(e.to_string()))?;
    // The central policy project is read over a client of its own, with the same token,
    // transport settings and retry policy.
    let central = request
        .policy_project
        .as_ref()
        .map(|p| {
            let mut config = connection.gitlab_config();
            config.project = p.project.clone();
            GitLabClient::new(&config)
        })
        .transpose()
        .map_err(|e| UsageError(e.to_string()))?;

    let progress = progress_for(args.format == OutputFormat::Json, args.quiet);
    let report = run_review_with(
        &forge,
        &forge,
        central.as_ref().map(|c| c as &dyn PolicyProjectFiles),
        &request,
        progress.as_ref(),
    );
    let met = forge.client().rate_limits();
    if met != Default::default() {
        progress.event(&Event::RateLimits {
            refused_writes: met.refused_writes,
            waited: met.waited,
        });
    }
    let report = report.map_err(|e| {
        if matches!(
            e,
            RunError::MergeRequestNotFound { .. }
                | RunError::NeverAHead { .. }
                | RunError::Reconcile(crate::engine::run::reconcile::ReconcileError::BotIdentity(
                    _
                ))
        ) {
            // Configuration, not a passing fault: exit 2, which the templates do not retry.
            anyhow::Error::new(UsageError(e.to_string()))
        } else if e.forge_error().is_some_and(|f| f.is_rate_limited()) {
            // The fix belongs on the same line: it is the one thing to change.
            anyhow::anyhow!("{e}; {RATE_LIMIT_ADVICE}")
        } else {
            anyhow::Error::new(e)
        }
    })?;
    write_reports(args, &report)?;
    let receipt = &report.publication.receipt;
    match args.format {
        OutputFormat::Json => crate::output::print_json(&receipt.to_json()),
        OutputFormat::Text => crate::out!("{}", describe(&report, &args.receipt)),
    }
    if let (Exit::GateFailed, Some(decision)) = (exit_for(receipt, args.fail_on), receipt.decision)
    {
        // Every non-zero exit names its cause on stderr (docs/contract.md#commands), this one included.
        return Err(CliError::gate_failed(gate_failure(decision, args.fail_on)));
    }
    Ok(())
}

/// The connection and the run's request from the flags and the CI environment: every input
/// a run pins, each named in its error when missing or unusable.
fn resolve_request(
    args: &RunArgs,
    env: EnvLookup<'_>,
) -> Result<(Connection, RunRequest), UsageError> {
    let usage = UsageError::from;
    let mut connection = args.connection.resolve(env).map_err(usage)?;
    connection.rate_limit_wait = args.rate_limit.resolve(env).map_err(usage)?;
    let mr = resolve_mr(args.mr, env)
        .map_err(usage)?
        .ok_or_else(|| UsageError("no merge request: pass --mr or set CI_MERGE_REQUEST_IID (run assent in merge request pipelines)".to_owned()))?;
    let source_sha = sha_input(
        args.source_sha.as_deref(),
        &["CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", "CI_COMMIT_SHA"],
        env,
        "the source SHA",
    )
    .map_err(usage)?
    .ok_or_else(|| UsageError("no source SHA: pass --source-sha or set CI_MERGE_REQUEST_SOURCE_BRANCH_SHA or CI_COMMIT_SHA".to_owned()))?;
    let target_sha = sha_input(
        args.target_sha.as_deref(),
        &["CI_MERGE_REQUEST_TARGET_BRANCH_SHA"],
        env,
        "the target SHA",
    )
    .map_err(usage)?;
    let base_sha = sha_input(
        args.base_sha.as_deref(),
        &["CI_MERGE_REQUEST_DIFF_BASE_SHA"],
        env,
        "the base SHA",
    )
    .map_err(usage)?;
    let approve = switch_input(args.approve, "ASSENT_APPROVE", env).map_err(usage)?;
    let target_branch = first_of(
        args.target_branch.as_deref(),
        &["CI_MERGE_REQUEST_TARGET_BRANCH_NAME"],
        env,
    );
    let policy_project = first_of(
        args.policy_project.as_deref(),
        &["ASSENT_POLICY_PROJECT"],
        env,
    )
    .map(|text| PolicyProject::parse(&text))
    .transpose()
    .map_err(UsageError)?;
    let previous_bot_users = previous_bot_users(&args.previous_bot_user, env).map_err(usage)?;
    let request = RunRequest {
        project: connection.project.clone(),
        mr,
        source_sha,
        target_sha,
        base_sha,
        target_branch,
        dry_run: args.dry_run,
        approve,
        limits: Limits::default(),
        policy_project,
        previous_bot_users,
    };
    Ok((connection, request))
}

/// The receipt, and the Code Quality report when asked, each written whole or not at all.
fn write_reports(args: &RunArgs, report: &RunReport) -> anyhow::Result<()> {
    write_atomically(
        &args.receipt,
        report.publication.receipt.to_json().as_bytes(),
    )
    .with_context(|| format!("cannot write the receipt to {}", args.receipt.display()))?;
    if let Some(path) = &args.codequality {
        // A refusal (stale pipeline, closed MR) desires nothing: an empty report, so a
        // pipeline never shows the findings of a head it did not judge.
        write_atomically(path, codequality_report(&report.desired).as_bytes()).with_context(
            || format!("cannot write the Code Quality report to {}", path.display()),
        )?;
    }
    Ok(())
}

/// The stderr line of a failed gate: the decision, the threshold, what to do.
pub fn gate_failure(decision: Decision, fail_on: FailOn) -> String {
    let threshold = match fail_on {
        FailOn::Block => "block",
        FailOn::Review => "review",
        FailOn::Never => "never",
    };
    let advice = match decision {
        Decision::Block => "a blocking finding fires; see the merge request's threads",
        _ => "resolve the challenge threads to assent, then rerun the job",
    };
    format!(
        "the gate failed: decision {} is at or above --fail-on {threshold} ({advice})",
        decision.as_str()
    )
}

/// 1 when the decision is at or above `--fail-on`; refusals are 0.
pub fn exit_for(receipt: &Receipt, fail_on: FailOn) -> Exit {
    let failing = match (receipt.decision, fail_on) {
        (None, _) | (_, FailOn::Never) => false,
        (Some(decision), FailOn::Block) => decision == Decision::Block,
        (Some(decision), FailOn::Review) => decision >= Decision::Review,
    };
    if failing {
        Exit::GateFailed
    } else {
        Exit::Success
    }
}

/// Most lines of a finding's message a dry run prints under its plan line.
const DRY_RUN_MESSAGE_LINES: usize = 6;

/// The message the thread of slot `(rule, subject)` would carry, indented under its plan
/// line: escaped and cut (values in it are MR content), empty for a slot no longer desired.
fn dry_run_message(report: &RunReport, rule: &str, subject: &str) -> String {
    let Some(finding) = report
        .desired
        .findings
        .iter()
        .find(|f| f.slot.rule == rule && f.slot.subject == subject)
    else {
        return String::new();
    };
    excerpt_lines(&finding.message, DRY_RUN_MESSAGE_LINES, MAX_MESSAGE_CHARS)
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let lead = if i == 0 { "message: " } else { "         " };
            format!("      {lead}{}\n", terminal_safe(line))
        })
        .collect()
}

/// The text report: what happened, in a few lines.
pub fn describe(report: &RunReport, receipt_path: &Path) -> String {
    let receipt = &report.publication.receipt;
    let mut out = match receipt.outcome {
        Outcome::Published | Outcome::DryRun => publication_lines(report),
        Outcome::StalePipeline | Outcome::MrNotOpen => refusal_line(report),
    };
    if let Some(approval) = receipt.approval {
        let what = match approval {
            ApprovalOutcome::Approved => "the bot approved the merge request",
            ApprovalOutcome::Unapproved => "the bot withdrew its approval",
            ApprovalOutcome::Unchanged => "the bot's approval already matched the decision",
        };
        out.push_str(&format!("approval: {} ({what})\n", approval.as_str()));
    }
    for warning in &receipt.warnings {
        out.push_str(&format!("warning: {}\n", terminal_safe(warning)));
    }
    out.push_str(&format!(
        "requests: {} reads, {} writes; rescan {}; receipt {}\n",
        receipt.requests.reads,
        receipt.requests.writes,
        if receipt.rescan.verified {
            "verified"
        } else {
            "not performed"
        },
        receipt_path.display()
    ));
    out
}

/// The one line of a run that refused to publish: why, and who publishes instead.
fn refusal_line(report: &RunReport) -> String {
    let receipt = &report.publication.receipt;
    let short = receipt.pins.source_sha().short();
    match (receipt.outcome, report.publication.stale) {
        (Outcome::StalePipeline, Some(Staleness::HeadMovedBeforeApproval)) => format!(
            "assent: stale pipeline: the MR head moved past {short} before the approval; published for that head, not approved (the newer pipeline decides)\n"
        ),
        // A retargeted MR: the warning below says so; the head did not move.
        (Outcome::StalePipeline, Some(Staleness::Retargeted)) => {
            "assent: stale pipeline: the merge request was retargeted; nothing written (the newer pipeline publishes)\n".to_owned()
        }
        (Outcome::StalePipeline, _) => format!(
            "assent: stale pipeline: the MR head moved past {short}; nothing written (the newer pipeline publishes)\n"
        ),
        _ => "assent: the merge request is not open; nothing written\n".to_owned(),
    }
}

/// A published (or dry-run) run: the decision, then one line per thread action and repair.
fn publication_lines(report: &RunReport) -> String {
    let receipt = &report.publication.receipt;
    let decision = receipt.decision.map_or("-", Decision::as_str);
    let verb = if receipt.outcome == Outcome::DryRun {
        "would publish"
    } else {
        "published"
    };
    let mut out = format!(
        "assent: {decision} for !{} at {} ({} finding{}); {verb}\n",
        receipt.mr,
        receipt.pins.source_sha().short(),
        receipt.findings.len(),
        if receipt.findings.len() == 1 { "" } else { "s" }
    );
    let width = receipt
        .actions
        .iter()
        .map(|a| a.action.as_str().len())
        .max()
        .unwrap_or(0);
    for action in &receipt.actions {
        out.push_str(&action_line(receipt, action, width));
        if receipt.outcome == Outcome::DryRun {
            out.push_str(&dry_run_message(report, &action.rule, &action.subject));
        }
    }
    for repair in &receipt.repairs {
        out.push_str(&format!(
            "  repair: {} note {} (canonical {})\n",
            repair.action.as_str(),
            repair.repaired_forge_id,
            repair.canonical_forge_id
        ));
    }
    if report.publication.plan.writes.is_empty() && receipt.outcome == Outcome::DryRun {
        out.push_str("  no thread writes planned\n");
    }
    out
}

/// One thread action: what was done, the finding's effect, its rule and subject, its note,
/// and whether a kept resolution counts as an assent.
fn action_line(receipt: &Receipt, action: &ReceiptAction, width: usize) -> String {
    let finding = receipt
        .findings
        .iter()
        .find(|f| f.rule == action.rule && f.subject == action.subject);
    let effect = finding.map_or("-", |f| f.effect.as_str());
    let id = action
        .forge_id
        .map_or_else(|| "new".to_owned(), |id| format!("note {id}"));
    // A kept resolution is an assent only when it counts: say which, so that
    // `preserve-resolution` never reads as an assent it is not.
    let id = match finding {
        Some(f) if f.effect == Effect::Challenge && f.resolved && f.assented => {
            match &f.assented_by {
                Some(by) => format!("{id}; assented by {}", terminal_safe(by)),
                None => format!("{id}; assented"),
            }
        }
        Some(f) if f.effect == Effect::Challenge && f.resolved => {
            format!("{id}; resolved, but not an assent: still gating, see the summary")
        }
        _ => id,
    };
    // Rule and subject come from the MR and its policies: one visible line each.
    format!(
        "  {:<width$}  {:<9}  {} @ {}  ({id})\n",
        action.action.as_str(),
        effect,
        terminal_safe(&action.rule),
        terminal_safe(&action.subject)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{DesiredState, Effect, Finding, Occurrence, Slot};
    use crate::core::planner::Plan;
    use crate::core::terminal::is_unsafe;
    use crate::engine::run::reconcile::Publication;
    use proptest::prelude::*;

    /// A report whose every MR-derived text is `rule`, `subject`, `message` or `warning`.
    fn report_of(rule: &str, subject: &str, message: &str, warning: &str, dry: bool) -> RunReport {
        let receipt = serde_json::json!({
            "apiVersion": "assent/v1", "kind": "PublicationReceipt", "project": "p", "mr": 7,
            "pins": {
                "sourceSha": "1111111111111111111111111111111111111111",
                "targetSha": "2222222222222222222222222222222222222222",
                "baseSha": "3333333333333333333333333333333333333333",
                "policyDigest": "sha256:00",
            },
            "outcome": if dry { "dry-run" } else { "published" },
            "decision": "REVIEW",
            "findings": [{"rule": rule, "subject": subject, "effect": "challenge",
                "occurrence": format!("sha256:{}", "0".repeat(64)), "forgeId": 43, "resolved": false, "assented": false}],
            "actions": [{"rule": rule, "subject": subject, "action": "create", "forgeId": 43}],
            "repairs": [], "warnings": [warning], "rescan": {"verified": true},
            "approval": null, "requests": {"reads": 6, "writes": 3},
        });
        RunReport {
            publication: Publication {
                receipt: serde_json::from_value(receipt).expect("a receipt"),
                plan: Plan::default(),
                stale: None,
            },
            desired: DesiredState {
                findings: vec![Finding {
                    slot: Slot {
                        rule: rule.into(),
                        subject: subject.into(),
                    },
                    effect: Effect::Challenge,
                    occurrence: Occurrence::digest(b"1"),
                    message: message.into(),
                }],
                ..DesiredState::default()
            },
        }
    }

    proptest! {
        /// No line of the text report carries a raw control, whatever the MR holds, and no
        /// value starts a line of its own.
        #[test]
        fn no_text_output_line_carries_a_raw_control(
            rule in any::<String>(),
            subject in any::<String>(),
            message in any::<String>(),
            warning in any::<String>(),
            dry in any::<bool>(),
        ) {
            let report = report_of(&rule, &subject, &message, &warning, dry);
            let text = describe(&report, Path::new("assent-receipt.json"));
            prop_assert!(!text.chars().any(|c| c != '\n' && is_unsafe(c)), "{:?}", text);
            let plain = describe(&report_of("r", "s", "m", "w", dry), Path::new("assent-receipt.json"));
            if !dry {
                prop_assert_eq!(text.lines().count(), plain.lines().count(), "{:?}", text);
            }
            let json = crate::core::terminal::json_terminal_safe(&report.publication.receipt.to_json()).into_owned();
            prop_assert!(!json.chars().any(|c| c != '\n' && is_unsafe(c)));
            let back: serde_json::Value = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(&back["actions"][0]["subject"], &serde_json::Value::from(subject));
        }
    }

    /// A report from `report_of("r", "s", …)` with the receipt's fields replaced by `patch`'s.
    fn report_with(dry: bool, patch: serde_json::Value, stale: Option<Staleness>) -> RunReport {
        let mut report = report_of("r", "s", "the message", "a warning", dry);
        let mut receipt = serde_json::to_value(&report.publication.receipt).unwrap();
        for (key, value) in patch.as_object().unwrap() {
            receipt[key] = value.clone();
        }
        report.publication.receipt = serde_json::from_value(receipt).expect("a receipt");
        report.publication.stale = stale;
        report
    }

    #[test]
    fn every_shape_of_the_text_report() {
        let finding = |subject: &str, resolved: bool, assented_by: Option<&str>| {
            let mut f = serde_json::json!({"rule": "r", "subject": subject, "effect": "challenge",
                "occurrence": format!("sha256:{}", "0".repeat(64)), "forgeId": 40,
                "resolved": resolved, "assented": assented_by.is_some()});
            if let Some(by) = assented_by {
                f["assentedBy"] = by.into();
            }
            f
        };
        let published = serde_json::json!({
            "findings": [finding("a", true, Some("alice")), finding("b", true, None),
                finding("c", false, None)],
            "actions": [
                {"rule": "r", "subject": "a", "action": "preserve-resolution", "forgeId": 40},
                {"rule": "r", "subject": "b", "action": "preserve-resolution", "forgeId": 41},
                {"rule": "r", "subject": "c", "action": "create", "forgeId": 42},
                {"rule": "gone", "subject": "d", "action": "resolve", "forgeId": 39},
            ],
            "repairs": [{"repairedForgeId": 44, "canonicalForgeId": 42, "action": "resolve"}],
            "approval": "unapproved",
        });
        let cases = [
            ("published", report_with(false, published, None)),
            (
                "dry run",
                report_with(
                    true,
                    serde_json::json!({"actions": [
                {"rule": "r", "subject": "s", "action": "create", "forgeId": null}]}),
                    None,
                ),
            ),
            (
                "dry run, nothing to write",
                report_with(
                    true,
                    serde_json::json!({
                "findings": [], "actions": [], "warnings": []}),
                    None,
                ),
            ),
            (
                "head moved",
                report_with(
                    false,
                    serde_json::json!({"outcome": "stale-pipeline",
                "decision": null, "findings": [], "actions": [], "rescan": {"verified": false}}),
                    Some(Staleness::HeadMoved),
                ),
            ),
            (
                "retargeted",
                report_with(
                    false,
                    serde_json::json!({"outcome": "stale-pipeline",
                "decision": null, "findings": [], "actions": [], "rescan": {"verified": false}}),
                    Some(Staleness::Retargeted),
                ),
            ),
            (
                "head moved before the approval",
                report_with(
                    false,
                    serde_json::json!({
                "outcome": "stale-pipeline"}),
                    Some(Staleness::HeadMovedBeforeApproval),
                ),
            ),
            (
                "not open",
                report_with(
                    false,
                    serde_json::json!({"outcome": "mr-not-open",
                "decision": null, "findings": [], "actions": [], "warnings": [],
                "rescan": {"verified": false}, "approval": null}),
                    None,
                ),
            ),
        ];
        let mut shown = String::new();
        for (name, report) in cases {
            shown.push_str(&format!("--- {name}\n"));
            shown.push_str(&describe(&report, Path::new("assent-receipt.json")));
        }
        insta::assert_snapshot!(shown);
    }

    fn env_with(value: Option<&'static str>) -> impl Fn(&str) -> Option<String> {
        move |name| {
            (name == "ASSENT_APPROVE")
                .then_some(value)
                .flatten()
                .map(str::to_owned)
        }
    }

    #[test]
    fn approve_comes_from_the_flag_or_an_on_off_environment_value() {
        let approve = |flag, value| switch_input(flag, "ASSENT_APPROVE", &env_with(value));
        assert_eq!(approve(false, None), Ok(false));
        assert_eq!(approve(true, None), Ok(true));
        for on in ["true", "TRUE", "1", "yes", "on"] {
            assert_eq!(approve(false, Some(on)), Ok(true), "{on:?}");
        }
        for off in ["false", "0", "no", "Off"] {
            assert_eq!(approve(false, Some(off)), Ok(false), "{off:?}");
        }
        assert_eq!(approve(true, Some("false")), Ok(true), "the flag wins");
        for misspelt in ["ture", "2", "enabled"] {
            let err = approve(false, Some(misspelt)).unwrap_err();
            assert!(
                err.0.starts_with("ASSENT_APPROVE is neither on nor off"),
                "{err}"
            );
            assert!(
                err.0.contains("yes"),
                "the message lists the spellings: {err}"
            );
        }
    }
}
