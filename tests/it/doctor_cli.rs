//! `assent doctor` as a user runs it, against the fake GitLab: every check passing and
//! failing, the serialization verdict under absent, partial, contradictory and failing
//! evidence (each must print `unserialized-best-effort`), and the gate-enforcement verdict
//! for each of its values, including configurations that only look like they hold the gate.

use std::process::Command;

use fake_gitlab::fixtures::*;
use fake_gitlab::tls::TlsFront;
use fake_gitlab::{
    ApprovalRule, FakeGitLab, FaultAction, FaultRule, Job, Project, RouteKind, State, Token,
};
use serde_json::Value;

const JOB_ID: u64 = 901;
const OTHER_JOB: u64 = 900;

const POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
rules:
  - id: retention-shrink
    match:
      files: ["topics/*.yaml"]
      pointer: "/topics/*/retention_days"
      kinds: [modify]
    when: "int(new) < int(old)"
    effect: challenge
    message: "Retention shrinks from {{ old }} to {{ new }} days."
"#;

const CI_SERIALIZED: &str = r#"stages: [test]
assent:
  stage: test
  image: registry.example.com/assent:0.1.0
  resource_group: assent-mr-$CI_MERGE_REQUEST_IID
  variables:
    GIT_STRATEGY: none
  script:
    - assent doctor
    - assent run
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
"#;

/// A healthy deployment: bot token (Maintainer, api), both merge checks on, a loading policy
/// on `main`, the CI configuration at the MR head with the per-MR resource group, and job
/// 901 of MR !7's pipeline running and holding `assent-mr-7`.
fn healthy() -> State {
    let mut s = basic();
    let p = &mut s.projects[0];
    p.only_allow_merge_if_pipeline_succeeds = true;
    p.only_allow_merge_if_all_discussions_are_resolved = true;
    let project = std::mem::replace(p, Project::new(0, ""));
    *p = project
        .file(TARGET_SHA, ".assent/policies/topics.yaml", POLICY)
        .file(HEAD_SHA, ".gitlab-ci.yml", CI_SERIALIZED)
        .ci_job(Job::mr_job(JOB_ID, "assent", MR_IID, HEAD_SHA).resource_group("assent-mr-7"));
    s
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn line(&self, id: &str) -> &str {
        self.stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap_or_else(|| panic!("no {id} line in:\n{}", self.stdout))
    }
    /// The check's mark; `-` for a check named on a `- skipped` line.
    fn mark(&self, id: &str) -> &str {
        if self.skipped().contains(&id) {
            return "-";
        }
        self.line(id).split_whitespace().next().unwrap()
    }
    /// The `- skipped  a, b, c (not checked: why)` lines.
    fn skipped_lines(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .filter(|l| l.starts_with("- skipped "))
            .collect()
    }
    /// Every check id named on a `- skipped` line.
    fn skipped(&self) -> Vec<&str> {
        self.skipped_lines()
            .iter()
            .flat_map(|l| {
                let ids = l["- skipped ".len()..].trim_start();
                let ids = ids.split(" (not checked: ").next().unwrap();
                ids.split(", ")
            })
            .collect()
    }
    fn summary(&self) -> &str {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix("summary: "))
            .unwrap_or_else(|| panic!("no summary in:\n{}", self.stdout))
    }
    fn guarantee(&self) -> &str {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix("duplicate_prevention: "))
            .unwrap_or_else(|| panic!("no duplicate_prevention in:\n{}", self.stdout))
    }
    fn fix_after(&self, id: &str) -> &str {
        let lines: Vec<&str> = self.stdout.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap();
        lines[at + 1]
            .trim()
            .strip_prefix("fix: ")
            .unwrap_or_else(|| {
                panic!("no fix under {id}:\n{}", self.stdout);
            })
    }
}

fn doctor_with(fake: &FakeGitLab, token: &str, env: &[(&str, &str)], args: &[&str]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_assent"));
    cmd.env_clear()
        .arg("doctor")
        .args(args)
        .env("CI_API_V4_URL", fake.base_url())
        .env("CI_PROJECT_ID", PROJECT_ID.to_string())
        .env("CI_MERGE_REQUEST_IID", MR_IID.to_string())
        .env("CI_JOB_ID", JOB_ID.to_string())
        .env("ASSENT_TOKEN", token);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let o = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    assert!(
        token.is_empty() || (!o.stdout.contains(token) && !o.stderr.contains(token)),
        "token leaked:\n{}\n{}",
        o.stdout,
        o.stderr
    );
    o
}

fn doctor(fake: &FakeGitLab) -> Out {
    doctor_with(fake, BOT_TOKEN, &[], &[])
}

/// `unserialized-best-effort` with `reason_part` in the reason. Serialization shown absent
/// is a failure (exit 1); serialization that cannot be verified is a warning (docs/contract.md#commands: exit
/// 0 unless `--strict`), so the exit code follows whether any check failed.
fn assert_best_effort(o: &Out, reason_part: &str) {
    assert_eq!(o.guarantee(), "unserialized-best-effort", "{}", o.stdout);
    let failed = o.stdout.lines().any(|l| l.starts_with("✗ "));
    assert_eq!(o.code, i32::from(failed), "{}\n{}", o.stdout, o.stderr);
    assert_ne!(o.mark("serialization"), "✓", "{}", o.stdout);
    assert!(
        o.stdout
            .to_lowercase()
            .contains(&reason_part.to_lowercase()),
        "reason should mention {reason_part:?}:\n{}",
        o.stdout
    );
    assert!(!o.stderr.is_empty());
}

// ---- the token's variable reaches only the assent jobs --------------------------------------

#[test]
fn a_token_variable_every_job_reads_fails_and_one_doctor_cannot_read_is_a_warning() {
    // Scope * (All): every job of every MR pipeline reads the token.
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].variables[0].environment_scope = "*".into());
    let o = doctor(&fake);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert_eq!(o.mark("token-variable"), "✗", "{}", o.stdout);
    assert!(
        o.line("token-variable").contains("every job"),
        "{}",
        o.stdout
    );
    assert!(
        o.fix_after("token-variable").contains("environment assent"),
        "{}",
        o.stdout
    );

    // The same key also for another scope: GitLab answers 409, doctor asks for scope *.
    fake.with_state(|s| {
        s.projects[0].variables.push(fake_gitlab::CiVariable {
            key: "ASSENT_TOKEN".into(),
            environment_scope: "assent".into(),
            ..fake_gitlab::CiVariable::default()
        })
    });
    let o = doctor(&fake);
    assert_eq!(o.mark("token-variable"), "✗", "{}", o.stdout);
    fake.with_state(|s| s.projects[0].variables[0].environment_scope = "review/*".into());
    let o = doctor(&fake);
    assert_eq!(o.mark("token-variable"), "?", "{}", o.stdout);

    // A Developer token cannot read variables: never a claim, a warning that says so.
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.tokens[0].access_level = 30);
    let o = doctor(&fake);
    assert_eq!(o.mark("token-variable"), "?", "{}", o.stdout);
    assert!(
        o.line("token-variable").contains("not verified"),
        "{}",
        o.stdout
    );
    assert!(
        o.line("token-variable").contains("Maintainers"),
        "{}",
        o.stdout
    );

    // Under another name, read from ASSENT_TOKEN_VARIABLE as the template sets it.
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].variables[0].key = "REVIEW_BOT_TOKEN".into());
    let o = doctor(&fake);
    assert_eq!(o.mark("token-variable"), "?", "{}", o.stdout);
    assert!(
        o.line("token-variable").contains("not a project variable"),
        "{}",
        o.stdout
    );
    let o = doctor_with(
        &fake,
        BOT_TOKEN,
        &[("ASSENT_TOKEN_VARIABLE", "REVIEW_BOT_TOKEN")],
        &[],
    );
    assert_eq!(o.mark("token-variable"), "✓", "{}", o.stdout);
    assert_eq!(fake.writes(), 0, "doctor must not write");
    assert!(!o.stdout.contains(BOT_TOKEN) && !o.stderr.contains(BOT_TOKEN));
}

