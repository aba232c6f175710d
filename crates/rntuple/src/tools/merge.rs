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
//! (the one read, the one handed over, the one written), plus at most four read buffers
//! of up to 64 MiB kept for reuse, whatever the number of inputs.

use crate::compression::CompressionSettings;
use crate::container::{read_blob, FileWriter};
use crate::encoding::ColumnEncoding;
use crate::error::{Error, Location, Result};
use crate::format::{
    open_page, reseal_page, stored_page_len, zero_page, ColumnPages, FieldRecord, PageInfo,
    SchemaDescription, COLUMN_FLAG_DEFERRED,
};
use crate::io::{split_target, ByteRange};
use crate::read::RNTupleReader;
use crate::schema::{Descriptor, FieldRole};
use crate::write::RNTupleOutput;
use crate::write::{
    extend_schema, schema_for_page_copy, PageBytes, PageCopyWriter, StoredCluster, StoredColumn,
    StoredPage, WriteOptions,
};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// Pages closer than this in a file are read in one request (the gap read with them).
const READ_GAP_BYTES: u64 = 64 << 10;

/// A read of nearby pages is cut at this size.
const MAX_READ_BYTES: u64 = 64 << 20;

/// Read buffers kept for reuse, at most this many (of at most `MAX_READ_BYTES` each).
const POOLED_BUFFERS: usize = 4;

/// Read buffers handed back by the writing side once their pages are written, reused
/// by the reading side: each byte is read into memory the process already has, without
/// the page faults of fresh allocations.
#[derive(Default)]
struct BufferPool {
    free: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl BufferPool {
    /// A buffer of `len` bytes (their content is overwritten by the read).
    fn take(&self, len: usize) -> Vec<u8> {
        let reused = self.free.lock().ok().and_then(|mut free| {
            let best = (0..free.len()).max_by_key(|&i| free[i].capacity())?;
            Some(free.swap_remove(best))
        });
        let mut buf = reused.unwrap_or_default();
        buf.resize(len, 0);
        buf
    }

    /// Takes back the buffers of a written cluster's pages (those nobody else holds).
    fn give_back(&self, cluster: StoredCluster) {
        let mut buffers: Vec<Arc<Vec<u8>>> = Vec::new();
        for page in cluster.columns.into_iter().flat_map(|c| c.pages) {
            if let PageBytes::Shared(buffer, _) = page.bytes {
                if !buffers.iter().any(|b| Arc::ptr_eq(b, &buffer)) {
                    buffers.push(buffer);
                }
            }
        }
        if let Ok(mut free) = self.free.lock() {
            for buffer in buffers {
                if let Ok(mut buffer) = Arc::try_unwrap(buffer) {
                    if free.len() < POOLED_BUFFERS {
                        buffer.clear();
                        free.push(buffer);
                    }
                }
            }
        }
    }
}

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
    reader
        .descriptor()
        .clusters
        .iter()
        .flat_map(|c| c.columns.iter())
        .find_map(|c| c.compression)
        .unwrap_or(DEFAULT_COMPRESSION)
}

