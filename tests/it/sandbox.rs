//! The local sandbox walkthrough (docs/setup.md, "Try it without a GitLab"): the environment
//! `fake-gitlab --example topic-registry` prints is all `assent` needs, and the documented
//! steps give the documented results.

use std::path::Path;
use std::process::{Command, Output};

use fake_gitlab::{FakeGitLab, sandbox};

use crate::ASSENT;

struct Sandbox {
    fake: FakeGitLab,
    env: Vec<(String, String)>,
    dir: tempfile::TempDir,
}

impl Sandbox {
    /// The example sandbox, and the environment parsed from the `export` lines it prints.
    fn start() -> Sandbox {
        let (target, source) = sandbox::example("topic-registry").expect("the example applies");
        let fake = FakeGitLab::start(sandbox::state(&target, &source).expect("a sandbox"));
        let exports = sandbox::exports(&fake.base_url(), &fake.state());
        let env = exports
            .lines()
            .map(|line| {
                let (name, value) = line
                    .strip_prefix("export ")
                    .and_then(|l| l.split_once('='))
                    .unwrap_or_else(|| panic!("not an export line: {line:?}"));
                (name.to_owned(), value.to_owned())
            })
            .collect();
        Sandbox {
            fake,
            env,
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    fn assent(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let Output {
            status,
            stdout,
            stderr,
        } = Command::new(ASSENT)
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("run assent");
        (
            status.code(),
            String::from_utf8(stdout).expect("utf-8"),
            String::from_utf8(stderr).expect("utf-8"),
        )
    }

    fn decision(&self) -> String {
        let receipt = std::fs::read_to_string(self.dir.path().join("assent-receipt.json"))
            .expect("a receipt");
        let receipt: serde_json::Value = serde_json::from_str(&receipt).expect("json");
        receipt["decision"].as_str().expect("a decision").to_owned()
    }

    fn challenge_thread(&self) -> String {
        let state = self.fake.state();
        let mr = &state.projects[0].merge_requests[0];
        mr.discussions
            .iter()
            .find(|d| d.notes[0].body.contains("\"rule\":\"retention-shrink\""))
            .expect("the retention challenge's thread")
            .id
            .clone()
    }

    fn resolve_as(&self, user: u64, discussion: &str, resolved: bool) {
        self.fake.resolve(
            sandbox::PROJECT_ID,
            sandbox::MR_IID,
            discussion,
            user,
            resolved,
        );
    }

    fn transcript(&self) -> String {
        sandbox::transcript(&self.fake.state())
    }
}

#[test]
fn the_walkthrough_gates_on_the_challenge_until_a_reviewer_assents() {
    let s = Sandbox::start();

    let (code, stdout, stderr) = s.assent(&["run", "--dry-run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("would publish"), "{stdout}");
    assert!(
        s.transcript().contains("(no notes yet)"),
        "a dry run writes nothing"
    );

    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(s.decision(), "REVIEW");
    let transcript = s.transcript();
    assert!(
        transcript.contains("Retention of `orders.events.v1` shrinks from `30` to `7` days"),
        "{transcript}"
    );
    assert!(
        transcript.contains("Ownership of `orders.audit.v1` moves"),
        "{transcript}"
    );
    assert!(transcript.contains("(unresolved)"), "{transcript}");
    // Both findings sit on their changed line of the diff (DiffNotes).
    assert!(
        transcript.contains("on topics/orders.yaml line 4 (unresolved)")
            && transcript.contains("on topics/orders.yaml line 11 (resolved by @assent-bot)"),
        "{transcript}"
    );

    // The author's own resolution does not count.
    let challenge = s.challenge_thread();
    s.resolve_as(sandbox::AUTHOR_ID, &challenge, true);
    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(s.decision(), "REVIEW");

    assert!(s.transcript().contains("resolved by @bob"));

    // A reviewer's does: GitLab keeps the first resolver of a resolved thread, so the
    // reviewer unresolves it and resolves it again.
    s.resolve_as(sandbox::REVIEWER_ID, &challenge, false);
    s.resolve_as(sandbox::REVIEWER_ID, &challenge, true);
    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(s.decision(), "APPROVE");
    assert!(s.transcript().contains("resolved by @alice"));

    // The summary is verified for the head, so the safety net has nothing to heal.
    let (code, stdout, stderr) = s.assent(&["sweep", "--interval", "1h", "--lookback", "2h"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.trim_end().ends_with("healed: 0"), "{stdout}");
}

#[test]
fn doctor_verifies_everything_but_serialization_and_the_token_variable_outside_a_ci_job() {
    let s = Sandbox::start();
    let (_, stdout, stderr) = s.assent(&["doctor", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("doctor's report is JSON ({e}):\n{stdout}{stderr}");
    });
    let not_passed: Vec<&str> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["status"] != "pass")
        .map(|c| c["id"].as_str().expect("an id"))
        .collect();
    // The sandbox's bot is a Developer, as docs/setup.md recommends: GitLab shows CI/CD
    // variables only to Maintainers, so where the token's variable reaches is not verified.
    assert_eq!(not_passed, ["token-variable", "serialization"], "{stdout}");
}

#[test]
fn the_example_repository_is_the_one_in_fixtures() {
    let (target, _) = sandbox::example("topic-registry").expect("the example applies");
    let on_disk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/repos/topic-registry/.assent/policies/topics.yaml");
    assert_eq!(
        target[".assent/policies/topics.yaml"],
        std::fs::read(on_disk).expect("the example's policy")
    );
}
