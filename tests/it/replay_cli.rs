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
}
