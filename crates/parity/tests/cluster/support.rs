//! What every cluster test shares: the compositions a test runs under, the macro that writes
//! one `#[tokio::test]` per composition, client connections and bounded waits on interest.

use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use test_harness::cluster::{Cluster, ClusterOptions, ServerKind, Topology};

/// Which servers a test cluster is made of (node order as listed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Composition {
    /// Three real nats-servers.
    Go3,
    /// Two real nats-servers (nodes 0, 1) and one of ours (node 2).
    Go2Ours1,
    /// One real nats-server (node 0) and two of ours (nodes 1, 2).
    Go1Ours2,
    /// Three of ours.
    Ours3,
}

impl Composition {
    pub fn kinds(self) -> Vec<ServerKind> {
        use ServerKind::{Ours, Reference as Go};
        match self {
            Composition::Go3 => vec![Go, Go, Go],
            Composition::Go2Ours1 => vec![Go, Go, Ours],
            Composition::Go1Ours2 => vec![Go, Ours, Ours],
            Composition::Ours3 => vec![Ours, Ours, Ours],
        }
    }

    /// `Err(reason)` when this composition cannot run here.
    pub fn enabled(self) -> Result<(), String> {
        let kinds = self.kinds();
        if kinds.contains(&ServerKind::Reference)
            && test_harness::cluster::reference_binary().is_none()
        {
            return Err("no reference nats-server (NATS_SERVER_BIN or PATH)".into());
        }
        if self == Composition::Go3 && !test_harness::is_reference() && go3_in_parity_pass() {
            return Err(
                "three nats-servers run in the parity pass (RNATS_CLUSTER_GO3=parity)".into(),
            );
        }
        if kinds.contains(&ServerKind::Ours) {
            if test_harness::is_reference() {
                return Err("parity pass: only reference clusters run".into());
            }
            if !(crate::OURS_ROUTES_READY || forced_ours()) {
                return Err("rnats routes not enabled (OURS_ROUTES_READY)".into());
            }
        }
        Ok(())
    }

    /// Options for a cluster of this composition.
    pub fn options(self, topology: Topology) -> ClusterOptions {
        ClusterOptions::new(&self.kinds(), topology)
    }

    /// Start a cluster of this composition and wait for its mesh.
    pub fn start(self, topology: Topology) -> Cluster {
        Cluster::start(self.options(topology))
    }
}

/// `RNATS_CLUSTER_OURS=1`: run the compositions with ours even while the switch is off.
fn forced_ours() -> bool {
    std::env::var("RNATS_CLUSTER_OURS").is_ok_and(|v| v == "1")
}

/// `RNATS_CLUSTER_GO3=parity` (set by `.ci/run` when its parity pass follows): the composition of
/// three nats-servers runs only there, not a second time, on the same binary, in the pass before.
fn go3_in_parity_pass() -> bool {
    std::env::var("RNATS_CLUSTER_GO3").is_ok_and(|v| v == "parity")
}

/// Run `test` under `composition`, or say why it is skipped.
pub async fn run<F, Fut>(composition: Composition, name: &str, test: F)
where
    F: FnOnce(Composition) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    match composition.enabled() {
        Ok(()) => test(composition).await,
        Err(reason) => eprintln!("skipped {name} [{composition:?}]: {reason}"),
    }
}

/// For each named `async fn(Composition)`, a module of the same name with one test per
/// composition: `<name>::go3`, `<name>::go2_ours1`, `<name>::go1_ours2`, `<name>::ours3`.
/// A test that makes no sense for some composition returns early for it, saying so.
#[macro_export]
macro_rules! per_composition {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            use $crate::support::{run, Composition};
            #[tokio::test]
            async fn go3() {
                run(Composition::Go3, stringify!($name), super::$name).await
            }
            #[tokio::test]
            async fn go2_ours1() {
                run(Composition::Go2Ours1, stringify!($name), super::$name).await
            }
            #[tokio::test]
            async fn go1_ours2() {
                run(Composition::Go1Ours2, stringify!($name), super::$name).await
            }
            #[tokio::test]
            async fn ours3() {
                run(Composition::Ours3, stringify!($name), super::$name).await
            }
        }
    )+};
}

