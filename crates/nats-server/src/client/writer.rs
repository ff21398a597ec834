//! The writer task of one connection: takes everything queued at once (coalescing every frame
//! queued since the last write), writes it with vectored writes within `write_deadline`,
//! dropping each block once written, and sends the server's PINGs every `ping_interval`
//! (closing after `ping_max` unanswered ones).

use super::outbound::{advance_segments, WRITE_SLICES};
use super::{ClientShared, CloseReason};
use crate::server::Server;
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::time::{interval_at, Instant, MissedTickBehavior};

/// How long the final shutdown may take without a `write_deadline` (nats-server's default).
const SHUTDOWN_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The timers of one connection's writer (a client's come from the server options, a route's
/// from the cluster block).
#[derive(Clone, Copy, Debug)]
pub struct WriterSettings {
    pub ping_interval: std::time::Duration,
    /// Delay of the first PING (routes ping once early to measure the round trip).
    pub first_ping: std::time::Duration,
    pub ping_max: u32,
    pub write_deadline: std::time::Duration,
}

impl WriterSettings {
    pub fn client(options: &crate::config::Options) -> WriterSettings {
        let ping_interval = options
            .ping_interval
            .max(std::time::Duration::from_millis(10));
        WriterSettings {
            ping_interval,
            first_ping: ping_interval,
            ping_max: u32::try_from(options.ping_max.max(0)).unwrap_or(u32::MAX),
            write_deadline: options.write_deadline,
        }
    }
}

pub async fn run<W: AsyncWrite + Unpin>(server: Arc<Server>, shared: Arc<ClientShared>, socket: W) {
    let options = server.current_options();
    let mut settings = WriterSettings::client(&options);
    if shared.websocket.get().is_some() {
        if let Some(interval) = options
            .websocket
            .as_ref()
            .and_then(|websocket| websocket.ping_interval_override())
        {
            settings.ping_interval = interval.max(std::time::Duration::from_millis(10));
            settings.first_ping = settings.ping_interval;
        }
    }
    run_with(server, shared, socket, settings).await
}

pub async fn run_with<W: AsyncWrite + Unpin>(
    server: Arc<Server>,
    shared: Arc<ClientShared>,
    mut socket: W,
    settings: WriterSettings,
) {
    let ping_interval = settings.ping_interval;
    let ping_max = settings.ping_max;
    let write_deadline = settings.write_deadline;
    let mut pings = interval_at(Instant::now() + settings.first_ping, ping_interval);
    pings.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut segments: VecDeque<Bytes> = VecDeque::new();
    loop {
        let (taken, closing) = {
            let mut outbound = shared.outbound.lock();
            let taken = outbound.take(&mut segments);
            outbound.in_flight = taken;
            (taken, outbound.closing)
        };
        if taken > 0 {
            let discard = closing.is_some_and(|reason| reason.discards_backlog());
            if !discard {
                write_segments(
                    &server,
                    &shared,
                    &mut socket,
                    &mut segments,
                    taken,
                    write_deadline,
                )
                .await;
            }
            segments.clear();
            super::outbound::release(taken);
            shared.outbound.lock().in_flight = 0;
            shared.note_drained();
            continue;
        }
        if closing.is_some() {
            // No frame goes straight to the socket any more (see `direct.rs`); the write side
            // shuts when the last handle goes.
            shared.outbound.lock().direct = None;
            // A TLS close_notify or a websocket CLOSE may find a peer that reads nothing:
            // bounded, so the socket is released whatever the peer does.
            let limit = if write_deadline.is_zero() {
                SHUTDOWN_LIMIT
            } else {
                write_deadline
            };
            let _ = tokio::time::timeout(limit, socket.shutdown()).await;
            return;
        }
        tokio::select! {
            _ = shared.writer_wake.notified() => {
                // A transport's own frames (a websocket PONG) go out even with nothing
                // queued; for TCP and TLS this flush is ready at once.
                let flushed = if write_deadline.is_zero() {
                    Ok(socket.flush().await)
                } else {
                    tokio::time::timeout(write_deadline, socket.flush()).await
                };
                if !matches!(flushed, Ok(Ok(()))) {
                    shared.close(CloseReason::WriteError);
                }
            }
            _ = pings.tick() => {
                let outstanding = shared.pings_outstanding.load(Ordering::Relaxed);
                if outstanding + 1 > ping_max {
                    tracing::debug!("{} - cid:{} - Stale Client Connection - Closing", shared.address, shared.id);
                    server.stats.stale_connections.fetch_add(1, Ordering::Relaxed);
                    let mut error = BytesMut::new();
                    nats_proto::encode_err(&mut error, "Stale Connection");
                    shared.queue_bytes(&error);
                    shared.close(CloseReason::StaleConnection);
                } else {
                    shared.send_ping();
                }
            }
        }
    }
}

