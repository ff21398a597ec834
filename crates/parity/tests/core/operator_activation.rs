//! Operator mode: imports of private (`token_req`) exports need an activation token signed by
//! the exporting account (or a signing key of it) naming the importing account, the import's
//! kind and a subject holding the import's; expired tokens and tokens the export revokes admit
//! nothing (nats-jwt's `Import.Validate`, nats-server's `checkActivation`). Passes against
//! nats-server too.

use super::jwt_builder::{account_jwt, creds, now, operator_config, sign, user_jwt, Trust};
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::TestServer;

const WAIT: Duration = Duration::from_secs(10);

/// An activation token from `signer` (the exporter, or its signing key with `issuer_account`)
/// letting `importer` take `subject` of kind `kind`; `extra` may set `iat` or `exp`.
fn activation(
    signer: &nkeys::KeyPair,
    issuer_account: Option<&str>,
    importer: &str,
    subject: &str,
    kind: &str,
    extra: Value,
) -> String {
    let mut nats = json!({"subject": subject, "kind": kind, "type": "activation", "version": 2});
    if let Some(account) = issuer_account {
        nats["issuer_account"] = json!(account);
    }
    let mut claims = json!({"sub": importer, "name": "activation", "nats": nats});
    if let Value::Object(fields) = extra {
        for (key, value) in fields {
            claims[key] = value;
        }
    }
    sign(claims, signer)
}

/// One importing account: its key, and its user's creds.
struct Importer {
    key: nkeys::KeyPair,
    creds: String,
}

impl Importer {
    fn new() -> Importer {
        let key = nkeys::KeyPair::new_account();
        let user = nkeys::KeyPair::new_user();
        let creds = creds(&user_jwt(&user, &key, None, json!({})), &user);
        Importer { key, creds }
    }

    /// Its JWT importing from `exporter` the private stream `private.>` with `stream` and the
    /// private service `private.service` with `service` (none: no token), and the public
    /// stream `public.>`.
    fn jwt(
        &self,
        trust: &Trust,
        exporter: &str,
        stream: Option<&str>,
        service: Option<&str>,
    ) -> String {
        let mut private = json!({"subject": "private.>", "account": exporter, "type": "stream"});
        let mut service_import =
            json!({"subject": "private.service", "account": exporter, "type": "service"});
        if let Some(token) = stream {
            private["token"] = json!(token);
        }
        if let Some(token) = service {
            service_import["token"] = json!(token);
        }
        let public = json!({"subject": "public.>", "account": exporter, "type": "stream"});
        account_jwt(
            &self.key,
            &trust.operator,
            json!({"imports": [private, public, service_import]}),
        )
    }
}

/// Returns once the server has taken `client`'s subscriptions: it answers the user-info
/// request sent after them (a flush right after connecting can be answered by the PONG of
/// the handshake's PING, before the server has read the SUBs).
async fn settle(client: &async_nats::Client) {
    tokio::time::timeout(WAIT, client.request("$SYS.REQ.USER.INFO", "".into()))
        .await
        .expect("user info in time")
        .expect("user info");
}

/// A user of `exporter` connected, with a responder answering `private.service` with
/// `answer` (abort the task to stop it).
async fn exporter_answering(
    server: &TestServer,
    exporter: &nkeys::KeyPair,
) -> (async_nats::Client, tokio::task::JoinHandle<()>) {
    let exporter_user = nkeys::KeyPair::new_user();
    let exporter_client = async_nats::ConnectOptions::with_credentials(&creds(
        &user_jwt(&exporter_user, exporter, None, json!({})),
        &exporter_user,
    ))
    .expect("creds parse")
    .connect(server.url())
    .await
    .expect("exporter connects");
    let mut responder = exporter_client.subscribe("private.service").await.unwrap();
    settle(&exporter_client).await;
    let answering = exporter_client.clone();
    let answers = tokio::spawn(async move {
        while let Some(request) = responder.next().await {
            if let Some(reply) = request.reply {
                let _ = answering.publish(reply, "answer".into()).await;
            }
        }
    });
    (exporter_client, answers)
}

