//! The local sandbox: a repository as a GitLab project with one open merge request, so that
//! `assent doctor`, `assent run`, `assent sweep` and `assent serve` can be tried on a machine
//! with no GitLab.
//!
//! The target branch `main` holds one directory tree, the MR's source branch `feature` another;
//! the MR's changed files are the paths whose bytes differ. Commit SHAs are derived from the
//! trees' contents, so the same trees give the same SHAs on every start. A push
//! ([`push`]) replaces the source branch's tree, as a new commit would.
//!
//! Users: `assent-bot` (the token assent uses), `alice` (a Developer reviewer whose
//! resolutions count as assent), `bob` (the MR's author, whose own resolutions do not) and
//! `carol` (a Maintainer: a policy owner, whose resolution assents to a change of `.assent/`).
//! A second project, `platform/assent-policies`, holds central policies
//! (`--policy-project platform/assent-policies`).
//!
//! The examples are embedded in the library at build time (`build.rs`), so the binary runs
//! from any folder.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::model::{DiffFile, MergeRequest, Project, State, Token, User};

/// The sandbox project's id.
pub const PROJECT_ID: u64 = 1;
/// The sandbox project's path.
pub const PROJECT_PATH: &str = "platform/topic-registry";
/// The sandbox MR's IID.
pub const MR_IID: u64 = 1;
/// The bot's token: what `ASSENT_TOKEN` is set to.
pub const BOT_TOKEN: &str = "glpat-sandbox-assent-bot";
/// The reviewer's token: resolving a thread with it counts as assent.
pub const REVIEWER_TOKEN: &str = "glpat-sandbox-alice";
/// The author's token: GitLab lets the author resolve threads, assent does not count it.
pub const AUTHOR_TOKEN: &str = "glpat-sandbox-bob";
/// The bot user's id.
pub const BOT_ID: u64 = 2;
/// The reviewer's user id.
pub const REVIEWER_ID: u64 = 3;
/// The author's user id.
pub const AUTHOR_ID: u64 = 4;
/// The Maintainer's token: a policy owner, whose resolution assents to a policy change.
pub const MAINTAINER_TOKEN: &str = "glpat-sandbox-carol";
/// The Maintainer's user id.
pub const MAINTAINER_ID: u64 = 5;
/// The users a reviewer can resolve a thread as on the merge request's page: the reviewer,
/// the author and the Maintainer.
pub const PEOPLE: &[(&str, u64)] = &[
    ("alice", REVIEWER_ID),
    ("bob", AUTHOR_ID),
    ("carol", MAINTAINER_ID),
];
/// The central policy project's id.
pub const POLICY_PROJECT_ID: u64 = 2;
/// The central policy project's path: what `--policy-project` names.
pub const POLICY_PROJECT_PATH: &str = "platform/assent-policies";
/// The example's second MR, which changes a policy (an `assent/self-edit` challenge).
pub const POLICY_MR_IID: u64 = 2;

/// The examples `--example` knows.
pub const EXAMPLES: &[&str] = &["topic-registry"];

// `EMBEDDED`: every file of the example repositories, written by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/examples.rs"));

/// The embedded example repository `name` (`topic-registry`, `platform-policies`), empty when
/// there is none by that name.
pub fn embedded(name: &str) -> Tree {
    EMBEDDED
        .iter()
        .filter(|(example, _, _)| *example == name)
        .map(|(_, path, content)| ((*path).to_owned(), content.to_vec()))
        .collect()
}

