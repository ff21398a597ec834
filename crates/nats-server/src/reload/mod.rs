//! Reloading the configuration file while running (SIGHUP, `--signal reload`), as
//! nats-server's `Reload`: the file is read again with the command-line flags applied over it,
//! compared with the running options (`config::reload::diff`), and either refused whole (the
//! running configuration stays, the reason is logged) or applied: logging at once, new
//! connections with the new limits and client TLS (certificates rotated under the same paths
//! included), existing connections checked against the new
//! authorization by their readers (`client/reader.rs`). SIGUSR1 reopens the log file.
//!
//! Accounts and mappings are applied by `accounts.rs` (the table updated in place before the
//! new authorization reaches the connections), the cluster's routes by `routes.rs`, a lower
//! `max_connections` by `limits.rs`; a new `max_payload` or `max_control_line` reaches the
//! connections' readers through `Server::limits_epoch`.
//!
//! Called by the signal loop in `server.rs` and the `$SYS.REQ.SERVER.<id>.RELOAD` responder
//! (`system/`); knows nothing of sockets.

mod accounts;
mod jetstream;
mod limits;
mod routes;

use crate::cli::Flags;
use crate::config::{apply_config_file, Options};
use crate::server::Server;
use std::sync::Arc;

/// Reload and log the outcome as nats-server does.
pub fn reload_logged(server: &Arc<Server>) {
    if let Err(error) = reload(server) {
        tracing::error!("Failed to reload server configuration: {error}");
    }
}

/// Read the config file again and apply what changed; on error nothing changes.
pub fn reload(server: &Arc<Server>) -> Result<(), String> {
    let Some(path) = server.options.config_file.clone() else {
        return Err("can only reload config when a file is provided using -c or --config".into());
    };
    let mut options = Options::default();
    apply_config_file(&mut options, &path).map_err(|error| error.to_string())?;
    // The flags win over the file, as at start-up.
    let flags = Flags::parse(std::env::args().skip(1)).map_err(|error| error.to_string())?;
    flags.apply(&mut options)?;
    options.validate()?;
    let running = server.current_options();
    let mut changes = crate::config::reload::diff(&running, &options)?;
    // Client TLS is built again whenever it is configured (certificates rotated under the
    // same paths are picked up); a file that does not load refuses the whole reload.
    let tls = crate::security::tls::ClientTls::build(&options)?;
    let route_tls = routes::prepare(server, &options)?;
    // Websocket TLS likewise (its presence cannot change: `no_tls` is not reloadable).
    let websocket_tls = match (server.websocket(), options.websocket.as_ref()) {
        (Some(_), Some(websocket)) => websocket
            .tls
            .as_ref()
            .map(crate::websocket::tls_acceptor)
            .transpose()?,
        _ => None,
    };
    let rotated = match (&tls, server.client_tls()) {
        (Some(new), Some(old)) => !changes.tls && new.files != old.files,
        _ => false,
    };
    if rotated {
        changes
            .notices
            .push(crate::config::reload::tls_config_notice(&options));
    }
    if changes.logging {
        crate::logging::reconfigure(
            options.debug,
            options.trace,
            options.logtime,
            options.logtime_utc,
            options.log_file.as_deref(),
        )
        .map_err(|error| format!("cannot open log file: {error}"))?;
    }
    if running.pid_file != options.pid_file {
        if let Some(pid_file) = &options.pid_file {
            std::fs::write(pid_file, std::process::id().to_string())
                .map_err(|error| format!("could not write pidfile: {error}"))?;
        }
    }
    if running.max_connections != options.max_connections {
        limits::close_over_max_connections(server, options.max_connections);
    }
    for notice in &changes.notices {
        tracing::info!("{notice}");
    }
    if let (Some(jetstream), (max_memory, max_store)) =
        (server.jetstream.get(), changes.jetstream_limits)
    {
        if max_memory.is_some() || max_store.is_some() {
            for notice in jetstream.raise_limits(max_memory, max_store) {
                tracing::info!("{notice}");
            }
        }
    }
    let removed = if changes.accounts {
        accounts::apply(server, &running, &options)
    } else {
        Vec::new()
    };
    if changes.accounts || changes.jetstream {
        jetstream::apply(server, &running, &options, &removed, changes.jetstream);
    }
    let start_jetstream = changes.jetstream && options.jetstream.enabled;
    if changes.jetstream && !options.jetstream.enabled {
        jetstream::stop(server);
    }
    if changes.routes {
        routes::apply(server, &running, &options);
    }
    let cluster_authorization = changes.cluster_authorization;
    let cluster_permissions = changes.cluster_permissions;
    let cluster = changes.cluster;
    let parser_limits = running.max_payload != options.max_payload
        || running.max_control_line != options.max_control_line;
    server.replace_options(options, changes.authorization);
    if parser_limits {
        server.limits_epoch.send_modify(|epoch| *epoch += 1);
    }
    if cluster_authorization {
        routes::authorize(server, &server.current_options());
    }
    if cluster_permissions {
        routes::permissions(server, &server.current_options());
    }
    routes::rename_and_secure(server, &server.current_options(), route_tls);
    if cluster {
        tracing::info!("Reloaded: cluster");
    }
    server.replace_client_tls(tls);
    if let (Some(listener), Some(acceptor)) = (server.websocket(), websocket_tls) {
        listener.replace_tls(acceptor);
    }
    if start_jetstream {
        jetstream::start(server, &server.current_options());
    }
    tracing::info!("Reloaded server configuration");
    Ok(())
}

/// SIGUSR1: reopen the log file (logrotate moved it), with nats-server's notices.
pub fn reopen_log_file(server: &Server) {
    if server.current_options().log_file.is_none() {
        tracing::info!("File log re-open ignored, not a file logger");
        return;
    }
    match crate::logging::reopen() {
        Ok(()) => tracing::info!("File log re-opened"),
        Err(error) => tracing::error!("Error re-opening log file: {error}"),
    }
}
