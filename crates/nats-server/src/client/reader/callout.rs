//! CONNECT through an authorization callout (`authorization { auth_callout { } }`): who is
//! called out for, and the request/reply with the service in the callout account, on the
//! reader task (the connection waits; nobody else does). The JWTs are built and checked in
//! `security/callout.rs`.

use super::Session;
use crate::config::AuthCallout;
use crate::router::{Delivery, PendingFlush};
use crate::security::auth::{Authenticated, AuthorizationViolation, UserPermissions};
use crate::security::callout::{self, ClientFacts, ServerFacts};
use bytes::Bytes;
use nats_proto::ConnectOptions;
use std::sync::Arc;

impl Session {
    /// Whether a CONNECT that is not an `auth_users` user goes to the callout service
    /// (nats-server's rule): every such client, or with `allowed_accounts` only those whose
    /// configured authentication (`configured`) places them in `$G` or an allowed account.
    fn in_callout_scope(
        &self,
        callout: &AuthCallout,
        configured: &Result<Authenticated, AuthorizationViolation>,
    ) -> bool {
        let Ok((_, user, _)) = configured else {
            return true;
        };
        let account = self
            .server
            .authenticator_for(&self.shared)
            .account_of(user.as_deref())
            .to_string();
        account == crate::accounts::GLOBAL_ACCOUNT || callout.allowed_accounts.contains(&account)
    }

    /// Authenticates a CONNECT when an auth callout applies; `None` when none does (the
    /// normal checks apply). In server config mode, `authorization { auth_callout }`; in
    /// operator mode, a user JWT (the "sentinel") of an account whose JWT has `authorization`.
    /// Users bound to the callout account may not publish to the request subject.
    pub(super) async fn authenticate_with_callout(
        &mut self,
        connect: &ConnectOptions,
    ) -> Option<Result<Authenticated, AuthorizationViolation>> {
        if self.connected {
            return None;
        }
        let options = self.server.current_options();
        let authenticator = self.server.authenticator_for(&self.shared);
        let configured = || {
            authenticator.authenticate(
                connect,
                self.shared.nonce.as_deref(),
                self.shared.certificate.get(),
                self.shared.address.ip(),
            )
        };
        let (callout, outcome) = if let Some(callout) = options.auth_callout.clone() {
            let raw_user = connect
                .nkey
                .as_deref()
                .filter(|nkey| !nkey.is_empty())
                .or(connect.user.as_deref())
                .unwrap_or_default();
            // The configured checks run only where they decide something: for the service's
            // own users, and for the scope of `allowed_accounts`.
            let outcome = if callout.auth_users.iter().any(|user| user == raw_user) {
                configured()
            } else if callout.allowed_accounts.is_empty() {
                self.call_out(
                    &callout,
                    callout::Trust::Config,
                    connect,
                    options.auth_timeout(),
                )
                .await
            } else {
                let configured = configured();
                if self.in_callout_scope(&callout, &configured) {
                    self.call_out(
                        &callout,
                        callout::Trust::Config,
                        connect,
                        options.auth_timeout(),
                    )
                    .await
                } else {
                    configured
                }
            };
            (callout, outcome)
        } else {
            let resolver = self.server.jwt.clone()?;
            // The user JWT is checked once: its outcome stands when no callout applies.
            let configured = configured();
            let applicable = match &configured {
                Ok((_, _, Some(user))) => resolver.account(&user.account).and_then(|account| {
                    callout::of_account(&account)
                        .map(|callout| (account, callout, user.user.clone()))
                }),
                _ => None,
            };
            let Some((account, callout, user)) = applicable else {
                return Some(configured);
            };
            let outcome = if callout.auth_users.contains(&user) {
                configured
            } else {
                let trust = callout::Trust::Operator {
                    account: &account,
                    resolver: &resolver,
                };
                self.call_out(&callout, trust, connect, options.auth_timeout())
                    .await
            };
            (callout, outcome)
        };
        Some(outcome.map(|(permissions, user, jwt)| {
            let account = match &jwt {
                Some(jwt) => jwt.account.clone(),
                None => authenticator.account_of(user.as_deref()).to_string(),
            };
            let permissions = if account == callout.account {
                Some(Arc::new(UserPermissions::with_publish_denied(
                    permissions.as_deref(),
                    callout::SUBJECT,
                )))
            } else {
                permissions
            };
            (permissions, user, jwt)
        }))
    }

