//! `Reader`: an open RNTuple's metadata and reads, as Arrow record batches.

use crate::errors::to_py_err;
use crate::read_types::ReadTypesHandle;
use crate::{inspect, metadata};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{IntoPyArrow, ToPyArrow};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rntuple::read::{Projection, RNTupleReader, ReadTypes, RecordPaths, StepSize};
use rntuple::schema::FieldKind;
use rntuple::streamer_fields::StreamerObjects;
use rntuple::Error;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

/// An open RNTuple: metadata, and reading any selection of fields over any entry range
/// as Arrow record batches.
#[pyclass(module = "rntuple._core", frozen)]
pub(crate) struct Reader {
    pub(crate) reader: Arc<RNTupleReader>,
    /// The URL a dataset of objects was opened with (its source names the objects' base
    /// URL, which opens nothing): what `file_name` gives, so that the RNTuple can be
    /// opened again by it (chains, Dask partitions).
    origin: Option<String>,
}

/// The entry range `start..stop`, checked against the RNTuple's size.
fn entry_range(reader: &RNTupleReader, start: u64, stop: u64) -> PyResult<Range<u64>> {
    let n = reader.num_entries();
    if start > stop || stop > n {
        return Err(to_py_err(Error::InvalidArgument(format!(
            "entry range {start}..{stop} is outside 0..{n}"
        ))));
    }
    Ok(start..stop)
}

/// The step of an iteration: exactly one of `step_entries` and `step_bytes`.
fn step_size(step_entries: Option<u64>, step_bytes: Option<u64>) -> PyResult<StepSize> {
    match (step_entries, step_bytes) {
        (Some(n), None) => Ok(StepSize::Entries(n)),
        (None, Some(n)) => Ok(StepSize::Bytes(n)),
        _ => Err(to_py_err(Error::InvalidArgument(
            "give exactly one of step_entries and step_bytes".into(),
        ))),
    }
}

/// Reads the selected fields over a list of entry ranges, one record batch per range,
/// as the consumer asks for them (a lazy stream; from a remote source the pages of the
/// next ranges are fetched while the current one decodes; decoding ahead, the next batch
/// is decoded while the consumer uses the current one).
struct RangeStream {
    batches: Batches,
    schema: SchemaRef,
}

impl Iterator for RangeStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(
            self.batches
                .next()?
                .map_err(|e| ArrowError::ExternalError(Box::new(e))),
        )
    }
}

impl RecordBatchReader for RangeStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The record batches of a read over entry ranges, one per range, as a Python iterator
/// of `pyarrow.RecordBatch`: the GIL is released while it waits for a batch, and an error
/// is raised as its `rntuple.errors` class (a `pyarrow.RecordBatchReader` would make it an
/// `ArrowInvalid`).
#[pyclass(module = "rntuple._core", frozen)]
pub(crate) struct BatchIterator {
    /// `None` once exhausted, failed or closed. Locked only with the GIL released (a
    /// thread holding the GIL while it waits for the lock would keep the holder from
    /// getting the GIL back).
    batches: Mutex<Option<Batches>>,
}

impl BatchIterator {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Batches>> {
        self.batches.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl BatchIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let next = py.detach(|| {
            let mut slot = self.slot();
            let item = slot.as_mut()?.next();
            if !matches!(item, Some(Ok(_))) {
                // Exhausted or failed: nothing more is read.
                *slot = None;
            }
            item
        });
        match next {
            Some(Ok(batch)) => batch.to_pyarrow(py).map(Some),
            Some(Err(e)) => Err(to_py_err(e)),
            None => Ok(None),
        }
    }

    /// Stops reading: a thread decoding ahead is stopped (after the batch it is
    /// decoding, if any) and joined. Iterating afterwards yields nothing.
    fn close(&self, py: Python<'_>) {
        py.detach(|| drop(self.slot().take()));
    }
}

/// A selectable field path of an RNTuple (see [`Reader::field_paths`]).
#[pyclass(module = "rntuple._core", frozen, get_all)]
pub(crate) struct FieldPath {
    /// The path as users name it (`Jet.pt`).
    path: String,
    /// The field's C++ type.
    type_name: String,
    /// Whether the path runs through records only (read as a column of its own).
    direct: bool,
    /// The qualified name reads take (`Jet._0.pt`).
    qualified: String,
}

