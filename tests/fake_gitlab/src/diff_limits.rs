//! What `GET …/merge_requests/:iid/diffs` withholds by size, as GitLab decides it.
//!
//! GitLab's source is the reference:
//!
//! * `lib/gitlab/git/diff.rb`: a file whose patch reaches `diff_max_patch_bytes`
//!   (`patch_hard_limit_bytes`, an application setting, 200 KiB by default) is `too_large`,
//!   its `diff` emptied, on every version. One that reaches a tenth of it
//!   (`patch_safe_limit_bytes`) is `collapsed`, its `diff` emptied, unless the collection is
//!   expanded.
//! * `lib/gitlab/git/diff_collection.rb` (`each_serialized_patch`, `over_safe_limits?`): in
//!   the MR's file order, file `i` (from 0) whose own diff still has lines is `collapsed` once
//!   `i >= safe_max_files` (100), or the lines counted before it exceed `safe_max_lines`
//!   (5,000), or the bytes counted before it reach `safe_max_bytes` (100 files × 5 KiB);
//!   a collapsed file counts no line and no byte. A collection of one file is always
//!   expanded (`expand_diff?`).
//! * `lib/gitlab/diff/file_collection/paginated_diffs.rb`: a page is counted after every file
//!   of the pages before it, so the limits are the merge request's, not the page's.
//! * `lib/api/merge_requests.rb`: the `/diffs` route passes `{ expanded: true }` in the newest
//!   source (the fake's default version, [`EXPANDED_SINCE`]), and nothing in older ones, whose
//!   collections are therefore not expanded.
//!
//! A test may still set `collapsed`/`too_large` on a diff by hand: that is served as set.
//! Every served file carries both flags, `false` where GitLab shows the diff.

use crate::ci::version_at_least;
use crate::model::{DiffFile, State};

/// The GitLab version (major, minor) from which the `/diffs` route expands its collection,
/// so only `too_large` withholds a diff. Older versions collapse past the safe limits.
pub const EXPANDED_SINCE: (u64, u64) = (18, 6);

/// GitLab's default `diff_max_patch_bytes` (`ApplicationSetting`): 200 KiB.
pub const DEFAULT_DIFF_MAX_PATCH_BYTES: u64 = 200 * 1024;

/// `Commit.diff_safe_max_files`: `diff_max_files` (1,000) / `DIFF_SAFE_LIMIT_FACTOR` (10).
const SAFE_MAX_FILES: usize = 100;

/// `Commit.diff_safe_max_lines`: `diff_max_lines` (50,000) / `DIFF_SAFE_LIMIT_FACTOR` (10).
const SAFE_MAX_LINES: u64 = 5_000;

/// `safe_max_files` × 5 KiB, GitLab's average bytes per file.
const SAFE_MAX_BYTES: u64 = SAFE_MAX_FILES as u64 * 5 * 1024;

/// `Gitlab::Git::Util.count_lines`: lines of a text, the last one counted without its `\n`.
fn count_lines(text: &str) -> u64 {
    match text.as_bytes().last() {
        None => 0,
        Some(b'\n') => text.matches('\n').count() as u64,
        Some(_) => text.matches('\n').count() as u64 + 1,
    }
}

