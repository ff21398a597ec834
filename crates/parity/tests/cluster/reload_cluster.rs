//! Reloading the rest of `cluster { }` on SIGHUP, as nats-server's `clusterOption`: a new
//! cluster name is taken at once (`Cluster name updated to ...`, `/varz`) so a peer of that
//! name joins; the authorization timeout, write deadline and connect retries are taken by the
//! routes formed after the reload; new route TLS certificates serve the routes formed after
//! it (those up keep theirs); dedicated-route `accounts` are accepted, and one that does not
//! exist refuses the reload in nats-server's words. Two nodes: node 1 dials node 0, node 0 is
//! reloaded, node 1 restarted with the matching file.

use std::time::Duration;

use test_harness::certificates::TestCertificates;
use test_harness::cluster::{http_get, Cluster, ClusterOptions, Topology};

use crate::per_composition;
use crate::reload_routes::{await_log, rewrite_and_hangup, two_nodes};
use crate::support::{connect, interest_barrier, next_within, unique, Composition};

per_composition!(
    a_new_cluster_name_timeouts_and_retries_reload,
    new_route_certificates_serve_new_routes,
    dedicated_route_accounts_reload_and_missing_ones_are_refused
);

const WAIT: Duration = Duration::from_secs(10);

fn config(cluster: &Cluster, index: usize) -> String {
    std::fs::read_to_string(&cluster.node(index).config_path).expect("config")
}

/// Node `index`'s `/varz` `cluster` block.
fn varz_cluster(cluster: &Cluster, index: usize) -> serde_json::Value {
    let body = http_get(cluster.node(index).monitor_port, "/varz").expect("/varz");
    let varz: serde_json::Value = serde_json::from_str(&body).expect("/varz is JSON");
    varz["cluster"].clone()
}

/// Node 1 starts again with `config`; the two nodes route to each other and carry a message.
async fn restart_and_mesh(cluster: &mut Cluster, config: &str) {
    std::fs::write(&cluster.node(1).config_path, config).expect("rewrite config");
    cluster.restart(1);
    if let Err(error) = cluster.wait_for_mesh() {
        panic!("no route after the reload: {error}\n{}", cluster.logs());
    }
    let (zero, one) = (connect(cluster, 0).await, connect(cluster, 1).await);
    let subject = unique("reload.cluster");
    let mut subscriber = zero.subscribe(subject.clone()).await.expect("subscribe");
    interest_barrier(&zero, &one).await;
    one.publish(subject, "crossed".into())
        .await
        .expect("publish");
    let message = next_within(&mut subscriber, WAIT).await;
    assert!(message.is_some(), "nothing crossed:\n{}", cluster.logs());
}

async fn a_new_cluster_name_timeouts_and_retries_reload(composition: Composition) {
    let mut options = ClusterOptions::new(&two_nodes(composition), Topology::Seed);
    options.route_credentials = Some(("u".into(), "p".into()));
    let before = "  connect_retries: 2\n  write_deadline: \"2s\"\n";
    options.cluster_extra = before.to_string();
    let mut cluster = Cluster::start(options);
    let renamed = |config: String| {
        config
            .replace("name: \"harness\"", "name: \"renamed\"")
            .replace("timeout: 2 }", "timeout: 5 }")
            .replace(before, "  connect_retries: 5\n  write_deadline: \"5s\"\n")
    };
    let zero = renamed(config(&cluster, 0));
    assert!(
        zero.contains("renamed") && zero.contains("timeout: 5"),
        "{zero}"
    );
    rewrite_and_hangup(&cluster, 0, &zero);
    await_log(&cluster, 0, "Reloaded server configuration", 1);
    await_log(&cluster, 0, "Cluster name updated to renamed", 1);
    let block = varz_cluster(&cluster, 0);
    assert_eq!(block["name"], "renamed", "{block}");
    assert_eq!(block["auth_timeout"], 5.0, "{block}");
    assert_eq!(block["write_deadline"], 5_000_000_000u64, "{block}");
    // A peer named as the reloaded file names the cluster joins it.
    let one = renamed(config(&cluster, 1));
    restart_and_mesh(&mut cluster, &one).await;
}

async fn new_route_certificates_serve_new_routes(composition: Composition) {
    let (first, second) = (TestCertificates::generate(), TestCertificates::generate());
    let mut options = ClusterOptions::new(&two_nodes(composition), Topology::Seed);
    options.cluster_extra = first.block("  timeout: 3");
    let mut cluster = Cluster::start(options);
    let swap = |config: String| {
        config.replace(&first.block("  timeout: 3"), &second.block("  timeout: 3"))
    };
    rewrite_and_hangup(&cluster, 0, &swap(config(&cluster, 0)));
    await_log(&cluster, 0, "Reloaded server configuration", 1);
    await_log(&cluster, 0, "Reloaded: cluster", 1);
    let block = varz_cluster(&cluster, 0);
    // Without an authorization timeout, nats-server's default with TLS: its timeout + 1 s.
    assert_eq!(
        (
            block["tls_required"].as_bool(),
            block["tls_timeout"].as_f64(),
            block["auth_timeout"].as_f64()
        ),
        (Some(true), Some(3.0), Some(4.0)),
        "{block}"
    );
    // Node 1 comes back with certificates of the second CA only: node 0 must present and
    // accept those now (with the first ones the handshake fails both ways).
    let one = swap(config(&cluster, 1));
    assert!(one.contains(&second.path_text("ca.pem")), "{one}");
    restart_and_mesh(&mut cluster, &one).await;
}

async fn dedicated_route_accounts_reload_and_missing_ones_are_refused(composition: Composition) {
    let mut options = ClusterOptions::new(&two_nodes(composition), Topology::Seed);
    options.extra_config = "accounts { A {}, B {} }\n".into();
    options.cluster_extra = "  accounts: [A]\n".into();
    let cluster = Cluster::start(options);
    let zero = config(&cluster, 0);
    rewrite_and_hangup(
        &cluster,
        0,
        &zero.replace("accounts: [A]", "accounts: [A, C]"),
    );
    await_log(
        &cluster,
        0,
        "unable to add account \"C\" to the list of dedicated routes: account missing",
        1,
    );
    rewrite_and_hangup(
        &cluster,
        0,
        &zero.replace("accounts: [A]", "accounts: [A, B]"),
    );
    await_log(&cluster, 0, "Reloaded server configuration", 1);
    assert!(
        !cluster
            .node(0)
            .log()
            .contains("config reload not supported"),
        "{}",
        cluster.node(0).log()
    );
    if let Err(error) = cluster.wait_for_mesh() {
        panic!("no mesh after the reload: {error}\n{}", cluster.logs());
    }
}
