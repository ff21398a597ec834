//! `nats-server -t`: the configuration check. A file that parses but draws a warning (an empty
//! file, an integer duration) fails it as nats-server's does; the verdict and the errors go to
//! stderr; `-t` without a file is an error.

use crate::process::run;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(15);

fn check(text: &str) -> (i32, String) {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("check.conf");
    std::fs::write(&path, text).expect("write config");
    let path_text = path.display().to_string();
    let finished = run(&["-t", "-c", &path_text], BOUND).expect("-t must exit");
    let shown = finished.stderr.replace(&path_text, "check.conf");
    (finished.code, shown)
}

#[test]
fn a_valid_file_passes() {
    let (code, stderr) = check("port: 4222\n");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.starts_with("nats-server: configuration file check.conf is valid"),
        "{stderr}"
    );
}

#[test]
fn warnings_fail_the_check() {
    for text in ["\n\n", "{\n}\n"] {
        let (code, stderr) = check(text);
        assert_eq!(code, 1, "{text:?}: {stderr}");
        assert_eq!(
            stderr, "nats-server: check.conf: config has no values or is empty\n\n",
            "{text:?}"
        );
    }
    let (code, stderr) = check("ping_interval: 5\n");
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("ping_interval should be converted to a duration"),
        "{stderr}"
    );
}

#[test]
fn no_file_is_an_error() {
    let finished = run(&["-t"], BOUND).expect("-t must exit");
    assert_eq!(finished.code, 1, "{}", finished.output());
    assert_eq!(
        finished.stderr,
        "nats-server: must specify [-c, --config] option to check configuration file syntax\n"
    );
}
