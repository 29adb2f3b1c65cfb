//! The shipped CI templates: both forms parse, and the properties the gate depends on hold
//! (MR pipelines only, the per-MR resource group, no checkout, the receipt kept always, the
//! Code Quality report written and declared, the token from a variable, the image pinned,
//! the job failing on REVIEW and never allowed to fail, retried on exit 3 only, the bot's
//! approval off unless asked for), including that `assent doctor`'s own evidence rules
//! accept the template's job. The release pipeline runs on version tags only, pushes the
//! image the templates default to, and never puts a secret on a command line or in the log
//! (its script is run here against a stand-in `docker`). The component project's README
//! names every shipped file and documents every input.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use assent::doctor::enforcement::{AssentJob, assent_jobs};
use assent::doctor::single_writer::{expand_key, job_resource_group};
use serde::Deserialize;
use serde_yaml::Value;

/// The CI configuration project's path the docs use; the templates' default image lives in
/// its registry.
const CONFIG_PROJECT: &str = "platform/assent-ci";

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The component's two documents: the `spec` header and the body text.
fn component() -> (Value, String) {
    let text = read("ci-templates/templates/assent/template.yml");
    let (head, body) = text
        .split_once("\n---\n")
        .expect("spec header, then ---, then jobs");
    let spec: Value = serde_yaml::from_str(head).unwrap();
    (spec, body.to_owned())
}

fn inputs(spec: &Value) -> &serde_yaml::Mapping {
    spec["spec"]["inputs"].as_mapping().expect("spec: inputs")
}

/// Interpolates `$[[ inputs.name ]]` with each input's default (GitLab does this at include
/// time).
fn interpolate(spec: &Value, body: &str) -> String {
    interpolate_with(spec, body, &[])
}

/// [`interpolate`], with `given` inputs instead of their defaults.
fn interpolate_with(spec: &Value, body: &str, given: &[(&str, &str)]) -> String {
    let mut out = body.to_owned();
    for (name, value) in given {
        assert!(inputs(spec).contains_key(*name), "no input {name} to give");
        out = out.replace(&format!("$[[ inputs.{name} ]]"), value);
    }
    for (name, def) in inputs(spec) {
        let name = name.as_str().unwrap();
        let default = match &def["default"] {
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            other => panic!("input {name} has no scalar default: {other:?}"),
        };
        out = out.replace(&format!("$[[ inputs.{name} ]]"), &default);
    }
    assert!(!out.contains("$[["), "undeclared input left:\n{out}");
    out
}

fn used_inputs(body: &str) -> BTreeSet<String> {
    body.split("$[[ inputs.")
        .skip(1)
        .map(|rest| rest.split(' ').next().unwrap().to_owned())
        .collect()
}

/// The properties of the publishing job, whichever form it comes from.
/// The image's entrypoint is the assent binary (ci-templates/Dockerfile); a GitLab runner runs
/// the job script through the image's shell only when the job empties the entrypoint.
fn assert_entrypoint_overridden(job: &Value, form: &str) {
    assert_eq!(
        job["image"]["entrypoint"],
        serde_yaml::from_str::<Value>("[\"\"]").unwrap(),
        "{form}: the job overrides the image's entrypoint"
    );
}

