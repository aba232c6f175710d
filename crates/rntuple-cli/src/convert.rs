//! `rntuple convert`: one TTree file to an RNTuple file, or many files into a directory.

use super::entries::parse_entries;
use super::output::progress;
use super::Failure;
use rntuple::compression::CompressionSettings;
use rntuple::import::{
    convert_file, convert_to_dataset_url, ConvertOptions, ConvertSummary, SplitPolicy,
};
use rntuple::write::WriteOptions;
use rntuple_io::split_target;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `--split-policy`: which branches of objects are stored split and which unsplit.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum SplitPolicyArg {
    /// Split wherever RNTuple has fields for the type (as ROOT's importer).
    Split,
    /// Unsplit (streamer fields) wherever the objects can be streamed whole.
    Unsplit,
    /// Each branch in the smaller form, measured on a sample written both ways.
    Auto,
}

impl From<SplitPolicyArg> for SplitPolicy {
    fn from(p: SplitPolicyArg) -> SplitPolicy {
        match p {
            SplitPolicyArg::Split => SplitPolicy::Split,
            SplitPolicyArg::Unsplit => SplitPolicy::Unsplit,
            SplitPolicyArg::Auto => SplitPolicy::Auto,
        }
    }
}

/// Convert a TTree to an RNTuple, as ROOT's RNTupleImporter does (same fields, types
/// and projections), without ROOT: `convert INPUT OUTPUT`, or `convert INPUT...
/// --out-dir DIR` to convert many files, each to DIR/<its file name>.
#[derive(clap::Args)]
pub(crate) struct Job {
    /// INPUT OUTPUT: FILE or FILE:TREE (TREE may be omitted when the file holds one
    /// TTree) and the ROOT file to create. With --out-dir, only inputs: files or glob
    /// patterns such as 'in/*.root' (quoted or expanded by the shell; 'in/*.root:TREE'
    /// names the tree).
    #[arg(required = true, value_name = "INPUT [OUTPUT]")]
    pub(crate) paths: Vec<String>,
    /// Write one output per input file into this directory (created if missing).
    #[arg(long)]
    pub(crate) out_dir: Option<String>,
    /// Files converted at once with --out-dir.
    #[arg(short = 'j', long, default_value_t = 1)]
    pub(crate) jobs: usize,
    /// The RNTuple's name (default: the tree's).
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Comma-separated glob patterns of the top-level branches to convert (default:
    /// all); an array brings its count leaf.
    #[arg(long, value_delimiter = ',')]
    pub(crate) branches: Option<Vec<String>>,
    /// Compression ALG[:LEVEL] (zstd, lz4, zlib, lzma, none) or ROOT's number;
    /// default 505 (zstd level 5), as ROOT's importer.
    #[arg(long)]
    pub(crate) compression: Option<String>,
    /// Entry range START:STOP (either may be omitted; STOP is exclusive).
    #[arg(long)]
    pub(crate) entries: Option<String>,
    /// Leave out (with a warning) branches of a type that cannot be converted,
    /// instead of failing.
    #[arg(long)]
    pub(crate) skip_unsupported: bool,
    /// Comma-separated glob patterns of top-level object branches to store unsplit,
    /// as streamer fields (each entry's object as ROOT streams it, read back by ROOT
    /// through the class's dictionary). Objects RNTuple cannot store as fields of
    /// their own (classes with a streamer of their own, such as TLorentzVector;
    /// members such as counted C arrays) are stored so without it.
    #[arg(long, value_delimiter = ',', value_name = "GLOB")]
    pub(crate) unsplit: Option<Vec<String>>,
    /// Which branches of objects (classes, collections of classes) to store split, as
    /// fields of their own, and which unsplit, as streamer fields: split (as ROOT's
    /// importer), unsplit (wherever the objects can be streamed whole), or auto (each
    /// in the smaller form, measured on a sample of its entries written both ways;
    /// the sizes are printed).
    #[arg(long, value_enum, default_value = "split")]
    pub(crate) split_policy: SplitPolicyArg,
    /// Replace outputs that exist (each is replaced only once complete).
    #[arg(long)]
    pub(crate) force: bool,
}

/// Runs `rntuple convert` as `job` says, writing to `out`.
pub(crate) fn run(job: Job, out: &mut impl Write) -> Result<(), Failure> {
    let Job {
        paths,
        out_dir,
        jobs,
        name,
        branches,
        compression,
        entries,
        skip_unsupported,
        unsplit,
        split_policy,
        force,
    } = job;
    let mut write = WriteOptions::builder();
    if let Some(spec) = compression {
        let settings = CompressionSettings::parse(&spec)
            .map_err(|e| Failure::Usage(format!("--compression: {e}")))?;
        write = write.compression(settings);
    }
    let write = write.build().map_err(|e| Failure::Usage(e.to_string()))?;
    let job = Settings {
        name,
        branches: branches.unwrap_or_default(),
        entries,
        skip_unsupported,
        unsplit: unsplit.unwrap_or_default(),
        split_policy: split_policy.into(),
        force,
        write,
    };
    match (paths.as_slice(), out_dir) {
        ([input, output], None) => one(input, output, &job, &mut *out)?,
        (inputs, Some(dir)) => many(inputs, &dir, jobs, &job, &mut *out)?,
        ([input], None) => {
            return Err(Failure::Usage(format!(
                "convert {input}: the output is missing: convert INPUT OUTPUT, or INPUT... --out-dir DIR"
            )))
        }
        (many, None) => {
            return Err(Failure::Usage(format!(
                "convert takes one INPUT and its OUTPUT, got {} paths ({}); to convert many files give --out-dir DIR: rntuple convert {} --out-dir DIR",
                many.len(),
                many.join(" "),
                many[..many.len() - 1].join(" ")
            )))
        }
    }
    Ok(())
}

/// What every conversion of one command shares.
pub(crate) struct Settings {
    pub(crate) name: Option<String>,
    pub(crate) branches: Vec<String>,
    pub(crate) entries: Option<String>,
    pub(crate) skip_unsupported: bool,
    pub(crate) unsplit: Vec<String>,
    pub(crate) split_policy: SplitPolicy,
    pub(crate) force: bool,
    pub(crate) write: WriteOptions,
}

/// Converts `input` (FILE[:TREE]) into `output`, with a progress bar on a terminal and a
/// summary line when done.
pub(crate) fn one(
    input: &str,
    output: &str,
    job: &Settings,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let (file, tree) = split_target(input);
    let start = Instant::now();
    let options = options_of(job)?;
    // Its length is known once the tree is open: the first report sets it.
    let bar = progress(0, false);
    let report_progress = |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let summary = if rntuple_io::is_object_layout(output) {
        // Into an object store: the writer stores pages and envelopes as objects while it
        // writes, and the dataset its anchor. `URL[:NAME]`: NAME names the RNTuple.
        let (summary, written) = convert_to_dataset_url(
            &file,
            tree.as_deref(),
            output,
            &options,
            job.write.clone(),
            job.force,
            report_progress,
        )
        .map_err(|e| converting(e, job))?;
        if let Some(warning) = written.left_objects_warning(&split_target(output).0) {
            eprintln!("rntuple: warning: {warning}");
        }
        summary
    } else {
        convert_file(
            &file,
            tree.as_deref(),
            Path::new(output),
            &options,
            job.write.clone(),
            job.force,
            report_progress,
        )
        .map_err(|e| converting(e, job))?
    };
    bar.finish_and_clear();
    report(&file, output, &summary, start.elapsed().as_secs_f64(), out)
}

/// The files `inputs` name (each a file or a glob pattern, with an optional `:TREE`), in
/// order, each once, with its tree.
fn input_files(inputs: &[String]) -> Result<Vec<(PathBuf, Option<String>)>, Failure> {
    let mut files: Vec<(PathBuf, Option<String>)> = Vec::new();
    for input in inputs {
        let (pattern, tree) = split_target(input);
        let mut matched: Vec<PathBuf> = match glob::glob(&pattern) {
            Ok(paths) => paths
                .filter_map(std::result::Result::ok)
                .filter(|p| p.is_file())
                .collect(),
            Err(_) => Vec::new(),
        };
        // A file whose name holds glob characters (`run[1].root`) is itself.
        if matched.is_empty() && Path::new(&pattern).is_file() {
            matched.push(PathBuf::from(&pattern));
        }
        if matched.is_empty() {
            return Err(Failure::Usage(format!("no file matches \"{pattern}\"")));
        }
        for path in matched {
            if !files.iter().any(|(f, _)| *f == path) {
                files.push((path, tree.clone()));
            }
        }
    }
    Ok(files)
}

/// Converts every file `inputs` name (files or glob patterns) into `dir` (created if
/// missing), `jobs` at a time; each output is named like its input. Fails (after trying
/// all) if any conversion failed.
pub(crate) fn many(
    inputs: &[String],
    dir: &str,
    jobs: usize,
    job: &Settings,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let options = options_of(job)?;
    let files = input_files(inputs)?;
    let dir = Path::new(dir);
    if dir.exists() && !dir.is_dir() {
        return Err(Failure::Usage(format!(
            "--out-dir {}: not a directory",
            dir.display()
        )));
    }
    let mut outputs = std::collections::HashSet::new();
    for (f, _) in &files {
        if !outputs.insert(f.file_name()) {
            return Err(Failure::Usage(format!(
                "two inputs are named {:?}: their outputs in {} would collide",
                f.file_name().unwrap_or_default(),
                dir.display()
            )));
        }
    }
    // The directories made here, the deepest first: removed again if nothing was
    // written into them, so that a run that fails leaves the disk as it was.
    let made: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::Input(rntuple::Error::Io(rntuple_io::Error::Write {
            what: format!("the directory {} (--out-dir)", dir.display()),
            source: e,
        }))
    })?;
    let bar = progress(files.len() as u64, false);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, files.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((file, tree)) = files.get(i) else {
                    break;
                };
                let output = dir.join(file.file_name().unwrap_or_default());
                let start = Instant::now();
                let input = file.display().to_string();
                let result = convert_file(
                    &input,
                    tree.as_deref(),
                    &output,
                    &options,
                    job.write.clone(),
                    job.force,
                    |_, _| {},
                )
                .map_err(|e| converting(e, job));
                bar.inc(1);
                if let Ok(mut r) = results.lock() {
                    r.push((i, input, output, result, start.elapsed().as_secs_f64()));
                }
            });
        }
    });
    bar.finish_and_clear();
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| r.0);
    let mut failed = Vec::new();
    for (_, input, output, result, seconds) in results {
        match result {
            Ok(summary) => report(
                &input,
                &output.display().to_string(),
                &summary,
                seconds,
                out,
            )?,
            Err(e) => {
                e.report_input(&input);
                failed.push(input);
            }
        }
    }
    if failed.len() == files.len() {
        for d in &made {
            // Fails, and keeps it, where something else was put there meanwhile.
            let _ = std::fs::remove_dir(d);
        }
    }
    if !failed.is_empty() {
        return Err(Failure::Bad(format!(
            "{} of {} conversions failed: {}",
            failed.len(),
            files.len(),
            failed.join(", ")
        )));
    }
    Ok(())
}

