//! The cache of remote reads: its options for opening a file, its default directory
//! and its statistics.

use crate::errors::to_py_err;
use pyo3::prelude::*;
use rntuple::Error;
use rntuple_io::SourceOptions;
use std::collections::BTreeMap;

/// `options` with the cache of remote reads `cache` asks for: `None` leaves the
/// environment's (`RNTUPLE_CACHE_DIR`, ...); `{"dir": ""}` turns it off; `{"dir": DIR}`
/// with optional `"validate"` (`open`, `never`) and `"max_bytes"` (a size) sets one, the
/// environment's other settings under what is given.
pub(crate) fn with_cache(
    mut options: SourceOptions,
    cache: Option<std::collections::HashMap<String, String>>,
) -> rntuple::Result<SourceOptions> {
    let Some(mut cache) = cache else {
        return Ok(options);
    };
    let dir = cache.remove("dir").unwrap_or_default();
    if dir.is_empty() {
        options.cache = None;
        return Ok(options);
    }
    let mut config = rntuple_io::CacheConfig::from_env_in(dir)?;
    if let Some(validate) = cache.remove("validate") {
        config.validate = validate.parse()?;
    }
    if let Some(size) = cache.remove("max_bytes") {
        config.max_bytes = Some(rntuple_io::parse_byte_size(&size)?);
    }
    if let Some(other) = cache.keys().next() {
        return Err(Error::InvalidArgument(format!(
            "unknown cache option {other:?}: expected dir, validate or max_bytes"
        )));
    }
    options.cache = Some(config);
    Ok(options)
}

/// The per-user cache directory from the environment's `XDG_CACHE_HOME` and `HOME`
/// (which `rntuple/cache.py` reads), or `None` without either.
#[pyfunction]
#[pyo3(signature = (xdg_cache_home, home))]
pub(crate) fn default_cache_dir(
    xdg_cache_home: Option<String>,
    home: Option<String>,
) -> Option<String> {
    rntuple_io::default_cache_dir(
        xdg_cache_home.as_deref().map(std::ffi::OsStr::new),
        home.as_deref().map(std::ffi::OsStr::new),
    )
    .map(|dir| dir.to_string_lossy().into_owned())
}

/// What the cache of remote reads in `dir` holds (`entries`, `versions`, `extents`,
/// `bytes_on_disk`, `temporary_files`) and did (its counters, summed over every process).
#[pyfunction]
pub(crate) fn cache_stats(py: Python<'_>, dir: String) -> PyResult<BTreeMap<String, u64>> {
    let report = py
        .detach(|| rntuple_io::cache_stats(std::path::Path::new(&dir)))
        .map_err(to_py_err)?;
    let mut out: BTreeMap<String, u64> = report
        .counters
        .pairs()
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    out.insert("entries".into(), report.entries);
    out.insert("versions".into(), report.versions);
    out.insert("extents".into(), report.extents);
    out.insert("bytes_on_disk".into(), report.disk_bytes);
    out.insert("temporary_files".into(), report.temp_files);
    Ok(out)
}
