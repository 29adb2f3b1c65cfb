//! The workspace's dependency graph as the crate-graph tests read it: from the manifests and
//! the workspace's `Cargo.lock` (every platform: a dependency on one platform is a dependency)
//! rather than from `cargo metadata`, which needs every platform's packages downloaded and so
//! fails offline. A workspace member's lock entry also lists its dev-dependencies, which are
//! not its dependants' dependencies: a member's normal dependencies are read from its own
//! manifest instead. Shared by assent-core's and assent-engine's `crate_graph` tests (the
//! engine's includes this file by path).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's root folder: every crate of it sits two folders below.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_toml(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The normal and build dependencies a manifest names (every platform's), by package name.
pub fn manifest_dependencies(manifest: &Path) -> BTreeSet<String> {
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
pub fn transitive_dependencies(start: &BTreeSet<String>) -> BTreeSet<String> {
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

/// The names of `dependencies` that `allowed` does not list.
pub fn not_allowed<'a>(dependencies: &'a BTreeSet<String>, allowed: &[&str]) -> Vec<&'a str> {
    dependencies
        .iter()
        .map(String::as_str)
        .filter(|d| !allowed.contains(d))
        .collect()
}

/// The names of `forbidden` that `closure` holds.
pub fn forbidden_in<'a>(closure: &BTreeSet<String>, forbidden: &[&'a str]) -> Vec<&'a str> {
    forbidden
        .iter()
        .copied()
        .filter(|f| closure.contains(*f))
        .collect()
}
