//! How a test knows a cluster is meshed, for either kind of server: a functional probe (a
//! subscription on each node, published to from every other node, must be seen: routes carry
//! one hop only, so this proves a direct route with interest between every pair) and, where
//! the node serves it, `/routez` naming every expected peer.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::RawClient;

/// Every ordered pair of `addresses` (client `host:port`) delivers a message across its route
/// before `deadline`; otherwise the pairs still missing, as `from->to` by index into
/// `addresses`.
pub fn functional_mesh(addresses: &[(usize, String)], deadline: Instant) -> Result<(), String> {
    static PROBE: AtomicU64 = AtomicU64::new(0);
    let token = format!(
        "{}_{}",
        std::process::id(),
        PROBE.fetch_add(1, Ordering::SeqCst)
    );
    let subject = |to: usize| format!("_HARNESS.MESH.{token}.{to}");
    let mut subscribers = Vec::new();
    let mut publishers = Vec::new();
    for (index, address) in addresses {
        let mut subscriber = connect(address)?;
        subscriber.send(&format!("SUB {} 1\r\n", subject(*index)));
        subscriber.ping_collect();
        subscriber.timeout = Duration::from_millis(20);
        subscribers.push((*index, subscriber));
        publishers.push((*index, connect(address)?));
    }
    let mut missing: BTreeSet<(usize, usize)> = addresses
        .iter()
        .flat_map(|(from, _)| addresses.iter().map(move |(to, _)| (*from, *to)))
        .filter(|(from, to)| from != to)
        .collect();
    while !missing.is_empty() {
        if Instant::now() > deadline {
            let pairs: Vec<String> = missing.iter().map(|(f, t)| format!("{f}->{t}")).collect();
            return Err(format!("no delivery across {}", pairs.join(", ")));
        }
        for (from, publisher) in publishers.iter_mut() {
            for (_, to) in missing.iter().filter(|(f, _)| f == from) {
                let body = from.to_string();
                publisher.send(&format!(
                    "PUB {} {}\r\n{body}\r\n",
                    subject(*to),
                    body.len()
                ));
            }
        }
        for (to, subscriber) in subscribers.iter_mut() {
            while let Some(line) = subscriber.read_line() {
                let Some(size) = line
                    .strip_prefix("MSG ")
                    .and_then(|rest| rest.rsplit(' ').next())
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                subscriber.timeout = Duration::from_secs(2);
                let payload = subscriber.read_payload(size);
                subscriber.timeout = Duration::from_millis(20);
                if let Some(from) = payload
                    .and_then(|p| String::from_utf8(p).ok())
                    .and_then(|p| p.parse::<usize>().ok())
                {
                    missing.remove(&(from, *to));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    Ok(())
}

fn connect(address: &str) -> Result<RawClient, String> {
    TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
    let mut client = RawClient::connect_addr(address);
    client.send("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
    Ok(client)
}

/// `GET` a monitoring path over plain HTTP/1.0; the body when the status is 200.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    http_get_any(port, path).and_then(|(status, body)| (status == 200).then_some(body))
}

/// `GET path` on the monitoring port: the status and body whatever the status, `None` when the
/// port does not answer with an HTTP response.
pub fn http_get_any(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(3)));
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.lines().next()?.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// The peers a node's `/routez` lists, by `remote_name` (else `remote_id`); `None` when the node
/// does not serve `/routez` as JSON.
pub fn routez_peers(monitor_port: u16) -> Option<BTreeSet<String>> {
    let body = http_get(monitor_port, "/routez")?;
    let json: serde_json::Value = serde_json::from_str(&body).ok()?;
    let routes = json.get("routes")?.as_array()?;
    Some(
        routes
            .iter()
            .filter_map(|route| {
                route
                    .get("remote_name")
                    .or_else(|| route.get("remote_id"))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            })
            .collect(),
    )
}
