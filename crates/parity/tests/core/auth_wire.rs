//! Authentication and permissions on the wire: INFO auth_required, `Authorization Violation`,
//! `Authentication Timeout`, permission violation texts. Passes against the real nats-server too.

use test_harness::{RawClient, ServerOptions, TestServer};

const USERS: &str = r#"
authorization {
  timeout: 1
  users = [
    { user: admin, password: adminpw }
    {
      user: limited
      password: pw
      permissions {
        publish { allow: ["pub.>"], deny: ["pub.secret"] }
        subscribe { allow: "sub.*" }
      }
    }
  ]
}
"#;

#[test]
fn info_announces_auth_required() {
    let server = TestServer::with_config(USERS);
    let client = RawClient::connect(&server);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    assert_eq!(info["auth_required"], true);
}

#[test]
fn wrong_password_is_an_authorization_violation() {
    let server = TestServer::with_config(USERS);
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false,\"user\":\"admin\",\"pass\":\"nope\"}\r\nPING\r\n");
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'Authorization Violation'\r\n")
    );
}

#[test]
fn missing_credentials_are_an_authorization_violation() {
    let server = TestServer::with_config(USERS);
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false}\r\nPING\r\n");
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'Authorization Violation'\r\n")
    );
}

#[test]
fn right_password_connects() {
    let server = TestServer::with_config(USERS);
    let mut client = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"user":"admin","pass":"adminpw"}"#,
    );
    client.send("SUB anything 1\r\nPUB anything 1\r\nx\r\n");
    assert_eq!(client.ping_collect(), ["MSG anything 1 1", "x", "PONG"]);
}

#[test]
fn no_connect_within_the_auth_timeout() {
    let server = TestServer::with_config(USERS);
    let mut client = RawClient::connect(&server);
    let text = client.read_to_close().expect("closed by the server");
    assert_eq!(text, "-ERR 'Authentication Timeout'\r\n");
}

#[test]
fn publish_permissions() {
    let server = TestServer::with_config(USERS);
    let mut client =
        RawClient::connect_with(&server, r#"{"verbose":true,"user":"limited","pass":"pw"}"#);
    client.send("PUB pub.ok 1\r\na\r\nPUB pub.secret 1\r\nb\r\nPUB other 1\r\nc\r\n");
    assert_eq!(
        client.ping_collect(),
        [
            "+OK",
            "-ERR 'Permissions Violation for Publish to \"pub.secret\"'",
            "-ERR 'Permissions Violation for Publish to \"other\"'",
            "PONG"
        ]
    );
}

#[test]
fn subscribe_permissions() {
    let server = TestServer::with_config(USERS);
    let mut client =
        RawClient::connect_with(&server, r#"{"verbose":false,"user":"limited","pass":"pw"}"#);
    // `sub.>` passes `allow: sub.*` in nats-server (wildcards are matched as tokens).
    client.send("SUB sub.one 1\r\nSUB other 2\r\nSUB other q 3\r\nSUB sub.> 4\r\n");
    assert_eq!(
        client.ping_collect(),
        [
            "-ERR 'Permissions Violation for Subscription to \"other\"'",
            "-ERR 'Permissions Violation for Subscription to \"other\" using queue \"q\"'",
            "PONG"
        ]
    );
}

#[test]
fn token_from_the_command_line() {
    let server = TestServer::start(ServerOptions {
        args: vec!["--auth".into(), "tok".into()],
        ..Default::default()
    });
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false,"auth_token":"tok"}"#);
    assert_eq!(client.ping_collect(), ["PONG"]);
    let mut wrong = RawClient::connect(&server);
    wrong.send("CONNECT {\"verbose\":false,\"auth_token\":\"bad\"}\r\n");
    assert_eq!(
        wrong.read_to_close().as_deref(),
        Some("-ERR 'Authorization Violation'\r\n")
    );
}

#[test]
fn user_and_password_from_the_command_line() {
    let server = TestServer::start(ServerOptions {
        args: vec!["--user".into(), "u".into(), "--pass".into(), "p".into()],
        ..Default::default()
    });
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false,"user":"u","pass":"p"}"#);
    assert_eq!(client.ping_collect(), ["PONG"]);
}

#[test]
fn wildcard_subscription_skips_denied_subjects() {
    let server = TestServer::with_config(
        r#"
authorization {
  users = [
    { user: admin, password: adminpw }
    { user: reader, password: pw, permissions { subscribe { allow: ">", deny: "secret.*" } } }
  ]
}
"#,
    );
    let mut reader =
        RawClient::connect_with(&server, r#"{"verbose":false,"user":"reader","pass":"pw"}"#);
    reader.send("SUB *.x 1\r\n");
    reader.ping_collect();
    let mut admin = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"user":"admin","pass":"adminpw"}"#,
    );
    admin.send("PUB secret.x 1\r\na\r\nPUB public.x 1\r\nb\r\n");
    admin.ping_collect();
    assert_eq!(reader.ping_collect(), ["MSG public.x 1 1", "b", "PONG"]);
}

#[test]
fn allow_responses_lets_a_service_answer_once() {
    let server = TestServer::with_config(
        r#"
authorization {
  users = [
    { user: admin, password: adminpw }
    { user: svc, password: pw, permissions { publish { deny: ">" }, subscribe: "svc", allow_responses: true } }
  ]
}
"#,
    );
    let mut service =
        RawClient::connect_with(&server, r#"{"verbose":false,"user":"svc","pass":"pw"}"#);
    service.send("SUB svc 1\r\n");
    service.ping_collect();
    let mut requester = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"user":"admin","pass":"adminpw"}"#,
    );
    requester.send("SUB inbox.1 1\r\nPUB svc inbox.1 3\r\nreq\r\n");
    requester.ping_collect();
    assert_eq!(
        service.ping_collect(),
        ["MSG svc 1 inbox.1 3", "req", "PONG"]
    );
    service.send("PUB inbox.1 3\r\nrep\r\nPUB inbox.1 4\r\nrep2\r\n");
    assert_eq!(
        service.ping_collect(),
        [
            "-ERR 'Permissions Violation for Publish to \"inbox.1\"'",
            "PONG"
        ]
    );
    assert_eq!(requester.ping_collect(), ["MSG inbox.1 1 3", "rep", "PONG"]);
}

#[test]
fn no_auth_user_applies_to_connections_without_credentials() {
    let server = TestServer::with_config(
        r#"
no_auth_user: guest
authorization {
  users = [
    { user: guest, password: guestpw, permissions { publish: "public.>", subscribe: "public.>" } }
  ]
}
"#,
    );
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    client.send("SUB public.news 1\r\nPUB public.news 2\r\nhi\r\nPUB private 1\r\nx\r\n");
    assert_eq!(
        client.ping_collect(),
        [
            "MSG public.news 1 2",
            "hi",
            "-ERR 'Permissions Violation for Publish to \"private\"'",
            "PONG"
        ]
    );
}
