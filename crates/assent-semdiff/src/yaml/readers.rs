//! What the other readers of a governed YAML file make of a plain scalar, so that assent can
//! refuse the ones they read differently from it.
//!
//! assent resolves plain scalars under YAML 1.2's core schema (`scalar.rs`). The programs that
//! read a registry after the merge often do not: PyYAML implements YAML 1.1's type repository
//! (`yes` is true, `030` is 24, `1:30` is 90, `1_000` is 1000, `<<` merges a mapping, `1e3` is
//! a string because a 1.1 float needs a dot), and Go's `gopkg.in/yaml.v3` keeps some of 1.1
//! (`030` is 24 there too, `0X1F` is 31, `09` is 9, `2024-1-5` is a time). A value one reader
//! sees as 30 days and another as 24 is a gate that can be walked around, so a plain scalar is
//! accepted only when both readers resolve it as assent does; anything else is refused with
//! what each reader would read instead. Quoting makes any scalar a string for every reader.
//!
//! The two functions below follow PyYAML 6's resolver and constructors (`resolver.py`,
//! `constructor.py`) and yaml.v3's `resolve.go`; the differential tests in `tests/it/
//! consumers.rs` hold them to the real libraries. Timestamps are the one place where they are
//! not exact: both libraries are treated as reading a time from anything that starts with a
//! date (`2024-01-15…`), which refuses a few strings one of them would keep (`2024-1-5` for
//! PyYAML, `2024-01-15T` for both).

use std::num::IntErrorKind;

use super::scalar::Scalar;

/// A reader's reading of a plain scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Reading {
    Null,
    Bool(bool),
    /// An integer, or `None` beyond `i128` (PyYAML's integers are unbounded).
    Int(Option<i128>),
    Float(f64),
    Str,
    /// A calendar date written `YYYY-MM-DD`: the same value as the string, for every purpose
    /// a registry has (PyYAML gives a `date`, yaml.v3 a time at midnight UTC).
    Date,
    /// Any other date and time: a value of its own type, whose text form is not the scalar's.
    Timestamp,
    /// The merge key `<<`.
    Merge,
    /// The reader fails on it (PyYAML on a `<<` or `=` value, on `0x_`).
    Fails,
}

impl Reading {
    /// Whether two readings are the same value. NaNs are alike (each reader reads one; assent
    /// refuses it on its own grounds), a date is its string.
    pub(super) fn agrees_with(self, other: Reading) -> bool {
        match (self, other) {
            (Reading::Float(a), Reading::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Reading::Str | Reading::Date, Reading::Str | Reading::Date) => true,
            _ => self == other,
        }
    }

    /// How the reading reads in an error message about scalar `text`.
    pub(super) fn describe(self, text: &str) -> String {
        match self {
            Reading::Null => "null".to_owned(),
            Reading::Bool(b) => format!("the boolean {b}"),
            Reading::Int(Some(n)) => format!("the integer {n}"),
            Reading::Int(None) => "an integer wider than 128 bits".to_owned(),
            Reading::Float(f) if f.is_nan() => "NaN".to_owned(),
            Reading::Float(f) if f.is_infinite() => format!("the float {}inf", sign(f)),
            Reading::Float(f) => format!("the float {f:?}"),
            Reading::Str | Reading::Date => format!("the string {text:?}"),
            Reading::Timestamp => "a timestamp".to_owned(),
            Reading::Merge => "a merge key".to_owned(),
            Reading::Fails => "an error".to_owned(),
        }
    }
}

fn sign(f: f64) -> &'static str {
    if f < 0.0 { "-" } else { "" }
}

