//! The web console on the monitoring port (`/console`, rnats only: nats-server has none, so
//! these skip themselves in the parity pass): its JSON (`/console/data`, `/console/messages`),
//! message contents refused unless the monitoring port listens on loopback, and the page itself
//! rendered by a real headless Chromium (Debian's `chromium`, which `.ci/run` installs) against a
//! server holding a stream, a consumer, a Key-Value bucket and a named connection.

use std::process::Command;
use std::time::Duration;
use test_harness::monitoring::{get_json, get_response};
use test_harness::{ServerOptions, TestServer};

const CHROMIUM: &str = "/usr/bin/chromium";

fn skip_on_reference() -> bool {
    if test_harness::is_reference() {
        eprintln!("skipped: the console is rnats's own");
        return true;
    }
    false
}

fn server() -> TestServer {
    TestServer::start(ServerOptions {
        jetstream: true,
        monitoring: true,
        ..ServerOptions::default()
    })
}

/// A stream ORDERS with three messages, a durable pull consumer READER, a bucket CONFIG with
/// one key, and the connection (named `console-test`) that made them, kept open.
async fn populate(server: &TestServer) -> async_nats::Client {
    let client = async_nats::ConnectOptions::new()
        .name("console-test")
        .connect(server.url())
        .await
        .expect("connect");
    let jetstream = async_nats::jetstream::new(client.clone());
    let stream = jetstream
        .create_stream(async_nats::jetstream::stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        })
        .await
        .expect("stream");
    for n in 1..=3 {
        jetstream
            .publish("orders.created", format!("pesanan-{n}").into())
            .await
            .expect("publish")
            .await
            .expect("ack");
    }
    stream
        .create_consumer(async_nats::jetstream::consumer::pull::Config {
            durable_name: Some("READER".into()),
            ..Default::default()
        })
        .await
        .expect("consumer");
    let bucket = jetstream
        .create_key_value(async_nats::jetstream::kv::Config {
            bucket: "CONFIG".into(),
            ..Default::default()
        })
        .await
        .expect("bucket");
    bucket.put("color", "blue".into()).await.expect("put");
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_data_and_messages() {
    if skip_on_reference() {
        return;
    }
    let server = server();
    let _client = populate(&server).await;

    let page = get_response(&server, "/console");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("rnats console"), "{}", page.body);

    let data = get_json(&server, "/console/data");
    let streams = data["streams"].as_array().expect("streams");
    let orders = streams
        .iter()
        .find(|stream| stream["config"]["name"] == "ORDERS")
        .unwrap_or_else(|| panic!("ORDERS in {data}"));
    assert_eq!(orders["account"], "$G");
    assert_eq!(orders["state"]["messages"], 3);
    assert_eq!(orders["consumers"][0]["name"], "READER");
    assert_eq!(orders["consumers"][0]["num_pending"], 3);
    assert!(streams
        .iter()
        .any(|stream| stream["config"]["name"] == "KV_CONFIG"));

    let messages = get_json(&server, "/console/messages?account=%24G&stream=ORDERS");
    let payloads: Vec<&str> = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|message| message["data"].as_str())
        .collect();
    assert_eq!(payloads, ["pesanan-1", "pesanan-2", "pesanan-3"]);
    assert_eq!(messages["messages"][2]["seq"], 3);
    assert_eq!(messages["messages"][2]["subject"], "orders.created");

    let missing = get_response(&server, "/console/messages?account=%24G&stream=NOPE");
    assert_eq!(missing.status, 404, "{missing:?}");
    // The console is not counted in /varz's http_req_stats (nats-server has no such path).
    let varz = get_json(&server, "/varz");
    assert!(varz["http_req_stats"].get("/console").is_none(), "{varz}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_contents_only_on_a_loopback_monitoring_port() {
    if skip_on_reference() {
        return;
    }
    let port = test_harness::free_port();
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(format!("http: \"0.0.0.0:{port}\"\n")),
        ..ServerOptions::default()
    });
    let _client = populate(&server).await;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("monitoring port");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    use std::io::Write;
    write!(
        stream,
        "GET /console/messages?account=%24G&stream=ORDERS HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let response = test_harness::monitoring::read_response(&mut stream).expect("answer");
    assert_eq!(response.status, 403, "{response:?}");
    assert!(!response.body.contains("pesanan"), "{response:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_page_renders_in_a_real_browser() {
    if skip_on_reference() {
        return;
    }
    if !std::path::Path::new(CHROMIUM).exists() {
        // `.ci/run` installs Debian's chromium; a machine without it cannot run this check.
        eprintln!("skipped: {CHROMIUM} not installed (apt-get install chromium)");
        return;
    }
    let server = server();
    let _client = populate(&server).await;
    let url = format!(
        "http://127.0.0.1:{}/console#view=%24G/ORDERS",
        server.monitor_port.expect("monitoring")
    );
    assert_renders(&url).await;
}

/// The rendered page at `url` shows the stream, its consumer, the bucket, the connection
/// and the stream's latest messages, and no error.
async fn assert_renders(url: &str) {
    let profile = tempfile::tempdir().expect("profile dir");
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::from(browser(profile.path(), url)).output(),
    )
    .await
    .expect("chromium within 60 s")
    .expect("chromium runs");
    let dom = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "ORDERS",
        "READER",
        "pull, durable",
        "CONFIG",
        "console-test",
        "pesanan-3",
        "orders.created",
    ] {
        assert!(
            dom.contains(expected),
            "{expected:?} not on the rendered page:\n{dom}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert!(
        dom.contains("<span id=\"error\"></span>"),
        "the page reported an error:\n{dom}"
    );
}

