//! Operator (JWT) mode with the memory resolver: the operator, accounts and users are made and
//! signed in the test (`jwt_builder.rs`), preloaded in the config, and users connect with their
//! JWT and a signature of the INFO nonce (async-nats `credentials`, or by hand on the wire).
//! Passes against the real nats-server too (`NATS_SERVER_BIN`).

use super::jwt_builder::{account_jwt, creds, now, user_jwt, Trust};
use base64::Engine;
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;
use test_harness::{RawClient, TestServer};

const WAIT: Duration = Duration::from_secs(10);
const VIOLATION: &str = "-ERR 'Authorization Violation'";

/// One application account `ACC` with a user signed by it.
pub(super) struct Setup {
    pub(super) trust: Trust,
    pub(super) account: nkeys::KeyPair,
    pub(super) account_jwt: String,
    pub(super) user: nkeys::KeyPair,
    pub(super) user_jwt: String,
}

impl Setup {
    pub(super) fn new() -> Setup {
        let trust = Trust::new();
        let account = nkeys::KeyPair::new_account();
        let account_jwt = account_jwt(&account, &trust.operator, json!({}));
        let user = nkeys::KeyPair::new_user();
        let user_jwt = user_jwt(&user, &account, None, json!({}));
        Setup {
            trust,
            account,
            account_jwt,
            user,
            user_jwt,
        }
    }

    pub(super) fn server(&self) -> TestServer {
        TestServer::with_config(&self.trust.config(&[(&self.account, &self.account_jwt)]))
    }
}

pub(super) async fn connect(
    server: &TestServer,
    jwt: &str,
    user: &nkeys::KeyPair,
) -> async_nats::Client {
    async_nats::ConnectOptions::with_credentials(&creds(jwt, user))
        .expect("creds parse")
        .connect(server.url())
        .await
        .expect("connect with credentials")
}

fn nonce_of(client: &RawClient) -> String {
    let info: serde_json::Value = serde_json::from_str(&client.info).expect("INFO json");
    info["nonce"].as_str().expect("nonce in INFO").to_string()
}

fn signature(key: &nkeys::KeyPair, nonce: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.sign(nonce.as_bytes()).unwrap())
}

/// CONNECT with `jwt` signed by `signer` (none: no `sig`), then PING; the first line back.
pub(super) fn raw_connect(
    server: &TestServer,
    jwt: &str,
    signer: Option<&nkeys::KeyPair>,
) -> RawClient {
    let mut client = RawClient::connect(server);
    let nonce = nonce_of(&client);
    let sig = signer
        .map(|key| format!(",\"sig\":\"{}\"", signature(key, &nonce)))
        .unwrap_or_default();
    client.send(&format!(
        "CONNECT {{\"verbose\":false,\"jwt\":\"{jwt}\"{sig}}}\r\nPING\r\n"
    ));
    client
}

pub(super) fn assert_refused(server: &TestServer, jwt: &str, signer: Option<&nkeys::KeyPair>) {
    let mut client = raw_connect(server, jwt, signer);
    assert_eq!(client.read_line().as_deref(), Some(VIOLATION));
    assert!(client.read_to_close().is_some(), "connection left open");
}

#[tokio::test]
async fn a_valid_user_publishes_and_subscribes_in_its_account() {
    let setup = Setup::new();
    let server = setup.server();
    let client = connect(&server, &setup.user_jwt, &setup.user).await;
    let mut subscription = client.subscribe("jwt.hello").await.unwrap();
    client.flush().await.unwrap();
    client.publish("jwt.hello", "hi".into()).await.unwrap();
    let message = tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("message in time")
        .expect("message");
    assert_eq!(&message.payload[..], b"hi");
}

