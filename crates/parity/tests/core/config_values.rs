//! Config values of the wrong kind, separators and stray characters, through `nats-server -t`:
//! each refused file gets nats-server's line(s) on stderr word for word (Go's type-assertion
//! text, its duration errors, its lexer's view of `;`, `,` and a lone `/`), and the forms
//! nats-server accepts pass. Every expected text was read off nats-server 2.15.1.

use crate::config_lexer::{assert_refused, assert_valid};

#[test]
fn values_of_the_wrong_kind() {
    for (text, expected) in [
        (
            "debug: \"true\"\n",
            "check.conf:1:0: interface conversion: interface {} is string, not bool\n",
        ),
        (
            "server_name: 123\n",
            "check.conf:1:0: interface conversion: interface {} is int64, not string\n",
        ),
        (
            "max_connections: {a: 1}\n",
            "check.conf:1:0: interface conversion: interface {} is map[string]interface {}, not int64\n",
        ),
        (
            "listen: true\n",
            "check.conf:1:0: expected port or host:port, got bool\n",
        ),
        (
            "system_account: 123\n",
            "check.conf:1:0: system account name must be a string\n",
        ),
        (
            "server_tags: 5\n",
            "check.conf:1:0: error parsing tags: unsupported type int64\n",
        ),
        (
            "cluster { port: -1, routes: 123 }\n",
            "check.conf:1:20: interface conversion: interface {} is int64, not []interface {}\n",
        ),
        (
            "cluster { port: -1, compression: 5 }\n",
            "check.conf:1:20: field \"compression\" should be a boolean or a structure, got int64\n",
        ),
        (
            "cluster { port: -1, accounts: 5 }\n",
            "check.conf:1:20: error parsing accounts: unsupported type int64\n",
        ),
        (
            "jetstream { strict: \"true\" }\n",
            "check.conf:1:12: Expected 'true' or 'false' for bool value, got 'true'\n",
        ),
        (
            "jetstream { store_dir: 123 }\n",
            "check.conf:1:0: interface conversion: interface {} is int64, not string\n",
        ),
        (
            "listen: \"localhost\"\n",
            "check.conf:1:0: could not parse address string \"localhost\"\n",
        ),
        (
            "jetstream: \"on\"\n",
            "check.conf:1:0: Expected 'enabled' or 'disabled' for string value, got 'on'\n",
        ),
        (
            "jetstream: 5\n",
            "check.conf:1:0: Expected map, bool or string to define JetStream, got int64\n",
        ),
        (
            "jetstream { max_buffered_msgs: true }\n",
            "check.conf:1:12: Expected a parseable size for \"max_buffered_msgs\", got true\n",
        ),
        (
            "jetstream { max_ha_assets: 1 }\n",
            "check.conf:1:12: unknown field \"max_ha_assets\"\n",
        ),
        (
            "accounts { A: 5 }\n",
            "check.conf:1:11: Expected map entries for accounts\n",
        ),
        (
            "tls: 5\n",
            "check.conf:1:0: interface conversion: interface {} is int64, not map[string]interface {}\n",
        ),
        (
            "tls { min_version: 123 }\n",
            "check.conf:1:6: error parsing tls config: 'min_version' wrong type: 123\n",
        ),
        (
            "websocket { port: -1, no_tls: true, allowed_origins: 5 }\n",
            "check.conf:1:36: error parsing allowed origins: unsupported type int64\n",
        ),
        // Keys rnats does not implement are still checked for their kind.
        (
            "lame_duck_duration: 5\n",
            "check.conf:1:0: interface conversion: interface {} is int64, not string\n",
        ),
        (
            "disable_sublist_cache: 5\n",
            "check.conf:1:0: interface conversion: interface {} is int64, not bool\n",
        ),
        (
            "authorization { users: [ {user: a, password: b}, {user: a, password: c} ] }\n",
            "check.conf:1:0: Duplicate user \"a\" detected\n",
        ),
    ] {
        assert_refused(text, expected);
    }
}

#[test]
fn durations() {
    for (text, expected) in [
        (
            "ping_interval: \"bad\"\n",
            "check.conf:1:0: error parsing ping_interval: time: invalid duration \"bad\"\n",
        ),
        (
            "write_deadline: \"5x\"\n",
            "check.conf:1:0: error parsing write_deadline: time: unknown unit \"x\" in duration \"5x\"\n",
        ),
        // The integer-duration warning comes first, then the type error.
        (
            "ping_interval: true\n",
            "check.conf:1:0: invalid use of field \"ping_interval\": ping_interval should be converted to a duration\ncheck.conf:1:0: interface conversion: interface {} is bool, not int64\n",
        ),
        (
            "jetstream { sync_interval: \"x\" }\n",
            "check.conf:1:12: error parsing sync_interval: time: invalid duration \"x\"\n",
        ),
        (
            "jetstream { sync_interval: 5 }\n",
            "check.conf:1:12: invalid use of field \"sync_interval\": sync_interval should be converted to a duration\n",
        ),
        (
            "authorization { timeout: \"x\" }\n",
            "check.conf:1:16: error parsing authorization config, 'timeout' time: invalid duration \"x\"\n",
        ),
        (
            "authorization { timeout: true }\n",
            "check.conf:1:16: error parsing authorization config, 'timeout' wrong type\n",
        ),
    ] {
        assert_refused(text, expected);
    }
}

#[test]
fn separators_and_stray_characters() {
    for (text, expected) in [
        (";port: 4222\n", "check.conf:1:0: unknown field \";port\"\n"),
        ("port: 4222;;", "config is invalid (check.conf:1:12)"),
        (
            "authorization { user: a ;; password: b }\n",
            "Parse error on line 1: 'Expected a map value terminator \",\" or a map terminator \"}\", but got 'b' instead.'",
        ),
        (
            "a { b { c: 1",
            "Parse error on line 1: 'Expected a map value terminator \",\" or a map terminator \"}\", but got '\0' instead.'",
        ),
        (
            "{ port: 4222",
            "Parse error on line 1: 'Expected a block-level value to end with a new line, comment or EOF, but got '\0' instead.'",
        ),
        (
            "port: 1 /x\n",
            "Parse error on line 1: 'Expected a top-level value to end with a new line, comment or EOF, but got 'x' instead.'",
        ),
        (
            "port: 4222 /* x */\n",
            "Parse error on line 1: 'Expected a top-level value to end with a new line, comment or EOF, but got '*' instead.'",
        ),
        (
            "authorization { user: a /x }\n",
            "check.conf:1:25: unknown field \"x\"\n",
        ),
    ] {
        assert_refused(text, expected);
    }
}

#[test]
fn forms_nats_server_accepts() {
    for text in [
        "listen: 4222\n",
        "cluster { listen: 6222 }\n",
        "websocket { listen: 8080, no_tls: true }\n",
        "server_tags: [Az, \"b:c\"]\n",
        "server_tags: \"a b\"\n",
        "cluster { port: -1, compression: off }\n",
        "cluster { port: -1, accounts: A }\n",
        "{ port: 4222\n",
        "{ port: 4222,",
        "port: 1 /",
        "port: 4222;\ndebug: true;\n",
        "authorization { user: a, }\n",
    ] {
        assert_valid(text, &[]);
    }
}
