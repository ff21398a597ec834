//! [`JetStream`]: the handle the core server holds. Owns the account-wide state (limits, API
//! counters, the stream registry) and the `$JS.API.>` subscription. Cheap to clone: every clone
//! shares one `Arc`'d engine, so the server may keep one for monitoring and one for shutdown.

use crate::api::queue::{ApiQueues, REQUEST_QUEUE_LIMIT};
use crate::error::JetStreamError;
use crate::level::API_LEVEL;
use crate::registry::Registry;
use crate::resources::{self, Usage};
use crate::stream::Stream;
use crate::{JetStreamConfig, Message, ServerIdentity, SyncPolicy, Transport};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What the API task listens on: all of `$JS.API.>` except `DIRECT.GET` (served by per-stream
/// subscriptions that exist only while a stream allows direct gets) and `CONSUMER.MSG.NEXT`
/// (served by each pull consumer). nats-server's import leaves those two out as well, so a
/// request for a stream or consumer that is not there finds no responder and the client gets
/// the `503` no-responders status at once instead of waiting for a timeout.
const API_SUBSCRIPTIONS: &[&str] = &[
    "$JS.API.*",
    "$JS.API.STREAM.>",
    "$JS.API.ACCOUNT.>",
    "$JS.API.META.>",
    "$JS.API.SERVER.>",
    "$JS.API.CONSUMER.*",
    "$JS.API.CONSUMER.CREATE.>",
    "$JS.API.CONSUMER.DURABLE.>",
    "$JS.API.CONSUMER.NAMES.>",
    "$JS.API.CONSUMER.LIST.>",
    "$JS.API.CONSUMER.INFO.>",
    "$JS.API.CONSUMER.DELETE.>",
    "$JS.API.CONSUMER.PAUSE.>",
    "$JS.API.CONSUMER.UNPIN.>",
    "$JS.API.CONSUMER.RESET.>",
    "$JS.API.CONSUMER.LEADER.>",
];
/// nats-server's default `sync_interval` (2 minutes), in nanoseconds.
const DEFAULT_SYNC_INTERVAL_NANOS: u64 = 120_000_000_000;
/// nats-server's default `max_consumers` per stream for an account without explicit limits.
pub(crate) const DEFAULT_MAX_CONSUMERS: i64 = 1000;

/// The JetStream subsystem of one server. Clone it freely (it is an `Arc` inside).
#[derive(Clone)]
pub struct JetStream {
    pub(crate) engine: Arc<Engine>,
}

/// Account resource limits in effect (bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResourceLimits {
    pub max_memory: i64,
    pub max_store: i64,
}

pub(crate) struct ApiCounters {
    pub total: AtomicU64,
    pub errors: AtomicU64,
}

pub(crate) struct Engine {
    pub config: JetStreamConfig,
    pub identity: ServerIdentity,
    pub transport: Arc<dyn Transport>,
    /// `<store_dir>/jetstream`.
    pub store_root: PathBuf,
    pub limits: ResourceLimits,
    pub usage: Arc<Usage>,
    pub api: ApiCounters,
    pub registry: Arc<Registry>,
    /// Serialises create/update/delete so overlap and reservation checks see a stable registry.
    pub admin_lock: tokio::sync::Mutex<()>,
    subscriptions: Mutex<Vec<u64>>,
    /// Direct-get subscriptions per stream name.
    direct_subscriptions: Mutex<HashMap<String, Vec<u64>>>,
    api_queues: Mutex<Option<Arc<ApiQueues>>>,
}

