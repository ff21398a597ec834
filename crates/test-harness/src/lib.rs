//! test-harness (skeleton; filled in by its issue).
