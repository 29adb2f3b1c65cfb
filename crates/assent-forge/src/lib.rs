//! The ports through which assent talks to a forge, and the in-memory adapter.
//!
//! [`Forge`] reads and writes review artifacts of one merge request; [`Repository`] reads the
//! content a run judges; [`sweep_port::SweepForge`] is the project-level port of the sweep and of
//! serve (open MRs, discussions, head pipeline, MR pipeline creation). The planner and executor never know which adapter they talk to:
//! [`memory::InMemoryForge`] (replay, tests) or the `assent-gitlab` crate (HTTP).
//!
//! Invariants: this crate names only `assent-core`; nothing here does I/O. A [`ForgeError`]
//! never carries the token.

#![forbid(unsafe_code)]

pub mod faults;
pub mod memory;
pub mod sweep_port;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use assent_core::commit_sha::CommitSha;
pub use assent_core::model::Account;
use assent_core::model::{DiffPosition, ListedDiscussion, MergeRequestInfo, Role};

/// Why a forge request failed. Texts never contain the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForgeError {
    /// The forge answered with an error status (after retries, for reads).
    #[error("{method} {route}: HTTP {status}: {message}")]
    Status {
        /// HTTP method.
        method: String,
        /// Route without host, query secrets or token.
        route: String,
        /// HTTP status code.
        status: u16,
        /// The forge's message, or a short description.
        message: String,
    },
    /// The request did not get an answer (connection, TLS, timeout), after retries for reads.
    #[error("{method} {route}: {message}")]
    Transport {
        /// HTTP method.
        method: String,
        /// Route without host or token.
        route: String,
        /// What went wrong.
        message: String,
        /// What went wrong, as the transport could tell it: what advice is chosen from.
        cause: TransportFailure,
    },
    /// A write whose outcome is unknown (sent, but no usable answer): the next listing decides.
    #[error("{method} {route}: outcome unknown: {message}")]
    AmbiguousWrite {
        /// HTTP method.
        method: String,
        /// Route without host or token.
        route: String,
        /// What went wrong.
        message: String,
    },
    /// GitLab kept refusing the request with 429 (its rate limits) until the run's budget for
    /// rate-limit waits was spent. A 429 is answered before GitLab acts, so nothing was
    /// written by this request. (Boxed: the details would make every `Result` larger.)
    #[error(transparent)]
    RateLimited(Box<RateLimited>),
    /// A listing that could not be proven complete.
    #[error("incomplete listing of {what}: {reason}")]
    IncompleteListing {
        /// What was being listed.
        what: String,
        /// Why it is not provably complete.
        reason: String,
    },
    /// The answer could not be understood.
    #[error("{method} {route}: unexpected response: {message}")]
    Decode {
        /// HTTP method.
        method: String,
        /// Route without host or token.
        route: String,
        /// What did not parse.
        message: String,
    },
    /// A fault injected by a test or fixture (a simulated crash).
    #[error("injected fault: {0}")]
    Injected(String),
}

/// A request GitLab refused with 429 once the run could wait no longer
/// ([`ForgeError::RateLimited`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{method} {route}: rate limited: GitLab answered 429 ({message}); the next wait of {} does not fit the run's budget for rate limits ({} waited of {}); nothing was written by this request",
    seconds(*next_wait),
    seconds(*waited),
    seconds(*budget)
)]
pub struct RateLimited {
    /// HTTP method.
    pub method: String,
    /// Route without host or token.
    pub route: String,
    /// GitLab's message.
    pub message: String,
    /// The wait the 429 called for (asked for, or the backoff), which did not fit.
    pub next_wait: Duration,
    /// The rate-limit waits of the run so far, all requests together.
    pub waited: Duration,
    /// The run's budget for rate-limit waits.
    pub budget: Duration,
}

