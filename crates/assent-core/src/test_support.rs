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

/// The SHA-1 of forty `digit`s: a commit SHA a test can tell apart at a glance.
pub(crate) fn sha(digit: char) -> crate::commit_sha::CommitSha {
    crate::commit_sha::CommitSha::parse(&digit.to_string().repeat(40)).expect("hex digit")
}

/// Pins of a run judging `"1" * 40` against `"2" * 40` from base `"3" * 40`.
pub(crate) fn pins() -> crate::model::Pins {
    crate::model::Pins {
        source_sha: sha('1'),
        target_sha: sha('2'),
        base_sha: sha('3'),
        policy_digest: "sha256:0".to_owned(),
        policy_project: None,
        policy_sha: None,
    }
}