// ---- everything passes ------------------------------------------------------------------

/// The token's expiry as GitLab answers it on `GET personal_access_tokens/self`
/// (`expires_at`, a date or `null`): ✓ with the date at 31 days, a warning (exit 0, exit 1
/// with `--strict`) at 29 days naming the rotation API, ✓ for a token without expiry. An
/// expired token is refused by GitLab itself (401, the `token` check), so its failure is
/// judged in the unit test `doctor::checks::tests::token_expiry_verdicts`.
#[test]
fn the_token_expiry_warns_within_thirty_days() {
    let days_since_epoch = u64::try_from(fake_gitlab::time::system_ms() / 86_400_000).unwrap();
    let in_days =
        |days: u64| chrono::NaiveDate::default() + chrono::Days::new(days_since_epoch + days);
    for (days, mark) in [(31, "✓"), (29, "?")] {
        let date = in_days(days).to_string();
        let mut state = healthy();
        state.tokens[0] = state.tokens[0].clone().expires_at(&date);
        let fake = FakeGitLab::start(state);
        let o = doctor(&fake);
        assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
        assert_eq!(o.mark("token-expiry"), mark, "{}", o.stdout);
        let line = o.line("token-expiry");
        assert!(
            line.contains(&format!("expires on {date}, in {days} days")),
            "{line}"
        );
        if mark == "?" {
            assert!(
                o.fix_after("token-expiry").contains("rotation API"),
                "{}",
                o.stdout
            );
            let strict = doctor_with(&fake, BOT_TOKEN, &[], &["--strict"]);
            assert_eq!(strict.code, 1, "{}", strict.stdout);
        }
    }
    let fake = FakeGitLab::start(healthy());
    let o = doctor(&fake);
    assert_eq!(o.mark("token-expiry"), "✓", "{}", o.stdout);
    assert!(
        o.line("token-expiry").contains("does not expire"),
        "{}",
        o.stdout
    );
}

#[test]
fn a_healthy_deployment_passes_every_check_and_is_serialized() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor(&fake);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    for id in [
        "inputs",
        "api",
        "token",
        "identity",
        "scope",
        "token-expiry",
        "role",
        "threads-setting",
        "pipelines-setting",
        "outdated-threads-setting",
        "token-variable",
        "merge-request",
        "bot-markers",
        "policies",
        "serialization",
    ] {
        assert_eq!(o.mark(id), "✓", "{id}: {}", o.stdout);
    }
    assert_eq!(o.guarantee(), "single-writer-serialized");
    // The whole text report, each check's line and detail (no `fix:` line): the user, the
    // GitLab version, no proxy, the role, one policy file. The fake's address, which
    // changes from run to run, replaced.
    insta::assert_snapshot!(
        "doctor_text_healthy",
        o.stdout.replace(&fake.base_url(), "[fake-gitlab]")
    );
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    assert_eq!(fake.violations(), Vec::<String>::new());
    assert_eq!(fake.writes(), 0, "doctor must not write");
}

#[test]
fn json_is_the_typed_report() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, BOT_TOKEN, &[], &["--format", "json"]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["apiVersion"], "assent/v1");
    assert_eq!(v["kind"], "DoctorReport");
    assert_eq!(v["duplicate_prevention"], "single-writer-serialized");
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 15);
    assert!(
        checks
            .iter()
            .all(|c| c["status"] == "pass" && c["fix"].is_null())
    );
    // The whole report: every field the asserts above do not name is pinned too (the fake's
    // address, which changes from run to run, replaced).
    let pretty = serde_json::to_string_pretty(&v)
        .unwrap()
        .replace(&fake.base_url(), "[fake-gitlab]");
    insta::assert_snapshot!("doctor_report_healthy", pretty);

    fake.with_state(|s| s.projects[0].only_allow_merge_if_pipeline_succeeds = false);
    let o = doctor_with(
        &fake,
        BOT_TOKEN,
        &[("CI_JOB_ID", "")],
        &["--format", "json"],
    );
    assert_eq!(o.code, 1);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["duplicate_prevention"], "unserialized-best-effort");
    let by_id = |id: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(by_id("pipelines-setting")["status"], "fail");
    assert!(
        by_id("pipelines-setting")["fix"]
            .as_str()
            .unwrap()
            .contains("Pipelines must succeed")
    );
    assert_eq!(by_id("serialization")["status"], "unknown");
}

#[test]
fn threads_a_push_resolves_fail_the_outdated_threads_check() {
    let mut state = healthy();
    state.projects[0].resolve_outdated_diff_discussions = true;
    let fake = FakeGitLab::start(state);
    let o = doctor(&fake);
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(o.mark("outdated-threads-setting"), "✗", "{}", o.stdout);
    assert!(
        o.stdout
            .contains("Automatically resolve merge request diff threads"),
        "{}",
        o.stdout
    );
    assert!(
        o.stderr.contains("outdated-threads-setting"),
        "{}",
        o.stderr
    );
}

#[test]
fn the_mr_is_optional_and_policies_come_from_the_default_branch() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(
        &fake,
        BOT_TOKEN,
        &[("CI_MERGE_REQUEST_IID", ""), ("CI_JOB_ID", "")],
        &[],
    );
    // No MR was read: no pass for it, and no warning (outside an MR pipeline it is normal).
    assert_eq!(o.mark("merge-request"), "-", "{}", o.stdout);
    assert!(
        o.skipped_lines()
            .iter()
            .any(|l| l.contains("merge-request (not checked: no MR given; pass --mr")),
        "{}",
        o.stdout
    );
    assert_eq!(o.mark("policies"), "✓", "{}", o.stdout);
    assert!(o.line("policies").contains("main@33333333"), "{}", o.stdout);
    assert_best_effort(&o, "no merge request");
}

// ---- each check failing -----------------------------------------------------------------

#[test]
fn missing_inputs_mean_doctor_cannot_run() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, "", &[], &[]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert_eq!(o.mark("inputs"), "✗");
    assert!(o.stderr.contains("ASSENT_TOKEN"), "{}", o.stderr);
    assert_eq!(o.guarantee(), "unserialized-best-effort");

    let o = doctor_with(&fake, BOT_TOKEN, &[("CI_API_V4_URL", "")], &[]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("CI_API_V4_URL"), "{}", o.stderr);

    let o = doctor_with(
        &fake,
        BOT_TOKEN,
        &[("ASSENT_CA_FILE", "/nonexistent/ca.pem")],
        &[],
    );
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.line("inputs").contains("/nonexistent/ca.pem"),
        "{}",
        o.stdout
    );
    assert_eq!(
        fake.requests().len(),
        0,
        "nothing is sent before the inputs are usable"
    );
}

