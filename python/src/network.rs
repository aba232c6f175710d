//! The network options of a remote file as Python gives them (`timeout=`,
//! `connect_timeout=`, `speed_limit=`, `speed_time=`, `retries=`), the read-ahead
//! (`bunch_bytes=`, `read_ahead_bytes=`), the other settings (`direct_io=`,
//! `huge_pages=`, `daos_dir=`, `daos_mapping=`), and what Python hears of a slow read:
//! a warning (`rntuple.SlowReadWarning`).

use crate::cache::with_cache;
use pyo3::prelude::*;
use rntuple::Error;
use rntuple_io::{DirectIo, Observer, SourceOptions, Transfer, TransferObserver};
use std::collections::HashMap;
use std::sync::Arc;

/// Every setting Python gives, as the core takes them: the environment's
/// ([`SourceOptions::current`]) with `network` ([`source_options`]), `cache`
/// ([`with_cache`]) and `settings` ([`with_settings`]) over them.
pub(crate) fn read_settings(
    network: Option<HashMap<String, f64>>,
    cache: Option<HashMap<String, String>>,
    settings: Option<HashMap<String, String>>,
) -> rntuple::Result<SourceOptions> {
    let options = source_options(network.unwrap_or_default())?;
    with_settings(with_cache(options, cache)?, settings.unwrap_or_default())
}

/// `options` with the settings named in `settings` over them: `direct_io` (`auto`,
/// `always`, `never`), `huge_pages` (`always`, `never`), `daos_dir` (a directory) and
/// `daos_mapping` (`per-page`, `per-cluster`). A bad value is an invalid argument naming
/// its keyword.
pub(crate) fn with_settings(
    mut options: SourceOptions,
    settings: HashMap<String, String>,
) -> rntuple::Result<SourceOptions> {
    for (name, value) in settings {
        match name.as_str() {
            "direct_io" => options.direct_io = DirectIo::parse(&value, &name)?,
            "huge_pages" => options.huge_pages = rntuple_io::parse_huge_pages(&value, &name)?,
            "daos_dir" => options.daos_dir = Some(value.into()),
            "daos_mapping" => {
                rntuple::write::parse_daos_mapping(&value).map_err(|_| {
                    Error::InvalidArgument(format!(
                        "{name}={value:?}: expected per-page (ROOT main's) or per-cluster \
                         (ROOT 6.40's)"
                    ))
                })?;
                options.daos_mapping = Some(value);
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown setting {other:?}: expected direct_io, huge_pages, daos_dir or \
                     daos_mapping"
                )))
            }
        }
    }
    Ok(options)
}

/// The options of a source: the environment's (`RNTUPLE_*`, else the defaults), with the
/// network settings in `network` (seconds, bytes a second, and a whole number of
/// retries) over them, and warnings of slow reads raised as Python warnings. An unknown
/// name or a bad value is an invalid argument naming it.
pub(crate) fn source_options(
    network: std::collections::HashMap<String, f64>,
) -> rntuple::Result<SourceOptions> {
    let mut options = SourceOptions::current()?;
    let bad = |name: &str, value: f64, expected: &str| {
        Error::InvalidArgument(format!("{name}={value}: expected {expected}"))
    };
    for (name, value) in network {
        let seconds = || {
            if value > 0.0 && value <= 86_400.0 {
                Ok(std::time::Duration::from_secs_f64(value))
            } else {
                Err(bad(
                    &name,
                    value,
                    "a number of seconds, more than 0 and at most 86400",
                ))
            }
        };
        let whole = |expected: &str| {
            if value >= 0.0 && value <= f64::from(u32::MAX) && value.fract() == 0.0 {
                // A whole number within u32's range (checked above).
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Ok(value as u32)
            } else {
                Err(bad(&name, value, expected))
            }
        };
        let target = &mut options.network;
        match name.as_str() {
            "connect_timeout" => target.connect_timeout = seconds()?,
            "first_byte_timeout" => target.first_byte_timeout = seconds()?,
            "idle_timeout" => target.idle_timeout = seconds()?,
            "speed_time" => target.speed_time = seconds()?,
            "speed_limit" => {
                target.speed_limit =
                    u64::from(whole("a whole number of bytes a second (0 for no limit)")?);
            }
            "retries" => target.retries = whole("a whole number of retries (0 or more)")?,
            "bunch_bytes" => {
                let bytes = whole("a whole number of bytes, more than 0")?;
                if bytes == 0 {
                    return Err(bad(&name, value, "a whole number of bytes, more than 0"));
                }
                options.read_ahead.bunch_bytes = Some(u64::from(bytes));
            }
            "read_ahead_bytes" => {
                let bytes = whole("a whole number of bytes, more than 0")?;
                if bytes == 0 {
                    return Err(bad(&name, value, "a whole number of bytes, more than 0"));
                }
                options.read_ahead.max_bytes = u64::from(bytes);
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown network option {other:?}: expected connect_timeout, \
                     first_byte_timeout, idle_timeout, speed_limit, speed_time, retries, \
                     bunch_bytes or read_ahead_bytes"
                )))
            }
        }
    }
    options.observer = Some(Observer(Arc::new(PythonWarnings)));
    Ok(options)
}

/// Raises the library's warnings as `rntuple.SlowReadWarning`; draws no progress.
struct PythonWarnings;

/// A transfer nobody draws.
struct Unseen;

impl Transfer for Unseen {
    fn advance(&mut self, _bytes: u64) {}
}

impl TransferObserver for PythonWarnings {
    fn transfer(&self, _what: &str, _total: Option<u64>) -> Box<dyn Transfer> {
        Box::new(Unseen)
    }

    fn warning(&self, message: &str) {
        Python::attach(|py| {
            let category = py
                .import("rntuple.errors")
                .and_then(|errors| errors.getattr("SlowReadWarning"));
            let Ok(message) = std::ffi::CString::new(message.replace('\0', "\\0")) else {
                return;
            };
            if let Ok(category) = category {
                // A filter that turns warnings into errors: the read goes on regardless.
                let _ = PyErr::warn(py, &category, &message, 1);
            }
        });
    }
}
