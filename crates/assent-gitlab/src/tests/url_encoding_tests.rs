//! Project and file paths as GitLab's routes take them: each one percent-encoded path
//! segment, and a project's numeric id reaching the same project.

use super::*;

/// The tip of the branch whose name needs encoding.
const C0FFEE: &str = "c0ffee0000000000000000000000000000000000";

#[test]
fn a_nested_project_path_is_one_percent_encoded_segment() {
    let fake = FakeGitLab::start(world());
    let (forge, _) = forge(&fake);
    assert_eq!(forge.merge_request().unwrap().head_sha, fixtures::HEAD_SHA);
    forge.create_thread("a thread", None).unwrap();
    assert_eq!(forge.list_discussions().unwrap().len(), 1);
    let api_requests: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.route != RouteKind::User)
        .collect();
    assert_eq!(api_requests.len(), 3);
    for request in api_requests {
        assert!(request.path.starts_with(MR), "{}", request.path);
        assert_eq!(request.status, Some(if request.write { 201 } else { 200 }));
    }
    // The numeric id reaches the same project.
    let mut by_id = config(&fake);
    by_id.project = PROJECT_ID.to_string();
    assert_eq!(forge_with(by_id).0.list_discussions().unwrap().len(), 1);
}

#[test]
fn project_and_file_paths_are_single_encoded_segments() {
    let mut state = with_file(
        world(),
        "abc1230000000000000000000000000000000000",
        "topics/a b/orders.yaml",
        b"retention: 7\n",
    );
    state.projects[0]
        .branches
        .insert("release/2.0".into(), C0FFEE.into());
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    let bytes = forge
        .read_file(
            &sha("abc1230000000000000000000000000000000000"),
            "topics/a b/orders.yaml",
        )
        .unwrap()
        .unwrap();
    assert_eq!(bytes, b"retention: 7\n");
    assert_eq!(forge.branch_head("release/2.0").unwrap(), sha(C0FFEE));
    let seen = fake.requests();
    assert_eq!(
        seen[0].path,
        "/api/v4/projects/group%2Fsub%2Fproj/repository/files/topics%2Fa%20b%2Forders.yaml/raw"
    );
    assert_eq!(
        seen[0].query_param("ref").as_deref(),
        Some("abc1230000000000000000000000000000000000")
    );
    assert_eq!(
        seen[1].path,
        "/api/v4/projects/group%2Fsub%2Fproj/repository/branches/release%2F2.0"
    );
}
