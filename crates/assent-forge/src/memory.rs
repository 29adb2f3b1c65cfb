//! The in-memory forge: a stateful stand-in for one GitLab merge request.
//!
//! It behaves like GitLab where assent can tell: 40-hex discussion ids, increasing integer
//! note ids (a new note gets one more than the highest id ever seen, so seeded ids keep
//! their order), plain notes are never resolvable, listings are paged (each page counts as a
//! read) and can be served in any order. Human actions (post, reply, resolve, clone a bot
//! thread, corrupt a marker) let tests and fixtures play the other people on the MR.
//!
//! Threads on a diff line (DiffNotes) are validated as GitLab validates them: the position
//! must name the MR's diff refs and an added (`new_line`) or removed (`old_line`) line of a
//! changed file's diff ([`InMemoryForge::set_changed_files`]), else the create is refused
//! with GitLab's 400 and nothing is written. [`InMemoryForge::positions`] shows where each
//! DiffNote sits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::{
    Account, ChangedFile, CreatedThread, Forge, ForgeError, Repository, RepositoryFiles,
    RequestCounts,
};
use assent_core::commit_sha::CommitSha;
use assent_core::model::{
    DiffLine, DiffPosition, ListedDiscussion, ListedNote, MergeRequestInfo, MergeRequestState,
    Role, UserRef,
};
use assent_core::time::Timestamp;
use assent_core::unified_diff::changed_lines;

/// GitLab's answer to a DiffNote whose position is not a line of the merge request's diff
/// (status 400): the note has no line code.
pub const INVALID_POSITION_MESSAGE: &str =
    "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}";

/// The user id human actions act as unless told otherwise.
pub const HUMAN_USER_ID: u64 = 2;

/// The user who opened the in-memory merge request: their resolutions never count as assent.
pub const MR_AUTHOR_USER_ID: u64 = 3;

/// How the in-memory forge names user `id`: GitLab-like usernames derived from the id.
pub fn user_ref(id: u64) -> UserRef {
    UserRef {
        id,
        username: format!("user{id}"),
    }
}

/// The order in which listings return discussions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ListingOrder {
    /// Oldest first, as GitLab does.
    #[default]
    Ascending,
    /// Newest first.
    Descending,
    /// These first-note ids first, in this order; the rest ascending after them.
    Explicit(Vec<u64>),
}

#[derive(Debug, Clone)]
struct Discussion {
    id: String,
    individual_note: bool,
    notes: Vec<ListedNote>,
    /// Where a DiffNote thread sits; `None` for a general thread or a plain note.
    position: Option<DiffPosition>,
}

#[derive(Debug)]
struct State {
    bot_user_id: u64,
    mr: MergeRequestInfo,
    discussions: Vec<Discussion>,
    highest_note_id: u64,
    discussion_seq: u64,
    page_size: usize,
    order: ListingOrder,
    counts: RequestCounts,
    files: Vec<((CommitSha, String), Vec<u8>)>,
    changed: Vec<ChangedFile>,
    /// What `changes_count` says instead of the number of changed files, when set.
    changes_count: Option<Option<String>>,
    clock: u64,
    roles: BTreeMap<u64, Role>,
    /// Accounts set by [`InMemoryForge::set_account`] (`None`: not shown); every other user
    /// is an active person.
    accounts: BTreeMap<u64, Option<Account>>,
    /// Users who approve the MR right now.
    approved_by: BTreeSet<u64>,
    /// GitLab's "remove all approvals when commits are added" (on by default).
    reset_approvals_on_push: bool,
    /// GitLab's "automatically resolve threads that become outdated" (off by default).
    resolve_outdated_diff_discussions: bool,
    /// The heads [`InMemoryForge::set_head`] replaced, oldest first (GitLab's earlier diff
    /// versions).
    earlier_heads: Vec<CommitSha>,
}

/// A stateful in-memory merge request. All methods take `&self`; state sits behind a mutex.
#[derive(Debug)]
pub struct InMemoryForge {
    state: Mutex<State>,
}

