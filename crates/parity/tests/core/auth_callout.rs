//! Authorization callout in server config mode (ADR-26): the server asks a service connected as
//! an `auth_users` user, on `$SYS.REQ.USER.AUTH` in the callout account, with a request JWT it
//! signs with its own nkey (the INFO `server_id`); the service answers with an authorization
//! response JWT carrying a user JWT signed by the configured issuer, which binds the client to
//! an account (the user JWT's `aud`) with its permissions. Refusals, a service that does not
//! answer, the service's own users, and requests encrypted for the service's xkey. In operator
//! mode, the account JWT's `authorization` names the service's users: a client presenting
//! another user JWT of that account (a "sentinel") is authorized by the service, which may place
//! it in an account it allows by issuing the user JWT with that account's key.
//! Passes against the real nats-server too (`NATS_SERVER_BIN`).

use super::jwt_builder::{account_jwt, creds, sign, user_jwt, wall_clock, Trust};
use base64::Engine;
use futures::StreamExt;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use test_harness::{RawClient, SpawnTied, TestServer};

const WAIT: Duration = Duration::from_secs(10);
const VIOLATION: &str = "-ERR 'Authorization Violation'";

fn config(issuer: &str, xkey: Option<&str>) -> String {
    let xkey = xkey
        .map(|key| format!("xkey: \"{key}\""))
        .unwrap_or_default();
    format!(
        r#"
accounts {{
  AUTH {{ users: [ {{ user: auth, password: pwd }} ] }}
  APP {{ users: [ {{ user: watcher, password: w }} ] }}
}}
authorization {{
  timeout: 1
  auth_callout {{
    issuer: "{issuer}"
    account: AUTH
    auth_users: [ auth, watcher ]
    {xkey}
  }}
}}
"#
    )
}

/// The claims of a JWT (its signature checked with its `iss` key).
fn claims_of(token: &str) -> Value {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT: {token}");
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let claims: Value =
        serde_json::from_slice(&engine.decode(parts[1]).expect("base64 claims")).expect("json");
    let issuer = claims["iss"].as_str().expect("iss");
    let signer = nkeys::KeyPair::from_public_key(issuer).expect("issuer key");
    let signature = engine.decode(parts[2]).expect("base64 signature");
    signer
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .expect("signed by its issuer");
    claims
}

/// The callout service: answers every request on `$SYS.REQ.USER.AUTH` by the CONNECT's user and
/// password (dlc/zzz into APP publishing only under `app.>`; `slow` gets no answer; anyone else
/// an error), recording each request's claims. With `xkey`, requests arrive sealed for it and
/// answers go back sealed for the server.
struct Service {
    requests: Arc<Mutex<Vec<Value>>>,
    _task: tokio::task::JoinHandle<()>,
}

async fn start_service(
    server: &TestServer,
    issuer: nkeys::KeyPair,
    xkey: Option<nkeys::XKey>,
) -> Service {
    let client = connect_as(server, "auth", "pwd")
        .await
        .expect("the service connects as an auth user, without a callout");
    let mut requests_in = client
        .subscribe("$SYS.REQ.USER.AUTH")
        .await
        .expect("subscribe");
    client.flush().await.expect("flush");
    let requests = Arc::new(Mutex::new(Vec::new()));
    let recorded = requests.clone();
    let task = tokio::spawn(async move {
        while let Some(message) = requests_in.next().await {
            let server_xkey = message
                .headers
                .as_ref()
                .and_then(|headers| headers.get("Nats-Server-Xkey"))
                .map(|value| value.to_string());
            let token = match (&xkey, &server_xkey) {
                (Some(own), Some(server_key)) => {
                    let sender = nkeys::XKey::from_public_key(server_key).expect("server xkey");
                    String::from_utf8(own.open(&message.payload, &sender).expect("open"))
                        .expect("utf8")
                }
                _ => String::from_utf8_lossy(&message.payload).into_owned(),
            };
            let claims = claims_of(&token);
            recorded.lock().expect("lock").push(claims.clone());
            let options = &claims["nats"]["connect_opts"];
            let user_nkey = claims["nats"]["user_nkey"].as_str().unwrap_or_default();
            let server_id = claims["nats"]["server_id"]["id"]
                .as_str()
                .unwrap_or_default();
            let (user_jwt, error) = match (options["user"].as_str(), options["pass"].as_str()) {
                (Some("slow"), _) => continue,
                // An hour around now, or one starting in two hours, on UTC's clock.
                (Some(name @ ("day" | "night")), _) => {
                    let shift = if name == "day" { -1800 } else { 7200 };
                    let window =
                        json!({"start": wall_clock(0, shift), "end": wall_clock(0, shift + 3600)});
                    (
                        sign(
                            json!({"sub": user_nkey, "aud": "APP", "name": name,
                                "nats": {"type": "user", "version": 2, "pub": {}, "sub": {},
                                    "subs": -1, "data": -1, "payload": -1,
                                    "times": [window], "times_location": "UTC"}}),
                            &issuer,
                        ),
                        "",
                    )
                }
                (Some("dlc"), Some("zzz")) => (
                    sign(
                        json!({"sub": user_nkey, "aud": "APP", "name": "dlc",
                            "nats": {"type": "user", "version": 2,
                                "pub": {"allow": ["app.>", "_INBOX.>"]}, "sub": {},
                                "subs": -1, "data": -1, "payload": -1}}),
                        &issuer,
                    ),
                    "",
                ),
                _ => (String::new(), "bad credentials"),
            };
            let answer = sign(
                json!({"sub": user_nkey, "aud": server_id, "nats": {"jwt": user_jwt,
                    "error": error, "type": "authorization_response", "version": 2}}),
                &issuer,
            );
            let payload = match (&xkey, &server_xkey) {
                (Some(own), Some(server_key)) => {
                    let recipient = nkeys::XKey::from_public_key(server_key).expect("server xkey");
                    own.seal(answer.as_bytes(), &recipient).expect("seal")
                }
                _ => answer.into_bytes(),
            };
            if let Some(reply) = message.reply {
                let _ = client.publish(reply, payload.into()).await;
                let _ = client.flush().await;
            }
        }
    });
    Service {
        requests,
        _task: task,
    }
}

