//! A local git checkout as the [`Repository`] port, for `assent check`: the same reads a run
//! makes through GitLab's API, answered by the user's own `git` (a subprocess per question,
//! `-z` output, arguments passed as a vector: never a shell).
//!
//! * **What "head" is.** A commit, or the working tree: [`GitCheckout::snapshot_working_tree`]
//!   writes the working tree into a tree object through a temporary index (a copy of the
//!   real one, so only files whose stat data changed are hashed again), as `git add --all`
//!   then `git write-tree` would, and leaves the real index and `HEAD` alone. So an
//!   uncommitted change counts, a new file that is not ignored counts (it would be in the
//!   push the author is about to make), an ignored one does not. Git's own clean filters
//!   (Git LFS) run as for a commit, so a file tracked in LFS is its pointer, as the
//!   repository holds it.
//! * **LFS.** GitLab serves a pointer's file as the LFS object it names (`lfs=true`), or
//!   answers 404 when it does not have it. So here: the object from the checkout's
//!   `lfs/objects` store when it is there (a push uploads it), else the file reads as not
//!   there, which the run's reader makes `Unreadable` as it does GitLab's 404.
//! * **What git stores, never the filesystem.** Every read goes through git's object store:
//!   a symbolic link is the blob holding its target text, mode `120000`, never the file it
//!   points to; a submodule is a commit of mode `160000`, with no content here.
//! * **The change set** is `git diff-tree -r -M` between the base and the head: renames
//!   found at git's default similarity (50 %, as GitLab's diffs), each entry's modes as git
//!   records them. It has no diff text: `assent check` places no thread.
//! * **Reads are bounded** as the GitLab adapter's: a blob's size is read first from the
//!   tree (`ls-tree -l`) and taken from the [`ContentBudget`] before a byte of it is read.
//!
//! A git command that fails is a [`ForgeError::Decode`] naming the command (exit 3); the
//! errors a user makes (not a repository, a ref that does not exist, no merge base) are
//! [`GitError`]s the command reports as usage errors (exit 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::core::commit_sha::CommitSha;
use crate::forge::{
    BudgetedRead, ChangedFile, ContentBudget, FileMode, ForgeError, Repository, RepositoryFiles,
};

/// Most bytes one unbudgeted read ([`RepositoryFiles::read_file`]: a policy file) returns.
pub const MAX_UNBUDGETED_READ: u64 = 64 * 1024 * 1024;

/// Why a checkout cannot be checked: each a mistake of the caller's, with its fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// `git` could not be started.
    #[error(
        "cannot run git ({0}); assent check reads the checkout with the git command: install git or put it on PATH"
    )]
    NoGit(String),
    /// The folder is not inside a git working tree.
    #[error(
        "{path} is not a git checkout ({detail}); run assent check inside a clone, or pass its folder"
    )]
    NotARepository {
        /// The folder given.
        path: String,
        /// What git said.
        detail: String,
    },
    /// A ref that does not name a commit.
    #[error(
        "{flag} {name:?} names no commit in this repository{shallow}; check the name, or fetch it"
    )]
    UnknownRef {
        /// The flag it came from (`--base`, `--head`).
        flag: &'static str,
        /// The ref as given.
        name: String,
        /// A note for a shallow clone, whose history may lack it.
        shallow: &'static str,
    },
    /// No base given and none found.
    #[error("no base to compare with: {0}; pass --base REF")]
    NoBase(String),
}

/// The note [`GitError::UnknownRef`] and [`GitError::NoBase`] add in a shallow clone.
const SHALLOW_NOTE: &str = " (this is a shallow clone: its history may not reach it; `git fetch --unshallow` fetches the rest)";

/// A git checkout, the two sides of its change pinned: `base` (a commit: policies are read
/// there, as the gate reads them from the target) and `head` (a commit or a tree).
#[derive(Debug, Clone)]
pub struct GitCheckout {
    root: PathBuf,
}

/// One `git ls-tree -l` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TreeEntry {
    kind: String,
    oid: String,
    size: Option<u64>,
}

