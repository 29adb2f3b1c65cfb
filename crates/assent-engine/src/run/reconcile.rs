//! The executor: drives one reconciliation through a [`Forge`], steps 2–9 of docs/contract.md#reconciliation.
//!
//! List every artifact, plan everything, and only then write: the summary goes to
//! "reconciling" first, the thread writes follow, the artifacts are listed again and only a
//! rescan that matches lets the summary say "verified". Writes are never retried: when one
//! fails ambiguously (sent, no usable answer) the executor lists again and plans again from
//! what the forge shows, which is the idempotency key. A crash at any point leaves a state
//! the next run's listing repairs.

use std::collections::BTreeSet;

use crate::core::bot_identity::{IdentityRefusal, Owners, owners_reading};
use crate::core::commit_sha::CommitSha;
use crate::core::inventory::Inventory;
use crate::core::marker::SummaryState;
use crate::core::model::ListedDiscussion;
use crate::core::model::{Decision, DesiredState, Pins, Role};
use crate::core::planner::{Plan, Write, plan_reconciliation};
use crate::core::receipt::{
    ApprovalOutcome, Outcome, Receipt, ReceiptRepair, RequestCounts, Rescan,
};
use crate::core::refusal::{Staleness, refusal_for};
use crate::core::render::{self, SummaryContext, TargetBranch};
use crate::core::rescan::{WriteRecord, verify_rescan};
use crate::core::review_state::finding_statuses;
use crate::core::run_receipt::{RefusalFacts, RunFacts, receipt_of, refusal_receipt_of};
use crate::core::who_assents::{AssentFacts, accounts_to_read, roles_to_read};
use crate::forge::{Forge, ForgeError, ForgeErrorKind};
use crate::observe::{Event, Listing, Progress, Silent};

/// How many times an ambiguous write may send the executor back to listing and planning.
const MAX_PLANNING_ROUNDS: usize = 4;

/// What a run is about; everything the receipt and the summary pin.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// Project id or path, as the receipt records it.
    pub project: String,
    /// The MR IID.
    pub mr: u64,
    /// Pinned inputs; `pins.source_sha` is the head the run judged.
    pub pins: Pins,
    /// The MR's web URL, for links in the summary.
    pub web_url: Option<String>,
    /// Compute and report the plan, write nothing.
    pub dry_run: bool,
    /// The MR author's user id, as read at the start of the run: their resolutions never
    /// count as assent. `None` (unknown) means no resolution counts.
    pub mr_author_id: Option<u64>,
    /// The target branch the pipeline pinned (docs/contract.md#pinned-target): re-checked before the first
    /// write and recorded in the summary. `None` pins none and records none.
    pub target: Option<TargetBranch>,
    /// Requests the run made before reconciling (the MR, pins, inputs): the receipt counts
    /// the whole run, so the reconciliation counts from where the run began.
    pub requests_before: RequestCounts,
    /// Usernames of previous bot users whose artifacts are read as assent's own, once GitLab
    /// shows them to be bots (`--previous-bot-user`, `core::bot_identity`).
    pub previous_bot_users: Vec<String>,
}

impl RunContext {
    /// What the summary of this run pins and links, rendered from `listing` (its resolution
    /// fingerprint goes on the gate line; `None` writes none).
    fn summary_context<'a>(&'a self, listing: Option<&'a Inventory>) -> SummaryContext<'a> {
        SummaryContext {
            pins: &self.pins,
            web_url: self.web_url.as_deref(),
            target: self.target.as_ref(),
            listing,
        }
    }

    /// The people this run judges resolutions against; roles are read later, as needed.
    fn assent_facts(&self, bot: u64) -> AssentFacts {
        AssentFacts {
            bot_id: bot,
            author_id: self.mr_author_id,
            ..AssentFacts::default()
        }
    }
}

