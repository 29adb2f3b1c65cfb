//! GitLab's Code Quality report of a run's findings (docs/contract.md#code-quality).
//!
//! `assent run --codequality PATH` writes this document next to the receipt; a CI job that
//! declares it as `artifacts:reports:codequality` makes GitLab show every finding in the
//! merge request's Code Quality widget and, on the changed lines, in the diff's gutter, even
//! where discussions are collapsed. One entry per finding, in slot order, so identical inputs
//! give byte-identical files; a grouped finding gives one entry per **member** instead, in
//! its thread's order, each with the member's own message, fingerprint, severity and
//! location, so no member of a group is missing from the widget:
//!
//! | key | value |
//! | --- | --- |
//! | `type` | `issue` (Code Climate's issue type) |
//! | `description` | the finding's message (Markdown as in its thread) on one line (its lines joined by a space), cut at [`MAX_DESCRIPTION_CHARS`] |
//! | `check_name` | the rule id |
//! | `categories` | `["Bug Risk"]` ([`CATEGORY`]): Code Climate requires one, GitLab ignores it |
//! | `fingerprint` | the occurrence's 64 hex digits: the same judged content keeps its entry across pipelines |
//! | `severity` | `info` (comment), `major` (challenge), `blocker` (block) |
//! | `location.path` | the file of the judged value; a built-in finding's subject without its `#` |
//! | `location.lines.begin` | the new value's line at the source SHA; 1 when unknown, and for a delete (its value has no line at the source) |

use serde::Serialize;

use crate::model::{DesiredState, Effect, Finding};

/// A description longer than this many characters is cut (a message may be up to 100,000).
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;

#[derive(Serialize)]
struct Issue<'a> {
    /// Code Climate's issue type: always `issue`.
    #[serde(rename = "type")]
    kind: &'static str,
    description: String,
    check_name: &'a str,
    categories: [&'static str; 1],
    fingerprint: &'a str,
    severity: &'static str,
    location: Location<'a>,
}

#[derive(Serialize)]
struct Location<'a> {
    path: &'a str,
    lines: Lines,
}

#[derive(Serialize)]
struct Lines {
    begin: usize,
}

/// The Code Quality severity of an effect.
pub fn severity(effect: Effect) -> &'static str {
    match effect {
        Effect::Comment => "info",
        Effect::Challenge => "major",
        Effect::Block => "blocker",
    }
}

