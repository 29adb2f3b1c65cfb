//! Contract tests against GitLab's own entities (docs/contract.md#contract-tests,
//! docs/gitlab-contract.md). `gitlab_contract.yaml` is a field list transcribed from GitLab's
//! source: for each answer assent reads, each field's type, when GitLab exposes it and when
//! it is null, with the GitLab file beside each entry. Two tests read it:
//!
//! * [`the_fakes_answers_conform_to_gitlabs_entities`]: the fake is driven through every route
//!   of the list, and each answer is checked field by field: present with its type whenever
//!   GitLab would send it, absent whenever GitLab would not, null only where GitLab sends
//!   null, and no field GitLab's entity does not expose.
//! * [`assents_decoders_fail_closed_on_every_absent_or_null_field`]: each answer the fake gave
//!   is served back to assent's decoders (through the adapter, over the wire) with every
//!   conditional field absent and every nullable field null, one at a time and all at once;
//!   each reading is a named error or the reading that grants nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use assent::core::inventory::Inventory;
use assent::core::model::ListedDiscussion;
use assent::core::model::{ACTIVE_STATE, Account};
use assent::core::sweep_classification::HeadPipeline;
use assent::core::who_assents::{AssentFacts, judge};
use assent::engine::fixture::replay::fixture_pins;
use assent::engine::fixture::schema::FindingSpec;
use assent::engine::run::reconcile::{RunContext, reconcile};
use assent::forge::{Forge, ForgeError, ForgeErrorKind, PolicyProjectFiles};
use assent::gitlab::GitLabForge;
use assent_test_support::{forge_for, start_basic};
use fake_gitlab::fixtures::{self, AUTHOR_ID, BOT_ID, HEAD_SHA, HUMAN_ID, MR_IID, PROJECT_ID};
use fake_gitlab::{
    Discussion, FakeGitLab, FaultAction, FaultRule, Note, NotePosition, ProjectHook, RouteKind,
};
use serde::Deserialize;
use serde_json::{Value, json};

