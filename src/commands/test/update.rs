//! `assent test --update`: rewriting a case's `expect:` block from its result, the rest of
//! the file, comments included, kept byte for byte. What may be rewritten is decided by the
//! runner ([`super::runner`]); this module only writes, and only what reads back as the
//! result.

use std::path::Path;

use crate::commands::local_tree::write_file_no_follow;
use crate::core::policy_cases::{
    Actual, expect_block, mismatches, parse_case, replace_expect_block,
};

/// Rewrites the case's `expect:` block, after checking the new text reads back as `actual`.
/// The error is the `error:` line's text, naming the case as `shown`.
pub fn update_case(path: &Path, text: &str, shown: &str, actual: &Actual) -> Result<(), String> {
    let new_text = replace_expect_block(text, &expect_block(actual));
    let reread = parse_case(&new_text).map_err(|b| {
        format!(
            "{}: cannot update: the rewritten `expect:` block does not read back; edit it by hand",
            b.at(shown)
        )
    })?;
    if !mismatches(reread.expect.as_ref(), actual).is_empty() {
        return Err(format!(
            "{shown}: cannot update: the rewritten `expect:` block does not read back; edit it by hand"
        ));
    }
    write_file_no_follow(path, new_text.as_bytes()).map_err(|e| format!("{shown}: {e}"))
}
