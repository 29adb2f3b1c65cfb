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

/// Where the broken repositories keep their one policy file.
const POLICY: &str = ".assent/policies/topics.yaml";

/// A copy of the broken repository `repo` with its policy file rewritten by `edit`, and the
/// exit code and stdout of `assent lint` on it.
fn lint_with_policy(
    repo: &str,
    edit: impl FnOnce(String) -> String,
) -> (tempfile::TempDir, i32, String) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join(repo), dir.path());
    let policies = dir.path().join(POLICY);
    let text = std::fs::read_to_string(&policies).unwrap();
    std::fs::write(&policies, edit(text)).unwrap();
    let (code, out, _) = assent(&["lint", dir.path().to_str().unwrap()], &[]);
    (dir, code, out)
}

#[test]
fn the_example_repository_lints_clean() {
    let (code, out, err) = assent(&["lint", GOOD], &[]);
    assert_eq!(code, 0, "{out}{err}");
    // No warning either: the registry judges the delete and the add of every field it guards.
    assert_eq!(out, "ok: 15 rule(s) in 2 file(s)\n");
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

/// `--filter` runs the cases whose path or name matches, says how many it left out, and
/// refuses a filter that matches nothing (a typo must not pass as a green run).
#[test]
fn a_filter_runs_only_the_matching_cases() {
    let (code, out, err) = assent(&["test", GOOD, "--filter", "RETENTION-shrink"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let ran: Vec<&str> = out.lines().filter(|l| l.starts_with("ok     ")).collect();
    assert!(!ran.is_empty(), "{out}");
    assert!(
        ran.iter()
            .all(|l| l.to_lowercase().contains("retention-shrink")),
        "{out}"
    );
    let total = std::fs::read_dir(format!("{GOOD}/.assent/tests"))
        .unwrap()
        .count();
    assert_eq!(
        out.lines().last(),
        Some(
            format!(
                "{} passed, 0 failed; {} filtered out",
                ran.len(),
                total - ran.len()
            )
            .as_str()
        )
    );
    // By name: a case's `name:` matches too.
    let (code, out, _) = assent(&["test", GOOD, "--filter", "is challenged"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("retention-shrink-is-challenged.yaml"), "{out}");

    let (code, out, err) = assent(&["test", GOOD, "--filter", "no-such-case"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("no test case matches --filter"), "{err}");
    assert!(!out.contains("passed"), "{out}");
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
        "retention-removed",
        "retention-set-short",
        "new-file-short-retention",
        "partitions-decrease",
        "partitions-removed",
        "partitions-set",
        "new-topic-without-owner",
        "owner-set-empty",
        "cleanup-policy-set",
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

/// A malformed `policy_owners` is refused with the line of each problem, and only one file
/// may declare it.
#[test]
fn lint_rejects_a_malformed_policy_owners() {
    let repo = broken("bad-policy-owners");
    let (code, out, _) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 1, "{out}");
    let at = |file: &str, line: usize| format!("{repo}/.assent/policies/{file}:{line}: ");
    assert_eq!(
        out,
        [
            format!("{}policy_owners.min_role: unknown role `maintainers` (expected one of guest, reporter, developer, maintainer, owner) (did you mean `maintainer`?)", at("a.yaml", 3)),
            format!("{}policy_owners.users: write `platform-lead` without the `@`", at("a.yaml", 3)),
            format!("{}unknown field `policy_owner`, expected one of `apiVersion`, `kind`, `identities`, `assenters`, `policy_owners`, `rules` (did you mean `policy_owners`?)", at("b.yaml", 3)),
            format!("{}duplicate policy_owners (first declared at .assent/policies/a.yaml:3): at most one policy file may declare it", at("b.yaml", 5)),
            "4 problem(s) in 2 file(s)".to_owned(),
            String::new(),
        ]
        .join("\n")
    );
}

/// One pass shows everything: an unknown field no longer hides the rest of its file, each
/// misspelling says what it resembles, and CEL mistakes that would block every merge request
/// are caught here.
#[test]
fn lint_reports_every_problem_in_one_pass_with_suggestions() {
    let repo = broken("many-problems");
    let (code, out, err) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 1, "{out}{err}");
    let at = |line: usize| format!("{repo}/.assent/policies/topics.yaml:{line}: ");
    let fields =
        "expected one of `id`, `match`, `when`, `effect`, `message`, `assenters`, `group_above`";
    assert_eq!(
        out,
        [
            format!("{}rule `retention-shrink`: `when` uses undeclared name `nwe` (variables: old, new, kind, file, pointer, entry, mr) (did you mean `new`?)", at(12)),
            format!("{}rule `retention-shrink`: unknown effect `challange` (expected comment, challenge or block) (did you mean `challenge`?)", at(13)),
            format!("{}rules[0]: unknown field `efect`, {fields} (did you mean `effect`?)", at(13)),
            format!("{}rule `partitions-decrease`: `when` applies `+` to string and int, which CEL does not define: every evaluation would fail", at(18)),
            format!("{}rule `owner-change`: `when` calls unknown function `startswith` (did you mean `startsWith`?)", at(24)),
            format!("{}rule `owner-change`: `when` reads `mr.titel`, which does not exist (mr has iid, title, source_branch, target_branch, author, labels) (did you mean `title`?)", at(24)),
            format!("{}rule `owner-change`: placeholder `{{{{ new }}}}` is inside a link destination, where merge request content cannot be shown inert; move it into the message text", at(26)),
            format!("{}rule `owner-change`: unknown placeholder `{{{{ ownr }}}}` in message template (known: old, new, entry, file, pointer, kind, rule)", at(26)),
            format!("{}rules[2]: unknown field `severity`, {fields}", at(27)),
            "9 problem(s) in 1 file(s)".to_owned(),
            String::new(),
        ]
        .join("\n")
    );
    assert_eq!(
        err,
        format!(
            "error: the policies in {repo}/.assent/policies do not load: 9 problem(s) in 1 file(s)\n"
        )
    );
    // `test` refuses to run cases under them, printing the same problems.
    let (code, test_out, _) = assent(&["test", &repo], &[]);
    assert_eq!(code, 1);
    assert!(
        test_out.contains("(did you mean `startsWith`?)"),
        "{test_out}"
    );
}

/// A glob that matches no file of the checkout is a warning with its line: the policies
/// load (exit 0), and the rule is named.
#[test]
fn a_glob_matching_no_file_is_a_warning_not_a_failure() {
    let repo = broken("unmatched-glob");
    let (code, out, err) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out,
        format!(
            "{repo}/.assent/policies/topics.yaml:7: warning: rule `retention-shrink`: match.files glob `topics/*.yml` matches no file in the checkout, so the rule judges nothing here\n\
             ok: 4 rule(s) in 1 file(s); 1 warning(s)\n"
        )
    );
    assert_eq!(err, "");
    // Once a file matches, the warning is gone.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join(&repo), dir.path());
    std::fs::write(dir.path().join("topics/legacy.yml"), "topics: []\n").unwrap();
    let (code, out, _) = assent(&["lint", dir.path().to_str().unwrap()], &[]);
    assert_eq!((code, out.as_str()), (0, "ok: 4 rule(s) in 1 file(s)\n"));
    // A file only under `.assent/` does not count: it is never governed.
    std::fs::remove_file(dir.path().join("topics/legacy.yml")).unwrap();
    std::fs::write(dir.path().join(".assent/topics.yml"), "").unwrap();
    std::fs::create_dir_all(dir.path().join(".assent/topics")).unwrap();
    std::fs::write(dir.path().join(".assent/topics/x.yml"), "").unwrap();
    let (_, out, _) = assent(&["lint", dir.path().to_str().unwrap()], &[]);
    assert!(out.contains("warning: rule `retention-shrink`"), "{out}");
}

/// A rule that judges a pointer only on some kinds, when no rule judges its delete, is a
/// warning at the rule's line (exit 0): deleting the key would pass unjudged. A wider glob
/// or pointer covers it; a narrower glob, or a rule on the parent, does not.
#[test]
fn a_pointer_judged_without_its_delete_is_a_warning() {
    let repo = broken("uncovered-delete");
    let (code, out, err) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let file = format!("{repo}/.assent/policies/topics.yaml");
    assert_eq!(
        out,
        format!(
            "{file}:10: warning: rule `retention-shrink`: judges `/topics/*/retention_days` in `topics/*.yaml` only on modify, and no rule judges its delete, so a merge request that deletes it passes unjudged; add a rule with `kinds: [delete]` for that pointer\n\
             {file}:46: warning: rule `partitions-decrease`: judges `/topics/*/partitions` in `legacy/*.yaml` only on modify, and no rule judges its delete, so a merge request that deletes it passes unjudged; add a rule with `kinds: [delete]` for that pointer\n\
             {file}:60: warning: rule `any-field-set`: judges `/**` in `**` only on add, and no rule judges its delete, so a merge request that deletes it passes unjudged; add a rule with `kinds: [delete]` for that pointer\n\
             ok: 8 rule(s) in 1 file(s); 3 warning(s)\n"
        )
    );
    assert_eq!(err, "");
    // A rule judging the deletes under a wider glob and pointer closes every gap.
    let (_dir, code, out) = lint_with_policy(&repo, |text| {
        text + "  - id: any-field-removed\n    match:\n      files: [\"**\"]\n      pointer: \"/**\"\n      kinds: [delete]\n    effect: challenge\n"
    });
    assert_eq!((code, out.as_str()), (0, "ok: 9 rule(s) in 1 file(s)\n"));
}

/// The mirror image: a rule that judges a pointer on `modify` or `delete` but not on `add`,
/// when no rule judges its add, is a warning too (exit 0): setting the key where the
/// default applied (`retention_days: 1` on a topic that had none) would pass unjudged. A
/// rule on the parent (a new entry) does not cover it; a wider pointer does.
#[test]
fn a_pointer_judged_without_its_add_is_a_warning() {
    let repo = broken("uncovered-add");
    let (code, out, err) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let file = format!("{repo}/.assent/policies/topics.yaml");
    assert_eq!(
        out,
        format!(
            "{file}:10: warning: rule `retention-shrink`: judges `/topics/*/retention_days` in `topics/*.yaml` only on modify, and no rule judges its add, so a merge request that adds it passes unjudged; add a rule with `kinds: [add]` for that pointer\n\
             {file}:17: warning: rule `retention-removed`: judges `/topics/*/retention_days` in `topics/*.yaml` only on delete, and no rule judges its add, so a merge request that adds it passes unjudged; add a rule with `kinds: [add]` for that pointer\n\
             ok: 5 rule(s) in 1 file(s); 2 warning(s)\n"
        )
    );
    assert_eq!(err, "");
    // A rule judging the adds of every field of a topic closes the gap.
    let (_dir, code, out) = lint_with_policy(&repo, |text| {
        text + "  - id: any-field-set\n    match:\n      files: [\"topics/*.yaml\"]\n      pointer: \"/topics/*/*\"\n      kinds: [add, delete]\n    effect: comment\n"
    });
    assert_eq!((code, out.as_str()), (0, "ok: 6 rule(s) in 1 file(s)\n"));
}

/// An `identities` declaration that keys nothing a rule judges is a warning at its line
/// (exit 0), as a `match.files` glob that matches nothing is: a list pattern that matches
/// no list of the files its glob matches (`/topic` for `/topics`), a file glob that matches
/// no file (`topics/*.yml`), and one that matches only files no rule governs. Each leaves
/// the lists compared by position, so a rule that names entries by key never fires. A
/// pattern that is not a pointer pattern does not load at all.
#[test]
fn an_identity_that_keys_nothing_is_a_warning() {
    let repo = broken("unused-identity");
    let (code, out, err) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let file = format!("{repo}/.assent/policies/topics.yaml");
    assert_eq!(
        out,
        format!(
            "{file}:5: warning: identities: list pattern `/topic` matches no list in the 1 file(s) `topics/*.yaml` matches (their lists are at `/topics`, `/topics/0/acls`), so the lists it was meant for are compared by position, where a reorder or an insert shifts every entry after it and a rule that names an entry by its key never fires; fix the pattern (one `*` stands for an entry of a list: a list inside each entry of `/topics` is `/topics/*/acls`)\n\
             {file}:7: warning: identities: file glob `topics/*.yml` matches no file in the checkout, so it keys no list any rule judges: a list it was meant for is compared by position, where a reorder or an insert shifts every entry after it and a rule that names an entry by its key never fires; fix the glob\n\
             {file}:9: warning: identities: file glob `docs/*.yaml` matches only files no rule's match.files governs, so it keys no list any rule judges: a list it was meant for is compared by position, where a reorder or an insert shifts every entry after it and a rule that names an entry by its key never fires; fix the glob\n\
             ok: 2 rule(s) in 1 file(s); 3 warning(s)\n"
        )
    );
    assert_eq!(err, "");
    // Fixed, every declaration keys a list a rule judges (the acls of a topic keyed by its
    // name are at `/topics/orders.events.v1/acls`), and the warnings are gone.
    let fix = |text: String| {
        text.replace("\"/topic\": name", "\"/topics\": name")
            .replace("  \"topics/*.yml\": { \"/topics\": name }\n", "")
            .replace("  \"docs/*.yaml\": { \"/pages\": title }\n", "")
    };
    let (dir, code, out) = lint_with_policy(&repo, fix);
    assert_eq!((code, out.as_str()), (0, "ok: 2 rule(s) in 1 file(s)\n"));
    let policies = dir.path().join(POLICY);
    let fixed = std::fs::read_to_string(&policies).unwrap();
    // A list pattern that is no pointer pattern is a problem, not a warning.
    std::fs::write(
        &policies,
        fixed.replace("\"/topics\": name", "\"topics\": name"),
    )
    .unwrap();
    let (code, out, _) = assent(&["lint", dir.path().to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(":5: identities: "), "{out}");
}

/// The `when` of every policy the project ships or documents passes the type checks: the
/// checker never rejects a predicate people actually write.
#[test]
fn every_shipped_and_documented_predicate_lints_clean() {
    fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                yaml_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    yaml_files(&root().join("fixtures"), &mut files);
    let mut predicates: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for file in &files {
        lines.extend(
            std::fs::read_to_string(file)
                .unwrap()
                .lines()
                .map(str::to_owned),
        );
    }
    for doc in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = doc.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            lines.extend(
                std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .map(str::to_owned),
            );
        }
    }
    for line in lines {
        let trimmed = line.trim_start().trim_start_matches("- ");
        let Some(value) = trimmed.strip_prefix("when: ") else {
            continue;
        };
        // `when: always` and the like are CI keywords, not predicates.
        let Ok(serde_yaml::Value::String(source)) =
            serde_yaml::from_str::<serde_yaml::Value>(value.split(" #").next().unwrap())
        else {
            continue;
        };
        if value.trim_start().starts_with('"') || value.trim_start().starts_with('\'') {
            predicates.push(source);
        }
    }
    predicates.sort();
    predicates.dedup();
    // The three predicates of the example registries and docs; more valid predicates are
    // pinned in `assent-core`'s `cel_types` tests.
    assert!(predicates.len() >= 3, "{predicates:?}");
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join(".assent/policies");
    std::fs::create_dir_all(&policies).unwrap();
    let mut text = "apiVersion: assent/v1\nkind: Policy\nrules:\n".to_owned();
    for (i, predicate) in predicates.iter().enumerate() {
        text.push_str(&format!(
            "  - id: r{i}\n    match: {{ files: [\"**\"] }}\n    when: {}\n    effect: block\n",
            serde_json::Value::String(predicate.clone())
        ));
    }
    std::fs::write(policies.join("all.yaml"), &text).unwrap();
    let (code, out, err) = assent(&["lint", dir.path().to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{predicates:#?}\n{out}{err}");
}

#[test]
fn group_above_must_be_a_positive_integer() {
    let repo = broken("bad-group-above");
    let (code, out, _) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 1, "{out}");
    let why = "group_above must be a positive integer (the number of findings above which they share one thread)";
    assert_eq!(
        out,
        format!(
            "{repo}/.assent/policies/topics.yaml:7: rule `retention-shrink`: {why}, found `0`\n\
             {repo}/.assent/policies/topics.yaml:11: rule `topic-deleted`: {why}, found `many`\n\
             2 problem(s) in 1 file(s)\n"
        )
    );
}

#[test]
fn test_cases_pin_both_sides_of_a_rule_s_group_above() {
    let repo = "fixtures/repos/grouped-registry";
    let (code, out, err) = assent(&["lint", repo], &[]);
    assert_eq!(
        (code, out.as_str()),
        (0, "ok: 5 rule(s) in 1 file(s)\n"),
        "{err}"
    );
    let (code, out, err) = assent(&["test", repo], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().last(), Some("3 passed, 0 failed"), "{out}");
    assert!(
        out.contains("four-shrinks-are-one-grouped-challenge.yaml"),
        "{out}"
    );

    // A case that expects one thread per finding above the threshold fails, naming the group.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join(repo), dir.path());
    let case = dir
        .path()
        .join(".assent/tests/four-shrinks-are-one-grouped-challenge.yaml");
    let text = std::fs::read_to_string(&case).unwrap();
    let ungrouped = text.replace(
        "    - { rule: retention-shrink, subject: \"*\", effect: challenge }\n",
        &["a", "b", "c", "d"]
            .map(|t| format!("    - {{ rule: retention-shrink, subject: \"topics/orders.yaml#/topics/orders.{t}.v1/retention_days\", effect: challenge }}\n"))
            .concat(),
    );
    assert_ne!(ungrouped, text);
    std::fs::write(&case, ungrouped).unwrap();
    let (code, out, _) = assent(&["test", dir.path().to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("    + { rule: \"retention-shrink\", subject: \"*\", effect: challenge }\n"),
        "{out}"
    );
    assert!(
        out.contains("    - { rule: \"retention-shrink\", subject: \"topics/orders.yaml#/topics/orders.d.v1/retention_days\", effect: challenge }\n"),
        "{out}"
    );
}

#[test]
fn test_refuses_to_run_cases_under_policies_that_do_not_load() {
    for name in [
        "bad-yaml",
        "duplicate-rule-id",
        "unknown-field",
        "bad-group-above",
    ] {
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
      message: Retention of `orders` shrinks from `30` to `7` days.
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
    assert!(err.contains("(did you mean `head`?)"), "{err}");
    assert!(out.ends_with("0 passed, 0 failed, 1 broken\n"), "{out}");
    // The broken file's line is the report; the count that fails the command is its one
    // final error, printed once, last.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(
        lines[1], "error: 1 test file(s) could not be read, parsed or updated",
        "{err}"
    );
}

#[test]
fn the_text_tally_counts_what_the_junit_report_counts() {
    // Two broken case files beside passing and failing cases: the text tally and the JUnit
    // report must agree on the number of cases.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(Path::new(&broken("failing-test")), dir.path());
    let tests = dir.path().join(".assent/tests");
    std::fs::write(tests.join("zz-broken-1.yaml"), "cases: [\n").unwrap();
    std::fs::write(tests.join("zz-broken-2.yaml"), "name: x\nhaed: 1\n").unwrap();
    let repo = dir.path().to_str().unwrap();
    let (_, text, _) = assent(&["test", repo], &[]);
    let (_, junit, _) = assent(&["test", repo, "--format", "junit"], &[]);
    let tally = text.lines().last().unwrap();
    let number = |text: &str, word: &str| -> usize {
        text.split(", ")
            .find_map(|part| part.strip_suffix(word))
            .map_or(0, |n| n.trim().parse().unwrap())
    };
    let attribute = |name: &str| -> usize {
        let start = junit.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
        junit[start..].split('"').next().unwrap().parse().unwrap()
    };
    let (passed, failed, broken) = (
        number(tally, " passed"),
        number(tally, " failed"),
        number(tally, " broken"),
    );
    assert_eq!(broken, 2, "{tally}");
    assert_eq!(failed, attribute("failures"), "{tally}\n{junit}");
    assert_eq!(broken, attribute("errors"), "{tally}\n{junit}");
    assert_eq!(
        passed + failed + broken + attribute("skipped"),
        attribute("tests"),
        "{tally}\n{junit}"
    );
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

/// A result in which a rule could not be evaluated is a broken rule or data the rule does
/// not expect: `--update` refuses to write it down as the expectation, says why, and fails.
#[test]
fn update_refuses_results_that_hold_evaluation_errors() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("evaluation-error");
    copy_dir(&root().join(broken("evaluation-error")), &repo);
    let case = repo.join(".assent/tests/retention-becomes-text.yaml");
    let before = std::fs::read_to_string(&case).unwrap();
    let repo_arg = repo.to_str().unwrap();
    let (code, out, err) = assent(&["test", "--update", repo_arg], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(&case).unwrap(),
        before,
        "not written"
    );
    let subject = "topics/orders.yaml#/topics/orders/retention_days";
    let why = "Error executing function 'int': string parse error: invalid digit found in string";
    assert_eq!(
        out,
        format!(
            "ok     {repo_arg}/.assent/tests/growth-passes.yaml: growing retention passes
FAILED {repo_arg}/.assent/tests/retention-becomes-text.yaml: retention written as text
    no `expect:` block (actual decision BLOCK; `assent test --update` writes it)
    findings (+ actual):
    + {{ rule: \"retention-shrink\", subject: \"{subject}\", effect: block }}
      message: rule `retention-shrink` could not be evaluated on `{subject}`: `{why}` — fix the rule or the data
    not updated: rule `retention-shrink` could not be evaluated on `{subject}`: {why}
1 passed, 1 failed
"
        )
    );
    assert_eq!(
        err,
        "error: 1 case(s) not updated: their result holds a rule that could not be evaluated; fix the rule or the case, or write the expectation by hand\n\
         error: 1 policy test case(s) failed\n"
    );
    // Written by hand, the expectation of the block passes: only `--update` refuses it.
    std::fs::write(
        &case,
        format!("{before}expect:\n  decision: BLOCK\n  findings:\n    - {{ rule: retention-shrink, subject: \"{subject}\", effect: block }}\n"),
    )
    .unwrap();
    let (code, out, _) = assent(&["test", "--update", repo_arg], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("2 passed, 0 failed\n"), "{out}");
}

/// Checks that `xml` is well-formed for what the JUnit writer emits: a declaration, then
/// balanced elements whose attributes are quoted without `<`, and text whose only `&` start
/// the five predefined entities or a character reference; no control character but `\n`
/// and `\t`.
fn assert_well_formed_xml(xml: &str) {
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
        "{xml}"
    );
    assert!(
        xml.chars()
            .all(|c| !c.is_control() || c == '\n' || c == '\t'),
        "{xml:?}"
    );
    let body = &xml[xml.find("?>").unwrap() + 2..];
    let mut open: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find(['<', '&']) {
        let text = &rest[..at];
        assert!(!text.contains('>'), "a bare > in text: {text:?}");
        rest = &rest[at..];
        if rest.starts_with('&') {
            let end = rest.find(';').expect("an entity ends with ;");
            let entity = &rest[1..end];
            let known = ["amp", "lt", "gt", "quot", "apos"].contains(&entity)
                || entity
                    .strip_prefix('#')
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            assert!(known, "unknown entity &{entity};");
            rest = &rest[end + 1..];
            continue;
        }
        let end = rest.find('>').expect("a tag ends with >");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name), "unbalanced </{name}>");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(!name.is_empty(), "a tag without a name: <{tag}>");
        let mut attributes = &tag[name.len()..];
        while !attributes.trim().is_empty() {
            let trimmed = attributes.trim_start();
            let eq = trimmed.find("=\"").expect("attribute=\"value\"");
            let key = &trimmed[..eq];
            assert!(
                key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "{key:?}"
            );
            let value_end = trimmed[eq + 2..].find('"').expect("a closing quote") + eq + 2;
            let value = &trimmed[eq + 2..value_end];
            assert!(!value.contains('<') && !value.contains('\n'), "{value:?}");
            attributes = &trimmed[value_end + 1..];
        }
        if !self_closing {
            open.push(name);
        }
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
}

/// The JUnit and JSON documents of a passing and a failing repository, pinned; exit codes as
/// with text.
#[test]
fn test_reports_junit_and_json_for_passing_and_failing_repositories() {
    for (name, repo, code) in [
        ("passing", "fixtures/repos/grouped-registry", 0),
        ("failing", "tests/broken-repos/failing-test", 1),
    ] {
        let (got, junit, err) = assent(&["test", repo, "--format", "junit"], &[]);
        assert_eq!(got, code, "{junit}{err}");
        assert_well_formed_xml(&junit);
        insta::assert_snapshot!(format!("policy_test_junit_{name}"), junit);
        let (got, json, err) = assent(&["test", repo, "--format", "json"], &[]);
        assert_eq!(got, code, "{json}{err}");
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["kind"], "PolicyTestReport");
        insta::assert_snapshot!(format!("policy_test_json_{name}"), json);
        // stderr says the same in every format.
        let (_, _, text_err) = assent(&["test", repo], &[]);
        assert_eq!(err, text_err);
    }
}

/// Filtered-out cases are skipped test cases; broken ones are errors; policies that do not
/// load are one erroring case, so the report always parses and says why.
#[test]
fn junit_marks_skipped_broken_and_unloadable_cases() {
    let (code, xml, _) = assent(
        &[
            "test",
            GOOD,
            "--format",
            "junit",
            "--filter",
            "retention-shrink",
        ],
        &[],
    );
    assert_eq!(code, 0, "{xml}");
    assert_well_formed_xml(&xml);
    let skipped = xml
        .matches("<skipped message=\"filtered out by --filter\"/>")
        .count();
    assert!(skipped >= 10, "{xml}");
    assert!(xml.contains(&format!("skipped=\"{skipped}\"")), "{xml}");

    let (code, xml, err) = assent(
        &["test", &broken("broken-test-file"), "--format", "junit"],
        &[],
    );
    assert_eq!(code, 2, "{xml}{err}");
    assert_well_formed_xml(&xml);
    assert!(
        xml.contains("<error type=\"broken\" message=\".assent/tests/typo.yaml:5: files[0]: unknown field `haed`"),
        "{xml}"
    );

    let (code, xml, err) = assent(
        &["test", &broken("many-problems"), "--format", "junit"],
        &[],
    );
    assert_eq!(code, 1, "{xml}{err}");
    assert_well_formed_xml(&xml);
    assert!(
        xml.contains("<testcase name=\"the policies load\" classname=\".assent/policies\""),
        "{xml}"
    );
    assert!(xml.contains("(did you mean `startsWith`?)"), "{xml}");
    assert!(err.contains("the policies do not load"), "{err}");
    let (code, json, _) = assent(&["test", &broken("many-problems"), "--format", "json"], &[]);
    assert_eq!(code, 1);
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        parsed["policyProblems"].as_array().unwrap().len(),
        9,
        "{json}"
    );
    assert_eq!(parsed["cases"], serde_json::json!([]));
}

/// Case names, messages and values are the MR author's text: in JUnit they are escaped, and
/// what XML cannot hold is dropped, so the report parses whatever they contain.
#[test]
fn junit_escapes_hostile_names_and_values() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join(broken("failing-test")), dir.path());
    let case = dir
        .path()
        .join(".assent/tests/shrink-wrongly-expected.yaml");
    let entry = r#""<o&'r\"ders>\a""#;
    let side = |days: u32| {
        format!("      topics:\n        - name: {entry}\n          retention_days: {days}\n")
    };
    let hostile = format!(
        "name: \"</testcase><x a='1'> & \\e[31m \\0 ]]> \\\"q\\\"\"\nfiles:\n  - path: topics/orders.yaml\n    base: |\n{}    head: |\n{}expect:\n  decision: APPROVE\n  findings: []\n",
        side(30),
        side(7)
    );
    std::fs::write(&case, hostile).unwrap();
    let (code, xml, err) = assent(
        &["test", dir.path().to_str().unwrap(), "--format", "junit"],
        &[],
    );
    assert_eq!(code, 1, "{xml}{err}");
    assert_well_formed_xml(&xml);
    assert!(xml.contains("name=\"&lt;/testcase&gt;&lt;x a=&apos;1&apos;&gt; &amp; \\u{1b}[31m \\u{0} ]]&gt; &quot;q&quot;\""), "{xml}");
    assert!(
        xml.contains("Retention of `&lt;o&amp;&apos;r&quot;ders&gt;"),
        "{xml}"
    );
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

// ---------------------------------------------------------------- hostile trees
//
// `lint` and `test` run in CI on merge requests that change `.assent/`, so the tree is the MR
// author's. Each case runs the binary with a deadline and a memory limit, so that a
// regression (following a link to `/dev/zero`, blocking on a FIFO) fails the test instead of
// hanging it or exhausting the machine.

const SECRET: &str = "SECRET-7f3a9c-must-never-be-printed";

/// Runs `assent ARGS` under a 1 GiB address-space limit, killed after 60 s.
fn assent_bounded(args: &[&str]) -> (i32, String, String) {
    use std::time::{Duration, Instant};
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_assent"))
        .args(args)
        .current_dir(root())
        .env_remove("CI")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("the assent binary runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("assent {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    (
        status.code().expect("exited with a code, not a signal"),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8(stderr).unwrap(),
    )
}

/// A temporary checkout of the example repository, and a secret file beside (not inside) it.
struct HostileRepo {
    dir: tempfile::TempDir,
}

impl HostileRepo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&root().join(GOOD), &dir.path().join("repo"));
        // A top-level scalar: the old reader's YAML error quoted it in full.
        std::fs::write(dir.path().join("secret.txt"), format!("{SECRET}\n")).unwrap();
        HostileRepo { dir }
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn arg(&self) -> String {
        self.repo().to_str().unwrap().to_owned()
    }

    fn secret(&self) -> PathBuf {
        self.dir.path().join("secret.txt")
    }

    fn link(&self, target: &Path, at: &str) {
        std::os::unix::fs::symlink(target, self.repo().join(at)).unwrap();
    }

    fn fifo(&self, at: &str) {
        let made = Command::new("mkfifo")
            .arg(self.repo().join(at))
            .status()
            .unwrap();
        assert!(made.success());
    }
}

fn assert_no_secret(out: &str, err: &str) {
    assert!(
        !out.contains("SECRET") && !err.contains("SECRET"),
        "{out}{err}"
    );
}

const LINK_LINE: &str = ": is a symbolic link; assent reads only regular files and folders (a link could point outside the repository)";

#[test]
fn a_policy_linked_to_a_secret_file_is_refused_without_echoing_it() {
    let hostile = HostileRepo::new();
    hostile.link(&hostile.secret(), ".assent/policies/creds.yaml");
    let repo = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert_no_secret(&out, &err);
    assert_eq!(
        out,
        format!("{repo}/.assent/policies/creds.yaml{LINK_LINE}\n1 problem(s) in 1 file(s)\n")
    );
    // `test` refuses to run cases under it, with the same line.
    let (code, out, err) = assent_bounded(&["test", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert_no_secret(&out, &err);
    assert!(
        out.contains(&format!("{repo}/.assent/policies/creds.yaml{LINK_LINE}")),
        "{out}"
    );
    assert!(err.contains("the policies do not load"), "{err}");
}

#[test]
fn links_are_refused_whatever_their_name_or_target() {
    let hostile = HostileRepo::new();
    let outside = hostile.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::copy(hostile.secret(), outside.join("p.yaml")).unwrap();
    hostile.link(&outside, ".assent/policies/more");
    hostile.link(Path::new("topics.yaml"), ".assent/policies/again.yaml");
    hostile.link(Path::new("."), ".assent/policies/loop");
    hostile.link(Path::new("/nonexistent"), ".assent/policies/dangling.md");
    let repo = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert_no_secret(&out, &err);
    let expected: String = ["again.yaml", "dangling.md", "loop", "more"]
        .iter()
        .map(|name| format!("{repo}/.assent/policies/{name}{LINK_LINE}\n"))
        .collect();
    assert_eq!(out, format!("{expected}4 problem(s) in 4 file(s)\n"));
}

#[test]
fn a_linked_assent_folder_is_refused() {
    let hostile = HostileRepo::new();
    let repo = hostile.repo();
    let elsewhere = hostile.dir.path().join("elsewhere");
    std::fs::rename(repo.join(".assent"), &elsewhere).unwrap();
    hostile.link(&elsewhere, ".assent");
    let arg = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &arg]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        format!("{arg}/.assent{LINK_LINE}\n1 problem(s) in 1 file(s)\n")
    );
    let (code, out, _) = assent_bounded(&["test", &arg]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with(&format!("{arg}/.assent{LINK_LINE}\n")),
        "{out}"
    );
}

#[test]
fn a_link_to_dev_zero_is_refused_at_once() {
    let hostile = HostileRepo::new();
    hostile.link(Path::new("/dev/zero"), ".assent/policies/zero.yaml");
    hostile.link(Path::new("/dev/zero"), ".assent/tests/zero.yaml");
    let repo = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.starts_with(&format!("{repo}/.assent/policies/zero.yaml{LINK_LINE}\n")),
        "{out}"
    );
    // Without the policy link, the case link is one broken case; the others still run.
    std::fs::remove_file(hostile.repo().join(".assent/policies/zero.yaml")).unwrap();
    let (code, out, err) = assent_bounded(&["test", &repo]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.starts_with(&format!("BROKEN {repo}/.assent/tests/zero.yaml\n")),
        "{out}"
    );
    assert!(out.ends_with("35 passed, 0 failed, 1 broken\n"), "{out}");
    assert!(
        err.starts_with(&format!(
            "error: {repo}/.assent/tests/zero.yaml{LINK_LINE}\n"
        )),
        "{err}"
    );
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let hostile = HostileRepo::new();
    hostile.fifo(".assent/policies/pipe.yaml");
    hostile.fifo(".assent/tests/pipe.yaml");
    let repo = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        format!(
            "{repo}/.assent/policies/pipe.yaml: is a FIFO; assent reads only regular files\n1 problem(s) in 1 file(s)\n"
        )
    );
    std::fs::remove_file(hostile.repo().join(".assent/policies/pipe.yaml")).unwrap();
    let (code, out, err) = assent_bounded(&["test", &repo]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!(
            "error: {repo}/.assent/tests/pipe.yaml: is a FIFO; assent reads only regular files"
        )),
        "{err}"
    );
}

