//! Which lines a file's unified diff adds and removes (docs/contract.md#diffnotes).
//!
//! GitLab's merge request diffs listing gives each changed file's diff as unified-diff text
//! (the `diff` field: hunks, usually without the `---`/`+++` header). A finding is placed on
//! a line of the diff only when that line is an added line (the new value of an add or a
//! modify) or a removed line (the old value of a delete), so this module answers exactly
//! that, by line number on each side.
//!
//! The text comes from the forge and, through the file's content, from the merge request:
//! it is hostile input. [`changed_lines`] never panics and refuses anything it does not fully
//! understand (`None`): a hunk header that does not parse or whose numbers overflow, hunks
//! out of order, a hunk whose lines do not add up to its header's counts, a line that is not
//! context, addition, removal or `\ No newline at end of file`, text before the first hunk
//! that is not a git header. A refused diff means "no position" for every finding of that
//! file: the finding gets a general thread, as before DiffNotes existed. Guessing a line
//! would put a thread next to the wrong text.

/// Header lines `git diff` may print before the first hunk. GitLab's `diff` field starts at
/// the first hunk, but a forge that keeps the header is still understood.
const HEADER_PREFIXES: [&str; 15] = [
    "diff --git ",
    "index ",
    "--- ",
    "+++ ",
    "old mode ",
    "new mode ",
    "new file mode ",
    "deleted file mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "Binary files ",
];

/// The lines one file's diff adds (numbered at the source side) and removes (numbered at
/// the base side), as sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChangedLines {
    added: Vec<(usize, usize)>,
    removed: Vec<(usize, usize)>,
}

impl ChangedLines {
    /// Whether 1-based `line` of the source side is an added line.
    pub fn is_added(&self, line: usize) -> bool {
        contains(&self.added, line)
    }

    /// Whether 1-based `line` of the base side is a removed line.
    pub fn is_removed(&self, line: usize) -> bool {
        contains(&self.removed, line)
    }

    /// How many lines the diff adds.
    pub fn added_count(&self) -> usize {
        self.added.iter().map(|(a, b)| b - a + 1).sum()
    }

    /// How many lines the diff removes.
    pub fn removed_count(&self) -> usize {
        self.removed.iter().map(|(a, b)| b - a + 1).sum()
    }
}

fn contains(ranges: &[(usize, usize)], line: usize) -> bool {
    let after = ranges.partition_point(|&(start, _)| start <= line);
    after > 0 && ranges[after - 1].1 >= line
}

/// Appends `line` to sorted ranges, extending the last one when adjacent.
fn push_line(ranges: &mut Vec<(usize, usize)>, line: usize) {
    match ranges.last_mut() {
        Some((_, end)) if *end + 1 == line => *end = line,
        _ => ranges.push((line, line)),
    }
}

/// One parsed `@@ -a,b +c,d @@` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HunkHeader {
    old_start: usize,
    old_count: usize,
    new_start: usize,
    new_count: usize,
}

/// Parses `@@ -a[,b] +c[,d] @@[ section heading]`.
fn hunk_header(line: &str) -> Option<HunkHeader> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, tail) = rest.split_once(" @@")?;
    // After the closing `@@` only a section heading may follow, separated by a space.
    if !(tail.is_empty() || tail.starts_with(' ')) {
        return None;
    }
    let (old, new) = ranges.split_once(" +")?;
    let (old_start, old_count) = range(old)?;
    let (new_start, new_count) = range(new)?;
    Some(HunkHeader {
        old_start,
        old_count,
        new_start,
        new_count,
    })
}

/// `start[,count]`, count 1 when absent; a start of 0 only with a count of 0 (an empty side).
fn range(text: &str) -> Option<(usize, usize)> {
    let (start, count) = match text.split_once(',') {
        Some((start, count)) => (number(start)?, number(count)?),
        None => (number(text)?, 1),
    };
    if start == 0 && count != 0 {
        return None;
    }
    // Every line of the range, and the one after it, stays a real line number.
    let end = start.checked_add(count)?;
    (end <= u32::MAX as usize).then_some((start, count))
}

/// Decimal digits only (no sign, no spaces), within `u32` like any real line number.
fn number(text: &str) -> Option<usize> {
    if text.is_empty() || text.len() > 10 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = text.parse().ok()?;
    u32::try_from(n).ok().map(|n| n as usize)
}

