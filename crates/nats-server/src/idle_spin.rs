//! A runtime worker that runs out of work watches the runtime's epoll for a short while before
//! it sleeps in `epoll_wait` (on by default, `RNATS_IDLE_SPIN_US`), as Go's scheduler polls the
//! network (`netpoll(0)`) from its spinning threads before they sleep.
//!
//! Why: on a machine whose idle CPUs halt (a VM without guest halt polling: an idle vCPU goes
//! back to the host), waking a thread asleep in `epoll_wait` costs the waker an IPI and the
//! sleeper a trip through the host, about 30 us on the 2-vCPU machines we measure on. A round
//! trip (request/reply, a synchronous publish and its PubAck) wakes the server's worker once
//! per message, and whenever the client's threads sit on the other vCPU each of those wake-ups
//! crosses: on an idle machine that was two crossings per round trip (raw PING/PONG 73 us, of
//! which the server's work is a few). A worker still watching finds the next message with no
//! wake-up at all, and the client's wake-ups stay on the CPU that is awake (bench/README.md,
//! "Watching before sleeping, on by default": idle-machine round trips 2.6-3.2x nats-server's
//! instead of 1.1-1.3x).
//!
//! How: `on_thread_park` runs [`before_park`], which polls the epoll descriptor itself
//! (`poll(2)` on an epoll fd reports whether it has events without taking them) until it has
//! events, a task is waiting in the runtime's global queue (a wake-up from a thread outside
//! the runtime, held back while a worker is about to park), or [`spin`] has passed; then the
//! worker parks as before and its `epoll_wait` returns at once with what arrived. It only
//! watches when its previous idle period was at most the spin (`on_thread_unpark` measures
//! it): a worker whose idle periods are long (a quiet server, or traffic slower than one
//! message per spin) sleeps at once, and watching costs nothing there. Between polls it
//! yields the CPU (`sched_yield`) to any thread waiting for it, such as the client that will
//! send the next message.
//!
//! A watch that loses its CPU for long (two polls more than [`CONTENDED_GAP`] apart: another
//! thread ran a full slice on it) ends, and the worker does not watch again for [`BACK_OFF`]:
//! watching is for CPUs nobody else needs. The gap is long enough for the client of a round
//! trip to run between two polls on the same CPU (it sends the next message then, which is
//! the watch's purpose), and short against a busy machine's time slices. A gap of 20 us
//! (sessions 28-31) ended almost every watch on an idle machine that way, which is why the
//! watch measured no better than sleeping then.
//!
//! `RNATS_IDLE_SPIN_US` sets the spin (default [`DEFAULT_SPIN`]; 0 turns watching off).
//! `RNATS_IDLE_SPIN_GAP_US` sets the gap that ends a watch as contended (default
//! [`CONTENDED_GAP`]) and `RNATS_IDLE_SPIN_BACKOFF_MS` the pause after it (default [`BACK_OFF`]).

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a worker watches before it sleeps, unless `RNATS_IDLE_SPIN_US` says otherwise:
/// longer than an idle machine's round trip through a client (20-60 us), far shorter than
/// anything a person would see as CPU use on a quiet server (a quiet server never watches).
pub const DEFAULT_SPIN: Duration = Duration::from_micros(100);
/// A gap this long between two polls means the watching thread lost its CPU to another for
/// more than a round trip's turn (it was preempted, or `sched_yield` ran a thread that kept
/// the CPU): the CPU is wanted, and watching stops.
const CONTENDED_GAP: Duration = Duration::from_micros(200);
/// After that, no watching on this worker for this long.
const BACK_OFF: Duration = Duration::from_millis(50);
static GAP: OnceLock<Duration> = OnceLock::new();
static PAUSE: OnceLock<Duration> = OnceLock::new();

/// `RNATS_IDLE_SPIN_GAP_US` in microseconds, else [`CONTENDED_GAP`].
fn contended_gap() -> Duration {
    *GAP.get_or_init(|| {
        env_duration(
            "RNATS_IDLE_SPIN_GAP_US",
            Duration::from_micros,
            CONTENDED_GAP,
        )
    })
}

/// `RNATS_IDLE_SPIN_BACKOFF_MS` in milliseconds, else [`BACK_OFF`].
fn back_off() -> Duration {
    *PAUSE.get_or_init(|| {
        env_duration(
            "RNATS_IDLE_SPIN_BACKOFF_MS",
            Duration::from_millis,
            BACK_OFF,
        )
    })
}