/// Why a reconciliation did not complete. Every variant maps to exit code 3, but
/// [`ReconcileError::BotIdentity`]: a configuration to fix, exit 2.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// Before any write: the merge request holds assent's markers written by another bot
    /// user than the token's that is not adopted, or an adoption GitLab does not bear out
    /// (docs/run.md, "Renewing the token").
    #[error(transparent)]
    BotIdentity(#[from] IdentityRefusal),
    /// A forge request failed (after retries, for reads).
    #[error(transparent)]
    Forge(#[from] ForgeError),
    /// The rescan after the writes did not show what the plan wanted.
    #[error("rescan after publishing does not match the plan: {}", .0.join("; "))]
    RescanMismatch(Vec<String>),
    /// Writes kept failing ambiguously.
    #[error(
        "gave up after {0} rounds of ambiguous writes; the next run reconciles from the listing"
    )]
    TooManyRounds(usize),
    /// Before the first write: the token's user has a role in the project below the one
    /// assent's writes need, so the run writes nothing rather than leave half a review.
    #[error(
        "the token's user (id {user}) has the {} role in this project, and assent needs {} or higher to resolve its threads: nothing was written. Give the bot user the {} role (a project access token with role {}, stored as ASSENT_TOKEN), then run `assent doctor`",
        role.title(), WRITER_ROLE.title(), WRITER_ROLE.title(), WRITER_ROLE.title()
    )]
    RoleTooLow {
        /// The token's user.
        user: u64,
        /// Their role in the project.
        role: Role,
    },
    /// The review state was verified, but the bot's approval could not be made to match the
    /// decision (`--approve`); the summary was set back to "reconciling".
    #[error("the bot's approval does not match the decision {decision}: {cause}")]
    Approval {
        /// The decision the approval should follow.
        decision: &'static str,
        /// What failed.
        cause: String,
    },
}

/// The result of a completed run: its receipt and the plan it executed (for display).
#[derive(Debug, Clone)]
pub struct Publication {
    /// The receipt (docs/contract.md#receipt).
    pub receipt: Receipt,
    /// The first plan computed (what a dry run shows).
    pub plan: Plan,
    /// Why a `stale-pipeline` receipt is stale (`None` for every other outcome): the
    /// receipt's warnings also hold the listing's, so they cannot tell the cases apart.
    pub stale: Option<Staleness>,
}

/// Reconciles the merge request behind `forge` towards `desired`.
pub fn reconcile(
    forge: &dyn Forge,
    desired: &DesiredState,
    ctx: &RunContext,
) -> Result<Publication, ReconcileError> {
    reconcile_with(forge, desired, ctx, false, &Silent)
}

/// Lists the MR's discussions and tells `progress` how many, and in how many requests.
fn list_observed(
    forge: &dyn Forge,
    progress: &dyn Progress,
    listing: Listing,
) -> Result<Vec<ListedDiscussion>, ForgeError> {
    let before = forge.request_counts().reads;
    let discussions = forge.list_discussions()?;
    progress.event(&Event::Listed {
        listing,
        discussions: discussions.len(),
        requests: forge.request_counts().reads - before,
    });
    Ok(discussions)
}

