//! nats-py's public API beyond Key-Value (issue 19's client-library sweep), one test per section
//! of `client_nats_py.py`: core NATS (connect options, headers, requests, no responders,
//! auto-unsubscribe), JetStream (dedupe, expected sequences, pull and ordered push consumers,
//! info, gets, purges, deletes; direct gets, queue push consumers, fetch heartbeats, consumer
//! updates, a domain), more Key-Value (watch options, purge_deletes, value limits), the object
//! store (chunked put and get, watch, metadata, list with deletes, seal) and the service API
//! (`nats.micro`, `$SRV` discovery). Drain is left to async-nats's client_library tests:
//! nats-py's drain of a subscription whose handler was busy delivered none of 50 held messages
//! once in 12 runs under CPU load (server not identified).
//! Skipped, with the reason printed, where python3 or nats-py is missing. Passes against the
//! real nats-server too (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream client_nats_py::`).

use super::key_value_nats_py::{run_script, run_script_on};
use test_harness::ServerOptions;

const SCRIPT: &str = "client_nats_py.py";

#[test]
fn core_nats_through_nats_py() {
    run_script(SCRIPT, &["core"]);
}

#[test]
fn jetstream_through_nats_py() {
    run_script(SCRIPT, &["jetstream"]);
}

#[test]
fn more_jetstream_through_nats_py() {
    run_script(SCRIPT, &["jetstream_more"]);
}

#[test]
fn more_key_value_through_nats_py() {
    run_script(SCRIPT, &["key_value_more"]);
}

/// `nc.jetstream(domain=...)` against a server whose JetStream has that domain.
#[test]
fn jetstream_domain_through_nats_py() {
    let options = ServerOptions {
        config: Some("jetstream { domain: hub }".into()),
        ..Default::default()
    };
    run_script_on(options, SCRIPT, &["domain"]);
}

#[test]
fn object_store_through_nats_py() {
    run_script(SCRIPT, &["object_store"]);
}

#[test]
fn service_api_through_nats_py() {
    run_script(SCRIPT, &["service"]);
}
