//! The exact texts nats-server sends inside `-ERR '...'`, so the server never drifts from them.
//!
//! Texts that embed a subject are built by the helper functions below.

/// Parser: unknown op, bad separator, payload not followed by CRLF, empty line. Closes.
pub const UNKNOWN_PROTOCOL_OPERATION: &str = "Unknown Protocol Operation";
/// Parser: control line arguments longer than max_control_line (lower case, as nats-server). Closes.
pub const MAXIMUM_CONTROL_LINE_EXCEEDED: &str = "maximum control line exceeded";
/// Parser: PUB/HPUB size above max_payload. Closes.
pub const MAXIMUM_PAYLOAD_VIOLATION: &str = "Maximum Payload Violation";
/// SUB with an invalid subject or queue. Does not close.
pub const INVALID_SUBJECT: &str = "Invalid Subject";
/// PUB to a non-literal or invalid subject on a pedantic connection. Does not close.
pub const INVALID_PUBLISH_SUBJECT: &str = "Invalid Publish Subject";
/// First op is not CONNECT while auth is required, or bad credentials. Closes.
pub const AUTHORIZATION_VIOLATION: &str = "Authorization Violation";
/// No CONNECT within the auth timeout. Closes.
pub const AUTHENTICATION_TIMEOUT: &str = "Authentication Timeout";
/// ping_max outstanding PINGs without PONG. Closes.
pub const STALE_CONNECTION: &str = "Stale Connection";
/// Connection refused at max_connections. Closes.
pub const MAXIMUM_CONNECTIONS_EXCEEDED: &str = "maximum connections exceeded";
/// SUB refused at max_subscriptions. Does not close.
pub const MAXIMUM_SUBSCRIPTIONS_EXCEEDED: &str = "maximum subscriptions exceeded";
/// Sent to a client that set no_responders without headers in CONNECT. Closes.
pub const NO_RESPONDERS_REQUIRES_HEADERS: &str = "No Responders Requires Headers Support";

/// `Permissions Violation for Publish to "subject"` (does not close).
pub fn permissions_violation_publish(subject: &str) -> String {
    format!("Permissions Violation for Publish to \"{subject}\"")
}

/// `Permissions Violation for Subscription to "subject"` (does not close). nats-server appends
/// ` using queue "q"` for a queue subscription.
pub fn permissions_violation_subscription(subject: &str, queue: Option<&str>) -> String {
    match queue {
        Some(queue) => {
            format!(
                "Permissions Violation for Subscription to \"{subject}\" using queue \"{queue}\""
            )
        }
        None => format!("Permissions Violation for Subscription to \"{subject}\""),
    }
}
