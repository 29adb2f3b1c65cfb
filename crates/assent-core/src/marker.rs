//! The hidden marker on the first line of every artifact body (docs/contract.md#markers).
//!
//! The marker is how a run recognises, across every page of a listing, what an earlier run
//! posted: a finding thread names its slot and occurrence, the summary note names its
//! occurrence, state, head and target branch. It is an HTML comment so it does not render:
//!
//! ```text
//! <!-- assent:marker {"v":1,"kind":"finding","rule":"r","subject":"f#/p","occurrence":"sha256:…"} -->
//! ```
//!
//! Encoding is canonical (compact JSON, fixed key order) and HTML-safe: `<`, `>` and `&` are
//! written as `\u003c`, `\u003e` and `\u0026`, so no subject can close the comment early or
//! open a second one, and JSON's own escaping keeps the marker on one line.
//!
//! Decoding is strict, because a marker that is misread is worse than one that is skipped:
//! every deviation from the grammar is a [`MalformedMarker`] with a specific reason, which
//! the caller turns into an operator-facing warning. The few liberties it takes are listed on
//! [`decode_line`] (insignificant JSON whitespace, key order, alternative JSON string
//! spellings); none of them can change what a marker means.
//!
//! The summary also carries a second hidden line, its **gate line**, as its last line
//! ([`GateLine`]): the decision it shows and a fingerprint of the thread resolutions that
//! decision was computed from, which `assent sweep` compares with the current ones
//! (docs/contract.md#decision-freshness). It is written and read with the same escaping and the same strictness.

use std::fmt;

use serde::de::{self, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::commit_sha::{CommitSha, is_commit_sha};
use crate::model::{Decision, Occurrence, Slot};

/// The detection sentinel: a body whose first line starts with this claims to be an artifact.
pub const MARKER_PREFIX: &str = "<!-- assent:marker ";

/// Closes the marker comment; nothing may follow it on the marker line.
pub const MARKER_SUFFIX: &str = " -->";

/// The reserved rule id of the summary marker; no finding may use it.
pub const SUMMARY_RULE: &str = "assent/summary";

/// The marker grammar version this module reads and writes.
const VERSION: u64 = 1;

/// Every key a marker may carry, in the order [`encode`] writes them.
const KEYS: [&str; 8] = [
    "v",
    "kind",
    "rule",
    "subject",
    "occurrence",
    "state",
    "head",
    "target",
];

/// The detection sentinel of the summary's gate line.
pub const GATE_PREFIX: &str = "<!-- assent:gate ";

/// Every key a gate line carries, in the order [`encode_gate_line`] writes them.
const GATE_KEYS: [&str; 2] = ["decision", "resolutions"];

/// Where the summary stands in the publish protocol for its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SummaryState {
    /// Written before the thread writes (step 3); a summary left in this state means a run
    /// did not finish, and the next run (or the sweep) repairs it.
    Reconciling,
    /// Written only after the rescan matched the plan (step 9).
    Verified,
}

impl SummaryState {
    /// `reconciling` or `verified`, as written in the marker.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryState::Reconciling => "reconciling",
            SummaryState::Verified => "verified",
        }
    }

    /// The inverse of [`SummaryState::as_str`]; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "reconciling" => Some(SummaryState::Reconciling),
            "verified" => Some(SummaryState::Verified),
            _ => None,
        }
    }
}

impl fmt::Display for SummaryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a marker says about its artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// A finding thread: which slot it fills and which judged content it was posted for.
    Finding {
        /// `(rule, subject)`; the rule is never [`SUMMARY_RULE`] or empty.
        slot: Slot,
        /// The judged content the thread asks about.
        occurrence: Occurrence,
    },
    /// The one summary note of the merge request.
    Summary {
        /// Fingerprint of what the summary shows.
        occurrence: Occurrence,
        /// Whether the run that wrote it had verified its writes.
        state: SummaryState,
        /// The source SHA it was computed for (the wire's `head`).
        source_sha: CommitSha,
        /// The target branch it was judged against (docs/contract.md#pinned-target). `None` for a summary written
        /// before the key existed (or by a caller that pinned no target): "no target
        /// recorded", which the sweep does not count as verified.
        target: Option<String>,
    },
}

impl Marker {
    /// The occurrence, whatever the kind.
    pub fn occurrence(&self) -> &Occurrence {
        match self {
            Marker::Finding { occurrence, .. } | Marker::Summary { occurrence, .. } => occurrence,
        }
    }
}

/// Why a line that starts with [`MARKER_PREFIX`] is not a valid marker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct MalformedMarker {
    /// One short lowercase sentence; quotes at most a short, escaped excerpt of the input,
    /// because it ends up in receipts and logs.
    pub reason: String,
}

fn malformed(reason: impl Into<String>) -> MalformedMarker {
    MalformedMarker {
        reason: reason.into(),
    }
}

/// The wire form, field order = key order on the wire.
#[derive(Serialize)]
struct Wire<'a> {
    v: u64,
    kind: &'a str,
    rule: &'a str,
    subject: &'a str,
    occurrence: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<SummaryState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    head: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a str>,
}

/// The single marker line for `marker`, without a trailing newline.
pub fn encode(marker: &Marker) -> String {
    let wire = match marker {
        Marker::Finding { slot, occurrence } => Wire {
            v: VERSION,
            kind: "finding",
            rule: &slot.rule,
            subject: &slot.subject,
            occurrence: occurrence.as_str(),
            state: None,
            head: None,
            target: None,
        },
        Marker::Summary {
            occurrence,
            state,
            source_sha,
            target,
        } => Wire {
            v: VERSION,
            kind: "summary",
            rule: SUMMARY_RULE,
            subject: "",
            occurrence: occurrence.as_str(),
            state: Some(*state),
            head: Some(source_sha.as_str()),
            target: target.as_deref(),
        },
    };
    let json =
        serde_json::to_string(&wire).expect("a struct of strings and integers always serializes");
    format!("{MARKER_PREFIX}{}{MARKER_SUFFIX}", html_safe(json))
}

