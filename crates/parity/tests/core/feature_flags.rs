//! The `feature_flags { }` config block as nats-server 2.15.1 reads it: a boolean per name,
//! the configured values shown in `/varz` `feature_flags` and in the `server` object of `$SYS`
//! answers, a name it does not know logged as unsupported and left out, the start-up lines,
//! a value of another type refused with nats-server's error and position, and a reload that
//! changes the block refused. rnats has none of the flags' behaviours (docs/parity.md): only
//! the reporting is compared. Passes against the real nats-server too (`NATS_SERVER_BIN`).

use super::reload::{await_log, rewrite_and_hangup};
use super::system_account::{connect, request_json};
use crate::process::run;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::monitoring::get_json;
use test_harness::{ServerOptions, TestServer};

const BOUND: Duration = Duration::from_secs(15);

fn config(ack_v2: bool) -> String {
    format!(
        r#"
accounts {{
  SYS {{ users: [ {{ user: sys, password: sys }} ] }}
}}
system_account: SYS
feature_flags {{
  js_ack_fc_v2: {ack_v2}
  js_raft_delete_range: false
  no_such_flag: true
}}
"#
    )
}

#[tokio::test]
async fn configured_flags_show_in_varz_and_sys_answers() {
    let server = TestServer::start(ServerOptions {
        config: Some(config(true)),
        monitoring: true,
        ..Default::default()
    });
    // nats-server 2.15.1's four flags with the configured values; the unknown one left out.
    let expected = json!({
        "js_ack_fc_v2": true,
        "js_api_reply_v2": false,
        "js_raft_delete_range": false,
        "js_snapshot_sources": false,
    });
    let varz = get_json(&server, "/varz");
    assert_eq!(varz["feature_flags"], expected, "{varz}");

    let system = connect(&server, "sys").await;
    let answer: Value = request_json(&system, "$SYS.REQ.SERVER.PING.VARZ", "").await;
    assert_eq!(answer["server"]["feature_flags"], expected, "{answer}");

    // The start-up lines: nats-server's default for js_raft_delete_range is on (so `false`
    // is an opt-out there), ours is off (docs/parity.md).
    let log = server.log();
    let delete_range = if test_harness::is_reference() {
        "opt-out"
    } else {
        "disabled"
    };
    for line in [
        "  Feature flags:".to_string(),
        format!("    Configured:    js_ack_fc_v2 (opt-in), js_raft_delete_range ({delete_range})"),
        "    Unsupported:   no_such_flag".to_string(),
    ] {
        assert!(
            log.contains(&format!("] {line}\n")),
            "{line:?} not in {log}"
        );
    }

    // The block cannot be reloaded; the running flags stay.
    rewrite_and_hangup(&server, &config(false));
    await_log(
        &server,
        "config reload not supported for FeatureFlags: \
         old=map[js_ack_fc_v2:true js_raft_delete_range:false no_such_flag:true], \
         new=map[js_ack_fc_v2:false js_raft_delete_range:false no_such_flag:true]",
        1,
    );
    let varz = get_json(&server, "/varz");
    assert_eq!(varz["feature_flags"], expected, "{varz}");
}

#[test]
fn a_flag_that_is_not_a_boolean_is_refused() {
    let directory = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "feature_flags {\n  js_ack_fc_v2: 1\n}\n",
            "2:3: error parsing feature flag \"js_ack_fc_v2\": expected bool, got int64",
        ),
        (
            "port: -1\nfeature_flags: {js_ack_fc_v2: \"true\"}\n",
            "2:17: error parsing feature flag \"js_ack_fc_v2\": expected bool, got string",
        ),
        (
            "port: -1\nfeature_flags: true\n",
            "2:1: error parsing feature flags: unsupported type bool",
        ),
    ];
    for (index, (text, expected)) in cases.into_iter().enumerate() {
        let path = directory.path().join(format!("flags{index}.conf"));
        std::fs::write(&path, text).expect("write config");
        let path_text = path.display().to_string();
        let finished = run(&["-c", &path_text], BOUND).expect("a bad flag must not start");
        assert_eq!(finished.code, 1, "{text:?}: {}", finished.output());
        assert_eq!(
            finished.stderr,
            format!("nats-server: {path_text}:{expected}\n\n"),
            "{text:?}"
        );
    }
}
