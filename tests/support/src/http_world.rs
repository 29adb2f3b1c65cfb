//! [`FakeGitLabWorld`]: the protocol fixtures' [`FixtureWorld`] over HTTP.
//!
//! `forge()` is a real [`GitLabForge`] talking to an in-process [`FakeGitLab`]; everything
//! else (seeding history, the humans' clicks, pushes, the final snapshot) goes through the
//! fake's state API, so it is not an HTTP request and never shows in the adapter's counts
//! or in the fake's request log.
//!
//! Mapping from the fixture model:
//! * user ids are the fixture's own: the bot (`bot_user_id`) owns the token, and any other
//!   author id becomes a fake user on first use;
//! * note ids are the fixture's own: seeded ids are kept exactly, new ones are the next
//!   integer above every id seen, as on the in-memory forge;
//! * `page_size` becomes the fake's server-side page cap (the adapter always asks for
//!   `per_page=100`), so a fixture's listing spans the same number of pages (HTTP
//!   requests) as in memory;
//! * the listing order maps onto the fake's discussion order; an explicit order of first-note
//!   ids is translated to discussion ids whenever a discussion is added;
//! * a fixture's diffs become the MR's diff listing, against which the fake validates
//!   DiffNote positions as GitLab does; positions are read back from the fake's notes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use assent::core::commit_sha::CommitSha;
use assent::core::model::{DiffLine, DiffPosition, ListedDiscussion, Role};
use assent::engine::fixture::FixtureWorld;
use assent::engine::fixture::schema::DiffSpec;
use assent::forge::Forge;
use assent::forge::memory::{ListingOrder, MR_AUTHOR_USER_ID};
use assent::gitlab::GitLabForge;
use fake_gitlab::{
    DiffFile, DiscussionOrder, FakeGitLab, MergeRequest, NotePosition, Project, State,
    Token as FakeToken, User,
};

use crate::{RecordingSleeper, config_for, forge_with};

/// The fake's project id.
pub const PROJECT_ID: u64 = 42;
/// The fake's project path (percent-encoded as `group%2Ffixtures` by the adapter).
pub const PROJECT_PATH: &str = "group/fixtures";
/// The fake's MR iid.
pub const MR_IID: u64 = 1;
/// The bot's token in the fake.
pub const BOT_TOKEN: &str = "glpat-fixture-bot-secret";
const BASE_SHA: &str = "3333333333333333333333333333333333333333";

/// A fake GitLab holding one open MR, seen through a [`GitLabForge`] with the bot's token.
pub struct FakeGitLabWorld {
    fake: FakeGitLab,
    forge: GitLabForge,
    sleeper: Arc<RecordingSleeper>,
    explicit_order: Mutex<Option<Vec<u64>>>,
}

impl FakeGitLabWorld {
    /// A fresh fake with an open MR at `head`, whose token belongs to user `bot_user_id`.
    pub fn new(bot_user_id: u64, head: &str) -> Self {
        let state = State {
            note_id_start: 1,
            fixed_time: Some("2026-01-01T00:00:00.000Z".into()),
            users: vec![
                User::new(bot_user_id, "assent-bot").bot(true),
                User::new(MR_AUTHOR_USER_ID, &format!("user{MR_AUTHOR_USER_ID}")),
            ],
            tokens: vec![FakeToken::new(BOT_TOKEN, bot_user_id, &["api"])],
            projects: vec![
                Project::new(PROJECT_ID, PROJECT_PATH)
                    .branch("main", "2222222222222222222222222222222222222222")
                    .branch("feature", head)
                    .merge_request(
                        MergeRequest::new(MR_IID, MR_AUTHOR_USER_ID, head, BASE_SHA)
                            .branches("feature", "main"),
                    ),
            ],
            ..State::default()
        };
        let fake = FakeGitLab::start(state);
        let (forge, sleeper) = forge_with(config_for(&fake, BOT_TOKEN, PROJECT_PATH, MR_IID));
        FakeGitLabWorld {
            fake,
            forge,
            sleeper,
            explicit_order: Mutex::new(None),
        }
    }

