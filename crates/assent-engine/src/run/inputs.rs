//! Reading what a run judges, through the [`Repository`] port, at pinned SHAs (docs/contract.md#desired-state).
//!
//! [`gather_review_inputs`] turns pins into [`ReviewInputs`] for the pure
//! [`compute_desired_state`](crate::core::desired_state::compute_desired_state). It decides
//! what is a forge failure (the run stops, exit 3) and what is an undecidable input (a `block`
//! finding, the run goes on):
//!
//! * **Policies** (`.assent/policies/**/*.yaml|yml` at the target SHA, extension matched
//!   ASCII-case-insensitively): a listing or read error, or a listed file that then reads as
//!   absent, is an error. A policy that cannot be read is never skipped: judging without it
//!   would fail open.
//! * **Changed files**: an [`ForgeError::IncompleteListing`] becomes
//!   `changed_files: Err(reason)` (an `assent/undecidable` finding); any other error is
//!   returned. So does a listing whose length is not GitLab's `changes_count` for the MR, or
//!   whose count ends in `+` (GitLab stopped collecting at its diff limits): nothing of a
//!   partial listing is read or judged.
//! * **Contents**: only governed sides, and `.gitattributes` files, are read ([`is_read`]
//!   under the loaded policies):
//!   the base side (`old_path` at the base SHA) unless the MR creates the file, the source side
//!   (`new_path` at the source SHA) unless it deletes it. When the policies do not load, no
//!   content is read (nothing is known to be governed). Every side that is not read is
//!   [`FileContent::Absent`]. A read that still fails after its retries (transport, 429, 5xx)
//!   is returned as the forge failure it is; any other read error (403, a body over the
//!   limit) is [`FileContent::Unreadable`] for that side; so is
//!   a side that reads as absent although the diff says it exists (the pins and the diff
//!   disagree, so judging would be a guess). A governed side whose git mode is not a regular
//!   file's (a symbolic link, a submodule) is not read and is `Unreadable`, naming the mode;
//!   so is content that is a Git LFS pointer (reads ask for the LFS object, so a pointer
//!   means GitLab did not serve it).
//! * **Budget**: governed reads take their bytes from one [`ContentBudget`] of
//!   [`ReadBounds::content_budget`] ([`GOVERNED_CONTENT_BUDGET`] in a run); once a read does
//!   not fit, no further read is sent and the change set is `Err(reason)` naming the budget.
//! * **Diffs**: the changed files' unified diff texts, from the same listing, become the
//!   [`FileDiff`]s the run places DiffNotes with (docs/contract.md#diffnotes); no request of their own.
//!   A diff GitLab withholds (`collapsed`, `too_large`, or an empty `diff`) only places
//!   nothing: the file's governed sides are read and judged like any other
//!   (docs/contract.md#withheld-diffs). GitLab withholds by size alone, past limits a merge
//!   request of many files or one large file reaches (docs/run.md, "What is read, and how
//!   much"), while the contents it has not shown are in the repository at both SHAs.
//! * **Concurrency**: the reads of one phase run on at most [`MAX_READERS`] scoped threads
//!   pulling from a shared queue; results are stored by index, so the output order never
//!   depends on scheduling.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::core::commit_sha::CommitSha;
use crate::core::desired_state::{
    ChangedFileInput, FileContent, PathState, ReviewInputs, SelfEditSides, central_policy_path,
    is_assent_path, is_read,
};
use crate::core::model::PinnedCommits;
use crate::core::placement::FileDiff;
use crate::core::policy::{MrContext, PolicyFile, PolicySet};
use crate::core::semantic_diff::Limits;
use crate::core::source_policies::SourcePolicies;
use crate::forge::{
    BudgetedRead, ChangedFile, ContentBudget, FileMode, ForgeError, ForgeErrorKind,
    PolicyProjectFiles, Repository, RepositoryFiles,
};

/// The folder policy files are read from, at the target SHA.
pub const POLICY_DIR: &str = ".assent/policies";

/// Most reads in flight at once.
pub const MAX_READERS: usize = 8;

/// Whether `path` names a policy file by its extension (`.yaml`/`.yml`, any ASCII case).
pub fn is_policy_file_name(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".yaml") || lower.ends_with(".yml")
}

/// What a run reads before it judges: the inputs of the desired state, and the changed
/// files' diffs that place its threads.
#[derive(Debug, Clone)]
pub struct GatheredInputs {
    /// What the desired state is computed from.
    pub inputs: ReviewInputs,
    /// Every changed file with the lines its diff adds and removes; empty when the change
    /// set could not be listed.
    pub diffs: Vec<FileDiff>,
    /// The MR's own `.assent/` at its source SHA, when it changes `.assent/`: checked, never
    /// used to judge it ([`check_source_policies`](crate::core::source_policies::check_source_policies)).
    pub source_policies: Option<SourcePolicies>,
}

/// Most files read of each of a policy MR's own `.assent/policies` and `.assent/tests`; past
/// it the rest is undecidable.
pub const MAX_SOURCE_POLICY_FILES: usize = 1000;

/// Most bytes read of a policy MR's own `.assent/policies` and `.assent/tests` together
/// (what `assent lint` and `assent test` read of a checkout at the most).
pub const SOURCE_POLICY_BUDGET: u64 = 16 << 20;

/// The test cases' folder.
pub const TEST_DIR: &str = ".assent/tests";

/// Reads a policy MR's own `.assent/policies/` and `.assent/tests/` at `source_sha`, within
/// [`MAX_SOURCE_POLICY_FILES`] files each and [`SOURCE_POLICY_BUDGET`] bytes together. A read
/// the forge may heal is returned as the failure it is (the run stops before any write); any
/// other failure, a file listed but absent, or a file past the bounds is `unreadable`, which
/// the check turns into `assent/undecidable`.
pub fn read_source_policies(
    repo: &dyn RepositoryFiles,
    source_sha: &CommitSha,
) -> Result<SourcePolicies, ForgeError> {
    let mut source = SourcePolicies::default();
    let budget = ContentBudget::new(SOURCE_POLICY_BUDGET);
    for dir in [POLICY_DIR, TEST_DIR] {
        let mut paths: Vec<String> = match repo.list_tree(source_sha, dir) {
            Ok(paths) => paths
                .into_iter()
                .filter(|p| is_policy_file_name(p))
                .collect(),
            Err(e) if is_forge_failure(&e) => return Err(e),
            Err(e) => {
                source.unreadable.push((dir.to_owned(), e.to_string()));
                continue;
            }
        };
        paths.sort();
        paths.dedup();
        if paths.len() > MAX_SOURCE_POLICY_FILES {
            source.unreadable.push((
                dir.to_owned(),
                format!(
                    "{} files, more than the {MAX_SOURCE_POLICY_FILES} assent reads",
                    paths.len()
                ),
            ));
            paths.truncate(MAX_SOURCE_POLICY_FILES);
        }
        let reads: Vec<&str> = paths.iter().map(String::as_str).collect();
        let results = read_all_with(&reads, |path| {
            repo.read_file_within(source_sha, path, &budget)
        });
        for (path, result) in paths.into_iter().zip(results) {
            let bytes = match result {
                Ok(BudgetedRead::Present(bytes)) => bytes,
                Ok(BudgetedRead::Absent) => {
                    source
                        .unreadable
                        .push((path, format!("listed at {source_sha} but absent")));
                    continue;
                }
                Ok(BudgetedRead::OverBudget) => {
                    source.unreadable.push((
                        path,
                        format!(
                            "past the {SOURCE_POLICY_BUDGET} bytes assent reads of the policies \
                             and their tests"
                        ),
                    ));
                    continue;
                }
                Err(e) if is_forge_failure(&e) => return Err(e),
                Err(e) => {
                    source.unreadable.push((path, e.to_string()));
                    continue;
                }
            };
            let file = PolicyFile { path, bytes };
            if dir == POLICY_DIR {
                source.policy_files.push(file);
            } else {
                source.test_files.push(file);
            }
        }
    }
    source.unreadable.sort();
    Ok(source)
}

