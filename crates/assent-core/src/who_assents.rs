//! Who may assent: whether a resolved challenge thread counts as a human's assent (docs/contract.md#who-may-assent).
//!
//! GitLab lets anyone with Developer access resolve any thread, including the merge request's
//! author, so "resolved" alone proves nothing. A resolution counts only when the user who
//! resolved the thread (its first note's `resolved_by`) is neither the MR's author nor the bot,
//! and, when the rule or its policy file says `assenters:`, is one of the named users or holds
//! at least the named role in the project. Anything that cannot be shown (an unknown resolver,
//! an unknown author, a role that could not be read) does not count: the gate fails closed.
//!
//! Nor does a resolution by an account that is not a person acting now: a user GitLab marks
//! as a bot (`bot` on `GET /users/:id`, GitLab's `User#bot?`: project and group access
//! tokens' users, service accounts and GitLab's own bots; `app/models/concerns/has_user_type.rb`),
//! or one whose `state` is not `active` (blocked, deactivated, banned, awaiting approval).
//! Each resolver's account is read once per run ([`accounts_to_read`]); an account that
//! could not be read does not count. `assenters` admits a bot only by naming its username in
//! `users`: a `min_role` never does, however high the bot's role (a project access token is
//! created with the role its creator picks). No naming admits an account that is not active.
//!
//! A resolution that does not count is never re-opened by assent (that would fight a human);
//! the slot keeps gating and the summary says who resolved it and why it does not count.
//!
//! One project setting makes a resolution unattributable: "Automatically resolve threads
//! that become outdated" (`resolve_outdated_diff_discussions`). While it is on, a push that
//! changes a DiffNote's line resolves its thread with `resolved_by` set to the pusher, and
//! GitLab's REST answer does not say whether a push or a person resolved it; so no DiffNote
//! challenge's resolution counts while the setting is on.

use std::collections::{BTreeMap, BTreeSet};

use crate::inventory::{Inventory, ThreadArtifact};
use crate::model::{ACTIVE_STATE, Account, Assenters, DesiredState, Effect, Role, Slot, UserRef};

/// What the run knows about the people involved, read from the forge before deciding.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AssentFacts {
    /// The token's own user: its resolutions are housekeeping, never assent.
    pub bot_id: u64,
    /// The MR author's user id; `None` when the forge did not say.
    pub author_id: Option<u64>,
    /// Project roles of resolvers, for rules that name `min_role`: `None` means "not a
    /// member" (or below Guest). A resolver missing from the map has not been looked up.
    pub roles: BTreeMap<u64, Option<Role>>,
    /// The project resolves outdated diff threads on push (GitLab's
    /// `resolve_outdated_diff_discussions`), or the forge did not say that it does not.
    pub push_resolves_diff_threads: bool,
    /// Resolvers' accounts, as read: `Err` says why one could not be read. A resolver
    /// missing from the map has not been looked up, and does not count.
    pub accounts: BTreeMap<u64, Result<Account, String>>,
}

/// Why a resolution does not count as assent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCounted {
    /// The MR's author resolved their own challenge.
    ByAuthor,
    /// The forge did not say who resolved the thread.
    UnknownResolver,
    /// The forge did not say who authored the MR, so the resolver cannot be shown not to be
    /// the author.
    UnknownAuthor,
    /// The rule names who may assent, and the resolver is neither listed nor of the role.
    NotAnAssenter {
        /// The rule's narrowing.
        assenters: Assenters,
        /// The resolver's role, when it was read.
        role: Option<Role>,
    },
    /// A change to the policies (`assent/self-edit`) resolved by someone who is not a policy
    /// owner (docs/policies.md, "Changing policies").
    NotAPolicyOwner {
        /// The policy owners.
        owners: Assenters,
        /// The resolver's role, when it was read.
        role: Option<Role>,
    },
    /// The rule requires a role and the resolver's role was not read.
    RoleUnknown,
    /// A DiffNote thread in a project whose pushes resolve outdated diff threads: GitLab
    /// records the pusher as the resolver, so the resolution may be a push's, not assent.
    ResolvableByPush,
    /// GitLab marks the resolver as a bot, and the rule does not name it.
    BotUser,
    /// The resolver's account is not active (its GitLab `state`).
    InactiveAccount {
        /// The state GitLab gives.
        state: String,
    },
    /// The resolver's account could not be read, or GitLab's answer did not say whether it
    /// is a bot and active: why.
    AccountUnknown(String),
}

