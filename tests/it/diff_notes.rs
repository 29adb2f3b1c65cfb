//! Findings on the changed line (docs/contract.md#gitlab-native): the compiled `assent run` against the fake
//! GitLab, whose MR lists real unified diffs. A finding whose value sits on an added or
//! removed line is a DiffNote there, in YAML, JSON and TOML; GitLab's 400 for a position,
//! a whole-file change and a grouped finding give general threads; a push that only moves
//! a line writes no thread; every body links to the file; `--codequality` writes GitLab's
//! report.

use assent_test_support::run::{World, orders};
use fake_gitlab::{Discussion, FaultAction, FaultRule, RouteKind, fixtures};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_assent");

const REGISTRY_POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "registry/*": { "/topics": name }
rules:
  - id: registry-retention-shrink
    match:
      files: ["registry/*"]
      pointer: "/topics/*/retention_days"
      kinds: [modify]
    effect: challenge
    message: "Retention of {{ entry }} shrinks from {{ old }} to {{ new }} days."
  - id: registry-topic-deleted
    match:
      files: ["registry/*"]
      pointer: "/topics/*"
      kinds: [delete]
    effect: comment
    message: "Topic {{ entry }} is deleted."
"#;

/// `(path, base, source, line of t1's retention at the source, line of t2 at the base)`.
const REGISTRIES: [(&str, &str, &str, u64, u64); 3] = [
    (
        "registry/a.yaml",
        "topics:\n  - name: t1\n    retention_days: 30\n  - name: t2\n    retention_days: 10\n",
        "topics:\n  - name: t1\n    retention_days: 7\n",
        3,
        4,
    ),
    (
        "registry/b.json",
        "{\n  \"topics\": [\n    {\"name\": \"t1\", \"retention_days\": 30},\n    {\"name\": \"t2\", \"retention_days\": 10}\n  ]\n}\n",
        "{\n  \"topics\": [\n    {\"name\": \"t1\", \"retention_days\": 7}\n  ]\n}\n",
        3,
        4,
    ),
    (
        "registry/c.toml",
        "[[topics]]\nname = \"t1\"\nretention_days = 30\n\n[[topics]]\nname = \"t2\"\nretention_days = 10\n",
        "[[topics]]\nname = \"t1\"\nretention_days = 7\n",
        3,
        5,
    ),
];

const PROJECT_URL: &str = "https://gitlab.example.com/group/sub/proj";
const MOVED_HEAD: &str = "4444444444444444444444444444444444444444";

fn registry_world() -> World {
    let world = World::new(BIN);
    world.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/registry.yaml",
        REGISTRY_POLICY,
    );
    for (path, base, _, _, _) in REGISTRIES {
        world.put_file(fixtures::BASE_SHA, path, base);
    }
    let sources: Vec<(&str, &str)> = REGISTRIES.iter().map(|r| (r.0, r.2)).collect();
    world.push_with_diffs(fixtures::HEAD_SHA, &sources);
    world
}

/// The finding threads of `rule` whose subject is in `path`.
fn thread_in(world: &World, rule: &str, path: &str) -> Discussion {
    let needle = format!("\"subject\":\"{path}#");
    let mut threads: Vec<Discussion> = world
        .threads_of(rule)
        .into_iter()
        .filter(|d| d.notes[0].body.lines().next().unwrap().contains(&needle))
        .collect();
    assert_eq!(threads.len(), 1, "{rule} in {path}: {threads:#?}");
    threads.remove(0)
}

/// `(old_line, new_line)` of a DiffNote.
type DiffLines = (Option<u64>, Option<u64>);

/// `(old_line, new_line)` of a DiffNote thread; panics on a general thread.
fn diff_lines(thread: &Discussion) -> DiffLines {
    let first = &thread.notes[0];
    assert_eq!(first.note_type.as_deref(), Some("DiffNote"), "{thread:#?}");
    let position = first.position.as_ref().expect("a position");
    assert_eq!(
        (
            position.base_sha.as_str(),
            position.start_sha.as_str(),
            position.head_sha.as_str()
        ),
        (fixtures::BASE_SHA, fixtures::BASE_SHA, fixtures::HEAD_SHA),
        "the MR's diff refs at the pinned head"
    );
    (position.old_line, position.new_line)
}

