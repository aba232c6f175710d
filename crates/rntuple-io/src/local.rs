//! Local files, read with positioned reads (`pread`), safe to share between threads.
//!
//! On Linux a large read of pages that are mostly not in the page cache reads them with
//! direct I/O (`O_DIRECT`, [`Access::Uncached`],
//! [`DIRECT_IO_VARIABLE`](crate::DIRECT_IO_VARIABLE)): from the disk into the reader's buffers, without the kernel filling the page cache and
//! copying out of it. On the benchmark's virtual machines those two made a cold read of
//! a 9.4 GB file cost about twice the CPU of a warm one (`bench/RESULTS.md`).

use super::spare_buffers::SpareBuffers;
use super::{
    Access, ByteRange, IoMetrics, IoMetricsSnapshot, PageCacheHoldings, RangeBuffer, ReadAt,
    ReadHints, ReadRequest, SourceProfile,
};
use crate::error::{to_usize, Error, Result};
use crate::options::DirectIo;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Instant;

/// Direct reads move whole blocks: their offsets, lengths and buffer addresses are
/// multiples of this (the largest logical block size of common disks).
#[cfg(target_os = "linux")]
const DIRECT_ALIGN: usize = 4096;

/// A read bypasses the page cache when less than this share of its pages are cached.
#[cfg(target_os = "linux")]
const COLD_SHARE: f64 = 0.5;

/// How a planned read's ranges are probed for being cached: this many windows ...
#[cfg(target_os = "linux")]
const PROBE_WINDOWS: u64 = 64;

/// ... of at most this many bytes, spread evenly over the ranges.
#[cfg(target_os = "linux")]
const PROBE_BYTES: u64 = 256 << 10;

/// When a planned read of pages mostly not in the page cache reads them with direct I/O
/// (from [`DIRECT_IO_VARIABLE`](crate::DIRECT_IO_VARIABLE)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirectReads {
    /// Never (`never`, `0`): every read goes through the page cache.
    Never,
    /// Reads of at least this many bytes (`auto`, the default: a quarter of the
    /// machine's memory). A read that large pushes much of the page cache out, its own
    /// pages with it, so keeping them would rarely speed up a later read; a smaller file
    /// stays cached for the next read of it, as a physicist re-running a notebook expects.
    AtLeast(u64),
    /// Every such read (`always`, `1`).
    Always,
}

impl DirectReads {
    /// The policy of the setting `direct_io`.
    fn of(direct_io: DirectIo) -> DirectReads {
        match direct_io {
            DirectIo::Auto => DirectReads::AtLeast(physical_memory() / 4),
            DirectIo::Never => DirectReads::Never,
            DirectIo::Always => DirectReads::Always,
        }
    }

    /// The policy a value of `RNTUPLE_DIRECT_IO` sets.
    #[cfg(test)]
    fn parse(value: &str) -> Result<DirectReads> {
        DirectIo::parse(value, crate::DIRECT_IO_VARIABLE).map(DirectReads::of)
    }

    /// Whether a read of `bytes` may bypass the page cache.
    fn allows(self, bytes: u64) -> bool {
        match self {
            DirectReads::Never => false,
            DirectReads::AtLeast(min) => bytes >= min,
            DirectReads::Always => true,
        }
    }
}

/// The machine's memory in bytes (`MemTotal` of `/proc/meminfo`), or `u64::MAX` where
/// it cannot be read (then only `always` reads directly).
fn physical_memory() -> u64 {
    static MEMORY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MEMORY.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        info.lines()
            .find_map(|line| {
                let kib = line.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
                kib.trim().parse::<u64>().ok()?.checked_mul(1024)
            })
            .unwrap_or(u64::MAX)
    })
}

/// The piece of a range a read-ahead hint asks for at a time: Linux's default
/// read-ahead size, the most one `POSIX_FADV_WILLNEED` reads.
#[cfg(target_os = "linux")]
const WILL_NEED_PIECE: u64 = 128 << 10;

