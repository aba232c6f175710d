//! `rntuple._core`: the Python extension module over the Rust library. It hands Arrow
//! data to and from pyarrow through the Arrow C data interface (no copies), releases the
//! GIL while reading, decoding and writing, and turns library errors into the exception
//! classes of `rntuple.errors`. The pure-Python package builds the user API on top.

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow, ToPyArrow};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rntuple::compression::CompressionSettings;
use rntuple::container::{FileWriter, RootFile};
use rntuple::format::SchemaDescription;
use rntuple::io::AtomicFile;
use rntuple::io::{open_source_with, SourceOptions};
use rntuple::read::{
    DefaultValue, OnOverflow, Projection, RNTupleReader, ReadAs, ReadTypes, RecordPaths, StepSize,
};
use rntuple::schema::{ColumnDefaults, FieldKind, SchemaBuilder};
use rntuple::write::{FillContext, ParallelWriter, RNTupleWriter, SharedFile, WriteOptions};
use rntuple::Error;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

mod inspect;
mod join;
mod metadata;
mod network;

/// Raises the `rntuple.errors` class that fits a library error. I/O failures become the
/// `OSError` subclass Python gives their errno (`FileNotFoundError`, `PermissionError`,
/// `IsADirectoryError`, ...), with that `errno`; remote ones are also `RemoteError`s, of
/// the subclass of their kind (`RemoteFileNotFoundError`, ...; `rntuple.errors`).
fn to_py_err(err: Error) -> PyErr {
    Python::attach(|py| {
        // Names and types from a file may hold control characters: shown escaped.
        let message = rntuple::error::printable(&err.to_string()).into_owned();
        let errors = py.import("rntuple.errors");
        let made = match err.root_cause() {
            Error::Io { source, .. } | Error::Write { source, .. } => errors.and_then(|m| {
                m.getattr("_os_error")?.call1((
                    source.raw_os_error(),
                    format!("{:?}", source.kind()),
                    message.clone(),
                ))
            }),
            Error::Remote { kind, what, .. } => errors.and_then(|m| {
                // `what` is the URL, except for errors retold to later readers.
                let url = what.contains("://").then_some(what.as_str());
                m.getattr("_remote_error")?
                    .call1((kind.name(), message.clone(), url))
            }),
            other => {
                let class = match other {
                    Error::Truncated { .. }
                    | Error::Corrupt { .. }
                    | Error::Decompression { .. } => "FormatError",
                    Error::ChecksumMismatch { .. } => "ChecksumError",
                    Error::UnsupportedFeature(_) | Error::Unsupported(_) => "UnsupportedError",
                    Error::NotFound(_) => "NotFoundError",
                    Error::OutputExists { .. } => "OutputExistsError",
                    Error::InvalidArgument(_) => "InvalidArgumentError",
                    Error::IncompatibleType(_) => "IncompatibleTypeError",
                    Error::OutOfRange { .. } | Error::Inexact { .. } => "ValueOutOfRangeError",
                    _ => "RNTupleError",
                };
                errors.and_then(|m| m.getattr(class)?.call1((message.clone(),)))
            }
        };
        match made {
            Ok(instance) => PyErr::from_value(instance),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(message),
        }
    })
}

/// `options` with the cache of remote reads `cache` asks for: `None` leaves the
/// environment's (`RNTUPLE_CACHE_DIR`, ...); `{"dir": ""}` turns it off; `{"dir": DIR}`
/// with optional `"validate"` (`open`, `never`) and `"max_bytes"` (a size) sets one, the
/// environment's other settings under what is given.
fn with_cache(
    mut options: SourceOptions,
    cache: Option<std::collections::HashMap<String, String>>,
) -> rntuple::Result<SourceOptions> {
    let Some(mut cache) = cache else {
        return Ok(options);
    };
    let dir = cache.remove("dir").unwrap_or_default();
    if dir.is_empty() {
        options.cache = None;
        return Ok(options);
    }
    let mut config = rntuple::io::CacheConfig::from_env_in(dir)?;
    if let Some(validate) = cache.remove("validate") {
        config.validate = validate.parse()?;
    }
    if let Some(size) = cache.remove("max_bytes") {
        config.max_bytes = Some(rntuple::io::parse_byte_size(&size)?);
    }
    if let Some(other) = cache.keys().next() {
        return Err(Error::InvalidArgument(format!(
            "unknown cache option {other:?}: expected dir, validate or max_bytes"
        )));
    }
    options.cache = Some(config);
    Ok(options)
}

/// The per-user cache directory from the environment's `XDG_CACHE_HOME` and `HOME`
/// (which `rntuple/cache.py` reads), or `None` without either.
#[pyfunction]
#[pyo3(signature = (xdg_cache_home, home))]
fn default_cache_dir(xdg_cache_home: Option<String>, home: Option<String>) -> Option<String> {
    rntuple::io::default_cache_dir(
        xdg_cache_home.as_deref().map(std::ffi::OsStr::new),
        home.as_deref().map(std::ffi::OsStr::new),
    )
    .map(|dir| dir.to_string_lossy().into_owned())
}

/// What the cache of remote reads in `dir` holds (`entries`, `versions`, `extents`,
/// `bytes_on_disk`, `temporary_files`) and did (its counters, summed over every process).
#[pyfunction]
fn cache_stats(py: Python<'_>, dir: String) -> PyResult<BTreeMap<String, u64>> {
    let report = py
        .detach(|| rntuple::io::cache_stats(std::path::Path::new(&dir)))
        .map_err(to_py_err)?;
    let mut out: BTreeMap<String, u64> = report
        .counters
        .pairs()
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    out.insert("entries".into(), report.entries);
    out.insert("versions".into(), report.versions);
    out.insert("extents".into(), report.extents);
    out.insert("bytes_on_disk".into(), report.disk_bytes);
    out.insert("temporary_files".into(), report.temp_files);
    Ok(out)
}

/// An open ROOT file: lists its RNTuples and opens them. Or an RNTuple stored as
/// objects (`ntpl+s3+http(s)://host/bucket/prefix`, `ntpl+file:///dir/prefix`: ROOT's
/// S3 layout), which holds one RNTuple and acts as a file holding only it.
#[pyclass(module = "rntuple._core", frozen)]
struct RootFileHandle {
    opened: Opened,
}

