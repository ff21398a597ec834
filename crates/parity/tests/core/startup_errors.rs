//! Start-up failures in nats-server's words, as scripts and tools read them: a config that does
//! not parse (`nats-server: Parse error on line N: '...'` on stderr), a port in use and a store
//! directory that is a file (`[FTL]` log lines); each exits with status 1.

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
fn a_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port().to_string();
    let finished =
        run(&["-a", "127.0.0.1", "-p", &port], BOUND).expect("a taken port must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    let expected = format!(
        "[FTL] Error listening on port: 127.0.0.1:{port}, \"listen tcp 127.0.0.1:{port}: bind: address already in use\""
    );
    assert!(
        finished.output().contains(&expected),
        "expected {expected:?} in:\n{}",
        finished.output()
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
