//! `rntuple._core`: the Python extension module over the Rust library. It hands Arrow
//! data to and from pyarrow through the Arrow C data interface (no copies), releases the
//! GIL while reading, decoding and writing, and turns library errors into the exception
//! classes of `rntuple.errors`. The pure-Python package builds the user API on top.
//!
//! One module per thing bound: opening files (`file`), reading an RNTuple (`reader`),
//! the types of a read (`read_types`), the writers (`write_options`, `file_writer`,
//! `object_writer`, `parallel_writer`), the tools (`ttree`, `merge`, `inspect`, `join`),
//! the cache, metadata and network options; `errors` maps the library's errors.

use pyo3::prelude::*;

mod cache;
mod errors;
mod file;
mod file_writer;
mod inspect;
mod join;
mod merge;
mod metadata;
mod network;
mod object_writer;
mod parallel_writer;
mod read_types;
mod reader;
mod ttree;
mod write_options;

/// The `rntuple._core` module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<file::RootFileHandle>()?;
    m.add_class::<reader::Reader>()?;
    m.add_class::<reader::BatchIterator>()?;
    m.add_class::<reader::FieldPath>()?;
    m.add_class::<read_types::ReadTypesHandle>()?;
    m.add_class::<read_types::UnifiedField>()?;
    m.add_function(wrap_pyfunction!(read_types::unify_field, m)?)?;
    m.add_function(wrap_pyfunction!(read_types::read_types, m)?)?;
    m.add_class::<write_options::WriteOptionsHandle>()?;
    m.add_class::<file_writer::FileWriterHandle>()?;
    m.add_class::<object_writer::ObjectWriterHandle>()?;
    m.add_function(wrap_pyfunction!(file::is_object_layout, m)?)?;
    m.add_function(wrap_pyfunction!(file::split_target, m)?)?;
    m.add_class::<parallel_writer::ParallelWriterHandle>()?;
    m.add_class::<parallel_writer::FillContextHandle>()?;
    m.add_class::<inspect::InspectionHandle>()?;
    m.add_class::<join::ReaderChainHandle>()?;
    m.add_class::<join::KeyIndexHandle>()?;
    m.add_class::<join::MatchesHandle>()?;
    m.add_function(wrap_pyfunction!(cache::cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(cache::default_cache_dir, m)?)?;
    m.add_class::<ttree::TreeConversion>()?;
    m.add_function(wrap_pyfunction!(ttree::convert_ttree, m)?)?;
    m.add_class::<merge::MergeSummary>()?;
    m.add_function(wrap_pyfunction!(merge::merge_rntuples, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
