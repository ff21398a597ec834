//! Value formats shared by the monitoring producers: nats-server's time stamps, uptime text and
//! Go's float printing.

use serde_json::{json, Value};
use std::time::Duration;
use time::OffsetDateTime;

pub fn rfc3339(time: OffsetDateTime) -> String {
    go_compat::time_text::rfc3339_nano(time)
}

/// nats-server's uptime text: `3s`, `1m3s`, `2h1m3s`, `1d2h1m3s`, `1y2d...`.
pub fn uptime_text(duration: Duration) -> String {
    let mut seconds = duration.as_secs();
    let years = seconds / (365 * 86400);
    seconds %= 365 * 86400;
    let days = seconds / 86400;
    seconds %= 86400;
    let hours = seconds / 3600;
    seconds %= 3600;
    let minutes = seconds / 60;
    seconds %= 60;
    if years > 0 {
        format!("{years}y{days}d{hours}h{minutes}m{seconds}s")
    } else if days > 0 {
        format!("{days}d{hours}h{minutes}m{seconds}s")
    } else if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// Go prints a whole float64 without a fraction (`2`, not `2.0`).
pub fn go_float(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// Since `start`, as nats-server's uptime text.
pub fn since(now: OffsetDateTime, start: OffsetDateTime) -> String {
    uptime_text((now - start).unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_like_nats_server() {
        assert_eq!(uptime_text(Duration::from_secs(3)), "3s");
        assert_eq!(uptime_text(Duration::from_secs(63)), "1m3s");
        assert_eq!(uptime_text(Duration::from_secs(7263)), "2h1m3s");
        assert_eq!(uptime_text(Duration::from_secs(90063)), "1d1h1m3s");
    }
}
