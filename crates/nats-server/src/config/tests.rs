//! Config syntax and option-mapping tests, including `file:line:col` errors.

use super::options::{apply_items, parse_duration};
use super::parser::{parse_file, parse_str};
use super::value::Value;
use super::Options;
use std::path::Path;
use std::time::Duration;

fn options_from(text: &str) -> Result<Options, String> {
    let items = parse_str(text, Path::new("test.conf")).map_err(|error| error.to_string())?;
    let mut options = Options::default();
    apply_items(&mut options, &items).map_err(|error| error.to_string())?;
    Ok(options)
}

fn value_of(text: &str, key: &str) -> Value {
    let items = parse_str(text, Path::new("test.conf")).unwrap();
    items
        .into_iter()
        .find(|(name, _)| name == key)
        .map(|(_, entry)| entry.value)
        .unwrap()
}

#[test]
fn three_separator_styles() {
    let options = options_from("port: 4333\nhost = 127.0.0.1\nserver_name my-server\n").unwrap();
    assert_eq!(options.port, 4333);
    assert_eq!(options.host, "127.0.0.1");
    assert_eq!(options.server_name.as_deref(), Some("my-server"));
}

#[test]
fn sizes_as_nats_server_reads_them() {
    assert_eq!(value_of("a: 512M", "a"), Value::Integer(512_000_000));
    assert_eq!(value_of("a: 1G", "a"), Value::Integer(1_000_000_000));
    assert_eq!(value_of("a: 1GB", "a"), Value::Integer(1 << 30));
    assert_eq!(value_of("a: 1KB", "a"), Value::Integer(1024));
    assert_eq!(value_of("a: 2k", "a"), Value::Integer(2000));
    assert_eq!(value_of("a: 1MB", "a"), Value::Integer(1 << 20));
    assert_eq!(value_of("a: 1mib", "a"), Value::Integer(1 << 20));
    assert_eq!(value_of("a: -1", "a"), Value::Integer(-1));
    assert_eq!(value_of("a: 1.5", "a"), Value::Float(1.5));
}

#[test]
fn strings_booleans_and_comments() {
    let text = "# comment\na: \"quoted # not comment\" // trailing\nb: 'single'\nc: true\nd: off\ne: bare.value\nf: 10s\n";
    assert_eq!(
        value_of(text, "a"),
        Value::String("quoted # not comment".into())
    );
    assert_eq!(value_of(text, "b"), Value::String("single".into()));
    assert_eq!(value_of(text, "c"), Value::Bool(true));
    assert_eq!(value_of(text, "d"), Value::Bool(false));
    assert_eq!(value_of(text, "e"), Value::String("bare.value".into()));
    assert_eq!(value_of(text, "f"), Value::String("10s".into()));
}

#[test]
fn nested_blocks_and_arrays() {
    let options = options_from(
        r#"
authorization {
  users = [
    {user: alice, password: "a1"}
    {user: bob, password: b2, permissions: {publish: ["x.>", "y"], subscribe: {deny: "secret.>"}}}
  ]
}
"#,
    )
    .unwrap();
    assert_eq!(options.users.len(), 2);
    assert_eq!(options.users[1].user, "bob");
    let permissions = options.users[1].permissions.clone().unwrap();
    assert_eq!(permissions.publish.unwrap().allow, ["x.>", "y"]);
    assert_eq!(permissions.subscribe.unwrap().deny, ["secret.>"]);
}

#[test]
fn variables_and_environment() {
    std::env::set_var("RNATS_TEST_PORT", "4999");
    let options =
        options_from("TOKEN: abc\nauthorization { token: $TOKEN }\nport: $RNATS_TEST_PORT\n")
            .unwrap();
    assert_eq!(options.token.as_deref(), Some("abc"));
    assert_eq!(options.port, 4999);
    let error = options_from("port: $NOT_DEFINED_ANYWHERE_XYZ\n").unwrap_err();
    assert!(
        error.contains(
            "variable reference for 'NOT_DEFINED_ANYWHERE_XYZ' on line 1 can not be found"
        ),
        "{error}"
    );
}