/// Opens an input `FILE[:NAME]`.
fn open_input(target: &str) -> Result<RNTupleReader> {
    let (file, name) = split_target(target);
    RNTupleReader::open_path(&file, name.as_deref())
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
        OutputCompression::FirstInput | OutputCompression::Keep => {
            CompressionSettings::from_u32(first_compression(&open_input(&inputs[0])?))?
        }
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
    let (url, target_name) = split_target(target);
    crate::io::check_layout_url(&url)?;
    let mut options = options.clone();
    match (target_name, &options.name) {
        (Some(a), Some(b)) if &a != b => {
            return Err(Error::InvalidArgument(format!(
                "{target} names the RNTuple \"{a}\", the options \"{b}\": give one"
            )))
        }
        (Some(a), _) => options.name = Some(a),
        _ => {}
    }
    if let Some(input) = inputs.iter().find(|i| split_target(i).0 == url) {
        return Err(Error::InvalidArgument(format!(
            "{input} is both an input and the output"
        )));
    }
    let dataset =
        crate::io::ObjectDataset::open(&url, &crate::io::SourceOptions::current()?, true)?;
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
        OutputCompression::FirstInput | OutputCompression::Keep => {
            CompressionSettings::from_u32(first_compression(&open_input(&inputs[0])?))?
        }
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
    let pool = BufferPool::default();
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
        let written = consume(rx, file, pool, &mut progress);
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
    pool: &BufferPool,
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
                pool.give_back(cluster);
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

/// The output's schema as the reading side follows it (the writer keeps its own copy,
/// changed by the same steps).
struct OutputSchema {
    header: crate::format::Header,
    extension: SchemaDescription,
    descriptor: Descriptor,
    /// Per column: its encoding.
    encodings: Vec<ColumnEncoding>,
}

impl OutputSchema {
    fn new(header: SchemaDescription, extension: SchemaDescription) -> Result<Self> {
        let header = crate::format::Header {
            name: String::new(),
            description: String::new(),
            writer: String::new(),
            schema: header,
        };
        let footer = crate::format::Footer {
            extension: extension.clone(),
            ..Default::default()
        };
        let descriptor = Descriptor::build((1, 0, 0, 0), header.clone(), footer, Vec::new())?;
        let mut schema = OutputSchema {
            header,
            extension,
            descriptor,
            encodings: Vec::new(),
        };
        schema.refresh()?;
        Ok(schema)
    }

    fn refresh(&mut self) -> Result<()> {
        self.encodings = (0..self.descriptor.columns.len())
            .map(|c| {
                let id = u32::try_from(c).map_err(|_| Error::InvalidArgument("columns".into()))?;
                self.descriptor.column_encoding(id)
            })
            .collect::<Result<_>>()?;
        Ok(())
    }

    fn extend(&mut self, extra: SchemaDescription, n_entries: u64) -> Result<()> {
        let extended = extend_schema(
            &self.header,
            &self.extension,
            &self.descriptor,
            extra,
            n_entries,
        )?;
        self.extension = extended.extension;
        self.descriptor = extended.descriptor;
        self.refresh()
    }
}

/// The reading side: opens each input, matches its schema, and sends its clusters.
fn produce(
    inputs: &[String],
    options: &MergeOptions,
    tx: &SyncSender<Result<Step>>,
    pool: &BufferPool,
    summary: &mut MergeSummary,
) -> Result<()> {
    let gone = || Error::InvalidArgument("merge: the writing side stopped".into());
    let mut output: Option<OutputSchema> = None;
    let mut compression = DEFAULT_COMPRESSION;
    let mut checksums = true;
    let mut max_page_bytes = 1u64 << 20;
    let mut entries = 0u64;
    let mut dropped = BTreeSet::new();
    // Per input: its name, entries and top-level field names.
    let mut input_fields: Vec<(String, u64, Vec<String>)> = Vec::new();
    let mut attribute_sets = BTreeSet::new();
    // The next input is opened in the background while this one is merged: with remote
    // inputs, its round trips overlap the work instead of adding to it.
    let mut opening = inputs.first().map(|t| open_in_background(t.clone()));
    for (i, target) in inputs.iter().enumerate() {
        let at_input = |e: Error| match e {
            Error::InvalidArgument(m) => {
                Error::InvalidArgument(format!("merging input {} ({target}): {m}", i + 1))
            }
            other => other,
        };
        let reader = match opening.take() {
            Some(opened) => opened.wait()?,
            None => open_input(target)?,
        };
        opening = inputs.get(i + 1).map(|t| open_in_background(t.clone()));
        let desc = reader.descriptor();
        attribute_sets.extend(desc.attribute_sets.iter().map(|a| a.name.clone()));
        if output.is_none() {
            let (header, extension) = schema_for_page_copy(desc)?;
            compression = match options.compression {
                OutputCompression::Fixed(c) => c.as_u32(),
                _ => first_compression(&reader),
            };
            let write = WriteOptions::default()
                .with_compression(CompressionSettings::from_u32(compression)?);
            checksums = write.page_checksums();
            max_page_bytes = write.page_size();
            let name = options
                .name
                .clone()
                .unwrap_or_else(|| reader.path().to_string());
            output = Some(OutputSchema::new(header.clone(), extension.clone())?);
            tx.send(Ok(Step::Begin(Box::new(Begin {
                name,
                header,
                extension,
                options: write,
            }))))
            .map_err(|_| gone())?;
            summary.compression = compression;
        }
        let out = output
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("merge: no output schema".into()))?;
        let matched = match_schemas(&out.descriptor, desc, options.mode).map_err(at_input)?;
        let shared = desc
            .top_level
            .iter()
            .any(|&f| out.descriptor.find_field(desc.field(f).name()).is_some());
        if i > 0 && !shared && options.mode == MergeMode::Union && !options.allow_disjoint {
            return Err(at_input(Error::InvalidArgument(format!(
                "it shares no field with the inputs before it (it has {}; they have {}): a union would fill every entry with zeros for the fields of the other side; pass --allow-disjoint to merge it all the same",
                names(desc, &desc.top_level),
                names(&out.descriptor, &out.descriptor.top_level)
            ))));
        }
        input_fields.push((
            target.clone(),
            desc.n_entries,
            desc.top_level
                .iter()
                .map(|&f| desc.field(f).name().to_string())
                .collect::<Vec<String>>(),
        ));
        if !matched.extra.is_empty() {
            match options.mode {
                MergeMode::Filter => {
                    dropped.extend(matched.extra.iter().map(|&f| desc.qualified_name(f)));
                }
                MergeMode::Strict => {
                    return Err(at_input(Error::InvalidArgument(format!(
                        "fields the first input lacks (mode strict): {}",
                        names(desc, &matched.extra)
                    ))));
                }
                MergeMode::Union => {
                    let extra = extra_schema(desc, &matched.extra).map_err(at_input)?;
                    summary
                        .fields_added
                        .extend(matched.extra.iter().map(|&f| desc.qualified_name(f)));
                    out.extend(extra.clone(), entries)?;
                    tx.send(Ok(Step::Extend(extra))).map_err(|_| gone())?;
                }
            }
        }
        // Output column → input column, now that the output has the input's fields.
        let column_of = match_schemas(&out.descriptor, desc, options.mode)
            .map_err(at_input)?
            .columns;
        let source = reader.source().clone();
        let max_key_size = reader.anchor().max_key_size;
        let n_clusters = desc.clusters.len();
        // From a remote input, every cluster's pages planned up front and fetched ahead
        // (vectored requests, small clusters together); a local one is read as it goes.
        let ahead = reader.prefetch_pages(&cluster_pages(desc, &column_of));
        for (k, cluster) in desc.clusters.iter().enumerate() {
            let plan = ClusterPlan {
                out,
                input: desc,
                column_of: &column_of,
                first_input: i == 0,
                entries_before: entries,
                n_entries: cluster.n_entries,
                keep_compression: options.compression == OutputCompression::Keep,
                compression,
                checksums,
                max_page_bytes,
            };
            let (stored, counts) = plan
                .build(cluster, |pages| match &ahead {
                    Some(ahead) => pages
                        .iter()
                        .map(|p| ahead.page(p).map(copied_bytes))
                        .collect(),
                    None => read_pages(&source, max_key_size, pages, pool),
                })
                .map_err(|e| {
                    e.at(Location {
                        file: Some(target.clone()),
                        rntuple: Some(reader.path().to_string()),
                        cluster: Some(cluster.id),
                        ..Default::default()
                    })
                })?;
            if let Some(ahead) = &ahead {
                ahead.done_with(k);
            }
            summary.pages_copied += counts.copied;
            summary.pages_resealed += counts.resealed;
            summary.zero_pages += counts.zeros;
            summary.bytes_read += counts.bytes_read;
            entries += cluster.n_entries;
            let at = MergeProgress {
                inputs_done: i,
                inputs_total: inputs.len(),
                input_fraction: (k + 1) as f64 / n_clusters as f64,
                entries,
            };
            tx.send(Ok(Step::Cluster(stored, at))).map_err(|_| gone())?;
        }
        summary.inputs += 1;
    }
    summary.fields_dropped = dropped.into_iter().collect();
    if let Some(out) = &output {
        let d = &out.descriptor;
        for (input, entries, fields) in input_fields {
            let lacking: Vec<String> = d
                .top_level
                .iter()
                .map(|&f| d.field(f).name().to_string())
                .filter(|name| !fields.contains(name))
                .collect();
            if !lacking.is_empty() {
                summary.inputs_lacking.push(InputGap {
                    input,
                    entries,
                    fields: lacking,
                });
            }
        }
    }
    summary.attribute_sets_dropped = attribute_sets.into_iter().collect();
    Ok(())
}