/// What a [`RootFileHandle`] holds.
enum Opened {
    /// A ROOT file.
    File(RootFile),
    /// A dataset of objects, opened (its anchor, header, footer and page lists read),
    /// and the URL it was opened with.
    Objects {
        url: String,
        reader: Arc<RNTupleReader>,
    },
}

/// The error of an object-store dataset that is not there (no anchor object, no
/// directory): a `FileNotFoundError` as for a missing file, remote (a
/// `RemoteFileNotFoundError`) for S3; every other error as `to_py_err` makes it.
fn objects_open_err(url: &str, err: Error) -> PyErr {
    if !matches!(err.root_cause(), Error::NotFound(_)) {
        return to_py_err(err);
    }
    let message = err.to_string();
    let remote = !url.to_ascii_lowercase().starts_with("ntpl+file:");
    let made = Python::attach(|py| {
        let errors = py.import("rntuple.errors")?;
        if remote {
            errors
                .getattr("_remote_error")?
                .call1(("not_found", message.clone(), url))
                .map(PyErr::from_value)
        } else {
            errors
                .getattr("_os_error")?
                .call1((Some(2i32), "NotFound", message.clone()))
                .map(PyErr::from_value)
        }
    });
    made.unwrap_or_else(|e| e)
}

#[pymethods]
impl RootFileHandle {
    /// Opens the ROOT file at `path` (a path or URL), or the RNTuple stored as objects
    /// at an object-store URL. `network` sets some of the network options of a remote
    /// file (`connect_timeout`, `first_byte_timeout`, `idle_timeout`, `speed_time` in
    /// seconds, `speed_limit` in bytes a second, `retries`); the others are the
    /// environment's (`RNTUPLE_*`), else the defaults.
    /// `cache`: the cache of remote reads (see `with_cache`; files only).
    #[new]
    #[pyo3(signature = (path, network=None, cache=None))]
    fn new(
        py: Python<'_>,
        path: String,
        network: Option<std::collections::HashMap<String, f64>>,
        cache: Option<std::collections::HashMap<String, String>>,
    ) -> PyResult<Self> {
        let options = network::source_options(network.unwrap_or_default())
            .and_then(|options| with_cache(options, cache))
            .map_err(to_py_err)?;
        if rntuple::io::is_object_layout(&path) {
            let reader = py
                .detach(|| RNTupleReader::open_objects_url(&path, None, &options))
                .map_err(|e| objects_open_err(&path, e))?;
            return Ok(RootFileHandle {
                opened: Opened::Objects {
                    url: path,
                    reader: Arc::new(reader),
                },
            });
        }
        let file = py
            .detach(|| open_source_with(&path, &options).and_then(RootFile::open))
            .map_err(to_py_err)?;
        Ok(RootFileHandle {
            opened: Opened::File(file),
        })
    }

    /// The file's name as given when opening.
    #[getter]
    fn name(&self) -> String {
        match &self.opened {
            Opened::File(file) => file.source().name().to_string(),
            Opened::Objects { url, .. } => url.clone(),
        }
    }

    /// Every RNTuple in the file (also in sub-directories) by path, as `dir/name`; a
    /// dataset of objects has one, its RNTuple's name.
    fn rntuple_paths(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        match &self.opened {
            Opened::File(file) => py
                .detach(|| file.rntuple_anchors())
                .map(|keys| keys.into_iter().map(|k| k.path).collect())
                .map_err(to_py_err),
            Opened::Objects { reader, .. } => Ok(vec![reader.path().to_string()]),
        }
    }

    /// Opens the RNTuple at `path` (or the only one, for `None`).
    #[pyo3(signature = (path=None))]
    fn open_rntuple(&self, py: Python<'_>, path: Option<String>) -> PyResult<Reader> {
        match &self.opened {
            Opened::File(file) => {
                let reader = py
                    .detach(|| RNTupleReader::open(file, path.as_deref()))
                    .map_err(to_py_err)?;
                Ok(Reader {
                    reader: Arc::new(reader),
                    origin: None,
                })
            }
            Opened::Objects { url, reader } => {
                let stored = reader.path();
                match path.as_deref().map(|p| p.trim_matches('/')) {
                    Some(p) if !p.is_empty() && p != stored => Err(to_py_err(Error::NotFound(
                        format!("{url}: no RNTuple \"{p}\": the dataset holds one, \"{stored}\""),
                    ))),
                    _ => Ok(Reader {
                        reader: reader.clone(),
                        origin: Some(url.clone()),
                    }),
                }
            }
        }
    }
}

/// An open RNTuple: metadata, and reading any selection of fields over any entry range
/// as Arrow record batches.
#[pyclass(module = "rntuple._core", frozen)]
struct Reader {
    reader: Arc<RNTupleReader>,
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
struct BatchIterator {
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

/// Record batches of a read, decoded when asked for or ahead.
type Batches = Box<dyn Iterator<Item = rntuple::Result<RecordBatch>> + Send>;

impl Reader {
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
        let starts: Vec<u64> = ranges.iter().map(|r| r.start).collect();
        let batches = self
            .reader
            .read_projection_ranges(projection, ranges)
            .map_err(to_py_err)?;
        let batches: Batches = if decode_ahead {
            Box::new(batches.decode_ahead())
        } else {
            Box::new(batches)
        };
        // Streamer fields as records, by the file's streamer infos.
        let streamer = self.streamer_fields()?;
        if streamer.is_empty() {
            return Ok(batches);
        }
        Ok(Box::new(batches.zip(starts).map(move |(batch, start)| {
            batch.and_then(|b| streamer.decode(&b, start))
        })))
    }

