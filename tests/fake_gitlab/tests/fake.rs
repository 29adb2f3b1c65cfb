//! Black-box tests of the fake through a real HTTP client (ureq 3).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fake_gitlab::fixtures::*;
use fake_gitlab::{
    DiffFile, Discussion, DiscussionOrder, FakeGitLab, FaultAction, FaultRule, HoldApply, MrState,
    Note, RouteKind, State,
};
use serde_json::Value;

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn h(&self, k: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into()
}

fn call_with(
    agent: &ureq::Agent,
    fake: &FakeGitLab,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<(&str, String)>,
) -> Result<Resp, ureq::Error> {
    let url = format!("{}{}", fake.base_url(), path);
    let mut b = ureq::http::Request::builder().method(method).uri(url);
    if let Some(t) = token {
        b = b.header("PRIVATE-TOKEN", t);
    }
    let mut resp = match body {
        Some((ct, data)) => agent.run(
            b.header("Content-Type", ct)
                .body(data.into_bytes())
                .unwrap(),
        )?,
        None => agent.run(b.body(()).unwrap())?,
    };
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = resp.body_mut().read_to_string()?;
    Ok(Resp {
        status,
        headers,
        body,
    })
}

fn call(
    fake: &FakeGitLab,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<(&str, String)>,
) -> Resp {
    call_with(&agent(), fake, method, path, token, body).expect("transport")
}

fn get(fake: &FakeGitLab, path: &str) -> Resp {
    call(fake, "GET", path, Some(BOT_TOKEN), None)
}

fn form(fake: &FakeGitLab, method: &str, path: &str, pairs: &[(&str, &str)]) -> Resp {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    call(
        fake,
        method,
        path,
        Some(BOT_TOKEN),
        Some(("application/x-www-form-urlencoded", s.finish())),
    )
}

fn mr_path(rest: &str) -> String {
    format!("/projects/{PROJECT_ID}/merge_requests/{MR_IID}{rest}")
}