/// An input being opened on a thread of its own.
struct Opening(
    Result<std::thread::JoinHandle<Result<RNTupleReader>>>,
    String,
);

/// Starts opening the input `target` (`FILE[:NAME]`) in the background.
fn open_in_background(target: String) -> Opening {
    let thread = std::thread::Builder::new()
        .name("rntuple-merge-open".into())
        .spawn({
            let target = target.clone();
            move || open_input(&target)
        })
        .map_err(|e| Error::Io {
            what: format!("{target} (starting a thread to open it)"),
            source: e,
        });
    Opening(thread, target)
}

impl Opening {
    /// The opened input, or why it could not be opened.
    fn wait(self) -> Result<RNTupleReader> {
        match self.0 {
            Ok(thread) => thread.join().unwrap_or_else(|_| {
                Err(Error::InvalidArgument(format!(
                    "merge: the thread opening {} panicked",
                    self.1
                )))
            }),
            // No thread: open it here.
            Err(_) => open_input(&self.1),
        }
    }
}

/// For every cluster of `input`, the pages of the input columns that `column_of` maps to
/// output columns: what merging the cluster reads.
fn cluster_pages(input: &Descriptor, column_of: &[Option<u32>]) -> Vec<Vec<PageInfo>> {
    input
        .clusters
        .iter()
        .map(|cluster| {
            column_of
                .iter()
                .flatten()
                .filter_map(|&ic| cluster.column(ic))
                .filter(|cp| !cp.is_suppressed())
                .flat_map(|cp| cp.pages.iter().copied())
                .collect()
        })
        .collect()
}

/// A prefetched page's bytes as the page-copying writer takes them (a slice of a fetched
/// range is shared, not copied).
fn copied_bytes(bytes: crate::read::source::PageBytes) -> PageBytes {
    use crate::read::source::PageBytes as Fetched;
    match bytes {
        Fetched::Shared { buffer, start, len } => PageBytes::Shared(buffer, start..start + len),
        Fetched::Owned(bytes) => PageBytes::Owned(bytes),
        Fetched::Pooled(buffer) => PageBytes::Owned(buffer.as_slice().to_vec()),
    }
}

