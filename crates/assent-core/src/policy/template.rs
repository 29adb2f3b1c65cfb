//! Message templates: `{{ name }}` placeholders, parsed at load time, rendered per finding.
//!
//! Placeholders: `old`, `new`, `entry`, `file`, `pointer`, `kind`, `rule`; whitespace inside
//! the braces is optional. An unknown placeholder or an unclosed `{{` is a load-time problem,
//! not a literal, so a typo surfaces in `assent lint` instead of in a merge request.
//!
//! # Contributor text is inert (docs/contract.md#inert-text)
//!
//! The template's own text comes from the target branch and stays Markdown. The placeholders
//! that carry merge request content (`old`, `new`, `entry`, `file`, `pointer`) render as one
//! inert code span each ([`crate::inert::code`]): strings bare inside the span, other
//! JSON values as compact canonical JSON (sorted keys, so a message never depends on map
//! order), an absent value as `null`. `kind` and `rule` (a fixed word and a validated rule id)
//! render as plain text.
//!
//! A span is inert only if the text around it leaves it whole, so parsing reads the
//! template's Markdown around the placeholders:
//!
//! * a backtick run of the template that CommonMark would leave unmatched is written `` \` ``,
//!   so it can never pair with a placeholder's fence;
//! * a code span of the template that contains placeholders (`` `{{ old }} days` ``) renders as
//!   one inert span of its text with the values in it, fenced for the values' backticks;
//! * a placeholder never touches a backtick (a space goes between), never follows a `$`
//!   (`` $`…`$ `` is GitLab's inline math) and never follows a lone backslash (which would
//!   escape its fence; a second backslash shows the same);
//! * when the template holds a GFM table (a delimiter row such as `| --- |`), every `|` in a
//!   placeholder's span is written `\|`, because GFM splits a row at a `|` even inside a
//!   code span;
//! * a content placeholder inside an HTML tag, an HTML block or a link destination is a
//!   load-time problem: no rendering keeps a value inert there.
//!
//! A content value longer than [`MAX_VALUE_CHARS`] shows its first characters, its length
//! and its SHA-256 (docs/contract.md#note-size).

use serde_json::Value;

use crate::canonical_json;
use crate::inert;

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
    /// A content placeholder where Markdown would not read it as text.
    #[error(
        "placeholder `{{{{ {name} }}}}` is inside {place}, where merge request content cannot be shown inert; move it into the message text"
    )]
    UnsafePlace {
        /// The placeholder's name.
        name: String,
        /// Where it is, e.g. `an HTML tag`.
        place: &'static str,
    },
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

impl Var {
    fn name(self) -> &'static str {
        match self {
            Var::Old => "old",
            Var::New => "new",
            Var::Entry => "entry",
            Var::File => "file",
            Var::Pointer => "pointer",
            Var::Kind => "kind",
            Var::Rule => "rule",
        }
    }

    /// Whether the value comes from the merge request (and so renders inert).
    fn is_content(self) -> bool {
        !matches!(self, Var::Kind | Var::Rule)
    }
}

/// A piece of a template's own code span that holds placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CodePiece {
    /// The template's text, shown literally.
    Text(String),
    Var(Var),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Markdown of the template, its unmatched backticks already escaped.
    Text(String),
    Var(Var),
    /// A code span of the template around placeholders, rendered as one inert span.
    Code(Vec<CodePiece>),
}

/// A parsed message template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    /// The template holds a GFM table: `|` inside a value's span is written `\|`.
    escape_pipes: bool,
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

/// One character of the template's text, or a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    Var(Var),
}

impl Template {
    /// Parses `source`; the first problem when there are several ([`Template::parse_all`]
    /// has them all).
    pub fn parse(source: &str) -> Result<Self, TemplateError> {
        Self::parse_all(source).map_err(|mut errors| errors.swap_remove(0))
    }

