//! Every protocol fixture replays over HTTP: the shared runner drives the real GitLab adapter
//! against an in-process fake GitLab (see the `assent_test_support` crate), with the same
//! expectations as the in-memory replay, and the two replays agree request for request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assent::commands::replay::{collect_fixture_files, load_fixture};
use assent::core::model::ListedDiscussion;
use assent::engine::fixture::schema::DEFAULT_HEAD;
use assent::engine::fixture::{
    Fixture, FixtureReport, FixtureWorld, InMemoryWorld, replay_fixture,
};
use assent::forge::Forge;
use assent_test_support::http_world::{BOT_TOKEN, FakeGitLabWorld};

fn fixture_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    collect_fixture_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut files,
    )
    .unwrap();
    assert!(files.len() >= 17, "fixtures went missing: {files:?}");
    files
}

/// Every note as `(author, system, resolvable, resolved, body)` by note id: the state a
/// fixture can observe, without the forge's discussion ids and timestamps.
type Notes = BTreeMap<u64, (u64, bool, bool, bool, String)>;

/// The notes assent and people wrote, by id. GitLab's own notes are left out: the fake GitLab
/// writes "resolved all threads" when an MR's last thread is resolved, as GitLab does, and the
/// in-memory forge writes none; assent reads neither.
fn notes(snapshot: &[ListedDiscussion]) -> Notes {
    snapshot
        .iter()
        .flat_map(|d| d.notes.iter())
        .filter(|n| !n.system)
        .map(|n| {
            (
                n.id,
                (
                    n.author_id,
                    n.system,
                    n.resolvable,
                    n.resolved,
                    n.body.clone(),
                ),
            )
        })
        .collect()
}

fn replay_over_http(fixture: &Fixture) -> (FixtureReport, FakeGitLabWorld) {
    let world = FakeGitLabWorld::new(fixture.bot_user_id, DEFAULT_HEAD);
    let report = replay_fixture(fixture, &world);
    (report, world)
}

#[test]
fn every_fixture_passes_over_http_with_the_in_memory_expectations() {
    let mut failures = Vec::new();
    for file in fixture_files() {
        let fixture = load_fixture(&file).unwrap_or_else(|e| panic!("{e}"));
        let (report, world) = replay_over_http(&fixture);
        if let Some(mismatch) = &report.mismatch {
            failures.push(format!("{}: {mismatch}", file.display()));
        }
        let violations = world.fake().violations();
        if !violations.is_empty() {
            failures.push(format!("{}: violations {violations:?}", file.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The HTTP replay and the in-memory replay of each fixture make the same writes, produce
/// the same receipts and leave the same notes. Reads agree too, except for `GET /user`: the
/// adapter asks for the token's identity once per process and caches it, while the
/// in-memory forge counts every call, so every run after the first reads one less.
#[test]
fn http_and_in_memory_replays_agree_request_for_request() {
    for file in fixture_files() {
        let fixture = load_fixture(&file).unwrap();
        let name = file.display();
        let memory =
            InMemoryWorld::new(fixture.bot_user_id, &assent_test_support::sha(DEFAULT_HEAD));
        let in_memory = replay_fixture(&fixture, &memory);
        let (over_http, world) = replay_over_http(&fixture);
        assert!(in_memory.passed() && over_http.passed(), "{name}");
        assert_eq!(in_memory.runs.len(), over_http.runs.len(), "{name}");
        for (i, (mem, http)) in in_memory.runs.iter().zip(&over_http.runs).enumerate() {
            let run = i + 1;
            let cached_user_read = u64::from(i > 0);
            assert_eq!(mem.writes, http.writes, "{name} run {run}: writes");
            assert_eq!(
                mem.reads - cached_user_read,
                http.reads,
                "{name} run {run}: reads"
            );
            assert_eq!(mem.error, http.error, "{name} run {run}: error");
            match (&mem.receipt, &http.receipt) {
                (Some(mem), Some(http)) => {
                    let mut expected = mem.clone();
                    expected.requests.reads -= cached_user_read;
                    assert_eq!(
                        expected.to_json(),
                        http.to_json(),
                        "{name} run {run}: receipt"
                    );
                }
                (None, None) => {}
                _ => panic!("{name} run {run}: one replay has a receipt, the other not"),
            }
        }
        assert_eq!(
            notes(&memory.snapshot().unwrap()),
            notes(&world.snapshot().unwrap()),
            "{name}: final notes"
        );
        // The adapter's counts are the requests the server saw, one for one.
        let counts = world.gitlab().request_counts();
        assert_eq!(counts.reads, world.fake().reads() as u64, "{name}: reads");
        assert_eq!(
            counts.writes,
            world.fake().writes() as u64,
            "{name}: writes"
        );
        // The token travels only in the header.
        for request in world.fake().requests() {
            assert!(
                !request.path.contains(BOT_TOKEN) && !request.query.contains(BOT_TOKEN),
                "{name}: token in {} {}?{}",
                request.method,
                request.path,
                request.query
            );
            assert_eq!(
                request
                    .headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("private-token"))
                    .map(|(_, v)| v.as_str()),
                Some(BOT_TOKEN),
                "{name}: {} {} without the token header",
                request.method,
                request.path
            );
        }
        assert!(world.fake().violations().is_empty(), "{name}");
    }
}

/// A fixture with `page_size` really pages over HTTP: the fake serves at most that many
/// discussions per page and the adapter follows the next-page headers.
#[test]
fn a_fixture_page_size_pages_the_http_listing() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/duplicate-repair.yaml");
    let fixture = load_fixture(&file).unwrap();
    assert_eq!(fixture.page_size, Some(2));
    let (report, world) = replay_over_http(&fixture);
    assert!(report.passed(), "{:?}", report.mismatch);
    let pages: Vec<String> = world
        .fake()
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/discussions"))
        .map(|r| r.query.clone())
        .collect();
    assert!(
        pages.iter().any(|q| q.contains("page=2")),
        "no second page requested: {pages:?}"
    );
    assert!(pages.iter().all(|q| q.contains("per_page=")), "{pages:?}");
}
