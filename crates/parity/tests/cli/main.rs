//! Black-box tests: cli. Each module is one concern; helpers live in test-harness.

mod account;
mod auth;
mod consumer;
mod context;
mod interactive;
mod kv;
mod messaging;
mod object;
mod object_progress;
mod replication;
mod report_archive;
mod report_filter;
mod server;
mod stream_admin;
mod tls_nkeys;
mod tutorial;
