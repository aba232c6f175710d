//! The reading side of a merge: each input opened in turn (the next in the background),
//! its schema matched to the output's, and its clusters sent to the writing side.

use super::cluster_copy::{cluster_pages, copied_bytes, read_pages, ClusterPlan};
use super::schema_match::{extra_schema, match_schemas, names, OutputSchema};
use super::{
    first_compression, open_input, Begin, InputGap, MergeMode, MergeOptions, MergeProgress,
    MergeSummary, OutputCompression, Step, DEFAULT_COMPRESSION,
};
use crate::compression::CompressionSettings;
use crate::error::{Error, Location, Result};
use crate::io::SourceOptions;
use crate::read::source::BufferPool;
use crate::read::RNTupleReader;
use crate::write::{schema_for_page_copy, WriteOptions};
use std::collections::BTreeSet;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

/// The reading side: opens each input, matches its schema, and sends its clusters.
pub(super) fn produce(
    inputs: &[String],
    options: &MergeOptions,
    tx: &SyncSender<Result<Step>>,
    pool: &Arc<BufferPool>,
    summary: &mut MergeSummary,
) -> Result<()> {
    let mut side = ReadingSide {
        options,
        tx,
        output: None,
        compression: DEFAULT_COMPRESSION,
        checksums: true,
        max_page_bytes: 1u64 << 20,
        entries: 0,
        dropped: BTreeSet::new(),
        input_fields: Vec::new(),
        attribute_sets: BTreeSet::new(),
    };
    // The next input is opened in the background while this one is merged: with remote
    // inputs, its round trips overlap the work instead of adding to it.
    let mut opening = inputs
        .first()
        .map(|t| open_in_background(t.clone(), options.read_settings.clone()));
    for (i, target) in inputs.iter().enumerate() {
        let reader = match opening.take() {
            Some(opened) => opened.wait()?,
            None => open_input(target, options.read_settings.as_ref())?,
        };
        opening = inputs
            .get(i + 1)
            .map(|t| open_in_background(t.clone(), options.read_settings.clone()));
        let desc = reader.descriptor();
        side.attribute_sets
            .extend(desc.attribute_sets.iter().map(|a| a.name.clone()));
        if side.output.is_none() {
            side.begin(&reader, summary)?;
        }
        let input = Input {
            index: i,
            total: inputs.len(),
            target,
            reader: &reader,
        };
        let column_of = side.match_input(&input, summary)?;
        side.send_clusters(&input, &column_of, pool, summary)?;
        summary.inputs += 1;
    }
    side.finish(summary);
    Ok(())
}

/// One input as the reading side merges it.
struct Input<'a> {
    /// Its position among the inputs, from 0.
    index: usize,
    /// The number of inputs.
    total: usize,
    /// How it was named (`FILE[:NAME]`).
    target: &'a str,
    reader: &'a RNTupleReader,
}

impl Input<'_> {
    /// An invalid-argument error said of this input.
    fn error(&self, e: Error) -> Error {
        match e {
            Error::InvalidArgument(m) => Error::InvalidArgument(format!(
                "merging input {} ({}): {m}",
                self.index + 1,
                self.target
            )),
            other => other,
        }
    }
}

/// What the reading side carries from one input to the next.
struct ReadingSide<'a> {
    options: &'a MergeOptions,
    tx: &'a SyncSender<Result<Step>>,
    /// The output's schema, once the first input gave it.
    output: Option<OutputSchema>,
    compression: u32,
    checksums: bool,
    max_page_bytes: u64,
    /// Entries sent so far.
    entries: u64,
    /// Fields of inputs left out (mode `Filter`).
    dropped: BTreeSet<String>,
    /// Per input: its name, entries and top-level field names.
    input_fields: Vec<(String, u64, Vec<String>)>,
    attribute_sets: BTreeSet<String>,
}

/// The error of a send whose receiver is gone.
fn gone() -> Error {
    Error::InvalidArgument("merge: the writing side stopped".into())
}