/// A preloaded account's user asks for its own connections through the system import every
/// account has (`$SYS.REQ.ACCOUNT.PING.CONNZ`; ours enters it when the account is first looked
/// up, as nats-server registers an operator-mode account then).
#[tokio::test]
async fn a_preloaded_account_reaches_its_system_imports() {
    let setup = Setup::new();
    let server = setup.server();
    let client = connect(&server, &setup.user_jwt, &setup.user).await;
    let reply = tokio::time::timeout(
        WAIT,
        client.request("$SYS.REQ.ACCOUNT.PING.CONNZ", "".into()),
    )
    .await
    .expect("answer in time")
    .expect("an answer, not no responders");
    let connz: serde_json::Value = serde_json::from_slice(&reply.payload).expect("json");
    assert_eq!(connz["data"]["num_connections"], 1, "{connz}");
    assert_eq!(connz["data"]["total"], 1, "{connz}");
}

/// `trusted_keys` instead of an operator JWT: accounts signed by a trusted key are loaded and
/// their users admitted; an account signed by another operator is not, and its user is refused.
#[tokio::test]
async fn trusted_keys_without_an_operator_jwt_admit_the_accounts_they_signed() {
    let setup = Setup::new();
    let stranger = Trust::new();
    let other = nkeys::KeyPair::new_account();
    let other_jwt = account_jwt(&other, &stranger.operator, json!({}));
    let other_user = nkeys::KeyPair::new_user();
    let other_user_jwt = user_jwt(&other_user, &other, None, json!({}));
    let trust = &setup.trust;
    let config = format!(
        "trusted_keys: [\"{}\"]\nsystem_account: {}\nresolver: MEMORY\n\
         resolver_preload: {{\n  {}: \"{}\"\n  {}: \"{}\"\n  {}: \"{}\"\n}}\n",
        trust.operator.public_key(),
        trust.system.public_key(),
        trust.system.public_key(),
        trust.system_jwt,
        setup.account.public_key(),
        setup.account_jwt,
        other.public_key(),
        other_jwt,
    );
    let server = TestServer::with_config(&config);
    let client = connect(&server, &setup.user_jwt, &setup.user).await;
    let mut subscription = client.subscribe("trusted.hello").await.unwrap();
    client.flush().await.unwrap();
    client.publish("trusted.hello", "hi".into()).await.unwrap();
    let message = tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("message in time")
        .expect("message");
    assert_eq!(&message.payload[..], b"hi");

    let refused =
        async_nats::ConnectOptions::with_credentials(&creds(&other_user_jwt, &other_user))
            .expect("creds parse")
            .connect(server.url())
            .await;
    let error = refused
        .expect_err("a user of an untrusted operator's account")
        .to_string();
    assert!(error.contains("authorization violation"), "{error}");
}

#[test]
fn info_carries_a_nonce_and_requires_auth() {
    let setup = Setup::new();
    let server = setup.server();
    let client = RawClient::connect(&server);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    assert_eq!(info["auth_required"], true);
    assert!(info["nonce"]
        .as_str()
        .is_some_and(|nonce| !nonce.is_empty()));
}

#[tokio::test]
async fn two_accounts_never_meet() {
    let setup = Setup::new();
    let other = nkeys::KeyPair::new_account();
    let other_jwt = account_jwt(&other, &setup.trust.operator, json!({}));
    let other_user = nkeys::KeyPair::new_user();
    let other_user_jwt = user_jwt(&other_user, &other, None, json!({}));
    let server = TestServer::with_config(
        &setup
            .trust
            .config(&[(&setup.account, &setup.account_jwt), (&other, &other_jwt)]),
    );
    let first = connect(&server, &setup.user_jwt, &setup.user).await;
    let second = connect(&server, &other_user_jwt, &other_user).await;
    let mut leaked = second.subscribe("shared.subject").await.unwrap();
    let mut own = first.subscribe("shared.subject").await.unwrap();
    second.flush().await.unwrap();
    first.flush().await.unwrap();
    first.publish("shared.subject", "a".into()).await.unwrap();
    first.flush().await.unwrap();
    let message = tokio::time::timeout(WAIT, own.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&message.payload[..], b"a");
    // A round trip on the other account after the publish: nothing arrived there.
    second.flush().await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(200), leaked.next())
            .await
            .is_err(),
        "a message crossed accounts"
    );
}