/// Why a request got no answer, as far as the transport could tell
/// ([`ForgeError::Transport`]). The adapter decides it from its HTTP and TLS libraries' typed
/// errors, never from their wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// The forge's host name did not resolve.
    UnknownHost,
    /// The forge's host refused the connection, or it could not be made in time.
    ConnectFailed,
    /// A proxy is in use and the connection through it failed: the proxy could not be
    /// reached, or it refused to connect to the forge.
    Proxy,
    /// The forge's TLS certificate did not verify.
    Certificate(CertificateFailure),
    /// Another TLS failure (handshake, protocol).
    Tls,
    /// The API base says `https://` but the server answered the TLS hello in plain HTTP (a
    /// plain-HTTP GitLab, or its nginx answering `400` to bytes it cannot parse): nothing was
    /// sent, and asking again cannot help.
    PlainHttp,
    /// The request timed out after the connection was made.
    Timeout,
    /// The connection broke, or the answer could not be read.
    Other,
}

/// Why the forge's TLS certificate did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertificateFailure {
    /// No trusted certificate authority issued it (a private CA not given, or another one).
    UnknownIssuer,
    /// The server presents a CA certificate (basic constraints `CA:TRUE`) as its own, as a
    /// self-signed certificate made with `openssl req -x509` defaults is.
    CaUsedAsEndEntity,
    /// It is not valid for the host name that was asked for.
    WrongName,
    /// It has expired, or is not valid yet.
    NotCurrentlyValid,
    /// Any other reason (bad signature, unsupported algorithm, revoked, wrong purpose).
    Other,
}

/// What a [`ForgeError`] means for the caller, decided here from the status once, so that
/// the application reasons about kinds and never about HTTP status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForgeErrorKind {
    /// The forge says the thing asked for does not exist (404).
    NotFound,
    /// The forge did not accept the token for this request (401). GitLab also answers so to a
    /// second approval by the same user.
    Unauthorized,
    /// The forge says the request changes nothing because it is already so (304 Not
    /// Modified): GitLab 18 answers so to approving a merge request the user already approves
    /// and to unapproving one it does not (`lib/api/merge_request_approvals.rb`,
    /// `not_modified!`). Nothing was written.
    NotModified,
    /// The request conflicts with the forge's current state (409), e.g. an approval pinned
    /// to a SHA that is no longer the merge request's head. Nothing was written.
    Conflict,
    /// The forge refused this request (another 4xx, a refused redirect): retrying it as is
    /// will not help, and nothing was written.
    Refused,
    /// The forge could not answer (transport failure, 429, 5xx, after the read retries): a
    /// failure of the forge, not of this request.
    Unavailable,
    /// A write whose outcome is unknown: the next listing decides.
    Ambiguous,
    /// A listing that could not be proven complete.
    Incomplete,
    /// An answer that could not be understood.
    Decode,
    /// A fault injected by a test or fixture.
    Injected,
}

impl ForgeError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ForgeErrorKind {
        match self {
            ForgeError::Status { status: 404, .. } => ForgeErrorKind::NotFound,
            ForgeError::Status { status: 401, .. } => ForgeErrorKind::Unauthorized,
            ForgeError::Status { status: 409, .. } => ForgeErrorKind::Conflict,
            ForgeError::Status { status: 304, .. } => ForgeErrorKind::NotModified,
            ForgeError::Status { status, .. } if *status == 429 || *status >= 500 => {
                ForgeErrorKind::Unavailable
            }
            ForgeError::Status { .. } => ForgeErrorKind::Refused,
            ForgeError::Transport { .. } | ForgeError::RateLimited(_) => {
                ForgeErrorKind::Unavailable
            }
            ForgeError::AmbiguousWrite { .. } => ForgeErrorKind::Ambiguous,
            ForgeError::IncompleteListing { .. } => ForgeErrorKind::Incomplete,
            ForgeError::Decode { .. } => ForgeErrorKind::Decode,
            ForgeError::Injected(_) => ForgeErrorKind::Injected,
        }
    }

    /// True when a write may have taken effect even though it reported failure.
    pub fn is_ambiguous_write(&self) -> bool {
        matches!(self, ForgeError::AmbiguousWrite { .. })
    }

    /// True when GitLab's rate limits outlasted the run's budget for waiting on them.
    pub fn is_rate_limited(&self) -> bool {
        matches!(self, ForgeError::RateLimited(_))
    }

    /// The HTTP status of a definite refusal, `None` for every other failure.
    pub fn status(&self) -> Option<u16> {
        match self {
            ForgeError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A duration as error texts show it: whole seconds, or tenths below ten seconds.
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(10) && d.subsec_millis() != 0 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} s", d.as_secs())
    }
}