#[test]
fn every_missing_input_is_named_at_once() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(
        &fake,
        "",
        &[
            ("CI_API_V4_URL", ""),
            ("CI_PROJECT_ID", ""),
            ("CI_MERGE_REQUEST_IID", "seven"),
            ("CI_JOB_ID", "job"),
        ],
        &[],
    );
    assert_eq!(o.code, 2, "{}", o.stdout);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", o.stderr);
    assert!(
        lines[0].starts_with("error: 5 problems with the inputs: (1) no GitLab API URL: pass --api-url or set CI_API_V4_URL"),
        "{}",
        lines[0]
    );
    for part in [
        "(2) no project: pass --project or set CI_MERGE_REQUEST_PROJECT_ID or CI_PROJECT_ID",
        "(3) no token: set ASSENT_TOKEN (or GITLAB_TOKEN)",
        "a protected variable is given only to pipelines of protected branches",
        "(4) CI_MERGE_REQUEST_IID is not a merge request IID: \"seven\"",
        "(5) CI_JOB_ID is not a job id: \"job\"",
    ] {
        assert!(lines[0].contains(part), "{part:?} in {}", lines[0]);
    }
    assert_eq!(o.mark("inputs"), "✗");
    assert!(o.line("inputs").contains("(3) no token"), "{}", o.stdout);
    assert!(o.fix_after("inputs").contains("every input named above"));
    assert!(fake.requests().is_empty());
}

#[test]
fn warnings_alone_exit_0_and_strict_makes_them_fail() {
    let fake = FakeGitLab::start(pipeline_gated());
    let outside = [("CI_JOB_ID", "")];
    let o = doctor_with(&fake, BOT_TOKEN, &outside, &[]);
    assert_eq!(o.mark("serialization"), "?", "{}", o.stdout);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.summary().starts_with("14 passed, 0 failed, 1 warning (not verified; a warning fails doctor only with --strict)"),
        "{}",
        o.stdout
    );
    assert_eq!(
        o.stderr,
        "warning: doctor could not verify: serialization (exit 0; --strict makes this exit 1)\n"
    );
    let json = doctor_with(&fake, BOT_TOKEN, &outside, &["--format", "json"]);
    assert_eq!(json.code, 0);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    let serialization = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "serialization")
        .unwrap();
    assert_eq!(serialization["status"], "unknown");

    let strict = doctor_with(&fake, BOT_TOKEN, &outside, &["--strict"]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    assert!(
        strict
            .stderr
            .starts_with("error: doctor could not verify: serialization (--strict;"),
        "{}",
        strict.stderr
    );
    // The variable takes the same spellings as every on/off variable, and a misspelt one is
    // named as the variable (not as the flag).
    for on in ["true", "1", "yes"] {
        let mut by_env = outside.to_vec();
        by_env.push(("ASSENT_DOCTOR_STRICT", on));
        assert_eq!(doctor_with(&fake, BOT_TOKEN, &by_env, &[]).code, 1, "{on}");
    }
    let mut off = outside.to_vec();
    off.push(("ASSENT_DOCTOR_STRICT", "0"));
    assert_eq!(doctor_with(&fake, BOT_TOKEN, &off, &[]).code, 0);
    let mut misspelt = outside.to_vec();
    misspelt.push(("ASSENT_DOCTOR_STRICT", "ture"));
    let misspelt = doctor_with(&fake, BOT_TOKEN, &misspelt, &[]);
    assert_eq!(misspelt.code, 2, "{}", misspelt.stderr);
    assert!(
        misspelt
            .stderr
            .contains("ASSENT_DOCTOR_STRICT is neither on nor off: \"ture\""),
        "{}",
        misspelt.stderr
    );
    // Inside the job everything is verified: --strict passes.
    let inside = doctor_with(&fake, BOT_TOKEN, &[], &["--strict"]);
    assert_eq!(inside.code, 0, "{}\n{}", inside.stdout, inside.stderr);
    assert!(inside.stderr.is_empty(), "{}", inside.stderr);
}

#[test]
fn unreachable_api_fails_the_api_check_and_leaves_the_rest_unverified() {
    let fake = FakeGitLab::start(healthy());
    let port = fake.port();
    drop(fake);
    let dead = FakeGitLab::start(State::default());
    let url = format!("http://127.0.0.1:{port}/api/v4");
    let o = doctor_with(&dead, BOT_TOKEN, &[("CI_API_V4_URL", &url)], &[]);
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(o.mark("api"), "✗");
    assert!(o.fix_after("api").contains("reach"), "{}", o.stdout);
    // One line says what was not checked and why, instead of one line per check.
    assert_eq!(
        o.skipped_lines(),
        [
            "- skipped  token, identity, scope, token-expiry, role, threads-setting, pipelines-setting, outdated-threads-setting, token-variable, merge-request, bot-markers, policies, serialization (not checked: the api check failed: GitLab could not be reached)"
        ],
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("? "), "{}", o.stdout);
    assert_best_effort(&o, "could not be reached");

    // The checks only some inputs ask for are named among the skipped too.
    let o = doctor_with(
        &dead,
        BOT_TOKEN,
        &[("CI_API_V4_URL", &url)],
        &[
            "--serve-url",
            "https://serve.example.com",
            "--policy-project",
            "platform/policies",
        ],
    );
    assert_eq!(
        o.skipped_lines(),
        [
            "- skipped  token, identity, scope, token-expiry, role, threads-setting, pipelines-setting, outdated-threads-setting, token-variable, merge-request, bot-markers, policies, serialization, policy-project, serve-ready, serve-webhook (not checked: the api check failed: GitLab could not be reached)"
        ],
        "{}",
        o.stdout
    );
}

#[test]
fn a_proxy_is_named_in_the_api_line_without_its_credentials() {
    let fake = FakeGitLab::start(healthy());
    // The proxy applies to http targets through HTTP_PROXY; NO_PROXY exempts the fake.
    let o = doctor_with(
        &fake,
        BOT_TOKEN,
        &[
            ("HTTP_PROXY", "http://user:pw@proxy.invalid:3128"),
            ("NO_PROXY", "127.0.0.1"),
        ],
        &[],
    );
    assert_eq!(o.mark("api"), "✓", "{}", o.stdout);
    assert!(o.line("api").contains("no proxy"), "{}", o.stdout);
    let o = doctor_with(
        &fake,
        BOT_TOKEN,
        &[("HTTP_PROXY", "http://user:pw@127.0.0.1:9")],
        &[],
    );
    assert_eq!(o.mark("api"), "✗", "{}", o.stdout);
    assert!(
        o.line("api").contains("proxy http://127.0.0.1:9/"),
        "{}",
        o.stdout
    );
    // The refused connection is the proxy's, and the fix says so.
    assert_eq!(
        o.fix_after("api"),
        "Check HTTPS_PROXY and NO_PROXY: the proxy http://127.0.0.1:9/ must be reachable from the runner and allow CONNECT to GitLab, or add GitLab's host to NO_PROXY."
    );
    assert!(!o.stdout.contains("pw@"), "{}", o.stdout);
}