/// More files or bytes than a sandbox tree may hold: a guard against pointing it at `/`.
const MAX_FILES: usize = 5_000;
const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Why a sandbox could not be built.
#[derive(Debug)]
pub enum SandboxError {
    /// `--example` names no known example.
    UnknownExample(String),
    /// A tree could not be read.
    Read(PathBuf, std::io::Error),
    /// A tree is larger than a sandbox takes.
    TooLarge(PathBuf),
    /// The example's edit no longer applies to the example repository.
    EditDoesNotApply {
        /// The file the edit is for.
        file: String,
        /// The text the edit looks for.
        text: String,
    },
    /// The two trees are identical: the MR would have no change.
    NoChange,
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxError::UnknownExample(name) => write!(
                f,
                "no example {name:?}: the examples are {}",
                EXAMPLES.join(", ")
            ),
            SandboxError::Read(path, e) => write!(f, "cannot read {}: {e}", path.display()),
            SandboxError::TooLarge(path) => write!(
                f,
                "{} holds more than {MAX_FILES} files or {} MiB: point the sandbox at a repository's root",
                path.display(),
                MAX_BYTES / 1024 / 1024
            ),
            SandboxError::EditDoesNotApply { file, text } => write!(
                f,
                "the example's change no longer applies: {file} has no {text:?}"
            ),
            SandboxError::NoChange => write!(
                f,
                "the target and source trees are identical: the merge request would change nothing"
            ),
        }
    }
}

impl std::error::Error for SandboxError {}

/// A repository tree: path (with `/`) to content.
pub type Tree = BTreeMap<String, Vec<u8>>;

/// Reads every regular file under `root` (`.git` skipped, links not followed).
pub fn read_tree(root: &Path) -> Result<Tree, SandboxError> {
    let mut tree = Tree::new();
    let mut bytes = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| SandboxError::Read(dir.clone(), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SandboxError::Read(dir.clone(), e))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| SandboxError::Read(path.clone(), e))?;
            if kind.is_dir() {
                if entry.file_name() != ".git" {
                    stack.push(path);
                }
            } else if kind.is_file() {
                let content =
                    std::fs::read(&path).map_err(|e| SandboxError::Read(path.clone(), e))?;
                bytes += content.len() as u64;
                if tree.len() >= MAX_FILES || bytes > MAX_BYTES {
                    return Err(SandboxError::TooLarge(root.to_path_buf()));
                }
                let relative = path
                    .strip_prefix(root)
                    .expect("walked below root")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                tree.insert(relative, content);
            }
        }
    }
    Ok(tree)
}

/// The example `name`: its repository as the target branch, and as the MR's source the same
/// tree with a retention that shrinks (a challenge) and an owner that changes (a comment).
pub fn example(name: &str) -> Result<(Tree, Tree), SandboxError> {
    if !EXAMPLES.contains(&name) {
        return Err(SandboxError::UnknownExample(name.into()));
    }
    let target = embedded(name);
    let mut source = target.clone();
    let file = "topics/orders.yaml";
    let edits = [
        (
            "  - name: orders.events.v1\n    retention_days: 30\n",
            "  - name: orders.events.v1\n    retention_days: 7\n",
        ),
        ("    owner: team-compliance\n", "    owner: team-risk\n"),
    ];
    let mut text = source
        .get(file)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    for (from, to) in edits {
        if !text.contains(from) {
            return Err(SandboxError::EditDoesNotApply {
                file: file.into(),
                text: from.into(),
            });
        }
        text = text.replacen(from, to, 1);
    }
    source.insert(file.into(), text.into_bytes());
    Ok((target, source))
}

/// A commit SHA for a tree: the first 40 hex digits of the SHA-256 of its paths and contents.
fn tree_sha(salt: &str, tree: &Tree) -> String {
    let mut hash = Sha256::new();
    hash.update(salt.as_bytes());
    for (path, content) in tree {
        hash.update((path.len() as u64).to_le_bytes());
        hash.update(path.as_bytes());
        hash.update((content.len() as u64).to_le_bytes());
        hash.update(content);
    }
    hex::encode(hash.finalize())[..40].to_owned()
}

/// A project holding `tree` at commit `sha`.
fn with_tree(mut project: Project, sha: &str, tree: &Tree) -> Project {
    project = project.commit(sha);
    for (path, content) in tree {
        project = project.file(sha, path, content.clone());
    }
    project
}