    /// The streamer fields this RNTuple's streamer infos decode into records.
    fn streamer_fields(&self) -> PyResult<rntuple::streamer_fields::StreamerFields> {
        rntuple::streamer_fields::StreamerFields::new(self.reader.descriptor()).map_err(to_py_err)
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
}

#[pymethods]
impl Reader {
    /// This RNTuple's metadata alone, kept after the file is closed: a reader that
    /// selects, plans and describes reads as this one does and reads no page (for the
    /// schemas of every file of a chain, and [`unify_field`]).
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
    fn file_name(&self) -> String {
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

    /// Every selectable field path as `(path, C++ type, direct, qualified name)`:
    /// readable top-level fields, their record members as `a.b.c`, and the members of
    /// records inside collections (`Jet.pt` for a collection `Jet` of records, whose
    /// qualified name `Jet._0.pt` is what [`Reader::read`] takes). `direct` paths run
    /// through records only and are read as columns of their own; the others are
    /// projections gathered into their top-level field's column.
    fn field_paths(&self) -> Vec<(String, String, bool, String)> {
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
            out.push((
                path.clone(),
                d.field(id).type_name().to_string(),
                direct,
                d.qualified_name(id),
            ));
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
        let projection = self.projection(fields, types.as_deref())?;
        // Streamer fields as the records they are read as.
        self.streamer_fields()?
            .schema(projection.schema())
            .to_pyarrow(py)
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
    /// fields reads from `start..stop` in steps of about `step_entries` entries or
    /// `step_bytes` uncompressed bytes (exactly one of them).
    #[pyo3(signature = (fields, start, stop, step_entries=None, step_bytes=None))]
    fn batch_ranges(
        &self,
        fields: Option<Vec<String>>,
        start: u64,
        stop: u64,
        step_entries: Option<u64>,
        step_bytes: Option<u64>,
    ) -> PyResult<Vec<(u64, u64)>> {
        let step = match (step_entries, step_bytes) {
            (Some(n), None) => StepSize::Entries(n),
            (None, Some(n)) => StepSize::Bytes(n),
            _ => {
                return Err(to_py_err(Error::InvalidArgument(
                    "give exactly one of step_entries and step_bytes".into(),
                )))
            }
        };
        let projection = self.projection(fields, None)?;
        let range = entry_range(&self.reader, start, stop)?;
        let ranges = self
            .reader
            .batch_ranges(&projection, range, step)
            .map_err(to_py_err)?;
        Ok(ranges.into_iter().map(|r| (r.start, r.end)).collect())
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
        let projection = self.projection(fields, types.as_deref())?;
        let reader = self.reader.clone();
        let streamer = self.streamer_fields()?;
        let batch = py
            .detach(move || {
                let start = range.start;
                streamer.decode(&reader.read_projection(&projection, range)?, start)
            })
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
        let projection = self.projection(fields, types.as_deref())?;
        let schema = Arc::new(self.streamer_fields()?.schema(projection.schema()));
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
        let projection = self.projection(fields, types.as_deref())?;
        let batches = self.range_batches(&projection, ranges, decode_ahead)?;
        Ok(BatchIterator {
            batches: Mutex::new(Some(batches)),
        })
    }
}

/// The file being written and the RNTuples written into it, filled in turns.
type SharedRootFile = SharedFile<AtomicFile>;

/// A ROOT file being written: RNTuples are created from Arrow streams, extended with
/// more entries, and completed (anchors, keys list, streamer info) on `close`.
#[pyclass(module = "rntuple._core")]
struct FileWriterHandle {
    /// `None` once closed or aborted.
    file: Option<SharedRootFile>,
    options: WriteOptions,
}

impl FileWriterHandle {
    /// The file, unless it is closed.
    fn open_file(&mut self) -> PyResult<&mut SharedRootFile> {
        self.file
            .as_mut()
            .ok_or_else(|| to_py_err(Error::InvalidArgument("the file is already closed".into())))
    }
}

/// Writes every batch of an Arrow stream with `write`; returns the entries written.
fn write_stream(
    stream: &mut dyn Iterator<Item = Result<RecordBatch, ArrowError>>,
    mut write: impl FnMut(&RecordBatch) -> rntuple::Result<()>,
) -> rntuple::Result<u64> {
    let mut n = 0u64;
    for batch in stream {
        let batch = batch?;
        n += batch.num_rows() as u64;
        // Moderate slices (zero-copy) keep the writer's pipeline busy: pages of one slice
        // are sealed in the background while the next one is shredded.
        let mut start = 0;
        while start < batch.num_rows() {
            let len = WRITE_SLICE_ROWS.min(batch.num_rows() - start);
            write(&batch.slice(start, len))?;
            start += len;
        }
    }
    Ok(n)
}

/// Rows handed to the writer at a time.
const WRITE_SLICE_ROWS: usize = 16384;

/// The write options of the Python writers: `compression` is `ALG[:LEVEL]` or ROOT's
/// number; sizes in bytes, `None` for ROOT's defaults; `checkpoint_every` `None` for one
/// cluster group at the end.
fn write_options(
    compression: &str,
    cluster_size: Option<u64>,
    page_size: Option<u64>,
    page_checksums: bool,
    checkpoint_every: Option<u64>,
) -> PyResult<WriteOptions> {
    let compression = CompressionSettings::parse(compression).map_err(to_py_err)?;
    // Python spells "one cluster group at the end" None (the command line spells it
    // 0); every other value is the core's to check.
    if checkpoint_every == Some(0) {
        return Err(to_py_err(Error::InvalidArgument(
            "checkpoint_every must be a positive number of clusters, or None".into(),
        )));
    }
    let mut options = WriteOptions::builder()
        .compression(compression)
        .page_checksums(page_checksums)
        .checkpoint_every(checkpoint_every.unwrap_or(0));
    if let Some(size) = cluster_size {
        options = options.cluster_size(size);
    }
    if let Some(size) = page_size {
        options = options.page_size(size);
    }
    options.build().map_err(to_py_err)
}

/// The C++ type names `types` gives to top-level fields, each of which `schema` must have.
fn type_overrides(
    schema: &Schema,
    types: Option<&Bound<'_, PyDict>>,
) -> PyResult<BTreeMap<String, String>> {
    let mut type_names: BTreeMap<String, String> = BTreeMap::new();
    if let Some(types) = types {
        for (k, v) in types.iter() {
            type_names.insert(k.extract()?, v.extract()?);
        }
    }
    for field in type_names.keys() {
        if schema.field_with_name(field).is_err() {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "types names field \"{field}\", which the data does not have"
            ))));
        }
    }
    Ok(type_names)
}

/// The RNTuple schema of an Arrow schema: a nullable Arrow field becomes `std::optional`
/// (the Python layer marks nullable only the fields that are optional or hold nulls);
/// `type_names` maps top-level field names to C++ type names that override the ones
/// derived from Arrow.
fn rntuple_schema(
    schema: &Schema,
    type_names: &BTreeMap<String, String>,
    options: &WriteOptions,
) -> rntuple::Result<SchemaDescription> {
    let mut builder = SchemaBuilder::new(ColumnDefaults {
        compressed: options.compression().is_compressed(),
    })
    .nullable_as_optional(true);
    for field in schema.fields() {
        // The error keeps its kind (unsupported type, bad type name) and names the column.
        let located = |e: Error| {
            e.at(rntuple::Location {
                field: Some(field.name().to_string()),
                ..Default::default()
            })
        };
        match type_names.get(field.name()) {
            Some(t) => builder.add_cpp_field(field.name(), t).map_err(located)?,
            None => builder.add_arrow_field(field).map_err(located)?,
        };
    }
    Ok(builder.finish())
}