/// Why a human action could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HumanActionError {
    /// No note with that id.
    #[error("no note {0}")]
    NoSuchNote(u64),
    /// The note's discussion cannot be resolved.
    #[error("note {0} is not in a resolvable thread")]
    NotResolvable(u64),
    /// The note id is taken.
    #[error("note id {0} is already used")]
    DuplicateId(u64),
}

/// The commit SHA an in-memory world calls `label`: the first 40 hex digits of the
/// SHA-256 of the label, so a test names its commits (`"base"`, `"h2"`) and still holds
/// real SHAs.
pub fn commit_named(label: &str) -> CommitSha {
    let digest = hex::encode(Sha256::digest(label.as_bytes()));
    CommitSha::parse(&digest[..40]).expect("40 hex digits are a commit SHA")
}

impl InMemoryForge {
    /// An open merge request at `head_sha` with no discussions, seen by bot user `bot_user_id`.
    pub fn new(bot_user_id: u64, head_sha: &CommitSha) -> Self {
        InMemoryForge {
            state: Mutex::new(State {
                bot_user_id,
                mr: MergeRequestInfo {
                    state: MergeRequestState::Opened,
                    head_sha: head_sha.clone(),
                    base_sha: None,
                    start_sha: None,
                    diff_head_sha: Some(head_sha.clone()),
                    target_branch: "main".to_owned(),
                    head_pipeline_status: None,
                    web_url: None,
                    title: String::new(),
                    source_branch: String::new(),
                    author: user_ref(MR_AUTHOR_USER_ID).username,
                    author_id: Some(MR_AUTHOR_USER_ID),
                    labels: Vec::new(),
                    changes_count: None,
                },
                discussions: Vec::new(),
                highest_note_id: 0,
                discussion_seq: 0,
                page_size: 100,
                order: ListingOrder::Ascending,
                counts: RequestCounts::default(),
                files: Vec::new(),
                changed: Vec::new(),
                changes_count: None,
                clock: 0,
                roles: BTreeMap::new(),
                accounts: BTreeMap::new(),
                approved_by: BTreeSet::new(),
                reset_approvals_on_push: true,
                resolve_outdated_diff_discussions: false,
                earlier_heads: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (each mutation is a single
        // push or assignment), so poisoning is ignored.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Turns GitLab's project setting "Automatically resolve threads that become outdated"
    /// (`resolve_outdated_diff_discussions`) on or off.
    pub fn set_resolve_outdated_diff_discussions(&self, on: bool) {
        self.lock().resolve_outdated_diff_discussions = on;
    }

    /// Discussions per listing page (each page counts as one read).
    pub fn set_page_size(&self, page_size: usize) {
        self.lock().page_size = page_size.max(1);
    }

    /// The order listings return discussions in.
    pub fn set_listing_order(&self, order: ListingOrder) {
        self.lock().order = order;
    }

    /// Moves the MR's head (a new push), keeping the replaced head as an earlier diff version
    /// ([`Forge::version_heads`]). A push that moves the head removes every approval
    /// unless [`InMemoryForge::set_reset_approvals_on_push`] turned that off, as on GitLab.
    pub fn set_head(&self, head_sha: &CommitSha) {
        let mut state = self.lock();
        if &state.mr.head_sha != head_sha {
            if state.reset_approvals_on_push {
                state.approved_by.clear();
            }
            let replaced = std::mem::replace(&mut state.mr.head_sha, head_sha.clone());
            state.earlier_heads.push(replaced);
        }
        // GitLab computes a new diff version for the new head.
        state.mr.diff_head_sha = Some(head_sha.clone());
    }

    /// Sets the base and start SHAs of the MR's diff refs (its head follows the MR's head).
    pub fn set_diff_refs(&self, base_sha: &CommitSha, start_sha: &CommitSha) {
        let mut state = self.lock();
        state.mr.base_sha = Some(base_sha.clone());
        state.mr.start_sha = Some(start_sha.clone());
    }

    /// First note id → position of every DiffNote thread (uncounted): for assertions.
    pub fn positions(&self) -> BTreeMap<u64, DiffPosition> {
        self.lock()
            .discussions
            .iter()
            .filter_map(|d| Some((d.first_id(), d.position.clone()?)))
            .collect()
    }

    /// GitLab's project setting "remove all approvals when commits are added" (default on).
    pub fn set_reset_approvals_on_push(&self, reset: bool) {
        self.lock().reset_approvals_on_push = reset;
    }

    /// Gives (or withdraws) user `by`'s approval, as a person clicking the button would.
    pub fn set_approved_by(&self, by: u64, approved: bool) {
        let mut state = self.lock();
        if approved {
            state.approved_by.insert(by);
        } else {
            state.approved_by.remove(&by);
        }
    }

    /// The users who approve the MR right now (uncounted): for assertions.
    pub fn approvals(&self) -> Vec<u64> {
        self.lock().approved_by.iter().copied().collect()
    }

    /// Opens, closes or merges the MR.
    pub fn set_mr_state(&self, state: MergeRequestState) {
        self.lock().mr.state = state;
    }

    /// Replaces what `merge_request` reports (head, state, refs).
    pub fn set_merge_request(&self, info: MergeRequestInfo) {
        self.lock().mr = info;
    }

    /// Stores file content for the [`Repository`] port.
    pub fn put_file(&self, sha: &CommitSha, path: &str, bytes: Vec<u8>) {
        let mut state = self.lock();
        state.files.retain(|((s, p), _)| !(s == sha && p == path));
        state.files.push(((sha.clone(), path.to_owned()), bytes));
    }

    /// Sets the MR's changed files for the [`Repository`] port; their `diff` texts are the
    /// diff DiffNote positions are validated against.
    pub fn set_changed_files(&self, files: Vec<ChangedFile>) {
        self.lock().changed = files;
    }

    /// Makes the MR's `changes_count` say `count` (`"1000+"`, a wrong number, or nothing)
    /// instead of the number of changed files, as GitLab does past its diff limits.
    pub fn set_changes_count(&self, count: Option<&str>) {
        self.lock().changes_count = Some(count.map(str::to_owned));
    }

    /// Posts a thread (resolvable) or a plain note as `author_id`, with an explicit note id
    /// or the next free one. Returns the note id.
    pub fn post(
        &self,
        author_id: u64,
        body: &str,
        resolvable: bool,
        note_id: Option<u64>,
    ) -> Result<u64, HumanActionError> {
        let mut state = self.lock();
        if let Some(id) = note_id
            && state.find(id).is_some()
        {
            return Err(HumanActionError::DuplicateId(id));
        }
        Ok(state.add_discussion(author_id, body, resolvable, note_id, None))
    }

    /// Marks a note as written by the forge itself (a `system` note).
    pub fn mark_system(&self, note_id: u64) -> Result<(), HumanActionError> {
        let mut state = self.lock();
        let (d, n) = state
            .find(note_id)
            .ok_or(HumanActionError::NoSuchNote(note_id))?;
        state.discussions[d].notes[n].system = true;
        Ok(())
    }

    /// Replies in the thread containing `note_id`; a plain note becomes a thread, as on
    /// GitLab.
    pub fn reply_as(
        &self,
        note_id: u64,
        author_id: u64,
        body: &str,
    ) -> Result<u64, HumanActionError> {
        let mut state = self.lock();
        let (d, _) = state
            .find(note_id)
            .ok_or(HumanActionError::NoSuchNote(note_id))?;
        if !state.discussions[d].notes[0].resolvable {
            // As on GitLab: a reply turns a plain note into a resolvable (unresolved) thread.
            let discussion = &mut state.discussions[d];
            discussion.individual_note = false;
            discussion.notes[0].resolvable = true;
            discussion.notes[0].resolved = false;
        }
        Ok(state.add_reply(d, author_id, body))
    }

    /// Resolves or re-opens the thread containing `note_id` as a person (user
    /// [`HUMAN_USER_ID`]) clicking the button.
    pub fn set_resolved(&self, note_id: u64, resolved: bool) -> Result<(), HumanActionError> {
        self.set_resolved_by(note_id, resolved, HUMAN_USER_ID)
    }

    /// Gives user `user_id` the project role `role` (everyone else is not a member).
    pub fn set_role(&self, user_id: u64, role: Role) {
        self.lock().roles.insert(user_id, role);
    }

    /// Sets what the forge says of user `user_id`'s account (`None`: the user is not shown,
    /// as GitLab answers 404); every user not set is an active person.
    pub fn set_account(&self, user_id: u64, account: Option<Account>) {
        self.lock().accounts.insert(user_id, account);
    }

    /// Resolves or re-opens the thread containing `note_id` as user `by`.
    pub fn set_resolved_by(
        &self,
        note_id: u64,
        resolved: bool,
        by: u64,
    ) -> Result<(), HumanActionError> {
        let mut state = self.lock();
        let (d, _) = state
            .find(note_id)
            .ok_or(HumanActionError::NoSuchNote(note_id))?;
        state
            .resolve(d, resolved, by)
            .map_err(|_| HumanActionError::NotResolvable(note_id))
    }

    /// Replaces a note's body (e.g. corrupting a marker).
    pub fn set_body(&self, note_id: u64, body: &str) -> Result<(), HumanActionError> {
        let mut state = self.lock();
        let (d, n) = state
            .find(note_id)
            .ok_or(HumanActionError::NoSuchNote(note_id))?;
        state.replace_body(d, n, body);
        Ok(())
    }

    /// Copies the thread whose first note is `note_id` (same author, same first body,
    /// unresolved): what a racing or buggy publisher leaves behind.
    pub fn clone_thread(&self, note_id: u64, new_id: Option<u64>) -> Result<u64, HumanActionError> {
        let mut state = self.lock();
        let (d, _) = state
            .find(note_id)
            .ok_or(HumanActionError::NoSuchNote(note_id))?;
        let first = state.discussions[d].notes[0].clone();
        if let Some(id) = new_id
            && state.find(id).is_some()
        {
            return Err(HumanActionError::DuplicateId(id));
        }
        let position = state.discussions[d].position.clone();
        Ok(state.add_discussion(
            first.author_id,
            &first.body,
            first.resolvable,
            new_id,
            position,
        ))
    }

    /// Every discussion as a listing would show it (ascending, uncounted): for assertions.
    pub fn snapshot(&self) -> Vec<ListedDiscussion> {
        self.lock()
            .discussions
            .iter()
            .map(Discussion::listed)
            .collect()
    }
}

impl State {
    /// Edits note `n` of discussion `d`, as GitLab does: a new body and a new `updated_at`.
    fn replace_body(&mut self, d: usize, n: usize, body: &str) {
        self.clock += 1;
        let note = &mut self.discussions[d].notes[n];
        note.body = body.to_owned();
        note.updated_at = Some(timestamp(self.clock));
    }

    fn find(&self, note_id: u64) -> Option<(usize, usize)> {
        self.discussions.iter().enumerate().find_map(|(d, disc)| {
            disc.notes
                .iter()
                .position(|n| n.id == note_id)
                .map(|n| (d, n))
        })
    }

    fn next_note_id(&mut self, explicit: Option<u64>) -> u64 {
        let id = explicit.unwrap_or(self.highest_note_id + 1);
        self.highest_note_id = self.highest_note_id.max(id);
        id
    }

    fn add_discussion(
        &mut self,
        author_id: u64,
        body: &str,
        resolvable: bool,
        note_id: Option<u64>,
        position: Option<DiffPosition>,
    ) -> u64 {
        let id = self.next_note_id(note_id);
        self.discussion_seq += 1;
        self.clock += 1;
        let discussion_id =
            hex::encode(&Sha256::digest(format!("discussion-{}", self.discussion_seq))[..20]);
        self.discussions.push(Discussion {
            id: discussion_id,
            individual_note: !resolvable,
            notes: vec![ListedNote {
                id,
                author_id,
                system: false,
                resolvable,
                resolved: false,
                resolved_by: None,
                resolved_at: None,
                diff_note: position.is_some(),
                body: body.to_owned(),
                created_at: Some(timestamp(self.clock)),
                updated_at: Some(timestamp(self.clock)),
            }],
            position,
        });
        id
    }

    /// Whether GitLab would accept `position`: it names the MR's diff refs and a line the
    /// diff of that file (by both paths) adds (`new_line`) or removes (`old_line`).
    fn accepts(&self, position: &DiffPosition) -> bool {
        let mr = &self.mr;
        let refs_match = mr.base_sha.as_ref() == Some(&position.base_sha)
            && mr.start_sha.as_ref() == Some(&position.start_sha)
            && mr.diff_head_sha.as_ref() == Some(&position.head_sha);
        refs_match
            && self.changed.iter().any(|file| {
                file.old_path == position.old_path
                    && file.new_path == position.new_path
                    && !file.withheld
                    && changed_lines(&file.diff).is_some_and(|lines| match position.line {
                        DiffLine::New(line) => lines.is_added(line),
                        DiffLine::Old(line) => lines.is_removed(line),
                    })
            })
    }

    fn add_reply(&mut self, d: usize, author_id: u64, body: &str) -> u64 {
        let id = self.next_note_id(None);
        self.clock += 1;
        let resolved = self.discussions[d].notes[0].resolved;
        let resolved_by = self.discussions[d].notes[0].resolved_by.clone();
        let resolved_at = self.discussions[d].notes[0].resolved_at.clone();
        let diff_note = self.discussions[d].position.is_some();
        self.discussions[d].notes.push(ListedNote {
            id,
            author_id,
            system: false,
            resolvable: true,
            resolved,
            resolved_by,
            resolved_at,
            diff_note,
            body: body.to_owned(),
            created_at: Some(timestamp(self.clock)),
            updated_at: Some(timestamp(self.clock)),
        });
        id
    }

    /// Resolves or re-opens a thread as GitLab's discussion route does: `resolved_at` moves
    /// when its state changes, `updated_at` never (GitLab writes a resolution with
    /// `update_all`, `app/models/concerns/resolvable_note.rb`).
    fn resolve(&mut self, d: usize, resolved: bool, by: u64) -> Result<(), ()> {
        if !self.discussions[d].notes[0].resolvable {
            return Err(());
        }
        self.clock += 1;
        let now = timestamp(self.clock);
        for note in &mut self.discussions[d].notes {
            if note.resolved != resolved {
                note.resolved_at = resolved.then(|| now.clone());
            }
            note.resolved = resolved;
            note.resolved_by = resolved.then(|| user_ref(by));
        }
        Ok(())
    }

    fn discussion_index(&self, discussion_id: &str) -> Option<usize> {
        self.discussions.iter().position(|d| d.id == discussion_id)
    }
}

impl Discussion {
    fn listed(&self) -> ListedDiscussion {
        ListedDiscussion {
            id: self.id.clone(),
            individual_note: self.individual_note,
            notes: self.notes.clone(),
        }
    }

    fn first_id(&self) -> u64 {
        self.notes[0].id
    }
}

/// A fixed, increasing fake clock: the in-memory forge has no wall time. One tick is a
/// minute after 2026-01-01T00:00Z, so two events are as far apart as GitLab's timestamps
/// would show them (an edit after a resolution is visibly later).
fn timestamp(tick: u64) -> String {
    Timestamp::from_unix_millis(MEMORY_EPOCH_MILLIS + (tick as i64).saturating_mul(60_000))
        .to_rfc3339()
}

/// 2026-01-01T00:00:00Z in Unix milliseconds.
const MEMORY_EPOCH_MILLIS: i64 = 1_767_225_600_000;

fn not_found(method: &str, route: String) -> ForgeError {
    ForgeError::Status {
        method: method.into(),
        route,
        status: 404,
        message: "404 Not Found".into(),
    }
}

impl Forge for InMemoryForge {
    fn bot_user_id(&self) -> Result<u64, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Ok(state.bot_user_id)
    }

    fn merge_request(&self) -> Result<MergeRequestInfo, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        // GitLab counts the files of the MR's diff: as many as its listing holds.
        let counted = Some(state.changed.len().to_string());
        Ok(MergeRequestInfo {
            changes_count: state.changes_count.clone().unwrap_or(counted),
            ..state.mr.clone()
        })
    }

    fn version_heads(&self) -> Result<Vec<CommitSha>, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        let mut heads = vec![state.mr.head_sha.clone()];
        heads.extend(state.earlier_heads.iter().rev().cloned());
        Ok(heads)
    }

    fn resolves_outdated_diff_threads(&self) -> Result<bool, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Ok(state.resolve_outdated_diff_discussions)
    }

    fn list_discussions(&self) -> Result<Vec<ListedDiscussion>, ForgeError> {
        let mut state = self.lock();
        let mut listed: Vec<&Discussion> = state.discussions.iter().collect();
        listed.sort_by_key(|d| d.first_id());
        match &state.order {
            ListingOrder::Ascending => {}
            ListingOrder::Descending => listed.reverse(),
            ListingOrder::Explicit(first) => {
                listed.sort_by_key(|d| {
                    first
                        .iter()
                        .position(|id| *id == d.first_id())
                        .unwrap_or(usize::MAX)
                });
            }
        }
        let out: Vec<ListedDiscussion> = listed.iter().map(|d| d.listed()).collect();
        let pages = out.len().div_ceil(state.page_size).max(1) as u64;
        state.counts.reads += pages;
        Ok(out)
    }

    fn create_thread(
        &self,
        body: &str,
        position: Option<&DiffPosition>,
    ) -> Result<CreatedThread, ForgeError> {
        let mut state = self.lock();
        state.counts.writes += 1;
        if let Some(position) = position
            && !state.accepts(position)
        {
            return Err(ForgeError::Status {
                method: "POST".into(),
                route: "discussions".into(),
                status: 400,
                message: INVALID_POSITION_MESSAGE.into(),
            });
        }
        let bot = state.bot_user_id;
        let note_id = state.add_discussion(bot, body, true, None, position.cloned());
        let discussion_id = state
            .discussions
            .last()
            .map(|d| d.id.clone())
            .unwrap_or_default();
        Ok(CreatedThread {
            discussion_id,
            note_id,
        })
    }

    fn reply_to_thread(&self, discussion_id: &str, body: &str) -> Result<u64, ForgeError> {
        let mut state = self.lock();
        state.counts.writes += 1;
        let d = state
            .discussion_index(discussion_id)
            .ok_or_else(|| not_found("POST", format!("discussions/{discussion_id}/notes")))?;
        let bot = state.bot_user_id;
        Ok(state.add_reply(d, bot, body))
    }

    fn resolve_thread(&self, discussion_id: &str) -> Result<(), ForgeError> {
        let mut state = self.lock();
        state.counts.writes += 1;
        let route = format!("discussions/{discussion_id}");
        let d = state
            .discussion_index(discussion_id)
            .ok_or_else(|| not_found("PUT", route.clone()))?;
        let bot = state.bot_user_id;
        state
            .resolve(d, true, bot)
            .map_err(|()| ForgeError::Status {
                method: "PUT".into(),
                route,
                status: 403,
                message: "403 Forbidden".into(),
            })
    }

    fn create_note(&self, body: &str) -> Result<u64, ForgeError> {
        let mut state = self.lock();
        state.counts.writes += 1;
        let bot = state.bot_user_id;
        Ok(state.add_discussion(bot, body, false, None, None))
    }

    fn edit_note(&self, note_id: u64, body: &str) -> Result<(), ForgeError> {
        let mut state = self.lock();
        state.counts.writes += 1;
        let route = format!("notes/{note_id}");
        let (d, n) = state
            .find(note_id)
            .ok_or_else(|| not_found("PUT", route.clone()))?;
        if state.discussions[d].notes[n].author_id != state.bot_user_id {
            return Err(ForgeError::Status {
                method: "PUT".into(),
                route,
                status: 403,
                message: "403 Forbidden".into(),
            });
        }
        state.replace_body(d, n, body);
        Ok(())
    }

    fn project_role(&self, user_id: u64) -> Result<Option<Role>, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Ok(state.roles.get(&user_id).copied())
    }

