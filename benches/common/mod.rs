//! Input generators shared by the benchmarks and `peak_rss`.
//!
//! Everything is generated deterministically from its size parameters, so a number measured
//! on one machine can be reproduced on another without committing large inputs.

// Each bench target uses a different subset of these generators.
#![allow(dead_code)]

use std::fmt::Write as _;

use assent::core::inventory::Inventory;
use assent::core::marker::SummaryState;
use assent::core::model::{
    DesiredState, Effect, Finding, ListedDiscussion, ListedNote, Occurrence, Pins, Slot,
};
use assent::core::policy::{PolicyFile, PolicySet};
use assent::core::render::{self, SummaryContext};
use assent::core::review_state::finding_statuses;
use assent::core::who_assents::AssentFacts;
use assent::engine::run::reconcile::RunContext;
use assent::forge::memory::InMemoryForge;

/// The bot's user id in every generated listing.
pub const BOT: u64 = 1000;
/// A human's user id.
pub const HUMAN: u64 = 7;
/// The head SHA every generated run judges.
pub const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

/// The discussion counts the planner and executor benchmarks run at.
pub const DISCUSSIONS: [usize; 3] = [10, 1_000, 5_000];
/// The desired finding counts the planner and executor benchmarks run at.
pub const FINDINGS: [usize; 3] = [1, 100, 1_000];

/// The slot of the `i`-th generated finding.
pub fn slot(i: usize) -> Slot {
    Slot {
        rule: ["retention-shrink", "partitions-decrease", "owner-change"][i % 3].to_owned(),
        subject: format!(
            "topics/domain{:03}.yaml#/topics/t{i:06}.events.v1/field",
            i % 97
        ),
    }
}

/// Occurrence `version` of the `i`-th finding's judged content.
pub fn occurrence(i: usize, version: u32) -> Occurrence {
    Occurrence::digest(format!("{i}:{version}").as_bytes())
}

/// `n` desired findings: mostly challenges, every 7th a comment, every 11th a block.
pub fn desired(n: usize) -> DesiredState {
    DesiredState::new(
        (0..n)
            .map(|i| Finding {
                slot: slot(i),
                effect: if i % 11 == 10 {
                    Effect::Block
                } else if i % 7 == 6 {
                    Effect::Comment
                } else {
                    Effect::Challenge
                },
                occurrence: occurrence(i, 2),
                message: format!(
                    "Retention of t{i:06}.events.v1 shrinks from 30 to 7 days: consumers that lag behind lose data."
                ),
            })
            .collect(),
    )
}

fn thread_body(i: usize, version: u32) -> String {
    render::finding_thread_body(&Finding {
        slot: slot(i),
        effect: Effect::Challenge,
        occurrence: occurrence(i, version),
        message: format!("Generated finding {i}, version {version}."),
    })
}

fn note(id: u64, author_id: u64, resolvable: bool, resolved: bool, body: String) -> ListedNote {
    ListedNote {
        id,
        author_id,
        system: false,
        resolvable,
        resolved,
        resolved_by: resolved.then(|| assent::forge::memory::user_ref(HUMAN)),
        resolved_at: resolved.then(|| "2026-01-01T00:00:00.000000Z".to_owned()),
        diff_note: false,
        body,
        created_at: Some("2026-01-01T00:00:00.000000Z".to_owned()),
        updated_at: Some("2026-01-01T00:00:00.000000Z".to_owned()),
    }
}

