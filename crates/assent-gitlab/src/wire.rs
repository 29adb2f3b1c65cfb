//! The REST API's note and discussion as a run reads them (GitLab's `Entities::Note` and
//! `Entities::Discussion`, `lib/api/entities/note.rb`, `lib/api/entities/discussion.rb`):
//! shared by the forge, which reads a note or a page of them, and the streaming reader of
//! discussion pages (`super::discussion_stream`), which skips the bodies a run never reads.

use assent_core::model::{ListedNote, UserRef};
use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct ApiUser {
    pub(super) id: u64,
    #[serde(default)]
    pub(super) username: String,
}

#[derive(Deserialize)]
pub(super) struct ApiNote {
    id: u64,
    pub(super) body: Option<String>,
    pub(super) author: Option<ApiUser>,
    system: Option<bool>,
    resolvable: Option<bool>,
    resolved: Option<bool>,
    resolved_by: Option<ApiUser>,
    resolved_at: Option<String>,
    created_at: Option<String>,
    updated_at: Option<String>,
    #[serde(rename = "type")]
    note_type: Option<String>,
}

impl ApiNote {
    pub(super) fn into_listed(self) -> ListedNote {
        let resolvable = self.resolvable.unwrap_or(false);
        ListedNote {
            id: self.id,
            author_id: self.author.map_or(0, |a| a.id),
            system: self.system.unwrap_or(false),
            resolvable,
            resolved: resolvable && self.resolved.unwrap_or(false),
            resolved_by: self.resolved_by.map(|u| UserRef {
                id: u.id,
                username: u.username,
            }),
            resolved_at: self.resolved_at,
            diff_note: self.note_type.as_deref() == Some("DiffNote"),
            body: self.body.unwrap_or_default(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ApiDiscussion {
    pub(super) id: String,
    pub(super) individual_note: Option<bool>,
    pub(super) notes: Option<Vec<ApiNote>>,
}
