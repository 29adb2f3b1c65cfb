//! `assent run --policy-project`: a central policy project's policies apply beside the
//! governed project's own (docs/policies.md, "Central policies"), against the fake GitLab.

use assent_test_support::run::{RunResult, World, orders};
use fake_gitlab::{FaultAction, FaultRule, FileContent, Project, fixtures};
use serde_json::{Value, json};

use crate::ASSENT;

const NEW_SHA: &str = "4444444444444444444444444444444444444444";
const CENTRAL_ID: u64 = 77;
const CENTRAL_PATH: &str = "platform/policies";
const CENTRAL_MAIN: &str = "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1";
const CENTRAL_NEXT: &str = "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2";

/// A central rule on what the project's own rules also judge: a retention under 14 days.
const FLOOR: &str = "apiVersion: assent/v1\nkind: Policy\nidentities:\n  \"topics/*.yaml\": { \"/topics\": name }\nrules:\n  - id: retention-floor\n    match:\n      files: [\"topics/*.yaml\"]\n      pointer: \"/topics/*/retention_days\"\n      kinds: [add, modify]\n    when: \"int(new) < 14\"\n    effect: block\n    message: \"Retention of {{ entry }} is {{ new }} days, under the platform's floor of 14.\"\n";

/// The governed MR: `orders.events.v1` shrinks from 30 to `days`.
fn world(days: u32, central: &[(&str, &str)]) -> World {
    let w = World::new(ASSENT);
    let files = central
        .iter()
        .map(|(path, text)| ((*path).to_owned(), FileContent(text.as_bytes().to_vec())))
        .collect();
    w.fake.with_state(|s| {
        s.projects.push(Project {
            id: CENTRAL_ID,
            path_with_namespace: CENTRAL_PATH.into(),
            branches: [("main".to_owned(), CENTRAL_MAIN.to_owned())].into(),
            files: [(CENTRAL_MAIN.to_owned(), files)].into(),
            ..Project::default()
        });
    });
    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(days))]);
    w
}

fn run(w: &World, policy_project: &str) -> RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .args(&["--policy-project", policy_project])
        .run()
}

fn rules(receipt: &Value) -> Vec<String> {
    receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

/// The problems of the run's `assent/policy-error` thread, as its body lists them.
fn policy_error_body(w: &World) -> String {
    w.thread("assent/policy-error").notes[0].body.clone()
}

#[test]
fn central_rules_apply_beside_the_projects_own_and_are_pinned() {
    let w = world(7, &[(".assent/policies/floor.yaml", FLOOR)]);
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert_eq!(rules(&receipt), ["retention-floor", "retention-shrink"]);
    assert_eq!(receipt["pins"]["policyProject"], CENTRAL_PATH);
    assert_eq!(receipt["pins"]["policySha"], CENTRAL_MAIN);
    // The two central keys follow the digest, which covers both sets.
    let text = std::fs::read_to_string(w.receipt_path()).unwrap();
    assert!(
        text.contains(&format!(
            "\"policyDigest\":\"{}\",\"policyProject\":\"{CENTRAL_PATH}\",\"policySha\":\"{CENTRAL_MAIN}\"}}",
            receipt["pins"]["policyDigest"].as_str().unwrap()
        )),
        "{text}"
    );
    let without = world(7, &[(".assent/policies/floor.yaml", FLOOR)]);
    let own = without
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run();
    own.expect_code(1);
    let own = own.receipt();
    assert_ne!(own["pins"]["policyDigest"], receipt["pins"]["policyDigest"]);
    assert!(
        own["pins"].get("policyProject").is_none(),
        "no central keys without a central project: {}",
        own["pins"]
    );
    assert_eq!(rules(&own), ["retention-shrink"]);
    r.assert_no_token();
    w.assert_no_violations();
}

#[test]
fn the_environment_names_the_central_project_and_a_ref_pins_that_branch() {
    let w = world(7, &[(".assent/policies/floor.yaml", FLOOR)]);
    w.fake.with_state(|s| {
        let p = s.project_mut(CENTRAL_ID).unwrap();
        p.branches.insert("next".into(), CENTRAL_NEXT.into());
        // On `next` the floor is 5 days: 7 passes it.
        p.files.insert(
            CENTRAL_NEXT.into(),
            [(
                ".assent/policies/floor.yaml".to_owned(),
                FileContent(FLOOR.replace("< 14", "< 5").into_bytes()),
            )]
            .into(),
        );
    });
    w.fake.reset_log();
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .env("ASSENT_POLICY_PROJECT", &format!("{CENTRAL_PATH}@next"))
        .run();
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["pins"]["policySha"], CENTRAL_NEXT);
    assert_eq!(rules(&receipt), ["retention-shrink"]);
    // The ref is resolved once, and every central read is at the commit it resolved to.
    let central: Vec<_> = w
        .fake
        .requests()
        .into_iter()
        .filter(|q| q.path.contains("platform%2Fpolicies"))
        .collect();
    let branch_reads = central
        .iter()
        .filter(|q| q.path.contains("/repository/branches/"))
        .count();
    assert_eq!(branch_reads, 1, "{central:#?}");
    assert!(
        central
            .iter()
            .filter(|q| q.path.contains("/repository/"))
            .filter(|q| !q.path.contains("/branches/"))
            .all(|q| q.query.contains(CENTRAL_NEXT)),
        "{central:#?}"
    );
}

