//! Object stores: a flat namespace of whole objects under string keys, the storage
//! below RNTuple's object-store layouts (ROOT's S3 layout: one object per page, page
//! list, header and footer, and an anchor object; ROOT's DAOS layout).
//!
//! [`ObjectStorage`] is what a page source reads and a writer's sink writes through;
//! its backends:
//!
//! - [`MemoryObjects`]: objects in memory (tests, data built in memory);
//! - [`DirectoryObjects`]: one file per object under a root directory;
//! - `S3Objects` (feature `s3`): objects in an S3 bucket, over the client of
//!   `S3Source`.
//!
//! [`ObjectUploader`] lets a writer store objects without waiting for each: a few puts
//! in flight on worker threads, whatever the backend.
//!
//! # Keys
//!
//! A key is a `/`-separated path relative to the store's base: `ntuple`,
//! `ntuple/0`, `a/b/17`. Every backend takes the same keys ([`validate_key`]): not
//! empty, no leading or trailing `/`, no empty segment (`a//b`), no `.` or `..`
//! segment, no ASCII control character. A key may be both an object and the start of
//! other keys (the S3 layout's anchor `ntuple` beside its pages `ntuple/0`, ...).
//!
//! # Errors
//!
//! A missing object is an error naming it: [`Error::NotFound`] for memory and
//! directories, an [`Error::Remote`] of [`RemoteKind::NotFound`] for S3. A range that
//! goes past an object's end is an [`Error::Truncated`] naming the object, its size and
//! the range: never a short read.
//!
//! [`Error::Remote`]: crate::error::Error::Remote
//! [`RemoteKind::NotFound`]: crate::error::RemoteKind::NotFound

mod directory;
mod memory;
#[cfg(feature = "s3")]
mod s3;
mod uploader;

pub use directory::DirectoryObjects;
pub use memory::MemoryObjects;
#[cfg(feature = "s3")]
pub use s3::S3Objects;
pub use uploader::{ObjectUploader, UploaderOptions};

use crate::error::{Error, Result};
use crate::{ByteRange, IoMetricsSnapshot};

/// A flat namespace of whole objects: keys (see the module documentation) are strings
/// relative to the store's base. Shared by threads: every method takes `&self`.
pub trait ObjectStorage: Send + Sync + std::fmt::Debug {
    /// What the store is, for messages (its URL or path).
    fn name(&self) -> &str;

    /// The full name of one object, for messages (e.g. the URL or path of `key`).
    fn object_name(&self, key: &str) -> String;

    /// Stores `bytes` under `key`, replacing any object there. A reader sees the old
    /// object or the new one, never part of one.
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()>;

    /// The whole object, or the `range` of it. A missing object is an error naming it;
    /// a range past the end is an [`Error::Truncated`] naming the object, its size and
    /// the range.
    fn get(&self, key: &str, range: Option<ByteRange>) -> Result<Vec<u8>>;

    /// Many gets, as concurrently as the backend serves them well; the results in the
    /// order of `requests`. When some fail, the error of the first failing request (in
    /// the order of `requests`) is returned.
    fn get_many(&self, requests: &[(String, Option<ByteRange>)]) -> Result<Vec<Vec<u8>>> {
        requests
            .iter()
            .map(|(key, range)| self.get(key, *range))
            .collect()
    }

    /// The object's size in bytes, `None` if there is no object under `key`.
    fn size_of(&self, key: &str) -> Result<Option<u64>>;

    /// Removes the object under `key`; a missing one is not an error.
    fn delete(&self, key: &str) -> Result<()>;

    /// The keys that start with `prefix` (as strings: `ds` lists `ds`, `ds/0` and
    /// `ds2`), sorted. For removing a dataset.
    fn list(&self, prefix: &str) -> Result<Vec<String>>;

