//! `assent run` on merge requests at GitLab's limits (docs/contract.md#note-size, docs/contract.md#grouping): the compiled binary
//! against the fake GitLab, which refuses a note over 1,000,000 characters as GitLab does.
//!
//! * 6,000 findings of one rule are one grouped thread and a short summary, not thousands of
//!   threads and a summary GitLab refuses;
//! * a value (or a key) of 1.2 million characters gets a thread GitLab accepts, shortened
//!   with its digest kept, while its occurrence is still the full value's.

use assent_test_support::run::World;
use fake_gitlab::{RouteKind, fixtures};
use serde_json::{Value, json};

use crate::ASSENT;

/// GitLab's note limit, in characters.
const GITLAB_NOTE_LIMIT: usize = 1_000_000;
/// A push with the generated registry.
const PUSH_SHA: &str = "6666666666666666666666666666666666666666";
const FILE: &str = "topics/big.yaml";

/// A registry of `names`, each kept for `days`.
fn registry<'a>(names: impl Iterator<Item = &'a str>, days: u32) -> String {
    let mut out = String::from("topics:\n");
    for name in names {
        out.push_str(&format!(
            "  - name: {}\n    retention_days: {days}\n",
            serde_json::to_string(name).unwrap()
        ));
    }
    out
}

/// Commits `base` at the basic world's base SHA and pushes `source`, so that `FILE` is the
/// MR's only change; the run pins the push.
fn world_with(base: &str, source: &str) -> World {
    let w = World::new(ASSENT);
    w.put_file(fixtures::BASE_SHA, FILE, base);
    w.push(PUSH_SHA, &[(FILE, source)]);
    w
}

fn run(w: &World) -> assent_test_support::run::RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", PUSH_SHA)
        .run()
}

#[track_caller]
fn assert_within_gitlab_limit(w: &World) {
    for d in w.discussions() {
        for n in d.notes {
            let chars = n.body.chars().count();
            assert!(
                chars < GITLAB_NOTE_LIMIT,
                "note {}: {chars} characters",
                n.id
            );
        }
    }
}

/// Lowercase hex SHA-256 of `text`'s UTF-8.
fn sha256(text: &str) -> String {
    let digest = assent::core::model::Occurrence::digest(text.as_bytes());
    digest.as_str()["sha256:".len()..].to_owned()
}