/// A thread just created: its discussion id and first note id (its forge id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedThread {
    /// The discussion id (40 hex on GitLab).
    pub discussion_id: String,
    /// The first note's integer id.
    pub note_id: u64,
}

/// Requests made through one adapter so far: the receipt's own type.
pub use assent_core::receipt::RequestCounts;

/// Review-artifact access to one merge request.
///
/// Implementations count their requests; writes are never retried by the adapter.
pub trait Forge: Send + Sync {
    /// The user id behind the token (`GET /user`). Only this author's notes are artifacts.
    fn bot_user_id(&self) -> Result<u64, ForgeError>;
    /// The merge request's state, head and diff refs.
    fn merge_request(&self) -> Result<MergeRequestInfo, ForgeError>;
    /// Every discussion of the merge request, all pages, notes oldest first; an error when
    /// the listing cannot be proven complete.
    fn list_discussions(&self) -> Result<Vec<ListedDiscussion>, ForgeError>;
    /// The head commit of every diff version the forge keeps of the merge request, newest
    /// first (GitLab: `GET …/versions`, `head_commit_sha` of each, one version per push):
    /// every SHA that was ever the merge request's head. An error when the listing cannot be
    /// proven complete. Read only when a pipeline's source SHA is not the current head, to
    /// tell an earlier head (a stale pipeline) from a SHA that never was one (a job that is
    /// not this merge request's pipeline).
    fn version_heads(&self) -> Result<Vec<CommitSha>, ForgeError>;
    /// Creates a resolvable thread whose first note has `body`: a general thread, or with a
    /// `position` a thread on that line of the merge request's diff (a GitLab DiffNote,
    /// docs/contract.md#diffnotes). A position the forge does not accept is refused with 400 before anything
    /// is written, so the caller may then create the general thread instead.
    fn create_thread(
        &self,
        body: &str,
        position: Option<&DiffPosition>,
    ) -> Result<CreatedThread, ForgeError>;
    /// Replies in a thread; returns the new note id.
    fn reply_to_thread(&self, discussion_id: &str, body: &str) -> Result<u64, ForgeError>;
    /// Marks a thread resolved.
    fn resolve_thread(&self, discussion_id: &str) -> Result<(), ForgeError>;
    /// Creates a plain (non-resolvable) note; returns its id.
    fn create_note(&self, body: &str) -> Result<u64, ForgeError>;
    /// Replaces a note's body.
    fn edit_note(&self, note_id: u64, body: &str) -> Result<(), ForgeError>;
    /// The project role of `user_id` (`GET /projects/:id/members/all/:user_id`, inherited
    /// membership included); `None` when the user is not a member. Read only for rules
    /// that narrow who may assent by role.
    fn project_role(&self, user_id: u64) -> Result<Option<Role>, ForgeError>;
    /// What the forge says of user `user_id`'s account (`GET /users/:id`: whether GitLab
    /// marks it a bot, its `state`); `None` when the forge does not show the user to the
    /// token (404). Read once per distinct resolver of a challenge, so that a bot's or an
    /// inactive account's resolution never counts (docs/contract.md#who-may-assent).
    fn user_account(&self, user_id: u64) -> Result<Option<Account>, ForgeError>;
    /// Whether the project resolves outdated diff threads when a push changes their lines
    /// (GitLab's "Automatically resolve threads that become outdated",
    /// `resolve_outdated_diff_discussions` on `GET /projects/:id`). While it does, a DiffNote
    /// thread's resolution may be a push's, so it is not read as assent. A forge that does
    /// not say answers `true` (fail closed).
    fn resolves_outdated_diff_threads(&self) -> Result<bool, ForgeError>;
    /// Whether the bot (the token's user) approves the merge request right now
    /// (`GET …/approvals`, the bot's id among `approved_by[].user.id`).
    fn bot_approves(&self) -> Result<bool, ForgeError>;
    /// Approves the merge request as the bot, pinned to `sha`: the forge refuses with
    /// [`ForgeErrorKind::Conflict`] when the head is no longer `sha`, and answers
    /// [`ForgeErrorKind::NotModified`] (GitLab 18) or [`ForgeErrorKind::Unauthorized`]
    /// (earlier GitLab) when the bot approves already.
    fn approve(&self, sha: &CommitSha) -> Result<(), ForgeError>;
    /// Withdraws the bot's approval; the forge answers [`ForgeErrorKind::NotModified`]
    /// (GitLab 18) or [`ForgeErrorKind::NotFound`] (earlier GitLab) when the bot does not
    /// approve.
    fn unapprove(&self) -> Result<(), ForgeError>;
    /// Requests made so far.
    fn request_counts(&self) -> RequestCounts;
}

