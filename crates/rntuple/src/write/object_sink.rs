//! Writing an RNTuple as objects in ROOT's S3 layout ("Mode B", `RPageSinkS3`): every
//! blob the writer stores is an object of its own, numbered in the order written (the
//! header first, pages and page lists as committed, the footer last), with object
//! locators (type 0x02) in the page lists and footer; the JSON anchor is written at the
//! dataset's key once every other object is stored, so a dataset without an anchor (a
//! writer that died or failed) is incomplete and invisible.
//!
//! **Replacing a dataset** is as atomic as renaming a file over another: the new
//! dataset's objects take ids no object under the prefix has (after the highest there:
//! the old dataset's, and any a killed writer left), so the old dataset stays whole
//! while the new one is written beside it; the anchor, which names the header and
//! footer objects by id (and through them every page list and page), is switched last
//! in one put; only then are the old objects removed. A writer killed at any moment
//! leaves the old dataset readable, or, once its anchor is stored, the new one. Ids
//! only grow while the prefix holds objects, so an id never names two different objects
//! a reader could mix. (Apache Iceberg and Delta Lake replace tables the same way: new
//! objects, one pointer switched, unreferenced objects removed after.)
//!
//! Objects go out many at a time ([`ObjectUploader`]): the writer goes on sealing while
//! they are stored. A write that fails, or a sink dropped before [`ObjectSink::finish`],
//! removes the objects it stored, and nothing else.

use super::sink::{BlobSink, RNTupleOutput};
use crate::error::{Error, Result};
use crate::format::{object_address, Anchor, Locator, S3Anchor, OBJECT_ADDRESS_BITS};
use crate::io::objects::{ObjectStorage, ObjectUploader};
use crate::io::ObjectDataset;

/// What a finished object write stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectWriteSummary {
    /// Objects stored, the anchor included.
    pub objects: u64,
    /// Bytes stored, the anchor included.
    pub bytes: u64,
    /// The id of the first object stored (the header): 0 for a new dataset, after the
    /// highest id there was for a replacement.
    pub first_object: u64,
    /// Objects removed once the anchor was stored: the replaced dataset's, and any that
    /// writers which did not finish had left.
    pub removed: u64,
    /// Why some of those could not be removed (the write itself succeeded; `rntuple
    /// verify --repair URL` removes them later), if so.
    pub not_removed: Option<String>,
}

/// Object ids a layout's reader addresses ([`object_address`]): 2^28.
const OBJECT_IDS: u64 = 1 << (64 - OBJECT_ADDRESS_BITS);

/// Hands out object ids that no object under the prefix had when the write began:
/// after the highest, and once those run out (2^28), the free ones from 0.
#[derive(Debug)]
struct ObjectIds {
    /// The ids there were, sorted.
    taken: Vec<u64>,
    first: u64,
    next: u64,
    wrapped: bool,
}

impl ObjectIds {
    fn new(taken: Vec<u64>) -> ObjectIds {
        let first = taken.last().map_or(0, |&highest| highest.saturating_add(1));
        ObjectIds {
            taken,
            first,
            next: first,
            wrapped: false,
        }
    }

    fn next(&mut self) -> Option<u64> {
        loop {
            if self.next >= OBJECT_IDS {
                if self.wrapped {
                    return None;
                }
                self.wrapped = true;
                self.next = 0;
            }
            if self.wrapped && self.next >= self.first {
                return None;
            }
            let n = self.next;
            self.next += 1;
            if self.taken.binary_search(&n).is_err() {
                return Some(n);
            }
        }
    }
}

/// A [`BlobSink`] storing each blob as an object of an [`ObjectDataset`].
pub struct ObjectSink {
    dataset: ObjectDataset,
    uploader: ObjectUploader,
    ids: ObjectIds,
    /// The ids stored, in order.
    stored: Vec<u64>,
    bytes: u64,
    finished: bool,
    summary: Option<ObjectWriteSummary>,
}

/// The object-store dataset `target` (`URL[:NAME]`) names, opened for writing with
/// `settings` (else the process's), and the name of the RNTuple to write there: the
/// URL's `NAME`, else `name` (both given and different is refused). The URL is checked
/// strictly ([`crate::io::check_layout_url`]) and an input that is the output refused,
/// before anything is created.
pub fn open_target(
    target: &str,
    name: Option<&str>,
    inputs: &[&str],
    settings: Option<&crate::io::SourceOptions>,
) -> Result<(ObjectDataset, Option<String>)> {
    let (url, target_name) = crate::io::split_target(target);
    crate::io::check_layout_url(&url)?;
    let name = match (target_name, name) {
        (Some(a), Some(b)) if a != b => {
            return Err(Error::InvalidArgument(format!(
                "{target} names the RNTuple \"{a}\", the options \"{b}\": give one"
            )))
        }
        (a, b) => a.or(b.map(str::to_string)),
    };
    if let Some(input) = inputs.iter().find(|i| crate::io::split_target(i).0 == url) {
        return Err(Error::InvalidArgument(format!(
            "{input} is both an input and the output"
        )));
    }
    let settings = match settings {
        Some(settings) => settings.clone(),
        None => crate::io::SourceOptions::current()?,
    };
    Ok((ObjectDataset::open(&url, &settings, true)?, name))
}

