//! Black-box tests: core. Each module is one concern; helpers live in test-harness.

mod accounts;
mod accounts_imports;
mod auth_bcrypt;
mod auth_nkeys;
mod auth_queue_permissions;
mod auth_wire;
mod binary_process;
mod clients;
mod config_check;
mod config_syntax;
mod connection_storm;
mod ipv6;
mod mappings;
mod metrics;
mod monitor;
mod monitor_http;
mod process;
mod reload;
mod signal;
mod slow_consumer;
mod startup_errors;
mod system_account;
mod tls;
mod user_info;
mod wire;
