//! `rntuple`: inspect and dump RNTuple data without ROOT.

use arrow_array::RecordBatch;
use clap::{Parser, Subcommand};
use network::NetworkArgs;
use rntuple::compression::CompressionSettings;
use rntuple::container::FileWriter;
use rntuple::io::{
    ensure_distinct, open_source, split_target, AtomicFile, Existing, SourceOptions,
};
use rntuple::merge::copy_rntuple;
use rntuple::read::RNTupleReader;
use rntuple::recover;
use rntuple::streamer_fields::StreamerFields;
use rntuple::write::WriteOptions;
use rntuple_cli::{render, show};
use std::io::{BufWriter, Write};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "rntuple",
    version,
    about = "Inspect and dump CERN RNTuple data without ROOT"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    network: NetworkArgs,
    #[command(flatten)]
    source: SourceArgs,
}

/// How every command opens remote files: the cache of remote reads.
#[derive(clap::Args)]
struct SourceArgs {
    /// Cache remote reads in this directory, shared by every process of this user that
    /// names it (default: $RNTUPLE_CACHE_DIR; none without either). It must be yours
    /// and writable by nobody else (else refused). `rntuple cache` manages it (without
    /// either, the default ~/.cache/rntuple).
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<std::path::PathBuf>,
    /// When a cached file is checked against its origin: open (one small request per
    /// file opened, the default) or never (no request for cached data)
    /// (default: $RNTUPLE_CACHE_VALIDATE, else open).
    #[arg(long, global = true, value_name = "WHEN")]
    cache_validate: Option<String>,
    /// The most bytes the cache may hold; least recently used data goes first: bytes
    /// or a number with a unit (500 MB, 2GiB, 10G) (default: $RNTUPLE_CACHE_MAX_BYTES,
    /// else no limit).
    #[arg(long, global = true, value_name = "SIZE")]
    cache_max_bytes: Option<String>,
}

impl SourceArgs {
    /// `options` (the environment's, with the network options over them) with these
    /// options over its cache settings.
    fn apply(&self, mut options: SourceOptions) -> Result<SourceOptions, Failure> {
        use rntuple::io::CacheConfig;
        let usage = |flag: &str, e: rntuple::Error| {
            Failure::Usage(format!(
                "--{flag}: {}",
                e.to_string().replace("invalid argument: ", "")
            ))
        };
        if let Some(dir) = &self.cache_dir {
            options.cache =
                Some(CacheConfig::from_env_in(dir).map_err(|e| Failure::Usage(e.to_string()))?);
        }
        if let Some(when) = &self.cache_validate {
            let validate = when.parse().map_err(|e| usage("cache-validate", e))?;
            if let Some(config) = options.cache.as_mut() {
                config.validate = validate;
            }
        }
        if let Some(size) = &self.cache_max_bytes {
            let bytes =
                rntuple::io::parse_byte_size(size).map_err(|e| usage("cache-max-bytes", e))?;
            if let Some(config) = options.cache.as_mut() {
                config.max_bytes = Some(bytes);
            }
        }
        Ok(options)
    }
}

