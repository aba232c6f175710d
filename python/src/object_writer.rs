//! `ObjectWriterHandle`: an RNTuple written as objects (ROOT's S3 layout).

use crate::errors::to_py_err;
use crate::write_options::{
    arrow_stream, rntuple_schema, typed_stream, write_stream, WriteOptionsHandle,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rntuple::write::{RNTupleWriter, WriteOptions};
use rntuple::Error;
use rntuple_io::SourceOptions;
use std::sync::{Arc, Mutex, PoisonError};

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
pub(crate) struct ObjectWriterHandle {
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
    /// Writes to the dataset of objects at `url`, with `options`.
    #[new]
    fn new(url: String, options: PyRef<'_, WriteOptionsHandle>) -> PyResult<Self> {
        // `URL[:NAME]`, as the command line splits it; the URL checked strictly before
        // anything is created.
        let (url, name) = rntuple_io::split_target(&url);
        if !rntuple_io::is_object_layout(&url) {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "{url} is not an object-store URL (ntpl+s3+https://HOST/BUCKET/PREFIX, \
                 ntpl+file:///DIR/PREFIX)"
            ))));
        }
        rntuple_io::check_layout_url(&url).map_err(to_py_err)?;
        let options = options.options.clone();
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
        let (mut stream, schema, type_names) = typed_stream(data, types)?;
        let options = self.options.clone();
        let url = self.url.clone();
        let (writer, sink, entries) = py
            .detach(move || -> rntuple::Result<_> {
                let schema = rntuple_schema(&schema, &type_names, &options)?;
                let dataset =
                    rntuple_io::ObjectDataset::open(&url, &SourceOptions::current()?, true)?;
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
        let mut stream = arrow_stream(data)?;
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