/// Record batches of a read, decoded when asked for or ahead.
type Batches = Box<dyn Iterator<Item = rntuple::Result<RecordBatch>> + Send>;

impl Reader {
    /// A reader of `reader`; `origin`: the URL a dataset of objects was opened with.
    pub(crate) fn new(reader: Arc<RNTupleReader>, origin: Option<String>) -> Self {
        Reader { reader, origin }
    }

    /// The batches of `projection` over each of `ranges` (checked), decoded ahead or not.
    fn range_batches(
        &self,
        projection: &Projection,
        ranges: Vec<(u64, u64)>,
        decode_ahead: bool,
    ) -> PyResult<Batches> {
        let ranges = ranges
            .into_iter()
            .map(|(a, b)| entry_range(&self.reader, a, b))
            .collect::<PyResult<Vec<_>>>()?;
        let batches = self
            .reader
            .read_projection_ranges(projection, ranges)
            .map_err(to_py_err)?;
        Ok(if decode_ahead {
            Box::new(batches.decode_ahead())
        } else {
            Box::new(batches)
        })
    }

    /// The projection Python reads: field paths (qualified names) through records stay
    /// members of their top-level record, as uproot and Awkward users expect.
    fn projection(
        &self,
        fields: Option<Vec<String>>,
        types: Option<&ReadTypesHandle>,
    ) -> PyResult<Projection> {
        let empty = ReadTypes::new();
        let types = types.map_or(&empty, |t| &t.types);
        self.reader
            .projection_as(fields.as_deref(), RecordPaths::Members, types)
            .map_err(to_py_err)
    }

    /// The projection Python reads values of: as [`Reader::projection`], streamer fields
    /// read as records by the file's streamer infos.
    fn read_projection(
        &self,
        fields: Option<Vec<String>>,
        types: Option<&ReadTypesHandle>,
    ) -> PyResult<Projection> {
        let projection = self.projection(fields, types)?;
        StreamerObjects::Records
            .project(self.reader.descriptor(), projection)
            .map_err(to_py_err)
    }
}

#[pymethods]
impl Reader {
    /// This RNTuple's metadata alone, kept after the file is closed: a reader that
    /// selects, plans and describes reads as this one does and reads no page (for the
    /// schemas of every file of a chain, and [`unify_field`](crate::read_types::unify_field)).
    fn detached(&self) -> Reader {
        Reader {
            reader: Arc::new(self.reader.detached()),
            origin: Some(self.file_name()),
        }
    }

    /// Number of entries.
    #[getter]
    fn num_entries(&self) -> u64 {
        self.reader.num_entries()
    }

    /// The RNTuple's path in its file.
    #[getter]
    fn path(&self) -> String {
        self.reader.path().to_string()
    }

    /// The file's name (a dataset of objects: the URL it was opened with).
    #[getter]
    pub(crate) fn file_name(&self) -> String {
        match &self.origin {
            Some(url) => url.clone(),
            None => self.reader.source().name().to_string(),
        }
    }

