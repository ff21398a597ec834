//! Full account resolvers in a cluster: an account JWT pushed to one server over
//! `$SYS.REQ.CLAIMS.UPDATE` reaches every server's resolver (the request crosses the routes to
//! each server's own subscription, as between nats-servers), so the account's users connect
//! anywhere and its messages cross the routes in its own account. Each node keeps its own
//! directory (`<cluster dir>/<node>`). A server that was down during the push learns the JWT
//! from its peers' packs (`$SYS.REQ.CLAIMS.PACK`, every `interval`). A cache resolver fetches an
//! account it does not hold from the full resolvers (`$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP`)
//! when one of its users connects, and keeps it in its directory.

use crate::jwt_builder::{account_jwt, creds, user_jwt, Trust};
use crate::per_composition;
use crate::support::{interest_barrier, next_within, Composition};
use serde_json::json;
use std::time::{Duration, Instant};
use test_harness::cluster::{Cluster, Topology};

per_composition!(
    a_pushed_account_reaches_every_full_resolver,
    a_server_down_during_a_push_learns_it_from_its_peers,
    a_cache_resolver_fetches_an_account_from_a_full_one,
    interest_in_an_account_a_server_lacks_is_kept_until_it_arrives,
    an_account_one_node_never_saw_carries_messages_both_ways,
    a_cache_resolver_keeps_its_limit_of_accounts,
    a_cache_resolver_counts_a_first_use_after_a_restart,
    a_cache_resolver_removes_an_account_after_its_ttl
);

const WAIT: Duration = Duration::from_secs(10);

