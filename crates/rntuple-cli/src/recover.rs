//! `rntuple recover`: what the writer of a broken file committed, written into a new,
//! complete file.

use super::Failure;
use rntuple::container::FileWriter;
use rntuple::recover;
use rntuple::write::WriteOptions;
use rntuple_io::open_source;
use std::io::Write;

/// Recover the RNTuples of a file whose writer died before completing it (killed,
/// out of memory or time): every entry of every committed cluster group is written
/// into a new, complete file.
#[derive(clap::Args)]
pub(crate) struct Job {
    /// The broken file (for example the OUT.XXXXXX.partial file a killed write left).
    pub(crate) broken: String,
    /// The ROOT file to create.
    pub(crate) output: String,
    /// Replace OUTPUT if it exists.
    #[arg(long)]
    pub(crate) force: bool,
}

/// Runs `rntuple recover` as `job` says, writing to `out`.
pub(crate) fn run(job: Job, _out: &mut impl Write) -> Result<(), Failure> {
    let Job {
        broken,
        output,
        force,
    } = job;
    let out = super::output::open_output(&output, &[&broken], force)?;
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
    let bar = super::output::progress(total, false);
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
    Ok(())
}
