//! A timeline of the replication path for measurement, off by default: with the environment
//! variable `RNATS_RAFT_TIMELINE` set, each step (a proposal, its log append, the log's fsync,
//! an append sent to a follower and its answer, a follower's receipt and answer, the commit)
//! prints one line to standard error: `RT <microseconds since the Unix epoch> <group> <step>`.
//! Wall-clock times, so that the lines of the three servers on one machine interleave.

use std::sync::OnceLock;

/// Whether the timeline is on (read once).
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("RNATS_RAFT_TIMELINE").is_some())
}

/// Prints one step (call only when [`enabled`]).
pub fn mark(group: &str, step: std::fmt::Arguments<'_>) {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_micros());
    eprintln!("RT {micros} {group} {step}");
}

/// Marks a step when the timeline is on; the arguments are not evaluated otherwise.
macro_rules! step {
    ($group:expr, $($arg:tt)*) => {
        if $crate::timeline::enabled() {
            $crate::timeline::mark(&$group, format_args!($($arg)*));
        }
    };
}
pub(crate) use step;