#[test]
fn an_oversize_file_is_refused_without_being_read() {
    let hostile = HostileRepo::new();
    let cap = 1usize << 20;
    // A valid policy padded with a comment to one byte over: only the size can fail it.
    let policy = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: big\n    match: {files: [x]}\n    effect: comment\n# ";
    let text = format!("{policy}{}\n", "x".repeat(cap - policy.len()));
    assert_eq!(text.len(), cap + 1);
    std::fs::write(hostile.repo().join(".assent/policies/big.yaml"), &text).unwrap();
    // A sparse 64 GiB case: reading it would take minutes and all memory.
    let sparse = std::fs::File::create(hostile.repo().join(".assent/tests/huge.yaml")).unwrap();
    sparse.set_len(64 << 30).unwrap();
    let repo = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        format!(
            "{repo}/.assent/policies/big.yaml: file is 1048577 bytes, more than the 1048576 allowed\n1 problem(s) in 1 file(s)\n"
        )
    );
    // Exactly at the limit loads.
    std::fs::write(
        hostile.repo().join(".assent/policies/big.yaml"),
        format!("{}\n", &text[..cap - 1]),
    )
    .unwrap();
    assert_eq!(assent_bounded(&["lint", &repo]).0, 0);
    let (code, out, err) = assent_bounded(&["test", &repo]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!(
            "error: {repo}/.assent/tests/huge.yaml: file is 68719476736 bytes, more than the 1048576 allowed"
        )),
        "{err}"
    );
}

