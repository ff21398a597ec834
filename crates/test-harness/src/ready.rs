//! When a started server counts as ready: its client port answers with a client INFO for that
//! port (and the configured `server_name`), and the socket listening there is the started
//! process's own. Any INFO is not enough: while a server starts again on its old port, another
//! test process's server may hold that port, as a route or leafnode port (whose INFO has no
//! `client_ip`) or as its own client port.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::time::Duration;

/// Whether the server of process `pid` answers on `port` with its client INFO (named `name`
/// when given).
pub(crate) fn serves_clients(port: u16, pid: Option<u32>, name: Option<&str>) -> bool {
    let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).is_ok()
        && is_client_info_for(&line, port, name)
        && pid.is_none_or(|pid| listens_on(pid, port))
}

/// Whether `line` is the INFO a client gets on `port`: route and leafnode INFOs carry no
/// `client_ip`, and a client INFO names the port it was sent on (tests set no client_advertise).
fn is_client_info_for(line: &str, port: u16, name: Option<&str>) -> bool {
    let Some(json) = line.strip_prefix("INFO ") else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(json.trim()).is_ok_and(|info| {
        info.get("client_ip").is_some()
            && info["port"].as_u64() == Some(u64::from(port))
            && name.is_none_or(|name| info["server_name"].as_str() == Some(name))
    })
}

/// Whether process `pid` holds the socket listening on TCP `port` (Linux: `/proc/net/tcp*`
/// gives the listening socket's inode, `/proc/PID/fd` the process's sockets). True where
/// `/proc` does not tell.
fn listens_on(pid: u32, port: u16) -> bool {
    let mut inodes = Vec::new();
    let mut readable = false;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        readable = true;
        inodes.extend(listening_inodes(&text, port));
    }
    if !readable {
        return true;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let target = target.to_string_lossy();
            inodes
                .iter()
                .any(|inode| target == format!("socket:[{inode}]"))
        })
    })
}

/// The inodes of the sockets in a `/proc/net/tcp` table listening (state `0A`) on `port`.
fn listening_inodes(table: &str, port: u16) -> Vec<String> {
    let wanted = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|row| {
            let fields: Vec<&str> = row.split_whitespace().collect();
            let local = fields.get(1)?;
            (local.ends_with(&wanted) && fields.get(3) == Some(&"0A"))
                .then(|| fields.get(9).map(|inode| inode.to_string()))
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{is_client_info_for, listening_inodes, listens_on};

    #[test]
    fn only_a_client_info_for_the_port_counts() {
        let client = r#"INFO {"server_id":"N1","server_name":"n1","port":4222,"client_id":5,"client_ip":"127.0.0.1","cluster":"c"} "#;
        assert!(is_client_info_for(&format!("{client}\r\n"), 4222, None));
        assert!(is_client_info_for(client, 4222, Some("n1")));
        assert!(!is_client_info_for(client, 4222, Some("n2")));
        assert!(!is_client_info_for(client, 4223, None));
        let route = r#"INFO {"server_id":"N1","port":4222,"nonce":"x","cluster":"c","lnoc":true}"#;
        assert!(!is_client_info_for(route, 4222, None));
        let leaf = r#"INFO {"server_id":"N1","port":4222,"client_id":7,"leafnode_urls":[]}"#;
        assert!(!is_client_info_for(leaf, 4222, None));
        assert!(!is_client_info_for("-ERR 'x'\r\n", 4222, None));
    }

    #[test]
    fn a_listening_socket_is_found_in_its_process() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1\n   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1\n";
        assert_eq!(listening_inodes(table, 8080), ["4242"]);
        assert!(listening_inodes(table, 8081).is_empty());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(listens_on(std::process::id(), port));
        drop(listener);
        if std::path::Path::new("/proc/net/tcp").exists() {
            assert!(!listens_on(std::process::id(), port));
        }
    }
}
