//! The timestamps of access, error and syslog lines as seconds since the
//! Unix epoch: nginx's `$msec` (`1700000000.123`), `$time_local`
//! (`10/Oct/2000:13:55:36 -0700`, whole seconds), `$time_iso8601`, its
//! error log (`2000/10/10 13:55:36`, local time), HAProxy's accept date
//! (`10/Oct/2000:13:55:36.123`) and the syslog headers (RFC 5424
//! `2000-10-10T13:55:36.123456+02:00`, RFC 3164 `Oct 10 13:55:36`, which
//! has no year: the caller gives one).

/// Days from 1970-01-01 to a civil date (Howard Hinnant's `days_from_civil`).
fn days(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp as i64 + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn month(s: &str) -> Option<u32> {
    const M: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    M.iter().position(|m| *m == s).map(|i| i as u32 + 1)
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn civil(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: f64) -> Option<f64> {
    if !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || !(0.0..61.0).contains(&s)
    {
        return None;
    }
    Some((days(y, mo, d) * 86_400 + h as i64 * 3600 + mi as i64 * 60) as f64 + s)
}

/// Seconds with an optional fraction (`36` or `36.123`).
fn secs(s: &str) -> Option<f64> {
    let (w, f) = s.split_once('.').unwrap_or((s, ""));
    let w: u32 = num(w)?;
    if !f.is_empty() && !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac = if f.is_empty() {
        0.0
    } else {
        format!("0.{f}").parse().ok()?
    };
    Some(w as f64 + frac)
}

/// A `+hhmm`, `+hh:mm` or `Z` offset, in seconds east of UTC.
fn offset(s: &str) -> Option<f64> {
    if s == "Z" {
        return Some(0.0);
    }
    let sign = match s.as_bytes().first()? {
        b'+' => 1.0,
        b'-' => -1.0,
        _ => return None,
    };
    let digits: String = s[1..].chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 {
        return None;
    }
    let h: u32 = num(&digits[..2])?;
    let m: u32 = num(&digits[2..])?;
    Some(sign * (h as f64 * 3600.0 + m as f64 * 60.0))
}

/// `$msec`: seconds since the epoch with milliseconds.
pub fn msec(s: &str) -> Option<f64> {
    let v = secs(s)?;
    (v > 0.0).then_some(v)
}

/// `dd/Mon/yyyy:hh:mm:ss[.fff]` then, for `$time_local`, ` +zzzz`.
/// Returns the epoch seconds (UTC when an offset is given, else as if the
/// clock were UTC) and the offset read.
pub fn day_month_year(s: &str) -> Option<(f64, Option<f64>)> {
    let (stamp, zone) = match s.split_once(' ') {
        Some((a, z)) => (a, Some(offset(z)?)),
        None => (s, None),
    };
    let mut it = stamp.splitn(3, '/');
    let d: u32 = num(it.next()?)?;
    let mo = month(it.next()?)?;
    let rest = it.next()?;
    let mut p = rest.splitn(4, ':');
    let y: i64 = num(p.next()?)?;
    let h: u32 = num(p.next()?)?;
    let mi: u32 = num(p.next()?)?;
    let sec = secs(p.next()?)?;
    let t = civil(y, mo, d, h, mi, sec)?;
    Some((t - zone.unwrap_or(0.0), zone))
}

/// `yyyy-mm-ddThh:mm:ss[.ffffff](Z|±hh:mm)` ($time_iso8601, RFC 5424).
pub fn iso8601(s: &str) -> Option<f64> {
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-');
    let y: i64 = num(d.next()?)?;
    let mo: u32 = num(d.next()?)?;
    let day: u32 = num(d.next()?)?;
    let zone_at = time.find(['+', '-', 'Z'])?;
    let (clock, zone) = time.split_at(zone_at);
    let mut p = clock.splitn(3, ':');
    let h: u32 = num(p.next()?)?;
    let mi: u32 = num(p.next()?)?;
    let sec = secs(p.next()?)?;
    Some(civil(y, mo, day, h, mi, sec)? - offset(zone)?)
}

/// nginx's error log: `yyyy/mm/dd hh:mm:ss`, local time shifted by `zone`
/// seconds east of UTC.
pub fn error_log(date: &str, time: &str, zone: f64) -> Option<f64> {
    let mut d = date.splitn(3, '/');
    let y: i64 = num(d.next()?)?;
    let mo: u32 = num(d.next()?)?;
    let day: u32 = num(d.next()?)?;
    let mut p = time.splitn(3, ':');
    let h: u32 = num(p.next()?)?;
    let mi: u32 = num(p.next()?)?;
    let sec = secs(p.next()?)?;
    Some(civil(y, mo, day, h, mi, sec)? - zone)
}

/// RFC 3164's `Mmm dd hh:mm:ss` (day padded with a space) in `year`.
pub fn rfc3164(mon: &str, day: &str, time: &str, year: i64) -> Option<f64> {
    let mo = month(mon)?;
    let d: u32 = num(day)?;
    let mut p = time.splitn(3, ':');
    let h: u32 = num(p.next()?)?;
    let mi: u32 = num(p.next()?)?;
    let sec = secs(p.next()?)?;
    civil(year, mo, d, h, mi, sec)
}

/// The civil year of an epoch time (for RFC 3164 stamps, which lack it).
pub fn year_of(t: f64) -> i64 {
    // civil_from_days, the year part only.
    let z = (t / 86_400.0).floor() as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(m <= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stamp_reads_to_the_same_instant() {
        // 2026-12-01 20:36:03 UTC
        let t = 1_796_157_363.0;
        assert_eq!(msec("1796157363.009"), Some(t + 0.009));
        assert_eq!(
            day_month_year("01/Dec/2026:20:36:03 +0000"),
            Some((t, Some(0.0)))
        );
        assert_eq!(day_month_year("01/Dec/2026:21:36:03 +0100").unwrap().0, t);
        let ha = day_month_year("01/Dec/2026:20:36:03.250").unwrap().0;
        assert!((ha - (t + 0.25)).abs() < 1e-6);
        let r = iso8601("2026-12-01T20:36:03.500000+00:00").unwrap();
        assert!((r - (t + 0.5)).abs() < 1e-6);
        assert_eq!(iso8601("2026-12-01T22:36:03+02:00"), Some(t));
        assert_eq!(error_log("2026/12/01", "20:36:03", 0.0), Some(t));
        assert_eq!(rfc3164("Dec", "1", "20:36:03", 2026), Some(t));
        assert_eq!(year_of(t), 2026);
        assert_eq!(year_of(days(2024, 2, 29) as f64 * 86_400.0), 2024);
    }

    #[test]
    fn malformed_stamps_are_none() {
        assert_eq!(msec("12a"), None);
        assert_eq!(day_month_year("01/Foo/2026:20:36:03 +0000"), None);
        assert_eq!(day_month_year("01/Dec/2026:25:36:03 +0000"), None);
        assert_eq!(iso8601("2026-12-01 20:36:03"), None);
    }
}
