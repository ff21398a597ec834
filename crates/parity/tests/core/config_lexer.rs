//! The config lexer's errors and forms as nats-server's (`conf/lex.go`), through `nats-server
//! -t`: each broken file gets nats-server's line on stderr, word for word; the layouts its
//! lexer takes (quoted strings across lines, `\xHH` escapes, `( ... )` blocks, a stray `}` at
//! the top level, a new line before a map value) pass the check.

use crate::process::run;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(15);

/// `-t -c` on `text` written as `check.conf` (with `extra` files beside it): exit code and
/// stderr with the directory's path taken out.
fn check(text: &str, extra: &[(&str, &str)]) -> (i32, String) {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("check.conf");
    std::fs::write(&path, text).expect("write config");
    for (name, contents) in extra {
        std::fs::write(directory.path().join(name), contents).expect("write include");
    }
    let path_text = path.display().to_string();
    let finished = run(&["-t", "-c", &path_text], BOUND).expect("-t must exit");
    let directory_text = format!("{}/", directory.path().display());
    let shown = finished
        .stderr
        .replace(&path_text, "check.conf")
        .replace(&directory_text, "");
    (finished.code, shown)
}

pub(crate) fn assert_refused(text: &str, expected: &str) {
    let (code, stderr) = check(text, &[]);
    assert_eq!(code, 1, "{text:?}: {stderr}");
    assert_eq!(stderr, format!("nats-server: {expected}\n"), "{text:?}");
}

pub(crate) fn assert_valid(text: &str, extra: &[(&str, &str)]) {
    let (code, stderr) = check(text, extra);
    assert_eq!(code, 0, "{text:?}: {stderr}");
    assert!(
        stderr.starts_with("nats-server: configuration file check.conf is valid"),
        "{text:?}: {stderr}"
    );
}

#[test]
fn strings_and_escapes() {
    for (text, expected) in [
        ("port: 4222\nserver_name: \"abc\n", "Parse error on line 3: 'Unexpected EOF.'"),
        ("server_name: 'abc", "Parse error on line 1: 'Unexpected EOF.'"),
        ("\"server_name", "Parse error on line 1: 'Unexpected EOF.'"),
        (
            "server_name: \"x\\q\"\n",
            "Parse error on line 1: 'Invalid escape character 'q'. Only the following escape characters are allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.'",
        ),
        (
            "server_name: \"x\\u0041\"\n",
            "Parse error on line 1: 'Invalid escape character 'u'. Only the following escape characters are allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.'",
        ),
        (
            "server_name: \"x\\xZZ\"\n",
            "Parse error on line 1: 'Expected two hexadecimal digits after '\\x', but got 'ZZ''",
        ),
    ] {
        assert_refused(text, expected);
    }
}

#[test]
fn keys_values_and_numbers() {
    for (text, expected) in [
        (": 4222\n", "Parse error on line 1: 'Unexpected key separator ':''"),
        ("= 4222\n", "Parse error on line 1: 'Unexpected key separator '=''"),
        ("/ x\n", "Parse error on line 1: 'Unexpected EOF.'"),
        ("port: .5\n", "Parse error on line 1: 'Floats must start with a digit'"),
        (
            "port: 1.x\n",
            "Parse error on line 1: 'Floats must have a digit after the '.', but got 'x' instead.'",
        ),
        ("port: -x\n", "Parse error on line 1: 'Expected a digit but got 'x'.'"),
        (
            "max_payload: 99999999999999999999\n",
            "integer '99999999999999999999' is out of the range",
        ),
        ("port\n", "config is invalid (check.conf:2:1)"),
        ("port", "config is invalid (check.conf:1:4)"),
        (
            "port: $nope\n",
            "variable reference for 'nope' on line 1 can not be found",
        ),
        (
            "port: ]\n",
            "Parse error on line 1: 'Expected a top-level value to end with a new line, comment or EOF, but got ']' instead.'",
        ),
    ] {
        assert_refused(text, expected);
    }
}

#[test]
fn maps_and_arrays() {
    for (text, expected) in [
        (
            "cluster { name: , }\n",
            "Parse error on line 1: 'Unexpected map value terminator \",\".'",
        ),
        (
            "cluster { ] }\n",
            "Parse error on line 1: 'Unexpected array end ']' processing map.'",
        ),
        (
            "cluster { routes: [,\"nats://a:1\"] }\n",
            "Parse error on line 1: 'Unexpected array value terminator ','.'",
        ),
        (
            "cluster { routes: [\"nats://a:1\"\n",
            "Parse error on line 2: 'Expected an array value terminator \",\" or an array terminator \"]\", but got '\0' instead.'",
        ),
        ("cluster {\n  name: x\n", "Parse error on line 3: 'Unexpected EOF processing map.'"),
    ] {
        assert_refused(text, expected);
    }
}

#[test]
fn include_values() {
    for (text, expected) in [
        (
            "include [x]\n",
            "Parse error on line 1: 'Expected include value but found start of an array'",
        ),
        (
            "include {x}\n",
            "Parse error on line 1: 'Expected include value but found start of a map'",
        ),
        (
            "include 42\n",
            "Parse error on line 1: 'Expected include value but found start of a number'",
        ),
        (
            "include \n",
            "Parse error on line 2: 'Expected include value but found new line'",
        ),
        (
            "include ./nope.conf\n",
            "error parsing include file './nope.conf', open nope.conf: no such file or directory",
        ),
    ] {
        assert_refused(text, expected);
    }
}

#[test]
fn forms_nats_server_accepts() {
    assert_valid("server_name: \"a\\x41b\"\n", &[]);
    assert_valid("authorization {\n  token: \"two\nlines\"\n}\n", &[]);
    assert_valid(
        "authorization {\n  token: (\nline one\nline two\n)\n}\n",
        &[],
    );
    assert_valid("port: 4222\n}\n", &[]);
    assert_valid("authorization {\n  token: s3cret\n}}\n", &[]);
    assert_valid("authorization {\n  token:\n    s3cret\n}\n", &[]);
    assert_valid(
        "include ./sub/../other.conf\n",
        &[("other.conf", "port: 4222\n")],
    );
}
