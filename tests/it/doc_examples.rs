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

/// The documents whose links a reader follows.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![
        root().join("README.md"),
        root().join("ci-templates/README.md"),
        root().join("deploy/README.md"),
    ];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// A heading's anchor as GitLab and GitHub derive it: lower case, punctuation dropped (but
/// `-` and `_`), spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a document defines: its headings' slugs (a repeated heading gets `-1`, `-2`)
/// and explicit `<a id="…">` tags.
fn anchors(text: &str) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut anchors = std::collections::BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            let heading = heading.trim_start_matches('#');
            if heading.starts_with(' ') {
                let base = slug(heading);
                let count = seen.entry(base.clone()).or_default();
                anchors.insert(if *count == 0 {
                    base.clone()
                } else {
                    format!("{base}-{count}")
                });
                *count += 1;
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("<a id=\"") {
            rest = &rest[at + 7..];
            if let Some(end) = rest.find('"') {
                anchors.insert(rest[..end].to_owned());
            }
        }
    }
    anchors
}

/// The relative link targets (`path`, `path#anchor`, `#anchor`) of a document, outside fenced
/// code and inline code (which may run over a line break within its paragraph).
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_fence = false;
    let mut in_span = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if line.trim().is_empty() {
            in_span = false;
            continue;
        }
        let mut prose = String::new();
        for c in line.chars() {
            if c == '`' {
                in_span = !in_span;
                prose.push(' ');
            } else if !in_span {
                prose.push(c);
            }
        }
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            let external = target.contains("://") || target.starts_with("mailto:");
            if !external && !target.is_empty() && !target.contains(' ') {
                links.push((index + 1, target.to_owned()));
            }
        }
    }
    links
}

#[test]
fn every_relative_link_of_the_docs_reaches_a_file_and_its_anchor() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a document");
        let shown = doc
            .strip_prefix(root())
            .expect("inside")
            .display()
            .to_string();
        for (line, target) in relative_links(&text) {
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().expect("a folder").join(path)
            };
            if !file.exists() {
                broken.push(format!(
                    "{shown}:{line}: `{target}`: no file {}",
                    file.display()
                ));
                continue;
            }
            let is_markdown = file.extension().is_some_and(|x| x == "md");
            if anchor.is_empty() || !is_markdown {
                continue;
            }
            let linked = std::fs::read_to_string(&file).expect("the linked document");
            if !anchors(&linked).contains(anchor) {
                broken.push(format!(
                    "{shown}:{line}: `{target}`: no heading or anchor `{anchor}`"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn a_heading_slug_is_the_one_gitlab_links_to() {
    assert_eq!(
        slug(" Step 7 (optional): green within seconds with `assent serve`"),
        "step-7-optional-green-within-seconds-with-assent-serve"
    );
    assert_eq!(slug(" Reading doctor's report"), "reading-doctors-report");
    let text = "# A\n## A\n```\n# not a heading\n```\n<a id=\"x-y\"></a>\n";
    let found = anchors(text);
    assert!(found.contains("a") && found.contains("a-1") && found.contains("x-y"));
    assert!(!found.contains("not-a-heading"));
}

/// The first ```text block after `heading` in `doc`, as lines.
fn text_block_after(doc: &str, heading: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(doc)).expect("the document");
    let section = &text[text.find(heading).expect("the heading")..];
    let start = section.find("```text\n").expect("a text block") + "```text\n".len();
    let end = section[start..].find("```").expect("the block's end");
    section[start..start + end]
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Every `127.0.0.1:<port>` in `text` as the docs write it, `127.0.0.1:40123`.
fn documented_port(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("127.0.0.1:") {
        out.push_str(&rest[..at + "127.0.0.1:".len()]);
        rest = rest[at + "127.0.0.1:".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push_str("40123");
    }
    out.push_str(rest);
    out
}

#[test]
fn the_sandbox_prints_what_the_setup_guide_shows() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(crate::sandbox::fake_gitlab_binary())
        .args(["--example", "topic-registry", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start fake-gitlab");
    let stdout = child.stdout.take().expect("stdout");
    let mut printed = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        let last = line.starts_with("# Stop the sandbox");
        printed.push(documented_port(&line));
        if last {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let expected = text_block_after("docs/setup.md", "## Try it without a GitLab");
    let printed: Vec<&str> = printed.iter().map(String::as_str).collect();
    assert!(
        matches(&expected, &printed),
        "docs/setup.md's sandbox output is not what `fake-gitlab --example topic-registry` prints:\n{}\n\nthe guide shows:\n{}",
        printed.join("\n"),
        expected.join("\n")
    );
}
