//! `nats-server --signal <command>[=<pid or pid file>]`: send a signal to a running server and
//! exit, as nats-server does (its `processSignal`/`ProcessSignal`): `stop` SIGKILL, `quit`
//! SIGINT, `term` SIGTERM, `reopen` SIGUSR1, `reload` SIGHUP, `ldm` SIGUSR2. Without a pid every
//! `nats-server` process `pgrep` finds (but this one) is a candidate, and there must be exactly
//! one; a trailing `*` signals every match whose pid starts with the digits. Errors are worded
//! as nats-server's.
//!
//! Called by `main` before the config file is read; never starts a server. What a signal then
//! does to the running server is the server's business.

use std::path::Path;

const PROCESS_NAME: &str = "nats-server";

/// The signal number of a command.
fn command_signal(command: &str) -> Result<libc::c_int, String> {
    Ok(match command {
        "stop" => libc::SIGKILL,
        "quit" => libc::SIGINT,
        "reopen" => libc::SIGUSR1,
        "reload" => libc::SIGHUP,
        "ldm" => libc::SIGUSR2,
        "term" => libc::SIGTERM,
        _ => return Err(format!("unknown signal {command:?}")),
    })
}

/// nats-server's `maybeReadPidFile`: the text of the file if `text` names one, else `text`.
fn pid_or_pid_file(text: &str) -> String {
    match std::fs::read_to_string(Path::new(text)) {
        Ok(contents) => contents,
        Err(_) => text.to_string(),
    }
}

/// The pids `pgrep nats-server` lists, without this process.
fn running_servers() -> Result<Vec<i64>, String> {
    let unresolved = || "unable to resolve pid, try providing one".to_string();
    let output = std::process::Command::new("pgrep")
        .arg(PROCESS_NAME)
        .output()
        .map_err(|_| unresolved())?;
    // pgrep exits 1 when nothing matched: no pids, not an error.
    if !output.status.success() && output.status.code() != Some(1) {
        return Err(unresolved());
    }
    let own = i64::from(std::process::id());
    let mut pids = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).split('\n') {
        if line.is_empty() {
            continue;
        }
        let pid: i64 = line.parse().map_err(|_| unresolved())?;
        if pid != own {
            pids.push(pid);
        }
    }
    Ok(pids)
}

/// Handle the flag's value (`ldm`, `reload=1234`, `quit=/var/run/nats.pid`); `Ok` means the
/// signal was sent and the caller exits 0.
pub fn process(value: &str) -> Result<(), String> {
    let parts: Vec<&str> = value.split('=').collect();
    let pid_expression = match parts.len() {
        1 => String::new(),
        2 => pid_or_pid_file(parts[1]),
        _ => {
            return Err(format!(
                "invalid signal parameters: [{}]",
                parts[2..].join(" ")
            ))
        }
    };
    send(parts[0], &pid_expression)
}

/// nats-server's `ProcessSignal`.
fn send(command: &str, pid_expression: &str) -> Result<(), String> {
    let is_glob = pid_expression.ends_with('*');
    let pid_text = pid_expression.strip_suffix('*').unwrap_or(pid_expression);
    let mut pids = Vec::new();
    if !pid_text.is_empty() {
        // Go's strconv.Atoi: an optional sign and digits, nothing else (no blanks).
        let pid: i64 = pid_text
            .parse()
            .map_err(|_| format!("invalid pid: {pid_text}"))?;
        pids.push(pid);
    }
    if pid_text.is_empty() || is_glob {
        pids = running_servers()?;
    }
    if pids.len() > 1 && !is_glob {
        let mut text = format!("multiple {PROCESS_NAME} processes running:");
        for pid in &pids {
            text.push_str(&format!("\n{pid}"));
        }
        return Err(text);
    }
    if pids.is_empty() {
        return Err(format!("no {PROCESS_NAME} processes running"));
    }
    let signal = command_signal(command)?;
    let mut errors = String::new();
    for pid in pids {
        let text = pid.to_string();
        if !pid_text.is_empty() && text != pid_text && (!is_glob || !text.starts_with(pid_text)) {
            continue;
        }
        let Ok(target) = libc::pid_t::try_from(pid) else {
            errors.push_str(&format!("\nsignal {command:?} {pid}: invalid argument"));
            continue;
        };
        // SAFETY: kill(2) takes plain integers and touches no memory of ours.
        if unsafe { libc::kill(target, signal) } != 0 {
            let error = std::io::Error::last_os_error();
            errors.push_str(&format!(
                "\nsignal {command:?} {pid}: {}",
                go_compat::errno_text(&error)
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_map_to_nats_servers_signals() {
        assert_eq!(command_signal("ldm"), Ok(libc::SIGUSR2));
        assert_eq!(command_signal("stop"), Ok(libc::SIGKILL));
        assert_eq!(command_signal("reload"), Ok(libc::SIGHUP));
        assert_eq!(
            command_signal("bogus"),
            Err("unknown signal \"bogus\"".to_string())
        );
    }

    #[test]
    fn bad_parameters_are_worded_as_nats_server() {
        assert_eq!(
            process("reload=1=2=3"),
            Err("invalid signal parameters: [2 3]".to_string())
        );
        assert_eq!(process("reload=abc"), Err("invalid pid: abc".to_string()));
    }
}
