//! Black-box tests: core. Each module is one concern; helpers live in test-harness.

mod config_check;
mod config_syntax;
mod ipv6;
mod process;
mod signal;
mod startup_errors;