/// A project the token cannot see is one `project` failure: every check under it is "not
/// checked" on one line, GitLab's 404 is quoted once, and no read under the project follows.
#[test]
fn a_missing_project_is_one_project_failure_and_the_rest_not_checked() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, BOT_TOKEN, &[("CI_PROJECT_ID", "999")], &[]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert_eq!(o.mark("project"), "✗", "{}", o.stdout);
    assert!(
        o.line("project").contains("cannot read project 999"),
        "{}",
        o.stdout
    );
    assert_eq!(
        o.skipped(),
        [
            "role",
            "threads-setting",
            "pipelines-setting",
            "outdated-threads-setting",
            "token-variable",
            "merge-request",
            "bot-markers",
            "policies",
            "serialization"
        ],
        "{}",
        o.stdout
    );
    assert_eq!(
        o.stdout.matches("Project Not Found").count(),
        1,
        "{}",
        o.stdout
    );
    assert_eq!(o.summary(), "6 passed, 1 failed, 0 warnings, 9 not checked");
    assert_eq!(o.gate(), "threads-only");
    assert!(
        o.stdout
            .contains("  reason: the project could not be read\n"),
        "{}",
        o.stdout
    );
    let under_project: Vec<String> = fake
        .requests()
        .into_iter()
        .map(|r| r.path)
        .filter(|p| p.contains("/projects/999/"))
        .collect();
    assert!(under_project.is_empty(), "{under_project:?}");
    assert!(
        o.stderr.contains("doctor found problems in: project"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_rejected_token_fails_the_token_check() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, "glpat-wrong-token", &[], &[]);
    assert_eq!(o.code, 1);
    assert_eq!(o.mark("api"), "✓", "{}", o.stdout);
    assert_eq!(o.mark("token"), "✗", "{}", o.stdout);
    assert!(o.fix_after("token").contains("project access token"));
    assert_eq!(o.skipped_lines().len(), 1, "{}", o.stdout);
    assert_eq!(
        o.skipped(),
        [
            "identity",
            "scope",
            "token-expiry",
            "role",
            "threads-setting",
            "pipelines-setting",
            "outdated-threads-setting",
            "token-variable",
            "merge-request",
            "bot-markers",
            "policies",
            "serialization"
        ]
    );
    assert!(
        o.skipped_lines()[0]
            .ends_with("(not checked: the token check did not pass: the token is not usable)"),
        "{}",
        o.stdout
    );
    assert!(
        o.summary()
            .starts_with("2 passed, 1 failed, 0 warnings, 12 not checked"),
        "{}",
        o.stdout
    );
    assert_best_effort(&o, "token");
}

#[test]
fn a_personal_token_fails_identity() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, HUMAN_TOKEN, &[], &[]);
    assert_eq!(o.mark("token"), "✓", "{}", o.stdout);
    assert_eq!(o.mark("identity"), "✗", "{}", o.stdout);
    assert!(o.line("identity").contains("@alice"));
    assert_eq!(o.code, 1);
}

#[test]
fn read_api_scope_fails_scope() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, READ_TOKEN, &[], &[]);
    assert_eq!(o.mark("scope"), "✗", "{}", o.stdout);
    assert!(o.line("scope").contains("read_api"));
    assert!(o.fix_after("scope").contains("api scope"));
    assert_eq!(o.code, 1);
}

#[test]
fn unexposed_scopes_are_unknown_not_passed() {
    let fake = FakeGitLab::start(healthy());
    fake.inject(FaultRule {
        method: None,
        matcher: fake_gitlab::Matcher::Route(RouteKind::TokenSelf),
        when: fake_gitlab::When::Every,
        action: FaultAction::ServerError,
    });
    let o = doctor(&fake);
    assert_eq!(o.mark("scope"), "?", "{}", o.stdout);
    // A check that cannot be verified is a warning (docs/contract.md#commands): exit 0, said on stderr...
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(
        o.stderr,
        "warning: doctor could not verify: scope (exit 0; --strict makes this exit 1)\n"
    );
    // ...and exit 1 with --strict.
    let strict = doctor_with(&fake, BOT_TOKEN, &[], &["--strict"]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    assert!(
        strict
            .stderr
            .starts_with("error: doctor could not verify: scope (--strict; duplicate_prevention: single-writer-serialized"),
        "{}",
        strict.stderr
    );
}

#[test]
fn a_reporter_cannot_resolve_threads() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        s.tokens
            .push(Token::new("glpat-reporter", BOT_ID, &["api"]).access_level(20))
    });
    let o = doctor_with(&fake, "glpat-reporter", &[], &[]);
    assert_eq!(o.mark("role"), "✗", "{}", o.stdout);
    assert!(o.line("role").contains("Reporter (20)"));
    assert!(o.fix_after("role").contains("Developer"));
    // Reading resource groups needs Developer too: the verdict cannot be verified.
    assert_best_effort(&o, "403");
}

#[test]
fn project_settings_the_gate_relies_on() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        s.projects[0].only_allow_merge_if_all_discussions_are_resolved = false;
        s.projects[0].only_allow_merge_if_pipeline_succeeds = false;
    });
    let o = doctor(&fake);
    assert_eq!(o.mark("threads-setting"), "✗", "{}", o.stdout);
    assert!(
        o.fix_after("threads-setting")
            .contains("All threads must be resolved")
    );
    assert_eq!(o.mark("pipelines-setting"), "✗");
    assert_eq!(o.code, 1);
    assert_eq!(
        o.guarantee(),
        "single-writer-serialized",
        "independent of settings"
    );
}

#[test]
fn a_fork_mr_is_flagged() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].merge_requests[0].source_project_id = 77);
    let o = doctor(&fake);
    assert_eq!(o.mark("merge-request"), "✗", "{}", o.stdout);
    assert!(o.line("merge-request").contains("fork"));
    assert!(o.fix_after("merge-request").contains("parent project"));
    assert_eq!(o.code, 1);
}

#[test]
fn an_unknown_mr_fails() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, BOT_TOKEN, &[], &["--mr", "99"]);
    assert_eq!(o.mark("merge-request"), "✗", "{}", o.stdout);
    assert_best_effort(&o, "refs/merge-requests/7/head");
}

#[test]
fn policies_that_do_not_load_fail_with_file_and_line() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        s.projects[0].files.get_mut(TARGET_SHA).unwrap().insert(
            ".assent/policies/broken.yaml".into(),
            fake_gitlab::FileContent(
                b"apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: Bad Id\n".to_vec(),
            ),
        );
    });
    let o = doctor(&fake);
    assert_eq!(o.mark("policies"), "✗", "{}", o.stdout);
    assert!(
        o.line("policies").contains(".assent/policies/broken.yaml:"),
        "{}",
        o.stdout
    );
    assert!(o.fix_after("policies").contains("assent lint"));
    assert_eq!(o.code, 1);
}

// ---- serialization: positive evidence only -----------------------------------------------

#[test]
fn a_ci_config_in_a_protected_project_is_read_through_the_lint_api() {
    let mut state = healthy();
    state.projects[0]
        .files
        .get_mut(HEAD_SHA)
        .unwrap()
        .remove(".gitlab-ci.yml");
    state.projects[0].ci_config_path = "assent.yml@platform/ci-config".into();
    state.projects.push(
        Project::new(50, "platform/ci-config")
            .branch("main", "5555555555555555555555555555555555555555")
            .file(
                "5555555555555555555555555555555555555555",
                "assent.yml",
                CI_SERIALIZED,
            ),
    );
    let fake = FakeGitLab::start(state);
    let o = doctor(&fake);
    assert_eq!(o.guarantee(), "single-writer-serialized", "{}", o.stdout);
    assert_eq!(o.code, 0, "{}", o.stdout);
    let lint = fake
        .requests()
        .into_iter()
        .filter(|r| r.route == RouteKind::CiLint)
        .collect::<Vec<_>>();
    assert_eq!(lint.len(), 1);
    assert_eq!(lint[0].method, "POST");
}

#[test]
fn older_gitlab_symbol_keys_still_parse() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].lint_symbol_keys = true);
    let o = doctor(&fake);
    assert_eq!(o.guarantee(), "single-writer-serialized", "{}", o.stdout);
}

#[test]
fn absent_outside_a_ci_job() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, BOT_TOKEN, &[("CI_JOB_ID", "")], &[]);
    assert_best_effort(&o, "CI_JOB_ID");
    assert_eq!(o.mark("serialization"), "?");
}