/// The most bytes of governed content one run reads: both sides of every governed file
/// together (docs/performance.md, "Memory"). Four sides of files at the parser's own limit
/// (16 MiB each, [`Limits::default`]) fit; past it the change set is `assent/undecidable`
/// and nothing more is read, so a merge request of many large files costs a bounded amount
/// of memory instead of whatever its files weigh.
pub const GOVERNED_CONTENT_BUDGET: u64 = 64 * 1024 * 1024;

/// What bounds one run's reading besides the parser's limits: GitLab's own count of the
/// change set, which the listing must match, and the budget of governed content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBounds {
    /// The merge request's `changes_count` as GitLab reported it
    /// ([`MergeRequestInfo::changes_count`](crate::core::model::MergeRequestInfo)).
    pub changes_count: Option<String>,
    /// Most bytes of governed content read ([`GOVERNED_CONTENT_BUDGET`] in a run).
    pub content_budget: u64,
}

/// Reads the policies, the change set and the governed contents at `pins` (its
/// `policy_digest` is not read: the digest is computed from what this reads).
pub fn gather_review_inputs(
    repo: &dyn Repository,
    pins: &PinnedCommits,
    mr: MrContext,
    limits: Limits,
    bounds: &ReadBounds,
) -> Result<GatheredInputs, ForgeError> {
    gather_review_inputs_with(repo, pins, CentralPolicies::default(), mr, limits, bounds)
}

/// [`gather_review_inputs`] with the central policy project's policies, already read
/// ([`read_central_policies`]): they decide which files are governed beside the project's own,
/// and a central project that could not be read leaves every file unread, as policies that do
/// not load do.
pub fn gather_review_inputs_with(
    repo: &dyn Repository,
    pins: &PinnedCommits,
    central: CentralPolicies,
    mr: MrContext,
    limits: Limits,
    bounds: &ReadBounds,
) -> Result<GatheredInputs, ForgeError> {
    let mut policy_files = read_policy_files(repo, &pins.target_sha)?;
    // A policy MR's own policies are checked beside the central set, as they will be loaded
    // after the merge.
    let central_files = central.files.clone();
    policy_files.extend(central.files);
    let policy_problems = central.problems;
    let listed = read_listing(repo, bounds)?;
    let source_policies =
        read_source_policies_if_touched(repo, pins, &listed)?.map(|source| SourcePolicies {
            central_files,
            ..source
        });
    let self_edit_sides = match &listed {
        Ok(files) => read_self_edit_sides(repo, pins, files, source_policies.as_ref())?,
        Err(_) => BTreeMap::new(),
    };
    let diffs = diffs_of(&listed);
    let changed_files = match listed {
        Err(reason) => Err(reason),
        Ok(files) => {
            let policies = PolicySet::load(&policy_files)
                .ok()
                .filter(|_| policy_problems.is_empty());
            read_changed_files(repo, pins, policies.as_ref(), &files, bounds)?
        }
    };
    Ok(GatheredInputs {
        source_policies,
        inputs: ReviewInputs {
            policy_files,
            policy_problems,
            changed_files,
            self_edit_sides,
            mr,
            limits,
        },
        diffs,
    })
}

/// The MR's diff listing, or why it cannot be judged (a forge failure is the error).
fn read_listing(
    repo: &dyn Repository,
    bounds: &ReadBounds,
) -> Result<Result<Vec<ChangedFile>, String>, ForgeError> {
    Ok(match repo.changed_files() {
        // A listing GitLab did not complete is never judged in part: nothing of it is read,
        // and its diffs place nothing.
        Ok(files) => {
            listing_is_complete(bounds.changes_count.as_deref(), files.len()).map(|()| files)
        }
        Err(e @ ForgeError::IncompleteListing { .. }) => Err(e.to_string()),
        Err(e) => return Err(e),
    })
}

/// A policy MR's own `.assent/` is read at its head so its policies can be loaded and its
/// cases run (docs/policies.md, "What the run checks on a policy MR").
fn read_source_policies_if_touched(
    repo: &dyn Repository,
    pins: &PinnedCommits,
    listed: &Result<Vec<ChangedFile>, String>,
) -> Result<Option<SourcePolicies>, ForgeError> {
    match listed {
        Ok(files)
            if files
                .iter()
                .any(|f| is_assent_path(&f.old_path) || is_assent_path(&f.new_path)) =>
        {
            Ok(Some(read_source_policies(repo, &pins.source_sha)?))
        }
        _ => Ok(None),
    }
}

/// Most bytes read of the paths under `.assent/` a merge request changes, both sides
/// together, for their self-edit occurrences; past it a path is undecidable.
pub const SELF_EDIT_BUDGET: u64 = 16 << 20;

