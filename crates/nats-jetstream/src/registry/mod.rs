//! One account's streams by name: create (with the checks that involve other streams and
//! the account's limits and resources, `limits.rs`), update, delete, lookup, and recovery
//! from disk at start-up.
//! Called by the `$JS.API` handlers and [`crate::JetStream::start`]; callable from anything
//! that changes streams (a replicated assignment as well as an API request). Knows nothing of
//! the API: its direct-get responders are handed in as a function.

pub(crate) mod beside;
mod limits;
mod replicated;
mod scale;
mod subject_index;

use crate::consumer::Consumers;
use crate::resources::{Reservations, Usage};
use crate::stream::{self, storage, IngestContext, Stream, StreamCommand};
use crate::subject;
use crate::{JetStreamConfig, Transport};
use jetstream_api::{errors, ApiError, StorageType, StreamConfig};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use subject_index::SubjectIndex;
use tokio::sync::oneshot;

/// One stream and its consumers.
struct Entry {
    stream: Arc<Stream>,
    consumers: Arc<Consumers>,
}

pub(crate) use crate::resources::ResourceLimits;
pub(crate) use limits::tier_name;

/// The account's streams and what creating, recovering and stopping one needs: the store
/// directory, the server's JetStream config, the account limits and usage, and core routing
/// (for each stream's subscriptions and its direct-get responders).
pub(crate) struct Registry {
    streams: parking_lot::RwLock<BTreeMap<String, Entry>>,
    /// Every registered stream's subjects, for the overlap check.
    subjects: Mutex<SubjectIndex>,
    pub config: JetStreamConfig,
    pub transport: Arc<dyn Transport>,
    /// The account whose streams these are.
    pub account_name: String,
    /// `<store_dir>/jetstream/<account>`: where this account's streams live.
    account_directory: PathBuf,
    /// The server's limits.
    pub limits: Arc<ResourceLimits>,
    /// The account's own JetStream limits (`-1`: none; the server's apply) and its JWT's
    /// tiers (empty: flat limits); replaced whole by an account JWT update
    /// ([`Registry::set_account_limits`]).
    account_limits: parking_lot::RwLock<AccountJetStreamLimits>,
    /// Bytes the account stores (counted in the server's usage too).
    pub usage: Arc<Usage>,
    /// Bytes reserved by `max_bytes` over every account of the server.
    reservations: Arc<Reservations>,
    /// Serialises create/update/delete of streams and consumers so overlap and reservation
    /// checks see a stable registry.
    pub admin_lock: tokio::sync::Mutex<()>,
    /// Direct-get subscriptions per stream name.
    direct_subscriptions: Mutex<HashMap<String, Vec<u64>>>,
    /// Subscribes a stream's `DIRECT.GET` responders (the API layer's, handed down at start
    /// so the registry does not import the API).
    subscribe_direct_get: DirectGetSubscriber,
    /// Where the registry is in its stop (written under `admin_lock`): see [`Closing`].
    closing: std::sync::atomic::AtomicU8,
}

/// A registry's stop, in steps (`Registry::closing`): open, then closed to new creations
/// ([`Registry::close_to_creations`]: the creations in flight beside one another still join
/// it), then stopped ([`Registry::stop_all_streams`]: a creation finishing now is refused).
/// Without it a creation the admin thread was serving at a shutdown, or one in flight beside
/// others, could start its stream after every stream was stopped: a stream of a stopped
/// JetStream taking publishes, its store never closed (issue 21, session 32).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[repr(u8)]
pub(crate) enum Closing {
    Open = 0,
    ToCreations = 1,
    Stopped = 2,
}

/// Subscribes one stream's direct-get responders; returns the subscription ids.
/// An account's JetStream limits: the enforced ones and, for a JWT with tiers, every tier.
#[derive(Clone, Default)]
pub(crate) struct AccountJetStreamLimits {
    pub limits: jetstream_api::AccountLimits,
    pub tiers: crate::TieredLimits,
}