#[pymethods]
impl FileWriterHandle {
    /// Creates (or truncates) the ROOT file at `path`. `compression` is `ALG[:LEVEL]` or
    /// ROOT's number; sizes in bytes, `None` for ROOT's defaults.
    #[new]
    #[pyo3(signature = (path, compression="zstd:5", cluster_size=None, page_size=None, page_checksums=true, checkpoint_every=Some(rntuple::write::DEFAULT_CHECKPOINT_EVERY)))]
    fn new(
        path: String,
        compression: &str,
        cluster_size: Option<u64>,
        page_size: Option<u64>,
        page_checksums: bool,
        checkpoint_every: Option<u64>,
    ) -> PyResult<Self> {
        let options = write_options(
            compression,
            cluster_size,
            page_size,
            page_checksums,
            checkpoint_every,
        )?;
        let file = FileWriter::create(std::path::Path::new(&path), options.compression())
            .map_err(to_py_err)?;
        Ok(FileWriterHandle {
            file: Some(SharedFile::new(file)),
            options,
        })
    }

    /// Creates the RNTuple `name` with the schema of `data` (anything with
    /// `__arrow_c_stream__`) and writes its entries. A nullable Arrow field becomes
    /// `std::optional` (the Python layer marks nullable only the fields that are optional
    /// or hold nulls); `types` maps top-level field names to C++ type names that
    /// override the ones derived from Arrow. Returns the entries written.
    #[pyo3(signature = (name, data, types=None))]
    fn create(
        &mut self,
        py: Python<'_>,
        name: String,
        data: &Bound<'_, PyAny>,
        types: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        if self.open_file()?.writer(&name).is_some() {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "the file already has an RNTuple named \"{name}\"; use extend() to add entries"
            ))));
        }
        let mut stream = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        let schema = stream.schema();
        let type_names = type_overrides(&schema, types)?;
        let options = self.options.clone();
        let file = self.open_file()?;
        py.detach(move || -> rntuple::Result<u64> {
            let schema = rntuple_schema(&schema, &type_names, &options)?;
            let writer = file.create(&name, schema, options)?;
            match write_stream(&mut stream, |b| writer.write_batch(b)) {
                Ok(_) => Ok(writer.num_entries()),
                Err(e) => {
                    // An RNTuple whose data failed is left out of the file.
                    file.discard(&name);
                    Err(e)
                }
            }
        })
        .map_err(to_py_err)
    }

    /// Appends the entries of `data` (same fields as when created) to RNTuple `name`.
    /// Returns the RNTuple's entries so far.
    fn extend(&mut self, py: Python<'_>, name: String, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let mut stream = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        let writer = self.open_file()?.writer_mut(&name).ok_or_else(|| {
            to_py_err(Error::NotFound(format!(
                "no RNTuple named \"{name}\" is being written in this file"
            )))
        })?;
        py.detach(|| write_stream(&mut stream, |b| writer.write_batch(b)))
            .map_err(to_py_err)?;
        Ok(writer.num_entries())
    }

    /// Entries written so far into RNTuple `name`.
    fn num_entries(&self, name: &str) -> PyResult<u64> {
        self.file
            .as_ref()
            .and_then(|f| f.writer(name))
            .map(|w| w.num_entries())
            .ok_or_else(|| {
                to_py_err(Error::NotFound(format!(
                    "no RNTuple named \"{name}\" is being written in this file"
                )))
            })
    }

    /// The names of the RNTuples being written, in creation order.
    fn names(&self) -> Vec<String> {
        self.file
            .as_ref()
            .map(|f| f.names().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Abandons the file: nothing is written at its path (the temporary file is removed
    /// and an existing file there stays as it was). Closing or aborting afterwards does
    /// nothing.
    fn abort(&mut self) -> PyResult<()> {
        self.file.take();
        Ok(())
    }

    /// Commits every RNTuple (last cluster, page lists, footer, anchor) and completes
    /// the file: it appears at its path only now, complete. Closing twice does nothing.
    /// If completing fails, the file is abandoned and whatever was at the path stays.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.file.take() {
            Some(file) => py
                .detach(move || file.close().map(|_| ()))
                .map_err(to_py_err),
            None => Ok(()),
        }
    }
}

/// An [`ObjectSink`](rntuple::write::ObjectSink) shared by the writer filling it and the
/// handle that writes its anchor once the writer is finished (the writer's `finish`
/// consumes its sink; an object sink dropped without its anchor removes its objects).
#[derive(Clone)]
struct SharedObjectSink(Arc<Mutex<rntuple::write::ObjectSink>>);

impl SharedObjectSink {
    fn lock(&self) -> std::sync::MutexGuard<'_, rntuple::write::ObjectSink> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl rntuple::write::BlobSink for SharedObjectSink {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> rntuple::Result<u64> {
        self.lock().write_blob(payload, max_key_size)
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> rntuple::Result<u64> {
        self.lock().write_blob_parts(parts, max_key_size)
    }

    fn write_located(
        &mut self,
        parts: &[&[u8]],
        max_key_size: u64,
    ) -> rntuple::Result<Vec<rntuple::format::Locator>> {
        self.lock().write_located(parts, max_key_size)
    }

    fn checkpoint(&mut self) -> rntuple::Result<()> {
        self.lock().checkpoint()
    }
}

/// An RNTuple being written as objects (`ntpl+s3+https://host/bucket/prefix`,
/// `ntpl+file:///dir/prefix`: ROOT's S3 layout), with `FileWriterHandle`'s methods: a
/// dataset holds one RNTuple. Objects are stored as the writer goes; the JSON anchor,
/// which makes the dataset visible, only on `close`. An existing dataset there stays
/// whole until then (the new objects take ids beside its own), and is removed once the
/// new anchor replaced its own; an abort (or an error) removes the objects stored and
/// leaves the store as it was.
#[pyclass(module = "rntuple._core")]
struct ObjectWriterHandle {
    url: String,
    /// The RNTuple's name the URL gives (`URL:NAME`), if any.
    name: Option<String>,
    options: WriteOptions,
    /// The RNTuple being written: its name, writer and sink. `None` before `create`.
    writing: Option<(String, RNTupleWriter<SharedObjectSink>, SharedObjectSink)>,
    /// Closed or aborted.
    closed: bool,
}

