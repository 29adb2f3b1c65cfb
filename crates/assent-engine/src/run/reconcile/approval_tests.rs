//! The approval step on the in-memory forge: what is written, in which order, and how
//! ambiguous and refused answers are settled.

use std::sync::Mutex;

use super::*;
use crate::core::model::{DiffPosition, ListedDiscussion, MergeRequestInfo, MergeRequestState};
use crate::core::model::{Effect, Finding, Occurrence, Slot};
use crate::core::receipt::ApprovalOutcome;
use crate::forge::memory::{HUMAN_USER_ID, InMemoryForge, MR_AUTHOR_USER_ID};
use crate::forge::{CreatedThread, RequestCounts};

const BOT: u64 = 1;
static HEAD: std::sync::LazyLock<CommitSha> = std::sync::LazyLock::new(|| {
    CommitSha::parse("1111111111111111111111111111111111111111").unwrap()
});
static PUSHED: std::sync::LazyLock<CommitSha> = std::sync::LazyLock::new(|| {
    CommitSha::parse("4444444444444444444444444444444444444444").unwrap()
});

pub(super) fn ctx(head: &CommitSha) -> RunContext {
    RunContext {
        project: "42".into(),
        mr: 7,
        pins: crate::fixture::replay::fixture_pins(head),
        web_url: None,
        dry_run: false,
        mr_author_id: Some(MR_AUTHOR_USER_ID),
        target: None,
        requests_before: Default::default(),
        previous_bot_users: Vec::new(),
    }
}

/// No finding: the decision is `APPROVE`.
fn approvable() -> DesiredState {
    DesiredState::default()
}

/// One challenge: `REVIEW` until a person other than the author resolves its thread.
pub(super) fn challenged() -> DesiredState {
    DesiredState::new(vec![Finding {
        slot: Slot {
            rule: "retention-shrink".into(),
            subject: "topics/orders.yaml#/topics/orders.events.v1/retention_days".into(),
        },
        effect: Effect::Challenge,
        occurrence: Occurrence::digest(b"30 -> 7"),
        message: "Retention shrinks from 30 to 7 days.".into(),
    }])
}

/// One block finding: `BLOCK`.
fn blocked() -> DesiredState {
    DesiredState::new(vec![Finding {
        slot: Slot {
            rule: "assent/self-edit".into(),
            subject: ".assent/policies/x.yaml#".into(),
        },
        effect: Effect::Block,
        occurrence: Occurrence::digest(b"self-edit"),
        message: "The MR edits its own policies.".into(),
    }])
}

/// How a forge call the [`Scripted`] forge intercepts fails instead of reaching the forge.
#[derive(Clone)]
enum Intercept {
    /// Answer with this error without applying the write (GitLab never got it, or refused).
    Refuse(ForgeError),
    /// Apply the write, then answer with this error (the reply was lost).
    ApplyThenFail(ForgeError),
}

/// Something a person does to the MR at a chosen moment of a run.
type Meanwhile<'a> = Box<dyn FnOnce(&InMemoryForge) + Send + 'a>;

/// The in-memory forge behind a recorder of every port call, which can fail approval writes
/// on purpose and run an action (a push, a human's click) right before the approval read.
struct Scripted<'a> {
    inner: &'a InMemoryForge,
    calls: Mutex<Vec<String>>,
    approval_writes: Mutex<Vec<Intercept>>,
    before_approval_read: Mutex<Option<Meanwhile<'a>>>,
}

impl<'a> Scripted<'a> {
    fn new(inner: &'a InMemoryForge) -> Self {
        Scripted {
            inner,
            calls: Mutex::new(Vec::new()),
            approval_writes: Mutex::new(Vec::new()),
            before_approval_read: Mutex::new(None),
        }
    }

    /// The next approval writes (approve or unapprove) are intercepted in this order.
    fn intercept(self, intercepts: Vec<Intercept>) -> Self {
        *self.approval_writes.lock().unwrap() = intercepts;
        self
    }