    /// Removes what puts that did not finish left below the key prefix `prefix` (which
    /// ends in `/`): a killed writer's temporary files in a directory store. Objects are
    /// never touched. Returns how many were removed; by default none (an S3 put that
    /// did not finish leaves nothing).
    fn remove_unfinished(&self, _prefix: &str) -> Result<u64> {
        Ok(0)
    }

    /// The objects whose keys start with `prefix`, each with its size and its version
    /// (an ETag that changes with every change of its content, as S3's hashes it), where
    /// the store tells versions: what a cache of its objects keys them by. `None` for a
    /// store that does not (memory, directories: local, nothing to cache).
    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<ObjectVersion>>> {
        let _ = prefix;
        Ok(None)
    }

    /// Many gets as [`ObjectStorage::get_many`], each with the version of the object it
    /// read; a get with `if_match` reads only that version (S3's `If-Match`): an object
    /// that no longer has it is an error of kind
    /// [`RemoteKind::Changed`](crate::error::RemoteKind::Changed). Only stores that
    /// tell versions ([`ObjectStorage::list_versions`]) serve it.
    fn get_versioned(&self, requests: &[VersionedGet]) -> Result<Vec<(Vec<u8>, String)>> {
        let _ = requests;
        Err(Error::Unsupported(format!(
            "{}: this store does not tell the versions of its objects",
            self.name()
        )))
    }

    /// What the store was asked to read, as [`crate::IoMetrics`] counts it: each
    /// get is one request of one range, `bytes_read` the bytes returned. Puts, sizes,
    /// deletes and listings are not counted.
    fn metrics(&self) -> IoMetricsSnapshot;
}

/// An object as a listing of [`ObjectStorage::list_versions`] tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion {
    /// The object's key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its version: an ETag that changes with its content.
    pub etag: String,
}

/// One get of [`ObjectStorage::get_versioned`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedGet {
    /// The object's key.
    pub key: String,
    /// The bytes wanted (`None`: all).
    pub range: Option<ByteRange>,
    /// The version the object must still have, if any.
    pub if_match: Option<String>,
}

/// `Ok` if `key` is a valid object key (see the module documentation), else an
/// [`Error::InvalidArgument`] naming it and what is wrong.
pub fn validate_key(key: &str) -> Result<()> {
    let problem = if key.is_empty() {
        Some("it is empty")
    } else if key.starts_with('/') {
        Some("it starts with '/' (keys are relative to the store)")
    } else if key.ends_with('/') {
        Some("it ends with '/'")
    } else if key.split('/').any(str::is_empty) {
        Some("it has an empty segment ('//')")
    } else if key.split('/').any(|s| s == "." || s == "..") {
        Some("it has a '.' or '..' segment")
    } else if key.chars().any(|c| c.is_ascii_control()) {
        Some("it holds a control character")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(Error::InvalidArgument(format!(
            "{key:?} is not a valid object key: {problem}"
        ))),
        None => Ok(()),
    }
}

/// The error of a `range` of `object` (its name) that goes past its end (`size`).
fn past_the_end(object: &str, size: u64, range: ByteRange) -> Error {
    Error::Truncated {
        what: format!("object {object} ({size} bytes)"),
        offset: range.offset,
        needed: range.len,
        available: size.saturating_sub(range.offset),
    }
}

/// The `range` of `data` (all of it for `None`), or [`past_the_end`] of `object`.
fn slice_of<'a>(data: &'a [u8], range: Option<ByteRange>, object: &str) -> Result<&'a [u8]> {
    let Some(range) = range else {
        return Ok(data);
    };
    let size = data.len() as u64;
    match range.offset.checked_add(range.len) {
        // Within `data`, whose length is a usize: neither bound truncates.
        #[allow(clippy::cast_possible_truncation)]
        Some(end) if end <= size => Ok(&data[range.offset as usize..end as usize]),
        _ => Err(past_the_end(object, size, range)),
    }
}

/// The error of a missing object (memory, directory).
fn no_such_object(object: &str) -> Error {
    Error::NotFound(format!("no object {object}"))
}

#[cfg(test)]
mod tests;
