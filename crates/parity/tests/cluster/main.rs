//! Black-box tests: cluster. Each module is one concern; helpers live in test-harness.