#[derive(Subcommand)]
enum Command {
    /// List every RNTuple (and TTree) of ROOT files: path, entries, fields (the first
    /// 10 of more). Several files each under a "== FILE ==" header; exit status 1 if any
    /// failed, the others still listed.
    Ls {
        /// The ROOT files (paths or URLs).
        #[arg(required = true)]
        files: Vec<String>,
    },
    /// Show an RNTuple's schema tree, clusters, cluster groups and sizes. Several
    /// targets each under a "== TARGET ==" header; exit status 1 if any failed, the
    /// others still shown.
    Info {
        /// FILE or FILE:NAME (NAME may be omitted when the file holds one RNTuple); FILE
        /// may be a path or an http(s)://, root(s):// or s3:// URL.
        #[arg(required = true)]
        targets: Vec<String>,
        /// Also show what opening cost: requests, vectored requests, ranges, bytes read.
        #[arg(long)]
        stats: bool,
    },
    /// Read fields into memory and report the time and the I/O it took: requests,
    /// vectored requests, ranges, bytes read versus the page bytes the decoder used,
    /// time waiting for I/O.
    ReadBench {
        /// FILE or FILE:NAME, FILE a path or URL.
        target: String,
        /// Comma-separated fields (default: all): names, dotted paths and glob patterns
        /// (`'Jet_*'`).
        #[arg(long, value_delimiter = ',')]
        fields: Option<Vec<String>>,
        /// Entry range START:STOP (either may be omitted; STOP is exclusive).
        #[arg(long)]
        entries: Option<String>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Copy an RNTuple into a new ROOT file, decoding every value and writing it again
    /// with the same schema and column types.
    Copy {
        /// FILE or FILE:NAME of the source.
        source: String,
        /// The ROOT file to create.
        output: String,
        /// Compression ALG[:LEVEL] (zstd, lz4, zlib, lzma, none) or ROOT's number (505);
        /// default: the source's.
        #[arg(long)]
        compression: Option<String>,
        /// Approximate compressed cluster size in bytes (default 128 MiB, as ROOT): at
        /// least 1, at most 1280 MiB (the maximum uncompressed cluster size).
        #[arg(long)]
        cluster_size: Option<u64>,
        /// Maximum uncompressed page size in bytes (default 1 MiB, as ROOT): at least 8,
        /// at most 1280 MiB.
        #[arg(long)]
        page_size: Option<u64>,
        /// Commit a cluster group every N clusters, so that a killed copy can be
        /// recovered up to the last one (`rntuple recover`); 0: only at the end, as ROOT.
        #[arg(long, default_value_t = rntuple::write::DEFAULT_CHECKPOINT_EVERY)]
        checkpoint_every: u64,
        /// Replace OUTPUT if it exists (it is replaced only once the copy is complete).
        #[arg(long)]
        force: bool,
    },
    /// Convert a TTree to an RNTuple, as ROOT's RNTupleImporter does (same fields, types
    /// and projections), without ROOT: `convert INPUT OUTPUT`, or `convert INPUT...
    /// --out-dir DIR` to convert many files, each to DIR/<its file name>.
    Convert {
        /// INPUT OUTPUT: FILE or FILE:TREE (TREE may be omitted when the file holds one
        /// TTree) and the ROOT file to create. With --out-dir, only inputs: files or glob
        /// patterns such as 'in/*.root' (quoted or expanded by the shell; 'in/*.root:TREE'
        /// names the tree).
        #[arg(required = true, value_name = "INPUT [OUTPUT]")]
        paths: Vec<String>,
        /// Write one output per input file into this directory (created if missing).
        #[arg(long)]
        out_dir: Option<String>,
        /// Files converted at once with --out-dir.
        #[arg(short = 'j', long, default_value_t = 1)]
        jobs: usize,
        /// The RNTuple's name (default: the tree's).
        #[arg(long)]
        name: Option<String>,
        /// Comma-separated glob patterns of the top-level branches to convert (default:
        /// all); an array brings its count leaf.
        #[arg(long, value_delimiter = ',')]
        branches: Option<Vec<String>>,
        /// Compression ALG[:LEVEL] (zstd, lz4, zlib, lzma, none) or ROOT's number;
        /// default 505 (zstd level 5), as ROOT's importer.
        #[arg(long)]
        compression: Option<String>,
        /// Entry range START:STOP (either may be omitted; STOP is exclusive).
        #[arg(long)]
        entries: Option<String>,
        /// Leave out (with a warning) branches of a type that cannot be converted,
        /// instead of failing.
        #[arg(long)]
        skip_unsupported: bool,
        /// Comma-separated glob patterns of top-level object branches to store unsplit,
        /// as streamer fields (each entry's object as ROOT streams it, read back by ROOT
        /// through the class's dictionary). Objects RNTuple cannot store as fields of
        /// their own (classes with a streamer of their own, such as TLorentzVector;
        /// members such as counted C arrays) are stored so without it.
        #[arg(long, value_delimiter = ',', value_name = "GLOB")]
        unsplit: Option<Vec<String>>,
        /// Which branches of objects (classes, collections of classes) to store split, as
        /// fields of their own, and which unsplit, as streamer fields: split (as ROOT's
        /// importer), unsplit (wherever the objects can be streamed whole), or auto (each
        /// in the smaller form, measured on a sample of its entries written both ways;
        /// the sizes are printed).
        #[arg(long, value_enum, default_value = "split")]
        split_policy: convert::SplitPolicyArg,
        /// Replace outputs that exist (each is replaced only once complete).
        #[arg(long)]
        force: bool,
    },
    /// Merge RNTuples into one new file, as ROOT's hadd: the entries of every input in
    /// order, with the first input's schema; pages are copied byte for byte (checksums
    /// verified) where encoding and compression match, compressed again elsewhere.
    Merge(merge::Job),
    /// Recover the RNTuples of a file whose writer died before completing it (killed,
    /// out of memory or time): every entry of every committed cluster group is written
    /// into a new, complete file.
    Recover {
        /// The broken file (for example the OUT.XXXXXX.partial file a killed write left).
        broken: String,
        /// The ROOT file to create.
        output: String,
        /// Replace OUTPUT if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Where the bytes go: per field (its subfields included), per column or per column
    /// type, compressed and uncompressed bytes, compression factor, elements, pages,
    /// average page size, share of the file (the figures of ROOT's RNTupleInspector);
    /// the header, footer and page-list sizes; the distribution of page sizes.
    Inspect {
        /// FILE or FILE:NAME.
        target: String,
        /// Rows per field (default), per physical column or per column type.
        #[arg(long, default_value = "field", value_parser = ["field", "column", "type"])]
        by: String,
        /// Print one JSON object (every table, the figures and the page-size
        /// distribution) instead of text.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print the table of --by as CSV (with --by type, as ROOT's
        /// RNTupleInspector::PrintColumnTypeInfo prints it).
        #[arg(long)]
        csv: bool,
        /// Order the rows by size (compressed bytes, the largest first), uncompressed,
        /// compression (factor, the worst first), pages or name (default: the file's
        /// order; per field, subfields stay under their parent).
        #[arg(
            long,
            value_name = "KEY",
            conflicts_with = "json",
            value_parser = rntuple::inspect::SortKey::NAMES
        )]
        sort: Option<String>,
        /// Show only the N first rows (by --sort, default size; with --by field,
        /// top-level fields, their subfields' bytes included) and one row summing the
        /// rest.
        #[arg(long, value_name = "N", conflicts_with = "json")]
        top: Option<usize>,
    },
    /// Check files: every RNTuple opened, its structure checked, every page read, its
    /// checksum checked and every value decoded. One line per file; exit status 1 if
    /// any file is bad. An object-store dataset is also bad when objects under its
    /// prefix are referenced by no anchor (left by a writer that did not finish):
    /// --repair removes them first.
    Verify(verify::Job),
    /// Print entries for people, in the layout of ROOT's RNTupleReader::Show: one
    /// {...} block an entry, records indented, collections on one line; floats with the
    /// digits that read back exactly (ROOT keeps 6).
    Show {
        /// FILE or FILE:NAME (NAME may be omitted when the file holds one RNTuple).
        target: String,
        /// Comma-separated fields to print (default: all): names, dotted paths
        /// (`a.b`, `Jet._0.pt`) and glob patterns (`'Jet_*'`).
        #[arg(long, value_delimiter = ',')]
        fields: Option<Vec<String>>,
        /// Entry range START:STOP (either may be omitted; STOP is exclusive).
        #[arg(long)]
        entries: Option<String>,
        #[command(flatten)]
        friend: friend::FriendArgs,
    },
    /// Print entries as JSON (the conformance suite's conventions).
    Dump {
        /// FILE or FILE:NAME (NAME may be omitted when the file holds one RNTuple).
        target: String,
        /// Print one JSON list of the entries.
        #[arg(long)]
        json: bool,
        /// Print JSON Lines: one entry a line (compact JSON), written as they are read;
        /// floats as numbers (for jq) unless --floats hex.
        #[arg(long, conflicts_with = "json")]
        jsonl: bool,
        /// How floats are written: hex (C99 hex strings such as "0x1.8p+3", bit exact,
        /// the conformance suite's convention; the default of --json) or decimal (JSON
        /// numbers, the shortest digits that read back to the same value; NaN and
        /// infinities as the strings "nan", "inf", "-inf"; the default of --jsonl).
        #[arg(long, value_enum, value_name = "FORM")]
        floats: Option<FloatsArg>,
        /// Comma-separated fields to print (default: all): names, dotted paths
        /// (`a.b`, `Jet._0.pt`) and glob patterns (`'Jet_*'`).
        #[arg(long, value_delimiter = ',')]
        fields: Option<Vec<String>>,
        /// Entry range START:STOP (either may be omitted; STOP is exclusive).
        #[arg(long)]
        entries: Option<String>,
        /// Print the entries of this linked attribute set instead, each as
        /// {"Value": ..., "Range": [first, last]} (Value: the single attribute field's
        /// value, or an object of all attribute fields).
        #[arg(long)]
        attributes: Option<String>,
        /// Print streamer fields as the bytes stored (by default each object is decoded
        /// into a record by the streamer infos the file carries, where they describe its
        /// class).
        #[arg(long)]
        streamer_bytes: bool,
        #[command(flatten)]
        friend: friend::FriendArgs,
    },
    /// The on-disk cache of remote reads (--cache-dir, RNTUPLE_CACHE_DIR, else
    /// $XDG_CACHE_HOME/rntuple or ~/.cache/rntuple): stats, ls, verify [--repair],
    /// clear, purge [--target SIZE].
    Cache(cache::Job),
}