/// Whether the importer's subscription on `private.>` gets `private.x` published in the
/// exporter: `public.x`, published after it on the same connection and imported publicly,
/// arrives after it if it arrives at all.
async fn receives_private(exporter: &async_nats::Client, importer: &async_nats::Client) -> bool {
    let mut private = importer.subscribe("private.>").await.unwrap();
    let mut public = importer.subscribe("public.>").await.unwrap();
    settle(importer).await;
    exporter.publish("private.x", "p".into()).await.unwrap();
    exporter.publish("public.x", "q".into()).await.unwrap();
    exporter.flush().await.unwrap();
    tokio::time::timeout(WAIT, public.next())
        .await
        .expect("the public message in time")
        .expect("the public message");
    // The private one cannot be behind the public one: both came on one connection.
    private.next().now_or_never().is_some()
}

/// Whether a request to `private.service` from the importer is answered by the exporter's
/// responder (refused imports get no responders).
async fn service_answers(importer: &async_nats::Client) -> bool {
    match tokio::time::timeout(WAIT, importer.request("private.service", "ask".into())).await {
        Ok(Ok(reply)) => {
            assert_eq!(&reply.payload[..], b"answer");
            true
        }
        Ok(Err(error)) => {
            assert_eq!(
                error.kind(),
                async_nats::RequestErrorKind::NoResponders,
                "{error}"
            );
            false
        }
        Err(_) => panic!("request neither answered nor refused in time"),
    }
}

/// What an importer's tokens should get it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    /// Connects; the private stream and service imports deliver as given.
    Imports { stream: bool, service: bool },
    /// The account JWT fails validation (a token for another account, kind or subject): the
    /// account is not loaded and its user is refused.
    AccountRefused,
}

#[tokio::test]
async fn private_exports_admit_imports_with_valid_activation_tokens_only() {
    let trust = Trust::new();
    let exporter = nkeys::KeyPair::new_account();
    let signing_key = nkeys::KeyPair::new_account();
    let exporter_key = exporter.public_key();
    let issued = now() - 100;
    let token = |importer: &Importer, subject: &str, kind: &str, extra: Value| {
        Some(activation(
            &exporter,
            None,
            &importer.key.public_key(),
            subject,
            kind,
            extra,
        ))
    };
    let importers: Vec<_> = (0..8).map(|_| Importer::new()).collect();
    let [good, by_signing_key, no_token, expired, revoked, someone_elses, wrong_kind, narrower] =
        &importers[..]
    else {
        unreachable!()
    };
    let both = Outcome::Imports {
        stream: true,
        service: true,
    };
    let stream_only = Outcome::Imports {
        stream: true,
        service: false,
    };
    let neither = Outcome::Imports {
        stream: false,
        service: false,
    };
    // (importer, stream token, service token, outcome)
    let cases: Vec<(&Importer, Option<String>, Option<String>, Outcome)> = vec![
        (
            good,
            token(good, "private.>", "stream", json!({})),
            token(good, "private.service", "service", json!({})),
            both,
        ),
        (
            by_signing_key,
            Some(activation(
                &signing_key,
                Some(&exporter_key),
                &by_signing_key.key.public_key(),
                "private.>",
                "stream",
                json!({}),
            )),
            None,
            stream_only,
        ),
        (no_token, None, None, neither),
        (
            expired,
            token(expired, "private.>", "stream", json!({"exp": now() - 5})),
            token(
                expired,
                "private.service",
                "service",
                json!({"exp": now() - 5}),
            ),
            neither,
        ),
        (
            revoked,
            token(revoked, "private.>", "stream", json!({"iat": issued})),
            token(
                revoked,
                "private.service",
                "service",
                json!({"iat": issued}),
            ),
            Outcome::Imports {
                stream: false,
                service: true,
            },
        ),
        (
            someone_elses,
            token(good, "private.>", "stream", json!({})),
            None,
            Outcome::AccountRefused,
        ),
        (
            wrong_kind,
            token(wrong_kind, "private.>", "service", json!({})),
            None,
            Outcome::AccountRefused,
        ),
        (
            narrower,
            token(narrower, "private.x", "stream", json!({})),
            None,
            Outcome::AccountRefused,
        ),
    ];
    let exporter_jwt = account_jwt(
        &exporter,
        &trust.operator,
        json!({
            "signing_keys": [signing_key.public_key()],
            "exports": [
                {"subject": "private.>", "type": "stream", "token_req": true,
                 "revocations": {revoked.key.public_key(): issued + 10}},
                {"subject": "private.service", "type": "service", "token_req": true},
                {"subject": "public.>", "type": "stream"},
            ],
        }),
    );
    let mut preload = vec![
        (trust.system.public_key(), trust.system_jwt.clone()),
        (exporter_key.clone(), exporter_jwt),
    ];
    for (importer, stream, service, _) in &cases {
        preload.push((
            importer.key.public_key(),
            importer.jwt(&trust, &exporter_key, stream.as_deref(), service.as_deref()),
        ));
    }
    let server = TestServer::with_config(&operator_config(
        &trust.operator_jwt(),
        &trust.system.public_key(),
        &preload,
    ));

    let (exporter_client, answers) = exporter_answering(&server, &exporter).await;

    for (index, (importer, _, _, outcome)) in cases.iter().enumerate() {
        let connected = async_nats::ConnectOptions::with_credentials(&importer.creds)
            .expect("creds parse")
            .connect(server.url())
            .await;
        let got = match connected {
            Err(error) => {
                assert_eq!(
                    error.kind(),
                    async_nats::ConnectErrorKind::AuthorizationViolation,
                    "importer {index}: {error}"
                );
                Outcome::AccountRefused
            }
            Ok(client) => Outcome::Imports {
                stream: receives_private(&exporter_client, &client).await,
                service: service_answers(&client).await,
            },
        };
        assert_eq!(got, *outcome, "importer {index}");
    }
    answers.abort();
}

