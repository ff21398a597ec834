//! [`JetStream`]: the handle the core server holds. Builds, for each account JetStream serves,
//! a stream registry and a `$JS.API` handlers' context (accounts without JetStream get a
//! context that answers 10039), owns the `$JS.API.>` subscriptions of every account and the
//! API threads they share. `usage.rs` answers the monitoring calls (`/jsz`, `/varz`, the
//! banner) from the limits and usage. Cheap to clone: every clone shares one `Arc`'d engine,
//! so the server may keep one for monitoring and one for shutdown.

use crate::api::queue::{ApiQueues, QueueLimits};
use crate::api::{ApiCounters, Context};
use crate::error::JetStreamError;
use crate::registry::Registry;
use crate::resources::{self, ServerResources};
use crate::{AccountSetup, JetStreamConfig, Message, ServerIdentity, Transport};
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::sync::Arc;

pub(crate) mod cluster_usage;
mod pending;
mod usage;
use pending::Pending;
pub(crate) use usage::DEFAULT_MAX_CONSUMERS;

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
/// The global account's name (JetStream's account when the server configures none).
const GLOBAL_ACCOUNT: &str = "$G";

/// A `$JS.API` subscription: the account's name, the transport it was made in and its id.
type ApiSubscription = (String, Arc<dyn Transport>, u64);

/// The JetStream subsystem of one server. Clone it freely (it is an `Arc` inside).
#[derive(Clone)]
pub struct JetStream {
    pub(crate) engine: Arc<Engine>,
}

/// The closing of an account's streams after an update disabled its JetStream.
type StopFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The meta group as one account's `$JS.API` requests see it, by account name.
type ClusterFor = Arc<dyn Fn(&str) -> Arc<dyn crate::Cluster> + Send + Sync>;

/// How many Raft groups this server runs, asked of the meta group.
type RaftGroupCount = Arc<dyn Fn() -> usize + Send + Sync>;

/// The engine: the server's JetStream config, identity and resources, each account's `$JS.API`
/// context (its registry inside), and the subscriptions and threads to stop at shutdown. Its
/// methods (here only) serve the [`JetStream`] handle.
pub(crate) struct Engine {
    pub config: JetStreamConfig,
    pub identity: ServerIdentity,
    /// `<store_dir>/jetstream`.
    store_root: std::path::PathBuf,
    resources: ServerResources,
    /// The accounts JetStream serves, sorted by name (replaced whole when an account is added
    /// at run time; readers load it without a lock).
    pub(crate) accounts: ArcSwap<Vec<Arc<Context>>>,
    /// Contexts of the accounts it refuses (10039).
    refused: Mutex<Vec<Arc<Context>>>,
    /// Set once the meta group is installed: the meta group as one account's requests see it,
    /// for accounts served from then on too.
    cluster: std::sync::OnceLock<ClusterFor>,
    /// Set with `cluster`: the Raft groups this server runs (`ha_assets` of `/jsz`, `/varz` and
    /// STATSZ, nats-server's count of its raft nodes; 0 without a meta group).
    raft_groups: std::sync::OnceLock<RaftGroupCount>,
    /// Each `$JS.API` subscription with the account and transport it was made in.
    subscriptions: Mutex<Vec<ApiSubscription>>,
    api_queues: Mutex<Option<Arc<ApiQueues>>>,
    /// Each account's last change still under way ([`JetStream::update_account`]): its streams
    /// closing after an update disabled it, or an update waiting for the change before it.
    pending: Mutex<std::collections::HashMap<String, Pending>>,
}

impl JetStream {
    /// JetStream for the global account alone (no account limits): create the store directory,
    /// compute limits, subscribe `$JS.API.>` and restore streams.
    pub async fn start(
        config: JetStreamConfig,
        identity: ServerIdentity,
        transport: Arc<dyn Transport>,
    ) -> Result<JetStream, JetStreamError> {
        let global = AccountSetup {
            name: GLOBAL_ACCOUNT.to_string(),
            transport,
            limits: jetstream_api::AccountLimits::default(),
            tiers: Default::default(),
        };
        JetStream::start_accounts(config, identity, vec![global], Vec::new()).await
    }