/// A complete discussion listing of `discussions` entries for a run that desires
/// [`desired`]`(findings)`.
///
/// The bot's artifacts cycle through the state-table rows, one desired slot each: no thread
/// yet (create), current unresolved, current resolved, only a stale unresolved thread
/// (supersede), current plus an unresolved duplicate (repair). One summary note comes first.
/// While there is room, one in four of the remaining discussions is a bot thread of a slot no
/// longer desired (resolve), and the rest are human threads with a reply. A listing too small
/// for every desired slot covers the first ones.
pub fn listing(discussions: usize, findings: usize) -> Vec<ListedDiscussion> {
    let mut out = Vec::with_capacity(discussions);
    let mut next_id = 0u64;
    let push = |out: &mut Vec<ListedDiscussion>, individual: bool, notes: Vec<ListedNote>| {
        out.push(ListedDiscussion {
            id: format!("{:040x}", out.len() + 1),
            individual_note: individual,
            notes,
        });
    };
    let mut id = || {
        next_id += 1;
        next_id
    };
    if discussions > 0 {
        let pins = pins();
        let desired = desired(findings);
        let body = render::summary_body(
            SummaryContext {
                pins: &pins,
                web_url: None,
                target: None,
                listing: None,
            },
            &desired,
            &finding_statuses(&desired, &Inventory::default(), &AssentFacts::default()),
            SummaryState::Verified,
        );
        let n = note(id(), BOT, false, false, body);
        push(&mut out, true, vec![n]);
    }
    for i in 0..findings {
        if out.len() >= discussions {
            break;
        }
        match i % 5 {
            0 => {}
            1 | 2 => {
                let n = note(id(), BOT, true, i % 5 == 2, thread_body(i, 2));
                push(&mut out, false, vec![n]);
            }
            3 => {
                let n = note(id(), BOT, true, false, thread_body(i, 1));
                push(&mut out, false, vec![n]);
            }
            _ => {
                let n = note(id(), BOT, true, false, thread_body(i, 2));
                push(&mut out, false, vec![n]);
                if out.len() < discussions {
                    let n = note(id(), BOT, true, false, thread_body(i, 2));
                    push(&mut out, false, vec![n]);
                }
            }
        }
    }
    let mut extra = 0usize;
    while out.len() < discussions {
        extra += 1;
        if extra.is_multiple_of(4) {
            let n = note(id(), BOT, true, false, thread_body(1_000_000 + extra, 1));
            push(&mut out, false, vec![n]);
        } else {
            let first = note(
                id(),
                HUMAN,
                true,
                extra.is_multiple_of(3),
                format!("Why does topic {extra} need 48 partitions?\n\nPlease explain."),
            );
            let reply = note(
                id(),
                BOT + 1,
                true,
                extra.is_multiple_of(3),
                "Traffic.".to_owned(),
            );
            push(&mut out, false, vec![first, reply]);
        }
    }
    out
}

/// `text` as a commit SHA.
pub fn sha(text: &str) -> assent::core::commit_sha::CommitSha {
    assent::core::commit_sha::CommitSha::parse(text).expect("a commit SHA")
}

/// The pins every generated run uses.
pub fn pins() -> Pins {
    Pins {
        source_sha: sha(HEAD),
        target_sha: sha("1111111111111111111111111111111111111111"),
        base_sha: sha("2222222222222222222222222222222222222222"),
        policy_digest: format!("sha256:{}", "3".repeat(64)),
        policy_project: None,
        policy_sha: None,
    }
}

/// The run context of a generated run.
pub fn run_context() -> RunContext {
    RunContext {
        project: "42".to_owned(),
        mr: 7,
        pins: pins(),
        web_url: Some("https://gitlab.example.com/g/p/-/merge_requests/7".to_owned()),
        dry_run: false,
        mr_author_id: Some(assent::forge::memory::MR_AUTHOR_USER_ID),
        target: None,
        requests_before: Default::default(),
        previous_bot_users: Vec::new(),
    }
}

/// An in-memory MR with `discussions` human threads (each with a reply) and no bot artifact.
pub fn forge_with_human_threads(discussions: usize) -> InMemoryForge {
    let forge = InMemoryForge::new(BOT, &sha(HEAD));
    for i in 0..discussions {
        let id = forge
            .post(
                HUMAN,
                &format!("Question {i} about this change?"),
                true,
                None,
            )
            .expect("fresh ids never collide");
        forge
            .reply_as(id, BOT + 1, "Answered.")
            .expect("the note was just posted");
    }
    forge
}

