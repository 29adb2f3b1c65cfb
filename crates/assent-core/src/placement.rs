//! Where each finding's thread goes and what it links to (docs/contract.md#lines, docs/contract.md#diffnotes, docs/contract.md#file-links).
//!
//! [`place_findings`] decides, for every desired finding, a [`Placement`]: the diff line its
//! thread is created on (a GitLab DiffNote) and the file its bodies link to. It is pure: the
//! merge request's diff refs, web URL and per-file diffs are read by the caller, the lines of
//! the judged values come from the semantic diff ([`FindingSite`]).
//!
//! A finding is a DiffNote on a line exactly when all of these hold, and a general thread
//! otherwise:
//!
//! * it is about one value: not a grouped finding (subject `*`, `*2`, …), not a built-in finding
//!   (they have no site), and not a whole-file add or delete: the finding is about the file,
//!   and a thread on its first line would read as if that line were judged; a new or deleted
//!   file may also be shown collapsed, hiding the thread;
//! * the merge request reports its `diff_refs` and their head is the pinned source SHA (the
//!   diff GitLab validates the position against is the one the run judged);
//! * its value's line is known and is an added line of the file's diff (the new value of an
//!   add or a modify, `position[new_line]`) or a removed line (the old value of a delete,
//!   `position[old_line]`), as [`crate::unified_diff`] reads the diff; exactly one listed
//!   file has the finding's path as its new path.
//!
//! GitLab may still refuse a position (400): the executor then posts the general thread.
//!
//! Links: an add or a modify links to the file at the pinned source SHA, on the new value's
//! line; a delete to the file at the diff base SHA (where the value still exists), on the
//! old value's line; a whole-file change to the file without a line. Grouped and built-in
//! findings link nowhere. No link when the merge request's web URL or the path is not safe
//! to put in Markdown ([`crate::links`]).

use std::collections::BTreeMap;

use crate::commit_sha::CommitSha;
use crate::links::{WebUrl, blob_url};
use crate::model::{
    ChangeKind, DesiredState, DiffLine, DiffPosition, FileLink, FindingSite, MergeRequestInfo,
    Placement, Slot, is_group_subject,
};
use crate::unified_diff::{ChangedLines, changed_lines};

/// The merge request's `diff_refs`: the diff version a position must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRefs {
    /// `base_sha`.
    pub base_sha: CommitSha,
    /// `start_sha`.
    pub start_sha: CommitSha,
    /// `head_sha`.
    pub head_sha: CommitSha,
}

impl DiffRefs {
    /// The diff refs `mr` reports, when it reports all three.
    pub fn of(mr: &MergeRequestInfo) -> Option<DiffRefs> {
        Some(DiffRefs {
            base_sha: mr.base_sha.clone()?,
            start_sha: mr.start_sha.clone()?,
            head_sha: mr.diff_head_sha.clone()?,
        })
    }
}

/// One changed file of the merge request with the lines its diff adds and removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Path at the base.
    pub old_path: String,
    /// Path at the source.
    pub new_path: String,
    /// Its added and removed lines; `None` when the forge withheld the diff or its text is
    /// not understood (no finding of the file is placed on a line).
    pub lines: Option<ChangedLines>,
}

impl FileDiff {
    /// A changed file from the forge's listing: its unified `diff` text is read with
    /// [`changed_lines`]; a `withheld` diff (too large, collapsed) has no lines.
    pub fn from_listing(old_path: &str, new_path: &str, diff: &str, withheld: bool) -> FileDiff {
        FileDiff {
            old_path: old_path.to_owned(),
            new_path: new_path.to_owned(),
            lines: if withheld { None } else { changed_lines(diff) },
        }
    }
}

