//! `/gatewayz` and `/leafz`: rnats has neither gateways nor leaf nodes yet, so both answer as
//! nats-server does when they are not configured, after checking the options as it does.

use super::format::rfc3339;
use super::query::Query;
use super::Refusal;
use crate::server::Server;
use serde_json::{json, Value};
use time::OffsetDateTime;

/// The options of one `/gatewayz` read.
#[derive(Clone, Debug, Default)]
pub struct GatewayzOptions {
    pub name: String,
    pub accounts: bool,
    pub account_name: String,
    pub subscriptions: bool,
}

impl GatewayzOptions {
    pub fn from_query(query: &Query) -> Result<GatewayzOptions, Refusal> {
        Ok(GatewayzOptions {
            accounts: query.boolean("accs")?,
            subscriptions: query.boolean("subs")?,
            name: query.text("gw_name").to_string(),
            account_name: query.text("acc_name").to_string(),
        })
    }
}

pub fn gatewayz(server: &Server, _options: &GatewayzOptions) -> Value {
    json!({
        "server_id": server.server_id,
        "now": rfc3339(OffsetDateTime::now_utc()),
        "outbound_gateways": {},
        "inbound_gateways": {},
    })
}

/// The options of one `/leafz` read.
#[derive(Clone, Debug, Default)]
pub struct LeafzOptions {
    pub subscriptions: bool,
    pub account: String,
}

impl LeafzOptions {
    pub fn from_query(query: &Query) -> Result<LeafzOptions, Refusal> {
        Ok(LeafzOptions {
            subscriptions: query.boolean("subs")?,
            account: query.text("acc").to_string(),
        })
    }
}

pub fn leafz(server: &Server, _options: &LeafzOptions) -> Value {
    json!({
        "server_id": server.server_id,
        "now": rfc3339(OffsetDateTime::now_utc()),
        "leafnodes": 0,
        "leafs": [],
    })
}
