//! bcrypt-hashed secrets (`$2a$`/`$2b$`): the client's plain password or token is checked
//! against the hash, for users lists, the single user and the token. Hashes are made at run
//! time (cost 4, to keep the test fast). Passes against the real nats-server too.

use test_harness::{RawClient, TestServer};

const VIOLATION: &str = "-ERR 'Authorization Violation'\r\n";

fn hash(secret: &str) -> String {
    bcrypt::hash(secret, 4).unwrap()
}

/// CONNECT with `credentials` (JSON fields): the first line back (`PONG` or the error).
fn outcome(server: &TestServer, credentials: &str) -> String {
    let mut client = RawClient::connect(server);
    client.send(&format!(
        "CONNECT {{\"verbose\":false,{credentials}}}\r\nPING\r\n"
    ));
    client.read_line().unwrap_or_default()
}

#[test]
fn users_list_with_bcrypt_passwords() {
    let server = TestServer::with_config(&format!(
        "authorization {{ users: [ {{ user: alice, password: \"{}\" }}, {{ user: bob, password: plain }} ] }}\n",
        hash("wonderland")
    ));
    let mut client = RawClient::connect(&server);
    client
        .send("CONNECT {\"verbose\":false,\"user\":\"alice\",\"pass\":\"wonderland\"}\r\nPING\r\n");
    client.expect_line("PONG");

    let mut client = RawClient::connect(&server);
    client.send(
        "CONNECT {\"verbose\":false,\"user\":\"alice\",\"pass\":\"looking-glass\"}\r\nPING\r\n",
    );
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));

    // The hash itself is not the password.
    let hashed = hash("wonderland");
    let mut client = RawClient::connect(&server);
    client.send(&format!(
        "CONNECT {{\"verbose\":false,\"user\":\"alice\",\"pass\":\"{hashed}\"}}\r\nPING\r\n"
    ));
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));

    assert_eq!(
        outcome(&server, "\"user\":\"bob\",\"pass\":\"plain\""),
        "PONG"
    );
}

#[test]
fn single_user_with_a_bcrypt_password() {
    let server = TestServer::with_config(&format!(
        "authorization {{ user: carol, password: \"{}\" }}\n",
        hash("s3cret")
    ));
    assert_eq!(
        outcome(&server, "\"user\":\"carol\",\"pass\":\"s3cret\""),
        "PONG"
    );
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false,\"user\":\"carol\",\"pass\":\"nope\"}\r\nPING\r\n");
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));
}

#[test]
fn bcrypt_token() {
    let server = TestServer::with_config(&format!(
        "authorization {{ token: \"{}\" }}\n",
        hash("let-me-in")
    ));
    assert_eq!(outcome(&server, "\"auth_token\":\"let-me-in\""), "PONG");
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false,\"auth_token\":\"let-me-out\"}\r\nPING\r\n");
    assert_eq!(client.read_to_close().as_deref(), Some(VIOLATION));
}

#[tokio::test]
async fn async_nats_with_a_bcrypt_user() {
    let server = TestServer::with_config(&format!(
        "authorization {{ users: [ {{ user: dave, password: \"{}\" }} ] }}\n",
        hash("pw")
    ));
    let client = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        async_nats::ConnectOptions::with_user_and_password("dave".into(), "pw".into())
            .connect(server.url()),
    )
    .await
    .unwrap()
    .unwrap();
    client.flush().await.unwrap();
}
