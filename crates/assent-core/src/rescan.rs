//! Step 9: does the forge, listed again after the writes, show what the plan wanted?
//!
//! Matching means: every write of the run took effect, there is exactly one summary (the
//! one the run wrote), each desired slot has one canonical thread of the current occurrence
//! and every other thread of that occurrence is resolved, no thread of an undesired slot or
//! of a stale occurrence is unresolved (whoever posted it, whenever), and nothing the run
//! resolved is unresolved again. A human resolving a thread in the meantime is not a
//! mismatch; a racing publisher's unresolved duplicate, or its thread of a slot this run
//! does not want, is, so the next run repairs it.

use std::collections::BTreeSet;

use crate::inventory::{Inventory, ThreadArtifact};
use crate::model::{DesiredState, Effect};
use crate::review_state::current_threads;

/// What the run's writes should have left behind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteRecord {
    /// The summary note the run wrote or kept.
    pub summary_note_id: Option<u64>,
    /// Forge ids of threads the run created.
    pub created: BTreeSet<u64>,
    /// Forge ids of threads the run resolved.
    pub resolved: BTreeSet<u64>,
    /// Note ids of summaries the run collapsed.
    pub collapsed: BTreeSet<u64>,
}

/// Compares a rescan with the desired state and the run's writes; returns every mismatch,
/// sorted, empty when the rescan matches.
pub fn verify_rescan(
    desired: &DesiredState,
    rescan: &Inventory,
    writes: &WriteRecord,
) -> Vec<String> {
    let mut mismatches = Vec::new();
    let summary_ids: Vec<u64> = rescan.summaries.iter().map(|s| s.note_id).collect();
    if let Some(open) = rescan
        .adopted_summaries
        .iter()
        .find(|s| s.open_thread && writes.resolved.contains(&s.note_id))
    {
        mismatches.push(format!(
            "a previous bot's summary note {} was resolved by this run but is an open thread",
            open.note_id
        ));
    }
    if let Some(open) = rescan
        .summaries
        .iter()
        .find(|s| s.open_thread.is_some() && writes.resolved.contains(&s.note_id))
    {
        mismatches.push(format!(
            "summary note {} was resolved by this run but is an open thread",
            open.note_id
        ));
    }
    match (summary_ids.as_slice(), writes.summary_note_id) {
        ([only], Some(expected)) if *only == expected => {}
        (ids, expected) => mismatches.push(format!(
            "expected exactly the summary note {} but the rescan shows {:?}",
            expected.map_or_else(|| "written by this run".to_owned(), |id| id.to_string()),
            ids
        )),
    }
    // The first current thread of each desired finding is canonical (inventory order is
    // ascending forge id); every later one is a duplicate. One pass over the threads.
    let mut canonical: Vec<Option<&ThreadArtifact>> = vec![None; desired.findings.len()];
    for (i, thread) in current_threads(desired, rescan) {
        match canonical[i] {
            None => canonical[i] = Some(thread),
            Some(first) if !thread.resolved => mismatches.push(format!(
                "thread {} duplicates thread {} and is unresolved",
                thread.forge_id, first.forge_id
            )),
            Some(_) => {}
        }
    }
    for (finding, canonical) in desired.findings.iter().zip(canonical) {
        match canonical {
            None => mismatches.push(format!(
                "no thread of the current occurrence for {}",
                finding.slot
            )),
            Some(canonical) => {
                if finding.effect == Effect::Comment && !canonical.resolved {
                    mismatches.push(format!(
                        "comment thread {} is unresolved",
                        canonical.forge_id
                    ));
                }
            }
        }
    }
    // Nothing the run does not want may stay open, whoever opened it and whenever: a thread
    // of an undesired slot, or of a stale occurrence, posted by a concurrent run between the
    // listing and this rescan (or after a "verified" edit, for the listing that follows it)
    // gates like any other until the next run resolves it.
    for thread in rescan.threads.iter().filter(|t| !t.resolved) {
        match desired.findings.iter().find(|f| f.slot == thread.slot) {
            None => mismatches.push(format!(
                "thread {} of {}, which is not desired, is unresolved",
                thread.forge_id, thread.slot
            )),
            Some(finding) if finding.occurrence != thread.occurrence => {
                mismatches.push(format!(
                    "thread {} of a stale occurrence of {} is unresolved",
                    thread.forge_id, thread.slot
                ));
            }
            Some(_) => {}
        }
    }
    let present: BTreeSet<u64> = rescan.threads.iter().map(|t| t.forge_id).collect();
    for id in writes.created.difference(&present) {
        mismatches.push(format!("created thread {id} is missing from the rescan"));
    }
    for thread in rescan
        .threads
        .iter()
        .filter(|t| writes.resolved.contains(&t.forge_id))
    {
        if !thread.resolved {
            mismatches.push(format!(
                "thread {} was resolved by this run but is unresolved",
                thread.forge_id
            ));
        }
    }
    for id in writes
        .collapsed
        .iter()
        .filter(|id| summary_ids.contains(id))
    {
        mismatches.push(format!(
            "summary note {id} was collapsed by this run but still carries a marker"
        ));
    }
    mismatches.sort();
    mismatches.dedup();
    mismatches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{SummaryArtifact, ThreadArtifact};
    use crate::marker::SummaryState;
    use crate::model::{Finding, Occurrence, Slot};
    use crate::test_support;

    fn slot() -> Slot {
        Slot {
            rule: "r".into(),
            subject: "s".into(),
        }
    }

    fn desired(effect: Effect) -> DesiredState {
        DesiredState::new(vec![Finding {
            slot: slot(),
            effect,
            occurrence: Occurrence::digest(b"1"),
            message: String::new(),
        }])
    }

    fn thread(id: u64, resolved: bool) -> ThreadArtifact {
        ThreadArtifact {
            resolved_by_bot: false,
            edited: false,
            diff_note: false,
            resolved_by: None,
            forge_id: id,
            discussion_id: String::new(),
            slot: slot(),
            occurrence: Occurrence::digest(b"1"),
            resolved,
            bot_replies: vec![],
        }
    }

    fn summary(id: u64) -> SummaryArtifact {
        SummaryArtifact {
            open_thread: None,
            note_id: id,
            body: String::new(),
            occurrence: Occurrence::digest(b"s"),
            state: SummaryState::Reconciling,
            source_sha: crate::test_support::sha('0'),
            updated_at: None,
        }
    }

    fn record() -> WriteRecord {
        WriteRecord {
            summary_note_id: Some(1),
            created: [10].into(),
            ..WriteRecord::default()
        }
    }

    #[test]
    fn a_matching_rescan_has_no_mismatch() {
        let inv = Inventory {
            threads: vec![thread(10, false)],
            summaries: vec![summary(1)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        assert!(verify_rescan(&desired(Effect::Challenge), &inv, &record()).is_empty());
    }

    #[test]
    fn an_open_thread_of_an_undesired_slot_or_a_stale_occurrence_is_a_mismatch() {
        let foreign = ThreadArtifact {
            slot: Slot {
                rule: "other".into(),
                subject: "s".into(),
            },
            ..thread(11, false)
        };
        let stale = ThreadArtifact {
            occurrence: Occurrence::digest(b"0"),
            ..thread(12, false)
        };
        for (extra, says) in [
            (foreign.clone(), "thread 11 of other"),
            (stale.clone(), "thread 12 of a stale occurrence"),
        ] {
            let inv = Inventory {
                threads: vec![thread(10, false), extra],
                summaries: vec![summary(1)],
                warnings: vec![],
                adopted_summaries: Vec::new(),
            };
            let m = verify_rescan(&desired(Effect::Challenge), &inv, &record());
            assert_eq!(m.len(), 1, "{m:?}");
            assert!(m[0].contains(says), "{m:?}");
        }
        // Nothing desired at all: a leftover open thread is still a mismatch.
        let inv = Inventory {
            threads: vec![foreign.clone()],
            summaries: vec![summary(1)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        let none = WriteRecord {
            summary_note_id: Some(1),
            ..WriteRecord::default()
        };
        assert_eq!(
            verify_rescan(&DesiredState::default(), &inv, &none).len(),
            1
        );
        // Resolved, by anyone, they are what the table leaves behind.
        let inv = Inventory {
            threads: vec![
                thread(10, false),
                ThreadArtifact {
                    resolved: true,
                    ..foreign
                },
                ThreadArtifact {
                    resolved: true,
                    ..stale
                },
            ],
            summaries: vec![summary(1)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        assert!(verify_rescan(&desired(Effect::Challenge), &inv, &record()).is_empty());
    }

    #[test]
    fn a_human_resolving_meanwhile_is_not_a_mismatch() {
        let inv = Inventory {
            threads: vec![thread(10, true)],
            summaries: vec![summary(1)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        assert!(verify_rescan(&desired(Effect::Challenge), &inv, &record()).is_empty());
    }

    #[test]
    fn missing_thread_second_summary_and_racing_duplicate_are_mismatches() {
        let empty = Inventory {
            threads: vec![],
            summaries: vec![summary(1), summary(2)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        let m = verify_rescan(&desired(Effect::Challenge), &empty, &record());
        assert_eq!(m.len(), 3, "{m:?}");
        let raced = Inventory {
            threads: vec![thread(10, false), thread(11, false)],
            summaries: vec![summary(1)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        let m = verify_rescan(&desired(Effect::Challenge), &raced, &record());
        assert_eq!(
            m,
            vec!["thread 11 duplicates thread 10 and is unresolved".to_owned()]
        );
    }

    #[test]
    fn unresolved_comment_and_reopened_thread_are_mismatches() {
        let inv = Inventory {
            threads: vec![thread(10, false)],
            summaries: vec![summary(1)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        assert_eq!(
            verify_rescan(&desired(Effect::Comment), &inv, &record()).len(),
            1
        );
        let rec = WriteRecord {
            resolved: [10].into(),
            ..record()
        };
        assert_eq!(
            verify_rescan(&desired(Effect::Challenge), &inv, &rec).len(),
            1
        );
    }

    #[test]
    fn duplicates_and_missing_threads_are_found_per_finding() {
        use test_support::{finding, thread};
        let desired = DesiredState::new(vec![
            finding("a", Effect::Challenge),
            finding("b", Effect::Comment),
            finding("c", Effect::Block),
        ]);
        let mut stale_c = thread(11, "c", false);
        stale_c.occurrence = Occurrence::digest(b"older");
        let inv = Inventory {
            threads: vec![
                thread(10, "b", false),
                stale_c,
                thread(12, "a", false),
                thread(13, "x", false),
                thread(14, "a", true),
                thread(15, "b", false),
                thread(16, "a", false),
            ],
            summaries: vec![summary(1)],
            warnings: vec![],
            adopted_summaries: Vec::new(),
        };
        let rec = WriteRecord {
            summary_note_id: Some(1),
            ..WriteRecord::default()
        };
        assert_eq!(
            verify_rescan(&desired, &inv, &rec),
            [
                "comment thread 10 is unresolved",
                "no thread of the current occurrence for c @ s",
                "thread 11 of a stale occurrence of c @ s is unresolved",
                "thread 13 of x @ s, which is not desired, is unresolved",
                "thread 15 duplicates thread 10 and is unresolved",
                "thread 16 duplicates thread 12 and is unresolved",
            ]
        );
    }
}
