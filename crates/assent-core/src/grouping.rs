//! Grouping (SPEC §11.3): a rule that fires many times in one merge request publishes one
//! thread for all of its findings.
//!
//! A thousand threads is no review a human can do, and GitLab rate-limits note creation, so
//! when a policy rule fires more than its threshold ([`DEFAULT_GROUP_ABOVE`], or the rule's
//! `group_above`) its findings become one **grouped finding**:
//!
//! * slot `(rule, "*")` ([`GROUP_SUBJECT`]);
//! * occurrence [`Occurrence::of_group`] over every member's `{subject, kind, old, new}`, so
//!   a member added, removed or changed gives a new occurrence and the thread is superseded
//!   through the ordinary state table;
//! * effect: the strongest of the members' (`block` > `challenge` > `comment`);
//! * message: how many members there are, the rule's message for the first of them, and the
//!   members themselves, at most [`MAX_LISTED_MEMBERS`] and [`MAX_LISTING_CHARS`] of them,
//!   then how many more there are. Every subject and value goes through
//!   [`inert::code`], shortened by [`inert::shortened`].
//!
//! A grouped finding is an ordinary desired finding: the planner, the rescan, the receipt
//! (one finding for the group) and the assent rules (SPEC §10.1, by rule id) need no case of
//! their own. A rule that drops back to its threshold or under has per-subject findings again;
//! the group slot is then no longer desired and its thread is resolved as outdated, like any
//! other. Built-in findings (`assent/…`) are never grouped: each names its own problem.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::canonical_json;
use crate::inert;
use crate::model::{ChangeKind, Effect, Finding, GROUP_SUBJECT, GroupMember, Occurrence, Slot};

/// A rule that fires more than this many times in one merge request is grouped, unless its
/// policy sets `group_above`.
pub const DEFAULT_GROUP_ABOVE: usize = 25;

/// At most this many members are listed in a grouped thread; the rest are counted.
pub const MAX_LISTED_MEMBERS: usize = 100;

/// The member list of a grouped thread stops before it passes this many characters, even
/// with fewer than [`MAX_LISTED_MEMBERS`] listed, so long subjects or values cannot make the
/// note too large.
pub const MAX_LISTING_CHARS: usize = 50_000;

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

/// Whether `rule` is a built-in rule (never grouped).
pub fn is_builtin(rule: &str) -> bool {
    rule.starts_with("assent/")
}

/// The findings to publish for `fired`: each rule's findings as they are, or, for a rule
/// with more than `group_above(rule)` findings (distinct subjects), one grouped finding.
/// Two findings of one slot count once, the stronger kept (as [`crate::model::DesiredState`]
/// keeps it). The output is sorted by slot and does not depend on the input order.
pub fn group_findings(fired: Vec<Fired<'_>>, group_above: impl Fn(&str) -> usize) -> Vec<Finding> {
    let mut by_rule: BTreeMap<String, Vec<Fired<'_>>> = BTreeMap::new();
    for f in fired {
        by_rule
            .entry(f.finding.slot.rule.clone())
            .or_default()
            .push(f);
    }
    let mut out = Vec::new();
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
            out.extend(members.into_iter().map(|m| m.finding));
        } else {
            out.push(grouped(&rule, threshold, &members));
        }
    }
    out.sort_by(|a, b| a.slot.cmp(&b.slot));
    out
}

/// The grouped finding of `members` (sorted by subject, one per subject).
fn grouped(rule: &str, threshold: usize, members: &[Fired<'_>]) -> Finding {
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
    Finding {
        slot: Slot {
            rule: rule.to_owned(),
            subject: GROUP_SUBJECT.to_owned(),
        },
        effect,
        occurrence: Occurrence::of_group(rule, &judged),
        message: group_message(threshold, effect, members),
    }
}

fn group_message(threshold: usize, effect: Effect, members: &[Fired<'_>]) -> String {
    let mut text = format!(
        "**This rule fired {} times** in this merge request, more than its threshold of \
         {threshold} (`group_above`), so its findings share this one thread: its resolution \
         counts for every one of them, and a change to any of them (or one more or fewer) \
         opens a fresh thread.",
        members.len()
    );
    if let Some(first) = members.first() {
        let line = first.finding.message.lines().next().unwrap_or("");
        text.push_str(&format!(
            "\n\nFor the first of them the rule says: {}",
            inert::cut_line(line, EXAMPLE_MESSAGE_CHARS)
        ));
    }
    text.push_str("\n\nThe findings, by subject:\n");
    let mut used = 0;
    let mut listed = 0;
    for member in members.iter().take(MAX_LISTED_MEMBERS) {
        let line = member_line(member, effect);
        let len = line.chars().count();
        if used + len > MAX_LISTING_CHARS {
            break;
        }
        text.push_str(&line);
        used += len;
        listed += 1;
    }
    let more = members.len() - listed;
    if more > 0 {
        text.push_str(&format!(
            "- … and {more} more, not listed here so that the note stays within GitLab's size \
             limit; the merge request's changes show every one.\n"
        ));
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

    #[test]
    fn the_listing_is_capped_and_counts_the_rest() {
        let vals = values(6_000);
        let group = group_findings(many("r", &vals), |_| DEFAULT_GROUP_ABOVE).remove(0);
        let listed = group
            .message
            .lines()
            .filter(|l| l.starts_with("- `"))
            .count();
        assert_eq!(listed, MAX_LISTED_MEMBERS);
        assert!(
            group
                .message
                .contains(&format!("- … and {} more,", 6_000 - MAX_LISTED_MEMBERS)),
            "{}",
            group.message
        );
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
