//! Local files, read with positioned reads (`pread`), safe to share between threads.

use super::{ByteRange, IoMetrics, IoMetricsSnapshot, ReadAt};
use crate::error::{to_usize, Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant;

/// The piece of a range a read-ahead hint asks for at a time: Linux's default
/// read-ahead size, the most one `POSIX_FADV_WILLNEED` reads.
#[cfg(target_os = "linux")]
const WILL_NEED_PIECE: u64 = 128 << 10;

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

    /// The error of a failed read of `len` bytes at `offset`, naming the file and where.
    fn read_error(&self, offset: u64, len: u64, source: std::io::Error) -> Error {
        Error::Io {
            what: format!("{} ({len} bytes at offset {offset})", self.path),
            source,
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
        #[cfg(target_os = "linux")]
        {
            // Read into the buffer's spare capacity: its bytes are not zeroed first only
            // to be overwritten (that cost as much as a copy of every page read).
            let mut buf = Vec::with_capacity(to_usize(len, "a read")?);
            let start = Instant::now();
            while buf.len() < buf.capacity() {
                let at = offset + buf.len() as u64;
                let n = match rustix::io::pread(
                    &self.file,
                    rustix::buffer::spare_capacity(&mut buf),
                    at,
                ) {
                    Ok(n) => n,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(self.read_error(offset, len, e.into())),
                };
                if n == 0 {
                    let eof = std::io::ErrorKind::UnexpectedEof.into();
                    return Err(self.read_error(offset, len, eof));
                }
            }
            self.metrics.record(false, 1, len, start);
            Ok(buf)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let mut buf = vec![0u8; to_usize(len, "a read")?];
            self.read_at_into(offset, &mut buf)?;
            Ok(buf)
        }
    }

    fn read_at_into(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len() as u64;
        self.check_range(offset, len)?;
        let start = Instant::now();
        self.file
            .read_exact_at(buf, offset)
            .map_err(|source| self.read_error(offset, len, source))?;
        self.metrics.record(false, 1, len, start);
        Ok(())
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }

    fn will_need(&self, ranges: &[ByteRange]) {
        #[cfg(target_os = "linux")]
        for r in ranges {
            // Linux reads at most the device's read-ahead size (often 128 KiB) per
            // WILLNEED: a long range is asked for in pieces of that size. A hint: the
            // kernel starts reading and returns; a failure changes nothing.
            let end = r.offset.saturating_add(r.len).min(self.size);
            let mut at = r.offset;
            while at < end {
                let len = WILL_NEED_PIECE.min(end - at);
                let _ = rustix::fs::fadvise(
                    &self.file,
                    at,
                    std::num::NonZeroU64::new(len),
                    rustix::fs::Advice::WillNeed,
                );
                at += len;
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = ranges;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_ahead_hints_never_fail_and_change_no_byte() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let path = file.path().to_str().unwrap().to_string();
        let local = LocalFile::open(&path).unwrap();
        local.will_need(&[
            ByteRange {
                offset: 0,
                len: 4096,
            },
            ByteRange {
                offset: 50_000,
                len: 0,
            },
            ByteRange {
                offset: 90_000,
                len: 1 << 40,
            },
            ByteRange {
                offset: u64::MAX,
                len: 1,
            },
        ]);
        assert_eq!(local.read_at(0, 100_000).unwrap(), data);
    }

    #[test]
    fn reads_give_exactly_the_bytes_asked_for() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let local = LocalFile::open(file.path().to_str().unwrap()).unwrap();
        for (offset, len) in [
            (0u64, 1u64),
            (1, 299_999),
            (123_457, 65_536),
            (299_999, 1),
            (5, 0),
        ] {
            let got = local.read_at(offset, len).unwrap();
            assert_eq!(got, data[offset as usize..(offset + len) as usize]);
        }
        assert!(local.read_at(299_999, 2).is_err(), "past the end");
        assert!(local.read_at(u64::MAX, 2).is_err());
        let before = local.metrics();
        local.read_at(10, 100).unwrap();
        assert_eq!(local.metrics().bytes_read - before.bytes_read, 100);
    }
}
