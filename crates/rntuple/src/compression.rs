//! ROOT compression blocks: the framing ROOT puts around compressed RNTuple pages,
//! envelopes and TKey payloads.
//!
//! A block whose compressed size equals its uncompressed size is stored as is.
//! Otherwise it is a series of chunks, each with a 9-byte header:
//!
//! | bytes | meaning |
//! |---|---|
//! | 0..3 | algorithm magic: `ZS\x01` zstd, `ZL\x08` zlib, `XZ\x00` xz/lzma, `L4<major>` lz4, `CS\x08` old ROOT deflate |
//! | 3..6 | compressed size of the chunk payload (little-endian, 24 bit) |
//! | 6..9 | uncompressed size of the chunk (little-endian, 24 bit) |
//!
//! Each chunk holds at most 2^24 - 1 bytes of uncompressed data. The payloads are:
//! a zstd frame; a zlib stream (with the 2-byte zlib header and Adler-32 trailer);
//! an xz stream (CRC32 check); for lz4, an 8-byte XXH64 (seed 0) of the raw LZ4 block,
//! stored big-endian (XXH64's "canonical" form), followed by that raw LZ4 block; the
//! chunk's compressed size then counts the checksum too.

use std::fmt;

use crate::error::{Error, Result};

/// The size of a chunk header.
pub const CHUNK_HEADER_SIZE: usize = 9;
/// The largest uncompressed (and compressed) size of one chunk: 2^24 - 1 bytes.
pub const MAX_CHUNK_SIZE: usize = 0xff_ffff;
/// The size of the XXH64 checksum that precedes the LZ4 block in an lz4 chunk.
const LZ4_CHECKSUM_SIZE: usize = 8;
/// Memory limit given to the xz decoder (bounds the dictionary a file can ask for).
const LZMA_MEMLIMIT: u64 = 256 << 20;

/// A compression algorithm, with ROOT's numeric code (`ROOT::RCompressionSetting::EAlgorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// zlib (code 1); chunk magic `ZL\x08`.
    Zlib = 1,
    /// LZMA via xz streams (code 2); chunk magic `XZ\x00`.
    Lzma = 2,
    /// ROOT's old built-in deflate (code 3); chunk magic `CS\x08`. Not supported.
    OldRoot = 3,
    /// LZ4 (code 4); chunk magic `L4<major>`.
    Lz4 = 4,
    /// Zstandard (code 5); chunk magic `ZS\x01`.
    Zstd = 5,
}

impl Algorithm {
    /// ROOT's numeric code of the algorithm.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The algorithm with ROOT's numeric code `code`, if known (0, "use global", is not an algorithm).
    pub fn from_code(code: u32) -> Option<Algorithm> {
        match code {
            1 => Some(Algorithm::Zlib),
            2 => Some(Algorithm::Lzma),
            3 => Some(Algorithm::OldRoot),
            4 => Some(Algorithm::Lz4),
            5 => Some(Algorithm::Zstd),
            _ => None,
        }
    }

    /// The short name: "zlib", "lzma", "old", "lz4" or "zstd".
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Zlib => "zlib",
            Algorithm::Lzma => "lzma",
            Algorithm::OldRoot => "old",
            Algorithm::Lz4 => "lz4",
            Algorithm::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// ROOT compression settings: `algorithm * 100 + level`.
///
/// Level 0 means "not compressed". ROOT's algorithm code 0 ("use the global default")
/// with a level above 0 means zlib, ROOT's default, and is parsed as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompressionSettings {
    /// The algorithm; irrelevant when `level` is 0.
    pub algorithm: Algorithm,
    /// The level, 0 (no compression) to 9 (ROOT clamps larger levels to 9 when compressing).
    pub level: u32,
}

impl CompressionSettings {
    /// No compression (settings value 0).
    pub const UNCOMPRESSED: CompressionSettings = CompressionSettings {
        algorithm: Algorithm::Zlib,
        level: 0,
    };

    /// ROOT's default for RNTuple: zstd level 5 (settings value 505).
    pub const DEFAULT_RNTUPLE: CompressionSettings = CompressionSettings {
        algorithm: Algorithm::Zstd,
        level: 5,
    };

    /// Settings with the given algorithm and level.
    pub fn new(algorithm: Algorithm, level: u32) -> Self {
        CompressionSettings { algorithm, level }
    }

    /// Parses ROOT's settings value. Unknown algorithm codes are an [`Error::Unsupported`]
    /// (unless the level is 0, which means uncompressed whatever the algorithm).
    pub fn from_u32(value: u32) -> Result<Self> {
        let code = value / 100;
        let level = value % 100;
        if level == 0 {
            return Ok(match Algorithm::from_code(code) {
                Some(algorithm) => CompressionSettings { algorithm, level },
                None => CompressionSettings::UNCOMPRESSED,
            });
        }
        let algorithm = if code == 0 {
            Algorithm::Zlib
        } else {
            Algorithm::from_code(code).ok_or_else(|| {
                Error::Unsupported(format!(
                    "compression settings {value}: unknown algorithm code {code}"
                ))
            })?
        };
        Ok(CompressionSettings { algorithm, level })
    }

