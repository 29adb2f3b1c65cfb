//! The sweep through the `SweepForge` port: [`examine`] examines one merge request (for the
//! sweep and serve alike), [`pass`] runs one sweep pass over a project's open merge requests.

pub mod examine;
pub mod pass;
