//! The limit on one answer's body, against the fake GitLab: pages over it asked again
//! smaller, a discussion over it even alone streamed without its human bodies, and
//! budgeted reads of file contents.

use super::*;

#[test]
fn the_body_limit_is_enforced() {
    let state = with_file(world(), FILE_SHA, "big.yaml", "x".repeat(5000).as_bytes());
    let fake = FakeGitLab::start(with_file(state, FILE_SHA, "f", "x".repeat(4096).as_bytes()));
    let mut config = config(&fake);
    config.body_limit = 4096;
    let (forge, sleeper) = forge_with(config.clone());
    let err = forge.read_file(&sha(FILE_SHA), "big.yaml").unwrap_err();
    assert!(matches!(err, ForgeError::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("4096-byte limit"), "{err}");
    assert_eq!(
        fake.requests().len(),
        1,
        "an over-limit body is not retried"
    );
    assert!(sleeper.delays().is_empty());
    // At the limit exactly is fine.
    assert_eq!(
        forge_with(config)
            .0
            .read_file(&sha(FILE_SHA), "f")
            .unwrap()
            .unwrap()
            .len(),
        4096
    );
}

/// Every discussions request's `per_page`, in order.
fn discussion_page_sizes(fake: &FakeGitLab) -> Vec<u64> {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .map(|r| {
            r.query_param("per_page")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        })
        .collect()
}

/// Seeds `n` human threads; the ones in `heavy` are listed with `text` repeated `times`
/// times after their body. Returns each thread's note id and full listed body.
fn seed_heavy_threads(
    fake: &FakeGitLab,
    n: usize,
    heavy: &[(std::ops::Range<usize>, &str, usize)],
) -> Vec<(u64, String)> {
    (0..n)
        .map(|i| {
            let body = format!("thread {i}");
            let id = fake.post_thread(PROJECT_ID, MR_IID, HUMAN_ID, &body).1;
            match heavy.iter().find(|(range, _, _)| range.contains(&i)) {
                Some((_, text, times)) => {
                    fake.inflate_note(id, text, *times);
                    (id, format!("{body}{}", text.repeat(*times)))
                }
                None => (id, body),
            }
        })
        .collect()
}

#[test]
fn pages_over_the_body_limit_are_asked_again_smaller_and_nothing_is_skipped_or_repeated() {
    // Multi-byte characters, JSON escapes (a control character is six bytes on the wire, a
    // quote two) and a four-byte emoji: the limit is in bytes, notes are in characters.
    let heavy: &[(std::ops::Range<usize>, &str, usize)] = &[
        (40..70, "ü", 20_000),
        (150..151, "\u{1}", 12_000),
        (151..152, "\"", 30_000),
        (152..153, "😀", 15_000),
        (229..230, "x", 70_000),
    ];
    for (cap, omit_totals, link_only) in [
        (None, false, false),
        (None, true, false),
        (Some(30), false, false),
        (None, false, true),
    ] {
        let label = format!("cap={cap:?} omit_totals={omit_totals} link_only={link_only}");
        let fake = FakeGitLab::start(world());
        fake.set_max_per_page(cap);
        fake.set_omit_totals(omit_totals);
        fake.set_link_pagination(link_only, None);
        let expected = seed_heavy_threads(&fake, 230, heavy);
        let mut config = config(&fake);
        config.body_limit = 256 * 1024;
        let (forge, sleeper) = forge_with(config);
        let listed = forge
            .list_discussions()
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let got: Vec<(u64, String)> = listed
            .iter()
            .map(|d| (d.notes[0].id, d.notes[0].body.clone()))
            .collect();
        assert_eq!(got.len(), expected.len(), "{label}");
        assert!(
            got == expected,
            "{label}: an item was skipped, repeated or cut"
        );
        let sizes = discussion_page_sizes(&fake);
        let first_full = cap.unwrap_or(100);
        let smallest = *sizes.iter().min().unwrap();
        assert!(smallest < first_full, "{label}: {sizes:?}");
        // After the heavy pages the size grows back: the light tail is not read item by item.
        assert!(*sizes.last().unwrap() >= 4 * smallest, "{label}: {sizes:?}");
        assert!(
            sizes.len() < 30,
            "{label}: {} requests: {sizes:?}",
            sizes.len()
        );
        assert!(
            sleeper.delays().is_empty(),
            "{label}: an over-limit page is not retried as is"
        );
        assert_eq!(fake.violations(), Vec::<String>::new());
    }
}

#[test]
fn a_human_discussion_over_the_limit_even_alone_is_streamed_without_its_human_bodies() {
    let fake = FakeGitLab::start(world());
    let expected = seed_heavy_threads(&fake, 3, &[(1..2, "ü", 40_000)]);
    // The bot's reply in the heavy thread is kept; the human bodies are not needed.
    let heavy = fake
        .discussions(PROJECT_ID, MR_IID)
        .into_iter()
        .find(|d| d.notes[0].id == expected[1].0)
        .unwrap();
    let reply = fake.reply(PROJECT_ID, MR_IID, &heavy.id, BOT_ID, "the bot's reply");
    let mut config = config(&fake);
    config.body_limit = 64 * 1024;
    let (forge, sleeper) = forge_with(config);
    let listed = forge.list_discussions().unwrap();
    let ids: Vec<u64> = listed.iter().map(|d| d.notes[0].id).collect();
    assert_eq!(ids, expected.iter().map(|(id, _)| *id).collect::<Vec<_>>());
    assert_eq!(
        listed[0].notes[0].body, expected[0].1,
        "light pages keep every body"
    );
    let streamed = &listed[1];
    assert_eq!(streamed.notes.len(), 2);
    assert_eq!(streamed.notes[0].author_id, HUMAN_ID);
    assert_eq!(
        streamed.notes[0].body, "",
        "a human's body is dropped as it arrives"
    );
    assert_eq!(streamed.notes[1].id, reply);
    assert_eq!(streamed.notes[1].body, "the bot's reply");
    // Halved down to one discussion per page; the heavy second page asked at one, over the
    // limit, then the same page streamed; the third grows back.
    assert_eq!(
        discussion_page_sizes(&fake),
        [100, 50, 25, 12, 6, 3, 1, 1, 1, 2]
    );
    assert!(sleeper.delays().is_empty());
    assert_eq!(fake.violations(), Vec::<String>::new());
}

#[test]
fn a_diff_listing_over_the_body_limit_is_asked_again_smaller() {
    let fake = FakeGitLab::start(world());
    let files: Vec<DiffFile> = (0..120)
        .map(|i| {
            let mut file = DiffFile::modified(&format!("topics/t{i:03}.yaml"));
            if (10..30).contains(&i) {
                file.diff = format!(
                    "@@ -1 +1 @@\n-{}\n+{}\n",
                    "a".repeat(9_000),
                    "ä".repeat(9_000)
                );
            }
            file
        })
        .collect();
    fake.with_state(|s| {
        s.project_mut(PROJECT_ID)
            .unwrap()
            .mr_mut(MR_IID)
            .unwrap()
            .diffs = files;
    });
    let mut config = config(&fake);
    config.body_limit = 128 * 1024;
    let (forge, _) = forge_with(config);
    let listed = Repository::changed_files(&forge).unwrap();
    let paths: Vec<String> = listed.iter().map(|f| f.new_path.clone()).collect();
    let expected: Vec<String> = (0..120).map(|i| format!("topics/t{i:03}.yaml")).collect();
    assert_eq!(paths, expected);
    let sizes: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Diffs)
        .filter_map(|r| r.query_param("per_page"))
        .collect();
    assert!(sizes.iter().any(|s| s != "100"), "{sizes:?}");
}

