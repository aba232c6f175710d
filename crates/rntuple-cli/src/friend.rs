//! `dump` and `show` with `--friend FILE[:NAME]`: the primary's entries with a friend
//! RNTuple's fields as a record, joined by entry number or on `--on` keys
//! (`rntuple::join`).

use crate::failure::Failure;
use arrow_array::RecordBatch;
use clap::Args;
use rntuple::join::{How, Join, JoinSpec, ReaderChain};
use rntuple::read::RNTupleReader;
use rntuple_io::split_target;
use std::ops::Range;
use std::sync::Arc;

/// The friend options of `dump` and `show`.
#[derive(Args, Clone, Default)]
pub(crate) struct FriendArgs {
    /// Join a friend RNTuple, FILE or FILE:NAME: its fields appear as a record named
    /// after it (or --friend-name); without --on, entry i pairs with the friend's entry
    /// i (the two must have the same number of entries unless --how left).
    #[arg(long, value_name = "FILE[:NAME]")]
    pub friend: Option<String>,
    /// Comma-separated key fields of both sides: entries pair where all keys are equal
    /// (integers compared by value, whatever their width); a key several friend entries
    /// share takes the first of them.
    #[arg(long, value_delimiter = ',', requires = "friend", value_name = "KEYS")]
    pub on: Option<Vec<String>>,
    /// left: every entry, with null where the friend has no match; inner: only entries
    /// with a match.
    #[arg(long, value_parser = ["left", "inner"], requires = "friend")]
    pub how: Option<String>,
    /// The name of the friend's record (default: the friend RNTuple's name).
    #[arg(long, requires = "friend", value_name = "NAME")]
    pub friend_name: Option<String>,
}

/// The join `--friend` asks for over the primary `reader`, or None without `--friend`.
pub(crate) fn open_join(
    reader: &RNTupleReader,
    args: &FriendArgs,
) -> Result<Option<Join>, Failure> {
    let Some(target) = &args.friend else {
        return Ok(None);
    };
    let (file, name) = split_target(target);
    let friend = RNTupleReader::open_path(&file, name.as_deref())?;
    let record = match &args.friend_name {
        Some(n) => n.clone(),
        None => friend
            .path()
            .rsplit('/')
            .next()
            .unwrap_or(friend.path())
            .to_string(),
    };
    let how = args.how.as_deref().map(How::parse).transpose()?;
    let spec = JoinSpec {
        on: args.on.clone().unwrap_or_default(),
        how,
        name: record,
        ..JoinSpec::default()
    };
    let join = Join::new(
        ReaderChain::new(vec![Arc::new(reader.clone())])?,
        ReaderChain::new(vec![Arc::new(friend)])?,
        spec,
    )?;
    Ok(Some(join))
}

/// `--fields` split between the primary (resolved in it) and the friend (`NAME.field`,
/// resolved in the friend; `NAME` for all of it); None on a side selects all of it, an
/// empty list none (naming only primary fields leaves the friend's record out).
pub(crate) struct JoinedFields {
    primary: Option<Vec<String>>,
    friend: Option<Vec<String>>,
}

/// Splits and resolves `--fields` for `join`.
pub(crate) fn joined_fields(
    join: &Join,
    fields: Option<Vec<String>>,
) -> Result<JoinedFields, Failure> {
    let Some(fields) = fields else {
        return Ok(JoinedFields {
            primary: None,
            friend: None,
        });
    };
    let name = &join.spec().name;
    let prefix = format!("{name}.");
    let mut primary = Vec::new();
    let mut friend = Vec::new();
    let mut whole_friend = false;
    for f in fields {
        if &f == name {
            whole_friend = true;
        } else if let Some(rest) = f.strip_prefix(&prefix) {
            friend.push(rest.to_string());
        } else {
            primary.push(f);
        }
    }
    let primary_reader = &join.primary().members()[0];
    let friend_reader = &join.friend().members()[0];
    let primary = primary_reader.resolve_fields(&primary)?;
    let friend = if whole_friend {
        None
    } else {
        Some(friend_reader.resolve_fields(&friend)?)
    };
    Ok(JoinedFields {
        primary: Some(primary),
        friend,
    })
}

/// Reads the join over the primary's `range`, a primary cluster at a time, and hands
/// each batch to `each`.
pub(crate) fn for_each_joined_batch(
    join: &Join,
    fields: &JoinedFields,
    range: Range<u64>,
    mut each: impl FnMut(&RecordBatch) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let primary = &join.primary().members()[0];
    for cluster in &primary.descriptor().clusters {
        let piece = range.start.max(cluster.first_entry)
            ..range.end.min(cluster.first_entry + cluster.n_entries);
        if piece.start >= piece.end {
            continue;
        }
        let batch = join.read(fields.primary.as_deref(), fields.friend.as_deref(), piece)?;
        each(&batch)?;
    }
    Ok(())
}
