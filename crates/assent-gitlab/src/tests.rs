//! Loopback tests of the adapter against the fake GitLab (`fake_gitlab`), the one fake every
//! HTTP test uses. Its state answers as GitLab would; its fault rules give what a test needs
//! beyond that: statuses and refusals, the forms of `Retry-After`, header edits (pagination
//! headers stripped or lying, `RateLimit-*` on a successful write), closed connections, and
//! exact replies for JSON shapes the state cannot hold (fields missing or `null`). Its request
//! log is what the adapter sent. Certificate tests reach it through its HTTPS front
//! (`fake_gitlab::tls`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fake_gitlab::fixtures::{self, BOT_ID, HUMAN_ID, MR_IID, PROJECT_ID, PROJECT_PATH};
use fake_gitlab::tls::TlsFront;
use fake_gitlab::{
    DiffFile, Discussion, FakeGitLab, FaultAction, FaultRule, FileContent, LoggedRequest, Note,
    RouteKind, State,
};
use serde_json::{Value, json};

use super::*;
use assent_core::model::MergeRequestState;
use assent_forge::{Forge, ForgeError, Repository, RepositoryFiles, RequestCounts};

pub(crate) const TOKEN: &str = "glpat-SuperSecretToken123";

/// The fake's basic world (project `group/sub/proj` with open MR !7, the bot `assent-bot`)
/// with [`TOKEN`] as one of the bot's tokens.
pub(crate) fn world() -> State {
    let mut state = fixtures::basic();
    state
        .tokens
        .push(fake_gitlab::Token::new(TOKEN, BOT_ID, &["api"]));
    state
}

/// [`world`] whose MR lists `count` resolvable threads, note ids `1000..1000 + count`.
fn with_discussions(count: usize) -> State {
    let mut state = world();
    let mr = state.projects[0].mr_mut(MR_IID).unwrap();
    for i in 0..count {
        mr.discussions.push(Discussion {
            notes: vec![Note {
                id: 1000 + i as u64,
                note_type: Some("DiscussionNote".into()),
                body: format!("note {i}"),
                author_id: HUMAN_ID,
                resolvable: true,
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    state
}

/// [`world`] with `content` at `path` in the tree of commit `sha`.
/// `text` as the commit SHA it is: a test's SHAs are real ones.
fn sha(text: &str) -> assent_core::commit_sha::CommitSha {
    assent_core::commit_sha::CommitSha::parse(text).expect("a commit SHA")
}

/// The commit the body-limit and LFS tests keep their files at.
const FILE_SHA: &str = "abc0000000000000000000000000000000000000";

fn with_file(mut state: State, sha: &str, path: &str, content: &[u8]) -> State {
    state.projects[0]
        .files
        .entry(sha.into())
        .or_default()
        .insert(path.into(), FileContent(content.to_vec()));
    state
}

/// Exactly this answer: `status`, `headers` and `body`.
fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> FaultAction {
    FaultAction::Reply {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        body: body.to_owned(),
    }
}

/// Exactly this JSON answer.
fn json_reply(status: u16, value: Value) -> FaultAction {
    reply(
        status,
        &[("Content-Type", "application/json")],
        &value.to_string(),
    )
}

/// A listing's one and last page: this JSON, `X-Next-Page` empty.
pub(crate) fn last_page(value: Value) -> FaultAction {
    reply(
        200,
        &[("Content-Type", "application/json"), ("X-Next-Page", "")],
        &value.to_string(),
    )
}

/// GitLab's application limit refusing a request: 429 JSON, no header saying how long.
fn json_429() -> FaultAction {
    json_reply(
        429,
        json!({"message": "This endpoint has been requested too many times. Try again later."}),
    )
}

/// Edits the answer's headers: `remove` goes, `set` replaces.
fn headers(set: &[(&str, &str)], remove: &[&str]) -> FaultAction {
    FaultAction::Headers {
        set: set
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        remove: remove.iter().map(|h| (*h).to_owned()).collect(),
    }
}

/// Every header by which GitLab paginates.
const PAGINATION_HEADERS: &[&str] = &[
    "X-Page",
    "X-Per-Page",
    "X-Next-Page",
    "X-Prev-Page",
    "X-Total",
    "X-Total-Pages",
    "Link",
];

#[derive(Default)]
struct RecordingSleeper(Mutex<Vec<Duration>>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) {
        self.0.lock().unwrap().push(delay);
    }
}

impl RecordingSleeper {
    fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

/// The bot's connection to the fake's project, without a proxy.
pub(crate) fn config(fake: &FakeGitLab) -> GitLabConfig {
    let mut config = GitLabConfig::new(fake.base_url(), Token::new(TOKEN), PROJECT_PATH);
    config.proxy = ProxyConfig::Direct;
    config.connect_timeout = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(3);
    config
}

fn forge_with(config: GitLabConfig) -> (GitLabForge, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    (
        GitLabForge::with_sleeper(config, MR_IID, sleeper.clone()).unwrap(),
        sleeper,
    )
}

fn forge(fake: &FakeGitLab) -> (GitLabForge, Arc<RecordingSleeper>) {
    forge_with(config(fake))
}

const MR: &str = "/api/v4/projects/group%2Fsub%2Fproj/merge_requests/7";

/// A request as sent: method, path and query.
fn line(request: &LoggedRequest) -> String {
    match request.query.as_str() {
        "" => format!("{} {}", request.method, request.path),
        query => format!("{} {}?{query}", request.method, request.path),
    }
}

/// The discussions pages the adapter asked for.
fn discussion_pages(fake: &FakeGitLab) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .count()
}

mod body_limit_tests;
mod certificate_tests;
mod config_and_proxy_tests;
mod diff_note_tests;
mod discussion_tests;
mod lfs_and_refs_tests;
mod merge_request_reads_tests;
mod pagination_tests;
mod redirect_and_token_tests;
mod repository_read_tests;
mod retry_tests;
mod tls_to_plain_http_tests;
mod token_and_users_tests;
mod url_encoding_tests;
mod write_rate_limit_tests;
mod write_tests;
