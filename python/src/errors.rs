//! Library errors as the exception classes of `rntuple.errors`.

use pyo3::prelude::*;
use rntuple::Error;
use rntuple_io::Error as IoError;

/// Raises the `rntuple.errors` class that fits a library error. I/O failures become the
/// `OSError` subclass Python gives their errno (`FileNotFoundError`, `PermissionError`,
/// `IsADirectoryError`, ...), with that `errno`; remote ones are also `RemoteError`s, of
/// the subclass of their kind (`RemoteFileNotFoundError`, ...; `rntuple.errors`).
pub(crate) fn to_py_err(err: impl Into<Error>) -> PyErr {
    let err = err.into();
    Python::attach(|py| {
        // Names and types from a file may hold control characters: shown escaped.
        let message = rntuple::error::printable(&err.to_string()).into_owned();
        let errors = py.import("rntuple.errors");
        let made = match err.root_cause() {
            Error::Io(IoError::Io { source, .. } | IoError::Write { source, .. }) => errors
                .and_then(|m| {
                    m.getattr("_os_error")?.call1((
                        source.raw_os_error(),
                        format!("{:?}", source.kind()),
                        message.clone(),
                    ))
                }),
            Error::Io(IoError::Remote { kind, what, .. }) => errors.and_then(|m| {
                // `what` is the URL, except for errors retold to later readers.
                let url = what.contains("://").then_some(what.as_str());
                m.getattr("_remote_error")?
                    .call1((kind.name(), message.clone(), url))
            }),
            other => {
                let class = match other {
                    Error::Truncated { .. }
                    | Error::Corrupt { .. }
                    | Error::Decompression { .. } => "FormatError",
                    Error::ChecksumMismatch { .. } => "ChecksumError",
                    Error::UnsupportedFeature(_) | Error::Unsupported(_) => "UnsupportedError",
                    Error::NotFound(_) => "NotFoundError",
                    Error::OutputExists { .. } => "OutputExistsError",
                    Error::InvalidArgument(_) => "InvalidArgumentError",
                    Error::IncompatibleType(_) => "IncompatibleTypeError",
                    Error::OutOfRange { .. } | Error::Inexact { .. } => "ValueOutOfRangeError",
                    _ => "RNTupleError",
                };
                errors.and_then(|m| m.getattr(class)?.call1((message.clone(),)))
            }
        };
        match made {
            Ok(instance) => PyErr::from_value(instance),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(message),
        }
    })
}

/// The error of an object-store dataset that is not there (no anchor object, no
/// directory): a `FileNotFoundError` as for a missing file, remote (a
/// `RemoteFileNotFoundError`) for S3; every other error as `to_py_err` makes it.
pub(crate) fn objects_open_err(url: &str, err: Error) -> PyErr {
    if !matches!(err.root_cause(), Error::NotFound(_)) {
        return to_py_err(err);
    }
    let message = err.to_string();
    let remote = !url.to_ascii_lowercase().starts_with("ntpl+file:");
    let made = Python::attach(|py| {
        let errors = py.import("rntuple.errors")?;
        if remote {
            errors
                .getattr("_remote_error")?
                .call1(("not_found", message.clone(), url))
                .map(PyErr::from_value)
        } else {
            errors
                .getattr("_os_error")?
                .call1((Some(2i32), "NotFound", message.clone()))
                .map(PyErr::from_value)
        }
    });
    made.unwrap_or_else(|e| e)
}
