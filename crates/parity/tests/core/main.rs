//! Black-box tests: core. Each module is one concern; helpers live in test-harness.
