//! Human output: number, size, duration and time formatting (`format`), the aligned
//! "Label: value" report writer (`columns`) and the boxed table renderer (`table`).
//!
//! Called by every command module; knows nothing about NATS. The layouts follow natscli's
//! (go-pretty rounded tables, its columns writer, go-humanize numbers) so that output people
//! are used to reading, grepping and scripting against stays the same.

pub mod columns;
pub mod format;
pub mod progress;
pub mod table;

use std::io::IsTerminal;

/// True when standard output is a terminal: colours, progress bars and prompts only then.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// True when both standard input and output are terminals, natscli's condition for asking.
pub fn is_interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// natscli logs progress notes through Go's `log` with only the time flag: `15:04:05 text`
/// on standard error.
pub fn log_line(text: &str) {
    let now = chrono::Local::now();
    eprintln!("{} {}", now.format("%H:%M:%S"), text);
}

/// natscli's outPutMSGBodyCompact: the body on its own line, `nil body` when empty.
pub fn print_body_compact(data: &[u8]) {
    if data.is_empty() {
        println!("nil body");
        return;
    }
    let text = String::from_utf8_lossy(data);
    if text.ends_with('\n') {
        print!("{text}");
    } else {
        println!("{text}");
    }
}

/// natscli's outPutMSGBody: the body, then a blank line (two when it lacks a newline).
pub fn print_message_body(data: &[u8]) {
    print_body_compact(data);
    println!();
    if data.is_empty() || !data.ends_with(b"\n") {
        println!();
    }
}
