//! Grouping (docs/contract.md#grouping): a rule that fires many times in one merge request publishes one
//! thread for all of its findings.
//!
//! A thousand threads is no review a human can do, and GitLab rate-limits note creation, so
//! when a policy rule fires more than its threshold ([`DEFAULT_GROUP_ABOVE`], or the rule's
//! `group_above`) its findings become one **grouped finding**:
//!
//! * slot `(rule, "*")` ([`crate::model::GROUP_SUBJECT`]);
//! * occurrence [`Occurrence::of_group`] over every member's `{subject, kind, old, new}`, so
//!   a member added, removed or changed gives a new occurrence and the thread is superseded
//!   through the ordinary state table;
//! * effect: the strongest of the members' (`block` > `challenge` > `comment`);
//! * message: how many members there are, the rule's message for the first of them, and
//!   **every member**, gating first (`block`, then `challenge`, then `comment`; within each
//!   by subject, which begins with the member's file). Every subject and value goes through
//!   [`inert::code`], shortened by [`inert::shortened`]. Resolving the thread assents to
//!   every member, so none may be left out of what the reviewer sees.
//!
//! **Parts.** When the member list does not fit one message of [`MAX_GROUP_MESSAGE_CHARS`]
//! (inside GitLab's note limit with the marker and headline), the members, in that same
//! order, are packed into as few parts as fit, each one grouped finding of its own: part 1
//! keeps slot `(rule, "*")`, part `n` is `(rule, "*n")` ([`group_part_subject`]). A part's
//! occurrence ([`Occurrence::of_group_part`]) covers exactly its members and its effect is
//! the strongest of theirs, so resolving a part assents to its members only. A member whose
//! value changes without moving a part boundary supersedes its own part alone; a member
//! added or removed, or one whose line grows or shrinks past a boundary, shifts the members
//! after it, and every part from there on is superseded (as one group would be).
//!
//! A grouped finding is an ordinary desired finding: the planner, the rescan and the assent
//! rules (docs/contract.md#who-may-assent, by rule id) need no case of their own. Its members travel beside it
//! ([`Grouped::members`], [`crate::model::DesiredState::members`]): the receipt lists them
//! under the group, and the Code Quality report gives each its own entry. A rule that drops
//! back to its threshold or under has per-subject findings again; the group slots are then
//! no longer desired and their threads are resolved as outdated, like any other. Built-in
//! findings (`assent/…`) are never grouped: each names its own problem.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::canonical_json;
use crate::inert;
use crate::model::{
    ChangeKind, Effect, Finding, GroupMember, MemberFinding, Occurrence, Slot, group_part_subject,
};

/// A rule that fires more than this many times in one merge request is grouped, unless its
/// policy sets `group_above`.
pub const DEFAULT_GROUP_ABOVE: usize = 25;

/// A grouped finding's message is at most this many characters; a group whose members do
/// not fit is split into parts. The thread body adds a marker and a headline of bounded size
/// (rule ids and subjects are bounded), so it stays under [`crate::render::BODY_BUDGET_CHARS`].
pub const MAX_GROUP_MESSAGE_CHARS: usize = 850_000;

/// Room kept in a grouped message for everything before the member list: the counts, the
/// example message (at most [`EXAMPLE_MESSAGE_CHARS`]) and fixed sentences.
const HEADER_ROOM_CHARS: usize = 10_000;

/// The member list of one part is at most this many characters.
const LISTING_BUDGET_CHARS: usize = MAX_GROUP_MESSAGE_CHARS - HEADER_ROOM_CHARS;

/// A member's subject is shown up to this many characters ([`inert::shortened`]).
const MEMBER_SUBJECT_CHARS: usize = 300;

/// A member's old and new values are shown up to this many characters each.
const MEMBER_VALUE_CHARS: usize = 120;

/// The rule's message for the first member is shown up to this many characters (its first
/// line, cut by [`inert::cut_line`]).
const EXAMPLE_MESSAGE_CHARS: usize = 500;

