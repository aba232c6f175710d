//! The limits a benchmark task cannot beat on this machine, measured on one file: what
//! the codec alone costs, and what the disk alone costs. `bench/tasks/floor.py` runs it
//! and `bench/run.py` divides every tool's time by the matching floor ("x floor").
//!
//! ```text
//! floor decompress FILE [--name NT] [--fields a,b,...] [--threads N]
//! floor compress FILE [--name NT] [--threads N]
//! floor disk FILE [--threads N]
//! floor fresh-memory FILE [--name NT] [--threads N]
//! floor fresh-memory-huge FILE [--name NT] [--threads N]
//! ```
//!
//! - `decompress`: every page of the selected fields' columns (all columns without
//!   `--fields`; a page stored once for several columns counted once) is loaded into
//!   memory first, untimed; then the timed part decompresses
//!   every page on `N` threads, each into its own reused buffer with a reused zstd
//!   context. No checksum, no decoding, no fresh memory: the codec's cost alone.
//! - `compress`: every page of every column is decompressed first, untimed; the timed
//!   part compresses every page again with the setting its column has in the file, on
//!   `N` threads, as ROOT does (a fresh zstd context per page: a reused one gives other
//!   bytes than ROOT's).
//! - `disk`: the file's pages are dropped from the page cache (`fdatasync`, then
//!   `posix_fadvise(DONTNEED)`), then the file is read front to back in 16 MiB chunks
//!   on `N` threads, each into its own reused buffer: what a cold read of the whole file
//!   cannot beat.
//! - `fresh-memory`: as many bytes as every page of the file holds uncompressed, in
//!   buffers of 64 MiB newly obtained from the system, written once on `N` threads: what
//!   memory the caller keeps costs to obtain (page faults, and on a virtual machine that
//!   returns freed memory to its host, the host's faults too).
//! - `fresh-memory-huge`: the same in transparent huge pages (`MADV_HUGEPAGE` on each
//!   buffer before it is written), as the reader's columns with `RNTUPLE_HUGE_PAGES=always`.
//!
//! Prints one JSON object: `seconds`, `pages`, `compressed_bytes`, `uncompressed_bytes`.

// Not library code: a measuring tool that stops at the first failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use rayon::prelude::*;
use rntuple::compression::{compress, decompress_into, CompressionSettings, CHUNK_HEADER_SIZE};
use rntuple::format::{open_page, PageInfo};
use rntuple::read::RNTupleReader;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("floor: {e}");
        std::process::exit(1);
    }
}

const USAGE: &str = "usage: floor (decompress|compress|disk|fresh-memory|fresh-memory-huge) FILE [--name NT] [--fields a,b] [--threads N]";

struct Args {
    mode: String,
    file: String,
    name: Option<String>,
    fields: Option<Vec<String>>,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or(USAGE)?;
    let file = it.next().ok_or(USAGE)?;
    let mut args = Args {
        mode,
        file,
        name: None,
        fields: None,
        threads: 2,
    };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--name" => args.name = Some(value),
            "--fields" => args.fields = Some(value.split(',').map(str::to_string).collect()),
            "--threads" => {
                args.threads = value
                    .parse()
                    .map_err(|_| format!("--threads {value}: not a number"))?
            }
            _ => return Err(format!("unknown option {flag}; {USAGE}")),
        }
    }
    Ok(args)
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .map_err(|e| e.to_string())?;
    let report = match args.mode.as_str() {
        "disk" => disk(&args.file, args.threads)?,
        "fresh-memory" | "fresh-memory-huge" => {
            let total = load_sizes(&args)?;
            let huge = args.mode == "fresh-memory-huge";
            pool.install(|| fresh_memory(total, huge))?
        }
        "decompress" | "compress" => {
            let pages = load_pages(&args)?;
            if args.mode == "decompress" {
                pool.install(|| decompress_all(&pages))?
            } else {
                pool.install(|| compress_all(&pages))?
            }
        }
        _ => return Err(USAGE.into()),
    };
    println!(
        "{{\"mode\": \"{}\", \"threads\": {}, \"seconds\": {}, \"pages\": {}, \
         \"compressed_bytes\": {}, \"uncompressed_bytes\": {}}}",
        args.mode,
        args.threads,
        report.seconds,
        report.pages,
        report.compressed_bytes,
        report.uncompressed_bytes
    );
    Ok(())
}

struct Report {
    seconds: f64,
    pages: usize,
    compressed_bytes: u64,
    uncompressed_bytes: u64,
}

/// A page in memory: its stored data (no checksum), uncompressed size and the
/// compression setting of its column in its cluster.
struct LoadedPage {
    data: Vec<u8>,
    uncompressed: usize,
    settings: CompressionSettings,
}

/// The physical columns of the selected fields (with their subfields), or all columns.
fn selected_columns(reader: &RNTupleReader, fields: Option<&[String]>) -> Result<Vec<u32>, String> {
    let d = reader.descriptor();
    let Some(names) = fields else {
        return Ok((0..d.columns.len() as u32).collect());
    };
    let mut columns = BTreeSet::new();
    let mut stack: Vec<u32> = reader
        .select_fields(Some(names))
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    while let Some(id) = stack.pop() {
        let field = d.field(id);
        columns.extend(field.columns.iter().copied());
        stack.extend(field.children.iter().copied());
    }
    Ok(columns.into_iter().collect())
}

