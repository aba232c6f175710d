//! Merging RNTuples, as ROOT's `RNTupleMerger` (and `hadd`) does: the output holds the
//! entries of every input in order, with the first input's schema.
//!
//! **Schema.** The output's header is the first input's (its schema extension stays an
//! extension, its deferred columns keep their first elements). Every other input's
//! fields are matched to the output's by name, recursively, and must agree on what ROOT
//! compares: projection and its source, type name, type checksum (when both have one),
//! type version, structural role, repetitions, the number of columns, and per column its
//! type (or its split/unsplit twin), bits on storage and value range. Then the
//! [`MergeMode`] decides about fields one side lacks: `Filter` drops an input's extra
//! fields, `Strict` refuses them, `Union` adds them to the output by late model
//! extension; an output field an input lacks is an error, except with `Union`, where
//! that input's entries read as zeros (empty collections, default values).
//!
//! **Pages.** Clusters are kept as they are, one output cluster per input cluster.
//! Where a column's encoding and compression match the output's, its pages are copied
//! byte for byte with their checksums, each checksum verified first (ROOT's "L1"); where
//! only the compression differs a page is decompressed and compressed again ("L2"); a
//! split/unsplit twin is decoded and encoded again ("L3"). Zero pages fill columns an
//! input lacks.
//!
//! **Memory.** Inputs are opened one after the other (one input's metadata in memory at
//! a time), and one thread reads and checks the next cluster's pages while the caller's
//! thread writes the previous one: at most three input clusters' pages are in memory
//! (the one read, the one handed over, the one written), plus read buffers of up to
//! 64 MiB kept for reuse (the reader's pool, at most 256 MiB), whatever the number of
//! inputs.

mod cluster_copy;
mod converting;
mod copy;
mod inputs;
mod schema_match;

pub use copy::{copy_rntuple, source_compression};

use converting::{merge_converting, unified_types};
use inputs::produce;

use crate::compression::CompressionSettings;
use crate::container::FileWriter;
use crate::error::{Error, Result};
use crate::format::SchemaDescription;
use crate::io::{split_target, SourceOptions};
use crate::read::source::BufferPool;
use crate::read::RNTupleReader;
use crate::write::RNTupleOutput;
use crate::write::{PageCopyWriter, StoredCluster, WriteOptions};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

/// ROOT's compression when a merge has nothing to take it from (hadd's default).
const DEFAULT_COMPRESSION: u32 = 505;

/// What to do with fields that the inputs do not all have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MergeMode {
    /// The output has the first input's fields; an input's extra fields are dropped, a
    /// missing one is an error (ROOT's default).
    #[default]
    Filter,
    /// Every input has exactly the first input's fields.
    Strict,
    /// The output has every field of every input: fields first seen in a later input
    /// are added by late model extension, and the entries of inputs that lack a field
    /// read as zeros.
    Union,
}

impl std::str::FromStr for MergeMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "filter" => Ok(MergeMode::Filter),
            "strict" => Ok(MergeMode::Strict),
            "union" => Ok(MergeMode::Union),
            _ => Err(Error::InvalidArgument(format!(
                "merge mode \"{s}\": expected filter, union or strict"
            ))),
        }
    }
}

/// How the output's pages are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputCompression {
    /// As the first input's first column range (hadd's `-ff`): inputs compressed alike
    /// are copied page by page. ROOT's 505 if the first input has no pages.
    #[default]
    FirstInput,
    /// These settings; pages compressed otherwise are compressed again.
    Fixed(CompressionSettings),
    /// Every page keeps its input's compression (nothing is recompressed); the output's
    /// column ranges may then differ in compression.
    Keep,
}

/// How to merge.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// Fields the inputs do not all have.
    pub mode: MergeMode,
    /// The output's page compression.
    pub compression: OutputCompression,
    /// The output RNTuple's name (default: the first input's, with its directory).
    pub name: Option<String>,
    /// With `Union`, merge an input that shares no top-level field with the inputs
    /// before it (by default an error: every entry would hold zeros for half the
    /// fields).
    pub allow_disjoint: bool,
    /// The settings the inputs (and an output in a store) are opened with (`None`: the
    /// process's, [`SourceOptions::current`]).
    pub read_settings: Option<SourceOptions>,
}

