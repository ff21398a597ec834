//! nats-subject (skeleton; filled in by its issue).
