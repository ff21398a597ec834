//! STREAM.CREATE proposals in flight on the meta leader (issues 15 and 21).
//!
//! The admin queue runs one request at a time; a clustered STREAM.CREATE used to hold it until
//! the meta group had committed and applied its assignment, so creations with many in flight
//! were paced by one meta commit after another. Now a plain creation (no mirror, no sources, a
//! name not yet assigned, the account's stream limit not in reach) that cannot conflict with
//! the creations already in flight (another name, no subject overlapping theirs) is proposed
//! and left to a task awaiting its proposal, and the queue goes on with the next request.
//! What could depend on those in flight waits until the account has none:
//! - any other admin request of the account (update, delete, purge, consumers, message
//!   get/delete: `ApiQueues::serve` waits for [`Creations::idle`] first), so a delete of a
//!   stream being created sees its assignment;
//! - a creation that is not plain or that conflicts with one in flight (the same name, an
//!   overlapping subject): it is checked again once none is in flight, against the assignments
//!   they left, and answered as before (the same name with another config 10058, the same
//!   config success, an overlap 10065), as nats-server answers against its in-flight
//!   proposals.
//!
//! Answers do not change: the holder answers a creation once its assignment is applied there,
//! and the task answers a failed proposal; a creation is never answered twice.
//!
//! A single server uses the same bookkeeping for the plain file stream creations it makes
//! beside one another (`registry/beside.rs`): there the store is made off the admin thread
//! instead of a proposal awaited.

use jetstream_api::StreamConfig;
use tokio::sync::watch;

/// At most this many creations of one account in flight; the next waits for one to finish.
pub(crate) const MAX_IN_FLIGHT: usize = 64;

/// A creation in flight: what a later creation must not conflict with.
#[derive(Debug)]
pub(crate) struct Creating {
    /// Tells apart two creations of one name (never both in flight, but a ticket releases
    /// only its own).
    id: u64,
    name: String,
    subjects: Vec<String>,
}

