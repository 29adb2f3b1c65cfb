//! Whose notes are assent's own when the token's user changed (docs/run.md, "Renewing the
//! token").
//!
//! A project or group access token has a user of its own: creating a new token instead of
//! rotating the old one (GitLab's rotation keeps the user: `POST
//! projects/:id/access_tokens/:token_id/rotate`, `lib/api/resource_access_tokens.rb`; `POST
//! personal_access_tokens/self/rotate`, `lib/api/personal_access_tokens/self_rotation.rb`)
//! gives assent a new bot user. Read as before, every artifact of the old bot would be
//! invisible (docs/contract.md#markers: only the token's user's notes are artifacts): the next
//! run would post a second summary and a second thread per finding, and every assent given
//! on the old threads would be lost.
//!
//! So before anything is written, the run looks at who else wrote a first note carrying
//! assent's marker ([`foreign_marker_authors`]) and reads each such author's account once
//! (`GET /users/:id`, at most [`MAX_MARKER_AUTHORS`] of them). [`decide_owners`] then says
//! whose notes are artifacts:
//!
//! * a person's marker (GitLab says `bot: false`) stays invisible, as the contract says: a
//!   contributor pasting a marker changes nothing;
//! * another bot's marker, its username not adopted by the operator, stops the run: it
//!   writes nothing and names the previous bot and the fix;
//! * a bot the operator adopted (`--previous-bot-user`, `ASSENT_PREVIOUS_BOT_USERS`) is read
//!   as assent's own: its threads are kept, superseded, resolved and repaired like the
//!   current bot's, and its own resolutions are housekeeping, never assent;
//! * an adopted name that GitLab shows as a person is refused: a person's markers are never
//!   adopted;
//! * an author whose account cannot be read, or more authors than the cap, stops the run
//!   (fail closed: assent cannot show the markers are a person's).

use std::collections::BTreeSet;

use crate::marker::MARKER_PREFIX;
use crate::model::{Account, ListedDiscussion};

/// How many distinct authors of foreign markers a run reads at most. A renewal leaves one
/// previous bot per renewal, so a handful covers every honest history; people who paste a
/// marker count too, so the bound is wide enough that a few commenters cannot stop an MR's
/// gate by pasting, and past it the run fails closed instead of paying a request per author.
pub const MAX_MARKER_AUTHORS: usize = 20;

/// Whose first notes are assent's artifacts: the token's user and the adopted previous bot
/// users.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Owners {
    /// The token's own user: the only author assent writes as.
    pub bot: u64,
    /// Previous bot users the operator adopted and GitLab marks as bots.
    pub adopted: BTreeSet<u64>,
}

impl Owners {
    /// The token's user alone.
    pub fn only(bot: u64) -> Owners {
        Owners {
            bot,
            adopted: BTreeSet::new(),
        }
    }

    /// Whether `user` is the bot or an adopted previous bot.
    pub fn owns(&self, user: u64) -> bool {
        user == self.bot || self.adopted.contains(&user)
    }
}

/// The authors, other than `bot`, of first notes (not system notes) whose first line starts
/// with assent's marker prefix, well-formed or not.
pub fn foreign_marker_authors(listing: &[ListedDiscussion], bot: u64) -> BTreeSet<u64> {
    listing
        .iter()
        .filter_map(|d| d.notes.first())
        .filter(|n| n.author_id != bot && !n.system)
        .filter(|n| {
            n.body
                .lines()
                .next()
                .is_some_and(|l| l.starts_with(MARKER_PREFIX))
        })
        .map(|n| n.author_id)
        .collect()
}

/// What GitLab said of one foreign marker's author.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerAuthor {
    /// The user id.
    pub id: u64,
    /// The account as read; `Ok(None)` when GitLab does not show the user (404), `Err` when
    /// it refused: why.
    pub account: Result<Option<Account>, String>,
}

/// Why a run refuses to read or write artifacts: every variant is a configuration the
/// operator fixes (exit 2), and nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityRefusal {
    /// Another bot user wrote assent's markers on this merge request.
    #[error(
        "assent's markers on this merge request were written by another bot user than the token's: {}. A token renewed by creating a new token makes a new bot user; posting now would duplicate every thread and lose every assent, so nothing was written. Adopt the previous bot user with --previous-bot-user {} (or ASSENT_PREVIOUS_BOT_USERS={}) and run again; next time renew with GitLab's rotation API, which keeps the bot user (docs/run.md, \"Renewing the token\")",
        named_users(.previous),
        usernames(.previous).join(" --previous-bot-user "),
        usernames(.previous).join(",")
    )]
    PreviousBot {
        /// The previous bots: username (when GitLab gave one) and id.
        previous: Vec<(Option<String>, u64)>,
    },
    /// The operator adopted a user GitLab shows as a person.
    #[error(
        "the previous bot user {username} (id {id}) is not a bot: GitLab says `bot: false`, and a person's assent markers are never read as assent's own. Remove {username} from --previous-bot-user / ASSENT_PREVIOUS_BOT_USERS"
    )]
    NamedPerson {
        /// The username as named.
        username: String,
        /// The user's id.
        id: u64,
    },
    /// More distinct authors wrote markers than the run reads.
    #[error(
        "{authors} users other than the token's wrote assent markers on this merge request, more than the {MAX_MARKER_AUTHORS} assent reads: it cannot tell a previous bot's artifacts from pasted markers, so nothing was written. Delete the pasted markers' notes, then run again"
    )]
    TooManyAuthors {
        /// How many distinct authors.
        authors: usize,
    },
    /// A marker's author could not be shown to be a person or a bot.
    #[error(
        "user {id} wrote assent markers on this merge request and GitLab does not say whether it is a bot ({why}), so assent cannot tell whether they are a previous bot's artifacts: nothing was written. Check that the token can read users (GET /users/{id}), then run again"
    )]
    UnknownAuthor {
        /// The user id.
        id: u64,
        /// What GitLab answered.
        why: String,
    },
}

