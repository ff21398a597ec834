//! Named time zones for cron schedules (`Nats-Schedule-Time-Zone`), read from the system's
//! zoneinfo files (TZif, RFC 8536) as Go's `time.LoadLocation` does: the transitions in the
//! file, then the POSIX TZ rule in its footer for times past the last one. Only the UTC offset
//! at an instant is needed (`cron.rs` evaluates cron fields on local wall-clock time).

use time::{Date, Month};

/// Where Go looks for zoneinfo files, in order (after `$ZONEINFO`).
const ZONEINFO_DIRECTORIES: &[&str] = &[
    "/usr/share/zoneinfo/",
    "/usr/share/lib/zoneinfo/",
    "/usr/lib/locale/TZ/",
    "/etc/zoneinfo/",
];

/// A loaded zone: UTC offsets (seconds east) from each transition on.
#[derive(Debug)]
pub struct Zone {
    /// (transition time in unix seconds, offset after it), ascending.
    transitions: Vec<(i64, i32)>,
    /// The offset before the first transition.
    initial: i32,
    /// The rule for times after the last transition.
    rule: Option<PosixRule>,
}

/// Load a zone by IANA name; None when the name is invalid or unknown.
pub fn load(name: &str) -> Option<Zone> {
    if name.is_empty()
        || name.contains("..")
        || name.starts_with('/')
        || name.starts_with('\\')
        || name.contains('\0')
    {
        return None;
    }
    if name == "UTC" {
        return Some(Zone::fixed(0));
    }
    let path = if name == "Local" {
        "/etc/localtime".to_string()
    } else {
        let mut candidates: Vec<String> = Vec::new();
        if let Ok(directory) = std::env::var("ZONEINFO") {
            candidates.push(format!("{directory}/{name}"));
        }
        candidates.extend(
            ZONEINFO_DIRECTORIES
                .iter()
                .map(|dir| format!("{dir}{name}")),
        );
        candidates
            .into_iter()
            .find(|path| std::path::Path::new(path).is_file())?
    };
    let bytes = std::fs::read(path).ok()?;
    Zone::parse(&bytes)
}

impl Zone {
    fn fixed(offset: i32) -> Zone {
        Zone {
            transitions: Vec::new(),
            initial: offset,
            rule: None,
        }
    }

    /// The UTC offset in seconds at `unix_seconds`.
    pub fn offset_at(&self, unix_seconds: i64) -> i32 {
        match self.transitions.last() {
            Some((last, _)) if unix_seconds >= *last => {
                if let Some(rule) = &self.rule {
                    return rule.offset_at(unix_seconds);
                }
            }
            None => {
                if let Some(rule) = &self.rule {
                    return rule.offset_at(unix_seconds);
                }
                return self.initial;
            }
            _ => {}
        }
        let index = self
            .transitions
            .partition_point(|(at, _)| *at <= unix_seconds);
        if index == 0 {
            self.initial
        } else {
            self.transitions[index - 1].1
        }
    }

    fn parse(bytes: &[u8]) -> Option<Zone> {
        let mut reader = Reader { bytes, position: 0 };
        let header = reader.header()?;
        if header.version == 0 {
            return reader.block(&header, 4, None);
        }
        // Skip the 32-bit block; the 64-bit one and the footer follow.
        reader.skip(header.block_length(4))?;
        let header = reader.header()?;
        reader.block(&header, 8, Some(()))
    }
}

struct Header {
    version: u8,
    utc_indicators: usize,
    standard_indicators: usize,
    leap_seconds: usize,
    transitions: usize,
    types: usize,
    characters: usize,
}

