//! The policy document v1: its strict schema, and where things are in the text.
//!
//! Loading is two passes over one file:
//!
//! 1. **Typed, strict.** `serde_yaml` deserialises the text into [`RawDocument`] with
//!    `deny_unknown_fields` everywhere. Structure errors (YAML syntax, unknown or missing
//!    fields, wrong types, duplicate keys) carry a line from `serde_yaml`'s `Location`.
//!    `serde_yaml` stops at the first one, so a file that fails is read again by
//!    [`recover`] to find the others (below). Values whose *meaning* is checked later
//!    (effect, kinds, globs, pointer patterns, ids, `when`, messages) are plain strings
//!    here, so that a file whose shape is right yields *all* of its semantic problems, not
//!    just the first.
//! 2. **Line scan.** `serde_yaml` keeps no positions on values, so [`LineMap`] scans the text
//!    for the lines of top-level keys, of each item of the block sequence under `rules:`, and
//!    of the fields inside each item. Semantic problems are attached to the most precise of
//!    those lines. The scan understands block style (what people write); for flow style
//!    (`rules: [{...}]`) it degrades to the line of `rules:`.
//!
//! # Reading past an unknown field
//!
//! A misspelt field is the most common mistake, and the strict parse stops at it, hiding
//! every other problem of the file. [`recover`] repairs a copy of the text and parses it
//! again, once per unknown field (at most [`MAX_RECOVERIES`] times): the misspelt key is
//! renamed to the field it most resembles (`efect` → `effect`, so the rule keeps its effect
//! and is checked further), or, when it resembles none or the rename would repeat a field,
//! its key and value lines are blanked. Lines are never added or removed, so every later
//! error, and the semantic checks of the repaired document, keep the lines of the file as
//! written. Recovery stops at the first error it cannot repair or trust (a YAML syntax error
//! after an edit could be the edit's own doing, and is not reported). A recovered document
//! only adds problems to a file that already has one: it is never loaded, so the loader
//! stays exactly as strict as the first parse.

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
    /// Who may assent to changes of the policies themselves; at most one file declares it.
    #[serde(default, rename = "policy_owners")]
    pub policy_owners: Option<RawAssenters>,
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
    /// (docs/contract.md#grouping); any YAML value here, checked to be a positive integer when loading.
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
    /// 1-based column (in characters) where `serde_yaml` placed the error, when known.
    pub column: Option<usize>,
    /// Without `serde_yaml`'s " at line N column M" suffix (the line is carried separately).
    pub message: String,
}

/// Pass 1: strict typed parse.
pub fn parse(text: &str) -> Result<RawDocument, StructureError> {
    serde_yaml::from_str::<RawDocument>(text).map_err(|e| {
        let line = e.location().map(|l| l.line());
        let column = e.location().map(|l| l.column());
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
        StructureError {
            line,
            column,
            message,
        }
    })
}

/// Most repairs [`recover`] makes in one file: each costs a parse of the file.
pub const MAX_RECOVERIES: usize = 50;

/// What [`recover`] found in a file whose strict parse failed.
#[derive(Debug)]
pub struct Recovered {
    /// Every structure error found, the strict parse's first, in the order found.
    pub errors: Vec<StructureError>,
    /// The document parsed from the repaired text, with that text (same lines as the file),
    /// when every error found was an unknown field that could be repaired.
    pub document: Option<(RawDocument, String)>,
}