// ---- the field list ------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Contract {
    entities: BTreeMap<String, Entity>,
    answers: Vec<Answer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entity {
    gitlab: String,
    fields: BTreeMap<String, Field>,
    #[serde(default)]
    also: Vec<String>,
    #[serde(default)]
    open: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Field {
    #[serde(rename = "type")]
    kind: Kind,
    of: Option<String>,
    items: Option<Kind>,
    when: Option<String>,
    nullable: Option<String>,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Kind {
    String,
    Integer,
    Boolean,
    Object,
    Array,
}

impl Kind {
    fn matches(self, v: &Value) -> bool {
        match self {
            Kind::String => v.is_string(),
            Kind::Integer => v.is_u64() || v.is_i64(),
            Kind::Boolean => v.is_boolean(),
            Kind::Object => v.is_object(),
            Kind::Array => v.is_array(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    name: String,
    route: String,
    entity: String,
    #[serde(default)]
    list: bool,
    gitlab: String,
}

fn contract() -> Contract {
    let contract: Contract =
        serde_yaml::from_str(include_str!("gitlab_contract.yaml")).expect("gitlab_contract.yaml");
    for (name, entity) in &contract.entities {
        assert!(!entity.gitlab.is_empty(), "{name}: which GitLab file?");
        for (field, spec) in &entity.fields {
            if let Some(of) = &spec.of {
                assert!(
                    contract.entities.contains_key(of),
                    "{name}.{field}: no entity {of}"
                );
            }
        }
    }
    for answer in &contract.answers {
        assert!(
            contract.entities.contains_key(&answer.entity),
            "{}: no entity {}",
            answer.name,
            answer.entity
        );
        assert!(
            !answer.gitlab.is_empty(),
            "{}: which GitLab file?",
            answer.name
        );
    }
    contract
}

/// Whether GitLab exposes `entity.field` (an `expose … if:`) for the object `obj` of the
/// driven world, in which the bot's token is a Maintainer of the project.
fn exposed(entity: &str, field: &str, when: &str, obj: &serde_json::Map<String, Value>) -> bool {
    match (entity, field) {
        ("note", "resolved" | "resolved_by" | "resolved_at") => {
            obj.get("resolvable") == Some(&json!(true))
        }
        ("note", "position" | "commit_id") => obj.get("type") == Some(&json!("DiffNote")),
        // The bot's token may read pipelines and reads the full project.
        ("merge_request", "head_pipeline") | ("project", "resolve_outdated_diff_discussions") => {
            true
        }
        _ => panic!(
            "{entity}.{field} is exposed only when {when:?}: teach `exposed` when that holds in the driven world"
        ),
    }
}

/// What checking answers found: deviations, and the fields seen (present; null).
#[derive(Default)]
struct Conformance {
    deviations: Vec<String>,
    seen: BTreeSet<String>,
    seen_null: BTreeSet<String>,
}

impl Conformance {
    fn check(&mut self, c: &Contract, entity_name: &str, v: &Value, at: &str) {
        let entity = &c.entities[entity_name];
        let Some(obj) = v.as_object() else {
            self.deviations
                .push(format!("{at}: not an object ({entity_name}): {v}"));
            return;
        };
        for (name, field) in &entity.fields {
            let here = format!("{at}.{name}");
            let expected = field
                .when
                .as_deref()
                .is_none_or(|when| exposed(entity_name, name, when, obj));
            let Some(value) = obj.get(name) else {
                if expected {
                    self.deviations.push(format!(
                        "{here}: missing; GitLab always sends it here ({})",
                        entity.gitlab
                    ));
                }
                continue;
            };
            if !expected {
                self.deviations.push(format!(
                    "{here}: sent, but GitLab exposes it only when {} ({})",
                    field.when.as_deref().unwrap_or_default(),
                    entity.gitlab
                ));
            }
            let key = format!("{entity_name}.{name}");
            if value.is_null() {
                if field.nullable.is_none() {
                    self.deviations.push(format!(
                        "{here}: null, which GitLab never sends ({})",
                        entity.gitlab
                    ));
                }
                self.seen_null.insert(key);
                continue;
            }
            self.seen.insert(key);
            if !field.kind.matches(value) {
                self.deviations.push(format!(
                    "{here}: {value} is not a {:?} ({})",
                    field.kind, entity.gitlab
                ));
                continue;
            }
            match (field.kind, &field.of, field.items) {
                (Kind::Object, Some(of), _) => self.check(c, of, value, &here),
                (Kind::Array, Some(of), _) => {
                    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                        self.check(c, of, item, &format!("{here}[{i}]"));
                    }
                }
                (Kind::Array, None, Some(items)) => {
                    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                        if !items.matches(item) {
                            self.deviations
                                .push(format!("{here}[{i}]: {item} is not a {items:?}"));
                        }
                    }
                }
                _ => {}
            }
        }
        if !entity.open {
            for key in obj.keys() {
                if !entity.fields.contains_key(key) && !entity.also.contains(key) {
                    self.deviations.push(format!(
                        "{at}.{key}: GitLab's entity does not expose it ({})",
                        entity.gitlab
                    ));
                }
            }
        }
    }
}

// ---- the driven world ----------------------------------------------------------------------

const P: u64 = PROJECT_ID;
const DIFF_NOTE_ID: u64 = 9001;

fn finding_desired() -> assent::core::model::DesiredState {
    let spec: FindingSpec = serde_yaml::from_str(
        r#"{ rule: retention-shrink, subject: "topics/orders.yaml#/topics/orders.events.v1/retention_days", change: { kind: modify, old: 30, new: 7 } }"#,
    )
    .expect("finding spec");
    assent::core::model::DesiredState::new(vec![spec.to_finding()])
}

fn run_context() -> RunContext {
    RunContext {
        project: fixtures::PROJECT_PATH.into(),
        mr: MR_IID,
        pins: fixture_pins(&assent_test_support::sha(HEAD_SHA)),
        web_url: None,
        dry_run: false,
        mr_author_id: Some(AUTHOR_ID),
        target: None,
        requests_before: Default::default(),
        previous_bot_users: Vec::new(),
    }
}

/// The basic world with every shape the field list names: the bot's finding thread resolved
/// by a reviewer, an open thread, a DiffNote thread, a plain note, a system note, a head
/// pipeline, a hook; the project does not resolve outdated threads on push (so that a
/// missing setting reads differently from the one sent).
fn world() -> FakeGitLab {
    let fake = start_basic();
    let (forge, _) = forge_for(&fake);
    reconcile(&forge, &finding_desired(), &run_context()).expect("the bot's finding thread");
    let finding = forge
        .list_discussions()
        .unwrap()
        .into_iter()
        .find(|d| d.notes[0].resolvable)
        .expect("a finding thread");
    fake.resolve(P, MR_IID, &finding.id, HUMAN_ID, true);
    fake.post_thread(P, MR_IID, HUMAN_ID, "an open question");
    fake.post_note(P, MR_IID, HUMAN_ID, "a plain comment");
    fake.post_system_note(P, MR_IID, AUTHOR_ID, "added 1 commit");
    fake.set_head_pipeline(P, MR_IID, Some((5001, "running")));
    fake.with_state(|s| {
        let project = s.project_mut(P).expect("project");
        project.resolve_outdated_diff_discussions = false;
        project
            .hooks
            .push(ProjectHook::new(1, "https://assent.example.com/hook"));
        let mr = project.mr_mut(MR_IID).expect("mr");
        mr.discussions.push(Discussion {
            id: "d1ff000000000000000000000000000000000001".into(),
            individual_note: false,
            notes: vec![Note {
                id: DIFF_NOTE_ID,
                note_type: Some("DiffNote".into()),
                body: "on the line".into(),
                author_id: HUMAN_ID,
                created_at: "2026-01-01T00:00:00.000Z".into(),
                updated_at: "2026-01-01T00:00:00.000Z".into(),
                resolvable: true,
                position: Some(NotePosition {
                    base_sha: fixtures::BASE_SHA.into(),
                    start_sha: fixtures::BASE_SHA.into(),
                    head_sha: HEAD_SHA.into(),
                    old_path: "topics/orders.yaml".into(),
                    new_path: "topics/orders.yaml".into(),
                    position_type: "text".into(),
                    new_line: Some(3),
                    ..NotePosition::default()
                }),
                ..Note::default()
            }],
        });
    });
    fake
}

/// One request to the fake as any HTTP client sends it: status, headers and JSON body.
fn call(fake: &FakeGitLab, method: &str, path: &str, form: &[(&str, &str)]) -> Fetched {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace(' ', "+")))
        .collect::<Vec<_>>()
        .join("&");
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", fake.base_url()))
        .header("PRIVATE-TOKEN", fixtures::BOT_TOKEN)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body.into_bytes())
        .unwrap();
    let mut response = agent.run(request).expect("transport");
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "content-length" | "connection" | "transfer-encoding" | "date"
            )
        })
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{method} {path}: {status} {text:?} is not JSON: {e}"));
    Fetched {
        status,
        headers,
        body,
    }
}

