//! What assent judges is what consumers read, all of it, within a bounded memory: the
//! compiled binary (and `engine::run::inputs`) against the fake GitLab.
//!
//! Each test is an attack that used to pass `APPROVE`: a governed file replaced by a
//! symbolic link, a submodule or a Git LFS pointer; a diff listing GitLab truncated or that
//! does not match its own count; and a merge request whose governed files would not fit in
//! memory (docs/reliability.md, "Completeness").

use assent::core::model::PinnedCommits;
use assent::core::policy::MrContext;
use assent::core::semantic_diff::Limits;
use assent::engine::run::inputs::{MAX_READERS, ReadBounds, gather_review_inputs};
use assent_test_support::run::{RunResult, World, orders};
use assent_test_support::{config_for, forge_with, seed_example_policies, start_basic};
use fake_gitlab::{DiffFile, FileContent, RouteKind, State, fixtures};

use crate::ASSENT;

const ORDERS: &str = "topics/orders.yaml";
const UNDECIDABLE: &str = "assent/undecidable";

fn project(state: &mut State) -> &mut fake_gitlab::Project {
    state.project_mut(fixtures::PROJECT_ID).expect("project")
}

/// Makes `path` at the MR's head `content` with git mode `mode`, and lists it as modified
/// from the base's regular file to that mode.
fn replace_at_head(w: &World, path: &str, content: &str, mode: &str) {
    w.fake.with_state(|state| {
        let project = project(state);
        project
            .files
            .entry(fixtures::HEAD_SHA.into())
            .or_default()
            .insert(path.into(), FileContent(content.as_bytes().to_vec()));
        project
            .modes
            .entry(fixtures::HEAD_SHA.into())
            .or_default()
            .insert(path.into(), mode.into());
        project.mr_mut(fixtures::MR_IID).expect("mr").diffs =
            vec![DiffFile::modified(path).modes("100644", mode)];
    });
}

