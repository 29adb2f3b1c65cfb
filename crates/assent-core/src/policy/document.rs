//! The policy document v1: its strict schema, and where things are in the text.
//!
//! Loading is two passes over one file:
//!
//! 1. **Typed, strict.** `serde_yaml` deserialises the text into [`RawDocument`] with
//!    `deny_unknown_fields` everywhere. Structure errors (YAML syntax, unknown or missing
//!    fields, wrong types, duplicate keys) carry a line from `serde_yaml`'s `Location`.
//!    Only the first structure error of a file can be reported: after it the parser has no
//!    trustworthy position. Values whose *meaning* is checked later (effect, kinds, globs,
//!    pointer patterns, ids, `when`, messages) are plain strings here, so that a file whose
//!    shape is right yields *all* of its semantic problems, not just the first.
//! 2. **Line scan.** `serde_yaml` keeps no positions on values, so [`LineMap`] scans the text
//!    for the lines of top-level keys, of each item of the block sequence under `rules:`, and
//!    of the fields inside each item. Semantic problems are attached to the most precise of
//!    those lines. The scan understands block style (what people write); for flow style
//!    (`rules: [{...}]`) it degrades to the line of `rules:`.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

/// The `apiVersion` this module reads.
pub const API_VERSION: &str = "assent/v1";
/// The `kind` this module reads.
pub const KIND: &str = "Policy";

/// A document exactly as written, before semantic checks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawDocument {
    /// Must be [`API_VERSION`].
    pub api_version: String,
    /// Must be [`KIND`].
    pub kind: String,
    /// File glob → (list pointer pattern → identity field), in document order.
    #[serde(default)]
    pub identities: OrderedMap<OrderedMap<String>>,
    /// Who may assent to the challenges of this file's rules (rules may override).
    #[serde(default)]
    pub assenters: Option<RawAssenters>,
    /// Must be non-empty.
    pub rules: Vec<RawRule>,
}

/// `assenters:` as written, on a policy file or a rule.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAssenters {
    /// Usernames who may assent whatever their role.
    #[serde(default)]
    pub users: Vec<String>,
    /// The least project role that may assent (`developer`, `maintainer`, `owner`, …).
    #[serde(default)]
    pub min_role: Option<String>,
}

/// One rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    /// Unique id.
    pub id: String,
    /// What the rule applies to.
    #[serde(rename = "match")]
    pub matcher: RawMatch,
    /// Optional CEL predicate.
    #[serde(default)]
    pub when: Option<String>,
    /// `comment`, `challenge` or `block`.
    pub effect: String,
    /// Optional message template.
    #[serde(default)]
    pub message: Option<String>,
    /// Who may assent to this rule's challenges; replaces the file's `assenters`.
    #[serde(default)]
    pub assenters: Option<RawAssenters>,
    /// Above this many findings in one merge request the rule's findings share one thread
    /// (SPEC §11.3); any YAML value here, checked to be a positive integer when loading.
    #[serde(default)]
    pub group_above: Option<serde_yaml::Value>,
}

/// A rule's `match` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMatch {
    /// Repository path globs; required and non-empty.
    pub files: Vec<String>,
    /// Pointer pattern; absent means every pointer.
    #[serde(default)]
    pub pointer: Option<String>,
    /// Change kinds; absent means all.
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
}

/// A string-keyed mapping that keeps document order (identity declarations are consulted
/// first-match, so order is meaning) and rejects duplicate keys (which YAML forbids but
/// `serde_yaml` lets through to maps) naming the key; `serde_yaml` positions that error at
/// the start of the mapping holding it.
#[derive(Debug)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V2<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping with string keys")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut entries: Vec<(String, V)> = Vec::new();
                while let Some(key) = access.next_key::<String>()? {
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
                    }
                    let value = access.next_value()?;
                    entries.push((key, value));
                }
                Ok(OrderedMap(entries))
            }
        }
        deserializer.deserialize_map(V2(PhantomData))
    }
}

/// A structure error: message and 1-based line when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureError {
    /// 1-based line.
    pub line: Option<usize>,
    /// Without `serde_yaml`'s " at line N column M" suffix (the line is carried separately).
    pub message: String,
}

