//! Start-up failures in nats-server's words, as scripts and tools read them: a config that does
//! not parse (`nats-server: Parse error on line N: '...'` on stderr) or does not exist (Go's
//! `open <path>: no such file or directory`) or has an unknown field (with nats-server's
//! positions), a port in use, a store directory that is a file, a
//! monitoring, cluster or websocket port in use or past 65535 (refused, not wrapped), a store
//! directory that cannot be made (naming the outermost missing directory), a pid file that cannot be written (`[FTL]` log lines,
//! written once), a log file that cannot be opened (Go's standard logger); each exits with
//! status 1. A ports file that cannot be written is only an error in the log: the server runs
//! on.

use crate::process::run;
use std::net::TcpListener;
use std::time::Duration;
use test_harness::free_port;

const BOUND: Duration = Duration::from_secs(15);

#[test]
fn a_config_that_does_not_parse() {
    let directory = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "server_name: my server\n",
            "nats-server: Parse error on line 1: 'Expected a top-level value to end with a new line, comment or EOF, but got 's' instead.'\n",
        ),
        (
            "a {\n b: 1\n",
            "nats-server: Parse error on line 3: 'Unexpected EOF processing map.'\n",
        ),
        (
            "port = \n",
            "nats-server: Parse error on line 2: 'Expected value but found new line'\n",
        ),
        (
            "x = [1 2]\n",
            "nats-server: Parse error on line 1: 'Expected an array value terminator \",\" or an array terminator \"]\", but got '2' instead.'\n",
        ),
    ];
    for (index, (text, expected)) in cases.into_iter().enumerate() {
        let path = directory.path().join(format!("bad{index}.conf"));
        std::fs::write(&path, text).expect("write config");
        let path_text = path.display().to_string();
        let finished = run(&["-c", &path_text], BOUND).expect("a bad config must not start");
        assert_eq!(finished.code, 1, "{text:?}: {}", finished.output());
        assert_eq!(finished.stderr, expected, "{text:?}");
    }
}

#[test]
fn a_config_file_or_include_that_does_not_exist() {
    let directory = tempfile::tempdir().expect("tempdir");
    let missing = directory.path().join("missing.conf").display().to_string();
    let finished = run(&["-c", &missing], BOUND).expect("a missing config must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    assert_eq!(
        finished.stderr,
        format!("nats-server: open {missing}: no such file or directory\n")
    );
    let including = directory.path().join("including.conf");
    std::fs::write(&including, "include \"missing.conf\"\n").expect("write config");
    let including_text = including.display().to_string();
    let finished = run(&["-c", &including_text], BOUND).expect("a missing include must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    assert_eq!(
        finished.stderr,
        format!(
            "nats-server: error parsing include file 'missing.conf', open {missing}: no such file or directory\n"
        )
    );
}

#[test]
fn an_unknown_field_with_its_position() {
    let directory = tempfile::tempdir().expect("tempdir");
    // nats-server counts columns from 0 on the first line and from 1 on the others.
    let cases = [
        ("bogus: 1\n", "1:0"),
        ("port: -1, bogus: 2\n", "1:10"),
        ("port: -1\n  bogus: 1\n", "2:3"),
    ];
    for (index, (text, position)) in cases.into_iter().enumerate() {
        let path = directory.path().join(format!("unknown{index}.conf"));
        std::fs::write(&path, text).expect("write config");
        let path_text = path.display().to_string();
        let finished = run(&["-c", &path_text], BOUND).expect("an unknown field must not start");
        assert_eq!(finished.code, 1, "{text:?}: {}", finished.output());
        assert_eq!(
            finished.stderr,
            format!("nats-server: {path_text}:{position}: unknown field \"bogus\"\n\n"),
            "{text:?}"
        );
    }
}

#[test]
fn a_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port().to_string();
    let finished =
        run(&["-a", "127.0.0.1", "-p", &port], BOUND).expect("a taken port must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    let expected = format!(
        "Error listening on port: 127.0.0.1:{port}, \"listen tcp 127.0.0.1:{port}: bind: address already in use\""
    );
    assert_fatal_once(&finished, &expected);
}

/// The output holds `[FTL] <expected>` and the text nowhere else (no second copy on stderr).
fn assert_fatal_once(finished: &crate::process::Finished, expected: &str) {
    let output = finished.output();
    assert!(
        output.contains(&format!("[FTL] {expected}")),
        "expected [FTL] {expected:?} in:\n{output}"
    );
    assert_eq!(output.matches(expected).count(), 1, "{output}");
}

#[test]
fn a_monitoring_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let monitor = taken.local_addr().expect("address").port().to_string();
    let port = free_port().to_string();
    let finished = run(&["-a", "127.0.0.1", "-p", &port, "-m", &monitor], BOUND)
        .expect("a taken monitoring port must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    let expected = format!(
        "Can't start monitoring: can't listen to the monitor port: listen tcp 127.0.0.1:{monitor}: bind: address already in use"
    );
    assert_fatal_once(&finished, &expected);
}

#[test]
fn a_cluster_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let cluster = taken.local_addr().expect("address").port();
    let port = free_port().to_string();
    let url = format!("nats://127.0.0.1:{cluster}");
    let finished = run(
        &[
            "-a",
            "127.0.0.1",
            "-p",
            &port,
            "--cluster",
            &url,
            "--cluster_name",
            "c",
        ],
        BOUND,
    )
    .expect("a taken cluster port must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    let expected = format!(
        "Error listening on router port: {cluster} - listen tcp 127.0.0.1:{cluster}: bind: address already in use"
    );
    assert_fatal_once(&finished, &expected);
}