#[test]
fn a_user_signed_by_an_unknown_account_is_refused() {
    let setup = Setup::new();
    let server = setup.server();
    let stranger = nkeys::KeyPair::new_account();
    let jwt = user_jwt(&setup.user, &stranger, None, json!({}));
    assert_refused(&server, &jwt, Some(&setup.user));
}

#[test]
fn a_nonce_signed_by_another_key_is_refused() {
    let setup = Setup::new();
    let server = setup.server();
    let other = nkeys::KeyPair::new_user();
    assert_refused(&server, &setup.user_jwt, Some(&other));
    assert_refused(&server, &setup.user_jwt, None);
}

#[test]
fn a_tampered_or_malformed_jwt_is_refused() {
    let setup = Setup::new();
    let server = setup.server();
    let mut parts: Vec<String> = setup.user_jwt.split('.').map(str::to_string).collect();
    let mut claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&parts[1])
            .unwrap(),
    )
    .unwrap();
    claims["nats"]["bearer_token"] = json!(true);
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
    assert_refused(&server, &parts.join("."), Some(&setup.user));
    assert_refused(&server, "not.a.jwt", Some(&setup.user));
    assert_refused(&server, "garbage", Some(&setup.user));
    // The server is still serving the valid user.
    let mut client = raw_connect(&server, &setup.user_jwt, Some(&setup.user));
    client.expect_line("PONG");
}

#[test]
fn an_expired_user_is_refused() {
    let setup = Setup::new();
    let server = setup.server();
    let jwt = user_jwt(
        &setup.user,
        &setup.account,
        None,
        json!({"exp": now() - 10}),
    );
    assert_refused(&server, &jwt, Some(&setup.user));
}

#[test]
fn a_revoked_user_is_refused() {
    let trust = Trust::new();
    let account = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let jwt = user_jwt(&user, &account, None, json!({"iat": now() - 60}));
    let account_jwt = account_jwt(
        &account,
        &trust.operator,
        json!({"revocations": {user.public_key(): now() - 30}}),
    );
    let server = TestServer::with_config(&trust.config(&[(&account, &account_jwt)]));
    assert_refused(&server, &jwt, Some(&user));
    // A user issued after the revocation time connects.
    let fresh = user_jwt(&user, &account, None, json!({}));
    let mut client = raw_connect(&server, &fresh, Some(&user));
    client.expect_line("PONG");
}

#[test]
fn a_bearer_token_needs_no_signature() {
    let setup = Setup::new();
    let server = setup.server();
    let bearer = user_jwt(
        &setup.user,
        &setup.account,
        None,
        json!({"bearer_token": true}),
    );
    let mut client = raw_connect(&server, &bearer, None);
    client.expect_line("PONG");
    // Without the flag, a missing signature is refused.
    assert_refused(&server, &setup.user_jwt, None);
}

#[test]
fn a_user_signed_by_an_account_signing_key_connects() {
    let trust = Trust::new();
    let account = nkeys::KeyPair::new_account();
    let signing = nkeys::KeyPair::new_account();
    let account_jwt = account_jwt(
        &account,
        &trust.operator,
        json!({"signing_keys": [signing.public_key()]}),
    );
    let server = TestServer::with_config(&trust.config(&[(&account, &account_jwt)]));
    let user = nkeys::KeyPair::new_user();
    let jwt = user_jwt(&user, &signing, Some(&account.public_key()), json!({}));
    raw_connect(&server, &jwt, Some(&user)).expect_line("PONG");
    // The same key without issuer_account names no account.
    let orphan = user_jwt(&user, &signing, None, json!({}));
    assert_refused(&server, &orphan, Some(&user));
    // A key the account does not list is refused even with issuer_account.
    let stranger = nkeys::KeyPair::new_account();
    let forged = user_jwt(&user, &stranger, Some(&account.public_key()), json!({}));
    assert_refused(&server, &forged, Some(&user));
}