fn assert_publisher(job: &Value, form: &str) {
    assert_eq!(
        job["resource_group"], "assent-mr-$CI_MERGE_REQUEST_IID",
        "{form}: per-MR resource group"
    );
    assert_entrypoint_overridden(job, form);
    assert_token_environment(job, form);
    assert_eq!(
        job["variables"]["GIT_STRATEGY"], "none",
        "{form}: no checkout"
    );
    assert_eq!(
        job["artifacts"]["when"], "always",
        "{form}: receipt kept on failure"
    );
    let paths: Vec<&str> = job["artifacts"]["paths"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(paths.contains(&"assent-receipt.json"), "{form}");
    // docs/contract.md#code-quality: the findings in GitLab's Code Quality widget and diff gutter.
    assert_eq!(
        job["artifacts"]["reports"]["codequality"], "gl-code-quality-report.json",
        "{form}: the Code Quality report is declared"
    );
    assert_eq!(job["interruptible"], false, "{form}");
    let rules = job["rules"].as_sequence().expect("rules");
    assert!(!rules.is_empty());
    for rule in rules {
        let cond = rule["if"]
            .as_str()
            .unwrap_or_else(|| panic!("{form}: a rule without if runs everywhere"));
        assert!(
            cond.contains("$CI_PIPELINE_SOURCE == \"merge_request_event\""),
            "{form}: MR pipelines only: {cond}"
        );
        assert_ne!(rule["when"], "always");
    }
    assert!(job.get("only").is_none() && job.get("except").is_none());
    assert_retries_on_exit_3_only(job, form);
    let script: Vec<&str> = job["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let run = script
        .iter()
        .find(|l| l.contains("assent run"))
        .expect("assent run");
    assert!(
        run.contains("--receipt assent-receipt.json"),
        "{form}: {run}"
    );
    assert!(
        run.contains("--codequality gl-code-quality-report.json"),
        "{form}: the run writes the report the job declares: {run}"
    );
    assert!(run.contains("--fail-on"), "{form}: {run}");
    assert!(
        script[0].starts_with("export ASSENT_TOKEN="),
        "{form}: token from a variable"
    );
    assert!(
        script
            .iter()
            .all(|l| !l.contains("glpat") && !l.contains("set -x")),
        "{form}: no token, no tracing"
    );
    assert!(
        script
            .iter()
            .filter(|l| l.contains("assent doctor"))
            .all(|l| l.contains("|| true")),
        "{form}: doctor reports, never fails the job"
    );
}

/// Exit 3 (a forge or runtime failure, docs/contract.md#commands) is retried twice; nothing else is: a retry
/// of exit 1 (the gate) or 2 (configuration) gives the same answer.
/// The job declares the environment the token's variable is scoped to, without deploying:
/// only the assent jobs of a pipeline read the token.
fn assert_token_environment(job: &Value, form: &str) {
    assert_eq!(
        job["environment"]["name"], "assent",
        "{form}: the token's variable is scoped to the environment assent"
    );
    assert_eq!(
        job["environment"]["action"], "access",
        "{form}: reads the environment's variables and creates no deployment"
    );
}

fn assert_retries_on_exit_3_only(job: &Value, form: &str) {
    let retry = &job["retry"];
    assert_eq!(retry["max"], 2, "{form}: {retry:?}");
    assert_eq!(
        retry["exit_codes"],
        serde_yaml::from_str::<Value>("[3]").unwrap(),
        "{form}: {retry:?}"
    );
    assert!(
        retry.get("when").is_none(),
        "{form}: `when` would retry other failures too: {retry:?}"
    );
}

fn assert_sweep(job: &Value, form: &str) {
    assert_entrypoint_overridden(job, form);
    let rules = job["rules"].as_sequence().unwrap();
    assert!(
        rules
            .iter()
            .all(|r| r["if"].as_str().unwrap().contains("\"schedule\"")),
        "{form}"
    );
    assert_eq!(
        job["resource_group"], "assent-sweep",
        "{form}: two sweeps never overlap, and never share a group with an MR job"
    );
    assert_eq!(job["variables"]["GIT_STRATEGY"], "none");
    assert_retries_on_exit_3_only(job, form);
    assert_token_environment(job, form);
    // The number to watch without serve: `healed` as a GitLab metrics report
    // (`artifacts:reports:metrics`, gitlabhq `doc/ci/testing/metrics_reports.md`), and the
    // JSON report kept, both also after a failed sweep.
    let script = script_text(job);
    assert!(
        script.contains("--metrics assent-sweep.metrics.txt")
            && script.contains("--report assent-sweep.json"),
        "{form}: the sweep writes the files the job declares: {script}"
    );
    assert_eq!(
        job["artifacts"]["reports"]["metrics"], "assent-sweep.metrics.txt",
        "{form}"
    );
    assert_eq!(job["artifacts"]["when"], "always", "{form}");
    let paths = job["artifacts"]["paths"].as_sequence().unwrap();
    assert!(
        paths.iter().any(|p| p == "assent-sweep.json"),
        "{form}: {paths:?}"
    );
}

#[test]
fn component_declares_the_inputs_the_issue_names() {
    let (spec, body) = component();
    let declared: BTreeSet<String> = inputs(&spec)
        .keys()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    for name in [
        "stage",
        "image",
        "version",
        "fail_on",
        "token_variable",
        "extra_args",
        "approve",
        "policy_project",
    ] {
        assert!(declared.contains(name), "missing input {name}");
        assert!(
            inputs(&spec)[name]["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "input {name} is undocumented"
        );
    }
    assert_eq!(
        used_inputs(&body),
        declared,
        "every input used, none undeclared"
    );
    let fail_on: Vec<&str> = inputs(&spec)["fail_on"]["options"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(fail_on, ["block", "review", "never"]);
    assert_eq!(
        inputs(&spec)["fail_on"]["default"],
        "review",
        "the job fails on REVIEW unless told otherwise (docs/contract.md#enforcement)"
    );
    assert_eq!(inputs(&spec)["approve"]["default"], false);
    assert_eq!(inputs(&spec)["approve"]["type"], "boolean");
    assert_ne!(inputs(&spec)["version"]["default"], "latest");
}

#[test]
fn no_template_offers_a_policy_folder_setting() {
    // assent/v1 reads `.assent/policies/` on the target branch and nothing else (docs/contract.md#desired-state); a
    // setting that nothing reads would suggest otherwise.
    let (spec, _) = component();
    assert!(!inputs(&spec).contains_key("policy_dir"));
    for file in shipped_files() {
        let text = read(&format!("ci-templates/{file}"));
        for dead in ["policy_dir", "ASSENT_POLICY_DIR"] {
            assert!(!text.contains(dead), "ci-templates/{file} mentions {dead}");
        }
    }
    for doc in ["docs/setup.md", "docs/run.md", "README.md"] {
        assert!(!read(doc).contains("ASSENT_POLICY_DIR"), "{doc}");
    }
}

#[test]
fn component_job_has_every_required_property() {
    let (spec, body) = component();
    let doc: Value = serde_yaml::from_str(&interpolate(&spec, &body)).unwrap();
    let job = &doc["assent"];
    assert_publisher(job, "component");
    assert_sweep(&doc["assent-sweep"], "component");
    let image = job["image"]["name"].as_str().unwrap();
    let repo = inputs(&spec)["image"]["default"].as_str().unwrap();
    let version = inputs(&spec)["version"]["default"].as_str().unwrap();
    assert_eq!(
        image,
        format!("{repo}:{version}"),
        "image pinned by the version input"
    );
    let header = read("ci-templates/templates/assent/template.yml");
    for doc_word in [
        "masked",
        "not protected",
        "Developer",
        "api",
        "protected CI configuration project",
    ] {
        assert!(
            header.contains(doc_word),
            "the template documents {doc_word:?}"
        );
    }
}

#[test]
fn classic_include_has_every_required_property() {
    let text = read("ci-templates/assent.gitlab-ci.yml");
    let doc: Value = serde_yaml::from_str(&text).unwrap();
    assert_publisher(&doc["assent"], "classic");
    assert_sweep(&doc["assent-sweep"], "classic");
    assert_eq!(doc["assent"]["image"]["name"], "$ASSENT_IMAGE");
    let vars = doc["variables"].as_mapping().unwrap();
    for (name, v) in vars {
        assert!(
            v["description"].as_str().is_some_and(|d| !d.is_empty()),
            "variable {name:?} is undocumented"
        );
    }
    let image = doc["variables"]["ASSENT_IMAGE"]["value"].as_str().unwrap();
    assert!(
        !image.ends_with(":latest") && image.contains(':'),
        "pinned: {image}"
    );
    for doc_word in [
        "ASSENT_TOKEN",
        "masked",
        "not protected",
        "Developer",
        "api",
    ] {
        assert!(
            text.contains(doc_word),
            "the include documents {doc_word:?}"
        );
    }
}

#[test]
fn both_forms_default_to_the_image_the_release_pipeline_pushes() {
    // The release pipeline of the CI configuration project pushes `$CI_REGISTRY_IMAGE:<tag>`,
    // which for the project at CONFIG_PROJECT is `$CI_REGISTRY/<CONFIG_PROJECT>:<tag>`. The
    // templates must name it through `$CI_REGISTRY`: in a gated project's pipeline
    // `$CI_REGISTRY_IMAGE` is the gated project's own registry, where nothing is pushed.
    let (spec, _) = component();
    let repo = inputs(&spec)["image"]["default"].as_str().unwrap();
    let version = inputs(&spec)["version"]["default"].as_str().unwrap();
    assert_eq!(repo, format!("$CI_REGISTRY/{CONFIG_PROJECT}"));
    let classic: Value = serde_yaml::from_str(&read("ci-templates/assent.gitlab-ci.yml")).unwrap();
    assert_eq!(
        classic["variables"]["ASSENT_IMAGE"]["value"],
        format!("{repo}:{version}")
    );
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "the templates default to the release they ship with"
    );
    let release = release_jobs();
    let script = script_text(&release["assent-image"]);
    assert!(
        script.contains("docker push \"$CI_REGISTRY_IMAGE:$CI_COMMIT_TAG\""),
        "{script}"
    );
    assert!(
        script.contains("--tag \"$CI_REGISTRY_IMAGE:$CI_COMMIT_TAG\""),
        "{script}"
    );
    for doc in ["ci-templates/README.md", "docs/setup.md"] {
        assert!(
            read(doc).contains(CONFIG_PROJECT),
            "{doc} uses {CONFIG_PROJECT}, the path the default image assumes"
        );
    }
}

#[test]
fn the_dockerfile_builds_a_static_binary_that_does_not_run_as_root() {
    let dockerfile = read("ci-templates/Dockerfile");
    assert!(dockerfile.contains("-alpine AS build"), "a musl builder");
    assert!(dockerfile.contains("cargo build --release --locked --bin assent"));
    assert!(
        dockerfile.contains("USER 65534"),
        "the image does not run as root"
    );
    // A Kubernetes `args: [serve, …]` (deploy/kubernetes) and `docker run IMAGE serve` need the
    // binary as the entrypoint; without it the container runs `serve` as a program.
    assert!(
        dockerfile.contains("ENTRYPOINT [\"assent\"]"),
        "the image's entrypoint is the assent binary"
    );
    assert!(
        dockerfile.contains("EXPOSE 8080"),
        "serve's port is exposed"
    );
    let ignore = read("ci-templates/Dockerfile.dockerignore");
    assert!(
        ignore.lines().any(|l| l == "target"),
        "a checkout's target/ stays out of the build context"
    );
    assert!(
        !ignore
            .lines()
            .any(|l| l.trim_end_matches('/') == "tests" || l.starts_with("tests/fake_gitlab")),
        "the workspace member tests/fake_gitlab must stay in the context"
    );
}

#[test]
fn doctors_evidence_rule_accepts_the_shipped_job() {
    #[derive(Deserialize)]
    struct Job {
        resource_group: String,
    }
    let (spec, body) = component();
    for (form, text) in [
        ("component", interpolate(&spec, &body)),
        ("classic", read("ci-templates/assent.gitlab-ci.yml")),
    ] {
        let configured = job_resource_group(&text, "assent").unwrap().unwrap();
        assert_eq!(expand_key(&configured, 7).unwrap(), "assent-mr-7", "{form}");
        let job: Job =
            serde_yaml::from_value(serde_yaml::from_str::<Value>(&text).unwrap()["assent"].clone())
                .unwrap();
        assert_eq!(job.resource_group, configured);
    }
}

/// The one `assent run` job of a configuration, as doctor's enforcement rule reads it.
fn the_assent_job(text: &str, form: &str) -> AssentJob {
    let jobs = assent_jobs(text).unwrap();
    assert_eq!(jobs.len(), 1, "{form}: {jobs:?}");
    jobs.into_iter().next().unwrap()
}

#[test]
fn both_forms_fail_on_review_by_default_and_are_never_allowed_to_fail() {
    let (spec, body) = component();
    for (form, text) in [
        ("component", interpolate(&spec, &body)),
        ("classic", read("ci-templates/assent.gitlab-ci.yml")),
    ] {
        let doc: Value = serde_yaml::from_str(&text).unwrap();
        let job = &doc["assent"];
        assert!(job.get("allow_failure").is_none(), "{form}: allow_failure");
        assert!(job.get("when").is_none(), "{form}: when");
        for rule in job["rules"].as_sequence().unwrap() {
            assert!(rule.get("allow_failure").is_none(), "{form}: {rule:?}");
            assert!(rule.get("when").is_none(), "{form}: {rule:?}");
        }
        let assent = the_assent_job(&text, form);
        assert_eq!(assent.name, "assent");
        assert_eq!(assent.fail_on, Ok("review".to_owned()), "{form}");
        assert_eq!(assent.failure_escape, None, "{form}");
        assert_eq!(
            assent.approve,
            Ok(false),
            "{form}: approve is off by default"
        );
    }
    let classic: Value = serde_yaml::from_str(&read("ci-templates/assent.gitlab-ci.yml")).unwrap();
    assert_eq!(classic["variables"]["ASSENT_FAIL_ON"]["value"], "review");
    assert_eq!(classic["variables"]["ASSENT_APPROVE"]["value"], "false");
}

#[test]
fn the_policy_project_input_reaches_assent_run_and_is_off_by_default() {
    let (spec, body) = component();
    assert_eq!(inputs(&spec)["policy_project"]["default"], "");
    let doc: Value = serde_yaml::from_str(&interpolate_with(&spec, &body, &[])).unwrap();
    assert_eq!(
        doc["assent"]["variables"]["ASSENT_POLICY_PROJECT"], "",
        "empty: assent run reads no central project"
    );
    let text = interpolate_with(
        &spec,
        &body,
        &[("policy_project", "platform/policies@main")],
    );
    let doc: Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(
        doc["assent"]["variables"]["ASSENT_POLICY_PROJECT"],
        "platform/policies@main"
    );
    let classic: Value = serde_yaml::from_str(&read("ci-templates/assent.gitlab-ci.yml")).unwrap();
    assert_eq!(classic["variables"]["ASSENT_POLICY_PROJECT"]["value"], "");
}

#[test]
fn the_approve_input_turns_on_the_bots_approval() {
    let (spec, body) = component();
    let text = interpolate_with(&spec, &body, &[("approve", "true")]);
    let job = the_assent_job(&text, "component");
    assert_eq!(job.approve, Ok(true));
    let doc: Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(doc["assent"]["variables"]["ASSENT_APPROVE"], "true");

    // Classic: the variable, set to true where the template is included.
    let classic = read("ci-templates/assent.gitlab-ci.yml").replace(
        "ASSENT_APPROVE:\n    value: \"false\"",
        "ASSENT_APPROVE:\n    value: \"true\"",
    );
    assert_ne!(classic, read("ci-templates/assent.gitlab-ci.yml"));
    assert_eq!(the_assent_job(&classic, "classic").approve, Ok(true));

    // Asking to fail on block only is still possible, and doctor sees it.
    let text = interpolate_with(&spec, &body, &[("fail_on", "block")]);
    assert_eq!(
        the_assent_job(&text, "component").fail_on,
        Ok("block".to_owned())
    );
}

/// Every file under `ci-templates/`, relative to it: what a component project's root holds.
fn shipped_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_str().unwrap().replace('\\', "/"));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci-templates");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

/// The release pipeline's jobs, as the component project's own `.gitlab-ci.yml` includes them.
fn release_jobs() -> Value {
    let own: Value = serde_yaml::from_str(&read("ci-templates/.gitlab-ci.yml")).unwrap();
    assert_eq!(
        own["include"],
        serde_yaml::from_str::<Value>("[{local: release.gitlab-ci.yml}]").unwrap(),
        "the component project's pipeline is the release pipeline"
    );
    serde_yaml::from_str(&read("ci-templates/release.gitlab-ci.yml")).unwrap()
}

/// A job's script as the runner runs it: its entries in order.
fn script_text(job: &Value) -> String {
    job["script"]
        .as_sequence()
        .expect("script")
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_release_pipeline_runs_on_version_tags_only() {
    let doc = release_jobs();
    let jobs = doc.as_mapping().unwrap();
    let names: BTreeSet<&str> = jobs.keys().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["assent-image", "assent-release"]),
        "no global keys: the file is included into the project's own pipeline"
    );
    for (name, job) in jobs {
        let rules = job["rules"].as_sequence().expect("rules");
        assert!(!rules.is_empty(), "{name:?}");
        for rule in rules {
            let cond = rule["if"].as_str().unwrap_or_else(|| {
                panic!("{name:?}: a rule without if runs in every pipeline: {rule:?}")
            });
            assert!(
                cond.starts_with("$CI_COMMIT_TAG =~ /^"),
                "{name:?}: tag pipelines only: {cond}"
            );
            assert!(rule.get("when").is_none(), "{name:?}: {rule:?}");
        }
        assert!(job.get("only").is_none() && job.get("except").is_none());
        assert!(job.get("when").is_none(), "{name:?}");
    }
    let image = &doc["assent-image"];
    assert_eq!(image["variables"]["GIT_SUBMODULE_STRATEGY"], "recursive");
    assert_eq!(
        image["variables"]["DOCKER_TLS_CERTDIR"], "/certs",
        "TLS to the dind service"
    );
    let cli = image["image"].as_str().unwrap();
    let dind = image["services"][0].as_str().unwrap();
    assert!(
        cli.starts_with("docker:") && !cli.contains("latest"),
        "{cli}"
    );
    assert_eq!(
        dind,
        cli.replace("-cli", "-dind"),
        "client and daemon of one version"
    );
    let release = &doc["assent-release"];
    assert_eq!(
        release["needs"],
        serde_yaml::from_str::<Value>("[assent-image]").unwrap(),
        "a component version is released only once its image is pushed"
    );
    assert_eq!(release["release"]["tag_name"], "$CI_COMMIT_TAG");
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("ci-templates")
            .join(
                script_text(image)
                    .split("--file ")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
            )
            .is_file(),
        "the Dockerfile the job builds is shipped next to it"
    );
}

