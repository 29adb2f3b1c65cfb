//! The review state of the desired findings as a listing shows it, and the decision.
//!
//! For each desired finding: its canonical thread (lowest forge id of the current
//! occurrence), whether that thread is resolved and whether the resolution counts as assent
//! ([`crate::who_assents`]), and from those the gate's decision: `BLOCK` if any block
//! finding fired, else `REVIEW` if any challenge lacks assent (thread open, not yet posted,
//! or resolved by someone whose resolution does not count), else `APPROVE`.

use crate::desired_state::RULE_SELF_EDIT;
use crate::inventory::{Inventory, ThreadArtifact};
use crate::model::{Decision, DesiredState, Effect, Finding};
use crate::who_assents::{self, Assent, AssentFacts, NotCounted};

/// One desired finding and what the forge shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingStatus<'a> {
    /// The desired finding.
    pub finding: &'a Finding,
    /// Its canonical thread's forge id; `None` when not (yet) posted.
    pub forge_id: Option<u64>,
    /// Whether that thread is resolved (false when not posted).
    pub resolved: bool,
    /// For a challenge: whether the resolution counts as assent. Comment and block findings
    /// are [`Assent::Open`]: nobody assents to them.
    pub assent: Assent,
}

/// Whether `thread` stands for `finding`: same slot, same occurrence, and not a thread the
/// bot resolved itself while the finding gates. Assent resolves threads as outdated,
/// superseded or duplicate; if the same judged content fires again later (a revert, then
/// the same change pushed back), that resolution must not count as a human's assent, so such
/// a thread is *retired* and the finding gets a fresh one. Comment threads are resolved by
/// the bot by design and never gate, so they are never retired.
pub fn stands_for(thread: &ThreadArtifact, finding: &Finding) -> bool {
    thread.slot == finding.slot
        && thread.occurrence == finding.occurrence
        && !is_retired(thread, finding)
}

/// A thread of `finding`'s slot that the bot resolved itself, or whose first note was edited
/// after its resolution ([`ThreadArtifact::edited`]), while `finding` gates: either way its
/// resolution is not a human's assent to what the thread shows, so the finding gets a fresh
/// thread.
pub fn is_retired(thread: &ThreadArtifact, finding: &Finding) -> bool {
    (thread.resolved_by_bot || thread.edited) && finding.effect != Effect::Comment
}

/// Pairs each desired finding with its canonical thread in `inventory`, and judges each
/// resolved challenge thread's resolution under `facts`.
pub fn finding_statuses<'a>(
    desired: &'a DesiredState,
    inventory: &Inventory,
    facts: &AssentFacts,
) -> Vec<FindingStatus<'a>> {
    let mut canonical: Vec<Option<&ThreadArtifact>> = vec![None; desired.findings.len()];
    for (i, thread) in current_threads(desired, inventory) {
        // Inventory threads are ascending by forge id: the first match is canonical.
        canonical[i].get_or_insert(thread);
    }
    desired
        .findings
        .iter()
        .zip(canonical)
        .map(|(finding, canonical)| FindingStatus {
            finding,
            forge_id: canonical.map(|t| t.forge_id),
            resolved: canonical.is_some_and(|t| t.resolved),
            assent: match canonical {
                Some(thread) if finding.effect == Effect::Challenge => {
                    let judged =
                        who_assents::judge(thread, desired.assenters_of(&finding.slot.rule), facts);
                    if finding.slot.rule == RULE_SELF_EDIT {
                        as_policy_owners(judged)
                    } else {
                        judged
                    }
                }
                _ => Assent::Open,
            },
        })
        .collect()
}

/// A self-edit's assenters are the policy owners: a resolver outside them is told so in
/// those words (docs/policies.md, "Changing policies").
fn as_policy_owners(judged: Assent) -> Assent {
    match judged {
        Assent::NotCounted {
            by,
            reason: NotCounted::NotAnAssenter { assenters, role },
        } => Assent::NotCounted {
            by,
            reason: NotCounted::NotAPolicyOwner {
                owners: assenters,
                role,
            },
        },
        other => other,
    }
}