/// An input that lacks fields of the output (`Union`): its entries hold zeros there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputGap {
    /// The input, as given.
    pub input: String,
    /// Its entries.
    pub entries: u64,
    /// The output's top-level fields it lacks.
    pub fields: Vec<String>,
}

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeSummary {
    /// Inputs merged.
    pub inputs: usize,
    /// Entries written.
    pub entries: u64,
    /// Clusters written.
    pub clusters: u64,
    /// Pages copied byte for byte (their checksums verified).
    pub pages_copied: u64,
    /// Pages decompressed and compressed again, or decoded and encoded again.
    pub pages_resealed: u64,
    /// Pages of zeros written for columns an input lacks.
    pub zero_pages: u64,
    /// Stored page bytes read from the inputs.
    pub bytes_read: u64,
    /// Stored page bytes written.
    pub bytes_written: u64,
    /// The output's compression settings (of its first column range).
    pub compression: u32,
    /// Fields added by late model extension (`Union`), by qualified name.
    pub fields_added: Vec<String>,
    /// Fields of later inputs left out (`Filter`), by qualified name.
    pub fields_dropped: Vec<String>,
    /// The inputs that lack fields of the output (`Union`), in input order.
    pub inputs_lacking: Vec<InputGap>,
    /// Attribute sets of the inputs that were not merged (as ROOT, which does not merge
    /// them either).
    pub attribute_sets_dropped: Vec<String>,
    /// Top-level fields whose types differ between inputs, each with the type every
    /// input was read as: the merge then decodes every value and writes it again.
    pub fields_converted: Vec<(String, String)>,
}

/// Where a merge stands, for a progress display.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MergeProgress {
    /// Inputs finished.
    pub inputs_done: usize,
    /// Inputs in all.
    pub inputs_total: usize,
    /// The fraction of the current input's clusters written.
    pub input_fraction: f64,
    /// Entries written.
    pub entries: u64,
}

/// The first input's compression: of its first listed column range, else ROOT's default.
fn first_compression(reader: &RNTupleReader) -> u32 {
    source_compression(reader).unwrap_or(DEFAULT_COMPRESSION)
}

/// Opens an input `FILE[:NAME]` with `settings` (`None`: the process's).
fn open_input(target: &str, settings: Option<&SourceOptions>) -> Result<RNTupleReader> {
    let (file, name) = split_target(target);
    match settings {
        Some(settings) => RNTupleReader::open_path_with(&file, name.as_deref(), settings),
        None => RNTupleReader::open_path(&file, name.as_deref()),
    }
}

/// Merges `inputs` (each `FILE[:NAME]`, a path or URL) into a new file `output`, written
/// atomically (it appears only once complete; an existing one is replaced only with
/// `replace`). `progress` is called after every cluster.
pub fn merge_files(
    inputs: &[String],
    output: &Path,
    options: &MergeOptions,
    replace: bool,
    progress: impl FnMut(MergeProgress),
) -> Result<MergeSummary> {
    use crate::io::{ensure_distinct, AtomicFile, Existing};
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("merge: no inputs".into()));
    }
    let files: Vec<String> = inputs.iter().map(|t| split_target(t).0).collect();
    let file_refs: Vec<&str> = files.iter().map(String::as_str).collect();
    ensure_distinct(output, &file_refs)?;
    if !replace {
        crate::io::refuse_existing(output)?;
    }
    let compression = match options.compression {
        OutputCompression::Fixed(c) => c,
        OutputCompression::FirstInput | OutputCompression::Keep => CompressionSettings::from_u32(
            first_compression(&open_input(&inputs[0], options.read_settings.as_ref())?),
        )?,
    };
    let existing = if replace {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let mut out = FileWriter::create_atomic(AtomicFile::create(output, existing)?, compression)?;
    let summary = merge_into(inputs, &mut out, options, progress)?;
    out.finish()?;
    Ok(summary)
}

