//! The properties the fuzz targets check, shared with `tests/fuzz_regressions.rs` (which
//! replays the kept inputs and runs the same checks under proptest in the ordinary test
//! suite). Each function panics exactly when a property is violated.

use assent::core::marker::{self, Marker};
use assent::core::model::{Change, ChangeKind};
use assent::core::policy::{MrContext, PolicyFile, PolicySet};
use assent::core::semantic_diff::{Format, Limits, diff_documents, parse_document};
use serde_json::Value;

/// Decoding never panics; an accepted marker re-encodes canonically, the canonical line
/// decodes to the same marker, and a body composed from it carries it with no line starting
/// with `/`.
pub fn marker(body: &str) {
    let Ok(Some(decoded)) = marker::decode_body(body) else {
        return;
    };
    let line = marker::encode(&decoded);
    assert!(!line.contains(['\n', '\r']), "encoded marker spans lines");
    assert_eq!(
        marker::decode_line(&line).as_ref(),
        Ok(&decoded),
        "re-encoded marker decodes differently"
    );
    if let Marker::Finding { .. } = decoded {
        let composed = marker::compose_body(&decoded, body);
        assert_eq!(marker::decode_body(&composed), Ok(Some(decoded)));
        for l in composed.split(['\n', '\r']) {
            assert!(!l.trim_start().starts_with('/'), "quick action line {l:?}");
        }
    }
}

/// Loading arbitrary policy bytes never panics; a set that loads judges a fixed set of
/// changes without panicking, deterministically, and every problem names its file.
pub fn policy(bytes: &[u8]) {
    let files = [PolicyFile {
        path: ".assent/policies/fuzz.yaml".into(),
        bytes: bytes.to_vec(),
    }];
    let set = match PolicySet::load(&files) {
        Ok(set) => set,
        Err(problems) => {
            assert!(!problems.is_empty());
            for p in problems {
                assert_eq!(p.file, ".assent/policies/fuzz.yaml");
                assert!(
                    !p.message.contains('\n'),
                    "problem spans lines: {:?}",
                    p.message
                );
            }
            return;
        }
    };
    let changes = sample_changes();
    let mr = MrContext {
        iid: 7,
        title: "t".into(),
        source_branch: "s".into(),
        target_branch: "main".into(),
        author: "a".into(),
        labels: vec!["x".into()],
    };
    let first = set.evaluate(&changes, &mr);
    assert_eq!(
        first,
        set.evaluate(&changes, &mr),
        "evaluation is not deterministic"
    );
    let _ = set.governs("topics/a.yaml");
}

fn sample_changes() -> Vec<Change> {
    let change = |file: &str, pointer: &str, kind, old: Option<Value>, new: Option<Value>| Change {
        file: file.into(),
        pointer: pointer.into(),
        kind,
        old,
        new,
    };
    vec![
        change(
            "topics/a.yaml",
            "/topics/orders/retention_days",
            ChangeKind::Modify,
            Some(30.into()),
            Some(7.into()),
        ),
        change(
            "topics/a.yaml",
            "",
            ChangeKind::Add,
            None,
            Some(serde_json::json!({"topics": [{"name": "a", "n": [1, 2, 3]}], "x": "y"})),
        ),
        change(
            "cfg/b.json",
            "/a~1b/0",
            ChangeKind::Delete,
            Some("s".into()),
            None,
        ),
    ]
}

/// Small limits, so that a fuzzer reaches them.
pub fn fuzz_limits() -> Limits {
    Limits {
        max_bytes: 64 * 1024,
        max_depth: 32,
        max_nodes: 10_000,
    }
}

/// Input layout: one format byte, then the old and new documents separated by the first
/// `0x00` byte (no separator: the file is added). Parsing never panics; a document diffed
/// against itself has no change; the diff is deterministic, and each change's pointer is a
/// valid RFC 6901 pointer whose kind agrees with which side is present.
pub fn semantic_diff(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (format, path) = match selector % 3 {
        0 => (Format::Json, "cfg/f.json"),
        1 => (Format::Yaml, "cfg/f.yaml"),
        _ => (Format::Toml, "cfg/f.toml"),
    };
    let limits = fuzz_limits();
    let (old, new) = match rest.iter().position(|&b| b == 0) {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let parse = |bytes: &[u8]| match parse_document(path, format, bytes, &limits) {
        Ok(v) => Some(v),
        Err(e) => {
            assert_eq!(e.file, path);
            assert!(!e.message.is_empty());
            None
        }
    };
    let Some(new) = parse(new) else { return };
    let old = match old {
        Some(bytes) => match parse(bytes) {
            Some(v) => Some(v),
            None => return,
        },
        None => None,
    };
    // Lists at even depths are keyed by `name`, others by index.
    let identity = |pointer: &str| {
        pointer
            .matches('/')
            .count()
            .is_multiple_of(2)
            .then(|| "name".to_owned())
    };
    assert_eq!(
        diff_documents(path, Some(&new), Some(&new), &identity),
        Default::default()
    );
    let found = diff_documents(path, old.as_ref(), Some(&new), &identity);
    assert_eq!(
        found,
        diff_documents(path, old.as_ref(), Some(&new), &identity),
        "diff is not deterministic"
    );
    let changes = found.changes;
    // Nothing under an ambiguous identity-keyed list is compared.
    for list in &found.ambiguities {
        assert!(list.base.is_some() || list.source.is_some(), "{list:?}");
        let inside = format!("{}/", list.pointer);
        assert!(
            changes.iter().all(|c| !c.pointer.starts_with(&inside)),
            "a change under {list:?}"
        );
    }
    if old.as_ref() != Some(&new) {
        // Identity keying may see a reordering as no change; index diffing never may.
        let by_index = diff_documents(path, old.as_ref(), Some(&new), &|_| None).changes;
        assert!(!by_index.is_empty(), "different documents, no change");
    }
    for c in &changes {
        assert_eq!(c.file, path);
        assert!(
            c.pointer.is_empty() || c.pointer.starts_with('/'),
            "{:?}",
            c.pointer
        );
        match c.kind {
            ChangeKind::Add => assert!(c.old.is_none() && c.new.is_some()),
            ChangeKind::Delete => assert!(c.old.is_some() && c.new.is_none()),
            ChangeKind::Modify => {
                assert!(c.old.is_some() && c.new.is_some());
                assert_ne!(c.old, c.new);
            }
        }
    }
}
