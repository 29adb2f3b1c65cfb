//! What a webhook delivery asks of serve, read from its `X-Gitlab-Event` header and body as
//! hostile input: only the project id and the MR iid are taken (docs/serve.md), every other
//! field is ignored, unknown fields are normal (GitLab 16.x to 18.x add them freely).

use serde_json::Value;

/// The event kinds serve acts on, and the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `Merge Request Hook`.
    MergeRequest,
    /// `Note Hook`.
    Note,
    /// `Emoji Hook`.
    Emoji,
    /// `Pipeline Hook`.
    Pipeline,
    /// Anything else (answered 204).
    Other,
}

impl EventKind {
    /// From the `X-Gitlab-Event` header.
    pub fn from_header(header: Option<&str>) -> EventKind {
        match header.map(str::trim) {
            Some("Merge Request Hook") => EventKind::MergeRequest,
            Some("Note Hook") => EventKind::Note,
            Some("Emoji Hook") => EventKind::Emoji,
            Some("Pipeline Hook") => EventKind::Pipeline,
            _ => EventKind::Other,
        }
    }

    /// The metric and log label: `merge_request`, `note`, `emoji`, `pipeline`, `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::MergeRequest => "merge_request",
            EventKind::Note => "note",
            EventKind::Emoji => "emoji",
            EventKind::Pipeline => "pipeline",
            EventKind::Other => "other",
        }
    }
}

/// The MR an event names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nudge {
    /// The project's numeric id.
    pub project_id: u64,
    /// The MR's IID.
    pub iid: u64,
}

/// What to do with a delivery that passed the secret check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Classify this MR.
    Nudge(Nudge),
    /// A well-formed event that concerns no MR serve acts on (204).
    Ignored,
    /// Not JSON, or names no project and MR (400).
    Malformed(&'static str),
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut v = v;
    for key in path {
        v = v.get(key)?;
    }
    v.as_u64()
}

/// Reads `body` of an event of `kind`.
pub fn read(kind: EventKind, body: &[u8]) -> Reading {
    if kind == EventKind::Other {
        return Reading::Ignored;
    }
    let Ok(doc) = serde_json::from_slice::<Value>(body) else {
        return Reading::Malformed("body is not JSON");
    };
    if !doc.is_object() {
        return Reading::Malformed("body is not a JSON object");
    }
    let Some(project_id) =
        u64_at(&doc, &["project", "id"]).or_else(|| u64_at(&doc, &["project_id"]))
    else {
        return Reading::Malformed("no project id");
    };
    let iid = match kind {
        EventKind::MergeRequest => match u64_at(&doc, &["object_attributes", "iid"]) {
            Some(iid) => iid,
            None => return Reading::Malformed("no merge request iid"),
        },
        EventKind::Note => {
            let on_mr = doc["object_attributes"]["noteable_type"].as_str() == Some("MergeRequest");
            if !on_mr {
                return Reading::Ignored;
            }
            match u64_at(&doc, &["merge_request", "iid"]) {
                Some(iid) => iid,
                None => return Reading::Malformed("no merge request iid"),
            }
        }
        EventKind::Emoji => {
            // On an MR, or on a note of one: GitLab then sends the MR beside the note.
            let awardable = doc["object_attributes"]["awardable_type"].as_str();
            let noteable = doc["note"]["noteable_type"].as_str();
            let on_mr = awardable == Some("MergeRequest")
                || (awardable == Some("Note") && noteable == Some("MergeRequest"));
            if !on_mr {
                return Reading::Ignored;
            }
            match u64_at(&doc, &["merge_request", "iid"]) {
                Some(iid) => iid,
                None => return Reading::Malformed("no merge request iid"),
            }
        }
        EventKind::Pipeline => match doc.get("merge_request") {
            None | Some(Value::Null) => return Reading::Ignored,
            Some(mr) => match mr.get("iid").and_then(Value::as_u64) {
                Some(iid) => iid,
                None => return Reading::Malformed("no merge request iid"),
            },
        },
        EventKind::Other => return Reading::Ignored,
    };
    Reading::Nudge(Nudge { project_id, iid })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nudge(project_id: u64, iid: u64) -> Reading {
        Reading::Nudge(Nudge { project_id, iid })
    }

    #[test]
    fn each_kind_names_its_mr_and_nothing_else_is_read() {
        let mr = json!({"object_kind": "merge_request", "event_type": "merge_request",
            "project": {"id": 42, "path_with_namespace": "g/p"},
            "object_attributes": {"iid": 7, "id": 900, "action": "update", "new_field": [1]},
            "changes": {}, "unknown": {"x": 1}});
        assert_eq!(
            read(EventKind::MergeRequest, mr.to_string().as_bytes()),
            nudge(42, 7)
        );
        let note = json!({"object_kind": "note", "project_id": 42, "project": {"id": 42},
            "object_attributes": {"noteable_type": "MergeRequest", "note": "hi"},
            "merge_request": {"iid": 8, "id": 1}});
        assert_eq!(
            read(EventKind::Note, note.to_string().as_bytes()),
            nudge(42, 8)
        );
        let note_on_issue = json!({"project": {"id": 42},
            "object_attributes": {"noteable_type": "Issue"}, "issue": {"iid": 3}});
        assert_eq!(
            read(EventKind::Note, note_on_issue.to_string().as_bytes()),
            Reading::Ignored
        );
        let emoji_on_note = json!({"project": {"id": 42},
            "object_attributes": {"awardable_type": "Note", "name": "thumbsup"},
            "note": {"noteable_type": "MergeRequest"}, "merge_request": {"iid": 9}});
        assert_eq!(
            read(EventKind::Emoji, emoji_on_note.to_string().as_bytes()),
            nudge(42, 9)
        );
        let branch_pipeline = json!({"project": {"id": 42}, "merge_request": null,
            "object_attributes": {"id": 1, "status": "success"}});
        assert_eq!(
            read(EventKind::Pipeline, branch_pipeline.to_string().as_bytes()),
            Reading::Ignored
        );
        let mr_pipeline = json!({"project": {"id": 42}, "merge_request": {"iid": 5, "id": 77},
            "object_attributes": {"id": 1, "status": "failed"}});
        assert_eq!(
            read(EventKind::Pipeline, mr_pipeline.to_string().as_bytes()),
            nudge(42, 5)
        );
    }

    #[test]
    fn bodies_that_name_no_mr_are_malformed_and_other_kinds_ignored() {
        assert!(matches!(
            read(EventKind::MergeRequest, b"not json"),
            Reading::Malformed(_)
        ));
        assert!(matches!(
            read(EventKind::MergeRequest, b"[1,2]"),
            Reading::Malformed(_)
        ));
        assert!(matches!(
            read(
                EventKind::MergeRequest,
                br#"{"object_attributes":{"iid":7}}"#
            ),
            Reading::Malformed(_)
        ));
        assert!(matches!(
            read(
                EventKind::MergeRequest,
                br#"{"project":{"id":1},"object_attributes":{"iid":"7"}}"#
            ),
            Reading::Malformed(_)
        ));
        assert_eq!(read(EventKind::Other, b"not json"), Reading::Ignored);
        assert_eq!(EventKind::from_header(Some("Push Hook")), EventKind::Other);
        assert_eq!(
            EventKind::from_header(Some("Merge Request Hook")),
            EventKind::MergeRequest
        );
    }
}
