//! The shipped CI templates run for real by a third-party runner, as a user's
//! `.gitlab-ci.yml` includes them: `gitlab-ci-local` (npm, version 4.64.1) validates the
//! expanded configuration against GitLab's published CI schema (`--json-schema-validation`),
//! interpolates the component's `spec: inputs`, applies `rules`, and runs the job's script
//! with the shell executor (`--force-shell-executor`), with the freshly built `assent` first
//! on `PATH`, against an in-process fake GitLab on loopback.
//!
//! Both forms are driven: the classic include (`include: local:`) with the variables of a
//! detached merge request pipeline (GitLab leaves the source/target branch SHAs empty there;
//! the source head is `CI_COMMIT_SHA`), and the CI/CD component (`include: component:` of the
//! project's own `templates/assent/template.yml` at the current commit, which is how GitLab
//! itself tests a component in its project) with the variables of a merged results pipeline.
//! For each: the MR pipeline's job publishes (threads and a verified summary on the fake),
//! keeps the receipt as an artifact, declares and writes the Code Quality report, a second MR pipeline makes zero writes, a push pipeline
//! does not run the job at all (zero requests), and a scheduled pipeline with
//! `ASSENT_SWEEP=true` runs only the sweep job, which finds nothing to heal. The CI
//! configuration project, laid out as its README says (the contents of `ci-templates/` at its
//! root), validates against the schema and runs its release jobs for version tags only.
//!
//! Prerequisites: `gitlab-ci-local` and `rsync` on `PATH`:
//!
//! ```sh
//! apt-get install -y rsync
//! npm install -g gitlab-ci-local@4.64.1   # 4.64.1 runs on Node.js 20; newer need Node.js 22
//! ```
//!
//! The tests are opt-in, so that `cargo test --workspace` passes on a fresh machine with the
//! Rust toolchain alone: they are `#[ignore]`d (cargo reports them as `ignored`, never `ok`)
//! and run with `cargo test --test it ci_local -- --ignored`, which `.ci/run` does after
//! installing both tools. Run that way without the tools, they FAIL, saying how to install
//! them: a missing tool never passes silently.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use assent_test_support as support;
use fake_gitlab::{FakeGitLab, fixtures};
use serde::Deserialize as _;
use serde_json::Value;

const INSTALL: &str = "apt-get install -y rsync && npm install -g gitlab-ci-local@4.64.1 \
     (4.64.1 runs on Node.js 20; newer versions need Node.js 22)";
/// The project the runner believes it is in: the fake's project path, on a made-up host.
const REMOTE: &str = "https://gitlab.example.com/group/sub/proj.git";