#[test]
fn a_commit_sha_as_the_ref_is_read_as_given() {
    let w = world(7, &[(".assent/policies/floor.yaml", FLOOR)]);
    w.fake.reset_log();
    let r = run(&w, &format!("{CENTRAL_ID}@{CENTRAL_MAIN}"));
    r.expect_code(1);
    assert_eq!(r.receipt()["pins"]["policySha"], CENTRAL_MAIN);
    assert_eq!(r.receipt()["pins"]["policyProject"], CENTRAL_ID.to_string());
    assert!(
        !w.fake
            .requests()
            .iter()
            .any(|q| q.path.starts_with(&format!(
                "/api/v4/projects/{CENTRAL_ID}/repository/branches"
            )) || q.path == format!("/api/v4/projects/{CENTRAL_ID}")),
        "nothing to resolve"
    );
}

#[test]
fn a_rule_id_defined_in_both_sets_is_a_policy_error() {
    let clash = FLOOR.replace("id: retention-floor", "id: retention-shrink");
    let w = world(20, &[(".assent/policies/floor.yaml", &clash)]);
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert_eq!(rules(&receipt), ["assent/policy-error"]);
    let body = policy_error_body(&w);
    assert!(
        body.contains("duplicate rule id `retention-shrink`"),
        "{body}"
    );
    assert!(
        body.contains("central:platform/policies/.assent/policies/floor.yaml"),
        "{body}"
    );
    assert!(body.contains(".assent/policies/topics.yaml"), "{body}");
}

/// A merge request nothing fires on: without its central policies it would be APPROVE.
fn harmless(central: &[(&str, &str)]) -> World {
    world(30, central)
}

#[test]
fn an_unreadable_central_project_never_approves() {
    // No such project (404), a project the token may not read (403), an unknown ref, and a
    // project with no policy file: each is a policy error, never a judgement without them.
    let cases: Vec<(&str, World, String, &str)> = vec![
        (
            "missing project",
            harmless(&[]),
            "platform/nope".to_owned(),
            "cannot be read",
        ),
        (
            "forbidden",
            harmless(&[(".assent/policies/floor.yaml", FLOOR)]),
            CENTRAL_PATH.to_owned(),
            "cannot be read",
        ),
        (
            "unknown ref",
            harmless(&[(".assent/policies/floor.yaml", FLOOR)]),
            format!("{CENTRAL_PATH}@nope"),
            "cannot be read",
        ),
        (
            "no policy file",
            harmless(&[("README.md", "policies live elsewhere")]),
            CENTRAL_PATH.to_owned(),
            "has no policy file",
        ),
    ];
    for (name, w, project, says) in cases {
        if name == "forbidden" {
            w.fake.inject(
                FaultRule::new(FaultAction::Refuse {
                    status: 403,
                    body: json!({"message": "403 Forbidden"}),
                })
                .path_contains("platform%2Fpolicies"),
            );
        }
        let r = run(&w, &project);
        r.expect_code(1);
        let receipt = r.receipt();
        assert_eq!(receipt["decision"], "BLOCK", "{name}");
        assert_eq!(rules(&receipt), ["assent/policy-error"], "{name}");
        let body = policy_error_body(&w);
        assert!(body.contains(says), "{name}: {body}");
        assert!(body.contains("central policy project"), "{name}: {body}");
        r.assert_no_token();
    }
}

#[test]
fn a_central_project_gitlab_cannot_serve_stops_the_run_before_any_write() {
    let w = harmless(&[(".assent/policies/floor.yaml", FLOOR)]);
    w.fake
        .inject(FaultRule::new(FaultAction::ServerError).path_contains("platform%2Fpolicies"));
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(3);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
    r.assert_no_token();
}

#[test]
fn a_malformed_policy_project_is_a_usage_error_naming_it() {
    let w = harmless(&[]);
    for bad in ["group//x", "/lead", "a b", "p@"] {
        let r = run(&w, bad);
        r.expect_code(2);
        assert!(
            r.error_line().contains("policy project"),
            "{bad:?}: {}",
            r.error_line()
        );
    }
    assert!(w.writes().is_empty());
}

