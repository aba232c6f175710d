//! `ParallelWriterHandle` and `FillContextHandle`: one RNTuple filled from several
//! threads.

use crate::errors::to_py_err;
use crate::write_options::{
    arrow_stream, rntuple_schema, type_overrides, write_stream, WriteOptionsHandle,
};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::Schema;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rntuple::write::{FillContext, ParallelWriter};
use rntuple::Error;
use rntuple_io::AtomicFile;

/// One RNTuple filled from several threads (`ParallelWriter`): each thread fills through
/// a fill context of its own; the file appears at its path only on `close`.
#[pyclass(module = "rntuple._core")]
pub(crate) struct ParallelWriterHandle {
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
    /// `std::optional`); `types` maps top-level field names to C++ type names; written
    /// with `options`.
    #[new]
    #[pyo3(signature = (path, name, schema, options, types=None))]
    fn new(
        py: Python<'_>,
        path: String,
        name: String,
        schema: &Bound<'_, PyAny>,
        options: PyRef<'_, WriteOptionsHandle>,
        types: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let options = options.options.clone();
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
pub(crate) struct FillContextHandle {
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
        let mut stream = arrow_stream(data)?;
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
