//! nkey users: INFO carries a nonce, CONNECT carries the nkey and its signature of the nonce;
//! a wrong or missing signature, or an unknown nkey, is an `Authorization Violation`. Keys are
//! made at run time. Passes against the real nats-server too (`NATS_SERVER_BIN`).

use base64::Engine;
use std::time::Duration;
use test_harness::{RawClient, SpawnTied, TestServer};

const WAIT: Duration = Duration::from_secs(10);

/// A server with one nkey user allowed everything, one limited to `nkey.limited.>` for
/// publishing, and a password user.
fn nkey_server(full: &nkeys::KeyPair, limited: &nkeys::KeyPair) -> TestServer {
    TestServer::with_config(&format!(
        r#"
authorization {{
  timeout: 1
  users = [
    {{ nkey: {} }}
    {{ nkey: {}, permissions: {{ publish: "nkey.limited.>" }} }}
    {{ user: bob, password: builder }}
  ]
}}
"#,
        full.public_key(),
        limited.public_key()
    ))
}

fn nonce_of(client: &RawClient) -> String {
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    assert_eq!(info["auth_required"], true);
    info["nonce"].as_str().expect("nonce in INFO").to_string()
}

fn sign(key: &nkeys::KeyPair, nonce: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.sign(nonce.as_bytes()).unwrap())
}

fn connect_line(nkey: &str, signature: &str) -> String {
    format!("CONNECT {{\"verbose\":false,\"nkey\":\"{nkey}\",\"sig\":\"{signature}\"}}\r\nPING\r\n")
}

const VIOLATION: &str = "-ERR 'Authorization Violation'\r\n";

#[test]
fn info_carries_a_fresh_nonce_per_connection() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let first = nonce_of(&RawClient::connect(&server));
    let second = nonce_of(&RawClient::connect(&server));
    assert_eq!(first.len(), 15);
    assert_ne!(first, second);
}

#[test]
fn a_signed_nonce_connects() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let mut client = RawClient::connect(&server);
    let nonce = nonce_of(&client);
    client.send(&connect_line(&full.public_key(), &sign(&full, &nonce)));
    client.expect_line("PONG");
}

#[test]
fn a_standard_base64_signature_is_accepted_too() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let mut client = RawClient::connect(&server);
    let nonce = nonce_of(&client);
    let signature =
        base64::engine::general_purpose::STANDARD.encode(full.sign(nonce.as_bytes()).unwrap());
    client.send(&connect_line(&full.public_key(), &signature));
    client.expect_line("PONG");
}

#[test]
fn a_signature_of_another_nonce_is_a_violation() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let mut client = RawClient::connect(&server);
    client.send(&connect_line(
        &full.public_key(),
        &sign(&full, "not-the-nonce"),
    ));
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));
}

#[test]
fn another_keys_signature_is_a_violation() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let mut client = RawClient::connect(&server);
    let nonce = nonce_of(&client);
    client.send(&connect_line(&full.public_key(), &sign(&limited, &nonce)));
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));
}

#[test]
fn a_missing_signature_is_a_violation() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let mut client = RawClient::connect(&server);
    client.send(&format!(
        "CONNECT {{\"verbose\":false,\"nkey\":\"{}\"}}\r\nPING\r\n",
        full.public_key()
    ));
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));
}

#[test]
fn an_unknown_nkey_is_a_violation() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let stranger = nkeys::KeyPair::new_user();
    let mut client = RawClient::connect(&server);
    let nonce = nonce_of(&client);
    client.send(&connect_line(
        &stranger.public_key(),
        &sign(&stranger, &nonce),
    ));
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));
}

#[test]
fn password_users_still_connect_beside_nkeys() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false,\"user\":\"bob\",\"pass\":\"builder\"}\r\nPING\r\n");
    client.expect_line("PONG");
}

