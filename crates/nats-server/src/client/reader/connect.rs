//! CONNECT on the reader task: credentials checked (bcrypt off the task), the account and
//! permissions taken, the INFO that follows; in operator mode the user JWT's revocation and a
//! reload's new authorization checked against the accepted CONNECT.

use super::{Next, Session, ERR_NO_RESPONDERS_HEADERS};
use crate::client::{CloseReason, ResponsePermits};
use nats_proto::{ClientParser, ConnectOptions};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

impl Session {
    /// bcrypt costs tens to hundreds of milliseconds of CPU: with hashed secrets configured,
    /// CONNECT is checked on the blocking pool so the worker keeps serving other connections.
    /// [`Session::connect`] uses the outcome.
    /// With an authorization callout configured, the callout decides instead
    /// (`callout.rs`).
    pub(super) async fn authenticate_off_thread(&mut self, connect: &ConnectOptions) {
        crate::system::fetch_for_connect(&self.server, connect).await;
        if let Some(outcome) = self.authenticate_with_callout(connect).await {
            self.authenticated = Some(outcome);
            return;
        }
        let authenticator = self.server.authenticator_for(&self.shared);
        if self.connected || !authenticator.required() || !authenticator.has_hashed_secrets() {
            return;
        }
        let server = self.server.clone();
        let shared = self.shared.clone();
        let connect = connect.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            server.authenticator_for(&shared).authenticate(
                &connect,
                shared.nonce.as_deref(),
                shared.certificate.get(),
                shared.address.ip(),
            )
        })
        .await;
        self.authenticated = outcome.ok();
    }

    pub(super) fn connect(&mut self, connect: ConnectOptions, parser: &mut ClientParser) -> Next {
        self.shared.estimate_rtt();
        let authenticator = self.server.authenticator_for(&self.shared);
        if authenticator.required() && !self.connected {
            let outcome = match self.authenticated.take() {
                Some(outcome) => outcome,
                None => authenticator.authenticate(
                    &connect,
                    self.shared.nonce.as_deref(),
                    self.shared.certificate.get(),
                    self.shared.address.ip(),
                ),
            };
            let outcome = outcome.and_then(|(permissions, user, jwt)| {
                let account = match &jwt {
                    Some(jwt) => self
                        .server
                        .accounts
                        .lookup(&jwt.account)
                        .ok_or(crate::security::auth::AuthorizationViolation)?,
                    None => self
                        .server
                        .accounts
                        .lookup(authenticator.account_of(user.as_deref()))
                        .unwrap_or_else(|| self.account.clone()),
                };
                Ok((permissions, user, jwt, account))
            });
            match outcome {
                Ok((permissions, user, jwt, account)) => {
                    if let Some(responses) = permissions.as_ref().and_then(|p| p.responses) {
                        let _ = self.shared.response_permits.set(ResponsePermits {
                            permission: responses,
                            permits: parking_lot::Mutex::new(HashMap::new()),
                        });
                    }
                    self.permissions = permissions;
                    self.account = account;
                    if let Some(payload) = jwt.as_ref().map(|jwt| jwt.payload).filter(|&p| p >= 0) {
                        let payload = usize::try_from(payload).unwrap_or(usize::MAX);
                        parser.set_max_payload(parser.max_payload().min(payload));
                    }
                    self.jwt_user = jwt;
                    self.shared.meta.lock().user = user.or_else(|| raw_user(&connect));
                }
                Err(_) => {
                    self.shared.meta.lock().user = raw_user(&connect);
                    tracing::error!(
                        "{} - cid:{} - authentication error",
                        self.shared.address,
                        self.shared.id
                    );
                    self.send_err("Authorization Violation");
                    return Next::Close(CloseReason::AuthenticationViolation);
                }
            }
        }
        if !authenticator.required() && !self.connected {
            self.shared.meta.lock().user = raw_user(&connect);
        }
        self.connect_options = Some(connect.clone());
        if connect.no_responders && !connect.headers {
            self.send_err(ERR_NO_RESPONDERS_HEADERS);
            return Next::Close(CloseReason::ProtocolViolation);
        }
        let first = !self.connected;
        if first {
            self.shared.set_account(self.account.clone());
        }
        self.connected = true;
        self.verbose = connect.verbose;
        self.pedantic = connect.pedantic;
        self.headers = connect.headers;
        self.no_responders = connect.no_responders;
        parser.set_headers_supported(true);
        self.shared
            .headers
            .store(connect.headers, Ordering::Relaxed);
        self.shared.echo.store(connect.echo, Ordering::Relaxed);
        {
            let mut meta = self.shared.meta.lock();
            meta.name = connect.name.clone();
            meta.lang = connect.lang.clone();
            meta.version = connect.version.clone();
            meta.protocol = connect.protocol;
        }
        self.ok();
        if first {
            crate::system::client_connected(&self.server, &self.shared);
        }
        Next::Continue
    }
}

