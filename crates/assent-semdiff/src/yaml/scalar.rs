//! What a YAML scalar means: the core-schema resolution of plain scalars and of the standard
//! `!!str`/`!!int`/`!!float`/`!!bool`/`!!null` tags.
//!
//! The rules are `serde_yaml` 0.9's for an untyped value, which assent used before it built
//! trees itself; a differential test holds the two together so no registry changes meaning:
//!
//! * plain `~`, `null`, `Null`, `NULL` or nothing is null; `true`/`True`/`TRUE` and the three
//!   `false` spellings are booleans;
//! * integers are decimal, `0x`, `0o` or `0b`, with an optional sign; a leading zero followed
//!   only by digits (`007`) is a string, as YAML 1.2 says;
//! * floats are what Rust's `f64` parser reads and is finite, plus `.inf`, `-.inf`, `.nan` in
//!   their three capitalisations (refused later: JSON has no such numbers);
//! * anything else, and every quoted or block scalar, is a string.

use std::num::ParseIntError;

use super::events::Tag;

/// A resolved scalar, before it becomes a JSON value or a map key.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Scalar {
    Null,
    Bool(bool),
    /// An integer, widened so that values past 64 bits can still be named in an error.
    Int(i128),
    /// An integer above `i128::MAX` (and at most `u128::MAX`).
    BigUnsigned(u128),
    Float(f64),
    Str(String),
}

/// Resolves a scalar's `text`, written `plain` or quoted, under its `tag`.
///
/// Errors are messages: a standard tag whose text does not fit it, or a tag assent does not
/// accept (application tags such as `!secret`, and standard ones that are not scalar types).
pub(super) fn resolve(text: String, plain: bool, tag: &Tag) -> Result<Scalar, String> {
    let mismatch =
        |text: &str, expected: &str| format!("invalid value: string {text:?}, expected {expected}");
    match tag {
        Tag::None if plain => Ok(resolve_plain(text)),
        Tag::None => Ok(Scalar::Str(text)),
        Tag::Core(name) => match name.as_str() {
            "str" => Ok(Scalar::Str(text)),
            "null" => match is_null(&text) {
                true => Ok(Scalar::Null),
                false => Err(mismatch(&text, "null")),
            },
            "bool" => parse_bool(&text)
                .map(Scalar::Bool)
                .ok_or_else(|| mismatch(&text, "a boolean")),
            "int" => parse_int(&text).ok_or_else(|| mismatch(&text, "an integer")),
            "float" => parse_float(&text)
                .map(Scalar::Float)
                .ok_or_else(|| mismatch(&text, "a float")),
            _ => Err(unsupported_tag(tag)),
        },
        Tag::Other(_) => Err(unsupported_tag(tag)),
    }
}

/// The error for a tag assent does not accept.
pub(super) fn unsupported_tag(tag: &Tag) -> String {
    format!(
        "YAML tags are not supported in governed files (found {})",
        tag.display()
    )
}

fn resolve_plain(text: String) -> Scalar {
    if text.is_empty() || is_null(&text) {
        return Scalar::Null;
    }
    if let Some(b) = parse_bool(&text) {
        return Scalar::Bool(b);
    }
    if let Some(int) = parse_int(&text) {
        return int;
    }
    if !digits_but_not_number(&text)
        && let Some(float) = parse_float(&text)
    {
        return Scalar::Float(float);
    }
    Scalar::Str(text)
}

fn is_null(text: &str) -> bool {
    matches!(text, "~" | "null" | "Null" | "NULL")
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// An integer in any of the accepted forms, or `None`.
fn parse_int(text: &str) -> Option<Scalar> {
    if let Some(n) = parse_unsigned(text, u128::from_str_radix) {
        return Some(match i128::try_from(n) {
            Ok(small) => Scalar::Int(small),
            Err(_) => Scalar::BigUnsigned(n),
        });
    }
    parse_negative(text, i128::from_str_radix).map(Scalar::Int)
}

/// A non-negative integer: an optional `+`, then decimal or a radix prefix.
fn parse_unsigned<T>(
    text: &str,
    from_radix: fn(&str, u32) -> Result<T, ParseIntError>,
) -> Option<T> {
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = unsigned.strip_prefix(prefix) {
            // `from_str_radix` would accept a sign of its own after the prefix.
            if digits.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(n) = from_radix(digits, radix) {
                return Some(n);
            }
        }
    }
    if unsigned.starts_with(['+', '-']) || digits_but_not_number(text) {
        return None;
    }
    from_radix(unsigned, 10).ok()
}

/// A negative integer: `-` then decimal or a radix prefix.
fn parse_negative<T>(
    text: &str,
    from_radix: fn(&str, u32) -> Result<T, ParseIntError>,
) -> Option<T> {
    for (prefix, radix) in [("-0x", 16), ("-0o", 8), ("-0b", 2)] {
        if let Some(digits) = text.strip_prefix(prefix)
            && let Ok(n) = from_radix(&format!("-{digits}"), radix)
        {
            return Some(n);
        }
    }
    if digits_but_not_number(text) {
        return None;
    }
    from_radix(text, 10).ok()
}