/// One file the merge request changes, as the forge's diff listing reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Path at the base SHA.
    pub old_path: String,
    /// Path at the source SHA.
    pub new_path: String,
    /// Created by the MR.
    pub new_file: bool,
    /// Deleted by the MR.
    pub deleted_file: bool,
    /// Renamed by the MR.
    pub renamed_file: bool,
    /// The forge withheld this file's diff text (GitLab's `collapsed` or `too_large`): no
    /// thread can be placed on its lines, and its contents are judged like any other file's
    /// (docs/contract.md#withheld-diffs).
    pub withheld: bool,
    /// The file's unified diff text as the forge lists it (GitLab's `diff`), from which the
    /// lines it adds and removes are read (`assent_core::unified_diff`); empty when withheld.
    pub diff: String,
    /// What `old_path` is at the base SHA (GitLab's `a_mode`).
    pub old_mode: FileMode,
    /// What `new_path` is at the source SHA (GitLab's `b_mode`).
    pub new_mode: FileMode,
}

impl ChangedFile {
    /// A change of regular files: the modes follow `new_file` and `deleted_file` (absent on
    /// the side the file does not exist, a regular `100644` file on the other).
    pub fn regular(
        old_path: impl Into<String>,
        new_path: impl Into<String>,
        new_file: bool,
        deleted_file: bool,
    ) -> Self {
        let side = |exists: bool| {
            if exists {
                FileMode::Regular
            } else {
                FileMode::Absent
            }
        };
        ChangedFile {
            old_path: old_path.into(),
            new_path: new_path.into(),
            new_file,
            deleted_file,
            renamed_file: false,
            withheld: false,
            diff: String::new(),
            old_mode: side(!new_file),
            new_mode: side(!deleted_file),
        }
    }
}

/// What a path is on one side of a change, from git's mode as the forge lists it (GitLab's
/// `a_mode`/`b_mode` strings). Only a regular file is content assent can judge: a symbolic
/// link's "content" is the path it points to, and a submodule has none in this repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileMode {
    /// `0`: nothing at this path on this side.
    Absent,
    /// `100644`: a regular file.
    Regular,
    /// `100755`: a regular, executable file.
    Executable,
    /// `120000`: a symbolic link.
    Symlink,
    /// `160000`: a submodule (a commit of another repository).
    Submodule,
    /// Any other mode, as listed (empty when the forge gave none).
    Other(String),
}

