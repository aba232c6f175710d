//! The one error type of the library: every failure says what went wrong and where.

use rntuple_io::RemoteKind;
use std::fmt;

/// Where in a file or RNTuple an error was found. Each part is optional; the
/// `Display` form lists the parts that are known, e.g. `field "Jet.pt", cluster 3, page 7`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The file (path or URL) being read.
    pub file: Option<String>,
    /// The RNTuple's name (with its directory path).
    pub rntuple: Option<String>,
    /// The structure being decoded: "header envelope", "page list of cluster group 2", ...
    pub structure: Option<String>,
    /// A field by its qualified name.
    pub field: Option<String>,
    /// A column by its physical id.
    pub column: Option<u64>,
    /// A cluster by its id.
    pub cluster: Option<u64>,
    /// A page by its index within its column and cluster.
    pub page: Option<u64>,
    /// A byte offset in the file (in the object, when `object` is set).
    pub offset: Option<u64>,
    /// An object of an object-store layout, by id (its pages and envelopes are objects
    /// of their own: an offset alone would be an object's address, no byte of a file).
    pub object: Option<u64>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(v) = &self.file {
            parts.push(format!("file {v}"));
        }
        if let Some(v) = &self.rntuple {
            parts.push(format!("RNTuple \"{v}\""));
        }
        if let Some(v) = &self.structure {
            parts.push(v.clone());
        }
        if let Some(v) = &self.field {
            parts.push(format!("field \"{v}\""));
        }
        if let Some(v) = self.column {
            parts.push(format!("column {v}"));
        }
        if let Some(v) = self.cluster {
            parts.push(format!("cluster {v}"));
        }
        if let Some(v) = self.page {
            parts.push(format!("page {v}"));
        }
        if let Some(v) = self.object {
            parts.push(format!("object {v}"));
        }
        if let Some(v) = self.offset {
            parts.push(match self.object {
                Some(_) => format!("byte offset {v} in the object"),
                None => format!("byte offset {v}"),
            });
        }
        f.write_str(&parts.join(", "))
    }
}

