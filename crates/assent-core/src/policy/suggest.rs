//! "Did you mean …?": the known name closest to a misspelt one.
//!
//! Used for every name a policy author types and assent checks against a fixed list: document
//! fields (`efect`), effects (`challange`), change kinds, roles, CEL variables (`nwe`), `mr`
//! fields and CEL functions. The distance is the optimal string alignment distance (edits are
//! an insertion, a deletion, a substitution or a swap of two neighbouring characters, so `nwe`
//! is one edit from `new`), compared case-insensitively with `-` and `_` alike, so that
//! `Effect`, `min-role` and `group-above` find their names too.
//!
//! A suggestion is made only when it is close: at most a third of the typed name's length
//! (at least one edit), so a name that resembles nothing gets no suggestion rather than a
//! misleading one. Ties go to the candidate listed first.

/// Longest name compared, in characters: the distance is quadratic in the lengths, and a
/// name this long is no misspelling of a short keyword.
const MAX_COMPARED_CHARS: usize = 64;

/// The candidate closest to `typed`, when one is close enough (see the module docs). `typed`
/// itself is never suggested.
pub fn closest<'a>(typed: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let typed_chars = normalised(typed);
    if typed_chars.is_empty() || typed_chars.len() > MAX_COMPARED_CHARS {
        return None;
    }
    let allowed = (typed_chars.len() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for &candidate in candidates {
        if candidate == typed {
            continue;
        }
        let distance = osa_distance(&typed_chars, &normalised(candidate));
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// ` (did you mean `name`?)` for the closest candidate, or an empty string.
pub fn hint(typed: &str, candidates: &[&str]) -> String {
    closest(typed, candidates)
        .map(|name| format!(" (did you mean `{name}`?)"))
        .unwrap_or_default()
}

fn normalised(name: &str) -> Vec<char> {
    name.chars()
        .take(MAX_COMPARED_CHARS + 1)
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// Optimal string alignment distance between `a` and `b`.
fn osa_distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    // Three rows: the one before the previous (for swaps), the previous, the current.
    let mut before: Vec<usize> = vec![0; width];
    let mut previous: Vec<usize> = (0..width).collect();
    let mut current: Vec<usize> = vec![0; width];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: [&str; 7] = [
        "id",
        "match",
        "when",
        "effect",
        "message",
        "assenters",
        "group_above",
    ];

    #[test]
    fn close_misspellings_find_their_name() {
        let variables = ["old", "new", "kind", "file", "pointer", "entry", "mr"];
        assert_eq!(closest("nwe", &variables), Some("new"));
        assert_eq!(closest("neww", &variables), Some("new"));
        assert_eq!(closest("pionter", &variables), Some("pointer"));
        assert_eq!(closest("efect", &FIELDS), Some("effect"));
        assert_eq!(closest("Effect", &FIELDS), Some("effect"));
        assert_eq!(closest("group-above", &FIELDS), Some("group_above"));
        assert_eq!(closest("groupAbove", &FIELDS), Some("group_above"));
        assert_eq!(
            closest("challange", &["comment", "challenge", "block"]),
            Some("challenge")
        );
        assert_eq!(
            closest("modfy", &["add", "modify", "delete"]),
            Some("modify")
        );
    }

    #[test]
    fn distant_names_get_no_suggestion() {
        assert_eq!(closest("severity", &FIELDS), None);
        assert_eq!(closest("x", &["old", "new"]), None);
        assert_eq!(closest("", &FIELDS), None);
        assert_eq!(
            closest("when", &FIELDS),
            None,
            "a known name is not suggested"
        );
        assert_eq!(hint("severity", &FIELDS), "");
        assert_eq!(hint("whne", &FIELDS), " (did you mean `when`?)");
        // A hostile, very long name is not compared at all.
        assert_eq!(closest(&"e".repeat(10_000), &FIELDS), None);
    }

    #[test]
    fn the_distance_counts_a_swap_as_one_edit() {
        let d = |a: &str, b: &str| {
            osa_distance(
                &a.chars().collect::<Vec<_>>(),
                &b.chars().collect::<Vec<_>>(),
            )
        };
        assert_eq!(d("nwe", "new"), 1);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("abc", ""), 3);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("same", "same"), 0);
        assert_eq!(d("ca", "abc"), 3, "OSA does not edit a swapped pair again");
    }
}
