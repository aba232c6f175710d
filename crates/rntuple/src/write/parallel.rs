//! Several threads filling one RNTuple, as ROOT's `RNTupleParallelWriter`: each thread
//! fills through a [`FillContext`] of its own, which buffers, cuts and seals its pages
//! (compression on the thread pool, outside any lock) and sizes its own clusters. Only
//! writing sealed bytes into the shared file and recording a finished cluster take the
//! writer's lock, so the clusters of different contexts interleave in the order they
//! are finished, while the entries of one context keep their order.

use super::cluster::ClusterBook;
use super::fill::{FillTarget, Filler};
use super::options::WriteOptions;
use super::sink::BlobSink;
use crate::container::{FileOutput, FileWriter};
use crate::error::{Error, Result};
use crate::format::{PageInfo, SchemaDescription};
use crate::io::AtomicFile;
use crate::schema::Descriptor;
use arrow_array::RecordBatch;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// What the fill contexts share: the file and the clusters committed into it.
struct Committed<W: FileOutput> {
    file: FileWriter<W>,
    book: ClusterBook,
    /// Why the RNTuple cannot be completed, once something went wrong that leaves the
    /// file or the clusters in doubt (a failed write, a context that failed to commit its
    /// last cluster, a filling thread that panicked).
    failure: Option<String>,
}

type Shared<W> = Arc<Mutex<Committed<W>>>;

/// Locks the shared state, unless the write failed already.
fn lock<W: FileOutput>(shared: &Shared<W>) -> Result<MutexGuard<'_, Committed<W>>> {
    let guard = shared.lock().map_err(|_| {
        Error::InvalidArgument("the parallel write failed: a filling thread panicked".into())
    })?;
    match &guard.failure {
        Some(why) => Err(Error::InvalidArgument(format!(
            "the parallel write failed before: {why}"
        ))),
        None => Ok(guard),
    }
}

/// Runs `f` on the shared state; an error marks the write as failed (the file, or the
/// clusters recorded, are in doubt), so that it cannot be completed.
fn with_shared<W: FileOutput, T>(
    shared: &Shared<W>,
    f: impl FnOnce(&mut Committed<W>) -> Result<T>,
) -> Result<T> {
    let mut guard = lock(shared)?;
    let result = f(&mut guard);
    if let Err(e) = &result {
        guard.failure = Some(e.to_string());
    }
    result
}

/// One fill context's way into the shared file: pages written under the lock, and its
/// clusters recorded under it.
struct ContextTarget<W: FileOutput> {
    shared: Shared<W>,
}

impl<W: FileOutput> BlobSink for ContextTarget<W> {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        with_shared(&self.shared, |c| c.file.write_blob(payload, max_key_size))
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        with_shared(&self.shared, |c| {
            c.file.write_blob_parts(parts, max_key_size)
        })
    }

    fn checkpoint(&mut self) -> Result<()> {
        with_shared(&self.shared, |c| c.file.checkpoint())
    }
}

impl<W: FileOutput> FillTarget for ContextTarget<W> {
    fn commit_cluster(
        &mut self,
        n_entries: u64,
        pages: Vec<Vec<PageInfo>>,
        options: &WriteOptions,
    ) -> Result<()> {
        with_shared(&self.shared, |c| {
            c.book
                .commit_cluster(&mut c.file, n_entries, pages, options)
        })
    }
}