/// The reconciliation without the approval step, reporting its phases (listings, the plan,
/// writes `k/n`, the rescan, "verified") to `progress`.
fn reconcile_without_approval(
    forge: &dyn Forge,
    desired: &DesiredState,
    ctx: &RunContext,
    progress: &dyn Progress,
) -> Result<Publication, ReconcileError> {
    let run = Reconciliation {
        forge,
        desired,
        ctx,
        progress,
        // The counter as it stood when the run began: every count below covers the whole run.
        start: forge.request_counts().since(ctx.requests_before),
        bot: forge.bot_user_id()?,
        owners: std::sync::OnceLock::new(),
    };
    let mut seen = run.first_look()?;
    let first_plan = plan_reconciliation(desired, &seen.inventory, run.source_sha());
    if ctx.dry_run {
        let receipt = run.receipt(
            Outcome::DryRun,
            &seen,
            &first_plan,
            &first_plan.repairs,
            false,
        );
        return Ok(Publication::of(receipt, first_plan));
    }
    if first_plan.writes.is_empty() && run.summary_is_current(&seen) {
        progress.event(&Event::Planned { writes: 0 });
        progress.event(&Event::Verified {
            source_sha: run.source_sha(),
        });
        let receipt = run.receipt(Outcome::Published, &seen, &first_plan, &[], true);
        return Ok(Publication::of(receipt, first_plan));
    }
    // Right before the first write: a pipeline for an older head, or for the branch the MR
    // targeted before it was retargeted, must not publish.
    let mr = forge.merge_request()?;
    let pinned_target = ctx.target.as_ref().map(|t| t.name.as_str());
    if let Some(refusal) = refusal_for(&mr, run.source_sha(), pinned_target) {
        seen.warnings.extend(refusal.warning);
        // The listing's warnings travel with every return, the refusals included.
        let receipt = refusal_receipt_of(RefusalFacts {
            project: &ctx.project,
            mr: ctx.mr,
            pins: ctx.pins.clone().into(),
            outcome: refusal.outcome,
            warnings: seen.warnings.into_iter().collect(),
            reads: forge.request_counts().reads - run.start.reads,
        });
        return Ok(Publication {
            receipt,
            plan: first_plan,
            stale: refusal.stale,
        });
    }
    check_writer_role(forge, run.bot)?;
    run.publish(seen, first_plan)
}

impl Publication {
    /// A publication that is not stale.
    fn of(receipt: Receipt, plan: Plan) -> Publication {
        Publication {
            receipt,
            plan,
            stale: None,
        }
    }
}

/// One reconciliation under way: what stays the same for the whole of it.
struct Reconciliation<'a> {
    forge: &'a dyn Forge,
    desired: &'a DesiredState,
    ctx: &'a RunContext,
    progress: &'a dyn Progress,
    /// The request counter when the run began.
    start: RequestCounts,
    /// The token's user.
    bot: u64,
    /// Whose notes are artifacts, decided once from the first listing.
    owners: std::sync::OnceLock<Owners>,
}

/// What the run knows of the merge request from its latest listing.
struct Seen {
    /// The bot's artifacts as last listed.
    inventory: Inventory,
    /// Who may assent, with the roles read so far.
    facts: AssentFacts,
    /// Every warning gathered on the way.
    warnings: BTreeSet<String>,
}

