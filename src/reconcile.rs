//! The executor: drives one reconciliation through a [`Forge`], steps 2–9 of seed 004.
//!
//! List every artifact, plan everything, and only then write: the summary goes to
//! "reconciling" first, the thread writes follow, the artifacts are listed again and only a
//! rescan that matches lets the summary say "verified". Writes are never retried: when one
//! fails ambiguously (sent, no usable answer) the executor lists again and plans again from
//! what the forge shows, which is the idempotency key. A crash at any point leaves a state
//! the next run's listing repairs.

use std::collections::BTreeSet;

use crate::core::inventory::Inventory;
use crate::core::marker::SummaryState;
use crate::core::model::{DesiredState, MergeRequestState, Pins};
use crate::core::planner::{Plan, Write, plan_reconciliation};
use crate::core::receipt::{
    ActionKind, Outcome, Receipt, ReceiptAction, ReceiptFinding, ReceiptRepair, RequestTally,
    Rescan,
};
use crate::core::render::{self, SummaryContext, TargetBranch};
use crate::core::rescan::{WriteRecord, verify_rescan};
use crate::core::review_state::{decide, finding_statuses};
use crate::forge::{Forge, ForgeError};

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
    /// The target branch the pipeline pinned (SPEC §10.5): re-checked before the first
    /// write and recorded in the summary. `None` pins none and records none.
    pub target: Option<TargetBranch>,
}

/// Why a reconciliation did not complete. Every variant maps to exit code 3.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
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
}

/// The result of a completed run: its receipt and the plan it executed (for display).
#[derive(Debug, Clone)]
pub struct Publication {
    /// The receipt (SPEC §6).
    pub receipt: Receipt,
    /// The first plan computed (what a dry run shows).
    pub plan: Plan,
}

