//! A cache of remote reads on local disk: the store, its maintenance and its settings.
//! No networking here: a caching byte source wraps a remote one and keeps what it fetched
//! in a [`CacheStore`], which this module owns.
//!
//! # Layout
//!
//! ```text
//! <dir>/rntuple-cache-v1/        only this subdirectory is ever written or deleted
//!    purge.lock                  flock(LOCK_EX): one purger at a time (never deleted,
//!                                but for a link or special file in its place)
//!    tmp/<host>.<pid>.<token>.tmp     every new file is written here first
//!    trash/                      versions and entries renamed away, being deleted
//!    stats/<host>.<pid>.<token>.stats one per store instance, rewritten only by it
//!    stats/total                 the counters of finished processes (purge compacts)
//!    e/<hh>/<urlhash>/           one per normalized URL (xxh3-128, hh: its first 2 hex)
//!       url                      the URL, redacted (io::redact_url), written once
//!       current                  the identity (32 hex) of the current version
//!       <identity>/meta          the version's VersionMeta as JSON, written once
//!       <identity>/x/<offset>-<len>   extents: bytes [offset, offset + len) of the file
//! ```
//!
//! # Only what it owns
//!
//! The cache directory (`<dir>`, as the user names it) must be the user's and writable
//! by nobody else, and so must `rntuple-cache-v1/` in it, as OpenSSH's `StrictModes`
//! asks of `~/.ssh`: else the cache is refused, an error saying whose it is or its
//! mode and what to do (whoever can write a cache chooses the bytes read through it:
//! its xxh3 checksums are not keyed, so a group-shared cache is not offered). Both are
//! checked on their open handles (`fstat`), not by path.
//!
//! Every file operation is relative to the handle of `rntuple-cache-v1/` (`io/dirfd.rs`
//! under its private policy): paths are walked one name at a time, each directory
//! opened with `O_DIRECTORY | O_NOFOLLOW` and checked (a directory, the user's, not
//! writable by others, on the same file system); files are refused unless regular
//! files of the user's before they are opened (`O_NOFOLLOW | O_NONBLOCK`) and checked
//! again before a byte is read; publishing, eviction, the trash, the purge, a clear and a repair use
//! `linkat`, `renameat` and `unlinkat` on those handles; deletions walk by handle and
//! remove a link itself, never what it points to. A link, FIFO, socket, device, another
//! user's file or a directory where a file belongs (or the reverse) found where the
//! cache keeps its own is never followed nor opened: it is removed by name (looking
//! only, `cache stats`, `cache ls` and `cache verify` without `--repair` note it),
//! counted (`unsafe_files`) and reported; the bytes come from the origin.
//!
//! # Protocol
//!
//! Every new file is written completely under `tmp/`, then published: an extent or a
//! `meta` with `link(tmp, final)` and `unlink(tmp)`, which never replaces (the first
//! writer wins, the loser unlinks its copy: atomic on every POSIX file system, NFS
//! included), `current` and the stats files with `rename` (the one file that changes
//! is replaced whole). No file is read, modified and written back, there is no global
//! index, and nothing is synced: a crash may leave a torn file, which the checksums
//! find. A reader lists a version's `x/` to learn its extents; a writer adds one file;
//! a purger deletes files. An extent deleted under a reader that has it open is still
//! read (POSIX unlink); one deleted before it is opened is a miss.
//!
//! An extent file (`extent.rs`) is a 64-byte header (magic, format, block size, offset,
//! length, identity, and an xxh3-64 of the header and the table), a table of the
//! xxh3-64 of each 64 KiB block of the payload, then the payload. A read verifies the
//! blocks it overlaps, and only those, so a small read stays cheap, and never hands out
//! a byte of a block that failed. Any fault (missing, truncated, corrupt, unreadable
//! file, broken `current` or `meta`) makes the store report the extent or version as
//! absent, count it and remove the bad file when it is safe: the caller reads the
//! origin instead, so the cache never fails a read.
//!
//! A new identity of a URL (the file changed) gets a new version directory; `current`
//! is switched to it by rename and the old version is renamed into `trash/` and
//! deleted. A reader holding the old version keeps reading the extents it has open and
//! misses the others: versions never mix.
//!
//! # Eviction
//!
//! Least recently used extents first, by their files' modification time: a read touches
//! its extent at most once a minute per extent and process. Each store estimates the
//! directory's size (a scan at its first write, when a limit is set, plus what it wrote
//! since, scanned again after every tenth of the limit it wrote, as other processes
//! write too); above [`CacheConfig::max_bytes`] (or after ENOSPC) it tries `purge.lock`
//! without waiting and, when it gets it, scans and deletes extents down to 90% of the
//! limit, in the background. The purge also removes temporary files of dead writers
//! (same host, `kill(pid, 0)` fails with ESRCH) or older than an hour, what is in
//! `trash/`, version directories `current` does not name (10 minutes after they were
//! made: an install may be under way), entries left without versions, and it adds the
//! stats files of dead processes into `stats/total`.
//!
//! # Differences from the proposed design, and why
//!
//! - `link` + `unlink` instead of `renameat2(RENAME_NOREPLACE)`: the same "first writer
//!   wins" on every POSIX file system (NFS has no `RENAME_NOREPLACE`).
//! - Per-block checksums instead of one checksum of the payload: a read of one page of
//!   a 16 MiB extent hashes 64 KiB, not 16 MiB.
//! - The size estimate is scanned at a store's first write, not when it opens: a warm
//!   read that writes nothing never walks the directory.
//! - A process holds no lock while it reads: an extent deleted under a reader is a miss,
//!   never a wrong byte, so an `inuse` lock would only delay eviction.
//! - The default ports (80, 443, 1094) are removed from the key, and XRootD client
//!   options (`xrdcl.*`) are dropped with the credentials: they do not name another file.

