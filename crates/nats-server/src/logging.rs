//! Log lines formatted as nats-server writes them:
//! `[pid] 2026/11/29 19:00:00.000000 [INF] message`, to stderr or to `-l FILE`.
//!
//! A `tracing` subscriber, so the JetStream crate's `tracing::info!` lines come out the same
//! way. `-D` enables `[DBG]`, `-V` enables `[TRC]` (independently, as nats-server does).

use std::fmt;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
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
    logtime: bool,
    offset: UtcOffset,
}

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
        if self.logtime {
            let now = OffsetDateTime::now_utc().to_offset(self.offset);
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

/// Install the global logger. A log file is opened for append (created if missing).
pub fn init(
    debug: bool,
    trace: bool,
    logtime: bool,
    log_file: Option<&Path>,
    offset: UtcOffset,
) -> std::io::Result<()> {
    let format = NatsFormat {
        pid: std::process::id(),
        logtime,
        offset,
    };
    let filter = tracing_subscriber::filter::filter_fn(move |metadata| match *metadata.level() {
        Level::TRACE => trace,
        Level::DEBUG => debug,
        _ => true,
    });
    let writer: Box<dyn Fn() -> Box<dyn Write> + Send + Sync> = match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            let file = std::sync::Arc::new(Mutex::new(file));
            Box::new(move || Box::new(SharedFile(file.clone())) as Box<dyn Write>)
        }
        None => Box::new(|| Box::new(std::io::stderr()) as Box<dyn Write>),
    };
    // No colour codes: nats-server's lines are plain text, and fields (`stream=...`) would
    // otherwise come out with ANSI escapes, also in a log file.
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .event_format(format)
        .with_writer(writer)
        .with_filter(filter);
    // A second init (tests) is harmless.
    let _ = tracing_subscriber::registry().with(layer).try_init();
    Ok(())
}

struct SharedFile(std::sync::Arc<Mutex<std::fs::File>>);

impl Write for SharedFile {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        file.write(buffer)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        file.flush()
    }
}
