//! `consumer next`: one pull request per message, printed like natscli, then acknowledged
//! (or NAK'd / terminated).

use std::time::Duration;

use bytes::Bytes;

use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::format::comma_u64;

use super::NextArgs;

fn nanos(duration: Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

struct Delivery {
    delivered: u64,
    stream_seq: u64,
    consumer_seq: u64,
    pending: u64,
}

fn parse_ack_subject(subject: &str) -> Option<Delivery> {
    let tokens: Vec<&str> = subject.split('.').collect();
    if tokens.len() < 2 || tokens[0] != "$JS" || tokens[1] != "ACK" {
        return None;
    }
    // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
    // v2: $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
    let numbers = match tokens.len() {
        9 => &tokens[4..9],
        11 | 12 => &tokens[6..11],
        _ => return None,
    };
    Some(Delivery {
        delivered: numbers[0].parse().ok()?,
        stream_seq: numbers[1].parse().ok()?,
        consumer_seq: numbers[2].parse().ok()?,
        pending: numbers[4].parse().ok()?,
    })
}

pub(super) async fn next_messages(js: &JetStream, args: &NextArgs) -> Result<(), CliError> {
    let acknowledge = !args.no_ack && (!args.term || args.ack);
    if args.term && (args.ack || args.nak) {
        return Err(CliError::message(
            "can not both Acknowledge and Terminate message",
        ));
    }
    for _ in 0..args.count.max(1) {
        // Expire the pull just before our own wait ends so the server answers first.
        let expires = js.timeout.saturating_sub(Duration::from_millis(100));
        let body = serde_json::json!({"batch": 1, "expires": nanos(expires)});
        let subject = js.next_subject(&args.stream, &args.consumer);
        // A pull delivery carries the message's own subject, not the inbox, so the reply is
        // awaited on a dedicated subscription (natscli's old request style).
        let inbox = js.client.new_inbox();
        let mut replies = js.client.subscribe(inbox.clone()).await?;
        js.client
            .publish_with_reply(subject, inbox, Bytes::from(serde_json::to_vec(&body)?))
            .await?;
        js.client.flush().await?;
        let message =
            match tokio::time::timeout(js.timeout, futures::StreamExt::next(&mut replies)).await {
                Ok(Some(message)) => message,
                Ok(None) | Err(_) => {
                    return Err(CliError::Context {
                        context: "no message received".to_string(),
                        source: Box::new(CliError::Timeout),
                    })
                }
            };
        if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
            js.consumer_info(&args.stream, &args.consumer)
                .await
                .context(&format!("could not load consumer {:?}", args.consumer))?;
            return Err(CliError::message(format!(
                "consumer {:?} is not a Pull consumer",
                args.consumer
            )));
        }
        if let Some(status) = message.status {
            let description = message.description.clone().unwrap_or_default();
            return Err(CliError::message(format!(
                "no message received: {} {description}",
                status.as_u16()
            )));
        }
        let reply = message
            .reply
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_default();
        if args.raw {
            println!("{}", String::from_utf8_lossy(&message.payload));
        } else {
            match parse_ack_subject(&reply) {
                Some(delivery) => println!(
                    "[{}] subj: {} / tries: {} / cons seq: {} / str seq: {} / pending: {}",
                    chrono::Local::now().format("%H:%M:%S"),
                    message.subject.as_str(),
                    delivery.delivered,
                    delivery.consumer_seq,
                    delivery.stream_seq,
                    comma_u64(delivery.pending)
                ),
                None if reply.is_empty() => {
                    println!("--- subject: {}", message.subject.as_str())
                }
                None => println!("--- subject: {} reply: {reply}", message.subject.as_str()),
            }
            if let Some(headers) = message.headers.as_ref().filter(|h| !h.is_empty()) {
                println!();
                println!("Headers:");
                println!();
                for (name, values) in headers.iter() {
                    for value in values {
                        println!("  {name}: {value}");
                    }
                }
                println!();
                println!("Data:");
                println!();
            }
            println!();
            println!("{}", String::from_utf8_lossy(&message.payload));
        }
        if args.term && !reply.is_empty() {
            js.client
                .publish(reply.clone(), Bytes::from_static(b"+TERM"))
                .await?;
            js.client.flush().await?;
            println!("\nTerminated message");
        }
        if (acknowledge || args.nak) && !reply.is_empty() {
            let body: &'static [u8] = if args.nak { b"-NAK" } else { b"+ACK" };
            js.client.publish(reply, Bytes::from_static(body)).await?;
            js.client.flush().await?;
            if !args.raw {
                let negative = if args.nak { "Negative " } else { "" };
                println!("\n{negative}Acknowledged message");
                println!();
            }
        }
    }
    Ok(())
}
