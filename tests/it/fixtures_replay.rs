//! Every protocol fixture replays green on the in-memory forge, and every receipt it
//! produces is reviewed as an `insta` snapshot.

use std::path::Path;

use assent::commands::replay::{collect_fixture_files, load_fixture};
use assent::engine::fixture::schema::default_head;
use assent::engine::fixture::{InMemoryWorld, replay_fixture};

#[test]
fn every_fixture_passes_and_its_receipts_match_their_snapshots() {
    let mut files = Vec::new();
    collect_fixture_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut files,
    )
    .unwrap();
    assert!(files.len() >= 17, "fixtures went missing: {files:?}");
    for file in files {
        let fixture = load_fixture(&file).unwrap_or_else(|e| panic!("{e}"));
        let world = InMemoryWorld::new(fixture.bot_user_id, &default_head());
        let report = replay_fixture(&fixture, &world);
        assert!(
            report.passed(),
            "{}: {}",
            file.display(),
            report.mismatch.unwrap()
        );
        for (i, run) in report.runs.iter().enumerate() {
            if let Some(receipt) = &run.receipt {
                insta::assert_json_snapshot!(format!("{}-run-{}", fixture.name, i + 1), receipt);
            }
        }
    }
}

#[test]
fn replaying_twice_gives_byte_identical_receipts() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/duplicate-repair.yaml");
    let fixture = load_fixture(&file).unwrap();
    let receipts = |_: ()| {
        let world = InMemoryWorld::new(fixture.bot_user_id, &default_head());
        replay_fixture(&fixture, &world)
            .runs
            .iter()
            .map(|r| r.receipt.as_ref().unwrap().to_json())
            .collect::<Vec<_>>()
    };
    assert_eq!(receipts(()), receipts(()));
}

#[test]
fn a_wrong_expectation_is_reported_as_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrong.yaml");
    std::fs::write(
        &path,
        r#"
name: wrong
runs:
  - desired: [{ rule: r, subject: "f#/x", change: { kind: add, new: 1 } }]
    expect: { writes: 2 }
"#,
    )
    .unwrap();
    let fixture = load_fixture(&path).unwrap();
    let report = replay_fixture(&fixture, &InMemoryWorld::new(1, &default_head()));
    assert_eq!(
        report.mismatch.as_deref(),
        Some("run 1 (unnamed): expected 2 writes, made 3")
    );
}

#[test]
fn unknown_fields_are_rejected_with_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.yaml");
    std::fs::write(&path, "name: typo\nruns:\n  - desird: []\n").unwrap();
    let err = load_fixture(&path).unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
    assert!(err.message.contains("unknown field `desird`"), "{err}");
}
