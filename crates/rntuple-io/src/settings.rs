//! The settings the environment gives: the one module of the byte sources (and of the
//! library) that reads `RNTUPLE_*` variables, into the values of [`SourceOptions`] that
//! the command line and Python build and pass to every open. Credentials are discovered
//! in `credentials.rs`, the other. Precedence is the caller's: the command line's options
//! and Python's keywords override what is read here, which overrides the defaults.

use crate::cache::{CacheConfig, CACHE_DIR_VARIABLE};
use crate::error::Result;
use crate::options::{
    parse_huge_pages, parse_positive_size, DirectIo, ReadAhead, BUNCH_BYTES_VARIABLE,
    DAOS_MAPPING_VARIABLE, DIRECT_IO_VARIABLE, HUGE_PAGES_VARIABLE, READ_AHEAD_BYTES_VARIABLE,
};
use crate::{NetworkOptions, SourceOptions, DAOS_DIR_VARIABLE};
use std::ffi::OsString;
use std::path::PathBuf;

/// A variable's value, `None` when unset or not Unicode.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl NetworkOptions {
    /// The defaults, with what the environment sets ([`NetworkOptions::from_vars`]).
    pub fn from_env() -> Result<NetworkOptions> {
        Self::from_vars(env)
    }
}

impl CacheConfig {
    /// The cache the environment asks for: [`CACHE_DIR_VARIABLE`] (unset or empty:
    /// `None`), `RNTUPLE_CACHE_VALIDATE` (`open` or `never`, default `open`) and
    /// `RNTUPLE_CACHE_MAX_BYTES` (a size; unset or empty: no limit). A value that cannot
    /// be read is an `Error::InvalidArgument` naming the variable.
    pub fn from_env() -> Result<Option<CacheConfig>> {
        CacheConfig::from_lookup(|name| std::env::var_os(name))
    }

    /// A cache in `dir` with the environment's other settings (validation, limit): a
    /// program's `--cache-dir` option.
    pub fn from_env_in(dir: impl Into<PathBuf>) -> Result<CacheConfig> {
        let dir: PathBuf = dir.into();
        let with_dir = |name: &str| -> Option<OsString> {
            if name == CACHE_DIR_VARIABLE {
                Some(dir.clone().into_os_string())
            } else {
                std::env::var_os(name)
            }
        };
        let config = CacheConfig::from_lookup(with_dir)?;
        Ok(config.unwrap_or_else(|| CacheConfig::new(dir.clone())))
    }
}

impl SourceOptions {
    /// Every setting the environment gives (the table in the docs lists them): the
    /// network's ([`NetworkOptions::from_vars`]), the cache's ([`CacheConfig::from_env`]),
    /// [`BUNCH_BYTES_VARIABLE`], [`READ_AHEAD_BYTES_VARIABLE`], [`DIRECT_IO_VARIABLE`],
    /// [`HUGE_PAGES_VARIABLE`], [`DAOS_DIR_VARIABLE`] and [`DAOS_MAPPING_VARIABLE`]. A
    /// value that does not parse is an error naming its variable.
    pub fn from_env() -> Result<SourceOptions> {
        Self::from_vars(env)
    }

    /// [`SourceOptions::from_env`] with the settings read through `var` instead of the
    /// environment (the command line hides the variables its options override); the
    /// cache's from the environment itself.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<SourceOptions> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let mut read_ahead = ReadAhead::default();
        if let Some(v) = set(BUNCH_BYTES_VARIABLE) {
            read_ahead.bunch_bytes = Some(parse_positive_size(&v, BUNCH_BYTES_VARIABLE)?);
        }
        if let Some(v) = set(READ_AHEAD_BYTES_VARIABLE) {
            read_ahead.max_bytes = parse_positive_size(&v, READ_AHEAD_BYTES_VARIABLE)?;
        }
        let direct_io = DirectIo::parse(
            &set(DIRECT_IO_VARIABLE).unwrap_or_default(),
            DIRECT_IO_VARIABLE,
        )?;
        let huge_pages = parse_huge_pages(
            &set(HUGE_PAGES_VARIABLE).unwrap_or_default(),
            HUGE_PAGES_VARIABLE,
        )?;
        Ok(SourceOptions {
            network: NetworkOptions::from_vars(&var)?,
            cache: CacheConfig::from_env()?,
            observer: None,
            read_ahead,
            direct_io,
            huge_pages,
            daos_dir: var(DAOS_DIR_VARIABLE)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            daos_mapping: set(DAOS_MAPPING_VARIABLE),
        })
    }
}

/// The direct-I/O setting of the environment ([`DIRECT_IO_VARIABLE`]), for a local file
/// opened without options.
pub(crate) fn direct_io_from_env() -> Result<DirectIo> {
    DirectIo::parse(
        &env(DIRECT_IO_VARIABLE).unwrap_or_default(),
        DIRECT_IO_VARIABLE,
    )
}

/// The DAOS directory store's directory of the environment ([`DAOS_DIR_VARIABLE`]), for
/// a container opened without options.
pub(crate) fn daos_dir_from_env() -> Option<PathBuf> {
    std::env::var_os(DAOS_DIR_VARIABLE).map(PathBuf::from)
}