impl Reconciliation<'_> {
    /// Whose notes are artifacts: the first listing decided it (the token's user alone
    /// until then).
    fn owners(&self) -> &Owners {
        self.owners.get_or_init(|| Owners::only(self.bot))
    }

    /// The source SHA the run judged.
    fn source_sha(&self) -> &CommitSha {
        &self.ctx.pins.source_sha
    }

    /// The first listing, and what the run reads once besides it.
    fn first_look(&self) -> Result<Seen, ReconcileError> {
        let mut facts = self.ctx.assent_facts(self.bot);
        // One read per run: while pushes resolve outdated diff threads, no DiffNote
        // challenge's resolution counts (core::who_assents), whoever GitLab names as its resolver.
        facts.push_resolves_diff_threads = self.forge.resolves_outdated_diff_threads()?;
        let mut warnings = BTreeSet::new();
        if let Some(target) = self.ctx.target.as_ref().filter(|t| !t.has_policies) {
            warnings.insert(no_policies_warning(&target.name));
        }
        let listed = list_observed(self.forge, self.progress, Listing::Inventory)?;
        let owners = owners_of(self.forge, &listed, self.bot, &self.ctx.previous_bot_users)?;
        let inventory = Inventory::owned_by(&listed, self.owners.get_or_init(|| owners));
        warnings.extend(inventory.warnings.iter().cloned());
        read_roles(self.forge, self.desired, &inventory, &mut facts)?;
        Ok(Seen {
            inventory,
            facts,
            warnings,
        })
    }

    /// Lists the discussions (`listing` says why), keeping the listing's warnings.
    fn list(
        &self,
        listing: Listing,
        warnings: &mut BTreeSet<String>,
    ) -> Result<Inventory, ReconcileError> {
        let listed = list_observed(self.forge, self.progress, listing)?;
        let inventory = Inventory::owned_by(&listed, self.owners());
        warnings.extend(inventory.warnings.iter().cloned());
        Ok(inventory)
    }

    /// Lists again and reads the roles its resolvers need: `seen` is then that listing.
    fn relist(&self, seen: &mut Seen, listing: Listing) -> Result<(), ReconcileError> {
        seen.inventory = self.list(listing, &mut seen.warnings)?;
        read_roles(self.forge, self.desired, &seen.inventory, &mut seen.facts)?;
        Ok(())
    }

    /// The summary's body in `state`, as `inventory` and `facts` make it.
    fn summary(&self, facts: &AssentFacts, inventory: &Inventory, state: SummaryState) -> String {
        render::summary_body(
            self.ctx.summary_context(Some(inventory)),
            self.desired,
            &finding_statuses(self.desired, inventory, facts),
            state,
        )
    }

    /// Whether the one summary listed already says what a verified run would write.
    fn summary_is_current(&self, seen: &Seen) -> bool {
        seen.inventory.summaries.len() == 1
            && seen.inventory.summaries[0].body
                == self.summary(&seen.facts, &seen.inventory, SummaryState::Verified)
    }

    /// The receipt of a run that ended `outcome` with `seen` the latest listing.
    fn receipt(
        &self,
        outcome: Outcome,
        seen: &Seen,
        plan: &Plan,
        repairs: &[ReceiptRepair],
        verified: bool,
    ) -> Receipt {
        let warnings: Vec<String> = seen.warnings.iter().cloned().collect();
        receipt_of(RunFacts {
            project: &self.ctx.project,
            mr: self.ctx.mr,
            pins: &self.ctx.pins,
            outcome,
            desired: self.desired,
            inventory: &seen.inventory,
            assent: &seen.facts,
            plan,
            repairs,
            warnings: &warnings,
            verified,
            requests: self.forge.request_counts().since(self.start),
        })
    }

    /// Writes the plan in rounds (a write of unknown outcome: list, plan again), then
    /// verifies the result against a fresh listing.
    fn publish(&self, mut seen: Seen, first_plan: Plan) -> Result<Publication, ReconcileError> {
        let mut all_repairs: Vec<ReceiptRepair> = Vec::new();
        let mut record = WriteRecord::default();
        let mut plan = first_plan.clone();
        for _round in 0..MAX_PLANNING_ROUNDS {
            all_repairs.extend(plan.repairs.iter().cloned());
            let summary = self.summary(&seen.facts, &seen.inventory, round_summary_state(&plan));
            let round = execute_round(
                self.forge,
                &summary,
                &seen.inventory,
                &plan,
                &mut record,
                self.progress,
            );
            match round {
                Ok(()) => {}
                Err(err) if err.is_ambiguous_write() => {
                    self.relist(&mut seen, Listing::AfterAmbiguousWrite)?;
                    plan = plan_reconciliation(self.desired, &seen.inventory, self.source_sha());
                    continue;
                }
                Err(err) => return Err(err.into()),
            }
            self.relist(&mut seen, Listing::Rescan)?;
            self.verify(&mut seen, &record)?;
            self.progress.event(&Event::Verified {
                source_sha: self.source_sha(),
            });
            let receipt = self.receipt(Outcome::Published, &seen, &first_plan, &all_repairs, true);
            return Ok(Publication::of(receipt, first_plan));
        }
        Err(ReconcileError::TooManyRounds(MAX_PLANNING_ROUNDS))
    }

    /// Checks the rescan in `seen` against the plan's writes and marks the summary verified.
    /// docs/contract.md#verified-means-verified: a "verified" edit is always followed by a
    /// listing that still matches. When the round already wrote the verified body and the
    /// rescan kept it, that rescan is the listing; otherwise the edit needs one of its own.
    fn verify(&self, seen: &mut Seen, record: &WriteRecord) -> Result<(), ReconcileError> {
        let mismatches = verify_rescan(self.desired, &seen.inventory, record);
        if !mismatches.is_empty() {
            let reconciling = self.summary(&seen.facts, &seen.inventory, SummaryState::Reconciling);
            return Err(unverify(
                self.forge,
                &seen.inventory,
                &reconciling,
                mismatches,
            ));
        }
        let verified = self.summary(&seen.facts, &seen.inventory, SummaryState::Verified);
        if !mark_verified(self.forge, self.owners(), &seen.inventory, &verified)? {
            return Ok(());
        }
        let confirm = self.list(Listing::Confirm, &mut seen.warnings)?;
        let mut mismatches = verify_rescan(self.desired, &confirm, record);
        if !confirm.summaries.iter().any(|s| s.body == verified) {
            mismatches.push("the verified summary is not what the listing shows".to_owned());
        }
        if mismatches.is_empty() {
            return Ok(());
        }
        read_roles(self.forge, self.desired, &confirm, &mut seen.facts)?;
        let reconciling = self.summary(&seen.facts, &confirm, SummaryState::Reconciling);
        Err(unverify(self.forge, &confirm, &reconciling, mismatches))
    }
}