/// A local file opened for reading.
#[derive(Debug)]
pub struct LocalFile {
    path: String,
    /// The open file, shared with the view of its page cache in its profile.
    disk: Arc<Disk>,
    metrics: IoMetrics,
    /// Buffers of direct reads the reader gave back, reused for the next ones.
    spare: SpareBuffers,
}

/// An open file and what reading it past the page cache needs: what the read planner's
/// view of the file's page cache ([`PageCacheHoldings`]) shares with the file.
#[derive(Debug)]
struct Disk {
    file: File,
    size: u64,
    /// The same file opened for direct I/O, at the first read that bypasses the page
    /// cache; `None` where the file system refuses it (tmpfs).
    #[cfg(target_os = "linux")]
    direct: std::sync::OnceLock<Option<File>>,
    /// When planned reads bypass the page cache.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    direct_reads: DirectReads,
}

/// Opens `path` for reading if it is a file that can be read at any offset: a regular
/// file or a block device. A directory, a FIFO, a socket or a character device is
/// refused with an error saying what it is. The file is opened without blocking, so a
/// FIFO without a writer is refused at once instead of hanging the open.
fn open_regular(path: &str) -> std::io::Result<File> {
    use rustix::fs::FileType;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking only matters for the open of a FIFO; reads of a regular file or
        // block device ignore it.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let found = FileType::from_raw_mode(rustix::fs::fstat(&file)?.st_mode);
    match found {
        // A block device reads at any offset, as a file does.
        FileType::RegularFile | FileType::BlockDevice => Ok(file),
        _ => Err(std::io::Error::new(
            if found == FileType::Directory {
                std::io::ErrorKind::IsADirectory
            } else {
                std::io::ErrorKind::InvalidInput
            },
            format!(
                "it is {}, not a file that can be read at any offset",
                super::dirfd::describe(found)
            ),
        )),
    }
}

impl LocalFile {
    /// Opens `path` for reading. Planned reads of pages mostly not in the page cache
    /// bypass it as [`DIRECT_IO_VARIABLE`](crate::DIRECT_IO_VARIABLE) says (`auto`,
    /// `always` or `never`); another value is an error.
    pub fn open(path: &str) -> Result<Self> {
        Self::open_with(path, crate::settings::direct_io_from_env()?)
    }

    /// Opens `path` for reading; planned reads of pages mostly not in the page cache
    /// bypass it as `direct_io` says.
    pub fn open_with(path: &str, direct_io: DirectIo) -> Result<Self> {
        let direct_reads = DirectReads::of(direct_io);
        let io_err = |source| Error::Io {
            what: path.to_string(),
            source,
        };
        let file = open_regular(path).map_err(io_err)?;
        let size = file.metadata().map_err(io_err)?.len();
        Ok(LocalFile {
            path: path.to_string(),
            disk: Arc::new(Disk {
                file,
                size,
                #[cfg(target_os = "linux")]
                direct: std::sync::OnceLock::new(),
                direct_reads,
            }),
            metrics: IoMetrics::default(),
            spare: SpareBuffers::default(),
        })
    }
}

impl LocalFile {
    /// The same file with another direct-read policy (tests of small files).
    #[cfg(test)]
    fn with_direct_reads(mut self, direct_reads: DirectReads) -> LocalFile {
        Arc::get_mut(&mut self.disk).unwrap().direct_reads = direct_reads;
        self
    }