    /// Parses `ALG[:LEVEL]` (`zstd`, `lz4`, `zlib`, `lzma`/`xz`, `none`; level 1 to 9,
    /// 5 when omitted) or ROOT's numeric setting (algorithm × 100 + level).
    pub fn parse(spec: &str) -> Result<Self> {
        let invalid =
            |why: String| Error::InvalidArgument(format!("compression \"{spec}\": {why}"));
        if let Ok(code) = spec.parse::<u32>() {
            return Self::from_u32(code);
        }
        let (alg, level) = match spec.split_once(':') {
            Some((a, l)) => (
                a,
                l.parse::<u32>()
                    .map_err(|_| invalid(format!("level \"{l}\" is not a number")))?,
            ),
            None => (spec, 5),
        };
        let algorithm = match alg.to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => return Ok(CompressionSettings::UNCOMPRESSED),
            "zlib" => Algorithm::Zlib,
            "lzma" | "xz" => Algorithm::Lzma,
            "lz4" => Algorithm::Lz4,
            "zstd" => Algorithm::Zstd,
            other => {
                return Err(invalid(format!(
                    "unknown algorithm \"{other}\" (zstd, lz4, zlib, lzma, none)"
                )))
            }
        };
        if !(1..=9).contains(&level) {
            return Err(invalid(format!("level {level} is not in 1..9")));
        }
        Ok(CompressionSettings { algorithm, level })
    }

    /// ROOT's settings value, `algorithm * 100 + level` (0 when uncompressed).
    pub fn as_u32(self) -> u32 {
        if self.level == 0 {
            0
        } else {
            self.algorithm.code() * 100 + self.level
        }
    }

    /// Whether data is compressed with these settings (level above 0).
    pub fn is_compressed(self) -> bool {
        self.level > 0
    }
}

impl fmt::Display for CompressionSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_compressed() {
            write!(f, "{} level {}", self.algorithm, self.level)
        } else {
            f.write_str("uncompressed")
        }
    }
}

/// Decompresses a ROOT compression block of `uncompressed_len` bytes.
///
/// Allocates exactly `uncompressed_len` bytes; the caller bounds that value.
/// `what` names the page or envelope in error messages.
pub fn decompress(data: &[u8], uncompressed_len: usize, what: &str) -> Result<Vec<u8>> {
    // Walk the chunk headers before allocating: a corrupt expected length must not
    // become an allocation the data cannot back.
    if data.len() != uncompressed_len {
        let claimed = claimed_uncompressed_len(data);
        if claimed != Some(uncompressed_len) {
            return Err(Error::corrupt(
                what,
                match claimed {
                    Some(n) => format!(
                        "compressed chunks hold {n} bytes, {uncompressed_len} were expected"
                    ),
                    None => "malformed compressed chunk headers".to_string(),
                },
            ));
        }
    }
    let mut out = vec![0u8; uncompressed_len];
    decompress_into(data, &mut out, what)?;
    Ok(out)
}

/// The total uncompressed size the chunk headers of `data` announce, if the chunks tile
/// `data` exactly.
pub(crate) fn claimed_uncompressed_len(data: &[u8]) -> Option<usize> {
    let mut pos = 0usize;
    let mut total = 0usize;
    while pos < data.len() {
        let header = data.get(pos..pos.checked_add(CHUNK_HEADER_SIZE)?)?;
        let csize = u24(&header[3..6]);
        total = total.checked_add(u24(&header[6..9]))?;
        pos = pos.checked_add(CHUNK_HEADER_SIZE)?.checked_add(csize)?;
    }
    (pos == data.len()).then_some(total)
}

