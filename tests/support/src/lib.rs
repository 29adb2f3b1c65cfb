//! Helpers shared by assent's integration tests (`tests/it/`), the end-to-end benchmark
//! (`benches/e2e.rs`) and the fuzz targets (`tests/fuzz/`).
//!
//! How the tests reach a GitLab: they do not. Each test starts its own fake GitLab in
//! process with `fake_gitlab::FakeGitLab::start(state)`: it binds `127.0.0.1:0` (an
//! ephemeral loopback port the OS picks, so tests run in parallel without clashing), serves
//! from background threads, and stops when the handle is dropped at the end of the test.
//! No manual step, no network, no container. The adapter under test is a real
//! [`GitLabForge`] pointed at `fake.base_url()`, with `ProxyConfig::Direct` (an
//! `HTTPS_PROXY` in the environment must not capture loopback traffic), short timeouts and
//! a sleeper that records the delays the retry policy asks for instead of sleeping.
//!
//! * [`start_basic`] / [`forge_for`]: the fake's `fixtures::basic()` world (project 42
//!   `group/sub/proj`, MR !7, bot user 100) and an adapter for it.
//! * [`http_world::FakeGitLabWorld`]: a [`assent::engine::fixture::FixtureWorld`] over HTTP, so the
//!   protocol fixtures replay against the fake exactly as they do in memory.
//! * [`run`]: the compiled `assent run` against the basic world, one [`run::World`] per test.
//! * [`process`]: the binary as a real process under faults, and the forge state it leaves;
//!   following a started `assent serve`'s log to its port (`tests/it/serve.rs`, `benches/serve.rs`).
//! * [`perf_world`]: generated merge requests of a chosen size, and the request counts the
//!   protocol implies for them.
//! * [`fuzz`]: the properties the fuzz targets check, also run by the ordinary test suite.
//! * [`git_repo`]: an isolated git repository for `assent check`'s tests and benchmark.
//!
//! A library crate cannot see `env!("CARGO_BIN_EXE_assent")` (Cargo sets it only for the
//! integration tests and benchmarks of the package that owns the binary), so every helper
//! that starts the binary takes its path from the caller.

pub mod fuzz;
pub mod git_repo;
pub mod http_world;
pub mod perf_world;
pub mod process;
pub mod run;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assent::gitlab::{GitLabConfig, GitLabForge, ProxyConfig, RetryPolicy, Sleeper, Token};
use fake_gitlab::{FakeGitLab, fixtures};

/// `text` as the commit SHA a test means by it; panics when it is none.
pub fn sha(text: &str) -> assent::core::commit_sha::CommitSha {
    assent::core::commit_sha::CommitSha::parse(text).expect("a commit SHA")
}

/// The root of the assent repository, where `fixtures/` lives: this crate sits two levels
/// below it (`tests/support`), and `CARGO_MANIFEST_DIR` names this crate, not the caller.
pub fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A sleeper that records every delay and returns at once.
#[derive(Debug, Default)]
pub struct RecordingSleeper(Mutex<Vec<Duration>>);

impl RecordingSleeper {
    /// Every delay asked for so far, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(delay);
    }
}

/// The project's client configuration and the MR a test's forge is for. It reads and
/// writes as the [`GitLabConfig`] it holds, so a test adjusts `config.body_limit` and the
/// like directly.
#[derive(Debug, Clone)]
pub struct ForgeConfig {
    /// The project's client configuration.
    pub gitlab: GitLabConfig,
    /// The merge request.
    pub mr: u64,
}

impl std::ops::Deref for ForgeConfig {
    type Target = GitLabConfig;
    fn deref(&self) -> &GitLabConfig {
        &self.gitlab
    }
}

impl std::ops::DerefMut for ForgeConfig {
    fn deref_mut(&mut self) -> &mut GitLabConfig {
        &mut self.gitlab
    }
}

/// A configuration for `project`/`mr` on `fake` with `token`: direct connection, short
/// timeouts, the default retry policy.
pub fn config_for(fake: &FakeGitLab, token: &str, project: &str, mr: u64) -> ForgeConfig {
    let mut config = GitLabConfig::new(fake.base_url(), Token::new(token), project);
    config.proxy = ProxyConfig::Direct;
    config.connect_timeout = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(5);
    config.retry = RetryPolicy::default();
    ForgeConfig { gitlab: config, mr }
}

/// Builds the adapter for `config` with a [`RecordingSleeper`].
pub fn forge_with(config: ForgeConfig) -> (GitLabForge, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    let forge =
        GitLabForge::with_sleeper(config.gitlab, config.mr, sleeper.clone()).expect("valid config");
    (forge, sleeper)
}

/// The adapter for the basic world's MR (!7 of `group/sub/proj`) with the bot's token.
pub fn forge_for(fake: &FakeGitLab) -> (GitLabForge, Arc<RecordingSleeper>) {
    forge_with(config_for(
        fake,
        fixtures::BOT_TOKEN,
        fixtures::PROJECT_PATH,
        fixtures::MR_IID,
    ))
}

/// A fake started on `fixtures::basic()`, time frozen so timestamps are reproducible.
pub fn start_basic() -> FakeGitLab {
    let fake = FakeGitLab::start(fixtures::basic());
    fake.set_time("2026-01-01T00:00:00.000Z");
    fake
}

/// Commits the example repository's policies (`fixtures/repos/topic-registry/.assent/policies`)
/// at the basic world's target SHA, where `assent run` reads them.
pub fn add_example_policies(state: &mut fake_gitlab::State) {
    let dir = repo_root().join("fixtures/repos/topic-registry/.assent/policies");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("example policies")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let tree = state
        .project_mut(fixtures::PROJECT_ID)
        .expect("the basic project")
        .files
        .entry(fixtures::TARGET_SHA.to_owned())
        .or_default();
    for file in &files {
        let path = format!(
            ".assent/policies/{}",
            file.file_name().unwrap().to_string_lossy()
        );
        tree.insert(
            path,
            fake_gitlab::FileContent(std::fs::read(file).expect("policy file")),
        );
    }
}

/// [`add_example_policies`] on a running fake.
pub fn seed_example_policies(fake: &FakeGitLab) {
    fake.with_state(add_example_policies);
}

/// An MR's discussions as the adapter lists them, read from the fake's state (uncounted).
pub fn listed_discussions(
    fake: &FakeGitLab,
    project: u64,
    mr: u64,
) -> Vec<assent::core::model::ListedDiscussion> {
    use assent::core::model::{ListedDiscussion, ListedNote, UserRef};
    let username = |id: u64| {
        fake.with_state(|s| {
            s.users
                .iter()
                .find(|u| u.id == id)
                .map(|u| u.username.clone())
        })
        .unwrap_or_default()
    };
    fake.discussions(project, mr)
        .into_iter()
        .map(|d| ListedDiscussion {
            id: d.id,
            individual_note: d.individual_note,
            notes: d
                .notes
                .into_iter()
                .map(|n| ListedNote {
                    id: n.id,
                    author_id: n.author_id,
                    system: n.system,
                    resolvable: n.resolvable,
                    resolved: n.resolvable && n.resolved,
                    resolved_by: n.resolved_by.map(|id| UserRef {
                        id,
                        username: username(id),
                    }),
                    resolved_at: n.resolved_at,
                    diff_note: n.note_type.as_deref() == Some("DiffNote"),
                    body: n.body,
                    created_at: Some(n.created_at),
                    updated_at: Some(n.updated_at),
                })
                .collect(),
        })
        .collect()
}