#[test]
fn absent_when_the_job_has_no_resource_group() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        let p = &mut s.projects[0];
        p.files.get_mut(HEAD_SHA).unwrap().insert(
            ".gitlab-ci.yml".into(),
            fake_gitlab::FileContent(
                CI_SERIALIZED
                    .replace("  resource_group: assent-mr-$CI_MERGE_REQUEST_IID\n", "")
                    .into_bytes(),
            ),
        );
        p.resource_groups.clear();
    });
    let o = doctor(&fake);
    assert_best_effort(&o, "has no resource_group");
    assert_eq!(o.mark("serialization"), "✗");
    assert!(
        o.fix_after("serialization")
            .contains("assent-mr-$CI_MERGE_REQUEST_IID")
    );
}

#[test]
fn absent_when_the_key_is_shared_by_every_mr() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        s.projects[0].files.get_mut(HEAD_SHA).unwrap().insert(
            ".gitlab-ci.yml".into(),
            fake_gitlab::FileContent(
                CI_SERIALIZED
                    .replace("assent-mr-$CI_MERGE_REQUEST_IID", "assent")
                    .into_bytes(),
            ),
        );
    });
    let o = doctor(&fake);
    assert_best_effort(&o, "not keyed by $CI_MERGE_REQUEST_IID");
}

#[test]
fn partial_when_gitlab_predates_current_job() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.version = "17.11.3".into());
    let o = doctor(&fake);
    assert_best_effort(&o, "came in 18.6");
}

#[test]
fn partial_when_the_group_exists_but_nobody_holds_it() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].resource_groups[0].holder = None);
    let o = doctor(&fake);
    assert_best_effort(&o, "held by no job");
}

#[test]
fn partial_when_the_resource_group_does_not_exist() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].resource_groups.clear());
    let o = doctor(&fake);
    assert_best_effort(&o, "cannot read resource group assent-mr-7");
}

#[test]
fn contradictory_when_another_job_holds_the_group() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        let p = &mut s.projects[0];
        p.add_job(Job::mr_job(OTHER_JOB, "assent", MR_IID, HEAD_SHA).resource_group("assent-mr-7"));
    });
    let o = doctor(&fake);
    assert_best_effort(&o, "held by job 900, not by this job 901");
}

#[test]
fn contradictory_when_the_job_belongs_to_another_mr() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].jobs[0].git_ref = "refs/merge-requests/8/head".into());
    let o = doctor(&fake);
    assert_best_effort(&o, "not in a pipeline of MR !7");
}

#[test]
fn contradictory_when_the_job_is_not_running() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].jobs[0].status = "success".into());
    let o = doctor(&fake);
    assert_best_effort(&o, "not running");
}

#[test]
fn contradictory_when_the_job_is_unknown() {
    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, BOT_TOKEN, &[("CI_JOB_ID", "12345")], &[]);
    assert_best_effort(&o, "cannot read job 12345");
}

#[test]
fn contradictory_when_the_configuration_is_invalid_or_lacks_the_job() {
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| s.projects[0].jobs[0].name = "review".into());
    let o = doctor(&fake);
    assert_best_effort(&o, "\"review\" is not in the merged ci configuration");

    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        s.projects[0].files.get_mut(HEAD_SHA).unwrap().insert(
            ".gitlab-ci.yml".into(),
            fake_gitlab::FileContent(b"assent: [unclosed".to_vec()),
        );
    });
    let o = doctor(&fake);
    assert_best_effort(&o, "invalid");
}

#[test]
fn api_errors_on_any_evidence_route_are_best_effort() {
    for (route, action) in [
        (RouteKind::Job, FaultAction::ServerError),
        (RouteKind::CiLint, FaultAction::BadGateway),
        (RouteKind::ResourceGroup, FaultAction::ServerError),
        (
            RouteKind::ResourceGroupCurrentJob,
            FaultAction::RateLimitJson { retry_after: 0 },
        ),
        (RouteKind::ResourceGroupCurrentJob, FaultAction::Unavailable),
    ] {
        let fake = FakeGitLab::start(healthy());
        fake.inject(FaultRule {
            method: None,
            matcher: fake_gitlab::Matcher::Route(route),
            when: fake_gitlab::When::Every,
            action: action.clone(),
        });
        let o = doctor(&fake);
        assert_best_effort(&o, "HTTP");
        assert_eq!(
            o.mark("serialization"),
            "?",
            "{route:?} {action:?}: {}",
            o.stdout
        );
    }
}

#[test]
fn a_transient_error_is_retried_and_then_verified() {
    let fake = FakeGitLab::start(healthy());
    fake.inject(FaultRule {
        method: None,
        matcher: fake_gitlab::Matcher::Route(RouteKind::ResourceGroupCurrentJob),
        when: fake_gitlab::When::Nth(1),
        action: FaultAction::ServerError,
    });
    let o = doctor(&fake);
    assert_eq!(o.guarantee(), "single-writer-serialized", "{}", o.stdout);
}

// ---- gate_enforcement: positive evidence only ---------------------------------------------

const CI_PROJECT: u64 = 50;
const CI_PROJECT_SHA: &str = "5555555555555555555555555555555555555555";

/// The job of a protected CI configuration project: per-MR resource group, fails on review.
const CI_GATED: &str = r#"assent:
  stage: test
  resource_group: assent-mr-$CI_MERGE_REQUEST_IID
  variables:
    GIT_STRATEGY: none
  script:
    - assent doctor || true
    - assent run --fail-on review --receipt assent-receipt.json
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
"#;

/// [`healthy`], with the CI configuration `ci` read from the protected project
/// `platform/ci-config` (Settings > CI/CD > CI/CD configuration file).
fn gated_with(ci: &str) -> State {
    let mut state = healthy();
    state.projects[0]
        .files
        .get_mut(HEAD_SHA)
        .unwrap()
        .remove(".gitlab-ci.yml");
    state.projects[0].ci_config_path = "assent.yml@platform/ci-config".into();
    state.projects.push(
        Project::new(CI_PROJECT, "platform/ci-config")
            .branch("main", CI_PROJECT_SHA)
            .file(CI_PROJECT_SHA, "assent.yml", ci),
    );
    state
}

/// Pipelines must succeed, the job failing on review from a protected project.
fn pipeline_gated() -> State {
    gated_with(CI_GATED)
}

/// An approval rule requiring the bot alone, approvals reset on push, rules not editable in
/// MRs, the job approving; Pipelines must succeed off.
fn approval_gated() -> State {
    let mut state = gated_with(&CI_GATED.replace("--fail-on review", "--fail-on review --approve"));
    let p = &mut state.projects[0];
    p.only_allow_merge_if_pipeline_succeeds = false;
    p.approvals.disable_overriding_approvers_per_merge_request = true;
    p.approvals
        .rules
        .push(ApprovalRule::users(1, "assent", &[BOT_ID]));
    state
}

impl Out {
    fn gate(&self) -> &str {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix("gate_enforcement: "))
            .unwrap_or_else(|| panic!("no gate_enforcement in:\n{}", self.stdout))
    }
    /// The `reason:` and `warning:` lines under `gate_enforcement`.
    fn gate_detail(&self, what: &str) -> Option<&str> {
        let lines: Vec<&str> = self.stdout.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("gate_enforcement: "))?;
        lines[at + 1..]
            .iter()
            .find_map(|l| l.strip_prefix(&format!("  {what}: ")))
    }
}

#[track_caller]
fn assert_threads_only(o: &Out, reason_part: &str) {
    assert_eq!(o.gate(), "threads-only", "{}", o.stdout);
    let reason = o.gate_detail("reason").unwrap();
    assert!(
        reason.contains(reason_part),
        "reason should mention {reason_part:?}: {reason}"
    );
    let warning = o
        .gate_detail("warning")
        .expect("a warning says what to change");
    assert!(
        warning.contains("fail_on: review") && warning.contains("approve: true"),
        "{warning}"
    );
}