#[test]
fn includes_are_relative_to_the_including_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("auth.conf"),
        "authorization { user: u, password: p }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("main.conf"),
        "port: 4444\ninclude auth.conf\n",
    )
    .unwrap();
    let mut options = Options::default();
    super::apply_config_file(&mut options, &dir.path().join("main.conf")).unwrap();
    assert_eq!(options.port, 4444);
    assert_eq!(options.username.as_deref(), Some("u"));
    std::fs::write(dir.path().join("bad.conf"), "include \"missing.conf\"\n").unwrap();
    let error = parse_file(&dir.path().join("bad.conf"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("error parsing include file 'missing.conf'"),
        "{error}"
    );
}

#[test]
fn unknown_fields_are_errors_with_position() {
    assert_eq!(
        options_from("port: 4333\nfoo_bar: 1\n").unwrap_err(),
        "test.conf:2:1: unknown field \"foo_bar\""
    );
    assert_eq!(
        options_from("authorization {\n  usr: a\n}\n").unwrap_err(),
        "test.conf:2:3: unknown field \"usr\""
    );
    assert_eq!(
        options_from("jetstream {\n  store_dir: /tmp/x\n  foo: 1\n}\n").unwrap_err(),
        "test.conf:3:3: unknown field \"foo\""
    );
}

#[test]
fn syntax_errors_have_positions() {
    // Syntax errors in nats-server's words: `Parse error on line N: '<lexer message>'`.
    let error = options_from("port: 4333\nx = [1, 2\n").unwrap_err();
    assert!(error.starts_with("Parse error on line "), "{error}");
    let error = options_from("server_name: my server\n").unwrap_err();
    assert_eq!(error, "Parse error on line 1: 'Expected a top-level value to end with a new line, comment or EOF, but got 's' instead.'");
    let error = options_from("a {\n b: 1\n").unwrap_err();
    assert_eq!(
        error,
        "Parse error on line 3: 'Unexpected EOF processing map.'"
    );
    let error = options_from("port = \n").unwrap_err();
    assert_eq!(
        error,
        "Parse error on line 2: 'Expected value but found new line'"
    );
    let error = options_from("x = [1 2]\n").unwrap_err();
    assert!(error.contains("Expected an array value terminator \",\" or an array terminator \"]\", but got '2' instead."), "{error}");
    let error = options_from("port: \"abc\"\n").unwrap_err();
    assert!(error.starts_with("test.conf:1:0:"), "{error}");
}

#[test]
fn limits_and_durations() {
    let options = options_from(
        "max_payload: 2MB\nmax_pending: 10MB\nmax_connections: 10\nmax_subscriptions: 5\nping_interval: \"30s\"\nping_max: 3\nwrite_deadline: \"2s\"\nmax_control_line: 1KB\n",
    )
    .unwrap();
    assert_eq!(options.max_payload, 2 << 20);
    assert_eq!(options.max_pending, 10 << 20);
    assert_eq!(options.max_connections, 10);
    assert_eq!(options.max_subscriptions, 5);
    assert_eq!(options.ping_interval, Duration::from_secs(30));
    assert_eq!(options.ping_max, 3);
    assert_eq!(options.write_deadline, Duration::from_secs(2));
    assert_eq!(options.max_control_line, 1024);
    assert_eq!(options.max_closed_clients, 10_000);
    assert_eq!(
        options_from("max_closed_clients: 5\n")
            .unwrap()
            .max_closed_clients,
        5
    );
    // 0 is nats-server's default.
    assert_eq!(
        options_from("max_closed_clients: 0\n")
            .unwrap()
            .max_closed_clients,
        10_000
    );
    assert_eq!(
        options_from("max_payload: 5GB\n").unwrap_err(),
        "test.conf:1:0: max_payload value is too big"
    );
    // An integer duration is seconds, with nats-server's warning.
    let options = options_from("ping_interval: 5\n").unwrap();
    assert_eq!(options.ping_interval, Duration::from_secs(5));
    assert_eq!(options.warnings.len(), 1);
}

#[test]
fn go_durations() {
    assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
    assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
    assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
    assert_eq!(parse_duration("abc"), None);
    // Both micro signs, as Go's time.ParseDuration (U+00B5 and U+03BC).
    assert_eq!(
        parse_duration("250\u{b5}s"),
        Some(Duration::from_micros(250))
    );
    assert_eq!(
        parse_duration("250\u{3bc}s"),
        Some(Duration::from_micros(250))
    );
    assert_eq!(parse_duration("-1s"), None);
}

