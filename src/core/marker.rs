//! Provisional marker codec (replaced by the strict codec).

use crate::core::model::{Occurrence, Slot};

/// Detection sentinel.
pub const MARKER_PREFIX: &str = "<!-- assent:marker ";
/// Closing sentinel.
pub const MARKER_SUFFIX: &str = " -->";

/// Summary state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryState {
    /// Writes in progress.
    Reconciling,
    /// Rescan matched.
    Verified,
}

impl SummaryState {
    /// Name.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryState::Reconciling => "reconciling",
            SummaryState::Verified => "verified",
        }
    }
}

/// A marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// Finding thread.
    Finding {
        /// Slot.
        slot: Slot,
        /// Occurrence.
        occurrence: Occurrence,
    },
    /// Summary note.
    Summary {
        /// Occurrence.
        occurrence: Occurrence,
        /// State.
        state: SummaryState,
        /// Head.
        head: String,
    },
}

/// Malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct MalformedMarker {
    /// Reason.
    pub reason: String,
}

fn bad(reason: &str) -> MalformedMarker {
    MalformedMarker { reason: reason.into() }
}

/// Encode.
pub fn encode(marker: &Marker) -> String {
    let json = match marker {
        Marker::Finding { slot, occurrence } => format!(
            r#"{{"v":1,"kind":"finding","rule":{},"subject":{},"occurrence":{}}}"#,
            serde_json::Value::from(slot.rule.clone()),
            serde_json::Value::from(slot.subject.clone()),
            serde_json::Value::from(occurrence.as_str())
        ),
        Marker::Summary { occurrence, state, head } => format!(
            r#"{{"v":1,"kind":"summary","rule":"assent/summary","subject":"","occurrence":{},"state":"{}","head":{}}}"#,
            serde_json::Value::from(occurrence.as_str()),
            state.as_str(),
            serde_json::Value::from(head.clone())
        ),
    };
    let json = json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026");
    format!("{MARKER_PREFIX}{json}{MARKER_SUFFIX}")
}

/// Decode the first line of a body.
pub fn decode_body(body: &str) -> Result<Option<Marker>, MalformedMarker> {
    let line = body.split('\n').next().unwrap_or("").trim_end_matches('\r');
    if !line.starts_with(MARKER_PREFIX) {
        return Ok(None);
    }
    decode_line(line).map(Some)
}

/// Decode one line.
pub fn decode_line(line: &str) -> Result<Marker, MalformedMarker> {
    let json = line
        .strip_prefix(MARKER_PREFIX)
        .and_then(|l| l.strip_suffix(MARKER_SUFFIX))
        .ok_or_else(|| bad("missing closing -->"))?;
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(&e.to_string()))?;
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned).ok_or_else(|| bad(k));
    if v.get("v") != Some(&serde_json::json!(1)) {
        return Err(bad("wrong version"));
    }
    let occurrence = Occurrence::parse(&s("occurrence")?).map_err(|_| bad("bad occurrence"))?;
    match s("kind")?.as_str() {
        "finding" => Ok(Marker::Finding { slot: Slot { rule: s("rule")?, subject: s("subject")? }, occurrence }),
        "summary" => Ok(Marker::Summary {
            occurrence,
            state: match s("state")?.as_str() {
                "verified" => SummaryState::Verified,
                "reconciling" => SummaryState::Reconciling,
                _ => return Err(bad("state")),
            },
            head: s("head")?,
        }),
        _ => Err(bad("kind")),
    }
}

/// Escape a body line.
pub fn escape_body_line(line: &str) -> String {
    let trimmed = line.trim_start_matches([' ', '\t']);
    if trimmed.starts_with('/') {
        let lead = &line[..line.len() - trimmed.len()];
        format!("{lead}\\{trimmed}")
    } else {
        line.to_owned()
    }
}

/// Compose a body.
pub fn compose_body(marker: &Marker, text: &str) -> String {
    let mut out = encode(marker);
    for line in text.split('\n') {
        out.push('\n');
        out.push_str(&escape_body_line(line));
    }
    out
}