/// Writes one RNTuple into a ROOT file from several threads, as ROOT's
/// `RNTupleParallelWriter`: every thread fills through a [`FillContext`] of its own
/// ([`ParallelWriter::fill_context`]); clusters are committed in the order the contexts
/// finish them. [`ParallelWriter::finish`] (once every context is finished or dropped)
/// writes the page lists, the footer and the anchor and completes the file; dropping the
/// writer instead abandons the file (an [`AtomicFile`] leaves nothing at its path).
///
/// ```
/// use arrow_array::{Int32Array, RecordBatch};
/// use arrow_schema::{DataType, Field, Schema};
/// use rntuple::compression::CompressionSettings;
/// use rntuple::container::FileWriter;
/// use rntuple::schema::{ColumnDefaults, SchemaBuilder};
/// use rntuple::write::{ParallelWriter, WriteOptions};
/// use std::sync::Arc;
///
/// let mut schema = SchemaBuilder::new(ColumnDefaults { compressed: true });
/// schema.add_cpp_field("x", "std::int32_t")?;
/// let file = FileWriter::new(std::io::Cursor::new(Vec::new()), "par.root",
///                            CompressionSettings::DEFAULT_RNTUPLE)?;
/// let writer = ParallelWriter::new(file, "Events", schema.finish(), WriteOptions::default())?;
/// let arrow_schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
/// std::thread::scope(|s| -> rntuple::Result<()> {
///     let jobs: Vec<_> = (0..2)
///         .map(|t| {
///             let mut context = writer.fill_context()?;
///             let arrow_schema = arrow_schema.clone();
///             Ok(s.spawn(move || -> rntuple::Result<()> {
///                 let x = Int32Array::from_iter_values(t * 1000..t * 1000 + 1000);
///                 context.write_batch(&RecordBatch::try_new(arrow_schema, vec![Arc::new(x)])?)?;
///                 context.finish()
///             }))
///         })
///         .collect::<rntuple::Result<_>>()?;
///     for job in jobs {
///         job.join().expect("a filling thread panicked")?;
///     }
///     Ok(())
/// })?;
/// assert_eq!(writer.num_entries()?, 2000);
/// let bytes = writer.finish()?.into_inner();
/// assert!(bytes.starts_with(b"root"));
/// # Ok::<(), rntuple::Error>(())
/// ```
pub struct ParallelWriter<W: FileOutput = AtomicFile> {
    /// `None` once finished.
    shared: Option<Shared<W>>,
    name: String,
    descriptor: Descriptor,
    options: WriteOptions,
}

impl ParallelWriter<AtomicFile> {
    /// Starts the ROOT file at `path` (replacing an existing file only once finished,
    /// see [`FileWriter::create`]) with the RNTuple `name`, as ROOT's
    /// `RNTupleParallelWriter::Recreate`.
    pub fn recreate(
        path: &Path,
        name: &str,
        schema: SchemaDescription,
        options: WriteOptions,
    ) -> Result<Self> {
        let file = FileWriter::create(path, options.compression())?;
        ParallelWriter::new(file, name, schema, options)
    }
}

impl<W: FileOutput> ParallelWriter<W> {
    /// Starts the RNTuple `name` with `schema` in `file` (writes its header).
    pub fn new(
        mut file: FileWriter<W>,
        name: &str,
        schema: SchemaDescription,
        options: WriteOptions,
    ) -> Result<Self> {
        // The checks every context makes (a field that cannot be written, a page buffer
        // budget too small) are made once here, before anything is written.
        let (_, filler, book) = Filler::start(&mut file, name, schema, &options)?;
        let descriptor = filler.descriptor().clone();
        Ok(ParallelWriter {
            shared: Some(Arc::new(Mutex::new(Committed {
                file,
                book,
                failure: None,
            }))),
            name: name.to_string(),
            descriptor,
            options,
        })
    }