/// Why the plain, untagged scalar `text`, which assent resolves to `assent`, is refused: the
/// readers read it otherwise. `None` when every reader agrees. A map `key` is not held to
/// yaml.v3's reading of `y`, `n` and the like into a Go `bool`, which only applies to values.
pub(super) fn refusal(text: &str, assent: &Scalar, key: bool) -> Option<String> {
    let assent = match *assent {
        Scalar::Null => Reading::Null,
        Scalar::Bool(b) => Reading::Bool(b),
        // Beyond 64 bits assent refuses the number itself, with its own message.
        Scalar::Int(n) if i64::try_from(n).is_err() && u64::try_from(n).is_err() => return None,
        Scalar::Int(n) => Reading::Int(Some(n)),
        Scalar::BigUnsigned(_) => return None,
        Scalar::Float(f) => Reading::Float(f),
        Scalar::Str(_) => Reading::Str,
    };
    if text == "<<" {
        return Some(
            "\"<<\" is YAML 1.1's merge key: PyYAML and Go's yaml.v3 merge the mapping it \
             names into the one holding it, which assent does not do; write the keys out (or \
             quote \"<<\" to mean a key of that name)"
                .to_owned(),
        );
    }
    if !key && is_yaml11_boolean_word(text) {
        let truth = matches!(text.to_ascii_lowercase().as_str(), "y" | "yes" | "on");
        return Some(format!(
            "plain scalar {text:?} is the string {text:?} to assent (YAML 1.2) but the boolean \
             {truth} in YAML 1.1 (PyYAML reads yes, on, no and off so; Go's yaml.v3 reads it so \
             into a bool field): quote it to mean the string, or write {truth}"
        ));
    }
    let mut others = Vec::new();
    let py = pyyaml(text);
    if !py.agrees_with(assent) {
        others.push(format!("{} to PyYAML (YAML 1.1)", py.describe(text)));
    }
    let go = yaml_v3(text);
    if !go.agrees_with(assent) {
        others.push(format!("{} to Go's yaml.v3", go.describe(text)));
    }
    if others.is_empty() {
        return None;
    }
    Some(format!(
        "plain scalar {text:?} is {} to assent (YAML 1.2) but {}: quote it to mean the string, \
         or write the value the way every reader reads alike",
        assent.describe(text),
        others.join(" and ")
    ))
}

/// The error for a plain key `source` that resolves to a scalar whose text, `key`, is not
/// the one written (`0x10` is key `"16"`, `~` key `"null"`, `True` key `"true"`): a program
/// reading the file into a map with string keys (yaml.v3 into `map[string]T`) keeps the text
/// as written, so the two would name different keys.
pub(super) fn noncanonical_key(source: &str, key: &str) -> String {
    format!(
        "key {source:?} is the scalar {key} to assent but the text {source:?} to readers that \
         keep keys as written (Go's yaml.v3 into a map of strings): quote it, or write it as \
         {key}"
    )
}

/// Whether a plain scalar might be read as anything but a string by some reader: everything
/// both libraries resolve starts with one of these. Most scalars of a registry (names, owners)
/// do not, and skip the rest of the checks.
pub(super) fn may_resolve(text: &str) -> bool {
    match text.bytes().next() {
        None => true,
        Some(b) => b.is_ascii_digit() || b"-+.~<=yYnNtTfFoO".contains(&b),
    }
}

/// A word YAML 1.1 lists as a boolean in some capitalisation, beyond YAML 1.2's `true` and
/// `false`: `y`, `n`, `yes`, `no`, `on`, `off`. PyYAML reads `yes`, `Yes`, `YES` (and the
/// same of the others) as booleans, and yaml.v3 reads all of them into a Go `bool` field.
pub(super) fn is_yaml11_boolean_word(text: &str) -> bool {
    ["y", "n", "yes", "no", "on", "off"]
        .iter()
        .any(|word| text.eq_ignore_ascii_case(word))
}

