//! The properties of the `marker`, `policy`, `semantic_diff`, `inert` and `unified_diff` fuzz
//! targets, shared
//! with `tests/it/fuzz_regressions.rs` (which replays the kept inputs and runs the same checks
//! under proptest in the ordinary test suite). Each function panics exactly when a property
//! is violated.

use std::ops::Range;

use assent::core::commit_sha::CommitSha;
use assent::core::desired_state::{
    ChangedFileInput, FileContent, ReviewInputs, compute_desired_state, self_edit_sides_of_contents,
};
use assent::core::inert;
use assent::core::links::{WebUrl, blob_url};
use assent::core::marker::{self, Marker, SummaryState};
use assent::core::model::{
    Change, ChangeKind, DesiredState, DiffLine, Effect, Finding, FindingSite, Occurrence, Pins,
    Slot,
};
use assent::core::placement::{DiffRefs, FileDiff, PlacementContext, place_findings};
use assent::core::policy::template::{Template, TemplateValues};
use assent::core::policy::{MrContext, PolicyFile, PolicySet};
use assent::core::render::{self, SummaryContext};
use assent::core::review_state::FindingStatus;
use assent::core::semantic_diff::{Format, Limits, diff_documents, parse_document};
use assent::core::unified_diff::changed_lines;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
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
        old_line: None,
        new_line: None,
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

// ------------------------------------------------------------------ inert rendering

/// Markdown as a GitLab-like renderer reads it: CommonMark with GFM tables, strikethrough,
/// task lists, footnotes and math.
fn markdown_events(markdown: &str) -> Vec<(Event<'_>, Range<usize>)> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM;
    Parser::new_ext(markdown, options)
        .into_offset_iter()
        .collect()
}

/// What a Markdown document is made of outside code spans: every event, adjacent texts
/// merged, each code span as `Code` (or, with `keep_code`, `Code(text)`), and raw HTML kept
/// only as `Html` (its text is the marker line, whose JSON carries the subject).
fn shape(markdown: &str, keep_code: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut text: Option<String> = None;
    for (event, _) in markdown_events(markdown) {
        if let Event::Text(t) = &event {
            text.get_or_insert_with(String::new).push_str(t);
            continue;
        }
        if let Some(t) = text.take() {
            out.push(format!("Text({t})"));
        }
        out.push(match event {
            Event::Code(c) if keep_code => format!("Code({c})"),
            Event::Code(_) => "Code".to_owned(),
            Event::Html(_) => "Html".to_owned(),
            other => format!("{other:?}"),
        });
    }
    if let Some(t) = text.take() {
        out.push(format!("Text({t})"));
    }
    out
}

/// The text of every code span of `markdown`.
fn code_texts(markdown: &str) -> Vec<String> {
    markdown_events(markdown)
        .into_iter()
        .filter_map(|(event, _)| match event {
            Event::Code(c) => Some(c.to_string()),
            _ => None,
        })
        .collect()
}

/// Nothing outside code spans of a body comes from contributor text: raw HTML only on the
/// marker line, no inline HTML, no image, links only to targets starting with one of
/// `allowed_links` (the template's own and the summary's thread links), no mention (`@`) and no bare URL in any text, and no line that GitLab could read as
/// a quick action.
fn assert_only_trusted_markup(body: &str, allowed_links: &[&str]) {
    let marker_end = body.find('\n').unwrap_or(body.len());
    for (event, range) in markdown_events(body) {
        match &event {
            Event::Html(_) | Event::Start(Tag::HtmlBlock) | Event::End(TagEnd::HtmlBlock) => {
                assert!(
                    range.end <= marker_end + 1,
                    "raw HTML {event:?} in {body:?}"
                );
            }
            Event::InlineHtml(_) | Event::InlineMath(_) | Event::DisplayMath(_) => {
                panic!("{event:?} in {body:?}")
            }
            Event::Start(Tag::Image { .. }) => panic!("image in {body:?}"),
            Event::Start(Tag::Link { dest_url, .. }) => {
                let allowed = allowed_links
                    .iter()
                    .any(|prefix| dest_url.starts_with(prefix));
                assert!(allowed, "link to {dest_url:?} in {body:?}");
            }
            Event::Text(t) => {
                assert!(!t.contains('@'), "mention outside code: {t:?} in {body:?}");
                // The summary's cut can leave a trusted link as bare text.
                let t = allowed_links
                    .iter()
                    .fold(t.to_string(), |t, url| t.replace(url, ""));
                assert!(
                    !t.contains("://") && !t.contains("www."),
                    "bare URL outside code: {t:?} in {body:?}"
                );
            }
            _ => {}
        }
    }
    for line in body.split(['\n', '\r']) {
        assert!(
            !line.trim_start().starts_with('/'),
            "quick action line {line:?}"
        );
    }
}