    /// Why fields were skipped (types this reader cannot decode).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        let warnings = &self.reader.descriptor().warnings;
        warnings
            .iter()
            .map(|w| rntuple::error::printable(w).into_owned())
            .collect()
    }

    /// How far planned reads fetch ahead, as the reader was opened: the bunch size
    /// (`None`: the source's) and the most bytes ahead.
    fn read_ahead(&self) -> (Option<u64>, u64) {
        let read_ahead = self.reader.read_ahead();
        (read_ahead.bunch_bytes, read_ahead.max_bytes)
    }

    /// What reading has cost so far: the source's requests, vectored requests, ranges,
    /// bytes read and time waiting, the page bytes the decoder used, the time the decoder
    /// waited for prefetched pages and the time spent in reads (seconds).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.reader.metrics();
        let d = PyDict::new(py);
        d.set_item("requests", m.io.requests)?;
        d.set_item("vector_requests", m.io.vector_requests)?;
        d.set_item("ranges", m.io.ranges)?;
        d.set_item("bytes_read", m.io.bytes_read)?;
        d.set_item("bytes_used", m.bytes_used)?;
        d.set_item("io_wait_seconds", m.io.wait_nanos as f64 * 1e-9)?;
        d.set_item("prefetch_wait_seconds", m.prefetch_wait_nanos as f64 * 1e-9)?;
        d.set_item("read_seconds", m.read_nanos as f64 * 1e-9)?;
        d.set_item("unplanned_pages", m.unplanned_pages)?;
        Ok(d)
    }

    /// The names of the readable top-level fields, in schema order.
    fn field_names(&self) -> Vec<String> {
        let d = self.reader.descriptor();
        self.reader
            .readable_fields()
            .into_iter()
            .map(|id| d.field(id).name().to_string())
            .collect()
    }

    /// Every selectable field path as a [`FieldPath`] (path, C++ type, direct, qualified name):
    /// readable top-level fields, their record members as `a.b.c`, and the members of
    /// records inside collections (`Jet.pt` for a collection `Jet` of records, whose
    /// qualified name `Jet._0.pt` is what [`Reader::read`] takes). `direct` paths run
    /// through records only and are read as columns of their own; the others are
    /// projections gathered into their top-level field's column.
    fn field_paths(&self) -> Vec<FieldPath> {
        let d = self.reader.descriptor();
        let mut out = Vec::new();
        let mut stack: Vec<(u32, String, bool)> = self
            .reader
            .readable_fields()
            .into_iter()
            .rev()
            .map(|id| (id, d.field(id).name().to_string(), true))
            .collect();
        while let Some((id, path, direct)) = stack.pop() {
            out.push(FieldPath {
                path: path.clone(),
                type_name: d.field(id).type_name().to_string(),
                direct,
                qualified: d.qualified_name(id),
            });
            let (record, direct) = match d.field_kind(id) {
                FieldKind::Record(..) => (id, direct),
                FieldKind::List(item) | FieldKind::Array(item, _) => (item, false),
                _ => continue,
            };
            if let FieldKind::Record(_, children) = d.field_kind(record) {
                for &c in children.iter().rev() {
                    stack.push((c, format!("{path}.{}", d.field(c).name()), direct));
                }
            }
        }
        out
    }

    /// The Arrow schema (a `pyarrow.Schema`) of the selected fields, all for `None`.
    #[pyo3(signature = (fields=None, types=None))]
    fn schema<'py>(
        &self,
        py: Python<'py>,
        fields: Option<Vec<String>>,
        types: Option<PyRef<'_, ReadTypesHandle>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // Streamer fields as the records they are read as.
        let projection = self.read_projection(fields, types.as_deref())?;
        projection.schema().to_pyarrow(py)
    }

    /// The clusters as `(first_entry, n_entries)` pairs.
    fn clusters(&self) -> Vec<(u64, u64)> {
        self.reader
            .descriptor()
            .clusters
            .iter()
            .map(|c| (c.first_entry, c.n_entries))
            .collect()
    }

    /// The uncompressed bytes of the selected fields in each cluster.
    #[pyo3(signature = (fields=None))]
    fn cluster_bytes(&self, fields: Option<Vec<String>>) -> PyResult<Vec<u64>> {
        let projection = self.projection(fields, None)?;
        Ok(self.reader.projection_bytes_per_cluster(&projection))
    }

    /// The entry ranges, cut at cluster boundaries, that an iteration over the selected
    /// fields (all for `None`) reads from `start..stop` in steps of about `step_entries`
    /// entries or `step_bytes` bytes (exactly one of them): by the planner's own rule
    /// (`RNTupleReader::batch_ranges`: Dask's partitions, uncompressed bytes), or with
    /// `uproot` by uproot's (`RNTupleReader::uproot_steps`: `iterate`'s steps, decoded
    /// bytes; `fields` are qualified names).
    #[pyo3(signature = (fields, start, stop, step_entries=None, step_bytes=None, uproot=false))]
    fn batch_ranges(
        &self,
        fields: Option<Vec<String>>,
        start: u64,
        stop: u64,
        step_entries: Option<u64>,
        step_bytes: Option<u64>,
        uproot: bool,
    ) -> PyResult<Vec<(u64, u64)>> {
        let step = step_size(step_entries, step_bytes)?;
        let range = entry_range(&self.reader, start, stop)?;
        let ranges = if uproot {
            let names = fields.unwrap_or_else(|| self.field_names());
            self.reader.uproot_steps(&names, range, step)
        } else {
            let projection = self.projection(fields, None)?;
            self.reader.batch_ranges(&projection, range, step)
        };
        Ok(ranges
            .map_err(to_py_err)?
            .into_iter()
            .map(|r| (r.start, r.end))
            .collect())
    }

    /// The compressed size of all pages, in bytes.
    fn compressed_bytes(&self) -> u64 {
        self.reader.descriptor().compressed_bytes()
    }

    /// The uncompressed size of all pages, in bytes.
    fn uncompressed_bytes(&self) -> u64 {
        rntuple::read::uncompressed_bytes(self.reader.descriptor())
    }

    /// The schema tree as text: one line per field with its C++ type and columns.
    fn schema_tree(&self) -> String {
        rntuple::read::schema_tree(self.reader.descriptor())
    }

    /// The whole description, as `rntuple info` prints it.
    fn describe(&self) -> String {
        rntuple::read::describe(&self.reader)
    }

    /// The anchor, header, footer and page lists as the descriptor holds them (plain
    /// dicts and lists; see `metadata.rs`).
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        metadata::metadata(py, self.reader.anchor(), self.reader.descriptor())
    }

    /// The decoded elements of physical column `column` in cluster `cluster` as
    /// `(NumPy dtype, bytes)` (GIL released while the pages are read and decoded).
    fn column_values<'py>(
        &self,
        py: Python<'py>,
        cluster: usize,
        column: u32,
    ) -> PyResult<(&'static str, Bound<'py, pyo3::types::PyBytes>)> {
        let reader = &self.reader;
        let values = py
            .detach(|| reader.column_values(cluster, column))
            .map_err(to_py_err)?;
        Ok(metadata::column_values_bytes(py, &values))
    }

    /// Where the bytes go (`rntuple inspect`), from the page lists (GIL released).
    fn inspect(&self, py: Python<'_>) -> PyResult<inspect::InspectionHandle> {
        let reader = &self.reader;
        let inspection = py
            .detach(|| rntuple::inspect::inspect(reader))
            .map_err(to_py_err)?;
        Ok(inspect::InspectionHandle::new(inspection))
    }

    /// Reads the selected fields over entries `start..stop` into one
    /// `pyarrow.RecordBatch`; the GIL is released while pages are read and decoded.
    #[pyo3(signature = (fields, start, stop, types=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        fields: Option<Vec<String>>,
        start: u64,
        stop: u64,
        types: Option<PyRef<'_, ReadTypesHandle>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let range = entry_range(&self.reader, start, stop)?;
        let projection = self.read_projection(fields, types.as_deref())?;
        let reader = self.reader.clone();
        let batch = py
            .detach(move || reader.read_projection(&projection, range))
            .map_err(to_py_err)?;
        batch.to_pyarrow(py)
    }

    /// A `pyarrow.RecordBatchReader` that reads the selected fields over each of
    /// `ranges` in turn, one batch per range (see [`Reader::batches`]); pyarrow releases
    /// the GIL while it waits for a batch.
    #[pyo3(signature = (fields, ranges, decode_ahead=true, types=None))]
    fn stream<'py>(
        &self,
        py: Python<'py>,
        fields: Option<Vec<String>>,
        ranges: Vec<(u64, u64)>,
        decode_ahead: bool,
        types: Option<PyRef<'_, ReadTypesHandle>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let projection = self.read_projection(fields, types.as_deref())?;
        let schema = projection.schema().clone();
        let batches = self.range_batches(&projection, ranges, decode_ahead)?;
        let stream: Box<dyn RecordBatchReader + Send> = Box::new(RangeStream { batches, schema });
        stream.into_pyarrow(py)
    }

    /// An iterator of `pyarrow.RecordBatch`es of the selected fields over each of
    /// `ranges` in turn, one batch per range. With `decode_ahead` (the default) the next
    /// batch is decoded on a thread of its own while the consumer uses the current one
    /// (at most one ahead); without it, each batch is decoded when the consumer asks for
    /// it. The GIL is released while waiting for a batch; errors keep their class.
    #[pyo3(signature = (fields, ranges, decode_ahead=true, types=None))]
    fn batches(
        &self,
        fields: Option<Vec<String>>,
        ranges: Vec<(u64, u64)>,
        decode_ahead: bool,
        types: Option<PyRef<'_, ReadTypesHandle>>,
    ) -> PyResult<BatchIterator> {
        let projection = self.read_projection(fields, types.as_deref())?;
        let batches = self.range_batches(&projection, ranges, decode_ahead)?;
        Ok(BatchIterator {
            batches: Mutex::new(Some(batches)),
        })
    }
}
