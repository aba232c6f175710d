//! What every writer shares: the write options (`WriteOptionsHandle`), the RNTuple
//! schema of an Arrow schema, and writing an Arrow stream in slices.

use crate::errors::to_py_err;
use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rntuple::compression::CompressionSettings;
use rntuple::format::SchemaDescription;
use rntuple::schema::{ColumnDefaults, SchemaBuilder};
use rntuple::write::WriteOptions;
use rntuple::Error;
use std::collections::BTreeMap;

/// Writes every batch of an Arrow stream with `write`; returns the entries written.
pub(crate) fn write_stream(
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

/// The write options of the Python writers, checked once and handed to any of them.
#[pyclass(module = "rntuple._core", frozen)]
pub(crate) struct WriteOptionsHandle {
    pub(crate) options: WriteOptions,
}

#[pymethods]
impl WriteOptionsHandle {
    /// `compression` is `ALG[:LEVEL]` or ROOT's number; sizes in bytes, `None` for
    /// ROOT's defaults; `checkpoint_every` `None` for one cluster group at the end.
    #[new]
    #[pyo3(signature = (compression="zstd:5", cluster_size=None, page_size=None, page_checksums=true, checkpoint_every=Some(rntuple::write::DEFAULT_CHECKPOINT_EVERY)))]
    fn new(
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
        Ok(WriteOptionsHandle { options })
    }
}

/// The core's write options of the Python writers' (see [`WriteOptionsHandle::new`]).
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

/// The Arrow stream of `data` (anything with `__arrow_c_stream__`).
pub(crate) fn arrow_stream(data: &Bound<'_, PyAny>) -> PyResult<ArrowArrayStreamReader> {
    ArrowArrayStreamReader::from_pyarrow_bound(data)
}

/// The Arrow stream of `data`, its schema, and the C++ type names `types` gives to its
/// top-level fields ([`type_overrides`]): what creating an RNTuple from data takes.
pub(crate) fn typed_stream(
    data: &Bound<'_, PyAny>,
    types: Option<&Bound<'_, PyDict>>,
) -> PyResult<(ArrowArrayStreamReader, SchemaRef, BTreeMap<String, String>)> {
    let stream = arrow_stream(data)?;
    let schema = stream.schema();
    let type_names = type_overrides(&schema, types)?;
    Ok((stream, schema, type_names))
}

/// The C++ type names `types` gives to top-level fields, each of which `schema` must have.
pub(crate) fn type_overrides(
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
pub(crate) fn rntuple_schema(
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