impl Header {
    fn block_length(&self, time_size: usize) -> usize {
        self.transitions * time_size
            + self.transitions
            + self.types * 6
            + self.characters
            + self.leap_seconds * (time_size + 4)
            + self.standard_indicators
            + self.utc_indicators
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn take(&mut self, length: usize) -> Option<&[u8]> {
        let end = self.position.checked_add(length)?;
        let slice = self.bytes.get(self.position..end)?;
        self.position = end;
        Some(slice)
    }

    fn skip(&mut self, length: usize) -> Option<()> {
        self.take(length).map(|_| ())
    }

    fn count(&mut self) -> Option<usize> {
        let bytes = self.take(4)?;
        Some(u32::from_be_bytes(bytes.try_into().ok()?) as usize)
    }

    fn header(&mut self) -> Option<Header> {
        if self.take(4)? != b"TZif" {
            return None;
        }
        let version = match self.take(1)?[0] {
            0 => 0,
            byte => byte.wrapping_sub(b'0'),
        };
        self.skip(15)?;
        Some(Header {
            version,
            utc_indicators: self.count()?,
            standard_indicators: self.count()?,
            leap_seconds: self.count()?,
            transitions: self.count()?,
            types: self.count()?,
            characters: self.count()?,
        })
    }

    /// The data block; `footer`: read the POSIX rule after it (version 2+).
    fn block(&mut self, header: &Header, time_size: usize, footer: Option<()>) -> Option<Zone> {
        let mut times = Vec::with_capacity(header.transitions);
        for _ in 0..header.transitions {
            let bytes = self.take(time_size)?;
            times.push(match time_size {
                8 => i64::from_be_bytes(bytes.try_into().ok()?),
                _ => i64::from(i32::from_be_bytes(bytes.try_into().ok()?)),
            });
        }
        let indexes = self.take(header.transitions)?.to_vec();
        let mut offsets = Vec::with_capacity(header.types);
        for _ in 0..header.types {
            let record = self.take(6)?;
            offsets.push(i32::from_be_bytes(record[..4].try_into().ok()?));
        }
        self.skip(
            header.characters
                + header.leap_seconds * (time_size + 4)
                + header.standard_indicators
                + header.utc_indicators,
        )?;
        let mut transitions = Vec::with_capacity(times.len());
        for (time, index) in times.into_iter().zip(indexes) {
            transitions.push((time, *offsets.get(usize::from(index))?));
        }
        let rule = match footer {
            Some(()) => {
                let rest = self.bytes.get(self.position..)?;
                let text = std::str::from_utf8(rest).ok()?.trim_matches('\n');
                PosixRule::parse(text.lines().next().unwrap_or(""))
            }
            None => None,
        };
        Some(Zone {
            transitions,
            initial: offsets.first().copied().unwrap_or(0),
            rule,
        })
    }
}

/// A POSIX TZ string (`CET-1CEST,M3.5.0,M10.5.0/3`): standard offset, and optionally a
/// daylight-saving offset with the rules for when it starts and ends.
#[derive(Debug)]
struct PosixRule {
    standard: i32,
    daylight: Option<(i32, DayRule, i32, DayRule, i32)>,
}

/// When in the year a change happens.
#[derive(Debug, Clone, Copy)]
enum DayRule {
    /// `Jn`: day 1..=365, February 29 never counted.
    Julian(u16),
    /// `n`: day 0..=365, counting February 29.
    Zero(u16),
    /// `Mm.w.d`: weekday d of week w (5 = last) of month m.
    MonthWeekDay(u8, u8, u8),
}

impl PosixRule {
    fn parse(text: &str) -> Option<PosixRule> {
        if text.is_empty() {
            return None;
        }
        let mut rest = skip_name(text)?;
        let (standard_west, after) = parse_offset(rest)?;
        rest = after;
        let standard = -standard_west;
        if rest.is_empty() {
            return Some(PosixRule {
                standard,
                daylight: None,
            });
        }
        rest = skip_name(rest)?;
        let mut daylight = standard + 3600;
        if !rest.starts_with(',') && !rest.is_empty() {
            let (west, after) = parse_offset(rest)?;
            daylight = -west;
            rest = after;
        }
        let rules = rest.strip_prefix(',')?;
        let (start, end) = rules.split_once(',')?;
        let (start_day, start_time) = parse_change(start)?;
        let (end_day, end_time) = parse_change(end)?;
        Some(PosixRule {
            standard,
            daylight: Some((daylight, start_day, start_time, end_day, end_time)),
        })
    }