fn with_threads(n: usize) -> State {
    let mut s = basic();
    let mr = s.projects[0].mr_mut(MR_IID).unwrap();
    for i in 0..n {
        mr.discussions.push(Discussion {
            notes: vec![Note {
                body: format!("thread {i}"),
                author_id: HUMAN_ID,
                note_type: Some("DiscussionNote".into()),
                resolvable: true,
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    s
}

fn link_rels(link: &str) -> Vec<(String, String)> {
    link.split(", ")
        .filter(|s| !s.is_empty())
        .map(|part| {
            let (url, rel) = part.split_once(">; rel=\"").unwrap();
            (
                rel.trim_end_matches('"').to_string(),
                url.trim_start_matches('<').to_string(),
            )
        })
        .collect()
}

#[test]
fn pagination_headers_follow_gitlab() {
    for n in [0usize, 1, 100, 101, 250] {
        let fake = FakeGitLab::start(with_threads(n));
        let mut page = 1;
        let mut seen = 0;
        let pages = n.div_ceil(100).max(1);
        loop {
            let r = get(
                &fake,
                &mr_path(&format!("/discussions?per_page=100&page={page}")),
            );
            assert_eq!(r.status, 200);
            let items = r.json().as_array().unwrap().len();
            seen += items;
            assert_eq!(r.h("X-Page"), Some(page.to_string().as_str()));
            assert_eq!(r.h("X-Per-Page"), Some("100"));
            assert_eq!(r.h("X-Total"), Some(n.to_string().as_str()), "n={n}");
            assert_eq!(r.h("X-Total-Pages"), Some(pages.to_string().as_str()));
            let prev = if page > 1 {
                (page - 1).to_string()
            } else {
                String::new()
            };
            assert_eq!(r.h("X-Prev-Page"), Some(prev.as_str()));
            let rels = link_rels(r.h("Link").unwrap());
            let names: Vec<&str> = rels.iter().map(|(r, _)| r.as_str()).collect();
            for (_, url) in &rels {
                assert!(url.starts_with(&fake.base_url()), "{url}");
                assert!(url.contains("per_page=100"), "{url}");
            }
            assert!(names.contains(&"first") && names.contains(&"last"));
            assert_eq!(names.contains(&"prev"), page > 1);
            let next = r.h("X-Next-Page").unwrap().to_string();
            if page < pages {
                assert_eq!(next, (page + 1).to_string());
                assert!(names.contains(&"next"));
                page += 1;
            } else {
                assert_eq!(next, "", "n={n}");
                assert!(!names.contains(&"next"));
                break;
            }
        }
        assert_eq!(seen, n);
    }
}

#[test]
fn per_page_defaults_and_clamps() {
    let fake = FakeGitLab::start(with_threads(250));
    let r = get(&fake, &mr_path("/discussions"));
    assert_eq!(r.json().as_array().unwrap().len(), 20);
    assert_eq!(r.h("X-Per-Page"), Some("20"));
    assert_eq!(r.h("X-Total-Pages"), Some("13"));
    let r = get(&fake, &mr_path("/discussions?per_page=1000"));
    assert_eq!(r.json().as_array().unwrap().len(), 100);
    assert_eq!(r.h("X-Per-Page"), Some("100"));
    // Past the end: empty page, no next.
    let r = get(&fake, &mr_path("/discussions?per_page=100&page=9"));
    assert_eq!(r.json(), serde_json::json!([]));
    assert_eq!(r.h("X-Next-Page"), Some(""));
}

#[test]
fn totals_can_be_omitted() {
    let fake = FakeGitLab::start(with_threads(150));
    fake.set_omit_totals(true);
    let r = get(&fake, &mr_path("/discussions?per_page=100"));
    assert_eq!(r.h("X-Total"), None);
    assert_eq!(r.h("X-Total-Pages"), None);
    assert_eq!(r.h("X-Next-Page"), Some("2"));
    let rels = link_rels(r.h("Link").unwrap());
    assert!(rels.iter().all(|(r, _)| r != "last"));
    assert!(rels.iter().any(|(r, _)| r == "next"));
}

#[test]
fn discussions_listed_oldest_first_or_in_custom_order() {
    let fake = FakeGitLab::start(basic());
    let (d1, n1) = fake.post_thread(PROJECT_ID, MR_IID, HUMAN_ID, "one");
    let (d2, n2) = fake.post_thread(PROJECT_ID, MR_IID, HUMAN_ID, "two");
    let (d3, _) = fake.post_note(PROJECT_ID, MR_IID, HUMAN_ID, "three");
    assert!(n2 > n1 && n1 >= 1000);
    let ids = |r: Resp| -> Vec<String> {
        r.json()
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(get(&fake, &mr_path("/discussions"))),
        vec![d1.clone(), d2.clone(), d3.clone()]
    );
    fake.set_discussion_order(
        PROJECT_ID,
        MR_IID,
        DiscussionOrder::Custom(vec![d3.clone(), d1.clone()]),
    );
    assert_eq!(
        ids(get(&fake, &mr_path("/discussions"))),
        vec![d3.clone(), d1.clone(), d2.clone()]
    );
    fake.set_discussion_order(PROJECT_ID, MR_IID, DiscussionOrder::Reversed);
    assert_eq!(ids(get(&fake, &mr_path("/discussions"))), vec![d3, d2, d1]);
}

#[test]
fn raw_path_routing() {
    let fake = FakeGitLab::start(basic());
    let r = get(&fake, "/projects/group%2Fsub%2Fproj/merge_requests/7");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["iid"], 7);
    let r = get(&fake, "/projects/group%2Fsub%2Fproj");
    assert_eq!(r.json()["id"], 42);
    assert_eq!(
        r.json()["only_allow_merge_if_all_discussions_are_resolved"],
        true
    );
    let r = get(
        &fake,
        &format!("/projects/42/repository/files/topics%2Forders.yaml/raw?ref={HEAD_SHA}"),
    );
    assert_eq!(r.status, 200);
    assert!(r.body.contains("retention_days: 7"));
    let r = get(
        &fake,
        "/projects/42/repository/files/topics%2Forders.yaml/raw?ref=main",
    );
    assert!(r.body.contains("retention_days: 30"));
    let r = get(
        &fake,
        &format!("/projects/42/repository/files/topics%2Fnope.yaml/raw?ref={HEAD_SHA}"),
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["message"], "404 File Not Found");
    // Unencoded slashes do not route.
    let r = get(&fake, "/projects/group/sub/proj/merge_requests/7");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["message"], "404 Not Found");
    let r = get(&fake, "/nope");
    assert_eq!(r.json(), serde_json::json!({"message": "404 Not Found"}));
    let r = get(&fake, "/projects/99");
    assert_eq!(r.json()["message"], "404 Project Not Found");
    // Branch, tree.
    let r = get(&fake, "/projects/42/repository/branches/main");
    assert_eq!(r.json()["commit"]["id"], TARGET_SHA);
    let r = get(
        &fake,
        "/projects/42/repository/tree?ref=main&recursive=true&per_page=100",
    );
    let tree = r.json();
    let paths: Vec<(&str, &str)> = tree
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        paths,
        vec![("tree", "topics"), ("blob", "topics/orders.yaml")]
    );
    let r = get(&fake, "/projects/42/repository/tree?ref=main&path=topics");
    assert_eq!(r.json()[0]["name"], "orders.yaml");
}

#[test]
fn merge_request_and_listing_shapes() {
    let mut s = basic();
    s.projects[0].merge_requests[0].updated_at = "2024-05-01T10:00:00.000Z".into();
    let mut closed = s.projects[0].merge_requests[0].clone();
    closed.iid = 8;
    closed.state = MrState::Closed;
    closed.updated_at = "2024-05-03T10:00:00.000Z".into();
    let mut old = s.projects[0].merge_requests[0].clone();
    old.iid = 9;
    old.updated_at = "2024-04-01T10:00:00.000Z".into();
    s.projects[0].merge_requests.push(closed);
    s.projects[0].merge_requests.push(old);
    let fake = FakeGitLab::start(s);
    let mr = get(&fake, &mr_path("")).json();
    for k in [
        "sha",
        "diff_refs",
        "state",
        "head_pipeline",
        "target_branch",
        "source_branch",
        "web_url",
        "updated_at",
        "iid",
        "project_id",
        "title",
        "author",
        "labels",
    ] {
        assert!(mr.get(k).is_some(), "missing {k}");
    }
    assert_eq!(mr["diff_refs"]["base_sha"], BASE_SHA);
    assert_eq!(mr["head_pipeline"], Value::Null);
    assert!(mr["author"].get("bot").is_none());
    let iids = |path: &str| -> Vec<u64> {
        let list = get(&fake, path).json();
        list.as_array()
            .unwrap()
            .iter()
            .map(|m| m["iid"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(
        iids("/projects/42/merge_requests?state=opened&updated_after=2024-04-15T00:00:00Z"),
        vec![7]
    );
    assert_eq!(
        iids("/projects/42/merge_requests?order_by=updated_at&sort=asc"),
        vec![9, 7, 8]
    );
    // Pipelines: created through the API become the head pipeline; GitLab answers `status
    // :ok` (`lib/api/merge_requests.rb`).
    let r = form(&fake, "POST", &mr_path("/pipelines"), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "created");
    assert_eq!(r.json()["sha"], HEAD_SHA);
    let mr = get(&fake, &mr_path("")).json();
    assert_eq!(mr["head_pipeline"]["id"], r.json()["id"]);
    assert_eq!(fake.pipelines(PROJECT_ID).len(), 1);
    // Diffs with the too_large switch.
    fake.with_state(|s| {
        let mr = s.projects[0].mr_mut(MR_IID).unwrap();
        mr.diffs.push(DiffFile {
            too_large: Some(true),
            ..DiffFile::added("big.yaml")
        });
    });
    let diffs = get(&fake, &mr_path("/diffs")).json();
    // `Entities::Diff` exposes both flags on every file (`lib/api/entities/diff.rb`).
    assert_eq!(diffs[0]["too_large"], false);
    assert_eq!(diffs[0]["collapsed"], false);
    assert_eq!(diffs[1]["too_large"], true);
    assert_eq!(diffs[1]["new_file"], true);
}

#[test]
fn retargeting_and_blocking_discussions_resolved_in_the_listing_and_the_single_mr() {
    let fake = FakeGitLab::start(basic());
    fake.set_time("2024-05-01T10:00:00Z");
    let both = |fake: &FakeGitLab| -> (Value, Value) {
        let list = get(fake, "/projects/42/merge_requests?state=opened").json();
        let listed = list
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["iid"] == MR_IID)
            .cloned()
            .unwrap();
        (listed, get(fake, &mr_path("")).json())
    };
    let blocking = |fake: &FakeGitLab| -> (Value, Value) {
        let (listed, single) = both(fake);
        (
            listed["blocking_discussions_resolved"].clone(),
            single["blocking_discussions_resolved"].clone(),
        )
    };
    let yes = (Value::Bool(true), Value::Bool(true));
    let no = (Value::Bool(false), Value::Bool(false));
    // GitLab: `true` whenever the project does not require resolved threads
    // (`app/models/merge_request.rb` `mergeable_discussions_state?`).
    fake.with_state(|s| s.projects[0].only_allow_merge_if_all_discussions_are_resolved = false);
    let (first, _) = fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "thread one");
    assert_eq!(blocking(&fake), yes, "open thread, setting off");
    fake.with_state(|s| {
        s.projects[0].only_allow_merge_if_all_discussions_are_resolved = true;
        let mr = s.mr_mut_ref(PROJECT_ID, MR_IID).unwrap();
        mr.discussions.retain(|d| d.id != first);
    });
    assert_eq!(blocking(&fake), yes, "no discussion at all");
    // A plain note is not resolvable and never blocks.
    fake.post_note(PROJECT_ID, MR_IID, HUMAN_ID, "plain");
    assert_eq!(blocking(&fake), yes);
    let (first, _) = fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "thread one");
    let (second, _) = fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "thread two");
    assert_eq!(blocking(&fake), no);
    fake.resolve(PROJECT_ID, MR_IID, &first, HUMAN_ID, true);
    assert_eq!(blocking(&fake), no, "one thread is still open");
    fake.resolve(PROJECT_ID, MR_IID, &second, BOT_ID, true);
    assert_eq!(blocking(&fake), yes, "whoever resolved them");
    fake.resolve(PROJECT_ID, MR_IID, &first, HUMAN_ID, false);
    assert_eq!(blocking(&fake), no, "re-opened");

    // Retargeting: both shapes report the new branch, and the MR counts as updated.
    let before = fake.mr(PROJECT_ID, MR_IID).updated_at;
    fake.set_time("2024-05-02T10:00:00Z");
    fake.set_target_branch(PROJECT_ID, MR_IID, "release");
    let (listed, single) = both(&fake);
    assert_eq!(listed["target_branch"], "release");
    assert_eq!(single["target_branch"], "release");
    assert_ne!(fake.mr(PROJECT_ID, MR_IID).updated_at, before);
    assert_eq!(
        get(&fake, "/projects/42/merge_requests?target_branch=main")
            .json()
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn threads_notes_and_resolvability() {
    let fake = FakeGitLab::start(basic());
    let t = form(
        &fake,
        "POST",
        &mr_path("/discussions"),
        &[("body", "finding")],
    );
    assert_eq!(t.status, 201);
    let t = t.json();
    let did = t["id"].as_str().unwrap().to_string();
    assert_eq!(did.len(), 40);
    assert!(
        did.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert_eq!(t["individual_note"], false);
    let n = &t["notes"][0];
    assert_eq!(n["type"], "DiscussionNote");
    assert_eq!(n["resolvable"], true);
    assert_eq!(n["resolved"], false);
    assert_eq!(n["noteable_type"], "MergeRequest");
    assert_eq!(n["noteable_iid"], 7);
    assert_eq!(n["author"]["id"], BOT_ID);
    assert!(n["author"].get("bot").is_none());
    assert!(n.as_object().unwrap().contains_key("resolved_by"));

    // Plain note: not resolvable, no resolved keys.
    let p = form(&fake, "POST", &mr_path("/notes"), &[("body", "summary")]);
    assert_eq!(p.status, 201);
    let p = p.json();
    assert_eq!(p["type"], Value::Null);
    assert_eq!(p["resolvable"], false);
    for k in ["resolved", "resolved_by", "resolved_at"] {
        assert!(p.get(k).is_none(), "{k}");
    }
    let pid = p["id"].as_u64().unwrap();
    assert!(pid > n["id"].as_u64().unwrap());
    let plain_disc = fake
        .discussions(PROJECT_ID, MR_IID)
        .into_iter()
        .find(|d| d.individual_note)
        .unwrap();

    // Resolve / unresolve.
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{did}")),
        &[("resolved", "true")],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["notes"][0]["resolved"], true);
    assert_eq!(r.json()["notes"][0]["resolved_by"]["id"], BOT_ID);
    assert!(
        fake.discussion(PROJECT_ID, MR_IID, &did)
            .unwrap()
            .resolved()
    );
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{did}")),
        &[("resolved", "false")],
    );
    assert_eq!(r.json()["notes"][0]["resolved"], false);
    // Plain note discussions cannot be resolved.
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{}", plain_disc.id)),
        &[("resolved", "true")],
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["message"], "403 Forbidden");
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{}", "0".repeat(40))),
        &[("resolved", "true")],
    );
    assert_eq!(r.status, 404);

    // Reply.
    let r = form(
        &fake,
        "POST",
        &mr_path(&format!("/discussions/{did}/notes")),
        &[("body", "superseded")],
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["type"], "DiscussionNote");
    assert_eq!(
        fake.discussion(PROJECT_ID, MR_IID, &did)
            .unwrap()
            .notes
            .len(),
        2
    );

    // Get / edit a note: only the author may edit; updated_at moves.
    fake.set_time("2024-06-01T00:00:00Z");
    let (_, human_note) = fake.post_note(PROJECT_ID, MR_IID, HUMAN_ID, "lgtm");
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/notes/{human_note}")),
        &[("body", "hijack")],
    );
    assert_eq!(r.status, 403);
    fake.advance_time(Duration::from_secs(60));
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/notes/{pid}")),
        &[("body", "summary v2")],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["body"], "summary v2");
    assert_eq!(r.json()["updated_at"], "2024-06-01T00:01:00.000Z");
    let r = get(&fake, &mr_path(&format!("/notes/{pid}")));
    assert_eq!(r.json()["body"], "summary v2");
    assert_eq!(get(&fake, &mr_path("/notes/999999")).status, 404);

    // Body is required.
    let r = form(&fake, "POST", &mr_path("/notes"), &[]);
    assert_eq!(r.status, 400);
}

