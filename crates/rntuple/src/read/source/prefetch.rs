//! Fetching planned pages ahead of the decoder. A background thread issues each bunch's
//! requests (several at a time, each one vectored read of the source) and files the
//! pages in a cache that the decoder takes them from; it stays at most `window` bunches
//! ahead of the bunch being decoded, so memory holds a bounded number of bunches.

use super::direct::DirectPages;
use super::plan::{Bunch, PageKey};
use super::{PageSource, ReadCounters};
use crate::error::{Error, Result};
use crate::format::{stored_page_len, PageInfo};
use crate::io::RemoteKind;
use crate::io::{Access, RangeBuffer, ReadRequest, Source};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// A page's stored bytes: a slice of a buffer that one range of a request filled (shared
/// with the other pages of that range), or bytes of their own.
#[derive(Debug, Clone)]
pub(crate) enum PageBytes {
    /// Read for this page alone.
    Owned(Vec<u8>),
    /// Read for this page alone, into a buffer that is reused once the page is dropped.
    Pooled(super::pool::PooledBuffer),
    /// Bytes `start..start + len` of a fetched range.
    Shared {
        /// The range's bytes.
        buffer: Arc<Vec<u8>>,
        /// Where the page starts in it.
        start: usize,
        /// The page's length.
        len: usize,
    },
}

impl PageBytes {
    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            PageBytes::Owned(v) => v,
            PageBytes::Pooled(b) => b.as_slice(),
            PageBytes::Shared { buffer, start, len } => {
                buffer.get(*start..start + len).unwrap_or_default()
            }
        }
    }
}

struct State {
    pages: HashMap<PageKey, PageBytes>,
    /// For every planned page, the first bunch that fetches it.
    owner: HashMap<PageKey, usize>,
    /// For every planned page, the last bunch that needs it (a page stored once for
    /// several fields may serve several bunches).
    last_user: HashMap<PageKey, usize>,
    /// Requests still to arrive, per bunch (0: the bunch is complete).
    outstanding: Vec<usize>,
    /// The bunch being decoded.
    decoding: usize,
    /// Requests issued so far (they are issued in plan order).
    issued: usize,
    /// Bytes asked for by the requests in flight.
    in_flight_bytes: u64,
    /// Bunches the fetcher may be ahead of the decoder now (see [`Limits::window`]).
    window: usize,
    /// Bytes received so far, and when the first request went out: the bandwidth.
    received_bytes: u64,
    first_request: Option<Instant>,
    /// Range buffers the decoder is done with, to give back to the source.
    freed: Vec<Vec<u8>>,
    /// The first fetch error; the decoder reports it when it needs a page it kept from
    /// it (the first such page gets the error itself, later ones its message).
    failure: Option<Failure>,
    cancelled: bool,
}

/// A fetch error, handed to the first page that needs it and described to later ones
/// (as an error of the same sort: a file system error of the same kind, a remote one of
/// the same [`RemoteKind`]).
struct Failure {
    message: String,
    io_kind: Option<std::io::ErrorKind>,
    remote_kind: Option<RemoteKind>,
    error: Option<Error>,
}

impl Failure {
    fn new(error: Error) -> Failure {
        let io_kind = match error.root_cause() {
            Error::Io(crate::io::Error::Io { source, .. }) => Some(source.kind()),
            _ => None,
        };
        Failure {
            message: error.to_string(),
            io_kind,
            remote_kind: error.remote_kind(),
            error: Some(error),
        }
    }

    fn take(&mut self) -> Error {
        if let Some(error) = self.error.take() {
            return error;
        }
        match self.io_kind {
            Some(kind) => Error::Io(crate::io::Error::Io {
                what: "a planned read".into(),
                source: std::io::Error::new(kind, self.message.clone()),
            }),
            None => Error::Io(crate::io::Error::remote(
                self.remote_kind.unwrap_or(RemoteKind::Other),
                "a planned read",
                self.message.clone(),
            )),
        }
    }
}

