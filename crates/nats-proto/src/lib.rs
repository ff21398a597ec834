//! nats-proto (skeleton; filled in by its issue).
