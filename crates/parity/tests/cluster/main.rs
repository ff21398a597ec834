//! Black-box tests: cluster. Each module is one concern; helpers live in test-harness
//! (`test_harness::cluster`: processes, configs, mesh waits, link proxies) and in `support`
//! (compositions, clients, interest barriers).
//!
//! Every test is written once and runs once per cluster composition (`support::Composition`):
//! three real nats-servers, two of them plus one of ours, one plus two of ours, three of ours.
//! A composition with a real nats-server runs when one is available (`NATS_SERVER_BIN`, else
//! `nats-server` on PATH). A composition with one of ours runs when [`OURS_ROUTES_READY`] is
//! true (or `RNATS_CLUSTER_OURS=1` is set) and the run is not the parity pass
//! (`NATS_SERVER_BIN` set): until rnats speaks the route protocol its nodes do not mesh.

mod accounts;
mod answered_create;
mod client_discovery;
mod consumer_cluster_info;
mod consumer_faults;
mod consumer_lease;
mod creates_in_flight;
mod damaged;
mod ephemeral_leader_change;
mod fault_schedule;
mod full_disk;
mod handover_load;
mod health_assets;
mod jetstream_accounts;
mod jetstream_assignments;
mod jetstream_consumers_replicated;
mod jetstream_elsewhere;
mod jetstream_failover;
mod jetstream_faults;
mod jetstream_lost_quorum;
mod jetstream_no_leader;
mod jetstream_quorum_return;
mod jetstream_r3_admin;
mod jetstream_replicated;
mod jetstream_usage;
mod jsz_cluster;
#[path = "../core/jwt_builder.rs"]
#[allow(dead_code)]
mod jwt_builder;
mod kv_linearizable;
mod leader_removal;
mod leaderless_requests;
mod linearizability;
mod links;
mod membership;
mod membership_cli;
mod membership_return;
mod mesh;
mod message_ttl;
mod messaging;
mod meta;
mod meta_election_answer;
mod meta_fresh_leader;
mod meta_restart;
mod meta_wait_burst;
mod operator_jetstream;
mod operator_resolver;
mod orphaned_groups;
mod power_loss;
mod reconnect_figure;
mod reload_cluster;
mod reload_jetstream;
mod reload_routes;
mod report_cli;
mod report_connections_cli;
mod rolling;
mod route_dialing;
mod route_port_input;
mod route_security;
mod route_stall;
mod route_wire;
mod scale;
mod server_removed;
mod stepdown_dedupe;
mod stepdown_lapsed;
mod stepdown_publish;
mod stepdown_queued;
mod stepdown_reads;
mod support;
mod uncommitted_reads;
mod wiped;
mod withdrawn_interest;

/// The switch for the compositions with our server in them. Flip to `true` when rnats routes
/// land and these tests pass on main (`RNATS_CLUSTER_OURS=1 cargo test -p parity --test
/// cluster` runs them before that).
pub const OURS_ROUTES_READY: bool = true;