/// What each path under `.assent/` that `files` change is at the base and at the source SHA
/// (docs/contract.md#policy-owners): its git mode from the listing, its content read at that
/// SHA (a symbolic link's is its target, as GitLab's raw file route answers it), the source
/// side taken from `source` when the policy check read it already. A side the listing says
/// does not exist is absent, unread. A read the forge may heal is returned as the failure it
/// is; any other failure, a submodule (no content in this repository), a side listed but not
/// found, or a read past [`SELF_EDIT_BUDGET`] is [`PathState::Unreadable`], which makes the
/// path undecidable.
pub fn read_self_edit_sides(
    repo: &dyn RepositoryFiles,
    pins: &PinnedCommits,
    files: &[ChangedFile],
    source: Option<&SourcePolicies>,
) -> Result<BTreeMap<String, SelfEditSides>, ForgeError> {
    // Path -> (mode at the base, mode at the source), each `None` where the listing says the
    // path does not exist on that side.
    let mut modes: BTreeMap<&str, (Option<&FileMode>, Option<&FileMode>)> = BTreeMap::new();
    for file in files {
        for path in [file.old_path.as_str(), file.new_path.as_str()] {
            if !is_assent_path(path) {
                continue;
            }
            let entry = modes.entry(path).or_default();
            if path == file.old_path && !file.new_file {
                entry.0 = Some(&file.old_mode);
            }
            if path == file.new_path && !file.deleted_file {
                entry.1 = Some(&file.new_mode);
            }
        }
    }
    let already_read: BTreeMap<&str, &[u8]> = source
        .map(|s| {
            s.policy_files
                .iter()
                .chain(&s.test_files)
                .map(|f| (f.path.as_str(), f.bytes.as_slice()))
                .collect()
        })
        .unwrap_or_default();
    let mut states: BTreeMap<(&str, Side), PathState> = BTreeMap::new();
    let mut reads: Vec<(&str, Side, &CommitSha, &FileMode)> = Vec::new();
    for (path, (base, source_mode)) in &modes {
        for (side, sha, mode) in [
            (Side::Base, &pins.base_sha, base),
            (Side::Source, &pins.source_sha, source_mode),
        ] {
            let state = match mode {
                None => Some(PathState::Absent),
                Some(mode) => match (mode.git_mode(), side, already_read.get(path)) {
                    (None, _, _) => Some(PathState::Unreadable(format!(
                        "it is {} at the {} SHA, which has no content assent can read",
                        mode.describe(),
                        side.name()
                    ))),
                    (Some(git), Side::Source, Some(bytes)) => Some(PathState::present(git, bytes)),
                    (Some(_), _, _) => None,
                },
            };
            match state {
                Some(state) => {
                    states.insert((path, side), state);
                }
                None => reads.push((path, side, sha, mode.expect("a mode to read"))),
            }
        }
    }
    let budget = ContentBudget::new(SELF_EDIT_BUDGET);
    let results = read_all_with(&reads, |&(path, _, sha, _)| {
        repo.read_file_within(sha, path, &budget)
    });
    for (&(path, side, sha, mode), result) in reads.iter().zip(results) {
        let git = mode.git_mode().expect("only modes with content are read");
        let state = match result {
            Ok(BudgetedRead::Present(bytes)) => PathState::present(git, &bytes),
            Ok(BudgetedRead::Absent) => PathState::Unreadable(format!(
                "not found at {sha}, although the merge request's diff says it exists there"
            )),
            Ok(BudgetedRead::OverBudget) => PathState::Unreadable(format!(
                "the paths under `.assent/` this merge request changes hold more than the \
                 {SELF_EDIT_BUDGET} bytes assent reads of them"
            )),
            Err(e) if is_forge_failure(&e) => return Err(e),
            Err(e) => PathState::Unreadable(e.to_string()),
        };
        states.insert((path, side), state);
    }
    Ok(modes
        .keys()
        .map(|path| {
            let mut take = |side| {
                states
                    .remove(&(*path, side))
                    .expect("every side of every path has a state")
            };
            let base = take(Side::Base);
            let source = take(Side::Source);
            ((*path).to_owned(), SelfEditSides { base, source })
        })
        .collect())
}

fn diffs_of(listed: &Result<Vec<ChangedFile>, String>) -> Vec<FileDiff> {
    listed
        .iter()
        .flatten()
        .map(|f| FileDiff::from_listing(&f.old_path, &f.new_path, &f.diff, f.withheld))
        .collect()
}

/// One side of one changed file to read: the file's index, the side, the SHA, the path.
type ContentRead<'a> = (usize, Side, &'a CommitSha, &'a str);

/// Every changed file with the content of its governed sides, or why the change set cannot be
/// judged; without policies that load, nothing is read.
fn read_changed_files(
    repo: &dyn Repository,
    pins: &PinnedCommits,
    policies: Option<&PolicySet>,
    files: &[ChangedFile],
    bounds: &ReadBounds,
) -> Result<Result<Vec<ChangedFileInput>, String>, ForgeError> {
    let (mut inputs, reads) = plan_content_reads(pins, policies, files);
    let budget = ContentBudget::new(bounds.content_budget);
    let results = read_all_with(&reads, |&(_, _, sha, path)| {
        repo.read_file_within(sha, path, &budget)
    });
    let mut over_budget = false;
    for ((index, side, sha, path), result) in reads.iter().zip(results) {
        over_budget |= matches!(result, Ok(BudgetedRead::OverBudget));
        side.set(&mut inputs[*index], content_of(result, sha, path)?);
    }
    Ok(if over_budget {
        // Which reads were left out depends on timing; that the content does not fit
        // does not. So the whole change set is undecidable, with a reason that names
        // the budget only: the same merge request gets the same finding every run.
        Err(over_budget_reason(bounds.content_budget))
    } else {
        Ok(inputs)
    })
}

/// An input per changed file, its sides absent, and the reads of its governed sides; a
/// governed side that is not a regular file is unreadable at once.
fn plan_content_reads<'a>(
    pins: &'a PinnedCommits,
    policies: Option<&PolicySet>,
    files: &'a [ChangedFile],
) -> (Vec<ChangedFileInput>, Vec<ContentRead<'a>>) {
    let mut reads = Vec::new();
    let mut inputs = Vec::with_capacity(files.len());
    for (index, file) in files.iter().enumerate() {
        inputs.push(ChangedFileInput {
            old_path: file.old_path.clone(),
            new_path: file.new_path.clone(),
            base: FileContent::Absent,
            source: FileContent::Absent,
        });
        // A withheld diff is no reason to skip a file: its contents are what is judged.
        let Some(policies) = policies else {
            continue;
        };
        let sides = [
            (
                !file.new_file,
                Side::Base,
                &pins.base_sha,
                file.old_path.as_str(),
                &file.old_mode,
            ),
            (
                !file.deleted_file,
                Side::Source,
                &pins.source_sha,
                file.new_path.as_str(),
                &file.new_mode,
            ),
        ];
        for (exists, side, sha, path, mode) in sides {
            if !exists || !is_read(policies, path) {
                continue;
            }
            // A governed path must be a regular file: a link's text or a submodule's
            // commit is not what consumers of the path read, so it is never judged.
            if mode.is_regular_file() {
                reads.push((index, side, sha, path));
            } else {
                let reason = format!(
                    "`{path}` is {} at the {} SHA, not a regular file: assent judges a \
                     governed path's own content only, never what a link points to or \
                     what another repository holds",
                    mode.describe(),
                    side.name()
                );
                side.set(&mut inputs[index], FileContent::Unreadable(reason));
            }
        }
    }
    (inputs, reads)
}

/// What one read gives the side it read: its content, or why it is unreadable; `Absent` for
/// a read past the budget (the caller makes the whole change set undecidable).
fn content_of(
    result: Result<BudgetedRead, ForgeError>,
    sha: &CommitSha,
    path: &str,
) -> Result<FileContent, ForgeError> {
    Ok(match result {
        Ok(BudgetedRead::Present(bytes)) if is_lfs_pointer(&bytes) => {
            FileContent::Unreadable(format!(
                "`{path}` is a Git LFS pointer at {sha} and GitLab answered with the \
                 pointer, not the LFS object it names: the pointer's text is never \
                 judged as the file"
            ))
        }
        Ok(BudgetedRead::Present(bytes)) => FileContent::Present(bytes),
        Ok(BudgetedRead::Absent) => FileContent::Unreadable(format!(
            "`{path}` is not found at {sha}, although the merge request's diff says \
             it exists there"
        )),
        Ok(BudgetedRead::OverBudget) => FileContent::Absent,
        // A read that still fails after its retries is a forge failure (exit 3,
        // nothing written), not a file to publish a finding about (docs/contract.md#desired-state).
        Err(e) if is_forge_failure(&e) => return Err(e),
        Err(e) => FileContent::Unreadable(e.to_string()),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Base,
    Source,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Source => "source",
        }
    }

    fn set(self, file: &mut ChangedFileInput, content: FileContent) {
        match self {
            Side::Base => file.base = content,
            Side::Source => file.source = content,
        }
    }
}

