//! `merge_rntuples`: RNTuples merged into a new file or dataset of objects.

use crate::errors::to_py_err;
use pyo3::prelude::*;
use rntuple::compression::CompressionSettings;
use rntuple::Error;
use std::collections::HashMap;

/// Merges RNTuples into a new file (`rntuple merge`), with the GIL released: `inputs`
/// are `FILE` or `FILE:NAME` each; `mode` is filter, strict or union; `compression` an
/// `ALG[:LEVEL]` or ROOT number (default: the first input's); `output` a file or a
/// dataset of objects (`ntpl+s3+https://...`, `ntpl+file://...`: ROOT's S3 layout;
/// `overwrite` replaces an existing one; or a DAOS container, `daos://POOL/CONTAINER`,
/// with `:NAME` naming the RNTuple written, in the store and with the page mapping of
/// `settings`). `network`, `cache` and `settings` are the settings of the inputs and
/// the output, as `RootFileHandle` takes them. Returns a [`MergeSummary`].
#[pyfunction]
#[pyo3(signature = (inputs, output, mode="filter".to_string(), compression=None, keep_compression=false, name=None, overwrite=false, allow_disjoint=false, network=None, cache=None, settings=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge_rntuples(
    py: Python<'_>,
    inputs: Vec<String>,
    output: String,
    mode: String,
    compression: Option<String>,
    keep_compression: bool,
    name: Option<String>,
    overwrite: bool,
    allow_disjoint: bool,
    network: Option<HashMap<String, f64>>,
    cache: Option<HashMap<String, String>>,
    settings: Option<HashMap<String, String>>,
) -> PyResult<MergeSummary> {
    use rntuple::merge::{merge_files, MergeMode, MergeOptions, OutputCompression};
    let read_settings =
        crate::network::read_settings(network, cache, settings).map_err(to_py_err)?;
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
        read_settings: Some(read_settings),
    };
    let (s, output_bytes) = py
        .detach(|| {
            if rntuple_io::is_daos(&output) {
                return merge_to_daos_uri(&inputs, &output, &options, overwrite);
            }
            if !rntuple_io::is_object_layout(&output) {
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
    Ok(MergeSummary {
        inputs: s.inputs,
        entries: s.entries,
        clusters: s.clusters,
        pages_copied: s.pages_copied,
        pages_resealed: s.pages_resealed,
        zero_pages: s.zero_pages,
        bytes_read: s.bytes_read,
        bytes_written: s.bytes_written,
        compression: s.compression,
        fields_added: s.fields_added,
        fields_dropped: s.fields_dropped,
        attribute_sets_dropped: s.attribute_sets_dropped,
        inputs_lacking: s
            .inputs_lacking
            .into_iter()
            .map(|g| (g.input, g.entries, g.fields))
            .collect(),
        fields_converted: s.fields_converted,
        output_bytes,
    })
}

/// Merges `inputs` into the DAOS container `target` names (`daos://POOL/CONTAINER`,
/// `:NAME` naming the RNTuple; `rntuple.merge` checks it against `name=` and the inputs),
/// in the store and with the page mapping of `options.read_settings`; with the bytes
/// written.
fn merge_to_daos_uri(
    inputs: &[String],
    target: &str,
    options: &rntuple::merge::MergeOptions,
    overwrite: bool,
) -> rntuple::Result<(rntuple::merge::MergeSummary, Option<u64>)> {
    let settings = options.read_settings.clone().unwrap_or_default();
    let (uri, name) = rntuple_io::split_target(target);
    let mapping = rntuple::write::daos_mapping(&settings)?;
    let container = rntuple_io::open_daos_uri_in(&uri, settings.daos_dir, true)?;
    let (s, written) = rntuple::merge::merge_to_daos(
        inputs,
        container,
        name.as_deref(),
        mapping,
        options,
        overwrite,
        |_| {},
    )?;
    Ok((s, Some(written.bytes)))
}

/// What [`merge_rntuples`] did (`rntuple.MergeResult` is made of it).
#[pyclass(module = "rntuple._core", frozen, get_all)]
pub(crate) struct MergeSummary {
    /// RNTuples merged.
    inputs: usize,
    /// Entries written.
    entries: u64,
    /// Clusters written.
    clusters: u64,
    /// Pages copied as they were stored.
    pages_copied: u64,
    /// Pages decompressed and compressed again.
    pages_resealed: u64,
    /// Pages of zeros written for fields an input lacks.
    zero_pages: u64,
    /// Bytes read from the inputs.
    bytes_read: u64,
    /// Bytes written.
    bytes_written: u64,
    /// The output's compression settings (ROOT's number).
    compression: u32,
    /// Fields added to the output (union mode).
    fields_added: Vec<String>,
    /// Fields left out of the output (filter mode).
    fields_dropped: Vec<String>,
    /// Attribute sets left out of the output.
    attribute_sets_dropped: Vec<String>,
    /// The inputs lacking fields of the output, as `(input, entries, fields)`.
    inputs_lacking: Vec<(String, u64, Vec<String>)>,
    /// The fields converted to one type, as `(field, type)`.
    fields_converted: Vec<(String, String)>,
    /// The bytes of the objects stored when the output is a dataset of objects, `None`
    /// for a file.
    output_bytes: Option<u64>,
}
