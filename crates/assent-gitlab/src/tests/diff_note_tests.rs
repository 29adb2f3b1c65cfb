//! Diff notes against the fake GitLab: the diff refs and diffs read, a note created at its
//! position, and a position GitLab refuses (`400`) writing nothing.

use super::*;

/// The basic world with a real diff for `topics/orders.yaml` (30 → 7 days on line 3).
fn start_with_diff() -> FakeGitLab {
    let mut state = world();
    state.projects[0].mr_mut(MR_IID).unwrap().diffs = vec![DiffFile {
        diff: "@@ -1,3 +1,3 @@\n topics:\n   - name: orders.events.v1\n-    retention_days: 30\n+    retention_days: 7\n".into(),
        ..DiffFile::modified("topics/orders.yaml")
    }];
    FakeGitLab::start(state)
}

fn orders_position(line: assent_core::model::DiffLine) -> assent_core::model::DiffPosition {
    assent_core::model::DiffPosition {
        base_sha: sha(fixtures::BASE_SHA),
        start_sha: sha(fixtures::BASE_SHA),
        head_sha: sha(fixtures::HEAD_SHA),
        old_path: "topics/orders.yaml".into(),
        new_path: "topics/orders.yaml".into(),
        line,
    }
}

#[test]
fn the_adapter_reads_diff_refs_and_diffs_and_creates_a_diff_note_at_its_position() {
    use assent_core::model::DiffLine;
    let fake = start_with_diff();
    let (forge, _) = forge(&fake);
    let mr = forge.merge_request().unwrap();
    assert_eq!(
        (
            mr.base_sha.as_ref().map(|s| s.as_str()),
            mr.start_sha.as_ref().map(|s| s.as_str()),
            mr.diff_head_sha.as_ref().map(|s| s.as_str())
        ),
        (
            Some(fixtures::BASE_SHA),
            Some(fixtures::BASE_SHA),
            Some(fixtures::HEAD_SHA)
        )
    );
    let files = forge.changed_files().unwrap();
    assert!(
        files[0].diff.contains("+    retention_days: 7"),
        "{files:?}"
    );

    let added = forge
        .create_thread(
            "<!-- m -->\non the line",
            Some(&orders_position(DiffLine::New(3))),
        )
        .unwrap();
    let removed = forge
        .create_thread(
            "<!-- m -->\nwas here",
            Some(&orders_position(DiffLine::Old(3))),
        )
        .unwrap();
    let general = forge.create_thread("<!-- m -->\ngeneral", None).unwrap();
    let note = |id: u64| {
        fake.discussions(PROJECT_ID, MR_IID)
            .into_iter()
            .flat_map(|d| d.notes)
            .find(|n| n.id == id)
            .unwrap()
    };
    let on_line = note(added.note_id);
    assert_eq!(on_line.note_type.as_deref(), Some("DiffNote"));
    let position = on_line.position.unwrap();
    assert_eq!((position.old_line, position.new_line), (None, Some(3)));
    assert_eq!(
        (position.head_sha.as_str(), position.new_path.as_str()),
        (fixtures::HEAD_SHA, "topics/orders.yaml")
    );
    let position = note(removed.note_id).position.unwrap();
    assert_eq!((position.old_line, position.new_line), (Some(3), None));
    assert_eq!(note(general.note_id).position, None);
    assert_eq!(
        note(general.note_id).note_type.as_deref(),
        Some("DiscussionNote")
    );
    assert_eq!(fake.violations(), Vec::<String>::new());
}

#[test]
fn a_position_gitlab_refuses_is_a_400_refusal_that_wrote_nothing() {
    use assent_core::model::DiffLine;
    use assent_forge::ForgeErrorKind;
    let fake = start_with_diff();
    let (forge, _) = forge(&fake);
    let err = forge
        .create_thread("<!-- m -->\nx", Some(&orders_position(DiffLine::New(1))))
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.kind(), ForgeErrorKind::Refused);
    assert!(!err.is_ambiguous_write());
    assert!(
        err.to_string().contains("must be a valid line code"),
        "{err}"
    );
    assert!(fake.discussions(PROJECT_ID, MR_IID).is_empty());
}
