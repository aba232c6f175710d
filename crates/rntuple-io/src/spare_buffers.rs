//! Buffers a reader gave back to its source, reused for the next reads. A planned read
//! fetches hundreds of MB into range buffers that live only until their pages are
//! decoded; fresh allocations of that size come from the kernel as new pages, and
//! faulting them in costs about as much CPU as receiving the bytes. Reused buffers are
//! already mapped.

use std::sync::{Mutex, MutexGuard};

/// The most bytes kept: about the bytes a planned read keeps in flight.
const LIMIT_BYTES: usize = 192 << 20;

/// A bounded set of empty buffers with capacity.
#[derive(Debug, Default)]
pub(super) struct SpareBuffers {
    buffers: Mutex<Vec<Vec<u8>>>,
}

impl SpareBuffers {
    fn lock(&self) -> MutexGuard<'_, Vec<Vec<u8>>> {
        // A plain list: still consistent after a panic elsewhere.
        self.buffers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `buffer` for reuse, unless the set is full.
    pub(super) fn put(&self, mut buffer: Vec<u8>) {
        buffer.clear();
        let mut buffers = self.lock();
        let kept: usize = buffers.iter().map(Vec::capacity).sum();
        if buffer.capacity() > 0 && kept + buffer.capacity() <= LIMIT_BYTES {
            buffers.push(buffer);
        }
    }

    /// A buffer with room for `len` bytes: the smallest kept one that fits (empty if it
    /// was given back with [`SpareBuffers::put`]), else a new, empty one.
    pub(super) fn take(&self, len: usize) -> Vec<u8> {
        self.kept(len).unwrap_or_else(|| Vec::with_capacity(len))
    }

    /// The smallest kept buffer with room for `len` bytes, if any.
    fn kept(&self, len: usize) -> Option<Vec<u8>> {
        let mut buffers = self.lock();
        let fit = buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)?;
        Some(buffers.swap_remove(fit))
    }

    /// The largest kept buffer, to grow to `len` bytes: a large allocation grows in place
    /// (its pages stay mapped), so only the bytes past its end are fresh memory.
    fn largest(&self) -> Option<Vec<u8>> {
        let mut buffers = self.lock();
        let largest = (0..buffers.len()).max_by_key(|&i| buffers[i].capacity())?;
        Some(buffers.swap_remove(largest))
    }

    /// A buffer of exactly `len` bytes whose contents are left over from earlier use
    /// (or zeros): for a caller that overwrites every byte, a reused buffer is not
    /// written twice. Give it back with [`SpareBuffers::put_filled`].
    pub(super) fn take_filled(&self, len: usize) -> Vec<u8> {
        let Some(mut buffer) = self.kept(len).or_else(|| self.largest()) else {
            // Fresh memory: the allocator's zeroed pages (calloc), not a memset.
            return vec![0; len];
        };
        if buffer.len() >= len {
            buffer.truncate(len);
        } else {
            buffer.resize(len, 0);
        }
        buffer
    }

    /// Keeps `buffer` for [`SpareBuffers::take_filled`], its bytes as they are (within
    /// the same bound as [`SpareBuffers::put`]).
    pub(super) fn put_filled(&self, buffer: Vec<u8>) {
        let mut buffers = self.lock();
        let kept: usize = buffers.iter().map(Vec::capacity).sum();
        if buffer.capacity() > 0 && kept + buffer.capacity() <= LIMIT_BYTES {
            buffers.push(buffer);
        }
    }

    /// `len` zero bytes, in a kept buffer when one fits.
    #[cfg(test)]
    pub(super) fn take_zeroed(&self, len: usize) -> Vec<u8> {
        let mut buffer = self.take(len);
        buffer.resize(len, 0);
        buffer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_smallest_fit_first_and_bounded() {
        let spare = SpareBuffers::default();
        let big = vec![7u8; 1000];
        let small = vec![9u8; 100];
        let (big_at, small_at) = (big.as_ptr(), small.as_ptr());
        spare.put(big);
        spare.put(small);
        // 50 bytes fit both: the smaller is taken, emptied.
        let a = spare.take(50);
        assert_eq!((a.as_ptr(), a.len()), (small_at, 0));
        // Zeroed: the old bytes are gone.
        let b = spare.take_zeroed(500);
        assert_eq!(b.as_ptr(), big_at);
        assert!(b.len() == 500 && b.iter().all(|&x| x == 0));
        // Nothing left that fits: a new buffer.
        let c = spare.take(10);
        assert!(c.capacity() >= 10 && c.as_ptr() != big_at && c.as_ptr() != small_at);
        // Beyond the limit, buffers are dropped, not kept.
        spare.put(Vec::with_capacity(LIMIT_BYTES));
        spare.put(Vec::with_capacity(1024));
        assert_eq!(spare.lock().len(), 1);
    }

    #[test]
    fn filled_buffers_keep_their_bytes_and_are_cut_or_grown_to_length() {
        let spare = SpareBuffers::default();
        let used = vec![5u8; 1000];
        let at = used.as_ptr();
        spare.put_filled(used);
        let a = spare.take_filled(600);
        assert_eq!((a.as_ptr(), a.len()), (at, 600), "the same buffer, cut");
        assert!(a.iter().all(|&x| x == 5), "its bytes not written again");
        spare.put_filled(a);
        let b = spare.take_filled(900);
        assert_eq!(b.len(), 900);
        assert!(b[..600].iter().all(|&x| x == 5) && b[600..].iter().all(|&x| x == 0));
        assert_eq!(
            spare.take_filled(10).len(),
            10,
            "a new buffer when none is kept"
        );
    }
}