impl JetStream {
    /// Create the store directory, compute limits, subscribe `$JS.API.>` and restore streams.
    pub async fn start(
        config: JetStreamConfig,
        identity: ServerIdentity,
        transport: Arc<dyn Transport>,
    ) -> Result<JetStream, JetStreamError> {
        let parent = match &config.store_dir {
            Some(dir) => dir.clone(),
            None => std::env::temp_dir().join("nats"),
        };
        let store_root = parent.join("jetstream");
        std::fs::create_dir_all(&store_root).map_err(|source| JetStreamError::StoreDirectory {
            path: store_root.clone(),
            source,
        })?;
        let limits = ResourceLimits {
            max_memory: config
                .max_memory
                .filter(|limit| *limit >= 0)
                .unwrap_or_else(resources::default_max_memory),
            max_store: config
                .max_store
                .filter(|limit| *limit >= 0)
                .unwrap_or_else(|| resources::default_max_store(&store_root)),
        };
        let engine = Arc::new(Engine {
            config,
            identity,
            transport,
            store_root,
            limits,
            usage: Arc::new(Usage::new(limits.max_memory, limits.max_store)),
            api: ApiCounters {
                total: AtomicU64::new(0),
                errors: AtomicU64::new(0),
            },
            registry: Arc::default(),
            admin_lock: tokio::sync::Mutex::new(()),
            subscriptions: Mutex::new(Vec::new()),
            direct_subscriptions: Mutex::new(HashMap::new()),
            api_queues: Mutex::new(None),
        });
        engine.recover_streams()?;
        let jetstream = JetStream { engine };
        jetstream.start_api()?;
        Ok(jetstream)
    }

    /// Subscribe `$JS.API`: the handlers only enqueue for the API threads (`api/queue.rs`).
    fn start_api(&self) -> Result<(), JetStreamError> {
        let queues = ApiQueues::start(
            &self.engine,
            tokio::runtime::Handle::current(),
            REQUEST_QUEUE_LIMIT,
        )
        .map_err(JetStreamError::ApiThreads)?;
        *self.engine.api_queues.lock() = Some(queues.clone());
        for subject in API_SUBSCRIPTIONS {
            let queues = queues.clone();
            let engine = Arc::downgrade(&self.engine);
            let id = self.engine.transport.subscribe(
                subject,
                None,
                Arc::new(move |message: Message| {
                    // Gone during shutdown: dropping the request is right.
                    if let Some(engine) = engine.upgrade() {
                        queues.enqueue(&engine, message);
                    }
                }),
            );
            self.engine.subscriptions.lock().push(id);
        }
        Ok(())
    }

    /// The `---- JETSTREAM ----` section nats-server logs at start-up, one log line per entry
    /// (logo included; the caller logs "Starting JetStream" before it).
    pub fn banner_lines(&self) -> Vec<String> {
        let engine = &self.engine;
        let mut lines: Vec<String> = [
            r"    _ ___ _____ ___ _____ ___ ___   _   __  __",
            r" _ | | __|_   _/ __|_   _| _ \ __| /_\ |  \/  |",
            r"| || | _|  | | \__ \ | | |   / _| / _ \| |\/| |",
            r" \__/|___| |_| |___/ |_| |_|_\___/_/ \_\_|  |_|",
            "",
            "         https://docs.nats.io/jetstream",
            "",
            "---------------- JETSTREAM ----------------",
        ]
        .iter()
        .map(|line| line.to_string())
        .collect();
        lines.push(format!("  Strict:          {}", engine.strict()));
        lines.push(format!(
            "  Max Memory:      {}",
            resources::friendly_bytes(engine.limits.max_memory)
        ));
        lines.push(format!(
            "  Max Storage:     {}",
            resources::friendly_bytes(engine.limits.max_store)
        ));
        lines.push(format!(
            "  Store Directory: \"{}\"",
            engine.store_root.display()
        ));
        if let Some(domain) = &engine.config.domain {
            lines.push(format!("  Domain:          {domain}"));
        }
        lines.push(format!("  API Level:       {API_LEVEL}"));
        lines.push("-------------------------------------------".to_string());
        lines
    }

