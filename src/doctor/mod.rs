//! `assent doctor`: checks a deployment before the first MR and says which
//! duplicate-prevention guarantee it provides and what holds the gate.
//!
//! * [`report`]: the check model and its text/JSON rendering (pure).
//! * [`serialization`]: the `duplicate_prevention` verdict as a pure function of the evidence,
//!   with the evidence rule in its module docs.
//! * [`enforcement`]: the `gate_enforcement` verdict, likewise.
//! * [`endpoints`]: the routes doctor reads, as `gitlab::api::Endpoint` impls.
//! * [`probe`]: gathers the evidence through the one transport and builds the report.

pub mod endpoints;
pub mod enforcement;
pub mod probe;
pub mod report;
pub mod serialization;

pub use probe::{DoctorInputs, SetupError, run};
pub use report::{Check, DuplicatePrevention, GateEnforcement, Report, Status};