/// One finding a policy rule produced, with the content it judged (the member it becomes
/// when its rule is grouped).
#[derive(Debug, Clone)]
pub struct Fired<'a> {
    /// The finding, as it is published when its rule is not grouped.
    pub finding: Finding,
    /// The judged change's kind.
    pub kind: ChangeKind,
    /// The value at the base SHA; `None` for an add.
    pub old: Option<&'a Value>,
    /// The value at the source SHA; `None` for a delete.
    pub new: Option<&'a Value>,
}

/// What grouping publishes: the findings, and the members of each grouped one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grouped {
    /// The findings to publish, sorted by slot.
    pub findings: Vec<Finding>,
    /// Grouped finding's slot → its members, in the order its thread lists them.
    pub members: BTreeMap<Slot, Vec<MemberFinding>>,
}

/// Whether `rule` is a built-in rule (never grouped).
pub fn is_builtin(rule: &str) -> bool {
    rule.starts_with("assent/")
}

/// The findings to publish for `fired` ([`group_fired`]), without their members.
pub fn group_findings(fired: Vec<Fired<'_>>, group_above: impl Fn(&str) -> usize) -> Vec<Finding> {
    group_fired(fired, group_above).findings
}

/// The findings to publish for `fired`: each rule's findings as they are, or, for a rule
/// with more than `group_above(rule)` findings (distinct subjects), one grouped finding (or
/// several parts of one, when its members do not fit one note) and its members. Two
/// findings of one slot count once, the stronger kept (as [`crate::model::DesiredState`]
/// keeps it). The output is sorted by slot and does not depend on the input order.
pub fn group_fired(fired: Vec<Fired<'_>>, group_above: impl Fn(&str) -> usize) -> Grouped {
    let mut by_rule: BTreeMap<String, Vec<Fired<'_>>> = BTreeMap::new();
    for f in fired {
        by_rule
            .entry(f.finding.slot.rule.clone())
            .or_default()
            .push(f);
    }
    let mut out = Grouped::default();
    for (rule, mut members) in by_rule {
        members.sort_by(|a, b| {
            a.finding
                .slot
                .cmp(&b.finding.slot)
                .then(b.finding.effect.cmp(&a.finding.effect))
                .then(a.finding.occurrence.cmp(&b.finding.occurrence))
        });
        members.dedup_by(|later, earlier| later.finding.slot == earlier.finding.slot);
        let threshold = group_above(&rule);
        if is_builtin(&rule) || members.len() <= threshold {
            out.findings.extend(members.into_iter().map(|m| m.finding));
            continue;
        }
        // Gating first; the sort is stable, so each effect keeps subject order.
        members.sort_by_key(|m| std::cmp::Reverse(m.finding.effect));
        for part in grouped_parts(&rule, threshold, members) {
            out.members.insert(part.finding.slot.clone(), part.members);
            out.findings.push(part.finding);
        }
    }
    out.findings.sort_by(|a, b| a.slot.cmp(&b.slot));
    out
}

/// One part of a grouped finding and the members it lists.
struct Part {
    finding: Finding,
    members: Vec<MemberFinding>,
}

/// The parts of the grouped finding of `members` (in listing order, one per subject): one
/// when every member line fits one message, otherwise as few as fit, packed in order. The
/// members' findings move into the parts rather than being copied: a group can hold hundreds
/// of thousands of them.
fn grouped_parts(rule: &str, threshold: usize, members: Vec<Fired<'_>>) -> Vec<Part> {
    let strongest = members
        .iter()
        .map(|m| m.finding.effect)
        .max()
        .unwrap_or(Effect::Comment);
    // Measured against the strongest effect of all: a part's own effect is never stronger,
    // so its lines are never longer than measured here.
    let lengths: Vec<usize> = members
        .iter()
        .map(|m| member_line(m, strongest).chars().count())
        .collect();
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, len) in lengths.iter().enumerate() {
        if i > start && used + len > LISTING_BUDGET_CHARS {
            ranges.push(start..i);
            start = i;
            used = 0;
        }
        used += len;
    }
    ranges.push(start..members.len());
    let count = ranges.len();
    let findings: Vec<Finding> = ranges
        .iter()
        .enumerate()
        .map(|(i, range)| {
            let part = PartOf {
                index: i + 1,
                count,
                first: range.start + 1,
                last: range.end,
                total: members.len(),
            };
            grouped(rule, threshold, part, &members[range.clone()])
        })
        .collect();
    let mut members = members.into_iter();
    findings
        .into_iter()
        .zip(ranges)
        .map(|(finding, range)| Part {
            finding,
            members: members
                .by_ref()
                .take(range.len())
                .map(|m| MemberFinding {
                    finding: m.finding,
                    kind: m.kind,
                })
                .collect(),
        })
        .collect()
}