    fn before_approval_read(self, action: impl FnOnce(&InMemoryForge) + Send + 'a) -> Self {
        *self.before_approval_read.lock().unwrap() = Some(Box::new(action));
        self
    }

    fn log(&self, call: impl Into<String>) {
        self.calls.lock().unwrap().push(call.into());
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn approval_write(
        &self,
        name: &str,
        write: impl FnOnce() -> Result<(), ForgeError>,
    ) -> Result<(), ForgeError> {
        self.log(name);
        let intercept = {
            let mut pending = self.approval_writes.lock().unwrap();
            (!pending.is_empty()).then(|| pending.remove(0))
        };
        match intercept {
            None => write(),
            Some(Intercept::Refuse(err)) => Err(err),
            Some(Intercept::ApplyThenFail(err)) => {
                write()?;
                Err(err)
            }
        }
    }
}

impl Forge for Scripted<'_> {
    fn bot_user_id(&self) -> Result<u64, ForgeError> {
        self.inner.bot_user_id()
    }
    fn project_role(&self, user_id: u64) -> Result<Option<crate::core::model::Role>, ForgeError> {
        self.inner.project_role(user_id)
    }
    fn user_account(&self, user_id: u64) -> Result<Option<crate::forge::Account>, ForgeError> {
        self.inner.user_account(user_id)
    }
    fn merge_request(&self) -> Result<MergeRequestInfo, ForgeError> {
        self.inner.merge_request()
    }
    fn resolves_outdated_diff_threads(&self) -> Result<bool, ForgeError> {
        self.inner.resolves_outdated_diff_threads()
    }
    fn list_discussions(&self) -> Result<Vec<ListedDiscussion>, ForgeError> {
        self.log("list");
        self.inner.list_discussions()
    }
    fn version_heads(&self) -> Result<Vec<CommitSha>, ForgeError> {
        self.log("versions");
        self.inner.version_heads()
    }
    fn create_thread(
        &self,
        body: &str,
        position: Option<&DiffPosition>,
    ) -> Result<CreatedThread, ForgeError> {
        self.log("create thread");
        self.inner.create_thread(body, position)
    }
    fn reply_to_thread(&self, discussion_id: &str, body: &str) -> Result<u64, ForgeError> {
        self.log("reply");
        self.inner.reply_to_thread(discussion_id, body)
    }
    fn resolve_thread(&self, discussion_id: &str) -> Result<(), ForgeError> {
        self.log("resolve");
        self.inner.resolve_thread(discussion_id)
    }
    fn create_note(&self, body: &str) -> Result<u64, ForgeError> {
        self.log(format!("create note {}", summary_state(body)));
        self.inner.create_note(body)
    }
    fn edit_note(&self, note_id: u64, body: &str) -> Result<(), ForgeError> {
        self.log(format!("edit note {}", summary_state(body)));
        self.inner.edit_note(note_id, body)
    }
    fn bot_approves(&self) -> Result<bool, ForgeError> {
        if let Some(action) = self.before_approval_read.lock().unwrap().take() {
            action(self.inner);
        }
        self.log("read approval");
        self.inner.bot_approves()
    }
    fn approve(&self, sha: &CommitSha) -> Result<(), ForgeError> {
        self.approval_write(&format!("approve {}", &sha.as_str()[..4]), || {
            self.inner.approve(sha)
        })
    }
    fn unapprove(&self) -> Result<(), ForgeError> {
        self.approval_write("unapprove", || self.inner.unapprove())
    }
    fn request_counts(&self) -> RequestCounts {
        self.inner.request_counts()
    }
}

/// `reconciling` or `verified` from a summary body's marker; `other` for any other body.
fn summary_state(body: &str) -> &'static str {
    let marker = body.lines().next().unwrap_or_default();
    if marker.contains("\"state\":\"verified\"") {
        "verified"
    } else if marker.contains("\"state\":\"reconciling\"") {
        "reconciling"
    } else {
        "other"
    }
}

fn server_error(route: &str) -> ForgeError {
    ForgeError::AmbiguousWrite {
        method: "POST".into(),
        route: route.into(),
        message: "HTTP 502: 502 Bad Gateway".into(),
    }
}