/// `--floats`: how `dump` writes floats.
#[derive(Clone, Copy, clap::ValueEnum)]
enum FloatsArg {
    /// C99 hex strings, bit exact.
    Hex,
    /// JSON numbers, shortest round-trip decimal.
    Decimal,
}

/// Parses `START:STOP` against `n` entries.
fn parse_entries(spec: &str, n: u64) -> Result<std::ops::Range<u64>, String> {
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

/// What `read-bench` measured.
struct ReadBenchReport {
    entries: u64,
    fields: usize,
    arrow_bytes: u64,
    open_seconds: f64,
    read_seconds: f64,
    requests: u64,
    vector_requests: u64,
    ranges: u64,
    bytes_read: u64,
    bytes_used: u64,
    io_wait_seconds: f64,
    prefetch_wait_seconds: f64,
    open_requests: u64,
    open_bytes_read: u64,
}

impl ReadBenchReport {
    fn write(&self, out: &mut impl Write, json: bool) -> std::io::Result<()> {
        if json {
            let value = serde_json::json!({
                "entries": self.entries,
                "fields": self.fields,
                "arrow_bytes": self.arrow_bytes,
                "open_seconds": self.open_seconds,
                "read_seconds": self.read_seconds,
                "open_requests": self.open_requests,
                "open_bytes_read": self.open_bytes_read,
                "requests": self.requests,
                "vector_requests": self.vector_requests,
                "ranges": self.ranges,
                "bytes_read": self.bytes_read,
                "bytes_used": self.bytes_used,
                "io_wait_seconds": self.io_wait_seconds,
                "prefetch_wait_seconds": self.prefetch_wait_seconds,
            });
            return writeln!(out, "{value}");
        }
        let mb = |b: u64| b as f64 / 1e6;
        writeln!(
            out,
            "read {} entries, {} fields: {:.1} MB in memory in {:.3} s ({:.0} MB/s); opening took {:.3} s",
            self.entries,
            self.fields,
            mb(self.arrow_bytes),
            self.read_seconds,
            mb(self.arrow_bytes) / self.read_seconds.max(1e-9),
            self.open_seconds
        )?;
        writeln!(
            out,
            "I/O: {} requests ({} vectored), {} ranges, {:.2} MB read for {:.2} MB of pages used ({:.3}x)",
            self.requests,
            self.vector_requests,
            self.ranges,
            mb(self.bytes_read),
            mb(self.bytes_used),
            self.bytes_read as f64 / (self.bytes_used.max(1)) as f64
        )?;
        writeln!(
            out,
            "time: {:.3} s in source calls (summed over threads), decoder waited {:.3} s for prefetched pages",
            self.io_wait_seconds, self.prefetch_wait_seconds
        )
    }
}

mod cache;
mod convert;
mod failure;
mod friend;
mod inspect;
mod ls;
mod merge;
mod network;
mod trees;
mod verify;

use failure::Failure;

impl Command {
    /// The files the command reads (paths or URLs, without `:NAME`): the one an error
    /// names gets the way out of its state.
    fn inputs(&self) -> Vec<String> {
        let file = |target: &String| split_target(target).0;
        match self {
            Command::Ls { files } => files.clone(),
            Command::Info { targets, .. } => targets.iter().map(file).collect(),
            Command::ReadBench { target, .. }
            | Command::Inspect { target, .. }
            | Command::Show { target, .. }
            | Command::Dump { target, .. } => vec![file(target)],
            Command::Copy { source, .. } => vec![file(source)],
            Command::Convert { paths, .. } => paths.iter().map(file).collect(),
            Command::Recover { broken, .. } => vec![broken.clone()],
            Command::Verify(job) => job.files.clone(),
            Command::Merge(job) => job.inputs().iter().map(file).collect(),
            Command::Cache(_) => Vec::new(),
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    // Every file the command opens (paths and URLs, inputs of merge and verify
    // included) is opened with these options.
    let options = cli.source.apply(cli.network.source_options()?)?;
    SourceOptions::set_process_default(options);
    let cache_dir = cli.source.cache_dir.clone();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match cli.command {
        Command::Ls { files } => ls::each(&files, &mut out, ls::ls)?,
        Command::Info { targets, stats } => ls::each(&targets, &mut out, |target, out| {
            ls::info(target, stats, out)
        })?,
        Command::ReadBench {
            target,
            fields,
            entries,
            json,
        } => {
            let (file, name) = split_target(&target);
            let start = std::time::Instant::now();
            let reader = RNTupleReader::open_path(&file, name.as_deref())?;
            let opened = start.elapsed().as_secs_f64();
            let fields = selected(&reader, fields)?;
            let at_open = reader.metrics();
            let range = match entries {
                Some(spec) => parse_entries(&spec, reader.num_entries()).map_err(Failure::Usage)?,
                None => 0..reader.num_entries(),
            };
            let t = std::time::Instant::now();
            // Batches as they come (one per bunch of clusters from a remote source): the
            // time is the read's, not a concatenation's.
            let batches = reader.read_batches(fields.as_deref(), range.clone())?;
            let seconds = t.elapsed().as_secs_f64();
            let m = reader.metrics();
            let report = ReadBenchReport {
                entries: range.end - range.start,
                fields: reader.arrow_schema(fields.as_deref())?.fields().len(),
                arrow_bytes: batches
                    .iter()
                    .map(|b| b.get_array_memory_size() as u64)
                    .sum(),
                open_seconds: opened,
                read_seconds: seconds,
                requests: m.io.requests - at_open.io.requests,
                vector_requests: m.io.vector_requests - at_open.io.vector_requests,
                ranges: m.io.ranges - at_open.io.ranges,
                bytes_read: m.io.bytes_read - at_open.io.bytes_read,
                bytes_used: m.bytes_used - at_open.bytes_used,
                io_wait_seconds: (m.io.wait_nanos - at_open.io.wait_nanos) as f64 * 1e-9,
                prefetch_wait_seconds: (m.prefetch_wait_nanos - at_open.prefetch_wait_nanos) as f64
                    * 1e-9,
                open_requests: at_open.io.requests,
                open_bytes_read: at_open.io.bytes_read,
            };
            report.write(&mut out, json)?;
        }
        Command::Copy {
            source,
            output,
            compression,
            cluster_size,
            page_size,
            checkpoint_every,
            force,
        } => {
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
            let stored_as_objects =
                |p: &str| rntuple::io::is_object_layout(p) || rntuple::io::is_daos(p);
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
                let summary = merge::merge_to(
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
            let atomic = open_output(&output, &[&file], force)?;
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
            let bar = progress(reader.num_entries(), false);
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
        }
        Command::Merge(job) => merge::run(job, &mut out)?,
        Command::Cache(job) => cache::run(job, cache_dir, &mut out)?,
        Command::Convert {
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
        } => {
            let mut write = WriteOptions::builder();
            if let Some(spec) = compression {
                let settings = CompressionSettings::parse(&spec)
                    .map_err(|e| Failure::Usage(format!("--compression: {e}")))?;
                write = write.compression(settings);
            }
            let write = write.build().map_err(|e| Failure::Usage(e.to_string()))?;
            let job = convert::Job {
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
                ([input, output], None) => convert::one(input, output, &job, &mut out)?,
                (inputs, Some(dir)) => convert::many(inputs, &dir, jobs, &job, &mut out)?,
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
        }
        Command::Recover {
            broken,
            output,
            force,
        } => {
            let out = open_output(&output, &[&broken], force)?;
            let recovery = match recover::examine(open_source(&broken)?)? {
                recover::FileState::Complete { rntuples } => {
                    eprintln!(
                        "rntuple: {broken} is complete ({}): it needs no recovery (use it as it is, or rename it to {output}); nothing was written",
                        rntuples.join(", ")
                    );
                    return Ok(());
                }
                recover::FileState::Recoverable(recovery) => recovery,
            };
            let options = WriteOptions::default();
            let mut out_file = FileWriter::create_atomic(out, options.compression())?;
            let total = recovery.rntuples.iter().map(|r| r.entries).sum();
            let bar = progress(total, false);
            recover::write_recovered(&recovery, &mut out_file, &options, |done| {
                bar.set_position(done)
            })?;
            out_file.finish()?;
            bar.finish_and_clear();
            for r in &recovery.rntuples {
                let how = if r.had_footer {
                    "complete (its footer was written)".to_string()
                } else {
                    format!(
                        "{} bytes written after its last checkpoint are not recoverable",
                        r.bytes_after_last_commit
                    )
                };
                eprintln!(
                    "recovered RNTuple \"{}\": {} entries ({} clusters, {} cluster groups); {how}",
                    r.name, r.entries, r.clusters, r.cluster_groups
                );
                for note in &r.notes {
                    eprintln!("  note: {note}");
                }
            }
            eprintln!("wrote {output}");
        }
        Command::Inspect {
            target,
            by,
            json,
            csv,
            sort,
            top,
        } => {
            let (file, name) = split_target(&target);
            let reader = RNTupleReader::open_path(&file, name.as_deref())?;
            let by = rntuple::inspect::By::from_name(&by)
                .ok_or_else(|| Failure::Usage(format!("--by {by}: not field, column or type")))?;
            let format = match (json, csv) {
                (true, _) => inspect::Format::Json,
                (_, true) => inspect::Format::Csv,
                _ => inspect::Format::Text,
            };
            let i = rntuple::inspect::inspect(&reader)?;
            inspect::print(
                &mut out,
                reader.path(),
                &i,
                by,
                format,
                sort.as_deref(),
                top,
            )?;
        }
        Command::Verify(job) => verify::run(&job, &mut out)?,
        Command::Show {
            target,
            fields,
            entries,
            friend,
        } => {
            let (reader, range) = open_entries(&target, entries.as_deref())?;
            let shower = show::Shower::new(reader.descriptor());
            if let Some(join) = friend::open_join(&reader, &friend)? {
                let fields = friend::joined_fields(&join, fields)?;
                friend::for_each_joined_batch(&join, &fields, range, |batch| {
                    for row in 0..batch.num_rows() {
                        shower.write_entry(&mut out, batch, row)?;
                    }
                    Ok(())
                })?;
                out.flush()?;
                return Ok(());
            }
            let fields = selected(&reader, fields)?;
            for_each_batch(&reader, fields.as_deref(), range, |batch| {
                for row in 0..batch.num_rows() {
                    shower.write_entry(&mut out, batch, row)?;
                }
                Ok(())
            })?;
        }
        Command::Dump {
            target,
            json,
            jsonl,
            floats,
            fields,
            entries,
            attributes,
            streamer_bytes,
            friend,
        } => {
            if !json && !jsonl {
                return Err(Failure::Usage("dump needs --json or --jsonl".into()));
            }
            let floats = match floats {
                Some(FloatsArg::Hex) => render::Floats::Hex,
                Some(FloatsArg::Decimal) => render::Floats::Decimal,
                None if jsonl => render::Floats::Decimal,
                None => render::Floats::Hex,
            };
            if let Some(set) = attributes {
                let (file, name) = split_target(&target);
                let reader = RNTupleReader::open_path(&file, name.as_deref())?;
                let attrs = reader.attribute_set(&set)?;
                if jsonl {
                    for entry in render::attribute_entries(&attrs, floats)? {
                        writeln!(out, "{entry}")?;
                    }
                } else {
                    render::dump_attributes(&mut out, &attrs, floats)?;
                }
                out.flush()?;
                return Ok(());
            }
            let (reader, range) = open_entries(&target, entries.as_deref())?;
            if let Some(join) = friend::open_join(&reader, &friend)? {
                let fields = friend::joined_fields(&join, fields)?;
                dump_joined(&mut out, &join, &fields, range, jsonl, floats)?;
                out.flush()?;
                return Ok(());
            }
            let fields = selected(&reader, fields)?;
            let streamer = if streamer_bytes {
                StreamerFields::default()
            } else {
                StreamerFields::new(reader.descriptor())?
            };
            if jsonl {
                let mut at = range.start;
                for_each_batch(&reader, fields.as_deref(), range, |batch| {
                    // Streamer fields as records, by the file's streamer infos.
                    let batch = streamer.decode(batch, at)?;
                    at += batch.num_rows() as u64;
                    for row in 0..batch.num_rows() {
                        writeln!(out, "{}", render::json_row_with(&batch, row, floats))?;
                    }
                    Ok(())
                })?;
            } else {
                dump_json(
                    &mut out,
                    &reader,
                    fields.as_deref(),
                    range,
                    &streamer,
                    floats,
                )?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Starts the output file `output` (written under a temporary name, renamed when
/// complete), refusing one of the `inputs` whatever the path's spelling, and an
/// existing file unless `force`.
fn open_output(output: &str, inputs: &[&str], force: bool) -> Result<AtomicFile, Failure> {
    let path = std::path::Path::new(output);
    ensure_distinct(path, inputs)?;
    if !force {
        rntuple::io::refuse_existing(path)?;
    }
    let existing = if force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    Ok(AtomicFile::create(path, existing)?)
}

/// A progress bar over `entries` on standard error, drawn only when standard error is a
/// terminal and (when `to_stdout`) standard output is not, so it never mixes with output.
fn progress(entries: u64, to_stdout: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || (to_stdout && std::io::stdout().is_terminal()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(entries);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} entries ({per_sec}, {eta} left)",
    ) {
        bar.set_style(style);
    }
    bar
}

/// Opens the RNTuple of `FILE[:NAME]` (its warnings on standard error) and the entry
/// range `--entries` selects (all entries without it).
fn open_entries(
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
fn selected(
    reader: &RNTupleReader,
    fields: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, Failure> {
    Ok(fields.map(|f| reader.resolve_fields(&f)).transpose()?)
}

/// Reads the selected fields over `range` cluster by cluster and hands each cluster's
/// batch to `each` as it comes, so memory stays bounded (from a remote source the pages
/// of the next clusters are fetched meanwhile). The selection is checked before `each`
/// is first called; a progress bar counts the entries on standard error.
fn for_each_batch(
    reader: &RNTupleReader,
    fields: Option<&[String]>,
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
    let batches = reader.read_ranges(fields, ranges)?;
    let bar = progress(range.end - range.start, true);
    for batch in batches {
        let batch = batch?;
        each(&batch)?;
        bar.inc(batch.num_rows() as u64);
    }
    bar.finish_and_clear();
    Ok(())
}

/// Streams entries as a JSON list, cluster by cluster, so memory stays bounded.
fn dump_json(
    out: &mut impl Write,
    reader: &RNTupleReader,
    fields: Option<&[String]>,
    range: std::ops::Range<u64>,
    streamer: &StreamerFields,
    floats: render::Floats,
) -> Result<(), Failure> {
    // The selection is checked before the first byte of output.
    reader.arrow_schema(fields)?;
    let mut at = range.start;
    let mut first = true;
    write!(out, "[")?;
    for_each_batch(reader, fields, range, |batch| {
        // Streamer fields as records, by the file's streamer infos.
        let batch = streamer.decode(batch, at)?;
        at += batch.num_rows() as u64;
        for row in 0..batch.num_rows() {
            let text = format!("{:#}", render::json_row_with(&batch, row, floats));
            let indented = text.replace('\n', "\n  ");
            write!(out, "{}\n  {indented}", if first { "" } else { "," })?;
            first = false;
        }
        Ok(())
    })?;
    writeln!(out, "{}]", if first { "" } else { "\n" })?;
    Ok(())
}

/// Writes a join's entries as `dump` does: JSON Lines, or one JSON list.
fn dump_joined(
    out: &mut impl Write,
    join: &rntuple::join::Join,
    fields: &friend::JoinedFields,
    range: std::ops::Range<u64>,
    jsonl: bool,
    floats: render::Floats,
) -> Result<(), Failure> {
    let mut first = true;
    if !jsonl {
        write!(out, "[")?;
    }
    friend::for_each_joined_batch(join, fields, range, |batch| {
        for row in 0..batch.num_rows() {
            if jsonl {
                writeln!(out, "{}", render::json_row_with(batch, row, floats))?;
            } else {
                let text = format!("{:#}", render::json_row_with(batch, row, floats));
                let indented = text.replace('\n', "\n  ");
                write!(out, "{}\n  {indented}", if first { "" } else { "," })?;
            }
            first = false;
        }
        Ok(())
    })?;
    if !jsonl {
        writeln!(out, "{}]", if first { "" } else { "\n" })?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let inputs = cli.command.inputs();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(&inputs),
    }
}
