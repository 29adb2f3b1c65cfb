//! The one redirect assent follows, and the one empty listing it does not believe, against
//! the fake GitLab (docs/contract.md#lfs-redirect, docs/contract.md#unknown-refs).
//!
//! * `lib/api/files.rb`: a raw read with `lfs=true` of an object in object storage is a
//!   `302` to the storage (`present_carrierwave_file!`, `lib/api/helpers.rb`), unless the
//!   storage's `proxy_download` is on. The fake's storage is its own `/__storage/lfs/<oid>`
//!   route, which notes a credential sent to it as a violation.
//! * `lib/api/repositories.rb`: `not_found!("Tree")` for a ref GitLab does not know, as for a
//!   missing path; `lib/api/commits.rb` tells the two apart.

use assent_forge::{BudgetedRead, ContentBudget};
use fake_gitlab::lfs_storage::STORAGE_LFS_PREFIX;

use super::*;

const SHA: &str = FILE_SHA;
const OBJECT: &[u8] = b"topics:\n  - name: big\n    retention_days: 7\n";

/// [`world`] with `big.yaml` stored in Git LFS at [`SHA`], its object [`OBJECT`].
fn lfs_world() -> State {
    let mut state = with_file(world(), SHA, "plain.yaml", b"a: 1\n");
    let project = state.projects.remove(0);
    state
        .projects
        .insert(0, project.lfs_file(SHA, "big.yaml", OBJECT.to_vec()));
    state
}

fn storage_requests(fake: &FakeGitLab) -> Vec<LoggedRequest> {
    fake.requests()
        .into_iter()
        .filter(|r| r.path.starts_with(STORAGE_LFS_PREFIX))
        .collect()
}

fn has_header(request: &LoggedRequest, name: &str) -> bool {
    request
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case(name))
}

#[test]
fn an_lfs_object_in_object_storage_is_read_through_the_one_redirect_without_the_token() {
    let fake = FakeGitLab::start(lfs_world());
    let (forge, sleeper) = forge(&fake);
    let budget = ContentBudget::new(1 << 20);
    assert_eq!(
        forge
            .read_file_within(&sha(SHA), "big.yaml", &budget)
            .unwrap(),
        BudgetedRead::Present(OBJECT.to_vec())
    );
    assert_eq!(
        forge.read_file(&sha(SHA), "big.yaml").unwrap().unwrap(),
        OBJECT
    );
    let stored = storage_requests(&fake);
    assert_eq!(stored.len(), 2, "one storage read per raw read");
    for request in &stored {
        for credential in ["private-token", "authorization", "job-token", "cookie"] {
            assert!(
                !has_header(request, credential),
                "{credential}: {request:?}"
            );
        }
        assert!(
            request.query.contains("X-Amz-Signature="),
            "the signed URL is kept whole: {request:?}"
        );
    }
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
    assert_eq!(
        forge.request_counts().reads,
        4,
        "each hop is a counted read"
    );
    assert!(sleeper.delays().is_empty());

    // A file that is no LFS pointer is its blob, with no redirect.
    fake.reset_log();
    assert_eq!(
        forge.read_file(&sha(SHA), "plain.yaml").unwrap().unwrap(),
        b"a: 1\n"
    );
    assert!(storage_requests(&fake).is_empty());

    // With `proxy_download`, GitLab serves the object itself.
    fake.with_state(|st| st.lfs_proxy_download = true);
    fake.reset_log();
    assert_eq!(
        forge.read_file(&sha(SHA), "big.yaml").unwrap().unwrap(),
        OBJECT
    );
    assert_eq!(fake.requests().len(), 1);
}

/// The error a raw read of `big.yaml` ends in when GitLab's raw route answers `action`.
fn raw_read_error(fake: &FakeGitLab, action: FaultAction) -> ForgeError {
    fake.inject(FaultRule::new(action).route(RouteKind::FileRaw));
    let (forge, sleeper) = forge(fake);
    let err = forge
        .read_file_within(&sha(SHA), "big.yaml", &ContentBudget::new(1 << 20))
        .unwrap_err();
    assert!(sleeper.delays().is_empty(), "a refusal is final: {err}");
    err
}

#[test]
fn a_redirect_to_plain_http_elsewhere_or_another_scheme_is_refused_unsent() {
    for location in [
        "http://storage.example.com/lfs/abc?X-Amz-Signature=s",
        "ftp://storage.example.com/lfs/abc",
        "file:///etc/passwd",
    ] {
        let fake = FakeGitLab::start(lfs_world());
        let err = raw_read_error(&fake, reply(302, &[("Location", location)], ""));
        match &err {
            ForgeError::Status {
                status: 302,
                message,
                ..
            } => {
                assert!(message.contains("not https"), "{message}");
                assert!(!message.contains("Signature"), "no query quoted: {message}");
            }
            other => panic!("{location}: {other:?}"),
        }
        assert_eq!(fake.requests().len(), 1, "{location}: nothing followed");
    }
}