impl ObjectWriterHandle {
    /// The writer of RNTuple `name`, or an error naming what is being written.
    fn writer_of(&mut self, name: &str) -> PyResult<&mut RNTupleWriter<SharedObjectSink>> {
        if self.closed {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "{} is already closed",
                self.url
            ))));
        }
        match &mut self.writing {
            Some((n, writer, _)) if n == name => Ok(writer),
            _ => Err(to_py_err(Error::NotFound(format!(
                "no RNTuple named \"{name}\" is being written in {}",
                self.url
            )))),
        }
    }
}

#[pymethods]
impl ObjectWriterHandle {
    /// Writes to the dataset of objects at `url`; the options as `FileWriterHandle`'s.
    #[new]
    #[pyo3(signature = (url, compression="zstd:5", cluster_size=None, page_size=None, page_checksums=true, checkpoint_every=Some(rntuple::write::DEFAULT_CHECKPOINT_EVERY)))]
    fn new(
        url: String,
        compression: &str,
        cluster_size: Option<u64>,
        page_size: Option<u64>,
        page_checksums: bool,
        checkpoint_every: Option<u64>,
    ) -> PyResult<Self> {
        // `URL[:NAME]`, as the command line splits it; the URL checked strictly before
        // anything is created.
        let (url, name) = rntuple::io::split_target(&url);
        if !rntuple::io::is_object_layout(&url) {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "{url} is not an object-store URL (ntpl+s3+https://HOST/BUCKET/PREFIX, \
                 ntpl+file:///DIR/PREFIX)"
            ))));
        }
        rntuple::io::check_layout_url(&url).map_err(to_py_err)?;
        let options = write_options(
            compression,
            cluster_size,
            page_size,
            page_checksums,
            checkpoint_every,
        )?;
        Ok(ObjectWriterHandle {
            url,
            name,
            options,
            writing: None,
            closed: false,
        })
    }

    /// Creates the RNTuple `name` from `data` as `FileWriterHandle.create` does: the
    /// dataset's one RNTuple. Returns the entries written.
    #[pyo3(signature = (name, data, types=None))]
    fn create(
        &mut self,
        py: Python<'_>,
        name: String,
        data: &Bound<'_, PyAny>,
        types: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        if self.closed {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "{} is already closed",
                self.url
            ))));
        }
        if let Some(named) = self.name.as_ref().filter(|n| **n != name) {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "{}:{named} names the RNTuple \"{named}\", not \"{name}\"",
                self.url
            ))));
        }
        if let Some((existing, _, _)) = &self.writing {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "{}: a dataset of objects holds one RNTuple, and \"{existing}\" is being \
                 written{}",
                self.url,
                if *existing == name {
                    "; use extend() to add entries"
                } else {
                    ""
                }
            ))));
        }
        let mut stream = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        let schema = stream.schema();
        let type_names = type_overrides(&schema, types)?;
        let options = self.options.clone();
        let url = self.url.clone();
        let (writer, sink, entries) = py
            .detach(move || -> rntuple::Result<_> {
                let schema = rntuple_schema(&schema, &type_names, &options)?;
                let dataset =
                    rntuple::io::ObjectDataset::open(&url, &SourceOptions::current()?, true)?;
                let sink = SharedObjectSink(Arc::new(Mutex::new(
                    rntuple::write::ObjectSink::create(dataset, true)?,
                )));
                let mut writer = RNTupleWriter::new(sink.clone(), &name, schema, options)?;
                // On an error the writer and sink are dropped: the objects stored go.
                write_stream(&mut stream, |b| writer.write_batch(b))?;
                let entries = writer.num_entries();
                Ok((writer, sink, entries))
            })
            .map_err(to_py_err)?;
        let name = writer.descriptor().name.clone();
        self.writing = Some((name, writer, sink));
        Ok(entries)
    }

    /// Appends the entries of `data` (same fields as when created) to RNTuple `name`.
    /// Returns the RNTuple's entries so far. On an error the dataset is abandoned.
    fn extend(&mut self, py: Python<'_>, name: String, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let mut stream = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        let writer = self.writer_of(&name)?;
        let result = py.detach(|| write_stream(&mut stream, |b| writer.write_batch(b)));
        match result {
            Ok(_) => Ok(writer.num_entries()),
            Err(e) => {
                // What the writer holds may be half written: nothing of it is kept.
                self.writing = None;
                self.closed = true;
                Err(to_py_err(e))
            }
        }
    }

    /// Entries written so far into RNTuple `name`.
    fn num_entries(&mut self, name: &str) -> PyResult<u64> {
        Ok(self.writer_of(name)?.num_entries())
    }

    /// The name of the RNTuple being written, if any.
    fn names(&self) -> Vec<String> {
        self.writing
            .iter()
            .map(|(name, _, _)| name.clone())
            .collect()
    }

    /// Abandons the dataset: the objects stored are removed and no anchor is written.
    /// Closing or aborting afterwards does nothing.
    fn abort(&mut self, py: Python<'_>) {
        self.closed = true;
        if let Some(writing) = self.writing.take() {
            py.detach(move || drop(writing));
        }
    }

    /// Commits the RNTuple (last cluster, page lists, footer) and writes the anchor,
    /// after every other object is stored: the dataset is complete only now. Closing
    /// twice does nothing. On an error the objects are removed and no anchor is left.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        self.closed = true;
        let Some((name, writer, sink)) = self.writing.take() else {
            return Ok(());
        };
        py.detach(move || -> rntuple::Result<()> {
            use rntuple::write::RNTupleOutput;
            let anchor = writer.finish()?;
            let mut sink = sink.lock();
            sink.write_rntuple_anchor(&name, &anchor)
        })
        .map_err(to_py_err)
    }
}

/// One RNTuple filled from several threads (`ParallelWriter`): each thread fills through
/// a fill context of its own; the file appears at its path only on `close`.
#[pyclass(module = "rntuple._core")]
struct ParallelWriterHandle {
    /// `None` once closed or aborted.
    writer: Option<ParallelWriter<AtomicFile>>,
}

