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
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            script.push((Op::Add, b[j]));
            j += 1;
        } else {
            script.push((Op::Remove, a[i]));
            i += 1;
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
