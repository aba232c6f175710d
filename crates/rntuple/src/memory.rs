//! Fresh memory for large decoded columns. Touching a fresh page costs a page fault per
//! 4 KiB, and on a virtual machine that hands memory back to its host also a fault in the
//! host: first writes to fresh memory can cost more than decompressing into it. One
//! `madvise(MADV_POPULATE_WRITE)` call maps a whole buffer at once, before the decoder's
//! threads write into it. While a stream of batches is open, large decoded buffers its
//! consumer drops are kept and decoded into again (see "Recycling" below): no fault at all.
//!
//! Transparent huge pages (2 MiB) are asked for only when the settings say so
//! (`RNTUPLE_HUGE_PAGES`, `SourceOptions::huge_pages`).
//! On the benchmark's virtual machine, which hands freed memory back to its host, they made
//! a one-shot read of every column 3.6x slower when the memory came fresh from the host, and
//! 1.5x faster when another process had just freed it (`bench/RESULTS.md`).

/// Whether large decoded columns ask for huge pages: unset (0) until a reader opens,
/// then 1 (never) or 2 (always), as the settings it opened with say
/// (`SourceOptions::huge_pages`, from `RNTUPLE_HUGE_PAGES` by default). The memory's
/// policy is the process's: the last reader opened sets it.
static HUGE_PAGES: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Makes large decoded columns ask for huge pages (or not) from now on.
pub(crate) fn set_huge_pages(huge: bool) {
    HUGE_PAGES.store(1 + u8::from(huge), std::sync::atomic::Ordering::Relaxed);
}

/// Whether large decoded columns ask for huge pages (no reader opened yet: no).
fn huge_pages() -> bool {
    HUGE_PAGES.load(std::sync::atomic::Ordering::Relaxed) == 2
}

/// Buffers smaller than this are left to the allocator (they mostly reuse freed memory).
const POPULATE_MIN_BYTES: usize = 1 << 20;

/// `n` copies of `zero` in a buffer whose pages are mapped in one system call when it is
/// large (Linux; elsewhere an ordinary `vec!`).
pub(crate) fn filled_vec<T: Copy>(zero: T, n: usize) -> Vec<T> {
    // `vec!` of an all-zero value asks the allocator for zeroed memory (calloc), which
    // does not write pages fresh from the kernel: they come zeroed when populated. The
    // decoder then writes each byte once, not after a memset of the whole buffer.
    let mut v = vec![zero; n];
    populate(&mut v);
    v
}