/// The ten rules of the policy benchmarks, with identities for topics and their ACLs.
pub const POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "topics/*.yaml": { "/topics": name, "/topics/*/acls": principal }
rules:
  - id: retention-shrink
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/retention_days", kinds: [modify] }
    when: "int(new) < int(old)"
    effect: challenge
    message: "Retention of {{ entry }} shrinks from {{ old }} to {{ new }} days."
  - id: partitions-decrease
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/partitions", kinds: [modify] }
    when: "int(new) < int(old)"
    effect: block
    message: "Partitions of {{ entry }} cannot shrink from {{ old }} to {{ new }}."
  - id: replication-low
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/replication", kinds: [add, modify] }
    when: "int(new) < 3"
    effect: block
    message: "Replication of {{ entry }} drops to {{ new }}."
  - id: owner-change
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/owner", kinds: [modify] }
    effect: comment
    message: "Ownership of {{ entry }} moves from {{ old }} to {{ new }}."
  - id: cleanup-policy-change
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/cleanup_policy" }
    effect: challenge
    message: "Cleanup policy of {{ entry }} changes from {{ old }} to {{ new }}."
  - id: new-topic-short-retention
    match: { files: ["topics/*.yaml"], pointer: "/topics/*", kinds: [add] }
    when: "has(new.retention_days) && int(new.retention_days) < 7"
    effect: challenge
    message: "New topic {{ entry }} keeps data for less than a week."
  - id: topic-deleted
    match: { files: ["topics/*.yaml"], pointer: "/topics/*", kinds: [delete] }
    effect: block
    message: "Topic {{ entry }} is deleted."
  - id: acl-write-granted
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/acls/*", kinds: [add] }
    when: "new.operation == 'write'"
    effect: challenge
    message: "{{ new }} may now write to {{ entry }}."
  - id: description-change
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/description", kinds: [modify] }
    when: "size(string(new)) < size(string(old))"
    effect: comment
    message: "Description of {{ entry }} was shortened."
  - id: registry-file-deleted
    match: { files: ["topics/*.yaml"], pointer: "", kinds: [delete] }
    effect: block
    message: "{{ file }} is deleted with every topic in it."
"#;

/// [`POLICY`] loaded.
pub fn policy_set() -> PolicySet {
    PolicySet::load(&[PolicyFile {
        path: ".assent/policies/topics.yaml".to_owned(),
        bytes: POLICY.as_bytes().to_vec(),
    }])
    .expect("the benchmark policy loads")
}

/// A topic registry in YAML of at least `bytes` bytes, and a second version of it with 1 in
/// 100 topics changed (retention shrunk, partitions raised, owner moved, an ACL added, in
/// turn), 1 in 500 deleted, 1 in 500 added, and the list order rotated (identity-keyed, so
/// the rotation is no change).
pub fn topic_registry(bytes: usize) -> (String, String) {
    let topic = |i: usize, version: u32| -> (String, bool) {
        let changed = version == 2 && i % 100 == 7;
        let (retention, partitions, owner) = match (changed, i % 4) {
            (true, 0) => (3, 12, "team-orders"),
            (true, 1) => (30, 24, "team-orders"),
            (true, 2) => (30, 12, "team-payments"),
            _ => (30, 12, "team-orders"),
        };
        let mut t = String::with_capacity(300);
        let _ = write!(
            t,
            "  - name: domain{:02}.t{i:07}.events.v1\n    retention_days: {retention}\n    partitions: {partitions}\n    replication: 3\n    owner: {owner}\n    cleanup_policy: delete\n    description: \"Events of aggregate {i} as published by the owning team, consumed by analytics and search.\"\n    acls:\n      - principal: svc-analytics\n        operation: read\n",
            i % 64
        );
        if changed && i % 4 == 3 {
            t.push_str("      - principal: svc-search\n        operation: write\n");
        }
        (t, version == 2 && i % 500 == 211)
    };
    let mut old = String::with_capacity(bytes + 512);
    old.push_str("# Generated topic registry.\ntopics:\n");
    let mut count = 0;
    while old.len() < bytes {
        old.push_str(&topic(count, 1).0);
        count += 1;
    }
    let mut entries: Vec<String> = Vec::with_capacity(count + count / 500 + 1);
    for i in 0..count {
        let (text, deleted) = topic(i, 2);
        if !deleted {
            entries.push(text);
        }
        if i % 500 == 499 {
            entries.push(topic(count + i, 1).0);
        }
    }
    entries.rotate_left(count / 3);
    let mut new = String::with_capacity(old.len() + 512);
    new.push_str("# Generated topic registry.\ntopics:\n");
    for e in entries {
        new.push_str(&e);
    }
    (old, new)
}

/// An in-memory MR holding exactly `listing`, so executor benchmarks start from the
/// generated state. The forge numbers notes 1, 2, … in the order they are posted, which is
/// how [`listing`] numbers them, so the ids are the same.
pub fn forge_from_listing(listing: &[ListedDiscussion]) -> InMemoryForge {
    let forge = InMemoryForge::new(BOT, &sha(HEAD));
    for discussion in listing {
        let first = &discussion.notes[0];
        let id = forge
            .post(first.author_id, &first.body, first.resolvable, None)
            .expect("fresh ids never collide");
        for reply in &discussion.notes[1..] {
            forge
                .reply_as(id, reply.author_id, &reply.body)
                .expect("generated replies are in threads");
        }
        if first.resolved {
            forge
                .set_resolved(id, true)
                .expect("generated resolved notes are threads");
        }
    }
    forge
}

/// `threads` resolved bot threads of one slot (the first desired finding's), each for a
/// different stale occurrence: the history of a field changed on every push.
pub fn one_slot_history(threads: usize) -> Vec<ListedDiscussion> {
    (0..threads)
        .map(|v| ListedDiscussion {
            id: format!("{:040x}", v + 1),
            individual_note: false,
            notes: vec![note(
                v as u64 + 1,
                BOT,
                true,
                true,
                thread_body(0, 100 + v as u32),
            )],
        })
        .collect()
}
