//! Helpers for driving the compiled `assent run` binary against the fake GitLab
//! (`tests/it/run_cli.rs`).
//!
//! [`World`] owns a fake started on `fixtures::basic()` (MR !7 of `group/sub/proj` changes
//! `topics/orders.yaml`, retention 30 → 7 days) with the example topic registry's policies
//! committed at the target SHA, and a temporary working directory for the receipt. A run is
//! the binary with a cleared environment and the CI variables of a merge request pipeline;
//! [`Invocation`] changes or removes them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use fake_gitlab::{DiffFile, Discussion, FakeGitLab, FileContent, LoggedRequest, fixtures};

use serde_json::Value;

/// The source-branch content of `topics/orders.yaml` in `fixtures::basic()` (30 → 7 days).
pub const ORDERS_BASE: &str = "topics:\n  - name: orders.events.v1\n    retention_days: 30\n";

/// A YAML registry with `orders.events.v1` kept for `days` days.
pub fn orders(days: u32) -> String {
    format!("topics:\n  - name: orders.events.v1\n    retention_days: {days}\n")
}

/// The environment a merge request pipeline gives the job.
pub fn ci_env(fake: &FakeGitLab) -> Vec<(&'static str, String)> {
    vec![
        ("CI_API_V4_URL", fake.base_url()),
        ("CI_PROJECT_ID", fixtures::PROJECT_PATH.to_owned()),
        ("CI_MERGE_REQUEST_IID", fixtures::MR_IID.to_string()),
        (
            "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA",
            fixtures::HEAD_SHA.to_owned(),
        ),
        (
            "CI_MERGE_REQUEST_TARGET_BRANCH_SHA",
            fixtures::TARGET_SHA.to_owned(),
        ),
        (
            "CI_MERGE_REQUEST_DIFF_BASE_SHA",
            fixtures::BASE_SHA.to_owned(),
        ),
        ("ASSENT_TOKEN", fixtures::BOT_TOKEN.to_owned()),
        // The fake applies a write before it loses the answer, never later: no late write
        // to wait for (gitlab_adapter_http.rs tests the wait against one that lands late).
        ("ASSENT_WRITE_SETTLE_SECS", "0".to_owned()),
    ]
}

/// What one run of the binary left behind.
#[derive(Debug)]
pub struct RunResult {
    /// The exit code (`None` when a signal ended the process).
    pub code: Option<i32>,
    /// Everything the run printed on stdout.
    pub stdout: String,
    /// Stderr without the progress lines: errors, help and warnings only.
    pub stderr: String,
    /// The `progress: …` lines of stderr (docs/contract.md#progress), in order.
    pub progress: Vec<String>,
    /// The receipt file's bytes, when one was written.
    pub receipt_text: Option<String>,
}

impl RunResult {
    fn from_output(output: Output, receipt: &Path) -> RunResult {
        let all = String::from_utf8(output.stderr).expect("stderr is UTF-8");
        let (progress, rest): (Vec<&str>, Vec<&str>) =
            all.lines().partition(|l| l.starts_with("progress: "));
        RunResult {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: rest.iter().map(|l| format!("{l}\n")).collect(),
            progress: progress.into_iter().map(str::to_owned).collect(),
            receipt_text: std::fs::read_to_string(receipt).ok(),
        }
    }

    /// Panics with both streams unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// The receipt, parsed.
    #[track_caller]
    pub fn receipt(&self) -> Value {
        let text = self.receipt_text.as_deref().unwrap_or_else(|| {
            panic!(
                "no receipt was written\n--- stdout\n{}\n--- stderr\n{}",
                self.stdout, self.stderr
            )
        });
        serde_json::from_str(text).expect("the receipt is JSON")
    }

    /// The receipt without its `requests` tally: the part that must not vary between runs.
    pub fn receipt_without_requests(&self) -> Value {
        let mut receipt = self.receipt();
        receipt
            .as_object_mut()
            .expect("object")
            .remove("requests")
            .expect("the receipt has a requests key");
        receipt
    }