impl GitCheckout {
    /// The checkout holding `path` (its top-level folder).
    pub fn open(path: &Path) -> Result<GitCheckout, GitError> {
        let output = git_command(path)
            .args(["rev-parse", "--show-toplevel"])
            .output()
            .map_err(|e| GitError::NoGit(e.to_string()))?;
        if !output.status.success() {
            return Err(GitError::NotARepository {
                path: path.display().to_string(),
                detail: first_line(&output.stderr),
            });
        }
        let root = String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned();
        Ok(GitCheckout {
            root: PathBuf::from(root),
        })
    }

    /// The top-level folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the clone is shallow.
    pub fn is_shallow(&self) -> bool {
        self.text(&["rev-parse", "--is-shallow-repository"])
            .is_ok_and(|t| t.trim() == "true")
    }

    fn shallow_note(&self) -> &'static str {
        if self.is_shallow() { SHALLOW_NOTE } else { "" }
    }

    /// The commit `name` names (any revision git reads), or why not.
    pub fn resolve_commit(&self, flag: &'static str, name: &str) -> Result<CommitSha, GitError> {
        let unknown = || GitError::UnknownRef {
            flag,
            name: name.to_owned(),
            shallow: self.shallow_note(),
        };
        // A leading `-` would be read as an option; `--end-of-options` keeps it a revision.
        let spec = format!("{name}^{{commit}}");
        match self.text(&[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ]) {
            Ok(sha) => CommitSha::parse(sha.trim()).map_err(|_| unknown()),
            _ => Err(unknown()),
        }
    }

    /// The default base: the merge base of `HEAD` with its upstream, else with
    /// `origin/HEAD` (the remote's default branch), else why there is none. An upstream
    /// that is the current branch's own branch on the remote (a branch pushed with `-u`) is
    /// where the branch was pushed, not what it merges into: `origin/HEAD` then.
    pub fn default_base(&self) -> Result<CommitSha, GitError> {
        let own_upstream = self
            .upstream_branch()
            .is_some_and(|upstream| Some(upstream) == self.current_branch());
        let candidates: &[&str] = if own_upstream {
            &["refs/remotes/origin/HEAD"]
        } else {
            &["@{upstream}", "refs/remotes/origin/HEAD"]
        };
        let upstream = candidates
            .iter()
            .copied()
            .find(|r| self.resolve_commit("--base", r).is_ok())
            .ok_or_else(|| {
                GitError::NoBase(
                    "the branch has no upstream other than its own branch on the remote, and there is no origin/HEAD (`git remote set-head origin --auto` sets it)".to_owned(),
                )
            })?;
        match self
            .text(&["merge-base", "HEAD", upstream])
            .map(|sha| CommitSha::parse(sha.trim()))
        {
            Ok(Ok(sha)) => Ok(sha),
            _ => Err(GitError::NoBase(format!(
                "HEAD and {upstream} have no merge base{}",
                self.shallow_note()
            ))),
        }
    }

    /// The branch `HEAD` is on, `None` when detached.
    pub fn current_branch(&self) -> Option<String> {
        self.text(&["symbolic-ref", "--quiet", "--short", "HEAD"])
            .ok()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
    }

    /// The branch a revision as given names, by its name on the remote where it is a
    /// remote-tracking ref (`origin/main` is `main`); `HEAD` is the current branch. `None`
    /// for anything else (a SHA, a tag, `HEAD~1`): no branch to name.
    pub fn branch_named(&self, name: &str) -> Option<String> {
        if name == "HEAD" || name == "@" {
            return self.current_branch();
        }
        let full = self
            .text(&[
                "rev-parse",
                "--verify",
                "--quiet",
                "--symbolic-full-name",
                "--end-of-options",
                name,
            ])
            .ok()?;
        branch_of_ref(full.trim())
    }

    /// The branch the current branch's upstream is, on its remote (`origin/main` is `main`).
    pub fn upstream_branch(&self) -> Option<String> {
        let full = self
            .text(&[
                "rev-parse",
                "--quiet",
                "--symbolic-full-name",
                "@{upstream}",
            ])
            .ok()?;
        branch_of_ref(full.trim())
    }

    /// The remote's default branch, as `origin/HEAD` names it.
    pub fn origin_default_branch(&self) -> Option<String> {
        let full = self
            .text(&["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"])
            .ok()?;
        branch_of_ref(full.trim())
    }

    /// The working tree (tracked changes, and new files that are not ignored) as a tree
    /// object, written through a temporary copy of the index: the real index, `HEAD` and
    /// the working tree are left as they were.
    pub fn snapshot_working_tree(&self) -> Result<CommitSha, ForgeError> {
        let git_dir = PathBuf::from(self.text(&["rev-parse", "--absolute-git-dir"])?.trim_end());
        let real_index =
            PathBuf::from(self.text(&["rev-parse", "--git-path", "index"])?.trim_end());
        let real_index = if real_index.is_absolute() {
            real_index
        } else {
            self.root.join(real_index)
        };
        let temporary = git_dir.join(format!("assent-check-index-{}", std::process::id()));
        let result = (|| {
            if real_index.exists() {
                std::fs::copy(&real_index, &temporary)
                    .map_err(|e| failure("copy the index", &e.to_string()))?;
            }
            self.run_with_index(&temporary, &["add", "--all", "--", "."])?;
            self.run_with_index(&temporary, &["write-tree"])
        })();
        let _ = std::fs::remove_file(&temporary);
        // A tree's id has a commit's form, and git reads it wherever a commit is read.
        let tree = result?;
        CommitSha::parse(tree.trim()).map_err(|e| failure("write-tree", &e.to_string()))
    }

    fn run_with_index(&self, index: &Path, args: &[&str]) -> Result<String, ForgeError> {
        let mut command = git_command(&self.root);
        command.env("GIT_INDEX_FILE", index).args(args);
        run(command, args)
    }

    /// The stdout of `git args` (text), or the failure naming the command.
    fn text(&self, args: &[&str]) -> Result<String, ForgeError> {
        let mut command = git_command(&self.root);
        command.args(args);
        run(command, args)
    }

    fn bytes(&self, args: &[&str]) -> Result<Vec<u8>, ForgeError> {
        let mut command = git_command(&self.root);
        command.args(args);
        run_bytes(command, args)
    }

    /// The entry at `path` in `sha`'s tree, if any.
    fn entry(&self, sha: &CommitSha, path: &str) -> Result<Option<TreeEntry>, ForgeError> {
        let out = self.bytes(&[
            "ls-tree",
            "-z",
            "-l",
            "--full-tree",
            sha.as_str(),
            "--",
            path,
        ])?;
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let record = String::from_utf8_lossy(record);
            let Some((meta, name)) = record.split_once('\t') else {
                continue;
            };
            if name != path {
                continue;
            }
            let mut fields = meta.split_whitespace();
            let (_mode, kind, oid, size) = (
                fields.next().unwrap_or_default(),
                fields.next().unwrap_or_default(),
                fields.next().unwrap_or_default(),
                fields.next().unwrap_or_default(),
            );
            return Ok(Some(TreeEntry {
                kind: kind.to_owned(),
                oid: oid.to_owned(),
                size: size.parse().ok(),
            }));
        }
        Ok(None)
    }

    /// The LFS object `oid` as GitLab serves a pointer's file with LFS on: the object's bytes
    /// when the checkout holds it (a push uploads it), else nothing there, as GitLab answers
    /// 404 for an object it does not have. Only a regular file is read, never a link.
    fn read_lfs_object(
        &self,
        oid: &str,
        size: u64,
        budget: &ContentBudget,
    ) -> Result<BudgetedRead, ForgeError> {
        let common = PathBuf::from(self.text(&["rev-parse", "--git-common-dir"])?.trim_end());
        let common = if common.is_absolute() {
            common
        } else {
            self.root.join(common)
        };
        let object = common
            .join("lfs/objects")
            .join(&oid[..2])
            .join(&oid[2..4])
            .join(oid);
        let regular = std::fs::symlink_metadata(&object).is_ok_and(|m| m.file_type().is_file());
        if !regular {
            return Ok(BudgetedRead::Absent);
        }
        if !budget.try_take(size) {
            return Ok(BudgetedRead::OverBudget);
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&object)
            .and_then(|f| {
                std::io::Read::read_to_end(&mut std::io::Read::take(f, size + 1), &mut bytes)
            })
            .map_err(|e| failure(&format!("read the LFS object {oid}"), &e.to_string()))?;
        if bytes.len() as u64 != size {
            return Err(failure(
                &format!("read the LFS object {oid}"),
                "its size is not the pointer's",
            ));
        }
        Ok(BudgetedRead::Present(bytes))
    }

    /// The change set between `base` and `head`, as [`Repository::changed_files`] lists it.
    pub fn diff(&self, base: &CommitSha, head: &CommitSha) -> Result<Vec<ChangedFile>, ForgeError> {
        let out = self.bytes(&[
            "diff-tree",
            "-r",
            "-z",
            "-M",
            "--raw",
            "--no-commit-id",
            base.as_str(),
            head.as_str(),
        ])?;
        parse_raw_diff(&out)
    }
}

