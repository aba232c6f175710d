//! `rntuple`: read CERN ROOT's RNTuple columnar event-data format (binary format 1.0)
//! without ROOT.
//!
//! The modules follow the layers of the project's ARCHITECTURE.md, bottom to top: the
//! byte sources are a crate of their own, `rntuple_io`, below this one; then
//! [`compression`] (ROOT compression blocks), [`container`]
//! (the ROOT file around an RNTuple), [`mod@format`] (the spec's byte structures),
//! [`encoding`] (column element codecs), [`schema`] (field tree and descriptor) and
//! [`read`] (planning, fetching, decoding into Apache Arrow), [`mod@write`], and the
//! features that compose them: [`mod@import`] (TTrees to RNTuple, reading them with
//! [`ttree`]), [`mod@merge`] (and copy), [`join`], [`mod@inspect`] (and verify),
//! [`recover`] and [`streamer_fields`].
//!
//! # Cargo features
//!
//! - `remote` (default): the three remote byte sources below.
//! - `http`: `http://` and `https://` URLs (`rntuple_io::HttpSource`; reqwest on rustls,
//!   on tokio).
//! - `xrootd`: `root://` and `roots://` URLs (`rntuple_io::XRootDSource`; rustls for TLS).
//! - `s3`: `s3://` URLs (`rntuple_io::S3Source`; object_store over reqwest, on tokio).
//!
//! Remote sources connect, wait and retry as `rntuple_io::NetworkOptions` says (connect,
//! first-byte and idle timeouts, retries): `rntuple_io::open_source_with`, or the
//! process's `rntuple_io::SourceOptions::current` (a program's defaults, else `RNTUPLE_*`
//! variables).
//!
//! With `default-features = false` the library reads and writes local files and memory
//! and pulls in none of tokio, reqwest, object_store or rustls; opening a URL whose
//! source is left out is an [`Error::Unsupported`] naming the feature it needs.

#![forbid(unsafe_op_in_unsafe_fn)]
// The workspace's lints hold library code to no silent narrowing; the unit tests may
// cast freely (clippy.toml lets them unwrap and panic).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

mod arrow_map;
pub mod compression;
pub mod container;
pub mod encoding;
pub mod error;
pub mod format;
pub mod import;
pub mod inspect;
// Two of the harnesses drive the HTTP and XRootD clients: the `fuzzing` feature turns
// on `http` and `xrootd`, and the crate's tests replay the corpus when both are on.
#[cfg(any(all(test, feature = "http", feature = "xrootd"), feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz;
// The byte sources, under the name the modules of this crate use for them (crate-private:
// their one public path is `rntuple_io::`).
use rntuple_io as io;
pub mod join;
mod memory;
pub mod merge;
pub mod read;
pub mod recover;
pub mod schema;
pub mod streamer_fields;
#[cfg(test)]
mod test_skips;
#[cfg(test)]
mod test_skips_tests;
pub mod ttree;
pub mod write;

pub use error::{Error, Location, Result};
