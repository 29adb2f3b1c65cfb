//! `assent lint [REPO]`: validate the policies of a local checkout.
//!
//! Reads every `*.yaml`/`*.yml` under `REPO/.assent/policies/` (recursively, extension in any
//! ASCII case: the same files `assent run` reads from the target branch), loads them with
//! [`PolicySet::load`] and prints every problem as `path:line: message`. Paths are printed the
//! way ripgrep prints them: the repository-relative path joined to `REPO` as given (and bare
//! when `REPO` is `.`), so they can be clicked from where the command ran.
//!
//! The tree is read as hostile input ([`crate::commands::local_tree`]): links, special
//! files, files over [`MAX_FILE_BYTES`] and folders holding too much are refused, each a
//! problem line, and never opened or read beyond the limit.
//!
//! Once the policies load, each `match.files` glob that matches no file of the checkout is a
//! warning (`path:line: warning: …`): the checkout's paths are listed, within caps, without
//! opening anything ([`list_checkout`]). So is each `identities` declaration that keys no
//! list a rule judges ([`PolicySet::unused_identities`]): a file glob matching no file, or
//! none a rule governs, and a list pattern matching no list in the files its glob matches
//! (those files are read and parsed for it, within the parser's limits), since a typo there
//! leaves the lists compared by position and the rules that name entries by key silent. So is each rule that judges a pointer on some kinds
//! of change but whose `delete` no rule judges ([`PolicySet::uncovered_deletes`]): deleting
//! the key would pass unjudged; and, the mirror image, each whose `add` no rule judges
//! ([`PolicySet::uncovered_adds`]): setting the key where the default applied would pass
//! unjudged. Warnings never fail the command.
//!
//! Exit codes: `0` the policies load (with or without warnings), `1` problems found (refused
//! entries included), `2` `REPO` or its `.assent/policies` is missing or a file cannot be
//! read.

use std::path::{Path, PathBuf};

use clap::Args;

use serde::Serialize;

use crate::commands::junit::{element, xml_attribute, xml_text};
use crate::commands::local_tree::{
    CheckoutTooLarge, ListError, MAX_FILE_BYTES, MAX_TOTAL_BYTES, ReadError, RefusedEntry,
    list_checkout, list_folder, read_file,
};
use crate::commands::{CliError, CliResult};
use crate::core::desired_state::{CENTRAL_POLICY_PREFIX, central_policy_path};
use crate::core::policy::excerpt::escape_controls;
use crate::core::policy::{PolicyFile, PolicyProblem, PolicySet};
use crate::core::semantic_diff::{Limits, Node, format_for_path, parse_document};
use crate::engine::run::inputs::{POLICY_DIR, is_policy_file_name};

const LINT_EXAMPLES: &str = "\
Examples:
  assent lint                                  Lint the policies of the repository in `.`
  assent lint fixtures/repos/topic-registry    Lint another checkout

Prints every problem as `path:line: message`, then `N problem(s) in M file(s)` or
`ok: N rule(s) in M file(s)`. Once the policies load, a match.files glob that matches no file
of the checkout is a `path:line: warning: ...` line, and so is a rule that judges a pointer
only on some kinds when no rule judges its delete, and an identities glob or list pattern
that keys no list of the checkout (warnings do not fail).
`--format junit` prints one JUnit test case per policy file for GitLab's test report widget:
  assent lint --format junit > assent-lint.xml
Exit codes: 0 the policies load, 1 problems found, 2 REPO or REPO/.assent/policies missing.";

/// Arguments of `assent lint`.
#[derive(Debug, Args)]
#[command(after_help = LINT_EXAMPLES)]
pub struct LintArgs {
    /// The repository checkout whose `.assent/policies/` is validated.
    #[arg(value_name = "REPO", default_value = ".")]
    pub repo: PathBuf,
    /// A checkout of the central policy project (`assent run --policy-project`): its
    /// `.assent/policies/` load together with REPO's, as a run loads them.
    #[arg(long, value_name = "DIR")]
    pub policy_project_dir: Option<PathBuf>,
    /// Output format on stdout: `path:line: message` lines and a tally for a person
    /// (`text`), one JSON document for tooling (`json`; docs/policies.md, "`--format
    /// json`"), or JUnit XML for GitLab's test report widget (`junit`: one test case per
    /// policy file). Errors that stop lint (exit 2) go to stderr in every format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: LintFormat,
}

