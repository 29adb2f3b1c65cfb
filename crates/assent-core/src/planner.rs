//! The state table (docs/contract.md#reconciliation): desired state × existing artifacts → a plan.
//!
//! [`plan_reconciliation`] is a pure function. It decides every thread write before the
//! first one is issued, records what it does to each slot (`actions`) and which duplicates it
//! repairs (`repairs`). The summary note is not planned here: its body depends on the forge
//! state after the thread writes, so the executor renders it with [`crate::render`].
//!
//! Per slot, with *current* threads (occurrence = the desired one) and *stale* threads:
//!
//! | existing for the slot | desired | action |
//! | --- | --- | --- |
//! | none | yes | `create` |
//! | only stale occurrences | yes | `supersede` (post a fresh thread) |
//! | current, unresolved | yes | `leave-untouched` |
//! | current, resolved | yes | `preserve-resolution` (never re-opened) |
//! | any unresolved | no | `resolve` (reply "outdated as of", then resolve) |
//!
//! Beside the row: unresolved stale threads of a desired slot get "superseded as of" and are
//! resolved; among threads sharing a slot *and* occurrence the lowest forge id is canonical
//! and every other unresolved one is resolved and recorded as a repair. Two choices beyond
//! the table, both for crash safety: a `comment` finding whose current thread is unresolved
//! (a crash between its create and its resolve, or a human re-opening it) is resolved again,
//! with action `resolve`, because comments must never gate; a repaired duplicate gets a
//! short reply naming the canonical thread so a human reading it knows why it was closed;
//! a summary note that became an unresolved thread (GitLab does that when someone replies to
//! a plain note) is resolved, because the summary must never gate either; and a reply the
//! bot already posted in the thread (a crash or a lost answer between the reply and the
//! resolve) is not posted again: the thread is only resolved.

use std::collections::{BTreeMap, BTreeSet};

use crate::commit_sha::CommitSha;
use crate::inventory::{Inventory, ThreadArtifact};
use crate::model::{DesiredState, DiffPosition, Effect, Finding, Placement, Slot};
use crate::receipt::{ActionKind, ReceiptRepair, RepairAction};
use crate::render;
use crate::review_state::is_retired;

/// One write to the forge, in the order the executor issues them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Post a new finding thread (and, for a comment, resolve it right after).
    CreateThread {
        /// The slot it fills.
        slot: Slot,
        /// Marker line plus message.
        body: String,
        /// True for `comment` findings.
        resolve_after: bool,
        /// The diff line to create it on (a DiffNote), `None` for a general thread. When
        /// the forge refuses the position (400), the executor creates the general thread.
        position: Option<DiffPosition>,
    },
    /// Reply in a thread, then resolve it.
    ReplyAndResolve {
        /// Discussion to write to.
        discussion_id: String,
        /// The thread's forge id (for receipts and verification).
        forge_id: u64,
        /// The reply text (no marker).
        reply: String,
    },
    /// Resolve a thread without a reply (a comment thread found unresolved).
    Resolve {
        /// Discussion to resolve.
        discussion_id: String,
        /// The thread's forge id.
        forge_id: u64,
    },
    /// Edit a duplicate summary note to a marker-less pointer at the canonical one.
    CollapseSummary {
        /// The duplicate's note id.
        note_id: u64,
        /// The marker-less body.
        body: String,
    },
}

impl Write {
    /// How many forge requests this write takes.
    pub fn request_count(&self) -> u64 {
        match self {
            Write::CreateThread { resolve_after, .. } => 1 + u64::from(*resolve_after),
            Write::ReplyAndResolve { .. } => 2,
            Write::Resolve { .. } | Write::CollapseSummary { .. } => 1,
        }
    }
}

/// What the plan does to one finding slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotAction {
    /// The slot.
    pub slot: Slot,
    /// The state-table row taken.
    pub action: ActionKind,
    /// The thread it concerns: the canonical thread, or `None` for one not yet created.
    pub forge_id: Option<u64>,
}

/// A duplicate the plan repairs: the receipt's own entry, so the receipt records it as is.
pub type Repair = ReceiptRepair;