pub(crate) type DirectGetSubscriber = fn(&Arc<Stream>, &Arc<dyn Transport>) -> Vec<u64>;

/// nats-server's check when a stream's `consumer_limits` change: a limit newly set (or
/// changed) that an existing consumer's own setting exceeds refuses the update, naming every
/// such consumer (sorted here; nats-server lists them in map order).
fn check_consumer_limits(
    old: &StreamConfig,
    new: &StreamConfig,
    consumers: &Consumers,
) -> Result<(), ApiError> {
    let inactive_threshold = new.consumer_limits.inactive_threshold.0;
    let max_ack_pending = new.consumer_limits.max_ack_pending;
    let changed = (inactive_threshold > 0
        && inactive_threshold != old.consumer_limits.inactive_threshold.0)
        || (max_ack_pending > 0 && max_ack_pending != old.consumer_limits.max_ack_pending);
    if !changed {
        return Ok(());
    }
    let mut violating: Vec<String> = consumers
        .all()
        .iter()
        .filter(|consumer| {
            let config = consumer.config.read();
            (inactive_threshold > 0 && config.inactive_threshold.0 > inactive_threshold)
                || (max_ack_pending > 0 && config.max_ack_pending > max_ack_pending)
        })
        .map(|consumer| consumer.name.clone())
        .collect();
    if violating.is_empty() {
        return Ok(());
    }
    violating.sort_unstable();
    Err(errors::STREAM_UPDATE.with_err(format!(
        "change to limits violates consumers: {}",
        violating.join(", ")
    )))
}

impl Registry {
    pub(crate) fn new(
        config: JetStreamConfig,
        account: crate::AccountSetup,
        store_root: PathBuf,
        server: &crate::resources::ServerResources,
        subscribe_direct_get: DirectGetSubscriber,
    ) -> Registry {
        let account_limits = account.limits;
        let usage = Arc::new(Usage::within(
            &server.usage,
            &account_limits,
            &account.tiers,
        ));
        Registry {
            streams: Default::default(),
            subjects: Default::default(),
            config,
            transport: account.transport,
            account_directory: store_root.join(&account.name),
            account_name: account.name,
            limits: server.limits.clone(),
            account_limits: parking_lot::RwLock::new(AccountJetStreamLimits {
                limits: account_limits,
                tiers: account.tiers,
            }),
            usage,
            reservations: server.reservations.clone(),
            admin_lock: tokio::sync::Mutex::new(()),
            direct_subscriptions: Mutex::new(HashMap::new()),
            subscribe_direct_get,
            closing: std::sync::atomic::AtomicU8::new(Closing::Open as u8),
        }
    }

    /// How far the registry is in its stop (read under `admin_lock` where it decides).
    pub(crate) fn closing(&self) -> Closing {
        match self.closing.load(std::sync::atomic::Ordering::Acquire) {
            0 => Closing::Open,
            1 => Closing::ToCreations,
            _ => Closing::Stopped,
        }
    }

    /// Moves the stop forward to `step` (never back), under the admin lock the caller holds.
    fn close_to(&self, step: Closing) {
        self.closing
            .fetch_max(step as u8, std::sync::atomic::Ordering::AcqRel);
    }

    /// The answer to a creation the stop refuses.
    fn refused_by_stop() -> ApiError {
        errors::STREAM_CREATE.with_err("JetStream is shutting down")
    }

    /// Whether a consumer may be created or its config changed now (called under `admin_lock`):
    /// not once a stop began (`Closing`). Consumers are created one at a time under the admin
    /// lock, so the stop's own taking of the lock ([`Registry::close_to_creations`]) waits for
    /// the creation in progress, which [`Registry::stop_all_streams`] then stops with its
    /// stream; a creation whose wait for the lock ends after the stop took it (the admin thread
    /// had taken it from its queue before the queues closed) is refused here. Without it such
    /// a creation started a consumer on a stream the stop had stopped: its delivery task and
    /// subscriptions serving pulls and acks of a stopped JetStream, its files made after the
    /// stream's store closed (issue 21, session 33).
    pub(crate) fn check_open_to_consumers(&self) -> Result<(), ApiError> {
        if self.closing() == Closing::Open {
            Ok(())
        } else {
            Err(errors::CONSUMER_CREATE.with_err("JetStream is shutting down"))
        }
    }

