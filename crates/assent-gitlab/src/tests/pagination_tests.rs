//! GitLab's pagination as the adapter follows it, against the fake GitLab: page and `Link`
//! headers in each form GitLab sends (`lib/gitlab/pagination/offset_pagination.rb`; no
//! totals above 10,000 items), headers missing or lying, next links to another origin, and
//! the cap on pages.

use super::*;

#[derive(Clone, Copy, Debug)]
enum Paging {
    /// The fake's own pagination headers, as GitLab sends them.
    AsGitLab,
    /// The fake's own headers without totals (GitLab above 10,000 items).
    AsGitLabNoTotals,
    /// `X-Next-Page` (empty on the last page), with totals, and a lying `X-Total-Pages: 1`.
    NextPage,
    /// `X-Next-Page` without any totals (GitLab above 10,000 items).
    NextPageNoTotals,
    /// `Link` only, `rel="next"` on every full page (so a multiple of 100 ends on an empty page).
    LinkOnly,
}

/// The fake listing `total` discussions, paginated as `paging` says.
fn paged_fake(total: usize, paging: Paging) -> FakeGitLab {
    let fake = FakeGitLab::start(with_discussions(total));
    match paging {
        Paging::AsGitLab => {}
        Paging::AsGitLabNoTotals => fake.set_omit_totals(true),
        Paging::NextPage => {
            fake.inject(FaultRule::new(headers(
                &[("X-Total-Pages", "1")],
                &["Link"],
            )));
        }
        Paging::NextPageNoTotals => {
            fake.set_omit_totals(true);
            fake.inject(FaultRule::new(headers(&[], &["Link"])));
        }
        Paging::LinkOnly => {
            fake.set_link_pagination(true, None);
            fake.set_next_on_full_page(true);
        }
    }
    fake
}

#[test]
fn pagination_returns_every_item_for_edge_counts() {
    for paging in [
        Paging::AsGitLab,
        Paging::AsGitLabNoTotals,
        Paging::NextPage,
        Paging::NextPageNoTotals,
        Paging::LinkOnly,
    ] {
        for total in [0usize, 1, 100, 101, 200, 250] {
            let fake = paged_fake(total, paging);
            let (forge, sleeper) = forge(&fake);
            let listed = forge.list_discussions().unwrap();
            let ids: Vec<u64> = listed.iter().map(|d| d.notes[0].id).collect();
            let expected: Vec<u64> = (0..total as u64).map(|i| 1000 + i).collect();
            assert_eq!(ids, expected, "{paging:?} total {total}");
            assert!(listed.iter().all(|d| d.notes[0].author_id == HUMAN_ID));
            assert!(sleeper.delays().is_empty(), "{paging:?} total {total}");
            let seen = fake.requests();
            let pages = match paging {
                Paging::LinkOnly => total / 100 + 1,
                _ => total.div_ceil(100).max(1),
            };
            assert_eq!(seen.len(), pages, "{paging:?} total {total}: pages fetched");
            assert!(
                seen.iter()
                    .all(|s| s.query_param("per_page").as_deref() == Some("100"))
            );
            assert_eq!(
                forge.request_counts(),
                RequestCounts {
                    reads: pages as u64,
                    writes: 0
                }
            );
            assert_eq!(fake.violations(), Vec::<String>::new());
        }
    }
}

#[test]
fn listing_order_does_not_matter_and_small_server_pages_are_followed() {
    let fake = FakeGitLab::start(with_discussions(7));
    fake.set_discussion_order(PROJECT_ID, MR_IID, fake_gitlab::DiscussionOrder::Reversed);
    fake.set_max_per_page(Some(3));
    fake.set_omit_totals(true);
    let (forge, _) = forge(&fake);
    let got: Vec<u64> = forge
        .list_discussions()
        .unwrap()
        .iter()
        .map(|d| d.notes[0].id)
        .collect();
    let reversed: Vec<u64> = (1000..1007).rev().collect();
    assert_eq!(got, reversed);
    assert_eq!(discussion_pages(&fake), 3);
}

#[test]
fn a_page_failing_after_retries_fails_the_whole_listing() {
    let fake = FakeGitLab::start(with_discussions(200));
    fake.inject(FaultRule::new(FaultAction::ServerError).query_contains("page=2"));
    let (forge, sleeper) = forge(&fake);
    let err = forge.list_discussions().unwrap_err();
    // A forge failure (exit 3), not "GitLab says the listing is incomplete".
    assert!(
        matches!(err, ForgeError::Status { status: 500, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("(page 2)"), "{err}");
    assert!(
        err.to_string().contains("500 Internal Server Error"),
        "{err}"
    );
    let seen = fake.requests();
    assert_eq!(seen.len(), 1 + 5);
    assert_eq!(seen[0].query_param("page"), None);
    assert!(
        seen[1..]
            .iter()
            .all(|s| s.query_param("page").as_deref() == Some("2"))
    );
    assert_eq!(sleeper.delays().len(), 4);
}

#[test]
fn a_full_page_without_pagination_headers_is_incomplete_but_a_short_one_is_last() {
    let full = FakeGitLab::start(with_discussions(100));
    full.inject(FaultRule::new(headers(&[], PAGINATION_HEADERS)));
    let err = forge(&full).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    let short = FakeGitLab::start(with_discussions(99));
    short.inject(FaultRule::new(headers(&[], PAGINATION_HEADERS)));
    assert_eq!(forge(&short).0.list_discussions().unwrap().len(), 99);
}

#[test]
fn a_next_link_to_another_origin_is_not_followed() {
    let other = FakeGitLab::start(world());
    let target = format!("{}/steal?page=2", other.base_url());
    let fake = FakeGitLab::start(with_discussions(200));
    fake.inject(FaultRule::new(headers(
        &[("Link", &format!("<{target}>; rel=\"next\""))],
        &["X-Next-Page"],
    )));
    let err = forge(&fake).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("another origin"), "{err}");
    assert!(other.requests().is_empty());
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn pagination_is_capped_and_loops_are_caught() {
    let fake = FakeGitLab::start(with_discussions(400));
    let mut config = config(&fake);
    config.max_pages = 3;
    let err = forge_with(config).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("more than 3 pages"), "{err}");
    assert_eq!(fake.requests().len(), 3);

    let looping = FakeGitLab::start(with_discussions(200));
    looping.inject(FaultRule::new(headers(&[("X-Next-Page", "1")], &["Link"])));
    let err = forge(&looping).0.list_discussions().unwrap_err();
    assert!(err.to_string().contains("loop"), "{err}");
}
