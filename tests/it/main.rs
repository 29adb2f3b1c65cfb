//! assent's integration tests, linked into one test binary (`cargo test --test it`), one
//! module per area: one link step after a library change instead of one per test file
//! (docs/performance.md, "Test build").
//!
//! Select tests by module path: `cargo test --test it run_cli::` runs one module,
//! `cargo test --test it -- run_cli::publishing::first_run sweep_cli::a_dry_run` several filters at
//! once. The gitlab-ci-local tests are opt-in: `cargo test --test it ci_local -- --ignored`, and
//! so are the differential tests against PyYAML and Go's readers: `cargo test --test it consumers
//! -- --ignored`.
//!
//! The helpers shared with the benchmarks and fuzz targets are the `assent_test_support`
//! crate (`tests/support/`). The modules share one process and run in parallel, which holds
//! because no test sets an environment variable or changes the current directory (children
//! get their environment through `Command`), each starts its own fake GitLab on an
//! ephemeral port and works in its own temporary directory, and the only statics are
//! `process_faults`'s reference scenario (built once, then only read) and a counter that
//! keeps the fuzz checks' scratch folders apart.

// Tests may print diagnostics (libtest captures them).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod central_policies;
mod check_cli;
mod ci_local;
mod ci_templates;
mod complete_change_set;
mod completions_cli;
mod consumers;
mod deploy;
mod diff_notes;
mod doc_examples;
mod doctor_cli;
mod fixtures_replay;
mod fuzz_regressions;
mod gitlab_adapter_http;
mod gitlab_contract;
mod grouping_cli;
mod hostile_input;
mod http_fixtures;
mod lint_and_test_cli;
mod paths_and_attributes;
mod policy_mr;
mod process_faults;
mod protocol_properties;
mod readme_example;
mod replay_cli;
mod request_counts;
mod run_cli;
mod sandbox;
mod scale_cli;
mod serve;
mod sweep_cli;
mod tidy;
mod token_renewal;
mod unknown_refs;
mod withheld_diffs;

/// The `assent` binary Cargo built for these tests (the helpers that start it take its path:
/// only this crate sees `CARGO_BIN_EXE_assent`).
const ASSENT: &str = env!("CARGO_BIN_EXE_assent");
