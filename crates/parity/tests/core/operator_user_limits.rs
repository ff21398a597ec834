//! Operator mode: the user and account limit claims nats-server reads at CONNECT beyond
//! `subs` and `payload` (those are in `operator_jwt.rs`): the `data` limit, which nats-server
//! carries in its JWTs but never enforces, and `times` windows read on the wall clock of the
//! user's `times_location` (nats-server's `validateTimes`). Passes against nats-server too.

use super::jwt_builder::{account_jwt, user_jwt, wall_clock, Trust};
use super::operator_jwt::{assert_refused, connect, raw_connect, Setup};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;
use test_harness::TestServer;

const WAIT: Duration = Duration::from_secs(10);

/// `data: 16` on the account and on the user: messages far larger still pass, both ways, as
/// nats-server (client.go applies only `subs` and `payload` of the user and account limits).
#[tokio::test]
async fn data_limits_are_carried_but_not_enforced() {
    let trust = Trust::new();
    let account = nkeys::KeyPair::new_account();
    let account_jwt = account_jwt(
        &account,
        &trust.operator,
        json!({"limits": {"subs": -1, "data": 16, "payload": -1, "imports": -1, "exports": -1,
                          "wildcards": true, "conn": -1, "leaf": -1}}),
    );
    let user = nkeys::KeyPair::new_user();
    let jwt = user_jwt(&user, &account, None, json!({"data": 16}));
    let server = TestServer::with_config(&trust.config(&[(&account, &account_jwt)]));
    let client = connect(&server, &jwt, &user).await;
    let mut subscription = client.subscribe("data.limit").await.unwrap();
    // Answered after the SUB is taken (a flush can be answered by the handshake's PONG).
    let reply = tokio::time::timeout(WAIT, client.request("$SYS.REQ.USER.INFO", "".into()))
        .await
        .expect("answer in time")
        .expect("an answer");
    let info: serde_json::Value = serde_json::from_slice(&reply.payload).expect("json");
    assert_eq!(info["data"]["user"], user.public_key(), "{info}");
    let payload = vec![b'x'; 4096];
    for _ in 0..8 {
        client
            .publish("data.limit", payload.clone().into())
            .await
            .unwrap();
    }
    for round in 0..8 {
        let message = tokio::time::timeout(WAIT, subscription.next())
            .await
            .unwrap_or_else(|_| panic!("message {round} in time"))
            .expect("message");
        assert_eq!(message.payload.len(), 4096);
    }
}

/// A user allowed the hour around now on `offset_hours`' wall clock, read in `location`.
fn windowed_user(setup: &Setup, offset_hours: i64, location: &str) -> String {
    let window =
        json!({"start": wall_clock(offset_hours, -1800), "end": wall_clock(offset_hours, 1800)});
    user_jwt(
        &setup.user,
        &setup.account,
        None,
        json!({"times": [window], "times_location": location}),
    )
}

/// Tokyo is nine hours ahead of UTC all year. The hour around now on Tokyo's clock admits a
/// user whose `times_location` is `Asia/Tokyo` and refuses one reading the same window in UTC
/// (nine hours away); the hour around now in UTC admits the UTC user and refuses the Tokyo one;
/// a location no zone database knows refuses the user (nats-jwt's validation).
#[test]
fn times_are_read_in_the_users_location() {
    let setup = Setup::new();
    let server = setup.server();
    for (offset, location, admitted) in [
        (9, "Asia/Tokyo", true),
        (9, "UTC", false),
        (0, "UTC", true),
        (0, "Asia/Tokyo", false),
        (0, "Mars/Olympus_Mons", false),
    ] {
        let jwt = windowed_user(&setup, offset, location);
        if admitted {
            let mut client = raw_connect(&server, &jwt, Some(&setup.user));
            assert_eq!(
                client.read_line().as_deref(),
                Some("PONG"),
                "window at UTC+{offset} read in {location}"
            );
        } else {
            assert_refused(&server, &jwt, Some(&setup.user));
        }
    }
}
