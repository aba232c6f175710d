//! `rntuple merge`: many RNTuples into one file, pages copied where they can be.

use super::Failure;
use rntuple::compression::CompressionSettings;
use rntuple::format::DaosPageMapping;
use rntuple::merge::{
    merge_files, merge_to_daos, merge_to_dataset_url, MergeMode, MergeOptions, MergeProgress,
    MergeSummary, OutputCompression,
};
use rntuple::write::daos_mapping;
use rntuple_io::{
    is_daos, is_object_layout, open_daos_uri_in, split_target, DaosContainer, SourceOptions,
};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Merge RNTuples into one new file, as ROOT's hadd: the entries of every input in
/// order, with the first input's schema; pages are copied byte for byte (checksums
/// verified) where encoding and compression match, compressed again elsewhere.
#[derive(clap::Args)]
pub(crate) struct Job {
    /// The ROOT file to create (or an object-store URL, or a DAOS container
    /// daos://POOL/CONTAINER[:NAME], stored under $RNTUPLE_DAOS_DIR).
    output: String,
    /// The inputs, FILE or FILE:NAME each (paths or URLs).
    #[arg(required = true)]
    inputs: Vec<String>,
    /// Fields the inputs do not all have: filter (drop a later input's extra fields; a
    /// missing one is an error), strict (both are errors), union (add them; inputs
    /// without them read as zeros).
    #[arg(long, default_value = "filter", value_parser = ["filter", "union", "strict"])]
    mode: String,
    /// Compress the output with ALG[:LEVEL] (zstd, lz4, zlib, lzma, none) or ROOT's
    /// number; default: as the first input (pages compressed otherwise are compressed
    /// again).
    #[arg(long, conflicts_with = "keep_compression")]
    compression: Option<String>,
    /// Keep every page's compression (never recompress).
    #[arg(long)]
    keep_compression: bool,
    /// The output RNTuple's name (default: the first input's).
    #[arg(long)]
    name: Option<String>,
    /// With --mode union, merge an input that shares no field with the inputs before it
    /// (refused by default: every entry would hold zeros for the other side's fields).
    #[arg(long)]
    allow_disjoint: bool,
    /// Replace OUTPUT if it exists (it is replaced only once the merge is complete).
    #[arg(long)]
    force: bool,
}

impl Job {
    /// The inputs, FILE or FILE:NAME each.
    pub(crate) fn inputs(&self) -> &[String] {
        &self.inputs
    }
}

/// Merges the inputs, with a progress bar on a terminal and a summary when done.
pub(crate) fn run(job: Job, out: &mut impl Write) -> Result<(), Failure> {
    let mode: MergeMode = job
        .mode
        .parse()
        .map_err(|e: rntuple::Error| Failure::Usage(e.to_string()))?;
    let compression = match (job.compression, job.keep_compression) {
        (Some(spec), false) => OutputCompression::Fixed(
            CompressionSettings::parse(&spec)
                .map_err(|e| Failure::Usage(format!("--compression: {e}")))?,
        ),
        (None, true) => OutputCompression::Keep,
        (None, false) => OutputCompression::FirstInput,
        (Some(_), true) => {
            return Err(Failure::Usage(
                "--compression and --keep-compression exclude each other".into(),
            ))
        }
    };
    let options = MergeOptions {
        mode,
        compression,
        name: job.name,
        allow_disjoint: job.allow_disjoint,
        // The process's settings (the command's options over the environment).
        read_settings: None,
    };
    let start = Instant::now();
    let bar = bar(job.inputs.len());
    let summary = merge_to(&job.inputs, &job.output, &options, job.force, |at| {
        let done = at.inputs_done as f64 + at.input_fraction;
        // A progress position in thousandths of an input.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        bar.set_position((done * 1000.0) as u64);
        bar.set_message(format!("{} entries", at.entries));
    })?;
    bar.finish_and_clear();
    report(&job.output, &summary, start.elapsed().as_secs_f64(), out)
}