fn usernames(previous: &[(Option<String>, u64)]) -> Vec<String> {
    previous
        .iter()
        .map(|(name, id)| {
            name.clone()
                .unwrap_or_else(|| format!("<username of user {id}>"))
        })
        .collect()
}

fn named_users(previous: &[(Option<String>, u64)]) -> String {
    previous
        .iter()
        .map(|(name, id)| match name {
            Some(name) => format!("{name} (id {id})"),
            None => format!("user id {id}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whose notes in `listing` are artifacts: each foreign marker author's account read once
/// through `read` (the caller's port; its `Err` is a failure the caller propagates), at most
/// [`MAX_MARKER_AUTHORS`] of them: past that nothing is read and the answer is
/// [`IdentityRefusal::TooManyAuthors`]. Then [`decide_owners`]. The one order of reads for
/// `assent run` and `assent doctor`.
pub fn owners_reading<E>(
    listing: &[ListedDiscussion],
    bot: u64,
    adopted_names: &[String],
    mut read: impl FnMut(u64) -> Result<Result<Option<Account>, String>, E>,
) -> Result<Result<Owners, IdentityRefusal>, E> {
    let authors = foreign_marker_authors(listing, bot);
    if authors.len() > MAX_MARKER_AUTHORS {
        return Ok(Err(IdentityRefusal::TooManyAuthors {
            authors: authors.len(),
        }));
    }
    let mut accounts = Vec::with_capacity(authors.len());
    for id in authors {
        accounts.push(MarkerAuthor {
            id,
            account: read(id)?,
        });
    }
    Ok(decide_owners(bot, &accounts, adopted_names))
}

/// Decides whose notes are artifacts from the foreign marker authors' accounts and the
/// usernames the operator adopted (see the module docs). Pure: the accounts are read by the
/// caller.
pub fn decide_owners(
    bot: u64,
    authors: &[MarkerAuthor],
    adopted_names: &[String],
) -> Result<Owners, IdentityRefusal> {
    if authors.len() > MAX_MARKER_AUTHORS {
        return Err(IdentityRefusal::TooManyAuthors {
            authors: authors.len(),
        });
    }
    let mut owners = Owners::only(bot);
    let mut previous = Vec::new();
    for author in authors {
        let account = match &author.account {
            Ok(Some(account)) => account,
            Ok(None) => {
                return Err(IdentityRefusal::UnknownAuthor {
                    id: author.id,
                    why: "GitLab does not show the user to the token (404)".to_owned(),
                });
            }
            Err(why) => {
                return Err(IdentityRefusal::UnknownAuthor {
                    id: author.id,
                    why: why.clone(),
                });
            }
        };
        let adopted = account
            .username
            .as_ref()
            .is_some_and(|u| adopted_names.contains(u));
        match account.bot {
            Some(false) if adopted => {
                return Err(IdentityRefusal::NamedPerson {
                    username: account.username.clone().unwrap_or_default(),
                    id: author.id,
                });
            }
            Some(false) => {}
            Some(true) if adopted => {
                owners.adopted.insert(author.id);
            }
            Some(true) => previous.push((account.username.clone(), author.id)),
            None => {
                return Err(IdentityRefusal::UnknownAuthor {
                    id: author.id,
                    why: "GitLab's answer has no `bot` field".to_owned(),
                });
            }
        }
    }
    if previous.is_empty() {
        Ok(owners)
    } else {
        Err(IdentityRefusal::PreviousBot { previous })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ACTIVE_STATE;
    use crate::model::ListedNote;

    fn account(name: &str, bot: Option<bool>) -> Result<Option<Account>, String> {
        Ok(Some(Account {
            bot,
            state: Some(ACTIVE_STATE.to_owned()),
            username: Some(name.to_owned()),
        }))
    }

    fn author(id: u64, name: &str, bot: Option<bool>) -> MarkerAuthor {
        MarkerAuthor {
            id,
            account: account(name, bot),
        }
    }

    fn note(id: u64, author_id: u64, body: &str, system: bool) -> ListedDiscussion {
        ListedDiscussion {
            id: format!("{id:040x}"),
            individual_note: false,
            notes: vec![ListedNote {
                id,
                author_id,
                system,
                resolvable: true,
                resolved: false,
                resolved_by: None,
                resolved_at: None,
                diff_note: false,
                body: body.to_owned(),
                created_at: None,
                updated_at: None,
            }],
        }
    }

    #[test]
    fn foreign_markers_are_first_notes_with_the_prefix_by_someone_else() {
        let listing = [
            note(1, 1, "<!-- assent:marker {} -->\nx", false),
            note(2, 7, "<!-- assent:marker {broken -->", false),
            note(3, 8, "no marker\n<!-- assent:marker {} -->", false),
            note(4, 9, "<!-- assent:marker {} -->", true),
            note(5, 7, "<!-- assent:marker {} -->", false),
        ];
        assert_eq!(foreign_marker_authors(&listing, 1), BTreeSet::from([7]));
    }

    #[test]
    fn a_persons_marker_changes_nothing() {
        let owners = decide_owners(1, &[author(7, "mallory", Some(false))], &[]).unwrap();
        assert_eq!(owners, Owners::only(1));
    }

    #[test]
    fn another_bots_marker_stops_the_run_naming_it_and_the_fix() {
        let err =
            decide_owners(1, &[author(9, "project_42_bot_old", Some(true))], &[]).unwrap_err();
        assert_eq!(
            err,
            IdentityRefusal::PreviousBot {
                previous: vec![(Some("project_42_bot_old".into()), 9)]
            }
        );
        let text = err.to_string();
        for part in [
            "project_42_bot_old (id 9)",
            "duplicate every thread",
            "--previous-bot-user project_42_bot_old",
            "ASSENT_PREVIOUS_BOT_USERS=project_42_bot_old",
            "rotation API",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }

    #[test]
    fn an_adopted_bot_becomes_an_owner() {
        let owners = decide_owners(
            1,
            &[
                author(9, "old", Some(true)),
                author(7, "mallory", Some(false)),
            ],
            &["old".to_owned()],
        )
        .unwrap();
        assert_eq!(owners.adopted, BTreeSet::from([9]));
        assert!(owners.owns(1) && owners.owns(9) && !owners.owns(7));
    }

    #[test]
    fn an_adopted_person_is_refused() {
        let err = decide_owners(
            1,
            &[author(7, "mallory", Some(false))],
            &["mallory".to_owned()],
        )
        .unwrap_err();
        assert_eq!(
            err,
            IdentityRefusal::NamedPerson {
                username: "mallory".into(),
                id: 7
            }
        );
        assert!(err.to_string().contains("never read as assent's own"));
    }

    #[test]
    fn unreadable_authors_and_too_many_authors_fail_closed() {
        for account in [Ok(None), Err("403".to_owned()), account("x", None)] {
            let err = decide_owners(1, &[MarkerAuthor { id: 5, account }], &[]).unwrap_err();
            assert!(
                matches!(err, IdentityRefusal::UnknownAuthor { id: 5, .. }),
                "{err}"
            );
        }
        let many: Vec<MarkerAuthor> = (10..=10 + MAX_MARKER_AUTHORS as u64)
            .map(|id| author(id, "p", Some(false)))
            .collect();
        assert_eq!(
            decide_owners(1, &many, &[]).unwrap_err(),
            IdentityRefusal::TooManyAuthors {
                authors: MAX_MARKER_AUTHORS + 1
            }
        );
    }

    /// The reads are the caller's: past the bound none is made, and a failed read is the
    /// caller's failure, not a decision.
    #[test]
    fn owners_reading_reads_each_author_once_and_none_past_the_bound() {
        let marker = format!("{MARKER_PREFIX} {{}} -->");
        let listing = |authors: std::ops::Range<u64>| -> Vec<ListedDiscussion> {
            authors.map(|a| note(a, a, &marker, false)).collect()
        };
        let mut reads = Vec::new();
        let owners = owners_reading(&listing(10..13), 1, &["old-bot".into()], |id| {
            reads.push(id);
            Ok::<_, ()>(account(
                if id == 10 { "old-bot" } else { "x" },
                Some(id == 10),
            ))
        });
        assert_eq!(reads, vec![10, 11, 12]);
        assert_eq!(
            owners,
            Ok(Ok(Owners {
                bot: 1,
                adopted: [10].into()
            }))
        );

        let mut reads = 0;
        let many = 10..10 + MAX_MARKER_AUTHORS as u64 + 1;
        let owners = owners_reading(&listing(many), 1, &[], |_| {
            reads += 1;
            Ok::<_, ()>(account("x", Some(false)))
        });
        assert_eq!(reads, 0);
        assert!(matches!(
            owners,
            Ok(Err(IdentityRefusal::TooManyAuthors { .. }))
        ));

        let failed = owners_reading(&listing(10..12), 1, &[], |_| Err::<_, &str>("down"));
        assert_eq!(failed, Err("down"));
    }
}
