//! `rntuple`: read CERN ROOT's RNTuple columnar event-data format (binary format 1.0)
//! without ROOT.
//!
//! The modules follow the layers of the project's ARCHITECTURE.md, bottom to top:
//! [`io`] (byte sources), [`compression`] (ROOT compression blocks), [`container`]
//! (the ROOT file around an RNTuple), [`mod@format`] (the spec's byte structures),
//! [`encoding`] (column element codecs), [`schema`] (field tree and descriptor) and
//! [`read`] (planning, fetching, decoding into Apache Arrow), [`mod@write`], and the
//! [`tools`] that compose them (recovery).

#![forbid(unsafe_op_in_unsafe_fn)]

pub mod compression;
pub mod container;
pub mod encoding;
pub mod error;
pub mod format;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz;
pub mod io;
pub mod read;
pub mod schema;
pub mod tools;
pub mod write;

pub use error::{Error, Location, Result};
