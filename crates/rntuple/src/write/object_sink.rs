//! Writing an RNTuple as objects in ROOT's S3 layout ("Mode B", `RPageSinkS3`): every
//! blob the writer stores is an object of its own, numbered from 0 in the order written
//! (the header is 0, pages and page lists follow as committed, the footer is last), with
//! object locators (type 0x02) in the page lists and footer; the JSON anchor is written
//! at the dataset's key once every other object is stored, so a dataset without an
//! anchor (a writer that died or failed) is incomplete and invisible.
//!
//! Objects go out many at a time ([`ObjectUploader`]): the writer goes on sealing while
//! they are stored. A write that fails, or a sink dropped before [`ObjectSink::finish`],
//! removes the objects it stored.

use super::sink::{BlobSink, RNTupleOutput};
use crate::error::{Error, Result};
use crate::format::{object_address, Anchor, Locator, S3Anchor, OBJECT_ADDRESS_BITS};
use crate::io::objects::ObjectUploader;
use crate::io::ObjectDataset;

/// What a finished object write stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectWriteSummary {
    /// Objects stored, the anchor included.
    pub objects: u64,
    /// Bytes stored, the anchor included.
    pub bytes: u64,
}

/// A [`BlobSink`] storing each blob as an object of an [`ObjectDataset`].
pub struct ObjectSink {
    dataset: ObjectDataset,
    uploader: ObjectUploader,
    next_object: u64,
    bytes: u64,
    finished: bool,
    summary: Option<ObjectWriteSummary>,
}

impl ObjectSink {
    /// Starts writing `dataset`. An existing dataset (its anchor is there) is refused
    /// unless `replace`; replacing removes its anchor first (so no reader sees the old
    /// anchor with new objects), then its numbered objects.
    pub fn create(dataset: ObjectDataset, replace: bool) -> Result<ObjectSink> {
        let store = dataset.store().clone();
        if store.size_of(dataset.anchor_key())?.is_some() {
            if !replace {
                return Err(Error::OutputExists {
                    path: dataset.url().to_string(),
                });
            }
            store.delete(dataset.anchor_key())?;
        }
        // Objects of an earlier dataset here (complete or not) would be taken for ours.
        delete_all(store.as_ref(), &dataset.object_keys()?)?;
        Ok(ObjectSink {
            uploader: ObjectUploader::new(store),
            dataset,
            next_object: 0,
            bytes: 0,
            finished: false,
            summary: None,
        })
    }

    /// The dataset being written.
    pub fn dataset(&self) -> &ObjectDataset {
        &self.dataset
    }

    /// Stores `bytes` as the next object; returns its number.
    fn store(&mut self, bytes: Vec<u8>) -> Result<u64> {
        let n = self.next_object;
        if object_address(n).is_none() {
            return Err(Error::Unsupported(format!(
                "{}: more than 2^28 objects",
                self.dataset.url()
            )));
        }
        self.bytes += bytes.len() as u64;
        self.uploader.put(self.dataset.object_key(n), bytes)?;
        self.next_object += 1;
        Ok(n)
    }

    /// Waits for every object, then writes the JSON anchor of `anchor` (the writer's:
    /// its header and footer links are object addresses) at the dataset's key. On a
    /// failure the objects stored are removed and no anchor is left.
    pub fn finish(mut self, anchor: &Anchor) -> Result<ObjectWriteSummary> {
        self.write_rntuple_anchor("", anchor)?;
        self.summary()
    }

    /// What the write stored, once its anchor is written.
    pub fn summary(&self) -> Result<ObjectWriteSummary> {
        self.summary.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: the write has no anchor yet",
                self.dataset.url()
            ))
        })
    }

    fn write_anchor(&mut self, anchor: &Anchor) -> Result<ObjectWriteSummary> {
        self.uploader.finish()?;
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
        self.dataset
            .store()
            .put(self.dataset.anchor_key(), json.into_bytes())?;
        Ok(ObjectWriteSummary {
            objects: self.next_object + 1,
            bytes: self.bytes + bytes,
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
fn delete_all(store: &dyn crate::io::objects::ObjectStorage, keys: &[String]) -> Result<()> {
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
                    Err(Error::InvalidArgument(
                        "a thread deleting objects panicked".into(),
                    ))
                })
            })
            .collect::<Result<Vec<()>>>()
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
        // store() checked that the number has an address.
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
