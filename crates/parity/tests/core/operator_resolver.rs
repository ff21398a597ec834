//! Operator mode with the full resolver (`resolver { type: full, dir, allow_delete }`): account
//! JWTs pushed at run time over `$SYS.REQ.CLAIMS.UPDATE` are stored as `<dir>/<key>.jwt`, their
//! users admitted from then on, updates applied in place, deletes expiring the account, the
//! files read again at restart; `$SYS.REQ.CLAIMS.LIST` and `$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP`
//! answer from the directory; bad input is answered as nats-server answers it. The answers are
//! compared field by field with nats-server's (the same test passes against `NATS_SERVER_BIN`).

use super::jwt_builder::{account_jwt, account_jwt_at, creds, now, sign, user_jwt, Trust};
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use test_harness::{RawClient, TestServer};

const WAIT: Duration = Duration::from_secs(10);

/// An operator, its system account preloaded, and a full resolver in `dir` (JetStream in
/// `store` when asked for).
struct Full {
    trust: Trust,
    dir: tempfile::TempDir,
    store: Option<tempfile::TempDir>,
}

impl Full {
    fn new() -> Full {
        Full {
            trust: Trust::new(),
            dir: tempfile::tempdir().expect("resolver dir"),
            store: None,
        }
    }

    fn with_jetstream() -> Full {
        Full {
            store: Some(tempfile::tempdir().expect("store dir")),
            ..Full::new()
        }
    }

    fn config(&self, allow_delete: bool) -> String {
        let system = self.trust.system.public_key();
        let jetstream = self
            .store
            .as_ref()
            .map(|store| {
                format!(
                    "jetstream {{ store_dir: \"{}\" }}\n",
                    store.path().display()
                )
            })
            .unwrap_or_default();
        format!(
            "operator: \"{}\"\nsystem_account: {system}\n\
             resolver {{ type: full, dir: \"{}\", allow_delete: {allow_delete} }}\n\
             resolver_preload {{ {system}: \"{}\" }}\n{jetstream}",
            self.trust.operator_jwt(),
            self.dir.path().display(),
            self.trust.system_jwt,
        )
    }

    fn server(&self, allow_delete: bool) -> TestServer {
        TestServer::with_config(&self.config(allow_delete))
    }

    /// Stop `server` and start it again from the same directories; `tenant`'s user connects.
    async fn restart(
        &self,
        mut server: TestServer,
        tenant: &Tenant,
    ) -> (TestServer, async_nats::Client) {
        server.stop();
        let server = self.server(false);
        let client = tenant
            .connect(&server)
            .await
            .expect("admitted after a restart");
        (server, client)
    }

    async fn system(&self, server: &TestServer) -> async_nats::Client {
        let user = nkeys::KeyPair::new_user();
        let jwt = user_jwt(&user, &self.trust.system, None, json!({}));
        connect(server, &jwt, &user).await.expect("system user")
    }
}

/// An application account and one of its users.
struct Tenant {
    account: nkeys::KeyPair,
    user: nkeys::KeyPair,
    user_jwt: String,
}

impl Tenant {
    fn new() -> Tenant {
        let account = nkeys::KeyPair::new_account();
        let user = nkeys::KeyPair::new_user();
        let user_jwt = user_jwt(&user, &account, None, json!({}));
        Tenant {
            account,
            user,
            user_jwt,
        }
    }

    fn jwt(&self, trust: &Trust, nats: Value) -> String {
        account_jwt(&self.account, &trust.operator, nats)
    }

    /// [`Tenant::jwt`] issued at `iat`: an update must be newer than the JWT it replaces.
    fn jwt_at(&self, trust: &Trust, nats: Value, iat: i64) -> String {
        account_jwt_at(&self.account, &trust.operator, nats, iat)
    }

    fn key(&self) -> String {
        self.account.public_key()
    }

    async fn connect(&self, server: &TestServer) -> Result<async_nats::Client, String> {
        connect(server, &self.user_jwt, &self.user).await
    }
}

async fn connect(
    server: &TestServer,
    jwt: &str,
    user: &nkeys::KeyPair,
) -> Result<async_nats::Client, String> {
    let options = async_nats::ConnectOptions::with_credentials(&creds(jwt, user))
        .map_err(|error| error.to_string())?;
    match tokio::time::timeout(WAIT, options.connect(server.url())).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("connect timed out".into()),
    }
}