/// `assent lint|test REPO --policy-project-dir DIR` with the example registry as REPO and a
/// central checkout holding `floor` as its one policy file.
fn local(command: &str, floor: &str) -> (i32, String, String) {
    let central = tempfile::tempdir().unwrap();
    let policies = central.path().join(".assent/policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("floor.yaml"), floor).unwrap();
    let output = std::process::Command::new(ASSENT)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CI")
        .args([
            command,
            "fixtures/repos/topic-registry",
            "--policy-project-dir",
        ])
        .arg(central.path())
        .output()
        .unwrap();
    let shown = central.path().display().to_string();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap().replace(&shown, "CENTRAL");
    (
        output.status.code().unwrap(),
        text(output.stdout),
        text(output.stderr),
    )
}

#[test]
fn lint_loads_the_central_checkout_beside_the_repository() {
    let (code, out, err) = local("lint", FLOOR);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out, "ok: 16 rule(s) in 3 file(s)\n",
        "one more rule, one more file"
    );
    let clash = FLOOR.replace("id: retention-floor", "id: retention-shrink");
    let (code, out, err) = local("lint", &clash);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("CENTRAL/.assent/policies/floor.yaml:6: duplicate rule id `retention-shrink`"),
        "the central file named by its path in the checkout: {out}"
    );
}

#[test]
fn policy_tests_run_against_both_sets() {
    // The example's cases pass on its own policies; the central floor fires on the new
    // one-day topic, a finding its case does not expect.
    let (code, out, err) = local("test", FLOOR);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("FAILED") && out.contains("retention-floor"),
        "{out}"
    );
    let (code, out, err) = local("test", &FLOOR.replace("< 14", "< 0"));
    assert_eq!(code, 0, "a floor nothing breaks: {out}{err}");
}

/// `assent doctor --policy-project PROJECT` against the world's fake: its `policy-project`
/// line and exit code.
fn doctor(w: &World, project: &str) -> (i32, String) {
    let output = std::process::Command::new(ASSENT)
        .env_clear()
        .args(["doctor", "--policy-project", project])
        .env("CI_API_V4_URL", w.fake.base_url())
        .env(
            "CI_PROJECT_ID",
            fake_gitlab::fixtures::PROJECT_ID.to_string(),
        )
        .env("ASSENT_TOKEN", fake_gitlab::fixtures::BOT_TOKEN)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!stdout.contains(fake_gitlab::fixtures::BOT_TOKEN));
    let line = stdout
        .lines()
        .find(|l| l.contains("policy-project"))
        .unwrap_or_else(|| panic!("no policy-project line: {stdout}"))
        .to_owned();
    (output.status.code().unwrap(), line)
}

#[test]
fn doctor_checks_the_central_project_as_a_run_reads_it() {
    let w = harmless(&[(".assent/policies/floor.yaml", FLOOR)]);
    let (_, line) = doctor(&w, CENTRAL_PATH);
    assert!(
        line.starts_with("✓ policy-project")
            && line.contains("1 central policy file(s) on platform/policies@c1c1c1c1 load"),
        "{line}"
    );
    let (code, line) = doctor(&w, "platform/nope");
    assert_eq!(code, 1, "{line}");
    assert!(
        line.starts_with("✗ policy-project") && line.contains("cannot be read"),
        "{line}"
    );
    let broken = harmless(&[(".assent/policies/floor.yaml", "rules: [")]);
    let (code, line) = doctor(&broken, CENTRAL_PATH);
    assert_eq!(code, 1, "{line}");
    assert!(line.contains("do not load"), "{line}");
}

#[test]
fn the_shipped_central_example_lints_and_tests_with_the_example_registry() {
    let assent = |args: &[&str]| {
        let output = std::process::Command::new(ASSENT)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("CI")
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code().unwrap(),
            String::from_utf8(output.stdout).unwrap(),
        )
    };
    let both = [
        "fixtures/repos/topic-registry",
        "--policy-project-dir",
        "fixtures/repos/platform-policies",
    ];
    let (code, out) = assent(&[&["lint"][..], &both[..]].concat());
    assert_eq!((code, out.as_str()), (0, "ok: 16 rule(s) in 3 file(s)\n"));
    let (code, out) = assent(&[&["test"][..], &both[..]].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("35 passed, 0 failed\n"), "{out}");
    // The central project's own case passes on its own policies.
    let (code, out) = assent(&["test", "fixtures/repos/platform-policies"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("1 passed, 0 failed\n"), "{out}");
}

// ---- a policy MR is checked with the central set; recovering from a clash ---------------------

/// The MR's base holds the project's own policies, as a real merge base does.
fn policies_at_base(w: &World) {
    w.fake.with_state(|s| {
        let p = s.project_mut(fixtures::PROJECT_ID).unwrap();
        let own: Vec<(String, FileContent)> = p.files[fixtures::TARGET_SHA]
            .iter()
            .filter(|(path, _)| path.starts_with(".assent/"))
            .map(|(path, content)| (path.clone(), content.clone()))
            .collect();
        p.files.get_mut(fixtures::BASE_SHA).unwrap().extend(own);
    });
}