#[test]
fn a_redirect_with_credentials_or_no_target_is_refused() {
    let fake = FakeGitLab::start(lfs_world());
    let target = format!(
        "http://user:secret@{}/x",
        fake.root_url().trim_start_matches("http://")
    );
    let err = raw_read_error(&fake, reply(302, &[("Location", &target)], ""));
    assert!(err.to_string().contains("credentials"), "{err}");
    assert!(!err.to_string().contains("secret"), "{err}");
    let fake = FakeGitLab::start(lfs_world());
    let err = raw_read_error(&fake, reply(302, &[], ""));
    assert!(err.to_string().contains("names no target"), "{err}");
}

#[test]
fn a_second_hop_from_the_storage_is_refused() {
    let fake = FakeGitLab::start(lfs_world());
    let again = format!("{}{STORAGE_LFS_PREFIX}other", fake.root_url());
    fake.inject(
        FaultRule::new(reply(302, &[("Location", &again)], "")).path_contains(STORAGE_LFS_PREFIX),
    );
    let (forge, sleeper) = forge(&fake);
    let err = forge.read_file(&sha(SHA), "big.yaml").unwrap_err();
    assert!(
        matches!(&err, ForgeError::Status { status: 302, message, .. }
            if message.contains("another redirect") && message.contains("/other")),
        "{err:?}"
    );
    assert_eq!(fake.requests().len(), 2, "GitLab, then the storage once");
    assert!(sleeper.delays().is_empty());
}

#[test]
fn only_the_raw_routes_302_is_followed() {
    // Another status on the raw route: refused as before.
    let fake = FakeGitLab::start(lfs_world());
    let storage = format!("{}{STORAGE_LFS_PREFIX}x", fake.root_url());
    let err = raw_read_error(&fake, reply(301, &[("Location", &storage)], ""));
    assert!(
        matches!(&err, ForgeError::Status { status: 301, .. }),
        "{err:?}"
    );
    assert!(storage_requests(&fake).is_empty());

    // A 302 from any other read: a tree listing, the merge request.
    let fake = FakeGitLab::start(lfs_world());
    fake.inject(FaultRule::new(reply(302, &[("Location", &storage)], "")).route(RouteKind::Tree));
    fake.inject(
        FaultRule::new(reply(302, &[("Location", &storage)], "")).route(RouteKind::MergeRequest),
    );
    let (forge, _) = forge(&fake);
    let err = forge.list_tree(&sha(SHA), ".assent/policies").unwrap_err();
    assert!(
        matches!(&err, ForgeError::Status { status: 302, message, .. } if message.contains("never followed")),
        "{err:?}"
    );
    let err = forge.merge_request().unwrap_err();
    assert!(
        matches!(&err, ForgeError::Status { status: 302, .. }),
        "{err:?}"
    );
    assert!(storage_requests(&fake).is_empty());
}

#[test]
fn an_lfs_object_past_the_budget_or_the_body_limit_is_refused() {
    let fake = FakeGitLab::start(lfs_world());
    let (forge, _) = forge(&fake);
    let budget = ContentBudget::new(OBJECT.len() as u64 - 1);
    assert_eq!(
        forge
            .read_file_within(&sha(SHA), "big.yaml", &budget)
            .unwrap(),
        BudgetedRead::OverBudget
    );
    assert!(budget.is_spent());
    let mut config = config(&fake);
    config.body_limit = OBJECT.len() as u64 - 1;
    let err = forge_with(config)
        .0
        .read_file(&sha(SHA), "big.yaml")
        .unwrap_err();
    assert!(err.to_string().contains("-byte limit"), "{err}");
}

#[test]
fn a_storage_refusal_is_an_error_never_an_absent_file() {
    let fake = FakeGitLab::start(lfs_world());
    fake.inject(
        FaultRule::new(reply(404, &[], "<Error><Code>NoSuchKey</Code></Error>"))
            .path_contains(STORAGE_LFS_PREFIX),
    );
    let (forge, _) = forge(&fake);
    let err = forge.read_file(&sha(SHA), "big.yaml").unwrap_err();
    assert!(
        matches!(&err, ForgeError::Status { status: 302, message, .. }
            if message.contains("HTTP 404") && message.contains("NoSuchKey")),
        "{err:?}"
    );
    assert!(!crate::pagination::is_absent_content(&err));
}

// ---- unknown refs ---------------------------------------------------------------------------

fn commit_reads(fake: &FakeGitLab) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.route == RouteKind::Commit)
        .count()
}

#[test]
fn a_tree_at_a_ref_gitlab_does_not_know_is_an_error_never_an_empty_listing() {
    let fake = FakeGitLab::start(lfs_world());
    let (forge, _) = forge(&fake);
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let err = forge
        .list_tree(&sha(unknown), ".assent/policies")
        .unwrap_err();
    assert!(
        matches!(&err, ForgeError::Status { status: 404, message, .. }
            if message.contains("does not know the commit") && message.contains(unknown)),
        "{err:?}"
    );
    assert_eq!(commit_reads(&fake), 1);

    // A known commit without the folder: empty, once GitLab shows the commit exists.
    fake.reset_log();
    assert!(
        forge
            .list_tree(&sha(SHA), ".assent/policies")
            .unwrap()
            .is_empty()
    );
    assert_eq!(commit_reads(&fake), 1);

    // A listing with files proves the commit by itself: no extra request.
    fake.reset_log();
    assert_eq!(forge.list_tree(&sha(SHA), "").unwrap().len(), 2);
    assert_eq!(commit_reads(&fake), 0);
}
