//! What the text of an on/off setting means, wherever it comes from (a CI variable such as
//! `ASSENT_APPROVE`, `ASSENT_DOCTOR_STRICT` or `ASSENT_ALLOW_HTTP`, or a job's `variables:` that
//! doctor reads), so that one spelling means the same thing everywhere.
//!
//! CI users write `1`, `true` and `yes` interchangeably; the accepted spellings are the ones
//! clap's `BoolishValueParser` accepts, compared without case or surrounding white space.
//! Anything else is no value at all (`None`): a caller decides whether that is an error, and
//! names the setting in it with [`SPELLINGS`].

/// The accepted spellings, for an error message.
pub const SPELLINGS: &str = "1, true, yes, on, y or t for on; 0, false, no, off, n or f for off";

/// `Some(true)` or `Some(false)` for an accepted spelling, `None` for anything else.
pub fn parse_switch(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Some(true),
        "0" | "false" | "no" | "off" | "n" | "f" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_spellings_are_accepted_in_any_case() {
        for on in ["1", "true", "TRUE", "Yes", " on ", "y", "T"] {
            assert_eq!(parse_switch(on), Some(true), "{on:?}");
        }
        for off in ["0", "false", "False", "NO", "off\n", "n", "f"] {
            assert_eq!(parse_switch(off), Some(false), "{off:?}");
        }
        for neither in ["", "2", "ture", "enabled", "yes please", "11", "-1"] {
            assert_eq!(parse_switch(neither), None, "{neither:?}");
        }
    }

    #[test]
    fn every_spelling_named_in_the_message_means_what_the_message_says() {
        for (part, meaning) in SPELLINGS.split("; ").zip([true, false]) {
            let words = part
                .strip_suffix(if meaning { " for on" } else { " for off" })
                .expect("each part ends with its meaning");
            for word in words.split(", ").flat_map(|w| w.split(" or ")) {
                assert_eq!(parse_switch(word), Some(meaning), "{word:?}");
            }
        }
    }
}
