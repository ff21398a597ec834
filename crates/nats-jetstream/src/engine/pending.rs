//! An account's JetStream change still under way: its streams closing after an update disabled
//! it, or a later update of the same account waiting for that. [`super::JetStream::update_account`]
//! keeps one per account, so the changes of an account are carried out one after another in the
//! order the updates came, whichever task delivered them (the claims requests and the full
//! resolver's pack sync are two tasks).

use std::future::Future;
use tokio::sync::watch;

/// A change running on a task of its own; clones watch the same change.
#[derive(Clone)]
pub(super) struct Pending(watch::Receiver<bool>);

impl Pending {
    /// Runs `work` on a task of its own.
    pub(super) fn spawn(work: impl Future<Output = ()> + Send + 'static) -> Pending {
        let (done, watched) = watch::channel(false);
        tokio::spawn(async move {
            work.await;
            done.send_replace(true);
        });
        Pending(watched)
    }

    /// Done, or its task is gone (a panic, or the runtime shutting down).
    pub(super) fn finished(&self) -> bool {
        *self.0.borrow() || self.0.has_changed().is_err()
    }

    /// Until it is done (or its task is gone).
    pub(super) async fn wait(mut self) {
        let _ = self.0.wait_for(|done| *done).await;
    }
}