/// What [`place_findings`] needs to know about the merge request and the run.
#[derive(Debug, Clone, Copy)]
pub struct PlacementContext<'a> {
    /// The pinned source SHA: adds and modifies link to it; a position's head must be it.
    pub source_sha: &'a CommitSha,
    /// The pinned diff base SHA: deletes link to it.
    pub base_sha: &'a CommitSha,
    /// The merge request's diff refs; `None`: no finding is placed on a line.
    pub diff_refs: Option<&'a DiffRefs>,
    /// The merge request's changed files.
    pub files: &'a [FileDiff],
    /// The merge request's web URL (`<project>/-/merge_requests/<iid>`); `None` or unsafe:
    /// no file links.
    pub merge_request_url: Option<&'a str>,
}

/// The placement of every desired finding that has a diff position or a file link; the
/// others are absent (general threads without links).
pub fn place_findings(
    desired: &DesiredState,
    ctx: &PlacementContext<'_>,
) -> BTreeMap<Slot, Placement> {
    let project = ctx
        .merge_request_url
        .and_then(WebUrl::parse)
        .and_then(|mr| mr.project_of_merge_request());
    let refs = ctx.diff_refs.filter(|r| &r.head_sha == ctx.source_sha);
    let mut by_new_path: BTreeMap<&str, Vec<&FileDiff>> = BTreeMap::new();
    for file in ctx.files {
        by_new_path.entry(&file.new_path).or_default().push(file);
    }
    // A path listed twice is a listing nobody can place a line in.
    let file_of = |path: &str| match by_new_path.get(path).map(Vec::as_slice) {
        Some([file]) => Some(*file),
        _ => None,
    };

    let mut placements = BTreeMap::new();
    for finding in &desired.findings {
        if is_group_subject(&finding.slot.subject) {
            continue;
        }
        let Some(site) = desired.site(&finding.slot) else {
            continue;
        };
        let file = file_of(&site.file);
        let placement = Placement {
            position: refs.and_then(|refs| position(site, file?, refs)),
            link: project
                .as_ref()
                .and_then(|project| link(site, file, project, ctx)),
        };
        if placement != Placement::default() {
            placements.insert(finding.slot.clone(), placement);
        }
    }
    placements
}

/// The DiffNote position of `site` in `file`, when its line is one the diff changes.
fn position(site: &FindingSite, file: &FileDiff, refs: &DiffRefs) -> Option<DiffPosition> {
    if site.whole_file {
        return None;
    }
    let lines = file.lines.as_ref()?;
    let line = match site.kind {
        ChangeKind::Add | ChangeKind::Modify => {
            let line = site.new_line?;
            lines.is_added(line).then_some(DiffLine::New(line))?
        }
        ChangeKind::Delete => {
            let line = site.old_line?;
            lines.is_removed(line).then_some(DiffLine::Old(line))?
        }
    };
    Some(DiffPosition {
        base_sha: refs.base_sha.clone(),
        start_sha: refs.start_sha.clone(),
        head_sha: refs.head_sha.clone(),
        old_path: file.old_path.clone(),
        new_path: file.new_path.clone(),
        line,
    })
}