/// Wait until every node lists the others in `/routez` (the harness's mesh probe connects
/// anonymously, which operator mode refuses).
pub(crate) fn wait_for_routes(cluster: &Cluster) {
    let deadline = Instant::now() + WAIT;
    for index in 0..cluster.len() {
        loop {
            let peers = cluster.route_peers(index).unwrap_or_default();
            if peers.len() + 1 >= cluster.len() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {index} routes to {peers:?} only\n{}",
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Connect with `jwt` to node `index`; `Err` while the node refuses the user.
pub(crate) async fn connect(
    cluster: &Cluster,
    index: usize,
    jwt: &str,
    user: &nkeys::KeyPair,
) -> Result<async_nats::Client, String> {
    let options = async_nats::ConnectOptions::with_credentials(&creds(jwt, user))
        .map_err(|error| error.to_string())?
        .ignore_discovered_servers();
    match tokio::time::timeout(WAIT, options.connect(cluster.url(index))).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("connect timed out".into()),
    }
}

/// Connect, retrying while the node has not taken the account yet (bounded).
pub(crate) async fn connect_when_known(
    cluster: &Cluster,
    index: usize,
    jwt: &str,
    user: &nkeys::KeyPair,
) -> async_nats::Client {
    let deadline = Instant::now() + WAIT;
    loop {
        match connect(cluster, index, jwt, user).await {
            Ok(client) => return client,
            Err(error) if Instant::now() < deadline => {
                assert!(error.contains("authorization violation"), "{error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("node {index} never admitted the user: {error}"),
        }
    }
}

/// The config of a full resolver per node (`<directory>/<node>`, packs compared every second)
/// trusting `trust`'s operator, its system account preloaded.
pub(crate) fn full_resolvers(trust: &Trust, directory: &tempfile::TempDir) -> String {
    let system = trust.system.public_key();
    format!(
        "operator: \"{}\"\nsystem_account: {system}\n\
         resolver {{ type: full, dir: \"{}/{{node}}\", interval: \"1s\" }}\n\
         resolver_preload {{ {system}: \"{}\" }}\n",
        trust.operator_jwt(),
        directory.path().display(),
        trust.system_jwt,
    )
}

/// A cluster of full resolvers (each its own directory, packs compared every second) with
/// the operator's system account preloaded.
fn start(composition: Composition, trust: &Trust, directory: &tempfile::TempDir) -> Cluster {
    let mut options = composition.options(Topology::FullMesh);
    options.extra_config = full_resolvers(trust, directory);
    let cluster = Cluster::launch(options);
    wait_for_routes(&cluster);
    cluster
}

/// Push `tenant`'s account JWT through node `index` and check the answer.
async fn push(cluster: &Cluster, index: usize, trust: &Trust, tenant: &nkeys::KeyPair) {
    let reply = push_answer(cluster, index, trust, tenant).await;
    assert_eq!(reply["data"]["message"], "jwt updated", "{reply}");
}

/// Push `tenant`'s account JWT through node `index`: the first answer.
async fn push_answer(
    cluster: &Cluster,
    index: usize,
    trust: &Trust,
    tenant: &nkeys::KeyPair,
) -> serde_json::Value {
    let jwt = account_jwt(tenant, &trust.operator, json!({}));
    push_jwt(cluster, index, trust, jwt).await
}

/// Push an account JWT through node `index` (as a user of the system account): the first
/// answer.
pub(crate) async fn push_jwt(
    cluster: &Cluster,
    index: usize,
    trust: &Trust,
    jwt: String,
) -> serde_json::Value {
    let operator_user = nkeys::KeyPair::new_user();
    let operator_jwt = user_jwt(&operator_user, &trust.system, None, json!({}));
    let admin = connect(cluster, index, &operator_jwt, &operator_user)
        .await
        .expect("system user");
    let reply = tokio::time::timeout(WAIT, admin.request("$SYS.REQ.CLAIMS.UPDATE", jwt.into()))
        .await
        .expect("reply in time")
        .expect("reply");
    serde_json::from_slice(&reply.payload).expect("json")
}

/// A full resolver (node 0) and two cache resolvers that hold no account at start.
fn start_cached(composition: Composition, trust: &Trust, directory: &tempfile::TempDir) -> Cluster {
    start_cached_with(composition, trust, directory, "")
}

/// [`start_cached`] with `cache` added to the cache resolvers' blocks (`limit`, `ttl`).
fn start_cached_with(
    composition: Composition,
    trust: &Trust,
    directory: &tempfile::TempDir,
    cache: &str,
) -> Cluster {
    let system = trust.system.public_key();
    let mut options = composition.options(Topology::FullMesh);
    options.extra_config = format!(
        "operator: \"{}\"\nsystem_account: {system}\n\
         resolver_preload {{ {system}: \"{}\" }}\n",
        trust.operator_jwt(),
        trust.system_jwt,
    );
    options.node_config = ["full", "cache", "cache"]
        .iter()
        .map(|kind| {
            let extra = if *kind == "cache" { cache } else { "" };
            format!(
                "resolver {{ type: {kind}, dir: \"{}/{{node}}\", timeout: \"1s\"\n{extra}\n}}\n",
                directory.path().display()
            )
        })
        .collect();
    let cluster = Cluster::launch(options);
    wait_for_routes(&cluster);
    cluster
}

/// The accounts whose JWT files node `index` keeps in its resolver directory, sorted.
fn cached_keys(cluster: &Cluster, directory: &tempfile::TempDir, index: usize) -> Vec<String> {
    let node = directory.path().join(&cluster.nodes()[index].name);
    let mut keys: Vec<String> = std::fs::read_dir(node)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| {
                    let name = entry.file_name().into_string().ok()?;
                    name.strip_suffix(".jwt").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    keys.sort();
    keys
}

/// A user of a new account pushed to node 0, connected to node `index` (which fetches it).
async fn cached_tenant(
    cluster: &Cluster,
    trust: &Trust,
    index: usize,
) -> (nkeys::KeyPair, async_nats::Client) {
    let tenant = nkeys::KeyPair::new_account();
    push_cached(cluster, trust, &tenant).await;
    let user = nkeys::KeyPair::new_user();
    let user_jwt = user_jwt(&user, &tenant, None, json!({}));
    let client = connect_when_known(cluster, index, &user_jwt, &user).await;
    (tenant, client)
}

/// `limit: 2`: a third account fetched by the cache resolver takes the place of the one
/// stored first, whose file goes (as nats-server's LRU eviction); the accounts stay usable.
async fn a_cache_resolver_keeps_its_limit_of_accounts(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start_cached_with(composition, &trust, &directory, "limit: 2");
    let mut clients = Vec::new();
    let mut keys = Vec::new();
    for _ in 0..3 {
        let (tenant, client) = cached_tenant(&cluster, &trust, 2).await;
        keys.push(tenant.public_key());
        clients.push(client);
    }
    let mut expected = vec![keys[1].clone(), keys[2].clone()];
    expected.sort();
    assert_eq!(cached_keys(&cluster, &directory, 2), expected);
    for client in &clients {
        client.flush().await.expect("still connected");
    }
}

/// `limit: 3` across a restart: the files found at start (the system account's and two
/// tenants') are tracked in key order, the preloaded system account's store makes it the most
/// recently used, and the first use of a tenant since (its user connecting reads its file in
/// nats-server) makes that tenant the most recently used, so a third tenant fetched then takes
/// the place of the other one. Without the use counted, the lower key would go.
async fn a_cache_resolver_counts_a_first_use_after_a_restart(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let mut cluster = start_cached_with(composition, &trust, &directory, "limit: 3");
    let mut tenants = Vec::new();
    for _ in 0..2 {
        let tenant = nkeys::KeyPair::new_account();
        push_cached(&cluster, &trust, &tenant).await;
        let user = nkeys::KeyPair::new_user();
        let jwt = user_jwt(&user, &tenant, None, json!({}));
        connect_when_known(&cluster, 2, &jwt, &user).await;
        tenants.push((tenant.public_key(), jwt, user));
    }
    tenants.sort_by(|left, right| left.0.cmp(&right.0));
    let (first, jwt, user) = &tenants[0];
    cluster.restart(2);
    wait_for_routes(&cluster);
    connect_when_known(&cluster, 2, jwt, user).await;
    let (third, _client) = cached_tenant(&cluster, &trust, 2).await;
    let mut expected = vec![trust.system.public_key(), first.clone(), third.public_key()];
    expected.sort();
    assert_eq!(cached_keys(&cluster, &directory, 2), expected);
}

/// `ttl: 1s`: the cache resolver removes a fetched account's file once it expired; the
/// account's connected user stays.
async fn a_cache_resolver_removes_an_account_after_its_ttl(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start_cached_with(composition, &trust, &directory, "ttl: \"1s\"");
    let (tenant, client) = cached_tenant(&cluster, &trust, 2).await;
    let key = tenant.public_key();
    let cached = cached_keys(&cluster, &directory, 2);
    assert!(cached.contains(&key), "{cached:?}");
    let deadline = Instant::now() + WAIT;
    while cached_keys(&cluster, &directory, 2).contains(&key) {
        assert!(
            Instant::now() < deadline,
            "the cached account never expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.flush().await.expect("still connected");
}

/// Push `tenant`'s account JWT through node 0 of [`start_cached`]'s cluster.
async fn push_cached(cluster: &Cluster, trust: &Trust, tenant: &nkeys::KeyPair) {
    let answer = push_answer(cluster, 0, trust, tenant).await;
    let message = answer["data"]["message"].as_str().unwrap_or_default();
    // Every resolver answers; the cache resolvers skip an account they do not hold.
    assert!(
        ["jwt updated", "jwt update cache skipped"].contains(&message),
        "{answer}"
    );
}

/// A subscriber on node 1 in an account node 2 has never seen: node 2 keeps the interest its
/// `RS+` announced (and fetches the account), so a publisher arriving on node 2 later reaches
/// the subscriber. Before, node 2 dropped that `RS+` and the messages went nowhere.
async fn interest_in_an_account_a_server_lacks_is_kept_until_it_arrives(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start_cached(composition, &trust, &directory);
    let (user_jwt, user) = pushed_tenant_user(&cluster, &trust).await;
    let subscriber = connect_when_known(&cluster, 1, &user_jwt, &user).await;
    let mut orders = subscriber.subscribe("orders").await.expect("subscribe");
    subscriber.flush().await.expect("flush");

    let publisher = connect_when_known(&cluster, 2, &user_jwt, &user).await;
    publish_until_received(
        &cluster,
        &publisher,
        "orders",
        &mut orders,
        "node 2 to node 1",
    )
    .await;
}

/// A new account pushed to node 0 of [`start_cached`]'s cluster: a user JWT of it and the key.
async fn pushed_tenant_user(cluster: &Cluster, trust: &Trust) -> (String, nkeys::KeyPair) {
    let tenant = nkeys::KeyPair::new_account();
    push_cached(cluster, trust, &tenant).await;
    let user = nkeys::KeyPair::new_user();
    (user_jwt(&user, &tenant, None, json!({})), user)
}

/// Publishes `subject` (its name the payload) through `publisher` until `subscriber` (on
/// another node) receives it, within [`WAIT`]; `what` names the direction for the failure.
async fn publish_until_received(
    cluster: &Cluster,
    publisher: &async_nats::Client,
    subject: &str,
    subscriber: &mut async_nats::Subscriber,
    what: &str,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        publisher
            .publish(subject.to_string(), subject.to_string().into())
            .await
            .expect("publish");
        publisher.flush().await.expect("flush");
        if let Some(message) = next_within(subscriber, Duration::from_millis(100)).await {
            assert_eq!(&message.payload[..], subject.as_bytes());
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: nothing arrived\n{}",
            cluster.logs()
        );
    }
}

/// An account only node 2 has seen: its user there subscribes (a plain and a queue
/// subscription) while node 1 has never held the account, whose `RS+` lines reach node 1 in
/// an account it lacks (nats-server looks the account up through its resolver and applies
/// the interest). A user of the account then connects to node 1: what it publishes reaches
/// both of node 2's subscriptions, and what node 2's user publishes reaches node 1's
/// subscriber.
async fn an_account_one_node_never_saw_carries_messages_both_ways(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start_cached(composition, &trust, &directory);
    let (user_jwt, user) = pushed_tenant_user(&cluster, &trust).await;
    let second = connect_when_known(&cluster, 2, &user_jwt, &user).await;
    let mut up = second.subscribe("up").await.expect("subscribe");
    let mut work = second
        .queue_subscribe("work", "workers".to_string())
        .await
        .expect("queue subscribe");
    second.flush().await.expect("flush");

    let first = connect_when_known(&cluster, 1, &user_jwt, &user).await;
    let mut down = first.subscribe("down").await.expect("subscribe");
    first.flush().await.expect("flush");
    publish_until_received(&cluster, &first, "up", &mut up, "node 1 to node 2").await;
    publish_until_received(
        &cluster,
        &first,
        "work",
        &mut work,
        "node 1 to node 2's queue",
    )
    .await;
    publish_until_received(&cluster, &second, "down", &mut down, "node 2 to node 1").await;
}

async fn a_cache_resolver_fetches_an_account_from_a_full_one(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    // Node 0 keeps every account; nodes 1 and 2 cache what they fetch.
    let cluster = start_cached(composition, &trust, &directory);
    let tenant = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let user_jwt = user_jwt(&user, &tenant, None, json!({}));
    let error = connect(&cluster, 1, &user_jwt, &user)
        .await
        .expect_err("refused while no resolver has the account");
    assert!(error.contains("authorization violation"), "{error}");

    push_cached(&cluster, &trust, &tenant).await;
    let client = connect_when_known(&cluster, 1, &user_jwt, &user).await;
    client.flush().await.expect("flush");
    let cached = directory
        .path()
        .join(&cluster.nodes()[1].name)
        .join(format!("{}.jwt", tenant.public_key()));
    assert!(cached.exists(), "{} not cached", cached.display());
}

async fn a_server_down_during_a_push_learns_it_from_its_peers(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let mut cluster = start(composition, &trust, &directory);
    cluster.kill9(2);
    let tenant = nkeys::KeyPair::new_account();
    push(&cluster, 0, &trust, &tenant).await;
    cluster.restart(2);
    let user = nkeys::KeyPair::new_user();
    let user_jwt = user_jwt(&user, &tenant, None, json!({}));
    connect_when_known(&cluster, 2, &user_jwt, &user).await;
}

async fn a_pushed_account_reaches_every_full_resolver(composition: Composition) {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start(composition, &trust, &directory);
    let tenant = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let user_jwt = user_jwt(&user, &tenant, None, json!({}));
    let error = connect(&cluster, 2, &user_jwt, &user)
        .await
        .expect_err("refused before the push");
    assert!(error.contains("authorization violation"), "{error}");
    push(&cluster, 0, &trust, &tenant).await;

    let subscriber = connect_when_known(&cluster, 1, &user_jwt, &user).await;
    let publisher = connect_when_known(&cluster, 2, &user_jwt, &user).await;
    let mut subscription = subscriber
        .subscribe("tenant.news")
        .await
        .expect("subscribe");
    interest_barrier(&subscriber, &publisher).await;
    publisher
        .publish("tenant.news", "hello".into())
        .await
        .expect("publish");
    let message = next_within(&mut subscription, WAIT)
        .await
        .expect("the tenant's message crossed the routes");
    assert_eq!(&message.payload[..], b"hello");
}

/// A routed message (`RMSG`) in an account a cache resolver has not loaded: the server looks
/// the account up as nats-server's `LookupAccount` does, asking the cluster
/// (`$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP`, here answered by a fake peer on its route port),
/// and keeps the JWT. Before, ours dropped the message and never asked.
#[test]
fn a_routed_message_in_an_unknown_account_fetches_it() {
    use test_harness::{free_port, RawClient, ServerOptions, TestServer};
    let trust = Trust::new();
    let system = trust.system.public_key();
    let directory = tempfile::tempdir().expect("resolver dir");
    let route_port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "operator: \"{}\"\nsystem_account: {system}\n\
             resolver_preload {{ {system}: \"{}\" }}\n\
             resolver {{ type: cache, dir: \"{}\", timeout: \"2s\" }}\n\
             cluster {{ name: C1, listen: \"127.0.0.1:{route_port}\" }}\n",
            trust.operator_jwt(),
            trust.system_jwt,
            directory.path().display()
        )),
        ..Default::default()
    });
    let tenant = nkeys::KeyPair::new_account();
    let key = tenant.public_key();
    let jwt = account_jwt(&tenant, &trust.operator, json!({}));

    let fake_route = |id: &str| {
        let mut route = RawClient::connect_addr(&format!("127.0.0.1:{route_port}"));
        route.send(&format!(
            "CONNECT {{\"echo\":false,\"verbose\":false,\"pedantic\":false,\
             \"tls_required\":false,\"headers\":true,\"name\":\"{id}\",\"cluster\":\"C1\"}}\r\n\
             INFO {{\"server_id\":\"{id}\",\"server_name\":\"{id}\",\"version\":\"2.9.0\",\
             \"proto\":1,\"host\":\"127.0.0.1\",\"port\":1,\"headers\":true,\"cluster\":\"C1\"}}\r\n\
             PING\r\n"
        ));
        // The server's own interest and PINGs come first; its PONG says it took ours.
        while route.read_line().expect("route up") != "PONG" {}
        route
    };
    // nats-server's route reader waits for the lookup's answer, which must come on another
    // route (as from another server).
    let mut answering = fake_route("NFAKEANSWER");
    let mut route = fake_route("NFAKELOOKUP");
    route.send(&format!(
        "RS+ {system} $SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP\r\nPING\r\n"
    ));
    // The server's own interest and PINGs come first; its PONG says our RS+ is in.
    while route.read_line().expect("route up") != "PONG" {}
    route.send(&format!("RMSG {key} orders 2\r\nhi\r\n"));

    let lookup = format!("$SYS.REQ.ACCOUNT.{key}.CLAIMS.LOOKUP");
    let deadline = Instant::now() + WAIT;
    let reply = loop {
        assert!(
            Instant::now() < deadline,
            "no lookup of {key}\n{}",
            server.log()
        );
        let Some(line) = route.read_line() else {
            continue;
        };
        if line == "PING" {
            route.send("PONG\r\n");
            continue;
        }
        let fields: Vec<&str> = line.split(' ').collect();
        if !matches!(fields[0], "RMSG" | "HMSG") {
            continue;
        }
        let size = fields
            .last()
            .and_then(|size| size.parse().ok())
            .expect("message size");
        route.read_payload(size).expect("payload");
        if fields[1] == system && fields[2] == lookup {
            break fields[3].to_string();
        }
    };
    answering.send(&format!("RMSG {system} {reply} {}\r\n{jwt}\r\n", jwt.len()));

    let cached = directory.path().join(format!("{key}.jwt"));
    let deadline = Instant::now() + WAIT;
    while !cached.exists() {
        assert!(
            Instant::now() < deadline,
            "{} not cached\n{}",
            cached.display(),
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
