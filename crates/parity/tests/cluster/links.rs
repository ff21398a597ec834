//! Cutting one route link with the harness's link proxies: the proxies carry every route (a
//! reset link stays down while the rest of the cluster serves, gossip cannot go around it), a
//! blackholed link heals, delayed links show that every route goes through its proxy.

use std::time::{Duration, Instant};

use async_nats::Client;
use test_harness::cluster::{Cluster, LinkMode, Topology};

use crate::per_composition;
use crate::support::{connect_all, request, request_until, responder, unique, Composition, Reply};

per_composition!(
    reset_link_stays_cut_until_healed,
    blackholed_link_heals,
    one_way_blackhole_drops_the_route_and_heals,
    every_route_goes_through_the_proxies
);

/// Node `i` answers `<prefix>.<i>` with `from-<i>`.
struct Services {
    prefix: String,
    clients: Vec<Client>,
    _responders: Vec<crate::support::Responder>,
}

impl Services {
    async fn start(cluster: &Cluster) -> Services {
        let prefix = unique("svc");
        let clients = connect_all(cluster).await;
        let mut responders = Vec::new();
        for (index, client) in clients.iter().enumerate() {
            let answer: &'static str = Box::leak(format!("from-{index}").into_boxed_str());
            responders.push(responder(client, &format!("{prefix}.{index}"), answer).await);
        }
        Services {
            prefix,
            clients,
            _responders: responders,
        }
    }

    fn subject(&self, to: usize) -> String {
        format!("{}.{to}", self.prefix)
    }

    /// Wait until a request from node `from` to node `to`'s service is answered.
    async fn answered(&self, from: usize, to: usize, what: &str) {
        let expected = Reply::Payload(format!("from-{to}").into_bytes());
        request_until(
            &self.clients[from],
            &self.subject(to),
            |r| *r == expected,
            &format!("{what}: {from}->{to}"),
        )
        .await;
    }

    /// Wait until node `from` no longer knows node `to`'s service (the route is gone).
    async fn refused(&self, from: usize, to: usize, what: &str) {
        request_until(
            &self.clients[from],
            &self.subject(to),
            |r| *r == Reply::NoResponders,
            &format!("{what}: {from}->{to}"),
        )
        .await;
    }

    async fn all_answered(&self, count: usize, what: &str) {
        for from in 0..count {
            for to in 0..count {
                self.answered(from, to, what).await;
            }
        }
    }
}

fn proxied(composition: Composition, ping: Option<Duration>) -> Cluster {
    let mut options = composition.options(Topology::Proxied);
    options.route_ping_interval = ping;
    Cluster::start(options)
}

/// Reset the link 0-1: both ends lose the route and the interest behind it (503) while 0-2 and
/// 2-1 keep serving. It stays cut for several route-retry periods: nothing (gossip, an implicit
/// route) goes around the proxy. Healed, 0 and 1 route to each other again.
async fn reset_link_stays_cut_until_healed(composition: Composition) {
    let cluster = proxied(composition, None);
    let services = Services::start(&cluster).await;
    services.all_answered(3, "before the cut").await;

    cluster.set_link(0, 1, LinkMode::Reset);
    services.refused(0, 1, "cut").await;
    services.refused(1, 0, "cut").await;
    for (from, to) in [(0, 2), (2, 0), (1, 2), (2, 1)] {
        services
            .answered(from, to, "other links during the cut")
            .await;
    }
    // nats-server retries an explicit route every second: hold the cut over several tries.
    let hold_until = Instant::now() + Duration::from_millis(3500);
    while Instant::now() < hold_until {
        for (from, to) in [(0, 1), (1, 0)] {
            assert_eq!(
                request(&services.clients[from], &services.subject(to), "ping").await,
                Reply::NoResponders,
                "{from}->{to} came back while the link was cut (a route around the proxy?)\n{}",
                cluster.logs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(cluster.link(0, 1).open_connections(), 0);

    cluster.set_link(0, 1, LinkMode::Pass);
    services.answered(0, 1, "healed").await;
    services.answered(1, 0, "healed").await;
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|e| panic!("mesh after heal: {e}"));
}

/// Blackhole the link 0-1 (bytes held, connections open): with a short route ping the silent
/// route is dropped and its interest with it, the others keep serving; healed, it comes back.
async fn blackholed_link_heals(composition: Composition) {
    let cluster = proxied(composition, Some(Duration::from_millis(300)));
    let services = Services::start(&cluster).await;
    services.all_answered(3, "before the blackhole").await;

    cluster.set_link(0, 1, LinkMode::Blackhole);
    services.refused(0, 1, "blackholed").await;
    services.refused(1, 0, "blackholed").await;
    for (from, to) in [(0, 2), (2, 0), (1, 2), (2, 1)] {
        services
            .answered(from, to, "other links during the blackhole")
            .await;
    }

    cluster.set_link(0, 1, LinkMode::Pass);
    services.all_answered(3, "healed").await;
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|e| panic!("mesh after heal: {e}"));
}

/// Only the traffic from 0 to 1 is held: 1's pings still reach 0 but 0's answers do not, so
/// the route dies on both sides all the same (each side misses its PONGs); healed, it returns.
async fn one_way_blackhole_drops_the_route_and_heals(composition: Composition) {
    let cluster = proxied(composition, Some(Duration::from_millis(300)));
    let services = Services::start(&cluster).await;
    services.all_answered(3, "before the blackhole").await;

    cluster.set_direction(0, 1, LinkMode::Blackhole);
    assert_eq!(cluster.link(0, 1).mode(1, 0), LinkMode::Pass);
    services.refused(0, 1, "0->1 blackholed").await;
    services.refused(1, 0, "0->1 blackholed").await;

    cluster.set_direction(0, 1, LinkMode::Pass);
    services.answered(0, 1, "healed").await;
    services.answered(1, 0, "healed").await;
}

/// Every route goes through the proxies: with 150 ms each way on every link, a request between
/// any two nodes takes at least 300 ms (a route formed around a proxy, e.g. by gossip to an
/// advertised address, would answer at once). Then only the link 0-2 is put back to pass: 0->2
/// is fast again, 0->1 is still delayed.
async fn every_route_goes_through_the_proxies(composition: Composition) {
    let cluster = proxied(composition, None);
    let services = Services::start(&cluster).await;
    services.all_answered(3, "before the delay").await;

    let delay = Duration::from_millis(150);
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        cluster.set_link(a, b, LinkMode::Delay(delay));
    }
    let timed = |from: usize, to: usize| {
        let services = &services;
        async move {
            let started = Instant::now();
            let reply = request(&services.clients[from], &services.subject(to), "ping").await;
            assert_eq!(reply, Reply::Payload(format!("from-{to}").into_bytes()));
            started.elapsed()
        }
    };
    for from in 0..3 {
        for to in (0..3).filter(|&to| to != from) {
            let took = timed(from, to).await;
            assert!(
                took >= delay * 2,
                "{from}->{to} took {took:?} through a link delayed {delay:?} each way"
            );
        }
    }

    cluster.set_link(0, 2, LinkMode::Pass);
    // The fastest of three, so that one scheduling hiccup on a busy machine does not count.
    let mut direct = timed(0, 2).await;
    for _ in 0..2 {
        direct = direct.min(timed(0, 2).await);
    }
    assert!(
        direct < delay,
        "0->2 took {direct:?} after its link passed again"
    );
    let delayed = timed(0, 1).await;
    assert!(delayed >= delay * 2, "0->1 took {delayed:?}");
}