/// Which part of how many a grouped finding is, and which members (1-based, in listing
/// order, of `total`) it lists.
#[derive(Debug, Clone, Copy)]
struct PartOf {
    index: usize,
    count: usize,
    first: usize,
    last: usize,
    total: usize,
}

/// The grouped finding of part `part`, listing `members`.
fn grouped(rule: &str, threshold: usize, part: PartOf, members: &[Fired<'_>]) -> Finding {
    let judged: Vec<GroupMember<'_>> = members
        .iter()
        .map(|m| GroupMember {
            subject: &m.finding.slot.subject,
            kind: m.kind,
            old: m.old,
            new: m.new,
        })
        .collect();
    let effect = members
        .iter()
        .map(|m| m.finding.effect)
        .max()
        .unwrap_or(Effect::Comment);
    let subject = group_part_subject(part.index);
    Finding {
        occurrence: Occurrence::of_group_part(rule, &subject, &judged),
        slot: Slot {
            rule: rule.to_owned(),
            subject,
        },
        effect,
        message: group_message(threshold, effect, part, members),
    }
}

fn group_message(threshold: usize, effect: Effect, part: PartOf, members: &[Fired<'_>]) -> String {
    let mut text = if part.count == 1 {
        format!(
            "**This rule fired {} times** in this merge request, more than its threshold of \
             {threshold} (`group_above`), so its findings share this one thread: its \
             resolution counts for every one of them, and a change to any of them (or one more \
             or fewer) opens a fresh thread.",
            part.total
        )
    } else {
        format!(
            "**This rule fired {} times** in this merge request, more than its threshold of \
             {threshold} (`group_above`), and its findings are too many for one note, so they \
             are split over {} threads. **This is part {} of {}**, with findings {}–{}: its \
             resolution counts for these {} and no others, and a change to any of them (or \
             one more or fewer before its end) opens a fresh thread.",
            part.total,
            part.count,
            part.index,
            part.count,
            part.first,
            part.last,
            members.len()
        )
    };
    if let Some(first) = members.first() {
        let line = first.finding.message.lines().next().unwrap_or("");
        text.push_str(&format!(
            "\n\nFor the first of them the rule says: {}",
            inert::cut_line(line, EXAMPLE_MESSAGE_CHARS)
        ));
    }
    let mixed = members.iter().any(|m| m.finding.effect != effect);
    text.push_str(if mixed {
        "\n\nThe findings, gating first (block, then challenge, then comment), each by subject:\n"
    } else {
        "\n\nThe findings, by subject:\n"
    });
    for member in members {
        text.push_str(&member_line(member, effect));
    }
    text.trim_end().to_owned()
}

/// `- <subject>: <what changed>` and, when it differs from the group's, the member's own
/// effect (a `when` that failed makes a member `block`).
fn member_line(member: &Fired<'_>, group_effect: Effect) -> String {
    let value =
        |v: Option<&Value>| inert::code(&inert::shortened(&value_text(v), MEMBER_VALUE_CHARS));
    let change = match member.kind {
        ChangeKind::Add => format!("added as {}", value(member.new)),
        ChangeKind::Delete => format!("deleted (was {})", value(member.old)),
        ChangeKind::Modify => format!("{} → {}", value(member.old), value(member.new)),
    };
    let effect = if member.finding.effect == group_effect {
        String::new()
    } else {
        format!(" ({})", member.finding.effect.as_str())
    };
    format!(
        "- {}: {change}{effect}\n",
        inert::code(&inert::shortened(
            &member.finding.slot.subject,
            MEMBER_SUBJECT_CHARS
        ))
    )
}

/// A value as messages show it: strings bare, other JSON compact and canonical, absent
/// `null` (as message templates render placeholders).
fn value_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "null".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => canonical_json::to_string(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GROUP_SUBJECT;
    use serde_json::json;

    fn fired<'a>(
        rule: &str,
        subject: &str,
        effect: Effect,
        old: &'a Value,
        new: &'a Value,
    ) -> Fired<'a> {
        Fired {
            finding: Finding {
                slot: Slot {
                    rule: rule.into(),
                    subject: subject.into(),
                },
                effect,
                occurrence: Occurrence::of(rule, subject, ChangeKind::Modify, Some(old), Some(new)),
                message: format!("Rule fired on {}.", inert::code(subject)),
            },
            kind: ChangeKind::Modify,
            old: Some(old),
            new: Some(new),
        }
    }

    fn values(n: usize) -> Vec<(Value, Value)> {
        (0..n).map(|i| (json!(30), json!(i))).collect()
    }

    fn many<'a>(rule: &str, vals: &'a [(Value, Value)]) -> Vec<Fired<'a>> {
        vals.iter()
            .enumerate()
            .map(|(i, (old, new))| {
                fired(
                    rule,
                    &format!("t.yaml#/t/{i:04}"),
                    Effect::Challenge,
                    old,
                    new,
                )
            })
            .collect()
    }

    #[test]
    fn at_the_threshold_findings_stay_apart_above_it_they_are_one() {
        let vals = values(26);
        let at = group_findings(many("r", &vals[..25]), |_| DEFAULT_GROUP_ABOVE);
        assert_eq!(at.len(), 25);
        assert!(at.iter().all(|f| f.slot.subject != GROUP_SUBJECT));
        let above = group_findings(many("r", &vals), |_| DEFAULT_GROUP_ABOVE);
        assert_eq!(above.len(), 1);
        let group = &above[0];
        assert_eq!(
            group.slot,
            Slot {
                rule: "r".into(),
                subject: "*".into()
            }
        );
        assert_eq!(group.effect, Effect::Challenge);
        assert!(
            group.message.contains("fired 26 times"),
            "{}",
            group.message
        );
        assert!(
            group.message.contains("- `t.yaml#/t/0000`: `30` → `0`"),
            "{}",
            group.message
        );
        // A rule's own threshold decides.
        assert_eq!(group_findings(many("r", &vals[..3]), |_| 2).len(), 1);
        assert_eq!(group_findings(many("r", &vals), |_| 26).len(), 26);
    }

    #[test]
    fn the_occurrence_pins_the_documented_canonical_form() {
        let vals = values(2);
        let group = group_findings(many("r", &vals), |_| 1).remove(0);
        let expected = Occurrence::digest(
            br#"{"members":[{"kind":"modify","new":0,"old":30,"subject":"t.yaml#/t/0000"},{"kind":"modify","new":1,"old":30,"subject":"t.yaml#/t/0001"}],"rule":"r","subject":"*"}"#,
        );
        assert_eq!(group.occurrence, expected);
    }

    #[test]
    fn input_order_does_not_matter_and_any_member_change_is_a_new_occurrence() {
        let vals = values(30);
        let forward = group_findings(many("r", &vals), |_| DEFAULT_GROUP_ABOVE);
        let mut reversed = many("r", &vals);
        reversed.reverse();
        assert_eq!(forward, group_findings(reversed, |_| DEFAULT_GROUP_ABOVE));

        let mut changed = vals.clone();
        changed[17].1 = json!(99);
        let other = group_findings(many("r", &changed), |_| DEFAULT_GROUP_ABOVE);
        assert_ne!(forward[0].occurrence, other[0].occurrence);
        let fewer = group_findings(many("r", &vals[..29]), |_| DEFAULT_GROUP_ABOVE);
        assert_ne!(forward[0].occurrence, fewer[0].occurrence);
    }

    #[test]
    fn the_strongest_member_effect_wins_and_is_named_on_its_line() {
        let vals = values(3);
        let mut members = many("r", &vals);
        members[1].finding.effect = Effect::Block;
        members[2].finding.effect = Effect::Comment;
        let group = group_findings(members, |_| 2).remove(0);
        assert_eq!(group.effect, Effect::Block);
        assert!(
            group
                .message
                .contains("`t.yaml#/t/0000`: `30` → `0` (challenge)"),
            "{}",
            group.message
        );
        assert!(
            group.message.contains("`t.yaml#/t/0001`: `30` → `1`\n"),
            "{}",
            group.message
        );
        assert!(
            group
                .message
                .contains("`t.yaml#/t/0002`: `30` → `2` (comment)"),
            "{}",
            group.message
        );
    }

    #[test]
    fn rules_are_grouped_each_on_its_own_and_builtins_never() {
        let vals = values(30);
        let mut fired = many("big", &vals);
        fired.extend(many("small", &vals[..3]));
        fired.extend(many("assent/parse-error", &vals));
        let out = group_findings(fired, |_| DEFAULT_GROUP_ABOVE);
        let count = |rule: &str| out.iter().filter(|f| f.slot.rule == rule).count();
        assert_eq!(count("big"), 1);
        assert_eq!(count("small"), 3);
        assert_eq!(count("assent/parse-error"), 30);
        assert!(
            out.windows(2).all(|w| w[0].slot < w[1].slot),
            "sorted by slot"
        );
    }

    #[test]
    fn one_slot_counts_once_however_often_it_fired() {
        let vals = values(2);
        let twice = vec![
            fired("r", "s", Effect::Comment, &vals[0].0, &vals[0].1),
            fired("r", "s", Effect::Block, &vals[1].0, &vals[1].1),
        ];
        let out = group_findings(twice, |_| 1);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].slot.subject, "s",
            "one distinct subject is not above 1"
        );
        assert_eq!(out[0].effect, Effect::Block);
    }

    /// The listed subjects of `message`, in order.
    fn listed(message: &str) -> Vec<String> {
        message
            .lines()
            .filter(|l| l.starts_with("- `"))
            .map(|l| l[3..].split('`').next().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn every_member_is_listed_gating_first_and_kept_beside_the_group() {
        // 110 harmless members sort before the one that matters: none may be hidden.
        let vals = values(6_000);
        let mut members = many("r", &vals);
        let risky = (json!(30), json!(1));
        members.push(fired(
            "r",
            "topics/orders.yaml#/topics/orders.events.v1/retention_days",
            Effect::Challenge,
            &risky.0,
            &risky.1,
        ));
        members[5_999].finding.effect = Effect::Block;
        members[3].finding.effect = Effect::Comment;
        let grouped = group_fired(members, |_| DEFAULT_GROUP_ABOVE);
        assert_eq!(
            grouped.findings.len(),
            1,
            "6,001 short members fit one note"
        );
        let group = &grouped.findings[0];
        assert_eq!(group.slot.subject, GROUP_SUBJECT);
        assert_eq!(group.effect, Effect::Block);
        let subjects = listed(&group.message);
        assert_eq!(subjects.len(), 6_001);
        assert_eq!(subjects[0], "t.yaml#/t/5999", "the block first");
        assert_eq!(subjects[6_000], "t.yaml#/t/0003", "the comment last");
        assert!(
            group.message.contains(
                "- `topics/orders.yaml#/topics/orders.events.v1/retention_days`: `30` → `1` (challenge)"
            ),
            "the risky member is named"
        );
        assert!(!group.message.contains("more, not listed"));
        assert!(
            group
                .message
                .contains("For the first of them the rule says: Rule fired on `t.yaml#/t/5999`.")
        );
        let kept: Vec<&str> = grouped.members[&group.slot]
            .iter()
            .map(|m| m.finding.slot.subject.as_str())
            .collect();
        assert_eq!(kept, subjects, "the members are kept in the thread's order");
    }

    #[test]
    fn members_too_many_for_one_note_are_split_into_parts_each_its_own_group() {
        let long = "v".repeat(MEMBER_VALUE_CHARS);
        let vals: Vec<(Value, Value)> = (0..2_500)
            .map(|i| (json!(format!("{long}{i}")), json!(format!("{i}{long}"))))
            .collect();
        let members: Vec<Fired<'_>> = vals
            .iter()
            .enumerate()
            .map(|(i, (old, new))| {
                let subject = format!("t.yaml#/t/{i:05}/{}", "k".repeat(280));
                let mut f = fired("r", &subject, Effect::Challenge, old, new);
                if i == 2_400 {
                    f.finding.effect = Effect::Block;
                }
                f
            })
            .collect();
        let grouped = group_fired(members.clone(), |_| DEFAULT_GROUP_ABOVE);
        let subjects: Vec<&str> = grouped
            .findings
            .iter()
            .map(|f| f.slot.subject.as_str())
            .collect();
        let count = subjects.len();
        assert!(count >= 3, "{count} parts");
        let expected: Vec<String> = (1..=count).map(group_part_subject).collect();
        assert_eq!(subjects, expected);
        assert_eq!(expected[..3], ["*", "*2", "*3"]);
        let mut seen = BTreeMap::new();
        for (i, part) in grouped.findings.iter().enumerate() {
            assert!(part.message.chars().count() <= MAX_GROUP_MESSAGE_CHARS);
            assert!(
                part.message
                    .contains(&format!("**This is part {} of {count}**", i + 1)),
                "{}",
                &part.message[..400]
            );
            let kept = &grouped.members[&part.slot];
            let judged: Vec<GroupMember<'_>> = kept
                .iter()
                .map(|m| {
                    let index: usize = m.finding.slot.subject[10..15].parse().unwrap();
                    GroupMember {
                        subject: &members[index].finding.slot.subject,
                        kind: m.kind,
                        old: members[index].old,
                        new: members[index].new,
                    }
                })
                .collect();
            assert_eq!(
                part.occurrence,
                Occurrence::of_group_part("r", &part.slot.subject, &judged),
                "a part's occurrence covers exactly its members"
            );
            let expected = kept.iter().map(|m| m.finding.effect).max().unwrap();
            assert_eq!(part.effect, expected);
            assert_eq!(listed(&part.message).len(), kept.len());
            for m in kept {
                *seen
                    .entry(m.finding.slot.subject[10..15].to_owned())
                    .or_insert(0) += 1;
            }
        }
        assert_eq!(seen.len(), 2_500);
        assert!(
            seen.values().all(|&n| n == 1),
            "each member in exactly one part"
        );
        assert_eq!(grouped.findings[0].effect, Effect::Block, "gating first");
        assert!(
            grouped.findings[1..]
                .iter()
                .all(|f| f.effect == Effect::Challenge)
        );

        // A value change of one member leaves the other parts' occurrences as they were.
        let mut changed = vals.clone();
        changed[2_000].1 = json!(format!("2001{long}"));
        let changed_members: Vec<Fired<'_>> = members
            .iter()
            .enumerate()
            .map(|(i, m)| Fired {
                new: Some(&changed[i].1),
                ..m.clone()
            })
            .collect();
        let again = group_fired(changed_members, |_| DEFAULT_GROUP_ABOVE);
        let differ: Vec<&str> = grouped
            .findings
            .iter()
            .zip(&again.findings)
            .filter(|(a, b)| a.occurrence != b.occurrence)
            .map(|(a, _)| a.slot.subject.as_str())
            .collect();
        assert_eq!(differ.len(), 1, "{differ:?}");
    }

    #[test]
    fn long_and_hostile_member_text_is_shortened_and_inert() {
        let huge = json!(format!(
            "@all `x` <img src=x>\n/close {}",
            "v".repeat(1_000_000)
        ));
        let old = json!("a");
        let members: Vec<Fired<'_>> = (0..3)
            .map(|i| {
                fired(
                    "r",
                    &format!("t.yaml#/{}{i}", "k".repeat(100_000)),
                    Effect::Challenge,
                    &old,
                    &huge,
                )
            })
            .collect();
        let group = group_findings(members, |_| 2).remove(0);
        assert!(
            group.message.chars().count() < 10_000,
            "{}",
            group.message.len()
        );
        assert!(!group.message.lines().any(|l| l.starts_with('/')));
        assert!(group.message.contains("characters, sha256:"));
        for line in group.message.lines().filter(|l| l.starts_with("- ")) {
            let outside: String = {
                let spans = inert::code_spans(line);
                let mut rest = line.to_owned();
                for span in spans.iter().rev() {
                    rest.replace_range(span.whole.clone(), "");
                }
                rest
            };
            assert!(!outside.contains('@') && !outside.contains('<'), "{line}");
        }
    }
}