/// Reads a file whose strict parse failed with `first` again, past each unknown field (see
/// "Reading past an unknown field" in the module docs). Each unknown-field error carries a
/// "did you mean" for the field it most resembles.
pub fn recover(text: &str, first: StructureError) -> Recovered {
    let mut errors = Vec::new();
    let mut repaired = text.to_owned();
    let mut error = first;
    // Fields a misspelt key was blanked for, whose absence is then no separate problem.
    let mut blanked_for: Vec<String> = Vec::new();
    for attempt in 0..=MAX_RECOVERIES {
        let unknown = unknown_field(&error.message);
        let Some((field, expected)) = unknown else {
            let artifact = attempt > 0
                && (!is_data_error(&error.message)
                    || missing_field(&error.message).is_some_and(|f| blanked_for.contains(&f)));
            if !artifact {
                errors.push(error);
            }
            return Recovered {
                errors,
                document: None,
            };
        };
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        let suggestion = crate::policy::suggest::closest(&field, &expected).map(str::to_owned);
        let hint = suggestion
            .as_deref()
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        let line = error.line;
        errors.push(StructureError {
            line,
            column: error.column,
            message: format!("{}{hint}", error.message),
        });
        if attempt == MAX_RECOVERIES {
            break;
        }
        let Some(key) = line
            .zip(error.column)
            .and_then(|(l, c)| KeyAt::find(&repaired, l, c, &field))
        else {
            break;
        };
        // A rename that would repeat a field of the same mapping blanks the key instead.
        let rename_to = suggestion
            .as_deref()
            .filter(|s| mapping_has_key(&repaired, &error.message, s) == Some(false));
        repaired = match rename_to {
            Some(field) => key.rename(&repaired, field),
            None => {
                let Some(blanked) = key.blank(&repaired) else {
                    break;
                };
                blanked_for.extend(suggestion);
                blanked
            }
        };
        match parse(&repaired) {
            Ok(doc) => {
                return Recovered {
                    errors,
                    document: Some((doc, repaired)),
                };
            }
            Err(next) => error = next,
        }
    }
    Recovered {
        errors,
        document: None,
    }
}

/// `(field, expected fields)` of serde's "unknown field `x`, expected one of `a`, `b`".
pub fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = &message[message.find("unknown field `")? + "unknown field `".len()..];
    let end = rest.find('`')?;
    let field = rest[..end].to_owned();
    let after = &rest[end + 1..];
    let expected = match after.find("expected") {
        Some(at) => after[at..]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect(),
        None => Vec::new(),
    };
    Some((field, expected))
}

/// The field of serde's "missing field `x`".
fn missing_field(message: &str) -> Option<String> {
    let rest = &message[message.find("missing field `")? + "missing field `".len()..];
    Some(rest[..rest.find('`')?].to_owned())
}

/// Whether the mapping an unknown-field `message` is about (its path prefix, such as
/// `rules[0].match`) has the key `key`; `None` when the text or the path cannot be followed.
fn mapping_has_key(text: &str, message: &str, key: &str) -> Option<bool> {
    let path = message.split_once(": ").map_or("", |(path, _)| path);
    let path = if path.starts_with("unknown field") {
        ""
    } else {
        path
    };
    let mut value: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (name, index) = match segment.split_once('[') {
            Some((name, rest)) => (name, Some(rest.strip_suffix(']')?.parse::<usize>().ok()?)),
            None => (segment, None),
        };
        value = value.get(name)?.clone();
        if let Some(index) = index {
            value = value.get(index)?.clone();
        }
    }
    Some(value.as_mapping()?.contains_key(key))
}

/// Whether a structure error is about the document's data (a field, a type, a value) rather
/// than its YAML syntax: only those are trusted after an edit.
fn is_data_error(message: &str) -> bool {
    [
        "invalid type",
        "invalid value",
        "invalid length",
        "missing field",
        "unknown field",
        "unknown variant",
        "duplicate field",
        "duplicate key",
        "duplicate entry",
    ]
    .iter()
    .any(|phrase| message.contains(phrase))
}

/// Where a mapping key sits in the text: its line and the character range of the key token
/// (quotes included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyAt {
    /// 0-based line index.
    line: usize,
    /// Character offsets of the key token within the line.
    start: usize,
    end: usize,
}

