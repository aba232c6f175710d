//! `types=` of Python's reads (the types fields are read as, parsed once) and the
//! type that reads a field of several files alike.

use crate::errors::to_py_err;
use crate::reader::Reader;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rntuple::read::{DefaultValue, OnOverflow, ReadAs, ReadTypes};
use rntuple::Error;

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
pub(crate) fn unify_field<'py>(
    py: Python<'py>,
    readers: Vec<PyRef<'py, Reader>>,
    path: &str,
) -> PyResult<UnifiedField> {
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
    Ok(UnifiedField {
        read_as: read_as_to_py(py, &unified.read_as)?.unbind(),
        inexact: PyList::new(py, inexact)?.unbind(),
    })
}

/// What [`unify_field`] finds for a field of several files.
#[pyclass(module = "rntuple._core", frozen, get_all)]
pub(crate) struct UnifiedField {
    /// The type that reads the field of every file alike: a C++ type name or a dict of
    /// members, as `types=` takes.
    read_as: Py<PyAny>,
    /// The files whose values it may not all hold, as dicts (`field`, `file`, `from`,
    /// `to`).
    inexact: Py<PyList>,
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
pub(crate) fn read_types(
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