/// Decompresses a ROOT compression block into `out`, whose length is the expected
/// uncompressed size; every byte of `out` is written on success.
///
/// Errors (never panics) on truncated or overlong chunks, unknown magic, codec errors,
/// LZ4 checksum mismatches, and a total size different from `out.len()`.
pub fn decompress_into(data: &[u8], out: &mut [u8], what: &str) -> Result<()> {
    if data.len() == out.len() {
        out.copy_from_slice(data);
        return Ok(());
    }
    let mut ipos = 0usize;
    let mut opos = 0usize;
    let mut chunk_index = 0usize;
    while ipos < data.len() {
        let header = bytes_at(data, ipos, CHUNK_HEADER_SIZE, || {
            format!("{what}: header of compressed chunk {chunk_index}")
        })?;
        let csize = u24(&header[3..6]);
        let usize_ = u24(&header[6..9]);
        let payload_start = ipos + CHUNK_HEADER_SIZE;
        let payload = bytes_at(data, payload_start, csize, || {
            format!("{what}: compressed chunk {chunk_index}")
        })?;
        if usize_ == 0 {
            return Err(Error::corrupt(
                what,
                format!("compressed chunk {chunk_index} announces 0 uncompressed bytes"),
            ));
        }
        let total = out.len();
        let target = out.get_mut(opos..opos + usize_).ok_or_else(|| {
            Error::corrupt(
                what,
                format!(
                    "compressed chunk {chunk_index} announces {usize_} uncompressed bytes at offset {opos}, \
                     beyond the expected total of {total} bytes"
                ),
            )
        })?;
        decompress_chunk(&header[0..3], payload, target, what, chunk_index)?;
        ipos = payload_start + csize;
        opos += usize_;
        chunk_index += 1;
    }
    if opos != out.len() {
        return Err(Error::corrupt(
            what,
            format!(
                "compressed chunks hold {opos} bytes but {} were expected",
                out.len()
            ),
        ));
    }
    Ok(())
}

/// The `len` bytes of `data` at `start`, or the error of a block cut short there (`what`
/// names the part).
fn bytes_at(data: &[u8], start: usize, len: usize, what: impl FnOnce() -> String) -> Result<&[u8]> {
    data.get(start..start + len)
        .ok_or_else(|| Error::Truncated {
            what: what(),
            offset: start as u64,
            needed: len as u64,
            available: data.len().saturating_sub(start) as u64,
        })
}

/// A little-endian 24-bit size of a chunk header.
pub(crate) fn u24(b: &[u8]) -> usize {
    b.iter()
        .rev()
        .fold(0usize, |acc, &byte| (acc << 8) | byte as usize)
}

/// The three little-endian bytes of a chunk header size `n`, which callers have checked
/// to be at most [`MAX_CHUNK_SIZE`] (the low three bytes of `n` are then all of it).
pub(crate) fn u24_le(n: usize) -> [u8; 3] {
    debug_assert!(n <= MAX_CHUNK_SIZE, "chunk size {n} exceeds 24 bits");
    let [b0, b1, b2, ..] = n.to_le_bytes();
    [b0, b1, b2]
}

fn decompression_error(what: &str, chunk: usize, codec: &str, detail: impl fmt::Display) -> Error {
    Error::Decompression {
        what: what.to_string(),
        detail: format!("chunk {chunk} ({codec}): {detail}"),
    }
}

/// Errors with `detail` unless a codec's count `got` (bytes of the payload used, bytes
/// produced) is the `expected` one.
fn check_count(
    what: &str,
    chunk: usize,
    codec: &str,
    got: u64,
    expected: usize,
    detail: impl FnOnce() -> String,
) -> Result<()> {
    if got == expected as u64 {
        Ok(())
    } else {
        Err(decompression_error(what, chunk, codec, detail()))
    }
}