impl FileMode {
    /// The mode of git's octal `mode` string (`"100644"`, `"0"`, …).
    pub fn from_git(mode: &str) -> Self {
        match mode {
            "0" | "000000" => FileMode::Absent,
            "100644" => FileMode::Regular,
            "100755" => FileMode::Executable,
            "120000" => FileMode::Symlink,
            "160000" => FileMode::Submodule,
            other => FileMode::Other(other.to_owned()),
        }
    }

    /// Git's mode string of an entry whose content the repository holds (a file, executable
    /// or not, or a symbolic link, whose content is its target); `None` for anything else (a
    /// submodule, an unknown mode, or no entry).
    pub fn git_mode(&self) -> Option<&'static str> {
        match self {
            FileMode::Regular => Some("100644"),
            FileMode::Executable => Some("100755"),
            FileMode::Symlink => Some("120000"),
            FileMode::Absent | FileMode::Submodule | FileMode::Other(_) => None,
        }
    }

    /// Whether the path is a regular file (executable or not): the only content judged.
    pub fn is_regular_file(&self) -> bool {
        matches!(self, FileMode::Regular | FileMode::Executable)
    }

    /// What this is, in words, with its git mode, for a finding's reason.
    pub fn describe(&self) -> String {
        match self {
            FileMode::Absent => "absent (mode 0)".into(),
            FileMode::Regular => "a regular file (mode 100644)".into(),
            FileMode::Executable => "an executable file (mode 100755)".into(),
            FileMode::Symlink => "a symbolic link (mode 120000)".into(),
            FileMode::Submodule => "a submodule (mode 160000)".into(),
            FileMode::Other(mode) if mode.is_empty() => "listed without a git mode".into(),
            FileMode::Other(mode) => format!("of the unknown git mode {mode:?}"),
        }
    }
}

/// A run's allowance of governed content, in bytes, shared by the reads of one run however
/// many run at once. A read takes its bytes from it before they are held (from the announced
/// length, else as they arrive); once a read does not fit, the budget is spent and every
/// later read refuses without asking the forge. Whether a run goes over is a function of
/// what it reads, never of the order reads finish in: the sum of every answer fits, or some
/// read does not.
#[derive(Debug)]
pub struct ContentBudget {
    limit: u64,
    taken: AtomicU64,
    spent: AtomicBool,
}

impl ContentBudget {
    /// A budget of `limit` bytes, none taken.
    pub fn new(limit: u64) -> Self {
        ContentBudget {
            limit,
            taken: AtomicU64::new(0),
            spent: AtomicBool::new(false),
        }
    }

    /// The budget's size in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Takes `bytes` from the budget when they fit; otherwise takes nothing and marks the
    /// budget spent.
    pub fn try_take(&self, bytes: u64) -> bool {
        let fits = self
            .taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                taken
                    .checked_add(bytes)
                    .filter(|total| *total <= self.limit)
            })
            .is_ok();
        if !fits {
            self.spent.store(true, Ordering::Release);
        }
        fits
    }

    /// Gives back `bytes` taken by a read that did not complete (it is sent again, or fails).
    pub fn give_back(&self, bytes: u64) {
        let _ = self
            .taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                Some(taken.saturating_sub(bytes))
            });
    }

    /// Whether some read did not fit: no further read is sent.
    pub fn is_spent(&self) -> bool {
        self.spent.load(Ordering::Acquire)
    }
}

/// What a read within a [`ContentBudget`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetedRead {
    /// The path does not exist at that SHA (404).
    Absent,
    /// The file's bytes, taken from the budget.
    Present(Vec<u8>),
    /// The file did not fit in what was left of the budget, or the budget was spent before
    /// the read: its bytes were not read (or not past the point they stopped fitting).
    OverBudget,
}

