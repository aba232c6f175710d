//! Buffers for pages read from a local file, given back when the decoder drops the page:
//! a read-all of a large file otherwise asks the allocator for as many fresh bytes as the
//! file holds, each of them a page fault (and zeroing) on first touch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Buffers held for reuse, at most this many bytes in all: a few columns' pages in
/// flight; more is given back to the allocator.
const POOL_MAX_BYTES: usize = 256 << 20;

/// Page buffers free for reuse, shared by the pages taken from it.
#[derive(Debug, Default)]
pub(crate) struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
    /// Buffers made new because none was free: as many as pages held at once.
    fresh: AtomicUsize,
}

impl BufferPool {
    /// A buffer of `len` bytes whose contents are unspecified (a reused buffer keeps old
    /// bytes; the caller overwrites them all).
    pub(crate) fn take(self: &Arc<Self>, len: usize) -> PooledBuffer {
        let reused = self.free.lock().ok().and_then(|mut free| {
            // The smallest buffer that holds `len` without growing, else the largest.
            let pick = free
                .iter()
                .enumerate()
                .filter(|(_, b)| b.capacity() >= len)
                .min_by_key(|(_, b)| b.capacity())
                .or_else(|| free.iter().enumerate().max_by_key(|(_, b)| b.capacity()))
                .map(|(i, _)| i)?;
            Some(free.swap_remove(pick))
        });
        let mut buffer = reused.unwrap_or_else(|| {
            self.fresh.fetch_add(1, Ordering::Relaxed);
            Vec::new()
        });
        if buffer.len() >= len {
            buffer.truncate(len);
        } else {
            buffer.resize(len, 0);
        }
        PooledBuffer {
            buffer,
            pool: Arc::clone(self),
        }
    }

    /// The buffers made new so far (not taken from the free ones).
    #[cfg(test)]
    pub(crate) fn fresh(&self) -> usize {
        self.fresh.load(Ordering::Relaxed)
    }

    fn give_back(&self, buffer: Vec<u8>) {
        if let Ok(mut free) = self.free.lock() {
            let held: usize = free.iter().map(Vec::capacity).sum();
            if held + buffer.capacity() <= POOL_MAX_BYTES {
                free.push(buffer);
            }
        }
    }
}

/// A page buffer that goes back to its pool when dropped.
#[derive(Debug)]
pub(crate) struct PooledBuffer {
    buffer: Vec<u8>,
    pool: Arc<BufferPool>,
}

impl PooledBuffer {
    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.buffer
    }

    /// The bytes, to fill.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buffer
    }
}

impl AsRef<[u8]> for PooledBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Clone for PooledBuffer {
    fn clone(&self) -> Self {
        PooledBuffer {
            buffer: self.buffer.clone(),
            pool: Arc::clone(&self.pool),
        }
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.buffer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_buffer_is_reused_and_the_pool_stays_bounded() {
        let pool = Arc::new(BufferPool::default());
        let mut a = pool.take(1000);
        assert_eq!(a.as_slice().len(), 1000);
        a.as_mut_slice()[0] = 7;
        let address = a.as_slice().as_ptr();
        drop(a);
        // The same allocation comes back, cut to the new length.
        let b = pool.take(10);
        assert_eq!(b.as_slice().as_ptr(), address);
        assert_eq!(b.as_slice().len(), 10);
        // A larger request grows the largest free buffer (none free now: a new one).
        let c = pool.take(5000);
        assert_eq!(c.as_slice().len(), 5000);
        assert_eq!(pool.fresh(), 2, "a and c were made new, b reused a");
        drop((b, c));
        assert_eq!(pool.free.lock().unwrap().len(), 2);
        // Buffers beyond the bound are given back to the allocator.
        let big: Vec<_> = (0..3).map(|_| pool.take(POOL_MAX_BYTES / 2)).collect();
        drop(big);
        let held: usize = pool.free.lock().unwrap().iter().map(Vec::capacity).sum();
        assert!(held <= POOL_MAX_BYTES, "{held}");
    }
}
