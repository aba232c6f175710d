//! Decoding ahead: the batches of a [`RangeBatches`] decoded on a thread of their own, one
//! batch ahead of the caller, so that a loop that reads a batch and computes on it costs
//! about the larger of the two rather than their sum. The hand-over is a rendezvous: the
//! thread decodes batch k + 1 while the caller holds batch k, then waits until the caller
//! takes it, so at most one decoded batch exists beyond the caller's.

use super::RangeBatches;
use crate::error::{Error, Result};
use arrow_array::RecordBatch;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The record batches of a [`RangeBatches`], in the same order and with the same errors,
/// each decoded while the caller uses the previous one (see
/// [`RangeBatches::decode_ahead`]).
///
/// Memory: the batch the caller holds, plus the one being decoded or waiting to be taken.
/// Dropping it stops the decoding thread: the drop waits for the batch being decoded, if
/// any, and no batch after it is started.
pub struct DecodeAhead {
    state: State,
}

enum State {
    /// Batches come from the decoding thread.
    Thread {
        /// `None` once the thread is stopped.
        batches: Option<Receiver<Result<RecordBatch>>>,
        /// `None` once joined.
        thread: Option<JoinHandle<()>>,
        /// Tells the thread not to start another batch.
        stop: Arc<AtomicBool>,
    },
    /// No thread could be started: batches are decoded when asked for (correct, only
    /// without the overlap).
    Inline(Box<RangeBatches>),
}

impl RangeBatches {
    /// The same batches, each decoded on a thread of its own while the caller uses the
    /// previous one: a loop of reading and computing overlaps the two. At most one
    /// batch is decoded ahead. An error is returned where it happened, after the
    /// batches before it. If the thread cannot be started, batches are decoded when
    /// asked for.
    pub fn decode_ahead(self) -> DecodeAhead {
        let stop = Arc::new(AtomicBool::new(false));
        // A rendezvous channel: a send completes only when the caller takes the batch, so
        // the thread never runs more than one batch ahead.
        let (tx, rx) = sync_channel::<Result<RecordBatch>>(0);
        let (job_tx, job_rx) = sync_channel::<RangeBatches>(1);
        let stopped = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("rntuple-decode-ahead".into())
            .spawn(move || {
                let Ok(mut batches) = job_rx.recv() else {
                    return;
                };
                while !stopped.load(Ordering::Acquire) {
                    let Some(item) = batches.next() else {
                        return;
                    };
                    if tx.send(item).is_err() {
                        // The caller is gone.
                        return;
                    }
                }
            });
        let state = match spawned {
            Ok(thread) => match job_tx.send(self) {
                Ok(()) => State::Thread {
                    batches: Some(rx),
                    thread: Some(thread),
                    stop,
                },
                // The thread ended before taking the job (it cannot, short of a panic in
                // `recv`): decode here.
                Err(back) => State::Inline(Box::new(back.0)),
            },
            Err(_) => State::Inline(Box::new(self)),
        };
        DecodeAhead { state }
    }
}

impl DecodeAhead {
    /// Stops the thread (it starts no other batch) and waits for it; `Err` if it
    /// panicked.
    fn stop(&mut self) -> std::thread::Result<()> {
        let State::Thread {
            batches,
            thread,
            stop,
        } = &mut self.state
        else {
            return Ok(());
        };
        stop.store(true, Ordering::Release);
        // Dropping the receiver fails the thread's pending send at once.
        batches.take();
        match thread.take() {
            Some(t) => t.join(),
            None => Ok(()),
        }
    }
}

impl Iterator for DecodeAhead {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let received = match &mut self.state {
            State::Inline(batches) => return batches.next(),
            State::Thread { batches, .. } => batches.as_ref()?.recv(),
        };
        match received {
            Ok(item) => Some(item),
            // The thread ended: after the last batch, or in a panic.
            Err(_) => match self.stop() {
                Ok(()) => None,
                Err(_) => Some(Err(Error::InvalidArgument(
                    "the thread decoding ahead panicked".into(),
                ))),
            },
        }
    }
}

impl Drop for DecodeAhead {
    fn drop(&mut self) {
        // A panic of the thread has nobody left to report to.
        let _ = self.stop();
    }
}