/// Everything a run will do, decided before the first write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Thread writes and summary collapses, in issue order. The summary's own writes are not
    /// included (see the module docs).
    pub writes: Vec<Write>,
    /// One entry per slot desired or touched, sorted by slot.
    pub actions: Vec<SlotAction>,
    /// Duplicates repaired, sorted by repaired id.
    pub repairs: Vec<Repair>,
}

impl Plan {
    /// Number of forge requests the planned thread writes take.
    pub fn write_requests(&self) -> u64 {
        self.writes.iter().map(Write::request_count).sum()
    }
}

/// Plans the reconciliation of `inventory` (what exists) towards `desired` (what should),
/// for the judged source SHA `source_sha` (quoted in "outdated/superseded as of" replies).
pub fn plan_reconciliation(
    desired: &DesiredState,
    inventory: &Inventory,
    source_sha: &CommitSha,
) -> Plan {
    let mut by_slot: BTreeMap<&Slot, Vec<&ThreadArtifact>> = BTreeMap::new();
    for thread in &inventory.threads {
        by_slot.entry(&thread.slot).or_default().push(thread);
    }
    for finding in &desired.findings {
        by_slot.entry(&finding.slot).or_default();
    }

    let mut plan = Plan::default();
    for (slot, threads) in by_slot {
        let wanted = desired.get(slot);
        // Threads the bot resolved itself cannot carry assent for a gating finding: they
        // take no part in duplicate repair or the row, and count as stale (see
        // `review_state::stands_for`). `threads` is ascending by forge id.
        let (retired, live): (Vec<&ThreadArtifact>, Vec<&ThreadArtifact>) = threads
            .iter()
            .partition(|t| wanted.is_some_and(|f| is_retired(t, f)));
        let canonical_ids = repair_duplicates(&live, source_sha, &mut plan);
        let canonical: Vec<&ThreadArtifact> = live
            .iter()
            .copied()
            .filter(|t| canonical_ids.contains(&t.forge_id))
            .collect();
        match wanted {
            Some(finding) => plan_desired_slot(
                finding,
                desired.placement(slot),
                &canonical,
                !retired.is_empty(),
                source_sha,
                &mut plan,
            ),
            None => plan_undesired_slot(slot, &canonical, source_sha, &mut plan),
        }
    }

    if let Some((canonical, duplicates)) = inventory.summaries.split_first() {
        if let Some(discussion_id) = &canonical.open_thread {
            plan.writes.push(Write::Resolve {
                discussion_id: discussion_id.clone(),
                forge_id: canonical.note_id,
            });
        }
        for duplicate in duplicates {
            plan.writes.push(Write::CollapseSummary {
                note_id: duplicate.note_id,
                body: render::collapsed_summary_body(canonical.note_id),
            });
            plan.repairs.push(Repair {
                repaired_forge_id: duplicate.note_id,
                canonical_forge_id: canonical.note_id,
                action: RepairAction::Collapse,
            });
        }
    }
    // A previous bot's summary cannot be edited by the token's user (only a note's author
    // may, `app/policies/note_policy.rb`), but any Developer may reply and resolve a
    // discussion (a reply turns the plain note into a resolvable thread,
    // `app/models/individual_note_discussion.rb`): the reply says it is
    // superseded, and the resolution keeps it from holding up the merge.
    for adopted in &inventory.adopted_summaries {
        if !adopted.superseded {
            plan.writes.push(Write::ReplyAndResolve {
                discussion_id: adopted.discussion_id.clone(),
                forge_id: adopted.note_id,
                reply: render::ADOPTED_SUMMARY_REPLY.to_owned(),
            });
        } else if adopted.open_thread {
            plan.writes.push(Write::Resolve {
                discussion_id: adopted.discussion_id.clone(),
                forge_id: adopted.note_id,
            });
        }
    }
    plan.repairs.sort();
    plan
}