/// `text` through [`inert::code`]: one line; the span alone, between words, in emphasis and
/// in a GFM table cell reads as exactly one code span showing `inert::escape(text)`, with
/// nothing else around it; and every cut of a line holding it ([`inert::cut_line`]) still
/// shows at most a prefix of it, only inside a code span.
pub fn inert_text(text: &str) {
    let escaped = inert::escape(text);
    assert!(
        !escaped.chars().any(inert::needs_escape),
        "escape left {escaped:?}"
    );
    let span = inert::code(text);
    assert!(!span.contains(['\n', '\r']), "span spans lines: {span:?}");
    let shown = if escaped.is_empty() { " " } else { &escaped };
    let code = format!("Code({shown})");
    let paragraph = |inner: &[&str]| {
        let mut events = vec!["Start(Paragraph)".to_owned()];
        events.extend(inner.iter().map(|s| s.to_string()));
        events.push("End(Paragraph)".to_owned());
        events
    };
    assert_eq!(shape(&span, true), paragraph(&[&code]), "alone: {span:?}");
    assert_eq!(
        shape(&format!("a {span} b"), true),
        paragraph(&["Text(a )", &code, "Text( b)"]),
        "between words: {span:?}"
    );
    assert_eq!(
        shape(&format!("**{span}**"), true),
        paragraph(&["Start(Strong)", &code, "End(Strong)"]),
        "in emphasis: {span:?}"
    );
    let table = format!(
        "| h | i |\n| --- | --- |\n| {} | z |",
        inert::table_cell(&span)
    );
    let cells = shape(&table, true);
    assert_eq!(cells.last().map(String::as_str), Some("End(Table)"));
    assert_eq!(
        cells[cells.len() - 9..cells.len() - 1],
        [
            "Start(TableRow)".to_owned(),
            "Start(TableCell)".to_owned(),
            code.clone(),
            "End(TableCell)".to_owned(),
            "Start(TableCell)".to_owned(),
            "Text(z)".to_owned(),
            "End(TableCell)".to_owned(),
            "End(TableRow)".to_owned(),
        ],
        "in a table cell: {table:?}"
    );
    let line = format!("ab {span} cd");
    let length = line.chars().count();
    for max in [
        0,
        1,
        3,
        4,
        5,
        length / 2,
        length.saturating_sub(3),
        length - 1,
    ] {
        let cut = inert::cut_line(&line, max);
        for (event, _) in markdown_events(&cut) {
            match event {
                Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) => {}
                Event::Text(t) => assert!(
                    t.chars().all(|c| "abcd …".contains(c)),
                    "contributor text outside code after a cut at {max}: {t:?} in {cut:?}"
                ),
                Event::Code(c) => assert!(
                    shown.starts_with(&*c),
                    "cut at {max} shows {c:?}, not a prefix of {shown:?}"
                ),
                other => panic!("{other:?} after a cut at {max}: {cut:?}"),
            }
        }
    }
}