impl ObjectWriteSummary {
    /// The warning for a write to the dataset at `url` that succeeded but left objects
    /// of the dataset it replaced (`None` when it left none), naming the command that
    /// removes them.
    pub fn left_objects_warning(&self, url: &str) -> Option<String> {
        self.not_removed.as_ref().map(|why| {
            format!(
                "{url} is written, but objects of the dataset it replaced are left ({why}); \
                 `rntuple verify --repair {url}` removes them"
            )
        })
    }
}

impl ObjectSink {
    /// Starts writing `dataset`. An existing dataset (its anchor is there) is refused
    /// unless `replace`. Nothing there is touched before the new anchor is stored: the
    /// new objects take ids after every id under the prefix (module documentation).
    pub fn create(dataset: ObjectDataset, replace: bool) -> Result<ObjectSink> {
        let store = dataset.store().clone();
        if !replace && store.size_of(dataset.anchor_key())?.is_some() {
            return Err(Error::OutputExists {
                path: dataset.url().to_string(),
            });
        }
        let taken = dataset.object_ids()?;
        Ok(ObjectSink {
            uploader: ObjectUploader::new(store),
            dataset,
            ids: ObjectIds::new(taken),
            stored: Vec::new(),
            bytes: 0,
            finished: false,
            summary: None,
        })
    }

    /// The dataset being written.
    pub fn dataset(&self) -> &ObjectDataset {
        &self.dataset
    }

    /// Stores `bytes` as the next object; returns its id.
    fn store(&mut self, bytes: Vec<u8>) -> Result<u64> {
        let n = self.ids.next().ok_or_else(|| {
            Error::Unsupported(format!(
                "{}: no object id left (a reader addresses ids below 2^28, and the others \
                 are taken by objects under the prefix)",
                self.dataset.url()
            ))
        })?;
        self.bytes += bytes.len() as u64;
        self.uploader.put(self.dataset.object_key(n), bytes)?;
        self.stored.push(n);
        Ok(n)
    }

    /// Waits for every object, then writes the JSON anchor of `anchor` (the writer's:
    /// its header and footer links are object addresses) at the dataset's key, then
    /// removes the objects there were before. On a failure before the anchor is
    /// stored, the objects this write stored are removed and the store is as it was.
    pub fn finish(mut self, anchor: &Anchor) -> Result<ObjectWriteSummary> {
        self.write_rntuple_anchor("", anchor)?;
        self.summary()
    }