    /// The body of `/jsz` (no account details).
    pub fn jsz(&self) -> Value {
        let engine = &self.engine;
        let mut body = serde_json::Map::new();
        for (key, value) in engine.stats_json() {
            body.insert(key, value);
        }
        body.insert("server_id".into(), json!(engine.identity.server_id));
        body.insert("now".into(), json!(crate::time_format::now_rfc3339()));
        body.insert("config".into(), engine.config_json());
        body.insert("limits".into(), engine.limits_json());
        let totals = engine.totals();
        body.insert("streams".into(), json!(totals.streams));
        body.insert("consumers".into(), json!(totals.consumers));
        body.insert("messages".into(), json!(totals.messages));
        body.insert("bytes".into(), json!(totals.bytes));
        body.insert("total".into(), json!(1));
        Value::Object(body)
    }

    /// The names of the streams, sorted (for `/healthz`'s stream check).
    pub fn stream_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .engine
            .registry
            .all()
            .iter()
            .map(|stream| stream.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Every stream's info (as `STREAM.LIST` shows it) with its consumers' infos when asked,
    /// sorted by stream name: the per-stream and per-consumer figures of `/jsz` and
    /// `/metrics`.
    pub fn stream_details(
        &self,
        with_consumers: bool,
    ) -> Vec<(jetstream_api::StreamInfo, Vec<jetstream_api::ConsumerInfo>)> {
        let engine = &self.engine;
        let mut streams = engine.registry.all();
        streams.sort_by(|first, second| first.name.cmp(&second.name));
        streams
            .iter()
            .map(|stream| {
                let (info, _) = engine.build_stream_info(
                    stream,
                    &crate::api::streams::InfoDetail::default(),
                    crate::api::streams::InfoView::List,
                );
                let consumers = if with_consumers {
                    let mut consumers: Vec<_> = engine
                        .registry
                        .consumers(stream)
                        .all()
                        .iter()
                        .map(|consumer| consumer.info(stream))
                        .collect();
                    consumers.sort_by(|first, second| first.name.cmp(&second.name));
                    consumers
                } else {
                    Vec::new()
                };
                (info, consumers)
            })
            .collect()
    }

    /// The `jetstream` section of `/varz`.
    pub fn varz(&self) -> Value {
        let engine = &self.engine;
        json!({
            "config": engine.config_json(),
            "stats": Value::Object(engine.stats_json()),
            "limits": engine.limits_json(),
        })
    }

    /// Stop taking requests and publishes, flush and close every store. Idempotent.
    pub async fn shutdown(&self) {
        let ids: Vec<u64> = std::mem::take(&mut *self.engine.subscriptions.lock());
        for id in ids {
            self.engine.transport.unsubscribe(id);
        }
        if let Some(queues) = self.engine.api_queues.lock().take() {
            queues.close();
        }
        self.engine.stop_all_streams().await;
    }
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

impl Engine {
    /// The `limits` of `/jsz` and `/varz`: nats-server's `JSLimitOpts`, where a batch limit
    /// shows only when the config set it (non-zero, as Go's `omitempty`).
    fn limits_json(&self) -> Value {
        let batch = &self.config.batch_limits;
        let mut limits = serde_json::Map::new();
        let configured = [
            (
                "max_batch_inflight_per_stream",
                batch.max_inflight_per_stream,
            ),
            ("max_batch_inflight_total", batch.max_inflight_total),
            ("max_batch_size", batch.max_msgs),
            (
                "max_batch_timeout",
                i64::try_from(batch.timeout.as_nanos()).unwrap_or(i64::MAX),
            ),
        ];
        for (key, value) in configured {
            if value != 0 {
                limits.insert(key.into(), json!(value));
            }
        }
        limits.insert("default_max_consumers".into(), json!(DEFAULT_MAX_CONSUMERS));
        Value::Object(limits)
    }

    pub(crate) fn strict(&self) -> bool {
        // nats-server 2.11+ is strict unless the config says `strict: false`; our config type
        // cannot tell "unset" from false, so `strict` in the config is read as "not relaxed".
        true
    }

    pub(crate) fn totals(&self) -> Totals {
        let mut totals = Totals {
            memory: self.usage.memory().max(0) as u64,
            storage: self.usage.storage().max(0) as u64,
            ..Default::default()
        };
        for stream in self.registry.all() {
            let config = stream.config.read().clone();
            let state = stream.store.state();
            totals.streams += 1;
            totals.consumers += stream.interest.count() as u64;
            totals.messages += state.msgs;
            totals.bytes += state.bytes;
            if config.max_bytes > 0 {
                match config.storage {
                    jetstream_api::StorageType::Memory => {
                        totals.reserved_memory += config.max_bytes as u64
                    }
                    jetstream_api::StorageType::File => {
                        totals.reserved_storage += config.max_bytes as u64
                    }
                }
            }
        }
        totals
    }

    /// The registry as mirrors and sources see it: a weak lookup of origins by name.
    pub(crate) fn stream_lookup(&self) -> std::sync::Weak<dyn crate::stream::StreamLookup> {
        let registry: Arc<dyn crate::stream::StreamLookup> = self.registry.clone();
        Arc::downgrade(&registry)
    }

    /// Hooks run when a stream starts (create or recovery) and before it stops.
    pub(crate) fn on_stream_started(
        &self,
        stream: &Arc<Stream>,
        consumers: &Arc<crate::consumer::Consumers>,
    ) {
        self.refresh_direct_get(stream);
        if stream.config.read().mirror.is_some() {
            crate::stream::spawn_mirror(stream, self.stream_lookup());
        }
        if !stream.config.read().sources.is_empty() {
            crate::stream::sync_sources(stream, self.stream_lookup(), self.transport.clone());
        }
        crate::consumer::recover_in_domain(
            stream,
            consumers,
            &self.transport,
            self.config.domain.as_deref(),
        );
    }

    pub(crate) fn on_stream_stopping(&self, stream: &Arc<Stream>) {
        if let Some(ids) = self.direct_subscriptions.lock().remove(&stream.name) {
            for id in ids {
                self.transport.unsubscribe(id);
            }
        }
    }

    /// Direct-get subscriptions exist exactly while the stream has `allow_direct`.
    pub(crate) fn refresh_direct_get(&self, stream: &Arc<Stream>) {
        let allow = stream.config.read().allow_direct;
        let mut subscriptions = self.direct_subscriptions.lock();
        match (allow, subscriptions.contains_key(&stream.name)) {
            (true, false) => {
                let ids = crate::api::direct::subscribe(stream, &self.transport);
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

    pub(crate) fn config_json(&self) -> Value {
        let mut config = serde_json::Map::new();
        config.insert("max_memory".into(), json!(self.limits.max_memory));
        config.insert("max_storage".into(), json!(self.limits.max_store));
        config.insert(
            "store_dir".into(),
            json!(self.store_root.display().to_string()),
        );
        // With `always`, nats-server still reports the (default) interval next to `sync_always`.
        let sync_interval = match self.config.sync_interval {
            SyncPolicy::Interval(interval) => json!(interval.as_nanos() as u64),
            SyncPolicy::Always => json!(DEFAULT_SYNC_INTERVAL_NANOS),
        };
        config.insert("sync_interval".into(), sync_interval);
        if self.config.sync_interval == SyncPolicy::Always {
            config.insert("sync_always".into(), json!(true));
        }
        if let Some(domain) = &self.config.domain {
            config.insert("domain".into(), json!(domain));
        }
        config.insert("strict".into(), json!(self.strict()));
        Value::Object(config)
    }

    pub(crate) fn stats_json(&self) -> serde_json::Map<String, Value> {
        let totals = self.totals();
        let mut stats = serde_json::Map::new();
        stats.insert("memory".into(), json!(totals.memory));
        stats.insert("storage".into(), json!(totals.storage));
        stats.insert("reserved_memory".into(), json!(totals.reserved_memory));
        stats.insert("reserved_storage".into(), json!(totals.reserved_storage));
        stats.insert("accounts".into(), json!(1));
        stats.insert("ha_assets".into(), json!(0));
        stats.insert(
            "api".into(),
            json!({
                "level": API_LEVEL,
                "total": self.api.total.load(Ordering::Relaxed),
                "errors": self.api.errors.load(Ordering::Relaxed),
            }),
        );
        stats
    }
}
