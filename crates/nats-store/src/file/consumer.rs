//! FileConsumerStore: a consumer's state in `consumers/<name>/state.bin` and its config blob in
//! `consumers/<name>/config.bin`, each replaced atomically (write temporary, rename).

use std::fs;
use std::path::{Path, PathBuf};

use crate::consumer::{ConsumerState, SequencePair};
use crate::error::StoreError;
use crate::traits::ConsumerStore;

use super::write_atomic;

const STATE_FILE: &str = "state.bin";
const CONFIG_FILE: &str = "config.bin";

/// A consumer's persisted state inside its stream's directory.
#[derive(Debug)]
pub struct FileConsumerStore {
    dir: PathBuf,
    sync: bool,
    config: Vec<u8>,
    state: ConsumerState,
    dirty: bool,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && name.len() <= 255
}

/// Consumer directories present under `consumers_dir`.
pub(crate) fn list_consumers(consumers_dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(consumers_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(StoreError::io(consumers_dir)(error)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(StoreError::io(consumers_dir))?;
        if entry.path().is_dir() {
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

impl FileConsumerStore {
    /// Open (or create) the store of consumer `name` under `consumers_dir`.
    pub fn open(consumers_dir: &Path, name: &str, sync: bool) -> Result<Self, StoreError> {
        if !valid_name(name) {
            return Err(StoreError::InvalidName(name.to_string()));
        }
        let dir = consumers_dir.join(name);
        fs::create_dir_all(&dir).map_err(StoreError::io(&dir))?;
        let state = match fs::read(dir.join(STATE_FILE)) {
            Ok(bytes) => ConsumerState::decode(&bytes)?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => ConsumerState::default(),
            Err(error) => return Err(StoreError::io(dir.join(STATE_FILE))(error)),
        };
        let config = match fs::read(dir.join(CONFIG_FILE)) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(error) => return Err(StoreError::io(dir.join(CONFIG_FILE))(error)),
        };
        Ok(FileConsumerStore {
            dir,
            sync,
            config,
            state,
            dirty: false,
        })
    }
}

impl ConsumerStore for FileConsumerStore {
    fn set_config(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        write_atomic(&self.dir.join(CONFIG_FILE), blob, true)?;
        self.config = blob.to_vec();
        Ok(())
    }

    fn config(&self) -> Vec<u8> {
        self.config.clone()
    }

    fn update_delivered(
        &mut self,
        consumer_seq: u64,
        stream_seq: u64,
        delivery_count: u64,
        timestamp: i64,
    ) -> Result<(), StoreError> {
        self.state
            .apply_delivered(consumer_seq, stream_seq, delivery_count, timestamp);
        self.dirty = true;
        Ok(())
    }

    fn update_acks(&mut self, consumer_seq: u64, stream_seq: u64) -> Result<(), StoreError> {
        self.state.apply_ack(consumer_seq, stream_seq);
        self.dirty = true;
        Ok(())
    }

    fn set_state(&mut self, state: ConsumerState) -> Result<(), StoreError> {
        self.state = state;
        self.dirty = true;
        Ok(())
    }

    fn state(&self) -> ConsumerState {
        self.state.clone()
    }

    fn delivered(&self) -> SequencePair {
        self.state.delivered
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        if !self.dirty {
            return Ok(());
        }
        write_atomic(&self.dir.join(STATE_FILE), &self.state.encode(), self.sync)?;
        self.dirty = false;
        Ok(())
    }

    fn delete(&mut self) -> Result<(), StoreError> {
        self.dirty = false;
        match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(StoreError::io(&self.dir)(error)),
        }
    }
}
