//! The link cutter: one small TCP proxy per directed route link, so a test can blackhole, reset
//! or delay the traffic between two cluster nodes while both keep running.
//!
//! A [`Link`] is the unordered pair of nodes {a, b}. It has two proxies: one that node a dials to
//! reach node b's cluster port, and one that node b dials to reach node a's. Which of the two ends
//! up carrying the route depends on duplicate-route resolution, so the modes are kept per
//! *direction of traffic* (a→b, b→a) and both proxies obey them: a byte sent by a towards b is
//! governed by the a→b mode whichever proxy carries it.
//!
//! Modes: [`LinkMode::Pass`] forwards; [`LinkMode::Blackhole`] holds bytes (the proxy stops
//! reading, the sender's socket buffers fill, nothing arrives; as a network that drops packets,
//! nothing is lost if the link heals before either side gives up); [`LinkMode::Reset`] tears
//! down every connection of the link at once and every new one as it is accepted;
//! [`LinkMode::Delay`] forwards each chunk after the given delay, in order.
//!
//! Plain std threads: an accept thread per proxy, and per connection a reader and a writer
//! thread per direction. Dropping the [`LinkProxy`] closes its listener and every connection.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a link does with the bytes of one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkMode {
    /// Forward as they come.
    Pass,
    /// Hold everything: nothing arrives, connections stay open (until a side gives up).
    Blackhole,
    /// Close every connection of the link, now and as new ones arrive.
    Reset,
    /// Forward each chunk after this delay.
    Delay(Duration),
}

/// Which way bytes flow on a link: from its first node to its second, or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

#[derive(Debug)]
struct Modes {
    forward: LinkMode,
    backward: LinkMode,
}

impl Modes {
    fn get(&self, direction: Direction) -> LinkMode {
        match direction {
            Direction::Forward => self.forward,
            Direction::Backward => self.backward,
        }
    }

    fn any_reset(&self) -> bool {
        self.forward == LinkMode::Reset || self.backward == LinkMode::Reset
    }
}