fn refused(status: u16, message: &str) -> ForgeError {
    ForgeError::Status {
        method: "POST".into(),
        route: "approve".into(),
        status,
        message: message.into(),
    }
}

fn publish(
    forge: &dyn Forge,
    desired: &DesiredState,
    head: &CommitSha,
    approve: bool,
) -> Result<Receipt, ReconcileError> {
    reconcile_with(forge, desired, &ctx(head), approve, &Silent).map(|p| p.receipt)
}

fn writes(forge: &InMemoryForge) -> u64 {
    forge.request_counts().writes
}

/// The first note id of the one finding thread.
fn thread_id(forge: &InMemoryForge) -> u64 {
    let threads: Vec<u64> = forge
        .snapshot()
        .iter()
        .filter(|d| d.notes[0].resolvable)
        .map(|d| d.notes[0].id)
        .collect();
    assert_eq!(threads.len(), 1, "{threads:?}");
    threads[0]
}

fn summary_body(forge: &InMemoryForge) -> String {
    let summaries: Vec<String> = forge
        .snapshot()
        .iter()
        .filter(|d| !d.notes[0].resolvable)
        .map(|d| d.notes[0].body.clone())
        .collect();
    assert_eq!(summaries.len(), 1);
    summaries[0].clone()
}

#[test]
fn approve_on_approve_is_the_last_write_after_the_verified_summary() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    let forge = Scripted::new(&memory);
    let receipt = publish(&forge, &approvable(), &HEAD, true).unwrap();
    assert_eq!(receipt.outcome, Outcome::Published);
    assert_eq!(receipt.decision, Some(Decision::Approve));
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Approved));
    assert_eq!(memory.approvals(), vec![BOT]);
    assert_eq!(
        forge.calls(),
        [
            "list",
            "create note verified",
            "list",
            "read approval",
            "approve 1111"
        ],
        "only the summary differs, so it is written verified; the approval follows it"
    );
    assert_eq!(
        receipt.requests.writes,
        writes(&memory),
        "the receipt counts the approval"
    );
    assert!(receipt.to_json().contains(r#""approval":"approved""#));
}

#[test]
fn approval_follows_the_verified_edit_when_threads_are_written() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    publish(&memory, &challenged(), &HEAD, true).unwrap();
    // A revert: the challenge is no longer desired, its thread is retired, the MR approved.
    let forge = Scripted::new(&memory);
    let receipt = publish(&forge, &approvable(), &HEAD, true).unwrap();
    assert_eq!(receipt.decision, Some(Decision::Approve));
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Approved));
    assert_eq!(
        forge.calls(),
        [
            "list",
            "edit note reconciling",
            "reply",
            "resolve",
            "list",
            "edit note verified",
            "list",
            "read approval",
            "approve 1111"
        ]
    );
}

#[test]
fn the_first_run_of_a_challenge_writes_threads_then_verified_then_no_approval() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    let forge = Scripted::new(&memory);
    let receipt = publish(&forge, &challenged(), &HEAD, true).unwrap();
    assert_eq!(receipt.decision, Some(Decision::Review));
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unchanged));
    assert_eq!(
        forge.calls(),
        [
            "list",
            "create note reconciling",
            "create thread",
            "list",
            "edit note verified",
            "list",
            "read approval"
        ],
        "REVIEW without a standing approval: one read, no approval write"
    );
    assert!(memory.approvals().is_empty());
}

#[test]
fn a_rerun_makes_zero_writes_and_says_unchanged() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    publish(&memory, &approvable(), &HEAD, true).unwrap();
    let before = writes(&memory);
    let receipt = publish(&memory, &approvable(), &HEAD, true).unwrap();
    assert_eq!(writes(&memory), before);
    assert_eq!(receipt.requests.writes, 0);
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unchanged));
    let again = publish(&memory, &approvable(), &HEAD, true).unwrap();
    assert_eq!(again.to_json(), receipt.to_json(), "byte-identical");
}

