//! DiffNote positions (`POST …/discussions` with `position[…]`), validated as GitLab does.
//!
//! GitLab accepts a `text` position only when it names the MR's current `diff_refs`
//! (`base_sha`, `start_sha`, `head_sha`) and a line of a hunk of that version's diff of the
//! file named by `old_path` and `new_path`: `new_line` alone an added line, `old_line` alone
//! a removed line, both an unchanged (context) line with those numbers on each side.
//! Anything else leaves the note without a line code, which GitLab answers with 400
//! `{"message":"400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid
//! line code\"]}"}` and no note. Missing required parameters are Grape's 400
//! `{"error":"position[base_sha] is missing"}`; a `position_type` other than `text` or
//! `image` is `{"error":"position[position_type] does not have a valid value"}`.
//!
//! The line code is `<hash of new_path>_<old_pos>_<new_pos>`, the two line counters of the
//! diff row (an added row carries the old side's counter, a removed row the new side's), as
//! GitLab's `Gitlab::Git.diff_line_code`; the hash is 40 hex digits of SHA-256 here, where
//! GitLab uses SHA-1 (nothing reads it but people).

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::http::Response;
use crate::model::{MergeRequest, NotePosition};

/// GitLab's body for a position that is not a line of the MR's diff.
pub const INVALID_LINE_CODE: &str =
    "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}";

/// What a row of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// A line both sides have.
    Context,
    /// A line the new side adds.
    Added,
    /// A line the old side had.
    Removed,
}

/// One line of a file's diff with the line counters of both sides at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffRow {
    /// What the row is.
    pub kind: RowKind,
    /// The old side's line counter at the row.
    pub old_pos: u64,
    /// The new side's line counter at the row.
    pub new_pos: u64,
}

/// The rows of a unified diff, or `None` when it does not parse (a header without its
/// lines, a count that does not add up, a stray line).
pub fn diff_rows(diff: &str) -> Option<Vec<DiffRow>> {
    let mut rows = Vec::new();
    let (mut old, mut new, mut old_left, mut new_left) = (0u64, 0u64, 0u64, 0u64);
    let body = diff.strip_suffix('\n').unwrap_or(diff);
    if body.is_empty() {
        return Some(rows);
    }
    for line in body.split('\n') {
        if old_left > 0 || new_left > 0 {
            let kind = match line.as_bytes().first() {
                Some(b' ') if old_left > 0 && new_left > 0 => RowKind::Context,
                Some(b'-') if old_left > 0 => RowKind::Removed,
                Some(b'+') if new_left > 0 => RowKind::Added,
                Some(b'\\') => continue,
                _ => return None,
            };
            rows.push(DiffRow {
                kind,
                old_pos: old,
                new_pos: new,
            });
            if kind != RowKind::Added {
                old += 1;
                old_left -= 1;
            }
            if kind != RowKind::Removed {
                new += 1;
                new_left -= 1;
            }
            continue;
        }
        if line.starts_with('\\') {
            continue;
        }
        let (o, oc, n, nc) = hunk_header(line)?;
        old = if oc == 0 { o + 1 } else { o };
        new = if nc == 0 { n + 1 } else { n };
        (old_left, new_left) = (oc, nc);
    }
    (old_left == 0 && new_left == 0).then_some(rows)
}

