//! Black-box tests: jetstream. Each module is one concern; helpers live in test-harness.