    /// A read of `len` bytes at `offset` must lie inside the file.
    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.disk.size => Ok(()),
            _ => Err(Error::Truncated {
                what: format!("file {}", self.path),
                offset,
                needed: len,
                available: self.disk.size.saturating_sub(offset),
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

#[cfg(target_os = "linux")]
impl Disk {
    /// The file opened for direct I/O, or `None` where that is refused.
    fn direct_file(&self) -> Option<&File> {
        self.direct
            .get_or_init(|| {
                use std::os::unix::fs::OpenOptionsExt;
                use std::os::unix::io::AsRawFd;
                // The open file itself, through /proc: the path may name another file
                // by now.
                let own = format!("/proc/self/fd/{}", self.file.as_raw_fd());
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(own)
                    .ok()
            })
            .as_ref()
    }

    /// How many of the memory pages holding bytes `offset..offset + len` are in the page
    /// cache, and of how many; `None` if that cannot be told.
    fn cached_pages(&self, offset: u64, len: u64) -> Option<(usize, usize)> {
        use std::os::unix::io::AsRawFd;
        let page_len = rustix::param::page_size();
        let page = page_len as u64;
        let first = offset / page * page;
        let end = offset.checked_add(len)?.min(self.size);
        if end <= first {
            return None;
        }
        let map_len = usize::try_from(end - first).ok()?;
        let pages = map_len.div_ceil(page_len);
        let mut state = vec![0u8; pages];
        // SAFETY: a new read-only shared mapping of a file this value holds open, at a
        // page-aligned offset inside it; its memory is never read or written, only its
        // page-cache state asked for (`mincore` does not fault it in).
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                self.file.as_raw_fd(),
                libc::off_t::try_from(first).ok()?,
            )
        };
        if addr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: `addr` is the page-aligned start of the `map_len` bytes mapped above,
        // and `state` holds one byte for each of their pages, as mincore writes.
        let status = unsafe { libc::mincore(addr, map_len, state.as_mut_ptr()) };
        // SAFETY: unmaps exactly the mapping made above; nothing refers to it.
        unsafe { libc::munmap(addr, map_len) };
        (status == 0).then(|| (state.iter().filter(|&&s| s & 1 != 0).count(), pages))
    }

    /// Whether most of the pages of the `(offset, len)` windows are not in the page cache.
    fn mostly_uncached(&self, windows: impl Iterator<Item = (u64, u64)>) -> bool {
        let (mut cached, mut probed) = (0usize, 0usize);
        for (offset, len) in windows {
            if let Some((c, p)) = self.cached_pages(offset, len) {
                cached += c;
                probed += p;
            }
        }
        probed > 0 && (cached as f64) < COLD_SHARE * probed as f64
    }
}

#[cfg(target_os = "linux")]
impl PageCacheHoldings for Disk {
    fn uncached_hints(&self, ranges: &[ByteRange]) -> Option<ReadHints> {
        let total: u64 = ranges.iter().map(|r| r.len).sum();
        if total == 0 || !self.direct_reads.allows(total) {
            return None;
        }
        // Windows at evenly spaced points of the ranges laid end to end.
        let step = total.div_ceil(PROBE_WINDOWS).max(1);
        let mut windows = Vec::new();
        let (mut before, mut next) = (0u64, 0u64);
        for r in ranges {
            while next < before + r.len {
                let at = next - before;
                windows.push((r.offset + at, PROBE_BYTES.min(r.len - at)));
                next += step;
            }
            before += r.len;
        }
        let cold = self.mostly_uncached(windows.into_iter());
        (cold && self.direct_file().is_some()).then_some(ReadHints::LOCAL_UNCACHED)
    }
}

#[cfg(target_os = "linux")]
impl LocalFile {
    /// Reads `range` bypassing the page cache: whole aligned blocks into an aligned spot
    /// of a reused buffer. Ranges mostly in the page cache, and what direct I/O refuses
    /// or leaves unaligned (a short read), are read through the page cache.
    fn read_uncached(&self, range: ByteRange) -> Result<RangeBuffer> {
        self.check_range(range.offset, range.len)?;
        let len = to_usize(range.len, "a read")?;
        let start = Instant::now();
        let disk = &*self.disk;
        let mut direct = disk
            .direct_file()
            .filter(|_| disk.mostly_uncached(std::iter::once((range.offset, range.len))));
        let align = DIRECT_ALIGN as u64;
        let first = range.offset / align * align;
        let lead = to_usize(range.offset - first, "a read")?;
        let wanted = lead + len;
        let span = wanted.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        let mut buffer = self.spare.take(span + DIRECT_ALIGN);
        let pad = buffer.as_ptr().align_offset(DIRECT_ALIGN);
        buffer.resize(pad, 0);
        let mut done = 0usize;
        while done < wanted {
            // Direct reads ask for whole blocks (the last one past the range's end).
            let (file, limit) = match direct {
                Some(d) => (d, span - done),
                None => (&disk.file, wanted - done),
            };
            let Some(rest) = buffer.spare_capacity_mut().get_mut(..limit) else {
                // Cannot happen (the capacity covers pad and span); never short data.
                let small = std::io::Error::other("read buffer smaller than the read");
                return Err(self.read_error(range.offset, range.len, small));
            };
            match rustix::io::pread(file, rest, first + done as u64) {
                Ok((read, _)) if !read.is_empty() => {
                    let n = read.len();
                    // SAFETY: pread initialised these `n` bytes, the first of the spare
                    // capacity, right after the buffer's length.
                    unsafe { buffer.set_len(buffer.len() + n) };
                    done += n;
                    if n % DIRECT_ALIGN != 0 {
                        // The end of the file, or a short read: not aligned any more.
                        direct = None;
                    }
                }
                Err(rustix::io::Errno::INTR) => {}
                // Direct I/O refused here (EINVAL), or an end of file it saw early: the
                // rest through the page cache, which reports real errors.
                _ if direct.is_some() => direct = None,
                Ok(_) => {
                    let eof = std::io::ErrorKind::UnexpectedEof.into();
                    return Err(self.read_error(range.offset, range.len, eof));
                }
                Err(e) => return Err(self.read_error(range.offset, range.len, e.into())),
            }
        }
        // Past the range: the last block's tail.
        buffer.truncate(pad + wanted);
        self.metrics.record(false, 1, range.len, start);
        Ok(RangeBuffer {
            buffer,
            start: pad + lead,
        })
    }
}

impl ReadAt for LocalFile {
    fn name(&self) -> &str {
        &self.path
    }

