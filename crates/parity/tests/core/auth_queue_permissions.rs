//! `"subject queue"` entries in subscribe permissions: queue-group-specific allow and deny,
//! with nats-server's violation texts. Passes against the real nats-server too.

use test_harness::{RawClient, ServerOptions, TestServer};

const CONFIG: &str = r#"
authorization {
  users = [
    {
      user: q
      password: q
      permissions: {
        subscribe: {
          allow: ["foo.> workers", "bar", "baz.* v1.*"]
          deny: ["bar secret"]
        }
      }
    }
  ]
}
"#;

#[test]
fn queue_entries_allow_and_deny_per_group() {
    let server = TestServer::start(ServerOptions {
        config: Some(CONFIG.to_string()),
        ..Default::default()
    });
    let mut client =
        RawClient::connect_with(&server, "{\"verbose\":false,\"user\":\"q\",\"pass\":\"q\"}");
    let violation = |subject: &str, queue: Option<&str>| match queue {
        Some(queue) => format!(
            "-ERR 'Permissions Violation for Subscription to \"{subject}\" using queue \"{queue}\"'"
        ),
        None => format!("-ERR 'Permissions Violation for Subscription to \"{subject}\"'"),
    };
    let cases: &[(&str, Option<&str>, bool)] = &[
        ("foo.a", Some("workers"), true),
        ("foo.a", Some("others"), false),
        ("foo.a", None, false),
        ("bar", None, true),
        ("bar", Some("anyone"), true),
        ("bar", Some("secret"), false),
        ("baz.x", Some("v1.blue"), true),
        ("baz.x", Some("v2.blue"), false),
        ("foo.>", Some("workers"), true),
        ("foo.*", Some("v1.*"), false),
    ];
    for (sid, (subject, queue, allowed)) in cases.iter().enumerate() {
        let line = match queue {
            Some(queue) => format!("SUB {subject} {queue} {sid}\r\n"),
            None => format!("SUB {subject} {sid}\r\n"),
        };
        client.send(&line);
        let mut expected = Vec::new();
        if !allowed {
            expected.push(violation(subject, *queue));
        }
        expected.push("PONG".to_string());
        assert_eq!(client.ping_collect(), expected, "{line}");
    }
}
