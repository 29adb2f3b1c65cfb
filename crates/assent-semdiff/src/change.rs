//! The semantic diff's output: one field-level change of a governed file.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of a field-level change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// The value exists only at the source SHA.
    Add,
    /// The value exists at both SHAs and differs.
    Modify,
    /// The value exists only at the base SHA.
    Delete,
}

impl ChangeKind {
    /// The lowercase name used in policies and occurrences.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Add => "add",
            ChangeKind::Modify => "modify",
            ChangeKind::Delete => "delete",
        }
    }
}

/// One field-level semantic change of a governed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Repository path of the file, e.g. `topics/orders.yaml`.
    pub file: String,
    /// RFC 6901 JSON pointer inside the file; `""` for a whole-file add or delete.
    pub pointer: String,
    /// Add, modify or delete.
    pub kind: ChangeKind,
    /// The value at the base SHA; `None` for an add.
    pub old: Option<Value>,
    /// The value at the source SHA; `None` for a delete.
    pub new: Option<Value>,
    /// The 1-based line the old value starts on at the base SHA, when the format says.
    /// Presentation only (docs/contract.md#lines): never part of a slot or an occurrence, so a push that
    /// only moves a value leaves its finding as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_line: Option<usize>,
    /// The 1-based line the new value starts on at the source SHA, when the format says.
    /// Presentation only, like [`Change::old_line`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_line: Option<usize>,
}

impl Change {
    /// The finding subject for this change: `<file>#<pointer>`.
    pub fn subject(&self) -> String {
        format!("{}#{}", self.file, self.pointer)
    }
}
