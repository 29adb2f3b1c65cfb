//! The engine's seam, enforced by its dependency list: the engine drives the ports and never
//! knows the adapter, the command line, the async runtime, the HTTP server or the metrics
//! (docs/architecture.md, "Architecture Invariant"). A crate of theirs anywhere below the
//! engine, however indirectly, is a layering break even before any code uses it.
//!
//! The graph is read from the manifests and the workspace's `Cargo.lock` (every platform: a
//! dependency on one platform is a dependency) rather than from `cargo metadata`, which needs
//! every platform's packages downloaded and so fails offline. A workspace member's lock entry
//! also lists its dev-dependencies, which are not the engine's: a member's normal
//! dependencies are read from its own manifest instead.

// A test of the repository reads its files; only the library is kept from I/O (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What the engine may depend on directly: the core, the ports, serialisation, errors.
/// Adding a crate here is an architecture decision; say why in the commit.
const ALLOWED_DIRECT: &[&str] = &[
    "assent-core",
    "assent-forge",
    "serde",
    "serde_json",
    "serde_yaml",
    "thiserror",
];

/// The adapter, the command line, the runtime, the HTTP stack and the metrics: the
/// application's, never below the engine.
const FORBIDDEN_ANYWHERE: &[&str] = &[
    "assent",
    "assent-gitlab",
    "axum",
    "clap",
    "gitlab",
    "hyper",
    "prometheus-client",
    "tokio",
    "ureq",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_toml(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The normal and build dependencies a manifest names (every platform's), by package name.
fn manifest_dependencies(manifest: &Path) -> BTreeSet<String> {
    let manifest = read_toml(manifest);
    let mut tables = Vec::new();
    for section in ["dependencies", "build-dependencies"] {
        tables.extend(manifest.get(section).and_then(|t| t.as_table()));
        if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
            tables.extend(
                targets
                    .values()
                    .filter_map(|platform| platform.get(section))
                    .filter_map(|t| t.as_table()),
            );
        }
    }
    let mut names = BTreeSet::new();
    for table in tables {
        for (key, spec) in table {
            let renamed = spec.get("package").and_then(|p| p.as_str());
            names.insert(renamed.unwrap_or(key).to_owned());
        }
    }
    names
}

/// Each workspace member's package name and manifest.
fn workspace_members() -> BTreeMap<String, PathBuf> {
    let root = workspace_root();
    let workspace = read_toml(&root.join("Cargo.toml"));
    let members = workspace["workspace"]["members"]
        .as_array()
        .expect("workspace members");
    members
        .iter()
        .filter_map(|m| m.as_str())
        .map(|dir| {
            let manifest = root.join(dir).join("Cargo.toml");
            let name = read_toml(&manifest)["package"]["name"]
                .as_str()
                .expect("a package name")
                .to_owned();
            (name, manifest)
        })
        .collect()
}

/// Every package the normal dependencies of `start` pull in.
fn transitive_dependencies(start: &BTreeSet<String>) -> BTreeSet<String> {
    let lock = read_toml(&workspace_root().join("Cargo.lock"));
    let members = workspace_members();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for package in lock["package"].as_array().expect("[[package]] entries") {
        let name = package["name"].as_str().expect("name").to_owned();
        let deps = package
            .get("dependencies")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_str())
            .map(|d| d.split(' ').next().unwrap_or(d).to_owned());
        graph.entry(name).or_default().extend(deps);
    }
    for (name, manifest) in &members {
        graph.insert(name.clone(), manifest_dependencies(manifest));
    }
    let mut seen = BTreeSet::new();
    let mut stack: Vec<String> = start.iter().cloned().collect();
    while let Some(name) = stack.pop() {
        if seen.insert(name.clone()) {
            stack.extend(graph.get(&name).cloned().unwrap_or_default());
        }
    }
    seen
}

fn engine_dependencies() -> BTreeSet<String> {
    manifest_dependencies(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
}

#[test]
fn the_engine_depends_only_on_the_allowed_crates() {
    let direct = engine_dependencies();
    let unexpected: Vec<&String> = direct
        .iter()
        .filter(|d| !ALLOWED_DIRECT.contains(&d.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "assent-engine depends on {unexpected:?}: the engine drives the ports and never knows \
         an adapter; put code that needs it in the application (src/) or an adapter crate"
    );
    assert!(
        direct.contains("assent-forge"),
        "the manifest was read: {direct:?}"
    );
}

#[test]
fn nothing_below_the_engine_is_an_adapter_a_cli_a_runtime_or_a_server() {
    let all = transitive_dependencies(&engine_dependencies());
    assert!(
        all.contains("assent-core") && all.contains("unsafe-libyaml") && all.len() > 20,
        "the lock was read: {all:?}"
    );
    let found: Vec<&&str> = FORBIDDEN_ANYWHERE
        .iter()
        .filter(|f| all.contains(**f))
        .collect();
    assert!(
        found.is_empty(),
        "assent-engine pulls in {found:?} through its dependencies"
    );
}

/// The check itself can fail: the application's closure holds every forbidden crate.
#[test]
fn the_check_sees_what_the_application_pulls_in() {
    let app = manifest_dependencies(&workspace_root().join("Cargo.toml"));
    let all = transitive_dependencies(&app);
    let missed: Vec<&&str> = FORBIDDEN_ANYWHERE
        .iter()
        .filter(|f| **f != "assent" && !all.contains(**f))
        .collect();
    assert!(
        missed.is_empty(),
        "not seen below the application: {missed:?}"
    );
}

/// A member's dev-dependencies are not followed: the core's test crates (`insta`, `proptest`)
/// are its own, not the engine's.
#[test]
fn a_members_dev_dependencies_are_not_the_engines() {
    let all = transitive_dependencies(&engine_dependencies());
    assert!(!all.contains("proptest"), "{all:?}");
}
