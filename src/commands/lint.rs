//! `assent lint [REPO]`: validate the policies of a local checkout.
//!
//! Reads every `*.yaml`/`*.yml` under `REPO/.assent/policies/` (recursively, extension in any
//! ASCII case: the same files `assent run` reads from the target branch), loads them with
//! [`PolicySet::load`] and prints every problem as `path:line: message`. Paths are printed the
//! way ripgrep prints them: the repository-relative path joined to `REPO` as given (and bare
//! when `REPO` is `.`), so they can be clicked from where the command ran.
//!
//! Exit codes: `0` the policies load, `1` problems found, `2` `REPO` or its `.assent/policies`
//! is missing or a file cannot be read.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::commands::Exit;
use crate::core::policy::{PolicyFile, PolicySet};
use crate::review_input::{POLICY_DIR, is_policy_file_name};

const LINT_EXAMPLES: &str = "\
Examples:
  assent lint                                  Lint the policies of the repository in `.`
  assent lint fixtures/repos/topic-registry    Lint another checkout

Prints every problem as `path:line: message`, then `N problem(s) in M file(s)` or
`ok: N rule(s) in M file(s)`.
Exit codes: 0 the policies load, 1 problems found, 2 REPO or REPO/.assent/policies missing.";

/// Arguments of `assent lint`.
#[derive(Debug, Args)]
#[command(after_help = LINT_EXAMPLES)]
pub struct LintArgs {
    /// The repository checkout whose `.assent/policies/` is validated.
    #[arg(value_name = "REPO", default_value = ".")]
    pub repo: PathBuf,
}

/// Why the policies of a local checkout could not be read (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReadError(pub String);

/// How a repository path is shown to the user: joined to `REPO` as given, bare for `.`.
pub fn shown_path(repo: &Path, repo_path: &str) -> String {
    if repo == Path::new(".") || repo.as_os_str().is_empty() {
        repo_path.to_owned()
    } else {
        format!(
            "{}/{}",
            repo.display().to_string().trim_end_matches('/'),
            repo_path
        )
    }
}

/// Every policy file of the checkout at `repo`, with repository-relative `/`-separated paths
/// (as `assent run` names them), sorted by path.
pub fn read_local_policies(repo: &Path) -> Result<Vec<PolicyFile>, LocalReadError> {
    if !repo.is_dir() {
        return Err(LocalReadError(format!(
            "{} is not a directory: pass the root of a repository checkout (default `.`)",
            repo.display()
        )));
    }
    let dir = repo.join(POLICY_DIR);
    if !dir.is_dir() {
        return Err(LocalReadError(format!(
            "{} does not exist: create it and put the policy files (*.yaml) there, or pass the \
             repository root as REPO",
            shown_path(repo, POLICY_DIR)
        )));
    }
    let mut paths = Vec::new();
    collect_files(&dir, POLICY_DIR, &mut paths)
        .map_err(|e| LocalReadError(format!("{}: {e}", shown_path(repo, POLICY_DIR))))?;
    paths.retain(|p| is_policy_file_name(p));
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            std::fs::read(repo.join(&path))
                .map(|bytes| PolicyFile {
                    path: path.clone(),
                    bytes,
                })
                .map_err(|e| LocalReadError(format!("{}: {e}", shown_path(repo, &path))))
        })
        .collect()
}

/// Appends the files under `dir` (recursively) as `/`-joined paths starting with `prefix`.
pub fn collect_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}/{name}");
        // Follows symlinks, as a checkout's file would be read.
        let meta = std::fs::metadata(entry.path())?;
        if meta.is_dir() {
            collect_files(&entry.path(), &path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Runs `assent lint`.
pub fn run(args: &LintArgs) -> Exit {
    let files = match read_local_policies(&args.repo) {
        Ok(files) => files,
        Err(LocalReadError(message)) => {
            eprintln!("error: {message}");
            return Exit::Usage;
        }
    };
    match PolicySet::load(&files) {
        Ok(set) => {
            println!(
                "ok: {} rule(s) in {} file(s)",
                set.rule_ids().len(),
                files.len()
            );
            if files.is_empty() {
                eprintln!(
                    "warning: {} holds no *.yaml policy file: no rule judges anything",
                    shown_path(&args.repo, POLICY_DIR)
                );
            }
            Exit::Success
        }
        Err(problems) => {
            for problem in &problems {
                let shown = shown_path(&args.repo, &problem.file);
                match problem.line {
                    Some(line) => println!("{shown}:{line}: {}", problem.message),
                    None => println!("{shown}: {}", problem.message),
                }
            }
            let mut with_problems: Vec<&str> = problems.iter().map(|p| p.file.as_str()).collect();
            with_problems.dedup();
            let tally = format!(
                "{} problem(s) in {} file(s)",
                problems.len(),
                with_problems.len()
            );
            println!("{tally}");
            eprintln!(
                "error: the policies in {} do not load: {tally}",
                shown_path(&args.repo, POLICY_DIR)
            );
            Exit::GateFailed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_paths_follow_the_repo_argument() {
        assert_eq!(
            shown_path(Path::new("."), ".assent/p.yaml"),
            ".assent/p.yaml"
        );
        assert_eq!(
            shown_path(Path::new("r/"), ".assent/p.yaml"),
            "r/.assent/p.yaml"
        );
        assert_eq!(
            shown_path(Path::new("/abs/r"), ".assent/p.yaml"),
            "/abs/r/.assent/p.yaml"
        );
    }

    #[test]
    fn local_policies_are_read_recursively_with_repo_paths() {
        let dir = tempfile::tempdir().unwrap();
        let policies = dir.path().join(".assent/policies/sub");
        std::fs::create_dir_all(&policies).unwrap();
        std::fs::write(policies.join("b.YML"), "b").unwrap();
        std::fs::write(policies.join("../a.yaml"), "a").unwrap();
        std::fs::write(policies.join("../notes.md"), "n").unwrap();
        let files = read_local_policies(dir.path()).unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![".assent/policies/a.yaml", ".assent/policies/sub/b.YML"]
        );
        assert!(read_local_policies(&dir.path().join("nope")).is_err());
        std::fs::remove_dir_all(dir.path().join(".assent")).unwrap();
        let err = read_local_policies(dir.path()).unwrap_err();
        assert!(err.0.contains(".assent/policies does not exist"), "{err:?}");
    }
}