mod extent;
mod layout;
mod maintain;
mod meta;
mod purge;
mod stats;
mod stats_files;
mod store;
mod sys;
mod url;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_safety;

pub use maintain::{
    cache_clear, cache_ls, cache_purge, cache_stats, cache_verify, CacheListing, CacheReport,
    ClearReport, EntryReport, PurgeReport, VerifyReport,
};
pub use stats::CacheStats;
pub(crate) use store::{CacheStore, Piece, Version, VersionMeta};

use crate::error::{Error, Result};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

/// The store of `config`, for a read through the cache: `Ok(Some)` opened; `Ok(None)` a
/// fault of the cache (a directory that cannot be made or written: the read goes to
/// the origin without it); `Err` the cache directory refused (another user's, or
/// writable by others), which the read reports rather than pass over, so that the user
/// learns the setting is unsafe.
pub(crate) fn open_store(config: &CacheConfig) -> Result<Option<Arc<CacheStore>>> {
    match CacheStore::open(config) {
        Ok(store) => Ok(Some(store)),
        Err(e) if layout::is_refusal(&e) => Err(e),
        Err(_) => Ok(None),
    }
}

/// The name of the cache's directory in the user's cache directory.
const DEFAULT_DIR_NAME: &str = "rntuple";

/// The per-user cache directory (the XDG base directory rule): `rntuple` in
/// `xdg_cache_home` when that is an absolute path, else `home/.cache/rntuple` when
/// `home` is one; `None` without either. The values are the caller's: a program reads
/// `XDG_CACHE_HOME` and `HOME` from its environment. A cache opened there is made with
/// mode 0700.
pub fn default_cache_dir(xdg_cache_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    fn absolute(value: Option<&OsStr>) -> Option<&Path> {
        value.map(Path::new).filter(|p| p.is_absolute())
    }
    absolute(xdg_cache_home)
        .map(|dir| dir.join(DEFAULT_DIR_NAME))
        .or_else(|| absolute(home).map(|home| home.join(".cache").join(DEFAULT_DIR_NAME)))
}

/// The environment variable naming the cache directory (unset or empty: no cache).
pub const CACHE_DIR_VARIABLE: &str = "RNTUPLE_CACHE_DIR";

/// The environment variable saying when cached files are checked against the origin:
/// `open` (the default) or `never`.
pub const CACHE_VALIDATE_VARIABLE: &str = "RNTUPLE_CACHE_VALIDATE";

/// The environment variable limiting the cache's size: bytes, or a number with a unit
/// (`500 MB`, `2GiB`, `10G`; see [`parse_byte_size`]).
pub const CACHE_MAX_BYTES_VARIABLE: &str = "RNTUPLE_CACHE_MAX_BYTES";

/// How a cache is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheConfig {
    /// The directory the cache lives in (its files go in `rntuple-cache-v1/` inside).
    pub dir: PathBuf,
    /// When a cached file is checked against the origin.
    pub validate: CacheValidate,
    /// The most bytes the cache may hold (`None`: no limit). Above it, least recently
    /// used extents are deleted down to 90% of it.
    pub max_bytes: Option<u64>,
}

impl CacheConfig {
    /// A cache in `dir` that validates on open and has no size limit.
    pub fn new(dir: impl Into<PathBuf>) -> CacheConfig {
        CacheConfig {
            dir: dir.into(),
            validate: CacheValidate::Open,
            max_bytes: None,
        }
    }

