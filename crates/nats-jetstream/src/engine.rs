//! [`JetStream`]: the handle the core server holds. Builds the stream registry and the `$JS.API`
//! handlers' context, owns the `$JS.API.>` subscriptions and the API threads, and answers the
//! monitoring calls (`/jsz`, `/varz`, the banner). The only `impl Engine` is here. Cheap to clone: every clone
//! shares one `Arc`'d engine, so the server may keep one for monitoring and one for shutdown.

use crate::api::queue::{ApiQueues, REQUEST_QUEUE_LIMIT};
use crate::api::{ApiCounters, Context};
use crate::error::JetStreamError;
use crate::level::API_LEVEL;
use crate::registry::{Registry, ResourceLimits};
use crate::resources;
use crate::{JetStreamConfig, Message, ServerIdentity, SyncPolicy, Transport};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
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

/// The engine: the server's JetStream config and identity, the registry, the `$JS.API`
/// handlers' context, and the subscriptions and threads to stop at shutdown. Its methods (here
/// only) serve the [`JetStream`] handle.
pub(crate) struct Engine {
    pub config: JetStreamConfig,
    pub identity: ServerIdentity,
    pub transport: Arc<dyn Transport>,
    pub registry: Arc<Registry>,
    pub api: Arc<Context>,
    subscriptions: Mutex<Vec<u64>>,
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
        let registry = Arc::new(Registry::new(
            config.clone(),
            transport.clone(),
            store_root,
            limits,
            crate::api::direct::subscribe,
        ));
        let api = Arc::new(Context {
            registry: registry.clone(),
            transport: transport.clone(),
            domain: config.domain.clone(),
            server_name: identity.server_name.clone(),
            counters: ApiCounters::default(),
            cluster: std::sync::OnceLock::new(),
        });
        let engine = Arc::new(Engine {
            config,
            identity,
            transport,
            registry,
            api,
            subscriptions: Mutex::new(Vec::new()),
            api_queues: Mutex::new(None),
        });
        engine.registry.recover_streams()?;
        let jetstream = JetStream { engine };
        jetstream.start_api()?;
        Ok(jetstream)
    }

    /// Subscribe `$JS.API`: the handlers only enqueue for the API threads (`api/queue.rs`).
    fn start_api(&self) -> Result<(), JetStreamError> {
        let queues = ApiQueues::start(
            &self.engine.api,
            tokio::runtime::Handle::current(),
            REQUEST_QUEUE_LIMIT,
        )
        .map_err(JetStreamError::ApiThreads)?;
        *self.engine.api_queues.lock() = Some(queues.clone());
        for subject in API_SUBSCRIPTIONS {
            let queues = queues.clone();
            let context = Arc::downgrade(&self.engine.api);
            let id = self.engine.transport.subscribe(
                subject,
                None,
                Arc::new(move |message: Message| {
                    // Gone during shutdown: dropping the request is right.
                    if let Some(context) = context.upgrade() {
                        queues.enqueue(&context, message);
                    }
                }),
            );
            self.engine.subscriptions.lock().push(id);
        }
        Ok(())
    }

    /// Installs the meta group: from now on `$JS.API` is answered as nats-server answers it in
    /// a cluster (one server per request). Set once, right after the meta group started.
    pub fn set_cluster(&self, cluster: Arc<dyn crate::Cluster>) {
        let _ = self.engine.api.cluster.set(cluster);
    }

    /// Applies a stream assignment the meta group placed on this server: creates or updates
    /// the stream and answers the request it carries.
    pub async fn apply_stream_assignment(&self, assignment: crate::StreamAssignment) {
        crate::api::clustered::apply_stream_assignment(&self.engine.api, assignment).await
    }

    /// Removes a stream whose assignment the meta group removed (the incarnation created at
    /// `created`: a newer stream of that name stays), answering `reply`.
    pub async fn apply_stream_removal(
        &self,
        name: &str,
        created: i64,
        reply: Option<bytes::Bytes>,
    ) {
        crate::api::clustered::apply_stream_removal(&self.engine.api, name, created, reply).await
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
            resources::friendly_bytes(engine.registry.limits.max_memory)
        ));
        lines.push(format!(
            "  Max Storage:     {}",
            resources::friendly_bytes(engine.registry.limits.max_store)
        ));
        lines.push(format!(
            "  Store Directory: \"{}\"",
            engine.registry.store_root.display()
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
        let totals = engine.registry.totals();
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
                let (info, _) = crate::api::streams::build_stream_info(
                    &engine.api,
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
        self.engine.registry.stop_all_streams().await;
    }
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

    pub(crate) fn config_json(&self) -> Value {
        let mut config = serde_json::Map::new();
        config.insert("max_memory".into(), json!(self.registry.limits.max_memory));
        config.insert("max_storage".into(), json!(self.registry.limits.max_store));
        config.insert(
            "store_dir".into(),
            json!(self.registry.store_root.display().to_string()),
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
        let totals = self.registry.totals();
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
                "total": self.api.counters.total.load(Ordering::Relaxed),
                "errors": self.api.counters.errors.load(Ordering::Relaxed),
            }),
        );
        stats
    }
}