/// The sandbox: a project whose `main` is `target` and whose open MR !1 from `feature` makes
/// it `source`. Both merge checks are on, as the setup guide asks. Beside it, the central
/// policy project `platform/assent-policies` with the example central policies on `main`.
pub fn state(target: &Tree, source: &Tree) -> Result<State, SandboxError> {
    let diffs = DiffFile::listing(target, source);
    if diffs.is_empty() {
        return Err(SandboxError::NoChange);
    }
    let base_sha = tree_sha("main", target);
    let head_sha = tree_sha("feature", source);
    let mut project = Project::new(PROJECT_ID, PROJECT_PATH)
        .branch("main", &base_sha)
        .branch("feature", &head_sha);
    project.only_allow_merge_if_all_discussions_are_resolved = true;
    project.only_allow_merge_if_pipeline_succeeds = true;
    project = with_tree(project, &base_sha, target);
    project = with_tree(project, &head_sha, source);
    let mut mr =
        MergeRequest::new(MR_IID, AUTHOR_ID, &head_sha, &base_sha).branches("feature", "main");
    mr.title = "Shorten retention of orders.events.v1".into();
    for diff in diffs {
        mr = mr.diff(diff);
    }
    let central = embedded("platform-policies");
    let central_sha = tree_sha("main", &central);
    let policies = with_tree(
        Project::new(POLICY_PROJECT_ID, POLICY_PROJECT_PATH).branch("main", &central_sha),
        &central_sha,
        &central,
    );
    Ok(State {
        users: vec![
            User::new(BOT_ID, "assent-bot").bot(true),
            User::new(REVIEWER_ID, "alice"),
            User::new(AUTHOR_ID, "bob"),
            User::new(MAINTAINER_ID, "carol"),
        ],
        tokens: vec![
            Token::new(BOT_TOKEN, BOT_ID, &["api"]).access_level(30),
            Token::new(REVIEWER_TOKEN, REVIEWER_ID, &["api"]).access_level(30),
            Token::new(AUTHOR_TOKEN, AUTHOR_ID, &["api"]).access_level(30),
            Token::new(MAINTAINER_TOKEN, MAINTAINER_ID, &["api"]).access_level(40),
        ],
        projects: vec![project.merge_request(mr), policies],
        ..State::default()
    })
}

/// The example's policy change: MR !2 from `policy-message` by `bob`, which rewords the
/// retention rule's message (an `assent/self-edit` challenge only a policy owner, `carol`,
/// can assent to).
pub fn add_policy_mr(state: &mut State) -> Result<(), SandboxError> {
    let file = ".assent/policies/topics.yaml";
    let (from, to) = (
        "consumers that lag behind lose data.\"\n",
        "consumers that lag behind lose data; check their lag first.\"\n",
    );
    let project = state
        .project_mut(PROJECT_ID)
        .expect("the sandbox's project");
    let base_sha = project.branches["main"].clone();
    let target: Tree = project.files[&base_sha]
        .iter()
        .map(|(path, content)| (path.clone(), content.0.clone()))
        .collect();
    let mut source = target.clone();
    let text =
        String::from_utf8_lossy(source.get(file).map_or(&[][..], |c| c.as_slice())).into_owned();
    if !text.contains(from) {
        return Err(SandboxError::EditDoesNotApply {
            file: file.into(),
            text: from.into(),
        });
    }
    source.insert(file.into(), text.replacen(from, to, 1).into_bytes());
    let head_sha = tree_sha("policy-message", &source);
    let mut mr = MergeRequest::new(POLICY_MR_IID, AUTHOR_ID, &head_sha, &base_sha)
        .branches("policy-message", "main");
    mr.title = "Reword the retention-shrink message".into();
    for diff in DiffFile::listing(&target, &source) {
        mr = mr.diff(diff);
    }
    let taken = std::mem::replace(project, Project::new(0, ""));
    *project = with_tree(
        taken.branch("policy-message", &head_sha),
        &head_sha,
        &source,
    )
    .merge_request(mr);
    Ok(())
}