/// The qualified names of `fields`, for messages.
fn names(desc: &Descriptor, fields: &[u32]) -> String {
    fields
        .iter()
        .map(|&f| format!("\"{}\"", desc.qualified_name(f)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How an input's schema meets the output's.
struct Matched {
    /// Per output column, the input column that fills it (`None`: zeros).
    columns: Vec<Option<u32>>,
    /// The input's top-level fields the output lacks.
    extra: Vec<u32>,
}

/// Matches `input`'s fields to `out`'s by name (see the module's rules). An output field
/// the input lacks is an error unless `mode` is `Union`.
fn match_schemas(out: &Descriptor, input: &Descriptor, mode: MergeMode) -> Result<Matched> {
    if let Some(c) = input
        .columns
        .iter()
        .find(|c| c.record.representation_index != 0)
    {
        return Err(Error::Unsupported(format!(
            "field \"{}\" has several column representations (merging copies one)",
            input.qualified_name(c.record.field_id)
        )));
    }
    let by_name = |d: &Descriptor, ids: &[u32]| -> HashMap<String, u32> {
        ids.iter()
            .map(|&id| (d.field(id).name().to_string(), id))
            .collect()
    };
    let input_top = by_name(input, &input.top_level);
    let mut columns = vec![None; out.columns.len()];
    let mut missing = Vec::new();
    for &o in &out.top_level {
        match input_top.get(out.field(o).name()) {
            Some(&i) => match_field(out, o, input, i, &mut columns)?,
            None => missing.push(o),
        }
    }
    if !missing.is_empty() && mode != MergeMode::Union {
        return Err(Error::InvalidArgument(format!(
            "the input lacks fields of the output: {} (mode {}; --mode union fills them with zeros)",
            names(out, &missing),
            match mode {
                MergeMode::Strict => "strict",
                _ => "filter",
            }
        )));
    }
    let out_top = by_name(out, &out.top_level);
    let extra = input
        .top_level
        .iter()
        .copied()
        .filter(|&i| !out_top.contains_key(input.field(i).name()))
        .collect();
    Ok(Matched { columns, extra })
}

/// Checks input field `i` against output field `o` (and their subfields), and records
/// which input column fills each of the output field's columns.
fn match_field(
    out: &Descriptor,
    o: u32,
    input: &Descriptor,
    i: u32,
    columns: &mut [Option<u32>],
) -> Result<()> {
    let (of, inf) = (out.field(o), input.field(i));
    let name = out.qualified_name(o);
    let differ = |what: &str, a: String, b: String| {
        Err(Error::InvalidArgument(format!(
            "field \"{name}\": the {what} differs ({a} in the output, {b} in the input)"
        )))
    };
    let source_name = |d: &Descriptor, f: &FieldRecord| {
        f.source_field_id
            .filter(|&s| (s as usize) < d.fields.len())
            .map(|s| d.qualified_name(s))
    };
    if source_name(out, &of.record) != source_name(input, &inf.record) {
        let show = |s: Option<String>| s.map_or("not projected".into(), |s| format!("from {s}"));
        return differ(
            "projection",
            show(source_name(out, &of.record)),
            show(source_name(input, &inf.record)),
        );
    }
    if of.type_name() != inf.type_name() {
        return differ(
            "type",
            format!("\"{}\"", of.type_name()),
            format!("\"{}\"", inf.type_name()),
        );
    }
    if let (Some(a), Some(b)) = (of.record.type_checksum, inf.record.type_checksum) {
        if a != b {
            return differ("type checksum", a.to_string(), b.to_string());
        }
    }
    if of.record.type_version != inf.record.type_version {
        return differ(
            "type version",
            of.record.type_version.to_string(),
            inf.record.type_version.to_string(),
        );
    }
    if of.role != inf.role {
        return differ(
            "structural role",
            format!("{:?}", of.role),
            format!("{:?}", inf.role),
        );
    }
    if of.record.array_size != inf.record.array_size {
        return differ(
            "repetition count",
            format!("{:?}", of.record.array_size),
            format!("{:?}", inf.record.array_size),
        );
    }
    if !of.is_projected() {
        if of.columns.len() != inf.columns.len() {
            return differ(
                "number of columns",
                of.columns.len().to_string(),
                inf.columns.len().to_string(),
            );
        }
        for (&oc, &ic) in of.columns.iter().zip(&inf.columns) {
            let (a, b) = (out.column_encoding(oc)?, input.column_encoding(ic)?);
            if a.column_type.unsplit() != b.column_type.unsplit() {
                return differ(
                    "column type",
                    a.column_type.to_string(),
                    b.column_type.to_string(),
                );
            }
            if a.bits_on_storage != b.bits_on_storage {
                return differ(
                    "bits on storage",
                    a.bits_on_storage.to_string(),
                    b.bits_on_storage.to_string(),
                );
            }
            if a.value_range != b.value_range {
                return differ(
                    "value range",
                    format!("{:?}", a.value_range),
                    format!("{:?}", b.value_range),
                );
            }
            if let Some(slot) = columns.get_mut(oc as usize) {
                *slot = Some(ic);
            }
        }
    }
    if of.children.len() != inf.children.len() {
        return differ(
            "number of subfields",
            of.children.len().to_string(),
            inf.children.len().to_string(),
        );
    }
    for &oc in &of.children {
        let child = inf
            .children
            .iter()
            .copied()
            .find(|&ic| input.field(ic).name() == out.field(oc).name())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "field \"{name}\": the input has no subfield \"{}\"",
                    out.field(oc).name()
                ))
            })?;
        match_field(out, oc, input, child, columns)?;
    }
    Ok(())
}