#[test]
fn an_account_signed_by_an_untrusted_operator_is_not_loaded() {
    let trust = Trust::new();
    let rogue = nkeys::KeyPair::new_operator();
    let account = nkeys::KeyPair::new_account();
    let account_jwt = account_jwt(&account, &rogue, json!({}));
    let server = TestServer::with_config(&trust.config(&[(&account, &account_jwt)]));
    let user = nkeys::KeyPair::new_user();
    let jwt = user_jwt(&user, &account, None, json!({}));
    assert_refused(&server, &jwt, Some(&user));
}

#[test]
fn permission_claims_are_enforced() {
    let setup = Setup::new();
    let server = setup.server();
    let jwt = user_jwt(
        &setup.user,
        &setup.account,
        None,
        json!({"pub": {"allow": ["allowed.>"], "deny": ["allowed.not"]},
               "sub": {"deny": ["secret.>"]}}),
    );
    let mut client = raw_connect(&server, &jwt, Some(&setup.user));
    client.expect_line("PONG");
    client.send("PUB allowed.yes 1\r\nx\r\nPUB other 1\r\nx\r\nPUB allowed.not 1\r\nx\r\n");
    client.send("SUB secret.data 1\r\nSUB open.data 2\r\n");
    let lines = client.ping_collect();
    assert_eq!(
        lines,
        vec![
            "-ERR 'Permissions Violation for Publish to \"other\"'",
            "-ERR 'Permissions Violation for Publish to \"allowed.not\"'",
            "-ERR 'Permissions Violation for Subscription to \"secret.data\"'",
            "PONG",
        ]
    );
}

#[test]
fn a_user_expiring_while_connected_is_disconnected() {
    let setup = Setup::new();
    let server = setup.server();
    let jwt = user_jwt(&setup.user, &setup.account, None, json!({"exp": now() + 2}));
    let mut client = raw_connect(&server, &jwt, Some(&setup.user));
    client.expect_line("PONG");
    client.timeout = Duration::from_secs(6);
    let rest = client.read_to_close().expect("closed at expiry");
    assert!(
        rest.contains("-ERR 'User Authentication Expired'"),
        "got {rest:?}"
    );
}

#[test]
fn the_subscription_limit_claim_is_enforced() {
    let setup = Setup::new();
    let server = setup.server();
    let jwt = user_jwt(&setup.user, &setup.account, None, json!({"subs": 1}));
    let mut client = raw_connect(&server, &jwt, Some(&setup.user));
    client.expect_line("PONG");
    client.send("SUB one 1\r\nSUB two 2\r\n");
    let lines = client.ping_collect();
    assert_eq!(lines, vec!["-ERR 'maximum subscriptions exceeded'", "PONG"]);
}

#[test]
fn the_payload_limit_claim_is_enforced() {
    let setup = Setup::new();
    let server = setup.server();
    let jwt = user_jwt(&setup.user, &setup.account, None, json!({"payload": 4}));
    let mut client = raw_connect(&server, &jwt, Some(&setup.user));
    client.expect_line("PONG");
    client.send("PUB small 4\r\nabcd\r\nPUB big 5\r\nabcde\r\n");
    let rest = client.read_to_close().expect("closed");
    assert!(
        rest.contains("-ERR 'Maximum Payload Violation'"),
        "got {rest:?}"
    );
}

#[tokio::test]
async fn an_account_update_at_runtime_revokes_a_connected_user() {
    let setup = Setup::new();
    let server = setup.server();
    let system_user = nkeys::KeyPair::new_user();
    let system_jwt = user_jwt(&system_user, &setup.trust.system, None, json!({}));
    let system = connect(&server, &system_jwt, &system_user).await;
    let mut victim = raw_connect(&server, &setup.user_jwt, Some(&setup.user));
    victim.expect_line("PONG");
    let updated = account_jwt(
        &setup.account,
        &setup.trust.operator,
        json!({"revocations": {setup.user.public_key(): now() + 1}}),
    );
    let subject = format!(
        "$SYS.REQ.ACCOUNT.{}.CLAIMS.UPDATE",
        setup.account.public_key()
    );
    let reply = tokio::time::timeout(WAIT, system.request(subject, updated.into()))
        .await
        .expect("reply in time")
        .expect("reply");
    let reply: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(
        reply["data"],
        json!({"code": 200, "account": setup.account.public_key(), "message": "jwt updated"}),
        "{reply}"
    );
    let rest = victim.read_to_close().expect("revoked user closed");
    assert!(
        rest.contains("-ERR 'User Authentication Revoked'"),
        "got {rest:?}"
    );
    assert_refused(&server, &setup.user_jwt, Some(&setup.user));
}

