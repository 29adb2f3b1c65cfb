//! Configuration and credentials: missing inputs, tokens and roles.

use super::*;

// ---- 11, 12: configuration and credentials --------------------------------------------------

#[test]
fn a_missing_token_is_a_usage_error_before_any_request() {
    let w = World::new(ASSENT);
    let r = w.invocation().without("ASSENT_TOKEN").run();
    r.expect_code(2);
    let line = r.error_line();
    assert!(line.contains("ASSENT_TOKEN"), "{line}");
    // In a merge request pipeline the likely causes are GitLab's variable rules.
    assert!(
        line.contains("Protect variable") && line.contains("forks"),
        "{line}"
    );
    assert_eq!(r.stdout, "");
    assert!(r.receipt_text.is_none());
    assert!(w.fake.requests().is_empty(), "{:#?}", w.fake.requests());

    // GITLAB_TOKEN is the fallback.
    let r = w
        .invocation()
        .without("ASSENT_TOKEN")
        .env("GITLAB_TOKEN", fixtures::BOT_TOKEN)
        .run();
    r.expect_code(1);
    r.assert_no_token();
}

/// API URL, project and token all missing: one error names all three, so one attempt shows
/// everything there is to set.
#[test]
fn every_missing_connection_input_is_named_in_one_error() {
    let w = World::new(ASSENT);
    let r = w
        .invocation()
        .without("CI_API_V4_URL")
        .without("CI_PROJECT_ID")
        .without("CI_MERGE_REQUEST_PROJECT_ID")
        .without("ASSENT_TOKEN")
        .run();
    r.expect_code(2);
    let line = r.error_line();
    assert!(line.starts_with("error: 3 problems with the inputs: (1) no GitLab API URL: pass --api-url or set CI_API_V4_URL"), "{line}");
    assert!(
        line.contains(
            "(2) no project: pass --project or set CI_MERGE_REQUEST_PROJECT_ID or CI_PROJECT_ID"
        ),
        "{line}"
    );
    assert!(
        line.contains("(3) no token: set ASSENT_TOKEN (or GITLAB_TOKEN)"),
        "{line}"
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(w.fake.requests().is_empty());
}

#[test]
fn missing_or_malformed_inputs_are_usage_errors_before_any_request() {
    let w = World::new(ASSENT);
    let bad_sha = "not-a-sha-but-close-0000000000000000000000";
    let cases: Vec<(Invocation<'_>, &str)> = vec![
        (
            w.invocation().without("CI_MERGE_REQUEST_IID"),
            "CI_MERGE_REQUEST_IID",
        ),
        (
            w.invocation().without("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"),
            "--source-sha",
        ),
        (w.invocation().without("CI_API_V4_URL"), "CI_API_V4_URL"),
        (w.invocation().without("CI_PROJECT_ID"), "CI_PROJECT_ID"),
        (
            w.invocation()
                .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", bad_sha),
            "40 or 64 hex digits",
        ),
        (
            w.invocation().args(&["--source-sha", "abc123"]),
            "40 or 64 hex digits",
        ),
        (w.invocation().args(&["--base-sha", "zz"]), "base SHA"),
        (
            w.invocation()
                .env("CI_MERGE_REQUEST_TARGET_BRANCH_SHA", "1234"),
            "target SHA",
        ),
        (
            w.invocation().env("CI_MERGE_REQUEST_IID", "seven"),
            "CI_MERGE_REQUEST_IID",
        ),
    ];
    for (invocation, needle) in cases {
        let r = invocation.run();
        r.expect_code(2);
        let line = r.error_line();
        assert!(line.contains(needle), "{needle}: {line}");
        assert!(r.receipt_text.is_none());
        r.assert_no_token();
    }
    // An unknown flag value is a usage error too (clap's own message).
    let r = w.run(&["--fail-on", "sometimes"]);
    r.expect_code(2);
    assert!(w.fake.requests().is_empty(), "{:#?}", w.fake.requests());
}

#[test]
fn a_wrong_token_is_a_forge_failure_with_one_line() {
    let w = World::new(ASSENT);
    let r = w
        .invocation()
        .env("ASSENT_TOKEN", "glpat-wrong-token")
        .run();
    r.expect_code(3);
    let line = r.error_line();
    assert!(line.contains("401"), "{line}");
    assert!(!line.contains("glpat-wrong-token"), "{line}");
    assert!(!r.stdout.contains("glpat-wrong-token"));
    assert!(!r.stderr.contains("glpat-wrong-token"));
    // The line after the error says what to do.
    let help = r
        .stderr
        .lines()
        .find(|l| l.starts_with("help: "))
        .unwrap_or_else(|| panic!("no help line: {}", r.stderr));
    assert!(
        help.contains("ASSENT_TOKEN") && help.contains("assent doctor"),
        "{help}"
    );
    assert!(r.receipt_text.is_none());
    assert_eq!(w.writes().len(), 0);
    assert!(w.fake.requests().len() <= 2, "a 401 is not retried");
}

/// `CI_JOB_TOKEN` cannot post notes: given as the token, it is refused before any request,
/// with the token to use instead.
#[test]
fn a_ci_job_token_is_refused_before_any_request() {
    let w = World::new(ASSENT);
    for (token, job) in [
        ("glcbt-64_0123456789abcdef", ""),
        ("job-token-value", "job-token-value"),
    ] {
        let r = w
            .invocation()
            .env("ASSENT_TOKEN", token)
            .env("CI_JOB_TOKEN", job)
            .run();
        r.expect_code(2);
        let line = r.error_line();
        assert!(line.contains("CI job token"), "{line}");
        assert!(line.contains("project access token"), "{line}");
        assert!(!r.stderr.contains(token), "{}", r.stderr);
        assert!(r.receipt_text.is_none());
    }
    assert!(w.fake.requests().is_empty(), "{:#?}", w.fake.requests());
}

/// A Reporter can create threads but not resolve them: the run reads the bot's role once
/// before its first write and stops with nothing written, instead of leaving the summary and
/// some threads behind a 403. A rerun with nothing to write costs no such read.
#[test]
fn a_reporter_token_is_refused_before_the_first_write() {
    let set_bot_level = |w: &World, level: u32| {
        w.fake.with_state(|s| {
            for t in s
                .tokens
                .iter_mut()
                .filter(|t| t.user_id == fixtures::BOT_ID)
            {
                t.access_level = level;
            }
        })
    };
    let w = World::new(ASSENT);
    set_bot_level(&w, 20);
    let r = w.run(&[]);
    r.expect_code(3);
    let line = r.error_line();
    for part in [
        "Reporter role",
        "Developer or higher",
        "nothing was written",
        "run `assent doctor`",
    ] {
        assert!(line.contains(part), "{part:?} in {line}");
    }
    assert_eq!(
        r.stderr.lines().filter(|l| l.starts_with("error:")).count(),
        1
    );
    r.assert_no_token();
    assert!(r.receipt_text.is_none());
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert!(w.discussions().is_empty());

    // With the Developer role the same run publishes; its rerun writes nothing and does
    // not read the role again.
    set_bot_level(&w, 30);
    w.run(&[]).expect_code(1);
    w.fake.reset_log();
    w.run(&[]).expect_code(1);
    assert_eq!(w.writes().len(), 0);
    assert!(
        !w.fake
            .requests()
            .iter()
            .any(|r| r.path.contains("/members/all/")),
        "{:#?}",
        w.fake.requests()
    );
}

/// A role that cannot be read is no refusal: the run goes on, as before the check existed.
#[test]
fn a_role_that_cannot_be_read_does_not_stop_the_run() {
    let w = World::new(ASSENT);
    w.fake.inject(
        FaultRule::new(FaultAction::Forbidden)
            .method("GET")
            .route(RouteKind::ProjectMember),
    );
    w.run(&[]).expect_code(1);
    assert!(!w.discussions().is_empty());
}

/// A merge request GitLab does not know (or hides) is configuration, not a passing fault:
/// exit 2, which the templates do not retry, with the flags to check. A URL without a scheme
/// names the mistake instead of the parser's "relative URL without a base".
#[test]
fn an_unknown_merge_request_and_a_url_without_a_scheme_are_usage_errors() {
    let w = World::new(ASSENT);
    let r = w.invocation().env("CI_MERGE_REQUEST_IID", "99").run();
    r.expect_code(2);
    let line = r.error_line();
    assert!(
        line.starts_with("error: merge request !99 not found in project"),
        "{line}"
    );
    assert!(
        line.contains("check --mr (CI_MERGE_REQUEST_IID) and --project"),
        "{line}"
    );
    assert!(r.receipt_text.is_none());
    assert_eq!(w.fake.writes(), 0);

    let base = w.fake.base_url();
    let bare = base.trim_start_matches("http://");
    let before = w.fake.requests().len();
    let r = w.invocation().env("CI_API_V4_URL", bare).run();
    r.expect_code(2);
    let line = r.error_line();
    assert!(
        line.contains(&format!(
            "{bare}: no scheme; write the URL in full, e.g. https://{bare}"
        )),
        "{line}"
    );
    assert!(!line.contains("relative URL"), "{line}");
    assert_eq!(
        w.fake.requests().len(),
        before,
        "no request without a usable URL"
    );
}

/// `--token` is refused with where the token goes instead, by every command, before any
/// request, and its value is never echoed; completions do not offer it.
#[test]
fn a_token_flag_says_where_the_token_comes_from() {
    let w = World::new(ASSENT);
    for args in [
        &["run", "--token", "glpat-flag-value"][..],
        &["run", "--token=glpat-flag-value"],
        &["doctor", "--token", "glpat-flag-value"],
        &["--token", "glpat-flag-value", "sweep"],
        &["serve", "--token"],
    ] {
        let out = std::process::Command::new(ASSENT)
            .args(args)
            .env_clear()
            .env("CI_API_V4_URL", w.fake.base_url())
            .env("CI_PROJECT_ID", project().to_string())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.starts_with("error: the token is never a flag")
                && stderr.contains("Set ASSENT_TOKEN (or GITLAB_TOKEN) in the environment")
                && stderr.lines().count() == 1,
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("glpat-flag-value"), "{stderr}");
    }
    assert!(w.fake.requests().is_empty());
    let completions = std::process::Command::new(ASSENT)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let script = String::from_utf8(completions.stdout).unwrap();
    assert!(script.contains("--dry-run"), "a real script");
    assert!(!script.contains("--token"), "a hidden flag is not offered");
}