/// The schema of `input`'s top-level fields `extra` and their subfields, ids from 0, to
/// add to the output by late model extension.
fn extra_schema(input: &Descriptor, extra: &[u32]) -> Result<SchemaDescription> {
    let mut ids = Vec::new();
    let mut stack: Vec<u32> = extra.to_vec();
    while let Some(id) = stack.pop() {
        ids.push(id);
        stack.extend(&input.field(id).children);
    }
    ids.sort_unstable();
    let new_id: HashMap<u32, u32> = ids
        .iter()
        .enumerate()
        .map(|(n, &id)| u32::try_from(n).map(|n| (id, n)))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::InvalidArgument("too many fields".into()))?;
    let mut schema = SchemaDescription::default();
    for &id in &ids {
        let f = input.field(id);
        if f.role == FieldRole::Streamer {
            return Err(Error::Unsupported(format!(
                "field \"{}\" is a streamer field: its entries cannot be filled for inputs that lack it (mode union)",
                input.qualified_name(id)
            )));
        }
        let mut rec = f.record.clone();
        rec.parent_id = match f.parent {
            Some(p) => new_id[&p],
            None => new_id[&id],
        };
        if let Some(src) = rec.source_field_id {
            rec.source_field_id = Some(*new_id.get(&src).ok_or_else(|| {
                Error::Unsupported(format!(
                    "projected field \"{}\" shows a field of the first input (mode union)",
                    input.qualified_name(id)
                ))
            })?);
        }
        schema.fields.push(rec);
    }
    let mut column_id = HashMap::new();
    for c in &input.columns {
        if let Some(&field) = new_id.get(&c.record.field_id) {
            let mut rec = c.record.clone();
            rec.field_id = field;
            rec.flags &= !COLUMN_FLAG_DEFERRED;
            rec.first_element_index = None;
            column_id.insert(
                c.id,
                u32::try_from(schema.columns.len()).unwrap_or(u32::MAX),
            );
            schema.columns.push(rec);
        }
    }
    for &id in &ids {
        let f = input.field(id);
        if f.is_projected() {
            for physical in &f.columns {
                let physical_column_id = *column_id.get(physical).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "projected field \"{}\" shows a column of the first input (mode union)",
                        input.qualified_name(id)
                    ))
                })?;
                schema.alias_columns.push(crate::format::AliasColumnRecord {
                    physical_column_id,
                    field_id: new_id[&id],
                });
            }
        }
    }
    schema.extra_type_infos = input.extra_type_infos.clone();
    Ok(schema)
}

/// What building a cluster did with its pages.
#[derive(Default)]
struct PageCounts {
    copied: u64,
    resealed: u64,
    zeros: u64,
    bytes_read: u64,
}

/// How one input cluster becomes an output cluster.
struct ClusterPlan<'a> {
    out: &'a OutputSchema,
    input: &'a Descriptor,
    /// Per output column, the input column that fills it.
    column_of: &'a [Option<u32>],
    /// The first input's clusters list the columns it lists (the output's deferred
    /// columns are its own); later inputs' list every output column.
    first_input: bool,
    /// Output entries before this cluster.
    entries_before: u64,
    n_entries: u64,
    keep_compression: bool,
    compression: u32,
    checksums: bool,
    max_page_bytes: u64,
}

/// What fills one output column in a cluster.
struct ColumnJob<'a> {
    /// Zero elements before the input's pages (the input's own deferred column, or a
    /// column the input lacks).
    zeros: u64,
    /// The input's pages and their encoding.
    pages: Option<(&'a ColumnPages, ColumnEncoding)>,
    compression: u32,
}

