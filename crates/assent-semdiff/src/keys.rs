//! Map keys that other readers of the same file would take for another key.
//!
//! assent compares keys byte for byte, but the programs that read a registry after the merge
//! do not all do so. Go's `encoding/json` (and `ghodss/yaml`, `sigs.k8s.io/yaml`, which go
//! through it) and Go's TOML decoders match a key to a struct field case-insensitively under
//! Unicode simple case folding, so `"RETENTION_DAYS"` or `"retention_dayſ"` (U+017F folds to
//! `s`) beside `"retention_days"` sets the same field, the last one winning. And a key holding
//! an invisible character (a byte-order mark, a zero-width space, a bidi control) looks like
//! the key without it, which no reader finds. Both are refused, in every format
//! (`docs/policies.md`, "What assent refuses to parse, and why").

use std::borrow::Cow;
use std::sync::Arc;

/// An interned map key (shared: keys repeat in every record).
pub type Key = Arc<str>;

/// The key every reader that matches keys case-insensitively takes `key` for.
///
/// Lowercase, then uppercase, then lowercase again: one case mapping is not enough (`ẞ`
/// lowercases to `ß`, which uppercases to `SS`), and this round trip puts every member of a
/// Unicode simple case-folding orbit (what Go's `bytes.EqualFold` and `encoding/json` compare
/// by) on the same text. It also folds some pairs Go keeps apart (`ß` and `ss`): refusing a
/// few more keys than needed is the safe side. ASCII keys without capitals, nearly all keys,
/// are their own fold and cost no allocation.
pub(super) fn folded(key: &Key) -> Key {
    match fold(key) {
        Cow::Borrowed(_) => Key::clone(key),
        Cow::Owned(text) => Key::from(text),
    }
}

fn fold(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return match text.bytes().any(|b| b.is_ascii_uppercase()) {
            true => Cow::Owned(text.to_ascii_lowercase()),
            false => Cow::Borrowed(text),
        };
    }
    let once = text.to_lowercase().to_uppercase().to_lowercase();
    match once == text {
        true => Cow::Borrowed(text),
        false => Cow::Owned(once),
    }
}

/// The error for `key`, which folds to the same text as `earlier` (on `line`, when known).
pub(super) fn folds_like(key: &str, earlier: &str, line: Option<usize>) -> String {
    let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
    format!(
        "keys {earlier:?}{at} and {key:?} differ only in letter case: readers that match keys \
         case-insensitively (Go's encoding/json, ghodss/yaml, Go's TOML decoders) take them for \
         one key and read the value of whichever comes last"
    )
}

/// The first invisible character in `key`, if any: a format character (Unicode category
/// `Cf`: byte-order mark, zero-width space and joiners, bidi controls, soft hyphen, …) or
/// another default-ignorable code point (variation selectors, Hangul fillers, tag
/// characters), none of which shows when the key is displayed.
pub(super) fn invisible_char(key: &str) -> Option<char> {
    key.chars().find(|&c| !c.is_ascii() && is_invisible(c))
}

/// The error for `key`, which holds the invisible character `found`.
pub(super) fn invisible_in_key(key: &str, found: char) -> String {
    let visible: String = key.chars().filter(|&c| !is_invisible(c)).collect();
    format!(
        "key {key:?} holds the invisible character U+{:04X}: it displays as {visible:?}, but a \
         reader looking up {visible:?} does not find it",
        u32::from(found)
    )
}

/// Whether `c` is a format character or default-ignorable: Unicode 15's category `Cf` (taken
/// from the Unicode Character Database) joined with the `Default_Ignorable_Code_Point`
/// property. A test checks the table against Python's `unicodedata` where it is installed.
fn is_invisible(c: char) -> bool {
    let c = u32::from(c);
    INVISIBLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Sorted, disjoint, inclusive ranges.
const INVISIBLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn fold_of(text: &str) -> String {
        folded(&Key::from(text)).to_string()
    }

    #[test]
    fn case_variants_and_unicode_look_alikes_fold_together() {
        for (a, b) in [
            ("retention_days", "RETENTION_DAYS"),
            ("retention_days", "Retention_Days"),
            ("retention_days", "retention_day\u{17f}"), // ſ, LATIN SMALL LETTER LONG S
            ("kafka", "\u{212a}afka"),                  // K, KELVIN SIGN
            ("σ", "ς"),
            ("ß", "ẞ"),
            ("ǆ", "ǅ"),
        ] {
            assert_eq!(fold_of(a), fold_of(b), "{a} / {b}");
        }
        assert_ne!(fold_of("retention_days"), fold_of("retention_day"));
        assert_ne!(fold_of("a_b"), fold_of("a-b"));
    }

    #[test]
    fn lowercase_ascii_is_its_own_fold_without_allocating() {
        let key = Key::from("orders.events.v1");
        assert!(std::sync::Arc::ptr_eq(&folded(&key), &key));
        let key = Key::from("ünïcode");
        assert!(std::sync::Arc::ptr_eq(&folded(&key), &key));
    }

    #[test]
    fn invisible_characters_are_found_and_named() {
        for c in [
            '\u{feff}',
            '\u{200b}',
            '\u{200d}',
            '\u{202e}',
            '\u{2066}',
            '\u{00ad}',
            '\u{180e}',
            '\u{fe0f}',
            '\u{e0041}',
        ] {
            let key = format!("retention{c}_days");
            assert_eq!(invisible_char(&key), Some(c), "U+{:04X}", u32::from(c));
        }
        for key in ["retention_days", "名前", "naïve", "emoji🙂", "tab\there"] {
            assert_eq!(invisible_char(key), None, "{key}");
        }
        assert_eq!(
            invisible_in_key("retention\u{200b}_days", '\u{200b}'),
            "key \"retention\\u{200b}_days\" holds the invisible character U+200B: it displays \
             as \"retention_days\", but a reader looking up \"retention_days\" does not find it"
        );
    }

    #[test]
    fn the_table_is_sorted_and_disjoint() {
        assert!(INVISIBLE.iter().all(|(lo, hi)| lo <= hi));
        assert!(INVISIBLE.windows(2).all(|w| w[0].1 < w[1].0));
    }
}
