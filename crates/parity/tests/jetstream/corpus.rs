//! The request corpora in `corpus/*.txt` (the `$JS.API`, consumers, stream-config rules, limits and
//! publish headers), replayed over one raw connection and compared byte for byte, after normalising
//! times, ids and the server version, with the replies nats-server 2.15.1 gave, kept in
//! `corpus/*.expected`.
//!
//! Corpus lines: `SUBJECT<TAB>PAYLOAD<TAB>Header=Value;Header=Value` (payload and headers
//! optional; lines starting with `#` are comments). Each request gets a reply subject under
//! `_R.>`; the reply (headers and body) or `TIMEOUT` is recorded. This replaces the
//! side-by-side script that compared the two servers live.
//!
//! After changing a corpus, write its replies from the real server (refused against ours):
//! `CORPUS_BLESS=1 NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream corpus::`

use regex::Regex;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;
use test_harness::{RawClient, TestServer};

#[test]
fn api_basics() {
    replay("api_basics");
}

#[test]
fn consumers() {
    replay("consumers");
}

#[test]
fn limits() {
    replay("limits");
}

#[test]
fn publish_headers() {
    replay("publish_headers");
}

#[test]
fn stream_config() {
    replay("stream_config");
}

fn corpus_path(name: &str, extension: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/jetstream/corpus")
        .join(format!("{name}.{extension}"))
}

/// Replays one corpus against a fresh JetStream server and compares each reply with the
/// recorded one; every difference is listed in the failure.
fn replay(name: &str) {
    let corpus = std::fs::read_to_string(corpus_path(name, "txt")).expect("corpus file");
    let requests: Vec<&str> = corpus
        .split('\n')
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .collect();
    let server = TestServer::jetstream();
    let mut client = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"headers":true,"no_responders":true,"protocol":1}"#,
    );
    // Three requests get no reply (no_ack streams): each waits this long.
    client.timeout = Duration::from_secs(2);
    client.send("SUB _R.> 1\r\n");
    client.ping_collect();
    let transcript: Vec<String> = requests
        .iter()
        .enumerate()
        .map(|(index, line)| {
            let reply = request(&mut client, index + 1, line);
            format!("> {line}\n{}", normalise(&reply))
        })
        .collect();
    let expected_path = corpus_path(name, "expected");
    if std::env::var_os("CORPUS_BLESS").is_some() {
        assert!(
            test_harness::is_reference(),
            "the recorded replies come from the real nats-server: set NATS_SERVER_BIN"
        );
        std::fs::write(&expected_path, transcript.concat()).expect("write expected replies");
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).expect("expected replies file");
    let expected: Vec<String> =
        expected
            .split_inclusive('\n')
            .fold(Vec::new(), |mut blocks: Vec<String>, line| {
                match blocks.last_mut() {
                    Some(block) if !line.starts_with("> ") => block.push_str(line),
                    _ => blocks.push(line.to_string()),
                }
                blocks
            });
    assert_eq!(
        expected.len(),
        transcript.len(),
        "{name}: the corpus and its recorded replies differ in length (re-bless)"
    );
    let differences: Vec<String> = expected
        .iter()
        .zip(&transcript)
        .filter(|(want, got)| want != got)
        .map(|(want, got)| format!("nats-server:\n{want}this server:\n{got}"))
        .collect();
    assert!(
        differences.is_empty(),
        "{name}: {} of {} replies differ\n{}",
        differences.len(),
        transcript.len(),
        differences.join("\n")
    );
}

/// Sends one corpus line as a request with reply `_R.<number>`; returns the reply as
/// `headers<newline>body` lines (`TIMEOUT` when none came).
fn request(client: &mut RawClient, number: usize, line: &str) -> String {
    let mut parts = line.split('\t');
    let subject = parts.next().unwrap_or_default();
    let payload = parts.next().unwrap_or_default();
    let headers: Vec<(&str, &str)> = parts
        .next()
        .map(|text| {
            text.split(';')
                .filter_map(|pair| pair.split_once('='))
                .collect()
        })
        .unwrap_or_default();
    let reply = format!("_R.{number}");
    if headers.is_empty() {
        client.send(&format!(
            "PUB {subject} {reply} {}\r\n{payload}\r\n",
            payload.len()
        ));
    } else {
        let mut block = String::from("NATS/1.0\r\n");
        for (name, value) in &headers {
            block.push_str(&format!("{name}: {value}\r\n"));
        }
        block.push_str("\r\n");
        client.send(&format!(
            "HPUB {subject} {reply} {} {}\r\n{block}{payload}\r\n",
            block.len(),
            block.len() + payload.len()
        ));
    }
    loop {
        let Some(control) = client.read_line() else {
            return "TIMEOUT\n".to_string();
        };
        if control == "PING" {
            client.send("PONG\r\n");
            continue;
        }
        let fields: Vec<&str> = control.split(' ').collect();
        let size = |index: usize| -> usize {
            fields[fields.len() - index]
                .parse()
                .unwrap_or_else(|_| panic!("size in {control:?}"))
        };
        // A reply to an earlier request that came after its wait ran out is not this one's.
        let current = fields.get(1) == Some(&reply.as_str());
        let text = match fields[0] {
            "MSG" => {
                let body = client.read_payload(size(1)).expect("reply payload");
                format!("{}\n", String::from_utf8_lossy(&body))
            }
            "HMSG" => {
                let (header_size, total) = (size(2), size(1));
                let data = client.read_payload(total).expect("reply payload");
                let (block, body) = data.split_at(header_size);
                let block = String::from_utf8_lossy(block).replace("\r\n", "\n");
                format!("{block}{}\n", String::from_utf8_lossy(body))
            }
            _ => panic!("unexpected line from server: {control:?}"),
        };
        if current {
            return text;
        }
    }
}

/// Replaces what differs from run to run: times, server and leader ids, the server version.
fn normalise(text: &str) -> String {
    static RULES: LazyLock<Vec<(Regex, &str)>> = LazyLock::new(|| {
        [
            (r#""\d{4}-\d\d-\d\dT[0-9:.]+Z""#, r#""TS""#),
            (r#""(leader|server_id|id)":"[^"]*""#, r#""$1":"X""#),
            (r"Nats-Time-Stamp: [^\n]*", "Nats-Time-Stamp: TS"),
            (r#""_nats.ver":"[^"]*""#, r#""_nats.ver":"V""#),
        ]
        .into_iter()
        .map(|(pattern, replacement)| (Regex::new(pattern).expect("pattern"), replacement))
        .collect()
    });
    RULES
        .iter()
        .fold(text.to_string(), |text, (pattern, replacement)| {
            pattern.replace_all(&text, *replacement).into_owned()
        })
}
