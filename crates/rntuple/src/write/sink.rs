//! Where the writer's payloads go: the [`BlobSink`] trait, with memory and ROOT files
//! (their RBlob keys) as sinks, and envelopes packed and stored into a sink.

use super::options::WriteOptions;
use crate::container::{FileOutput, FileWriter, StreamerInfo};
use crate::error::Result;
use crate::format::{pack_envelope, Anchor, EnvelopeLink, EnvelopeType, Locator};

/// Where the writer puts its payloads: a ROOT file's RBlob keys, or memory in tests.
pub trait BlobSink {
    /// Stores `payload` (split over several keys when longer than `max_key_size`) and
    /// returns the offset of its first byte, as locators record it.
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64>;

    /// Stores the concatenation of `parts` as [`BlobSink::write_blob`] does; a sink that
    /// can write them one after the other need not concatenate them.
    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        self.write_blob(&parts.concat(), max_key_size)
    }

    /// Stores each of `parts` and says where each lies, with its size: a file stores them
    /// as one blob ([`BlobSink::write_blob_parts`]: file ranges of it), an object store
    /// as one object each (object locators).
    fn write_located(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<Vec<Locator>> {
        let mut at = self.write_blob_parts(parts, max_key_size)?;
        Ok(parts
            .iter()
            .map(|part| {
                let locator = Locator::file(part.len() as u64, at);
                at += part.len() as u64;
                locator
            })
            .collect())
    }

    /// Whether a committed cluster group can be recovered from what this sink stored if
    /// the writer dies (a file: `rntuple recover` reads it; an object store: no, a dataset
    /// without its anchor is invisible). Without, checkpoints are not written: one page
    /// list at the end, as ROOT writes.
    fn recovers(&self) -> bool {
        true
    }

    /// Hands what was stored so far to the operating system (called after each page
    /// list, so that a committed cluster group survives the process being killed).
    fn checkpoint(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Memory as a sink: payloads appended to the bytes, offsets counted from the start (for
/// tests and in-memory RNTuples read back through a `MemorySource`).
impl BlobSink for Vec<u8> {
    fn write_blob(&mut self, payload: &[u8], _max_key_size: u64) -> Result<u64> {
        let at = self.len() as u64;
        self.extend_from_slice(payload);
        Ok(at)
    }
}

/// A writer may borrow its sink (the usual case: several RNTuples into one file, one
/// after the other) or own it.
impl<S: BlobSink + ?Sized> BlobSink for &mut S {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        (**self).write_blob(payload, max_key_size)
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        (**self).write_blob_parts(parts, max_key_size)
    }

    fn write_located(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<Vec<Locator>> {
        (**self).write_located(parts, max_key_size)
    }

    fn recovers(&self) -> bool {
        (**self).recovers()
    }

    fn checkpoint(&mut self) -> Result<()> {
        (**self).checkpoint()
    }
}

/// Where whole RNTuples go: a [`BlobSink`] that also stores each RNTuple's anchor, last (a
/// ROOT file: a key named after the RNTuple; an object store: ROOT's JSON anchor).
pub trait RNTupleOutput: BlobSink {
    /// Stores the anchor of the RNTuple `name` (the path of its key in a file), once its
    /// footer is written.
    fn write_rntuple_anchor(&mut self, name: &str, anchor: &Anchor) -> Result<()>;

    /// Describes the classes the RNTuples' streamer fields store, for an output that
    /// keeps their streamer infos beside the RNTuples as ROOT's writer does (a ROOT
    /// file's streamer info record). Others need not: an RNTuple's header carries them
    /// in its extra type information.
    fn describe_classes(&mut self, infos: &[StreamerInfo]) {
        let _ = infos;
    }
}

impl<W: FileOutput> RNTupleOutput for FileWriter<W> {
    fn write_rntuple_anchor(&mut self, name: &str, anchor: &Anchor) -> Result<()> {
        self.write_anchor(name, &anchor.to_object())
    }

    fn describe_classes(&mut self, infos: &[StreamerInfo]) {
        FileWriter::describe_classes(self, infos);
    }
}

impl<O: RNTupleOutput + ?Sized> RNTupleOutput for &mut O {
    fn write_rntuple_anchor(&mut self, name: &str, anchor: &Anchor) -> Result<()> {
        (**self).write_rntuple_anchor(name, anchor)
    }

    fn describe_classes(&mut self, infos: &[StreamerInfo]) {
        (**self).describe_classes(infos);
    }
}

/// A ROOT file as a sink: payloads become RBlob keys.
impl<W: FileOutput> BlobSink for FileWriter<W> {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        FileWriter::write_blob(self, payload, max_key_size)
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        FileWriter::write_blob_parts(self, parts, max_key_size)
    }

    fn checkpoint(&mut self) -> Result<()> {
        FileWriter::checkpoint(self)
    }
}

/// Packs an envelope and stores it: its link, and its checksum.
pub(crate) fn write_envelope<S: BlobSink>(
    sink: &mut S,
    kind: EnvelopeType,
    payload: &[u8],
    options: &WriteOptions,
) -> Result<(EnvelopeLink, u64)> {
    let packed = pack_envelope(kind, payload, options.compression())?;
    let locator = sink
        .write_located(&[&packed.stored], options.max_key_size())?
        .pop()
        .ok_or_else(|| {
            crate::error::Error::InvalidArgument("the sink stored no blob for an envelope".into())
        })?;
    let link = EnvelopeLink {
        length: packed.length,
        locator,
    };
    Ok((link, packed.checksum))
}
