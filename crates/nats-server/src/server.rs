//! The running server: shared state (options, identity, subject table, connected clients,
//! counters, JetStream), the accept loop, start-up (banner, listeners, pid and ports files)
//! and graceful shutdown.

use crate::accounts::Accounts;
use crate::client::{self, ClientShared, CloseReason};
use crate::config::Options;
use crate::security::auth::Authenticator;
use crate::security::tls::ClientTls;
use crate::transport::ServerTransport;
use crate::ServerError;
use bytes::BytesMut;
use nats_jetstream::{JetStream, ServerIdentity};
use nats_proto::ServerInfo;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use time::OffsetDateTime;

/// The version we report in INFO, /varz and `-v`: the nats-server version whose behaviour we
/// follow, so clients gate features correctly. It must equal the `_nats.ver` JetStream reports
/// (`jetstream_api::metadata::SERVER_VERSION`, API level 5); a test checks it.
pub const VERSION: &str = "2.15.1";
/// The Go-version field of INFO: we are not Go; clients only display it.
pub const GO_FIELD: &str = "rust";
/// The build's git commit, its first seven characters as nats-server prints its own
/// (`build.rs`); `None` for a build without one.
pub const GIT_COMMIT: Option<&str> = option_env!("RNATS_GIT_COMMIT");

/// Server-wide counters (per-connection counters are summed in at read time).
#[derive(Default)]
pub struct ServerStats {
    pub total_connections: AtomicU64,
    pub slow_consumers: AtomicU64,
    pub stale_connections: AtomicU64,
    /// Counters of connections that are gone.
    pub closed_in_msgs: AtomicU64,
    pub closed_in_bytes: AtomicU64,
    pub closed_out_msgs: AtomicU64,
    pub closed_out_bytes: AtomicU64,
}

pub struct Server {
    /// The options the server started with (the listeners, identity and JetStream follow
    /// them); what a reload may change is read through [`Server::current_options`].
    pub options: Options,
    /// The options as last loaded (start-up or the latest reload).
    current_options: RwLock<Arc<Options>>,
    /// When the configuration was last loaded (`/varz` `config_load_time`).
    pub config_load_time: Mutex<OffsetDateTime>,
    /// Moves at each reload that changes authorization: connections check their
    /// credentials and permissions again.
    pub authorization_epoch: tokio::sync::watch::Sender<u64>,
    /// Moves at each reload that changes `max_payload` or `max_control_line`: connections take
    /// the new figures (nats-server's `maxPayloadOption`, `maxControlLineOption`).
    pub limits_epoch: tokio::sync::watch::Sender<u64>,
    pub server_id: String,
    /// The server's nkey: `server_id` is its public key; it signs auth callout requests.
    pub server_keys: nkeys::KeyPair,
    /// The server's curve key (INFO `xkey`): auth callout requests are encrypted with it.
    pub server_xkey: nkeys::XKey,
    pub server_name: String,
    pub start_time: OffsetDateTime,
    /// Every account, each with its own subject table.
    pub accounts: Accounts,
    /// Set when the server is part of a cluster.
    routes: OnceLock<Arc<crate::route::Routes>>,
    authenticator: RwLock<Arc<Authenticator>>,
    /// Operator mode: the trusted operators and account JWTs (kept across reloads).
    pub jwt: Option<Arc<crate::security::jwt::resolver::Resolver>>,
    pub stats: ServerStats,
    pub clients: Mutex<BTreeMap<u64, Arc<ClientShared>>>,
    /// The last `max_closed_clients` closed connections, for `/connz?state=closed`.
    pub closed_connections: crate::monitor::closed::ClosedConnections,
    next_client_id: AtomicU64,
    /// The address clients connect to (after a random port was picked).
    pub client_address: OnceLock<SocketAddr>,
    pub monitor_address: OnceLock<SocketAddr>,
    /// The monitoring port's address when it serves HTTPS (`https_port`).
    pub monitor_tls_address: OnceLock<SocketAddr>,
    /// The route listener's address (in a cluster with a route port).
    pub route_address: OnceLock<SocketAddr>,
    /// The websocket listener (`websocket { }` with a port).
    websocket: OnceLock<Arc<crate::websocket::Listener>>,
    /// JetStream while it runs here (`jetstream_host.rs`: started, stopped and started again
    /// by reloads).
    pub jetstream: crate::jetstream_host::Slot<JetStream>,
    /// The JetStream meta group, when JetStream runs in a cluster.
    pub meta: crate::jetstream_host::Slot<Arc<crate::cluster::Meta>>,
    /// The last JetStream start or stop a reload queued (`jetstream_host::queue`).
    pub(crate) jetstream_changes: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub http_requests: Mutex<BTreeMap<String, u64>>,
    /// Set when client connections use TLS (`tls { }` or `--tls*`); replaced by a reload.
    client_tls: RwLock<Option<Arc<ClientTls>>>,
    /// INFO's fixed part, built on first use and again after a reload.
    info_template: RwLock<Option<ServerInfo>>,
    /// The `seq` of the `server` object on `$SYS` replies.
    pub system_sequence: AtomicU64,
    /// Set when lame duck mode begins (`lame_duck.rs`): the listeners stop accepting.
    pub(crate) lame_duck: tokio::sync::watch::Sender<bool>,
    /// Set once JetStream and its Raft groups were stopped (lame duck mode or shutdown).
    jetstream_stopped: std::sync::atomic::AtomicBool,
}

