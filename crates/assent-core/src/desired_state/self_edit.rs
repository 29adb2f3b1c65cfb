//! What an `assent/self-edit` finding covers (docs/contract.md#policy-owners): a path under
//! `.assent/` as it is at the base and at the source SHA.
//!
//! A policy owner's assent is to *this* change of the path, so the finding's occurrence is
//! `Occurrence::of("assent/self-edit", "<path>#", modify, old, new)` with `old` the path at
//! the base and `new` the path at the source, each `null` when the path does not exist on
//! that side and `{"mode": <git mode>, "sha256": <hex of its content>}` when it does (a
//! regular file's bytes, a symbolic link's target). Any later change of the path (its
//! content, its mode, a file turned into a link, a delete and a different re-add) is a new
//! occurrence: the old thread is superseded and a policy owner must assent again. A rebase
//! that leaves both sides as they were keeps the occurrence, and with it the assent.
//!
//! A side that could not be read ([`PathState::Unreadable`], or a changed path the reader gave
//! no state for) cannot be tied to an assent: the path is also `assent/undecidable`, so the
//! merge request blocks instead of carrying an assent over to content nobody saw.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ChangedFileInput, FileContent, is_assent_path};

/// The git mode of a regular file, for sides given as contents only
/// ([`self_edit_sides_of_contents`]).
pub const REGULAR_FILE_MODE: &str = "100644";

/// What a path under `.assent/` is on one side of a merge request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathState {
    /// Nothing at the path on this side.
    Absent,
    /// An entry of git mode `mode` (`100644`, `100755`, `120000`, …) whose content (a file's
    /// bytes, a symbolic link's target) has the SHA-256 `sha256` (64 lowercase hex).
    Present {
        /// The git mode, as the forge lists it.
        mode: String,
        /// SHA-256 of the content, lowercase hex.
        sha256: String,
    },
    /// What is at the path could not be read; why, for the `assent/undecidable` message.
    Unreadable(String),
}

impl PathState {
    /// The path present with git mode `mode` and content `bytes`.
    pub fn present(mode: &str, bytes: &[u8]) -> PathState {
        PathState::Present {
            mode: mode.to_owned(),
            sha256: hex::encode(Sha256::digest(bytes)),
        }
    }

    /// The side as the occurrence holds it: `null` when absent, `{mode, sha256}` when
    /// present, `{unreadable}` when it could not be read (the path is undecidable then, so
    /// this value never carries an assent).
    fn occurrence_value(&self) -> Value {
        match self {
            PathState::Absent => Value::Null,
            PathState::Present { mode, sha256 } => json!({ "mode": mode, "sha256": sha256 }),
            PathState::Unreadable(_) => json!({ "unreadable": true }),
        }
    }
}

/// A path under `.assent/` at the base and at the source SHA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfEditSides {
    /// The path at the base SHA.
    pub base: PathState,
    /// The path at the source SHA.
    pub source: PathState,
}

impl SelfEditSides {
    /// The `old` and `new` of the self-edit occurrence.
    pub(super) fn occurrence_values(&self) -> (Value, Value) {
        (self.base.occurrence_value(), self.source.occurrence_value())
    }

    /// Why a side could not be read, each naming its side: the path is undecidable.
    pub(super) fn unreadable_reasons(&self, path: &str) -> Vec<String> {
        [("base", &self.base), ("source", &self.source)]
            .into_iter()
            .filter_map(|(side, state)| match state {
                PathState::Unreadable(why) => Some(format!(
                    "`{path}` at the {side} SHA could not be read, so an assent to it could \
                     not be tied to what it is: {why}"
                )),
                _ => None,
            })
            .collect()
    }
}

/// The sides of every path under `.assent/` that `files` change, taken from the files' own
/// contents as regular files (mode [`REGULAR_FILE_MODE`]): for inputs that carry contents
/// inline (a policy test case), never for what a forge lists (its reader knows the modes).
/// A path on one side only of a rename is absent on the other.
pub fn self_edit_sides_of_contents(files: &[ChangedFileInput]) -> BTreeMap<String, SelfEditSides> {
    let state = |content: &FileContent| match content {
        FileContent::Absent => PathState::Absent,
        FileContent::Present(bytes) => PathState::present(REGULAR_FILE_MODE, bytes),
        FileContent::Unreadable(why) => PathState::Unreadable(why.clone()),
    };
    let mut sides: BTreeMap<String, SelfEditSides> = BTreeMap::new();
    for file in files {
        for path in [&file.old_path, &file.new_path] {
            if !is_assent_path(path) {
                continue;
            }
            let entry = sides.entry(path.clone()).or_insert(SelfEditSides {
                base: PathState::Absent,
                source: PathState::Absent,
            });
            // A path listed twice (a file turned into a link: deleted, then added) exists
            // on a side when either entry says so.
            if *path == file.old_path && file.base != FileContent::Absent {
                entry.base = state(&file.base);
            }
            if *path == file.new_path && file.source != FileContent::Absent {
                entry.source = state(&file.source);
            }
        }
    }
    sides
}