/// Contributor content of one finding: what a merge request controls.
#[derive(Debug, Clone)]
pub struct HostileChange {
    /// Repository path.
    pub file: String,
    /// Pointer (any text: keys become pointer tokens).
    pub pointer: String,
    /// Old value.
    pub old: Value,
    /// New value.
    pub new: Value,
    /// Entry name.
    pub entry: Option<String>,
}

/// A policy message using every placeholder, in plain text, emphasis, link text, the
/// template's own code spans, after an unmatched backtick run, next to each other, after a
/// backslash and between dollars (GitLab's inline math). (Its link is past the
/// first line: the summary's cut may cut trusted markup, and a cut link reads as a bare URL.)
const HOSTILE_TEMPLATE: &str = "Retention of {{ entry }} in **{{ file }}** moves from {{ old }} `` to `{{ new }} days`; \
    \\{{ kind }} \\{{ entry }} {{file}}{{pointer}} `{{ old }}`\n\n\
    See [{{ pointer }}](https://docs.example/retention). {{ rule }}: {{ new }}, ${{ old }}$\n/close {{ entry }}";

/// The same template inside a GFM table, so pipes in values must not split its rows.
const HOSTILE_TABLE_TEMPLATE: &str =
    "| field | old | new |\n| --- | --- | --- |\n| {{ pointer }} | {{ old }} | `{{ new }}` |";

/// The text a placeholder shows for `value`, before escaping.
fn shown_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_owned(),
        other => assent::core::canonical_json::to_string(other),
    }
}

/// A harmless stand-in with the same shape once escaped: backticks and spaces where the
/// escaped text has them, `x` elsewhere. Same length, same fences, same padding.
fn neutral(text: &str) -> String {
    inert::escape(text)
        .chars()
        .map(|c| if c == '`' || c == ' ' { c } else { 'x' })
        .collect()
}

impl HostileChange {
    fn neutralised(&self) -> HostileChange {
        HostileChange {
            file: neutral(&self.file),
            pointer: neutral(&self.pointer),
            old: Value::String(neutral(&shown_value(&self.old))),
            new: Value::String(neutral(&shown_value(&self.new))),
            entry: Some(neutral(self.entry.as_deref().unwrap_or("null"))),
        }
    }

    fn finding(&self, template: &str, rule: &str, effect: Effect) -> Finding {
        let message = Template::parse(template)
            .expect("the hostile templates load")
            .render(&TemplateValues {
                old: Some(&self.old),
                new: Some(&self.new),
                entry: self.entry.as_deref(),
                file: &self.file,
                pointer: &self.pointer,
                kind: "modify",
                rule,
            });
        Finding {
            slot: Slot {
                rule: rule.into(),
                subject: format!("{}#{}", self.file, self.pointer),
            },
            effect,
            occurrence: Occurrence::digest(message.as_bytes()),
            message,
        }
    }

    fn escaped_values(&self) -> Vec<String> {
        let mut values = vec![
            inert::escape(&self.file),
            inert::escape(&self.pointer),
            inert::escape(&shown_value(&self.old)),
            inert::escape(&shown_value(&self.new)),
        ];
        if let Some(entry) = &self.entry {
            values.push(inert::escape(entry));
        }
        values
    }
}

const WEB_URL: &str = "https://gitlab.example/g/p/-/merge_requests/7";
const DOCS_URL: &str = "https://docs.example/";

fn summary_of(findings: Vec<Finding>) -> String {
    summary_of_state(DesiredState::new(findings))
}

