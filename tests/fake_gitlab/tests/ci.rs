//! The CI routes of the fake: `/version`, jobs, resource groups (with `current_job` from
//! 18.6) and the CI lint API, with GitLab's shapes and permissions.

use std::time::Duration;

use fake_gitlab::fixtures::*;
use fake_gitlab::{FakeGitLab, Job, Project, State, Token};
use serde_json::Value;

fn call(
    fake: &FakeGitLab,
    method: &str,
    path: &str,
    token: &str,
    form: Option<&str>,
) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let url = format!("{}{}", fake.base_url(), path);
    let b = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("PRIVATE-TOKEN", token);
    let mut resp = match form {
        Some(f) => agent
            .run(
                b.header("Content-Type", "application/x-www-form-urlencoded")
                    .body(f.as_bytes().to_vec())
                    .unwrap(),
            )
            .unwrap(),
        None => agent.run(b.body(()).unwrap()).unwrap(),
    };
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

const CI: &str = "include:\n  - local: ci/assent.yml\nstages: [test]\n";
const INCLUDED: &str = "assent:\n  stage: test\n  resource_group: assent-mr-$CI_MERGE_REQUEST_IID\n  script: [assent run]\n";

fn state() -> State {
    let mut s = basic();
    s.tokens
        .push(Token::new("glpat-reporter", BOT_ID, &["api"]).access_level(20));
    s.tokens
        .push(Token::new("glpat-guest", BOT_ID, &["api"]).access_level(10));
    let p = std::mem::replace(&mut s.projects[0], Project::new(0, ""));
    s.projects[0] = p
        .file(HEAD_SHA, ".gitlab-ci.yml", CI)
        .file(HEAD_SHA, "ci/assent.yml", INCLUDED)
        .ci_job(Job::mr_job(901, "assent", MR_IID, HEAD_SHA).resource_group("assent-mr-7"))
        .ci_job(
            Job::mr_job(902, "assent", MR_IID, HEAD_SHA)
                .resource_group("assent-mr-7")
                .status("waiting_for_resource"),
        );
    s
}

#[test]
fn version_route() {
    let fake = FakeGitLab::start(state());
    let (status, v) = call(&fake, "GET", "/version", BOT_TOKEN, None);
    assert_eq!(status, 200);
    assert_eq!(v["version"], "18.6.0");
    assert_eq!(call(&fake, "GET", "/version", "nope", None).0, 401);
}

#[test]
fn job_route_shape_and_permission() {
    let fake = FakeGitLab::start(state());
    let (status, v) = call(&fake, "GET", "/projects/42/jobs/901", BOT_TOKEN, None);
    assert_eq!(status, 200);
    assert_eq!(v["id"], 901);
    assert_eq!(v["status"], "running");
    assert_eq!(v["pipeline"]["ref"], "refs/merge-requests/7/head");
    assert_eq!(v["pipeline"]["source"], "merge_request_event");
    assert_eq!(v["pipeline"]["sha"], HEAD_SHA);
    assert!(
        v.get("resource_group").is_none(),
        "GitLab's job entity has no resource_group"
    );
    assert_eq!(
        call(&fake, "GET", "/projects/42/jobs/5", BOT_TOKEN, None).0,
        404
    );
    assert_eq!(
        call(&fake, "GET", "/projects/42/jobs/901", "glpat-guest", None).0,
        403
    );
    assert_eq!(
        call(
            &fake,
            "GET",
            "/projects/42/jobs/901",
            "glpat-reporter",
            None
        )
        .0,
        200
    );
}