fn env_duration(name: &str, unit: fn(u64) -> Duration, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map_or(default, unit)
}

/// The runtime's epoll descriptor and its handle (for the global queue's depth), once known.
static WATCHED: OnceLock<(RawFd, tokio::runtime::Handle)> = OnceLock::new();
static SPIN: OnceLock<Duration> = OnceLock::new();

thread_local! {
    /// When this worker last began to go idle.
    static IDLE_SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Whether its last idle period was short enough for watching to have caught its end.
    static WATCH_NEXT: Cell<bool> = const { Cell::new(true) };
    /// No watching before this (the CPU was wanted by another thread during the last watch).
    static BACKED_OFF_UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The spin: `RNATS_IDLE_SPIN_US` in microseconds, else [`DEFAULT_SPIN`].
pub fn spin() -> Duration {
    *SPIN.get_or_init(|| env_duration("RNATS_IDLE_SPIN_US", Duration::from_micros, DEFAULT_SPIN))
}

/// Add the park/unpark hooks to a runtime about to be built; [`watch`] then names its epoll.
pub fn install(builder: &mut tokio::runtime::Builder) {
    if spin().is_zero() {
        return;
    }
    builder
        .on_thread_park(before_park)
        .on_thread_unpark(after_unpark);
}

/// Start watching `runtime`'s epoll, found as the process' only epoll (called right after the
/// runtime is built, before anything else could open one). With none or several, workers park
/// at once, as without this module.
pub fn watch(runtime: &tokio::runtime::Runtime) {
    if spin().is_zero() {
        tracing::debug!(
            "idle spin off (RNATS_IDLE_SPIN_US=0): workers sleep as soon as they are idle"
        );
        return;
    }
    let Some(fd) = only_epoll() else {
        tracing::debug!("idle spin off: the runtime's epoll descriptor was not found");
        return;
    };
    tracing::debug!(
        "idle spin: watching the runtime's epoll (fd {fd}) for {:?} before a worker sleeps",
        spin()
    );
    let _ = WATCHED.set((fd, runtime.handle().clone()));
}

/// A descriptor of the one epoll instance among this process' descriptors. mio keeps two
/// descriptors of its epoll (a `dup` for its registry); they are told from another epoll by what
/// they watch (the `tfd:` lines of `/proc/self/fdinfo`).
fn only_epoll() -> Option<RawFd> {
    let mut found: Option<(RawFd, Vec<String>)> = None;
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if target.as_os_str() != "anon_inode:[eventpoll]" {
            continue;
        }
        let name = entry.file_name();
        let fd = name.to_str()?.parse::<RawFd>().ok()?;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
        let watched: Vec<String> = info
            .lines()
            .filter(|line| line.starts_with("tfd:"))
            .map(str::to_owned)
            .collect();
        if let Some((lowest, other)) = &found {
            if *other != watched {
                return None;
            }
            if *lowest < fd {
                continue;
            }
        }
        found = Some((fd, watched));
    }
    found.map(|(fd, _)| fd)
}

fn before_park() {
    let now = Instant::now();
    IDLE_SINCE.with(|since| since.set(Some(now)));
    if !WATCH_NEXT.with(Cell::get) {
        return;
    }
    let Some((fd, handle)) = WATCHED.get() else {
        return;
    };
    if BACKED_OFF_UNTIL
        .with(Cell::get)
        .is_some_and(|until| now < until)
    {
        return;
    }
    let metrics = handle.metrics();
    let end = watch_until(*fd, now + spin(), contended_gap(), || {
        metrics.global_queue_depth() > 0
    });
    if end == WatchEnd::Contended {
        BACKED_OFF_UNTIL.with(|until| until.set(Some(Instant::now() + back_off())));
    }
}

fn after_unpark() {
    let idle = IDLE_SINCE
        .with(Cell::take)
        .map_or(Duration::MAX, |since| since.elapsed());
    WATCH_NEXT.with(|next| next.set(idle <= spin()));
}

/// How a watch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEnd {
    /// The epoll has events (or failed), or `other_work` said so.
    Ready,
    /// Nothing came before the deadline.
    Deadline,
    /// Two polls were more than the allowed gap apart: another thread had the CPU.
    Contended,
}