/// What `assent lint` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    /// `path:line: message` lines and a tally.
    Text,
    /// One JSON document.
    Json,
    /// JUnit XML: one test case per policy file, failing with its problems.
    Junit,
}

/// The warnings for the files of `.assent/policies/` that are not policies by their name
/// (only `*.yaml` and `*.yml` are, in a run as here): a `topics.json` or `topics.yaml.bak`
/// would otherwise be ignored without a word. Documentation (`*.md`) and dotfiles
/// (`.gitkeep`) are expected there and pass silently.
pub fn unread_policy_files(passed_over: &[String]) -> Vec<PolicyProblem> {
    passed_over
        .iter()
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            !name.starts_with('.') && !name.to_ascii_lowercase().ends_with(".md")
        })
        .map(|path| PolicyProblem {
            file: path.clone(),
            line: None,
            message: "not read: only *.yaml and *.yml files under .assent/policies are policies (a run ignores this file too); rename it, or move it out of the folder".to_owned(),
        })
        .collect()
}

/// One problem or warning of `assent lint --format json`.
#[derive(Debug, Serialize)]
struct JsonProblem {
    /// The file as shown in the text form (joined to REPO as given).
    file: String,
    /// The 1-based line, when known.
    line: Option<usize>,
    /// What is wrong, control characters escaped.
    message: String,
}

/// The document of `assent lint --format json`.
#[derive(Debug, Serialize)]
struct JsonReport {
    /// Always `assent/v1`.
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    /// Always `LintReport`.
    kind: &'static str,
    /// The policies load (exit 0).
    ok: bool,
    /// Rules loaded (0 when the policies do not load).
    rules: usize,
    /// Policy files read.
    files: usize,
    /// Every problem, in the order the text form prints them.
    problems: Vec<JsonProblem>,
    /// Every warning (warnings do not fail).
    warnings: Vec<JsonProblem>,
}

fn json_problems(repo: &Path, problems: &[PolicyProblem]) -> Vec<JsonProblem> {
    problems
        .iter()
        .map(|p| JsonProblem {
            file: shown_path(repo, &p.file),
            line: p.line,
            message: escape_controls(&p.message),
        })
        .collect()
}

/// Why the policies of a local checkout could not be read (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReadError(pub String);

/// How a repository path is shown to the user: joined to `REPO` as given, bare for `.`, with
/// control characters escaped (a file name can hold a newline or an ANSI escape).
pub fn shown_path(repo: &Path, repo_path: &str) -> String {
    // A central policy file is named `central:<checkout>/<path>` (read_policies): shown as
    // the path in that checkout.
    if let Some(central) = repo_path.strip_prefix(CENTRAL_POLICY_PREFIX) {
        return escape_controls(central);
    }
    let joined = if repo == Path::new(".") || repo.as_os_str().is_empty() {
        repo_path.to_owned()
    } else {
        format!(
            "{}/{}",
            repo.display().to_string().trim_end_matches('/'),
            repo_path
        )
    };
    escape_controls(&joined)
}

/// The policy files of a local checkout, and a problem for each entry it refused to read
/// (see [`crate::commands::local_tree`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalPolicies {
    /// The files read, sorted by path.
    pub files: Vec<PolicyFile>,
    /// One problem per refused entry (a link, a special file, a file over the size limit, …).
    pub refused: Vec<PolicyProblem>,
    /// One warning per file of the folder that is not a policy by its name
    /// ([`unread_policy_files`]).
    pub unread: Vec<PolicyProblem>,
}

impl LocalPolicies {
    /// Loads the files read; any refusal is a problem too, so a tree with a refused entry
    /// never loads (a policy that was not read must not be silently missing).
    pub fn load(&self) -> Result<PolicySet, Vec<PolicyProblem>> {
        let loaded = PolicySet::load(&self.files);
        if self.refused.is_empty() {
            return loaded;
        }
        let mut problems = self.refused.clone();
        if let Err(more) = loaded {
            problems.extend(more);
        }
        problems.sort();
        problems.dedup();
        Err(problems)
    }
}