impl NotCounted {
    /// One sentence for the summary: why the resolution does not count.
    pub fn explain(&self) -> String {
        match self {
            NotCounted::ByAuthor => {
                "the merge request's author cannot assent to their own change".to_owned()
            }
            NotCounted::UnknownResolver => "GitLab did not say who resolved it".to_owned(),
            NotCounted::UnknownAuthor => {
                "GitLab did not say who authored the merge request".to_owned()
            }
            NotCounted::NotAnAssenter { assenters, role } => {
                let (allowed, held) = allowed_and_held(assenters, *role);
                format!("this rule's assent needs {allowed}; the resolver is {held}")
            }
            NotCounted::NotAPolicyOwner { owners, role } => {
                let (allowed, held) = allowed_and_held(owners, *role);
                format!(
                    "a change to the policies needs a policy owner's assent ({allowed}); the resolver is {held}"
                )
            }
            NotCounted::RoleUnknown => "the resolver's project role could not be read".to_owned(),
            NotCounted::BotUser => "GitLab marks the resolver as a bot (a project or group access token's user, a service account or one of GitLab's own bots), and a bot's resolution is never assent unless the rule's `assenters` names it".to_owned(),
            NotCounted::InactiveAccount { state } => format!(
                "the resolver's GitLab account is {state}, not active, so their resolution is not assent; an active policy owner or reviewer resolves it again"
            ),
            NotCounted::AccountUnknown(why) => format!(
                "assent could not tell whether the resolver is an active person and not a bot: {why}"
            ),
            NotCounted::ResolvableByPush => "the project resolves outdated diff threads automatically, so a push may have resolved it in the resolver's name; turn off Settings → Merge requests → \"Automatically resolve threads that become outdated\" (`resolve_outdated_diff_discussions`) and resolve it again".to_owned(),
        }
    }
}

/// Who `assenters` admits, and what the resolver of role `role` is, in words.
fn allowed_and_held(assenters: &Assenters, role: Option<Role>) -> (String, String) {
    let mut allowed = Vec::new();
    if !assenters.users.is_empty() {
        allowed.push(format!("one of {}", assenters.users.join(", ")));
    }
    if let Some(min) = assenters.min_role {
        allowed.push(format!("a {min} or above"));
    }
    let held = match role {
        Some(r) => format!("a {r}"),
        None if assenters.min_role.is_some() => "not a project member".to_owned(),
        None => "not listed".to_owned(),
    };
    (allowed.join(" or "), held)
}

/// Whether a desired finding's thread carries assent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assent {
    /// The thread is open, or not posted yet.
    Open,
    /// Resolved by someone whose resolution counts.
    Given {
        /// Who assented.
        by: UserRef,
    },
    /// Resolved, but the resolution does not count: the slot keeps gating.
    NotCounted {
        /// Who resolved it, when known.
        by: Option<UserRef>,
        /// Why it does not count.
        reason: NotCounted,
    },
}

impl Assent {
    /// True only for a resolution that counts.
    pub fn is_given(&self) -> bool {
        matches!(self, Assent::Given { .. })
    }
}