/// What PyYAML 6's `safe_load` (YAML 1.1) reads a plain scalar as.
pub(super) fn pyyaml(text: &str) -> Reading {
    match text {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Reading::Bool(true);
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Reading::Bool(false);
        }
        "" | "~" | "null" | "Null" | "NULL" => return Reading::Null,
        "<<" => return Reading::Merge,
        "=" => return Reading::Fails,
        _ => {}
    }
    if let Some(reading) = date_like(text) {
        return reading;
    }
    if is_float_11(text) {
        return float_11(text);
    }
    if is_int_11(text) {
        return int_11(text);
    }
    Reading::Str
}

/// What yaml.v3's `Unmarshal` into an `interface{}` reads a plain scalar as.
pub(super) fn yaml_v3(text: &str) -> Reading {
    match text {
        "true" | "True" | "TRUE" => return Reading::Bool(true),
        "false" | "False" | "FALSE" => return Reading::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => return Reading::Null,
        ".nan" | ".NaN" | ".NAN" => return Reading::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Reading::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Reading::Float(f64::NEG_INFINITY),
        "<<" => return Reading::Merge,
        _ => {}
    }
    match text.as_bytes()[0] {
        b'.' => go_parse_float(text).map_or(Reading::Str, Reading::Float),
        b'+' | b'-' | b'0'..=b'9' => {
            if let Some(reading) = date_like(text) {
                return reading;
            }
            let plain = text.replace('_', "");
            if let Some(n) = go_parse_int(&plain) {
                return Reading::Int(Some(n));
            }
            if is_yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Reading::Float(f);
            }
            Reading::Str
        }
        _ => Reading::Str,
    }
}

/// A scalar starting with a date, `YYYY-M-D` (one or two digits each), alone or followed by a
/// time: `Date` when it is exactly `YYYY-MM-DD`, `Timestamp` otherwise.
fn date_like(text: &str) -> Option<Reading> {
    let b = text.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return None;
    }
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let month = digits(5);
    if !(1..=2).contains(&month) || b.get(5 + month) != Some(&b'-') {
        return None;
    }
    let day_at = 6 + month;
    let day = digits(day_at);
    if !(1..=2).contains(&day) {
        return None;
    }
    match b.get(day_at + day) {
        None if month == 2 && day == 2 => Some(Reading::Date),
        None | Some(b'T' | b't' | b' ' | b'\t') => Some(Reading::Timestamp),
        Some(_) => None,
    }
}

/// PyYAML's float pattern:
/// `[-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)?`, `\.[0-9_]+([eE][-+][0-9]+)?`,
/// `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*`, `[-+]?\.(inf|Inf|INF)`, `\.(nan|NaN|NAN)`.
fn is_float_11(text: &str) -> bool {
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let signed = text.starts_with(['-', '+']);
    let body = if signed { &text[1..] } else { text };
    if matches!(body, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    let b = body.as_bytes();
    let mut i = 0;
    let digit_us = |c: &u8| c.is_ascii_digit() || *c == b'_';
    if b.first() == Some(&b'.') {
        // `\.[0-9_]+` has no sign.
        if signed {
            return false;
        }
        let n = b[1..].iter().take_while(|c| digit_us(c)).count();
        return n > 0 && exponent_11(&b[1 + n..]);
    }
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return false;
    }
    i += b.iter().take_while(|c| digit_us(c)).count();
    let mut sexagesimal = false;
    while b.get(i) == Some(&b':') {
        let n = sexagesimal_part(&b[i + 1..]);
        if n == 0 {
            return false;
        }
        i += 1 + n;
        sexagesimal = true;
    }
    if b.get(i) != Some(&b'.') {
        return false;
    }
    i += 1;
    i += b[i..].iter().take_while(|c| digit_us(c)).count();
    match sexagesimal {
        true => i == b.len(),
        false => exponent_11(&b[i..]),
    }
}

