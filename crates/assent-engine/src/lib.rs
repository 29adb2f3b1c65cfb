//! assent's engine: the use cases between the pure core and the adapters.
//!
//! [`run`] is one `assent run`: its inputs read through the `Repository` port
//! ([`run::inputs`]), the reconciliation through the `Forge` port ([`run::reconcile`]), the
//! run put together ([`run::review`]). [`sweep`] is the sweep's examination of one merge
//! request ([`sweep::examine`], serve's too) and one sweep pass ([`sweep::pass`]) through the
//! `SweepForge` port. [`fixture`] replays protocol fixtures on any `FixtureWorld`.
//! [`observe`] is what a run and a sweep report of their phases.
//!
//! # Architecture Invariant
//!
//! The engine never knows the adapter and never prints. It names the core and the ports
//! (`assent-forge`) only; the GitLab adapter, the CLI, the async runtime and the HTTP server
//! belong to the application. This is a compile error, not a convention: the adapter is not
//! a dependency of this crate, so naming it fails,
//!
//! ```compile_fail
//! use assent_gitlab as _;
//! ```
//!
//! and `tests/crate_graph.rs` fails when the engine's dependency graph gains an HTTP, CLI,
//! async or metrics crate, however indirectly. `clippy::print_stdout` and
//! `clippy::print_stderr` are denied workspace-wide, and nothing here allows them.

#![forbid(unsafe_code)]

pub use assent_core as core;
pub use assent_forge as forge;

pub mod fixture;
pub mod observe;
pub mod run;
pub mod sweep;