/// The project's repository at pinned SHAs: content reads that belong to no merge request,
/// so a project-level client (`assent doctor`'s policy check) reads them as a run does.
pub trait RepositoryFiles: Send + Sync {
    /// Paths of the blobs under `dir` (recursive) at `sha`; empty when `dir` does not exist.
    fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError>;
    /// The bytes of `path` at `sha`; `None` when it does not exist there (404). A file
    /// stored in Git LFS is read as its LFS object where the forge serves it (GitLab:
    /// `lfs=true`), otherwise as the pointer the repository holds.
    fn read_file(&self, sha: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, ForgeError>;
    /// [`RepositoryFiles::read_file`] taking the bytes from `budget`: once the budget is
    /// spent nothing is read, and a file that does not fit is [`BudgetedRead::OverBudget`].
    /// This default reads first and then takes the bytes, which costs nothing more where the
    /// content is in memory already; an adapter that downloads overrides it so that no byte
    /// past the budget is downloaded.
    fn read_file_within(
        &self,
        sha: &CommitSha,
        path: &str,
        budget: &ContentBudget,
    ) -> Result<BudgetedRead, ForgeError> {
        if budget.is_spent() {
            return Ok(BudgetedRead::OverBudget);
        }
        Ok(match self.read_file(sha, path)? {
            None => BudgetedRead::Absent,
            Some(bytes) if budget.try_take(bytes.len() as u64) => BudgetedRead::Present(bytes),
            Some(_) => BudgetedRead::OverBudget,
        })
    }
    /// The tip SHA of `branch` (used when the target SHA is not pinned by CI).
    fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError>;
}

/// A project read for its policies only, beside the governed one (central policies,
/// docs/policies.md "Central policies"): its content at pinned SHAs, and the branch a
/// configuration that names no ref reads.
pub trait PolicyProjectFiles: RepositoryFiles {
    /// The name of the project's default branch.
    fn default_branch(&self) -> Result<String, ForgeError>;
}

/// One merge request's view of the repository: what it changes, and content at pinned SHAs.
pub trait Repository: RepositoryFiles {
    /// Every file the merge request changes, all pages; an error when the listing cannot be
    /// proven complete.
    fn changed_files(&self) -> Result<Vec<ChangedFile>, ForgeError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> ForgeError {
        ForgeError::Status {
            method: "GET".into(),
            route: "r".into(),
            status,
            message: "m".into(),
        }
    }

    #[test]
    fn every_status_has_one_kind() {
        assert_eq!(status(404).kind(), ForgeErrorKind::NotFound);
        assert_eq!(status(401).kind(), ForgeErrorKind::Unauthorized);
        assert_eq!(status(409).kind(), ForgeErrorKind::Conflict);
        for refused in [301, 400, 403, 422] {
            assert_eq!(status(refused).kind(), ForgeErrorKind::Refused, "{refused}");
        }
        for unavailable in [429, 500, 502, 503, 504] {
            assert_eq!(
                status(unavailable).kind(),
                ForgeErrorKind::Unavailable,
                "{unavailable}"
            );
        }
        let transport = ForgeError::Transport {
            method: "GET".into(),
            route: "r".into(),
            message: "reset".into(),
            cause: TransportFailure::Other,
        };
        assert_eq!(transport.kind(), ForgeErrorKind::Unavailable);
        let ambiguous = ForgeError::AmbiguousWrite {
            method: "POST".into(),
            route: "r".into(),
            message: "lost".into(),
        };
        assert_eq!(ambiguous.kind(), ForgeErrorKind::Ambiguous);
        assert!(ambiguous.is_ambiguous_write());
    }