/// The `(rule, subject)` of every finding in the receipt.
fn findings(r: &RunResult) -> Vec<(String, String)> {
    r.receipt()["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["subject"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The run blocked with exactly one `assent/undecidable` finding on `subject`; returns its
/// thread's body.
#[track_caller]
fn blocked_undecidable(w: &World, r: &RunResult, subject: &str) -> String {
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "BLOCK");
    assert_eq!(
        findings(r),
        vec![(UNDECIDABLE.to_owned(), subject.to_owned())]
    );
    w.thread(UNDECIDABLE).notes[0].body.clone()
}

/// The raw reads of `path` the run sent (query included).
fn raw_reads(w: &World, path: &str) -> Vec<String> {
    let encoded = path.replace('/', "%2F");
    w.fake
        .requests()
        .into_iter()
        .filter(|r| r.route == RouteKind::FileRaw && r.path.contains(&encoded))
        .map(|r| r.query)
        .collect()
}

// ---- a governed path is a regular file ---------------------------------------------------

#[test]
fn a_governed_file_replaced_by_a_symlink_is_undecidable_and_never_read() {
    let w = World::new(ASSENT);
    // The link points at a registry that drops retention to one day; its own text
    // (`../shadow/orders.yaml`) parses as a YAML string no rule looks at.
    w.put_file(fixtures::HEAD_SHA, "shadow/orders.yaml", &orders(1));
    replace_at_head(&w, ORDERS, "../shadow/orders.yaml", "120000");
    let r = w.run(&[]);
    let body = blocked_undecidable(&w, &r, "topics/orders.yaml#");
    assert!(body.contains("symbolic link (mode 120000)"), "{body}");
    assert!(body.contains("at the source SHA"), "{body}");
    let reads = raw_reads(&w, ORDERS);
    assert_eq!(reads.len(), 1, "only the base side is read: {reads:?}");
    assert!(reads[0].contains(fixtures::BASE_SHA), "{reads:?}");
    r.assert_no_token();
}

#[test]
fn a_governed_path_that_becomes_a_submodule_is_undecidable() {
    let w = World::new(ASSENT);
    replace_at_head(&w, ORDERS, fixtures::TARGET_SHA, "160000");
    let r = w.run(&[]);
    let body = blocked_undecidable(&w, &r, "topics/orders.yaml#");
    assert!(body.contains("submodule (mode 160000)"), "{body}");
}

// ---- Git LFS -----------------------------------------------------------------------------

/// Stores `topics/orders.yaml` at the head in Git LFS with `object` as its content.
fn orders_in_lfs(w: &World, object: &str) {
    w.fake.with_state(|state| {
        let project = project(state);
        let pointer = fake_gitlab::lfs_pointer(object.as_bytes());
        project.lfs_objects.insert(
            fake_gitlab::lfs_oid(object.as_bytes()),
            FileContent(object.into()),
        );
        project
            .files
            .entry(fixtures::HEAD_SHA.into())
            .or_default()
            .insert(ORDERS.into(), FileContent(pointer.into_bytes()));
    });
}

#[test]
fn a_governed_file_in_git_lfs_is_judged_on_its_object() {
    let w = World::new(ASSENT);
    // The pointer's text says nothing a rule sees; the object shrinks retention to 7 days.
    orders_in_lfs(&w, &orders(7));
    let r = w.run(&[]);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW");
    assert_eq!(
        findings(&r),
        vec![(
            "retention-shrink".to_owned(),
            "topics/orders.yaml#/topics/orders.events.v1/retention_days".to_owned()
        )]
    );
    let reads = raw_reads(&w, ORDERS);
    assert!(
        reads.iter().all(|q| q.contains("lfs=true")),
        "every raw read asks for the LFS object: {reads:?}"
    );
    // GitLab answered the head's read with a 302 to object storage (docs/contract.md#lfs-redirect):
    // followed once, without the token.
    let stored: Vec<fake_gitlab::LoggedRequest> = w
        .fake
        .requests()
        .into_iter()
        .filter(|r| {
            r.path
                .starts_with(fake_gitlab::lfs_storage::STORAGE_LFS_PREFIX)
        })
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(
        !stored[0]
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("private-token")),
        "{stored:?}"
    );
    w.assert_no_violations();
    r.assert_no_token();

    // Served inline (`proxy_download`), the same judgement without the storage.
    let inline = World::new(ASSENT);
    orders_in_lfs(&inline, &orders(7));
    inline.fake.with_state(|st| st.lfs_proxy_download = true);
    let again = inline.run(&[]);
    assert_eq!(findings(&again), findings(&r));
    assert!(inline.fake.requests().iter().all(|r| {
        !r.path
            .starts_with(fake_gitlab::lfs_storage::STORAGE_LFS_PREFIX)
    }));
}

#[test]
fn an_lfs_pointer_gitlab_serves_as_such_is_undecidable_never_its_text() {
    let w = World::new(ASSENT);
    orders_in_lfs(&w, &orders(7));
    // With LFS off for the project, GitLab answers the pointer whatever `lfs` says.
    w.fake
        .with_state(|state| project(state).lfs_enabled = false);
    let r = w.run(&[]);
    let body = blocked_undecidable(&w, &r, "topics/orders.yaml#");
    assert!(body.contains("Git LFS pointer"), "{body}");
    assert!(
        !body.contains("git-lfs.github.com"),
        "the pointer is not quoted: {body}"
    );
}

// ---- the change set is complete ----------------------------------------------------------

#[test]
fn a_listing_gitlab_stopped_at_its_diff_limits_is_undecidable_naming_the_count() {
    let w = World::new(ASSENT);
    // 1,000 files listed (GitLab's default limit) and "1000+": a part, however long.
    w.fake.with_state(|state| {
        let mr = project(state).mr_mut(fixtures::MR_IID).expect("mr");
        mr.diffs
            .extend((0..999).map(|i| DiffFile::modified(&format!("docs/page{i:03}.md"))));
        mr.overflow = true;
    });
    let r = w.run(&[]);
    let body = blocked_undecidable(&w, &r, "merge-request#");
    assert!(body.contains("\"1000+\""), "{body}");
    assert!(body.contains("1000 file(s)"), "{body}");
    assert!(
        raw_reads(&w, ORDERS).is_empty(),
        "nothing of a partial listing is read"
    );
}