    /// No stream is created from now on (the creations already admitted beside one another
    /// still finish and join): the first step of a stop, before the caller waits for the
    /// creations in flight and then calls [`Registry::stop_all_streams`].
    pub(crate) async fn close_to_creations(&self) {
        let _guard = self.admin_lock.lock().await;
        self.close_to(Closing::ToCreations);
    }

    /// The account's JetStream limits now in force.
    pub(crate) fn account_limits(&self) -> jetstream_api::AccountLimits {
        self.account_limits.read().limits.clone()
    }

    /// The account's limits and tiers now in force (`$JS.API.INFO`).
    pub(crate) fn account_limits_and_tiers(&self) -> AccountJetStreamLimits {
        self.account_limits.read().clone()
    }

    /// Apply an account JWT update's limits: the next stream or consumer create and the next
    /// publish are checked against them (nats-server's `UpdateJetStreamLimits`; what is
    /// already stored stays).
    pub(crate) fn set_account_limits(
        &self,
        limits: jetstream_api::AccountLimits,
        tiers: crate::TieredLimits,
    ) {
        self.usage.set_limits(&limits, &tiers);
        *self.account_limits.write() = AccountJetStreamLimits { limits, tiers };
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<Stream>> {
        self.streams
            .read()
            .get(name)
            .map(|entry| entry.stream.clone())
    }

    /// Every stream, sorted by name.
    pub(crate) fn all(&self) -> Vec<Arc<Stream>> {
        self.streams
            .read()
            .values()
            .map(|entry| entry.stream.clone())
            .collect()
    }

    /// STREAM.LIST without a subject filter: how many streams there are and the page from
    /// `offset` (sorted by name), read under the map's lock without collecting every stream.
    pub(crate) fn streams_page(&self, offset: usize, limit: usize) -> (usize, Vec<Arc<Stream>>) {
        let streams = self.streams.read();
        let page = streams
            .values()
            .skip(offset)
            .take(limit)
            .map(|entry| entry.stream.clone())
            .collect();
        (streams.len(), page)
    }

    /// STREAM.NAMES without a subject filter: how many streams there are and the names of the
    /// page from `offset` (sorted), read under the map's lock without collecting every stream.
    pub(crate) fn names_page(&self, offset: usize, limit: usize) -> (usize, Vec<String>) {
        let streams = self.streams.read();
        let names = streams.keys().skip(offset).take(limit).cloned().collect();
        (streams.len(), names)
    }

    /// The consumers of `stream` (an empty set when that stream is no longer registered, so a
    /// request racing a delete finds none).
    pub(crate) fn consumers(&self, stream: &Stream) -> Arc<Consumers> {
        match self.streams.read().get(&stream.name) {
            Some(entry) if std::ptr::eq(&*entry.stream, stream) => entry.consumers.clone(),
            _ => Arc::default(),
        }
    }

    fn insert(&self, stream: Arc<Stream>) -> Arc<Consumers> {
        self.insert_with(stream, Consumers::default())
    }

    /// Registers `stream` with its (empty) consumer set.
    fn insert_with(&self, stream: Arc<Stream>, consumers: Consumers) -> Arc<Consumers> {
        let subjects = stream.config.read().subjects.clone();
        self.subjects.lock().set(&stream.name, &subjects);
        let consumers = Arc::new(consumers);
        self.streams.write().insert(
            stream.name.clone(),
            Entry {
                stream,
                consumers: consumers.clone(),
            },
        );
        consumers
    }

    fn remove(&self, name: &str) -> Option<(Arc<Stream>, Arc<Consumers>)> {
        self.subjects.lock().remove(name);
        self.streams
            .write()
            .remove(name)
            .map(|entry| (entry.stream, entry.consumers))
    }

    fn entries(&self) -> Vec<(Arc<Stream>, Arc<Consumers>)> {
        self.streams
            .read()
            .values()
            .map(|entry| (entry.stream.clone(), entry.consumers.clone()))
            .collect()
    }
}

impl stream::StreamLookup for Registry {
    fn stream(&self, name: &str) -> Option<Arc<Stream>> {
        self.get(name)
    }
}

/// Whether `candidate`'s subjects overlap any other stream's (looked up in the registry's
/// index of every stream's subjects, so the cost grows with the candidate's subjects only).
fn overlaps_other_stream(registry: &Registry, candidate: &StreamConfig) -> bool {
    registry
        .subjects
        .lock()
        .overlaps_other(&candidate.name, &candidate.subjects)
}

/// nats-server's source cycle check: following sources and mirrors from `candidate` leads
/// back to a stream already visited (for sources: only when the subjects really loop).
fn forms_cycle(registry: &Registry, candidate: &StreamConfig) -> bool {
    let mut to_visit = vec![candidate.clone()];
    let mut visited = std::collections::HashSet::new();
    while let Some(config) = to_visit.pop() {
        visited.insert(config.name.clone());
        for source in config
            .sources
            .iter()
            .filter(|source| source.external.is_none())
        {
            if visited.contains(&source.name) {
                let loops = source.filter_subject.is_empty()
                    || config
                        .subjects
                        .iter()
                        .any(|own| subject::overlaps(own, &source.filter_subject));
                if loops {
                    return true;
                }
            } else if let Some(origin) = registry.get(&source.name) {
                to_visit.push(origin.config());
            }
        }
        if let Some(mirror) = config
            .mirror
            .as_ref()
            .filter(|mirror| mirror.external.is_none())
        {
            if visited.contains(&mirror.name) {
                return true;
            }
            if let Some(origin) = registry.get(&mirror.name) {
                to_visit.push(origin.config());
            }
        }
    }
    false
}

/// Bytes reserved by `max_bytes` of the streams of one storage type (nats-server reserves a
/// stream's max_bytes at create).
fn reserved(registry: &Registry, storage: StorageType, except: &str, tier: Option<&str>) -> i64 {
    registry
        .all()
        .iter()
        .filter(|existing| existing.name != except)
        .map(|existing| {
            let config = existing.config.read();
            let in_tier = tier.is_none_or(|tier| limits::tier_name(config.replicas) == tier);
            if in_tier && config.storage == storage && config.max_bytes > 0 {
                config.max_bytes
            } else {
                0
            }
        })
        .sum()
}

/// Account-wide usage, summed over streams.
#[derive(Default)]
pub(crate) struct Totals {
    pub streams: u64,
    pub consumers: u64,
    pub messages: u64,
    pub bytes: u64,
    pub memory: u64,
    pub storage: u64,
    pub reserved_memory: u64,
    pub reserved_storage: u64,
}

impl Registry {
    pub(crate) fn totals(&self) -> Totals {
        let mut totals = Totals {
            memory: self.usage.memory().max(0) as u64,
            storage: self.usage.storage().max(0) as u64,
            ..Default::default()
        };
        for stream in self.all() {
            let config = stream.config.read().clone();
            let state = stream.store.state();
            totals.streams += 1;
            totals.consumers += stream.interest.count() as u64;
            totals.messages += state.msgs;
            totals.bytes += state.bytes;
            if config.max_bytes > 0 {
                match config.storage {
                    StorageType::Memory => totals.reserved_memory += config.max_bytes as u64,
                    StorageType::File => totals.reserved_storage += config.max_bytes as u64,
                }
            }
        }
        totals
    }

