//! The `assent` binary as a real process against the fake GitLab, and the forge state it
//! leaves, normalised so two histories can be compared.
//!
//! * [`Scenario`]: a merge request whose reconciliation has many writes (findings to create
//!   and supersede, a stale thread, an undesired thread, a duplicate thread and a duplicate
//!   summary), captured once as a fake [`State`] and started afresh for every case; in a
//!   second form the MR lists real unified diffs, so its threads are DiffNotes.
//! * [`assent_run`] / [`spawn_assent`]: the binary (its path passed in: the caller's
//!   `env!("CARGO_BIN_EXE_assent")`) with the CI environment a merge request pipeline gives
//!   it, in its own working directory (so every run has its own receipt).
//! * [`normalized_state`]: every discussion of the MR as text with note ids normalised,
//!   sorted: equal for two histories that left the same review state.
//! * [`check_invariants`]: docs/contract.md#reconciliation's promises about the final forge state.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use assent::core::commit_sha;
use assent::core::inventory::Inventory;
use assent::core::marker::SummaryState;
use assent::core::model::{ListedDiscussion, Slot};
use fake_gitlab::{DiffFile, FakeGitLab, FileContent, State, fixtures};

use fake_gitlab::unified_diff::unified_diff;

/// The MR head of the scenario's first published run.
pub const HEAD_A: &str = fixtures::HEAD_SHA;
/// The MR head the scenario reconciles towards.
pub const HEAD_B: &str = "4444444444444444444444444444444444444444";
const FILE: &str = "topics/orders.yaml";

const BASE_TOPICS: &str = "\
topics:
  - name: orders.events.v1
    retention_days: 30
    partitions: 12
    owner: team-orders
    cleanup_policy: delete
  - name: orders.audit.v1
    retention_days: 365
    partitions: 3
    owner: team-compliance
    cleanup_policy: delete
";

/// Head A: retention shrink (challenge), cleanup change (challenge), partitions decrease
/// (block), owner change (comment).
const TOPICS_A: &str = "\
topics:
  - name: orders.events.v1
    retention_days: 7
    partitions: 6
    owner: team-orders
    cleanup_policy: compact
  - name: orders.audit.v1
    retention_days: 365
    partitions: 3
    owner: team-audit
    cleanup_policy: delete
";

/// Head B: the retention shrink goes further (new occurrence: supersede), the cleanup change
/// is reverted (undesired: outdated), partitions and owner as in A (leave untouched,
/// preserve resolution), and two new findings (create).
const TOPICS_B: &str = "\
topics:
  - name: orders.events.v1
    retention_days: 3
    partitions: 6
    owner: team-orders
    cleanup_policy: delete
  - name: orders.audit.v1
    retention_days: 30
    partitions: 3
    owner: team-audit
    cleanup_policy: delete
  - name: orders.scratch.v1
    retention_days: 1
    partitions: 1
    owner: team-orders
    cleanup_policy: delete
";

/// The slots head B wants, as `rule @ subject`.
pub fn desired_slots_b() -> Vec<Slot> {
    let slot = |rule: &str, pointer: &str| Slot {
        rule: rule.to_owned(),
        subject: format!("{FILE}#{pointer}"),
    };
    vec![
        slot(
            "retention-shrink",
            "/topics/orders.events.v1/retention_days",
        ),
        slot("retention-shrink", "/topics/orders.audit.v1/retention_days"),
        slot("partitions-decrease", "/topics/orders.events.v1/partitions"),
        slot("owner-change", "/topics/orders.audit.v1/owner"),
        slot(
            "retention-set-short",
            "/topics/orders.scratch.v1/retention_days",
        ),
    ]
}

