//! `assent replay` as a user runs it: exit codes and output lines.

use std::process::Command;

fn assent() -> Command {
    Command::new(env!("CARGO_BIN_EXE_assent"))
}

#[test]
fn replay_of_the_shipped_fixtures_names_every_fixture_and_exits_0() {
    let out = assent()
        .args(["replay", "fixtures/"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for name in [
        "rerun-idempotence",
        "crash-then-rerun",
        "duplicate-repair",
        "row-1-create",
        "malformed-marker",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("PASS ") && l.contains(name)),
            "{name} missing: {stdout}"
        );
    }
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .ends_with(" passed, 0 failed"),
        "{stdout}"
    );
}

#[test]
fn a_failing_fixture_exits_1_with_its_first_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("f.yaml"),
        "name: f\nruns:\n  - desired: []\n    expect: { decision: BLOCK }\n",
    )
    .unwrap();
    let out = assent().arg("replay").arg(dir.path()).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.contains("FAIL f"), "{stdout}");
    assert!(
        stdout.contains("expected decision Block, got Some(Approve)"),
        "{stdout}"
    );
    // Every non-zero exit names its cause on stderr, in one line.
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr, "error: 1 fixture(s) failed\n");
}

#[test]
fn an_unparseable_fixture_exits_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.yaml");
    std::fs::write(&file, "name: b\nruns:\n  - expect: [not, a, map]\n").unwrap();
    let out = assent().arg("replay").arg(&file).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3:", file.display())),
        "{stderr}"
    );
    // The fixture's own line is the report; the count that fails the command is its one
    // final error, printed once, last.
    let last = "error: 1 fixture path(s) could not be read or parsed";
    assert_eq!(stderr.lines().last(), Some(last), "{stderr}");
    assert_eq!(stderr.matches(last).count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: {}", file.display())),
        "{stderr}"
    );
}

#[test]
fn every_path_in_the_help_examples_exists() {
    let out = assent().args(["replay", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{help}");
    let examples = help
        .split_once("Examples:")
        .unwrap_or_else(|| panic!("no Examples: section in\n{help}"))
        .1;
    let paths: Vec<&str> = examples
        .lines()
        .filter_map(|l| l.trim().strip_prefix("assent replay "))
        .flat_map(str::split_whitespace)
        .collect();
    assert!(paths.len() >= 2, "no example paths found in\n{help}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for path in paths {
        assert!(
            root.join(path).exists(),
            "`assent replay --help` names {path}, which does not exist"
        );
    }
}

#[test]
fn the_readmes_sample_output_is_what_replay_prints_first_and_last() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let sample: Vec<&str> = readme
        .split("`replay` prints one line per fixture and a tally:\n\n```\n")
        .nth(1)
        .expect("the README's sample replay output")
        .split("\n```")
        .next()
        .unwrap()
        .lines()
        .collect();
    let gap = sample
        .iter()
        .position(|l| *l == "…")
        .expect("the sample elides the middle with …");
    let (head, tail) = (&sample[..gap], &sample[gap + 1..]);
    let out = assent()
        .args(["replay", "fixtures/"])
        .current_dir(root)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let printed: Vec<&str> = stdout.lines().collect();
    assert!(printed.len() > head.len() + tail.len(), "{stdout}");
    assert_eq!(&printed[..head.len()], head, "the first lines: {stdout}");
    assert_eq!(
        &printed[printed.len() - tail.len()..],
        tail,
        "the last lines: {stdout}"
    );
}
