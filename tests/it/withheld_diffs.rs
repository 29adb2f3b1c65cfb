//! Diffs GitLab withholds are judged from contents (docs/contract.md#withheld-diffs): the
//! compiled `assent run` against the fake GitLab, whose `/diffs` withholds by size as GitLab
//! does (`fake_gitlab::diff_limits`: past 100 files or 5,000 lines, and a patch at a tenth of
//! `diff_max_patch_bytes`, on versions whose route does not expand; `too_large` on every
//! version). Each test runs under both profiles: the older (17.11, collapsing) and the
//! current (the fake's default, expanding). A withheld file loses only its DiffNote.

use assent_test_support::run::{RunResult, World};
use fake_gitlab::diff_limits::served_diffs;
use fake_gitlab::{Discussion, fixtures};

const BIN: &str = env!("CARGO_BIN_EXE_assent");

/// A version whose `/diffs` collapses past GitLab's safe limits, and the fake's default.
const PROFILES: [&str; 2] = ["17.11.0", "18.6.0"];

/// Files the large merge request changes, and the index of the one whose change is risky:
/// the 120th, past the 100 files GitLab shows expanded on the older profile.
const FILES: usize = 150;
const RISKY: usize = 119;

fn path(i: usize) -> String {
    format!("topics/f{i:03}.yaml")
}

fn topic(i: usize, days: u32) -> String {
    format!("topics:\n  - name: t{i:03}\n    retention_days: {days}\n")
}

/// A world at GitLab `version` whose merge request changes `changed` (index, new retention)
/// of files that all keep 30 days at the base; every listed diff is real.
fn world(version: &str, changed: &[(usize, u32)]) -> World {
    let w = World::new(BIN);
    w.fake.with_state(|st| st.version = version.into());
    for &(i, _) in changed {
        w.put_file(fixtures::BASE_SHA, &path(i), &topic(i, 30));
    }
    let sources: Vec<(String, String)> = changed
        .iter()
        .map(|&(i, days)| (path(i), topic(i, days)))
        .collect();
    let sources: Vec<(&str, &str)> = sources
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    w.push_with_diffs(fixtures::HEAD_SHA, &sources);
    w
}

/// Every file of the large merge request: retention grows (no finding) but for the risky one.
fn large_change() -> Vec<(usize, u32)> {
    (0..FILES)
        .map(|i| (i, if i == RISKY { 7 } else { 31 }))
        .collect()
}

/// Which listed files the fake's `/diffs` withholds at the world's version.
fn withheld(w: &World) -> Vec<String> {
    w.fake.with_state(|st| {
        let mr = st
            .project(fixtures::PROJECT_ID)
            .and_then(|p| p.mr(fixtures::MR_IID))
            .expect("the basic MR");
        served_diffs(st, &mr.diffs)
            .into_iter()
            .filter(|d| d.collapsed == Some(true) || d.too_large == Some(true))
            .map(|d| d.new_path)
            .collect()
    })
}

