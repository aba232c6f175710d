//! `FileWriterHandle`: a ROOT file being written, RNTuples created and extended from
//! Arrow streams.

use crate::errors::to_py_err;
use crate::write_options::{
    arrow_stream, rntuple_schema, typed_stream, write_stream, WriteOptionsHandle,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rntuple::container::FileWriter;
use rntuple::write::{SharedFile, WriteOptions};
use rntuple::Error;
use rntuple_io::AtomicFile;

/// The file being written and the RNTuples written into it, filled in turns.
type SharedRootFile = SharedFile<AtomicFile>;

/// A ROOT file being written: RNTuples are created from Arrow streams, extended with
/// more entries, and completed (anchors, keys list, streamer info) on `close`.
#[pyclass(module = "rntuple._core")]
pub(crate) struct FileWriterHandle {
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

#[pymethods]
impl FileWriterHandle {
    /// Creates (or truncates) the ROOT file at `path`, written with `options`.
    #[new]
    fn new(path: String, options: PyRef<'_, WriteOptionsHandle>) -> PyResult<Self> {
        let options = options.options.clone();
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
        let (mut stream, schema, type_names) = typed_stream(data, types)?;
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
        let mut stream = arrow_stream(data)?;
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