/// Whose notes are artifacts in `listed` (`core::bot_identity::owners_reading`): the account
/// of each other author of a marker is read once, at most `MAX_MARKER_AUTHORS` of them,
/// before anything is written. A read the forge may heal is the run's failure; an account
/// GitLab refuses or does not show is an author assent cannot place, and the run stops (fail
/// closed).
fn owners_of(
    forge: &dyn Forge,
    listed: &[ListedDiscussion],
    bot: u64,
    adopted_names: &[String],
) -> Result<Owners, ReconcileError> {
    let owners = owners_reading(listed, bot, adopted_names, |id| {
        match forge.user_account(id) {
            Ok(account) => Ok(Ok(account)),
            Err(e) if e.kind() == ForgeErrorKind::Unavailable => Err(e),
            Err(e) => Ok(Err(format!("GitLab refused to show user {id}: {e}"))),
        }
    })?;
    Ok(owners?)
}

/// Reads what judging the resolutions in `inventory` needs into `facts`, each at most once
/// per run: the account of every resolver of a challenge (a bot's or an inactive account's
/// resolution never counts), and the project roles the assent rules need (none unless a rule
/// names `min_role`). An account GitLab does not show, or refuses, is recorded as unreadable
/// (its resolution does not count, and the summary says why); a read the forge may heal is
/// the run's failure.
fn read_roles(
    forge: &dyn Forge,
    desired: &DesiredState,
    inventory: &Inventory,
    facts: &mut AssentFacts,
) -> Result<(), ForgeError> {
    for user in accounts_to_read(desired, inventory, facts) {
        let account = match forge.user_account(user) {
            Ok(Some(account)) => Ok(account),
            Ok(None) => Err(format!(
                "GitLab does not show user {user} to assent's token (404)"
            )),
            Err(e) if e.kind() == ForgeErrorKind::Unavailable => return Err(e),
            Err(e) => Err(format!("GitLab refused to show user {user}: {e}")),
        };
        facts.accounts.insert(user, account);
    }
    for user in roles_to_read(desired, inventory, facts) {
        let role = forge.project_role(user)?;
        facts.roles.insert(user, role);
    }
    Ok(())
}

/// The state the summary is written in before a round's thread writes: "reconciling" when
/// there are any. With none, the summary is the only write and goes straight to "verified";
/// the rescan that follows is the listing docs/contract.md#verified-means-verified asks for after a verified edit.
fn round_summary_state(plan: &Plan) -> SummaryState {
    if plan.writes.is_empty() {
        SummaryState::Verified
    } else {
        SummaryState::Reconciling
    }
}

/// A listing after a write does not match: the summary must not keep saying "verified"
/// (docs/contract.md#verified-means-verified), so it goes back to "reconciling" (when that edit fails too, the mismatch is
/// still what is reported: the next run repairs both), and the run fails.
fn unverify(
    forge: &dyn Forge,
    listed: &Inventory,
    reconciling: &str,
    mismatches: Vec<String>,
) -> ReconcileError {
    for summary in &listed.summaries {
        if summary.state == SummaryState::Verified && summary.body != reconciling {
            let _ = forge.edit_note(summary.note_id, reconciling);
        }
    }
    ReconcileError::RescanMismatch(mismatches)
}