    fn user_account(&self, user_id: u64) -> Result<Option<Account>, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Ok(state
            .accounts
            .get(&user_id)
            .cloned()
            .unwrap_or_else(|| Some(Account::active_human())))
    }

    fn bot_approves(&self) -> Result<bool, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Ok(state.approved_by.contains(&state.bot_user_id))
    }

    fn approve(&self, sha: &CommitSha) -> Result<(), ForgeError> {
        let mut state = self.lock();
        state.counts.writes += 1;
        let refused = |status: u16, message: String| ForgeError::Status {
            method: "POST".into(),
            route: "approve".into(),
            status,
            message,
        };
        if &state.mr.head_sha != sha {
            return Err(refused(
                409,
                format!(
                    "SHA does not match HEAD of source branch: {}",
                    state.mr.head_sha
                ),
            ));
        }
        let bot = state.bot_user_id;
        // GitLab answers 401 to a second approval by the same user and to an MR that is no
        // longer open.
        if state.mr.state != MergeRequestState::Opened || !state.approved_by.insert(bot) {
            return Err(refused(401, "401 Unauthorized".into()));
        }
        Ok(())
    }

    fn unapprove(&self) -> Result<(), ForgeError> {
        let mut state = self.lock();
        state.counts.writes += 1;
        let bot = state.bot_user_id;
        if !state.approved_by.remove(&bot) {
            return Err(not_found("POST", "unapprove".into()));
        }
        Ok(())
    }

    fn request_counts(&self) -> RequestCounts {
        self.lock().counts
    }
}