/// Poll `fd` until it has events, `other_work` says so, `deadline` passes, or two polls are
/// more than `gap` apart.
pub fn watch_until(
    fd: RawFd,
    deadline: Instant,
    gap: Duration,
    other_work: impl Fn() -> bool,
) -> WatchEnd {
    let mut last = Instant::now();
    loop {
        let mut entry = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout.
        let ready = unsafe { libc::poll(&mut entry, 1, 0) };
        // Events, or an error (the fd went away): stop watching either way.
        if ready != 0 || other_work() {
            return WatchEnd::Ready;
        }
        let now = Instant::now();
        if now.duration_since(last) > gap {
            return WatchEnd::Contended;
        }
        if now >= deadline {
            return WatchEnd::Deadline;
        }
        last = now;
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// An epoll descriptor watching a fresh eventfd: (epoll, eventfd).
    fn epoll_with_eventfd() -> (OwnedFd, OwnedFd) {
        // SAFETY: plain syscalls; each descriptor is checked and owned right away.
        unsafe {
            let epoll = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            assert!(epoll >= 0);
            let epoll = OwnedFd::from_raw_fd(epoll);
            let event = libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK);
            assert!(event >= 0);
            let event = OwnedFd::from_raw_fd(event);
            let mut interest = libc::epoll_event {
                events: (libc::EPOLLIN | libc::EPOLLET) as u32,
                u64: 1,
            };
            assert_eq!(
                libc::epoll_ctl(
                    epoll.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    event.as_raw_fd(),
                    &mut interest
                ),
                0
            );
            (epoll, event)
        }
    }

    #[test]
    fn watching_stops_at_the_deadline_when_nothing_comes() {
        let (epoll, _event) = epoll_with_eventfd();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(20);
        // A gap allowance of seconds: a loaded machine may preempt the test thread.
        let end = watch_until(epoll.as_raw_fd(), deadline, Duration::from_secs(5), || {
            false
        });
        assert_eq!(end, WatchEnd::Deadline);
        assert!(started.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn watching_stops_when_an_event_arrives_and_leaves_it_for_epoll_wait() {
        let (epoll, event) = epoll_with_eventfd();
        let raw_event = event.as_raw_fd();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            let one = 1u64.to_ne_bytes();
            // SAFETY: an 8-byte write to an eventfd the test owns.
            let written = unsafe { libc::write(raw_event, one.as_ptr().cast(), one.len()) };
            assert_eq!(written, 8);
        });
        // Bounded: a watch that missed the event ends at the deadline and fails below.
        let started = Instant::now();
        let end = watch_until(
            epoll.as_raw_fd(),
            started + Duration::from_secs(30),
            Duration::from_secs(30),
            || false,
        );
        writer.join().expect("writer thread");
        assert_eq!(end, WatchEnd::Ready, "the event was not seen");
        assert!(started.elapsed() < Duration::from_secs(30));
        // poll(2) on the epoll descriptor took nothing: epoll_wait still gets the event.
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
        // SAFETY: a buffer of 4 events, zero timeout.
        let count = unsafe { libc::epoll_wait(epoll.as_raw_fd(), events.as_mut_ptr(), 4, 0) };
        assert_eq!(count, 1);
        assert_eq!({ events[0].u64 }, 1);
    }

    #[test]
    fn other_work_ends_the_watch() {
        let (epoll, _event) = epoll_with_eventfd();
        let started = Instant::now();
        let end = watch_until(
            epoll.as_raw_fd(),
            started + Duration::from_secs(30),
            Duration::from_secs(30),
            || true,
        );
        assert_eq!(end, WatchEnd::Ready);
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn losing_the_cpu_ends_the_watch() {
        let (epoll, _event) = epoll_with_eventfd();
        let started = Instant::now();
        let polls = Cell::new(0u32);
        // The second poll comes 5 ms after the first, as if another thread had run between.
        let end = watch_until(
            epoll.as_raw_fd(),
            started + Duration::from_secs(30),
            Duration::from_millis(1),
            || {
                polls.set(polls.get() + 1);
                if polls.get() == 1 {
                    std::thread::sleep(Duration::from_millis(5));
                }
                false
            },
        );
        assert_eq!(end, WatchEnd::Contended);
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