fn summary_of_state(desired: DesiredState) -> String {
    let statuses: Vec<FindingStatus<'_>> = desired
        .findings
        .iter()
        .enumerate()
        .map(|(i, finding)| FindingStatus {
            finding,
            forge_id: Some(100 + i as u64),
            resolved: i % 2 == 1,
            assent: if i % 2 == 1 {
                assent::core::who_assents::Assent::NotCounted {
                    by: Some(assent::core::model::UserRef {
                        id: 3,
                        username: format!("user{i}"),
                    }),
                    reason: assent::core::who_assents::NotCounted::ByAuthor,
                }
            } else {
                assent::core::who_assents::Assent::Open
            },
        })
        .collect();
    let pins = Pins {
        source_sha: assent::core::commit_sha::CommitSha::parse(&"1".repeat(40)).unwrap(),
        target_sha: sha('2'),
        base_sha: sha('3'),
        policy_digest: format!("sha256:{}", "a".repeat(64)),
        policy_project: None,
        policy_sha: None,
    };
    let ctx = SummaryContext {
        pins: &pins,
        web_url: Some(WEB_URL),
        target: None,
        listing: None,
    };
    render::summary_body(ctx, &desired, &statuses, SummaryState::Verified)
}

/// A finding thread body and a summary built from `change` through policy templates: their
/// Markdown outside code spans is exactly that of the same bodies built from a harmless
/// stand-in of the same shape (`neutral`), so contributor text decides nothing but what code
/// spans show; every value shows in full inside a code span of the thread body; and nothing
/// outside code spans is a mention, link, image, HTML or quick action.
pub fn finding_bodies(change: &HostileChange) {
    let stand_in = change.neutralised();
    for template in [HOSTILE_TEMPLATE, HOSTILE_TABLE_TEMPLATE] {
        let rule = "retention-shrink";
        let body = render::finding_thread_body(&change.finding(template, rule, Effect::Challenge));
        let expected =
            render::finding_thread_body(&stand_in.finding(template, rule, Effect::Challenge));
        assert_eq!(shape(&body, false), shape(&expected, false), "{body}");
        assert_only_trusted_markup(&body, &[DOCS_URL]);
        let codes = code_texts(&body).join("\n");
        let mut values = change.escaped_values();
        if template == HOSTILE_TABLE_TEMPLATE {
            // It shows the pointer, old and new values (and the headline the file).
            values.truncate(4);
        }
        for value in values {
            // In a table the `\|` of a span reads as `|`: the value shows exactly there too.
            assert!(
                codes.contains(&value),
                "{value:?} not shown in a code span of {body}"
            );
        }
    }
    // The summary cuts each message's first line at 200 characters: the cut must not depend
    // on contributor text either.
    let findings = |c: &HostileChange| {
        vec![
            c.finding(HOSTILE_TEMPLATE, "a-challenge", Effect::Challenge),
            c.finding(
                "{{ new }} {{ old }} {{ entry }}",
                "b-comment",
                Effect::Comment,
            ),
        ]
    };
    let summary = summary_of(findings(change));
    let expected = summary_of(findings(&stand_in));
    assert_eq!(shape(&summary, false), shape(&expected, false), "{summary}");
    assert_only_trusted_markup(&summary, &[DOCS_URL, WEB_URL]);
    linked_bodies(change);
}

/// Where [`WEB_URL`]'s project keeps its files.
const BLOB_PREFIX: &str = "https://gitlab.example/g/p/-/blob/";

/// Every link of `markdown`: its destination and its text.
fn links(markdown: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for (event, _) in markdown_events(markdown) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) => {
                open = Some((dest_url.to_string(), String::new()))
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = open.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Link) => found.extend(open.take()),
            _ => {}
        }
    }
    found
}