impl Repository for InMemoryForge {
    fn changed_files(&self) -> Result<Vec<ChangedFile>, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Ok(state.changed.clone())
    }
}

impl RepositoryFiles for InMemoryForge {
    fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let mut paths: Vec<String> = state
            .files
            .iter()
            .filter(|((s, p), _)| s == sha && p.starts_with(&prefix))
            .map(|((_, p), _)| p.clone())
            .collect();
        paths.sort();
        Ok(paths)
    }

    fn read_file(&self, sha: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Ok(state
            .files
            .iter()
            .find(|((s, p), _)| s == sha && p == path)
            .map(|(_, b)| b.clone()))
    }

    fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError> {
        let mut state = self.lock();
        state.counts.reads += 1;
        Err(not_found("GET", format!("repository/branches/{branch}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_gitlab_and_increase() {
        let forge = InMemoryForge::new(1, &commit_named("h"));
        let a = forge.create_thread("a", None).unwrap();
        let b = forge.create_note("b").unwrap();
        assert_eq!(a.discussion_id.len(), 40);
        assert!(a.discussion_id.bytes().all(|c| c.is_ascii_hexdigit()));
        assert!(b > a.note_id);
        let seeded = forge.post(2, "human", false, Some(500)).unwrap();
        assert_eq!(seeded, 500);
        assert_eq!(forge.create_note("c").unwrap(), 501);
        assert_eq!(
            forge.post(2, "dup", false, Some(500)),
            Err(HumanActionError::DuplicateId(500))
        );
    }

    #[test]
    fn plain_notes_are_not_resolvable() {
        let forge = InMemoryForge::new(1, &commit_named("h"));
        let id = forge.create_note("plain").unwrap();
        let disc = forge.snapshot()[0].id.clone();
        assert!(matches!(
            forge.resolve_thread(&disc),
            Err(ForgeError::Status { status: 403, .. })
        ));
        assert_eq!(
            forge.set_resolved(id, true),
            Err(HumanActionError::NotResolvable(id))
        );
    }

    #[test]
    fn listing_counts_pages_and_honours_order() {
        let forge = InMemoryForge::new(1, &commit_named("h"));
        for _ in 0..5 {
            forge.create_thread("t", None).unwrap();
        }
        forge.set_page_size(2);
        let before = forge.request_counts().reads;
        let ids: Vec<u64> = forge
            .list_discussions()
            .unwrap()
            .iter()
            .map(|d| d.notes[0].id)
            .collect();
        assert_eq!(forge.request_counts().reads - before, 3);
        assert_eq!(ids, vec![1, 2, 3, 4, 5]);
        forge.set_listing_order(ListingOrder::Explicit(vec![4, 2]));
        let ids: Vec<u64> = forge
            .list_discussions()
            .unwrap()
            .iter()
            .map(|d| d.notes[0].id)
            .collect();
        assert_eq!(ids, vec![4, 2, 1, 3, 5]);
    }

    #[test]
    fn approvals_answer_like_gitlab_and_a_push_resets_them() {
        let forge = InMemoryForge::new(1, &commit_named("h"));
        assert_eq!(forge.bot_approves(), Ok(false));
        assert_eq!(
            forge.approve(&commit_named("old")).map_err(|e| e.status()),
            Err(Some(409)),
            "a sha that is not the head is refused"
        );
        assert_eq!(forge.approvals(), Vec::<u64>::new());
        assert_eq!(forge.unapprove().map_err(|e| e.status()), Err(Some(404)));
        forge.approve(&commit_named("h")).unwrap();
        assert_eq!(forge.bot_approves(), Ok(true));
        assert_eq!(
            forge.approve(&commit_named("h")).map_err(|e| e.status()),
            Err(Some(401)),
            "approving twice is refused"
        );
        forge.set_approved_by(HUMAN_USER_ID, true);
        forge.set_head(&commit_named("h2"));
        assert_eq!(
            forge.approvals(),
            Vec::<u64>::new(),
            "a push removes approvals"
        );
        forge.approve(&commit_named("h2")).unwrap();
        forge.set_reset_approvals_on_push(false);
        forge.set_head(&commit_named("h3"));
        assert_eq!(forge.bot_approves(), Ok(true), "kept when reset is off");
        forge.unapprove().unwrap();
        assert_eq!(forge.bot_approves(), Ok(false));
        let counts = forge.request_counts();
        assert_eq!((counts.reads, counts.writes), (4, 6));
    }

    #[test]
    fn diff_notes_need_the_diff_refs_and_a_changed_line_and_are_remembered() {
        let forge = InMemoryForge::new(1, &commit_named("h"));
        forge.set_diff_refs(&commit_named("b"), &commit_named("s"));
        forge.set_changed_files(vec![ChangedFile {
            diff: "@@ -1,2 +1,2 @@\n a\n-b\n+c\n".into(),
            ..ChangedFile::regular("f.yaml", "f.yaml", false, false)
        }]);
        let at = |line| DiffPosition {
            base_sha: commit_named("b"),
            start_sha: commit_named("s"),
            head_sha: commit_named("h"),
            old_path: "f.yaml".into(),
            new_path: "f.yaml".into(),
            line,
        };
        let created = forge
            .create_thread("on the line", Some(&at(DiffLine::New(2))))
            .unwrap();
        forge
            .create_thread("removed", Some(&at(DiffLine::Old(2))))
            .unwrap();
        let stale = DiffPosition {
            head_sha: commit_named("older"),
            ..at(DiffLine::New(2))
        };
        let other_file = DiffPosition {
            new_path: "g.yaml".into(),
            ..at(DiffLine::New(2))
        };
        for refused in [
            at(DiffLine::New(1)),
            at(DiffLine::Old(1)),
            at(DiffLine::New(3)),
            stale,
            other_file,
        ] {
            let err = forge.create_thread("x", Some(&refused)).unwrap_err();
            assert_eq!(err.status(), Some(400), "{refused:?}");
            assert!(err.to_string().contains("must be a valid line code"));
        }
        assert_eq!(
            forge.snapshot().len(),
            2,
            "a refused position writes nothing"
        );
        assert_eq!(
            forge.request_counts().writes,
            7,
            "every attempt is a request"
        );
        let positions = forge.positions();
        assert_eq!(positions[&created.note_id], at(DiffLine::New(2)));
        assert_eq!(positions.len(), 2);
        forge.clone_thread(created.note_id, None).unwrap();
        assert_eq!(forge.positions().len(), 3, "a copy keeps its position");
        forge.set_head(&commit_named("h2"));
        assert!(
            forge
                .create_thread("x", Some(&at(DiffLine::New(2))))
                .is_err(),
            "a push makes a new diff version"
        );
    }

    #[test]
    fn only_the_author_may_edit() {
        let forge = InMemoryForge::new(1, &commit_named("h"));
        let human = forge.post(2, "mine", false, None).unwrap();
        assert!(matches!(
            forge.edit_note(human, "x"),
            Err(ForgeError::Status { status: 403, .. })
        ));
        assert_eq!(forge.snapshot()[0].notes[0].body, "mine");
    }
}