/// The rest of a YAML 1.1 float after its digits: nothing, or `[eE][-+][0-9]+`.
fn exponent_11(rest: &[u8]) -> bool {
    match rest {
        [] => true,
        [b'e' | b'E', b'-' | b'+', digits @ ..] => {
            !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// The length of a `[0-5]?[0-9]` at the start of `b` (0 when there is none).
fn sexagesimal_part(b: &[u8]) -> usize {
    match b {
        [a, c, ..] if (b'0'..=b'5').contains(a) && c.is_ascii_digit() => 2,
        [a, ..] if a.is_ascii_digit() => 1,
        _ => 0,
    }
}

/// PyYAML's integer pattern: `[-+]?0b[0-1_]+`, `[-+]?0[0-7_]+`, `[-+]?(0|[1-9][0-9_]*)`,
/// `[-+]?0x[0-9a-fA-F_]+`, `[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+`.
fn is_int_11(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let all = |s: &str, ok: fn(&u8) -> bool| !s.is_empty() && s.as_bytes().iter().all(ok);
    if let Some(rest) = body.strip_prefix("0b") {
        return all(rest, |c| matches!(c, b'0' | b'1' | b'_'));
    }
    if let Some(rest) = body.strip_prefix("0x") {
        return all(rest, |c| c.is_ascii_hexdigit() || *c == b'_');
    }
    if body == "0" {
        return true;
    }
    if let Some(rest) = body.strip_prefix('0') {
        return all(rest, |c| matches!(c, b'0'..=b'7' | b'_'));
    }
    let b = body.as_bytes();
    if !b.first().is_some_and(|c| (b'1'..=b'9').contains(c)) {
        return false;
    }
    let mut i = b
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'_')
        .count();
    while b.get(i) == Some(&b':') {
        let n = sexagesimal_part(&b[i + 1..]);
        if n == 0 {
            return false;
        }
        i += 1 + n;
    }
    i == b.len()
}

/// PyYAML's `construct_yaml_int` of a text matching [`is_int_11`].
fn int_11(text: &str) -> Reading {
    let value = text.replace('_', "");
    let (negative, value) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, &value[..]),
    };
    let magnitude = if value == "0" {
        Ok(0)
    } else if let Some(bits) = value.strip_prefix("0b") {
        i128::from_str_radix(bits, 2)
    } else if let Some(hex) = value.strip_prefix("0x") {
        i128::from_str_radix(hex, 16)
    } else if value.starts_with('0') {
        i128::from_str_radix(value, 8)
    } else if value.contains(':') {
        let mut total: Option<i128> = Some(0);
        for part in value.split(':') {
            let Ok(digit) = part.parse::<i128>() else {
                return Reading::Fails;
            };
            total = total
                .and_then(|t| t.checked_mul(60))
                .and_then(|t| t.checked_add(digit));
        }
        return Reading::Int(total.map(|t| if negative { -t } else { t }));
    } else {
        value.parse::<i128>()
    };
    match magnitude {
        Ok(n) => Reading::Int(Some(if negative { -n } else { n })),
        Err(e) if *e.kind() == IntErrorKind::PosOverflow => Reading::Int(None),
        // Python's `int('', 16)`, for `0x_`.
        Err(_) => Reading::Fails,
    }
}