/// A raw connection with the user's JWT and nonce signature, past its first PONG.
fn raw_user(server: &TestServer, tenant: &Tenant) -> RawClient {
    use base64::Engine;
    let mut client = RawClient::connect(server);
    let info: Value = serde_json::from_str(&client.info).expect("INFO json");
    let nonce = info["nonce"].as_str().expect("nonce").to_string();
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(tenant.user.sign(nonce.as_bytes()).expect("sign"));
    client.send(&format!(
        "CONNECT {{\"verbose\":false,\"jwt\":\"{}\",\"sig\":\"{signature}\"}}\r\nPING\r\n",
        tenant.user_jwt
    ));
    client.expect_line("PONG");
    client
}

async fn request(client: &async_nats::Client, subject: String, body: String) -> Vec<u8> {
    let reply = tokio::time::timeout(WAIT, client.request(subject, body.into()))
        .await
        .expect("reply in time")
        .expect("reply");
    reply.payload.to_vec()
}

async fn ask(client: &async_nats::Client, subject: impl Into<String>, body: String) -> Value {
    let payload = request(client, subject.into(), body).await;
    serde_json::from_slice(&payload).expect("json answer")
}

async fn push(client: &async_nats::Client, jwt: String) -> Value {
    ask(client, "$SYS.REQ.CLAIMS.UPDATE", jwt).await
}

/// `$SYS.REQ.CLAIMS.DELETE` of `accounts`, the request self-signed by `signer`.
async fn delete(
    client: &async_nats::Client,
    signer: &nkeys::KeyPair,
    accounts: &[String],
) -> Value {
    let request = sign(
        json!({"sub": signer.public_key(),
               "nats": {"accounts": accounts, "type": "generic", "version": 2}}),
        signer,
    );
    ask(client, "$SYS.REQ.CLAIMS.DELETE", request).await
}

/// The description of a refused delete request.
fn refused_delete(signer: &nkeys::KeyPair, reason: &str) -> String {
    format!(
        "delete accounts request by {} failed - {reason}",
        signer.public_key()
    )
}

fn updated(key: &str) -> Value {
    json!({"code": 200, "account": key, "message": "jwt updated"})
}

async fn assert_delivers(client: &async_nats::Client, subject: &str) {
    let mut subscription = client.subscribe(subject.to_string()).await.unwrap();
    client.flush().await.unwrap();
    client
        .publish(subject.to_string(), "hi".into())
        .await
        .unwrap();
    let message = tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("message in time")
        .expect("message");
    assert_eq!(&message.payload[..], b"hi");
}

fn stored(dir: &Path, key: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(format!("{key}.jwt"))).ok()
}

#[tokio::test]
async fn an_account_pushed_at_runtime_admits_its_users_and_survives_a_restart() {
    let full = Full::new();
    let tenant = Tenant::new();
    let server = full.server(false);
    let error = tenant
        .connect(&server)
        .await
        .expect_err("refused before the push");
    assert!(error.contains("authorization violation"), "{error}");
    let system = full.system(&server).await;
    let jwt = tenant.jwt(&full.trust, json!({}));
    let answer = push(&system, jwt.clone()).await;
    assert_eq!(answer["data"], updated(&tenant.key()), "{answer}");
    assert!(answer["server"]["id"].is_string(), "{answer}");
    assert_eq!(
        stored(full.dir.path(), &tenant.key()).as_deref(),
        Some(jwt.as_str())
    );
    let client = tenant
        .connect(&server)
        .await
        .expect("admitted after the push");
    assert_delivers(&client, "runtime.hello").await;

    let lookup = format!("$SYS.REQ.ACCOUNT.{}.CLAIMS.LOOKUP", tenant.key());
    let found = request(&system, lookup, String::new()).await;
    assert_eq!(String::from_utf8_lossy(&found), jwt);
    let unknown = format!(
        "$SYS.REQ.ACCOUNT.{}.CLAIMS.LOOKUP",
        nkeys::KeyPair::new_account().public_key()
    );
    assert!(request(&system, unknown, String::new()).await.is_empty());
    let list = ask(&system, "$SYS.REQ.CLAIMS.LIST", String::new()).await;
    let mut expected = vec![tenant.key(), full.trust.system.public_key()];
    expected.sort();
    assert_eq!(list["data"], json!(expected), "{list}");

    drop((client, system));
    let (_server, client) = full.restart(server, &tenant).await;
    assert_delivers(&client, "restart.hello").await;
}