struct Fetched {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

/// An answer's name, method, path and form body.
type Route = (
    &'static str,
    &'static str,
    String,
    &'static [(&'static str, &'static str)],
);

/// Each answer of the field list as the fake gives it in [`world`], in an order where each
/// write succeeds (the approval before its read, so that `approved_by` lists the bot).
fn drive(fake: &FakeGitLab) -> BTreeMap<&'static str, Fetched> {
    let mr = format!("/projects/{P}/merge_requests/{MR_IID}");
    let routes: [Route; 15] = [
        ("current-user", "GET", "/user".into(), &[]),
        ("project", "GET", format!("/projects/{P}"), &[]),
        (
            "project-member",
            "GET",
            format!("/projects/{P}/members/all/{HUMAN_ID}"),
            &[],
        ),
        ("merge-request", "GET", mr.clone(), &[]),
        (
            "merge-requests",
            "GET",
            format!("/projects/{P}/merge_requests?state=opened"),
            &[],
        ),
        ("approve", "POST", format!("{mr}/approve"), &[]),
        ("approvals", "GET", format!("{mr}/approvals"), &[]),
        ("diffs", "GET", format!("{mr}/diffs"), &[]),
        (
            "tree",
            "GET",
            format!("/projects/{P}/repository/tree?ref={HEAD_SHA}&recursive=true"),
            &[],
        ),
        (
            "branch",
            "GET",
            format!("/projects/{P}/repository/branches/main"),
            &[],
        ),
        ("project-hooks", "GET", format!("/projects/{P}/hooks"), &[]),
        ("created-pipeline", "POST", format!("{mr}/pipelines"), &[]),
        (
            "created-discussion",
            "POST",
            format!("{mr}/discussions"),
            &[("body", "a new thread")],
        ),
        (
            "created-note",
            "POST",
            format!("{mr}/notes"),
            &[("body", "a new note")],
        ),
        // Last: it lists the threads created above too.
        (
            "discussions",
            "GET",
            format!("{mr}/discussions?per_page=100"),
            &[],
        ),
    ];
    routes
        .into_iter()
        .map(|(name, method, path, form)| {
            let fetched = call(fake, method, &path, form);
            assert!(
                (200..300).contains(&fetched.status),
                "{name}: {method} {path} answered {} {}",
                fetched.status,
                fetched.body
            );
            (name, fetched)
        })
        .collect()
}