#[test]
fn params_from_query_form_or_json() {
    let fake = FakeGitLab::start(basic());
    let r = call(
        &fake,
        "POST",
        &mr_path("/notes?body=from%20query"),
        Some(BOT_TOKEN),
        None,
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["body"], "from query");
    let r = call(
        &fake,
        "POST",
        &mr_path("/discussions"),
        Some(BOT_TOKEN),
        Some(("application/json", r#"{"body":"from json"}"#.into())),
    );
    assert_eq!(r.json()["notes"][0]["body"], "from json");
    let did = r.json()["id"].as_str().unwrap().to_string();
    let r = call(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{did}")),
        Some(BOT_TOKEN),
        Some(("application/json", r#"{"resolved":true}"#.into())),
    );
    assert_eq!(r.json()["notes"][0]["resolved"], true);
}

/// `GET …/versions` (gitlabhq `lib/api/merge_request_diffs.rb`): one diff version per head
/// the MR had, newest first, paginated; a push adds one.
#[test]
fn versions_list_every_head_newest_first() {
    let fake = FakeGitLab::start(basic());
    let heads = |fake: &FakeGitLab| -> Vec<String> {
        let r = get(fake, &mr_path("/versions"));
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.h("x-total").is_some(), "paginated");
        r.json()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["head_commit_sha"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(heads(&fake), [HEAD_SHA]);
    let newer = "4444444444444444444444444444444444444444";
    fake.set_head(PROJECT_ID, MR_IID, newer);
    fake.set_head(PROJECT_ID, MR_IID, newer);
    assert_eq!(heads(&fake), [newer, HEAD_SHA]);
    let r = get(&fake, &mr_path("/versions"));
    let first = &r.json()[0];
    assert_eq!(first["state"], "collected");
    assert_eq!(first["base_commit_sha"], BASE_SHA);
}

#[test]
fn human_actions_and_inspection() {
    let fake = FakeGitLab::start(basic());
    let (did, nid) = fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "x");
    let copy = fake.clone_discussion(PROJECT_ID, MR_IID, &did);
    assert_ne!(copy, did);
    let ds = fake.discussions(PROJECT_ID, MR_IID);
    assert_eq!(ds.len(), 2);
    assert_eq!(ds[1].notes[0].body, "x");
    assert!(ds[1].notes[0].id > nid);
    fake.resolve(PROJECT_ID, MR_IID, &did, HUMAN_ID, true);
    let r = fake.reply(PROJECT_ID, MR_IID, &did, HUMAN_ID, "ok");
    assert!(fake.note(PROJECT_ID, MR_IID, r).unwrap().resolved);
    fake.edit_note(PROJECT_ID, MR_IID, nid, "edited");
    assert_eq!(fake.note(PROJECT_ID, MR_IID, nid).unwrap().body, "edited");
    fake.delete_note(PROJECT_ID, MR_IID, ds[1].notes[0].id);
    assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 1);
    fake.set_head(
        PROJECT_ID,
        MR_IID,
        "4444444444444444444444444444444444444444",
    );
    fake.set_mr_state(PROJECT_ID, MR_IID, MrState::Merged);
    let mr = get(&fake, &mr_path("")).json();
    assert_eq!(mr["sha"], "4444444444444444444444444444444444444444");
    assert_eq!(
        mr["diff_refs"]["head_sha"],
        "4444444444444444444444444444444444444444"
    );
    assert_eq!(mr["state"], "merged");
    // A reply to a plain note turns it into a resolvable thread.
    let (pd, _) = fake.post_note(PROJECT_ID, MR_IID, BOT_ID, "summary");
    fake.reply(PROJECT_ID, MR_IID, &pd, HUMAN_ID, "question");
    let d = fake.discussion(PROJECT_ID, MR_IID, &pd).unwrap();
    assert!(!d.individual_note && d.resolvable() && !d.resolved());
    // Request log.
    assert_eq!(fake.reads(), 1);
    assert_eq!(fake.writes(), 0);
    fake.reset_log();
    assert!(fake.requests().is_empty());
}

#[test]
fn explicit_seeded_note_ids_are_never_reused() {
    let mut s = basic();
    s.projects[0].merge_requests[0]
        .discussions
        .push(Discussion {
            id: "a".repeat(40),
            individual_note: true,
            notes: vec![Note {
                id: 5000,
                body: "seeded".into(),
                author_id: HUMAN_ID,
                ..Default::default()
            }],
        });
    let fake = FakeGitLab::start(s);
    let r = form(&fake, "POST", &mr_path("/notes"), &[("body", "next")]);
    assert_eq!(r.json()["id"], 5001);
}

#[test]
fn auth_rules() {
    let fake = FakeGitLab::start(basic());
    let r = call(&fake, "GET", "/user", None, None);
    assert_eq!(r.status, 401);
    assert_eq!(r.json(), serde_json::json!({"message": "401 Unauthorized"}));
    assert_eq!(call(&fake, "GET", "/user", Some("wrong"), None).status, 401);
    let r = get(&fake, "/user");
    assert_eq!(r.json()["id"], BOT_ID);
    assert_eq!(r.json()["bot"], true);
    assert_eq!(r.json()["username"], "assent-bot");
    // Token in the query string: refused and recorded.
    let r = call(
        &fake,
        "GET",
        &format!("/user?private_token={BOT_TOKEN}"),
        None,
        None,
    );
    assert_eq!(r.status, 401);
    assert_eq!(fake.violations().len(), 1);
    // read_api: reads ok, writes refused with insufficient_scope.
    assert_eq!(
        call(&fake, "GET", &mr_path(""), Some(READ_TOKEN), None).status,
        200
    );
    let r = call(
        &fake,
        "POST",
        &mr_path("/notes"),
        Some(READ_TOKEN),
        Some(("application/x-www-form-urlencoded", "body=x".into())),
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"], "insufficient_scope");
    assert_eq!(r.json()["scope"], "api");
    assert!(fake.discussions(PROJECT_ID, MR_IID).is_empty());
    let log = fake.requests();
    assert_eq!(log.len(), 6);
    assert!(log[5].write && log[5].status == Some(403));
}

#[test]
fn quick_action_lines_are_recorded() {
    let fake = FakeGitLab::start(basic());
    form(
        &fake,
        "POST",
        &mr_path("/notes"),
        &[("body", "ok\n/approve")],
    );
    assert_eq!(fake.violations().len(), 1);
}

fn post_note_agent(
    agent: &ureq::Agent,
    fake: &FakeGitLab,
    body: &str,
) -> Result<Resp, ureq::Error> {
    call_with(
        agent,
        fake,
        "POST",
        &mr_path("/notes"),
        Some(BOT_TOKEN),
        Some(("application/x-www-form-urlencoded", format!("body={body}"))),
    )
}

#[test]
fn fault_responses() {
    let fake = FakeGitLab::start(basic());
    fake.inject(
        FaultRule::new(FaultAction::RateLimitText { retry_after: 3 })
            .route(RouteKind::User)
            .nth(1),
    );
    let r = get(&fake, "/user");
    assert_eq!(r.status, 429);
    assert_eq!(r.body, "Retry later\n");
    assert_eq!(r.h("Retry-After"), Some("3"));
    assert_eq!(r.h("RateLimit-Remaining"), Some("0"));
    assert!(r.h("RateLimit-Reset").is_some());
    assert_eq!(get(&fake, "/user").status, 200);

    fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 1 })
            .path_contains("/discussions")
            .nth(1),
    );
    let r = get(&fake, &mr_path("/discussions"));
    assert_eq!(r.status, 429);
    assert_eq!(r.h("Retry-After"), Some("1"));
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("too many times")
    );

    fake.clear_faults();
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .method("GET")
            .first_n(1),
    );
    fake.inject(FaultRule::new(FaultAction::BadGateway).method("GET").nth(2));
    fake.inject(
        FaultRule::new(FaultAction::Unavailable)
            .method("GET")
            .nth(3),
    );
    let r = get(&fake, "/user");
    assert_eq!(
        (r.status, r.json()["message"].as_str().unwrap()),
        (500, "500 Internal Server Error")
    );
    let r = get(&fake, "/user");
    assert_eq!(r.status, 502);
    assert!(r.body.starts_with("<!DOCTYPE html>"));
    assert!(serde_json::from_str::<Value>(&r.body).is_err());
    assert_eq!(get(&fake, "/user").status, 503);
    assert_eq!(get(&fake, "/user").status, 200);

    fake.clear_faults();
    fake.inject(FaultRule::new(FaultAction::Latency { ms: 300 }).route(RouteKind::User));
    let t = Instant::now();
    assert_eq!(get(&fake, "/user").status, 200);
    assert!(t.elapsed() >= Duration::from_millis(300));

    fake.clear_faults();
    fake.inject(FaultRule::new(FaultAction::Redirect { location: None }).nth(1));
    let res = call_with(&agent(), &fake, "GET", "/user", Some(BOT_TOKEN), None);
    if let Ok(r) = res {
        assert_eq!(r.status, 301);
        assert!(r.h("Location").unwrap().contains("/moved/api/v4/user"));
    }
    assert_eq!(fake.requests().last().unwrap().status, Some(301));
    assert_eq!(
        fake.requests().last().unwrap().fault.as_deref(),
        Some("redirect")
    );
}