/// The slots head A wants.
pub fn desired_slots_a() -> Vec<Slot> {
    let slot = |rule: &str, pointer: &str| Slot {
        rule: rule.to_owned(),
        subject: format!("{FILE}#{pointer}"),
    };
    vec![
        slot(
            "retention-shrink",
            "/topics/orders.events.v1/retention_days",
        ),
        slot(
            "cleanup-policy-change",
            "/topics/orders.events.v1/cleanup_policy",
        ),
        slot("partitions-decrease", "/topics/orders.events.v1/partitions"),
        slot("owner-change", "/topics/orders.audit.v1/owner"),
    ]
}

/// The fake's basic world with the example policies at the target SHA and the topic file at
/// the base, head A and head B; the MR's head is A.
pub fn fresh_state() -> State {
    let mut state = fixtures::basic();
    crate::add_example_policies(&mut state);
    let project = state
        .projects
        .iter_mut()
        .find(|p| p.id == fixtures::PROJECT_ID)
        .unwrap();
    for (sha, text) in [
        (fixtures::BASE_SHA, BASE_TOPICS),
        (fixtures::TARGET_SHA, BASE_TOPICS),
        (HEAD_A, TOPICS_A),
        (HEAD_B, TOPICS_B),
    ] {
        project
            .files
            .entry(sha.to_owned())
            .or_default()
            .insert(FILE.to_owned(), FileContent(text.as_bytes().to_vec()));
    }
    state.fixed_time = Some("2026-01-01T00:00:00.000Z".into());
    state
}

/// A captured starting state and the head the run under test is pinned to.
#[derive(Clone)]
pub struct Scenario {
    /// What the fake holds before the run under test.
    pub state: State,
    /// The source SHA the run is pinned to (the MR's head in `state`).
    pub head: &'static str,
}

impl Scenario {
    /// An MR at head A on which assent never ran.
    pub fn fresh() -> Scenario {
        Scenario {
            state: fresh_state(),
            head: HEAD_A,
        }
    }

    /// The many-writes scenario: assent published head A; a racing publisher left a second
    /// copy of the partitions thread and of the summary; a human resolved the owner comment
    /// (already resolved by assent) and left a note; then the head moved to B. The first run
    /// is `bin`'s.
    pub fn many_writes(bin: impl AsRef<Path>) -> Scenario {
        Self::many_writes_with(bin, false)
    }

    /// [`Scenario::many_writes`] on an MR that lists each head's real unified diff, as
    /// GitLab does: every finding on a changed line is a DiffNote (docs/contract.md#diffnotes).
    pub fn many_writes_on_diff_lines(bin: impl AsRef<Path>) -> Scenario {
        Self::many_writes_with(bin, true)
    }

