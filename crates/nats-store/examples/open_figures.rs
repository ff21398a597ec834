//! Open time of a large FileStore: fill a stream directory with 4 KiB messages over 1000
//! subjects (the shape of bench/curves' restart curve), then time `FileStore::open` after a clean
//! close and after a simulated crash, with what recovery read.
//!
//! ```sh
//! cargo run --release -p nats-store --example open_figures -- fill DIR BYTES   # append BYTES of payload
//! cargo run --release -p nats-store --example open_figures -- open DIR         # open, report, close
//! cargo run --release -p nats-store --example open_figures -- crash DIR        # open, append, abandon
//! ```
//!
//! `fill` appends to whatever DIR holds (a stream directory a server created keeps its metadata,
//! so the server recovers the filled stream). `open` closes the store again (writing the index
//! snapshot); `crash` appends 1000 messages and gives the store up without closing it, as kill -9
//! would, so the next `open` is a recovery.

use std::path::Path;
use std::time::Instant;

use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig};

const PAYLOAD: usize = 4096;
const SUBJECTS: u64 = 1000;

fn open(dir: &Path) -> FileStore {
    let started = Instant::now();
    let store = FileStore::open(
        dir,
        StreamStoreConfig::default(),
        FileStoreOptions::default(),
    )
    .unwrap_or_else(|error| panic!("open {}: {error}", dir.display()));
    let elapsed = started.elapsed();
    let state = store.state();
    println!(
        "open: {:.3} s, {} messages, {} bytes, {} blocks; {:?}",
        elapsed.as_secs_f64(),
        state.msgs,
        state.bytes,
        store.block_count(),
        store.recovery_report()
    );
    store
}

fn append(store: &mut FileStore, count: u64) {
    let payload = vec![0x5au8; PAYLOAD];
    let first = store.state().last_seq;
    let started = Instant::now();
    for index in 0..count {
        let subject = format!("curves.rst.{}", (first + index) % SUBJECTS);
        store
            .store_msg(&subject, &[], &payload, None)
            .expect("append");
        if index % 256 == 255 {
            store.flush().expect("flush");
        }
    }
    store.flush().expect("flush");
    println!(
        "appended {count} messages in {:.3} s",
        started.elapsed().as_secs_f64()
    );
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: open_figures fill DIR BYTES | open DIR | crash DIR";
    let (Some(command), Some(dir)) = (arguments.first(), arguments.get(1)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let dir = Path::new(dir);
    match command.as_str() {
        "fill" => {
            let bytes: u64 = arguments
                .get(2)
                .and_then(|text| text.parse().ok())
                .unwrap_or_else(|| panic!("{usage}"));
            let mut store = open(dir);
            append(&mut store, bytes / PAYLOAD as u64);
            let started = Instant::now();
            store.close().expect("close");
            println!("close: {:.3} s", started.elapsed().as_secs_f64());
        }
        "open" => {
            let mut store = open(dir);
            let started = Instant::now();
            store.close().expect("close");
            println!("close: {:.3} s", started.elapsed().as_secs_f64());
        }
        "crash" => {
            let mut store = open(dir);
            append(&mut store, 1000);
            store.abandon();
        }
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    }
}
