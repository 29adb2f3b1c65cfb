//! assent: a policy-driven, crash-safe review gate for GitLab merge requests.
//!
//! The workspace is split the way data flows (see `docs/architecture.md`), and the crate
//! graph keeps the layers: [`core`] (the `assent-core` crate) is pure: markers, model,
//! semantic diff, policy, desired state, planner, rescan, rendering, receipt, sweep
//! classification. [`forge`] (`assent-forge`) holds the ports through which every read and
//! write goes, with the in-memory adapter. [`gitlab`] (`assent-gitlab`) is the HTTP adapter.
//! This crate is the application: [`review_input`] reads a run's inputs through the
//! `Repository` port; [`reconcile`] drives a plan through a forge; [`review_run`] puts one
//! `assent run` together; [`progress`] is what a run and a sweep report of their phases;
//! [`examination`] examines one MR for the sweep and serve alike; [`sweep_pass`] runs one
//! sweep pass; [`serve`] is the long-lived webhook receiver; [`doctor`] checks a deployment;
//! [`fixture`] replays protocol fixtures;
//! [`git_checkout`] answers the `Repository` port from a local git checkout for `assent check`; [`output`] is the one way text is printed (escaped
//! for a terminal); and [`commands`] is the thin command layer behind `main.rs`.

#![forbid(unsafe_code)]

pub use assent_core as core;
pub use assent_forge as forge;
pub use assent_gitlab as gitlab;

pub mod commands;
pub mod doctor;
pub mod examination;
pub mod fixture;
pub mod git_checkout;
pub mod output;
pub mod progress;
pub mod reconcile;
pub mod review_input;
pub mod review_run;
pub mod serve;
pub mod sweep_pass;
