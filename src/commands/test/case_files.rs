//! Finding and reading the case files of `REPO/.assent/tests/`, as hostile input
//! ([`crate::commands::local_tree`]): a link, a special file or a file over
//! [`MAX_FILE_BYTES`] is a broken case, never opened or read beyond the limit. A case holds
//! its files inline: nothing else is read.

use std::path::Path;

use crate::commands::lint::shown_path;
use crate::commands::local_tree::{
    ListError, MAX_FILE_BYTES, ReadError, RefusedEntry, list_folder, read_file,
};
use crate::core::policy_cases::{BrokenCase, TestCase, parse_case};
use crate::engine::run::inputs::{TEST_DIR, is_policy_file_name};

/// Reads and parses the case file at repository path `case_path` of `repo`, under the
/// limits of [`crate::commands::local_tree`] (no link, regular file, at most
/// [`MAX_FILE_BYTES`]).
pub fn load_case(repo: &Path, case_path: &str) -> Result<(String, TestCase), BrokenCase> {
    let bytes = read_file(repo, case_path, MAX_FILE_BYTES).map_err(|e| BrokenCase {
        line: None,
        reason: match e {
            ReadError::Refused(reason) => reason,
            ReadError::Io(e) => e,
        },
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        BrokenCase {
            line: Some(valid.iter().filter(|&&b| b == b'\n').count() + 1),
            reason: "not valid UTF-8".to_owned(),
        }
    })?;
    let case = parse_case(&text)?;
    Ok((text, case))
}

/// Repository-relative paths of the case files, sorted, and the entries of the folder that
/// are refused (links, special files, …), each a broken case.
pub fn list_case_files(repo: &Path) -> Result<(Vec<String>, Vec<RefusedEntry>), String> {
    match list_folder(repo, TEST_DIR, is_policy_file_name) {
        Ok(listing) => Ok((listing.files, listing.refused)),
        Err(ListError::Missing) => Err(format!(
            "{} does not exist: create it and add test cases (see docs/policies.md)",
            shown_path(repo, TEST_DIR)
        )),
        Err(ListError::Refused(RefusedEntry { path, reason })) => {
            Err(format!("{}: {reason}", shown_path(repo, &path)))
        }
        Err(ListError::Io(message)) => Err(shown_path(repo, &message)),
    }
}