/// Whether GitLab's diff listing holds every file its `changes_count` says the merge request
/// changes. `changes_count` counts files (a rename once, as the listing lists it), and ends
/// in `+` once GitLab stopped collecting at its diff limits ("1000+" by default): then the
/// listing is a part, whatever its length. No count at all proves nothing either.
fn listing_is_complete(changes_count: Option<&str>, listed: usize) -> Result<(), String> {
    let Some(count) = changes_count else {
        return Err(format!(
            "GitLab reports no `changes_count` for the merge request, so its diff listing of \
             {listed} file(s) cannot be shown to be complete"
        ));
    };
    if let Some(at_least) = count.strip_suffix('+')
        && at_least.bytes().all(|b| b.is_ascii_digit())
        && !at_least.is_empty()
    {
        return Err(format!(
            "GitLab stopped collecting the merge request's changes at its diff limits \
             (`changes_count` is \"{count}\"; its diff listing has {listed} file(s))"
        ));
    }
    // Digits only: Rust's integer parser would take a leading `+` too.
    let digits = !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit());
    match count.parse::<usize>().ok().filter(|_| digits).ok_or(()) {
        Ok(counted) if counted == listed => Ok(()),
        Ok(counted) => Err(format!(
            "GitLab counts {counted} changed file(s) (`changes_count`) but its diff listing has \
             {listed}"
        )),
        Err(_) => Err(format!(
            "GitLab's `changes_count` {count:?} is not a count of files, so its diff listing of \
             {listed} file(s) cannot be shown to be complete"
        )),
    }
}

/// Whether `bytes` is a Git LFS pointer (the spec's first line, or its pre-1.0 name) rather
/// than the content it stands for. Anything that starts so is taken for one: a real
/// configuration file never does.
fn is_lfs_pointer(bytes: &[u8]) -> bool {
    bytes.starts_with(b"version https://git-lfs.github.com/spec/")
        || bytes.starts_with(b"version https://hawser.github.com/spec/")
}

/// The reason a change set whose governed content does not fit is undecidable.
fn over_budget_reason(budget: u64) -> String {
    format!(
        "the governed files' content (both sides of every governed file together) is larger \
         than the {budget} bytes ({} MiB) one run reads, so assent stopped reading rather than \
         judge a part or run out of memory; split the merge request",
        budget / (1024 * 1024)
    )
}

/// Whether a read error is the forge failing (transport, 429, 5xx after the retries) rather
/// than GitLab refusing this one file (403, a body over the limit, an answer that does not
/// decode).
fn is_forge_failure(error: &ForgeError) -> bool {
    error.kind() == ForgeErrorKind::Unavailable
}

/// Every policy file at `target_sha`, sorted by path, read concurrently. Any failure is an
/// error: a policy that cannot be read is never skipped. `assent doctor` reads policies the
/// same way, so it checks exactly what a run would load.
pub fn read_policy_files(
    repo: &dyn RepositoryFiles,
    target_sha: &CommitSha,
) -> Result<Vec<PolicyFile>, ForgeError> {
    let mut paths: Vec<String> = repo
        .list_tree(target_sha, POLICY_DIR)?
        .into_iter()
        .filter(|p| is_policy_file_name(p))
        .collect();
    paths.sort();
    paths.dedup();
    let reads: Vec<&str> = paths.iter().map(String::as_str).collect();
    let results = read_all_with(&reads, |path| repo.read_file(target_sha, path));
    let mut files = Vec::with_capacity(paths.len());
    for (path, result) in paths.iter().zip(results) {
        match result? {
            Some(bytes) => files.push(PolicyFile {
                path: path.clone(),
                bytes,
            }),
            None => {
                return Err(ForgeError::IncompleteListing {
                    what: format!("{POLICY_DIR} at {target_sha}"),
                    reason: format!("`{path}` is listed but reads as absent"),
                });
            }
        }
    }
    Ok(files)
}

/// The central policy project a run reads beside the governed one
/// (`--policy-project ID_OR_PATH[@REF]`, docs/policies.md "Central policies").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyProject {
    /// The project's id or full path, as configured (and as the receipt records it).
    pub project: String,
    /// A branch name or a commit SHA; `None` reads the project's default branch.
    pub reference: Option<String>,
}

impl PolicyProject {
    /// Parses `ID_OR_PATH[@REF]`: a project id (digits) or a GitLab path (letters, digits,
    /// `_`, `-`, `.`, `/`), optionally `@` and a branch name or commit SHA.
    pub fn parse(text: &str) -> Result<PolicyProject, String> {
        let (project, reference) = match text.split_once('@') {
            Some((project, reference)) => (project, Some(reference)),
            None => (text, None),
        };
        let path_char = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
        if project.is_empty()
            || !project.chars().all(path_char)
            || project.starts_with('/')
            || project.ends_with('/')
            || project.contains("//")
        {
            return Err(format!(
                "the policy project {text:?} is not a project id or path (e.g. `42` or \
                 `platform/policies`, optionally `@main`)"
            ));
        }
        let ref_char = |c: char| c.is_ascii_graphic() && !"~^:?*[\\@".contains(c);
        if let Some(reference) = reference
            && (reference.is_empty() || !reference.chars().all(ref_char))
        {
            return Err(format!(
                "the policy project's ref in {text:?} is not a branch name or commit SHA"
            ));
        }
        Ok(PolicyProject {
            project: project.to_owned(),
            reference: reference.map(str::to_owned),
        })
    }
}

/// What a run read of its central policy project: the commit it pinned, the policy files
/// there (paths from [`central_policy_path`]), and why it could not be read when it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CentralPolicies {
    /// The commit read, once resolved.
    pub sha: Option<CommitSha>,
    /// The central policy files, their paths prefixed so they never collide with the
    /// governed project's own.
    pub files: Vec<PolicyFile>,
    /// Why the project could not be read: each becomes a line of `assent/policy-error`.
    pub problems: Vec<String>,
}

