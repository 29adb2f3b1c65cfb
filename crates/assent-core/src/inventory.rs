//! Step 2 of the protocol: what assent already posted, read from a forge listing.
//!
//! Ownership is decided before any marker is parsed: only first notes authored by the bot
//! user and not written by the forge itself (`system`) can be artifacts. Anyone else's
//! marker, well-formed or not, is invisible and produces no warning. A bot note whose marker
//! is malformed is skipped with a warning naming its note id; it is never deleted.
//!
//! assent never edits a finding thread's first note (only the summary is edited in place), so
//! a first note that GitLab reports updated since its creation was changed by someone holding
//! the bot's token: its marker may name an occurrence its body never showed the reviewer, and
//! that whenever the edit happened, before the resolution or after it. Such a resolved thread
//! is [`ThreadArtifact::edited`]: a warning names it, and its resolution never counts
//! (`review_state::is_retired`). GitLab's REST answer has no field for an edit
//! (`last_edited_at` exists only in its web UI and GraphQL), so the edit is read from
//! `updated_at` against `created_at`, which GitLab writes as one instant when it creates a
//! note (docs/contract.md#edited-notes). What else moves a note's `updated_at`, read from
//! GitLab's source (docs/reliability.md, "What else moves a note's `updated_at`"):
//!
//! * a thread resolved or re-opened through its discussion (the web UI's button, and assent's
//!   own route) does not: `update_all` (`app/models/concerns/resolvable_discussion.rb`,
//!   `app/models/concerns/resolvable_note.rb`);
//! * a push that moves a DiffNote's position, or resolves it as outdated (`resolved_by_push`),
//!   does not: `Gitlab::Timeless.timeless(note, &:save)`
//!   (`app/services/discussions/update_diff_position_service.rb`, `app/models/merge_request.rb`);
//! * one note resolved through the note route (`PUT …/notes/:id?resolved=`,
//!   `Notes::ResolveService`, `ResolvableNote#resolve!` saves the note) does, and so does an
//!   emoji reaction on the note (`AwardEmoji#expire_cache` calls `Note#bump_updated_at`):
//!   assent cannot tell either from an edit, so such a resolution does not count either (fail
//!   closed: the thread is retired and a fresh one is posted, to be resolved again).

use crate::bot_identity::Owners;
use crate::commit_sha::CommitSha;
use crate::marker::{self, Marker, SummaryState};
use crate::model::{ListedDiscussion, ListedNote, Occurrence, Slot, UserRef};
use crate::time::Timestamp;

/// A finding thread assent posted earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadArtifact {
    /// The first note's integer id: the thread's forge id.
    pub forge_id: u64,
    /// The discussion id, needed to reply and resolve.
    pub discussion_id: String,
    /// Where the finding lives.
    pub slot: Slot,
    /// The judged content it was posted for.
    pub occurrence: Occurrence,
    /// The forge's resolved bit: the only durable record of a human's assent.
    pub resolved: bool,
    /// Resolved by the bot itself (outdated, superseded, a repaired duplicate, a comment):
    /// such a resolution is never a human's assent.
    pub resolved_by_bot: bool,
    /// Who resolved the thread (its first note's `resolved_by`), when resolved and known.
    pub resolved_by: Option<UserRef>,
    /// Resolved, and GitLab cannot show that the first note is unchanged since its creation:
    /// its `updated_at` is not its `created_at`, or either is missing or unreadable. Such a
    /// resolution is never assent (see the module docs).
    pub edited: bool,
    /// The thread is on a line of the diff (a DiffNote), so a push may have resolved it.
    pub diff_note: bool,
    /// Bodies of the bot's own replies in the thread (not system notes), in order: a reply
    /// an earlier, interrupted run already posted is not posted again.
    pub bot_replies: Vec<String>,
}