    /// Parses `source`, or every problem in it (at least one: unknown or unclosed placeholders
    /// first, then placeholders in unsafe places, each in the order they appear), so
    /// that `assent lint` shows them all in one pass: an unknown placeholder does not hide a
    /// placeholder in an unsafe place after it.
    pub fn parse_all(source: &str) -> Result<Self, Vec<TemplateError>> {
        let mut errors = Vec::new();
        let mut tokens = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find("{{") {
            tokens.extend(rest[..open].chars().map(Token::Char));
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                // Nothing after an unclosed `{{` can be read as placeholders.
                errors.push(TemplateError::Unclosed);
                rest = "";
                break;
            };
            let name = after[..close].trim();
            let var = match name {
                "old" => Some(Var::Old),
                "new" => Some(Var::New),
                "entry" => Some(Var::Entry),
                "file" => Some(Var::File),
                "pointer" => Some(Var::Pointer),
                "kind" => Some(Var::Kind),
                "rule" => Some(Var::Rule),
                other => {
                    errors.push(TemplateError::Unknown(other.to_owned()));
                    None
                }
            };
            tokens.extend(var.map(Token::Var));
            rest = &after[close + 2..];
        }
        tokens.extend(rest.chars().map(Token::Char));
        let parts = markdown_parts(&tokens, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Template {
            parts,
            escape_pipes: source.lines().any(is_table_delimiter_row),
        })
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
            escape_pipes: false,
        }
    }

    /// Renders with `values`.
    pub fn render(&self, values: &TemplateValues<'_>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => {
                    if text.starts_with('`') && out.ends_with('`') {
                        out.push(' ');
                    }
                    out.push_str(text);
                }
                Part::Var(var) if !var.is_content() => out.push_str(&value_text(*var, values)),
                Part::Var(var) => {
                    let shown = inert::escape(&value_text(*var, values));
                    self.push_span(&mut out, &shown);
                }
                Part::Code(pieces) => {
                    let mut shown = String::new();
                    for piece in pieces {
                        match piece {
                            CodePiece::Text(text) => shown.push_str(text),
                            CodePiece::Var(var) if !var.is_content() => {
                                shown.push_str(&value_text(*var, values));
                            }
                            CodePiece::Var(var) => {
                                shown.push_str(&inert::escape(&value_text(*var, values)));
                            }
                        }
                    }
                    self.push_span(&mut out, &shown);
                }
            }
        }
        out
    }

    /// Appends `shown` as a code span that nothing around it can open or extend.
    fn push_span(&self, out: &mut String, shown: &str) {
        // A backtick would merge with the fence; `$` before a span is GitLab's inline math.
        if out.ends_with(['`', '$']) {
            out.push(' ');
        }
        let backslashes = out.chars().rev().take_while(|&c| c == '\\').count();
        if backslashes % 2 == 1 {
            out.push('\\');
        }
        if self.escape_pipes {
            out.push_str(&inert::fence(&shown.replace('|', "\\|")));
        } else {
            out.push_str(&inert::fence(shown));
        }
    }
}

/// A content placeholder shows at most this many characters of its value; a longer value is
/// shortened with its length and digest kept ([`inert::shortened`]), so a value of any size
/// leaves the note within GitLab's limit (docs/contract.md#note-size). The occurrence is computed from the
/// full value.
pub const MAX_VALUE_CHARS: usize = 1_000;

/// The text a placeholder stands for, before escaping; content shortened to
/// [`MAX_VALUE_CHARS`].
fn value_text(var: Var, values: &TemplateValues<'_>) -> String {
    let content = |text: String| match inert::shortened(&text, MAX_VALUE_CHARS) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(short) => short,
    };
    match var {
        Var::Old => content(json_text(values.old)),
        Var::New => content(json_text(values.new)),
        Var::Entry => content(values.entry.unwrap_or("null").to_owned()),
        Var::File => content(values.file.to_owned()),
        Var::Pointer => content(values.pointer.to_owned()),
        Var::Kind => values.kind.to_owned(),
        Var::Rule => values.rule.to_owned(),
    }
}

fn json_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "null".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => canonical_json::to_string(other),
    }
}

