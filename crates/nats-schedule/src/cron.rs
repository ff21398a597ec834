//! Message schedule patterns (ADR-51, the `Nats-Schedule` header) and when they fire next:
//! `@at <RFC3339>` (once), `@every <Go duration>` (at least 1s), the cron shorthands (`@hourly`,
//! `@daily`, ...) and six-field cron patterns with seconds, evaluated as nats-server's
//! `parseMsgSchedule`/`parseCron` do. Pure functions of the pattern and two clocks; nats-jetstream's ingest
//! task (`stream/ingest/schedules.rs`) owns the table of schedules and fires them.
//!
//! A `Nats-Schedule-Time-Zone` names an IANA zone (read from the system's zoneinfo files by
//! `time_zone.rs`); cron fields are then read on that zone's wall clock.

use time::format_description::well_known::Rfc3339;
use time::{Duration as TimeDuration, OffsetDateTime};

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// When a schedule fires next (unix nanoseconds) and whether it repeats afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextFire {
    pub at: i64,
    pub repeats: bool,
}

/// Why a schedule header is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    Pattern,
    TimeZone,
}

/// `time_zone`: the `Nats-Schedule-Time-Zone` header as sent (None when absent).
/// `reference`: the time the pattern counts from (the schedule message's time, or now).
/// Ok(None): no pattern (an empty header).
pub fn next_fire(
    pattern: &str,
    time_zone: Option<&str>,
    reference: i64,
    now: i64,
) -> Result<Option<NextFire>, ScheduleError> {
    let zone = match time_zone {
        None => None,
        Some(name) => Some(crate::time_zone::load(name).ok_or(ScheduleError::TimeZone)?),
    };
    let zoned = zone.is_some();
    if pattern.is_empty() {
        return Ok(None);
    }
    if let Some(moment) = pattern.strip_prefix("@at ") {
        if zoned {
            return Err(ScheduleError::Pattern);
        }
        let at = OffsetDateTime::parse(moment, &Rfc3339).map_err(|_| ScheduleError::Pattern)?;
        return Ok(Some(NextFire {
            at: at.unix_timestamp_nanos() as i64,
            repeats: false,
        }));
    }
    if let Some(interval) = pattern.strip_prefix("@every ") {
        if zoned {
            return Err(ScheduleError::Pattern);
        }
        let interval = go_compat::duration::parse(interval).map_err(|_| ScheduleError::Pattern)?;
        if interval < NANOS_PER_SECOND {
            return Err(ScheduleError::Pattern);
        }
        // After a pause (a restart) it fires once, not once per missed interval.
        let mut at = round_to_second(reference).saturating_add(interval);
        if at < now {
            at = round_to_second(now).saturating_add(interval);
        }
        return Ok(Some(NextFire { at, repeats: true }));
    }
    let pattern = match pattern {
        "@yearly" | "@annually" => "0 0 0 1 1 *",
        "@monthly" => "0 0 0 1 * *",
        "@weekly" => "0 0 0 * * 0",
        "@daily" | "@midnight" => "0 0 0 * * *",
        "@hourly" => "0 0 * * * *",
        other => other,
    };
    let cron = Cron::parse(pattern).ok_or(ScheduleError::Pattern)?;
    let next = |after: i64| match &zone {
        Some(zone) => cron.next_after_in(zone, after),
        None => cron.next_after(after),
    };
    let mut at = next(reference).ok_or(ScheduleError::Pattern)?;
    if at < now {
        at = next(round_to_second(now)).ok_or(ScheduleError::Pattern)?;
    }
    Ok(Some(NextFire { at, repeats: true }))
}

/// Go's `Time.Round(time.Second)`: halves round up.
fn round_to_second(nanos: i64) -> i64 {
    let remainder = nanos.rem_euclid(NANOS_PER_SECOND);
    let down = nanos - remainder;
    if remainder * 2 >= NANOS_PER_SECOND {
        down + NANOS_PER_SECOND
    } else {
        down
    }
}

/// A six-field cron pattern (seconds minutes hours day-of-month month day-of-week) as bit sets.
struct Cron {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
}

/// Set when a field was written as `*` or `?` (day matching treats those fields as "any").
const STAR_BIT: u64 = 1 << 63;

