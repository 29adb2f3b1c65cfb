//! `assent check`: what the gate will say about a branch, before it is pushed, from a local
//! git checkout, with no token and no GitLab.
//!
//! The inputs come through the same [`Repository`](crate::forge::Repository) port as a run's,
//! answered by [`git_checkout`](crate::git_checkout), and go through the same engine:
//! [`gather_review_inputs_with`], [`compute_desired_state`], the check of a policy change's
//! own `.assent/` ([`check_source_policies`]), then the decision before anyone resolves a
//! thread ([`unresolved_decision`]). The policies are read at the base, as the gate reads
//! them from the target branch.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;

use crate::commands::lint::read_local_policies;
use crate::commands::run::FailOn;
use crate::commands::{CliError, CliResult, OutputFormat, UsageError};
use crate::core::codequality::codequality_report;
use crate::core::commit_sha;
use crate::core::commit_sha::CommitSha;
use crate::core::desired_state::{central_policy_path, compute_desired_state};
use crate::core::model::{Decision, DesiredState, Pins};
use crate::core::policy::excerpt::{MAX_MESSAGE_CHARS, excerpt_lines};
use crate::core::policy::{MrContext, PolicyFile, PolicyProblem};
use crate::core::receipt::{ReceiptFinding, ReceiptMember};
use crate::core::review_state::unresolved_decision;
use crate::core::semantic_diff::Limits;
use crate::core::source_policies::check_source_policies;
use crate::core::terminal::terminal_safe;
use crate::engine::run::inputs::{
    CentralPolicies, GOVERNED_CONTENT_BUDGET, POLICY_DIR, ReadBounds, gather_review_inputs_with,
};
use crate::git_checkout::GitCheckout;

const EXAMPLES: &str = "\
Examples:
  # The working tree (uncommitted changes and new files included) against the merge base
  # with the branch's upstream (else origin/HEAD):
  assent check
  # Only what is committed:
  assent check --head HEAD
  # Explicit refs, as a merge request from feature into main would be judged:
  assent check --base main --head feature
  # The findings as JSON, and GitLab's Code Quality report:
  assent check --format json --codequality gl-code-quality-report.json

The decision is the gate's before anyone resolves a thread: a challenge counts as REVIEW.

Exit codes: 0 decision below --fail-on, 1 decision at or above --fail-on, 2 usage error (not
a git checkout, an unknown ref, no base), 3 git failed.";

/// Arguments of `assent check`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct CheckArgs {
    /// The checkout (any folder inside it).
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// The base the change is judged against, and where the policies are read (as the gate
    /// reads them from the target branch) [default: the merge base of HEAD with its upstream,
    /// else with origin/HEAD].
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// The head to judge [default: the working tree, uncommitted changes and new files that
    /// are not ignored included].
    #[arg(long, value_name = "REF")]
    pub head: Option<String>,
    /// The decision at or above which the command fails.
    #[arg(long, value_enum, default_value = "review")]
    pub fail_on: FailOn,
    /// Output format on stdout: the findings for a person (`text`), or a `CheckReport` JSON
    /// document (`json`).
    #[arg(long, value_enum, default_value = "text")]
    pub format: OutputFormat,
    /// A checkout of the central policy project whose `.assent/policies/` apply beside the
    /// repository's own, as `assent run --policy-project` applies them (read from the folder as
    /// `assent lint --policy-project-dir` reads it).
    #[arg(long, value_name = "DIR")]
    pub policy_project_dir: Option<PathBuf>,
    /// Also write GitLab's Code Quality report of the findings (JSON) here.
    #[arg(long, value_name = "PATH")]
    pub codequality: Option<PathBuf>,
}

/// What `assent check` judged: the pins, the findings and the decision.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Head (`source_sha`, a commit or the working tree's tree), base (`base_sha` and
    /// `target_sha`: the policies are read there), the policy digest.
    pub pins: Pins,
    /// The findings, their sites and members.
    pub desired: DesiredState,
    /// The decision before any thread is resolved.
    pub decision: Decision,
    /// Whether the base holds any policy file.
    pub has_policies: bool,
    /// Whether the head is the working tree.
    pub working_tree: bool,
}

