//! The defaults nats-server writes into a consumer config before it echoes it back
//! (nats-server's `setConsumerConfigDefaults`, plus the ephemeral inactivity default it stamps at
//! creation). Pure data in, data out, so the consumer code and tests share one definition.
//!
//! Validation (`checkConsumerCfg`: names, filters, replicas, policy combinations) is the consumer
//! code's job; this only fills in and normalises values, refusing in pedantic mode where
//! nats-server refuses.

use crate::api_error::ApiError;
use crate::consumer::{
    ConsumerConfig, DEFAULT_ACK_WAIT, DEFAULT_EPHEMERAL_INACTIVE_THRESHOLD,
    DEFAULT_MAX_ACK_PENDING, DEFAULT_MAX_WAITING,
};
use crate::errors_generated::PEDANTIC;
use crate::policy::{AckPolicy, PriorityPolicy};
use crate::stream::StreamConfig;
use crate::time_format::Nanos;

/// Default pinned-client TTL (`priority_timeout`) for `pinned_client` groups.
pub const DEFAULT_PINNED_TTL: Nanos = Nanos::from_secs(120);
/// Heartbeat nats-server sets for `ack_policy: flow_control` consumers.
pub const FLOW_CONTROL_ACK_HEARTBEAT: Nanos = Nanos::from_secs(1);

/// Server and account limits that feed consumer defaults (0: not set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsumerDefaultLimits {
    /// `jetstream { limits { max_ack_pending } }` of the server.
    pub server_max_ack_pending: i64,
    /// `max_ack_pending` of the account's JetStream limits.
    pub account_max_ack_pending: i64,
    /// `jetstream { limits { max_request_batch } }` of the server.
    pub server_max_request_batch: i64,
}

fn pedantic_error(text: &str) -> ApiError {
    PEDANTIC.with_err(text)
}

/// Fills defaults in place as nats-server does for a create or update request. `pedantic`
/// refuses instead of adjusting, with nats-server's texts.
pub fn apply_consumer_defaults(
    config: &mut ConsumerConfig,
    stream: &StreamConfig,
    limits: &ConsumerDefaultLimits,
    pedantic: bool,
) -> Result<(), ApiError> {
    if config.max_deliver == 0 || config.max_deliver < -1 {
        if pedantic && config.max_deliver < -1 {
            return Err(pedantic_error("max_deliver must be set to -1"));
        }
        config.max_deliver = -1;
    }
    if config.max_waiting < 0 {
        if pedantic {
            return Err(pedantic_error("max_waiting must not be negative"));
        }
        config.max_waiting = 0;
    }
    if config.max_ack_pending < -1 {
        if pedantic {
            return Err(pedantic_error("max_ack_pending must be set to -1"));
        }
        config.max_ack_pending = -1;
    }
    if config.max_request_batch < 0 {
        if pedantic {
            return Err(pedantic_error("max_batch must not be negative"));
        }
        config.max_request_batch = 0;
    }
    let non_negative = [
        (
            &mut config.max_request_expires,
            "max_expires must not be negative",
        ),
        (
            &mut config.idle_heartbeat,
            "idle_heartbeat must not be negative",
        ),
        (
            &mut config.inactive_threshold,
            "inactive_threshold must not be negative",
        ),
        (
            &mut config.pinned_ttl,
            "priority_timeout must not be negative",
        ),
    ];
    for (value, text) in non_negative {
        if value.0 < 0 {
            if pedantic {
                return Err(pedantic_error(text));
            }
            *value = Nanos::ZERO;
        }
    }
    if config.max_request_max_bytes < 0 {
        if pedantic {
            return Err(pedantic_error("max_bytes must not be negative"));
        }
        config.max_request_max_bytes = 0;
    }

    if config.deliver_subject.is_empty() && config.max_waiting == 0 {
        config.max_waiting = DEFAULT_MAX_WAITING;
    }
    if config.ack_wait.is_zero()
        && matches!(config.ack_policy, AckPolicy::Explicit | AckPolicy::All)
    {
        config.ack_wait = DEFAULT_ACK_WAIT;
    }
    if let Some(&first) = config.backoff.first() {
        if pedantic && config.ack_wait != first {
            return Err(pedantic_error(
                "first backoff value has to equal batch AckWait",
            ));
        }
        config.ack_wait = first;
    }
    if config.max_ack_pending == 0 {
        if pedantic && stream.consumer_limits.max_ack_pending > 0 {
            return Err(pedantic_error(
                "max_ack_pending must be set if it's configured in stream limits",
            ));
        }
        config.max_ack_pending = stream.consumer_limits.max_ack_pending;
    }
    if config.inactive_threshold.is_zero() {
        if pedantic && !stream.consumer_limits.inactive_threshold.is_zero() {
            return Err(pedantic_error(
                "inactive_threshold must be set if it's configured in stream limits",
            ));
        }
        config.inactive_threshold = stream.consumer_limits.inactive_threshold;
    }
    if config.max_ack_pending == 0 && config.ack_policy != AckPolicy::None {
        let mut ack_pending = DEFAULT_MAX_ACK_PENDING;
        for limit in [
            limits.server_max_ack_pending,
            limits.account_max_ack_pending,
        ] {
            if limit > 0 && limit < ack_pending {
                ack_pending = limit;
            }
        }
        config.max_ack_pending = ack_pending;
    }
    if config.deliver_subject.is_empty()
        && config.max_request_batch == 0
        && limits.server_max_request_batch > 0
    {
        if pedantic {
            return Err(pedantic_error(
                "max_request_batch must be set if it's JetStream limits are set",
            ));
        }
        config.max_request_batch = limits.server_max_request_batch;
    }
    if config.priority_policy == PriorityPolicy::PinnedClient && config.pinned_ttl.is_zero() {
        config.pinned_ttl = DEFAULT_PINNED_TTL;
    }
    if config.ack_policy == AckPolicy::FlowControl && !pedantic {
        config.flow_control = true;
        config.idle_heartbeat = FLOW_CONTROL_ACK_HEARTBEAT;
    }
    Ok(())
}