/// An activation token expiring while its imports are in use stops them at its expiry, as
/// nats-server's activation timers: the stream import stops delivering to the subscription
/// made before, and the service import is no longer answered (nats-server keeps an invalid
/// import that drops the request, so a requester times out; ours has none left, so it hears
/// "no responders" at once: either is no answer).
#[tokio::test]
async fn an_activation_expiring_in_use_stops_its_imports() {
    let trust = Trust::new();
    let exporter = nkeys::KeyPair::new_account();
    let exporter_key = exporter.public_key();
    let importer = Importer::new();
    // Built before the clock starts: the token must outlive the server's start.
    test_harness::server_binary();
    let expires = now() + 3;
    let token = |subject: &str, kind: &str| {
        activation(
            &exporter,
            None,
            &importer.key.public_key(),
            subject,
            kind,
            json!({"exp": expires}),
        )
    };
    let exporter_jwt = account_jwt(
        &exporter,
        &trust.operator,
        json!({"exports": [
            {"subject": "private.>", "type": "stream", "token_req": true},
            {"subject": "private.service", "type": "service", "token_req": true},
            {"subject": "public.>", "type": "stream"},
        ]}),
    );
    let importer_jwt = importer.jwt(
        &trust,
        &exporter_key,
        Some(&token("private.>", "stream")),
        Some(&token("private.service", "service")),
    );
    let server = TestServer::with_config(&operator_config(
        &trust.operator_jwt(),
        &trust.system.public_key(),
        &[
            (trust.system.public_key(), trust.system_jwt.clone()),
            (exporter_key.clone(), exporter_jwt),
            (importer.key.public_key(), importer_jwt),
        ],
    ));
    let (exporter_client, answers) = exporter_answering(&server, &exporter).await;
    let client = async_nats::ConnectOptions::with_credentials(&importer.creds)
        .expect("creds parse")
        .connect(server.url())
        .await
        .expect("importer connects");
    let mut private = client.subscribe("private.>").await.unwrap();
    let mut public = client.subscribe("public.>").await.unwrap();
    settle(&client).await;
    let reply = tokio::time::timeout(WAIT, client.request("private.service", "ask".into()))
        .await
        .expect("answered in time")
        .expect("answered before the expiry");
    assert_eq!(&reply.payload[..], b"answer");

    // Private deliveries until the expiry, then none (checked against the public message
    // published after each private one).
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut delivered_before = false;
    loop {
        exporter_client
            .publish("private.x", "p".into())
            .await
            .unwrap();
        exporter_client
            .publish("public.x", "q".into())
            .await
            .unwrap();
        exporter_client.flush().await.unwrap();
        tokio::time::timeout(WAIT, public.next())
            .await
            .expect("the public message in time")
            .expect("the public message");
        match private.next().now_or_never() {
            Some(_) => delivered_before = true,
            None => break,
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still delivering well after the expiry"
        );
        // Pace the probes; the condition is the delivery above, bounded by the deadline.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(delivered_before, "the import delivered before its expiry");
    assert!(now() >= expires, "stopped before the expiry");
    let asked = tokio::time::timeout(
        Duration::from_secs(2),
        client.request("private.service", "ask".into()),
    )
    .await;
    assert!(
        !matches!(asked, Ok(Ok(_))),
        "the service import still answered after the expiry"
    );
    answers.abort();
}
