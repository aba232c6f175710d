//! `rntuple dump`: entries printed as JSON (a list, or JSON Lines), or a linked
//! attribute set's entries.

use super::Failure;
use rntuple::read::{Projection, RNTupleReader, RecordPaths};
use rntuple::streamer_fields::StreamerObjects;
use rntuple_cli::render;
use rntuple_io::split_target;
use std::io::Write;

/// Print entries as JSON (the conformance suite's conventions).
#[derive(clap::Args)]
pub(crate) struct Job {
    /// FILE or FILE:NAME (NAME may be omitted when the file holds one RNTuple).
    pub(crate) target: String,
    /// Print one JSON list of the entries.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print JSON Lines: one entry a line (compact JSON), written as they are read;
    /// floats as numbers (for jq) unless --floats hex.
    #[arg(long, conflicts_with = "json")]
    pub(crate) jsonl: bool,
    /// How floats are written: hex (C99 hex strings such as "0x1.8p+3", bit exact,
    /// the conformance suite's convention; the default of --json) or decimal (JSON
    /// numbers, the shortest digits that read back to the same value; NaN and
    /// infinities as the strings "nan", "inf", "-inf"; the default of --jsonl).
    #[arg(long, value_enum, value_name = "FORM")]
    pub(crate) floats: Option<FloatsArg>,
    #[command(flatten)]
    pub(crate) selection: super::entries::Selection,
    /// Print the entries of this linked attribute set instead, each as
    /// {"Value": ..., "Range": [first, last]} (Value: the single attribute field's
    /// value, or an object of all attribute fields).
    #[arg(long)]
    pub(crate) attributes: Option<String>,
    /// Print streamer fields as the bytes stored (by default each object is decoded
    /// into a record by the streamer infos the file carries, where they describe its
    /// class).
    #[arg(long)]
    pub(crate) streamer_bytes: bool,
    #[command(flatten)]
    pub(crate) friend: super::friend::FriendArgs,
}

/// Runs `rntuple dump` as `job` says, writing to `out`.
pub(crate) fn run(job: Job, out: &mut impl Write) -> Result<(), Failure> {
    let Job {
        target,
        json,
        jsonl,
        floats,
        selection: super::entries::Selection { fields, entries },
        attributes,
        streamer_bytes,
        friend,
    } = job;
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
            render::dump_attributes(&mut *out, &attrs, floats)?;
        }
        out.flush()?;
        return Ok(());
    }
    let (reader, range) = super::entries::open_entries(&target, entries.as_deref())?;
    if let Some(join) = super::friend::open_join(&reader, &friend)? {
        let fields = super::friend::joined_fields(&join, fields)?;
        dump_joined(&mut *out, &join, &fields, range, jsonl, floats)?;
        out.flush()?;
        return Ok(());
    }
    let fields = super::entries::selected(&reader, fields)?;
    // The selection is checked before the first byte of output.
    let projection = reader.projection(fields.as_deref(), RecordPaths::Columns)?;
    let objects = if streamer_bytes {
        StreamerObjects::Bytes
    } else {
        StreamerObjects::Records
    };
    let projection = objects.project(reader.descriptor(), projection)?;
    if jsonl {
        super::entries::for_each_batch(&reader, &projection, range, |batch| {
            for row in 0..batch.num_rows() {
                writeln!(out, "{}", render::json_row_with(batch, row, floats))?;
            }
            Ok(())
        })?;
    } else {
        dump_json(&mut *out, &reader, &projection, range, floats)?;
    }
    Ok(())
}

/// `--floats`: how `dump` writes floats.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum FloatsArg {
    /// C99 hex strings, bit exact.
    Hex,
    /// JSON numbers, shortest round-trip decimal.
    Decimal,
}

/// Streams entries as a JSON list, cluster by cluster, so memory stays bounded.
fn dump_json(
    out: &mut impl Write,
    reader: &RNTupleReader,
    projection: &Projection,
    range: std::ops::Range<u64>,
    floats: render::Floats,
) -> Result<(), Failure> {
    let mut first = true;
    write!(out, "[")?;
    super::entries::for_each_batch(reader, projection, range, |batch| {
        for row in 0..batch.num_rows() {
            write_list_item(out, batch, row, floats, &mut first)?;
        }
        Ok(())
    })?;
    writeln!(out, "{}]", if first { "" } else { "\n" })?;
    Ok(())
}

/// Writes entry `row` of `batch` as one item of a JSON list, indented, after a comma
/// unless it is the `first`.
fn write_list_item(
    out: &mut impl Write,
    batch: &arrow_array::RecordBatch,
    row: usize,
    floats: render::Floats,
    first: &mut bool,
) -> Result<(), Failure> {
    let text = format!("{:#}", render::json_row_with(batch, row, floats));
    let indented = text.replace('\n', "\n  ");
    write!(out, "{}\n  {indented}", if *first { "" } else { "," })?;
    *first = false;
    Ok(())
}

/// Writes a join's entries as `dump` does: JSON Lines, or one JSON list.
fn dump_joined(
    out: &mut impl Write,
    join: &rntuple::join::Join,
    fields: &super::friend::JoinedFields,
    range: std::ops::Range<u64>,
    jsonl: bool,
    floats: render::Floats,
) -> Result<(), Failure> {
    let mut first = true;
    if !jsonl {
        write!(out, "[")?;
    }
    super::friend::for_each_joined_batch(join, fields, range, |batch| {
        for row in 0..batch.num_rows() {
            if jsonl {
                writeln!(out, "{}", render::json_row_with(batch, row, floats))?;
                first = false;
            } else {
                write_list_item(out, batch, row, floats, &mut first)?;
            }
        }
        Ok(())
    })?;
    if !jsonl {
        writeln!(out, "{}]", if first { "" } else { "\n" })?;
    }
    Ok(())
}
