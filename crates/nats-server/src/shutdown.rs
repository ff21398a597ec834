//! How the server ends: the signals it waits for ([`wait_for_signal`]) and the shutdown that
//! follows ([`shut_down`]): leaderships handed over, JetStream stopped, clients closed.

use std::sync::Arc;

use crate::client::CloseReason;
use crate::server::Server;

/// Until a signal (or the end of lame duck mode) says to shut down.
pub(crate) async fn wait_for_signal(server: &Arc<Server>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut terminate), Ok(mut interrupt), Ok(mut hangup), Ok(mut user1), Ok(mut user2)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
        signal(SignalKind::user_defined1()),
        signal(SignalKind::user_defined2()),
    ) else {
        // Without signal handlers, run until killed.
        std::future::pending::<()>().await;
        return;
    };
    let (lame_duck_done, mut lame_duck_ended) = tokio::sync::oneshot::channel::<()>();
    let mut lame_duck_done = Some(lame_duck_done);
    loop {
        tokio::select! {
            _ = terminate.recv() => {
                tracing::info!("Trapped \"terminated\" signal");
                // As nats-server: lame duck mode, once begun, is not cut short by SIGTERM.
                if !server.in_lame_duck_mode() {
                    return;
                }
            }
            _ = user2.recv() => {
                tracing::info!("Trapped \"user defined signal 2\" signal");
                if let Some(done) = lame_duck_done.take() {
                    let server = server.clone();
                    tokio::spawn(async move {
                        crate::lame_duck::run(&server).await;
                        let _ = done.send(());
                    });
                }
            }
            _ = &mut lame_duck_ended, if lame_duck_done.is_none() => return,
            _ = interrupt.recv() => {
                tracing::info!("Trapped \"interrupt\" signal");
                return;
            }
            _ = hangup.recv() => {
                tracing::info!("Trapped \"hangup\" signal");
                crate::reload::reload_logged(server);
            }
            _ = user1.recv() => {
                tracing::info!("Trapped \"user defined signal 1\" signal");
                crate::reload::reopen_log_file(server);
            }
        }
    }
}

/// After [`wait_for_signal`] (the accept loop already stopped): the Raft leaderships held here
/// handed over, the system account's announcements, JetStream stopped, every client closed
/// (their writers given a bounded moment to flush), the ports and pid files removed.
pub(crate) async fn shut_down(server: &Arc<Server>, ports_file: Option<std::path::PathBuf>) {
    tracing::info!("Initiating Shutdown...");
    // As nats-server's shutdown (`stepdownRaftNodes`): the Raft leaderships held here go to
    // other voters first (bounded), so the streams and the meta group move on in milliseconds
    // rather than after an election. Lame duck mode did it already.
    if !server.in_lame_duck_mode() {
        if let Some(meta) = server.meta.get() {
            let moved = meta.transfer_leaderships().await;
            if moved > 0 {
                tracing::info!("Transferred {moved} Raft leaderships");
            }
        }
    }
    crate::system::shutdown(server);
    server.stop_jetstream().await;
    let clients: Vec<_> = server.clients.lock().values().cloned().collect();
    for client in &clients {
        client.close(CloseReason::ServerShutdown);
    }
    // Give writers a bounded moment to flush what they hold.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    while !server.clients.lock().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    if let Some(path) = ports_file {
        let _ = std::fs::remove_file(path);
    }
    if let Some(path) = &server.options.pid_file {
        let _ = std::fs::remove_file(path);
    }
    tracing::info!("Server Exiting..");
}
