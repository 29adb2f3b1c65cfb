//! The merge request as the adapter reads it from the fake GitLab: its fields, its changes
//! count and file modes, and the diffs GitLab withholds.

use super::*;

#[test]
fn changes_count_and_modes_come_from_gitlabs_answers() {
    let mut state = world();
    let mr = state.projects[0].mr_mut(MR_IID).unwrap();
    mr.diffs = vec![
        DiffFile::modified("topics/orders.yaml").modes("100644", "120000"),
        DiffFile::added("topics/sub").modes("0", "160000"),
    ];
    mr.overflow = true;
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    assert_eq!(
        forge.merge_request().unwrap().changes_count.as_deref(),
        Some("2+")
    );
    let modes: Vec<(assent_forge::FileMode, assent_forge::FileMode)> = forge
        .changed_files()
        .unwrap()
        .into_iter()
        .map(|f| (f.old_mode, f.new_mode))
        .collect();
    use assent_forge::FileMode::*;
    assert_eq!(modes, [(Regular, Symlink), (Absent, Submodule)]);
    fake.with_state(|st| {
        st.project_mut(PROJECT_ID)
            .unwrap()
            .mr_mut(MR_IID)
            .unwrap()
            .changes_count = Some(String::new())
    });
    assert_eq!(forge.merge_request().unwrap().changes_count, None, "null");
}

#[test]
fn merge_request_info_is_mapped() {
    let fake = FakeGitLab::start(world());
    fake.set_head_pipeline(PROJECT_ID, MR_IID, Some((3, "running")));
    let (forge, _) = forge(&fake);
    let mr = forge.merge_request().unwrap();
    assert_eq!(mr.state, MergeRequestState::Opened);
    assert_eq!(mr.head_sha, fixtures::HEAD_SHA);
    assert_eq!(
        mr.base_sha.as_ref().map(|s| s.as_str()),
        Some(fixtures::BASE_SHA)
    );
    assert_eq!(mr.target_branch, "main");
    assert_eq!(mr.head_pipeline_status.as_deref(), Some("running"));
    assert_eq!(
        mr.web_url.as_deref(),
        Some("https://gitlab.example.com/group/sub/proj/-/merge_requests/7")
    );

    // What the state always has, absent: no diff refs, no pipeline, no web URL.
    let bare = FakeGitLab::start(world());
    bare.inject(FaultRule::new(json_reply(
            200,
            json!({"state": "merged", "sha": "ABCDEF0123456789ABCDEF0123456789ABCDEF01", "diff_refs": null, "target_branch": "main", "head_pipeline": null}),
        )),
    );
    let mr = forge_with(config(&bare)).0.merge_request().unwrap();
    assert_eq!(mr.state, MergeRequestState::Merged);
    // GitLab spells SHAs in lowercase; the one parser normalises a head given otherwise.
    assert_eq!(mr.head_sha, "abcdef0123456789abcdef0123456789abcdef01");
    assert_eq!(
        (mr.base_sha, mr.head_pipeline_status, mr.web_url),
        (None, None, None)
    );
}

#[test]
fn changed_files_mark_withheld_diffs() {
    let mut state = world();
    state.projects[0].mr_mut(MR_IID).unwrap().diffs = vec![
        DiffFile {
            diff: "@@".into(),
            ..DiffFile::modified("a.yaml")
        },
        DiffFile {
            too_large: Some(true),
            diff: String::new(),
            ..DiffFile::added("b.yaml")
        },
        DiffFile {
            collapsed: Some(true),
            ..DiffFile::renamed("c.yaml", "d.yaml")
        },
    ];
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    let files = forge.changed_files().unwrap();
    assert_eq!(files.len(), 3);
    assert!(!files[0].withheld);
    assert!(files[1].withheld && files[1].new_file);
    assert!(files[2].withheld && files[2].renamed_file && files[2].new_path == "d.yaml");
    let seen = fake.requests();
    assert_eq!(seen[0].path, format!("{MR}/diffs"));
    assert_eq!(seen[0].query_param("per_page").as_deref(), Some("100"));
}

/// A SHA GitLab reports in a form that is no commit SHA (a merge request's `sha`, its
/// `diff_head_sha` in lib/api/entities/merge_request_basic.rb, or one of its `diff_refs`) is
/// a decode error naming the field: the run never pins, compares or marks a head it could
/// not read.
#[test]
fn a_malformed_sha_from_gitlab_is_a_decode_error_naming_the_field() {
    let good = fixtures::HEAD_SHA;
    for (field, body) in [
        (
            "`sha`",
            json!({"state": "opened", "sha": "not-a-sha", "diff_refs": null, "target_branch": "main", "head_pipeline": null}),
        ),
        (
            "`diff_refs.base_sha`",
            json!({"state": "opened", "sha": good, "diff_refs": {"base_sha": "1234", "start_sha": good, "head_sha": good}, "target_branch": "main", "head_pipeline": null}),
        ),
        (
            "`diff_refs.start_sha`",
            json!({"state": "opened", "sha": good, "diff_refs": {"base_sha": good, "start_sha": "g".repeat(40), "head_sha": good}, "target_branch": "main", "head_pipeline": null}),
        ),
        (
            "`diff_refs.head_sha`",
            json!({"state": "opened", "sha": good, "diff_refs": {"base_sha": good, "start_sha": good, "head_sha": format!("{good} ")}, "target_branch": "main", "head_pipeline": null}),
        ),
    ] {
        let fake = FakeGitLab::start(world());
        fake.inject(FaultRule::new(json_reply(200, body)));
        let error = forge_with(config(&fake)).0.merge_request().unwrap_err();
        assert!(
            matches!(error, ForgeError::Decode { .. }),
            "{field}: {error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(field), "{field}: {message}");
        assert!(
            message.contains("is not a commit SHA"),
            "{field}: {message}"
        );
    }
}

#[test]
fn version_heads_are_read_as_commit_shas_and_an_odd_one_fails_the_read() {
    // `Entities::MergeRequestDiff` (`lib/api/merge_request_diffs.rb`): newest first; a
    // version in GitLab's `empty` state has no head and names none.
    let fake = FakeGitLab::start(world());
    // Each injected page answers the next read of the versions only.
    let page = |heads: Value| {
        FaultRule::new(last_page(heads))
            .route(RouteKind::Versions)
            .nth(1)
    };
    let newer = "aaaa00000000000000000000000000000000000b";
    fake.inject(page(json!([
    {"id": 2, "head_commit_sha": newer.to_uppercase()},
    {"id": 1, "head_commit_sha": null},
    {"id": 0, "head_commit_sha": ""}
    ])));
    let (forge, _) = forge(&fake);
    assert_eq!(forge.version_heads().unwrap(), vec![sha(newer)]);
    fake.inject(page(json!([{"id": 3, "head_commit_sha": "HEAD~1"}])));
    let error = forge.version_heads().unwrap_err();
    assert!(
        matches!(&error, ForgeError::Decode { message, .. }
            if message.contains("head_commit_sha") && message.contains("is not a commit SHA")),
        "{error:?}"
    );
}
