//! The GitLab HTTP adapter: [`GitLabForge`] implements the [`assent_forge::Forge`] and
//! [`assent_forge::Repository`] ports over GitLab's REST API v4, and [`GitLabClient`] the
//! project-level [`assent_forge::RepositoryFiles`].
//!
//! Invariants: every request goes through one transport and one retry policy; the token is
//! sent only as `PRIVATE-TOKEN` and never appears in an error, a log or a `Debug`; writes
//! are never retried blindly. This crate names `assent-core` and `assent-forge`, never the
//! application.
//!
//! One concept per file:
//!
//! * [`transport`]: the one `ureq` agent (token header, redirects refused, body limit,
//!   timeouts, proxy, CA bundle) and the token's redaction.
//! * [`retry`]: reads retried (bounded, jittered, `Retry-After` honoured), writes never
//!   blindly; a 429 waited out and the write sent again, within a per-run budget.
//! * [`pagination`]: every page of a listing via `X-Next-Page`/`Link`, or an error.
//! * [`endpoints`]: the routes the `gitlab` crate has no builder for.
//! * [`advice`](mod@advice): what an operator can do about a failed request (one line each).
//! * [`config`]: what a client needs to reach one project, and the defaults of its limits.
//! * [`client`]: one project's connection (transport, retry, typed sends); every command's
//!   requests go through one.
//! * [`repository`]: the project's files at pinned SHAs, read through a client.
//! * [`forge`]: the ports, per merge request, over a client.
//! * [`project_endpoints`]: the sweep's project-level routes (open MRs in a window, MR
//!   pipeline creation).
//! * [`sweep_forge`]: the sweep's port ([`assent_forge::sweep_port::SweepForge`]) over a client.
//! * [`doctor`]: the routes `assent doctor` reads and GitLab's answers to them, typed (a
//!   missing field is `None`).
//! * [`health`]: one unauthenticated `GET` of a service beside GitLab (`assent serve`'s
//!   `/readyz`, for `assent doctor --serve-url`), never with the token.
//!
//! ```no_run
//! use assent_gitlab::{GitLabConfig, GitLabForge, Token};
//! let mut config = GitLabConfig::new("https://gitlab.example.com/api/v4", Token::new("glpat-…"), "group/proj");
//! config.ca_file = Some("/etc/ssl/private-ca.pem".into());
//! let forge = GitLabForge::new(config, 7)?;
//! # Ok::<(), assent_gitlab::GitLabConfigError>(())
//! ```

#![forbid(unsafe_code)]

pub mod advice;
pub mod client;
pub mod config;
mod discussion_stream;
pub mod doctor;
pub mod endpoints;
pub mod forge;
pub mod health;
pub mod pagination;
pub mod project_endpoints;
pub mod repository;
pub mod retry;
pub mod sweep_forge;
pub mod transport;
mod wire;

#[cfg(test)]
mod tests;

pub use self::advice::{Diagnosis, advice, diagnose};
pub use self::client::GitLabClient;
pub use self::config::GitLabConfig;
pub use self::forge::GitLabForge;
pub use self::retry::{
    DEFAULT_RATE_LIMIT_BUDGET, DEFAULT_WRITE_SETTLE, RateLimitTally, RetryPolicy, Sleeper,
    ThreadSleeper,
};
pub use self::sweep_forge::GitLabSweepForge;
pub use self::transport::{ProxyConfig, Token};

/// A configuration the adapter cannot work with (exit 2, before any request). Texts never
/// contain the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitLabConfigError {
    /// The API URL is unusable.
    #[error("invalid GitLab API URL: {0}")]
    ApiUrl(String),
    /// The token is unusable (the text describes why, never the token).
    #[error("invalid GitLab token: {0}")]
    Token(String),
    /// The project is unusable.
    #[error("invalid GitLab project: {0}")]
    Project(String),
    /// The CA bundle cannot be read or holds no certificate.
    #[error("invalid CA bundle: {0}")]
    CaFile(String),
    /// The proxy setting is unusable.
    #[error("invalid proxy: {0}")]
    Proxy(String),
}
