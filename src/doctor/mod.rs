//! `assent doctor`: checks a deployment before the first MR and says which
//! duplicate-prevention guarantee it provides and what holds the gate.
//!
//! * [`report`]: the check model, its text/JSON rendering and what makes doctor fail
//!   (pure).
//! * [`checks`]: one pure function per check (api, token, identity, scope, token-expiry, role, the
//!   settings, merge request, policies, serialization), each with its fix, chosen from typed
//!   facts.
//! * [`facts`]: GitLab's answers (typed in `gitlab::doctor::responses`) as the facts the
//!   verdicts read.
//! * [`single_writer`]: the `duplicate_prevention` verdict (does the running job provably
//!   hold its MR's resource group?) as a pure function of the evidence, with the evidence
//!   rule in its module docs.
//! * [`enforcement`]: the `gate_enforcement` verdict, likewise.
//! * [`target`]: the deployment doctor is asked to check ([`DoctorInputs`]), resolved by the
//!   command layer.
//! * [`probe`]: sends doctor's routes (`gitlab::doctor::endpoints`) through the project's
//!   one client and runs the checks in order, skipping those an earlier failure makes
//!   pointless.

pub mod checks;
pub mod enforcement;
pub mod facts;
pub mod probe;
pub mod report;
pub mod single_writer;
pub mod target;

pub use enforcement::GateEnforcement;
pub use probe::{SetupError, run};
pub use report::{Check, Report, Status};
pub use single_writer::DuplicatePrevention;
pub use target::DoctorInputs;