/// PyYAML's `construct_yaml_float` of a text matching [`is_float_11`].
fn float_11(text: &str) -> Reading {
    let value = text.replace('_', "").to_ascii_lowercase();
    let (negative, value) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, &value[..]),
    };
    let signed = |f: f64| if negative { -f } else { f };
    if value == ".inf" {
        return Reading::Float(signed(f64::INFINITY));
    }
    if value == ".nan" {
        return Reading::Float(f64::NAN);
    }
    if value.contains(':') {
        let mut total = 0.0;
        for part in value.split(':') {
            let Ok(digit) = part.parse::<f64>() else {
                return Reading::Fails;
            };
            total = total * 60.0 + digit;
        }
        return Reading::Float(signed(total));
    }
    // Python's float() reads what Rust's does here (digits, one dot, an exponent); it
    // overflows to infinity where Rust does too.
    match value.parse::<f64>() {
        Ok(f) => Reading::Float(signed(f)),
        Err(_) => Reading::Fails,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: a sign (`ParseInt` only),
/// `0x`/`0X`, `0o`/`0O`, `0b`/`0B`, a leading `0` for octal, else decimal; within 64 bits.
fn go_parse_int(text: &str) -> Option<i128> {
    let (negative, unsigned, signed) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..], true),
        Some(b'+') => (false, &text[1..], true),
        _ => (false, text, false),
    };
    let lower = unsigned.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, &lower[..])
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u128::from_str_radix(digits, radix).ok()?;
    let value = if negative {
        -i128::try_from(magnitude).ok()?
    } else {
        i128::try_from(magnitude).ok()?
    };
    let fits_i64 = i64::try_from(value).is_ok();
    // `ParseUint` takes no sign, so a `+` above i64 fails both.
    let fits_u64 = !signed && u64::try_from(value).is_ok();
    (fits_i64 || fits_u64).then_some(value)
}