impl ClusterPlan<'_> {
    /// Elements of output column `c` this cluster must store: those of its entries
    /// (for a column at entry level) past the column's deferred start; `None` when they
    /// depend on the items (inside collections), then as many as the input has.
    fn stored_elements(&self, c: u32) -> Result<Option<u64>> {
        let d = &self.out.descriptor;
        let column = d.column(c);
        let field = column.record.field_id;
        let principal = d.field(field).columns.first() == Some(&c);
        let Some(mult) = d.elements_per_entry(field).filter(|_| principal) else {
            return Ok(None);
        };
        let overflow = || Error::InvalidArgument("merge: element count overflows".into());
        let start = self.entries_before.checked_mul(mult).ok_or_else(overflow)?;
        let end = (self.entries_before + self.n_entries)
            .checked_mul(mult)
            .ok_or_else(overflow)?;
        let deferred_to = column
            .record
            .first_element_index
            .map_or(0, |f| f.unsigned_abs());
        Ok(Some(end.saturating_sub(start.max(deferred_to))))
    }

    /// The output cluster of input cluster `cluster`: every page read (through `read`)
    /// and verified, sealed again where the output's encoding or compression differs,
    /// zeros where the input has no values.
    fn build(
        &self,
        cluster: &crate::schema::ClusterDescriptor,
        read: impl Fn(&[PageInfo]) -> Result<Vec<PageBytes>>,
    ) -> Result<(StoredCluster, PageCounts)> {
        let n_out = self.out.descriptor.columns.len();
        let mut jobs = Vec::with_capacity(n_out);
        let mut listed = 0usize;
        for c in 0..n_out {
            let id = u32::try_from(c).map_err(|_| Error::InvalidArgument("columns".into()))?;
            let input_pages = self.column_of[c].and_then(|ic| {
                let cp = cluster.column(ic)?;
                Some((cp, self.input.column_encoding(ic)))
            });
            let input_pages = match input_pages {
                Some((cp, _)) if cp.is_suppressed() => {
                    return Err(Error::Unsupported(format!(
                        "column {} is suppressed in this cluster (several representations)",
                        self.column_of[c].unwrap_or_default()
                    )))
                }
                Some((cp, enc)) => Some((cp, enc?)),
                None => None,
            };
            let stored = input_pages.map_or(0, |(cp, _)| cp.n_elements());
            let needed = self.stored_elements(id)?;
            let zeros = match needed {
                Some(n) if n < stored => {
                    return Err(Error::corrupt(
                        "page list",
                        format!(
                            "column {} holds {stored} elements, its {} entries need {n}",
                            self.column_of[c].unwrap_or_default(),
                            self.n_entries
                        ),
                    ))
                }
                Some(n) => n - stored,
                None => 0,
            };
            if input_pages.is_some() || zeros > 0 || !self.first_input {
                listed = c + 1;
            }
            let compression = match (self.keep_compression, input_pages) {
                (true, Some((cp, _))) => cp.compression.unwrap_or(self.compression),
                _ => self.compression,
            };
            jobs.push(ColumnJob {
                zeros,
                pages: input_pages,
                compression,
            });
        }
        jobs.truncate(listed);
        // Read every page the cluster takes from the input, nearby ones together.
        let wanted: Vec<PageInfo> = jobs
            .iter()
            .filter_map(|j| j.pages)
            .flat_map(|(cp, _)| cp.pages.iter().copied())
            .collect();
        let mut bytes = read(&wanted)?.into_iter();
        let mut counts = PageCounts {
            bytes_read: wanted.iter().map(stored_page_len).sum(),
            ..PageCounts::default()
        };
        // Then check and (where needed) seal again every page, in parallel.
        let mut tasks = Vec::new();
        for (c, job) in jobs.iter().enumerate() {
            let to = self.out.encodings[c];
            if job.zeros > 0 {
                tasks.push(PageTask::Zeros {
                    column: c,
                    n: job.zeros,
                    encoding: to,
                    compression: job.compression,
                });
            }
            if let Some((cp, from)) = job.pages {
                let same = from == to && cp.compression == Some(job.compression);
                for page in &cp.pages {
                    let stored = bytes.next().ok_or_else(|| {
                        Error::InvalidArgument("merge: a page was not read".into())
                    })?;
                    tasks.push(PageTask::Page {
                        column: c,
                        page: *page,
                        stored,
                        from,
                        to,
                        copy: same,
                        compression: job.compression,
                    });
                }
            }
        }
        let done: Vec<(usize, Vec<StoredPage>, Kind)> = tasks
            .into_par_iter()
            .map(|t| t.run(self.checksums, self.max_page_bytes))
            .collect::<Result<_>>()?;
        let mut columns: Vec<StoredColumn> = jobs
            .iter()
            .map(|j| StoredColumn {
                pages: Vec::new(),
                compression: j.compression,
            })
            .collect();
        for (c, pages, kind) in done {
            let n = pages.len() as u64;
            match kind {
                Kind::Copied => counts.copied += n,
                Kind::Resealed => counts.resealed += n,
                Kind::Zeros => counts.zeros += n,
            }
            columns[c].pages.extend(pages);
        }
        Ok((
            StoredCluster {
                n_entries: self.n_entries,
                columns,
            },
            counts,
        ))
    }
}

/// What became of a page.
#[derive(Clone, Copy)]
enum Kind {
    Copied,
    Resealed,
    Zeros,
}

/// One page's work: check and copy or seal again, or make zero pages.
enum PageTask {
    Page {
        column: usize,
        page: PageInfo,
        stored: PageBytes,
        from: ColumnEncoding,
        to: ColumnEncoding,
        copy: bool,
        compression: u32,
    },
    Zeros {
        column: usize,
        n: u64,
        encoding: ColumnEncoding,
        compression: u32,
    },
}

impl PageTask {
    fn run(self, checksums: bool, max_page_bytes: u64) -> Result<(usize, Vec<StoredPage>, Kind)> {
        match self {
            PageTask::Page {
                column,
                page,
                stored,
                from,
                to,
                copy,
                compression,
            } => {
                let data = open_page(stored.as_slice(), &page, &from)?;
                if copy {
                    let page = StoredPage {
                        n_elements: page.n_elements,
                        has_checksum: page.has_checksum,
                        bytes: stored,
                    };
                    return Ok((column, vec![page], Kind::Copied));
                }
                let settings = CompressionSettings::from_u32(compression)?;
                let sealed = reseal_page(data, &page, &from, &to, settings, checksums)?;
                let page = StoredPage {
                    n_elements: sealed.n_elements,
                    has_checksum: sealed.has_checksum,
                    bytes: PageBytes::Owned(sealed.bytes),
                };
                Ok((column, vec![page], Kind::Resealed))
            }
            PageTask::Zeros {
                column,
                n,
                encoding,
                compression,
            } => {
                let settings = CompressionSettings::from_u32(compression)?;
                let per_page = (max_page_bytes * 8 / u64::from(encoding.bits_on_storage.max(1)))
                    .clamp(1, i32::MAX as u64);
                let mut pages = Vec::new();
                let mut left = n;
                while left > 0 {
                    let k = left.min(per_page);
                    // At most i32::MAX by the clamp above.
                    #[allow(clippy::cast_possible_truncation)]
                    let sealed = zero_page(&encoding, k as u32, settings, checksums)?;
                    pages.push(StoredPage {
                        n_elements: sealed.n_elements,
                        has_checksum: sealed.has_checksum,
                        bytes: PageBytes::Owned(sealed.bytes),
                    });
                    left -= k;
                }
                Ok((column, pages, Kind::Zeros))
            }
        }
    }
}

