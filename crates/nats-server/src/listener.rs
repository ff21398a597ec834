//! Binding the client and monitoring listeners as nats-server does. The wildcard host
//! (`0.0.0.0`, the default, or `::`) listens on every interface for IPv4 and IPv6 alike (Go's
//! `net.Listen` binds `[::]` dual-stack), so `nats://[::1]:4222` reaches a default server; a host
//! may be written with brackets (`[::1]`). A failure is worded as nats-server's fatal line
//! (`Error listening on port: 0.0.0.0:4222, "listen tcp 0.0.0.0:4222: bind: address already
//! in use"`).
//!
//! The accept queue is as deep as the kernel allows (`net.core.somaxconn`, as Go's listeners):
//! tokio's default of 1024 let a storm of a few thousand clients connecting at once (every
//! client after a server restart) overflow it, and each dropped SYN cost its client a one-second
//! retransmit.
//!
//! The client listener is accepted on a thread of its own ([`accept_on_thread`]): a storm of
//! clients connecting at once keeps the runtime's workers busy with the connections already
//! accepted, and an accept task queued behind them let the accept queue overflow (each
//! overflowed handshake costs its client a one-second retransmit).
//!
//! Called by `server::run`; knows nothing about connections.

use crate::ServerError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A peer as Go's `net` shows it: an IPv4 client of the dual-stack wildcard listener arrives
/// as `::ffff:a.b.c.d`, which Go prints (and nats-server reports in `/connz` and its log lines)
/// as `a.b.c.d`.
pub(crate) fn peer_as_go(peer: SocketAddr) -> SocketAddr {
    SocketAddr::new(peer.ip().to_canonical(), peer.port())
}

/// Asked of `listen(2)`; the kernel cuts it to `net.core.somaxconn` (4096 by default since
/// Linux 5.4), which is the depth Go's `net.Listen` asks for.
const ACCEPT_BACKLOG: u32 = 65_535;

/// Bind and listen on one address with SO_REUSEADDR (as tokio and Go do) and the deep backlog.
fn listen_on(address: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match address {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(ACCEPT_BACKLOG)
}

/// A host name: the first of its addresses that binds.
async fn listen_on_name(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let mut last_error = None;
    for address in tokio::net::lookup_host((host, port)).await? {
        match listen_on(address) {
            Ok(listener) => return Ok(listener),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "no address for the host",
        )
    }))
}

/// A listener on `host:port` and the address to report (the configured host with the bound
/// port, so a wildcard listener still reports `0.0.0.0` as nats-server does). `port` is the
/// configured number: negative means any free port; past 65535 it is refused in Go's words
/// rather than wrapped.
pub(crate) async fn bind(
    host: &str,
    configured_port: i64,
) -> Result<(TcpListener, SocketAddr), ServerError> {
    let host = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    let Ok(port) = u16::try_from(configured_port.max(0)) else {
        let shown_host = if host.is_empty() { "0.0.0.0" } else { host };
        return Err(ServerError::Listen {
            address: format!("{shown_host}:{configured_port}"),
            reason: format!("listen tcp: address {configured_port}: invalid port"),
        });
    };
    let configured: Option<IpAddr> = if host.is_empty() {
        Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        host.parse().ok()
    };
    let result = match configured {
        Some(ip) if ip.is_unspecified() => {
            // Dual-stack first (Linux's default for an IPv6 wildcard socket); a host without
            // IPv6 falls back to the IPv4 wildcard.
            match listen_on(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port)) {
                Ok(listener) => Ok(listener),
                Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => Err(error),
                Err(_) => listen_on(SocketAddr::new(ip, port)),
            }
        }
        Some(ip) => listen_on(SocketAddr::new(ip, port)),
        None => listen_on_name(host, port).await,
    };
    let shown = match configured {
        Some(ip) => SocketAddr::new(ip, port).to_string(),
        None => format!("{host}:{port}"),
    };
    let listener = result.map_err(|source| ServerError::Listen {
        address: shown.clone(),
        reason: format!(
            "listen tcp {shown}: bind: {}",
            go_compat::errno_text(&source)
        ),
    })?;
    let bound = listener.local_addr().map_err(ServerError::Io)?;
    let reported = match configured {
        Some(ip) => SocketAddr::new(ip, bound.port()),
        None => bound,
    };
    Ok((listener, reported))
}

/// A listener accepted on its own thread ([`accept_on_thread`]); [`AcceptThread::stop`] closes
/// it for new connections and ends the thread.
pub(crate) struct AcceptThread {
    listener: Arc<std::net::TcpListener>,
    stopped: Arc<AtomicBool>,
}

impl AcceptThread {
    /// Stop accepting: the listener stops listening at once (a connect is refused as by a
    /// closed port) and the thread's blocked `accept` returns, after which the thread ends.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        // SAFETY: shutdown(2) on the listener's descriptor, which `self.listener` keeps open.
        // On a listening socket Linux stops listening and wakes a blocked accept(2).
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
    }
}

impl Drop for AcceptThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Accept `listener`'s connections on a thread of its own, blocked in `accept(2)`, and hand
/// them to a task on the current runtime, which registers each stream and calls `on_accept`.
/// Unlike an accept task, the thread never waits behind the connections it started: the
/// kernel's accept queue (where an overflow costs its client a one-second retransmit) is
/// drained as fast as clients arrive, whatever the workers are doing, and a burst waits in the
/// channel instead. The thread does nothing but accept: a connection's allocations are made on
/// the workers (made on the thread, they grew a glibc arena of its own page by page, `mprotect`
/// under the address space's lock, against the workers' page faults). Must be called within
/// the runtime.
pub(crate) fn accept_on_thread<F>(
    listener: TcpListener,
    mut on_accept: F,
) -> std::io::Result<AcceptThread>
where
    F: FnMut(TcpStream, SocketAddr) + Send + 'static,
{
    let listener = listener.into_std()?;
    listener.set_nonblocking(false)?;
    let listener = Arc::new(listener);
    let stopped = Arc::new(AtomicBool::new(false));
    let (accepted_tx, mut accepted_rx) =
        tokio::sync::mpsc::unbounded_channel::<(std::net::TcpStream, SocketAddr)>();
    tokio::spawn(async move {
        while let Some((stream, peer)) = accepted_rx.recv().await {
            match TcpStream::from_std(stream) {
                Ok(stream) => on_accept(stream, peer),
                Err(error) => tracing::error!("Error accepting client connection: {error}"),
            }
        }
    });
    let thread_listener = listener.clone();
    let thread_stopped = stopped.clone();
    std::thread::Builder::new()
        .name("accept".into())
        .spawn(move || loop {
            let accepted = thread_listener.accept();
            if thread_stopped.load(Ordering::SeqCst) {
                return;
            }
            let ready = accepted.and_then(|(stream, peer)| {
                stream.set_nonblocking(true)?;
                Ok((stream, peer))
            });
            match ready {
                Ok(connection) => {
                    if accepted_tx.send(connection).is_err() {
                        // The runtime is gone.
                        return;
                    }
                }
                Err(error) => {
                    tracing::error!("Error accepting client connection: {error}");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        })?;
    Ok(AcceptThread { listener, stopped })
}
