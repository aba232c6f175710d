//! The entries a command reads: the RNTuple opened, the `--entries` range and the
//! `--fields` selection, and the batches read cluster by cluster.

use super::Failure;
use arrow_array::RecordBatch;
use rntuple::read::{Projection, RNTupleReader};
use rntuple_io::split_target;

/// The `--fields` and `--entries` of a command that reads entries (`dump`, `show`,
/// `read-bench`).
#[derive(clap::Args)]
pub(crate) struct Selection {
    /// Comma-separated fields (default: all): names, dotted paths (`a.b`, `Jet._0.pt`)
    /// and glob patterns (`'Jet_*'`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) fields: Option<Vec<String>>,
    /// Entry range START:STOP (either may be omitted; STOP is exclusive).
    #[arg(long)]
    pub(crate) entries: Option<String>,
}

/// Parses `START:STOP` against `n` entries.
pub(crate) fn parse_entries(spec: &str, n: u64) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = spec
        .split_once(':')
        .ok_or_else(|| format!("--entries takes START:STOP, got \"{spec}\""))?;
    let parse = |s: &str, default: u64| -> Result<u64, String> {
        if s.is_empty() {
            Ok(default)
        } else {
            s.parse::<u64>()
                .map_err(|_| format!("--entries: \"{s}\" is not a whole number"))
        }
    };
    let start = parse(a, 0)?;
    let stop = parse(b, n)?;
    if start > n {
        return Err(format!(
            "--entries {spec} starts past the end: the RNTuple has {n} entries (0:{n})"
        ));
    }
    if start > stop {
        return Err(format!(
            "--entries {spec}: start {start} is after stop {stop}"
        ));
    }
    // A stop past the end reads to the end, as a slice does.
    Ok(start..stop.min(n))
}

/// Opens the RNTuple of `FILE[:NAME]` (its warnings on standard error) and the entry
/// range `--entries` selects (all entries without it).
pub(crate) fn open_entries(
    target: &str,
    entries: Option<&str>,
) -> Result<(RNTupleReader, std::ops::Range<u64>), Failure> {
    let (file, name) = split_target(target);
    let reader = RNTupleReader::open_path(&file, name.as_deref())?;
    for w in &reader.descriptor().warnings {
        eprintln!("warning: {}", rntuple::error::printable(w));
    }
    let n = reader.num_entries();
    let range = match entries {
        Some(spec) => parse_entries(spec, n).map_err(Failure::Usage)?,
        None => 0..n,
    };
    Ok((reader, range))
}

/// The fields `--fields` names (names, dotted paths and glob patterns), each once; all
/// without it.
pub(crate) fn selected(
    reader: &RNTupleReader,
    fields: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, Failure> {
    Ok(fields.map(|f| reader.resolve_fields(&f)).transpose()?)
}

/// Reads `projection` over `range` cluster by cluster and hands each cluster's batch to
/// `each` as it comes, so memory stays bounded (from a remote source the pages of the
/// next clusters are fetched meanwhile); a progress bar counts the entries on standard
/// error.
pub(crate) fn for_each_batch(
    reader: &RNTupleReader,
    projection: &Projection,
    range: std::ops::Range<u64>,
    mut each: impl FnMut(&RecordBatch) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let ranges: Vec<std::ops::Range<u64>> = reader
        .descriptor()
        .clusters
        .iter()
        .map(|c| range.start.max(c.first_entry)..range.end.min(c.first_entry + c.n_entries))
        .filter(|r| r.start < r.end)
        .collect();
    let batches = reader.read_projection_ranges(projection, ranges)?;
    let bar = super::output::progress(range.end - range.start, true);
    for batch in batches {
        let batch = batch?;
        each(&batch)?;
        bar.inc(batch.num_rows() as u64);
    }
    bar.finish_and_clear();
    Ok(())
}