/// Reconciles the merge request behind `forge` towards `desired`.
pub fn reconcile(
    forge: &dyn Forge,
    desired: &DesiredState,
    ctx: &RunContext,
) -> Result<Publication, ReconcileError> {
    let start = forge.request_counts();
    let head = ctx.pins.source_sha.as_str();
    let summary_ctx = SummaryContext {
        pins: &ctx.pins,
        web_url: ctx.web_url.as_deref(),
        target: ctx.target.as_ref(),
        listing: None,
    };
    let bot = forge.bot_user_id()?;
    let mut warnings = BTreeSet::new();
    if let Some(target) = ctx.target.as_ref().filter(|t| !t.has_policies) {
        warnings.insert(no_policies_warning(&target.name));
    }

    let mut inventory = Inventory::from_listing(&forge.list_discussions()?, bot);
    warnings.extend(inventory.warnings.iter().cloned());
    let first_plan = plan_reconciliation(desired, &inventory, head);

    let finish = |outcome,
                  inventory: &Inventory,
                  plan: &Plan,
                  repairs: Vec<ReceiptRepair>,
                  warnings: &BTreeSet<String>,
                  verified| {
        let statuses = finding_statuses(desired, inventory);
        let decision = decide(&statuses);
        let findings = statuses
            .iter()
            .map(|s| ReceiptFinding {
                rule: s.finding.slot.rule.clone(),
                subject: s.finding.slot.subject.clone(),
                effect: s.finding.effect,
                occurrence: s.finding.occurrence.clone(),
                forge_id: s.forge_id,
                resolved: s.resolved,
            })
            .collect();
        let actions = plan
            .actions
            .iter()
            .map(|a| ReceiptAction {
                rule: a.slot.rule.clone(),
                subject: a.slot.subject.clone(),
                action: a.action,
                forge_id: a.forge_id.or_else(|| match a.action {
                    // Statuses follow the desired findings, sorted by slot.
                    ActionKind::Create | ActionKind::Supersede => statuses
                        .binary_search_by(|s| s.finding.slot.cmp(&a.slot))
                        .ok()
                        .and_then(|i| statuses[i].forge_id),
                    _ => None,
                }),
            })
            .collect();
        let used = forge.request_counts();
        Receipt::new(
            ctx.project.clone(),
            ctx.mr,
            ctx.pins.clone(),
            outcome,
            Some(decision),
            findings,
            actions,
            repairs,
            warnings.iter().cloned().collect(),
            Rescan { verified },
            RequestTally {
                reads: used.reads - start.reads,
                writes: used.writes - start.writes,
            },
        )
    };
    let repairs_of = |plan: &Plan| -> Vec<ReceiptRepair> {
        plan.repairs
            .iter()
            .map(|r| ReceiptRepair {
                repaired_forge_id: r.repaired_forge_id,
                canonical_forge_id: r.canonical_forge_id,
                action: r.action,
            })
            .collect()
    };

    let verified_body = |inventory: &Inventory| {
        render::summary_body(
            SummaryContext {
                listing: Some(inventory),
                ..summary_ctx
            },
            desired,
            &finding_statuses(desired, inventory),
            SummaryState::Verified,
        )
    };
    let summary_current = |inventory: &Inventory| {
        inventory.summaries.len() == 1 && inventory.summaries[0].body == verified_body(inventory)
    };

    if ctx.dry_run {
        let receipt = finish(
            Outcome::DryRun,
            &inventory,
            &first_plan,
            repairs_of(&first_plan),
            &warnings,
            false,
        );
        return Ok(Publication {
            receipt,
            plan: first_plan,
        });
    }
    if first_plan.writes.is_empty() && summary_current(&inventory) {
        let receipt = finish(
            Outcome::Published,
            &inventory,
            &first_plan,
            vec![],
            &warnings,
            true,
        );
        return Ok(Publication {
            receipt,
            plan: first_plan,
        });
    }

    // Right before the first write: a pipeline for an older head, or for the branch the MR
    // targeted before it was retargeted, must not publish.
    let mr = forge.merge_request()?;
    let retargeted = ctx
        .target
        .as_ref()
        .filter(|pinned| pinned.name != mr.target_branch);
    if mr.state != MergeRequestState::Opened || mr.head_sha != head || retargeted.is_some() {
        let outcome = if mr.state != MergeRequestState::Opened {
            Outcome::MrNotOpen
        } else {
            Outcome::StalePipeline
        };
        let used = forge.request_counts();
        let mut receipt = refusal_receipt(ctx, outcome, used.reads - start.reads);
        if let (Outcome::StalePipeline, Some(pinned)) = (outcome, retargeted) {
            receipt.warnings = vec![retargeted_warning(&pinned.name, &mr.target_branch)];
        }
        return Ok(Publication {
            receipt,
            plan: first_plan,
        });
    }

    let mut all_repairs: Vec<ReceiptRepair> = Vec::new();
    let mut record = WriteRecord::default();
    let mut plan = first_plan.clone();
    for _round in 0..MAX_PLANNING_ROUNDS {
        all_repairs.extend(repairs_of(&plan));
        match execute_round(forge, desired, &inventory, &plan, summary_ctx, &mut record) {
            Ok(()) => {}
            Err(err) if err.is_ambiguous_write() => {
                inventory = Inventory::from_listing(&forge.list_discussions()?, bot);
                warnings.extend(inventory.warnings.iter().cloned());
                plan = plan_reconciliation(desired, &inventory, head);
                continue;
            }
            Err(err) => return Err(err.into()),
        }

        let rescan = Inventory::from_listing(&forge.list_discussions()?, bot);
        warnings.extend(rescan.warnings.iter().cloned());
        let mismatches = verify_rescan(desired, &rescan, &record);
        if !mismatches.is_empty() {
            return Err(ReconcileError::RescanMismatch(mismatches));
        }
        mark_verified(forge, bot, &rescan, &verified_body(&rescan))?;
        let receipt = finish(
            Outcome::Published,
            &rescan,
            &first_plan,
            all_repairs,
            &warnings,
            true,
        );
        return Ok(Publication {
            receipt,
            plan: first_plan,
        });
    }
    Err(ReconcileError::TooManyRounds(MAX_PLANNING_ROUNDS))
}