#[test]
fn six_thousand_findings_of_one_rule_are_one_grouped_thread() {
    let names: Vec<String> = (0..6_000).map(|i| format!("t{i:05}.v1")).collect();
    let w = world_with(
        &registry(names.iter().map(String::as_str), 30),
        &registry(names.iter().map(String::as_str), 7),
    );
    let r = run(&w);
    r.expect_code(1);

    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    let findings = receipt["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "one finding for the group: {findings:?}");
    assert_eq!(findings[0]["rule"], "retention-shrink");
    assert_eq!(findings[0]["subject"], "*");
    assert_eq!(findings[0]["effect"], "challenge");
    assert_eq!(
        receipt["actions"],
        json!([{"rule": "retention-shrink", "subject": "*", "action": "create", "forgeId": findings[0]["forgeId"]}])
    );
    assert_eq!(
        w.writes()
            .into_iter()
            .map(|r| (r.method, r.route))
            .collect::<Vec<_>>(),
        vec![
            ("POST".to_owned(), RouteKind::Notes),
            ("POST".to_owned(), RouteKind::Discussions),
            ("PUT".to_owned(), RouteKind::Note),
        ],
        "summary, one thread, summary: not one thread per finding"
    );

    let thread = w.thread("retention-shrink");
    let body = &thread.notes[0].body;
    assert!(
        body.lines().next().unwrap().contains(r#""subject":"*""#),
        "{body}"
    );
    assert!(body.contains("**This rule fired 6000 times**"), "{body}");
    assert!(
        body.contains("- `topics/big.yaml#/topics/t00000.v1/retention_days`: `30` → `7`"),
        "{body}"
    );
    assert!(
        body.contains("- `topics/big.yaml#/topics/t05999.v1/retention_days`: `30` → `7`"),
        "every member is listed, the last one too"
    );
    assert_eq!(
        body.lines()
            .filter(|l| l.starts_with("- `topics/big.yaml#"))
            .count(),
        6_000
    );
    assert_eq!(findings[0]["members"].as_array().unwrap().len(), 6_000);
    let summary = w.summary();
    assert!(
        summary.body.contains("## assent · REVIEW"),
        "{}",
        summary.body
    );
    assert!(
        summary.body.contains("1 challenge awaits assent"),
        "{}",
        summary.body
    );
    assert_within_gitlab_limit(&w);
    w.assert_no_violations();

    // A reviewer resolves the one thread: every member is assented to.
    w.fake.resolve(
        fixtures::PROJECT_ID,
        fixtures::MR_IID,
        &thread.id,
        fixtures::HUMAN_ID,
        true,
    );
    w.fake.reset_log();
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", PUSH_SHA)
        .args(&["--fail-on", "review"])
        .run();
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
    assert_eq!(r.receipt()["findings"][0]["assented"], true);
    assert_eq!(w.writes().len(), 1, "the summary edit only");

    // And an unchanged rerun writes nothing.
    w.fake.reset_log();
    run(&w).expect_code(0);
    assert!(w.writes().is_empty(), "{:?}", w.writes());
}

/// A policy whose message shows the judged values.
const DESCRIPTION_POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "topics/*.yaml": { "/topics": name }
rules:
  - id: description-change
    match:
      files: ["topics/*.yaml"]
      pointer: "/topics/*/description"
      kinds: [modify]
    effect: challenge
    message: "The description of {{ entry }} changes from {{ old }} to {{ new }}."
"#;

#[test]
fn a_value_of_one_million_two_hundred_thousand_characters_gets_a_thread_gitlab_accepts() {
    let huge = format!("@all {}", "d".repeat(1_200_000));
    let base = "topics:\n  - name: orders.events.v1\n    description: short\n".to_owned();
    let source = format!(
        "topics:\n  - name: orders.events.v1\n    description: {}\n",
        serde_json::to_string(&huge).unwrap()
    );
    let w = world_with(&base, &source);
    w.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/descriptions.yaml",
        DESCRIPTION_POLICY,
    );
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    let subject = "topics/big.yaml#/topics/orders.events.v1/description";
    assert_eq!(receipt["findings"][0]["subject"], subject);

    let thread = w.thread("description-change");
    let body = &thread.notes[0].body;
    assert!(
        body.contains(&format!(
            "changes from `short` to `@all {}…[1200005 characters, sha256:{}]`.",
            "d".repeat(995),
            sha256(&huge)
        )),
        "shortened, with the full value's length and digest"
    );
    assert!(
        body.chars().count() < 10_000,
        "{} characters",
        body.chars().count()
    );
    // The occurrence is the full value's, so a later change past the cut is a new thread.
    let occurrence = {
        let doc = json!({
            "kind": "modify", "new": huge, "old": "short",
            "rule": "description-change", "subject": subject,
        });
        format!(
            "sha256:{}",
            sha256(&assent::core::canonical_json::to_string(&doc))
        )
    };
    assert_eq!(
        receipt["findings"][0]["occurrence"],
        Value::String(occurrence)
    );
    assert_within_gitlab_limit(&w);
    w.assert_no_violations();

    w.fake.reset_log();
    run(&w).expect_code(1);
    assert!(w.writes().is_empty(), "a rerun writes nothing");
}

#[test]
fn a_key_of_one_million_two_hundred_thousand_characters_gets_a_bounded_slot() {
    let name = format!("x{}", "n".repeat(1_200_000));
    let w = world_with(
        &registry([name.as_str()].into_iter(), 30),
        &registry([name.as_str()].into_iter(), 7),
    );
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    let full = format!("{FILE}#/topics/{name}/retention_days");
    let subject = receipt["findings"][0]["subject"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(subject.chars().count() <= 2_000, "{}", subject.len());
    assert!(
        subject.ends_with(&format!(
            "…[{} characters, sha256:{}]",
            full.chars().count(),
            sha256(&full)
        )),
        "{subject}"
    );
    let thread = w.thread("retention-shrink");
    assert!(
        thread.notes[0]
            .body
            .lines()
            .next()
            .unwrap()
            .contains(&subject),
        "the marker carries the bounded subject"
    );
    assert_within_gitlab_limit(&w);

    w.fake.reset_log();
    run(&w).expect_code(1);
    assert!(
        w.writes().is_empty(),
        "the bounded slot is found again on a rerun"
    );
}

#[test]
fn a_group_too_large_for_one_note_is_split_into_parts_that_each_list_their_own_members() {
    // 2,500 topics whose names fill the 300 characters a member's subject shows: one member
    // list of about 1.2 million characters, more than one note holds.
    let names: Vec<String> = (0..2_500)
        .map(|i| format!("t{i:05}.{}", "n".repeat(330)))
        .collect();
    let w = world_with(
        &registry(names.iter().map(String::as_str), 30),
        &registry(names.iter().map(String::as_str), 7),
    );
    let r = run(&w);
    r.expect_code(1);
    assert_within_gitlab_limit(&w);
    w.assert_no_violations();

    let receipt = r.receipt();
    let findings = receipt["findings"].as_array().unwrap();
    let subjects: Vec<&str> = findings
        .iter()
        .map(|f| f["subject"].as_str().unwrap())
        .collect();
    assert!(subjects.len() >= 2, "{subjects:?}");
    assert_eq!(subjects[..2], ["*", "*2"]);
    let mut members: Vec<&str> = findings
        .iter()
        .flat_map(|f| f["members"].as_array().unwrap())
        .map(|m| m["subject"].as_str().unwrap())
        .collect();
    assert_eq!(members.len(), 2_500);
    members.sort_unstable();
    members.dedup();
    assert_eq!(members.len(), 2_500, "each member in exactly one part");

    let threads = w.threads_of("retention-shrink");
    assert_eq!(threads.len(), subjects.len(), "one thread per part");
    let listed: usize = threads
        .iter()
        .map(|t| {
            let body = &t.notes[0].body;
            assert!(body.contains("**This is part "), "{}", &body[..600]);
            body.lines()
                .filter(|l| l.starts_with("- `topics/big.yaml#"))
                .count()
        })
        .sum();
    assert_eq!(listed, 2_500, "every member is listed in one of the parts");

    // Resolving only the first part leaves the others gating.
    let first = threads
        .iter()
        .find(|t| {
            t.notes[0]
                .body
                .lines()
                .next()
                .unwrap()
                .contains(r#""subject":"*""#)
        })
        .unwrap();
    w.fake.resolve(
        fixtures::PROJECT_ID,
        fixtures::MR_IID,
        &first.id,
        fixtures::HUMAN_ID,
        true,
    );
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    let assented: Vec<(&str, bool)> = receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["subject"].as_str().unwrap(), f["assented"] == true))
        .collect();
    assert_eq!(assented[0], ("*", true));
    assert!(assented[1..].iter().all(|(_, a)| !a), "{assented:?}");
}

/// The highest resident set size (`VmHWM`, in KiB) seen of process `pid` until it exits,
/// sampled every few milliseconds from another thread: a lower bound of the true peak.
fn watch_peak_rss(pid: u32) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut peak = 0;
        for _ in 0..60_000 {
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                break;
            };
            let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            else {
                break; // a zombie: the run has exited
            };
            peak = peak.max(kib);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        peak
    })
}