/// The console's user in a real browser (credentials in the URL, as a browser sends them
/// once asked): the page and its JSON render, message contents included on a monitoring port
/// open to the network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_page_renders_for_its_user_in_a_real_browser() {
    if skip_on_reference() {
        return;
    }
    if !std::path::Path::new(CHROMIUM).exists() {
        eprintln!("skipped: {CHROMIUM} not installed (apt-get install chromium)");
        return;
    }
    let port = test_harness::free_port();
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(format!(
            "http: \"0.0.0.0:{port}\"\nconsole {{ user: admin, password: s3cret }}\n"
        )),
        ..ServerOptions::default()
    });
    let _client = populate(&server).await;
    assert_renders(&format!(
        "http://admin:s3cret@127.0.0.1:{port}/console#view=%24G/ORDERS"
    ))
    .await;
}

/// Headless Chromium dumping the DOM once the page's scripts ran (virtual time lets its
/// fetches and first refresh complete), with the flags that keep it off the network.
fn browser(profile: &std::path::Path, url: &str) -> Command {
    let mut command = Command::new(CHROMIUM);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url);
    command
}

/// `curl` (a real HTTP client) GETs `path` on the monitoring `port`, as `user` when given:
/// the status and the whole answer (head and body).
fn curl(port: u16, path: &str, user: Option<&str>) -> (u16, String) {
    let mut command = Command::new("curl");
    command.args(["-s", "-i", "--max-time", "10"]);
    if let Some(user) = user {
        command.args(["-u", user]);
    }
    let output = command
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("{path}: no HTTP answer: {text:?}"));
    (status, text)
}

/// With `console { user, password }` the console's page and JSON need those credentials
/// (401 with a basic-authentication challenge otherwise), its user sees message contents even
/// on a monitoring port open to the network, nats-server's endpoints stay open, and a reloaded
/// password replaces the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_user_guards_the_console_alone() {
    if skip_on_reference() {
        return;
    }
    if !std::path::Path::new("/usr/bin/curl").exists() {
        eprintln!("skipped: no curl");
        return;
    }
    let port = test_harness::free_port();
    let hashed = bcrypt::hash("s3cret", 4).expect("bcrypt");
    let config = |password: &str| {
        format!("http: \"0.0.0.0:{port}\"\nconsole {{ user: admin, password: \"{password}\" }}\n")
    };
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(config(&hashed)),
        ..ServerOptions::default()
    });
    let _client = populate(&server).await;
    let messages = "/console/messages?account=%24G&stream=ORDERS";
    for path in ["/console", "/console/data", messages] {
        for user in [None, Some("admin:wrong"), Some("other:s3cret")] {
            let (status, text) = curl(port, path, user);
            assert_eq!(status, 401, "{path} as {user:?}: {text}");
            assert!(
                text.contains("WWW-Authenticate: Basic realm=\"rnats console\"")
                    || text.contains("www-authenticate: Basic realm=\"rnats console\""),
                "{text}"
            );
            assert!(
                !text.contains("ORDERS") && !text.contains("pesanan"),
                "{text}"
            );
        }
    }
    let (status, page) = curl(port, "/console", Some("admin:s3cret"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<html"), "{page}");
    let (status, data) = curl(port, "/console/data", Some("admin:s3cret"));
    assert_eq!(status, 200, "{data}");
    assert!(
        data.contains("\"ORDERS\"") && data.contains("\"READER\""),
        "{data}"
    );
    let (status, shown) = curl(port, messages, Some("admin:s3cret"));
    assert_eq!(status, 200, "{shown}");
    assert!(shown.contains("pesanan-3"), "{shown}");
    for path in ["/varz", "/healthz", "/jsz", "/"] {
        let (status, text) = curl(port, path, None);
        assert_eq!(status, 200, "{path}: {text}");
    }

    // A reload with a new password: the old one is refused, the new one let in.
    crate::reload::rewrite_and_hangup(&server, &config("n3w-secret"));
    crate::reload::await_log(&server, "Reloaded server configuration", 1);
    assert_eq!(curl(port, "/console/data", Some("admin:s3cret")).0, 401);
    assert_eq!(curl(port, "/console/data", Some("admin:n3w-secret")).0, 200);
}