/// Reads the stored bytes of `pages` (checksums included) from `source`: pages near each
/// other in one request, several requests at once where the source can; a page larger
/// than a key through the keys holding it.
fn read_pages(
    source: &crate::io::Source,
    max_key_size: u64,
    pages: &[PageInfo],
    pool: &BufferPool,
) -> Result<Vec<PageBytes>> {
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by_key(|&k| pages[k].locator.offset);
    // Requests: (range, pages in it).
    let mut ranges: Vec<(ByteRange, Vec<usize>)> = Vec::new();
    let mut big = Vec::new();
    for k in order {
        let (offset, len) = (pages[k].locator.offset, stored_page_len(&pages[k]));
        if len > max_key_size {
            big.push(k);
            continue;
        }
        let end = offset.checked_add(len).ok_or_else(|| {
            Error::corrupt("page list", format!("page at {offset} ends past 2^64"))
        })?;
        match ranges.last_mut() {
            Some((r, members))
                if offset >= r.offset
                    && offset <= r.offset + r.len + READ_GAP_BYTES
                    && end.max(r.offset + r.len) - r.offset <= MAX_READ_BYTES =>
            {
                r.len = end.max(r.offset + r.len) - r.offset;
                members.push(k);
            }
            _ => ranges.push((ByteRange { offset, len }, vec![k])),
        }
    }
    let requests: Vec<ByteRange> = ranges.iter().map(|(r, _)| *r).collect();
    let buffers = if source.hints().remote {
        // Remote: the ranges in as few requests as the source can.
        source.read_ranges(&requests)?
    } else {
        requests
            .iter()
            .map(|r| {
                let mut buf = pool.take(usize::try_from(r.len).unwrap_or(usize::MAX));
                source
                    .read_at_into(r.offset, &mut buf)
                    .map(|()| buf)
                    .map_err(Error::from)
            })
            .collect::<Result<_>>()?
    };
    let mut out: Vec<Option<PageBytes>> = vec![None; pages.len()];
    for ((range, members), buffer) in ranges.into_iter().zip(buffers) {
        if buffer.len() as u64 != range.len {
            return Err(Error::Truncated {
                what: format!("pages at byte offset {}", range.offset),
                offset: range.offset,
                needed: range.len,
                available: buffer.len() as u64,
            });
        }
        let buffer = Arc::new(buffer);
        for k in members {
            // Inside the range by construction.
            let at = usize::try_from(pages[k].locator.offset - range.offset)
                .map_err(|_| Error::corrupt("page list", "page offset"))?;
            let len = usize::try_from(stored_page_len(&pages[k]))
                .map_err(|_| Error::corrupt("page list", "page size"))?;
            out[k] = Some(PageBytes::Shared(buffer.clone(), at..at + len));
        }
    }
    for k in big {
        let p = &pages[k];
        let bytes = read_blob(
            source.as_ref(),
            p.locator.offset,
            stored_page_len(p),
            max_key_size,
        )?;
        out[k] = Some(PageBytes::Owned(bytes));
    }
    out.into_iter()
        .map(|p| p.ok_or_else(|| Error::InvalidArgument("merge: a page was not read".into())))
        .collect()
}

// --- inputs whose field types differ ---------------------------------------------------------

