//! natscli's byte progress bar for `object put` and `object get`: drawn only for transfers
//! over 20 KiB, on a terminal, without `--no-progress` or `--trace`; block characters, the
//! tracker half the terminal wide, sizes in IEC units and the speed, no ETA (its go-pretty
//! style). [`Counted`] wraps a reader so the bar follows the bytes as they pass.

use std::pin::Pin;
use std::task::{Context, Poll};

use std::fmt::Write;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use tokio::io::{AsyncRead, ReadBuf};

use super::format::ibytes;
use super::stdout_is_terminal;

/// natscli draws no bar for objects of 20 KiB or less.
const SMALLEST_SHOWN: u64 = 20 * 1024;

/// A bar for `total` bytes, or None when natscli would not draw one (or this is no terminal).
pub fn transfer_bar(total: u64, disabled: bool) -> Option<ProgressBar> {
    if disabled || total <= SMALLEST_SHOWN || !stdout_is_terminal() {
        return None;
    }
    let columns = console::Term::stdout()
        .size_checked()
        .map(|(_, columns)| usize::from(columns))
        .unwrap_or(80);
    let tracker = (columns.saturating_sub(30).max(20)) / 2;
    let bar = ProgressBar::new(total);
    let template =
        format!("{{bar:{tracker}}} {{percent:>3}}% ({{done}}/{{total}}) {{elapsed}} {{speed}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        // go-humanize's IEC sizes, as every other size natscli prints.
        let style = style
            .progress_chars("█░")
            .with_key("done", |state: &ProgressState, out: &mut dyn Write| {
                let _ = write!(out, "{}", ibytes(state.pos()));
            })
            .with_key("total", |state: &ProgressState, out: &mut dyn Write| {
                let _ = write!(out, "{}", ibytes(state.len().unwrap_or(0)));
            })
            .with_key("speed", |state: &ProgressState, out: &mut dyn Write| {
                let _ = write!(out, "{}/s", ibytes(state.per_sec() as u64));
            });
        bar.set_style(style);
    }
    Some(bar)
}

/// A reader that moves `bar` by every byte read through it.
pub struct Counted<R> {
    inner: R,
    bar: Option<ProgressBar>,
}

impl<R> Counted<R> {
    pub fn new(inner: R, bar: Option<ProgressBar>) -> Counted<R> {
        Counted { inner, bar }
    }

    /// Leaves the finished bar on screen followed by a blank line, as natscli does.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
            println!();
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buffer.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(context, buffer);
        if let (Poll::Ready(Ok(())), Some(bar)) = (&result, &self.bar) {
            bar.inc((buffer.filled().len() - before) as u64);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn counts_what_passes() {
        let bar = ProgressBar::hidden();
        bar.set_length(5);
        let mut reader = Counted::new(&b"hello"[..], Some(bar.clone()));
        let mut text = String::new();
        reader.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "hello");
        assert_eq!(bar.position(), 5);
    }

    #[test]
    fn no_bar_for_small_transfers_or_when_disabled() {
        assert!(transfer_bar(SMALLEST_SHOWN, false).is_none());
        assert!(transfer_bar(10 * SMALLEST_SHOWN, true).is_none());
    }
}
