//! `rntuple._core.Inspection`: the storage of an RNTuple (`rntuple::inspect`) for
//! the Python package's `RNTuple.inspect()`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rntuple::inspect::{By, Cell, Histogram, Inspection, SortKey, Summary};

/// The storage of an RNTuple: per field, column and column type, the whole-RNTuple
/// figures and the pages' compressed sizes.
#[pyclass(module = "rntuple._core", frozen)]
pub(crate) struct InspectionHandle {
    inspection: Inspection,
}

impl InspectionHandle {
    /// Wraps an inspection.
    pub(crate) fn new(inspection: Inspection) -> Self {
        InspectionHandle { inspection }
    }
}

/// A table cell as a Python value: text as `str`, counts as `int`, no value as `None`,
/// the rest as `float`.
fn cell_object<'py>(py: Python<'py>, cell: &Cell) -> PyResult<Bound<'py, PyAny>> {
    Ok(match cell {
        Cell::Text(s) => s.into_pyobject(py)?.into_any(),
        Cell::Count(n) => n.into_pyobject(py)?.into_any(),
        Cell::Empty => py.None().into_bound(py),
        other => other.number().unwrap_or(0.0).into_pyobject(py)?.into_any(),
    })
}

/// A histogram as a dict: `low`, `high`, `counts`, `underflow`, `overflow`.
fn histogram_dict<'py>(py: Python<'py>, h: &Histogram) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("low", h.low)?;
    d.set_item("high", h.high)?;
    d.set_item("counts", h.counts.clone())?;
    d.set_item("underflow", h.underflow)?;
    d.set_item("overflow", h.overflow)?;
    Ok(d)
}

#[pymethods]
impl InspectionHandle {
    /// The whole-RNTuple figures by name (entries, pages, data, header, footer and
    /// page-list bytes, file size, ...).
    fn figures<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, cell) in self.inspection.figures() {
            d.set_item(name, cell_object(py, &cell)?)?;
        }
        Ok(d)
    }

    /// The table per `by` ("field", "column" or "type") as a dict of column lists,
    /// sorted by `sort` (one of `SortKey::NAMES`) and with `top` only its first rows
    /// and one summing the rest (`Inspection::arranged_table`).
    #[pyo3(signature = (by, sort=None, top=None))]
    fn table<'py>(
        &self,
        py: Python<'py>,
        by: &str,
        sort: Option<&str>,
        top: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let by = By::from_name(by).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "by must be \"field\", \"column\" or \"type\", not {by:?}"
            ))
        })?;
        let sort = match sort {
            None => None,
            Some(name) => Some(SortKey::from_name(name).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "sort must be one of {}, not {name:?}",
                    SortKey::NAMES.join(", ")
                ))
            })?),
        };
        let table = self.inspection.arranged_table(by, sort, top);
        let d = PyDict::new(py);
        for (k, column) in table.columns.iter().enumerate() {
            let values = PyList::empty(py);
            for row in table.rows.iter().chain(table.rest.iter().map(|r| &r.cells)) {
                if let Some(cell) = row.get(k) {
                    values.append(cell_object(py, cell)?)?;
                }
            }
            d.set_item(column.name, values)?;
        }
        Ok(d)
    }

    /// Every page's physical column id and compressed size, column by column.
    fn page_sizes(&self) -> (Vec<u32>, Vec<u64>) {
        self.inspection
            .columns
            .iter()
            .flat_map(|c| c.page_sizes.iter().map(move |&s| (c.id, s)))
            .unzip()
    }

    /// The pages of `columns` (all for `None`) over `bins` bins as ROOT's
    /// `RNTupleInspector::GetPageSizeDistribution` bins them.
    #[pyo3(signature = (columns, bins))]
    fn histogram<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<u32>>,
        bins: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let sizes = self.inspection.page_sizes(columns.as_deref());
        histogram_dict(py, &Histogram::root_binning(&sizes, bins))
    }

    /// Per column type, its pages over bins common to all types (ROOT's
    /// `GetPageSizeDistribution()` stack).
    fn type_histograms<'py>(
        &self,
        py: Python<'py>,
        bins: usize,
    ) -> PyResult<Vec<(String, Bound<'py, PyDict>)>> {
        self.inspection
            .type_histograms(bins)
            .iter()
            .map(|(t, h)| Ok((t.clone(), histogram_dict(py, h)?)))
            .collect()
    }

    /// The page sizes of `columns` (all for `None`) summarized: pages, min, max, mean
    /// and the quantiles p10, p25, median, p75, p90.
    #[pyo3(signature = (columns=None))]
    fn summary<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<u32>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let s = Summary::of(&self.inspection.page_sizes(columns.as_deref()));
        let d = PyDict::new(py);
        d.set_item("pages", s.pages)?;
        d.set_item("min", s.min)?;
        d.set_item("max", s.max)?;
        d.set_item("mean", s.mean)?;
        for (name, q) in Summary::QUANTILE_NAMES.iter().zip(&s.quantiles) {
            d.set_item(*name, *q)?;
        }
        Ok(d)
    }
}
