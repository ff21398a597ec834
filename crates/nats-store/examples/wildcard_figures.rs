//! Wildcard filters on a FileStore with 1M distinct subjects (`s.<n>`, one message each): the
//! cost of what creating a wildcard-filtered consumer asks the store (pending count, next
//! message), the first time and again, plus the same after a reopen.
//!
//! `cargo run --release -p nats-store --example wildcard_figures [-- DIR]` (default: a temp dir;
//! removed at the end unless WILDCARD_FIGURES_KEEP is set).

use std::path::PathBuf;
use std::time::Instant;

use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig};

fn timed<T>(label: &str, work: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = work();
    println!("{label}: {:.2} ms", start.elapsed().as_secs_f64() * 1e3);
    value
}

fn queries(store: &mut FileStore, count: u64, when: &str) {
    let wide = vec!["s.*".to_string()];
    let narrow = vec!["*.500000".to_string()];
    let pending = timed(&format!("{when}: first num_pending(s.*, 1)"), || {
        store.num_pending_matching(&wide, 1, false)
    });
    assert_eq!(pending, count);
    let pending = timed(&format!("{when}: second num_pending(s.*, 1)"), || {
        store.num_pending_matching(&wide, 1, false)
    });
    assert_eq!(pending, count);
    let pending = timed(&format!("{when}: num_pending(s.*, mid-stream)"), || {
        store.num_pending_matching(&wide, count / 2, false)
    });
    assert_eq!(pending, count - count / 2 + 1);
    let next = timed(&format!("{when}: load_next_matching(s.*, 1)"), || {
        store.load_next_matching(&wide, 1).expect("load next")
    });
    assert_eq!(next.map(|message| message.seq), Some(1));
    let pending = timed(&format!("{when}: num_pending(*.500000, 1)"), || {
        store.num_pending_matching(&narrow, 1, false)
    });
    assert_eq!(pending, 1);
    let next = timed(&format!("{when}: load_next_matching(*.500000, 1)"), || {
        store.load_next_matching(&narrow, 1).expect("load next")
    });
    assert_eq!(next.map(|message| message.seq), Some(500_001));
}

fn main() {
    let base: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("wildcard-figures-{}", std::process::id()))
        });
    let _ = std::fs::remove_dir_all(&base);
    let count = 1_000_000u64;
    let open = || {
        FileStore::open(
            &base,
            StreamStoreConfig::default(),
            FileStoreOptions::default(),
        )
        .expect("open store")
    };
    let mut store = open();
    timed(&format!("store {count} msgs on {count} subjects"), || {
        for index in 0..count {
            store
                .store_msg(&format!("s.{index}"), b"", b"x", None)
                .expect("store");
            if index % 1000 == 999 {
                store.flush().expect("flush");
            }
        }
        store.flush().expect("flush");
    });
    println!(
        "subject index: {:.1} bytes/subject",
        store.subject_index_bytes() as f64 / count as f64
    );
    queries(&mut store, count, "fresh");
    store.close().expect("close");
    let mut store = timed("reopen after clean close", open);
    queries(&mut store, count, "reopened");
    store.close().expect("close");
    // Profiling aid: keep the directory for `store_figures` with STORE_FIGURES_OPEN_ONLY.
    if std::env::var_os("WILDCARD_FIGURES_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&base);
    }
}
