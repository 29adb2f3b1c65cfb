//! `assent doctor`: checks a deployment before the first MR and says which
//! duplicate-prevention guarantee it provides.
//!
//! * [`report`]: the check model and its text/JSON rendering (pure).
//! * [`serialization`]: the `duplicate_prevention` verdict as a pure function of the evidence,
//!   with the evidence rule in its module docs.
//! * [`endpoints`]: the routes doctor reads, as `gitlab::api::Endpoint` impls.
//! * [`probe`]: gathers the evidence through the one transport and builds the report.

pub mod endpoints;
pub mod probe;
pub mod report;
pub mod serialization;

pub use probe::{DoctorInputs, SetupError, run};
pub use report::{Check, DuplicatePrevention, Report, Status};