#[test]
fn a_new_push_that_makes_it_review_withdraws_the_approval() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    // A project that keeps approvals on push: only assent can take the approval back.
    memory.set_reset_approvals_on_push(false);
    publish(&memory, &approvable(), &HEAD, true).unwrap();
    assert_eq!(memory.approvals(), vec![BOT]);
    memory.set_head(&PUSHED);
    assert_eq!(
        memory.approvals(),
        vec![BOT],
        "the approval survived the push"
    );
    let forge = Scripted::new(&memory);
    let receipt = publish(&forge, &challenged(), &PUSHED, true).unwrap();
    assert_eq!(receipt.decision, Some(Decision::Review));
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unapproved));
    assert!(memory.approvals().is_empty());
    assert_eq!(forge.calls().last().unwrap(), "unapprove");
    assert!(receipt.to_json().contains(r#""approval":"unapproved""#));
}

#[test]
fn reopening_a_thread_or_a_block_withdraws_the_approval_at_the_same_head() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    publish(&memory, &challenged(), &HEAD, true).unwrap();
    let thread = thread_id(&memory);
    memory.set_resolved_by(thread, true, HUMAN_USER_ID).unwrap();
    let receipt = publish(&memory, &challenged(), &HEAD, true).unwrap();
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Approved));

    memory
        .set_resolved_by(thread, false, HUMAN_USER_ID)
        .unwrap();
    let receipt = publish(&memory, &challenged(), &HEAD, true).unwrap();
    assert_eq!(receipt.decision, Some(Decision::Review));
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unapproved));

    let memory = InMemoryForge::new(BOT, &HEAD);
    publish(&memory, &approvable(), &HEAD, true).unwrap();
    let receipt = publish(&memory, &blocked(), &HEAD, true).unwrap();
    assert_eq!(receipt.decision, Some(Decision::Block));
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unapproved));
    assert!(memory.approvals().is_empty());
}

/// End to end with docs/contract.md#who-may-assent (who may assent): the author's resolution is not assent, so it
/// never earns the bot's approval.
#[test]
fn the_authors_own_resolution_never_earns_the_bots_approval() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    publish(&memory, &challenged(), &HEAD, true).unwrap();
    memory
        .set_resolved_by(thread_id(&memory), true, MR_AUTHOR_USER_ID)
        .unwrap();
    // The author also approves; that approval is theirs, not the bot's.
    memory.set_approved_by(MR_AUTHOR_USER_ID, true);
    let receipt = publish(&memory, &challenged(), &HEAD, true).unwrap();
    assert_eq!(receipt.decision, Some(Decision::Review));
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unchanged));
    assert_eq!(
        memory.approvals(),
        vec![MR_AUTHOR_USER_ID],
        "no bot approval, and another user's approval is not touched"
    );
}

#[test]
fn a_human_approval_is_not_mistaken_for_the_bots() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    memory.set_approved_by(HUMAN_USER_ID, true);
    let receipt = publish(&memory, &approvable(), &HEAD, true).unwrap();
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Approved));
    assert_eq!(memory.approvals(), vec![BOT, HUMAN_USER_ID]);
}