/// The conversion options of the command (the library checks the entry range against
/// each tree, converting to the end when the stop lies past it).
fn options_of(job: &Settings) -> Result<ConvertOptions, Failure> {
    let entries = match &job.entries {
        Some(spec) => {
            let range = parse_entries(spec, u64::MAX).map_err(Failure::Usage)?;
            Some((range.start, range.end))
        }
        None => None,
    };
    Ok(ConvertOptions {
        name: job.name.clone(),
        branches: job.branches.clone(),
        entries,
        skip_unsupported: job.skip_unsupported,
        unsplit: job.unsplit.clone(),
        split_policy: job.split_policy,
        // The process's settings (the command's options over the environment).
        read_settings: None,
    })
}

/// The failure of a conversion: a branch of a type that cannot be converted names the
/// option that leaves such branches out.
fn converting(e: rntuple::Error, job: &Settings) -> Failure {
    let unsupported_branch =
        matches!(e.root_cause(), rntuple::Error::Unsupported(m) if m.contains("branch \""));
    if unsupported_branch && !job.skip_unsupported {
        return Failure::Bad(format!(
            "{}; pass --skip-unsupported to convert the other branches without it",
            super::failure::describe(&e)
        ));
    }
    Failure::Input(e)
}

/// The summary line: entries, sizes, time and throughput; then the branches left out.
fn report(
    input: &str,
    output: &str,
    summary: &ConvertSummary,
    seconds: f64,
    out: &mut impl Write,
) -> Result<(), Failure> {
    for skipped in &summary.skipped {
        eprintln!("rntuple: warning: left out {skipped}");
    }
    for c in &summary.split_choices {
        writeln!(
            out,
            "{input}: branch {}: {} split, {} unsplit on {} entries -> {}",
            c.branch,
            human_bytes(c.split_bytes),
            human_bytes(c.unsplit_bytes),
            c.entries,
            if c.unsplit { "unsplit" } else { "split" }
        )?;
    }
    let in_mb = std::fs::metadata(input)
        .map(|m| m.len())
        .unwrap_or(summary.input_bytes) as f64
        / 1e6;
    let out_mb = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    writeln!(
        out,
        "converted {} entries: {input} ({in_mb:.1} MB) -> {output} ({out_mb:.1} MB) in {seconds:.2} s ({:.1} MB/s, {:.4} s/MB)",
        summary.entries,
        in_mb / seconds.max(1e-9),
        seconds / in_mb.max(1e-9)
    )?;
    Ok(())
}

/// Bytes for people: `812 B`, `45.3 kB`, `12.0 MB`.
fn human_bytes(n: u64) -> String {
    match n {
        0..=999 => format!("{n} B"),
        1_000..=999_999 => format!("{:.1} kB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}
