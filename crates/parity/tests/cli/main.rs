//! Black-box tests: cli. Each module is one concern; helpers live in test-harness.