/// Decompresses one chunk payload into `target` (exactly the announced size).
fn decompress_chunk(
    magic: &[u8],
    payload: &[u8],
    target: &mut [u8],
    what: &str,
    chunk: usize,
) -> Result<()> {
    let expected = target.len();
    // Output counts as the codecs report them (u64 for zlib and xz, no narrowing).
    let check_len = |codec: &str, n: u64| {
        check_count(what, chunk, codec, n, expected, || {
            format!("produced {n} bytes, header announces {expected}")
        })
    };
    // A streaming codec's end: the stream ended, used the whole payload, and filled the
    // target exactly.
    let check_stream_end = |codec: &str, ended: bool, total_in: u64, total_out: u64| {
        if !ended {
            return Err(decompression_error(
                what,
                chunk,
                codec,
                "stream does not end within the announced sizes",
            ));
        }
        let len = payload.len();
        check_count(what, chunk, codec, total_in, len, || {
            format!("stream ends after {total_in} of the chunk's {len} bytes")
        })?;
        check_len(codec, total_out)
    };
    match magic {
        [b'Z', b'S', 1] => {
            let n = zstd_decompress_to(payload, target)
                .map_err(|e| decompression_error(what, chunk, "zstd", e))?;
            check_len("zstd", n as u64)
        }
        [b'Z', b'L', 8] => {
            let mut z = flate2::Decompress::new(true);
            let status = z
                .decompress(payload, target, flate2::FlushDecompress::Finish)
                .map_err(|e| decompression_error(what, chunk, "zlib", e))?;
            let ended = status == flate2::Status::StreamEnd;
            check_stream_end("zlib", ended, z.total_in(), z.total_out())
        }
        [b'X', b'Z', 0] => {
            let mut s = liblzma::stream::Stream::new_stream_decoder(LZMA_MEMLIMIT, 0)
                .map_err(|e| decompression_error(what, chunk, "lzma", e))?;
            let status = s
                .process(payload, target, liblzma::stream::Action::Finish)
                .map_err(|e| decompression_error(what, chunk, "lzma", e))?;
            let ended = status == liblzma::stream::Status::StreamEnd;
            check_stream_end("lzma", ended, s.total_in(), s.total_out())
        }
        [b'L', b'4', _] => {
            if payload.len() < LZ4_CHECKSUM_SIZE {
                return Err(decompression_error(
                    what,
                    chunk,
                    "lz4",
                    format!(
                        "compressed size {} is smaller than the 8-byte checksum",
                        payload.len()
                    ),
                ));
            }
            let (sum, block) = payload.split_at(LZ4_CHECKSUM_SIZE);
            let mut stored = [0u8; 8];
            stored.copy_from_slice(sum);
            let stored = u64::from_be_bytes(stored);
            let computed = xxhash_rust::xxh64::xxh64(block, 0);
            if stored != computed {
                return Err(Error::ChecksumMismatch {
                    what: format!("{what}: lz4 chunk {chunk}"),
                    stored,
                    computed,
                });
            }
            let n = lz4_flex::block::decompress_into(block, target)
                .map_err(|e| decompression_error(what, chunk, "lz4", e))?;
            check_len("lz4", n as u64)
        }
        [b'C', b'S', 8] => Err(Error::Unsupported(format!(
            "{what}: chunk {chunk} uses ROOT's old deflate algorithm (\"CS\"), which is not supported"
        ))),
        _ => Err(Error::corrupt(
            what,
            format!(
                "compressed chunk {chunk} has unknown algorithm magic {:02x} {:02x} {:02x}",
                magic.first().copied().unwrap_or(0),
                magic.get(1).copied().unwrap_or(0),
                magic.get(2).copied().unwrap_or(0)
            ),
        )),
    }
}

/// Compresses `data` into ROOT compression chunks (at most 2^24 - 1 bytes each).
///
/// Mirrors ROOT: data is returned unchanged (so compressed size == uncompressed size)
/// when the level is 0, the input is shorter than 11 bytes, or the compressed form
/// would not be smaller than the input. Levels map as in ROOT: zlib and lzma use the
/// level (clamped to 9) directly (lzma as an xz preset, with the dictionary shrunk to
/// max(input / 4, 4 KiB)), zstd uses `2 * level`, lz4 its high-compression mode from
/// level 4 on. The old ROOT algorithm cannot be written ([`Error::Unsupported`]).
pub fn compress(data: &[u8], settings: CompressionSettings) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    compress_into(data, settings, &mut out)?;
    Ok(out)
}

/// [`compress`], appending the result to `out` (whose earlier bytes are kept): the
/// writer compresses a page straight into the buffer it stores, with room for the
/// checksum it appends, instead of copying the compressed bytes there.
pub fn compress_into(data: &[u8], settings: CompressionSettings, out: &mut Vec<u8>) -> Result<()> {
    let base = out.len();
    let stored = |out: &mut Vec<u8>| {
        out.truncate(base);
        out.extend_from_slice(data);
    };
    if !settings.is_compressed() || data.len() < CHUNK_HEADER_SIZE + 2 {
        stored(out);
        return Ok(());
    }
    let level = settings.level.min(9);
    out.reserve(data.len() / 2 + CHUNK_HEADER_SIZE);
    for chunk in data.chunks(MAX_CHUNK_SIZE) {
        let start = out.len();
        out.extend_from_slice(&[0u8; CHUNK_HEADER_SIZE]);
        let magic: [u8; 3] = match settings.algorithm {
            Algorithm::Zstd => {
                // As ROOT, zstd gets no more room than the input less the chunk header;
                // when it needs more (it keeps a margin), the data is stored as is.
                let room = (data.len() - (start - base)).saturating_sub(CHUNK_HEADER_SIZE);
                if !zstd_compress_into(chunk, room, 2 * level as i32, out) {
                    stored(out);
                    return Ok(());
                }
                [b'Z', b'S', 1]
            }
            Algorithm::Zlib => {
                use std::io::Write;
                let mut enc = flate2::write::ZlibEncoder::new(
                    std::mem::take(out),
                    flate2::Compression::new(level),
                );
                enc.write_all(chunk).map_err(|e| {
                    Error::Io(crate::io::Error::Write {
                        what: "a page (zlib compression)".into(),
                        source: e,
                    })
                })?;
                *out = enc.finish().map_err(|e| {
                    Error::Io(crate::io::Error::Write {
                        what: "a page (zlib compression)".into(),
                        source: e,
                    })
                })?;
                [b'Z', b'L', 8]
            }
            Algorithm::Lzma => {
                compress_lzma(chunk, level, out)?;
                [b'X', b'Z', 0]
            }
            Algorithm::Lz4 => {
                // ROOT compresses with liblz4: its high-compression mode from level 4 on.
                // The same library gives the same bytes, hence the same file sizes.
                let mode = if level >= 4 {
                    lz4::block::CompressionMode::HIGHCOMPRESSION(level as i32)
                } else {
                    lz4::block::CompressionMode::DEFAULT
                };
                let block = lz4::block::compress(chunk, Some(mode), false).map_err(|e| {
                    Error::Io(crate::io::Error::Write {
                        what: "a page (lz4 compression)".into(),
                        source: e,
                    })
                })?;
                let sum = xxhash_rust::xxh64::xxh64(&block, 0);
                out.extend_from_slice(&sum.to_be_bytes());
                out.extend_from_slice(&block);
                [b'L', b'4', 1]
            }
            Algorithm::OldRoot => {
                out.truncate(base);
                return Err(Error::Unsupported(
                    "compressing with ROOT's old deflate algorithm".into(),
                ));
            }
        };
        let csize = out.len() - start - CHUNK_HEADER_SIZE;
        if csize > MAX_CHUNK_SIZE || out.len() - base >= data.len() {
            // Not smaller: ROOT stores the whole block uncompressed.
            stored(out);
            return Ok(());
        }
        let header = &mut out[start..start + CHUNK_HEADER_SIZE];
        header[0..3].copy_from_slice(&magic);
        // Both fit 24 bits: csize was checked above, chunks are at most MAX_CHUNK_SIZE.
        header[3..6].copy_from_slice(&u24_le(csize));
        header[6..9].copy_from_slice(&u24_le(chunk.len()));
    }
    Ok(())
}