#[test]
fn lost_ack_applies_the_write() {
    let fake = FakeGitLab::start(basic());
    fake.inject(
        FaultRule::new(FaultAction::LostAck { close: false })
            .method("POST")
            .nth(1),
    );
    fake.inject(
        FaultRule::new(FaultAction::LostAck { close: true })
            .method("POST")
            .nth(2),
    );
    let a = agent();
    let r = post_note_agent(&a, &fake, "one").unwrap();
    assert_eq!(r.status, 500);
    assert!(post_note_agent(&a, &fake, "two").is_err());
    assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 2);
    // The same agent keeps working after the closed connection.
    assert_eq!(post_note_agent(&a, &fake, "three").unwrap().status, 201);
    let log = fake.requests();
    assert_eq!(log[1].status, None);
    assert_eq!(log[1].fault.as_deref(), Some("lost_ack"));
}

#[test]
fn reset_before_handling_does_not_apply() {
    let fake = FakeGitLab::start(basic());
    fake.inject(FaultRule::new(FaultAction::Reset).any_write().nth(1));
    assert!(post_note_agent(&agent(), &fake, "x").is_err());
    assert!(fake.discussions(PROJECT_ID, MR_IID).is_empty());
    assert_eq!(post_note_agent(&agent(), &fake, "y").unwrap().status, 201);
}

