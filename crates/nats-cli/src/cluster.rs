//! What natscli's clustered operations share: after a step-down request, poll every 500 ms
//! for a leader other than the previous one, logging each attempt's problem as natscli does
//! (`stream cluster`, `consumer cluster` and `server raft` commands).

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::CliError;
use crate::output::log_line;

/// How the wait reports itself: what it polls (`Stream`, `Consumer`, `Cluster` in
/// "Failed to retrieve {state} State"), how many polls, and the error when no new leader came.
pub struct LeaderWait {
    pub state: &'static str,
    pub attempts: usize,
    pub timeout_error: String,
}

/// Polls `leader` (the current leader's name, empty for none) until it differs from
/// `previous`: logs "New leader elected" and returns it, or natscli's error after the
/// attempts.
pub async fn await_new_leader<F, Fut>(
    wait: &LeaderWait,
    previous: &str,
    mut leader: F,
) -> Result<String, CliError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<String, CliError>>,
{
    let started = Instant::now();
    for _ in 0..wait.attempts {
        tokio::time::sleep(Duration::from_millis(500)).await;
        match leader().await {
            Err(error) => log_line(&format!("Failed to retrieve {} State: {error}", wait.state)),
            Ok(current) if current.is_empty() => log_line("No leader elected"),
            Ok(current) if current != previous => {
                log_line(&format!("New leader elected {current:?}"));
                return Ok(current);
            }
            Ok(_) => {}
        }
    }
    log_line(&format!(
        "Leader did not change after {:?}",
        Duration::from_millis(started.elapsed().as_millis() as u64)
    ));
    Err(CliError::message(wait.timeout_error.clone()))
}