/// The added and removed lines of `diff`, a file's unified diff, or `None` when the text is
/// not a diff this module fully understands (see the module docs). An empty text (a pure
/// rename, a mode change, a binary file) changes no line.
pub fn changed_lines(diff: &str) -> Option<ChangedLines> {
    let mut lines = ChangedLines::default();
    // The next line numbers on each side, and how many lines the open hunk still holds.
    let (mut old_line, mut new_line) = (0usize, 0usize);
    let (mut old_left, mut new_left) = (0usize, 0usize);
    let mut seen_hunk = false;
    // The text after the last `\n` is a line only when it is not empty.
    let body = diff.strip_suffix('\n').unwrap_or(diff);
    if body.is_empty() {
        return Some(lines);
    }
    for line in body.split('\n') {
        if old_left > 0 || new_left > 0 {
            match line.as_bytes().first() {
                Some(b' ') if old_left > 0 && new_left > 0 => {
                    old_left -= 1;
                    new_left -= 1;
                    old_line += 1;
                    new_line += 1;
                }
                Some(b'-') if old_left > 0 => {
                    push_line(&mut lines.removed, old_line);
                    old_left -= 1;
                    old_line += 1;
                }
                Some(b'+') if new_left > 0 => {
                    push_line(&mut lines.added, new_line);
                    new_left -= 1;
                    new_line += 1;
                }
                Some(b'\\') => {}
                _ => return None,
            }
            continue;
        }
        if line.starts_with('\\') && seen_hunk {
            continue;
        }
        if let Some(header) = hunk_header(line) {
            // The first line of each side the hunk covers; an empty side (`-5,0`) sits
            // after the line it names.
            let old_first = header.old_start + usize::from(header.old_count == 0);
            let new_first = header.new_start + usize::from(header.new_count == 0);
            // Hunks are in file order and never overlap, on both sides.
            if seen_hunk && (old_first < old_line || new_first < new_line) {
                return None;
            }
            seen_hunk = true;
            old_line = old_first;
            new_line = new_first;
            old_left = header.old_count;
            new_left = header.new_count;
            continue;
        }
        if seen_hunk || !HEADER_PREFIXES.iter().any(|p| line.starts_with(p)) {
            return None;
        }
    }
    (old_left == 0 && new_left == 0).then_some(lines)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn added(lines: &ChangedLines) -> Vec<usize> {
        (1..=200).filter(|&l| lines.is_added(l)).collect()
    }

    fn removed(lines: &ChangedLines) -> Vec<usize> {
        (1..=200).filter(|&l| lines.is_removed(l)).collect()
    }

    #[test]
    fn a_modified_value_is_a_removed_and_an_added_line() {
        let diff = "@@ -1,3 +1,3 @@\n topics:\n   - name: orders.events.v1\n-    retention_days: 30\n+    retention_days: 7\n";
        let lines = changed_lines(diff).expect("a diff");
        assert_eq!(added(&lines), [3]);
        assert_eq!(removed(&lines), [3]);
        assert_eq!((lines.added_count(), lines.removed_count()), (1, 1));
    }

    #[test]
    fn numbers_follow_each_side_across_hunks() {
        let diff = "\
@@ -2,4 +2,5 @@ section heading
 a
-b
+B
+B2
 c
 d
@@ -10,2 +11,0 @@
-x
-y
@@ -20,0 +19,2 @@
+p
+q
\\ No newline at end of file
";
        let lines = changed_lines(diff).expect("a diff");
        assert_eq!(added(&lines), [3, 4, 19, 20]);
        assert_eq!(removed(&lines), [3, 10, 11]);
        assert!(!lines.is_added(2) && !lines.is_removed(2), "context");
    }

    #[test]
    fn whole_file_add_and_delete() {
        let lines = changed_lines("@@ -0,0 +1,3 @@\n+a\n+b\n+c\n").unwrap();
        assert_eq!((added(&lines), removed(&lines)), (vec![1, 2, 3], vec![]));
        let lines = changed_lines("@@ -1,2 +0,0 @@\n-a\n-b").unwrap();
        assert_eq!((added(&lines), removed(&lines)), (vec![], vec![1, 2]));
        let lines = changed_lines("@@ -1 +1 @@\n-a\n+b\n").unwrap();
        assert_eq!((added(&lines), removed(&lines)), (vec![1], vec![1]));
    }

    #[test]
    fn git_headers_before_the_first_hunk_are_skipped_and_nothing_else() {
        let diff = "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(added(&changed_lines(diff).unwrap()), [1]);
        assert_eq!(changed_lines(""), Some(ChangedLines::default()));
        assert_eq!(
            changed_lines("Binary files a/x and b/x differ\n"),
            Some(ChangedLines::default())
        );
        assert_eq!(changed_lines("hello\n@@ -1 +1 @@\n-a\n+b\n"), None);
    }

    #[test]
    fn anything_not_fully_understood_is_refused() {
        for bad in [
            // The fake GitLab's placeholder: a header whose lines are missing.
            "@@ -1 +1 @@\n",
            "@@ -1,2 +1,2 @@\n a\n",
            "@@ -1 +1 @@\n-a\n+b\n+c\n",
            "@@ -1 +1 @@\n-a\n+b\n extra context\n",
            "@@ -1 +1 @@\n-a\n\n+b\n",
            "@@ -1 +1 @@\n*a\n+b\n",
            "@@ -1 +1\n-a\n+b\n",
            "@@ -1 +1 @@x\n-a\n+b\n",
            "@@ -a +1 @@\n-a\n+b\n",
            "@@ --1 +1 @@\n-a\n+b\n",
            "@@ -0,1 +1 @@\n-a\n+b\n",
            "@@ -1 +99999999999 @@\n-a\n+b\n",
            "@@ -4294967295,2 +1 @@\n-a\n-b\n+c\n",
            // Out of order or overlapping hunks.
            "@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n",
            "@@ -1,2 +1,2 @@\n-a\n-b\n+c\n+d\n@@ -2 +2 @@\n-x\n+y\n",
            // Text after a complete hunk that is not a hunk.
            "@@ -1 +1 @@\n-a\n+b\ntrailing\n",
            "\\ No newline at end of file\n@@ -1 +1 @@\n-a\n+b\n",
        ] {
            assert_eq!(changed_lines(bad), None, "{bad:?}");
        }
    }

    /// One line of a generated hunk body.
    #[derive(Debug, Clone, Copy)]
    enum Op {
        Context,
        Add,
        Remove,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![Just(Op::Context), Just(Op::Add), Just(Op::Remove)]
    }

    proptest! {
        /// A diff written from known operations reads back as exactly the lines they add
        /// and remove, on each side.
        #[test]
        fn generated_diffs_read_back_exactly(
            hunks in proptest::collection::vec(
                (0usize..5, proptest::collection::vec(op(), 1..12)),
                1..6,
            )
        ) {
            let mut text = String::new();
            let (mut old_line, mut new_line) = (1usize, 1usize);
            let (mut want_added, mut want_removed) = (Vec::new(), Vec::new());
            for (gap, ops) in &hunks {
                old_line += gap;
                new_line += gap;
                let old_count = ops.iter().filter(|o| !matches!(o, Op::Add)).count();
                let new_count = ops.iter().filter(|o| !matches!(o, Op::Remove)).count();
                let start = |line: usize, count: usize| if count == 0 { line - 1 } else { line };
                text.push_str(&format!(
                    "@@ -{},{old_count} +{},{new_count} @@\n",
                    start(old_line, old_count),
                    start(new_line, new_count)
                ));
                for o in ops {
                    match o {
                        Op::Context => {
                            text.push_str(" same\n");
                            old_line += 1;
                            new_line += 1;
                        }
                        Op::Add => {
                            text.push_str("+new\n");
                            want_added.push(new_line);
                            new_line += 1;
                        }
                        Op::Remove => {
                            text.push_str("-old\n");
                            want_removed.push(old_line);
                            old_line += 1;
                        }
                    }
                }
            }
            let lines = changed_lines(&text).expect("a generated diff parses");
            let max = old_line.max(new_line) + 2;
            let got_added: Vec<usize> = (1..max).filter(|&l| lines.is_added(l)).collect();
            let got_removed: Vec<usize> = (1..max).filter(|&l| lines.is_removed(l)).collect();
            prop_assert_eq!(got_added, want_added);
            prop_assert_eq!(got_removed, want_removed);
        }

        /// Whatever the text, the parser answers (never panics), and an answer never claims
        /// more lines than the text has.
        #[test]
        fn hostile_text_never_panics(text in "(@@ -[0-9,]{0,6} \\+[0-9,]{0,6} @@[ a-z]{0,3}\n|[ +\\-\\\\@a-z]{0,6}\n){0,12}") {
            if let Some(lines) = changed_lines(&text) {
                let line_count = text.lines().count();
                prop_assert!(lines.added_count() + lines.removed_count() <= line_count);
            }
        }
    }
}
