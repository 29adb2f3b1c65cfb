//! docs/contract.md#note-size: no body assent writes exceeds GitLab's 1,000,000-character note limit. For
//! any desired state (many findings, huge values, long and hostile subjects, grouped or not)
//! and any forge state, every body the run can write (each thread of the plan, every reply,
//! the summary in both states, the collapsed summary) stays under the render budget.

use std::collections::BTreeMap;

use assent_core::grouping::{DEFAULT_GROUP_ABOVE, Fired, group_findings, group_fired};
use assent_core::inventory::{Inventory, ThreadArtifact};
use assent_core::links::MAX_URL_CHARS;
use assent_core::marker::SummaryState;
use assent_core::model::Change;
use assent_core::model::{
    Assenters, ChangeKind, DesiredState, Effect, FileLink, Finding, Occurrence, Pins, Placement,
    Role, Slot, UserRef, group_part_subject, is_group_subject,
};
use assent_core::planner::{Write, plan_reconciliation};
use assent_core::policy::{MAX_RULE_ID_CHARS, MrContext, PolicyFile, PolicySet};
use assent_core::render::{
    self, BODY_BUDGET_CHARS, SummaryContext, TargetBranch, collapsed_summary_body,
    finding_thread_body, finding_thread_body_linked, summary_body,
};
use assent_core::review_state::FindingStatus;
use assent_core::who_assents::{Assent, NotCounted};
use proptest::prelude::*;
use serde_json::{Value, json};

/// GitLab's limit, for the message of a failing case.
const GITLAB_LIMIT: usize = 1_000_000;

/// The pieces hostile text is made of: backticks, Markdown, mentions, HTML, line breaks,
/// quick actions, characters that escape to long sequences, and `|` for tables.
fn units() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "`",
        "``` @all <img src=x> ",
        "\n/close\n",
        "|",
        "<>&",
        "\u{e0041}\u{202e}\u{200b}",
        "é東",
        "\\",
        " ",
    ])
}

/// A few hostile units, repeated to about `chars` characters.
fn hostile_text(chars: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    (prop::collection::vec(units(), 1..6), chars).prop_map(|(parts, chars)| {
        let unit = parts.concat();
        unit.repeat(chars / unit.chars().count() + 1)
    })
}

/// Mostly short text, sometimes a huge one (0.9M to 1.6M characters, over GitLab's limit
/// on its own).
fn sized_text() -> impl Strategy<Value = String> {
    prop_oneof![
        60 => hostile_text(0..80),
        1 => hostile_text(900_000..1_600_000),
    ]
}

fn rule_id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("retention-shrink".to_owned()),
        Just("r".to_owned()),
        Just("assent/parse-error".to_owned()),
        "[a-z0-9][a-z0-9._-]{0,99}".prop_map(|s| s[..s.len().min(MAX_RULE_ID_CHARS)].to_owned()),
    ]
}

fn effect() -> impl Strategy<Value = Effect> {
    prop_oneof![
        Just(Effect::Comment),
        Just(Effect::Challenge),
        Just(Effect::Block)
    ]
}

fn kind() -> impl Strategy<Value = ChangeKind> {
    prop_oneof![
        Just(ChangeKind::Add),
        Just(ChangeKind::Modify),
        Just(ChangeKind::Delete)
    ]
}

/// A value as a governed file can hold it: a string, a number, or a list or map of them.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        sized_text().prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        prop::collection::vec(sized_text(), 0..4).prop_map(|v| json!(v)),
        (sized_text(), sized_text()).prop_map(|(k, v)| json!({ k: v })),
    ]
}

/// One finding as a policy rule produces it: its judged change and a message rendered by
/// the real template engine (values shortened there), or an arbitrary huge message as a
/// built-in finding's list could be.
#[derive(Debug, Clone)]
struct Raw {
    rule: String,
    subject: String,
    effect: Effect,
    kind: ChangeKind,
    old: Option<Value>,
    new: Option<Value>,
    /// `None`: the template's rendering.
    message: Option<String>,
}

