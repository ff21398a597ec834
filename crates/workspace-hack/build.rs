// A build script makes cargo honour this crate's build-dependencies (host-side feature unification).
fn main() {}
