//! One `assent run`, end to end over the ports: preconditions (open, head, target branch),
//! pins, inputs, desired state, reconciliation. The command layer only parses flags and prints; this is where the steps
//! are put in order.

use crate::core::commit_sha::CommitSha;
use crate::core::desired_state::compute_desired_state;
use crate::core::model::{DesiredState, MergeRequestInfo, PinnedCommits, Pins, RefusedPins};
use crate::core::placement::{DiffRefs, PlacementContext, place_findings};
use crate::core::policy::MrContext;
use crate::core::receipt::RequestCounts;
use crate::core::refusal::{Refusal, Staleness, refusal_for};
use crate::core::render::TargetBranch;
use crate::core::run_receipt::{RefusalFacts, refusal_receipt_of};
use crate::core::semantic_diff::Limits;
use crate::core::source_policies::check_source_policies;
use crate::forge::{Forge, ForgeError, ForgeErrorKind, PolicyProjectFiles, Repository};
use crate::observe::{Event, Progress, Silent};
use crate::run::inputs::{
    CentralPolicies, GOVERNED_CONTENT_BUDGET, PolicyProject, ReadBounds, gather_review_inputs_with,
    read_central_policies,
};
use crate::run::reconcile::{Publication, ReconcileError, RunContext, reconcile_with};

/// What the pipeline pinned, and how to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Project id or path (as the receipt records it).
    pub project: String,
    /// The MR IID.
    pub mr: u64,
    /// The source head the pipeline runs for.
    pub source_sha: CommitSha,
    /// The target SHA policies are read from; `None` reads the target branch tip once.
    pub target_sha: Option<CommitSha>,
    /// The diff base; `None` takes the MR's `diff_refs.base_sha`.
    pub base_sha: Option<CommitSha>,
    /// The target branch the pipeline runs for; `None` pins the MR's `target_branch` as read
    /// at start. An MR that targets another branch than the pinned one is a stale pipeline.
    pub target_branch: Option<String>,
    /// Compute and print the plan, write nothing.
    pub dry_run: bool,
    /// Usernames of previous bot users whose artifacts are assent's own once GitLab shows
    /// them to be bots (`--previous-bot-user`, docs/run.md, "Renewing the token").
    pub previous_bot_users: Vec<String>,
    /// Manage the bot's approval after the verified summary (`--approve`, docs/contract.md#approvals).
    pub approve: bool,
    /// Parser limits for governed files.
    pub limits: Limits,
    /// The central policy project whose policies apply beside the project's own
    /// (`--policy-project`); read through the `central` argument of [`run_review_with`].
    pub policy_project: Option<PolicyProject>,
}

/// Why a run did not complete (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A request failed before reconciliation (pins, inputs).
    #[error(transparent)]
    Forge(#[from] ForgeError),
    /// Reconciliation failed.
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    /// GitLab has not computed the MR's diff refs yet and no base SHA was pinned.
    #[error(
        "the merge request has no diff_refs.base_sha yet and no base SHA was pinned; set CI_MERGE_REQUEST_DIFF_BASE_SHA or pass --base-sha"
    )]
    NoBaseSha,
    /// The pinned source SHA is not the MR's head and never was one: no diff version of the
    /// MR has it as its head. The job is not this merge request's pipeline (a configuration
    /// error: retrying it cannot help), where a real earlier head is a stale pipeline.
    #[error(
        "the pinned source SHA {pinned} was never a head of merge request !{mr} (its head is {head}, and none of its diff versions had {pinned} as its head): this job is not the merge request's pipeline, so nothing was written; most likely the job runs in a branch or tag pipeline (CI_COMMIT_SHA is that pipeline's commit) or --mr/CI_MERGE_REQUEST_IID names another merge request: run assent in merge request pipelines only (rules: if: $CI_PIPELINE_SOURCE == \"merge_request_event\"), or pass the MR's head as --source-sha"
    )]
    NeverAHead {
        /// The pinned source SHA.
        pinned: CommitSha,
        /// The MR's current head.
        head: CommitSha,
        /// The MR iid.
        mr: u64,
    },
    /// GitLab answered 404 to the merge request itself: no such MR in the project, or a
    /// project the token's user cannot see (GitLab answers both alike). A configuration
    /// error: retrying the job cannot help.
    #[error(
        "merge request !{mr} not found in project {project} (GitLab answered 404: no such merge request, or the token's user cannot see the project); check --mr (CI_MERGE_REQUEST_IID) and --project"
    )]
    MergeRequestNotFound {
        /// The project as configured.
        project: String,
        /// The MR iid as configured.
        mr: u64,
    },
}