    /// JetStream for several accounts, each with its own streams under
    /// `<store_dir>/jetstream/<account>`, its limits and its `$JS.API`; the `refused`
    /// accounts (without JetStream: each name with its transport) answer every `$JS.API`
    /// request with 10039.
    pub async fn start_accounts(
        config: JetStreamConfig,
        identity: ServerIdentity,
        accounts: Vec<AccountSetup>,
        refused: Vec<(String, Arc<dyn Transport>)>,
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
        let resources = ServerResources::new(
            config
                .max_memory
                .filter(|limit| *limit >= 0)
                .unwrap_or_else(resources::default_max_memory),
            config
                .max_store
                .filter(|limit| *limit >= 0)
                .unwrap_or_else(|| resources::default_max_store(&store_root)),
        );
        let engine = Arc::new(Engine {
            config,
            identity,
            store_root,
            resources,
            accounts: ArcSwap::from_pointee(Vec::new()),
            refused: Mutex::new(Vec::new()),
            cluster: std::sync::OnceLock::new(),
            raft_groups: std::sync::OnceLock::new(),
            subscriptions: Mutex::new(Vec::new()),
            api_queues: Mutex::new(None),
            pending: Mutex::new(Default::default()),
        });
        let mut enabled: Vec<Arc<Context>> = accounts
            .into_iter()
            .map(|account| engine.context(account, true))
            .collect();
        enabled.sort_by(|first, second| {
            first
                .registry
                .account_name
                .cmp(&second.registry.account_name)
        });
        let refused: Vec<Arc<Context>> = refused
            .into_iter()
            .map(|(name, transport)| engine.context(refused_setup(&name, transport), false))
            .collect();
        for account in &enabled {
            account.registry.recover_streams()?;
        }
        engine.accounts.store(Arc::new(enabled));
        *engine.refused.lock() = refused;
        let jetstream = JetStream { engine };
        jetstream.start_api()?;
        Ok(jetstream)
    }

    /// Subscribe `$JS.API` in every account: the handlers only enqueue, with their account's
    /// context, for the API threads (`api/queue.rs`) every account shares.
    fn start_api(&self) -> Result<(), JetStreamError> {
        let queues = ApiQueues::start(
            tokio::runtime::Handle::current(),
            QueueLimits::new(
                self.engine.config.request_queue_limit,
                self.engine.config.info_queue_limit,
            ),
        )
        .map_err(JetStreamError::ApiThreads)?;
        *self.engine.api_queues.lock() = Some(queues.clone());
        let refused = self.engine.refused.lock().clone();
        for account in self.engine.accounts.load().iter().chain(&refused) {
            self.subscribe_api(&queues, account);
        }
        Ok(())
    }

    /// Subscribe one account's `$JS.API` subjects, feeding the shared API threads.
    fn subscribe_api(&self, queues: &Arc<ApiQueues>, account: &Arc<Context>) {
        for subject in API_SUBSCRIPTIONS {
            let queues = queues.clone();
            let context = Arc::downgrade(account);
            let id = account.transport.subscribe(
                subject,
                None,
                Arc::new(move |message: Message| {
                    // Gone during shutdown: dropping the request is right.
                    if let Some(context) = context.upgrade() {
                        queues.enqueue(&context, message);
                    }
                }),
            );
            self.engine.subscriptions.lock().push((
                account.registry.account_name.clone(),
                account.transport.clone(),
                id,
            ));
        }
    }

    /// Serve an account added at run time (operator mode: an account JWT pushed to the full
    /// resolver): with `account` its streams under `<store_dir>/jetstream/<name>` are recovered
    /// and its `$JS.API` answered; without, `$JS.API` there is answered with 10039. In a
    /// cluster the meta group's assignments already placed here for the account are then
    /// carried out. Nothing for an account already served.
    pub fn add_account(
        &self,
        name: &str,
        setup: Result<AccountSetup, Arc<dyn Transport>>,
    ) -> Result<(), JetStreamError> {
        let engine = &self.engine;
        if engine.account(name).is_some() || engine.refused_context(name).is_some() {
            return Ok(());
        }
        self.serve(name, setup)
    }