#[test]
fn sixty_eight_maximal_human_replies_in_one_thread_stop_neither_a_run_nor_a_sweep() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
    let thread = w.thread("retention-shrink");
    // A commenter answers the bot's thread 68 times at GitLab's note limit: one discussion
    // of 68 MB, over the 64 MiB body limit even at one discussion per page.
    let reply = "y".repeat(GITLAB_NOTE_LIMIT - 1);
    for _ in 0..68 {
        w.fake.reply(
            fixtures::PROJECT_ID,
            fixtures::MR_IID,
            &thread.id,
            fixtures::HUMAN_ID,
            &reply,
        );
    }
    let before = w.discussions();
    w.fake.reset_log();

    let running = w.invocation().spawn();
    let peak = watch_peak_rss(running.pid());
    let r = running.wait();
    let peak_kib = peak.join().unwrap();
    r.expect_code(1);
    assert!(
        r.stdout.contains("rescan verified"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // The bot's thread was still recognised under its replies: nothing posted again.
    assert_eq!(r.receipt()["requests"]["writes"], 0, "{}", r.stdout);
    assert_eq!(w.discussions().len(), before.len());
    // The thread's page was read once at one discussion per page, then streamed.
    let sizes: Vec<String> = w
        .fake
        .requests()
        .iter()
        .filter(|q| q.method == "GET" && q.route == RouteKind::Discussions)
        .map(|q| q.query.clone())
        .collect();
    assert!(
        sizes
            .iter()
            .any(|q| q.split('&').any(|p| p == "per_page=1")),
        "{sizes:?}"
    );
    // The human bodies were dropped as they arrived, not held: far below the 68 MB page
    // (measured: about 20 MB).
    assert!(peak_kib < 40 * 1024, "peak RSS {peak_kib} KiB");

    // In the sweep's window (it reads the system clock; the fake's own clock is elsewhere).
    w.fake.with_state(|s| {
        let mr = s
            .project_mut(fixtures::PROJECT_ID)
            .unwrap()
            .mr_mut(fixtures::MR_IID)
            .unwrap();
        mr.updated_at = fake_gitlab::time::format_ms(fake_gitlab::time::system_ms());
    });
    w.fake.reset_log();
    let sweep = std::process::Command::new(ASSENT)
        .arg("sweep")
        .args(["--api-url", &w.fake.base_url(), "--project", "42"])
        .args(["--lookback", "3h", "--interval", "1h"])
        .env_clear()
        .env("ASSENT_TOKEN", fixtures::BOT_TOKEN)
        .env("ASSENT_WRITE_SETTLE_SECS", "0")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&sweep.stdout);
    assert_eq!(
        sweep.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&sweep.stderr)
    );
    assert!(out.contains("!7 verified"), "{out}");
    assert!(
        w.fake
            .requests()
            .iter()
            .any(|q| q.route == RouteKind::Discussions
                && q.query.split('&').any(|p| p == "per_page=1")),
        "the sweep read the heavy page at one discussion per page, then streamed it"
    );
    w.assert_no_violations();
}
