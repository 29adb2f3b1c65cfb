//! `deploy/`: the Kubernetes base, the Prometheus alerts and the Grafana dashboard for
//! `assent serve`, held to what serve really exports and does.
//!
//! The checks that need outside tools (`kubernetes-validate` for the manifests, `promtool` for
//! the rules and their unit tests) are opt-in, like the consumer tests:
//! `cargo test --test it deploy:: -- --ignored`, which `.ci/run` runs after installing them (the
//! `prometheus` Debian package and the `kubernetes-validate` Python package). Run so, a
//! missing tool is a failure, never a pass.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use assent::serve::metrics::Metrics;
use serde_yaml::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml(rel: &str) -> Value {
    serde_yaml::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `assent_…` metric name a text mentions.
fn metric_names(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"\bassent_[a-z_]+[a-z]\b").unwrap();
    re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

#[test]
fn every_metric_the_alerts_and_the_dashboard_name_is_one_serve_exports() {
    // Every family is declared (`# TYPE name kind`) even before its first sample; a counter's
    // samples carry the `_total` suffix (OpenMetrics).
    let exported: BTreeSet<String> = Metrics::new()
        .render()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| match l.split_once(' ') {
            Some((name, "counter")) => format!("{name}_total"),
            Some((name, _)) => name.to_owned(),
            None => panic!("a TYPE line without a kind: {l}"),
        })
        .collect();
    for file in [
        "deploy/prometheus/assent-serve.rules.yaml",
        "deploy/grafana/assent-serve.json",
        "docs/serve.md",
    ] {
        let named = metric_names(&read(file));
        assert!(!named.is_empty(), "{file} names serve's metrics");
        let unknown: Vec<_> = named.difference(&exported).collect();
        assert!(
            unknown.is_empty(),
            "{file} names metrics serve does not export: {unknown:?} (exported: {exported:?})"
        );
    }
}

#[test]
fn the_deployment_runs_serve_non_root_with_its_probes_and_secrets() {
    let deployment = yaml("deploy/kubernetes/deployment.yaml");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    // The image's entrypoint is the binary (ci-templates/Dockerfile): the arguments start with
    // the subcommand.
    assert_eq!(container["args"][0], "serve");
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.windows(2).any(|w| w == ["--listen", "0.0.0.0:8080"]),
        "serve listens on the pod's address: {args:?}"
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert!(
        container["resources"]["limits"]["memory"].is_string(),
        "a memory limit"
    );
    // Longer than serve's default --shutdown-grace (30s), so SIGTERM's drain can finish.
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(grace > 30, "terminationGracePeriodSeconds {grace}");
    for secret in ["ASSENT_TOKEN", "ASSENT_WEBHOOK_SECRET"] {
        let env = container["env"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|e| e["name"] == secret)
            .unwrap_or_else(|| panic!("{secret} is set"));
        assert!(env.get("value").is_none(), "{secret} never as a literal");
        assert_eq!(env["valueFrom"]["secretKeyRef"]["name"], "assent-serve");
    }
    let kustomization = yaml("deploy/kubernetes/kustomization.yaml");
    let resources: Vec<&str> = kustomization["resources"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for resource in &resources {
        assert!(
            root().join("deploy/kubernetes").join(resource).is_file(),
            "{resource} exists"
        );
    }
    assert!(
        !resources.contains(&"secret.example.yaml"),
        "the example Secret is never applied"
    );
    // Only the webhook leaves the cluster: metrics and probes stay inside.
    let ingress = yaml("deploy/kubernetes/ingress.yaml");
    let paths = &ingress["spec"]["rules"][0]["http"]["paths"];
    assert_eq!(paths.as_sequence().unwrap().len(), 1);
    assert_eq!(paths[0]["path"], "/webhook");
    assert!(
        ingress["spec"]["tls"][0]["secretName"].is_string(),
        "TLS at the ingress"
    );
}

/// Runs a tool, failing with the install hint when it is missing.
fn run_tool(program: &str, args: &[&str], dir: &Path, install: &str) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} could not run ({e}); {install}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{program} {args:?} failed:\n{text}");
    text
}

#[test]
#[ignore = "needs kubernetes-validate (pip); run: cargo test --test it deploy:: -- --ignored"]
fn the_kubernetes_manifests_validate_against_the_kubernetes_schemas() {
    let dir = root().join("deploy/kubernetes");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    files.sort();
    // The module, not its script: a version manager's shim for the script may be missing.
    let mut args = vec!["-m", "kubernetes_validate", "--strict"];
    args.extend(files.iter().map(String::as_str));
    let out = run_tool(
        "python3",
        &args,
        &dir,
        "python3 -m pip install kubernetes-validate",
    );
    for file in &files {
        assert!(out.contains(&format!("{file} passed")), "{file}:\n{out}");
    }
}

#[test]
#[ignore = "needs promtool (Debian package prometheus); run: cargo test --test it deploy:: -- --ignored"]
fn the_alert_rules_pass_their_promtool_unit_tests() {
    let dir = root().join("deploy/prometheus");
    let install = "apt-get install prometheus";
    let checked = run_tool(
        "promtool",
        &["check", "rules", "assent-serve.rules.yaml"],
        &dir,
        install,
    );
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = run_tool(
        "promtool",
        &["test", "rules", "assent-serve.rules.test.yaml"],
        &dir,
        install,
    );
    assert!(tested.contains("SUCCESS"), "{tested}");
}

#[test]
#[ignore = "needs promtool (Debian package prometheus); run: cargo test --test it deploy:: -- --ignored"]
fn every_dashboard_query_parses_as_promql() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/assent-serve.json")).unwrap();
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            // Grafana's variables, given values, leave plain PromQL.
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$__range", "1h")
                .replace("$job", ".*");
            exprs.push(expr);
        }
    }
    assert!(exprs.len() >= 10, "{exprs:?}");
    // promtool parses expressions in a rule file: one recording rule per query.
    let rules: Vec<serde_json::Value> = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| serde_json::json!({"record": format!("dashboard:query{i}"), "expr": e}))
        .collect();
    let file = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dashboard.rules.yaml"), file.to_string()).unwrap();
    let out = run_tool(
        "promtool",
        &["check", "rules", "dashboard.rules.yaml"],
        dir.path(),
        "apt-get install prometheus",
    );
    assert!(
        out.contains(&format!("SUCCESS: {} rules found", exprs.len())),
        "{out}"
    );
}
