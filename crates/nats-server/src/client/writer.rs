//! The writer task of one connection: takes the whole outbound buffer at once (coalescing every
//! frame queued since the last write), writes it within `write_deadline`, and sends the
//! server's PINGs every `ping_interval` (closing after `ping_max` unanswered ones).

use super::{ClientShared, CloseReason};
use crate::server::Server;
use bytes::BytesMut;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

/// A write buffer that grew past this is given back to the allocator after use.
const SHRINK_ABOVE: usize = 1024 * 1024;

pub async fn run(server: Arc<Server>, shared: Arc<ClientShared>, mut socket: OwnedWriteHalf) {
    let ping_interval = server
        .options
        .ping_interval
        .max(std::time::Duration::from_millis(10));
    let ping_max = u32::try_from(server.options.ping_max.max(0)).unwrap_or(u32::MAX);
    let write_deadline = server.options.write_deadline;
    let mut pings = interval_at(Instant::now() + ping_interval, ping_interval);
    pings.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut chunk = BytesMut::with_capacity(4096);
    loop {
        let closing = {
            let mut outbound = shared.outbound.lock();
            std::mem::swap(&mut outbound.buffer, &mut chunk);
            outbound.in_flight = chunk.len();
            outbound.closing
        };
        if !chunk.is_empty() {
            let discard = closing.is_some_and(|reason| reason.discards_backlog());
            if !discard {
                write_chunk(&server, &shared, &mut socket, &chunk, write_deadline).await;
            }
            chunk.clear();
            if chunk.capacity() > SHRINK_ABOVE {
                chunk = BytesMut::with_capacity(4096);
            }
            shared.outbound.lock().in_flight = 0;
            shared.drained.notify_waiters();
            continue;
        }
        if closing.is_some() {
            let _ = socket.shutdown().await;
            return;
        }
        tokio::select! {
            _ = shared.writer_wake.notified() => {}
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
                    shared.pings_outstanding.fetch_add(1, Ordering::Relaxed);
                    shared.queue_bytes(b"PING\r\n");
                }
            }
        }
    }
}

/// Write `chunk`, counting down the in-flight bytes as the socket takes them (so max_pending
/// sees real progress), each write bounded by `write_deadline`.
async fn write_chunk(
    server: &Server,
    shared: &ClientShared,
    socket: &mut OwnedWriteHalf,
    chunk: &[u8],
    write_deadline: std::time::Duration,
) {
    let mut offset = 0;
    while offset < chunk.len() {
        let written = if write_deadline.is_zero() {
            Ok(socket.write(&chunk[offset..]).await)
        } else {
            tokio::time::timeout(write_deadline, socket.write(&chunk[offset..])).await
        };
        match written {
            Ok(Ok(0)) | Ok(Err(_)) => {
                shared.close(CloseReason::WriteError);
                return;
            }
            Ok(Ok(count)) => {
                offset += count;
                if offset < chunk.len() {
                    shared.outbound.lock().in_flight = chunk.len() - offset;
                    shared.drained.notify_waiters();
                }
            }
            Err(_) => {
                tracing::info!(
                    "{} - cid:{} - Slow Consumer Detected: WriteDeadline of {} exceeded",
                    shared.address,
                    shared.id,
                    crate::config::duration_text(write_deadline)
                );
                server.stats.slow_consumers.fetch_add(1, Ordering::Relaxed);
                shared.close(CloseReason::SlowConsumerWriteDeadline);
                return;
            }
        }
    }
}
