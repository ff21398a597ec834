//! The message of a test's panic, kept for the harness's `Drop` to repeat at the end of what it
//! prints. A failing cluster test prints every node's log after the panic message; a CI log cut
//! to its head and tail then loses the message. Repeating it after the logs keeps it in the tail.

use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once per process) a panic hook that records each panic's message and location on
/// the panicking thread, then runs the hook that was there before.
pub fn install() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            let location = info
                .location()
                .map(|at| format!("{}:{}", at.file(), at.line()))
                .unwrap_or_default();
            LAST.with(|last| *last.borrow_mut() = Some(format!("{location}: {message}")));
            previous(info);
        }));
    });
}

/// The last panic recorded on this thread, if any.
pub fn last() -> Option<String> {
    LAST.with(|last| last.borrow().clone())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_is_recorded_on_its_thread() {
        super::install();
        let caught = std::panic::catch_unwind(|| panic!("the message {}", 42));
        assert!(caught.is_err());
        let last = super::last().expect("recorded");
        assert!(last.ends_with("the message 42"), "{last}");
        assert!(last.contains("panic_note.rs"), "{last}");
    }
}