/// The pages of a planned read, filled by the fetcher, taken by the decoder.
pub(crate) struct PageCache {
    state: Mutex<State>,
    changed: Condvar,
    counters: Arc<ReadCounters>,
}

impl PageCache {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data: keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The page at `key`: waits while its bunch is being fetched; `Ok(None)` when the
    /// plan did not include it (the caller reads it itself).
    pub(super) fn take(&self, key: PageKey) -> Result<Option<PageBytes>> {
        let mut state = self.lock();
        let Some(&bunch) = state.owner.get(&key) else {
            self.counters.misses.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        };
        let start = Instant::now();
        loop {
            if let Some(p) = state.pages.get(&key) {
                let p = p.clone();
                drop(state);
                let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.counters.wait_nanos.fetch_add(nanos, Ordering::Relaxed);
                self.counters
                    .bytes_used
                    .fetch_add(p.as_slice().len() as u64, Ordering::Relaxed);
                return Ok(Some(p));
            }
            if let Some(failure) = &mut state.failure {
                return Err(failure.take());
            }
            if state.outstanding.get(bunch).is_none_or(|&n| n == 0) || state.cancelled {
                // Fetched without this page (or given up): read it directly.
                self.counters.misses.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The decoder is done with bunch `k`: its pages are dropped and the fetcher may go
    /// further ahead.
    pub(super) fn finish_bunch(&self, k: usize, bunch: &Bunch) {
        let mut state = self.lock();
        let mut dropped: Vec<Arc<Vec<u8>>> = Vec::new();
        for key in bunch.pages() {
            if state.last_user.get(key) == Some(&k) {
                if let Some(PageBytes::Shared { buffer, .. }) = state.pages.remove(key) {
                    dropped.push(buffer);
                }
            }
        }
        // One handle per range buffer; a buffer nothing else holds goes back to the
        // source for its next reads.
        dropped.sort_by_key(Arc::as_ptr);
        dropped.dedup_by_key(|b| Arc::as_ptr(b));
        let freed = dropped.into_iter().filter_map(|b| Arc::try_unwrap(b).ok());
        state.freed.extend(freed);
        state.decoding = state.decoding.max(k + 1);
        drop(state);
        self.changed.notify_all();
    }
}

/// A running fetcher: the cache it fills and its thread, stopped when dropped.
pub(crate) struct Prefetcher {
    cache: Arc<PageCache>,
    bunches: Arc<Vec<Bunch>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Prefetcher {
    /// Starts fetching `bunches` from `source` within `limits`: at most `window` bunches
    /// ahead of the one being decoded, with up to `parallel` requests in flight. The bytes
    /// in flight start at about one bunch (`bunch_bytes`) and grow by one bunch per bunch
    /// received, up to `window` bunches: at first the requests of the first bunch do not
    /// share the link with those of the next ones, so decoding starts as early as it can.
    /// `uncached`: the requests bypass the page cache
    /// ([`crate::io::Access::Uncached`]).
    pub(super) fn start(
        source: Source,
        bunches: Arc<Vec<Bunch>>,
        limits: Limits,
        counters: Arc<ReadCounters>,
    ) -> Prefetcher {
        let mut owner = HashMap::new();
        let mut last_user = HashMap::new();
        for (k, b) in bunches.iter().enumerate() {
            for request in &b.requests {
                for range in request {
                    for &key in &range.pages {
                        owner.entry(key).or_insert(k);
                    }
                }
            }
            for &key in b.pages() {
                last_user.insert(key, k);
            }
        }
        let cache = Arc::new(PageCache {
            state: Mutex::new(State {
                pages: HashMap::new(),
                owner,
                last_user,
                outstanding: bunches.iter().map(|b| b.requests.len()).collect(),
                decoding: 0,
                issued: 0,
                in_flight_bytes: 0,
                window: limits.window.max(1),
                received_bytes: 0,
                first_request: None,
                freed: Vec::new(),
                failure: None,
                cancelled: false,
            }),
            changed: Condvar::new(),
            counters,
        });
        let worker = cache.clone();
        let plan = bunches.clone();
        let thread = std::thread::Builder::new()
            .name("rntuple-prefetch".into())
            .spawn(move || {
                let limits = Limits {
                    window: limits.window.max(1),
                    parallel: limits.parallel.max(1),
                    bunch_bytes: limits.bunch_bytes.max(1),
                    ..limits
                };
                fetch_all(&worker, &source, &bunches, limits);
            })
            .ok();
        if thread.is_none() {
            // No thread: every page is read on demand (correct, only slower).
            let mut state = cache.lock();
            state.cancelled = true;
        }
        Prefetcher {
            cache,
            bunches: plan,
            thread,
        }
    }

    /// The cache the decoder reads from.
    pub(super) fn cache(&self) -> &Arc<PageCache> {
        &self.cache
    }
}

impl Drop for Prefetcher {
    fn drop(&mut self) {
        self.cache.lock().cancelled = true;
        self.cache.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How far ahead the fetcher goes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Bunches ahead of the one being decoded, at least. The window grows to cover
    /// twice the bytes the link carries in a round trip (the bandwidth measured while
    /// fetching, times `round_trip`), up to `max_window`.
    pub(super) window: usize,
    /// The most bunches ahead, whatever the link.
    pub(super) max_window: usize,
    /// The source's round-trip time (zero: unknown, the window stays `window`).
    pub(super) round_trip: std::time::Duration,
    /// Requests in flight.
    pub(super) parallel: usize,
    /// The planned size of a bunch: the unit of the bytes kept in flight.
    pub(super) bunch_bytes: u64,
    /// Whether requests bypass the page cache.
    pub(super) uncached: bool,
}

impl Limits {
    /// The window for the bandwidth measured so far: twice the bytes in flight over one
    /// round trip, in bunches, within `window..=max_window`.
    fn window_for(&self, state: &State) -> usize {
        let Some(first) = state.first_request else {
            return self.window;
        };
        let seconds = first.elapsed().as_secs_f64();
        if seconds <= 0.0 || self.round_trip.is_zero() {
            return self.window;
        }
        let bandwidth = state.received_bytes as f64 / seconds;
        let ahead = 2.0 * bandwidth * self.round_trip.as_secs_f64();
        // A count of bunches: the float-to-int `as` saturates, as meant.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let bunches = (ahead / self.bunch_bytes.max(1) as f64).ceil() as usize;
        bunches.clamp(self.window, self.max_window.max(self.window))
    }

    /// Whether request `index` of bunch `k`, of `bytes`, may go out now. The first bunch
    /// still arriving may always use the link.
    fn allows(&self, state: &State, index: usize, k: usize, bytes: u64) -> bool {
        let complete = state.outstanding.iter().filter(|&&n| n == 0).count();
        let budget = self.bunch_bytes * (1 + complete).min(state.window) as u64;
        let first_incomplete = state.outstanding.iter().position(|&n| n > 0);
        state.issued == index
            && k < state.decoding + state.window
            && (first_incomplete.is_none_or(|first| k <= first)
                || state.in_flight_bytes + bytes <= budget)
    }
}

/// Issues every bunch's requests in order from `parallel` threads, each request as soon
/// as its bunch is within `window` bunches of the one being decoded and the bytes in
/// flight allow it: the requests of the next bunches overlap those of the current one,
/// so a round trip is paid once per window, not once per bunch.
fn fetch_all(cache: &PageCache, source: &Source, bunches: &[Bunch], limits: Limits) {
    let queue: Vec<(usize, usize, u64)> = bunches
        .iter()
        .enumerate()
        .flat_map(|(k, b)| {
            b.requests
                .iter()
                .enumerate()
                .map(move |(i, request)| (k, i, request.iter().map(|r| r.range.len).sum::<u64>()))
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..limits.parallel.min(queue.len()) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(k, i, bytes)) = queue.get(index) else {
                    return;
                };
                let freed = {
                    let mut state = cache.lock();
                    while !state.cancelled
                        && state.failure.is_none()
                        && !limits.allows(&state, index, k, bytes)
                    {
                        state = cache.changed.wait(state).unwrap_or_else(|p| p.into_inner());
                    }
                    if state.cancelled || state.failure.is_some() {
                        return;
                    }
                    state.issued += 1;
                    state.in_flight_bytes += bytes;
                    state.first_request.get_or_insert_with(Instant::now);
                    std::mem::take(&mut state.freed)
                };
                cache.changed.notify_all();
                let request = &bunches[k].requests[i];
                let ranges: Vec<_> = request.iter().map(|r| r.range).collect();
                let access = if limits.uncached {
                    Access::Uncached
                } else {
                    Access::Normal
                };
                // The buffers of bunches decoded go back to the source with the read.
                let read = ReadRequest::new(&ranges).access(access).spare(freed);
                let result = source.read(read);
                {
                    let mut state = cache.lock();
                    state.in_flight_bytes -= bytes;
                    if result.is_ok() {
                        state.received_bytes += bytes;
                        state.window = limits.window_for(&state);
                    }
                }
                match result {
                    Ok(buffers) => file_pages(cache, request, buffers, k),
                    Err(e) => {
                        let mut state = cache.lock();
                        if state.failure.is_none() {
                            state.failure = Some(Failure::new(e.into()));
                        }
                        drop(state);
                        cache.changed.notify_all();
                        return;
                    }
                }
            });
        }
    });
}

fn file_pages(
    cache: &PageCache,
    request: &[super::plan::MergedRange],
    buffers: Vec<RangeBuffer>,
    bunch: usize,
) {
    let mut state = cache.lock();
    if let Some(n) = state.outstanding.get_mut(bunch) {
        *n = n.saturating_sub(1);
    }
    for (range, read) in request.iter().zip(buffers) {
        let buffer = Arc::new(read.buffer);
        for key in &range.pages {
            // A source that returned fewer bytes than asked (or a page beyond the address
            // space) leaves the page unfiled: the decoder then reads it itself and
            // reports what is wrong.
            let within = |start: u64, len: u64| {
                let start = usize::try_from(start).ok()?.checked_add(read.start)?;
                let len = usize::try_from(len).ok()?;
                (start.checked_add(len)? <= buffer.len()).then_some((start, len))
            };
            if let Some((start, len)) = within(key.offset - range.range.offset, key.len) {
                state.pages.insert(
                    *key,
                    PageBytes::Shared {
                        buffer: buffer.clone(),
                        start,
                        len,
                    },
                );
            }
        }
    }
    drop(state);
    cache.changed.notify_all();
}

/// The pages of a planned read: taken from the prefetcher's cache, or read on demand
/// when the plan left them out (multi-key pages) or its fetch came up short.
pub(crate) struct PrefetchedPages {
    prefetcher: Prefetcher,
    direct: DirectPages,
}

impl PrefetchedPages {
    /// Pages from `prefetcher`, else from `direct`.
    pub(crate) fn new(prefetcher: Prefetcher, direct: DirectPages) -> PrefetchedPages {
        PrefetchedPages { prefetcher, direct }
    }
}

impl PageSource for PrefetchedPages {
    fn page(&self, page: &PageInfo) -> Result<PageBytes> {
        let key = PageKey {
            offset: page.locator.offset,
            len: stored_page_len(page),
        };
        match self.prefetcher.cache().take(key)? {
            Some(bytes) => Ok(bytes),
            None => self.direct.page(page),
        }
    }