#[tokio::test]
async fn claim_updates_that_do_not_verify_are_answered_with_errors() {
    let setup = Setup::new();
    let server = setup.server();
    let system_user = nkeys::KeyPair::new_user();
    let system_jwt = user_jwt(&system_user, &setup.trust.system, None, json!({}));
    let system = connect(&server, &system_jwt, &system_user).await;
    let key = setup.account.public_key();
    let subject = format!("$SYS.REQ.ACCOUNT.{key}.CLAIMS.UPDATE");
    let ask = |body: String| {
        let system = system.clone();
        let subject = subject.clone();
        async move {
            let reply = tokio::time::timeout(WAIT, system.request(subject, body.into()))
                .await
                .expect("reply in time")
                .expect("reply");
            serde_json::from_slice::<serde_json::Value>(&reply.payload).unwrap()
        }
    };
    let empty = ask(String::new()).await;
    assert_eq!(empty["error"]["code"], 500, "{empty}");
    assert_eq!(
        empty["error"]["description"],
        "jwt update error - request body is empty"
    );
    let garbage = ask("garbage".into()).await;
    assert_eq!(garbage["error"]["code"], 500, "{garbage}");
    assert!(garbage["error"]["description"]
        .as_str()
        .unwrap()
        .starts_with("jwt update resulted in error - "));
    let other = nkeys::KeyPair::new_account();
    let mismatched = ask(account_jwt(&other, &setup.trust.operator, json!({}))).await;
    assert_eq!(
        mismatched["error"]["description"],
        "jwt update resulted in error - subject does not match jwt content",
        "{mismatched}"
    );
    // The valid user still connects.
    raw_connect(&server, &setup.user_jwt, Some(&setup.user)).expect_line("PONG");
}

/// Connect rate with JWT auth (memory resolver): 4 threads open connections one after the
/// other for 3 s (INFO, CONNECT with jwt and the nonce signed, PING, PONG, close) and the rate
/// is printed. Run by hand against each server:
/// `cargo test -p parity --release --test core jwt_connect_rate -- --ignored --nocapture`.
#[test]
#[ignore]
fn jwt_connect_rate() {
    let setup = Setup::new();
    let server = setup.server();
    let duration = Duration::from_secs(3);
    let started = std::time::Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let addr = server.addr();
            let jwt = setup.user_jwt.clone();
            let seed = setup.user.seed().unwrap();
            std::thread::spawn(move || {
                let user = nkeys::KeyPair::from_seed(&seed).unwrap();
                let mut count = 0u64;
                while started.elapsed() < duration {
                    let mut client = RawClient::connect_addr(&addr);
                    let nonce = nonce_of(&client);
                    client.send(&format!(
                        "CONNECT {{\"verbose\":false,\"jwt\":\"{jwt}\",\"sig\":\"{}\"}}\r\nPING\r\n",
                        signature(&user, &nonce)
                    ));
                    client.expect_line("PONG");
                    count += 1;
                }
                count
            })
        })
        .collect();
    let total: u64 = threads
        .into_iter()
        .map(|thread| thread.join().unwrap())
        .sum();
    let rate = total as f64 / started.elapsed().as_secs_f64();
    println!(
        "JWT connect rate: {rate:.0} connections/s ({total} in {:?})",
        started.elapsed()
    );
    assert!(total > 0);
}