    /// Serve `name` from now on. A context refusing it (10039) keeps answering until its
    /// streams are recovered, right before the served one subscribes: no `$JS.API` request
    /// goes unanswered meanwhile.
    fn serve(
        &self,
        name: &str,
        setup: Result<AccountSetup, Arc<dyn Transport>>,
    ) -> Result<(), JetStreamError> {
        let engine = &self.engine;
        if engine.account(name).is_some() {
            return Ok(());
        }
        let Some(queues) = engine.api_queues.lock().clone() else {
            return Ok(());
        };
        let context = match setup {
            Ok(account) => {
                let context = engine.context(account, true);
                if let Some(for_account) = engine.cluster.get() {
                    let _ = context.cluster.set(for_account(name));
                }
                context.registry.recover_streams()?;
                if engine.refused_context(name).is_some() {
                    self.withdraw(name);
                    engine
                        .refused
                        .lock()
                        .retain(|context| context.registry.account_name != name);
                }
                let mut accounts = Vec::clone(&engine.accounts.load());
                accounts.push(context.clone());
                accounts.sort_by(|first, second| {
                    first
                        .registry
                        .account_name
                        .cmp(&second.registry.account_name)
                });
                engine.accounts.store(Arc::new(accounts));
                context
            }
            Err(transport) => {
                let context = engine.context(refused_setup(name, transport), false);
                engine.refused.lock().push(context.clone());
                context
            }
        };
        self.subscribe_api(&queues, &context);
        if let Some(cluster) = context.cluster.get() {
            cluster.account_served();
        }
        Ok(())
    }

    /// Apply an account JWT update to an account JetStream already knows, as nats-server's
    /// `configJetStream` does: an account it serves that keeps JetStream takes the new limits
    /// (the next stream or consumer create and publish are checked against them, and
    /// `$JS.API.INFO` shows them); one it refused that now has JetStream is served from now
    /// on (its streams recovered); one it serves that lost JetStream has its streams stopped
    /// (their files stay, and in a cluster their groups here stop) and its `$JS.API` answered
    /// with 10039. An account JetStream has not seen is added ([`JetStream::add_account`]).
    ///
    /// An account's changes are carried out one at a time, in the order of the calls: while an
    /// earlier one is under way (its streams still closing), this one waits for it on a task of
    /// its own. Serving the account again before its streams and their groups were closed
    /// reopened them beside the closing ones, and the closing took the new ones' groups away.
    pub fn update_account(
        &self,
        name: &str,
        setup: Result<AccountSetup, Arc<dyn Transport>>,
    ) -> Result<(), JetStreamError> {
        let mut pending = self.engine.pending.lock();
        if let Some(earlier) = pending.get(name).filter(|earlier| !earlier.finished()) {
            let (earlier, jetstream, owned) = (earlier.clone(), self.clone(), name.to_string());
            let later = Pending::spawn(async move {
                earlier.wait().await;
                match jetstream.change_account(&owned, setup) {
                    Ok(Some(stop)) => stop.await,
                    Ok(None) => {}
                    Err(error) => tracing::error!("JetStream for account {owned}: {error}"),
                }
            });
            pending.insert(name.to_string(), later);
            return Ok(());
        }
        // Held while changing, so a concurrent update of the account waits for this one.
        if let Some(stop) = self.change_account(name, setup)? {
            pending.insert(name.to_string(), Pending::spawn(stop));
        }
        Ok(())
    }

    /// [`JetStream::update_account`]'s change, once no earlier one is under way; the closing
    /// of the account's streams when it lost JetStream, for the caller to run.
    fn change_account(
        &self,
        name: &str,
        setup: Result<AccountSetup, Arc<dyn Transport>>,
    ) -> Result<Option<StopFuture>, JetStreamError> {
        let engine = &self.engine;
        let served = engine.account(name);
        if let (Some(context), Ok(account)) = (&served, &setup) {
            context
                .registry
                .set_account_limits(account.limits.clone(), account.tiers.clone());
            return Ok(None);
        }
        match (served, setup) {
            (Some(context), Err(transport)) => {
                tracing::info!("JetStream disabled for account {name}: its streams here stop");
                self.withdraw(name);
                let mut accounts = Vec::clone(&engine.accounts.load());
                accounts.retain(|account| !Arc::ptr_eq(account, &context));
                engine.accounts.store(Arc::new(accounts));
                context.registry.withdraw_streams();
                if let Err(error) = self.add_account(name, Err(transport)) {
                    tracing::error!("JetStream refusing account {name}: {error}");
                }
                Ok(Some(Box::pin(async move {
                    stop_account_streams(&context).await;
                    if let Some(cluster) = context.cluster.get() {
                        cluster.account_stopped().await;
                    }
                })))
            }
            (None, Ok(account)) => {
                tracing::info!("JetStream enabled for account {name}");
                self.serve(name, Ok(account)).map(|()| None)
            }
            (None, Err(transport)) => self.add_account(name, Err(transport)).map(|()| None),
            (Some(_), Ok(_)) => Ok(None),
        }
    }