fn hunk_header(line: &str) -> Option<(u64, u64, u64, u64)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u64, u64)> {
        match r.split_once(',') {
            Some((s, c)) => Some((s.parse().ok()?, c.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (o, oc) = range(old)?;
    let (n, nc) = range(new)?;
    Some((o, oc, n, nc))
}

/// The `position[…]` parameters of a request (form fields, or a JSON `position` object).
fn position_params(params: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = params
        .iter()
        .filter_map(|(k, v)| {
            let key = k.strip_prefix("position[")?.strip_suffix(']')?;
            Some((key.to_owned(), v.clone()))
        })
        .collect();
    if let Some(Ok(Value::Object(map))) = params
        .get("position")
        .map(|json| serde_json::from_str::<Value>(json))
    {
        for (k, v) in map {
            let text = match v {
                Value::String(s) => s,
                Value::Null => continue,
                other => other.to_string(),
            };
            out.entry(k).or_insert(text);
        }
    }
    out
}

/// Whether the request asks for a DiffNote at all.
pub(crate) fn has_position(params: &BTreeMap<String, String>) -> bool {
    params.contains_key("position") || params.keys().any(|k| k.starts_with("position["))
}

/// The position a `POST …/discussions` asks for, validated against `mr` as GitLab
/// validates it, or GitLab's 400 answer.
pub(crate) fn validate(
    mr: &MergeRequest,
    params: &BTreeMap<String, String>,
) -> Result<NotePosition, Response> {
    let p = position_params(params);
    for key in ["base_sha", "start_sha", "head_sha", "position_type"] {
        if p.get(key).is_none_or(|v| v.is_empty()) {
            return Err(Response::error(400, &format!("position[{key}] is missing")));
        }
    }
    let position_type = p["position_type"].as_str();
    if !matches!(position_type, "text" | "image") {
        return Err(Response::error(
            400,
            "position[position_type] does not have a valid value",
        ));
    }
    let refused = || Response::message(400, INVALID_LINE_CODE);
    let refs = &mr.diff_refs;
    if position_type != "text"
        || p["base_sha"] != refs.base_sha
        || p["start_sha"] != refs.start_sha
        || p["head_sha"] != refs.head_sha
    {
        return Err(refused());
    }
    let line = |key: &str| -> Result<Option<u64>, Response> {
        match p.get(key).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Response::error(400, &format!("position[{key}] is invalid"))),
        }
    };
    let (old_line, new_line) = (line("old_line")?, line("new_line")?);
    let (Some(old_path), Some(new_path)) = (p.get("old_path"), p.get("new_path")) else {
        return Err(refused());
    };
    let file = mr
        .diffs
        .iter()
        .find(|d| &d.old_path == old_path && &d.new_path == new_path)
        .filter(|d| d.too_large != Some(true) && d.collapsed != Some(true))
        .ok_or_else(refused)?;
    let rows = diff_rows(&file.diff).ok_or_else(refused)?;
    let row = rows
        .iter()
        .find(|r| match (old_line, new_line) {
            (None, Some(n)) => r.kind == RowKind::Added && r.new_pos == n,
            (Some(o), None) => r.kind == RowKind::Removed && r.old_pos == o,
            (Some(o), Some(n)) => r.kind == RowKind::Context && r.old_pos == o && r.new_pos == n,
            (None, None) => false,
        })
        .ok_or_else(refused)?;
    let path_hash = hex::encode(Sha256::digest(new_path.as_bytes()));
    Ok(NotePosition {
        base_sha: refs.base_sha.clone(),
        start_sha: refs.start_sha.clone(),
        head_sha: refs.head_sha.clone(),
        old_path: old_path.clone(),
        new_path: new_path.clone(),
        position_type: "text".into(),
        old_line,
        new_line,
        line_code: format!("{}_{}_{}", &path_hash[..40], row.old_pos, row.new_pos),
    })
}

/// A position as GitLab lists it on a DiffNote: the refs, paths, type, lines, and a line
/// range whose start and end carry the line code.
pub(crate) fn position_json(position: &NotePosition) -> Value {
    let kind = match (position.old_line, position.new_line) {
        (None, Some(_)) => Value::from("new"),
        (Some(_), None) => Value::from("old"),
        _ => Value::Null,
    };
    let end = serde_json::json!({
        "line_code": position.line_code, "type": kind,
        "old_line": position.old_line, "new_line": position.new_line
    });
    serde_json::json!({
        "base_sha": position.base_sha, "start_sha": position.start_sha,
        "head_sha": position.head_sha, "old_path": position.old_path,
        "new_path": position.new_path, "position_type": position.position_type,
        "old_line": position.old_line, "new_line": position.new_line,
        "line_range": { "start": end.clone(), "end": end }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_carry_both_counters() {
        let rows = diff_rows("@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n").unwrap();
        let got: Vec<(RowKind, u64, u64)> = rows
            .iter()
            .map(|r| (r.kind, r.old_pos, r.new_pos))
            .collect();
        assert_eq!(
            got,
            [
                (RowKind::Context, 1, 1),
                (RowKind::Removed, 2, 2),
                (RowKind::Added, 3, 2),
                (RowKind::Context, 3, 3)
            ]
        );
        assert_eq!(diff_rows("@@ -1 +1 @@\n"), None);
        assert_eq!(diff_rows(""), Some(vec![]));
        assert_eq!(
            diff_rows("@@ -0,0 +1,2 @@\n+a\n+b\n").unwrap()[1],
            DiffRow {
                kind: RowKind::Added,
                old_pos: 1,
                new_pos: 2
            }
        );
    }
}
