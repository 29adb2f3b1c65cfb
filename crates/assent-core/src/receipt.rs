//! The publication receipt (docs/contract.md#receipt): what a run decided, did and saw, as one JSON document.
//!
//! The receipt is compared byte for byte across reruns and by tests outside the project, so
//! its bytes are a function of its content only: keys in the contract's order (docs/contract.md#receipt) (struct field
//! order, never a map), every list sorted and deduplicated by [`Receipt::new`], no clock and no
//! random id. Entries are ordered by the contract's key first and then by every remaining field,
//! so two entries that share a key still come out in one order whatever order they came in.
//! Strings compare by their UTF-8 bytes (Rust's `Ord` for `String`), never by locale.

use serde::{Deserialize, Deserializer, Serialize};

use crate::model::{ChangeKind, Decision, DesiredState, Effect, Occurrence, ReceiptPins, Slot};

/// The receipt's `apiVersion`.
pub const API_VERSION: &str = "assent/v1";

/// The receipt's `kind`.
pub const KIND: &str = "PublicationReceipt";

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The plan was carried out (possibly with zero writes).
    Published,
    /// `--dry-run`: the plan was computed and reported, nothing was written.
    DryRun,
    /// The MR's head moved past the pinned source SHA: nothing was written.
    StalePipeline,
    /// The MR is closed, merged or locked: nothing was written.
    MrNotOpen,
}

impl Outcome {
    /// The name written in the receipt.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Published => "published",
            Outcome::DryRun => "dry-run",
            Outcome::StalePipeline => "stale-pipeline",
            Outcome::MrNotOpen => "mr-not-open",
        }
    }
}

/// What the plan did to one finding slot (the rows of the state table, docs/contract.md#state-table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// No thread existed for the slot: one was posted.
    Create,
    /// The current occurrence's thread is unresolved: no write.
    LeaveUntouched,
    /// The current occurrence's thread is resolved: no write, never re-opened.
    PreserveResolution,
    /// Only stale occurrences existed: a fresh thread was posted.
    Supersede,
    /// The slot is no longer desired: its thread was (or already is) resolved.
    Resolve,
}

impl ActionKind {
    /// The name written in the receipt.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Create => "create",
            ActionKind::LeaveUntouched => "leave-untouched",
            ActionKind::PreserveResolution => "preserve-resolution",
            ActionKind::Supersede => "supersede",
            ActionKind::Resolve => "resolve",
        }
    }
}

/// How a duplicate artifact was repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RepairAction {
    /// A duplicate thread of the same slot and occurrence was resolved.
    Resolve,
    /// A second summary note was edited to a marker-less "superseded by" body.
    Collapse,
}

impl RepairAction {
    /// The name written in the receipt.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairAction::Resolve => "resolve",
            RepairAction::Collapse => "collapse",
        }
    }
}

/// One desired finding and the thread that carries it.
// Field order is both the JSON key order and the sort order (rule, subject first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiptFinding {
    /// The rule id.
    pub rule: String,
    /// The finding subject.
    pub subject: String,
    /// How strongly it gates.
    pub effect: Effect,
    /// The judged content.
    pub occurrence: Occurrence,
    /// The thread's forge id; `None` in a dry run for a thread not yet created.
    pub forge_id: Option<u64>,
    /// The thread's resolved bit after the run.
    pub resolved: bool,
    /// True only when the resolution counts as assent (docs/contract.md#who-may-assent): a challenge resolved by
    /// someone other than the MR's author and the bot, within the policy's narrowing.
    pub assented: bool,
    /// The username of the user whose resolution counts as assent: present exactly when
    /// `assented` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assented_by: Option<String>,
    /// For a grouped finding (subject `*`, or `*2`, `*3`, … for the parts of a split group):
    /// every finding it stands for, sorted by subject, so the receipt names each change the
    /// thread's resolution assents to. Absent (and empty) for any other finding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<ReceiptMember>,
}