    /// Wait until every account's change under way is done: the streams of every account an
    /// update disabled are closed (the claims requests' task awaits this after each request, so
    /// an update enabling the account again reopens them at once).
    pub async fn settled(&self) {
        let pending: Vec<Pending> = self.engine.pending.lock().values().cloned().collect();
        for change in pending {
            change.wait().await;
        }
        self.engine
            .pending
            .lock()
            .retain(|_, change| !change.finished());
    }

    /// Unsubscribe the `$JS.API` subjects of the account `name`.
    fn withdraw(&self, name: &str) {
        let mut withdrawn = Vec::new();
        self.engine
            .subscriptions
            .lock()
            .retain(|(account, transport, id)| {
                let keep = account != name;
                if !keep {
                    withdrawn.push((transport.clone(), *id));
                }
                keep
            });
        for (transport, id) in withdrawn {
            transport.unsubscribe(id);
        }
    }

    /// Installs the meta group: from now on `$JS.API` is answered as nats-server answers it in
    /// a cluster (one server per request). Set once, right after the meta group started;
    /// `for_account` gives the meta group as one account's requests see it (its streams only),
    /// for the accounts served now and those served later; `raft_groups` counts the Raft groups
    /// this server runs (the meta group and each replicated stream's), its `ha_assets`.
    pub fn set_cluster(
        &self,
        for_account: impl Fn(&str) -> Arc<dyn crate::Cluster> + Send + Sync + 'static,
        raft_groups: impl Fn() -> usize + Send + Sync + 'static,
    ) {
        let _ = self.engine.raft_groups.set(Arc::new(raft_groups));
        let for_account: ClusterFor = Arc::new(for_account);
        let _ = self.engine.cluster.set(for_account.clone());
        for account in self.engine.accounts.load().iter() {
            let _ = account
                .cluster
                .set(for_account(&account.registry.account_name));
        }
    }

    /// Applies a stream assignment the meta group placed on this server: creates or updates
    /// the stream in its account and answers the request it carries. An assignment for an
    /// account JetStream does not serve here is logged and skipped.
    pub async fn apply_stream_assignment(&self, assignment: crate::StreamAssignment) {
        match self.engine.account(&assignment.account) {
            Some(context) => {
                crate::api::clustered_apply::apply_stream_assignment(&context, assignment).await
            }
            None => tracing::warn!(
                account = %assignment.account,
                stream = %assignment.config.name,
                "stream assigned here in an account without JetStream on this server"
            ),
        }
    }

    /// Removes a stream of `account` whose assignment the meta group removed (the incarnation
    /// created at `created`: a newer stream of that name stays), answering `reply` (when the
    /// stream is not held here, only the `first_peer` of its placement answers).
    pub async fn apply_stream_removal(
        &self,
        account: &str,
        name: &str,
        created: i64,
        reply: Option<bytes::Bytes>,
        first_peer: bool,
    ) {
        if let Some(context) = self.engine.account(account) {
            crate::api::clustered_apply::apply_stream_removal(
                &context, name, created, reply, first_peer,
            )
            .await
        }
    }

    /// Drops this server's replica of incarnation `created` of `account`'s stream `name`: the
    /// meta group placed it elsewhere (a peer removal).
    pub async fn drop_stream_replica(&self, account: &str, name: &str, created: i64) {
        if let Some(context) = self.engine.account(account) {
            crate::api::clustered_apply::drop_replica(&context, name, created).await
        }
    }

