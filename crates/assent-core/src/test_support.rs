//! Builders shared by the core's unit tests: a finding and its thread, keyed by rule alone.

use std::collections::BTreeMap;

use crate::inventory::ThreadArtifact;
use crate::model::Account;
use crate::model::{Effect, Finding, Occurrence, Slot, UserRef};
use crate::who_assents::AssentFacts;

/// The bot's user id in core tests.
pub(crate) const BOT: u64 = 1;
/// The MR author's user id in core tests.
pub(crate) const AUTHOR: u64 = 3;
/// A reviewer (neither bot nor author): the default resolver of [`thread`].
pub(crate) const REVIEWER: u64 = 7;

/// Rule `rule` on subject `"s"`.
fn slot(rule: &str) -> Slot {
    Slot {
        rule: rule.into(),
        subject: "s".into(),
    }
}

/// A finding of `rule` whose occurrence is the rule's own name (one occurrence per rule).
pub(crate) fn finding(rule: &str, effect: Effect) -> Finding {
    Finding {
        slot: slot(rule),
        effect,
        occurrence: Occurrence::digest(rule.as_bytes()),
        message: String::new(),
    }
}

/// A thread assent posted for [`finding`]`(rule, _)`, with forge id `id`.
pub(crate) fn thread(id: u64, rule: &str, resolved: bool) -> ThreadArtifact {
    ThreadArtifact {
        forge_id: id,
        discussion_id: String::new(),
        slot: slot(rule),
        occurrence: Occurrence::digest(rule.as_bytes()),
        resolved,
        resolved_by_bot: false,
        resolved_by: resolved.then(|| UserRef {
            id: REVIEWER,
            username: "reviewer".into(),
        }),
        edited: false,
        diff_note: false,
        bot_replies: Vec::new(),
    }
}

/// The people of core tests: bot [`BOT`], author [`AUTHOR`], reviewer [`REVIEWER`] (an
/// active person), no roles read.
pub(crate) fn facts() -> AssentFacts {
    AssentFacts {
        bot_id: BOT,
        author_id: Some(AUTHOR),
        roles: BTreeMap::new(),
        push_resolves_diff_threads: false,
        accounts: BTreeMap::from([(REVIEWER, Ok(Account::active_human()))]),
    }
}

/// Pins of a run judging `"1" * 40` against `"2" * 40` from base `"3" * 40`.
pub(crate) fn pins() -> crate::model::Pins {
    crate::model::Pins {
        source_sha: crate::commit_sha::CommitSha::parse(&"1".repeat(40)).unwrap(),
        target_sha: "2".repeat(40),
        base_sha: "3".repeat(40),
        policy_digest: String::new(),
        policy_project: None,
        policy_sha: None,
    }
}