#[tokio::test]
async fn jetstream_works_in_an_account_pushed_at_runtime() {
    let full = Full::with_jetstream();
    let tenant = Tenant::new();
    let server = full.server(false);
    let system = full.system(&server).await;
    let limits = json!({"limits": {"subs": -1, "data": -1, "payload": -1, "imports": -1,
        "exports": -1, "wildcards": true, "conn": -1, "leaf": -1,
        "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}});
    let answer = push(&system, tenant.jwt(&full.trust, limits)).await;
    assert_eq!(answer["data"], updated(&tenant.key()), "{answer}");
    let client = tenant
        .connect(&server)
        .await
        .expect("admitted after the push");
    let jetstream = async_nats::jetstream::new(client.clone());
    tokio::time::timeout(
        WAIT,
        jetstream.create_stream(async_nats::jetstream::stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        }),
    )
    .await
    .expect("stream created in time")
    .expect("stream");
    let ack = tokio::time::timeout(WAIT, async {
        jetstream.publish("orders.one", "1".into()).await?.await
    })
    .await
    .expect("ack in time")
    .expect("ack");
    assert_eq!((ack.stream.as_str(), ack.sequence), ("ORDERS", 1));

    drop((client, system));
    let (_server, client) = full.restart(server, &tenant).await;
    let jetstream = async_nats::jetstream::new(client);
    let mut stream = tokio::time::timeout(WAIT, jetstream.get_stream("ORDERS"))
        .await
        .expect("stream info in time")
        .expect("stream kept across the restart");
    let info = stream.info().await.expect("info");
    assert_eq!(info.state.messages, 1);
}

/// An account JWT's `nats` with JetStream limits: `streams` streams of at most `consumers`
/// consumers each (each `max_ack_pending` at most `consumers * 10`), `storage` bytes of file
/// storage, memory storage unlimited.
fn jetstream_limits(streams: i64, consumers: i64, storage: i64) -> Value {
    json!({"limits": {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
        "wildcards": true, "conn": -1, "leaf": -1,
        "mem_storage": -1, "disk_storage": storage, "streams": streams, "consumer": consumers,
        "max_ack_pending": consumers * 10}})
}

/// A durable `name` on `stream`, as `$JS.API.CONSUMER.CREATE` answers it.
async fn create_consumer(client: &async_nats::Client, stream: &str, name: &str) -> Value {
    let body = json!({"stream_name": stream,
                      "config": {"durable_name": name, "ack_policy": "explicit"}});
    ask(
        client,
        format!("$JS.API.CONSUMER.CREATE.{stream}.{name}"),
        body.to_string(),
    )
    .await
}

/// Publish 512-byte messages to `subject` until one is refused (at most 64): the answer to it.
async fn publish_until_refused(client: &async_nats::Client, subject: &str) -> Value {
    for _ in 0..64 {
        let answer = ask(client, subject.to_string(), "x".repeat(512)).await;
        if answer.get("error").is_some() {
            return answer;
        }
    }
    panic!("64 publishes of 512 bytes stored");
}

/// `name`'s `$JS.API.STREAM.CREATE` answered in `client`'s account.
async fn create_stream(client: &async_nats::Client, name: &str) -> Value {
    let config = json!({"name": name, "subjects": [format!("{name}.>")], "storage": "file"});
    ask(
        client,
        format!("$JS.API.STREAM.CREATE.{name}"),
        config.to_string(),
    )
    .await
}

async fn account_info(client: &async_nats::Client) -> Value {
    ask(client, "$JS.API.INFO", String::new()).await
}

/// A full resolver with JetStream, a tenant not pushed yet and a system user.
async fn jetstream_tenant() -> (Full, Tenant, TestServer, async_nats::Client) {
    let full = Full::with_jetstream();
    let server = full.server(false);
    let system = full.system(&server).await;
    (full, Tenant::new(), server, system)
}

#[tokio::test]
async fn a_jetstream_limits_update_applies_without_a_restart() {
    let (full, tenant, server, system) = jetstream_tenant().await;
    let issued = now();
    let first = tenant.jwt_at(&full.trust, jetstream_limits(1, 1, 4096), issued);
    assert_eq!(push(&system, first).await["data"], updated(&tenant.key()));
    let client = tenant.connect(&server).await.expect("tenant user");
    let info = account_info(&client).await;
    assert_eq!(info["limits"]["max_streams"], 1, "{info}");
    assert_eq!(info["limits"]["max_consumers"], 1, "{info}");
    assert_eq!(info["limits"]["max_ack_pending"], 10, "{info}");
    assert_eq!(info["limits"]["max_storage"], 4096, "{info}");
    let created = create_stream(&client, "ONE").await;
    assert_eq!(created["config"]["name"], "ONE", "{created}");
    let refused = create_stream(&client, "TWO").await;
    assert_eq!(
        refused["error"],
        json!({"code": 400, "err_code": 10027, "description": "maximum number of streams reached"}),
        "{refused}"
    );
    let created = create_consumer(&client, "ONE", "C1").await;
    assert_eq!(created["config"]["max_ack_pending"], 10, "{created}");
    let refused = create_consumer(&client, "ONE", "C2").await;
    assert_eq!(refused["error"]["err_code"], 10026, "{refused}");
    let refused = publish_until_refused(&client, "ONE.fill").await;
    assert_eq!(
        refused["error"],
        json!({"code": 400, "err_code": 10002,
               "description": "resource limits exceeded for account"}),
        "{refused}"
    );

    // The same account, newer, with room for two streams of two consumers and a megabyte.
    let second = tenant.jwt_at(&full.trust, jetstream_limits(2, 2, 1 << 20), issued + 1);
    assert_eq!(push(&system, second).await["data"], updated(&tenant.key()));
    let info = account_info(&client).await;
    assert_eq!(info["limits"]["max_streams"], 2, "{info}");
    assert_eq!(info["limits"]["max_consumers"], 2, "{info}");
    assert_eq!(info["limits"]["max_ack_pending"], 20, "{info}");
    assert_eq!(info["limits"]["max_storage"], 1 << 20, "{info}");
    assert_eq!(info["streams"], 1, "{info}");
    let created = create_stream(&client, "TWO").await;
    assert_eq!(created["config"]["name"], "TWO", "{created}");
    let refused = create_stream(&client, "THREE").await;
    assert_eq!(refused["error"]["err_code"], 10027, "{refused}");
    let created = create_consumer(&client, "ONE", "C2").await;
    assert_eq!(created["config"]["max_ack_pending"], 20, "{created}");
    let ack = ask(&client, "ONE.more", "x".repeat(512)).await;
    assert_eq!(ack["stream"], "ONE", "{ack}");
}

#[tokio::test]
async fn a_tiered_limits_update_applies_without_a_restart() {
    let (full, tenant, server, system) = jetstream_tenant().await;
    let tiered = |streams: i64| {
        // Tiers only: the flat storage limits absent (0), as the JWT library requires.
        let mut nats = jetstream_limits(-1, -1, 0);
        nats["limits"]["mem_storage"] = json!(0);
        nats["limits"]["tiered_limits"] = json!({"R1": {"mem_storage": -1,
            "disk_storage": -1, "streams": streams, "consumer": -1}});
        nats
    };
    let issued = now();
    let first = tenant.jwt_at(&full.trust, tiered(1), issued);
    assert_eq!(push(&system, first).await["data"], updated(&tenant.key()));
    let client = tenant.connect(&server).await.expect("tenant user");
    let created = create_stream(&client, "ONE").await;
    assert_eq!(created["config"]["name"], "ONE", "{created}");
    let refused = create_stream(&client, "TWO").await;
    assert_eq!(refused["error"]["err_code"], 10027, "{refused}");
    let info = account_info(&client).await;
    assert_eq!(info["tiers"]["R1"]["limits"]["max_streams"], 1, "{info}");

    let second = tenant.jwt_at(&full.trust, tiered(2), issued + 1);
    assert_eq!(push(&system, second).await["data"], updated(&tenant.key()));
    let info = account_info(&client).await;
    assert_eq!(info["tiers"]["R1"]["limits"]["max_streams"], 2, "{info}");
    assert_eq!(info["tiers"]["R1"]["streams"], 1, "{info}");
    let created = create_stream(&client, "TWO").await;
    assert_eq!(created["config"]["name"], "TWO", "{created}");
}

#[tokio::test]
async fn an_update_enables_and_disables_jetstream_in_an_account() {
    let (full, tenant, server, system) = jetstream_tenant().await;
    let issued = now();
    let without = tenant.jwt_at(&full.trust, json!({}), issued);
    assert_eq!(push(&system, without).await["data"], updated(&tenant.key()));
    let client = tenant.connect(&server).await.expect("tenant user");
    let info = account_info(&client).await;
    assert_eq!(info["error"]["err_code"], 10039, "{info}");
    let refused = create_stream(&client, "ORDERS").await;
    assert_eq!(refused["error"]["err_code"], 10039, "{refused}");

    let with = tenant.jwt_at(&full.trust, jetstream_limits(-1, -1, -1), issued + 1);
    assert_eq!(push(&system, with).await["data"], updated(&tenant.key()));
    let info = account_info(&client).await;
    assert_eq!(info["limits"]["max_streams"], -1, "{info}");
    let created = create_stream(&client, "ORDERS").await;
    assert_eq!(created["config"]["name"], "ORDERS", "{created}");
    let jetstream = async_nats::jetstream::new(client.clone());
    let ack = tokio::time::timeout(WAIT, async {
        jetstream.publish("ORDERS.one", "1".into()).await?.await
    })
    .await
    .expect("ack in time")
    .expect("ack");
    assert_eq!((ack.stream.as_str(), ack.sequence), ("ORDERS", 1));
    let off = tenant.jwt_at(&full.trust, json!({}), issued + 2);
    assert_eq!(push(&system, off).await["data"], updated(&tenant.key()));
    // Disabled again: the stream stops (its files stay), `$JS.API` answers 10039 and a
    // publish to the stream's subjects finds no responder.
    let info = account_info(&client).await;
    assert_eq!(info["error"]["err_code"], 10039, "{info}");
    let refused = create_stream(&client, "OTHER").await;
    assert_eq!(refused["error"]["err_code"], 10039, "{refused}");
    let refused = ask(&client, "$JS.API.STREAM.INFO.ORDERS", String::new()).await;
    assert_eq!(refused["error"]["err_code"], 10039, "{refused}");
    let publish = tokio::time::timeout(WAIT, client.request("ORDERS.two", "2".into()))
        .await
        .expect("answer in time");
    assert!(
        matches!(&publish, Err(error) if error.kind() == async_nats::RequestErrorKind::NoResponders),
        "{publish:?}"
    );
    // Enabled once more: the stream is back with what it stored.
    let again = tenant.jwt_at(&full.trust, jetstream_limits(-1, -1, -1), issued + 3);
    assert_eq!(push(&system, again).await["data"], updated(&tenant.key()));
    let info = ask(&client, "$JS.API.STREAM.INFO.ORDERS", String::new()).await;
    assert_eq!(info["state"]["messages"], 1, "{info}");
}

#[tokio::test]
async fn an_update_removes_an_export_in_place() {
    let full = Full::new();
    let server = full.server(false);
    let system = full.system(&server).await;
    let (exporter, importer) = (Tenant::new(), Tenant::new());
    let export = json!({"exports": [{"name": "feed", "subject": "feed.>", "type": "stream"}]});
    let exporting = exporter.jwt(&full.trust, export);
    let import = json!({"imports": [{"name": "feed", "subject": "feed.>", "account": exporter.key(),
                                     "type": "stream"}]});
    assert_eq!(
        push(&system, exporting).await["data"],
        updated(&exporter.key())
    );
    let importing = importer.jwt(&full.trust, import);
    assert_eq!(
        push(&system, importing).await["data"],
        updated(&importer.key())
    );
    let publisher = exporter.connect(&server).await.expect("exporter user");
    let mut reader = raw_user(&server, &importer);
    reader.send("SUB feed.> 1\r\nPING\r\n");
    reader.expect_line("PONG");
    publisher.publish("feed.one", "1".into()).await.unwrap();
    publisher.flush().await.unwrap();
    reader.expect_line("MSG feed.one 1 1");
    reader.expect_line("1");

    // The exporter's JWT no longer exports the stream: nothing more reaches the importer,
    // whose connection stays up. The JWT must be newer (its iat a second later).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let plain = exporter.jwt(&full.trust, json!({}));
    assert_eq!(push(&system, plain).await["data"], updated(&exporter.key()));
    publisher.publish("feed.two", "2".into()).await.unwrap();
    publisher.flush().await.unwrap();
    reader.send("PING\r\n");
    reader.expect_line("PONG");
}

#[tokio::test]
async fn a_delete_expires_the_account_and_renames_its_file() {
    let full = Full::new();
    let tenant = Tenant::new();
    let server = full.server(true);
    let system = full.system(&server).await;
    assert_eq!(
        push(&system, tenant.jwt(&full.trust, json!({}))).await["data"],
        updated(&tenant.key())
    );
    let mut victim = raw_user(&server, &tenant);
    let operator = &full.trust.operator;
    let answer = delete(&system, operator, &[tenant.key()]).await;
    assert_eq!(
        answer["data"],
        json!({"code": 200, "message": "deleted 1 accounts"}),
        "{answer}"
    );
    let rest = victim.read_to_close().expect("the account's user closed");
    assert!(
        rest.contains("-ERR 'Account Authentication Expired'"),
        "{rest:?}"
    );
    assert!(stored(full.dir.path(), &tenant.key()).is_none());
    assert!(full
        .dir
        .path()
        .join(format!("{}.jwt.deleted", tenant.key()))
        .exists());
    let error = tenant
        .connect(&server)
        .await
        .expect_err("refused after the delete");
    assert!(error.contains("authorization violation"), "{error}");

    // The system account may not be deleted, and only a trusted operator may ask.
    let refused = delete(&system, operator, &[full.trust.system.public_key()]).await;
    assert_eq!(
        refused["error"],
        json!({"code": 500,
               "description": refused_delete(operator, "not allowed to delete system account")}),
        "{refused}"
    );
    let stranger = nkeys::KeyPair::new_operator();
    let refused = delete(&system, &stranger, &[tenant.key()]).await;
    assert_eq!(
        refused["error"]["description"],
        refused_delete(&stranger, "not trusted"),
        "{refused}"
    );
    let refused = delete(&system, operator, &["not-a-key".to_string()]).await;
    assert_eq!(
        refused["error"]["description"],
        refused_delete(operator, "malformed request"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_delete_needs_allow_delete() {
    let full = Full::new();
    let tenant = Tenant::new();
    let server = full.server(false);
    let system = full.system(&server).await;
    push(&system, tenant.jwt(&full.trust, json!({}))).await;
    let operator = &full.trust.operator;
    let refused = delete(&system, operator, &[tenant.key()]).await;
    assert_eq!(
        refused["error"]["description"],
        refused_delete(operator, "delete must be enabled in server config"),
        "{refused}"
    );
    tenant.connect(&server).await.expect("still admitted");
}

#[tokio::test]
async fn bad_claims_are_answered_with_errors_and_disturb_nothing() {
    let full = Full::new();
    let tenant = Tenant::new();
    let server = full.server(false);
    let system = full.system(&server).await;
    push(&system, tenant.jwt(&full.trust, json!({}))).await;
    let client = tenant.connect(&server).await.expect("tenant user");

    let garbage = push(&system, "garbage".into()).await;
    assert_eq!(garbage["error"]["code"], 500, "{garbage}");
    assert_eq!(
        garbage["error"],
        json!({"code": 500, "account": "n/a",
               "description": "jwt update resulted in error - expected 3 chunks"}),
        "{garbage}"
    );

    let stranger = Tenant::new();
    let other_operator = nkeys::KeyPair::new_operator();
    let foreign = account_jwt(&stranger.account, &other_operator, json!({}));
    // nats-server stores a JWT it cannot trust and answers as for any other; nothing uses it.
    let answer = push(&system, foreign).await;
    assert_eq!(answer["data"], updated(&stranger.key()), "{answer}");
    let unknown_signer = account_jwt(&stranger.account, &nkeys::KeyPair::new_account(), json!({}));
    let answer = push(&system, unknown_signer).await;
    assert_eq!(answer["data"], updated(&stranger.key()), "{answer}");
    let error = stranger
        .connect(&server)
        .await
        .expect_err("stranger refused");
    assert!(error.contains("authorization violation"), "{error}");

    let mismatched = format!("$SYS.REQ.ACCOUNT.{}.CLAIMS.UPDATE", tenant.key());
    let answer = ask(&system, mismatched, stranger.jwt(&full.trust, json!({}))).await;
    assert_eq!(
        answer["error"],
        json!({"code": 500, "account": tenant.key(),
               "description": "jwt update resulted in error - subject does not match jwt content"}),
        "{answer}"
    );
    assert_delivers(&client, "still.here").await;
}