/// Judges one resolved thread of a challenge finding under `assenters` (the rule's, or its
/// policy file's; `None`: the default, anyone but the author and the bot).
pub fn judge(
    thread: &ThreadArtifact,
    assenters: Option<&Assenters>,
    facts: &AssentFacts,
) -> Assent {
    if !thread.resolved {
        return Assent::Open;
    }
    let Some(by) = thread.resolved_by.clone() else {
        return Assent::NotCounted {
            by: None,
            reason: NotCounted::UnknownResolver,
        };
    };
    let not_counted = |reason| Assent::NotCounted {
        by: Some(by.clone()),
        reason,
    };
    let Some(author) = facts.author_id else {
        return not_counted(NotCounted::UnknownAuthor);
    };
    if by.id == author {
        return not_counted(NotCounted::ByAuthor);
    }
    if by.id == facts.bot_id {
        // The bot's own resolutions retire a thread before it gets here (review_state);
        // should one reach this point, it is still never assent.
        return not_counted(NotCounted::UnknownResolver);
    }
    if thread.diff_note && facts.push_resolves_diff_threads {
        return not_counted(NotCounted::ResolvableByPush);
    }
    let named = assenters.is_some_and(|a| a.users.contains(&by.username));
    if let Err(reason) = account_counts(facts.accounts.get(&by.id), named) {
        return not_counted(reason);
    }
    let Some(assenters) = assenters else {
        return Assent::Given { by };
    };
    if named {
        return Assent::Given { by };
    }
    let role = match assenters.min_role {
        None => None,
        Some(min) => match facts.roles.get(&by.id) {
            None => return not_counted(NotCounted::RoleUnknown),
            Some(Some(role)) if *role >= min => return Assent::Given { by },
            Some(role) => *role,
        },
    };
    not_counted(NotCounted::NotAnAssenter {
        assenters: assenters.clone(),
        role,
    })
}

/// Whether a resolver's account can assent: read, active, and not a bot unless `named` (the
/// rule's `assenters` names them).
fn account_counts(
    account: Option<&Result<Account, String>>,
    named: bool,
) -> Result<(), NotCounted> {
    let account = match account {
        None => {
            return Err(NotCounted::AccountUnknown(
                "their account was not read".to_owned(),
            ));
        }
        Some(Err(why)) => return Err(NotCounted::AccountUnknown(why.clone())),
        Some(Ok(account)) => account,
    };
    match account.state.as_deref() {
        None => {
            return Err(NotCounted::AccountUnknown(
                "GitLab's answer for the user has no `state`".to_owned(),
            ));
        }
        Some(ACTIVE_STATE) => {}
        Some(state) => {
            return Err(NotCounted::InactiveAccount {
                state: state.to_owned(),
            });
        }
    }
    match account.bot {
        Some(false) => Ok(()),
        Some(true) if named => Ok(()),
        Some(true) => Err(NotCounted::BotUser),
        None if named => Ok(()),
        None => Err(NotCounted::AccountUnknown(
            "GitLab's answer for the user has no `bot` field".to_owned(),
        )),
    }
}

/// The resolvers of the bot threads in `inventory` whose slot is a desired challenge, each
/// with its thread's slot: neither the bot nor the MR's author, whose resolutions never count.
fn challenge_resolvers<'a>(
    desired: &'a DesiredState,
    inventory: &'a Inventory,
    facts: &'a AssentFacts,
) -> impl Iterator<Item = (&'a Slot, u64)> {
    inventory
        .threads
        .iter()
        .filter(|t| t.resolved)
        .filter_map(move |t| {
            let by = t.resolved_by.as_ref()?;
            let finding = desired.get(&t.slot)?;
            (finding.effect == Effect::Challenge
                && by.id != facts.bot_id
                && Some(by.id) != facts.author_id)
                .then_some((&t.slot, by.id))
        })
}

/// The resolvers whose accounts the run must read before deciding: resolvers of bot threads
/// in `inventory` whose slot is a desired challenge, minus the author, the bot and those
/// already in `facts`. One read per distinct resolver, whatever the number of threads.
pub fn accounts_to_read(
    desired: &DesiredState,
    inventory: &Inventory,
    facts: &AssentFacts,
) -> BTreeSet<u64> {
    challenge_resolvers(desired, inventory, facts)
        .map(|(_, id)| id)
        .filter(|id| !facts.accounts.contains_key(id))
        .collect()
}