    /// The names of the streams of every account, sorted (for `/healthz`'s stream check).
    pub fn stream_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .engine
            .accounts
            .load()
            .iter()
            .flat_map(|account| account.registry.all())
            .map(|stream| stream.name.clone())
            .collect();
        names.sort();
        names
    }

    /// What `/healthz` looks up in `account`: `None` when JetStream does not serve it or it
    /// holds no stream here (nats-server's single-server check finds an account by its store
    /// directory, made with its first stream); else whether `stream` runs here and, when
    /// `consumer` is named, whether that stream has it (running, or a durable followed here).
    pub fn health_lookup(
        &self,
        account: &str,
        stream: &str,
        consumer: &str,
    ) -> Option<(bool, bool)> {
        let context = self.engine.account(account)?;
        if context.registry.all().is_empty() {
            return None;
        }
        let Some(found) = context.registry.get(stream) else {
            return Some((false, false));
        };
        // A consumer running here, or a committed durable this server follows.
        let consumers = context.registry.consumers(&found);
        let consumer_found = !consumer.is_empty()
            && (consumers.get(consumer).is_some()
                || consumers
                    .replicated()
                    .is_some_and(|replicas| replicas.committed().contains_key(consumer)));
        Some((true, consumer_found))
    }

    /// Whether JetStream serves the account `name`.
    pub fn serves(&self, name: &str) -> bool {
        self.engine.account(name).is_some()
    }

    /// The names of the accounts JetStream serves, sorted.
    pub fn account_names(&self) -> Vec<String> {
        self.engine
            .accounts
            .load()
            .iter()
            .map(|account| account.registry.account_name.clone())
            .collect()
    }

    /// Every stream's info (as `STREAM.LIST` shows it) with its consumers' infos when asked,
    /// by account, then sorted by stream name: the per-stream and per-consumer figures of
    /// `/jsz` and `/metrics`.
    pub fn stream_details(
        &self,
        with_consumers: bool,
    ) -> Vec<(jetstream_api::StreamInfo, Vec<jetstream_api::ConsumerInfo>)> {
        self.engine
            .accounts
            .load()
            .iter()
            .flat_map(|account| Self::account_stream_details(account, with_consumers))
            .collect()
    }

    /// [`JetStream::stream_details`] with each stream's account name (the console's view).
    pub fn account_stream_details_all(
        &self,
    ) -> Vec<(
        String,
        jetstream_api::StreamInfo,
        Vec<jetstream_api::ConsumerInfo>,
    )> {
        self.engine
            .accounts
            .load()
            .iter()
            .flat_map(|account| {
                let name = account.registry.account_name.clone();
                Self::account_stream_details(account, true)
                    .into_iter()
                    .map(move |(info, consumers)| (name.clone(), info, consumers))
            })
            .collect()
    }

    /// Up to `count` of the latest messages of `account`'s `stream`, oldest first (the
    /// console's message viewer); `None` when there is no such stream. At most
    /// `count * 16` sequences are looked at, so a sparse stream shows fewer.
    pub fn recent_messages(
        &self,
        account: &str,
        stream: &str,
        count: usize,
    ) -> Option<Vec<nats_store::StoredMessage>> {
        let context = self.engine.account(account)?;
        let stream = context.registry.get(stream)?;
        let mut store = stream.store.read();
        let state = store.state();
        let mut messages = Vec::new();
        let mut seq = state.last_seq;
        let mut tries = count.saturating_mul(16);
        while seq >= state.first_seq.max(1) && messages.len() < count && tries > 0 {
            if let Ok(message) = store.load(seq) {
                messages.push(message);
            }
            seq -= 1;
            tries -= 1;
        }
        messages.reverse();
        Some(messages)
    }

    pub(crate) fn account_stream_details(
        account: &Context,
        with_consumers: bool,
    ) -> Vec<(jetstream_api::StreamInfo, Vec<jetstream_api::ConsumerInfo>)> {
        let mut streams = account.registry.all();
        streams.sort_by(|first, second| first.name.cmp(&second.name));
        streams
            .iter()
            .map(|stream| {
                let (info, _) = crate::api::streams::build_stream_info(
                    account,
                    stream,
                    &crate::api::streams::InfoDetail::default(),
                    crate::api::streams::InfoView::List,
                );
                let consumers = if with_consumers {
                    Self::consumer_details(account, stream)
                } else {
                    Vec::new()
                };
                (info, consumers)
            })
            .collect()
    }

    /// The infos of `stream`'s consumers (their stored configs), sorted by name, each with its `cluster` block in a
    /// cluster: those running here, and the committed durables of a replicated stream that do
    /// not (this server follows the stream), as a nats-server follower lists its replicas of
    /// them.
    fn consumer_details(
        account: &Context,
        stream: &Arc<crate::stream::Stream>,
    ) -> Vec<jetstream_api::ConsumerInfo> {
        let set = account.registry.consumers(stream);
        let running = set.all();
        let mut consumers: Vec<_> = running
            .iter()
            .map(|consumer| {
                let mut info = consumer.info(stream);
                info.cluster = crate::api::consumers::consumer_cluster_info(account, consumer);
                info
            })
            .collect();
        if let Some(replicas) = set.replicated() {
            for (name, committed) in replicas.committed() {
                if running.iter().any(|consumer| consumer.name == name) {
                    continue;
                }
                let mut info = crate::consumer::Consumer::committed_info(stream, &name, &committed);
                info.cluster = crate::api::consumers::cluster_block(account, &stream.name, true);
                consumers.push(info);
            }
        }
        // The stored configs, as nats-server shows them here: without the response-only
        // metadata CONSUMER.INFO adds.
        for info in &mut consumers {
            if let Some(config) = info.config.as_mut() {
                jetstream_api::metadata::remove_dynamic(&mut config.metadata);
            }
        }
        consumers.sort_by(|first, second| first.name.cmp(&second.name));
        consumers
    }

    /// Stop taking requests and publishes, flush and close every store. Idempotent.
    pub async fn shutdown(&self) {
        let subscriptions = std::mem::take(&mut *self.engine.subscriptions.lock());
        for (_, transport, id) in subscriptions {
            transport.unsubscribe(id);
        }
        if let Some(queues) = self.engine.api_queues.lock().take() {
            queues.close();
        }
        let accounts = self.engine.accounts.load_full();
        for account in accounts.iter() {
            stop_account_streams(account).await;
        }
    }
}

