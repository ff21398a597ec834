//! Test helpers: store factories shared by the integration tests.
#![allow(dead_code)]

use nats_store::{MemStore, StreamStore, StreamStoreConfig};

/// Makes fresh stores for a test.
pub trait Factory {
    fn create(&self, config: StreamStoreConfig) -> Box<dyn StreamStore>;
}

pub struct MemFactory;

impl Factory for MemFactory {
    fn create(&self, config: StreamStoreConfig) -> Box<dyn StreamStore> {
        Box::new(MemStore::new(config))
    }
}
