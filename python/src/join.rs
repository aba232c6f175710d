//! `rntuple._core.ReaderChain`, `KeyIndex` and `Matches`: the joins of
//! `rntuple::join` for the Python package's `rntuple.join` (and its Dask
//! partitions), the GIL released while key columns and friend fields are read.

use crate::errors::to_py_err;
use crate::read_types::ReadTypesHandle;
use crate::reader::Reader;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::Schema;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rntuple::join::{self, Duplicates, KeyIndex, Matches, ReaderChain};
use rntuple::read::{ReadTypes, RecordPaths};
use std::sync::Arc;

/// Readers read one after another with global entry numbers (a friend chain).
#[pyclass(module = "rntuple._core", name = "ReaderChain", frozen)]
pub(crate) struct ReaderChainHandle {
    chain: ReaderChain,
}

#[pymethods]
impl ReaderChainHandle {
    /// A chain of `readers`, in order; `types`: the types each is read as (one per
    /// reader, None for as on disk), to read files whose types differ as one.
    #[new]
    #[pyo3(signature = (readers, types=None))]
    fn new(
        readers: Vec<PyRef<'_, Reader>>,
        types: Option<Vec<Option<PyRef<'_, ReadTypesHandle>>>>,
    ) -> PyResult<Self> {
        let members = readers.iter().map(|r| r.reader.clone()).collect();
        let mut chain = ReaderChain::new(members).map_err(to_py_err)?;
        if let Some(types) = types {
            let types = types
                .iter()
                .map(|t| t.as_ref().map_or_else(ReadTypes::new, |t| t.types.clone()))
                .collect();
            chain = chain.with_types(types).map_err(to_py_err)?;
        }
        Ok(ReaderChainHandle { chain })
    }

    /// Entries over all members.
    #[getter]
    fn num_entries(&self) -> u64 {
        self.chain.num_entries()
    }

    /// The files and RNTuple names, for messages.
    fn describe(&self) -> String {
        self.chain.describe()
    }

    /// The friend's record column, named `name`, for the primary rows of `matches`: the
    /// fields `fields` (qualified names, paths through records kept as members) of the
    /// matched entries, read from the clusters holding them only; one nullable record
    /// per row, or with `all` a list of records. A `pyarrow.RecordBatch` of that one
    /// column.
    #[pyo3(signature = (fields, matches, all, name))]
    fn friend_column<'py>(
        &self,
        py: Python<'py>,
        fields: Option<Vec<String>>,
        matches: PyRef<'_, MatchesHandle>,
        all: bool,
        name: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let chain = self.chain.clone();
        let matches = matches.matches.clone();
        let batch = py
            .detach(move || -> rntuple::Result<RecordBatch> {
                let rows =
                    chain.gather(fields.as_deref(), RecordPaths::Members, &matches.entries)?;
                let (field, column) = join::friend_column(&rows, &matches, all, &name)?;
                Ok(RecordBatch::try_new(
                    Arc::new(Schema::new(vec![field])),
                    vec![column],
                )?)
            })
            .map_err(to_py_err)?;
        batch.to_pyarrow(py)
    }
}

/// The friend's entries by key tuple, from its key columns only.
#[pyclass(module = "rntuple._core", name = "KeyIndex", frozen)]
pub(crate) struct KeyIndexHandle {
    index: Arc<KeyIndex>,
}

#[pymethods]
impl KeyIndexHandle {
    /// Builds the index of `chain` on `keys` (the GIL released).
    #[new]
    fn new(
        py: Python<'_>,
        chain: PyRef<'_, ReaderChainHandle>,
        keys: Vec<String>,
    ) -> PyResult<Self> {
        let chain = chain.chain.clone();
        let index = py
            .detach(move || KeyIndex::build(&chain, &keys))
            .map_err(to_py_err)?;
        Ok(KeyIndexHandle {
            index: Arc::new(index),
        })
    }

    /// The key names.
    #[getter]
    fn keys(&self) -> Vec<String> {
        self.index.keys().to_vec()
    }

    /// Number of distinct key tuples.
    fn __len__(&self) -> usize {
        self.index.len()
    }

    /// Raises if a key tuple has several entries, naming it and two entries.
    fn check_unique(&self, friend: &str) -> PyResult<()> {
        self.index.check_unique(friend).map_err(to_py_err)
    }

    /// The friend entries each row of the key columns `columns` (pyarrow arrays, in the
    /// index's key order) matches; `duplicates` is `"first"`, `"error"` or `"all"`.
    fn lookup(
        &self,
        py: Python<'_>,
        columns: Vec<Bound<'_, PyAny>>,
        duplicates: &str,
        primary: String,
    ) -> PyResult<MatchesHandle> {
        let duplicates = Duplicates::parse(duplicates).map_err(to_py_err)?;
        let arrays = columns
            .iter()
            .map(|c| arrow_data::ArrayData::from_pyarrow_bound(c).map(arrow_array::make_array))
            .collect::<PyResult<Vec<ArrayRef>>>()?;
        let index = self.index.clone();
        let matches = py
            .detach(move || index.lookup(&arrays, duplicates, &primary))
            .map_err(to_py_err)?;
        Ok(MatchesHandle { matches })
    }

    /// The index as bytes (pickling: built once, shipped to Dask's workers).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.index.to_bytes())
    }

    /// An index from [`KeyIndexHandle::to_bytes`].
    #[staticmethod]
    fn from_bytes(bytes: &[u8]) -> PyResult<Self> {
        Ok(KeyIndexHandle {
            index: Arc::new(KeyIndex::from_bytes(bytes).map_err(to_py_err)?),
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let from_bytes = slf.get_type().getattr("from_bytes")?;
        Ok((from_bytes, (slf.get().to_bytes(slf.py()),)))
    }
}

/// The friend entries each primary row pairs with.
#[pyclass(module = "rntuple._core", name = "Matches", frozen)]
pub(crate) struct MatchesHandle {
    matches: Matches,
}

#[pymethods]
impl MatchesHandle {
    /// An aligned friend of `friend_entries` entries for primary rows of the entry
    /// numbers `entries` (a `pyarrow.UInt64Array`).
    #[staticmethod]
    fn aligned(entries: &Bound<'_, PyAny>, friend_entries: u64) -> PyResult<Self> {
        let data = arrow_data::ArrayData::from_pyarrow_bound(entries)?;
        let array = arrow_array::make_array(data);
        let entries = array
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err("entries must be a pyarrow uint64 array")
            })?;
        Ok(MatchesHandle {
            matches: Matches::aligned_entries(entries.values().iter().copied(), friend_entries),
        })
    }

    /// Number of primary rows.
    #[getter]
    fn rows(&self) -> usize {
        self.matches.rows()
    }

    /// The matched friend entries (a `pyarrow.UInt64Array`).
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        UInt64Array::from(self.matches.entries.clone())
            .into_data()
            .to_pyarrow(py)
    }

    /// Each row's offsets into the entries (a `pyarrow.UInt64Array` of rows + 1).
    fn offsets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        UInt64Array::from(self.matches.offsets.clone())
            .into_data()
            .to_pyarrow(py)
    }

    /// The rows with a match (a `pyarrow.UInt64Array`) and their matches.
    fn inner<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, MatchesHandle)> {
        let (rows, matches) = self.matches.inner();
        Ok((
            UInt64Array::from(rows).into_data().to_pyarrow(py)?,
            MatchesHandle { matches },
        ))
    }
}
