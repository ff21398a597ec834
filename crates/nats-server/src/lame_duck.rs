//! Lame duck mode (SIGUSR2, `nats-server --signal ldm`): leave the cluster gracefully, as
//! nats-server's lameDuckMode does, in this order:
//!
//! 1. stop accepting clients (the client and websocket accept loops watch
//!    [`Server::lame_duck_entered`]) and announce `$SYS.SERVER.<id>.LAMEDUCK`;
//! 2. hand every Raft leadership this server holds (the meta group, each replicated stream's
//!    group and with it its consumers) to a caught-up voter elsewhere, then stop JetStream;
//! 3. tell the routes (INFO `ldm`, so peers drop our URLs from their clients' `connect_urls`)
//!    and the clients (INFO `ldm` listing only the other servers);
//! 4. after `lame_duck_grace_period`, close the clients one at a time spread over the rest of
//!    `lame_duck_duration` (at most a second apart), so they do not all reconnect at once.
//!
//! Then `server::run` shuts down as after SIGTERM and the process exits 0. SIGTERM during lame
//! duck mode is ignored (nats-server's rule); SIGINT still stops at once.

use crate::client::CloseReason;
use crate::server::Server;
use rand::Rng;
use std::sync::Arc;
use std::time::Duration;

/// nats-server never waits longer than this between two clients.
const MAX_INTERVAL: Duration = Duration::from_secs(1);
/// Below this a sleep is all timer overhead: close several clients per pause instead.
const MIN_PAUSE: Duration = Duration::from_millis(1);

/// Runs lame duck mode to its end (every client closed); the caller then shuts down.
pub(crate) async fn run(server: &Arc<Server>) {
    if server.lame_duck.send_replace(true) {
        return;
    }
    tracing::info!("Entering lame duck mode, stop accepting new clients");
    crate::system::lame_duck(server);
    if let Some(meta) = server.meta.get() {
        let moved = meta.transfer_leaderships().await;
        if moved > 0 {
            tracing::info!("Transferred {moved} Raft leaderships");
        }
    }
    server.stop_jetstream().await;

    let options = server.current_options();
    let grace = options.lame_duck_grace_period;
    let clients: Vec<_> = server.clients.lock().values().cloned().collect();
    if clients.is_empty() {
        return;
    }
    if let Some(routes) = server.routes() {
        crate::route::announce_lame_duck(server, routes);
    }
    for client in &clients {
        if client.meta.lock().protocol < 1 {
            continue;
        }
        let mut frame = bytes::BytesMut::new();
        server.encode_lame_duck_info(&mut frame, client);
        client.queue_bytes(&frame);
        client.wake_writer();
    }

    tokio::time::sleep(grace).await;
    tracing::info!("Closing existing clients");
    let spread = options
        .lame_duck_duration
        .checked_sub(grace)
        .filter(|spread| !spread.is_zero())
        .unwrap_or(Duration::from_secs(1));
    let (interval, batch) = schedule(spread, clients.len());
    for (index, client) in clients.iter().enumerate() {
        client.close(CloseReason::ServerShutdown);
        let last = index + 1 == clients.len();
        if last || (index + 1) % batch != 0 {
            continue;
        }
        // A random pause of at least half the interval, as nats-server.
        let half = interval / 2;
        let pause = if interval > half {
            rand::thread_rng().gen_range(half..interval)
        } else {
            interval
        };
        tokio::time::sleep(pause).await;
    }
}

/// How long to pause and after how many closed clients, to spread `clients` over `spread`.
fn schedule(spread: Duration, clients: usize) -> (Duration, usize) {
    let count = u32::try_from(clients.max(1)).unwrap_or(u32::MAX);
    let interval = (spread / count).min(MAX_INTERVAL);
    if interval >= MIN_PAUSE {
        return (interval, 1);
    }
    // Many clients: pause a millisecond after each batch that keeps the same overall pace.
    let per_pause = MIN_PAUSE.as_nanos() / interval.as_nanos().max(1);
    (
        MIN_PAUSE,
        usize::try_from(per_pause).unwrap_or(usize::MAX).max(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_spread_at_most_a_second_apart() {
        assert_eq!(
            schedule(Duration::from_secs(110), 10),
            (Duration::from_secs(1), 1)
        );
        assert_eq!(
            schedule(Duration::from_secs(110), 1100),
            (Duration::from_millis(100), 1)
        );
    }

    #[test]
    fn many_clients_are_closed_in_batches_between_millisecond_pauses() {
        // 1,000,000 clients over 100 s: 100 us each, so ten per millisecond pause.
        assert_eq!(
            schedule(Duration::from_secs(100), 1_000_000),
            (Duration::from_millis(1), 10)
        );
    }
}
