//! The Markdown bodies assent writes: finding threads, replies and the summary note.
//!
//! Every body is a pure function of its inputs (no clock, no run counter), so a rerun on an
//! unchanged merge request renders byte-identical bodies and makes zero writes. Every body
//! line goes through [`marker::compose_body`] or [`marker::escape_body_line`], so none starts
//! with `/` (a GitLab quick action), and no body ends in whitespace, so a forge that trims
//! stored bodies cannot make the byte comparison that decides an edit see a change. Rule ids,
//! subjects and every other string that can come from the merge request are rendered with
//! [`inert::code`] (docs/contract.md#inert-text); messages arrive already composed that way.
//!
//! # Note size (docs/contract.md#note-size)
//!
//! GitLab refuses a note over 1,000,000 characters, and a refused summary or thread would
//! fail every run on the merge request. Every body rendered here stays under
//! [`BODY_BUDGET_CHARS`] by construction, whatever the desired state:
//!
//! * a thread's message is cut at [`MAX_MESSAGE_CHARS`] ([`inert::cut_markdown`]); values
//!   inside it were already shortened with their digest kept (`policy::template`); a grouped
//!   finding's, which lists every member, at [`MAX_GROUP_MESSAGE_CHARS`], within which
//!   [`crate::grouping`] splits a group into parts;
//! * subjects are at most about [`crate::model::MAX_SUBJECT_CHARS`]
//!   ([`crate::model::DesiredState::new`]) and rule ids at most
//!   [`crate::policy::MAX_RULE_ID_CHARS`], so a marker and a headline are small;
//! * the summary's table lists at most [`MAX_SUMMARY_ROWS`] findings, gating ones first,
//!   and says how many more the receipt holds; each cell is cut at [`MAX_CELL_CHARS`];
//!   the "Resolved without assent" list is capped the same way;
//! * replies and the collapsed summary are fixed sentences.
//!
//! # Links (docs/contract.md#file-links)
//!
//! A thread's headline links to the file of its finding at the pinned SHA, on the judged
//! value's line ([`crate::placement`] decides the destination, [`crate::links`] makes it
//! inert), and each summary row links to its thread and its file. Link texts are fixed
//! wording (`line 12`, `file`, `… before the change`), never contributor text. A thread body
//! is created once and never edited, so the SHA in its link causes no write on a rerun; the
//! summary names the head anyway and is rewritten when the head moves.

use crate::canonical_json;
use crate::commit_sha::CommitSha;
use crate::desired_state::RULE_SELF_EDIT;
use crate::grouping::MAX_GROUP_MESSAGE_CHARS;
use crate::inert;
use crate::inventory::Inventory;
use crate::links::{WebUrl, note_url};
use crate::marker::{self, GateLine, Marker, SummaryState};
use crate::model::{
    Decision, DesiredState, Effect, FileLink, Finding, Occurrence, Pins, is_group_subject,
};
use crate::resolutions::resolution_fingerprint;
use crate::review_state::{FindingStatus, decide};
use crate::who_assents::Assent;

/// What every body assent writes stays under, in characters: well below GitLab's
/// 1,000,000-character note limit, leaving room for anything GitLab counts differently.
pub const BODY_BUDGET_CHARS: usize = 900_000;

/// What every built-in rule id starts with (`assent/self-edit`, `assent/parse-error`, …); a
/// user rule id cannot contain `/`.
const BUILT_IN_PREFIX: &str = "assent/";

/// A thread's message is cut after this many characters.
pub const MAX_MESSAGE_CHARS: usize = 100_000;

/// The summary's table lists at most this many findings (the receipt lists every one).
pub const MAX_SUMMARY_ROWS: usize = 200;

/// A summary table cell (rule, subject, message) shows at most about this many characters.
pub const MAX_CELL_CHARS: usize = 200;

/// The body of a finding thread: marker line, headline, message (cut at
/// [`MAX_MESSAGE_CHARS`]), what to do.
pub fn finding_thread_body(finding: &Finding) -> String {
    finding_thread_body_linked(finding, None)
}