/// Rewrites `<`, `>` and `&` as JSON `\u` escapes. The three characters only ever occur
/// inside JSON strings here (keys are fixed ASCII), where `\uXXXX` is an equivalent spelling,
/// so a blanket replace is exact.
fn html_safe(json: String) -> String {
    json.replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
}

/// Reads the marker of an artifact body from its first line.
///
/// `Ok(None)` when the first line does not start with [`MARKER_PREFIX`]: the note is not an
/// artifact (a human's note, a reply). `Err` when it does but the line is not a valid marker.
/// The first line ends at the first `\n`; one trailing `\r` is tolerated (CRLF bodies).
pub fn decode_body(body: &str) -> Result<Option<Marker>, MalformedMarker> {
    let first = body.split('\n').next().unwrap_or_default();
    let first = first.strip_suffix('\r').unwrap_or(first);
    if !first.starts_with(MARKER_PREFIX) {
        return Ok(None);
    }
    decode_line(first).map(Some)
}

/// Decodes one marker line strictly.
///
/// Accepts everything [`encode`] produces. Beyond that it accepts only what cannot change the
/// meaning: insignificant whitespace inside the JSON payload (as JSON defines it, so also
/// just after the prefix and just before the suffix), keys in any order, and any valid JSON
/// spelling of a string (e.g. `\u0041` for `A`). It rejects, with a specific reason: a line
/// break anywhere, a missing prefix or closing ` -->`, text after the closing `-->`, an empty,
/// truncated or invalid JSON payload, a payload that is not an object, a raw `<`, `>` or `&`
/// in the payload (the encoder never writes one, and a raw `-->` would close the comment
/// early), duplicate, unknown or missing keys, `v` other than the integer 1, an unknown
/// `kind`, non-string values, an empty rule, a bad occurrence, a summary whose rule is not
/// [`SUMMARY_RULE`] or whose subject is not empty, a finding using [`SUMMARY_RULE`], a summary
/// without `state`/`head` or a finding with one, an unknown state, a head that is not 40 or
/// 64 lowercase hex digits, a `target` on a finding, and a `target` that is not a non-empty
/// string. A summary without `target` decodes, as "no target recorded" (summaries written
/// before the key existed).
pub fn decode_line(line: &str) -> Result<Marker, MalformedMarker> {
    let mut fields = payload_fields(line, MARKER_PREFIX, &KEYS)?;

    match fields.take("v") {
        None => return Err(malformed("missing key `v`")),
        Some(Value::Number(n)) if n.as_u64() == Some(VERSION) => {}
        Some(_) => {
            return Err(malformed(
                "unsupported marker version (`v` must be the integer 1)",
            ));
        }
    }
    let kind = fields.take_str("kind")?;
    let is_summary = match kind.as_str() {
        "finding" => false,
        "summary" => true,
        other => return Err(malformed(format!("unknown marker kind {}", excerpt(other)))),
    };
    let rule = fields.take_str("rule")?;
    let subject = fields.take_str("subject")?;
    let occurrence = fields.take_str("occurrence")?;
    if rule.is_empty() {
        return Err(malformed("empty rule"));
    }
    let occurrence = Occurrence::parse(&occurrence).map_err(|_| {
        malformed(format!(
            "bad occurrence {}: expected `sha256:` and 64 lowercase hex digits",
            excerpt(&occurrence)
        ))
    })?;

    if !is_summary {
        if rule == SUMMARY_RULE {
            return Err(malformed(format!(
                "finding marker uses the reserved rule `{SUMMARY_RULE}`"
            )));
        }
        for key in ["state", "head", "target"] {
            if fields.take(key).is_some() {
                return Err(malformed(format!("finding marker carries `{key}`")));
            }
        }
        return Ok(Marker::Finding {
            slot: Slot { rule, subject },
            occurrence,
        });
    }

    if rule != SUMMARY_RULE {
        return Err(malformed(format!(
            "summary marker has rule {}, expected `{SUMMARY_RULE}`",
            excerpt(&rule)
        )));
    }
    if !subject.is_empty() {
        return Err(malformed("summary marker has a non-empty subject"));
    }
    let state = match fields.take("state") {
        None => return Err(malformed("summary marker lacks `state`")),
        Some(Value::String(s)) => SummaryState::parse(&s)
            .ok_or_else(|| malformed(format!("unknown summary state {}", excerpt(&s))))?,
        Some(_) => return Err(malformed("key `state` is not a string")),
    };
    let head = match fields.take("head") {
        None => return Err(malformed("summary marker lacks `head`")),
        Some(Value::String(s)) => s,
        Some(_) => return Err(malformed("key `head` is not a string")),
    };
    // Exactly as written: a head GitLab's form would lowercase is no head this bot wrote.
    let head = match CommitSha::parse(&head) {
        Ok(sha) if is_commit_sha(&head) => sha,
        _ => {
            return Err(malformed(format!(
                "bad head {}: expected 40 or 64 lowercase hex digits",
                excerpt(&head)
            )));
        }
    };
    let target = match fields.take("target") {
        None => None,
        Some(Value::String(s)) if s.is_empty() => return Err(malformed("empty target")),
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(malformed("key `target` is not a string")),
    };
    Ok(Marker::Summary {
        occurrence,
        state,
        source_sha: head,
        target,
    })
}