    /// [`CacheConfig::from_env`] with the variables' values from `get`.
    pub(crate) fn from_lookup(
        get: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<CacheConfig>> {
        let var = |name: &str| get(name).filter(|v| !v.is_empty());
        // The two settings are checked even without a directory: a mistyped value is
        // refused whether or not the cache is on.
        let validate = match var(CACHE_VALIDATE_VARIABLE) {
            Some(v) => v.to_string_lossy().parse()?,
            None => CacheValidate::Open,
        };
        let max_bytes = match var(CACHE_MAX_BYTES_VARIABLE) {
            Some(v) => Some(max_bytes_value(&v.to_string_lossy())?),
            None => None,
        };
        Ok(var(CACHE_DIR_VARIABLE).map(|dir| CacheConfig {
            dir: PathBuf::from(dir),
            validate,
            max_bytes,
        }))
    }

    /// The size a purge deletes down to: 90% of [`CacheConfig::max_bytes`].
    pub fn low_mark(&self) -> Option<u64> {
        self.max_bytes.map(low_mark)
    }
}

/// 90% of `max_bytes`, the size an eviction deletes down to.
pub(crate) fn low_mark(max_bytes: u64) -> u64 {
    max_bytes / 10 * 9 + max_bytes % 10 * 9 / 10
}

/// A value of [`CACHE_MAX_BYTES_VARIABLE`], or the error naming the variable.
pub(crate) fn max_bytes_value(text: &str) -> Result<u64> {
    parse_byte_size(text).map_err(|_| {
        Error::InvalidArgument(format!(
            "{CACHE_MAX_BYTES_VARIABLE}={text:?}: expected a size in bytes, or a number \
             with a unit (500 MB, 2GiB, 10G)"
        ))
    })
}

/// When a cached file is checked against the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheValidate {
    /// On every open, one small request compares the file's identity (its first bytes,
    /// anchor and validators) with the cached one; a change starts a new version.
    #[default]
    Open,
    /// Never: the cached version is used as it is (no request to the origin when all
    /// bytes are cached). For files that never change, and for working offline.
    Never,
}

impl FromStr for CacheValidate {
    type Err = Error;

    /// `open` or `never` (case and surrounding white space ignored); anything else is
    /// an [`Error::InvalidArgument`] naming [`CACHE_VALIDATE_VARIABLE`].
    fn from_str(value: &str) -> Result<CacheValidate> {
        match value.trim().to_ascii_lowercase().as_str() {
            "open" => Ok(CacheValidate::Open),
            "never" => Ok(CacheValidate::Never),
            _ => Err(Error::InvalidArgument(format!(
                "{CACHE_VALIDATE_VARIABLE}={value:?}: expected open or never"
            ))),
        }
    }
}

/// Parses a size: a whole or decimal number of bytes, optionally followed (with or
/// without a space, in any case) by a unit: `B`; `KB`, `MB`, `GB`, `TB` (powers of
/// 1000); `KiB`, `MiB`, `GiB`, `TiB` and the single letters `K`, `M`, `G`, `T` (powers
/// of 1024, as `dd` and `sort -S` read them). `"500 MB"` is 500,000,000 and `"10G"`
/// is 10,737,418,240. A fraction of a byte is rounded down.
pub fn parse_byte_size(text: &str) -> Result<u64> {
    let bad = || {
        Error::InvalidArgument(format!(
            "{text:?} is not a size: expected bytes, or a number with a unit (500 MB, 2GiB, 10G)"
        ))
    };
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let factor: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty()
        || fraction.contains('.')
        || whole.len() + fraction.len() > 30
    {
        return Err(bad());
    }
    let digits = |d: &str| -> Option<u128> {
        d.bytes().try_fold(0u128, |acc, b| {
            acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
        })
    };
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).map_err(|_| bad())?);
    let mantissa = digits(whole)
        .zip(scale)
        .and_then(|(w, scale)| w.checked_mul(scale)?.checked_add(digits(fraction)?));
    let (Some(mantissa), Some(scale)) = (mantissa, scale) else {
        return Err(bad());
    };
    mantissa
        .checked_mul(factor)
        .map(|bytes| bytes / scale)
        .and_then(|bytes| u64::try_from(bytes).ok())
        .ok_or_else(bad)
}

#[cfg(test)]
mod config_tests {
    use super::*;