/// Pass 1: strict typed parse.
pub fn parse(text: &str) -> Result<RawDocument, StructureError> {
    serde_yaml::from_str::<RawDocument>(text).map_err(|e| {
        let line = e.location().map(|l| l.line());
        let full = e.to_string();
        let message = match full.find(" at line ") {
            Some(cut) if line.is_some() => full[..cut].to_owned(),
            _ => full,
        };
        let message = if message == "EOF while parsing a value" {
            "empty policy document".to_owned()
        } else {
            message
        };
        // serde_yaml gives no position for a second document: point at its `---`.
        let line = line.or_else(|| {
            second_document_line(text).filter(|_| message.contains("more than one document"))
        });
        StructureError { line, message }
    })
}

/// The 1-based line of the `---` that starts a second document, if any: a marker before
/// any content only opens the first document.
fn second_document_line(text: &str) -> Option<usize> {
    let mut seen_content = false;
    for (i, line) in text.lines().enumerate() {
        let is_marker = line == "---" || line.starts_with("--- ");
        if is_marker && seen_content {
            return Some(i + 1);
        }
        let trimmed = line.trim();
        if !is_marker && !trimmed.is_empty() && !trimmed.starts_with('#') {
            seen_content = true;
        }
    }
    None
}

/// Where the parts of one rule are, by 1-based line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleLines {
    /// The line of the item's `-`.
    pub start: usize,
    /// `(field name, line)` for each `name:` line inside the item, first occurrence first.
    fields: Vec<(String, usize)>,
}

impl RuleLines {
    /// The line of the first of `fields` found as a `name:` line inside this rule (`files`,
    /// `pointer`, `kinds` included), else the rule's first line. Pass fallbacks after the
    /// field, e.g. `["kinds", "match"]` for a flow-style `match: {…}`.
    pub fn of(&self, fields: &[&str]) -> usize {
        fields
            .iter()
            .find_map(|field| self.fields.iter().find(|(name, _)| name == field))
            .map_or(self.start, |(_, line)| *line)
    }
}

/// Pass 2: the line scan (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineMap {
    top: Vec<(String, usize)>,
    rules: Vec<RuleLines>,
    /// Lines of the `identities:` block (after its key line), with their text.
    identity_lines: Vec<(usize, String)>,
}

impl LineMap {
    /// Scans `text`.
    pub fn scan(text: &str) -> Self {
        let lines: Vec<(usize, usize, &str)> = text
            .lines()
            .enumerate()
            .filter_map(|(i, raw)| {
                let content = raw.trim_start();
                if content.is_empty() || content.starts_with('#') {
                    None
                } else {
                    Some((i + 1, raw.len() - content.len(), content))
                }
            })
            .collect();
        let mut map = LineMap::default();
        let mut idx = 0;
        while idx < lines.len() {
            let (line, indent, content) = lines[idx];
            idx += 1;
            if indent != 0 || content.starts_with('-') {
                continue;
            }
            let Some(key) = key_of(content) else { continue };
            map.top.push((key.to_owned(), line));
            // The block under this key: deeper lines, or `-` items at column 0.
            let start = idx;
            while idx < lines.len() && (lines[idx].1 > 0 || lines[idx].2.starts_with('-')) {
                idx += 1;
            }
            let block = &lines[start..idx];
            match key {
                "rules" => map.rules = scan_items(block),
                "identities" => {
                    map.identity_lines = block
                        .iter()
                        .map(|(l, _, c)| (*l, (*c).to_owned()))
                        .collect();
                }
                _ => {}
            }
        }
        map
    }

    /// The line of a top-level key.
    pub fn top(&self, key: &str) -> Option<usize> {
        self.top.iter().find(|(k, _)| k == key).map(|(_, l)| *l)
    }

    /// The lines of rule `index`, when the scan found exactly `count` block items (otherwise
    /// the scan and the parse disagree, e.g. flow style, and no item line is trusted).
    pub fn rule(&self, index: usize, count: usize) -> Option<&RuleLines> {
        if self.rules.len() == count {
            self.rules.get(index)
        } else {
            None
        }
    }

    /// The first line inside `identities:` that mentions `needle` (a glob or pointer pattern),
    /// else the `identities:` line.
    pub fn identity(&self, needle: &str) -> Option<usize> {
        self.identity_lines
            .iter()
            .find(|(_, text)| text.contains(needle))
            .map(|(l, _)| *l)
            .or_else(|| self.top("identities"))
    }
}