#[test]
fn file_names_and_content_never_reach_the_output_unescaped_or_in_full() {
    let hostile = HostileRepo::new();
    let policies = hostile.repo().join(".assent/policies");
    // A name that would print a forged `ok:` line and an ANSI escape.
    let forged = "x\nok: 8 rule(s) in 2 file(s)\n\u{1b}[2K.yaml";
    std::fs::write(policies.join(forged), "apiVersion: assent/v1\n").unwrap();
    // A scalar that `serde_yaml` quotes in full, four kilobytes long.
    let long = format!("rules: \"LONG-VALUE-{}\"\n", "s".repeat(4000));
    std::fs::write(
        policies.join("long.yaml"),
        format!("apiVersion: assent/v1\nkind: Policy\n{long}"),
    )
    .unwrap();
    let repo = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains('\u{1b}') && !err.contains('\u{1b}'), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with(&format!(
            "{repo}/.assent/policies/long.yaml:3: rules: invalid type: string \"LONG-VALUE-sss"
        )),
        "{out}"
    );
    assert!(lines[0].len() < repo.len() + 200, "{}", lines[0]);
    assert!(
        lines[1].starts_with(&format!(
            "{repo}/.assent/policies/x\\nok: 8 rule(s) in 2 file(s)\\n\\u{{1b}}[2K.yaml:1: missing field `kind`"
        )),
        "{out}"
    );
    assert_eq!(lines[2], "2 problem(s) in 2 file(s)");

    // The same for test cases: the YAML error, the case name and the expectations.
    std::fs::remove_file(policies.join(forged)).unwrap();
    std::fs::remove_file(policies.join("long.yaml")).unwrap();
    let tests = hostile.repo().join(".assent/tests");
    std::fs::write(
        tests.join("long.yaml"),
        format!("files: \"{}\"\n", "s".repeat(4000)),
    )
    .unwrap();
    std::fs::write(
        tests.join("named.yaml"),
        format!(
            "name: \"\\e[31m{}\"\nexpect:\n  decision: BLOCK\n  findings:\n    - {{ rule: r, subject: \"{}\", effect: block }}\n",
            "n".repeat(2000),
            "s".repeat(5000)
        ),
    )
    .unwrap();
    let (code, out, err) = assent_bounded(&["test", &repo]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        !out.contains('\u{1b}') && !err.contains('\u{1b}'),
        "{out}{err}"
    );
    assert!(out.lines().all(|l| l.len() < repo.len() + 600), "{out}");
    assert!(err.lines().all(|l| l.len() < repo.len() + 600), "{err}");
    assert!(
        out.contains(&format!(
            "FAILED {repo}/.assent/tests/named.yaml: \\u{{1b}}[31mnnn"
        )),
        "{out}"
    );
    assert!(
        err.contains(&format!(
            "error: {repo}/.assent/tests/long.yaml:1: files: invalid type: string \"sss"
        )),
        "{err}"
    );
}

