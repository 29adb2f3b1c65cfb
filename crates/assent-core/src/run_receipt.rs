//! The receipt of a run, built from the run's facts by pure functions: the executor gathers
//! facts, this decides what the receipt says ([`receipt_of`] for a run that published or
//! would publish, [`refusal_receipt_of`] for a designed no-write refusal).

use crate::inventory::Inventory;
use crate::model::{DesiredState, Pins, ReceiptPins};
use crate::planner::Plan;
use crate::receipt::{
    ActionKind, Outcome, Receipt, ReceiptAction, ReceiptFinding, ReceiptMember, ReceiptRepair,
    RequestCounts, Rescan,
};
use crate::review_state::{decide, finding_statuses};
use crate::who_assents::{Assent, AssentFacts};

/// What a run knows when it writes its receipt.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    /// Project id or path, as given.
    pub project: &'a str,
    /// The MR's IID.
    pub mr: u64,
    /// The pinned inputs.
    pub pins: &'a Pins,
    /// How the run ended (`published` or `dry-run`; the refusals have their own receipt).
    pub outcome: Outcome,
    /// The desired findings.
    pub desired: &'a DesiredState,
    /// The bot's artifacts as last listed.
    pub inventory: &'a Inventory,
    /// Who may assent.
    pub assent: &'a AssentFacts,
    /// The first plan: the receipt's `actions` are its rows.
    pub plan: &'a Plan,
    /// Every duplicate repaired, over all rounds.
    pub repairs: &'a [ReceiptRepair],
    /// Warnings gathered on the way (any order; the receipt sorts them).
    pub warnings: &'a [String],
    /// Whether the last listing matched the plan.
    pub verified: bool,
    /// Requests the run made.
    pub requests: RequestCounts,
}

/// The receipt `facts` describe: findings with their thread and assent, the decision, the
/// state-table row per slot (a created thread named by the id the listing shows).
pub fn receipt_of(facts: RunFacts<'_>) -> Receipt {
    let statuses = finding_statuses(facts.desired, facts.inventory, facts.assent);
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
            assented: s.assent.is_given(),
            assented_by: match &s.assent {
                Assent::Given { by } => Some(by.username.clone()),
                _ => None,
            },
            members: ReceiptMember::all_of(facts.desired, &s.finding.slot),
        })
        .collect();
    let actions = facts
        .plan
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
    Receipt::new(
        facts.project.to_owned(),
        facts.mr,
        facts.pins.clone().into(),
        facts.outcome,
        Some(decision),
        findings,
        actions,
        facts.repairs.to_vec(),
        facts.warnings.to_vec(),
        Rescan {
            verified: facts.verified,
        },
        facts.requests,
    )
}

/// What a run knows when it refuses by design before any write (`stale-pipeline`,
/// `mr-not-open`).
#[derive(Debug, Clone)]
pub struct RefusalFacts<'a> {
    /// Project id or path, as given.
    pub project: &'a str,
    /// The MR's IID.
    pub mr: u64,
    /// The inputs pinned so far.
    pub pins: ReceiptPins,
    /// Which refusal.
    pub outcome: Outcome,
    /// Warnings gathered on the way (the listing's travel with every return).
    pub warnings: Vec<String>,
    /// Reads the run made; a refusal makes no write.
    pub reads: u64,
}

