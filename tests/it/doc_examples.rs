//! The command examples in the docs are the commands' real output: every ```console block of
//! docs/policies.md whose command is `assent lint` or `assent test` runs against a copy of the
//! repository it names, and its stdout must be the block's lines. A line `...` or `…` in a
//! block stands for any number of lines (an example that shows the start and the tally).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ASSENT;

/// One `$ command` of a console block and the output lines printed under it.
struct Example {
    doc: &'static str,
    line: usize,
    args: Vec<String>,
    expected: Vec<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `$ assent lint|test …` examples of one document.
fn examples(doc: &'static str) -> Vec<Example> {
    let text = std::fs::read_to_string(root().join(doc)).expect("the document");
    let mut examples: Vec<Example> = Vec::new();
    let mut in_console = false;
    for (index, line) in text.lines().enumerate() {
        if !in_console {
            in_console = line.trim_end() == "```console";
            continue;
        }
        if line.starts_with("```") {
            in_console = false;
        } else if let Some(command) = line.strip_prefix("$ ") {
            let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
            let runs_offline = words.first().is_some_and(|w| w == "assent")
                && words.get(1).is_some_and(|w| w == "lint" || w == "test");
            if runs_offline {
                examples.push(Example {
                    doc,
                    line: index + 1,
                    args: words[1..].to_vec(),
                    expected: Vec::new(),
                });
            } else {
                // A command this test does not run: its output lines are not collected.
                examples.push(Example {
                    doc,
                    line: index + 1,
                    args: Vec::new(),
                    expected: Vec::new(),
                });
            }
        } else if let Some(example) = examples.last_mut() {
            example.expected.push(line.to_owned());
        }
    }
    examples.retain(|e| !e.args.is_empty());
    examples
}

/// Whether `actual` is `expected`, where an expected `...`/`…` line matches any run of lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." || first == "…" => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, tail)| line == first && matches(rest, tail)),
    }
}

/// Copies the repository an example names into `into`, at the same relative path, so that
/// the command prints the paths the document shows and can write nothing in the source tree.
fn copy_repository(relative: &Path, into: &Path) {
    let from = root().join(relative);
    for entry in walk(&from) {
        let target = into
            .join(relative)
            .join(entry.strip_prefix(&from).expect("inside"));
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("create folder");
        std::fs::copy(&entry, &target).expect("copy a file");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read a folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_lint_and_test_examples_of_the_policy_guide_are_real_output() {
    let examples = examples("docs/policies.md");
    assert!(
        examples.len() >= 8,
        "expected the guide's lint and test examples, found {}",
        examples.len()
    );
    let mut failures = Vec::new();
    for example in &examples {
        let repository = example
            .args
            .iter()
            .skip(1)
            .find(|a| !a.starts_with('-'))
            .expect("the example names a repository");
        let dir = tempfile::tempdir().expect("temporary directory");
        copy_repository(Path::new(repository), dir.path());
        let out = Command::new(ASSENT)
            .args(&example.args)
            .current_dir(dir.path())
            .env_remove("CI")
            .output()
            .expect("run assent");
        let stdout = String::from_utf8(out.stdout).expect("utf-8");
        let actual: Vec<&str> = stdout.lines().collect();
        if !matches(&example.expected, &actual) {
            failures.push(format!(
                "{}:{}: `assent {}` prints\n{stdout}\nbut the document shows\n{}\n",
                example.doc,
                example.line,
                example.args.join(" "),
                example.expected.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_ellipsis_line_stands_for_any_lines_and_nothing_else_does() {
    let expected = |lines: &[&str]| lines.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>();
    assert!(matches(
        &expected(&["a", "...", "z"]),
        &["a", "b", "c", "z"]
    ));
    assert!(matches(&expected(&["a", "…", "z"]), &["a", "z"]));
    assert!(!matches(&expected(&["a", "z"]), &["a", "b", "z"]));
    assert!(!matches(&expected(&["a", "...", "z"]), &["a", "b"]));
}
