//! Local files, read with positioned reads (`pread`), safe to share between threads.

use super::{IoMetrics, IoMetricsSnapshot, ReadAt};
use crate::error::{to_usize, Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant;

/// A local file opened for reading.
#[derive(Debug)]
pub struct LocalFile {
    path: String,
    file: File,
    size: u64,
    metrics: IoMetrics,
}

impl LocalFile {
    /// Opens `path` for reading.
    pub fn open(path: &str) -> Result<Self> {
        let io_err = |source| Error::Io {
            what: path.to_string(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        let size = file.metadata().map_err(io_err)?.len();
        Ok(LocalFile {
            path: path.to_string(),
            file,
            size,
            metrics: IoMetrics::default(),
        })
    }
}

impl LocalFile {
    /// A read of `len` bytes at `offset` must lie inside the file.
    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::Truncated {
                what: format!("file {}", self.path),
                offset,
                needed: len,
                available: self.size.saturating_sub(offset),
            }),
        }
    }
}

impl ReadAt for LocalFile {
    fn name(&self) -> &str {
        &self.path
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        // Bound the allocation by the file's real size before allocating.
        self.check_range(offset, len)?;
        let mut buf = vec![0u8; to_usize(len, "a read")?];
        self.read_at_into(offset, &mut buf)?;
        Ok(buf)
    }

    fn read_at_into(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len() as u64;
        self.check_range(offset, len)?;
        let start = Instant::now();
        self.file
            .read_exact_at(buf, offset)
            .map_err(|source| Error::Io {
                what: format!("{} ({len} bytes at offset {offset})", self.path),
                source,
            })?;
        self.metrics.record(false, 1, len, start);
        Ok(())
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
}
