//! `jetstream` inside an account: the forms nats-server refuses, refused with its words (read
//! from nats-server 2.15.1 `-t` with the same files), and a limits block it accepts.

use crate::process::run;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(15);

fn check(account_jetstream: &str) -> (i32, String) {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("check.conf");
    let text = format!(
        "jetstream: enabled\naccounts {{\n  A {{\n    users: [{{user: a, password: a}}]\n    {account_jetstream}\n  }}\n}}\n"
    );
    std::fs::write(&path, text).expect("write config");
    let path_text = path.display().to_string();
    let finished = run(&["-t", "-c", &path_text], BOUND).expect("-t must exit");
    let shown = finished.stderr.replace(&path_text, "check.conf");
    (finished.code, shown)
}

#[test]
fn wrong_account_jetstream_forms_are_refused_in_nats_server_words() {
    for (form, expected) in [
        (
            "jetstream: 5",
            "nats-server: Expected map, bool or string to define JetStream, got int64",
        ),
        (
            "jetstream: maybe",
            "nats-server: Expected 'enabled' or 'disabled' for string value, got 'maybe'",
        ),
        (
            r#"jetstream { max_mem: "lots" }"#,
            r#"nats-server: check.conf:5:17: Expected a parseable size for "max_mem", got lots"#,
        ),
        (
            "jetstream { max_bytes_required: 5 }",
            r#"nats-server: check.conf:5:17: Expected a parseable bool for "max_bytes_required", got 5"#,
        ),
        (
            "jetstream { max_streams: 1.5 }",
            r#"nats-server: check.conf:5:17: Expected a parseable size for "max_streams", got 1.5"#,
        ),
        (
            "jetstream { limits: 5 }",
            r#"nats-server: check.conf:5:17: unknown field "limits""#,
        ),
    ] {
        let (code, stderr) = check(form);
        assert_eq!(code, 1, "{form}: {stderr}");
        assert_eq!(stderr.trim_end(), expected, "{form}");
    }
}

#[test]
fn an_account_limits_block_is_accepted() {
    let (code, stderr) = check(
        "jetstream { max_mem: 1G, max_file: 10G, max_streams: 10, max_consumers: 100, \
         mem_max_stream_bytes: 1K, store_max_stream_bytes: 2K, max_ack_pending: 5, max_bytes: true }",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("is valid"), "{stderr}");
}