#[test]
fn budgeted_reads_take_what_fits_ask_for_lfs_objects_and_stop_once_spent() {
    use assent_forge::{BudgetedRead, ContentBudget};
    let state = with_file(world(), FILE_SHA, "big.yaml", "x".repeat(5000).as_bytes());
    let state = with_file(state, FILE_SHA, "six.yaml", b"123456");
    let fake = FakeGitLab::start(with_file(state, FILE_SHA, "four.yaml", b"1234"));
    let (forge, _) = forge(&fake);
    let raw_reads = || {
        fake.requests()
            .into_iter()
            .filter(|r| r.route == RouteKind::FileRaw)
            .collect::<Vec<LoggedRequest>>()
    };

    // A 500 first: an error's body is not content, so the retried read and the next one fit
    // exactly (6 + 4 = 10).
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .path_contains("six.yaml")
            .nth(1),
    );
    let budget = ContentBudget::new(10);
    let read = |path| {
        forge
            .read_file_within(&sha(FILE_SHA), path, &budget)
            .unwrap()
    };
    assert_eq!(read("six.yaml"), BudgetedRead::Present(b"123456".to_vec()));
    assert_eq!(read("absent.yaml"), BudgetedRead::Absent);
    assert_eq!(read("four.yaml"), BudgetedRead::Present(b"1234".to_vec()));
    assert!(!budget.is_spent());
    assert!(
        raw_reads()
            .iter()
            .all(|r| r.query_param("lfs").as_deref() == Some("true")),
        "every raw read asks for an LFS file's object"
    );

    // A body announced larger than what is left is refused unread and spends the budget: no
    // later read is sent.
    let budget = ContentBudget::new(100);
    let before = raw_reads().len();
    let read = |path| {
        forge
            .read_file_within(&sha(FILE_SHA), path, &budget)
            .unwrap()
    };
    assert_eq!(read("big.yaml"), BudgetedRead::OverBudget);
    assert_eq!(raw_reads().len(), before + 1, "not retried");
    assert_eq!(read("four.yaml"), BudgetedRead::OverBudget);
    assert_eq!(raw_reads().len(), before + 1, "nothing sent once spent");
    // A read without a budget is as before.
    assert_eq!(
        forge
            .read_file(&sha(FILE_SHA), "big.yaml")
            .unwrap()
            .unwrap()
            .len(),
        5000
    );
}