    #[test]
    fn the_default_directory_is_per_user() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert_eq!(
            default_cache_dir(os("/x/cache"), os("/home/u")),
            Some(PathBuf::from("/x/cache/rntuple"))
        );
        assert_eq!(
            default_cache_dir(None, os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/rntuple"))
        );
        // The XDG rule: a relative or empty XDG_CACHE_HOME is ignored.
        assert_eq!(
            default_cache_dir(os("rel/cache"), os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/rntuple"))
        );
        assert_eq!(
            default_cache_dir(os(""), os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/rntuple"))
        );
        assert_eq!(default_cache_dir(None, os("")), None);
        assert_eq!(default_cache_dir(None, None), None);
        assert_eq!(default_cache_dir(os("relative"), os("also")), None);
    }

    #[test]
    fn sizes_parse_with_and_without_units() {
        let cases = [
            ("0", 0),
            ("1234", 1234),
            (" 1234 ", 1234),
            ("12 B", 12),
            ("500 MB", 500_000_000),
            ("500mb", 500_000_000),
            ("2GiB", 2 << 30),
            ("10G", 10 << 30),
            ("10 g", 10 << 30),
            ("1.5 KiB", 1536),
            ("1.5GB", 1_500_000_000),
            ("0.5K", 512),
            ("3 TB", 3_000_000_000_000),
            ("1t", 1 << 40),
            ("18446744073709551615", u64::MAX),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse_byte_size(text).unwrap(), bytes, "{text}");
        }
        for bad in [
            "",
            "MB",
            "12 PB",
            "-5",
            "1.2.3",
            "5 M B",
            "18446744073709551616",
            "20000000 TiB",
            ".",
            "1e6",
        ] {
            let err = parse_byte_size(bad).unwrap_err().to_string();
            assert!(err.contains("not a size"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_low_mark_is_ninety_percent() {
        assert_eq!(low_mark(1000), 900);
        assert_eq!(low_mark(1 << 20), 943_718);
        assert_eq!(low_mark(u64::MAX), u64::MAX / 10 * 9 + 4);
        assert_eq!(low_mark(0), 0);
    }

    #[test]
    fn validate_modes_parse_and_a_bad_one_names_the_variable() {
        assert_eq!(
            "open".parse::<CacheValidate>().unwrap(),
            CacheValidate::Open
        );
        assert_eq!(
            " Never ".parse::<CacheValidate>().unwrap(),
            CacheValidate::Never
        );
        let err = "always".parse::<CacheValidate>().unwrap_err().to_string();
        assert!(
            err.contains(CACHE_VALIDATE_VARIABLE)
                && err.contains("open")
                && err.contains("never")
                && err.contains("always"),
            "{err}"
        );
        let err = max_bytes_value("lots").unwrap_err().to_string();
        assert!(
            err.contains(CACHE_MAX_BYTES_VARIABLE) && err.contains("lots"),
            "{err}"
        );
    }

    #[test]
    fn the_environment_sets_the_cache() {
        let dir = std::env::temp_dir().join("rntuple-cache-env-test");
        let config = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, OsString)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), OsString::from(v)))
                .collect();
            CacheConfig::from_lookup(|name| {
                vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
            })
        };
        let d = dir.to_str().unwrap();
        assert_eq!(config(&[]).unwrap(), None);
        assert_eq!(config(&[(CACHE_DIR_VARIABLE, "")]).unwrap(), None);
        assert_eq!(
            config(&[(CACHE_DIR_VARIABLE, d)]).unwrap(),
            Some(CacheConfig::new(&dir))
        );
        let set = config(&[
            (CACHE_DIR_VARIABLE, d),
            (CACHE_VALIDATE_VARIABLE, "never"),
            (CACHE_MAX_BYTES_VARIABLE, "500 MB"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(set.validate, CacheValidate::Never);
        assert_eq!(set.max_bytes, Some(500_000_000));
        assert_eq!(set.low_mark(), Some(450_000_000));
        let err = config(&[
            (CACHE_DIR_VARIABLE, d),
            (CACHE_MAX_BYTES_VARIABLE, "500 XB"),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains(CACHE_MAX_BYTES_VARIABLE), "{err}");
        // A mistyped setting is refused even when the cache is off.
        let err = config(&[(CACHE_VALIDATE_VARIABLE, "sometimes")])
            .unwrap_err()
            .to_string();
        assert!(err.contains(CACHE_VALIDATE_VARIABLE), "{err}");
        assert_eq!(
            config(&[
                (CACHE_MAX_BYTES_VARIABLE, ""),
                (CACHE_VALIDATE_VARIABLE, "")
            ])
            .unwrap(),
            None
        );
    }
}