/// Compresses `chunk` with zstd at `level`, appending at most `room` bytes to `out`;
/// false if the compressed form needs more (`out` is then as it was). Every chunk gets a
/// fresh context, as ROOT's: a reused one does not clear its match finder's tables but
/// salts their hashes, which changes the compressed bytes (and so the sizes ROOT's
/// cluster plan depends on).
fn zstd_compress_into(chunk: &[u8], room: usize, level: i32, out: &mut Vec<u8>) -> bool {
    let Ok(mut compressor) = zstd::bulk::Compressor::new(level) else {
        return false;
    };
    let start = out.len();
    let mut spare = SpareCapacity::new(out, room);
    match compressor.compress_to_buffer(chunk, &mut spare) {
        Ok(n) if n <= room => true,
        _ => {
            out.truncate(start);
            false
        }
    }
}

/// Exactly `limit` bytes of a vector's spare capacity, after its contents, as zstd's
/// output buffer: zstd writes there directly (no scratch buffer, no copy), and sees the
/// same room ROOT gives it, whatever the vector's capacity beyond.
struct SpareCapacity<'a> {
    vec: &'a mut Vec<u8>,
    /// The vector's length when it was lent: where zstd's output starts.
    start: usize,
    limit: usize,
}

impl<'a> SpareCapacity<'a> {
    /// Reserves `limit` bytes after `vec`'s contents.
    fn new(vec: &'a mut Vec<u8>, limit: usize) -> Self {
        vec.reserve(limit);
        let start = vec.len();
        SpareCapacity { vec, start, limit }
    }
}

// SAFETY: `as_mut_ptr` points at `start`, the vector's length when lent (`start <=
// capacity`, so the offset stays within its allocation), after which `new` reserved at
// least `limit` bytes: `capacity` never claims more than the allocation holds. zstd
// reports in `filled_until` how many of those bytes it wrote (at most `capacity`, which
// zstd-safe asserts), so `set_len` covers only initialised bytes; `as_slice` shows the
// initialised bytes from `start` on, as the trait asks.
unsafe impl zstd::zstd_safe::WriteBuf for SpareCapacity<'_> {
    fn as_slice(&self) -> &[u8] {
        self.vec.get(self.start..).unwrap_or(&[])
    }

    fn capacity(&self) -> usize {
        self.limit
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: `start <= len <= capacity`: within the allocation or one past its end.
        unsafe { self.vec.as_mut_ptr().add(self.start) }
    }

    unsafe fn filled_until(&mut self, n: usize) {
        // SAFETY: the caller (zstd) initialised `n <= limit` bytes from `start` on, and
        // `new` reserved `limit` bytes there.
        unsafe { self.vec.set_len(self.start + n) }
    }
}