/// The `--format json` document: the receipt's pins and findings, `outcome: "check"`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CheckDocument<'a> {
    api_version: &'static str,
    kind: &'static str,
    outcome: &'static str,
    pins: &'a Pins,
    decision: Decision,
    findings: Vec<ReceiptFinding>,
}

/// Runs `assent check`.
pub fn run(args: &CheckArgs) -> CliResult {
    let report = check(args)?;
    if let Some(path) = &args.codequality {
        std::fs::write(path, codequality_report(&report.desired).as_bytes()).with_context(
            || format!("cannot write the Code Quality report to {}", path.display()),
        )?;
    }
    match args.format {
        OutputFormat::Json => crate::output::print_json(&to_json(&report)),
        OutputFormat::Text => crate::out!("{}", describe(&report)),
    }
    let failing = match args.fail_on {
        FailOn::Never => false,
        FailOn::Block => report.decision == Decision::Block,
        FailOn::Review => report.decision >= Decision::Review,
    };
    if failing {
        return Err(CliError::gate_failed(gate_failure(
            report.decision,
            args.fail_on,
        )));
    }
    Ok(())
}

/// The stderr line of a check whose decision would fail the gate.
fn gate_failure(decision: Decision, fail_on: FailOn) -> String {
    let threshold = match fail_on {
        FailOn::Block => "block",
        FailOn::Review => "review",
        FailOn::Never => "never",
    };
    let advice = match decision {
        Decision::Block => "a blocking finding fires: fix what it names before pushing",
        _ => "a challenge fires: once pushed, a reviewer's assent on its thread lets it pass",
    };
    format!(
        "the gate would fail: decision {} is at or above --fail-on {threshold} ({advice})",
        decision.as_str()
    )
}

/// Judges the checkout as `args` say, through the engine `assent run` uses.
pub fn check(args: &CheckArgs) -> Result<CheckReport, CliError> {
    let usage = |e: crate::git_checkout::GitError| CliError::from(UsageError(e.to_string()));
    let checkout = GitCheckout::open(&args.repo).map_err(usage)?;
    let base = match &args.base {
        Some(name) => checkout.resolve_commit("--base", name),
        None => checkout.default_base(),
    }
    .map_err(usage)?;
    let (head, working_tree) = match &args.head {
        Some(name) => (
            checkout.resolve_commit("--head", name).map_err(usage)?,
            false,
        ),
        None => (
            checkout
                .snapshot_working_tree()
                .context("cannot read the working tree")?,
            true,
        ),
    };
    // git printed it; a text that is not a SHA means an unexpected git, not a guess to judge.
    let source_sha = CommitSha::parse(&head)
        .map_err(|e| CliError::from(anyhow::anyhow!("git named the checked commit oddly: {e}")))?;
    let mut pins = Pins {
        source_sha,
        target_sha: base.clone(),
        base_sha: base.clone(),
        policy_digest: String::new(),
        policy_project: None,
        policy_sha: None,
    };
    let repo = checkout
        .between(base, head)
        .context("cannot list the change")?;
    let context = MrContext {
        iid: 0,
        title: String::new(),
        source_branch: String::new(),
        target_branch: String::new(),
        author: String::new(),
        labels: Vec::new(),
    };
    let bounds = ReadBounds {
        changes_count: Some(repo.changes_count().to_string()),
        content_budget: GOVERNED_CONTENT_BUDGET,
    };
    let gathered = gather_review_inputs_with(
        &repo,
        &pins,
        central_policies(args.policy_project_dir.as_deref())?,
        context,
        Limits::default(),
        &bounds,
    )
    .context("cannot read the checkout")?;
    let has_policies = !gathered.inputs.policy_files.is_empty();
    let mut outcome = compute_desired_state(gathered.inputs);
    if let Some(source) = &gathered.source_policies {
        // The change's own policies are checked, never used to judge it, as in a run.
        outcome.desired = outcome.desired.with_findings(check_source_policies(source));
    }
    pins.policy_digest = outcome.policy_digest.clone();
    let decision = unresolved_decision(&outcome.desired);
    Ok(CheckReport {
        pins,
        desired: outcome.desired,
        decision,
        has_policies,
        working_tree,
    })
}

