//! Unique ids as nats-server makes them (NUIDs): advisory ids, ephemeral consumer names, atomic
//! batch ids. A leaf every layer may call; it knows nothing of streams or consumers.

use jetstream_api::advisory::Nuid;
use parking_lot::Mutex;

static IDS: Mutex<Option<Nuid>> = Mutex::new(None);

/// The next NUID of this process, as nats-server's.
pub(crate) fn next_id() -> String {
    let mut ids = IDS.lock();
    let generator = ids.get_or_insert_with(|| {
        let seed = crate::time_format::now_nanos() as u64 ^ u64::from(std::process::id()) << 32;
        Nuid::new(seed)
    });
    generator.next_id()
}