/// The one type of each field whose types differ between the inputs (by
/// [`crate::read::unify`]), in the output's field order, or `None` when every input's
/// fields are of the same types (pages are then copied). The output's fields are the
/// first input's (`Filter`, `Strict`); a merge that must both convert and fill fields
/// some inputs lack (`Union`) is refused.
fn unified_types(inputs: &[String], options: &MergeOptions) -> Result<Option<Converting>> {
    use crate::read::{unify, FieldOf, ReadAs};
    if inputs.len() < 2 {
        return Ok(None);
    }
    // The type names of the first input's fields in every input, one input open at a
    // time (memory stays bounded whatever the number of inputs).
    let first = open_input(&inputs[0])?;
    let tops: Vec<(String, String)> = first
        .descriptor()
        .top_level
        .iter()
        .map(|&id| {
            let f = first.descriptor().field(id);
            (f.name().to_string(), f.type_name().to_string())
        })
        .collect();
    drop(first);
    let mut differing = BTreeSet::new();
    for target in &inputs[1..] {
        let reader = open_input(target)?;
        let d = reader.descriptor();
        for (name, type_name) in &tops {
            if let Some(id) = d.find_field(name) {
                if d.field(id).type_name() != type_name {
                    differing.insert(name.clone());
                }
            }
        }
    }
    if differing.is_empty() {
        return Ok(None);
    }
    // Types differ: every input's schema, to find the one type of each such field.
    let readers = inputs
        .iter()
        .map(|t| open_input(t))
        .collect::<Result<Vec<_>>>()?;
    let mut converted = Vec::new();
    for name in tops
        .iter()
        .map(|(n, _)| n)
        .filter(|n| differing.contains(*n))
    {
        let fields: Vec<FieldOf<'_>> = readers
            .iter()
            .zip(inputs)
            .filter_map(|(reader, target)| {
                let d = reader.descriptor();
                d.find_field(name).map(|id| FieldOf {
                    descriptor: d,
                    id,
                    file: target,
                })
            })
            .collect();
        match unify(&fields)? {
            ReadAs::Type(t) => converted.push((name.clone(), t)),
            ReadAs::AsOnDisk => {}
            ReadAs::Record(_) => {
                return Err(Error::Unsupported(format!(
                    "merging field \"{name}\": its records have different members in \
                     different inputs, which a merge cannot write as one type"
                )))
            }
        }
    }
    if options.mode == MergeMode::Union {
        return Err(Error::Unsupported(format!(
            "merge --mode union of inputs whose field types differ ({}): merge them with \
             --mode filter or strict, which read every input as one type",
            converted
                .iter()
                .map(|(n, t)| format!("\"{n}\" as {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(Some(Converting {
        readers,
        plan: converted,
    }))
}

/// A merge whose inputs' field types differ: the inputs, opened, and each such field
/// with the type every input is read as.
struct Converting {
    readers: Vec<RNTupleReader>,
    plan: Vec<(String, String)>,
}

/// Merges `inputs` by reading every value (the fields of `converting.plan` as its
/// types) and writing it again: the first input's fields, each input cluster by cluster.
fn merge_converting<O: RNTupleOutput>(
    inputs: &[String],
    file: &mut O,
    options: &MergeOptions,
    converting: &Converting,
    progress: &mut impl FnMut(MergeProgress),
) -> Result<MergeSummary> {
    use crate::read::{ReadAs, ReadTypes, RecordPaths};
    use crate::schema::{ColumnDefaults, SchemaBuilder};
    let (readers, plan) = (&converting.readers, &converting.plan);
    let first = &readers[0];
    let names: Vec<String> = first
        .readable_fields()
        .into_iter()
        .map(|id| first.descriptor().field(id).name().to_string())
        .collect();
    let types = plan.iter().fold(ReadTypes::new(), |t, (n, ty)| {
        t.with_type(n.clone(), ReadAs::Type(ty.clone()))
    });
    let compression = match options.compression {
        OutputCompression::Fixed(c) => c,
        _ => CompressionSettings::from_u32(first_compression(first))?,
    };
    let output = first.projection_as(Some(&names), RecordPaths::Columns, &types)?;
    let mut schema = SchemaBuilder::new(ColumnDefaults { compressed: true });
    for f in output.schema().fields() {
        schema.add_arrow_field(f)?;
    }
    let name = options
        .name
        .clone()
        .unwrap_or_else(|| first.path().to_string());
    let write = WriteOptions::default().with_compression(compression);
    let mut summary = MergeSummary {
        inputs: inputs.len(),
        compression: compression.as_u32(),
        fields_converted: plan.to_vec(),
        ..MergeSummary::default()
    };
    let mut writer = crate::write::RNTupleWriter::new(&mut *file, &name, schema.finish(), write)?;
    for (i, (reader, target)) in readers.iter().zip(inputs).enumerate() {
        let at_input = |e: Error| match e {
            Error::InvalidArgument(m) | Error::NotFound(m) => {
                Error::InvalidArgument(format!("merging input {} ({target}): {m}", i + 1))
            }
            other => other,
        };
        let d = reader.descriptor();
        let extra: Vec<String> = d
            .top_level
            .iter()
            .map(|&f| d.field(f).name().to_string())
            .filter(|n| !names.contains(n))
            .collect();
        if !extra.is_empty() && options.mode == MergeMode::Strict {
            return Err(at_input(Error::InvalidArgument(format!(
                "the input has fields the output lacks: {} (mode strict)",
                extra.join(", ")
            ))));
        }
        summary.fields_dropped.extend(extra);
        let projection = reader
            .projection_as(Some(&names), RecordPaths::Columns, &types)
            .map_err(at_input)?;
        if projection.schema().fields() != output.schema().fields() {
            return Err(at_input(Error::IncompatibleType(
                "its fields read as the merge's types do not give the output's schema".into(),
            )));
        }
        let ranges: Vec<std::ops::Range<u64>> = d
            .clusters
            .iter()
            .map(|c| c.first_entry..c.first_entry + c.n_entries)
            .collect();
        let total = ranges.len().max(1);
        for (k, batch) in reader
            .read_projection_ranges(&projection, ranges)?
            .enumerate()
        {
            let batch = batch?;
            summary.entries += batch.num_rows() as u64;
            writer.write_batch(&batch)?;
            #[allow(clippy::cast_precision_loss)]
            progress(MergeProgress {
                inputs_done: i,
                inputs_total: inputs.len(),
                input_fraction: (k + 1) as f64 / total as f64,
                entries: summary.entries,
            });
        }
        summary.bytes_read += d.compressed_bytes();
    }
    // The last cluster is committed by finish: count it (when it holds entries).
    let open = u64::from(writer.num_entries() > writer.committed_entries());
    summary.clusters = writer.num_clusters() + open;
    let anchor = writer.finish()?;
    file.write_rntuple_anchor(&name, &anchor)?;
    summary.fields_dropped.sort();
    summary.fields_dropped.dedup();
    Ok(summary)
}
