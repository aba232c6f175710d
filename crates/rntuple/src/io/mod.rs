//! Byte sources: where the bytes come from. Knows nothing of ROOT or RNTuple.

mod local;

pub use local::LocalFile;

use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One byte range to read: offset and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// Offset from the start of the source.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

/// Counters of what a source was asked for, to check every claim about I/O.
#[derive(Debug, Default)]
pub struct IoMetrics {
    requests: AtomicU64,
    vector_requests: AtomicU64,
    ranges: AtomicU64,
    bytes_read: AtomicU64,
    wait_nanos: AtomicU64,
}

/// A copy of the counters of an [`IoMetrics`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoMetricsSnapshot {
    /// Calls to the source (single or vectored).
    pub requests: u64,
    /// Of those, vectored calls.
    pub vector_requests: u64,
    /// Byte ranges asked for in all calls.
    pub ranges: u64,
    /// Bytes delivered.
    pub bytes_read: u64,
    /// Wall time spent waiting for the source, in nanoseconds.
    pub wait_nanos: u64,
}

impl IoMetrics {
    /// Records one call that read `ranges` ranges with `bytes` bytes in total, started at `start`.
    pub fn record(&self, vectored: bool, ranges: u64, bytes: u64, start: Instant) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if vectored {
            self.vector_requests.fetch_add(1, Ordering::Relaxed);
        }
        self.ranges.fetch_add(ranges, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.wait_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> IoMetricsSnapshot {
        IoMetricsSnapshot {
            requests: self.requests.load(Ordering::Relaxed),
            vector_requests: self.vector_requests.load(Ordering::Relaxed),
            ranges: self.ranges.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            wait_nanos: self.wait_nanos.load(Ordering::Relaxed),
        }
    }
}

/// A random-access source of bytes: a local file, later HTTP, XRootD or S3.
pub trait ReadAt: Send + Sync {
    /// A name for messages: the path or URL.
    fn name(&self) -> &str;
    /// The size of the source in bytes.
    fn size(&self) -> u64;
    /// Reads exactly `len` bytes at `offset`; reading past the end is an error.
    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>>;
    /// Reads many ranges in one call; sources that can, do it in one request.
    fn read_ranges(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        ranges
            .iter()
            .map(|r| self.read_at(r.offset, r.len))
            .collect()
    }
    /// The counters of this source.
    fn metrics(&self) -> IoMetricsSnapshot;
}

/// A shared byte source.
pub type Source = Arc<dyn ReadAt>;

/// Opens a byte source from a path (later: URL by scheme).
pub fn open_source(path: &str) -> Result<Source> {
    Ok(Arc::new(LocalFile::open(path)?))
}

/// An in-memory source, for tests and for data already in memory.
#[derive(Debug)]
pub struct MemorySource {
    name: String,
    data: Vec<u8>,
    metrics: IoMetrics,
}

impl MemorySource {
    /// Wraps `data` as a source called `name`.
    pub fn new(name: impl Into<String>, data: Vec<u8>) -> Self {
        MemorySource {
            name: name.into(),
            data,
            metrics: IoMetrics::default(),
        }
    }
}

impl ReadAt for MemorySource {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> u64 {
        self.data.len() as u64
    }
    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let start = Instant::now();
        let slice = checked_slice(&self.data, offset, len, &self.name)?;
        let out = slice.to_vec();
        self.metrics.record(false, 1, len, start);
        Ok(out)
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
}

/// The bytes `[offset, offset + len)` of `data`, or a truncation error naming `what`.
pub fn checked_slice<'a>(data: &'a [u8], offset: u64, len: u64, what: &str) -> Result<&'a [u8]> {
    let size = data.len() as u64;
    let end = offset.checked_add(len);
    match end {
        Some(end) if end <= size => Ok(&data[offset as usize..end as usize]),
        _ => Err(crate::error::Error::Truncated {
            what: what.to_string(),
            offset,
            needed: len,
            available: size.saturating_sub(offset),
        }),
    }
}