/// One member of a grouped finding: the finding it would be if its rule were not grouped.
// Field order is both the JSON key order and the sort order (subject first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiptMember {
    /// The member's own subject, `<file>#<pointer>`.
    pub subject: String,
    /// Add, modify or delete.
    pub kind: ChangeKind,
    /// The member's own effect (the group's is the strongest of its members').
    pub effect: Effect,
    /// The member's own occurrence: `sha256:` of `{kind, new, old, rule, subject}` as for an
    /// ungrouped finding, so it names the judged values without repeating them.
    pub occurrence: Occurrence,
}

impl ReceiptMember {
    /// The members of the grouped finding at `slot` as the receipt lists them (empty for any
    /// other finding): one constructor for the run's receipt and `assent check`'s report.
    pub fn all_of(desired: &DesiredState, slot: &Slot) -> Vec<ReceiptMember> {
        desired
            .members_of(slot)
            .iter()
            .map(|m| ReceiptMember {
                subject: m.finding.slot.subject.clone(),
                kind: m.kind,
                effect: m.finding.effect,
                occurrence: m.finding.occurrence.clone(),
            })
            .collect()
    }
}

/// What the plan did to one finding slot.
// Field order is both the JSON key order and the sort order (rule, subject first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiptAction {
    /// The rule id.
    pub rule: String,
    /// The finding subject.
    pub subject: String,
    /// The table row that applied.
    pub action: ActionKind,
    /// The thread acted on or created; `None` in a dry run for a thread not yet created.
    pub forge_id: Option<u64>,
}

/// One duplicate artifact and the canonical one it was folded into.
// Field order is both the JSON key order and the sort order (repaired id first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiptRepair {
    /// The duplicate's forge id.
    pub repaired_forge_id: u64,
    /// The forge id of the artifact kept (the lowest).
    pub canonical_forge_id: u64,
    /// Resolved (thread) or collapsed (summary).
    pub action: RepairAction,
}

/// The outcome of the step-9 rescan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rescan {
    /// True only when the rescan matched the plan and the summary says "verified".
    pub verified: bool,
}

/// What the run did to the bot's approval of the merge request (docs/contract.md#approvals, `--approve`).
///
/// The receipt's `approval` is `null` when the run did not manage the approval at all: no
/// `--approve`, a dry run, or a refusal (`stale-pipeline`, `mr-not-open`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalOutcome {
    /// The decision is `APPROVE` at the pinned head and the bot approved it with this run.
    Approved,
    /// The decision is not `APPROVE` and the bot withdrew the approval it had given.
    Unapproved,
    /// The approval already matched the decision: no write.
    Unchanged,
}

impl ApprovalOutcome {
    /// The name written in the receipt.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalOutcome::Approved => "approved",
            ApprovalOutcome::Unapproved => "unapproved",
            ApprovalOutcome::Unchanged => "unchanged",
        }
    }
}

/// How many forge requests were made: counted by the adapters (`Forge::request_counts`) and
/// recorded in the receipt, so "a rerun makes zero writes" is checkable. One type for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCounts {
    /// Read requests (GETs, one per page).
    pub reads: u64,
    /// Write requests (POST/PUT), whether or not they succeeded.
    pub writes: u64,
}

impl RequestCounts {
    /// The requests made since `start` was read from the same counter.
    pub fn since(self, start: RequestCounts) -> RequestCounts {
        RequestCounts {
            reads: self.reads - start.reads,
            writes: self.writes - start.writes,
        }
    }
}

/// The publication receipt.
///
/// Fields are public for reading; build one with [`Receipt::new`], the one place lists are
/// normalised. [`Receipt::to_json`] serializes a normalised copy, so even a receipt edited
/// after construction writes deterministic bytes.
// Field order is the JSON key order of docs/contract.md#receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    /// Always [`API_VERSION`]; reading any other value fails.
    #[serde(deserialize_with = "api_version")]
    pub api_version: String,
    /// Always [`KIND`]; reading any other value fails.
    #[serde(deserialize_with = "kind")]
    pub kind: String,
    /// The project id or path, as given.
    pub project: String,
    /// The MR IID.
    pub mr: u64,
    /// The pinned inputs (a refused run's, as far as it pinned them).
    pub pins: ReceiptPins,
    /// How the run ended.
    pub outcome: Outcome,
    /// The gate's verdict; `None` when no decision was computed (stale pipeline, MR not open).
    pub decision: Option<Decision>,
    /// Desired findings, sorted by (rule, subject).
    pub findings: Vec<ReceiptFinding>,
    /// One entry per finding slot touched by the plan or desired, sorted by (rule, subject).
    pub actions: Vec<ReceiptAction>,
    /// Duplicate repairs, sorted by repaired forge id.
    pub repairs: Vec<ReceiptRepair>,
    /// Operator-facing warnings, sorted by text.
    pub warnings: Vec<String>,
    /// The step-9 rescan.
    pub rescan: Rescan,
    /// What the run did to the bot's approval; `None` (JSON `null`) when it did not manage
    /// it. [`Receipt::new`] leaves it `None`: only the approval step sets it.
    pub approval: Option<ApprovalOutcome>,
    /// Forge request counts.
    pub requests: RequestCounts,
}