#[test]
fn a_listing_shorter_than_gitlabs_count_is_undecidable_naming_both_numbers() {
    let w = World::new(ASSENT);
    w.fake.with_state(|state| {
        project(state)
            .mr_mut(fixtures::MR_IID)
            .expect("mr")
            .changes_count = Some("2".into());
    });
    let r = w.run(&[]);
    let body = blocked_undecidable(&w, &r, "merge-request#");
    assert!(body.contains("GitLab counts 2 changed file(s)"), "{body}");
    assert!(body.contains("its diff listing has 1"), "{body}");

    // GitLab's count agreeing again: the same MR is judged, the undecidable thread resolved.
    w.fake.with_state(|state| {
        project(state)
            .mr_mut(fixtures::MR_IID)
            .expect("mr")
            .changes_count = None;
    });
    let r = w.run(&[]);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW");
}

#[test]
fn no_changes_count_at_all_is_undecidable() {
    let w = World::new(ASSENT);
    w.fake.with_state(|state| {
        // Served as `null`, as before GitLab has computed the MR's diff.
        project(state)
            .mr_mut(fixtures::MR_IID)
            .expect("mr")
            .changes_count = Some(String::new());
    });
    let r = w.run(&[]);
    let body = blocked_undecidable(&w, &r, "merge-request#");
    assert!(body.contains("no `changes_count`"), "{body}");
}

// ---- memory is bounded -------------------------------------------------------------------

/// `count` governed registries changed between base and head, each side `orders(days)`.
fn many_registries(count: usize) -> fake_gitlab::FakeGitLab {
    let fake = start_basic();
    seed_example_policies(&fake);
    fake.with_state(|state| {
        let project = project(state);
        let mut diffs = Vec::new();
        for i in 0..count {
            let path = format!("topics/t{i:02}.yaml");
            for (sha, days) in [(fixtures::BASE_SHA, 30), (fixtures::HEAD_SHA, 20)] {
                project
                    .files
                    .entry(sha.into())
                    .or_default()
                    .insert(path.clone(), FileContent(orders(days).into_bytes()));
            }
            diffs.push(DiffFile::modified(&path));
        }
        project.mr_mut(fixtures::MR_IID).expect("mr").diffs = diffs;
    });
    fake.reset_log();
    fake
}

fn pins() -> PinnedCommits {
    PinnedCommits {
        source_sha: assent_test_support::sha(fixtures::HEAD_SHA),
        target_sha: assent_test_support::sha(fixtures::TARGET_SHA),
        base_sha: assent_test_support::sha(fixtures::BASE_SHA),
    }
}

#[test]
fn governed_content_past_the_budget_is_undecidable_and_reading_stops() {
    let files = 20;
    let side = orders(30).len() as u64;
    let fake = many_registries(files);
    let (forge, _) = forge_with(config_for(
        &fake,
        fixtures::BOT_TOKEN,
        fixtures::PROJECT_PATH,
        fixtures::MR_IID,
    ));
    let bounds = |budget: u64| ReadBounds {
        changes_count: Some(files.to_string()),
        content_budget: budget,
    };

    // Every side fits exactly: all 40 are read and judged.
    let all = gather_review_inputs(
        &forge,
        &pins(),
        MrContext::default(),
        Limits::default(),
        &bounds(2 * files as u64 * side),
    )
    .expect("inputs");
    assert_eq!(all.inputs.changed_files.expect("complete").len(), files);
    let raw = |fake: &fake_gitlab::FakeGitLab| {
        fake.requests()
            .iter()
            .filter(|r| r.route == RouteKind::FileRaw && r.path.contains("topics%2Ft"))
            .count()
    };
    assert_eq!(raw(&fake), 2 * files);

    // One side and a half: the change set is undecidable, naming the budget, and once the
    // budget is spent no read is sent (at most the ones already in flight).
    fake.reset_log();
    let budget = side * 3 / 2;
    let over = gather_review_inputs(
        &forge,
        &pins(),
        MrContext::default(),
        Limits::default(),
        &bounds(budget),
    )
    .expect("inputs");
    let reason = over.inputs.changed_files.expect_err("over the budget");
    assert!(
        reason.contains(&format!("the {budget} bytes (0 MiB) one run reads")),
        "{reason}"
    );
    let sent = raw(&fake);
    assert!(
        sent <= MAX_READERS + 1,
        "{sent} governed reads sent past a budget of one side"
    );
}
