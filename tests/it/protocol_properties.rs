//! Properties of one reconciliation over arbitrary starting states, and crash recovery at
//! every write.
//!
//! The proptest builds random mixes of bot threads (duplicates, stale and current
//! occurrences, resolved or not), bot summaries, malformed and system bot notes, forged
//! markers and plain human notes, listed in any order over any page size, and random desired
//! states. After one run the invariants of docs/contract.md#reconciliation must hold, and a second run must make
//! zero writes.

use std::collections::BTreeMap;

use assent::core::commit_sha::CommitSha;
use assent::core::inventory::Inventory;
use assent::core::marker::{self, Marker, SummaryState};
use assent::core::model::{DesiredState, Effect, Finding, ListedDiscussion, Occurrence, Slot};
use assent::core::render;
use assent::engine::fixture::replay::fixture_pins;
use assent::engine::run::reconcile::{RunContext, reconcile};
use assent::forge::Forge;
use assent::forge::faults::{FaultPlan, FaultyForge};
use assent::forge::memory::{InMemoryForge, ListingOrder};
use proptest::prelude::*;

const BOT: u64 = 1;
static HEAD: std::sync::LazyLock<CommitSha> = std::sync::LazyLock::new(|| {
    assent_test_support::sha("1111111111111111111111111111111111111111")
});
const RULES: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

fn slot(i: usize) -> Slot {
    Slot {
        rule: RULES[i].to_owned(),
        subject: format!("cfg/{}.yaml#/value", RULES[i]),
    }
}

fn occurrence(v: u8) -> Occurrence {
    Occurrence::digest(&[v])
}

fn finding(slot_index: usize, occ: u8, effect: Effect) -> Finding {
    Finding {
        slot: slot(slot_index),
        effect,
        occurrence: occurrence(occ),
        message: format!("{} fired", RULES[slot_index]),
    }
}

#[derive(Debug, Clone)]
enum Seed {
    BotThread {
        slot: usize,
        occ: u8,
        resolved: bool,
    },
    BotSummary {
        reconciling: bool,
    },
    BotMalformed {
        thread: bool,
    },
    BotSystemThread {
        slot: usize,
        occ: u8,
    },
    ForgedThread {
        author: u64,
        slot: usize,
        occ: u8,
        resolved: bool,
    },
    ForgedBroken,
    HumanNote,
}

fn seed_strategy() -> impl Strategy<Value = Seed> {
    prop_oneof![
        6 => (0..4usize, 0..3u8, any::<bool>()).prop_map(|(slot, occ, resolved)| Seed::BotThread { slot, occ, resolved }),
        2 => any::<bool>().prop_map(|reconciling| Seed::BotSummary { reconciling }),
        1 => any::<bool>().prop_map(|thread| Seed::BotMalformed { thread }),
        1 => (0..4usize, 0..3u8).prop_map(|(slot, occ)| Seed::BotSystemThread { slot, occ }),
        2 => (2..9u64, 0..4usize, 0..3u8, any::<bool>())
            .prop_map(|(author, slot, occ, resolved)| Seed::ForgedThread { author, slot, occ, resolved }),
        1 => Just(Seed::ForgedBroken),
        1 => Just(Seed::HumanNote),
    ]
}

fn desired_strategy() -> impl Strategy<Value = DesiredState> {
    proptest::collection::vec(
        proptest::option::of((
            0..3u8,
            prop_oneof![
                Just(Effect::Comment),
                Just(Effect::Challenge),
                Just(Effect::Block)
            ],
        )),
        4,
    )
    .prop_map(|choices| {
        DesiredState::new(
            choices
                .into_iter()
                .enumerate()
                .filter_map(|(i, c)| c.map(|(occ, effect)| finding(i, occ, effect)))
                .collect(),
        )
    })
}

fn thread_body(slot_index: usize, occ: u8) -> String {
    render::finding_thread_body(&finding(slot_index, occ, Effect::Challenge))
}