    /// The consumers this server runs: every consumer of the streams whose publishes it takes
    /// (a stream's consumers run on its leader) and the ephemerals it still runs of a
    /// replicated stream it no longer leads (consumers not in the stream's group). What it
    /// reports to the other servers of a cluster, so the meta leader counts every consumer
    /// once, as nats-server counts the meta group's consumer assignments. Each counts in the
    /// tier of its replica count (nats-server's
    /// `ConsumerConfig.replicas`: the stream's when unset or larger, one for an ephemeral of a
    /// limits stream that names none).
    pub(crate) fn led_consumers(&self) -> crate::engine::cluster_usage::ConsumerCounts {
        let mut counts = crate::engine::cluster_usage::ConsumerCounts::default();
        let streams: Vec<(Arc<Stream>, Arc<Consumers>)> = self
            .streams
            .read()
            .values()
            .map(|entry| (entry.stream.clone(), entry.consumers.clone()))
            .collect();
        for (stream, consumers) in streams {
            if stream.stopped.load(std::sync::atomic::Ordering::Acquire) {
                continue;
            }
            let leads = stream.takes_publishes();
            let (stream_replicas, limits) = {
                let config = stream.config.read();
                (
                    config.replicas,
                    config.retention == jetstream_api::RetentionPolicy::Limits,
                )
            };
            for consumer in consumers.all() {
                if !leads && consumer.replication.is_some() {
                    continue;
                }
                let (replicas, durable) = {
                    let config = consumer.config.read();
                    (config.replicas, !config.durable_name.is_empty())
                };
                let replicas = if replicas == 0 || replicas > stream_replicas {
                    if !durable && limits && replicas == 0 {
                        1
                    } else {
                        stream_replicas
                    }
                } else {
                    replicas
                };
                counts.total += 1;
                counts.tiers[(replicas.clamp(1, crate::TIERS as i64) - 1) as usize] += 1;
            }
        }
        counts
    }

