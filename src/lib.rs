//! assent: a policy-driven, crash-safe review gate for GitLab merge requests.
//!
//! The crate is split the way data flows (see `docs/architecture.md`):
//! [`core`] is pure (markers, model, planner, receipt, semantic diff, policy), [`forge`] is the
//! port through which every read and write of review artifacts goes (with the in-memory
//! adapter), [`gitlab`] is the HTTP adapter, [`reconcile`] drives a plan through a forge,
//! [`sweeper`] runs the scheduled sweep over a project's open MRs, and [`commands`] is the thin
//! command layer behind `main.rs`.

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