/// Every error the library reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing bytes failed: the file system, the network, a remote server
    /// (an [`rntuple_io::Error::Io`], [`Write`](rntuple_io::Error::Write) or
    /// [`Remote`](rntuple_io::Error::Remote)). Its message, its [`std::io::ErrorKind`]
    /// and its [`RemoteKind`] are the byte sources' own; the byte sources' other errors
    /// convert to this type's variant of the same name.
    #[error(transparent)]
    Io(rntuple_io::Error),
    /// The data ends before a structure that it announces.
    #[error("truncated data: {what} needs {needed} bytes at offset {offset} but only {available} are there")]
    Truncated {
        /// What was being decoded.
        what: String,
        /// Offset of the read within its buffer or file.
        offset: u64,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// A stored checksum does not match the data.
    #[error("checksum mismatch in {what}: stored {stored:#018x}, computed {computed:#018x}")]
    ChecksumMismatch {
        /// The envelope, anchor or page whose checksum failed.
        what: String,
        /// The checksum stored in the file.
        stored: u64,
        /// The checksum of the data read.
        computed: u64,
    },
    /// A value in the data is impossible or contradicts another one.
    #[error("corrupt data in {what}: {detail}")]
    Corrupt {
        /// Where the inconsistency was found.
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// Decompression failed.
    #[error("decompression failed in {what}: {detail}")]
    Decompression {
        /// The page or envelope being decompressed.
        what: String,
        /// The codec's message.
        detail: String,
    },
    /// The file uses a feature-flag bit this reader does not know (wording as ROOT's).
    #[error("unsupported format feature: {0}")]
    UnsupportedFeature(u32),
    /// Something valid but not supported by this implementation.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// No such RNTuple, TTree or field in the file (a file that is not a ROOT file is
    /// [`Error::Corrupt`]).
    #[error("{0}")]
    NotFound(String),
    /// An output file exists and was not to be replaced.
    #[error("{path} already exists (not replaced)")]
    OutputExists {
        /// The output's path as given.
        path: String,
    },
    /// A field cannot be read as the type asked for (schema evolution's rules refuse
    /// it); the message names the field and both types.
    #[error("{0}")]
    IncompatibleType(String),
    /// A value does not fit the type its field is read as.
    #[error(
        "field \"{field}\": the value {value} of entry {entry} is out of the range of {target}"
    )]
    OutOfRange {
        /// The field, by its qualified name.
        field: String,
        /// The entry holding the value.
        entry: u64,
        /// The value, as text.
        value: String,
        /// The type it does not fit.
        target: String,
    },
    /// An integer read as a real type that does not hold it exactly (it would read as
    /// another number).
    #[error(
        "field \"{field}\": the value {value} of entry {entry} is not exactly a {target} (it \
         would read as {read_as})"
    )]
    Inexact {
        /// The field, by its qualified name.
        field: String,
        /// The entry holding the value.
        entry: u64,
        /// The value, as text.
        value: String,
        /// The real type asked for.
        target: String,
        /// What the value would read as.
        read_as: String,
    },
    /// The caller asked for something impossible (unknown field, bad range).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An Arrow error while assembling arrays.
    #[error("Arrow error: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// Another error, with the place where it happened.
    #[error("{location}: {source}")]
    At {
        /// Where the error happened.
        location: Box<Location>,
        /// The error itself.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// Shorthand for a [`Error::Corrupt`].
    pub fn corrupt(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Corrupt {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// The kind of a remote failure (an [`rntuple_io::Error::Remote`] in [`Error::Io`],
    /// also wrapped in locations), or `None` for any other error.
    pub fn remote_kind(&self) -> Option<RemoteKind> {
        match self.root_cause() {
            Error::Io(io) => io.remote_kind(),
            _ => None,
        }
    }

    /// The [`std::io::ErrorKind`] of an I/O failure ([`Error::Io`], also wrapped in
    /// locations), as [`rntuple_io::Error::io_error_kind`] says; `None` for errors that are
    /// not I/O failures.
    pub fn io_error_kind(&self) -> Option<std::io::ErrorKind> {
        match self.root_cause() {
            Error::Io(io) => io.io_error_kind(),
            _ => None,
        }
    }

    /// Wraps the error with the place where it happened.
    pub fn at(self, location: Location) -> Self {
        Error::At {
            location: Box::new(location),
            source: Box::new(self),
        }
    }

    /// The error naming the file (path or URL) `file` it was found in: wrapped with
    /// the file's [`Location`] unless its message already names the file.
    pub fn in_file(self, file: &str) -> Self {
        if self.to_string().contains(file) {
            return self;
        }
        self.at(Location {
            file: Some(file.to_string()),
            ..Default::default()
        })
    }

    /// The innermost error, without the locations wrapped around it.
    pub fn root_cause(&self) -> &Error {
        match self {
            Error::At { source, .. } => source.root_cause(),
            other => other,
        }
    }
}

/// Each failure of a byte source: reading or writing bytes as [`Error::Io`], every other
/// as the variant of the same name and message (a file named around it as its
/// [`Location`]); an error of this crate passed through a byte source comes back
/// unchanged.
impl From<rntuple_io::Error> for Error {
    fn from(error: rntuple_io::Error) -> Self {
        use rntuple_io::Error as E;
        match error {
            io @ (E::Io { .. } | E::Write { .. } | E::Remote { .. }) => Error::Io(io),
            E::Truncated {
                what,
                offset,
                needed,
                available,
            } => Error::Truncated {
                what,
                offset,
                needed,
                available,
            },
            E::Corrupt { what, detail } => Error::Corrupt { what, detail },
            E::Unsupported(message) => Error::Unsupported(message),
            E::NotFound(message) => Error::NotFound(message),
            E::OutputExists { path } => Error::OutputExists { path },
            E::InvalidArgument(message) => Error::InvalidArgument(message),
            E::InFile { file, source } => Error::from(*source).at(Location {
                file: Some(file),
                ..Default::default()
            }),
            E::Other(other) => match other.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::Io(E::Io {
                    what: "a byte source".into(),
                    source: std::io::Error::other(other),
                }),
            },
        }
    }
}

/// An error of this crate handed through a byte source this crate implements (an
/// object fetcher, a store): the byte sources' own error for [`Error::Io`], their variant
/// of the same name where there is one, else passed through whole, to come back
/// unchanged.
impl From<Error> for rntuple_io::Error {
    fn from(error: Error) -> Self {
        use rntuple_io::Error as E;
        match error {
            Error::Io(io) => io,
            Error::Truncated {
                what,
                offset,
                needed,
                available,
            } => E::Truncated {
                what,
                offset,
                needed,
                available,
            },
            Error::Corrupt { what, detail } => E::Corrupt { what, detail },
            Error::Unsupported(message) => E::Unsupported(message),
            Error::NotFound(message) => E::NotFound(message),
            Error::OutputExists { path } => E::OutputExists { path },
            Error::InvalidArgument(message) => E::InvalidArgument(message),
            other => E::Other(Box::new(other)),
        }
    }
}

/// The hint for a name that does not exist: `did you mean "Jet_pt"?` with up to three
/// of `candidates` close to `wanted` (the same but for case, or a small edit away), or
/// `None` when none is.
pub fn did_you_mean<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let lower = wanted.to_lowercase();
    let mut close: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter(|c| *c != wanted)
        .map(|c| {
            let score = if c.to_lowercase() == lower {
                2.0
            } else {
                strsim::jaro_winkler(&lower, &c.to_lowercase())
            };
            (score, c)
        })
        .filter(|(score, _)| *score >= 0.85)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    close.dedup_by(|a, b| a.1 == b.1);
    // A name that differs only in case is the one meant.
    if close.first().is_some_and(|(score, _)| *score > 1.0) {
        close.retain(|(score, _)| *score > 1.0);
    }
    if close.is_empty() {
        return None;
    }
    let names: Vec<String> = close
        .iter()
        .take(3)
        .map(|(_, c)| format!("\"{c}\""))
        .collect();
    Some(format!("did you mean {}?", names.join(" or ")))
}

