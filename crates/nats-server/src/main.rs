//! `nats-server`: parse flags (nats-server spellings), load the config file, set up logging,
//! run the server until SIGINT/SIGTERM.

use nats_server::cli::{Flags, USAGE};
use nats_server::config::{apply_config_file, Options};
use std::process::ExitCode;

// The allocator is glibc's, with its defaults. Measured over two rounds of the --full bench
// scenarios on one server (peak RSS): glibc defaults 57 -> 63 MiB; glibc with raised
// mmap/trim thresholds (kept freed memory resident) 61 -> 101 MiB; mimalloc 0.1.52 71 -> 77 MiB.

/// `RNATS_WORKER_THREADS=1` runs everything on one thread (no cross-thread wake-ups; leaves
/// the other cores to clients); any other number sets the worker count; default: one per core.
fn runtime_builder() -> tokio::runtime::Builder {
    match std::env::var("RNATS_WORKER_THREADS")
        .ok()
        .and_then(|value| value.parse::<usize>().ok())
    {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(workers) if workers > 1 => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
}

/// Raise the open-file soft limit to the hard limit, as Go's runtime does for nats-server at
/// start (Go 1.19 and later): a shell's usual soft limit of 1,024 would otherwise cap the
/// server at about a thousand connections, or a few hundred file streams (each holds open its
/// directory lock, its `seq.hwm` and its active block), where nats-server on the same machine
/// gets the hard limit (often 524,288). Nothing to do, or nothing allowed: it stays as it is.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The descriptor table is grown at start to this many slots at most (nats-server's default
/// `max_connections` is 65,536); 512 KiB of kernel memory at this size.
const PRESIZED_DESCRIPTORS: libc::rlim_t = 65_536;

/// Grow the kernel's descriptor table now, while the process has one thread, to the open-file
/// limit (at most [`PRESIZED_DESCRIPTORS`]). The kernel doubles the table as descriptors are
/// taken, and in a process with several threads each doubling waits for an RCU grace period
/// (`expand_files` -> `synchronize_rcu`): during a connection storm the accept thread sat in it
/// for milliseconds at each of the doublings from 64 to 16,384, the accept queue overflowed
/// and each dropped handshake cost its client a one-second retransmit (bench/README.md,
/// connection storms). A table grown once stays grown. Nothing allowed: it grows as before.
fn presize_descriptor_table() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit on a struct we own; open/fcntl/close on descriptors this function
    // opens and closes itself.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        let slots = limit.rlim_cur.min(PRESIZED_DESCRIPTORS);
        let Ok(highest) = libc::c_int::try_from(slots.saturating_sub(1)) else {
            return;
        };
        if highest < 64 {
            return;
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if null < 0 {
            return;
        }
        let high = libc::fcntl(null, libc::F_DUPFD_CLOEXEC, highest);
        if high >= 0 {
            libc::close(high);
        }
        libc::close(null);
    }
}

fn main() -> ExitCode {
    // Must happen before any thread exists (see logging::local_offset).
    let offset = nats_server::logging::local_offset();
    // A write past a file-size limit (`ulimit -f`) fails with EFBIG, which the stores and the
    // Raft logs handle, instead of SIGXFSZ killing the process (Go ignores it too).
    // SAFETY: setting a signal's disposition to "ignore", before any thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    raise_open_file_limit();
    presize_descriptor_table();
    let flags = match Flags::parse(std::env::args().skip(1)) {
        Ok(flags) => flags,
        Err(error) => {
            eprintln!("{error}");
            eprintln!("{USAGE}");
            // nats-server exits 0 here (Go flag.ContinueOnError then usage).
            return ExitCode::SUCCESS;
        }
    };
    if flags.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if flags.version {
        println!("nats-server: v{}", nats_server::VERSION);
        return ExitCode::SUCCESS;
    }
    // As nats-server: the signal is sent (or refused) before any config is read, and no
    // server starts.
    if let Some(signal) = &flags.signal {
        return match nats_server::signal_command::process(signal) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("nats-server: {error}");
                ExitCode::from(1)
            }
        };
    }
    let mut options = Options::default();
    if let Some(path) = &flags.config {
        if let Err(error) = apply_config_file(&mut options, path) {
            // nats-server ends an error found while applying the options (one with a
            // position) with a blank line, as its list of config errors.
            // Its warnings (e.g. an integer duration) come first in that list.
            let (end, warnings) = if error.line > 0 && !error.syntax {
                let warnings: String = options
                    .warnings
                    .iter()
                    .map(|warning| format!("{warning}\n"))
                    .collect();
                ("\n", warnings)
            } else {
                ("", String::new())
            };
            eprintln!("nats-server: {warnings}{error}{end}");
            return ExitCode::from(1);
        }
    }
    if let Err(error) = flags.apply(&mut options) {
        eprintln!("nats-server: {error}");
        return ExitCode::from(1);
    }
    if let Err(error) = options.validate() {
        eprintln!("nats-server: {error}");
        return ExitCode::from(1);
    }
    if flags.test_config {
        // nats-server's -t: any warning fails the check (printed as its config error, one per
        // line, then a blank line); the verdict goes to stderr.
        let Some(path) = &flags.config else {
            eprintln!(
                "nats-server: must specify [-c, --config] option to check configuration file syntax"
            );
            return ExitCode::from(1);
        };
        if !options.warnings.is_empty() {
            let text: String = options
                .warnings
                .iter()
                .map(|warning| format!("{warning}\n"))
                .collect();
            eprintln!("nats-server: {text}");
            return ExitCode::from(1);
        }
        eprintln!(
            "nats-server: configuration file {} is valid",
            path.display()
        );
        return ExitCode::SUCCESS;
    }
    if let Err(error) = nats_server::logging::init(
        options.debug,
        options.trace,
        options.logtime,
        options.logtime_utc,
        options.log_file.as_deref(),
        offset,
    ) {
        // nats-server's words, from Go's standard logger (date and time, no tag):
        // `2026/12/01 21:53:48 error opening file: open <path>: no such file or directory`.
        let now = time::OffsetDateTime::now_utc().to_offset(offset);
        eprintln!(
            "{:04}/{:02}/{:02} {:02}:{:02}:{:02} error opening file: open {}: {}",
            now.year(),
            u8::from(now.month()),
            now.day(),
            now.hour(),
            now.minute(),
            now.second(),
            options
                .log_file
                .as_deref()
                .map(|path| path.display().to_string())
                .unwrap_or_default(),
            go_compat::errno_text(&error)
        );
        return ExitCode::from(1);
    }
    let mut builder = runtime_builder();
    nats_server::idle_spin::install(&mut builder);
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("nats-server: {error}");
            return ExitCode::from(1);
        }
    };
    nats_server::idle_spin::watch(&runtime);
    match runtime.block_on(nats_server::run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Logged as nats-server's `[FTL]` line (`logging.rs`), and only there, as
            // nats-server (with a log file, stderr stays empty).
            tracing::error!(target: nats_server::logging::FATAL, "{error}");
            ExitCode::from(1)
        }
    }
}