/// The merge request's diffs as `/diffs` serves them at `st.version`: each one withheld where
/// GitLab's limits withhold it, its `diff` then empty.
pub fn served_diffs(st: &State, diffs: &[DiffFile]) -> Vec<DiffFile> {
    let expanded =
        version_at_least(&st.version, EXPANDED_SINCE.0, EXPANDED_SINCE.1) || diffs.len() == 1;
    let hard_limit = st.diff_max_patch_bytes;
    let (mut lines, mut bytes) = (0u64, 0u64);
    diffs
        .iter()
        .enumerate()
        .map(|(index, diff)| {
            let mut diff = diff.clone();
            let size = diff.diff.len() as u64;
            if diff.too_large == Some(true) || size >= hard_limit {
                diff.too_large = Some(true);
                diff.diff.clear();
            } else if !expanded && size >= hard_limit / 10 {
                diff.collapsed = Some(true);
                diff.diff.clear();
            }
            let over_safe_limits =
                index >= SAFE_MAX_FILES || lines > SAFE_MAX_LINES || bytes >= SAFE_MAX_BYTES;
            if !expanded && over_safe_limits && count_lines(&diff.diff) > 0 {
                diff.collapsed = Some(true);
                diff.diff.clear();
            }
            lines += count_lines(&diff.diff);
            bytes += diff.diff.len() as u64;
            // `Entities::Diff` (`lib/api/entities/diff.rb`) exposes both flags on every file.
            diff.too_large.get_or_insert(false);
            diff.collapsed.get_or_insert(false);
            diff
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(version: &str) -> State {
        State {
            version: version.into(),
            ..State::default()
        }
    }

    fn small(i: usize) -> DiffFile {
        DiffFile {
            diff: "@@ -1 +1 @@\n-a: 1\n+a: 2\n".into(),
            ..DiffFile::modified(&format!("f{i:03}.yaml"))
        }
    }

    fn withheld(diffs: &[DiffFile]) -> Vec<usize> {
        diffs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.collapsed == Some(true) || d.too_large == Some(true))
            .map(|(i, d)| {
                assert!(d.diff.is_empty(), "a withheld diff is served empty");
                i
            })
            .collect()
    }

    #[test]
    fn lines_are_counted_as_gitlab_counts_them() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
    }

    #[test]
    fn past_a_hundred_files_the_older_profile_collapses_and_the_current_one_does_not() {
        let diffs: Vec<DiffFile> = (0..150).map(small).collect();
        let old = served_diffs(&state("17.11.0"), &diffs);
        assert_eq!(withheld(&old), (100..150).collect::<Vec<_>>());
        assert!(old[99].diff == diffs[99].diff, "the 100th file is shown");
        assert!(withheld(&served_diffs(&state("18.6.0"), &diffs)).is_empty());
    }

    #[test]
    fn past_five_thousand_lines_the_next_files_collapse() {
        let big = |i: usize, lines: usize| DiffFile {
            diff: format!("@@ -1,{lines} +1,{lines} @@\n{}", "+x\n".repeat(lines - 1)),
            ..DiffFile::modified(&format!("big{i}.yaml"))
        };
        // 2,000 + 3,000 lines: 5,000 counted is not over the limit; 5,001 is.
        let exactly = [big(0, 2_000), big(1, 3_000), small(2)];
        assert!(withheld(&served_diffs(&state("17.0.0"), &exactly)).is_empty());
        let over = [big(0, 2_000), big(1, 3_001), small(2), small(3)];
        assert_eq!(withheld(&served_diffs(&state("17.0.0"), &over)), [2, 3]);
    }

    #[test]
    fn one_large_patch_collapses_at_a_tenth_of_the_limit_and_is_too_large_at_it() {
        let st = State {
            diff_max_patch_bytes: 1_000,
            ..state("17.11.0")
        };
        let sized = |n: usize| DiffFile {
            diff: format!("@@ -1 +1 @@\n+{}\n", "x".repeat(n - 14)),
            ..DiffFile::modified("a.yaml")
        };
        let files = [sized(99), sized(100), small(2)];
        let served = served_diffs(&st, &files);
        assert_eq!(withheld(&served), [1]);
        assert_eq!(served[1].collapsed, Some(true));
        let current = State {
            version: "18.6.0".into(),
            ..st.clone()
        };
        assert!(withheld(&served_diffs(&current, &files)).is_empty());
        let huge = [sized(1_000), small(1)];
        for st in [&st, &current] {
            let served = served_diffs(st, &huge);
            assert_eq!(served[0].too_large, Some(true), "{}", st.version);
            assert_eq!(withheld(&served), [0]);
        }
        // A merge request of one file is always expanded: only too_large withholds it.
        assert!(withheld(&served_diffs(&st, &[sized(100)])).is_empty());
    }

    #[test]
    fn an_empty_diff_is_never_collapsed_and_counts_nothing() {
        let mut diffs: Vec<DiffFile> = (0..101).map(small).collect();
        diffs[100] = DiffFile {
            diff: String::new(),
            renamed_file: true,
            ..DiffFile::modified("renamed.yaml")
        };
        let served = served_diffs(&state("17.11.0"), &diffs);
        assert_eq!(
            served[100].collapsed,
            Some(false),
            "a pure rename has no lines"
        );
    }
}