// ---- a: the fake conforms ------------------------------------------------------------------

/// Where the fake still differs from GitLab, in areas being changed elsewhere: each entry is
/// (the start of a deviation's text, the entity's field it leaves unseen, why it stays for
/// now). Each must still occur (so a fix removes it here), and no other deviation may.
const KNOWN_DEVIATIONS: &[(&str, &str, &str)] = &[];

#[test]
fn the_fakes_answers_conform_to_gitlabs_entities() {
    let c = contract();
    let fake = world();
    let answers = drive(&fake);
    let mut conformance = Conformance::default();
    for answer in &c.answers {
        let fetched = answers
            .get(answer.name.as_str())
            .unwrap_or_else(|| panic!("{}: drive the fake through {}", answer.name, answer.route));
        if answer.list {
            let items = fetched
                .body
                .as_array()
                .unwrap_or_else(|| panic!("{}: not a JSON array: {}", answer.name, fetched.body));
            assert!(
                !items.is_empty(),
                "{}: an empty list checks nothing",
                answer.name
            );
            for (i, item) in items.iter().enumerate() {
                conformance.check(&c, &answer.entity, item, &format!("{}[{i}]", answer.name));
            }
        } else {
            conformance.check(&c, &answer.entity, &fetched.body, &answer.name);
        }
    }
    assert_eq!(
        answers.len(),
        c.answers.len(),
        "every driven answer is in the list"
    );

    let mut unknown = Vec::new();
    let mut matched = BTreeSet::new();
    for deviation in &conformance.deviations {
        match KNOWN_DEVIATIONS
            .iter()
            .find(|(d, ..)| deviation.starts_with(d))
        {
            Some((d, ..)) => {
                matched.insert(*d);
            }
            None => unknown.push(deviation.clone()),
        }
    }
    assert!(
        unknown.is_empty(),
        "the fake answers unlike GitLab:\n{}",
        unknown.join("\n")
    );
    for (d, _, why) in KNOWN_DEVIATIONS {
        assert!(
            matched.contains(d),
            "the known deviation {d:?} ({why}) no longer occurs: remove it from KNOWN_DEVIATIONS"
        );
    }

    // Not vacuous: every field of every entity reached was seen with a value, and every
    // nullable field the world can show null was seen null at least once.
    let mut reached = BTreeSet::new();
    for answer in &c.answers {
        reach(&c, &answer.entity, &mut reached);
    }
    for entity in &reached {
        for name in c.entities[entity].fields.keys() {
            let key = format!("{entity}.{name}");
            let known = KNOWN_DEVIATIONS.iter().any(|(_, field, _)| *field == key);
            assert!(
                known || conformance.seen.contains(&key) || conformance.seen_null.contains(&key),
                "the driven world never shows {key}: seed it in `world`"
            );
        }
    }
    for key in [
        "note.resolved_by",
        "note.resolved_at",
        "note.type",
        "note.commit_id",
    ] {
        assert!(conformance.seen_null.contains(key), "never null: {key}");
    }
}

