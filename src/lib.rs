//! assent: a policy-driven, crash-safe review gate for GitLab merge requests.
//!
//! The crate is split the way data flows (see `docs/architecture.md`):
//! [`core`] is pure (markers, model, semantic diff, policy, desired state, planner, rescan,
//! rendering, receipt, sweep classification); [`forge`] holds the ports through which every
//! read and write goes (with the in-memory adapter); [`gitlab`] is the HTTP adapter;
//! [`review_input`] reads a run's inputs through the `Repository` port; [`reconcile`] drives a
//! plan through a forge; [`review_run`] puts one `assent run` together; [`sweeper`] runs the
//! scheduled sweep; [`doctor`] checks a deployment; [`fixture`] replays protocol fixtures;
//! and [`commands`] is the thin command layer behind `main.rs`.

pub mod commands;
pub mod core;
pub mod doctor;
pub mod fixture;
pub mod forge;
pub mod gitlab;
pub mod reconcile;
pub mod review_input;
pub mod review_run;
pub mod sweeper;