#[test]
fn a_head_that_moves_before_the_approval_is_a_stale_pipeline() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    let forge = Scripted::new(&memory).before_approval_read(|m| m.set_head(&PUSHED));
    let receipt = publish(&forge, &approvable(), &HEAD, true).unwrap();
    assert_eq!(receipt.outcome, Outcome::StalePipeline);
    assert_eq!(receipt.decision, None);
    assert_eq!(receipt.approval, None);
    assert!(receipt.findings.is_empty() && receipt.actions.is_empty());
    assert!(
        receipt
            .warnings
            .iter()
            .any(|w| w.contains("moved past") && w.contains(HEAD.as_str())),
        "{:?}",
        receipt.warnings
    );
    assert!(memory.approvals().is_empty(), "nothing approved");
    assert_eq!(forge.calls().last().unwrap(), "approve 1111");
    assert_eq!(receipt.requests.writes, writes(&memory));
    let json = receipt.to_json();
    assert!(
        json.contains(
            r#""outcome":"stale-pipeline","decision":null,"findings":[],"actions":[],"repairs":[]"#
        ),
        "{json}"
    );
    assert!(json.contains(r#""approval":null"#), "{json}");
}

#[test]
fn without_approve_the_approval_is_neither_read_nor_written() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    memory.set_approved_by(BOT, true);
    let forge = Scripted::new(&memory);
    let receipt = publish(&forge, &challenged(), &HEAD, false).unwrap();
    assert_eq!(receipt.approval, None);
    assert!(
        !forge.calls().iter().any(|c| c.contains("approv")),
        "{:?}",
        forge.calls()
    );
    assert_eq!(memory.approvals(), vec![BOT], "left as it was");
    assert!(receipt.to_json().contains(r#""approval":null"#));
}

#[test]
fn a_dry_run_and_a_closed_mr_leave_the_approval_alone() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    let forge = Scripted::new(&memory);
    let dry = RunContext {
        dry_run: true,
        ..ctx(&HEAD)
    };
    let receipt = reconcile_with(&forge, &approvable(), &dry, true, &Silent)
        .unwrap()
        .receipt;
    assert_eq!(receipt.outcome, Outcome::DryRun);
    assert_eq!(receipt.approval, None);

    memory.set_mr_state(MergeRequestState::Merged);
    let receipt = publish(&forge, &approvable(), &HEAD, true).unwrap();
    assert_eq!(receipt.outcome, Outcome::MrNotOpen);
    assert_eq!(receipt.approval, None);
    assert!(!forge.calls().iter().any(|c| c.contains("approv")));
    assert_eq!(writes(&memory), 0);
}

#[test]
fn a_lost_acknowledgement_is_settled_by_reading_the_approval_again() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    let forge =
        Scripted::new(&memory).intercept(vec![Intercept::ApplyThenFail(server_error("approve"))]);
    let receipt = publish(&forge, &approvable(), &HEAD, true).unwrap();
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Approved));
    let approvals = forge
        .calls()
        .iter()
        .filter(|c| c.starts_with("approve"))
        .count();
    assert_eq!(approvals, 1, "not resent: the read showed it took effect");
    assert_eq!(forge.calls().last().unwrap(), "read approval");
}

#[test]
fn an_approval_that_did_not_take_effect_is_sent_again_only_after_a_read() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    memory.set_reset_approvals_on_push(false);
    memory.set_approved_by(BOT, true);
    let forge =
        Scripted::new(&memory).intercept(vec![Intercept::Refuse(server_error("unapprove"))]);
    let receipt = publish(&forge, &blocked(), &HEAD, true).unwrap();
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unapproved));
    let tail: Vec<String> = forge.calls().into_iter().rev().take(4).collect();
    assert_eq!(
        tail,
        ["unapprove", "read approval", "unapprove", "read approval"],
        "read, write, read, write (newest first)"
    );
    assert!(memory.approvals().is_empty());
}

#[test]
fn already_approved_by_a_concurrent_run_is_unchanged() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    // The read says "not approved", then another run of the bot approves before this one.
    let forge = Scripted::new(&memory).intercept(vec![Intercept::ApplyThenFail(refused(
        401,
        "401 Unauthorized",
    ))]);
    let receipt = publish(&forge, &approvable(), &HEAD, true).unwrap();
    assert_eq!(receipt.approval, Some(ApprovalOutcome::Unchanged));
    assert_eq!(memory.approvals(), vec![BOT]);
}