/// yaml.v3's `yamlStyleFloat`: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_style_float(text: &str) -> bool {
    let b = text.strip_prefix(['-', '+']).unwrap_or(text).as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i;
    if b.first() == Some(&b'.') {
        let n = digits(1);
        if n == 0 {
            return false;
        }
        i = 1 + n;
    } else {
        let n = digits(0);
        if n == 0 {
            return false;
        }
        i = n;
        if b.get(i) == Some(&b'.') {
            i += 1 + digits(i + 1);
        }
    }
    match &b[i..] {
        [] => true,
        [b'e' | b'E', rest @ ..] => {
            let rest = rest
                .strip_prefix(b"-")
                .or(rest.strip_prefix(b"+"))
                .unwrap_or(rest);
            !rest.is_empty() && rest.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// Go's `strconv.ParseFloat(s, 64)` on decimal text: `None` where it fails, including when
/// the value is out of range (yaml.v3 then keeps the string).
fn go_parse_float(text: &str) -> Option<f64> {
    if !is_yaml_style_float(text) {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row was read by PyYAML 6.0 and yaml.v3 3.0.1 (`k: <text>`, printed as JSON),
    /// except `2024-1-5`, a string to PyYAML, which the date rule counts as a time for both.
    #[test]
    fn readings_match_what_the_libraries_read() {
        use Reading::*;
        let int = |n: i128| Int(Some(n));
        for (text, py, go) in [
            ("030", int(24), int(24)),
            ("012", int(10), int(10)),
            ("-012", int(-10), int(-10)),
            ("0777", int(511), int(511)),
            ("09", Str, Float(9.0)),
            ("0o17", Str, int(15)),
            ("0O17", Str, int(15)),
            ("0X1F", Str, int(31)),
            ("0x1F", int(31), int(31)),
            ("+0x1f", int(31), int(31)),
            ("-0x10", int(-16), int(-16)),
            ("0B101", Str, int(5)),
            ("0b101", int(5), int(5)),
            ("-0b101", int(-5), int(-5)),
            ("1_000", int(1000), int(1000)),
            ("1__0", int(10), int(10)),
            ("0x_1F", int(31), int(31)),
            ("0x_", Fails, Str),
            ("1:30", int(90), Str),
            ("1:3", int(63), Str),
            ("-1:30", int(-90), Str),
            ("190:20:30", int(685230), Str),
            ("1:60", Str, Str),
            ("1:30.5", Float(90.5), Str),
            ("1e3", Str, Float(1000.0)),
            ("1E3", Str, Float(1000.0)),
            ("1e+3", Str, Float(1000.0)),
            ("1.5e3", Str, Float(1500.0)),
            ("1.5e+3", Float(1500.0), Float(1500.0)),
            ("1.5E-3", Float(0.0015), Float(0.0015)),
            ("+.5", Str, Float(0.5)),
            ("-.5", Str, Float(-0.5)),
            (".5", Float(0.5), Float(0.5)),
            (".5e+3", Float(500.0), Float(500.0)),
            ("5.", Float(5.0), Float(5.0)),
            ("+5.", Float(5.0), Float(5.0)),
            ("007.5", Float(7.5), Float(7.5)),
            ("1._5", Float(1.5), Float(1.5)),
            ("0.5_0", Float(0.5), Float(0.5)),
            ("1.0e+400", Float(f64::INFINITY), Str),
            ("1e-400", Str, Float(0.0)),
            ("-0.0", Float(-0.0), Float(-0.0)),
            (".inf", Float(f64::INFINITY), Float(f64::INFINITY)),
            ("-.Inf", Float(f64::NEG_INFINITY), Float(f64::NEG_INFINITY)),
            (".NaN", Float(f64::NAN), Float(f64::NAN)),
            ("-.nan", Str, Str),
            (".Nan", Str, Str),
            ("yes", Bool(true), Str),
            ("No", Bool(false), Str),
            ("ON", Bool(true), Str),
            ("off", Bool(false), Str),
            ("y", Str, Str),
            ("yEs", Str, Str),
            ("True", Bool(true), Bool(true)),
            ("tRUE", Str, Str),
            ("~", Null, Null),
            ("", Null, Null),
            ("<<", Merge, Merge),
            ("=", Fails, Str),
            ("2024-01-15", Date, Date),
            ("2024-1-5", Timestamp, Timestamp),
            ("2024-01-15T10:00:00Z", Timestamp, Timestamp),
            ("2001-12-14 21:59:43.10 -5", Timestamp, Timestamp),
            ("20240115", int(20240115), int(20240115)),
            ("1.2.3", Str, Str),
            ("-0", int(0), int(0)),
            ("+00", int(0), int(0)),
            (
                "12345678901234567890",
                int(12345678901234567890),
                int(12345678901234567890),
            ),
            (
                "-9223372036854775809",
                int(-9223372036854775809),
                Float(-9223372036854775809.0),
            ),
            ("0x8000000000000000", int(1 << 63), int(1 << 63)),
            ("0xFFFFFFFFFFFFFFFFF", int(0xFFFFFFFFFFFFFFFFF), Str),
            ("_1", Str, Str),
            ("1,000", Str, Str),
            ("orders.events.v1", Str, Str),
            ("12abc", Str, Str),
        ] {
            let same = |a: Reading, b: Reading| a.agrees_with(b) && (a == Date) == (b == Date);
            assert!(
                same(pyyaml(text), py),
                "PyYAML {text:?}: {:?}",
                pyyaml(text)
            );
            assert!(
                same(yaml_v3(text), go),
                "yaml.v3 {text:?}: {:?}",
                yaml_v3(text)
            );
        }
    }

    #[test]
    fn only_scalars_starting_with_a_resolvable_character_are_checked() {
        for text in ["payments", "Kafka", "hello world", "@x", "group-a"] {
            assert!(!may_resolve(text), "{text}");
            assert_eq!((pyyaml(text), yaml_v3(text)), (Reading::Str, Reading::Str));
        }
        assert!(may_resolve("orders"), "o, for on and off");
        assert_eq!(
            (pyyaml("orders"), yaml_v3("orders")),
            (Reading::Str, Reading::Str)
        );
        for text in ["0", "~", "<<", "yes", "Off", ".5", "-1", "=", ""] {
            assert!(may_resolve(text), "{text}");
        }
    }

    #[test]
    fn yaml11_boolean_words_in_any_case() {
        for text in ["y", "Y", "n", "N", "yes", "yEs", "NO", "on", "On", "oFF"] {
            assert!(is_yaml11_boolean_word(text), "{text}");
        }
        for text in ["true", "yess", "o", "nope", "online"] {
            assert!(!is_yaml11_boolean_word(text), "{text}");
        }
    }
}