/// Maps the whole pages of `buffer` (memory this process owns) writable, at once; as
/// transparent huge pages where the settings ask for them and the kernel has
/// them (a mistyped value was refused when the reader opened; it asks for none here).
#[cfg(target_os = "linux")]
fn populate<T>(buffer: &mut [T]) {
    const PAGE: usize = 4096;
    let bytes = std::mem::size_of_val(buffer);
    if bytes < POPULATE_MIN_BYTES {
        return;
    }
    let start = buffer.as_mut_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) / PAGE * PAGE;
    if end <= first {
        return;
    }
    let huge = huge_pages();
    // SAFETY: `first..end` lies within `buffer`, memory of this process's heap that the
    // caller holds exclusively; MADV_HUGEPAGE only marks its range as eligible for huge
    // pages and MADV_POPULATE_WRITE only maps its pages (neither writes data nor changes
    // contents). A failure (an old kernel, huge pages disabled) leaves the pages to be
    // faulted in on first write, as without the calls.
    unsafe {
        if huge {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
        libc::madvise(
            first as *mut libc::c_void,
            end - first,
            libc::MADV_POPULATE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn populate<T>(_buffer: &mut [T]) {}

// --- Recycling -----------------------------------------------------------------------
//
// A loop over batches (`iterate()`, a record-batch stream) drops each batch before the
// next but one is decoded: the same sizes come back over and over. Large buffers freed by
// the allocator go back to the kernel (glibc unmaps them), and the next batch pays its
// page faults again. While a stream is open, decoded buffers dropped by their last user
// return here instead, mapped and warm, and the next batch decodes into them.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Buffers smaller than this are left to the allocator (it reuses small freed blocks
/// well, though `calloc` zeroes them again).
const RECYCLE_MIN_BYTES: usize = 256 << 10;

/// The most bytes kept for reuse at once; a buffer given back beyond it is freed.
const RECYCLE_MAX_HELD: usize = 512 << 20;

/// A kept buffer serves a request of at least this fraction of its size (1/2), so that a
/// small column does not hold a large buffer.
const FIT_DIVISOR: usize = 2;

/// Fresh buffers are made this fraction (1/8) larger than asked while recycling, so that
/// the same column of the next batch, a little longer, still fits (only the pages written
/// are mapped).
const GROWTH_DIVISOR: usize = 8;

/// Plain element types whose bytes may be written directly: no padding, every bit
/// pattern a valid value.
///
/// # Safety
/// Implement only for types with no padding bytes for which every bit pattern is valid.
pub(crate) unsafe trait Pod: Copy + 'static {}

// SAFETY: primitive integers and floats have no padding and accept every bit pattern.
unsafe impl Pod for u8 {}
// SAFETY: as above.
unsafe impl Pod for i8 {}
// SAFETY: as above.
unsafe impl Pod for u16 {}
// SAFETY: as above.
unsafe impl Pod for i16 {}
// SAFETY: as above.
unsafe impl Pod for u32 {}
// SAFETY: as above.
unsafe impl Pod for i32 {}
// SAFETY: as above.
unsafe impl Pod for u64 {}
// SAFETY: as above.
unsafe impl Pod for i64 {}
// SAFETY: as above.
unsafe impl Pod for f32 {}
// SAFETY: as above.
unsafe impl Pod for f64 {}

/// Element types a buffer can be recycled for: `Pod` (every bit pattern a value, so a
/// recycled buffer's old bytes are values, never undefined behaviour), whose alignment is
/// their size (checked in `shelf_of`: a buffer of one serves any other of the same size).
pub(crate) trait Plain: Pod + Default + Send + Sync + std::panic::RefUnwindSafe {}

impl<T: Pod + Default + Send + Sync + std::panic::RefUnwindSafe> Plain for T {}

/// A buffer kept for reuse: an allocation of `capacity` elements of `size` bytes (and
/// alignment), made by `Vec`, of which the first `initialized` were written.
struct Spare {
    ptr: NonNull<u8>,
    size: usize,
    capacity: usize,
    initialized: usize,
}

// SAFETY: a `Spare` owns its allocation alone (it was a `Vec`'s); moving it between
// threads moves that ownership, as for the `Vec`.
unsafe impl Send for Spare {}

impl Spare {
    fn bytes(&self) -> usize {
        self.size * self.capacity
    }

    /// The `Vec` of `n` elements over this buffer (`n <= capacity`): its first elements are
    /// the old values, any beyond what was written are zeros.
    fn into_vec<T: Plain>(self, n: usize) -> Vec<T> {
        debug_assert!(std::mem::size_of::<T>() == self.size && n <= self.capacity);
        let this = std::mem::ManuallyDrop::new(self);
        let written = this.initialized.min(n);
        // SAFETY: `ptr` was allocated by a `Vec` of `capacity` elements of `size` bytes and
        // alignment, the size and alignment of `T` (shelves hold one size, `T: Plain`), so
        // it is a valid `Vec<T>` allocation; its first `written` elements were initialised
        // and any bit pattern is a `T`. Ownership passes to the `Vec` (`ManuallyDrop`).
        let mut v =
            unsafe { Vec::from_raw_parts(this.ptr.as_ptr().cast::<T>(), written, this.capacity) };
        v.resize(n, T::default());
        v
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        // The layout `Vec` allocated with: `capacity` elements, aligned to their size.
        if let Ok(layout) = Layout::from_size_align(self.bytes(), self.size) {
            if layout.size() > 0 {
                // SAFETY: `ptr` is a live allocation of the global allocator with exactly
                // this layout (see `Spare`), owned by this `Spare` alone.
                unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
            }
        }
    }
}

/// The buffers kept, one shelf per element size (1, 2, 4, 8 bytes).
struct Recycler {
    shelves: [Mutex<Vec<Spare>>; 4],
    held: AtomicUsize,
    /// Open streams: buffers are kept only while there is one.
    streams: AtomicUsize,
    /// Buffers served from a shelf (for tests and benchmarks).
    reused: AtomicUsize,
}

static RECYCLER: Recycler = Recycler {
    shelves: [
        Mutex::new(Vec::new()),
        Mutex::new(Vec::new()),
        Mutex::new(Vec::new()),
        Mutex::new(Vec::new()),
    ],
    held: AtomicUsize::new(0),
    streams: AtomicUsize::new(0),
    reused: AtomicUsize::new(0),
};

fn shelf_of<T: Plain>() -> &'static Mutex<Vec<Spare>> {
    const {
        assert!(std::mem::size_of::<T>() == std::mem::align_of::<T>());
    }
    let index = std::mem::size_of::<T>().trailing_zeros() as usize;
    &RECYCLER.shelves[index.min(3)]
}

/// Keeps buffers dropped by readers for reuse while it lives: held by a stream of
/// batches. When the last one ends, the kept buffers are freed.
pub(crate) struct Recycling(());

impl Recycling {
    /// Starts keeping buffers (or goes on, when another stream already does).
    pub(crate) fn start() -> Recycling {
        RECYCLER.streams.fetch_add(1, Ordering::AcqRel);
        Recycling(())
    }
}

impl Drop for Recycling {
    fn drop(&mut self) {
        if RECYCLER.streams.fetch_sub(1, Ordering::AcqRel) == 1 {
            for shelf in &RECYCLER.shelves {
                let spares =
                    std::mem::take(&mut *shelf.lock().unwrap_or_else(PoisonError::into_inner));
                RECYCLER
                    .held
                    .fetch_sub(spares.iter().map(Spare::bytes).sum(), Ordering::AcqRel);
                drop(spares);
            }
        }
    }
}

/// The number of buffers served from kept ones so far in this process.
#[cfg(test)]
pub(crate) fn reused_buffers() -> usize {
    RECYCLER.reused.load(Ordering::Relaxed)
}

/// A buffer of `n` elements for the decoder to overwrite: a kept one when a stream keeps
/// buffers and one fits (its elements are old values then, a debug build fills them with
/// a marker so that tests catch any left unwritten), else zeros from `filled_vec`.
pub(crate) fn reusable_vec<T: Plain>(n: usize) -> Vec<T> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    if bytes < RECYCLE_MIN_BYTES || RECYCLER.streams.load(Ordering::Acquire) == 0 {
        return filled_vec(T::default(), n);
    }
    let taken = {
        let mut shelf = shelf_of::<T>()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let best = shelf
            .iter()
            .enumerate()
            .filter(|(_, s)| s.capacity >= n && s.capacity / FIT_DIVISOR <= n)
            .min_by_key(|(_, s)| s.capacity)
            .map(|(i, _)| i);
        best.map(|i| shelf.swap_remove(i))
    };
    match taken {
        Some(spare) => {
            RECYCLER.held.fetch_sub(spare.bytes(), Ordering::AcqRel);
            RECYCLER.reused.fetch_add(1, Ordering::Relaxed);
            let mut v = spare.into_vec::<T>(n);
            if cfg!(debug_assertions) {
                // SAFETY: `v` holds `n` initialised elements; any bytes are values of `T`.
                unsafe { std::ptr::write_bytes(v.as_mut_ptr().cast::<u8>(), 0xA5, bytes) };
            }
            v
        }
        None => {
            // Zeroed by `calloc`; only the `n` elements used are mapped now.
            let mut v = vec![T::default(); n + n / GROWTH_DIVISOR];
            v.truncate(n);
            populate(&mut v);
            v
        }
    }
}

/// Keeps `v` for reuse if a stream keeps buffers and there is room, else frees it.
fn give_back<T: Plain>(v: Vec<T>) {
    let mut v = std::mem::ManuallyDrop::new(v);
    let spare = Spare {
        ptr: NonNull::new(v.as_mut_ptr().cast::<u8>()).unwrap_or(NonNull::dangling()),
        size: std::mem::size_of::<T>(),
        capacity: v.capacity(),
        initialized: v.len(),
    };
    let bytes = spare.bytes();
    if bytes < RECYCLE_MIN_BYTES {
        // Too small to keep: dropping the `Spare` frees it as the `Vec` would have.
        return;
    }
    let mut shelf = shelf_of::<T>()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    // Checked under the shelf's lock: the last stream's end empties the shelves under it.
    if RECYCLER.streams.load(Ordering::Acquire) == 0
        || RECYCLER.held.load(Ordering::Acquire) + bytes > RECYCLE_MAX_HELD
    {
        drop(shelf);
        return;
    }
    RECYCLER.held.fetch_add(bytes, Ordering::AcqRel);
    shelf.push(spare);
}

/// The owner of a buffer lent to Arrow: gives it back when Arrow drops its last
/// reference.
struct Lent<T: Plain>(Option<Vec<T>>);

impl<T: Plain> Drop for Lent<T> {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            give_back(v);
        }
    }
}