fn api_version<'de, D: Deserializer<'de>>(de: D) -> Result<String, D::Error> {
    expect_constant(de, API_VERSION)
}

fn kind<'de, D: Deserializer<'de>>(de: D) -> Result<String, D::Error> {
    expect_constant(de, KIND)
}

/// Reading a receipt of another version or kind as this one would silently misinterpret it.
fn expect_constant<'de, D: Deserializer<'de>>(de: D, expected: &str) -> Result<String, D::Error> {
    let got = String::deserialize(de)?;
    if got == expected {
        Ok(got)
    } else {
        Err(serde::de::Error::invalid_value(
            serde::de::Unexpected::Str(&got),
            &expected,
        ))
    }
}

impl Receipt {
    /// Builds a receipt and normalises it: findings and actions sorted by (rule, subject),
    /// repairs by repaired forge id, warnings by text, each with exact duplicates removed.
    #[allow(clippy::too_many_arguments)] // one argument per document field, in the order of docs/contract.md#receipt
    pub fn new(
        project: String,
        mr: u64,
        pins: ReceiptPins,
        outcome: Outcome,
        decision: Option<Decision>,
        findings: Vec<ReceiptFinding>,
        actions: Vec<ReceiptAction>,
        repairs: Vec<ReceiptRepair>,
        warnings: Vec<String>,
        rescan: Rescan,
        requests: RequestCounts,
    ) -> Receipt {
        let mut receipt = Receipt {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            project,
            mr,
            pins,
            outcome,
            decision,
            findings,
            actions,
            repairs,
            warnings,
            rescan,
            approval: None,
            requests,
        };
        receipt.normalise();
        receipt
    }

    /// The one normalisation rule. Sorting by every field (the derived `Ord`, whose leading
    /// fields are the contract's sort keys) makes the order total, so equal content in any input
    /// order gives equal bytes; only exact duplicates are dropped, so a planner bug that puts
    /// two different entries in one slot stays visible instead of being silently resolved.
    fn normalise(&mut self) {
        for finding in &mut self.findings {
            finding.members.sort();
            finding.members.dedup();
        }
        self.findings.sort();
        self.findings.dedup();
        self.actions.sort();
        self.actions.dedup();
        self.repairs.sort();
        self.repairs.dedup();
        self.warnings.sort();
        self.warnings.dedup();
    }

    /// The receipt document: compact JSON on one line, then `\n`. Deterministic bytes.
    pub fn to_json(&self) -> String {
        let mut doc = self.clone();
        doc.normalise();
        let mut json =
            serde_json::to_string(&doc).expect("a receipt has only string keys and finite numbers");
        json.push('\n');
        json
    }

    /// Reads a receipt document back, rejecting unknown keys and other versions or kinds.
    /// The lists are taken as written (not re-normalised), so a reader sees the file's order.
    pub fn from_json(text: &str) -> Result<Receipt, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Pins;

    fn occ(n: u8) -> Occurrence {
        Occurrence::digest(&[n])
    }

    fn pins() -> ReceiptPins {
        Pins {
            source_sha: crate::commit_sha::CommitSha::parse(&"a".repeat(40)).unwrap(),
            target_sha: crate::test_support::sha('b'),
            base_sha: crate::test_support::sha('c'),
            policy_digest: Occurrence::digest(b"policies").to_string(),
            policy_project: None,
            policy_sha: None,
        }
        .into()
    }

