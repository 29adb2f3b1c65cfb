//! The core's purity, enforced by its dependency list: the crate graph is the architecture
//! (docs/architecture.md), so a core that could reach the network, the terminal, the file
//! system's temporary files or a random source would be a layering break even before any
//! code used it.

// A test of the repository reads its files; only the library is kept from I/O (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::path::Path;

mod dependency_graph;

use dependency_graph::{
    forbidden_in, manifest_dependencies, not_allowed, transitive_dependencies, workspace_root,
};

/// What the core may depend on directly: parsing, hashing, CEL, globbing, errors. Adding a
/// crate here is an architecture decision; say why in the commit.
const ALLOWED_DIRECT: &[&str] = &[
    "assent-semdiff",
    "cel",
    "chrono",
    "globset",
    "hex",
    "serde",
    "serde_json",
    "serde_yaml",
    "sha2",
    "thiserror",
];

/// What the semantic diff, a leaf below the core, may depend on: the parsers and serde.
const SEMDIFF_ALLOWED_DIRECT: &[&str] = &[
    "serde",
    "serde_json",
    "serde_yaml",
    "thiserror",
    "toml",
    "unsafe-libyaml",
];

/// Crates that do I/O or bring a clock or randomness to the caller, which must not appear
/// anywhere below the core, however indirectly.
const FORBIDDEN_ANYWHERE: &[&str] = &[
    "anyhow",
    "clap",
    "fastrand",
    "gitlab",
    "hyper",
    "mio",
    "native-tls",
    "openssl",
    "rand",
    "reqwest",
    "rustls",
    "socket2",
    "tempfile",
    "tokio",
    "ureq",
    "assent-forge",
    "assent-engine",
    "assent-gitlab",
    "assent",
];

fn direct_dependencies() -> BTreeSet<String> {
    manifest_dependencies(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
}

#[test]
fn the_core_depends_only_on_the_allowed_crates() {
    let direct = direct_dependencies();
    let unexpected = not_allowed(&direct, ALLOWED_DIRECT);
    assert!(
        unexpected.is_empty(),
        "assent-core depends on {unexpected:?}: the core is pure (no I/O, clock or randomness); \
         put code that needs them in assent-forge, assent-gitlab or the application"
    );
    assert!(
        direct.contains("serde_json"),
        "the manifest was read: {direct:?}"
    );
}

#[test]
fn nothing_below_the_core_does_io() {
    let all = transitive_dependencies(&direct_dependencies());
    assert!(
        all.contains("unsafe-libyaml") && all.len() > 20,
        "the lock was read: {all:?}"
    );
    let found = forbidden_in(&all, FORBIDDEN_ANYWHERE);
    assert!(
        found.is_empty(),
        "assent-core pulls in {found:?} through its dependencies"
    );
}

/// The check itself can fail: the application's closure holds the HTTP crate.
#[test]
fn the_check_sees_what_the_application_pulls_in() {
    let app: BTreeSet<String> = ["assent-gitlab".to_owned()].into();
    let all = transitive_dependencies(&app);
    assert!(all.contains("ureq"), "{all:?}");
}

/// What the dependency list cannot see, clippy does: the core's `clippy.toml` forbids std's
/// clock, environment, filesystem, processes and sockets (`cargo clippy -D warnings` in CI
/// turns a use into an error). This keeps that list from losing an entry unnoticed.
#[test]
fn clippy_forbids_the_clock_the_environment_and_the_filesystem_in_the_core() {
    let config = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("clippy.toml"))
        .expect("crates/assent-core/clippy.toml");
    for method in [
        "std::time::SystemTime::now",
        "std::time::Instant::now",
        "std::env::var",
        "std::env::var_os",
        "std::env::args",
        "std::fs::read",
        "std::fs::read_to_string",
        "std::fs::write",
        "std::fs::File::open",
        "std::process::Command::new",
        "std::net::TcpStream::connect",
    ] {
        assert!(
            config.contains(&format!("path = \"{method}\"")),
            "clippy.toml no longer forbids `{method}` in the core"
        );
    }
}

/// The semantic diff is a leaf: parsers and serde, nothing of assent's and nothing that does
/// I/O, however indirectly.
#[test]
fn the_semantic_diff_depends_only_on_parsers() {
    let direct = manifest_dependencies(&workspace_root().join("crates/assent-semdiff/Cargo.toml"));
    let unexpected = not_allowed(&direct, SEMDIFF_ALLOWED_DIRECT);
    assert!(
        unexpected.is_empty(),
        "assent-semdiff depends on {unexpected:?}: it is a leaf of parsers and serde"
    );
    assert!(
        direct.contains("unsafe-libyaml"),
        "the manifest was read: {direct:?}"
    );
    let all = transitive_dependencies(&direct);
    let mut found = forbidden_in(&all, FORBIDDEN_ANYWHERE);
    found.extend(forbidden_in(&all, &["assent-core"]));
    assert!(found.is_empty(), "assent-semdiff pulls in {found:?}");
}
