//! A plain TCP connection's write half, shared between its writer task and the tasks that
//! queue frames for it: a route gets every read batch routed to it written straight to its
//! socket while its writer is idle, and a client the batches of a route reader
//! ([`super::outbound::Outbound::write_direct`]); the writer takes over when the socket is
//! full. TLS and websocket connections keep the writer as their only writer.

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::AsyncWrite;
use tokio::net::tcp::OwnedWriteHalf;

use super::ClientShared;

/// Share `write_half` between the connection's outbound queue and its writer task (returned).
pub fn share(shared: &ClientShared, write_half: OwnedWriteHalf) -> SharedWriteHalf {
    let write_half = Arc::new(write_half);
    shared.outbound.lock().direct = Some(write_half.clone());
    SharedWriteHalf(write_half)
}

/// The writer task's handle on the shared write half. Its shutdown is the write half's drop,
/// once the outbound queue let go of its handle too (the writer clears it as it ends).
pub struct SharedWriteHalf(pub Arc<OwnedWriteHalf>);

impl SharedWriteHalf {
    /// Retry `attempt` until the socket takes bytes, registering for write readiness whenever
    /// it is full.
    fn poll_with(
        &self,
        context: &mut Context<'_>,
        mut attempt: impl FnMut(&OwnedWriteHalf) -> std::io::Result<usize>,
    ) -> Poll<std::io::Result<usize>> {
        loop {
            ready!(self.0.as_ref().as_ref().poll_write_ready(context))?;
            match attempt(&self.0) {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => continue,
                other => return Poll::Ready(other),
            }
        }
    }
}

impl AsyncWrite for SharedWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.poll_with(context, |half| half.try_write(buffer))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.poll_with(context, |half| half.try_write_vectored(buffers))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
