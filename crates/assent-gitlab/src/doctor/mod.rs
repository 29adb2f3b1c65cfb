//! What `assent doctor` reads of a deployment: its routes ([`endpoints`]) and GitLab's
//! answers to them as typed structs ([`responses`]). Here, beside the other routes, so the
//! application sends them through a [`GitLabClient`](crate::GitLabClient) without knowing a
//! URL or a JSON field; the checks and verdicts built on them are the application's.

pub mod endpoints;
pub mod responses;

pub use self::endpoints::{DoctorEndpoint, Route};