fn reach(c: &Contract, entity: &str, reached: &mut BTreeSet<String>) {
    if reached.insert(entity.to_owned()) {
        for field in c.entities[entity].fields.values() {
            if let Some(of) = &field.of {
                reach(c, of, reached);
            }
        }
    }
}

/// The field list rejects what it should: a missing field, a wrong type, an unexposed
/// field, a null GitLab never sends, a conditional field sent when the condition fails.
#[test]
fn the_conformance_check_finds_each_kind_of_deviation() {
    let c = contract();
    let user = json!({"id": 1, "username": "u", "name": "U"});
    let note = json!({
        "id": 1, "type": "DiscussionNote", "body": "b", "author": user,
        "created_at": "t", "updated_at": "t", "system": false, "resolvable": false
    });
    let mut ok = Conformance::default();
    ok.check(&c, "note", &note, "note");
    assert_eq!(ok.deviations, Vec::<String>::new());
    for (edit, expected) in [
        (
            json!({"body": null}),
            "note.body: null, which GitLab never sends",
        ),
        (json!({"id": "1"}), "note.id: \"1\" is not a Integer"),
        (
            json!({"resolved": false}),
            "note.resolved: sent, but GitLab exposes it only when",
        ),
        (
            json!({"web_url": "x"}),
            "note.web_url: GitLab's entity does not expose it",
        ),
        (json!({"resolvable": true}), "note.resolved: missing"),
    ] {
        let mut bad = note.clone();
        for (k, v) in edit.as_object().unwrap() {
            bad[k] = v.clone();
        }
        let mut found = Conformance::default();
        found.check(&c, "note", &bad, "note");
        assert!(
            found.deviations.iter().any(|d| d.starts_with(expected)),
            "{edit}: {:?}",
            found.deviations
        );
    }
    let mut missing = Conformance::default();
    missing.check(&c, "note", &json!({"id": 1}), "note");
    assert!(
        missing
            .deviations
            .iter()
            .any(|d| d.starts_with("note.body: missing")),
        "{:?}",
        missing.deviations
    );
}

// ---- b: the decoders fail closed -----------------------------------------------------------

/// What a mutation does to a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edit {
    /// A conditional field left out, as GitLab does when its condition fails.
    Absent,
    /// A nullable field sent as null.
    Null,
}

/// Every (entity, field, edit) reachable from `entity` that GitLab can send: conditional
/// fields absent, nullable fields null.
fn edits(
    c: &Contract,
    entity: &str,
    out: &mut Vec<(String, String, Edit)>,
    seen: &mut BTreeSet<String>,
) {
    if !seen.insert(entity.to_owned()) {
        return;
    }
    for (name, field) in &c.entities[entity].fields {
        if field.when.is_some() {
            out.push((entity.to_owned(), name.clone(), Edit::Absent));
        }
        if field.nullable.is_some() {
            out.push((entity.to_owned(), name.clone(), Edit::Null));
        }
        if let Some(of) = &field.of {
            edits(c, of, out, seen);
        }
    }
}

/// Applies `edit` of `target.field` to every object of entity `target.entity` within `v`
/// (an object of `entity`).
fn apply(c: &Contract, entity: &str, v: &mut Value, target: &(String, String, Edit)) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    if entity == target.0 {
        match target.2 {
            Edit::Absent => {
                obj.remove(&target.1);
            }
            Edit::Null => {
                if let Some(value) = obj.get_mut(&target.1) {
                    *value = Value::Null;
                }
            }
        }
    }
    for (name, field) in &c.entities[entity].fields {
        let (Some(of), Some(value)) = (&field.of, obj.get_mut(name)) else {
            continue;
        };
        match value {
            Value::Array(items) => items.iter_mut().for_each(|i| apply(c, of, i, target)),
            Value::Object(_) => apply(c, of, value, target),
            _ => {}
        }
    }
}