fn refusal_problem(refusal: RefusedEntry) -> PolicyProblem {
    PolicyProblem {
        file: refusal.path,
        line: None,
        message: refusal.reason,
    }
}

/// Every policy file of the checkout at `repo`, with repository-relative `/`-separated paths
/// (as `assent run` names them), sorted by path, read under the limits of
/// [`crate::commands::local_tree`].
pub fn read_local_policies(repo: &Path) -> Result<LocalPolicies, LocalReadError> {
    if !repo.is_dir() {
        return Err(LocalReadError(format!(
            "{} is not a directory: pass the root of a repository checkout (default `.`)",
            escape_controls(&repo.display().to_string())
        )));
    }
    let listing = match list_folder(repo, POLICY_DIR, is_policy_file_name) {
        Ok(listing) => listing,
        Err(ListError::Missing) => {
            return Err(LocalReadError(format!(
                "{} does not exist: create it and put the policy files (*.yaml) there, or pass \
                 the repository root as REPO",
                shown_path(repo, POLICY_DIR)
            )));
        }
        Err(ListError::Refused(refusal)) => {
            return Ok(LocalPolicies {
                files: Vec::new(),
                refused: vec![refusal_problem(refusal)],
                unread: Vec::new(),
            });
        }
        Err(ListError::Io(message)) => return Err(LocalReadError(shown_path(repo, &message))),
    };
    let mut local = LocalPolicies {
        files: Vec::new(),
        refused: listing.refused.into_iter().map(refusal_problem).collect(),
        unread: unread_policy_files(&listing.passed_over),
    };
    let mut total = 0usize;
    for path in listing.files {
        match read_file(repo, &path, MAX_FILE_BYTES) {
            Ok(bytes) => {
                total += bytes.len();
                if total > MAX_TOTAL_BYTES {
                    local.refused.push(PolicyProblem {
                        file: POLICY_DIR.to_owned(),
                        line: None,
                        message: format!(
                            "the policy files are more than {MAX_TOTAL_BYTES} bytes together; \
                             assent reads at most {MAX_TOTAL_BYTES}"
                        ),
                    });
                    break;
                }
                local.files.push(PolicyFile { path, bytes });
            }
            Err(ReadError::Refused(reason)) => local.refused.push(PolicyProblem {
                file: path,
                line: None,
                message: reason,
            }),
            Err(ReadError::Io(e)) => {
                return Err(LocalReadError(format!("{}: {e}", shown_path(repo, &path))));
            }
        }
    }
    local.refused.sort();
    Ok(local)
}

/// [`read_local_policies`] of `repo`, and, when a checkout of the central policy project is
/// given, its policies beside them, named as a run names central policy files (with the
/// checkout's path as the project), so the two sets load together as in a run: a rule id
/// defined in both is a problem.
pub fn read_policies(repo: &Path, central: Option<&Path>) -> Result<LocalPolicies, LocalReadError> {
    let mut local = read_local_policies(repo)?;
    if let Some(dir) = central {
        let project = dir.display().to_string();
        let project = project.trim_end_matches('/');
        let rename = |path: &str| central_policy_path(project, path);
        let central = read_local_policies(dir)?;
        local
            .files
            .extend(central.files.into_iter().map(|f| PolicyFile {
                path: rename(&f.path),
                bytes: f.bytes,
            }));
        local
            .refused
            .extend(central.refused.into_iter().map(|p| PolicyProblem {
                file: rename(&p.file),
                ..p
            }));
        local
            .unread
            .extend(central.unread.into_iter().map(|p| PolicyProblem {
                file: rename(&p.file),
                ..p
            }));
        local.files.sort_by(|a, b| a.path.cmp(&b.path));
        local.refused.sort();
    }
    Ok(local)
}

/// Prints `problems` as `path:line: message` lines on stdout, paths shown for `repo`.
pub fn print_problems(repo: &Path, problems: &[PolicyProblem]) {
    for problem in problems {
        let shown = shown_path(repo, &problem.file);
        let message = escape_controls(&problem.message);
        match problem.line {
            Some(line) => crate::outln!("{shown}:{line}: {message}"),
            None => crate::outln!("{shown}: {message}"),
        }
    }
}