/// A GFM delimiter row: only `|`, `-`, `:` and blanks, with at least one `|` and one `-`.
fn is_table_delimiter_row(line: &str) -> bool {
    line.contains('|')
        && line.contains('-')
        && line
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// Splits the template's tokens into Markdown text, placeholders and the template's own code
/// spans around placeholders, as CommonMark reads code spans (placeholders count as
/// characters that are not backticks), and refuses a content placeholder in a place where it
/// could not be inert (each refusal pushed onto `errors`).
fn markdown_parts(tokens: &[Token], errors: &mut Vec<TemplateError>) -> Vec<Part> {
    let runs = inert::BacktickRuns::of_items(tokens, |t| *t == Token::Char('`'));
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i] {
            Token::Char('\\') => {
                text.push('\\');
                i += 1;
                // The ASCII punctuation after a backslash is escaped: a backtick there opens
                // no code span.
                if let Some(Token::Char(c)) = tokens.get(i)
                    && c.is_ascii_punctuation()
                {
                    text.push(*c);
                    i += 1;
                }
            }
            Token::Char('`') => {
                let open_end = run_end(tokens, i);
                let len = open_end - i;
                match runs.next(open_end, len) {
                    Some(close) => {
                        let inside = &tokens[open_end..close];
                        if inside.iter().any(|t| matches!(t, Token::Var(_))) {
                            errors.extend(check_place(tokens, i, inside).err());
                            flush(&mut parts, &mut text);
                            parts.push(Part::Code(code_pieces(inside)));
                        } else {
                            text.extend(tokens[i..close + len].iter().map(|t| match t {
                                Token::Char(c) => *c,
                                Token::Var(_) => unreachable!("no placeholder inside"),
                            }));
                        }
                        i = close + len;
                    }
                    None => {
                        // CommonMark leaves the run literal; escaped, it stays literal even
                        // next to a placeholder's fence.
                        for _ in 0..len {
                            text.push_str("\\`");
                        }
                        i = open_end;
                    }
                }
            }
            Token::Char(c) => {
                text.push(c);
                i += 1;
            }
            Token::Var(var) => {
                errors.extend(check_place(tokens, i, &tokens[i..=i]).err());
                flush(&mut parts, &mut text);
                parts.push(Part::Var(var));
                i += 1;
            }
        }
    }
    flush(&mut parts, &mut text);
    parts
}

/// Refuses the content placeholders among `placed` (which start at token `at`) when the
/// template's text before them makes them something other than text.
fn check_place(tokens: &[Token], at: usize, placed: &[Token]) -> Result<(), TemplateError> {
    let Some(var) = placed.iter().find_map(|t| match t {
        Token::Var(var) if var.is_content() => Some(*var),
        _ => None,
    }) else {
        return Ok(());
    };
    match unsafe_place(&text_before(tokens, at)) {
        Some(place) => Err(TemplateError::UnsafePlace {
            name: var.name().to_owned(),
            place,
        }),
        None => Ok(()),
    }
}

fn flush(parts: &mut Vec<Part>, text: &mut String) {
    if !text.is_empty() {
        parts.push(Part::Text(std::mem::take(text)));
    }
}

fn run_end(tokens: &[Token], start: usize) -> usize {
    let mut end = start;
    while tokens.get(end) == Some(&Token::Char('`')) {
        end += 1;
    }
    end
}

/// The pieces of a template code span's content: line endings read as spaces and one space
/// stripped from each side when both sides have one, as CommonMark shows a code span.
fn code_pieces(inside: &[Token]) -> Vec<CodePiece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    for token in inside {
        match token {
            Token::Char('\r' | '\n') => text.push(' '),
            Token::Char(c) => text.push(*c),
            Token::Var(var) => {
                if !text.is_empty() {
                    pieces.push(CodePiece::Text(std::mem::take(&mut text)));
                }
                pieces.push(CodePiece::Var(*var));
            }
        }
    }
    if !text.is_empty() {
        pieces.push(CodePiece::Text(text));
    }
    // With a placeholder inside, the content is never only spaces.
    let padded = matches!(pieces.first(), Some(CodePiece::Text(t)) if t.starts_with(' '))
        && matches!(pieces.last(), Some(CodePiece::Text(t)) if t.ends_with(' '));
    if padded {
        if let Some(CodePiece::Text(t)) = pieces.first_mut() {
            t.remove(0);
        }
        if let Some(CodePiece::Text(t)) = pieces.last_mut() {
            t.pop();
        }
        pieces.retain(|p| !matches!(p, CodePiece::Text(t) if t.is_empty()));
    }
    pieces
}

/// The template's text before token `at`, placeholders read as `x`.
fn text_before(tokens: &[Token], at: usize) -> String {
    tokens[..at]
        .iter()
        .map(|t| match t {
            Token::Char(c) => *c,
            Token::Var(_) => 'x',
        })
        .collect()
}

/// Tags that start an HTML block whatever follows them on the line (CommonMark's kind 6).
const BLOCK_TAGS: &[&str] = &[
    "address",
    "article",
    "aside",
    "base",
    "basefont",
    "blockquote",
    "body",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "link",
    "main",
    "menu",
    "menuitem",
    "nav",
    "noframes",
    "ol",
    "optgroup",
    "option",
    "p",
    "param",
    "search",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
];