#[test]
fn storage_sizes_as_strings() {
    // nats-server's getStorageSize: a string size is K/M/G/T in powers of 1024 (a bare 1G is
    // the lexer's 10^9).
    let options = options_from("jetstream {\n  max_mem: \"1G\"\n  max_file: 1G\n}\n").unwrap();
    assert_eq!(options.jetstream.max_memory, Some(1 << 30));
    assert_eq!(options.jetstream.max_store, Some(1_000_000_000));
    let error = options_from("jetstream {\n  max_file: \"1GB\"\n}\n").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("max_file_store strconv.ParseInt: parsing \"1G\": invalid syntax"),
        "{error}"
    );
}

#[test]
fn listen_and_monitoring() {
    let options = options_from("listen: 127.0.0.1:4555\nhttp_port: 8555\n").unwrap();
    assert_eq!(options.host, "127.0.0.1");
    assert_eq!(options.port, 4555);
    assert_eq!(options.http_port, 8555);
    let options = options_from("monitor_port: 8666\n").unwrap();
    assert_eq!(options.http_port, 8666);
}

#[test]
fn jetstream_block() {
    use nats_jetstream::SyncPolicy;
    let options = options_from(
        "jetstream {\n  store_dir: \"/data/js\"\n  max_mem: 1G\n  max_file_store: 10GB\n  sync_interval: always\n  domain: hub\n  strict: true\n}\n",
    )
    .unwrap();
    let jetstream = options.jetstream;
    assert!(jetstream.enabled);
    assert_eq!(jetstream.store_dir.unwrap(), Path::new("/data/js"));
    assert_eq!(jetstream.max_memory, Some(1_000_000_000));
    assert_eq!(jetstream.max_store, Some(10 << 30));
    assert_eq!(jetstream.sync_interval, SyncPolicy::Always);
    assert_eq!(jetstream.domain.as_deref(), Some("hub"));
    assert!(jetstream.strict);
    let options =
        options_from("jetstream { sync_interval: \"30s\", max_memory_store: \"512M\" }\n").unwrap();
    assert_eq!(
        options.jetstream.sync_interval,
        SyncPolicy::Interval(Duration::from_secs(30))
    );
    // A quoted size is getStorageSize's (powers of 1024): nats-server 2.15.1 reports
    // max_memory 536870912 in /jsz for `max_mem: "512M"`.
    assert_eq!(options.jetstream.max_memory, Some(512 << 20));
    assert!(
        options_from("jetstream: enabled\n")
            .unwrap()
            .jetstream
            .enabled
    );
    assert!(
        !options_from("jetstream: false\n")
            .unwrap()
            .jetstream
            .enabled
    );
}

#[test]
fn separators_on_one_line() {
    let options = options_from("port: 4333; max_payload: 1000, ping_max: 5\n").unwrap();
    assert_eq!(options.port, 4333);
    assert_eq!(options.max_payload, 1000);
    assert_eq!(options.ping_max, 5);
}

#[test]
fn allow_responses_forms() {
    use super::ResponsePermission;
    let options = options_from(
        "authorization { users = [\n {user: a, password: p, permissions: {allow_responses: true}}\n {user: b, password: p, permissions: {allow_responses: {max: 3, expires: \"5s\"}}}\n] }\n",
    )
    .unwrap();
    let first = options.users[0].permissions.clone().unwrap();
    assert_eq!(first.responses, Some(ResponsePermission::default()));
    let second = options.users[1].permissions.clone().unwrap();
    assert_eq!(
        second.responses,
        Some(ResponsePermission {
            max: 3,
            expires: Duration::from_secs(5)
        })
    );
}