    fn many_writes_with(bin: impl AsRef<Path>, real_diffs: bool) -> Scenario {
        let set_diff = |fake: &FakeGitLab, head: &str| {
            let text = if head == HEAD_A { TOPICS_A } else { TOPICS_B };
            fake.with_state(|s| {
                if let Ok(mr) = s.mr_mut_ref(fixtures::PROJECT_ID, fixtures::MR_IID) {
                    mr.diffs = vec![DiffFile {
                        diff: unified_diff(BASE_TOPICS, text),
                        ..DiffFile::modified(FILE)
                    }];
                }
            });
        };
        let fake = FakeGitLab::start(fresh_state());
        if real_diffs {
            set_diff(&fake, HEAD_A);
        }
        let dir = tempfile::tempdir().unwrap();
        let out = assent_run(bin, &fake, dir.path(), HEAD_A, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        let discussions = fake.discussions(fixtures::PROJECT_ID, fixtures::MR_IID);
        let first_with = |needle: &str| {
            discussions
                .iter()
                .find(|d| d.notes[0].body.contains(needle))
                .unwrap_or_else(|| panic!("no discussion with {needle}"))
                .id
                .clone()
        };
        let partitions = first_with("\"rule\":\"partitions-decrease\"");
        let summary = first_with("\"rule\":\"assent/summary\"");
        fake.clone_discussion(fixtures::PROJECT_ID, fixtures::MR_IID, &partitions);
        fake.clone_discussion(fixtures::PROJECT_ID, fixtures::MR_IID, &summary);
        fake.post_note(
            fixtures::PROJECT_ID,
            fixtures::MR_IID,
            fixtures::HUMAN_ID,
            "Looks fine to me once the retention is settled.",
        );
        fake.set_head(fixtures::PROJECT_ID, fixtures::MR_IID, HEAD_B);
        if real_diffs {
            set_diff(&fake, HEAD_B);
        }
        Scenario {
            state: fake.state(),
            head: HEAD_B,
        }
    }

    /// A fake started on this scenario's state (log empty, no faults).
    pub fn start(&self) -> FakeGitLab {
        FakeGitLab::start(self.state.clone())
    }
}

/// `bin run` (`bin` being an `assent` binary) with the merge request pipeline's environment
/// for `head`, in `dir`.
pub fn assent_command(
    bin: impl AsRef<Path>,
    fake: &FakeGitLab,
    dir: &Path,
    head: &str,
    extra: &[&str],
) -> Command {
    let mut command = Command::new(bin.as_ref());
    command
        .arg("run")
        .args(["--fail-on", "never"])
        .args(extra)
        .current_dir(dir)
        .env_clear()
        .env("CI_API_V4_URL", fake.base_url())
        .env("CI_PROJECT_ID", fixtures::PROJECT_PATH)
        .env("CI_MERGE_REQUEST_IID", fixtures::MR_IID.to_string())
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", head)
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_SHA", fixtures::TARGET_SHA)
        .env("CI_MERGE_REQUEST_DIFF_BASE_SHA", fixtures::BASE_SHA)
        .env("ASSENT_TOKEN", fixtures::BOT_TOKEN)
        // The fake applies a write before it loses the answer, never later: no late write
        // to wait for (gitlab_adapter_http.rs tests the wait against one that lands late).
        .env("ASSENT_WRITE_SETTLE_SECS", "0");
    command
}

/// Runs `assent run` to completion.
pub fn assent_run(
    bin: impl AsRef<Path>,
    fake: &FakeGitLab,
    dir: &Path,
    head: &str,
    extra: &[&str],
) -> Output {
    assent_command(bin, fake, dir, head, extra)
        .output()
        .unwrap()
}

/// Starts `assent run` without waiting (output discarded).
pub fn spawn_assent(bin: impl AsRef<Path>, fake: &FakeGitLab, dir: &Path, head: &str) -> Child {
    assent_command(bin, fake, dir, head, &[])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` at most `timeout`; kills it (and fails) when it hangs.
pub fn wait_bounded(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("assent did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Exit code, stdout and stderr, for assertion messages.
pub fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The receipt a run left in `dir`.
pub fn receipt(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("assent-receipt.json")).expect("receipt");
    serde_json::from_str(&text).expect("receipt is JSON")
}

/// The MR's discussions as the adapter would list them.
pub fn listing(fake: &FakeGitLab) -> Vec<ListedDiscussion> {
    crate::listed_discussions(fake, fixtures::PROJECT_ID, fixtures::MR_IID)
}

/// The bot's artifacts on the MR.
pub fn inventory(fake: &FakeGitLab) -> Inventory {
    Inventory::from_listing(&listing(fake), fixtures::BOT_ID)
}

/// `note <digits>` and `#note_<digits>` lose their digits: ids differ between histories.
pub fn normalize_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("note") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let Some(sep) = rest.chars().next().filter(|c| matches!(c, ' ' | '_')) else {
            continue;
        };
        let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push(sep);
            out.push('N');
            rest = &rest[1 + digits..];
        }
    }
    out.push_str(rest);
    out
}