/// [`finding_thread_body`] whose headline ends in a link to the finding's file, when `link`
/// is given.
pub fn finding_thread_body_linked(finding: &Finding, link: Option<&FileLink>) -> String {
    let marker = Marker::Finding {
        slot: finding.slot.clone(),
        occurrence: finding.occurrence.clone(),
    };
    let built_in = finding.slot.rule.starts_with(BUILT_IN_PREFIX);
    let advice = match finding.effect {
        Effect::Challenge if finding.slot.rule == RULE_SELF_EDIT => {
            "_A policy owner other than the merge request's author assents by resolving this thread; anyone else's resolution does not count. Pushing the file again keeps this thread._"
        }
        Effect::Challenge => {
            "_A reviewer other than the merge request's author assents by resolving this thread; the author's own resolution does not count. A later change to the judged value opens a fresh thread._"
        }
        // A built-in block is no policy's verdict: no policy can allow it, and no
        // resolution assents to it; only what the message names being fixed clears it.
        Effect::Block if built_in => {
            "_This blocks the merge request until what it names is fixed: assent blocks rather than guess, and resolving this thread does not assent to it._"
        }
        Effect::Block => {
            "_This blocks the merge request until the change is reverted or the policy on the target branch allows it._"
        }
        Effect::Comment => "_For information; assent resolves this thread itself._",
    };
    // A policy finding's rule is in the target branch's `.assent/policies/`, where a
    // reviewer can read it; a built-in one is in no file of the repository, so its footer
    // says where it is documented.
    let documented = if built_in {
        format!(
            "\n\n_{} is built into assent and always on: what it checks and how to clear it is in assent's docs/policies.md, \"Built-in findings\"._",
            inert::code(&finding.slot.rule)
        )
    } else {
        String::new()
    };
    let text = format!(
        "**{} {}** · {} · {}{}\n\n{}\n\n{}{documented}",
        effect_icon(finding.effect, false),
        finding.effect.as_str(),
        inert::code(&finding.slot.rule),
        inert::code(&finding.slot.subject),
        link.map(|l| format!(" · {}", file_link(l)))
            .unwrap_or_default(),
        inert::cut_markdown(&finding.message, message_chars(finding)),
        advice
    );
    marker::compose_body(&marker, text.trim_end())
}

/// The most characters of `finding`'s message its thread shows: [`MAX_MESSAGE_CHARS`], or
/// for a grouped finding, whose member list must be shown whole (resolving it assents to
/// every member), [`MAX_GROUP_MESSAGE_CHARS`], which grouping builds its messages within.
fn message_chars(finding: &Finding) -> usize {
    if is_group_subject(&finding.slot.subject) {
        MAX_GROUP_MESSAGE_CHARS
    } else {
        MAX_MESSAGE_CHARS
    }
}

/// `[line 12](url)`: fixed wording around a number; the destination is already inert.
fn file_link(link: &FileLink) -> String {
    let place = match link.line {
        Some(line) => format!("line {line}"),
        None => "file".to_owned(),
    };
    let side = if link.at_base {
        " before the change"
    } else {
        ""
    };
    format!("[{place}{side}]({})", link.url)
}

/// The reply posted before resolving a thread whose slot no longer fires.
pub fn outdated_reply(source_sha: &CommitSha) -> String {
    format!("Outdated as of {source_sha}: this finding no longer fires.")
}

/// The reply posted before resolving a thread whose judged content changed.
pub fn superseded_reply(source_sha: &CommitSha) -> String {
    format!(
        "Superseded as of {source_sha}: the judged content changed; see the newer thread for this finding."
    )
}

/// The reply posted before resolving a duplicate thread.
pub fn duplicate_reply(canonical_forge_id: u64, source_sha: &CommitSha) -> String {
    format!(
        "Duplicate of the thread starting at note {canonical_forge_id}; resolved as of {source_sha}."
    )
}

/// The reply under a previous bot user's summary once the current bot's summary supersedes
/// it (`crate::bot_identity`): the token's user cannot edit another user's note, so the old
/// summary is kept as it was, and this says it no longer tracks the merge request.
pub const ADOPTED_SUMMARY_REPLY: &str = "Superseded: a renewed token gave assent a new bot user, whose summary on this merge request replaces this one. This earlier summary is kept as it was and no longer tracks the merge request.";

/// The marker-less body a duplicate summary is edited to.
pub fn collapsed_summary_body(canonical_note_id: u64) -> String {
    format!("assent: superseded by note {canonical_note_id}.")
}

/// The target branch a run judged against (docs/contract.md#pinned-target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetBranch {
    /// The branch name, as the pipeline pinned it.
    pub name: String,
    /// False when the branch has no policy file under `.assent/policies/` at the pinned
    /// target SHA: nothing was judged by a policy, and the summary says so.
    pub has_policies: bool,
}