/// Edits the summary to its "verified" body; true when it wrote. An ambiguous failure is
/// settled by listing again: the edit is repeated only when the listing shows it did not
/// take effect.
fn mark_verified(
    forge: &dyn Forge,
    owners: &Owners,
    rescan: &Inventory,
    body: &str,
) -> Result<bool, ReconcileError> {
    let mut summary = rescan.summaries[0].clone();
    let mut wrote = false;
    for _ in 0..MAX_PLANNING_ROUNDS {
        if summary.body == body {
            return Ok(wrote);
        }
        wrote = true;
        match forge.edit_note(summary.note_id, body) {
            Ok(()) => return Ok(true),
            Err(err) if err.is_ambiguous_write() => {
                let listed = Inventory::owned_by(&forge.list_discussions()?, owners);
                match listed
                    .summaries
                    .into_iter()
                    .find(|s| s.note_id == summary.note_id)
                {
                    Some(found) => summary = found,
                    None => {
                        return Err(ReconcileError::RescanMismatch(vec![format!(
                            "summary note {} vanished",
                            summary.note_id
                        )]));
                    }
                }
            }
            Err(err) => return Err(err.into()),
        }
    }
    Err(ReconcileError::TooManyRounds(MAX_PLANNING_ROUNDS))
}

/// The summary (already rendered in the round's state), then every planned write, in
/// order, each request reported to `progress` as `k/n`. Stops at the first failure.
fn execute_round(
    forge: &dyn Forge,
    body: &str,
    inventory: &Inventory,
    plan: &Plan,
    record: &mut WriteRecord,
    progress: &dyn Progress,
) -> Result<(), ForgeError> {
    let summary = inventory.canonical_summary();
    let summary_writes = summary.is_none_or(|s| s.body != body);
    let total = usize::from(summary_writes)
        + plan
            .writes
            .iter()
            .map(|w| usize::try_from(w.request_count()).unwrap_or(usize::MAX))
            .sum::<usize>();
    progress.event(&Event::Planned { writes: total });
    // A DiffNote GitLab refuses adds a request the plan did not count.
    let total = std::cell::Cell::new(total);
    let mut done = 0;
    let mut wrote = || {
        done += 1;
        progress.event(&Event::Wrote {
            done,
            total: total.get(),
        });
    };
    match summary {
        Some(summary) => {
            if summary_writes {
                forge.edit_note(summary.note_id, body)?;
                wrote();
            }
            record.summary_note_id = Some(summary.note_id);
        }
        None => {
            record.summary_note_id = Some(forge.create_note(body)?);
            wrote();
        }
    }
    for write in &plan.writes {
        match write {
            Write::CreateThread {
                body,
                resolve_after,
                position,
                ..
            } => {
                let created = match forge.create_thread(body, position.as_ref()) {
                    // GitLab refuses a position that is not a line of its diff with 400,
                    // before writing anything (docs/contract.md#diffnotes): the general thread is then safe
                    // to create, and is no double post. An ambiguous failure is not a
                    // refusal: it goes back to the listing like any other write.
                    Err(err) if position.is_some() && err.status() == Some(400) => {
                        total.set(total.get() + 1);
                        wrote();
                        forge.create_thread(body, None)?
                    }
                    created => created?,
                };
                wrote();
                record.created.insert(created.note_id);
                if *resolve_after {
                    forge.resolve_thread(&created.discussion_id)?;
                    wrote();
                    record.resolved.insert(created.note_id);
                }
            }
            Write::ReplyAndResolve {
                discussion_id,
                forge_id,
                reply,
            } => {
                forge.reply_to_thread(discussion_id, reply)?;
                wrote();
                forge.resolve_thread(discussion_id)?;
                wrote();
                record.resolved.insert(*forge_id);
            }
            Write::Resolve {
                discussion_id,
                forge_id,
            } => {
                forge.resolve_thread(discussion_id)?;
                wrote();
                record.resolved.insert(*forge_id);
            }
            Write::CollapseSummary { note_id, body } => {
                forge.edit_note(*note_id, body)?;
                wrote();
                record.collapsed.insert(*note_id);
            }
        }
    }
    Ok(())
}