#[track_caller]
fn assert_general(thread: &Discussion) {
    assert_eq!(thread.notes[0].note_type.as_deref(), Some("DiscussionNote"));
    assert_eq!(thread.notes[0].position, None);
}

/// The headline (the line after the marker) of a thread.
fn headline(thread: &Discussion) -> &str {
    thread.notes[0].body.lines().nth(1).unwrap()
}

#[test]
fn yaml_json_and_toml_findings_are_diff_notes_on_the_changed_line_linking_to_the_file() {
    let world = registry_world();
    let run = world.run(&["--codequality", "gl-code-quality-report.json"]);
    run.expect_code(1);
    assert_eq!(run.receipt()["decision"], "REVIEW");

    for (path, _, _, new_line, old_line) in REGISTRIES {
        let shrink = thread_in(&world, "registry-retention-shrink", path);
        assert_eq!(diff_lines(&shrink), (None, Some(new_line)), "{path}");
        let position = shrink.notes[0].position.as_ref().unwrap();
        assert_eq!(
            (position.old_path.as_str(), position.new_path.as_str()),
            (path, path)
        );
        assert!(
            headline(&shrink).ends_with(&format!(
                " · [line {new_line}]({PROJECT_URL}/-/blob/{}/{path}#L{new_line})",
                fixtures::HEAD_SHA
            )),
            "{}",
            headline(&shrink)
        );
        assert!(!shrink.resolved(), "a challenge waits for assent");

        let deleted = thread_in(&world, "registry-topic-deleted", path);
        assert_eq!(diff_lines(&deleted), (Some(old_line), None), "{path}");
        assert!(
            headline(&deleted).ends_with(&format!(
                " · [line {old_line} before the change]({PROJECT_URL}/-/blob/{}/{path}#L{old_line})",
                fixtures::BASE_SHA
            )),
            "{}",
            headline(&deleted)
        );
        assert!(
            deleted.resolved(),
            "a comment DiffNote is resolved like any comment"
        );
    }
    let summary = world.summary().body;
    assert!(
        summary.contains(&format!(
            "`registry/b.json#/topics/t1/retention_days` · [line 3]({PROJECT_URL}/-/blob/{}/registry/b.json#L3)",
            fixtures::HEAD_SHA
        )),
        "{summary}"
    );

    // The Code Quality report: one entry per finding, fingerprints the receipt's occurrences.
    let report_path = world.dir.path().join("gl-code-quality-report.json");
    let report_text = std::fs::read_to_string(&report_path).unwrap();
    let report: Value = serde_json::from_str(&report_text).unwrap();
    let receipt = run.receipt();
    let findings = receipt["findings"].as_array().unwrap();
    let entries = report.as_array().unwrap();
    assert_eq!(entries.len(), findings.len());
    assert_eq!(entries.len(), 6);
    for (entry, finding) in entries.iter().zip(findings) {
        assert_eq!(
            format!("sha256:{}", entry["fingerprint"].as_str().unwrap()),
            finding["occurrence"].as_str().unwrap()
        );
        assert_eq!(entry["check_name"], finding["rule"]);
    }
    let shrink_in_toml = entries
        .iter()
        .find(|e| {
            e["check_name"] == "registry-retention-shrink"
                && e["location"]["path"] == "registry/c.toml"
        })
        .unwrap();
    assert_eq!(
        shrink_in_toml,
        &json!({
            "type": "issue",
            "description": "Retention of `t1` shrinks from `30` to `7` days.",
            "check_name": "registry-retention-shrink",
            "categories": ["Bug Risk"],
            "fingerprint": shrink_in_toml["fingerprint"],
            "severity": "major",
            "location": {"path": "registry/c.toml", "lines": {"begin": 3}}
        })
    );

    // A rerun on the unchanged MR writes nothing and the same report.
    world.fake.reset_log();
    world
        .run(&["--codequality", "gl-code-quality-report.json"])
        .expect_code(1);
    assert_eq!(world.writes(), vec![], "zero writes on a rerun");
    assert_eq!(std::fs::read_to_string(&report_path).unwrap(), report_text);
    world.assert_no_violations();
}

