//! The ack reply-subject codec and ack bodies.
//!
//! Every message a consumer delivers carries a reply subject that encodes where it came from:
//! - v1 (nats-server's default): `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer
//!   seq>.<timestamp ns>.<pending>` (9 tokens);
//! - v2 (feature flag in nats-server, and what clients must accept): `$JS.ACK.<domain>.<account
//!   hash>.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>`,
//!   domain `_` when there is none, possibly followed by more tokens (11 or more).
//!
//! The client answers by publishing an ack body ([`AckKind`]) to that subject. The consumer task
//! parses both; the delivery path formats subjects with [`AckSubjectPrefix`], which keeps the
//! constant part so a delivery appends only five numbers.

use crate::consumer_api::{NakOptions, NextRequest};
use crate::time_format::Nanos;
use crate::Error;

/// Prefix of every ack subject.
pub const ACK_PREFIX: &str = "$JS.ACK.";
/// Prefix of push flow-control reply subjects (`$JS.FC.<stream>.<consumer>.<random>`).
pub const FLOW_CONTROL_PREFIX: &str = "$JS.FC.";
/// The domain token of a v2 ack subject when JetStream has no domain.
pub const NO_DOMAIN_TOKEN: &str = "_";

/// A parsed ack reply subject. Borrowed from the subject, so parsing allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSubject<'a> {
    /// v2 only; `None` for v1 subjects and for the `_` placeholder.
    pub domain: Option<&'a str>,
    /// v2 only: the account name hash token.
    pub account_hash: Option<&'a str>,
    pub stream: &'a str,
    pub consumer: &'a str,
    /// How many times this message has been delivered (1 on the first delivery).
    pub delivered: u64,
    pub stream_sequence: u64,
    pub consumer_sequence: u64,
    /// Delivery time, nanoseconds since the Unix epoch.
    pub timestamp: i64,
    /// Messages still pending for the consumer after this one.
    pub pending: u64,
}

impl<'a> AckSubject<'a> {
    /// Parses either token layout. Numbers must be plain decimal digits, as nats-server writes
    /// them.
    pub fn parse(subject: &'a str) -> Result<AckSubject<'a>, Error> {
        let invalid = |reason: &'static str| Error::InvalidAckSubject {
            subject: subject.to_string(),
            reason,
        };
        let rest = subject
            .strip_prefix(ACK_PREFIX)
            .ok_or_else(|| invalid("does not start with $JS.ACK."))?;
        let mut tokens = [""; 9];
        let mut count = 0;
        for token in rest.split('.') {
            if count < tokens.len() {
                tokens[count] = token;
            }
            count += 1;
        }
        // Total tokens including `$JS` and `ACK`: 9 (v1) or at least 11 (v2).
        let (domain, account_hash, fields) = match count + 2 {
            9 => (None, None, &tokens[..7]),
            total if total >= 11 => {
                let domain = (tokens[0] != NO_DOMAIN_TOKEN).then_some(tokens[0]);
                (domain, Some(tokens[1]), &tokens[2..9])
            }
            _ => return Err(invalid("wrong number of tokens")),
        };
        if fields[0].is_empty() || fields[1].is_empty() {
            return Err(invalid("empty stream or consumer token"));
        }
        let number = |text: &str| parse_decimal(text).ok_or_else(|| invalid("not a number"));
        let timestamp = i64::try_from(number(fields[5])?).map_err(|_| invalid("timestamp"))?;
        Ok(AckSubject {
            domain,
            account_hash,
            stream: fields[0],
            consumer: fields[1],
            delivered: number(fields[2])?,
            stream_sequence: number(fields[3])?,
            consumer_sequence: number(fields[4])?,
            timestamp,
            pending: number(fields[6])?,
        })
    }

    /// Whether this subject could be an ack subject at all (cheap prefix check).
    pub fn is_ack_subject(subject: &str) -> bool {
        subject.len() > ACK_PREFIX.len() && subject.starts_with(ACK_PREFIX)
    }
}