    fn offset_at(&self, unix_seconds: i64) -> i32 {
        let Some((daylight, start_day, start_time, end_day, end_time)) = self.daylight else {
            return self.standard;
        };
        let Ok(moment) = time::OffsetDateTime::from_unix_timestamp(unix_seconds) else {
            return self.standard;
        };
        let year = moment.year();
        let (Some(start), Some(end)) = (day_of(year, start_day), day_of(year, end_day)) else {
            return self.standard;
        };
        // Change times are local: the start in standard time, the end in daylight time.
        let start = midnight(start) + i64::from(start_time) - i64::from(self.standard);
        let end = midnight(end) + i64::from(end_time) - i64::from(daylight);
        let in_daylight = if start < end {
            unix_seconds >= start && unix_seconds < end
        } else {
            !(unix_seconds >= end && unix_seconds < start)
        };
        if in_daylight {
            daylight
        } else {
            self.standard
        }
    }
}

fn midnight(date: Date) -> i64 {
    date.midnight().assume_utc().unix_timestamp()
}

fn day_of(year: i32, rule: DayRule) -> Option<Date> {
    match rule {
        DayRule::Julian(day) => {
            let mut ordinal = day;
            if time::util::is_leap_year(year) && day >= 60 {
                ordinal += 1;
            }
            Date::from_ordinal_date(year, ordinal).ok()
        }
        DayRule::Zero(day) => Date::from_ordinal_date(year, day + 1).ok(),
        DayRule::MonthWeekDay(month, week, weekday) => {
            let month = Month::try_from(month).ok()?;
            let first = Date::from_calendar_date(year, month, 1).ok()?;
            let first_weekday = first.weekday().number_days_from_sunday();
            let mut day = 1 + (7 + weekday - first_weekday) % 7 + (week - 1) * 7;
            let length = month.length(year);
            while day > length {
                day -= 7;
            }
            Date::from_calendar_date(year, month, day).ok()
        }
    }
}

/// Skip a zone abbreviation (`CET` or `<+03>`).
fn skip_name(text: &str) -> Option<&str> {
    if let Some(quoted) = text.strip_prefix('<') {
        let end = quoted.find('>')?;
        return Some(&quoted[end + 1..]);
    }
    let end = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    (end >= 3).then(|| &text[end..])
}

/// `[+-]hh[:mm[:ss]]` in seconds, and the rest.
fn parse_offset(text: &str) -> Option<(i32, &str)> {
    let (sign, text) = match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    };
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(text.len());
    let mut seconds = 0i32;
    let mut scale = 3600;
    for part in text[..end].split(':') {
        seconds += part.parse::<i32>().ok()? * scale;
        scale /= 60;
    }
    Some((sign * seconds, &text[end..]))
}

/// `date[/time]` of a daylight-saving change; the time defaults to 02:00.
fn parse_change(text: &str) -> Option<(DayRule, i32)> {
    let (date, time) = match text.split_once('/') {
        Some((date, time)) => (date, parse_offset(time)?.0),
        None => (text, 7200),
    };
    let rule = if let Some(julian) = date.strip_prefix('J') {
        DayRule::Julian(julian.parse().ok()?)
    } else if let Some(month_rule) = date.strip_prefix('M') {
        let mut parts = month_rule.split('.');
        let month = parts.next()?.parse().ok()?;
        let week = parts.next()?.parse().ok()?;
        let weekday = parts.next()?.parse().ok()?;
        if !(1..=5).contains(&week) || weekday > 6 {
            return None;
        }
        DayRule::MonthWeekDay(month, week, weekday)
    } else {
        DayRule::Zero(date.parse().ok()?)
    };
    Some((rule, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_rules() {
        let rule = PosixRule::parse("CET-1CEST,M3.5.0,M10.5.0/3").expect("parses");
        // 2026-07-01T00:00:00Z: summer, +2h; 2026-01-01: winter, +1h.
        assert_eq!(rule.offset_at(1_782_864_000), 7200);
        assert_eq!(rule.offset_at(1_767_225_600), 3600);
        // Summer time starts 2026-03-29 01:00 UTC.
        assert_eq!(rule.offset_at(1_774_745_999), 3600);
        assert_eq!(rule.offset_at(1_774_746_000), 7200);
        let fixed = PosixRule::parse("<+03>-3").expect("parses");
        assert_eq!(fixed.offset_at(0), 3 * 3600);
        let east_us = PosixRule::parse("EST5EDT,M3.2.0,M11.1.0").expect("parses");
        assert_eq!(east_us.offset_at(1_782_864_000), -4 * 3600);
    }

    #[test]
    fn names_are_checked() {
        assert!(load("../etc/passwd").is_none());
        assert!(load("").is_none());
        assert_eq!(load("UTC").map(|zone| zone.offset_at(0)), Some(0));
        assert!(load("Mars/Base").is_none());
        if let Some(zone) = load("America/New_York") {
            // 2000-07-01 (from the file's transitions) and 2000-01-01.
            assert_eq!(zone.offset_at(962_409_600), -4 * 3600);
            assert_eq!(zone.offset_at(946_684_800), -5 * 3600);
        }
    }
}