async fn connect_as(
    server: &TestServer,
    user: &str,
    password: &str,
) -> Result<async_nats::Client, String> {
    let connecting =
        async_nats::ConnectOptions::with_user_and_password(user.into(), password.into())
            .connection_timeout(Duration::from_secs(5))
            .connect(server.url());
    match tokio::time::timeout(WAIT, connecting).await {
        Ok(connected) => connected.map_err(|error| error.to_string()),
        Err(_) => Err(format!("{user}: no connection within {WAIT:?}")),
    }
}

/// A raw CONNECT with `user`/`pass`: the lines up to the PONG, or to the close.
fn raw_connect(server: &TestServer, user: &str, password: &str) -> (RawClient, Vec<String>) {
    let mut client = RawClient::connect(server);
    client.send(&format!(
        "CONNECT {{\"user\":\"{user}\",\"pass\":\"{password}\",\"verbose\":false,\"protocol\":1}}\r\nPING\r\n"
    ));
    let mut lines = Vec::new();
    while let Some(line) = client.read_line() {
        let done = line == "PONG" || line.starts_with("-ERR");
        lines.push(line);
        if done {
            break;
        }
    }
    (client, lines)
}

async fn callout_binds_authorized_users(encrypted: bool) {
    let issuer = nkeys::KeyPair::new_account();
    let service_xkey = encrypted.then(nkeys::XKey::new);
    let server = TestServer::with_config(&config(
        &issuer.public_key(),
        service_xkey.as_ref().map(|key| key.public_key()).as_deref(),
    ));
    let service = start_service(&server, issuer, service_xkey).await;
    let server_id = {
        let client = RawClient::connect(&server);
        let info: Value = serde_json::from_str(&client.info).expect("INFO");
        info["server_id"].as_str().expect("server_id").to_string()
    };

    // An APP user configured in the server, to see where dlc's messages land.
    let watcher = connect_as(&server, "watcher", "w").await.expect("watcher");
    let mut seen = watcher.subscribe("app.>").await.expect("subscribe");
    watcher.flush().await.expect("flush");

    let dlc = connect_as(&server, "dlc", "zzz")
        .await
        .expect("dlc authorized by the callout");
    dlc.publish("app.hello", "hi".into())
        .await
        .expect("publish");
    dlc.flush().await.expect("flush");
    let message = tokio::time::timeout(WAIT, seen.next())
        .await
        .expect("dlc's publish reaches APP")
        .expect("message");
    assert_eq!(&message.payload[..], b"hi");

    // The request: signed by the server (its INFO id), for the issuer, naming the CONNECT.
    let request = service
        .requests
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .expect("a request");
    assert_eq!(request["iss"], server_id.as_str(), "{request}");
    assert_eq!(request["aud"], "nats-authorization-request", "{request}");
    assert_eq!(
        request["nats"]["type"], "authorization_request",
        "{request}"
    );
    assert_eq!(
        request["nats"]["server_id"]["id"],
        server_id.as_str(),
        "{request}"
    );
    assert_eq!(request["nats"]["connect_opts"]["user"], "dlc", "{request}");
    assert_eq!(request["nats"]["connect_opts"]["pass"], "zzz", "{request}");
    assert_eq!(
        request["nats"]["client_info"]["kind"], "Client",
        "{request}"
    );
    assert!(
        request["nats"]["user_nkey"]
            .as_str()
            .is_some_and(|key| key.starts_with('U')),
        "{request}"
    );
    if encrypted {
        assert!(
            request["nats"]["server_id"]["xkey"]
                .as_str()
                .is_some_and(|key| key.starts_with('X')),
            "{request}"
        );
    }

    // The user JWT's permissions apply: publishing outside `app.>` is refused.
    let (mut raw, lines) = raw_connect(&server, "dlc", "zzz");
    assert_eq!(lines.last().map(String::as_str), Some("PONG"), "{lines:?}");
    raw.send("PUB other.x 1\r\nx\r\nPING\r\n");
    let lines = raw.read_until_line("PONG");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("Permissions Violation for Publish to \"other.x\"")),
        "{lines:?}"
    );

    // The user JWT's `times`: admitted inside its window, refused outside it.
    let (_, lines) = raw_connect(&server, "day", "x");
    assert_eq!(lines.last().map(String::as_str), Some("PONG"), "{lines:?}");
    let (_, lines) = raw_connect(&server, "night", "x");
    assert_eq!(
        lines.last().map(String::as_str),
        Some(VIOLATION),
        "{lines:?}"
    );

    // Refused by the service, and not answered in time: Authorization Violation.
    let (_, lines) = raw_connect(&server, "dlc", "wrong");
    assert_eq!(
        lines.last().map(String::as_str),
        Some(VIOLATION),
        "{lines:?}"
    );
    let started = Instant::now();
    let (_, lines) = raw_connect(&server, "slow", "x");
    assert_eq!(
        lines.last().map(String::as_str),
        Some(VIOLATION),
        "{lines:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );

    // The service's own user is not called out for, and may not publish requests itself.
    let before = service.requests.lock().expect("lock").len();
    let (mut auth, lines) = raw_connect(&server, "auth", "pwd");
    assert_eq!(lines.last().map(String::as_str), Some("PONG"), "{lines:?}");
    assert_eq!(service.requests.lock().expect("lock").len(), before);
    auth.send("PUB $SYS.REQ.USER.AUTH 1\r\nx\r\nPING\r\n");
    let lines = auth.read_until_line("PONG");
    assert!(
        lines.iter().any(
            |line| line.contains("Permissions Violation for Publish to \"$SYS.REQ.USER.AUTH\"")
        ),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callout_binds_authorized_users_to_their_account() {
    callout_binds_authorized_users(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callout_requests_and_answers_encrypted_with_xkeys() {
    callout_binds_authorized_users(true).await;
}

#[test]
fn auth_callout_config_errors_as_nats_server() {
    let issuer = nkeys::KeyPair::new_account().public_key();
    let cases = [
        (
            "authorization { users: [{user: a, password: b}]\n auth_callout { auth_users: [a] } }".to_string(),
            "Authorization callouts require an issuer to be specified",
        ),
        (
            format!("authorization {{ users: [{{user: a, password: b}}]\n auth_callout {{ issuer: \"{issuer}\" }} }}"),
            "Authorization callouts require authorized users to be specified",
        ),
        (
            "authorization { auth_callout { issuer: \"UABC\", auth_users: [a] } }".to_string(),
            "Expected callout user to be a valid public account nkey",
        ),
        (
            format!("authorization {{ auth_callout {{ issuer: \"{issuer}\", auth_users: [a], xkey: \"nope\" }} }}"),
            "Expected callout xkey to be a valid public xkey",
        ),
    ];
    for (text, expected) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("callout.conf");
        std::fs::write(&path, &text).expect("write");
        let output = std::process::Command::new(test_harness::server_binary())
            .arg("-t")
            .arg("-c")
            .arg(&path)
            .dies_with_this_thread()
            .output()
            .expect("run");
        let text_out = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!output.status.success(), "{text}: accepted: {text_out}");
        assert!(text_out.contains(expected), "{text}: {text_out}");
    }
}

/// Operator mode: AUTH's JWT delegates to a service (`authorization { auth_users }`), allowing
/// placement in APP; clients present a bearer sentinel JWT of AUTH plus a user and password,
/// and the service answers with a user JWT APP issued (signed by AUTH) or an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_mode_callout_places_users_in_an_allowed_account() {
    let trust = Trust::new();
    let auth = nkeys::KeyPair::new_account();
    let app = nkeys::KeyPair::new_account();
    let service_user = nkeys::KeyPair::new_user();
    let auth_jwt = account_jwt(
        &auth,
        &trust.operator,
        json!({"authorization": {"auth_users": [service_user.public_key()],
            "allowed_accounts": [app.public_key()]}}),
    );
    let app_jwt = account_jwt(&app, &trust.operator, json!({}));
    let server = TestServer::with_config(&trust.config(&[(&auth, &auth_jwt), (&app, &app_jwt)]));

    // The service: its own user JWT in AUTH is not called out for.
    let service_jwt = user_jwt(&service_user, &auth, None, json!({}));
    let service = tokio::time::timeout(
        WAIT,
        async_nats::ConnectOptions::with_credentials(&creds(&service_jwt, &service_user))
            .expect("creds")
            .connect(server.url()),
    )
    .await
    .expect("in time")
    .expect("the service user connects without a callout");
    let mut requests = service
        .subscribe("$SYS.REQ.USER.AUTH")
        .await
        .expect("subscribe");
    service.flush().await.expect("flush");
    let (app_key, auth_key) = (app.clone(), auth.clone());
    let answering = tokio::spawn(async move {
        while let Some(message) = requests.next().await {
            let claims = claims_of(&String::from_utf8_lossy(&message.payload));
            let user_nkey = claims["nats"]["user_nkey"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let server_id = claims["nats"]["server_id"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let options = &claims["nats"]["connect_opts"];
            let (jwt, error) = if options["user"] == "dlc" && options["pass"] == "zzz" {
                let user_claims = json!({"sub": user_nkey, "name": "dlc",
                    "nats": {"type": "user", "version": 2, "pub": {"allow": ["app.>"]},
                        "sub": {}, "subs": -1, "data": -1, "payload": -1}});
                (sign(user_claims, &app_key), "")
            } else {
                (String::new(), "bad credentials")
            };
            let answer = sign(
                json!({"sub": user_nkey, "aud": server_id, "nats": {"jwt": jwt, "error": error,
                    "type": "authorization_response", "version": 2}}),
                &auth_key,
            );
            if let Some(reply) = message.reply {
                let _ = service.publish(reply, answer.into()).await;
                let _ = service.flush().await;
            }
        }
    });

    // A watcher in APP with its own user JWT (APP has no callout).
    let watcher_user = nkeys::KeyPair::new_user();
    let watcher_jwt = user_jwt(&watcher_user, &app, None, json!({}));
    let watcher = async_nats::ConnectOptions::with_credentials(&creds(&watcher_jwt, &watcher_user))
        .expect("creds")
        .connect(server.url())
        .await
        .expect("watcher");
    let mut seen = watcher.subscribe("app.>").await.expect("subscribe");
    watcher.flush().await.expect("flush");

    // The sentinel: a bearer user JWT of AUTH that may do nothing itself.
    let sentinel = user_jwt(
        &nkeys::KeyPair::new_user(),
        &auth,
        None,
        json!({"bearer_token": true, "pub": {"deny": [">"]}, "sub": {"deny": [">"]}}),
    );
    let connect = |user: &str, pass: &str| {
        format!(
            "CONNECT {{\"jwt\":\"{sentinel}\",\"user\":\"{user}\",\"pass\":\"{pass}\",\"verbose\":false,\"protocol\":1}}\r\nPING\r\n"
        )
    };
    let mut dlc = RawClient::connect(&server);
    dlc.send(&connect("dlc", "zzz"));
    let lines = dlc.read_until_line("PONG");
    assert!(
        !lines.iter().any(|line| line.starts_with("-ERR")),
        "{lines:?}"
    );
    dlc.send("PUB app.hello 2\r\nhi\r\nPUB other.x 1\r\nx\r\nPING\r\n");
    let lines = dlc.read_until_line("PONG");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("Permissions Violation for Publish to \"other.x\"")),
        "{lines:?}"
    );
    let message = tokio::time::timeout(WAIT, seen.next())
        .await
        .expect("dlc, placed in APP, reaches APP")
        .expect("message");
    assert_eq!(&message.payload[..], b"hi");

    let mut refused = RawClient::connect(&server);
    refused.send(&connect("dlc", "wrong"));
    let lines = refused.read_until_line(VIOLATION);
    assert_eq!(
        lines.last().map(String::as_str),
        Some(VIOLATION),
        "{lines:?}"
    );
    answering.abort();
}