/// Lines given to GitLab are git's: a lone CR, U+0085, U+2028 and U+2029 in a YAML comment
/// or quoted value end a line to libyaml but not to git, so they move no DiffNote (or file
/// link) off the changed line.
#[test]
fn line_breaks_only_libyaml_counts_move_no_diff_note_off_the_changed_line() {
    let world = World::new(BIN);
    world.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/registry.yaml",
        REGISTRY_POLICY,
    );
    let registry = |days: u32| {
        format!(
            "# owners: team-a\r# team-b\u{2028}# team-c\ntopics:\n  - name: t1\n    \
             note: \"a\u{85} b\u{2029} c\"\n    retention_days: {days}\n"
        )
    };
    let path = "registry/a.yaml";
    world.put_file(fixtures::BASE_SHA, path, &registry(30));
    world.push_with_diffs(fixtures::HEAD_SHA, &[(path, registry(7).as_str())]);
    world.run(&[]).expect_code(1);
    let shrink = thread_in(&world, "registry-retention-shrink", path);
    // Git's line 5: libyaml alone would say 9, a line the diff does not show as added.
    assert_eq!(diff_lines(&shrink), (None, Some(5)));
    assert!(
        headline(&shrink).ends_with(&format!(
            " · [line 5]({PROJECT_URL}/-/blob/{}/{path}#L5)",
            fixtures::HEAD_SHA
        )),
        "{}",
        headline(&shrink)
    );
    world.assert_no_violations();
}

/// The basic world's MR with its real diff: retention 30 → 7 on line 3.
fn orders_world() -> World {
    let world = World::new(BIN);
    world.push_with_diffs(fixtures::HEAD_SHA, &[("topics/orders.yaml", &orders(7))]);
    world
}

/// GitLab's "Automatically resolve threads that become outdated": a maintainer's push that
/// outdates the DiffNote's line resolves it with `resolved_by` = the pusher. That is no
/// assent, whoever pushed: the slot keeps gating, the summary says why and how to turn the
/// setting off, the thread is never re-opened.
#[test]
fn a_diff_note_resolution_is_no_assent_while_pushes_resolve_outdated_threads() {
    let world = orders_world();
    world
        .fake
        .with_state(|s| s.projects[0].resolve_outdated_diff_discussions = true);
    world.run(&[]).expect_code(1);
    let thread = world.thread("retention-shrink");
    assert_eq!(diff_lines(&thread), (None, Some(3)), "a DiffNote");
    // What GitLab records when the push resolves it: the pusher as resolver.
    world.fake.advance_time(std::time::Duration::from_secs(60));
    world.fake.resolve(
        fixtures::PROJECT_ID,
        fixtures::MR_IID,
        &thread.id,
        fixtures::HUMAN_ID,
        true,
    );

    world.fake.reset_log();
    let r = world.run(&["--fail-on", "review"]);
    r.expect_code(1);
    assert!(
        r.stdout.starts_with("assent: REVIEW for !7"),
        "{}",
        r.stdout
    );
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(receipt["findings"][0]["resolved"], true);
    assert_eq!(receipt["findings"][0]["assented"], false);
    assert_eq!(receipt["actions"][0]["action"], "preserve-resolution");
    // The setting is one read of the project, counted like every other.
    let project_reads = world
        .fake
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Project)
        .count();
    assert_eq!(project_reads, 1, "{:#?}", world.fake.requests());
    let summary = world.summary().body;
    assert!(
        summary.contains("**Resolved without assent.**"),
        "{summary}"
    );
    assert!(
        summary.contains("the project resolves outdated diff threads automatically"),
        "{summary}"
    );
    assert!(
        summary.contains("Automatically resolve threads that become outdated"),
        "{summary}"
    );
    let writes = world.writes();
    assert_eq!(writes.len(), 1, "only the summary: {writes:#?}");
    let after = world.thread("retention-shrink");
    assert!(after.resolved(), "never re-opened");
    assert_eq!(after.notes.len(), 1, "no reply");

    // With the setting off, the same resolution is a person's: it counts.
    world
        .fake
        .with_state(|s| s.projects[0].resolve_outdated_diff_discussions = false);
    let r = world.run(&["--fail-on", "review"]);
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
    assert_eq!(r.receipt()["findings"][0]["assented"], true);
    world.assert_no_violations();
}

