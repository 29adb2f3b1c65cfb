//! The README's example of what a reviewer sees is real output: the summary and the challenge
//! thread of the example registry's merge request, as the sandbox's first `assent run` posts
//! them, and the rule that raises the challenge as the example's policy file holds it.

use std::path::Path;
use std::process::Command;

use fake_gitlab::{FakeGitLab, sandbox};

use crate::ASSENT;

/// The lines between `<!-- example:NAME … -->` and `<!-- /example:NAME -->` in `text`.
fn example_block<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<!-- example:{name} ");
    let close = format!("<!-- /example:{name} -->");
    let mut lines = text.lines().skip_while(|l| !l.starts_with(&open));
    assert!(lines.next().is_some(), "the README has no `{open}…` block");
    let block: Vec<&str> = lines.take_while(|l| *l != close).collect();
    assert!(!block.is_empty(), "the README's `{name}` block is empty");
    block
}

/// A blockquote's text with its `> ` prefixes removed.
fn unquoted(block: &[&str]) -> String {
    block
        .iter()
        .map(|l| {
            l.strip_prefix("> ")
                .or_else(|| l.strip_prefix('>'))
                .unwrap_or_else(|| panic!("not a blockquote line: {l:?}"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A note body as a reviewer reads it: without assent's hidden marker lines (HTML comments
/// GitLab does not show), and with the fake's own address as the README's example host.
fn as_shown(body: &str, fake_web: &str) -> String {
    body.lines()
        .filter(|l| !l.trim_start().starts_with("<!-- assent:"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace(fake_web, "https://gitlab.example.com")
        .trim()
        .to_owned()
}

#[test]
fn the_readme_shows_the_summary_and_the_thread_the_example_posts() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let (target, source) = sandbox::example("topic-registry").expect("the example applies");
    let fake = FakeGitLab::start(sandbox::state(&target, &source).expect("a sandbox"));
    let dir = tempfile::tempdir().expect("temporary directory");
    let env: Vec<(String, String)> = sandbox::exports(&fake.base_url(), &fake.state())
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let out = Command::new(ASSENT)
        .arg("run")
        .current_dir(dir.path())
        .env_clear()
        .envs(env)
        .output()
        .expect("run assent");
    assert_eq!(out.status.code(), Some(1), "{out:?}");

    let fake_web = fake.base_url().trim_end_matches("/api/v4").to_owned();
    let state = fake.state();
    let mr = &state.projects[0].merge_requests[0];
    let first_note_with = |marker: &str| {
        mr.discussions
            .iter()
            .map(|d| &d.notes[0].body)
            .find(|b| b.contains(marker))
            .unwrap_or_else(|| panic!("no note with {marker}"))
            .clone()
    };
    let summary = first_note_with("\"kind\":\"summary\"");
    let challenge = first_note_with("\"rule\":\"retention-shrink\"");

    assert_eq!(
        unquoted(&example_block(&readme, "summary")),
        as_shown(&summary, &fake_web),
        "the README's summary differs from what the example's first run posts"
    );
    assert_eq!(
        unquoted(&example_block(&readme, "challenge")),
        as_shown(&challenge, &fake_web),
        "the README's challenge thread differs from what the example's first run posts"
    );

    let rule = example_block(&readme, "rule");
    let rule = rule
        .strip_prefix(&["```yaml"][..])
        .and_then(|r| r.strip_suffix(&["```"][..]))
        .expect("the rule block is a yaml code block")
        .join("\n");
    let policy = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/repos/topic-registry/.assent/policies/topics.yaml"),
    )
    .expect("the example's policy");
    assert!(
        policy.contains(&rule),
        "the README's rule is not in the example's policy file:\n{rule}"
    );
}