thread_local! {
    /// A zstd decompression context per thread, reused across pages.
    static ZSTD_DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses one zstd frame into `target` with the thread's context.
fn zstd_decompress_to(payload: &[u8], target: &mut [u8]) -> std::io::Result<usize> {
    ZSTD_DECOMPRESSOR.with(|cell| {
        let mut cached = cell.borrow_mut();
        let decompressor = match cached.as_mut() {
            Some(d) => d,
            None => cached.insert(zstd::bulk::Decompressor::new()?),
        };
        decompressor.decompress_to_buffer(payload, target)
    })
}

fn compress_lzma(chunk: &[u8], level: u32, out: &mut Vec<u8>) -> Result<()> {
    use liblzma::stream::{Action, Check, Filters, LzmaOptions, Status, Stream};
    let err = |e: liblzma::stream::Error| Error::Decompression {
        what: "lzma compression".into(),
        detail: e.to_string(),
    };
    let mut opts = LzmaOptions::new_preset(level).map_err(err)?;
    // As ROOT: shrink the preset's dictionary to a quarter of the input (at least 4 KiB).
    // (Saturating is exact here: the estimate only matters when below the preset's.)
    let dict_est = u32::try_from(chunk.len() / 4).unwrap_or(u32::MAX).max(4096);
    // The preset's dictionary size is not readable through the safe API; presets 0-9 use
    // at least 256 KiB, so the estimate applies whenever it is the smaller one.
    let preset_dict: u32 = match level {
        0 => 256 << 10,
        1 => 1 << 20,
        2 => 2 << 20,
        3 | 4 => 4 << 20,
        5 | 6 => 8 << 20,
        7 => 16 << 20,
        8 => 32 << 20,
        _ => 64 << 20,
    };
    opts.dict_size(dict_est.min(preset_dict));
    let mut filters = Filters::new();
    filters.lzma2(&opts);
    let mut stream = Stream::new_stream_encoder(&filters, Check::Crc32).map_err(err)?;
    let start = out.len();
    let bound = chunk.len() + chunk.len() / 2 + 1024;
    out.reserve(bound);
    loop {
        // The encoder never consumes more than `chunk`; clamp rather than narrow.
        let consumed =
            usize::try_from(stream.total_in()).map_or(chunk.len(), |n| n.min(chunk.len()));
        let status = stream
            .process_vec(&chunk[consumed..], out, Action::Finish)
            .map_err(err)?;
        if status == Status::StreamEnd {
            break;
        }
        if out.len() - start > bound {
            return Err(Error::Decompression {
                what: "lzma compression".into(),
                detail: "output exceeds its bound".into(),
            });
        }
        out.reserve(64 << 10);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_from_names_and_root_numbers() {
        let parse = |s: &str| CompressionSettings::parse(s).map(|c| c.as_u32());
        assert_eq!(parse("zstd").unwrap(), 505);
        assert_eq!(parse("zstd:7").unwrap(), 507);
        assert_eq!(parse("LZ4:4").unwrap(), 404);
        assert_eq!(parse("zlib:1").unwrap(), 101);
        assert_eq!(parse("xz:9").unwrap(), 209);
        assert_eq!(parse("none").unwrap(), 0);
        assert_eq!(parse("207").unwrap(), 207);
        let message = |s: &str| CompressionSettings::parse(s).unwrap_err().to_string();
        assert!(message("brotli").contains("unknown algorithm \"brotli\""));
        assert!(message("zstd:12").contains("level 12 is not in 1..9"));
        assert!(message("zstd:x").contains("level \"x\" is not a number"));
    }

    const ALL: [Algorithm; 4] = [
        Algorithm::Zlib,
        Algorithm::Lzma,
        Algorithm::Lz4,
        Algorithm::Zstd,
    ];

    fn sample(n: usize) -> Vec<u8> {
        // Compressible but not trivial: a slowly varying pattern with some noise.
        let mut x: u32 = 12345;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                ((i / 7) as u8) ^ ((x >> 31) as u8)
            })
            .collect()
    }

    #[test]
    fn settings_parse_and_display() {
        let s = CompressionSettings::from_u32(505).unwrap();
        assert_eq!(s.algorithm, Algorithm::Zstd);
        assert_eq!(s.level, 5);
        assert_eq!(s.as_u32(), 505);
        assert_eq!(s.to_string(), "zstd level 5");
        assert_eq!(
            CompressionSettings::from_u32(404).unwrap().algorithm,
            Algorithm::Lz4
        );
        assert_eq!(
            CompressionSettings::from_u32(207).unwrap().algorithm,
            Algorithm::Lzma
        );
        assert_eq!(
            CompressionSettings::from_u32(101).unwrap().algorithm,
            Algorithm::Zlib
        );
        assert_eq!(
            CompressionSettings::from_u32(1).unwrap().algorithm,
            Algorithm::Zlib
        );
        let none = CompressionSettings::from_u32(0).unwrap();
        assert!(!none.is_compressed());
        assert_eq!(none.as_u32(), 0);
        assert_eq!(none.to_string(), "uncompressed");
        assert!(CompressionSettings::from_u32(905).is_err());
        assert_eq!(Algorithm::Lz4.to_string(), "lz4");
        assert_eq!(Algorithm::from_code(3), Some(Algorithm::OldRoot));
    }

    #[test]
    fn round_trip_all_algorithms() {
        for &alg in &ALL {
            for &n in &[0usize, 1, 10, 11, 100, 1000, 65_536, 300_000] {
                let data = sample(n);
                for level in [1, 5, 9] {
                    let settings = CompressionSettings::new(alg, level);
                    let c = compress(&data, settings).unwrap();
                    let d = decompress(&c, data.len(), "test").unwrap();
                    assert_eq!(d, data, "{alg} level {level} n {n}");
                    if n >= 1000 {
                        assert!(c.len() < data.len(), "{alg} did not compress {n} bytes");
                        assert_eq!(&c[0..2], magic_of(alg));
                    }
                }
            }
        }
    }

    fn magic_of(alg: Algorithm) -> &'static [u8] {
        match alg {
            Algorithm::Zlib => b"ZL",
            Algorithm::Lzma => b"XZ",
            Algorithm::Lz4 => b"L4",
            Algorithm::Zstd => b"ZS",
            Algorithm::OldRoot => b"CS",
        }
    }

    #[test]
    fn round_trip_multi_chunk() {
        let data = sample(MAX_CHUNK_SIZE + 1_000_000);
        for &alg in &[Algorithm::Zstd, Algorithm::Lz4, Algorithm::Zlib] {
            let c = compress(&data, CompressionSettings::new(alg, 1)).unwrap();
            // Two chunks: the first announces exactly MAX_CHUNK_SIZE bytes.
            assert_eq!(u24(&c[6..9]), MAX_CHUNK_SIZE);
            let first = CHUNK_HEADER_SIZE + u24(&c[3..6]);
            assert_eq!(u24(&c[first + 6..first + 9]), 1_000_000);
            let d = decompress(&c, data.len(), "big").unwrap();
            assert!(d == data, "{alg} multi-chunk round trip");
        }
    }

    /// `n` pseudo-random bytes (xorshift64), which no algorithm compresses.
    fn random_bytes(n: usize) -> Vec<u8> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// `compress_into` appends exactly what `compress` returns and keeps what was there,
    /// for compressible, incompressible (stored) and multi-chunk data; zstd's chunk
    /// payload is the zstd library's own frame for the input at level 2 * level, with
    /// the output written straight into the vector's spare capacity.
    #[test]
    fn compress_into_appends_what_compress_returns() {
        let random = random_bytes(5000);
        let cases = [
            (sample(100_000), &ALL[..]),
            (random, &ALL[..]),
            (vec![7u8; 3], &ALL[..]),
            (
                sample(MAX_CHUNK_SIZE + 5000),
                &[Algorithm::Zstd, Algorithm::Lz4][..],
            ),
        ];
        for (data, algorithms) in cases {
            for &alg in algorithms {
                let settings = CompressionSettings::new(alg, 5);
                let whole = compress(&data, settings).unwrap();
                let mut out = b"prefix".to_vec();
                compress_into(&data, settings, &mut out).unwrap();
                assert_eq!(&out[..6], b"prefix");
                assert!(out[6..] == whole[..], "{alg}, {} bytes", data.len());
            }
        }
        let data = sample(100_000);
        let mut out = vec![1, 2, 3];
        compress_into(
            &data,
            CompressionSettings::new(Algorithm::Zstd, 5),
            &mut out,
        )
        .unwrap();
        let frame = zstd::bulk::compress(&data, 10).unwrap();
        assert_eq!(u24(&out[3 + 3..3 + 6]), frame.len());
        assert_eq!(&out[3 + CHUNK_HEADER_SIZE..], &frame[..]);
    }

    /// zstd gets exactly the room ROOT gives it (the input less the chunk header),
    /// however much capacity the vector has beyond: around the frame's size, a room is
    /// accepted exactly when zstd accepts an output buffer of that capacity of its own
    /// (it needs a margin), and a refused one leaves the vector as it was.
    #[test]
    fn zstd_room_is_exact() {
        let data = sample(20_000);
        let frame = zstd::bulk::compress(&data, 10).unwrap();
        let mut accepted = 0;
        for room in frame.len() - 4..frame.len() + 64 {
            let mut alone = Vec::with_capacity(room);
            let fits = zstd::bulk::Compressor::new(10)
                .unwrap()
                .compress_to_buffer(&data, &mut alone)
                .is_ok_and(|n| n <= room);
            let mut out = Vec::with_capacity(1 << 20);
            out.extend_from_slice(b"ab");
            assert_eq!(
                zstd_compress_into(&data, room, 10, &mut out),
                fits,
                "room {room}"
            );
            if fits {
                accepted += 1;
                assert_eq!(&out[2..], &frame[..]);
            } else {
                assert_eq!(out, b"ab");
            }
        }
        // Both outcomes occur in the range.
        assert!(accepted > 0 && accepted < 68, "{accepted}");
    }

    #[test]
    fn incompressible_is_stored() {
        // Random bytes do not compress: stored as is.
        let data = random_bytes(4096);
        for &alg in &ALL {
            let c = compress(&data, CompressionSettings::new(alg, 5)).unwrap();
            assert_eq!(c, data);
            assert_eq!(decompress(&c, data.len(), "t").unwrap(), data);
        }
        assert_eq!(
            compress(b"short", CompressionSettings::DEFAULT_RNTUPLE).unwrap(),
            b"short"
        );
    }

    #[test]
    fn corrupt_inputs_error() {
        let data = sample(5000);
        for &alg in &ALL {
            let c = compress(&data, CompressionSettings::new(alg, 5)).unwrap();
            assert!(c.len() < data.len());
            // Truncated anywhere.
            for cut in [0, 1, 5, 8, 9, 10, c.len() / 2, c.len() - 1] {
                assert!(
                    decompress(&c[..cut], data.len(), "t").is_err(),
                    "{alg} cut {cut}"
                );
            }
            // Wrong expected size.
            assert!(decompress(&c, data.len() - 1, "t").is_err());
            assert!(decompress(&c, data.len() + 1, "t").is_err());
            // Bad magic.
            let mut bad = c.clone();
            bad[0] = b'Q';
            assert!(matches!(
                decompress(&bad, data.len(), "t"),
                Err(Error::Corrupt { .. })
            ));
            // Header sizes off by one either way.
            for (pos, delta) in [(3usize, 1i32), (3, -1), (6, 1), (6, -1)] {
                let mut bad = c.clone();
                bad[pos] = (bad[pos] as i32 + delta) as u8;
                assert!(
                    decompress(&bad, data.len(), "t").is_err(),
                    "{alg} {pos} {delta}"
                );
            }
            // Flipped bytes in the payload: error or (for codecs without checksum on
            // some bytes) a different result, but never a panic.
            for i in CHUNK_HEADER_SIZE..c.len() {
                let mut bad = c.clone();
                bad[i] ^= 0x5A;
                let _ = decompress(&bad, data.len(), "t");
            }
            // Trailing garbage after the last chunk.
            let mut bad = c.clone();
            bad.extend_from_slice(&[1, 2, 3]);
            assert!(decompress(&bad, data.len(), "t").is_err());
        }
        // lz4 checksum is verified.
        let c = compress(&data, CompressionSettings::new(Algorithm::Lz4, 1)).unwrap();
        let mut bad = c.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(matches!(
            decompress(&bad, data.len(), "t"),
            Err(Error::ChecksumMismatch { .. })
        ));
        // Old ROOT algorithm: clear Unsupported error.
        let mut old = c.clone();
        old[0..3].copy_from_slice(b"CS\x08");
        assert!(matches!(
            decompress(&old, data.len(), "t"),
            Err(Error::Unsupported(_))
        ));
        // Zero-sized chunk.
        let zero = [b'Z', b'S', 1, 0, 0, 0, 0, 0, 0, 0];
        assert!(decompress(&zero, 3, "t").is_err());
    }

    #[test]
    fn decompresses_root_written_chunks() {
        // Written by ROOT 6.40's R__zipMultipleAlgorithm (tests/data/make_zip_vectors.py).
        let input: &[u8] = include_bytes!("../tests/data/zip_input.bin");
        let vectors: [(&str, &[u8]); 4] = [
            ("zlib", include_bytes!("../tests/data/zip_root_zlib.bin")),
            ("lzma", include_bytes!("../tests/data/zip_root_lzma.bin")),
            ("lz4", include_bytes!("../tests/data/zip_root_lz4.bin")),
            ("zstd", include_bytes!("../tests/data/zip_root_zstd.bin")),
        ];
        for (name, c) in vectors {
            assert!(c.len() < input.len(), "{name}");
            let d = decompress(c, input.len(), name).unwrap();
            assert!(d == input, "{name}: ROOT-written chunk decodes wrongly");
        }
    }

    #[test]
    fn uncompressed_is_copied() {
        let data = sample(100);
        assert_eq!(decompress(&data, 100, "t").unwrap(), data);
        assert_eq!(decompress(&[], 0, "t").unwrap(), Vec::<u8>::new());
    }
}