/// Where the summary links to, and what it pins.
#[derive(Debug, Clone, Copy)]
pub struct SummaryContext<'a> {
    /// The pinned inputs of the run.
    pub pins: &'a Pins,
    /// The merge request's web URL, for thread links (`<url>#note_<id>`).
    pub web_url: Option<&'a str>,
    /// The pinned target branch, recorded as the marker's `target`; `None` records none
    /// (the sweep then heals the MR once).
    pub target: Option<&'a TargetBranch>,
    /// The listing the statuses come from: its [`resolution_fingerprint`] goes on the gate
    /// line. `None` writes no gate line (the sweep then cannot tell a new resolution from an
    /// old one, and never heals for one).
    pub listing: Option<&'a Inventory>,
}

/// The summary's occurrence: a digest of the desired findings and the head they were
/// computed for.
pub fn summary_occurrence(desired: &DesiredState, source_sha: &CommitSha) -> Occurrence {
    let findings: Vec<serde_json::Value> = desired
        .findings
        .iter()
        .map(|f| {
            serde_json::json!({
                "rule": f.slot.rule,
                "subject": f.slot.subject,
                "effect": f.effect.as_str(),
                "occurrence": f.occurrence.as_str(),
            })
        })
        .collect();
    let doc = serde_json::json!({ "head": source_sha.as_str(), "findings": findings });
    Occurrence::digest(canonical_json::to_string(&doc).as_bytes())
}

/// The summary note body for `statuses` (the desired findings with their threads as the
/// forge shows them) in `state`.
pub fn summary_body(
    ctx: SummaryContext<'_>,
    desired: &DesiredState,
    statuses: &[FindingStatus<'_>],
    state: SummaryState,
) -> String {
    let source_sha = &ctx.pins.source_sha;
    let marker = Marker::Summary {
        occurrence: summary_occurrence(desired, source_sha),
        state,
        source_sha: source_sha.clone(),
        target: ctx.target.map(|t| t.name.clone()),
    };
    let decision = decide(statuses);
    // A web URL the forge reported is linked only when it is inert in Markdown.
    let web_url = ctx.web_url.and_then(WebUrl::parse);
    let web_url = web_url.as_ref();
    let mut text = format!(
        "## assent · {}\n\n{}\n",
        decision.as_str(),
        headline(decision, statuses)
    );
    if let Some(target) = ctx.target.filter(|t| !t.has_policies) {
        text.push_str(&no_policies_line(&target.name));
    }
    if !statuses.is_empty() {
        text.push_str("\n| | Effect | Rule | Subject | Finding | Thread |\n| --- | --- | --- | --- | --- | --- |\n");
        let shown = rows_shown(statuses);
        for status in statuses
            .iter()
            .zip(&shown)
            .filter(|(_, s)| **s)
            .map(|(st, _)| st)
        {
            let f = status.finding;
            let subject_link = desired
                .placement(&f.slot)
                .and_then(|p| p.link.as_ref())
                .map(|l| format!(" · {}", file_link(l)))
                .unwrap_or_default();
            text.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                effect_icon(f.effect, status.assent.is_given()),
                f.effect.as_str(),
                inert::table_cell(&inert::cut_line(&inert::code(&f.slot.rule), MAX_CELL_CHARS)),
                inert::table_cell(&format!(
                    "{}{subject_link}",
                    inert::cut_line(&inert::code(&f.slot.subject), MAX_CELL_CHARS)
                )),
                inert::table_cell(&first_line(&f.message, MAX_CELL_CHARS)),
                thread_cell(web_url, status),
            ));
        }
        let hidden = statuses.len() - shown.iter().filter(|s| **s).count();
        if hidden > 0 {
            text.push_str(&format!(
                "\n… and {hidden} more finding{}, not listed so that this note stays within GitLab's size limit; the receipt lists every finding.\n",
                plural(hidden)
            ));
        }
    }
    push_unassented_resolutions(&mut text, web_url, statuses);
    let state_line = match state {
        SummaryState::Reconciling => format!(
            "Reconciling {}: assent is updating this merge request's threads; a later pipeline finishes the job if this one stops.",
            inert::code(source_sha.short())
        ),
        SummaryState::Verified => format!("Verified for {}.", inert::code(source_sha.short())),
    };
    text.push_str(&format!(
        "\n{} Target {} · base {} · policies {}\n",
        state_line,
        inert::code(ctx.pins.target_sha.short()),
        inert::code(ctx.pins.base_sha.short()),
        inert::code(short_digest(&ctx.pins.policy_digest)),
    ));
    let mut text = text.trim_end().to_owned();
    if let Some(listing) = ctx.listing {
        // Last, so nothing rendered from the MR's content can follow it and pose as it.
        text.push_str("\n\n");
        text.push_str(&marker::encode_gate_line(&GateLine {
            decision,
            resolutions: resolution_fingerprint(listing),
        }));
    }
    marker::compose_body(&marker, &text)
}