/// The answer's mutated bodies: one per edit, then all edits at once.
fn mutated(c: &Contract, answer: &Answer, body: &Value) -> Vec<(String, Value)> {
    let mut all = Vec::new();
    edits(c, &answer.entity, &mut all, &mut BTreeSet::new());
    let mut out = Vec::new();
    let mut everything = body.clone();
    for target in &all {
        let mut one = body.clone();
        for v in items_mut(&mut one, answer.list) {
            apply(c, &answer.entity, v, target);
        }
        for v in items_mut(&mut everything, answer.list) {
            apply(c, &answer.entity, v, target);
        }
        out.push((format!("{}.{} {:?}", target.0, target.1, target.2), one));
    }
    if !all.is_empty() {
        out.push(("all at once".to_owned(), everything));
    }
    out
}

fn items_mut(v: &mut Value, list: bool) -> Vec<&mut Value> {
    if list {
        v.as_array_mut()
            .map(|a| a.iter_mut().collect())
            .unwrap_or_default()
    } else {
        vec![v]
    }
}

/// Serves `body` (with the fake's own headers, pagination included) for every `method` of
/// `route` until the faults are cleared; a write so answered is not applied.
fn serve(fake: &FakeGitLab, method: &str, route: RouteKind, fetched: &Fetched, body: &Value) {
    fake.clear_faults();
    fake.inject(
        FaultRule::new(FaultAction::Reply {
            status: fetched.status,
            headers: fetched.headers.clone(),
            body: body.to_string(),
        })
        .method(method)
        .route(route),
    );
}

fn is_true(v: Option<&Value>) -> bool {
    v == Some(&json!(true))
}

/// `forge.merge_request()` and the sweep's single-MR read over `body`.
fn check_merge_request(forge: &GitLabForge, body: &Value) -> Result<(), String> {
    let info = forge.merge_request();
    if body["sha"].is_null() {
        let err = info.err().ok_or("a null sha was read as a head")?;
        if err.kind() != ForgeErrorKind::Decode || !err.to_string().contains("no head sha") {
            return Err(format!("a null sha is not the named error: {err}"));
        }
    } else {
        let info = info.map_err(|e| e.to_string())?;
        let base = body["diff_refs"]["base_sha"].as_str();
        if info.base_sha.as_ref().map(|s| s.as_str()) != base {
            return Err(format!(
                "base_sha {:?} from {}",
                info.base_sha, body["diff_refs"]
            ));
        }
        let count = body["changes_count"].as_str().map(str::to_owned);
        if info.changes_count != count {
            return Err(format!(
                "changes_count {:?} from {}",
                info.changes_count, body["changes_count"]
            ));
        }
        let status = body
            .get("head_pipeline")
            .and_then(|p| p["status"].as_str())
            .map(str::to_owned);
        if info.head_pipeline_status != status {
            return Err(format!(
                "a head pipeline {:?} GitLab did not send",
                info.head_pipeline_status
            ));
        }
    }
    let entry = forge.client().merge_request_entry(MR_IID);
    // Left out when the token cannot read pipelines: a named error, never "no pipeline".
    let Some(sent) = body.get("head_pipeline") else {
        let err = entry
            .err()
            .ok_or("an absent head_pipeline was read as an answer")?;
        if err.kind() != ForgeErrorKind::Decode || !err.to_string().contains("head_pipeline") {
            return Err(format!(
                "an absent head_pipeline is not the named error: {err}"
            ));
        }
        return Ok(());
    };
    let entry = entry.map_err(|e| e.to_string())?;
    if entry.head_sha.as_ref().map(|s| s.as_str()) != body["sha"].as_str() {
        return Err(format!("the sweep read sha {:?}", entry.head_sha));
    }
    if sent.is_null() && entry.head_pipeline != HeadPipeline::None {
        return Err(format!(
            "no head pipeline read as {:?}",
            entry.head_pipeline
        ));
    }
    Ok(())
}

