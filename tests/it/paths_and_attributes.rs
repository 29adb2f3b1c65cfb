//! What a consumer of a governed path gets is judged, not only the file's bytes: a rename
//! moves content away from the path consumers read, and a `.gitattributes` line changes what
//! git hands them (docs/policies.md, "Renames" and "Git attributes"). The compiled binary
//! against the fake GitLab, and the attribute patterns against git itself.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use assent::core::git_attributes::{AttributesLine, parse};
use assent_test_support::run::{RunResult, World, orders};
use fake_gitlab::{DiffFile, fixtures};

use crate::ASSENT;

/// The `(rule, subject)` of every finding in the receipt, sorted.
fn findings(r: &RunResult) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = r.receipt()["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["subject"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

fn pair(rule: &str, subject: &str) -> (String, String) {
    (rule.to_owned(), subject.to_owned())
}

/// The MR moves `topics/orders.yaml` (unchanged: 30 days at the base and at the head) to
/// `new_path`, and lists only that rename, as GitLab lists a pure rename (no diff text).
fn move_orders(w: &World, new_path: &str) {
    w.put_file(fixtures::BASE_SHA, "topics/orders.yaml", &orders(30));
    w.put_file(fixtures::HEAD_SHA, new_path, &orders(30));
    w.set_diffs(vec![DiffFile::renamed("topics/orders.yaml", new_path)]);
}

#[test]
fn a_pure_rename_of_a_registry_file_deletes_its_topics_at_the_old_path() {
    let w = World::new(ASSENT);
    move_orders(&w, "topics/orders-v2.yaml");
    let r = w.run(&[]);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "BLOCK");
    assert_eq!(
        findings(&r),
        vec![
            // The new path's topic is an addition, judged by the new path's rules: it has
            // no owner.
            pair(
                "new-topic-without-owner",
                "topics/orders-v2.yaml#/topics/orders.events.v1"
            ),
            pair("registry-file-deleted", "topics/orders.yaml#"),
            pair(
                "retention-removed",
                "topics/orders.yaml#/topics/orders.events.v1/retention_days"
            ),
            pair(
                "topic-deleted",
                "topics/orders.yaml#/topics/orders.events.v1"
            ),
        ],
        "a consumer reading topics/orders.yaml loses every topic it held"
    );
    // The same MR again: the same slots and occurrences, so nothing is written.
    let writes = w.writes().len();
    let again = w.run(&[]);
    again.expect_code(1);
    assert_eq!(findings(&again), findings(&r));
    assert_eq!(
        r.receipt()["findings"],
        again.receipt()["findings"],
        "occurrences are stable across reruns"
    );
    assert_eq!(w.writes().len(), writes, "a rerun writes nothing");
}

#[test]
fn a_case_only_rename_of_a_registry_file_is_a_move_as_well() {
    let w = World::new(ASSENT);
    move_orders(&w, "topics/Orders.yaml");
    let r = w.run(&[]);
    r.expect_code(1);
    assert!(
        findings(&r).contains(&pair("registry-file-deleted", "topics/orders.yaml#")),
        "{:?}",
        findings(&r)
    );
}

#[test]
fn an_attributes_line_dropping_a_registry_file_from_archives_is_challenged() {
    let w = World::new(ASSENT);
    // Only `.gitattributes` changes; the registry file is the same on both sides.
    w.put_file(fixtures::HEAD_SHA, "topics/orders.yaml", &orders(30));
    w.put_file(fixtures::BASE_SHA, ".gitattributes", "*.png binary\n");
    w.put_file(
        fixtures::HEAD_SHA,
        ".gitattributes",
        "*.png binary\ntopics/orders.yaml export-ignore\n",
    );
    w.set_diffs(vec![DiffFile::modified(".gitattributes")]);
    let r = w.run(&[]);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW");
    assert_eq!(
        findings(&r),
        vec![pair("assent/git-attributes", ".gitattributes#")]
    );
    let body = w.thread("assent/git-attributes").notes[0].body.clone();
    assert!(body.contains("`export-ignore`"), "{body}");
    assert!(body.contains("`topics/*.yaml`"), "{body}");
    assert!(body.contains("`git archive`"), "{body}");
    r.assert_no_token();
}

// ---- the attribute patterns are git's ------------------------------------------------------

