//! Unified diffs of two texts, as GitLab's merge request diffs listing gives them (the
//! `diff` field: hunks with three lines of context, no `---`/`+++` header), so tests can
//! seed the fake with the diff a real push would show.

/// What a line of the edit script does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Remove,
    Add,
}

/// Lines of context around each change, as `git diff` prints by default.
const CONTEXT: usize = 3;

/// The unified diff from `old` to `new` (empty when equal). A line-based longest common
/// subsequence: meant for the small files of tests, quadratic in their line counts.
pub fn unified_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut script: Vec<(Op, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            script.push((Op::Keep, a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Removals before additions, as `git diff` prints a replaced line.
            script.push((Op::Remove, a[i]));
            i += 1;
        } else {
            script.push((Op::Add, b[j]));
            j += 1;
        }
    }
    hunks(&script)
}

/// The hunks of an edit script: each change with up to [`CONTEXT`] kept lines around it,
/// changes closer than twice that merged into one hunk.
fn hunks(script: &[(Op, &str)]) -> String {
    let changed: Vec<usize> = (0..script.len())
        .filter(|&k| script[k].0 != Op::Keep)
        .collect();
    let mut out = String::new();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k + 1 < changed.len() && changed[k + 1] <= end + 2 * CONTEXT + 1 {
            k += 1;
            end = changed[k];
        }
        let end = (end + CONTEXT + 1).min(script.len());
        // Line numbers of the hunk's first line on each side.
        let old_before = script[..start]
            .iter()
            .filter(|(o, _)| *o != Op::Add)
            .count();
        let new_before = script[..start]
            .iter()
            .filter(|(o, _)| *o != Op::Remove)
            .count();
        let body = &script[start..end];
        let old_count = body.iter().filter(|(o, _)| *o != Op::Add).count();
        let new_count = body.iter().filter(|(o, _)| *o != Op::Remove).count();
        let first = |before: usize, count: usize| if count == 0 { before } else { before + 1 };
        out.push_str(&format!(
            "@@ -{},{old_count} +{},{new_count} @@\n",
            first(old_before, old_count),
            first(new_before, new_count)
        ));
        for (op, line) in body {
            let sign = match op {
                Op::Keep => ' ',
                Op::Remove => '-',
                Op::Add => '+',
            };
            out.push(sign);
            out.push_str(line);
            out.push('\n');
        }
        k += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::unified_diff;

    #[test]
    fn a_changed_line_is_one_hunk_with_three_lines_of_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(
            unified_diff(old, new),
            "@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn added_and_deleted_files_and_equal_texts() {
        assert_eq!(unified_diff("", "x\ny\n"), "@@ -0,0 +1,2 @@\n+x\n+y\n");
        assert_eq!(unified_diff("x\n", ""), "@@ -1,1 +0,0 @@\n-x\n");
        assert_eq!(unified_diff("same\n", "same\n"), "");
    }

    #[test]
    fn changes_far_apart_are_separate_hunks() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("19\n", "nineteen\n");
        assert_eq!(unified_diff(&old, &new).matches("@@ -").count(), 2);
    }
}