#[test]
fn pipeline_required_when_pipelines_must_succeed_and_the_job_fails_on_review() {
    let fake = FakeGitLab::start(pipeline_gated());
    let o = doctor(&fake);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(o.gate(), "pipeline-required", "{}", o.stdout);
    let reason = o.gate_detail("reason").unwrap();
    assert!(
        reason.contains("job \"assent\"") && reason.contains("platform/ci-config"),
        "{reason}"
    );
    assert_eq!(o.gate_detail("warning"), None);
    assert_eq!(o.guarantee(), "single-writer-serialized");
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    assert!(
        fake.requests()
            .iter()
            .filter(|r| r.write)
            .all(|r| r.route == RouteKind::CiLint),
        "doctor writes nothing; the CI Lint POST only validates"
    );
    for route in [RouteKind::ProjectApprovals, RouteKind::ApprovalRules] {
        assert!(
            fake.requests().iter().any(|r| r.route == route),
            "{route:?} read"
        );
    }
}

#[test]
fn approval_required_when_only_the_bot_can_approve_and_the_job_approves() {
    let fake = FakeGitLab::start(approval_gated());
    let o = doctor(&fake);
    assert_eq!(o.gate(), "approval-required", "{}", o.stdout);
    let reason = o.gate_detail("reason").unwrap();
    assert!(reason.contains("rule \"assent\""), "{reason}");
    assert!(reason.contains("--approve"), "{reason}");
    assert_eq!(o.gate_detail("warning"), None);

    // An MR-level rule counts the same way.
    let mut state = approval_gated();
    let rule = state.projects[0].approvals.rules.remove(0);
    state.projects[0].merge_requests[0]
        .approval_rules
        .push(rule);
    let fake = FakeGitLab::start(state);
    assert_eq!(doctor(&fake).gate(), "approval-required");
}

#[test]
fn approval_wins_over_pipeline_when_both_hold() {
    let mut state = approval_gated();
    state.projects[0].only_allow_merge_if_pipeline_succeeds = true;
    let fake = FakeGitLab::start(state);
    assert_eq!(doctor(&fake).gate(), "approval-required");
}

#[test]
fn json_carries_the_gate_verdict() {
    let fake = FakeGitLab::start(pipeline_gated());
    let o = doctor_with(&fake, BOT_TOKEN, &[], &["--format", "json"]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["gate_enforcement"], "pipeline-required");
    assert!(
        v["gate_enforcement_reason"]
            .as_str()
            .unwrap()
            .contains("review")
    );
    assert_eq!(v["gate_enforcement_warning"], Value::Null);

    let fake = FakeGitLab::start(healthy());
    let o = doctor_with(&fake, BOT_TOKEN, &[], &["--format", "json"]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["gate_enforcement"], "threads-only");
    // "Pipelines must succeed" is on here: the warning names the real gap (the job fails on
    // block only) instead of advising to turn on what is on.
    let pipelines = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "pipelines-setting")
        .unwrap();
    assert_eq!(pipelines["status"], "pass", "{pipelines}");
    let warning = v["gate_enforcement_warning"].as_str().unwrap();
    assert!(!warning.contains("Pipelines must succeed on"), "{warning}");
    assert!(
        warning.contains("Pipelines must succeed is on already"),
        "{warning}"
    );
    let pipeline_gap = v["gate_enforcement_reason"]
        .as_str()
        .unwrap()
        .split_once("not pipeline-required: ")
        .unwrap()
        .1;
    // Said once: the gap is the reason's, the warning says how to hold the gate.
    assert!(!warning.contains(pipeline_gap), "{warning}");

    // With the setting off, that is what the warning names.
    let mut state = healthy();
    state.projects[0].only_allow_merge_if_pipeline_succeeds = false;
    let fake = FakeGitLab::start(state);
    let o = doctor_with(&fake, BOT_TOKEN, &[], &["--format", "json"]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    let warning = v["gate_enforcement_warning"].as_str().unwrap();
    let reason = v["gate_enforcement_reason"].as_str().unwrap();
    assert!(
        reason.contains("not pipeline-required: Pipelines must succeed is off"),
        "{reason}"
    );
    assert!(
        !warning.contains("Pipelines must succeed is off"),
        "{warning}"
    );
    assert!(
        warning.contains("Pipelines must succeed on (and skipped"),
        "{warning}"
    );
}

#[test]
fn threads_only_is_a_warning_that_does_not_fail_doctor() {
    // healthy(): every check passes, but the job fails on block only and its configuration
    // is the project's own .gitlab-ci.yml.
    let fake = FakeGitLab::start(healthy());
    let o = doctor(&fake);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert_threads_only(&o, "own .gitlab-ci.yml");
    assert!(o.stderr.is_empty(), "{}", o.stderr);
}

#[test]
fn an_mr_editable_configuration_proves_nothing() {
    // Same job, failing on review, but from the MR's own branch: the MR could drop it.
    let fake = FakeGitLab::start(healthy());
    fake.with_state(|s| {
        s.projects[0].files.get_mut(HEAD_SHA).unwrap().insert(
            ".gitlab-ci.yml".into(),
            fake_gitlab::FileContent(CI_GATED.as_bytes().to_vec()),
        );
    });
    let o = doctor(&fake);
    assert_eq!(o.guarantee(), "single-writer-serialized", "{}", o.stdout);
    assert_threads_only(&o, "an MR's branch provides");
}

#[test]
fn an_include_an_mr_can_change_proves_nothing() {
    // The protected configuration includes a file of the gated project itself: every branch
    // of it is what an MR pushes.
    let include_governed = format!(
        "include:\n  - project: {}\n    ref: main\n    file: extra.yml\n{CI_GATED}",
        PROJECT_PATH
    );
    let mut state = gated_with(&include_governed);
    let extra = "lint:\n  script: [make]\n  rules:\n    - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n";
    let governed = std::mem::replace(&mut state.projects[0], Project::new(0, ""));
    state.projects[0] = governed.file(TARGET_SHA, "extra.yml", extra);
    let fake = FakeGitLab::start(state);
    assert_threads_only(
        &doctor(&fake),
        &format!("includes \"extra.yml\" from {} itself", PROJECT_PATH),
    );

    // Another project's file at a ref named like the MR's source branch: whoever pushes that
    // branch there changes the configuration.
    let include_branch = format!(
        "include:\n  - project: platform/shared\n    ref: feature\n    file: extra.yml\n{CI_GATED}"
    );
    let mut state = gated_with(&include_branch);
    state.projects.push(
        Project::new(51, "platform/shared")
            .branch("feature", CI_PROJECT_SHA)
            .file(CI_PROJECT_SHA, "extra.yml", extra),
    );
    let fake = FakeGitLab::start(state);
    assert_threads_only(&doctor(&fake), "the MR's own source branch");

    // The same project at a tag: pipeline-required, with who can push there unverified.
    let include_tag = include_branch.replace("ref: feature", "ref: v1");
    let mut state = gated_with(&include_tag);
    state.projects.push(
        Project::new(51, "platform/shared")
            .branch("v1", CI_PROJECT_SHA)
            .file(CI_PROJECT_SHA, "extra.yml", extra),
    );
    let fake = FakeGitLab::start(state);
    let o = doctor(&fake);
    assert_eq!(o.gate(), "pipeline-required", "{}", o.stdout);
    let reason = o.gate_detail("reason").unwrap();
    assert!(
        reason.contains("who besides maintainers can push to platform/shared"),
        "{reason}"
    );
}

