//! assent's pure logic: no I/O, no clock, no randomness, no environment.
//!
//! Everything here is a function of its arguments, so the same inputs give byte-identical
//! plans and receipts. The crate's dependency list is the guarantee: no HTTP, CLI,
//! file-system or clock crate may be added (`tests/crate_graph.rs` fails when one is), and
//! `clippy.toml` forbids std's clock, environment and filesystem. The ports live in
//! `assent-forge`, the adapters above it. The semantic diff is its own crate
//! (`assent-semdiff`, re-exported as [`semantic_diff`]), which holds the workspace's only
//! `unsafe`, so this crate forbids it.

#![forbid(unsafe_code)]

pub mod assent;
pub mod bot_identity;
pub mod canonical_json;
pub mod coalesce;
pub mod codequality;
pub mod commit_sha;
pub mod desired_state;
pub mod git_attributes;
pub mod grouping;
pub mod inert;
pub mod inventory;
pub mod links;
pub mod marker;
pub mod model;
pub mod placement;
pub mod planner;
pub mod policy;
pub mod policy_cases;
pub mod receipt;
pub mod refusal;
pub mod render;
pub mod rescan;
pub mod resolutions;
pub mod review_state;
pub mod run_receipt;
pub mod source_policies;
pub mod sweep;
pub mod switch;
pub mod terminal;
#[cfg(test)]
mod test_support;
pub mod time;
pub mod unified_diff;

pub use assent_semdiff as semantic_diff;