/// Every thread of `inventory` that stands for a desired finding ([`stands_for`]), in
/// inventory order (ascending forge id), with the index of that finding in
/// `desired.findings`.
///
/// One binary search per thread (the findings are sorted by slot), so pairing findings with
/// threads costs `O(threads × log findings)` rather than a scan of every thread per finding.
pub fn current_threads<'a>(
    desired: &'a DesiredState,
    inventory: &'a Inventory,
) -> impl Iterator<Item = (usize, &'a ThreadArtifact)> + 'a {
    inventory.threads.iter().filter_map(move |thread| {
        let i = desired
            .findings
            .binary_search_by(|f| f.slot.cmp(&thread.slot))
            .ok()?;
        stands_for(thread, &desired.findings[i]).then_some((i, thread))
    })
}

/// The gate's decision for these statuses.
pub fn decide(statuses: &[FindingStatus<'_>]) -> Decision {
    if statuses.iter().any(|s| s.finding.effect == Effect::Block) {
        Decision::Block
    } else if statuses
        .iter()
        .any(|s| s.finding.effect == Effect::Challenge && !s.assent.is_given())
    {
        Decision::Review
    } else {
        Decision::Approve
    }
}

/// The decision before anyone has resolved a thread (what `assent test` cases expect):
/// [`decide`] over the desired findings with no thread posted.
pub fn unresolved_decision(desired: &DesiredState) -> Decision {
    decide(&finding_statuses(
        desired,
        &Inventory::default(),
        &AssentFacts::default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Occurrence;
    use crate::model::UserRef;
    use crate::test_support::{AUTHOR, facts, finding, thread};

    #[test]
    fn decision_follows_effects_and_resolution() {
        let desired = DesiredState::new(vec![
            finding("c", Effect::Challenge),
            finding("m", Effect::Comment),
        ]);
        let open = Inventory {
            threads: vec![thread(1, "c", false)],
            ..Inventory::default()
        };
        assert_eq!(
            decide(&finding_statuses(&desired, &open, &facts())),
            Decision::Review
        );
        let done = Inventory {
            threads: vec![thread(1, "c", true)],
            ..Inventory::default()
        };
        assert_eq!(
            decide(&finding_statuses(&desired, &done, &facts())),
            Decision::Approve
        );
        assert_eq!(
            decide(&finding_statuses(&desired, &Inventory::default(), &facts())),
            Decision::Review
        );
        let blocked = DesiredState::new(vec![finding("b", Effect::Block)]);
        let resolved = Inventory {
            threads: vec![thread(1, "b", true)],
            ..Inventory::default()
        };
        assert_eq!(
            decide(&finding_statuses(&blocked, &resolved, &facts())),
            Decision::Block
        );
        assert_eq!(decide(&[]), Decision::Approve);
    }

    #[test]
    fn canonical_thread_is_the_lowest_id() {
        let desired = DesiredState::new(vec![finding("c", Effect::Challenge)]);
        let inv = Inventory {
            threads: vec![thread(3, "c", true), thread(7, "c", false)],
            ..Inventory::default()
        };
        let statuses = finding_statuses(&desired, &inv, &facts());
        assert_eq!(statuses[0].forge_id, Some(3));
        assert!(statuses[0].resolved);
    }

    #[test]
    fn each_finding_pairs_with_its_own_current_thread_only() {
        let desired = DesiredState::new(vec![
            finding("a", Effect::Challenge),
            finding("b", Effect::Challenge),
            finding("c", Effect::Block),
            finding("d", Effect::Comment),
        ]);
        let mut stale_b = thread(2, "b", false);
        stale_b.occurrence = Occurrence::digest(b"older");
        let inv = Inventory {
            threads: vec![
                thread(1, "zz-undesired", false),
                stale_b,
                thread(3, "a", true),
                thread(4, "c", false),
                thread(5, "a", false),
                thread(6, "d", true),
            ],
            ..Inventory::default()
        };
        let got: Vec<(&str, Option<u64>, bool)> = finding_statuses(&desired, &inv, &facts())
            .iter()
            .map(|s| (s.finding.slot.rule.as_str(), s.forge_id, s.resolved))
            .collect();
        assert_eq!(
            got,
            [
                ("a", Some(3), true),
                ("b", None, false),
                ("c", Some(4), false),
                ("d", Some(6), true),
            ]
        );
        let current: Vec<(usize, u64)> = current_threads(&desired, &inv)
            .map(|(i, t)| (i, t.forge_id))
            .collect();
        assert_eq!(current, [(0, 3), (2, 4), (0, 5), (3, 6)]);
    }

    #[test]
    fn a_challenge_resolved_by_its_author_keeps_gating() {
        let desired = DesiredState::new(vec![finding("c", Effect::Challenge)]);
        let mut self_assented = thread(1, "c", true);
        self_assented.resolved_by = Some(UserRef {
            id: AUTHOR,
            username: "author".into(),
        });
        let inv = Inventory {
            threads: vec![self_assented],
            ..Inventory::default()
        };
        let statuses = finding_statuses(&desired, &inv, &facts());
        assert!(statuses[0].resolved);
        assert!(!statuses[0].assent.is_given());
        assert_eq!(decide(&statuses), Decision::Review);
    }

    #[test]
    fn comment_and_block_findings_carry_no_assent() {
        let desired = DesiredState::new(vec![
            finding("b", Effect::Block),
            finding("m", Effect::Comment),
        ]);
        let inv = Inventory {
            threads: vec![thread(1, "b", true), thread(2, "m", true)],
            ..Inventory::default()
        };
        let statuses = finding_statuses(&desired, &inv, &facts());
        assert!(statuses.iter().all(|s| s.assent == Assent::Open));
    }

    #[test]
    fn the_unresolved_decision_is_the_strongest_effect() {
        let decision = |effects: &[Effect]| {
            let findings = effects
                .iter()
                .enumerate()
                .map(|(i, e)| finding(&format!("r{i}"), *e))
                .collect();
            unresolved_decision(&DesiredState::new(findings))
        };
        assert_eq!(decision(&[]), Decision::Approve);
        assert_eq!(decision(&[Effect::Comment]), Decision::Approve);
        assert_eq!(
            decision(&[Effect::Comment, Effect::Challenge]),
            Decision::Review
        );
        assert_eq!(
            decision(&[Effect::Challenge, Effect::Block]),
            Decision::Block
        );
    }
}