/// Every discussion of the MR, one line each: author, resolved bit, where it sits (a
/// DiffNote's lines), first body and every reply, with note ids normalised; sorted. Two
/// histories that leave the same review state give the same lines; a duplicate thread,
/// summary or reply shows as an extra line or an extra reply, and a DiffNote posted as a
/// general thread (or on another line) as a different line.
pub fn normalized_state(fake: &FakeGitLab) -> Vec<String> {
    let mut lines: Vec<String> = fake
        .discussions(fixtures::PROJECT_ID, fixtures::MR_IID)
        .iter()
        .map(|d| {
            let first = &d.notes[0];
            let replies: Vec<String> = d.notes[1..]
                .iter()
                .map(|n| format!("{}: {}", n.author_id, normalize_ids(&n.body)))
                .collect();
            let at = first.position.as_ref().map(|p| {
                format!(
                    " at={}:{:?}/{:?}@{}",
                    p.new_path,
                    p.old_line,
                    p.new_line,
                    commit_sha::short(&p.head_sha)
                )
            });
            format!(
                "author={} resolvable={} resolved={}{}\n  {}\n  replies={:?}",
                first.author_id,
                first.resolvable,
                first.resolvable && first.resolved,
                at.unwrap_or_default(),
                normalize_ids(&first.body).replace('\n', "\n  "),
                replies
            )
        })
        .collect();
    lines.sort();
    lines
}

/// docs/contract.md#reconciliation's promises about a reconciled MR for `desired` slots at `head`: exactly one bot
/// summary, verified for `head`; every desired slot has exactly one unresolved-or-resolved
/// canonical thread and at most one unresolved thread; every undesired thread is resolved;
/// every non-canonical duplicate of a slot and occurrence is resolved.
pub fn check_invariants(fake: &FakeGitLab, desired: &[Slot], head: &str) -> Result<(), String> {
    let inventory = inventory(fake);
    let mut problems = vec![];
    if inventory.summaries.len() != 1 {
        problems.push(format!("{} summaries", inventory.summaries.len()));
    } else {
        let summary = &inventory.summaries[0];
        if summary.state != SummaryState::Verified || summary.source_sha != head {
            problems.push(format!(
                "summary {} is {} for {}",
                summary.note_id,
                summary.state.as_str(),
                summary.source_sha
            ));
        }
    }
    for slot in desired {
        let of_slot: Vec<_> = inventory
            .threads
            .iter()
            .filter(|t| &t.slot == slot)
            .collect();
        let unresolved = of_slot.iter().filter(|t| !t.resolved).count();
        if of_slot.is_empty() {
            problems.push(format!("no thread for {slot}"));
        }
        if unresolved > 1 {
            problems.push(format!("{unresolved} unresolved threads for {slot}"));
        }
    }
    for thread in &inventory.threads {
        if !desired.contains(&thread.slot) && !thread.resolved {
            problems.push(format!(
                "undesired thread {} ({}) unresolved",
                thread.forge_id, thread.slot
            ));
        }
        let canonical = inventory
            .threads
            .iter()
            .filter(|t| t.slot == thread.slot && t.occurrence == thread.occurrence)
            .map(|t| t.forge_id)
            .min()
            .unwrap();
        if canonical != thread.forge_id && !thread.resolved {
            problems.push(format!(
                "duplicate thread {} of {canonical} unresolved",
                thread.forge_id
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Follows a started `assent serve`'s stderr: every line goes into the returned log, and the
/// port of its `listen=ADDR` line is returned once printed (within 20 s; a panic naming the
/// log otherwise, since nothing can be sent to a serve that never listened).
pub fn serve_port_and_log(
    stderr: std::process::ChildStderr,
) -> (u16, std::sync::Arc<std::sync::Mutex<String>>) {
    use std::io::BufRead;
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(addr) = line.split(" listen=").nth(1) {
                let port = addr.split_whitespace().next().unwrap_or("");
                let _ = tx.send(port.rsplit(':').next().unwrap_or("").to_owned());
            }
            let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
            log.push_str(&line);
            log.push('\n');
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(20))
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "serve did not start: {}",
                log.lock().unwrap_or_else(|e| e.into_inner())
            )
        });
    (port, log)
}