/// The file link of `site`: the source side for an add or a modify, the base side (under the
/// file's old path) for a delete.
fn link(
    site: &FindingSite,
    file: Option<&FileDiff>,
    project: &WebUrl,
    ctx: &PlacementContext<'_>,
) -> Option<FileLink> {
    let at_base = site.kind == ChangeKind::Delete;
    let (sha, path, line) = if at_base {
        let path = file.map_or(site.file.as_str(), |f| f.old_path.as_str());
        (ctx.base_sha, path, site.old_line)
    } else {
        (ctx.source_sha, site.file.as_str(), site.new_line)
    };
    let line = line.filter(|_| !site.whole_file);
    Some(FileLink {
        url: blob_url(project, sha, path, line)?,
        line,
        at_base,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Effect, Finding, GROUP_SUBJECT, Occurrence};

    const SOURCE: &str = "2222222222222222222222222222222222222222";

    fn sha(text: &str) -> CommitSha {
        CommitSha::parse(text).unwrap()
    }

    const BASE: &str = "1111111111111111111111111111111111111111";
    const START: &str = "3333333333333333333333333333333333333333";
    const MR_URL: &str = "https://gitlab.example.com/g/p/-/merge_requests/7";

    fn refs() -> DiffRefs {
        DiffRefs {
            base_sha: sha(BASE),
            start_sha: sha(START),
            head_sha: sha(SOURCE),
        }
    }

    fn slot(rule: &str, subject: &str) -> Slot {
        Slot {
            rule: rule.into(),
            subject: subject.into(),
        }
    }

    fn finding(slot: &Slot) -> Finding {
        Finding {
            slot: slot.clone(),
            effect: Effect::Challenge,
            occurrence: Occurrence::digest(slot.subject.as_bytes()),
            message: String::new(),
        }
    }

    fn site(
        file: &str,
        kind: ChangeKind,
        old_line: Option<usize>,
        new_line: Option<usize>,
    ) -> FindingSite {
        FindingSite {
            file: file.into(),
            kind,
            whole_file: false,
            old_line,
            new_line,
        }
    }

    fn desired(entries: Vec<(Slot, Option<FindingSite>)>) -> DesiredState {
        let findings = entries.iter().map(|(s, _)| finding(s)).collect();
        let sites = entries
            .into_iter()
            .filter_map(|(s, site)| Some((s, site?)))
            .collect();
        DesiredState::new(findings).with_sites(sites)
    }

    /// `f.yaml` (`old/f.yaml` at the base): line 3 changed, line 9 removed, lines 9–10 added.
    fn files() -> Vec<FileDiff> {
        vec![FileDiff::from_listing(
            "old/f.yaml",
            "f.yaml",
            "@@ -2,2 +2,2 @@\n a\n-b\n+B\n@@ -9 +9,2 @@\n-x\n+y\n+z\n",
            false,
        )]
    }

    fn place(
        desired: &DesiredState,
        files: &[FileDiff],
        refs: Option<&DiffRefs>,
    ) -> BTreeMap<Slot, Placement> {
        place_findings(
            desired,
            &PlacementContext {
                source_sha: &sha(SOURCE),
                base_sha: &sha(BASE),
                diff_refs: refs,
                files,
                merge_request_url: Some(MR_URL),
            },
        )
    }

    #[test]
    fn a_value_on_a_changed_line_is_a_diff_note_there_with_the_diff_refs() {
        let modify = slot("r", "f.yaml#/b");
        let delete = slot("r", "f.yaml#/x");
        let add = slot("r", "f.yaml#/z");
        let state = desired(vec![
            (
                modify.clone(),
                Some(site("f.yaml", ChangeKind::Modify, Some(3), Some(3))),
            ),
            (
                delete.clone(),
                Some(site("f.yaml", ChangeKind::Delete, Some(9), None)),
            ),
            (
                add.clone(),
                Some(site("f.yaml", ChangeKind::Add, None, Some(10))),
            ),
        ]);
        let placed = place(&state, &files(), Some(&refs()));
        let position = |s: &Slot| placed[s].position.clone().expect("a DiffNote");
        assert_eq!(
            position(&modify),
            DiffPosition {
                base_sha: sha(BASE),
                start_sha: sha(START),
                head_sha: sha(SOURCE),
                old_path: "old/f.yaml".into(),
                new_path: "f.yaml".into(),
                line: DiffLine::New(3),
            }
        );
        assert_eq!(position(&delete).line, DiffLine::Old(9));
        assert_eq!(position(&add).line, DiffLine::New(10));

        let link = |s: &Slot| placed[s].link.clone().expect("a link");
        assert_eq!(
            link(&modify).url,
            format!("https://gitlab.example.com/g/p/-/blob/{SOURCE}/f.yaml#L3")
        );
        assert_eq!(
            link(&delete),
            FileLink {
                url: format!("https://gitlab.example.com/g/p/-/blob/{BASE}/old/f.yaml#L9"),
                line: Some(9),
                at_base: true,
            }
        );
    }

    #[test]
    fn everything_else_is_a_general_thread() {
        let context_line = slot("r", "f.yaml#/a");
        let unknown_line = slot("r", "f.yaml#/b");
        let other_file = slot("r", "g.yaml#/b");
        let whole = slot("r", "f.yaml#");
        let grouped = slot("r", GROUP_SUBJECT);
        let builtin = slot("assent/parse-error", "f.yaml#");
        let mut whole_site = site("f.yaml", ChangeKind::Add, None, Some(3));
        whole_site.whole_file = true;
        let state = desired(vec![
            (
                context_line.clone(),
                Some(site("f.yaml", ChangeKind::Modify, Some(2), Some(2))),
            ),
            (
                unknown_line.clone(),
                Some(site("f.yaml", ChangeKind::Modify, Some(3), None)),
            ),
            (
                other_file.clone(),
                Some(site("g.yaml", ChangeKind::Modify, Some(3), Some(3))),
            ),
            (whole.clone(), Some(whole_site)),
            (
                grouped.clone(),
                Some(site("f.yaml", ChangeKind::Modify, Some(3), Some(3))),
            ),
            (builtin.clone(), None),
        ]);
        let placed = place(&state, &files(), Some(&refs()));
        for s in [&context_line, &unknown_line, &other_file, &whole] {
            assert_eq!(placed[s].position, None, "{s}");
            assert!(placed[s].link.is_some(), "{s} still links to its file");
        }
        assert_eq!(
            placed[&whole].link.as_ref().unwrap().url,
            format!("https://gitlab.example.com/g/p/-/blob/{SOURCE}/f.yaml"),
            "a whole-file change links to the file, no line"
        );
        assert!(!placed.contains_key(&grouped) && !placed.contains_key(&builtin));

        // The same value on a changed line is a DiffNote only with diff refs for the pinned
        // head, a diff that is understood, and one listing of its path.
        let on_line = desired(vec![(
            slot("r", "f.yaml#/b"),
            Some(site("f.yaml", ChangeKind::Modify, Some(3), Some(3))),
        )]);
        let positioned = |files: &[FileDiff], refs: Option<&DiffRefs>| {
            place(&on_line, files, refs)
                .values()
                .any(|p| p.position.is_some())
        };
        assert!(positioned(&files(), Some(&refs())));
        assert!(!positioned(&files(), None));
        let moved_on = DiffRefs {
            head_sha: crate::test_support::sha('4'),
            ..refs()
        };
        assert!(!positioned(&files(), Some(&moved_on)));
        let withheld = [FileDiff::from_listing(
            "f.yaml",
            "f.yaml",
            "@@ -3 +3 @@\n-b\n+B\n",
            true,
        )];
        assert!(!positioned(&withheld, Some(&refs())));
        let malformed = [FileDiff::from_listing(
            "f.yaml",
            "f.yaml",
            "@@ -1 +1 @@\n",
            false,
        )];
        assert!(!positioned(&malformed, Some(&refs())));
        let twice = [files(), files()].concat();
        assert!(!positioned(&twice, Some(&refs())));
    }

    #[test]
    fn no_link_without_a_safe_web_url() {
        let s = slot("r", "f.yaml#/b");
        let state = desired(vec![(
            s.clone(),
            Some(site("f.yaml", ChangeKind::Modify, Some(3), Some(3))),
        )]);
        for url in [
            None,
            Some("javascript:alert(1)"),
            Some("https://h/g/p/-/issues/7"),
        ] {
            let placed = place_findings(
                &state,
                &PlacementContext {
                    source_sha: &sha(SOURCE),
                    base_sha: &sha(BASE),
                    diff_refs: Some(&refs()),
                    files: &files(),
                    merge_request_url: url,
                },
            );
            assert_eq!(placed[&s].link, None, "{url:?}");
            assert!(
                placed[&s].position.is_some(),
                "the position does not need a URL"
            );
        }
    }
}