impl std::fmt::Display for AckSubject<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(ACK_PREFIX)?;
        if let Some(account_hash) = self.account_hash {
            write!(
                formatter,
                "{}.{account_hash}.",
                self.domain.unwrap_or(NO_DOMAIN_TOKEN)
            )?;
        }
        write!(
            formatter,
            "{}.{}.{}.{}.{}.{}.{}",
            self.stream,
            self.consumer,
            self.delivered,
            self.stream_sequence,
            self.consumer_sequence,
            self.timestamp,
            self.pending
        )
    }
}

/// Go's `parseAckReplyNum`, but refusing (instead of returning -1) on empty, non-digit or
/// overflowing input. One pass: this runs for every ack.
fn parse_decimal(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for byte in text.bytes() {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

/// Appends `value` in decimal without the formatting machinery (one ack subject per delivery).
fn push_decimal(out: &mut String, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    // Only ASCII digits were written, so this conversion cannot fail.
    out.push_str(std::str::from_utf8(&digits[start..]).unwrap_or_default());
}

/// The constant front of a consumer's ack subjects, built once per consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckSubjectPrefix {
    prefix: String,
}

impl AckSubjectPrefix {
    /// v1 layout: `$JS.ACK.<stream>.<consumer>.`
    pub fn v1(stream: &str, consumer: &str) -> Self {
        AckSubjectPrefix {
            prefix: format!("{ACK_PREFIX}{stream}.{consumer}."),
        }
    }

    /// v2 layout: `$JS.ACK.<domain or _>.<account hash>.<stream>.<consumer>.`
    pub fn v2(domain: Option<&str>, account_hash: &str, stream: &str, consumer: &str) -> Self {
        let domain = domain.filter(|d| !d.is_empty()).unwrap_or(NO_DOMAIN_TOKEN);
        AckSubjectPrefix {
            prefix: format!("{ACK_PREFIX}{domain}.{account_hash}.{stream}.{consumer}."),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.prefix
    }

    /// The full reply subject for one delivery.
    pub fn reply(
        &self,
        delivered: u64,
        stream_sequence: u64,
        consumer_sequence: u64,
        timestamp: i64,
        pending: u64,
    ) -> String {
        let mut out = String::with_capacity(self.prefix.len() + 48);
        self.write_reply(
            &mut out,
            delivered,
            stream_sequence,
            consumer_sequence,
            timestamp,
            pending,
        );
        out
    }

    /// Appends the reply subject to `out` (no allocation when `out` has room).
    pub fn write_reply(
        &self,
        out: &mut String,
        delivered: u64,
        stream_sequence: u64,
        consumer_sequence: u64,
        timestamp: i64,
        pending: u64,
    ) {
        out.push_str(&self.prefix);
        push_decimal(out, delivered);
        out.push('.');
        push_decimal(out, stream_sequence);
        out.push('.');
        push_decimal(out, consumer_sequence);
        out.push('.');
        if timestamp < 0 {
            out.push('-');
        }
        push_decimal(out, timestamp.unsigned_abs());
        out.push('.');
        push_decimal(out, pending);
    }
}

/// What an ack body asks for. Parsed exactly as nats-server's `processAck` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// Empty body, `+ACK`, or the old `+OK`.
    Ack,
    /// `-NAK`, optionally `-NAK {"delay":<ns>}` or `-NAK <go duration>`: redeliver (after the
    /// delay). An unparsable delay is a plain NAK, as in nats-server.
    Nak { delay: Option<Nanos> },
    /// `+WPI`: still working, restart the ack timer.
    Progress,
    /// `+NXT [<pull request>]`: ack and ask for more (the body parses like a `MSG.NEXT` body).
    Next {
        request: Result<NextRequest, String>,
    },
    /// `+TERM [reason]`: never redeliver.
    Term { reason: Option<String> },
    /// Anything else. nats-server ignores it (but still answers a reply subject).
    Unknown,
}

pub const ACK_ACK: &[u8] = b"+ACK";
pub const ACK_OK: &[u8] = b"+OK";
pub const ACK_NAK: &[u8] = b"-NAK";
pub const ACK_PROGRESS: &[u8] = b"+WPI";
pub const ACK_NEXT: &[u8] = b"+NXT";
pub const ACK_TERM: &[u8] = b"+TERM";

/// `+TERM` reason nats-server uses when stream limits removed an unacked message.
pub const TERM_REASON_LIMITS: &str = "Message deleted by stream limits";
pub const TERM_REASON_UNACKED_LIMITS: &str = "Unacknowledged message was deleted";

impl AckKind {
    /// Parses an ack body (the payload after any headers).
    pub fn parse(body: &[u8]) -> AckKind {
        if body.is_empty() || body == ACK_ACK || body == ACK_OK {
            AckKind::Ack
        } else if let Some(rest) = body.strip_prefix(ACK_NEXT) {
            AckKind::Next {
                request: NextRequest::parse(rest),
            }
        } else if let Some(rest) = body.strip_prefix(ACK_NAK) {
            AckKind::Nak {
                delay: parse_nak_delay(rest),
            }
        } else if body == ACK_PROGRESS {
            AckKind::Progress
        } else if let Some(rest) = body.strip_prefix(ACK_TERM) {
            let reason = String::from_utf8_lossy(rest.trim_ascii()).into_owned();
            AckKind::Term {
                reason: (!reason.is_empty()).then_some(reason),
            }
        } else {
            AckKind::Unknown
        }
    }

    /// The body a client sends for this kind (the canonical spelling).
    pub fn to_body(&self) -> Vec<u8> {
        match self {
            AckKind::Ack => ACK_ACK.to_vec(),
            AckKind::Nak { delay: None } => ACK_NAK.to_vec(),
            AckKind::Nak { delay: Some(delay) } => {
                let options = serde_json::to_string(&NakOptions { delay: *delay })
                    .unwrap_or_else(|_| format!("{{\"delay\":{}}}", delay.0));
                format!("-NAK {options}").into_bytes()
            }
            AckKind::Progress => ACK_PROGRESS.to_vec(),
            AckKind::Next { request } => match request {
                Ok(request) => {
                    let json = serde_json::to_string(request).unwrap_or_default();
                    format!("+NXT {json}").into_bytes()
                }
                Err(_) => ACK_NEXT.to_vec(),
            },
            AckKind::Term { reason: None } => ACK_TERM.to_vec(),
            AckKind::Term {
                reason: Some(reason),
            } => format!("+TERM {reason}").into_bytes(),
            AckKind::Unknown => Vec::new(),
        }
    }
}

fn parse_nak_delay(argument: &[u8]) -> Option<Nanos> {
    let argument = argument.trim_ascii();
    if argument.is_empty() {
        return None;
    }
    if argument[0] == b'{' {
        serde_json::from_slice::<NakOptions>(argument)
            .ok()
            .map(|options| options.delay)
    } else {
        std::str::from_utf8(argument).ok().and_then(Nanos::parse_go)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_v1_as_sent_by_nats_server() {
        // Captured from nats-server v2.15.1.
        let subject = "$JS.ACK.C.PULL.1.1.1.1795980138464656259.2";
        let ack = AckSubject::parse(subject).unwrap();
        assert_eq!(
            ack,
            AckSubject {
                domain: None,
                account_hash: None,
                stream: "C",
                consumer: "PULL",
                delivered: 1,
                stream_sequence: 1,
                consumer_sequence: 1,
                timestamp: 1_795_980_138_464_656_259,
                pending: 2,
            }
        );
        assert_eq!(ack.to_string(), subject);
        let prefix = AckSubjectPrefix::v1("C", "PULL");
        assert_eq!(prefix.reply(1, 1, 1, 1_795_980_138_464_656_259, 2), subject);
    }

    #[test]
    fn parses_v2_with_and_without_domain() {
        let ack = AckSubject::parse("$JS.ACK.hub.AbC123.S.C.3.10.7.1700000000000000000.0").unwrap();
        assert_eq!(ack.domain, Some("hub"));
        assert_eq!(ack.account_hash, Some("AbC123"));
        assert_eq!((ack.stream, ack.consumer), ("S", "C"));
        assert_eq!(
            (ack.delivered, ack.stream_sequence, ack.consumer_sequence),
            (3, 10, 7)
        );
        assert_eq!(
            ack.to_string(),
            "$JS.ACK.hub.AbC123.S.C.3.10.7.1700000000000000000.0"
        );
        let ack = AckSubject::parse("$JS.ACK._.H.S.C.1.2.3.4.5").unwrap();
        assert_eq!(ack.domain, None);
        assert_eq!(ack.to_string(), "$JS.ACK._.H.S.C.1.2.3.4.5");
        // Extra trailing tokens are allowed in v2 (nats-server subscribes with `.>`).
        let ack = AckSubject::parse("$JS.ACK._.H.S.C.1.2.3.4.5.extra.more").unwrap();
        assert_eq!(ack.pending, 5);
        let prefix = AckSubjectPrefix::v2(None, "H", "S", "C");
        assert_eq!(prefix.reply(1, 2, 3, 4, 5), "$JS.ACK._.H.S.C.1.2.3.4.5");
    }

    #[test]
    fn rejects_malformed() {
        for subject in [
            "$JS.ACK.S.C.1.2.3.4",
            "$JS.ACK.S.C.1.2.3.4.5.6",
            "$JS.ACK.S.C.1.x.3.4.5",
            "$JS.ACK.S.C.-1.2.3.4.5",
            "$JS.NAK.S.C.1.2.3.4.5",
            "$JS.ACK..C.1.2.3.4.5",
            "",
        ] {
            assert!(AckSubject::parse(subject).is_err(), "{subject}");
        }
        assert!(AckSubject::is_ack_subject("$JS.ACK.x"));
        assert!(!AckSubject::is_ack_subject("$JS.ACK."));
    }

    #[test]
    fn ack_bodies() {
        assert_eq!(AckKind::parse(b""), AckKind::Ack);
        assert_eq!(AckKind::parse(b"+ACK"), AckKind::Ack);
        assert_eq!(AckKind::parse(b"+OK"), AckKind::Ack);
        assert_eq!(AckKind::parse(b"+ACK "), AckKind::Unknown);
        assert_eq!(AckKind::parse(b"-NAK"), AckKind::Nak { delay: None });
        assert_eq!(
            AckKind::parse(br#"-NAK {"delay": 2000000000}"#),
            AckKind::Nak {
                delay: Some(Nanos::from_secs(2))
            }
        );
        assert_eq!(
            AckKind::parse(b"-NAK 1.5s"),
            AckKind::Nak {
                delay: Some(Nanos::from_millis(1500))
            }
        );
        assert_eq!(AckKind::parse(b"-NAK {bad"), AckKind::Nak { delay: None });
        assert_eq!(AckKind::parse(b"+WPI"), AckKind::Progress);
        assert_eq!(AckKind::parse(b"+TERM"), AckKind::Term { reason: None });
        assert_eq!(
            AckKind::parse(b"+TERM  bad payload \r\n"),
            AckKind::Term {
                reason: Some("bad payload".to_string())
            }
        );
        match AckKind::parse(br#"+NXT {"batch":5,"expires":1000000000}"#) {
            AckKind::Next {
                request: Ok(request),
            } => {
                assert_eq!((request.batch, request.expires), (5, Nanos::from_secs(1)));
            }
            other => panic!("{other:?}"),
        }
        match AckKind::parse(b"+NXT") {
            AckKind::Next {
                request: Ok(request),
            } => assert_eq!(request.batch, 1),
            other => panic!("{other:?}"),
        }
        match AckKind::parse(b"+NXT 7") {
            AckKind::Next {
                request: Ok(request),
            } => assert_eq!(request.batch, 7),
            other => panic!("{other:?}"),
        }
        assert_eq!(AckKind::parse(b"nonsense"), AckKind::Unknown);
    }

    #[test]
    fn bodies_round_trip() {
        for kind in [
            AckKind::Ack,
            AckKind::Nak { delay: None },
            AckKind::Nak {
                delay: Some(Nanos::from_secs(3)),
            },
            AckKind::Progress,
            AckKind::Term { reason: None },
            AckKind::Term {
                reason: Some("done with it".to_string()),
            },
        ] {
            assert_eq!(AckKind::parse(&kind.to_body()), kind);
        }
        let next = AckKind::Next {
            request: Ok(NextRequest {
                batch: 10,
                expires: Nanos::from_secs(5),
                ..NextRequest::default()
            }),
        };
        assert_eq!(AckKind::parse(&next.to_body()), next);
    }
}