/// The receipt warning of a run pinned to a target branch without policies (docs/contract.md#pinned-target).
pub fn no_policies_warning(branch: &str) -> String {
    format!(
        "no policies on `{branch}`: the target branch has no .assent/policies/, so no policy judged this merge request"
    )
}

// ---- The approval step (docs/contract.md#approvals) ---------------------------------------------------------
//
// Approve and unapprove are the run's last writes: they follow the "verified" summary, so a
// crash before them leaves a verified review state and an approval the next run settles, never
// an approval of a state that was not verified.

/// The reconciliation, its phases reported to `progress`, then, with `approve` (`assent run
/// --approve`), the approval step: decision `APPROVE` at the pinned head gives the bot's approval (pinned to the source SHA), any
/// other decision withdraws it, and an approval that already matches costs one read and no
/// write. Only a published, verified run touches the approval; a dry run and the refusals
/// leave the receipt's `approval` at `null`.
///
/// When the forge refuses the approval because the head moved (409), the run is a stale
/// pipeline: exit 0, outcome `stale-pipeline`, a warning saying why, the newer pipeline
/// decides. When the approval cannot be settled at all, the summary goes back to
/// "reconciling" (so neither a reader nor `assent sweep` trusts a state whose approval is
/// wrong) and the error is [`ReconcileError::Approval`].
pub fn reconcile_with(
    forge: &dyn Forge,
    desired: &DesiredState,
    ctx: &RunContext,
    approve: bool,
    progress: &dyn Progress,
) -> Result<Publication, ReconcileError> {
    let mut publication = reconcile_without_approval(forge, desired, ctx, progress)?;
    if !approve
        || ctx.dry_run
        || publication.receipt.outcome != Outcome::Published
        || !publication.receipt.rescan.verified
    {
        return Ok(publication);
    }
    let Some(decision) = publication.receipt.decision else {
        return Ok(publication);
    };
    let start = forge.request_counts();
    let settled = settle_approval(forge, decision == Decision::Approve, &ctx.pins.source_sha);
    let used = forge.request_counts();
    let receipt = &mut publication.receipt;
    receipt.requests.reads += used.reads - start.reads;
    receipt.requests.writes += used.writes - start.writes;
    match settled {
        Ok(Settled::Unchanged) => receipt.approval = Some(ApprovalOutcome::Unchanged),
        Ok(Settled::Changed) if decision == Decision::Approve => {
            receipt.approval = Some(ApprovalOutcome::Approved)
        }
        Ok(Settled::Changed) => receipt.approval = Some(ApprovalOutcome::Unapproved),
        Ok(Settled::HeadMoved) => {
            publication.stale = Some(Staleness::HeadMovedBeforeApproval);
            let receipt = &mut publication.receipt;
            let mut warnings = receipt.warnings.clone();
            warnings.push(format!(
                "the MR head moved past {} before the approval: the review was published for that head but not approved; the newer pipeline decides",
                ctx.pins.source_sha
            ));
            *receipt = Receipt::new(
                ctx.project.clone(),
                ctx.mr,
                ctx.pins.clone().into(),
                Outcome::StalePipeline,
                None,
                vec![],
                vec![],
                vec![],
                warnings,
                Rescan { verified: false },
                receipt.requests,
            );
        }
        Err(cause) => {
            // Best effort: the error worth reporting is the approval's, not this edit's.
            let _ = reopen_summary(forge, desired, ctx);
            return Err(ReconcileError::Approval {
                decision: decision.as_str(),
                cause,
            });
        }
    }
    Ok(publication)
}

/// How the approval step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// The approval already matched: no write.
    Unchanged,
    /// This run approved or unapproved.
    Changed,
    /// The forge refused the approval because the head is no longer the pinned SHA.
    HeadMoved,
}

