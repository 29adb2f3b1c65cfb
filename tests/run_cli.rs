//! `assent run` as the MR pipeline runs it: the compiled binary against the fake GitLab.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fake_gitlab::{FakeGitLab, fixtures};

/// The example repository's policies, committed at the fake's target SHA.
fn seed_policies(fake: &FakeGitLab) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/repos/topic-registry/.assent/policies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    fake.with_state(|state| {
        let project = state
            .projects
            .iter_mut()
            .find(|p| p.id == fixtures::PROJECT_ID)
            .unwrap();
        for file in &files {
            let path = format!(
                ".assent/policies/{}",
                file.file_name().unwrap().to_string_lossy()
            );
            project
                .files
                .entry(fixtures::TARGET_SHA.to_owned())
                .or_default()
                .insert(path, fake_gitlab::FileContent(std::fs::read(file).unwrap()));
        }
    });
}

fn run(fake: &FakeGitLab, dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_assent"))
        .arg("run")
        .args(extra)
        .current_dir(dir)
        .env_clear()
        .env("CI_API_V4_URL", fake.base_url())
        .env("CI_PROJECT_ID", fixtures::PROJECT_PATH)
        .env("CI_MERGE_REQUEST_IID", fixtures::MR_IID.to_string())
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", fixtures::HEAD_SHA)
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_SHA", fixtures::TARGET_SHA)
        .env("CI_MERGE_REQUEST_DIFF_BASE_SHA", fixtures::BASE_SHA)
        .env("ASSENT_TOKEN", fixtures::BOT_TOKEN)
        .output()
        .unwrap()
}

#[test]
fn first_run_publishes_and_a_rerun_writes_nothing() {
    let fake = support::start_basic();
    seed_policies(&fake);
    let dir = tempfile::tempdir().unwrap();

    let first = run(&fake, dir.path(), &[]);
    let stdout = String::from_utf8_lossy(&first.stdout);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(
        first.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("REVIEW"), "{stdout}");
    let receipt1 = std::fs::read_to_string(dir.path().join("assent-receipt.json")).unwrap();
    assert!(receipt1.contains("\"action\":\"create\""), "{receipt1}");
    assert!(!stdout.contains(fixtures::BOT_TOKEN) && !stderr.contains(fixtures::BOT_TOKEN));

    let writes = fake.writes();
    let second = run(&fake, dir.path(), &[]);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(fake.writes(), writes, "rerun wrote");
    let receipt2 = std::fs::read_to_string(dir.path().join("assent-receipt.json")).unwrap();
    assert!(
        receipt2.contains("\"action\":\"leave-untouched\""),
        "{receipt2}"
    );
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
}