/// The receipt of a designed no-write refusal: decision `null`, every array but `warnings`
/// empty, not verified, no write.
pub fn refusal_receipt_of(facts: RefusalFacts<'_>) -> Receipt {
    Receipt::new(
        facts.project.to_owned(),
        facts.mr,
        facts.pins,
        facts.outcome,
        None,
        Vec::new(),
        Vec::new(),
        Vec::new(),
        facts.warnings,
        Rescan { verified: false },
        RequestCounts {
            reads: facts.reads,
            writes: 0,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::model::{ChangeKind, Decision, Effect, MemberFinding};
    use crate::planner::plan_reconciliation;
    use crate::test_support::finding;

    #[test]
    fn a_first_run_receipt_names_every_create_and_the_decision() {
        let desired = DesiredState::new(vec![
            finding("c", Effect::Challenge),
            finding("b", Effect::Block),
        ]);
        let inventory = Inventory::default();
        let plan = plan_reconciliation(&desired, &inventory, &crate::test_support::sha('1'));
        let pins = crate::test_support::pins();
        let warnings = vec!["z".to_owned(), "a".to_owned(), "a".to_owned()];
        let receipt = receipt_of(RunFacts {
            project: "42",
            mr: 7,
            pins: &pins,
            outcome: Outcome::DryRun,
            desired: &desired,
            inventory: &inventory,
            assent: &AssentFacts::default(),
            plan: &plan,
            repairs: &[],
            warnings: &warnings,
            verified: false,
            requests: RequestCounts {
                reads: 2,
                writes: 0,
            },
        });
        assert_eq!(receipt.decision, Some(Decision::Block));
        assert_eq!(receipt.findings.len(), 2);
        assert!(receipt.findings.iter().all(|f| f.forge_id.is_none()));
        assert_eq!(receipt.actions.len(), 2);
        assert!(
            receipt
                .actions
                .iter()
                .all(|a| a.action == ActionKind::Create)
        );
        assert_eq!(receipt.warnings, vec!["a".to_owned(), "z".to_owned()]);
        assert_eq!(receipt.requests.reads, 2);
        assert!(!receipt.rescan.verified);
    }

    #[test]
    fn a_grouped_finding_lists_every_member_sorted_by_subject() {
        let mut group = finding("r", Effect::Challenge);
        group.slot.subject = crate::model::GROUP_SUBJECT.to_owned();
        let member = |subject: &str, effect| MemberFinding {
            finding: crate::model::Finding {
                slot: crate::model::Slot {
                    rule: group.slot.rule.clone(),
                    subject: subject.to_owned(),
                },
                effect,
                occurrence: crate::model::Occurrence::digest(subject.as_bytes()),
                message: String::new(),
            },
            kind: ChangeKind::Delete,
        };
        let members = vec![
            member("z.yaml#/b", Effect::Block),
            member("a.yaml#/a", Effect::Comment),
        ];
        let desired = DesiredState::new(vec![group.clone()])
            .with_members(BTreeMap::from([(group.slot.clone(), members)]));
        let inventory = Inventory::default();
        let plan = plan_reconciliation(&desired, &inventory, &crate::test_support::sha('1'));
        let facts = RunFacts {
            project: "42",
            mr: 7,
            pins: &crate::test_support::pins(),
            outcome: Outcome::DryRun,
            desired: &desired,
            inventory: &inventory,
            assent: &AssentFacts::default(),
            plan: &plan,
            repairs: &[],
            warnings: &[],
            verified: false,
            requests: RequestCounts::default(),
        };
        let receipt = receipt_of(facts);
        let json = serde_json::to_value(&receipt.findings[0]).unwrap();
        assert_eq!(
            json["members"],
            serde_json::json!([
                {"subject": "a.yaml#/a", "kind": "delete", "effect": "comment",
                 "occurrence": crate::model::Occurrence::digest(b"a.yaml#/a").as_str()},
                {"subject": "z.yaml#/b", "kind": "delete", "effect": "block",
                 "occurrence": crate::model::Occurrence::digest(b"z.yaml#/b").as_str()},
            ])
        );
        let ungrouped = DesiredState::new(vec![finding("c", Effect::Challenge)]);
        let plain = receipt_of(RunFacts {
            desired: &ungrouped,
            ..facts
        });
        let text = serde_json::to_string(&plain.findings[0]).unwrap();
        assert!(
            !text.contains("members"),
            "no key for an ungrouped finding: {text}"
        );
    }
}