fn raw() -> impl Strategy<Value = Raw> {
    (
        rule_id(),
        prop_oneof![4 => hostile_text(0..60), 1 => hostile_text(1_000..6_000)],
        effect(),
        kind(),
        prop::option::of(value()),
        prop::option::of(value()),
        prop_oneof![6 => Just(None), 1 => sized_text().prop_map(Some)],
    )
        .prop_map(|(rule, subject, effect, kind, old, new, message)| Raw {
            rule,
            subject: format!("topics/{subject}.yaml#/topics/{subject}"),
            effect,
            kind,
            old,
            new,
            message,
        })
}

/// A policy whose message shows every content placeholder, twice.
fn template_policy() -> PolicySet {
    let text = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: r\n    match: {files: [\"**\"]}\n    effect: challenge\n    message: \"{{ entry }} in {{ file }} at {{ pointer }}: {{ old }} to {{ new }}, `{{ old }} → {{ new }}`\"\n";
    PolicySet::load(&[PolicyFile {
        path: ".assent/policies/p.yaml".into(),
        bytes: text.as_bytes().to_vec(),
    }])
    .expect("the policy loads")
}

fn rendered_message(policies: &PolicySet, raw: &Raw) -> String {
    let (file, pointer) = raw.subject.split_once('#').unwrap();
    let change = Change {
        file: file.to_owned(),
        pointer: pointer.to_owned(),
        kind: raw.kind,
        old: raw.old.clone(),
        new: raw.new.clone(),
        old_line: None,
        new_line: None,
    };
    let evaluation = policies.evaluate(&[change], &MrContext::default());
    evaluation.findings[0].message.clone()
}

fn desired_from(raws: &[Raw], group_above: usize) -> DesiredState {
    let policies = template_policy();
    let fired: Vec<Fired<'_>> = raws
        .iter()
        .map(|raw| Fired {
            finding: Finding {
                slot: Slot {
                    rule: raw.rule.clone(),
                    subject: raw.subject.clone(),
                },
                effect: raw.effect,
                occurrence: Occurrence::of(
                    &raw.rule,
                    &raw.subject,
                    raw.kind,
                    raw.old.as_ref(),
                    raw.new.as_ref(),
                ),
                message: raw
                    .message
                    .clone()
                    .unwrap_or_else(|| rendered_message(&policies, raw)),
            },
            kind: raw.kind,
            old: raw.old.as_ref(),
            new: raw.new.as_ref(),
        })
        .collect();
    let assenters = BTreeMap::from([(
        "r".to_owned(),
        Assenters {
            users: (0..5_000).map(|i| format!("reviewer-{i}")).collect(),
            min_role: Some(Role::Maintainer),
        },
    )]);
    let desired =
        DesiredState::new(group_findings(fired, |_| group_above)).with_assenters(assenters);
    // Every finding links to its file with the longest destination a link may have, on the
    // longest line number: the thread headline and every summary row carry it.
    let longest = FileLink {
        url: format!("https://h/{}", "%".repeat(MAX_URL_CHARS - 10)),
        line: Some(usize::MAX),
        at_base: true,
    };
    let placements = desired
        .findings
        .iter()
        .map(|f| {
            let placement = Placement {
                position: None,
                link: Some(longest.clone()),
            };
            (f.slot.clone(), placement)
        })
        .collect();
    desired.with_placements(placements)
}

fn assent_for(choice: u8, username: &str) -> Assent {
    let by = UserRef {
        id: 9,
        username: username.to_owned(),
    };
    match choice % 4 {
        0 => Assent::Open,
        1 => Assent::Given { by },
        2 => Assent::NotCounted {
            by: Some(by),
            reason: NotCounted::ByAuthor,
        },
        _ => Assent::NotCounted {
            by: Some(by),
            reason: NotCounted::NotAnAssenter {
                assenters: Assenters {
                    users: (0..5_000).map(|i| format!("reviewer-{i}")).collect(),
                    min_role: Some(Role::Maintainer),
                },
                role: Some(Role::Developer),
            },
        },
    }
}

#[track_caller]
fn assert_within_budget(what: &str, body: &str) {
    let chars = body.chars().count();
    assert!(
        chars <= BODY_BUDGET_CHARS,
        "{what}: {chars} characters (budget {BODY_BUDGET_CHARS}, GitLab's limit {GITLAB_LIMIT})"
    );
}

/// Every body of one run over `desired` and a forge state derived from it.
fn check_every_body(desired: &DesiredState, choices: &[u8], username: &str, branch: &str) {
    let head = assent_core::commit_sha::CommitSha::parse(&"f".repeat(64)).unwrap();
    // The forge holds a stale thread for every other desired slot (superseded replies) and
    // threads of slots no longer desired (outdated replies), some of them duplicated.
    let mut inventory = Inventory::default();
    for (i, finding) in desired.findings.iter().enumerate() {
        let slot = if i % 3 == 0 {
            Slot {
                rule: finding.slot.rule.clone(),
                subject: format!("{}-gone", finding.slot.subject),
            }
        } else {
            finding.slot.clone()
        };
        for copy in 0..(1 + usize::from(i % 5 == 0)) {
            inventory.threads.push(ThreadArtifact {
                forge_id: (2 * i + copy) as u64 + 1,
                discussion_id: format!("{:040x}", 2 * i + copy),
                slot: slot.clone(),
                occurrence: if i % 2 == 0 {
                    finding.occurrence.clone()
                } else {
                    Occurrence::digest(&i.to_be_bytes())
                },
                resolved: false,
                resolved_by_bot: false,
                edited: false,
                diff_note: false,
                resolved_by: None,
                bot_replies: vec![],
            });
        }
    }
    let plan = plan_reconciliation(desired, &inventory, &head);
    for write in &plan.writes {
        match write {
            Write::CreateThread { body, .. } | Write::CollapseSummary { body, .. } => {
                assert_within_budget("thread", body);
            }
            Write::ReplyAndResolve { reply, .. } => assert_within_budget("reply", reply),
            Write::Resolve { .. } => {}
        }
    }
    for finding in &desired.findings {
        assert_within_budget("thread", &finding_thread_body(finding));
        let link = desired
            .placement(&finding.slot)
            .and_then(|p| p.link.as_ref());
        assert!(link.is_some(), "every finding links to its file");
        assert_within_budget("thread", &finding_thread_body_linked(finding, link));
    }
    for reply in [
        render::outdated_reply(&head),
        render::superseded_reply(&head),
        render::duplicate_reply(u64::MAX, &head),
        collapsed_summary_body(u64::MAX),
    ] {
        assert_within_budget("reply", &reply);
    }

    let statuses: Vec<FindingStatus<'_>> = desired
        .findings
        .iter()
        .enumerate()
        .map(|(i, finding)| {
            let choice = choices.get(i).copied().unwrap_or(0);
            let assent = if finding.effect == Effect::Challenge {
                assent_for(choice, username)
            } else {
                Assent::Open
            };
            FindingStatus {
                finding,
                forge_id: Some(u64::MAX - i as u64),
                resolved: !matches!(assent, Assent::Open),
                assent,
            }
        })
        .collect();
    let pins = Pins {
        source_sha: head.clone(),
        target_sha: assent_core::commit_sha::CommitSha::parse(&"e".repeat(64)).unwrap(),
        base_sha: assent_core::commit_sha::CommitSha::parse(&"d".repeat(64)).unwrap(),
        policy_digest: format!("sha256:{}", "a".repeat(64)),
        policy_project: None,
        policy_sha: None,
    };
    let target = TargetBranch {
        name: branch.to_owned(),
        has_policies: choices.first().is_some_and(|c| c % 2 == 0),
    };
    let url = format!(
        "https://gitlab.example/{}/-/merge_requests/7",
        "g/".repeat(100)
    );
    let ctx = SummaryContext {
        pins: &pins,
        web_url: Some(&url),
        target: Some(&target),
        listing: Some(&inventory),
    };
    for state in [SummaryState::Reconciling, SummaryState::Verified] {
        assert_within_budget("summary", &summary_body(ctx, desired, &statuses, state));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_body_of_any_desired_state_is_within_the_budget(
        raws in prop::collection::vec(raw(), 0..150),
        group_above in prop_oneof![Just(DEFAULT_GROUP_ABOVE), Just(1usize), Just(10_000usize)],
        choices in prop::collection::vec(any::<u8>(), 0..400),
        username in "[a-z][a-z0-9_.-]{0,254}",
        branch in "[a-z][a-z0-9/_.-]{0,254}",
    ) {
        let desired = desired_from(&raws, group_above);
        check_every_body(&desired, &choices, &username, &branch);
    }
}

/// The extremes the random cases reach only rarely, checked every time: thousands of
/// findings of one rule ungrouped and grouped, and thousands of rules each under the
/// threshold (the summary's row cap).
#[test]
fn thousands_of_findings_stay_within_the_budget_grouped_or_not() {
    let long = json!("x".repeat(1_200_000));
    let raws: Vec<Raw> = (0..3_000)
        .map(|i| Raw {
            rule: format!("rule-{}", i % 1_500),
            subject: format!(
                "topics/{}{i}.yaml#/t/{}",
                "p".repeat(300),
                "k".repeat(1_500)
            ),
            effect: if i % 7 == 0 {
                Effect::Block
            } else {
                Effect::Challenge
            },
            kind: ChangeKind::Modify,
            old: Some(if i % 300 == 0 {
                long.clone()
            } else {
                json!(30)
            }),
            new: Some(json!(i)),
            message: None,
        })
        .collect();
    let choices: Vec<u8> = (0..3_000).map(|i| (i % 4) as u8).collect();
    for group_above in [1, DEFAULT_GROUP_ABOVE, 10_000] {
        let desired = desired_from(&raws, group_above);
        check_every_body(&desired, &choices, &"u".repeat(255), &"b".repeat(255));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// A group split over several notes loses no member and repeats none: every member is
    /// in exactly one part, listed on its own line there, and every part's thread body is
    /// within the budget.
    #[test]
    fn every_member_is_in_exactly_one_part_and_every_part_is_within_the_budget(
        count in 26usize..3_000,
        subject in hostile_text(0..400),
        value in hostile_text(0..400),
        blocks in prop::collection::vec(any::<u16>(), 0..20),
    ) {
        let value = json!(value);
        let raws: Vec<Raw> = (0..count)
            .map(|i| Raw {
                rule: "r".to_owned(),
                subject: format!("topics/{i:05}{subject}.yaml#/t"),
                effect: if blocks.iter().any(|b| usize::from(*b) % count == i) {
                    Effect::Block
                } else {
                    Effect::Challenge
                },
                kind: ChangeKind::Modify,
                old: Some(value.clone()),
                new: Some(json!(i)),
                message: Some(String::new()),
            })
            .collect();
        let fired: Vec<Fired<'_>> = raws
            .iter()
            .map(|raw| Fired {
                finding: Finding {
                    slot: Slot { rule: raw.rule.clone(), subject: raw.subject.clone() },
                    effect: raw.effect,
                    occurrence: Occurrence::of(&raw.rule, &raw.subject, raw.kind, raw.old.as_ref(), raw.new.as_ref()),
                    message: "Rule fired.".to_owned(),
                },
                kind: raw.kind,
                old: raw.old.as_ref(),
                new: raw.new.as_ref(),
            })
            .collect();
        let grouped = group_fired(fired, |_| DEFAULT_GROUP_ABOVE);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, part) in grouped.findings.iter().enumerate() {
            prop_assert_eq!(&part.slot.subject, &group_part_subject(i + 1));
            prop_assert!(is_group_subject(&part.slot.subject));
            assert_within_budget("grouped thread", &finding_thread_body(part));
            let members = &grouped.members[&part.slot];
            let listed = part.message.lines().filter(|l| l.starts_with("- ")).count();
            prop_assert_eq!(listed, members.len(), "each member of a part is listed in it");
            prop_assert_eq!(
                part.effect,
                members.iter().map(|m| m.finding.effect).max().unwrap()
            );
            for m in members {
                *seen.entry(m.finding.slot.subject.clone()).or_default() += 1;
            }
        }
        prop_assert_eq!(seen.len(), count);
        prop_assert!(seen.values().all(|&n| n == 1));
        // Gating first: no block member comes after a challenge member.
        let effects: Vec<Effect> = grouped
            .findings
            .iter()
            .flat_map(|f| grouped.members[&f.slot].iter().map(|m| m.finding.effect))
            .collect();
        prop_assert!(effects.windows(2).all(|w| w[0] >= w[1]));
    }
}