fn load_pages(args: &Args) -> Result<Vec<LoadedPage>, String> {
    let reader =
        RNTupleReader::open_path(&args.file, args.name.as_deref()).map_err(|e| e.to_string())?;
    let columns = selected_columns(&reader, args.fields.as_deref())?;
    let bytes = std::fs::read(&args.file).map_err(|e| format!("{}: {e}", args.file))?;
    let d = reader.descriptor();
    let mut pages = Vec::new();
    // A page stored once for several columns (ROOT's same-page merging) is one page.
    let mut seen = std::collections::HashSet::new();
    for cluster in &d.clusters {
        for &col in &columns {
            let Some(cp) = cluster.column(col) else {
                continue;
            };
            let encoding = d.column_encoding(col).map_err(|e| e.to_string())?;
            let settings = cp
                .compression
                .map(CompressionSettings::from_u32)
                .transpose()
                .map_err(|e| e.to_string())?
                .unwrap_or(CompressionSettings::UNCOMPRESSED);
            for page in &cp.pages {
                if !seen.insert((page.locator.offset, page.locator.size)) {
                    continue;
                }
                let stored = stored_bytes(&bytes, page)?;
                let data = open_page(stored, page, &encoding).map_err(|e| e.to_string())?;
                let uncompressed = encoding
                    .page_bytes(u64::from(page.n_elements))
                    .ok_or("page too large")? as usize;
                pages.push(LoadedPage {
                    data: data.to_vec(),
                    uncompressed,
                    settings,
                });
            }
        }
    }
    Ok(pages)
}

fn stored_bytes<'a>(file: &'a [u8], page: &PageInfo) -> Result<&'a [u8], String> {
    let start = page.locator.offset as usize;
    let len = rntuple::format::stored_page_len(page) as usize;
    file.get(start..start + len)
        .ok_or_else(|| format!("page at {start} lies beyond the file"))
}

thread_local! {
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn u24(b: &[u8]) -> usize {
    usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16
}

/// Decompresses one page (ROOT's chunk framing; zstd chunks with a reused context,
/// others with the library) into `out`.
fn decompress_page(data: &[u8], out: &mut [u8]) -> Result<(), String> {
    if data.len() == out.len() {
        out.copy_from_slice(data);
        return Ok(());
    }
    if !data.starts_with(b"ZS\x01") {
        return decompress_into(data, out, "page").map_err(|e| e.to_string());
    }
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        let d = match d.as_mut() {
            Some(d) => d,
            None => d.insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
        };
        let (mut ipos, mut opos) = (0, 0);
        while ipos < data.len() {
            let header = &data[ipos..ipos + CHUNK_HEADER_SIZE];
            let (csize, usize_) = (u24(&header[3..6]), u24(&header[6..9]));
            let payload = &data[ipos + CHUNK_HEADER_SIZE..ipos + CHUNK_HEADER_SIZE + csize];
            d.decompress_to_buffer(payload, &mut out[opos..opos + usize_])
                .map_err(|e| e.to_string())?;
            ipos += CHUNK_HEADER_SIZE + csize;
            opos += usize_;
        }
        Ok(())
    })
}

fn decompress_all(pages: &[LoadedPage]) -> Result<Report, String> {
    let start = Instant::now();
    pages.par_iter().try_for_each(|p| {
        BUFFER.with(|b| {
            let mut b = b.borrow_mut();
            if b.len() < p.uncompressed {
                b.resize(p.uncompressed, 0);
            }
            decompress_page(&p.data, &mut b[..p.uncompressed])
        })
    })?;
    Ok(report(
        start,
        pages,
        pages.iter().map(|p| p.data.len() as u64).sum(),
    ))
}

fn report(start: Instant, pages: &[LoadedPage], compressed: u64) -> Report {
    Report {
        seconds: start.elapsed().as_secs_f64(),
        pages: pages.len(),
        compressed_bytes: compressed,
        uncompressed_bytes: pages.iter().map(|p| p.uncompressed as u64).sum(),
    }
}

/// Compresses one page as the writer must to give ROOT's bytes (the library's
/// `compress`: a fresh zstd context per page, as ROOT; a reused one gives other bytes);
/// returns the compressed size.
fn compress_page(data: &[u8], settings: CompressionSettings) -> Result<usize, String> {
    compress(data, settings)
        .map(|c| c.len())
        .map_err(|e| e.to_string())
}

fn compress_all(pages: &[LoadedPage]) -> Result<Report, String> {
    // The untimed part: the pages as the writer has them before compressing.
    let plain: Vec<Vec<u8>> = pages
        .par_iter()
        .map(|p| {
            let mut out = vec![0u8; p.uncompressed];
            decompress_page(&p.data, &mut out).map(|()| out)
        })
        .collect::<Result<_, String>>()?;
    let start = Instant::now();
    let sizes: Vec<usize> = plain
        .par_iter()
        .zip(pages)
        .map(|(data, p)| compress_page(data, p.settings))
        .collect::<Result<_, String>>()?;
    Ok(report(start, pages, sizes.iter().map(|&s| s as u64).sum()))
}