impl ParallelWriterHandle {
    /// The writer, unless it is closed.
    fn open_writer(&self) -> PyResult<&ParallelWriter<AtomicFile>> {
        self.writer.as_ref().ok_or_else(|| {
            to_py_err(Error::InvalidArgument(
                "the writer is already closed".into(),
            ))
        })
    }
}

#[pymethods]
impl ParallelWriterHandle {
    /// Creates (or truncates, once closed) the ROOT file at `path` with the RNTuple
    /// `name` of the fields of `schema` (a `pyarrow.Schema`: a nullable field becomes
    /// `std::optional`); `types` maps top-level field names to C++ type names; the
    /// options as `FileWriterHandle`'s.
    #[new]
    #[pyo3(signature = (path, name, schema, types=None, compression="zstd:5", cluster_size=None, page_size=None, page_checksums=true, checkpoint_every=Some(rntuple::write::DEFAULT_CHECKPOINT_EVERY)))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: String,
        name: String,
        schema: &Bound<'_, PyAny>,
        types: Option<&Bound<'_, PyDict>>,
        compression: &str,
        cluster_size: Option<u64>,
        page_size: Option<u64>,
        page_checksums: bool,
        checkpoint_every: Option<u64>,
    ) -> PyResult<Self> {
        let options = write_options(
            compression,
            cluster_size,
            page_size,
            page_checksums,
            checkpoint_every,
        )?;
        let schema = Schema::from_pyarrow_bound(schema)?;
        let type_names = type_overrides(&schema, types)?;
        let writer = py
            .detach(|| {
                let schema = rntuple_schema(&schema, &type_names, &options)?;
                ParallelWriter::recreate(std::path::Path::new(&path), &name, schema, options)
            })
            .map_err(to_py_err)?;
        Ok(ParallelWriterHandle {
            writer: Some(writer),
        })
    }

    /// A new fill context, for one thread.
    fn fill_context(&self) -> PyResult<FillContextHandle> {
        let context = self.open_writer()?.fill_context().map_err(to_py_err)?;
        Ok(FillContextHandle {
            context: Some(context),
            entries: 0,
        })
    }

    /// Entries in the clusters committed so far.
    fn num_entries(&self) -> PyResult<u64> {
        self.open_writer()?.num_entries().map_err(to_py_err)
    }

    /// Abandons the file: nothing is written at its path. Closing or aborting afterwards
    /// does nothing.
    fn abort(&mut self) {
        self.writer.take();
    }

    /// Writes the page lists, footer and anchor and completes the file, which appears at
    /// its path only now; every fill context must be closed before. Closing twice does
    /// nothing. On an error the file is abandoned.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.writer.take() {
            Some(writer) => py
                .detach(move || writer.finish().map(|_| ()))
                .map_err(to_py_err),
            None => Ok(()),
        }
    }
}

/// One thread's fill context of a `ParallelWriterHandle`: its own pages and clusters,
/// committed into the shared file as they fill.
#[pyclass(module = "rntuple._core")]
struct FillContextHandle {
    /// `None` once closed.
    context: Option<FillContext<AtomicFile>>,
    /// Entries written through this context.
    entries: u64,
}

impl FillContextHandle {
    /// The context, unless it is closed.
    fn open_context(&mut self) -> PyResult<&mut FillContext<AtomicFile>> {
        self.context.as_mut().ok_or_else(|| {
            to_py_err(Error::InvalidArgument(
                "the fill context is already closed".into(),
            ))
        })
    }
}

#[pymethods]
impl FillContextHandle {
    /// Appends the entries of `data` (anything with `__arrow_c_stream__`, with the fields
    /// of the writer's schema), with the GIL released. Returns the entries written
    /// through this context so far.
    fn extend(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let mut stream = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        let context = self.open_context()?;
        let mut written = 0u64;
        let result = py.detach(|| {
            write_stream(&mut stream, |b| {
                context.write_batch(b)?;
                written += b.num_rows() as u64;
                Ok(())
            })
        });
        self.entries += written;
        result.map_err(to_py_err)?;
        Ok(self.entries)
    }

    /// Commits the open cluster now.
    fn flush_cluster(&mut self, py: Python<'_>) -> PyResult<()> {
        let context = self.open_context()?;
        py.detach(|| context.flush_cluster()).map_err(to_py_err)
    }

    /// Entries written through this context.
    #[getter]
    fn num_entries(&self) -> u64 {
        self.entries
    }

    /// Ends the context without committing its open cluster (the writer is being
    /// abandoned); closing or abandoning afterwards does nothing.
    fn abandon(&mut self) {
        if let Some(context) = self.context.take() {
            context.abandon();
        }
    }

    /// Commits the open cluster and ends the context; closing twice does nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.context.take() {
            Some(context) => py.detach(move || context.finish()).map_err(to_py_err),
            None => Ok(()),
        }
    }
}

/// The `rntuple._core` module.
/// Converts a TTree to an RNTuple (`rntuple convert`), with the GIL released: `input` is
/// `FILE` or `FILE:TREE` (`tree` names the tree otherwise); `entries` is `(start, stop)`,
/// a stop past the end meaning the end; `split_policy` is split, unsplit or auto. Returns
/// [`ConvertedTree`].
#[pyfunction]
#[pyo3(signature = (input, output, tree=None, name=None, branches=None, entries=None, compression=None, skip_unsupported=false, overwrite=false, unsplit=None, split_policy="split".to_string()))]
#[allow(clippy::too_many_arguments)]
fn convert_ttree(
    py: Python<'_>,
    input: String,
    output: String,
    tree: Option<String>,
    name: Option<String>,
    branches: Option<Vec<String>>,
    entries: Option<(u64, Option<u64>)>,
    compression: Option<String>,
    skip_unsupported: bool,
    overwrite: bool,
    unsplit: Option<Vec<String>>,
    split_policy: String,
) -> PyResult<ConvertedTree> {
    use rntuple::import::SplitPolicy;
    let split_policy = match split_policy.as_str() {
        "split" => SplitPolicy::Split,
        "unsplit" => SplitPolicy::Unsplit,
        "auto" => SplitPolicy::Auto,
        other => {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "split_policy \"{other}\": expected split, unsplit or auto"
            ))))
        }
    };
    let mut write = WriteOptions::builder();
    if let Some(spec) = compression {
        write = write.compression(CompressionSettings::parse(&spec).map_err(to_py_err)?);
    }
    let write = write.build().map_err(to_py_err)?;
    let (file, spec_tree) = rntuple::io::split_target(&input);
    let tree = match (spec_tree, tree) {
        (Some(a), Some(b)) if a != b => {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "the input names TTree \"{a}\" but tree=\"{b}\""
            ))))
        }
        (a, b) => a.or(b),
    };
    let summary = py
        .detach(|| {
            // The library converts to the end when the stop lies past it.
            let entries = entries.map(|(start, stop)| (start, stop.unwrap_or(u64::MAX)));
            let options = rntuple::import::ConvertOptions {
                name,
                branches: branches.unwrap_or_default(),
                entries,
                skip_unsupported,
                unsplit: unsplit.unwrap_or_default(),
                split_policy,
            };
            rntuple::import::convert_file(
                &file,
                tree.as_deref(),
                std::path::Path::new(&output),
                &options,
                write,
                overwrite,
                |_, _| {},
            )
        })
        .map_err(to_py_err)?;
    let choices = summary
        .split_choices
        .into_iter()
        .map(|c| {
            (
                c.branch,
                c.entries,
                c.split_bytes,
                c.unsplit_bytes,
                c.unsplit,
            )
        })
        .collect();
    Ok((
        summary.entries,
        summary.input_bytes,
        summary.skipped,
        choices,
    ))
}