/// The thread body and the summary of a finding about `change`'s file, linked to that file
/// at line 3 as `assent run` places it (docs/contract.md#file-links, docs/contract.md#inert-text): the file name enters the
/// link only percent-encoded, so the body has exactly the one file link `core::links` built,
/// whole, with the fixed text `line 3`, and nothing of the name outside code spans is a
/// mention, link, image, HTML or quick action. A name no link can carry gives none.
pub fn linked_bodies(change: &HostileChange) {
    let finding = change.finding(HOSTILE_TEMPLATE, "retention-shrink", Effect::Challenge);
    let site = FindingSite {
        file: change.file.clone(),
        kind: ChangeKind::Modify,
        whole_file: false,
        old_line: Some(3),
        new_line: Some(3),
    };
    let desired = DesiredState::new(vec![finding.clone()])
        .with_sites([(finding.slot.clone(), site)].into_iter().collect());
    let source = sha('1');
    let placements = place_findings(
        &desired,
        &PlacementContext {
            source_sha: &source,
            base_sha: &sha('3'),
            diff_refs: None,
            files: &[],
            merge_request_url: Some(WEB_URL),
        },
    );
    let desired = desired.with_placements(placements);
    let project = WebUrl::parse(WEB_URL)
        .and_then(|u| u.project_of_merge_request())
        .expect("a project URL");
    let expected = blob_url(&project, &source, &change.file, Some(3));
    let link = desired
        .placement(&finding.slot)
        .and_then(|p| p.link.as_ref());
    assert_eq!(link.map(|l| &l.url), expected.as_ref(), "{:?}", change.file);
    if let Some(url) = &expected {
        let destination = url.trim_start_matches("https://");
        assert!(
            destination
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~:/%#".contains(&b)),
            "{url}"
        );
    }

    let body = render::finding_thread_body_linked(&finding, link);
    let summary = summary_of_state(desired.clone());
    for markdown in [&body, &summary] {
        assert_only_trusted_markup(markdown, &[DOCS_URL, WEB_URL, BLOB_PREFIX]);
        let file_links: Vec<(String, String)> = links(markdown)
            .into_iter()
            .filter(|(dest, _)| dest.starts_with(BLOB_PREFIX))
            .collect();
        let want: Vec<(String, String)> = expected
            .iter()
            .map(|url| (url.clone(), "line 3".to_owned()))
            .collect();
        assert_eq!(file_links, want, "{markdown}");
    }
    // The link is the only difference a file makes to the thread body.
    let without_link = render::finding_thread_body(&finding);
    let unlinked = match &expected {
        Some(url) => body.replacen(&format!(" · [line 3]({url})"), "", 1),
        None => body.clone(),
    };
    assert_eq!(unlinked, without_link);
}

/// Built-in findings (self-edit, unreadable files, parse errors) and a rule's finding for a file named
/// `name` and a forge reason `reason`: nothing outside code spans of their thread bodies or of
/// the summary comes from either, and the name shows inside a code span.
pub fn builtin_bodies(name: &str, reason: &str) {
    let present = |s: &str| FileContent::Present(s.as_bytes().to_vec());
    let file = |path: String, base: FileContent, source: FileContent| ChangedFileInput {
        old_path: path.clone(),
        new_path: path,
        base,
        source,
    };
    let policy = PolicyFile {
        path: ".assent/policies/p.yaml".into(),
        bytes: b"apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: any\n    match: {files: [\"**\"]}\n    effect: comment\n".to_vec(),
    };
    let key = serde_json::to_string(name).expect("a string serialises");
    let files = vec![
        file(format!(".assent/{name}"), FileContent::Absent, present("a")),
        file(format!("w/{name}.json"), FileContent::Absent, present("1")),
        file(
            format!("u/{name}.json"),
            present("1"),
            FileContent::Unreadable(reason.to_owned()),
        ),
        file(
            format!("p/{name}.json"),
            present("1"),
            present(&format!("{{{key}: 1, {key}: 2}}")),
        ),
    ];
    let out = compute_desired_state(ReviewInputs {
        policy_files: vec![policy],
        policy_problems: Vec::new(),
        self_edit_sides: self_edit_sides_of_contents(&files),
        changed_files: Ok(files),
        mr: MrContext::default(),
        limits: Limits::default(),
    });
    let shown = inert::escape(name);
    for finding in &out.desired.findings {
        let body = render::finding_thread_body(finding);
        assert_only_trusted_markup(&body, &[]);
        let codes = code_texts(&body).join("\n");
        assert!(
            codes.contains(&shown),
            "{shown:?} not in a code span of {body}"
        );
    }
    assert_only_trusted_markup(&summary_of(out.desired.findings), &[WEB_URL]);
}

