//! nats-schedule: when a message schedule fires (ADR-51's `Nats-Schedule` and
//! `Nats-Schedule-Time-Zone` headers), as nats-server's `parseMsgSchedule` and `parseCron`
//! evaluate them.
//!
//! - [`next_fire`] (`cron.rs`): `@at`, `@every`, the cron shorthands and six-field cron
//!   patterns; pure functions of the pattern and two clocks.
//! - [`time_zone`]: IANA zones read from the system's zoneinfo files (TZif) as Go's
//!   `time.LoadLocation` does; only the UTC offset at an instant.
//!
//! Called by nats-jetstream's ingest task (`stream/ingest/schedules.rs`), which owns the table
//! of schedules and fires them. Knows nothing of streams, messages or tokio.

mod cron;
pub mod time_zone;

pub use cron::{next_fire, parse_next, NextFire, ScheduleError};