/// How long a stop waits for the account's creations in flight (`api/creations.rs`) to finish.
/// A file stream's creation beside others is done in milliseconds (its files made and its
/// metadata written); a proposal on the meta leader ends when the meta group stops, which the
/// server does first.
const CREATIONS_DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Stops an account's streams: no creation is made from now on, those in flight (admitted
/// beside one another or proposed) finish and join the registry, bounded by
/// [`CREATIONS_DRAIN`], then every stream stops (`registry::Closing`). A creation that finishes
/// later still is refused (`Registry::finish_admitted`), never started after the stop.
async fn stop_account_streams(context: &Context) {
    context.registry.close_to_creations().await;
    if tokio::time::timeout(CREATIONS_DRAIN, context.creations.idle())
        .await
        .is_err()
    {
        tracing::warn!(
            account = %context.registry.account_name,
            "stream creations still in flight after {CREATIONS_DRAIN:?}: stopping without them"
        );
    }
    context.registry.stop_all_streams().await;
}

impl Engine {
    /// The context of the JetStream account `name`.
    fn account(&self, name: &str) -> Option<Arc<Context>> {
        self.accounts
            .load()
            .iter()
            .find(|account| account.registry.account_name == name)
            .cloned()
    }

    /// The context of an account JetStream refuses (10039).
    fn refused_context(&self, name: &str) -> Option<Arc<Context>> {
        self.refused
            .lock()
            .iter()
            .find(|account| account.registry.account_name == name)
            .cloned()
    }

    /// A `$JS.API` context for `account`: its registry (streams, limits) and transport.
    fn context(&self, account: AccountSetup, enabled: bool) -> Arc<Context> {
        let transport = account.transport.clone();
        let registry = Arc::new(Registry::new(
            self.config.clone(),
            account,
            self.store_root.clone(),
            &self.resources,
            crate::api::direct::subscribe,
        ));
        Arc::new(Context {
            enabled,
            registry,
            transport,
            domain: self.config.domain.clone(),
            server_name: self.identity.server_name.clone(),
            counters: ApiCounters::default(),
            remote_counts: Default::default(),
            cluster: std::sync::OnceLock::new(),
            answered: Default::default(),
            seen: Default::default(),
            creations: Default::default(),
        })
    }
}

/// The setup of an account JetStream refuses (10039): its name and transport.
fn refused_setup(name: &str, transport: Arc<dyn Transport>) -> AccountSetup {
    AccountSetup {
        name: name.to_string(),
        transport,
        limits: jetstream_api::AccountLimits::default(),
        tiers: Default::default(),
    }
}