impl GitCheckout {
    /// This checkout with the change from `base` to `head` listed once, to answer the
    /// port's questions about it.
    pub fn between(self, base: &CommitSha, head: &CommitSha) -> Result<PinnedCheckout, ForgeError> {
        let changes = self.diff(base, head)?;
        Ok(PinnedCheckout {
            checkout: self,
            changes,
        })
    }
}

/// A checkout and the change it is asked about, listed once.
#[derive(Debug, Clone)]
pub struct PinnedCheckout {
    checkout: GitCheckout,
    changes: Vec<ChangedFile>,
}

impl PinnedCheckout {
    /// How many files the change lists: git's diff is complete by construction, so this is
    /// the count the listing is held to, as GitLab's `changes_count` holds a run's.
    pub fn changes_count(&self) -> usize {
        self.changes.len()
    }
}

impl RepositoryFiles for GitCheckout {
    fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError> {
        let out = self.bytes(&[
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            sha.as_str(),
            "--",
            dir,
        ])?;
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        Ok(out
            .split(|b| *b == 0)
            .filter_map(|record| {
                let record = std::str::from_utf8(record).ok()?;
                let (meta, name) = record.split_once('\t')?;
                // Blobs only (links included: GitLab's tree lists a link as a blob);
                // a submodule is a commit and has no content to read.
                (meta.split_whitespace().nth(1) == Some("blob") && name.starts_with(&prefix))
                    .then(|| name.to_owned())
            })
            .collect())
    }