    /// The single stderr line of a failed run.
    #[track_caller]
    pub fn error_line(&self) -> &str {
        // A `help:` line may follow the error: it says what to do, and is not a second error.
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.starts_with("help: "))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "expected one stderr line besides help, got:\n{}",
            self.stderr
        );
        lines[0]
    }

    /// The token appears in none of stdout, stderr and the receipt.
    #[track_caller]
    pub fn assert_no_token(&self) {
        for token in [
            fixtures::BOT_TOKEN,
            fixtures::READ_TOKEN,
            fixtures::HUMAN_TOKEN,
        ] {
            assert!(!self.stdout.contains(token), "token on stdout");
            assert!(!self.stderr.contains(token), "token on stderr");
            assert!(
                self.progress.iter().all(|l| !l.contains(token)),
                "token in a progress line"
            );
            if let Some(receipt) = &self.receipt_text {
                assert!(!receipt.contains(token), "token in the receipt");
            }
        }
    }
}

/// A fake GitLab seeded for `assent run`, a working directory, and the binary to run.
pub struct World {
    /// The fake GitLab the runs talk to.
    pub fake: FakeGitLab,
    /// The runs' working directory (where the receipt is written).
    pub dir: tempfile::TempDir,
    bin: PathBuf,
}

impl World {
    /// `fixtures::basic()` with the topic registry's policies at the target SHA; runs start
    /// `bin` (the caller's `env!("CARGO_BIN_EXE_assent")`).
    pub fn new(bin: impl AsRef<Path>) -> World {
        let fake = crate::start_basic();
        crate::seed_example_policies(&fake);
        World {
            fake,
            dir: tempfile::tempdir().expect("temporary directory"),
            bin: bin.as_ref().to_owned(),
        }
    }

    /// The default receipt path.
    pub fn receipt_path(&self) -> PathBuf {
        self.dir.path().join("assent-receipt.json")
    }

    /// A run with the CI environment of `fixtures::basic()`'s MR pipeline.
    pub fn invocation(&self) -> Invocation<'_> {
        Invocation {
            world: self,
            args: Vec::new(),
            env: ci_env(&self.fake),
        }
    }

    /// `assent run ARGS` with the CI environment; removes an earlier receipt first so a
    /// run that writes none is seen.
    pub fn run(&self, args: &[&str]) -> RunResult {
        self.invocation().args(args).run()
    }

    // ---- repository and MR changes (no HTTP, no log entry) ------------------------------

    /// Puts `content` at `path` in the tree of commit `sha`.
    pub fn put_file(&self, sha: &str, path: &str, content: &str) {
        self.fake.with_state(|state| {
            project(state)
                .files
                .entry(sha.to_owned())
                .or_default()
                .insert(path.to_owned(), FileContent(content.as_bytes().to_vec()));
        });
    }

    /// A push: commit `sha` is the base tree with `files` on top, the feature branch and
    /// the MR head move to it, and the MR's diff lists exactly the files that differ from
    /// the base (with the fake's placeholder diff text, which no DiffNote can sit on).
    pub fn push(&self, sha: &str, files: &[(&str, &str)]) {
        self.push_tree(sha, files, false);
    }

    /// [`World::push`], the listing carrying each file's real unified diff, as GitLab lists
    /// it: findings on changed lines become DiffNotes.
    pub fn push_with_diffs(&self, sha: &str, files: &[(&str, &str)]) {
        self.push_tree(sha, files, true);
    }

    fn push_tree(&self, sha: &str, files: &[(&str, &str)], real_diffs: bool) {
        self.fake.with_state(|state| {
            let project = project(state);
            let base = project
                .files
                .get(fixtures::BASE_SHA)
                .cloned()
                .unwrap_or_default();
            let mut tree = base.clone();
            for (path, content) in files {
                tree.insert((*path).to_owned(), FileContent(content.as_bytes().to_vec()));
            }
            let mut diffs = DiffFile::listing(&base, &tree);
            if !real_diffs {
                // The placeholder hunk the fake lists by default: no line to sit on.
                for listed in &mut diffs {
                    listed.diff = DiffFile::modified(&listed.new_path).diff;
                }
            }
            project.files.insert(sha.to_owned(), tree);
            project.branches.insert("feature".into(), sha.to_owned());
            project.mr_mut(fixtures::MR_IID).expect("mr").diffs = diffs;
        });
        self.fake
            .set_head(fixtures::PROJECT_ID, fixtures::MR_IID, sha);
    }

    /// Replaces the MR's diff listing.
    pub fn set_diffs(&self, diffs: Vec<DiffFile>) {
        self.fake.with_state(|state| {
            project(state).mr_mut(fixtures::MR_IID).expect("mr").diffs = diffs;
        });
    }

    // ---- inspection ---------------------------------------------------------------------

    /// Every discussion of the MR, in creation order.
    pub fn discussions(&self) -> Vec<Discussion> {
        self.fake
            .discussions(fixtures::PROJECT_ID, fixtures::MR_IID)
    }

    /// Resolvable discussions (finding threads) whose first note carries rule `rule`.
    pub fn threads_of(&self, rule: &str) -> Vec<Discussion> {
        let needle = format!("\"rule\":\"{rule}\"");
        self.discussions()
            .into_iter()
            .filter(|d| d.resolvable() && d.notes[0].body.lines().next().unwrap().contains(&needle))
            .collect()
    }

    /// The one resolvable discussion of rule `rule`.
    #[track_caller]
    pub fn thread(&self, rule: &str) -> Discussion {
        let threads = self.threads_of(rule);
        assert_eq!(threads.len(), 1, "threads of {rule}: {threads:#?}");
        threads.into_iter().next().unwrap()
    }

    /// Every bot summary note (plain notes carrying the summary marker).
    pub fn summaries(&self) -> Vec<fake_gitlab::Note> {
        self.discussions()
            .into_iter()
            .filter(|d| !d.resolvable())
            .flat_map(|d| d.notes)
            .filter(|n| n.author_id == fixtures::BOT_ID && n.body.contains("\"kind\":\"summary\""))
            .collect()
    }

    /// The one summary note.
    #[track_caller]
    pub fn summary(&self) -> fake_gitlab::Note {
        let summaries = self.summaries();
        assert_eq!(summaries.len(), 1, "summaries: {summaries:#?}");
        summaries.into_iter().next().unwrap()
    }

    /// The write requests logged since the last reset.
    pub fn writes(&self) -> Vec<LoggedRequest> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| r.write)
            .collect()
    }

    /// No protocol violation (token in a URL, quick-action line) was seen.
    #[track_caller]
    pub fn assert_no_violations(&self) {
        assert!(
            self.fake.violations().is_empty(),
            "{:?}",
            self.fake.violations()
        );
    }
}

