//! `rntuple copy`: an RNTuple decoded and written again into a new file, or its stored
//! pages copied to or from an object store.

use super::Failure;
use rntuple::compression::CompressionSettings;
use rntuple::container::FileWriter;
use rntuple::merge::copy_rntuple;
use rntuple::read::RNTupleReader;
use rntuple::write::WriteOptions;
use rntuple_io::split_target;
use std::io::Write;

/// Copy an RNTuple into a new ROOT file, decoding every value and writing it again
/// with the same schema and column types.
#[derive(clap::Args)]
pub(crate) struct Job {
    /// FILE or FILE:NAME of the source.
    pub(crate) source: String,
    /// The ROOT file to create.
    pub(crate) output: String,
    /// Compression ALG[:LEVEL] (zstd, lz4, zlib, lzma, none) or ROOT's number (505);
    /// default: the source's.
    #[arg(long)]
    pub(crate) compression: Option<String>,
    /// Approximate compressed cluster size in bytes (default 128 MiB, as ROOT): at
    /// least 1, at most 1280 MiB (the maximum uncompressed cluster size).
    #[arg(long)]
    pub(crate) cluster_size: Option<u64>,
    /// Maximum uncompressed page size in bytes (default 1 MiB, as ROOT): at least 8,
    /// at most 1280 MiB.
    #[arg(long)]
    pub(crate) page_size: Option<u64>,
    /// Commit a cluster group every N clusters, so that a killed copy can be
    /// recovered up to the last one (`rntuple recover`); 0: only at the end, as ROOT.
    #[arg(long, default_value_t = rntuple::write::DEFAULT_CHECKPOINT_EVERY)]
    pub(crate) checkpoint_every: u64,
    /// Replace OUTPUT if it exists (it is replaced only once the copy is complete).
    #[arg(long)]
    pub(crate) force: bool,
}

/// Runs `rntuple copy` as `job` says, writing to `out`.
pub(crate) fn run(job: Job, out: &mut impl Write) -> Result<(), Failure> {
    let Job {
        source,
        output,
        compression,
        cluster_size,
        page_size,
        checkpoint_every,
        force,
    } = job;
    let requested = compression
        .map(|spec| {
            CompressionSettings::parse(&spec)
                .map_err(|e| Failure::Usage(format!("--compression: {e}")))
        })
        .transpose()?;
    // The options are checked before anything is opened; the compression follows
    // the source unless asked for.
    let mut options = WriteOptions::builder().checkpoint_every(checkpoint_every);
    if let Some(bytes) = cluster_size {
        options = options.cluster_size(bytes);
    }
    if let Some(bytes) = page_size {
        options = options.page_size(bytes);
    }
    let options = options.build().map_err(|e| Failure::Usage(e.to_string()))?;
    let (file, name) = split_target(&source);
    let stored_as_objects = |p: &str| rntuple_io::is_object_layout(p) || rntuple_io::is_daos(p);
    if stored_as_objects(&output) || stored_as_objects(&file) {
        // Between a file and objects: the stored pages are copied, as a merge of
        // one input copies them (recompressed only if asked).
        if cluster_size.is_some() || page_size.is_some() {
            return Err(Failure::Usage(
                "copy to or from an object store copies the stored pages: \
                 --cluster-size and --page-size need a copy between files"
                    .into(),
            ));
        }
        let merge_options = rntuple::merge::MergeOptions {
            compression: match requested {
                Some(settings) => rntuple::merge::OutputCompression::Fixed(settings),
                None => rntuple::merge::OutputCompression::Keep,
            },
            ..Default::default()
        };
        let started = std::time::Instant::now();
        let summary = super::merge::merge_to(
            std::slice::from_ref(&source),
            &output,
            &merge_options,
            force,
            |_| {},
        )?;
        for set in &summary.attribute_sets_dropped {
            eprintln!(
                "rntuple: warning: attribute set \"{set}\" is not copied (ROOT's object \
                 layout has no attribute sets yet)"
            );
        }
        writeln!(
            out,
            "copied {} entries: {source} -> {output} ({} clusters, pages copied as stored) in {:.2} s",
            summary.entries,
            summary.clusters,
            started.elapsed().as_secs_f64()
        )?;
        return Ok(());
    }
    let atomic = super::output::open_output(&output, &[&file], force)?;
    let reader = RNTupleReader::open_path(&file, name.as_deref())?;
    let compression = match requested {
        Some(settings) => settings,
        None => match rntuple::merge::source_compression(&reader) {
            Some(code) => CompressionSettings::from_u32(code)?,
            None => CompressionSettings::DEFAULT_RNTUPLE,
        },
    };
    let options = options.with_compression(compression);
    let out_name = reader
        .path()
        .rsplit('/')
        .next()
        .unwrap_or("ntuple")
        .to_string();
    let started = std::time::Instant::now();
    let algorithm = compression.to_string();
    let mut out_file = FileWriter::create_atomic(atomic, options.compression())?;
    let bar = super::output::progress(reader.num_entries(), false);
    copy_rntuple(&reader, &mut out_file, &out_name, options, |done| {
        bar.set_position(done)
    })?;
    out_file.finish()?;
    bar.finish_and_clear();
    let mb = |path: &str| std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1e6);
    writeln!(
        out,
        "copied {} entries of RNTuple \"{out_name}\": {source} ({:.1} MB) -> {output} ({:.1} MB, {algorithm}) in {:.2} s",
        reader.num_entries(),
        mb(&file),
        mb(&output),
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}
