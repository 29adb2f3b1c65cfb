//! assent: a policy-driven, crash-safe review gate for GitLab merge requests.
//!
//! The workspace is split the way data flows (see `docs/architecture.md`), and the crate
//! graph keeps the layers: [`core`] (the `assent-core` crate) is pure: markers, model,
//! semantic diff, policy, desired state, planner, rescan, rendering, receipt, sweep
//! classification. [`forge`] (`assent-forge`) holds the ports through which every read and
//! write goes, with the in-memory adapter. [`engine`] (`assent-engine`) holds the use cases
//! over the ports: a run's inputs, the reconciliation and the run, the sweep's examination
//! and pass, fixture replay, the progress observer; it never knows the adapter and never
//! prints. [`gitlab`] (`assent-gitlab`) is the HTTP adapter.
//! This crate is the application, the shell around the engine: [`progress`] prints what a
//! run and a sweep report of their phases; [`serve`] is the long-lived webhook receiver;
//! [`doctor`] checks a deployment; [`git_checkout`] answers the `Repository` port from a
//! local git checkout for `assent check`; [`output`] is the one way text is printed (escaped
//! for a terminal); and [`commands`] is the thin command layer behind `main.rs`.

#![forbid(unsafe_code)]

pub use assent_core as core;
pub use assent_engine as engine;
pub use assent_forge as forge;
pub use assent_gitlab as gitlab;

pub mod clock;
pub mod commands;
pub mod doctor;
pub mod git_checkout;
pub mod output;
pub mod progress;
pub mod serve;
