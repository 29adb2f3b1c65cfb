//! DiffNotes: `POST …/discussions` with a `position`, validated the way GitLab validates it,
//! echoed in listings, resolvable. The statuses and bodies are GitLab's.

use std::time::Duration;

use fake_gitlab::fixtures::*;
use fake_gitlab::positions::INVALID_LINE_CODE;
use fake_gitlab::{DiffFile, FakeGitLab, FaultAction, FaultRule, RouteKind, State};
use serde_json::{Value, json};

/// `topics/orders.yaml`: 30 → 7 days on line 3 of both sides.
const ORDERS_DIFF: &str = "@@ -1,3 +1,3 @@\n topics:\n   - name: orders.events.v1\n-    retention_days: 30\n+    retention_days: 7\n";

fn state() -> State {
    let mut state = basic();
    let mr = state.projects[0].mr_mut(MR_IID).unwrap();
    mr.diffs = vec![DiffFile {
        diff: ORDERS_DIFF.into(),
        ..DiffFile::modified("topics/orders.yaml")
    }];
    state
}

fn post(fake: &FakeGitLab, pairs: &[(&str, &str)]) -> (u16, Value) {
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        form.append_pair(k, v);
    }
    request(fake, "POST", "/discussions", Some(form.finish()))
}

fn request(fake: &FakeGitLab, method: &str, rest: &str, form: Option<String>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let url = format!(
        "{}/projects/{PROJECT_ID}/merge_requests/{MR_IID}{rest}",
        fake.base_url()
    );
    let builder = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("PRIVATE-TOKEN", BOT_TOKEN);
    let mut response = match form {
        Some(form) => agent.run(
            builder
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(form.into_bytes())
                .unwrap(),
        ),
        None => agent.run(builder.body(()).unwrap()),
    }
    .expect("transport");
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// A DiffNote request on `topics/orders.yaml` with the MR's diff refs and `lines`.
fn at<'a>(lines: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut pairs = vec![
        ("body", "on the line"),
        ("position[position_type]", "text"),
        ("position[base_sha]", BASE_SHA),
        ("position[start_sha]", BASE_SHA),
        ("position[head_sha]", HEAD_SHA),
        ("position[old_path]", "topics/orders.yaml"),
        ("position[new_path]", "topics/orders.yaml"),
    ];
    pairs.extend_from_slice(lines);
    pairs
}

/// A request's form fields, in order.
type Form<'a> = Vec<(&'a str, &'a str)>;

fn line_code(old: u64, new: u64) -> String {
    use sha2::{Digest, Sha256};
    let hash = hex::encode(Sha256::digest(b"topics/orders.yaml"));
    format!("{}_{old}_{new}", &hash[..40])
}