/// Makes the bot's approval `want`. An answer that leaves the outcome unknown (5xx,
/// transport) and an answer that means "already so" (docs/contract.md#approvals-already-so:
/// not modified on GitLab 18; unauthorized for an approval, not found for an unapproval on
/// earlier GitLab) are settled by reading the approval again, never by resending blindly and
/// never by failing: the write is repeated only when the read shows it did not take effect.
/// Such an answer comes in a race, e.g. a push that reset the approvals, or a person who
/// approved with the bot's token, between the first read and the write.
fn settle_approval(forge: &dyn Forge, want: bool, sha: &CommitSha) -> Result<Settled, String> {
    if forge.bot_approves().map_err(|e| e.to_string())? == want {
        return Ok(Settled::Unchanged);
    }
    let older_already_so = if want {
        ForgeErrorKind::Unauthorized
    } else {
        ForgeErrorKind::NotFound
    };
    let already_so = |kind| kind == ForgeErrorKind::NotModified || kind == older_already_so;
    for _ in 0..MAX_PLANNING_ROUNDS {
        let sent = if want {
            forge.approve(sha)
        } else {
            forge.unapprove()
        };
        let err = match sent {
            Ok(()) => return Ok(Settled::Changed),
            Err(err) => err,
        };
        if want && err.kind() == ForgeErrorKind::Conflict {
            return Ok(Settled::HeadMoved);
        }
        let unknown = err.is_ambiguous_write() || matches!(err, ForgeError::Transport { .. });
        if !unknown && !already_so(err.kind()) {
            return Err(err.to_string());
        }
        if forge.bot_approves().map_err(|e| e.to_string())? == want {
            return Ok(if unknown {
                Settled::Changed
            } else {
                Settled::Unchanged
            });
        }
        if !unknown {
            return Err(format!("{err} (and the approval is still not as decided)"));
        }
    }
    Err(format!(
        "the approval stayed unsettled after {MAX_PLANNING_ROUNDS} attempts with unknown outcome"
    ))
}

#[cfg(test)]
mod approval_tests;
#[cfg(test)]
mod refusal_tests;

/// The least role that may do every write a plan can hold: resolving a thread (outdated,
/// superseded, duplicate, a `comment` finding) takes Developer on GitLab.
pub const WRITER_ROLE: Role = Role::Developer;

/// Before the first write, one read of the token's user's role: a role known to be below
/// [`WRITER_ROLE`] stops the run with nothing written (a Reporter can create threads but not
/// resolve them, and would leave a half-published review). A role that cannot be read (not
/// a member, as an instance administrator may be; an error) is no refusal: the writes then
/// tell.
fn check_writer_role(forge: &dyn Forge, bot: u64) -> Result<(), ReconcileError> {
    match forge.project_role(bot) {
        Ok(Some(role)) if role < WRITER_ROLE => Err(ReconcileError::RoleTooLow { user: bot, role }),
        _ => Ok(()),
    }
}

/// Sets the summary back to "reconciling" for the pinned head.
fn reopen_summary(
    forge: &dyn Forge,
    desired: &DesiredState,
    ctx: &RunContext,
) -> Result<(), ReconcileError> {
    let bot = forge.bot_user_id()?;
    let listed = forge.list_discussions()?;
    let owners = owners_of(forge, &listed, bot, &ctx.previous_bot_users)?;
    let inventory = Inventory::owned_by(&listed, &owners);
    let Some(summary) = inventory.canonical_summary() else {
        return Ok(());
    };
    let mut facts = ctx.assent_facts(bot);
    facts.push_resolves_diff_threads = forge.resolves_outdated_diff_threads()?;
    read_roles(forge, desired, &inventory, &mut facts)?;
    let body = render::summary_body(
        ctx.summary_context(Some(&inventory)),
        desired,
        &finding_statuses(desired, &inventory, &facts),
        SummaryState::Reconciling,
    );
    if summary.body != body {
        forge.edit_note(summary.note_id, &body)?;
    }
    Ok(())
}