    /// The fake server (request log, violations, switches).
    pub fn fake(&self) -> &FakeGitLab {
        &self.fake
    }

    /// The adapter (also returned by `forge()`).
    pub fn gitlab(&self) -> &GitLabForge {
        &self.forge
    }

    /// The delays the adapter's retry policy asked for.
    pub fn sleeper(&self) -> &RecordingSleeper {
        &self.sleeper
    }

    fn ensure_user(&self, id: u64) {
        self.fake.ensure_user(id, &format!("user{id}"));
    }

    /// Re-applies an explicit listing order (first-note ids) to the current discussions.
    fn sync_order(&self) {
        let Some(ids) = self
            .explicit_order
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        else {
            return;
        };
        let discussions = self.fake.discussions(PROJECT_ID, MR_IID);
        let order = ids
            .iter()
            .filter_map(|id| {
                discussions
                    .iter()
                    .find(|d| d.first_note_id() == *id)
                    .map(|d| d.id.clone())
            })
            .collect();
        self.fake
            .set_discussion_order(PROJECT_ID, MR_IID, DiscussionOrder::Custom(order));
    }

    fn discussion_of(&self, note_id: u64) -> Result<fake_gitlab::Discussion, String> {
        self.fake
            .discussions(PROJECT_ID, MR_IID)
            .into_iter()
            .find(|d| d.notes.iter().any(|n| n.id == note_id))
            .ok_or_else(|| format!("no note {note_id}"))
    }
}

impl FixtureWorld for FakeGitLabWorld {
    fn forge(&self) -> &dyn Forge {
        &self.forge
    }

    /// GitLab reports a member's role as its access level: the fake reads it from the
    /// user's tokens, so the user gets one of that level.
    fn set_role(&self, user_id: u64, role: Role) -> Result<(), String> {
        self.ensure_user(user_id);
        let level = match role {
            Role::Guest => 10,
            Role::Reporter => 20,
            Role::Developer => 30,
            Role::Maintainer => 40,
            Role::Owner => 50,
        };
        self.fake.with_state(|s| {
            s.tokens.push(
                fake_gitlab::Token::new(&format!("glpat-fixture-user{user_id}"), user_id, &["api"])
                    .access_level(level),
            );
        });
        Ok(())
    }

    fn configure_listing(
        &self,
        page_size: Option<usize>,
        order: ListingOrder,
    ) -> Result<(), String> {
        if let Some(size) = page_size {
            if !(1..=100).contains(&size) {
                return Err(format!(
                    "page size {size}: GitLab pages hold 1 to 100 items"
                ));
            }
            self.fake.set_max_per_page(Some(size as u64));
        }
        let (order, explicit) = match order {
            ListingOrder::Ascending => (DiscussionOrder::ById, None),
            ListingOrder::Descending => (DiscussionOrder::Reversed, None),
            ListingOrder::Explicit(ids) => (DiscussionOrder::Custom(Vec::new()), Some(ids)),
        };
        self.fake.set_discussion_order(PROJECT_ID, MR_IID, order);
        *self
            .explicit_order
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = explicit;
        self.sync_order();
        Ok(())
    }

    fn post(
        &self,
        author_id: u64,
        body: &str,
        thread: bool,
        id: Option<u64>,
    ) -> Result<u64, String> {
        self.ensure_user(author_id);
        let note_id = match id {
            Some(id) => {
                self.fake
                    .post_with_id(PROJECT_ID, MR_IID, author_id, body, thread, id)
                    .map_err(|e| format!("note {id}: {e}"))?
                    .1
            }
            None if thread => self.fake.post_thread(PROJECT_ID, MR_IID, author_id, body).1,
            None => self.fake.post_note(PROJECT_ID, MR_IID, author_id, body).1,
        };
        self.sync_order();
        Ok(note_id)
    }

    fn mark_system(&self, note_id: u64) -> Result<(), String> {
        self.fake
            .mark_system(PROJECT_ID, MR_IID, note_id)
            .map_err(|e| format!("note {note_id}: {e}"))
    }