fn discussion_posts(world: &World) -> Vec<Option<u16>> {
    world
        .writes()
        .iter()
        .filter(|r| r.method == "POST" && r.route == RouteKind::Discussions)
        .map(|r| r.status)
        .collect()
}

#[test]
fn a_position_gitlab_refuses_with_400_becomes_the_general_thread_once() {
    let world = orders_world();
    world.fake.inject(
        FaultRule::new(FaultAction::Refuse {
            status: 400,
            body: json!({"message": "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"}),
        })
        .method("POST")
        .route(RouteKind::Discussions)
        .nth(1),
    );
    let run = world.run(&[]);
    run.expect_code(1);
    assert_eq!(discussion_posts(&world), [Some(400), Some(201)]);
    let thread = world.thread("retention-shrink");
    assert_general(&thread);
    assert!(headline(&thread).contains("[line 3]("), "the link stays");
    let receipt = run.receipt();
    assert_eq!(receipt["rescan"]["verified"], true);
    assert_eq!(
        receipt["requests"]["writes"].as_u64(),
        Some(world.writes().len() as u64),
        "the refused request is counted"
    );
    // The progress count grows by the refused request: never "writes 4/3".
    let counted: Vec<&str> = run
        .progress
        .iter()
        .filter_map(|l| l.strip_prefix("progress: writes "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(counted.last(), Some(&"3/3"), "{:?}", run.progress);

    // The listing is the key: the general thread stands for the finding from now on.
    world.fake.reset_log();
    world.run(&[]).expect_code(1);
    assert_eq!(world.writes(), vec![]);
    world.assert_no_violations();
}

#[test]
fn a_diff_note_whose_answer_is_lost_is_settled_by_the_listing_never_posted_twice() {
    for (action, applied) in [
        (FaultAction::ServerError, false),
        (FaultAction::LostAck { close: true }, true),
    ] {
        let world = orders_world();
        world.fake.inject(
            FaultRule::new(action.clone())
                .method("POST")
                .route(RouteKind::Discussions)
                .nth(1),
        );
        let run = world.run(&[]);
        run.expect_code(1);
        let thread = world.thread("retention-shrink");
        assert_eq!(diff_lines(&thread), (None, Some(3)), "{action:?}");
        let posts = discussion_posts(&world).len();
        assert_eq!(posts, if applied { 1 } else { 2 }, "{action:?}");
        assert_eq!(run.receipt()["rescan"]["verified"], true);
    }
}

#[test]
fn a_whole_file_add_is_a_general_thread_linking_to_the_file() {
    let world = World::new(BIN);
    world.push_with_diffs(
        fixtures::HEAD_SHA,
        &[(
            "topics/fresh.yaml",
            "topics:\n  - name: fresh.v1\n    retention_days: 1\n",
        )],
    );
    world.run(&[]).expect_code(1);
    let thread = world.thread("new-file-short-retention");
    assert_general(&thread);
    assert!(
        headline(&thread).ends_with(&format!(
            " · [file]({PROJECT_URL}/-/blob/{}/topics/fresh.yaml)",
            fixtures::HEAD_SHA
        )),
        "{}",
        headline(&thread)
    );
}

#[test]
fn a_push_that_only_moves_the_line_writes_no_thread_and_a_rerun_nothing() {
    let world = orders_world();
    world.run(&[]).expect_code(1);
    let before = world.thread("retention-shrink");
    assert_eq!(diff_lines(&before), (None, Some(3)));

    // An unrelated line above moves the judged value to line 5.
    world.push_with_diffs(
        MOVED_HEAD,
        &[(
            "topics/orders.yaml",
            &format!(
                "# Orders topics.\n# Owned by the payments team.\n{}",
                orders(7)
            ),
        )],
    );
    world.fake.reset_log();
    let moved = world
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", MOVED_HEAD)
        .run();
    moved.expect_code(1);
    let writes = world.writes();
    assert!(
        writes
            .iter()
            .all(|w| w.route == RouteKind::Note && w.method == "PUT"),
        "only the summary names the new head: {writes:#?}"
    );
    assert!(!writes.is_empty());
    assert_eq!(
        world.thread("retention-shrink").id,
        before.id,
        "the same thread"
    );
    let receipt = moved.receipt();
    assert_eq!(receipt["actions"][0]["action"], "leave-untouched");

    world.fake.reset_log();
    world
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", MOVED_HEAD)
        .run()
        .expect_code(1);
    assert_eq!(world.writes(), vec![], "zero writes on the rerun");
    world.assert_no_violations();
}

#[test]
fn the_code_quality_report_is_written_on_a_failing_gate_and_empty_on_a_refusal() {
    let world = orders_world();
    let failed = world.run(&["--fail-on", "review", "--codequality", "cq.json"]);
    failed.expect_code(1);
    let path = world.dir.path().join("cq.json");
    let report: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(report[0]["check_name"], "retention-shrink");
    assert_eq!(report[0]["location"]["lines"]["begin"], 3);

    // A stale pipeline judges nothing: its report is empty, never an older head's findings.
    std::fs::remove_file(&path).unwrap();
    world
        .fake
        .set_head(fixtures::PROJECT_ID, fixtures::MR_IID, MOVED_HEAD);
    world.run(&["--codequality", "cq.json"]).expect_code(0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "[]\n");
}

/// `(path, base, source, line of t1 and of t2 at the base)`: each edit deletes both topics
/// by spelling the deletion at a container (docs/policies.md, "How changes reach rules").
const CONTAINER_DELETIONS: [(&str, &str, &str, u64, u64); 3] = [
    (
        "registry/a.yaml",
        "topics:\n  - name: t1\n    retention_days: 30\n  - name: t2\n    retention_days: 10\n",
        "topics: null\n",
        2,
        4,
    ),
    (
        "registry/b.json",
        "{\n  \"topics\": [\n    {\"name\": \"t1\", \"retention_days\": 30},\n    {\"name\": \"t2\", \"retention_days\": 10}\n  ]\n}\n",
        "{\n  \"topics\": {}\n}\n",
        3,
        4,
    ),
    (
        "registry/c.toml",
        "[[topics]]\nname = \"t1\"\nretention_days = 30\n\n[[topics]]\nname = \"t2\"\nretention_days = 10\n",
        "# emptied\n",
        1,
        5,
    ),
];

#[test]
fn a_topic_list_nulled_emptied_or_taken_with_its_file_deletes_each_topic_on_its_removed_line() {
    let world = World::new(BIN);
    world.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/registry.yaml",
        REGISTRY_POLICY,
    );
    for (path, base, _, _, _) in CONTAINER_DELETIONS {
        world.put_file(fixtures::BASE_SHA, path, base);
    }
    let sources: Vec<(&str, &str)> = CONTAINER_DELETIONS.iter().map(|r| (r.0, r.2)).collect();
    world.push_with_diffs(fixtures::HEAD_SHA, &sources);
    let run = world.run(&[]);
    run.expect_code(0);

    for (path, _, _, t1_line, t2_line) in CONTAINER_DELETIONS {
        let deleted: Vec<(String, DiffLines)> = world
            .threads_of("registry-topic-deleted")
            .into_iter()
            .filter(|d| d.notes[0].body.contains(&format!("\"subject\":\"{path}#")))
            .map(|d| (headline(&d).to_owned(), diff_lines(&d)))
            .collect();
        assert_eq!(deleted.len(), 2, "{path}: {deleted:#?}");
        for (topic, line) in [("t1", t1_line), ("t2", t2_line)] {
            let (_, lines) = deleted
                .iter()
                .find(|(headline, _)| headline.contains(&format!("`{path}#/topics/{topic}`")))
                .unwrap_or_else(|| panic!("{path}: no thread for {topic} in {deleted:#?}"));
            assert_eq!(
                *lines,
                (Some(line), None),
                "{path} {topic}: on its removed line"
            );
        }
    }
    let receipt = run.receipt();
    let subjects: Vec<&str> = receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        [
            "registry/a.yaml#/topics/t1",
            "registry/a.yaml#/topics/t2",
            "registry/b.json#/topics/t1",
            "registry/b.json#/topics/t2",
            "registry/c.toml#/topics/t1",
            "registry/c.toml#/topics/t2",
        ]
    );
    world.assert_no_violations();
}