/// Resolves every unresolved non-canonical thread among those sharing an occurrence and
/// returns the forge ids of the canonical (lowest-id) thread of each occurrence.
fn repair_duplicates(
    threads: &[&ThreadArtifact],
    source_sha: &CommitSha,
    plan: &mut Plan,
) -> BTreeSet<u64> {
    let mut canonical_of: BTreeMap<&str, u64> = BTreeMap::new();
    for thread in threads {
        match canonical_of.get(thread.occurrence.as_str()) {
            None => {
                canonical_of.insert(thread.occurrence.as_str(), thread.forge_id);
            }
            Some(&canonical) => {
                if !thread.resolved {
                    reply_and_resolve(thread, render::duplicate_reply(canonical, source_sha), plan);
                    plan.repairs.push(Repair {
                        repaired_forge_id: thread.forge_id,
                        canonical_forge_id: canonical,
                        action: RepairAction::Resolve,
                    });
                }
            }
        }
    }
    canonical_of.into_values().collect()
}

/// Replies `reply` in `thread`, then resolves it; when the bot's reply is already there
/// (an earlier run was interrupted between the two writes, or lost the resolve's answer),
/// only resolves, so a thread never carries the same reply twice.
fn reply_and_resolve(thread: &ThreadArtifact, reply: String, plan: &mut Plan) {
    if thread.bot_replies.contains(&reply) {
        plan.writes.push(Write::Resolve {
            discussion_id: thread.discussion_id.clone(),
            forge_id: thread.forge_id,
        });
    } else {
        plan.writes.push(Write::ReplyAndResolve {
            discussion_id: thread.discussion_id.clone(),
            forge_id: thread.forge_id,
            reply,
        });
    }
}

fn plan_desired_slot(
    finding: &Finding,
    placement: Option<&Placement>,
    canonical: &[&ThreadArtifact],
    has_retired: bool,
    source_sha: &CommitSha,
    plan: &mut Plan,
) {
    let current = canonical
        .iter()
        .find(|t| t.occurrence == finding.occurrence);
    let stale = canonical
        .iter()
        .filter(|t| t.occurrence != finding.occurrence);
    let (action, forge_id) = match current {
        None => {
            plan.writes.push(Write::CreateThread {
                slot: finding.slot.clone(),
                body: render::finding_thread_body_linked(
                    finding,
                    placement.and_then(|p| p.link.as_ref()),
                ),
                resolve_after: finding.effect == Effect::Comment,
                position: placement.and_then(|p| p.position.clone()),
            });
            let action = if canonical.is_empty() && !has_retired {
                ActionKind::Create
            } else {
                ActionKind::Supersede
            };
            (action, None)
        }
        Some(thread) if thread.resolved => (ActionKind::PreserveResolution, Some(thread.forge_id)),
        Some(thread) if finding.effect == Effect::Comment => {
            plan.writes.push(Write::Resolve {
                discussion_id: thread.discussion_id.clone(),
                forge_id: thread.forge_id,
            });
            (ActionKind::Resolve, Some(thread.forge_id))
        }
        Some(thread) => (ActionKind::LeaveUntouched, Some(thread.forge_id)),
    };
    for thread in stale.filter(|t| !t.resolved) {
        reply_and_resolve(thread, render::superseded_reply(source_sha), plan);
    }
    plan.actions.push(SlotAction {
        slot: finding.slot.clone(),
        action,
        forge_id,
    });
}

