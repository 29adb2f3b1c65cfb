//! JUnit XML, the report format GitLab's test widget reads (`artifacts:reports:junit`), for
//! `assent test --format junit` and `assent lint --format junit`: the escaping every
//! document needs, so that a file name or message can never break out of its attribute.

/// `<tag type="kind" message="…">text</tag>`: the `failure`, `error` or `skipped` inside a
/// `<testcase>`, both texts escaped.
pub fn element(tag: &str, kind: &str, message: &str, text: &str) -> String {
    format!(
        "<{tag} type=\"{kind}\" message=\"{}\">{}</{tag}>",
        xml_attribute(message),
        xml_text(text)
    )
}

/// Whether XML 1.0 allows `c` in a document at all (`Char` production).
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

/// `text` as XML character data: markup characters escaped, characters XML forbids dropped.
pub fn xml_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().filter(|&c| is_xml_char(c)) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // `]]>` is not allowed in character data; `>` is escaped above. A lone `\r` would
            // be read as a line break: keep it as a reference.
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as an XML attribute value (between double quotes): as [`xml_text`], and line
/// breaks and tabs as references, which attribute normalisation would otherwise turn into
/// spaces.
pub fn xml_attribute(text: &str) -> String {
    xml_text(text).replace('\n', "&#10;").replace('\t', "&#9;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escaping_covers_markup_quotes_and_forbidden_characters() {
        assert_eq!(
            xml_text("a<b>&\"c\"'d'"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;"
        );
        assert_eq!(xml_text("]]>"), "]]&gt;");
        // NUL, ESC, a vertical tab and the two non-characters are not XML 1.0 characters.
        assert_eq!(xml_text("x\u{0}\u{1b}[31m\u{b}\u{fffe}\u{ffff}y"), "x[31my");
        assert_eq!(xml_text("tab\tline\ncr\r"), "tab\tline\ncr&#13;");
        assert_eq!(
            xml_attribute("two\nlines\tand tab"),
            "two&#10;lines&#9;and tab"
        );
        assert_eq!(xml_text("emoji 🦀 and é"), "emoji 🦀 and é");
    }
}