/// `text` (a message, a name, a type or a value read from a file) with its control
/// characters (C0, DEL, C1) as C escapes, for people: `\0`, `\t`, `\n`, `\r`, else
/// `\x1b`; a name holding a NUL or an escape sequence then shows as it is stored, and
/// cannot forge lines or colours in a terminal. Front ends print every message,
/// description and string value through it.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            // Every control character is below 0x100 (C0, DEL, C1).
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Converts a size, count or offset held as u64 (read from a file or given by a caller)
/// to `usize` as [`rntuple_io::to_usize`] does, or fails with [`Error::Unsupported`]
/// naming `what`.
pub(crate) fn to_usize(value: u64, what: &str) -> Result<usize> {
    Ok(rntuple_io::to_usize(value, what)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_for_people() {
        assert_eq!(printable("std::int32_t"), "std::int32_t");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(printable("std::int\x002_t"), "std::int\\02_t");
        assert_eq!(printable("a\tb\nc\rd"), "a\\tb\\nc\\rd");
        assert_eq!(printable("\u{1b}[31mred\u{7f}"), "\\x1b[31mred\\x7f");
        assert_eq!(printable("Müon \"1\"\u{85}"), "Müon \"1\"\\x85");
    }

    #[test]
    fn did_you_mean_offers_close_names_only() {
        let names = ["Jet_pt", "Jet_eta", "Muon_pt", "MET_pt", "nJet"];
        assert_eq!(
            did_you_mean("Jet_Pt", names).as_deref(),
            Some("did you mean \"Jet_pt\"?")
        );
        assert_eq!(
            did_you_mean("Jet_p", names).as_deref(),
            Some("did you mean \"Jet_pt\" or \"Jet_eta\"?")
        );
        assert_eq!(did_you_mean("Electron_charge", names), None);
        assert_eq!(did_you_mean("x", []), None);
    }

    #[test]
    fn to_usize_converts_up_to_the_address_space_and_fails_past_it() {
        let max = usize::MAX as u64;
        assert_eq!(to_usize(max, "test").unwrap(), usize::MAX);
        if let Some(past) = max.checked_add(1) {
            // Only reachable on targets whose usize is narrower than 64 bits.
            let err = to_usize(past, "page of column 3").unwrap_err();
            assert!(matches!(err, Error::Unsupported(_)), "{err}");
            assert!(err.to_string().contains("page of column 3"), "{err}");
        }
    }
}