/// How long a request waits for its reply in these tests.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a test waits for interest to cross the cluster.
pub const PROPAGATION_TIMEOUT: Duration = Duration::from_secs(10);

/// A client connected to node `index`, and only ever to it: it ignores the cluster's other
/// servers (`connect_urls`), so after a kill it reconnects to the same node, not elsewhere.
pub async fn connect(cluster: &Cluster, index: usize) -> Client {
    async_nats::ConnectOptions::new()
        .request_timeout(Some(REQUEST_TIMEOUT))
        .ignore_discovered_servers()
        .connect(cluster.url(index))
        .await
        .unwrap_or_else(|e| panic!("connect to node {index}: {e}"))
}

/// A client connected to every node, in node order.
pub async fn connect_all(cluster: &Cluster) -> Vec<Client> {
    let mut clients = Vec::new();
    for index in 0..cluster.len() {
        clients.push(connect(cluster, index).await);
    }
    clients
}

/// A subject no other test uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}.{}", nuid_like())
}

fn nuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "t{}x{nanos}x{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// Wait until every subscription `subscriber` made so far is known to the server `publisher`
/// is connected to: `subscriber` subscribes to a fresh barrier subject (after its earlier
/// subscriptions, on the same connection, so its interest travels behind theirs) and
/// `publisher` publishes to it until a message comes through.
pub async fn interest_barrier(subscriber: &Client, publisher: &Client) {
    let subject = unique("barrier");
    let mut barrier = subscriber
        .subscribe(subject.clone())
        .await
        .expect("barrier subscribe");
    subscriber.flush().await.expect("flush");
    let deadline = Instant::now() + PROPAGATION_TIMEOUT;
    loop {
        publisher
            .publish(subject.clone(), "barrier".into())
            .await
            .expect("barrier publish");
        publisher.flush().await.expect("flush");
        if tokio::time::timeout(Duration::from_millis(50), barrier.next())
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "interest did not cross the cluster to the publisher's server within {PROPAGATION_TIMEOUT:?}"
        );
    }
    let _ = barrier.unsubscribe().await;
}

/// Result of one request, reduced to what these tests compare.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Payload(Vec<u8>),
    NoResponders,
    TimedOut,
    Other(String),
}

pub async fn request(client: &Client, subject: &str, payload: &'static str) -> Reply {
    use async_nats::RequestErrorKind;
    match client.request(subject.to_string(), payload.into()).await {
        Ok(message) => Reply::Payload(message.payload.to_vec()),
        Err(e) => match e.kind() {
            RequestErrorKind::NoResponders => Reply::NoResponders,
            RequestErrorKind::TimedOut => Reply::TimedOut,
            other => Reply::Other(format!("{other:?}: {e}")),
        },
    }
}

/// Repeat a request until its outcome satisfies `done`, bounded by [`PROPAGATION_TIMEOUT`];
/// returns the last outcome.
pub async fn request_until(
    client: &Client,
    subject: &str,
    done: impl Fn(&Reply) -> bool,
    what: &str,
) -> Reply {
    let deadline = Instant::now() + PROPAGATION_TIMEOUT;
    loop {
        let reply = request(client, subject, "ping").await;
        if done(&reply) {
            return reply;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: still {reply:?} after {PROPAGATION_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A responder on `client` that answers every request on `subject` with `answer`.
pub async fn responder(client: &Client, subject: &str, answer: &'static str) -> Responder {
    let mut subscription = client
        .subscribe(subject.to_string())
        .await
        .expect("responder subscribe");
    client.flush().await.expect("flush");
    let replier = client.clone();
    let task = tokio::spawn(async move {
        while let Some(message) = subscription.next().await {
            if let Some(reply) = message.reply {
                let _ = replier.publish(reply, answer.into()).await;
            }
        }
    });
    Responder { task }
}

/// Aborts its task (and so drops the subscription) when dropped.
pub struct Responder {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Receive one message within `bound`.
pub async fn next_within(
    subscriber: &mut async_nats::Subscriber,
    bound: Duration,
) -> Option<async_nats::Message> {
    tokio::time::timeout(bound, subscriber.next())
        .await
        .ok()
        .flatten()
}
