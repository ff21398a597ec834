//! Log lines formatted as nats-server writes them:
//! `[pid] 2026/11/29 19:00:00.000000 [INF] message`, to stderr or to `-l FILE`.
//!
//! A `tracing` subscriber, so the JetStream crate's `tracing::info!` lines come out the same
//! way. `-D` enables `[DBG]`, `-V` enables `[TRC]` (independently, as nats-server does).
//! [`reconfigure`] changes the levels, the time stamps and the file of the installed logger
//! (config reload); [`reopen`] reopens the file (SIGUSR1, for logrotate).

use parking_lot::Mutex;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use time::{OffsetDateTime, UtcOffset};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// The target of an error event that ends the process: written with nats-server's `[FTL]` tag.
pub const FATAL: &str = "fatal";

struct NatsFormat {
    pid: u32,
    offset: UtcOffset,
}

static DEBUG: AtomicBool = AtomicBool::new(false);
static TRACE: AtomicBool = AtomicBool::new(false);
static LOGTIME: AtomicBool = AtomicBool::new(true);
/// `logtime_utc`: time stamps in UTC rather than the local offset read at start.
static LOGTIME_UTC: AtomicBool = AtomicBool::new(false);

/// Where lines go: stderr, or a file opened for append (with its path, to reopen it).
static DESTINATION: Mutex<Option<(PathBuf, std::fs::File)>> = Mutex::new(None);

impl<S, N> FormatEvent<S, N> for NatsFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "[{}] ", self.pid)?;
        if LOGTIME.load(Ordering::Relaxed) {
            let offset = if LOGTIME_UTC.load(Ordering::Relaxed) {
                UtcOffset::UTC
            } else {
                self.offset
            };
            let now = OffsetDateTime::now_utc().to_offset(offset);
            write!(
                writer,
                "{:04}/{:02}/{:02} {:02}:{:02}:{:02}.{:06} ",
                now.year(),
                u8::from(now.month()),
                now.day(),
                now.hour(),
                now.minute(),
                now.second(),
                now.microsecond()
            )?;
        }
        let tag = match *event.metadata().level() {
            Level::ERROR if event.metadata().target() == FATAL => "[FTL]",
            Level::ERROR => "[ERR]",
            Level::WARN => "[WRN]",
            Level::INFO => "[INF]",
            Level::DEBUG => "[DBG]",
            Level::TRACE => "[TRC]",
        };
        write!(writer, "{tag} ")?;
        context
            .field_format()
            .format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The local UTC offset; must be read before any other thread starts (the `time` crate
/// refuses otherwise), so `main` calls this first.
pub fn local_offset() -> UtcOffset {
    UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC)
}

fn open(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// Install the global logger. A log file is opened for append (created if missing).
pub fn init(
    debug: bool,
    trace: bool,
    logtime: bool,
    logtime_utc: bool,
    log_file: Option<&Path>,
    offset: UtcOffset,
) -> std::io::Result<()> {
    reconfigure(debug, trace, logtime, logtime_utc, log_file)?;
    let format = NatsFormat {
        pid: std::process::id(),
        offset,
    };
    // openraft's debug events (every append, vote and heartbeat) come with trace only: with
    // them, `debug` would bury the server's own debug lines and slow a loaded cluster.
    let filter = tracing_subscriber::filter::filter_fn(|metadata| match *metadata.level() {
        Level::TRACE => TRACE.load(Ordering::Relaxed),
        Level::DEBUG if metadata.target().starts_with("openraft") => TRACE.load(Ordering::Relaxed),
        Level::DEBUG => DEBUG.load(Ordering::Relaxed),
        _ => true,
    });
    // No colour codes: nats-server's lines are plain text, and fields (`stream=...`) would
    // otherwise come out with ANSI escapes, also in a log file.
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .event_format(format)
        .with_writer(|| Destination)
        .with_filter(filter);
    // A second init (tests) is harmless.
    let _ = tracing_subscriber::registry().with(layer).try_init();
    Ok(())
}

/// Change the installed logger's levels, time stamps and file (a reload). The file is opened
/// before anything changes: on error, logging goes on as before.
pub fn reconfigure(
    debug: bool,
    trace: bool,
    logtime: bool,
    logtime_utc: bool,
    log_file: Option<&Path>,
) -> std::io::Result<()> {
    let file = match log_file {
        Some(path) => Some((path.to_path_buf(), open(path)?)),
        None => None,
    };
    *DESTINATION.lock() = file;
    LOGTIME.store(logtime, Ordering::Relaxed);
    LOGTIME_UTC.store(logtime_utc, Ordering::Relaxed);
    // Both swaps run (no `||` short-circuit): a change of `debug` must not skip `trace`.
    let debug_changed = DEBUG.swap(debug, Ordering::Relaxed) != debug;
    let trace_changed = TRACE.swap(trace, Ordering::Relaxed) != trace;
    if debug_changed || trace_changed {
        // The filter's answers are cached per call site; ask again.
        tracing::callsite::rebuild_interest_cache();
    }
    Ok(())
}

/// Reopen the log file at its path (after logrotate moved it); nothing without a file.
pub fn reopen() -> std::io::Result<()> {
    let mut destination = DESTINATION.lock();
    if let Some((path, file)) = destination.as_mut() {
        *file = open(path)?;
    }
    Ok(())
}

/// The writer of one line: the current file, else stderr.
struct Destination;

impl Write for Destination {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        match DESTINATION.lock().as_mut() {
            Some((_, file)) => file.write(buffer),
            None => std::io::stderr().write(buffer),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match DESTINATION.lock().as_mut() {
            Some((_, file)) => file.flush(),
            None => std::io::stderr().flush(),
        }
    }
}