/// Merges `inputs` (each `FILE[:NAME]`) into a new dataset of objects (ROOT's S3 layout,
/// [`ObjectSink`](crate::write::ObjectSink)): pages are copied as stored, each an object; the anchor is written
/// last. An existing dataset is replaced only with `replace`; a merge that fails removes
/// what it stored and leaves no anchor. One input copies an RNTuple between a file and
/// an object store without recompressing.
pub fn merge_to_dataset(
    inputs: &[String],
    dataset: crate::io::ObjectDataset,
    options: &MergeOptions,
    replace: bool,
    progress: impl FnMut(MergeProgress),
) -> Result<(MergeSummary, crate::write::ObjectWriteSummary)> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("merge: no inputs".into()));
    }
    let mut sink = crate::write::ObjectSink::create(dataset, replace)?;
    let summary = merge_into(inputs, &mut sink, options, progress)?;
    let written = sink.summary()?;
    Ok((summary, written))
}

/// [`merge_to_dataset`] into the dataset `target` names: an object-store URL, with
/// `:NAME` naming the RNTuple written (as `options.name`, with which it must agree).
/// The URL is checked (strictly, [`crate::io::check_layout_url`]) and an input that is
/// the output refused, before anything is read or created.
pub fn merge_to_dataset_url(
    inputs: &[String],
    target: &str,
    options: &MergeOptions,
    replace: bool,
    progress: impl FnMut(MergeProgress),
) -> Result<(MergeSummary, crate::write::ObjectWriteSummary)> {
    let named: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let (dataset, name) = crate::write::open_object_target(
        target,
        options.name.as_deref(),
        &named,
        options.read_settings.as_ref(),
    )?;
    let options = MergeOptions {
        name,
        ..options.clone()
    };
    merge_to_dataset(inputs, dataset, &options, replace, progress)
}

/// Merges `inputs` (each `FILE[:NAME]`) into a new RNTuple of a DAOS container in
/// ROOT's DAOS layout ([`crate::write::DaosSink`], `mapping`: ROOT main's object per page
/// or ROOT 6.40's object per cluster): pages are copied as stored, page lists and footer
/// written again with DAOS locators (compressed as the output's pages), the anchor last.
/// The RNTuple is named `name`, else `options.name`, else after the first input; an
/// RNTuple of that name in the container is replaced only with `replace`. A merge that
/// fails leaves no anchor. One input copies an RNTuple between a file (or any store) and
/// DAOS without recompressing.
pub fn merge_to_daos(
    inputs: &[String],
    container: crate::io::DaosContainer,
    name: Option<&str>,
    mapping: crate::format::DaosPageMapping,
    options: &MergeOptions,
    replace: bool,
    progress: impl FnMut(MergeProgress),
) -> Result<(MergeSummary, crate::write::DaosWriteSummary)> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("merge: no inputs".into()));
    }
    let mut options = options.clone();
    if let Some(name) = name {
        options.name = Some(name.to_string());
    }
    if let Some(name) = &options.name {
        // The header holds the name after the last slash (a file's directories).
        if name.is_empty() || name.contains('/') {
            return Err(Error::InvalidArgument(format!(
                "\"{name}\" cannot name an RNTuple in a DAOS container (not empty, no '/')"
            )));
        }
    }
    let compression = match options.compression {
        OutputCompression::Fixed(c) => c,
        OutputCompression::FirstInput | OutputCompression::Keep => CompressionSettings::from_u32(
            first_compression(&open_input(&inputs[0], options.read_settings.as_ref())?),
        )?,
    };
    let mut sink = crate::write::DaosSink::new(
        container,
        crate::write::DaosSinkOptions {
            mapping,
            compression,
            replace,
            find_replaced: Some(crate::read::daos_extent),
            ..Default::default()
        },
    );
    if let Some(name) = &options.name {
        sink.check_absent(name)?;
    }
    let summary = merge_into(inputs, &mut sink, &options, progress)?;
    let written = sink.summaries().last().cloned();
    let written = written
        .ok_or_else(|| Error::InvalidArgument("merge: the DAOS sink wrote no RNTuple".into()))?;
    Ok((summary, written))
}