    /// The schema as a descriptor (fields and columns, no clusters).
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The shared state (there until the writer is finished, which consumes it).
    fn shared(&self) -> Result<&Shared<W>> {
        self.shared
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("the parallel writer is finished".into()))
    }

    /// A new fill context, to fill entries from one thread (it is `Send`; make one per
    /// thread).
    pub fn fill_context(&self) -> Result<FillContext<W>> {
        Ok(FillContext {
            filler: Filler::new(self.descriptor.clone(), self.options.clone())?,
            target: ContextTarget {
                shared: Arc::clone(self.shared()?),
            },
            finished: false,
        })
    }

    /// Entries in the clusters committed so far (by every context).
    pub fn num_entries(&self) -> Result<u64> {
        Ok(lock(self.shared()?)?.book.num_entries())
    }

    /// Commits the last cluster group, writes the footer and the anchor, and completes
    /// the file (an [`AtomicFile`] is renamed over its destination); returns the file's
    /// output. Every fill context must be finished or dropped before; an error if one
    /// is still alive, or if writing failed in one (the file is then abandoned).
    pub fn finish(mut self) -> Result<W> {
        let shared = self
            .shared
            .take()
            .ok_or_else(|| Error::InvalidArgument("the parallel writer is finished".into()))?;
        let shared = Arc::try_unwrap(shared).map_err(|shared| {
            let open = Arc::strong_count(&shared) - 1;
            let why = format!(
                "{open} fill context(s) of RNTuple \"{}\" are still open: finish or drop them before the writer",
                self.name
            );
            if let Ok(mut guard) = shared.lock() {
                guard.failure.get_or_insert_with(|| why.clone());
            }
            Error::InvalidArgument(why)
        })?;
        let Committed {
            mut file,
            mut book,
            failure,
        } = shared.into_inner().map_err(|_| {
            Error::InvalidArgument("the parallel write failed: a filling thread panicked".into())
        })?;
        if let Some(why) = failure {
            return Err(Error::InvalidArgument(format!(
                "the parallel write failed: {why}"
            )));
        }
        book.commit_cluster_group(&mut file, &self.options)?;
        let anchor = book.finish(&mut file, SchemaDescription::default(), &self.options)?;
        file.write_anchor(&self.name, &anchor.to_object())?;
        file.finish_into_inner()
    }
}

/// A writer dropped unfinished abandons the file: the contexts still open fail from
/// then on, and the file goes with the last of them.
impl<W: FileOutput> Drop for ParallelWriter<W> {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            if let Ok(mut guard) = shared.lock() {
                guard
                    .failure
                    .get_or_insert_with(|| "the parallel writer was dropped unfinished".into());
            }
        }
    }
}

/// One thread's way of filling a [`ParallelWriter`]'s RNTuple: its own column buffers,
/// page plan, sealing and cluster size. A cluster is committed into the shared file when
/// it reaches its size (as [`super::RNTupleWriter`] does), on
/// [`FillContext::flush_cluster`], and at [`FillContext::finish`]. Dropping a context
/// commits its open cluster too, as ROOT's does; a failure then (or a drop while its
/// thread panics) makes [`ParallelWriter::finish`] fail.
pub struct FillContext<W: FileOutput = AtomicFile> {
    filler: Filler,
    target: ContextTarget<W>,
    /// Whether [`FillContext::finish`] ran (nothing is left to commit on drop).
    finished: bool,
}

impl<W: FileOutput> FillContext<W> {
    /// The schema as a descriptor (fields and columns, no clusters).
    pub fn descriptor(&self) -> &Descriptor {
        self.filler.descriptor()
    }

    /// Entries of this context not yet committed (its open cluster).
    pub fn open_entries(&self) -> u64 {
        self.filler.open_entries()
    }

    /// Appends the entries of `batch`, whose columns are the top-level data fields in
    /// schema order (by name), as [`super::RNTupleWriter::write_batch`]; a batch that
    /// does not fit the schema is an [`Error::InvalidArgument`]. Clusters are committed
    /// into the shared file as they reach their size.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.filler.write_batch(&mut self.target, batch)
    }

    /// Commits the open cluster now (ROOT's `FlushCluster`): seals its last pages,
    /// writes them and records the cluster after those committed so far.
    pub fn flush_cluster(&mut self) -> Result<()> {
        self.filler.commit_cluster(&mut self.target)
    }

    /// Ends the context without committing its open cluster: its entries since the last
    /// committed cluster are not written.
    pub fn abandon(mut self) {
        self.finished = true;
    }

    /// Commits the open cluster and ends the context.
    pub fn finish(mut self) -> Result<()> {
        self.finished = true;
        let result = self.flush_cluster();
        if let Err(e) = &result {
            // The context's entries are lost: the RNTuple cannot be completed.
            if let Ok(mut guard) = self.target.shared.lock() {
                guard.failure.get_or_insert_with(|| e.to_string());
            }
        }
        result
    }
}

impl<W: FileOutput> Drop for FillContext<W> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let failure = if std::thread::panicking() {
            Some("a filling thread panicked".to_string())
        } else {
            self.flush_cluster().err().map(|e| e.to_string())
        };
        if let (Some(why), Ok(mut guard)) = (failure, self.target.shared.lock()) {
            guard.failure.get_or_insert(why);
        }
    }
}