fn project(state: &mut fake_gitlab::State) -> &mut fake_gitlab::Project {
    state
        .project_mut(fixtures::PROJECT_ID)
        .expect("the basic project")
}

/// One `assent run` to be started: arguments and environment.
pub struct Invocation<'a> {
    world: &'a World,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
}

impl Invocation<'_> {
    /// Appends arguments after `run`.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Sets (or replaces) an environment variable.
    pub fn env(mut self, name: &'static str, value: &str) -> Self {
        self.env.retain(|(n, _)| *n != name);
        self.env.push((name, value.to_owned()));
        self
    }

    /// Removes an environment variable.
    pub fn without(mut self, name: &str) -> Self {
        self.env.retain(|(n, _)| *n != name);
        self
    }

    fn command(&self) -> Command {
        let _ = std::fs::remove_file(self.world.receipt_path());
        let mut command = Command::new(&self.world.bin);
        command
            .arg("run")
            .args(&self.args)
            .current_dir(self.world.dir.path())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())));
        command
    }

    /// Runs to completion.
    pub fn run(self) -> RunResult {
        let output = self.command().output().expect("run the assent binary");
        RunResult::from_output(output, &self.world.receipt_path())
    }

    /// Starts the run in the background; finish it with [`Running::wait`].
    pub fn spawn(self) -> Running {
        let child = self
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the assent binary");
        Running {
            child,
            receipt: self.world.receipt_path(),
        }
    }
}

/// A run started in the background.
pub struct Running {
    child: Child,
    receipt: PathBuf,
}

impl Running {
    /// The process id of the run (to read its `/proc` entry while it runs).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the run to finish.
    pub fn wait(self) -> RunResult {
        let output = self.child.wait_with_output().expect("wait for assent");
        RunResult::from_output(output, &self.receipt)
    }
}