/// What `convert_ttree` returns: entries, input bytes, skipped branches, and the split
/// choices (branch, sample entries, split bytes, unsplit bytes, unsplit).
type ConvertedTree = (u64, u64, Vec<String>, Vec<(String, u64, u64, u64, bool)>);

/// What `merge_rntuples` returns by name: fields added, fields dropped, attribute sets
/// dropped, the inputs lacking fields of the output as `(input, entries, fields)`, and
/// the fields converted to one type as `(field, type)`.
type MergeNames = (
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<(String, u64, Vec<String>)>,
    Vec<(String, String)>,
);

/// Merges RNTuples into a new file (`rntuple merge`), with the GIL released: `inputs`
/// are `FILE` or `FILE:NAME` each; `mode` is filter, strict or union; `compression` an
/// `ALG[:LEVEL]` or ROOT number (default: the first input's). Returns `(inputs, entries,
/// clusters, pages_copied, pages_resealed, zero_pages, bytes_read, bytes_written,
/// compression, (fields_added, fields_dropped, attribute_sets_dropped, inputs_lacking,
/// fields_converted), output_bytes)`, `inputs_lacking` as `(input, entries, fields)`
/// each, `fields_converted` as `(field, type)`, `output_bytes` the bytes of the objects
/// stored when `output` is a dataset of objects (`ntpl+s3+https://...`,
/// `ntpl+file://...`: ROOT's S3 layout; `overwrite` replaces an existing one), `None`
/// for a file.
#[pyfunction]
#[pyo3(signature = (inputs, output, mode="filter".to_string(), compression=None, keep_compression=false, name=None, overwrite=false, allow_disjoint=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn merge_rntuples(
    py: Python<'_>,
    inputs: Vec<String>,
    output: String,
    mode: String,
    compression: Option<String>,
    keep_compression: bool,
    name: Option<String>,
    overwrite: bool,
    allow_disjoint: bool,
) -> PyResult<(
    usize,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u32,
    MergeNames,
    Option<u64>,
)> {
    use rntuple::merge::{merge_files, MergeMode, MergeOptions, OutputCompression};
    let mode: MergeMode = mode.parse().map_err(to_py_err)?;
    let compression = match (compression, keep_compression) {
        (Some(_), true) => {
            return Err(to_py_err(Error::InvalidArgument(
                "compression= and keep_compression=True exclude each other".into(),
            )))
        }
        (Some(spec), false) => {
            OutputCompression::Fixed(CompressionSettings::parse(&spec).map_err(to_py_err)?)
        }
        (None, true) => OutputCompression::Keep,
        (None, false) => OutputCompression::FirstInput,
    };
    let options = MergeOptions {
        mode,
        compression,
        name,
        allow_disjoint,
    };
    let (s, output_bytes) = py
        .detach(|| {
            if !rntuple::io::is_object_layout(&output) {
                return merge_files(
                    &inputs,
                    std::path::Path::new(&output),
                    &options,
                    overwrite,
                    |_| {},
                )
                .map(|s| (s, None));
            }
            // A dataset of objects (ROOT's S3 layout, `URL[:NAME]`): pages copied as
            // objects, the anchor written last, the dataset replaced then.
            let (s, written) = rntuple::merge::merge_to_dataset_url(
                &inputs,
                &output,
                &options,
                overwrite,
                |_| {},
            )?;
            Ok((s, Some(written.bytes)))
        })
        .map_err(to_py_err)?;
    Ok((
        s.inputs,
        s.entries,
        s.clusters,
        s.pages_copied,
        s.pages_resealed,
        s.zero_pages,
        s.bytes_read,
        s.bytes_written,
        s.compression,
        (
            s.fields_added,
            s.fields_dropped,
            s.attribute_sets_dropped,
            s.inputs_lacking
                .into_iter()
                .map(|g| (g.input, g.entries, g.fields))
                .collect(),
            s.fields_converted,
        ),
        output_bytes,
    ))
}

/// A requested type as Python gives it: a C++ type name or a dict of members.
fn read_as_to_py<'py>(py: Python<'py>, read_as: &ReadAs) -> PyResult<Bound<'py, PyAny>> {
    Ok(match read_as {
        ReadAs::Type(name) => name.into_pyobject(py)?.into_any(),
        ReadAs::Record(members) => {
            let d = PyDict::new(py);
            for (name, m) in members {
                d.set_item(name, read_as_to_py(py, m)?)?;
            }
            d.into_any()
        }
        ReadAs::AsOnDisk => py.None().into_bound(py),
    })
}

