//! `rntuple`: inspect and dump RNTuple data without ROOT.

use clap::{Parser, Subcommand};
use network::NetworkArgs;
use rntuple_io::{split_target, SourceOptions};
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
        use rntuple_io::CacheConfig;
        let usage = |flag: &str, e: rntuple_io::Error| {
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
                rntuple_io::parse_byte_size(size).map_err(|e| usage("cache-max-bytes", e))?;
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
    ReadBench(read_bench::Job),
    /// Copy an RNTuple into a new ROOT file, decoding every value and writing it again
    /// with the same schema and column types.
    Copy(copy::Job),
    /// Convert a TTree to an RNTuple, as ROOT's RNTupleImporter does (same fields, types
    /// and projections), without ROOT: `convert INPUT OUTPUT`, or `convert INPUT...
    /// --out-dir DIR` to convert many files, each to DIR/<its file name>.
    Convert(convert::Job),
    /// Merge RNTuples into one new file, as ROOT's hadd: the entries of every input in
    /// order, with the first input's schema; pages are copied byte for byte (checksums
    /// verified) where encoding and compression match, compressed again elsewhere.
    Merge(merge::Job),
    /// Recover the RNTuples of a file whose writer died before completing it (killed,
    /// out of memory or time): every entry of every committed cluster group is written
    /// into a new, complete file.
    Recover(recover::Job),
    /// Where the bytes go: per field (its subfields included), per column or per column
    /// type, compressed and uncompressed bytes, compression factor, elements, pages,
    /// average page size, share of the file (the figures of ROOT's RNTupleInspector);
    /// the header, footer and page-list sizes; the distribution of page sizes.
    Inspect(inspect::Job),
    /// Check files: every RNTuple opened, its structure checked, every page read, its
    /// checksum checked and every value decoded. One line per file; exit status 1 if
    /// any file is bad. An object-store dataset is also bad when objects under its
    /// prefix are referenced by no anchor (left by a writer that did not finish):
    /// --repair removes them first.
    Verify(verify::Job),
    /// Print entries for people, in the layout of ROOT's RNTupleReader::Show: one
    /// {...} block an entry, records indented, collections on one line; floats with the
    /// digits that read back exactly (ROOT keeps 6).
    Show(show_command::Job),
    /// Print entries as JSON (the conformance suite's conventions).
    Dump(dump::Job),
    /// The on-disk cache of remote reads (--cache-dir, RNTUPLE_CACHE_DIR, else
    /// $XDG_CACHE_HOME/rntuple or ~/.cache/rntuple): stats, ls, verify [--repair],
    /// clear, purge [--target SIZE].
    Cache(cache::Job),
}

mod cache;
mod convert;
mod copy;
mod dump;
mod entries;
mod failure;
mod friend;
mod inspect;
mod ls;
mod merge;
mod network;
mod output;
mod read_bench;
mod recover;
mod show_command;
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
            Command::ReadBench(job) => vec![file(&job.target)],
            Command::Inspect(job) => vec![file(&job.target)],
            Command::Show(job) => vec![file(&job.target)],
            Command::Dump(job) => vec![file(&job.target)],
            Command::Copy(job) => vec![file(&job.source)],
            Command::Convert(job) => job.paths.iter().map(file).collect(),
            Command::Recover(job) => vec![job.broken.clone()],
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
        Command::ReadBench(job) => read_bench::run(job, &mut out)?,
        Command::Copy(job) => copy::run(job, &mut out)?,
        Command::Merge(job) => merge::run(job, &mut out)?,
        Command::Cache(job) => cache::run(job, cache_dir, &mut out)?,
        Command::Convert(job) => convert::run(job, &mut out)?,
        Command::Recover(job) => recover::run(job, &mut out)?,
        Command::Inspect(job) => inspect::run(job, &mut out)?,
        Command::Verify(job) => verify::run(&job, &mut out)?,
        Command::Show(job) => show_command::run(job, &mut out)?,
        Command::Dump(job) => dump::run(job, &mut out)?,
    }
    out.flush()?;
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
