//! nats-server configuration text through our parser and option mapping: no panic, no hang,
//! every refusal a `ConfigError` (with a position inside the text for syntax errors).

#![no_main]

use libfuzzer_sys::fuzz_target;
use nats_server::config::options::apply_items;
use nats_server::config::{parser, Options};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Includes resolve beside this (absent) file: they fail as a missing file would.
    let file = Path::new("/nonexistent/rnats-fuzz/fuzz.conf");
    let items = match parser::parse_str(text, file) {
        Ok(items) => items,
        Err(error) => {
            if error.syntax {
                assert!(error.line <= text.lines().count() + 1, "{error:?}");
            }
            let _ = error.to_string();
            return;
        }
    };
    let mut options = Options::default();
    if apply_items(&mut options, &items).is_ok() {
        let _ = options.validate();
    }
});