#[test]
fn the_release_pipeline_never_puts_a_secret_on_a_command_line_or_in_the_log() {
    let doc = release_jobs();
    for (name, job) in doc.as_mapping().unwrap() {
        let script = script_text(job);
        assert!(
            !script.contains("set -x"),
            "{name:?}: tracing prints secrets"
        );
        for line in script.lines() {
            for secret in ["CI_REGISTRY_PASSWORD", "CI_JOB_TOKEN", "ASSENT_TOKEN"] {
                if line.contains(secret) {
                    assert!(
                        line.starts_with(&format!("printf '%s' \"${secret}\" | docker login "))
                            && line.contains("--password-stdin"),
                        "{name:?}: {secret} may only reach docker login on stdin: {line}"
                    );
                }
            }
            assert!(
                !line.contains(" -p ") && !line.contains("--password "),
                "{name:?}: a password on a command line: {line}"
            );
        }
    }
}

/// A stand-in `docker` that records its arguments, one call per line, and what `login` reads
/// on stdin.
struct FakeDocker {
    dir: tempfile::TempDir,
}

impl FakeDocker {
    fn new() -> FakeDocker {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let docker = bin.join("docker");
        std::fs::write(
            &docker,
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$FAKE_DOCKER_DIR/calls\"\n\
             if [ \"$1\" = login ]; then cat > \"$FAKE_DOCKER_DIR/stdin\"; fi\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir(dir.path().join("project")).unwrap();
        FakeDocker { dir }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    fn stdin(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stdin")).unwrap_or_default()
    }

    /// Runs `job`'s script as a runner would (`sh -e`, the job's variables and GitLab's
    /// predefined ones for a tag pipeline) in the project directory.
    fn run(&self, job: &Value, tag: &str) -> std::process::Output {
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in job["variables"].as_mapping().unwrap() {
            vars.insert(
                k.as_str().unwrap().to_owned(),
                v.as_str().unwrap().to_owned(),
            );
        }
        let path = format!("{}:/usr/bin:/bin", self.dir.path().join("bin").display());
        Command::new("sh")
            .args(["-e", "-c", &script_text(job)])
            .current_dir(self.project())
            .env_clear()
            .envs(vars)
            .env("PATH", path)
            .env("FAKE_DOCKER_DIR", self.dir.path())
            .env("CI_COMMIT_TAG", tag)
            .env("CI_REGISTRY", "registry.example.com")
            .env(
                "CI_REGISTRY_IMAGE",
                "registry.example.com/platform/assent-ci",
            )
            .env("CI_REGISTRY_USER", "gitlab-ci-token")
            .env("CI_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
            .output()
            .unwrap()
    }
}

const REGISTRY_PASSWORD: &str = "glcbt-64_registry-secret-0123456789";

fn with_source(fake: &FakeDocker) {
    let source = fake.project().join("assent");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(source.join("Cargo.toml"), read("Cargo.toml")).unwrap();
}

#[cfg(unix)]
#[test]
fn the_image_job_builds_the_tagged_release_and_pushes_it() {
    let job = &release_jobs()["assent-image"];
    let version = env!("CARGO_PKG_VERSION");
    for tag in [version.to_owned(), format!("{version}-2")] {
        let fake = FakeDocker::new();
        with_source(&fake);
        let out = fake.run(job, &tag);
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{tag}: {log}");
        let image = format!("registry.example.com/platform/assent-ci:{tag}");
        assert_eq!(
            fake.calls(),
            [
                "login --username gitlab-ci-token --password-stdin registry.example.com".to_owned(),
                format!(
                    "build --pull --file Dockerfile --build-arg ASSENT_VERSION={tag} --tag {image} assent"
                ),
                format!("push {image}"),
            ],
            "{tag}"
        );
        assert_eq!(
            fake.stdin(),
            REGISTRY_PASSWORD,
            "the password, on stdin only"
        );
        assert!(
            !log.contains(REGISTRY_PASSWORD),
            "{tag}: password in the log"
        );
    }
}

#[cfg(unix)]
#[test]
fn the_image_job_refuses_a_tag_that_names_another_release_or_no_source() {
    let job = &release_jobs()["assent-image"];
    let version = env!("CARGO_PKG_VERSION");

    let fake = FakeDocker::new();
    with_source(&fake);
    let out = fake.run(job, "9.9.9");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("tag 9.9.9 does not name the assent release")
            && stderr.contains(&format!("({version}): tag {version}")),
        "names both versions and the fix: {stderr}"
    );
    assert!(fake.calls().is_empty(), "nothing built: {:?}", fake.calls());

    let fake = FakeDocker::new();
    let out = fake.run(job, version);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no assent source at assent/") && stderr.contains("git submodule add"),
        "{stderr}"
    );
    assert!(fake.calls().is_empty());
}

#[test]
fn the_component_readme_names_every_shipped_file() {
    let readme = read("ci-templates/README.md");
    for file in shipped_files() {
        assert!(
            readme.contains(&format!("`{file}`")),
            "ci-templates/README.md does not say where {file} goes"
        );
    }
    assert!(
        readme.contains("cp -R ci-templates/. "),
        "the copy command copies the folder's contents, dotfiles included"
    );
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(readme.contains(license));
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(license)
                .is_file(),
            "{license} is shipped"
        );
    }
}

