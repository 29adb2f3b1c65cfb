//! The properties the `cargo fuzz` targets of `tests/fuzz/` check, one function per target.
//!
//! They live here rather than in the fuzz crate so that the ordinary test suite
//! (`tests/it/fuzz_regressions.rs`) runs exactly the same checks: on every input kept under
//! `tests/fuzz/regressions/<target>/`, and under proptest. Each function panics exactly when
//! a property is violated.

pub mod checks;
#[cfg(unix)]
pub mod tree_checks;