#[test]
fn hold_until_released() {
    let fake = FakeGitLab::start(basic());
    fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::After,
            timeout_ms: None,
        })
        .any_write()
        .nth(1),
    );
    std::thread::scope(|s| {
        let h = s.spawn(|| post_note_agent(&agent(), &fake, "held").unwrap().status);
        assert!(fake.wait_for_writes(1, Duration::from_secs(5)));
        assert!(fake.wait_for_held(1, Duration::from_secs(5)));
        // Applied while the answer is held.
        assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 1);
        assert_eq!(fake.requests()[0].status, None);
        fake.release_holds();
        assert_eq!(h.join().unwrap(), 201);
    });
    // Before-apply hold with a timeout: nothing applied until it expires.
    fake.clear_faults();
    fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::Before,
            timeout_ms: Some(300),
        })
        .any_write(),
    );
    std::thread::scope(|s| {
        let h = s.spawn(|| post_note_agent(&agent(), &fake, "late").unwrap().status);
        assert!(fake.wait_for_held(1, Duration::from_secs(5)));
        assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 1);
        assert_eq!(h.join().unwrap(), 201);
        assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 2);
    });
    // Never-apply hold: the connection is closed on release.
    fake.clear_faults();
    fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::Never,
            timeout_ms: None,
        })
        .any_write(),
    );
    std::thread::scope(|s| {
        let h = s.spawn(|| post_note_agent(&agent(), &fake, "dropped").is_err());
        assert!(fake.wait_for_held(1, Duration::from_secs(5)));
        fake.release_holds();
        assert!(h.join().unwrap());
    });
    assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 2);
}

