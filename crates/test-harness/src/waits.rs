//! Bounded waits on what a server does in the background (files it writes, log lines), and
//! listings of directories it changes meanwhile.

use std::path::Path;
use std::time::{Duration, Instant};

/// Ask `probe` (every 20 ms) until it gives a value; panics naming `what` after `bound`.
pub fn await_some<T>(what: &str, bound: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {bound:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The bytes of the files under `dir` (recursively) while a server may rename or remove them:
/// an entry gone between the listing and its metadata (a temporary file renamed into place, a
/// removed block) counts nothing; its replacement is in the listing or not, as at that moment.
pub fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(metadata) if metadata.is_dir() => bytes_under(&entry.path()),
            Ok(metadata) => metadata.len(),
            Err(_) => 0,
        })
        .sum()
}
