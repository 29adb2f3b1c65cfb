//! Provisional receipt types (replaced by the full receipt module).

use serde::{Deserialize, Serialize};

use crate::core::model::{Decision, Effect, Occurrence, Pins};

/// Outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Published.
    Published,
    /// Dry run.
    DryRun,
    /// Stale.
    StalePipeline,
    /// Not open.
    MrNotOpen,
}

/// Action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// Create.
    Create,
    /// Leave.
    LeaveUntouched,
    /// Preserve.
    PreserveResolution,
    /// Supersede.
    Supersede,
    /// Resolve.
    Resolve,
}

/// Repair action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RepairAction {
    /// Resolve.
    Resolve,
    /// Collapse.
    Collapse,
}

/// Finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptFinding {
    /// Rule.
    pub rule: String,
    /// Subject.
    pub subject: String,
    /// Effect.
    pub effect: Effect,
    /// Occurrence.
    pub occurrence: Occurrence,
    /// Forge id.
    pub forge_id: Option<u64>,
    /// Resolved.
    pub resolved: bool,
}

/// Action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptAction {
    /// Rule.
    pub rule: String,
    /// Subject.
    pub subject: String,
    /// Action.
    pub action: ActionKind,
    /// Forge id.
    pub forge_id: Option<u64>,
}

/// Repair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptRepair {
    /// Repaired.
    pub repaired_forge_id: u64,
    /// Canonical.
    pub canonical_forge_id: u64,
    /// Action.
    pub action: RepairAction,
}

/// Rescan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rescan {
    /// Verified.
    pub verified: bool,
}

/// Requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestTally {
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
}

/// Receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// Api.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Project.
    pub project: String,
    /// Mr.
    pub mr: u64,
    /// Pins.
    pub pins: Pins,
    /// Outcome.
    pub outcome: Outcome,
    /// Decision.
    pub decision: Option<Decision>,
    /// Findings.
    pub findings: Vec<ReceiptFinding>,
    /// Actions.
    pub actions: Vec<ReceiptAction>,
    /// Repairs.
    pub repairs: Vec<ReceiptRepair>,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Rescan.
    pub rescan: Rescan,
    /// Requests.
    pub requests: RequestTally,
}

impl Receipt {
    /// New.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        project: String,
        mr: u64,
        pins: Pins,
        outcome: Outcome,
        decision: Option<Decision>,
        findings: Vec<ReceiptFinding>,
        actions: Vec<ReceiptAction>,
        repairs: Vec<ReceiptRepair>,
        warnings: Vec<String>,
        rescan: Rescan,
        requests: RequestTally,
    ) -> Receipt {
        Receipt {
            api_version: "assent/v1".into(),
            kind: "PublicationReceipt".into(),
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
            requests,
        }
    }

    /// JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap() + "\n"
    }
}