    /// Usage per replica tier (`R1`, `R3`: nats-server's tier names), for an account with
    /// tiered limits: each stream, its consumers, bytes and reservation count in its tier.
    pub(crate) fn tier_totals(&self) -> std::collections::BTreeMap<String, Totals> {
        let mut tiers = std::collections::BTreeMap::<String, Totals>::new();
        for stream in self.all() {
            let config = stream.config.read().clone();
            let state = stream.store.state();
            let tier = tiers.entry(limits::tier_name(config.replicas)).or_default();
            tier.streams += 1;
            tier.consumers += stream.interest.count() as u64;
            tier.messages += state.msgs;
            tier.bytes += state.bytes;
            let reserved = config.max_bytes.max(0) as u64;
            match config.storage {
                StorageType::Memory => {
                    tier.memory += state.bytes;
                    tier.reserved_memory += reserved;
                }
                StorageType::File => {
                    tier.storage += state.bytes;
                    tier.reserved_storage += reserved;
                }
            }
        }
        tiers
    }

    /// The registry as mirrors and sources see it: a weak lookup of origins by name.
    fn stream_lookup(self: &Arc<Self>) -> std::sync::Weak<dyn stream::StreamLookup> {
        let registry: Arc<dyn stream::StreamLookup> = self.clone();
        Arc::downgrade(&registry)
    }

    /// Hooks run when a stream starts (create or recovery) and before it stops.
    fn on_stream_started(self: &Arc<Self>, stream: &Arc<Stream>, consumers: &Arc<Consumers>) {
        self.refresh_direct_get(stream);
        if stream.config.read().mirror.is_some() {
            stream::spawn_mirror(stream, self.stream_lookup());
        }
        if !stream.config.read().sources.is_empty() {
            stream::sync_sources(stream, self.stream_lookup(), self.transport.clone());
        }
        crate::consumer::recover_in_domain(
            stream,
            consumers,
            &self.transport,
            self.config.domain.as_deref(),
        );
    }

    fn on_stream_stopping(&self, stream: &Arc<Stream>) {
        if let Some(ids) = self.direct_subscriptions.lock().remove(&stream.name) {
            for id in ids {
                self.transport.unsubscribe(id);
            }
        }
    }