/// The shared state of the link between nodes `a` and `b` (`a < b`).
pub struct Link {
    pub a: usize,
    pub b: usize,
    modes: Mutex<Modes>,
    changed: Condvar,
    stopped: AtomicBool,
    /// Both sockets of every live proxied connection, to tear them down on reset or drop.
    live: Mutex<HashMap<u64, [TcpStream; 2]>>,
    next_id: AtomicU64,
    /// Connections accepted by either proxy of this link (diagnostics and tests).
    accepted: AtomicUsize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Link {
    pub(crate) fn new_pair(a: usize, b: usize) -> Arc<Link> {
        Arc::new(Link {
            a,
            b,
            modes: Mutex::new(Modes {
                forward: LinkMode::Pass,
                backward: LinkMode::Pass,
            }),
            changed: Condvar::new(),
            stopped: AtomicBool::new(false),
            live: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            accepted: AtomicUsize::new(0),
        })
    }

    /// Set the mode of the traffic that node `from` sends to node `to`.
    pub fn set_direction(&self, from: usize, to: usize, mode: LinkMode) {
        let direction = if (from, to) == (self.a, self.b) {
            Direction::Forward
        } else {
            assert_eq!((from, to), (self.b, self.a), "not a direction of this link");
            Direction::Backward
        };
        let reset = {
            let mut modes = lock(&self.modes);
            match direction {
                Direction::Forward => modes.forward = mode,
                Direction::Backward => modes.backward = mode,
            }
            modes.any_reset()
        };
        self.changed.notify_all();
        if reset {
            self.reset_all();
        }
    }

    /// Set both directions.
    pub fn set(&self, mode: LinkMode) {
        self.set_direction(self.a, self.b, mode);
        self.set_direction(self.b, self.a, mode);
    }

    /// The mode of the traffic from `from` to `to`.
    pub fn mode(&self, from: usize, to: usize) -> LinkMode {
        let modes = lock(&self.modes);
        if (from, to) == (self.a, self.b) {
            modes.forward
        } else {
            modes.backward
        }
    }

    /// How many connections the link's proxies accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// How many proxied connections are open now.
    pub fn open_connections(&self) -> usize {
        lock(&self.live).len()
    }

    fn reset_all(&self) {
        let live: Vec<[TcpStream; 2]> = lock(&self.live).drain().map(|(_, pair)| pair).collect();
        for pair in &live {
            for stream in pair {
                reset(stream);
            }
        }
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.changed.notify_all();
        self.reset_all();
    }

    /// Wait while `direction` is blackholed. `Some(delay)` when the bytes may go (after that
    /// delay); `None` when the connection must be torn down (reset, or the proxy stopped).
    fn wait_until_open(&self, direction: Direction) -> Option<Duration> {
        let mut modes = lock(&self.modes);
        loop {
            if self.stopped.load(Ordering::SeqCst) || modes.any_reset() {
                return None;
            }
            match modes.get(direction) {
                LinkMode::Pass => return Some(Duration::ZERO),
                LinkMode::Delay(delay) => return Some(delay),
                LinkMode::Reset => return None,
                LinkMode::Blackhole => {
                    modes = self
                        .changed
                        .wait_timeout(modes, Duration::from_millis(200))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

/// Abort a connection: linger 0 (the close sends RST), and shut it down so blocked reads wake.
fn reset(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own, with a correctly sized `linger` value.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// One listening proxy: accepts connections from node `from` and forwards them to node `to`'s
/// cluster port.
pub struct LinkProxy {
    pub from: usize,
    pub to: usize,
    pub port: u16,
    link: Arc<Link>,
    stopped: Arc<AtomicBool>,
}

impl LinkProxy {
    /// Listen on `port` (127.0.0.1) and forward to `127.0.0.1:upstream_port`.
    pub fn start(
        link: Arc<Link>,
        from: usize,
        to: usize,
        port: u16,
        upstream_port: u16,
    ) -> std::io::Result<LinkProxy> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let stopped = Arc::new(AtomicBool::new(false));
        let direction = if from == link.a {
            Direction::Forward
        } else {
            Direction::Backward
        };
        let accept_link = link.clone();
        let accept_stopped = stopped.clone();
        std::thread::Builder::new()
            .name(format!("link-proxy-{from}-{to}"))
            .spawn(move || {
                accept_loop(
                    listener,
                    accept_link,
                    accept_stopped,
                    direction,
                    upstream_port,
                )
            })?;
        Ok(LinkProxy {
            from,
            to,
            port,
            link,
            stopped,
        })
    }

    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        self.link.stop();
    }
}

fn accept_loop(
    listener: TcpListener,
    link: Arc<Link>,
    stopped: Arc<AtomicBool>,
    upstream_direction: Direction,
    upstream_port: u16,
) {
    for incoming in listener.incoming() {
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(downstream) = incoming else { continue };
        link.accepted.fetch_add(1, Ordering::SeqCst);
        if lock(&link.modes).any_reset() {
            reset(&downstream);
            continue;
        }
        // The far node is down: close, as a refused connection would.
        let Ok(upstream) = TcpStream::connect(("127.0.0.1", upstream_port)) else {
            reset(&downstream);
            continue;
        };
        let _ = downstream.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        if let Err(e) = splice(&link, downstream, upstream, upstream_direction) {
            eprintln!("link proxy {}-{}: {e}", link.a, link.b);
        }
    }
}

/// Register the connection and start its four pump threads.
fn splice(
    link: &Arc<Link>,
    downstream: TcpStream,
    upstream: TcpStream,
    upstream_direction: Direction,
) -> std::io::Result<()> {
    let id = link.next_id.fetch_add(1, Ordering::SeqCst);
    lock(&link.live).insert(id, [downstream.try_clone()?, upstream.try_clone()?]);
    let back_direction = match upstream_direction {
        Direction::Forward => Direction::Backward,
        Direction::Backward => Direction::Forward,
    };
    let remaining = Arc::new(AtomicUsize::new(2));
    pump(
        link.clone(),
        id,
        downstream.try_clone()?,
        upstream.try_clone()?,
        upstream_direction,
        remaining.clone(),
    )?;
    pump(
        link.clone(),
        id,
        upstream,
        downstream,
        back_direction,
        remaining,
    )
}

/// Copy `source` to `sink` under the link's mode for `direction`: a reader thread and a writer
/// thread joined by a queue of (due time, chunk).
fn pump(
    link: Arc<Link>,
    id: u64,
    mut source: TcpStream,
    mut sink: TcpStream,
    direction: Direction,
    remaining: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let (sender, receiver) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer_link = link.clone();
    let writer_source = source.try_clone()?;
    std::thread::Builder::new()
        .name("link-proxy-write".into())
        .spawn(move || {
            while let Ok((due, chunk)) = receiver.recv() {
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                if sink.write_all(&chunk).is_err() {
                    reset(&writer_source);
                    reset(&sink);
                    break;
                }
            }
            // The source closed (or the link was torn down): pass the close on.
            let _ = sink.shutdown(Shutdown::Write);
            if remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
                lock(&writer_link.live).remove(&id);
            }
        })?;
    std::thread::Builder::new()
        .name("link-proxy-read".into())
        .spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let n = match source.read(&mut buffer) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let Some(delay) = link.wait_until_open(direction) else {
                    reset(&source);
                    return;
                };
                if sender
                    .send((Instant::now() + delay, buffer[..n].to_vec()))
                    .is_err()
                {
                    return;
                }
            }
        })?;
    Ok(())
}

/// Where every node advertises its route address in a proxied cluster: gossip ("implicit
/// routes") dials the advertised address, and this refuses every such connection (accept, then
/// close at once), so route traffic only ever flows through the explicit routes, which are the
/// link proxies. Counts the attempts.
pub struct GossipSink {
    pub port: u16,
    attempts: Arc<AtomicUsize>,
    stopped: Arc<AtomicBool>,
}

impl GossipSink {
    pub fn start(port: u16) -> std::io::Result<GossipSink> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let attempts = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicBool::new(false));
        let (thread_attempts, thread_stopped) = (attempts.clone(), stopped.clone());
        std::thread::Builder::new()
            .name("gossip-sink".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if thread_stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Ok(stream) = stream {
                        thread_attempts.fetch_add(1, Ordering::SeqCst);
                        reset(&stream);
                    }
                }
            })?;
        Ok(GossipSink {
            port,
            attempts,
            stopped,
        })
    }

    /// Connections that tried to bypass the proxies.
    pub fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }
}

impl Drop for GossipSink {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}
