//! `/raftz`: the Raft groups this server runs, by account then group, as nats-server lists them
//! (a minimal version: the meta group's state, term, indexes, leader and peers). Without any
//! group, nats-server's 404 "No Raft nodes registered".

use super::Refusal;
use crate::server::Server;
use serde_json::Value;

pub fn raftz(server: &Server) -> Result<Value, Refusal> {
    match server.meta.get() {
        Some(meta) => Ok(meta.raftz()),
        None => Err(super::runtime::raftz()),
    }
}