/// The sandbox of example `name`: [`state`] of its trees and the policy change MR
/// ([`add_policy_mr`]).
pub fn example_state(name: &str) -> Result<State, SandboxError> {
    let (target, source) = example(name)?;
    let mut state = state(&target, &source)?;
    add_policy_mr(&mut state)?;
    Ok(state)
}

/// Why a push was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum PushError {
    /// No project or merge request by that id.
    NotFound(String),
    /// The tree is the MR's head already: there is nothing to commit.
    NothingToCommit,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::NotFound(what) => write!(f, "{what} not found"),
            PushError::NothingToCommit => write!(
                f,
                "nothing to commit: the tree is the merge request's head already"
            ),
        }
    }
}

impl std::error::Error for PushError {}

/// Pushes `tree` as a new commit on the source branch of MR `iid` of project `pid`, as
/// GitLab's `app/services/merge_requests/refresh_service.rb` handles a push to an MR's
/// branch: the branch and the MR's head move and its diff is reloaded (the target's tree
/// against the new one), approvals are reset when the project says so, a system note
/// `added 1 commit` is posted (`app/services/system_notes/commit_service.rb`), the Merge
/// Request Hook follows (`action: update`, from the head's move) and a merge request
/// pipeline is created (a project whose CI configuration runs MR pipelines). Returns the new
/// commit's SHA.
pub fn push(state: &mut State, pid: u64, iid: u64, tree: &Tree) -> Result<String, PushError> {
    let now = state.now();
    let project = state
        .project(pid)
        .ok_or_else(|| PushError::NotFound(format!("project {pid}")))?;
    let mr = project
        .mr(iid)
        .ok_or_else(|| PushError::NotFound(format!("merge request !{iid}")))?;
    let read = |sha: &str| -> Tree {
        project
            .files
            .get(sha)
            .map(|files| {
                files
                    .iter()
                    .map(|(path, content)| (path.clone(), content.0.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    if read(&mr.sha) == *tree {
        return Err(PushError::NothingToCommit);
    }
    let diffs = DiffFile::listing(&read(&mr.diff_refs.base_sha), tree);
    // The previous head is part of the commit, so pushing an earlier tree again is a new
    // commit (as in git), never the old SHA.
    let sha = tree_sha(&format!("{}:{}", mr.source_branch, mr.sha), tree);
    let (branch, author) = (mr.source_branch.clone(), mr.author_id);
    crate::approvals::reset_on_push(state, pid, iid, &sha);
    let project = state.project_mut(pid).expect("found above");
    let taken = std::mem::replace(project, Project::new(0, ""));
    *project = with_tree(taken.branch(&branch, &sha), &sha, tree);
    let mr = project.mr_mut(iid).expect("found above");
    mr.sha = sha.clone();
    mr.diff_refs.head_sha = sha.clone();
    mr.diffs = diffs;
    mr.updated_at = now;
    let body = format!("added 1 commit\n\n* {} - push from fake-gitlab", &sha[..8]);
    state
        .create_note(pid, iid, author, &body, true)
        .map_err(|e| PushError::NotFound(format!("{e:?}")))?;
    state
        .create_pipeline(pid, iid)
        .map_err(|e| PushError::NotFound(format!("{e:?}")))?;
    Ok(sha)
}

/// The environment a CI merge request job would have, as `export` lines for a shell.
pub fn exports(api_base: &str, state: &State) -> String {
    let project = &state.projects[0];
    let mr = &project.merge_requests[0];
    let vars = [
        ("CI_API_V4_URL", api_base.to_owned()),
        ("CI_PROJECT_ID", project.id.to_string()),
        ("CI_MERGE_REQUEST_IID", mr.iid.to_string()),
        ("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", mr.sha.clone()),
        (
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
            mr.target_branch.clone(),
        ),
        ("ASSENT_TOKEN", BOT_TOKEN.to_owned()),
        // The sandbox speaks plain HTTP on loopback; this silences assent's cleartext warning.
        ("ASSENT_ALLOW_HTTP", "1".to_owned()),
    ];
    vars.iter()
        .map(|(name, value)| format!("export {name}={value}\n"))
        .collect()
}

/// What to try once the environment is exported.
pub fn guide(api_base: &str, state: &State) -> String {
    let project = &state.projects[0];
    let mr = &project.merge_requests[0];
    let root = api_base.trim_end_matches("/api/v4");
    let discussions = format!(
        "$CI_API_V4_URL/projects/{}/merge_requests/{}/discussions",
        project.id, mr.iid
    );
    let mut out = format!(
        "\
# Then, in that shell:
assent doctor                  # checks the setup; serialization is a warning outside a CI job
assent run --dry-run           # the plan, no write
assent run                     # posts the threads and the summary, writes assent-receipt.json
# The merge request's page: each thread as a reviewer reads it, and buttons to resolve it
# as alice (a reviewer: her resolution is assent), bob (the author: his is not) or carol:
#   {root}/{path}/-/merge_requests/{iid}
curl -s {root}/__fake/transcript   # the same as text
# Or through the API, as a script would (the thread's ID is on the page):
curl -s -X PUT -H 'PRIVATE-TOKEN: {REVIEWER_TOKEN}' \"{discussions}/ID?resolved=true\"
assent sweep --interval 1h --lookback 2h   # the scheduled safety net
",
        path = project.path_with_namespace,
        iid = mr.iid,
    );
    if let Some(policy_mr) = project.mr(POLICY_MR_IID) {
        out.push_str(&format!(
            "\
# !{iid} changes a policy: only a Maintainer (carol) can assent, on
#   {root}/{path}/-/merge_requests/{iid}   (CI_MERGE_REQUEST_IID={iid},
#   CI_MERGE_REQUEST_SOURCE_BRANCH_SHA={sha})
",
            iid = policy_mr.iid,
            path = project.path_with_namespace,
            sha = policy_mr.sha,
        ));
    }
    if state.project(POLICY_PROJECT_ID).is_some() {
        out.push_str(&format!(
            "# Central policies: assent run --policy-project {POLICY_PROJECT_PATH}\n"
        ));
    }
    out
}

/// Every merge request's notes as a reviewer reads them: each discussion with its state and
/// each note's author and Markdown body (served at `GET /__fake/transcript`).
pub fn transcript(state: &State) -> String {
    let name = |id: u64| {
        state
            .users
            .iter()
            .find(|u| u.id == id)
            .map_or_else(|| format!("user {id}"), |u| format!("@{}", u.username))
    };
    let mut out = String::new();
    for project in &state.projects {
        for mr in &project.merge_requests {
            out.push_str(&format!(
                "# {} !{}: {} ({})\n",
                project.path_with_namespace,
                mr.iid,
                mr.title,
                mr.state.as_str()
            ));
            if mr.discussions.is_empty() {
                out.push_str("\n(no notes yet)\n");
            }
            for d in &mr.discussions {
                let status = match d.notes.first() {
                    Some(first) if d.resolvable() && d.resolved() => format!(
                        "resolved by {}",
                        first.resolved_by.map_or_else(|| "?".into(), name)
                    ),
                    Some(_) if d.resolvable() => "unresolved".into(),
                    _ => "note".into(),
                };
                let place = match d.notes.first().and_then(|n| n.position.as_ref()) {
                    Some(p) => match (p.new_line, p.old_line) {
                        (Some(line), _) => format!(" on {} line {line}", p.new_path),
                        (None, Some(line)) => format!(" on {} removed line {line}", p.old_path),
                        (None, None) => format!(" on {}", p.new_path),
                    },
                    None => String::new(),
                };
                out.push_str(&format!("\n## discussion {}{place} ({status})\n", d.id));
                for note in &d.notes {
                    out.push_str(&format!(
                        "\n--- note {} by {}\n{}\n",
                        note.id,
                        name(note.author_id),
                        note.body
                    ));
                }
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Tree {
        files
            .iter()
            .map(|(p, c)| ((*p).to_owned(), c.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn the_example_changes_one_file_two_values() {
        let (target, source) = example("topic-registry").expect("the example applies");
        assert!(target.contains_key(".assent/policies/topics.yaml"));
        let diffs = DiffFile::listing(&target, &source);
        let paths: Vec<&str> = diffs.iter().map(|d| d.new_path.as_str()).collect();
        assert_eq!(paths, ["topics/orders.yaml"]);
        let new = String::from_utf8(source["topics/orders.yaml"].clone()).unwrap();
        assert!(new.contains("retention_days: 7\n    partitions: 12\n    owner: team-orders"));
        assert!(new.contains("owner: team-risk"));
        // Each change is a line of the diff, so its finding can sit on it.
        assert!(
            diffs[0]
                .diff
                .contains("\n-    retention_days: 30\n+    retention_days: 7\n")
        );
        assert!(diffs[0].diff.contains("\n+    owner: team-risk\n"));
    }

    #[test]
    fn changed_files_name_adds_deletes_and_modifications_only() {
        let base = tree(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let head = tree(&[("a", "1"), ("b", "20"), ("d", "4")]);
        let diffs = DiffFile::listing(&base, &head);
        let kinds: Vec<(&str, bool, bool)> = diffs
            .iter()
            .map(|d| (d.new_path.as_str(), d.new_file, d.deleted_file))
            .collect();
        assert_eq!(
            kinds,
            [("b", false, false), ("c", false, true), ("d", true, false)]
        );
    }

    #[test]
    fn shas_follow_the_trees_and_nothing_else() {
        let a = tree(&[("x", "1")]);
        let b = tree(&[("x", "2")]);
        assert_eq!(tree_sha("main", &a), tree_sha("main", &a));
        assert_ne!(tree_sha("main", &a), tree_sha("main", &b));
        assert_ne!(tree_sha("main", &a), tree_sha("feature", &a));
        assert_eq!(tree_sha("main", &a).len(), 40);
        // A path/content boundary cannot be moved without changing the SHA.
        assert_ne!(
            tree_sha("m", &tree(&[("ab", "c")])),
            tree_sha("m", &tree(&[("a", "bc")]))
        );
    }

    #[test]
    fn identical_trees_make_no_merge_request() {
        let a = tree(&[("x", "1")]);
        assert!(matches!(state(&a, &a), Err(SandboxError::NoChange)));
    }

    #[test]
    fn the_state_gates_like_the_setup_guide_asks() {
        let (target, source) = example("topic-registry").unwrap();
        let state = state(&target, &source).unwrap();
        let project = &state.projects[0];
        assert!(project.only_allow_merge_if_all_discussions_are_resolved);
        assert!(project.only_allow_merge_if_pipeline_succeeds);
        let mr = &project.merge_requests[0];
        assert_eq!(mr.sha, project.branches["feature"]);
        assert_eq!(mr.target_branch, "main");
        assert_ne!(mr.author_id, BOT_ID);
        let exports = exports("http://127.0.0.1:1/api/v4", &state);
        assert!(exports.contains(&format!(
            "export CI_MERGE_REQUEST_SOURCE_BRANCH_SHA={}\n",
            mr.sha
        )));
    }

    #[test]
    fn read_tree_skips_git_and_keeps_nested_paths() {
        let dir = std::env::temp_dir().join(format!("sandbox-tree-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join(".git/HEAD"), "ref").unwrap();
        std::fs::write(dir.join("a/b/c.yaml"), "k: v").unwrap();
        let read = read_tree(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let read = read.unwrap();
        assert_eq!(read.keys().collect::<Vec<_>>(), ["a/b/c.yaml"]);
    }
}