fn seed_forge(seeds: &[Seed], page_size: usize, order: u8) -> InMemoryForge {
    let forge = InMemoryForge::new(BOT, &HEAD);
    for seed in seeds {
        let id = match seed {
            Seed::BotThread {
                slot,
                occ,
                resolved,
            } => {
                let id = forge
                    .post(BOT, &thread_body(*slot, *occ), true, None)
                    .unwrap();
                forge.set_resolved(id, *resolved).unwrap();
                id
            }
            Seed::BotSummary { reconciling } => {
                let state = if *reconciling {
                    SummaryState::Reconciling
                } else {
                    SummaryState::Verified
                };
                let body = marker::compose_body(
                    &Marker::Summary {
                        occurrence: occurrence(9),
                        state,
                        source_sha: HEAD.clone(),
                        target: None,
                    },
                    "old summary",
                );
                forge.post(BOT, &body, false, None).unwrap()
            }
            Seed::BotMalformed { thread } => forge
                .post(BOT, "<!-- assent:marker {\"v\":2} -->\nx", *thread, None)
                .unwrap(),
            Seed::BotSystemThread { slot, occ } => {
                let id = forge
                    .post(BOT, &thread_body(*slot, *occ), true, None)
                    .unwrap();
                forge.mark_system(id).unwrap();
                id
            }
            Seed::ForgedThread {
                author,
                slot,
                occ,
                resolved,
            } => {
                let id = forge
                    .post(*author, &thread_body(*slot, *occ), true, None)
                    .unwrap();
                forge.set_resolved(id, *resolved).unwrap();
                id
            }
            Seed::ForgedBroken => forge
                .post(5, "<!-- assent:marker {oops -->", true, None)
                .unwrap(),
            Seed::HumanNote => forge.post(2, "/approve\nlooks good", false, None).unwrap(),
        };
        let _ = id;
    }
    forge.set_page_size(page_size);
    forge.set_listing_order(match order % 3 {
        0 => ListingOrder::Ascending,
        1 => ListingOrder::Descending,
        _ => ListingOrder::Explicit(
            forge
                .snapshot()
                .iter()
                .map(|d| d.notes[0].id)
                .rev()
                .step_by(2)
                .collect(),
        ),
    });
    forge
}

fn ctx() -> RunContext {
    RunContext {
        project: "p".into(),
        mr: 1,
        pins: fixture_pins(&HEAD),
        web_url: None,
        dry_run: false,
        mr_author_id: Some(assent::forge::memory::MR_AUTHOR_USER_ID),
        target: None,
        requests_before: Default::default(),
        previous_bot_users: Vec::new(),
    }
}