/// Which rows of the summary's table are shown: all of them up to [`MAX_SUMMARY_ROWS`];
/// beyond it the ones that matter most for the gate (block, then challenges without assent,
/// then assented challenges, then comments, each in slot order), still shown in slot order.
fn rows_shown(statuses: &[FindingStatus<'_>]) -> Vec<bool> {
    if statuses.len() <= MAX_SUMMARY_ROWS {
        return vec![true; statuses.len()];
    }
    let rank = |s: &FindingStatus<'_>| match (s.finding.effect, s.assent.is_given()) {
        (Effect::Block, _) => 0,
        (Effect::Challenge, false) => 1,
        (Effect::Challenge, true) => 2,
        (Effect::Comment, _) => 3,
    };
    let mut order: Vec<usize> = (0..statuses.len()).collect();
    order.sort_by_key(|&i| (rank(&statuses[i]), i));
    let mut shown = vec![false; statuses.len()];
    for &i in order.iter().take(MAX_SUMMARY_ROWS) {
        shown[i] = true;
    }
    shown
}

/// The statement that the target branch has no policies (docs/contract.md#pinned-target): the decision is not a
/// policy's judgement, and the summary must not read as if it were.
fn no_policies_line(branch: &str) -> String {
    format!(
        "\n⚠️ **No policies on {}.** The target branch has no `.assent/policies/`, so no policy judged this merge request; only the built-in checks ran.\n",
        inert::code(branch)
    )
}

