//! [`GitLabClient`]: one connection to one project's API, shared by every command.
//!
//! It owns the transport (token, TLS, proxy, limits), the retry policy and the sleeper, and
//! knows the project; it knows no merge request. `run` reaches it through the per-MR
//! [`GitLabForge`](crate::GitLabForge) built over it; `sweep` uses it for its project routes and builds each
//! MR's forge over the same client; `doctor` sends its checks through it.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use gitlab::api::Endpoint;
use gitlab::api::common::NameOrId;
use gitlab::api::users::CurrentUser;
use serde::de::DeserializeOwned;

use super::GitLabConfigError;
use super::config::GitLabConfig;
use super::pagination::Listing;
use super::retry::{RateLimitTally, Requester, Sleeper, ThreadSleeper};
use super::transport::{PreparedRequest, RawResponse, Transport, TransportSettings};
use assent_forge::{ForgeError, RequestCounts};

/// One GitLab API connection for one project. `Send + Sync`; request counters are atomic,
/// so one client can serve several forges (the sweep's) and report their total.
pub struct GitLabClient {
    pub(crate) requester: Requester,
    project: String,
    max_pages: u32,
}

impl fmt::Debug for GitLabClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitLabClient")
            .field("requester", &self.requester)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl GitLabClient {
    /// Builds the client; read retries sleep the calling thread.
    pub fn new(config: &GitLabConfig) -> Result<Self, GitLabConfigError> {
        Self::with_sleeper(config, Arc::new(ThreadSleeper))
    }

    /// Builds the client with an injected sleeper (tests record the delays asked for).
    pub fn with_sleeper(
        config: &GitLabConfig,
        sleeper: Arc<dyn Sleeper>,
    ) -> Result<Self, GitLabConfigError> {
        let project = config.project.trim().to_owned();
        if project.is_empty() {
            return Err(GitLabConfigError::Project(
                "the project id or path is empty".into(),
            ));
        }
        let transport = Transport::new(&TransportSettings {
            api_url: &config.api_url,
            token: &config.token,
            ca_file: config.ca_file.as_deref(),
            connect_timeout: config.connect_timeout,
            request_timeout: config.request_timeout,
            body_limit: config.body_limit,
            proxy: &config.proxy,
        })?;
        Ok(GitLabClient {
            requester: Requester {
                transport,
                policy: config.retry.clone(),
                sleeper,
                limits: Default::default(),
            },
            project,
            max_pages: config.max_pages.max(1),
        })
    }

    /// The API base URL, as parsed (a trailing `/`, no query).
    pub fn api_base(&self) -> &url::Url {
        self.requester.transport.base()
    }

    /// The project id or path, as configured (trimmed).
    pub fn project(&self) -> &str {
        &self.project
    }

    /// Requests sent so far through this client.
    pub fn request_counts(&self) -> RequestCounts {
        self.requester.transport.counts()
    }

    /// The rate limits this client met so far: waits spent on them, writes refused with 429.
    pub fn rate_limits(&self) -> RateLimitTally {
        self.requester.rate_limits()
    }

    /// `text` with the token removed in every form the transport knows (exact, case-folded,
    /// percent-encoded): for reports that quote what GitLab answered.
    pub fn redact(&self, text: impl Into<String>) -> String {
        self.requester.transport.redact(text.into())
    }

    /// The id of the user behind the token (`GET /user`).
    pub fn current_user_id(&self) -> Result<u64, ForgeError> {
        #[derive(serde::Deserialize)]
        struct CurrentUserId {
            id: u64,
        }
        let endpoint = CurrentUser::builder()
            .build()
            .map_err(|e| build_error("user", e))?;
        let user: CurrentUserId = self.get(&endpoint)?;
        Ok(user.id)
    }

    /// Sends `endpoint` and decodes its JSON answer: a GET is retried per the policy, any
    /// other method is sent once (an unclear outcome is [`ForgeError::AmbiguousWrite`]).
    pub fn send_json<E: Endpoint>(&self, endpoint: &E) -> Result<serde_json::Value, ForgeError> {
        let request = self.prepare(endpoint)?;
        if request.method.is_read() {
            let response = self.requester.read(&request)?;
            self.decode_read(&request, &response)
        } else {
            let response = self.requester.write(&request)?;
            self.decode_write(&request, &response)
        }
    }

    pub(crate) fn project_ref(&self) -> NameOrId<'_> {
        NameOrId::Name(Cow::Borrowed(&self.project))
    }

    pub(crate) fn prepare<E: Endpoint>(&self, endpoint: &E) -> Result<PreparedRequest, ForgeError> {
        PreparedRequest::from_endpoint(self.requester.transport.base(), endpoint)
    }

    pub(crate) fn listing<'a>(&self, what: &'a str, missing_is_empty: bool) -> Listing<'a> {
        Listing {
            what,
            missing_is_empty,
            max_pages: self.max_pages,
        }
    }

    pub(crate) fn decode_read<T: DeserializeOwned>(
        &self,
        request: &PreparedRequest,
        response: &RawResponse,
    ) -> Result<T, ForgeError> {
        serde_json::from_slice(&response.body).map_err(|e| ForgeError::Decode {
            method: request.method.as_str().to_owned(),
            route: request.route(),
            message: self.requester.transport.redact(e.to_string()),
        })
    }

    /// A write's 2xx answer that cannot be understood: the write took effect but its ids are
    /// unknown, so the caller must list again, as after any ambiguous write.
    pub(crate) fn decode_write<T: DeserializeOwned>(
        &self,
        request: &PreparedRequest,
        response: &RawResponse,
    ) -> Result<T, ForgeError> {
        serde_json::from_slice(&response.body).map_err(|e| ForgeError::AmbiguousWrite {
            method: request.method.as_str().to_owned(),
            route: request.route(),
            message: self.requester.transport.redact(format!(
                "HTTP {} with an unexpected body: {e}",
                response.status
            )),
        })
    }

    pub(crate) fn get<T: DeserializeOwned, E: Endpoint>(
        &self,
        endpoint: &E,
    ) -> Result<T, ForgeError> {
        let request = self.prepare(endpoint)?;
        let response = self.requester.read(&request)?;
        self.decode_read(&request, &response)
    }
}

/// An endpoint builder's refusal, as the error of the request it could not describe. Here,
/// at the lowest layer that builds requests, so the client, the repository, the project
/// routes and the forge share it.
pub(crate) fn build_error(what: &str, e: impl fmt::Display) -> ForgeError {
    ForgeError::Decode {
        method: "-".into(),
        route: what.into(),
        message: format!("cannot build the request: {e}"),
    }
}