impl KeyAt {
    /// The key `field` at 1-based `line` and `column` (characters), when the text there is
    /// exactly that key (plain or quoted) followed by `:`.
    fn find(text: &str, line: usize, column: usize, field: &str) -> Option<KeyAt> {
        let content = text.lines().nth(line.checked_sub(1)?)?;
        let chars: Vec<char> = content.chars().collect();
        let start = column.checked_sub(1)?;
        let field_chars: Vec<char> = field.chars().collect();
        let rest = chars.get(start..)?;
        let quoted = matches!(rest.first(), Some('"' | '\''));
        let end = if quoted {
            let quote = rest[0];
            let inner = rest.get(1..1 + field_chars.len())?;
            (inner == field_chars.as_slice() && rest.get(1 + field_chars.len()) == Some(&quote))
                .then_some(start + field_chars.len() + 2)?
        } else {
            (rest.get(..field_chars.len())? == field_chars.as_slice())
                .then_some(start + field_chars.len())?
        };
        let after: String = chars[end..].iter().collect();
        after
            .trim_start_matches([' ', '\t'])
            .starts_with(':')
            .then_some(KeyAt {
                line: line - 1,
                start,
                end,
            })
    }

    /// The text with this key renamed to `field` (a plain key: field names are identifiers).
    fn rename(&self, text: &str, field: &str) -> String {
        let mut out = String::with_capacity(text.len() + field.len());
        for (index, line) in text.split_inclusive('\n').enumerate() {
            if index == self.line {
                let chars: Vec<char> = line.chars().collect();
                out.extend(&chars[..self.start]);
                out.push_str(field);
                out.extend(&chars[self.end..]);
            } else {
                out.push_str(line);
            }
        }
        out
    }

    /// The text with this key and its value blanked: the key's line keeps only a leading
    /// `-` (it may start a sequence item), and the lines of a block value below it (deeper,
    /// or a sequence at the key's own indent) become empty. `None` in flow context, where
    /// the value cannot be told apart line by line.
    fn blank(&self, text: &str) -> Option<String> {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let content: Vec<char> = lines.get(self.line)?.chars().collect();
        let prefix: String = content[..self.start].iter().collect();
        if !prefix.chars().all(|c| c == ' ' || c == '-') {
            return None;
        }
        let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        let ending = |l: &str| if l.ends_with('\n') { "\n" } else { "" };
        out[self.line] = format!("{}{}", prefix.trim_end(), ending(lines[self.line]));
        let value_inline = !content[self.end..]
            .iter()
            .collect::<String>()
            .trim_start_matches([' ', '\t'])
            .trim_start_matches(':')
            .trim()
            .is_empty();
        let mut index = self.line + 1;
        while index < lines.len() {
            let line = lines[index].trim_end_matches(['\n', '\r']);
            let trimmed = line.trim_start_matches(' ');
            let indent = line.len() - trimmed.len();
            let belongs = trimmed.is_empty()
                || trimmed.starts_with('#')
                || indent > self.start
                || (!value_inline
                    && indent == self.start
                    && (trimmed == "-" || trimmed.starts_with("- ")));
            if !belongs {
                break;
            }
            out[index] = ending(lines[index]).to_owned();
            index += 1;
        }
        Some(out.concat())
    }
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