    fn finding(
        rule: &str,
        subject: &str,
        effect: Effect,
        forge_id: Option<u64>,
        resolved: bool,
    ) -> ReceiptFinding {
        ReceiptFinding {
            rule: rule.into(),
            subject: subject.into(),
            effect,
            occurrence: occ(forge_id.unwrap_or(0) as u8),
            forge_id,
            resolved,
            assented: resolved && effect == Effect::Challenge,
            assented_by: (resolved && effect == Effect::Challenge).then(|| "reviewer".into()),
            members: Vec::new(),
        }
    }

    fn action(
        rule: &str,
        subject: &str,
        action: ActionKind,
        forge_id: Option<u64>,
    ) -> ReceiptAction {
        ReceiptAction {
            rule: rule.into(),
            subject: subject.into(),
            action,
            forge_id,
        }
    }

    fn repair(repaired: u64, canonical: u64, action: RepairAction) -> ReceiptRepair {
        ReceiptRepair {
            repaired_forge_id: repaired,
            canonical_forge_id: canonical,
            action,
        }
    }

    /// A realistic published run: one challenge created, one comment preserved, one stale
    /// slot resolved, a duplicate thread and a second summary repaired, one warning.
    fn realistic(
        findings: Vec<ReceiptFinding>,
        actions: Vec<ReceiptAction>,
        repairs: Vec<ReceiptRepair>,
        warnings: Vec<String>,
    ) -> Receipt {
        Receipt::new(
            "42".into(),
            7,
            pins(),
            Outcome::Published,
            Some(Decision::Review),
            findings,
            actions,
            repairs,
            warnings,
            Rescan { verified: true },
            RequestCounts {
                reads: 6,
                writes: 3,
            },
        )
    }

    fn realistic_parts() -> (
        Vec<ReceiptFinding>,
        Vec<ReceiptAction>,
        Vec<ReceiptRepair>,
        Vec<String>,
    ) {
        let findings = vec![
            finding(
                "retention-shrink",
                "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                Effect::Challenge,
                Some(123),
                false,
            ),
            finding(
                "owner-change",
                "topics/orders.yaml#/topics/orders.events.v1/owner",
                Effect::Comment,
                Some(118),
                true,
            ),
            finding(
                "retention-shrink",
                "topics/billing.yaml#/topics/billing.v2/retention_days",
                Effect::Challenge,
                Some(131),
                false,
            ),
        ];
        let actions = vec![
            action(
                "retention-shrink",
                "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                ActionKind::LeaveUntouched,
                Some(123),
            ),
            action(
                "retention-shrink",
                "topics/billing.yaml#/topics/billing.v2/retention_days",
                ActionKind::Create,
                Some(131),
            ),
            action(
                "owner-change",
                "topics/orders.yaml#/topics/orders.events.v1/owner",
                ActionKind::PreserveResolution,
                Some(118),
            ),
            action(
                "topic-delete",
                "topics/legacy.yaml#/topics/legacy.v0",
                ActionKind::Resolve,
                Some(97),
            ),
        ];
        let repairs = vec![
            repair(130, 123, RepairAction::Resolve),
            repair(125, 101, RepairAction::Collapse),
        ];
        let warnings = vec!["note 88: malformed assent marker (truncated JSON payload); skipped, delete the note to silence this warning".to_owned()];
        (findings, actions, repairs, warnings)
    }