/// The `inert` fuzz target's input: UTF-8 text. The whole text goes through
/// [`inert_text`]; split at U+001F into file, pointer, old, new and entry (a field that is
/// JSON is that value, else a string; missing fields are empty), it goes through
/// [`finding_bodies`], and its first two fields through [`builtin_bodies`].
pub fn inert_input(text: &str) {
    inert_text(text);
    let mut fields = text.split('\u{1f}');
    let mut next = || fields.next().unwrap_or_default().to_owned();
    let (file, pointer, old, new, entry) = (next(), next(), next(), next(), next());
    let value = |field: String| serde_json::from_str(&field).unwrap_or(Value::String(field));
    let change = HostileChange {
        file: file.clone(),
        pointer: pointer.clone(),
        old: value(old),
        new: value(new),
        entry: (!entry.is_empty()).then_some(entry),
    };
    finding_bodies(&change);
    builtin_bodies(&file, &pointer);
}

/// The `unified_diff` fuzz target: any bytes as a file's diff text from the forge. Reading it
/// never panics; a text it accepts changes at most as many lines as it has, none numbered 0;
/// and placing findings on it never panics and puts a DiffNote only on a line it reports
/// added (a new value) or removed (an old value).
pub fn unified_diff(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines = changed_lines(&text);
    if let Some(lines) = &lines {
        assert!(
            lines.added_count() + lines.removed_count() <= text.lines().count(),
            "{text:?}"
        );
        assert!(!lines.is_added(0) && !lines.is_removed(0));
    }
    let refs = DiffRefs {
        base_sha: sha('1'),
        start_sha: sha('1'),
        head_sha: sha('2'),
    };
    let mut findings = Vec::new();
    let mut sites = std::collections::BTreeMap::new();
    for line in 1..=12usize {
        for (kind, old_line, new_line) in [
            (ChangeKind::Modify, Some(line), Some(line)),
            (ChangeKind::Delete, Some(line), None),
        ] {
            let slot = Slot {
                rule: format!("{}-{line}", kind.as_str()),
                subject: format!("f.yaml#/{line}"),
            };
            findings.push(Finding {
                slot: slot.clone(),
                effect: Effect::Challenge,
                occurrence: Occurrence::digest(slot.rule.as_bytes()),
                message: String::new(),
            });
            let site = FindingSite {
                file: "f.yaml".into(),
                kind,
                whole_file: false,
                old_line,
                new_line,
            };
            sites.insert(slot, site);
        }
    }
    let desired = DesiredState::new(findings).with_sites(sites);
    let files = [FileDiff::from_listing("f.yaml", "f.yaml", &text, false)];
    let placed = place_findings(
        &desired,
        &PlacementContext {
            source_sha: &refs.head_sha,
            base_sha: &refs.base_sha,
            diff_refs: Some(&refs),
            files: &files,
            merge_request_url: None,
        },
    );
    for (slot, placement) in placed {
        let position = placement.position.expect("no URL, so only positions");
        let lines = lines
            .as_ref()
            .expect("a position only on an understood diff");
        let site = desired.site(&slot).unwrap();
        match position.line {
            DiffLine::New(n) => {
                assert!(site.kind == ChangeKind::Modify && lines.is_added(n));
            }
            DiffLine::Old(n) => {
                assert!(site.kind == ChangeKind::Delete && lines.is_removed(n));
            }
        }
    }
}

/// The SHA-1 of forty `digit`s.
fn sha(digit: char) -> CommitSha {
    CommitSha::parse(&digit.to_string().repeat(40)).expect("a hex digit")
}