/// The line checks every hidden line shares, then the key-level checks against `keys`:
/// one line, `prefix`, a closing ` -->` with nothing after it, a JSON object payload with
/// no raw `<`, `>` or `&`, no duplicate and no unknown key.
fn payload_fields(line: &str, prefix: &str, keys: &[&str]) -> Result<Fields, MalformedMarker> {
    if line.contains(['\n', '\r']) {
        return Err(malformed("marker line contains a line break"));
    }
    let Some(rest) = line.strip_prefix(prefix) else {
        return Err(malformed(format!("line does not start with {prefix:?}")));
    };
    let payload = match rest.strip_suffix(MARKER_SUFFIX) {
        Some(payload) => payload,
        None if rest.trim() == "-->" => return Err(malformed("empty marker payload")),
        None if rest.contains("-->") => return Err(malformed("text after the closing `-->`")),
        None => return Err(malformed("missing closing ` -->`")),
    };
    if payload.trim().is_empty() {
        return Err(malformed("empty marker payload"));
    }
    let entries = parse_object(payload)?;
    if let Some(raw) = payload.chars().find(|c| matches!(c, '<' | '>' | '&')) {
        return Err(malformed(format!(
            "raw `{raw}` in marker payload (must be written as a \\u escape)"
        )));
    }
    Fields::new(entries, keys)
}

/// The summary's gate line (docs/contract.md#decision-freshness): what the summary decided, and from which thread
/// resolutions.
///
/// ```text
/// <!-- assent:gate {"decision":"REVIEW","resolutions":"sha256:…"} -->
/// ```
///
/// It is the summary body's last line, so nothing rendered from contributor content can come
/// after it and pose as it. `assent sweep` reads it to heal an MR whose summary says `REVIEW`
/// although GitLab reports every blocking discussion resolved, once per change of
/// resolutions: the fingerprint is [`crate::resolutions::resolution_fingerprint`] of
/// the listing the summary was rendered from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateLine {
    /// The decision the summary shows.
    pub decision: Decision,
    /// The fingerprint of the bot's finding threads' resolutions it was computed from.
    pub resolutions: Occurrence,
}

#[derive(Serialize)]
struct GateWire<'a> {
    decision: Decision,
    resolutions: &'a str,
}

/// The gate line for `gate`, without a trailing newline.
pub fn encode_gate_line(gate: &GateLine) -> String {
    let json = serde_json::to_string(&GateWire {
        decision: gate.decision,
        resolutions: gate.resolutions.as_str(),
    })
    .expect("a struct of strings always serializes");
    format!("{GATE_PREFIX}{}{MARKER_SUFFIX}", html_safe(json))
}

/// Decodes one gate line with the marker's strictness: exactly the keys `decision`
/// (`APPROVE`, `REVIEW` or `BLOCK`) and `resolutions` (`sha256:` and 64 lowercase hex).
pub fn decode_gate_line(line: &str) -> Result<GateLine, MalformedMarker> {
    let mut fields = payload_fields(line, GATE_PREFIX, &GATE_KEYS)?;
    let decision = match fields.take_str("decision")?.as_str() {
        "APPROVE" => Decision::Approve,
        "REVIEW" => Decision::Review,
        "BLOCK" => Decision::Block,
        other => return Err(malformed(format!("unknown decision {}", excerpt(other)))),
    };
    let resolutions = fields.take_str("resolutions")?;
    let resolutions = Occurrence::parse(&resolutions).map_err(|_| {
        malformed(format!(
            "bad resolutions {}: expected `sha256:` and 64 lowercase hex digits",
            excerpt(&resolutions)
        ))
    })?;
    Ok(GateLine {
        decision,
        resolutions,
    })
}

/// The gate line of a summary body: its last line (one trailing `\r` tolerated).
///
/// `Ok(None)` when the last line does not start with [`GATE_PREFIX`] (a summary written before
/// gate lines existed); `Err` when it does but is not a valid gate line.
pub fn gate_line_of(body: &str) -> Result<Option<GateLine>, MalformedMarker> {
    let last = body.rsplit('\n').next().unwrap_or_default();
    let last = last.strip_suffix('\r').unwrap_or(last);
    if !last.starts_with(GATE_PREFIX) {
        return Ok(None);
    }
    decode_gate_line(last).map(Some)
}

/// A short, escaped rendering of untrusted input for a reason string: the input may be
/// kilobytes long or contain line breaks, and reasons end up on one log line.
fn excerpt(text: &str) -> String {
    const MAX_CHARS: usize = 32;
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(MAX_CHARS).collect();
    if chars.next().is_some() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}

