//! The engine's seam, enforced by its dependency list: the engine drives the ports and never
//! knows the adapter, the command line, the async runtime, the HTTP server or the metrics
//! (docs/architecture.md, "Architecture Invariant"). A crate of theirs anywhere below the
//! engine, however indirectly, is a layering break even before any code uses it.
//!
//! The graph is read as `dependency_graph` (shared with the core's test) reads it.

// A test of the repository reads its files; only the library is kept from I/O (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::path::Path;

#[path = "../../assent-core/tests/dependency_graph/mod.rs"]
mod dependency_graph;

use dependency_graph::{
    forbidden_in, manifest_dependencies, not_allowed, transitive_dependencies, workspace_root,
};

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

fn engine_dependencies() -> BTreeSet<String> {
    manifest_dependencies(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
}

#[test]
fn the_engine_depends_only_on_the_allowed_crates() {
    let direct = engine_dependencies();
    let unexpected = not_allowed(&direct, ALLOWED_DIRECT);
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
    let found = forbidden_in(&all, FORBIDDEN_ANYWHERE);
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
