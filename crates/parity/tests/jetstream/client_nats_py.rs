//! nats-py's public API beyond Key-Value (issue 19's client-library sweep), one test per section
//! of `client_nats_py.py`: core NATS (connect options, headers, requests, no responders,
//! auto-unsubscribe, drain), JetStream (dedupe, expected sequences, pull and ordered push
//! consumers, info, gets, purges, deletes), the object store (chunked put and get, watch,
//! metadata, list with deletes, seal) and the service API (`nats.micro`, `$SRV` discovery).
//! Skipped, with the reason printed, where python3 or nats-py is missing. Passes against the
//! real nats-server too (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream client_nats_py::`).

use super::key_value_nats_py::run_script;

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
fn object_store_through_nats_py() {
    run_script(SCRIPT, &["object_store"]);
}

#[test]
fn service_api_through_nats_py() {
    run_script(SCRIPT, &["service"]);
}
