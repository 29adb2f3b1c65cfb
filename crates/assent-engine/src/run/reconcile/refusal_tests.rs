//! The typed refusals (`stale-pipeline`, `mr-not-open`): one classification at the run's
//! start and before its first write, and their receipts keep what the listing found (every
//! receipt carries the listing's warnings, docs/contract.md#receipt).

use super::approval_tests::challenged;
use super::*;
use crate::core::model::{MergeRequestInfo, MergeRequestState};
use crate::core::refusal::retargeted_warning;
use crate::forge::memory::InMemoryForge;

const BOT: u64 = 1;
static PINNED: std::sync::LazyLock<CommitSha> = std::sync::LazyLock::new(|| {
    CommitSha::parse("1111111111111111111111111111111111111111").unwrap()
});
static PUSHED: std::sync::LazyLock<CommitSha> = std::sync::LazyLock::new(|| {
    CommitSha::parse("4444444444444444444444444444444444444444").unwrap()
});

fn ctx() -> RunContext {
    super::approval_tests::ctx(&PINNED)
}

/// A forge whose listing holds a bot note with a marker that does not parse.
fn forge_with_malformed_marker(head: &CommitSha) -> InMemoryForge {
    let memory = InMemoryForge::new(BOT, head);
    memory
        .post(BOT, "<!-- assent:marker {\"v\":1,\"kind\": -->", true, None)
        .unwrap();
    memory
}

fn assert_carries_the_malformed_marker_warning(receipt: &Receipt) {
    assert!(
        receipt.warnings.iter().any(|w| w.contains("marker")),
        "{:?}",
        receipt.warnings
    );
    let json = receipt.to_json();
    assert!(!json.contains(r#""warnings":[]"#), "{json}");
}

#[test]
fn a_stale_pipeline_receipt_keeps_the_listing_warnings() {
    let memory = forge_with_malformed_marker(&PUSHED);
    let publication = reconcile(&memory, &challenged(), &ctx()).unwrap();
    assert_eq!(publication.receipt.outcome, Outcome::StalePipeline);
    assert_eq!(publication.stale, Some(Staleness::HeadMoved));
    assert_eq!(memory.request_counts().writes, 0);
    assert_carries_the_malformed_marker_warning(&publication.receipt);
}

#[test]
fn a_retargeted_pipeline_receipt_keeps_both_warnings() {
    let memory = forge_with_malformed_marker(&PINNED);
    let mut info = memory.merge_request().unwrap();
    info.target_branch = "release".into();
    memory.set_merge_request(info);
    let ctx = RunContext {
        target: Some(TargetBranch {
            name: "main".into(),
            has_policies: true,
        }),
        ..ctx()
    };
    let publication = reconcile(&memory, &challenged(), &ctx).unwrap();
    assert_eq!(publication.receipt.outcome, Outcome::StalePipeline);
    assert_eq!(publication.stale, Some(Staleness::Retargeted));
    assert_carries_the_malformed_marker_warning(&publication.receipt);
    assert!(
        publication
            .receipt
            .warnings
            .iter()
            .any(|w| w.contains("`release`") && w.contains("`main`")),
        "{:?}",
        publication.receipt.warnings
    );
}

#[test]
fn an_mr_not_open_receipt_keeps_the_listing_warnings() {
    let memory = forge_with_malformed_marker(&PINNED);
    memory.set_mr_state(MergeRequestState::Merged);
    let publication = reconcile(&memory, &challenged(), &ctx()).unwrap();
    assert_eq!(publication.receipt.outcome, Outcome::MrNotOpen);
    assert_eq!(publication.stale, None);
    assert_eq!(memory.request_counts().writes, 0);
    assert_carries_the_malformed_marker_warning(&publication.receipt);
}

#[test]
fn one_classification_decides_every_refusal() {
    let open = InMemoryForge::new(BOT, &PINNED).merge_request().unwrap();
    assert_eq!(refusal_for(&open, &PINNED, Some(&open.target_branch)), None);
    assert_eq!(refusal_for(&open, &PINNED, None), None);

    let moved = refusal_for(&open, &PUSHED, None).expect("the head moved");
    assert_eq!(
        (moved.outcome, moved.stale, moved.warning),
        (Outcome::StalePipeline, Some(Staleness::HeadMoved), None)
    );

    // Retargeted (and pushed to as well): the retarget is named, with its warning.
    let retargeted = refusal_for(&open, &PUSHED, Some("release")).expect("retargeted");
    assert_eq!(
        (retargeted.outcome, retargeted.stale),
        (Outcome::StalePipeline, Some(Staleness::Retargeted))
    );
    assert_eq!(
        retargeted.warning,
        Some(retargeted_warning("release", &open.target_branch))
    );

    // Closed or merged comes first: nothing about the head or the target then matters.
    let closed = MergeRequestInfo {
        state: MergeRequestState::Merged,
        ..open
    };
    let refusal = refusal_for(&closed, &PUSHED, Some("release")).expect("not open");
    assert_eq!(
        (refusal.outcome, refusal.stale, refusal.warning),
        (Outcome::MrNotOpen, None, None)
    );
}