#[test]
fn the_component_readme_is_in_the_catalog_layout_and_names_every_input() {
    let readme = read("ci-templates/README.md");
    // The catalog lists a project's components from its README's `## Components` section,
    // one `###` heading each, and renders the inputs itself from `spec:inputs`: the README
    // names each input only to map it to the classic include's variable, and repeats no
    // default (one source for them, the spec).
    let components = readme
        .split("\n## Components\n")
        .nth(1)
        .expect("a `## Components` section");
    assert!(components.starts_with("\n### `assent`\n"), "{components}");
    let table: Vec<String> = components
        .lines()
        .skip_while(|l| !l.starts_with("| input | classic variable |"))
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            assert_eq!(l.matches(" | ").count(), 1, "two columns: {l}");
            l.split(" | ")
                .next()
                .unwrap()
                .trim_start_matches("| ")
                .trim_matches('`')
                .to_owned()
        })
        .collect();
    let (spec, _) = component();
    let declared: Vec<String> = inputs(&spec)
        .keys()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        table, declared,
        "the README maps every input, in the spec's order"
    );
    assert!(!readme.contains("## Inputs"), "no second inputs table");
    let classic = read("ci-templates/assent.gitlab-ci.yml");
    for row in components.lines().filter(|l| l.starts_with("| `")) {
        if let Some(var) = row.split('`').nth(3) {
            assert!(classic.contains(var), "the classic include reads {var}");
        }
    }
    for topic in [
        "workflow:",
        "$CI_OPEN_MERGE_REQUESTS",
        "Pipelines must succeed",
        "assent-receipt.json",
        "exit_codes: [3]",
    ] {
        assert!(readme.contains(topic), "the README covers {topic:?}");
    }
}

#[test]
fn the_version_input_takes_a_release_or_a_rebuild_and_nothing_else() {
    let (spec, _) = component();
    let version = &inputs(&spec)["version"];
    let pattern = version["regex"]
        .as_str()
        .expect("the version input has a regex");
    // GitLab matches the whole value against the input's regex (RE2; this one uses nothing
    // RE2 and the regex crate read differently).
    let regex = regex::Regex::new(pattern).unwrap();
    assert!(regex.is_match(version["default"].as_str().unwrap()));
    assert!(regex.is_match(env!("CARGO_PKG_VERSION")));
    for good in ["0.1.0", "12.3.45", "0.1.0-2"] {
        assert!(regex.is_match(good), "{good}");
    }
    for bad in [
        "latest",
        "0.1",
        "v0.1.0",
        "0.1.0-rc1",
        "0.1.0 ",
        "main",
        "0.1.0-2\nx",
    ] {
        assert!(!regex.is_match(bad), "{bad:?}");
    }
}
