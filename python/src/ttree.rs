//! `convert_ttree`: a TTree converted to an RNTuple, in a file or an object store.

use crate::errors::to_py_err;
use pyo3::prelude::*;
use rntuple::compression::CompressionSettings;
use rntuple::write::WriteOptions;
use rntuple::Error;
use std::collections::HashMap;

/// Converts a TTree to an RNTuple (`rntuple convert`), with the GIL released, into the
/// file or object-store dataset (`URL[:NAME]`) `output`: `input` is
/// `FILE` or `FILE:TREE` (`tree` names the tree otherwise); `entries` is `(start, stop)`,
/// a stop past the end meaning the end; `split_policy` is split, unsplit or auto;
/// `network`, `cache` and `settings` are the settings the input is read with, as
/// `RootFileHandle` takes them. Returns a [`TreeConversion`].
#[pyfunction]
#[pyo3(signature = (input, output, tree=None, name=None, branches=None, entries=None, compression=None, skip_unsupported=false, overwrite=false, unsplit=None, split_policy="split".to_string(), network=None, cache=None, settings=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn convert_ttree(
    py: Python<'_>,
    input: String,
    output: String,
    tree: Option<String>,
    name: Option<String>,
    branches: Option<Vec<String>>,
    entries: Option<(u64, Option<u64>)>,
    compression: Option<String>,
    skip_unsupported: bool,
    overwrite: bool,
    unsplit: Option<Vec<String>>,
    split_policy: String,
    network: Option<HashMap<String, f64>>,
    cache: Option<HashMap<String, String>>,
    settings: Option<HashMap<String, String>>,
) -> PyResult<TreeConversion> {
    let read_settings =
        crate::network::read_settings(network, cache, settings).map_err(to_py_err)?;
    use rntuple::import::SplitPolicy;
    let split_policy = match split_policy.as_str() {
        "split" => SplitPolicy::Split,
        "unsplit" => SplitPolicy::Unsplit,
        "auto" => SplitPolicy::Auto,
        other => {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "split_policy \"{other}\": expected split, unsplit or auto"
            ))))
        }
    };
    let mut write = WriteOptions::builder();
    if let Some(spec) = compression {
        write = write.compression(CompressionSettings::parse(&spec).map_err(to_py_err)?);
    }
    let write = write.build().map_err(to_py_err)?;
    let (file, spec_tree) = rntuple_io::split_target(&input);
    let tree = match (spec_tree, tree) {
        (Some(a), Some(b)) if a != b => {
            return Err(to_py_err(Error::InvalidArgument(format!(
                "the input names TTree \"{a}\" but tree=\"{b}\""
            ))))
        }
        (a, b) => a.or(b),
    };
    let (summary, output_bytes, warning) = py
        .detach(|| -> rntuple::Result<_> {
            // The library converts to the end when the stop lies past it.
            let entries = entries.map(|(start, stop)| (start, stop.unwrap_or(u64::MAX)));
            let options = rntuple::import::ConvertOptions {
                name,
                branches: branches.unwrap_or_default(),
                entries,
                skip_unsupported,
                unsplit: unsplit.unwrap_or_default(),
                split_policy,
                read_settings: Some(read_settings),
            };
            if rntuple_io::is_object_layout(&output) {
                // Into an object store (`URL[:NAME]`): pages and envelopes stored as
                // objects while they are written, the anchor last.
                let (summary, written) = rntuple::import::convert_to_dataset_url(
                    &file,
                    tree.as_deref(),
                    &output,
                    &options,
                    write,
                    overwrite,
                    |_, _| {},
                )?;
                let warning = written.left_objects_warning(&rntuple_io::split_target(&output).0);
                return Ok((summary, Some(written.bytes), warning));
            }
            let summary = rntuple::import::convert_file(
                &file,
                tree.as_deref(),
                std::path::Path::new(&output),
                &options,
                write,
                overwrite,
                |_, _| {},
            )?;
            Ok((summary, None, None))
        })
        .map_err(to_py_err)?;
    let split_choices = summary
        .split_choices
        .into_iter()
        .map(|c| {
            (
                c.branch,
                c.entries,
                c.split_bytes,
                c.unsplit_bytes,
                c.unsplit,
            )
        })
        .collect();
    Ok(TreeConversion {
        entries: summary.entries,
        input_bytes: summary.input_bytes,
        skipped: summary.skipped,
        split_choices,
        output_bytes,
        warning,
    })
}

/// What [`convert_ttree`] did.
#[pyclass(module = "rntuple._core", frozen, get_all)]
pub(crate) struct TreeConversion {
    /// Entries written.
    entries: u64,
    /// Bytes of the TTree's baskets read.
    input_bytes: u64,
    /// Branches left out (`skip_unsupported`), each with the reason.
    skipped: Vec<String>,
    /// Per branch of objects (`split_policy="auto"`): (branch, sample entries, split
    /// bytes, unsplit bytes, stored unsplit).
    split_choices: Vec<(String, u64, u64, u64, bool)>,
    /// Into an object store: the bytes of the objects stored, the anchor included (a
    /// file's size is the file's).
    output_bytes: Option<u64>,
    /// Into an object store: the warning when objects of the dataset replaced were left
    /// (the conversion itself succeeded).
    warning: Option<String>,
}
