//! The shipped CI templates: both forms parse, and the properties the gate depends on hold
//! (MR pipelines only, the per-MR resource group, no checkout, the receipt kept always, the
//! token from a variable, the image pinned, the job failing on REVIEW and never allowed to
//! fail, the bot's approval off unless asked for), including that `assent doctor`'s own
//! evidence rules accept the template's job.

use std::collections::BTreeSet;
use std::path::Path;

use assent::doctor::enforcement::{AssentJob, assent_jobs};
use assent::doctor::serialization::{expand_key, job_resource_group};
use serde::Deserialize;
use serde_yaml::Value;

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
fn assert_publisher(job: &Value, form: &str) {
    assert_eq!(
        job["resource_group"], "assent-mr-$CI_MERGE_REQUEST_IID",
        "{form}: per-MR resource group"
    );
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

fn assert_sweep(job: &Value, form: &str) {
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
        "policy_dir",
        "token_variable",
        "extra_args",
        "approve",
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
        "the job fails on REVIEW unless told otherwise (SPEC §10.2)"
    );
    assert_eq!(inputs(&spec)["approve"]["default"], false);
    assert_eq!(inputs(&spec)["approve"]["type"], "boolean");
    assert_ne!(inputs(&spec)["version"]["default"], "latest");
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
fn both_forms_pin_the_same_image_built_by_the_dockerfile() {
    let dockerfile = read("ci-templates/Dockerfile");
    let (spec, _) = component();
    let repo = inputs(&spec)["image"]["default"].as_str().unwrap();
    let version = inputs(&spec)["version"]["default"].as_str().unwrap();
    assert!(
        dockerfile.contains(&format!("org.opencontainers.image.ref.name=\"{repo}\"")),
        "the Dockerfile names the default image"
    );
    let classic: Value = serde_yaml::from_str(&read("ci-templates/assent.gitlab-ci.yml")).unwrap();
    assert_eq!(
        classic["variables"]["ASSENT_IMAGE"]["value"],
        format!("{repo}:{version}")
    );
    assert!(dockerfile.contains("cargo build --release --locked --bin assent"));
    assert!(
        dockerfile.contains("USER 65534"),
        "the image does not run as root"
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
