//! A git repository in a temporary folder, isolated from the machine's git configuration: no
//! system or global config, `HOME` and `XDG_CONFIG_HOME` inside the folder. `assent check`'s
//! tests and benchmark build the checkouts they judge with it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository on branch `main` with a committer set, and the home its git runs in.
#[derive(Debug)]
pub struct GitRepo {
    home: tempfile::TempDir,
    dir: PathBuf,
}

impl GitRepo {
    /// An empty repository (`git init -b main`) whose commits are by `committer`.
    pub fn new(committer: &str) -> GitRepo {
        let home = tempfile::tempdir().expect("temporary directory");
        std::fs::write(home.path().join("gitconfig"), "").expect("empty config");
        let dir = home.path().join("repo");
        std::fs::create_dir(&dir).expect("repo folder");
        let repo = GitRepo { home, dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", committer]);
        repo.git(&["config", "user.email", "committer@example.com"]);
        repo
    }

    /// The working tree.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The isolated home: a folder beside the working tree, for clones and remotes.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `program`, to run in `dir` with the repository's isolated environment: git itself, or
    /// a program that runs git, such as `assent check`.
    pub fn command_in(&self, dir: &Path, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path())
            .env("GIT_CONFIG_GLOBAL", self.home.path().join("gitconfig"));
        command
    }

    /// Runs git in `dir` with the isolated environment; its trimmed stdout. Panics when git
    /// fails, with what it said.
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let out = self
            .command_in(dir, "git")
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_owned()
    }

    /// [`GitRepo::git_in`] the working tree.
    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.dir, args)
    }

    /// Writes `content` at `path` of the working tree, creating its folders.
    pub fn write(&self, path: &str, content: &[u8]) {
        let file = self.dir.join(path);
        std::fs::create_dir_all(file.parent().expect("a path in the tree")).expect("folders");
        std::fs::write(file, content).expect("write");
    }

    /// Clones the repository into `name` beside it (in its home); the clone's working tree.
    pub fn clone_into_home(&self, name: &str) -> PathBuf {
        let clone = self.home().join(name);
        let source = self.dir.to_str().expect("a UTF-8 path");
        self.git_in(
            self.home(),
            &["clone", "-q", source, clone.to_str().expect("a UTF-8 path")],
        );
        clone
    }

    /// Commits everything in the working tree; the new commit's SHA.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "--all"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}