#[test]
fn operator_jwt_errors_read_as_nats_servers() {
    let error = options_from("operator: /nonexistent/op.jwt\n").unwrap_err();
    assert!(
        error.contains(
            "error parsing operator JWT: open /nonexistent/op.jwt: no such file or directory"
        ),
        "{error}"
    );
    let error = options_from("operator: eyJhbGciOi.bad\n").unwrap_err();
    assert!(
        error.contains("error parsing operator JWT: expected 3 chunks"),
        "{error}"
    );
    let error = options_from("resolver: BOGUS\n").unwrap_err();
    assert!(error.contains("error parsing account resolver"), "{error}");
    for (block, expected) in [
        (
            "type: full",
            "dir has no value and needs to point to a directory",
        ),
        (
            "type: full, dir: \"/tmp\", ttl: \"1m\"",
            "FULL does not accept ttl",
        ),
        (
            "type: full, dir: \"/tmp\", hard_delete: true",
            "hard_delete has no effect without delete",
        ),
        (
            "type: cache, dir: \"/tmp\", interval: \"1m\"",
            "CACHE does not accept sync",
        ),
        (
            "type: cache, dir: \"/tmp\", allow_delete: true",
            "CACHE does not accept allow_delete",
        ),
        (
            "type: bogus, dir: \"/tmp\"",
            "error parsing account resolver",
        ),
    ] {
        let error = options_from(&format!("resolver {{ {block} }}\n")).unwrap_err();
        assert!(error.contains(expected), "{block}: {error}");
    }
    let full = options_from(
        "resolver { type: full, dir: \"/tmp/jwt\", allow_delete: true, interval: \"2m\", limit: 5 }\n",
    )
    .expect("full resolver");
    assert_eq!(
        full.operator.resolver,
        Some(super::operator::ResolverOptions::Directory {
            full: true,
            dir: "/tmp/jwt".into(),
            allow_delete: true,
            hard_delete: false,
            interval: std::time::Duration::from_secs(120),
            limit: 5,
            ttl: std::time::Duration::ZERO,
            timeout: std::time::Duration::from_secs(2),
        })
    );
    let error = options_from("trusted_keys: [\"O...\"]\n").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("trust key \"O...\" required to be a valid public operator nkey"),
        "{error}"
    );
    let operator = nkeys::KeyPair::new_operator().public_key();
    let options = options_from(&format!("trusted: {operator}\n")).expect("trusted key");
    assert_eq!(options.operator.trusted_keys, vec![operator.clone()]);
    assert!(options.operator.enabled());
}

#[test]
fn tls_block_errors_and_accepted_keys() {
    let error = options_from("tls { cert_file: \"a.pem\" }\n").unwrap_err();
    assert!(
        error.ends_with("missing 'key_file' in TLS configuration"),
        "{error}"
    );
    let error = options_from("tls { pinned_certs: [] }\n").unwrap_err();
    assert!(error.contains("not supported by rnats"), "{error}");
    let error = options_from("tls { handshake_first: \"soon\" }\n").unwrap_err();
    assert!(
        error.contains("field \"handshake_first\"'s value \"soon\" is invalid"),
        "{error}"
    );
}

#[test]
fn accounts_and_their_users() {
    let options = options_from(
        "system_account: SYS\naccounts { A { users: [ { user: a, password: b } ], jetstream: enabled }, B { jetstream: { max_mem: 1G } }, C { users: [ { user: c, password: d } ], imports: [] }, SYS {} }\n",
    )
    .unwrap();
    assert_eq!(options.users.len(), 2);
    assert_eq!(options.users[0].account.as_deref(), Some("A"));
    assert!(options.auth_required());
    let enabled: Vec<(&str, bool)> = options
        .accounts
        .iter()
        .map(|account| (account.name.as_str(), account.jetstream))
        .collect();
    assert_eq!(
        enabled,
        [("A", true), ("B", true), ("C", false), ("SYS", false)]
    );
    assert_eq!(options.system_account.as_deref(), Some("SYS"));
    // An empty imports list is taken as it is.
    assert!(options.warnings.is_empty(), "{:?}", options.warnings);
    let error = options_from("accounts { A { jetstream: sometimes } }\n").unwrap_err();
    assert!(
        error.contains("Expected 'enabled' or 'disabled'"),
        "{error}"
    );
}

#[test]
fn jetstream_batch_limits() {
    use nats_jetstream::BatchLimits;
    let options = options_from(
        "jetstream {\n  limits {\n    max_request_batch: 10\n    duplicate_window: \"1m\"\n    batch {\n      max_inflight_per_stream: 1\n      max_inflight_total: 5\n      max_msgs: 3\n      timeout: \"2s\"\n    }\n  }\n}\n",
    )
    .unwrap();
    assert_eq!(
        options.jetstream.batch_limits,
        BatchLimits {
            max_inflight_per_stream: 1,
            max_inflight_total: 5,
            max_msgs: 3,
            timeout: Duration::from_secs(2),
        }
    );
    let unset =
        options_from("jetstream { limits { batch { max_msgs: -1, timeout: \"-1s\" } } }").unwrap();
    assert_eq!(unset.jetstream.batch_limits.max_msgs, -1);
    assert_eq!(unset.jetstream.batch_limits.timeout, Duration::ZERO);
}