    fn size(&self) -> u64 {
        self.disk.size
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
                    &self.disk.file,
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
        self.disk
            .file
            .read_exact_at(buf, offset)
            .map_err(|source| self.read_error(offset, len, source))?;
        self.metrics.record(false, 1, len, start);
        Ok(())
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }

    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        let ranges = request.ranges;
        for buffer in request.spare {
            self.spare.put(buffer);
        }
        match request.access {
            #[cfg(target_os = "linux")]
            Access::Uncached => ranges.iter().map(|&r| self.read_uncached(r)).collect(),
            Access::WillNeed => {
                self.will_need(ranges);
                Ok(Vec::new())
            }
            _ => ranges
                .iter()
                .map(|r| self.read_at(r.offset, r.len).map(RangeBuffer::whole))
                .collect(),
        }
    }

    fn profile(&self) -> SourceProfile {
        #[cfg(target_os = "linux")]
        let page_cache = Some(self.disk.clone() as Arc<dyn PageCacheHoldings>);
        #[cfg(not(target_os = "linux"))]
        let page_cache = None;
        SourceProfile {
            page_cache,
            ..SourceProfile::default()
        }
    }
}

impl LocalFile {
    /// Asks the kernel to read `ranges` into the page cache in the background
    /// ([`Access::WillNeed`]).
    fn will_need(&self, ranges: &[ByteRange]) {
        #[cfg(target_os = "linux")]
        for r in ranges {
            // Linux reads at most the device's read-ahead size (often 128 KiB) per
            // WILLNEED: a long range is asked for in pieces of that size. A hint: the
            // kernel starts reading and returns; a failure changes nothing.
            let end = r.offset.saturating_add(r.len).min(self.disk.size);
            let mut at = r.offset;
            while at < end {
                let len = WILL_NEED_PIECE.min(end - at);
                let _ = rustix::fs::fadvise(
                    &self.disk.file,
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
    fn a_directory_or_a_fifo_is_refused_at_once_saying_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap().to_string();
        let err = LocalFile::open(&path).unwrap_err();
        assert!(err.to_string().contains("it is a directory"), "{err}");
        assert!(err.to_string().contains(&path), "{err}");
        #[cfg(unix)]
        {
            let fifo = dir.path().join("events.root");
            let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: `c_path` is a valid NUL-terminated path that outlives the call.
            assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
            // Without a writer, a blocking open would never return.
            let err = LocalFile::open(fifo.to_str().unwrap()).unwrap_err();
            assert!(err.to_string().contains("a FIFO (named pipe)"), "{err}");
            let Error::Io { source, .. } = err else {
                panic!("not an I/O error: {err}")
            };
            assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn read_ahead_hints_never_fail_and_change_no_byte() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let path = file.path().to_str().unwrap().to_string();
        let local = LocalFile::open(&path).unwrap();
        let hint = ReadRequest::new(&[
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
        ])
        .access(Access::WillNeed);
        assert!(local.read(hint).unwrap().is_empty(), "nothing read");
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

    /// What the file's profile says of a planned read of `ranges` past the page cache.
    #[cfg(target_os = "linux")]
    fn uncached_hints(local: &LocalFile, ranges: &[ByteRange]) -> Option<ReadHints> {
        local.profile().page_cache?.uncached_hints(ranges)
    }

    /// A read of `ranges` past the page cache.
    #[cfg(target_os = "linux")]
    fn uncached(ranges: &[ByteRange]) -> ReadRequest<'_> {
        ReadRequest::new(ranges).access(Access::Uncached)
    }

    /// A file of `len` bytes on disk (not tmpfs: direct I/O and dropping cached pages
    /// need a real file system), written and dropped from the page cache.
    #[cfg(target_os = "linux")]
    fn uncached_file(len: u32) -> (tempfile::NamedTempFile, Vec<u8>) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        let mut file = tempfile::NamedTempFile::new_in(dir).unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &data).unwrap();
        file.as_file().sync_all().unwrap();
        rustix::fs::fadvise(file.as_file(), 0, None, rustix::fs::Advice::DontNeed).unwrap();
        (file, data)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_page_cache_probe_tells_cached_from_uncached_pages() {
        let (file, data) = uncached_file(1_000_000);
        let path = file.path().to_str().unwrap();
        // By default a read of 1 MB is too small to bypass the page cache.
        let whole = [ByteRange {
            offset: 0,
            len: 1_000_000,
        }];
        assert_eq!(
            uncached_hints(&LocalFile::open(path).unwrap(), &whole),
            None
        );
        let local = LocalFile::open(path)
            .unwrap()
            .with_direct_reads(DirectReads::Always);
        let pages = 1_000_000usize.div_ceil(rustix::param::page_size());
        let (cached, probed) = local.disk.cached_pages(0, 1_000_000).unwrap();
        assert_eq!(probed, pages);
        assert!(
            cached < pages / 10,
            "{cached} of {pages} cached after DONTNEED"
        );
        assert_eq!(
            uncached_hints(&local, &whole),
            Some(ReadHints::LOCAL_UNCACHED)
        );
        // A read through the page cache leaves the pages there; then the file is warm.
        assert_eq!(local.read_at(0, 1_000_000).unwrap(), data);
        assert_eq!(local.disk.cached_pages(0, 1_000_000), Some((pages, pages)));
        assert_eq!(uncached_hints(&local, &whole), None);
        assert_eq!(local.disk.cached_pages(999_999, 1).map(|(_, p)| p), Some(1));
        assert_eq!(local.disk.cached_pages(2 << 20, 5), None, "past the end");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn uncached_reads_give_exactly_the_bytes_asked_for_and_leave_the_page_cache_alone() {
        let len = 3_000_001u32; // not a whole number of blocks
        let (file, data) = uncached_file(len);
        let local = LocalFile::open(file.path().to_str().unwrap())
            .unwrap()
            .with_direct_reads(DirectReads::Always);
        assert!(
            local.disk.direct_file().is_some(),
            "this file system refuses O_DIRECT"
        );
        let ranges: Vec<ByteRange> = [
            (0u64, 1u64),
            (1, 4095),
            (4095, 2),
            (8192, 65_536),
            (123_457, 1_000_003),
            (u64::from(len) - 5000, 5000),
            (u64::from(len) - 1, 1),
            (77, 0),
        ]
        .iter()
        .map(|&(offset, len)| ByteRange { offset, len })
        .collect();
        let before = local.metrics();
        let reads = local.read(uncached(&ranges)).unwrap();
        for (r, read) in ranges.iter().zip(&reads) {
            let got = read.buffer.get(read.start..).unwrap();
            let want = &data[r.offset as usize..(r.offset + r.len) as usize];
            assert_eq!(got, want, "range {r:?}");
            // The block holding the range's first byte sits at an aligned address.
            let block = read.buffer.as_ptr() as usize + read.start - (r.offset % 4096) as usize;
            assert_eq!(block % DIRECT_ALIGN, 0);
        }
        let wanted: u64 = ranges.iter().map(|r| r.len).sum();
        assert_eq!(local.metrics().bytes_read - before.bytes_read, wanted);
        // Direct reads went past the page cache: it still holds (almost) nothing.
        let (cached, pages) = local.disk.cached_pages(0, u64::from(len)).unwrap();
        assert!(cached < pages / 10, "{cached} of {pages} pages cached");
        // Buffers given back are reused, and reads into them are as exact.
        let given_back = reads.into_iter().map(|read| read.buffer).collect();
        let again = local
            .read(uncached(&ranges[4..5]).spare(given_back))
            .unwrap();
        assert_eq!(
            again[0].buffer.get(again[0].start..).unwrap(),
            &data[123_457..1_123_460]
        );
        // Past the end: an error, no read.
        let past = ByteRange {
            offset: u64::from(len) - 1,
            len: 2,
        };
        assert!(local.read(uncached(&[past])).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn uncached_reads_of_cached_ranges_go_through_the_page_cache() {
        let (file, data) = uncached_file(500_000);
        let local = LocalFile::open(file.path().to_str().unwrap())
            .unwrap()
            .with_direct_reads(DirectReads::Always);
        assert_eq!(local.read_at(0, 500_000).unwrap(), data);
        let range = ByteRange {
            offset: 4097,
            len: 400_000,
        };
        let read = local.read(uncached(&[range])).unwrap().remove(0);
        assert_eq!(read.buffer.get(read.start..).unwrap(), &data[4097..404_097]);
    }

    #[test]
    fn the_direct_io_variable_sets_when_reads_bypass_the_page_cache() {
        let quarter = physical_memory() / 4;
        assert!(quarter > 1 << 20 && quarter < u64::MAX / 4, "{quarter}");
        assert_eq!(
            DirectReads::parse("").unwrap(),
            DirectReads::AtLeast(quarter)
        );
        assert_eq!(
            DirectReads::parse(" Auto ").unwrap(),
            DirectReads::AtLeast(quarter)
        );
        assert_eq!(DirectReads::parse("ALWAYS").unwrap(), DirectReads::Always);
        assert_eq!(DirectReads::parse("1").unwrap(), DirectReads::Always);
        assert_eq!(DirectReads::parse("never").unwrap(), DirectReads::Never);
        assert_eq!(DirectReads::parse("0").unwrap(), DirectReads::Never);
        let bad = DirectReads::parse("sometimes").unwrap_err().to_string();
        assert!(bad.contains("RNTUPLE_DIRECT_IO=\"sometimes\""), "{bad}");
        assert!(!DirectReads::AtLeast(100).allows(99));
        assert!(DirectReads::AtLeast(100).allows(100));
        assert!(!DirectReads::Never.allows(u64::MAX));
        assert!(DirectReads::Always.allows(1));
    }
}