    /// Direct-get subscriptions exist exactly while the stream has `allow_direct`.
    fn refresh_direct_get(&self, stream: &Arc<Stream>) {
        let allow = stream.config.read().allow_direct;
        let mut subscriptions = self.direct_subscriptions.lock();
        match (allow, subscriptions.contains_key(&stream.name)) {
            (true, false) => {
                let ids = (self.subscribe_direct_get)(stream, &self.transport);
                subscriptions.insert(stream.name.clone(), ids);
            }
            (false, true) => {
                for id in subscriptions.remove(&stream.name).unwrap_or_default() {
                    self.transport.unsubscribe(id);
                }
            }
            _ => {}
        }
    }

    fn ingest_context(&self) -> IngestContext {
        IngestContext {
            transport: self.transport.clone(),
            sync_always: self.config.sync_interval == crate::SyncPolicy::Always,
            domain: self.config.domain.clone(),
            usage: self.usage.clone(),
            batch_limits: self.config.batch_limits,
        }
    }

    /// STREAM.CREATE after the request-level checks: returns the stream, whether it was
    /// created (false: an identical stream existed) and its creation's sync when still pending
    /// (a new file stream, or an identical one created moments ago): the caller runs it
    /// (`storage::sync_created`) before it confirms.
    pub(crate) async fn create_stream(
        self: &Arc<Self>,
        requested: &StreamConfig,
        pedantic: bool,
    ) -> Result<(Arc<Stream>, bool, Option<Arc<nats_store::CreationSync>>), ApiError> {
        self.create_stream_at(requested, pedantic, None).await
    }

    /// [`Registry::create_stream`] with the creation time given (a clustered stream keeps the
    /// time its assignment was made); `None`: now.
    pub(crate) async fn create_stream_at(
        self: &Arc<Self>,
        requested: &StreamConfig,
        pedantic: bool,
        created: Option<i64>,
    ) -> Result<(Arc<Stream>, bool, Option<Arc<nats_store::CreationSync>>), ApiError> {
        let config = stream::check_and_fill(requested, pedantic)?;
        if config.replicas > 1 {
            return Err(errors::STREAM_REPLICAS_NOT_SUPPORTED.to_error());
        }
        let mut config = stream::with_static_metadata(config);
        if let Some(origin) = config
            .mirror
            .as_ref()
            .and_then(|mirror| self.get(&mirror.name))
        {
            // A mirror serves direct gets when its origin does (nats-server inherits it).
            config.mirror_direct = origin.config.read().allow_direct;
        }
        let _guard = self.admin_lock.lock().await;
        if self.closing() != Closing::Open {
            return Err(Self::refused_by_stop());
        }
        if let Some(existing) = self.get(&config.name) {
            let current = existing.config();
            if current == config {
                let pending = existing.store.read().pending_creation();
                return Ok((existing, false, pending));
            }
            return Err(errors::STREAM_NAME_EXIST.to_error());
        }
        if overlaps_other_stream(self, &config) {
            return Err(errors::STREAM_SUBJECT_OVERLAP.to_error());
        }
        if forms_cycle(self, &config) {
            return Err(errors::STREAM_INVALID_CONFIG.with_err("detected cycle"));
        }
        self.check_account_limits(&config, None)?;
        let created = created.unwrap_or_else(crate::time_format::now_nanos);
        let mut store =
            storage::open_store(&self.account_directory, &config, self.config.sync_interval)
                .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
        if config.first_seq > 1 {
            store
                .compact(config.first_seq)
                .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
        }
        storage::save_metadata(&mut *store, &config, created)
            .and_then(|_| store.flush().map(|_| ()))
            .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
        let pending = store.pending_creation();
        let stream = Stream::start(config, created, store, self.ingest_context())
            .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
        self.reserve(&stream.config(), 1);
        let consumers = self.insert(stream.clone());
        self.on_stream_started(&stream, &consumers);
        Ok((stream, true, pending))
    }