/// A float, including the non-finite YAML spellings (refused later, with a clear message).
fn parse_float(text: &str) -> Option<f64> {
    let unsigned = match text.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => text,
    };
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return Some(f64::INFINITY);
    }
    if matches!(text, "-.inf" | "-.Inf" | "-.INF") {
        return Some(f64::NEG_INFINITY);
    }
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Some(f64::NAN);
    }
    // Rust also reads `inf`, `NaN` and `infinity`; YAML does not, so those stay strings.
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// A leading zero followed only by digits (`007`, `-01`): a string under YAML 1.2.
fn digits_but_not_number(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    digits.len() > 1 && digits.starts_with('0') && digits[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Scalar {
        resolve(text.to_owned(), true, &Tag::None).expect("untagged plain scalars always resolve")
    }

    fn tagged(name: &str, text: &str) -> Result<Scalar, String> {
        resolve(text.to_owned(), false, &Tag::Core(name.to_owned()))
    }

    #[test]
    fn nulls_and_booleans() {
        for text in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(plain(text), Scalar::Null, "{text:?}");
        }
        assert_eq!(plain("nULL"), Scalar::Str("nULL".into()));
        for (text, b) in [
            ("true", true),
            ("True", true),
            ("TRUE", true),
            ("false", false),
        ] {
            assert_eq!(plain(text), Scalar::Bool(b), "{text}");
        }
        assert_eq!(
            plain("yes"),
            Scalar::Str("yes".into()),
            "YAML 1.1 booleans are strings"
        );
    }

    #[test]
    fn integers_in_every_radix_and_sign() {
        for (text, n) in [
            ("0", 0),
            ("42", 42),
            ("+42", 42),
            ("-42", -42),
            ("0x1F", 31),
            ("+0x1f", 31),
            ("-0x10", -16),
            ("0o17", 15),
            ("-0o17", -15),
            ("0b101", 5),
            ("-0b101", -5),
            ("-0", 0),
        ] {
            assert_eq!(plain(text), Scalar::Int(n), "{text}");
        }
        assert_eq!(
            plain("340282366920938463463374607431768211455"),
            Scalar::BigUnsigned(u128::MAX)
        );
        for text in [
            "007", "-01", "+00", "0x-5", "0x+5", "++5", "+-5", "1_000", "0x", "12abc",
        ] {
            assert!(matches!(plain(text), Scalar::Str(_)), "{text}");
        }
    }

    #[test]
    fn floats_and_their_yaml_spellings() {
        assert_eq!(plain("1.5"), Scalar::Float(1.5));
        assert_eq!(plain("+1.5"), Scalar::Float(1.5));
        assert_eq!(plain("1e3"), Scalar::Float(1000.0));
        assert_eq!(plain(".5"), Scalar::Float(0.5));
        assert_eq!(
            plain("007.5"),
            Scalar::Float(7.5),
            "only all-digit forms are strings"
        );
        assert_eq!(plain(".inf"), Scalar::Float(f64::INFINITY));
        assert_eq!(plain("+.INF"), Scalar::Float(f64::INFINITY));
        assert_eq!(plain("-.Inf"), Scalar::Float(f64::NEG_INFINITY));
        assert!(matches!(plain(".NaN"), Scalar::Float(f) if f.is_nan()));
        for text in ["inf", "NaN", "infinity", "-inf", "1e999", "+-1.5", "1.2.3"] {
            assert!(matches!(plain(text), Scalar::Str(_)), "{text}");
        }
        // Beyond u128 an integer reads as a float, as serde_yaml did.
        assert!(matches!(plain(&"9".repeat(40)), Scalar::Float(_)));
    }

    #[test]
    fn quoted_and_block_scalars_are_strings() {
        for text in ["1", "true", "~", ""] {
            assert_eq!(
                resolve(text.to_owned(), false, &Tag::None),
                Ok(Scalar::Str(text.to_owned()))
            );
        }
    }

    #[test]
    fn standard_tags_type_the_text_or_refuse_it() {
        assert_eq!(tagged("str", "123"), Ok(Scalar::Str("123".into())));
        assert_eq!(tagged("int", "7"), Ok(Scalar::Int(7)));
        assert_eq!(tagged("float", "1"), Ok(Scalar::Float(1.0)));
        assert_eq!(tagged("bool", "True"), Ok(Scalar::Bool(true)));
        assert_eq!(tagged("null", "~"), Ok(Scalar::Null));
        assert_eq!(
            tagged("int", "seven"),
            Err("invalid value: string \"seven\", expected an integer".into())
        );
        assert_eq!(
            tagged("null", ""),
            Err("invalid value: string \"\", expected null".into())
        );
        assert_eq!(
            tagged("bool", "yes").unwrap_err(),
            "invalid value: string \"yes\", expected a boolean"
        );
        assert_eq!(
            tagged("float", "x").unwrap_err(),
            "invalid value: string \"x\", expected a float"
        );
    }

    #[test]
    fn other_tags_are_refused_by_name() {
        assert_eq!(
            tagged("binary", "aGk=").unwrap_err(),
            "YAML tags are not supported in governed files (found !!binary)"
        );
        assert_eq!(
            resolve("x".into(), true, &Tag::Other("!secret".into())).unwrap_err(),
            "YAML tags are not supported in governed files (found !secret)"
        );
        assert_eq!(
            resolve(
                "x".into(),
                true,
                &Tag::Other("tag:example.com,2000:x".into())
            )
            .unwrap_err(),
            "YAML tags are not supported in governed files (found tag:example.com,2000:x)"
        );
    }
}