#[test]
fn a_pipeline_on_the_mrs_branch_that_is_not_the_mrs_proves_nothing() {
    // GitLab's usual workflow:rules: branch pipelines while no MR is open. Closing the MR,
    // pushing and reopening it makes a passing branch pipeline the MR's head pipeline.
    let usual = format!(
        "workflow:\n  rules:\n    - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n    - if: $CI_COMMIT_BRANCH && $CI_OPEN_MERGE_REQUESTS\n      when: never\n    - if: $CI_COMMIT_BRANCH\n{CI_GATED}"
    );
    let fake = FakeGitLab::start(gated_with(&usual));
    assert_threads_only(&doctor(&fake), "head pipeline");

    // No workflow:rules, and a job that runs on every push.
    let fake = FakeGitLab::start(gated_with(&format!("{CI_GATED}lint:\n  script: [make]\n")));
    assert_threads_only(&doctor(&fake), "job \"lint\" has no rules");

    // The documented rules hold.
    let documented = format!(
        "workflow:\n  rules:\n    - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH\n    - if: $CI_COMMIT_TAG\n{CI_GATED}lint:\n  script: [make]\n"
    );
    let fake = FakeGitLab::start(gated_with(&documented));
    let o = doctor(&fake);
    assert_eq!(o.gate(), "pipeline-required", "{}", o.stdout);
}

#[test]
fn threads_only_outside_a_ci_job() {
    let fake = FakeGitLab::start(pipeline_gated());
    let o = doctor_with(&fake, BOT_TOKEN, &[("CI_JOB_ID", "")], &[]);
    assert_threads_only(&o, "CI_JOB_ID");
}

#[test]
fn threads_only_when_pipelines_need_not_succeed_or_skipped_ones_count() {
    let fake = FakeGitLab::start(pipeline_gated());
    fake.with_state(|s| s.projects[0].only_allow_merge_if_pipeline_succeeds = false);
    assert_threads_only(&doctor(&fake), "Pipelines must succeed is off");

    let fake = FakeGitLab::start(pipeline_gated());
    fake.with_state(|s| s.projects[0].allow_merge_on_skipped_pipeline = true);
    assert_threads_only(&doctor(&fake), "[skip ci]");
}

#[test]
fn threads_only_when_the_job_does_not_fail_on_review() {
    for (name, from, to, part) in [
        (
            "fail on block",
            "--fail-on review",
            "--fail-on block",
            "--fail-on block",
        ),
        (
            "allowed to fail",
            "  stage: test\n",
            "  stage: test\n  allow_failure: true\n",
            "allow_failure: true",
        ),
        (
            "manual",
            "  stage: test\n",
            "  stage: test\n  when: manual\n",
            "when: manual",
        ),
        (
            "or true",
            "assent-receipt.json\n",
            "assent-receipt.json || true\n",
            "lets the line succeed",
        ),
        (
            "skipped by a label",
            "  rules:\n",
            "  rules:\n    - if: $CI_MERGE_REQUEST_LABELS =~ /hotfix/\n      when: never\n",
            "when: never",
        ),
    ] {
        let ci = CI_GATED.replace(from, to);
        assert_ne!(ci, CI_GATED, "{name}");
        let fake = FakeGitLab::start(gated_with(&ci));
        let o = doctor(&fake);
        assert_threads_only(&o, part);
    }
}

#[test]
fn threads_only_when_someone_besides_the_bot_can_approve() {
    type Mutation = fn(&mut State);
    let cases: Vec<(&str, &str, Mutation)> = vec![
        (
            "rule naming the bot plus a group",
            "also names groups",
            |s| s.projects[0].approvals.rules[0].group_ids = vec![9],
        ),
        (
            "rule naming the bot plus a person",
            "not the bot user",
            |s| s.projects[0].approvals.rules[0].user_ids = vec![BOT_ID, HUMAN_ID],
        ),
        ("rule for one branch only", "some branches only", |s| {
            s.projects[0].approvals.rules[0].protected_branches = vec!["main".into()]
        }),
        (
            "approvals kept on push",
            "removed when commits are added",
            |s| s.projects[0].approvals.reset_approvals_on_push = false,
        ),
        ("rules editable in the MR", "edited in MRs", |s| {
            s.projects[0]
                .approvals
                .disable_overriding_approvers_per_merge_request = false
        }),
        ("job does not approve", "without --approve", |s| {
            let tree = s.projects[1].files.get_mut(CI_PROJECT_SHA).unwrap();
            tree.insert(
                "assent.yml".into(),
                fake_gitlab::FileContent(CI_GATED.as_bytes().to_vec()),
            );
        }),
        ("GitLab Free: no approval rules", "Premium", |s| {
            s.projects[0].approvals.rules_available = false
        }),
    ];
    for (name, part, mutate) in cases {
        let mut state = approval_gated();
        mutate(&mut state);
        let fake = FakeGitLab::start(state);
        let o = doctor(&fake);
        assert_eq!(o.gate(), "threads-only", "{name}: {}", o.stdout);
        let reason = o.gate_detail("reason").unwrap();
        assert!(reason.contains(part), "{name}: {reason}");
    }
}

#[test]
fn on_gitlab_free_the_pipeline_still_holds_the_gate() {
    let mut state = pipeline_gated();
    state.projects[0].approvals.rules_available = false;
    let fake = FakeGitLab::start(state);
    let o = doctor(&fake);
    assert_eq!(o.gate(), "pipeline-required", "{}", o.stdout);
}

#[test]
fn the_gate_verdict_never_leaks_the_token_and_is_unverified_when_doctor_stops_early() {
    let fake = FakeGitLab::start(pipeline_gated());
    let o = doctor_with(&fake, "glpat-wrong-token", &[], &[]);
    assert_threads_only(&o, "token");
    let o = doctor_with(&fake, "", &[], &[]);
    assert_eq!(o.code, 2);
    assert_threads_only(&o, "doctor could not run");
}

// ---- hostile servers and transport edges ---------------------------------------------------

fn relay_to(fake: &FakeGitLab) -> fake_gitlab::SocksRelay {
    fake_gitlab::SocksRelay::start(([127, 0, 0, 1], fake.port()).into())
}

