//! A change set as what each path holds on each side (docs/policies.md, "Renames").
//!
//! A consumer reads a registry by path: moving `clusters/prod/topics.yaml` to another
//! folder, even unchanged, removes every prod topic for whoever reads the old path and adds
//! them for whoever reads the new one. So a rename (`old_path` ≠ `new_path`, a case-only one
//! included: paths are compared byte for byte, as git and every case-sensitive checkout do)
//! is judged as two path changes: the old path's content deleted (base → absent) under the
//! old path's rules, and the new path's added (absent → source) under the new path's, each
//! then judged as any file is (a rule that only judges `modify`, or whose `when` says so,
//! still does not care).
//!
//! GitLab lists a rename once, and a rename's paths are git's rename detection at work
//! (Gitaly's diff of the two commits with renames found, as `Gitlab::Git::Diff` presents
//! it in `lib/gitlab/git/diff.rb`): git pairs a deleted path with an added one, so the old
//! path is absent at the source and the new path absent at the base, unless the listing
//! also lists that path (a rewrite broken into a delete and an add, then paired: the diff
//! lists the new path as deleted too, or the old path as added). [`path_changes`] therefore
//! merges every entry naming a path into one change of that path: a rename onto a path the
//! listing also deletes is a `modify` of that path from its base content to the renamed
//! file's, never an add beside a delete under one subject.
//!
//! Subjects stay those of each path (`<old path>#…` for what the rename deletes, `<new
//! path>#…` for what it adds), so a rerun on the same content gives the same slots and
//! occurrences.

use std::collections::BTreeMap;

use super::{ChangedFileInput, FileContent};

/// One change per path a rename touches: each rename split into its old path's deletion and
/// its new path's addition, each merged with an entry of the listing that names the same path
/// (its base from the entry that has the path at the base, its source from the one that has
/// it at the source). Every other entry passes unchanged. A side read as unreadable on either
/// entry stays unreadable (never a guess). Sorted by path.
pub(super) fn path_changes(files: Vec<ChangedFileInput>) -> Vec<ChangedFileInput> {
    let (mut out, renames): (Vec<ChangedFileInput>, Vec<ChangedFileInput>) =
        files.into_iter().partition(|f| f.old_path == f.new_path);
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (i, file) in out.iter().enumerate() {
        index.entry(file.new_path.clone()).or_insert(i);
    }
    for file in renames {
        let deletion = ChangedFileInput {
            old_path: file.old_path.clone(),
            new_path: file.old_path,
            base: file.base,
            source: FileContent::Absent,
        };
        let addition = ChangedFileInput {
            old_path: file.new_path.clone(),
            new_path: file.new_path,
            base: FileContent::Absent,
            source: file.source,
        };
        for half in [deletion, addition] {
            match index.get(&half.new_path) {
                Some(&i) => {
                    let earlier = std::mem::replace(&mut out[i], half);
                    let half = &mut out[i];
                    half.base = merge_side(
                        earlier.base,
                        std::mem::replace(&mut half.base, FileContent::Absent),
                    );
                    half.source = merge_side(
                        earlier.source,
                        std::mem::replace(&mut half.source, FileContent::Absent),
                    );
                }
                None => {
                    index.insert(half.new_path.clone(), out.len());
                    out.push(half);
                }
            }
        }
    }
    // By path, entries of one path in the listing's order: the same change set gives the
    // same list whatever order the halves were made in.
    out.sort_by(|a, b| a.new_path.cmp(&b.new_path));
    out
}

/// One side of a path named by two entries: what one of them read, or unreadable when
/// either could not read it or the two read different bytes at the same SHA.
fn merge_side(a: FileContent, b: FileContent) -> FileContent {
    match (a, b) {
        (FileContent::Absent, side) | (side, FileContent::Absent) => side,
        (FileContent::Unreadable(reason), _) | (_, FileContent::Unreadable(reason)) => {
            FileContent::Unreadable(reason)
        }
        (FileContent::Present(a), FileContent::Present(b)) if a == b => FileContent::Present(a),
        (FileContent::Present(_), FileContent::Present(_)) => FileContent::Unreadable(
            "the merge request's diff lists this path twice and its two reads at the same SHA \
             differ"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(text: &str) -> FileContent {
        FileContent::Present(text.as_bytes().to_vec())
    }

    fn change(old: &str, new: &str, base: FileContent, source: FileContent) -> ChangedFileInput {
        ChangedFileInput {
            old_path: old.into(),
            new_path: new.into(),
            base,
            source,
        }
    }

    #[test]
    fn a_rename_is_its_old_paths_deletion_and_its_new_paths_addition() {
        let split = path_changes(vec![change("a.yaml", "b.yaml", present("x"), present("y"))]);
        assert_eq!(
            split,
            vec![
                change("a.yaml", "a.yaml", present("x"), FileContent::Absent),
                change("b.yaml", "b.yaml", FileContent::Absent, present("y")),
            ]
        );
        // Case only: two paths for git and for every case-sensitive checkout.
        let split = path_changes(vec![change("A.yaml", "a.yaml", present("x"), present("x"))]);
        assert_eq!(split.len(), 2);
    }

    #[test]
    fn a_rename_onto_a_path_the_listing_also_deletes_is_that_paths_modify() {
        let split = path_changes(vec![
            change("a.yaml", "b.yaml", present("a"), present("a2")),
            change("b.yaml", "b.yaml", present("b"), FileContent::Absent),
        ]);
        assert_eq!(
            split,
            vec![
                change("a.yaml", "a.yaml", present("a"), FileContent::Absent),
                change("b.yaml", "b.yaml", present("b"), present("a2")),
            ]
        );
    }

    #[test]
    fn two_entries_that_disagree_about_a_side_make_it_unreadable() {
        let split = path_changes(vec![
            change("a.yaml", "b.yaml", present("a"), present("a2")),
            change("c.yaml", "b.yaml", present("c"), present("c2")),
        ]);
        assert!(
            matches!(split[1].source, FileContent::Unreadable(_)),
            "{split:?}"
        );
        // Two entries of one path that no rename names stay apart, as listed.
        let listed = vec![
            change("a.yaml", "a.yaml", present("a"), present("b")),
            change(
                "a.yaml",
                "a.yaml",
                FileContent::Unreadable("403".into()),
                present("b"),
            ),
        ];
        assert_eq!(path_changes(listed.clone()), listed);
        let split = path_changes(vec![
            change(
                "a.yaml",
                "b.yaml",
                present("a"),
                FileContent::Unreadable("403".into()),
            ),
            change("b.yaml", "b.yaml", present("b"), FileContent::Absent),
        ]);
        assert_eq!(split[1].source, FileContent::Unreadable("403".into()));
    }
}