/// Edits the summary to its "verified" body. An ambiguous failure is settled by listing
/// again: the edit is repeated only when the listing shows it did not take effect.
fn mark_verified(
    forge: &dyn Forge,
    bot: u64,
    rescan: &Inventory,
    body: &str,
) -> Result<(), ReconcileError> {
    let mut summary = rescan.summaries[0].clone();
    for _ in 0..MAX_PLANNING_ROUNDS {
        if summary.body == body {
            return Ok(());
        }
        match forge.edit_note(summary.note_id, body) {
            Ok(()) => return Ok(()),
            Err(err) if err.is_ambiguous_write() => {
                let listed = Inventory::from_listing(&forge.list_discussions()?, bot);
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

/// Summary to "reconciling" (when there are thread writes), then every planned write, in
/// order. Stops at the first failure.
fn execute_round(
    forge: &dyn Forge,
    desired: &DesiredState,
    inventory: &Inventory,
    plan: &Plan,
    summary_ctx: SummaryContext<'_>,
    record: &mut WriteRecord,
) -> Result<(), ForgeError> {
    let state = if plan.writes.is_empty() {
        // Only the summary differs: the listing just taken is the rescan.
        SummaryState::Verified
    } else {
        SummaryState::Reconciling
    };
    let body = render::summary_body(
        SummaryContext {
            listing: Some(inventory),
            ..summary_ctx
        },
        desired,
        &finding_statuses(desired, inventory),
        state,
    );
    match inventory.canonical_summary() {
        Some(summary) => {
            if summary.body != body {
                forge.edit_note(summary.note_id, &body)?;
            }
            record.summary_note_id = Some(summary.note_id);
        }
        None => record.summary_note_id = Some(forge.create_note(&body)?),
    }
    for write in &plan.writes {
        match write {
            Write::CreateThread {
                body,
                resolve_after,
                ..
            } => {
                let created = forge.create_thread(body)?;
                record.created.insert(created.note_id);
                if *resolve_after {
                    forge.resolve_thread(&created.discussion_id)?;
                    record.resolved.insert(created.note_id);
                }
            }
            Write::ReplyAndResolve {
                discussion_id,
                forge_id,
                reply,
            } => {
                forge.reply_to_thread(discussion_id, reply)?;
                forge.resolve_thread(discussion_id)?;
                record.resolved.insert(*forge_id);
            }
            Write::Resolve {
                discussion_id,
                forge_id,
            } => {
                forge.resolve_thread(discussion_id)?;
                record.resolved.insert(*forge_id);
            }
            Write::CollapseSummary { note_id, body } => {
                forge.edit_note(*note_id, body)?;
                record.collapsed.insert(*note_id);
            }
        }
    }
    Ok(())
}

/// The receipt warning of a run pinned to a target branch without policies (SPEC §10.5).
pub fn no_policies_warning(branch: &str) -> String {
    format!(
        "no policies on `{branch}`: the target branch has no .assent/policies/, so no policy judged this merge request"
    )
}

/// The receipt warning of a stale pipeline whose MR was retargeted (SPEC §10.5).
pub fn retargeted_warning(pinned: &str, current: &str) -> String {
    format!(
        "the merge request now targets `{current}`, not `{pinned}` as this pipeline pinned: stale pipeline, nothing written (a pipeline for the new target publishes)"
    )
}

/// The receipt of a designed no-write refusal (`stale-pipeline`, `mr-not-open`): decision
/// `null`, every array empty.
pub fn refusal_receipt(ctx: &RunContext, outcome: Outcome, reads: u64) -> Receipt {
    Receipt::new(
        ctx.project.clone(),
        ctx.mr,
        ctx.pins.clone(),
        outcome,
        None,
        vec![],
        vec![],
        vec![],
        vec![],
        Rescan { verified: false },
        RequestTally { reads, writes: 0 },
    )
}