/// An Arrow buffer over `v` without a copy; once Arrow (or Python, through the C data
/// interface) drops it, a large one is kept for the next batch while a stream keeps
/// buffers.
pub(crate) fn into_arrow_buffer<T: Plain + arrow_buffer::ArrowNativeType>(
    v: Vec<T>,
) -> arrow_buffer::ScalarBuffer<T> {
    let bytes = std::mem::size_of_val(v.as_slice());
    if bytes < RECYCLE_MIN_BYTES || RECYCLER.streams.load(Ordering::Acquire) == 0 {
        return v.into();
    }
    let len = v.len();
    let Some(ptr) = NonNull::new(v.as_ptr().cast_mut().cast::<u8>()) else {
        return v.into();
    };
    // Moving the `Vec` into its owner does not move its heap buffer: `ptr` stays valid for
    // as long as the owner lives.
    let owner: Arc<dyn arrow_buffer::alloc::Allocation> = Arc::new(Lent(Some(v)));
    // SAFETY: `ptr` points at `bytes` initialised bytes of the `Vec` now held by `owner`,
    // which Arrow keeps alive as long as the buffer and drops after; nothing else writes
    // them.
    let buffer = unsafe { arrow_buffer::Buffer::from_custom_allocation(ptr, bytes, owner) };
    arrow_buffer::ScalarBuffer::new(buffer, 0, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_vec_holds_the_value_at_every_size() {
        // Below and above the populate threshold, and not a multiple of a page.
        for n in [0usize, 1, 4097, (POPULATE_MIN_BYTES / 8) * 3 + 5] {
            let v = filled_vec(7u64, n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 7));
            let z = filled_vec(0.0f32, n);
            assert!(z.iter().all(|&x| x == 0.0));
        }
    }

    /// A buffer of this many `i16` is above the recycling threshold, and of a size no
    /// other test asks for (the shelves are shared by the whole test process).
    const ODD: usize = (RECYCLE_MIN_BYTES / 2) + 4_321;

    #[test]
    fn a_dropped_arrow_buffer_serves_the_next_request_while_a_stream_is_open() {
        let recycling = Recycling::start();
        let mut v: Vec<i16> = reusable_vec(ODD);
        assert_eq!(v.len(), ODD);
        v.iter_mut().enumerate().for_each(|(i, x)| *x = i as i16);
        let at = v.as_ptr() as usize;
        let buffer = into_arrow_buffer(v);
        assert_eq!(buffer.len(), ODD);
        assert_eq!(buffer[1234], 1234, "lent without a copy");
        let before = reused_buffers();
        drop(buffer);
        // A little shorter: it fits the kept one.
        let again: Vec<i16> = reusable_vec(ODD - 100);
        assert_eq!(
            again.as_ptr() as usize,
            at,
            "the same memory, not a new buffer"
        );
        assert!(reused_buffers() > before);
        assert_eq!(again.len(), ODD - 100);
        if cfg!(debug_assertions) {
            // Old values are overwritten with the marker, so that a decoder leaving an
            // element unwritten shows up in every test.
            assert!(again.iter().all(|&x| x == i16::from_ne_bytes([0xA5, 0xA5])));
        }
        drop(again);
        drop(recycling);
    }

    #[test]
    fn a_kept_buffer_is_not_used_for_a_request_of_less_than_half_its_size() {
        let _recycling = Recycling::start();
        let v: Vec<u16> = reusable_vec(3 * ODD);
        let at = v.as_ptr() as usize;
        drop(into_arrow_buffer(v));
        let small: Vec<u16> = reusable_vec(ODD);
        assert_ne!(small.as_ptr() as usize, at);
        assert!(small.iter().all(|&x| x == 0), "fresh buffers are zeros");
    }

    #[test]
    fn a_longer_request_than_was_written_gets_zeros_past_the_old_length() {
        let _recycling = Recycling::start();
        // Given back with 100 elements written of a capacity of 2 * ODD.
        let mut v: Vec<i8> = Vec::with_capacity(2 * ODD);
        v.resize(100, 7);
        give_back(v);
        let got: Vec<i8> = reusable_vec(2 * ODD - 1);
        assert_eq!(got.len(), 2 * ODD - 1);
        if cfg!(debug_assertions) {
            assert!(
                got.iter().all(|&x| x == 0xA5u8 as i8),
                "the marker everywhere"
            );
        } else {
            assert!(got[..100].iter().all(|&x| x == 7), "the old values");
            assert!(
                got[100..].iter().all(|&x| x == 0),
                "never written before: zeros"
            );
        }
    }

    #[test]
    fn small_buffers_are_left_to_the_allocator() {
        // Never kept, stream or not: zeros from the allocator, an ordinary Arrow buffer.
        let _recycling = Recycling::start();
        let small: Vec<u32> = reusable_vec(10);
        assert!(small.iter().all(|&x| x == 0));
        let buffer = into_arrow_buffer(small);
        assert_eq!(buffer.len(), 10);
    }
}