    #[test]
    fn small_receipt_has_exact_bytes() {
        let receipt = Receipt::new(
            "group/configs".into(),
            7,
            Pins {
                source_sha: crate::commit_sha::CommitSha::parse(&"5".repeat(40)).unwrap(),
                target_sha: crate::test_support::sha('7'),
                base_sha: crate::test_support::sha('b'),
                policy_digest: "sha256:p".into(),
                policy_project: None,
                policy_sha: None,
            }
            .into(),
            Outcome::Published,
            Some(Decision::Review),
            vec![finding("r", "f#/x", Effect::Challenge, Some(123), false)],
            vec![action("r", "f#/x", ActionKind::Create, Some(123))],
            vec![repair(130, 123, RepairAction::Resolve)],
            vec!["w".into()],
            Rescan { verified: true },
            RequestCounts {
                reads: 6,
                writes: 3,
            },
        );
        let expected = format!(
            concat!(
                r#"{{"apiVersion":"assent/v1","kind":"PublicationReceipt","project":"group/configs","mr":7,"#,
                r#""pins":{{"sourceSha":"5555555555555555555555555555555555555555","targetSha":"7777777777777777777777777777777777777777","baseSha":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","policyDigest":"sha256:p"}},"#,
                r#""outcome":"published","decision":"REVIEW","#,
                r#""findings":[{{"rule":"r","subject":"f#/x","effect":"challenge","occurrence":"{occ}","forgeId":123,"resolved":false,"assented":false}}],"#,
                r#""actions":[{{"rule":"r","subject":"f#/x","action":"create","forgeId":123}}],"#,
                r#""repairs":[{{"repairedForgeId":130,"canonicalForgeId":123,"action":"resolve"}}],"#,
                r#""warnings":["w"],"rescan":{{"verified":true}},"approval":null,"requests":{{"reads":6,"writes":3}}}}"#,
                "\n"
            ),
            occ = occ(123)
        );
        assert_eq!(receipt.to_json(), expected);
    }

