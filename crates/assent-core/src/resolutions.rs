//! The resolution fingerprint (docs/contract.md#decision-freshness): one digest of who resolved which of the bot's
//! finding threads, as a listing shows them.
//!
//! The run writes it into the summary's gate line ([`crate::marker::GateLine`]) from
//! the listing the summary was rendered from; `assent sweep` computes it again from the
//! listing it reads. Both call [`resolution_fingerprint`] on an [`Inventory`], so they agree
//! whenever the threads did not change in between, and differ as soon as anyone resolves or
//! re-opens one. That is what lets the sweep heal a `REVIEW` summary once per change of
//! resolutions and never again for the same state: a resolution that does not count as
//! assent leaves the run's decision at `REVIEW` but records the new fingerprint, so the next
//! sweep sees nothing new.

use serde_json::{Value, json};

use crate::canonical_json;
use crate::inventory::Inventory;
use crate::model::Occurrence;

/// `sha256:` of the canonical JSON of `[[forge_id, resolved, resolved_by id or null], …]` over
/// the bot's finding threads, by ascending forge id.
///
/// `resolved` is in the tuple because a resolved thread whose resolver the forge did not
/// report would otherwise look like an unresolved one. Usernames are left out: they can be
/// renamed, ids cannot. Summaries and other notes are left out: they are not resolutions.
/// Only the inventory's content counts, never the listing's order.
pub fn resolution_fingerprint(inventory: &Inventory) -> Occurrence {
    let mut threads: Vec<(u64, bool, Option<u64>)> = inventory
        .threads
        .iter()
        .map(|t| (t.forge_id, t.resolved, t.resolved_by.as_ref().map(|u| u.id)))
        .collect();
    threads.sort_unstable();
    let doc = Value::Array(
        threads
            .into_iter()
            .map(|(forge_id, resolved, by)| json!([forge_id, resolved, by]))
            .collect(),
    );
    Occurrence::digest(canonical_json::to_string(&doc).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::ThreadArtifact;
    use crate::model::{Slot, UserRef};

    fn thread(forge_id: u64, resolved_by: Option<(u64, &str)>) -> ThreadArtifact {
        ThreadArtifact {
            forge_id,
            discussion_id: format!("{forge_id:040x}"),
            slot: Slot {
                rule: "r".into(),
                subject: format!("f#/{forge_id}"),
            },
            occurrence: Occurrence::digest(&forge_id.to_be_bytes()),
            resolved: resolved_by.is_some(),
            resolved_by_bot: false,
            edited: false,
            diff_note: false,
            resolved_by: resolved_by.map(|(id, username)| UserRef {
                id,
                username: username.into(),
            }),
            bot_replies: vec![],
        }
    }

    fn of(threads: Vec<ThreadArtifact>) -> Occurrence {
        resolution_fingerprint(&Inventory {
            threads,
            ..Inventory::default()
        })
    }

    #[test]
    fn the_fingerprint_is_the_digest_of_the_documented_canonical_json() {
        let got = of(vec![thread(12, Some((5, "alice"))), thread(10, None)]);
        assert_eq!(got, Occurrence::digest(br#"[[10,false,null],[12,true,5]]"#));
        assert_eq!(of(vec![]), Occurrence::digest(b"[]"));
    }

    #[test]
    fn it_ignores_order_and_usernames() {
        let a = of(vec![thread(10, None), thread(12, Some((5, "alice")))]);
        let b = of(vec![
            thread(12, Some((5, "alice-renamed"))),
            thread(10, None),
        ]);
        assert_eq!(a, b);
    }

    #[test]
    fn every_change_of_resolution_changes_it() {
        let base = of(vec![thread(10, None), thread(12, None)]);
        let resolved_by_author = of(vec![thread(10, Some((5, "author"))), thread(12, None)]);
        let resolved_by_reviewer = of(vec![thread(10, Some((6, "reviewer"))), thread(12, None)]);
        let other_thread = of(vec![thread(10, None), thread(12, Some((5, "author")))]);
        let mut unknown_resolver = thread(10, None);
        unknown_resolver.resolved = true;
        let unknown = of(vec![unknown_resolver, thread(12, None)]);
        let all = [
            &base,
            &resolved_by_author,
            &resolved_by_reviewer,
            &other_thread,
            &unknown,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // A new thread changes it too (a run posted a challenge since).
        assert_ne!(base, of(vec![thread(10, None)]));
    }
}