#[test]
fn a_log_file_that_cannot_be_opened() {
    let directory = tempfile::tempdir().expect("tempdir");
    let log_file = directory.path().join("missing").join("server.log");
    let log_text = log_file.display().to_string();
    let port = free_port().to_string();
    let finished = run(&["-a", "127.0.0.1", "-p", &port, "-l", &log_text], BOUND)
        .expect("an unopenable log file must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    // Go's standard logger: `2026/12/01 21:53:48 error opening file: open <path>: ...`.
    let pattern = regex::Regex::new(&format!(
        r"^\d{{4}}/\d{{2}}/\d{{2}} \d{{2}}:\d{{2}}:\d{{2}} error opening file: open {}: no such file or directory\n$",
        regex::escape(&log_text)
    ))
    .expect("pattern");
    assert!(pattern.is_match(&finished.stderr), "{:?}", finished.stderr);
}

#[test]
fn a_pid_file_that_cannot_be_written() {
    let directory = tempfile::tempdir().expect("tempdir");
    let pid_file = directory.path().join("missing").join("server.pid");
    let pid_text = pid_file.display().to_string();
    let port = free_port().to_string();
    let finished = run(&["-a", "127.0.0.1", "-p", &port, "-P", &pid_text], BOUND)
        .expect("an unwritable pid file must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    let expected = format!("Could not write pidfile: open {pid_text}: no such file or directory");
    assert_fatal_once(&finished, &expected);
}

#[test]
fn a_ports_file_that_cannot_be_written_is_not_fatal() {
    let directory = tempfile::tempdir().expect("tempdir");
    let missing = directory.path().join("missing").display().to_string();
    let port = free_port().to_string();
    let finished = run(
        &["-a", "127.0.0.1", "-p", &port, "--ports_file_dir", &missing],
        Duration::from_secs(3),
    );
    assert!(
        finished.is_none(),
        "the server stopped: {}",
        finished
            .map(|finished| finished.output())
            .unwrap_or_default()
    );
}

#[test]
fn a_store_directory_that_is_a_file() {
    let directory = tempfile::tempdir().expect("tempdir");
    let file = directory.path().join("not-a-directory");
    std::fs::write(&file, "x").expect("write file");
    let file_text = file.display().to_string();
    let port = free_port().to_string();
    let finished = run(
        &["-a", "127.0.0.1", "-p", &port, "-js", "-sd", &file_text],
        BOUND,
    )
    .expect("a file as store dir must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    assert!(
        finished
            .output()
            .contains("[FTL] Can't start JetStream: storage directory is not a directory"),
        "{}",
        finished.output()
    );
}

#[test]
fn ports_past_65535_are_refused_not_wrapped() {
    let directory = tempfile::tempdir().expect("tempdir");
    let websocket = directory.path().join("ws.conf");
    std::fs::write(&websocket, "websocket { port: 70000, no_tls: true }\n").expect("write");
    let websocket_text = websocket.display().to_string();
    let port = free_port().to_string();
    let invalid = "listen tcp: address 70000: invalid port";
    for (args, expected) in [
        (
            vec!["-a", "127.0.0.1", "-p", "70000"],
            format!("Error listening on port: 127.0.0.1:70000, \"{invalid}\""),
        ),
        (
            vec!["-a", "127.0.0.1", "-p", &port, "-m", "70000"],
            format!("Can't start monitoring: can't listen to the monitor port: {invalid}"),
        ),
        (
            vec![
                "-a",
                "127.0.0.1",
                "-p",
                &port,
                "--cluster",
                "nats://127.0.0.1:70000",
                "--cluster_name",
                "c",
            ],
            format!("Error listening on router port: 70000 - {invalid}"),
        ),
        (
            vec!["-a", "127.0.0.1", "-p", &port, "-c", &websocket_text],
            format!("Unable to listen for websocket connections: {invalid}"),
        ),
    ] {
        let finished = run(&args, BOUND).expect("an invalid port must not start");
        assert_eq!(finished.code, 1, "{args:?}: {}", finished.output());
        assert_fatal_once(&finished, &expected);
    }
}

#[test]
fn a_websocket_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let websocket = taken.local_addr().expect("address").port();
    let directory = tempfile::tempdir().expect("tempdir");
    let config = directory.path().join("ws.conf");
    std::fs::write(
        &config,
        format!("websocket {{ host: 127.0.0.1, port: {websocket}, no_tls: true }}\n"),
    )
    .expect("write");
    let config_text = config.display().to_string();
    let port = free_port().to_string();
    let finished = run(&["-a", "127.0.0.1", "-p", &port, "-c", &config_text], BOUND)
        .expect("a taken websocket port must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    let expected = format!(
        "Unable to listen for websocket connections: listen tcp 127.0.0.1:{websocket}: bind: address already in use"
    );
    assert_fatal_once(&finished, &expected);
}

#[test]
fn a_store_directory_that_cannot_be_made_names_the_outermost_missing_directory() {
    // Nothing can be made under /proc: the first mkdir (of /proc/rnats-parity) fails.
    let port = free_port().to_string();
    let finished = run(
        &[
            "-a",
            "127.0.0.1",
            "-p",
            &port,
            "-js",
            "-sd",
            "/proc/rnats-parity/a/b",
        ],
        BOUND,
    )
    .expect("an impossible store directory must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    assert_fatal_once(
        &finished,
        "Can't start JetStream: could not create storage directory - mkdir /proc/rnats-parity: no such file or directory",
    );
}
