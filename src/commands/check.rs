//! `assent check`: what the gate will say about a branch, before it is pushed, from a local
//! git checkout, with no token and no GitLab.
//!
//! The inputs come through the same [`Repository`](crate::forge::Repository) port as a run's,
//! answered by [`git_checkout`](crate::git_checkout), and go through the same engine:
//! [`gather_review_inputs_with`], [`compute_desired_state`], the check of a policy change's
//! own `.assent/` ([`check_source_policies`]), then the decision before anyone resolves a
//! thread ([`unresolved_decision`]). The policies are read at the base, as the gate reads
//! them from the target branch.
//!
//! The central policies of `--policy-project-dir` are read as `lint` reads them and named by
//! `--policy-project`, else by the checkout's `origin` path, as the gate names them. The `mr`
//! the policies see comes from the flags, else from the branches git tells; a rule that reads
//! a field of `mr` left unknown is named (`PolicySet::mr_fields_read`), never judged silently.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;

use crate::commands::lint::read_local_policies;
use crate::commands::report_file::write_atomically;
use crate::commands::run::FailOn;
use crate::commands::{CliError, CliResult, OutputFormat, UsageError};
use crate::core::codequality::codequality_report;
use crate::core::desired_state::{central_policy_path, compute_desired_state};
use crate::core::model::{Decision, DesiredState, PinnedCommits, Pins};
use crate::core::policy::excerpt::{MAX_MESSAGE_CHARS, excerpt_lines};
use crate::core::policy::{MrContext, PolicyFile, PolicyProblem, PolicySet};
use crate::core::receipt::{ReceiptFinding, ReceiptMember};
use crate::core::review_state::unresolved_decision;
use crate::core::semantic_diff::Limits;
use crate::core::source_policies::check_source_policies;
use crate::core::terminal::terminal_safe;
use crate::engine::run::inputs::{
    CentralPolicies, GOVERNED_CONTENT_BUDGET, POLICY_DIR, PolicyProject, ReadBounds,
    gather_review_inputs_with,
};
use crate::git_checkout::{GitCheckout, origin_project_path};

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
  # Policies that read the merge request (mr.author, mr.labels): what it will carry:
  assent check --author alice --label retention-approved
  # With the central policy project's checkout, named as the CI job names it:
  assent check --policy-project-dir ../policies --policy-project platform/policies

The decision is the gate's before anyone resolves a thread: a challenge counts as REVIEW.
A rule whose `when` read a field of mr that check was not given (title, author, labels) is
named in the output: its verdict is the one for an empty field.

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
    /// The central policy project `--policy-project-dir` is a checkout of, as `assent run
    /// --policy-project` names it (an `@REF` is accepted and ignored: the folder is read as
    /// it is), so findings and the policy digest name its policies as the gate does
    /// [default: the path in the checkout's `origin` URL, else the folder as given].
    #[arg(long, value_name = "ID_OR_PATH[@REF]", requires = "policy_project_dir")]
    pub policy_project: Option<String>,
    /// Also write GitLab's Code Quality report of the findings (JSON) here (whole or not at
    /// all, as `assent run` writes it).
    #[arg(long, value_name = "PATH")]
    pub codequality: Option<PathBuf>,
    /// The merge request's title, for a `when` that reads `mr.title` [default: none: a
    /// rule that reads it is named in the output].
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// The merge request author's GitLab username, for `mr.author` [default: none: a rule
    /// that reads it is named in the output].
    #[arg(long, value_name = "USERNAME")]
    pub author: Option<String>,
    /// A label the merge request will carry, for `mr.labels`; repeat for each [default:
    /// none, as a new merge request has, and a rule that reads them is named in the output].
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// The source branch, for `mr.source_branch` [default: the branch `--head` names, else
    /// the current branch].
    #[arg(long, value_name = "BRANCH")]
    pub source_branch: Option<String>,
    /// The target branch, for `mr.target_branch` [default: the branch `--base` names, else
    /// the upstream's branch when it is not the source branch's own, else origin/HEAD's].
    #[arg(long, value_name = "BRANCH")]
    pub target_branch: Option<String>,
}

/// The fields of `mr` a check may not know: a new merge request has no iid yet, and its
/// title, author and labels are the author's to give.
const MR_FIELD_FLAGS: [(&str, Option<&str>); 6] = [
    ("iid", None),
    ("title", Some("--title")),
    ("author", Some("--author")),
    ("labels", Some("--label")),
    ("source_branch", Some("--source-branch")),
    ("target_branch", Some("--target-branch")),
];