/// The project's own `.assent/policies/topics.yaml` at the target, as text.
fn own_topics_policy(w: &World) -> String {
    w.fake.with_state(|s| {
        let p = s.project_mut(fixtures::PROJECT_ID).unwrap();
        String::from_utf8(
            p.files[fixtures::TARGET_SHA][".assent/policies/topics.yaml"]
                .0
                .clone(),
        )
        .unwrap()
    })
}

/// carol, a Maintainer: a policy owner by default.
const CAROL: u64 = 400;

fn add_carol(w: &World) {
    w.fake.with_state(|s| {
        s.users.push(fake_gitlab::User::new(CAROL, "carol"));
        s.tokens
            .push(fake_gitlab::Token::new("glpat-carol", CAROL, &["api"]).access_level(40));
    });
}

#[test]
fn a_policy_mr_defining_a_rule_id_the_central_project_uses_is_broken_on_the_mr() {
    let w = harmless(&[(".assent/policies/floor.yaml", FLOOR)]);
    policies_at_base(&w);
    // The MR adds its own `retention-floor`: alone its policies load; beside the central set
    // (as after the merge) the id is defined twice.
    let copy = FLOOR.replace("< 14", "< 3");
    w.push(
        NEW_SHA,
        &[
            ("topics/orders.yaml", &orders(30)),
            (".assent/policies/floor-copy.yaml", &copy),
        ],
    );
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert_eq!(
        rules(&receipt),
        ["assent/policy-broken", "assent/self-edit"]
    );
    let broken = w.thread("assent/policy-broken").notes[0].body.clone();
    assert!(
        broken.contains("duplicate rule id `retention-floor`"),
        "{broken}"
    );
    assert!(
        broken.contains(".assent/policies/floor-copy.yaml"),
        "{broken}"
    );
    assert!(
        broken.contains("do not load together with the central policy project's"),
        "{broken}"
    );
    // Without the central project the MR's policies load: only the self-edit.
    let alone = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run();
    alone.expect_code(1);
    assert_eq!(rules(&alone.receipt()), ["assent/self-edit"]);
}

/// The central project defines `retention-shrink` too: the target's policies no longer load
/// with it, and every merge request is `assent/policy-error`.
fn central_clash() -> World {
    let clash = FLOOR.replace("id: retention-floor", "id: retention-shrink");
    let w = harmless(&[(".assent/policies/floor.yaml", &clash)]);
    policies_at_base(&w);
    add_carol(&w);
    w
}

#[test]
fn a_clash_the_central_project_introduces_is_repaired_through_the_gate() {
    let w = central_clash();
    let renamed = own_topics_policy(&w).replace("id: retention-shrink", "id: retention-shrink-own");
    // The repair: the project's own rule renamed, nothing else.
    w.push(NEW_SHA, &[(".assent/policies/topics.yaml", &renamed)]);
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW", "{receipt}");
    assert_eq!(
        rules(&receipt),
        ["assent/policy-repair", "assent/self-edit"]
    );
    let repair = w.thread("assent/policy-repair");
    assert!(repair.resolved(), "a comment never gates");
    assert!(
        repair.notes[0]
            .body
            .contains("duplicate rule id `retention-shrink`"),
        "{}",
        repair.notes[0].body
    );
    // A policy owner assents: the repair can merge through the gate.
    w.fake.resolve(
        fixtures::PROJECT_ID,
        fixtures::MR_IID,
        &w.thread("assent/self-edit").id,
        CAROL,
        true,
    );
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
}

#[test]
fn the_repair_path_is_not_open_to_a_merge_request_that_changes_anything_else_or_repairs_nothing() {
    // A governed change beside the repair: nothing can judge it while the policies do not load.
    let w = central_clash();
    let renamed = own_topics_policy(&w).replace("id: retention-shrink", "id: retention-shrink-own");
    w.push(
        NEW_SHA,
        &[
            (".assent/policies/topics.yaml", &renamed),
            ("topics/orders.yaml", &orders(1)),
        ],
    );
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(1);
    assert_eq!(
        rules(&r.receipt()),
        ["assent/policy-error", "assent/self-edit"]
    );

    // Only `.assent/`, but the clash stays: the MR's own policies do not load beside the
    // central set.
    let w = central_clash();
    w.push(NEW_SHA, &[(".assent/notes.txt", "nothing repaired")]);
    let r = run(&w, CENTRAL_PATH);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert!(
        rules(&receipt).contains(&"assent/policy-broken".to_owned()),
        "{receipt}"
    );
}