impl RunError {
    /// The forge request that failed, when a request is the cause.
    pub fn forge_error(&self) -> Option<&ForgeError> {
        match self {
            RunError::Forge(e) | RunError::Reconcile(ReconcileError::Forge(e)) => Some(e),
            _ => None,
        }
    }
}

/// A completed run: its publication and the desired state it published.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Receipt and plan.
    pub publication: Publication,
    /// The desired findings (empty for refusals).
    pub desired: DesiredState,
}

/// Runs the review of one merge request. `forge` and `repo` are normally the same adapter;
/// the receipt's request counts are read from `forge` and cover the whole run.
pub fn run_review(
    forge: &dyn Forge,
    repo: &dyn Repository,
    request: &RunRequest,
) -> Result<RunReport, RunError> {
    run_review_with(forge, repo, None, request, &Silent)
}

/// [`run_review`], reporting each phase to `progress` (inputs read, desired state, then the
/// reconciliation's listings, writes, rescan and "verified"), with the central policy
/// project's repository (`central`), which
/// [`RunRequest::policy_project`] names: its ref is resolved once, its policies read at that
/// commit and applied beside the project's own (docs/policies.md, "Central policies"). A
/// request that names a policy project without a repository to read it from is judged as if
/// the project could not be read: never without the policies it configured.
pub fn run_review_with(
    forge: &dyn Forge,
    repo: &dyn Repository,
    central: Option<&dyn PolicyProjectFiles>,
    request: &RunRequest,
    progress: &dyn Progress,
) -> Result<RunReport, RunError> {
    let start = forge.request_counts();
    let mr = forge.merge_request().map_err(|e| match e.kind() {
        ForgeErrorKind::NotFound => RunError::MergeRequestNotFound {
            project: request.project.clone(),
            mr: request.mr,
        },
        _ => RunError::Forge(e),
    })?;
    if let Some(refused) = refusal_for(&mr, &request.source_sha, request.target_branch.as_deref()) {
        if refused.stale == Some(Staleness::HeadMoved) {
            never_a_head(forge, request, &mr)?;
        }
        return Ok(refused_report(forge, request, &mr, start, refused));
    }
    let target_branch = request
        .target_branch
        .clone()
        .unwrap_or_else(|| mr.target_branch.clone());
    let commits = pin(repo, request, &mr, &target_branch)?;
    let context = MrContext {
        iid: request.mr,
        title: mr.title.clone(),
        source_branch: mr.source_branch.clone(),
        target_branch: target_branch.clone(),
        author: mr.author.clone(),
        labels: mr.labels.clone(),
    };
    let reads_before = forge.request_counts().reads;
    let central_policies = central_policies(request, central)?;
    let policy_sha = central_policies.sha.clone();
    let bounds = ReadBounds {
        changes_count: mr.changes_count.clone(),
        content_budget: GOVERNED_CONTENT_BUDGET,
    };
    let gathered = gather_review_inputs_with(
        repo,
        &commits,
        central_policies,
        context,
        request.limits,
        &bounds,
    )?;
    let inputs = gathered.inputs;
    progress.event(&Event::InputsRead {
        policy_files: inputs.policy_files.len(),
        changed_files: inputs.changed_files.as_ref().ok().map(Vec::len),
        requests: forge.request_counts().reads - reads_before,
    });
    // No policy file at all is not "judged and nothing fired": the summary says so.
    let has_policies = !inputs.policy_files.is_empty();
    let mut outcome = compute_desired_state(inputs);
    // The judged changes are spent once the findings exist: not held through the writes (a
    // list set to `null` can make hundreds of thousands of them).
    outcome.changes = Vec::new();
    if let Some(source) = &gathered.source_policies {
        // The MR's own policies are checked, never used to judge it.
        let findings = check_source_policies(source);
        outcome.desired = outcome.desired.with_findings(findings);
    }
    let pins = Pins {
        policy_project: request.policy_project.as_ref().map(|p| p.project.clone()),
        policy_sha,
        ..Pins::of(commits, outcome.policy_digest.clone())
    };
    // Where each thread goes (a diff line or the overview) and what it links to, from the
    // diff refs, web URL and diffs already read: no request of its own.
    let placements = place_findings(
        &outcome.desired,
        &PlacementContext {
            source_sha: &pins.source_sha,
            base_sha: &pins.base_sha,
            diff_refs: DiffRefs::of(&mr).as_ref(),
            files: &gathered.diffs,
            merge_request_url: mr.web_url.as_deref(),
        },
    );
    outcome.desired = outcome.desired.with_placements(placements);
    let rules: std::collections::BTreeSet<&str> = outcome
        .desired
        .findings
        .iter()
        .map(|f| f.slot.rule.as_str())
        .collect();
    progress.event(&Event::DesiredState {
        findings: outcome.desired.findings.len(),
        rules: rules.len(),
    });

    let ctx = RunContext {
        project: request.project.clone(),
        mr: request.mr,
        pins,
        web_url: mr.web_url.clone(),
        dry_run: request.dry_run,
        mr_author_id: mr.author_id,
        target: Some(TargetBranch {
            name: target_branch,
            has_policies,
        }),
        requests_before: forge.request_counts().since(start),
        previous_bot_users: request.previous_bot_users.clone(),
    };
    let publication = reconcile_with(forge, &outcome.desired, &ctx, request.approve, progress)?;
    Ok(RunReport {
        publication,
        desired: outcome.desired,
    })
}