/// A rule whose `when` read fields of `mr` the check was not given and could not tell, on
/// a change it matched: its verdict there is the one for a merge request whose fields are
/// empty (`""`, `[]`, `0`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownRead {
    /// The rule's id.
    pub rule: String,
    /// The fields of `mr` it read that were not known, as `mr` names them.
    pub fields: Vec<&'static str>,
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
    /// The `mr` the policies saw.
    pub context: MrContext,
    /// The rules whose verdict read a field of `mr` the check did not know.
    pub unknown_reads: Vec<UnknownRead>,
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
    /// Each rule whose `when` read a field of `mr` the check did not know.
    unknown_mr_fields: &'a [UnknownRead],
}

/// Runs `assent check`.
pub fn run(args: &CheckArgs) -> CliResult {
    let report = check(args)?;
    if let Some(path) = &args.codequality {
        write_atomically(path, codequality_report(&report.desired).as_bytes()).with_context(
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
    // The policies are the base's: a change never judges itself by its own rules.
    let commits = PinnedCommits {
        source_sha: head,
        target_sha: base.clone(),
        base_sha: base,
    };
    let (context, unknown) = mr_context(args, &checkout);
    let repo = checkout
        .between(&commits.base_sha, &commits.source_sha)
        .context("cannot list the change")?;
    let (policy_project, central) = match &args.policy_project_dir {
        Some(dir) => {
            let project = central_project_name(dir, args.policy_project.as_deref())?;
            let central = central_policies(dir, &project)?;
            (Some(project), central)
        }
        None => (None, CentralPolicies::default()),
    };
    let bounds = ReadBounds {
        changes_count: Some(repo.changes_count().to_string()),
        content_budget: GOVERNED_CONTENT_BUDGET,
    };
    let gathered = gather_review_inputs_with(
        &repo,
        &commits,
        central,
        context.clone(),
        Limits::default(),
        &bounds,
    )
    .context("cannot read the checkout")?;
    let has_policies = !gathered.inputs.policy_files.is_empty();
    // Loaded again only to ask which rules read `mr`: a set that does not load judges
    // nothing but its problems, which read no field.
    let policies = PolicySet::load(&gathered.inputs.policy_files).ok();
    let mut outcome = compute_desired_state(gathered.inputs);
    let unknown_reads = policies
        .map(|set| unknown_reads(&set.mr_fields_read(&outcome.changes), &unknown))
        .unwrap_or_default();
    if let Some(source) = &gathered.source_policies {
        // The change's own policies are checked, never used to judge it, as in a run.
        outcome.desired = outcome.desired.with_findings(check_source_policies(source));
    }
    let pins = Pins {
        policy_project,
        ..Pins::of(commits, outcome.policy_digest.clone())
    };
    let decision = unresolved_decision(&outcome.desired);
    Ok(CheckReport {
        pins,
        desired: outcome.desired,
        decision,
        has_policies,
        working_tree,
        context,
        unknown_reads,
    })
}

/// The `mr` the policies see, and the fields of it the check does not know (see
/// [`CheckArgs`]: each flag, else what git tells, else unknown and empty).
fn mr_context(args: &CheckArgs, checkout: &GitCheckout) -> (MrContext, BTreeSet<&'static str>) {
    let source_branch = args.source_branch.clone().or_else(|| match &args.head {
        Some(head) => checkout.branch_named(head),
        None => checkout.current_branch(),
    });
    let target_branch = args.target_branch.clone().or_else(|| match &args.base {
        Some(base) => checkout.branch_named(base),
        // The upstream of a pushed feature branch is usually its own branch on the remote,
        // which is no target: then the remote's default branch, as GitLab proposes.
        None => checkout
            .upstream_branch()
            .filter(|upstream| Some(upstream) != source_branch.as_ref())
            .or_else(|| checkout.origin_default_branch()),
    });
    let mut unknown: BTreeSet<&'static str> = BTreeSet::from(["iid"]);
    if args.labels.is_empty() {
        unknown.insert("labels");
    }
    let mut known = |field: &'static str, value: Option<String>| {
        if value.is_none() {
            unknown.insert(field);
        }
        value.unwrap_or_default()
    };
    let context = MrContext {
        iid: 0,
        title: known("title", args.title.clone()),
        source_branch: known("source_branch", source_branch),
        target_branch: known("target_branch", target_branch),
        author: known("author", args.author.clone()),
        labels: args.labels.clone(),
    };
    (context, unknown)
}

/// The rules of `read` that read a field in `unknown`, with those fields.
fn unknown_reads(
    read: &BTreeMap<String, BTreeSet<&'static str>>,
    unknown: &BTreeSet<&'static str>,
) -> Vec<UnknownRead> {
    read.iter()
        .filter_map(|(rule, fields)| {
            let fields: Vec<&'static str> = fields.intersection(unknown).copied().collect();
            (!fields.is_empty()).then(|| UnknownRead {
                rule: rule.clone(),
                fields,
            })
        })
        .collect()
}

/// The name of the central policy project `dir` is a checkout of: `--policy-project` (its
/// `@REF` dropped), else the path of the checkout's `origin` remote, else the folder as
/// given.
fn central_project_name(dir: &Path, given: Option<&str>) -> Result<String, CliError> {
    if let Some(text) = given {
        let project = PolicyProject::parse(text).map_err(UsageError)?;
        return Ok(project.project);
    }
    if let Some(path) = origin_project_path(dir) {
        return Ok(path);
    }
    let shown = dir.display().to_string();
    Ok(shown.trim_end_matches('/').to_owned())
}

/// The central policies of a checkout of the policy project, named as a run names them
/// (`central:<project>/<path>`); an entry `lint` refuses, or a checkout without any policy
/// file, is a problem of the policies, as in a run: never judged without the policies asked
/// for.
fn central_policies(dir: &Path, project: &str) -> Result<CentralPolicies, CliError> {
    let local = read_local_policies(dir).map_err(|e| UsageError(e.0))?;
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
        unknown_mr_fields: &report.unknown_reads,
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
        report.pins.base_sha.short(),
        if count == 1 { "" } else { "s" }
    );
    if !report.has_policies {
        out.push_str("  no policies at the base (.assent/policies/): nothing but the built-in rules judged\n");
    }
    for read in &report.unknown_reads {
        let fields: Vec<String> = read.fields.iter().map(|f| format!("mr.{f}")).collect();
        let flags: Vec<&str> = read
            .fields
            .iter()
            .filter_map(|f| MR_FIELD_FLAGS.iter().find(|(field, _)| field == f))
            .filter_map(|(_, flag)| *flag)
            .collect();
        let mut remedies = Vec::new();
        if !flags.is_empty() {
            remedies.push(format!("give {}", flags.join(", ")));
        }
        if read.fields.contains(&"iid") {
            remedies.push("a merge request has no iid before it is opened".to_owned());
        }
        out.push_str(&format!(
            "  unknown to check: rule {} reads {}, judged as empty here ({})\n",
            terminal_safe(&read.rule),
            fields.join(", "),
            remedies.join("; ")
        ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::commit_sha::CommitSha;

    fn sha(digit: char) -> CommitSha {
        CommitSha::parse(&digit.to_string().repeat(40)).unwrap()
    }

    fn report_with(unknown_reads: Vec<UnknownRead>) -> CheckReport {
        CheckReport {
            pins: Pins {
                source_sha: sha('a'),
                target_sha: sha('b'),
                base_sha: sha('b'),
                policy_digest: String::new(),
                policy_project: None,
                policy_sha: None,
            },
            desired: DesiredState::default(),
            decision: Decision::Approve,
            has_policies: true,
            working_tree: true,
            context: MrContext::default(),
            unknown_reads,
        }
    }

    #[test]
    fn a_rule_that_read_an_unknown_field_is_named_with_the_flag_that_gives_it() {
        let text = describe(&report_with(vec![
            UnknownRead {
                rule: "gated".into(),
                fields: vec!["author", "labels"],
            },
            UnknownRead {
                rule: "numbered".into(),
                fields: vec!["iid", "title"],
            },
            UnknownRead {
                rule: "only-iid".into(),
                fields: vec!["iid"],
            },
        ]));
        assert_eq!(
            text.lines().skip(1).collect::<Vec<_>>(),
            [
                "  unknown to check: rule gated reads mr.author, mr.labels, judged as empty here (give --author, --label)",
                "  unknown to check: rule numbered reads mr.iid, mr.title, judged as empty here (give --title; a merge request has no iid before it is opened)",
                "  unknown to check: rule only-iid reads mr.iid, judged as empty here (a merge request has no iid before it is opened)",
            ]
        );
        assert_eq!(describe(&report_with(Vec::new())).lines().count(), 1);
    }

    #[test]
    fn only_the_unknown_fields_a_rule_read_are_named() {
        let read = BTreeMap::from([
            ("a".to_owned(), BTreeSet::from(["author", "source_branch"])),
            ("b".to_owned(), BTreeSet::from(["source_branch"])),
        ]);
        let unknown = BTreeSet::from(["author", "iid"]);
        assert_eq!(
            unknown_reads(&read, &unknown),
            [UnknownRead {
                rule: "a".into(),
                fields: vec!["author"],
            }]
        );
    }
}