    /// Asks the service and waits (up to `timeout`) for its answer; any failure is an
    /// authorization violation, logged with nats-server's reason.
    async fn call_out(
        &self,
        callout: &AuthCallout,
        trust: callout::Trust<'_>,
        connect: &ConnectOptions,
        timeout: std::time::Duration,
    ) -> Result<Authenticated, AuthorizationViolation> {
        let Some(account) = self.server.accounts.lookup(&callout.account) else {
            tracing::warn!(
                "No valid account {:?} for auth callout request",
                callout.account
            );
            return Err(AuthorizationViolation);
        };
        let user_key = nkeys::KeyPair::new_user();
        let user_nkey = user_key.public_key();
        let service_xkey = match &callout.xkey {
            Some(key) => {
                Some(nkeys::XKey::from_public_key(key).map_err(|_| AuthorizationViolation)?)
            }
            None => None,
        };
        let server_xkey = self.server.server_xkey.public_key();
        let cluster = self.server.routes().map(|routes| routes.cluster_name());
        let options = self.server.current_options();
        let server = ServerFacts {
            keys: &self.server.server_keys,
            name: &self.server.server_name,
            host: &options.host,
            version: crate::server::VERSION,
            cluster: cluster.as_deref(),
            tags: &options.server_tags,
            xkey: service_xkey.as_ref().map(|_| server_xkey.as_str()),
        };
        let host = self.shared.address.ip().to_string();
        let client = ClientFacts {
            host: &host,
            id: self.shared.id,
            kind: if self.shared.websocket.get().is_some() {
                "websocket"
            } else {
                "nats"
            },
            nonce: self.shared.nonce.as_deref(),
        };
        let seconds = i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX);
        let token = callout::request(callout, &server, &client, connect, &user_nkey, seconds)
            .map_err(|error| {
                tracing::warn!("{error}");
                AuthorizationViolation
            })?;
        let (payload, headers) = match &service_xkey {
            Some(service) => {
                let sealed = self
                    .server
                    .server_xkey
                    .seal(token.as_bytes(), service)
                    .map_err(|error| {
                        tracing::warn!("Error encrypting auth request claim: {error}");
                        AuthorizationViolation
                    })?;
                let headers = format!(
                    "NATS/1.0\r\n{}: {server_xkey}\r\n\r\n",
                    callout::XKEY_HEADER
                );
                (Bytes::from(sealed), Some(Bytes::from(headers)))
            }
            None => (Bytes::from(token), None),
        };

        let inbox = format!("_INBOX.{}", crate::security::identity::new_nuid());
        let (sender, answer) = tokio::sync::oneshot::channel::<Bytes>();
        let sender = parking_lot::Mutex::new(Some(sender));
        let subscription = account.router.subscribe_internal(
            &inbox,
            None,
            Arc::new(move |message: nats_jetstream::Message| {
                if let Some(sender) = sender.lock().take() {
                    let _ = sender.send(message.payload.clone());
                }
            }),
        );
        let subject = Bytes::from_static(callout::SUBJECT.as_bytes());
        let reply = Bytes::from(inbox);
        let mut pending = PendingFlush::default();
        account.router.route(
            None,
            &Delivery {
                subject: &subject,
                reply: Some(&reply),
                headers: headers.as_ref(),
                payload: &payload,
            },
            &mut pending,
        );
        pending.flush();
        let answered = tokio::time::timeout(timeout, answer).await;
        account.router.unsubscribe_internal(subscription);
        let Ok(Ok(answer)) = answered else {
            tracing::debug!(
                "Authorization callout response not received in time on account {:?}",
                callout.account
            );
            return Err(AuthorizationViolation);
        };
        let service_public = service_xkey;
        let encryption = service_public
            .as_ref()
            .map(|service| (&self.server.server_xkey, service));
        match callout::check_response(
            callout,
            trust,
            &answer,
            &user_nkey,
            &self.server.server_id,
            encryption,
        ) {
            Ok(authorized) => {
                let permissions = authorized
                    .user
                    .permissions
                    .as_ref()
                    .map(|permissions| Arc::new(UserPermissions::compile(permissions)));
                Ok((
                    permissions,
                    Some(authorized.display_name),
                    Some(Box::new(authorized.user)),
                ))
            }
            Err(reason) => {
                tracing::warn!("{reason}");
                Err(AuthorizationViolation)
            }
        }
    }
}
