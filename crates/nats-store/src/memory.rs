//! MemStore: the engine with a backend that keeps message bytes in a hash map.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use crate::config::StreamStoreConfig;
use crate::consumer::MemConsumerStore;
use crate::engine::{Backend, MessageRecord, Store, TtlIndex};
use crate::error::StoreError;
use crate::index::{MessageIndex, Slot};
use crate::traits::ConsumerStore;
use crate::types::StoredMessage;

/// A stream store kept entirely in memory.
pub type MemStore = Store<MemBackend>;

/// Message bytes of a [`MemStore`].
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct MemBackend {
    messages: HashMap<u64, (Bytes, Bytes)>,
    metadata: Vec<u8>,
    consumers: BTreeMap<String, MemConsumerStore>,
}

impl Store<MemBackend> {
    /// An empty in-memory store.
    pub fn new(config: StreamStoreConfig) -> MemStore {
        Store::from_parts(
            config,
            MessageIndex::new(1),
            TtlIndex::default(),
            MemBackend::default(),
        )
    }
}

impl Backend for MemBackend {
    fn message_size(&self, subject_len: usize, headers_len: usize, payload_len: usize) -> u64 {
        // nats-server memStoreMsgSize.
        (subject_len + headers_len + payload_len + 16) as u64
    }

    fn append(&mut self, record: &MessageRecord<'_>) -> Result<(u32, u32), StoreError> {
        self.messages.insert(
            record.seq,
            (
                Bytes::copy_from_slice(record.headers),
                Bytes::copy_from_slice(record.payload),
            ),
        );
        Ok((0, 0))
    }

    fn append_skip(&mut self, _seq: u64, _count: u64) -> Result<(), StoreError> {
        Ok(())
    }

    fn read(&mut self, seq: u64, slot: &Slot, subject: &str) -> Result<StoredMessage, StoreError> {
        let (headers, payload) = self.messages.get(&seq).ok_or(StoreError::NotFound)?;
        Ok(StoredMessage {
            subject: subject.to_string(),
            headers: headers.clone(),
            payload: payload.clone(),
            seq,
            timestamp: slot.timestamp,
        })
    }

    fn removed(&mut self, seq: u64, _slot: &Slot, _erase: bool) -> Result<(), StoreError> {
        self.messages.remove(&seq);
        Ok(())
    }

    fn floor(&mut self, first_seq: u64, _index: &MessageIndex) -> Result<(), StoreError> {
        self.messages.retain(|seq, _| *seq >= first_seq);
        Ok(())
    }

    fn flush(
        &mut self,
        _index: &mut MessageIndex,
        _ttls: &TtlIndex,
        _force_sync: bool,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    fn close(&mut self, _index: &MessageIndex, _ttls: &TtlIndex) -> Result<(), StoreError> {
        Ok(())
    }

    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        self.metadata = blob.to_vec();
        Ok(())
    }

    fn metadata(&self) -> &[u8] {
        &self.metadata
    }

    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError> {
        self.consumers.retain(|_, consumer| !consumer.is_deleted());
        let consumer = self.consumers.entry(name.to_string()).or_default();
        Ok(Box::new(consumer.clone()))
    }

    fn consumer_names(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .consumers
            .iter()
            .filter(|(_, consumer)| !consumer.is_deleted())
            .map(|(name, _)| name.clone())
            .collect())
    }

    fn delete(&mut self) -> Result<(), StoreError> {
        self.messages.clear();
        self.consumers.clear();
        Ok(())
    }
}