/// GitLab 18's "already so" (304, docs/contract.md#approvals-already-so) and the older
/// answers alike: another run of the bot approved (or a person withdrew the bot's approval)
/// between the read and the write; the run settles by reading again, without failing.
#[test]
fn an_approval_already_so_is_settled_by_reading_again() {
    for already_so in [
        refused(304, "not modified"),
        refused(401, "401 Unauthorized"),
    ] {
        let memory = InMemoryForge::new(BOT, &HEAD);
        let forge =
            Scripted::new(&memory).intercept(vec![Intercept::ApplyThenFail(already_so.clone())]);
        let receipt = publish(&forge, &approvable(), &HEAD, true).unwrap();
        assert_eq!(
            receipt.approval,
            Some(ApprovalOutcome::Unchanged),
            "{already_so:?}"
        );
        assert_eq!(memory.approvals(), vec![BOT]);
        assert_eq!(forge.calls().last().unwrap(), "read approval");
        assert_eq!(summary_state(&summary_body(&memory)), "verified");
    }
    for already_so in [refused(304, "not modified"), refused(404, "404 Not Found")] {
        let memory = InMemoryForge::new(BOT, &HEAD);
        memory.set_reset_approvals_on_push(false);
        memory.set_approved_by(BOT, true);
        let forge =
            Scripted::new(&memory).intercept(vec![Intercept::ApplyThenFail(already_so.clone())]);
        let receipt = publish(&forge, &blocked(), &HEAD, true).unwrap();
        assert_eq!(
            receipt.approval,
            Some(ApprovalOutcome::Unchanged),
            "{already_so:?}"
        );
        assert!(memory.approvals().is_empty());
        let unapproves = forge.calls().iter().filter(|c| *c == "unapprove").count();
        assert_eq!(unapproves, 1, "never resent");
    }
}

/// A 304 whose read shows the approval still not as decided is no settlement: the run fails
/// (never a guess), and the summary is no longer verified.
#[test]
fn an_already_so_answer_the_read_contradicts_fails_the_run() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    let forge =
        Scripted::new(&memory).intercept(vec![Intercept::Refuse(refused(304, "not modified"))]);
    let err = publish(&forge, &approvable(), &HEAD, true).unwrap_err();
    assert!(matches!(err, ReconcileError::Approval { .. }), "{err}");
    assert!(err.to_string().contains("still not as decided"), "{err}");
    assert!(memory.approvals().is_empty());
    assert_eq!(summary_state(&summary_body(&memory)), "reconciling");
}

#[test]
fn a_refused_approval_fails_the_run_and_the_summary_is_no_longer_verified() {
    for error in [
        refused(403, "403 Forbidden"),
        refused(401, "401 Unauthorized"),
    ] {
        let memory = InMemoryForge::new(BOT, &HEAD);
        let forge = Scripted::new(&memory).intercept(vec![Intercept::Refuse(error.clone())]);
        let err = publish(&forge, &approvable(), &HEAD, true).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, ReconcileError::Approval { .. }),
            "{error:?}: {text}"
        );
        assert!(
            text.contains("APPROVE") && text.contains(&error.to_string()),
            "{text}"
        );
        assert!(memory.approvals().is_empty());
        assert_eq!(
            summary_state(&summary_body(&memory)),
            "reconciling",
            "a summary never says verified for a run that exits non-zero"
        );
        // The next run, with the forge answering again, repairs both.
        let receipt = publish(&memory, &approvable(), &HEAD, true).unwrap();
        assert_eq!(receipt.approval, Some(ApprovalOutcome::Approved));
        assert_eq!(summary_state(&summary_body(&memory)), "verified");
    }
}

#[test]
fn an_approval_that_never_settles_gives_up_without_a_verified_summary() {
    let memory = InMemoryForge::new(BOT, &HEAD);
    let forge = Scripted::new(&memory).intercept(
        (0..MAX_PLANNING_ROUNDS)
            .map(|_| Intercept::Refuse(server_error("approve")))
            .collect(),
    );
    let err = publish(&forge, &approvable(), &HEAD, true).unwrap_err();
    assert!(matches!(err, ReconcileError::Approval { .. }), "{err}");
    let approvals = forge
        .calls()
        .iter()
        .filter(|c| c.starts_with("approve"))
        .count();
    assert_eq!(approvals, MAX_PLANNING_ROUNDS, "bounded");
    assert_eq!(summary_state(&summary_body(&memory)), "reconciling");
}
