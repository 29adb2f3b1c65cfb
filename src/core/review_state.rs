//! The review state of the desired findings as a listing shows it, and the decision.
//!
//! For each desired finding: its canonical thread (lowest forge id of the current
//! occurrence), whether that thread is resolved, and from those the gate's decision:
//! `BLOCK` if any block finding fired, else `REVIEW` if any challenge's thread is unresolved
//! (or not yet posted), else `APPROVE`.

use crate::core::inventory::Inventory;
use crate::core::model::{Decision, DesiredState, Effect, Finding};

/// One desired finding and what the forge shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingStatus<'a> {
    /// The desired finding.
    pub finding: &'a Finding,
    /// Its canonical thread's forge id; `None` when not (yet) posted.
    pub forge_id: Option<u64>,
    /// Whether that thread is resolved (false when not posted).
    pub resolved: bool,
}

/// Pairs each desired finding with its canonical thread in `inventory`.
pub fn finding_statuses<'a>(
    desired: &'a DesiredState,
    inventory: &Inventory,
) -> Vec<FindingStatus<'a>> {
    let canonical_of = inventory.canonical_threads();
    desired
        .findings
        .iter()
        .map(|finding| {
            let canonical = canonical_of
                .get(&(&finding.slot, &finding.occurrence))
                .copied();
            FindingStatus {
                finding,
                forge_id: canonical.map(|t| t.forge_id),
                resolved: canonical.is_some_and(|t| t.resolved),
            }
        })
        .collect()
}

/// The gate's decision for these statuses.
pub fn decide(statuses: &[FindingStatus<'_>]) -> Decision {
    if statuses.iter().any(|s| s.finding.effect == Effect::Block) {
        Decision::Block
    } else if statuses
        .iter()
        .any(|s| s.finding.effect == Effect::Challenge && !s.resolved)
    {
        Decision::Review
    } else {
        Decision::Approve
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::inventory::ThreadArtifact;
    use crate::core::model::{Occurrence, Slot};

    fn finding(rule: &str, effect: Effect) -> Finding {
        Finding {
            slot: Slot {
                rule: rule.into(),
                subject: "s".into(),
            },
            effect,
            occurrence: Occurrence::digest(rule.as_bytes()),
            message: String::new(),
        }
    }

    fn thread(id: u64, rule: &str, resolved: bool) -> ThreadArtifact {
        ThreadArtifact {
            forge_id: id,
            discussion_id: String::new(),
            slot: Slot {
                rule: rule.into(),
                subject: "s".into(),
            },
            occurrence: Occurrence::digest(rule.as_bytes()),
            resolved,
        }
    }

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
        assert_eq!(decide(&finding_statuses(&desired, &open)), Decision::Review);
        let done = Inventory {
            threads: vec![thread(1, "c", true)],
            ..Inventory::default()
        };
        assert_eq!(
            decide(&finding_statuses(&desired, &done)),
            Decision::Approve
        );
        assert_eq!(
            decide(&finding_statuses(&desired, &Inventory::default())),
            Decision::Review
        );
        let blocked = DesiredState::new(vec![finding("b", Effect::Block)]);
        let resolved = Inventory {
            threads: vec![thread(1, "b", true)],
            ..Inventory::default()
        };
        assert_eq!(
            decide(&finding_statuses(&blocked, &resolved)),
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
        let statuses = finding_statuses(&desired, &inv);
        assert_eq!(statuses[0].forge_id, Some(3));
        assert!(statuses[0].resolved);
    }
}
