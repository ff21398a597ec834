//! The product's black-box contract. This crate has no code of its own: its tests (under
//! `tests/`, one binary per area: `core`, `jetstream`, `cli`, `cluster`) start the `nats-server`
//! binary, ours or the real one named by `NATS_SERVER_BIN`, through `test-harness`, and talk to
//! it over the wire. `NATS_SERVER_BIN=$(which nats-server) cargo test -p parity` is the parity pass.