/// Prints `warnings` as `path:line: warning: message` lines on stdout, paths shown for
/// `repo`.
fn print_warnings(repo: &Path, warnings: &[PolicyProblem]) {
    for warning in warnings {
        let shown = shown_path(repo, &warning.file);
        let message = escape_controls(&warning.message);
        match warning.line {
            Some(line) => crate::outln!("{shown}:{line}: warning: {message}"),
            None => crate::outln!("{shown}: warning: {message}"),
        }
    }
}

/// The JUnit document of a lint: one test case per policy file (and per other path a problem
/// names, such as a refused link), failing with that file's problems; warnings are the case's
/// `system-out` and never fail it. No file at all is one skipped case, so the widget says so.
fn junit(
    repo: &Path,
    local: &LocalPolicies,
    problems: &[PolicyProblem],
    warnings: &[PolicyProblem],
) -> String {
    let mut files: Vec<&str> = local.files.iter().map(|f| f.path.as_str()).collect();
    files.extend(problems.iter().chain(warnings).map(|p| p.file.as_str()));
    files.sort_unstable();
    files.dedup();
    let lines = |of: &[PolicyProblem], file: &str, prefix: &str| -> Vec<String> {
        of.iter()
            .filter(|p| p.file == file)
            .map(|p| {
                let shown = shown_path(repo, &p.file);
                let message = escape_controls(&p.message);
                match p.line {
                    Some(line) => format!("{shown}:{line}: {prefix}{message}"),
                    None => format!("{shown}: {prefix}{message}"),
                }
            })
            .collect()
    };
    let mut cases = Vec::new();
    let mut failures = 0;
    for file in &files {
        let shown = shown_path(repo, file);
        let open = format!(
            "    <testcase name=\"{} loads\" classname=\"assent lint\" file=\"{}\"",
            xml_attribute(&shown),
            xml_attribute(&shown)
        );
        let failed = lines(problems, file, "");
        let warned = lines(warnings, file, "warning: ");
        let mut body = Vec::new();
        if let Some(first) = failed.first() {
            failures += 1;
            let message = format!("{} problem(s); the first: {first}", failed.len());
            body.push(element("failure", "problem", &message, &failed.join("\n")));
        }
        if !warned.is_empty() {
            body.push(format!(
                "<system-out>{}</system-out>",
                xml_text(&warned.join("\n"))
            ));
        }
        cases.push(if body.is_empty() {
            format!("{open}/>\n")
        } else {
            format!(
                "{open}>\n      {}\n    </testcase>\n",
                body.join("\n      ")
            )
        });
    }
    if cases.is_empty() {
        let shown = shown_path(repo, POLICY_DIR);
        cases.push(format!(
            "    <testcase name=\"{0} holds policies\" classname=\"assent lint\" file=\"{0}\">\n      <skipped message=\"no *.yaml policy file: no rule judges anything\"/>\n    </testcase>\n",
            xml_attribute(&shown)
        ));
    }
    let skipped = usize::from(files.is_empty());
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\"",
        cases.len()
    );
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!("<testsuites name=\"assent lint\" {counts}>\n"));
    out.push_str(&format!(
        "  <testsuite name=\"assent policies\" {counts}>\n"
    ));
    cases.iter().for_each(|c| out.push_str(c));
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Most bytes of the checkout's files read, all together, to find the lists the identity
/// declarations key: the run's own budget for governed content.
const IDENTITY_READ_BUDGET: usize = 64 << 20;

/// [`PolicySet::unused_identities`] for the checkout at `repo` whose files are `paths`: the
/// files an identity glob matches are read (as hostile input, within the parser's limits
/// and [`IDENTITY_READ_BUDGET`] together) and parsed; one that cannot be read or parsed is
/// left out, as is every file past the budget.
fn unused_identities(repo: &Path, set: &PolicySet, paths: &[String]) -> Vec<PolicyProblem> {
    let limits = Limits::default();
    let mut budget = IDENTITY_READ_BUDGET;
    let mut documents: Vec<(&str, Node)> = Vec::new();
    for path in paths {
        if path.starts_with(".assent/") || !set.identity_covers(path) {
            continue;
        }
        let Some(format) = format_for_path(path) else {
            continue;
        };
        let Ok(bytes) = read_file(repo, path, limits.max_bytes.min(budget)) else {
            continue;
        };
        budget = budget.saturating_sub(bytes.len());
        if let Ok(node) = parse_document(path, format, &bytes, &limits) {
            documents.push((path, node));
        }
    }
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let documents: Vec<(&str, &Node)> = documents.iter().map(|(p, n)| (*p, n)).collect();
    set.unused_identities(&paths, &documents)
}