/// The report of `desired`'s findings: a JSON array, pretty-printed, ending in a newline.
pub fn codequality_report(desired: &DesiredState) -> String {
    let issues: Vec<Issue<'_>> = desired
        .findings
        .iter()
        .flat_map(|f| match desired.members_of(&f.slot) {
            [] => vec![issue(desired, f)],
            members => members.iter().map(|m| issue(desired, &m.finding)).collect(),
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&issues).expect("plain data serializes");
    text.push('\n');
    text
}

fn issue<'a>(desired: &'a DesiredState, finding: &'a Finding) -> Issue<'a> {
    let site = desired.site(&finding.slot);
    let subject = finding.slot.subject.as_str();
    let path = match site {
        Some(site) => site.file.as_str(),
        None => subject.strip_suffix('#').unwrap_or(subject),
    };
    let begin = site.and_then(|s| s.new_line).unwrap_or(1);
    let hex = finding.occurrence.as_str();
    Issue {
        kind: "issue",
        description: cut(&one_line(&finding.message), MAX_DESCRIPTION_CHARS),
        check_name: &finding.slot.rule,
        categories: [CATEGORY],
        fingerprint: hex.strip_prefix("sha256:").unwrap_or(hex),
        severity: severity(finding.effect),
        location: Location {
            path,
            lines: Lines { begin },
        },
    }
}

/// The Code Climate category of every entry: a policy finding flags a change that may
/// break what reads the configuration.
pub const CATEGORY: &str = "Bug Risk";

/// `text` on one line: its lines joined by a space (the widget shows one line), blank lines
/// and trailing spaces dropped, nothing else changed.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text`, or its first `max` characters followed by `…`.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{ChangeKind, FindingSite, GROUP_SUBJECT, MemberFinding, Occurrence, Slot};

    fn finding(rule: &str, subject: &str, effect: Effect, message: &str) -> Finding {
        Finding {
            slot: Slot {
                rule: rule.into(),
                subject: subject.into(),
            },
            effect,
            occurrence: Occurrence::of(rule, subject, ChangeKind::Modify, None, None),
            message: message.into(),
        }
    }

    fn site(file: &str, kind: ChangeKind, old: Option<usize>, new: Option<usize>) -> FindingSite {
        FindingSite {
            file: file.into(),
            kind,
            whole_file: false,
            old_line: old,
            new_line: new,
        }
    }

    fn desired() -> DesiredState {
        let findings = vec![
            finding(
                "retention-shrink",
                "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                Effect::Challenge,
                "Retention of `orders.events.v1` shrinks from `30` to `7` days.",
            ),
            finding(
                "topic-deleted",
                "topics/orders.yaml#/topics/orders.audit.v1",
                Effect::Block,
                "Topic `orders.audit.v1` is deleted.",
            ),
            finding(
                "owner-changed",
                GROUP_SUBJECT,
                Effect::Comment,
                "Owner changed on 30 topics.",
            ),
            finding(
                "assent/self-edit",
                ".assent/policies/topics.yaml#",
                Effect::Block,
                "This merge request changes `.assent/policies/topics.yaml`.",
            ),
        ];
        let sites: BTreeMap<Slot, FindingSite> = [
            (
                findings[0].slot.clone(),
                site("topics/orders.yaml", ChangeKind::Modify, Some(3), Some(5)),
            ),
            (
                findings[1].slot.clone(),
                site("topics/orders.yaml", ChangeKind::Delete, Some(4), None),
            ),
            (
                findings[2].slot.clone(),
                site("topics/team.yaml", ChangeKind::Modify, Some(2), Some(2)),
            ),
        ]
        .into_iter()
        .collect();
        DesiredState::new(findings).with_sites(sites)
    }

    #[test]
    fn one_entry_per_finding_with_rule_fingerprint_severity_and_location() {
        let report = codequality_report(&desired());
        insta::assert_snapshot!(report);
        let parsed: serde_json::Value = serde_json::from_str(&report).unwrap();
        let entries = parsed.as_array().unwrap();
        assert_eq!(entries.len(), 4);
        for (entry, finding) in entries.iter().zip(&desired().findings) {
            assert_eq!(
                entry["fingerprint"].as_str().map(|f| format!("sha256:{f}")),
                Some(finding.occurrence.to_string())
            );
            assert_eq!(entry["check_name"], finding.slot.rule.as_str());
        }
    }

    #[test]
    fn identical_inputs_give_identical_bytes_and_no_finding_an_empty_array() {
        assert_eq!(
            codequality_report(&desired()),
            codequality_report(&desired())
        );
        assert_eq!(codequality_report(&DesiredState::default()), "[]\n");
    }

    #[test]
    fn a_grouped_finding_gives_one_entry_per_member_at_its_own_line() {
        let member = |subject: &str, effect: Effect| MemberFinding {
            finding: finding(
                "retention-shrink",
                subject,
                effect,
                &format!("{subject} shrinks."),
            ),
            kind: ChangeKind::Modify,
        };
        let members = vec![
            member(
                "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                Effect::Block,
            ),
            member(
                "topics/a-scratch.yaml#/topics/s0/retention_days",
                Effect::Challenge,
            ),
        ];
        let group = finding(
            "retention-shrink",
            GROUP_SUBJECT,
            Effect::Block,
            "Fired 2 times.",
        );
        let sites: BTreeMap<Slot, FindingSite> = [
            (
                group.slot.clone(),
                site("topics/orders.yaml", ChangeKind::Modify, Some(3), Some(3)),
            ),
            (
                members[0].finding.slot.clone(),
                site("topics/orders.yaml", ChangeKind::Modify, Some(3), Some(3)),
            ),
            (
                members[1].finding.slot.clone(),
                site(
                    "topics/a-scratch.yaml",
                    ChangeKind::Modify,
                    Some(9),
                    Some(9),
                ),
            ),
        ]
        .into_iter()
        .collect();
        let state = DesiredState::new(vec![group.clone()])
            .with_members(BTreeMap::from([(group.slot.clone(), members.clone())]))
            .with_sites(sites);
        let parsed: serde_json::Value = serde_json::from_str(&codequality_report(&state)).unwrap();
        let entries = parsed.as_array().unwrap();
        assert_eq!(entries.len(), 2, "{parsed:#}");
        for (entry, m) in entries.iter().zip(&members) {
            assert_eq!(entry["description"], m.finding.message.as_str());
            assert_eq!(
                entry["fingerprint"].as_str().map(|f| format!("sha256:{f}")),
                Some(m.finding.occurrence.to_string())
            );
            assert_eq!(entry["severity"], severity(m.finding.effect));
        }
        assert_eq!(entries[0]["location"]["path"], "topics/orders.yaml");
        assert_eq!(entries[1]["location"]["path"], "topics/a-scratch.yaml");
        assert_eq!(entries[1]["location"]["lines"]["begin"], 9);
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_DESCRIPTION_CHARS + 10);
        let state = DesiredState::new(vec![finding("r", "f#", Effect::Comment, &long)]);
        let parsed: serde_json::Value = serde_json::from_str(&codequality_report(&state)).unwrap();
        let description = parsed[0]["description"].as_str().unwrap();
        assert_eq!(description.chars().count(), MAX_DESCRIPTION_CHARS + 1);
        assert!(description.ends_with('…'));
        assert_eq!(parsed[0]["location"]["path"], "f");
        assert_eq!(parsed[0]["location"]["lines"]["begin"], 1);
        assert_eq!(parsed[0]["severity"], "info");
    }

    #[test]
    fn entries_are_code_climate_issues_with_a_one_line_description() {
        let state = DesiredState::new(vec![finding(
            "assent/policy-error",
            ".assent/policies#",
            Effect::Block,
            "The policies do not load:\n- `a.yaml:3: bad`\n\n- `b.yaml:9: worse`  ",
        )]);
        let parsed: serde_json::Value = serde_json::from_str(&codequality_report(&state)).unwrap();
        let entry = &parsed[0];
        assert_eq!(entry["type"], "issue");
        assert_eq!(entry["categories"], serde_json::json!(["Bug Risk"]));
        assert_eq!(
            entry["description"],
            "The policies do not load: - `a.yaml:3: bad` - `b.yaml:9: worse`"
        );
        let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
        assert_eq!(
            keys.len(),
            7,
            "type, description, check_name, categories, fingerprint, severity, location: {keys:?}"
        );
    }
}
