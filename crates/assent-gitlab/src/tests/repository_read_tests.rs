//! Repository reads against the fake GitLab: the tree's blobs, a missing directory empty, a
//! missing file `None`, a missing project an error.

use super::*;

/// The commit the tree test lists.
const T1: &str = "7100000000000000000000000000000000000001";
/// The commit the file test reads.
const S: &str = "5000000000000000000000000000000000000005";

#[test]
fn tree_lists_blobs_and_a_missing_dir_is_empty() {
    // A listing with a subtree and a submodule (which the fake's state cannot hold), then
    // GitLab's two 404s: a path that is not there, and a project that is not. Commit `T1`
    // exists, so the empty listing is believed once GitLab shows it (`lfs_and_refs_tests`
    // has a ref GitLab does not know).
    let mut state = world();
    state.projects[0].files.entry(T1.into()).or_default();
    let fake = FakeGitLab::start(state);
    for (n, answer) in [
        json_reply(
            200,
            json!([
                {"id": "1", "name": "a.yaml", "type": "blob", "path": ".assent/policies/a.yaml", "mode": "100644"},
                {"id": "2", "name": "sub", "type": "tree", "path": ".assent/policies/sub", "mode": "040000"},
                {"id": "3", "name": "b.yml", "type": "blob", "path": ".assent/policies/sub/b.yml", "mode": "100644"},
                {"id": "4", "name": "mod", "type": "commit", "path": ".assent/policies/mod", "mode": "160000"}
            ]),
        ),
        json_reply(404, json!({"message": "404 Tree Not Found"})),
        json_reply(404, json!({"message": "404 Project Not Found"})),
    ]
    .into_iter()
    .enumerate()
    {
        fake.inject(FaultRule::new(answer)
                .route(RouteKind::Tree)
                .nth(n as u64 + 1),
        );
    }
    let (forge, _) = forge(&fake);
    assert_eq!(
        forge.list_tree(&sha(T1), "/.assent/policies/").unwrap(),
        vec![
            ".assent/policies/a.yaml".to_string(),
            ".assent/policies/sub/b.yml".to_string()
        ]
    );
    let seen = fake.requests();
    assert_eq!(
        seen[0].path,
        "/api/v4/projects/group%2Fsub%2Fproj/repository/tree"
    );
    assert_eq!(
        seen[0].query_param("path").as_deref(),
        Some(".assent/policies")
    );
    assert_eq!(seen[0].query_param("ref").as_deref(), Some(T1));
    assert_eq!(seen[0].query_param("recursive").as_deref(), Some("true"));
    assert_eq!(seen[0].body, "", "a GET carries no body");
    assert!(forge.list_tree(&sha(T1), "gone").unwrap().is_empty());
    // A project that is not there is an error, not an empty tree.
    assert!(forge.list_tree(&sha(T1), "other").is_err());
    let paths: Vec<Option<String>> = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Tree)
        .map(|r| r.query_param("path"))
        .collect();
    let commits: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Commit)
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        commits,
        [format!(
            "/api/v4/projects/group%2Fsub%2Fproj/repository/commits/{T1}"
        )],
        "only the empty listing asks for its commit"
    );
    assert_eq!(
        paths,
        [
            Some(".assent/policies".to_string()),
            Some("gone".to_string()),
            Some("other".to_string())
        ]
    );
}

#[test]
fn missing_files_are_none_but_missing_projects_are_errors() {
    let mut state = world();
    state.projects[0].files.entry(S.into()).or_default();
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    assert_eq!(forge.read_file(&sha(S), "absent.yaml").unwrap(), None);
    let mut elsewhere = config(&fake);
    elsewhere.project = "group/gone".into();
    let err = forge_with(elsewhere)
        .0
        .read_file(&sha(S), "x.yaml")
        .unwrap_err();
    assert!(
        matches!(err, ForgeError::Status { status: 404, .. }),
        "{err:?}"
    );
    let statuses: Vec<Option<u16>> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(404), Some(404)]);
}