    #[test]
    fn assented_by_follows_assented_exactly_when_assented() {
        let mut given = finding("r", "f#/x", Effect::Challenge, Some(123), true);
        given.assented_by = Some("alice".into());
        let json = serde_json::to_string(&given).unwrap();
        assert!(
            json.ends_with(r#""resolved":true,"assented":true,"assentedBy":"alice"}"#),
            "{json}"
        );
        let mut not_counted = given.clone();
        not_counted.assented = false;
        not_counted.assented_by = None;
        let json = serde_json::to_string(&not_counted).unwrap();
        assert!(
            json.ends_with(r#""resolved":true,"assented":false}"#),
            "{json}"
        );
        assert_eq!(
            serde_json::from_str::<ReceiptFinding>(&serde_json::to_string(&given).unwrap())
                .unwrap(),
            given
        );
    }

    #[test]
    fn a_receipt_naming_a_malformed_source_sha_fails_to_load() {
        let (findings, actions, repairs, warnings) = realistic_parts();
        let json = realistic(findings, actions, repairs, warnings).to_json();
        let loaded: Receipt = serde_json::from_str(&json).unwrap();
        assert_eq!(loaded.to_json(), json);
        let sha = "a".repeat(40);
        assert!(json.contains(&format!(r#""sourceSha":"{sha}""#)), "{json}");
        for bad in ["", "abc123", &"g".repeat(40)] {
            let tampered = json.replace(&sha, bad);
            let error = serde_json::from_str::<Receipt>(&tampered).unwrap_err();
            assert!(error.to_string().contains("is not a commit SHA"), "{error}");
        }
    }

    #[test]
    fn refusal_receipt_writes_null_decision_and_empty_arrays() {
        let receipt = crate::run_receipt::refusal_receipt_of(crate::run_receipt::RefusalFacts {
            project: "42",
            mr: 7,
            pins: crate::model::RefusedPins {
                source_sha: crate::test_support::sha('1'),
                target_sha: None,
                base_sha: Some(crate::test_support::sha('3')),
            }
            .into(),
            outcome: Outcome::StalePipeline,
            warnings: Vec::new(),
            reads: 1,
        });
        let json = receipt.to_json();
        // An unread pin keeps its key with an empty value; it reads back as unread.
        assert!(
            json.contains(&format!(
                r#""pins":{{"sourceSha":"{}","targetSha":"","baseSha":"{}","policyDigest":""}}"#,
                "1".repeat(40),
                "3".repeat(40)
            )),
            "{json}"
        );
        let loaded: Receipt = serde_json::from_str(&json).unwrap();
        assert_eq!(loaded, receipt);
        assert!(matches!(loaded.pins, ReceiptPins::Refused(_)));
        assert!(
            json.contains(r#""outcome":"stale-pipeline","decision":null,"findings":[],"actions":[],"repairs":[],"warnings":[],"rescan":{"verified":false},"approval":null,"#),
            "{json}"
        );
        assert_eq!(json.matches('\n').count(), 1);
        assert!(json.ends_with("}\n"));
    }

    #[test]
    fn dry_run_writes_null_forge_ids() {
        let mut receipt = realistic(
            vec![finding("r", "s", Effect::Block, None, false)],
            vec![action("r", "s", ActionKind::Create, None)],
            vec![],
            vec![],
        );
        receipt.outcome = Outcome::DryRun;
        let json = receipt.to_json();
        assert!(json.contains(r#""outcome":"dry-run""#), "{json}");
        assert!(json.contains(r#""effect":"block","occurrence":"#), "{json}");
        assert!(
            json.contains(r#""forgeId":null,"resolved":false,"assented":false}"#),
            "{json}"
        );
        assert!(
            json.contains(r#""action":"create","forgeId":null}"#),
            "{json}"
        );
    }

    #[test]
    fn enum_names_match_the_spec() {
        let names = |v: serde_json::Value| v.as_str().unwrap().to_owned();
        for o in [
            Outcome::Published,
            Outcome::DryRun,
            Outcome::StalePipeline,
            Outcome::MrNotOpen,
        ] {
            assert_eq!(names(serde_json::to_value(o).unwrap()), o.as_str());
        }
        assert_eq!(
            [
                Outcome::Published,
                Outcome::DryRun,
                Outcome::StalePipeline,
                Outcome::MrNotOpen
            ]
            .map(Outcome::as_str),
            ["published", "dry-run", "stale-pipeline", "mr-not-open"]
        );
        let kinds = [
            ActionKind::Create,
            ActionKind::LeaveUntouched,
            ActionKind::PreserveResolution,
            ActionKind::Supersede,
            ActionKind::Resolve,
        ];
        for k in kinds {
            assert_eq!(names(serde_json::to_value(k).unwrap()), k.as_str());
        }
        assert_eq!(
            kinds.map(ActionKind::as_str),
            [
                "create",
                "leave-untouched",
                "preserve-resolution",
                "supersede",
                "resolve"
            ]
        );
        for r in [RepairAction::Resolve, RepairAction::Collapse] {
            assert_eq!(names(serde_json::to_value(r).unwrap()), r.as_str());
        }
        assert_eq!(
            [RepairAction::Resolve, RepairAction::Collapse].map(RepairAction::as_str),
            ["resolve", "collapse"]
        );
    }

    #[test]
    fn approval_sits_between_rescan_and_requests_with_the_spec_names() {
        let mut receipt = realistic(vec![], vec![], vec![], vec![]);
        for (outcome, name) in [
            (ApprovalOutcome::Approved, "approved"),
            (ApprovalOutcome::Unapproved, "unapproved"),
            (ApprovalOutcome::Unchanged, "unchanged"),
        ] {
            assert_eq!(outcome.as_str(), name);
            receipt.approval = Some(outcome);
            let json = receipt.to_json();
            assert!(
                json.contains(&format!(
                    r#""rescan":{{"verified":true}},"approval":"{name}","requests":"#
                )),
                "{json}"
            );
            assert_eq!(Receipt::from_json(&json).unwrap(), receipt);
        }
        receipt.approval = None;
        assert!(
            receipt
                .to_json()
                .contains(r#""rescan":{"verified":true},"approval":null,"requests":"#)
        );
        let unknown = receipt
            .to_json()
            .replace(r#""approval":null"#, r#""approval":"approve""#);
        assert!(
            Receipt::from_json(&unknown).is_err(),
            "an approval name outside the contract is refused"
        );
    }

    #[test]
    fn new_sorts_and_deduplicates_every_list() {
        let receipt = realistic(
            vec![
                finding("b", "s", Effect::Block, Some(2), false),
                finding("a", "z", Effect::Challenge, Some(3), false),
                finding("a", "s", Effect::Comment, Some(1), true),
                finding("b", "s", Effect::Block, Some(2), false),
            ],
            vec![
                action("b", "s", ActionKind::Create, Some(2)),
                action("a", "s", ActionKind::Resolve, Some(1)),
                action("b", "s", ActionKind::Create, Some(2)),
            ],
            vec![
                repair(30, 3, RepairAction::Resolve),
                repair(10, 1, RepairAction::Collapse),
                repair(30, 3, RepairAction::Resolve),
                repair(20, 3, RepairAction::Resolve),
            ],
            vec!["zeta".into(), "alpha".into(), "zeta".into(), "Beta".into()],
        );
        let slots = |v: Vec<(&str, &str)>| {
            v.into_iter()
                .map(|(r, s)| (r.to_owned(), s.to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            receipt
                .findings
                .iter()
                .map(|f| (f.rule.clone(), f.subject.clone()))
                .collect::<Vec<_>>(),
            slots(vec![("a", "s"), ("a", "z"), ("b", "s")])
        );
        assert_eq!(
            receipt
                .actions
                .iter()
                .map(|a| (a.rule.clone(), a.subject.clone()))
                .collect::<Vec<_>>(),
            slots(vec![("a", "s"), ("b", "s")])
        );
        assert_eq!(
            receipt
                .repairs
                .iter()
                .map(|r| r.repaired_forge_id)
                .collect::<Vec<_>>(),
            [10, 20, 30]
        );
        assert_eq!(receipt.warnings, ["Beta", "alpha", "zeta"]);
    }

    #[test]
    fn entries_sharing_a_slot_are_kept_in_a_total_order() {
        let a = action("r", "s", ActionKind::Create, Some(2));
        let b = action("r", "s", ActionKind::Supersede, Some(1));
        let one = realistic(vec![], vec![a.clone(), b.clone()], vec![], vec![]);
        let two = realistic(vec![], vec![b, a], vec![], vec![]);
        assert_eq!(
            one.actions.len(),
            2,
            "different entries are not silently merged"
        );
        assert_eq!(one.to_json(), two.to_json());
    }

    #[test]
    fn same_data_in_any_input_order_gives_identical_bytes() {
        let (findings, actions, repairs, warnings) = realistic_parts();
        let forward = realistic(
            findings.clone(),
            actions.clone(),
            repairs.clone(),
            warnings.clone(),
        );
        fn rev<T>(mut v: Vec<T>) -> Vec<T> {
            v.reverse();
            v
        }
        let mut doubled_findings = findings.clone();
        doubled_findings.extend(rev(findings));
        let backward = realistic(doubled_findings, rev(actions), rev(repairs), rev(warnings));
        assert_eq!(forward, backward);
        assert_eq!(forward.to_json().as_bytes(), backward.to_json().as_bytes());
    }

    #[test]
    fn to_json_normalises_even_after_fields_are_edited() {
        let (findings, actions, repairs, warnings) = realistic_parts();
        let built = realistic(findings, actions, repairs, warnings);
        let mut edited = built.clone();
        edited.actions.reverse();
        edited.warnings.push(edited.warnings[0].clone());
        assert_eq!(edited.to_json(), built.to_json());
    }

    #[test]
    fn round_trips_through_deserialize() {
        let (findings, actions, repairs, warnings) = realistic_parts();
        let receipt = realistic(findings, actions, repairs, warnings);
        let json = receipt.to_json();
        let back = Receipt::from_json(&json).unwrap();
        assert_eq!(back, receipt);
        assert_eq!(back.to_json(), json);
    }

    #[test]
    fn deserialize_rejects_other_versions_kinds_and_unknown_keys() {
        let json = realistic(vec![], vec![], vec![], vec![]).to_json();
        assert!(Receipt::from_json(&json).is_ok());
        for (from, to) in [
            (r#""apiVersion":"assent/v1""#, r#""apiVersion":"assent/v2""#),
            (r#""kind":"PublicationReceipt""#, r#""kind":"Policy""#),
            (r#""mr":7"#, r#""mr":7,"extra":1"#),
            (r#""outcome":"published""#, r#""outcome":"Published""#),
            (r#""writes":3"#, r#""writes":3,"deletes":0"#),
        ] {
            let edited = json.replacen(from, to, 1);
            assert_ne!(edited, json, "{from} not found");
            assert!(Receipt::from_json(&edited).is_err(), "accepted {to}");
        }
    }

    #[test]
    fn realistic_receipt_snapshot() {
        let (findings, actions, repairs, warnings) = realistic_parts();
        insta::assert_snapshot!(realistic(findings, actions, repairs, warnings).to_json());
    }
}
