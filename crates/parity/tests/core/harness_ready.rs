//! The harness counts a started server as ready only when the server it started serves
//! clients on its port: another server holding that port (as its route port or as its own
//! client port, as a concurrent test process's server may after a restart frees it) is not
//! taken for it. Runs on ours and nats-server alike.

use std::panic::{catch_unwind, AssertUnwindSafe};
use test_harness::{free_port, ServerOptions, TestServer};

/// Starting a server on `port` fails (it cannot bind; the harness must not report ready).
fn start_on_taken_port_fails(port: u16) {
    let started = catch_unwind(AssertUnwindSafe(|| {
        TestServer::start(ServerOptions {
            port: Some(port),
            ..Default::default()
        })
    }));
    let message = match started {
        Ok(server) => panic!("ready on a port held by another server:\n{}", server.log()),
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default(),
    };
    assert!(
        message.contains("server exited during start"),
        "unexpected failure: {message}"
    );
}

#[test]
fn another_servers_route_port_is_not_taken_for_ready() {
    let route_port = free_port();
    let _holder = TestServer::with_config(&format!(
        "server_name: holder\ncluster {{ name: c, listen: \"127.0.0.1:{route_port}\" }}\n"
    ));
    start_on_taken_port_fails(route_port);
}

#[test]
fn another_servers_client_port_is_not_taken_for_ready() {
    let holder = TestServer::core();
    start_on_taken_port_fails(holder.port);
}
