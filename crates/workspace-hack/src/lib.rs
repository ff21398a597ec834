//! Build-time only: no code. Every workspace crate depends on this one so that a dependency is
//! compiled with the same features whichever packages a command selects (`cargo test -p parity`,
//! `cargo build -p nats-server`, `cargo clippy -p nats-store`, the whole workspace): without it
//! each selection unifies features differently and recompiles tokio, rustls, async-nats and
//! everything above them. Managed by `cargo hakari` (config in `.config/hakari.toml`): after
//! changing a dependency or its features, run `cargo hakari generate` (`cargo install
//! cargo-hakari` once).
