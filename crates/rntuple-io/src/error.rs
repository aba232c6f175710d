//! The error of the byte sources: what failed reading or writing bytes, and where.
//!
//! The core's error (`rntuple::Error`) holds the failures of reading or writing bytes
//! ([`Error::Io`], [`Error::Write`], [`Error::Remote`]) as they are, and has a variant of
//! the same name and message for each of the others: a failure reads the same whether
//! a byte source or the format found it.

use std::fmt;

/// What sort of failure an [`Error::Remote`] is, the same for every protocol (HTTP(S),
/// XRootD, S3), so that callers can react to it without reading messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RemoteKind {
    /// No such file, bucket or key: HTTP 404 or 410, XRootD `kXR_NotFound`, S3
    /// `NoSuchKey`/`NoSuchBucket`.
    NotFound,
    /// The server refused access: HTTP 401 or 403, XRootD `kXR_NotAuthorized` or
    /// `kXR_AuthFailed` (or credentials it refused), S3 `AccessDenied`,
    /// `InvalidAccessKeyId`, `SignatureDoesNotMatch` (HTTP 401 or 403).
    PermissionDenied,
    /// The path names a directory, not a file (XRootD).
    IsADirectory,
    /// A timeout of the `NetworkOptions` ran out, on the last attempt.
    TimedOut,
    /// Nothing listens at the server's port (on the last attempt).
    ConnectionRefused,
    /// The server reset or closed the connection before answering in full (on the last
    /// attempt).
    ConnectionReset,
    /// The connection could not be set up or broke otherwise: the host name does not
    /// resolve, the network is unreachable.
    Connection,
    /// TLS failed: the server's certificate is not trusted or the handshake was refused.
    Tls,
    /// The file changed on the server while it was read (or since it was cached).
    Changed,
    /// Another failure: a server error after the retries, a protocol violation, a reply
    /// that does not hold what was asked for.
    Other,
}

impl RemoteKind {
    /// A short stable name: `"not_found"`, `"permission_denied"`, `"is_a_directory"`,
    /// `"timed_out"`, `"connection_refused"`, `"connection_reset"`, `"connection"`,
    /// `"tls"`, `"changed"` or `"other"` (what Python's `RemoteError.kind` holds).
    pub fn name(self) -> &'static str {
        match self {
            RemoteKind::NotFound => "not_found",
            RemoteKind::PermissionDenied => "permission_denied",
            RemoteKind::IsADirectory => "is_a_directory",
            RemoteKind::TimedOut => "timed_out",
            RemoteKind::ConnectionRefused => "connection_refused",
            RemoteKind::ConnectionReset => "connection_reset",
            RemoteKind::Connection => "connection",
            RemoteKind::Tls => "tls",
            RemoteKind::Changed => "changed",
            RemoteKind::Other => "other",
        }
    }

    /// The [`std::io::ErrorKind`] of this kind of failure (`Other` where none fits).
    pub fn io_error_kind(self) -> std::io::ErrorKind {
        use std::io::ErrorKind as K;
        match self {
            RemoteKind::NotFound => K::NotFound,
            RemoteKind::PermissionDenied => K::PermissionDenied,
            RemoteKind::IsADirectory => K::IsADirectory,
            RemoteKind::TimedOut => K::TimedOut,
            RemoteKind::ConnectionRefused => K::ConnectionRefused,
            RemoteKind::ConnectionReset => K::ConnectionReset,
            RemoteKind::Connection | RemoteKind::Tls | RemoteKind::Changed | RemoteKind::Other => {
                K::Other
            }
        }
    }

    /// The kind of a connection failure that an I/O error of `kind` is (a refused,
    /// reset or timed-out connection; anything else is [`RemoteKind::Connection`]).
    pub fn of_connection_error(kind: std::io::ErrorKind) -> RemoteKind {
        use std::io::ErrorKind as K;
        match kind {
            K::ConnectionRefused => RemoteKind::ConnectionRefused,
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                RemoteKind::ConnectionReset
            }
            K::TimedOut | K::WouldBlock => RemoteKind::TimedOut,
            _ => RemoteKind::Connection,
        }
    }
}