    fn read_file(&self, sha: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, ForgeError> {
        let budget = ContentBudget::new(MAX_UNBUDGETED_READ);
        match self.read_file_within(sha, path, &budget)? {
            BudgetedRead::Absent => Ok(None),
            BudgetedRead::Present(bytes) => Ok(Some(bytes)),
            BudgetedRead::OverBudget => Err(failure(
                &format!("read {path}"),
                &format!("larger than {MAX_UNBUDGETED_READ} bytes"),
            )),
        }
    }

    fn read_file_within(
        &self,
        sha: &CommitSha,
        path: &str,
        budget: &ContentBudget,
    ) -> Result<BudgetedRead, ForgeError> {
        if budget.is_spent() {
            return Ok(BudgetedRead::OverBudget);
        }
        // A folder or a submodule has no file content: GitLab's file read answers 404.
        let Some(entry) = self.entry(sha, path)?.filter(|e| e.kind == "blob") else {
            return Ok(BudgetedRead::Absent);
        };
        let size = entry
            .size
            .ok_or_else(|| failure(&format!("ls-tree {path}"), "no size for a blob"))?;
        if !budget.try_take(size) {
            return Ok(BudgetedRead::OverBudget);
        }
        let bytes = self.bytes(&["cat-file", "blob", &entry.oid])?;
        match lfs_pointer(&bytes) {
            Some((oid, object_size)) => {
                budget.give_back(size);
                self.read_lfs_object(&oid, object_size, budget)
            }
            None => Ok(BudgetedRead::Present(bytes)),
        }
    }

    fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError> {
        self.resolve_commit("--base", &format!("refs/heads/{branch}"))
            .map_err(|e| failure("rev-parse", &e.to_string()))
    }
}

impl RepositoryFiles for PinnedCheckout {
    fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError> {
        self.checkout.list_tree(sha, dir)
    }

