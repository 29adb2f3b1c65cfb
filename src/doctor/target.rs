//! [`DoctorInputs`]: the deployment `assent doctor` is asked to check, resolved by the
//! command layer from its flags and environment. Below [`super::probe`], which sends the requests, and
//! [`super::checks`], which judges the inputs themselves, so neither imports the other for it.

use std::path::PathBuf;

use url::Url;

use crate::engine::run::inputs::PolicyProject;
use crate::gitlab::transport::Token;

/// What doctor needs; resolved by the command layer.
#[derive(Debug, Clone)]
pub struct DoctorInputs {
    /// API v4 base.
    pub api_url: String,
    /// Project id or path.
    pub project: String,
    /// The token (never printed).
    pub token: Token,
    /// Extra CA bundle.
    pub ca_file: Option<PathBuf>,
    /// Where the CA bundle setting came from (for the report), e.g. `--ca-file`.
    pub ca_source: Option<String>,
    /// The MR, when known.
    pub mr: Option<u64>,
    /// `CI_JOB_ID`, when set.
    pub job_id: Option<u64>,
    /// The CI/CD variable that holds the token (`ASSENT_TOKEN_VARIABLE`, else `ASSENT_TOKEN`).
    pub token_variable: String,
    /// The environment the assent jobs declare (`CI_ENVIRONMENT_NAME`, else `assent`).
    pub environment: String,
    /// The central policy project runs read (`--policy-project`, `ASSENT_POLICY_PROJECT`).
    pub policy_project: Option<PolicyProject>,
    /// Where `assent serve` listens (`--serve-url`, `ASSENT_SERVE_URL`).
    pub serve_url: Option<Url>,
    /// The account declared as the bot (`ASSENT_BOT_USER`) where the token's user is a
    /// person's account (a dedicated one, on a tier without project access tokens).
    pub bot_user: Option<String>,
    /// Today's date (UTC), for the `token-expiry` check: read from the clock by the command,
    /// so the checks stay pure.
    pub today: chrono::NaiveDate,
    /// `ASSENT_PREVIOUS_BOT_USERS`: previous bot users whose markers a run adopts, for the
    /// `bot-markers` check.
    pub previous_bot_users: Vec<String>,
}