const MONTH_NAMES: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DAY_NAMES: &[(&str, u32)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

impl Cron {
    fn parse(pattern: &str) -> Option<Cron> {
        let fields: Vec<&str> = pattern.split_whitespace().collect();
        let [seconds, minutes, hours, days_of_month, months, days_of_week] = fields[..] else {
            return None;
        };
        Some(Cron {
            seconds: field_bits(seconds, 0, 59, &[])?,
            minutes: field_bits(minutes, 0, 59, &[])?,
            hours: field_bits(hours, 0, 23, &[])?,
            days_of_month: field_bits(days_of_month, 1, 31, &[])?,
            months: field_bits(months, 1, 12, MONTH_NAMES)?,
            days_of_week: field_bits(days_of_week, 0, 6, DAY_NAMES)?,
        })
    }

    fn day_matches(&self, time: OffsetDateTime) -> bool {
        let day_of_month = self.days_of_month & (1 << time.day()) != 0;
        let day_of_week = self.days_of_week & (1 << time.weekday().number_days_from_sunday()) != 0;
        if self.days_of_month & STAR_BIT != 0 || self.days_of_week & STAR_BIT != 0 {
            day_of_month && day_of_week
        } else {
            day_of_month || day_of_week
        }
    }

    /// As [`Cron::next_after`] with the fields read on the zone's wall clock.
    fn next_after_in(&self, zone: &crate::time_zone::Zone, reference: i64) -> Option<i64> {
        let offset_nanos = |utc: i64| {
            i64::from(zone.offset_at(utc.div_euclid(NANOS_PER_SECOND))) * NANOS_PER_SECOND
        };
        let mut local = reference + offset_nanos(reference);
        // A wall-clock time repeated by a change back can map before `reference`: look again.
        for _ in 0..4 {
            let local_next = self.next_after(local)?;
            let guess = local_next - offset_nanos(local_next);
            let utc = local_next - offset_nanos(guess);
            if utc > reference {
                return Some(utc);
            }
            local = local_next;
        }
        None
    }

    /// The first matching second strictly after `reference`, within five years.
    fn next_after(&self, reference: i64) -> Option<i64> {
        let start = OffsetDateTime::from_unix_timestamp_nanos(reference as i128).ok()?;
        let mut next = start.replace_nanosecond(0).ok()? + TimeDuration::SECOND;
        let year_limit = next.year() + 5;
        let mut truncated = false;
        'wrap: loop {
            if next.year() > year_limit {
                return None;
            }
            while self.months & (1 << u8::from(next.month())) == 0 {
                if !truncated {
                    truncated = true;
                    next = next.replace_day(1).ok()?.replace_time(time::Time::MIDNIGHT);
                }
                next = add_month(next)?;
                if next.month() == time::Month::January {
                    continue 'wrap;
                }
            }
            while !self.day_matches(next) {
                if !truncated {
                    truncated = true;
                    next = next.replace_time(time::Time::MIDNIGHT);
                }
                next += TimeDuration::DAY;
                if next.day() == 1 {
                    continue 'wrap;
                }
            }
            while self.hours & (1 << next.hour()) == 0 {
                if !truncated {
                    truncated = true;
                    next = next.replace_minute(0).ok()?.replace_second(0).ok()?;
                }
                next += TimeDuration::HOUR;
                if next.hour() == 0 {
                    continue 'wrap;
                }
            }
            while self.minutes & (1 << next.minute()) == 0 {
                if !truncated {
                    truncated = true;
                    next = next.replace_second(0).ok()?;
                }
                next += TimeDuration::MINUTE;
                if next.minute() == 0 {
                    continue 'wrap;
                }
            }
            while self.seconds & (1 << next.second()) == 0 {
                truncated = true;
                next += TimeDuration::SECOND;
                if next.second() == 0 {
                    continue 'wrap;
                }
            }
            return Some(next.unix_timestamp_nanos() as i64);
        }
    }
}

/// Go's `AddDate(0, 1, 0)` on the first of a month: the first of the next month.
fn add_month(time: OffsetDateTime) -> Option<OffsetDateTime> {
    let (year, month) = match time.month() {
        time::Month::December => (time.year() + 1, time::Month::January),
        other => (time.year(), other.next()),
    };
    let day = time.day().min(month.length(year));
    time.replace_day(1)
        .ok()?
        .replace_year(year)
        .ok()?
        .replace_month(month)
        .ok()?
        .replace_day(day)
        .ok()
}

/// A comma-separated list of ranges (`*`, `n`, `a-b`, each with an optional `/step`).
fn field_bits(field: &str, minimum: u32, maximum: u32, names: &[(&str, u32)]) -> Option<u64> {
    let mut bits = 0;
    for range in field.split(',').filter(|range| !range.is_empty()) {
        bits |= range_bits(range, minimum, maximum, names)?;
    }
    Some(bits)
}