/// What nats-server stamps on a new ephemeral (no durable name) without an inactivity threshold:
/// 5s (it deletes after 5s plus up to a second of jitter, but reports 5s).
pub fn apply_ephemeral_inactive_default(config: &mut ConsumerConfig) {
    if config.durable_name.is_empty() && config.inactive_threshold.0 <= 0 {
        config.inactive_threshold = DEFAULT_EPHEMERAL_INACTIVE_THRESHOLD;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DeliverPolicy;

    fn stream() -> StreamConfig {
        StreamConfig {
            name: "C".into(),
            ..Default::default()
        }
    }

    #[test]
    fn pull_explicit_defaults_match_nats_server_echo() {
        // Captured: {"durable_name":"PULL","ack_policy":"explicit"} came back with ack_wait 30s,
        // max_deliver -1, max_waiting 512, max_ack_pending 1000.
        let mut config = ConsumerConfig {
            durable_name: "PULL".into(),
            ack_policy: AckPolicy::Explicit,
            ..Default::default()
        };
        apply_consumer_defaults(&mut config, &stream(), &Default::default(), false).unwrap();
        apply_ephemeral_inactive_default(&mut config);
        assert_eq!(config.ack_wait, Nanos::from_secs(30));
        assert_eq!(config.max_deliver, -1);
        assert_eq!(config.max_waiting, 512);
        assert_eq!(config.max_ack_pending, 1000);
        assert!(config.inactive_threshold.is_zero());
    }

    #[test]
    fn ephemeral_ack_none_defaults() {
        // Captured: {"ack_policy":"none","deliver_policy":"last"} -> no ack_wait, no
        // max_ack_pending, max_waiting 512, inactive_threshold 5s.
        let mut config = ConsumerConfig {
            deliver_policy: DeliverPolicy::Last,
            ..Default::default()
        };
        apply_consumer_defaults(&mut config, &stream(), &Default::default(), false).unwrap();
        apply_ephemeral_inactive_default(&mut config);
        assert!(config.ack_wait.is_zero());
        assert_eq!(config.max_ack_pending, 0);
        assert_eq!(config.max_waiting, 512);
        assert_eq!(config.inactive_threshold, Nanos::from_secs(5));
    }

    #[test]
    fn push_with_backoff() {
        // Captured: ack_wait 5s with backoff [1s,2s] came back as ack_wait 1s; push: no
        // max_waiting.
        let mut config = ConsumerConfig {
            durable_name: "PUSH".into(),
            deliver_subject: "push.out".into(),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Nanos::from_secs(5),
            backoff: vec![Nanos::from_secs(1), Nanos::from_secs(2)],
            max_deliver: 5,
            ..Default::default()
        };
        apply_consumer_defaults(&mut config, &stream(), &Default::default(), false).unwrap();
        assert_eq!(config.ack_wait, Nanos::from_secs(1));
        assert_eq!(config.max_waiting, 0);
        assert_eq!(config.max_deliver, 5);
        let error = apply_consumer_defaults(
            &mut ConsumerConfig {
                ack_policy: AckPolicy::Explicit,
                backoff: vec![Nanos::from_secs(2)],
                ..Default::default()
            },
            &stream(),
            &Default::default(),
            true,
        )
        .unwrap_err();
        assert_eq!(error.err_code, 10157);
        assert_eq!(
            error.description,
            "pedantic mode: first backoff value has to equal batch AckWait"
        );
    }

    #[test]
    fn stream_and_server_limits_apply() {
        let mut stream = stream();
        stream.consumer_limits.max_ack_pending = 100;
        stream.consumer_limits.inactive_threshold = Nanos::from_secs(10);
        let mut config = ConsumerConfig {
            ack_policy: AckPolicy::All,
            ..Default::default()
        };
        let limits = ConsumerDefaultLimits {
            server_max_request_batch: 50,
            ..Default::default()
        };
        apply_consumer_defaults(&mut config, &stream, &limits, false).unwrap();
        assert_eq!(config.max_ack_pending, 100);
        assert_eq!(config.inactive_threshold, Nanos::from_secs(10));
        assert_eq!(config.max_request_batch, 50);

        let mut config = ConsumerConfig {
            ack_policy: AckPolicy::Explicit,
            ..Default::default()
        };
        let limits = ConsumerDefaultLimits {
            account_max_ack_pending: 20,
            ..Default::default()
        };
        apply_consumer_defaults(&mut config, &StreamConfig::default(), &limits, false).unwrap();
        assert_eq!(config.max_ack_pending, 20);
    }

    #[test]
    fn pinned_and_negative_values() {
        let mut config = ConsumerConfig {
            priority_policy: PriorityPolicy::PinnedClient,
            idle_heartbeat: Nanos(-5),
            max_deliver: -7,
            ..Default::default()
        };
        apply_consumer_defaults(&mut config, &stream(), &Default::default(), false).unwrap();
        assert_eq!(config.pinned_ttl, Nanos::from_secs(120));
        assert!(config.idle_heartbeat.is_zero());
        assert_eq!(config.max_deliver, -1);
        let mut config = ConsumerConfig {
            max_deliver: -7,
            ..Default::default()
        };
        let error =
            apply_consumer_defaults(&mut config, &stream(), &Default::default(), true).unwrap_err();
        assert_eq!(
            error.description,
            "pedantic mode: max_deliver must be set to -1"
        );
    }
}