impl fmt::Display for RemoteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every error of the byte sources. The core's error holds [`Error::Io`], [`Error::Write`]
/// and [`Error::Remote`] as they are; each other variant but [`Error::InFile`] and
/// [`Error::Other`] is also a variant of the core's error, with the same message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The byte source failed (file system, network).
    #[error("I/O error reading {what}: {source}")]
    Io {
        /// What was being read.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Writing an output failed (file system full, permissions, ...).
    #[error("I/O error writing {what}: {source}")]
    Write {
        /// What was being written, naming the file.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The data ends before what was asked for.
    #[error("truncated data: {what} needs {needed} bytes at offset {offset} but only {available} are there")]
    Truncated {
        /// What was being read.
        what: String,
        /// Offset of the read within its buffer or file.
        offset: u64,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// A value read (an address, a cache record) is impossible.
    #[error("corrupt data in {what}: {detail}")]
    Corrupt {
        /// Where the inconsistency was found.
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// A remote source failed: the server refused or broke the request (after the
    /// retries transient faults get), or the object changed while being read. `what`
    /// names the URL without credentials; `kind` says what sort of failure it was.
    #[error("remote read of {what} failed: {detail}")]
    Remote {
        /// What sort of failure.
        kind: RemoteKind,
        /// The URL (credentials removed) and what was being read.
        what: String,
        /// What went wrong.
        detail: String,
    },
    /// Something valid but not supported by this implementation (or this build).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// No such file, object or container.
    #[error("{0}")]
    NotFound(String),
    /// An output exists and was not to be replaced.
    #[error("{path} already exists (not replaced)")]
    OutputExists {
        /// The output's path as given.
        path: String,
    },
    /// The caller asked for something impossible (a bad range, URL or setting).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another error, naming the file (path, URL or object) it was found in; the core
    /// reports it as its error at that file's location.
    #[error("file {file}: {source}")]
    InFile {
        /// The file (path or URL).
        file: String,
        /// The error itself.
        #[source]
        source: Box<Error>,
    },
    /// An error of a layer above, passed through a byte source the layer implements
    /// (an object fetcher or store of the core): handed back to that layer unchanged.
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// Shorthand for a [`Error::Corrupt`].
    pub fn corrupt(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Corrupt {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// Shorthand for an [`Error::Remote`] of `kind` about `what` (a URL without
    /// credentials).
    pub fn remote(kind: RemoteKind, what: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Remote {
            kind,
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// The kind of a remote failure ([`Error::Remote`], also within [`Error::InFile`]),
    /// or `None` for any other error.
    pub fn remote_kind(&self) -> Option<RemoteKind> {
        match self.root_cause() {
            Error::Remote { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// The [`std::io::ErrorKind`] of an I/O failure: of the file system's error for
    /// [`Error::Io`] and [`Error::Write`], of the [`RemoteKind`] for [`Error::Remote`]
    /// (also within [`Error::InFile`]); `None` for errors that are not I/O failures.
    pub fn io_error_kind(&self) -> Option<std::io::ErrorKind> {
        match self.root_cause() {
            Error::Io { source, .. } | Error::Write { source, .. } => Some(source.kind()),
            Error::Remote { kind, .. } => Some(kind.io_error_kind()),
            _ => None,
        }
    }

    /// The error naming the file (path or URL) `file` it was found in: within an
    /// [`Error::InFile`] unless its message already names the file.
    pub fn in_file(self, file: &str) -> Self {
        if self.to_string().contains(file) {
            return self;
        }
        Error::InFile {
            file: file.to_string(),
            source: Box::new(self),
        }
    }

    /// The innermost error, without the files named around it.
    pub fn root_cause(&self) -> &Error {
        match self {
            Error::InFile { source, .. } => source.root_cause(),
            other => other,
        }
    }
}

/// The byte sources' result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Converts a size, count or offset held as u64 (read from a file or given by a caller)
/// to `usize`, or fails with [`Error::Unsupported`] naming `what`. On a 32-bit target
/// such a value can exceed the address space; truncating it would silently address the
/// wrong bytes or build an array of the wrong length.
pub fn to_usize(value: u64, what: &str) -> Result<usize> {
    usize::try_from(value).map_err(|_| {
        Error::Unsupported(format!(
            "{what}: {value} exceeds the {}-bit address space of this platform",
            usize::BITS
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_file_names_the_file_once() {
        let err = Error::NotFound("no such object".into()).in_file("s3://b/k");
        assert_eq!(err.to_string(), "file s3://b/k: no such object");
        let named = Error::NotFound("s3://b/k: no such object".into()).in_file("s3://b/k");
        assert!(matches!(named, Error::NotFound(_)), "{named:?}");
        let remote = Error::remote(RemoteKind::TimedOut, "u", "slow").in_file("f");
        assert_eq!(remote.remote_kind(), Some(RemoteKind::TimedOut));
        assert_eq!(remote.io_error_kind(), Some(std::io::ErrorKind::TimedOut));
    }
}
