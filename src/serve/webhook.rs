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
    /// `System Hook`: an instance's system hook sends every event under this one name
    /// (`hook_to_event` in GitLab's `app/services/web_hook_service.rb`); its `object_kind`
    /// says which. Only a merge request event is acted on.
    System,
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
            Some("System Hook") => EventKind::System,
            _ => EventKind::Other,
        }
    }

    /// The metric and log label: `merge_request`, `note`, `emoji`, `pipeline`, `system`,
    /// `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::MergeRequest => "merge_request",
            EventKind::Note => "note",
            EventKind::Emoji => "emoji",
            EventKind::Pipeline => "pipeline",
            EventKind::System => "system",
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
    /// Not JSON, or names no project and MR (answered 2xx all the same, and counted: see
    /// docs/serve.md).
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
    // A system hook's merge request event has the project hook's shape
    // (doc/administration/system_hooks.md); it says what it is only in `object_kind`.
    let kind = match kind {
        EventKind::System if doc["object_kind"].as_str() == Some("merge_request") => {
            EventKind::MergeRequest
        }
        EventKind::System => return Reading::Ignored,
        other => other,
    };
    // A Pipeline Hook names the pipeline's project, a fork's for a fork MR pipeline
    // (`lib/gitlab/data_builder/pipeline.rb`); the MR lives in its target project.
    let target_project = match kind {
        EventKind::Pipeline => u64_at(&doc, &["merge_request", "target_project_id"]),
        _ => None,
    };
    let Some(project_id) = target_project
        .or_else(|| u64_at(&doc, &["project", "id"]))
        .or_else(|| u64_at(&doc, &["project_id"]))
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
        EventKind::System | EventKind::Other => return Reading::Ignored,
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
            EventKind::from_header(Some("Confidential Note Hook")),
            EventKind::Other
        );
        assert_eq!(
            EventKind::from_header(Some("Merge Request Hook")),
            EventKind::MergeRequest
        );
    }

    /// GitLab's documented example payloads, verbatim (tests/data/gitlab-webhooks/README.md
    /// names their source): each is read as it is, for the right project and MR.
    #[test]
    fn gitlabs_documented_examples_name_their_project_and_mr() {
        let examples: [(&str, &str, Reading); 5] = [
            (
                "Merge Request Hook",
                include_str!("../../tests/data/gitlab-webhooks/merge_request.json"),
                nudge(1, 1),
            ),
            (
                "Note Hook",
                include_str!("../../tests/data/gitlab-webhooks/note_on_merge_request.json"),
                nudge(5, 1),
            ),
            (
                "Emoji Hook",
                include_str!("../../tests/data/gitlab-webhooks/emoji_on_issue_note.json"),
                Reading::Ignored,
            ),
            (
                "Pipeline Hook",
                include_str!("../../tests/data/gitlab-webhooks/pipeline.json"),
                nudge(1, 1),
            ),
            (
                "System Hook",
                include_str!("../../tests/data/gitlab-webhooks/system_hook_merge_request.json"),
                nudge(1, 1),
            ),
        ];
        for (header, body, want) in examples {
            let kind = EventKind::from_header(Some(header));
            assert_eq!(read(kind, body.as_bytes()), want, "{header}");
        }
    }

    #[test]
    fn a_fork_pipeline_names_the_mrs_target_project_and_system_hooks_act_on_mrs_only() {
        // The pipeline ran in the fork (project 77); the MR is !5 of project 42.
        let fork_pipeline = json!({"object_kind": "pipeline", "project": {"id": 77},
            "merge_request": {"iid": 5, "source_project_id": 77, "target_project_id": 42},
            "object_attributes": {"id": 1, "status": "success"}});
        assert_eq!(
            read(EventKind::Pipeline, fork_pipeline.to_string().as_bytes()),
            nudge(42, 5)
        );
        let system_push = json!({"event_name": "push", "project_id": 42,
            "project": {"name": "p"}, "ref": "refs/heads/main"});
        assert_eq!(
            read(EventKind::System, system_push.to_string().as_bytes()),
            Reading::Ignored
        );
        let system_mr = json!({"object_kind": "merge_request", "project": {"id": 42},
            "object_attributes": {"iid": 3}});
        assert_eq!(
            read(EventKind::System, system_mr.to_string().as_bytes()),
            nudge(42, 3)
        );
        assert_eq!(
            EventKind::from_header(Some("System Hook")),
            EventKind::System
        );
    }
}