/// Reads the central policy project's policies: its ref resolved to a commit once (a commit
/// SHA as given, a branch's tip, or the default branch's), then every policy file at that
/// commit, as [`read_policy_files`] reads the governed project's. A failure the forge may heal
/// (transport, 5xx, 429 after the retries) is returned: the run stops before any write, as
/// for its other reads. Anything else (the project or ref not found, the token not allowed to
/// read it, no policy file there) is a problem of the policies: judging without the policies a
/// team configured would fail open.
pub fn read_central_policies(
    repo: &dyn PolicyProjectFiles,
    source: &PolicyProject,
) -> Result<CentralPolicies, ForgeError> {
    let project = &source.project;
    let unreadable = |what: String| CentralPolicies {
        sha: None,
        files: Vec::new(),
        problems: vec![format!(
            "the central policy project `{project}` cannot be read: {what}"
        )],
    };
    let sha = match source.reference.as_deref() {
        Some(reference) => match CommitSha::parse(reference) {
            Ok(sha) => Ok(sha),
            Err(_) => repo.branch_head(reference),
        },
        None => repo
            .default_branch()
            .and_then(|branch| repo.branch_head(&branch)),
    };
    let sha = match sha {
        Ok(sha) => sha,
        Err(e) if is_forge_failure(&e) => return Err(e),
        Err(e) => return Ok(unreadable(e.to_string())),
    };
    let files = match read_policy_files(repo, &sha) {
        Ok(files) => files,
        Err(e) if is_forge_failure(&e) => return Err(e),
        Err(e) => {
            return Ok(CentralPolicies {
                sha: Some(sha),
                ..unreadable(e.to_string())
            });
        }
    };
    if files.is_empty() {
        return Ok(CentralPolicies {
            problems: vec![format!(
                "the central policy project `{project}` has no policy file under \
                 `{POLICY_DIR}` at {sha}"
            )],
            sha: Some(sha),
            files,
        });
    }
    let files = files
        .into_iter()
        .map(|f| PolicyFile {
            path: central_policy_path(project, &f.path),
            bytes: f.bytes,
        })
        .collect();
    Ok(CentralPolicies {
        sha: Some(sha),
        files,
        problems: Vec::new(),
    })
}

