//! `assent lint` and `assent test` as a user runs them: the compiled binary against the
//! example repository and its broken variants under `tests/broken-repos/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `assent ARGS` from the crate root, with `CI` removed unless given in `env`.
fn assent(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_assent"));
    command.current_dir(root()).args(args).env_remove("CI");
    for (key, value) in env {
        command.env(key, value);
    }
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("the assent binary runs");
    (
        status.code().expect("exited with a code"),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8(stderr).unwrap(),
    )
}

const GOOD: &str = "fixtures/repos/topic-registry";

fn broken(name: &str) -> String {
    format!("tests/broken-repos/{name}")
}

#[test]
fn the_example_repository_lints_clean() {
    let (code, out, err) = assent(&["lint", GOOD], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, "ok: 8 rule(s) in 2 file(s)\n");
    assert_eq!(err, "");
}

#[test]
fn lint_defaults_to_the_current_directory_and_prints_bare_paths() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_assent"));
    let output = command
        .current_dir(root().join(broken("duplicate-rule-id")))
        .arg("lint")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let out = String::from_utf8(output.stdout).unwrap();
    assert!(
        out.starts_with(".assent/policies/b.yaml:9: duplicate rule id `retention-shrink`"),
        "{out}"
    );
}

#[test]
fn the_example_repository_tests_pass() {
    let (code, out, err) = assent(&["test", GOOD], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cases = out.lines().filter(|l| l.starts_with("ok     ")).count();
    assert!(cases >= 19, "{out}");
    assert!(!out.contains("FAILED"), "{out}");
    assert_eq!(
        out.lines().last(),
        Some(format!("{cases} passed, 0 failed").as_str())
    );
    assert!(out.contains(&format!(
        "ok     {GOOD}/.assent/tests/retention-shrink-is-challenged.yaml: shrinking a topic's retention is challenged"
    )));
}

#[test]
fn every_rule_of_the_example_has_a_case_that_fires_it() {
    // Each rule appears in some case's expectations, and some cases expect no finding.
    let tests = root().join(GOOD).join(".assent/tests");
    let mut all = String::new();
    for entry in std::fs::read_dir(&tests).unwrap() {
        all.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    for rule in [
        "retention-shrink",
        "new-topic-short-retention",
        "new-file-short-retention",
        "partitions-decrease",
        "topic-deleted",
        "registry-file-deleted",
        "owner-change",
        "cleanup-policy-change",
        "assent/self-edit",
        "assent/parse-error",
    ] {
        assert!(
            all.contains(&format!("rule: {rule},")),
            "no case expects {rule}"
        );
    }
    assert!(all.contains("findings: []"));
}

#[test]
fn a_policy_that_is_not_yaml_is_reported_with_its_line() {
    let repo = broken("bad-yaml");
    let (code, out, err) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.starts_with(&format!("{repo}/.assent/policies/topics.yaml:7: ")),
        "{out}"
    );
    assert!(out.ends_with("1 problem(s) in 1 file(s)\n"), "{out}");
    assert!(err.starts_with("error: the policies in "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_duplicate_rule_id_names_both_places() {
    let repo = broken("duplicate-rule-id");
    let (code, out, _) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        format!(
            "{repo}/.assent/policies/b.yaml:9: duplicate rule id `retention-shrink` (first defined at .assent/policies/a.yaml:4)\n1 problem(s) in 1 file(s)\n"
        )
    );
}

#[test]
fn an_unknown_field_is_reported_at_its_line() {
    let repo = broken("unknown-field");
    let (code, out, _) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!(
            "{repo}/.assent/policies/topics.yaml:9: rules[0]: unknown field `efect`"
        )),
        "{out}"
    );
}

#[test]
fn test_refuses_to_run_cases_under_policies_that_do_not_load() {
    for name in ["bad-yaml", "duplicate-rule-id", "unknown-field"] {
        let repo = broken(name);
        let (code, out, err) = assent(&["test", &repo], &[]);
        assert_eq!(code, 1, "{name}: {out}{err}");
        assert!(out.contains(&format!("{repo}/.assent/policies/")), "{out}");
        assert!(err.contains("the policies do not load"), "{err}");
        assert!(err.contains("assent lint"), "{err}");
    }
}

#[test]
fn a_missing_policy_folder_is_a_usage_error_saying_what_to_do() {
    for command in ["lint", "test"] {
        let repo = broken("no-policies");
        let (code, out, err) = assent(&[command, &repo], &[]);
        assert_eq!(code, 2, "{command}: {out}{err}");
        assert_eq!(out, "");
        assert_eq!(
            err,
            format!(
                "error: {repo}/.assent/policies does not exist: create it and put the policy files (*.yaml) there, or pass the repository root as REPO\n"
            )
        );
        let (code, _, err) = assent(&[command, "tests/broken-repos/does-not-exist"], &[]);
        assert_eq!(code, 2);
        assert!(err.contains("is not a directory"), "{err}");
    }
}

#[test]
fn a_failing_case_shows_a_diff_and_fails() {
    let repo = broken("failing-test");
    assert_eq!(assent(&["lint", &repo], &[]).0, 0);
    let (code, out, err) = assent(&["test", &repo], &[]);
    assert_eq!(code, 1, "{out}{err}");
    let expected = format!(
        "ok     {repo}/.assent/tests/growth-passes.yaml: growing retention passes
FAILED {repo}/.assent/tests/shrink-wrongly-expected.yaml: shrinking retention (wrong expectation)
    decision: expected APPROVE, got REVIEW
    findings (- expected, + actual):
    - {{ rule: \"owner-change\", subject: \"topics/orders.yaml#/topics/orders/owner\", effect: comment }}
    + {{ rule: \"retention-shrink\", subject: \"topics/orders.yaml#/topics/orders/retention_days\", effect: challenge }}
1 passed, 1 failed
"
    );
    assert_eq!(out, expected);
    assert_eq!(err, "error: 1 policy test case(s) failed\n");
}

#[test]
fn an_unparseable_case_is_a_usage_error_with_file_and_line() {
    let repo = broken("broken-test-file");
    let (code, out, err) = assent(&["test", &repo], &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!(
            "error: {repo}/.assent/tests/typo.yaml:5: files[0]: unknown field `haed`"
        )),
        "{err}"
    );
    assert!(out.ends_with("0 passed, 0 failed\n"), "{out}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn update_rewrites_only_the_expect_block_of_failing_cases() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("failing-test");
    copy_dir(&root().join(broken("failing-test")), &repo);
    let case = repo.join(".assent/tests/shrink-wrongly-expected.yaml");
    let passing = repo.join(".assent/tests/growth-passes.yaml");
    let passing_before = std::fs::read_to_string(&passing).unwrap();
    let repo_arg = repo.to_str().unwrap();

    let (code, out, err) = assent(&["test", "--update", repo_arg], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("updated "), "{out}");
    assert!(out.ends_with("2 passed, 0 failed (1 updated)\n"), "{out}");
    assert_eq!(std::fs::read_to_string(&passing).unwrap(), passing_before);
    let text = std::fs::read_to_string(&case).unwrap();
    assert!(
        text.starts_with("# This case is wrong on purpose"),
        "{text}"
    );
    assert!(
        text.contains(
            "expect:\n  decision: REVIEW\n  findings:\n    - { rule: \"retention-shrink\", subject: \"topics/orders.yaml#/topics/orders/retention_days\", effect: challenge }\n\n# Kept below the block"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("mr: { title: \"Shrink retention\" }\n"),
        "{text}"
    );

    let (code, out, _) = assent(&["test", repo_arg], &[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn update_is_refused_under_ci() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("failing-test");
    copy_dir(&root().join(broken("failing-test")), &repo);
    let case = repo.join(".assent/tests/shrink-wrongly-expected.yaml");
    let before = std::fs::read_to_string(&case).unwrap();
    for ci in ["true", "1"] {
        let (code, out, err) = assent(&["test", "--update", repo.to_str().unwrap()], &[("CI", ci)]);
        assert_eq!(code, 2, "{out}{err}");
        assert_eq!(out, "");
        assert!(
            err.starts_with(
                "error: --update is refused because the CI environment variable is set"
            ),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1);
    }
    assert_eq!(std::fs::read_to_string(&case).unwrap(), before);
    // Without --update, CI does not matter.
    assert_eq!(assent(&["test", GOOD], &[("CI", "true")]).0, 0);
}

#[test]
fn help_shows_examples() {
    for command in ["lint", "test"] {
        let (code, out, _) = assent(&[command, "--help"], &[]);
        assert_eq!(code, 0);
        assert!(out.contains("Examples:"), "{out}");
        assert!(
            out.contains(&format!("assent {command} fixtures/repos/topic-registry")),
            "{out}"
        );
        assert!(out.contains("Exit codes:"), "{out}");
    }
    let (_, out, _) = assent(&["test", "--help"], &[]);
    assert!(out.contains("--update"), "{out}");
    let (_, out, _) = assent(&["--help"], &[]);
    assert!(out.contains("lint") && out.contains("test"), "{out}");
}