/// Patterns covering each rule of `gitattributes(5)` and `wildmatch`: last-component and
/// path patterns, anchors, `**` in each position, classes, escapes, directories only,
/// quoting, and lines git refuses (a negative pattern, an invalid attribute name).
const PATTERNS: &[&str] = &[
    "a",
    "x.yaml",
    "*.yaml",
    "*",
    "?",
    "a*",
    "*b",
    "/a",
    "a/",
    "/a/",
    "a/b",
    "/a/b",
    "a/*",
    "a/**",
    "**/b",
    "**/a/b",
    "a/**/b",
    "a/**/",
    "**",
    "a**b",
    "a/**b",
    "*/b",
    "*/*",
    "[ab]",
    "[!a]*",
    "[^a]b",
    "[a-c]*",
    "[[:alpha:]]b",
    "[[:digit:]]*",
    "\\a",
    "a\\*",
    "x.[y]aml",
    "?/?",
    "*.yaml/",
    "\"a b\"",
    "\"a\\tb\"",
    "!a",
    "\\!a",
    "#a",
    "\\#a",
];

/// Paths of the components git's rules tell apart, files and directories.
fn paths() -> Vec<String> {
    let parts = ["a", "b", "ab", "x.yaml", "a b", "!a", "#a", "1b", "*"];
    let mut out = Vec::new();
    for p in parts {
        out.push(p.to_owned());
        for q in parts {
            out.push(format!("{p}/{q}"));
            for r in ["a", "b", "x.yaml"] {
                out.push(format!("{p}/{q}/{r}"));
            }
        }
    }
    out
}

fn git(repo: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("XDG_CONFIG_HOME", repo)
        .env("HOME", repo)
        .args(["-c", "core.ignorecase=false"]);
    command
}

/// `(path, attribute)` for every attribute git sets, unsets or gives a value on each path
/// (`dir/` for a directory).
fn git_check_attr(repo: &Path, names: &[String], paths: &[String]) -> BTreeSet<(String, String)> {
    let mut child = git(repo)
        .args(["check-attr", "--stdin", "-z"])
        .args(names)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git runs");
    let input: Vec<u8> = paths.iter().flat_map(|p| p.bytes().chain([0])).collect();
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&input).expect("paths written");
    });
    let output = child.wait_with_output().expect("git check-attr");
    writer.join().expect("writer");
    assert!(output.status.success(), "git check-attr failed");
    let fields: Vec<&[u8]> = output.stdout.split(|&b| b == 0).collect();
    fields
        .chunks(3)
        .filter(|chunk| chunk.len() == 3 && chunk[2] != b"unspecified")
        .map(|chunk| {
            (
                String::from_utf8_lossy(chunk[0]).into_owned(),
                String::from_utf8_lossy(chunk[1]).into_owned(),
            )
        })
        .collect()
}

#[test]
fn attribute_patterns_match_the_paths_git_check_attr_gives_them() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let repo = dir.path();
    assert!(
        git(repo)
            .args(["init", "-q"])
            .status()
            .expect("git")
            .success()
    );
    let names: Vec<String> = (0..PATTERNS.len()).map(|i| format!("p{i}")).collect();
    // Line i gives pattern i the attribute `p<i>`; one more line is refused as a whole for
    // its invalid attribute name.
    let mut text: String = PATTERNS
        .iter()
        .zip(&names)
        .map(|(pattern, name)| format!("{pattern} {name}\n"))
        .collect();
    text.push_str("a p0 in^valid\n");
    let mut paths: Vec<String> = paths();
    paths.extend(paths.clone().into_iter().map(|p| format!("{p}/")));
    for directory in ["", "a/"] {
        let file = format!("{directory}.gitattributes");
        std::fs::create_dir_all(repo.join(directory)).expect("directory");
        std::fs::write(repo.join(&file), &text).expect("attributes written");
        let expected = git_check_attr(repo, &names, &paths);
        let lines = parse(&file, text.as_bytes());
        let mut got = BTreeSet::new();
        for path in &paths {
            let (bare, is_dir) = match path.strip_suffix('/') {
                Some(bare) => (bare, true),
                None => (path.as_str(), false),
            };
            for line in &lines {
                let AttributesLine::Pattern {
                    pattern,
                    assignments,
                } = line
                else {
                    continue;
                };
                if pattern.matches(bare, is_dir) {
                    got.extend(assignments.iter().map(|a| (path.clone(), a.name.clone())));
                }
            }
        }
        let missing: Vec<_> = expected.difference(&got).collect();
        let extra: Vec<_> = got.difference(&expected).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{file}: git gives but assent does not: {missing:?}\nassent gives but git does not: {extra:?}"
        );
        std::fs::remove_file(repo.join(&file)).expect("removed");
    }
}