/// Prints the JSON report on stdout (one line, then a newline).
fn print_json(report: &JsonReport) {
    let mut json = serde_json::to_string(report).expect("a lint report serialises");
    json.push('\n');
    crate::output::print_json(&json);
}

/// Runs `assent lint`.
pub fn run(args: &LintArgs) -> CliResult {
    let local = match read_policies(&args.repo, args.policy_project_dir.as_deref()) {
        Ok(local) => local,
        Err(LocalReadError(message)) => return Err(CliError::usage(message)),
    };
    match local.load() {
        Ok(set) => {
            let mut warnings = match list_checkout(&args.repo) {
                Ok(paths) => {
                    let mut warnings = set.unmatched_globs(paths.iter().map(String::as_str));
                    warnings.extend(unused_identities(&args.repo, &set, &paths));
                    warnings
                }
                Err(CheckoutTooLarge(why)) => {
                    crate::errln!(
                        "warning: the match.files globs and identities were not checked against the checkout: {why}"
                    );
                    Vec::new()
                }
            };
            warnings.extend(set.uncovered_deletes());
            warnings.extend(set.uncovered_adds());
            warnings.extend(local.unread.iter().cloned());
            if args.format == LintFormat::Junit {
                crate::out!("{}", junit(&args.repo, &local, &[], &warnings));
                return Ok(());
            }
            if args.format == LintFormat::Json {
                print_json(&JsonReport {
                    api_version: "assent/v1",
                    kind: "LintReport",
                    ok: true,
                    rules: set.rule_ids().len(),
                    files: local.files.len(),
                    problems: Vec::new(),
                    warnings: json_problems(&args.repo, &warnings),
                });
                return Ok(());
            }
            print_warnings(&args.repo, &warnings);
            let mut tally = format!(
                "ok: {} rule(s) in {} file(s)",
                set.rule_ids().len(),
                local.files.len()
            );
            if !warnings.is_empty() {
                tally.push_str(&format!("; {} warning(s)", warnings.len()));
            }
            crate::outln!("{tally}");
            if local.files.is_empty() {
                crate::errln!(
                    "warning: {} holds no *.yaml policy file: no rule judges anything",
                    shown_path(&args.repo, POLICY_DIR)
                );
            }
            Ok(())
        }
        Err(problems) => {
            if args.format == LintFormat::Junit {
                crate::out!("{}", junit(&args.repo, &local, &problems, &[]));
            }
            if args.format == LintFormat::Json {
                print_json(&JsonReport {
                    api_version: "assent/v1",
                    kind: "LintReport",
                    ok: false,
                    rules: 0,
                    files: local.files.len(),
                    problems: json_problems(&args.repo, &problems),
                    warnings: Vec::new(),
                });
            }
            if args.format != LintFormat::Text {
                // The document holds every problem; stderr names the cause in one line, as
                // every non-zero exit does (docs/contract.md#exit-codes).
                let mut files: Vec<&str> = problems.iter().map(|p| p.file.as_str()).collect();
                files.dedup();
                return Err(CliError::gate_failed(format!(
                    "the policies in {} do not load: {} problem(s) in {} file(s)",
                    shown_path(&args.repo, POLICY_DIR),
                    problems.len(),
                    files.len()
                )));
            }
            print_problems(&args.repo, &problems);
            let mut with_problems: Vec<&str> = problems.iter().map(|p| p.file.as_str()).collect();
            with_problems.dedup();
            let tally = format!(
                "{} problem(s) in {} file(s)",
                problems.len(),
                with_problems.len()
            );
            crate::outln!("{tally}");
            Err(CliError::gate_failed(format!(
                "the policies in {} do not load: {tally}",
                shown_path(&args.repo, POLICY_DIR)
            )))
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
        let local = read_local_policies(dir.path()).unwrap();
        assert!(local.refused.is_empty());
        let paths: Vec<&str> = local.files.iter().map(|f| f.path.as_str()).collect();
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
