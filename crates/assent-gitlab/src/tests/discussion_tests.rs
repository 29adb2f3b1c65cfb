//! Discussions and notes as the adapter lists them from the fake GitLab: defaults for absent
//! fields, one note by id, `resolved_at`, diff notes, and the project's outdated-diff-threads
//! setting.

use super::*;

#[test]
fn discussions_map_to_listed_notes_with_defaults() {
    // Shapes the fake's state never lists (a note without `updated_at`, a plain note without
    // `resolvable`, `resolved: null`), answered as they are.
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(json_reply(
            200,
            json!([
                {"id": "aaa", "individual_note": false, "notes": [
                    {"id": 11, "body": "first", "author": {"id": 5}, "system": false, "resolvable": true, "resolved": true,
                     "updated_at": "2024-05-01T10:00:00.000Z"},
                    {"id": 12, "body": "reply", "author": {"id": 6}, "system": false, "resolvable": true, "resolved": true}
                ]},
                {"id": "bbb", "individual_note": true, "notes": [
                    {"id": 13, "body": "plain", "author": {"id": 5}, "system": false}
                ]},
                {"id": "ccc", "individual_note": true, "notes": [
                    {"id": 14, "body": "resolved all threads", "author": {"id": 5}, "system": true, "resolvable": false, "resolved": null}
                ]}
            ]),
        ))
        .route(RouteKind::Discussions),
    );
    let (forge, _) = forge(&fake);
    let listed = forge.list_discussions().unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].id, "aaa");
    assert!(!listed[0].individual_note);
    let first = &listed[0].notes[0];
    assert_eq!(
        (
            first.id,
            first.author_id,
            first.system,
            first.resolvable,
            first.resolved
        ),
        (11, 5, false, true, true)
    );
    assert_eq!(first.body, "first");
    assert_eq!(
        first.updated_at.as_deref(),
        Some("2024-05-01T10:00:00.000Z")
    );
    assert_eq!(listed[0].notes[1].updated_at, None);
    let plain = &listed[1].notes[0];
    assert!(listed[1].individual_note && !plain.resolvable && !plain.resolved);
    assert!(listed[2].notes[0].system);
    assert_eq!(fake.requests()[0].path, format!("{MR}/discussions"));
}

#[test]
fn note_endpoint_reads_one_note() {
    let fake = FakeGitLab::start(world());
    fake.ensure_user(3, "carol");
    fake.post_with_id(PROJECT_ID, MR_IID, 3, "b", false, 42)
        .unwrap();
    let (forge, _) = forge(&fake);
    let note = forge.note(42).unwrap();
    assert_eq!((note.id, note.author_id, note.resolvable), (42, 3, false));
    assert_eq!(fake.requests()[0].path, format!("{MR}/notes/42"));
}

#[test]
fn the_outdated_diff_threads_setting_is_read_and_unknown_is_on() {
    let fake = FakeGitLab::start(world());
    let (forge, _) = forge(&fake);
    assert!(!forge.resolves_outdated_diff_threads().unwrap());
    fake.with_state(|s| s.projects[0].resolve_outdated_diff_discussions = true);
    assert!(forge.resolves_outdated_diff_threads().unwrap());
    // A project answer without the field: no DiffNote resolution may count on a guess.
    fake.inject(
        FaultRule::new(json_reply(200, json!({"id": PROJECT_ID, "name": "proj"})))
            .route(RouteKind::Project),
    );
    assert!(forge.resolves_outdated_diff_threads().unwrap());
}

#[test]
fn listed_notes_carry_resolved_at_and_whether_they_are_diff_notes() {
    let fake = FakeGitLab::start(world());
    fake.set_time("2026-01-01T10:00:00.000Z");
    let (forge, _) = forge(&fake);
    let created = forge.create_thread("x", None).unwrap();
    fake.set_time("2026-01-01T10:01:00.000Z");
    fake.resolve(PROJECT_ID, MR_IID, &created.discussion_id, HUMAN_ID, true);
    let listed = forge.list_discussions().unwrap();
    let note = &listed
        .iter()
        .find(|d| d.id == created.discussion_id)
        .unwrap()
        .notes[0];
    assert_eq!(
        note.resolved_at.as_deref(),
        Some("2026-01-01T10:01:00.000Z")
    );
    // GitLab resolves a discussion with `update_all`: the note's `updated_at` stays at its
    // creation, which the listing carries too.
    assert_eq!(note.created_at.as_deref(), Some("2026-01-01T10:00:00.000Z"));
    assert_eq!(note.updated_at.as_deref(), Some("2026-01-01T10:00:00.000Z"));
    assert!(!note.diff_note, "a general thread");
}