/// Merges `inputs` into `output`: a new ROOT file, or a new dataset of objects
/// (`ntpl+s3+https://...`, `ntpl+file://...`: ROOT's S3 layout, pages copied as objects,
/// the anchor written last), or a new RNTuple in a DAOS container
/// (`daos://POOL/CONTAINER[:NAME]`: ROOT's DAOS layout, in the directory store under
/// `$RNTUPLE_DAOS_DIR`, with the page mapping `$RNTUPLE_DAOS_MAPPING` names).
pub(crate) fn merge_to(
    inputs: &[String],
    output: &str,
    options: &MergeOptions,
    force: bool,
    progress: impl FnMut(MergeProgress),
) -> Result<MergeSummary, Failure> {
    if is_daos(output) {
        let (container, name, mapping) = daos_target(inputs, output, options)?;
        let (summary, _) = merge_to_daos(
            inputs,
            container,
            name.as_deref(),
            mapping,
            options,
            force,
            progress,
        )
        .map_err(Failure::Input)?;
        return Ok(summary);
    }
    if !is_object_layout(output) {
        return merge_files(inputs, Path::new(output), options, force, progress)
            .map_err(Failure::Input);
    }
    // `URL[:NAME]`: NAME names the RNTuple written (as --name does).
    let (summary, written) =
        merge_to_dataset_url(inputs, output, options, force, progress).map_err(Failure::Input)?;
    if let Some(warning) = written.left_objects_warning(&split_target(output).0) {
        eprintln!("rntuple: warning: {warning}");
    }
    Ok(summary)
}

/// The name of the RNTuple an output `TARGET[:NAME]` gets: its NAME, else `--name`; both
/// must agree.
fn output_name(
    output: &str,
    target_name: Option<String>,
    option: &Option<String>,
) -> Result<Option<String>, Failure> {
    match (target_name, option) {
        (Some(a), Some(b)) if &a != b => Err(Failure::Usage(format!(
            "{output} names the RNTuple \"{a}\", --name \"{b}\": give one"
        ))),
        (a, b) => Ok(a.or_else(|| b.clone())),
    }
}

/// The DAOS container [`merge_to`] writes to, the name of the RNTuple it writes there
/// and the page mapping: `output` is `daos://POOL/CONTAINER[:NAME]`; the name is NAME,
/// else `--name`, else (`None`) the first input's.
fn daos_target(
    inputs: &[String],
    output: &str,
    options: &MergeOptions,
) -> Result<(DaosContainer, Option<String>, DaosPageMapping), Failure> {
    let (uri, target_name) = split_target(output);
    let name = output_name(output, target_name, &options.name)?;
    if let Some(input) = inputs.iter().find(|i| {
        let (file, input_name) = split_target(i);
        file == uri && name.is_some() && input_name == name
    }) {
        return Err(Failure::Usage(format!(
            "{input} is both an input and the output"
        )));
    }
    let settings = SourceOptions::current()?;
    let mapping = daos_mapping(&settings).map_err(|e| Failure::Usage(e.to_string()))?;
    let container = open_daos_uri_in(&uri, settings.daos_dir.clone(), true)?;
    Ok((container, name, mapping))
}

/// A progress bar over the inputs (hidden unless stderr is a terminal).
fn bar(inputs: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(inputs as u64 * 1000);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {percent}% of {len} ({msg}, {eta} left)")
    {
        let inputs = inputs as u64;
        bar.set_style(style.with_key(
            "len",
            move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{inputs} inputs");
            },
        ));
    }
    bar
}

/// The summary: what was written, how, and what was left out.
fn report(
    output: &str,
    summary: &MergeSummary,
    seconds: f64,
    out: &mut impl Write,
) -> Result<(), Failure> {
    for field in &summary.fields_dropped {
        eprintln!("rntuple: warning: field \"{field}\" of a later input is not in the first input: left out (--mode union keeps it)");
    }
    for (field, ty) in &summary.fields_converted {
        eprintln!("rntuple: field \"{field}\" differs in type between inputs: every input read as {ty} (values decoded and written again)");
    }
    for set in &summary.attribute_sets_dropped {
        eprintln!("rntuple: warning: attribute set \"{set}\" is not merged (as ROOT)");
    }
    for field in &summary.fields_added {
        eprintln!("rntuple: added field \"{field}\" (inputs without it read as zeros)");
    }
    for gap in &summary.inputs_lacking {
        eprintln!(
            "rntuple: warning: input {} lacks {} of the output's fields ({}): its {} entries hold zeros there",
            gap.input,
            gap.fields.len(),
            gap.fields.join(", "),
            gap.entries
        );
    }
    let mb = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    writeln!(
        out,
        "merged {} inputs, {} entries, {} clusters -> {output} ({mb:.1} MB) in {seconds:.2} s ({:.1} MB/s); pages: {} copied, {} recompressed, {} of zeros",
        summary.inputs,
        summary.entries,
        summary.clusters,
        mb / seconds.max(1e-9),
        summary.pages_copied,
        summary.pages_resealed,
        summary.zero_pages,
    )?;
    Ok(())
}
