//! nats-store (skeleton; filled in by its issue).