#[test]
fn an_nkey_users_permissions_apply() {
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let mut client = RawClient::connect(&server);
    let nonce = nonce_of(&client);
    client.send(&connect_line(
        &limited.public_key(),
        &sign(&limited, &nonce),
    ));
    client.expect_line("PONG");
    client.send("PUB nkey.limited.ok 0\r\n\r\nPUB other 0\r\n\r\n");
    assert_eq!(
        client.ping_collect(),
        vec![
            "-ERR 'Permissions Violation for Publish to \"other\"'".to_string(),
            "PONG".to_string()
        ]
    );
}

#[tokio::test]
async fn async_nats_signs_with_its_seed() {
    use futures::StreamExt;
    let (full, limited) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let server = nkey_server(&full, &limited);
    let url = server.url();
    let connect = |seed: String| {
        let url = url.clone();
        async move {
            tokio::time::timeout(
                WAIT,
                async_nats::ConnectOptions::with_nkey(seed).connect(url),
            )
            .await
            .unwrap()
            .unwrap()
        }
    };
    let subscriber = connect(full.seed().unwrap()).await;
    let publisher = connect(limited.seed().unwrap()).await;
    let mut subscription = subscriber.subscribe("nkey.limited.>").await.unwrap();
    subscriber.flush().await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        publisher
            .publish("nkey.limited.hello", "hi".into())
            .await
            .unwrap();
        publisher.flush().await.unwrap();
        match tokio::time::timeout(Duration::from_millis(200), subscription.next()).await {
            Ok(Some(message)) => {
                assert_eq!(&message.payload[..], b"hi");
                break;
            }
            Ok(None) => panic!("subscription ended"),
            Err(_) => assert!(tokio::time::Instant::now() < deadline, "nothing arrived"),
        }
    }
}

/// Run the server on `config`, expecting it to refuse to start; its stderr.
fn refused(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.conf");
    std::fs::write(&path, config).unwrap();
    let output = std::process::Command::new(test_harness::server_binary())
        .args([
            "-a",
            "127.0.0.1",
            "-p",
            &test_harness::free_port().to_string(),
            "-c",
        ])
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .dies_with_this_thread()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn bad_nkey_entries_stop_the_server() {
    assert!(refused("authorization { users: [ { nkey: \"UABC\" } ] }\n")
        .contains("Not a valid public nkey for a user"));
    let account = nkeys::KeyPair::new_account().public_key();
    assert!(refused(&format!(
        "authorization {{ users: [ {{ nkey: {account} }} ] }}\n"
    ))
    .contains("Not a valid public nkey for a user"));
    let user = nkeys::KeyPair::new_user().public_key();
    assert!(refused(&format!(
        "authorization {{ users: [ {{ nkey: {user}, user: a }} ] }}\n"
    ))
    .contains("Nkey users do not take usernames or passwords"));
    assert!(refused("authorization { users: [ { password: a } ] }\n")
        .contains("User entry requires a user"));
}

/// rnats has one account: users declared inside `accounts { }` still have to authenticate
/// (the server must not be left open), with their permissions.
#[test]
fn users_inside_accounts_still_authenticate() {
    let user = nkeys::KeyPair::new_user();
    let server = TestServer::with_config(&format!(
        r#"
accounts {{
  A {{ users: [ {{ user: a, password: apw, permissions: {{ publish: "a.>" }} }} ] }}
  B {{ users: [ {{ nkey: {} }} ] }}
}}
"#,
        user.public_key()
    ));
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false}\r\nPING\r\n");
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"apw\"}\r\nPING\r\n");
    client.expect_line("PONG");
    client.send("PUB b.x 0\r\n\r\n");
    assert_eq!(
        client.ping_collect(),
        vec![
            "-ERR 'Permissions Violation for Publish to \"b.x\"'".to_string(),
            "PONG".to_string()
        ]
    );
    let mut client = RawClient::connect(&server);
    let nonce = nonce_of(&client);
    client.send(&connect_line(&user.public_key(), &sign(&user, &nonce)));
    client.expect_line("PONG");
}
