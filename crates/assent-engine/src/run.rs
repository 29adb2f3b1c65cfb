//! One `assent run`: [`inputs`] reads the run's inputs through the `Repository` port,
//! [`reconcile`] drives a plan through the `Forge` port, [`review`] puts the run together.

pub mod inputs;
pub mod reconcile;
pub mod review;