#[test]
fn doctor_reaches_gitlab_through_a_socks_proxy() {
    let fake = FakeGitLab::start(healthy());
    let direct = doctor(&fake);
    let relay = relay_to(&fake);
    let proxy = format!("socks5://{}", relay.authority());
    let o = doctor_with(&fake, BOT_TOKEN, &[("ALL_PROXY", &proxy)], &[]);
    assert_eq!(o.code, direct.code, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(o.mark("api"), "✓", "{}", o.stdout);
    assert!(o.line("api").contains("proxy socks5://"), "{}", o.stdout);
    assert_eq!(o.guarantee(), direct.guarantee());
    assert!(!relay.connects().is_empty(), "doctor did not use the proxy");
}

#[test]
fn doctor_refuses_an_unusable_proxy_naming_the_variable() {
    let fake = FakeGitLab::start(healthy());
    for (var, value) in [
        ("ALL_PROXY", "ftp://proxy.example:21"),
        ("HTTP_PROXY", "socks4://user:s3cret@127.0.0.1:1080"),
        ("http_proxy", "http://:8080"),
    ] {
        let o = doctor_with(&fake, BOT_TOKEN, &[(var, value)], &[]);
        assert_eq!(o.code, 2, "{var}={value}\n{}\n{}", o.stdout, o.stderr);
        let lines: Vec<&str> = o.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", o.stderr);
        assert!(
            lines[0].contains(&format!("{var}=")) && lines[0].contains("supported proxy schemes"),
            "{}",
            lines[0]
        );
        assert!(!o.stdout.contains("s3cret") && !o.stderr.contains("s3cret"));
    }
    assert!(
        fake.requests().is_empty(),
        "nothing is sent with an unusable proxy"
    );
}

#[test]
fn doctor_reports_a_plain_http_api_url_to_a_remote_host() {
    let fake = FakeGitLab::start(healthy());
    let relay = relay_to(&fake);
    let proxy = format!("socks5h://{}", relay.authority());
    let remote: &[(&str, &str)] = &[
        ("CI_API_V4_URL", "http://gitlab.example.test/api/v4"),
        ("ALL_PROXY", &proxy),
    ];
    let o = doctor_with(&fake, BOT_TOKEN, remote, &[]);
    assert_eq!(o.mark("cleartext"), "?", "{}", o.stdout);
    assert!(o.line("cleartext").contains("unencrypted"), "{}", o.stdout);
    assert!(
        o.fix_after("cleartext").contains("ASSENT_ALLOW_HTTP=1"),
        "{}",
        o.stdout
    );
    assert_eq!(o.mark("api"), "✓", "{}", o.stdout);
    assert_eq!(o.code, 0, "a warning, exit 0 unless --strict");
    let warnings: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), 2, "{}", o.stderr);
    assert!(warnings[0].contains("unencrypted"), "{}", o.stderr);
    assert_eq!(
        warnings[1],
        "warning: doctor could not verify: cleartext (exit 0; --strict makes this exit 1)"
    );
    let strict = doctor_with(&fake, BOT_TOKEN, remote, &["--strict"]);
    assert_eq!(strict.code, 1, "a warning fails with --strict");

    let json = doctor_with(&fake, BOT_TOKEN, remote, &["--format", "json"]);
    let report: Value = serde_json::from_str(&json.stdout).expect("stdout is only the report");
    let cleartext: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == "cleartext")
        .collect();
    assert_eq!(cleartext.len(), 1, "{}", json.stdout);
    assert_eq!(cleartext[0]["status"], "unknown");

    let mut allowed = remote.to_vec();
    allowed.push(("ASSENT_ALLOW_HTTP", "1"));
    let o = doctor_with(&fake, BOT_TOKEN, &allowed, &[]);
    assert!(
        !o.stdout
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("cleartext")),
        "{}",
        o.stdout
    );
    assert!(!o.stderr.contains("warning: "), "{}", o.stderr);
    // Loopback never warns.
    assert!(!doctor(&fake).stdout.contains("cleartext"));
}

// ---- TLS: the CA advice knows which CA file is in use --------------------------------------

const TLS_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/crates/assent-gitlab/testdata/tls"
);

/// The fake GitLab behind its HTTPS front presenting `cert` with `key` (files of
/// [`TLS_DIR`]); a handshake the client refuses just ends the connection.
fn tls_gitlab(cert: &str, key: &str) -> (FakeGitLab, TlsFront) {
    let read = |name: &str| std::fs::read_to_string(format!("{TLS_DIR}/{name}")).unwrap();
    let fake = FakeGitLab::start(basic());
    let front = TlsFront::start(&fake, &read(cert), &read(key));
    (fake, front)
}

/// `assent doctor` against the fake behind `front`.
fn doctor_over_tls(
    (fake, front): &(FakeGitLab, TlsFront),
    env: &[(&str, &str)],
    args: &[&str],
) -> Out {
    let url = front.base_url();
    let mut all = vec![("CI_API_V4_URL", url.as_str()), ("CI_JOB_ID", "")];
    all.extend_from_slice(env);
    doctor_with(fake, BOT_TOKEN, &all, args)
}

#[test]
fn a_private_ca_given_as_the_ca_file_verifies_gitlab() {
    let gitlab = tls_gitlab("leaf.pem", "leaf.key");
    let ca = format!("{TLS_DIR}/ca.pem");
    let o = doctor_over_tls(&gitlab, &[("ASSENT_CA_FILE", &ca)], &[]);
    assert_eq!(o.mark("api"), "✓", "{}", o.stdout);
    assert!(
        o.line("api").contains(&format!(
            "TLS verified, no proxy, CA file {ca} (from ASSENT_CA_FILE) plus public roots"
        )),
        "{}",
        o.stdout
    );
}

#[test]
fn without_a_ca_file_an_unknown_issuer_says_to_set_one() {
    let gitlab = tls_gitlab("leaf.pem", "leaf.key");
    let o = doctor_over_tls(&gitlab, &[], &[]);
    assert_eq!(o.mark("api"), "✗", "{}", o.stdout);
    assert_eq!(
        o.fix_after("api"),
        "Set ASSENT_CA_FILE (or pass --ca-file) to the PEM bundle of the CA that signed GitLab's certificate."
    );
    assert_eq!(o.code, 1);
}

#[test]
fn with_a_ca_file_that_does_not_verify_gitlab_the_advice_says_so() {
    // Another CA's certificate, given three ways: the fix names the file and where it came
    // from, and never says to set a CA file.
    let gitlab = tls_gitlab("leaf.pem", "leaf.key");
    let other = format!("{TLS_DIR}/selfleaf.pem");
    for (env, args, source) in [
        (
            vec![("ASSENT_CA_FILE", other.as_str())],
            vec![],
            "ASSENT_CA_FILE",
        ),
        (
            vec![("CI_SERVER_TLS_CA_FILE", other.as_str())],
            vec![],
            "CI_SERVER_TLS_CA_FILE",
        ),
        (vec![], vec!["--ca-file", other.as_str()], "--ca-file"),
    ] {
        let o = doctor_over_tls(&gitlab, &env, &args);
        assert_eq!(o.mark("api"), "✗", "{}", o.stdout);
        let fix = o.fix_after("api");
        assert!(
            fix.starts_with(&format!("The CA file {other} (from {source}) does not verify GitLab's certificate: it must hold the certificate (PEM) of the CA that issued GitLab's")),
            "{fix}"
        );
        assert!(!fix.contains("Set ASSENT_CA_FILE"), "{fix}");
    }
}

#[test]
fn a_self_signed_ca_certificate_as_gitlabs_own_is_explained() {
    // The issue's case: GitLab serves a self-signed certificate made with `openssl req -x509`
    // defaults (CA:TRUE), and that very certificate is given as the CA file.
    let gitlab = tls_gitlab("selfca.pem", "selfca.key");
    let own = format!("{TLS_DIR}/selfca.pem");
    let o = doctor_over_tls(&gitlab, &[("ASSENT_CA_FILE", &own)], &[]);
    assert_eq!(o.mark("api"), "✗", "{}", o.stdout);
    let fix = o.fix_after("api");
    assert!(
        fix.starts_with("GitLab presents a CA certificate (basic constraints CA:TRUE"),
        "{fix}"
    );
    assert!(
        fix.contains(&format!(
            "(the CA file {own} (from ASSENT_CA_FILE) is in use)"
        )),
        "{fix}"
    );
    assert!(
        fix.contains("re-issue the self-signed certificate with CA:FALSE"),
        "{fix}"
    );
    assert!(!fix.contains("Set ASSENT_CA_FILE"), "{fix}");
    // What the fix promises: the same certificate re-issued with CA:FALSE verifies as its own
    // CA file.
    let gitlab = tls_gitlab("selfleaf.pem", "selfleaf.key");
    let own = format!("{TLS_DIR}/selfleaf.pem");
    let o = doctor_over_tls(&gitlab, &[("ASSENT_CA_FILE", &own)], &[]);
    assert_eq!(o.mark("api"), "✓", "{}", o.stdout);
}