    fn reply(&self, note_id: u64, author_id: u64, body: &str) -> Result<u64, String> {
        let discussion = self.discussion_of(note_id)?;
        self.ensure_user(author_id);
        self.fake
            .with_state(|s| s.reply(PROJECT_ID, MR_IID, &discussion.id, author_id, body))
            .map_err(|e| format!("reply to note {note_id}: {e}"))
    }

    fn set_resolved(&self, note_id: u64, resolved: bool, by: u64) -> Result<(), String> {
        let discussion = self.discussion_of(note_id)?;
        self.ensure_user(by);
        self.fake
            .with_state(|s| s.set_resolved(PROJECT_ID, MR_IID, &discussion.id, by, resolved))
            .map_err(|e| format!("resolve note {note_id}: {e}"))
    }

    fn set_body(&self, note_id: u64, body: &str) -> Result<(), String> {
        self.fake
            .with_state(|s| s.edit_note(PROJECT_ID, MR_IID, note_id, None, body))
            .map_err(|e| format!("edit note {note_id}: {e}"))
    }

    fn clone_thread(&self, note_id: u64, id: Option<u64>) -> Result<u64, String> {
        // What a racing publisher leaves behind: a new thread with the same author and first
        // body, unresolved (not a copy of replies or resolution).
        let discussion = self.discussion_of(note_id)?;
        let first = discussion
            .notes
            .first()
            .ok_or_else(|| format!("note {note_id}: empty discussion"))?;
        let resolvable = discussion.resolvable();
        let copy = self.post(first.author_id, &first.body, resolvable, id)?;
        // A DiffNote's copy sits on the same line, as in memory.
        if let Some(position) = first.position.clone() {
            let note_type = first.note_type.clone();
            self.fake.with_state(|s| {
                if let Some(note) = s
                    .mr_mut_ref(PROJECT_ID, MR_IID)
                    .ok()
                    .and_then(|m| m.note_mut(copy))
                {
                    note.position = Some(position);
                    note.note_type = note_type;
                }
            });
        }
        Ok(copy)
    }

    fn set_head(&self, sha: &CommitSha) -> Result<(), String> {
        self.fake.set_head(PROJECT_ID, MR_IID, sha.as_str());
        Ok(())
    }

    fn snapshot(&self) -> Result<Vec<ListedDiscussion>, String> {
        Ok(crate::listed_discussions(&self.fake, PROJECT_ID, MR_IID))
    }

    fn set_diffs(&self, diffs: &[DiffSpec]) -> Result<(), String> {
        let listed = diffs
            .iter()
            .map(|d| DiffFile {
                old_path: d.old_path.clone().unwrap_or_else(|| d.path.clone()),
                new_path: d.path.clone(),
                diff: d.diff.clone(),
                ..DiffFile::default()
            })
            .collect();
        self.fake.with_state(|s| {
            if let Ok(mr) = s.mr_mut_ref(PROJECT_ID, MR_IID) {
                mr.diffs = listed;
            }
        });
        Ok(())
    }

    fn positions(&self) -> Result<BTreeMap<u64, DiffPosition>, String> {
        let mut positions = BTreeMap::new();
        for discussion in self.fake.discussions(PROJECT_ID, MR_IID) {
            let Some(first) = discussion.notes.first() else {
                continue;
            };
            if let Some(position) = &first.position {
                positions.insert(first.id, diff_position(position)?);
            }
        }
        Ok(positions)
    }
}

/// The fake's stored position as assent names it; assent only creates added- or
/// removed-line positions.
fn diff_position(p: &NotePosition) -> Result<DiffPosition, String> {
    let line = match (p.old_line, p.new_line) {
        (None, Some(n)) => DiffLine::New(n as usize),
        (Some(o), None) => DiffLine::Old(o as usize),
        other => return Err(format!("a position on an unchanged line {other:?}")),
    };
    let sha = |text: &str| CommitSha::parse(text).map_err(|e| e.to_string());
    Ok(DiffPosition {
        base_sha: sha(&p.base_sha)?,
        start_sha: sha(&p.start_sha)?,
        head_sha: sha(&p.head_sha)?,
        old_path: p.old_path.clone(),
        new_path: p.new_path.clone(),
        line,
    })
}
