//! Black-box tests: jetstream. Each module is one concern; helpers live in test-harness.

mod power_loss;
mod read_only_store;
mod sequence_high_water;