#[test]
fn jetstream_api_queue_limits() {
    let options =
        options_from("jetstream { request_queue_limit: 100, info_queue_limit: 50 }\n").unwrap();
    assert_eq!(options.jetstream.request_queue_limit, 100);
    assert_eq!(options.jetstream.info_queue_limit, 50);
    // nats-server reads both as plain integers: a size string is refused.
    let error = options_from("jetstream { info_queue_limit: \"1K\" }\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("Expected a parseable size for \"info_queue_limit\", got 1K"),
        "{error}"
    );
}

#[test]
fn jetstream_limits_errors_in_nats_server_words() {
    let error = |body: &str| options_from(&format!("jetstream {{\n limits {{ {body} }}\n}}\n"));
    assert_eq!(
        error("max_batch_size: 3").unwrap_err(),
        "test.conf:2:11: unknown field \"max_batch_size\""
    );
    assert_eq!(
        error("batch { max_msgs: 3, bogus: 1 }").unwrap_err(),
        "test.conf:2:32: unknown field \"bogus\""
    );
    assert_eq!(
        error("batch: 3").unwrap_err(),
        "test.conf:2:11: Expected a map to define batch limits, got int64"
    );
    assert_eq!(
        options_from("jetstream { limits: 3 }").unwrap_err(),
        "test.conf:1:12: Expected a map to define JetStreamLimits, got int64"
    );
    assert!(error("batch { timeout: \"x\" }")
        .unwrap_err()
        .ends_with("time: invalid duration \"x\""));
    assert!(error("batch { timeout: 5 }")
        .unwrap_err()
        .ends_with("interface conversion: interface {} is int64, not string"));
    assert!(error("batch { max_msgs: \"3\" }")
        .unwrap_err()
        .ends_with("interface conversion: interface {} is string, not int64"));
}

// The forms of nats-server's config lexer (conf/lex.go and its tests) that clients' test
// suites write: each parsed here as nats-server 2.15.1 parses it.

#[test]
fn block_opening_on_the_next_line() {
    let text = "websocket\n{\n  port: 8080\n  no_tls: true\n}\nport: 4333\n";
    let Value::Map(items) = value_of(text, "websocket") else {
        panic!("websocket is a map");
    };
    assert_eq!(items[0].0, "port");
    assert_eq!(items[0].1.value, Value::Integer(8080));
    assert_eq!(value_of(text, "port"), Value::Integer(4333));
    // Blank lines and a separator between a key and its block, and an array opening on the
    // next line.
    let text = "jetstream\n\n  = {\n max_mem: 1MB\n}\nlist\n[\n 1, 2\n]\n";
    assert!(matches!(value_of(text, "jetstream"), Value::Map(_)));
    assert!(matches!(value_of(text, "list"), Value::Array(ref items) if items.len() == 2));
}

#[test]
fn json_style_files() {
    // Prettified, as the client libraries write them.
    let text = "\n{\n  \"port\": 4567,\n  \"http_port\": 8223,\n  \"jetstream\": {\n    \"max_mem\": 1048576\n  },\n  \"cluster\": {\n    \"port\": 6222,\n    \"routes\": [\n      \"nats://127.0.0.1:4222\",\n      \"nats://127.0.0.1:4223\"\n    ]\n  }\n}\n";
    assert_eq!(value_of(text, "port"), Value::Integer(4567));
    assert_eq!(value_of(text, "http_port"), Value::Integer(8223));
    assert!(matches!(value_of(text, "jetstream"), Value::Map(_)));
    let Value::Map(cluster) = value_of(text, "cluster") else {
        panic!("cluster is a map");
    };
    assert!(matches!(&cluster[1].1.value, Value::Array(routes) if routes.len() == 2));
    // Not prettified, with the final brace on the line of the last value or after it.
    for text in [
        "{\"http_port\": 8224,\"port\": 4224}\n",
        "{\"http_port\": 8225,\"port\": 4225\n}\n",
        "{\"port\": 4227,\"write_deadline\": \"1h\",\"cluster\": {\"port\": 6222,\"routes\": [\"nats://127.0.0.1:4222\",\"nats://127.0.0.1:4223\"]}}\n",
    ] {
        assert!(matches!(value_of(text, "port"), Value::Integer(4224 | 4225 | 4227)), "{text}");
    }
    let options =
        options_from("{ \"port\": 4567, \"jetstream\": { \"max_mem\": 1048576 } }").unwrap();
    assert_eq!(options.port, 4567);
    assert!(options.jetstream.enabled);
}