    pub(crate) async fn update_stream(
        self: &Arc<Self>,
        requested: &StreamConfig,
        pedantic: bool,
    ) -> Result<Arc<Stream>, ApiError> {
        let _guard = self.admin_lock.lock().await;
        let stream = self
            .get(&requested.name)
            .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
        let old = stream.config();
        let mut requested = requested.clone();
        jetstream_api::metadata::set_static_stream_metadata(&mut requested);
        let config = stream::check_update(&old, &requested, pedantic)?;
        if overlaps_other_stream(self, &config) {
            return Err(errors::STREAM_SUBJECT_OVERLAP.to_error());
        }
        if config.sources != old.sources && forms_cycle(self, &config) {
            return Err(errors::STREAM_INVALID_CONFIG.with_err("detected cycle"));
        }
        self.check_account_limits(&config, Some(&old))?;
        check_consumer_limits(&old, &config, &self.consumers(&stream))?;
        let (reply, done) = oneshot::channel();
        stream.send(StreamCommand::UpdateConfig {
            config: Box::new(config.clone()),
            reply,
        });
        done.await
            .unwrap_or_else(|_| Err(errors::STREAM_UPDATE.with_err("stream stopped")))?;
        self.reserve(&old, -1);
        self.reserve(&config, 1);
        let subjects_changed = config.subjects != old.subjects;
        let direct_changed = config.allow_direct != old.allow_direct;
        let sources_changed = config.sources != old.sources;
        if subjects_changed {
            self.subjects.lock().set(&stream.name, &config.subjects);
        }
        *stream.config.write() = config;
        if sources_changed {
            stream::sync_sources(&stream, self.stream_lookup(), self.transport.clone());
        }
        if subjects_changed {
            stream.subscribe_subjects();
        }
        if direct_changed {
            self.refresh_direct_get(&stream);
        }
        Ok(stream)
    }

    pub(crate) async fn delete_stream(&self, name: &str) -> Result<(), ApiError> {
        let _guard = self.admin_lock.lock().await;
        let (stream, consumers) = self
            .remove(name)
            .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
        self.reserve(&stream.config(), -1);
        self.on_stream_stopping(&stream);
        crate::consumer::stop_all(&stream, &consumers, true).await;
        stream.stop(true).await;
        Ok(())
    }

    /// Re-open every stream found under the store directory.
    pub(crate) fn recover_streams(self: &Arc<Self>) -> Result<(), crate::JetStreamError> {
        let names = storage::stored_stream_names(&self.account_directory).map_err(|source| {
            crate::JetStreamError::StoreScan {
                path: storage::streams_directory(&self.account_directory),
                source,
            }
        })?;
        for name in names {
            match storage::recover_stream(&self.account_directory, &name, self.config.sync_interval)
            {
                Ok((store, metadata)) => {
                    let created = metadata.created.unix_nanos();
                    match Stream::start(metadata.config, created, store, self.ingest_context()) {
                        Ok(stream) => {
                            self.reserve(&stream.config(), 1);
                            let consumers = self.insert(stream.clone());
                            self.on_stream_started(&stream, &consumers);
                        }
                        Err(error) => {
                            tracing::error!(stream = %name, %error, "could not start recovered stream")
                        }
                    }
                }
                Err(reason) => {
                    tracing::warn!(stream = %name, %reason, "skipping stream directory that could not be recovered")
                }
            }
        }
        Ok(())
    }

    /// Stop taking publishes and direct gets at once (an account losing JetStream by a JWT
    /// update): every stream's subscriptions go; [`Registry::stop_all_streams`] stops them.
    pub(crate) fn withdraw_streams(&self) {
        for (stream, _) in self.entries() {
            self.on_stream_stopping(&stream);
            stream.unsubscribe_subjects();
        }
    }

    /// Stop every stream (graceful shutdown): queues drained, stores flushed and closed. A
    /// creation finishing after this is refused (see [`Closing`]).
    pub(crate) async fn stop_all_streams(&self) {
        let _guard = self.admin_lock.lock().await;
        self.close_to(Closing::Stopped);
        for (stream, consumers) in self.entries() {
            self.on_stream_stopping(&stream);
            crate::consumer::stop_all(&stream, &consumers, false).await;
            stream.stop(false).await;
        }
    }
}