/// Drops the file from the page cache, then reads it front to back in chunks of 16 MiB,
/// chunk `k` by thread `k % threads` into its own reused buffer: filling the page cache
/// costs kernel CPU on a virtual machine (the host faults the pages in), so one thread
/// alone can be slower than the disk, and the readers fill it from several threads too.
fn disk(path: &str, threads: usize) -> Result<Report, String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    const CHUNK: u64 = 16 << 20;
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    // SAFETY: `file` is open for the whole call; fdatasync and posix_fadvise only take
    // its descriptor and plain integers.
    let rc = unsafe {
        libc::fdatasync(file.as_raw_fd());
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
    };
    if rc != 0 {
        return Err(format!("posix_fadvise: error {rc}"));
    }
    let threads = threads.max(1) as u64;
    let start = Instant::now();
    let read = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|first| {
                let file = &file;
                scope.spawn(move || -> Result<u64, String> {
                    let mut buffer = vec![0u8; CHUNK as usize];
                    let mut read = 0u64;
                    let mut offset = first * CHUNK;
                    while offset < len {
                        let want = CHUNK.min(len - offset) as usize;
                        file.read_exact_at(&mut buffer[..want], offset)
                            .map_err(|e| format!("{path} at {offset}: {e}"))?;
                        read += want as u64;
                        offset += threads * CHUNK;
                    }
                    Ok(read)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| "a reading thread panicked".to_string())?
            })
            .sum::<Result<u64, String>>()
    })?;
    if read != len {
        return Err(format!("read {read} bytes of {len}"));
    }
    Ok(Report {
        seconds: start.elapsed().as_secs_f64(),
        pages: 0,
        compressed_bytes: read,
        uncompressed_bytes: read,
    })
}

/// The uncompressed bytes of every page of the selected columns.
fn load_sizes(args: &Args) -> Result<u64, String> {
    let reader =
        RNTupleReader::open_path(&args.file, args.name.as_deref()).map_err(|e| e.to_string())?;
    let columns = selected_columns(&reader, args.fields.as_deref())?;
    let d = reader.descriptor();
    let mut total = 0u64;
    for cluster in &d.clusters {
        for &col in &columns {
            let Some(cp) = cluster.column(col) else {
                continue;
            };
            let encoding = d.column_encoding(col).map_err(|e| e.to_string())?;
            for page in &cp.pages {
                total += encoding
                    .page_bytes(u64::from(page.n_elements))
                    .ok_or("page too large")?;
            }
        }
    }
    Ok(total)
}

/// Writes `total` bytes of fresh memory, in 64 MiB buffers, on the pool's threads; the
/// buffers are kept until the end, as a reader's caller keeps its columns. `huge`: each
/// buffer asks for transparent huge pages before it is written.
fn fresh_memory(total: u64, huge: bool) -> Result<Report, String> {
    const BUFFER: u64 = 64 << 20;
    let sizes: Vec<usize> = (0..total.div_ceil(BUFFER))
        .map(|i| BUFFER.min(total - i * BUFFER) as usize)
        .collect();
    let start = Instant::now();
    let kept: Vec<Vec<u8>> = sizes
        .par_iter()
        .map(|&n| {
            let mut v: Vec<u8> = Vec::with_capacity(n);
            let start = v.as_mut_ptr() as usize;
            let (first, end) = (start.next_multiple_of(4096), (start + n) / 4096 * 4096);
            if huge && end > first {
                // madvise takes whole pages: the allocation's, inward (none when the buffer
                // holds no whole page).
                // SAFETY: `first..end` lies within the vector's own allocation of `n`
                // bytes, not yet written; the advice only marks it eligible for huge pages.
                let refused = unsafe {
                    libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE)
                };
                if refused != 0 {
                    return Err(format!(
                        "madvise(MADV_HUGEPAGE): {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            v.resize(n, 1u8);
            Ok(v)
        })
        .collect::<Result<_, String>>()?;
    let seconds = start.elapsed().as_secs_f64();
    let written: u64 = kept.iter().map(|v| v.len() as u64).sum();
    Ok(Report {
        seconds,
        pages: sizes.len(),
        compressed_bytes: 0,
        uncompressed_bytes: written,
    })
}

#[cfg(test)]
mod tests {
    use super::fresh_memory;

    #[test]
    fn fresh_memory_writes_every_byte_asked_for_in_either_page_size() {
        // One full 64 MiB buffer and one of 100 bytes, smaller than a page.
        let total = (64 << 20) + 100;
        for huge in [false, true] {
            let report = fresh_memory(total, huge).unwrap();
            assert_eq!(report.uncompressed_bytes, total, "huge: {huge}");
            assert_eq!(report.pages, 2, "huge: {huge}");
        }
    }
}