/// A stream decoding into the buffers of the batches its consumer dropped, end to end.
#[cfg(test)]
mod recycled_batches {
    use crate::io::MemorySource;
    use crate::read::RNTupleReader;
    use crate::schema::{ColumnDefaults, SchemaBuilder};
    use crate::write::{RNTupleWriter, WriteOptions};
    use arrow_array::builder::{Float32Builder, LargeListBuilder};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int64Type};
    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch};
    use std::sync::Arc;

    const ENTRIES: usize = 400_000;
    const STEP: usize = 100_000;

    /// The value of every field at entry `i`, and a list of `i % 4` floats.
    fn x(i: usize) -> f64 {
        i as f64 * 0.5 - 3.0
    }
    fn n(i: usize) -> i64 {
        (i as i64) * 3 - 7
    }
    fn flag(i: usize) -> bool {
        i % 3 == 0
    }
    fn item(i: usize, k: usize) -> f32 {
        (i * 10 + k) as f32
    }

    fn written() -> (Vec<u8>, crate::format::Anchor) {
        let mut list = LargeListBuilder::new(Float32Builder::new());
        for i in 0..ENTRIES {
            (0..i % 4).for_each(|k| list.values().append_value(item(i, k)));
            list.append(true);
        }
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "x",
                Arc::new(Float64Array::from_iter_values((0..ENTRIES).map(x))),
            ),
            (
                "n",
                Arc::new(Int64Array::from_iter_values((0..ENTRIES).map(n))),
            ),
            (
                "flag",
                Arc::new(BooleanArray::from_iter((0..ENTRIES).map(|i| Some(flag(i))))),
            ),
            ("list", Arc::new(list.finish())),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut builder = SchemaBuilder::new(ColumnDefaults { compressed: true });
        for f in batch.schema().fields() {
            builder.add_arrow_field(f).unwrap();
        }
        // Clusters of about a step's entries, pages of 64 KiB.
        let options = WriteOptions::builder()
            .cluster_size(1 << 20)
            .page_size(64 << 10)
            .build()
            .unwrap();
        let mut sink = Vec::new();
        let mut w = RNTupleWriter::new(&mut sink, "t", builder.finish(), options).unwrap();
        w.write_batch(&batch).unwrap();
        let anchor = w.finish().unwrap();
        (sink, anchor)
    }

    #[test]
    fn batches_decoded_into_recycled_buffers_hold_the_written_values() {
        let (bytes, anchor) = written();
        let source = Arc::new(MemorySource::new("mem", bytes));
        let reader = RNTupleReader::from_anchor(source, anchor, "t".into()).unwrap();
        // Steps that cut clusters and pages, so that some elements come from pages the
        // previous step decoded (the carry) and buffers come back in other sizes.
        let steps: Vec<_> = (0..ENTRIES as u64)
            .step_by(STEP - 1)
            .map(|s| s..(s + STEP as u64 - 1).min(ENTRIES as u64))
            .collect();
        let before = super::reused_buffers();
        let mut batches = 0;
        for (batch, range) in reader.read_ranges(None, steps.clone()).unwrap().zip(&steps) {
            // Each batch is checked, then dropped: its buffers are kept for the ones after
            // it. A debug build marks every recycled element, so one the decoder left
            // unwritten would not hold its value here.
            let batch = batch.unwrap();
            let first = range.start as usize;
            let xs = batch.column(0).as_primitive::<Float64Type>();
            let ns = batch.column(1).as_primitive::<Int64Type>();
            let flags = batch.column(2).as_boolean();
            let lists = batch.column(3).as_list::<i64>();
            assert_eq!(batch.num_rows() as u64, range.end - range.start);
            for j in 0..batch.num_rows() {
                let i = first + j;
                assert_eq!(xs.value(j), x(i), "x at {i}");
                assert_eq!(ns.value(j), n(i), "n at {i}");
                assert_eq!(flags.value(j), flag(i), "flag at {i}");
                let items = lists.value(j);
                let items = items.as_primitive::<Float32Type>();
                let want: Vec<f32> = (0..i % 4).map(|k| item(i, k)).collect();
                assert_eq!(items.values().as_ref(), &want[..], "list at {i}");
            }
            batches += 1;
        }
        assert_eq!(batches, steps.len());
        // Some of the later batches' columns were decoded into earlier batches' buffers
        // (other tests may recycle at the same time: the count only grows).
        assert!(super::reused_buffers() > before, "no buffer was reused");
    }
}