/// The central policies of a checkout of the policy project, named as a run names them
/// (`central:<project>/<path>`, the folder standing for the project); an entry `lint` refuses,
/// or a checkout without any policy file, is a problem of the policies, as in a run: never
/// judged without the policies asked for.
fn central_policies(dir: Option<&Path>) -> Result<CentralPolicies, CliError> {
    let Some(dir) = dir else {
        return Ok(CentralPolicies::default());
    };
    let local = read_local_policies(dir).map_err(|e| UsageError(e.0))?;
    let shown = dir.display().to_string();
    let project = shown.trim_end_matches('/');
    let files: Vec<PolicyFile> = local
        .files
        .into_iter()
        .map(|f| PolicyFile {
            path: central_policy_path(project, &f.path),
            bytes: f.bytes,
        })
        .collect();
    let mut problems: Vec<String> = local
        .refused
        .into_iter()
        .map(|p| {
            PolicyProblem {
                file: central_policy_path(project, &p.file),
                ..p
            }
            .to_string()
        })
        .collect();
    if files.is_empty() && problems.is_empty() {
        problems.push(format!(
            "the central policy checkout {project} has no policy file under {POLICY_DIR}/"
        ));
    }
    Ok(CentralPolicies {
        sha: None,
        files,
        problems,
    })
}

/// The findings as the receipt lists them, no thread posted or resolved.
pub fn receipt_findings(desired: &DesiredState) -> Vec<ReceiptFinding> {
    let mut findings: Vec<ReceiptFinding> = desired
        .findings
        .iter()
        .map(|f| ReceiptFinding {
            rule: f.slot.rule.clone(),
            subject: f.slot.subject.clone(),
            effect: f.effect,
            occurrence: f.occurrence.clone(),
            forge_id: None,
            resolved: false,
            assented: false,
            assented_by: None,
            members: ReceiptMember::all_of(desired, &f.slot),
        })
        .collect();
    findings.sort();
    findings
}

fn to_json(report: &CheckReport) -> String {
    let document = CheckDocument {
        api_version: crate::core::receipt::API_VERSION,
        kind: "CheckReport",
        outcome: "check",
        pins: &report.pins,
        decision: report.decision,
        findings: receipt_findings(&report.desired),
    };
    let mut json = serde_json::to_string(&document).expect("plain data serializes");
    json.push('\n');
    json
}

/// Most lines of a finding's message printed under it.
const MESSAGE_LINES: usize = 6;

/// The text report: the decision, then each finding (effect, rule, subject, `file:line`,
/// message) as its thread would carry it.
pub fn describe(report: &CheckReport) -> String {
    let head = if report.working_tree {
        "the working tree".to_owned()
    } else {
        report.pins.source_sha.short().to_owned()
    };
    let count = report.desired.findings.len();
    let mut out = format!(
        "assent check: {} for {head} against {} ({count} finding{}; as if no thread were resolved)\n",
        report.decision.as_str(),
        commit_sha::short(&report.pins.base_sha),
        if count == 1 { "" } else { "s" }
    );
    if !report.has_policies {
        out.push_str("  no policies at the base (.assent/policies/): nothing but the built-in rules judged\n");
    }
    for finding in &report.desired.findings {
        let location = report
            .desired
            .site(&finding.slot)
            .map(|site| match site.new_line.or(site.old_line) {
                Some(line) => format!("  {}:{line}", terminal_safe(&site.file)),
                None => format!("  {}", terminal_safe(&site.file)),
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "  {:<9}  {} @ {}{location}\n",
            finding.effect.as_str(),
            terminal_safe(&finding.slot.rule),
            terminal_safe(&finding.slot.subject),
        ));
        for line in excerpt_lines(&finding.message, MESSAGE_LINES, MAX_MESSAGE_CHARS) {
            out.push_str(&format!("      {}\n", terminal_safe(&line)));
        }
    }
    out
}