/// Panics, naming the install command, unless the runner and its helpers are installed.
fn require_runner() {
    let missing: Vec<&str> = [("gitlab-ci-local", "--version"), ("rsync", "--version")]
        .into_iter()
        .filter(|(tool, arg)| {
            !Command::new(tool)
                .arg(arg)
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|(tool, _)| tool)
        .collect();
    assert!(
        missing.is_empty(),
        "{} not found on PATH. Install with: {INSTALL}",
        missing.join(" and ")
    );
}

#[derive(Clone, Copy, Debug)]
enum Form {
    /// `include: local: ci-templates/assent.gitlab-ci.yml`.
    Classic,
    /// `include: component: …/assent@$CI_COMMIT_SHA` with `inputs:`.
    Component,
    /// `ci-templates/examples/configs.gitlab-ci.yml`, the gated project's whole
    /// configuration, with its component include pointed at this checkout.
    Example,
}

/// A user's project: a git repository whose `.gitlab-ci.yml` includes the template, with the
/// token stored as a runner variable (gitlab-ci-local's counterpart of a CI/CD variable).
struct Project {
    /// Also `HOME` of the runner, so no user configuration leaks in.
    root: tempfile::TempDir,
}

impl Project {
    fn dir(&self) -> PathBuf {
        self.root.path().join("project")
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn new(form: Form) -> Project {
        let root = tempfile::tempdir().unwrap();
        let project = Project { root };
        let dir = project.dir();
        std::fs::create_dir_all(project.home()).unwrap();
        let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci-templates");
        // The component where GitLab finds one in the project: templates/assent/template.yml.
        let copy_component = || {
            std::fs::create_dir_all(dir.join("templates/assent")).unwrap();
            std::fs::copy(
                templates.join("templates/assent/template.yml"),
                dir.join("templates/assent/template.yml"),
            )
            .unwrap();
        };
        let ci = match form {
            Form::Classic => {
                std::fs::create_dir_all(dir.join("ci-templates")).unwrap();
                std::fs::copy(
                    templates.join("assent.gitlab-ci.yml"),
                    dir.join("ci-templates/assent.gitlab-ci.yml"),
                )
                .unwrap();
                "include:\n  - local: ci-templates/assent.gitlab-ci.yml\n\n\
                 variables:\n  ASSENT_FAIL_ON: block\n"
                    .to_owned()
            }
            Form::Component => {
                copy_component();
                "include:\n  - component: $CI_SERVER_FQDN/$CI_PROJECT_PATH/assent@$CI_COMMIT_SHA\n    \
                 inputs:\n      version: \"0.1.0\"\n      fail_on: block\n"
                    .to_owned()
            }
            Form::Example => {
                copy_component();
                let example =
                    std::fs::read_to_string(templates.join("examples/configs.gitlab-ci.yml"))
                        .unwrap();
                let released = "$CI_SERVER_FQDN/platform/assent-ci/assent@0.1.0";
                assert!(
                    example.contains(released),
                    "the example includes the release"
                );
                example.replace(
                    released,
                    "$CI_SERVER_FQDN/$CI_PROJECT_PATH/assent@$CI_COMMIT_SHA",
                )
            }
        };
        std::fs::write(dir.join(".gitlab-ci.yml"), ci).unwrap();
        std::fs::write(dir.join(".gitignore"), "/.gitlab-ci-local*\n").unwrap();
        // The masked CI/CD variable of the real setup: read by gitlab-ci-local from this
        // untracked file, so the token is not on any command line.
        std::fs::write(
            dir.join(".gitlab-ci-local-variables.yml"),
            format!("ASSENT_TOKEN: {}\n", fixtures::BOT_TOKEN),
        )
        .unwrap();
        for args in [
            &["init", "-q", "-b", "feature"][..],
            &["config", "user.name", "Example User"],
            &["config", "user.email", "user@example.invalid"],
            &["remote", "add", "origin", REMOTE],
            &["add", "-A"],
            &["commit", "-q", "-m", "Include assent"],
            &["update-ref", "refs/remotes/origin/main", "HEAD"],
            &[
                "symbolic-ref",
                "refs/remotes/origin/HEAD",
                "refs/remotes/origin/main",
            ],
        ] {
            let out = project.command("git").args(args).output().unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        }
        project
    }

    /// `program` in the project directory with a clean environment: the system `PATH` behind
    /// the directory of the freshly built `assent`, and `HOME` in the temporary tree.
    fn command(&self, program: &str) -> Command {
        let bin = Path::new(env!("CARGO_BIN_EXE_assent")).parent().unwrap();
        let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        let mut cmd = Command::new(program);
        cmd.current_dir(self.dir())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home());
        cmd
    }

    /// `gitlab-ci-local` with GitLab's schema validation and the shell executor.
    fn runner(&self, vars: &[(&str, String)], extra: &[&str]) -> Command {
        let mut cmd = self.command("gitlab-ci-local");
        cmd.args([
            "--json-schema-validation",
            "--force-shell-executor",
            "--no-color",
            "--ignore-predefined-vars",
            "CI_PIPELINE_SOURCE,CI_COMMIT_SHA,CI_API_V4_URL,CI_PROJECT_ID,CI_COMMIT_BRANCH,CI_DEFAULT_BRANCH",
        ]);
        for (k, v) in vars {
            cmd.arg("--variable").arg(format!("{k}={v}"));
        }
        cmd.args(extra);
        cmd
    }

    /// Runs one pipeline with `vars`.
    fn pipeline(&self, vars: &[(&str, String)]) -> Output {
        self.runner(vars, &[]).output().unwrap()
    }

    /// The jobs of a pipeline with `vars` and their `when` after `rules`.
    fn jobs(&self, vars: &[(&str, String)]) -> Vec<(String, String)> {
        let out = self.runner(vars, &["--list-json"]).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        // gitlab-ci-local warns on stdout before the list about keywords it does not apply
        // (the component's `spec:inputs:regex`): the list is what follows.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let list_start = stdout.find("\n[").map_or(0, |i| i + 1);
        let list: Value = serde_json::from_str(&stdout[list_start..])
            .unwrap_or_else(|e| panic!("--list-json: {e}\n{}", text(&out)));
        list.as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["name"].as_str().unwrap().to_owned(),
                    j["when"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// The receipt as the runner kept it: the `assent` job's artifact.
    fn artifact(&self) -> PathBuf {
        self.dir()
            .join(".gitlab-ci-local/artifacts/assent/assent-receipt.json")
    }

    /// The Code Quality report the `assent` job wrote where its script ran (the project
    /// folder: the shell executor without isolation; gitlab-ci-local collects only `dotenv`
    /// reports, where GitLab uploads every declared one).
    fn code_quality_report(&self) -> PathBuf {
        self.dir().join("gl-code-quality-report.json")
    }

    /// The `assent` job as gitlab-ci-local expands it (`--preview`): includes, inputs and
    /// variables resolved.
    fn expanded_assent_job(&self, vars: &[(&str, String)]) -> serde_yaml::Value {
        let out = self.runner(vars, &["--preview"]).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let documents: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&stdout)
            .map(|d| serde_yaml::Value::deserialize(d).unwrap_or_default())
            .collect();
        documents
            .into_iter()
            .find_map(|d| d.get("assent").cloned())
            .unwrap_or_else(|| panic!("no assent job in the preview:\n{stdout}"))
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The variables GitLab sets in a merge request pipeline of the fake's MR !7.
fn mr_pipeline(fake: &FakeGitLab, form: Form) -> Vec<(&'static str, String)> {
    let mut vars = vec![
        ("CI_PIPELINE_SOURCE", "merge_request_event".to_owned()),
        ("CI_API_V4_URL", fake.base_url()),
        (
            "CI_MERGE_REQUEST_PROJECT_ID",
            fixtures::PROJECT_ID.to_string(),
        ),
        ("CI_MERGE_REQUEST_IID", fixtures::MR_IID.to_string()),
        (
            "CI_MERGE_REQUEST_DIFF_BASE_SHA",
            fixtures::BASE_SHA.to_owned(),
        ),
    ];
    match form {
        // Detached MR pipeline: the source head is the pipeline's commit; GitLab leaves the
        // source and target branch SHAs empty (assent reads the target tip once and pins it).
        Form::Classic => vars.push(("CI_COMMIT_SHA", fixtures::HEAD_SHA.to_owned())),
        // Merged results pipeline: CI_COMMIT_SHA is the merge commit (here the local commit,
        // which the component include needs); the branch SHAs are set.
        Form::Component | Form::Example => vars.extend([
            (
                "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA",
                fixtures::HEAD_SHA.to_owned(),
            ),
            (
                "CI_MERGE_REQUEST_TARGET_BRANCH_SHA",
                fixtures::TARGET_SHA.to_owned(),
            ),
        ]),
    }
    vars
}

fn read_receipt(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("receipt artifact {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn bot_notes_with(fake: &FakeGitLab, needle: &str) -> usize {
    fake.discussions(fixtures::PROJECT_ID, fixtures::MR_IID)
        .iter()
        .flat_map(|d| d.notes.iter())
        .filter(|n| n.author_id == fixtures::BOT_ID && !n.system && n.body.contains(needle))
        .count()
}

fn drive(form: Form) {
    require_runner();
    let fake = support::start_basic();
    support::seed_example_policies(&fake);
    let project = Project::new(form);
    let mr = mr_pipeline(&fake, form);

    // Rules: the job is in MR pipelines only; the sweep only in schedules.
    let planned = project.jobs(&mr);
    assert!(
        planned.contains(&("assent".into(), "on_success".into())),
        "{form:?}: {planned:?}"
    );
    assert!(
        planned.contains(&("assent-sweep".into(), "never".into())),
        "{form:?}: {planned:?}"
    );
    assert_eq!(fake.requests().len(), 0, "listing jobs contacted GitLab");

    // First MR pipeline: the job publishes and the receipt is kept.
    let first = project.pipeline(&mr);
    let log = text(&first);
    assert_eq!(first.status.code(), Some(0), "{form:?}: {log}");
    assert!(log.contains("PASS  assent"), "{form:?}: {log}");
    assert!(
        log.contains("assent: REVIEW for !7") && log.contains("rescan verified"),
        "{form:?}: the job's output: {log}"
    );
    assert!(
        !log.contains(fixtures::BOT_TOKEN),
        "{form:?}: token in the job log"
    );
    let receipt = read_receipt(&project.artifact());
    assert_eq!(receipt["outcome"], "published", "{receipt}");
    assert_eq!(receipt["mr"], fixtures::MR_IID, "{receipt}");
    assert_eq!(
        receipt["pins"]["sourceSha"],
        fixtures::HEAD_SHA,
        "{receipt}"
    );
    assert_eq!(
        receipt["pins"]["targetSha"],
        fixtures::TARGET_SHA,
        "{receipt}"
    );
    assert_eq!(receipt["rescan"]["verified"], true, "{receipt}");
    let findings = receipt["findings"].as_array().unwrap().len();
    assert!(findings > 0, "{receipt}");
    // docs/contract.md#code-quality: the job declares the Code Quality report and writes one entry per finding.
    let job = project.expanded_assent_job(&mr);
    assert_eq!(
        job["artifacts"]["reports"]["codequality"], "gl-code-quality-report.json",
        "{form:?}: {job:?}"
    );
    let report: Value = serde_json::from_slice(
        &std::fs::read(project.code_quality_report())
            .unwrap_or_else(|e| panic!("{form:?}: the Code Quality report: {e}")),
    )
    .unwrap();
    let fingerprints: Vec<String> = report
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("sha256:{}", e["fingerprint"].as_str().unwrap()))
        .collect();
    let occurrences: Vec<String> = receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["occurrence"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fingerprints, occurrences, "{form:?}: one entry per finding");
    assert_eq!(
        bot_notes_with(&fake, "\"kind\":\"finding\""),
        findings,
        "{form:?}: one thread per finding"
    );
    assert_eq!(
        bot_notes_with(&fake, "\"kind\":\"summary\""),
        1,
        "{form:?}: one summary"
    );
    assert_eq!(
        bot_notes_with(
            &fake,
            &format!("\"state\":\"verified\",\"head\":\"{}\"", fixtures::HEAD_SHA)
        ),
        1,
        "{form:?}: the summary is verified for the head"
    );
    let writes = fake.writes();
    assert!(writes > 0);
    assert_eq!(
        receipt["requests"]["writes"], writes,
        "{form:?}: the receipt counts every write the fake saw"
    );
    assert!(
        fake.pipelines(fixtures::PROJECT_ID).is_empty(),
        "{form:?}: no sweep ran"
    );

    // Second MR pipeline on the same head: nothing to do, zero writes.
    let second = project.pipeline(&mr);
    assert_eq!(second.status.code(), Some(0), "{form:?}: {}", text(&second));
    assert_eq!(fake.writes(), writes, "{form:?}: the rerun wrote");
    let receipt = read_receipt(&project.artifact());
    assert_eq!(receipt["outcome"], "published", "{receipt}");
    assert_eq!(receipt["requests"]["writes"], 0, "{receipt}");
    assert!(
        receipt["actions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["action"] == "leave-untouched"),
        "{receipt}"
    );

    // A push pipeline: the job is not in it, GitLab hears nothing.
    let push = vec![("CI_PIPELINE_SOURCE", "push".to_owned())];
    let planned = project.jobs(&push);
    assert!(
        planned.iter().all(|(_, when)| when == "never"),
        "{form:?}: {planned:?}"
    );
    std::fs::remove_dir_all(project.dir().join(".gitlab-ci-local/artifacts")).unwrap();
    let requests = fake.requests().len();
    let pushed = project.pipeline(&push);
    let log = text(&pushed);
    assert_eq!(pushed.status.code(), Some(0), "{form:?}: {log}");
    assert!(!log.contains("assent run"), "{form:?}: {log}");
    assert_eq!(fake.requests().len(), requests, "{form:?}: push pipeline");
    assert!(!project.artifact().exists());

    // A schedule an MR's author sets up on their own branch runs nothing: a passing pipeline
    // there could become the MR's head pipeline.
    let branch_schedule = vec![
        ("CI_PIPELINE_SOURCE", "schedule".to_owned()),
        ("ASSENT_SWEEP", "true".to_owned()),
        ("CI_COMMIT_BRANCH", "shrink-orders".to_owned()),
        ("CI_DEFAULT_BRANCH", "main".to_owned()),
    ];
    let planned = project.jobs(&branch_schedule);
    assert!(
        planned.iter().all(|(_, when)| when == "never"),
        "{form:?}: {planned:?}"
    );

    // A scheduled pipeline of the default branch with ASSENT_SWEEP=true: the sweep runs
    // instead, finds the MR verified for its head and writes nothing; the publishing job
    // stays out.
    let schedule = vec![
        ("CI_PIPELINE_SOURCE", "schedule".to_owned()),
        ("ASSENT_SWEEP", "true".to_owned()),
        ("CI_COMMIT_BRANCH", "main".to_owned()),
        ("CI_DEFAULT_BRANCH", "main".to_owned()),
        ("CI_API_V4_URL", fake.base_url()),
        ("CI_PROJECT_ID", fixtures::PROJECT_ID.to_string()),
    ];
    let planned = project.jobs(&schedule);
    assert!(
        planned.contains(&("assent".into(), "never".into()))
            && planned.contains(&("assent-sweep".into(), "on_success".into())),
        "{form:?}: {planned:?}"
    );
    let swept = project.pipeline(&schedule);
    let log = text(&swept);
    assert_eq!(swept.status.code(), Some(0), "{form:?}: {log}");
    assert!(log.contains("PASS  assent-sweep"), "{form:?}: {log}");
    assert!(log.contains("healed: 0"), "{form:?}: {log}");
    assert!(!log.contains("assent run"), "{form:?}: {log}");
    assert!(
        !log.contains(fixtures::BOT_TOKEN),
        "{form:?}: token in the log"
    );
    assert_eq!(fake.writes(), writes, "{form:?}: the sweep wrote");
    assert!(!project.artifact().exists());
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
}

#[test]
#[ignore = "needs gitlab-ci-local 4.64.1 and rsync; run with `cargo test --test it ci_local -- --ignored` (.ci/run installs both and does)"]
fn classic_include_runs_in_mr_pipelines_only_and_a_rerun_writes_nothing() {
    drive(Form::Classic);
}

#[test]
#[ignore = "needs gitlab-ci-local 4.64.1 and rsync; run with `cargo test --test it ci_local -- --ignored` (.ci/run installs both and does)"]
fn component_runs_in_mr_pipelines_only_and_a_rerun_writes_nothing() {
    drive(Form::Component);
}

#[test]
#[ignore = "needs gitlab-ci-local 4.64.1 and rsync; run with `cargo test --test it ci_local -- --ignored` (.ci/run installs both and does)"]
fn the_example_configuration_passes_the_schema_and_runs_what_it_says_where_it_says() {
    require_runner();
    let project = Project::new(Form::Example);
    let mr = vec![
        ("CI_PIPELINE_SOURCE", "merge_request_event".to_owned()),
        ("CI_COMMIT_BRANCH", String::new()),
        ("CI_DEFAULT_BRANCH", "main".to_owned()),
    ];
    let planned = project.jobs(&mr);
    let when = |planned: &[(String, String)], job: &str| {
        planned
            .iter()
            .find(|(name, _)| name == job)
            .map(|(_, when)| when.clone())
            .unwrap_or_else(|| panic!("no job {job}: {planned:?}"))
    };
    assert_eq!(when(&planned, "assent"), "on_success", "{planned:?}");
    assert_eq!(
        when(&planned, "assent-codequality-baseline"),
        "never",
        "{planned:?}"
    );
    assert_eq!(when(&planned, "assent-sweep"), "never", "{planned:?}");
    // No .assent/policies in this checkout: the policies job is left out.
    assert_eq!(when(&planned, "policies"), "never", "{planned:?}");

    // A push to the default branch: the baseline report, and nothing of assent's.
    let push = vec![
        ("CI_PIPELINE_SOURCE", "push".to_owned()),
        ("CI_COMMIT_BRANCH", "main".to_owned()),
        ("CI_DEFAULT_BRANCH", "main".to_owned()),
    ];
    let planned = project.jobs(&push);
    assert_eq!(
        when(&planned, "assent-codequality-baseline"),
        "on_success",
        "{planned:?}"
    );
    assert_eq!(when(&planned, "assent"), "never", "{planned:?}");
    let ran = project.pipeline(&push);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let report = project
        .dir()
        .join(".gitlab-ci-local/artifacts/assent-codequality-baseline/gl-code-quality-report.json");
    let report = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}: {}", text(&ran)));
    assert_eq!(
        serde_json::from_str::<Value>(&report).unwrap(),
        serde_json::json!([])
    );

    // The doctor's rule holds for it: no pipeline on an MR's branch but the MR's.
    let example = std::fs::read_to_string(project.dir().join(".gitlab-ci.yml")).unwrap();
    assert_eq!(assent::doctor::enforcement::workflow_gap(&example), None);
}

/// The CI configuration project as its README says to lay it out: the *contents* of
/// `ci-templates/` at its root, its own `.gitlab-ci.yml` being the release pipeline.
fn config_project() -> Project {
    let root = tempfile::tempdir().unwrap();
    let project = Project { root };
    let dir = project.dir();
    std::fs::create_dir_all(project.home()).unwrap();
    let status = Command::new("cp")
        .arg("-R")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("ci-templates/."))
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(dir.join(".gitlab-ci.yml").is_file(), "dotfiles are copied");
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", "Example User"],
        &["config", "user.email", "user@example.invalid"],
        &[
            "remote",
            "add",
            "origin",
            "https://gitlab.example.com/platform/assent-ci.git",
        ],
        &["add", "-A"],
        &["commit", "-q", "-m", "assent"],
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
        &[
            "symbolic-ref",
            "refs/remotes/origin/HEAD",
            "refs/remotes/origin/main",
        ],
    ] {
        let out = project.command("git").args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
    project
}

#[test]
#[ignore = "needs gitlab-ci-local 4.64.1 and rsync; run with `cargo test --test it ci_local -- --ignored` (.ci/run installs both and does)"]
fn the_release_pipeline_runs_for_version_tags_only() {
    require_runner();
    let project = config_project();
    let pipeline = |vars: &[(&str, &str)]| -> Vec<(String, String)> {
        let mut cmd = project.command("gitlab-ci-local");
        cmd.args([
            "--json-schema-validation",
            "--no-color",
            "--ignore-predefined-vars",
            "CI_PIPELINE_SOURCE,CI_COMMIT_TAG",
            "--list-json",
        ]);
        for (k, v) in vars {
            cmd.arg("--variable").arg(format!("{k}={v}"));
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{vars:?}: {}", text(&out));
        // gitlab-ci-local warns on stdout before the list about keywords it does not apply
        // (the component's `spec:inputs:regex`): the list is what follows.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let list_start = stdout.find("\n[").map_or(0, |i| i + 1);
        let list: Value = serde_json::from_str(&stdout[list_start..])
            .unwrap_or_else(|e| panic!("--list-json: {e}\n{}", text(&out)));
        list.as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["name"].as_str().unwrap().to_owned(),
                    j["when"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let both = |when: &str| {
        vec![
            ("assent-image".to_owned(), when.to_owned()),
            ("assent-release".to_owned(), when.to_owned()),
        ]
    };
    for tag in ["0.1.0", "0.1.0-2", "12.0.3"] {
        assert_eq!(
            pipeline(&[("CI_PIPELINE_SOURCE", "push"), ("CI_COMMIT_TAG", tag)]),
            both("on_success"),
            "tag {tag}"
        );
    }
    for tag in ["v0.1.0", "latest", "0.1", "0.1.0 "] {
        assert_eq!(
            pipeline(&[("CI_PIPELINE_SOURCE", "push"), ("CI_COMMIT_TAG", tag)]),
            both("never"),
            "tag {tag:?} is not a version"
        );
    }
    for source in ["push", "merge_request_event", "schedule", "web"] {
        assert_eq!(
            pipeline(&[("CI_PIPELINE_SOURCE", source), ("CI_COMMIT_TAG", "")]),
            both("never"),
            "{source} pipeline without a tag"
        );
    }
}