fn range_bits(expression: &str, minimum: u32, maximum: u32, names: &[(&str, u32)]) -> Option<u64> {
    let mut range_and_step = expression.split('/');
    let range = range_and_step.next()?;
    let step = range_and_step.next();
    if range_and_step.next().is_some() {
        return None;
    }
    let bounds: Vec<&str> = range.split('-').collect();
    let (mut start, mut end, mut extra) = match bounds[..] {
        ["*" | "?"] => (minimum, maximum, STAR_BIT),
        [single] => {
            let value = number_or_name(single, names)?;
            (value, value, 0)
        }
        [low, high] => (number_or_name(low, names)?, number_or_name(high, names)?, 0),
        _ => return None,
    };
    let step = match step {
        None => 1,
        Some(step) => {
            let step = number_or_name(step, &[])?;
            // "n/step" means "n-max/step".
            if bounds.len() == 1 {
                end = maximum;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
    };
    if start < minimum || end > maximum || start > end || step == 0 {
        return None;
    }
    let mut bits = 0u64;
    while start <= end {
        bits |= 1 << start;
        start += step;
    }
    Some(bits | extra)
}

fn number_or_name(text: &str, names: &[(&str, u32)]) -> Option<u32> {
    let lower = text.to_ascii_lowercase();
    if let Some((_, value)) = names.iter().find(|(name, _)| *name == lower) {
        return Some(*value);
    }
    let signed = text.strip_prefix('+').unwrap_or(text);
    signed.parse::<u32>().ok()
}

/// `Nats-Schedule-Next` back to unix nanoseconds.
pub fn parse_next(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339)
        .ok()
        .map(|time| time.unix_timestamp_nanos() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(text: &str) -> i64 {
        parse_next(text).expect("rfc3339")
    }

    #[test]
    fn at_is_once() {
        let now = nanos("2026-01-01T00:00:00Z");
        assert_eq!(
            next_fire("@at 2026-01-01T00:00:05Z", None, now, now),
            Ok(Some(NextFire {
                at: now + 5 * NANOS_PER_SECOND,
                repeats: false
            }))
        );
        assert_eq!(
            next_fire("@at tomorrow", None, now, now),
            Err(ScheduleError::Pattern)
        );
        assert_eq!(
            next_fire("@at 2026-01-01T00:00:05Z", Some("UTC"), now, now),
            Err(ScheduleError::Pattern)
        );
        assert_eq!(next_fire("", None, now, now), Ok(None));
        assert_eq!(
            next_fire("@hourly", Some("Mars/Base"), now, now),
            Err(ScheduleError::TimeZone)
        );
    }

    #[test]
    fn every_rounds_and_skips_missed_intervals() {
        let start = nanos("2026-01-01T00:00:00.6Z");
        let fire = next_fire("@every 10s", None, start, start)
            .unwrap()
            .unwrap();
        assert_eq!(fire.at, nanos("2026-01-01T00:00:11Z"));
        assert!(fire.repeats);
        let later = nanos("2026-01-01T01:00:00.2Z");
        let fire = next_fire("@every 10s", None, start, later)
            .unwrap()
            .unwrap();
        assert_eq!(fire.at, nanos("2026-01-01T01:00:10Z"));
        assert_eq!(
            next_fire("@every 500ms", None, start, start),
            Err(ScheduleError::Pattern)
        );
    }

    #[test]
    fn cron_patterns() {
        let start = nanos("2026-01-01T10:20:30Z");
        let next = |pattern| next_fire(pattern, None, start, start).unwrap().unwrap().at;
        assert_eq!(next("@hourly"), nanos("2026-01-01T11:00:00Z"));
        assert_eq!(next("@daily"), nanos("2026-01-02T00:00:00Z"));
        assert_eq!(next("*/15 * * * * *"), nanos("2026-01-01T10:20:45Z"));
        assert_eq!(next("0 0 9 * * mon"), nanos("2026-01-05T09:00:00Z"));
        assert_eq!(next("0 0 0 1 feb *"), nanos("2026-02-01T00:00:00Z"));
        assert_eq!(next("@yearly"), nanos("2027-01-01T00:00:00Z"));
        assert!(next_fire("* * * *", None, start, start).is_err());
        assert!(next_fire("61 * * * * *", None, start, start).is_err());
        assert!(next_fire("0 0 0 30 2 *", None, start, start).is_err());
        // 05:00 in Amsterdam is 04:00 UTC in winter.
        if std::path::Path::new("/usr/share/zoneinfo/Europe/Amsterdam").exists() {
            let zoned = next_fire("0 0 5 * * *", Some("Europe/Amsterdam"), start, start);
            assert_eq!(zoned.unwrap().unwrap().at, nanos("2026-01-02T04:00:00Z"));
            let summer = nanos("2026-07-01T10:00:00Z");
            let zoned = next_fire("0 0 5 * * *", Some("Europe/Amsterdam"), summer, summer);
            assert_eq!(zoned.unwrap().unwrap().at, nanos("2026-07-02T03:00:00Z"));
        }
    }
}