impl Server {
    /// `tls`: what `ClientTls::build` made of `options.tls`.
    pub fn new(mut options: Options, tls: Option<Arc<ClientTls>>) -> Arc<Server> {
        if options.system_account.is_none() {
            options.system_account = options.operator.system_account();
        }
        let server_keys = crate::security::identity::new_server_keys();
        let server_id = server_keys.public_key();
        let server_name = options
            .server_name
            .clone()
            .unwrap_or_else(|| server_id.clone());
        let jwt = crate::security::jwt::resolver::from_options(&options).map(Arc::new);
        // The resolver holds the preloaded JWTs now; nothing reads them from the options
        // again, which would keep two more copies (10,000 accounts: 7 MiB each).
        options.operator.preload = Vec::new();
        let authenticator = Authenticator::new(&options, jwt.clone());
        let accounts = match &jwt {
            Some(resolver) => Accounts::new(&resolver.with_accounts(&options), &server_name),
            None => Accounts::new(&options, &server_name),
        };
        let start_time = OffsetDateTime::now_utc();
        let closed_connections =
            crate::monitor::closed::ClosedConnections::new(options.max_closed_clients);
        Arc::new(Server {
            current_options: RwLock::new(Arc::new(options.clone())),
            config_load_time: Mutex::new(start_time),
            authorization_epoch: tokio::sync::watch::Sender::new(0),
            limits_epoch: tokio::sync::watch::Sender::new(0),
            options,
            server_id,
            server_keys,
            server_xkey: nkeys::XKey::new(),
            server_name,
            start_time,
            accounts,
            routes: OnceLock::new(),
            authenticator: RwLock::new(Arc::new(authenticator)),
            jwt,
            stats: ServerStats::default(),
            clients: Mutex::new(BTreeMap::new()),
            closed_connections,
            next_client_id: AtomicU64::new(1),
            client_address: OnceLock::new(),
            monitor_address: OnceLock::new(),
            monitor_tls_address: OnceLock::new(),
            route_address: OnceLock::new(),
            websocket: OnceLock::new(),
            jetstream: crate::jetstream_host::Slot::new(),
            meta: crate::jetstream_host::Slot::new(),
            jetstream_changes: Mutex::new(None),
            http_requests: Mutex::new(BTreeMap::new()),
            client_tls: RwLock::new(tls),
            info_template: RwLock::new(None),
            system_sequence: AtomicU64::new(0),
            lame_duck: tokio::sync::watch::Sender::new(false),
            jetstream_stopped: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Who may connect, as last loaded.
    pub fn authenticator(&self) -> Arc<Authenticator> {
        self.authenticator.read().clone()
    }

    /// The options as last loaded (start-up or the latest reload).
    pub fn current_options(&self) -> Arc<Options> {
        self.current_options.read().clone()
    }

    /// Take reloaded options (already checked by `config::reload::diff`): new connections
    /// use them; with `authorization`, existing ones are checked again.
    pub fn replace_options(&self, options: Options, authorization: bool) {
        if authorization {
            *self.authenticator.write() = Arc::new(Authenticator::new(&options, self.jwt.clone()));
        }
        *self.current_options.write() = Arc::new(options);
        *self.info_template.write() = None;
        *self.config_load_time.lock() = OffsetDateTime::now_utc();
        if authorization {
            self.authorization_epoch.send_modify(|epoch| *epoch += 1);
        }
    }

    /// Client TLS as configured now (a reload may replace it; connections keep theirs).
    pub fn client_tls(&self) -> Option<Arc<ClientTls>> {
        self.client_tls.read().clone()
    }

    /// A reload's TLS: new connections handshake with it; INFO is built again.
    pub(crate) fn replace_client_tls(&self, tls: Option<Arc<ClientTls>>) {
        *self.client_tls.write() = tls;
        *self.info_template.write() = None;
    }

    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Add a connection; false when max_connections is reached.
    pub fn register_client(&self, client: &Arc<ClientShared>) -> bool {
        let mut clients = self.clients.lock();
        let limit = self.current_options().max_connections;
        if limit >= 0 && clients.len() as i64 >= limit {
            return false;
        }
        clients.insert(client.id, client.clone());
        self.stats.total_connections.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Remove a connection and its subscriptions; fold its counters into the totals.
    pub fn unregister_client(&self, client: &Arc<ClientShared>) {
        let subscriptions: Vec<_> = client
            .subscriptions
            .lock()
            .drain()
            .map(|(_, s)| s)
            .collect();
        let account = client.account().unwrap_or(self.accounts.global());
        for subscription in &subscriptions {
            crate::accounts::imports::remove_shadows(subscription);
            account.router.remove(
                &subscription.subject,
                subscription.queue.as_deref(),
                &crate::router::Subscriber::Client(subscription.clone()),
            );
        }
        let reason = client.closing().unwrap_or(CloseReason::ClientClosed);
        if self.clients.lock().remove(&client.id).is_some() {
            self.closed_connections
                .record(client, &subscriptions, reason);
            let counters = &client.counters;
            let stats = &self.stats;
            stats
                .closed_in_msgs
                .fetch_add(counters.in_msgs.load(Ordering::Relaxed), Ordering::Relaxed);
            stats
                .closed_in_bytes
                .fetch_add(counters.in_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
            stats
                .closed_out_msgs
                .fetch_add(counters.out_msgs.load(Ordering::Relaxed), Ordering::Relaxed);
            stats.closed_out_bytes.fetch_add(
                counters.out_bytes.load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
        }
        if client.account().is_some() {
            crate::system::client_disconnected(self, client, reason);
        }
        tracing::debug!(
            "{} - cid:{} - Client connection closed: {}",
            client.address,
            client.id,
            reason.text()
        );
    }

    /// The INFO sent to `client` (`after_tls_first`: sent over TLS once a handshake-first
    /// client finished its handshake, where TLS is required whatever `allow_non_tls` says).
    pub fn encode_info(&self, out: &mut BytesMut, client: &ClientShared, after_tls_first: bool) {
        let info = self.client_info(client, after_tls_first);
        nats_proto::encode_info(out, &info);
    }

    /// The INFO nats-server sends after the PONG to the first PING of a client that sent
    /// CONNECT with `protocol` 1 or more: the server's INFO (no nonce) with `connect_info`, the
    /// client's account and whether it is the system account; `max_payload` as the client's
    /// connection allows it.
    pub fn encode_connect_info(
        &self,
        out: &mut BytesMut,
        client: &ClientShared,
        max_payload: usize,
    ) {
        let mut info = self.client_info(client, false);
        info.nonce.clear();
        info.max_payload = i32::try_from(max_payload).unwrap_or(i32::MAX);
        info.connect_info = true;
        let account = client.account().unwrap_or(self.accounts.global());
        info.remote_account = account.name.to_string();
        info.acc_is_sys = Arc::ptr_eq(account, self.accounts.system());
        nats_proto::encode_info(out, &info);
    }

    /// The INFO lame duck mode sends a client: `ldm`, and `connect_urls` without this server.
    pub(crate) fn encode_lame_duck_info(&self, out: &mut BytesMut, client: &ClientShared) {
        let mut info = self.client_info(client, false);
        info.nonce.clear();
        info.ldm = true;
        nats_proto::encode_info(out, &info);
    }

    fn client_info(&self, client: &ClientShared, after_tls_first: bool) -> ServerInfo {
        let cached = self.info_template.read().clone();
        let mut info = match cached {
            Some(template) => template,
            None => {
                let template = self.info_base();
                *self.info_template.write() = Some(template.clone());
                template
            }
        };
        info.client_id = client.id;
        info.client_ip = client.address.ip().to_string();
        if after_tls_first {
            info.tls_required = true;
            info.tls_available = false;
        }
        if let Some(nonce) = &client.nonce {
            info.nonce = nonce.clone();
        }
        match (self.websocket.get(), client.websocket.get()) {
            (Some(websocket), Some(_)) => {
                // nats-server's INFO to a websocket client: the websocket listener's host,
                // port and TLS, and its own authorization override.
                info.host = websocket.options.listen_host().to_string();
                info.port = websocket.address.port();
                info.tls_required = websocket.tls();
                info.tls_available = websocket.tls();
                info.tls_verify = false;
                if let Some(authenticator) = &websocket.authenticator {
                    info.auth_required = authenticator.required();
                }
                if let Some(routes) = self.routes() {
                    info.cluster = routes.cluster_name();
                    info.connect_urls = crate::route::websocket_connect_urls(self);
                }
            }
            _ => {
                if let Some(routes) = self.routes() {
                    info.cluster = routes.cluster_name();
                    info.connect_urls = crate::route::client_connect_urls(self);
                }
            }
        }
        info
    }

    /// The websocket listener, once started.
    pub fn websocket(&self) -> Option<&Arc<crate::websocket::Listener>> {
        self.websocket.get()
    }

    pub(crate) fn set_websocket(&self, listener: Arc<crate::websocket::Listener>) {
        let _ = self.websocket.set(listener);
    }

    /// Who may connect as `client`: the websocket block's override for its clients, else the
    /// server's.
    pub fn authenticator_for(&self, client: &ClientShared) -> Arc<Authenticator> {
        if client.websocket.get().is_some() {
            if let Some(authenticator) = self
                .websocket
                .get()
                .and_then(|websocket| websocket.authenticator.clone())
            {
                return authenticator;
            }
        }
        self.authenticator()
    }

    fn info_base(&self) -> ServerInfo {
        let options = self.current_options();
        let tls = self.client_tls();
        let port = self
            .client_address
            .get()
            .map_or(self.options.port.max(0) as u16, SocketAddr::port);
        ServerInfo {
            server_id: self.server_id.clone(),
            server_name: self.server_name.clone(),
            version: VERSION.into(),
            proto: 1,
            git_commit: GIT_COMMIT.unwrap_or_default().into(),
            go: GO_FIELD.into(),
            host: self.options.host.clone(),
            port,
            headers: true,
            auth_required: self.authenticator().required(),
            tls_required: tls.is_some() && !options.allow_non_tls,
            tls_available: tls.is_some() && options.allow_non_tls,
            tls_verify: tls.as_ref().is_some_and(|tls| tls.options.verify),
            max_payload: i32::try_from(options.max_payload).unwrap_or(i32::MAX),
            jetstream: self.jetstream.get().is_some(),
            // nats-server sends its JetStream API level with or without JetStream.
            api_lvl: jetstream_api::metadata::API_LEVEL as i32,
            xkey: self.server_xkey.public_key(),
            ..ServerInfo::default()
        }
    }

    /// Summed message counters: (in_msgs, in_bytes, out_msgs, out_bytes).
    pub fn message_totals(&self) -> (u64, u64, u64, u64) {
        let stats = &self.stats;
        let mut totals = (
            stats.closed_in_msgs.load(Ordering::Relaxed),
            stats.closed_in_bytes.load(Ordering::Relaxed),
            stats.closed_out_msgs.load(Ordering::Relaxed),
            stats.closed_out_bytes.load(Ordering::Relaxed),
        );
        for client in self.clients.lock().values() {
            let counters = &client.counters;
            totals.0 += counters.in_msgs.load(Ordering::Relaxed);
            totals.1 += counters.in_bytes.load(Ordering::Relaxed);
            totals.2 += counters.out_msgs.load(Ordering::Relaxed);
            totals.3 += counters.out_bytes.load(Ordering::Relaxed);
        }
        totals
    }

    /// The cluster's routes (`None` without a cluster).
    pub fn routes(&self) -> Option<&Arc<crate::route::Routes>> {
        self.routes.get()
    }

    /// Join a cluster (once, at start-up): every account's table announces its interest (an
    /// account added at run time from now on gets the routes when it is added).
    fn set_routes(&self, routes: Arc<crate::route::Routes>) {
        let _ = self.routes.set(routes.clone());
        for account in self.accounts.iter() {
            account.router.set_routes(routes.clone());
        }
    }

    /// Whether the server is in lame duck mode.
    pub fn in_lame_duck_mode(&self) -> bool {
        *self.lame_duck.borrow()
    }

    /// Resolves once lame duck mode begins (the accept loops stop there).
    pub(crate) async fn lame_duck_entered(&self) {
        let mut entered = self.lame_duck.subscribe();
        let _ = entered.wait_for(|entered| *entered).await;
    }

    /// JetStream while it runs here (`None` once stopped: shut down, or this server was
    /// removed from its cluster).
    pub(crate) fn running_jetstream(&self) -> Option<nats_jetstream::JetStream> {
        self.jetstream
            .get()
            .filter(|_| !self.jetstream_stopped.load(Ordering::Acquire))
    }

    /// JetStream was started or stopped by a reload (`jetstream_host.rs`): it runs (or not)
    /// from now on, and the INFO sent to clients says so.
    pub(crate) fn jetstream_changed(&self) {
        self.jetstream_stopped.store(false, Ordering::Release);
        *self.info_template.write() = None;
    }

    /// Stops the meta group, the streams' groups and JetStream, once (lame duck mode does it
    /// before closing the clients, shutdown otherwise, and a removal from the cluster).
    pub(crate) async fn stop_jetstream(&self) {
        if self.jetstream_stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(meta) = self.meta.get() {
            meta.shutdown().await;
        }
        if let Some(jetstream) = self.jetstream.get() {
            tracing::info!("Initiating JetStream Shutdown...");
            jetstream.shutdown().await;
            tracing::info!("JetStream Shutdown");
        }
    }

    pub fn identity(&self) -> ServerIdentity {
        ServerIdentity {
            server_id: self.server_id.clone(),
            server_name: self.server_name.clone(),
            version: VERSION.into(),
        }
    }
}

fn log_banner(server: &Server) {
    tracing::info!("Starting nats-server");
    tracing::info!("  Version:  {}", VERSION);
    tracing::info!("  Git:      [{}]", GIT_COMMIT.unwrap_or("not set"));
    tracing::info!("  Name:     {}", server.server_name);
    tracing::info!("  ID:       {}", server.server_id);
    for line in crate::config::feature_flags::banner(&server.options.feature_flags) {
        tracing::info!("{line}");
    }
    if let Some(path) = &server.options.config_file {
        tracing::info!("Using configuration file: {}", path.display());
    }
    for warning in &server.options.warnings {
        tracing::warn!("{warning}");
    }
    if server.options.has_plaintext_passwords() {
        tracing::warn!("Plaintext passwords detected, use nkeys or bcrypt");
    }
    if server.options.max_payload > crate::config::options::MAX_PAYLOAD_DISCOURAGED {
        tracing::warn!(
            "Maximum payloads over 8.00 MB are generally discouraged and could lead to poor performance"
        );
    }
}

/// Run the server until SIGINT/SIGTERM.
pub async fn run(options: Options) -> Result<(), ServerError> {
    let tls = ClientTls::build(&options).map_err(ServerError::Tls)?;
    let server = Server::new(options, tls);
    log_banner(&server);
    let routes = server.options.cluster.as_ref().map(|cluster| {
        let routes = Arc::new(crate::route::Routes::new(cluster));
        server.set_routes(routes.clone());
        routes
    });

    if server.options.jetstream.enabled {
        // Each account with JetStream gets its streams and limits; every other account but
        // the system account answers `$JS.API` with 10039, as nats-server. A configuration
        // that enables JetStream in no account leaves it running (as nats-server) for none.
        let served = server.accounts.jetstream();
        let accounts = served
            .iter()
            .map(|(account, limits, tiers)| nats_jetstream::AccountSetup {
                name: account.name.to_string(),
                transport: Arc::new(ServerTransport::new(Arc::downgrade(account))),
                limits: limits.clone(),
                tiers: tiers.clone(),
            })
            .collect();
        let refused = server
            .accounts
            .iter()
            .filter(|account| {
                !Arc::ptr_eq(account, server.accounts.system())
                    && !served
                        .iter()
                        .any(|(served, _, _)| Arc::ptr_eq(account, served))
            })
            .map(|account| {
                let transport = Arc::new(ServerTransport::new(Arc::downgrade(&account)));
                (
                    account.name.to_string(),
                    transport as Arc<dyn nats_jetstream::Transport>,
                )
            })
            .collect();
        crate::jetstream_host::start(&server, &server.options, accounts, refused)
            .await
            .map_err(ServerError::JetStream)?;
    }

    crate::system::start(&server);

    start_monitoring(&server).await?;

    let host = server.options.host.clone();
    let (listener, address) = crate::listener::bind(&host, server.options.port).await?;
    let _ = server.client_address.set(address);
    tracing::info!("Listening for client connections on {}", address);
    if let Some(tls) = &server.options.tls {
        let handshake_first_only = tls.handshake_first && tls.handshake_first_fallback.is_none();
        if server.options.allow_non_tls && !handshake_first_only {
            tracing::info!("TLS available for client connections");
        } else {
            tracing::info!("TLS required for client connections");
        }
        if handshake_first_only {
            tracing::warn!(
                "Clients that are not using \"TLS Handshake First\" option will fail to connect"
            );
        }
    }

    // The websocket listener first: the route INFO carries its URLs (`ws_connect_urls`).
    if let Some(websocket) = server.options.websocket.clone().filter(|ws| ws.port != 0) {
        crate::websocket::start(&server, &websocket).await?;
    }
    if let Some(routes) = routes {
        crate::route::start(&server, routes).await?;
    }

    if let Some(path) = &server.options.pid_file {
        std::fs::write(path, std::process::id().to_string()).map_err(|error| {
            ServerError::PidFile(format!(
                "open {}: {}",
                path.display(),
                go_compat::errno_text(&error)
            ))
        })?;
    }
    let ports_file = write_ports_file(&server);
    tracing::info!("Server is ready");

    let accept_server = server.clone();
    let accept = Arc::new(
        crate::listener::accept_on_thread(listener, move |stream, peer| {
            client::spawn_connection(&accept_server, stream, crate::listener::peer_as_go(peer))
        })
        .map_err(ServerError::Io)?,
    );
    // Lame duck mode: the listener stops listening here.
    let lame_duck_server = server.clone();
    let lame_duck_accept = accept.clone();
    tokio::spawn(async move {
        lame_duck_server.lame_duck_entered().await;
        lame_duck_accept.stop();
    });

    crate::shutdown::wait_for_signal(&server).await;
    accept.stop();
    crate::shutdown::shut_down(&server, ports_file).await;
    Ok(())
}

/// The ports file (`--ports_file_dir`); as nats-server, one that cannot be written is logged
/// and the server runs on.
fn write_ports_file(server: &Server) -> Option<std::path::PathBuf> {
    let dir = server.options.ports_file_dir.as_ref()?;
    let executable = std::env::current_exe()
        .ok()
        .and_then(|path| {
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "nats-server".into());
    let path = dir.join(format!("{executable}_{}.ports", std::process::id()));
    let mut ports = serde_json::Map::new();
    if let Some(address) = server.client_address.get() {
        ports.insert(
            "nats".into(),
            serde_json::json!([format!("nats://{address}")]),
        );
    }
    if let Some(address) = server.monitor_address.get() {
        ports.insert(
            "monitoring".into(),
            serde_json::json!([format!("http://{address}")]),
        );
    }
    if let Some(address) = server.monitor_tls_address.get() {
        ports.insert(
            "monitoring".into(),
            serde_json::json!([format!("https://{address}")]),
        );
    }
    let text = serde_json::Value::Object(ports).to_string();
    if let Err(error) = std::fs::write(&path, text) {
        let path = path.display();
        tracing::error!(
            "Error writing ports file ({path}): open {path}: {}",
            go_compat::errno_text(&error)
        );
        return None;
    }
    Some(path)
}

/// Bind the monitoring port (`http_port` or `https_port`, not both, as nats-server) and serve it.
async fn start_monitoring(server: &Arc<Server>) -> Result<(), ServerError> {
    let options = &server.options;
    if options.http_port != 0 && options.https_port != 0 {
        return Err(ServerError::Monitoring(format!(
            "can't specify both HTTP ({}) and HTTPs ({}) ports",
            options.http_port, options.https_port
        )));
    }
    let (configured, tls) = if options.https_port != 0 {
        let Some(acceptor) = server.client_tls().map(|tls| tls.acceptor.clone()) else {
            return Err(ServerError::Monitoring(
                "TLS cert and key required for HTTPS".into(),
            ));
        };
        (options.https_port, Some(acceptor))
    } else if options.http_port != 0 {
        (options.http_port, None)
    } else {
        return Ok(());
    };
    let host = options
        .http_host
        .clone()
        .unwrap_or_else(|| options.host.clone());
    // nats-server's wording: `Can't start monitoring: can't listen to the monitor port: listen
    // tcp 0.0.0.0:8222: bind: address already in use`.
    let (listener, address) = crate::listener::bind(&host, configured)
        .await
        .map_err(|error| match error {
            ServerError::Listen { reason, .. } => {
                ServerError::Monitoring(format!("can't listen to the monitor port: {reason}"))
            }
            other => other,
        })?;
    if tls.is_some() {
        let _ = server.monitor_tls_address.set(address);
        tracing::info!("Starting https monitor on {}", address);
    } else {
        let _ = server.monitor_address.set(address);
        tracing::info!("Starting http monitor on {}", address);
    }
    tokio::spawn(crate::monitor::serve(server.clone(), listener, tls));
    Ok(())
}

#[cfg(test)]
mod version_tests {
    #[test]
    fn reported_version_matches_the_jetstream_api_version() {
        assert_eq!(super::VERSION, jetstream_api::metadata::SERVER_VERSION);
    }
}
