//! Replicated-stream workloads of issue 15's figures on a JetStream cluster: how long writes
//! stop when the stream leader is killed or steps down, and the idle cost (CPU, RSS) of many
//! R3 streams. (The wiped follower's catch-up is `replicas::catchup`.)

use crate::cluster::{Cluster, NODES};
use crate::jsapi;
use anyhow::{anyhow, Result};
use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const FAIL: &str = "FAIL";
const FAIL_SUBJECT: &str = "fail.msgs";
/// How long one publish may wait for its PubAck before it is sent again: short, so a
/// publish lost with the dead leader costs at most this much of the measured time.
const ATTEMPT: Duration = Duration::from_millis(250);
/// Bound of the wait for the first PubAck after a fault.
const RESUME_TIMEOUT: Duration = Duration::from_secs(60);
/// Stream creations in flight at once.
const CREATE_CONCURRENCY: usize = 16;

pub struct Failover {
    /// From the stream leader's kill -9 until a publisher on a surviving node has a PubAck.
    pub kill: Duration,
    /// From sending STREAM.LEADER.STEPDOWN until its answer, and until the first PubAck
    /// after it.
    pub stepdown_answer: Duration,
    pub stepdown_resume: Duration,
}

/// Publishes on `client`, one at a time and again after [`ATTEMPT`] without an answer, until a
/// PubAck (an answer with `seq`) arrives; its time. Fails after [`RESUME_TIMEOUT`].
async fn first_puback(client: &async_nats::Client, since: Instant) -> Result<Duration> {
    let payload = Bytes::from(vec![b'x'; 128]);
    loop {
        let request = client.request(FAIL_SUBJECT, payload.clone());
        if let Ok(Ok(reply)) = tokio::time::timeout(ATTEMPT, request).await {
            let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
            if answer.get("seq").is_some() {
                return Ok(since.elapsed());
            }
            // A negative answer or no responders: asked again a moment later.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if since.elapsed() > RESUME_TIMEOUT {
            return Err(anyhow!("no PubAck within {RESUME_TIMEOUT:?}"));
        }
    }
}

/// An R3 file stream with a little data; the stream leader stepped down (time to its answer
/// and to the next PubAck), then killed -9 (time to the next PubAck through a survivor), then
/// restarted and waited for.
pub async fn failover(cluster: &mut Cluster) -> Result<Failover> {
    let admin = cluster.connect(0).await?;
    jsapi::create_stream(&admin, FAIL, FAIL_SUBJECT, None).await?;
    jsapi::preload(&admin, FAIL_SUBJECT, 1000, 128).await?;

    let leader = jsapi::stream_leader(cluster, &admin, FAIL).await?;
    let publisher = cluster.connect((leader + 1) % NODES).await?;
    first_puback(&publisher, Instant::now()).await?;
    let asked = Instant::now();
    let stepdown = publisher.request(
        format!("$JS.API.STREAM.LEADER.STEPDOWN.{FAIL}"),
        Bytes::new(),
    );
    let answer = tokio::time::timeout(Duration::from_secs(10), stepdown).await;
    let stepdown_answer = asked.elapsed();
    match answer {
        Ok(Ok(reply)) => {
            let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
            if answer.get("success") != Some(&json!(true)) {
                eprintln!("  {}: stepdown answered {answer}", cluster.label);
            }
        }
        other => eprintln!("  {}: stepdown not answered: {other:?}", cluster.label),
    }
    let stepdown_resume = first_puback(&publisher, asked).await?;

    // The leader after the stepdown is the one killed.
    let leader = jsapi::stream_leader(cluster, &admin, FAIL).await?;
    let survivor = (leader + 1) % NODES;
    let publisher = cluster.connect(survivor).await?;
    first_puback(&publisher, Instant::now()).await?;
    let killed = Instant::now();
    cluster.kill(leader);
    let kill = first_puback(&publisher, killed).await;
    cluster.spawn(leader)?;
    cluster.wait_listening(leader).await?;
    Ok(Failover {
        kill: kill?,
        stepdown_answer,
        stepdown_resume,
    })
}

pub struct Groups {
    pub created: usize,
    pub creation: Duration,
    /// CPU time of the three nodes over the idle window, in CPUs (1.0 = one core busy).
    pub cpu: f64,
    pub rss: Vec<Option<u64>>,
}

/// Creates `count` R3 file streams (`G<i>`, subject `g.<i>`, one message each), at most `limit`
/// of creating, lets the cluster settle 5 s, then measures its CPU over `window` and its RSS.
pub async fn groups(
    cluster: &Cluster,
    count: usize,
    limit: Duration,
    window: Duration,
) -> Result<Groups> {
    let client = cluster.connect(0).await?;
    // The first alone: a fresh cluster may not have a meta leader yet.
    jsapi::create_stream(&client, "G0", "g.0", None).await?;
    jsapi::preload(&client, "g.0", 1, 1).await?;
    let started = Instant::now();
    let mut next = 1;
    let mut created = 1;
    let mut failed = 0;
    let mut in_flight = FuturesUnordered::new();
    loop {
        while next < count && in_flight.len() < CREATE_CONCURRENCY && started.elapsed() < limit {
            let (name, subject) = (format!("G{next}"), format!("g.{next}"));
            next += 1;
            let client = client.clone();
            in_flight.push(async move {
                let config = json!({"name": name, "subjects": [subject], "num_replicas": 3,
                    "storage": "file", "retention": "limits"});
                jsapi::api_ok(&client, &format!("STREAM.CREATE.{name}"), config).await?;
                let ack = client.request(subject, Bytes::from_static(b"x")).await?;
                let answer: Value = serde_json::from_slice(&ack.payload).unwrap_or(Value::Null);
                if answer.get("seq").is_none() {
                    return Err(anyhow!("no PubAck on {name}: {answer}"));
                }
                Ok(())
            });
        }
        match in_flight.next().await {
            None => break,
            Some(Ok(())) => created += 1,
            Some(Err(error)) => {
                failed += 1;
                if failed <= 3 {
                    eprintln!("  stream creation failed: {error:#}");
                }
            }
        }
    }
    let creation = started.elapsed();
    eprintln!(
        "  {}: {created} R3 streams created in {:.1} s ({failed} failed)",
        cluster.label,
        creation.as_secs_f64()
    );
    drop(client);
    let (cpu, rss) = cluster.idle_cost(window).await;
    Ok(Groups {
        created,
        creation,
        cpu,
        rss,
    })
}