    fn recovered(text: &str) -> (Vec<String>, Option<String>) {
        let first = parse(text).expect_err("the strict parse fails");
        let got = recover(text, first);
        let errors = got
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.line.unwrap_or(0), e.message))
            .collect();
        (errors, got.document.map(|(_, text)| text))
    }

    #[test]
    fn recovery_reports_every_unknown_field_with_its_line_and_a_suggestion() {
        let text = "\
apiVersion: assent/v1
kind: Policy
rules:
  - id: a
    match:
      files: [x]
      pointr: /x
    efect: block
    severity: high
  - nmae: b
    id: b
    match: {files: [y], kinds: [add]}
    effect: comment
";
        let (errors, repaired) = recovered(text);
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert!(
            errors[0].starts_with("7: rules[0].match: unknown field `pointr`, expected one of")
                && errors[0].ends_with("(did you mean `pointer`?)"),
            "{errors:#?}"
        );
        assert!(
            errors[1].starts_with("8: rules[0]: unknown field `efect`")
                && errors[1].ends_with("(did you mean `effect`?)"),
            "{errors:#?}"
        );
        assert!(
            errors[2].starts_with("9: rules[0]: unknown field `severity`")
                && !errors[2].contains("did you mean"),
            "{errors:#?}"
        );
        assert!(
            errors[3].starts_with("10: rules[1]: unknown field `nmae`")
                && !errors[3].contains("did you mean"),
            "a rename that would repeat `id` blanks the key instead: {errors:#?}"
        );
        let repaired = repaired.expect("every error was repaired");
        assert_eq!(repaired.lines().count(), text.lines().count());
        assert!(repaired.contains("\n      pointer: /x\n    effect: block\n\n  -\n    id: b\n"));
        let doc = parse(&repaired).unwrap();
        assert_eq!(doc.rules[0].effect, "block");
        assert_eq!(doc.rules[0].matcher.pointer.as_deref(), Some("/x"));
        assert_eq!(doc.rules[1].id, "b");
    }

    #[test]
    fn recovery_blanks_a_block_value_and_stops_at_what_it_cannot_trust() {
        // A block value under an unknown key goes with it, a sequence at the key's indent too.
        let text = "apiVersion: assent/v1\nkind: Policy\nextras:\n- a\n- b:\n    c: 1\nrules:\n  - id: a\n    match: {files: [x]}\n    effect: block\n    notes: |\n      free text\n      effect: not a field\n";
        let (errors, repaired) = recovered(text);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].starts_with("3: unknown field `extras`"),
            "{errors:#?}"
        );
        assert!(
            errors[1].starts_with("11: rules[0]: unknown field `notes`"),
            "{errors:#?}"
        );
        let repaired = repaired.unwrap();
        assert_eq!(
            repaired,
            "apiVersion: assent/v1\nkind: Policy\n\n\n\n\nrules:\n  - id: a\n    match: {files: [x]}\n    effect: block\n\n\n\n"
        );
        // After an unknown field, a type error is a problem of its own, with its line.
        let text = "apiVersion: assent/v1\nkind: Policy\nrulez: 1\nrules:\n  - id: [a]\n    match: {files: [x]}\n    effect: block\n";
        let (errors, repaired) = recovered(text);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].starts_with("3: unknown field `rulez`"),
            "{errors:#?}"
        );
        assert!(
            errors[1].starts_with("5: rules[0].id: invalid type: sequence"),
            "{errors:#?}"
        );
        assert!(repaired.is_none());
        // A key misspelt inside a flow mapping is renamed in place.
        let text = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - {id: a, match: {files: [x], kind: [add]}, effect: block}\n";
        let (errors, repaired) = recovered(text);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            errors[0].ends_with("(did you mean `kinds`?)"),
            "{errors:#?}"
        );
        assert!(repaired.unwrap().contains("kinds: [add]"));
        // A misspelt field that resembles nothing, in flow style, cannot be blanked: the
        // strict error alone is reported.
        let text = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - {id: a, match: {files: [x]}, effect: block, zzzzzz: 1}\nbad: 2\n";
        let (errors, repaired) = recovered(text);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(repaired.is_none());
    }

    #[test]
    fn a_misspelt_required_field_is_one_problem_not_two() {
        // Renamed to `match`, the rule parses: no "missing field `match`" follows.
        let text = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: a\n    effect: block\n    mach: {files: [x]}\n";
        let (errors, repaired) = recovered(text);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            errors[0].ends_with("(did you mean `match`?)"),
            "{errors:#?}"
        );
        assert!(repaired.unwrap().contains("match: {files: [x]}"));
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