    #[test]
    fn git_modes_name_what_a_path_is() {
        assert_eq!(FileMode::from_git("100644"), FileMode::Regular);
        assert_eq!(FileMode::from_git("100755"), FileMode::Executable);
        assert_eq!(FileMode::from_git("120000"), FileMode::Symlink);
        assert_eq!(FileMode::from_git("160000"), FileMode::Submodule);
        assert_eq!(FileMode::from_git("0"), FileMode::Absent);
        assert_eq!(FileMode::from_git(""), FileMode::Other(String::new()));
        assert_eq!(
            FileMode::from_git("040000"),
            FileMode::Other("040000".into())
        );
        let regular: Vec<bool> = ["100644", "100755", "120000", "160000", "0", "", "644"]
            .iter()
            .map(|m| FileMode::from_git(m).is_regular_file())
            .collect();
        assert_eq!(regular, [true, true, false, false, false, false, false]);
        assert_eq!(
            FileMode::Symlink.describe(),
            "a symbolic link (mode 120000)"
        );
        assert_eq!(
            FileMode::from_git("").describe(),
            "listed without a git mode"
        );
        let new = ChangedFile::regular("a.yaml", "a.yaml", true, false);
        assert_eq!(
            (new.old_mode, new.new_mode),
            (FileMode::Absent, FileMode::Regular)
        );
    }

    #[test]
    fn a_content_budget_takes_what_fits_and_is_spent_by_what_does_not() {
        let budget = ContentBudget::new(10);
        assert!(budget.try_take(6));
        assert!(budget.try_take(4), "exactly the limit fits");
        assert!(!budget.is_spent());
        budget.give_back(4);
        assert!(!budget.try_take(5), "6 + 5 > 10");
        assert!(
            budget.is_spent(),
            "a read that did not fit spends it for good"
        );
        assert!(budget.try_take(4), "taking still counts what fits");
        assert!(budget.is_spent());
        let overflow = ContentBudget::new(u64::MAX);
        assert!(overflow.try_take(u64::MAX));
        assert!(!overflow.try_take(1), "no wrap-around");
    }

    #[test]
    fn the_default_budgeted_read_reads_then_takes_and_stops_once_spent() {
        let forge = memory::InMemoryForge::new(1, &memory::commit_named("s"));
        forge.put_file(&memory::commit_named("s"), "a.yaml", b"12345".to_vec());
        forge.put_file(&memory::commit_named("s"), "b.yaml", b"123".to_vec());
        let budget = ContentBudget::new(6);
        let read = |path| {
            forge
                .read_file_within(&memory::commit_named("s"), path, &budget)
                .unwrap()
        };
        assert_eq!(read("a.yaml"), BudgetedRead::Present(b"12345".to_vec()));
        assert_eq!(read("missing.yaml"), BudgetedRead::Absent);
        assert_eq!(read("b.yaml"), BudgetedRead::OverBudget);
        let reads = forge.request_counts().reads;
        assert_eq!(read("a.yaml"), BudgetedRead::OverBudget);
        assert_eq!(
            forge.request_counts().reads,
            reads,
            "nothing read once spent"
        );
    }

    #[test]
    fn a_spent_rate_limit_budget_is_a_refusal_that_says_so() {
        let err = ForgeError::RateLimited(Box::new(RateLimited {
            method: "POST".into(),
            route: "/projects/1/merge_requests/7/discussions".into(),
            message: "Retry later".into(),
            next_wait: Duration::from_secs(60),
            waited: Duration::from_secs(540),
            budget: Duration::from_secs(600),
        }));
        assert_eq!(err.kind(), ForgeErrorKind::Unavailable);
        assert!(err.is_rate_limited());
        assert!(
            !err.is_ambiguous_write(),
            "a 429 is answered before GitLab acts"
        );
        assert_eq!(err.status(), None);
        let text = err.to_string();
        assert!(text.contains("rate limited"), "{text}");
        assert_eq!(
            text,
            "POST /projects/1/merge_requests/7/discussions: rate limited: GitLab answered 429 (Retry later); the next wait of 60 s does not fit the run's budget for rate limits (540 s waited of 600 s); nothing was written by this request"
        );
        assert_eq!(seconds(Duration::from_millis(2_500)), "2.5 s");
        assert_eq!(seconds(Duration::ZERO), "0 s");
    }
}