fn headline(decision: Decision, statuses: &[FindingStatus<'_>]) -> String {
    let count =
        |pred: &dyn Fn(&FindingStatus<'_>) -> bool| statuses.iter().filter(|s| pred(s)).count();
    match decision {
        Decision::Block => {
            let n = count(&|s| s.finding.effect == Effect::Block);
            format!(
                "⛔ **{n} blocking finding{}.** The merge request cannot pass this gate until they stop firing.",
                plural(n)
            )
        }
        Decision::Review => {
            let n = count(&|s| s.finding.effect == Effect::Challenge && !s.assent.is_given());
            format!(
                "⏳ **{n} challenge{} await{} assent.** Resolve a challenge's thread to assent to it.",
                plural(n),
                if n == 1 { "s" } else { "" }
            )
        }
        Decision::Approve if statuses.is_empty() => {
            "✅ **No finding.** Nothing in this merge request needs attention.".to_owned()
        }
        Decision::Approve => {
            "✅ **Every challenge has been assented to.** Nothing blocks this merge request."
                .to_owned()
        }
    }
}

/// Lists every challenge resolved by someone whose resolution does not count (docs/contract.md#who-may-assent):
/// who resolved it and why it does not count, so the author learns what to ask for instead
/// of wondering why the gate still says `REVIEW`.
fn push_unassented_resolutions(
    text: &mut String,
    web_url: Option<&WebUrl>,
    statuses: &[FindingStatus<'_>],
) {
    let cell = |t: &str| inert::cut_line(&inert::code(t), MAX_CELL_CHARS);
    let mut lines = statuses.iter().filter_map(|status| match &status.assent {
        Assent::NotCounted { by, reason } => Some(format!(
            "- {} {} on {}: resolved by {}, which does not count as assent: {}.",
            thread_link(web_url, status.forge_id),
            cell(&status.finding.slot.rule),
            cell(&status.finding.slot.subject),
            by.as_ref()
                .map_or_else(|| "an unknown user".to_owned(), |u| cell(&u.username)),
            inert::cut_line(&reason.explain(), 2 * MAX_CELL_CHARS),
        )),
        _ => None,
    });
    let Some(first) = lines.next() else {
        return;
    };
    text.push_str("\n**Resolved without assent.** These threads stay gating; someone who may assent re-opens and resolves them:\n\n");
    text.push_str(&first);
    text.push('\n');
    for line in lines.by_ref().take(MAX_SUMMARY_ROWS - 1) {
        text.push_str(&line);
        text.push('\n');
    }
    let more = lines.count();
    if more > 0 {
        text.push_str(&format!(
            "- … and {more} more; the receipt lists every finding with `\"resolved\":true,\"assented\":false`.\n"
        ));
    }
}

/// The summary's thread cell: the link, and who assented when a resolution counts (their
/// username as an inert code span, never a mention).
fn thread_cell(web_url: Option<&WebUrl>, status: &FindingStatus<'_>) -> String {
    let link = thread_link(web_url, status.forge_id);
    match &status.assent {
        Assent::Given { by } => format!(
            "{link} · assented by {}",
            inert::table_cell(&inert::cut_line(&inert::code(&by.username), MAX_CELL_CHARS))
        ),
        _ => link,
    }
}

/// `assented` is the resolution that counts (for a challenge), not GitLab's resolved bit.
fn effect_icon(effect: Effect, assented: bool) -> &'static str {
    match (effect, assented) {
        (Effect::Block, _) => "⛔",
        (Effect::Challenge, false) => "⏳",
        (Effect::Challenge, true) => "✅",
        (Effect::Comment, _) => "💬",
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn thread_link(web_url: Option<&WebUrl>, forge_id: Option<u64>) -> String {
    match (web_url, forge_id) {
        (_, None) => "pending".to_owned(),
        (Some(url), Some(id)) => format!("[note {id}]({})", note_url(url, id)),
        (None, Some(id)) => format!("note {id}"),
    }
}

fn short_digest(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

/// The first line of `text`, cut at about `max` characters. The cut never leaves a code span
/// open ([`inert::cut_line`]): an open span would let the rest of the row, a value past the
/// cut included, render as Markdown.
fn first_line(text: &str, max: usize) -> String {
    inert::cut_line(text.lines().next().unwrap_or(""), max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::ThreadArtifact;
    use crate::model::{Slot, UserRef};

    fn pins() -> Pins {
        Pins {
            source_sha: crate::commit_sha::CommitSha::parse(&"1".repeat(40)).unwrap(),
            target_sha: crate::test_support::sha('2'),
            base_sha: crate::test_support::sha('3'),
            policy_digest: format!("sha256:{}", "a".repeat(64)),
            policy_project: None,
            policy_sha: None,
        }
    }

    fn finding(effect: Effect, message: &str) -> Finding {
        Finding {
            slot: Slot {
                rule: "retention-shrink".into(),
                subject: "topics/a.yaml#/topics/x/retention_days".into(),
            },
            effect,
            occurrence: Occurrence::digest(b"x"),
            message: message.into(),
        }
    }

    fn built_in(rule: &str, effect: Effect, message: &str) -> Finding {
        Finding {
            slot: Slot {
                rule: rule.into(),
                subject: "topics/a.yaml#".into(),
            },
            ..finding(effect, message)
        }
    }

    /// A built-in finding ends with a footer saying it is built in and where it is
    /// documented, since no policy file of the repository holds it; a built-in block does
    /// not send the reviewer to a policy that could allow it. A policy finding has neither.
    #[test]
    fn built_in_findings_end_with_where_they_are_documented() {
        let parse_error = built_in(
            "assent/parse-error",
            Effect::Block,
            "`topics/a.yaml` does not parse at the source SHA: line 3: duplicate key `name`",
        );
        insta::assert_snapshot!("built_in_block_footer", finding_thread_body(&parse_error));
        let attributes = built_in(
            "assent/git-attributes",
            Effect::Challenge,
            "`.gitattributes` line 2 gives `topics/*.yaml` `export-ignore`.",
        );
        insta::assert_snapshot!(
            "built_in_challenge_footer",
            finding_thread_body(&attributes)
        );
        let policy = finding_thread_body(&finding(Effect::Block, "m"));
        assert!(!policy.contains("built into assent"), "{policy}");
        assert!(
            policy.contains("the policy on the target branch allows it"),
            "{policy}"
        );
        for rule in [
            "assent/self-edit",
            "assent/undecidable",
            "assent/policy-error",
            "assent/policy-broken",
            "assent/policy-test-failed",
            "assent/ambiguous-identity",
        ] {
            let body = finding_thread_body(&built_in(rule, Effect::Block, "m"));
            assert!(
                body.ends_with("docs/policies.md, \"Built-in findings\"._"),
                "{body}"
            );
            assert!(
                !body.contains("the policy on the target branch allows it"),
                "{body}"
            );
        }
    }

    #[test]
    fn finding_body_starts_with_its_marker_and_never_a_quick_action() {
        let f = finding(Effect::Challenge, "first\n/close\n  /merge");
        let body = finding_thread_body(&f);
        let first = body.lines().next().unwrap();
        assert_eq!(
            marker::decode_line(first).unwrap(),
            Marker::Finding {
                slot: f.slot.clone(),
                occurrence: f.occurrence.clone()
            }
        );
        assert!(
            body.lines().all(|l| !l.trim_start().starts_with('/')),
            "{body}"
        );
    }

    #[test]
    fn summary_is_deterministic_and_reflects_resolution() {
        let desired = DesiredState::new(vec![finding(Effect::Challenge, "Shrinks | a lot")]);
        let target = main();
        let listing = Inventory::default();
        let ctx = SummaryContext {
            pins: &pins(),
            web_url: Some("https://gitlab.example/g/p/-/merge_requests/7"),
            target: Some(&target),
            listing: Some(&listing),
        };
        let open = [FindingStatus {
            finding: &desired.findings[0],
            forge_id: Some(12),
            resolved: false,
            assent: Assent::Open,
        }];
        let a = summary_body(ctx, &desired, &open, SummaryState::Verified);
        let b = summary_body(ctx, &desired, &open, SummaryState::Verified);
        assert_eq!(a, b);
        assert!(a.contains("## assent · REVIEW"));
        assert!(a.contains("[note 12](https://gitlab.example/g/p/-/merge_requests/7#note_12)"));
        assert!(a.contains("Shrinks \\| a lot"));
        let done = [FindingStatus {
            finding: &desired.findings[0],
            forge_id: Some(12),
            resolved: true,
            assent: Assent::Given {
                by: crate::model::UserRef {
                    id: 7,
                    username: "reviewer".into(),
                },
            },
        }];
        let c = summary_body(ctx, &desired, &done, SummaryState::Verified);
        assert!(c.contains("## assent · APPROVE"));
        assert!(
            c.contains("#note_12) · assented by `reviewer` |"),
            "the assenting user is named, as an inert span: {c}"
        );
        assert!(!a.contains("assented by"), "{a}");
        assert!(!c.contains("@reviewer"), "{c}");
        assert_ne!(a, c);
        insta::assert_snapshot!(a);
    }

    fn main() -> TargetBranch {
        TargetBranch {
            name: "main".into(),
            has_policies: true,
        }
    }

    #[test]
    fn summary_marker_carries_state_head_and_target() {
        let desired = DesiredState::default();
        let target = main();
        let ctx = SummaryContext {
            pins: &pins(),
            web_url: None,
            target: Some(&target),
            listing: None,
        };
        let body = summary_body(ctx, &desired, &[], SummaryState::Reconciling);
        match marker::decode_body(&body).unwrap().unwrap() {
            Marker::Summary {
                state,
                source_sha,
                target,
                ..
            } => {
                assert_eq!(state, SummaryState::Reconciling);
                assert_eq!(source_sha, crate::test_support::sha('1'));
                assert_eq!(target.as_deref(), Some("main"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(body.contains("No finding"));
        assert!(!body.contains("No policies"), "{body}");
        assert_eq!(
            marker::gate_line_of(&body),
            Ok(None),
            "no fingerprint, no gate line"
        );
        let untargeted = summary_body(
            SummaryContext {
                target: None,
                ..ctx
            },
            &desired,
            &[],
            SummaryState::Reconciling,
        );
        match marker::decode_body(&untargeted).unwrap().unwrap() {
            Marker::Summary { target, .. } => assert_eq!(target, None),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_target_without_policies_is_stated_never_approved_silently() {
        let desired = DesiredState::default();
        let target = TargetBranch {
            name: "release/`x` @all".into(),
            has_policies: false,
        };
        let ctx = SummaryContext {
            pins: &pins(),
            web_url: None,
            target: Some(&target),
            listing: None,
        };
        let body = summary_body(ctx, &desired, &[], SummaryState::Verified);
        assert!(body.contains("## assent · APPROVE"), "{body}");
        assert!(
            body.contains("**No policies on ``release/`x` @all``.**"),
            "the branch is named inside a code span: {body}"
        );
        assert!(
            body.contains("no policy judged this merge request"),
            "{body}"
        );
        let judged = summary_body(
            SummaryContext {
                target: Some(&main()),
                ..ctx
            },
            &desired,
            &[],
            SummaryState::Verified,
        );
        assert!(!judged.contains("No policies"), "{judged}");
    }

    #[test]
    fn the_gate_line_is_last_and_records_the_decision_and_the_fingerprint() {
        let desired = DesiredState::new(vec![finding(Effect::Challenge, "m")]);
        let open_listing = Inventory {
            threads: vec![ThreadArtifact {
                forge_id: 12,
                discussion_id: "d".repeat(40),
                slot: desired.findings[0].slot.clone(),
                occurrence: desired.findings[0].occurrence.clone(),
                resolved: false,
                resolved_by_bot: false,
                edited: false,
                diff_note: false,
                resolved_by: None,
                bot_replies: vec![],
            }],
            ..Inventory::default()
        };
        let target = main();
        let ctx = SummaryContext {
            pins: &pins(),
            web_url: None,
            target: Some(&target),
            listing: Some(&open_listing),
        };
        let status = |resolved| {
            [FindingStatus {
                finding: &desired.findings[0],
                forge_id: Some(12),
                resolved,
                assent: if resolved {
                    Assent::Given {
                        by: crate::model::UserRef {
                            id: 7,
                            username: "reviewer".into(),
                        },
                    }
                } else {
                    Assent::Open
                },
            }]
        };
        let open = summary_body(ctx, &desired, &status(false), SummaryState::Verified);
        assert_eq!(
            open.lines().last(),
            Some(
                marker::encode_gate_line(&GateLine {
                    decision: Decision::Review,
                    resolutions: resolution_fingerprint(&open_listing),
                })
                .as_str()
            )
        );
        let done = summary_body(ctx, &desired, &status(true), SummaryState::Verified);
        assert_eq!(
            marker::gate_line_of(&done).unwrap().unwrap().decision,
            Decision::Approve
        );
        // The same decision over other resolutions is another body: the run edits it.
        let mut resolved_listing = open_listing.clone();
        resolved_listing.threads[0].resolved = true;
        resolved_listing.threads[0].resolved_by = Some(UserRef {
            id: 5,
            username: "author".into(),
        });
        let moved = summary_body(
            SummaryContext {
                listing: Some(&resolved_listing),
                ..ctx
            },
            &desired,
            &status(false),
            SummaryState::Verified,
        );
        assert_ne!(open, moved);
        assert_eq!(
            marker::gate_line_of(&moved).unwrap().unwrap().resolutions,
            resolution_fingerprint(&resolved_listing)
        );
    }

    #[test]
    fn subjects_render_inert_in_the_headline_and_the_summary() {
        let mut f = finding(Effect::Challenge, "m");
        f.slot.subject = "t/`x`.yaml#/@all|<img src=x>\n/close".into();
        let body = finding_thread_body(&f);
        let headline = body.lines().nth(1).unwrap();
        assert_eq!(
            headline,
            "**⏳ challenge** · `retention-shrink` · ``t/`x`.yaml#/@all|<img src=x>\\n/close``"
        );
        let desired = DesiredState::new(vec![f]);
        let status = [FindingStatus {
            finding: &desired.findings[0],
            forge_id: None,
            resolved: false,
            assent: Assent::Open,
        }];
        let ctx = SummaryContext {
            pins: &pins(),
            web_url: None,
            target: None,
            listing: None,
        };
        let summary = summary_body(ctx, &desired, &status, SummaryState::Verified);
        assert!(
            summary.contains("| ``t/`x`.yaml#/@all\\|<img src=x>\\n/close`` |"),
            "{summary}"
        );
    }

    #[test]
    fn a_hostile_value_past_the_summary_cut_stays_inside_its_span() {
        let value = format!(
            "{}`` @all ![i](http://e.example/i.png) <details>",
            "v".repeat(190)
        );
        let message = format!("New value {} set.", inert::code(&value));
        let desired = DesiredState::new(vec![finding(Effect::Challenge, &message)]);
        let status = [FindingStatus {
            finding: &desired.findings[0],
            forge_id: None,
            resolved: false,
            assent: Assent::Open,
        }];
        let ctx = SummaryContext {
            pins: &pins(),
            web_url: None,
            target: None,
            listing: None,
        };
        let summary = summary_body(ctx, &desired, &status, SummaryState::Verified);
        let row = summary
            .lines()
            .find(|l| l.starts_with("| ⏳"))
            .expect(&summary);
        let cell = row.split(" | ").nth(4).unwrap();
        // Cut inside the span: the span is shortened to what fits and closed again.
        assert_eq!(cell, format!("New value `{}`…", "v".repeat(184)));
        assert!(!summary.contains("@all"), "{summary}");
    }

    #[test]
    fn summary_names_who_resolved_without_assent_and_why() {
        use crate::model::UserRef;
        use crate::who_assents::NotCounted;
        let desired = DesiredState::new(vec![finding(Effect::Challenge, "Shrinks")]);
        let ctx = SummaryContext {
            pins: &pins(),
            web_url: None,
            target: None,
            listing: None,
        };
        let self_assented = [FindingStatus {
            finding: &desired.findings[0],
            forge_id: Some(12),
            resolved: true,
            assent: Assent::NotCounted {
                by: Some(UserRef {
                    id: 3,
                    username: "mr-author".into(),
                }),
                reason: NotCounted::ByAuthor,
            },
        }];
        let body = summary_body(ctx, &desired, &self_assented, SummaryState::Verified);
        assert!(body.contains("## assent · REVIEW"), "{body}");
        assert!(body.contains("1 challenge awaits assent"), "{body}");
        assert!(body.contains("**Resolved without assent.**"), "{body}");
        assert!(
            body.contains("note 12 `retention-shrink` on `topics/a.yaml#/topics/x/retention_days`: resolved by `mr-author`, which does not count as assent: the merge request's author cannot assent to their own change."),
            "{body}"
        );
        // The resolver is named in a code span, never as an @-mention.
        assert!(!body.contains("@mr-author"), "{body}");
        assert!(body.contains("| ⏳ | challenge |"), "{body}");
    }

    fn ctx_without_listing(pins: &Pins) -> SummaryContext<'_> {
        SummaryContext {
            pins,
            web_url: None,
            target: None,
            listing: None,
        }
    }

    #[test]
    fn a_huge_message_is_cut_inside_the_budget() {
        let message = format!(
            "Value {}\n{}",
            inert::code(&"v".repeat(50_000)),
            "line\n".repeat(500_000)
        );
        let body = finding_thread_body(&finding(Effect::Challenge, &message));
        let chars = body.chars().count();
        assert!(chars <= MAX_MESSAGE_CHARS + 1_000, "{chars}");
        assert!(
            body.contains("_(shortened: the full text has"),
            "the cut says so"
        );
        assert!(
            body.ends_with("opens a fresh thread._"),
            "the advice survives the cut"
        );
    }

    #[test]
    fn the_summary_table_is_capped_gating_rows_first_and_points_at_the_receipt() {
        let n = MAX_SUMMARY_ROWS + 50;
        let findings: Vec<Finding> = (0..n)
            .map(|i| {
                let mut f = finding(
                    if i % 10 == 0 {
                        Effect::Block
                    } else {
                        Effect::Comment
                    },
                    &format!("Finding {i}"),
                );
                f.slot.subject = format!("f.yaml#/{i:04}");
                f
            })
            .collect();
        let desired = DesiredState::new(findings);
        let statuses: Vec<FindingStatus<'_>> = desired
            .findings
            .iter()
            .map(|f| FindingStatus {
                finding: f,
                forge_id: Some(1),
                resolved: f.effect == Effect::Comment,
                assent: Assent::Open,
            })
            .collect();
        let pins = pins();
        let body = summary_body(
            ctx_without_listing(&pins),
            &desired,
            &statuses,
            SummaryState::Verified,
        );
        let rows: Vec<&str> = body
            .lines()
            .filter(|l| l.starts_with("| ⛔") || l.starts_with("| 💬"))
            .collect();
        assert_eq!(rows.len(), MAX_SUMMARY_ROWS);
        assert_eq!(
            rows.iter().filter(|r| r.starts_with("| ⛔")).count(),
            n.div_ceil(10),
            "every block row is shown"
        );
        assert!(
            body.contains("… and 50 more findings, not listed so that this note stays within GitLab's size limit; the receipt lists every finding."),
            "{body}"
        );
        // Shown rows keep slot order.
        let subjects: Vec<&str> = rows
            .iter()
            .map(|r| r.split(" | ").nth(3).unwrap())
            .collect();
        let mut sorted = subjects.clone();
        sorted.sort();
        assert_eq!(subjects, sorted);
        // At the cap, nothing is left out.
        let at = DesiredState::new(desired.findings[..MAX_SUMMARY_ROWS].to_vec());
        let body = summary_body(
            ctx_without_listing(&pins),
            &at,
            &statuses[..MAX_SUMMARY_ROWS],
            SummaryState::Verified,
        );
        assert!(!body.contains("more finding"), "{body}");
    }

    #[test]
    fn the_list_of_resolutions_without_assent_is_capped() {
        use crate::who_assents::NotCounted;
        let findings: Vec<Finding> = (0..MAX_SUMMARY_ROWS + 7)
            .map(|i| {
                let mut f = finding(Effect::Challenge, "m");
                f.slot.subject = format!("f.yaml#/{i:04}");
                f
            })
            .collect();
        let desired = DesiredState::new(findings);
        let statuses: Vec<FindingStatus<'_>> = desired
            .findings
            .iter()
            .map(|f| FindingStatus {
                finding: f,
                forge_id: Some(1),
                resolved: true,
                assent: Assent::NotCounted {
                    by: None,
                    reason: NotCounted::ByAuthor,
                },
            })
            .collect();
        let pins = pins();
        let body = summary_body(
            ctx_without_listing(&pins),
            &desired,
            &statuses,
            SummaryState::Verified,
        );
        let listed = body.lines().filter(|l| l.starts_with("- note 1 ")).count();
        assert_eq!(listed, MAX_SUMMARY_ROWS);
        assert!(
            body.contains("- … and 7 more; the receipt lists every finding"),
            "{body}"
        );
    }
}