#[test]
fn too_many_entries_are_refused_as_one_problem() {
    let hostile = HostileRepo::new();
    let policies = hostile.repo().join(".assent/policies");
    for i in 0..1000 {
        std::fs::write(policies.join(format!("n{i}.md")), "").unwrap();
    }
    let repo = hostile.arg();
    let (code, out, err) = assent_bounded(&["lint", &repo]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        format!(
            "{repo}/.assent/policies: holds more than 1000 entries; assent reads at most 1000\n1 problem(s) in 1 file(s)\n"
        )
    );
}

#[test]
fn lint_format_json_reports_problems_and_warnings_as_one_document() {
    let (code, out, err) = assent(&["lint", GOOD, "--format", "json"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out,
        "{\"apiVersion\":\"assent/v1\",\"kind\":\"LintReport\",\"ok\":true,\"rules\":15,\"files\":2,\"problems\":[],\"warnings\":[]}\n"
    );
    let (code, out, err) = assent(&["lint", &broken("many-problems"), "--format", "json"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(report["ok"], false);
    // Every non-zero exit names its cause on stderr, in one line; the problems stay on stdout.
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: the policies in ") && err.contains(" do not load: "),
        "{err}"
    );
    // The same problems the text form prints, each with its file and line.
    let (_, text, _) = assent(&["lint", &broken("many-problems")], &[]);
    let from_json: Vec<String> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| match p["line"].as_u64() {
            Some(line) => format!(
                "{}:{line}: {}",
                p["file"].as_str().unwrap(),
                p["message"].as_str().unwrap()
            ),
            None => format!(
                "{}: {}",
                p["file"].as_str().unwrap(),
                p["message"].as_str().unwrap()
            ),
        })
        .collect();
    let text_lines: Vec<&str> = text.lines().filter(|l| l.contains(": ")).collect();
    assert_eq!(from_json, text_lines, "{out}");
    assert!(!from_json.is_empty());
    insta::assert_snapshot!(out);
}

/// `lint --format junit`: the same findings as the text form, one test case per policy file,
/// for GitLab's test report widget; markup in a message stays text.
#[test]
fn lint_junit_has_a_case_per_policy_file_failing_with_its_problems() {
    let repo = broken("many-problems");
    let (code, text, _) = assent(&["lint", &repo], &[]);
    assert_eq!(code, 1);
    let (code, junit, err) = assent(&["lint", &repo, "--format", "junit"], &[]);
    assert_eq!(code, 1, "{junit}{err}");
    assert!(
        junit.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
        "{junit}"
    );
    assert!(
        junit.contains("<testsuites name=\"assent lint\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\">"),
        "{junit}"
    );
    assert!(
        junit.contains(&format!(
            "<testcase name=\"{repo}/.assent/policies/topics.yaml loads\" classname=\"assent lint\""
        )),
        "{junit}"
    );
    assert!(
        junit.contains("message=\"9 problem(s); the first: "),
        "{junit}"
    );
    // Every problem line of the text form, escaped as XML text, and no raw markup of them.
    for line in text.lines().filter(|l| l.contains(".yaml:")) {
        let escaped = line
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&apos;");
        assert!(junit.contains(&escaped), "{line}\n{junit}");
    }
    assert!(err.starts_with("error: the policies in "), "{err}");

    let (code, junit, err) = assent(&["lint", GOOD, "--format", "junit"], &[]);
    assert_eq!(code, 0, "{junit}{err}");
    let cases = junit.matches("<testcase ").count();
    assert_eq!(cases, 2, "one case per policy file: {junit}");
    assert!(junit.contains("failures=\"0\""), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
}

/// A file of `.assent/policies/` that is not `*.yaml`/`*.yml` is read by neither lint nor a
/// run: lint says so instead of letting its rules vanish; notes and dotfiles pass silently.
#[test]
fn a_policy_folder_file_that_is_not_yaml_is_a_warning_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join(".assent/policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::copy(
        root().join(GOOD).join(".assent/policies/topics.yaml"),
        policies.join("topics.yaml"),
    )
    .unwrap();
    std::fs::write(policies.join("retention.json"), "{\"rules\": []}").unwrap();
    std::fs::write(policies.join("README.md"), "# our policies\n").unwrap();
    std::fs::write(policies.join(".gitkeep"), "").unwrap();
    let repo = dir.path().to_str().unwrap();
    let (code, out, err) = assent(&["lint", repo], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let warnings: Vec<&str> = out.lines().filter(|l| l.contains(": warning: ")).collect();
    assert!(
        warnings.contains(&format!(
            "{repo}/.assent/policies/retention.json: warning: not read: only *.yaml and *.yml files under .assent/policies are policies (a run ignores this file too); rename it, or move it out of the folder"
        ).as_str()),
        "{out}"
    );
    assert!(
        !out.contains("README.md") && !out.contains(".gitkeep"),
        "{out}"
    );
}