impl Session {
    /// Operator mode: the account's JWT, as last updated, revokes this connection's user (or
    /// the account is gone).
    pub(super) fn jwt_revoked(&self) -> Option<(&'static str, CloseReason)> {
        let (Some(user), Some(resolver)) = (&self.jwt_user, &self.server.jwt) else {
            return None;
        };
        match resolver.account(&user.account) {
            // Deleted from the full resolver: nats-server expires the account.
            None => Some((
                "Account Authentication Expired",
                CloseReason::AuthenticationExpired,
            )),
            Some(account) if account.revoked(&user.user, user.issued_at) => {
                Some(("User Authentication Revoked", CloseReason::Revocation))
            }
            Some(_) => None,
        }
    }

    /// A reload changed `max_payload` or `max_control_line`: this connection takes them at
    /// once, as nats-server's reload stores them in every client (a user JWT's lower payload
    /// limit still wins).
    pub(super) fn take_limits(&mut self, parser: &mut ClientParser) {
        let options = self.server.current_options();
        let mut max_payload = usize::try_from(options.max_payload.max(0)).unwrap_or(usize::MAX);
        if let Some(payload) = self
            .jwt_user
            .as_ref()
            .map(|jwt| jwt.payload)
            .filter(|&payload| payload >= 0)
        {
            max_payload = max_payload.min(usize::try_from(payload).unwrap_or(usize::MAX));
        }
        parser.set_max_payload(max_payload);
        parser.set_max_control_line(
            usize::try_from(options.max_control_line.max(0)).unwrap_or(usize::MAX),
        );
    }

    /// A reload changed authorization: check this connection's CONNECT against it as
    /// nats-server's `reloadAuthorization` does. A user no longer configured, or now in
    /// another account, is closed (it reconnects into its new account); credentials no longer
    /// accepted close it with `Authorization Violation`; otherwise the new permissions apply
    /// from now on, each subscription they no longer allow is removed with a `-ERR`, and the
    /// others follow the account's stream imports as reloaded.
    pub(super) fn authorize_again(&mut self) -> Next {
        let next = self.check_credentials_again();
        if matches!(next, Next::Continue) {
            let subscriptions: Vec<_> =
                self.shared.subscriptions.lock().values().cloned().collect();
            for subscription in &subscriptions {
                crate::accounts::imports::refresh_shadows(&self.account, subscription);
            }
        }
        next
    }

    fn check_credentials_again(&mut self) -> Next {
        let authenticator = self.server.authenticator_for(&self.shared);
        if !authenticator.required() {
            self.permissions = None;
            self.publish_allowed.clear();
            return Next::Continue;
        }
        let connect = self.connect_options.clone().unwrap_or_default();
        if self.jwt_user.is_none() && authenticator.user_gone(&connect) {
            return Next::Close(CloseReason::ClientClosed);
        }
        let outcome = authenticator.authenticate(
            &connect,
            self.shared.nonce.as_deref(),
            self.shared.certificate.get(),
            self.shared.address.ip(),
        );
        let Ok((permissions, user, _)) = outcome else {
            let user = self.shared.meta.lock().user.clone().unwrap_or_default();
            tracing::error!(
                "{} - cid:{} - authentication error - User {user:?}",
                self.shared.address,
                self.shared.id
            );
            self.send_err("Authorization Violation");
            return Next::Close(CloseReason::AuthenticationViolation);
        };
        if self.jwt_user.is_none()
            && authenticator.account_of(user.as_deref()) != &*self.account.name
        {
            return Next::Close(CloseReason::ClientClosed);
        }
        self.shared.meta.lock().user = user;
        self.publish_allowed.clear();
        self.permissions = permissions;
        let Some(permissions) = self.permissions.clone() else {
            return Next::Continue;
        };
        let subscriptions: Vec<_> = self.shared.subscriptions.lock().values().cloned().collect();
        for subscription in subscriptions {
            let queue = subscription.queue.as_deref();
            if permissions.can_subscribe(&subscription.subject, queue) {
                continue;
            }
            self.account
                .router
                .remove_client_subscription(&subscription);
            let sid = String::from_utf8_lossy(&subscription.sid).into_owned();
            tracing::info!(
                "Removed sub {:?} (sid {sid:?}) for User {:?} - not authorized",
                subscription.subject,
                self.shared.meta.lock().user.clone().unwrap_or_default()
            );
            let text = nats_proto::err_text::permissions_violation_subscription(
                &subscription.subject,
                queue,
            );
            self.send_err(&format!("{text} (sid \"{sid}\")"));
        }
        Next::Continue
    }
}

/// The user CONNECT names, as nats-server shows it in `/connz` (`authorized_user`, the `user`
/// filter) where no authenticated user stands for it: the nkey, else the user name, else
/// `[REDACTED]` for a token.
fn raw_user(connect: &ConnectOptions) -> Option<String> {
    let named = |value: &Option<String>| value.clone().filter(|text| !text.is_empty());
    named(&connect.nkey)
        .or_else(|| named(&connect.user))
        .or_else(|| named(&connect.auth_token).map(|_| "[REDACTED]".to_string()))
}