/// The decision and every finding's `(rule, subject)`.
fn verdict(r: &RunResult) -> (String, Vec<(String, String)>) {
    let receipt = r.receipt();
    let findings = receipt["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["subject"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (receipt["decision"].as_str().unwrap().to_owned(), findings)
}

fn is_diff_note(thread: &Discussion) -> bool {
    thread.notes[0].note_type.as_deref() == Some("DiffNote")
}

fn shrink_of(i: usize) -> (String, String) {
    (
        "retention-shrink".to_owned(),
        format!("{}#/topics/t{i:03}/retention_days", path(i)),
    )
}

#[test]
fn a_merge_request_of_150_files_is_judged_as_a_small_one_under_both_profiles() {
    let small = world(PROFILES[1], &[(RISKY, 7)]);
    let expected = verdict(&small.run(&[]));
    assert_eq!(
        expected,
        ("REVIEW".to_owned(), vec![shrink_of(RISKY)]),
        "the small merge request's judgement"
    );
    for version in PROFILES {
        let w = world(version, &large_change());
        let collapsing = version == PROFILES[0];
        let withheld = withheld(&w);
        if collapsing {
            // GitLab's order: files 101 to 150 are collapsed, the risky 120th among them.
            assert_eq!(withheld, (100..FILES).map(path).collect::<Vec<_>>());
        } else {
            assert!(withheld.is_empty(), "{withheld:?}");
        }
        let r = w.run(&[]);
        assert_eq!(verdict(&r), expected, "GitLab {version}");
        let thread = w.thread("retention-shrink");
        assert_eq!(
            is_diff_note(&thread),
            !collapsing,
            "GitLab {version}: a withheld diff loses only the DiffNote placement"
        );
        assert!(w.threads_of("assent/undecidable").is_empty());
        w.assert_no_violations();
    }
}

#[test]
fn one_large_patch_collapsed_or_too_large_is_judged_from_its_contents() {
    // A tenth of GitLab's patch limit collapses a file on the older profile; the limit itself
    // makes a file too large on every version. 4,000 bytes keeps the files small.
    const LIMIT: u64 = 4_000;
    let many_topics = |days: u32, topics: usize, risky: usize| {
        let mut text = String::from("topics:\n");
        for t in 0..topics {
            // Every other topic grows, so the whole file is in the patch.
            let days = if t == risky { days } else { 31 };
            text.push_str(&format!("  - name: t{t:03}\n    retention_days: {days}\n"));
        }
        text
    };
    let all_at = |topics: usize| {
        let mut text = String::from("topics:\n");
        for t in 0..topics {
            text.push_str(&format!("  - name: t{t:03}\n    retention_days: 30\n"));
        }
        text
    };
    // ~20 changed topics: a patch of about 1 KB (collapsed at 400 bytes); ~100: about 5 KB.
    let files = [
        ("topics/collapsed.yaml", 20, 7),
        ("topics/huge.yaml", 100, 50),
    ];
    for version in PROFILES {
        let w = World::new(BIN);
        w.fake.with_state(|st| {
            st.version = version.into();
            st.diff_max_patch_bytes = LIMIT;
        });
        for (path, topics, _) in files {
            w.put_file(fixtures::BASE_SHA, path, &all_at(topics));
        }
        let sources: Vec<(&str, String)> = files
            .iter()
            .map(|&(path, topics, risky)| (path, many_topics(7, topics, risky)))
            .collect();
        let sources: Vec<(&str, &str)> = sources.iter().map(|(p, c)| (*p, c.as_str())).collect();
        w.push_with_diffs(fixtures::HEAD_SHA, &sources);
        let expected_withheld: Vec<&str> = if version == PROFILES[0] {
            vec!["topics/collapsed.yaml", "topics/huge.yaml"]
        } else {
            vec!["topics/huge.yaml"]
        };
        assert_eq!(withheld(&w), expected_withheld, "GitLab {version}");
        let r = w.run(&[]);
        assert_eq!(
            verdict(&r),
            (
                "REVIEW".to_owned(),
                vec![
                    (
                        "retention-shrink".to_owned(),
                        "topics/collapsed.yaml#/topics/t007/retention_days".to_owned()
                    ),
                    (
                        "retention-shrink".to_owned(),
                        "topics/huge.yaml#/topics/t050/retention_days".to_owned()
                    ),
                ]
            ),
            "GitLab {version}"
        );
        for thread in w.threads_of("retention-shrink") {
            let subject_in = |p: &str| {
                thread.notes[0]
                    .body
                    .contains(&format!("\"subject\":\"{p}#"))
            };
            let shown = expected_withheld.iter().all(|p| !subject_in(p));
            assert_eq!(is_diff_note(&thread), shown, "GitLab {version}");
        }
        w.assert_no_violations();
    }
}