/// The top-level JSON value of a payload, with object entries kept in order and duplicates
/// kept (`serde_json::Value` would silently keep only the last of two equal keys).
enum Payload {
    Object(Vec<(String, Value)>),
    Other(&'static str),
}

struct PayloadVisitor;

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Payload, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            entries.push((key, map.next_value::<Value>()?));
        }
        Ok(Payload::Object(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Payload, A::Error> {
        // Drain it so that the parser can still verify the rest of the payload.
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Payload::Other("an array"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Payload, E> {
        Ok(Payload::Other("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Payload, E> {
        Ok(Payload::Other("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Payload, E> {
        Ok(Payload::Other("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Payload, E> {
        Ok(Payload::Other("a number"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Payload, E> {
        Ok(Payload::Other("a string"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Payload, E> {
        Ok(Payload::Other("null"))
    }
}

fn parse_object(payload: &str) -> Result<Vec<(String, Value)>, MalformedMarker> {
    let json_error = |e: serde_json::Error| {
        if e.is_eof() {
            malformed("truncated JSON payload")
        } else {
            malformed(format!("invalid JSON payload: {e}"))
        }
    };
    let mut de = serde_json::Deserializer::from_str(payload);
    let parsed = (&mut de)
        .deserialize_any(PayloadVisitor)
        .map_err(json_error)?;
    de.end().map_err(json_error)?;
    match parsed {
        Payload::Object(entries) => Ok(entries),
        Payload::Other(what) => Err(malformed(format!(
            "marker payload is {what}, not an object"
        ))),
    }
}

/// The payload's entries after the key-level checks: no duplicates, only known keys.
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn new(entries: Vec<(String, Value)>, keys: &[&str]) -> Result<Self, MalformedMarker> {
        for (i, (key, _)) in entries.iter().enumerate() {
            if entries[..i].iter().any(|(earlier, _)| earlier == key) {
                return Err(malformed(format!("duplicate key {}", excerpt(key))));
            }
        }
        if let Some((key, _)) = entries
            .iter()
            .find(|(key, _)| !keys.contains(&key.as_str()))
        {
            return Err(malformed(format!("unknown key {}", excerpt(key))));
        }
        Ok(Fields(entries))
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.swap_remove(i).1)
    }

    fn take_str(&mut self, key: &str) -> Result<String, MalformedMarker> {
        match self.take(key) {
            None => Err(malformed(format!("missing key `{key}`"))),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(malformed(format!("key `{key}` is not a string"))),
        }
    }
}

/// Makes one body line safe from GitLab quick actions, which run on lines starting with `/`.
///
/// A `/` that starts the line, possibly after whitespace (any Unicode white space, so also
/// form feeds, vertical tabs and line separators, which some renderers or a `strip` treat as
/// nothing or as a line break) or NUL characters, becomes `\/`: a Markdown
/// backslash escape that renders as `/` (except inside code blocks, where it shows as typed;
/// a harmless cost next to a bot accidentally closing or approving a merge request). A lone
/// `\r` counts as a line break too, since Markdown treats it as one.
pub fn escape_body_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 1);
    let mut at_line_start = true;
    for ch in line.chars() {
        match ch {
            '\n' | '\r' => at_line_start = true,
            c if c.is_whitespace() || c == '\0' => {}
            '/' if at_line_start => {
                out.push('\\');
                at_line_start = false;
            }
            _ => at_line_start = false,
        }
        out.push(ch);
    }
    out
}

/// An artifact body: the marker line, `\n`, then `text` with every line passed through
/// [`escape_body_line`]. An empty `text` leaves the body as the marker line plus `\n`.
pub fn compose_body(marker: &Marker, text: &str) -> String {
    // escape_body_line tracks line starts itself, so the whole text goes through at once.
    format!("{}\n{}", encode(marker), escape_body_line(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OCC: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

    fn occ() -> Occurrence {
        Occurrence::parse(OCC).unwrap()
    }

    fn finding(rule: &str, subject: &str) -> Marker {
        Marker::Finding {
            slot: Slot {
                rule: rule.into(),
                subject: subject.into(),
            },
            occurrence: occ(),
        }
    }

    fn summary(state: SummaryState, head: &str) -> Marker {
        summary_for(state, head, Some("main"))
    }

    fn summary_for(state: SummaryState, head: &str, target: Option<&str>) -> Marker {
        Marker::Summary {
            occurrence: occ(),
            state,
            source_sha: CommitSha::parse(head).unwrap(),
            target: target.map(str::to_owned),
        }
    }

    fn gate(decision: Decision) -> GateLine {
        GateLine {
            decision,
            resolutions: occ(),
        }
    }

    /// The payload between prefix and suffix of an encoded line.
    fn payload_of(line: &str) -> &str {
        &line[MARKER_PREFIX.len()..line.len() - MARKER_SUFFIX.len()]
    }

    fn wrap(payload: &str) -> String {
        format!("{MARKER_PREFIX}{payload}{MARKER_SUFFIX}")
    }

    /// Asserts the invariants every encoded line must satisfy, then that it decodes back.
    fn assert_round_trip(marker: &Marker) {
        let line = encode(marker);
        assert!(
            line.starts_with(MARKER_PREFIX) && line.ends_with(MARKER_SUFFIX),
            "{line}"
        );
        assert!(!line.contains(['\n', '\r']), "line break in {line:?}");
        let payload = payload_of(&line);
        for forbidden in ["-->", "<!--", "<", ">", "&"] {
            assert!(
                !payload.contains(forbidden),
                "{forbidden:?} in payload {payload:?}"
            );
        }
        assert_eq!(line.matches("-->").count(), 1, "{line:?}");
        assert_eq!(line.matches("<!--").count(), 1, "{line:?}");
        assert_eq!(decode_line(&line).as_ref(), Ok(marker));
        assert_eq!(
            decode_body(&format!("{line}\nbody")),
            Ok(Some(marker.clone()))
        );
    }

    #[test]
    fn encodes_the_spec_finding_example_byte_for_byte() {
        let m = finding(
            "retention-shrink",
            "topics/orders.yaml#/topics/orders.events.v1/retention_days",
        );
        assert_eq!(
            encode(&m),
            format!(
                r#"<!-- assent:marker {{"v":1,"kind":"finding","rule":"retention-shrink","subject":"topics/orders.yaml#/topics/orders.events.v1/retention_days","occurrence":"{OCC}"}} -->"#
            )
        );
    }

    #[test]
    fn encodes_a_summary_with_state_head_and_target_last() {
        assert_eq!(
            encode(&summary(SummaryState::Reconciling, HEAD)),
            format!(
                r#"<!-- assent:marker {{"v":1,"kind":"summary","rule":"assent/summary","subject":"","occurrence":"{OCC}","state":"reconciling","head":"{HEAD}","target":"main"}} -->"#
            )
        );
        assert!(encode(&summary(SummaryState::Verified, HEAD)).contains(r#""state":"verified""#));
    }

    #[test]
    fn a_summary_without_target_omits_the_key_and_decodes_as_no_target_recorded() {
        let line = encode(&summary_for(SummaryState::Verified, HEAD, None));
        assert_eq!(
            line,
            format!(
                r#"<!-- assent:marker {{"v":1,"kind":"summary","rule":"assent/summary","subject":"","occurrence":"{OCC}","state":"verified","head":"{HEAD}"}} -->"#
            )
        );
        match decode_line(&line).unwrap() {
            Marker::Summary { target, .. } => assert_eq!(target, None),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn hostile_branch_names_cannot_break_the_summary_marker() {
        let long = "x-->".repeat(2_500);
        for branch in [
            "release/<script>",
            "a&b",
            "-->",
            "<!-- assent:marker {} -->",
            "\"quoted\"",
            "'single'",
            "new\nline",
            "cr\r\nlf",
            "back`tick`",
            "@all",
            "\\",
            "🦀",
            "\u{202E}rtl",
            long.as_str(),
        ] {
            let marker = summary_for(SummaryState::Verified, HEAD, Some(branch));
            assert_round_trip(&marker);
            let line = encode(&marker);
            assert!(
                line.ends_with(r#""} -->"#),
                "target is the last key: {line}"
            );
        }
    }

    #[test]
    fn escapes_exactly_the_three_html_characters_and_keeps_unicode() {
        let line = encode(&finding("r", "a<b>c&d é 🦀 \u{202E}"));
        assert!(
            line.contains("\"subject\":\"a\\u003cb\\u003ec\\u0026d é 🦀 \u{202E}\""),
            "{line}"
        );
    }

    #[test]
    fn hostile_subjects_round_trip() {
        let long = "x-->".repeat(2_500);
        for subject in [
            "-->",
            "<!--",
            "<!-- assent:marker {} -->",
            "--!>",
            "\"",
            "\\",
            "\\\"",
            "a\nb",
            "a\r\nb",
            "\r",
            "\t",
            "\0",
            "\u{7f}",
            "\u{2028}\u{2029}",
            "🦀 emoji",
            "עברית \u{202E}rtl",
            "",
            long.as_str(),
        ] {
            assert_round_trip(&finding("rule", subject));
            if !subject.is_empty() {
                assert_round_trip(&finding(subject, "s"));
            }
        }
        for state in [SummaryState::Reconciling, SummaryState::Verified] {
            assert_round_trip(&summary(state, HEAD));
            assert_round_trip(&summary(state, &"f".repeat(64)));
        }
    }

    #[test]
    fn accepts_json_whitespace_key_order_and_alternative_string_spellings() {
        let spaced = wrap(&format!(
            r#" {{ "occurrence" : "{OCC}" , "subject":"s", "rule": "\u0072", "kind":"finding", "v":1 }} "#
        ));
        assert_eq!(decode_line(&spaced), Ok(finding("r", "s")));
    }

    #[test]
    fn decode_body_ignores_bodies_that_are_not_artifacts() {
        for body in [
            "",
            "LGTM",
            "\n<!-- assent:marker {} -->",
            " <!-- assent:marker {} -->",
            "<!-- assent:markers {} -->",
            "<!-- other comment -->",
            "/close",
        ] {
            assert_eq!(decode_body(body), Ok(None), "{body:?}");
        }
    }

    #[test]
    fn decode_body_reads_only_the_first_line_and_tolerates_crlf() {
        let m = finding("r", "s");
        let line = encode(&m);
        assert_eq!(decode_body(&line), Ok(Some(m.clone())));
        assert_eq!(
            decode_body(&format!("{line}\r\nrest\r\n")),
            Ok(Some(m.clone()))
        );
        assert_eq!(
            decode_body(&format!("{line}\n{}", wrap("{broken"))),
            Ok(Some(m))
        );
        assert!(
            decode_body(&format!("{line}\r\r\n")).is_err(),
            "only one trailing \\r is tolerated"
        );
    }

    #[test]
    fn decode_body_reports_a_malformed_first_line() {
        let err = decode_body(&format!("{}\nbody", wrap("{nope"))).unwrap_err();
        assert!(
            err.reason.starts_with("invalid JSON payload"),
            "{}",
            err.reason
        );
        assert_eq!(err.to_string(), err.reason);
    }

    #[test]
    fn reasons_quote_untrusted_input_briefly_and_on_one_line() {
        let key = format!("k\n{}", "y".repeat(1_000));
        let line = wrap(&format!(
            r#"{{"v":1,{}:1}}"#,
            serde_json::to_string(&key).unwrap()
        ));
        let reason = decode_line(&line).unwrap_err().reason;
        assert!(reason.starts_with("unknown key \"k\\ny"), "{reason}");
        assert!(reason.len() < 80 && !reason.contains('\n'), "{reason}");
    }

    /// A valid finding payload with `extra` appended inside its object.
    fn finding_payload(extra: &str) -> String {
        format!(
            r#"{{"v":1,"kind":"finding","rule":"r","subject":"s","occurrence":"{OCC}"{extra}}}"#
        )
    }

    fn summary_payload(rule: &str, subject: &str, tail: &str) -> String {
        format!(
            r#"{{"v":1,"kind":"summary","rule":"{rule}","subject":"{subject}","occurrence":"{OCC}"{tail}}}"#
        )
    }

    fn reason(line: &str) -> String {
        match decode_line(line) {
            Ok(m) => panic!("accepted {line:?} as {m:?}"),
            Err(e) => e.reason,
        }
    }

    macro_rules! rejects {
        ($name:ident, $line:expr, $expected:expr) => {
            #[test]
            fn $name() {
                let line: String = $line;
                let got = reason(&line);
                assert!(
                    got.starts_with($expected),
                    "reason {got:?} does not start with {:?}",
                    $expected
                );
            }
        };
    }

    rejects!(
        rejects_line_break,
        format!("{}\n", encode(&finding("r", "s"))),
        "marker line contains a line break"
    );
    rejects!(
        rejects_missing_prefix,
        format!("<!-- assent {} -->", finding_payload("")),
        "line does not start with"
    );
    rejects!(
        rejects_missing_suffix,
        format!("{MARKER_PREFIX}{}", finding_payload("")),
        "missing closing ` -->`"
    );
    rejects!(
        rejects_suffix_without_space,
        format!("{MARKER_PREFIX}{}-->", finding_payload("")),
        "text after"
    );
    rejects!(
        rejects_text_after_suffix,
        format!("{} trailing", wrap(&finding_payload(""))),
        "text after the closing `-->`"
    );
    rejects!(
        rejects_space_after_suffix,
        format!("{} ", wrap(&finding_payload(""))),
        "text after the closing `-->`"
    );
    rejects!(
        rejects_empty_payload,
        "<!-- assent:marker -->".to_owned(),
        "empty marker payload"
    );
    rejects!(rejects_blank_payload, wrap("  "), "empty marker payload");
    rejects!(
        rejects_truncated_json,
        wrap(r#"{"v":1,"kind":"fin"#),
        "truncated JSON payload"
    );
    rejects!(rejects_invalid_json, wrap("{v:1}"), "invalid JSON payload");
    rejects!(
        rejects_json_followed_by_more_json,
        wrap(&format!("{} {{}}", finding_payload(""))),
        "invalid JSON payload"
    );
    rejects!(
        rejects_array_payload,
        wrap("[1,2]"),
        "marker payload is an array, not an object"
    );
    rejects!(
        rejects_string_payload,
        wrap(r#""v""#),
        "marker payload is a string, not an object"
    );
    rejects!(
        rejects_null_payload,
        wrap("null"),
        "marker payload is null, not an object"
    );
    rejects!(
        rejects_raw_close,
        wrap(&finding_payload(r#","x":"-->""#)),
        "raw `>` in marker payload"
    );
    rejects!(
        rejects_raw_ampersand,
        wrap(&finding_payload(r#","x":"&""#)),
        "raw `&` in marker payload"
    );
    rejects!(
        rejects_duplicate_key,
        wrap(&finding_payload(r#","rule":"r""#)),
        "duplicate key \"rule\""
    );
    rejects!(
        rejects_duplicate_version,
        wrap(&finding_payload(r#","v":1"#)),
        "duplicate key \"v\""
    );
    rejects!(
        rejects_unknown_key,
        wrap(&finding_payload(r#","resolved":true"#)),
        "unknown key \"resolved\""
    );
    rejects!(
        rejects_missing_v,
        wrap(&finding_payload("").replace(r#""v":1,"#, "")),
        "missing key `v`"
    );
    rejects!(
        rejects_missing_kind,
        wrap(&finding_payload("").replace(r#""kind":"finding","#, "")),
        "missing key `kind`"
    );
    rejects!(
        rejects_missing_rule,
        wrap(&finding_payload("").replace(r#""rule":"r","#, "")),
        "missing key `rule`"
    );
    rejects!(
        rejects_missing_subject,
        wrap(&finding_payload("").replace(r#""subject":"s","#, "")),
        "missing key `subject`"
    );
    rejects!(
        rejects_missing_occurrence,
        wrap(&finding_payload("").replace(&format!(r#","occurrence":"{OCC}""#), "")),
        "missing key `occurrence`"
    );
    rejects!(
        rejects_version_2,
        wrap(&finding_payload("").replace(r#""v":1"#, r#""v":2"#)),
        "unsupported marker version"
    );
    rejects!(
        rejects_version_float,
        wrap(&finding_payload("").replace(r#""v":1"#, r#""v":1.0"#)),
        "unsupported marker version"
    );
    rejects!(
        rejects_version_exponent,
        wrap(&finding_payload("").replace(r#""v":1"#, r#""v":1e0"#)),
        "unsupported marker version"
    );
    rejects!(
        rejects_version_string,
        wrap(&finding_payload("").replace(r#""v":1"#, r#""v":"1""#)),
        "unsupported marker version"
    );
    rejects!(
        rejects_unknown_kind,
        wrap(&finding_payload("").replace("finding", "thread")),
        "unknown marker kind \"thread\""
    );
    rejects!(
        rejects_kind_not_string,
        wrap(&finding_payload("").replace(r#""finding""#, "1")),
        "key `kind` is not a string"
    );
    rejects!(
        rejects_rule_not_string,
        wrap(&finding_payload("").replace(r#""r""#, "null")),
        "key `rule` is not a string"
    );
    rejects!(
        rejects_empty_rule,
        wrap(&finding_payload("").replace(r#""rule":"r""#, r#""rule":"""#)),
        "empty rule"
    );
    rejects!(
        rejects_uppercase_occurrence,
        wrap(&finding_payload("").replace("abcdef", "ABCDEF")),
        "bad occurrence"
    );
    rejects!(
        rejects_short_occurrence,
        wrap(&finding_payload("").replace("cdef\"", "cde\"")),
        "bad occurrence"
    );
    rejects!(
        rejects_finding_with_summary_rule,
        wrap(&finding_payload("").replace(r#""r""#, r#""assent/summary""#)),
        "finding marker uses the reserved rule"
    );
    rejects!(
        rejects_finding_with_state,
        wrap(&finding_payload(r#","state":"verified""#)),
        "finding marker carries `state`"
    );
    rejects!(
        rejects_finding_with_head,
        wrap(&finding_payload(&format!(r#","head":"{HEAD}""#))),
        "finding marker carries `head`"
    );
    rejects!(
        rejects_summary_with_other_rule,
        wrap(&summary_payload(
            "r",
            "",
            &format!(r#","state":"verified","head":"{HEAD}""#)
        )),
        "summary marker has rule \"r\""
    );
    rejects!(
        rejects_summary_with_subject,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "s",
            &format!(r#","state":"verified","head":"{HEAD}""#)
        )),
        "summary marker has a non-empty subject"
    );
    rejects!(
        rejects_summary_without_state,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","head":"{HEAD}""#)
        )),
        "summary marker lacks `state`"
    );
    rejects!(
        rejects_summary_without_head,
        wrap(&summary_payload(SUMMARY_RULE, "", r#","state":"verified""#)),
        "summary marker lacks `head`"
    );
    rejects!(
        rejects_unknown_state,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"Verified","head":"{HEAD}""#)
        )),
        "unknown summary state \"Verified\""
    );
    rejects!(
        rejects_state_not_string,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":true,"head":"{HEAD}""#)
        )),
        "key `state` is not a string"
    );
    rejects!(
        rejects_head_not_string,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            r#","state":"verified","head":1"#
        )),
        "key `head` is not a string"
    );
    rejects!(
        rejects_uppercase_head,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"verified","head":"{}""#, HEAD.to_uppercase())
        )),
        "bad head"
    );
    rejects!(
        rejects_short_head,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"verified","head":"{}""#, &HEAD[..39])
        )),
        "bad head"
    );
    rejects!(
        rejects_finding_with_target,
        wrap(&finding_payload(r#","target":"main""#)),
        "finding marker carries `target`"
    );
    rejects!(
        rejects_target_not_string,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"verified","head":"{HEAD}","target":null"#)
        )),
        "key `target` is not a string"
    );
    rejects!(
        rejects_empty_target,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"verified","head":"{HEAD}","target":"""#)
        )),
        "empty target"
    );
    rejects!(
        rejects_duplicate_target,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"verified","head":"{HEAD}","target":"a","target":"b""#)
        )),
        "duplicate key \"target\""
    );
    rejects!(
        rejects_raw_angle_bracket_in_target,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"verified","head":"{HEAD}","target":"a<b""#)
        )),
        "raw `<` in marker payload"
    );
    rejects!(
        rejects_48_digit_head,
        wrap(&summary_payload(
            SUMMARY_RULE,
            "",
            &format!(r#","state":"verified","head":"{HEAD}01234567""#)
        )),
        "bad head"
    );

    fn no_line_starts_with_slash(text: &str) -> bool {
        text.split(['\n', '\r'])
            .all(|line| !line.trim_start_matches([' ', '\t']).starts_with('/'))
    }

    #[test]
    fn escape_body_line_neutralises_quick_actions() {
        assert_eq!(escape_body_line("/close"), "\\/close");
        assert_eq!(escape_body_line("  /approve"), "  \\/approve");
        assert_eq!(escape_body_line("\t /merge"), "\t \\/merge");
        for lead in ["\u{c}", "\u{b}", "\0", "\u{a0}", "\u{2028}", " \u{c}\u{c}"] {
            assert_eq!(
                escape_body_line(&format!("{lead}/a")),
                format!("{lead}\\/a"),
                "{lead:?}"
            );
        }
        assert_eq!(escape_body_line("//x"), "\\//x");
        assert_eq!(escape_body_line("a /b"), "a /b");
        assert_eq!(escape_body_line("\\/close"), "\\/close");
        assert_eq!(escape_body_line("topics/a.yaml"), "topics/a.yaml");
        assert_eq!(escape_body_line(""), "");
        assert_eq!(escape_body_line("   "), "   ");
    }

    #[test]
    fn compose_body_escapes_every_line_and_keeps_the_marker() {
        let m = finding("r", "/subject");
        let text = "/close\nok\n  /label ~x\r\n\t/merge\r/approve\n\nend /here";
        let body = compose_body(&m, text);
        let (first, rest) = body.split_once('\n').unwrap();
        assert_eq!(first, encode(&m));
        assert_eq!(
            rest,
            "\\/close\nok\n  \\/label ~x\r\n\t\\/merge\r\\/approve\n\nend /here"
        );
        assert!(no_line_starts_with_slash(&body), "{body:?}");
        assert_eq!(decode_body(&body), Ok(Some(m.clone())));
        assert_eq!(compose_body(&m, ""), format!("{}\n", encode(&m)));
    }

    #[test]
    fn encodes_the_gate_line_byte_for_byte_and_round_trips() {
        assert_eq!(
            encode_gate_line(&gate(Decision::Review)),
            format!(r#"<!-- assent:gate {{"decision":"REVIEW","resolutions":"{OCC}"}} -->"#)
        );
        for decision in [Decision::Approve, Decision::Review, Decision::Block] {
            let line = encode_gate_line(&gate(decision));
            assert_eq!(decode_gate_line(&line), Ok(gate(decision)));
        }
    }

    #[test]
    fn the_gate_line_is_read_from_the_last_line_only() {
        let line = encode_gate_line(&gate(Decision::Review));
        let body = format!(
            "{}\ntext\n{line}",
            encode(&summary(SummaryState::Verified, HEAD))
        );
        assert_eq!(gate_line_of(&body), Ok(Some(gate(Decision::Review))));
        assert_eq!(
            gate_line_of(&format!("{body}\r")),
            Ok(Some(gate(Decision::Review)))
        );
        // Anywhere but last, it is text like any other.
        assert_eq!(gate_line_of(&format!("{line}\nlater text")), Ok(None));
        assert_eq!(gate_line_of("no gate line"), Ok(None));
        assert_eq!(gate_line_of(""), Ok(None));
        // A marker is not a gate line, nor the other way round.
        assert_eq!(decode_body(&line), Ok(None));
        assert!(decode_gate_line(&encode(&summary(SummaryState::Verified, HEAD))).is_err());
        let broken = format!("text\n{GATE_PREFIX}{{\"decision\":\"REVIEW\"}} -->");
        assert_eq!(
            gate_line_of(&broken).unwrap_err().reason,
            "missing key `resolutions`"
        );
    }

    #[test]
    fn gate_lines_are_decoded_strictly() {
        let cases = [
            (
                format!(r#"{{"decision":"REVIEW","resolutions":"{OCC}","x":1}}"#),
                "unknown key \"x\"",
            ),
            (
                format!(r#"{{"decision":"review","resolutions":"{OCC}"}}"#),
                "unknown decision \"review\"",
            ),
            (
                format!(r#"{{"decision":"REVIEW","decision":"APPROVE","resolutions":"{OCC}"}}"#),
                "duplicate key \"decision\"",
            ),
            (
                r#"{"decision":"REVIEW","resolutions":"sha256:00"}"#.to_owned(),
                "bad resolutions",
            ),
            (
                format!(r#"{{"decision":1,"resolutions":"{OCC}"}}"#),
                "key `decision` is not a string",
            ),
            (
                format!(r#"{{"resolutions":"{OCC}"}}"#),
                "missing key `decision`",
            ),
            (
                format!(r#"{{"decision":"REVIEW","resolutions":"{OCC}","v":1}}"#),
                "unknown key \"v\"",
            ),
            (
                format!(r#"{{"decision":"<REVIEW>","resolutions":"{OCC}"}}"#),
                "raw `<` in marker payload",
            ),
        ];
        for (payload, expected) in cases {
            let line = format!("{GATE_PREFIX}{payload}{MARKER_SUFFIX}");
            let reason = decode_gate_line(&line).unwrap_err().reason;
            assert!(reason.starts_with(expected), "{line}: {reason}");
        }
        let trailing = format!("{} x", encode_gate_line(&gate(Decision::Review)));
        assert!(decode_gate_line(&trailing).is_err());
    }

    /// Strings built from the pieces most likely to break a marker, mixed with arbitrary text.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("-->".to_owned()),
            Just("<!--".to_owned()),
            Just("--".to_owned()),
            Just("\"".to_owned()),
            Just("\\".to_owned()),
            Just("\n".to_owned()),
            Just("\r".to_owned()),
            Just("\t".to_owned()),
            Just("\0".to_owned()),
            Just("&amp;".to_owned()),
            Just("🦀".to_owned()),
            Just("\u{202E}".to_owned()),
            Just("/".to_owned()),
            any::<char>().prop_map(String::from),
            "[a-z0-9/#._-]{0,12}",
        ];
        prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
    }

    fn any_marker() -> impl Strategy<Value = Marker> {
        let occurrence = any::<[u8; 8]>().prop_map(|seed| Occurrence::digest(&seed));
        let finding = (
            hostile().prop_filter("rule must be a finding rule", |r| {
                !r.is_empty() && r != SUMMARY_RULE
            }),
            hostile(),
            occurrence.clone(),
        )
            .prop_map(|(rule, subject, occurrence)| Marker::Finding {
                slot: Slot { rule, subject },
                occurrence,
            });
        let state = prop_oneof![
            Just(SummaryState::Reconciling),
            Just(SummaryState::Verified)
        ];
        let target = prop_oneof![
            1 => Just(None),
            3 => hostile().prop_filter("a target is never empty", |t| !t.is_empty()).prop_map(Some),
        ];
        let summary = (occurrence, state, "[0-9a-f]{40}|[0-9a-f]{64}", target).prop_map(
            |(occurrence, state, head, target)| Marker::Summary {
                occurrence,
                state,
                source_sha: CommitSha::parse(&head).unwrap(),
                target,
            },
        );
        prop_oneof![3 => finding, 1 => summary]
    }

    proptest! {
        #[test]
        fn every_marker_round_trips_on_one_safe_line(marker in any_marker()) {
            assert_round_trip(&marker);
        }

        #[test]
        fn composed_bodies_decode_and_never_start_a_line_with_a_slash(marker in any_marker(), text in hostile()) {
            let body = compose_body(&marker, &text);
            prop_assert_eq!(decode_body(&body), Ok(Some(marker)));
            prop_assert!(no_line_starts_with_slash(&body), "{:?}", body);
        }

        #[test]
        fn escaping_only_inserts_backslashes_and_is_idempotent(text in hostile()) {
            let once = escape_body_line(&text);
            prop_assert_eq!(escape_body_line(&once), once.clone());
            prop_assert_eq!(once.replace("\\/", "/"), text.replace("\\/", "/"));
        }

        #[test]
        fn decoding_arbitrary_lines_never_panics(tail in hostile()) {
            let _ = decode_body(&format!("{MARKER_PREFIX}{tail}"));
            let _ = gate_line_of(&format!("text\n{GATE_PREFIX}{tail}"));
        }

        #[test]
        fn no_text_before_it_changes_what_the_gate_line_says(text in hostile()) {
            let gate = GateLine { decision: Decision::Review, resolutions: occ() };
            let body = format!("{text}\n{}", encode_gate_line(&gate));
            prop_assert_eq!(gate_line_of(&body), Ok(Some(gate)));
        }
    }
}
