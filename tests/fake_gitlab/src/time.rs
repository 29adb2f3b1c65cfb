//! Minimal UTC timestamp handling (GitLab's `2024-01-02T03:04:05.678Z` format).

/// The system clock in milliseconds since the Unix epoch: the one place the fake, and the
/// tests that share its clock, read the time of day.
pub fn system_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Unix milliseconds -> `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86400);
    let sod = secs.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Parses an ISO 8601 date or date-time (`2024-01-02`, `2024-01-02T03:04:05Z`,
/// `2024-01-02T03:04:05.123+02:00`, space instead of `T`) into unix milliseconds.
pub fn parse(s: &str) -> Option<i64> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) {
            t.parse().ok()
        } else {
            None
        }
    };
    let y = num(0..4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let mo = num(5..7)?;
    let d = num(8..10)?;
    let mut ms = days_from_civil(y, mo, d) * 86_400_000;
    if b.len() == 10 {
        return Some(ms);
    }
    if !matches!(b.get(10), Some(b'T') | Some(b't') | Some(b' ')) {
        return None;
    }
    let h = num(11..13)?;
    let mi = num(14..16)?;
    let mut i = 16;
    let mut sec = 0;
    if b.get(16) == Some(&b':') {
        sec = num(17..19)?;
        i = 19;
    }
    ms += (h * 3600 + mi * 60 + sec) * 1000;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        let mut end = start;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        let frac = &s[start..end];
        let padded: String = frac.chars().chain("000".chars()).take(3).collect();
        ms += padded.parse::<i64>().ok()?;
        i = end;
    }
    match b.get(i) {
        None => Some(ms),
        Some(b'Z') | Some(b'z') if i + 1 == b.len() => Some(ms),
        Some(&sign @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = if b.get(i + 3) == Some(&b':') {
                num(i + 4..i + 6)?
            } else {
                num(i + 3..i + 5).unwrap_or(0)
            };
            let off = (oh * 60 + om) * 60_000;
            Some(if sign == b'+' { ms - off } else { ms + off })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let t = parse("2024-02-29T23:59:58.123Z").unwrap();
        assert_eq!(format_ms(t), "2024-02-29T23:59:58.123Z");
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse("1970-01-01T02:00:00+02:00"), Some(0));
        assert_eq!(parse("1970-01-02"), Some(86_400_000));
        assert_eq!(parse("nope"), None);
    }
}