/// The output's name, schema and write options.
struct Begin {
    name: String,
    header: SchemaDescription,
    extension: SchemaDescription,
    options: WriteOptions,
}

/// One step of a merge, from the thread that reads the inputs to the one that writes.
enum Step {
    /// The output's schema and name (before anything else).
    Begin(Box<Begin>),
    /// Fields to add by late model extension.
    Extend(SchemaDescription),
    /// A cluster to write, and the progress once it is written.
    Cluster(StoredCluster, MergeProgress),
}

/// Merges `inputs` (each `FILE[:NAME]`) into `file`, as an RNTuple named after the first
/// input's (or `options.name`), and writes its anchor.
pub fn merge_into<O: RNTupleOutput>(
    inputs: &[String],
    file: &mut O,
    options: &MergeOptions,
    mut progress: impl FnMut(MergeProgress),
) -> Result<MergeSummary> {
    // Fields whose types differ between inputs: every value read as the one type that
    // reads them all, and written again (pages cannot be copied).
    if let Some(converting) = unified_types(inputs, options)? {
        return merge_converting(inputs, file, options, &converting, &mut progress);
    }
    // Read buffers the writing side gives back (by dropping the pages) once written.
    let pool = Arc::new(BufferPool::default());
    std::thread::scope(|scope| {
        let (tx, rx) = sync_channel::<Result<Step>>(1);
        let pool = &pool;
        let producer = scope.spawn(move || {
            let mut summary = MergeSummary::default();
            if let Err(e) = produce(inputs, options, &tx, pool, &mut summary) {
                // The writer may be gone already (it failed): nobody listens then.
                let _ = tx.send(Err(e));
            }
            summary
        });
        let written = consume(rx, file, &mut progress);
        let summary = producer
            .join()
            .map_err(|_| Error::InvalidArgument("the merge's reading thread panicked".into()))?;
        let (entries, clusters, bytes_written) = written?;
        Ok(MergeSummary {
            entries,
            clusters,
            bytes_written,
            ..summary
        })
    })
}

/// The writing side: applies the steps in order; returns entries, clusters and page
/// bytes written.
fn consume<O: RNTupleOutput>(
    rx: Receiver<Result<Step>>,
    file: &mut O,
    progress: &mut impl FnMut(MergeProgress),
) -> Result<(u64, u64, u64)> {
    let mut writer: Option<(PageCopyWriter<&mut O>, String)> = None;
    let (mut clusters, mut bytes) = (0u64, 0u64);
    let not_begun = || Error::InvalidArgument("merge: a step before the output's schema".into());
    for step in rx {
        match step? {
            Step::Begin(begin) => {
                let Begin {
                    name,
                    header,
                    extension,
                    options,
                } = *begin;
                // The anchor's path may hold directories; the header holds the name.
                let base = name.rsplit('/').next().unwrap_or(&name).to_string();
                writer = Some((
                    PageCopyWriter::new(&mut *file, &base, header, extension, options)?,
                    name,
                ));
            }
            Step::Extend(extra) => {
                writer
                    .as_mut()
                    .ok_or_else(not_begun)?
                    .0
                    .extend_schema(extra)?;
            }
            Step::Cluster(cluster, at) => {
                let (w, _) = writer.as_mut().ok_or_else(not_begun)?;
                w.write_cluster(&cluster)?;
                clusters += 1;
                bytes += cluster
                    .columns
                    .iter()
                    .flat_map(|c| &c.pages)
                    .map(|p| p.bytes.as_slice().len() as u64)
                    .sum::<u64>();
                progress(at);
            }
        }
    }
    let (w, name) = writer.ok_or_else(not_begun)?;
    let entries = w.num_entries();
    let anchor = w.finish()?;
    file.write_rntuple_anchor(&name, &anchor)?;
    Ok((entries, clusters, bytes))
}