/// The resolvers whose project role the run must read before deciding: resolvers of bot
/// threads in `inventory` whose slot's rule names a `min_role`, minus those already in
/// `facts`. Reading only these keeps a run without role rules at zero extra requests.
pub fn roles_to_read(
    desired: &DesiredState,
    inventory: &Inventory,
    facts: &AssentFacts,
) -> BTreeSet<u64> {
    challenge_resolvers(desired, inventory, facts)
        .filter(|(slot, _)| {
            desired
                .assenters_of(&slot.rule)
                .is_some_and(|a| a.min_role.is_some())
        })
        .map(|(_, id)| id)
        .filter(|id| !facts.roles.contains_key(id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::thread;

    const BOT: u64 = 1;
    const AUTHOR: u64 = 3;

    fn user(id: u64, name: &str) -> UserRef {
        UserRef {
            id,
            username: name.to_owned(),
        }
    }

    fn resolved_by(by: Option<UserRef>) -> ThreadArtifact {
        let mut t = thread(1, "r", true);
        t.resolved_by = by;
        t
    }

    fn facts() -> AssentFacts {
        AssentFacts {
            bot_id: BOT,
            author_id: Some(AUTHOR),
            roles: BTreeMap::new(),
            push_resolves_diff_threads: false,
            accounts: (5..=11)
                .map(|id| (id, Ok(Account::active_human())))
                .collect(),
        }
    }

    #[test]
    fn a_diff_thread_resolution_does_not_count_while_pushes_resolve_diff_threads() {
        let mut t = resolved_by(Some(user(7, "maintainer")));
        t.diff_note = true;
        let pushing = AssentFacts {
            push_resolves_diff_threads: true,
            ..facts()
        };
        assert_eq!(
            judge(&t, None, &pushing),
            Assent::NotCounted {
                by: Some(user(7, "maintainer")),
                reason: NotCounted::ResolvableByPush
            }
        );
        // Nor when the policy names the resolver: a push resolves in anyone's name.
        let listed = Assenters {
            users: vec!["maintainer".into()],
            min_role: None,
        };
        assert!(!judge(&t, Some(&listed), &pushing).is_given());
        // With the setting off, the same resolution counts; a general thread always does.
        assert!(judge(&t, None, &facts()).is_given());
        t.diff_note = false;
        assert!(judge(&t, None, &pushing).is_given());
        let why = NotCounted::ResolvableByPush.explain();
        assert!(
            why.contains("Automatically resolve threads that become outdated"),
            "{why}"
        );
    }

    #[test]
    fn bots_and_accounts_that_are_not_active_never_assent() {
        let t = resolved_by(Some(user(7, "project_42_bot_1")));
        let with = |account: Result<Account, String>| AssentFacts {
            accounts: BTreeMap::from([(7, account)]),
            ..facts()
        };
        let bot = Account {
            bot: Some(true),
            ..Account::active_human()
        };
        let reason = |judged: Assent| match judged {
            Assent::NotCounted { reason, .. } => reason,
            other => panic!("counted: {other:?}"),
        };
        assert_eq!(
            reason(judge(&t, None, &with(Ok(bot.clone())))),
            NotCounted::BotUser
        );
        // A role never opts a bot in, however high.
        let by_role = Assenters {
            users: vec![],
            min_role: Some(Role::Developer),
        };
        let mut high = with(Ok(bot.clone()));
        high.roles.insert(7, Some(Role::Owner));
        assert_eq!(
            reason(judge(&t, Some(&by_role), &high)),
            NotCounted::BotUser
        );
        // Naming it does.
        let named = Assenters {
            users: vec!["project_42_bot_1".into()],
            min_role: None,
        };
        assert!(judge(&t, Some(&named), &with(Ok(bot))).is_given());
        for state in ["blocked", "deactivated", "banned", "ldap_blocked", ""] {
            let inactive = with(Ok(Account {
                state: Some(state.into()),
                ..Account::active_human()
            }));
            assert_eq!(
                reason(judge(&t, None, &inactive)),
                NotCounted::InactiveAccount {
                    state: state.into()
                },
                "{state}"
            );
            // Naming an account that is not active does not make it count.
            assert!(!judge(&t, Some(&named), &inactive).is_given(), "{state}");
        }
        // Not read, unreadable, or a field left out: never counts.
        let unread = AssentFacts {
            accounts: BTreeMap::new(),
            ..facts()
        };
        assert!(matches!(
            reason(judge(&t, None, &unread)),
            NotCounted::AccountUnknown(_)
        ));
        assert_eq!(
            reason(judge(&t, None, &with(Err("404 User Not Found".into())))),
            NotCounted::AccountUnknown("404 User Not Found".into())
        );
        for account in [
            Account {
                bot: None,
                ..Account::active_human()
            },
            Account {
                state: None,
                ..Account::active_human()
            },
        ] {
            assert!(matches!(
                reason(judge(&t, None, &with(Ok(account)))),
                NotCounted::AccountUnknown(_)
            ));
        }
        assert!(judge(&t, None, &with(Ok(Account::active_human()))).is_given());
        assert!(NotCounted::BotUser.explain().contains("bot"));
        assert!(
            NotCounted::InactiveAccount {
                state: "blocked".into()
            }
            .explain()
            .contains("is blocked")
        );
    }

    #[test]
    fn each_resolver_account_is_read_once_and_never_the_authors_or_the_bots() {
        use crate::model::{Finding, Occurrence, Slot};
        let finding = |rule: &str, effect| Finding {
            slot: Slot {
                rule: rule.into(),
                subject: "s".into(),
            },
            effect,
            occurrence: Occurrence::digest(rule.as_bytes()),
            message: String::new(),
        };
        let desired = DesiredState::new(vec![
            finding("a", Effect::Challenge),
            finding("b", Effect::Challenge),
            finding("c", Effect::Comment),
        ]);
        let mut threads = Vec::new();
        for (id, rule, by) in [
            (1, "a", 20),
            (2, "b", 20),
            (3, "c", 21),
            (4, "a", AUTHOR),
            (5, "b", BOT),
        ] {
            let mut t = thread(id, rule, true);
            t.slot.subject = "s".into();
            t.resolved_by = Some(user(by, "u"));
            threads.push(t);
        }
        let inventory = Inventory {
            threads,
            ..Inventory::default()
        };
        let mut f = facts();
        f.accounts.clear();
        assert_eq!(
            accounts_to_read(&desired, &inventory, &f),
            BTreeSet::from([20])
        );
        f.accounts.insert(20, Ok(Account::active_human()));
        assert!(accounts_to_read(&desired, &inventory, &f).is_empty());
    }

    #[test]
    fn an_open_thread_is_open() {
        let t = thread(1, "r", false);
        assert_eq!(judge(&t, None, &facts()), Assent::Open);
    }

    #[test]
    fn the_author_never_assents_to_their_own_change() {
        let t = resolved_by(Some(user(AUTHOR, "author")));
        let got = judge(&t, None, &facts());
        assert_eq!(
            got,
            Assent::NotCounted {
                by: Some(user(AUTHOR, "author")),
                reason: NotCounted::ByAuthor
            }
        );
        // Even when the policy lists the author by name: being the author wins.
        let listed = Assenters {
            users: vec!["author".into()],
            min_role: None,
        };
        assert!(!judge(&t, Some(&listed), &facts()).is_given());
    }

    #[test]
    fn anyone_else_assents_by_default() {
        let t = resolved_by(Some(user(7, "reviewer")));
        assert_eq!(
            judge(&t, None, &facts()),
            Assent::Given {
                by: user(7, "reviewer")
            }
        );
    }

    #[test]
    fn unknown_resolver_or_author_fails_closed() {
        let t = resolved_by(None);
        assert_eq!(
            judge(&t, None, &facts()),
            Assent::NotCounted {
                by: None,
                reason: NotCounted::UnknownResolver
            }
        );
        let t = resolved_by(Some(user(7, "reviewer")));
        let no_author = AssentFacts {
            author_id: None,
            ..facts()
        };
        assert!(matches!(
            judge(&t, None, &no_author),
            Assent::NotCounted {
                reason: NotCounted::UnknownAuthor,
                ..
            }
        ));
    }

    #[test]
    fn the_bot_never_assents() {
        let t = resolved_by(Some(user(BOT, "assent-bot")));
        assert!(!judge(&t, None, &facts()).is_given());
    }

    #[test]
    fn named_users_and_minimum_role_narrow_who_counts() {
        let assenters = Assenters {
            users: vec!["dba".into()],
            min_role: Some(Role::Maintainer),
        };
        let mut f = facts();
        f.roles.insert(7, Some(Role::Developer));
        f.roles.insert(8, Some(Role::Maintainer));
        f.roles.insert(9, None);
        f.roles.insert(10, Some(Role::Owner));
        let judged =
            |id, name: &str| judge(&resolved_by(Some(user(id, name))), Some(&assenters), &f);
        assert!(judged(8, "m").is_given(), "maintainer");
        assert!(judged(10, "o").is_given(), "owner is above maintainer");
        assert!(
            judged(7, "dba").is_given(),
            "listed by name whatever the role"
        );
        assert_eq!(
            judged(7, "dev"),
            Assent::NotCounted {
                by: Some(user(7, "dev")),
                reason: NotCounted::NotAnAssenter {
                    assenters: assenters.clone(),
                    role: Some(Role::Developer)
                }
            }
        );
        assert!(matches!(
            judged(9, "outsider"),
            Assent::NotCounted {
                reason: NotCounted::NotAnAssenter { role: None, .. },
                ..
            }
        ));
        assert_eq!(
            judged(11, "unread"),
            Assent::NotCounted {
                by: Some(user(11, "unread")),
                reason: NotCounted::RoleUnknown
            }
        );
    }

    #[test]
    fn usernames_compare_exactly() {
        let assenters = Assenters {
            users: vec!["dba".into()],
            min_role: None,
        };
        for name in ["DBA", "dba ", "@dba", "dba2"] {
            let t = resolved_by(Some(user(7, name)));
            assert!(
                !judge(&t, Some(&assenters), &facts()).is_given(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn access_levels_map_to_roles() {
        assert_eq!(Role::from_access_level(0), None);
        assert_eq!(Role::from_access_level(5), None);
        assert_eq!(Role::from_access_level(10), Some(Role::Guest));
        assert_eq!(Role::from_access_level(30), Some(Role::Developer));
        assert_eq!(Role::from_access_level(40), Some(Role::Maintainer));
        assert_eq!(Role::from_access_level(50), Some(Role::Owner));
        assert_eq!(Role::from_access_level(60), Some(Role::Owner));
        assert!(Role::Maintainer > Role::Developer);
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("Maintainer"), None);
    }

    #[test]
    fn explanations_name_the_cause() {
        assert!(NotCounted::ByAuthor.explain().contains("author"));
        let e = NotCounted::NotAnAssenter {
            assenters: Assenters {
                users: vec!["a".into(), "b".into()],
                min_role: Some(Role::Maintainer),
            },
            role: Some(Role::Developer),
        }
        .explain();
        assert!(e.contains("one of a, b"), "{e}");
        assert!(e.contains("maintainer or above"), "{e}");
        assert!(e.contains("a developer"), "{e}");
        let e = NotCounted::NotAPolicyOwner {
            owners: Assenters::default_policy_owners(),
            role: Some(Role::Developer),
        }
        .explain();
        assert_eq!(
            e,
            "a change to the policies needs a policy owner's assent (a maintainer or above); the resolver is a developer"
        );
    }
}