fn notes(snapshot: &[ListedDiscussion]) -> BTreeMap<u64, (u64, String, bool)> {
    snapshot
        .iter()
        .flat_map(|d| d.notes.iter())
        .map(|n| (n.id, (n.author_id, n.body.clone(), n.resolved)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn one_run_establishes_the_invariants_and_a_second_run_writes_nothing(
        seeds in proptest::collection::vec(seed_strategy(), 0..14),
        desired in desired_strategy(),
        page_size in 1..5usize,
        order in any::<u8>(),
    ) {
        let forge = seed_forge(&seeds, page_size, order);
        let before = notes(&forge.snapshot());
        reconcile(&forge, &desired, &ctx()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let after_snapshot = forge.snapshot();
        let after = notes(&after_snapshot);
        let inventory = Inventory::from_listing(&after_snapshot, BOT);

        prop_assert_eq!(inventory.summaries.len(), 1, "exactly one summary");
        prop_assert_eq!(inventory.summaries[0].state, SummaryState::Verified);
        for finding in &desired.findings {
            let of_slot: Vec<_> = inventory.threads.iter().filter(|t| t.slot == finding.slot).collect();
            let unresolved: Vec<_> = of_slot.iter().filter(|t| !t.resolved).collect();
            prop_assert!(unresolved.len() <= 1, "at most one unresolved thread for {}", finding.slot);
            for t in &unresolved {
                prop_assert_eq!(&t.occurrence, &finding.occurrence, "unresolved thread has the current occurrence");
            }
            prop_assert!(of_slot.iter().any(|t| t.occurrence == finding.occurrence), "desired slot has a current thread");
        }
        for thread in &inventory.threads {
            if desired.get(&thread.slot).is_none() {
                prop_assert!(thread.resolved, "undesired thread {} left unresolved", thread.forge_id);
            }
        }
        for (id, (author, body, resolved)) in &before {
            let (_, body_after, resolved_after) = after.get(id).expect("no note is ever deleted");
            if *resolved {
                prop_assert!(*resolved_after, "resolved note {} was re-opened", id);
            }
            if *author != BOT {
                prop_assert_eq!(body, body_after, "human note {} touched", id);
                prop_assert_eq!(resolved, resolved_after, "human thread {} (un)resolved", id);
            }
        }

        let writes_before = forge.request_counts().writes;
        let second = reconcile(&forge, &desired, &ctx()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(forge.request_counts().writes, writes_before, "second run wrote");
        prop_assert!(second.receipt.repairs.is_empty());
    }
}

/// The artifact-level state of a forge, with ids normalised away: what the protocol
/// promises is equal after a crash and a rerun.
fn normalized_state(forge: &InMemoryForge) -> Vec<String> {
    let snapshot = forge.snapshot();
    let inventory = Inventory::from_listing(&snapshot, BOT);
    let mut out: Vec<String> = inventory
        .threads
        .iter()
        .map(|t| {
            format!(
                "thread {} {} resolved={}",
                t.slot,
                &t.occurrence.as_str()[7..15],
                t.resolved
            )
        })
        .collect();
    out.sort();
    for summary in &inventory.summaries {
        let mut body = summary.body.clone();
        // Thread links name note ids, which differ between histories.
        while let Some(at) = body.find("note ") {
            let digits = body[at + 5..]
                .chars()
                .take_while(char::is_ascii_digit)
                .count();
            body.replace_range(at..at + 5 + digits, "NOTE");
        }
        out.push(format!("summary {}: {body}", summary.state.as_str()));
    }
    out
}

fn crash_scenario() -> (InMemoryForge, DesiredState) {
    let seeds = [
        Seed::BotThread {
            slot: 0,
            occ: 0,
            resolved: false,
        },
        Seed::BotThread {
            slot: 0,
            occ: 0,
            resolved: false,
        },
        Seed::BotThread {
            slot: 1,
            occ: 0,
            resolved: false,
        },
        Seed::BotThread {
            slot: 2,
            occ: 1,
            resolved: true,
        },
        Seed::BotSummary { reconciling: false },
        Seed::BotSummary { reconciling: true },
        Seed::HumanNote,
    ];
    let desired = DesiredState::new(vec![
        finding(0, 0, Effect::Challenge),
        finding(1, 2, Effect::Challenge),
        finding(2, 1, Effect::Challenge),
        finding(3, 0, Effect::Comment),
    ]);
    (seed_forge(&seeds, 2, 1), desired)
}

#[test]
fn a_crash_after_any_number_of_writes_converges_on_the_clean_state() {
    let (clean, desired) = crash_scenario();
    reconcile(&clean, &desired, &ctx()).unwrap();
    let total_writes = clean.request_counts().writes;
    assert!(
        total_writes >= 8,
        "scenario too small: {total_writes} writes"
    );
    let expected = normalized_state(&clean);

    for k in 0..total_writes {
        let (forge, desired) = crash_scenario();
        let faulty = FaultyForge::new(
            &forge,
            FaultPlan {
                crash_after_writes: Some(k),
                ..FaultPlan::default()
            },
        );
        assert!(
            reconcile(&faulty, &desired, &ctx()).is_err(),
            "crash after {k} writes went unnoticed"
        );
        assert!(faulty.crashed());
        assert_eq!(forge.request_counts().writes, k);
        let receipt = reconcile(&forge, &desired, &ctx())
            .unwrap_or_else(|e| panic!("rerun after crash at {k}: {e}"))
            .receipt;
        assert!(receipt.rescan.verified);
        assert_eq!(normalized_state(&forge), expected, "crash after {k} writes");
        let writes = forge.request_counts().writes;
        reconcile(&forge, &desired, &ctx()).unwrap();
        assert_eq!(
            forge.request_counts().writes,
            writes,
            "third run after crash at {k} wrote"
        );
    }
}

#[test]
fn a_lost_ack_on_any_write_never_duplicates() {
    let (clean, desired) = crash_scenario();
    reconcile(&clean, &desired, &ctx()).unwrap();
    let expected = normalized_state(&clean);
    let total_writes = clean.request_counts().writes;
    for n in 1..=total_writes {
        let (forge, desired) = crash_scenario();
        let faulty = FaultyForge::new(
            &forge,
            FaultPlan {
                lose_ack_on_writes: [n].into(),
                ..FaultPlan::default()
            },
        );
        let receipt = reconcile(&faulty, &desired, &ctx())
            .unwrap_or_else(|e| panic!("lost ack on write {n}: {e}"))
            .receipt;
        assert!(receipt.rescan.verified);
        assert_eq!(normalized_state(&forge), expected, "lost ack on write {n}");
    }
}