/// Whether `line` starts an HTML block: a block tag, or (when `whole_line`: the line is
/// complete) any tag alone on its line (kind 7).
/// Kinds 1 to 5 (comments, `<pre>` and the like) are found by their unclosed openers.
fn starts_html_block(line: &str, whole_line: bool) -> bool {
    let line = line.trim_start_matches(' ').trim_end();
    let Some(rest) = line.strip_prefix('<') else {
        return false;
    };
    let name: String = rest
        .trim_start_matches('/')
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    if name.is_empty() {
        return false;
    }
    BLOCK_TAGS.contains(&name.as_str())
        || (whole_line && line.ends_with('>') && line.matches('>').count() == 1)
}

/// Where a placeholder after `before` would be read as something other than text, if anywhere.
fn unsafe_place(before: &str) -> Option<&'static str> {
    let lower = before.to_ascii_lowercase();
    // Raw HTML that runs until its own closer, across lines and blank lines.
    for (open, close) in [
        ("<!--", "-->"),
        ("<?", "?>"),
        ("<![cdata[", "]]>"),
        ("<pre", "</pre>"),
        ("<script", "</script>"),
        ("<style", "</style>"),
        ("<textarea", "</textarea>"),
    ] {
        if let Some(at) = lower.rfind(open)
            && !lower[at + open.len()..].contains(close)
        {
            return Some("raw HTML");
        }
    }
    let starts_tag = |rest: &str| {
        rest.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?'))
    };
    // An HTML tag opened and not closed before the placeholder.
    let open_tag = before
        .match_indices('<')
        .rev()
        .find(|(at, _)| starts_tag(&before[at + 1..]));
    if let Some((at, _)) = open_tag
        && !before[at..].contains('>')
    {
        return Some("an HTML tag");
    }
    // An HTML block: a line of the current paragraph that starts with a tag.
    let paragraph = before
        .rsplit_once("\n\n")
        .map_or(before, |(_, paragraph)| paragraph);
    // The placeholder's own line holds more than a tag, so only earlier lines can be a tag
    // alone on its line.
    let mut lines = paragraph.split('\n').rev();
    let current = lines.next().unwrap_or_default();
    if starts_html_block(current, false) || lines.any(|line| starts_html_block(line, true)) {
        return Some("an HTML block");
    }
    // A link destination: `](` not closed yet, or a link reference definition's line.
    if let Some(at) = before.rfind("](")
        && !before[at..].contains(')')
    {
        return Some("a link destination");
    }
    let line = before.rsplit('\n').next().unwrap_or(before).trim_start();
    if line.starts_with('[') && line.contains("]:") {
        return Some("a link destination");
    }
    None
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

    /// The closer found by scanning the rest of the template, as first written: the reference
    /// the indexed lookup must agree with.
    fn scanning_find_run(tokens: &[Token], from: usize, len: usize) -> Option<usize> {
        let mut i = from;
        while i < tokens.len() {
            if tokens[i] == Token::Char('`') {
                let end = run_end(tokens, i);
                if end - i == len {
                    return Some(i);
                }
                i = end;
            } else {
                i += 1;
            }
        }
        None
    }

    proptest::proptest! {
        /// From every run's end, as the parser asks, the index names the closer the scan
        /// finds, placeholders and escapes included.
        #[test]
        fn indexed_closers_match_the_scan(picks in proptest::collection::vec(0u8..5, 0..60)) {
            let tokens: Vec<Token> = picks
                .iter()
                .map(|p| match p {
                    0 | 1 => Token::Char('`'),
                    2 => Token::Char('\\'),
                    3 => Token::Char('a'),
                    _ => Token::Var(Var::New),
                })
                .collect();
            let runs = inert::BacktickRuns::of_items(&tokens, |t| *t == Token::Char('`'));
            for start in 0..tokens.len() {
                if tokens[start] != Token::Char('`') {
                    continue;
                }
                let end = run_end(&tokens, start);
                for len in 1..=tokens.len() {
                    proptest::prop_assert_eq!(
                        runs.next(end, len),
                        scanning_find_run(&tokens, end, len),
                        "{:?} from {} len {}", tokens, end, len
                    );
                }
            }
        }
    }

    #[test]
    fn a_template_of_many_unmatched_runs_renders_them_escaped() {
        // Runs of lengths 1..=300, none with a partner: every one stays literal text (escaped,
        // so nothing can pair with it later), and each closer is looked up, not scanned for
        // (a mebibyte of them used to take seconds).
        let source: String = (1..=300).map(|k| format!("{}a", "`".repeat(k))).collect();
        let template = format!("{{{{ new }}}} {source}");
        let rendered = render(&template, &json!(1), &json!(2));
        assert_eq!(rendered, format!("`2` {}", source.replace('`', "\\`")));
    }

    fn render(template: &str, old: &Value, new: &Value) -> String {
        Template::parse(template)
            .unwrap()
            .render(&values(Some(old), Some(new)))
    }

    #[test]
    fn renders_every_placeholder_with_optional_whitespace() {
        let t = Template::parse(
            "{{rule}} {{ kind }} {{  file}} {{pointer }} {{ entry }} {{old}} {{new}}",
        )
        .unwrap();
        let (o, n) = (json!(30), json!(7));
        assert_eq!(
            t.render(&values(Some(&o), Some(&n))),
            "retention-shrink modify `topics/orders.yaml` `/topics/orders.events.v1/retention_days` `orders.events.v1` `30` `7`"
        );
    }

    #[test]
    fn long_values_are_shortened_with_length_and_digest_in_every_kind_of_span() {
        let long = json!(format!("{}`@all`", "v".repeat(1_200_000)));
        let full = long.as_str().unwrap();
        let digest = crate::model::Occurrence::digest(full.as_bytes());
        for template in ["New {{ new }} set.", "New `{{ new }} days` set."] {
            let out = render(template, &json!(1), &long);
            assert!(out.chars().count() < 2 * MAX_VALUE_CHARS, "{template}");
            assert!(
                out.contains(&format!("…[{} characters, {digest}]", full.chars().count())),
                "{out}"
            );
            assert!(!out.contains("@all"), "the cut hides the tail: {out}");
        }
        // At the limit a value is shown whole.
        let exact = json!("x".repeat(MAX_VALUE_CHARS));
        assert_eq!(
            render("{{ new }}", &json!(1), &exact),
            format!("`{}`", "x".repeat(MAX_VALUE_CHARS))
        );
    }

    #[test]
    fn strings_are_bare_other_json_is_compact_and_absent_is_null() {
        let t = Template::parse("[{{ old }}] -> [{{ new }}]").unwrap();
        let s = json!("a \"quoted\" name");
        let m = json!({"b": [1, 2.5, true], "a": null});
        assert_eq!(
            t.render(&values(Some(&s), Some(&m))),
            r#"[`a "quoted" name`] -> [`{"a":null,"b":[1,2.5,true]}`]"#
        );
        assert_eq!(
            t.render(&values(None, Some(&Value::Null))),
            "[`null`] -> [`null`]"
        );
        let mut v = values(None, None);
        v.entry = None;
        assert_eq!(Template::parse("{{entry}}").unwrap().render(&v), "`null`");
    }

    #[test]
    fn text_without_placeholders_and_single_braces_pass_through() {
        let t = Template::parse("a {b} } { c **bold** [doc](https://d.example) `x`").unwrap();
        assert_eq!(
            t.render(&values(None, None)),
            "a {b} } { c **bold** [doc](https://d.example) `x`"
        );
        assert_eq!(Template::parse("").unwrap().render(&values(None, None)), "");
    }

    #[test]
    fn content_placeholders_are_inert_code_spans() {
        let hostile = json!("@all ![x](http://e.example/p.png) <img src=x> `` /close\nline2");
        assert_eq!(
            render("now {{ new }}!", &json!(1), &hostile),
            "now ```@all ![x](http://e.example/p.png) <img src=x> `` /close\\nline2```!"
        );
        let mut v = values(None, None);
        v.file = "a|b`c";
        v.entry = Some(" ");
        assert_eq!(
            Template::parse("{{file}}/{{entry}}").unwrap().render(&v),
            "``a|b`c``/` `"
        );
    }

    #[test]
    fn unmatched_template_backticks_are_escaped_so_no_fence_pairs_with_them() {
        let (o, n) = (json!("@all"), json!("x"));
        // Unescaped, the lone backtick would pair with the first fence and leave `@all` bare.
        assert_eq!(
            render("`{{ old }} and {{ new }}", &o, &n),
            "\\` `@all` and `x`"
        );
        assert_eq!(render("a `` b {{ old }}", &o, &n), "a \\`\\` b `@all`");
    }

    #[test]
    fn template_code_spans_around_placeholders_become_one_inert_span() {
        let (o, n) = (json!("a`@all"), json!(7));
        assert_eq!(render("was `{{ old }}`", &o, &n), "was ``a`@all``");
        assert_eq!(
            render("`{{ old }} -> {{ new }} days`", &o, &n),
            "``a`@all -> 7 days``"
        );
        assert_eq!(
            render("`` {{ new }} ``!", &o, &n),
            "`7`!",
            "CommonMark padding"
        );
        assert_eq!(
            render("`{{ kind }}\n{{ new }}`", &o, &n),
            "`modify 7`",
            "line endings in a code span read as spaces"
        );
        // A template code span without placeholders is left as written.
        assert_eq!(render("`x` {{ new }} `y`", &o, &n), "`x` `7` `y`");
    }

    #[test]
    fn placeholders_never_touch_a_backtick_or_a_lone_backslash() {
        let mut v = values(None, None);
        v.file = "f";
        v.pointer = "/p";
        let t = |src: &str| Template::parse(src).unwrap().render(&v);
        assert_eq!(t("{{file}}{{pointer}}"), "`f` `/p`");
        assert_eq!(t("`a`{{file}}`b`"), "`a` `f` `b`");
        assert_eq!(t("${{file}}$"), "$ `f`$", "no GitLab inline math");
        assert_eq!(
            t("\\`{{file}}"),
            "\\` `f`",
            "an escaped backtick opens nothing"
        );
        assert_eq!(t("\\{{file}}"), "\\\\`f`");
        assert_eq!(t("\\\\{{file}}"), "\\\\`f`");
    }

    #[test]
    fn pipes_in_values_are_escaped_when_the_template_holds_a_table() {
        let (o, n) = (json!("a|@all|b"), json!(1));
        assert_eq!(
            render("| old |\n| --- |\n| {{ old }} |", &o, &n),
            "| old |\n| --- |\n| `a\\|@all\\|b` |"
        );
        assert_eq!(render("{{ old }}", &o, &n), "`a|@all|b`");
    }

    #[test]
    fn content_placeholders_where_markdown_would_not_read_text_are_errors() {
        let unsafe_place = |src: &str| match Template::parse(src) {
            Err(TemplateError::UnsafePlace { place, .. }) => Some(place),
            Ok(_) => None,
            Err(other) => panic!("{other}"),
        };
        assert_eq!(
            unsafe_place("<a href=\"{{ new }}\">x</a>"),
            Some("an HTML tag")
        );
        assert_eq!(unsafe_place("<a title='`{{ new }}`'>"), Some("an HTML tag"));
        assert_eq!(unsafe_place("<details>\n{{ new }}"), Some("an HTML block"));
        assert_eq!(unsafe_place("<!-- a > b\n\n{{ new }}"), Some("raw HTML"));
        assert_eq!(unsafe_place("<PRE>\n\nx {{ old }}"), Some("raw HTML"));
        assert_eq!(unsafe_place("[see]({{ new }})"), Some("a link destination"));
        assert_eq!(
            unsafe_place("[ref]: {{ file }}"),
            Some("a link destination")
        );
        // Outside those places, and for the trusted placeholders, nothing is refused.
        assert_eq!(
            unsafe_place("<b>{{ new }}</b> < 7 [see](https://d.example) {{ old }}"),
            None
        );
        assert_eq!(unsafe_place("<details>\n\n{{ new }}"), None);
        assert_eq!(unsafe_place("[see]({{ rule }})"), None);
        assert_eq!(unsafe_place("<!-- note -->{{ new }}"), None);
        let error = Template::parse("[x]({{ new }})").unwrap_err().to_string();
        assert!(
            error.contains("`{{ new }}`") && error.contains("a link destination"),
            "{error}"
        );
    }

    #[test]
    fn every_problem_of_a_template_is_reported_at_once() {
        let errors = Template::parse_all("{{ olds }} see [here]({{ new }}) and {{ nope }}")
            .expect_err("three problems");
        assert_eq!(
            errors,
            [
                TemplateError::Unknown("olds".into()),
                TemplateError::Unknown("nope".into()),
                TemplateError::UnsafePlace {
                    name: "new".into(),
                    place: "a link destination",
                },
            ]
        );
        assert_eq!(
            Template::parse_all("<b title=\"{{ old }}\">x</b> {{ x").expect_err("two"),
            [
                TemplateError::Unclosed,
                TemplateError::UnsafePlace {
                    name: "old".into(),
                    place: "an HTML tag",
                },
            ]
        );
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
            "retention-shrink: modify of `/topics/orders.events.v1/retention_days` in `topics/orders.yaml`"
        );
    }
}