/// A summary note assent posted earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryArtifact {
    /// The note id: the summary's forge id.
    pub note_id: u64,
    /// The full body, compared byte for byte to decide whether an edit is needed.
    pub body: String,
    /// The summary's occurrence.
    pub occurrence: Occurrence,
    /// `reconciling` or `verified`.
    pub state: SummaryState,
    /// The source SHA it was computed for.
    pub source_sha: CommitSha,
    /// The discussion id when the summary has become an unresolved thread: GitLab turns a
    /// plain note into a resolvable thread when someone replies to it, and an unresolved
    /// thread would hold up "all threads must be resolved".
    pub open_thread: Option<String>,
    /// The note's `updated_at`, when the forge reports it.
    pub updated_at: Option<String>,
}

/// Every artifact in a listing, sorted by forge id, plus warnings about skipped notes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inventory {
    /// Finding threads, ascending forge id.
    pub threads: Vec<ThreadArtifact>,
    /// Summary notes, ascending note id.
    pub summaries: Vec<SummaryArtifact>,
    /// Operator-facing warnings (malformed bot markers), sorted.
    pub warnings: Vec<String>,
    /// Summary notes of adopted previous bot users (`crate::bot_identity`), ascending note
    /// id. The token's user cannot edit another user's note (GitLab's `admin_note` is the
    /// author's alone, `app/policies/note_policy.rb`), so these are never the summary slot:
    /// the current bot's summary supersedes them, and each gets a reply saying so and is
    /// resolved (any Developer may resolve a discussion).
    pub adopted_summaries: Vec<AdoptedSummary>,
}

/// A summary note an adopted previous bot user posted: kept as it was, superseded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdoptedSummary {
    /// The note id.
    pub note_id: u64,
    /// Its discussion, to reply in and resolve.
    pub discussion_id: String,
    /// The token's user already replied in its discussion (the supersession reply).
    pub superseded: bool,
    /// It is an unresolved thread (GitLab turns a plain note into one on a reply).
    pub open_thread: bool,
}

impl Inventory {
    /// Reads the artifacts out of a complete listing, the token's user `bot_user_id` their
    /// only author. The result does not depend on the listing's order.
    pub fn from_listing(listing: &[ListedDiscussion], bot_user_id: u64) -> Inventory {
        Inventory::owned_by(listing, &Owners::only(bot_user_id))
    }

    /// Reads the artifacts out of a complete listing whose authors are `owners`: the token's
    /// user and the adopted previous bot users, whose threads are the bot's own and whose
    /// resolutions are housekeeping, never assent. The result does not depend on the
    /// listing's order.
    pub fn owned_by(listing: &[ListedDiscussion], owners: &Owners) -> Inventory {
        let mut inventory = Inventory::default();
        for discussion in listing {
            let Some(note) = discussion.notes.first() else {
                continue;
            };
            if !owners.owns(note.author_id) || note.system {
                continue;
            }
            match marker::decode_body(&note.body) {
                Ok(None) => {}
                Err(malformed) => inventory.warnings.push(format!(
                    "note {}: malformed assent marker ({}); skipped, delete the note to silence this warning",
                    note.id, malformed.reason
                )),
                Ok(Some(Marker::Finding { slot, occurrence })) => {
                    if note.resolvable {
                        inventory.threads.push(ThreadArtifact {
                            forge_id: note.id,
                            discussion_id: discussion.id.clone(),
                            slot,
                            occurrence,
                            resolved: note.resolved,
                            resolved_by_bot: note.resolved
                                && note.resolved_by.as_ref().is_some_and(|u| owners.owns(u.id)),
                            resolved_by: note.resolved.then(|| note.resolved_by.clone()).flatten(),
                            edited: note.resolved && !unchanged_since_creation(note),
                            diff_note: note.diff_note,
                            bot_replies: discussion.notes[1..]
                                .iter()
                                .filter(|n| owners.owns(n.author_id) && !n.system)
                                .map(|n| n.body.clone())
                                .collect(),
                        });
                    } else {
                        inventory.warnings.push(format!(
                            "note {}: finding marker on a note that is not a resolvable thread; skipped",
                            note.id
                        ));
                    }
                }
                Ok(Some(Marker::Summary { .. })) if note.author_id != owners.bot => {
                    inventory.adopted_summaries.push(AdoptedSummary {
                        note_id: note.id,
                        discussion_id: discussion.id.clone(),
                        superseded: discussion.notes[1..]
                            .iter()
                            .any(|n| n.author_id == owners.bot && !n.system),
                        open_thread: note.resolvable && !note.resolved,
                    })
                }
                Ok(Some(Marker::Summary {
                    occurrence,
                    state,
                    source_sha,
                    ..
                })) => {
                    inventory.summaries.push(SummaryArtifact {
                        note_id: note.id,
                        body: note.body.clone(),
                        occurrence,
                        state,
                        source_sha,
                        open_thread: (note.resolvable && !note.resolved).then(|| discussion.id.clone()),
                        updated_at: note.updated_at.clone(),
                    })
                }
            }
        }
        for thread in inventory.threads.iter().filter(|t| t.edited) {
            inventory.warnings.push(format!(
                "note {}: GitLab reports this finding thread's first note changed since it was posted (assent never edits it: an edit with the bot's token, an emoji reaction on it, or a resolution through the note's own route); its resolution does not count and a fresh thread is posted",
                thread.forge_id
            ));
        }
        inventory.threads.sort_by_key(|t| t.forge_id);
        inventory.summaries.sort_by_key(|s| s.note_id);
        inventory.adopted_summaries.sort_by_key(|s| s.note_id);
        inventory.warnings.sort();
        inventory.warnings.dedup();
        inventory
    }

