//! State transitions shared by the HTTP API and the test-side "human" actions.

use crate::model::{Discussion, MergeRequest, Note, NotePosition, Pipeline, State};

/// Why an operation failed; maps onto GitLab's error answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// No such project.
    ProjectNotFound,
    /// No such merge request in the project.
    MergeRequestNotFound,
    /// No such discussion in the merge request.
    DiscussionNotFound,
    /// No such note in the merge request.
    NoteNotFound,
    /// Not allowed (not the author, not resolvable, system note, ...).
    Forbidden,
    /// A seeded note id that another note already has.
    NoteIdTaken,
}

impl OpError {
    /// GitLab's `message` for this error.
    pub fn message(&self) -> &'static str {
        match self {
            OpError::ProjectNotFound => "404 Project Not Found",
            OpError::MergeRequestNotFound => "404 Merge Request Not Found",
            OpError::DiscussionNotFound => "404 Discussion Not Found",
            OpError::NoteNotFound => "404 Note Not Found",
            OpError::Forbidden => "403 Forbidden",
            OpError::NoteIdTaken => "409 Note id already taken",
        }
    }
    /// GitLab's HTTP status for this error.
    pub fn status(&self) -> u16 {
        match self {
            OpError::Forbidden => 403,
            OpError::NoteIdTaken => 409,
            _ => 404,
        }
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for OpError {}

/// The result of a state operation.
pub type OpResult<T> = Result<T, OpError>;

impl State {
    /// The merge request `iid` of project `pid`.
    pub fn mr_ref(&self, pid: u64, iid: u64) -> OpResult<&MergeRequest> {
        self.project(pid)
            .ok_or(OpError::ProjectNotFound)?
            .mr(iid)
            .ok_or(OpError::MergeRequestNotFound)
    }

    /// The merge request `iid` of project `pid`, to change.
    pub fn mr_mut_ref(&mut self, pid: u64, iid: u64) -> OpResult<&mut MergeRequest> {
        self.project_mut(pid)
            .ok_or(OpError::ProjectNotFound)?
            .mr_mut(iid)
            .ok_or(OpError::MergeRequestNotFound)
    }

    fn new_note(&self, id: u64, author: u64, body: &str, now: &str) -> Note {
        Note {
            id,
            note_type: None,
            body: body.into(),
            author_id: author,
            created_at: now.into(),
            updated_at: now.into(),
            ..Default::default()
        }
    }

    /// Creates a resolvable thread; returns `(discussion id, note id)`.
    pub fn create_thread(
        &mut self,
        pid: u64,
        iid: u64,
        author: u64,
        body: &str,
    ) -> OpResult<(String, u64)> {
        self.push_discussion(pid, iid, author, body, false, |note| {
            note.note_type = Some("DiscussionNote".into());
            note.resolvable = true;
        })
    }

    /// Creates a resolvable thread on a line of the MR's diff (a `DiffNote`) at a position
    /// already validated (by the positions module); returns `(discussion id, note id)`.
    pub fn create_diff_thread(
        &mut self,
        pid: u64,
        iid: u64,
        author: u64,
        body: &str,
        position: NotePosition,
    ) -> OpResult<(String, u64)> {
        self.push_discussion(pid, iid, author, body, false, |note| {
            note.note_type = Some("DiffNote".into());
            note.resolvable = true;
            note.position = Some(position);
        })
    }

    /// Creates a plain (individual, not resolvable) note; returns `(discussion id, note id)`.
    pub fn create_note(
        &mut self,
        pid: u64,
        iid: u64,
        author: u64,
        body: &str,
        system: bool,
    ) -> OpResult<(String, u64)> {
        self.push_discussion(pid, iid, author, body, true, |note| note.system = system)
    }

    /// Appends a discussion of one new note, shaped by `shape`, and bumps the MR's
    /// `updated_at`; returns `(discussion id, note id)`.
    fn push_discussion(
        &mut self,
        pid: u64,
        iid: u64,
        author: u64,
        body: &str,
        individual_note: bool,
        shape: impl FnOnce(&mut Note),
    ) -> OpResult<(String, u64)> {
        self.mr_ref(pid, iid)?;
        let now = self.now();
        let nid = self.next_note_id();
        let did = self.next_discussion_id();
        let mut note = self.new_note(nid, author, body, &now);
        shape(&mut note);
        let mr = self.mr_mut_ref(pid, iid)?;
        mr.discussions.push(Discussion {
            id: did.clone(),
            individual_note,
            notes: vec![note],
        });
        mr.updated_at = now;
        Ok((did, nid))
    }

    /// Seeds a resolvable thread or a plain note whose first note has the explicit id `id`
    /// (a history whose ids a test pins); returns `(discussion id, note id)`. Note ids are
    /// global: an id any note already has is refused.
    pub fn create_with_id(
        &mut self,
        pid: u64,
        iid: u64,
        author: u64,
        body: &str,
        resolvable: bool,
        id: u64,
    ) -> OpResult<(String, u64)> {
        let taken = id == 0
            || self
                .projects
                .iter()
                .flat_map(|p| p.merge_requests.iter())
                .any(|m| m.note(id).is_some());
        if taken {
            return Err(OpError::NoteIdTaken);
        }
        let (did, nid) = if resolvable {
            self.create_thread(pid, iid, author, body)?
        } else {
            self.create_note(pid, iid, author, body, false)?
        };
        let note = self
            .mr_mut_ref(pid, iid)?
            .note_mut(nid)
            .ok_or(OpError::NoteNotFound)?;
        note.id = id;
        Ok((did, id))
    }

    /// Marks a note as written by GitLab itself (`system: true`), whoever its author is:
    /// GitLab attributes some system notes to the user whose action caused them.
    pub fn mark_system(&mut self, pid: u64, iid: u64, note_id: u64) -> OpResult<()> {
        let note = self
            .mr_mut_ref(pid, iid)?
            .note_mut(note_id)
            .ok_or(OpError::NoteNotFound)?;
        note.system = true;
        Ok(())
    }

    /// Replies in a discussion. Replying to a plain note turns it into a (resolvable) thread,
    /// as GitLab does. A reply to a resolved thread joins it resolved unless
    /// `reply_unresolves` is set.
    pub fn reply(
        &mut self,
        pid: u64,
        iid: u64,
        discussion: &str,
        author: u64,
        body: &str,
    ) -> OpResult<u64> {
        let now = self.now();
        let nid = self.next_note_id();
        let reply_unresolves = self.reply_unresolves;
        let mut note = self.new_note(nid, author, body, &now);
        let mr = self.mr_mut_ref(pid, iid)?;
        let d = mr
            .discussion_mut(discussion)
            .ok_or(OpError::DiscussionNotFound)?;
        if d.notes.iter().any(|n| n.system) {
            return Err(OpError::Forbidden);
        }
        if d.individual_note {
            d.individual_note = false;
            for n in &mut d.notes {
                n.note_type = Some("DiscussionNote".into());
                n.resolvable = true;
            }
        }
        note.note_type = d
            .notes
            .first()
            .and_then(|n| n.note_type.clone())
            .or(Some("DiscussionNote".into()));
        // A reply in a diff thread is a DiffNote on the same line.
        note.position = d.notes.first().and_then(|n| n.position.clone());
        note.resolvable = d.resolvable();
        if d.resolved() {
            if reply_unresolves {
                for n in &mut d.notes {
                    n.resolved = false;
                    n.resolved_by = None;
                    n.resolved_at = None;
                }
            } else {
                let first = d.notes.iter().find(|n| n.resolvable);
                note.resolved = true;
                note.resolved_by = first.and_then(|n| n.resolved_by);
                note.resolved_at = first.and_then(|n| n.resolved_at.clone());
            }
        }
        d.notes.push(note);
        mr.updated_at = now;
        Ok(nid)
    }

    /// Resolves or re-opens a thread, as GitLab's discussion route does: silently.
    ///
    /// GitLab writes a discussion's resolution with `update_all`
    /// (`app/models/concerns/resolvable_discussion.rb` `resolve!`/`unresolve!` over
    /// `app/models/concerns/resolvable_note.rb`'s class methods), which runs no callback: no
    /// note's `updated_at` moves and the MR is not touched. Only a resolution that leaves every
    /// resolvable discussion of the MR resolved is followed by
    /// `MergeRequests::ResolvedDiscussionNotificationService`
    /// (`app/services/discussions/resolve_service.rb`): a system note "resolved all threads",
    /// which touches the MR (the webhook is `hooks`'s, from the same change). Forbidden on a
    /// discussion that is not resolvable.
    pub fn set_resolved(
        &mut self,
        pid: u64,
        iid: u64,
        discussion: &str,
        by: u64,
        resolved: bool,
    ) -> OpResult<()> {
        let now = self.now();
        let mr = self.mr_mut_ref(pid, iid)?;
        let d = mr
            .discussion_mut(discussion)
            .ok_or(OpError::DiscussionNotFound)?;
        if !d.resolvable() {
            return Err(OpError::Forbidden);
        }
        for n in d.notes.iter_mut().filter(|n| n.resolvable) {
            if resolved && !n.resolved {
                n.resolved = true;
                n.resolved_by = Some(by);
                n.resolved_at = Some(now.clone());
            } else if !resolved && n.resolved {
                n.resolved = false;
                n.resolved_by = None;
                n.resolved_at = None;
            }
        }
        if resolved {
            self.notify_if_all_resolved(pid, iid, by)?;
        }
        Ok(())
    }

    /// Resolves or re-opens one note, as GitLab's note route does
    /// (`PUT .../discussions/:id/notes/:note_id?resolved=`, `lib/api/helpers/notes_helpers.rb`
    /// `resolve_note`): `Notes::ResolveService` and `unresolve!` go through
    /// `ResolvableNote#resolve!`/`#unresolve!`, which `save!` the note, so its `updated_at`
    /// moves and the MR is touched (`Note`'s `after_save :touch_noteable`).
    pub fn set_note_resolved(
        &mut self,
        pid: u64,
        iid: u64,
        note_id: u64,
        by: u64,
        resolved: bool,
    ) -> OpResult<()> {
        let now = self.now();
        let mr = self.mr_mut_ref(pid, iid)?;
        let n = mr.note_mut(note_id).ok_or(OpError::NoteNotFound)?;
        if !n.resolvable {
            return Err(OpError::Forbidden);
        }
        if n.resolved != resolved {
            n.resolved = resolved;
            n.resolved_by = resolved.then_some(by);
            n.resolved_at = resolved.then(|| now.clone());
            n.updated_at = now.clone();
            mr.updated_at = now;
        }
        if resolved {
            self.notify_if_all_resolved(pid, iid, by)?;
        }
        Ok(())
    }

    /// `MergeRequests::ResolvedDiscussionNotificationService`
    /// (`app/services/merge_requests/resolved_discussion_notification_service.rb`): once
    /// every resolvable discussion is resolved, a system note by the resolver, which touches
    /// the MR.
    ///
    /// Its note and discussion ids come from a range of their own
    /// ([`crate::model::ANNOUNCEMENT_NOTE_IDS`]), so the ids the notes that tests seed and
    /// assent posts get stay those of a forge that writes no such note (the in-memory one):
    /// assent reads no system note, and the replays compare ids.
    fn notify_if_all_resolved(&mut self, pid: u64, iid: u64, by: u64) -> OpResult<()> {
        let now = self.now();
        let announced = self
            .projects
            .iter()
            .flat_map(|p| p.merge_requests.iter())
            .flat_map(|m| m.discussions.iter())
            .flat_map(|d| d.notes.iter())
            .filter(|n| n.id >= crate::model::ANNOUNCEMENT_NOTE_IDS)
            .count() as u64;
        let id = crate::model::ANNOUNCEMENT_NOTE_IDS + announced + 1;
        let mut note = self.new_note(id, by, "resolved all threads", &now);
        note.system = true;
        let mr = self.mr_mut_ref(pid, iid)?;
        let mut resolvable = mr.discussions.iter().filter(|d| d.resolvable()).peekable();
        let all_resolved = resolvable.peek().is_some() && resolvable.all(|d| d.resolved());
        if all_resolved {
            mr.discussions.push(Discussion {
                id: crate::model::discussion_id(id),
                individual_note: true,
                notes: vec![note],
            });
            mr.updated_at = now;
        }
        Ok(())
    }

    /// Edits a note body. `editor: Some(user)` enforces "only the author may edit" (the API);
    /// `None` edits as an administrator (test side). `updated_at` moves only when the body
    /// actually changes.
    pub fn edit_note(
        &mut self,
        pid: u64,
        iid: u64,
        note_id: u64,
        editor: Option<u64>,
        body: &str,
    ) -> OpResult<()> {
        let now = self.now();
        let mr = self.mr_mut_ref(pid, iid)?;
        let n = mr.note_mut(note_id).ok_or(OpError::NoteNotFound)?;
        if let Some(u) = editor
            && (n.author_id != u || n.system)
        {
            return Err(OpError::Forbidden);
        }
        if n.body != body {
            n.body = body.into();
            n.updated_at = now.clone();
            mr.updated_at = now;
        }
        Ok(())
    }

    /// Deletes a note (and its discussion when it was the last note).
    pub fn delete_note(
        &mut self,
        pid: u64,
        iid: u64,
        note_id: u64,
        editor: Option<u64>,
    ) -> OpResult<()> {
        let mr = self.mr_mut_ref(pid, iid)?;
        let n = mr.note(note_id).ok_or(OpError::NoteNotFound)?;
        if let Some(u) = editor
            && (n.author_id != u || n.system)
        {
            return Err(OpError::Forbidden);
        }
        for d in &mut mr.discussions {
            d.notes.retain(|n| n.id != note_id);
        }
        mr.discussions.retain(|d| !d.notes.is_empty());
        Ok(())
    }

    /// Copies a discussion (same authors, bodies and resolution) under new ids, appended
    /// after every existing note.
    pub fn clone_discussion(&mut self, pid: u64, iid: u64, discussion: &str) -> OpResult<String> {
        let src = self
            .mr_ref(pid, iid)?
            .discussion(discussion)
            .ok_or(OpError::DiscussionNotFound)?
            .clone();
        let now = self.now();
        let first = self.next_note_id();
        let did = self.next_discussion_id();
        let mut copy = src;
        copy.id = did.clone();
        for (id, n) in (first..).zip(copy.notes.iter_mut()) {
            n.id = id;
            n.created_at = now.clone();
            n.updated_at = now.clone();
        }
        let mr = self.mr_mut_ref(pid, iid)?;
        mr.discussions.push(copy);
        mr.updated_at = now;
        Ok(did)
    }

    /// Creates an MR pipeline for the MR's head and makes it the head pipeline.
    pub fn create_pipeline(&mut self, pid: u64, iid: u64) -> OpResult<Pipeline> {
        let now = self.now();
        let id = self.next_pipeline_id();
        let mr = self.mr_mut_ref(pid, iid)?;
        let p = Pipeline {
            id,
            sha: mr.sha.clone(),
            status: "created".into(),
            git_ref: format!("refs/merge-requests/{iid}/head"),
            source: "merge_request_event".into(),
            mr_iid: Some(iid),
            created_at: now.clone(),
            updated_at: now,
        };
        mr.head_pipeline = Some(p.clone());
        self.project_mut(pid)
            .ok_or(OpError::ProjectNotFound)?
            .pipelines
            .push(p.clone());
        Ok(p)
    }
}