    fn count_shared(&self, bytes: u64) {
        self.direct.count_shared(bytes);
    }

    fn storage_size(&self) -> u64 {
        self.direct.storage_size()
    }

    fn done_with(&self, k: usize) {
        if let Some(bunch) = self.prefetcher.bunches.get(k) {
            self.prefetcher.cache().finish_bunch(k, bunch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{ByteRange, IoMetricsSnapshot, MemorySource, ReadAt, ReadRanges};
    use crate::read::source::plan::{two_page_bunch, MergedRange};
    use std::time::Duration;

    /// A slow source that logs when each request starts and ends, and keeps the buffers
    /// given back to it. The requests starting at the offsets of `together` are held
    /// until all of them started (at most 30 s): requests sent at once are then in flight
    /// at once however the threads are scheduled, and requests sent one after the other
    /// show it (the first ends, after the wait, before the next starts).
    struct Logged {
        inner: MemorySource,
        log: Mutex<Vec<(&'static str, u64)>>,
        recycled: Mutex<Vec<Vec<u8>>>,
        together: Vec<u64>,
        arrived: std::sync::atomic::AtomicUsize,
    }

    impl ReadAt for Logged {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn size(&self) -> u64 {
            self.inner.size()
        }
        fn read_at(&self, offset: u64, len: u64) -> crate::io::Result<Vec<u8>> {
            self.inner.read_at(offset, len)
        }
        fn read(&self, request: ReadRequest<'_>) -> crate::io::Result<Vec<RangeBuffer>> {
            let ReadRequest {
                ranges,
                access,
                spare,
            } = request;
            self.recycled.lock().unwrap().extend(spare);
            let first = ranges.first().map_or(0, |r| r.offset);
            if access == Access::Uncached {
                // As a direct read: each range's bytes after a few of the block before it.
                self.log.lock().unwrap().push(("uncached", first));
                let reads = self.inner.read_ranges(ranges)?;
                let padded = reads.into_iter().map(|bytes| {
                    let mut buffer = vec![0xEE; 5];
                    buffer.extend(bytes);
                    RangeBuffer { buffer, start: 5 }
                });
                return Ok(padded.collect());
            }
            self.log.lock().unwrap().push(("start", first));
            if self.together.contains(&first) {
                use std::sync::atomic::Ordering::SeqCst;
                self.arrived.fetch_add(1, SeqCst);
                let deadline = Instant::now() + Duration::from_secs(30);
                while self.arrived.load(SeqCst) < self.together.len() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            std::thread::sleep(Duration::from_millis(40));
            let out = self.inner.read(ReadRequest::new(ranges));
            self.log.lock().unwrap().push(("end", first));
            out
        }
        fn metrics(&self) -> IoMetricsSnapshot {
            self.inner.metrics()
        }
    }

    fn logged(data: &[u8]) -> Arc<Logged> {
        logged_together(data, &[])
    }

    /// [`logged`], the requests starting at `together` held until all of them started.
    fn logged_together(data: &[u8], together: &[u64]) -> Arc<Logged> {
        Arc::new(Logged {
            inner: MemorySource::new("mem", data.to_vec()),
            log: Mutex::new(Vec::new()),
            recycled: Mutex::new(Vec::new()),
            together: together.to_vec(),
            arrived: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Bunch `k`, request `i` reads the 100 bytes at `k * 1000 + i * 100`.
    fn bunches(n: usize, requests: usize) -> Vec<Bunch> {
        (0..n)
            .map(|k| Bunch {
                entries: k as u64..k as u64 + 1,
                fields: None,
                requests: (0..requests)
                    .map(|i| {
                        let offset = (k * 1000 + i * 100) as u64;
                        vec![MergedRange {
                            range: ByteRange { offset, len: 100 },
                            pages: vec![PageKey { offset, len: 100 }],
                        }]
                    })
                    .collect(),
                reused: Vec::new(),
            })
            .collect()
    }

    /// Fetches `plan` from `source` (bunches of 200 bytes) and takes every page of every
    /// bunch in turn, checking its bytes, as the decoder does.
    fn fetch_and_decode(
        source: &Arc<Logged>,
        plan: &Arc<Vec<Bunch>>,
        window: usize,
        parallel: usize,
        uncached: bool,
        data: &[u8],
    ) {
        let limits = Limits {
            window,
            max_window: window,
            round_trip: Duration::ZERO,
            parallel,
            bunch_bytes: 200,
            uncached,
        };
        let prefetcher = Prefetcher::start(
            source.clone(),
            plan.clone(),
            limits,
            Arc::new(ReadCounters::default()),
        );
        for (k, bunch) in plan.iter().enumerate() {
            for key in bunch.pages() {
                let page = prefetcher.cache().take(*key).unwrap().unwrap();
                let at = key.offset as usize;
                assert_eq!(page.as_slice(), &data[at..at + key.len as usize]);
            }
            prefetcher.cache().finish_bunch(k, bunch);
        }
    }

    #[test]
    fn the_window_grows_with_bandwidth_times_round_trip() {
        let limits = |round_trip_ms: u64| Limits {
            window: 3,
            max_window: 10,
            round_trip: Duration::from_millis(round_trip_ms),
            parallel: 4,
            bunch_bytes: 1_000_000,
            uncached: false,
        };
        let state = |received: u64| State {
            pages: HashMap::new(),
            owner: HashMap::new(),
            last_user: HashMap::new(),
            outstanding: Vec::new(),
            decoding: 0,
            issued: 0,
            in_flight_bytes: 0,
            window: 3,
            received_bytes: received,
            first_request: Instant::now().checked_sub(Duration::from_millis(1000)),
            freed: Vec::new(),
            failure: None,
            cancelled: false,
        };
        // 2 MB/s over a 1 s round trip: 4 MB in flight, 4 bunches.
        assert_eq!(limits(1000).window_for(&state(2_000_000)), 4);
        // Slower than the minimum: the minimum; faster than the maximum: the maximum.
        assert_eq!(limits(1000).window_for(&state(100_000)), 3);
        assert_eq!(limits(1000).window_for(&state(1_000_000_000)), 10);
        // No round trip known, or nothing received yet: the minimum.
        assert_eq!(limits(0).window_for(&state(1_000_000_000)), 3);
        let mut fresh = state(0);
        fresh.first_request = None;
        assert_eq!(limits(1000).window_for(&fresh), 3);
    }

    #[test]
    fn the_first_bunch_does_not_share_the_link_with_the_next_ones() {
        let data: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
        // Bunch 0's two requests each wait for the other to start.
        let source = logged_together(&data, &[0, 100]);
        let plan = Arc::new(bunches(3, 2));
        // One bunch is 200 bytes; 4 requests could be in flight at once.
        fetch_and_decode(&source, &plan, 3, 4, false, &data);
        let log = source.log.lock().unwrap().clone();
        let position = |event: (&str, u64)| log.iter().position(|e| *e == event).unwrap();
        // Both requests of bunch 0 go out at once; bunch 1's first only once one of
        // them has arrived (then the budget is one bunch in flight).
        let first_end = log.iter().position(|e| e.0 == "end").unwrap();
        assert!(position(("start", 0)) < first_end, "{log:?}");
        assert!(position(("start", 100)) < first_end, "{log:?}");
        assert!(position(("start", 1000)) > first_end, "{log:?}");
        assert_eq!(log.len(), 12, "every request once: {log:?}");
    }

    #[test]
    fn range_buffers_go_back_to_the_source_once_decoded() {
        let data: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
        let source = logged(&data);
        // Two bunches of one request each: one range holding two pages.
        let plan: Arc<Vec<Bunch>> =
            Arc::new((0..2u64).map(|k| two_page_bunch(k, 100, 200)).collect());
        // A window of one bunch: bunch 1 is asked for only after bunch 0 is decoded.
        fetch_and_decode(&source, &plan, 1, 2, false, &data);
        // Bunch 0's range buffer came back (with its bytes: the same buffer) before
        // bunch 1 was asked for; bunch 1's was freed when the read ended.
        let recycled = source.recycled.lock().unwrap().clone();
        assert_eq!(recycled, vec![data[0..200].to_vec()]);
    }

    #[test]
    fn uncached_reads_file_each_page_from_where_its_range_starts_in_the_buffer() {
        let data: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
        let source = logged(&data);
        let plan = Arc::new(bunches(3, 2));
        // Every page is checked against the data as it is taken.
        fetch_and_decode(&source, &plan, 3, 4, true, &data);
        let log = source.log.lock().unwrap().clone();
        let uncached = log.iter().filter(|e| e.0 == "uncached").count();
        assert_eq!(uncached, 6, "every request as an uncached read: {log:?}");
        assert!(log.iter().all(|e| e.0 == "uncached"), "{log:?}");
    }
}