    /// The canonical summary: the one with the lowest note id.
    pub fn canonical_summary(&self) -> Option<&SummaryArtifact> {
        self.summaries.first()
    }
}

/// Whether a note is shown unchanged since its creation: its `updated_at` is the instant of
/// its `created_at`. A timestamp missing or unreadable shows nothing, so the note counts as
/// changed (fail closed).
fn unchanged_since_creation(note: &ListedNote) -> bool {
    let parse = |t: &Option<String>| t.as_deref().and_then(Timestamp::parse);
    match (parse(&note.created_at), parse(&note.updated_at)) {
        (Some(created), Some(updated)) => created == updated,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ListedNote;
    use crate::model::UserRef;

    fn note(id: u64, author_id: u64, body: &str) -> ListedNote {
        ListedNote {
            id,
            author_id,
            system: false,
            resolvable: true,
            resolved: false,
            resolved_by: None,
            resolved_at: None,
            diff_note: false,
            body: body.to_owned(),
            created_at: None,
            updated_at: None,
        }
    }

    fn disc(id: u64, notes: Vec<ListedNote>) -> ListedDiscussion {
        ListedDiscussion {
            id: format!("{id:040x}"),
            individual_note: false,
            notes,
        }
    }

    fn finding_body(rule: &str) -> String {
        marker::encode(&Marker::Finding {
            slot: Slot {
                rule: rule.into(),
                subject: "f#/x".into(),
            },
            occurrence: Occurrence::digest(rule.as_bytes()),
        })
    }

    #[test]
    fn other_authors_markers_are_invisible_without_warning() {
        let listing = vec![
            disc(1, vec![note(1, 7, &finding_body("r"))]),
            disc(2, vec![note(2, 7, "<!-- assent:marker {broken -->")]),
        ];
        let inv = Inventory::from_listing(&listing, 1);
        assert!(inv.threads.is_empty());
        assert!(inv.warnings.is_empty());
    }

    #[test]
    fn system_notes_are_never_artifacts() {
        let mut n = note(3, 1, &finding_body("r"));
        n.system = true;
        let inv = Inventory::from_listing(&[disc(3, vec![n])], 1);
        assert!(inv.threads.is_empty());
    }

    #[test]
    fn malformed_bot_marker_is_skipped_with_a_warning_naming_the_note() {
        let inv = Inventory::from_listing(
            &[disc(9, vec![note(9, 1, "<!-- assent:marker {nope -->")])],
            1,
        );
        assert!(inv.threads.is_empty());
        assert_eq!(inv.warnings.len(), 1);
        assert!(
            inv.warnings[0].starts_with("note 9: malformed assent marker"),
            "{:?}",
            inv.warnings
        );
    }

    #[test]
    fn an_adopted_bots_threads_are_artifacts_and_its_summary_is_set_apart() {
        let summary = marker::encode(&Marker::Summary {
            occurrence: Occurrence::digest(b"s"),
            state: SummaryState::Verified,
            source_sha: crate::commit_sha::CommitSha::parse(&"a".repeat(40)).unwrap(),
            target: None,
        });
        let mut by_old_bot = note(20, 9, &finding_body("old"));
        by_old_bot.resolved = true;
        by_old_bot.resolved_by = Some(UserRef {
            id: 9,
            username: "old-bot".into(),
        });
        let mut by_reviewer = note(21, 9, &finding_body("kept"));
        by_reviewer.resolved = true;
        by_reviewer.resolved_by = Some(UserRef {
            id: 7,
            username: "alice".into(),
        });
        let mut plain = note(22, 9, &summary);
        plain.resolvable = false;
        let listing = vec![
            disc(20, vec![by_old_bot, note(23, 9, "Outdated as of x.")]),
            disc(21, vec![by_reviewer]),
            disc(22, vec![plain]),
            disc(24, vec![note(24, 7, &finding_body("pasted"))]),
        ];
        // Without adoption, none of it is read (the run stops before, `bot_identity`).
        assert_eq!(Inventory::from_listing(&listing, 1), Inventory::default());
        let owners = Owners {
            bot: 1,
            adopted: [9].into(),
        };
        let inv = Inventory::owned_by(&listing, &owners);
        let ids: Vec<u64> = inv.threads.iter().map(|t| t.forge_id).collect();
        assert_eq!(ids, [20, 21], "a person's marker stays invisible");
        assert!(
            inv.threads[0].resolved_by_bot,
            "the old bot's resolution is housekeeping"
        );
        assert_eq!(inv.threads[0].bot_replies, ["Outdated as of x."]);
        assert!(
            !inv.threads[1].resolved_by_bot,
            "a reviewer's resolution is kept"
        );
        assert!(inv.summaries.is_empty(), "the token's user cannot edit it");
        assert_eq!(inv.adopted_summaries.len(), 1);
        assert_eq!(inv.adopted_summaries[0].note_id, 22);
    }

    #[test]
    fn only_the_first_note_of_a_discussion_is_read() {
        let listing = vec![disc(
            5,
            vec![note(5, 7, "human"), note(6, 1, &finding_body("r"))],
        )];
        assert!(Inventory::from_listing(&listing, 1).threads.is_empty());
    }

    #[test]
    fn the_bots_own_replies_are_recorded_and_no_one_elses() {
        let mut system = note(13, 1, "resolved all threads");
        system.system = true;
        let listing = vec![disc(
            10,
            vec![
                note(10, 1, &finding_body("r")),
                note(11, 7, "a human's reply"),
                note(12, 1, "Outdated as of x."),
                system,
            ],
        )];
        let inv = Inventory::from_listing(&listing, 1);
        assert_eq!(
            inv.threads[0].bot_replies,
            vec!["Outdated as of x.".to_owned()]
        );
    }

    #[test]
    fn result_is_sorted_by_forge_id_whatever_the_listing_order() {
        let listing = vec![
            disc(30, vec![note(30, 1, &finding_body("a"))]),
            disc(10, vec![note(10, 1, &finding_body("b"))]),
            disc(20, vec![note(20, 1, &finding_body("c"))]),
        ];
        let ids: Vec<u64> = Inventory::from_listing(&listing, 1)
            .threads
            .iter()
            .map(|t| t.forge_id)
            .collect();
        assert_eq!(ids, vec![10, 20, 30]);
    }

    #[test]
    fn finding_marker_on_a_plain_note_is_skipped_with_a_warning() {
        let mut n = note(4, 1, &finding_body("r"));
        n.resolvable = false;
        let inv = Inventory::from_listing(&[disc(4, vec![n])], 1);
        assert!(inv.threads.is_empty());
        assert_eq!(inv.warnings.len(), 1);
    }

    /// A first note resolved at `resolved_at`, created at `created_at`, last updated at
    /// `updated_at`.
    fn resolved_note(
        id: u64,
        created_at: Option<&str>,
        updated_at: Option<&str>,
        resolved_at: Option<&str>,
    ) -> ListedNote {
        let mut n = note(id, 1, &finding_body("r"));
        n.resolved = true;
        n.resolved_by = Some(UserRef {
            id: 7,
            username: "reviewer".into(),
        });
        n.created_at = created_at.map(str::to_owned);
        n.updated_at = updated_at.map(str::to_owned);
        n.resolved_at = resolved_at.map(str::to_owned);
        n
    }

    const POSTED: &str = "2026-01-01T09:00:00.000Z";
    const RESOLVED: &str = "2026-01-01T10:00:00.000Z";

    #[test]
    fn a_first_note_updated_after_its_resolution_is_edited_and_named() {
        let n = resolved_note(
            40,
            Some(POSTED),
            Some("2026-01-01T10:05:00.000Z"),
            Some(RESOLVED),
        );
        let inv = Inventory::from_listing(&[disc(40, vec![n])], 1);
        assert!(inv.threads[0].edited);
        assert!(
            inv.threads[0].resolved,
            "the resolution is reported as it is"
        );
        assert_eq!(inv.warnings.len(), 1, "{:?}", inv.warnings);
        assert!(
            inv.warnings[0].starts_with("note 40: "),
            "{:?}",
            inv.warnings
        );
        assert!(
            inv.warnings[0].contains("does not count"),
            "{:?}",
            inv.warnings
        );
    }

    #[test]
    fn an_edit_is_caught_whenever_it_happened() {
        // Before the resolution (GitLab's resolution leaves `updated_at` at the edit), and
        // within a second after it: neither is the note the bot posted.
        for updated in ["2026-01-01T09:30:00.000Z", "2026-01-01T10:00:00.400Z"] {
            let n = resolved_note(41, Some(POSTED), Some(updated), Some(RESOLVED));
            let inv = Inventory::from_listing(&[disc(41, vec![n])], 1);
            assert!(inv.threads[0].edited, "{updated}");
            assert_eq!(inv.warnings.len(), 1, "{updated}: {:?}", inv.warnings);
        }
    }

    #[test]
    fn an_unedited_resolved_note_is_not_edited() {
        // GitLab writes `created_at` and `updated_at` as one instant, and a resolution
        // through the discussion leaves `updated_at` alone; a zone or a precision of its own
        // does not make another instant.
        for (created, updated) in [
            (POSTED, POSTED),
            ("2026-01-01T09:00:00Z", "2026-01-01T10:00:00.000+01:00"),
        ] {
            let n = resolved_note(42, Some(created), Some(updated), Some(RESOLVED));
            let inv = Inventory::from_listing(&[disc(42, vec![n])], 1);
            assert!(!inv.threads[0].edited, "{created} {updated}");
            assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
        }
    }

    #[test]
    fn a_note_gitlab_cannot_date_is_not_shown_unedited() {
        for (created, updated) in [
            (Some(POSTED), None),
            (None, Some(POSTED)),
            (Some("yesterday"), Some(POSTED)),
            (Some(POSTED), Some("")),
        ] {
            let n = resolved_note(43, created, updated, Some(RESOLVED));
            assert!(
                Inventory::from_listing(&[disc(43, vec![n])], 1).threads[0].edited,
                "{created:?} {updated:?}"
            );
        }
    }

    #[test]
    fn an_open_thread_is_never_edited_whatever_its_timestamps() {
        let mut n = note(43, 1, &finding_body("r"));
        n.updated_at = Some("2026-01-02T00:00:00Z".into());
        let inv = Inventory::from_listing(&[disc(43, vec![n])], 1);
        assert!(!inv.threads[0].edited);
        assert!(inv.warnings.is_empty());
    }
}
