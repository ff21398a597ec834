//! The start-up check of a JetStream store directory, with nats-server's wording: the server
//! refuses to start JetStream on a directory it cannot write (read-only mount, wrong owner)
//! rather than start and serve none of its streams.
//!
//! Who calls it: the server binary before it starts JetStream. It knows only the file system.

use std::fs::{self, OpenOptions};
use std::path::Path;

use crate::error::StoreError;

/// Make sure `dir` (nats-server's `StoreDir`: the `jetstream` directory under the configured
/// store directory) exists, is a directory and takes a new file, as nats-server checks at start.
/// The errors read as nats-server's: `could not create storage directory - ...`,
/// `storage directory is not a directory`, `storage directory is not writable`.
pub fn check_store_directory(dir: &Path) -> Result<(), StoreError> {
    match fs::metadata(dir) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return fs::create_dir_all(dir).map_err(|error| {
                // Go's MkdirAll names the directory whose mkdir failed: the outermost one
                // still missing.
                let failed = dir
                    .ancestors()
                    .filter(|ancestor| !ancestor.as_os_str().is_empty() && !ancestor.exists())
                    .last()
                    .unwrap_or(dir);
                StoreError::Directory(format!(
                    "could not create storage directory - mkdir {}: {}",
                    failed.display(),
                    strerror(&error)
                ))
            });
        }
        Ok(metadata) if metadata.is_dir() => {}
        _ => {
            return Err(StoreError::Directory(
                "storage directory is not a directory".into(),
            ))
        }
    }
    let probe = dir.join(format!("_test_{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(file) => {
            drop(file);
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            // A probe left by a killed process of the same pid: it proves nothing either way.
            let _ = fs::remove_file(&probe);
            check_store_directory(dir)
        }
        Err(_) => Err(StoreError::Directory(
            "storage directory is not writable".into(),
        )),
    }
}

/// The system's text of an I/O error without Rust's ` (os error N)` suffix, lower-cased as Go
/// prints it (`read-only file system`).
fn strerror(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error") {
        Some(end) => &text[..end],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_a_missing_directory_and_accepts_a_writable_one() {
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path().join("store").join("jetstream");
        check_store_directory(&dir).expect("created");
        assert!(dir.is_dir());
        check_store_directory(&dir).expect("writable");
        assert_eq!(fs::read_dir(&dir).expect("list").count(), 0, "probe left");
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let temp = tempfile::tempdir().expect("tempdir");
        let file = temp.path().join("jetstream");
        fs::write(&file, b"").expect("write");
        let error = check_store_directory(&file).expect_err("a file");
        assert_eq!(error.to_string(), "storage directory is not a directory");
    }

    #[test]
    fn error_text_reads_as_go_prints_it() {
        let error = std::io::Error::from_raw_os_error(libc::EROFS);
        assert_eq!(strerror(&error), "read-only file system");
    }
}