/// Runs `read` on each of `reads` on at most [`MAX_READERS`] threads; results in input order.
fn read_all_with<J: Sync, R: Send>(reads: &[J], read: impl Fn(&J) -> R + Sync) -> Vec<R> {
    let slots: Vec<Mutex<Option<R>>> = reads.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = reads.len().min(MAX_READERS);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = reads.get(i) else {
                        break;
                    };
                    let result = read(job);
                    *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every queued read ran")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;
    use crate::core::desired_state::{RULE_POLICY_ERROR, RULE_UNDECIDABLE, compute_desired_state};
    use crate::forge::memory::{InMemoryForge, commit_named};
    use crate::forge::{ChangedFile, FileMode};

    static TARGET: std::sync::LazyLock<CommitSha> =
        std::sync::LazyLock::new(|| commit_named("t0000000"));
    static BASE: std::sync::LazyLock<CommitSha> =
        std::sync::LazyLock::new(|| commit_named("b0000000"));
    static SOURCE: std::sync::LazyLock<CommitSha> = std::sync::LazyLock::new(|| {
        CommitSha::parse("5000000000000000000000000000000000000000").unwrap()
    });

    const POLICY: &str = "apiVersion: assent/v1\nkind: Policy\nidentities:\n  \"topics/*.yaml\": { \"/topics\": name }\nrules:\n  - id: retention-shrink\n    match:\n      files: [\"topics/*.yaml\"]\n      pointer: \"/topics/*/retention_days\"\n      kinds: [modify]\n    when: \"int(new) < int(old)\"\n    effect: challenge\n";

    /// The (rule, subject) of each desired finding, in order.
    fn slots(out: &crate::core::desired_state::DesiredOutcome) -> Vec<(&str, &str)> {
        out.desired
            .findings
            .iter()
            .map(|f| (f.slot.rule.as_str(), f.slot.subject.as_str()))
            .collect()
    }

    fn pins() -> PinnedCommits {
        PinnedCommits {
            target_sha: TARGET.clone(),
            base_sha: BASE.clone(),
            source_sha: SOURCE.clone(),
        }
    }

    /// GitLab's count of `files` listed files, and the run's budget.
    fn bounds(files: usize) -> ReadBounds {
        ReadBounds {
            changes_count: Some(files.to_string()),
            content_budget: GOVERNED_CONTENT_BUDGET,
        }
    }

    fn changed(path: &str) -> ChangedFile {
        ChangedFile::regular(path, path, false, false)
    }

    fn forge() -> InMemoryForge {
        let forge = InMemoryForge::new(1, &SOURCE);
        forge.put_file(&TARGET, ".assent/policies/topics.yaml", POLICY.into());
        forge.put_file(
            &TARGET,
            ".assent/policies/README.md",
            b"not a policy".to_vec(),
        );
        forge.put_file(&TARGET, ".assent/tests/case.yaml", b"not a policy".to_vec());
        forge
    }

    fn topic(days: u32) -> Vec<u8> {
        format!("topics:\n  - name: orders\n    retention_days: {days}\n").into_bytes()
    }

    /// A repository that fails chosen reads and records what was read and how many at once.
    struct Flaky {
        inner: InMemoryForge,
        fail_reads: BTreeSet<(CommitSha, String)>,
        forbidden_reads: BTreeSet<(CommitSha, String)>,
        changed_error: Option<ForgeError>,
        list_error: Option<ForgeError>,
        reads: Mutex<Vec<(CommitSha, String)>>,
        in_flight: AtomicUsize,
        max_in_flight: AtomicUsize,
    }

    impl Flaky {
        fn new(inner: InMemoryForge) -> Self {
            Flaky {
                inner,
                fail_reads: BTreeSet::new(),
                forbidden_reads: BTreeSet::new(),
                changed_error: None,
                list_error: None,
                reads: Mutex::new(Vec::new()),
                in_flight: AtomicUsize::new(0),
                max_in_flight: AtomicUsize::new(0),
            }
        }

        fn read_set(&self) -> BTreeSet<(CommitSha, String)> {
            self.reads.lock().unwrap().iter().cloned().collect()
        }
    }

    fn boom(route: &str) -> ForgeError {
        ForgeError::Status {
            method: "GET".into(),
            route: route.into(),
            status: 500,
            message: "500 Internal Server Error".into(),
        }
    }

    impl Repository for Flaky {
        fn changed_files(&self) -> Result<Vec<ChangedFile>, ForgeError> {
            match &self.changed_error {
                Some(e) => Err(e.clone()),
                None => self.inner.changed_files(),
            }
        }
    }

    impl RepositoryFiles for Flaky {
        fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError> {
            match &self.list_error {
                Some(e) => Err(e.clone()),
                None => self.inner.list_tree(sha, dir),
            }
        }
        fn read_file(&self, sha: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, ForgeError> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
            self.reads
                .lock()
                .unwrap()
                .push((sha.clone(), path.to_owned()));
            let result = if self.fail_reads.contains(&(sha.clone(), path.to_owned())) {
                Err(boom(path))
            } else if self
                .forbidden_reads
                .contains(&(sha.clone(), path.to_owned()))
            {
                Err(ForgeError::Status {
                    method: "GET".into(),
                    route: path.into(),
                    status: 403,
                    message: "403 Forbidden".into(),
                })
            } else {
                self.inner.read_file(sha, path)
            };
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            result
        }
        fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError> {
            self.inner.branch_head(branch)
        }
    }

    fn gather(repo: &dyn Repository) -> Result<ReviewInputs, ForgeError> {
        // GitLab's count agrees with its listing, as it does below its diff limits.
        let listed = repo.changed_files().map_or(0, |files| files.len());
        gather_review_inputs(
            repo,
            &pins(),
            MrContext::default(),
            Limits::default(),
            &bounds(listed),
        )
        .map(|gathered| gathered.inputs)
    }

    #[test]
    fn reads_policies_at_target_and_governed_sides_at_base_and_source() {
        let forge = forge_with_changes();
        forge.put_file(&TARGET, ".assent/policies/more/extra.YML", b"x".to_vec());
        forge.put_file(&BASE, "README.md", b"a".to_vec());
        forge.put_file(&SOURCE, "README.md", b"b".to_vec());
        // The extra policy file (any case of `.yml`, in a subfolder) is read and fails to load.
        let repo = Flaky::new(forge);
        let inputs = gather(&repo).unwrap();
        let paths: Vec<&str> = inputs
            .policy_files
            .iter()
            .map(|p| p.path.as_str())
            .collect();
        assert_eq!(
            paths,
            vec![
                ".assent/policies/more/extra.YML",
                ".assent/policies/topics.yaml"
            ]
        );
        // Policies do not load (extra.YML is garbage): no content is read at all.
        assert!(repo.read_set().iter().all(|(sha, _)| sha == &*TARGET));
        let files = inputs.changed_files.as_ref().unwrap();
        assert!(
            files
                .iter()
                .all(|f| f.base == FileContent::Absent && f.source == FileContent::Absent)
        );
        let out = compute_desired_state(inputs);
        assert_eq!(out.desired.findings[0].slot.rule, RULE_POLICY_ERROR);

        // With loading policies, exactly the governed, existing sides are read.
        let forge = forge_with_changes();
        let repo = Flaky::new(forge);
        let inputs = gather(&repo).unwrap();
        let expected: BTreeSet<(CommitSha, String)> = [
            (&TARGET, ".assent/policies/topics.yaml"),
            (&BASE, "topics/orders.yaml"),
            (&SOURCE, "topics/orders.yaml"),
            (&SOURCE, "topics/new.yaml"),
            (&BASE, "topics/gone.yaml"),
        ]
        .iter()
        .map(|(s, p)| ((**s).clone(), p.to_string()))
        .collect();
        assert_eq!(repo.read_set(), expected);
        let files = inputs.changed_files.as_ref().unwrap();
        assert_eq!(files[0].base, FileContent::Present(topic(30)));
        assert_eq!(files[0].source, FileContent::Present(topic(7)));
        assert_eq!(files[1].base, FileContent::Absent);
        assert_eq!(files[2].source, FileContent::Absent);
        assert_eq!(files[3].base, FileContent::Absent, "README.md is not read");
        let out = compute_desired_state(inputs);
        let rules: Vec<&str> = out
            .desired
            .findings
            .iter()
            .map(|f| f.slot.rule.as_str())
            .collect();
        assert_eq!(rules, vec!["retention-shrink"]);
    }

    fn forge_with_changes() -> InMemoryForge {
        let forge = forge();
        forge.put_file(&BASE, "topics/orders.yaml", topic(30));
        forge.put_file(&SOURCE, "topics/orders.yaml", topic(7));
        forge.put_file(&SOURCE, "topics/new.yaml", topic(7));
        forge.put_file(&BASE, "topics/gone.yaml", topic(7));
        forge.set_changed_files(vec![
            changed("topics/orders.yaml"),
            ChangedFile::regular("topics/new.yaml", "topics/new.yaml", true, false),
            ChangedFile::regular("topics/gone.yaml", "topics/gone.yaml", false, true),
            changed("README.md"),
        ]);
        forge
    }

    #[test]
    fn each_changed_files_diff_comes_back_with_the_lines_it_changes() {
        let forge = forge();
        forge.set_changed_files(vec![
            ChangedFile {
                diff: "@@ -1,2 +1,2 @@\n topics:\n-  a: 1\n+  a: 2\n".into(),
                ..changed("topics/orders.yaml")
            },
            ChangedFile {
                withheld: true,
                diff: "@@ -1 +1 @@\n-a\n+b\n".into(),
                ..changed("topics/big.yaml")
            },
        ]);
        let gathered = gather_review_inputs(
            &forge,
            &pins(),
            MrContext::default(),
            Limits::default(),
            &bounds(2),
        )
        .unwrap();
        let lines: Vec<(&str, Option<bool>)> = gathered
            .diffs
            .iter()
            .map(|d| {
                let added = d.lines.as_ref().map(|l| l.is_added(2));
                (d.new_path.as_str(), added)
            })
            .collect();
        assert_eq!(
            lines,
            [
                ("topics/orders.yaml", Some(true)),
                ("topics/big.yaml", None)
            ],
            "a withheld diff places nothing"
        );
    }

    #[test]
    fn a_policy_read_failure_or_vanished_policy_is_an_error_never_a_skip() {
        let mut repo = Flaky::new(forge_with_changes());
        repo.fail_reads
            .insert((TARGET.clone(), ".assent/policies/topics.yaml".into()));
        assert_eq!(
            gather(&repo).unwrap_err(),
            boom(".assent/policies/topics.yaml")
        );

        /// Lists a policy that does not read back.
        struct Vanishing(InMemoryForge);
        impl Repository for Vanishing {
            fn changed_files(&self) -> Result<Vec<ChangedFile>, ForgeError> {
                self.0.changed_files()
            }
        }
        impl RepositoryFiles for Vanishing {
            fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError> {
                let mut paths = self.0.list_tree(sha, dir)?;
                paths.push(".assent/policies/ghost.yaml".into());
                Ok(paths)
            }
            fn read_file(
                &self,
                sha: &CommitSha,
                path: &str,
            ) -> Result<Option<Vec<u8>>, ForgeError> {
                self.0.read_file(sha, path)
            }
            fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError> {
                self.0.branch_head(branch)
            }
        }
        let err = gather(&Vanishing(forge_with_changes())).unwrap_err();
        assert!(matches!(err, ForgeError::IncompleteListing { .. }), "{err}");
        assert!(err.to_string().contains("ghost.yaml"));

        let mut repo = Flaky::new(forge_with_changes());
        repo.list_error = Some(boom("repository/tree"));
        assert_eq!(gather(&repo).unwrap_err(), boom("repository/tree"));
    }

    #[test]
    fn an_incomplete_change_listing_is_undecidable_other_errors_propagate() {
        let mut repo = Flaky::new(forge_with_changes());
        repo.changed_files_error(ForgeError::IncompleteListing {
            what: "merge request diffs".into(),
            reason: "no X-Next-Page on page 2".into(),
        });
        let inputs = gather(&repo).unwrap();
        let reason = inputs.changed_files.as_ref().unwrap_err();
        assert!(reason.contains("no X-Next-Page on page 2"), "{reason}");
        assert!(repo.read_set().iter().all(|(sha, _)| sha == &*TARGET));
        let out = compute_desired_state(inputs);
        assert_eq!(out.desired.findings.len(), 1);
        assert_eq!(out.desired.findings[0].slot.rule, RULE_UNDECIDABLE);
        assert_eq!(out.desired.findings[0].slot.subject, "merge-request#");

        repo.changed_files_error(boom("merge_requests/7/diffs"));
        assert_eq!(gather(&repo).unwrap_err(), boom("merge_requests/7/diffs"));
    }

    impl Flaky {
        fn changed_files_error(&mut self, error: ForgeError) {
            self.changed_error = Some(error);
        }
    }

    #[test]
    fn a_content_read_that_keeps_failing_is_a_forge_failure() {
        let mut repo = Flaky::new(forge_with_changes());
        repo.fail_reads
            .insert((SOURCE.clone(), "topics/new.yaml".into()));
        assert_eq!(gather(&repo).unwrap_err(), boom("topics/new.yaml"));
    }

    #[test]
    fn a_content_read_refused_is_unreadable_for_that_file_only() {
        let mut repo = Flaky::new(forge_with_changes());
        repo.forbidden_reads
            .insert((SOURCE.clone(), "topics/new.yaml".into()));
        let inputs = gather(&repo).unwrap();
        let files = inputs.changed_files.as_ref().unwrap();
        assert!(matches!(&files[1].source, FileContent::Unreadable(r) if r.contains("HTTP 403")));
        assert_eq!(files[0].source, FileContent::Present(topic(7)));
        let out = compute_desired_state(inputs);
        assert_eq!(
            slots(&out),
            vec![
                (RULE_UNDECIDABLE, "topics/new.yaml#"),
                (
                    "retention-shrink",
                    "topics/orders.yaml#/topics/orders/retention_days"
                ),
            ]
        );
    }

    #[test]
    fn a_side_missing_although_the_diff_says_it_exists_is_unreadable() {
        let forge = forge();
        forge.put_file(&SOURCE, "topics/orders.yaml", topic(7));
        forge.set_changed_files(vec![changed("topics/orders.yaml")]);
        let inputs = gather(&forge).unwrap();
        let files = inputs.changed_files.as_ref().unwrap();
        assert!(
            matches!(&files[0].base, FileContent::Unreadable(r) if r.contains(&format!("not found at {}", *BASE))),
            "{:?}",
            files[0].base
        );
        assert_eq!(
            compute_desired_state(inputs).desired.findings[0].slot.rule,
            RULE_UNDECIDABLE
        );
    }

    #[test]
    fn withheld_diffs_are_judged_from_contents_like_any_other() {
        // GitLab withholds diffs by size (collapsed, too large) and leaves a legitimately
        // empty one empty (a rename, a mode change): none of them is a reason not to read.
        let shown = forge_with_changes();
        let withheld = forge_with_changes();
        withheld.set_changed_files(vec![
            ChangedFile {
                withheld: true,
                diff: String::new(),
                ..changed("topics/orders.yaml")
            },
            ChangedFile {
                withheld: true,
                ..ChangedFile::regular("topics/new.yaml", "topics/new.yaml", true, false)
            },
            ChangedFile {
                diff: String::new(),
                ..ChangedFile::regular("topics/gone.yaml", "topics/gone.yaml", false, true)
            },
            changed("README.md"),
        ]);
        let judged = |forge: InMemoryForge| {
            let repo = Flaky::new(forge);
            let inputs = gather(&repo).unwrap();
            (repo.read_set(), compute_desired_state(inputs))
        };
        let (shown_reads, shown_outcome) = judged(shown);
        let (withheld_reads, withheld_outcome) = judged(withheld);
        assert_eq!(withheld_reads, shown_reads, "the same sides are read");
        assert!(
            withheld_reads.contains(&(SOURCE.clone(), "topics/orders.yaml".to_owned())),
            "{withheld_reads:?}"
        );
        assert_eq!(withheld_outcome.desired, shown_outcome.desired);
        assert!(
            withheld_outcome
                .desired
                .findings
                .iter()
                .any(|f| f.slot.rule == "retention-shrink"),
            "the risky change is found: {:?}",
            withheld_outcome.desired.findings
        );
        assert!(
            withheld_outcome
                .desired
                .findings
                .iter()
                .all(|f| f.slot.rule != RULE_UNDECIDABLE),
            "{:?}",
            withheld_outcome.desired.findings
        );
    }

    #[test]
    fn renames_read_old_path_at_base_and_new_path_at_source() {
        let forge = forge();
        forge.put_file(&BASE, "topics/a.yaml", topic(30));
        forge.put_file(&SOURCE, "topics/b.yaml", topic(7));
        forge.set_changed_files(vec![ChangedFile {
            old_path: "topics/a.yaml".into(),
            new_path: "topics/b.yaml".into(),
            renamed_file: true,
            ..changed("x")
        }]);
        let inputs = gather(&forge).unwrap();
        let file = &inputs.changed_files.as_ref().unwrap()[0];
        assert_eq!(file.base, FileContent::Present(topic(30)));
        assert_eq!(file.source, FileContent::Present(topic(7)));
        // Each path is judged on its own (docs/policies.md, "Renames"): the old path's
        // topics deleted, the new path's added, and no `modify` compares the two, so the
        // shrink from 30 to 7 is no retention-shrink finding.
        let out = compute_desired_state(inputs);
        assert!(
            out.desired.findings.is_empty(),
            "{:?}",
            out.desired.findings
        );
    }

    #[test]
    fn a_changed_attributes_file_is_read_at_both_sides() {
        let forge = forge();
        forge.put_file(&BASE, "docs/.gitattributes", b"*.md text\n".to_vec());
        forge.put_file(&SOURCE, "docs/.gitattributes", b"*.md -text\n".to_vec());
        forge.set_changed_files(vec![changed("docs/.gitattributes")]);
        let inputs = gather(&forge).unwrap();
        let file = &inputs.changed_files.as_ref().unwrap()[0];
        assert_eq!(file.base, FileContent::Present(b"*.md text\n".to_vec()));
        assert_eq!(file.source, FileContent::Present(b"*.md -text\n".to_vec()));
    }

    #[test]
    fn reads_run_concurrently_bounded_and_come_back_in_order() {
        let forge = forge();
        let mut changes = Vec::new();
        for i in 0..40 {
            let path = format!("topics/t{i:02}.yaml");
            forge.put_file(&BASE, &path, topic(i + 10));
            forge.put_file(&SOURCE, &path, topic(i + 11));
            changes.push(changed(&path));
        }
        forge.set_changed_files(changes);
        let repo = Flaky::new(forge);
        let inputs = gather(&repo).unwrap();
        let max = repo.max_in_flight.load(Ordering::SeqCst);
        assert!(max > 1, "reads ran one at a time");
        assert!(max <= MAX_READERS, "{max} reads in flight");
        for (i, file) in inputs.changed_files.unwrap().iter().enumerate() {
            assert_eq!(file.new_path, format!("topics/t{i:02}.yaml"));
            assert_eq!(file.base, FileContent::Present(topic(i as u32 + 10)));
            assert_eq!(file.source, FileContent::Present(topic(i as u32 + 11)));
        }
    }

    #[test]
    fn a_listing_is_complete_only_when_it_holds_gitlabs_count() {
        assert_eq!(listing_is_complete(Some("3"), 3), Ok(()));
        assert_eq!(listing_is_complete(Some("0"), 0), Ok(()));
        let refused = |count: Option<&str>, listed| {
            listing_is_complete(count, listed).expect_err("not complete")
        };
        let capped = refused(Some("1000+"), 1000);
        assert!(
            capped.contains("\"1000+\"") && capped.contains("1000 file(s)"),
            "{capped}"
        );
        let short = refused(Some("4"), 3);
        assert!(
            short.contains("counts 4") && short.contains("has 3"),
            "{short}"
        );
        assert!(refused(Some("2"), 3).contains("counts 2"));
        assert!(refused(None, 0).contains("no `changes_count`"));
        for garbage in ["", "+", "-1", "3 files", "1e3", "+3"] {
            assert!(
                refused(Some(garbage), 3).contains("is not a count"),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn a_governed_link_or_submodule_is_never_read_and_an_lfs_pointer_never_judged() {
        let forge = forge();
        forge.put_file(&BASE, "topics/orders.yaml", topic(30));
        forge.put_file(&SOURCE, "topics/orders.yaml", b"../elsewhere.yaml".to_vec());
        forge.put_file(&BASE, "topics/sub.yaml", topic(30));
        forge.put_file(
            &SOURCE,
            "topics/lfs.yaml",
            b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 3\n".to_vec(),
        );
        forge.put_file(&BASE, "README.md", b"x".to_vec());
        forge.set_changed_files(vec![
            ChangedFile {
                new_mode: FileMode::Symlink,
                ..changed("topics/orders.yaml")
            },
            ChangedFile {
                new_mode: FileMode::Submodule,
                ..changed("topics/sub.yaml")
            },
            ChangedFile::regular("topics/lfs.yaml", "topics/lfs.yaml", true, false),
            // Not governed: its mode does not matter.
            ChangedFile {
                new_mode: FileMode::Symlink,
                ..changed("README.md")
            },
        ]);
        let repo = Flaky::new(forge);
        let inputs = gather(&repo).unwrap();
        let read: BTreeSet<(CommitSha, String)> = [
            (&TARGET, ".assent/policies/topics.yaml"),
            (&BASE, "topics/orders.yaml"),
            (&BASE, "topics/sub.yaml"),
            (&SOURCE, "topics/lfs.yaml"),
        ]
        .iter()
        .map(|(s, p)| ((**s).clone(), p.to_string()))
        .collect();
        assert_eq!(repo.read_set(), read, "no link or submodule side is read");
        let files = inputs.changed_files.as_ref().unwrap();
        let unreadable = |content: &FileContent| match content {
            FileContent::Unreadable(reason) => reason.clone(),
            other => panic!("{other:?}"),
        };
        assert!(unreadable(&files[0].source).contains("symbolic link (mode 120000) at the source"));
        assert!(unreadable(&files[1].source).contains("submodule (mode 160000)"));
        assert!(unreadable(&files[2].source).contains("Git LFS pointer"));
        let out = compute_desired_state(inputs);
        assert_eq!(
            slots(&out),
            [
                (RULE_UNDECIDABLE, "topics/lfs.yaml#"),
                (RULE_UNDECIDABLE, "topics/orders.yaml#"),
                (RULE_UNDECIDABLE, "topics/sub.yaml#"),
            ]
        );
    }

    #[test]
    fn no_policy_folder_means_no_policies_and_nothing_governed() {
        let forge = InMemoryForge::new(1, &SOURCE);
        forge.put_file(&BASE, "topics/orders.yaml", topic(30));
        forge.set_changed_files(vec![changed("topics/orders.yaml")]);
        let repo = Flaky::new(forge);
        let inputs = gather(&repo).unwrap();
        assert!(inputs.policy_files.is_empty());
        assert!(repo.read_set().is_empty());
        assert!(compute_desired_state(inputs).desired.findings.is_empty());
    }

    #[test]
    fn a_self_edited_path_is_read_at_both_sides_with_its_mode_and_fails_closed() {
        let inner = forge();
        inner.put_file(&BASE, ".assent/policies/topics.yaml", POLICY.into());
        inner.put_file(&SOURCE, ".assent/policies/topics.yaml", b"x: 1".to_vec());
        inner.put_file(&SOURCE, ".assent/link", b"policies/topics.yaml".to_vec());
        inner.put_file(&BASE, ".assent/gone.txt", b"old".to_vec());
        let mut link = ChangedFile::regular(".assent/link", ".assent/link", true, false);
        link.new_mode = FileMode::Symlink;
        let mut sub = ChangedFile::regular(".assent/sub", ".assent/sub", true, false);
        sub.new_mode = FileMode::Submodule;
        let files = vec![
            changed(".assent/policies/topics.yaml"),
            link,
            sub,
            ChangedFile::regular(".assent/gone.txt", ".assent/gone.txt", false, true),
        ];
        let repo = Flaky::new(inner);
        let source = read_source_policies(&repo, &SOURCE).unwrap();
        repo.reads.lock().unwrap().clear();
        let sides = read_self_edit_sides(&repo, &pins(), &files, Some(&source)).unwrap();
        let regular = |bytes: &[u8]| PathState::present("100644", bytes);
        assert_eq!(
            sides[".assent/policies/topics.yaml"],
            SelfEditSides {
                base: regular(POLICY.as_bytes()),
                source: regular(b"x: 1"),
            }
        );
        assert_eq!(
            sides[".assent/link"],
            SelfEditSides {
                base: PathState::Absent,
                source: PathState::present("120000", b"policies/topics.yaml"),
            }
        );
        assert!(
            matches!(&sides[".assent/sub"].source, PathState::Unreadable(why) if why.contains("submodule")),
            "{:?}",
            sides[".assent/sub"]
        );
        assert_eq!(
            sides[".assent/gone.txt"],
            SelfEditSides {
                base: regular(b"old"),
                source: PathState::Absent,
            }
        );
        // The policy file's source side came from the policy check's read: never read twice,
        // and a submodule or an absent side is never read at all.
        assert_eq!(
            repo.read_set(),
            BTreeSet::from([
                (BASE.clone(), ".assent/policies/topics.yaml".to_owned()),
                (SOURCE.clone(), ".assent/link".to_owned()),
                (BASE.clone(), ".assent/gone.txt".to_owned()),
            ])
        );
        // A read GitLab refuses is unreadable; one it may heal stops the run.
        let mut repo = repo;
        repo.forbidden_reads
            .insert((BASE.clone(), ".assent/gone.txt".to_owned()));
        let sides = read_self_edit_sides(&repo, &pins(), &files, Some(&source)).unwrap();
        assert!(matches!(
            sides[".assent/gone.txt"].base,
            PathState::Unreadable(_)
        ));
        repo.fail_reads
            .insert((BASE.clone(), ".assent/policies/topics.yaml".to_owned()));
        assert!(read_self_edit_sides(&repo, &pins(), &files, Some(&source)).is_err());
    }
}
