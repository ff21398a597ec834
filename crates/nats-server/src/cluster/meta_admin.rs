//! The meta group's administration: `$JS.API.META.LEADER.STEPDOWN` (answered by the leader, as
//! nats-server answers it), the clustered `/healthz` checks, and handing the leaderships this
//! server holds to other voters (lame duck mode, shutdown).

use std::time::{Duration, Instant};

use nats_jetstream::Message;
use nats_raft::{GroupStatus, NodeId, Role};
use serde_json::{json, Value};

use super::meta::Meta;

/// `/healthz`: a follower is current only if its leader's last append came within this
/// (nats-server: two heartbeat intervals, 2 s; ours beat every 500 ms, and a loaded machine
/// delays them).
const HEALTH_CONTACT_WINDOW: Duration = Duration::from_secs(3);
/// How long a stepdown's answer waits for this server to stop leading (the successor's vote
/// request ends its term, normally within milliseconds of the transfer).
const STEPPED_DOWN_WAIT: Duration = Duration::from_secs(2);

impl Meta {
    /// Every server receives every stepdown; one that `arrived` here before this server's
    /// leadership in the current term began was its predecessor's, which answered it and
    /// handed the leadership here: acted on again it would hand it straight on (the stream
    /// stepdowns' race, `clustered::arrived_before_leading`).
    pub(super) async fn stepdown(&self, message: Message, arrived: Instant) {
        if !self.leads() {
            return;
        }
        let began = self
            .group
            .status()
            .led_for
            .and_then(|led_for| Instant::now().checked_sub(led_for));
        if began.is_some_and(|began| began > arrived) {
            tracing::info!(
                "meta leader stepdown that arrived before this leadership left to its predecessor"
            );
            return;
        }
        let status = self.group.status();
        let Some(reply) = message.reply.clone() else {
            return;
        };
        let answer = match self.stepdown_target(&message.payload, &status) {
            Ok(target) => match self.group.transfer_leader(target).await {
                Ok(()) => {
                    // Answered once this server no longer leads (as nats-server's node is a
                    // follower when it answers): a request sent on the answer then never
                    // reaches this server as leader, where a proposal refused by the transfer
                    // would be answered beside the successor's answer.
                    let _ = self
                        .group
                        .wait_for(STEPPED_DOWN_WAIT, |status| status.role != Role::Leader)
                        .await;
                    json!({"type": STEPDOWN_TYPE, "success": true})
                }
                Err(error) => stepdown_error(500, 10008, &error.to_string()),
            },
            Err(answer) => answer,
        };
        self.publish(&String::from_utf8_lossy(&reply), None, answer);
    }

    /// The node to hand leadership to: the preferred server, or
    /// [`stepdown_successor`](super::stepdown_successor)'s.
    fn stepdown_target(&self, body: &[u8], status: &GroupStatus) -> Result<NodeId, Value> {
        let preferred = if body.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            let request: Value = serde_json::from_slice(body).map_err(|error| {
                let text =
                    go_compat::json_syntax::error_text(body).unwrap_or_else(|| error.to_string());
                stepdown_error(400, 10025, &format!("invalid JSON: {text}"))
            })?;
            request["placement"]["preferred"]
                .as_str()
                .filter(|name| !name.is_empty())
                .map(str::to_string)
        };
        let own = self.group.node_id();
        if let Some(name) = preferred {
            if name == self.server_name {
                return Err(stepdown_error(
                    400,
                    10005,
                    &format!("preferred server \"{name}\" is already leader"),
                ));
            }
            return match self.node_of_name(&name) {
                Some(node) if status.voters.contains(&node) => Ok(node),
                _ => Err(stepdown_error(
                    400,
                    10005,
                    &format!("preferred server \"{name}\" not known"),
                )),
            };
        }
        super::stepdown_successor(status, own)
            .ok_or_else(|| stepdown_error(400, 10005, "no replacement peer connected"))
    }

    /// nats-server's clustered `/healthz` meta checks: a meta leader known and this server
    /// current with it. The error text as nats-server words it.
    pub fn health(&self) -> Result<(), String> {
        if self.group.status().leader.is_none() {
            return Err("JetStream has not established contact with a meta leader".into());
        }
        if !self.group.is_current(HEALTH_CONTACT_WINDOW) {
            return Err("JetStream is not current with the meta leader".into());
        }
        Ok(())
    }

    /// The streams the meta group placed on this server (of `account` when named), by account
    /// then name, each with whether it runs a Raft group: what nats-server's clustered
    /// `/healthz` checks after the meta group.
    pub fn streams_placed_here(&self, account: Option<&str>) -> Vec<(String, String, bool)> {
        self.assignments
            .lock()
            .placed_on_server(&self.server_name, &self.own_peer, account)
            .into_iter()
            .map(|record| {
                let replicated = record.runs_group();
                (
                    record.account.clone(),
                    record.config.name.clone(),
                    replicated,
                )
            })
            .collect()
    }

    /// Why the replica of the replicated stream `account > stream` placed here is not current,
    /// as nats-server's `isStreamHealthy` words it: not running here (a wiped server before
    /// its replica was re-created, or one that failed to start), its group not started yet, or
    /// not caught up with its leader (or without one). `None` when it is current.
    pub fn replica_not_current(&self, account: &str, stream: &str) -> Option<&'static str> {
        let Some(replica) = self.stream_groups.get(account, stream) else {
            return Some("stream not found");
        };
        match replica.raft() {
            None => Some("stream node missing"),
            Some(group) if !group.is_current(HEALTH_CONTACT_WINDOW) => Some("group node unhealthy"),
            Some(_) => None,
        }
    }

    /// Whether the meta group assigned any stream of `account` (`/healthz`'s account check).
    pub fn assigns_streams_of(&self, account: &str) -> bool {
        !self.assignments.lock().streams(account).is_empty()
    }

    /// Lame duck mode: the meta group's leadership and every stream group's this server holds
    /// go to caught-up voters elsewhere (each wait bounded). The number handed over.
    pub async fn transfer_leaderships(&self) -> usize {
        let streams = self
            .stream_groups
            .transfer_leaderships(Duration::from_secs(2))
            .await;
        streams + usize::from(self.transfer_meta_leadership().await)
    }

    /// Hands the meta leadership to the voter least behind and waits (bounded) until it moved.
    pub(super) async fn transfer_meta_leadership(&self) -> bool {
        let own = self.group.node_id();
        let Some(target) = super::stream_group::handover_target(&self.group.status(), own) else {
            return false;
        };
        if self.group.transfer_leader(target).await.is_err() {
            return false;
        }
        let _ = self
            .group
            .wait_for(Duration::from_secs(2), |status| {
                status.leader.is_some_and(|leader| leader != own)
            })
            .await;
        true
    }
}

const STEPDOWN_TYPE: &str = "io.nats.jetstream.api.v1.meta_leader_stepdown_response";

fn stepdown_error(code: u16, err_code: u32, description: &str) -> Value {
    json!({
        "type": STEPDOWN_TYPE,
        "error": {"code": code, "err_code": err_code, "description": description},
    })
}
