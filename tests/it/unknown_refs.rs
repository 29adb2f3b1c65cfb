//! Policies are never read as absent from a ref not proven to exist
//! (docs/contract.md#unknown-refs): GitLab answers a tree listing at a ref it does not know
//! with "404 Tree Not Found", as it answers a missing path (`lib/api/repositories.rb`), so an
//! empty listing is believed only once `GET …/repository/commits/:sha` shows the commit. The
//! compiled `assent run` against the fake GitLab.

use assent_test_support::run::{RunResult, World};
use fake_gitlab::{FileContent, Project, RouteKind};

use crate::ASSENT;

/// A commit no project of the fake holds.
const UNKNOWN: &str = "dead00000000000000000000000000000000beef";

fn commit_reads(w: &World) -> Vec<String> {
    w.fake
        .requests()
        .into_iter()
        .filter(|r| r.route == RouteKind::Commit)
        .map(|r| r.path)
        .collect()
}

#[test]
fn policies_at_a_target_sha_gitlab_does_not_know_stop_the_run_before_any_write() {
    let w = World::new(ASSENT);
    let r: RunResult = w.invocation().args(&["--target-sha", UNKNOWN]).run();
    // Read as "no policies", this run used to approve; now it stops, nothing written.
    r.expect_code(3);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
    assert!(r.stderr.contains(UNKNOWN), "{}", r.stderr);
    assert!(
        r.stderr.contains("does not know the commit"),
        "{}",
        r.stderr
    );
    assert_eq!(commit_reads(&w).len(), 1);
    r.assert_no_token();
}

#[test]
fn a_target_without_policies_is_believed_once_its_commit_is_shown() {
    let w = World::new(ASSENT);
    // The target branch's tip holds no `.assent/policies`: a known commit, no policy.
    w.fake.with_state(|st| {
        let project = st.project_mut(fake_gitlab::fixtures::PROJECT_ID).unwrap();
        project
            .files
            .get_mut(fake_gitlab::fixtures::TARGET_SHA)
            .unwrap()
            .retain(|path, _| !path.starts_with(".assent/"));
    });
    let r = w.run(&[]);
    assert_eq!(r.receipt()["findings"], serde_json::json!([]));
    assert_eq!(commit_reads(&w).len(), 1, "one commit read proves the ref");
}

#[test]
fn a_central_policy_project_pinned_at_an_unknown_commit_is_a_policy_error() {
    let w = World::new(ASSENT);
    w.fake.with_state(|s| {
        s.projects.push(Project {
            id: 77,
            path_with_namespace: "platform/policies".into(),
            branches: [("main".to_owned(), "c1".repeat(20))].into(),
            files: [(
                "c1".repeat(20),
                [(
                    ".assent/policies/floor.yaml".to_owned(),
                    FileContent(b"apiVersion: assent/v1\nkind: Policy\nrules: []\n".to_vec()),
                )]
                .into(),
            )]
            .into(),
            ..Project::default()
        });
    });
    let r = w
        .invocation()
        .args(&["--policy-project", &format!("platform/policies@{UNKNOWN}")])
        .run();
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert_eq!(receipt["findings"][0]["rule"], "assent/policy-error");
    let body = w.thread("assent/policy-error").notes[0].body.clone();
    assert!(body.contains("does not know the commit"), "{body}");
    assert!(!body.contains("has no policy file"), "{body}");
}