/// Write `segments` (`total` bytes), dropping each one once the socket took it and counting
/// down the in-flight bytes (so max_pending sees real progress), each write bounded by
/// `write_deadline`.
async fn write_segments<W: AsyncWrite + Unpin>(
    server: &Server,
    shared: &ClientShared,
    socket: &mut W,
    segments: &mut VecDeque<Bytes>,
    total: usize,
    write_deadline: std::time::Duration,
) {
    let mut remaining = total;
    while remaining > 0 {
        let written = {
            let mut slices = [IoSlice::new(&[]); WRITE_SLICES];
            let mut used = 0;
            for (slot, segment) in slices.iter_mut().zip(segments.iter()) {
                *slot = IoSlice::new(segment);
                used += 1;
            }
            let slices = &slices[..used];
            if write_deadline.is_zero() {
                Ok(socket.write_vectored(slices).await)
            } else {
                tokio::time::timeout(write_deadline, socket.write_vectored(slices)).await
            }
        };
        match written {
            Ok(Ok(0)) | Ok(Err(_)) => {
                shared.close(CloseReason::WriteError);
                return;
            }
            Ok(Ok(count)) => {
                advance_segments(segments, count);
                remaining = remaining.saturating_sub(count);
                if remaining > 0 {
                    shared.outbound.lock().in_flight = remaining;
                    shared.note_drained();
                }
            }
            Err(_) => {
                write_deadline_exceeded(server, shared, write_deadline);
                return;
            }
        }
    }
    // A TLS stream may still hold records the socket did not take; plain TCP holds none and
    // its flush is ready at the first poll (no timer is set up for it).
    let first_poll = std::future::poll_fn(|context| {
        std::task::Poll::Ready(std::pin::Pin::new(&mut *socket).poll_flush(context))
    })
    .await;
    match first_poll {
        std::task::Poll::Ready(Ok(())) => return,
        std::task::Poll::Ready(Err(_)) => {
            shared.close(CloseReason::WriteError);
            return;
        }
        std::task::Poll::Pending => {}
    }
    let flushed = if write_deadline.is_zero() {
        Ok(socket.flush().await)
    } else {
        tokio::time::timeout(write_deadline, socket.flush()).await
    };
    match flushed {
        Ok(Ok(())) => {}
        Ok(Err(_)) => shared.close(CloseReason::WriteError),
        Err(_) => write_deadline_exceeded(server, shared, write_deadline),
    }
}

fn write_deadline_exceeded(
    server: &Server,
    shared: &ClientShared,
    write_deadline: std::time::Duration,
) {
    tracing::info!(
        "{} - cid:{} - Slow Consumer Detected: WriteDeadline of {} exceeded",
        shared.address,
        shared.id,
        crate::config::duration_text(write_deadline)
    );
    server.stats.slow_consumers.fetch_add(1, Ordering::Relaxed);
    shared.close(CloseReason::SlowConsumerWriteDeadline);
}
