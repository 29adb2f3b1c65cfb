//! Canonical JSON: the byte form hashed into occurrences and digests.
//!
//! Object keys sorted by their UTF-8 bytes, no insignificant whitespace, strings and numbers
//! as `serde_json` writes them. Keys are sorted here rather than trusting the map type,
//! because Cargo feature unification could switch `serde_json` to insertion order.

use serde_json::Value;
use sha2::Digest;

/// Where canonical JSON goes: a string, or a hash that never holds the text (an occurrence
/// over a grouped finding's members would otherwise build megabytes only to hash them).
pub trait Sink {
    /// Appends `text`.
    fn put(&mut self, text: &str);
}

impl Sink for String {
    fn put(&mut self, text: &str) {
        self.push_str(text);
    }
}

impl Sink for sha2::Sha256 {
    fn put(&mut self, text: &str) {
        self.update(text.as_bytes());
    }
}

/// Writes `value` in canonical form.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Writes `value` in canonical form to `out`.
pub fn write(value: &Value, out: &mut impl Sink) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.put("{");
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_str(key, out);
                out.put(":");
                write(item, out);
            }
            out.put("}");
        }
        Value::Array(items) => {
            out.put("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write(item, out);
            }
            out.put("]");
        }
        Value::String(text) => write_str(text, out),
        scalar => out.put(&scalar.to_string()),
    }
}

/// Writes `text` as a JSON string, escaped as `serde_json` escapes it.
pub fn write_str(text: &str, out: &mut impl Sink) {
    out.put(&serde_json::to_string(text).expect("a string always serializes"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_recursively_without_whitespace() {
        let v = json!({"b": [1, {"z": null, "a": "x"}], "a": true, "é": 1.5});
        assert_eq!(
            to_string(&v),
            r#"{"a":true,"b":[1,{"a":"x","z":null}],"é":1.5}"#
        );
    }

    #[test]
    fn escapes_strings_like_json() {
        assert_eq!(to_string(&json!("a\"b\n")), r#""a\"b\n""#);
    }
}