/// `forge.list_discussions()` over `body`: no note reads as resolved, resolved by someone or
/// on a diff unless GitLab said so, and no resolution counts as assent without a resolver.
fn check_discussions(forge: &GitLabForge, body: &Value) -> Result<(), String> {
    let listed: Vec<ListedDiscussion> = forge.list_discussions().map_err(|e| e.to_string())?;
    let sent = body.as_array().ok_or("not a list")?;
    if listed.len() != sent.len() {
        return Err(format!(
            "{} discussions read from {}",
            listed.len(),
            sent.len()
        ));
    }
    for (discussion, json) in listed.iter().zip(sent) {
        for (note, n) in discussion
            .notes
            .iter()
            .zip(json["notes"].as_array().ok_or("notes")?)
        {
            let resolved = is_true(n.get("resolvable")) && is_true(n.get("resolved"));
            if note.resolved != resolved {
                return Err(format!(
                    "note {} read resolved={} from {n}",
                    note.id, note.resolved
                ));
            }
            if note.resolved_by.is_some() != n.get("resolved_by").is_some_and(Value::is_object) {
                return Err(format!(
                    "note {} read resolved_by {:?} from {n}",
                    note.id, note.resolved_by
                ));
            }
            if note.resolved_at.is_some() != n.get("resolved_at").is_some_and(Value::is_string) {
                return Err(format!(
                    "note {} read resolved_at {:?}",
                    note.id, note.resolved_at
                ));
            }
            if note.diff_note != (n["type"] == json!("DiffNote")) {
                return Err(format!(
                    "note {} read diff_note={}",
                    note.id, note.diff_note
                ));
            }
        }
    }
    // Every resolver GitLab names is an active person here, so that only what the listing
    // says (or leaves out) decides whether a resolution counts.
    let accounts = sent
        .iter()
        .flat_map(|d| d["notes"].as_array().into_iter().flatten())
        .filter_map(|n| n["resolved_by"]["id"].as_u64())
        .map(|id| {
            let person = Account {
                bot: Some(false),
                state: Some(ACTIVE_STATE.to_owned()),
                username: None,
            };
            (id, Ok(person))
        })
        .collect();
    let facts = AssentFacts {
        bot_id: BOT_ID,
        author_id: Some(AUTHOR_ID),
        roles: BTreeMap::new(),
        push_resolves_diff_threads: false,
        accounts,
    };
    for thread in Inventory::from_listing(&listed, BOT_ID).threads {
        let first = sent
            .iter()
            .find(|d| d["id"] == json!(thread.discussion_id))
            .map(|d| &d["notes"][0])
            .ok_or("the thread's discussion")?;
        let given = judge(&thread, None, &facts).is_given();
        if given && !(is_true(first.get("resolved")) && first["resolved_by"].is_object()) {
            return Err(format!(
                "assent counted without GitLab naming a resolver: {first}"
            ));
        }
    }
    Ok(())
}

/// The project's settings over `body`: a missing `resolve_outdated_diff_discussions` reads
/// as "push resolves diff threads" (so no DiffNote resolution counts on a guess), a null
/// `default_branch` is a named error.
fn check_project(forge: &GitLabForge, body: &Value) -> Result<(), String> {
    let resolves = forge
        .resolves_outdated_diff_threads()
        .map_err(|e| e.to_string())?;
    let expected = body
        .get("resolve_outdated_diff_discussions")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if resolves != expected {
        return Err(format!(
            "resolve_outdated_diff_discussions read as {resolves}"
        ));
    }
    match (
        forge.client().default_branch(),
        body["default_branch"].as_str(),
    ) {
        (Err(err), None) if err.to_string().contains("no default branch") => Ok(()),
        (Ok(branch), Some(sent)) if branch == sent => Ok(()),
        (read, _) => Err(format!("default_branch read as {read:?}")),
    }
}

/// The open-MR listing over `body`: a null `sha` stays unknown.
fn check_merge_requests(forge: &GitLabForge, body: &Value) -> Result<(), String> {
    let listed = forge
        .client()
        .list_open_merge_requests()
        .map_err(|e| e.to_string())?;
    let sent = body.as_array().ok_or("not a list")?;
    for (entry, json) in listed.iter().zip(sent) {
        if entry.head_sha.as_ref().map(|s| s.as_str()) != json["sha"].as_str() {
            return Err(format!(
                "!{} read sha {:?} from {}",
                entry.iid, entry.head_sha, json["sha"]
            ));
        }
    }
    Ok(())
}