/// On the stale path only: a pinned source SHA that no diff version of the MR had as its
/// head is no stale pipeline but a job that is not this MR's ([`RunError::NeverAHead`]).
/// The versions listing is read whole or the run fails (exit 3): a SHA is never called an
/// earlier head, nor a stranger, on a partial listing.
fn never_a_head(
    forge: &dyn Forge,
    request: &RunRequest,
    mr: &MergeRequestInfo,
) -> Result<(), RunError> {
    let heads = forge.version_heads()?;
    if heads.contains(&request.source_sha) {
        return Ok(());
    }
    Err(RunError::NeverAHead {
        pinned: request.source_sha.clone(),
        head: mr.head_sha.clone(),
        mr: request.mr,
    })
}

/// The report of a run refused at its start: the receipt of the refusal with what it had
/// pinned so far, nothing judged.
fn refused_report(
    forge: &dyn Forge,
    request: &RunRequest,
    mr: &MergeRequestInfo,
    start: RequestCounts,
    refused: Refusal,
) -> RunReport {
    let pins = RefusedPins {
        source_sha: request.source_sha.clone(),
        target_sha: request.target_sha.clone(),
        base_sha: request.base_sha.clone().or_else(|| mr.base_sha.clone()),
    };
    let receipt = refusal_receipt_of(RefusalFacts {
        project: &request.project,
        mr: request.mr,
        pins: pins.into(),
        outcome: refused.outcome,
        warnings: refused.warning.into_iter().collect(),
        // Refusals happen before any write, so only reads are counted.
        reads: forge.request_counts().since(start).reads,
    });
    RunReport {
        publication: Publication {
            receipt,
            plan: Default::default(),
            stale: refused.stale,
        },
        desired: DesiredState::default(),
    }
}

/// The SHAs the run judges: the pipeline's source, the target branch's pinned tip (or its tip
/// read now: the policies come from the pinned branch), the merge base.
fn pin(
    repo: &dyn Repository,
    request: &RunRequest,
    mr: &MergeRequestInfo,
    target_branch: &str,
) -> Result<PinnedCommits, RunError> {
    let target_sha = match &request.target_sha {
        Some(sha) => sha.clone(),
        None => repo.branch_head(target_branch)?,
    };
    let base_sha = request
        .base_sha
        .clone()
        .or_else(|| mr.base_sha.clone())
        .ok_or(RunError::NoBaseSha)?;
    Ok(PinnedCommits {
        source_sha: request.source_sha.clone(),
        target_sha,
        base_sha,
    })
}

/// The central policy project's policies, read at the one commit its ref resolves to; a
/// request that names one without a repository to read it from has it unreadable.
fn central_policies(
    request: &RunRequest,
    central: Option<&dyn PolicyProjectFiles>,
) -> Result<CentralPolicies, RunError> {
    Ok(match (&request.policy_project, central) {
        (None, _) => CentralPolicies::default(),
        (Some(source), Some(files)) => read_central_policies(files, source)?,
        (Some(source), None) => CentralPolicies {
            problems: vec![format!(
                "the central policy project `{}` has no connection in this run",
                source.project
            )],
            ..CentralPolicies::default()
        },
    })
}