#[test]
fn resource_group_and_its_current_job() {
    let fake = FakeGitLab::start(state());
    let (status, v) = call(
        &fake,
        "GET",
        "/projects/group%2Fsub%2Fproj/resource_groups/assent-mr-7",
        BOT_TOKEN,
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(v["key"], "assent-mr-7");
    assert_eq!(v["process_mode"], "unordered");
    let (status, v) = call(
        &fake,
        "GET",
        "/projects/42/resource_groups/assent-mr-7/current_job",
        BOT_TOKEN,
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(
        v["id"], 901,
        "the running job holds it, not the waiting one"
    );
    assert_eq!(
        call(
            &fake,
            "GET",
            "/projects/42/resource_groups/assent-mr-8",
            BOT_TOKEN,
            None
        )
        .0,
        404
    );
    // read_resource_group is a Developer permission.
    assert_eq!(
        call(
            &fake,
            "GET",
            "/projects/42/resource_groups/assent-mr-7",
            "glpat-reporter",
            None
        )
        .0,
        403
    );

    fake.with_state(|s| s.projects[0].resource_groups[0].holder = None);
    let (status, v) = call(
        &fake,
        "GET",
        "/projects/42/resource_groups/assent-mr-7/current_job",
        BOT_TOKEN,
        None,
    );
    assert_eq!((status, v), (200, Value::Null));

    fake.with_state(|s| s.version = "18.5.2-ee".into());
    let (status, v) = call(
        &fake,
        "GET",
        "/projects/42/resource_groups/assent-mr-7/current_job",
        BOT_TOKEN,
        None,
    );
    assert_eq!(status, 404, "the route does not exist before 18.6");
    assert_eq!(v["message"], "404 Not Found");
}

#[test]
fn lint_get_merges_includes_at_the_content_ref() {
    let fake = FakeGitLab::start(state());
    let (status, v) = call(
        &fake,
        "GET",
        &format!("/projects/42/ci/lint?content_ref={HEAD_SHA}&include_jobs=true"),
        BOT_TOKEN,
        None,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["valid"], true);
    let merged: serde_yaml::Value =
        serde_yaml::from_str(v["merged_yaml"].as_str().unwrap()).unwrap();
    assert_eq!(
        merged["assent"]["resource_group"],
        "assent-mr-$CI_MERGE_REQUEST_IID"
    );
    assert!(merged.get("include").is_none());
    assert_eq!(v["jobs"][0]["name"], "assent");
    // The default branch has no configuration file.
    let (_, v) = call(&fake, "GET", "/projects/42/ci/lint", BOT_TOKEN, None);
    assert_eq!(v["valid"], false);
    assert_eq!(
        call(
            &fake,
            "GET",
            "/projects/42/ci/lint?content_ref=nope",
            BOT_TOKEN,
            None
        )
        .0,
        404
    );
    assert_eq!(
        call(&fake, "GET", "/projects/42/ci/lint", "glpat-guest", None).0,
        403
    );

    fake.with_state(|s| s.projects[0].lint_symbol_keys = true);
    let (_, v) = call(
        &fake,
        "GET",
        &format!("/projects/42/ci/lint?content_ref={HEAD_SHA}"),
        BOT_TOKEN,
        None,
    );
    let merged: serde_yaml::Value =
        serde_yaml::from_str(v["merged_yaml"].as_str().unwrap()).unwrap();
    assert_eq!(
        merged[":assent"][":resource_group"],
        "assent-mr-$CI_MERGE_REQUEST_IID"
    );
}

#[test]
fn lint_post_resolves_a_project_include() {
    let mut s = state();
    s.projects.push(
        Project::new(50, "platform/ci-config")
            .branch("main", "5555555555555555555555555555555555555555")
            .file(
                "5555555555555555555555555555555555555555",
                "assent.yml",
                INCLUDED,
            ),
    );
    let fake = FakeGitLab::start(s);
    let content = "include:\n  - project: \"platform/ci-config\"\n    file: \"assent.yml\"\n";
    let form = format!("content={}", form_urlencoded(content));
    let (status, v) = call(
        &fake,
        "POST",
        "/projects/42/ci/lint",
        BOT_TOKEN,
        Some(&form),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["valid"], true, "{v}");
    assert!(
        v["merged_yaml"]
            .as_str()
            .unwrap()
            .contains("assent-mr-$CI_MERGE_REQUEST_IID")
    );
    let bad = format!(
        "content={}",
        form_urlencoded("include:\n  - project: nope/x\n    file: a.yml\n")
    );
    let (_, v) = call(&fake, "POST", "/projects/42/ci/lint", BOT_TOKEN, Some(&bad));
    assert_eq!(v["valid"], false);
}

fn form_urlencoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
