//! Several RNTuples written into one ROOT file, filled in turns (entries of one, then of
//! another, and so on): the file is shared by their writers, and closing it finishes
//! every RNTuple and writes their anchors in the order they were created.

use super::options::WriteOptions;
use super::sink::BlobSink;
use super::writer::RNTupleWriter;
use crate::container::{FileOutput, FileWriter};
use crate::error::{Error, Result};
use crate::format::SchemaDescription;
use std::sync::{Arc, Mutex, MutexGuard};

/// The file, shared by the sinks of the RNTuples written into it.
type Shared<W> = Arc<Mutex<FileWriter<W>>>;

fn lock<W: FileOutput>(file: &Shared<W>) -> Result<MutexGuard<'_, FileWriter<W>>> {
    file.lock().map_err(|_| {
        Error::InvalidArgument("the file writer failed while writing (a thread panicked)".into())
    })
}

/// One RNTuple's sink into a [`SharedFile`]: its payloads go to the shared file, after
/// those of the other RNTuples written so far.
pub struct SharedSink<W: FileOutput> {
    file: Shared<W>,
}

impl<W: FileOutput> BlobSink for SharedSink<W> {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        lock(&self.file)?.write_blob(payload, max_key_size)
    }

    // The pages of a run go to the file one after the other, not concatenated first.
    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        lock(&self.file)?.write_blob_parts(parts, max_key_size)
    }

    fn checkpoint(&mut self) -> Result<()> {
        lock(&self.file)?.checkpoint()
    }
}

/// A ROOT file that several RNTuples are written into, filled in turns: it owns the file
/// and the RNTuples' writers. [`SharedFile::close`] finishes every RNTuple (last
/// cluster, page lists, footer) and writes the anchors in creation order; dropping it
/// instead abandons the file (an [`crate::io::AtomicFile`] leaves nothing at its path).
///
/// ```
/// use rntuple::compression::CompressionSettings;
/// use rntuple::container::FileWriter;
/// use rntuple::schema::{ColumnDefaults, SchemaBuilder};
/// use rntuple::write::{SharedFile, WriteOptions};
///
/// let file = FileWriter::new(std::io::Cursor::new(Vec::new()), "two.root",
///                            CompressionSettings::DEFAULT_RNTUPLE)?;
/// let mut shared = SharedFile::new(file);
/// for name in ["Events", "Runs"] {
///     let mut schema = SchemaBuilder::new(ColumnDefaults { compressed: true });
///     schema.add_cpp_field("x", "std::int32_t")?;
///     shared.create(name, schema.finish(), WriteOptions::default())?;
/// }
/// // ... fill them in turns through shared.writer_mut("Events"), ("Runs") ...
/// let bytes = shared.close()?.into_inner();
/// assert!(bytes.starts_with(b"root"));
/// # Ok::<(), rntuple::Error>(())
/// ```
pub struct SharedFile<W: FileOutput> {
    file: Shared<W>,
    /// The RNTuples' writers, in creation order.
    writers: Vec<RNTupleWriter<SharedSink<W>>>,
}

impl<W: FileOutput> SharedFile<W> {
    /// Shares `file` among the RNTuples to be written into it.
    pub fn new(file: FileWriter<W>) -> Self {
        SharedFile {
            file: Arc::new(Mutex::new(file)),
            writers: Vec::new(),
        }
    }

    /// Starts the RNTuple `name` (writes its header) and returns its writer; an error if
    /// the file already has an RNTuple of that name.
    pub fn create(
        &mut self,
        name: &str,
        schema: SchemaDescription,
        options: WriteOptions,
    ) -> Result<&mut RNTupleWriter<SharedSink<W>>> {
        if self.writer(name).is_some() {
            return Err(Error::InvalidArgument(format!(
                "the file already has an RNTuple named \"{name}\""
            )));
        }
        let sink = SharedSink {
            file: Arc::clone(&self.file),
        };
        let writer = RNTupleWriter::new(sink, name, schema, options)?;
        self.writers.push(writer);
        self.writers
            .last_mut()
            .ok_or_else(|| Error::InvalidArgument(format!("RNTuple \"{name}\" was not kept")))
    }

    /// The writer of RNTuple `name`, if it was created.
    pub fn writer(&self, name: &str) -> Option<&RNTupleWriter<SharedSink<W>>> {
        self.writers.iter().find(|w| w.descriptor().name == name)
    }

    /// The writer of RNTuple `name`, to write more entries into it.
    pub fn writer_mut(&mut self, name: &str) -> Option<&mut RNTupleWriter<SharedSink<W>>> {
        self.writers
            .iter_mut()
            .find(|w| w.descriptor().name == name)
    }

    /// The names of the RNTuples, in creation order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.writers.iter().map(|w| w.descriptor().name.as_str())
    }

    /// Leaves RNTuple `name` out of the file (after an error filling it, say): no anchor
    /// is written for it, and its name can be used again. What it wrote stays in the file,
    /// unreferenced. False if there is no RNTuple of that name.
    pub fn discard(&mut self, name: &str) -> bool {
        let before = self.writers.len();
        self.writers.retain(|w| w.descriptor().name != name);
        self.writers.len() < before
    }

    /// Finishes every RNTuple in creation order, writes their anchors in that order, and
    /// completes the file (an [`crate::io::AtomicFile`] is renamed over its destination);
    /// returns the file's output. On an error, the file is abandoned.
    pub fn close(self) -> Result<W> {
        let mut anchors = Vec::with_capacity(self.writers.len());
        for writer in self.writers {
            let name = writer.descriptor().name.clone();
            anchors.push((name, writer.finish()?));
        }
        // Every sink went with its writer: the file is this one's alone.
        let file = Arc::try_unwrap(self.file)
            .map_err(|_| Error::InvalidArgument("the file is still being written".into()))?;
        let mut file = file.into_inner().map_err(|_| {
            Error::InvalidArgument(
                "the file writer failed while writing (a thread panicked)".into(),
            )
        })?;
        for (name, anchor) in anchors {
            file.write_anchor(&name, &anchor.to_object())?;
        }
        file.finish_into_inner()
    }
}
