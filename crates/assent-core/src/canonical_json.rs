//! Canonical JSON: the byte form hashed into occurrences and digests.
//!
//! Object keys sorted by their UTF-8 bytes, no insignificant whitespace, strings and numbers
//! as `serde_json` writes them. Keys are sorted here rather than trusting the map type,
//! because Cargo feature unification could switch `serde_json` to insertion order.

use serde_json::Value;

/// Writes `value` in canonical form.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
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