    /// What the write stored, once its anchor is written.
    pub fn summary(&self) -> Result<ObjectWriteSummary> {
        self.summary.clone().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: the write has no anchor yet",
                self.dataset.url()
            ))
        })
    }

    /// Checks, before the anchor names them, that every object this write stored is
    /// still there: `rntuple verify --repair` (or another writer) running meanwhile
    /// takes them for leftovers of a writer that did not finish.
    fn check_stored(&self) -> Result<()> {
        let present = self.dataset.object_ids()?;
        let gone = self
            .stored
            .iter()
            .filter(|n| present.binary_search(n).is_err())
            .count();
        if gone == 0 {
            return Ok(());
        }
        Err(Error::Io(crate::io::Error::Write {
            what: format!("{} (its anchor)", self.dataset.url()),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{gone} of the {} objects this write stored were removed before its \
                     anchor was written (by `rntuple verify --repair` or another writer of \
                     the dataset, run meanwhile?); nothing was replaced",
                    self.stored.len()
                ),
            ),
        }))
    }

    fn write_anchor(&mut self, anchor: &Anchor) -> Result<ObjectWriteSummary> {
        self.uploader.finish()?;
        self.check_stored()?;
        let split = |address: u64| {
            (
                address >> OBJECT_ADDRESS_BITS,
                address & ((1 << OBJECT_ADDRESS_BITS) - 1),
            )
        };
        let (header_obj_id, header_offset) = split(anchor.seek_header);
        let (footer_obj_id, footer_offset) = split(anchor.seek_footer);
        let json = S3Anchor {
            version_epoch: u64::from(anchor.version_epoch),
            version_major: u64::from(anchor.version_major),
            version_minor: u64::from(anchor.version_minor),
            version_patch: u64::from(anchor.version_patch),
            header_obj_id,
            header_offset,
            nbytes_header: anchor.nbytes_header,
            len_header: anchor.len_header,
            footer_obj_id,
            footer_offset,
            nbytes_footer: anchor.nbytes_footer,
            len_footer: anchor.len_footer,
            ..S3Anchor::default()
        }
        .to_json();
        let bytes = json.len() as u64;
        let store = self.dataset.store().clone();
        store.put(self.dataset.anchor_key(), json.clone().into_bytes())?;
        // The new dataset is in place: the objects there were (the replaced dataset's,
        // leftovers) are referenced by nothing. Unless another writer's anchor replaced
        // this one meanwhile (its objects are not ours to judge).
        let (removed, not_removed) = match store.get(self.dataset.anchor_key(), None) {
            Ok(now) if now == json.as_bytes() => {
                let keys: Vec<String> = self
                    .ids
                    .taken
                    .iter()
                    .map(|&n| self.dataset.object_key(n))
                    .collect();
                // And what puts of killed writers left (a directory store's files).
                let prefix = format!("{}/", self.dataset.anchor_key());
                match delete_all(store.as_ref(), &keys)
                    .and_then(|()| store.remove_unfinished(&prefix))
                {
                    Ok(_) => (keys.len() as u64, None),
                    Err(e) => (0, Some(e.to_string())),
                }
            }
            Ok(_) => (
                0,
                Some("another writer replaced the anchor meanwhile".to_string()),
            ),
            Err(e) => (0, Some(e.to_string())),
        };
        Ok(ObjectWriteSummary {
            objects: self.stored.len() as u64 + 1,
            bytes: self.bytes + bytes,
            first_object: self.stored.first().copied().unwrap_or(self.ids.first),
            removed,
            not_removed,
        })
    }

    /// Removes every object this sink started to store (best effort: the write failed
    /// already, and without an anchor they are invisible anyway).
    fn remove_objects(&mut self) {
        let _ = self.uploader.finish();
        let _ = delete_all(
            self.dataset.store().as_ref(),
            &self.uploader.keys_attempted(),
        );
    }
}

/// Objects deleted at once (a request and a round trip each).
const DELETES_IN_FLIGHT: usize = 16;

/// Deletes `keys`, [`DELETES_IN_FLIGHT`] at a time; the first error (in key order).
pub(crate) fn delete_all(store: &dyn ObjectStorage, keys: &[String]) -> crate::io::Result<()> {
    let chunk = keys.len().div_ceil(DELETES_IN_FLIGHT).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = keys
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().try_for_each(|k| store.delete(k))))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(crate::io::Error::InvalidArgument(
                        "a thread deleting objects panicked".into(),
                    ))
                })
            })
            .collect::<crate::io::Result<Vec<()>>>()
            .map(|_| ())
    })
}

impl Drop for ObjectSink {
    fn drop(&mut self) {
        if !self.finished {
            self.remove_objects();
        }
    }
}

impl RNTupleOutput for ObjectSink {
    /// Writes the dataset's JSON anchor ([`ObjectSink::finish`]); a dataset holds one
    /// RNTuple, whose name is its header's.
    fn write_rntuple_anchor(&mut self, _name: &str, anchor: &Anchor) -> Result<()> {
        if self.finished {
            return Err(Error::InvalidArgument(format!(
                "{}: a dataset of objects holds one RNTuple, whose anchor is written",
                self.dataset.url()
            )));
        }
        let result = self.write_anchor(anchor);
        if result.is_err() {
            self.remove_objects();
        }
        self.finished = true;
        self.summary = Some(result?);
        Ok(())
    }
}

impl BlobSink for ObjectSink {
    fn write_blob(&mut self, payload: &[u8], _max_key_size: u64) -> Result<u64> {
        let n = self.store(payload.to_vec())?;
        // Ids are below OBJECT_IDS: each has an address.
        Ok(object_address(n).unwrap_or(u64::MAX))
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        self.write_blob(&parts.concat(), max_key_size)
    }

    /// A dataset without its anchor is invisible: no checkpoints, one page list at the
    /// end (as ROOT's S3 sink).
    fn recovers(&self) -> bool {
        false
    }

    fn write_located(&mut self, parts: &[&[u8]], _max_key_size: u64) -> Result<Vec<Locator>> {
        parts
            .iter()
            .map(|part| {
                let n = self.store(part.to_vec())?;
                Ok(Locator::object(part.len() as u64, n))
            })
            .collect()
    }
}