    fn read_file(&self, sha: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, ForgeError> {
        self.checkout.read_file(sha, path)
    }

    fn read_file_within(
        &self,
        sha: &CommitSha,
        path: &str,
        budget: &ContentBudget,
    ) -> Result<BudgetedRead, ForgeError> {
        self.checkout.read_file_within(sha, path, budget)
    }

    fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError> {
        self.checkout.branch_head(branch)
    }
}

impl Repository for PinnedCheckout {
    fn changed_files(&self) -> Result<Vec<ChangedFile>, ForgeError> {
        Ok(self.changes.clone())
    }
}

/// The object id and size a Git LFS pointer names, when `bytes` is one (the spec's
/// `version` line first, then `oid sha256:<64 hex>` and `size <n>`).
fn lfs_pointer(bytes: &[u8]) -> Option<(String, u64)> {
    if bytes.len() > 1024 {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "version https://git-lfs.github.com/spec/v1" {
        return None;
    }
    let (mut oid, mut size) = (None, None);
    for line in lines {
        if let Some(hex) = line.strip_prefix("oid sha256:") {
            oid = Some(hex.to_owned());
        } else if let Some(n) = line.strip_prefix("size ") {
            size = n.parse().ok();
        }
    }
    let oid = oid.filter(|o| o.len() == 64 && o.bytes().all(|b| b.is_ascii_hexdigit()))?;
    Some((oid, size?))
}

/// The branch a full ref names: `refs/heads/<b>` is `<b>`, `refs/remotes/<remote>/<b>` is
/// `<b>` (a remote's name has no `/` in practice); anything else names no branch.
fn branch_of_ref(full: &str) -> Option<String> {
    let branch = match full.strip_prefix("refs/heads/") {
        Some(branch) => branch,
        None => full.strip_prefix("refs/remotes/")?.split_once('/')?.1,
    };
    (!branch.is_empty() && branch != "HEAD").then(|| branch.to_owned())
}

/// The GitLab project path of the checkout at `dir` (its top-level folder, never a folder
/// inside another checkout), from its `origin` remote's URL: `https://host/group/project.git`,
/// `ssh://git@host:22/group/project.git` and `git@host:group/project.git` are all
/// `group/project`. `None` when `dir` is no checkout's top level, has no `origin`, or its URL
/// is a local path.
pub fn origin_project_path(dir: &Path) -> Option<String> {
    let checkout = GitCheckout::open(dir).ok()?;
    let top = std::fs::canonicalize(checkout.root()).ok()?;
    if std::fs::canonicalize(dir).ok()? != top {
        return None;
    }
    let url = checkout
        .text(&["config", "--get", "remote.origin.url"])
        .ok()?;
    project_path_of_url(url.trim())
}

/// The project path in a remote URL (see [`origin_project_path`]).
fn project_path_of_url(url: &str) -> Option<String> {
    let path = if let Some((scheme, rest)) = url.split_once("://") {
        if !matches!(scheme, "https" | "http" | "ssh" | "git") {
            return None;
        }
        rest.split_once('/')?.1
    } else {
        // scp-like `user@host:path`; a local path has no `:` before its first `/`.
        let (host, path) = url.split_once(':')?;
        if host.is_empty() || host.contains('/') {
            return None;
        }
        path
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let valid = !path.is_empty()
        && !path.contains("//")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    valid.then(|| path.to_owned())
}

/// `git diff-tree -r -z --raw` output as changed files: `:<old mode> <new mode> <old oid>
/// <new oid> <status>[score]` NUL `<path>` NUL, and a second path for a rename or copy.
fn parse_raw_diff(out: &[u8]) -> Result<Vec<ChangedFile>, ForgeError> {
    let mut fields = out.split(|b| *b == 0);
    let mut files = Vec::new();
    let path = |field: Option<&[u8]>| -> Result<String, ForgeError> {
        let field = field.ok_or_else(|| failure("diff-tree", "a record without its path"))?;
        String::from_utf8(field.to_vec()).map_err(|_| {
            failure(
                "diff-tree",
                "a path that is not UTF-8 (GitLab could not name it either)",
            )
        })
    };
    while let Some(meta) = fields.next() {
        if meta.is_empty() {
            continue;
        }
        let meta = String::from_utf8_lossy(meta);
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, _, _, status] = parts[..] else {
            return Err(failure(
                "diff-tree",
                &format!("an unexpected record {meta:?}"),
            ));
        };
        let first = path(fields.next())?;
        let renamed = status.starts_with('R');
        let copied = status.starts_with('C');
        let second = if renamed || copied {
            path(fields.next())?
        } else {
            first.clone()
        };
        let old_mode = FileMode::from_git(old_mode);
        let new_mode = FileMode::from_git(new_mode);
        files.push(ChangedFile {
            old_path: first,
            new_path: second,
            new_file: old_mode == FileMode::Absent,
            deleted_file: new_mode == FileMode::Absent,
            renamed_file: renamed,
            withheld: false,
            diff: String::new(),
            old_mode,
            new_mode,
        });
    }
    Ok(files)
}

/// `git` run in `dir`, independent of the user's configuration where it would change what
/// is read: paths literal (never globs), no pager, no prompt, no optional locks, stdin closed.
fn git_command(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args([
            "--literal-pathspecs",
            "--no-pager",
            "-c",
            "core.quotepath=off",
        ])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null());
    command
}

fn run(command: Command, args: &[&str]) -> Result<String, ForgeError> {
    let bytes = run_bytes(command, args)?;
    String::from_utf8(bytes).map_err(|_| failure(&args.join(" "), "output is not UTF-8"))
}

fn run_bytes(mut command: Command, args: &[&str]) -> Result<Vec<u8>, ForgeError> {
    let output = command
        .output()
        .map_err(|e| failure(&args.join(" "), &e.to_string()))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(failure(&args.join(" "), &first_line(&output.stderr)))
    }
}

/// A git command that failed, as the port's error: the command and git's first line.
fn failure(what: &str, message: &str) -> ForgeError {
    ForgeError::Decode {
        method: "git".into(),
        route: what.chars().take(200).collect(),
        message: message.to_owned(),
    }
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or("no message")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_lfs_pointer_names_its_object_and_size_and_nothing_else_is_one() {
        let oid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";
        let pointer =
            format!("version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 12345\n");
        assert_eq!(
            lfs_pointer(pointer.as_bytes()),
            Some((oid.to_owned(), 12345))
        );
        assert_eq!(lfs_pointer(b"topics: []\n"), None);
        let short = pointer.replace(oid, "4d7a");
        assert_eq!(
            lfs_pointer(short.as_bytes()),
            None,
            "an oid that is not 64 hex digits"
        );
        let no_size = pointer.replace("size 12345\n", "");
        assert_eq!(lfs_pointer(no_size.as_bytes()), None);
    }

    #[test]
    fn a_remote_url_names_its_project_path() {
        for (url, path) in [
            (
                "https://gitlab.example.com/platform/policies.git",
                Some("platform/policies"),
            ),
            (
                "https://gitlab.example.com/platform/policies",
                Some("platform/policies"),
            ),
            ("ssh://git@gitlab.example.com:2222/a/b/c.git", Some("a/b/c")),
            (
                "git@gitlab.example.com:platform/policies.git",
                Some("platform/policies"),
            ),
            ("/srv/git/policies.git", None),
            ("file:///srv/git/policies.git", None),
            ("./policies", None),
            ("https://gitlab.example.com/", None),
        ] {
            assert_eq!(project_path_of_url(url).as_deref(), path, "{url}");
        }
    }

    #[test]
    fn a_full_ref_names_its_branch_on_the_remote() {
        assert_eq!(
            branch_of_ref("refs/heads/feature/x").as_deref(),
            Some("feature/x")
        );
        assert_eq!(
            branch_of_ref("refs/remotes/origin/main").as_deref(),
            Some("main")
        );
        assert_eq!(branch_of_ref("refs/remotes/origin/HEAD"), None);
        assert_eq!(branch_of_ref("refs/tags/v1"), None);
        assert_eq!(branch_of_ref(""), None);
    }

    #[test]
    fn a_raw_diff_names_adds_deletes_renames_and_modes() {
        let out = b":000000 100644 0000 1111 A\0new.yaml\0\
:100644 000000 2222 0000 D\0gone.yaml\0\
:100644 100644 3333 4444 R087\0old/a.yaml\0new/a.yaml\0\
:100644 120000 5555 6666 T\0link.yaml\0";
        let files = parse_raw_diff(out).unwrap();
        assert_eq!(files.len(), 4);
        assert!(files[0].new_file && files[0].old_mode == FileMode::Absent);
        assert!(files[1].deleted_file && files[1].new_mode == FileMode::Absent);
        assert!(files[2].renamed_file);
        assert_eq!(
            (files[2].old_path.as_str(), files[2].new_path.as_str()),
            ("old/a.yaml", "new/a.yaml")
        );
        assert_eq!(files[3].new_mode, FileMode::Symlink);
        assert!(!files[3].new_file && !files[3].deleted_file);
    }
}
