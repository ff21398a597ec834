//! Requests nobody serves get the `503` no-responders status at once, as with nats-server:
//! `DIRECT.GET` of a stream that does not exist or does not allow direct gets, and
//! `CONSUMER.MSG.NEXT` of a consumer that does not exist. Runs against nats-server too.

use test_harness::client::{api, connect, publish_raw, TIMEOUT};
use test_harness::TestServer;

async fn request_kind(
    client: &async_nats::Client,
    subject: &str,
    body: &str,
) -> Result<async_nats::Message, async_nats::RequestErrorKind> {
    tokio::time::timeout(
        TIMEOUT,
        client.request(subject.to_string(), body.to_string().into()),
    )
    .await
    .expect("an answer, not a client timeout")
    .map_err(|error| error.kind())
}

#[tokio::test]
async fn unserved_requests_get_no_responders() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.PLAIN",
        r#"{"name":"PLAIN","subjects":["plain"]}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.DIRECT",
        r#"{"name":"DIRECT","subjects":["direct"],"allow_direct":true}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    publish_raw(&client, "plain", &[], "p").await;
    publish_raw(&client, "direct", &[], "d").await;

    for (subject, body) in [
        ("$JS.API.DIRECT.GET.MISSING", r#"{"seq":1}"#),
        ("$JS.API.DIRECT.GET.MISSING.some.subject", ""),
        ("$JS.API.DIRECT.GET.PLAIN", r#"{"seq":1}"#),
        ("$JS.API.DIRECT.GET.PLAIN.plain", ""),
        ("$JS.API.CONSUMER.MSG.NEXT.PLAIN.NOBODY", r#"{"batch":1}"#),
    ] {
        let answer = request_kind(&client, subject, body).await;
        assert!(
            matches!(answer, Err(async_nats::RequestErrorKind::NoResponders)),
            "{subject}: {:?}",
            answer.map(|message| message.payload)
        );
    }

    // A stream that allows direct gets answers both forms.
    let answer = request_kind(&client, "$JS.API.DIRECT.GET.DIRECT", r#"{"seq":1}"#)
        .await
        .expect("direct get answer");
    assert_eq!(&answer.payload[..], b"d");
    let answer = request_kind(&client, "$JS.API.DIRECT.GET.DIRECT.direct", "")
        .await
        .expect("last-by-subject answer");
    assert_eq!(&answer.payload[..], b"d");

    // The rest of the API still answers.
    let info = api(&client, "$JS.API.INFO", "").await;
    assert_eq!(info["streams"], 2, "{info}");
    let names = api(&client, "$JS.API.CONSUMER.NAMES.PLAIN", "").await;
    assert_eq!(names["total"], 0, "{names}");
}
