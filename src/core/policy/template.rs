//! Message templates: `{{ name }}` placeholders, parsed at load time, rendered per finding.
//!
//! Placeholders: `old`, `new`, `entry`, `file`, `pointer`, `kind`, `rule`; whitespace inside
//! the braces is optional. Strings render bare, other JSON values as compact canonical JSON
//! (sorted keys, so a message never depends on map order), and an absent value as `null`.
//! An unknown placeholder or an unclosed `{{` is a load-time problem, not a literal, so a typo
//! surfaces in `assent lint` instead of in a merge request.
//!
//! Rendering does not neutralise Markdown or GitLab quick actions: the note composer owns the
//! body layout (e.g. that no body line starts with `/`).

use serde_json::Value;

use crate::core::canonical_json;

/// Why a template was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{{` without a matching `}}`.
    #[error("unclosed `{{{{` in message template")]
    Unclosed,
    /// A placeholder name outside the documented set.
    #[error(
        "unknown placeholder `{{{{ {0} }}}}` in message template (known: old, new, entry, file, pointer, kind, rule)"
    )]
    Unknown(String),
}

/// One substitutable value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Var {
    Old,
    New,
    Entry,
    File,
    Pointer,
    Kind,
    Rule,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(Var),
}

/// A parsed message template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// The values a template is rendered with.
#[derive(Debug, Clone, Copy)]
pub struct TemplateValues<'a> {
    /// The old value (`None` when absent).
    pub old: Option<&'a Value>,
    /// The new value (`None` when absent).
    pub new: Option<&'a Value>,
    /// The identity of the enclosing list entry, if any.
    pub entry: Option<&'a str>,
    /// The repository path.
    pub file: &'a str,
    /// The RFC 6901 pointer.
    pub pointer: &'a str,
    /// `add`, `modify` or `delete`.
    pub kind: &'a str,
    /// The rule id.
    pub rule: &'a str,
}

impl Template {
    /// Parses `source`.
    pub fn parse(source: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or(TemplateError::Unclosed)?;
            let name = after[..close].trim();
            let var = match name {
                "old" => Var::Old,
                "new" => Var::New,
                "entry" => Var::Entry,
                "file" => Var::File,
                "pointer" => Var::Pointer,
                "kind" => Var::Kind,
                "rule" => Var::Rule,
                other => return Err(TemplateError::Unknown(other.to_owned())),
            };
            parts.push(Part::Var(var));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Template { parts })
    }

    /// The template used when a rule has no `message`: `{{rule}}: {{kind}} of {{pointer}} in {{file}}`.
    pub fn default_message() -> Self {
        Template {
            parts: vec![
                Part::Var(Var::Rule),
                Part::Text(": ".into()),
                Part::Var(Var::Kind),
                Part::Text(" of ".into()),
                Part::Var(Var::Pointer),
                Part::Text(" in ".into()),
                Part::Var(Var::File),
            ],
        }
    }

    /// Renders with `values`.
    pub fn render(&self, values: &TemplateValues<'_>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Var(var) => match var {
                    Var::Old => push_json(&mut out, values.old),
                    Var::New => push_json(&mut out, values.new),
                    Var::Entry => out.push_str(values.entry.unwrap_or("null")),
                    Var::File => out.push_str(values.file),
                    Var::Pointer => out.push_str(values.pointer),
                    Var::Kind => out.push_str(values.kind),
                    Var::Rule => out.push_str(values.rule),
                },
            }
        }
        out
    }
}

fn push_json(out: &mut String, value: Option<&Value>) {
    match value {
        None | Some(Value::Null) => out.push_str("null"),
        Some(Value::String(s)) => out.push_str(s),
        Some(other) => out.push_str(&canonical_json::to_string(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values<'a>(old: Option<&'a Value>, new: Option<&'a Value>) -> TemplateValues<'a> {
        TemplateValues {
            old,
            new,
            entry: Some("orders.events.v1"),
            file: "topics/orders.yaml",
            pointer: "/topics/orders.events.v1/retention_days",
            kind: "modify",
            rule: "retention-shrink",
        }
    }

    #[test]
    fn renders_every_placeholder_with_optional_whitespace() {
        let t = Template::parse(
            "{{rule}}|{{ kind }}|{{  file}}|{{pointer }}|{{ entry }}|{{old}}|{{new}}",
        )
        .unwrap();
        let (o, n) = (json!(30), json!(7));
        assert_eq!(
            t.render(&values(Some(&o), Some(&n))),
            "retention-shrink|modify|topics/orders.yaml|/topics/orders.events.v1/retention_days|orders.events.v1|30|7"
        );
    }

    #[test]
    fn strings_are_bare_other_json_is_compact_and_absent_is_null() {
        let t = Template::parse("[{{ old }}] -> [{{ new }}]").unwrap();
        let s = json!("a \"quoted\" name");
        let m = json!({"b": [1, 2.5, true], "a": null});
        assert_eq!(
            t.render(&values(Some(&s), Some(&m))),
            r#"[a "quoted" name] -> [{"a":null,"b":[1,2.5,true]}]"#
        );
        assert_eq!(
            t.render(&values(None, Some(&Value::Null))),
            "[null] -> [null]"
        );
        let mut v = values(None, None);
        v.entry = None;
        assert_eq!(Template::parse("{{entry}}").unwrap().render(&v), "null");
    }

    #[test]
    fn text_without_placeholders_and_single_braces_pass_through() {
        let t = Template::parse("a {b} } { c").unwrap();
        assert_eq!(t.render(&values(None, None)), "a {b} } { c");
        assert_eq!(Template::parse("").unwrap().render(&values(None, None)), "");
    }

    #[test]
    fn unknown_and_unclosed_placeholders_are_errors() {
        assert_eq!(
            Template::parse("{{ olds }}"),
            Err(TemplateError::Unknown("olds".into()))
        );
        assert_eq!(
            Template::parse("{{}}"),
            Err(TemplateError::Unknown("".into()))
        );
        assert_eq!(Template::parse("x {{ old "), Err(TemplateError::Unclosed));
        assert!(
            TemplateError::Unknown("x".into())
                .to_string()
                .contains("`{{ x }}`")
        );
    }

    #[test]
    fn default_message_names_rule_kind_pointer_and_file() {
        let v = values(None, None);
        assert_eq!(
            Template::default_message().render(&v),
            "retention-shrink: modify of /topics/orders.events.v1/retention_days in topics/orders.yaml"
        );
    }
}