impl ReadingSide<'_> {
    /// Takes the output's schema, compression and name from the first input, and sends
    /// them to the writing side.
    fn begin(&mut self, reader: &RNTupleReader, summary: &mut MergeSummary) -> Result<()> {
        let (header, extension) = schema_for_page_copy(reader.descriptor())?;
        self.compression = match self.options.compression {
            OutputCompression::Fixed(c) => c.as_u32(),
            _ => first_compression(reader),
        };
        let write = WriteOptions::default()
            .with_compression(CompressionSettings::from_u32(self.compression)?);
        self.checksums = write.page_checksums();
        self.max_page_bytes = write.page_size();
        let name = self
            .options
            .name
            .clone()
            .unwrap_or_else(|| reader.path().to_string());
        self.output = Some(OutputSchema::new(header.clone(), extension.clone())?);
        self.tx
            .send(Ok(Step::Begin(Box::new(Begin {
                name,
                header,
                extension,
                options: write,
            }))))
            .map_err(|_| gone())?;
        summary.compression = self.compression;
        Ok(())
    }

    /// Matches the input's schema to the output's, adds or drops the fields the output
    /// lacks as the mode says, and returns per output column the input column filling it.
    fn match_input(
        &mut self,
        input: &Input<'_>,
        summary: &mut MergeSummary,
    ) -> Result<Vec<Option<u32>>> {
        let options = self.options;
        let desc = input.reader.descriptor();
        let out = self
            .output
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("merge: no output schema".into()))?;
        let matched =
            match_schemas(&out.descriptor, desc, options.mode).map_err(|e| input.error(e))?;
        let shared = desc
            .top_level
            .iter()
            .any(|&f| out.descriptor.find_field(desc.field(f).name()).is_some());
        if input.index > 0 && !shared && options.mode == MergeMode::Union && !options.allow_disjoint
        {
            return Err(input.error(Error::InvalidArgument(format!(
                "it shares no field with the inputs before it (it has {}; they have {}): a union would fill every entry with zeros for the fields of the other side; pass --allow-disjoint to merge it all the same",
                names(desc, &desc.top_level),
                names(&out.descriptor, &out.descriptor.top_level)
            ))));
        }
        self.input_fields.push((
            input.target.to_string(),
            desc.n_entries,
            desc.top_level
                .iter()
                .map(|&f| desc.field(f).name().to_string())
                .collect::<Vec<String>>(),
        ));
        if !matched.extra.is_empty() {
            match options.mode {
                MergeMode::Filter => {
                    self.dropped
                        .extend(matched.extra.iter().map(|&f| desc.qualified_name(f)));
                }
                MergeMode::Strict => {
                    return Err(input.error(Error::InvalidArgument(format!(
                        "fields the first input lacks (mode strict): {}",
                        names(desc, &matched.extra)
                    ))));
                }
                MergeMode::Union => {
                    let extra = extra_schema(desc, &matched.extra).map_err(|e| input.error(e))?;
                    summary
                        .fields_added
                        .extend(matched.extra.iter().map(|&f| desc.qualified_name(f)));
                    out.extend(extra.clone(), self.entries)?;
                    self.tx.send(Ok(Step::Extend(extra))).map_err(|_| gone())?;
                }
            }
        }
        // Output column → input column, now that the output has the input's fields.
        Ok(match_schemas(&out.descriptor, desc, options.mode)
            .map_err(|e| input.error(e))?
            .columns)
    }

    /// Builds each cluster of the input as an output cluster (pages copied, sealed again
    /// or made) and sends it to the writing side.
    fn send_clusters(
        &mut self,
        input: &Input<'_>,
        column_of: &[Option<u32>],
        pool: &Arc<BufferPool>,
        summary: &mut MergeSummary,
    ) -> Result<()> {
        let reader = input.reader;
        let desc = reader.descriptor();
        let out = self
            .output
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("merge: no output schema".into()))?;
        let source = reader.source().clone();
        let max_key_size = reader.anchor().max_key_size;
        let n_clusters = desc.clusters.len();
        // From a remote input, every cluster's pages planned up front and fetched ahead
        // (vectored requests, small clusters together); a local one is read as it goes.
        let ahead = reader.prefetch_pages(&cluster_pages(desc, column_of));
        for (k, cluster) in desc.clusters.iter().enumerate() {
            let plan = ClusterPlan {
                out,
                input: desc,
                column_of,
                first_input: input.index == 0,
                entries_before: self.entries,
                n_entries: cluster.n_entries,
                keep_compression: self.options.compression == OutputCompression::Keep,
                compression: self.compression,
                checksums: self.checksums,
                max_page_bytes: self.max_page_bytes,
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
                        file: Some(input.target.to_string()),
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
            self.entries += cluster.n_entries;
            let at = MergeProgress {
                inputs_done: input.index,
                inputs_total: input.total,
                input_fraction: (k + 1) as f64 / n_clusters as f64,
                entries: self.entries,
            };
            self.tx
                .send(Ok(Step::Cluster(stored, at)))
                .map_err(|_| gone())?;
        }
        Ok(())
    }

    /// Records in `summary` the fields dropped, the inputs that lacked output fields and
    /// the attribute sets left out.
    fn finish(self, summary: &mut MergeSummary) {
        summary.fields_dropped = self.dropped.into_iter().collect();
        if let Some(out) = &self.output {
            let d = &out.descriptor;
            for (input, entries, fields) in self.input_fields {
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
        summary.attribute_sets_dropped = self.attribute_sets.into_iter().collect();
    }
}

/// An input being opened on a thread of its own, and its settings.
pub(super) struct Opening(
    Result<std::thread::JoinHandle<Result<RNTupleReader>>>,
    String,
    Option<SourceOptions>,
);

/// Starts opening the input `target` (`FILE[:NAME]`) with `settings` (`None`: the
/// process's) in the background.
pub(super) fn open_in_background(target: String, settings: Option<SourceOptions>) -> Opening {
    let thread = std::thread::Builder::new()
        .name("rntuple-merge-open".into())
        .spawn({
            let (target, settings) = (target.clone(), settings.clone());
            move || open_input(&target, settings.as_ref())
        })
        .map_err(|e| {
            Error::Io(crate::io::Error::Io {
                what: format!("{target} (starting a thread to open it)"),
                source: e,
            })
        });
    Opening(thread, target, settings)
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
            Err(_) => open_input(&self.1, self.2.as_ref()),
        }
    }
}