#[test]
fn separators_quoted_keys_and_comments() {
    // `=`, `:`, space; spaces around them; semicolons and commas ending items.
    let text = "foo = 123;\nbar = 'baz';\nbaz=boo\nmap {\n id:one\n id2 : onetwo ;\n}\nt true\ntstr \"true\"\nfkey = five # a comment\n";
    assert_eq!(value_of(text, "foo"), Value::Integer(123));
    assert_eq!(value_of(text, "bar"), Value::String("baz".into()));
    assert_eq!(value_of(text, "baz"), Value::String("boo".into()));
    assert_eq!(value_of(text, "t"), Value::Bool(true));
    assert_eq!(value_of(text, "tstr"), Value::String("true".into()));
    assert_eq!(value_of(text, "fkey"), Value::String("five".into()));
    let Value::Map(map) = value_of(text, "map") else {
        panic!("map is a map");
    };
    assert_eq!(map[1].1.value, Value::String("onetwo".into()));
    // Quoted keys, with spaces and special characters.
    let text = "\"foo bar\" = 1\n'baz' : 2\nm { \"a.b/c\": 3 }\n";
    assert_eq!(value_of(text, "foo bar"), Value::Integer(1));
    assert_eq!(value_of(text, "baz"), Value::Integer(2));
    // Comments in odd places: after values, between array items, after an opening brace, at
    // the end without a newline, `//` style.
    let text = "# top\nfoo = [ // after the bracket\n 1 // one\n 2 # two\n 'bar'\n \"bar\"\n]\nm { # after the brace\n a: 1 // after a value\n}\nlast: 3 # no newline";
    assert!(matches!(value_of(text, "foo"), Value::Array(ref items) if items.len() == 4));
    assert!(matches!(value_of(text, "m"), Value::Map(ref items) if items.len() == 1));
    assert_eq!(value_of(text, "last"), Value::Integer(3));
    // Semicolon chaining on one line.
    let text = "a = 1; b = 2; c = 3\n";
    assert_eq!(value_of(text, "c"), Value::Integer(3));
}

#[test]
fn variables_and_includes_in_json_style_and_next_line_blocks() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(
        directory.path().join("auth.conf"),
        "authorization\n{\n  user: alice\n  password: $PASS\n}\n",
    )
    .unwrap();
    let main = directory.path().join("main.conf");
    std::fs::write(
        &main,
        "{\n  PASS: \"s3cret\"\n  include ./auth.conf\n  port: 4999\n}\n",
    )
    .unwrap();
    let items = parse_file(&main).unwrap();
    let authorization = items
        .iter()
        .find(|(key, _)| key == "authorization")
        .unwrap();
    let Value::Map(fields) = &authorization.1.value else {
        panic!("authorization is a map");
    };
    assert_eq!(fields[1].1.value, Value::String("s3cret".into()));
    assert!(items
        .iter()
        .any(|(key, entry)| key == "port" && entry.value == Value::Integer(4999)));
}

/// Found by the config fuzz target: references to references copied their values until the
/// machine ran out of memory (ten lines of ten references each: 10^9 values). Refused with an
/// error; a config with a few references still reads.
#[test]
fn references_that_expand_without_bound_are_refused() {
    let mut text = String::from("a0: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n");
    for level in 1..10 {
        let previous = format!("$a{}", level - 1);
        text.push_str(&format!("a{level}: [{}]\n", vec![previous; 10].join(", ")));
    }
    let error = options_from(&text).unwrap_err();
    assert!(
        error.contains("expands the configuration past 1000000 values"),
        "{error}"
    );
    let small = value_of("a: [1, 2]\nb: [$a, $a]\n", "b");
    let Value::Array(entries) = small else {
        panic!("b is an array");
    };
    assert_eq!(entries.len(), 2);
}
