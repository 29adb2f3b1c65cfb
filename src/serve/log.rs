//! serve's log: one line per event and per action on stderr, as text or JSON. Fields are
//! chosen by the caller from what serve computed (kinds, ids, verdicts, counts), never from
//! a payload, the secret or the token.

use std::io::Write;

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `2026-12-03T18:00:00.000Z INFO webhook event=merge_request project=42 iid=7`.
    Text,
    /// One JSON object per line: `ts`, `level`, `msg`, then the fields.
    Json,
}

/// A log field's value.
#[derive(Debug, Clone)]
pub enum Field {
    /// A number.
    Num(u64),
    /// A text (quoted in text form when it holds a space, `=` or a quote).
    Text(String),
}

impl From<u64> for Field {
    fn from(v: u64) -> Self {
        Field::Num(v)
    }
}

impl From<usize> for Field {
    fn from(v: usize) -> Self {
        Field::Num(v as u64)
    }
}

impl From<&str> for Field {
    fn from(v: &str) -> Self {
        Field::Text(v.to_owned())
    }
}

impl From<String> for Field {
    fn from(v: String) -> Self {
        Field::Text(v)
    }
}

/// The logger.
#[derive(Debug, Clone, Copy)]
pub struct Log {
    format: LogFormat,
}

impl Log {
    /// A logger writing `format` lines to stderr.
    pub fn new(format: LogFormat) -> Self {
        Log { format }
    }

    /// The line for `msg` with `fields`, as it is written.
    pub fn line(&self, level: &str, msg: &str, fields: &[(&str, Field)]) -> String {
        let ts = crate::clock::now().to_rfc3339();
        match self.format {
            LogFormat::Json => {
                let mut doc = serde_json::Map::new();
                doc.insert("ts".into(), ts.into());
                doc.insert("level".into(), level.into());
                doc.insert("msg".into(), msg.into());
                for (k, v) in fields {
                    let value = match v {
                        Field::Num(n) => serde_json::Value::from(*n),
                        Field::Text(t) => serde_json::Value::from(t.as_str()),
                    };
                    doc.insert((*k).into(), value);
                }
                serde_json::Value::Object(doc).to_string()
            }
            LogFormat::Text => {
                let mut out = format!("{ts} {} {msg}", level.to_uppercase());
                for (k, v) in fields {
                    match v {
                        Field::Num(n) => out.push_str(&format!(" {k}={n}")),
                        Field::Text(t)
                            if t.is_empty() || t.contains([' ', '=', '"', '\n', '\r', '\\']) =>
                        {
                            out.push_str(&format!(" {k}={}", serde_json::Value::from(t.as_str())))
                        }
                        Field::Text(t) => out.push_str(&format!(" {k}={t}")),
                    }
                }
                out
            }
        }
    }

    /// Writes one line on stderr.
    pub fn write(&self, level: &str, msg: &str, fields: &[(&str, Field)]) {
        let line = self.line(level, msg, fields);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }

    /// An `info` line.
    pub fn info(&self, msg: &str, fields: &[(&str, Field)]) {
        self.write("info", msg, fields);
    }

    /// A `warn` line.
    pub fn warn(&self, msg: &str, fields: &[(&str, Field)]) {
        self.write("warn", msg, fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_quotes_what_could_pose_as_a_field_and_json_is_one_object() {
        let fields = [
            ("iid", Field::from(7u64)),
            ("detail", Field::from("a b=c\nx")),
        ];
        let text = Log::new(LogFormat::Text).line("info", "classified", &fields);
        assert!(
            text.ends_with(r#" INFO classified iid=7 detail="a b=c\nx""#),
            "{text}"
        );
        assert!(!text.contains('\n'));
        let json = Log::new(LogFormat::Json).line("info", "classified", &fields);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(doc["msg"], "classified");
        assert_eq!(doc["iid"], 7);
        assert_eq!(doc["detail"], "a b=c\nx");
    }
}
