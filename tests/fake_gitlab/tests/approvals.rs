//! The fake's approval routes through a real HTTP client: GitLab's status codes and bodies
//! for approve, unapprove and the approval state, the reset on push, and the approval
//! settings and rules doctor reads.

use std::time::Duration;

use fake_gitlab::fixtures::*;
use fake_gitlab::{ApprovalRule, FakeGitLab, MrState, Token};
use serde_json::Value;

const NEW_SHA: &str = "4444444444444444444444444444444444444444";
const REPORTER_TOKEN: &str = "glpat-reporter";

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into()
}

/// Sends `method path` as `token` with a form body of `pairs`; returns status and JSON.
fn call(
    fake: &FakeGitLab,
    method: &str,
    path: &str,
    token: &str,
    pairs: &[(&str, &str)],
) -> (u16, Value) {
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        form.append_pair(k, v);
    }
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", fake.base_url()))
        .header("PRIVATE-TOKEN", token)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form.finish().into_bytes())
        .unwrap();
    let mut response = agent().run(request).expect("transport");
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn mr_path(rest: &str) -> String {
    format!("/projects/{PROJECT_ID}/merge_requests/{MR_IID}{rest}")
}

fn approvers(body: &Value) -> Vec<u64> {
    body["approved_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["user"]["id"].as_u64().unwrap())
        .collect()
}

fn start() -> FakeGitLab {
    let mut state = basic();
    state
        .tokens
        .push(Token::new(REPORTER_TOKEN, HUMAN_ID, &["api"]).access_level(20));
    FakeGitLab::start(state)
}

#[test]
fn approve_pins_the_head_and_answers_like_gitlab() {
    let fake = start();
    let (status, body) = call(&fake, "GET", &mr_path("/approvals"), BOT_TOKEN, &[]);
    assert_eq!(status, 200);
    assert_eq!(approvers(&body), Vec::<u64>::new());
    assert_eq!(body["user_has_approved"], false);

    // A sha that is not the head: 409, nothing approved.
    let (status, body) = call(
        &fake,
        "POST",
        &mr_path("/approve"),
        BOT_TOKEN,
        &[("sha", NEW_SHA)],
    );
    assert_eq!(status, 409);
    assert_eq!(
        body["message"],
        format!("SHA does not match HEAD of source branch: {HEAD_SHA}")
    );
    assert_eq!(fake.approvals(PROJECT_ID, MR_IID), Vec::<u64>::new());

    // The head: 201 with the approval state.
    let (status, body) = call(
        &fake,
        "POST",
        &mr_path("/approve"),
        BOT_TOKEN,
        &[("sha", HEAD_SHA)],
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(approvers(&body), vec![BOT_ID]);
    assert_eq!(body["approved_by"][0]["user"]["username"], "assent-bot");
    assert_eq!(body["user_has_approved"], true);

    // Approving again: 304 with no body (GitLab 18, the default profile).
    let (status, body) = call(&fake, "POST", &mr_path("/approve"), BOT_TOKEN, &[]);
    assert_eq!((status, body), (304, Value::Null));
    assert_eq!(fake.approvals(PROJECT_ID, MR_IID), vec![BOT_ID]);

    let (status, body) = call(&fake, "GET", &mr_path("/approvals"), BOT_TOKEN, &[]);
    assert_eq!((status, approvers(&body)), (200, vec![BOT_ID]));
    assert_eq!(fake.writes(), 3, "every approve is logged as a write");
}

/// `lib/api/merge_request_approvals.rb`: `not_modified!` from GitLab 18 on; before, the
/// approval services' failures (401 for approving again, 404 for unapproving nothing).
#[test]
fn an_approval_already_so_is_304_from_gitlab_18_and_401_or_404_before() {
    for (version, again, nothing) in [
        ("18.0.0", (304, Value::Null), (304, Value::Null)),
        ("18.6.0", (304, Value::Null), (304, Value::Null)),
        (
            "17.11.3",
            (401, serde_json::json!({"message": "401 Unauthorized"})),
            (404, serde_json::json!({"message": "404 Not Found"})),
        ),
    ] {
        let fake = start();
        fake.with_state(|s| s.version = version.into());
        let first = call(&fake, "POST", &mr_path("/approve"), BOT_TOKEN, &[]);
        assert_eq!(first.0, 201, "{version}");
        let second = call(&fake, "POST", &mr_path("/approve"), BOT_TOKEN, &[]);
        assert_eq!(second, again, "{version}: approving again");
        assert_eq!(fake.approvals(PROJECT_ID, MR_IID), vec![BOT_ID]);
        let first = call(&fake, "POST", &mr_path("/unapprove"), BOT_TOKEN, &[]);
        assert_eq!(first.0, 201, "{version}");
        let second = call(&fake, "POST", &mr_path("/unapprove"), BOT_TOKEN, &[]);
        assert_eq!(second, nothing, "{version}: unapproving nothing");
        assert_eq!(fake.approvals(PROJECT_ID, MR_IID), Vec::<u64>::new());
        // The head check comes first, as in GitLab (`check_sha_param!` before the 304).
        fake.set_approved(PROJECT_ID, MR_IID, BOT_ID, true);
        let moved = call(
            &fake,
            "POST",
            &mr_path("/approve"),
            BOT_TOKEN,
            &[("sha", NEW_SHA)],
        );
        assert_eq!(moved.0, 409, "{version}");
    }
}

#[test]
fn unapprove_answers_not_modified_when_there_is_no_approval() {
    let fake = start();
    let (status, body) = call(&fake, "POST", &mr_path("/unapprove"), BOT_TOKEN, &[]);
    assert_eq!((status, body), (304, Value::Null));

    fake.ensure_user(301, "carol");
    fake.set_approved(PROJECT_ID, MR_IID, BOT_ID, true);
    fake.set_approved(PROJECT_ID, MR_IID, 301, true);
    let (status, body) = call(&fake, "POST", &mr_path("/unapprove"), BOT_TOKEN, &[]);
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        approvers(&body),
        vec![301],
        "only the caller's approval goes"
    );
    assert_eq!(fake.approvals(PROJECT_ID, MR_IID), vec![301]);
}

#[test]
fn who_may_approve() {
    let fake = start();
    // Below Developer: 403.
    for route in ["/approve", "/unapprove"] {
        let (status, _) = call(&fake, "POST", &mr_path(route), REPORTER_TOKEN, &[]);
        assert_eq!(status, 403, "{route}");
    }
    // The MR's author (alice here) while author approval is off: 401.
    fake.with_state(|s| s.projects[0].merge_requests[0].author_id = HUMAN_ID);
    let (status, _) = call(&fake, "POST", &mr_path("/approve"), HUMAN_TOKEN, &[]);
    assert_eq!(status, 401);
    fake.with_state(|s| s.projects[0].approvals.merge_requests_author_approval = true);
    let (status, _) = call(&fake, "POST", &mr_path("/approve"), HUMAN_TOKEN, &[]);
    assert_eq!(status, 201);
    // A merged MR: 401.
    fake.set_mr_state(PROJECT_ID, MR_IID, MrState::Merged);
    let (status, _) = call(&fake, "POST", &mr_path("/approve"), BOT_TOKEN, &[]);
    assert_eq!(status, 401);
    assert_eq!(fake.approvals(PROJECT_ID, MR_IID), vec![HUMAN_ID]);
}

#[test]
fn a_push_removes_approvals_unless_the_project_keeps_them() {
    let fake = start();
    fake.set_approved(PROJECT_ID, MR_IID, BOT_ID, true);
    fake.set_head(PROJECT_ID, MR_IID, HEAD_SHA);
    assert_eq!(
        fake.approvals(PROJECT_ID, MR_IID),
        vec![BOT_ID],
        "no new commit, no reset"
    );
    fake.set_head(PROJECT_ID, MR_IID, NEW_SHA);
    assert_eq!(fake.approvals(PROJECT_ID, MR_IID), Vec::<u64>::new());

    fake.with_state(|s| s.projects[0].approvals.reset_approvals_on_push = false);
    fake.set_approved(PROJECT_ID, MR_IID, BOT_ID, true);
    fake.set_head(PROJECT_ID, MR_IID, HEAD_SHA);
    assert_eq!(fake.approvals(PROJECT_ID, MR_IID), vec![BOT_ID]);
}

#[test]
fn approval_settings_and_rules_are_readable_on_a_premium_tier_only() {
    let fake = start();
    fake.with_state(|s| {
        let a = &mut s.projects[0].approvals;
        a.disable_overriding_approvers_per_merge_request = true;
        a.rules.push(ApprovalRule {
            group_ids: vec![9],
            ..ApprovalRule::users(1, "assent", &[BOT_ID])
        });
        s.projects[0].merge_requests[0]
            .approval_rules
            .push(ApprovalRule::users(2, "mr rule", &[HUMAN_ID]));
    });
    let (status, settings) = call(
        &fake,
        "GET",
        &format!("/projects/{PROJECT_ID}/approvals"),
        BOT_TOKEN,
        &[],
    );
    assert_eq!(status, 200);
    assert_eq!(settings["reset_approvals_on_push"], true);
    assert_eq!(
        settings["disable_overriding_approvers_per_merge_request"],
        true
    );
    let (status, rules) = call(
        &fake,
        "GET",
        &format!("/projects/{PROJECT_ID}/approval_rules"),
        BOT_TOKEN,
        &[],
    );
    assert_eq!(status, 200);
    let rule = &rules[0];
    assert_eq!(rule["rule_type"], "regular");
    assert_eq!(rule["approvals_required"], 1);
    assert_eq!(rule["users"][0]["id"], BOT_ID);
    assert_eq!(rule["eligible_approvers"][0]["id"], BOT_ID);
    assert_eq!(rule["groups"][0]["id"], 9);
    assert_eq!(rule["contains_hidden_groups"], false);
    assert_eq!(rule["protected_branches"], serde_json::json!([]));
    let (status, mr_rules) = call(&fake, "GET", &mr_path("/approval_rules"), BOT_TOKEN, &[]);
    assert_eq!(status, 200);
    assert_eq!(mr_rules[0]["users"][0]["id"], HUMAN_ID);
    assert_eq!(mr_rules[0]["overridden"], false);

    // GitLab Free: no approval rules, and no settings to read.
    fake.with_state(|s| s.projects[0].approvals.rules_available = false);
    for path in [
        format!("/projects/{PROJECT_ID}/approvals"),
        format!("/projects/{PROJECT_ID}/approval_rules"),
        mr_path("/approval_rules"),
    ] {
        let (status, _) = call(&fake, "GET", &path, BOT_TOKEN, &[]);
        assert_eq!(status, 403, "{path}");
    }
    // Approving still works there.
    let (status, _) = call(&fake, "POST", &mr_path("/approve"), BOT_TOKEN, &[]);
    assert_eq!(status, 201);
}

#[test]
fn the_project_says_whether_skipped_pipelines_count_as_success() {
    let fake = start();
    let (_, project) = call(
        &fake,
        "GET",
        &format!("/projects/{PROJECT_ID}"),
        BOT_TOKEN,
        &[],
    );
    assert_eq!(project["allow_merge_on_skipped_pipeline"], false);
    fake.with_state(|s| s.projects[0].allow_merge_on_skipped_pipeline = true);
    let (_, project) = call(
        &fake,
        "GET",
        &format!("/projects/{PROJECT_ID}"),
        BOT_TOKEN,
        &[],
    );
    assert_eq!(project["allow_merge_on_skipped_pipeline"], true);
}
