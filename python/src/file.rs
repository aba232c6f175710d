//! `RootFileHandle`: an open ROOT file, or an RNTuple stored as objects, and the rules
//! that tell the two apart.

use crate::errors::{objects_open_err, to_py_err};
use crate::network;
use crate::reader::Reader;
use pyo3::prelude::*;
use rntuple::container::RootFile;
use rntuple::read::RNTupleReader;
use rntuple::Error;
use rntuple_io::{open_source_with, SourceOptions};
use std::sync::Arc;

/// An open ROOT file: lists its RNTuples and opens them. Or an RNTuple stored as
/// objects (`ntpl+s3+http(s)://host/bucket/prefix`, `ntpl+file:///dir/prefix`: ROOT's
/// S3 layout), which holds one RNTuple and acts as a file holding only it.
#[pyclass(module = "rntuple._core", frozen)]
pub(crate) struct RootFileHandle {
    opened: Opened,
}

/// What a [`RootFileHandle`] holds.
enum Opened {
    /// A ROOT file, and the settings its RNTuples are read with.
    File(RootFile, Box<SourceOptions>),
    /// A dataset of objects, opened (its anchor, header, footer and page lists read),
    /// and the URL it was opened with.
    Objects {
        url: String,
        reader: Arc<RNTupleReader>,
    },
    /// A DAOS container (`daos://POOL/CONTAINER`: ROOT's DAOS layout, in the directory
    /// store of [`SourceOptions::daos_dir`]), whose RNTuples are opened by name, and the
    /// settings they are read with.
    Daos(String, Box<SourceOptions>),
}

#[pymethods]
impl RootFileHandle {
    /// Opens the ROOT file at `path` (a path or URL), or the RNTuple stored as objects
    /// at an object-store URL, or the DAOS container at a `daos://POOL/CONTAINER` URI.
    /// `network` sets some of the network options of a remote file (`connect_timeout`,
    /// `first_byte_timeout`, `idle_timeout`, `speed_time` in seconds, `speed_limit` in
    /// bytes a second, `retries`, `bunch_bytes`, `read_ahead_bytes`), `cache` the cache
    /// of remote reads (see `with_cache`; files only), `settings` the others
    /// (`direct_io`, `huge_pages`, `daos_dir`, `daos_mapping`: see
    /// `network::with_settings`); what none sets is the environment's (`RNTUPLE_*`), else
    /// the default.
    #[new]
    #[pyo3(signature = (path, network=None, cache=None, settings=None))]
    fn new(
        py: Python<'_>,
        path: String,
        network: Option<std::collections::HashMap<String, f64>>,
        cache: Option<std::collections::HashMap<String, String>>,
        settings: Option<std::collections::HashMap<String, String>>,
    ) -> PyResult<Self> {
        let options = network::read_settings(network, cache, settings).map_err(to_py_err)?;
        if rntuple_io::is_daos(&path) {
            // The URI and the store checked now, as a file is opened now.
            rntuple_io::open_daos_uri_in(&path, options.daos_dir.clone(), false)
                .map_err(|e| to_py_err(Error::from(e)))?;
            return Ok(RootFileHandle {
                opened: Opened::Daos(path, Box::new(options)),
            });
        }
        if rntuple_io::is_object_layout(&path) {
            let reader = py
                .detach(|| {
                    RNTupleReader::open_objects_url(&path, None, &options)
                        .map(|reader| reader.with_settings(&options))
                })
                .map_err(|e| objects_open_err(&path, e))?;
            return Ok(RootFileHandle {
                opened: Opened::Objects {
                    url: path,
                    reader: Arc::new(reader),
                },
            });
        }
        let file = py
            .detach(|| {
                open_source_with(&path, &options)
                    .map_err(Error::from)
                    .and_then(RootFile::open)
            })
            .map_err(to_py_err)?;
        Ok(RootFileHandle {
            opened: Opened::File(file, Box::new(options)),
        })
    }

    /// The file's name as given when opening.
    #[getter]
    fn name(&self) -> String {
        match &self.opened {
            Opened::File(file, _) => file.source().name().to_string(),
            Opened::Objects { url, .. } | Opened::Daos(url, _) => url.clone(),
        }
    }

    /// Every RNTuple in the file (also in sub-directories) by path, as `dir/name`; a
    /// dataset of objects has one, its RNTuple's name; a DAOS container lists none (its
    /// RNTuples are found by name only).
    fn rntuple_paths(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        match &self.opened {
            Opened::File(file, _) => py
                .detach(|| file.rntuple_anchors())
                .map(|keys| keys.into_iter().map(|k| k.path).collect())
                .map_err(to_py_err),
            Opened::Objects { reader, .. } => Ok(vec![reader.path().to_string()]),
            Opened::Daos(..) => Ok(Vec::new()),
        }
    }

    /// Opens the RNTuple at `path` (or the only one, for `None`).
    #[pyo3(signature = (path=None))]
    fn open_rntuple(&self, py: Python<'_>, path: Option<String>) -> PyResult<Reader> {
        match &self.opened {
            Opened::File(file, options) => {
                let reader = py
                    .detach(|| {
                        RNTupleReader::open(file, path.as_deref())
                            .map(|reader| reader.with_settings(options))
                    })
                    .map_err(to_py_err)?;
                Ok(Reader::new(Arc::new(reader), None))
            }
            Opened::Daos(uri, options) => {
                let reader = py
                    .detach(|| RNTupleReader::open_daos_uri_with(uri, path.as_deref(), options))
                    .map_err(to_py_err)?;
                Ok(Reader::new(Arc::new(reader), Some(uri.clone())))
            }
            Opened::Objects { url, reader } => {
                let stored = reader.path();
                match path.as_deref().map(|p| p.trim_matches('/')) {
                    Some(p) if !p.is_empty() && p != stored => Err(to_py_err(Error::NotFound(
                        format!("{url}: no RNTuple \"{p}\": the dataset holds one, \"{stored}\""),
                    ))),
                    _ => Ok(Reader::new(reader.clone(), Some(url.clone()))),
                }
            }
        }
    }
}

/// Splits a `TARGET[:NAME]` spec into the file or URL and the RNTuple's name, by the
/// command line's rule (`rntuple_io::split_target`): the whole spec if it exists
/// locally; in a URL, only a colon after the start of its path begins a NAME.
#[pyfunction]
pub(crate) fn split_target(target: &str) -> (String, Option<String>) {
    rntuple_io::split_target(target)
}

/// Whether `location` names an RNTuple stored as objects (`ntpl+s3+http(s)://`,
/// `ntpl+file://`: ROOT's S3 layout) rather than a file.
#[pyfunction]
pub(crate) fn is_object_layout(location: &str) -> bool {
    rntuple_io::is_object_layout(location)
}