/// Splits a block sequence into items and records each item's `key:` lines.
fn scan_items(block: &[(usize, usize, &str)]) -> Vec<RuleLines> {
    let Some(&(_, item_indent, first)) = block.first() else {
        return Vec::new();
    };
    if !first.starts_with('-') {
        return Vec::new();
    }
    let mut items: Vec<RuleLines> = Vec::new();
    for &(line, indent, content) in block {
        if indent == item_indent && (content == "-" || content.starts_with("- ")) {
            items.push(RuleLines {
                start: line,
                fields: Vec::new(),
            });
            let inner = content[1..].trim_start();
            if let (Some(item), Some(key)) = (items.last_mut(), key_of(inner)) {
                item.fields.push((key.to_owned(), line));
            }
        } else if indent > item_indent {
            let inner = content.strip_prefix("- ").unwrap_or(content).trim_start();
            if let (Some(item), Some(key)) = (items.last_mut(), key_of(inner))
                && !item.fields.iter().any(|(k, _)| k == key)
            {
                item.fields.push((key.to_owned(), line));
            }
        }
    }
    items
}

/// `name` of a `name:` or `name: value` line, for plain identifier-like keys.
fn key_of(content: &str) -> Option<&str> {
    let colon = content.find(':')?;
    let key = content[..colon].trim_end();
    let rest = &content[colon + 1..];
    let is_key = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && (rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t'));
    is_key.then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
# comment
apiVersion: assent/v1
kind: Policy
identities:
  \"topics/*.yaml\": { \"/topics\": name }
rules:
  - id: a
    match:
      files: [\"x\"]
      pointer: /x
    effect: block
    message: |
      effect: not a field
  -   id: b

    # gap
    match: { files: [y] }
    effect: comment
";

    #[test]
    fn scan_finds_top_keys_rules_and_fields() {
        let m = LineMap::scan(DOC);
        assert_eq!(m.top("apiVersion"), Some(2));
        assert_eq!(m.top("rules"), Some(6));
        let a = m.rule(0, 2).unwrap();
        assert_eq!(
            (
                a.start,
                a.of(&["id"]),
                a.of(&["files"]),
                a.of(&["pointer"]),
                a.of(&["effect"])
            ),
            (7, 7, 9, 10, 11)
        );
        assert_eq!(
            a.of(&["when"]),
            7,
            "absent field falls back to the item line"
        );
        let b = m.rule(1, 2).unwrap();
        assert_eq!(
            (
                b.start,
                b.of(&["id"]),
                b.of(&["pointer", "match"]),
                b.of(&["effect"])
            ),
            (14, 14, 17, 18)
        );
        assert!(
            m.rule(0, 3).is_none(),
            "count mismatch: no item line is trusted"
        );
        assert_eq!(m.identity("topics/*.yaml"), Some(5));
        assert_eq!(m.identity("nowhere"), Some(4));
    }

    #[test]
    fn sequence_at_column_zero_is_scanned() {
        let m = LineMap::scan("rules:\n- id: a\n  effect: x\n- id: b\nkind: Policy\n");
        assert_eq!(m.rule(1, 2).unwrap().start, 4);
        assert_eq!(m.rule(0, 2).unwrap().of(&["effect"]), 3);
        assert_eq!(m.top("kind"), Some(5));
    }

    #[test]
    fn strict_parse_reports_unknown_fields_with_their_line() {
        let text = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: a\n    match: {files: [x]}\n    effect: block\n    severity: high\n";
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, Some(7));
        assert!(
            e.message.contains("unknown field `severity`"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("at line"), "{}", e.message);
    }

    #[test]
    fn duplicate_identity_keys_are_structure_errors() {
        let text = "apiVersion: assent/v1\nkind: Policy\nidentities:\n  a: {/x: n}\n  a: {/y: n}\nrules: []\n";
        let e = parse(text).unwrap_err();
        assert!(e.message.contains("duplicate key `a`"), "{}", e.message);
        // serde_yaml positions a custom error at the mapping holding the key.
        assert_eq!(e.line, Some(4));
    }
}