fn plan_undesired_slot(
    slot: &Slot,
    canonical: &[&ThreadArtifact],
    source_sha: &CommitSha,
    plan: &mut Plan,
) {
    let mut first_resolved = None;
    for thread in canonical.iter().filter(|t| !t.resolved) {
        reply_and_resolve(thread, render::outdated_reply(source_sha), plan);
        first_resolved.get_or_insert(thread.forge_id);
    }
    if let Some(forge_id) = first_resolved {
        plan.actions.push(SlotAction {
            slot: slot.clone(),
            action: ActionKind::Resolve,
            forge_id: Some(forge_id),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::SummaryArtifact;
    use crate::marker::SummaryState;
    use crate::model::Occurrence;

    const HEAD_TEXT: &str = "1111111111111111111111111111111111111111";
    static HEAD: std::sync::LazyLock<CommitSha> =
        std::sync::LazyLock::new(|| CommitSha::parse(HEAD_TEXT).unwrap());

    fn slot(rule: &str) -> Slot {
        Slot {
            rule: rule.into(),
            subject: format!("f.yaml#/{rule}"),
        }
    }

    fn occ(n: u8) -> Occurrence {
        Occurrence::digest(&[n])
    }

    fn finding(rule: &str, n: u8, effect: Effect) -> Finding {
        Finding {
            slot: slot(rule),
            effect,
            occurrence: occ(n),
            message: format!("{rule} fired"),
        }
    }

    fn thread(id: u64, rule: &str, n: u8, resolved: bool) -> ThreadArtifact {
        ThreadArtifact {
            resolved_by_bot: false,
            edited: false,
            diff_note: false,
            resolved_by: None,
            forge_id: id,
            discussion_id: format!("{id:040x}"),
            slot: slot(rule),
            occurrence: occ(n),
            resolved,
            bot_replies: vec![],
        }
    }

    fn inv(mut threads: Vec<ThreadArtifact>) -> Inventory {
        threads.sort_by_key(|t| t.forge_id);
        Inventory {
            threads,
            summaries: vec![],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        }
    }

    fn actions(plan: &Plan) -> Vec<(String, ActionKind, Option<u64>)> {
        plan.actions
            .iter()
            .map(|a| (a.slot.rule.clone(), a.action, a.forge_id))
            .collect()
    }

    #[test]
    fn row_1_create_when_nothing_exists() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let plan = plan_reconciliation(&desired, &inv(vec![]), &HEAD);
        assert_eq!(actions(&plan), vec![("a".into(), ActionKind::Create, None)]);
        assert!(matches!(
            &plan.writes[..],
            [Write::CreateThread {
                resolve_after: false,
                ..
            }]
        ));
    }

    #[test]
    fn comment_findings_are_resolved_right_after_creation() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Comment)]);
        let plan = plan_reconciliation(&desired, &inv(vec![]), &HEAD);
        assert!(matches!(
            &plan.writes[..],
            [Write::CreateThread {
                resolve_after: true,
                ..
            }]
        ));
        assert_eq!(plan.write_requests(), 2);
    }

    #[test]
    fn a_placed_finding_is_created_on_its_line_and_a_moved_line_writes_nothing() {
        use crate::model::{DiffLine, FileLink};
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let at = |line| Placement {
            position: Some(DiffPosition {
                base_sha: crate::test_support::sha('b'),
                start_sha: crate::test_support::sha('5'),
                head_sha: HEAD.clone(),
                old_path: "f.yaml".into(),
                new_path: "f.yaml".into(),
                line: DiffLine::New(line),
            }),
            link: Some(FileLink {
                url: format!("https://h/g/p/-/blob/{HEAD_TEXT}/f.yaml#L{line}"),
                line: Some(line),
                at_base: false,
            }),
        };
        let placed = |line| {
            desired
                .clone()
                .with_placements([(desired.findings[0].slot.clone(), at(line))].into())
        };
        let plan = plan_reconciliation(&placed(3), &inv(vec![]), &HEAD);
        let [Write::CreateThread { body, position, .. }] = &plan.writes[..] else {
            panic!("one create: {:?}", plan.writes);
        };
        assert_eq!(position, &at(3).position);
        assert!(
            body.lines().nth(1).unwrap().ends_with(&format!(
                " · [line 3](https://h/g/p/-/blob/{HEAD_TEXT}/f.yaml#L3)"
            )),
            "{body}"
        );
        assert_eq!(
            body.lines().next(),
            render::finding_thread_body(&desired.findings[0])
                .lines()
                .next(),
            "the same marker"
        );

        // The thread exists; the value now sits on another line: nothing to write.
        let moved = plan_reconciliation(&placed(9), &inv(vec![thread(10, "a", 1, false)]), &HEAD);
        assert!(moved.writes.is_empty());
        assert_eq!(
            actions(&moved),
            vec![("a".into(), ActionKind::LeaveUntouched, Some(10))]
        );
    }

    #[test]
    fn row_2_leave_untouched_makes_no_write() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let plan = plan_reconciliation(&desired, &inv(vec![thread(10, "a", 1, false)]), &HEAD);
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::LeaveUntouched, Some(10))]
        );
        assert!(plan.writes.is_empty());
    }

    #[test]
    fn row_3_preserve_resolution_never_reopens() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let plan = plan_reconciliation(&desired, &inv(vec![thread(10, "a", 1, true)]), &HEAD);
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::PreserveResolution, Some(10))]
        );
        assert!(plan.writes.is_empty());
    }

    #[test]
    fn row_4_supersede_posts_fresh_and_resolves_unresolved_stale() {
        let desired = DesiredState::new(vec![finding("a", 2, Effect::Challenge)]);
        let plan = plan_reconciliation(
            &desired,
            &inv(vec![thread(10, "a", 1, true), thread(11, "a", 3, false)]),
            &HEAD,
        );
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::Supersede, None)]
        );
        assert_eq!(plan.writes.len(), 2);
        assert!(matches!(&plan.writes[0], Write::CreateThread { .. }));
        match &plan.writes[1] {
            Write::ReplyAndResolve {
                forge_id: 11,
                reply,
                ..
            } => assert!(reply.contains(HEAD_TEXT)),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn stale_beside_a_current_thread_is_resolved_and_the_row_follows_the_current() {
        let desired = DesiredState::new(vec![finding("a", 2, Effect::Challenge)]);
        let plan = plan_reconciliation(
            &desired,
            &inv(vec![thread(10, "a", 1, false), thread(11, "a", 2, true)]),
            &HEAD,
        );
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::PreserveResolution, Some(11))]
        );
        assert!(matches!(
            &plan.writes[..],
            [Write::ReplyAndResolve { forge_id: 10, .. }]
        ));
    }

    #[test]
    fn row_5_resolve_what_no_longer_fires() {
        let plan = plan_reconciliation(
            &DesiredState::default(),
            &inv(vec![thread(10, "a", 1, false), thread(12, "b", 1, true)]),
            &HEAD,
        );
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::Resolve, Some(10))]
        );
        match &plan.writes[..] {
            [
                Write::ReplyAndResolve {
                    forge_id: 10,
                    reply,
                    ..
                },
            ] => {
                assert_eq!(
                    reply,
                    &format!("Outdated as of {HEAD_TEXT}: this finding no longer fires.")
                )
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn duplicates_keep_the_lowest_id_whatever_the_order() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let threads = vec![
            thread(130, "a", 1, false),
            thread(110, "a", 1, false),
            thread(120, "a", 1, false),
        ];
        let plan = plan_reconciliation(&desired, &inv(threads), &HEAD);
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::LeaveUntouched, Some(110))]
        );
        let repaired: Vec<(u64, u64)> = plan
            .repairs
            .iter()
            .map(|r| (r.repaired_forge_id, r.canonical_forge_id))
            .collect();
        assert_eq!(repaired, vec![(120, 110), (130, 110)]);
        assert_eq!(plan.write_requests(), 4);
    }

    #[test]
    fn resolved_duplicates_need_no_repair() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let plan = plan_reconciliation(
            &desired,
            &inv(vec![thread(1, "a", 1, false), thread(2, "a", 1, true)]),
            &HEAD,
        );
        assert!(plan.repairs.is_empty());
        assert!(plan.writes.is_empty());
    }

    #[test]
    fn duplicate_summaries_collapse_into_the_lowest() {
        let summary = |id: u64| SummaryArtifact {
            open_thread: None,
            note_id: id,
            body: String::new(),
            occurrence: occ(0),
            state: SummaryState::Verified,
            source_sha: HEAD.clone(),
            updated_at: None,
        };
        let inventory = Inventory {
            threads: vec![],
            summaries: vec![summary(5), summary(9)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        let plan = plan_reconciliation(&DesiredState::default(), &inventory, &HEAD);
        assert_eq!(
            plan.repairs,
            vec![Repair {
                repaired_forge_id: 9,
                canonical_forge_id: 5,
                action: RepairAction::Collapse
            }]
        );
        match &plan.writes[..] {
            [Write::CollapseSummary { note_id: 9, body }] => {
                assert!(!body.contains("assent:marker"));
                assert!(body.contains("note 5"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_thread_edited_after_its_resolution_is_superseded_not_preserved() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let mut edited = thread(10, "a", 1, true);
        edited.edited = true;
        let plan = plan_reconciliation(&desired, &inv(vec![edited.clone()]), &HEAD);
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::Supersede, None)]
        );
        assert!(matches!(&plan.writes[..], [Write::CreateThread { .. }]));
        // Once the fresh thread exists it is the slot's thread; the edited one is left as is.
        let plan = plan_reconciliation(
            &desired,
            &inv(vec![edited, thread(11, "a", 1, false)]),
            &HEAD,
        );
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::LeaveUntouched, Some(11))]
        );
        assert!(plan.writes.is_empty() && plan.repairs.is_empty());
    }

    #[test]
    fn a_thread_the_bot_resolved_itself_never_carries_assent() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Challenge)]);
        let mut retired = thread(10, "a", 1, true);
        retired.resolved_by_bot = true;
        let plan = plan_reconciliation(&desired, &inv(vec![retired.clone()]), &HEAD);
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::Supersede, None)]
        );
        assert!(matches!(&plan.writes[..], [Write::CreateThread { .. }]));
        // The fresh thread is then canonical, not a duplicate of the retired one.
        let plan = plan_reconciliation(
            &desired,
            &inv(vec![retired.clone(), thread(11, "a", 1, false)]),
            &HEAD,
        );
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::LeaveUntouched, Some(11))]
        );
        assert!(plan.writes.is_empty() && plan.repairs.is_empty());
        // A comment's thread is resolved by the bot by design: it is kept.
        let comment = DesiredState::new(vec![finding("a", 1, Effect::Comment)]);
        let plan = plan_reconciliation(&comment, &inv(vec![retired]), &HEAD);
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::PreserveResolution, Some(10))]
        );
    }

    #[test]
    fn a_summary_that_became_an_open_thread_is_resolved() {
        let summary = SummaryArtifact {
            open_thread: Some("d".repeat(40)),
            note_id: 5,
            body: String::new(),
            occurrence: occ(0),
            state: SummaryState::Verified,
            source_sha: HEAD.clone(),
            updated_at: None,
        };
        let inventory = Inventory {
            threads: vec![],
            summaries: vec![summary],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        let plan = plan_reconciliation(&DesiredState::default(), &inventory, &HEAD);
        assert!(matches!(
            &plan.writes[..],
            [Write::Resolve { forge_id: 5, .. }]
        ));
        assert!(plan.actions.is_empty());
    }

    #[test]
    fn unresolved_comment_thread_is_resolved_again() {
        let desired = DesiredState::new(vec![finding("a", 1, Effect::Comment)]);
        let plan = plan_reconciliation(&desired, &inv(vec![thread(10, "a", 1, false)]), &HEAD);
        assert_eq!(
            actions(&plan),
            vec![("a".into(), ActionKind::Resolve, Some(10))]
        );
        assert!(matches!(
            &plan.writes[..],
            [Write::Resolve { forge_id: 10, .. }]
        ));
    }

    #[test]
    fn a_reply_already_posted_is_not_posted_again() {
        // An earlier run replied and died (or lost the answer) before resolving.
        let with_reply = |id, rule, n, reply: String| ThreadArtifact {
            bot_replies: vec![reply],
            ..thread(id, rule, n, false)
        };
        let desired = DesiredState::new(vec![finding("a", 2, Effect::Challenge)]);
        let inventory = inv(vec![
            thread(10, "a", 2, false),
            with_reply(11, "a", 2, render::duplicate_reply(10, &HEAD)),
            with_reply(12, "a", 1, render::superseded_reply(&HEAD)),
            with_reply(13, "b", 1, render::outdated_reply(&HEAD)),
            // A reply for another head is not this run's reply.
            with_reply(
                14,
                "c",
                1,
                render::outdated_reply(&crate::test_support::sha('0')),
            ),
        ]);
        let plan = plan_reconciliation(&desired, &inventory, &HEAD);
        let resolved_only: Vec<u64> = plan
            .writes
            .iter()
            .filter_map(|w| match w {
                Write::Resolve { forge_id, .. } => Some(*forge_id),
                _ => None,
            })
            .collect();
        assert_eq!(resolved_only, vec![11, 12, 13]);
        assert!(matches!(
            &plan.writes[..],
            [.., Write::ReplyAndResolve { forge_id: 14, .. }]
        ));
        assert_eq!(plan.repairs.len(), 1, "the duplicate is still a repair");
    }

    #[test]
    fn nothing_to_do_plans_nothing() {
        let plan = plan_reconciliation(&DesiredState::default(), &inv(vec![]), &HEAD);
        assert_eq!(plan, Plan::default());
    }
}
