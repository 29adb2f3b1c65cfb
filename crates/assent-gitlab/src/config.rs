//! [`GitLabConfig`]: what a [`GitLabClient`](crate::GitLabClient) needs to reach one project,
//! with the defaults of every limit. Below the client and the forge, so both read it without
//! either importing the other's module.

use std::path::PathBuf;
use std::time::Duration;

use super::pagination::DEFAULT_MAX_PAGES;
use super::retry::RetryPolicy;
use super::transport::{
    DEFAULT_BODY_LIMIT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, ProxyConfig, Token,
};

/// Everything a [`GitLabClient`](crate::GitLabClient) needs to reach one project. `Debug`
/// never shows the token. A merge request is not part of it: it belongs to the
/// [`GitLabForge`](crate::GitLabForge) built over the client.
#[derive(Clone, Debug)]
pub struct GitLabConfig {
    /// The API v4 base, e.g. `https://gitlab.example.com/api/v4` (`CI_API_V4_URL`).
    pub api_url: String,
    /// The access token, sent only as `PRIVATE-TOKEN`.
    pub token: Token,
    /// The project id (`42`) or full path (`group/sub/proj`).
    pub project: String,
    /// A PEM bundle (one or several certificates) trusted in addition to the public roots.
    pub ca_file: Option<PathBuf>,
    /// TCP/TLS connect timeout (default 10 s).
    pub connect_timeout: Duration,
    /// Whole-request timeout, body included (default 60 s).
    pub request_timeout: Duration,
    /// Largest accepted response body in bytes (default 64 MiB).
    pub body_limit: u64,
    /// Proxy selection (default: from the environment).
    pub proxy: ProxyConfig,
    /// Read retry policy.
    pub retry: RetryPolicy,
    /// Page cap of one listing (default 2,000 pages of 100).
    pub max_pages: u32,
}

impl GitLabConfig {
    /// A project's configuration with default timeouts, limits, proxy and retry policy.
    pub fn new(api_url: impl Into<String>, token: Token, project: impl Into<String>) -> Self {
        GitLabConfig {
            api_url: api_url.into(),
            token,
            project: project.into(),
            ca_file: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            body_limit: DEFAULT_BODY_LIMIT,
            proxy: ProxyConfig::FromEnv,
            retry: RetryPolicy::default(),
            max_pages: DEFAULT_MAX_PAGES,
        }
    }
}