/// The type that reads field `path` of every one of `readers` alike (see
/// `rntuple::read::unification`): a C++ type name or a dict of members, as `types=`
/// takes, and the files whose values it may not all hold, as dicts (`field`, `file`,
/// `from`, `to`).
#[pyfunction]
fn unify_field<'py>(
    py: Python<'py>,
    readers: Vec<PyRef<'py, Reader>>,
    path: &str,
) -> PyResult<(Bound<'py, PyAny>, Vec<Bound<'py, PyDict>>)> {
    let files: Vec<String> = readers.iter().map(|r| r.file_name()).collect();
    let mut fields = Vec::with_capacity(readers.len());
    for (r, file) in readers.iter().zip(&files) {
        let descriptor = r.reader.descriptor();
        let id = descriptor
            .find_field(path)
            .ok_or_else(|| to_py_err(Error::NotFound(format!("{file}: no field \"{path}\""))))?;
        fields.push(rntuple::read::FieldOf {
            descriptor,
            id,
            file,
        });
    }
    if fields.is_empty() {
        return Err(to_py_err(Error::InvalidArgument(
            "unify_field of no file".into(),
        )));
    }
    let unified = rntuple::read::unification(&fields).map_err(to_py_err)?;
    let inexact = unified
        .inexact
        .iter()
        .map(|n| {
            let d = PyDict::new(py);
            d.set_item("field", &n.field)?;
            d.set_item("file", &n.file)?;
            d.set_item("from", &n.from)?;
            d.set_item("to", &n.to)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok((read_as_to_py(py, &unified.read_as)?, inexact))
}

/// The types fields are read as (`types=` of Python's reads), parsed once.
#[pyclass(module = "rntuple._core", frozen)]
pub(crate) struct ReadTypesHandle {
    pub(crate) types: ReadTypes,
}

/// A requested type from Python: a C++ type name, or a dict of members.
fn read_as_of(value: &Bound<'_, PyAny>, path: &str) -> PyResult<ReadAs> {
    if value.is_none() {
        return Ok(ReadAs::AsOnDisk);
    }
    if let Ok(text) = value.extract::<String>() {
        return Ok(ReadAs::Type(text));
    }
    if let Ok(members) = value.cast::<PyDict>() {
        let mut out = Vec::with_capacity(members.len());
        for (k, v) in members.iter() {
            let name: String = k.extract().map_err(|_| {
                to_py_err(Error::InvalidArgument(format!(
                    "types[{path:?}]: member names must be strings"
                )))
            })?;
            let member = read_as_of(&v, &format!("{path}.{name}"))?;
            out.push((name, member));
        }
        return Ok(ReadAs::Record(out));
    }
    Err(to_py_err(Error::InvalidArgument(format!(
        "types[{path:?}] must be a C++ type name or a dict of members, not {}",
        value.get_type().name()?
    ))))
}

/// A default value from Python.
fn default_of(value: &Bound<'_, PyAny>, path: &str) -> PyResult<DefaultValue> {
    if let Ok(b) = value.cast::<pyo3::types::PyBool>() {
        return Ok(DefaultValue::Bool(b.is_true()));
    }
    if let Ok(i) = value.extract::<i128>() {
        return Ok(DefaultValue::Int(i));
    }
    if let Ok(x) = value.extract::<f64>() {
        return Ok(DefaultValue::Float(x));
    }
    if let Ok(text) = value.extract::<String>() {
        return Ok(DefaultValue::Text(text));
    }
    Err(to_py_err(Error::InvalidArgument(format!(
        "defaults[{path:?}] must be a bool, an int, a float or a str, not {}",
        value.get_type().name()?
    ))))
}

/// Parses `types=` (field path -> C++ type name or dict of members), `on_overflow=`
/// (`"raise"` or `"mask"`) and `defaults=` (added member path -> value).
#[pyfunction]
#[pyo3(signature = (types, on_overflow="raise", defaults=None))]
fn read_types(
    types: &Bound<'_, PyDict>,
    on_overflow: &str,
    defaults: Option<&Bound<'_, PyDict>>,
) -> PyResult<ReadTypesHandle> {
    let mut out = ReadTypes::new();
    out = out.on_overflow(match on_overflow {
        "raise" => OnOverflow::Raise,
        "mask" => OnOverflow::Mask,
        other => {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "on_overflow={other:?}: expected \"raise\" or \"mask\""
            ))))
        }
    });
    for (k, v) in types.iter() {
        let path: String = k.extract().map_err(|_| {
            to_py_err(Error::InvalidArgument(
                "types: field names must be strings".into(),
            ))
        })?;
        let read_as = read_as_of(&v, &path)?;
        out = out.with_type(path, read_as);
    }
    if let Some(defaults) = defaults {
        for (k, v) in defaults.iter() {
            let path: String = k.extract().map_err(|_| {
                to_py_err(Error::InvalidArgument(
                    "defaults: member paths must be strings".into(),
                ))
            })?;
            let value = default_of(&v, &path)?;
            out = out.with_default(path, value);
        }
    }
    Ok(ReadTypesHandle { types: out })
}

/// Splits a `TARGET[:NAME]` spec into the file or URL and the RNTuple's name, by the
/// command line's rule (`rntuple::io::split_target`): the whole spec if it exists
/// locally; in a URL, only a colon after the start of its path begins a NAME.
#[pyfunction]
fn split_target(target: &str) -> (String, Option<String>) {
    rntuple::io::split_target(target)
}

/// Whether `location` names an RNTuple stored as objects (`ntpl+s3+http(s)://`,
/// `ntpl+file://`: ROOT's S3 layout) rather than a file.
#[pyfunction]
fn is_object_layout(location: &str) -> bool {
    rntuple::io::is_object_layout(location)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RootFileHandle>()?;
    m.add_class::<Reader>()?;
    m.add_class::<BatchIterator>()?;
    m.add_class::<ReadTypesHandle>()?;
    m.add_function(wrap_pyfunction!(unify_field, m)?)?;
    m.add_function(wrap_pyfunction!(read_types, m)?)?;
    m.add_class::<FileWriterHandle>()?;
    m.add_class::<ObjectWriterHandle>()?;
    m.add_function(wrap_pyfunction!(is_object_layout, m)?)?;
    m.add_function(wrap_pyfunction!(split_target, m)?)?;
    m.add_class::<ParallelWriterHandle>()?;
    m.add_class::<FillContextHandle>()?;
    m.add_class::<inspect::InspectionHandle>()?;
    m.add_class::<join::ReaderChainHandle>()?;
    m.add_class::<join::KeyIndexHandle>()?;
    m.add_class::<join::MatchesHandle>()?;
    m.add_function(wrap_pyfunction!(cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(default_cache_dir, m)?)?;
    m.add_function(wrap_pyfunction!(convert_ttree, m)?)?;
    m.add_function(wrap_pyfunction!(merge_rntuples, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