/// The account's creations in flight (in its API [`super::Context`]).
pub(crate) struct Creations {
    state: watch::Sender<Vec<Creating>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Default for Creations {
    fn default() -> Self {
        Creations {
            state: watch::Sender::new(Vec::new()),
            next_id: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

/// A creation admitted beside those in flight; released (and waiters woken) when dropped.
pub(crate) struct Ticket {
    state: watch::Sender<Vec<Creating>>,
    id: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.state
            .send_modify(|creating| creating.retain(|entry| entry.id != self.id));
    }
}

/// What a creation checked against the committed assignments may do now.
pub(crate) enum Admission {
    /// Proposed beside those in flight: await the proposal elsewhere, holding the ticket.
    InFlight(Ticket),
    /// None in flight and the creation is not plain: propose and await it on the queue.
    Serial,
    /// Wait for the in-flight creations to change, then check again.
    Wait(watch::Receiver<Vec<Creating>>),
}

/// What makes a checked creation plain (see the module's doc).
pub(crate) struct Plainness {
    /// A mirror or sources, or an assignment of the name exists already.
    pub depends: bool,
    /// How many more streams the account may have besides this one (its limit less those
    /// assigned less one); `None` without a limit.
    pub headroom: Option<usize>,
}

impl Creations {
    /// Whether the account has creations in flight.
    pub(crate) fn any(&self) -> bool {
        !self.state.borrow().is_empty()
    }

    /// Resolves once the account has no creation in flight.
    pub(crate) async fn idle(&self) {
        let mut changes = self.state.subscribe();
        // The sender lives as long as `self`: an error cannot happen while it is borrowed.
        let _ = changes.wait_for(Vec::is_empty).await;
    }

    /// Decides what the creation of `config` (checked against the committed assignments) may
    /// do now.
    pub(crate) fn admit(&self, config: &StreamConfig, plain: &Plainness) -> Admission {
        // Subscribed before looking: a creation finishing meanwhile wakes the waiter.
        let changes = self.state.subscribe();
        let mut admitted = None;
        self.state.send_if_modified(|creating| {
            if creating.is_empty() && plain.depends {
                return false;
            }
            let fits = !plain.depends
                && creating.len() < MAX_IN_FLIGHT
                && plain
                    .headroom
                    .is_none_or(|headroom| creating.len() <= headroom)
                && !creating.iter().any(|other| conflicts(other, config));
            if !fits {
                return false;
            }
            let id = self
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            creating.push(Creating {
                id,
                name: config.name.clone(),
                subjects: config.subjects.clone(),
            });
            admitted = Some(id);
            true
        });
        match admitted {
            Some(id) => Admission::InFlight(Ticket {
                state: self.state.clone(),
                id,
            }),
            None if !self.any() && plain.depends => Admission::Serial,
            None => Admission::Wait(changes),
        }
    }
}

/// Whether a creation of `config` could be answered differently once `other` is assigned: the
/// same name, or a subject overlapping one of its subjects.
fn conflicts(other: &Creating, config: &StreamConfig) -> bool {
    other.name == config.name
        || other.subjects.iter().any(|theirs| {
            config
                .subjects
                .iter()
                .any(|ours| crate::subject::overlaps(ours, theirs))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str, subjects: &[&str]) -> StreamConfig {
        StreamConfig {
            name: name.to_string(),
            subjects: subjects.iter().map(|subject| subject.to_string()).collect(),
            ..Default::default()
        }
    }

    const PLAIN: Plainness = Plainness {
        depends: false,
        headroom: None,
    };

    #[tokio::test]
    async fn conflicting_creations_wait_and_others_go_beside() {
        let creations = Creations::default();
        let Admission::InFlight(first) = creations.admit(&config("A", &["a.>"]), &PLAIN) else {
            panic!("the first plain creation is admitted");
        };
        let Admission::InFlight(second) = creations.admit(&config("B", &["b.*"]), &PLAIN) else {
            panic!("another name and subjects go beside it");
        };
        for conflicting in [config("A", &["c"]), config("C", &["a.x"])] {
            assert!(matches!(
                creations.admit(&conflicting, &PLAIN),
                Admission::Wait(_)
            ));
        }
        let depends = Plainness {
            depends: true,
            headroom: None,
        };
        let Admission::Wait(mut changes) = creations.admit(&config("M", &["m"]), &depends) else {
            panic!("a mirror waits while any is in flight");
        };
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), changes.changed())
            .await
            .expect("a finished creation wakes the waiter")
            .expect("sender alive");
        assert!(matches!(
            creations.admit(&config("C", &["a.x"]), &PLAIN),
            Admission::InFlight(_)
        ));
        drop(second);
        tokio::time::timeout(std::time::Duration::from_secs(5), creations.idle())
            .await
            .expect("idle once every ticket is dropped");
        assert!(matches!(
            creations.admit(&config("M", &["m"]), &depends),
            Admission::Serial
        ));
    }

    #[test]
    fn the_stream_limit_and_the_cap_hold_back_creations() {
        let creations = Creations::default();
        let one_more = Plainness {
            depends: false,
            headroom: Some(1),
        };
        let _first = creations.admit(&config("A", &["a"]), &one_more);
        let _second = creations.admit(&config("B", &["b"]), &one_more);
        assert!(matches!(
            creations.admit(&config("C", &["c"]), &one_more),
            Admission::Wait(_)
        ));
        let many = Creations::default();
        let tickets: Vec<_> = (0..MAX_IN_FLIGHT)
            .map(|index| {
                many.admit(
                    &config(&format!("S{index}"), &[&format!("s{index}")]),
                    &PLAIN,
                )
            })
            .collect();
        assert!(tickets
            .iter()
            .all(|admission| matches!(admission, Admission::InFlight(_))));
        assert!(matches!(
            many.admit(&config("X", &["x"]), &PLAIN),
            Admission::Wait(_)
        ));
    }
}