/// A created thread over `body`: its discussion and first note ids, whatever else is missing.
fn check_created_discussion(forge: &GitLabForge, body: &Value) -> Result<(), String> {
    let created = forge.create_thread("x", None).map_err(|e| e.to_string())?;
    if json!(created.discussion_id) != body["id"]
        || json!(created.note_id) != body["notes"][0]["id"]
    {
        return Err(format!("read {created:?}"));
    }
    Ok(())
}

/// A created note over `body`: its id.
fn check_created_note(forge: &GitLabForge, body: &Value) -> Result<(), String> {
    let id = forge.create_note("x").map_err(|e| e.to_string())?;
    if json!(id) != body["id"] {
        return Err(format!("read note id {id}"));
    }
    Ok(())
}

type Check = fn(&GitLabForge, &Value) -> Result<(), String>;

#[test]
fn assents_decoders_fail_closed_on_every_absent_or_null_field() {
    let c = contract();
    let fake = world();
    let answers = drive(&fake);
    let (forge, _) = forge_for(&fake);
    forge
        .bot_user_id()
        .expect("the bot, read before any answer is replaced");
    // The answers with a conditional or nullable field, each with the reads that decode it.
    let readers: [(&str, &str, RouteKind, Check); 6] = [
        (
            "merge-request",
            "GET",
            RouteKind::MergeRequest,
            check_merge_request,
        ),
        (
            "discussions",
            "GET",
            RouteKind::Discussions,
            check_discussions,
        ),
        ("project", "GET", RouteKind::Project, check_project),
        (
            "merge-requests",
            "GET",
            RouteKind::MergeRequests,
            check_merge_requests,
        ),
        (
            "created-discussion",
            "POST",
            RouteKind::Discussions,
            check_created_discussion,
        ),
        ("created-note", "POST", RouteKind::Notes, check_created_note),
    ];
    let mut checked = BTreeSet::new();
    let mut failures = Vec::new();
    for answer in &c.answers {
        let fetched = &answers[answer.name.as_str()];
        let cases = mutated(&c, answer, &fetched.body);
        let Some((_, method, route, check)) = readers.iter().find(|(n, ..)| *n == answer.name)
        else {
            assert!(
                cases.is_empty(),
                "{}: GitLab may leave out or null {:?}: add a reader that decodes it",
                answer.name,
                cases.iter().map(|(l, _)| l).collect::<Vec<_>>()
            );
            continue;
        };
        checked.insert(answer.name.as_str());
        for (label, body) in
            std::iter::once(("as sent".to_owned(), fetched.body.clone())).chain(cases)
        {
            serve(&fake, method, *route, fetched, &body);
            if let Err(why) = check(&forge, &body) {
                failures.push(format!("{} with {label}: {why}", answer.name));
            }
        }
    }
    fake.clear_faults();
    assert_eq!(checked.len(), readers.len(), "every reader ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The decoders' answer to a body that is not the entity at all: a named decode error (a
/// listing page: an incomplete listing that names the page), never a panic or an empty
/// reading.
#[test]
fn an_answer_of_another_shape_is_a_named_decode_error() {
    let fake = world();
    let (forge, _) = forge_for(&fake);
    forge.bot_user_id().unwrap();
    for (route, body) in [
        (RouteKind::MergeRequest, json!({"state": "opened"})),
        (RouteKind::MergeRequest, json!([])),
        (RouteKind::Discussions, json!([{"id": 5}])),
    ] {
        fake.clear_faults();
        fake.inject(
            FaultRule::new(FaultAction::Reply {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: body.to_string(),
            })
            .method("GET")
            .route(route),
        );
        let (err, kind): (ForgeError, _) = match route {
            RouteKind::MergeRequest => (
                forge.merge_request().map(drop).unwrap_err(),
                ForgeErrorKind::Decode,
            ),
            _ => (
                forge.list_discussions().map(drop).unwrap_err(),
                ForgeErrorKind::Incomplete,
            ),
        };
        assert_eq!(err.kind(), kind, "{route:?} {body}: {err}");
        if kind == ForgeErrorKind::Incomplete {
            assert!(
                err.to_string().contains("is not the expected list"),
                "{err}"
            );
        }
    }
}
