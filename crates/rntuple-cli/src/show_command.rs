//! `rntuple show`: entries printed for people, in the layout of ROOT's
//! `RNTupleReader::Show` (`rntuple_cli::show`).

use super::Failure;
use rntuple::read::RecordPaths;
use std::io::Write;

/// Print entries for people, in the layout of ROOT's RNTupleReader::Show: one
/// {...} block an entry, records indented, collections on one line; floats with the
/// digits that read back exactly (ROOT keeps 6).
#[derive(clap::Args)]
pub(crate) struct Job {
    /// FILE or FILE:NAME (NAME may be omitted when the file holds one RNTuple).
    pub(crate) target: String,
    #[command(flatten)]
    pub(crate) selection: super::entries::Selection,
    #[command(flatten)]
    pub(crate) friend: super::friend::FriendArgs,
}

/// Runs `rntuple show` as `job` says, writing to `out`.
pub(crate) fn run(job: Job, out: &mut impl Write) -> Result<(), Failure> {
    let Job {
        target,
        selection: super::entries::Selection { fields, entries },
        friend,
    } = job;
    let (reader, range) = super::entries::open_entries(&target, entries.as_deref())?;
    let shower = rntuple_cli::show::Shower::new(reader.descriptor());
    if let Some(join) = super::friend::open_join(&reader, &friend)? {
        let fields = super::friend::joined_fields(&join, fields)?;
        super::friend::for_each_joined_batch(&join, &fields, range, |batch| {
            for row in 0..batch.num_rows() {
                shower.write_entry(&mut *out, batch, row)?;
            }
            Ok(())
        })?;
        out.flush()?;
        return Ok(());
    }
    let fields = super::entries::selected(&reader, fields)?;
    // Streamer fields stay bytes: ROOT's Show prints them as `<streamer mode>`.
    let projection = reader.projection(fields.as_deref(), RecordPaths::Columns)?;
    super::entries::for_each_batch(&reader, &projection, range, |batch| {
        for row in 0..batch.num_rows() {
            shower.write_entry(&mut *out, batch, row)?;
        }
        Ok(())
    })?;
    Ok(())
}