#[test]
fn concurrent_writers_get_distinct_ids() {
    let fake = FakeGitLab::start(basic());
    let ids: Vec<(String, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|t| {
                let fake = &fake;
                s.spawn(move || {
                    let a = agent();
                    (0..10)
                        .map(|i| {
                            let r = call_with(
                                &a,
                                fake,
                                "POST",
                                &mr_path("/discussions"),
                                Some(BOT_TOKEN),
                                Some((
                                    "application/x-www-form-urlencoded",
                                    format!("body=t{t}-{i}"),
                                )),
                            )
                            .unwrap();
                            assert_eq!(r.status, 201);
                            let j = r.json();
                            (
                                j["id"].as_str().unwrap().to_string(),
                                j["notes"][0]["id"].as_u64().unwrap(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let dids: BTreeSet<_> = ids.iter().map(|x| x.0.clone()).collect();
    let nids: BTreeSet<_> = ids.iter().map(|x| x.1).collect();
    assert_eq!(dids.len(), 80);
    assert_eq!(nids.len(), 80);
    assert_eq!(*nids.iter().next().unwrap(), 1000);
    assert_eq!(*nids.iter().last().unwrap(), 1079);
    assert_eq!(fake.writes(), 80);
}

#[test]
fn ids_are_deterministic() {
    let run = || {
        let fake = FakeGitLab::start(basic());
        form(&fake, "POST", &mr_path("/discussions"), &[("body", "a")]).json()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(run(), run());
}

#[test]
fn state_file_roundtrip_and_binary() {
    let yaml = serde_yaml::to_string(&basic()).unwrap();
    let back: State = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(back, basic());

    let dir = std::env::temp_dir().join(format!("fake-gitlab-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state_path = dir.join("state.yaml");
    let dump_path = dir.join("dump.yaml");
    std::fs::write(&state_path, yaml).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
        .args(["--port", "0", "--state"])
        .arg(&state_path)
        .arg("--dump-on-exit")
        .arg(&dump_path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().to_string();
    assert!(
        base.starts_with("http://127.0.0.1:") && base.ends_with("/api/v4"),
        "{base}"
    );
    let a = agent();
    let mut r = a
        .post(format!("{base}/projects/42/merge_requests/7/notes"))
        .header("PRIVATE-TOKEN", BOT_TOKEN)
        .send_form([("body", "via bin")])
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let _ = r.body_mut().read_to_string();
    let root = base.trim_end_matches("/api/v4");
    let mut r = a.get(format!("{root}/__fake/state")).call().unwrap();
    let state: State = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(state.projects[0].merge_requests[0].discussions.len(), 1);
    // SIGTERM dumps the state.
    // Test scaffolding: a libc call with no safe std equivalent; the workspace denies
    // `unsafe_code` everywhere else.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    assert!(child.wait().unwrap().success());
    let dumped: State =
        serde_yaml::from_str(&std::fs::read_to_string(&dump_path).unwrap()).unwrap();
    assert_eq!(
        dumped.projects[0].merge_requests[0].discussions[0].notes[0].body,
        "via bin"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_page_cap_and_a_query_matcher() {
    let fake = FakeGitLab::start(with_threads(5));
    fake.set_max_per_page(Some(2));
    let r = get(&fake, &mr_path("/discussions?per_page=100"));
    assert_eq!(r.json().as_array().unwrap().len(), 2);
    assert_eq!(r.h("X-Per-Page"), Some("2"));
    assert_eq!(r.h("X-Next-Page"), Some("2"));
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .method("GET")
            .query_contains("&page=2"),
    );
    assert_eq!(
        get(&fake, &mr_path("/discussions?per_page=100&page=2")).status,
        500
    );
    assert_eq!(
        get(&fake, &mr_path("/discussions?per_page=100&page=3")).status,
        200
    );
}

#[test]
fn seeding_with_explicit_ids_system_notes_and_new_authors() {
    let fake = FakeGitLab::start(basic());
    fake.ensure_user(7, "mallory");
    let (_, id) = fake
        .post_with_id(PROJECT_ID, MR_IID, 7, "hers", true, 40)
        .unwrap();
    assert_eq!(id, 40);
    assert_eq!(
        fake.post_with_id(PROJECT_ID, MR_IID, 7, "again", false, 40),
        Err(fake_gitlab::OpError::NoteIdTaken)
    );
    fake.mark_system(PROJECT_ID, MR_IID, 40).unwrap();
    let note = fake.note(PROJECT_ID, MR_IID, 40).unwrap();
    assert!(note.system && note.resolvable);
    let listed = get(&fake, &mr_path("/discussions"));
    assert_eq!(
        listed.json()[0]["notes"][0]["author"]["username"],
        "mallory"
    );
    // The next generated id follows the note id start (1000), not the small seeded id.
    assert_eq!(fake.post_note(PROJECT_ID, MR_IID, HUMAN_ID, "next").1, 1000);
}

#[test]
fn notes_over_a_million_characters_are_refused_on_create_reply_and_edit() {
    let fake = FakeGitLab::start(basic());
    let limit = "x".repeat(1_000_000);
    let over = "é".repeat(1_000_001); // characters count, not bytes
    let too_long = |r: &Resp| {
        assert_eq!(r.status, 400);
        assert_eq!(
            r.json()["message"]["note"][0],
            "is too long (maximum is 1000000 characters)"
        );
    };
    too_long(&form(&fake, "POST", &mr_path("/notes"), &[("body", &over)]));
    too_long(&form(
        &fake,
        "POST",
        &mr_path("/discussions"),
        &[("body", &over)],
    ));
    let t = form(&fake, "POST", &mr_path("/discussions"), &[("body", &limit)]);
    assert_eq!(t.status, 201, "exactly the limit is accepted");
    let did = t.json()["id"].as_str().unwrap().to_owned();
    let nid = t.json()["notes"][0]["id"].as_u64().unwrap();
    too_long(&form(
        &fake,
        "POST",
        &mr_path(&format!("/discussions/{did}/notes")),
        &[("body", &over)],
    ));
    too_long(&form(
        &fake,
        "PUT",
        &mr_path(&format!("/notes/{nid}")),
        &[("body", &over)],
    ));
    let unchanged = fake.discussion(PROJECT_ID, MR_IID, &did).unwrap();
    assert_eq!(unchanged.notes.len(), 1, "the refused reply was not added");
    assert_eq!(
        unchanged.notes[0].body, limit,
        "the refused edit changed nothing"
    );
}

#[test]
fn a_next_page_after_every_full_page_when_asked() {
    for (n, pages) in [(0usize, 1usize), (99, 1), (100, 2), (200, 3), (250, 3)] {
        let fake = FakeGitLab::start(with_threads(n));
        fake.set_next_on_full_page(true);
        let mut page = 1;
        let mut seen = 0;
        loop {
            let r = get(
                &fake,
                &mr_path(&format!("/discussions?per_page=100&page={page}")),
            );
            let items = r.json().as_array().unwrap().len();
            seen += items;
            let next = r.h("X-Next-Page").unwrap().to_string();
            let rels = link_rels(r.h("Link").unwrap());
            let has_next = rels.iter().any(|(rel, _)| rel == "next");
            assert_eq!(has_next, items == 100, "n={n} page={page}");
            if items < 100 {
                assert_eq!(next, "", "n={n} page={page}");
                break;
            }
            assert_eq!(next, (page + 1).to_string(), "n={n} page={page}");
            page += 1;
        }
        assert_eq!((seen, page), (n, pages), "n={n}");
    }
    // Off by default: a listing of exactly one full page has no next.
    let fake = FakeGitLab::start(with_threads(100));
    let r = get(&fake, &mr_path("/discussions?per_page=100"));
    assert_eq!(r.h("X-Next-Page"), Some(""));
}

#[test]
fn a_reply_rule_answers_exactly_what_it_says_and_applies_nothing() {
    let fake = FakeGitLab::start(basic());
    fake.inject(
        FaultRule::new(FaultAction::Reply {
            status: 429,
            headers: vec![("RateLimit-Reset".into(), "1700000000".into())],
            body: "Retry later\n".into(),
        })
        .any_write()
        .nth(1),
    );
    fake.inject(
        FaultRule::new(FaultAction::Reply {
            status: 201,
            headers: vec![],
            body: "<html>created?</html>".into(),
        })
        .any_write()
        .nth(2),
    );
    let r = form(&fake, "POST", &mr_path("/notes"), &[("body", "one")]);
    assert_eq!((r.status, r.body.as_str()), (429, "Retry later\n"));
    assert_eq!(r.h("RateLimit-Reset"), Some("1700000000"));
    assert_eq!(r.h("Retry-After"), None);
    assert_eq!(r.h("Content-Type"), None, "only the headers given");
    let r = form(&fake, "POST", &mr_path("/notes"), &[("body", "two")]);
    assert_eq!((r.status, r.body.as_str()), (201, "<html>created?</html>"));
    assert!(
        fake.discussions(PROJECT_ID, MR_IID).is_empty(),
        "not applied"
    );
    let log = fake.requests();
    assert_eq!(log[0].fault.as_deref(), Some("reply"));
    assert_eq!((log[0].status, log[1].status), (Some(429), Some(201)));
    // The log reads back what the client sent.
    assert_eq!(log[1].form(), vec![("body".to_string(), "two".to_string())]);
    assert_eq!(log[1].header("private-token"), Some(BOT_TOKEN));
    // Through the control route too.
    let rule = r#"{"action":{"reply":{"status":503,"body":"down"}},"when":{"nth":1}}"#;
    let r = agent()
        .post(format!("{}/__fake/faults", fake.root_url()))
        .header("Content-Type", "application/json")
        .send(rule)
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let r = get(&fake, "/user");
    assert_eq!((r.status, r.body.as_str()), (503, "down"));
}

#[test]
fn a_headers_rule_edits_the_answer_and_still_applies_it() {
    let fake = FakeGitLab::start(with_threads(150));
    fake.inject(
        FaultRule::new(FaultAction::Headers {
            set: vec![("x-total-pages".into(), "1".into())],
            remove: vec!["link".into(), "X-NEXT-PAGE".into()],
        })
        .route(RouteKind::Discussions)
        .nth(1),
    );
    fake.inject(
        FaultRule::new(FaultAction::Headers {
            set: vec![("RateLimit-Remaining".into(), "0".into())],
            remove: vec![],
        })
        .any_write(),
    );
    let r = get(&fake, &mr_path("/discussions?per_page=100"));
    assert_eq!(r.json().as_array().unwrap().len(), 100);
    assert_eq!(r.h("X-Total-Pages"), Some("1"), "replaced, not added");
    assert_eq!(
        r.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("x-total-pages"))
            .count(),
        1
    );
    assert_eq!((r.h("Link"), r.h("X-Next-Page")), (None, None));
    assert_eq!(r.h("X-Total"), Some("150"), "the rest untouched");
    // Only the first listing.
    let r = get(&fake, &mr_path("/discussions?per_page=100"));
    assert_eq!(r.h("X-Next-Page"), Some("2"));
    // On a write: applied, with the header added.
    let r = form(&fake, "POST", &mr_path("/notes"), &[("body", "x")]);
    assert_eq!(r.status, 201);
    assert_eq!(r.h("RateLimit-Remaining"), Some("0"));
    assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 151);
    // With a rule deciding the answer: the edit applies to it.
    fake.inject(FaultRule::new(FaultAction::ServerError).any_write().nth(1));
    let r = form(&fake, "POST", &mr_path("/notes"), &[("body", "y")]);
    assert_eq!(r.status, 500);
    assert_eq!(r.h("RateLimit-Remaining"), Some("0"));
    assert_eq!(
        fake.requests().last().unwrap().fault.as_deref(),
        Some("headers+server_error")
    );
}

#[test]
fn changes_count_counts_the_listing_and_says_plus_past_the_diff_limits() {
    let fake = FakeGitLab::start(basic());
    let mr = get(&fake, "/projects/42/merge_requests/7").json();
    assert_eq!(mr["changes_count"], "1", "a string, as GitLab sends it");
    let changes = get(&fake, "/projects/42/merge_requests/7/changes").json();
    assert_eq!(changes["overflow"], false);
    assert_eq!(changes["changes"].as_array().unwrap().len(), 1);
    assert_eq!(changes["changes"][0]["b_mode"], "100644");

    fake.with_state(|st| st.project_mut(42).unwrap().mr_mut(7).unwrap().overflow = true);
    let mr = get(&fake, "/projects/42/merge_requests/7").json();
    assert_eq!(mr["changes_count"], "1+");
    let changes = get(&fake, "/projects/42/merge_requests/7/changes").json();
    assert_eq!(changes["overflow"], true);

    fake.with_state(|st| {
        st.project_mut(42).unwrap().mr_mut(7).unwrap().changes_count = Some(String::new())
    });
    let mr = get(&fake, "/projects/42/merge_requests/7").json();
    assert_eq!(mr["changes_count"], Value::Null);
}

#[test]
fn symlinks_submodules_and_lfs_files_answer_as_gitlab_does() {
    let object = b"topics:\n  - name: big\n    retention_days: 7\n".to_vec();
    let mut state = basic();
    let project = state.projects.remove(0);
    state.projects.push(
        project
            .symlink(HEAD_SHA, "topics/link.yaml", "../elsewhere.yaml")
            .submodule(HEAD_SHA, "topics/sub", TARGET_SHA)
            .lfs_file(HEAD_SHA, "topics/big.yaml", object.clone())
            .lfs_file(HEAD_SHA, "topics/lost.yaml", b"gone".to_vec()),
    );
    state.projects[0]
        .lfs_objects
        .remove(&fake_gitlab::lfs_oid(b"gone"));
    let fake = FakeGitLab::start(state);
    let raw = |path: &str, lfs: &str| {
        get(
            &fake,
            &format!("/projects/42/repository/files/{path}/raw?ref={HEAD_SHA}{lfs}"),
        )
    };
    // A symbolic link's raw content is its target.
    assert_eq!(raw("topics%2Flink.yaml", "").body, "../elsewhere.yaml");
    // A submodule is no blob.
    assert_eq!(raw("topics%2Fsub", "").status, 404);
    // An LFS file is its pointer, or with `lfs=true` its object (404 when GitLab has none):
    // a 302 to object storage by default (`present_carrierwave_file!`), the storage being
    // the fake's own route that wants no token, or inline with `proxy_download`.
    let pointer = raw("topics%2Fbig.yaml", "").body;
    assert_eq!(pointer, fake_gitlab::lfs_pointer(&object));
    assert!(pointer.starts_with("version https://git-lfs.github.com/spec/v1\noid sha256:"));
    let lfs = raw("topics%2Fbig.yaml", "&lfs=true");
    assert_eq!(lfs.status, 302);
    let location = lfs.h("location").expect("a storage URL").to_owned();
    let oid = fake_gitlab::lfs_oid(&object);
    let storage_path = format!("{}{oid}", fake_gitlab::lfs_storage::STORAGE_LFS_PREFIX);
    assert!(location.contains(&storage_path), "{location}");
    let stored = ureq::get(&location)
        .call()
        .unwrap()
        .body_mut()
        .read_to_vec()
        .unwrap();
    assert_eq!(stored, object);
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
    // A token presented to the storage is a violation: it would have left GitLab.
    ureq::get(&location)
        .header("PRIVATE-TOKEN", BOT_TOKEN)
        .call()
        .unwrap();
    assert_eq!(fake.violations().len(), 1, "{:?}", fake.violations());
    fake.reset_log();
    fake.with_state(|st| st.lfs_proxy_download = true);
    let lfs = raw("topics%2Fbig.yaml", "&lfs=true");
    assert_eq!((lfs.status, lfs.body.as_bytes()), (200, &object[..]));
    fake.with_state(|st| st.lfs_proxy_download = false);
    assert_eq!(raw("topics%2Flost.yaml", "&lfs=true").status, 404);
    // `lfs` is ignored for a file that is no pointer.
    assert!(
        raw("topics%2Forders.yaml", "&lfs=true")
            .body
            .contains("retention_days: 7")
    );
    // With LFS off for the project, the pointer is all there is.
    fake.with_state(|st| st.project_mut(42).unwrap().lfs_enabled = false);
    assert_eq!(raw("topics%2Fbig.yaml", "&lfs=true").body, pointer);

    let tree = get(
        &fake,
        &format!("/projects/42/repository/tree?ref={HEAD_SHA}&recursive=true&per_page=100"),
    )
    .json();
    let entries: Vec<(&str, &str, &str)> = tree
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap(),
                e["type"].as_str().unwrap(),
                e["mode"].as_str().unwrap(),
            )
        })
        .filter(|(path, _, _)| *path != "topics" && *path != "topics/orders.yaml")
        .collect();
    assert_eq!(
        entries,
        vec![
            ("topics/big.yaml", "blob", "100644"),
            ("topics/link.yaml", "blob", "120000"),
            ("topics/lost.yaml", "blob", "100644"),
            ("topics/sub", "commit", "160000"),
        ]
    );
}

#[test]
fn project_variables_answer_as_gitlab_does() {
    let fake = FakeGitLab::start(basic());
    let path = format!("/projects/{PROJECT_ID}/variables/ASSENT_TOKEN");
    // The bot's token is a Maintainer here; a Developer gets 403.
    let r = get(&fake, &path);
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["key"], "ASSENT_TOKEN");
    assert_eq!(v["environment_scope"], "assent");
    assert_eq!(v["masked"], true);
    assert_eq!(v["protected"], false);
    assert_eq!(v["variable_type"], "env_var");
    let developer = call(&fake, "GET", &path, Some(HUMAN_TOKEN), None);
    assert_eq!(developer.status, 403, "{}", developer.body);
    assert_eq!(
        get(&fake, &format!("/projects/{PROJECT_ID}/variables/NOPE")).status,
        404
    );

    // The same key for a second scope: 409 until filter[environment_scope] picks one.
    fake.with_state(|s| {
        s.projects[0].variables.push(fake_gitlab::CiVariable {
            key: "ASSENT_TOKEN".into(),
            ..fake_gitlab::CiVariable::default()
        })
    });
    let r = get(&fake, &path);
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("filter[environment_scope]"), "{}", r.body);
    let every = get(&fake, &format!("{path}?filter%5Benvironment_scope%5D=%2A"));
    assert_eq!(every.status, 200, "{}", every.body);
    let v: Value = serde_json::from_str(&every.body).unwrap();
    assert_eq!(v["environment_scope"], "*");
    let other = get(
        &fake,
        &format!("{path}?filter%5Benvironment_scope%5D=review"),
    );
    assert_eq!(other.status, 404);
}

#[test]
fn a_note_edit_moves_updated_at_and_a_resolution_does_not() {
    let fake = FakeGitLab::start(basic());
    fake.set_time("2026-01-01T10:00:00.000Z");
    let created = form(&fake, "POST", &mr_path("/discussions"), &[("body", "x")]);
    let d: Value = serde_json::from_str(&created.body).unwrap();
    let (did, nid) = (
        d["id"].as_str().unwrap().to_owned(),
        d["notes"][0]["id"].as_u64().unwrap(),
    );
    fake.set_time("2026-01-01T10:01:00.000Z");
    form(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{did}")),
        &[("resolved", "true")],
    );
    let note = |fake: &FakeGitLab| -> Value {
        serde_json::from_str(&get(fake, &mr_path(&format!("/notes/{nid}"))).body).unwrap()
    };
    let resolved = note(&fake);
    assert_eq!(resolved["resolved_at"], "2026-01-01T10:01:00.000Z");
    // GitLab resolves a discussion with `update_all`: the note's `updated_at` stays.
    assert_eq!(resolved["updated_at"], resolved["created_at"]);
    assert_eq!(resolved["created_at"], "2026-01-01T10:00:00.000Z");
    fake.set_time("2026-01-01T10:02:00.000Z");
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/notes/{nid}")),
        &[("body", "y")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let edited = note(&fake);
    assert_eq!(edited["updated_at"], "2026-01-01T10:02:00.000Z");
    assert_eq!(edited["resolved_at"], "2026-01-01T10:01:00.000Z");
    assert!(
        edited.get("last_edited_at").is_none(),
        "GitLab's REST note has no edit field"
    );
}

/// The MR's and every note's `updated_at`, and how many system notes the MR has.
fn stamps(fake: &FakeGitLab) -> (String, Vec<String>, usize) {
    let mr = fake.mr(PROJECT_ID, MR_IID);
    let notes = mr.discussions.iter().flat_map(|d| d.notes.iter());
    (
        mr.updated_at.clone(),
        notes.clone().map(|n| n.updated_at.clone()).collect(),
        notes.filter(|n| n.system).count(),
    )
}

#[test]
fn resolving_one_thread_of_several_is_silent_and_the_last_one_is_announced() {
    // GitLab: `update_all` (`app/models/concerns/resolvable_note.rb`), then
    // `MergeRequests::ResolvedDiscussionNotificationService` once every thread is resolved.
    let fake = FakeGitLab::start(basic());
    fake.set_time("2024-05-01T10:00:00Z");
    let (first, _) = fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "thread one");
    let (second, _) = fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "thread two");
    let before = stamps(&fake);
    fake.set_time("2024-05-01T11:00:00Z");
    fake.resolve(PROJECT_ID, MR_IID, &first, HUMAN_ID, true);
    assert_eq!(stamps(&fake), before, "one of two resolved: nothing moves");
    fake.resolve(PROJECT_ID, MR_IID, &first, HUMAN_ID, false);
    assert_eq!(stamps(&fake), before, "re-opened: nothing moves");
    let resolved = form(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{first}")),
        &[("resolved", "true")],
    );
    assert_eq!(resolved.status, 200);
    assert_eq!(stamps(&fake), before, "through the API too");
    assert_eq!(
        fake.note(
            PROJECT_ID,
            MR_IID,
            resolved.json()["notes"][0]["id"].as_u64().unwrap()
        )
        .unwrap()
        .resolved_at
        .as_deref(),
        Some("2024-05-01T11:00:00.000Z")
    );

    // The last one: a system note, and the MR is touched; its notes are not.
    fake.set_time("2024-05-01T12:00:00Z");
    fake.resolve(PROJECT_ID, MR_IID, &second, HUMAN_ID, true);
    let (mr_updated, notes, system) = stamps(&fake);
    assert_eq!(mr_updated, "2024-05-01T12:00:00.000Z");
    assert_eq!(system, 1);
    assert_eq!(&notes[..before.1.len()], &before.1[..]);
    let note = fake
        .mr(PROJECT_ID, MR_IID)
        .discussions
        .iter()
        .flat_map(|d| d.notes.iter())
        .find(|n| n.system)
        .cloned()
        .unwrap();
    assert_eq!(
        (note.body.as_str(), note.author_id),
        ("resolved all threads", HUMAN_ID)
    );
}

#[test]
fn resolving_through_the_note_route_saves_the_note() {
    // `PUT …/notes/:id?resolved=` goes through `ResolvableNote#resolve!`, which saves the
    // note (`lib/api/helpers/notes_helpers.rb` `resolve_note`): its `updated_at` moves.
    let fake = FakeGitLab::start(basic());
    fake.set_time("2024-05-01T10:00:00Z");
    let (did, nid) = fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "thread");
    fake.post_thread(PROJECT_ID, MR_IID, BOT_ID, "another");
    fake.set_time("2024-05-01T11:00:00Z");
    let r = form(
        &fake,
        "PUT",
        &mr_path(&format!("/discussions/{did}/notes/{nid}")),
        &[("resolved", "true")],
    );
    assert_eq!(r.status, 200);
    let note = fake.note(PROJECT_ID, MR_IID, nid).unwrap();
    assert!(note.resolved);
    assert_eq!(note.updated_at, "2024-05-01T11:00:00.000Z");
    assert_eq!(note.created_at, "2024-05-01T10:00:00.000Z");
}

#[test]
fn a_pipeline_gitlab_cannot_create_is_refused_and_nothing_is_created() {
    let mut state = basic();
    state
        .tokens
        .push(fake_gitlab::Token::new("glpat-reporter", BOT_ID, &["api"]).access_level(20));
    let fake = FakeGitLab::start(state);
    // Below Developer: the pipeline does not validate (`render_validation_error!`).
    let r = call(
        &fake,
        "POST",
        &mr_path("/pipelines"),
        Some("glpat-reporter"),
        None,
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["message"]["base"][0],
        "Insufficient permissions to create a new pipeline"
    );
    // No commits: `MergeRequests::CreatePipelineService` answers no pipeline (`not_allowed!`).
    fake.with_state(|s| s.mr_mut_ref(PROJECT_ID, MR_IID).unwrap().has_no_commits = true);
    let r = form(&fake, "POST", &mr_path("/pipelines"), &[]);
    assert_eq!(r.status, 405);
    assert!(fake.pipelines(PROJECT_ID).is_empty());
}