#[test]
fn a_diff_note_on_an_added_line_is_created_listed_with_its_position_and_resolvable() {
    let fake = FakeGitLab::start(state());
    let (status, created) = post(&fake, &at(&[("position[new_line]", "3")]));
    assert_eq!(status, 201, "{created}");
    let note = &created["notes"][0];
    assert_eq!(note["type"], "DiffNote");
    assert_eq!(note["resolvable"], true);
    assert_eq!(created["individual_note"], false);
    let expected = json!({
        "base_sha": BASE_SHA, "start_sha": BASE_SHA, "head_sha": HEAD_SHA,
        "old_path": "topics/orders.yaml", "new_path": "topics/orders.yaml",
        "position_type": "text", "old_line": null, "new_line": 3,
        "line_range": {
            "start": {"line_code": line_code(4, 3), "type": "new", "old_line": null, "new_line": 3},
            "end": {"line_code": line_code(4, 3), "type": "new", "old_line": null, "new_line": 3}
        }
    });
    assert_eq!(note["position"], expected);

    let (_, listed) = request(&fake, "GET", "/discussions", None);
    assert_eq!(
        listed[0]["notes"][0]["position"], expected,
        "listings echo it"
    );

    let id = created["id"].as_str().unwrap().to_owned();
    let reply = form_urlencoded::Serializer::new(String::new())
        .append_pair("body", "a reply")
        .finish();
    let (status, reply) = request(
        &fake,
        "POST",
        &format!("/discussions/{id}/notes"),
        Some(reply),
    );
    assert_eq!(status, 201);
    assert_eq!(reply["type"], "DiffNote");
    assert_eq!(reply["position"], expected, "a reply sits on the same line");

    let (status, resolved) = request(
        &fake,
        "PUT",
        &format!("/discussions/{id}?resolved=true"),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(resolved["notes"][0]["resolved"], true);
    assert_eq!(
        resolved["notes"][0]["resolved_by"]["id"].as_u64(),
        Some(BOT_ID)
    );
}

#[test]
fn removed_and_unchanged_lines_take_old_line_and_both() {
    let fake = FakeGitLab::start(state());
    let (status, removed) = post(&fake, &at(&[("position[old_line]", "3")]));
    assert_eq!(status, 201, "{removed}");
    let position = &removed["notes"][0]["position"];
    assert_eq!(
        (position["old_line"].as_u64(), position["new_line"].as_u64()),
        (Some(3), None)
    );
    assert_eq!(
        position["line_range"]["start"]["line_code"],
        line_code(3, 3)
    );
    assert_eq!(position["line_range"]["start"]["type"], "old");

    let (status, context) = post(
        &fake,
        &at(&[("position[old_line]", "1"), ("position[new_line]", "1")]),
    );
    assert_eq!(status, 201, "{context}");
    assert_eq!(
        context["notes"][0]["position"]["line_range"]["start"]["type"],
        Value::Null
    );
}

#[test]
fn positions_outside_the_diff_or_its_version_are_refused_with_gitlabs_answers() {
    let fake = FakeGitLab::start(state());
    let line_code_refusal = json!({ "message": INVALID_LINE_CODE });
    assert_eq!(
        line_code_refusal,
        json!({"message": "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"})
    );
    let other_head = "4".repeat(40);
    let refused: Vec<(&str, Form<'_>, Value)> = vec![
        (
            "a context line as added",
            at(&[("position[new_line]", "1")]),
            line_code_refusal.clone(),
        ),
        (
            "past the hunk",
            at(&[("position[new_line]", "9")]),
            line_code_refusal.clone(),
        ),
        (
            "an added line as removed",
            at(&[("position[old_line]", "4")]),
            line_code_refusal.clone(),
        ),
        ("no line", at(&[]), line_code_refusal.clone()),
        (
            "a context line with mismatched sides",
            at(&[("position[old_line]", "1"), ("position[new_line]", "2")]),
            line_code_refusal.clone(),
        ),
        (
            "another diff version",
            at(&[
                ("position[new_line]", "3"),
                ("position[head_sha]", &other_head),
            ]),
            line_code_refusal.clone(),
        ),
        (
            "a file the diff does not change",
            at(&[
                ("position[new_line]", "3"),
                ("position[new_path]", "topics/other.yaml"),
            ]),
            line_code_refusal.clone(),
        ),
        (
            "no base SHA",
            at(&[("position[new_line]", "3"), ("position[base_sha]", "")]),
            json!({"error": "position[base_sha] is missing"}),
        ),
        (
            "an unknown position type",
            at(&[
                ("position[new_line]", "3"),
                ("position[position_type]", "line"),
            ]),
            json!({"error": "position[position_type] does not have a valid value"}),
        ),
    ];
    for (what, mut pairs, body) in refused {
        // A later pair with the same key replaces the earlier one, as Rack reads a form.
        let mut seen = std::collections::BTreeMap::new();
        for (k, v) in pairs.drain(..) {
            seen.insert(k, v);
        }
        let pairs: Vec<(&str, &str)> = seen.into_iter().collect();
        assert_eq!(post(&fake, &pairs), (400, body), "{what}");
    }
    let (_, listed) = request(&fake, "GET", "/discussions", None);
    assert_eq!(listed, json!([]), "a refused position creates nothing");

    // The fake's placeholder diff (a header without lines) has no line to put a note on.
    let mut placeholder = basic();
    placeholder.projects[0].mr_mut(MR_IID).unwrap().diffs =
        vec![DiffFile::modified("topics/orders.yaml")];
    let fake = FakeGitLab::start(placeholder);
    assert_eq!(post(&fake, &at(&[("position[new_line]", "1")])).0, 400);
}

#[test]
fn a_general_thread_is_still_a_discussion_note_without_position() {
    let fake = FakeGitLab::start(state());
    let (status, created) = post(&fake, &[("body", "general")]);
    assert_eq!(status, 201);
    assert_eq!(created["notes"][0]["type"], "DiscussionNote");
    assert_eq!(created["notes"][0].get("position"), None);
}

#[test]
fn a_refuse_fault_answers_as_told_and_applies_nothing() {
    let fake = FakeGitLab::start(state());
    fake.inject(
        FaultRule::new(FaultAction::Refuse {
            status: 400,
            body: json!({ "message": INVALID_LINE_CODE }),
        })
        .method("POST")
        .route(RouteKind::Discussions),
    );
    assert_eq!(
        post(&fake, &at(&[("position[new_line]", "3")])),
        (400, json!({ "message": INVALID_LINE_CODE }))
    );
    assert!(fake.discussions(PROJECT_ID, MR_IID).is_empty());
}
