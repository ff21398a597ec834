//! The process's own endpoints: `/ipqueuesz` (rnats has no internal queues to list, so the
//! empty object nats-server shows when none is busy), `/raftz` (no Raft groups yet: nats-server's
//! 404), `/stacksz` (the process's threads from `/proc`, where nats-server dumps its goroutines)
//! and `/debug/vars` (the command line; nats-server adds Go's memory statistics, which a Rust
//! process does not have).

use super::query::Query;
use super::Refusal;
use serde_json::{json, Value};

pub fn ipqueuesz(query: &Query) -> Result<Value, Refusal> {
    query.boolean("all")?;
    Ok(json!({}))
}

pub fn raftz() -> Refusal {
    Refusal {
        status: 404,
        text: "No Raft nodes registered".into(),
    }
}

/// One line per thread: its id, name and state, as `/proc/self/task` tells them.
pub fn stacksz() -> String {
    let mut text = String::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return text;
    };
    let mut entries: Vec<(u64, String)> = tasks
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let id = entry.file_name().to_string_lossy().parse().ok()?;
            let path = entry.path();
            let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
            let state = status
                .lines()
                .find_map(|line| line.strip_prefix("State:"))
                .unwrap_or("")
                .trim()
                .to_string();
            Some((id, format!("thread {id} [{}] {state}\n", name.trim())))
        })
        .collect();
    entries.sort();
    for (_, line) in entries {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

pub fn debug_vars() -> Value {
    let command_line: Vec<String> = std::env::args().collect();
    json!({ "cmdline": command_line })
}
